//! The one model of what serving is: per server, a rolling record of how
//! the proxy's requests to it ended, and what that makes of the server.
//! The balancer writes it; the API, the dashboard, explain and `check` read
//! it (through the service walk above it), so every surface says what the
//! requests got.
//!
//! The window is the last [`SLOTS`] outcomes and the last [`WINDOW`],
//! whichever is shorter, so a figure means the same at one request a minute
//! and at ten thousand a second; when nothing falls in it, the newest
//! outcome alone still tells what the server did last. Writing an outcome
//! is two atomic operations and no lock.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

/// Outcomes kept per server.
pub const SLOTS: usize = 32;

/// The longest an outcome counts for.
pub const WINDOW: Duration = Duration::from_secs(60);

/// How one request to one server ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The server answered with this status (a 5xx is the server's own);
    /// 0 for a TCP connection or UDP exchange, which has no status.
    Answered(u16),
    /// No connection could be made (refused, unreachable, dial timeout,
    /// TLS): nothing reached the server, and gangway answers 502.
    Refused,
    /// The exchange broke after the request left (reset, closed): 502.
    Broken,
    /// No response headers within `responseHeaderTimeout`: 504.
    TimedOut,
}

impl Outcome {
    /// Whether the client got a failing answer from this attempt: a 5xx,
    /// the server's or gangway's.
    pub fn failed(self) -> bool {
        !matches!(self, Outcome::Answered(s) if s < 500)
    }

    /// The status the client gets from it: the server's, or gangway's own.
    pub fn status(self) -> u16 {
        match self {
            Outcome::Answered(s) => s,
            Outcome::Refused | Outcome::Broken => 502,
            Outcome::TimedOut => 504,
        }
    }

    fn pack(self, at: u64) -> u64 {
        let (kind, status) = match self {
            Outcome::Answered(s) => (1, s.min(1023)),
            Outcome::Refused => (2, 0),
            Outcome::Broken => (3, 0),
            Outcome::TimedOut => (4, 0),
        };
        (at << 16) | (u64::from(status) << 3) | kind
    }

    fn unpack(word: u64) -> Option<(Outcome, u64)> {
        let at = word >> 16;
        // The status field holds at most 10 bits.
        #[allow(clippy::cast_possible_truncation)]
        let status = ((word >> 3) & 0x3ff) as u16;
        let outcome = match word & 7 {
            1 => Outcome::Answered(status),
            2 => Outcome::Refused,
            3 => Outcome::Broken,
            4 => Outcome::TimedOut,
            _ => return None,
        };
        Some((outcome, at))
    }
}

/// The last outcomes of one server, written without a lock.
#[derive(Debug)]
pub struct Record {
    slots: [AtomicU64; SLOTS],
    next: AtomicU32,
}

impl Default for Record {
    fn default() -> Self {
        Record {
            slots: std::array::from_fn(|_| AtomicU64::new(0)),
            next: AtomicU32::new(0),
        }
    }
}

impl Record {
    /// Notes an outcome at `now` (milliseconds, [`crate::clock::now_ms`],
    /// never 0).
    pub fn note(&self, outcome: Outcome, now: u64) {
        let i = self.next.fetch_add(1, Ordering::Relaxed) as usize % SLOTS;
        self.slots[i].store(outcome.pack(now), Ordering::Relaxed);
    }

    /// What the record says at `now`.
    pub fn tally(&self, now: u64) -> Tally {
        let window = u64::try_from(WINDOW.as_millis()).unwrap_or(u64::MAX);
        let since = now.saturating_sub(window);
        let mut all: Vec<(Outcome, u64)> = self
            .slots
            .iter()
            .filter_map(|s| Outcome::unpack(s.load(Ordering::Relaxed)))
            .collect();
        all.sort_by_key(|&(_, at)| at);
        let Some(&(last, _)) = all.last() else {
            return Tally::default();
        };
        let recent: Vec<Outcome> = all
            .iter()
            .filter(|&&(_, at)| at > since)
            .map(|&(o, _)| o)
            .collect();
        // Nothing recent: the newest outcome still says what it did last.
        let counted: &[Outcome] = if recent.is_empty() {
            std::slice::from_ref(&last)
        } else {
            &recent
        };
        let mut tally = Tally {
            last: Some(last),
            ..Tally::default()
        };
        for o in counted {
            // A success after nothing but failures: the server is back,
            // and what it did before no longer says what it does.
            if !o.failed() && tally.answered == 0 && tally.failed() > 0 {
                tally = Tally {
                    last: tally.last,
                    ..Tally::default()
                };
            }
            tally.add(*o);
        }
        tally
    }
}

/// Outcomes in a server's window, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Answered below 500.
    pub answered: u32,
    /// Answered 5xx by the server.
    pub server_errors: u32,
    /// The newest 5xx the server answered.
    pub server_status: Option<u16>,
    /// No connection (gangway's 502).
    pub refused: u32,
    /// Broken after the request left (gangway's 502).
    pub broken: u32,
    /// No answer in time (gangway's 504).
    pub timed_out: u32,
    /// The newest outcome, whenever it was.
    pub last: Option<Outcome>,
}

