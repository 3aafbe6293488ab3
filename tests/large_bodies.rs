//! Bodies far larger than gangway's memory: a 100 MiB upload and a 100 MiB
//! download, over HTTP/1.1 and over HTTP/2, go through intact while gangway's
//! peak resident size stays small, which it cannot if it buffers a body
//! anywhere.

mod support;

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
use support::{Backend, Gangway, eventually, one_route};

const CHUNK: usize = 64 * 1024;
const CHUNKS: usize = 1600;
/// 100 MiB.
const TOTAL: u64 = (CHUNK * CHUNKS) as u64;
/// Gangway's peak RSS must stay under this (KiB): well below one body.
const RSS_LIMIT_KIB: u64 = 40 * 1024;

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
    let gw = Gangway::with_file(
        // Any host: HTTP/2 names the URL's own (127.0.0.1:port) as `:authority`.
        &one_route("big", "PathPrefix(`/`)", &[&backend.url()]),
        &[],
    )
    .await;
    eventually(Duration::from_secs(5), "config applied", || async {
        gw.get("big.test", "/").await.status == StatusCode::OK
    })
    .await;
    let before = gw.peak_rss_kib();

    // Over HTTP/1.1, then HTTP/2 (prior knowledge), where flow control
    // on both of gangway's sides is what keeps the bodies out of memory.
    for http2 in [false, true] {
        let version = if http2 { "HTTP/2" } else { "HTTP/1.1" };
        // Upload: streamed from a generator, chunked (no length known upfront).
        let uploader = Client::builder(TokioExecutor::new())
            .http2_only(http2)
            .build_http::<Body>();
        let req = Request::post(gw.url("/upload"))
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
        let downloader = Client::builder(TokioExecutor::new())
            .http2_only(http2)
            .build_http::<Empty<Bytes>>();
        let req = Request::get(gw.url("/big")).body(Empty::new()).unwrap();
        let resp = downloader
            .request(req)
            .await
            .unwrap_or_else(|e| panic!("{version}: download through gangway: {e}"));
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(
            resp.headers()
                .get(CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok()),
            Some(TOTAL.to_string().as_str())
        );
        let got = tally_of(resp.into_body()).await.expect("download body");
        assert_eq!(
            got, expected,
            "{version}: the client received different bytes than the backend sent"
        );
    }

    let peak = gw.peak_rss_kib();
    println!(
        "gangway peak RSS: {peak} KiB after 2 x 2 x {} MiB (was {before} KiB before the transfers)",
        TOTAL / (1024 * 1024)
    );
    assert!(
        peak < RSS_LIMIT_KIB,
        "gangway's peak RSS reached {peak} KiB (limit {RSS_LIMIT_KIB} KiB) moving {TOTAL}-byte bodies: it buffers"
    );
}
