//! Connections to servers, seen from the server: keep-alive connections are
//! reused, replaced when the server closes them, closed after
//! `idleConnTimeout`, and no more than `maxIdleConnsPerHost` are kept idle;
//! h2c requests share one connection as streams.

use crate::support;

use http::StatusCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use support::{Gangway, eventually, one_route};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// What the server saw: connections opened and connections closed by the
/// client (gangway).
#[derive(Default)]
struct Seen {
    opened: AtomicUsize,
    closed_by_client: AtomicUsize,
}

/// A keep-alive HTTP/1.1 server on a raw socket. `/slow` answers after
/// 300 ms, HEAD and `/empty` with no body, `/big` with 1 MiB, a POST
/// with the length of the body it read; with `close_idle_after`, it
/// closes its side of a connection that has been idle that long (as servers
/// with a keep-alive timeout do) and counts the connection closed by the
/// client once gangway closes the other side.
async fn server(close_idle_after: Option<Duration>) -> (String, Arc<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Seen::default());
    let counts = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = listener.accept().await else {
                continue;
            };
            counts.opened.fetch_add(1, Ordering::SeqCst);
            let counts = counts.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let mut head = Vec::new();
                loop {
                    let read = match close_idle_after {
                        Some(limit) if head.is_empty() => {
                            match tokio::time::timeout(limit, s.read(&mut buf)).await {
                                Ok(r) => r,
                                // Closes its side, and sees when gangway
                                // closes the other.
                                Err(_) => {
                                    let _ = s.shutdown().await;
                                    let _ = s.read(&mut buf).await;
                                    counts.closed_by_client.fetch_add(1, Ordering::SeqCst);
                                    return;
                                }
                            }
                        }
                        _ => s.read(&mut buf).await,
                    };
                    match read {
                        Ok(0) | Err(_) => {
                            counts.closed_by_client.fetch_add(1, Ordering::SeqCst);
                            return;
                        }
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                    while let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") {
                        let request = String::from_utf8_lossy(&head[..end]).into_owned();
                        let length = content_length(&request);
                        if head.len() < end + 4 + length {
                            // The request's body is still arriving.
                            break;
                        }
                        head.drain(..end + 4 + length);
                        let answer: Vec<u8> = if request.starts_with("GET /slow") {
                            tokio::time::sleep(Duration::from_millis(300)).await;
                            b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\nslow".to_vec()
                        } else if request.starts_with("HEAD") {
                            b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n".to_vec()
                        } else if request.starts_with("GET /empty") {
                            b"HTTP/1.1 204 No Content\r\n\r\n".to_vec()
                        } else if request.starts_with("GET /big") {
                            let mut big =
                                format!("HTTP/1.1 200 OK\r\ncontent-length: {BIG}\r\n\r\n")
                                    .into_bytes();
                            big.resize(big.len() + BIG, b'x');
                            big
                        } else if request.starts_with("POST") {
                            let got = length.to_string();
                            format!(
                                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{got}",
                                got.len()
                            )
                            .into_bytes()
                        } else {
                            b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok".to_vec()
                        };
                        if s.write_all(&answer).await.is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    (url, seen)
}

/// The size of the test server's `/big` answer: many reads and writes on
/// either side of gangway.
const BIG: usize = 1 << 20;

/// A request head's `content-length` (0 without one).
fn content_length(head: &str) -> usize {
    head.lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(0)
}

/// gangway with one worker: these tests count one pool's connections, and
/// each worker has pools of its own (tests/it/proxy/workers.rs).
async fn start(url: &str, extra: &[&str]) -> Gangway {
    let gw = Gangway::with_file_env(
        &one_route("app", "Host(`app.test`)", &[url]),
        extra,
        &[("TOKIO_WORKER_THREADS", "1")],
    )
    .await;
    eventually(Duration::from_secs(10), "routed", || async {
        gw.get("app.test", "/").await.status == StatusCode::OK
    })
    .await;
    gw
}

async fn status(gw: &Gangway, method: &str, path: &str) -> StatusCode {
    let req = http::Request::builder()
        .method(method)
        .uri(gw.url(path))
        .header("host", "app.test")
        .body(Default::default())
        .unwrap();
    gw.send(req).await.status
}

#[tokio::test]
async fn sequential_requests_share_one_server_connection() {
    let (url, seen) = server(None).await;
    let gw = start(&url, &[]).await;
    for i in 0..60 {
        let (method, path, want) = match i % 3 {
            0 => ("GET", "/", StatusCode::OK),
            1 => ("HEAD", "/", StatusCode::OK),
            _ => ("GET", "/empty", StatusCode::NO_CONTENT),
        };
        assert_eq!(status(&gw, method, path).await, want, "{method} {path}");
    }
    assert_eq!(
        seen.opened.load(Ordering::SeqCst),
        1,
        "answers with and without a body hand the connection back"
    );
}

#[tokio::test]
async fn large_bodies_both_ways_stream_over_one_reused_connection() {
    let (url, seen) = server(None).await;
    let gw = start(&url, &[]).await;
    for round in 0..4 {
        let upload = http::Request::post(gw.url("/upload"))
            .header("host", "app.test")
            .body(bytes::Bytes::from(vec![b'u'; 300_000]).into())
            .unwrap();
        let got = gw.send(upload).await;
        assert_eq!(got.status, StatusCode::OK, "round {round}");
        assert_eq!(&got.body[..], b"300000", "the server got the whole upload");
        let got = gw.get("app.test", "/big").await;
        assert_eq!(got.status, StatusCode::OK, "round {round}");
        assert_eq!(
            got.body.len(),
            BIG,
            "round {round}: the whole answer arrived"
        );
        assert!(got.body.iter().all(|b| *b == b'x'));
    }
    assert_eq!(
        seen.opened.load(Ordering::SeqCst),
        1,
        "the connection goes back to the pool after each long exchange"
    );
}

#[tokio::test]
async fn a_connection_the_server_closed_is_replaced_without_a_failed_request() {
    let (url, seen) = server(Some(Duration::from_millis(200))).await;
    let gw = start(&url, &[]).await;
    for _ in 0..3 {
        assert_eq!(status(&gw, "GET", "/").await, StatusCode::OK);
        // Longer than the server keeps an idle connection.
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert_eq!(status(&gw, "GET", "/").await, StatusCode::OK);
    assert!(seen.opened.load(Ordering::SeqCst) >= 2);
}

#[tokio::test]
async fn a_connection_the_server_closes_while_idle_is_closed_by_gangway_too() {
    let (url, seen) = server(Some(Duration::from_millis(200))).await;
    let gw = start(
        &url,
        &["--serversTransport.forwardingTimeouts.idleConnTimeout=60s"],
    )
    .await;
    assert_eq!(status(&gw, "GET", "/").await, StatusCode::OK);
    eventually(
        Duration::from_secs(15),
        "gangway closes its side of every connection the server closed",
        || async {
            seen.closed_by_client.load(Ordering::SeqCst) >= seen.opened.load(Ordering::SeqCst)
        },
    )
    .await;
}

/// gangway closes a server connection unused for `idleConnTimeout` (1 s
/// here), and opens a new one when a request needs it.
async fn closes_after_idle_conn_timeout(url: &str, seen: &Seen) {
    let gw = start(
        url,
        &["--serversTransport.forwardingTimeouts.idleConnTimeout=1s"],
    )
    .await;
    assert_eq!(status(&gw, "GET", "/").await, StatusCode::OK);
    eventually(
        Duration::from_secs(10),
        "gangway closes the idle connection",
        || async { seen.closed_by_client.load(Ordering::SeqCst) >= 1 },
    )
    .await;
    assert_eq!(status(&gw, "GET", "/").await, StatusCode::OK);
}

#[tokio::test]
async fn idle_connections_close_after_idle_conn_timeout() {
    let (url, seen) = server(None).await;
    closes_after_idle_conn_timeout(&url, &seen).await;
}

#[tokio::test]
async fn no_more_than_max_idle_conns_per_host_stay_open() {
    let (url, seen) = server(None).await;
    let gw = start(&url, &["--serversTransport.maxIdleConnsPerHost=2"]).await;
    let before = seen.opened.load(Ordering::SeqCst);
    let gw = Arc::new(gw);
    let slow: Vec<_> = (0..6)
        .map(|_| {
            let gw = gw.clone();
            tokio::spawn(async move { status(&gw, "GET", "/slow").await })
        })
        .collect();
    for s in slow {
        assert_eq!(s.await.unwrap(), StatusCode::OK);
    }
    let opened = seen.opened.load(Ordering::SeqCst) - before;
    assert!(
        opened >= 5,
        "six requests at once need their own connections: {opened}"
    );
    eventually(
        Duration::from_secs(5),
        "all but two connections closed",
        || async {
            seen.opened.load(Ordering::SeqCst) - seen.closed_by_client.load(Ordering::SeqCst) <= 2
        },
    )
    .await;
}

/// An h2c server (HTTP/2 with prior knowledge) answering `ok` after 50 ms,
/// so that requests sent together overlap. With `close_after`, each
/// connection is closed gracefully (GOAWAY) that long after it opened.
async fn h2c_server(close_after: Option<Duration>) -> (String, Arc<Seen>) {
    h2c_server_with(close_after, None).await
}

/// As [`h2c_server`], taking at most `max_streams` streams at once per
/// connection (HTTP/2's SETTINGS_MAX_CONCURRENT_STREAMS) when given.
async fn h2c_server_with(
    close_after: Option<Duration>,
    max_streams: Option<u32>,
) -> (String, Arc<Seen>) {
    use hyper::server::conn::http2;
    use hyper_util::rt::{TokioExecutor, TokioIo};
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("h2c://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Seen::default());
    let counts = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((s, _)) = listener.accept().await else {
                continue;
            };
            counts.opened.fetch_add(1, Ordering::SeqCst);
            let counts = counts.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(|_req| async {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    Ok::<_, std::convert::Infallible>(http::Response::new(
                        http_body_util::Full::new(bytes::Bytes::from_static(b"ok")),
                    ))
                });
                let conn = http2::Builder::new(TokioExecutor::new())
                    .max_concurrent_streams(max_streams)
                    .serve_connection(TokioIo::new(s), service);
                let mut conn = std::pin::pin!(conn);
                if let Some(after) = close_after {
                    tokio::select! {
                        _ = conn.as_mut() => return,
                        () = tokio::time::sleep(after) => conn.as_mut().graceful_shutdown(),
                    }
                }
                let _ = conn.await;
                counts.closed_by_client.fetch_add(1, Ordering::SeqCst);
            });
        }
    });
    (url, seen)
}

