//! One client cannot take the others' share: a flood of HTTP/2 streams
//! whose bodies never come leaves other clients answered; a body already
//! past its length never reaches a server; an HTTP/3 reset flood ends its
//! connection. Each against the real binary with a real backend.

use crate::support;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::{Backend, Gangway, eventually};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

const WAIT: Duration = Duration::from_secs(30);

fn route(backend: &Backend) -> String {
    support::one_route("app", "Host(`app.test`)", &[&backend.url()])
}

/// What the backend has seen: requests whose body it is still reading
/// now and at most, and the paths of every head.
#[derive(Default)]
struct Seen {
    reading: AtomicUsize,
    most: AtomicUsize,
    paths: Mutex<Vec<String>>,
    /// The paths of requests whose whole body the backend received.
    whole: Mutex<Vec<String>>,
    /// Requests whose body broke off before its end (gangway gave them up).
    broken: AtomicUsize,
}

/// A backend that reads each request's whole body before it answers, so a
/// body that never comes holds the request at the server.
async fn reading_backend() -> (Backend, Arc<Seen>) {
    let seen = Arc::new(Seen::default());
    let counts = seen.clone();
    let backend = Backend::serve(move |req: Request<Incoming>| {
        let seen = counts.clone();
        async move {
            let path = req.uri().path().to_owned();
            seen.paths.lock().unwrap().push(path.clone());
            let now = seen.reading.fetch_add(1, Ordering::SeqCst) + 1;
            seen.most.fetch_max(now, Ordering::SeqCst);
            let body = req.into_body().collect().await;
            seen.reading.fetch_sub(1, Ordering::SeqCst);
            match body {
                Ok(_) => seen.whole.lock().unwrap().push(path),
                Err(_) => _ = seen.broken.fetch_add(1, Ordering::SeqCst),
            }
            let answer = match body {
                Ok(b) => Bytes::from(format!("{} bytes", b.to_bytes().len())),
                Err(_) => Bytes::from_static(b"broken"),
            };
            http::Response::new(Full::new(answer))
        }
    })
    .await;
    (backend, seen)
}

/// Resident memory of the gangway process now, in KiB.
fn rss_kib(gw: &Gangway) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", gw.pid())).expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

/// How the attacker's streams ended.
#[derive(Default)]
struct Refusals {
    /// Streams opened.
    opened: AtomicUsize,
    /// 503 with Retry-After.
    busy: AtomicUsize,
    /// Reset with REFUSED_STREAM.
    refused_stream: AtomicUsize,
    /// Anything else (an answer, another reset).
    other: AtomicUsize,
}

/// One connection of the attacker, from 127.0.0.2: every stream it may
/// open is a POST announcing 100 bytes of body of which at most `sent`
/// come, and each stream that ends is opened again at once.
async fn attack(gw: SocketAddr, streams: usize, sent: &'static [u8], seen: Arc<Refusals>) {
    let socket = TcpSocket::new_v4().expect("socket");
    socket
        .bind(SocketAddr::from(([127, 0, 0, 2], 0)))
        .expect("bind 127.0.0.2");
    let tcp = socket.connect(gw).await.expect("connect");
    let (client, conn) = h2::client::handshake(tcp).await.expect("h2 handshake");
    tokio::spawn(conn);
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..streams {
        let client = client.clone();
        let seen = seen.clone();
        tasks.spawn(async move {
            loop {
                let Ok(mut ready) = client.clone().ready().await else {
                    return;
                };
                let req = Request::post("http://app.test/pin")
                    .header("content-length", "100")
                    .body(())
                    .unwrap();
                let Ok((answer, mut body)) = ready.send_request(req, false) else {
                    return;
                };
                if !sent.is_empty() {
                    let _ = body.send_data(Bytes::from_static(sent), false);
                }
                seen.opened.fetch_add(1, Ordering::SeqCst);
                match answer.await {
                    Ok(resp)
                        if resp.status() == StatusCode::SERVICE_UNAVAILABLE
                            && resp.headers().contains_key("retry-after") =>
                    {
                        seen.busy.fetch_add(1, Ordering::SeqCst)
                    }
                    Err(e) if e.reason() == Some(h2::Reason::REFUSED_STREAM) => {
                        seen.refused_stream.fetch_add(1, Ordering::SeqCst)
                    }
                    _ => seen.other.fetch_add(1, Ordering::SeqCst),
                };
            }
        });
    }
    while tasks.join_next().await.is_some() {}
}

