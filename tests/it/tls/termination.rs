//! TLS termination without ACME: certificates from files, the generated
//! default certificate, TLS and plain routers on one entry point, entry
//! point TLS defaults, TLS options, redirections and the 421 policy.

use crate::support;

use http::{Request, StatusCode, Version};
use std::time::Duration;
use support::tls::{TestCa, TlsClient, names_of};
use support::{Backend, Gangway, eventually, free_port};

fn write(dir: &std::path::Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// gangway serving `extra` beside [`config`]'s routers on a TLS entry
/// point, with one certificate for `names` from a CA of its own, once
/// `host` answers there.
struct Served {
    _app: Backend,
    _files: tempfile::TempDir,
    ca: TestCa,
    gw: Gangway,
    port: u16,
    client: TlsClient,
}

impl Served {
    async fn start(names: &[&str], extra: &str, host: &str) -> Served {
        let app = Backend::echo("app").await;
        let ca = TestCa::new("test CA");
        let files = tempfile::tempdir().unwrap();
        let (chain, key) = ca.issue(names);
        let cert = (
            write(files.path(), "c.pem", &chain),
            write(files.path(), "c.key", &key),
        );
        let port = free_port();
        let gw = Gangway::with_file(
            &config(&app.url(), &[cert], extra),
            &[&format!("--entryPoints.websecure.address=127.0.0.1:{port}")],
        )
        .await;
        let client = TlsClient::trusting(ca.pem().as_bytes());
        eventually(Duration::from_secs(5), "the router is served", || async {
            client
                .get(port, host, None, "/", true)
                .await
                .is_ok_and(|g| g.status == StatusCode::OK)
        })
        .await;
        Served {
            _app: app,
            _files: files,
            ca,
            gw,
            port,
            client,
        }
    }
}

fn config(backend: &str, certs: &[(String, String)], extra: &str) -> String {
    let mut s = format!(
        r#"
[http.routers.secure]
rule = "Host(`secure.test`) || Host(`other.test`)"
service = "app"
[http.routers.secure.tls]
[http.routers.plain]
rule = "Host(`plain.test`)"
service = "app"
[http.services.app.loadBalancer]
[[http.services.app.loadBalancer.servers]]
url = "{backend}"
{extra}
"#
    );
    for (cert, key) in certs {
        s.push_str(&format!(
            "[[tls.certificates]]\ncertFile = {cert:?}\nkeyFile = {key:?}\n"
        ));
    }
    s
}

#[tokio::test]
async fn file_certificates_and_the_default_certificate_are_served() {
    let app = Backend::echo("app").await;
    let ca = TestCa::new("test CA");
    let files = tempfile::tempdir().unwrap();
    let (chain, key) = ca.issue(&["secure.test", "other.test"]);
    let cert = (
        write(files.path(), "secure.pem", &chain),
        write(files.path(), "secure.key", &key),
    );
    let tls_port = free_port();
    let api_router = "[http.routers.gw]\nrule = \"Host(`gw.test`)\"\nservice = \"api@internal\"";
    let gw = Gangway::with_file(
        &config(&app.url(), std::slice::from_ref(&cert), api_router),
        &[
            &format!("--entryPoints.websecure.address=127.0.0.1:{tls_port}"),
            "--api=true",
            "--metrics.prometheus",
            "--metrics.prometheus.entryPoint=web",
        ],
    )
    .await;
    let client = TlsClient::trusting(ca.pem().as_bytes());
    eventually(Duration::from_secs(5), "TLS router served", || async {
        client
            .get(tls_port, "secure.test", None, "/", true)
            .await
            .is_ok_and(|g| g.status == StatusCode::OK)
    })
    .await;

    // A valid chain for the host, over HTTP/2 and HTTP/1.1.
    for h2 in [true, false] {
        let got = client
            .get(tls_port, "secure.test", None, "/hello", h2)
            .await
            .expect("verified TLS");
        assert_eq!(got.status, StatusCode::OK);
        let want = if h2 {
            Version::HTTP_2
        } else {
            Version::HTTP_11
        };
        assert_eq!(got.version, want);
        let alpn: &[u8] = if h2 { b"h2" } else { b"http/1.1" };
        assert_eq!(got.alpn.as_deref(), Some(alpn));
        assert_eq!(got.names(), ["secure.test", "other.test"]);
        let seen: support::Seen = serde_json::from_slice(&got.body).unwrap();
        assert_eq!(seen.header("x-forwarded-proto"), Some("https"));
        assert_eq!(seen.uri, "/hello");
    }
    // A client that offers no ALPN is served by what it sends: HTTP/1.1, or
    // HTTP/2 from its preface.
    let silent = TlsClient {
        offer_alpn: false,
        ..client.clone()
    };
    for h2 in [true, false] {
        let got = silent
            .get(tls_port, "secure.test", None, "/quiet", h2)
            .await
            .expect("verified TLS without ALPN");
        assert_eq!(got.status, StatusCode::OK, "h2: {h2}");
        assert_eq!(got.alpn, None);
        let want = if h2 {
            Version::HTTP_2
        } else {
            Version::HTTP_11
        };
        assert_eq!(got.version, want);
    }

    // An unknown name gets the generated default certificate.
    let insecure = TlsClient::insecure();
    let got = insecure
        .get(tls_port, "nobody.test", None, "/", true)
        .await
        .expect("handshake with the default certificate");
    assert_eq!(got.common_name(), "GANGWAY DEFAULT CERT");
    assert_eq!(got.status, StatusCode::NOT_FOUND);

    // A router without `tls` does not match TLS connections, and a TLS
    // router does not match plain ones.
    let got = insecure
        .get(tls_port, "plain.test", None, "/", false)
        .await
        .unwrap();
    assert_eq!(got.status, StatusCode::NOT_FOUND);
    assert_eq!(
        gw.get("secure.test", "/").await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(gw.get("plain.test", "/").await.status, StatusCode::OK);

    // The API lists the file certificate with its names and expiry, and
    // /metrics exports its end of validity.
    let listed: serde_json::Value =
        serde_json::from_slice(&gw.get("gw.test", "/api/tls/certificates").await.body).unwrap();
    let file = &listed[0];
    assert_eq!(file["source"], "file", "{listed}");
    assert_eq!(file["status"], "valid", "{listed}");
    assert_eq!(file["certFile"], cert.0.as_str(), "{listed}");
    assert_eq!(
        file["domains"],
        serde_json::json!(["secure.test", "other.test"]),
        "{listed}"
    );
    let not_after = file["notAfter"].as_i64().expect("notAfter");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    assert!(not_after > now, "{listed}");
    assert!(
        file["issuer"].as_str().unwrap().contains("test CA"),
        "{listed}"
    );
    assert!(!listed.to_string().contains("PRIVATE KEY"));
    let metrics = gw.get("metrics.test", "/metrics").await;
    let text = String::from_utf8_lossy(&metrics.body);
    let line = text
        .lines()
        .find(|l| l.starts_with("gangway_tls_certs_not_after{") && l.contains("cn=\"secure.test\""))
        .unwrap_or_else(|| panic!("no not-after series: {text}"));
    assert!(line.ends_with(&format!(" {not_after}")), "{line}");
    // The same entry point serves plain HTTP and TLS (the first byte tells).
    let plain_on_tls_port = gw
        .send(
            Request::get(format!("http://127.0.0.1:{tls_port}/"))
                .header("host", "plain.test")
                .body(Default::default())
                .unwrap(),
        )
        .await;
    assert_eq!(plain_on_tls_port.status, StatusCode::OK);

    // A request for another host than the connection's SNI: 421.
    for h2 in [true, false] {
        let got = client
            .get(tls_port, "secure.test", Some("other.test"), "/", h2)
            .await
            .unwrap();
        assert_eq!(got.status, StatusCode::MISDIRECTED_REQUEST, "h2={h2}");
    }
    let got = client
        .get(tls_port, "other.test", None, "/", true)
        .await
        .unwrap();
    assert_eq!(got.status, StatusCode::OK);

    // A certificate file added at runtime is served without a restart.
    let (chain, key) = ca.issue(&["new.test"]);
    let new = (
        write(files.path(), "new.pem", &chain),
        write(files.path(), "new.key", &key),
    );
    let extra = r#"
[http.routers.new]
rule = "Host(`new.test`)"
service = "app"
[http.routers.new.tls]
"#;
    gw.rewrite(&config(&app.url(), &[cert, new], extra));
    eventually(Duration::from_secs(5), "new certificate served", || async {
        client
            .get(tls_port, "new.test", None, "/", true)
            .await
            .is_ok_and(|g| g.status == StatusCode::OK && g.names() == ["new.test"])
    })
    .await;
}

#[tokio::test]
async fn entry_point_tls_default_makes_its_routers_tls_there_only() {
    let app = Backend::echo("app").await;
    let tls_port = free_port();
    let dynamic = support::one_route("app", "Host(`app.test`)", &[&app.url()]);
    let gw = Gangway::with_file(
        &dynamic,
        &[
            &format!("--entryPoints.websecure.address=127.0.0.1:{tls_port}"),
            "--entryPoints.websecure.http.tls",
        ],
    )
    .await;
    eventually(Duration::from_secs(5), "plain router on web", || async {
        gw.get("app.test", "/").await.status == StatusCode::OK
    })
    .await;
    let got = TlsClient::insecure()
        .get(tls_port, "app.test", None, "/", true)
        .await
        .expect("TLS on websecure");
    assert_eq!(got.status, StatusCode::OK);
    let plain = gw
        .send(
            Request::get(format!("http://127.0.0.1:{tls_port}/"))
                .header("host", "app.test")
                .body(Default::default())
                .unwrap(),
        )
        .await;
    assert_eq!(plain.status, StatusCode::NOT_FOUND, "TLS-only on websecure");
}

#[tokio::test]
async fn http_is_redirected_to_the_https_entry_point() {
    let app = Backend::echo("app").await;
    let tls_port = free_port();
    let gw = Gangway::with_file(
        &support::one_route("app", "Host(`app.test`)", &[&app.url()]),
        &[
            &format!("--entryPoints.websecure.address=127.0.0.1:{tls_port}"),
            "--entryPoints.web.http.redirections.entryPoint.to=websecure",
        ],
    )
    .await;
    let got = gw.get("app.test:80", "/path?q=1").await;
    assert_eq!(got.status, StatusCode::MOVED_PERMANENTLY);
    assert_eq!(
        got.headers["location"],
        format!("https://app.test:{tls_port}/path?q=1").as_str()
    );
    let post = gw
        .send(
            Request::post(gw.url("/form"))
                .header("host", "app.test")
                .body(Default::default())
                .unwrap(),
        )
        .await;
    assert_eq!(post.status, StatusCode::PERMANENT_REDIRECT);
}

#[tokio::test]
async fn tls_options_apply_per_host_and_sni_strict_refuses_unknown_names() {
    let extra = r#"
[http.routers.modern]
rule = "Host(`modern.test`)"
service = "app"
[http.routers.modern.tls]
options = "modern"
[tls.options.modern]
minVersion = "VersionTLS13"
[tls.options.default]
sniStrict = true
"#;
    let served = Served::start(&["secure.test", "modern.test"], extra, "modern.test").await;
    let (tls_port, client) = (served.port, served.client.clone());
    let tls12 = TlsClient {
        tls12_only: true,
        offer_alpn: true,
        ..client.clone()
    };
    let refused = tls12.get(tls_port, "modern.test", None, "/", true).await;
    assert!(
        refused.is_err(),
        "TLS 1.2 refused for modern.test: {refused:?}"
    );
    let default = tls12.get(tls_port, "secure.test", None, "/", true).await;
    assert_eq!(default.expect("TLS 1.2 by default").status, StatusCode::OK);
    let unknown = TlsClient::insecure()
        .get(tls_port, "nobody.test", None, "/", true)
        .await;
    assert!(
        unknown.is_err(),
        "sniStrict refuses unknown names: {unknown:?}"
    );
}

#[tokio::test]
async fn a_router_no_certificate_covers_is_shown_on_the_default_certificate() {
    let app = Backend::echo("app").await;
    let ca = TestCa::new("test CA");
    let files = tempfile::tempdir().unwrap();
    let (chain, key) = ca.issue(&["secure.test", "other.test"]);
    let cert_file = write(files.path(), "secure.pem", &chain);
    let cert = (cert_file.clone(), write(files.path(), "secure.key", &key));
    let tls_port = free_port();
    let extra = "[http.routers.gw]\nrule = \"Host(`gw.test`)\"\nservice = \"api@internal\"\n\
        [http.routers.bare]\nrule = \"Host(`bare.test`)\"\nservice = \"app\"\n[http.routers.bare.tls]\n\
        [http.routers.closed]\nrule = \"Host(`closed.test`)\"\nservice = \"app\"\n\
        [http.routers.closed.tls]\noptions = \"strict\"\n[tls.options.strict]\nsniStrict = true\n\
        [tcp.routers.pg]\nentryPoints = [\"websecure\"]\nrule = \"HostSNI(`other.test`)\"\nservice = \"pg\"\n\
        [tcp.routers.pg.tls]\n\
        [tcp.routers.raw]\nentryPoints = [\"websecure\"]\nrule = \"HostSNI(`raw.test`)\"\nservice = \"pg\"\n\
        [tcp.routers.raw.tls]\n\
        [tcp.routers.pass]\nentryPoints = [\"websecure\"]\nrule = \"HostSNI(`pass.test`)\"\nservice = \"pg\"\n\
        [tcp.routers.pass.tls]\npassthrough = true\n\
        [[tcp.services.pg.loadBalancer.servers]]\naddress = \"127.0.0.1:9\"\n";
    let gw = Gangway::with_file(
        &config(&app.url(), std::slice::from_ref(&cert), extra),
        &[
            &format!("--entryPoints.websecure.address=127.0.0.1:{tls_port}"),
            "--api=true",
        ],
    )
    .await;
    // What a client gets for that host: the generated certificate.
    eventually(
        Duration::from_secs(5),
        "bare.test served over TLS",
        || async {
            TlsClient::insecure()
                .get(tls_port, "bare.test", None, "/", true)
                .await
                .is_ok_and(|g| g.status == StatusCode::OK)
        },
    )
    .await;
    let served = TlsClient::insecure()
        .get(tls_port, "bare.test", None, "/", true)
        .await
        .expect("served");
    assert_eq!(served.names(), ["gangway.default.invalid"]);

    let json = |path: &'static str| {
        let gw = &gw;
        async move {
            let got = gw.get("gw.test", path).await;
            assert_eq!(got.status, StatusCode::OK, "{path}: {}", got.text());
            serde_json::from_slice::<serde_json::Value>(&got.body).expect("json")
        }
    };
    let bare = json("/api/http/routers/bare@file").await;
    let certs = bare["certificates"].as_array().expect("certificates");
    assert_eq!(certs.len(), 1, "{bare}");
    assert_eq!(certs[0]["host"], "bare.test");
    assert_eq!(certs[0]["source"], "default");
    assert!(
        certs[0]["warning"]
            .as_str()
            .unwrap_or("")
            .contains("will not trust"),
        "{bare}"
    );
    // Under sniStrict, a host no certificate covers gets no certificate.
    assert!(
        TlsClient::insecure()
            .get(tls_port, "closed.test", None, "/", true)
            .await
            .is_err(),
        "sniStrict refuses closed.test"
    );
    let closed = json("/api/http/routers/closed@file").await;
    assert_eq!(closed["certificates"][0]["source"], "none", "{closed}");
    assert!(
        closed["certificates"][0]["warning"]
            .as_str()
            .unwrap_or("")
            .contains("refused"),
        "{closed}"
    );
    // A host a file certificate covers names that file, with no warning.
    let secure = json("/api/http/routers/secure@file").await;
    for c in secure["certificates"].as_array().expect("certificates") {
        assert_eq!(c["source"], "file", "{secure}");
        assert_eq!(c["certFile"], cert_file.as_str());
        assert!(c.get("warning").is_none(), "{secure}");
    }
    // A plain router has none.
    let plain = json("/api/http/routers/plain@file").await;
    assert!(plain.get("certificates").is_none(), "{plain}");

    let list = json("/api/tls/certificates").await;
    let default = list
        .as_array()
        .and_then(|l| l.iter().find(|c| c["source"] == "default"))
        .unwrap_or_else(|| panic!("no default certificate in {list}"));
    assert_eq!(default["selfSigned"], true);
    assert_eq!(default["domains"][0], "gangway.default.invalid");
    assert_eq!(default["routers"], serde_json::json!(["bare@file"]));
    // TCP routers gangway terminates TLS for are named on the certificate
    // their HostSNI gets; one that passes TLS through gets none of them.
    assert_eq!(
        default["tcpRouters"],
        serde_json::json!(["raw@file"]),
        "{list}"
    );
    let file = list
        .as_array()
        .and_then(|l| l.iter().find(|c| c["source"] == "file"))
        .unwrap_or_else(|| panic!("no file certificate in {list}"));
    assert_eq!(file["tcpRouters"], serde_json::json!(["pg@file"]), "{list}");
    let raw = TlsClient::insecure()
        .connect(tls_port, "raw.test", b"")
        .await
        .expect("raw.test handshake");
    let leaf = raw.get_ref().1.peer_certificates().expect("a certificate")[0].clone();
    assert_eq!(names_of(&leaf), ["gangway.default.invalid"]);
    assert_eq!(default["notAfter"], served.not_after());
    assert!(default["warning"].is_string());
}

/// Connects to 127.0.0.1:`port` as `secure.test` with `config` (whose
/// session store carries sessions from one connection to the next), asks
/// for one page over HTTP/1.1 and reads it whole, so that the tickets the
/// server sends after the handshake have arrived; returns how the
/// handshake went and the answer's status, or what failed.
async fn handshake(
    config: &std::sync::Arc<rustls::ClientConfig>,
    port: u16,
) -> Result<(rustls::HandshakeKind, StatusCode), String> {
    use http_body_util::{BodyExt, Empty};
    let connector = tokio_rustls::TlsConnector::from(config.clone());
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let name = rustls::pki_types::ServerName::try_from("secure.test").unwrap();
    let tls = connector
        .connect(name, tcp)
        .await
        .map_err(|e| format!("TLS handshake: {e}"))?;
    let kind = tls.get_ref().1.handshake_kind().expect("handshake done");
    let (mut send, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls))
        .await
        .expect("http1");
    tokio::spawn(conn);
    let req = Request::get("/resume")
        .header("host", "secure.test")
        .body(Empty::<bytes::Bytes>::new())
        .unwrap();
    let resp = send.send_request(req).await.expect("request");
    let status = resp.status();
    resp.into_body().collect().await.expect("body");
    Ok((kind, status))
}

