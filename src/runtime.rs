//! The immutable routing table (`Runtime`), the one `ArcSwap` that publishes
//! it (`RuntimeHandle`), and the state that outlives swaps (`Registries`).

pub mod registries;
pub mod report;
pub mod tcp;

pub use crate::middleware::{Chain, Exchange, ServiceRef, Terminal};
pub use registries::Registries;
pub use report::{ObjectReport, Report, Status};

pub use crate::balance::Outcome;
use crate::balance::strategy::{self, Strategy};
use crate::balance::{MirrorShare, PassivePolicy, Rotation, ServerState, StickyCookie};
use crate::client::ServerKind;
use crate::clock::now_ms;
use crate::config::Dynamic;
use crate::health::ServiceHealth;
use crate::rule::{Matcher, RequestFacts};
use arc_swap::ArcSwap;
use http::uri::Authority;
use http::{HeaderMap, HeaderValue};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Index of an entry point in the static configuration's order.
pub type EntryPointId = usize;

/// One compiled generation of the whole routing configuration. Immutable:
/// a change builds a new one and swaps it in.
pub struct Runtime {
    /// Counts swaps since start; 0 is the empty table before any provider spoke.
    pub generation: u64,
    /// Routes per entry point, indexed by `EntryPointId`.
    pub entry_points: Vec<EntryPointRoutes>,
    /// TCP routes per entry point, indexed by `EntryPointId`; `None` where
    /// no TCP router listens.
    pub tcp: Vec<Option<Arc<tcp::TcpRoutes>>>,
    /// Every TCP service that compiled, by qualified name (what the API
    /// reads its servers' health from).
    pub tcp_services: std::collections::BTreeMap<String, Arc<tcp::TcpTarget>>,
    /// The UDP route of each UDP entry point, indexed by `EntryPointId`.
    pub udp: Vec<Option<Arc<tcp::UdpRoute>>>,
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
            tcp: vec![None; entry_points],
            tcp_services: std::collections::BTreeMap::new(),
            udp: vec![None; entry_points],
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
    /// Every exact host the TLS routes' `Host` matchers name: the server
    /// names HTTPS takes before any TCP router, as in Traefik.
    pub tls_names: std::collections::HashSet<String>,
    /// The wildcard hosts (`*.example.com`, `**.example.com`) of the same.
    pub tls_wildcards: Vec<String>,
    /// Some TLS route names no host (``PathPrefix(`/`)``): HTTPS takes the
    /// server names no one names before a TCP ``HostSNI(`*`)`` router.
    pub tls_any_name: bool,
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
        let mut tls_names = std::collections::HashSet::new();
        let mut tls_wildcards = Vec::new();
        let mut tls_any_name = false;
        for route in routes.iter().filter(|r| r.tls) {
            let domains = route.matcher.domains();
            tls_any_name |= domains.is_empty();
            for domain in domains {
                if !domain.starts_with('*') {
                    tls_names.insert(domain);
                } else if !tls_wildcards.contains(&domain) {
                    tls_wildcards.push(domain);
                }
            }
        }
        Self {
            routes,
            by_host,
            any_host,
            tls_names,
            tls_wildcards,
            tls_any_name,
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

    /// What the TLS routes claim of a connection whose ClientHello names
    /// `server_name`, before TCP routers are asked (Traefik's order).
    pub fn https_claim(&self, server_name: Option<&str>) -> HttpsClaim {
        // Server names reach here lowercased, as `domains` lists hosts.
        let named = server_name.is_some_and(|name| {
            self.tls_names.contains(name)
                || self
                    .tls_wildcards
                    .iter()
                    .any(|domain| crate::rule::domain_covers(domain, name))
        });
        if named {
            HttpsClaim::Named
        } else if self.tls_any_name {
            HttpsClaim::AnyName
        } else {
            HttpsClaim::Nothing
        }
    }

    /// Every route in priority order, for explanations.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Route>> {
        self.routes.iter()
    }
}

