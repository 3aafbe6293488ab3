//! ACME against a real pebble with real validation (TLS-ALPN-01 and
//! HTTP-01 answered by gangway itself): issue, add at runtime, restart
//! without a new order, renew, survive a CA outage.

use crate::support;

use http::{StatusCode, Version};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;
use support::pebble::{self, Pebble};
use support::tls::TlsClient;
use support::{Backend, Gangway, eventually, free_port};

/// Time for one certificate from pebble (a few seconds here).
const ISSUE: Duration = Duration::from_secs(60);

fn routers(backend: &str, hosts: &[&str]) -> String {
    let mut s = format!(
        "[http.services.app.loadBalancer]\n[[http.services.app.loadBalancer.servers]]\nurl = \"{backend}\"\n\
         [http.routers.plain]\nrule = \"Host(`plain.test`)\"\nservice = \"app\"\n\
         [http.routers.gw]\nrule = \"Host(`gw.test`)\"\nservice = \"api@internal\"\n"
    );
    for (i, host) in hosts.iter().enumerate() {
        s.push_str(&format!(
            "[http.routers.r{i}]\nrule = \"Host(`{host}`)\"\nservice = \"app\"\n[http.routers.r{i}.tls]\ncertResolver = \"le\"\n"
        ));
    }
    s
}

/// `/api/tls/certificates`, through the router that sends `gw.test` to the API.
async fn certificates(gw: &Gangway) -> serde_json::Value {
    serde_json::from_slice(&gw.get("gw.test", "/api/tls/certificates").await.body)
        .expect("certificates json")
}

/// The certificate whose main name is `host`.
fn find_cert(certs: &serde_json::Value, host: &str) -> serde_json::Value {
    certs
        .as_array()
        .and_then(|a| a.iter().find(|c| c["domains"][0] == host))
        .cloned()
        .unwrap_or_else(|| panic!("{host} in {certs}"))
}

struct Setup {
    web: u16,
    tls: u16,
    storage: tempfile::TempDir,
}

impl Setup {
    fn new() -> Setup {
        Setup {
            web: free_port(),
            tls: free_port(),
            storage: tempfile::tempdir().unwrap(),
        }
    }

    fn flags(&self, pebble: &Pebble, extra: &[&str]) -> Vec<String> {
        let mut flags = vec![format!(
            "--entryPoints.websecure.address=127.0.0.1:{}",
            self.tls
        )];
        flags.extend(pebble.resolver_flags("le"));
        flags.extend([
            format!(
                "--certificatesResolvers.le.acme.storage={}",
                self.storage.path().join("acme").display()
            ),
            "--certificatesResolvers.le.acme.email=ops@gangway.test".to_owned(),
            "--api=true".to_owned(),
        ]);
        flags.extend(extra.iter().map(|s| (*s).to_owned()));
        flags
    }

    async fn gangway(&self, pebble: &Pebble, dynamic: &str, extra: &[&str]) -> Gangway {
        let flags = self.flags(pebble, extra);
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        Gangway::with_file_on(self.web, dynamic, &flags).await
    }
}

/// Waits until `host` is served over TLS with a certificate that chains to
/// pebble's current root and names `host`.
async fn wait_for_certificate(pebble: &Pebble, tls_port: u16, host: &str) -> TlsClient {
    let client = TlsClient::trusting(&pebble.issuing_root().await);
    let started = std::time::Instant::now();
    eventually(ISSUE, &format!("a pebble certificate for {host}"), || {
        let client = client.clone();
        async move {
            client
                .get(tls_port, host, None, "/", true)
                .await
                .is_ok_and(|g| g.status == StatusCode::OK && g.names() == [host])
        }
    })
    .await;
    eprintln!(
        "{host}: served with a pebble certificate after {:?}",
        started.elapsed()
    );
    client
}

