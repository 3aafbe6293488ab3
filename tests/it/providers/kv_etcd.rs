//! The etcd provider against Debian's etcd-server: keys written in
//! Traefik's KV layout are routed, changes are followed by etcd's watch, a
//! bad key disables its object only and is named, the store going away
//! keeps the routes until it is back, and auth and TLS work. The test
//! writes through etcd's own gateway with a client of its own, so what
//! gangway routes is checked against writes it did not make.

use crate::support;

use support::etcd::{Etcd, available};
use support::kv::{
    API, WITHIN, answer, api_json, assert_changes_followed, assert_disabled_and_named,
    assert_resynced, assert_routes_kept, assert_tls_checked, on_traefik_root, provider_state,
    unreachable, write_route,
};
use support::tls::TestCa;
use support::{Backend, Gangway, eventually};

async fn start(test: &str) -> Option<Etcd> {
    Some(Etcd::start(available(test)?).await)
}

fn endpoint(etcd: &Etcd) -> String {
    format!("--providers.etcd.endpoints={}", etcd.endpoint())
}

#[tokio::test]
async fn traefik_keys_are_routed_and_changes_follow_by_watch() {
    let test = "traefik_keys_are_routed_and_changes_follow_by_watch";
    let Some(etcd) = start(test).await else {
        return;
    };
    let a = Backend::echo("a").await;
    let b = Backend::echo("b").await;
    write_route(&etcd, "traefik", "app", "app.test", &a.url()).await;
    // Under a root that only starts like `traefik`: not read.
    write_route(&etcd, "traefikx", "other", "other.test", &a.url()).await;
    let gw = on_traefik_root("etcd", &endpoint(&etcd)).await;
    assert_changes_followed(&gw, &etcd, "etcd", &a, &b).await;
    assert_eq!(
        gw.get("other.test", "/api/x").await.status,
        404,
        "keys under traefikx/ are not gangway's"
    );
    let overview = api_json(&gw, "/api/overview").await;
    assert!(
        overview["providers"]
            .as_array()
            .is_some_and(|p| p.contains(&serde_json::json!("Etcd"))),
        "{overview}"
    );
}

#[tokio::test]
async fn the_default_root_is_gangways_own() {
    let test = "the_default_root_is_gangways_own";
    let Some(etcd) = start(test).await else {
        return;
    };
    let a = Backend::echo("a").await;
    let gw = Gangway::with_file_env(
        API,
        &[&endpoint(&etcd), "--api=true"],
        &[("RUST_LOG", "info")],
    )
    .await;
    eventually(WITHIN, "the provider connects", || async {
        provider_state(&gw, "etcd").await["connected"] == true
    })
    .await;
    assert!(
        gw.log_line("following changes by a watch").is_some(),
        "{}",
        gw.log()
    );
    // Written after the start, so found by the watch.
    write_route(&etcd, "traefik", "theirs", "theirs.test", &a.url()).await;
    write_route(&etcd, "gangway", "app", "app.test", &a.url()).await;
    eventually(WITHIN, "the router under gangway/ is routed", || async {
        answer(&gw, "app.test").await.is_some()
    })
    .await;
    assert_eq!(gw.get("theirs.test", "/api/x").await.status, 404);
}

#[tokio::test]
async fn a_malformed_key_disables_only_its_object_and_is_named() {
    let test = "a_malformed_key_disables_only_its_object_and_is_named";
    let Some(etcd) = start(test).await else {
        return;
    };
    let a = Backend::echo("a").await;
    write_route(&etcd, "traefik", "good", "good.test", &a.url()).await;
    write_route(&etcd, "traefik", "bad", "bad.test", &a.url()).await;
    etcd.put("traefik/http/routers/bad/priorty", "10").await;
    etcd.put_bytes(b"traefik/http/routers/good/note", b"\xff\xfe")
        .await;
    let gw = on_traefik_root("etcd", &endpoint(&etcd)).await;
    assert_disabled_and_named(
        &gw,
        "etcd",
        "etcd key `traefik/http/routers/bad/priorty`: unknown option `priorty` (did you mean `priority`?)",
        // Not text: reported, not fatal.
        "etcd key `traefik/http/routers/good/note`: the value is not UTF-8 text; the key is ignored",
    )
    .await;

    // Fixed in the store: routed without a restart.
    etcd.delete("traefik/http/routers/bad/priorty").await;
    eventually(WITHIN, "the fixed router answers", || async {
        answer(&gw, "bad.test").await.is_some()
    })
    .await;

    // A value that is not text, written while gangway watches: the watch
    // cannot carry it as text, so the keys are read again and it is
    // reported; later changes are still followed.
    let later = "etcd key `traefik/http/routers/good/later`: the value is not UTF-8 text; the key is ignored";
    let warned = || async {
        let overview = api_json(&gw, "/api/overview").await;
        let warnings = overview["warnings"].as_array().cloned().unwrap_or_default();
        warnings.iter().any(|w| w["message"] == later)
    };
    etcd.put_bytes(b"traefik/http/routers/good/later", b"\xc3")
        .await;
    eventually(WITHIN, "the value written later is reported", warned).await;
    etcd.delete("traefik/http/routers/good/later").await;
    eventually(WITHIN, "its deletion is followed", || async {
        !warned().await
    })
    .await;
    assert!(answer(&gw, "good.test").await.is_some());
}

