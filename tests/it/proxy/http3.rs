//! HTTP/3 (`entryPoints.<n>.http3`): a real QUIC + HTTP/3 client (quinn
//! and h3) against the binary, through the same routers, middlewares,
//! certificates and limits as HTTP/1 and HTTP/2 on the entry point's TCP
//! side, which advertises HTTP/3 with `Alt-Svc`.

use crate::support;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use support::http3::{H3Conn, connect};
use support::pebble::{self, Pebble};
use support::tls::{TestCa, TlsClient, names_of};
use support::{Backend, Gangway, eventually, free_port};

fn write(dir: &std::path::Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// Certificate files for `names`, signed by `ca`, as a `tls.certificates`
/// entry.
fn certificate(ca: &TestCa, dir: &std::path::Path, names: &[&str]) -> String {
    let (chain, key) = ca.issue(names);
    let cert = write(dir, &format!("{}.pem", names[0]), &chain);
    let key = write(dir, &format!("{}.key", names[0]), &key);
    format!("[[tls.certificates]]\ncertFile = {cert:?}\nkeyFile = {key:?}\n")
}

/// A router for `host` on `websecure` with TLS, to `backend`, with the
/// middlewares named.
fn router(name: &str, host: &str, backend: &str, middlewares: &[&str]) -> String {
    format!(
        r#"
[http.routers.{name}]
rule = "Host(`{host}`)"
entryPoints = ["websecure"]
service = "{name}"
middlewares = {middlewares:?}
[http.routers.{name}.tls]
[http.services.{name}.loadBalancer]
[[http.services.{name}.loadBalancer.servers]]
url = "{backend}"
"#
    )
}

/// gangway with `websecure` on a free port, HTTP/3 on, and more flags.
async fn start(dynamic: &str, extra: &[&str]) -> (Gangway, u16) {
    let tls_port = free_port();
    let mut flags = vec![
        format!("--entryPoints.websecure.address=127.0.0.1:{tls_port}"),
        "--entryPoints.websecure.http3".to_owned(),
    ];
    flags.extend(extra.iter().map(|s| (*s).to_owned()));
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    (Gangway::with_file(dynamic, &flags).await, tls_port)
}

/// An HTTP/3 connection once `host`'s router answers over it.
async fn ready(client: &TlsClient, port: u16, host: &str) -> H3Conn {
    ready_within(Duration::from_secs(10), client, port, host).await
}

/// [`ready`], waiting up to `limit`.
async fn ready_within(limit: Duration, client: &TlsClient, port: u16, host: &str) -> H3Conn {
    eventually(limit, "HTTP/3 router served", || async {
        match connect(client, port, host).await {
            Ok(mut conn) => conn
                .get(host, "/")
                .await
                .is_ok_and(|g| g.status != StatusCode::NOT_FOUND),
            Err(_) => false,
        }
    })
    .await;
    connect(client, port, host)
        .await
        .expect("HTTP/3 connection")
}

/// A backend that answers with the request's body, and says how long it was.
async fn body_echo() -> Backend {
    Backend::serve(|req: Request<hyper::body::Incoming>| async move {
        let method = req.method().to_string();
        let length = req
            .headers()
            .get("content-length")
            .map(|v| v.to_str().unwrap_or("").to_owned())
            .unwrap_or_default();
        let body = req.into_body().collect().await.unwrap().to_bytes();
        let mut resp = http::Response::new(Full::new(body));
        resp.headers_mut()
            .insert("x-method", method.parse().unwrap());
        resp.headers_mut()
            .insert("x-length", length.parse().unwrap());
        resp
    })
    .await
}

#[tokio::test]
async fn get_and_post_go_through_the_routers_middlewares_and_services() {
    let app = Backend::echo("app").await;
    let uploads = body_echo().await;
    let ca = TestCa::new("test CA");
    let files = tempfile::tempdir().unwrap();
    let log = files.path().join("access.json");
    let mut dynamic = certificate(&ca, files.path(), &["app.test", "upload.test"]);
    dynamic.push_str(&router("app", "app.test", &app.url(), &["tag", "api"]));
    dynamic.push_str(&router("upload", "upload.test", &uploads.url(), &[]));
    dynamic.push_str(
        r#"
[http.middlewares.tag.headers.customRequestHeaders]
X-Came-By = "h3"
[http.middlewares.tag.headers.customResponseHeaders]
X-Answered = "yes"
[http.middlewares.api.stripPrefix]
prefixes = ["/api"]
"#,
    );
    let internal = free_port();
    let (gw, port) = start(
        &dynamic,
        &[
            &format!("--accessLog.filePath={}", log.display()),
            "--accessLog.format=json",
            "--metrics.prometheus",
            &format!("--entryPoints.gangway.address=127.0.0.1:{internal}"),
        ],
    )
    .await;
    let client = TlsClient::trusting(ca.pem().as_bytes());
    let mut conn = ready(&client, port, "app.test").await;

    let got = conn.get("app.test", "/api/hello?x=1").await.expect("GET");
    assert_eq!(got.status, StatusCode::OK, "{}", got.text());
    assert_eq!(got.headers["x-answered"], "yes", "response middleware");
    assert!(
        got.headers.get("alt-svc").is_none(),
        "HTTP/3 answers do not advertise themselves"
    );
    let seen = got.seen();
    assert_eq!(seen.method, "GET");
    assert_eq!(seen.uri, "/hello?x=1", "stripPrefix ran");
    assert_eq!(seen.header("x-came-by"), Some("h3"), "request middleware");
    assert_eq!(seen.header("x-forwarded-proto"), Some("https"));
    assert_eq!(seen.header("host"), Some("app.test"));
    assert_eq!(
        seen.header("transfer-encoding"),
        None,
        "a GET goes on without a body"
    );

    // Another host on a connection made for app.test is misdirected, as
    // over HTTP/2: its certificate and TLS options were not chosen for it.
    let got = conn.get("upload.test", "/").await.expect("GET");
    assert_eq!(got.status, StatusCode::MISDIRECTED_REQUEST);

    // A POST with a body, on a connection of its own.
    let mut conn = ready(&client, port, "upload.test").await;
    let body = Bytes::from(vec![b'q'; 100_000]);
    let req = Request::post("https://upload.test/form")
        .header("content-length", body.len())
        .body(body.clone())
        .unwrap();
    let got = conn.send(req).await.expect("POST");
    assert_eq!(got.status, StatusCode::OK, "{}", got.text());
    assert_eq!(got.headers["x-method"], "POST");
    assert_eq!(got.headers["x-length"], "100000");
    assert_eq!(got.body, body, "the body reached the server whole");
    // And one whose length is not declared.
    let req = Request::put("https://upload.test/stream")
        .body(Bytes::from_static(b"streamed"))
        .unwrap();
    let got = conn.send(req).await.expect("PUT");
    assert_eq!(got.status, StatusCode::OK, "{}", got.text());
    assert_eq!(got.text(), "streamed");

    // And one over TLS on TCP, for the access log's TLS fields.
    let got = client
        .get(port, "app.test", None, "/api/over-tcp", false)
        .await
        .expect("GET over TCP");
    assert_eq!(got.status, StatusCode::OK);

    // The access log says HTTP/3.0.
    eventually(Duration::from_secs(5), "access log entries", || async {
        std::fs::read_to_string(&log).is_ok_and(|t| t.contains("/api/over-tcp"))
    })
    .await;
    let text = std::fs::read_to_string(&log).unwrap();
    let entry: serde_json::Value = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|e| e["RequestPath"] == "/form")
        .expect("the POST was logged");
    assert_eq!(entry["RequestProtocol"], "HTTP/3.0", "{entry}");
    assert_eq!(entry["RequestMethod"], "POST", "{entry}");
    assert_eq!(entry["DownstreamStatus"], 200, "{entry}");
    assert_eq!(entry["RequestScheme"], "https", "{entry}");
    assert_eq!(entry["TLSVersion"], "1.3", "{entry}");
    assert!(
        entry.get("TLSCipher").is_none(),
        "quinn does not say: {entry}"
    );
    let tcp: serde_json::Value = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|e| e["RequestPath"] == "/api/over-tcp")
        .expect("the GET over TCP was logged");
    assert_eq!(tcp["RequestProtocol"], "HTTP/1.1", "{tcp}");
    assert_eq!(tcp["TLSVersion"], "1.3", "{tcp}");
    // Go's name of a TLS 1.3 suite, as Traefik writes it.
    assert!(
        [
            "TLS_AES_128_GCM_SHA256",
            "TLS_AES_256_GCM_SHA384",
            "TLS_CHACHA20_POLY1305_SHA256"
        ]
        .contains(&tcp["TLSCipher"].as_str().unwrap_or_default()),
        "{tcp}"
    );

    // The entry point's metrics count HTTP/3 requests as any others.
    let scrape = Request::get(format!("http://127.0.0.1:{internal}/metrics"))
        .body(Default::default())
        .unwrap();
    let metrics = gw.send(scrape).await.text();
    let posts = metrics
        .lines()
        .find(|l| {
            l.starts_with("gangway_entrypoint_requests_total{")
                && l.contains("entrypoint=\"websecure\"")
                && l.contains("method=\"POST\"")
        })
        .unwrap_or_else(|| panic!("no websecure POST in\n{metrics}"));
    assert!(posts.ends_with(" 1"), "{posts}");
    drop(gw);
}

