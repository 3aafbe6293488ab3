//! Bounded work under overload. Two bounds, both gangway's own (Traefik has
//! neither):
//!
//! - **Connections per entry point** (`entryPoints.<name>.transport.maxConnections`):
//!   at the limit the entry point stops accepting, so further connections
//!   wait in the kernel's listen backlog until one closes, as HAProxy's
//!   `maxconn` does. Nothing is read from them and nothing is refused.
//! - **Requests in progress per service** (`maxConcurrentRequests`, with a
//!   default in `serversTransport` and an override in each service's
//!   `loadBalancer`): a request counts from when it is handed to the service
//!   until the server's response headers arrive. Past the limit a request
//!   waits for a free slot for at most `queueTimeout`, and no more requests
//!   wait than may be in progress; a request that cannot wait, or whose wait
//!   runs out, gets `503` with `Retry-After: 1` at once.
//!
//! Queueing without bound is what drives latency to seconds when a backend
//! falls behind: every waiting request eventually reaches the backend after
//! its client has given up. A short bounded wait absorbs bursts; past it a
//! fast 503 lets clients (and load balancers in front) go elsewhere.

use crate::config::dynamic;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, SemaphorePermit};

/// A service's bound on requests in progress (by default none).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Limits {
    /// Requests that may be in progress at once; 0 means no limit.
    pub max_concurrent: usize,
    /// How long a request past the limit may wait for a slot; zero refuses
    /// it at once.
    pub queue_timeout: Duration,
}

impl Limits {
    /// The limits of a service: its `loadBalancer` settings, else `defaults`
    /// (from `serversTransport`). Weighted services use the defaults for
    /// their whole.
    pub fn of(service: Option<&dynamic::Service>, defaults: Limits) -> Limits {
        let lb = service.and_then(|s| s.load_balancer.as_ref());
        Limits {
            max_concurrent: lb
                .and_then(|lb| lb.max_concurrent_requests)
                .unwrap_or(defaults.max_concurrent),
            queue_timeout: lb
                .and_then(|lb| lb.queue_timeout)
                .map_or(defaults.queue_timeout, |d| d.0),
        }
    }
}

/// The gate in front of one service: counts its requests in progress and
/// holds the short queue. Kept in `Registries` under the service's name and
/// limits, so a configuration swap that leaves both alone keeps the counts
/// (and a burst cannot slip through while a new table is published).
pub struct Gate {
    slots: Semaphore,
    waiting: AtomicUsize,
    limits: Limits,
}

/// The service is at its limit and the wait ran out (or could not start).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused;

/// Where gates outlive a runtime swap (the runtime's registries), so that
/// an unchanged service keeps its slots and its queue. Handed in by compile,
/// so this room needs nothing of the runtime.
pub trait KeepGates {
    /// The gate of `service` with `limits`, made with `make` on first use;
    /// the same service and limits give the same gate for as long as some
    /// runtime uses it.
    fn keep_gate(&self, service: &str, limits: Limits, make: impl FnOnce() -> Gate) -> Arc<Gate>;
}

impl Gate {
    fn new(limits: Limits) -> Self {
        Self {
            slots: Semaphore::new(limits.max_concurrent),
            waiting: AtomicUsize::new(0),
            limits,
        }
    }

    /// The gate for `service` with these limits, shared with every runtime
    /// that uses the same service and limits. None when there is no limit.
    pub fn for_service(
        registries: &impl KeepGates,
        service: &str,
        limits: Limits,
    ) -> Option<Arc<Gate>> {
        if limits.max_concurrent == 0 {
            return None;
        }
        Some(registries.keep_gate(service, limits, || Gate::new(limits)))
    }

    /// Takes a slot: at once when one is free, else after a wait of at most
    /// `queue_timeout` if the queue has room. The slot is given back when
    /// the returned permit is dropped.
    pub async fn admit(&self) -> Result<SemaphorePermit<'_>, Refused> {
        // The common case is one atomic compare-and-swap; only a request
        // that must wait enters the semaphore's (FIFO) wait list.
        if let Ok(permit) = self.slots.try_acquire() {
            return Ok(permit);
        }
        if self.limits.queue_timeout.is_zero() {
            return Err(Refused);
        }
        // As many may wait as may be in progress: a longer queue could not
        // drain within the wait anyway, so its requests are refused at once.
        if self.waiting.fetch_add(1, Ordering::AcqRel) >= self.limits.max_concurrent {
            self.waiting.fetch_sub(1, Ordering::AcqRel);
            return Err(Refused);
        }
        let waited = tokio::time::timeout(self.limits.queue_timeout, self.slots.acquire()).await;
        self.waiting.fetch_sub(1, Ordering::AcqRel);
        match waited {
            Ok(Ok(permit)) => Ok(permit),
            // Timed out, or the semaphore was closed (it never is).
            _ => Err(Refused),
        }
    }

    /// Requests in progress now (for tests and the API).
    pub fn in_progress(&self) -> usize {
        self.limits
            .max_concurrent
            .saturating_sub(self.slots.available_permits())
    }

    /// Requests waiting for a slot now.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Acquire)
    }
}

