//! Traefik's `acme.json` as a resolver's storage, against a real pebble:
//! a file in Traefik's format made from certificates pebble issued is
//! served at start without a new order, gangway's own orders are written
//! back in that format (read here as Traefik reads it), and a restart
//! keeps serving without ordering. `gangway check` says what it reuses.

use crate::support;

use base64::Engine as _;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use support::pebble::{self, Pebble};
use support::tls::TlsClient;
use support::{Backend, Gangway, eventually, free_port};

const ISSUE: Duration = Duration::from_secs(60);

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn unb64(value: &serde_json::Value) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(value.as_str().expect("a base64 string"))
        .expect("base64")
}

fn routers(backend: &str, hosts: &[&str]) -> String {
    let mut s = format!(
        "[http.services.app.loadBalancer]\n[[http.services.app.loadBalancer.servers]]\nurl = \"{backend}\"\n"
    );
    for (i, host) in hosts.iter().enumerate() {
        s.push_str(&format!(
            "[http.routers.r{i}]\nrule = \"Host(`{host}`)\"\nservice = \"app\"\n[http.routers.r{i}.tls]\ncertResolver = \"le\"\n"
        ));
    }
    s
}

fn flags(pebble: &Pebble, tls: u16, storage: &Path) -> Vec<String> {
    let mut flags = vec![format!("--entryPoints.websecure.address=127.0.0.1:{tls}")];
    flags.extend(pebble.resolver_flags("le"));
    flags.extend([
        format!(
            "--certificatesResolvers.le.acme.storage={}",
            storage.display()
        ),
        "--certificatesResolvers.le.acme.email=ops@gangway.test".to_owned(),
    ]);
    flags
}

async fn start(pebble: &Pebble, web: u16, tls: u16, storage: &Path, dynamic: &str) -> Gangway {
    let flags = flags(pebble, tls, storage);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    Gangway::with_file_on(web, dynamic, &flags).await
}

/// Waits until `host` is served with a certificate chaining to pebble's
/// root; returns its serial.
async fn served_serial(client: &TlsClient, tls: u16, host: &str) -> String {
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
    client
        .get(tls, host, None, "/", true)
        .await
        .unwrap()
        .serial()
}

/// Splits a PEM file (key, then chain) into the key's and the chain's PEM.
fn split_pem(pem: &str) -> (String, String) {
    let (mut key, mut chain) = (String::new(), String::new());
    let mut in_cert = false;
    for line in pem.lines() {
        if line.starts_with("-----BEGIN ") {
            in_cert = line.contains("CERTIFICATE");
        }
        let target = if in_cert { &mut chain } else { &mut key };
        target.push_str(line);
        target.push('\n');
    }
    (key, chain)
}

/// The one certificate file gangway wrote into a folder storage.
fn folder_certificate(root: &Path) -> String {
    let mut dirs = vec![root.to_path_buf()];
    let mut found: Vec<PathBuf> = Vec::new();
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.parent().is_some_and(|p| p.ends_with("certs")) {
                found.push(path);
            }
        }
    }
    assert_eq!(found.len(), 1, "{found:?}");
    std::fs::read_to_string(&found[0]).unwrap()
}

/// The leaf serial of a PEM chain, as `TlsGot::serial` prints it.
fn leaf_serial(chain_pem: &[u8]) -> String {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let leaf = CertificateDer::pem_slice_iter(chain_pem)
        .next()
        .expect("a certificate")
        .expect("PEM");
    let (_, cert) = x509_parser::parse_x509_certificate(&leaf).expect("x509");
    cert.raw_serial_as_string()
}

/// A Traefik v3.7 account: an RSA key (PKCS#1 DER, as Traefik makes it)
/// and its registration.
fn traefik_account(dir: &Path) -> serde_json::Value {
    let key = dir.join("account.der");
    let made = Command::new("openssl")
        .args(["genrsa", "-traditional", "-out"])
        .arg(dir.join("account.pem"))
        .arg("2048")
        .output()
        .expect("openssl");
    assert!(made.status.success(), "{made:?}");
    let der = Command::new("openssl")
        .args(["rsa", "-traditional", "-outform", "DER", "-in"])
        .arg(dir.join("account.pem"))
        .arg("-out")
        .arg(&key)
        .output()
        .expect("openssl");
    assert!(der.status.success(), "{der:?}");
    serde_json::json!({
        "Email": "ops@gangway.test",
        "Registration": {
            "body": {"status": "valid", "contact": ["mailto:ops@gangway.test"]},
            "uri": "https://127.0.0.1:14000/my-account/1"
        },
        "PrivateKey": b64(&std::fs::read(key).unwrap())
    })
}