#[tokio::test]
async fn tcp_answers_advertise_http3_with_alt_svc() {
    let app = Backend::echo("app").await;
    let ca = TestCa::new("test CA");
    let files = tempfile::tempdir().unwrap();
    let mut dynamic = certificate(&ca, files.path(), &["app.test"]);
    dynamic.push_str(&router("app", "app.test", &app.url(), &[]));
    dynamic.push_str(
        "[http.routers.gw]\nrule = \"Host(`gw.test`)\"\nentryPoints = [\"web\"]\nservice = \"api@internal\"\n",
    );
    let (gw, port) = start(&dynamic, &["--api=true"]).await;
    let client = TlsClient::trusting(ca.pem().as_bytes());
    let _ = ready(&client, port, "app.test").await;
    let want = format!("h3=\":{port}\"; ma=86400");
    for h2 in [true, false] {
        let got = client
            .get(port, "app.test", None, "/", h2)
            .await
            .expect("TLS over TCP");
        assert_eq!(got.status, StatusCode::OK);
        assert_eq!(
            got.headers.get("alt-svc").map(|v| v.to_str().unwrap()),
            Some(want.as_str()),
            "h2: {h2}"
        );
    }

    // Plain HTTP says nothing of HTTP/3, which needs TLS.
    let plain = gw.get("gw.test", "/api/entrypoints").await;
    assert!(plain.headers.get("alt-svc").is_none());
    // The API shows which entry point serves HTTP/3.
    let eps: serde_json::Value = serde_json::from_slice(&plain.body).expect("entry points");
    let find = |name: &str| {
        eps.as_array()
            .and_then(|a| a.iter().find(|e| e["name"] == name))
            .cloned()
            .unwrap_or_else(|| panic!("{name} in {eps}"))
    };
    assert_eq!(
        find("websecure")["http3"],
        serde_json::json!({"advertisedPort": 0})
    );
    assert!(find("web").get("http3").is_none(), "{eps}");

    // Behind a port mapping, the advertised port is the one clients use.
    let (_gw, port) = start(
        &dynamic,
        &["--entryPoints.websecure.http3.advertisedPort=443"],
    )
    .await;
    let _ = ready(&client, port, "app.test").await;
    let got = client
        .get(port, "app.test", None, "/", true)
        .await
        .expect("TLS over TCP");
    assert_eq!(got.headers["alt-svc"], "h3=\":443\"; ma=86400");
}

