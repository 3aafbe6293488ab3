//! The server side of TCP services against the real binary: TLS towards
//! a server whose certificate gangway verifies (or refuses to), the
//! termination delay after a half-close, servers that refuse or never
//! accept skipped and shown DOWN, and the servers transport's PROXY
//! protocol header.

use crate::support;

use http::StatusCode;
use std::sync::Arc;
use std::time::Duration;
use support::tls::TestCa;
use support::{Gangway, eventually, free_port};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// Accepts connections forever, each served by `serve`.
async fn server<F, Fut>(serve: F) -> u16
where
    F: Fn(TcpStream) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(serve(stream));
        }
    });
    port
}

/// Greets with `hello from <name>`, then echoes each read prefixed with
/// its name.
async fn greet_and_echo<S: AsyncRead + AsyncWrite + Unpin>(name: &str, mut stream: S) {
    if stream
        .write_all(format!("hello from {name}\n").as_bytes())
        .await
        .is_err()
    {
        return;
    }
    let _ = stream.flush().await;
    let mut buf = [0u8; 1024];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                let reply = format!("{name}: {}", String::from_utf8_lossy(&buf[..n]));
                if stream.write_all(reply.as_bytes()).await.is_err() {
                    return;
                }
                let _ = stream.flush().await;
            }
        }
    }
}

/// A plain greeting echo server.
async fn echo_server(name: &'static str) -> u16 {
    server(move |stream| greet_and_echo(name, stream)).await
}

/// The same behind TLS, with a certificate for `names` from `ca`.
async fn tls_echo_server(name: &'static str, ca: &TestCa, names: &[&str]) -> u16 {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let (chain, key) = ca.issue(names);
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(chain.as_bytes())
        .map(Result::unwrap)
        .collect();
    let key = PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    server(move |stream| {
        let acceptor = acceptor.clone();
        async move {
            if let Ok(tls) = acceptor.accept(stream).await {
                greet_and_echo(name, tls).await;
            }
        }
    })
    .await
}

/// Reads until a newline or the end, within a guard against hangs.
async fn line<S: AsyncRead + Unpin>(stream: &mut S) -> String {
    let mut out = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        let read = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut byte))
            .await
            .expect("no hang");
        match read {
            Ok(1) => {
                out.push(byte[0]);
                if byte[0] == b'\n' {
                    break;
                }
            }
            _ => break,
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The first line a new connection to `port` gets within a second, or
/// nothing (while gangway has not routed the entry point yet, the
/// connection waits for HTTP).
async fn probe(port: u16) -> String {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)).await else {
        return String::new();
    };
    tokio::time::timeout(Duration::from_secs(1), line(&mut stream))
        .await
        .unwrap_or_default()
}

/// A client connection to `port` on loopback.
async fn connect(port: u16) -> TcpStream {
    TcpStream::connect(("127.0.0.1", port)).await.unwrap()
}

/// The flags for gangway with entry point `name` on `port`, and the API.
fn entry_point(name: &str, port: u16) -> String {
    format!("--entryPoints.{name}.address=127.0.0.1:{port}")
}

const API_ROUTER: &str = r#"
[http.routers.api]
entryPoints = ["web"]
rule = "Host(`api.test`)"
service = "api@internal"
"#;

fn json(got: &support::Got) -> serde_json::Value {
    serde_json::from_slice(&got.body)
        .unwrap_or_else(|e| panic!("{e}: {} {}", got.status, got.text()))
}