/// A returning client skips the full handshake: by session ticket (TLS 1.3,
/// and TLS 1.2 clients that ask for one) or by session ID from gangway's
/// session cache (TLS 1.2 clients that do not), and still after a
/// configuration change has replaced the server's TLS configuration.
#[tokio::test]
async fn returning_clients_resume_by_ticket_or_session_id_across_reloads() {
    use rustls::HandshakeKind::{Full, Resumed};
    use rustls::client::{Resumption, Tls12Resumption};
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    use std::sync::Arc;

    let app = Backend::echo("app").await;
    let ca = TestCa::new("test CA");
    let files = tempfile::tempdir().unwrap();
    let (chain, key) = ca.issue(&["secure.test"]);
    let cert = (
        write(files.path(), "secure.pem", &chain),
        write(files.path(), "secure.key", &key),
    );
    let tls_port = free_port();
    let dynamic = config(&app.url(), std::slice::from_ref(&cert), "");
    let gw = Gangway::with_file(
        &dynamic,
        &[&format!(
            "--entryPoints.websecure.address=127.0.0.1:{tls_port}"
        )],
    )
    .await;

    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(ca.pem().as_bytes()) {
        roots.add(c.unwrap()).unwrap();
    }
    let client = |version: &'static rustls::SupportedProtocolVersion, tls12: Tls12Resumption| {
        let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_protocol_versions(&[version])
        .unwrap()
        .with_root_certificates(roots.clone())
        .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        config.resumption = Resumption::in_memory_sessions(16).tls12_resumption(tls12);
        Arc::new(config)
    };
    let clients = [
        (
            "TLS 1.3, ticket",
            client(&rustls::version::TLS13, Tls12Resumption::SessionIdOrTickets),
        ),
        (
            "TLS 1.2, ticket",
            client(&rustls::version::TLS12, Tls12Resumption::SessionIdOrTickets),
        ),
        (
            "TLS 1.2, session ID",
            client(&rustls::version::TLS12, Tls12Resumption::SessionIdOnly),
        ),
    ];
    eventually(Duration::from_secs(5), "TLS router served", || async {
        let fresh = client(&rustls::version::TLS13, Tls12Resumption::SessionIdOrTickets);
        handshake(&fresh, tls_port)
            .await
            .is_ok_and(|(_, status)| status == StatusCode::OK)
    })
    .await;

    for (what, config) in &clients {
        assert_eq!(
            handshake(config, tls_port).await.unwrap(),
            (Full, StatusCode::OK),
            "{what}: first"
        );
        assert_eq!(
            handshake(config, tls_port).await.unwrap(),
            (Resumed, StatusCode::OK),
            "{what}: second connection"
        );
    }

    // A new router: a new runtime with new TLS configurations.
    gw.rewrite(&format!(
        "{dynamic}\n[http.routers.added]\nrule = \"Host(`added.test`)\"\nservice = \"app\"\n"
    ));
    eventually(Duration::from_secs(5), "new router applied", || async {
        gw.get("added.test", "/").await.status == StatusCode::OK
    })
    .await;
    for (what, config) in &clients {
        assert_eq!(
            handshake(config, tls_port).await.unwrap(),
            (Resumed, StatusCode::OK),
            "{what}: after the configuration changed"
        );
    }
}

