//! The middlewares Traefik v3 has beyond the common ones, through the real
//! binary: `digestAuth` (with curl's own digest client), `contentType`,
//! `passTLSClientCert` (a client certificate over TLS, with curl) and
//! `grpcWeb` (gRPC-Web calls translated to a real tonic gRPC server).

use crate::support;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bytes::{Buf as _, Bytes};
use http::{Request, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use md5::{Digest as _, Md5};
use std::convert::Infallible;
use std::future::{Ready, ready};
use std::net::SocketAddr;
use std::time::Duration;
use support::tls::TestCa;
use support::{Backend, Gangway, eventually, free_port};
use tokio::net::TcpListener;
use tokio::process::Command;
use tonic::Status;
use tonic::codegen::{BoxFuture, Context, Poll, Service};
use tonic::server::{ServerStreamingService, UnaryService};
use tonic_prost::ProstCodec;

const WAIT: Duration = Duration::from_secs(10);

/// A router `app` for `app.test` using `middlewares`, a router `plain`
/// without, both to `backend`, and the middleware definitions in `defs`.
fn config(middlewares: &[&str], backend: &str, defs: &str) -> String {
    let list = middlewares
        .iter()
        .map(|m| format!("{m:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "[http.routers.app]\nrule = \"Host(`app.test`)\"\nservice = \"app\"\nmiddlewares = [{list}]\n\
         [http.services.app.loadBalancer]\n[[http.services.app.loadBalancer.servers]]\nurl = \"{backend}\"\n\
         [http.routers.plain]\nrule = \"Host(`plain.test`)\"\nservice = \"app\"\n{defs}"
    )
}

async fn start(conf: &str, extra: &[&str]) -> Gangway {
    let gw = Gangway::with_file(conf, extra).await;
    eventually(WAIT, "configuration applied", || async {
        gw.get("plain.test", "/").await.status == StatusCode::OK
    })
    .await;
    gw
}

fn md5_hex(parts: &[&str]) -> String {
    let mut h = Md5::new();
    h.update(parts.join(":").as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Runs curl with `args`; its output and the last status (`-w`). Async:
/// the test's backends run on the same thread meanwhile.
async fn curl(args: &[&str]) -> (String, u16) {
    let out = Command::new("curl")
        .args(["-s", "--max-time", "10", "-w", "\n%{http_code}"])
        .args(args)
        .output()
        .await
        .expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (body.to_owned(), code.trim().parse().unwrap_or(0))
}

/// The `key="value"` of a challenge.
fn param<'a>(challenge: &'a str, key: &str) -> &'a str {
    let at = challenge
        .find(&format!("{key}=\""))
        .unwrap_or_else(|| panic!("{key} in {challenge}"))
        + key.len()
        + 2;
    let rest = &challenge[at..];
    &rest[..rest.find('"').expect("closing quote")]
}

// === digestAuth ===

#[tokio::test]
async fn digest_auth_lets_curl_in_with_the_right_password_only() {
    let b = Backend::echo("b").await;
    let files = tempfile::tempdir().unwrap();
    // One user from a file made as htdigest makes it, one in the list.
    let path = files.path().join("users.htdigest");
    std::fs::write(
        &path,
        format!(
            "# made by htdigest\nbob:traefik:{}\n",
            md5_hex(&["bob", "traefik", "hunter2"])
        ),
    )
    .unwrap();
    let defs = format!(
        "[http.middlewares.auth.digestAuth]\nusers = [\"ann:traefik:{}\"]\nusersFile = {:?}\n\
         headerField = \"X-WebAuth-User\"\nremoveHeader = true\n",
        md5_hex(&["ann", "traefik", "secret"]),
        path.display().to_string()
    );
    let gw = start(&config(&["auth"], &b.url(), &defs), &[]).await;
    let url = gw.url("/dir/index.html?x=1");

    // No credentials: a digest challenge, as Traefik sends it.
    let got = gw.get("app.test", "/dir/index.html").await;
    assert_eq!(got.status, StatusCode::UNAUTHORIZED);
    let challenge = got.headers["www-authenticate"].to_str().unwrap().to_owned();
    assert!(
        challenge.starts_with("Digest realm=\"traefik\""),
        "{challenge}"
    );
    assert!(challenge.contains("qop=\"auth\"") && challenge.contains("algorithm=\"MD5\""));

    for (user, password) in [("ann", "secret"), ("bob", "hunter2")] {
        let (body, code) = curl(&[
            "--digest",
            "-u",
            &format!("{user}:{password}"),
            "-H",
            "Host: app.test",
            &url,
        ])
        .await;
        assert_eq!(code, 200, "{user}: {body}");
        let seen: serde_json::Value = serde_json::from_str(&body).expect("echo");
        assert_eq!(seen["headers"]["x-webauth-user"][0], user);
        assert!(
            seen["headers"].get("authorization").is_none(),
            "removeHeader: {seen}"
        );
    }
    let (_, code) = curl(&["--digest", "-u", "ann:wrong", "-H", "Host: app.test", &url]).await;
    assert_eq!(code, 401, "a wrong password is refused");
    let (_, code) = curl(&["--digest", "-u", "eve:secret", "-H", "Host: app.test", &url]).await;
    assert_eq!(code, 401, "an unknown user is refused");

    // A captured answer replayed: the nonce count did not advance, so the
    // client is told its nonce is stale; a forged nonce is no better.
    let nonce = param(&challenge, "nonce").to_owned();
    let opaque = param(&challenge, "opaque").to_owned();
    let answer = |nonce: &str, nc: &str| {
        let ha1 = md5_hex(&["ann", "traefik", "secret"]);
        let ha2 = md5_hex(&["GET", "/dir/index.html"]);
        let response = md5_hex(&[&ha1, nonce, nc, "c0ffee", "auth", &ha2]);
        format!(
            "Digest username=\"ann\", realm=\"traefik\", nonce=\"{nonce}\", uri=\"/dir/index.html\", \
             algorithm=MD5, qop=auth, nc={nc}, cnonce=\"c0ffee\", response=\"{response}\", opaque=\"{opaque}\""
        )
    };
    let send = |auth: String| {
        gw.send(
            Request::get(gw.url("/dir/index.html"))
                .header("host", "app.test")
                .header("authorization", auth)
                .body(Full::default())
                .unwrap(),
        )
    };
    assert_eq!(
        send(answer(&nonce, "00000001")).await.status,
        StatusCode::OK
    );
    let replay = send(answer(&nonce, "00000001")).await;
    assert_eq!(replay.status, StatusCode::UNAUTHORIZED);
    let again = replay.headers["www-authenticate"].to_str().unwrap();
    assert!(again.contains("stale=true"), "{again}");
    assert_eq!(
        send(answer(&nonce, "00000002")).await.status,
        StatusCode::OK
    );
    let forged = send(answer("0123456789abcdef0123456789abcdef", "00000001")).await;
    assert_eq!(forged.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_bad_htdigest_line_disables_only_its_routers() {
    let b = Backend::echo("b").await;
    let defs = "[http.middlewares.auth.digestAuth]\nusers = [\"ann:secret\"]\n";
    let gw = start(&config(&["auth"], &b.url(), defs), &[]).await;
    assert_eq!(gw.get("app.test", "/").await.status, StatusCode::NOT_FOUND);
    assert_eq!(gw.get("plain.test", "/").await.status, StatusCode::OK);
}

// === contentType ===

#[tokio::test]
async fn content_type_detects_a_missing_type_only_where_it_is_used() {
    let b = Backend::serve(|req: Request<Incoming>| async move {
        match req.uri().path() {
            "/page" => http::Response::new(Full::new(Bytes::from_static(
                b"\n  <!DOCTYPE html><html><body>hello</body></html>",
            ))),
            "/png" => http::Response::new(Full::new(Bytes::from_static(
                b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR",
            ))),
            "/typed" => {
                let mut r = http::Response::new(Full::new(Bytes::from_static(b"<html>")));
                r.headers_mut()
                    .insert("content-type", "application/x-mine".parse().unwrap());
                r
            }
            _ => http::Response::new(Full::new(Bytes::from_static(b"ok"))),
        }
    })
    .await;
    let defs = "[http.middlewares.sniff.contentType]\n\
                [http.middlewares.off.contentType]\nautoDetect = false\n\
                [http.routers.off]\nrule = \"Host(`off.test`)\"\nservice = \"app\"\nmiddlewares = [\"off\"]\n";
    let gw = start(&config(&["sniff"], &b.url(), defs), &[]).await;
    let ct = |got: &support::Got| {
        got.headers
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_owned())
    };
    let page = gw.get("app.test", "/page").await;
    assert_eq!(ct(&page).as_deref(), Some("text/html; charset=utf-8"));
    assert!(
        page.text().contains("hello"),
        "body intact: {}",
        page.text()
    );
    assert_eq!(
        ct(&gw.get("app.test", "/png").await).as_deref(),
        Some("image/png")
    );
    assert_eq!(
        ct(&gw.get("app.test", "/typed").await).as_deref(),
        Some("application/x-mine"),
        "a type the server set is kept"
    );
    // Without the middleware, or with autoDetect = false, nothing is added,
    // as in Traefik v3.
    assert_eq!(ct(&gw.get("plain.test", "/page").await), None);
    assert_eq!(ct(&gw.get("off.test", "/page").await), None);
}

// === passTLSClientCert ===

#[tokio::test]
async fn pass_tls_client_cert_hands_the_certificate_to_the_server() {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;

    let b = Backend::echo("b").await;
    let files = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let p = files.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let ca = TestCa::new("test CA");
    let (chain, key) = ca.issue(&["app.test", "plain.test"]);
    let clients = TestCa::new("clients CA");
    let (client_chain, client_key) = clients.issue_client("ann");
    let (cert_file, key_file) = (write("c.pem", &chain), write("c.key", &key));
    let (client_cert, client_key_file) = (
        write("client.pem", &client_chain),
        write("client.key", &client_key),
    );
    let clients_ca = write("clients-ca.pem", &clients.pem());
    let tls_port = free_port();
    let defs = format!(
        "[http.routers.app.tls]\noptions = \"mtls\"\n\
         [http.routers.tlsplain]\nrule = \"Host(`plain.test`)\"\nservice = \"app\"\nmiddlewares = [\"cert\"]\n\
         [http.routers.tlsplain.tls]\n\
         [http.middlewares.cert.passTLSClientCert]\npem = true\n\
         [http.middlewares.cert.passTLSClientCert.info]\nnotBefore = true\nsans = true\n\
         [http.middlewares.cert.passTLSClientCert.info.subject]\ncommonName = true\n\
         [http.middlewares.cert.passTLSClientCert.info.issuer]\ncommonName = true\n\
         [tls.options.mtls.clientAuth]\nclientAuthType = \"RequireAndVerifyClientCert\"\ncaFiles = [{clients_ca:?}]\n\
         [[tls.certificates]]\ncertFile = {cert_file:?}\nkeyFile = {key_file:?}\n"
    );
    let gw = start(
        &config(&["cert"], &b.url(), &defs),
        &[&format!(
            "--entryPoints.websecure.address=127.0.0.1:{tls_port}"
        )],
    )
    .await;
    let resolve = |host: &str| format!("{host}:{tls_port}:127.0.0.1");
    let https = |host: &str| format!("https://{host}:{tls_port}/");
    let mut served = (String::new(), 0);
    let deadline = tokio::time::Instant::now() + WAIT;
    while tokio::time::Instant::now() < deadline {
        served = curl(&[
            "-k",
            "--cert",
            &client_cert,
            "--key",
            &client_key_file,
            "--resolve",
            &resolve("app.test"),
            &https("app.test"),
        ])
        .await;
        if served.1 == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let ok = served.1 == 200;
    assert!(ok, "mTLS router not served: {served:?}\n{}", gw.log());
    let seen: serde_json::Value = serde_json::from_str(&served.0).expect("echo");
    let leaf = CertificateDer::pem_slice_iter(client_chain.as_bytes())
        .next()
        .expect("a certificate")
        .expect("PEM");
    let escaped: String = STANDARD
        .encode(leaf.as_ref())
        .replace('+', "%2B")
        .replace('/', "%2F")
        .replace('=', "%3D");
    assert_eq!(seen["headers"]["x-forwarded-tls-client-cert"][0], escaped);
    let info = seen["headers"]["x-forwarded-tls-client-cert-info"][0]
        .as_str()
        .expect("info header");
    assert!(
        info.starts_with("Subject%3D%22CN%3Dann%22%3BIssuer%3D%22CN%3Dclients+CA%22%3BNB%3D%22"),
        "{info}"
    );
    assert!(info.ends_with("%3BSAN%3D%22%22"), "{info}");

    // Over TLS without a client certificate, and a client forging both
    // headers: the server sees neither.
    let (body, code) = curl(&[
        "-k",
        "-H",
        "X-Forwarded-Tls-Client-Cert: forged",
        "-H",
        "X-Forwarded-Tls-Client-Cert-Info: Subject%3D%22CN%3Dadmin%22",
        "--resolve",
        &resolve("plain.test"),
        &https("plain.test"),
    ])
    .await;
    assert_eq!(code, 200, "{body}");
    let seen: serde_json::Value = serde_json::from_str(&body).expect("echo");
    assert!(
        seen["headers"].get("x-forwarded-tls-client-cert").is_none(),
        "{seen}"
    );
    assert!(
        seen["headers"]
            .get("x-forwarded-tls-client-cert-info")
            .is_none(),
        "{seen}"
    );
}

// === grpcWeb ===

#[derive(Clone, PartialEq, prost::Message)]
struct EchoRequest {
    #[prost(string, tag = "1")]
    text: String,
    #[prost(uint32, tag = "2")]
    count: u32,
}

#[derive(Clone, PartialEq, prost::Message)]
struct EchoReply {
    #[prost(string, tag = "1")]
    text: String,
    #[prost(uint32, tag = "2")]
    seq: u32,
}

struct Say;

impl UnaryService<EchoRequest> for Say {
    type Response = EchoReply;
    type Future = Ready<Result<tonic::Response<EchoReply>, Status>>;

    fn call(&mut self, request: tonic::Request<EchoRequest>) -> Self::Future {
        let text = request.into_inner().text;
        ready(Ok(tonic::Response::new(EchoReply {
            text: format!("echo: {text}"),
            seq: 0,
        })))
    }
}

type ReplyStream = tokio_stream::Iter<std::vec::IntoIter<Result<EchoReply, Status>>>;

/// `count` replies, then an error that only the trailers carry.
struct CountThenFail;

impl ServerStreamingService<EchoRequest> for CountThenFail {
    type Response = EchoReply;
    type ResponseStream = ReplyStream;
    type Future = Ready<Result<tonic::Response<ReplyStream>, Status>>;

    fn call(&mut self, request: tonic::Request<EchoRequest>) -> Self::Future {
        let EchoRequest { text, count } = request.into_inner();
        let mut items: Vec<Result<EchoReply, Status>> = (1..=count)
            .map(|seq| {
                Ok(EchoReply {
                    text: format!("{text} #{seq}"),
                    seq,
                })
            })
            .collect();
        items.push(Err(Status::not_found(format!("ran out of {text}"))));
        ready(Ok(tonic::Response::new(tokio_stream::iter(items))))
    }
}

#[derive(Clone)]
struct EchoService;

impl Service<http::Request<tonic::body::Body>> for EchoService {
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Infallible>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<tonic::body::Body>) -> Self::Future {
        Box::pin(async move {
            let mut grpc =
                tonic::server::Grpc::new(ProstCodec::<EchoReply, EchoRequest>::default());
            let resp = match req.uri().path() {
                "/test.Echo/Say" => grpc.unary(Say, req).await,
                "/test.Echo/CountThenFail" => grpc.server_streaming(CountThenFail, req).await,
                other => Status::unimplemented(format!("no method {other}")).into_http(),
            };
            Ok(resp)
        })
    }
}

async fn grpc_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let incoming = tonic::transport::server::TcpIncoming::from(listener);
    tokio::spawn(async move {
        let _ = tonic::transport::Server::builder()
            .serve_with_incoming(EchoService, incoming)
            .await;
    });
    addr
}

/// One gRPC message: not compressed, its length, the protobuf.
fn framed(msg: &EchoRequest) -> Vec<u8> {
    let body = prost::Message::encode_to_vec(msg);
    let mut out = vec![0u8];
    out.extend_from_slice(&u32::try_from(body.len()).unwrap().to_be_bytes());
    out.extend_from_slice(&body);
    out
}

/// The messages of a gRPC-Web answer: (flag, payload) each.
fn messages(mut body: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut out = Vec::new();
    while body.len() >= 5 {
        let flag = body.get_u8();
        let len = body.get_u32() as usize;
        out.push((flag, body[..len].to_vec()));
        body.advance(len);
    }
    assert!(body.is_empty(), "a partial message is left: {body:?}");
    out
}

#[tokio::test]
async fn grpc_web_calls_reach_a_grpc_server_and_its_trailers_come_back_in_the_body() {
    let server = grpc_server().await;
    let defs = "[http.middlewares.web.grpcWeb]\nallowOrigins = [\"https://app.example\"]\n";
    let gw = Gangway::with_file(&config(&["web"], &format!("h2c://{server}"), defs), &[]).await;
    let call = |path: &str, ct: &str, body: Vec<u8>, origin: &str| {
        gw.send(
            Request::post(gw.url(path))
                .header("host", "app.test")
                .header("content-type", ct)
                .header("x-grpc-web", "1")
                .header("origin", origin)
                .body(Full::new(Bytes::from(body)))
                .unwrap(),
        )
    };
    let hello = framed(&EchoRequest {
        text: "hello".into(),
        count: 0,
    });
    let say = || {
        call(
            "/test.Echo/Say",
            "application/grpc-web+proto",
            hello.clone(),
            "https://app.example",
        )
    };
    eventually(WAIT, "the grpcWeb router answers", || async {
        say().await.status == StatusCode::OK
    })
    .await;
    let got = say().await;
    assert_eq!(got.status, StatusCode::OK, "{}\n{}", got.text(), gw.log());
    // The server's type, made gRPC-Web (tonic answers `application/grpc`).
    assert_eq!(got.headers["content-type"], "application/grpc-web");
    assert_eq!(
        got.headers["access-control-allow-origin"],
        "https://app.example"
    );
    let msgs = messages(&got.body);
    assert_eq!(msgs.len(), 2, "{msgs:?}");
    let reply: EchoReply = prost::Message::decode(&msgs[0].1[..]).expect("reply");
    assert_eq!((msgs[0].0, reply.text.as_str()), (0, "echo: hello"));
    assert_eq!(msgs[1].0, 0x80, "the trailers come last");
    let trailers = String::from_utf8(msgs[1].1.clone()).unwrap();
    assert!(trailers.contains("grpc-status: 0\r\n"), "{trailers}");

    // grpc-web-text: base64 both ways; a streamed answer ending in an error.
    let count = framed(&EchoRequest {
        text: "n".into(),
        count: 3,
    });
    let got = call(
        "/test.Echo/CountThenFail",
        "application/grpc-web-text",
        STANDARD.encode(count).into_bytes(),
        "https://elsewhere.example",
    )
    .await;
    assert_eq!(got.status, StatusCode::OK, "{}", got.text());
    assert_eq!(got.headers["content-type"], "application/grpc-web-text");
    assert!(
        got.headers.get("access-control-allow-origin").is_none(),
        "an origin not allowed gets no CORS grant"
    );
    let decoded = STANDARD.decode(got.text().trim()).expect("base64 body");
    let msgs = messages(&decoded);
    let texts: Vec<String> = msgs
        .iter()
        .filter(|(flag, _)| *flag == 0)
        .map(|(_, m)| {
            <EchoReply as prost::Message>::decode(&m[..])
                .expect("reply")
                .text
        })
        .collect();
    assert_eq!(texts, ["n #1", "n #2", "n #3"]);
    let trailers = String::from_utf8(msgs.last().unwrap().1.clone()).unwrap();
    assert!(trailers.contains("grpc-status: 5\r\n"), "{trailers}");
    assert!(
        trailers.contains("grpc-message: ran%20out%20of%20n"),
        "{trailers}"
    );

    // The browser's preflight is answered here for an allowed origin.
    let pre = gw
        .send(
            Request::options(gw.url("/test.Echo/Say"))
                .header("host", "app.test")
                .header("origin", "https://app.example")
                .header("access-control-request-method", "POST")
                .header("access-control-request-headers", "content-type,x-grpc-web")
                .body(Full::default())
                .unwrap(),
        )
        .await;
    assert_eq!(pre.status, StatusCode::OK);
    assert_eq!(
        pre.headers["access-control-allow-origin"],
        "https://app.example"
    );
    assert_eq!(pre.headers["access-control-allow-methods"], "POST");
}