/// What the HTTPS routers of an entry point claim of a TLS connection, by
/// its server name, against TCP routers on the same entry point. Traefik's
/// code (not its documentation, which says TCP first) decides in this
/// order: an HTTPS router naming the server name; a TCP router whose rule
/// is more than ``HostSNI(`*`)``; an HTTPS router naming no host; a TCP
/// ``HostSNI(`*`)`` router; HTTPS (which answers 404).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpsClaim {
    /// An HTTPS router's `Host` names it: HTTPS, before any TCP router.
    Named,
    /// Only an HTTPS router without a `Host` could take it: HTTPS before a
    /// TCP ``HostSNI(`*`)`` router, after any other TCP router.
    AnyName,
    /// No HTTPS router could take it.
    Nothing,
}

/// A compiled router.
pub struct Route {
    /// Qualified router name (`app@file`).
    pub name: String,
    /// Effective priority (explicit, or the rule's length).
    pub priority: i64,
    /// The compiled rule.
    pub matcher: Matcher,
    /// The rule as written, for the `http.route` span attribute.
    pub rule: Arc<str>,
    /// Matches only TLS connections (the router has a `tls` section).
    pub tls: bool,
    /// The router's middlewares, in order (empty: none, and nothing to pay).
    pub chain: Chain,
    /// Where matching requests go. For a parent router (multi-layer
    /// routing), what answers when none of its children matches: 404.
    pub upstream: Arc<Upstream>,
    /// A parent router's children (multi-layer routing), matched against
    /// the request as the parent's middlewares left it; None for a router
    /// with a service.
    pub children: Option<Arc<EntryPointRoutes>>,
    /// Qualified name of the service, for metrics and the access log.
    pub service_name: String,
    /// The router's request counters, when per-router metrics are on.
    pub stats: Option<Arc<crate::metrics::Stats>>,
    /// The service's request counters, when per-service metrics are on.
    pub service_stats: Option<Arc<crate::metrics::Stats>>,
    /// The service's bound on requests in progress; None when unlimited.
    pub gate: Option<Arc<crate::overload::Gate>>,
    /// One of gangway's own routers (`…@internal`: the API, the dashboard,
    /// `/ping`, `/metrics`), left out of metrics and the access log unless
    /// `metrics.addInternals` / `accessLog.addInternals` say otherwise.
    pub internal: bool,
    /// Requests it takes are traced when tracing is on (the router's
    /// `observability.tracing`, default `true`).
    pub traced: bool,
    /// The router's `observability.accessLogs`, when given; otherwise the
    /// entry point's switch decides.
    pub access_logs: Option<bool>,
    /// The router's `observability.metrics`, when given; otherwise the
    /// entry point's switch decides.
    pub metrics: Option<bool>,
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

/// What answers a request that a parent router (multi-layer routing)
/// matched and none of its children did: 404, as Traefik's child muxer.
pub struct NoChildRoute;

impl InternalService for NoChildRoute {
    fn call(
        &self,
        _req: http::Request<()>,
    ) -> futures_util::future::BoxFuture<'static, http::Response<http_body_util::Full<bytes::Bytes>>>
    {
        Box::pin(async {
            let mut resp = http::Response::new(http_body_util::Full::new(
                bytes::Bytes::from_static(b"404 page not found\n"),
            ));
            *resp.status_mut() = http::StatusCode::NOT_FOUND;
            resp
        })
    }
}

/// How deep services may nest (weighted, mirroring and failover over each
/// other). Compile rejects cycles; this bound is a second guard.
const MAX_DEPTH: usize = 32;

/// A compiled service.
pub enum Upstream {
    /// Round robin with weights over servers.
    Servers(LoadBalancer),
    /// Weighted round robin over other services.
    Weighted(WeightedService),
    /// One service answers; copies of a share of requests go to others.
    Mirroring(MirroringService),
    /// One service, and another while the first has no healthy server.
    Failover(FailoverService),
    /// Answered by gangway itself.
    Internal(Arc<dyn InternalService>),
    /// A service with middlewares of its own, reached through another
    /// service: they run whenever it is chosen, then it sends on.
    Chained(ChainedService),
}

/// Where [`Upstream::descend`] stops.
pub enum Descent<'a> {
    /// The load balancer that picks the server.
    Servers(&'a LoadBalancer),
    /// A service that must take the request itself before anything below
    /// it: one with middlewares, or a failover on status that holds the
    /// body to send it again.
    Service(&'a Upstream),
}

/// A service's own middlewares, in front of it.
pub struct ChainedService {
    /// Qualified name of the service, for logs.
    pub name: String,
    /// Its middlewares, in order.
    pub chain: Chain,
    /// The service itself, compiled as a router would use it.
    pub service: Arc<Upstream>,
}

impl Upstream {
    /// Walks down weighted, mirroring and failover services to the load
    /// balancer that takes this request, or to the first service on the
    /// way (this one included) that must take it itself: one with its own
    /// middlewares, or, when `hold` allows it, a failover on status whose
    /// main service is up. Sticky choices are read from `headers`; cookies
    /// to set on the response are pushed to `cookies`; mirrors chosen for
    /// this request are pushed to `mirrors` (None: do not mirror, as for a
    /// request that is itself a mirror copy); `client` is the client's IP,
    /// for `highestRandomWeight`. None when no service on the way has
    /// anything to send to.
    pub fn descend<'a>(
        &'a self,
        headers: &HeaderMap,
        cookies: &mut Vec<HeaderValue>,
        mut mirrors: Option<&mut Vec<MirrorCopy>>,
        (client, hold): (Option<IpAddr>, bool),
    ) -> Option<Descent<'a>> {
        let mut current = self;
        for _ in 0..MAX_DEPTH {
            match current {
                Upstream::Servers(lb) => return Some(Descent::Servers(lb)),
                Upstream::Chained(_) => return Some(Descent::Service(current)),
                Upstream::Weighted(w) => {
                    let i = w.choose(headers, cookies, client)?;
                    current = w.children.get(i)?;
                }
                Upstream::Mirroring(m) => {
                    if let Some(list) = mirrors.as_deref_mut() {
                        for mirror in m.mirrors.iter().filter(|mirror| mirror.share.fire()) {
                            list.push(MirrorCopy {
                                upstream: mirror.upstream.clone(),
                                body_limit: m.body_limit,
                            });
                        }
                    }
                    current = &m.main;
                }
                Upstream::Failover(f) => {
                    let up = f.main.is_up();
                    if hold && up && f.on_status.is_some() {
                        return Some(Descent::Service(current));
                    }
                    current = if up { &f.main } else { &f.fallback };
                }
                // Answered by the caller before it descends; as a member of
                // another service it has no server to send to.
                Upstream::Internal(_) => return None,
            }
        }
        None
    }