/// The issue's attack: 8 connections × 250 streams of POSTs from one
/// address, each announcing a body that never comes. Those requests never
/// reach the server (gangway waits for a body to begin before it takes a
/// server's slot), another client keeps being answered, memory stays
/// bounded.
#[tokio::test]
async fn bodies_that_never_begin_take_no_server_slot_from_the_others() {
    let flood = flood(b"").await;
    assert!(
        flood.answered * 10 >= flood.tries * 9,
        "{} of {} answered during the attack",
        flood.answered,
        flood.tries
    );
    assert_eq!(
        flood.attacker_at_server, 0,
        "announced bodies that never began reached the server"
    );
    assert_rss_bounded(&flood, 0);
}

/// The same flood with each body begun (1 of its 100 bytes) and never
/// finished. Alone, the attacker is lent the whole service (1024) and its
/// further streams get 503 with Retry-After; once another client needs a
/// slot, the slots lent past the attacker's share (256) are taken back and
/// the other client keeps being answered; memory stays bounded.
#[tokio::test]
async fn a_client_pinning_requests_holds_only_its_share_of_the_service() {
    let flood = flood(b"x").await;
    assert!(
        flood.answered * 10 >= flood.tries * 9,
        "{} of {} answered during the attack",
        flood.answered,
        flood.tries
    );
    // The bound holds; a request given up may still be counted at the
    // server when the one that took its slot arrives.
    assert!(
        (1024..=1025).contains(&flood.most_at_server),
        "{} requests held at the server at most",
        flood.most_at_server
    );
    assert!(
        flood.taken_back >= 1024 - 256,
        "{} of the attacker's requests given up at the server",
        flood.taken_back
    );
    assert!(
        flood.busy + flood.refused_stream >= 1000,
        "refusals: {} × 503, {} × REFUSED_STREAM",
        flood.busy,
        flood.refused_stream
    );
    assert_rss_bounded(&flood, 1024);
}

/// Memory the flood may add, in KiB: 32 MiB, and when its requests reach
/// the server, 48 KiB more for each of the 768 it is lent past its share
/// while alone (an upstream connection and its buffers each).
fn assert_rss_bounded(flood: &Flood, held_at_server: u64) {
    let grown = flood.rss_after.saturating_sub(flood.rss_before);
    let bound = 32 * 1024 + held_at_server.saturating_sub(256) * 48;
    assert!(
        grown < bound,
        "RSS grew by {grown} KiB under the attack ({} → {} KiB), past {bound} KiB",
        flood.rss_before,
        flood.rss_after
    );
}

/// What a flood did.
struct Flood {
    tries: usize,
    answered: usize,
    most_at_server: usize,
    attacker_at_server: usize,
    busy: usize,
    refused_stream: usize,
    rss_before: u64,
    rss_after: u64,
    /// Requests given up at the server before the attacker went away.
    taken_back: usize,
}