#[tokio::test]
async fn the_certificate_is_chosen_by_sni_and_client_certificates_are_not_bypassed() {
    let app = Backend::echo("app").await;
    let ca = TestCa::new("test CA");
    let files = tempfile::tempdir().unwrap();
    let mut dynamic = certificate(&ca, files.path(), &["a.test"]);
    dynamic.push_str(&certificate(&ca, files.path(), &["b.test"]));
    dynamic.push_str(&certificate(&ca, files.path(), &["mtls.test"]));
    dynamic.push_str(&router("a", "a.test", &app.url(), &[]));
    dynamic.push_str(&router("b", "b.test", &app.url(), &[]));
    let ca_file = write(files.path(), "clients.pem", &ca.pem());
    dynamic.push_str(&format!(
        r#"
[http.routers.mtls]
rule = "Host(`mtls.test`)"
entryPoints = ["websecure"]
service = "a"
[http.routers.mtls.tls]
options = "clients"
[tls.options.clients.clientAuth]
caFiles = [{ca_file:?}]
clientAuthType = "RequireAndVerifyClientCert"
[http.routers.optional]
rule = "Host(`optional.test`)"
entryPoints = ["websecure"]
service = "a"
[http.routers.optional.tls]
options = "optional"
[tls.options.optional.clientAuth]
caFiles = [{ca_file:?}]
clientAuthType = "VerifyClientCertIfGiven"
"#
    ));
    dynamic.push_str(&certificate(&ca, files.path(), &["optional.test"]));
    let (_gw, port) = start(&dynamic, &[]).await;
    let client = TlsClient::trusting(ca.pem().as_bytes());
    for host in ["a.test", "b.test"] {
        let mut conn = ready(&client, port, host).await;
        let chain = conn.peer_certificates();
        assert_eq!(names_of(&chain[0]), [host], "the certificate for {host}");
        let got = conn.get(host, "/").await.expect("GET");
        assert_eq!(got.status, StatusCode::OK);
        assert_eq!(got.seen().header("host"), Some(host));
    }
    // A name whose TLS options ask for a client certificate is not served
    // over QUIC, where none is asked for: the client stays on TCP.
    let refused = connect(&client, port, "mtls.test").await;
    assert!(refused.is_err(), "QUIC handshake for mtls.test refused");
    // Nor is HTTP/3 advertised for such a name: over TCP (where a client
    // without a certificate is let in by these options), no Alt-Svc.
    assert!(connect(&client, port, "optional.test").await.is_err());
    let got = client
        .get(port, "optional.test", None, "/", true)
        .await
        .expect("TLS over TCP");
    assert_eq!(got.status, StatusCode::OK);
    assert!(got.headers.get("alt-svc").is_none(), "{:?}", got.headers);
    let got = client.get(port, "a.test", None, "/", true).await.unwrap();
    assert!(got.headers.get("alt-svc").is_some(), "{:?}", got.headers);
}

