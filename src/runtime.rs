//! The immutable routing table (`Runtime`), the one `ArcSwap` that publishes
//! it (`RuntimeHandle`), and the state that outlives swaps (`Registries`).

pub mod registries;
pub mod report;

pub use crate::middleware::{Chain, Exchange, ServiceRef, Terminal};
pub use registries::Registries;
pub use report::{ObjectReport, Report, Status};

use crate::config::Dynamic;
use crate::rule::{Matcher, RequestFacts};
use arc_swap::ArcSwap;
use http::{HeaderValue, uri::Authority};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Index of an entry point in the static configuration's order.
pub type EntryPointId = usize;

/// One compiled generation of the whole routing configuration. Immutable:
/// a change builds a new one and swaps it in.
pub struct Runtime {
    /// Counts swaps since start; 0 is the empty table before any provider spoke.
    pub generation: u64,
    /// Routes per entry point, indexed by `EntryPointId`.
    pub entry_points: Vec<EntryPointRoutes>,
    /// Status and errors of every object, for logs and the API.
    pub report: Report,
    /// The merged dynamic configuration this was compiled from.
    pub dynamic: Arc<Dynamic>,
    /// TLS: server configurations, certificates, certificates to obtain.
    pub tls: crate::tls::Termination,
}

impl Runtime {
    /// A runtime with no routes, for `entry_points` entry points.
    pub fn empty(entry_points: usize) -> Self {
        Self {
            generation: 0,
            entry_points: (0..entry_points)
                .map(|_| EntryPointRoutes::default())
                .collect(),
            report: Report::default(),
            dynamic: Arc::new(Dynamic::default()),
            tls: crate::tls::Termination::default(),
        }
    }

    /// The route that takes this request on this entry point, if any.
    pub fn route(
        &self,
        ep: EntryPointId,
        tls: bool,
        req: &RequestFacts<'_>,
    ) -> Option<&Arc<Route>> {
        self.entry_points.get(ep)?.find(tls, req)
    }
}

/// The routes of one entry point, sorted by priority, with a host index in
/// front so that routers for other hosts cost nothing.
#[derive(Default)]
pub struct EntryPointRoutes {
    /// All routes, highest priority first; ties by name, so every run picks
    /// the same router.
    pub routes: Vec<Arc<Route>>,
    /// Exact host → positions in `routes` (ascending, i.e. priority order) of
    /// the routes that can only match that host.
    pub by_host: HashMap<String, Vec<usize>>,
    /// Positions of routes that may match any host (no exact host set).
    pub any_host: Vec<usize>,
}

impl EntryPointRoutes {
    /// Builds the table from routes in any order.
    pub fn new(mut routes: Vec<Arc<Route>>) -> Self {
        routes.sort_by(|a, b| {
            b.priority
                .cmp(&a.priority)
                .then_with(|| a.name.cmp(&b.name))
        });
        let mut by_host: HashMap<String, Vec<usize>> = HashMap::new();
        let mut any_host = Vec::new();
        for (i, route) in routes.iter().enumerate() {
            match route.matcher.exact_hosts() {
                Some(hosts) => {
                    for host in hosts {
                        let list = by_host.entry(host).or_default();
                        if list.last() != Some(&i) {
                            list.push(i);
                        }
                    }
                }
                None => any_host.push(i),
            }
        }
        Self {
            routes,
            by_host,
            any_host,
        }
    }

    /// The first route in priority order that matches. Walks the host's list
    /// and the any-host list together, both already in priority order.
    pub fn find(&self, tls: bool, req: &RequestFacts<'_>) -> Option<&Arc<Route>> {
        let exact: &[usize] = self.by_host.get(req.host).map_or(&[], Vec::as_slice);
        let (mut a, mut b) = (exact.iter().peekable(), self.any_host.iter().peekable());
        loop {
            let next = match (a.peek(), b.peek()) {
                (Some(&&x), Some(&&y)) if x < y => a.next(),
                (Some(_), Some(_)) => b.next(),
                (Some(_), None) => a.next(),
                (None, Some(_)) => b.next(),
                (None, None) => return None,
            };
            let route = next.and_then(|&i| self.routes.get(i))?;
            if route.tls == tls && route.matcher.matches(req) {
                return Some(route);
            }
        }
    }

