//! The compiled TCP routes of one entry point, UDP routes, and the
//! targets they forward to.

use crate::metrics::StreamStats;
use crate::middleware::in_flight_req;
use crate::middleware::tcp::{Admitted, TcpGuard};
use crate::rule::{ConnFacts, TcpMatcher};
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// The TCP routers of one entry point, each list highest priority first
/// (ties by name, so every run picks the same router).
#[derive(Default)]
pub struct TcpRoutes {
    /// Routers without `tls`: they see plain connections only, before any
    /// HTTP router does.
    pub plain: Vec<Arc<TcpRoute>>,
    /// Routers with `tls`: they see TLS connections, by their ClientHello.
    pub tls: Vec<Arc<TcpRoute>>,
}

impl TcpRoutes {
    /// Builds the lists from routes in any order.
    pub fn new(routes: Vec<Arc<TcpRoute>>) -> Self {
        let (mut tls, mut plain): (Vec<_>, Vec<_>) = routes
            .into_iter()
            .partition(|r| !matches!(r.tls, TcpTls::Plain));
        for list in [&mut tls, &mut plain] {
            list.sort_by(|a, b| {
                b.priority
                    .cmp(&a.priority)
                    .then_with(|| a.name.cmp(&b.name))
            });
        }
        Self { plain, tls }
    }

    /// The first plain route that takes a connection from `client`.
    pub fn find_plain(&self, conn: &ConnFacts<'_>) -> Option<&Arc<TcpRoute>> {
        self.plain.iter().find(|r| r.matcher.matches(conn))
    }

    /// The first TLS route that takes a connection with this ClientHello.
    pub fn find_tls(&self, conn: &ConnFacts<'_>) -> Option<&Arc<TcpRoute>> {
        self.tls.iter().find(|r| r.matcher.matches(conn))
    }
}

/// A compiled TCP router.
pub struct TcpRoute {
    /// Qualified router name (`db@file`).
    pub name: String,
    /// Effective priority (explicit, or the rule's length).
    pub priority: i64,
    /// The compiled rule.
    pub matcher: TcpMatcher,
    /// What happens to TLS.
    pub tls: TcpTls,
    /// Qualified service name.
    pub service_name: String,
    /// Where connections go.
    pub target: Arc<TcpTarget>,
    /// Its middlewares, in order.
    pub middlewares: Vec<Arc<TcpGuard>>,
    /// Its counters, when routers are measured.
    pub stats: Option<StreamStats>,
}

impl TcpRoute {
    /// Runs the middlewares for a connection from `client`: `Ok` with what
    /// must be held while the connection lasts, `Err` with the middleware
    /// that refused it.
    pub(crate) fn admit(&self, client: IpAddr) -> Result<Vec<in_flight_req::Slot>, &str> {
        let mut held = Vec::new();
        for guard in &self.middlewares {
            match guard.admit(client) {
                Some(Admitted::Free) => {}
                Some(Admitted::Holding(slot)) => held.push(slot),
                None => return Err(&guard.name),
            }
        }
        Ok(held)
    }
}

/// A compiled UDP router: where its entry point's datagrams go.
pub struct UdpRoute {
    /// Qualified router name.
    pub name: String,
    /// Qualified service name.
    pub service_name: String,
    /// The servers, as for TCP (weighted, in turn).
    pub target: Arc<TcpTarget>,
    /// Its counters, when routers are measured.
    pub stats: Option<StreamStats>,
}

/// What a TCP router does with TLS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpTls {
    /// No TLS: the router takes plain connections.
    Plain,
    /// The TLS stream is forwarded as it is.
    Passthrough,
    /// gangway terminates TLS and forwards the plain bytes.
    Terminate,
}

/// Where a TCP service sends connections.
pub enum TcpTarget {
    /// Servers in turn; one that cannot be reached is skipped for the next.
    Servers {
        /// The servers, in configuration order.
        servers: Vec<TcpServerTarget>,
        /// How they are connected to.
        transport: Arc<TcpTransport>,
        /// The rotation's position.
        next: AtomicUsize,
        /// The active health check of the servers, when configured: held
        /// so its task runs while a runtime uses this load balancer.
        checker: Option<Arc<crate::health::tcp::TcpChecker>>,
    },
    /// Other services by weight.
    Weighted {
        /// Each child once per unit of its weight.
        slots: Vec<Arc<TcpTarget>>,
        /// The rotation's position.
        next: AtomicUsize,
    },
}

