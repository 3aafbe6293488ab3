//! `retry`: send a request again when the server could not be reached (or,
//! with `status`, answered with one of those statuses), up to `attempts`
//! times in all, each attempt going to the next server of the balancer.
//!
//! Only requests that are safe to send again are: the body is read first
//! (up to `maxRequestBodyBytes`, in memory and then a temporary file) so it
//! can be replayed; a larger body goes once, without retries. A request the
//! server never received (connection refused) is retried whatever its
//! method; a retry on a status applies to idempotent methods unless
//! `retryNonIdempotentMethod` is set.

use super::spool::{self, Read, Rest};
use super::status::StatusRanges;
use super::{Exchange, Middleware, MiddlewareError, Next, Req, Resp};
use crate::body::{RequestBody, UpstreamFailure};
use crate::config::dynamic::middleware as model;
use futures_util::future::BoxFuture;
use http::{Method, Request};
use http_body::Body as _;
use std::time::{Duration, Instant};

/// Body bytes kept in memory before the rest goes to a temporary file.
const MEM_BODY: u64 = 1024 * 1024;
/// Traefik's default `maxRequestBodyBytes`.
const DEFAULT_MAX_BODY: i64 = 2 * 1024 * 1024;

/// How many times a request was sent again, on the response, for the
/// access log's `RetryAttempts` and `service_retries_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retried(pub u32);

/// A compiled `retry`.
pub struct Retry {
    attempts: u32,
    initial_interval: Duration,
    timeout: Option<Duration>,
    max_body: Option<u64>,
    status: StatusRanges,
    on_network_error: bool,
    non_idempotent: bool,
}

/// Compiles a `retry`.
pub fn compile(cfg: &model::Retry) -> Result<Retry, MiddlewareError> {
    if cfg.attempts <= 0 {
        return Err(MiddlewareError::invalid(
            "attempts",
            format!("must be at least 1, not {}", cfg.attempts),
        ));
    }
    let status = StatusRanges::parse(&cfg.status, "status")?;
    if cfg.disable_retry_on_network_error && status.is_empty() {
        return Err(MiddlewareError::invalid(
            "disableRetryOnNetworkError",
            "with network errors not retried, `status` must say what is",
        ));
    }
    let max = cfg.max_request_body_bytes.unwrap_or(DEFAULT_MAX_BODY);
    Ok(Retry {
        attempts: u32::try_from(cfg.attempts).unwrap_or(u32::MAX),
        initial_interval: cfg.initial_interval.map_or(Duration::ZERO, |d| d.0),
        timeout: cfg.timeout.map(|d| d.0).filter(|d| !d.is_zero()),
        max_body: u64::try_from(max).ok(),
        status,
        on_network_error: !cfg.disable_retry_on_network_error,
        non_idempotent: cfg.retry_non_idempotent_method,
    })
}

impl Retry {
    /// The wait before attempt `n + 1` (n ≥ 1): from `initialInterval`
    /// growing to twice it for the last retry, as Traefik (without jitter).
    fn wait(&self, n: u32) -> Duration {
        if self.initial_interval.is_zero() || self.attempts < 3 {
            return self.initial_interval;
        }
        let step = f64::from(n - 1) / f64::from(self.attempts - 2);
        // Checked: a huge configured interval must not overflow (and panic).
        Duration::try_from_secs_f64(self.initial_interval.as_secs_f64() * 2f64.powf(step))
            .unwrap_or(self.initial_interval)
    }
}

fn idempotent(m: &Method) -> bool {
    !(m == Method::POST || m == Method::PATCH || m.as_str() == "LOCK")
}

impl Middleware for Retry {
    fn wraps(&self) -> bool {
        self.attempts > 1
    }

    fn call<'a>(&'a self, req: Req, _cx: &'a Exchange, next: Next<'a>) -> BoxFuture<'a, Resp> {
        Box::pin(async move {
            let start = Instant::now();
            let by_status =
                !self.status.is_empty() && (self.non_idempotent || idempotent(req.method()));
            let (parts, body) = req.into_parts();
            // The body in a form that can be sent again, when it can be.
            let replay = if body.is_end_stream() {
                spool::Spooled::default()
            } else if let Some(bytes) = body.as_full() {
                spool::Spooled::from_bytes(bytes)
            } else {
                match spool::read(body, self.max_body, MEM_BODY).await {
                    Ok(Read::Whole(s)) if !s.has_trailers() => s,
                    Ok(Read::Whole(s)) => {
                        let body = RequestBody::boxed(s.body());
                        return next.run(Request::from_parts(parts, body)).await;
                    }
                    Ok(Read::TooLarge(head, rest)) => {
                        let body = RequestBody::boxed(Rest::new(&head, rest));
                        return next.run(Request::from_parts(parts, body)).await;
                    }
                    Err(_) => return super::status_response(http::StatusCode::BAD_REQUEST),
                }
            };
            let mut attempt = 1;
            loop {
                let body = match replay.in_memory() {
                    Some(bytes) => RequestBody::full(bytes),
                    None => RequestBody::boxed(replay.body()),
                };
                let mut resp = next.run(Request::from_parts(parts.clone(), body)).await;
                if attempt > 1 {
                    resp.extensions_mut().insert(Retried(attempt - 1));
                }
                if attempt >= self.attempts || self.timeout.is_some_and(|t| start.elapsed() >= t) {
                    return resp;
                }
                let again = match resp.extensions().get::<UpstreamFailure>() {
                    Some(UpstreamFailure::NotSent) => self.on_network_error,
                    _ => by_status && self.status.contains(resp.status()),
                };
                if !again {
                    return resp;
                }
                drop(resp);
                let wait = self.wait(attempt);
                if !wait.is_zero() {
                    tokio::time::sleep(wait).await;
                }
                attempt += 1;
                tracing::debug!(attempt, uri = %parts.uri, "retrying");
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Duration as D;

    #[test]
    fn waits_grow_to_twice_the_first() {
        let r = compile(&model::Retry {
            attempts: 4,
            initial_interval: Some(D(Duration::from_millis(100))),
            ..Default::default()
        })
        .expect("compiles");
        assert_eq!(r.wait(1), Duration::from_millis(100));
        assert_eq!(r.wait(3), Duration::from_millis(200));
        assert!(r.wait(2) > Duration::from_millis(100) && r.wait(2) < Duration::from_millis(200));
    }

    #[test]
    fn bad_settings_are_refused() {
        assert!(compile(&model::Retry::default()).is_err());
        let err = compile(&model::Retry {
            attempts: 2,
            disable_retry_on_network_error: true,
            ..Default::default()
        })
        .err()
        .expect("nothing to retry");
        assert!(err.to_string().starts_with("disableRetryOnNetworkError"));
        assert!(
            compile(&model::Retry {
                attempts: 2,
                status: vec!["5xx".into()],
                ..Default::default()
            })
            .is_err()
        );
    }
}
