//! The etcd client of the etcd provider against a real etcd (Debian's
//! `etcd-server`): reading a prefix whole, following its changes, auth,
//! failover between endpoints, TLS, and the server going away. The test
//! writes through etcd's gateway with its own HTTP client.

use crate::support;

use futures_util::StreamExt as _;
use gangway::store::etcd::{Change, EtcdClient, EtcdError, EtcdWatch, WatchBatch};
use std::collections::BTreeMap;
use std::time::Duration;
use support::etcd::{Etcd, available};

/// The client's limit for connecting and for each answer.
const TIMEOUT: Duration = Duration::from_secs(5);

async fn start(test: &str) -> Option<Etcd> {
    let binary = available(test)?;
    Some(Etcd::start(binary).await)
}

async fn client(etcd: &Etcd) -> EtcdClient {
    EtcdClient::connect(&[etcd.endpoint()], None, None, TIMEOUT)
        .await
        .expect("connect to etcd")
}

/// The next batch of a watch; panics if none comes within a bound far
/// beyond what a loopback etcd needs (a hang must not stall the suite).
async fn next_batch(watch: &mut EtcdWatch) -> Result<WatchBatch, EtcdError> {
    tokio::time::timeout(Duration::from_secs(30), watch.next())
        .await
        .expect("the watch gave nothing within 30 s")
        .expect("the watch ended without an error")
}

