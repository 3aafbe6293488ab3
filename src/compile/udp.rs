//! UDP routers and services: each UDP entry point gets the one router that
//! takes its datagrams, and the servers its service forwards them to.

use super::CompileContext;
use super::tcp::{Services, router_stats};
use crate::config::QualifiedName;
use crate::config::dynamic::Dynamic;
use crate::config::dynamic::tcp::{TcpLoadBalancer, TcpServer, TcpService, TcpWeighted};
use crate::config::dynamic::udp::UdpService;
use crate::config::problem::{ConfigError, ObjectKind, ObjectRef, Problem, Reference};
use crate::metrics::Transport;
use crate::runtime::report::{Report, Status};
use crate::runtime::tcp::UdpRoute;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A UDP service in the TCP service's shape, which the service resolver
/// reads (its servers have an address and nothing else).
fn as_tcp(service: &UdpService) -> TcpService {
    TcpService {
        load_balancer: service.load_balancer.as_ref().map(|lb| TcpLoadBalancer {
            servers: lb
                .servers
                .iter()
                .map(|s| TcpServer {
                    address: s.address.clone(),
                    tls: false,
                })
                .collect(),
            ..TcpLoadBalancer::default()
        }),
        weighted: service.weighted.as_ref().map(|w| TcpWeighted {
            services: w.services.clone(),
        }),
    }
}

/// Compiles every UDP router and service and adds their reports. A router
/// without `entryPoints` takes every UDP entry point; an entry point that
/// two routers name goes to the first by name (the other is told).
pub(super) fn compile(
    dynamic: &Dynamic,
    ctx: &CompileContext,
    report: &mut Report,
) -> Vec<Option<Arc<UdpRoute>>> {
    let converted: BTreeMap<String, TcpService> = dynamic
        .udp
        .services
        .iter()
        .map(|(name, s)| (name.clone(), as_tcp(s)))
        .collect();
    let mut services = Services::new(&converted, Reference::UdpService, None);
    let is_udp = |i: usize| ctx.udp_entry_points.get(i).copied().unwrap_or(false);
    let mut per_ep: Vec<Option<Arc<UdpRoute>>> = vec![None; ctx.entry_points.len()];
    let mut using: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, router) in &dynamic.udp.routers {
        let entry = report.udp_routers.entry(name.clone()).or_default();
        let provider = QualifiedName::parse(name)
            .map(|q| q.provider)
            .unwrap_or_default();
        let error =
            |problem| ConfigError::new(ObjectRef::new(ObjectKind::UdpRouter, name), problem);
        let mut eps = Vec::new();
        let mut refused = Vec::new();
        if router.entry_points.is_empty() {
            eps.extend((0..ctx.entry_points.len()).filter(|&i| is_udp(i)));
            if eps.is_empty() {
                refused.push(error(Problem::bad_value(
                    "no UDP entry point exists (an entry point's address ending in `/udp`)",
                )));
            }
        } else {
            for ep in &router.entry_points {
                match ctx.entry_points.iter().position(|n| n == ep) {
                    Some(i) if is_udp(i) => eps.push(i),
                    Some(_) => refused.push(
                        error(Problem::bad_value(format!(
                            "entry point `{ep}` is not a UDP entry point (its address has no `/udp`)"
                        )))
                        .at("entrypoints"),
                    ),
                    None => refused.push(
                        error(Problem::Missing {
                            what: Reference::EntryPoint,
                            name: ep.clone(),
                        })
                        .at("entrypoints"),
                    ),
                }
            }
        }
        // Taken already by a router before it (by name).
        eps.retain(|&i| match &per_ep[i] {
            Some(first) => {
                refused.push(
                    error(Problem::bad_value(format!(
                        "UDP entry point `{}` is taken by router `{}`: a UDP entry point has one router",
                        ctx.entry_points[i], first.name
                    )))
                    .at("entrypoints"),
                );
                false
            }
            None => true,
        });
        for e in refused {
            if eps.is_empty() {
                entry.disable(e);
            } else {
                entry.warn(e);
            }
        }
        entry.using = eps.iter().map(|&i| ctx.entry_points[i].clone()).collect();
        let service_name = QualifiedName::resolve(&router.service, &provider).to_string();
        let target = if router.service.is_empty() {
            entry.disable(error(Problem::NoService).at("service"));
            None
        } else {
            using
                .entry(service_name.clone())
                .or_default()
                .push(name.clone());
            match services.get(&service_name, 0) {
                Ok(t) => Some(t),
                Err(problem) => {
                    entry.disable(
                        error(Problem::InReference {
                            what: Reference::UdpService,
                            name: service_name.clone(),
                            problem: Box::new(problem),
                        })
                        .at("service"),
                    );
                    None
                }
            }
        };
        let Some(target) = target else {
            continue;
        };
        if entry.status == Status::Disabled {
            continue;
        }
        let route = Arc::new(UdpRoute {
            name: name.clone(),
            service_name,
            target,
            stats: router_stats(ctx, Transport::Udp, name),
        });
        for i in eps {
            per_ep[i] = Some(route.clone());
        }
    }
    for name in dynamic.udp.services.keys() {
        let entry = report.udp_services.entry(name.clone()).or_default();
        if let Err(problem) = services.get(name, 0) {
            entry.disable(ConfigError::new(
                ObjectRef::new(ObjectKind::UdpService, name),
                problem,
            ));
        }
        entry.using = using.remove(name).unwrap_or_default();
    }
    per_ep
}
