//! What the proxy's own requests say about a server address: connection
//! attempts that failed in a row and why the last one did, shown by the
//! API beside (or instead of) active health checks. Routing reads the load
//! balancer's own passive health (`balance::passive`), which follows each
//! service's `passiveHealthCheck`.

use super::SendError;
use std::sync::atomic::Ordering;
use std::sync::{Mutex, PoisonError};

/// What the proxy's requests say about one server address: how many
/// connection attempts in a row failed (refused, unreachable, dial timeout,
/// TLS handshake) and why the last one did. Shared by every service using
/// the address with the same transport; the API shows it.
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
    fn failures_count_in_a_row_and_a_success_clears_them() {
        let p = PassiveHealth::default();
        let refused = SendError::connect("cannot connect to 127.0.0.1:1", None);
        assert!(p.failures() == 0 && p.last_error().is_none());
        for n in 1..=3 {
            p.failed(&refused);
            assert_eq!(p.failures(), n);
        }
        assert!(p.last_error().is_some_and(|e| e.contains("127.0.0.1:1")));
        p.connected();
        assert!(p.failures() == 0 && p.last_error().is_none());
    }
}