/// gangway with its defaults (1024 requests per service, 256 per client)
/// and a backend that reads whole bodies; 8 × 250 attacking streams that
/// send `sent` of their body; 50 GETs from another client meanwhile, each
/// on a fresh connection.
async fn flood(sent: &'static [u8]) -> Flood {
    let (backend, seen) = reading_backend().await;
    let gw = Gangway::with_file(&route(&backend), &[]).await;
    eventually(WAIT, "route served", || async {
        gw.get("app.test", "/").await.status == StatusCode::OK
    })
    .await;
    for _ in 0..20 {
        assert_eq!(gw.get("app.test", "/").await.status, StatusCode::OK);
    }
    let rss_before = rss_kib(&gw);

    let addr: SocketAddr = format!("127.0.0.1:{}", gw.port).parse().unwrap();
    let refusals = Arc::new(Refusals::default());
    let attacker: Vec<_> = (0..8)
        .map(|_| tokio::spawn(attack(addr, 250, sent, refusals.clone())))
        .collect();
    // The attack is on once all its streams are open, and when bodies
    // begin, once it holds the whole service and is refused more.
    eventually(WAIT, "the attacker's streams are open", || async {
        refusals.opened.load(Ordering::SeqCst) >= 8 * 250
    })
    .await;
    if !sent.is_empty() {
        eventually(
            WAIT,
            "the attacker, alone, holds the whole service",
            || async {
                seen.reading.load(Ordering::SeqCst) >= 1024
                    && refusals.busy.load(Ordering::SeqCst)
                        + refusals.refused_stream.load(Ordering::SeqCst)
                        >= 1000
            },
        )
        .await;
    }

    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<Full<Bytes>>();
    let mut answered = 0;
    const TRIES: usize = 50;
    for i in 0..TRIES {
        let req = Request::get(gw.url(&format!("/ok/{i}")))
            .header("host", "app.test")
            .header("connection", "close")
            .body(Full::default())
            .unwrap();
        let got = tokio::time::timeout(Duration::from_secs(20), client.request(req)).await;
        if let Ok(Ok(resp)) = got
            && resp.status() == StatusCode::OK
        {
            answered += 1;
        }
    }
    let rss_after = rss_kib(&gw);
    let taken_back = seen.broken.load(Ordering::SeqCst);
    for task in &attacker {
        task.abort();
    }
    let attacker_at_server = seen
        .paths
        .lock()
        .unwrap()
        .iter()
        .filter(|p| *p == "/pin")
        .count();
    let flood = Flood {
        tries: TRIES,
        answered,
        most_at_server: seen.most.load(Ordering::SeqCst),
        attacker_at_server,
        busy: refusals.busy.load(Ordering::SeqCst),
        refused_stream: refusals.refused_stream.load(Ordering::SeqCst),
        rss_before,
        rss_after,
        taken_back,
    };
    eprintln!(
        "answered {answered}/{TRIES}; at the server at most {}, {attacker_at_server} of the attacker's; \
         attacker: {} × 503, {} × REFUSED_STREAM, {} other, {taken_back} given up at the server; RSS {rss_before} → {rss_after} KiB",
        flood.most_at_server,
        flood.busy,
        flood.refused_stream,
        refusals.other.load(Ordering::SeqCst)
    );
    flood
}

// === raw HTTP/2 frames ===

const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const RST_STREAM: u8 = 0x3;
const SETTINGS: u8 = 0x4;
const GOAWAY: u8 = 0x7;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = (payload.len() as u32).to_be_bytes();
    let mut out = vec![len[1], len[2], len[3], kind, flags];
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// A header block of literal fields without indexing (RFC 7541 §6.2.2),
/// names and values shorter than 127 bytes.
fn header_block(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, value) in fields {
        out.push(0);
        out.push(name.len() as u8);
        out.extend_from_slice(name.as_bytes());
        out.push(value.len() as u8);
        out.extend_from_slice(value.as_bytes());
    }
    out
}

fn post(path: &str, length: &str) -> Vec<u8> {
    header_block(&[
        (":method", "POST"),
        (":scheme", "http"),
        (":authority", "app.test"),
        (":path", path),
        ("content-length", length),
    ])
}

