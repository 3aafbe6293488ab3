//! `circuitBreaker`: watches what happens after it in the chain and, when
//! `expression` holds, stops calling the service for `fallbackDuration`
//! (answering `responseCode`, 503 by default), then lets a growing share of
//! requests through for `recoveryDuration` before closing again.
//!
//! Metrics cover the last 10 seconds in one-second buckets of atomic
//! counters (status codes, network errors, a latency histogram with ±10 %
//! buckets); `expression` is evaluated at most once per `checkPeriod`, by the
//! request that finds it due. The state lives in `Registries`, so an
//! unrelated configuration change neither closes an open breaker nor
//! forgets its metrics.

use super::expr::{self, Expr, Func};
use super::{Exchange, Middleware, MiddlewareError, Next, Req, Resp, status_response};
use crate::body::UpstreamFailure;
use crate::config::dynamic::middleware as model;
use futures_util::future::BoxFuture;
use http::StatusCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const FUNCS: &[Func] = &[
    Func {
        name: "NetworkErrorRatio",
        arity: 0,
        boolean: false,
    },
    Func {
        name: "ResponseCodeRatio",
        arity: 4,
        boolean: false,
    },
    Func {
        name: "LatencyAtQuantileMS",
        arity: 1,
        boolean: false,
    },
    Func {
        name: "RequestThreshold",
        arity: 0,
        boolean: false,
    },
];

const WINDOW: usize = 10;
const CODES: usize = 500; // 100..=599
const LATENCY_BUCKETS: usize = 128;
/// Upper bound of latency bucket `i`, in microseconds: 1.2^i.
fn latency_edge(i: usize) -> f64 {
    1.2f64.powi(i as i32)
}

const CLOSED: u8 = 0;
const OPEN: u8 = 1;
const RECOVERING: u8 = 2;

struct Bucket {
    second: AtomicU64,
    total: AtomicU64,
    net_errors: AtomicU64,
    codes: Box<[AtomicU64]>,
    latency: Box<[AtomicU64]>,
}

impl Bucket {
    fn new() -> Self {
        Self {
            second: AtomicU64::new(u64::MAX),
            total: AtomicU64::new(0),
            net_errors: AtomicU64::new(0),
            codes: (0..CODES).map(|_| AtomicU64::new(0)).collect(),
            latency: (0..LATENCY_BUCKETS).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    fn clear(&self) {
        self.total.store(0, Ordering::Relaxed);
        self.net_errors.store(0, Ordering::Relaxed);
        for c in self.codes.iter().chain(self.latency.iter()) {
            c.store(0, Ordering::Relaxed);
        }
    }
}

/// The breaker's state and metrics, kept across configuration swaps.
pub struct State {
    epoch: Instant,
    phase: AtomicU8,
    /// End of the open or recovering phase (ns since `epoch`).
    until: AtomicU64,
    /// Start of the recovering phase.
    since: AtomicU64,
    next_check: AtomicU64,
    seen: AtomicU64,
    let_through: AtomicU64,
    buckets: Vec<Bucket>,
}

impl Default for State {
    fn default() -> Self {
        Self {
            epoch: Instant::now(),
            phase: AtomicU8::new(CLOSED),
            until: AtomicU64::new(0),
            since: AtomicU64::new(0),
            next_check: AtomicU64::new(0),
            seen: AtomicU64::new(0),
            let_through: AtomicU64::new(0),
            buckets: (0..WINDOW).map(|_| Bucket::new()).collect(),
        }
    }
}

/// The phase of a breaker, for tests and the API.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Calls go through; metrics are collected.
    Closed,
    /// Calls are answered with the fallback.
    Open,
    /// A growing share of calls goes through.
    Recovering,
}

impl State {
    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// The current phase.
    pub fn phase(&self) -> Phase {
        match self.phase.load(Ordering::Acquire) {
            OPEN => Phase::Open,
            RECOVERING => Phase::Recovering,
            _ => Phase::Closed,
        }
    }

