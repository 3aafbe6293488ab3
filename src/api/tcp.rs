//! `/api/tcp/routers`, `/api/tcp/services`, `/api/tcp/middlewares`,
//! `/api/udp/routers` and `/api/udp/services`, in Traefik's shapes.

use super::serving;
use super::serving::{ServerStateView, router_serving};
use super::state::StateView;
use crate::config::QualifiedName;
use crate::config::dynamic::tcp::{TcpLoadBalancer, TcpMiddleware, TcpRouterTls, TcpWeighted};
use crate::config::dynamic::udp::UdpService;
use crate::config::problem::{ObjectKind, ObjectRef, Problem};
use crate::health::ServerStatus;
use crate::runtime::Runtime;
use crate::runtime::Status;
use crate::runtime::report::ObjectReport;
use crate::runtime::tcp::TcpTarget;
use serde::Serialize;
use std::collections::BTreeMap;

/// A TCP router as `/api/tcp/routers` lists it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TcpRouterView {
    /// Qualified name, `name@provider`.
    pub name: String,
    /// The provider that defined it.
    pub provider: String,
    /// The entry points configured; empty means all but the internal one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub entry_points: Vec<String>,
    /// The entry points it is attached to.
    pub using: Vec<String>,
    /// The rule as written.
    pub rule: String,
    /// The priority in effect: the configured one, or the rule's length.
    pub priority: i64,
    /// Middlewares in order, qualified.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub middlewares: Vec<String>,
    /// The service, qualified.
    pub service: String,
    /// TLS settings, when the router takes TLS connections.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<TcpRouterTls>,
    /// Status, errors and provenance.
    #[serde(flatten)]
    pub state: StateView,
}

/// A TCP service as `/api/tcp/services` lists it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TcpServiceView {
    /// Qualified name, `name@provider`.
    pub name: String,
    /// The provider that defined it.
    pub provider: String,
    /// `loadbalancer` or `weighted`; absent for a service known only from
    /// its errors.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'static str>,
    /// Its servers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_balancer: Option<TcpLoadBalancer>,
    /// Its services and weights.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weighted: Option<TcpWeighted>,
    /// For a load balancer: UP or DOWN per server address (Traefik's
    /// field), from the load balancer's own connections: DOWN from a
    /// failed connection until one succeeds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_status: Option<BTreeMap<String, ServerStatus>>,
    /// For a load balancer, gangway's addition: per server address, what
    /// its connections got lately (`unknown`, `up`, `unreachable`, `down`
    /// by its health check), as for HTTP services.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_states: Option<BTreeMap<String, ServerStateView>>,
    /// The TCP routers that use it.
    pub used_by: Vec<String>,
    /// Status, errors and provenance.
    #[serde(flatten)]
    pub state: StateView,
}

/// Each object of one kind with its report: the configured ones, then the
/// ones known only from their errors (left out by their provider: a key
/// that does not exist, a label that does not parse), as empty objects.
fn with_reports<'a, T: Default + Clone>(
    configured: &'a BTreeMap<String, T>,
    reports: &'a BTreeMap<String, ObjectReport>,
) -> Vec<(
    &'a String,
    std::borrow::Cow<'a, T>,
    Option<&'a ObjectReport>,
)> {
    let reported_only = reports
        .keys()
        .filter(|name| !configured.contains_key(*name))
        .map(|name| (name, std::borrow::Cow::Owned(T::default())));
    configured
        .iter()
        .map(|(name, t)| (name, std::borrow::Cow::Borrowed(t)))
        .chain(reported_only)
        .map(|(name, t)| (name, t, reports.get(name)))
        .collect()
}

fn provider_of(name: &str) -> String {
    name.rsplit_once('@')
        .map(|(_, p)| p.to_owned())
        .unwrap_or_default()
}

/// Every TCP router, configured or known only from its errors.
pub fn routers(rt: &Runtime) -> Vec<TcpRouterView> {
    with_reports(&rt.dynamic.tcp.routers, &rt.report.tcp_routers)
        .into_iter()
        .map(|(name, r, report)| {
            let provider = provider_of(name);
            let mut view = TcpRouterView {
                name: name.clone(),
                entry_points: r.entry_points.clone(),
                using: report.map(|r| r.using.clone()).unwrap_or_default(),
                rule: r.rule.clone(),
                priority: r
                    .priority
                    .unwrap_or_else(|| crate::rule::tcp_default_priority(&r.rule)),
                middlewares: r
                    .middlewares
                    .iter()
                    .map(|m| crate::config::QualifiedName::resolve(m, &provider).to_string())
                    .collect(),
                service: if r.service.is_empty() {
                    String::new()
                } else {
                    crate::config::QualifiedName::resolve(&r.service, &provider).to_string()
                },
                tls: r.tls.clone(),
                state: StateView::of(report),
                provider,
            };
            if view.state.status != Status::Disabled
                && let Some(target) = rt.tcp_services.get(&view.service)
            {
                router_serving(
                    &mut view.state,
                    ObjectRef::new(ObjectKind::TcpRouter, name),
                    &view.service,
                    (&serving::tcp(target), serving::Proto::Tcp),
                );
            }
            view
        })
        .collect()
}

