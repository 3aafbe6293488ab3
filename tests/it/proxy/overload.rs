//! Overload protection, end to end: a service's bound on requests in
//! progress (503 + Retry-After past it, nothing refused within it) and an
//! entry point's bound on open connections (extra connections wait to be
//! accepted). No timings are asserted: the backend holds requests until the
//! test releases them.

use crate::support;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use support::{Backend, Gangway, eventually};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const WAIT: Duration = Duration::from_secs(10);

/// A backend that holds `/hold` requests until released, counting arrivals.
struct Holding {
    backend: Backend,
    arrived: Arc<AtomicUsize>,
    release: tokio::sync::watch::Sender<bool>,
}

async fn holding() -> Holding {
    let (release, rx) = tokio::sync::watch::channel(false);
    let arrived = Arc::new(AtomicUsize::new(0));
    let seen = arrived.clone();
    let backend = Backend::serve(move |req: Request<Incoming>| {
        let mut rx = rx.clone();
        let seen = seen.clone();
        async move {
            if req.uri().path() == "/hold" {
                seen.fetch_add(1, Ordering::SeqCst);
                let _ = rx.wait_for(|v| *v).await;
            }
            http::Response::new(Full::new(Bytes::from_static(b"done")))
        }
    })
    .await;
    Holding {
        backend,
        arrived,
        release,
    }
}

fn limited(backend: &Backend, max: usize, queue_timeout: &str) -> String {
    format!(
        "[http.routers.app]\nrule = \"Host(`app.test`)\"\nservice = \"app\"\n\
         [http.services.app.loadBalancer]\nmaxConcurrentRequests = {max}\nqueueTimeout = \"{queue_timeout}\"\n\
         [[http.services.app.loadBalancer.servers]]\nurl = \"{}\"\n",
        backend.url()
    )
}

async fn started(gw: &Gangway) {
    eventually(WAIT, "configuration applied", || async {
        gw.get("app.test", "/").await.status == StatusCode::OK
    })
    .await;
}

fn hold(gw: &Arc<Gangway>) -> tokio::task::JoinHandle<StatusCode> {
    let gw = gw.clone();
    tokio::spawn(async move { gw.get("app.test", "/hold").await.status })
}

#[tokio::test]
async fn past_the_service_limit_requests_get_503_with_retry_after() {
    let h = holding().await;
    let gw = Arc::new(Gangway::with_file(&limited(&h.backend, 2, "0s"), &[]).await);
    started(&gw).await;

    // Within the bound: both reach the server.
    let first = [hold(&gw), hold(&gw)];
    eventually(WAIT, "two requests reached the backend", || async {
        h.arrived.load(Ordering::SeqCst) == 2
    })
    .await;

    // Past it: refused at once, with a hint to come back.
    for _ in 0..3 {
        let got = gw.get("app.test", "/").await;
        assert_eq!(
            got.status,
            StatusCode::SERVICE_UNAVAILABLE,
            "{}",
            got.text()
        );
        assert_eq!(
            got.headers.get("retry-after").map(|v| v.as_bytes()),
            Some(&b"1"[..])
        );
    }
    assert_eq!(
        h.arrived.load(Ordering::SeqCst),
        2,
        "refused ones never reached the server"
    );

    // The held ones finish normally, and their slots are free again.
    h.release.send(true).expect("release");
    for task in first {
        assert_eq!(task.await.expect("task"), StatusCode::OK);
    }
    for _ in 0..5 {
        assert_eq!(gw.get("app.test", "/").await.status, StatusCode::OK);
    }
}

/// Holds a request for `/hold` sent with `X-Forwarded-For: from`.
fn hold_from(gw: &Arc<Gangway>, from: &'static str) -> tokio::task::JoinHandle<StatusCode> {
    let gw = gw.clone();
    tokio::spawn(async move { get_from(&gw, "/hold", from).await })
}

async fn get_from(gw: &Gangway, path: &str, from: &str) -> StatusCode {
    let req = Request::get(gw.url(path))
        .header("host", "app.test")
        .header("x-forwarded-for", from)
        .body(Full::default())
        .expect("request");
    gw.send(req).await.status
}