impl Tally {
    fn add(&mut self, o: Outcome) {
        match o {
            Outcome::Answered(s) if s >= 500 => {
                self.server_errors += 1;
                self.server_status = Some(s);
            }
            Outcome::Answered(_) => self.answered += 1,
            Outcome::Refused => self.refused += 1,
            Outcome::Broken => self.broken += 1,
            Outcome::TimedOut => self.timed_out += 1,
        }
    }

    /// Outcomes counted.
    pub fn total(&self) -> u32 {
        self.answered + self.failed()
    }

    /// Outcomes that gave the client a 5xx.
    pub fn failed(&self) -> u32 {
        self.server_errors + self.refused + self.broken + self.timed_out
    }

    /// What this makes of the server.
    pub fn verdict(&self) -> Verdict {
        match self.last {
            None => Verdict::Unknown,
            Some(Outcome::Answered(s)) if s < 500 => Verdict::Up,
            Some(Outcome::Answered(_)) => Verdict::Erroring,
            Some(_) => Verdict::Unreachable,
        }
    }

    /// The status its failing requests got: the server's newest 5xx, else
    /// gangway's own for the kind of failure seen most.
    pub fn failing_status(&self) -> Option<u16> {
        if let Some(s) = self.server_status {
            return Some(s);
        }
        if self.refused + self.broken > 0 {
            Some(502)
        } else if self.timed_out > 0 {
            Some(504)
        } else {
            None
        }
    }
}

/// What a server's own outcomes make of it. A success after failures
/// brings it back at once: the newest outcome decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Nothing was sent to it yet: not known to serve.
    Unknown,
    /// Its newest answer was below 500.
    Up,
    /// Its newest answer was a 5xx of its own.
    Erroring,
    /// Its newest request got no answer (refused, broken, timed out).
    Unreachable,
}

impl Verdict {
    /// Its name, as the API gives it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Verdict::Unknown => "unknown",
            Verdict::Up => "up",
            Verdict::Erroring => "erroring",
            Verdict::Unreachable => "unreachable",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: u64 = 60_000;

    #[test]
    fn never_tried_is_unknown_and_a_success_after_failures_is_up_at_once() {
        let r = Record::default();
        assert_eq!(r.tally(1).verdict(), Verdict::Unknown);
        for t in 1..=5 {
            r.note(Outcome::Refused, t);
        }
        let t = r.tally(6);
        assert_eq!(
            (t.verdict(), t.refused, t.failing_status()),
            (Verdict::Unreachable, 5, Some(502))
        );
        r.note(Outcome::Answered(200), 7);
        let t = r.tally(8);
        assert_eq!((t.verdict(), t.answered, t.failed()), (Verdict::Up, 1, 0));
        // A failure among successes stays counted.
        r.note(Outcome::Answered(502), 9);
        r.note(Outcome::Answered(200), 10);
        let t = r.tally(11);
        assert_eq!((t.verdict(), t.answered, t.failed()), (Verdict::Up, 2, 1));
    }

    #[test]
    fn server_errors_are_the_servers_and_timeouts_gangways_504() {
        let r = Record::default();
        r.note(Outcome::Answered(404), 10);
        r.note(Outcome::Answered(503), 11);
        r.note(Outcome::Answered(502), 12);
        let t = r.tally(13);
        assert_eq!(
            (t.verdict(), t.server_errors, t.answered),
            (Verdict::Erroring, 2, 1)
        );
        assert_eq!(t.failing_status(), Some(502));
        let r = Record::default();
        r.note(Outcome::TimedOut, 1);
        assert_eq!(r.tally(2).failing_status(), Some(504));
        assert!(Outcome::Answered(500).failed() && !Outcome::Answered(499).failed());
    }

    #[test]
    fn the_window_is_the_last_slots_or_the_last_minute_whichever_is_shorter() {
        let r = Record::default();
        // Many fast failures, then more successes than slots: only those count.
        for t in 1..=100 {
            r.note(Outcome::Answered(502), t);
        }
        for t in 101..=140 {
            r.note(Outcome::Answered(200), t);
        }
        let t = r.tally(141);
        assert_eq!((t.answered, t.failed()), (32, 0));
        // Slow traffic: what is older than a minute no longer counts, but
        // the newest outcome still does when nothing is recent.
        let r = Record::default();
        r.note(Outcome::Answered(502), 1);
        r.note(Outcome::Answered(200), 2 * MIN);
        r.note(Outcome::Answered(502), 3 * MIN);
        let t = r.tally(3 * MIN + 1);
        assert_eq!((t.answered, t.server_errors), (0, 1));
        let t = r.tally(10 * MIN);
        assert_eq!((t.total(), t.verdict()), (1, Verdict::Erroring));
    }
}