    /// Walks down again for a request whose load balancers in `avoid`
    /// could connect to none of their servers (nothing reached them, so it
    /// is safe to send elsewhere): a weighted service passes by members that
    /// lead to one of them, a failover goes to its fallback. None when
    /// nothing else can take it, or when a service on the way must take the
    /// request itself (its own middlewares).
    pub fn descend_again<'a>(&'a self, avoid: &[&LoadBalancer]) -> Option<&'a LoadBalancer> {
        let avoided = |u: &Upstream| avoid.iter().any(|lb| u.reaches(lb, MAX_DEPTH));
        let mut current = self;
        for _ in 0..MAX_DEPTH {
            match current {
                Upstream::Servers(lb) => {
                    return (!avoid.iter().any(|a| std::ptr::eq(*a, lb))).then_some(lb);
                }
                Upstream::Weighted(w) => {
                    let excluded: Vec<usize> = (0..w.children.len())
                        .filter(|&i| avoided(&w.children[i]))
                        .collect();
                    let up = |i: usize| w.children.get(i).is_some_and(|c| c.is_up());
                    let i = w.rotation.next_excluding(up, &excluded)?;
                    current = w.children.get(i)?;
                }
                Upstream::Mirroring(m) => current = &m.main,
                Upstream::Failover(f) => {
                    current = if avoided(&f.main) {
                        &f.fallback
                    } else {
                        &f.main
                    };
                }
                Upstream::Internal(_) | Upstream::Chained(_) => return None,
            }
        }
        None
    }

    /// Whether requests to this service may end at `lb`.
    fn reaches(&self, lb: &LoadBalancer, depth: usize) -> bool {
        let Some(depth) = depth.checked_sub(1) else {
            return false;
        };
        match self {
            Upstream::Servers(own) => std::ptr::eq(own, lb),
            Upstream::Weighted(w) => w.children.iter().any(|c| c.reaches(lb, depth)),
            Upstream::Mirroring(m) => m.main.reaches(lb, depth),
            Upstream::Failover(f) => f.main.reaches(lb, depth) || f.fallback.reaches(lb, depth),
            Upstream::Internal(_) => false,
            Upstream::Chained(c) => c.service.reaches(lb, depth),
        }
    }

    /// Whether this service has a healthy server to send to.
    pub fn is_up(&self) -> bool {
        self.is_up_within(MAX_DEPTH)
    }

    fn is_up_within(&self, depth: usize) -> bool {
        let Some(depth) = depth.checked_sub(1) else {
            return false;
        };
        match self {
            Upstream::Servers(lb) => lb.any_up(),
            Upstream::Weighted(w) => w
                .rotation
                .any_up(|i| w.children.get(i).is_some_and(|c| c.is_up_within(depth))),
            Upstream::Mirroring(m) => m.main.is_up_within(depth),
            Upstream::Failover(f) => f.main.is_up_within(depth) || f.fallback.is_up_within(depth),
            Upstream::Internal(_) => true,
            Upstream::Chained(c) => c.service.is_up_within(depth),
        }
    }

    /// Whether this service can ever be down, so that a failover over it
    /// would use its fallback. A load balancer can: its servers go out by
    /// an active check, by passive health, or by the default quarantine of
    /// a refused connection (and one without servers is always down). Only
    /// gangway's own services never are.
    pub fn can_be_down(&self) -> bool {
        self.can_be_down_within(MAX_DEPTH)
    }

    fn can_be_down_within(&self, depth: usize) -> bool {
        let Some(depth) = depth.checked_sub(1) else {
            return true;
        };
        match self {
            Upstream::Servers(_) => true,
            Upstream::Weighted(w) => w.children.iter().all(|c| c.can_be_down_within(depth)),
            Upstream::Mirroring(m) => m.main.can_be_down_within(depth),
            Upstream::Failover(f) => {
                f.main.can_be_down_within(depth) && f.fallback.can_be_down_within(depth)
            }
            Upstream::Internal(_) => false,
            Upstream::Chained(c) => c.service.can_be_down_within(depth),
        }
    }
}