/// Reads frames as (kind, stream) until `done` says so or the connection
/// ends.
async fn frames_until(tcp: &mut TcpStream, done: impl Fn(&[(u8, u32)]) -> bool) -> Vec<(u8, u32)> {
    let mut bytes = Vec::new();
    let mut frames = Vec::new();
    let mut buf = [0u8; 16384];
    while !done(&frames) {
        let n = match tokio::time::timeout(WAIT, tcp.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => n,
            _ => break,
        };
        bytes.extend_from_slice(&buf[..n]);
        while bytes.len() >= 9 {
            let len = u32::from_be_bytes([0, bytes[0], bytes[1], bytes[2]]) as usize;
            if bytes.len() < 9 + len {
                break;
            }
            let stream = u32::from_be_bytes([bytes[5], bytes[6], bytes[7], bytes[8]]) & 0x7fff_ffff;
            frames.push((bytes[3], stream));
            bytes.drain(..9 + len);
        }
    }
    frames
}

/// A body whose DATA frames have already passed its content-length when
/// its head is read is refused before anything of it reaches the server,
/// however many frames it came in; one that keeps to its length passes.
#[tokio::test]
async fn an_http2_body_already_past_its_length_never_reaches_the_server() {
    let (backend, seen) = reading_backend().await;
    let gw = Gangway::with_file(&route(&backend), &[]).await;
    eventually(WAIT, "route served", || async {
        gw.get("app.test", "/").await.status == StatusCode::OK
    })
    .await;
    let mut tcp = TcpStream::connect(("127.0.0.1", gw.port)).await.unwrap();
    let mut out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    out.extend(frame(SETTINGS, 0, 0, &[]));
    // Stream 1: five bytes announced, eleven sent in three frames, all in
    // one write with the head.
    out.extend(frame(HEADERS, END_HEADERS, 1, &post("/past", "5")));
    out.extend(frame(DATA, 0, 1, b"he"));
    out.extend(frame(DATA, 0, 1, b"llo"));
    out.extend(frame(DATA, END_STREAM, 1, b" world"));
    // Stream 3: a body that keeps to its length, to show what passes.
    out.extend(frame(HEADERS, END_HEADERS, 3, &post("/kept", "5")));
    out.extend(frame(DATA, END_STREAM, 3, b"hello"));
    tcp.write_all(&out).await.unwrap();
    let frames = frames_until(&mut tcp, |fs| {
        fs.contains(&(RST_STREAM, 1)) && fs.contains(&(DATA, 3)) || fs.iter().any(|f| f.0 == GOAWAY)
    })
    .await;
    assert!(frames.contains(&(RST_STREAM, 1)), "{frames:?}");
    assert!(frames.contains(&(DATA, 3)), "{frames:?}");
    let paths = seen.paths.lock().unwrap().clone();
    assert!(paths.iter().any(|p| p == "/kept"), "{paths:?}");
    assert!(
        !paths.iter().any(|p| p == "/past"),
        "a body already past its length reached the server: {paths:?}"
    );
}

// === HTTP/3 ===

/// gangway with an HTTP/3 entry point routing `app.test` to `backend`,
/// once it answers there; a client trusting its certificate, the port, and
/// the directory holding the certificate.
async fn http3_gangway(
    backend: &Backend,
    flags: &[&str],
) -> (Gangway, support::tls::TlsClient, u16, tempfile::TempDir) {
    use support::tls::{TestCa, TlsClient};
    let ca = TestCa::new("test CA");
    let files = tempfile::tempdir().unwrap();
    let (chain, key) = ca.issue(&["app.test"]);
    let cert = files.path().join("app.pem");
    let key_file = files.path().join("app.key");
    std::fs::write(&cert, chain).unwrap();
    std::fs::write(&key_file, key).unwrap();
    let dynamic = format!(
        "[[tls.certificates]]\ncertFile = {:?}\nkeyFile = {:?}\n\
         [http.routers.app]\nrule = \"Host(`app.test`)\"\nentryPoints = [\"websecure\"]\nservice = \"app\"\n\
         [http.routers.app.tls]\n\
         [http.routers.plain]\nrule = \"Host(`app.test`)\"\nentryPoints = [\"web\"]\nservice = \"app\"\n\
         [http.services.app.loadBalancer]\n[[http.services.app.loadBalancer.servers]]\nurl = \"{}\"\n",
        cert.display(),
        key_file.display(),
        backend.url()
    );
    let port = support::free_port();
    let address = format!("--entryPoints.websecure.address=127.0.0.1:{port}");
    let mut all = vec![address.as_str(), "--entryPoints.websecure.http3"];
    all.extend(flags);
    let gw = Gangway::with_file(&dynamic, &all).await;
    let client = TlsClient::trusting(ca.pem().as_bytes());
    eventually(WAIT, "HTTP/3 route served", || async {
        match support::http3::connect(&client, port, "app.test").await {
            Ok(mut conn) => conn
                .get("app.test", "/ready")
                .await
                .is_ok_and(|g| g.status == StatusCode::OK),
            Err(_) => false,
        }
    })
    .await;
    (gw, client, port, files)
}

