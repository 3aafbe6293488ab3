//! `grpcWeb`: a browser's gRPC-Web call (`application/grpc-web`, or
//! `application/grpc-web-text` with a base64 body) is sent on as gRPC, and
//! the answer comes back as gRPC-Web: the server's trailers become a last
//! message in the body (flag `0x80`), since a browser cannot read HTTP
//! trailers. The service's servers must speak gRPC (`h2c://` or HTTPS with
//! HTTP/2), as with Traefik.
//!
//! CORS follows the gRPC-Web wrapper Traefik uses: a preflight asking for
//! `x-grpc-web` is answered here for allowed origins, and answers to
//! allowed origins carry `Access-Control-Allow-Origin` with credentials.
//! Requests that are neither go on untouched.

use super::{Exchange, Middleware, MiddlewareError, Next, Req, Resp};
use crate::body::{BoxError, ProxyBody, RequestBody};
use crate::config::dynamic::middleware as model;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bytes::{BufMut as _, Bytes, BytesMut};
use futures_util::future::BoxFuture;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Response, StatusCode};
use http_body::{Body, Frame};
use std::pin::Pin;
use std::task::{Context, Poll};

const GRPC: &str = "application/grpc";
const GRPC_WEB: &str = "application/grpc-web";
const GRPC_WEB_TEXT: &str = "application/grpc-web-text";

/// A compiled `grpcWeb`.
pub struct GrpcWeb {
    any_origin: bool,
    origins: Vec<String>,
}

/// Compiles a `grpcWeb`.
pub fn compile(cfg: &model::GrpcWeb) -> Result<GrpcWeb, MiddlewareError> {
    Ok(GrpcWeb {
        any_origin: cfg.allow_origins.iter().any(|o| o == "*"),
        origins: cfg.allow_origins.clone(),
    })
}

impl GrpcWeb {
    fn allowed(&self, origin: &HeaderValue) -> bool {
        self.any_origin
            || origin
                .to_str()
                .is_ok_and(|o| self.origins.iter().any(|a| a == o))
    }

    /// The answer to a CORS preflight for a gRPC-Web call.
    fn preflight(&self, req: &Req) -> Resp {
        let mut resp = Response::new(ProxyBody::empty());
        let h = resp.headers_mut();
        h.insert(
            header::VARY,
            HeaderValue::from_static(
                "Origin, Access-Control-Request-Method, Access-Control-Request-Headers",
            ),
        );
        let Some(origin) = req
            .headers()
            .get(header::ORIGIN)
            .filter(|o| self.allowed(o))
        else {
            return resp;
        };
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
        h.insert(
            header::ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static("POST"),
        );
        if let Some(asked) = req.headers().get(header::ACCESS_CONTROL_REQUEST_HEADERS) {
            h.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, asked.clone());
        }
        h.insert(
            header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
            HeaderValue::from_static("true"),
        );
        h.insert(
            header::ACCESS_CONTROL_MAX_AGE,
            HeaderValue::from_static("600"),
        );
        resp
    }
}

fn content_type(headers: &HeaderMap) -> &str {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

fn is_preflight(req: &Req) -> bool {
    req.method() == Method::OPTIONS
        && req
            .headers()
            .get(header::ACCESS_CONTROL_REQUEST_HEADERS)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.to_ascii_lowercase().contains("x-grpc-web"))
}

impl Middleware for GrpcWeb {
    fn wraps(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, mut req: Req, _cx: &'a Exchange, next: Next<'a>) -> BoxFuture<'a, Resp> {
        if is_preflight(&req) {
            let resp = self.preflight(&req);
            return Box::pin(async move { resp });
        }
        let ct = content_type(req.headers());
        if req.method() != Method::POST || !ct.starts_with(GRPC_WEB) {
            return next.run(req);
        }
        let text = ct.starts_with(GRPC_WEB_TEXT);
        // `application/grpc-web+proto` → `application/grpc+proto`.
        let suffix = &ct[if text {
            GRPC_WEB_TEXT.len()
        } else {
            GRPC_WEB.len()
        }..];
        let grpc_ct = HeaderValue::from_str(&format!("{GRPC}{suffix}"))
            .unwrap_or(HeaderValue::from_static(GRPC));
        let origin = req
            .headers()
            .get(header::ORIGIN)
            .filter(|o| self.allowed(o))
            .cloned();
        let h = req.headers_mut();
        h.insert(header::CONTENT_TYPE, grpc_ct);
        h.remove(header::CONTENT_LENGTH);
        // The service's servers are reached over HTTP/2 by their own
        // scheme (`h2c://`, or HTTPS with ALPN), whatever the client spoke.
        h.insert(header::TE, HeaderValue::from_static("trailers"));
        if text {
            req = req.map(|body| {
                RequestBody::boxed(Base64Decode {
                    inner: body,
                    carry: Vec::new(),
                })
            });
        }
        Box::pin(async move {
            let resp = next.run(req).await;
            to_grpc_web(resp, text, origin.as_ref())
        })
    }
}