/// A load balancer over servers.
pub struct LoadBalancer {
    /// Qualified service name, for logs.
    pub name: String,
    /// The servers, in configuration order.
    pub servers: Vec<Server>,
    /// Smooth weighted round robin over `servers`.
    pub rotation: Rotation,
    /// How a server is picked.
    pub strategy: Strategy,
    /// Sticky sessions, when configured.
    pub sticky: Option<StickyCookie>,
    /// Active health-check state, when configured.
    pub health: Option<Arc<ServiceHealth>>,
    /// Per server (same order as `servers`): passive health and load,
    /// kept across swaps.
    pub states: Box<[Arc<ServerState>]>,
    /// When a server is taken out of the rotation by its failures.
    pub passive: PassivePolicy,
    /// Whether `passiveHealthCheck` was configured (rather than the default
    /// quarantine of refused connections).
    pub passive_configured: bool,
    /// Per server: the hash of its URL, for `hrw`.
    pub hashes: Box<[u64]>,
    /// The process-wide health epoch, moved when a server goes out or
    /// comes back.
    pub epoch: Arc<AtomicU64>,
}

impl LoadBalancer {
    /// Whether server `i` may take traffic: its health check (if any) says
    /// so and its failures have not taken it out.
    pub fn is_up(&self, i: usize) -> bool {
        self.is_up_at(i, now_ms())
    }

