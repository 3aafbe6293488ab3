//! HTTP servers transports against real rustls servers: client
//! certificates (the one a server's CA hints pick), TLS versions, the
//! peer's URI, and TLS towards a forwardAuth server.

use crate::support;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose, SanType,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::convert::Infallible;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use support::{Backend, Gangway, eventually};
use tokio::net::TcpListener;
use tokio::task::JoinSet;

const TLS13_ONLY: &[&rustls::SupportedProtocolVersion] = &[&rustls::version::TLS13];

const API: &str = "[http.routers.api]\nrule = \"Host(`api.test`)\"\nservice = \"api@internal\"\n";

/// A CA that signs server and client certificates.
struct Ca {
    cert: rcgen::Certificate,
    key: KeyPair,
}

impl Ca {
    fn new(name: &str) -> Ca {
        let key = KeyPair::generate().expect("key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let cert = params.self_signed(&key).expect("ca");
        Ca { cert, key }
    }

    fn pem(&self) -> String {
        self.cert.pem()
    }

    /// A certificate named `cn` for `sans`, for a server or a client:
    /// (chain PEM, key PEM).
    fn issue(&self, cn: &str, sans: Vec<SanType>, client: bool) -> (String, String) {
        let key = KeyPair::generate().expect("key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.distinguished_name.push(DnType::CommonName, cn);
        params.subject_alt_names = sans;
        params.extended_key_usages = vec![if client {
            ExtendedKeyUsagePurpose::ClientAuth
        } else {
            ExtendedKeyUsagePurpose::ServerAuth
        }];
        let cert = params
            .signed_by(&key, &self.cert, &self.key)
            .expect("signed");
        (cert.pem(), key.serialize_pem())
    }

    /// A server certificate for 127.0.0.1.
    fn server(&self) -> (String, String) {
        self.issue(
            "backend",
            vec![SanType::IpAddress("127.0.0.1".parse().expect("ip"))],
            false,
        )
    }
}

fn certs(pem: &str) -> Vec<CertificateDer<'static>> {
    CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<_, _>>()
        .expect("certs")
}

fn key(pem: &str) -> PrivateKeyDer<'static> {
    PrivateKeyDer::from_pem_slice(pem.as_bytes()).expect("key")
}

/// What a test server is like: its certificate, the CA it requires client
/// certificates from, its versions and key-exchange groups.
struct ServerSpec<'a> {
    cert: (String, String),
    client_ca: Option<&'a Ca>,
    versions: &'static [&'static rustls::SupportedProtocolVersion],
}

/// An HTTPS server (HTTP/1.1 and HTTP/2) answering with the client
/// certificate's common name (`-` without one) and the TLS version.
async fn https_server(spec: ServerSpec<'_>) -> (u16, tokio::task::JoinHandle<()>) {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(spec.versions)
        .expect("versions");
    let builder = match spec.client_ca {
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            roots.add(ca.cert.der().clone()).expect("root");
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            )
            .build()
            .expect("verifier");
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let mut config = builder
        .with_single_cert(certs(&spec.cert.0), key(&spec.cert.1))
        .expect("server config");
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    serve_tls(config).await
}

async fn serve_tls(config: rustls::ServerConfig) -> (u16, tokio::task::JoinHandle<()>) {
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let task = tokio::spawn(async move {
        let mut conns = JoinSet::new();
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                continue;
            };
            let acceptor = acceptor.clone();
            conns.spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let (_, conn) = tls.get_ref();
                let who = conn
                    .peer_certificates()
                    .and_then(|c| c.first())
                    .and_then(|c| {
                        let (_, cert) = x509_parser::parse_x509_certificate(c).ok()?;
                        let cn = cert.subject().iter_common_name().next()?;
                        cn.as_str().ok().map(str::to_owned)
                    })
                    .unwrap_or_else(|| "-".to_owned());
                let text = format!(
                    "{who} {:?} {:?}",
                    conn.protocol_version(),
                    conn.negotiated_key_exchange_group().map(|g| g.name())
                );
                let svc = service_fn(move |_req: Request<Incoming>| {
                    let mut resp = http::Response::new(Full::new(Bytes::from(text.clone())));
                    // The client certificate's name, for a forwardAuth
                    // that copies it onto the request.
                    if let Ok(user) = http::HeaderValue::from_str(&who) {
                        resp.headers_mut().insert("x-auth-user", user);
                    }
                    async move { Ok::<_, Infallible>(resp) }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tls), svc)
                    .await;
            });
        }
    });
    (port, task)
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    path.display().to_string()
}