/// A QUIC client that opens request streams and cancels each at once
/// (HTTP/2's rapid reset, over HTTP/3) has its connection closed with
/// H3_EXCESSIVE_LOAD after a bounded number of them, and none of them
/// reaches the server.
#[tokio::test]
async fn an_http3_reset_flood_ends_its_connection_with_excessive_load() {
    let (backend, seen) = reading_backend().await;
    let (_gw, client, port, _files) = http3_gangway(&backend, &[]).await;
    let heads_before = seen.paths.lock().unwrap().len();

    let conn = support::http3::connect(&client, port, "app.test")
        .await
        .expect("HTTP/3 connection");
    let mut send = conn.sender();
    let mut opened = 0;
    // Far more than the budget (maxPendingResetStreams, 20) and the
    // concurrent streams (250) together.
    while opened < 5000 && conn.conn.close_reason().is_none() {
        let req = Request::get("https://app.test/flood").body(()).unwrap();
        let Ok(Ok(mut stream)) = tokio::time::timeout(WAIT, send.send_request(req)).await else {
            break;
        };
        stream.stop_stream(h3::error::Code::H3_REQUEST_CANCELLED);
        stream.stop_sending(h3::error::Code::H3_REQUEST_CANCELLED);
        opened += 1;
    }
    let reason = tokio::time::timeout(WAIT, conn.closed())
        .await
        .unwrap_or_else(|_| panic!("still open after {opened} streams cancelled"));
    match &reason {
        quinn::ConnectionError::ApplicationClosed(close) => {
            assert_eq!(
                close.error_code,
                quinn::VarInt::from_u32(0x107),
                "{reason:?}"
            );
        }
        other => panic!("closed otherwise after {opened} streams: {other:?}"),
    }
    assert!(opened < 5000, "{opened} streams opened and cancelled");
    let flooded: Vec<String> = seen.paths.lock().unwrap()[heads_before..]
        .iter()
        .filter(|p| *p == "/flood")
        .cloned()
        .collect();
    assert!(
        flooded.is_empty(),
        "{} cancelled requests reached the server",
        flooded.len()
    );
    eprintln!("closed with H3_EXCESSIVE_LOAD after {opened} streams opened and cancelled");
}

/// An HTTP/3 body whose DATA has already passed its content-length when
/// its head is read is refused before anything of it reaches the server;
/// one that keeps to its length passes.
#[tokio::test]
async fn an_http3_body_already_past_its_length_never_reaches_the_server() {
    let (backend, seen) = reading_backend().await;
    let (_gw, client, port, _files) = http3_gangway(&backend, &[]).await;
    let conn = support::http3::connect(&client, port, "app.test")
        .await
        .expect("HTTP/3 connection");
    h3_past_its_length(&conn, "/past").await;
    let mut send = conn.sender();
    let post = |path: &str| {
        Request::post(format!("https://app.test{path}"))
            .header("content-length", "5")
            .body(())
            .unwrap()
    };
    let mut kept = send.send_request(post("/kept")).await.unwrap();
    kept.send_data(Bytes::from_static(b"hello")).await.unwrap();
    kept.finish().await.unwrap();
    let answer = kept.recv_response().await.unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
    let paths = seen.paths.lock().unwrap().clone();
    assert!(paths.iter().any(|p| p == "/kept"), "{paths:?}");
    assert!(
        !paths.iter().any(|p| p == "/past"),
        "a body already past its length reached the server: {paths:?}"
    );
}