/// A certificate that gangway obtained from an ACME CA (pebble, with real
/// TLS-ALPN-01 validation on the TCP side) is served over QUIC too, from
/// the moment it is issued.
#[tokio::test]
async fn a_certificate_from_acme_is_served_over_http3() {
    if !pebble::available("a_certificate_from_acme_is_served_over_http3") {
        return;
    }
    let app = Backend::echo("app").await;
    let (web, tls) = (free_port(), free_port());
    let storage = tempfile::tempdir().unwrap();
    let pebble = Pebble::start(web, tls, None).await;
    let dynamic = format!(
        r#"
[http.routers.app]
rule = "Host(`acme.test`)"
entryPoints = ["websecure"]
service = "app"
[http.routers.app.tls]
certResolver = "le"
[http.services.app.loadBalancer]
[[http.services.app.loadBalancer.servers]]
url = "{}"
"#,
        app.url()
    );
    let mut flags = pebble.resolver_flags("le");
    flags.extend([
        format!("--entryPoints.websecure.address=127.0.0.1:{tls}"),
        "--entryPoints.websecure.http3".to_owned(),
        format!(
            "--certificatesResolvers.le.acme.storage={}",
            storage.path().join("acme").display()
        ),
        "--certificatesResolvers.le.acme.email=ops@gangway.test".to_owned(),
    ]);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let _gw = Gangway::with_file_on(web, &dynamic, &flags).await;
    // Trusting only pebble's root: the generated default certificate
    // served before the order completes does not pass.
    let client = TlsClient::trusting(&pebble.issuing_root().await);
    let mut conn = ready_within(Duration::from_secs(60), &client, tls, "acme.test").await;
    let chain = conn.peer_certificates();
    assert_eq!(names_of(&chain[0]), ["acme.test"]);
    let got = conn.get("acme.test", "/").await.expect("GET");
    assert_eq!(got.status, StatusCode::OK);
    assert_eq!(got.seen().backend, "app");
}