/// A router `name` on `name.test` to one server through transport `name`.
fn route(name: &str, url: &str) -> String {
    format!(
        "[http.routers.{name}]\nrule = \"Host(`{name}.test`)\"\nservice = \"{name}\"\n\
         [http.services.{name}.loadBalancer]\nserversTransport = \"{name}\"\n\
         [[http.services.{name}.loadBalancer.servers]]\nurl = \"{url}\"\n"
    )
}

async fn ready(gw: &Gangway, host: &str) {
    eventually(Duration::from_secs(10), host, || async {
        gw.get(host, "/").await.status != StatusCode::NOT_FOUND
    })
    .await;
}

/// The API's view of service `name@file`.
async fn service(gw: &Gangway, name: &str) -> serde_json::Value {
    let got = gw
        .get("api.test", &format!("/api/http/services/{name}@file"))
        .await;
    serde_json::from_slice(&got.body).expect("service JSON")
}

#[tokio::test]
async fn the_client_certificate_a_server_requires_is_the_one_its_ca_hints_pick() {
    let server_ca = Ca::new("server CA");
    let wanted_ca = Ca::new("wanted client CA");
    let other_ca = Ca::new("other client CA");
    let (port, _server) = https_server(ServerSpec {
        cert: server_ca.server(),
        client_ca: Some(&wanted_ca),
        versions: rustls::ALL_VERSIONS,
    })
    .await;
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = write(dir.path(), "ca.pem", &server_ca.pem());
    let (other_cert, other_key) = other_ca.issue("other", vec![], true);
    let (good_cert, good_key) = wanted_ca.issue("good", vec![], true);
    let other_cert = write(dir.path(), "other.pem", &other_cert);
    let other_key = write(dir.path(), "other.key", &other_key);
    let good_cert = write(dir.path(), "good.pem", &good_cert);
    let good_key = write(dir.path(), "good.key", &good_key);
    let url = format!("https://127.0.0.1:{port}");
    let conf = format!(
        "{API}{}{}{}
[http.serversTransports.both]
rootCAs = [{ca:?}]
[[http.serversTransports.both.certificates]]
certFile = {other_cert:?}
keyFile = {other_key:?}
[[http.serversTransports.both.certificates]]
certFile = {good_cert:?}
keyFile = {good_key:?}
[http.serversTransports.none]
rootCAs = [{ca:?}]
[http.serversTransports.wrong]
rootCAs = [{ca:?}]
[[http.serversTransports.wrong.certificates]]
certFile = {other_cert:?}
keyFile = {other_key:?}
",
        route("both", &url),
        route("none", &url),
        route("wrong", &url),
    );
    let gw = Gangway::with_file(&conf, &["--api=true"]).await;
    ready(&gw, "both.test").await;
    // The server names its CA: of the two certificates, the second is
    // the one it takes, although the first is listed first.
    let got = gw.get("both.test", "/").await;
    assert_eq!(got.status, StatusCode::OK, "{}", got.text());
    assert!(got.text().starts_with("good "), "{}", got.text());
    // Without a certificate, or with one of another CA, the server refuses.
    assert_eq!(
        gw.get("none.test", "/").await.status,
        StatusCode::BAD_GATEWAY
    );
    assert_eq!(
        gw.get("wrong.test", "/").await.status,
        StatusCode::BAD_GATEWAY
    );
}

