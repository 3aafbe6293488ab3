//! The Redis provider against Debian's redis-server: keys written in
//! Traefik's KV layout are routed, changes are followed (by keyspace
//! notifications, or by polling where the server sends none), a bad key
//! disables its object only and is named, and the store going away keeps
//! the routes until it is back.

mod support;

use std::process::Command;
use std::time::Duration;
use support::kv::{API, Redis, WITHIN, answer, provider_state, route_keys};
use support::{Backend, Gangway, eventually};

/// Writes router `name` for `host` to service `name` at `url`, under
/// `root` (see `route_keys`).
fn write_route(redis: &Redis, root: &str, name: &str, host: &str, url: &str) {
    for (key, value) in route_keys(root, name, host, url) {
        redis.set(&key, &value);
    }
}

#[tokio::test]
async fn traefik_keys_are_routed_and_changes_follow_by_notification() {
    let test = "traefik_keys_are_routed_and_changes_follow_by_notification";
    let Some(redis) = Redis::start(test, true).await else {
        return;
    };
    let a = Backend::echo("a").await;
    let b = Backend::echo("b").await;
    write_route(&redis, "traefik", "app", "app.test", &a.url());
    let gw = Gangway::with_file_env(
        API,
        &[
            &redis.endpoint(),
            "--providers.redis.rootKey=traefik",
            "--api=true",
        ],
        &[("RUST_LOG", "info")],
    )
    .await;
    eventually(WITHIN, "the router from Redis answers", || async {
        answer(&gw, "app.test").await.is_some()
    })
    .await;
    assert_eq!(
        answer(&gw, "app.test").await,
        Some(("a".to_owned(), "/x".to_owned())),
        "the middleware from Redis took /api off"
    );
    assert!(
        gw.log_line("following changes by change notifications")
            .is_some(),
        "{}",
        gw.log()
    );
    let state = provider_state(&gw, "redis").await;
    assert_eq!(state["connected"], true, "{state}");
    assert!(state["lastSync"].is_u64(), "{state}");

    // A new router.
    write_route(&redis, "traefik", "two", "two.test", &a.url());
    eventually(WITHIN, "a new router is routed", || async {
        answer(&gw, "two.test").await.is_some()
    })
    .await;
    // A changed server URL.
    redis.set(
        "traefik/http/services/app/loadBalancer/servers/0/url",
        &b.url(),
    );
    eventually(WITHIN, "the changed server gets the traffic", || async {
        answer(&gw, "app.test")
            .await
            .is_some_and(|(who, _)| who == "b")
    })
    .await;
    // A deleted router.
    for option in ["rule", "entryPoints/0", "middlewares/0", "service"] {
        redis.del(&format!("traefik/http/routers/two/{option}"));
    }
    eventually(WITHIN, "the deleted router is gone", || async {
        gw.get("two.test", "/api/x").await.status == 404
    })
    .await;
    assert!(answer(&gw, "app.test").await.is_some());
}

#[tokio::test]
async fn without_notifications_the_keys_are_polled() {
    let test = "without_notifications_the_keys_are_polled";
    let Some(redis) = Redis::start(test, false).await else {
        return;
    };
    let a = Backend::echo("a").await;
    let b = Backend::echo("b").await;
    let gw = Gangway::with_file_env(
        API,
        &[
            &redis.endpoint(),
            "--providers.redis.pollInterval=200ms",
            "--api=true",
        ],
        &[("RUST_LOG", "info")],
    )
    .await;
    eventually(WITHIN, "the provider connects", || async {
        provider_state(&gw, "redis").await["connected"] == true
    })
    .await;
    assert!(
        gw.log_line("following changes by polling every 200ms")
            .is_some(),
        "{}",
        gw.log()
    );
    // Written after the start: found by polling. The default root key is
    // gangway's own.
    write_route(&redis, "gangway", "app", "app.test", &a.url());
    eventually(WITHIN, "a new router is routed", || async {
        answer(&gw, "app.test").await.is_some()
    })
    .await;
    redis.set(
        "gangway/http/services/app/loadBalancer/servers/0/url",
        &b.url(),
    );
    eventually(WITHIN, "the changed server gets the traffic", || async {
        answer(&gw, "app.test")
            .await
            .is_some_and(|(who, _)| who == "b")
    })
    .await;
}

