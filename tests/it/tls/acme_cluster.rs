//! Several gangway instances sharing one ACME storage in a real Redis or
//! etcd, ordering from a real pebble with real validation: exactly one
//! order per domain, the CA's validation answered by an instance that did
//! not order, the lease holder killed mid-order, the store stopped for a
//! minute, private keys sealed in the store.

use crate::support;

use http::StatusCode;
use std::time::{Duration, Instant};
use support::kv::Redis;
use support::pebble::{self, Pebble};
use support::tls::TlsClient;
use support::{Backend, Gangway, eventually, free_port};

/// Time for one certificate from pebble (a few seconds here), a lease
/// expiry included.
const ISSUE: Duration = Duration::from_secs(60);

/// The dynamic configuration: the API at `gw.test`, and with `hosts` one
/// router each wanting a certificate from resolver `le`.
fn dynamic(backend: &str, hosts: &[&str]) -> String {
    let mut s = format!(
        "[http.services.app.loadBalancer]\n[[http.services.app.loadBalancer.servers]]\nurl = \"{backend}\"\n\
         [http.routers.gw]\nrule = \"Host(`gw.test`)\"\nservice = \"api@internal\"\n"
    );
    for (i, host) in hosts.iter().enumerate() {
        s.push_str(&format!(
            "[http.routers.r{i}]\nrule = \"Host(`{host}`)\"\nentryPoints = [\"websecure\"]\nservice = \"app\"\n[http.routers.r{i}.tls]\ncertResolver = \"le\"\n"
        ));
    }
    s
}

/// One instance: `web` and `websecure` on the given ports, resolver `le`
/// storing in `store`.
async fn instance(
    pebble: &Pebble,
    store: &str,
    web: u16,
    tls: u16,
    dynamic: &str,
    extra: &[String],
) -> Gangway {
    let mut flags = pebble.resolver_flags("le");
    flags.extend([
        format!("--entryPoints.websecure.address=127.0.0.1:{tls}"),
        format!("--certificatesResolvers.le.acme.storage={store}"),
        "--certificatesResolvers.le.acme.email=ops@gangway.test".to_owned(),
        "--api=true".to_owned(),
    ]);
    flags.extend(extra.iter().cloned());
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    Gangway::with_file_on(web, dynamic, &flags).await
}