#[tokio::test]
async fn the_store_restarting_keeps_the_routes_and_resyncs() {
    let test = "the_store_restarting_keeps_the_routes_and_resyncs";
    let Some(mut etcd) = start(test).await else {
        return;
    };
    let a = Backend::echo("a").await;
    let b = Backend::echo("b").await;
    write_route(&etcd, "traefik", "app", "app.test", &a.url()).await;
    let gw = on_traefik_root("etcd", &endpoint(&etcd)).await;
    eventually(WITHIN, "the router from etcd answers", || async {
        answer(&gw, "app.test").await.is_some()
    })
    .await;

    etcd.kill();
    assert_routes_kept(&gw, "etcd").await;

    // Back on the same data: the keys are still there, and a change made
    // after the restart is followed.
    etcd.restart().await;
    etcd.put(
        "traefik/http/services/app/loadBalancer/servers/0/url",
        &b.url(),
    )
    .await;
    assert_resynced(&gw, "etcd").await;
    write_route(&etcd, "traefik", "later", "later.test", &a.url()).await;
    eventually(WITHIN, "changes are watched again", || async {
        answer(&gw, "later.test").await.is_some()
    })
    .await;
}

#[tokio::test]
async fn a_user_and_password_are_used_and_a_wrong_password_is_reported() {
    let test = "a_user_and_password_are_used_and_a_wrong_password_is_reported";
    let Some(mut etcd) = start(test).await else {
        return;
    };
    let a = Backend::echo("a").await;
    etcd.enable_auth("s3cret").await;
    write_route(&etcd, "traefik", "app", "app.test", &a.url()).await;
    let args = |password: &str| {
        vec![
            endpoint(&etcd),
            "--providers.etcd.rootKey=traefik".to_owned(),
            "--providers.etcd.username=root".to_owned(),
            format!("--providers.etcd.password={password}"),
            "--api=true".to_owned(),
        ]
    };
    let right = args("s3cret");
    let right: Vec<&str> = right.iter().map(String::as_str).collect();
    let gw = Gangway::with_file(API, &right).await;
    eventually(WITHIN, "the router behind auth answers", || async {
        answer(&gw, "app.test").await.is_some()
    })
    .await;
    write_route(&etcd, "traefik", "two", "two.test", &a.url()).await;
    eventually(WITHIN, "the watch behind auth follows", || async {
        answer(&gw, "two.test").await.is_some()
    })
    .await;

    let wrong = args("guess");
    let wrong: Vec<&str> = wrong.iter().map(String::as_str).collect();
    let refused = Gangway::with_file(API, &wrong).await;
    let error = unreachable(&refused, "etcd").await;
    assert!(error.contains("authentication as `root` failed"), "{error}");
    assert_eq!(refused.get("app.test", "/api/x").await.status, 404);
}

#[tokio::test]
async fn tls_to_the_store_checks_its_certificate_against_the_ca_given() {
    let test = "tls_to_the_store_checks_its_certificate_against_the_ca_given";
    let Some(binary) = available(test) else {
        return;
    };
    let ca = TestCa::new("etcd provider test CA");
    let (cert, key) = ca.issue(&["127.0.0.1"]);
    let etcd = Etcd::start_with_tls(binary, &cert, &key).await;
    let a = Backend::echo("a").await;
    write_route(&etcd, "gangway", "app", "app.test", &a.url()).await;
    let ca_file = etcd.dir.path().join("ca.pem");
    std::fs::write(&ca_file, ca.pem()).unwrap();
    let tls_endpoint = format!("--providers.etcd.endpoints={}", etcd.tls_endpoint());
    assert_tls_checked("etcd", &tls_endpoint, &ca_file).await;
}