/// QUIC Initial packets from an address that never answers, as a
/// reflection attack would send them with someone else's address as the
/// source: each gets one Retry packet, smaller than the Initial, and no
/// handshake starts, so gangway neither keeps state for them nor sends
/// more than it received. A real client still connects (through the
/// Retry, transparently).
#[tokio::test]
async fn initials_from_unvalidated_addresses_get_a_retry_and_nothing_more() {
    use tokio::net::UdpSocket;
    let app = Backend::echo("app").await;
    let ca = TestCa::new("test CA");
    let files = tempfile::tempdir().unwrap();
    let mut dynamic = certificate(&ca, files.path(), &["app.test"]);
    dynamic.push_str(&router("app", "app.test", &app.url(), &[]));
    let (_gw, port) = start(&dynamic, &[]).await;
    let client = TlsClient::trusting(ca.pem().as_bytes());
    let _ = ready(&client, port, "app.test").await;

    // Clients send to `front`; their packets reach gangway from `victim`,
    // whose answers are recorded and never passed back.
    let front = Arc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
    let victim = Arc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
    let sent = Arc::new(AtomicUsize::new(0));
    let answers = Arc::new(std::sync::Mutex::new(Vec::<(usize, u8)>::new()));
    let relay = {
        let (front, victim, sent) = (front.clone(), victim.clone(), sent.clone());
        tokio::spawn(async move {
            let mut buf = vec![0u8; 65_536];
            loop {
                let Ok((n, _)) = front.recv_from(&mut buf).await else {
                    return;
                };
                sent.fetch_add(n, Ordering::SeqCst);
                let _ = victim.send_to(&buf[..n], ("127.0.0.1", port)).await;
            }
        })
    };
    let recorder = {
        let (victim, answers) = (victim.clone(), answers.clone());
        tokio::spawn(async move {
            let mut buf = vec![0u8; 65_536];
            loop {
                let Ok((n, _)) = victim.recv_from(&mut buf).await else {
                    return;
                };
                answers.lock().unwrap().push((n, buf[0]));
            }
        })
    };
    let front_addr = front.local_addr().unwrap();
    let mut attempts = Vec::new();
    for _ in 0..20 {
        let mut tls = client.config(b"h3");
        tls.alpn_protocols = vec![b"h3".to_vec()];
        let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls).unwrap();
        let mut endpoint =
            quinn::Endpoint::client(std::net::SocketAddr::from(([127, 0, 0, 1], 0))).unwrap();
        endpoint.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
        let connecting = endpoint.connect(front_addr, "app.test").unwrap();
        attempts.push((endpoint, tokio::spawn(connecting)));
    }
    eventually(
        Duration::from_secs(10),
        "an answer to every Initial",
        || async { answers.lock().unwrap().len() >= 20 },
    )
    .await;
    let answers = answers.lock().unwrap().clone();
    let sent = sent.load(Ordering::SeqCst);
    for (len, first) in &answers {
        // A long header (top bit) of type Retry (3, RFC 9000 §17.2).
        assert!(
            first & 0x80 != 0 && (first >> 4) & 0x3 == 3,
            "a Retry, not a handshake packet (first byte {first:#04x}, {len} bytes)"
        );
    }
    let received: usize = answers.iter().map(|(len, _)| len).sum();
    assert!(
        received < sent,
        "{received} bytes answered to {sent} bytes of Initials"
    );
    for (_, attempt) in attempts {
        attempt.abort();
    }
    relay.abort();
    recorder.abort();

    let mut conn = connect(&client, port, "app.test")
        .await
        .expect("a real client");
    let got = conn.get("app.test", "/").await.expect("GET");
    assert_eq!(got.status, StatusCode::OK);
}