#[tokio::test]
async fn tls_to_a_server_is_verified_with_the_transports_root_cas_or_refused() {
    let ca = TestCa::new("Test Database CA");
    let db = tls_echo_server("db", &ca, &["db.internal", "127.0.0.1"]).await;
    let (trusting, untrusting, defaults) = (free_port(), free_port(), free_port());
    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, ca.pem()).unwrap();
    // Inline PEM, as Traefik's rootCAs take file contents too.
    let dynamic = format!(
        r#"
[tcp.routers.trusting]
entryPoints = ["trusting"]
rule = "HostSNI(`*`)"
service = "trusting"
[tcp.routers.untrusting]
entryPoints = ["untrusting"]
rule = "HostSNI(`*`)"
service = "untrusting"
[tcp.routers.defaults]
entryPoints = ["defaults"]
rule = "HostSNI(`*`)"
service = "defaults"

[tcp.serversTransports.ca.tls]
serverName = "db.internal"
rootCAs = ["""{ca}"""]
[tcp.serversTransports.noca.tls]
serverName = "db.internal"

[tcp.services.trusting.loadBalancer]
serversTransport = "ca"
[[tcp.services.trusting.loadBalancer.servers]]
address = "127.0.0.1:{db}"
tls = true
[tcp.services.untrusting.loadBalancer]
serversTransport = "noca"
[[tcp.services.untrusting.loadBalancer.servers]]
address = "127.0.0.1:{db}"
tls = true
[[tcp.services.defaults.loadBalancer.servers]]
address = "127.0.0.1:{db}"
tls = true
"#,
        ca = ca.pem()
    );
    let gw = Gangway::with_file(
        &dynamic,
        &[
            &entry_point("trusting", trusting),
            &entry_point("untrusting", untrusting),
            &entry_point("defaults", defaults),
            // For load balancers that name no transport; the server is
            // then named by its address.
            &format!("--tcpServersTransport.tls.rootCAs={}", ca_file.display()),
        ],
    )
    .await;
    eventually(Duration::from_secs(5), "the TLS server greets", || async {
        probe(trusting).await == "hello from db\n"
    })
    .await;
    // A plain client talks to the TLS server through gangway, both ways.
    let mut client = connect(trusting).await;
    assert_eq!(line(&mut client).await, "hello from db\n");
    client.write_all(b"ping\n").await.unwrap();
    assert_eq!(line(&mut client).await, "db: ping\n");
    assert_eq!(probe(defaults).await, "hello from db\n");
    // The server's certificate is not from the built-in roots: gangway
    // sends it nothing, and the client's connection is closed.
    let mut refused = connect(untrusting).await;
    let mut got = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), refused.read_to_end(&mut got))
        .await
        .expect("closed, not left hanging")
        .unwrap_or_default();
    assert!(got.is_empty(), "{:?}", String::from_utf8_lossy(&got));
    eventually(Duration::from_secs(5), "the refusal is logged", || async {
        gw.log().contains("TLS with the TCP server failed")
    })
    .await;
}

#[tokio::test]
async fn after_a_half_close_the_other_direction_goes_on_until_the_termination_delay() {
    // The server says goodbye and closes its writing half at once, then
    // reads on; when its reading ends it reports what it read.
    let (heard, mut hear) = mpsc::unbounded_channel::<Vec<u8>>();
    let heard = Arc::new(heard);
    let port = server(move |mut stream| {
        let heard = heard.clone();
        async move {
            stream.write_all(b"bye\n").await.unwrap();
            stream.shutdown().await.unwrap();
            let mut read = Vec::new();
            let _ = stream.read_to_end(&mut read).await;
            let _ = heard.send(read);
        }
    })
    .await;
    let tcp = free_port();
    let dynamic = format!(
        r#"
[tcp.routers.late]
entryPoints = ["late"]
rule = "HostSNI(`*`)"
service = "late"
[tcp.serversTransports.slow]
terminationDelay = "3s"
[tcp.services.late.loadBalancer]
serversTransport = "slow"
[[tcp.services.late.loadBalancer.servers]]
address = "127.0.0.1:{port}"
"#
    );
    let _gw = Gangway::with_file(&dynamic, &[&entry_point("late", tcp)]).await;
    eventually(Duration::from_secs(5), "the router routes", || async {
        probe(tcp).await == "bye\n"
    })
    .await;
    let mut client = connect(tcp).await;
    let mut got = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), client.read_to_end(&mut got))
        .await
        .expect("the server's close is passed on")
        .unwrap();
    assert_eq!(got, b"bye\n");
    // Within the delay, what the client still sends reaches the server;
    // the client never closes its side, so the end of the server's
    // reading can only come from gangway, once the delay is over.
    client.write_all(b"late words\n").await.unwrap();
    let words = loop {
        let read = tokio::time::timeout(Duration::from_secs(20), hear.recv())
            .await
            .expect("the server's reading ends")
            .expect("server alive");
        // The probing connections above said nothing.
        if !read.is_empty() {
            break read;
        }
    };
    assert_eq!(words, b"late words\n");
    drop(client);
}