fn gangway_check(storage: &Path) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_gangway"))
        .arg("check")
        .arg(format!(
            "--certificatesResolvers.le.acme.storage={}",
            storage.display()
        ))
        .output()
        .expect("gangway check");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[tokio::test]
async fn a_traefik_acme_json_is_served_without_ordering_and_written_back_in_its_format() {
    if !pebble::available("a_traefik_acme_json_is_served") {
        return;
    }
    let app = Backend::echo("app").await;
    let (web, tls) = (free_port(), free_port());
    let dir = tempfile::tempdir().unwrap();
    let pebble = Pebble::start(web, tls, None).await;
    let client = TlsClient::trusting(&pebble.issuing_root().await);

    // A certificate from pebble, obtained once with a folder storage.
    let folder = dir.path().join("folder");
    let gw = start(
        &pebble,
        web,
        tls,
        &folder,
        &routers(&app.url(), &["app.test"]),
    )
    .await;
    let issued = served_serial(&client, tls, "app.test").await;
    assert_eq!(pebble.orders(), 1);
    drop(gw);

    // The same certificate in a Traefik acme.json, beside another
    // resolver's section in Traefik v2's layout (with `KeyType`).
    let (key, chain) = split_pem(&folder_certificate(&folder));
    let account = traefik_account(dir.path());
    let other = serde_json::json!({
        "Account": {"Email": "", "Registration": null, "PrivateKey": b64(b"other key"), "KeyType": "4096"},
        "Certificates": [{"domain": {"main": "other.test"}, "certificate": b64(chain.as_bytes()), "key": b64(key.as_bytes()), "Store": "default"}]
    });
    let file = serde_json::json!({
        "le": {
            "Account": account,
            "Certificates": [{
                "domain": {"main": "app.test"},
                "certificate": b64(chain.as_bytes()),
                "key": b64(key.as_bytes()),
                "Store": "default"
            }]
        },
        "other": other
    });
    let acme_json = dir.path().join("traefik").join("acme.json");
    std::fs::create_dir(acme_json.parent().unwrap()).unwrap();
    std::fs::write(&acme_json, serde_json::to_vec_pretty(&file).unwrap()).unwrap();
    std::fs::set_permissions(&acme_json, std::fs::Permissions::from_mode(0o600)).unwrap();

    let (status, out) = gangway_check(&acme_json);
    assert_eq!(status, 0, "{out}");
    assert!(
        out.contains("1 certificate(s) will be served without a new order (app.test)"),
        "{out}"
    );

    // Served from the first handshake on, with no new order.
    let gw = start(
        &pebble,
        web,
        tls,
        &acme_json,
        &routers(&app.url(), &["app.test", "new.test"]),
    )
    .await;
    let first = client
        .get(tls, "app.test", None, "/", true)
        .await
        .expect("the stored certificate, from the first handshake");
    assert_eq!(first.serial(), issued);
    // A new router's certificate is ordered and written into the file.
    let new_serial = served_serial(&client, tls, "new.test").await;
    assert_eq!(pebble.orders(), 2, "only new.test was ordered");
    eventually(Duration::from_secs(10), "new.test in acme.json", || {
        let path = acme_json.clone();
        async move { std::fs::read_to_string(path).is_ok_and(|t| t.contains("\"new.test\"")) }
    })
    .await;
    drop(gw);

    // Read back as Traefik reads it.
    assert_eq!(
        std::fs::metadata(&acme_json).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let back: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&acme_json).unwrap()).unwrap();
    assert_eq!(
        back["other"], file["other"],
        "another resolver's section is kept"
    );
    assert_eq!(
        back["le"]["Account"], file["le"]["Account"],
        "Traefik's account is kept"
    );
    let certs = back["le"]["Certificates"].as_array().expect("Certificates");
    assert_eq!(certs.len(), 2, "{certs:?}");
    assert_eq!(
        certs[0], file["le"]["Certificates"][0],
        "app.test untouched"
    );
    let new = &certs[1];
    assert_eq!(new["domain"]["main"], "new.test");
    assert!(new["domain"].get("sans").is_none(), "{new}");
    assert_eq!(new["Store"], "default");
    let chain = unb64(&new["certificate"]);
    assert_eq!(leaf_serial(&chain), new_serial);
    let key = unb64(&new["key"]);
    assert!(
        <rustls::pki_types::PrivateKeyDer as rustls::pki_types::pem::PemObject>::from_pem_slice(
            &key
        )
        .is_ok(),
        "{}",
        String::from_utf8_lossy(&key)
    );
    let gangway_account = &back["le"]["GangwayAccount"];
    assert_eq!(gangway_account["KeyType"], "P256");
    assert!(!unb64(&gangway_account["PrivateKey"]).is_empty());

    // A restart serves both from the file and orders nothing.
    let gw = start(
        &pebble,
        web,
        tls,
        &acme_json,
        &routers(&app.url(), &["app.test", "new.test"]),
    )
    .await;
    for (host, serial) in [("app.test", &issued), ("new.test", &new_serial)] {
        let got = client
            .get(tls, host, None, "/", true)
            .await
            .expect("served from acme.json");
        assert_eq!(&got.serial(), serial, "{host}");
    }
    assert_eq!(pebble.orders(), 2, "{}", gw.log());
    drop(gw);
    let (_, out) = gangway_check(&acme_json);
    assert!(out.contains("2 certificate(s)"), "{out}");
}