#[tokio::test]
async fn streams_past_the_limit_wait_and_oversized_heads_and_bodies_are_refused() {
    let now = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let slow = {
        let (now, most) = (now.clone(), most.clone());
        Backend::serve(move |_req: Request<hyper::body::Incoming>| {
            let (now, most) = (now.clone(), most.clone());
            async move {
                let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(n, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(300)).await;
                now.fetch_sub(1, Ordering::SeqCst);
                http::Response::new(Full::new(Bytes::from_static(b"done")))
            }
        })
        .await
    };
    let ca = TestCa::new("test CA");
    let files = tempfile::tempdir().unwrap();
    let mut dynamic = certificate(&ca, files.path(), &["app.test"]);
    dynamic.push_str(&router("app", "app.test", &slow.url(), &[]));
    let (_gw, port) = start(
        &dynamic,
        &[
            "--entryPoints.websecure.http2.maxConcurrentStreams=2",
            "--entryPoints.websecure.limits.maxHeaderBytes=8192",
            "--entryPoints.websecure.limits.maxRequestBodyBytes=1000",
        ],
    )
    .await;
    let client = TlsClient::trusting(ca.pem().as_bytes());
    let conn = ready(&client, port, "app.test").await;
    most.store(0, Ordering::SeqCst);

    // Five requests at once on one connection: two streams at a time.
    let mut tasks = Vec::new();
    for i in 0..5 {
        let mut send = conn.sender();
        tasks.push(tokio::spawn(async move {
            let req = Request::get(format!("https://app.test/{i}"))
                .body(())
                .unwrap();
            let mut stream = send.send_request(req).await.expect("stream");
            stream.finish().await.expect("finish");
            stream.recv_response().await.expect("answer").status()
        }));
    }
    for task in tasks {
        assert_eq!(task.await.unwrap(), StatusCode::OK);
    }
    let most = most.load(Ordering::SeqCst);
    assert!(
        (1..=2).contains(&most),
        "{most} requests in progress at once; maxConcurrentStreams is 2"
    );

    // A head over maxHeaderBytes: gangway tells clients its limit in its
    // SETTINGS, so a conforming client does not send it ...
    let mut conn = connect(&client, port, "app.test").await.unwrap();
    let _ = conn.get("app.test", "/").await;
    let big = "x".repeat(20_000);
    let req = Request::get("https://app.test/")
        .header("x-big", big.as_str())
        .body(Bytes::new())
        .unwrap();
    let err = conn.send(req).await.expect_err("refused");
    assert!(err.contains("8192"), "{err}");
    // ... and one that sends it anyway gets 431, as over HTTP/2.
    let status = raw::oversized_request(&conn.conn, "app.test", &big).await;
    assert_eq!(status, 431);

    // Bodies past maxRequestBodyBytes: refused from their declared length,
    // or cut where they cross it when none is declared.
    let mut conn = connect(&client, port, "app.test").await.unwrap();
    let body = Bytes::from(vec![b'b'; 5000]);
    let declared = Request::post("https://app.test/up")
        .header("content-length", body.len())
        .body(body.clone())
        .unwrap();
    let got = conn.send(declared).await.expect("answer");
    assert_eq!(got.status, StatusCode::PAYLOAD_TOO_LARGE);
    let streamed = Request::post("https://app.test/up").body(body).unwrap();
    let got = conn.send(streamed).await.expect("answer");
    assert_eq!(got.status, StatusCode::PAYLOAD_TOO_LARGE);
    // A body shorter than its declared length is the client's fault.
    let short = Request::post("https://app.test/up")
        .header("content-length", 10)
        .body(Bytes::from_static(b"short"))
        .unwrap();
    let got = conn.send(short).await.expect("answer");
    assert_eq!(got.status, StatusCode::BAD_REQUEST);
}

/// `readTimeout` bounds a request body that stops coming, as on TCP.
#[tokio::test]
async fn a_body_that_stops_coming_is_cut_at_the_read_timeout() {
    let uploads = body_echo().await;
    let ca = TestCa::new("test CA");
    let files = tempfile::tempdir().unwrap();
    let mut dynamic = certificate(&ca, files.path(), &["upload.test"]);
    dynamic.push_str(&router("upload", "upload.test", &uploads.url(), &[]));
    let (_gw, port) = start(
        &dynamic,
        &["--entryPoints.websecure.transport.respondingTimeouts.readTimeout=1s"],
    )
    .await;
    let client = TlsClient::trusting(ca.pem().as_bytes());
    let conn = ready(&client, port, "upload.test").await;
    let mut send = conn.sender();
    let req = Request::post("https://upload.test/slow")
        .header("content-length", 100)
        .body(())
        .unwrap();
    let mut stream = send.send_request(req).await.expect("stream");
    stream
        .send_data(Bytes::from_static(b"ten bytes."))
        .await
        .expect("first part");
    // The other 90 bytes never come, and the stream stays open.
    let resp = tokio::time::timeout(Duration::from_secs(20), stream.recv_response())
        .await
        .expect("an answer before the client gives up")
        .expect("answer");
    assert_eq!(resp.status(), StatusCode::REQUEST_TIMEOUT);
}