#[tokio::test]
async fn disabled_session_tickets_leave_tls13_clients_nothing_to_resume() {
    use rustls::HandshakeKind::Full;
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    use std::sync::Arc;

    let app = Backend::echo("app").await;
    let ca = TestCa::new("test CA");
    let files = tempfile::tempdir().unwrap();
    let (chain, key) = ca.issue(&["secure.test"]);
    let cert = (
        write(files.path(), "secure.pem", &chain),
        write(files.path(), "secure.key", &key),
    );
    let tls_port = free_port();
    let extra = "[tls.options.default]\ndisableSessionTickets = true\n";
    let _gw = Gangway::with_file(
        &config(&app.url(), std::slice::from_ref(&cert), extra),
        &[&format!(
            "--entryPoints.websecure.address=127.0.0.1:{tls_port}"
        )],
    )
    .await;
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(ca.pem().as_bytes()) {
        roots.add(c.unwrap()).unwrap();
    }
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(&[&rustls::version::TLS13])
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let config = Arc::new(config);
    // The option is kept, not the whole of it dropped: the router is
    // served with it.
    eventually(Duration::from_secs(5), "TLS router served", || async {
        handshake(&config, tls_port)
            .await
            .is_ok_and(|(_, status)| status == StatusCode::OK)
    })
    .await;
    for attempt in 0..3 {
        assert_eq!(
            handshake(&config, tls_port).await.unwrap(),
            (Full, StatusCode::OK),
            "connection {attempt} after the first"
        );
    }
}

