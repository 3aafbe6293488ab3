//! Whether a service serves now, and how much of its traffic fails: one
//! answer for HTTP and TCP alike, worked out from what the servers' own
//! requests got (the Servers room's record: answered, 5xx of their own,
//! refused, broken, timed out, never tried) along the services the proxy
//! sends to. The service and router views, the overview, explain and
//! `check` all read it, so nothing shows green while requests fail, and
//! nothing shows red while they are served.
//!
//! The walk asks the balancers the same questions the proxy asks when it
//! picks (`is_up`: whom it sends to), then what those servers' requests
//! got. A connection refused (nothing reached the server) is sent to the
//! next server, the next member of a weighted service or a failover's
//! fallback, so it fails a request only when nothing else can serve.

use super::state::StateView;
use crate::balance::{Outcome, Tally, Verdict};
use crate::config::problem::{ObjectRef, Problem};
use crate::runtime::tcp::TcpTarget;
use crate::runtime::{LoadBalancer, Status, Upstream};
use serde::Serialize;

/// How deep services may nest when walked here (compile refuses deeper).
const MAX_DEPTH: usize = 16;

/// Why requests to a service fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Cause {
    /// The servers answer with a 5xx of their own (this one, the newest).
    ServerErrors(u16),
    /// The servers do not answer within `responseHeaderTimeout`: gangway
    /// answers 504.
    TimedOut,
    /// The exchange breaks after the request left (reset, closed): 502.
    Broken,
    /// The servers cannot be connected to (refused, unreachable): 502.
    Refused,
    /// The proxy has no server to send to (every one is down by its health
    /// check, or none is configured): gangway answers 503.
    NoServer,
}

impl Cause {
    /// The status a failing request gets.
    pub const fn status(self) -> u16 {
        match self {
            Cause::ServerErrors(s) => s,
            Cause::TimedOut => 504,
            Cause::NoServer => 503,
            Cause::Refused | Cause::Broken => 502,
        }
    }

    /// The status a failing HTTP request gets; none for TCP and UDP,
    /// whose failures have no status.
    pub const fn status_of(self, proto: Proto) -> Option<u16> {
        match proto {
            Proto::Http => Some(self.status()),
            Proto::Tcp | Proto::Udp => None,
        }
    }

    /// Why, in words, for the protocol's requests, connections or
    /// datagrams.
    pub fn words(self, proto: Proto) -> String {
        match (self, proto) {
            (Cause::ServerErrors(s), _) => format!("the servers answer {s}"),
            (Cause::TimedOut, Proto::Udp) => "the servers answer no datagram".to_owned(),
            (Cause::TimedOut, _) => "the servers do not answer in time".to_owned(),
            (Cause::Broken, Proto::Http) => "the servers break the exchange off".to_owned(),
            (Cause::Broken, _) => "the servers close the connection".to_owned(),
            (Cause::Refused, Proto::Udp) => {
                "the servers' ports are closed (ICMP port unreachable)".to_owned()
            }
            (Cause::Refused, _) => "the servers refuse connections".to_owned(),
            (Cause::NoServer, _) => "no server is available".to_owned(),
        }
    }

    /// The cause of a server's failing outcomes, the worst kind first.
    fn of(t: &Tally, refused_counts: bool) -> Option<Cause> {
        if let Some(s) = t.server_status {
            Some(Cause::ServerErrors(s))
        } else if t.refused > 0 && refused_counts {
            Some(Cause::Refused)
        } else if t.broken > 0 {
            Some(Cause::Broken)
        } else if t.timed_out > 0 {
            Some(Cause::TimedOut)
        } else {
            None
        }
    }
}