#[tokio::test]
async fn a_malformed_key_disables_only_its_object_and_is_named() {
    let test = "a_malformed_key_disables_only_its_object_and_is_named";
    let Some(redis) = Redis::start(test, true).await else {
        return;
    };
    let a = Backend::echo("a").await;
    write_route(&redis, "traefik", "good", "good.test", &a.url());
    write_route(&redis, "traefik", "bad", "bad.test", &a.url());
    redis.set("traefik/http/routers/bad/priorty", "10");
    // Not a string: reported, not fatal.
    redis.cli(&["HSET", "traefik/http/routers/good/hash", "f", "v"]);
    let gw = Gangway::with_file(
        API,
        &[
            &redis.endpoint(),
            "--providers.redis.rootKey=traefik",
            "--api=true",
        ],
    )
    .await;
    eventually(WITHIN, "the good router answers", || async {
        answer(&gw, "good.test").await.is_some()
    })
    .await;
    assert_eq!(gw.get("bad.test", "/api/x").await.status, 404);
    let bad: serde_json::Value = serde_json::from_str(
        &gw.get("api.test", "/api/http/routers/bad@redis")
            .await
            .text(),
    )
    .unwrap();
    assert_eq!(bad["status"], "disabled", "{bad}");
    assert_eq!(
        bad["error"][0],
        "redis key `traefik/http/routers/bad/priorty`: unknown option `priorty` (did you mean `priority`?)",
        "{bad}"
    );
    assert_eq!(bad["keys"]["provider"], "redis", "{bad}");
    let overview: serde_json::Value =
        serde_json::from_str(&gw.get("api.test", "/api/overview").await.text()).unwrap();
    let warnings = overview["warnings"].as_array().cloned().unwrap_or_default();
    assert!(
        warnings.iter().any(|w| w["message"]
            == "redis key `traefik/http/routers/good/hash`: the key holds a hash, not a string; values are strings in Traefik's KV layout; the key is ignored"),
        "the key that is not a string is reported: {warnings:?}"
    );
    assert!(
        overview["providers"]
            .as_array()
            .is_some_and(|p| p.contains(&serde_json::json!("Redis")))
    );
}

#[tokio::test]
async fn the_store_restarting_keeps_the_routes_and_resyncs() {
    let test = "the_store_restarting_keeps_the_routes_and_resyncs";
    let Some(mut redis) = Redis::start(test, true).await else {
        return;
    };
    let a = Backend::echo("a").await;
    let b = Backend::echo("b").await;
    write_route(&redis, "traefik", "app", "app.test", &a.url());
    let gw = Gangway::with_file(
        API,
        &[
            &redis.endpoint(),
            "--providers.redis.rootKey=traefik",
            "--api=true",
        ],
    )
    .await;
    eventually(WITHIN, "the router from Redis answers", || async {
        answer(&gw, "app.test").await.is_some()
    })
    .await;

    redis.stop();
    eventually(WITHIN, "the API says the store is unreachable", || async {
        let state = provider_state(&gw, "redis").await;
        state["connected"] == false && state["lastError"].is_string()
    })
    .await;
    assert_eq!(
        answer(&gw, "app.test").await.map(|(who, _)| who),
        Some("a".to_owned()),
        "the last routes stay while the store is away"
    );

    // Back on the same port, empty (no persistence): the keys are written
    // again, with another server.
    assert!(redis.run().await, "redis-server restarts on its port");
    write_route(&redis, "traefik", "app", "app.test", &b.url());
    eventually(
        Duration::from_secs(15),
        "the provider reconnects and reads the keys again",
        || async {
            answer(&gw, "app.test")
                .await
                .is_some_and(|(who, _)| who == "b")
        },
    )
    .await;
    let state = provider_state(&gw, "redis").await;
    assert_eq!(state["connected"], true, "{state}");
    assert!(state.get("lastError").is_none(), "{state}");
}

#[tokio::test]
async fn tls_to_the_store_checks_its_certificate_against_the_ca_given() {
    let test = "tls_to_the_store_checks_its_certificate_against_the_ca_given";
    let Some(redis) = Redis::start_with(test, true, true).await else {
        return;
    };
    let a = Backend::echo("a").await;
    write_route(&redis, "gangway", "app", "app.test", &a.url());
    let ca = redis.ca.clone().unwrap();
    let trusting = Gangway::with_file(
        API,
        &[
            &redis.endpoint(),
            &format!("--providers.redis.tls.ca={}", ca.display()),
            "--api=true",
        ],
    )
    .await;
    eventually(WITHIN, "the router from Redis over TLS answers", || async {
        answer(&trusting, "app.test").await.is_some()
    })
    .await;
    // Without the CA, the test CA's certificate is not trusted.
    let doubting = Gangway::with_file(
        API,
        &[
            &redis.endpoint(),
            "--providers.redis.tls=true",
            "--api=true",
        ],
    )
    .await;
    eventually(WITHIN, "the untrusted store is reported", || async {
        let state = provider_state(&doubting, "redis").await;
        state["connected"] == false && state["lastError"].is_string()
    })
    .await;
    let state = provider_state(&doubting, "redis").await;
    let error = state["lastError"].as_str().unwrap_or_default();
    assert!(error.contains("certificate"), "{state}");
    assert_eq!(doubting.get("app.test", "/api/x").await.status, 404);
}

#[test]
fn sentinel_options_are_refused_at_start() {
    let out = Command::new(support::binary())
        .args([
            "--entryPoints.web.address=127.0.0.1:0",
            "--providers.redis.sentinel.masterName=mymaster",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("Redis Sentinel is not supported yet"),
        "{text}"
    );
}