/// The serial of the pebble certificate served for `host` on `tls`, once
/// there is one.
async fn served_serial(client: &TlsClient, tls: u16, host: &str) -> String {
    let deadline = Instant::now() + ISSUE;
    loop {
        if let Some(serial) = serial_now(client, tls, host).await {
            return serial;
        }
        assert!(
            Instant::now() < deadline,
            "no pebble certificate for {host} on :{tls} within {ISSUE:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The serial served for `host` right now, if a pebble certificate is.
async fn serial_now(client: &TlsClient, tls: u16, host: &str) -> Option<String> {
    client
        .get(tls, host, None, "/", false)
        .await
        .ok()
        .filter(|g| g.status == StatusCode::OK && g.names() == [host])
        .map(|g| g.serial())
}

/// An API answer, or null while the API router is not applied yet.
async fn api(gw: &Gangway, path: &str) -> serde_json::Value {
    serde_json::from_slice(&gw.get("gw.test", path).await.body).unwrap_or_default()
}

/// Certificates pebble issued (one log line each).
fn issued(pebble: &Pebble) -> usize {
    pebble
        .log()
        .lines()
        .filter(|l| l.contains("Issued certificate serial"))
        .count()
}

/// The keys under `pattern` in Redis, without lease fences.
fn redis_keys(redis: &Redis, pattern: &str) -> Vec<String> {
    redis
        .cli(&["--scan", "--pattern", pattern])
        .lines()
        .filter(|k| !k.is_empty() && !k.ends_with(":fence"))
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn three_instances_order_once_answer_validation_anywhere_and_outlive_the_store() {
    const T: &str = "three_instances_order_once_answer_validation_anywhere_and_outlive_the_store";
    if !pebble::available(T) {
        return;
    }
    // A managed Redis: no notifications, and CONFIG refused, so the
    // instances poll the store.
    let Some(mut redis) = Redis::start_managed(T).await else {
        return;
    };
    // pebble validates HTTP-01 on one port: instance C's, which has no
    // router of its own wanting the certificate, so never orders it.
    let http_port = free_port();
    let pebble = Pebble::start(http_port, free_port(), None).await;
    let app = Backend::echo("app").await;
    let store = format!("redis://127.0.0.1:{}/0", redis.port);
    let http01 = ["--certificatesResolvers.le.acme.httpChallenge.entryPoint=web".to_owned()];
    let with_app = dynamic(&app.url(), &["app.test"]);
    let tls = [free_port(), free_port(), free_port()];
    let internal = free_port();
    let mut with_metrics = http01.to_vec();
    with_metrics.extend([
        "--metrics.prometheus".to_owned(),
        format!("--entryPoints.gangway.address=127.0.0.1:{internal}"),
    ]);
    // C first: pebble's validations reach it as soon as A orders.
    let c = instance(
        &pebble,
        &store,
        http_port,
        tls[2],
        &dynamic(&app.url(), &[]),
        &http01,
    )
    .await;

    let a = instance(
        &pebble,
        &store,
        free_port(),
        tls[0],
        &with_app,
        &with_metrics,
    )
    .await;
    let store_up = || async move {
        metrics_text(internal)
            .await
            .lines()
            .find(|l| l.starts_with("gangway_acme_store_up{resolver=\"le\"}"))
            .map(|l| l.rsplit(' ').next().unwrap_or_default().to_owned())
    };
    let _b = instance(&pebble, &store, free_port(), tls[1], &with_app, &http01).await;
    let client = TlsClient::trusting(&pebble.issuing_root().await);
    let serial = served_serial(&client, tls[0], "app.test").await;
    assert_eq!(served_serial(&client, tls[1], "app.test").await, serial);
    assert_eq!(
        pebble.orders(),
        1,
        "one order for the cluster:\n{}",
        pebble.log()
    );
    // The instance that ordered is A or B, and the CA's request reached C.
    // C serves the same certificate once a router wants it, with no order.
    c.rewrite(&with_app);
    assert_eq!(served_serial(&client, tls[2], "app.test").await, serial);
    assert_eq!(pebble.orders(), 1, "C took it from the store");
    assert_eq!(issued(&pebble), 1);

    // Without storageEncryptionKeyFile the keys are in clear: said in the
    // API, and true of the stored value.
    let resolvers = api(&c, "/api/certificateresolvers").await;
    let le = &resolvers[0];
    assert_eq!(le["storage"]["kind"], "redis", "{le}");
    assert_eq!(le["storage"]["follow"], "polling", "no notifications: {le}");
    assert_eq!(le["storage"]["encrypted"], false, "{le}");
    assert_eq!(le["storage"]["reachable"], true, "{le}");
    assert!(
        le["warnings"][0]
            .as_str()
            .is_some_and(|w| w.contains("in clear")),
        "{le}"
    );
    let overview = api(&c, "/api/overview").await;
    assert!(
        overview["warnings"]
            .as_array()
            .is_some_and(|w| w.iter().any(|w| w["kind"] == "acmeKeysInClear")),
        "{overview}"
    );
    let certs = redis_keys(&redis, "gangway/acme/*/certs/*");
    assert_eq!(certs.len(), 1, "{certs:?}");
    let raw = redis.cli(&["GET", &certs[0]]);
    assert!(raw.contains("BEGIN PRIVATE KEY"), "{raw}");

    // The store stopped for a minute: every instance keeps serving, and a
    // new certificate waits for the store instead of being ordered.
    redis.shutdown_saving();
    let stopped = Instant::now();
    a.rewrite(&dynamic(&app.url(), &["app.test", "new.test"]));
    let mut down_reported = false;
    while stopped.elapsed() < Duration::from_secs(60) {
        for port in tls {
            assert_eq!(
                serial_now(&client, port, "app.test").await.as_deref(),
                Some(serial.as_str()),
                "served on :{port} with the store down"
            );
        }
        let le = &api(&a, "/api/certificateresolvers").await[0];
        let certs = api(&a, "/api/tls/certificates").await;
        let waiting = certs.as_array().and_then(|c| {
            c.iter()
                .find(|c| c["domains"][0] == "new.test")
                .and_then(|c| c["storageError"].as_str().map(str::to_owned))
        });
        if le["storage"]["reachable"] == false
            && le["storage"]["lastError"].is_string()
            && waiting.is_some()
            && store_up().await.as_deref() == Some("0")
        {
            down_reported = true;
        }
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
    assert!(
        down_reported,
        "the API says the store is down and why new.test waits"
    );
    assert_eq!(pebble.orders(), 1, "no order while the store is down");
    assert!(redis.run().await, "redis restarts with its data");
    served_serial(&client, tls[0], "new.test").await;
    assert_eq!(pebble.orders(), 2, "the waiting order went ahead");
    let le = &api(&a, "/api/certificateresolvers").await[0];
    assert_eq!(le["storage"]["reachable"], true, "{le}");
    assert_eq!(store_up().await.as_deref(), Some("1"));
}

/// gangway's Prometheus exposition on 127.0.0.1:`port`.
async fn metrics_text(port: u16) -> String {
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<http_body_util::Full<bytes::Bytes>>();
    let uri = format!("http://127.0.0.1:{port}/metrics");
    match client.get(uri.parse().expect("URI")).await {
        Ok(r) => http_body_util::BodyExt::collect(r.into_body())
            .await
            .map(|b| String::from_utf8_lossy(&b.to_bytes()).into_owned())
            .unwrap_or_default(),
        Err(_) => String::new(),
    }
}

#[tokio::test]
async fn a_killed_lease_holder_is_taken_over_and_keys_are_sealed() {
    const T: &str = "a_killed_lease_holder_is_taken_over_and_keys_are_sealed";
    if !pebble::available(T) {
        return;
    }
    let Some(redis) = Redis::start(T, false).await else {
        return;
    };
    // TLS-ALPN-01 this time, validated on instance C's TLS port.
    let alpn_port = free_port();
    let pebble = Pebble::start(free_port(), alpn_port, None).await;
    let app = Backend::echo("app").await;
    let store = format!("redis://127.0.0.1:{}/0?prefix=edge", redis.port);
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("storage.key");
    std::fs::write(&key_file, "q83vEjRWeJCrze8SNFZ4kKvN7xI0VniQq83vEjRWeJA=\n").unwrap();
    let sealed = [format!(
        "--certificatesResolvers.le.acme.storageEncryptionKeyFile={}",
        key_file.display()
    )];
    let with_app = dynamic(&app.url(), &["app.test"]);
    let tls = [free_port(), free_port()];
    let mut a = Some(instance(&pebble, &store, free_port(), tls[0], &with_app, &sealed).await);
    let mut b = Some(instance(&pebble, &store, free_port(), tls[1], &with_app, &sealed).await);
    let c = instance(
        &pebble,
        &store,
        free_port(),
        alpn_port,
        &dynamic(&app.url(), &[]),
        &sealed,
    )
    .await;

    // Kill whichever instance takes the lease, as soon as it has it.
    let mut holder = String::new();
    eventually(
        Duration::from_secs(20),
        "an instance takes the lease",
        || {
            let found = redis_keys(&redis, "edge/acme/*/leases/*")
                .first()
                .map(|k| redis.cli(&["GET", k]).trim().to_owned())
                .filter(|v| !v.is_empty());
            if let Some(v) = found {
                holder = v;
            }
            let taken = !holder.is_empty();
            async move { taken }
        },
    )
    .await;
    let pid: u32 = holder
        .split('/')
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("holder `{holder}` names a process"));
    let (killed, survivor_tls) = if a.as_ref().is_some_and(|g| g.pid() == pid) {
        (a.take(), tls[1])
    } else {
        (b.take(), tls[0])
    };
    let mut killed = killed.unwrap_or_else(|| panic!("holder `{holder}` is neither instance"));
    killed.kill();
    let killed_at = Instant::now();

    let client = TlsClient::trusting(&pebble.issuing_root().await);
    served_serial(&client, survivor_tls, "app.test").await;
    eprintln!("taken over {:?} after the kill", killed_at.elapsed());
    assert_eq!(issued(&pebble), 1, "one certificate:\n{}", pebble.log());
    let certs = redis_keys(&redis, "edge/acme/*/certs/*");
    assert_eq!(certs.len(), 1, "{certs:?}");
    let raw = redis.cli(&["GET", &certs[0]]);
    let stored: serde_json::Value = serde_json::from_str(raw.trim()).expect("stored JSON");
    assert!(
        !stored["orderedBy"]
            .as_str()
            .unwrap_or_default()
            .contains(&format!("/{pid}/")),
        "the survivor stored it: {stored}"
    );
    // Sealed: no key in clear, in the certificate nor in the account.
    assert!(!raw.contains("PRIVATE KEY"), "{raw}");
    assert!(
        stored["sealedKey"]
            .as_str()
            .is_some_and(|k| k.starts_with("v1:"))
    );
    assert!(
        stored["chain"]
            .as_str()
            .is_some_and(|c| c.contains("BEGIN CERTIFICATE"))
    );
    for account in redis_keys(&redis, "edge/acme/*/accounts/*") {
        let raw = redis.cli(&["GET", &account]);
        assert!(
            !raw.contains("PRIVATE KEY") && raw.contains("sealedKey"),
            "{raw}"
        );
    }
    let le = &api(&c, "/api/certificateresolvers").await[0];
    assert_eq!(le["storage"]["encrypted"], true, "{le}");
    assert_eq!(le["warnings"], serde_json::json!([]), "{le}");
}

#[tokio::test]
async fn instances_sharing_etcd_order_once() {
    const T: &str = "instances_sharing_etcd_order_once";
    if !pebble::available(T) {
        return;
    }
    let Some(binary) = support::etcd::available(T) else {
        return;
    };
    let etcd = support::etcd::Etcd::start(binary).await;
    let http_port = free_port();
    let pebble = Pebble::start(http_port, free_port(), None).await;
    let app = Backend::echo("app").await;
    let store = format!("etcd://{}/gangway-test", etcd.endpoint());
    let http01 = ["--certificatesResolvers.le.acme.httpChallenge.entryPoint=web".to_owned()];
    let with_app = dynamic(&app.url(), &["app.test"]);
    let tls = [free_port(), free_port()];
    let _a = instance(&pebble, &store, free_port(), tls[0], &with_app, &http01).await;
    let b = instance(
        &pebble,
        &store,
        http_port,
        tls[1],
        &dynamic(&app.url(), &[]),
        &http01,
    )
    .await;
    let client = TlsClient::trusting(&pebble.issuing_root().await);
    let serial = served_serial(&client, tls[0], "app.test").await;
    b.rewrite(&with_app);
    assert_eq!(served_serial(&client, tls[1], "app.test").await, serial);
    assert_eq!(pebble.orders(), 1, "{}", pebble.log());
    let le = &api(&b, "/api/certificateresolvers").await[0];
    assert_eq!(le["storage"]["kind"], "etcd", "{le}");
    assert_eq!(le["storage"]["follow"], "watch", "{le}");
    assert_eq!(le["storage"]["reachable"], true, "{le}");
}

#[tokio::test]
async fn a_failed_order_holds_back_every_instance_until_its_retry_time() {
    const T: &str = "a_failed_order_holds_back_every_instance_until_its_retry_time";
    if !pebble::available(T) {
        return;
    }
    let Some(redis) = Redis::start(T, false).await else {
        return;
    };
    // pebble validates HTTP-01 on a port where nobody listens: the order
    // fails.
    let pebble = Pebble::start(free_port(), free_port(), None).await;
    let app = Backend::echo("app").await;
    let store = format!("redis://127.0.0.1:{}/0", redis.port);
    let http01 = ["--certificatesResolvers.le.acme.httpChallenge.entryPoint=web".to_owned()];
    let with_app = dynamic(&app.url(), &["app.test"]);
    let a = instance(
        &pebble,
        &store,
        free_port(),
        free_port(),
        &with_app,
        &http01,
    )
    .await;
    let b = instance(
        &pebble,
        &store,
        free_port(),
        free_port(),
        &with_app,
        &http01,
    )
    .await;
    // Both instances show the failure and the same retry time, and only
    // one order was placed for it.
    let deadline = Instant::now() + ISSUE;
    let seen = loop {
        let seen = (app_state(&a).await, app_state(&b).await);
        let failed = |s: &serde_json::Value| s["status"] == "error" && s["lastError"].is_string();
        if failed(&seen.0) && failed(&seen.1) {
            break seen;
        }
        assert!(
            Instant::now() < deadline,
            "both instances report the failed order: {seen:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let orders = pebble.orders();
    assert_eq!(orders, 1, "one order, then both wait:\n{seen:?}");
    assert_eq!(seen.0["nextAttempt"], seen.1["nextAttempt"], "{seen:?}");
    let failures = redis_keys(&redis, "gangway/acme/*/failures/*");
    assert_eq!(failures.len(), 1, "{failures:?}");
}

/// `/api/tls/certificates`' entry for app.test.
async fn app_state(gw: &Gangway) -> serde_json::Value {
    api(gw, "/api/tls/certificates")
        .await
        .as_array()
        .and_then(|c| c.iter().find(|c| c["domains"][0] == "app.test").cloned())
        .unwrap_or_default()
}

#[tokio::test]
async fn an_instance_with_its_own_storage_reports_the_validation_it_cannot_answer() {
    const T: &str = "an_instance_with_its_own_storage_reports_the_validation_it_cannot_answer";
    if !pebble::available(T) {
        return;
    }
    let Some(redis) = Redis::start(T, false).await else {
        return;
    };
    // A shares its storage through Redis; F, on the port pebble validates,
    // keeps its certificates in a folder of its own: the mixed setup.
    let http_port = free_port();
    let pebble = Pebble::start(http_port, free_port(), None).await;
    let app = Backend::echo("app").await;
    let store = format!("redis://127.0.0.1:{}/0", redis.port);
    let folder = tempfile::tempdir().unwrap();
    let http01 = ["--certificatesResolvers.le.acme.httpChallenge.entryPoint=web".to_owned()];
    let a = instance(
        &pebble,
        &store,
        free_port(),
        free_port(),
        &dynamic(&app.url(), &["app.test"]),
        &http01,
    )
    .await;
    let f = instance(
        &pebble,
        &folder.path().join("acme").display().to_string(),
        http_port,
        free_port(),
        &dynamic(&app.url(), &[]),
        &http01,
    )
    .await;
    let deadline = Instant::now() + ISSUE;
    let (warning, failed) = loop {
        let overview = api(&f, "/api/overview").await;
        let warning = overview["warnings"]
            .as_array()
            .and_then(|w| w.iter().find(|w| w["kind"] == "acmeUnanswered").cloned());
        let failed = app_state(&a).await;
        if let Some(w) = warning
            && failed["status"] == "error"
        {
            break (w, failed);
        }
        assert!(
            Instant::now() < deadline,
            "F reports the validation it could not answer: {overview}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(warning["challenge"], "http-01", "{warning}");
    assert!(
        warning["message"]
            .as_str()
            .is_some_and(|m| m.contains("storage of its own")),
        "{warning}"
    );
    let f_resolver = &api(&f, "/api/certificateresolvers").await[0];
    assert_eq!(
        f_resolver["unansweredValidations"][0]["challenge"], "http-01",
        "{f_resolver}"
    );
    assert!(
        failed["lastError"]
            .as_str()
            .is_some_and(|e| e.contains("404")),
        "the CA got F's 404: {failed}"
    );
}

#[test]
fn a_bad_store_url_or_two_resolvers_on_the_same_keys_stop_the_start() {
    let run = |args: &[&str]| {
        let out = std::process::Command::new(support::binary())
            .arg("--entryPoints.web.address=127.0.0.1:0")
            .args(args)
            .output()
            .expect("run gangway");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, err) = run(&["--certificatesResolvers.le.acme.storage=redis://u:secret@host:99999"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("certificatesResolvers.le.acme.storage: `redis://u:***@host:99999`: `host:99999` is not host:port"),
        "{err}"
    );
    assert!(!err.contains("secret"), "{err}");
    let (code, err) = run(&[
        "--certificatesResolvers.a.acme.storage=redis://127.0.0.1:6390/0",
        "--certificatesResolvers.b.acme.storage=redis://127.0.0.1:6390/0",
    ]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("certificatesResolvers.b.acme.storage: resolver `a` already stores"),
        "{err}"
    );
}

#[tokio::test]
async fn renewal_is_ordered_once_for_the_cluster() {
    const T: &str = "renewal_is_ordered_once_for_the_cluster";
    if !pebble::available(T) {
        return;
    }
    // This Redis sends keyspace notifications: the other instance hears
    // of the renewed certificate at once.
    let Some(redis) = Redis::start(T, true).await else {
        return;
    };
    // Certificates valid for 45 s are renewed with a third of that left.
    let alpn_port = free_port();
    let pebble = Pebble::start(free_port(), alpn_port, Some(45)).await;
    let app = Backend::echo("app").await;
    let store = format!("redis://127.0.0.1:{}/0", redis.port);
    let with_app = dynamic(&app.url(), &["app.test"]);
    let a = instance(&pebble, &store, free_port(), alpn_port, &with_app, &[]).await;
    let b_tls = free_port();
    let b = instance(&pebble, &store, free_port(), b_tls, &with_app, &[]).await;
    let client = TlsClient::trusting(&pebble.issuing_root().await);
    let first = served_serial(&client, alpn_port, "app.test").await;
    assert_eq!(served_serial(&client, b_tls, "app.test").await, first);
    assert_eq!(pebble.orders(), 1);
    // Renewed once, by one instance, and both serve the new certificate.
    let deadline = Instant::now() + ISSUE;
    loop {
        let (sa, sb) = (
            serial_now(&client, alpn_port, "app.test").await,
            serial_now(&client, b_tls, "app.test").await,
        );
        if sa.as_deref().is_some_and(|s| s != first) && sa == sb {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "both serve the renewed certificate: {sa:?} {sb:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(
        pebble.orders(),
        2,
        "one renewal for the cluster:\n{}",
        pebble.log()
    );
    let le = &api(&b, "/api/certificateresolvers").await[0];
    assert_eq!(le["storage"]["follow"], "notifications", "{le}");
    drop(a);
}