    /// Every route in priority order, for explanations.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Route>> {
        self.routes.iter()
    }
}

/// A compiled router.
pub struct Route {
    /// Qualified router name (`app@file`).
    pub name: String,
    /// Effective priority (explicit, or the rule's length).
    pub priority: i64,
    /// The compiled rule.
    pub matcher: Matcher,
    /// Matches only TLS connections (the router has a `tls` section).
    pub tls: bool,
    /// The router's middlewares, in order (empty: none, and nothing to pay).
    pub chain: Chain,
    /// Where matching requests go.
    pub upstream: Arc<Upstream>,
    /// Qualified name of the service, for metrics and the access log.
    pub service_name: String,
    /// The router's request counters, when per-router metrics are on.
    pub stats: Option<Arc<crate::metrics::Stats>>,
    /// The service's request counters, when per-service metrics are on.
    pub service_stats: Option<Arc<crate::metrics::Stats>>,
    /// The service's bound on requests in progress; None when unlimited.
    pub gate: Option<Arc<crate::overload::Gate>>,
}

/// A service gangway answers itself (`api@internal`, `ping@internal`,
/// `prometheus@internal`). Its answers are small and complete, so they are
/// returned whole.
pub trait InternalService: Send + Sync {
    /// Answers one request. Must not block; may read the runtime.
    fn call(
        &self,
        req: http::Request<()>,
    ) -> futures_util::future::BoxFuture<'static, http::Response<http_body_util::Full<bytes::Bytes>>>;
}

/// A compiled service.
pub enum Upstream {
    /// Round robin with weights over servers.
    Servers(Balancer<Server>),
    /// Weighted round robin over other services.
    Weighted(Balancer<Arc<Upstream>>),
    /// Answered by gangway itself.
    Internal(Arc<dyn InternalService>),
}

impl Upstream {
    /// Picks the server for the next request, descending through weighted
    /// services. None when there is no server at all.
    pub fn pick(&self) -> Option<&Server> {
        let mut current = self;
        // Weighted services nest; compile rejects cycles, and the depth bound
        // below keeps a mistake there from looping forever.
        for _ in 0..32 {
            match current {
                Upstream::Servers(b) => return b.next(),
                Upstream::Weighted(b) => current = b.next()?,
                Upstream::Internal(_) => return None,
            }
        }
        None
    }
}

/// Smooth weighted round robin, precomputed into a schedule and walked with
/// one atomic counter, so picking takes no lock.
pub struct Balancer<T> {
    items: Vec<T>,
    schedule: Vec<u32>,
    position: Arc<AtomicUsize>,
}

impl<T> Balancer<T> {
    /// Builds the schedule for `items` with their weights (0 excludes an item).
    /// `position` is carried over from the previous runtime by `Registries`.
    pub fn new(items: Vec<(T, u32)>, position: Arc<AtomicUsize>) -> Self {
        let schedule = smooth_schedule(&items.iter().map(|(_, w)| *w).collect::<Vec<_>>());
        Self {
            items: items.into_iter().map(|(t, _)| t).collect(),
            schedule,
            position,
        }
    }

    /// The next item in the rotation.
    pub fn next(&self) -> Option<&T> {
        if self.schedule.is_empty() {
            return None;
        }
        let n = self.position.fetch_add(1, Ordering::Relaxed);
        let slot = self.schedule.get(n % self.schedule.len())?;
        self.items.get(*slot as usize)
    }

    /// The items, in configuration order.
    pub fn items(&self) -> &[T] {
        &self.items
    }
}