#[tokio::test]
async fn a_new_acme_json_is_created_private_and_a_malformed_one_is_refused() {
    if !pebble::available("a_new_acme_json_is_created") {
        return;
    }
    let app = Backend::echo("app").await;
    let (web, tls) = (free_port(), free_port());
    let dir = tempfile::tempdir().unwrap();
    let pebble = Pebble::start(web, tls, None).await;
    let client = TlsClient::trusting(&pebble.issuing_root().await);
    let acme_json = dir.path().join("acme.json");
    let gw = start(
        &pebble,
        web,
        tls,
        &acme_json,
        &routers(&app.url(), &["app.test"]),
    )
    .await;
    let serial = served_serial(&client, tls, "app.test").await;
    eventually(Duration::from_secs(10), "acme.json written", || {
        let path = acme_json.clone();
        async move { std::fs::read_to_string(path).is_ok_and(|t| t.contains("app.test")) }
    })
    .await;
    drop(gw);
    assert_eq!(
        std::fs::metadata(&acme_json).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let back: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&acme_json).unwrap()).unwrap();
    let cert = &back["le"]["Certificates"][0];
    assert_eq!(cert["domain"]["main"], "app.test");
    assert_eq!(leaf_serial(&unb64(&cert["certificate"])), serial);
    assert!(
        back["le"].get("Account").is_none(),
        "no Traefik account is made up"
    );

    // A file cut short: check names it, gangway refuses to start rather
    // than write over it, and the file is left as it was.
    let text = std::fs::read_to_string(&acme_json).unwrap();
    let cut = &text[..text.len() / 2];
    std::fs::write(&acme_json, cut).unwrap();
    let (status, out) = gangway_check(&acme_json);
    assert_eq!(status, 1, "{out}");
    assert!(
        out.contains("is not a Traefik acme.json gangway can read"),
        "{out}"
    );
    let mut args = flags(&pebble, tls, &acme_json);
    args.push(format!("--entryPoints.web.address=127.0.0.1:{web}"));
    let refused = tokio::process::Command::new(support::binary())
        .args(&args)
        .env("NO_COLOR", "1")
        .kill_on_drop(true)
        .output();
    // Bounded only so that a gangway that wrongly starts fails the test
    // instead of hanging it.
    let out = tokio::time::timeout(Duration::from_secs(30), refused)
        .await
        .expect("gangway exits on a malformed acme.json")
        .unwrap();
    assert!(!out.status.success());
    let log =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    assert!(
        log.contains("is not a Traefik acme.json gangway can read"),
        "{log}"
    );
    assert_eq!(std::fs::read_to_string(&acme_json).unwrap(), cut);
}