/// A share binds only while another client within its own share waits for
/// a slot: the service here holds two requests, a client one.
#[tokio::test]
async fn behind_a_trusted_proxy_each_forwarded_client_has_its_own_share() {
    for trusted in [true, false] {
        let h = holding().await;
        let mut flags = vec!["--serversTransport.maxConcurrentRequestsPerClient=1"];
        if trusted {
            flags.push("--entryPoints.web.forwardedHeaders.trustedIPs=127.0.0.1/32");
        }
        let gw = Arc::new(Gangway::with_file(&limited(&h.backend, 2, "60s"), &flags).await);
        started(&gw).await;

        let first = hold_from(&gw, "198.51.100.1");
        eventually(
            WAIT,
            "the first client's request reached the backend",
            || async { h.arrived.load(Ordering::SeqCst) == 1 },
        )
        .await;
        let second = hold_from(&gw, "198.51.100.2");
        eventually(WAIT, "the second request reached the backend", || async {
            h.arrived.load(Ordering::SeqCst) == 2
        })
        .await;
        if trusted {
            // A third person behind the same proxy, within its own share,
            // waits for a slot (as one client, it would be refused at once
            // past its share); the first is past its share.
            let third = hold_from(&gw, "198.51.100.3");
            assert_eq!(
                get_from(&gw, "/", "10.0.0.1, 198.51.100.1").await,
                StatusCode::SERVICE_UNAVAILABLE,
                "the first client is past its share of one"
            );
            h.release.send(true).expect("release");
            assert_eq!(third.await.expect("task"), StatusCode::OK);
        } else {
            // An untrusted peer's header proves nothing: one client, past
            // its share and at the service's bound, refused at once where
            // a client within its share would wait.
            let refused = tokio::time::timeout(WAIT, get_from(&gw, "/", "198.51.100.3")).await;
            assert_eq!(
                refused.ok(),
                Some(StatusCode::SERVICE_UNAVAILABLE),
                "the peer is past its share whatever it claims"
            );
            h.release.send(true).expect("release");
        }
        assert_eq!(first.await.expect("task"), StatusCode::OK);
        assert_eq!(second.await.expect("task"), StatusCode::OK);
    }
}