#[tokio::test]
async fn a_router_gets_a_certificate_served_over_h2_and_http11() {
    if !pebble::available("a_router_gets_a_certificate") {
        return;
    }
    let app = Backend::echo("app").await;
    let setup = Setup::new();
    let pebble = Pebble::start(setup.web, setup.tls, None).await;
    let gw = setup
        .gangway(&pebble, &routers(&app.url(), &["app.test"]), &[])
        .await;
    let client = wait_for_certificate(&pebble, setup.tls, "app.test").await;
    for h2 in [true, false] {
        let got = client
            .get(setup.tls, "app.test", None, "/x", h2)
            .await
            .expect("a chain valid for app.test");
        assert_eq!(got.status, StatusCode::OK);
        let want = if h2 {
            Version::HTTP_2
        } else {
            Version::HTTP_11
        };
        assert_eq!(got.version, want);
        assert_eq!(got.names(), ["app.test"]);
    }
    // A name that is in no router gets the default certificate, and no order.
    let stranger = TlsClient::insecure()
        .get(setup.tls, "stranger.test", None, "/", true)
        .await
        .unwrap();
    assert_eq!(stranger.common_name(), "GANGWAY DEFAULT CERT");
    assert_eq!(pebble.orders(), 1, "{}", pebble.log());
    assert!(!pebble.log().contains("stranger.test"));
    drop(gw);
}

#[tokio::test]
async fn a_router_added_at_runtime_gets_its_own_certificate() {
    if !pebble::available("a_router_added_at_runtime") {
        return;
    }
    let app = Backend::echo("app").await;
    let setup = Setup::new();
    // Pebble refuses a fifth of the nonces here. Two orders sign about
    // twenty requests, so without a retry on `badNonce` one of them would
    // fail almost surely (0.8^20 ≈ 1% chance of none refused); with it, none does.
    let pebble = Pebble::start_with(setup.web, setup.tls, None, 20).await;
    let gw = setup
        .gangway(&pebble, &routers(&app.url(), &["one.test"]), &[])
        .await;
    wait_for_certificate(&pebble, setup.tls, "one.test").await;
    gw.rewrite(&routers(&app.url(), &["one.test", "two.test"]));
    let client = wait_for_certificate(&pebble, setup.tls, "two.test").await;
    let one = client
        .get(setup.tls, "one.test", None, "/", true)
        .await
        .unwrap();
    assert_eq!(
        one.names(),
        ["one.test"],
        "each router has its own certificate"
    );
    // One order per router; an order that failed (pebble's validation can
    // time out on a loaded machine) is retried, and only that may add one.
    let log = gw.log();
    let failed = log.matches("certificate order failed").count();
    assert_eq!(pebble.orders(), 2 + failed, "{log}");
    assert!(failed <= 1, "{log}");
}

#[tokio::test]
async fn a_restart_reuses_the_stored_certificate_without_a_new_order() {
    if !pebble::available("a_restart_reuses") {
        return;
    }
    let app = Backend::echo("app").await;
    let setup = Setup::new();
    let pebble = Pebble::start(setup.web, setup.tls, None).await;
    let gw = setup
        .gangway(&pebble, &routers(&app.url(), &["app.test"]), &[])
        .await;
    let client = wait_for_certificate(&pebble, setup.tls, "app.test").await;
    let first = client
        .get(setup.tls, "app.test", None, "/", true)
        .await
        .unwrap();
    assert_eq!(pebble.orders(), 1);
    drop(gw);

    // Storage: private folders and files.
    let root = setup.storage.path().join("acme");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&root), 0o700);
    let mut files = Vec::new();
    let mut dirs = vec![root.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                assert_eq!(mode(&path), 0o700, "{}", path.display());
                dirs.push(path);
            } else {
                assert_eq!(mode(&path), 0o600, "{}", path.display());
                files.push(path);
            }
        }
    }
    assert_eq!(files.len(), 2, "account key and one certificate: {files:?}");

    // Restart, with one more router: its order is the only new one.
    let gw = setup
        .gangway(
            &pebble,
            &routers(&app.url(), &["app.test", "more.test"]),
            &[],
        )
        .await;
    // The very first handshake after the restart already shows the stored
    // certificate, not the default one.
    let again = client
        .get(setup.tls, "app.test", None, "/", true)
        .await
        .expect("the stored certificate, from the first handshake");
    assert_eq!(again.serial(), first.serial());
    wait_for_certificate(&pebble, setup.tls, "more.test").await;
    assert_eq!(
        pebble.orders(),
        2,
        "only more.test was ordered after the restart"
    );
    // The account was reused: pebble registered it once.
    assert_eq!(
        pebble
            .log()
            .lines()
            .filter(|l| l.contains("There are now") && l.contains("accounts"))
            .count(),
        1,
        "{}",
        pebble.log()
    );
    drop(gw);
}

