//! `compress`: gzip, Brotli or zstd, chosen from the client's
//! `Accept-Encoding` (quality values, then the order of `encodings`), for
//! responses of at least `minResponseBodyBytes` whose type is not excluded
//! (`application/grpc` never is compressed).
//!
//! The body is compressed as it streams: output goes out as the compressor
//! produces it, and whenever the server pauses the compressor is flushed, so
//! server-sent events and other streams arrive without waiting for more.

use super::{Exchange, Middleware, MiddlewareError, Next, Req, Resp};
use crate::body::{BoxError, ProxyBody};
use crate::config::dynamic::middleware as model;
use bytes::Bytes;
use futures_util::FutureExt as _;
use futures_util::future::BoxFuture;
use http::header::{self, HeaderMap, HeaderValue};
use http::{Method, StatusCode};
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt as _;
use std::collections::VecDeque;
use std::io::Write;
use std::pin::Pin;
use std::task::{Context, Poll};

const DEFAULT_MIN: u64 = 1024;

/// A content coding gangway can produce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// `gzip`.
    Gzip,
    /// `br`.
    Brotli,
    /// `zstd`.
    Zstd,
}

impl Encoding {
    fn parse(s: &str) -> Option<Self> {
        match s {
            "gzip" => Some(Encoding::Gzip),
            "br" => Some(Encoding::Brotli),
            "zstd" => Some(Encoding::Zstd),
            _ => None,
        }
    }

    fn header(self) -> HeaderValue {
        HeaderValue::from_static(match self {
            Encoding::Gzip => "gzip",
            Encoding::Brotli => "br",
            Encoding::Zstd => "zstd",
        })
    }
}

/// A compiled `compress`.
pub struct Compress {
    /// In priority order.
    encodings: Vec<Encoding>,
    default: Option<Encoding>,
    excluded: Vec<String>,
    included: Vec<String>,
    min: u64,
}

fn media_types(option: &'static str, list: &[String]) -> Result<Vec<String>, MiddlewareError> {
    list.iter()
        .map(|t| {
            let m = media_type(t);
            if m.is_empty() || !m.contains('/') {
                Err(MiddlewareError::invalid(
                    option,
                    format!("`{t}` is not a media type"),
                ))
            } else {
                Ok(m)
            }
        })
        .collect()
}