    fn record(&self, status: StatusCode, network_error: bool, latency: Duration) {
        let second = self.now() / 1_000_000_000;
        let b = &self.buckets[(second % WINDOW as u64) as usize];
        let old = b.second.load(Ordering::Acquire);
        if old != second
            && b.second
                .compare_exchange(old, second, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            // A sample racing with this reset may be lost: metrics, not money.
            b.clear();
        }
        b.total.fetch_add(1, Ordering::Relaxed);
        if network_error {
            b.net_errors.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(c) = (status.as_u16() as usize)
            .checked_sub(100)
            .and_then(|i| b.codes.get(i))
        {
            c.fetch_add(1, Ordering::Relaxed);
        }
        let us = latency.as_micros() as f64;
        let i = if us <= 1.0 {
            0
        } else {
            (us.ln() / 1.2f64.ln()).ceil() as usize
        };
        b.latency[i.min(LATENCY_BUCKETS - 1)].fetch_add(1, Ordering::Relaxed);
    }

    fn reset_metrics(&self) {
        for b in &self.buckets {
            b.second.store(u64::MAX, Ordering::Release);
            b.clear();
        }
    }

    fn snapshot(&self) -> Snapshot {
        let second = self.now() / 1_000_000_000;
        let mut s = Snapshot {
            total: 0,
            net_errors: 0,
            codes: [0; CODES],
            latency: [0; LATENCY_BUCKETS],
        };
        for b in &self.buckets {
            let at = b.second.load(Ordering::Acquire);
            if at == u64::MAX || at + (WINDOW as u64) <= second {
                continue;
            }
            s.total += b.total.load(Ordering::Relaxed);
            s.net_errors += b.net_errors.load(Ordering::Relaxed);
            for (sum, c) in s.codes.iter_mut().zip(b.codes.iter()) {
                *sum += c.load(Ordering::Relaxed);
            }
            for (sum, c) in s.latency.iter_mut().zip(b.latency.iter()) {
                *sum += c.load(Ordering::Relaxed);
            }
        }
        s
    }
}

struct Snapshot {
    total: u64,
    net_errors: u64,
    codes: [u64; CODES],
    latency: [u64; LATENCY_BUCKETS],
}

impl Snapshot {
    fn value(&self, func: usize, args: &[f64]) -> f64 {
        match func {
            0 => ratio(self.net_errors, self.total),
            1 => {
                let sum = |from: f64, to: f64| -> u64 {
                    (0..CODES)
                        .filter(|i| {
                            let code = (i + 100) as f64;
                            code >= from && code < to
                        })
                        .map(|i| self.codes[i])
                        .sum()
                };
                let arg = |i: usize| args.get(i).copied().unwrap_or(0.0);
                ratio(sum(arg(0), arg(1)), sum(arg(2), arg(3)))
            }
            2 => {
                let count: u64 = self.latency.iter().sum();
                if count == 0 {
                    return 0.0;
                }
                let want = (args.first().copied().unwrap_or(50.0) / 100.0 * count as f64)
                    .ceil()
                    .max(1.0);
                let mut seen = 0u64;
                for (i, n) in self.latency.iter().enumerate() {
                    seen += n;
                    if seen as f64 >= want {
                        return latency_edge(i) / 1000.0;
                    }
                }
                latency_edge(LATENCY_BUCKETS - 1) / 1000.0
            }
            _ => self.total as f64,
        }
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

/// A compiled `circuitBreaker`.
pub struct CircuitBreaker {
    expression: Expr,
    check_period: u64,
    fallback: u64,
    recovery: u64,
    response: StatusCode,
    state: Arc<State>,
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Compiles a `circuitBreaker` around its kept `state`.
pub fn compile(
    cfg: &model::CircuitBreaker,
    state: Arc<State>,
) -> Result<CircuitBreaker, MiddlewareError> {
    let expression = expr::parse(&cfg.expression, FUNCS).map_err(|e| {
        MiddlewareError::invalid("expression", format!("`{}`: {e}", cfg.expression))
    })?;
    let response = match cfg.response_code {
        None => StatusCode::SERVICE_UNAVAILABLE,
        Some(code) => StatusCode::from_u16(code)
            .ok()
            .filter(|s| s.as_u16() >= 200)
            .ok_or_else(|| {
                MiddlewareError::invalid("responseCode", format!("{code} is not an HTTP status"))
            })?,
    };
    let or = |d: Option<crate::config::Duration>, default: u64| d.map_or(default, |d| nanos(d.0));
    Ok(CircuitBreaker {
        expression,
        check_period: or(cfg.check_period, 100_000_000).max(1),
        fallback: or(cfg.fallback_duration, 10_000_000_000),
        recovery: or(cfg.recovery_duration, 10_000_000_000),
        response,
        state,
    })
}

impl CircuitBreaker {
    /// Whether this request may go to the service.
    fn admit(&self) -> bool {
        let s = &self.state;
        let now = s.now();
        match s.phase.load(Ordering::Acquire) {
            CLOSED => true,
            OPEN => {
                if now < s.until.load(Ordering::Acquire) {
                    return false;
                }
                if s.phase
                    .compare_exchange(OPEN, RECOVERING, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                {
                    s.since.store(now, Ordering::Release);
                    s.until
                        .store(now.saturating_add(self.recovery), Ordering::Release);
                    s.seen.store(0, Ordering::Release);
                    s.let_through.store(0, Ordering::Release);
                    s.reset_metrics();
                }
                self.admit_recovering(now)
            }
            _ => self.admit_recovering(now),
        }
    }

    fn admit_recovering(&self, now: u64) -> bool {
        let s = &self.state;
        let until = s.until.load(Ordering::Acquire);
        if now >= until {
            if s.phase
                .compare_exchange(RECOVERING, CLOSED, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                s.reset_metrics();
            }
            return true;
        }
        let since = s.since.load(Ordering::Acquire);
        let share =
            (now.saturating_sub(since)) as f64 / (until.saturating_sub(since)).max(1) as f64;
        let seen = s.seen.fetch_add(1, Ordering::AcqRel) + 1;
        let through = s.let_through.load(Ordering::Acquire);
        if (through as f64) < share * seen as f64 {
            s.let_through.fetch_add(1, Ordering::AcqRel);
            true
        } else {
            false
        }
    }

    /// Evaluates the expression when a check is due, and trips if it holds.
    fn check(&self) {
        let s = &self.state;
        let now = s.now();
        let due = s.next_check.load(Ordering::Acquire);
        if now < due
            || s.next_check
                .compare_exchange(
                    due,
                    now.saturating_add(self.check_period),
                    Ordering::AcqRel,
                    Ordering::Acquire,
                )
                .is_err()
        {
            return;
        }
        let snap = s.snapshot();
        if s.phase.load(Ordering::Acquire) != OPEN && self.expression.eval(&|f, a| snap.value(f, a))
        {
            s.phase.store(OPEN, Ordering::Release);
            s.until
                .store(now.saturating_add(self.fallback), Ordering::Release);
            s.reset_metrics();
            tracing::debug!("circuit breaker open");
        }
    }
}

impl Middleware for CircuitBreaker {
    fn wraps(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, req: Req, _cx: &'a Exchange, next: Next<'a>) -> BoxFuture<'a, Resp> {
        Box::pin(async move {
            if !self.admit() {
                return status_response(self.response);
            }
            let start = Instant::now();
            let resp = next.run(req).await;
            let network = resp.extensions().get::<UpstreamFailure>().is_some();
            self.state.record(resp.status(), network, start.elapsed());
            self.check();
            resp
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Duration as D;

    fn breaker(expression: &str, state: Arc<State>) -> CircuitBreaker {
        compile(
            &model::CircuitBreaker {
                expression: expression.into(),
                check_period: Some(D(Duration::ZERO)),
                fallback_duration: Some(D(Duration::from_secs(60))),
                recovery_duration: Some(D(Duration::from_secs(60))),
                response_code: None,
            },
            state,
        )
        .expect("compiles")
    }

    #[test]
    fn metrics_feed_the_expression_and_trip_the_breaker() {
        let state = Arc::new(State::default());
        let b = breaker(
            "ResponseCodeRatio(500, 600, 0, 600) > 0.5 && RequestThreshold() >= 4",
            state.clone(),
        );
        for code in [200, 500, 500] {
            state.record(
                StatusCode::from_u16(code).expect("code"),
                false,
                Duration::from_millis(5),
            );
            b.check();
        }
        assert_eq!(state.phase(), Phase::Closed, "only 3 requests so far");
        state.record(StatusCode::BAD_GATEWAY, true, Duration::from_millis(5));
        b.check();
        assert_eq!(state.phase(), Phase::Open);
        assert!(!b.admit());
    }

    #[test]
    fn latency_quantiles_are_close() {
        let state = Arc::new(State::default());
        for ms in 1..=100u64 {
            state.record(StatusCode::OK, false, Duration::from_millis(ms));
        }
        let snap = state.snapshot();
        let p50 = snap.value(2, &[50.0]);
        let p99 = snap.value(2, &[99.0]);
        assert!((45.0..=60.0).contains(&p50), "{p50}");
        assert!((95.0..=120.0).contains(&p99), "{p99}");
        assert!((snap.value(0, &[]) - 0.0).abs() < f64::EPSILON);
    }

    #[test]
    fn a_bad_expression_names_the_option() {
        let err = compile(
            &model::CircuitBreaker {
                expression: "NetworkErrorRatio() >".into(),
                ..Default::default()
            },
            Arc::new(State::default()),
        )
        .err()
        .expect("bad expression");
        assert!(err.to_string().starts_with("expression:"), "{err}");
    }
}
