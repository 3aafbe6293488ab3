//! Traefik's entry-point options that shape connections and requests,
//! against the real binary with real sockets: `http.maxHeaderBytes`,
//! `transport.keepAliveMaxRequests`/`keepAliveMaxTime` (HTTP/1 and HTTP/2),
//! `http.encodeQuerySemicolons`, `forwardedHeaders.notAppendXForwardedFor`
//! (and `global.`'s), `reusePort` (TCP and UDP) and `http.redirections.entryPoint.priority`.

use crate::support;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::Full;
use std::time::Duration;
use support::{Backend, Gangway, eventually, free_port, one_route, raw_exchange};

fn request(gw: &Gangway, path: &str) -> http::request::Builder {
    Request::get(gw.url(path)).header("host", "app.test")
}

/// Starts gangway with `conf` and `flags` and waits until the file
/// provider's routers serve `path`.
async fn ready(conf: &str, flags: &[&str], path: &str) -> Gangway {
    let gw = Gangway::with_file(conf, flags).await;
    eventually(
        Duration::from_secs(10),
        "the routers are loaded",
        || async { gw.get("app.test", path).await.status != StatusCode::NOT_FOUND },
    )
    .await;
    gw
}

async fn app() -> (Backend, String) {
    let b = Backend::echo("app").await;
    let conf = one_route("app", "Host(`app.test`)", &[&b.url()]);
    (b, conf)
}

#[tokio::test]
async fn http_max_header_bytes_bounds_the_request_head_under_traefiks_name() {
    let (_b, conf) = app().await;
    let gw = ready(&conf, &["--entryPoints.web.http.maxHeaderBytes=16384"], "/").await;
    let within = request(&gw, "/")
        .header("x-pad", "a".repeat(8_000))
        .body(Full::new(Bytes::new()))
        .unwrap();
    assert_eq!(gw.send(within).await.status, StatusCode::OK);
    // Under gangway's own default (64 KiB) this head would pass.
    let past = request(&gw, "/")
        .header("x-pad", "a".repeat(20_000))
        .body(Full::new(Bytes::new()))
        .unwrap();
    assert_eq!(
        gw.send(past).await.status,
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE
    );
}

/// Three requests sent at once on one connection.
const THREE: &[u8] = b"GET /1 HTTP/1.1\r\nHost: app.test\r\n\r\n\
GET /2 HTTP/1.1\r\nHost: app.test\r\n\r\n\
GET /3 HTTP/1.1\r\nHost: app.test\r\n\r\n";

#[tokio::test]
async fn keep_alive_max_requests_closes_the_connection_after_its_last_answer() {
    let (_b, conf) = app().await;
    let gw = ready(
        &conf,
        &["--entryPoints.web.transport.keepAliveMaxRequests=2"],
        "/",
    )
    .await;
    let (out, closed) = raw_exchange(&gw, THREE, Duration::from_secs(5)).await;
    assert_eq!(out.matches("HTTP/1.1 200").count(), 2, "{out}");
    assert!(closed, "the connection stays open:\n{out}");
    let second = out.rfind("HTTP/1.1 200").unwrap();
    assert!(
        out[second..]
            .to_ascii_lowercase()
            .contains("connection: close"),
        "{out}"
    );
    assert!(
        !out[..second]
            .to_ascii_lowercase()
            .contains("connection: close"),
        "{out}"
    );

    // Without the option the three are answered and the connection stays.
    let gw = ready(&conf, &[], "/").await;
    let (out, closed) = raw_exchange(&gw, THREE, Duration::from_millis(500)).await;
    assert_eq!(out.matches("HTTP/1.1 200").count(), 3, "{out}");
    assert!(!closed, "{out}");
}

/// Sends a GET for `/` with `host` on an HTTP/2 connection and returns
/// its status, or the error if the stream could not be opened or answered.
async fn h2_get(client: &mut h2::client::SendRequest<Bytes>) -> Result<StatusCode, h2::Error> {
    let ready = client.clone().ready().await?;
    *client = ready;
    let req = Request::get("http://app.test/").body(()).unwrap();
    let (resp, _) = client.send_request(req, true)?;
    let resp = resp.await?;
    let status = resp.status();
    let mut body = resp.into_body();
    while let Some(chunk) = body.data().await {
        let chunk = chunk?;
        let _ = body.flow_control().release_capacity(chunk.len());
    }
    Ok(status)
}