/// Counts the times a server asked the client for its certificate.
#[derive(Debug)]
struct AskedFor {
    inner: std::sync::Arc<dyn rustls::client::ResolvesClientCert>,
    times: std::sync::atomic::AtomicUsize,
}

impl rustls::client::ResolvesClientCert for AskedFor {
    fn resolve(
        &self,
        hints: &[&[u8]],
        schemes: &[rustls::SignatureScheme],
    ) -> Option<std::sync::Arc<rustls::sign::CertifiedKey>> {
        self.times
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.inner.resolve(hints, schemes)
    }

    fn has_certs(&self) -> bool {
        self.inner.has_certs()
    }
}

/// One GET over HTTP/1.1 to 127.0.0.1:`port` as `sni`, with `config`: the
/// status, or what failed (the handshake, or the server closing after it).
async fn get_as(
    config: &std::sync::Arc<rustls::ClientConfig>,
    port: u16,
    sni: &'static str,
) -> Result<StatusCode, String> {
    use http_body_util::{BodyExt, Empty};
    let connector = tokio_rustls::TlsConnector::from(config.clone());
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let name = rustls::pki_types::ServerName::try_from(sni).unwrap();
    let tls = connector
        .connect(name, tcp)
        .await
        .map_err(|e| format!("TLS handshake: {e}"))?;
    let (mut send, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls))
        .await
        .map_err(|e| format!("http1: {e}"))?;
    tokio::spawn(conn);
    let req = Request::get("/")
        .header("host", sni)
        .body(Empty::<bytes::Bytes>::new())
        .unwrap();
    let resp = send
        .send_request(req)
        .await
        .map_err(|e| format!("request: {e}"))?;
    let status = resp.status();
    resp.into_body()
        .collect()
        .await
        .map_err(|e| format!("body: {e}"))?;
    Ok(status)
}