#[tokio::test]
async fn tls_versions_towards_a_server_that_speaks_only_tls_1_3() {
    let server_ca = Ca::new("server CA");
    let (port, _server) = https_server(ServerSpec {
        cert: server_ca.server(),
        client_ca: None,
        versions: TLS13_ONLY,
    })
    .await;
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = write(dir.path(), "ca.pem", &server_ca.pem());
    let url = format!("https://127.0.0.1:{port}");
    let conf = format!(
        "{API}{}{}{}
[http.serversTransports.new]
rootCAs = [{ca:?}]
minVersion = \"VersionTLS13\"
[http.serversTransports.old]
rootCAs = [{ca:?}]
maxVersion = \"VersionTLS12\"
cipherSuites = [\"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256\"]
[http.serversTransports.bad]
rootCAs = [{ca:?}]
minVersion = \"VersionTLS10\"
maxVersion = \"VersionTLS11\"
",
        route("new", &url),
        route("old", &url),
        route("bad", &url),
    );
    let gw = Gangway::with_file(&conf, &["--api=true"]).await;
    ready(&gw, "new.test").await;
    let got = gw.get("new.test", "/").await;
    assert_eq!(got.status, StatusCode::OK, "{}", got.text());
    assert!(got.text().contains("TLSv1_3"), "{}", got.text());
    // TLS 1.2 at most: the handshake fails, and the API says why.
    assert_eq!(
        gw.get("old.test", "/").await.status,
        StatusCode::BAD_GATEWAY
    );
    let view = service(&gw, "old").await;
    let last = view["serverHealth"][&url]["lastError"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(last.contains("ProtocolVersion"), "{view:#}");
    // Versions rustls cannot speak disable the service, saying so.
    let view = service(&gw, "bad").await;
    assert_eq!(view["status"], "disabled", "{view:#}");
    let error = view["error"].to_string();
    assert!(
        error.contains("minVersion") && error.contains("older than TLS 1.2"),
        "{view:#}"
    );
}

#[tokio::test]
async fn the_peer_uri_is_checked_instead_of_the_host_name() {
    let server_ca = Ca::new("server CA");
    let (port, _server) = https_server(ServerSpec {
        cert: server_ca.issue(
            "backend",
            vec![SanType::URI(
                "spiffe://cluster.local/ns/a/sa/api"
                    .try_into()
                    .expect("uri"),
            )],
            false,
        ),
        client_ca: None,
        versions: rustls::ALL_VERSIONS,
    })
    .await;
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = write(dir.path(), "ca.pem", &server_ca.pem());
    let url = format!("https://127.0.0.1:{port}");
    let conf = format!(
        "{API}{}{}
[http.serversTransports.same]
rootCAs = [{ca:?}]
peerCertURI = \"spiffe://cluster.local/ns/a/sa/api\"
[http.serversTransports.other]
rootCAs = [{ca:?}]
peerCertURI = \"spiffe://cluster.local/ns/b/sa/api\"
",
        route("same", &url),
        route("other", &url),
    );
    let gw = Gangway::with_file(&conf, &["--api=true"]).await;
    ready(&gw, "same.test").await;
    let got = gw.get("same.test", "/").await;
    assert_eq!(got.status, StatusCode::OK, "{}", got.text());
    assert_eq!(
        gw.get("other.test", "/").await.status,
        StatusCode::BAD_GATEWAY
    );
    let view = service(&gw, "other").await;
    let last = view["serverHealth"][&url]["lastError"].to_string();
    assert!(last.contains("NotValidForName"), "{view:#}");
}

#[tokio::test]
async fn forward_auth_to_an_https_server_with_its_own_tls_options() {
    let server_ca = Ca::new("auth server CA");
    let client_ca = Ca::new("auth client CA");
    let (auth_port, _auth) = https_server(ServerSpec {
        cert: server_ca.server(),
        client_ca: Some(&client_ca),
        versions: rustls::ALL_VERSIONS,
    })
    .await;
    let app = Backend::echo("app").await;
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = write(dir.path(), "ca.pem", &server_ca.pem());
    let (cert, key) = client_ca.issue("alice", vec![], true);
    let cert = write(dir.path(), "alice.pem", &cert);
    let key = write(dir.path(), "alice.key", &key);
    let auth = format!("https://127.0.0.1:{auth_port}/check");
    let mut conf = String::new();
    let cases = [
        (
            "verified",
            format!("ca = {ca:?}\ncert = {cert:?}\nkey = {key:?}"),
        ),
        (
            "insecure",
            format!("insecureSkipVerify = true\ncert = {cert:?}\nkey = {key:?}"),
        ),
        ("nocert", format!("ca = {ca:?}")),
        ("untrusted", format!("cert = {cert:?}\nkey = {key:?}")),
        ("half", format!("ca = {ca:?}\ncert = {cert:?}")),
    ];
    for (name, tls) in &cases {
        conf.push_str(&format!(
            "[http.routers.{name}]\nrule = \"Host(`{name}.test`)\"\nservice = \"app\"\n\
             middlewares = [\"{name}\"]\n\
             [http.middlewares.{name}.forwardAuth]\naddress = \"{auth}\"\n\
             authResponseHeaders = [\"X-Auth-User\"]\nheaderField = \"X-Auth-User\"\n\
             [http.middlewares.{name}.forwardAuth.tls]\n{tls}\n"
        ));
    }
    conf.push_str(&format!(
        "{API}[http.services.app.loadBalancer]\n[[http.services.app.loadBalancer.servers]]\nurl = \"{}\"\n",
        app.url()
    ));
    let gw = Gangway::with_file(&conf, &["--api=true"]).await;
    ready(&gw, "verified.test").await;
    // The auth server verified by `tls.ca`, gangway's certificate taken:
    // the user it names reaches the app.
    for host in ["verified.test", "insecure.test"] {
        let got = gw.get(host, "/").await;
        assert_eq!(got.status, StatusCode::OK, "{host}: {}", got.text());
        assert_eq!(got.seen().header("x-auth-user"), Some("alice"), "{host}");
    }
    // No client certificate, or an auth server the built-in roots do not
    // know: the request does not pass.
    for host in ["nocert.test", "untrusted.test"] {
        let got = gw.get(host, "/").await;
        assert!(!got.status.is_success(), "{host}: {}", got.text());
        assert!(
            !got.text().contains("\"backend\""),
            "{host} reached the app"
        );
    }
    // A certificate without its key is the middleware's error, shown.
    let view = gw.get("api.test", "/api/http/middlewares/half@file").await;
    let view: serde_json::Value = serde_json::from_slice(&view.body).expect("JSON");
    assert_eq!(view["status"], "disabled", "{view:#}");
    assert!(
        view["error"].to_string().contains("cert and key"),
        "{view:#}"
    );
}

/// A rustls client configuration offering only `groups`, trusting `ca`.
fn client_offering(
    groups: Vec<&'static dyn rustls::crypto::SupportedKxGroup>,
    ca: &Ca,
) -> rustls::ClientConfig {
    let mut provider = rustls::crypto::ring::default_provider();
    provider.kx_groups = groups;
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.cert.der().clone()).expect("root");
    rustls::ClientConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(TLS13_ONLY)
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth()
}

#[tokio::test]
async fn x25519mlkem768_is_negotiated_with_clients_and_servers_that_offer_only_it() {
    let ca = Ca::new("pq CA");
    let dir = tempfile::tempdir().expect("tempdir");
    let (chain, key) = ca.issue(
        "pq.test",
        vec![SanType::DnsName("pq.test".try_into().expect("name"))],
        false,
    );
    let cert = write(dir.path(), "pq.pem", &chain);
    let key = write(dir.path(), "pq.key", &key);
    // A server whose only key exchange is the hybrid group.
    let mut provider = rustls::crypto::ring::default_provider();
    provider.kx_groups = vec![gangway::crypto::X25519MLKEM768];
    let (backend_cert, backend_key) = ca.server();
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(TLS13_ONLY)
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(certs(&backend_cert), self::key(&backend_key))
        .expect("server config");
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let (port, _server) = serve_tls(config).await;
    let ca_file = write(dir.path(), "ca.pem", &ca.pem());
    let tls_port = support::free_port();
    let conf = format!(
        "{}[http.serversTransports.pq]\nrootCAs = [{ca_file:?}]\n\
         [http.routers.front]\nrule = \"Host(`pq.test`)\"\nservice = \"pq\"\n\
         [http.routers.front.tls]\n\
         [[tls.certificates]]\ncertFile = {cert:?}\nkeyFile = {key:?}\n",
        route("pq", &format!("https://127.0.0.1:{port}")),
    );
    let gw = Gangway::with_file(
        &conf,
        &[&format!(
            "--entryPoints.websecure.address=127.0.0.1:{tls_port}"
        )],
    )
    .await;
    ready(&gw, "pq.test").await;
    // Towards the server: the hybrid group by default.
    let got = gw.get("pq.test", "/").await;
    assert_eq!(got.status, StatusCode::OK, "{}", got.text());
    assert!(
        got.text().ends_with("Some(X25519MLKEM768)"),
        "{}",
        got.text()
    );
    // From a client offering only the hybrid group, and from one offering
    // only X25519: each gets what it offers.
    for (groups, wanted) in [
        (
            vec![gangway::crypto::X25519MLKEM768],
            rustls::NamedGroup::X25519MLKEM768,
        ),
        (
            vec![rustls::crypto::ring::kx_group::X25519],
            rustls::NamedGroup::X25519,
        ),
    ] {
        let connector = tokio_rustls::TlsConnector::from(Arc::new(client_offering(groups, &ca)));
        eventually(Duration::from_secs(5), "TLS handshake", || {
            handshake(connector.clone(), tls_port)
        })
        .await;
        let negotiated = handshake_group(&connector, tls_port).await;
        assert_eq!(negotiated, Some(wanted));
    }
}

async fn handshake_group(
    connector: &tokio_rustls::TlsConnector,
    port: u16,
) -> Option<rustls::NamedGroup> {
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .ok()?;
    let name = rustls::pki_types::ServerName::try_from("pq.test").expect("name");
    let tls = connector.connect(name, tcp).await.ok()?;
    tls.get_ref()
        .1
        .negotiated_key_exchange_group()
        .map(|g| g.name())
}

async fn handshake(connector: tokio_rustls::TlsConnector, port: u16) -> bool {
    handshake_group(&connector, port).await.is_some()
}