#[tokio::test]
async fn a_server_that_refuses_is_skipped_and_shown_down() {
    let live = echo_server("live").await;
    let refusing = free_port();
    let tcp = free_port();
    let dynamic = format!(
        r#"
[tcp.routers.db]
entryPoints = ["db"]
rule = "HostSNI(`*`)"
service = "db"
[[tcp.services.db.loadBalancer.servers]]
address = "127.0.0.1:{refusing}"
[[tcp.services.db.loadBalancer.servers]]
address = "127.0.0.1:{live}"
{API_ROUTER}"#
    );
    let gw = Gangway::with_file(&dynamic, &[&entry_point("db", tcp), "--api=true"]).await;
    eventually(Duration::from_secs(5), "the router routes", || async {
        probe(tcp).await.starts_with("hello from")
    })
    .await;
    // Every connection lands on the live server, whichever is next in turn.
    for _ in 0..6 {
        let mut client = connect(tcp).await;
        assert_eq!(line(&mut client).await, "hello from live\n");
    }
    let service = json(&gw.get("api.test", "/api/tcp/services/db@file").await);
    assert_eq!(
        service["serverStatus"],
        serde_json::json!({
            format!("127.0.0.1:{refusing}"): "DOWN",
            format!("127.0.0.1:{live}"): "UP",
        }),
        "{service}"
    );
    assert_eq!(service["status"], "warning", "{service}");
    assert!(
        service["error"][0].as_str().unwrap().contains("1 of 2"),
        "{service}"
    );
    // Once it accepts connections again it is UP after its next one.
    let back = TcpListener::bind(("127.0.0.1", refusing)).await.unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = back.accept().await {
            tokio::spawn(greet_and_echo("back", stream));
        }
    });
    eventually(
        Duration::from_secs(60),
        "the server is tried again",
        || async { probe(tcp).await == "hello from back\n" },
    )
    .await;
    let service = json(&gw.get("api.test", "/api/tcp/services/db@file").await);
    assert_eq!(
        service["serverStatus"][format!("127.0.0.1:{refusing}")],
        "UP",
        "{service}"
    );
    assert_eq!(service["status"], "enabled", "{service}");
}

#[tokio::test]
async fn a_server_that_never_accepts_is_given_up_after_the_dial_timeout() {
    // A listener whose accept queue is full and never drained: the kernel
    // drops further connection attempts, so a dial waits until it gives up.
    let socket = socket2::Socket::new(
        socket2::Domain::IPV4,
        socket2::Type::STREAM,
        Some(socket2::Protocol::TCP),
    )
    .unwrap();
    socket
        .bind(&std::net::SocketAddr::from(([127, 0, 0, 1], 0)).into())
        .unwrap();
    socket.listen(0).unwrap();
    let stuck = socket.local_addr().unwrap().as_socket().unwrap().port();
    let mut fillers = Vec::new();
    for _ in 0..4 {
        fillers.push(tokio::spawn(TcpStream::connect(("127.0.0.1", stuck))));
    }
    let live = echo_server("live").await;
    let tcp = free_port();
    let dynamic = format!(
        r#"
[tcp.routers.db]
entryPoints = ["db"]
rule = "HostSNI(`*`)"
service = "db"
[tcp.serversTransports.impatient]
dialTimeout = "500ms"
[tcp.services.db.loadBalancer]
serversTransport = "impatient"
[[tcp.services.db.loadBalancer.servers]]
address = "127.0.0.1:{stuck}"
[[tcp.services.db.loadBalancer.servers]]
address = "127.0.0.1:{live}"
{API_ROUTER}"#
    );
    let gw = Gangway::with_file(&dynamic, &[&entry_point("db", tcp), "--api=true"]).await;
    eventually(Duration::from_secs(5), "the router routes", || async {
        probe(tcp).await.starts_with("hello from")
    })
    .await;
    // Each connection reaches the live server, after the stuck one timed
    // out if it was first in turn.
    for _ in 0..3 {
        let mut client = connect(tcp).await;
        assert_eq!(line(&mut client).await, "hello from live\n", "{}", gw.log());
    }
    let service = json(&gw.get("api.test", "/api/tcp/services/db@file").await);
    assert_eq!(
        service["serverStatus"][format!("127.0.0.1:{stuck}")],
        "DOWN",
        "{service}"
    );
    assert!(gw.log().contains("in time"), "{}", gw.log());
    drop(socket);
    drop(fillers);
}