/// An entry point's bound on open connections.
pub struct ConnectionLimit {
    slots: Arc<Semaphore>,
}

/// One open connection's slot, given back when the connection ends.
pub type ConnectionSlot = OwnedSemaphorePermit;

impl ConnectionLimit {
    /// A limit of `max` connections; None for 0 (no limit).
    pub fn new(max: usize) -> Option<Self> {
        (max > 0).then(|| Self {
            slots: Arc::new(Semaphore::new(max.min(Semaphore::MAX_PERMITS))),
        })
    }

    /// Waits until a connection may be accepted.
    pub async fn acquire(&self) -> ConnectionSlot {
        self.slots
            .clone()
            .acquire_owned()
            .await
            .expect("the semaphore is never closed")
    }

    /// A slot if one is free now.
    pub fn try_acquire(&self) -> Option<ConnectionSlot> {
        self.slots.clone().try_acquire_owned().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max: usize, wait_ms: u64) -> Limits {
        Limits {
            max_concurrent: max,
            queue_timeout: Duration::from_millis(wait_ms),
        }
    }

    #[tokio::test]
    async fn slots_are_counted_and_given_back() {
        let gate = Gate::new(limits(2, 0));
        let a = gate.admit().await.expect("first");
        let b = gate.admit().await.expect("second");
        assert_eq!(gate.admit().await.err(), Some(Refused));
        assert_eq!(gate.in_progress(), 2);
        drop(a);
        let c = gate.admit().await.expect("a slot is free again");
        drop((b, c));
        assert_eq!(gate.in_progress(), 0);
    }

    #[tokio::test]
    async fn a_waiting_request_gets_the_next_free_slot() {
        let gate = Arc::new(Gate::new(limits(1, 60_000)));
        let held = gate.admit().await.expect("first");
        let waiter = {
            let gate = gate.clone();
            tokio::spawn(async move { gate.admit().await.map(drop) })
        };
        while gate.waiting() == 0 {
            tokio::task::yield_now().await;
        }
        // The queue holds as many as may be in progress: one.
        assert_eq!(gate.admit().await.err(), Some(Refused));
        drop(held);
        assert_eq!(waiter.await.expect("joined"), Ok(()));
        assert_eq!(gate.waiting(), 0);
    }

    #[tokio::test]
    async fn a_wait_ends_with_a_refusal() {
        let gate = Gate::new(limits(1, 50));
        let _held = gate.admit().await.expect("first");
        assert_eq!(gate.admit().await.err(), Some(Refused));
        assert_eq!(gate.waiting(), 0);
    }

    /// Gates kept by key, as the registries keep them.
    #[derive(Default)]
    struct Kept(std::sync::Mutex<std::collections::HashMap<(String, Limits), Arc<Gate>>>);

    impl KeepGates for Kept {
        fn keep_gate(
            &self,
            service: &str,
            limits: Limits,
            make: impl FnOnce() -> Gate,
        ) -> Arc<Gate> {
            let mut kept = self
                .0
                .lock()
                .expect("not poisoned: the tests do not panic holding it");
            kept.entry((service.to_owned(), limits))
                .or_insert_with(|| Arc::new(make()))
                .clone()
        }
    }

    #[test]
    fn a_service_overrides_the_defaults() {
        let defaults = limits(1024, 100);
        assert_eq!(Limits::of(None, defaults), defaults);
        let service = dynamic::Service {
            load_balancer: Some(dynamic::LoadBalancer {
                max_concurrent_requests: Some(8),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(Limits::of(Some(&service), defaults), limits(8, 100));
        let registries = Kept::default();
        assert!(Gate::for_service(&registries, "s@file", limits(0, 100)).is_none());
        let a = Gate::for_service(&registries, "s@file", limits(8, 100)).expect("a gate");
        let b = Gate::for_service(&registries, "s@file", limits(8, 100)).expect("a gate");
        assert!(Arc::ptr_eq(&a, &b), "same service and limits: same gate");
        let c = Gate::for_service(&registries, "s@file", limits(9, 100)).expect("a gate");
        assert!(!Arc::ptr_eq(&a, &c), "new limits start afresh");
    }
}
