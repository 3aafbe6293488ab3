//! Each per-entry-point limit against the real binary: past it the client
//! gets the documented answer and the backend nothing; within it, requests
//! pass.

mod support;

use bytes::Bytes;
use http_body_util::Full;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use support::{Backend, Gangway, eventually, one_route};

/// A backend that counts requests and remembers the most it had in flight.
async fn counting(delay: Duration) -> (Backend, Arc<AtomicUsize>, Arc<AtomicUsize>) {
    let total = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let now = Arc::new(AtomicUsize::new(0));
    let (t, m) = (total.clone(), most.clone());
    let b = Backend::serve(move |_req: http::Request<hyper::body::Incoming>| {
        let (t, m, now) = (t.clone(), m.clone(), now.clone());
        async move {
            t.fetch_add(1, Ordering::SeqCst);
            let n = now.fetch_add(1, Ordering::SeqCst) + 1;
            m.fetch_max(n, Ordering::SeqCst);
            tokio::time::sleep(delay).await;
            now.fetch_sub(1, Ordering::SeqCst);
            http::Response::new(Full::new(Bytes::from_static(b"ok")))
        }
    })
    .await;
    (b, total, most)
}

async fn start(b: &Backend, extra: &[&str]) -> Gangway {
    let gw = Gangway::with_file(&one_route("app", "PathPrefix(`/`)", &[&b.url()]), extra).await;
    eventually(Duration::from_secs(10), "a.test is routed", || async {
        gw.get("a.test", "/").await.status == 200
    })
    .await;
    gw
}

/// Sends raw bytes and reads until gangway closes or 10 s pass quietly.
async fn raw(gw: &Gangway, bytes: &[u8]) -> (String, bool) {
    support::raw_exchange(gw, bytes, Duration::from_secs(10)).await
}

fn request_with(headers: &str) -> String {
    format!("GET / HTTP/1.1\r\nHost: a.test\r\n{headers}Connection: close\r\n\r\n")
}

#[tokio::test]
async fn request_heads_past_the_size_or_count_limit_get_431() {
    let (b, total, _) = counting(Duration::ZERO).await;
    let gw = start(
        &b,
        &[
            "--entryPoints.web.limits.maxHeaderBytes=16384",
            "--entryPoints.web.limits.maxHeaders=20",
        ],
    )
    .await;
    let before = total.load(Ordering::SeqCst);
    let (ok, _) = raw(
        &gw,
        request_with(&format!("X-Big: {}\r\n", "a".repeat(8_000))).as_bytes(),
    )
    .await;
    assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
    let (big, closed) = raw(
        &gw,
        request_with(&format!("X-Big: {}\r\n", "a".repeat(20_000))).as_bytes(),
    )
    .await;
    assert!(big.starts_with("HTTP/1.1 431"), "{big}");
    assert!(closed);
    let many: String = (0..25).map(|i| format!("X-{i}: v\r\n")).collect();
    let (many, closed) = raw(&gw, request_with(&many).as_bytes()).await;
    assert!(many.starts_with("HTTP/1.1 431"), "{many}");
    assert!(closed);
    let few: String = (0..10).map(|i| format!("X-{i}: v\r\n")).collect();
    let (few, _) = raw(&gw, request_with(&few).as_bytes()).await;
    assert!(few.starts_with("HTTP/1.1 200"), "{few}");
    // Only the two requests within the limits reached the backend.
    assert_eq!(total.load(Ordering::SeqCst) - before, 2);
}

#[tokio::test]
async fn a_client_that_never_finishes_its_head_is_cut_off() {
    let (b, total, _) = counting(Duration::ZERO).await;
    let gw = start(
        &b,
        &["--entryPoints.web.transport.respondingTimeouts.readTimeout=1s"],
    )
    .await;
    let before = total.load(Ordering::SeqCst);
    // Slowloris: half a head, then silence.
    let (answer, closed) = raw(&gw, b"GET / HTTP/1.1\r\nHost: a.te").await;
    assert!(closed, "the connection is still open: {answer}");
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 408"),
        "{answer}"
    );
    assert_eq!(total.load(Ordering::SeqCst), before);
}

#[tokio::test]
async fn http2_streams_beyond_max_concurrent_streams_wait_their_turn() {
    let (b, total, most) = counting(Duration::from_millis(300)).await;
    let gw = start(&b, &["--entryPoints.web.http2.maxConcurrentStreams=2"]).await;
    // One request first, so the client has the server's SETTINGS before
    // it opens streams (earlier ones would be refused with REFUSED_STREAM,
    // which is the protocol's answer, safe to retry).
    let first = http::Request::get(gw.url("/"))
        .version(http::Version::HTTP_2)
        .body(Full::default())
        .unwrap();
    assert_eq!(gw.send(first).await.status, 200);
    let before = total.load(Ordering::SeqCst);
    let sends = (0..6).map(|_| {
        let req = http::Request::get(gw.url("/"))
            .version(http::Version::HTTP_2)
            .body(Full::default())
            .unwrap();
        gw.send(req)
    });
    let answers = futures_util::future::join_all(sends).await;
    assert!(answers.iter().all(|a| a.status == 200));
    assert_eq!(total.load(Ordering::SeqCst) - before, 6);
    // The client's one connection never had more than two streams open.
    assert!(most.load(Ordering::SeqCst) <= 2, "{most:?}");
}
