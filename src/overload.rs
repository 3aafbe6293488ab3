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
//! - **A client's share of a service** (`serversTransport.maxConcurrentRequestsPerClient`):
//!   binds only under contention (max-min fairness). A client within its
//!   share is always entitled to a slot. Past its share a client may still
//!   take a free slot, lent to it, as long as no other client is waiting
//!   for one or has just been refused: alone it gets the whole service. Once
//!   another client within its share has to wait or is refused, requests
//!   past their share get `503` at once (without waiting in the queue)
//!   while it waits and for [`CONTENTION`] after, and the slots lent past a share whose requests have no
//!   answer yet are taken back (those requests get the `503`). So a client
//!   that pins requests (bodies begun and never finished, a slow-read flood
//!   over many HTTP/2 connections) keeps at most its share once others need
//!   the service, and every other client keeps being answered. A client is
//!   its source address, or, when that address is a trusted proxy
//!   (`forwardedHeaders`), the address the proxy put last in
//!   `X-Forwarded-For`: everyone behind one tunnel or CDN is not one client.
//!
//! Queueing without bound is what drives latency to seconds when a backend
//! falls behind: every waiting request eventually reaches the backend after
//! its client has given up. A short bounded wait absorbs bursts; past it a
//! fast 503 lets clients (and load balancers in front) go elsewhere.

use crate::config::dynamic;
use std::hash::{BuildHasher, RandomState};
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, SemaphorePermit};
use tokio::time::Instant;

/// How long a service counts as contended after a client within its share
/// had to wait for a slot or was refused one: as long as the `Retry-After`
/// its refusals carry, so a client that comes back when told finds the
/// share still binding if the others are still there.
pub const CONTENTION: Duration = Duration::from_secs(1);

/// A service's bound on requests in progress (by default none).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Limits {
    /// Requests that may be in progress at once; 0 means no limit.
    pub max_concurrent: usize,
    /// How long a request past the limit may wait for a slot; zero refuses
    /// it at once.
    pub queue_timeout: Duration,
    /// Slots one client (source address) may hold at once; 0, or a value
    /// not below `max_concurrent`, means no share of its own. The same for
    /// every service (a static option), so it is not part of a gate's key.
    pub max_per_client: usize,
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
            max_per_client: defaults.max_per_client,
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
    /// Each client's share, when it is smaller than the whole.
    shares: Option<Shares>,
}

/// A slot of a service, and the client's share it counts against; both
/// given back when it is dropped.
pub struct Admitted<'a> {
    _slot: SemaphorePermit<'a>,
    share: Option<Share<'a>>,
    /// Set when the slot was lent past the client's share: the gate may
    /// take it back.
    lent: Option<Lent<'a>>,
}

/// A slot lent past its client's share; counted in [`Shares::lent`] while
/// held.
struct Lent<'a>(&'a Shares);

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        self.0.lent.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Admitted<'_> {
    /// Runs `work` (the request, until its answer's headers) while this
    /// slot is held; if the slot was lent and the gate takes it back first,
    /// the request is refused (and `work` is not polled again). `work` is
    /// pinned by the caller, so that this future holds a reference to it
    /// rather than a second copy of a request's whole state.
    pub async fn or_reclaimed<F: Future>(
        &mut self,
        mut work: std::pin::Pin<&mut F>,
    ) -> Result<F::Output, Refused> {
        let (Some(lent), Some(share)) = (&self.lent, &self.share) else {
            return Ok(work.await);
        };
        let shares = lent.0;
        tokio::select! {
            biased;
            done = &mut work => return Ok(done),
            () = shares.reclaim.notified() => {}
        }
        if share.past(shares.max) {
            return Err(Refused);
        }
        // The client's other requests have ended or were taken back first:
        // this one is within its share now, no longer lent.
        self.lent = None;
        Ok(work.await)
    }
}