#[tokio::test]
async fn request_and_require_any_client_cert_take_a_certificate_no_ca_signed() {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    let app = Backend::echo("app").await;
    let ca = TestCa::new("test CA");
    let files = tempfile::tempdir().unwrap();
    let (chain, key) = ca.issue(&["request.test", "any.test", "secure.test"]);
    let cert = (
        write(files.path(), "c.pem", &chain),
        write(files.path(), "c.key", &key),
    );
    // The client's certificate comes from a CA gangway is never told of.
    let stranger = TestCa::new("a CA nobody trusts");
    let (client_chain, client_key) = stranger.issue_client("client");
    let extra = r#"
[http.routers.request]
rule = "Host(`request.test`)"
service = "app"
[http.routers.request.tls]
options = "request"
[http.routers.any]
rule = "Host(`any.test`)"
service = "app"
[http.routers.any.tls]
options = "any"
[tls.options.request.clientAuth]
clientAuthType = "RequestClientCert"
[tls.options.any.clientAuth]
clientAuthType = "RequireAnyClientCert"
"#;
    let tls_port = free_port();
    let gw = Gangway::with_file(
        &config(&app.url(), &[cert], extra),
        &[&format!(
            "--entryPoints.websecure.address=127.0.0.1:{tls_port}"
        )],
    )
    .await;
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(ca.pem().as_bytes()) {
        roots.add(c.unwrap()).unwrap();
    }
    let builder = || {
        rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots.clone())
    };
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(client_chain.as_bytes())
            .map(Result::unwrap)
            .collect();
    let key = PrivateKeyDer::from_pem_slice(client_key.as_bytes()).unwrap();
    let mut with_cert = builder().with_client_auth_cert(certs, key).unwrap();
    let asked = Arc::new(AskedFor {
        inner: with_cert.client_auth_cert_resolver.clone(),
        times: AtomicUsize::new(0),
    });
    with_cert.client_auth_cert_resolver = asked.clone();
    with_cert.alpn_protocols = vec![b"http/1.1".to_vec()];
    // Every connection a full handshake: a resumed one is not asked again.
    with_cert.resumption = rustls::client::Resumption::disabled();
    let with_cert = Arc::new(with_cert);
    let mut without = builder().with_no_client_auth();
    without.alpn_protocols = vec![b"http/1.1".to_vec()];
    let without = Arc::new(without);

    let served = support::within(Duration::from_secs(15), || async {
        get_as(&with_cert, tls_port, "any.test").await == Ok(StatusCode::OK)
    })
    .await;
    assert!(
        served,
        "any.test is not served; gangway's log:\n{}",
        gw.log()
    );
    for host in ["request.test", "any.test"] {
        let before = asked.times.load(Ordering::Relaxed);
        assert_eq!(get_as(&with_cert, tls_port, host).await, Ok(StatusCode::OK));
        assert!(
            asked.times.load(Ordering::Relaxed) > before,
            "{host} asks for a certificate"
        );
    }
    // Without one: RequestClientCert goes on, RequireAnyClientCert refuses.
    assert_eq!(
        get_as(&without, tls_port, "request.test").await,
        Ok(StatusCode::OK)
    );
    let refused = get_as(&without, tls_port, "any.test").await;
    assert!(refused.is_err(), "{refused:?}");
    // Neither option disables its router.
    let before = asked.times.load(Ordering::Relaxed);
    assert_eq!(
        get_as(&with_cert, tls_port, "secure.test").await,
        Ok(StatusCode::OK)
    );
    assert_eq!(
        asked.times.load(Ordering::Relaxed),
        before,
        "the default options ask for no certificate"
    );
}