/// One server of a TCP load balancer.
pub struct TcpServerTarget {
    /// `host:port`.
    pub address: String,
    /// TLS towards it (`servers[].tls`): the client configuration and the
    /// name sent as SNI and verified.
    pub tls: Option<ServerTls>,
    /// Whether it answered lately; shared by every connection, kept across
    /// configuration swaps while the service keeps the server.
    pub health: Arc<ServerHealth>,
}

/// TLS towards one server.
#[derive(Clone)]
pub struct ServerTls {
    /// The client configuration (roots, client certificates, verification).
    pub config: Arc<rustls::ClientConfig>,
    /// SNI and the name verified in the server's certificate.
    pub name: rustls::pki_types::ServerName<'static>,
}

/// How a load balancer's servers are connected to (`serversTransport`, or
/// the static `tcpServersTransport`, with the load balancer's own
/// deprecated options).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TcpTransport {
    /// Time allowed to connect; `None`: no limit.
    pub dial_timeout: Option<Duration>,
    /// TCP keep-alive interval on server connections; `None`: off.
    pub keep_alive: Option<Duration>,
    /// How long one direction may go on once the other side closed its
    /// writing half; `None`: no limit.
    pub termination_delay: Option<Duration>,
    /// The PROXY protocol version sent first to the servers, if any.
    pub proxy_protocol: Option<u8>,
}

pub use crate::balance::passive::ServerHealth;

/// Traefik's keep-alive setting in effect: zero means the default (15 s),
/// negative means none.
pub fn keep_alive(setting: crate::config::SignedDuration) -> Option<Duration> {
    match setting.non_negative() {
        None => None,
        Some(d) if d.is_zero() => Some(DEFAULT_KEEP_ALIVE),
        Some(d) => Some(d),
    }
}

/// The keep-alive interval when the setting is zero, as in Traefik.
pub const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The transport of a load balancer with no servers.
static NO_TRANSPORT: TcpTransport = TcpTransport {
    dial_timeout: None,
    keep_alive: None,
    termination_delay: None,
    proxy_protocol: None,
};

/// The servers one connection may go to, in the order to try them.
pub struct Picked<'a> {
    /// The servers: the next in turn of those not skipped first, then the
    /// other ones not skipped, then the skipped ones (so a connection is
    /// tried even when every server failed lately). Servers failing their
    /// active health check are left out, as Traefik leaves them out.
    pub servers: Vec<&'a TcpServerTarget>,
    /// How to connect to them.
    pub transport: &'a TcpTransport,
}

impl Default for Picked<'_> {
    fn default() -> Self {
        Picked {
            servers: Vec::new(),
            transport: &NO_TRANSPORT,
        }
    }
}

impl<'a> Picked<'a> {
    /// `host:port` of each server, in order.
    pub fn addresses(&self) -> Vec<&'a str> {
        self.servers.iter().map(|s| s.address.as_str()).collect()
    }
}

