//! Whether a service serves now, and how much of its traffic fails: one
//! answer, worked out from the compiled services the proxy sends to, for
//! HTTP and TCP alike. The service and router views, the overview and
//! explain all read it, so nothing shows green while requests fail.
//!
//! The walk asks the balancers the same questions the proxy asks when it
//! picks (`is_up`: whom it sends to) and then which of those cannot answer
//! (an active health check or failed connections say the server is down):
//! a member the proxy picks but that cannot serve takes its share of the
//! traffic down with it.

use crate::runtime::tcp::TcpTarget;
use crate::runtime::{LoadBalancer, Status, Upstream};

/// How deep services may nest when walked here (compile refuses deeper).
const MAX_DEPTH: usize = 16;

/// From this share of failing traffic up, an object is an error rather
/// than a warning: most of what it is asked for fails.
const ERROR_SHARE: f64 = 0.5;

/// Why requests to a service fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Cause {
    /// The proxy has no server to send to (every one is down by its health
    /// check, or none is configured): gangway answers 503.
    NoServer,
    /// The proxy sends to servers that do not accept connections: 502.
    Unreachable,
}

impl Cause {
    /// The status gangway answers a failing request with.
    pub const fn status(self) -> u16 {
        match self {
            Cause::NoServer => 503,
            Cause::Unreachable => 502,
        }
    }

    /// Why, in words.
    pub const fn words(self) -> &'static str {
        match self {
            Cause::NoServer => "no server is available to send it to",
            Cause::Unreachable => "the servers it is sent to refuse connections",
        }
    }
}

/// How a service serves now.
#[derive(Clone, Debug, PartialEq)]
pub struct Serving {
    /// The share of requests (or connections) that fail now, 0 to 1.
    pub failing: f64,
    /// Why the failing ones fail (the worst cause below, when several).
    pub cause: Option<Cause>,
    /// Some server or member cannot serve, though others take its traffic
    /// (or a failover service runs on its fallback).
    pub degraded: bool,
    /// The members (in configuration order) that cannot serve: those the
    /// proxy skips and those that fail what they get. Empty for load
    /// balancers.
    pub members_down: Vec<usize>,
    /// For a failover service: whether requests go to the fallback.
    pub on_fallback: bool,
}

impl Serving {
    /// Everything answered.
    fn ok() -> Self {
        Serving {
            failing: 0.0,
            cause: None,
            degraded: false,
            members_down: Vec::new(),
            on_fallback: false,
        }
    }

    /// Nothing answered, for `cause`.
    fn fails(cause: Cause) -> Self {
        Serving {
            failing: 1.0,
            cause: Some(cause),
            ..Self::ok()
        }
    }

    /// The status this gives the object: an error when half or more of
    /// its traffic fails, a warning when some does or when part of it
    /// cannot serve, otherwise enabled.
    pub fn status(&self) -> Status {
        if self.failing >= ERROR_SHARE {
            Status::Disabled
        } else if self.failing > 0.0 || self.degraded {
            Status::Warning
        } else {
            Status::Enabled
        }
    }

    /// The failing share in whole percent, rounded up so that a little
    /// failing never reads as 0 %.
    pub fn percent(&self) -> u32 {
        // Within 0..=100 by construction; the cast cannot truncate.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let p = (self.failing.clamp(0.0, 1.0) * 100.0).ceil() as u32;
        p
    }
}

/// Whether server `i` of `lb` cannot serve now: out of the rotation (its
/// active health check, or its failures under passive health), or, without
/// an active check, still in the rotation while its last connection
/// attempts failed. A check probes on its own timer, so it decides alone:
/// the failure count of a checked server, to which nothing is sent while
/// it is down, would stay behind after the check saw it come back.
pub fn server_down(lb: &LoadBalancer, i: usize) -> bool {
    !lb.is_up(i)
        || (lb.health.is_none()
            && lb
                .servers
                .get(i)
                .is_some_and(|s| s.client.passive.failures() > 0))
}

/// How an HTTP service serves now.
pub fn http(u: &Upstream) -> Serving {
    http_within(u, MAX_DEPTH)
}

fn http_within(u: &Upstream, depth: usize) -> Serving {
    let Some(depth) = depth.checked_sub(1) else {
        return Serving::ok();
    };
    match u {
        Upstream::Servers(lb) => servers(lb),
        Upstream::Weighted(w) => {
            let mut weight_all = 0.0;
            let mut weight_failing = 0.0;
            let mut out = Serving::ok();
            for (i, child) in w.children.iter().enumerate() {
                let weight = f64::from(w.rotation.weight(i));
                if weight == 0.0 {
                    continue;
                }
                // The proxy's own question when it picks a member.
                if !child.is_up() {
                    out.degraded = true;
                    out.members_down.push(i);
                    continue;
                }
                let s = http_within(child, depth);
                weight_all += weight;
                weight_failing += weight * s.failing;
                out.degraded |= s.degraded;
                if s.failing > 0.0 {
                    out.members_down.push(i);
                    out.cause = out.cause.max(s.cause);
                }
            }
            if weight_all == 0.0 {
                out.failing = 1.0;
                out.cause = Some(Cause::NoServer);
            } else {
                out.failing = weight_failing / weight_all;
            }
            out
        }
        Upstream::Mirroring(m) => {
            // Copies are fire and forget: the client gets the main answer.
            let mut s = http_within(&m.main, depth);
            s.members_down.clear();
            s
        }
        Upstream::Failover(f) => {
            if f.main.is_up() {
                let mut s = http_within(&f.main, depth);
                if s.failing > 0.0 {
                    s.members_down = vec![0];
                } else {
                    s.members_down.clear();
                }
                s
            } else {
                let mut s = http_within(&f.fallback, depth);
                s.degraded = true;
                s.on_fallback = true;
                s.members_down = if s.failing > 0.0 { vec![0, 1] } else { vec![0] };
                s
            }
        }
        Upstream::Internal(_) => Serving::ok(),
        Upstream::Chained(c) => http_within(&c.service, depth),
    }
}