#[tokio::test]
async fn tls_options_traefik_serves_with_are_served_with_what_can_be() {
    // As real setups write them: an old floor and P-521 first.
    let extra = r#"
[http.routers.old]
rule = "Host(`old.test`)"
service = "app"
[http.routers.old.tls]
options = "old"
[tls.options.old]
minVersion = "VersionTLS10"
curvePreferences = ["CurveP521", "CurveP384", "X25519"]
"#;
    let served = Served::start(&["old.test"], extra, "old.test").await;
    let (tls_port, client) = (served.port, served.client.clone());
    let tls12 = TlsClient {
        tls12_only: true,
        offer_alpn: true,
        ..client.clone()
    };
    let got = tls12.get(tls_port, "old.test", None, "/", true).await;
    assert_eq!(got.expect("TLS 1.2 is the floor").status, StatusCode::OK);
}

/// The cipher suite a client that prefers ChaCha20 gets from
/// 127.0.0.1:`port` for `sni`.
async fn suite_for_a_chacha_client(ca: &TestCa, port: u16, sni: &str) -> rustls::CipherSuite {
    use rustls::pki_types::pem::PemObject;
    let mut provider = rustls::crypto::ring::default_provider();
    provider
        .cipher_suites
        .sort_by_key(|s| !format!("{:?}", s.suite()).contains("CHACHA20"));
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::CertificateDer::pem_slice_iter(ca.pem().as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(provider))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let name = rustls::pki_types::ServerName::try_from(sni.to_owned()).unwrap();
    let tls = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config))
        .connect(name, tcp)
        .await
        .expect("handshake");
    tls.get_ref().1.negotiated_cipher_suite().unwrap().suite()
}