#[tokio::test]
async fn a_request_past_the_limit_waits_for_a_slot_and_the_queue_is_bounded() {
    let h = holding().await;
    // A wait far longer than the test: the waiting request must get the
    // slot when it frees, not time out.
    let gw = Arc::new(Gangway::with_file(&limited(&h.backend, 1, "60s"), &[]).await);
    started(&gw).await;

    let first = hold(&gw);
    eventually(WAIT, "the first request reached the backend", || async {
        h.arrived.load(Ordering::SeqCst) == 1
    })
    .await;
    // Two more: the queue holds as many as may be in progress (one), so one
    // of them waits and the other is refused at once.
    let mut a = hold(&gw);
    let mut b = hold(&gw);
    let (refused, waiting) = tokio::time::timeout(WAIT, async {
        tokio::select! {
            r = &mut a => (r, b),
            r = &mut b => (r, a),
        }
    })
    .await
    .expect("one of the two is refused at once");
    assert_eq!(refused.expect("task"), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        h.arrived.load(Ordering::SeqCst),
        1,
        "the other is still waiting"
    );

    // Releasing the first lets the waiting one through to the server.
    h.release.send(true).expect("release");
    assert_eq!(first.await.expect("task"), StatusCode::OK);
    assert_eq!(waiting.await.expect("task"), StatusCode::OK);
    assert_eq!(h.arrived.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn the_default_limit_refuses_nothing_under_ordinary_concurrency() {
    let h = holding().await;
    let conf = format!(
        "[http.routers.app]\nrule = \"Host(`app.test`)\"\nservice = \"app\"\n\
         [http.services.app.loadBalancer]\n[[http.services.app.loadBalancer.servers]]\nurl = \"{}\"\n",
        h.backend.url()
    );
    let gw = Arc::new(Gangway::with_file(&conf, &[]).await);
    started(&gw).await;
    let held: Vec<_> = (0..50).map(|_| hold(&gw)).collect();
    eventually(
        WAIT,
        "fifty requests in progress at the backend",
        || async { h.arrived.load(Ordering::SeqCst) == 50 },
    )
    .await;
    h.release.send(true).expect("release");
    for task in held {
        assert_eq!(task.await.expect("task"), StatusCode::OK);
    }
}

/// Sends one keep-alive request on a raw connection and reads the answer's
/// status line (the backend's bodies are tiny and sent with the headers).
async fn round_trip(conn: &mut TcpStream) -> String {
    conn.write_all(b"GET / HTTP/1.1\r\nHost: app.test\r\n\r\n")
        .await
        .expect("write");
    read_response(conn).await
}

async fn read_response(conn: &mut TcpStream) -> String {
    let mut buf = vec![0u8; 4096];
    let mut got = Vec::new();
    loop {
        let n = tokio::time::timeout(WAIT, conn.read(&mut buf))
            .await
            .expect("an answer")
            .expect("read");
        assert!(
            n > 0,
            "connection closed after {:?}",
            String::from_utf8_lossy(&got)
        );
        got.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&got);
        // Every answer here has a body of "done" (4 bytes) after the headers.
        if let Some(end) = text.find("\r\n\r\n")
            && got.len() >= end + 4 + 4
        {
            return text.lines().next().unwrap_or_default().to_owned();
        }
    }
}

#[tokio::test]
async fn at_the_connection_limit_new_connections_wait_to_be_accepted() {
    let h = holding().await;
    let conf = format!(
        "[http.routers.app]\nrule = \"Host(`app.test`)\"\nservice = \"app\"\n\
         [http.services.app.loadBalancer]\n[[http.services.app.loadBalancer.servers]]\nurl = \"{}\"\n",
        h.backend.url()
    );
    let gw = Gangway::with_file(&conf, &["--entryPoints.web.transport.maxConnections=2"]).await;
    // `with_file` probes the port with short-lived connections; wait until
    // the route answers on a connection of its own, then close that too.
    eventually(WAIT, "configuration applied", || async {
        let Ok(mut c) = TcpStream::connect(("127.0.0.1", gw.port)).await else {
            return false;
        };
        round_trip(&mut c).await.contains("200")
    })
    .await;

    let addr = ("127.0.0.1", gw.port);
    let mut one = TcpStream::connect(addr).await.expect("connect");
    let mut two = TcpStream::connect(addr).await.expect("connect");
    assert!(round_trip(&mut one).await.contains("200"));
    assert!(round_trip(&mut two).await.contains("200"));

    // A third connection is taken by the kernel's backlog, but gangway does
    // not accept it while two are open: its request stays unanswered...
    // (A std socket, so that the check below is a real non-blocking read.)
    let mut three = std::net::TcpStream::connect(addr).expect("connect");
    std::io::Write::write_all(&mut three, b"GET / HTTP/1.1\r\nHost: app.test\r\n\r\n")
        .expect("write");
    // ...while the open ones keep being served.
    for _ in 0..5 {
        assert!(round_trip(&mut one).await.contains("200"));
    }
    three.set_nonblocking(true).expect("nonblocking");
    let mut peek = [0u8; 1];
    assert_eq!(
        three.peek(&mut peek).map_err(|e| e.kind()).err(),
        Some(std::io::ErrorKind::WouldBlock),
        "the third connection was answered while two were open"
    );

    // When one closes, the waiting connection is accepted and answered.
    drop(two);
    let mut three = TcpStream::from_std(three).expect("tokio stream");
    assert!(read_response(&mut three).await.contains("200"));
    assert!(round_trip(&mut one).await.contains("200"));
}

/// Requests one client has in progress at once in the test below: more
/// than its share (256), within the service's bound (1024).
const ALONE: usize = 1000;

/// One client alone, with the defaults on, holding 1,000 requests at once,
/// first over 1,000 HTTP/1.1 keep-alive connections, then as HTTP/2
/// streams over four connections (250 streams each): nobody else needs the
/// service, so its share does not bind and every request is answered.
#[tokio::test]
async fn a_client_alone_is_never_refused_past_its_share() {
    for http2 in [false, true] {
        let h = holding().await;
        let route = support::one_route("app", "Host(`app.test`)", &[&h.backend.url()]);
        let gw = Gangway::with_file(&route, &[]).await;
        started(&gw).await;
        let senders = connect(gw.port, http2).await;
        let ended = Arc::new(AtomicUsize::new(0));
        let mut requests = tokio::task::JoinSet::new();
        for i in 0..ALONE {
            let mut sender = senders[i % senders.len()].clone();
            let ended = ended.clone();
            requests.spawn(async move {
                let status = sender.send("/hold").await;
                ended.fetch_add(1, Ordering::SeqCst);
                (status, sender)
            });
        }
        // Every request is either held at the backend or already ended
        // (refused): wait for both to add up, then let them go.
        eventually(
            WAIT,
            "every request reached the backend or ended",
            || async { h.arrived.load(Ordering::SeqCst) + ended.load(Ordering::SeqCst) == ALONE },
        )
        .await;
        h.release.send(true).expect("release");
        let mut answered = 0;
        let mut again = Vec::new();
        while let Some(done) = requests.join_next().await {
            let (status, sender) = done.expect("task");
            answered += usize::from(status == Some(StatusCode::OK));
            again.push(sender);
        }
        let proto = if http2 { "HTTP/2" } else { "HTTP/1.1" };
        assert_eq!(answered, ALONE, "{proto}: answered with 200");
        assert_eq!(
            h.arrived.load(Ordering::SeqCst),
            ALONE,
            "{proto}: at the server"
        );
        if !http2 {
            // Keep-alive: each connection answers a second request.
            for mut sender in again.into_iter().take(10) {
                assert_eq!(sender.send("/").await, Some(StatusCode::OK));
            }
        }
    }
}

/// A request sender on one connection to gangway, either protocol.
#[derive(Clone)]
enum Sender {
    Http1(Arc<tokio::sync::Mutex<hyper::client::conn::http1::SendRequest<Full<Bytes>>>>),
    Http2(hyper::client::conn::http2::SendRequest<Full<Bytes>>),
}

impl Sender {
    /// The status of a GET of `path` on app.test; None if it failed.
    async fn send(&mut self, path: &str) -> Option<StatusCode> {
        let req = Request::get(path)
            .header("host", "app.test")
            .body(Full::default())
            .expect("request");
        let resp = match self {
            Sender::Http1(conn) => {
                let mut conn = conn.lock().await;
                conn.ready().await.ok()?;
                conn.send_request(req).await.ok()?
            }
            Sender::Http2(conn) => conn.send_request(req).await.ok()?,
        };
        let status = resp.status();
        http_body_util::BodyExt::collect(resp.into_body())
            .await
            .ok()?;
        Some(status)
    }
}

/// `ALONE` HTTP/1.1 connections, or four HTTP/2 (h2c) connections, to the
/// entry point on `port`, all from 127.0.0.1.
async fn connect(port: u16, http2: bool) -> Vec<Sender> {
    let count = if http2 { 4 } else { ALONE };
    let mut senders = Vec::with_capacity(count);
    for _ in 0..count {
        let tcp = TcpStream::connect(("127.0.0.1", port))
            .await
            .expect("connect");
        let io = hyper_util::rt::TokioIo::new(tcp);
        senders.push(if http2 {
            let exec = hyper_util::rt::TokioExecutor::new();
            let (sender, conn) = hyper::client::conn::http2::handshake(exec, io)
                .await
                .expect("h2 handshake");
            tokio::spawn(conn);
            Sender::Http2(sender)
        } else {
            let (sender, conn) = hyper::client::conn::http1::handshake(io)
                .await
                .expect("handshake");
            tokio::spawn(conn);
            Sender::Http1(Arc::new(tokio::sync::Mutex::new(sender)))
        });
    }
    senders
}