#[tokio::test]
async fn the_transports_proxy_protocol_header_comes_first() {
    // The server reads the PROXY v1 line gangway sends first and answers
    // with it.
    let port = server(|mut stream| async move {
        let header = line(&mut stream).await;
        let _ = stream.write_all(header.as_bytes()).await;
    })
    .await;
    let tcp = free_port();
    let dynamic = format!(
        r#"
[tcp.routers.pp]
entryPoints = ["pp"]
rule = "HostSNI(`*`)"
service = "pp"
[tcp.serversTransports.pp]
proxyProtocol = {{ version = 1 }}
[tcp.services.pp.loadBalancer]
serversTransport = "pp"
[[tcp.services.pp.loadBalancer.servers]]
address = "127.0.0.1:{port}"
"#
    );
    let _gw = Gangway::with_file(&dynamic, &[&entry_point("pp", tcp)]).await;
    eventually(Duration::from_secs(5), "the router routes", || async {
        probe(tcp).await.starts_with("PROXY")
    })
    .await;
    let client = connect(tcp).await;
    let mine = client.local_addr().unwrap().port();
    let mut client = client;
    assert_eq!(
        line(&mut client).await,
        format!("PROXY TCP4 127.0.0.1 127.0.0.1 {mine} {tcp}\r\n")
    );
}

#[tokio::test]
async fn a_missing_servers_transport_disables_the_service_saying_which() {
    let tcp = free_port();
    let dynamic = format!(
        r#"
[tcp.routers.db]
entryPoints = ["db"]
rule = "HostSNI(`*`)"
service = "db"
[tcp.services.db.loadBalancer]
serversTransport = "nowhere"
[[tcp.services.db.loadBalancer.servers]]
address = "127.0.0.1:1"
{API_ROUTER}"#
    );
    let gw = Gangway::with_file(&dynamic, &[&entry_point("db", tcp), "--api=true"]).await;
    eventually(Duration::from_secs(5), "the service is listed", || async {
        gw.get("api.test", "/api/tcp/services/db@file").await.status == StatusCode::OK
    })
    .await;
    let service = json(&gw.get("api.test", "/api/tcp/services/db@file").await);
    assert_eq!(service["status"], "disabled");
    assert!(
        service["error"][0]
            .as_str()
            .unwrap()
            .contains("TCP servers transport `nowhere@file` does not exist"),
        "{service}"
    );
    assert_eq!(service["problems"][0]["kind"], "missing", "{service}");
}

/// A CA that signs a server certificate naming the server by a URI only
/// (a SPIFFE ID, DNS name of another host) and a client certificate.
struct Pki {
    ca_pem: String,
    server: (String, String),
    client: (String, String),
}

fn pki(server_uri: &str) -> Pki {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
        KeyUsagePurpose, SanType,
    };
    let ca_key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(DnType::CommonName, "Mesh CA");
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca = ca.self_signed(&ca_key).unwrap();
    let leaf = |sans: Vec<SanType>, usage: ExtendedKeyUsagePurpose| {
        let key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.subject_alt_names = sans;
        params.extended_key_usages = vec![usage];
        let cert = params.signed_by(&key, &ca, &ca_key).unwrap();
        (cert.pem(), key.serialize_pem())
    };
    Pki {
        ca_pem: ca.pem(),
        server: leaf(
            vec![
                SanType::DnsName("elsewhere.test".try_into().unwrap()),
                SanType::URI(server_uri.try_into().unwrap()),
            ],
            ExtendedKeyUsagePurpose::ServerAuth,
        ),
        client: leaf(
            vec![SanType::DnsName("gangway.test".try_into().unwrap())],
            ExtendedKeyUsagePurpose::ClientAuth,
        ),
    }
}