#[tokio::test]
async fn an_idle_connection_is_closed_after_the_idle_timeout() {
    let app = Backend::echo("app").await;
    let ca = TestCa::new("test CA");
    let files = tempfile::tempdir().unwrap();
    let mut dynamic = certificate(&ca, files.path(), &["app.test"]);
    dynamic.push_str(&router("app", "app.test", &app.url(), &[]));
    let (_gw, port) = start(
        &dynamic,
        &["--entryPoints.websecure.transport.respondingTimeouts.idleTimeout=1s"],
    )
    .await;
    let client = TlsClient::trusting(ca.pem().as_bytes());
    let mut conn = ready(&client, port, "app.test").await;
    let got = conn.get("app.test", "/").await.expect("GET");
    assert_eq!(got.status, StatusCode::OK);
    let closed = tokio::time::timeout(Duration::from_secs(20), conn.closed())
        .await
        .expect("the idle connection was closed");
    // Closed by gangway on purpose, not dropped by QUIC's own idle timer
    // (which gangway's pings keep away from a live client).
    assert!(
        matches!(closed, quinn::ConnectionError::ApplicationClosed(_)),
        "{closed}"
    );
}

#[tokio::test]
async fn sigterm_lets_an_http3_request_in_flight_finish() {
    let arrived = Arc::new(AtomicUsize::new(0));
    let slow = {
        let arrived = arrived.clone();
        Backend::serve(move |req: Request<hyper::body::Incoming>| {
            let arrived = arrived.clone();
            async move {
                if req.uri().path() == "/slow" {
                    arrived.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(1500)).await;
                }
                http::Response::new(Full::new(Bytes::from_static(b"late")))
            }
        })
        .await
    };
    let ca = TestCa::new("test CA");
    let files = tempfile::tempdir().unwrap();
    let mut dynamic = certificate(&ca, files.path(), &["app.test"]);
    dynamic.push_str(&router("app", "app.test", &slow.url(), &[]));
    let (mut gw, port) = start(
        &dynamic,
        &["--entryPoints.websecure.transport.lifeCycle.graceTimeOut=10s"],
    )
    .await;
    let client = TlsClient::trusting(ca.pem().as_bytes());
    let mut conn = ready(&client, port, "app.test").await;
    let mut send = conn.sender();
    let in_flight = tokio::spawn(async move {
        let req = Request::get("https://app.test/slow").body(()).unwrap();
        let mut stream = send.send_request(req).await.expect("stream");
        stream.finish().await.expect("finish");
        let resp = stream.recv_response().await.expect("answer");
        let mut body = Vec::new();
        while let Some(chunk) = stream.recv_data().await.expect("body") {
            use bytes::Buf;
            body.extend_from_slice(chunk.chunk());
        }
        (resp.status(), body)
    });
    // The request has reached the server when gangway is told to stop.
    eventually(Duration::from_secs(5), "request in flight", || async {
        arrived.load(Ordering::SeqCst) == 1
    })
    .await;
    gw.sigterm();
    let (status, body) = in_flight.await.expect("the request finished");
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, b"late");
    // New requests are refused once draining began (GOAWAY) ...
    assert!(conn.get("app.test", "/").await.is_err());
    // ... and gangway exits.
    eventually(Duration::from_secs(15), "gangway exits", || {
        let done = gw.exited().is_some();
        async move { done }
    })
    .await;
}

/// An HTTP/3 request written by hand, for what a conforming client would
/// not send.
mod raw {
    /// A QUIC variable-length integer (RFC 9000 §16).
    fn varint(out: &mut Vec<u8>, v: u64) {
        match v {
            0..=63 => out.push(v as u8),
            64..=16383 => out.extend_from_slice(&((v as u16) | 0x4000).to_be_bytes()),
            _ => out.extend_from_slice(&((v as u32) | 0x8000_0000).to_be_bytes()),
        }
    }

    /// A QPACK/HPACK prefixed integer with `bits` bits in the first byte.
    fn prefixed(out: &mut Vec<u8>, bits: u8, flags: u8, mut v: u64) {
        let max = (1u64 << bits) - 1;
        if v < max {
            out.push(flags | v as u8);
            return;
        }
        out.push(flags | max as u8);
        v -= max;
        while v >= 128 {
            out.push((v % 128) as u8 | 0x80);
            v /= 128;
        }
        out.push(v as u8);
    }

