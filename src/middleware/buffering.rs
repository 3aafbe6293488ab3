//! `buffering`: read whole requests (413 past `maxRequestBodyBytes`) and
//! responses (500 past `maxResponseBodyBytes`) before passing them on, so a
//! slow client cannot hold a server and a server sees a fixed
//! `Content-Length`. Up to `mem*BodyBytes` (1 MiB by default) stays in
//! memory and the rest goes to an unlinked temporary file, so memory is
//! bounded whatever the limits. `retryExpression` sends the buffered request
//! again while it holds.

use super::expr::{self, Expr, Func};
use super::spool::{self, Read};
use super::{Exchange, Middleware, MiddlewareError, Next, Req, Resp, status_response};
use crate::body::{ProxyBody, RequestBody, UpstreamFailure};
use crate::config::dynamic::middleware as model;
use futures_util::future::BoxFuture;
use http::{HeaderValue, Request, StatusCode, header};
use http_body::Body as _;

const FUNCS: &[Func] = &[
    Func {
        name: "Attempts",
        arity: 0,
        boolean: false,
    },
    Func {
        name: "ResponseCode",
        arity: 0,
        boolean: false,
    },
    Func {
        name: "IsNetworkError",
        arity: 0,
        boolean: true,
    },
];
const DEFAULT_MEM: u64 = 1024 * 1024;
/// However the expression is written, a request is not sent more often.
const MAX_ATTEMPTS: u32 = 10;

/// A compiled `buffering`.
pub struct Buffering {
    max_request: Option<u64>,
    mem_request: u64,
    max_response: Option<u64>,
    mem_response: u64,
    retry: Option<Expr>,
    request: bool,
    response: bool,
}

fn limit(option: &'static str, v: Option<i64>) -> Result<Option<u64>, MiddlewareError> {
    match v {
        None | Some(0) => Ok(None),
        Some(n) if n > 0 => Ok(Some(n as u64)),
        Some(n) => Err(MiddlewareError::invalid(
            option,
            format!("must not be negative, not {n}"),
        )),
    }
}

/// Compiles a `buffering`.
pub fn compile(cfg: &model::Buffering) -> Result<Buffering, MiddlewareError> {
    let retry =
        match cfg
            .retry_expression
            .as_deref()
            .filter(|e| !e.trim().is_empty())
        {
            None => None,
            Some(e) => Some(expr::parse(e, FUNCS).map_err(|err| {
                MiddlewareError::invalid("retryExpression", format!("`{e}`: {err}"))
            })?),
        };
    Ok(Buffering {
        max_request: limit("maxRequestBodyBytes", cfg.max_request_body_bytes)?,
        mem_request: limit("memRequestBodyBytes", cfg.mem_request_body_bytes)?
            .unwrap_or(DEFAULT_MEM),
        max_response: limit("maxResponseBodyBytes", cfg.max_response_body_bytes)?,
        mem_response: limit("memResponseBodyBytes", cfg.mem_response_body_bytes)?
            .unwrap_or(DEFAULT_MEM),
        retry,
        request: !cfg.disable_request_buffer,
        response: !cfg.disable_response_buffer,
    })
}

impl Middleware for Buffering {
    fn wraps(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, req: Req, _cx: &'a Exchange, next: Next<'a>) -> BoxFuture<'a, Resp> {
        Box::pin(async move {
            let too_large = || status_response(StatusCode::PAYLOAD_TOO_LARGE);
            let declared = req
                .headers()
                .get(header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok());
            if let (Some(max), Some(len)) = (self.max_request, declared)
                && len > max
            {
                return too_large();
            }
            let (mut parts, body) = req.into_parts();
            let (replay, body_back) = if !self.request {
                (None, body)
            } else if body.is_end_stream() {
                (Some(spool::Spooled::default()), RequestBody::empty())
            } else {
                match spool::read(body, self.max_request, self.mem_request).await {
                    Ok(Read::Whole(s)) => (Some(s), RequestBody::empty()),
                    Ok(Read::TooLarge(..)) => return too_large(),
                    Err(_) => return status_response(StatusCode::BAD_REQUEST),
                }
            };
            let resp = match replay {
                // Streamed through: sent once, whatever the expression says.
                None => next.run(Request::from_parts(parts, body_back)).await,
                Some(spooled) => {
                    if !spooled.is_empty() || declared.is_some() {
                        parts
                            .headers
                            .insert(header::CONTENT_LENGTH, HeaderValue::from(spooled.len()));
                    }
                    parts.headers.remove(header::TRANSFER_ENCODING);
                    let mut attempt = 1;
                    loop {
                        let body = match spooled.in_memory() {
                            Some(b) => RequestBody::full(b),
                            None => RequestBody::boxed(spooled.body()),
                        };
                        let resp = next.run(Request::from_parts(parts.clone(), body)).await;
                        let again = attempt < MAX_ATTEMPTS
                            && self.retry.as_ref().is_some_and(|e| {
                                let network = resp.extensions().get::<UpstreamFailure>().is_some();
                                e.eval(&|f, _| match f {
                                    0 => f64::from(attempt),
                                    1 => f64::from(resp.status().as_u16()),
                                    _ => f64::from(u8::from(network)),
                                })
                            });
                        if !again {
                            break resp;
                        }
                        attempt += 1;
                    }
                }
            };
            self.respond(resp).await
        })
    }
}

impl Buffering {
    async fn respond(&self, resp: Resp) -> Resp {
        if !self.response
            || resp.status() == StatusCode::SWITCHING_PROTOCOLS
            || resp.body().is_end_stream()
        {
            return resp;
        }
        let (mut parts, body) = resp.into_parts();
        match spool::read(body, self.max_response, self.mem_response).await {
            Ok(Read::Whole(s)) => {
                parts
                    .headers
                    .insert(header::CONTENT_LENGTH, HeaderValue::from(s.len()));
                let body = match s.in_memory() {
                    Some(b) if !s.has_trailers() => ProxyBody::bytes(b),
                    _ => ProxyBody::boxed(s.body()),
                };
                Resp::from_parts(parts, body)
            }
            Ok(Read::TooLarge(..)) => status_response(StatusCode::INTERNAL_SERVER_ERROR),
            Err(_) => status_response(StatusCode::BAD_GATEWAY),
        }
    }
}
