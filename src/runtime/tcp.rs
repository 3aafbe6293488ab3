//! The compiled TCP routes of one entry point, UDP routes, and the
//! targets they forward to.

use crate::metrics::StreamStats;
use crate::middleware::in_flight_req;
use crate::middleware::ip::AddressList;
use crate::middleware::source::SourceKey;
use crate::rule::{ConnFacts, TcpMatcher};
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

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
            match &guard.kind {
                TcpGuardKind::AllowList(allowed) if allowed.contains(client) => {}
                TcpGuardKind::InFlight { amount, state } => {
                    let key = SourceKey::Ip(client.to_canonical());
                    match state.acquire(key, *amount) {
                        Some(slot) => held.push(slot),
                        None => return Err(&guard.name),
                    }
                }
                TcpGuardKind::AllowList(_) => return Err(&guard.name),
            }
        }
        Ok(held)
    }
}

/// A compiled TCP middleware.
pub struct TcpGuard {
    /// Its qualified name, for logs.
    pub name: String,
    /// What it checks.
    pub kind: TcpGuardKind,
}

/// What a TCP middleware checks.
pub enum TcpGuardKind {
    /// `ipAllowList`: the client's address.
    AllowList(AddressList),
    /// `inFlightConn`: open connections per client address, counted in
    /// state that outlives configuration swaps.
    InFlight {
        /// The most at once.
        amount: i64,
        /// The counts.
        state: Arc<in_flight_req::State>,
    },
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
        /// `host:port` of each server.
        addresses: Vec<String>,
        /// The PROXY protocol version sent first to the servers, if any.
        proxy_protocol: Option<u8>,
        /// The rotation's position.
        next: AtomicUsize,
    },
    /// Other services by weight.
    Weighted {
        /// Each child once per unit of its weight.
        slots: Vec<Arc<TcpTarget>>,
        /// The rotation's position.
        next: AtomicUsize,
    },
}

/// The servers one connection may go to, in the order to try them.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Picked<'a> {
    /// `host:port` of each.
    pub addresses: Vec<&'a str>,
    /// The PROXY protocol version their load balancer sends, if any.
    pub proxy_protocol: Option<u8>,
}

impl TcpTarget {
    /// The servers to try for a new connection, in order: the next one
    /// in turn first, then the others of the same load balancer.
    pub fn pick(&self) -> Picked<'_> {
        match self {
            TcpTarget::Servers {
                addresses,
                proxy_protocol,
                next,
            } => {
                if addresses.is_empty() {
                    return Picked::default();
                }
                let start = next.fetch_add(1, Ordering::Relaxed) % addresses.len();
                Picked {
                    addresses: (0..addresses.len())
                        .map(|i| addresses[(start + i) % addresses.len()].as_str())
                        .collect(),
                    proxy_protocol: *proxy_protocol,
                }
            }
            TcpTarget::Weighted { slots, next } => {
                if slots.is_empty() {
                    return Picked::default();
                }
                let i = next.fetch_add(1, Ordering::Relaxed) % slots.len();
                slots[i].pick()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn servers(list: &[&str]) -> Arc<TcpTarget> {
        Arc::new(TcpTarget::Servers {
            addresses: list.iter().map(|s| (*s).to_owned()).collect(),
            proxy_protocol: None,
            next: AtomicUsize::new(0),
        })
    }

    #[test]
    fn servers_take_turns_and_the_others_follow_as_fallbacks() {
        let target = servers(&["a:1", "b:1", "c:1"]);
        assert_eq!(target.pick().addresses, ["a:1", "b:1", "c:1"]);
        assert_eq!(target.pick().addresses, ["b:1", "c:1", "a:1"]);
        assert_eq!(target.pick().addresses, ["c:1", "a:1", "b:1"]);
        assert_eq!(target.pick().addresses, ["a:1", "b:1", "c:1"]);
    }

    #[test]
    fn weighted_services_share_by_weight() {
        let a = servers(&["a:1"]);
        let b = servers(&["b:1"]);
        let target = TcpTarget::Weighted {
            slots: vec![a.clone(), a, b],
            next: AtomicUsize::new(0),
        };
        let picks: Vec<Vec<&str>> = (0..6).map(|_| target.pick().addresses).collect();
        let to_a = picks.iter().filter(|p| p[0] == "a:1").count();
        assert_eq!(to_a, 4, "{picks:?}");
    }

    #[test]
    fn an_empty_load_balancer_offers_no_server() {
        assert!(servers(&[]).pick().addresses.is_empty());
    }
}