/// `Text/HTML; charset=utf-8` → `text/html`.
fn media_type(t: &str) -> String {
    t.split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// Compiles a `compress`.
pub fn compile(cfg: &model::Compress) -> Result<Compress, MiddlewareError> {
    if !cfg.excluded_content_types.is_empty() && !cfg.included_content_types.is_empty() {
        return Err(MiddlewareError::invalid(
            "includedContentTypes",
            "excludedContentTypes and includedContentTypes cannot both be set",
        ));
    }
    let mut excluded = vec!["application/grpc".to_owned()];
    excluded.extend(media_types(
        "excludedContentTypes",
        &cfg.excluded_content_types,
    )?);
    let names: Vec<&str> = if cfg.encodings.is_empty() {
        vec!["gzip", "br", "zstd"]
    } else {
        cfg.encodings.iter().map(|s| s.trim()).collect()
    };
    let encodings = names
        .iter()
        .map(|n| {
            Encoding::parse(n).ok_or_else(|| {
                MiddlewareError::invalid("encodings", format!("`{n}` is not gzip, br or zstd"))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let default = match cfg.default_encoding.as_deref().filter(|d| !d.is_empty()) {
        None => None,
        Some(d) => Some(
            Encoding::parse(d)
                .filter(|e| encodings.contains(e))
                .ok_or_else(|| {
                    MiddlewareError::invalid(
                        "defaultEncoding",
                        format!("`{d}` is not one of the encodings"),
                    )
                })?,
        ),
    };
    let min = match cfg.min_response_body_bytes {
        None | Some(0) => DEFAULT_MIN,
        Some(n) if n > 0 => n as u64,
        Some(n) => {
            return Err(MiddlewareError::invalid(
                "minResponseBodyBytes",
                format!("must not be negative, not {n}"),
            ));
        }
    };
    Ok(Compress {
        encodings,
        default,
        excluded,
        included: media_types("includedContentTypes", &cfg.included_content_types)?,
        min,
    })
}

impl Compress {
    /// The encoding for this request's `Accept-Encoding` (None: send as is).
    pub fn choose(&self, accept: Option<&HeaderValue>) -> Option<Encoding> {
        let Some(accept) = accept else {
            return self.default;
        };
        let text = accept.to_str().ok()?;
        if text.trim().is_empty() {
            return None;
        }
        let mut best: Option<(f64, usize, Option<Encoding>)> = None;
        for item in text.split(',') {
            let mut parts = item.split(';');
            let name = parts.next().unwrap_or("").trim();
            let q = parts
                .find_map(|p| p.trim().strip_prefix("q="))
                .map_or(Some(1.0), |q| q.trim().parse::<f64>().ok());
            let Some(q) = q.filter(|q| *q > 0.0) else {
                continue;
            };
            // Rank: quality first, then the configured order; `*` ranks
            // before every named encoding, `identity` after.
            let (rank, enc) = match name {
                "*" => (0, Some(self.default.unwrap_or(self.encodings[0]))),
                "identity" => (self.encodings.len() + 1, None),
                n => match Encoding::parse(n)
                    .and_then(|e| self.encodings.iter().position(|x| *x == e).map(|i| (i, e)))
                {
                    Some((i, e)) => (i + 1, Some(e)),
                    None => continue,
                },
            };
            let better = match best {
                None => true,
                Some((bq, br, _)) => q > bq || (q == bq && rank < br),
            };
            if better {
                best = Some((q, rank, enc));
            }
        }
        best.and_then(|(_, _, e)| e)
    }

    fn type_allowed(&self, headers: &HeaderMap) -> bool {
        let t = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(media_type)
            .unwrap_or_default();
        if !self.included.is_empty() {
            return self.included.contains(&t);
        }
        !self.excluded.contains(&t)
    }
}

impl Middleware for Compress {
    fn wraps(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, req: Req, _cx: &'a Exchange, next: Next<'a>) -> BoxFuture<'a, Resp> {
        let request_type = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(media_type);
        let encoding = if req.method() == Method::HEAD
            || request_type.is_some_and(|t| self.excluded.contains(&t))
        {
            None
        } else {
            self.choose(req.headers().get(header::ACCEPT_ENCODING))
        };
        Box::pin(async move {
            let resp = next.run(req).await;
            let Some(encoding) = encoding else {
                return resp;
            };
            let status = resp.status();
            let h = resp.headers();
            if status.is_informational()
                || status == StatusCode::NO_CONTENT
                || status == StatusCode::NOT_MODIFIED
                || status == StatusCode::PARTIAL_CONTENT
                || h.contains_key(header::CONTENT_ENCODING)
                || h.contains_key(header::CONTENT_RANGE)
                || !self.type_allowed(h)
            {
                return resp;
            }
            if let Some(len) = resp.body().size_hint().exact() {
                if len < self.min {
                    return resp;
                }
                let (parts, body) = resp.into_parts();
                let input = Replay {
                    peeked: VecDeque::new(),
                    failed: None,
                    rest: Some(body),
                };
                return compressed(parts, input, encoding);
            }
            // Unknown length: look at what the server has already sent, up
            // to the minimum; a body that ends below it goes as is.
            let (parts, mut body) = resp.into_parts();
            let mut peeked = VecDeque::new();
            let mut seen = 0u64;
            let mut ended = false;
            let mut first = true;
            let mut failed = None;
            while seen < self.min {
                let frame = if first {
                    first = false;
                    body.frame().await
                } else {
                    match body.frame().now_or_never() {
                        Some(f) => f,
                        None => break,
                    }
                };
                match frame {
                    None => {
                        ended = true;
                        break;
                    }
                    Some(Ok(f)) => {
                        if let Some(d) = f.data_ref() {
                            seen += d.len() as u64;
                        }
                        peeked.push_back(f);
                    }
                    Some(Err(e)) => {
                        failed = Some(e);
                        break;
                    }
                }
            }
            let input = Replay {
                peeked,
                failed,
                rest: Some(body),
            };
            if ended && seen < self.min || input.failed.is_some() {
                return Resp::from_parts(parts, ProxyBody::boxed(input));
            }
            compressed(parts, input, encoding)
        })
    }
}

fn compressed(mut parts: http::response::Parts, input: Replay, encoding: Encoding) -> Resp {
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.remove(header::ACCEPT_RANGES);
    parts
        .headers
        .insert(header::CONTENT_ENCODING, encoding.header());
    parts
        .headers
        .append(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    let body = Compressing {
        input,
        encoder: Some(Encoder::new(encoding)),
        pending: 0,
        trailers: None,
        done: false,
    };
    Resp::from_parts(parts, ProxyBody::boxed(body))
}

/// Frames already read (and the error that stopped the reading, if any),
/// then the rest of the body.
pub(crate) struct Replay {
    /// Frames read ahead, sent first.
    pub(crate) peeked: VecDeque<Frame<Bytes>>,
    /// The error that stopped the reading ahead, sent after them.
    pub(crate) failed: Option<BoxError>,
    /// The body still to be read.
    pub(crate) rest: Option<ProxyBody>,
}

impl Body for Replay {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if let Some(f) = self.peeked.pop_front() {
            return Poll::Ready(Some(Ok(f)));
        }
        if let Some(e) = self.failed.take() {
            self.rest = None;
            return Poll::Ready(Some(Err(e)));
        }
        match &mut self.rest {
            Some(rest) => Pin::new(rest).poll_frame(cx),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.peeked.is_empty()
            && self.failed.is_none()
            && self.rest.as_ref().is_none_or(|r| r.is_end_stream())
    }

    fn size_hint(&self) -> SizeHint {
        let peeked: u64 = self
            .peeked
            .iter()
            .filter_map(|f| f.data_ref())
            .map(|d| d.len() as u64)
            .sum();
        let mut hint = self
            .rest
            .as_ref()
            .map_or(SizeHint::with_exact(0), |r| r.size_hint());
        hint.set_lower(hint.lower() + peeked);
        if let Some(u) = hint.upper() {
            hint.set_upper(u + peeked);
        }
        hint
    }
}

enum Encoder {
    Gzip(flate2::write::GzEncoder<Vec<u8>>),
    Brotli(Box<brotli::CompressorWriter<Vec<u8>>>),
    Zstd(zstd::stream::write::Encoder<'static, Vec<u8>>),
}

impl Encoder {
    fn new(e: Encoding) -> Self {
        match e {
            Encoding::Gzip => Encoder::Gzip(flate2::write::GzEncoder::new(
                Vec::new(),
                flate2::Compression::default(),
            )),
            // Quality 5 and a 4 MiB window: a common choice for dynamic content.
            Encoding::Brotli => Encoder::Brotli(Box::new(brotli::CompressorWriter::new(
                Vec::new(),
                4096,
                5,
                22,
            ))),
            Encoding::Zstd => match zstd::stream::write::Encoder::new(Vec::new(), 3) {
                Ok(z) => Encoder::Zstd(z),
                // zstd cannot set up only when out of memory; gzip then.
                Err(_) => Encoder::Gzip(flate2::write::GzEncoder::new(
                    Vec::new(),
                    flate2::Compression::default(),
                )),
            },
        }
    }

    fn write(&mut self, data: &[u8]) -> std::io::Result<()> {
        match self {
            Encoder::Gzip(e) => e.write_all(data),
            Encoder::Brotli(e) => e.write_all(data),
            Encoder::Zstd(e) => e.write_all(data),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Encoder::Gzip(e) => e.flush(),
            Encoder::Brotli(e) => e.flush(),
            Encoder::Zstd(e) => e.flush(),
        }
    }

    /// Output produced so far, taken out.
    fn take(&mut self) -> Bytes {
        let out = match self {
            Encoder::Gzip(e) => e.get_mut(),
            Encoder::Brotli(e) => e.get_mut(),
            Encoder::Zstd(e) => e.get_mut(),
        };
        Bytes::from(std::mem::take(out))
    }

    fn finish(self) -> std::io::Result<Bytes> {
        let out = match self {
            Encoder::Gzip(e) => e.finish()?,
            Encoder::Brotli(e) => e.into_inner(),
            Encoder::Zstd(e) => e.finish()?,
        };
        Ok(Bytes::from(out))
    }
}

/// The compressing body.
struct Compressing {
    input: Replay,
    encoder: Option<Encoder>,
    /// Bytes written to the encoder since the last flush.
    pending: usize,
    trailers: Option<HeaderMap>,
    done: bool,
}

impl Body for Compressing {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        loop {
            if this.done {
                return Poll::Ready(this.trailers.take().map(|t| Ok(Frame::trailers(t))));
            }
            let Some(encoder) = this.encoder.as_mut() else {
                this.done = true;
                continue;
            };
            match Pin::new(&mut this.input).poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) => {
                        encoder.write(&data)?;
                        this.pending += data.len();
                        let out = encoder.take();
                        if !out.is_empty() {
                            return Poll::Ready(Some(Ok(Frame::data(out))));
                        }
                    }
                    Err(frame) => {
                        if let Ok(t) = frame.into_trailers() {
                            this.trailers = Some(t);
                        }
                    }
                },
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(None) => {
                    this.done = true;
                    let last = this.encoder.take().map(Encoder::finish).transpose()?;
                    if let Some(last) = last.filter(|b| !b.is_empty()) {
                        return Poll::Ready(Some(Ok(Frame::data(last))));
                    }
                }
                Poll::Pending => {
                    // The server paused: send what the compressor holds, so
                    // a stream is not delayed until more arrives.
                    if this.pending > 0 {
                        this.pending = 0;
                        encoder.flush()?;
                        let out = encoder.take();
                        if !out.is_empty() {
                            return Poll::Ready(Some(Ok(Frame::data(out))));
                        }
                    }
                    return Poll::Pending;
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done && self.trailers.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compress(encodings: &[&str], default: Option<&str>) -> Compress {
        compile(&model::Compress {
            encodings: encodings.iter().map(|s| (*s).to_owned()).collect(),
            default_encoding: default.map(str::to_owned),
            ..Default::default()
        })
        .expect("compiles")
    }

    #[test]
    fn accept_encoding_picks_by_quality_then_order() {
        let c = compress(&[], None);
        let pick = |v: &str| c.choose(Some(&HeaderValue::from_str(v).expect("value")));
        assert_eq!(pick("gzip, br, zstd"), Some(Encoding::Gzip));
        assert_eq!(pick("br;q=0.9, zstd"), Some(Encoding::Zstd));
        assert_eq!(pick("zstd;q=0, br;q=0.5"), Some(Encoding::Brotli));
        assert_eq!(pick("deflate"), None);
        assert_eq!(pick(""), None);
        assert_eq!(pick("*"), Some(Encoding::Gzip));
        assert_eq!(pick("identity, gzip;q=0.5"), None);
        assert_eq!(c.choose(None), None);
        let z = compress(&["zstd", "gzip"], Some("gzip"));
        assert_eq!(
            z.choose(Some(&HeaderValue::from_static("gzip, zstd"))),
            Some(Encoding::Zstd)
        );
        assert_eq!(
            z.choose(Some(&HeaderValue::from_static("*"))),
            Some(Encoding::Gzip)
        );
        assert_eq!(z.choose(Some(&HeaderValue::from_static("br"))), None);
        assert_eq!(z.choose(None), Some(Encoding::Gzip));
    }

    #[test]
    fn bad_options_are_refused() {
        assert!(
            compile(&model::Compress {
                encodings: vec!["deflate".into()],
                ..Default::default()
            })
            .is_err()
        );
        assert!(
            compile(&model::Compress {
                excluded_content_types: vec!["text/html".into()],
                included_content_types: vec!["text/css".into()],
                ..Default::default()
            })
            .is_err()
        );
        assert!(
            compile(&model::Compress {
                encodings: vec!["gzip".into()],
                default_encoding: Some("br".into()),
                ..Default::default()
            })
            .is_err()
        );
    }
}