fn pairs(items: &[(&str, &str)]) -> BTreeMap<String, String> {
    items
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[tokio::test]
async fn a_prefix_is_read_whole_without_its_neighbours() {
    let Some(etcd) = start("a_prefix_is_read_whole_without_its_neighbours").await else {
        return;
    };
    etcd.put("traefik/http/routers/app/rule", "Host(`app.test`)")
        .await;
    etcd.put(
        "traefik/http/services/app/loadBalancer/servers/0/url",
        "http://127.0.0.1:9000",
    )
    .await;
    etcd.put("traefik/http/routers/app/priority", "").await;
    // Neighbours: the same text without the slash, a longer first segment,
    // and the byte just after `/`.
    etcd.put("traefik", "root").await;
    etcd.put("traefiks/http/routers/x/rule", "Host(`x`)").await;
    let last = etcd.put("traefik0", "next").await;

    let client = client(&etcd).await;
    let (got, revision) = client.range_prefix("traefik/").await.expect("range");
    assert_eq!(
        got,
        pairs(&[
            ("traefik/http/routers/app/priority", ""),
            ("traefik/http/routers/app/rule", "Host(`app.test`)"),
            (
                "traefik/http/services/app/loadBalancer/servers/0/url",
                "http://127.0.0.1:9000"
            ),
        ])
    );
    assert_eq!(revision, last, "the revision the tree was read at");

    let (none, _) = client.range_prefix("nothing/").await.expect("range");
    assert!(none.is_empty(), "{none:?}");
}

#[tokio::test]
async fn a_tree_larger_than_a_page_is_read_whole_at_one_revision() {
    let Some(etcd) = start("a_tree_larger_than_a_page_is_read_whole_at_one_revision").await else {
        return;
    };
    // 2,500 keys: the client reads 1,000 per request.
    let written: Vec<(String, String)> = (0..2500)
        .map(|i| {
            (
                format!("gangway/http/routers/r{i:05}/rule"),
                format!("Host(`r{i}.test`)"),
            )
        })
        .collect();
    etcd.put_many(&written).await;
    let last = etcd.put("gangway0", "outside").await;

    let client = client(&etcd).await;
    let (got, revision) = client.range_prefix("gangway/").await.expect("range");
    assert_eq!(got.len(), 2500);
    assert_eq!(got, written.into_iter().collect::<BTreeMap<_, _>>());
    assert_eq!(revision, last, "one revision, the newest, for every page");
}

#[tokio::test]
async fn a_watch_sees_puts_and_deletes_under_the_prefix_from_a_revision() {
    let Some(etcd) = start("a_watch_sees_puts_and_deletes_under_the_prefix_from_a_revision").await
    else {
        return;
    };
    etcd.put("traefik/http/routers/a/rule", "Host(`a`)").await;
    let client = client(&etcd).await;
    let (_, read_at) = client.range_prefix("traefik/").await.expect("range");

    // Written between the read and the watch: the watch replays it.
    let early = etcd.put("traefik/http/routers/b/rule", "Host(`b`)").await;
    let mut watch = client
        .watch_prefix("traefik/", read_at + 1)
        .await
        .expect("watch");
    let replayed = next_batch(&mut watch).await.expect("batch");
    assert_eq!(
        replayed,
        WatchBatch {
            revision: early,
            changes: vec![Change::Put {
                key: "traefik/http/routers/b/rule".to_owned(),
                value: "Host(`b`)".to_owned(),
                revision: early,
            }],
        },
        "the write between the read and the watch"
    );

    etcd.put("traefiks/outside", "x").await;
    let put = etcd.put("traefik/http/routers/a/rule", "Host(`a2`)").await;
    let deleted = etcd.delete("traefik/http/routers/b/rule").await;
    let mut changes = Vec::new();
    let mut last = 0;
    while last < deleted {
        let batch = next_batch(&mut watch).await.expect("batch");
        last = batch.revision;
        changes.extend(batch.changes);
    }
    assert_eq!(
        changes,
        vec![
            Change::Put {
                key: "traefik/http/routers/a/rule".to_owned(),
                value: "Host(`a2`)".to_owned(),
                revision: put,
            },
            Change::Delete {
                key: "traefik/http/routers/b/rule".to_owned(),
                revision: deleted,
            },
        ],
        "only changes under the prefix, in order"
    );
    assert_eq!(last, deleted, "a batch's revision is its last change's");
}

#[tokio::test]
async fn a_watch_from_a_compacted_revision_says_to_read_again() {
    let Some(etcd) = start("a_watch_from_a_compacted_revision_says_to_read_again").await else {
        return;
    };
    let first = etcd.put("traefik/a", "1").await;
    etcd.put("traefik/a", "2").await;
    let now = etcd.put("traefik/a", "3").await;
    etcd.compact(now).await;

    let client = client(&etcd).await;
    let mut watch = client
        .watch_prefix("traefik/", first + 1)
        .await
        .expect("watch");
    match next_batch(&mut watch).await {
        Err(EtcdError::Compacted {
            prefix,
            compact_revision,
            endpoint,
        }) => {
            assert_eq!(prefix, "traefik/");
            assert_eq!(compact_revision, now);
            assert_eq!(endpoint, etcd.endpoint());
        }
        other => panic!("expected Compacted, got {other:?}"),
    }
    assert!(watch.next().await.is_none(), "the watch is over");

    // What the caller then does: read again, watch from there.
    let (got, revision) = client.range_prefix("traefik/").await.expect("range");
    assert_eq!(got, pairs(&[("traefik/a", "3")]));
    let mut watch = client
        .watch_prefix("traefik/", revision + 1)
        .await
        .expect("watch");
    let put = etcd.put("traefik/a", "4").await;
    let batch = next_batch(&mut watch).await.expect("batch");
    assert_eq!(
        batch.changes,
        vec![Change::Put {
            key: "traefik/a".to_owned(),
            value: "4".to_owned(),
            revision: put
        }]
    );
}

#[tokio::test]
async fn a_dropped_watch_is_ended_on_the_server() {
    let Some(etcd) = start("a_dropped_watch_is_ended_on_the_server").await else {
        return;
    };
    const WATCHERS: &str = "etcd_debugging_mvcc_watcher_total";
    let client = client(&etcd).await;
    let watch = client.watch_prefix("traefik/", 0).await.expect("watch");
    let mut stream = Box::pin(watch.into_stream());
    assert_eq!(
        etcd.metric(WATCHERS).await,
        Some(1.0),
        "etcd runs the watch"
    );
    let put = etcd.put("traefik/a", "1").await;
    let batch = stream.next().await.expect("a batch").expect("no error");
    assert_eq!(batch.revision, put);

    drop(stream);
    support::eventually(Duration::from_secs(10), "etcd ends the watch", || async {
        etcd.metric(WATCHERS).await == Some(0.0)
    })
    .await;
}

#[tokio::test]
async fn keys_and_values_that_are_not_text_are_reported_by_key() {
    let Some(etcd) = start("keys_and_values_that_are_not_text_are_reported_by_key").await else {
        return;
    };
    etcd.put_bytes(b"traefik/http/routers/a/rule", b"Host(`\xff`)")
        .await;
    let client = client(&etcd).await;
    match client.range_prefix("traefik/").await {
        Err(EtcdError::NotUtf8 { key, part, .. }) => {
            assert_eq!(key, "traefik/http/routers/a/rule");
            assert_eq!(part, "value");
        }
        other => panic!("expected NotUtf8, got {other:?}"),
    }
    etcd.delete("traefik/http/routers/a/rule").await;
    etcd.put_bytes(b"traefik/http/routers/\xc3/rule", b"Host(`b`)")
        .await;
    let err = client.range_prefix("traefik/").await.unwrap_err();
    assert!(
        matches!(&err, EtcdError::NotUtf8 { key, part: "key", .. } if key == "traefik/http/routers/\u{fffd}/rule"),
        "{err:?}"
    );
    assert!(err.to_string().contains("traefik/http/routers/"), "{err}");
}

#[tokio::test]
async fn auth_takes_the_right_password_and_names_the_user_on_a_wrong_one() {
    let Some(mut etcd) =
        start("auth_takes_the_right_password_and_names_the_user_on_a_wrong_one").await
    else {
        return;
    };
    etcd.put("traefik/a", "1").await;
    let endpoints = [etcd.endpoint()];
    let credentials = || Some(("root".to_owned(), "s3cret".to_owned()));
    // Credentials for a server without auth are not an error (etcd's own
    // client takes them too), and are used once auth is turned on.
    let early = EtcdClient::connect(&endpoints, credentials(), None, TIMEOUT)
        .await
        .expect("credentials while auth is off");
    assert_eq!(
        early.range_prefix("traefik/").await.expect("range").0.len(),
        1
    );
    etcd.enable_auth("s3cret").await;
    let (got, _) = early
        .range_prefix("traefik/")
        .await
        .expect("range once auth is on");
    assert_eq!(got, pairs(&[("traefik/a", "1")]));

    let wrong = EtcdClient::connect(
        &endpoints,
        Some(("root".to_owned(), "not-the-password".to_owned())),
        None,
        TIMEOUT,
    )
    .await
    .unwrap_err();
    match &wrong {
        EtcdError::AuthFailed {
            user,
            endpoint,
            message,
        } => {
            assert_eq!(user, "root");
            assert_eq!(endpoint, &etcd.endpoint());
            assert!(message.contains("authentication failed"), "{message}");
        }
        other => panic!("expected AuthFailed, got {other:?}"),
    }
    assert!(
        !format!("{wrong} {wrong:?}").contains("not-the-password"),
        "{wrong:?}"
    );

    let anonymous = client(&etcd).await;
    let refused = anonymous.range_prefix("traefik/").await.unwrap_err();
    assert!(
        matches!(&refused, EtcdError::Status { status: 400, key: Some(k), .. } if k == "traefik/"),
        "{refused:?}"
    );

    let root = EtcdClient::connect(&endpoints, credentials(), None, TIMEOUT)
        .await
        .expect("the right password");
    assert!(!format!("{root:?}").contains("s3cret"), "{root:?}");
    let (got, _) = root.range_prefix("traefik/").await.expect("range as root");
    assert_eq!(got, pairs(&[("traefik/a", "1")]));

    // Once etcd no longer takes its token (it expired, or the user's
    // password changed), the client authenticates again, for reads and
    // for watches.
    etcd.invalidate_tokens().await;
    let (got, revision) = root
        .range_prefix("traefik/")
        .await
        .expect("range with a refused token");
    assert_eq!(got, pairs(&[("traefik/a", "1")]));
    etcd.invalidate_tokens().await;
    let mut watch = root
        .watch_prefix("traefik/", revision + 1)
        .await
        .expect("watch with a refused token");
    let put = etcd.put("traefik/b", "2").await;
    let batch = next_batch(&mut watch).await.expect("batch");
    assert_eq!(batch.revision, put);
}

#[tokio::test]
async fn requests_fail_over_from_a_dead_endpoint_to_a_live_one() {
    let Some(etcd) = start("requests_fail_over_from_a_dead_endpoint_to_a_live_one").await else {
        return;
    };
    etcd.put("traefik/a", "1").await;
    // Nothing listens there: bound, then closed.
    let dead = format!("127.0.0.1:{}", support::free_port());
    let client = EtcdClient::connect(
        &[dead.clone(), format!("http://{}", etcd.endpoint())],
        None,
        None,
        TIMEOUT,
    )
    .await
    .expect("connect through the second endpoint");
    let (got, revision) = client.range_prefix("traefik/").await.expect("range");
    assert_eq!(got, pairs(&[("traefik/a", "1")]));
    let mut watch = client
        .watch_prefix("traefik/", revision + 1)
        .await
        .expect("watch");
    assert_eq!(watch.endpoint(), format!("http://{}", etcd.endpoint()));
    let put = etcd.put("traefik/b", "2").await;
    assert_eq!(next_batch(&mut watch).await.expect("batch").revision, put);

    let other_dead = format!("127.0.0.1:{}", support::free_port());
    let err = EtcdClient::connect(&[dead.clone(), other_dead.clone()], None, None, TIMEOUT)
        .await
        .unwrap_err();
    match &err {
        EtcdError::Unreachable { tried } => {
            let names: Vec<&str> = tried.iter().map(|t| t.endpoint.as_str()).collect();
            assert_eq!(names, [dead.as_str(), other_dead.as_str()]);
            assert!(tried.iter().all(|t| t.reason.contains("refused")), "{err}");
        }
        other => panic!("expected Unreachable, got {other:?}"),
    }
}

#[tokio::test]
async fn a_member_that_hangs_is_passed_over_by_the_next_request() {
    let Some(etcd) = start("a_member_that_hangs_is_passed_over_by_the_next_request").await else {
        return;
    };
    etcd.put("traefik/a", "1").await;
    // Accepts connections and never answers.
    let hung = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hung_endpoint = hung.local_addr().unwrap().to_string();
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((socket, _)) = hung.accept().await {
            open.push(socket);
        }
    });
    let client = EtcdClient::new(
        &[hung_endpoint.clone(), etcd.endpoint()],
        None,
        None,
        Duration::from_millis(300),
    )
    .expect("client");
    let err = client.range_prefix("traefik/").await.unwrap_err();
    assert!(
        matches!(&err, EtcdError::Timeout { endpoint, key: Some(k), .. } if *endpoint == hung_endpoint && k == "traefik/"),
        "{err:?}"
    );
    let (got, _) = client
        .range_prefix("traefik/")
        .await
        .expect("the next request goes to the member that answers");
    assert_eq!(got, pairs(&[("traefik/a", "1")]));
    held.abort();
}