#[tokio::test]
async fn h2c_requests_share_one_connection_as_streams() {
    let (url, seen) = h2c_server(None).await;
    let gw = start(&url, &[]).await;
    let together = futures_util::future::join_all((0..40).map(|_| status(&gw, "GET", "/"))).await;
    assert!(
        together.iter().all(|s| *s == StatusCode::OK),
        "{together:?}"
    );
    for _ in 0..10 {
        assert_eq!(status(&gw, "GET", "/").await, StatusCode::OK);
    }
    assert_eq!(
        seen.opened.load(Ordering::SeqCst),
        1,
        "fifty requests, forty of them at once, over one connection"
    );
}

#[tokio::test]
async fn h2c_requests_past_the_servers_stream_limit_wait_for_a_free_stream() {
    let (url, seen) = h2c_server_with(None, Some(4)).await;
    let gw = start(&url, &[]).await;
    let together = futures_util::future::join_all((0..30).map(|_| status(&gw, "GET", "/"))).await;
    assert!(
        together.iter().all(|s| *s == StatusCode::OK),
        "{together:?}"
    );
    assert_eq!(seen.opened.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn an_h2c_connection_the_server_closed_is_replaced_without_a_failed_request() {
    let (url, seen) = h2c_server(Some(Duration::from_millis(300))).await;
    let gw = start(&url, &[]).await;
    for round in 0..3 {
        let answers =
            futures_util::future::join_all((0..10).map(|_| status(&gw, "GET", "/"))).await;
        assert!(
            answers.iter().all(|s| *s == StatusCode::OK),
            "round {round}: {answers:?}"
        );
        // Past the server's connection lifetime: the next round needs a new one.
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(seen.opened.load(Ordering::SeqCst) >= 3);
}

#[tokio::test]
async fn an_idle_h2c_connection_closes_after_idle_conn_timeout() {
    let (url, seen) = h2c_server(None).await;
    closes_after_idle_conn_timeout(&url, &seen).await;
}

/// An h2c server (on the test support's backend) that echoes a request's
/// body as it arrives on `/echo`, answers the length of the body it read
/// on `/count`, and sends 3 MiB on `/big`.
async fn h2c_bodies_server() -> support::Backend {
    use http_body_util::{BodyExt, Full, combinators::BoxBody};
    support::Backend::serve(|req: http::Request<hyper::body::Incoming>| async move {
        let body: BoxBody<bytes::Bytes, hyper::Error> = match req.uri().path() {
            "/echo" => req.into_body().boxed(),
            "/count" => {
                let got = req.into_body().collect().await.map(|b| b.to_bytes().len());
                let text = got.map_or_else(|e| format!("broken: {e}"), |n| n.to_string());
                Full::from(text).map_err(|never| match never {}).boxed()
            }
            "/big" => Full::from(vec![b'b'; 3 << 20])
                .map_err(|never| match never {})
                .boxed(),
            _ => Full::from("ok").map_err(|never| match never {}).boxed(),
        };
        http::Response::new(body)
    })
    .await
}

#[tokio::test]
async fn h2c_streams_carry_large_bodies_and_full_duplex_calls() {
    use http_body_util::{BodyExt, StreamBody};
    use hyper::body::Frame;
    type Chunk = Result<Frame<bytes::Bytes>, std::convert::Infallible>;

    let server = h2c_bodies_server().await;
    let gw = start(&server.url_as("h2c"), &[]).await;
    // The client speaks HTTP/2 with prior knowledge to gangway.
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", gw.port))
        .await
        .unwrap();
    let (mut client, conn) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(tcp),
    )
    .await
    .expect("h2c handshake with gangway");
    tokio::spawn(conn);
    let request = |path: &str, body| {
        http::Request::post(format!("http://app.test{path}"))
            .body(body)
            .unwrap()
    };

    // Full duplex: each part comes back before the next one is sent, so
    // the upload goes on after the answer has started.
    let (tx, rx) = tokio::sync::mpsc::channel::<Chunk>(1);
    let upload = StreamBody::new(tokio_stream::wrappers::ReceiverStream::new(rx)).boxed();
    let answer = tokio::time::timeout(
        Duration::from_secs(10),
        client.send_request(request("/echo", upload)),
    )
    .await
    .expect("the echo's head in time")
    .expect("echo answered");
    assert_eq!(answer.status(), StatusCode::OK);
    let mut echoed = answer.into_body();
    for part in ["one", "two", "three"] {
        tx.send(Ok(Frame::data(part.into()))).await.unwrap();
        let mut got = Vec::new();
        while got.len() < part.len() {
            let frame = tokio::time::timeout(Duration::from_secs(10), echoed.frame())
                .await
                .unwrap_or_else(|_| panic!("`{part}` was not echoed while the upload went on"))
                .expect("the echo goes on")
                .expect("echo frame");
            got.extend_from_slice(frame.data_ref().expect("data"));
        }
        assert_eq!(got, part.as_bytes());
    }
    drop(tx);
    let rest = echoed.collect().await.expect("the echo ends").to_bytes();
    assert!(rest.is_empty(), "{rest:?}");

    // 5 MiB up in 64 KiB parts, past every flow-control window on the way
    // (HTTP/2's 64 KiB default, gangway's 2 MiB per stream), and 3 MiB down.
    let (tx, rx) = tokio::sync::mpsc::channel::<Chunk>(4);
    tokio::spawn(async move {
        for _ in 0..80 {
            let part = bytes::Bytes::from(vec![b'u'; 64 << 10]);
            if tx.send(Ok(Frame::data(part))).await.is_err() {
                return;
            }
        }
    });
    let upload = StreamBody::new(tokio_stream::wrappers::ReceiverStream::new(rx)).boxed();
    let counted = client
        .send_request(request("/count", upload))
        .await
        .expect("count answered");
    let counted = counted.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(counted, (80usize << 16).to_string().as_bytes());
    let empty = http_body_util::Empty::new()
        .map_err(|never| match never {})
        .boxed();
    let big = client
        .send_request(request("/big", empty))
        .await
        .expect("big answered");
    assert_eq!(big.status(), StatusCode::OK);
    let big = big.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(big.len(), 3 << 20);
    assert!(big.iter().all(|b| *b == b'b'));
}

/// An h2c server that refuses every stream (RST_STREAM REFUSED_STREAM, which
/// promises the request was not processed) and counts them.
async fn h2c_refusing_server() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("h2c://{}", listener.local_addr().unwrap());
    let refused = Arc::new(AtomicUsize::new(0));
    let count = refused.clone();
    tokio::spawn(async move {
        loop {
            let Ok((s, _)) = listener.accept().await else {
                continue;
            };
            let count = count.clone();
            tokio::spawn(async move {
                let Ok(mut conn) = h2::server::handshake(s).await else {
                    return;
                };
                while let Some(Ok((_req, mut respond))) = conn.accept().await {
                    count.fetch_add(1, Ordering::SeqCst);
                    respond.send_reset(h2::Reason::REFUSED_STREAM);
                }
            });
        }
    });
    (url, refused)
}

#[tokio::test]
async fn a_stream_an_h2c_server_refuses_goes_to_the_next_server() {
    let (refusing, refused) = h2c_refusing_server().await;
    let (good, _) = h2c_server(None).await;
    let gw = Gangway::with_file(
        &one_route("app", "Host(`app.test`)", &[&refusing, &good]),
        &[],
    )
    .await;
    eventually(Duration::from_secs(10), "routed", || async {
        status(&gw, "GET", "/").await != StatusCode::NOT_FOUND
    })
    .await;
    // The first request sent to the refusing server goes on to the next
    // one; passive health then keeps the refusing one out for a while.
    for _ in 0..6 {
        assert_eq!(status(&gw, "GET", "/").await, StatusCode::OK);
    }
    assert!(refused.load(Ordering::SeqCst) >= 1, "{refused:?}");
}