/// Every TCP service, configured or known only from its errors.
pub fn services(rt: &Runtime) -> Vec<TcpServiceView> {
    with_reports(&rt.dynamic.tcp.services, &rt.report.tcp_services)
        .into_iter()
        .map(|(name, s, report)| {
            let mut view = TcpServiceView {
                name: name.clone(),
                provider: provider_of(name),
                kind: match (&s.load_balancer, &s.weighted) {
                    (Some(_), _) => Some("loadbalancer"),
                    (None, Some(_)) => Some("weighted"),
                    (None, None) => None,
                },
                load_balancer: s.load_balancer.clone(),
                weighted: s.weighted.clone(),
                server_status: None,
                server_states: None,
                used_by: report.map(|r| r.using.clone()).unwrap_or_default(),
                state: StateView::of(report),
            };
            // Read from the load balancer connections go through now, so a
            // server failing shows without a configuration change.
            if let Some(target) = rt.tcp_services.get(name.as_str()) {
                if let Some((statuses, states)) = stream_servers(
                    target,
                    ObjectRef::new(ObjectKind::TcpService, name),
                    &mut view.state,
                ) {
                    view.server_status = Some(statuses);
                    view.server_states = Some(states);
                } else if let Some(weighted) = &s.weighted {
                    // A weighted service: what its members' servers do to
                    // its connections.
                    let serving = serving::tcp(target);
                    let members: Vec<String> = weighted
                        .services
                        .iter()
                        .filter(|m| {
                            let member =
                                QualifiedName::resolve(&m.name, &view.provider).to_string();
                            rt.tcp_services
                                .get(&member)
                                .is_some_and(|t| serving::tcp(t).failing > 0.0)
                        })
                        .map(|m| QualifiedName::resolve(&m.name, &view.provider).to_string())
                        .collect();
                    let object = ObjectRef::new(ObjectKind::TcpService, name);
                    match serving.cause {
                        Some(_) if serving.failing >= 1.0 => {
                            view.state.live_problem(object, Problem::NoMemberUp, true);
                        }
                        Some(cause) if serving.failing > 0.0 => view.state.live_problem(
                            object,
                            Problem::MembersFailing {
                                percent: serving.percent(),
                                status: None,
                                members,
                                why: cause.words(serving::Proto::Tcp),
                            },
                            serving.status() == Status::Disabled,
                        ),
                        _ => {}
                    }
                }
            }
            view
        })
        .collect()
}

/// A TCP middleware as `/api/tcp/middlewares` lists it: its options as
/// configured, beside its type.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TcpMiddlewareView {
    /// Qualified name, `name@provider`.
    pub name: String,
    /// The provider that defined it.
    pub provider: String,
    /// `ipallowlist` or `inflightconn`, in Traefik's lowercase.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'static str>,
    /// The options, under their type's key.
    #[serde(flatten)]
    pub config: TcpMiddleware,
    /// The TCP routers that use it.
    pub used_by: Vec<String>,
    /// Status, errors and provenance.
    #[serde(flatten)]
    pub state: StateView,
}

/// Every TCP middleware, configured or known only from its errors.
pub fn middlewares(rt: &Runtime) -> Vec<TcpMiddlewareView> {
    with_reports(&rt.dynamic.tcp.middlewares, &rt.report.tcp_middlewares)
        .into_iter()
        .map(|(name, m, report)| {
            let kind = if m.ip_allow_list.is_some() {
                Some("ipallowlist")
            } else if m.ip_white_list.is_some() {
                Some("ipwhitelist")
            } else if m.in_flight_conn.is_some() {
                Some("inflightconn")
            } else {
                None
            };
            TcpMiddlewareView {
                name: name.clone(),
                provider: provider_of(name),
                kind,
                config: m.into_owned(),
                used_by: report.map(|r| r.using.clone()).unwrap_or_default(),
                state: StateView::of(report),
            }
        })
        .collect()
}