/// Slots in use per client, in a fixed table of counters: no lock, no
/// allocation per request, and memory that does not grow with the number
/// of clients. A client's address picks one counter in each of two rows
/// (a count-min sketch); its count is the smaller of the two. Clients that
/// share a counter add up, so a count is never below the client's own: a
/// client can never hold more than its share. A well-behaved client is
/// refused only if it shares both counters with clients that together
/// hold a whole share (one chance in `BUCKETS`² per busy client).
struct Shares {
    counts: Box<[AtomicU32]>,
    /// Keyed per gate, so that no one can pick addresses that meet another
    /// client's counters.
    keys: RandomState,
    max: u32,
    /// Until when (milliseconds after `born`) the service counts as
    /// contended: shares bind.
    contended_until: AtomicU64,
    born: Instant,
    /// Slots lent past a share and held now.
    lent: AtomicUsize,
    /// Clients within their share waiting for a slot now: the service is
    /// contended for as long as one waits.
    waiting: AtomicUsize,
    /// Wakes the holders of lent slots to give them back.
    reclaim: Notify,
}

/// Counters per row of [`Shares`]: 1 KiB per limited service in all.
const BUCKETS: usize = 128;

/// One client's hold on its two counters.
struct Share<'a>([&'a AtomicU32; 2]);