/// Which traffic a service carries, for the words that describe it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    /// HTTP requests, which fail with a status.
    Http,
    /// TCP connections.
    Tcp,
    /// UDP datagrams.
    Udp,
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
    /// No server it sends to was ever tried: whether it serves is not
    /// known yet.
    pub unknown: bool,
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
            unknown: false,
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

    /// The status this gives the object: an error when all of its traffic
    /// fails, a warning when some does or when part of it cannot serve,
    /// otherwise enabled.
    pub fn status(&self) -> Status {
        if self.failing >= 1.0 {
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

    /// Whether its requests are sent elsewhere rather than failed: nothing
    /// it sends to can be connected to, and the request never left.
    fn passes_on(&self) -> bool {
        self.failing >= 1.0 && matches!(self.cause, Some(Cause::Refused | Cause::NoServer))
    }
}

/// What the model says of server `i` of `lb` now: held down by its active
/// health check, or what its own requests got.
pub fn server_verdict(lb: &LoadBalancer, i: usize) -> (Option<Verdict>, Tally) {
    let tally = lb.tally(i);
    if lb.health.as_ref().is_some_and(|h| !h.is_up(i)) {
        return (None, tally);
    }
    (Some(tally.verdict()), tally)
}

/// Whether server `i` of `lb` cannot serve now: its active health check
/// holds it down, passive health keeps it out of the rotation, or its
/// newest request got no answer from it.
pub fn server_down(lb: &LoadBalancer, i: usize) -> bool {
    !lb.is_up(i) || matches!(server_verdict(lb, i).0, None | Some(Verdict::Unreachable))
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
            let members: Vec<(u32, bool, Serving)> = w
                .children
                .iter()
                .enumerate()
                .map(|(i, child)| {
                    (
                        w.rotation.weight(i),
                        child.is_up(),
                        http_within(child, depth),
                    )
                })
                .collect();
            weighted(&members)
        }
        Upstream::Mirroring(m) => {
            // Copies are fire and forget: the client gets the main answer.
            let mut s = http_within(&m.main, depth);
            s.members_down.clear();
            s
        }
        Upstream::Failover(f) => {
            let main = http_within(&f.main, depth);
            // The proxy sends to the fallback while the main service has no
            // server up, and sends a request there when no server of the
            // main one could be connected to.
            if f.main.is_up() && !main.passes_on() {
                let mut s = main;
                s.members_down = if s.failing > 0.0 { vec![0] } else { Vec::new() };
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

/// A weighted service over members (weight, picked by the proxy, how it
/// serves): each member the proxy picks takes its share of the traffic,
/// except one that passes its requests on (nothing could be connected to),
/// whose share the others take while one of them serves.
fn weighted(members: &[(u32, bool, Serving)]) -> Serving {
    let mut out = Serving::ok();
    let serves = |s: &Serving| !s.passes_on();
    let any_serves = members.iter().any(|(w, up, s)| *w > 0 && *up && serves(s));
    let (mut weight_all, mut weight_failing, mut known) = (0.0, 0.0, false);
    for (i, (weight, up, s)) in members.iter().enumerate() {
        if *weight == 0 {
            continue;
        }
        if !*up || (any_serves && !serves(s)) {
            out.degraded = true;
            out.members_down.push(i);
            continue;
        }
        known |= !s.unknown;
        if s.unknown {
            continue;
        }
        let weight = f64::from(*weight);
        weight_all += weight;
        weight_failing += weight * s.failing;
        out.degraded |= s.degraded;
        if s.failing > 0.0 {
            out.members_down.push(i);
            out.cause = out.cause.max(s.cause);
        }
    }
    if !members.iter().any(|(w, up, _)| *w > 0 && *up) {
        out.failing = 1.0;
        out.cause = Some(Cause::NoServer);
    } else if weight_all > 0.0 {
        out.failing = weight_failing / weight_all;
    } else {
        out.unknown = !known;
    }
    out
}

/// A load balancer: the servers the proxy picks, and what their requests
/// got. A refused connection is tried again on the next server, so it
/// fails a request only when no server the proxy picks answers.
fn servers(lb: &LoadBalancer) -> Serving {
    let weighted: Vec<usize> = (0..lb.servers.len())
        .filter(|&i| lb.rotation.weight(i) > 0)
        .collect();
    if lb.rotation.is_empty() || weighted.is_empty() {
        return Serving::fails(Cause::NoServer);
    }
    let degraded = weighted.iter().any(|&i| {
        matches!(
            server_verdict(lb, i).0,
            None | Some(Verdict::Unreachable | Verdict::Erroring)
        )
    });
    let mut tried: Vec<usize> = weighted.iter().copied().filter(|&i| lb.is_up(i)).collect();
    if tried.is_empty() {
        // With every server out, the balancer still tries the one its
        // passive health took out longest ago; servers its active health
        // check holds down are not tried (503).
        tried = weighted
            .iter()
            .copied()
            .filter(|&i| server_verdict(lb, i).0.is_some())
            .collect();
    }
    if tried.is_empty() {
        let mut out = Serving::fails(Cause::NoServer);
        out.degraded = degraded;
        return out;
    }
    let tallies: Vec<(f64, Tally)> = tried
        .iter()
        .map(|&i| (f64::from(lb.rotation.weight(i)), lb.tally(i)))
        .collect();
    let any_up = tallies.iter().any(|(_, t)| t.verdict() == Verdict::Up);
    let mut out = Serving::ok();
    let (mut weight_all, mut weight_failing) = (0.0, 0.0);
    for (weight, t) in &tallies {
        // A server that gets no answer through is down until one does: its
        // next request fails (a refused one goes on to a server that
        // answers). Its 5xx answers are a rate: their share in the window.
        let (failing, cause) = match t.last {
            Some(Outcome::Refused) if any_up => continue,
            Some(Outcome::Refused) => (1.0, Some(Cause::Refused)),
            Some(Outcome::Broken) => (1.0, Some(Cause::Broken)),
            Some(Outcome::TimedOut) => (1.0, Some(Cause::TimedOut)),
            Some(Outcome::Answered(_)) => {
                // Refused connections went on to a server that answers.
                let passed_on = if any_up { t.refused } else { 0 };
                let (total, failed) = (t.total() - passed_on, t.failed() - passed_on);
                if total == 0 {
                    continue;
                }
                let cause = (failed > 0).then(|| Cause::of(t, !any_up)).flatten();
                (f64::from(failed) / f64::from(total), cause)
            }
            None => continue,
        };
        weight_all += weight;
        weight_failing += weight * failing;
        out.cause = out.cause.max(cause);
    }
    out.unknown = weight_all == 0.0;
    if weight_all > 0.0 {
        out.failing = weight_failing / weight_all;
    }
    out.degraded = degraded;
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
            let now = crate::clock::now_ms();
            let states: Vec<(bool, Tally)> = servers
                .iter()
                .map(|s| (s.health.fails_check(), s.health.record.tally(now)))
                .collect();
            let down: Vec<&Tally> = states
                .iter()
                .filter(|(checked_out, t)| *checked_out || t.verdict() == Verdict::Unreachable)
                .map(|(_, t)| t)
                .collect();
            let mut out = if down.len() == servers.len() {
                // Connections that timed out waiting for an answer (UDP)
                // say more than a refusal.
                let timed_out = down.iter().any(|t| t.last == Some(Outcome::TimedOut));
                Serving::fails(if timed_out {
                    Cause::TimedOut
                } else {
                    Cause::Refused
                })
            } else {
                Serving::ok()
            };
            out.degraded = !down.is_empty();
            out.unknown = states
                .iter()
                .all(|(checked_out, t)| !checked_out && t.verdict() == Verdict::Unknown);
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

/// Gives a router (HTTP or TCP) the state of its service: an error when
/// all of its traffic fails, a warning when some does.
pub(super) fn router_serving(
    state: &mut StateView,
    router: ObjectRef,
    service: &str,
    (s, proto): (&Serving, Proto),
) {
    let Some(cause) = s.cause.filter(|_| s.failing > 0.0) else {
        return;
    };
    let (service, status, why) = (
        service.to_owned(),
        cause.status_of(proto),
        cause.words(proto),
    );
    let problem = if s.failing >= 1.0 {
        Problem::ServiceDown {
            service,
            status,
            why,
        }
    } else {
        Problem::ServiceFailing {
            service,
            percent: s.percent(),
            status,
            why,
        }
    };
    state.live_problem(router, problem, s.status() == Status::Disabled);
}

/// What a server's requests got lately, as the model of serving says.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerStateView {
    /// `unknown`, `up`, `erroring`, `unreachable` or `down`.
    pub state: ServerState,
    /// Requests it answered below 500, lately (the last 32, at most a
    /// minute back, or the newest one alone).
    pub answered: u32,
    /// Requests that failed on it in the same window: its own 5xx, and
    /// gangway's 502 and 504 for want of an answer.
    pub failed: u32,
    /// The status its failing requests got, when some did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
}

/// A server's state in [`ServerStateView`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ServerState {
    /// Nothing was sent to it yet.
    Unknown,
    /// Its newest answer was below 500.
    Up,
    /// Its newest answer was a 5xx of its own.
    Erroring,
    /// Its newest request got no answer (refused, broken, timed out).
    Unreachable,
    /// Its active health check holds it out of the rotation.
    Down,
}

impl ServerStateView {
    pub(super) fn of(lb: &crate::runtime::LoadBalancer, i: usize) -> Self {
        let (verdict, tally) = server_verdict(lb, i);
        Self::new(verdict, &tally)
    }

    /// From the model's verdict (None: held down by its health check) and
    /// the server's tally.
    pub(super) fn new(verdict: Option<Verdict>, tally: &crate::balance::Tally) -> Self {
        ServerStateView {
            state: match verdict {
                None => ServerState::Down,
                Some(Verdict::Unknown) => ServerState::Unknown,
                Some(Verdict::Up) => ServerState::Up,
                Some(Verdict::Erroring) => ServerState::Erroring,
                Some(Verdict::Unreachable) => ServerState::Unreachable,
            },
            answered: tally.answered,
            failed: tally.failed(),
            status: tally.failing_status(),
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
        assert_eq!((s.percent(), s.status()), (75, Status::Warning));
        assert_eq!(s.cause, Some(Cause::Refused));
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
        assert_eq!((s.status(), s.percent()), (Status::Warning, 75));
        s.failing = 1.0;
        assert_eq!(
            s.status(),
            Status::Disabled,
            "an error when everything fails"
        );
        s.failing = 1.0 / 3.0;
        assert_eq!(s.percent(), 34, "rounded up");
        assert_eq!(Serving::fails(Cause::NoServer).status(), Status::Disabled);
    }
}