    fn is_up_at(&self, i: usize, now: u64) -> bool {
        self.health.as_ref().is_none_or(|h| h.is_up(i))
            && !self.states.get(i).is_some_and(|s| s.is_out(now))
    }

    /// Whether server `i` is out of the rotation by its own failures
    /// (passive health) now.
    pub fn is_out(&self, i: usize) -> bool {
        self.states.get(i).is_some_and(|s| s.is_out(now_ms()))
    }

    /// Whether any server with a weight above zero is up.
    pub fn any_up(&self) -> bool {
        let now = now_ms();
        !self.rotation.is_empty()
            && (0..self.servers.len()).any(|i| self.rotation.weight(i) > 0 && self.is_up_at(i, now))
    }

    /// The server for a request: the one its sticky cookie names while that
    /// one is up, otherwise the strategy's choice (with a cookie to set).
    /// When every server is out by its failures, the one that failed least
    /// recently is tried rather than none.
    pub fn choose(
        &self,
        headers: &HeaderMap,
        cookies: &mut Vec<HeaderValue>,
        client: Option<IpAddr>,
    ) -> Option<usize> {
        let now = now_ms();
        let up = |i: usize| self.is_up_at(i, now);
        if let Some(i) = self
            .sticky
            .as_ref()
            .and_then(|s| s.lookup(headers))
            .filter(|&i| up(i))
        {
            return Some(i);
        }
        let picked = match self.strategy {
            Strategy::Wrr => self.rotation.next(up),
            Strategy::P2c => {
                strategy::power_of_two(&self.candidates(now), |i| self.states[i].in_flight())
            }
            Strategy::LeastTime => {
                let best = strategy::least_time(&self.candidates(now), |i| {
                    let s = &self.states[i];
                    (s.ttfb_micros(), s.in_flight(), self.rotation.weight(i))
                });
                match best.as_slice() {
                    [] => None,
                    [only] => Some(*only),
                    // Ties go to the rotation: at most one cycle of it.
                    tied => (0..self.rotation.cycle_len())
                        .find_map(|_| self.rotation.next(up).filter(|i| tied.contains(i)))
                        .or(tied.first().copied()),
                }
            }
            Strategy::Hrw => match client {
                Some(ip) => strategy::highest_random_weight(ip, &self.candidates(now), |i| {
                    (self.hashes[i], self.rotation.weight(i))
                }),
                None => self.rotation.next(up),
            },
        };
        let i = picked.or_else(|| self.least_recently_failed())?;
        if let Some(c) = self.sticky.as_ref().and_then(|s| s.set_cookie(i)) {
            cookies.push(c.clone());
        }
        Some(i)
    }

    /// Servers that may take traffic now (up, weight above zero).
    fn candidates(&self, now: u64) -> Vec<usize> {
        (0..self.servers.len())
            .filter(|&i| self.rotation.weight(i) > 0 && self.is_up_at(i, now))
            .collect()
    }

    /// Of the servers whose health check (if any) says up, the one whose
    /// last failure is oldest: the best chance when all are out by their
    /// failures.
    fn least_recently_failed(&self) -> Option<usize> {
        (0..self.servers.len())
            .filter(|&i| {
                self.rotation.weight(i) > 0 && self.health.as_ref().is_none_or(|h| h.is_up(i))
            })
            .min_by_key(|&i| self.states.get(i).map_or(0, |s| s.last_failure()))
    }

    /// The next server in rotation that is up and not in `excluded`.
    pub fn next_excluding(&self, excluded: &[usize]) -> Option<usize> {
        let now = now_ms();
        self.rotation
            .next_excluding(|i| self.is_up_at(i, now), excluded)
    }

