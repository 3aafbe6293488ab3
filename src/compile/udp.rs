//! UDP routers and services: each UDP entry point gets the one router that
//! takes its datagrams, and the servers its service forwards them to.

use super::CompileContext;
use super::router::{self, RouterStep, Using};
use super::tcp::{Services, router_stats};
use crate::config::dynamic::Dynamic;
use crate::config::dynamic::tcp::{TcpLoadBalancer, TcpServer, TcpService, TcpWeighted};
use crate::config::dynamic::udp::UdpService;
use crate::config::problem::{ConfigError, ObjectKind, ObjectRef, Problem, Reference};
use crate::metrics::Transport;
use crate::runtime::report::Report;
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
            health_check: None,
        }),
    }
}

/// Compiles every UDP router and service and adds their reports. A router
/// without `entryPoints` takes every UDP entry point; an entry point that
/// two routers name goes to the one whose name sorts last, as in Traefik
/// (the others get a warning that they are shadowed there).
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
    let mut using = Using::new();
    // Traefik builds an entry point's UDP routers in descending name order
    // and serves the first that builds: the last by name.
    for (name, router) in dynamic.udp.routers.iter().rev() {
        let mut step = RouterStep::new(
            &router::UDP,
            name,
            report.udp_routers.entry(name.clone()).or_default(),
        );
        let mut eps = Vec::new();
        // Each with its option, or none for the router as a whole.
        let mut refused: Vec<(Problem, Option<&'static str>)> = Vec::new();
        if router.entry_points.is_empty() {
            eps.extend((0..ctx.entry_points.len()).filter(|&i| is_udp(i)));
            if eps.is_empty() {
                refused.push((Problem::NoUdpEntryPoint, None));
            }
        } else {
            for ep in &router.entry_points {
                match ctx.entry_points.iter().position(|n| n == ep) {
                    Some(i) if is_udp(i) => eps.push(i),
                    Some(_) => refused.push((
                        Problem::NotUdpEntryPoint {
                            entry_point: ep.clone(),
                        },
                        Some("entrypoints"),
                    )),
                    None => refused.push((
                        Problem::Missing {
                            what: Reference::EntryPoint,
                            name: ep.clone(),
                        },
                        Some("entrypoints"),
                    )),
                }
            }
        }
        let placed = !eps.is_empty();
        // Served already by a router whose name sorts after this one's:
        // shadowed there, which is a warning, never an error (Traefik
        // neither reports nor disables it).
        let mut shadowed = Vec::new();
        eps.retain(|&i| match &per_ep[i] {
            Some(last) => {
                shadowed.push(Problem::UdpEntryPointTaken {
                    entry_point: ctx.entry_points[i].clone(),
                    router: last.name.clone(),
                });
                false
            }
            None => true,
        });
        for (problem, at) in refused {
            let mut error = step.error(problem);
            error.option = at;
            if placed {
                step.entry.warn(error);
            } else {
                step.entry.disable(error);
            }
        }
        for problem in shadowed {
            let mut error = step.error(problem);
            error.option = Some("entrypoints");
            step.entry.warn(error);
        }
        step.entry.using = eps.iter().map(|&i| ctx.entry_points[i].clone()).collect();
        let (service_name, target) =
            step.service(&router.service, &mut using, |q| services.get(q, 0));
        let Some(target) = target else {
            continue;
        };
        if !step.enabled() {
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
        let object = ObjectRef::new(ObjectKind::UdpService, name);
        if let Err(problem) = services.get(name, 0) {
            entry.disable(ConfigError::new(object.clone(), problem));
        }
        entry.using = using.remove(&object).unwrap_or_default();
    }
    per_ep
}