#[tokio::test]
async fn a_killed_server_ends_the_watch_and_its_data_is_back_after_a_restart() {
    let Some(mut etcd) =
        start("a_killed_server_ends_the_watch_and_its_data_is_back_after_a_restart").await
    else {
        return;
    };
    let revision = etcd.put("traefik/a", "1").await;
    let client = client(&etcd).await;
    let mut watch = client
        .watch_prefix("traefik/", revision + 1)
        .await
        .expect("watch");
    etcd.kill();
    match next_batch(&mut watch).await {
        Err(EtcdError::WatchEnded {
            prefix, endpoint, ..
        }) => {
            assert_eq!(prefix, "traefik/");
            assert_eq!(endpoint, etcd.endpoint());
        }
        other => panic!("expected WatchEnded, got {other:?}"),
    }
    assert!(watch.next().await.is_none(), "the watch is over");
    let down = client.range_prefix("traefik/").await.unwrap_err();
    assert!(
        matches!(&down, EtcdError::Unreachable { tried } if tried.len() == 1),
        "{down:?}"
    );

    etcd.restart().await;
    let again = EtcdClient::connect(&[etcd.endpoint()], None, None, TIMEOUT)
        .await
        .expect("a new client after the restart");
    let (got, revision) = again.range_prefix("traefik/").await.expect("range");
    assert_eq!(got, pairs(&[("traefik/a", "1")]));
    let mut watch = again
        .watch_prefix("traefik/", revision + 1)
        .await
        .expect("watch again");
    let put = etcd.put("traefik/b", "2").await;
    assert_eq!(next_batch(&mut watch).await.expect("batch").revision, put);
    // The first client, too, works again.
    let (got, _) = client.range_prefix("traefik/").await.expect("range");
    assert_eq!(got.len(), 2);
}

