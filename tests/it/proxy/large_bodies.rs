//! Bodies far larger than gangway's memory: a 100 MiB upload and a 100 MiB
//! download, over HTTP/1.1 and over HTTP/2, go through intact while gangway's
//! peak resident size stays small, which it cannot if it buffers a body
//! anywhere.

use crate::support;

use bytes::Bytes;
use http::header::CONTENT_LENGTH;
use http::{Method, Request, Response, StatusCode};
use http_body::Frame;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Empty, Full, StreamBody};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use std::convert::Infallible;
use std::time::Duration;
use support::tls::TlsClient;
use support::{Backend, Gangway, eventually, free_port, one_route};

const CHUNK: usize = 64 * 1024;
const CHUNKS: usize = 1600;
/// 100 MiB.
const TOTAL: u64 = (CHUNK * CHUNKS) as u64;
/// How much gangway's peak RSS may grow while bodies pass (KiB): well below
/// one body. Measured as growth from before the transfers, since what an
/// idle gangway holds depends on the build (a debug binary's mapped code
/// grows with every feature), not on the bodies.
const RSS_GROWTH_LIMIT_KIB: u64 = 16 * 1024;

type Body = UnsyncBoxBody<Bytes, Infallible>;

/// Deterministic content: chunk `k` is a window into a fixed pattern, shifted
/// by `k`, so reordered, dropped or repeated chunks change the checksum.
#[derive(Clone)]
struct Content {
    pattern: Bytes,
}

impl Content {
    fn new() -> Self {
        let pattern: Vec<u8> = (0..CHUNK + 256)
            .map(|i| (i.wrapping_mul(31) ^ (i >> 9)) as u8)
            .collect();
        Content {
            pattern: Bytes::from(pattern),
        }
    }

    fn chunk(&self, k: usize) -> Bytes {
        let shift = (k * 7) % 251;
        self.pattern.slice(shift..shift + CHUNK)
    }

    /// The whole content as a lazily generated, streaming body.
    fn body(&self) -> Body {
        let me = self.clone();
        let frames =
            futures_util::stream::iter((0..CHUNKS).map(move |k| Ok(Frame::data(me.chunk(k)))));
        StreamBody::new(frames).boxed_unsync()
    }

    fn tally(&self) -> Tally {
        let mut t = Tally::new();
        for k in 0..CHUNKS {
            t.add(&self.chunk(k));
        }
        t
    }
}

/// Byte count and an order-sensitive checksum (64-bit FNV-1a).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Tally {
    bytes: u64,
    fnv: u64,
}

impl Tally {
    fn new() -> Self {
        Tally {
            bytes: 0,
            fnv: 0xcbf2_9ce4_8422_2325,
        }
    }

