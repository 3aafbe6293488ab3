//! The Redis provider against Debian's redis-server: keys written in
//! Traefik's KV layout are routed, changes are followed (by keyspace
//! notifications, or by polling where the server sends none), a bad key
//! disables its object only and is named, and the store going away keeps
//! the routes until it is back.

use crate::support;

use std::process::Command;
use support::kv::{
    API, Redis, WITHIN, answer, api_json, assert_changes_followed, assert_disabled_and_named,
    assert_resynced, assert_routes_kept, assert_tls_checked, on_traefik_root, provider_state,
    write_route,
};
use support::{Backend, Gangway, eventually};

#[tokio::test]
async fn traefik_keys_are_routed_and_changes_follow_by_notification() {
    let test = "traefik_keys_are_routed_and_changes_follow_by_notification";
    let Some(redis) = Redis::start(test, true).await else {
        return;
    };
    let a = Backend::echo("a").await;
    let b = Backend::echo("b").await;
    write_route(&redis, "traefik", "app", "app.test", &a.url()).await;
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
    assert_changes_followed(&gw, &redis, "redis", &a, &b).await;
    assert!(
        gw.log_line("following changes by change notifications")
            .is_some(),
        "{}",
        gw.log()
    );
}

#[tokio::test]
async fn a_stock_redis_is_asked_for_notifications_and_followed_by_them() {
    let test = "a_stock_redis_is_asked_for_notifications_and_followed_by_them";
    // Notifications off, as a stock redis-server starts.
    let Some(redis) = Redis::start(test, false).await else {
        return;
    };
    assert_eq!(
        redis
            .cli(&["config", "get", "notify-keyspace-events"])
            .lines()
            .nth(1),
        Some("")
    );
    let a = Backend::echo("a").await;
    let b = Backend::echo("b").await;
    write_route(&redis, "traefik", "app", "app.test", &a.url()).await;
    // Polling too rare to be what follows the changes.
    let gw = Gangway::with_file_env(
        API,
        &[
            &redis.endpoint(),
            "--providers.redis.rootKey=traefik",
            "--providers.redis.pollInterval=1h",
            "--api=true",
        ],
        &[("RUST_LOG", "info")],
    )
    .await;
    assert_changes_followed(&gw, &redis, "redis", &a, &b).await;
    let flags = redis.cli(&["config", "get", "notify-keyspace-events"]);
    let flags = flags.lines().nth(1).unwrap_or_default();
    assert!(
        flags.contains('K') && flags.contains('E'),
        "notify-keyspace-events is `{flags}`"
    );
    for line in [
        "asked the server for keyspace notifications",
        "following changes by change notifications",
    ] {
        assert!(gw.log_line(line).is_some(), "{line}:\n{}", gw.log());
    }
}

#[tokio::test]
async fn where_config_is_refused_the_keys_are_polled() {
    let test = "where_config_is_refused_the_keys_are_polled";
    let Some(redis) = Redis::start_managed(test).await else {
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
    write_route(&redis, "gangway", "app", "app.test", &a.url()).await;
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
    write_route(&redis, "traefik", "good", "good.test", &a.url()).await;
    write_route(&redis, "traefik", "bad", "bad.test", &a.url()).await;
    redis.set("traefik/http/routers/bad/priorty", "10");
    // Not a string: reported, not fatal.
    redis.cli(&["HSET", "traefik/http/routers/good/hash", "f", "v"]);
    let gw = on_traefik_root("redis", &redis.endpoint()).await;
    assert_disabled_and_named(
        &gw,
        "redis",
        "redis key `traefik/http/routers/bad/priorty`: unknown option `priorty` (did you mean `priority`?)",
        // Not a string: reported, not fatal.
        "redis key `traefik/http/routers/good/hash`: the key holds a hash, not a string; values are strings in Traefik's KV layout; the key is ignored",
    )
    .await;
    let overview = api_json(&gw, "/api/overview").await;
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
    write_route(&redis, "traefik", "app", "app.test", &a.url()).await;
    let gw = on_traefik_root("redis", &redis.endpoint()).await;
    eventually(WITHIN, "the router from Redis answers", || async {
        answer(&gw, "app.test").await.is_some()
    })
    .await;

    redis.stop();
    assert_routes_kept(&gw, "redis").await;

    // Back on the same port, empty (no persistence): the keys are written
    // again, with another server.
    assert!(redis.run().await, "redis-server restarts on its port");
    write_route(&redis, "traefik", "app", "app.test", &b.url()).await;
    assert_resynced(&gw, "redis").await;
}

#[tokio::test]
async fn tls_to_the_store_checks_its_certificate_against_the_ca_given() {
    let test = "tls_to_the_store_checks_its_certificate_against_the_ca_given";
    let Some(redis) = Redis::start_with(test, true, true).await else {
        return;
    };
    let a = Backend::echo("a").await;
    write_route(&redis, "gangway", "app", "app.test", &a.url()).await;
    let ca = redis.ca.clone().unwrap();
    assert_tls_checked("redis", &redis.endpoint(), &ca).await;
}

#[test]
fn sentinel_options_without_a_master_name_are_refused_at_start() {
    let out = Command::new(support::binary())
        .args([
            "--entryPoints.web.address=127.0.0.1:0",
            "--providers.redis.sentinel.password=secret",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("give sentinel.masterName"), "{text}");
}