#[tokio::test]
async fn a_tls_endpoint_is_read_when_its_ca_is_trusted() {
    let Some(binary) = available("a_tls_endpoint_is_read_when_its_ca_is_trusted") else {
        return;
    };
    let ca = support::tls::TestCa::new("etcd test CA");
    let (cert, key) = ca.issue(&["127.0.0.1"]);
    let etcd = Etcd::start_with_tls(binary, &cert, &key).await;
    etcd.put("traefik/a", "1").await;

    let trusting = support::tls::TlsClient::trusting(ca.pem().as_bytes()).config(b"http/1.1");
    let client = EtcdClient::connect(&[etcd.tls_endpoint()], None, Some(trusting), TIMEOUT)
        .await
        .expect("connect over TLS");
    let (got, _) = client.range_prefix("traefik/").await.expect("range");
    assert_eq!(got, pairs(&[("traefik/a", "1")]));

    let stranger = support::tls::TestCa::new("another CA");
    let wary = support::tls::TlsClient::trusting(stranger.pem().as_bytes()).config(b"http/1.1");
    let err = EtcdClient::connect(&[etcd.tls_endpoint()], None, Some(wary), TIMEOUT)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, EtcdError::Unreachable { tried } if tried[0].reason.contains("certificate")),
        "{err}"
    );
}
