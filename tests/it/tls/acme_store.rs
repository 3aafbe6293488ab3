//! The shared ACME storage's contract, the same for both stores, against a
//! real Redis and a real etcd: create-if-absent, listing a prefix, values
//! that expire, leases that exclude, expire and fence, and change
//! announcements.

use crate::support;

use futures_util::StreamExt as _;
use gangway::acme::shared::StoreUrl;
use gangway::store::Store;
use std::sync::Arc;
use std::time::Duration;
use support::eventually;
use support::kv::Redis;

const TIMEOUT: Duration = Duration::from_secs(5);

fn open(url: &str) -> Arc<dyn Store> {
    StoreUrl::parse("test", url)
        .expect("a store URL")
        .open(TIMEOUT)
        .expect("a client")
}

/// Everything the shared storage relies on, against `store`.
async fn contract(store: &dyn Store) {
    let p = "contract/acme";
    // Create-if-absent: the first writer wins, the second reads its value.
    assert!(store.create(&format!("{p}/account"), b"one").await.unwrap());
    assert!(!store.create(&format!("{p}/account"), b"two").await.unwrap());
    assert_eq!(
        store.get(&format!("{p}/account")).await.unwrap().as_deref(),
        Some(&b"one"[..])
    );
    // A prefix lists its keys only; binary values come back whole.
    store
        .put(&format!("{p}/certs/a"), &[0, 255, 1], None)
        .await
        .unwrap();
    store
        .put(&format!("{p}/certs/b"), b"b", None)
        .await
        .unwrap();
    store
        .put(&format!("{p}/certsx"), b"not under certs/", None)
        .await
        .unwrap();
    let mut listed = store.list(&format!("{p}/certs/")).await.unwrap().values;
    listed.sort();
    assert_eq!(
        listed,
        vec![
            (format!("{p}/certs/a"), vec![0, 255, 1]),
            (format!("{p}/certs/b"), b"b".to_vec())
        ]
    );
    store.delete(&format!("{p}/certs/b")).await.unwrap();
    assert_eq!(store.get(&format!("{p}/certs/b")).await.unwrap(), None);
    // A value written with a lifetime goes by itself.
    store
        .put(
            &format!("{p}/challenge"),
            b"answer",
            Some(Duration::from_secs(1)),
        )
        .await
        .unwrap();
    assert!(
        store
            .get(&format!("{p}/challenge"))
            .await
            .unwrap()
            .is_some()
    );
    eventually(Duration::from_secs(10), "the challenge expires", || async {
        store
            .get(&format!("{p}/challenge"))
            .await
            .unwrap()
            .is_none()
    })
    .await;

    // A lease excludes others while held, and is renewed.
    let lease_key = format!("{p}/leases/a");
    let ttl = Duration::from_secs(2);
    let first = store
        .acquire(&lease_key, "one", ttl)
        .await
        .unwrap()
        .expect("a free lease is taken");
    assert!(
        store
            .acquire(&lease_key, "two", ttl)
            .await
            .unwrap()
            .is_none()
    );
    assert!(store.renew(&first, ttl).await.unwrap());
    assert!(
        store
            .put_fenced(&first, &format!("{p}/certs/a"), b"by one")
            .await
            .unwrap()
    );
    // Left to expire, it is taken over; the old holder can then neither
    // renew nor write.
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    let second = loop {
        if let Some(lease) = store.acquire(&lease_key, "two", ttl).await.unwrap() {
            break lease;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the expired lease is taken over"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(second.token > first.token, "fencing tokens grow");
    assert!(!store.renew(&first, ttl).await.unwrap());
    assert!(
        !store
            .put_fenced(&first, &format!("{p}/certs/a"), b"late")
            .await
            .unwrap()
    );
    assert_eq!(
        store.get(&format!("{p}/certs/a")).await.unwrap().as_deref(),
        Some(&b"by one"[..])
    );
    // Releasing a lease that is not ours leaves the holder's alone.
    store.release(&first).await.unwrap();
    assert!(
        store
            .acquire(&lease_key, "three", ttl)
            .await
            .unwrap()
            .is_none()
    );
    store.release(&second).await.unwrap();
    assert!(
        store
            .acquire(&lease_key, "three", ttl)
            .await
            .unwrap()
            .is_some()
    );
}

/// Announcements of a key's changes arrive, where the store makes them.
async fn announces(store: &dyn Store) {
    let key = "contract/acme/generation";
    let mut changes = store
        .watch(key)
        .await
        .unwrap()
        .expect("this store announces changes");
    store.put(key, b"1", None).await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), changes.next())
        .await
        .expect("an announcement within 10 s")
        .expect("the announcement stream is open")
        .expect("an announcement, not an error");
}

#[tokio::test]
async fn redis_keeps_the_contract() {
    let Some(redis) = Redis::start("redis_keeps_the_contract", true).await else {
        return;
    };
    let store = open(&format!("redis://127.0.0.1:{}/3", redis.port));
    contract(store.as_ref()).await;
    announces(store.as_ref()).await;
    // Database 3, as the URL says.
    assert!(
        redis
            .cli(&["-n", "3", "GET", "contract/acme/account"])
            .starts_with("one")
    );
}

#[tokio::test]
async fn redis_refusing_config_is_polled() {
    let Some(redis) = Redis::start_managed("redis_refusing_config_is_polled").await else {
        return;
    };
    let store = open(&format!("redis://127.0.0.1:{}/0", redis.port));
    assert!(
        store
            .watch("contract/acme/generation")
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn redis_without_notifications_is_asked_for_them() {
    let Some(redis) = Redis::start("redis_without_notifications_is_asked_for_them", false).await
    else {
        return;
    };
    let store = open(&format!("redis://127.0.0.1:{}/0", redis.port));
    assert!(
        store
            .watch("contract/acme/generation")
            .await
            .unwrap()
            .is_some()
    );
    let flags = redis.cli(&["config", "get", "notify-keyspace-events"]);
    assert!(
        flags.lines().nth(1).is_some_and(|f| f.contains('K')),
        "{flags}"
    );
}

#[tokio::test]
async fn etcd_keeps_the_contract() {
    let Some(binary) = support::etcd::available("etcd_keeps_the_contract") else {
        return;
    };
    let etcd = support::etcd::Etcd::start(binary).await;
    let store = open(&format!("etcd://{}/ignored-prefix", etcd.endpoint()));
    contract(store.as_ref()).await;
    announces(store.as_ref()).await;
}

#[tokio::test]
async fn a_store_that_is_down_is_an_error_naming_it() {
    let port = support::free_port();
    for url in [
        format!("redis://u:secret@127.0.0.1:{port}/0"),
        format!("etcd://127.0.0.1:{port}"),
    ] {
        let store = open(&url);
        let e = store.get("contract/acme/x").await.unwrap_err().to_string();
        assert!(
            e.contains(&format!("127.0.0.1:{port}")) && e.contains("`contract/acme/x`"),
            "{e}"
        );
        assert!(!e.contains("secret"), "{e}");
    }
}