impl TcpTarget {
    /// The servers to try for a new connection, in order: the next one
    /// in turn first, then the others of the same load balancer; servers
    /// skipped for their failures last; none failing its health check.
    pub fn pick(&self) -> Picked<'_> {
        match self {
            TcpTarget::Servers {
                servers,
                transport,
                next,
                ..
            } => {
                if servers.is_empty() {
                    return Picked::default();
                }
                let start = next.fetch_add(1, Ordering::Relaxed) % servers.len();
                let in_turn = (0..servers.len())
                    .map(|i| &servers[(start + i) % servers.len()])
                    .filter(|s| !s.health.fails_check());
                let (mut order, skipped): (Vec<_>, Vec<_>) =
                    in_turn.partition(|s| !s.health.is_skipped());
                order.extend(skipped);
                Picked {
                    servers: order,
                    transport,
                }
            }
            TcpTarget::Weighted { slots, next } => {
                if slots.is_empty() {
                    return Picked::default();
                }
                let start = next.fetch_add(1, Ordering::Relaxed) % slots.len();
                // A child with no server up is passed over for the next in
                // turn: its health propagates, as `healthCheck` asks.
                let mut fallback = None;
                for k in 0..slots.len() {
                    let picked = slots[(start + k) % slots.len()].pick();
                    if !picked.servers.is_empty() {
                        return picked;
                    }
                    fallback.get_or_insert(picked);
                }
                fallback.unwrap_or_default()
            }
        }
    }

    /// The health of each server of a load balancer, by address; empty
    /// for weighted services.
    pub fn server_health(&self) -> Vec<(&str, &ServerHealth)> {
        match self {
            TcpTarget::Servers { servers, .. } => servers
                .iter()
                .map(|s| (s.address.as_str(), &*s.health))
                .collect(),
            TcpTarget::Weighted { .. } => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn servers(list: &[&str]) -> Arc<TcpTarget> {
        Arc::new(TcpTarget::Servers {
            servers: list
                .iter()
                .map(|s| TcpServerTarget {
                    address: (*s).to_owned(),
                    tls: None,
                    health: Arc::default(),
                })
                .collect(),
            transport: Arc::default(),
            next: AtomicUsize::new(0),
            checker: None,
        })
    }

    #[test]
    fn servers_take_turns_and_the_others_follow_as_fallbacks() {
        let target = servers(&["a:1", "b:1", "c:1"]);
        assert_eq!(target.pick().addresses(), ["a:1", "b:1", "c:1"]);
        assert_eq!(target.pick().addresses(), ["b:1", "c:1", "a:1"]);
        assert_eq!(target.pick().addresses(), ["c:1", "a:1", "b:1"]);
        assert_eq!(target.pick().addresses(), ["a:1", "b:1", "c:1"]);
    }

    #[test]
    fn weighted_services_share_by_weight() {
        let a = servers(&["a:1"]);
        let b = servers(&["b:1"]);
        let target = TcpTarget::Weighted {
            slots: vec![a.clone(), a, b],
            next: AtomicUsize::new(0),
        };
        let picks: Vec<Vec<&str>> = (0..6).map(|_| target.pick().addresses()).collect();
        let to_a = picks.iter().filter(|p| p[0] == "a:1").count();
        assert_eq!(to_a, 4, "{picks:?}");
    }

    #[test]
    fn a_weighted_child_with_no_server_up_is_passed_over() {
        let a = servers(&["a:1"]);
        let b = servers(&["b:1"]);
        let target = TcpTarget::Weighted {
            slots: vec![a.clone(), b],
            next: AtomicUsize::new(0),
        };
        let TcpTarget::Servers { servers: list, .. } = &*a else {
            unreachable!("built as servers")
        };
        list[0].health.set_checked(false);
        for _ in 0..4 {
            assert_eq!(target.pick().addresses(), ["b:1"]);
        }
        list[0].health.set_checked(true);
        let picks: Vec<Vec<&str>> = (0..4).map(|_| target.pick().addresses()).collect();
        assert!(picks.iter().any(|p| p == &["a:1"]), "{picks:?}");
    }

    #[test]
    fn an_empty_load_balancer_offers_no_server() {
        assert!(servers(&[]).pick().servers.is_empty());
    }

    #[test]
    fn a_server_that_failed_is_tried_last_until_it_answers_again() {
        let target = servers(&["a:1", "b:1", "c:1"]);
        let TcpTarget::Servers { servers: list, .. } = &*target else {
            unreachable!("built as servers")
        };
        list[1].health.failed();
        assert!(list[1].health.is_down());
        assert_eq!(target.pick().addresses(), ["a:1", "c:1", "b:1"]);
        assert_eq!(target.pick().addresses(), ["c:1", "a:1", "b:1"]);
        // Every server failing: all are still offered, in turn.
        list[0].health.failed();
        list[2].health.failed();
        assert_eq!(target.pick().addresses(), ["c:1", "a:1", "b:1"]);
        list[1].health.answered();
        assert!(!list[1].health.is_down());
        assert_eq!(target.pick().addresses()[0], "b:1");
    }

    #[test]
    fn a_server_failing_its_health_check_is_left_out_until_it_passes() {
        let target = servers(&["a:1", "b:1"]);
        let TcpTarget::Servers { servers: list, .. } = &*target else {
            unreachable!("built as servers")
        };
        assert!(list[0].health.set_checked(false));
        assert!(
            !list[0].health.set_checked(false),
            "no change the second time"
        );
        assert!(list[0].health.is_down());
        assert_eq!(target.pick().addresses(), ["b:1"]);
        assert_eq!(target.pick().addresses(), ["b:1"]);
        list[1].health.set_checked(false);
        assert!(target.pick().servers.is_empty());
        assert!(list[0].health.set_checked(true));
        assert!(!list[0].health.is_down());
        assert_eq!(target.pick().addresses(), ["a:1"]);
    }
}
