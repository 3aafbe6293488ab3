//! What the proxy's own requests say about a server: connection attempts
//! that failed in a row, shown by the API beside (or instead of) active
//! health checks.

use super::SendError;
use std::sync::atomic::Ordering;
use std::sync::{Mutex, PoisonError};

/// Consecutive failed connection attempts after which a server is shown
/// down without an active health check: one refusal can be a restart,
/// three in a row with no success between them is a server that is gone.
pub const PASSIVE_DOWN_AFTER: u32 = 3;

/// What the proxy's own requests say about one server address: how many
/// connection attempts in a row failed (refused, unreachable, dial timeout,
/// TLS handshake) and why the last one did. It only informs the API; the
/// balancer keeps sending to the server, so the first request that gets
/// through again marks it up.
#[derive(Default)]
pub struct PassiveHealth {
    failures: std::sync::atomic::AtomicU32,
    last_error: Mutex<Option<String>>,
}

impl PassiveHealth {
    /// A connection was made (and the server answered).
    pub fn connected(&self) {
        // Read first: the counter is written only when it changes, so a
        // healthy server's requests do not share a written cache line.
        if self.failures.load(Ordering::Relaxed) != 0 {
            self.failures.store(0, Ordering::Relaxed);
        }
    }

    /// A connection attempt failed with `error`.
    pub fn failed(&self, error: &SendError) {
        *self
            .last_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(describe(error));
        self.failures.fetch_add(1, Ordering::Relaxed);
    }

    /// Connection attempts that failed in a row since the last success.
    pub fn failures(&self) -> u32 {
        self.failures.load(Ordering::Relaxed)
    }

    /// Whether the server counts as down: [`PASSIVE_DOWN_AFTER`] failures
    /// in a row.
    pub fn is_down(&self) -> bool {
        self.failures() >= PASSIVE_DOWN_AFTER
    }

    /// Why the last attempt failed, while the failures last.
    pub fn last_error(&self) -> Option<String> {
        if self.failures() == 0 {
            return None;
        }
        self.last_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// A short description of a client error, with its cause.
pub fn describe(e: &SendError) -> String {
    use std::error::Error as _;
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passive_health_is_down_after_failures_in_a_row_and_up_after_a_success() {
        let p = PassiveHealth::default();
        let refused = SendError::connect("cannot connect to 127.0.0.1:1", None);
        assert!(!p.is_down() && p.last_error().is_none());
        for n in 1..PASSIVE_DOWN_AFTER {
            p.failed(&refused);
            assert_eq!(p.failures(), n);
            assert!(!p.is_down(), "{n} failures");
        }
        p.failed(&refused);
        assert!(p.is_down());
        assert!(p.last_error().is_some_and(|e| e.contains("127.0.0.1:1")));
        p.connected();
        assert!(!p.is_down() && p.failures() == 0 && p.last_error().is_none());
        // Failures must be in a row: a success in between starts again.
        p.failed(&refused);
        p.failed(&refused);
        p.connected();
        p.failed(&refused);
        assert!(!p.is_down());
    }
}