/// A TLS greeting echo server that wants a client certificate from `pki`'s CA.
async fn mtls_echo_server(name: &'static str, pki: &Pki) -> u16 {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(pki.ca_pem.as_bytes()).unwrap())
        .unwrap();
    let clients = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .build()
    .unwrap();
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(pki.server.0.as_bytes())
            .map(Result::unwrap)
            .collect();
    let key = PrivateKeyDer::from_pem_slice(pki.server.1.as_bytes()).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_client_cert_verifier(clients)
        .with_single_cert(certs, key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    server(move |stream| {
        let acceptor = acceptor.clone();
        async move {
            if let Ok(tls) = acceptor.accept(stream).await {
                greet_and_echo(name, tls).await;
            }
        }
    })
    .await
}

#[tokio::test]
async fn a_client_certificate_and_a_peer_uri_instead_of_the_host_name() {
    let uri = "spiffe://example.test/db";
    let pki = pki(uri);
    let db = mtls_echo_server("db", &pki).await;
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let ca = file("ca.pem", &pki.ca_pem);
    let cert = file("client.pem", &pki.client.0);
    let key = file("client.key", &pki.client.1);
    let (good, wrong_uri, no_cert) = (free_port(), free_port(), free_port());
    let mut dynamic = String::new();
    for (name, settings) in [
        (
            "good",
            format!(
                "rootCAs = [\"{ca}\"]\npeerCertURI = \"{uri}\"\ncertificates = [{{ certFile = \"{cert}\", keyFile = \"{key}\" }}]"
            ),
        ),
        (
            "wronguri",
            format!(
                "rootCAs = [\"{ca}\"]\npeerCertURI = \"spiffe://example.test/other\"\ncertificates = [{{ certFile = \"{cert}\", keyFile = \"{key}\" }}]"
            ),
        ),
        (
            "nocert",
            format!("rootCAs = [\"{ca}\"]\npeerCertURI = \"{uri}\""),
        ),
    ] {
        dynamic.push_str(&format!(
            r#"
[tcp.routers.{name}]
entryPoints = ["{name}"]
rule = "HostSNI(`*`)"
service = "{name}"
[tcp.serversTransports.{name}.tls]
{settings}
[tcp.services.{name}.loadBalancer]
serversTransport = "{name}"
[[tcp.services.{name}.loadBalancer.servers]]
address = "127.0.0.1:{db}"
tls = true
"#
        ));
    }
    let gw = Gangway::with_file(
        &dynamic,
        &[
            &entry_point("good", good),
            &entry_point("wronguri", wrong_uri),
            &entry_point("nocert", no_cert),
        ],
    )
    .await;
    // The server's certificate names another host, but holds the URI; the
    // server accepts gangway's client certificate.
    eventually(Duration::from_secs(5), "the mTLS server greets", || async {
        probe(good).await == "hello from db\n"
    })
    .await;
    let mut client = connect(good).await;
    assert_eq!(line(&mut client).await, "hello from db\n");
    client.write_all(b"ping\n").await.unwrap();
    assert_eq!(line(&mut client).await, "db: ping\n");
    // Another URI, or no client certificate: closed.
    for port in [wrong_uri, no_cert] {
        let mut refused = connect(port).await;
        let mut got = Vec::new();
        tokio::time::timeout(Duration::from_secs(10), refused.read_to_end(&mut got))
            .await
            .expect("closed, not left hanging")
            .unwrap_or_default();
        assert!(
            got.is_empty(),
            "{port}: {:?}\n{}",
            String::from_utf8_lossy(&got),
            gw.log()
        );
    }
}

#[tokio::test]
async fn server_connections_get_keep_alive_probes_unless_the_transport_says_none() {
    let Some(ss) = support::program("keep-alive", &["ss"], "apt-get install iproute2") else {
        return;
    };
    let probed = echo_server("probed").await;
    let quiet = echo_server("quiet").await;
    let (with, without) = (free_port(), free_port());
    let dynamic = format!(
        r#"
[tcp.routers.with]
entryPoints = ["with"]
rule = "HostSNI(`*`)"
service = "with"
[tcp.routers.without]
entryPoints = ["without"]
rule = "HostSNI(`*`)"
service = "without"
[tcp.serversTransports.often]
dialKeepAlive = "7s"
[tcp.serversTransports.never]
dialKeepAlive = "-1s"
[tcp.services.with.loadBalancer]
serversTransport = "often"
[[tcp.services.with.loadBalancer.servers]]
address = "127.0.0.1:{probed}"
[tcp.services.without.loadBalancer]
serversTransport = "never"
[[tcp.services.without.loadBalancer.servers]]
address = "127.0.0.1:{quiet}"
"#
    );
    let _gw = Gangway::with_file(
        &dynamic,
        &[&entry_point("with", with), &entry_point("without", without)],
    )
    .await;
    for (port, name) in [(with, "probed"), (without, "quiet")] {
        eventually(Duration::from_secs(5), "the router routes", || async {
            probe(port).await == format!("hello from {name}\n")
        })
        .await;
    }
    // gangway's own end of its connection to `server`, with its timers.
    let timers = |server: u16| {
        let out = std::process::Command::new(&ss)
            .args(["-tnoH", "state", "established", "dst"])
            .arg(format!("127.0.0.1:{server}"))
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let mut held_with = connect(with).await;
    assert_eq!(line(&mut held_with).await, "hello from probed\n");
    let mut held_without = connect(without).await;
    assert_eq!(line(&mut held_without).await, "hello from quiet\n");
    let probed_timers = timers(probed);
    assert!(probed_timers.contains("keepalive"), "{probed_timers}");
    let quiet_timers = timers(quiet);
    assert!(
        !quiet_timers.is_empty() && !quiet_timers.contains("keepalive"),
        "{quiet_timers}"
    );
}