/// The server's gRPC answer as gRPC-Web.
fn to_grpc_web(resp: Resp, text: bool, origin: Option<&HeaderValue>) -> Resp {
    let (mut parts, body) = resp.into_parts();
    let ct = content_type(&parts.headers).to_owned();
    let is_grpc = ct.starts_with(GRPC);
    if let Some(suffix) = ct.strip_prefix(GRPC) {
        let web = if text { GRPC_WEB_TEXT } else { GRPC_WEB };
        if let Ok(v) = HeaderValue::from_str(&format!("{web}{suffix}")) {
            parts.headers.insert(header::CONTENT_TYPE, v);
        }
    }
    parts.headers.remove(header::CONTENT_LENGTH);
    if let Some(origin) = origin {
        let mut exposed: Vec<&str> = parts.headers.keys().map(HeaderName::as_str).collect();
        for name in ["grpc-status", "grpc-message"] {
            if !exposed.contains(&name) {
                exposed.push(name);
            }
        }
        if let Ok(v) = HeaderValue::from_str(&exposed.join(", ")) {
            parts
                .headers
                .insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, v);
        }
        parts
            .headers
            .insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
        parts.headers.insert(
            header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
            HeaderValue::from_static("true"),
        );
        parts
            .headers
            .append(header::VARY, HeaderValue::from_static("Origin"));
    }
    if parts.status == StatusCode::OK || is_grpc {
        let body = WebBody {
            inner: body,
            text,
            carry: Vec::new(),
            done: false,
        };
        return Resp::from_parts(parts, ProxyBody::boxed(body));
    }
    Resp::from_parts(parts, body)
}

/// The trailers as a gRPC-Web message: flag `0x80`, a big-endian length,
/// then `name: value\r\n` lines.
pub fn trailer_message(trailers: &HeaderMap) -> Bytes {
    let mut lines = BytesMut::new();
    for (name, value) in trailers {
        lines.put_slice(name.as_str().as_bytes());
        lines.put_slice(b": ");
        lines.put_slice(value.as_bytes());
        lines.put_slice(b"\r\n");
    }
    let mut out = BytesMut::with_capacity(5 + lines.len());
    out.put_u8(0x80);
    out.put_u32(u32::try_from(lines.len()).unwrap_or(u32::MAX));
    out.put_slice(&lines);
    out.freeze()
}

/// A response body with the trailers moved into it (and, for
/// `grpc-web-text`, in base64, encoded across frames without padding
/// until the end).
struct WebBody {
    inner: ProxyBody,
    text: bool,
    /// Bytes not yet encoded (fewer than 3), for text.
    carry: Vec<u8>,
    done: bool,
}

impl WebBody {
    fn encode(&mut self, data: &[u8], last: bool) -> Bytes {
        if !self.text {
            return Bytes::copy_from_slice(data);
        }
        self.carry.extend_from_slice(data);
        let whole = if last {
            self.carry.len()
        } else {
            self.carry.len() - self.carry.len() % 3
        };
        let out = STANDARD.encode(&self.carry[..whole]);
        self.carry.drain(..whole);
        Bytes::from(out)
    }
}

