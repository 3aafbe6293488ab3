//! Workers: how many single-thread runtimes serve the TCP entry points, and
//! which one the current thread is.
//!
//! With several CPUs, each worker is an OS thread running its own
//! single-thread tokio runtime; it accepts on its own `SO_REUSEPORT`
//! listener of every TCP entry point and serves those connections start to
//! finish, through upstream connections of its own (see
//! `client::UpstreamClient`). Everything else (providers, ACME, UDP, HTTP/3,
//! health checks) runs on the main runtime. With one CPU there is no worker
//! thread: the main runtime is single-thread and serves everything.
//! Connections are spread over the workers by the kernel, evened out for
//! few long-lived ones by handing them on (`handoff`).

pub mod handoff;

use std::cell::Cell;
use std::sync::OnceLock;

thread_local! {
    /// The worker this thread is, once `enter` has said so.
    static CURRENT: Cell<Option<usize>> = const { Cell::new(None) };
}

/// How many workers serve the TCP entry points: `TOKIO_WORKER_THREADS` when
/// it holds a positive number, otherwise the CPUs this process may use
/// (affinity and cgroup quota included). Read once.
pub fn count() -> usize {
    static COUNT: OnceLock<usize> = OnceLock::new();
    *COUNT.get_or_init(|| {
        std::env::var("TOKIO_WORKER_THREADS")
            .ok()
            .and_then(|v| parse_count(&v))
            .or_else(|| std::thread::available_parallelism().ok().map(usize::from))
            .unwrap_or(1)
    })
}

/// A worker count as `TOKIO_WORKER_THREADS` gives it; None unless it is a
/// positive number.
fn parse_count(text: &str) -> Option<usize> {
    text.trim().parse::<usize>().ok().filter(|n| *n > 0)
}

/// The worker running the current thread; None on the main runtime's
/// threads (and everywhere when there is one worker).
pub fn current() -> Option<usize> {
    CURRENT.with(Cell::get)
}

/// The slot of per-worker state the current thread uses, out of
/// `count() + 1`: its worker's, or the last one for the main runtime.
pub fn slot() -> usize {
    current().unwrap_or_else(count)
}

/// Marks the current thread as worker `index`; each worker thread calls it
/// once, before its runtime starts.
pub(crate) fn enter(index: usize) {
    CURRENT.with(|c| c.set(Some(index)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_positive_numbers() {
        assert_eq!(parse_count("4"), Some(4));
        assert_eq!(parse_count(" 2\n"), Some(2));
        assert_eq!(parse_count("0"), None);
        assert_eq!(parse_count("many"), None);
    }

    #[test]
    fn threads_outside_workers_use_the_main_slot() {
        let main = std::thread::spawn(slot).join().expect("thread");
        assert_eq!(main, count());
        let worker = std::thread::spawn(|| {
            enter(0);
            (current(), slot())
        })
        .join()
        .expect("thread");
        assert_eq!(worker, (Some(0), 0));
    }
}
