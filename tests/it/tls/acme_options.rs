//! Traefik's ACME options that a CA here can exercise, against a real
//! pebble: each certificate `keyType`, an external account binding (pebble
//! set to require one), `preferredChain` (pebble offering an alternate
//! root's chain), and `gangway check` refusing values that cannot work.

use crate::support;

use std::process::Command;
use std::time::Duration;
use support::pebble::{self, Pebble};
use support::tls::{TlsClient, TlsGot};
use support::{Backend, Gangway, eventually, free_port};

const ISSUE: Duration = Duration::from_secs(120);

/// One router per `(host, resolver)`.
fn routers(backend: &str, hosts: &[(&str, &str)]) -> String {
    let mut s = format!(
        "[http.services.app.loadBalancer]\n[[http.services.app.loadBalancer.servers]]\nurl = \"{backend}\"\n"
    );
    for (i, (host, resolver)) in hosts.iter().enumerate() {
        s.push_str(&format!(
            "[http.routers.r{i}]\nrule = \"Host(`{host}`)\"\nservice = \"app\"\n[http.routers.r{i}.tls]\ncertResolver = \"{resolver}\"\n"
        ));
    }
    s
}

/// Flags for resolver `name` on `pebble`, with `options` (`key=value`
/// below `certificatesResolvers.<name>.acme.`).
fn resolver(
    pebble: &Pebble,
    name: &str,
    storage: &std::path::Path,
    options: &[&str],
) -> Vec<String> {
    let mut flags = pebble.resolver_flags(name);
    flags.push(format!(
        "--certificatesResolvers.{name}.acme.storage={}",
        storage.join(name).display()
    ));
    flags.extend(
        options
            .iter()
            .map(|o| format!("--certificatesResolvers.{name}.acme.{o}")),
    );
    flags
}

async fn served(client: &TlsClient, tls: u16, host: &str) -> TlsGot {
    eventually(ISSUE, &format!("a pebble certificate for {host}"), || {
        let client = client.clone();
        async move {
            client
                .get(tls, host, None, "/", true)
                .await
                .is_ok_and(|g| g.status == 200 && g.names() == [host])
        }
    })
    .await;
    client.get(tls, host, None, "/", true).await.unwrap()
}

/// `RSA <bits>` or `EC <curve oid>` of a leaf's public key.
fn public_key(got: &TlsGot) -> String {
    let (_, cert) = x509_parser::parse_x509_certificate(&got.leaf).expect("x509");
    match cert.public_key().parsed().expect("a public key") {
        x509_parser::public_key::PublicKey::RSA(rsa) => format!("RSA {}", rsa.key_size()),
        x509_parser::public_key::PublicKey::EC(ec) => format!("EC {}", ec.key_size()),
        other => format!("{other:?}"),
    }
}

#[tokio::test]
async fn each_key_type_gets_certificates_with_that_key() {
    if !pebble::available("each_key_type_gets_certificates") {
        return;
    }
    let app = Backend::echo("app").await;
    let (web, tls) = (free_port(), free_port());
    let storage = tempfile::tempdir().unwrap();
    let pebble = Pebble::start(web, tls, None).await;
    let cases = [
        ("ec384.test", "ec384", "EC384", "EC 384"),
        ("rsa2048.test", "rsa2048", "RSA2048", "RSA 2048"),
        ("rsa3072.test", "rsa3072", "RSA3072", "RSA 3072"),
        ("rsa4096.test", "rsa4096", "RSA4096", "RSA 4096"),
    ];
    let mut flags = vec![format!("--entryPoints.websecure.address=127.0.0.1:{tls}")];
    for (_, name, key_type, _) in cases {
        flags.extend(resolver(
            &pebble,
            name,
            storage.path(),
            &[&format!("keyType={key_type}")],
        ));
    }
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let hosts: Vec<(&str, &str)> = cases.iter().map(|(h, n, _, _)| (*h, *n)).collect();
    let gw = Gangway::with_file_on(web, &routers(&app.url(), &hosts), &flags).await;
    let client = TlsClient::trusting(&pebble.issuing_root().await);
    for (host, _, key_type, want) in cases {
        let got = served(&client, tls, host).await;
        assert_eq!(public_key(&got), want, "{key_type}: {}", gw.log());
    }
    assert_eq!(pebble.orders(), cases.len());
    drop(gw);
}