/// The nginx-style smooth weighted order over one full cycle of the weights
/// (scaled down so that a cycle never exceeds a few thousand slots).
fn smooth_schedule(weights: &[u32]) -> Vec<u32> {
    const MAX_CYCLE: u64 = 4096;
    let total: u64 = weights.iter().map(|&w| u64::from(w)).sum();
    if total == 0 {
        return Vec::new();
    }
    let scale = total.div_ceil(MAX_CYCLE).max(1);
    let weights: Vec<i64> = weights
        .iter()
        .map(|&w| {
            if w == 0 {
                0
            } else {
                (u64::from(w) / scale).max(1) as i64
            }
        })
        .collect();
    let total: i64 = weights.iter().sum();
    let mut current = vec![0i64; weights.len()];
    let mut out = Vec::with_capacity(total as usize);
    for _ in 0..total {
        let mut best = 0;
        for (i, w) in weights.iter().enumerate() {
            current[i] += w;
            if current[i] > current[best] {
                best = i;
            }
        }
        current[best] -= total;
        out.push(best as u32);
    }
    out
}

/// One compiled server of a load balancer.
pub struct Server {
    /// The URL as configured, for logs and the API.
    pub url: String,
    /// `http` for HTTP/1.1 upstream, `h2c` for HTTP/2 cleartext.
    pub h2c: bool,
    /// `host:port` to connect to.
    pub authority: Authority,
    /// Path prefix from the URL (empty, or starting with `/` and without a trailing `/`).
    pub path_prefix: String,
    /// Send the client's Host header (passHostHeader), or this server's.
    pub pass_host_header: bool,
    /// The server's own `host:port`, as a header value, for passHostHeader=false.
    pub host_header: HeaderValue,
    /// The client pool for this server's transport.
    pub client: Arc<crate::runtime::registries::UpstreamClient>,
}

/// Publishes runtimes: one `load` per request, one `store` per change.
pub struct RuntimeHandle {
    current: ArcSwap<Runtime>,
    published: tokio::sync::watch::Sender<u64>,
}

impl RuntimeHandle {
    /// A handle that starts with `initial`.
    pub fn new(initial: Runtime) -> Self {
        let (published, _) = tokio::sync::watch::channel(initial.generation);
        Self {
            current: ArcSwap::from_pointee(initial),
            published,
        }
    }

    /// The current runtime. Hold the guard briefly; clone the `Arc` out of it
    /// for anything that awaits.
    pub fn load(&self) -> arc_swap::Guard<Arc<Runtime>> {
        self.current.load()
    }

    /// The current runtime as an owned `Arc`.
    pub fn load_full(&self) -> Arc<Runtime> {
        self.current.load_full()
    }

    /// Publishes a new runtime atomically. Requests in flight keep the one
    /// they started with.
    pub fn store(&self, runtime: Runtime) {
        let generation = runtime.generation;
        self.current.store(Arc::new(runtime));
        self.published.send_replace(generation);
    }

    /// A receiver told of each runtime stored from now on (its generation;
    /// several quick stores may be seen as the last one), for tasks that
    /// follow configuration changes, such as ACME.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.published.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smooth_schedule_follows_weights_and_interleaves() {
        let s = smooth_schedule(&[5, 1, 1]);
        assert_eq!(s.len(), 7);
        assert_eq!(s.iter().filter(|&&i| i == 0).count(), 5);
        // Smooth: the heavy server is never picked more than 3 times in a row here.
        assert_eq!(s, vec![0, 0, 1, 0, 2, 0, 0]);
        assert!(smooth_schedule(&[0, 0]).is_empty());
        assert_eq!(smooth_schedule(&[0, 2]), vec![1, 1]);
        let big = smooth_schedule(&[1_000_000, 3_000_000]);
        assert!(big.len() <= 4096 && !big.is_empty());
        let ones = big.iter().filter(|&&i| i == 1).count() as f64 / big.len() as f64;
        assert!((ones - 0.75).abs() < 0.01, "{ones}");
    }
}