/// For a TCP or UDP load balancer: Traefik's UP/DOWN and the model's state
/// per server, with a problem on `state` when servers are down; None for
/// a weighted service.
fn stream_servers(
    target: &TcpTarget,
    object: ObjectRef,
    state: &mut StateView,
) -> Option<(
    BTreeMap<String, ServerStatus>,
    BTreeMap<String, ServerStateView>,
)> {
    let health = target.server_health();
    if health.is_empty() {
        return None;
    }
    let now = crate::clock::now_ms();
    let mut statuses = BTreeMap::new();
    let mut states = BTreeMap::new();
    for (address, h) in health {
        let tally = h.record.tally(now);
        let verdict = (!h.fails_check()).then(|| tally.verdict());
        let down = verdict.is_none_or(|v| v == crate::balance::Verdict::Unreachable);
        let status = if down || h.is_down() {
            ServerStatus::Down
        } else {
            ServerStatus::Up
        };
        statuses.insert(address.to_owned(), status);
        states.insert(address.to_owned(), ServerStateView::new(verdict, &tally));
    }
    let down = statuses
        .values()
        .filter(|s| **s == ServerStatus::Down)
        .count();
    if down > 0 {
        let total = statuses.len();
        let disables = serving::tcp(target).status() == Status::Disabled;
        state.live_problem(object, Problem::ServersDown { down, total }, disables);
    }
    Some((statuses, states))
}

/// A UDP router as `/api/udp/routers` lists it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UdpRouterView {
    /// Qualified name, `name@provider`.
    pub name: String,
    /// The provider that defined it.
    pub provider: String,
    /// The entry points configured; empty means every UDP entry point.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub entry_points: Vec<String>,
    /// The entry points it takes.
    pub using: Vec<String>,
    /// The service, qualified.
    pub service: String,
    /// Status, errors and provenance.
    #[serde(flatten)]
    pub state: StateView,
}

/// A UDP service as `/api/udp/services` lists it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UdpServiceView {
    /// Qualified name, `name@provider`.
    pub name: String,
    /// The provider that defined it.
    pub provider: String,
    /// `loadbalancer` or `weighted`.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'static str>,
    /// The service as configured.
    #[serde(flatten)]
    pub config: UdpService,
    /// For a load balancer, gangway's addition: per server address, what
    /// its datagrams got lately (`unknown`, `up`: it answered; `unreachable`:
    /// its port is closed or nothing came back within `udp.timeout`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_states: Option<BTreeMap<String, ServerStateView>>,
    /// The UDP routers that use it.
    pub used_by: Vec<String>,
    /// Status, errors and provenance.
    #[serde(flatten)]
    pub state: StateView,
}

/// Every UDP router, configured or known only from its errors.
pub fn udp_routers(rt: &Runtime) -> Vec<UdpRouterView> {
    with_reports(&rt.dynamic.udp.routers, &rt.report.udp_routers)
        .into_iter()
        .map(|(name, r, report)| {
            let provider = provider_of(name);
            let mut view = UdpRouterView {
                name: name.clone(),
                entry_points: r.entry_points.clone(),
                using: report.map(|r| r.using.clone()).unwrap_or_default(),
                service: if r.service.is_empty() {
                    String::new()
                } else {
                    crate::config::QualifiedName::resolve(&r.service, &provider).to_string()
                },
                state: StateView::of(report),
                provider,
            };
            if view.state.status != Status::Disabled
                && let Some(target) = udp_target(rt, &view.service)
            {
                router_serving(
                    &mut view.state,
                    ObjectRef::new(ObjectKind::UdpRouter, name),
                    &view.service,
                    (&serving::tcp(&target), serving::Proto::Udp),
                );
            }
            view
        })
        .collect()
}

/// The compiled target of a UDP service a UDP router sends to.
fn udp_target(rt: &Runtime, service: &str) -> Option<std::sync::Arc<TcpTarget>> {
    rt.udp
        .iter()
        .flatten()
        .find(|r| r.service_name == service)
        .map(|r| r.target.clone())
}

/// Every UDP service, configured or known only from its errors.
pub fn udp_services(rt: &Runtime) -> Vec<UdpServiceView> {
    with_reports(&rt.dynamic.udp.services, &rt.report.udp_services)
        .into_iter()
        .map(|(name, s, report)| {
            let mut view = UdpServiceView {
                name: name.clone(),
                provider: provider_of(name),
                kind: match (&s.load_balancer, &s.weighted) {
                    (Some(_), _) => Some("loadbalancer"),
                    (None, Some(_)) => Some("weighted"),
                    (None, None) => None,
                },
                config: s.into_owned(),
                server_states: None,
                used_by: report.map(|r| r.using.clone()).unwrap_or_default(),
                state: StateView::of(report),
            };
            if let Some(target) = udp_target(rt, name) {
                view.server_states = stream_servers(
                    &target,
                    ObjectRef::new(ObjectKind::UdpService, name),
                    &mut view.state,
                )
                .map(|(_, states)| states);
            }
            view
        })
        .collect()
}