#[test]
fn check_refuses_a_key_type_traefik_does_not_know() {
    let out = Command::new(env!("CARGO_BIN_EXE_gangway"))
        .args([
            "check",
            "--certificatesResolvers.le.acme.keyType=RSA1024",
            "--certificatesResolvers.ok.acme.keyType=RSA8192",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("certificatesResolvers.le.acme.keyType: `RSA1024` is not a key type"),
        "{text}"
    );
    assert!(!text.contains("RSA8192`"), "{text}");
}

/// `/api/tls/certificates`, through the router that sends `gw.test` to the API.
async fn certificates(gw: &Gangway) -> serde_json::Value {
    serde_json::from_slice(&gw.get("gw.test", "/api/tls/certificates").await.body)
        .expect("certificates json")
}

#[tokio::test]
async fn certificates_duration_sets_when_renewal_starts() {
    if !pebble::available("certificates_duration_sets_when_renewal_starts") {
        return;
    }
    let app = Backend::echo("app").await;
    let (web, tls) = (free_port(), free_port());
    let storage = tempfile::tempdir().unwrap();
    // pebble's certificates last 5 years: the window is the option's.
    let pebble = Pebble::start(web, tls, None).await;
    let mut flags = vec![
        format!("--entryPoints.websecure.address=127.0.0.1:{tls}"),
        "--api=true".to_owned(),
    ];
    flags.extend(resolver(
        &pebble,
        "day",
        storage.path(),
        &["certificatesDuration=24"],
    ));
    flags.extend(resolver(
        &pebble,
        "year",
        storage.path(),
        &["certificatesDuration=8760"],
    ));
    flags.extend(resolver(&pebble, "default", storage.path(), &[]));
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let mut dynamic = routers(
        &app.url(),
        &[
            ("day.test", "day"),
            ("year.test", "year"),
            ("default.test", "default"),
        ],
    );
    dynamic.push_str("[http.routers.gw]\nrule = \"Host(`gw.test`)\"\nservice = \"api@internal\"\n");
    let gw = Gangway::with_file_on(web, &dynamic, &flags).await;
    let client = TlsClient::trusting(&pebble.issuing_root().await);
    for (host, window) in [
        ("day.test", 6 * 3600),
        ("year.test", 120 * 86400),
        ("default.test", 30 * 86400),
    ] {
        served(&client, tls, host).await;
        let find = |all: serde_json::Value| {
            all.as_array()
                .and_then(|a| a.iter().find(|c| c["domains"][0] == host))
                .cloned()
                .unwrap_or_default()
        };
        eventually(
            Duration::from_secs(10),
            &format!("{host}'s next renewal"),
            || async {
                let seen = find(certificates(&gw).await);
                seen["nextAttempt"].is_i64() && seen["notAfter"].is_i64()
            },
        )
        .await;
        let seen = find(certificates(&gw).await);
        let left = seen["notAfter"].as_i64().unwrap() - seen["nextAttempt"].as_i64().unwrap();
        assert_eq!(left, window, "{host}: {seen}");
    }
    drop(gw);
}

#[test]
fn check_validates_the_binding_and_the_ca_server_name() {
    let check = |flags: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_gangway"))
            .arg("check")
            .args(flags)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        (out.status.code(), text)
    };
    let (code, text) = check(&[
        "--certificatesResolvers.le.acme.preferredChain=ISRG Root X1",
        "--certificatesResolvers.le.acme.eab.kid=kid-1",
        "--certificatesResolvers.le.acme.eab.hmacEncoded=aG1hYw",
        "--certificatesResolvers.le.acme.profile=shortlived",
        "--certificatesResolvers.le.acme.emailAddresses=ops@gangway.test",
        "--certificatesResolvers.le.acme.caServerName=ca.internal",
        "--certificatesResolvers.le.acme.clientTimeout=30s",
    ]);
    assert_eq!(code, Some(0), "{text}");
    assert!(!text.contains("not supported"), "{text}");
    let (code, text) = check(&[
        "--certificatesResolvers.le.acme.eab.kid=kid-1",
        "--certificatesResolvers.le.acme.eab.hmacEncoded=not base64!",
        "--certificatesResolvers.half.acme.eab.kid=kid-2",
        "--certificatesResolvers.named.acme.caServerName=bad name",
    ]);
    assert_eq!(code, Some(1), "{text}");
    for says in [
        "certificatesResolvers.le.acme.eab.hmacEncoded: not base64url",
        "certificatesResolvers.half.acme.eab: both kid and hmacEncoded are needed",
        "certificatesResolvers.named.acme.caServerName: `bad name` is not a server name",
    ] {
        assert!(text.contains(says), "{says}: {text}");
    }
}