    /// How a request to server `i` ended: noted in its record (what every
    /// surface reads), and counted for passive health. Without
    /// `passiveHealthCheck` only a connection that could not be made takes
    /// a server out.
    pub fn record(&self, i: usize, outcome: Outcome) {
        let Some(state) = self.states.get(i) else {
            return;
        };
        let now = now_ms();
        state.record().note(outcome, now);
        let failed = match outcome {
            Outcome::Answered(status) => self.passive.count_status && status >= 500,
            Outcome::Refused => true,
            Outcome::Broken | Outcome::TimedOut => self.passive.count_status,
        };
        if !failed {
            if state.succeeded() {
                self.epoch.fetch_add(1, Ordering::Release);
            }
            return;
        }
        if let Some(until) = state.failed(&self.passive, now) {
            tracing::debug!(service = %self.name, server = %self.servers[i].url, "server out of the rotation after its failures");
            // After the state: a balancer that sees the new epoch sees it out.
            self.epoch.fetch_add(1, Ordering::Release);
            crate::balance::passive::wake_at(until, self.epoch.clone());
        }
    }

    /// What server `i`'s own outcomes say of it now.
    pub fn tally(&self, i: usize) -> crate::balance::Tally {
        self.states
            .get(i)
            .map(|s| s.record().tally(now_ms()))
            .unwrap_or_default()
    }
}

/// Weighted round robin over services, or highest random weight on the
/// client's IP (the `highestRandomWeight` service).
pub struct WeightedService {
    /// The child services, in configuration order.
    pub children: Vec<Arc<Upstream>>,
    /// Smooth weighted round robin over `children`; a child with no healthy
    /// server is skipped.
    pub rotation: Rotation,
    /// Sticky sessions, when configured.
    pub sticky: Option<StickyCookie>,
    /// For `highestRandomWeight`: the hash of each child's name; the child
    /// is then chosen by the client's IP, not by the rotation.
    pub by_client: Option<Box<[u64]>>,
}

impl WeightedService {
    /// The child for a request, as [`LoadBalancer::choose`] does for servers.
    pub fn choose(
        &self,
        headers: &HeaderMap,
        cookies: &mut Vec<HeaderValue>,
        client: Option<IpAddr>,
    ) -> Option<usize> {
        let up = |i: usize| self.children.get(i).is_some_and(|c| c.is_up());
        if let (Some(hashes), Some(ip)) = (&self.by_client, client) {
            let candidates: Vec<usize> = (0..self.children.len())
                .filter(|&i| self.rotation.weight(i) > 0 && up(i))
                .collect();
            return strategy::highest_random_weight(ip, &candidates, |i| {
                (hashes[i], self.rotation.weight(i))
            });
        }
        choose(&self.rotation, self.sticky.as_ref(), up, headers, cookies)
    }
}

fn choose(
    rotation: &Rotation,
    sticky: Option<&StickyCookie>,
    up: impl Fn(usize) -> bool,
    headers: &HeaderMap,
    cookies: &mut Vec<HeaderValue>,
) -> Option<usize> {
    let Some(sticky) = sticky else {
        return rotation.next(up);
    };
    if let Some(i) = sticky.lookup(headers).filter(|&i| up(i)) {
        return Some(i);
    }
    // No cookie, an unknown one, or one naming a member that is down:
    // balance as usual and point the cookie at the new choice.
    let i = rotation.next(up)?;
    if let Some(c) = sticky.set_cookie(i) {
        cookies.push(c.clone());
    }
    Some(i)
}

/// A mirroring service.
pub struct MirroringService {
    /// The service whose answer the client gets.
    pub main: Arc<Upstream>,
    /// Where copies go, and how often.
    pub mirrors: Vec<Mirror>,
    /// Largest body copied to mirrors; None: mirrors get no body.
    pub body_limit: Option<usize>,
}

/// One mirror of a mirroring service.
pub struct Mirror {
    /// The service that gets the copies.
    pub upstream: Arc<Upstream>,
    /// Which requests are copied.
    pub share: MirrorShare,
}

/// A mirror chosen for one request.
pub struct MirrorCopy {
    /// The service that gets the copy.
    pub upstream: Arc<Upstream>,
    /// Largest body it may get; None: it gets no body.
    pub body_limit: Option<usize>,
}