#[tokio::test]
async fn a_short_lived_certificate_is_renewed() {
    if !pebble::available("a_short_lived_certificate_is_renewed") {
        return;
    }
    let app = Backend::echo("app").await;
    let setup = Setup::new();
    // 30 s certificates: renewal when 10 s are left.
    let pebble = Pebble::start(setup.web, setup.tls, Some(30)).await;
    let _gw = setup
        .gangway(&pebble, &routers(&app.url(), &["short.test"]), &[])
        .await;
    let client = wait_for_certificate(&pebble, setup.tls, "short.test").await;
    let first = client
        .get(setup.tls, "short.test", None, "/", true)
        .await
        .unwrap();
    eventually(Duration::from_secs(60), "a renewed certificate", || {
        let client = client.clone();
        let first = first.serial();
        async move {
            client
                .get(setup.tls, "short.test", None, "/", true)
                .await
                .is_ok_and(|g| g.serial() != first)
        }
    })
    .await;
    let renewed = client
        .get(setup.tls, "short.test", None, "/", true)
        .await
        .unwrap();
    assert!(renewed.not_after() > first.not_after());
    assert!(pebble.orders() >= 2);
}

/// A CA that cannot be reached is logged as one sentence naming its URL and
/// the reason, not as a dump of the HTTP client's error values.
#[tokio::test]
async fn an_unreachable_ca_is_logged_as_a_sentence_naming_its_url() {
    let app = Backend::echo("app").await;
    // Bound and released: nothing listens there.
    let closed = free_port();
    let directory = format!("https://127.0.0.1:{closed}/dir");
    let setup = Setup::new();
    let storage = setup.storage.path().join("acme");
    let gw = Gangway::with_file_on(
        setup.web,
        &routers(&app.url(), &["app.test"]),
        &[
            &format!("--entryPoints.websecure.address=127.0.0.1:{}", setup.tls),
            &format!("--certificatesResolvers.le.acme.caServer={directory}"),
            &format!(
                "--certificatesResolvers.le.acme.storage={}",
                storage.display()
            ),
            "--api=true",
        ],
    )
    .await;
    eventually(Duration::from_secs(30), "the order fails", || async {
        gw.log_line("certificate order failed").is_some()
    })
    .await;
    let line = gw.log_line("certificate order failed").unwrap();
    let sentence =
        format!("error=\"CA unreachable at {directory}: cannot connect to 127.0.0.1:{closed}: ");
    assert!(line.contains(&sentence), "{line}");
    assert!(
        line.to_ascii_lowercase().contains("refused"),
        "the reason: {line}"
    );
    for dump in ["Error(", "Custom {", "kind:", "Some(", "None"] {
        assert!(!line.contains(dump), "no debug output ({dump}): {line}");
    }
    let certs = certificates(&gw).await;
    let error = find_cert(&certs, "app.test")["lastError"].clone();
    assert!(
        error
            .as_str()
            .is_some_and(|e| e.starts_with(&sentence["error=\"".len()..])),
        "{certs}"
    );
}