#[tokio::test]
async fn the_one_option_gangway_cannot_honour_is_logged_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let storage = format!(
        "--certificatesResolvers.le.acme.storage={}",
        dir.path().join("acme").display()
    );
    let gw = Gangway::with_file_env(
        "",
        &[
            &storage,
            "--certificatesResolvers.le.acme.preferredChain=ISRG Root X1",
            "--certificatesResolvers.le.acme.dnsChallenge.provider=exec",
            "--certificatesResolvers.le.acme.dnsChallenge.propagation.disableANSChecks=true",
            "--certificatesResolvers.le.acme.dnsChallenge.delayBeforeCheck=5",
        ],
        &[("EXEC_PATH", "/bin/true")],
    )
    .await;
    eventually(Duration::from_secs(10), "the warning", || async {
        gw.log().contains(
            "certificatesResolvers.le.acme.dnsChallenge.propagation.disableANSChecks is accepted and not supported",
        )
    })
    .await;
    assert!(
        !gw.log().contains("preferredChain is accepted"),
        "{}",
        gw.log()
    );
}

/// pebble's example MAC key: base64url, no padding.
const MAC_KEY: &str = "zWNDZM6eQGHWpSRTPal5eIUYFTu7EajVIoguysqZ9wG44nMEtx3MUAsUDkMTQ12W";

#[tokio::test]
async fn a_ca_requiring_a_binding_issues_with_it_and_refuses_without() {
    if !pebble::available("a_ca_requiring_a_binding_issues_with_it") {
        return;
    }
    let app = Backend::echo("app").await;
    let (web, tls) = (free_port(), free_port());
    let storage = tempfile::tempdir().unwrap();
    let extras = pebble::Extras {
        binding: Some(("kid-1".to_owned(), MAC_KEY.to_owned())),
        ..Default::default()
    };
    let pebble = Pebble::start_extras(web, tls, extras).await;
    let mut flags = vec![
        format!("--entryPoints.websecure.address=127.0.0.1:{tls}"),
        "--api=true".to_owned(),
    ];
    flags.extend(resolver(
        &pebble,
        "bound",
        storage.path(),
        &["eab.kid=kid-1", &format!("eab.hmacEncoded={MAC_KEY}")],
    ));
    flags.extend(resolver(&pebble, "unbound", storage.path(), &[]));
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let mut dynamic = routers(
        &app.url(),
        &[("bound.test", "bound"), ("unbound.test", "unbound")],
    );
    dynamic.push_str("[http.routers.gw]\nrule = \"Host(`gw.test`)\"\nservice = \"api@internal\"\n");
    let gw = Gangway::with_file_on(web, &dynamic, &flags).await;
    let client = TlsClient::trusting(&pebble.issuing_root().await);
    served(&client, tls, "bound.test").await;
    let unbound = || async {
        certificates(&gw)
            .await
            .as_array()
            .and_then(|a| {
                a.iter()
                    .find(|c| c["domains"][0] == "unbound.test")
                    .cloned()
            })
            .unwrap_or_default()
    };
    eventually(
        Duration::from_secs(30),
        "the refusal in the API",
        || async {
            unbound().await["lastError"]
                .as_str()
                .is_some_and(|e| e.contains("requires an external account binding"))
        },
    )
    .await;
    let seen = unbound().await;
    assert_eq!(seen["status"], "error", "{seen}");
    assert!(
        gw.log().contains("requires an external account binding"),
        "{}",
        gw.log()
    );
    assert!(
        client
            .get(tls, "unbound.test", None, "/", true)
            .await
            .is_err()
    );
    assert_eq!(pebble.orders(), 1, "only the bound resolver ordered");
}

/// The common name of a PEM certificate's subject.
fn subject_cn(pem: &[u8]) -> String {
    let (_, pem) = x509_parser::pem::parse_x509_pem(pem).expect("pem");
    let cert = pem.parse_x509().expect("x509");
    cert.subject()
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
        .expect("a common name")
        .to_owned()
}