#[tokio::test]
async fn keep_alive_max_requests_ends_an_http2_connection_with_a_graceful_goaway() {
    let (_b, conf) = app().await;
    let gw = ready(
        &conf,
        &["--entryPoints.web.transport.keepAliveMaxRequests=3"],
        "/",
    )
    .await;
    // HTTP/2 with prior knowledge on the plain entry point.
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", gw.port))
        .await
        .expect("connect");
    let (mut client, conn) = h2::client::handshake(tcp).await.expect("h2 handshake");
    let conn = tokio::spawn(conn);
    // The connection's three are answered, one after the other.
    for i in 1..=3 {
        assert_eq!(
            h2_get(&mut client).await.map_err(|e| e.to_string()),
            Ok(StatusCode::OK),
            "request {i}"
        );
    }
    // Then the server has said GOAWAY: the connection ends cleanly once
    // its streams are done, and no fourth stream is taken on it.
    let ended = tokio::time::timeout(Duration::from_secs(10), conn)
        .await
        .expect("the connection ends after its last request")
        .expect("connection task");
    assert!(ended.is_ok(), "a graceful end, not an error: {ended:?}");
    assert!(h2_get(&mut client).await.is_err());

    // Without the option, the same connection takes more.
    let gw = ready(&conf, &[], "/").await;
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", gw.port))
        .await
        .expect("connect");
    let (mut client, conn) = h2::client::handshake(tcp).await.expect("h2 handshake");
    let conn = tokio::spawn(conn);
    for i in 1..=5 {
        assert_eq!(
            h2_get(&mut client).await.map_err(|e| e.to_string()),
            Ok(StatusCode::OK),
            "request {i}"
        );
    }
    assert!(!conn.is_finished());
}

#[tokio::test]
async fn keep_alive_max_time_closes_an_old_connection_after_its_request() {
    let (_b, conf) = app().await;
    let gw = ready(
        &conf,
        &["--entryPoints.web.transport.keepAliveMaxTime=1ms"],
        "/",
    )
    .await;
    // A connection is older than a millisecond by the time an answer comes
    // back through a server; the answer that finds it so says close.
    eventually(
        Duration::from_secs(10),
        "a connection closed by age",
        || async {
            let (out, closed) = raw_exchange(&gw, THREE, Duration::from_secs(5)).await;
            closed
                && out.to_ascii_lowercase().contains("connection: close")
                && out.matches("HTTP/1.1 200").count() < 3
        },
    )
    .await;
}

async fn uri_seen(gw: &Gangway) -> String {
    let req = request(gw, "/q?a=1;b=2&c=3")
        .body(Full::new(Bytes::new()))
        .unwrap();
    gw.send(req).await.seen().uri
}

#[tokio::test]
async fn encode_query_semicolons_sends_them_on_as_percent_3b() {
    let (_b, conf) = app().await;
    let gw = ready(
        &conf,
        &["--entryPoints.web.http.encodeQuerySemicolons=true"],
        "/",
    )
    .await;
    assert_eq!(uri_seen(&gw).await, "/q?a=1%3Bb=2&c=3");
    let gw = ready(&conf, &[], "/").await;
    assert_eq!(uri_seen(&gw).await, "/q?a=1;b=2&c=3");
}

/// The `X-Forwarded-For` the server sees when the client sends `given`.
async fn xff(gw: &Gangway, given: Option<&str>) -> Option<String> {
    let mut req = request(gw, "/");
    if let Some(v) = given {
        req = req.header("x-forwarded-for", v);
    }
    let req = req.body(Full::new(Bytes::new())).unwrap();
    gw.send(req)
        .await
        .seen()
        .header("x-forwarded-for")
        .map(str::to_owned)
}

#[tokio::test]
async fn not_append_x_forwarded_for_keeps_the_header_as_it_came() {
    let (_b, conf) = app().await;
    let trusted = "--entryPoints.web.forwardedHeaders.trustedIPs=127.0.0.1";
    let gw = ready(&conf, &[trusted], "/").await;
    assert_eq!(
        xff(&gw, Some("192.0.2.7")).await.as_deref(),
        Some("192.0.2.7, 127.0.0.1")
    );
    for option in [
        "--entryPoints.web.forwardedHeaders.notAppendXForwardedFor=true",
        "--global.notAppendXForwardedFor=true",
    ] {
        let gw = ready(&conf, &[trusted, option], "/").await;
        assert_eq!(
            xff(&gw, Some("192.0.2.7")).await.as_deref(),
            Some("192.0.2.7"),
            "{option}"
        );
        assert_eq!(xff(&gw, None).await, None, "{option}");
    }
}