#[tokio::test]
async fn with_the_ca_down_orders_fail_are_retried_and_the_rest_keeps_serving() {
    if !pebble::available("with_the_ca_down") {
        return;
    }
    let app = Backend::echo("app").await;
    let setup = Setup::new();
    let mut pebble = Pebble::start(setup.web, setup.tls, None).await;
    let gw = setup
        .gangway(&pebble, &routers(&app.url(), &["up.test"]), &[])
        .await;
    let client = wait_for_certificate(&pebble, setup.tls, "up.test").await;

    pebble.stop();
    gw.rewrite(&routers(&app.url(), &["up.test", "down.test"]));
    let failed = |n: u32| {
        let log = gw.log();
        log.lines().any(|l| {
            l.contains("certificate order failed")
                && l.contains("down.test")
                && l.contains(&format!("failures={n}"))
        })
    };
    eventually(
        Duration::from_secs(30),
        "the order fails and is retried",
        || async { failed(2) },
    )
    .await;
    let line = gw.log_line("certificate order failed").unwrap();
    assert!(line.contains("retry_in_s="), "{line}");
    let unreachable = format!("CA unreachable at {}: ", pebble.directory);
    assert!(line.contains(&unreachable), "{line}");

    // Meanwhile everything else is served.
    let up = client
        .get(setup.tls, "up.test", None, "/", true)
        .await
        .unwrap();
    assert_eq!(
        (up.status, up.names()),
        (StatusCode::OK, vec!["up.test".to_owned()])
    );
    assert_eq!(gw.get("plain.test", "/").await.status, StatusCode::OK);

    // The API shows which certificate is in trouble, and why.
    let certs = certificates(&gw).await;
    let up = find_cert(&certs, "up.test");
    assert_eq!(up["status"], "valid", "{certs}");
    assert_eq!(up["resolver"], "le", "{certs}");
    assert_eq!(up["source"], "acme", "{certs}");
    assert!(up["notAfter"].as_i64().is_some(), "{certs}");
    assert!(
        up["issuer"].as_str().is_some_and(|i| i.contains("Pebble")),
        "{certs}"
    );
    let down = find_cert(&certs, "down.test");
    assert_eq!(down["status"], "error", "{certs}");
    assert!(down["failures"].as_u64().is_some_and(|f| f >= 2), "{certs}");
    assert!(
        down["lastError"]
            .as_str()
            .is_some_and(|e| e.starts_with(&unreachable)),
        "{certs}"
    );
    assert_eq!(down["routers"], serde_json::json!(["r1@file"]), "{certs}");

    // The CA comes back: the next retry gets the certificate.
    pebble.restart().await;
    wait_for_certificate(&pebble, setup.tls, "down.test").await;
    let certs = certificates(&gw).await;
    assert_eq!(find_cert(&certs, "down.test")["status"], "valid", "{certs}");
    assert!(
        find_cert(&certs, "down.test").get("lastError").is_none(),
        "{certs}"
    );
}

#[tokio::test]
async fn http01_is_answered_on_the_plain_entry_point_despite_its_redirection() {
    if !pebble::available("http01") {
        return;
    }
    let app = Backend::echo("app").await;
    let setup = Setup::new();
    let pebble = Pebble::start(setup.web, setup.tls, None).await;
    let gw = setup
        .gangway(
            &pebble,
            &routers(&app.url(), &["http01.test"]),
            &[
                "--certificatesResolvers.le.acme.httpChallenge.entryPoint=web",
                "--entryPoints.web.http.redirections.entryPoint.to=websecure",
            ],
        )
        .await;
    wait_for_certificate(&pebble, setup.tls, "http01.test").await;
    assert!(
        pebble.log().contains("Attempting to validate w/ HTTP"),
        "{}",
        pebble.log()
    );
    assert_eq!(
        gw.get("http01.test", "/").await.status,
        StatusCode::MOVED_PERMANENTLY
    );
}

/// A fault of the certificate storage.
#[derive(Clone, Copy, Debug)]
enum StorageFault {
    /// The disk is full: folders can be made, no file written (ENOSPC).
    Full,
    /// The file system is read-only from the start (EROFS).
    ReadOnly,
}

