//! One truth about serving, through the real binary with real backends on
//! loopback: for each case a user meets (servers answering 502 or 503, a
//! weighted service whose heavier member refuses connections, a failover
//! whose main service refuses them, a server never tried, a server that
//! comes back), real requests are sent first, then what the API, explain
//! and `gangway check` say is held against what those requests got.

use crate::support;

use std::time::Duration;
use support::counted::{Counted, refusing_port, take_port};
use support::{Gangway, eventually};

const WAIT: Duration = Duration::from_secs(15);

const API: &str = "[http.routers.api]\nrule = \"Host(`api.test`)\"\nservice = \"api@internal\"\n";

fn router(name: &str, service: &str) -> String {
    format!("[http.routers.{name}]\nrule = \"Host(`{name}.test`)\"\nservice = \"{service}\"\n")
}

fn lb(service: &str, urls: &[&str]) -> String {
    urls.iter()
        .map(|url| format!("[[http.services.{service}.loadBalancer.servers]]\nurl = \"{url}\"\n"))
        .collect()
}

/// `n` GETs to `host`: the statuses, in order.
async fn statuses(gw: &Gangway, host: &str, n: usize) -> Vec<u16> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(gw.get(host, "/").await.status.as_u16());
    }
    out
}

/// The kinds of an object's problems, and their messages.
fn problems(v: &serde_json::Value) -> Vec<(String, String)> {
    v["problems"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|p| {
                    (
                        p["kind"].as_str().unwrap_or_default().to_owned(),
                        p["message"].as_str().unwrap_or_default().to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Explain's answer for a GET to `host` on entry point `web`.
async fn answer(gw: &Gangway, host: &str) -> serde_json::Value {
    let x = gw
        .api_json(&format!("/api/explain?host={host}&path=/"))
        .await;
    x["entryPoints"]
        .as_array()
        .and_then(|eps| eps.iter().find(|e| e["entryPoint"] == "web"))
        .map(|e| e["winner"]["answer"].clone())
        .unwrap_or_default()
}

/// Sends GETs to `host` until the server at `url` of `service` has failed
/// twice (tried again after its quarantine); the statuses, in order.
async fn across_quarantine(gw: &Gangway, host: &str, service: &str, url: &str) -> Vec<u16> {
    let got = std::cell::RefCell::new(Vec::new());
    eventually(WAIT, "the refusing server is tried again", || async {
        let status = gw.get(host, "/").await.status.as_u16();
        got.borrow_mut().push(status);
        let svc = gw.api_json(&format!("/api/http/services/{service}")).await;
        svc["serverStates"][url]["failed"].as_u64().unwrap_or(0) >= 2
    })
    .await;
    got.into_inner()
}

fn count(statuses: &[u16], status: u16) -> usize {
    statuses.iter().filter(|&&s| s == status).count()
}

#[tokio::test]
async fn servers_answering_502_or_503_make_their_service_and_router_an_error() {
    for status in [502u16, 503] {
        let (a, b) = (Counted::start("a").await, Counted::start("b").await);
        a.set_status(status);
        b.set_status(status);
        let conf = format!(
            "{API}{}{}",
            router("bad", "bad"),
            lb("bad", &[&a.url(), &b.url()])
        );
        let gw = Gangway::with_file(&conf, &["--api=true"]).await;
        eventually(WAIT, "routed", || async {
            gw.get("bad.test", "/").await.status.as_u16() == status
        })
        .await;
        let got = statuses(&gw, "bad.test", 8).await;
        assert_eq!(count(&got, status), 8, "{got:?}");

        let svc = gw.api_json("/api/http/services/bad@file").await;
        println!(
            "{status}: requests {got:?}; service {}; {:?}",
            svc["status"],
            problems(&svc)
        );
        assert_eq!(svc["status"], "disabled", "{svc}");
        for url in [a.url(), b.url()] {
            assert_eq!(svc["serverStates"][&url]["state"], "erroring", "{svc}");
            assert_eq!(svc["serverStates"][&url]["status"], status, "{svc}");
        }
        let erroring = &svc["problems"]
            .as_array()
            .and_then(|p| p.iter().find(|p| p["kind"] == "serversErroring").cloned())
            .unwrap_or_default();
        assert_eq!(
            (
                &erroring["erroring"],
                &erroring["total"],
                &erroring["percent"]
            ),
            (&2.into(), &2.into(), &100.into()),
            "{svc}"
        );
        let rt = gw.api_json("/api/http/routers/bad@file").await;
        assert_eq!(rt["status"], "disabled", "{rt}");
        let down = problems(&rt);
        assert!(
            down.iter().any(|(k, m)| k == "serviceDown"
                && m.contains(&format!("every request fails with {status}"))
                && m.contains(&format!("the servers answer {status}"))),
            "{down:?}"
        );
        let x = answer(&gw, "bad.test").await;
        assert_eq!(
            (&x["outcome"], &x["status"]),
            (&"fails".into(), &status.into()),
            "{x}"
        );
    }
}

#[tokio::test]
async fn a_weighted_service_whose_heavier_member_refuses_loses_no_request() {
    let light = Counted::start("light").await;
    let dead = format!("http://{}", refusing_port());
    let conf = format!(
        "{API}{}{}{}\
         [[http.services.split.weighted.services]]\nname = \"heavy\"\nweight = 3\n\
         [[http.services.split.weighted.services]]\nname = \"light\"\nweight = 1\n",
        router("split", "split"),
        lb("heavy", &[&dead]),
        lb("light", &[&light.url()]),
    );
    let gw = Gangway::with_file(&conf, &["--api=true"]).await;
    eventually(WAIT, "routed", || async {
        gw.get("split.test", "/").await.status == 200
    })
    .await;
    // A burst, then steady requests across the quarantine's end: every one
    // is served by the member that can serve.
    let mut got = statuses(&gw, "split.test", 40).await;
    got.extend(across_quarantine(&gw, "split.test", "heavy@file", &dead).await);
    assert_eq!(count(&got, 200), got.len(), "{got:?}");

    let svc = gw.api_json("/api/http/services/split@file").await;
    let rt = gw.api_json("/api/http/routers/split@file").await;
    let heavy = gw.api_json("/api/http/services/heavy@file").await;
    println!(
        "requests: {} x 200; split {} {:?}; router {}; heavy {} {:?}",
        got.len(),
        svc["status"],
        problems(&svc),
        rt["status"],
        heavy["status"],
        problems(&heavy)
    );
    assert_eq!(svc["status"], "warning", "{svc}");
    assert!(
        problems(&svc)
            .iter()
            .any(|(k, m)| k == "membersDown" && m.contains("heavy@file")),
        "{svc}"
    );
    assert_eq!(
        rt["status"], "enabled",
        "the router serves every request: {rt}"
    );
    assert_eq!(
        heavy["serverStates"][&dead]["state"], "unreachable",
        "{heavy}"
    );
    assert_eq!(answer(&gw, "split.test").await["outcome"], "served");
}

#[tokio::test]
async fn a_failover_whose_main_refuses_serves_from_its_fallback_and_says_so() {
    let spare = Counted::start("spare").await;
    let dead = format!("http://{}", refusing_port());
    let conf = format!(
        "{API}{}{}{}\
         [http.services.fo.failover]\nservice = \"main\"\nfallback = \"spare\"\n",
        router("fo", "fo"),
        lb("main", &[&dead]),
        lb("spare", &[&spare.url()]),
    );
    let gw = Gangway::with_file(&conf, &["--api=true"]).await;
    eventually(WAIT, "routed", || async {
        gw.get("fo.test", "/").await.status == 200
    })
    .await;
    let mut got = statuses(&gw, "fo.test", 3).await;
    // Past the main server's quarantine it is tried again, refuses, and
    // the request still goes on to the fallback.
    got.extend(across_quarantine(&gw, "fo.test", "main@file", &dead).await);
    assert_eq!(count(&got, 200), got.len(), "{got:?}");
    assert!(spare.hits() > got.len(), "the fallback served them all");

    let svc = gw.api_json("/api/http/services/fo@file").await;
    let rt = gw.api_json("/api/http/routers/fo@file").await;
    println!(
        "requests: {} x 200 of {}; fo {} {:?}; router {}",
        count(&got, 200),
        got.len(),
        svc["status"],
        problems(&svc),
        rt["status"]
    );
    assert_eq!(svc["status"], "warning", "{svc}");
    let said = problems(&svc);
    assert!(said.iter().any(|(k, _)| k == "onFallback"), "{said:?}");
    assert!(
        !said.iter().any(|(k, _)| k == "noMemberUp"),
        "never 'no service it sends to has a server up' while the fallback serves: {said:?}"
    );
    assert_eq!(rt["status"], "enabled", "{rt}");
    assert_eq!(answer(&gw, "fo.test").await["outcome"], "served");

    // `gangway check` does not call the fallback unused.
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("dynamic.toml"), &conf).expect("write");
    let (code, out) = support::check(dir.path(), &["--providers.file.filename=dynamic.toml"]);
    assert!(!out.contains("never used"), "{code}: {out}");
}

#[tokio::test]
async fn a_server_never_tried_is_unknown_and_one_that_comes_back_is_up_at_once() {
    let port = refusing_port();
    let url = format!("http://{port}");
    let conf = format!("{API}{}{}", router("back", "back"), lb("back", &[&url]));
    let gw = Gangway::with_file(&conf, &["--api=true"]).await;
    eventually(WAIT, "the service is listed", || async {
        !gw.api_json("/api/http/services/back@file").await["serverStates"].is_null()
    })
    .await;
    let svc = gw.api_json("/api/http/services/back@file").await;
    assert_eq!(svc["serverStates"][&url]["state"], "unknown", "{svc}");
    assert_eq!(answer(&gw, "back.test").await["outcome"], "unknown");

    assert_eq!(statuses(&gw, "back.test", 1).await, [502]);
    let svc = gw.api_json("/api/http/services/back@file").await;
    assert_eq!(svc["serverStates"][&url]["state"], "unreachable", "{svc}");
    assert_eq!(
        gw.api_json("/api/http/routers/back@file").await["status"],
        "disabled"
    );
    assert_eq!(answer(&gw, "back.test").await["outcome"], "fails");

    // It comes to life: the first request that reaches it brings it back.
    let live = take_port(port, "live").await;
    eventually(WAIT, "a request reaches the revived server", || async {
        gw.get("back.test", "/").await.status == 200
    })
    .await;
    assert!(live.hits() > 0);
    let svc = gw.api_json("/api/http/services/back@file").await;
    let rt = gw.api_json("/api/http/routers/back@file").await;
    println!(
        "after coming back: {} {:?}; router {}",
        svc["serverStates"],
        problems(&svc),
        rt["status"]
    );
    assert_eq!(svc["serverStates"][&url]["state"], "up", "{svc}");
    assert_eq!(svc["status"], "enabled", "{svc}");
    assert_eq!(rt["status"], "enabled", "{rt}");
    assert_eq!(answer(&gw, "back.test").await["outcome"], "served");
}

#[tokio::test]
async fn a_udp_service_on_a_closed_port_and_a_tcp_one_that_refuses_read_as_failing() {
    let echo = support::udp_echo("echo").await;
    // Bound, then dropped: a UDP port where nothing listens answers ICMP
    // port unreachable.
    let closed = std::net::UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .expect("a UDP port")
        .port();
    let (udp_closed, udp_open, tcp) = (
        support::free_port(),
        support::free_port(),
        support::free_port(),
    );
    let refusing = refusing_port();
    let conf = format!(
        "{API}\
         [udp.routers.closed]\nentryPoints = [\"closed\"]\nservice = \"closed\"\n\
         [[udp.services.closed.loadBalancer.servers]]\naddress = \"127.0.0.1:{closed}\"\n\
         [udp.routers.open]\nentryPoints = [\"open\"]\nservice = \"open\"\n\
         [[udp.services.open.loadBalancer.servers]]\naddress = \"127.0.0.1:{echo}\"\n\
         [tcp.routers.db]\nentryPoints = [\"db\"]\nrule = \"HostSNI(`*`)\"\nservice = \"db\"\n\
         [[tcp.services.db.loadBalancer.servers]]\naddress = \"{refusing}\"\n"
    );
    let gw = Gangway::with_file(
        &conf,
        &[
            &format!("--entryPoints.closed.address=127.0.0.1:{udp_closed}/udp"),
            &format!("--entryPoints.open.address=127.0.0.1:{udp_open}/udp"),
            "--entryPoints.closed.udp.timeout=1s",
            &format!("--entryPoints.db.address=127.0.0.1:{tcp}"),
            "--api=true",
        ],
    )
    .await;
    eventually(WAIT, "the open UDP service answers", || async {
        support::udp_ask(udp_open, "hi").await.is_some()
    })
    .await;
    let open = gw.api_json("/api/udp/services/open@file").await;
    assert_eq!(
        open["serverStates"][format!("127.0.0.1:{echo}")]["state"],
        "up",
        "{open}"
    );
    let closed_state = gw.api_json("/api/udp/services/closed@file").await;
    assert_eq!(
        closed_state["serverStates"][format!("127.0.0.1:{closed}")]["state"],
        "unknown",
        "nothing sent there yet: {closed_state}"
    );

    let mut answered = 0;
    for i in 0..5 {
        if support::udp_ask(udp_closed, &format!("q{i}"))
            .await
            .is_some()
        {
            answered += 1;
        }
    }
    assert_eq!(answered, 0);
    eventually(WAIT, "the closed port reads unreachable", || async {
        let svc = gw.api_json("/api/udp/services/closed@file").await;
        svc["serverStates"][format!("127.0.0.1:{closed}")]["state"] == "unreachable"
    })
    .await;
    let svc = gw.api_json("/api/udp/services/closed@file").await;
    let rt = gw.api_json("/api/udp/routers/closed@file").await;
    println!(
        "UDP: 0 of 5 answered; service {} {:?}; router {} {:?}",
        svc["status"],
        problems(&svc),
        rt["status"],
        problems(&rt)
    );
    assert_eq!(svc["status"], "disabled", "{svc}");
    assert_eq!(rt["status"], "disabled", "{rt}");
    assert!(
        problems(&rt)
            .iter()
            .any(|(k, m)| k == "serviceDown" && m.contains("ports are closed")),
        "{rt}"
    );

    // TCP: a connection to a refusing server is closed; the router says
    // every connection fails, with no HTTP status.
    let mut conn = tokio::net::TcpStream::connect(("127.0.0.1", tcp))
        .await
        .expect("connect");
    let mut buf = [0u8; 1];
    let read = tokio::io::AsyncReadExt::read(&mut conn, &mut buf).await;
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    let db = gw.api_json("/api/tcp/services/db@file").await;
    assert_eq!(
        db["serverStates"][&refusing.to_string()]["state"],
        "unreachable",
        "{db}"
    );
    let rt = gw.api_json("/api/tcp/routers/db@file").await;
    let said = problems(&rt);
    println!("TCP: connection closed; router {} {said:?}", rt["status"]);
    assert!(
        said.iter().any(|(k, m)| k == "serviceDown"
            && m.contains("every connection fails")
            && m.contains("refuse connections")
            && !m.contains("502")),
        "{said:?}"
    );
}