    fn add(&mut self, data: &[u8]) {
        self.bytes += data.len() as u64;
        for &b in data {
            self.fnv = (self.fnv ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    fn render(self) -> String {
        format!("{} {:016x}", self.bytes, self.fnv)
    }
}

/// Consumes a body frame by frame, keeping only the tally.
async fn tally_of(mut body: Incoming) -> Result<Tally, hyper::Error> {
    let mut t = Tally::new();
    while let Some(frame) = body.frame().await {
        if let Some(data) = frame?.data_ref() {
            t.add(data);
        }
    }
    Ok(t)
}

fn text(status: StatusCode, s: String) -> Response<Body> {
    let mut resp = Response::new(Full::new(Bytes::from(s)).boxed_unsync());
    *resp.status_mut() = status;
    resp
}

#[tokio::test]
async fn hundred_mib_each_way_with_bounded_memory() {
    let content = Content::new();
    let expected = content.tally();
    assert_eq!(expected.bytes, TOTAL);

    let backend = {
        let content = content.clone();
        Backend::serve(move |req: Request<Incoming>| {
            let content = content.clone();
            async move {
                match (req.method().clone(), req.uri().path()) {
                    (Method::POST, "/upload") => match tally_of(req.into_body()).await {
                        Ok(t) => text(StatusCode::OK, t.render()),
                        Err(e) => text(
                            StatusCode::INTERNAL_SERVER_ERROR,
                            format!("upload broke off: {e}"),
                        ),
                    },
                    (Method::GET, "/big") => {
                        let mut resp = Response::new(content.body());
                        resp.headers_mut().insert(CONTENT_LENGTH, TOTAL.into());
                        resp
                    }
                    _ => text(StatusCode::OK, "ready".to_owned()),
                }
            }
        })
        .await
    };
    let tls_port = free_port();
    let gw = Gangway::with_file(
        // Any host: HTTP/2 names the URL's own (127.0.0.1:port) as `:authority`.
        &one_route("big", "PathPrefix(`/`)", &[&backend.url()]),
        &[
            &format!("--entryPoints.websecure.address=127.0.0.1:{tls_port}"),
            "--entryPoints.websecure.http.tls",
        ],
    )
    .await;
    eventually(Duration::from_secs(5), "config applied", || async {
        gw.get("big.test", "/").await.status == StatusCode::OK
    })
    .await;
    let before = gw.peak_rss_kib();

    // Over HTTP/1.1, then HTTP/2 (prior knowledge, and over TLS with ALPN
    // as browsers speak it), where flow control on both of gangway's sides
    // is what keeps the bodies out of memory.
    let plain = |http2: bool| {
        Client::builder(TokioExecutor::new())
            .http2_only(http2)
            .clone()
    };
    both_ways(
        "HTTP/1.1",
        plain(false).build_http(),
        plain(false).build_http(),
        &gw.url(""),
        &content,
    )
    .await;
    both_ways(
        "HTTP/2",
        plain(true).build_http(),
        plain(true).build_http(),
        &gw.url(""),
        &content,
    )
    .await;
    let https = || {
        // hyper-rustls offers h2 by ALPN itself.
        let tls = TlsClient {
            offer_alpn: false,
            ..TlsClient::insecure()
        }
        .config(b"h2");
        hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_only()
            .enable_http2()
            .build()
    };
    both_ways(
        "HTTP/2 over TLS",
        plain(true).build(https()),
        plain(true).build(https()),
        &format!("https://127.0.0.1:{tls_port}"),
        &content,
    )
    .await;

    let peak = gw.peak_rss_kib();
    println!(
        "gangway peak RSS: {peak} KiB after 3 x 2 x {} MiB (was {before} KiB before the transfers)",
        TOTAL / (1024 * 1024)
    );
    assert!(
        peak.saturating_sub(before) < RSS_GROWTH_LIMIT_KIB,
        "gangway's peak RSS grew from {before} to {peak} KiB (limit {RSS_GROWTH_LIMIT_KIB} KiB of growth) moving {TOTAL}-byte bodies: it buffers"
    );
}

/// Uploads and downloads the whole content through gangway with these
/// clients, `base` being gangway's URL, and checks both arrive intact.
async fn both_ways<C>(
    version: &str,
    uploader: Client<C, Body>,
    downloader: Client<C, Empty<Bytes>>,
    base: &str,
    content: &Content,
) where
    C: hyper_util::client::legacy::connect::Connect + Clone + Send + Sync + 'static,
{
    let expected = content.tally();
    // Upload: streamed from a generator, chunked (no length known upfront).
    let req = Request::post(format!("{base}/upload"))
        .body(content.body())
        .unwrap();
    let resp = uploader
        .request(req)
        .await
        .unwrap_or_else(|e| panic!("{version}: upload through gangway: {e}"));
    let status = resp.status();
    let answer = resp
        .into_body()
        .collect()
        .await
        .expect("upload answer")
        .to_bytes();
    let answer = String::from_utf8_lossy(&answer);
    assert_eq!(status, StatusCode::OK, "{version}: {answer}");
    assert_eq!(
        answer,
        expected.render(),
        "{version}: the backend received different bytes than were sent"
    );

    // Download: read frame by frame, never held whole.
    let req = Request::get(format!("{base}/big"))
        .body(Empty::new())
        .unwrap();
    let resp = downloader
        .request(req)
        .await
        .unwrap_or_else(|e| panic!("{version}: download through gangway: {e}"));
    assert_eq!(resp.status(), StatusCode::OK, "{version}");
    assert_eq!(
        resp.headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()),
        Some(TOTAL.to_string().as_str()),
        "{version}"
    );
    let got = tally_of(resp.into_body()).await.expect("download body");
    assert_eq!(
        got, expected,
        "{version}: the client received different bytes than the backend sent"
    );
}

/// Gangway and the kernel may hold this much of an answer for a client
/// that has stopped reading (h2 send buffers, hyper's read buffer, the
/// loopback sockets' buffers on both of gangway's sides): far less than
/// the answer.
const STALLED_BOUND: u64 = 24 * 1024 * 1024;

/// A client that stops reading an HTTP/2 answer over TLS holds back the
/// server: flow control on gangway's client side and back-pressure on its
/// server side keep what is produced within a bound of what was read, and
/// gangway's memory small; once the client reads again the answer arrives
/// whole.
#[tokio::test]
async fn a_client_that_stops_reading_holds_back_the_server() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    let content = Content::new();
    let produced = Arc::new(AtomicU64::new(0));
    let backend = {
        let (content, produced) = (content.clone(), produced.clone());
        Backend::serve(move |req: Request<Incoming>| {
            let (content, produced) = (content.clone(), produced.clone());
            async move {
                if req.uri().path() != "/big" {
                    return text(StatusCode::OK, "ready".to_owned());
                }
                // Counted as hyper asks for each chunk, that is as the
                // connection to gangway takes it.
                let frames = futures_util::stream::iter((0..CHUNKS).map(move |k| {
                    produced.fetch_add(CHUNK as u64, Ordering::SeqCst);
                    Ok(Frame::data(content.chunk(k)))
                }));
                let mut resp = Response::new(StreamBody::new(frames).boxed_unsync());
                resp.headers_mut().insert(CONTENT_LENGTH, TOTAL.into());
                resp
            }
        })
        .await
    };
    let tls_port = free_port();
    let gw = Gangway::with_file(
        &one_route("big", "PathPrefix(`/`)", &[&backend.url()]),
        &[
            &format!("--entryPoints.websecure.address=127.0.0.1:{tls_port}"),
            "--entryPoints.websecure.http.tls",
        ],
    )
    .await;
    eventually(Duration::from_secs(5), "config applied", || async {
        gw.get("big.test", "/ready").await.status == StatusCode::OK
    })
    .await;
    produced.store(0, Ordering::SeqCst);
    let before = gw.peak_rss_kib();

    // A browser-like client: HTTP/2 by ALPN, the protocol's 64 KiB windows.
    let connector = tokio_rustls::TlsConnector::from(Arc::new(TlsClient::insecure().config(b"h2")));
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", tls_port))
        .await
        .expect("connect");
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let tls = connector.connect(name, tcp).await.expect("TLS handshake");
    let (mut send, conn) = h2::client::Builder::new()
        .initial_window_size(64 * 1024)
        .initial_connection_window_size(64 * 1024)
        .handshake::<_, Bytes>(tls)
        .await
        .expect("HTTP/2 handshake");
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let req = Request::get(format!("https://127.0.0.1:{tls_port}/big"))
        .body(())
        .unwrap();
    let (answer, _) = send.send_request(req, true).expect("stream opened");
    let resp = answer.await.expect("answer head");
    assert_eq!(resp.status(), StatusCode::OK);
    let mut body = resp.into_body();
    let mut got = Tally::new();
    let take = |got: &mut Tally, data: Bytes, body: &mut h2::RecvStream| {
        got.add(&data);
        body.flow_control()
            .release_capacity(data.len())
            .expect("release capacity");
    };
    while got.bytes < 1024 * 1024 {
        let data = body.data().await.expect("more body").expect("body data");
        take(&mut got, data, &mut body);
    }

    // The client stops reading: wait until the backend is held back too,
    // that is until it has stopped producing for a while.
    let last = std::cell::Cell::new((u64::MAX, 0u32));
    eventually(Duration::from_secs(20), "the backend held back", || {
        let now = produced.load(Ordering::SeqCst);
        let (before, same) = last.get();
        let same = if now == before { same + 1 } else { 0 };
        last.set((now, same));
        async move { same >= 25 }
    })
    .await;
    let held = produced.load(Ordering::SeqCst);
    assert!(
        held < got.bytes + STALLED_BOUND,
        "{held} bytes produced for a client that read {}: gangway does not hold the server back",
        got.bytes
    );
    let peak = gw.peak_rss_kib();
    assert!(
        peak.saturating_sub(before) < RSS_GROWTH_LIMIT_KIB,
        "gangway's peak RSS grew from {before} to {peak} KiB for a stalled client (limit {RSS_GROWTH_LIMIT_KIB} KiB of growth)"
    );

    // Reading again: the rest arrives, intact.
    while let Some(data) = body.data().await {
        take(&mut got, data.expect("body data"), &mut body);
    }
    assert_eq!(got, content.tally(), "the client received different bytes");
}