/// An HTTP/3 body whose excess arrives after its request went on: the
/// server never receives the whole declared body, so it never takes the
/// wrong request as complete, and the client is not answered with success.
#[tokio::test]
async fn an_http3_body_running_past_its_length_later_is_cut_short_at_the_server() {
    let (backend, seen) = reading_backend().await;
    let (_gw, client, port, _files) = http3_gangway(&backend, &[]).await;
    let conn = support::http3::connect(&client, port, "app.test")
        .await
        .expect("HTTP/3 connection");
    let mut send = conn.sender();
    let req = Request::post("https://app.test/later")
        .header("content-length", "5")
        .body(())
        .unwrap();
    let mut stream = send.send_request(req).await.unwrap();
    stream
        .send_data(Bytes::from_static(b"hello"))
        .await
        .unwrap();
    eventually(WAIT, "the request reached the server", || async {
        seen.paths.lock().unwrap().iter().any(|p| p == "/later")
    })
    .await;
    // Either may fail once gangway has cut the stream.
    let _ = stream.send_data(Bytes::from_static(b" world")).await;
    let _ = stream.finish().await;
    let answer = tokio::time::timeout(WAIT, stream.recv_response())
        .await
        .expect("the stream is answered or reset");
    assert!(
        answer
            .as_ref()
            .map_or(true, |a| a.status() != StatusCode::OK),
        "{answer:?}"
    );
    eventually(WAIT, "the server is done with the request", || async {
        seen.reading.load(Ordering::SeqCst) == 0
    })
    .await;
    let whole = seen.whole.lock().unwrap().clone();
    assert!(
        !whole.iter().any(|p| p == "/later"),
        "the server received a whole body for a request that ran past its length: {whole:?}"
    );
}

/// An HTTP/3 frame: its type and length (both below 64, one byte each as
/// variable-length integers), then `payload`.
fn h3_frame(kind: u8, payload: &[u8]) -> Vec<u8> {
    assert!(payload.len() < 64);
    let mut out = vec![kind, payload.len() as u8];
    out.extend(payload);
    out
}

/// Sends on `conn` a POST to `path` announcing five bytes and sending
/// eleven in three DATA frames, written with the head in one piece so
/// that all of it is there when the head is; asserts the stream is reset.
async fn h3_past_its_length(conn: &support::http3::H3Conn, path: &str) {
    let mut head = vec![0x00, 0x00, 0xd4, 0xd7]; // POST, https (QPACK static)
    for (index, value) in [(0u8, "app.test"), (1, path), (4, "5")] {
        head.extend([0x50 | index, value.len() as u8]); // static name, literal value
        head.extend(value.as_bytes());
    }
    let mut out = h3_frame(0x01, &head);
    for part in ["he", "llo", " world"] {
        out.extend(h3_frame(0x00, part.as_bytes()));
    }
    let (mut tx, mut rx) = conn.conn.open_bi().await.unwrap();
    tx.write_all(&out).await.unwrap();
    tx.finish().unwrap();
    let answer = tokio::time::timeout(WAIT, rx.read_to_end(64 * 1024))
        .await
        .expect("the stream is answered or reset");
    assert!(
        matches!(
            answer,
            Err(quinn::ReadToEndError::Read(quinn::ReadError::Reset(_)))
        ),
        "{answer:?}"
    );
}

/// GET /metrics on gangway's internal entry point.
async fn metrics(port: u16) -> String {
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<Full<Bytes>>();
    let req = Request::get(format!("http://127.0.0.1:{port}/metrics"))
        .body(Full::default())
        .unwrap();
    let resp = client.request(req).await.expect("metrics");
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8_lossy(&body).into_owned()
}

