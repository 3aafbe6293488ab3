//! `rateLimit`: at most `average` requests per `period` from one source, with
//! bursts of `burst`. A request that would have to wait a little (up to half
//! the interval between two tokens) waits; one that would wait longer gets
//! 429 with `Retry-After`, as in Traefik.
//!
//! The bucket of each source is one atomic "theoretical arrival time"
//! (GCRA), so checking takes no lock; the buckets live in `Registries`, so a
//! configuration change elsewhere does not refill them. With `redis`, the
//! buckets live in Redis instead ([`redis`]), shared by every instance.

pub mod redis;

use super::source::{DefaultSource, SourceCriterion, SourceKey};
use super::{Exchange, Middleware, MiddlewareError, Next, Req, Resp};
use crate::body::ProxyBody;
use crate::config::dynamic::middleware as model;
use futures_util::future::BoxFuture;
use http::{HeaderName, HeaderValue, Response, StatusCode, header};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Sources tracked before idle ones are forgotten (Traefik's limit too).
const MAX_SOURCES: usize = 65_536;
const X_RETRY_IN: HeaderName = HeaderName::from_static("x-retry-in");

/// The buckets of one rate limiter, kept across configuration swaps.
pub struct State {
    epoch: Instant,
    /// Per source: the time (ns since `epoch`) at which its bucket is full
    /// again.
    buckets: papaya::HashMap<SourceKey, AtomicU64>,
    /// The Redis client of a `redis` limiter, made once and kept with the
    /// state so that its connection outlives swaps.
    shared: std::sync::OnceLock<Arc<redis::Shared>>,
}

impl Default for State {
    fn default() -> Self {
        Self {
            epoch: Instant::now(),
            buckets: papaya::HashMap::new(),
            shared: std::sync::OnceLock::new(),
        }
    }
}

/// A compiled `rateLimit`.
pub struct RateLimit {
    /// Nanoseconds between two tokens.
    interval: u64,
    /// Nanoseconds of credit a full bucket holds (`burst` tokens).
    capacity: u64,
    max_delay: Duration,
    source: SourceCriterion,
    state: Arc<State>,
    /// The Redis buckets, for `redis`.
    shared: Option<Arc<redis::Shared>>,
}

/// Compiles a `rateLimit` named `name` around its kept `state`.
pub fn compile(
    cfg: &model::RateLimit,
    name: &str,
    state: Arc<State>,
) -> Result<RateLimit, MiddlewareError> {
    if cfg.average <= 0 {
        // Traefik reads 0 as "no limit"; a limiter that limits nothing is
        // almost always a mistake, so it is refused here.
        return Err(MiddlewareError::invalid(
            "average",
            format!(
                "the rate must be at least 1 request per period, not {}",
                cfg.average
            ),
        ));
    }
    let period = cfg.period.map_or(Duration::from_secs(1), |p| p.0);
    if period.is_zero() {
        return Err(MiddlewareError::invalid("period", "must be longer than 0"));
    }
    let burst = cfg.burst.unwrap_or(1).max(1);
    let burst = u64::try_from(burst).unwrap_or(u64::MAX);
    let interval = (period.as_nanos() / cfg.average as u128).max(1);
    let interval = u64::try_from(interval).unwrap_or(u64::MAX);
    let per_second = cfg.average as f64 / period.as_secs_f64();
    let max_delay = if per_second < 1.0 {
        Duration::from_millis(500)
    } else {
        Duration::from_secs_f64(1.0 / (2.0 * per_second.floor()))
    };
    let shared = match &cfg.redis {
        None => None,
        Some(r) => Some(match state.shared.get() {
            Some(s) => s.clone(),
            None => {
                let made = Arc::new(redis::Shared::open(r, name)?);
                state.shared.get_or_init(|| made).clone()
            }
        }),
    };
    Ok(RateLimit {
        interval,
        capacity: interval.saturating_mul(burst),
        max_delay,
        source: SourceCriterion::compile(cfg.source_criterion.as_ref(), DefaultSource::Peer)?,
        state,
        shared,
    })
}

impl RateLimit {
    /// Takes a token for `key`: Ok(wait) when granted (possibly after a short
    /// wait), Err(wait) when the wait would be too long.
    fn take(&self, key: SourceKey) -> Result<Duration, Duration> {
        let now = u64::try_from(self.state.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let buckets = self.state.buckets.pin();
        if buckets.len() >= MAX_SOURCES && buckets.get(&key).is_none() {
            // Full buckets carry no information: forget them first.
            buckets.retain(|_, tat| tat.load(Ordering::Relaxed) > now);
        }
        let tat = buckets.get_or_insert_with(key, || AtomicU64::new(0));
        let mut current = tat.load(Ordering::Acquire);
        loop {
            let next = current.max(now).saturating_add(self.interval);
            let wait = next.saturating_sub(now).saturating_sub(self.capacity);
            let wait = Duration::from_nanos(wait);
            if wait > self.max_delay {
                return Err(wait);
            }
            match tat.compare_exchange_weak(current, next, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return Ok(wait),
                Err(seen) => current = seen,
            }
        }
    }
}

fn too_many(wait: Duration) -> Resp {
    let mut resp = Response::new(ProxyBody::text("Too Many Requests"));
    *resp.status_mut() = StatusCode::TOO_MANY_REQUESTS;
    let h = resp.headers_mut();
    h.insert(
        header::RETRY_AFTER,
        HeaderValue::from(wait.as_secs_f64().ceil() as u64),
    );
    if let Ok(v) = HeaderValue::from_str(&format!("{wait:?}")) {
        h.insert(X_RETRY_IN, v);
    }
    resp
}

impl Middleware for RateLimit {
    fn wraps(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, req: Req, cx: &'a Exchange, next: Next<'a>) -> BoxFuture<'a, Resp> {
        if let Some(shared) = &self.shared {
            let key = self.source.key(&req, cx);
            return Box::pin(async move {
                let verdict = shared
                    .take(&key, self.interval, self.capacity, self.max_delay)
                    .await;
                match verdict {
                    Ok(Ok(wait)) => {
                        if !wait.is_zero() {
                            tokio::time::sleep(wait).await;
                        }
                        next.run(req).await
                    }
                    Ok(Err(wait)) => too_many(wait),
                    Err(e) => {
                        // As Traefik: without its buckets the limiter
                        // cannot decide, and says so rather than letting
                        // everything through.
                        tracing::warn!(error = %e, "rateLimit: Redis unavailable");
                        super::status_response(StatusCode::INTERNAL_SERVER_ERROR)
                    }
                }
            });
        }
        let verdict = self.take(self.source.key(&req, cx));
        Box::pin(async move {
            match verdict {
                Ok(wait) => {
                    if !wait.is_zero() {
                        tokio::time::sleep(wait).await;
                    }
                    next.run(req).await
                }
                Err(wait) => too_many(wait),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Duration as ConfigDuration;

    fn limiter(average: i64, period: u64, burst: i64) -> RateLimit {
        compile(
            &model::RateLimit {
                average,
                period: Some(ConfigDuration(Duration::from_secs(period))),
                burst: Some(burst),
                source_criterion: None,
                redis: None,
            },
            "limit@test",
            Arc::new(State::default()),
        )
        .expect("compiles")
    }

    #[test]
    fn a_burst_passes_then_the_rest_is_refused() {
        let rl = limiter(1, 60, 3);
        let ip = SourceKey::Ip([10, 0, 0, 1].into());
        for _ in 0..3 {
            assert_eq!(rl.take(ip.clone()), Ok(Duration::ZERO));
        }
        let refused = rl.take(ip).expect_err("fourth is refused");
        assert!(refused > Duration::from_secs(50), "{refused:?}");
        // Another source has its own bucket.
        assert_eq!(
            rl.take(SourceKey::Ip([10, 0, 0, 2].into())),
            Ok(Duration::ZERO)
        );
    }

    #[test]
    fn a_short_wait_is_granted_not_refused() {
        // 1000/s: a token every 1ms, and waits up to 0.5ms are granted.
        let rl = limiter(1000, 1, 1);
        let ip = SourceKey::Unknown;
        assert_eq!(rl.take(ip.clone()), Ok(Duration::ZERO));
        match rl.take(ip) {
            Ok(w) => assert!(w <= Duration::from_micros(500)),
            Err(w) => assert!(w > Duration::from_micros(500)),
        }
    }

    #[test]
    fn zero_and_negative_rates_are_refused() {
        let state = Arc::new(State::default());
        let cfg = model::RateLimit::default();
        let err = compile(&cfg, "limit@test", state.clone())
            .err()
            .expect("average 0");
        assert!(err.to_string().starts_with("average:"), "{err}");
        let cfg = model::RateLimit {
            average: 5,
            period: Some(ConfigDuration(Duration::ZERO)),
            ..Default::default()
        };
        assert!(compile(&cfg, "limit@test", state).is_err());
    }
}