/// A load balancer: the servers the proxy picks, and whether any of them
/// answers. A connection refused by one is tried again on the next, so
/// requests fail only when none of those picked can serve.
fn servers(lb: &LoadBalancer) -> Serving {
    let weighted: Vec<usize> = (0..lb.servers.len())
        .filter(|&i| lb.rotation.weight(i) > 0)
        .collect();
    let picked: Vec<usize> = weighted.iter().copied().filter(|&i| lb.is_up(i)).collect();
    // With every server out, the balancer still tries the one its passive
    // health took out longest ago (a 502 when it fails too); servers its
    // active health check holds down are not tried (503).
    let passively_out = weighted
        .iter()
        .any(|&i| lb.health.as_ref().is_none_or(|h| h.is_up(i)));
    let mut out = if lb.rotation.is_empty() || weighted.is_empty() {
        Serving::fails(Cause::NoServer)
    } else if picked.is_empty() {
        if passively_out {
            Serving::fails(Cause::Unreachable)
        } else {
            Serving::fails(Cause::NoServer)
        }
    } else if picked.iter().all(|&i| server_down(lb, i)) {
        Serving::fails(Cause::Unreachable)
    } else {
        Serving::ok()
    };
    out.degraded = weighted.iter().any(|&i| server_down(lb, i));
    out
}

/// How a TCP service serves now. Each connection tries the other servers
/// of its load balancer when one refuses it, so a load balancer fails only
/// when every server failed its last connection; a weighted one fails the
/// share of its slots whose service does.
pub fn tcp(target: &TcpTarget) -> Serving {
    tcp_within(target, MAX_DEPTH)
}

fn tcp_within(target: &TcpTarget, depth: usize) -> Serving {
    let Some(depth) = depth.checked_sub(1) else {
        return Serving::ok();
    };
    match target {
        TcpTarget::Servers { servers, .. } => {
            if servers.is_empty() {
                return Serving::fails(Cause::NoServer);
            }
            let down = servers.iter().filter(|s| s.health.is_down()).count();
            let mut out = if down == servers.len() {
                Serving::fails(Cause::Unreachable)
            } else {
                Serving::ok()
            };
            out.degraded = down > 0;
            out
        }
        TcpTarget::Weighted { slots, .. } => {
            if slots.is_empty() {
                return Serving::fails(Cause::NoServer);
            }
            let mut out = Serving::ok();
            let mut failing = 0.0;
            for slot in slots {
                let s = tcp_within(slot, depth);
                failing += s.failing;
                out.degraded |= s.degraded || s.failing > 0.0;
                out.cause = out.cause.max(s.cause);
            }
            // Slots are one per unit of weight: at most u32::MAX of them.
            #[allow(clippy::cast_precision_loss)]
            let n = slots.len() as f64;
            out.failing = failing / n;
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::tcp::TcpServerTarget;
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;

    fn tcp_servers(n: usize) -> Arc<TcpTarget> {
        Arc::new(TcpTarget::Servers {
            servers: (0..n)
                .map(|i| TcpServerTarget {
                    address: format!("127.0.0.1:{}", i + 1),
                    tls: None,
                    health: Arc::default(),
                })
                .collect(),
            transport: Arc::default(),
            next: AtomicUsize::new(0),
            checker: None,
        })
    }

    fn fail(target: &TcpTarget, i: usize) {
        if let TcpTarget::Servers { servers, .. } = target {
            servers[i].health.failed();
        }
    }

    #[test]
    fn a_tcp_member_that_cannot_connect_takes_its_share_down() {
        let big = tcp_servers(1);
        let small = tcp_servers(2);
        // Weights 3 and 1: one slot per unit of weight.
        let weighted = TcpTarget::Weighted {
            slots: vec![big.clone(), big.clone(), big.clone(), small.clone()],
            next: AtomicUsize::new(0),
        };
        assert_eq!(tcp(&weighted).status(), Status::Enabled);
        // One of two servers failing: the other takes its connections.
        fail(&small, 0);
        let s = tcp(&small);
        assert_eq!((s.failing, s.status()), (0.0, Status::Warning));
        // The larger member's only server failing: 3 of 4 connections fail.
        fail(&big, 0);
        let s = tcp(&weighted);
        assert_eq!((s.percent(), s.status()), (75, Status::Disabled));
        assert_eq!(s.cause, Some(Cause::Unreachable));
        assert_eq!(tcp(&tcp_servers(0)).cause, Some(Cause::NoServer));
    }

    #[test]
    fn the_status_follows_the_failing_share() {
        let mut s = Serving::ok();
        assert_eq!(s.status(), Status::Enabled);
        s.degraded = true;
        assert_eq!(s.status(), Status::Warning);
        s.failing = 0.25;
        assert_eq!((s.status(), s.percent()), (Status::Warning, 25));
        s.failing = 0.75;
        assert_eq!((s.status(), s.percent()), (Status::Disabled, 75));
        s.failing = 1.0 / 3.0;
        assert_eq!(s.percent(), 34, "rounded up");
        assert_eq!(Serving::fails(Cause::NoServer).status(), Status::Disabled);
    }
}