#[tokio::test]
async fn reuse_port_lets_a_second_gangway_listen_on_the_same_port() {
    let (_b, conf) = app().await;
    let port = free_port();
    let flag = ["--entryPoints.web.reusePort=true"];
    let first = Gangway::with_file_on(port, &conf, &flag).await;
    // Panics if the second one cannot bind.
    let second = Gangway::with_file_on(port, &conf, &flag).await;
    eventually(Duration::from_secs(10), "both serve", || async {
        second.get("app.test", "/").await.status == StatusCode::OK
    })
    .await;
    drop(first);
}

#[tokio::test]
async fn reuse_port_lets_two_gangways_share_a_udp_entry_point() {
    let echo = support::udp_echo("echo").await;
    let port = free_port();
    let conf = format!(
        "[udp.routers.echo]\nentryPoints = [\"dns\"]\nservice = \"echo\"\n\
         [[udp.services.echo.loadBalancer.servers]]\naddress = \"127.0.0.1:{echo}\"\n"
    );
    let address = format!("--entryPoints.dns.address=127.0.0.1:{port}/udp");
    let flags = [address.as_str(), "--entryPoints.dns.reusePort=true"];
    let first = Gangway::with_file(&conf, &flags).await;
    // Without SO_REUSEPORT on the UDP socket the second one exits at bind.
    let second = Gangway::with_file(&conf, &flags).await;
    drop(first);
    // The second one alone answers on the shared port.
    let served = support::within(Duration::from_secs(15), || async {
        support::udp_ask(port, "hi").await.as_deref() == Some("echo: hi")
    })
    .await;
    assert!(served, "no UDP answer; gangway's log:\n{}", second.log());
}

async fn status(gw: &Gangway, path: &str) -> StatusCode {
    let req = request(gw, path).body(Full::new(Bytes::new())).unwrap();
    gw.send(req).await.status
}

#[tokio::test]
async fn a_redirection_priority_lets_higher_routers_answer_plain_http() {
    let b = Backend::echo("app").await;
    let conf = format!(
        "[http.routers.keep]\nrule = \"Path(`/keep`)\"\npriority = 100\nservice = \"app\"\n\
         [http.routers.rest]\nrule = \"PathPrefix(`/`)\"\npriority = 1\nservice = \"app\"\n\
         [http.services.app.loadBalancer]\n[[http.services.app.loadBalancer.servers]]\nurl = \"{}\"\n",
        b.url()
    );
    let to = "--entryPoints.web.http.redirections.entryPoint.to=:443";
    let gw = Gangway::with_file(
        &conf,
        &[
            to,
            "--entryPoints.web.http.redirections.entryPoint.priority=10",
        ],
    )
    .await;
    // Redirected until the routers are loaded, then served.
    eventually(Duration::from_secs(10), "/keep served", || async {
        status(&gw, "/keep").await == StatusCode::OK
    })
    .await;
    assert_eq!(status(&gw, "/other").await, StatusCode::MOVED_PERMANENTLY);

    // By default the redirection comes before every router: /keep is
    // redirected on `web` once a plain entry point shows it loaded.
    let plain = free_port();
    let other = format!("--entryPoints.plain.address=127.0.0.1:{plain}");
    let gw = Gangway::with_file(&conf, &[to, &other]).await;
    eventually(
        Duration::from_secs(10),
        "/keep served on `plain`",
        || async {
            let (out, _) = raw_get(plain, "/keep").await;
            out.starts_with("HTTP/1.1 200")
        },
    )
    .await;
    assert_eq!(status(&gw, "/keep").await, StatusCode::MOVED_PERMANENTLY);
}

/// A GET of `path` on 127.0.0.1:`port`, closing; what came back.
async fn raw_get(port: u16, path: &str) -> (String, bool) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(mut s) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await else {
        return (String::new(), false);
    };
    let req = format!("GET {path} HTTP/1.1\r\nHost: app.test\r\nConnection: close\r\n\r\n");
    if s.write_all(req.as_bytes()).await.is_err() {
        return (String::new(), false);
    }
    let mut out = Vec::new();
    let done = s.read_to_end(&mut out).await.is_ok();
    (String::from_utf8_lossy(&out).into_owned(), done)
}
