//! What the proxy's own requests say about each server of a load balancer,
//! kept per service and server across configuration swaps: passive health
//! (failures within a window take a server out of the rotation for that
//! window) and the load figures the `p2c` and `leasttime` strategies read
//! (requests in flight, time to first byte).
//!
//! Only failures take a lock; a healthy server's request touches two
//! atomics (in flight up, then down) and, for `leasttime`, a third.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::record::{Outcome, Record};
use crate::clock::now_ms;

/// How long a server whose connection failed stays out of the rotation
/// when its service sets no `passiveHealthCheck`: long enough that a dead
/// server costs one failed attempt per period instead of one per request,
/// short enough that a restarted server is back in a few seconds.
pub const DEFAULT_QUARANTINE: Duration = Duration::from_secs(5);

/// Traefik's default `passiveHealthCheck.failureWindow`.
pub const DEFAULT_FAILURE_WINDOW: Duration = Duration::from_secs(10);

/// Traefik's default `passiveHealthCheck.maxFailedAttempts`.
pub const DEFAULT_MAX_FAILED_ATTEMPTS: u32 = 1;

/// Failure instants kept per server: a bound on memory whatever
/// `maxFailedAttempts` says (a larger threshold is then reached when this
/// many failures fall in the window).
const MAX_KEPT_FAILURES: usize = 64;

/// When a server is taken out, and what counts as a failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PassivePolicy {
    /// The window failures must fall in, and how long the server is out.
    pub window: Duration,
    /// Failures within the window that take the server out (at least 1).
    pub max_failed: u32,
    /// Whether a 5xx answer counts as a failure (Traefik's
    /// `passiveHealthCheck`), or only a connection that could not be made
    /// (the default without one).
    pub count_status: bool,
}

impl PassivePolicy {
    /// The policy without `passiveHealthCheck`: one failed connection takes
    /// the server out for [`DEFAULT_QUARANTINE`].
    pub const DEFAULT: PassivePolicy = PassivePolicy {
        window: DEFAULT_QUARANTINE,
        max_failed: 1,
        count_status: false,
    };

    /// The policy of a configured `passiveHealthCheck`, with Traefik's
    /// defaults for what it leaves out.
    pub fn configured(window: Option<Duration>, max_failed: Option<u32>) -> Self {
        PassivePolicy {
            window: window
                .filter(|w| !w.is_zero())
                .unwrap_or(DEFAULT_FAILURE_WINDOW),
            max_failed: max_failed.unwrap_or(DEFAULT_MAX_FAILED_ATTEMPTS).max(1),
            count_status: true,
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX / 2)
}

/// One server of one load balancer: its passive health and its load.
#[derive(Default)]
pub struct ServerState {
    /// Requests sent to it whose response headers have not arrived yet.
    in_flight: AtomicU32,
    /// Moving average of the time to first byte, in microseconds (0: not
    /// measured yet).
    ttfb_micros: AtomicU64,
    /// Failures in the window, oldest first (milliseconds, [`now_ms`]).
    failures: Mutex<VecDeque<u64>>,
    /// Whether `failures` may be non-empty: read without the lock, so a
    /// healthy server's successes never take it.
    failing: AtomicU32,
    /// Out of the rotation until this instant ([`now_ms`]; 0: in).
    out_until: AtomicU64,
    /// The last failure ([`now_ms`]; 0: none).
    last_failure: AtomicU64,
    /// How its requests ended, whatever the policy counts as a failure.
    record: Record,
}

impl ServerState {
    /// How its requests ended lately: what every surface reads.
    pub fn record(&self) -> &Record {
        &self.record
    }

    /// Whether the server is out of the rotation at `now` ([`now_ms`]).
    pub fn is_out(&self, now: u64) -> bool {
        self.out_until.load(Ordering::Acquire) > now
    }

    /// When the server last failed ([`now_ms`]; 0: never).
    pub fn last_failure(&self) -> u64 {
        self.last_failure.load(Ordering::Relaxed)
    }

    /// Requests in flight.
    pub fn in_flight(&self) -> u32 {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// The moving average of the time to first byte, in microseconds (0:
    /// not measured yet).
    pub fn ttfb_micros(&self) -> u64 {
        self.ttfb_micros.load(Ordering::Relaxed)
    }

    /// A request leaves for this server; the guard counts it in flight
    /// until it is dropped.
    pub fn start(self: &Arc<Self>) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight {
            state: self.clone(),
            started: Instant::now(),
        }
    }