impl Body for WebBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        loop {
            if self.done {
                return Poll::Ready(None);
            }
            let polled = Pin::new(&mut self.inner).poll_frame(cx);
            match polled {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) => {
                        if self.text {
                            let out = self.encode(&data, false);
                            if out.is_empty() {
                                continue;
                            }
                            return Poll::Ready(Some(Ok(Frame::data(out))));
                        }
                        return Poll::Ready(Some(Ok(Frame::data(data))));
                    }
                    Err(frame) => {
                        self.done = true;
                        let Ok(trailers) = frame.into_trailers() else {
                            continue;
                        };
                        let message = trailer_message(&trailers);
                        let out = self.encode(&message, true);
                        return Poll::Ready(Some(Ok(Frame::data(out))));
                    }
                },
                Poll::Ready(None) => {
                    self.done = true;
                    if self.text && !self.carry.is_empty() {
                        let out = self.encode(&[], true);
                        return Poll::Ready(Some(Ok(Frame::data(out))));
                    }
                    return Poll::Ready(None);
                }
            }
        }
    }
}

/// A `grpc-web-text` request body decoded from base64 as it streams. Each
/// group of four characters decodes on its own, since a client may send
/// several padded pieces one after the other.
struct Base64Decode {
    inner: RequestBody,
    carry: Vec<u8>,
}

/// Why a `grpc-web-text` body cannot be decoded.
#[derive(Debug, thiserror::Error)]
pub enum GrpcWebError {
    /// A character outside base64, or padding in the wrong place.
    #[error("grpc-web-text body is not base64")]
    NotBase64,
    /// The body ended inside a group of four characters.
    #[error("grpc-web-text body ends inside a base64 group")]
    Truncated,
}

/// Decodes whole groups of four characters (padding allowed at the end of
/// each group), returning how many input bytes were used.
fn decode_groups(input: &[u8], out: &mut Vec<u8>) -> Result<usize, GrpcWebError> {
    let whole = input.len() - input.len() % 4;
    let mut start = 0;
    while start < whole {
        // Runs without padding decode at once; a padded group ends a run.
        let end = input[start..whole]
            .chunks(4)
            .position(|g| g.contains(&b'='))
            .map_or(whole, |i| start + (i + 1) * 4);
        STANDARD
            .decode_vec(&input[start..end], out)
            .map_err(|_| GrpcWebError::NotBase64)?;
        start = end;
    }
    Ok(whole)
}

impl Body for Base64Decode {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        loop {
            let polled = Pin::new(&mut self.inner).poll_frame(cx);
            match polled {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) => {
                        let this = &mut *self;
                        this.carry
                            .extend(data.iter().filter(|b| !b.is_ascii_whitespace()));
                        let mut out = Vec::new();
                        let used = match decode_groups(&this.carry, &mut out) {
                            Ok(used) => used,
                            Err(e) => return Poll::Ready(Some(Err(e.into()))),
                        };
                        this.carry.drain(..used);
                        if out.is_empty() {
                            continue;
                        }
                        return Poll::Ready(Some(Ok(Frame::data(Bytes::from(out)))));
                    }
                    Err(trailers) => return Poll::Ready(Some(Ok(trailers))),
                },
                Poll::Ready(None) => {
                    if self.carry.is_empty() {
                        return Poll::Ready(None);
                    }
                    self.carry.clear();
                    return Poll::Ready(Some(Err(GrpcWebError::Truncated.into())));
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.carry.is_empty() && self.inner.is_end_stream()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padded_pieces_decode_one_after_the_other() {
        let mut out = Vec::new();
        let text = format!("{}{}", STANDARD.encode(b"ab"), STANDARD.encode(b"cdef"));
        let used = decode_groups(text.as_bytes(), &mut out).expect("decodes");
        assert_eq!(used, text.len());
        assert_eq!(out, b"abcdef");
        let mut out = Vec::new();
        assert!(decode_groups(b"a*==", &mut out).is_err());
        // An incomplete group waits for more.
        assert_eq!(decode_groups(b"YWJjYW", &mut Vec::new()).ok(), Some(4));
    }

    #[test]
    fn trailers_become_a_flagged_message() {
        let mut t = HeaderMap::new();
        t.insert("grpc-status", HeaderValue::from_static("0"));
        let m = trailer_message(&t);
        assert_eq!(&m[..], b"\x80\x00\x00\x00\x10grpc-status: 0\r\n");
    }
}