impl Drop for Share<'_> {
    fn drop(&mut self) {
        for count in self.0 {
            count.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

impl Shares {
    fn new(max: usize) -> Self {
        Shares {
            counts: (0..2 * BUCKETS).map(|_| AtomicU32::new(0)).collect(),
            keys: RandomState::new(),
            max: u32::try_from(max).unwrap_or(u32::MAX),
            contended_until: AtomicU64::new(0),
            born: Instant::now(),
            lent: AtomicUsize::new(0),
            waiting: AtomicUsize::new(0),
            reclaim: Notify::new(),
        }
    }

    /// Counts one more slot for `client`, and whether that puts it past its
    /// share.
    fn take(&self, client: IpAddr) -> (Share<'_>, bool) {
        let hash = self.keys.hash_one(client_key(client));
        let first = &self.counts[hash as usize % BUCKETS];
        let second = &self.counts[BUCKETS + (hash >> 32) as usize % BUCKETS];
        let held = first
            .fetch_add(1, Ordering::AcqRel)
            .min(second.fetch_add(1, Ordering::AcqRel));
        (Share([first, second]), held >= self.max)
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.born.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn contended(&self) -> bool {
        self.waiting.load(Ordering::Acquire) > 0
            || self.now_ms() < self.contended_until.load(Ordering::Acquire)
    }

    /// A client within its share had to wait or was refused: shares bind
    /// for a while, and the slots lent past them are taken back.
    fn contend(&self) {
        let until = self.now_ms().saturating_add(CONTENTION.as_millis() as u64);
        self.contended_until.fetch_max(until, Ordering::AcqRel);
        if self.lent.load(Ordering::Acquire) > 0 {
            self.reclaim.notify_waiters();
        }
    }
}

impl Share<'_> {
    /// Whether the client still holds more than `max` slots, this one
    /// included.
    fn past(&self, max: u32) -> bool {
        let [first, second] = self.0;
        first
            .load(Ordering::Acquire)
            .min(second.load(Ordering::Acquire))
            > max
    }
}

/// Who counts as one client: an IPv4 address, or an IPv6 address's /64
/// (one host usually has a whole /64 and can send from any address in it).
fn client_key(client: IpAddr) -> u64 {
    match client.to_canonical() {
        IpAddr::V4(v4) => u64::from(u32::from(v4)),
        IpAddr::V6(v6) => (u128::from(v6) >> 64) as u64 | 1 << 63,
    }
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
        let shared = limits.max_per_client > 0 && limits.max_per_client < limits.max_concurrent;
        Self {
            slots: Semaphore::new(limits.max_concurrent),
            waiting: AtomicUsize::new(0),
            limits,
            shares: shared.then(|| Shares::new(limits.max_per_client)),
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

    /// Takes a slot for a request from `client`: at once when a slot is
    /// free, else after a wait of at most `queue_timeout` if the queue has
    /// room. Past the client's share, only a free slot is lent, and only
    /// while the service is not contended; otherwise the request is refused
    /// at once. The slot is given back when the returned value is dropped.
    pub async fn admit(&self, client: IpAddr) -> Result<Admitted<'_>, Refused> {
        let Some(shares) = &self.shares else {
            return Ok(Admitted {
                _slot: self.slot().await?,
                share: None,
                lent: None,
            });
        };
        let (share, past) = shares.take(client);
        let slot = if past {
            // A client past its share does not wait: waiting would only
            // hold its request longer, and take queue room from the others.
            if shares.contended() {
                return Err(Refused);
            }
            self.slots.try_acquire().map_err(|_| Refused)?
        } else if let Ok(slot) = self.slots.try_acquire() {
            slot
        } else {
            shares.contend();
            shares.waiting.fetch_add(1, Ordering::AcqRel);
            let waited = self.wait().await;
            shares.waiting.fetch_sub(1, Ordering::AcqRel);
            waited?
        };
        let lent = past.then(|| {
            shares.lent.fetch_add(1, Ordering::AcqRel);
            Lent(shares)
        });
        Ok(Admitted {
            _slot: slot,
            share: Some(share),
            lent,
        })
    }

    async fn slot(&self) -> Result<SemaphorePermit<'_>, Refused> {
        // The common case is one atomic compare-and-swap; only a request
        // that must wait enters the semaphore's (FIFO) wait list.
        if let Ok(permit) = self.slots.try_acquire() {
            return Ok(permit);
        }
        self.wait().await
    }

    async fn wait(&self) -> Result<SemaphorePermit<'_>, Refused> {
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
    use futures_util::FutureExt;

    const ONE: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 1));

    fn limits(max: usize, wait_ms: u64) -> Limits {
        Limits {
            max_concurrent: max,
            queue_timeout: Duration::from_millis(wait_ms),
            max_per_client: 0,
        }
    }

    const OTHER: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(198, 51, 100, 7));

    fn shared(max: usize, share: usize, wait_ms: u64) -> Gate {
        Gate::new(Limits {
            max_per_client: share,
            ..limits(max, wait_ms)
        })
    }

    fn now(gate: &Gate, client: IpAddr) -> Result<Admitted<'_>, Refused> {
        gate.admit(client).now_or_never().expect("no wait")
    }

    #[tokio::test]
    async fn a_client_alone_gets_the_whole_service() {
        let gate = shared(8, 2, 0);
        let held: Vec<_> = (0..8).map(|_| now(&gate, ONE).expect("alone")).collect();
        assert_eq!(held.iter().filter(|a| a.lent.is_some()).count(), 6);
        assert_eq!(now(&gate, ONE).err(), Some(Refused), "past the whole");
        assert!(!gate.shares.as_ref().expect("a table").contended());
        drop(held);
        assert_eq!(gate.in_progress(), 0);
        let shares = gate.shares.as_ref().expect("a table");
        assert_eq!(shares.lent.load(Ordering::Relaxed), 0);
        assert!(shares.counts.iter().all(|c| c.load(Ordering::Relaxed) == 0));
    }

    #[tokio::test]
    async fn a_client_within_its_share_takes_back_a_lent_slot() {
        // Slots borrow their gate, and the lent ones go to tasks.
        let gate: &'static Gate = Box::leak(Box::new(shared(4, 2, 60_000)));
        let mut greedy: Vec<_> = (0..4).map(|_| now(gate, ONE).expect("alone")).collect();
        // The lent ones wait for their answers (which never come).
        let lent = greedy.split_off(2);
        let (tx, mut ended) = tokio::sync::mpsc::unbounded_channel();
        for (i, mut slot) in lent.into_iter().enumerate() {
            let tx = tx.clone();
            tokio::spawn(async move {
                let got = slot
                    .or_reclaimed(std::pin::pin!(std::future::pending::<()>()))
                    .await;
                drop(slot);
                let _ = tx.send((i, got, gate.in_progress()));
            });
        }
        tokio::task::yield_now().await;
        // Another client finds the service full: it waits, and the lent
        // requests give their slots back, one of them to it.
        let other = gate.admit(OTHER).await.expect("a lent slot came back");
        for _ in 0..2 {
            let (_, got, _) = ended.recv().await.expect("a lent request ended");
            assert_eq!(got, Err(Refused));
        }
        // Now shares bind: the greedy client is refused past its share, and
        // the other client still gets its own.
        assert!(gate.shares.as_ref().expect("a table").contended());
        assert_eq!(gate.in_progress(), 3);
        assert_eq!(now(gate, ONE).err(), Some(Refused), "past its share");
        let second = now(gate, OTHER).expect("within its share");
        assert_eq!(gate.in_progress(), 4);
        drop((other, second, greedy));
    }

    #[tokio::test]
    async fn a_lent_request_back_within_its_share_is_not_taken() {
        let gate: &'static Gate = Box::leak(Box::new(shared(3, 1, 60_000)));
        let first = now(gate, ONE).expect("within its share");
        let mut lent = now(gate, ONE).expect("lent");
        assert!(lent.lent.is_some());
        let (answer, answered) = tokio::sync::oneshot::channel();
        let request = tokio::spawn(async move {
            let got = lent.or_reclaimed(std::pin::pin!(answered)).await;
            (got, lent.lent.is_none())
        });
        tokio::task::yield_now().await;
        // The client's first request ends: the lent one is its only one.
        drop(first);
        let shares = gate.shares.as_ref().expect("a table");
        shares.contend();
        tokio::task::yield_now().await;
        answer.send("answer").expect("still waiting");
        let (got, no_longer_lent) = request.await.expect("joined");
        assert_eq!(got, Ok(Ok("answer")));
        assert!(no_longer_lent);
        assert_eq!(shares.lent.load(Ordering::Relaxed), 0);
    }

    #[tokio::test]
    async fn under_contention_one_client_holds_at_most_its_share() {
        let gate = shared(100, 3, 0);
        // Someone within its share was refused just now.
        gate.shares.as_ref().expect("a table").contend();
        let greedy: Vec<_> = (0..3).map(|_| now(&gate, ONE).expect("within")).collect();
        assert_eq!(now(&gate, ONE).err(), Some(Refused), "past its share");
        // An IPv6 client is one /64.
        let v6 =
            |last: u16| IpAddr::V6(std::net::Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, last));
        let held: Vec<_> = (1..=3)
            .map(|i| now(&gate, v6(i)).expect("within"))
            .collect();
        assert_eq!(now(&gate, v6(9)).err(), Some(Refused));
        // Everyone else still gets slots, whatever the table's keys.
        let others: Vec<_> = (2..=60u8)
            .filter_map(|i| now(&gate, IpAddr::V4(std::net::Ipv4Addr::new(198, 51, 100, i))).ok())
            .collect();
        assert!(others.len() >= 58, "{} of 59 others admitted", others.len());
        assert_eq!(gate.in_progress(), 6 + others.len());
        drop((greedy, held, others));
        assert_eq!(gate.in_progress(), 0);
        assert!(now(&gate, ONE).is_ok(), "its share is given back");
        let counts = gate.shares.as_ref().expect("a table").counts.iter();
        assert!(counts.map(|c| c.load(Ordering::Relaxed)).all(|c| c == 0));
    }

    #[test]
    fn a_share_as_large_as_the_whole_needs_no_table() {
        let whole = Limits {
            max_per_client: 8,
            ..limits(8, 0)
        };
        assert!(Gate::new(whole).shares.is_none());
        assert!(Gate::new(limits(8, 0)).shares.is_none());
    }

    #[tokio::test]
    async fn slots_are_counted_and_given_back() {
        let gate = Gate::new(limits(2, 0));
        let a = gate.admit(ONE).await.expect("first");
        let b = gate.admit(ONE).await.expect("second");
        assert_eq!(gate.admit(ONE).await.err(), Some(Refused));
        assert_eq!(gate.in_progress(), 2);
        drop(a);
        let c = gate.admit(ONE).await.expect("a slot is free again");
        drop((b, c));
        assert_eq!(gate.in_progress(), 0);
    }

    #[tokio::test]
    async fn a_waiting_request_gets_the_next_free_slot() {
        let gate = Arc::new(Gate::new(limits(1, 60_000)));
        let held = gate.admit(ONE).await.expect("first");
        let waiter = {
            let gate = gate.clone();
            tokio::spawn(async move { gate.admit(ONE).await.map(drop) })
        };
        while gate.waiting() == 0 {
            tokio::task::yield_now().await;
        }
        // The queue holds as many as may be in progress: one.
        assert_eq!(gate.admit(ONE).await.err(), Some(Refused));
        drop(held);
        assert_eq!(waiter.await.expect("joined"), Ok(()));
        assert_eq!(gate.waiting(), 0);
    }

    #[tokio::test]
    async fn a_wait_ends_with_a_refusal() {
        let gate = Gate::new(limits(1, 50));
        let _held = gate.admit(ONE).await.expect("first");
        assert_eq!(gate.admit(ONE).await.err(), Some(Refused));
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