    /// A request succeeded: the failures in a row start again, and a server
    /// that was out (tried because every server was) is back at once.
    /// Returns whether it came back.
    pub fn succeeded(&self) -> bool {
        if self.failing.load(Ordering::Relaxed) == 0 {
            return false;
        }
        self.failures
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        self.failing.store(0, Ordering::Relaxed);
        self.out_until.swap(0, Ordering::AcqRel) != 0
    }

    /// A request failed at `now` ([`now_ms`]). Returns the instant until
    /// which the server is out when this failure took it out (it was in).
    pub fn failed(&self, policy: &PassivePolicy, now: u64) -> Option<u64> {
        self.last_failure.store(now, Ordering::Relaxed);
        let window = millis(policy.window);
        let in_window = {
            let mut failures = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
            let start = now.saturating_sub(window);
            while failures.front().is_some_and(|&t| t <= start) {
                failures.pop_front();
            }
            if failures.len() == MAX_KEPT_FAILURES {
                failures.pop_front();
            }
            failures.push_back(now);
            failures.len()
        };
        self.failing.store(1, Ordering::Relaxed);
        let threshold = usize::try_from(policy.max_failed)
            .unwrap_or(usize::MAX)
            .clamp(1, MAX_KEPT_FAILURES);
        if in_window < threshold || self.is_out(now) {
            return None;
        }
        let until = now.saturating_add(window);
        self.out_until.store(until, Ordering::Release);
        Some(until)
    }
}

/// Counts a request in flight towards a server until dropped, and measures
/// its time to first byte.
pub struct InFlight {
    state: Arc<ServerState>,
    started: Instant,
}

impl InFlight {
    /// The response headers arrived: folds the time they took into the
    /// server's moving average (one eighth per sample).
    pub fn first_byte(&self) {
        let sample = u64::try_from(self.started.elapsed().as_micros())
            .unwrap_or(u64::MAX / 16)
            .max(1);
        let old = self.state.ttfb_micros.load(Ordering::Relaxed);
        let new = if old == 0 {
            sample
        } else {
            old - old / 8 + sample / 8
        };
        // A lost update under contention only drops one sample.
        self.state.ttfb_micros.store(new.max(1), Ordering::Relaxed);
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.state.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Moves the health epoch at `until` ([`now_ms`]), when a server's time out
/// of the rotation ends, so that balancers recompute their schedule. Needs
/// a tokio runtime; without one (unit tests) nothing is scheduled.
pub fn wake_at(until: u64, epoch: Arc<AtomicU64>) {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let wait = Duration::from_millis(until.saturating_sub(now_ms()).saturating_add(1));
    handle.spawn(async move {
        tokio::time::sleep(wait).await;
        epoch.fetch_add(1, Ordering::Release);
    });
}

/// What a load balancer knows of a server from its own connections: a
/// server that refused one (or did not answer in time) is skipped for a
/// while, twice as long after each failure in a row, and tried again
/// after; a connection it accepts clears that. With an active health
/// check, a server failing it takes no new connections at all until it
/// passes again.
#[derive(Debug, Default)]
pub struct ServerHealth {
    /// How its connections ended lately: what every surface reads.
    pub record: Record,
    /// Failed connections in a row.
    failures: AtomicU32,
    /// Until when it is skipped, by [`now_ms`].
    skipped_until: AtomicU64,
    /// Whether its last active health check failed.
    check_failed: AtomicBool,
}

/// How long a server is skipped after its first failure in a row.
pub const FIRST_SKIP: Duration = Duration::from_secs(1);

/// The longest a failing server is skipped at once, so a server back up
/// gets connections again soon.
pub const LONGEST_SKIP: Duration = Duration::from_secs(30);

/// How long to skip a server after `failures` failures in a row.
pub fn skip_for(failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    FIRST_SKIP.saturating_mul(1 << doublings).min(LONGEST_SKIP)
}

impl ServerHealth {
    /// Whether the last connection to it or its last health check failed
    /// (Traefik's `DOWN`).
    pub fn is_down(&self) -> bool {
        self.failures.load(Ordering::Relaxed) > 0 || self.fails_check()
    }

    /// Whether its last active health check failed: it is out of rotation.
    pub fn fails_check(&self) -> bool {
        self.check_failed.load(Ordering::Acquire)
    }

    /// Records the outcome of an active health check; true when that
    /// moved the server in or out of rotation. A passing check also clears
    /// the failed connections, as a connection it accepts would.
    pub fn set_checked(&self, passed: bool) -> bool {
        let changed = self.check_failed.swap(!passed, Ordering::AcqRel) == passed;
        if passed {
            self.clear();
        }
        changed
    }

    /// Whether new connections pass it by for now.
    pub fn is_skipped(&self) -> bool {
        now_ms() < self.skipped_until.load(Ordering::Relaxed)
    }

    /// A connection to it failed.
    pub fn failed(&self) {
        self.record.note(Outcome::Refused, now_ms());
        let failures = self
            .failures
            .fetch_add(1, Ordering::Relaxed)
            .saturating_add(1);
        let skip = u64::try_from(skip_for(failures).as_millis()).unwrap_or(u64::MAX);
        self.skipped_until
            .store(now_ms().saturating_add(skip), Ordering::Relaxed);
    }

    /// An exchange with it got no answer in time (UDP: datagrams went out
    /// and none came back within the session's timeout). Noted only: a
    /// silent server is not skipped, as it may only have nothing to say.
    pub fn timed_out(&self) {
        self.record.note(Outcome::TimedOut, now_ms());
    }

    /// A connection to it succeeded.
    pub fn answered(&self) {
        self.record.note(Outcome::Answered(0), now_ms());
        self.clear();
    }

    /// Its failures in a row are forgiven.
    fn clear(&self) {
        // Read first: the common case writes nothing shared.
        if self.failures.load(Ordering::Relaxed) != 0 {
            self.failures.store(0, Ordering::Relaxed);
            self.skipped_until.store(0, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_failure_takes_a_server_out_by_default_for_the_quarantine() {
        let s = ServerState::default();
        let policy = PassivePolicy::DEFAULT;
        assert!(!s.is_out(100));
        let until = s.failed(&policy, 100).expect("out");
        assert_eq!(until, 100 + millis(DEFAULT_QUARANTINE));
        assert!(s.is_out(101) && s.is_out(until - 1) && !s.is_out(until));
        // Already out: a failure does not move the end.
        assert_eq!(s.failed(&policy, 200), None);
        assert_eq!(s.last_failure(), 200);
        assert!(s.succeeded(), "a success brings it back");
        assert!(!s.is_out(201));
        assert!(!s.succeeded(), "nothing to bring back");
    }

    #[test]
    fn max_failed_attempts_must_fall_within_the_window() {
        let s = ServerState::default();
        let policy = PassivePolicy::configured(Some(Duration::from_millis(1000)), Some(3));
        assert!(policy.count_status);
        assert_eq!(s.failed(&policy, 1_000), None);
        assert_eq!(s.failed(&policy, 1_500), None);
        // The first failure has left the window: two in it.
        assert_eq!(s.failed(&policy, 2_100), None);
        assert_eq!(s.failed(&policy, 2_200), Some(3_200));
        assert!(s.is_out(3_199) && !s.is_out(3_200));
        // A success clears the count.
        s.succeeded();
        assert_eq!(s.failed(&policy, 4_000), None);
    }

    #[test]
    fn defaults_follow_traefik_and_zero_attempts_means_one() {
        let p = PassivePolicy::configured(None, None);
        assert_eq!((p.window, p.max_failed), (DEFAULT_FAILURE_WINDOW, 1));
        assert_eq!(PassivePolicy::configured(None, Some(0)).max_failed, 1);
    }

    #[test]
    fn in_flight_counts_until_dropped_and_ttfb_averages() {
        let s = Arc::new(ServerState::default());
        let a = s.start();
        let b = s.start();
        assert_eq!(s.in_flight(), 2);
        a.first_byte();
        assert!(s.ttfb_micros() > 0);
        drop(a);
        drop(b);
        assert_eq!(s.in_flight(), 0);
    }

    #[test]
    fn skipping_doubles_with_each_failure_up_to_a_bound() {
        assert_eq!(skip_for(1), FIRST_SKIP);
        assert_eq!(skip_for(2), FIRST_SKIP * 2);
        assert_eq!(skip_for(3), FIRST_SKIP * 4);
        assert_eq!(skip_for(40), LONGEST_SKIP);
        assert_eq!(skip_for(u32::MAX), LONGEST_SKIP);
    }
}
