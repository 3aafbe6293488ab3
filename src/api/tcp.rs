//! `/api/tcp/routers`, `/api/tcp/services`, `/api/tcp/middlewares`,
//! `/api/udp/routers` and `/api/udp/services`, in Traefik's shapes.

use super::serving;
use super::state::StateView;
use crate::config::QualifiedName;
use crate::config::dynamic::tcp::{TcpLoadBalancer, TcpMiddleware, TcpRouterTls, TcpWeighted};
use crate::config::dynamic::udp::UdpService;
use crate::config::problem::{ObjectKind, ObjectRef, Problem};
use crate::health::ServerStatus;
use crate::runtime::Runtime;
use crate::runtime::Status;
use crate::runtime::report::ObjectReport;
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
                super::views::router_serving(
                    &mut view.state,
                    ObjectRef::new(ObjectKind::TcpRouter, name),
                    &view.service,
                    &serving::tcp(target),
                    true,
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
                used_by: report.map(|r| r.using.clone()).unwrap_or_default(),
                state: StateView::of(report),
            };
            // Read from the load balancer connections go through now, so a
            // server failing shows without a configuration change.
            if let Some(target) = rt.tcp_services.get(name.as_str()) {
                let health = target.server_health();
                if !health.is_empty() {
                    let statuses: BTreeMap<String, ServerStatus> = health
                        .into_iter()
                        .map(|(address, h)| {
                            let status = if h.is_down() {
                                ServerStatus::Down
                            } else {
                                ServerStatus::Up
                            };
                            (address.to_owned(), status)
                        })
                        .collect();
                    let down = statuses
                        .values()
                        .filter(|s| **s == ServerStatus::Down)
                        .count();
                    let total = statuses.len();
                    if down > 0 {
                        view.state.live_problem(
                            ObjectRef::new(ObjectKind::TcpService, name),
                            Problem::ServersDown { down, total },
                            serving::tcp(target).status() == Status::Disabled,
                        );
                    }
                    view.server_status = Some(statuses);
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
                                status: cause.status(),
                                members,
                                why: cause.words(true),
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
            UdpRouterView {
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
            }
        })
        .collect()
}

/// Every UDP service, configured or known only from its errors.
pub fn udp_services(rt: &Runtime) -> Vec<UdpServiceView> {
    with_reports(&rt.dynamic.udp.services, &rt.report.udp_services)
        .into_iter()
        .map(|(name, s, report)| UdpServiceView {
            name: name.clone(),
            provider: provider_of(name),
            kind: match (&s.load_balancer, &s.weighted) {
                (Some(_), _) => Some("loadbalancer"),
                (None, Some(_)) => Some("weighted"),
                (None, None) => None,
            },
            config: s.into_owned(),
            used_by: report.map(|r| r.using.clone()).unwrap_or_default(),
            state: StateView::of(report),
        })
        .collect()
}