    /// A field line with a literal name and value, neither Huffman-coded.
    fn literal(out: &mut Vec<u8>, name: &str, value: &str) {
        prefixed(out, 3, 0b0010_0000, name.len() as u64);
        out.extend_from_slice(name.as_bytes());
        prefixed(out, 7, 0, value.len() as u64);
        out.extend_from_slice(value.as_bytes());
    }

    fn read_prefixed(bytes: &[u8], at: &mut usize, bits: u8) -> u64 {
        let max = (1u64 << bits) - 1;
        let mut v = u64::from(bytes[*at]) & max;
        *at += 1;
        if v == max {
            let mut shift = 0;
            loop {
                let b = bytes[*at];
                *at += 1;
                v += u64::from(b & 0x7f) << shift;
                shift += 7;
                if b & 0x80 == 0 {
                    break;
                }
            }
        }
        v
    }

    /// Digits in HPACK's Huffman code (RFC 7541 Appendix B): `0`-`2` take
    /// five bits, `3`-`9` six.
    fn huffman_digits(bytes: &[u8]) -> String {
        let bits: Vec<u8> = bytes
            .iter()
            .flat_map(|b| (0..8).rev().map(move |i| (b >> i) & 1))
            .collect();
        let take = |at: usize, n: usize| {
            bits.get(at..at + n)
                .map(|s| s.iter().fold(0u8, |acc, b| acc << 1 | b))
        };
        let mut out = String::new();
        let mut at = 0;
        while let Some(five) = take(at, 5) {
            if five <= 2 {
                out.push(char::from(b'0' + five));
                at += 5;
            } else if let Some(six) = take(at, 6).filter(|s| (0b011001..=0b011111).contains(s)) {
                out.push(char::from(b'3' + (six - 0b011001)));
                at += 6;
            } else {
                break; // padding (all ones)
            }
        }
        out
    }

    /// The `:status` of an answer's HEADERS frame, from QPACK's static
    /// table or a literal with its name from it.
    fn status(frame: &[u8]) -> u16 {
        let mut at = 2; // required insert count 0, base 0
        let first = frame[at];
        if first & 0b1100_0000 == 0b1100_0000 {
            let index = read_prefixed(frame, &mut at, 6);
            return match index {
                24 => 103,
                25 => 200,
                26 => 304,
                27 => 404,
                28 => 503,
                63 => 100,
                64 => 204,
                65 => 206,
                66 => 302,
                67 => 400,
                68 => 403,
                69 => 421,
                70 => 425,
                71 => 500,
                other => panic!("static index {other} is not a status"),
            };
        }
        assert_eq!(
            first & 0b1111_0000,
            0b0101_0000,
            "a literal with a static name"
        );
        let _name = read_prefixed(frame, &mut at, 4);
        let huffman = frame[at] & 0x80 != 0;
        let len = read_prefixed(frame, &mut at, 7) as usize;
        let value = &frame[at..at + len];
        let text = if huffman {
            huffman_digits(value)
        } else {
            String::from_utf8_lossy(value).into_owned()
        };
        text.parse().expect("a status")
    }

    /// Sends a GET for `host` with an `x-big` field of `big` on a new
    /// stream of `conn`, and returns the answer's status.
    pub async fn oversized_request(conn: &quinn::Connection, host: &str, big: &str) -> u16 {
        let mut block = vec![0, 0];
        literal(&mut block, ":method", "GET");
        literal(&mut block, ":scheme", "https");
        literal(&mut block, ":authority", host);
        literal(&mut block, ":path", "/");
        literal(&mut block, "x-big", big);
        let mut frame = Vec::new();
        varint(&mut frame, 1); // HEADERS
        varint(&mut frame, block.len() as u64);
        frame.extend_from_slice(&block);
        let (mut send, mut recv) = conn.open_bi().await.expect("stream");
        send.write_all(&frame).await.expect("write");
        send.finish().expect("finish");
        let answer = recv.read_to_end(1 << 20).await.expect("answer");
        let mut at = 0;
        let kind = answer[at];
        at += 1;
        assert_eq!(kind, 1, "a HEADERS frame first");
        let len = answer[at] as usize;
        assert!(len < 64, "a short head");
        at += 1;
        status(&answer[at..at + len])
    }
}