/// With the storage broken, gangway still starts, orders and serves the
/// certificate from memory (the account key too, so orders succeed), shows
/// the problem in the log and the API, and stores both once the storage
/// works again: a restart then reuses them without a new order.
async fn storage_fault(test: &str, fault: StorageFault, os_error: &str) {
    if !pebble::available(test) {
        return;
    }
    let setup = Setup::new();
    let Some(disk) = support::disk::Tmpfs::mount(test, setup.storage.path(), "64k") else {
        return;
    };
    match fault {
        StorageFault::Full => disk.fill(),
        StorageFault::ReadOnly => disk.set_read_only(true),
    }
    let app = Backend::echo("app").await;
    let pebble = Pebble::start(setup.web, setup.tls, None).await;
    let gw = setup
        .gangway(&pebble, &routers(&app.url(), &["stored.test"]), &[])
        .await;
    let client = wait_for_certificate(&pebble, setup.tls, "stored.test").await;
    let served = client
        .get(setup.tls, "stored.test", None, "/", true)
        .await
        .unwrap();

    // The API and the log say what is wrong; the certificate itself is valid.
    eventually(
        Duration::from_secs(10),
        "storageError in the API",
        || async { find_cert(&certificates(&gw).await, "stored.test")["storageError"].is_string() },
    )
    .await;
    let certs = certificates(&gw).await;
    let cert = find_cert(&certs, "stored.test");
    assert_eq!(cert["status"], "valid", "{certs}");
    assert!(cert.get("lastError").is_none(), "{certs}");
    let error = cert["storageError"].as_str().unwrap();
    assert!(
        error.contains("ACME storage") && error.contains(os_error),
        "{error}"
    );
    let log = gw.log();
    assert!(
        log.lines()
            .any(|l| l.contains("certificate not stored") && l.contains(os_error)),
        "{log}"
    );
    if let StorageFault::ReadOnly = fault {
        assert!(
            log.contains("certificate storage cannot be used"),
            "the start names the problem: {log}"
        );
    }
    assert_eq!(gw.get("plain.test", "/").await.status, StatusCode::OK);

    // The storage works again: the next retry writes the key and certificate.
    match fault {
        StorageFault::Full => disk.free(),
        StorageFault::ReadOnly => disk.set_read_only(false),
    }
    let ca = setup.storage.path().join("acme");
    eventually(
        Duration::from_secs(90),
        "the certificate is stored",
        || async {
            let stored = |dir: &Path| {
                std::fs::read_dir(dir).is_ok_and(|entries| {
                    entries
                        .filter_map(Result::ok)
                        .any(|e| e.path().extension().is_some_and(|x| x == "pem"))
                })
            };
            let Some(folder) = std::fs::read_dir(&ca)
                .ok()
                .and_then(|mut d| d.next())
                .and_then(Result::ok)
                .map(|e| e.path())
            else {
                return false;
            };
            folder.join("account.pem").is_file()
                && stored(&folder.join("certs"))
                && find_cert(&certificates(&gw).await, "stored.test")
                    .get("storageError")
                    .is_none()
        },
    )
    .await;
    assert!(!gw.log().contains("panicked"), "{}", gw.log());
    drop(gw);

    // What was stored is what a restart serves, with no new order.
    let gw = setup
        .gangway(&pebble, &routers(&app.url(), &["stored.test"]), &[])
        .await;
    let again = client
        .get(setup.tls, "stored.test", None, "/", true)
        .await
        .expect("the stored certificate");
    assert_eq!(again.serial(), served.serial());
    assert_eq!(pebble.orders(), 1, "{}", pebble.log());
    drop(gw);
}

#[tokio::test]
async fn with_a_full_disk_the_certificate_is_served_from_memory_and_stored_later() {
    storage_fault(
        "with_a_full_disk",
        StorageFault::Full,
        "No space left on device",
    )
    .await;
}

#[tokio::test]
async fn with_read_only_storage_gangway_starts_serves_and_stores_once_writable() {
    storage_fault(
        "with_read_only_storage",
        StorageFault::ReadOnly,
        "Read-only file system",
    )
    .await;
}

#[tokio::test]
async fn a_tcp_router_gets_its_certificate_through_tls_alpn_01() {
    if !pebble::available("a_tcp_router_gets_its_certificate") {
        return;
    }
    // A plain TCP server behind a TCP router whose TLS gangway terminates.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let echo = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 64];
                if let Ok(n) = s.read(&mut buf).await {
                    let _ = s.write_all(&buf[..n]).await;
                }
            });
        }
    });
    let setup = Setup::new();
    let pebble = Pebble::start(setup.web, setup.tls, None).await;
    let dynamic = format!(
        "{}[tcp.routers.db]\nentryPoints = [\"websecure\"]\nrule = \"HostSNI(`db.test`)\"\nservice = \"db\"\n\
         [tcp.routers.db.tls]\ncertResolver = \"le\"\n\
         [[tcp.services.db.loadBalancer.servers]]\naddress = \"127.0.0.1:{echo}\"\n",
        routers("http://127.0.0.1:9", &[])
    );
    let gw = setup.gangway(&pebble, &dynamic, &[]).await;
    // The validation reaches gangway with db.test in its SNI: it is
    // answered there, not handed to the TCP router's server.
    let client = TlsClient::trusting(&pebble.issuing_root().await);
    eventually(ISSUE, "a pebble certificate for the TCP router", || {
        let client = client.clone();
        async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let Ok(mut tls) = client.connect(setup.tls, "db.test", b"").await else {
                return false;
            };
            let mut got = [0u8; 4];
            tls.write_all(b"ping").await.is_ok()
                && tls.read_exact(&mut got).await.is_ok()
                && &got == b"ping"
        }
    })
    .await;
    let certs = certificates(&gw).await;
    let cert = find_cert(&certs, "db.test");
    assert_eq!(cert["routers"], serde_json::json!(["db@file"]), "{cert}");
    assert_eq!(pebble.orders(), 1, "{}", pebble.log());
}

