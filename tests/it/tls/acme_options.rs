//! Traefik's ACME options that a CA here can exercise, against a real
//! pebble: each certificate `keyType`, and `gangway check` refusing one
//! that is not a key type.

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

/// `/api/certificates`, through the router that sends `gw.test` to the API.
async fn certificates(gw: &Gangway) -> serde_json::Value {
    serde_json::from_slice(&gw.get("gw.test", "/api/certificates").await.body)
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
fn options_gangway_cannot_honour_start_and_are_named_by_check() {
    let flags = [
        "--certificatesResolvers.le.acme.preferredChain=ISRG Root X1",
        "--certificatesResolvers.le.acme.eab.kid=kid-1",
        "--certificatesResolvers.le.acme.eab.hmacEncoded=aG1hYw",
        "--certificatesResolvers.le.acme.httpChallenge.entryPoint=web",
        "--certificatesResolvers.le.acme.httpChallenge.delay=1s",
        "--certificatesResolvers.le.acme.disableCommonName=true",
        "--certificatesResolvers.le.acme.certificateTimeout=45s",
    ];
    let out = Command::new(env!("CARGO_BIN_EXE_gangway"))
        .arg("check")
        .args(flags)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    for option in ["preferredChain", "eab"] {
        assert!(
            text.contains(&format!(
                "warning: static configuration: certificatesResolvers.le.acme.{option} is accepted and not supported"
            )),
            "{option}: {text}"
        );
    }
    assert!(text.contains("2 warnings"), "{text}");
}

#[tokio::test]
async fn gangway_starts_with_them_and_logs_what_does_not_happen() {
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
        gw.log()
            .contains("certificatesResolvers.le.acme.preferredChain is accepted and not supported")
            && gw
                .log()
                .contains("dnsChallenge.propagation.disableANSChecks")
    })
    .await;
}