#[tokio::test]
async fn preferred_chain_serves_the_alternate_roots_chain() {
    if !pebble::available("preferred_chain_serves_the_alternate_roots_chain") {
        return;
    }
    let app = Backend::echo("app").await;
    let (web, tls) = (free_port(), free_port());
    let storage = tempfile::tempdir().unwrap();
    let extras = pebble::Extras {
        alternate_roots: 1,
        ..Default::default()
    };
    let pebble = Pebble::start_extras(web, tls, extras).await;
    let (default_root, alternate_root) = (pebble.root(0).await, pebble.root(1).await);
    let alternate = subject_cn(&alternate_root);
    assert_ne!(alternate, subject_cn(&default_root));
    let mut flags = vec![format!("--entryPoints.websecure.address=127.0.0.1:{tls}")];
    flags.extend(resolver(
        &pebble,
        "alt",
        storage.path(),
        &[&format!("preferredChain={alternate}")],
    ));
    flags.extend(resolver(&pebble, "plain", storage.path(), &[]));
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let dynamic = routers(&app.url(), &[("alt.test", "alt"), ("plain.test", "plain")]);
    let gw = Gangway::with_file_on(web, &dynamic, &flags).await;
    // Each client trusts one root only: a chain verifies only if its top
    // certificate was issued by that root.
    let by_alternate = TlsClient::trusting(&alternate_root);
    let by_default = TlsClient::trusting(&default_root);
    served(&by_alternate, tls, "alt.test").await;
    served(&by_default, tls, "plain.test").await;
    assert!(
        by_default
            .get(tls, "alt.test", None, "/", true)
            .await
            .is_err(),
        "alt.test is served the default chain: {}",
        gw.log()
    );
    assert!(
        by_alternate
            .get(tls, "plain.test", None, "/", true)
            .await
            .is_err()
    );
}

#[tokio::test]
async fn a_failing_resolver_falls_back_to_the_next_ca() {
    if !pebble::available("a_failing_resolver_falls_back_to_the_next_ca") {
        return;
    }
    let app = Backend::echo("app").await;
    let (web, tls) = (free_port(), free_port());
    let storage = tempfile::tempdir().unwrap();
    // The first CA requires a binding the resolver does not have; the
    // second issues. Both validate on gangway's ports.
    let extras = pebble::Extras {
        binding: Some(("kid-1".to_owned(), MAC_KEY.to_owned())),
        ..Default::default()
    };
    let first = Pebble::start_extras(web, tls, extras).await;
    let second = Pebble::start(web, tls, None).await;
    let internal = free_port();
    let mut flags = vec![
        format!("--entryPoints.websecure.address=127.0.0.1:{tls}"),
        format!("--entryPoints.gangway.address=127.0.0.1:{internal}"),
        "--api=true".to_owned(),
        "--metrics.prometheus=true".to_owned(),
    ];
    flags.extend(resolver(
        &first,
        "strict",
        storage.path(),
        &["fallback=spare"],
    ));
    flags.extend(resolver(&second, "spare", storage.path(), &[]));
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let mut dynamic = routers(&app.url(), &[("fallback.test", "strict")]);
    dynamic.push_str("[http.routers.gw]\nrule = \"Host(`gw.test`)\"\nservice = \"api@internal\"\n");
    let gw = Gangway::with_file_on(web, &dynamic, &flags).await;
    served(
        &TlsClient::trusting(&second.issuing_root().await),
        tls,
        "fallback.test",
    )
    .await;
    let seen = certificates(&gw)
        .await
        .as_array()
        .and_then(|a| {
            a.iter()
                .find(|c| c["domains"][0] == "fallback.test")
                .cloned()
        })
        .unwrap_or_default();
    assert_eq!(seen["resolver"], "strict", "{seen}");
    assert_eq!(seen["issuedThrough"], "spare", "{seen}");
    assert_eq!(seen["fallback"], serde_json::json!(["spare"]), "{seen}");
    assert_eq!((first.orders(), second.orders()), (0, 1));
    assert!(
        gw.log().contains("requires an external account binding"),
        "{}",
        gw.log()
    );
    // Kept in the first resolver's storage.
    assert!(storage.path().join("strict").exists());
    // The metrics count the order the first CA refused and the one the
    // fallback's CA filled.
    let orders = |issuer: &'static str, result: &'static str| {
        let labels = [
            ("resolver", "strict"),
            ("issuer", issuer),
            ("result", result),
        ];
        async move { support::metric(internal, "gangway_acme_orders_total", &labels).await }
    };
    assert_eq!(orders("spare", "obtained").await, Some(1.0));
    assert!(orders("strict", "failed").await >= Some(1.0));
}

#[test]
fn check_refuses_a_fallback_that_is_no_resolver() {
    let out = Command::new(env!("CARGO_BIN_EXE_gangway"))
        .args([
            "check",
            "--certificatesResolvers.le.acme.fallback=zerossl,le",
            "--certificatesResolvers.spare.acme.email=ops@gangway.test",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    for says in [
        "certificatesResolvers.le.acme.fallback: `zerossl` is not a certificate resolver",
        "certificatesResolvers.le.acme.fallback: `le` is this resolver itself",
    ] {
        assert!(text.contains(says), "{says}: {text}");
    }
}