/// Requests gangway refuses before forwarding them, over HTTP/2 and
/// HTTP/3, are seen where an operator looks: a body announced and never
/// begun (its 408), and a body already past its length (its stream reset,
/// counted as the 400 it stands for), in the entry point's requests by
/// code and in the access log. None of them reaches the server.
#[tokio::test]
async fn refusals_before_forwarding_are_counted_and_logged() {
    let (backend, seen) = reading_backend().await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    let internal = support::free_port();
    let flags = [
        format!("--accessLog.filePath={}", log.display()),
        "--metrics.prometheus".to_owned(),
        format!("--entryPoints.gangway.address=127.0.0.1:{internal}"),
        "--entryPoints.web.limits.headerReadTimeout=1s".to_owned(),
        "--entryPoints.websecure.limits.headerReadTimeout=1s".to_owned(),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let (gw, client, port, _files) = http3_gangway(&backend, &flags).await;
    eventually(WAIT, "route served on web", || async {
        gw.get("app.test", "/").await.status == StatusCode::OK
    })
    .await;

    // HTTP/2 (h2c): a body announced and never begun.
    let tcp = TcpStream::connect(("127.0.0.1", gw.port)).await.unwrap();
    let (h2, h2_conn) = h2::client::handshake(tcp).await.expect("h2 handshake");
    tokio::spawn(h2_conn);
    let req = Request::post("http://app.test/h2-never")
        .header("content-length", "5")
        .body(())
        .unwrap();
    let (answer, _body) = h2.ready().await.unwrap().send_request(req, false).unwrap();
    let answer = tokio::time::timeout(WAIT, answer).await.unwrap().unwrap();
    assert_eq!(answer.status(), StatusCode::REQUEST_TIMEOUT);

    // HTTP/2: a body already past its length.
    let mut tcp = TcpStream::connect(("127.0.0.1", gw.port)).await.unwrap();
    let mut out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    out.extend(frame(SETTINGS, 0, 0, &[]));
    out.extend(frame(HEADERS, END_HEADERS, 1, &post("/h2-past", "5")));
    out.extend(frame(DATA, END_STREAM, 1, b"hello world"));
    tcp.write_all(&out).await.unwrap();
    let frames = frames_until(&mut tcp, |fs| {
        fs.contains(&(RST_STREAM, 1)) || fs.iter().any(|f| f.0 == GOAWAY)
    })
    .await;
    assert!(frames.contains(&(RST_STREAM, 1)), "{frames:?}");

    // HTTP/3: the same two.
    let conn = support::http3::connect(&client, port, "app.test")
        .await
        .expect("HTTP/3 connection");
    let req = Request::post("https://app.test/h3-never")
        .header("content-length", "5")
        .body(())
        .unwrap();
    let mut stream = conn.sender().send_request(req).await.unwrap();
    let answer = tokio::time::timeout(WAIT, stream.recv_response())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(answer.status(), StatusCode::REQUEST_TIMEOUT);
    h3_past_its_length(&conn, "/h3-past").await;

    let series = |code: &str, entry_point: &str| {
        format!(
            r#"gangway_entrypoint_requests_total{{code="{code}",method="POST",protocol="http",entrypoint="{entry_point}"}} 1"#
        )
    };
    let wanted = [
        series("408", "web"),
        series("400", "web"),
        series("408", "websecure"),
        series("400", "websecure"),
    ];
    eventually(WAIT, "the refusals counted", || async {
        let text = metrics(internal).await;
        wanted.iter().all(|w| text.lines().any(|l| l == w))
    })
    .await;
    let lines = [
        r#""POST /h2-never HTTP/2.0" 408 "#,
        r#""POST /h2-past HTTP/2.0" 400 "#,
        r#""POST /h3-never HTTP/3.0" 408 "#,
        r#""POST /h3-past HTTP/3.0" 400 "#,
    ];
    eventually(WAIT, "the refusals logged", || async {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        lines.iter().all(|l| text.contains(l))
    })
    .await;
    let paths = seen.paths.lock().unwrap().clone();
    assert!(
        !paths
            .iter()
            .any(|p| p.contains("never") || p.contains("past")),
        "a refused request reached the server: {paths:?}"
    );
}