/// A failover service.
pub struct FailoverService {
    /// Used while it has a healthy server.
    pub main: Arc<Upstream>,
    /// Used otherwise.
    pub fallback: Arc<Upstream>,
    /// Also fail over on these answers of the main service.
    pub on_status: Option<OnStatus>,
}

/// `failover.errors`: the statuses that send a request to the fallback,
/// and the largest body held to send it again.
pub struct OnStatus {
    /// Inclusive ranges of statuses.
    pub ranges: Vec<(u16, u16)>,
    /// Largest request body held in memory; a bigger one gets 413.
    pub max_body: usize,
}

impl OnStatus {
    /// Whether `status` fails over.
    pub fn matches(&self, status: u16) -> bool {
        self.ranges
            .iter()
            .any(|&(lo, hi)| (lo..=hi).contains(&status))
    }

    /// Parses Traefik's status list: codes and `lo-hi` ranges.
    pub fn parse_ranges(list: &[String]) -> Result<Vec<(u16, u16)>, String> {
        list.iter()
            .map(|entry| {
                let code = |s: &str| {
                    s.trim()
                        .parse::<u16>()
                        .ok()
                        .filter(|c| (100..=599).contains(c))
                };
                let range = match entry.split_once('-') {
                    Some((lo, hi)) => code(lo).zip(code(hi)).filter(|(lo, hi)| lo <= hi),
                    None => code(entry).map(|c| (c, c)),
                };
                range.ok_or_else(|| entry.clone())
            })
            .collect()
    }
}

/// One compiled server of a load balancer.
pub struct Server {
    /// The URL as configured, for logs and the API.
    pub url: String,
    /// Protocol towards the server.
    pub kind: ServerKind,
    /// `host:port` to connect to.
    pub authority: Authority,
    /// Path prefix from the URL (empty, or starting with `/` and without a trailing `/`).
    pub path_prefix: String,
    /// Send the client's Host header (passHostHeader), or this server's.
    pub pass_host_header: bool,
    /// The server's own `host:port`, as a header value, for passHostHeader=false.
    pub host_header: HeaderValue,
    /// The client pool for this server's transport.
    pub client: Arc<crate::client::UpstreamClient>,
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

    /// Per service and server URL, whether the server is up, for the
    /// services whose servers' state is checked (an active health check or
    /// passive health), from the runtime the proxy routes with now.
    pub fn checked_servers(&self) -> std::collections::BTreeMap<(String, String), bool> {
        let runtime = self.load_full();
        let mut servers = std::collections::BTreeMap::new();
        for route in runtime.entry_points.iter().flat_map(|ep| ep.iter()) {
            if !route.internal {
                servers_of(&route.upstream, &mut servers, MAX_DEPTH);
            }
        }
        servers
            .into_iter()
            .map(|((service, url), up)| ((service.to_owned(), url.to_owned()), up))
            .collect()
    }
}

/// Collects the servers of the load balancers under `u` with an active or
/// passive health check, keyed by service and URL.
fn servers_of<'a>(
    u: &'a Upstream,
    out: &mut std::collections::BTreeMap<(&'a str, &'a str), bool>,
    depth: usize,
) {
    let Some(depth) = depth.checked_sub(1) else {
        return;
    };
    match u {
        Upstream::Servers(lb) => {
            // As Traefik: services whose servers' state is checked, by an
            // active health check or by passive health.
            if lb.health.is_some() || lb.passive_configured {
                for (i, server) in lb.servers.iter().enumerate() {
                    out.insert((lb.name.as_str(), server.url.as_str()), lb.is_up(i));
                }
            }
        }
        Upstream::Weighted(w) => {
            for c in &w.children {
                servers_of(c, out, depth);
            }
        }
        Upstream::Mirroring(m) => {
            servers_of(&m.main, out, depth);
            for mirror in &m.mirrors {
                servers_of(&mirror.upstream, out, depth);
            }
        }
        Upstream::Failover(f) => {
            servers_of(&f.main, out, depth);
            servers_of(&f.fallback, out, depth);
        }
        Upstream::Internal(_) => {}
        Upstream::Chained(c) => servers_of(&c.service, out, depth),
    }
}