#[tokio::test]
async fn prefer_server_cipher_suites_serves_its_routers_in_the_servers_order() {
    let extra = r#"
[http.routers.prefer]
rule = "Host(`prefer.test`)"
service = "app"
[http.routers.prefer.tls]
options = "prefer"
[tls.options.prefer]
preferServerCipherSuites = true
"#;
    let served = Served::start(&["secure.test", "prefer.test"], extra, "prefer.test").await;
    let tls_port = served.port;
    // The client asks for ChaCha20 first: the default options follow it,
    // the option that prefers the server's order does not.
    let client_order = suite_for_a_chacha_client(&served.ca, tls_port, "secure.test").await;
    assert_eq!(
        client_order,
        rustls::CipherSuite::TLS13_CHACHA20_POLY1305_SHA256
    );
    let server_order = suite_for_a_chacha_client(&served.ca, tls_port, "prefer.test").await;
    assert_eq!(server_order, rustls::CipherSuite::TLS13_AES_256_GCM_SHA384);
    assert!(!served.gw.log().contains("prefer"), "{}", served.gw.log());
}

#[tokio::test]
async fn a_static_file_that_is_also_the_file_providers_keeps_its_certificates() {
    let app = Backend::echo("app").await;
    let ca = TestCa::new("test CA");
    let files = tempfile::tempdir().unwrap();
    let (chain, key) = ca.issue(&["both.test"]);
    let cert = write(files.path(), "c.pem", &chain);
    let key = write(files.path(), "c.key", &key);
    let tls_port = free_port();
    // One traefik.yml as real setups write it: static sections beside the
    // dynamic ones, and the file provider pointed at the file itself.
    let both = format!(
        r#"global:
  checkNewVersion: false
  sendAnonymousUsage: false
entryPoints:
  websecure:
    address: "127.0.0.1:{tls_port}"
log:
  level: INFO
http:
  routers:
    both:
      rule: Host(`both.test`)
      service: app
      tls: {{}}
  services:
    app:
      loadBalancer:
        servers:
          - url: "{}"
tls:
  certificates:
    - certFile: "{cert}"
      keyFile: "{key}"
"#,
        app.url()
    );
    let gw = Gangway::with_yaml(&both, &["--configFile=dynamic.yml"]).await;
    let client = TlsClient::trusting(ca.pem().as_bytes());
    eventually(
        Duration::from_secs(5),
        "the file's router is served",
        || async {
            client
                .get(tls_port, "both.test", None, "/", true)
                .await
                .is_ok_and(|g| g.status == StatusCode::OK && g.text().contains("app"))
        },
    )
    .await;
    let log = gw.log();
    let warnings: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("static configuration sections ignored"))
        .collect();
    assert_eq!(warnings.len(), 1, "{log}");
    assert!(
        warnings[0].contains("dynamic.yml") && warnings[0].contains("entryPoints, global, log"),
        "{log}"
    );
    assert!(!log.contains("ERR"), "{log}");
    assert!(
        !log.contains("move it to a file the file provider reads"),
        "{log}"
    );
}