/// `tls.stores.default.defaultGeneratedCert`: the certificate served to a
/// name no router has is ordered from the resolver for `domain`, as in
/// Traefik; the self-signed one is served until it arrives.
#[tokio::test]
async fn the_default_certificate_is_ordered_from_the_resolver_the_default_store_names() {
    if !pebble::available("the_default_certificate_is_ordered") {
        return;
    }
    let app = Backend::echo("app").await;
    let setup = Setup::new();
    let pebble = Pebble::start(setup.web, setup.tls, None).await;
    let dynamic = routers(&app.url(), &[])
        + "[http.routers.any]\nrule = \"PathPrefix(`/`)\"\nservice = \"app\"\n[http.routers.any.tls]\n\
           [tls.stores.default.defaultGeneratedCert]\nresolver = \"le\"\n\
           [tls.stores.default.defaultGeneratedCert.domain]\nmain = \"fallback.test\"\nsans = [\"alt.fallback.test\"]\n";
    let gw = setup.gangway(&pebble, &dynamic, &[]).await;
    let served = || async {
        TlsClient::insecure()
            .get(setup.tls, "stranger.test", None, "/", true)
            .await
            .map(|g| {
                let mut names = g.names();
                names.sort();
                names
            })
    };
    eventually(ISSUE, "the default certificate from pebble", || async {
        served()
            .await
            .is_ok_and(|n| n == ["alt.fallback.test", "fallback.test"])
    })
    .await;
    // It chains to pebble's root: a client that verifies accepts it for
    // its own names, which no router names either.
    let client = TlsClient::trusting(&pebble.issuing_root().await);
    for name in ["fallback.test", "alt.fallback.test"] {
        let got = client
            .get(setup.tls, name, None, "/", true)
            .await
            .unwrap_or_else(|e| panic!("a chain valid for {name}: {e:?}"));
        assert_eq!(got.status, StatusCode::OK);
    }
    assert_eq!(pebble.orders(), 1, "{}", pebble.log());
    drop(gw);
}

/// A router whose `Host` rule names 127.0.0.1 gets an IP-address
/// certificate (RFC 8738) through `challenge` flags, validated by pebble at
/// that address, and a client connecting by address (no SNI: rustls sends
/// none for an address) is served it.
async fn address_certificate(test: &str, challenge: &[&str]) {
    if !pebble::available(test) {
        return;
    }
    let app = Backend::echo("app").await;
    let setup = Setup::new();
    let pebble = Pebble::start(setup.web, setup.tls, None).await;
    let gw = setup
        .gangway(&pebble, &routers(&app.url(), &["127.0.0.1"]), challenge)
        .await;
    let client = TlsClient::trusting(&pebble.issuing_root().await);
    eventually(ISSUE, "an address certificate for 127.0.0.1", || {
        let client = client.clone();
        async move {
            client
                .get(setup.tls, "127.0.0.1", None, "/", true)
                .await
                .is_ok_and(|g| g.status == StatusCode::OK)
        }
    })
    .await;
    let got = client
        .get(setup.tls, "127.0.0.1", None, "/", false)
        .await
        .unwrap();
    let (_, leaf) = x509_parser::parse_x509_certificate(&got.leaf).unwrap();
    let sans = leaf.subject_alternative_name().unwrap().unwrap();
    assert!(
        sans.value.general_names.iter().any(|n| matches!(
            n,
            x509_parser::extensions::GeneralName::IPAddress(ip) if *ip == [127, 0, 0, 1]
        )),
        "{:?}",
        sans.value
    );
    let ours = find_cert(&certificates(&gw).await, "127.0.0.1");
    assert_eq!(ours["status"], "valid", "{ours}");
}

#[tokio::test]
async fn an_address_gets_a_certificate_through_tls_alpn_01() {
    address_certificate("an_address_gets_a_certificate_through_tls_alpn_01", &[]).await;
}

#[tokio::test]
async fn an_address_gets_a_certificate_through_http_01() {
    address_certificate(
        "an_address_gets_a_certificate_through_http_01",
        &["--certificatesResolvers.le.acme.httpChallenge.entryPoint=web"],
    )
    .await;
}
