//! TCP routers and services: each router's rule (over the ClientHello),
//! its TLS mode and entry points, and the servers its service forwards to.

use super::router::{self, RouterStep, Using};
use super::{CompileContext, TlsUses};
use crate::client::TlsSettings;
use crate::config::QualifiedName;
use crate::config::dynamic::Dynamic;
use crate::config::dynamic::tcp::{
    ProxyProtocol, TcpLoadBalancer, TcpMiddleware, TcpServer, TcpServersTransport, TcpService,
};
use crate::config::problem::{ConfigError, ObjectKind, ObjectRef, Problem, Reference};
use crate::health::tcp::{TcpCheckPlan, TcpChecker};
use crate::metrics::Transport;
use crate::middleware::in_flight_req;
use crate::middleware::tcp::{self as tcp_mw, TcpGuard};
use crate::rule::{parse_tcp_rule, tcp_default_priority};
use crate::runtime::Registries;
use crate::runtime::registries::StateKey;
use crate::runtime::report::Report;
use crate::runtime::tcp::{
    ServerHealth, ServerTls, TcpRoute, TcpRoutes, TcpServerTarget, TcpTarget, TcpTls, TcpTransport,
};
use rustls::pki_types::ServerName;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

/// Compiled TCP services by qualified name.
type TcpServices = BTreeMap<String, Arc<TcpTarget>>;

/// Deepest nesting of weighted TCP services.
const MAX_DEPTH: usize = 16;

/// Compiles every TCP router and service; adds their reports, and the TLS
/// of routers gangway terminates TLS for to `tls_uses` (so their handshakes
/// get those routers' TLS options, and their resolvers order certificates
/// for their `HostSNI` names). Returns each entry point's routes and every
/// service that compiled, by name.
pub(super) fn compile(
    dynamic: &Dynamic,
    ctx: &CompileContext,
    registries: &Registries,
    report: &mut Report,
    tls_uses: &mut TlsUses,
) -> (Vec<Option<Arc<TcpRoutes>>>, TcpServices) {
    let mut services = Services::new(
        &dynamic.tcp.services,
        Reference::TcpService,
        Some(TcpEnv {
            transports: &dynamic.tcp.servers_transports,
            ctx,
            registries,
        }),
    );
    let mut middlewares: BTreeMap<&str, Result<Arc<TcpGuard>, Problem>> = dynamic
        .tcp
        .middlewares
        .iter()
        .map(|(name, m)| (name.as_str(), middleware(name, m, registries)))
        .collect();
    let mut per_ep: Vec<Vec<Arc<TcpRoute>>> = vec![Vec::new(); ctx.entry_points.len()];
    let mut using = Using::new();
    for (name, router) in &dynamic.tcp.routers {
        let mut step = RouterStep::new(
            &router::TCP,
            name,
            report.tcp_routers.entry(name.clone()).or_default(),
        );
        let tls = match &router.tls {
            None => TcpTls::Plain,
            Some(t) if t.passthrough => TcpTls::Passthrough,
            Some(_) => TcpTls::Terminate,
        };
        let matcher = match step.rule(&router.rule, parse_tcp_rule(&router.rule)) {
            Some(m) if tls == TcpTls::Plain && m.needs_client_hello() => {
                step.disable(
                    Problem::TcpRuleNeedsTls {
                        rule: router.rule.clone(),
                    },
                    "rule",
                );
                None
            }
            parsed => parsed,
        };
        let eps = step.entry_points(&router.entry_points, ctx);
        let mut guards = Vec::new();
        for written in &router.middlewares {
            let q = step.qualify(written);
            step.uses(&mut using, ObjectKind::TcpMiddleware, &q);
            let found = match middlewares.get(q.as_str()) {
                Some(Ok(guard)) => Ok(guard.clone()),
                Some(Err(problem)) => Err(problem.clone()),
                None => Err(Problem::Missing {
                    what: Reference::TcpMiddleware,
                    name: q.clone(),
                }),
            };
            match found {
                Ok(guard) => guards.push(guard),
                Err(problem) => step.disable(
                    Problem::InReference {
                        what: Reference::TcpMiddleware,
                        name: q,
                        problem: Box::new(problem),
                    },
                    "middlewares",
                ),
            }
        }
        if let Some(t) = router.tls.as_ref().filter(|t| t.passthrough)
            && (t.cert_resolver.is_some() || t.options.is_some())
        {
            step.warn(Problem::PassthroughTlsUnused, "tls");
        }
        let (service_name, target) =
            step.service(&router.service, &mut using, |q| services.get(q, 0));
        let (Some(matcher), Some(target)) = (matcher, target) else {
            continue;
        };
        if !step.enabled() {
            continue;
        }
        if let (TcpTls::Terminate, Some(t)) = (tls, &router.tls) {
            let http_like = crate::config::dynamic::RouterTls {
                options: t.options.clone(),
                cert_resolver: t.cert_resolver.clone(),
                domains: t.domains.clone(),
            };
            tls_uses.add(
                (name, ObjectKind::TcpRouter),
                &step.provider,
                &http_like,
                matcher.domains(),
                ctx,
                &mut |e: ConfigError| step.entry.warn(e),
            );
        }
        let route = Arc::new(TcpRoute {
            name: name.clone(),
            priority: router
                .priority
                .unwrap_or_else(|| tcp_default_priority(&router.rule)),
            matcher,
            tls,
            service_name,
            target,
            middlewares: guards,
            stats: router_stats(ctx, Transport::Tcp, name),
        });
        for i in eps {
            per_ep[i].push(route.clone());
        }
    }
    for name in dynamic.tcp.services.keys() {
        let entry = report.tcp_services.entry(name.clone()).or_default();
        let object = ObjectRef::new(ObjectKind::TcpService, name);
        match services.get(name, 0) {
            Err(problem) => entry.disable(ConfigError::new(object.clone(), problem)),
            Ok(_) => {
                for (option, problem) in overridden(name, &dynamic.tcp) {
                    entry.warn(ConfigError::new(object.clone(), problem).at(option));
                }
            }
        }
        entry.using = using.remove(&object).unwrap_or_default();
    }
    for name in dynamic.tcp.middlewares.keys() {
        let entry = report.tcp_middlewares.entry(name.clone()).or_default();
        let object = ObjectRef::new(ObjectKind::TcpMiddleware, name);
        if let Some(Err(problem)) = middlewares.remove(name.as_str()) {
            entry.disable(ConfigError::new(object.clone(), problem));
        }
        entry.using = using.remove(&object).unwrap_or_default();
    }
    let routes = per_ep
        .into_iter()
        .map(|routes| (!routes.is_empty()).then(|| Arc::new(TcpRoutes::new(routes))))
        .collect();
    (routes, services.compiled())
}

/// The load balancer's deprecated options that its servers transport sets
/// too, and so are not used: said, so that nobody wonders why.
fn overridden(name: &str, tcp: &crate::config::dynamic::tcp::Tcp) -> Vec<(&'static str, Problem)> {
    let Some(lb) = tcp
        .services
        .get(name)
        .and_then(|s| s.load_balancer.as_ref())
    else {
        return Vec::new();
    };
    let Some(written) = lb.servers_transport.as_deref().filter(|n| !n.is_empty()) else {
        return Vec::new();
    };
    let provider = QualifiedName::parse(name)
        .map(|q| q.provider)
        .unwrap_or_default();
    let q = QualifiedName::resolve(written, &provider).to_string();
    let Some(transport) = tcp.servers_transports.get(&q) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    if lb.termination_delay.is_some() && transport.termination_delay.is_some() {
        found.push((
            "loadbalancer.terminationdelay",
            Problem::OverriddenByTransport {
                transport: q.clone(),
                option: "terminationDelay".to_owned(),
            },
        ));
    }
    if lb.proxy_protocol.is_some() && transport.proxy_protocol.is_some() {
        found.push((
            "loadbalancer.proxyprotocol",
            Problem::OverriddenByTransport {
                transport: q,
                option: "proxyProtocol".to_owned(),
            },
        ));
    }
    found
}

/// The counters of a TCP or UDP router, when routers are measured.
pub(super) fn router_stats(
    ctx: &CompileContext,
    transport: Transport,
    router: &str,
) -> Option<crate::metrics::StreamStats> {
    ctx.metrics
        .as_ref()
        .filter(|m| m.routers)
        .map(|m| m.exporter.stream_stats(transport, router))
}

/// Takes `router` out of every entry point's TCP routes (its TLS options
/// turned out broken: it never falls back to weaker ones).
pub(super) fn remove_router(tcp: &mut [Option<Arc<TcpRoutes>>], router: &str) {
    for slot in tcp.iter_mut() {
        let Some(routes) = slot.as_ref() else {
            continue;
        };
        if !routes
            .tls
            .iter()
            .chain(&routes.plain)
            .any(|r| r.name == router)
        {
            continue;
        }
        let kept: Vec<Arc<TcpRoute>> = routes
            .tls
            .iter()
            .chain(&routes.plain)
            .filter(|r| r.name != router)
            .cloned()
            .collect();
        *slot = (!kept.is_empty()).then(|| Arc::new(TcpRoutes::new(kept)));
    }
}

/// Compiles one TCP middleware; `inFlightConn` keeps its counts in
/// `registries`, so a configuration swap does not reset them.
fn middleware(
    name: &str,
    m: &TcpMiddleware,
    registries: &Registries,
) -> Result<Arc<TcpGuard>, Problem> {
    let TcpMiddleware {
        ip_allow_list,
        ip_white_list,
        in_flight_conn,
    } = m;
    let given: Vec<String> = [
        ("ipAllowList", ip_allow_list.is_some()),
        ("ipWhiteList", ip_white_list.is_some()),
        ("inFlightConn", in_flight_conn.is_some()),
    ]
    .into_iter()
    .filter(|(_, set)| *set)
    .map(|(kind, _)| kind.to_owned())
    .collect();
    if given.len() > 1 {
        return Err(Problem::SeveralTypes {
            of: ObjectKind::TcpMiddleware,
            types: given,
        });
    }
    let kind = if let Some(allow) = ip_allow_list.as_ref().or(ip_white_list.as_ref()) {
        tcp_mw::compile_allow_list(allow)?
    } else if let Some(limit) = in_flight_conn {
        let state = registries.state(
            &StateKey::TcpInFlight {
                middleware: name.to_owned(),
            },
            in_flight_req::State::default,
        );
        tcp_mw::compile_in_flight(limit, state)?
    } else {
        return Err(Problem::NoType {
            of: ObjectKind::TcpMiddleware,
        });
    };
    Ok(Arc::new(TcpGuard {
        name: name.to_owned(),
        kind,
    }))
}

/// What TCP load balancers need beyond their own service: the named
/// servers transports, the static defaults, and the registries their
/// servers' health lives in. UDP services have none of it.
pub(super) struct TcpEnv<'a> {
    pub(super) transports: &'a BTreeMap<String, TcpServersTransport>,
    pub(super) ctx: &'a CompileContext,
    pub(super) registries: &'a Registries,
}

/// Resolves TCP (or UDP: the same shape) services once each, following
/// weighted ones.
pub(super) struct Services<'a> {
    defined: &'a BTreeMap<String, TcpService>,
    done: BTreeMap<String, Result<Arc<TcpTarget>, Problem>>,
    /// `TcpService` or `UdpService`, for messages.
    what: Reference,
    env: Option<TcpEnv<'a>>,
}

impl<'a> Services<'a> {
    pub(super) fn new(
        defined: &'a BTreeMap<String, TcpService>,
        what: Reference,
        env: Option<TcpEnv<'a>>,
    ) -> Self {
        Services {
            defined,
            done: BTreeMap::new(),
            what,
            env,
        }
    }

    pub(super) fn get(&mut self, name: &str, depth: usize) -> Result<Arc<TcpTarget>, Problem> {
        if let Some(done) = self.done.get(name) {
            return done.clone();
        }
        let result = match self.defined.get(name) {
            None => Err(Problem::Missing {
                what: self.what,
                name: name.to_owned(),
            }),
            Some(_) if depth > MAX_DEPTH => Err(Problem::TooDeep {
                what: self.what,
                max: MAX_DEPTH,
                name: name.to_owned(),
            }),
            Some(service) => self.build(name, service, depth),
        };
        self.done.insert(name.to_owned(), result.clone());
        result
    }

    /// The kind of the services resolved, for problems about one.
    fn kind(&self) -> ObjectKind {
        match self.what {
            Reference::UdpService => ObjectKind::UdpService,
            _ => ObjectKind::TcpService,
        }
    }

    /// Every service resolved so far that compiled, by name.
    pub(super) fn compiled(&self) -> TcpServices {
        self.done
            .iter()
            .filter_map(|(name, t)| Some((name.clone(), t.as_ref().ok()?.clone())))
            .collect()
    }

    fn build(
        &mut self,
        name: &str,
        service: &TcpService,
        depth: usize,
    ) -> Result<Arc<TcpTarget>, Problem> {
        let provider = QualifiedName::parse(name)
            .map(|q| q.provider)
            .unwrap_or_default();
        match (&service.load_balancer, &service.weighted) {
            (Some(lb), None) => {
                if lb.servers.is_empty() {
                    return Err(Problem::NoServers);
                }
                let addresses = lb
                    .servers
                    .iter()
                    .map(server_address)
                    .collect::<Result<Vec<_>, _>>()?;
                let (transport, tls) = match &self.env {
                    Some(env) => env.transport(lb, &provider)?,
                    None => (TcpTransport::default(), TlsSettings::default()),
                };
                let client_config = match (&self.env, lb.servers.iter().any(|s| s.tls)) {
                    (Some(env), true) => Some(env.registries.tls_client(&tls).map_err(|e| {
                        Problem::ClientSettings {
                            reason: e.to_string(),
                        }
                    })?),
                    _ => None,
                };
                let servers = lb
                    .servers
                    .iter()
                    .zip(addresses)
                    .map(|(server, address)| {
                        let tls = match (&client_config, server.tls) {
                            (Some(config), true) => Some(ServerTls {
                                config: config.clone(),
                                name: server_name(tls.server_name.as_deref(), &address)?,
                            }),
                            _ => None,
                        };
                        let health = match &self.env {
                            // Kept across swaps while the service keeps the
                            // server: a server that just refused stays
                            // skipped after an unrelated change.
                            Some(env) => env.registries.state(
                                &StateKey::TcpServerHealth {
                                    service: name.to_owned(),
                                    address: address.clone(),
                                },
                                ServerHealth::default,
                            ),
                            None => Arc::default(),
                        };
                        Ok(TcpServerTarget {
                            address,
                            tls,
                            health,
                        })
                    })
                    .collect::<Result<Vec<_>, Problem>>()?;
                let checker = match (&self.env, &lb.health_check) {
                    (Some(env), Some(check)) => {
                        let key = StateKey::TcpHealthCheck {
                            service: name.to_owned(),
                            check: check.clone(),
                            addresses: servers.iter().map(|s| s.address.clone()).collect(),
                        };
                        let members: Vec<(String, Arc<ServerHealth>)> = servers
                            .iter()
                            .map(|s| (s.address.clone(), s.health.clone()))
                            .collect();
                        Some(env.registries.state(&key, || {
                            TcpChecker::new(name, TcpCheckPlan::new(check), &members)
                        }))
                    }
                    _ => None,
                };
                Ok(Arc::new(TcpTarget::Servers {
                    servers,
                    transport: Arc::new(transport),
                    next: AtomicUsize::new(0),
                    checker,
                }))
            }
            (None, Some(weighted)) => {
                let mut slots = Vec::new();
                for child in &weighted.services {
                    let child_name = QualifiedName::resolve(&child.name, &provider).to_string();
                    let target = self.get(&child_name, depth + 1).map_err(|problem| {
                        Problem::InReference {
                            what: self.what,
                            name: child_name.clone(),
                            problem: Box::new(problem),
                        }
                    })?;
                    // Weights are small integers in practice; bounded so a
                    // typo cannot make a huge table.
                    let weight = child.weight.unwrap_or(1).min(1000) as usize;
                    slots.extend(std::iter::repeat_n(target, weight));
                }
                if slots.is_empty() {
                    return Err(Problem::AllWeightsZero { services: true });
                }
                Ok(Arc::new(TcpTarget::Weighted {
                    slots,
                    next: AtomicUsize::new(0),
                }))
            }
            (None, None) => Err(Problem::NoType { of: self.kind() }),
            (Some(_), Some(_)) => Err(Problem::SeveralTypes {
                of: self.kind(),
                types: vec!["loadBalancer".to_owned(), "weighted".to_owned()],
            }),
        }
    }
}

impl TcpEnv<'_> {
    /// How a load balancer's servers are connected to. A named transport's
    /// own settings win (as in Traefik); the load balancer's deprecated
    /// `terminationDelay` and `proxyProtocol` apply where the transport
    /// (or, without one, the static `tcpServersTransport`) has nothing to
    /// say; what is left comes from the static defaults.
    fn transport(
        &self,
        lb: &TcpLoadBalancer,
        provider: &str,
    ) -> Result<(TcpTransport, TlsSettings), Problem> {
        let mut transport = self.ctx.default_tcp_transport.clone();
        let mut tls = self.ctx.default_tcp_tls.clone();
        if let Some(ms) = lb.termination_delay {
            // Traefik's deprecated form: milliseconds, negative for no limit.
            transport.termination_delay = u64::try_from(ms).ok().map(Duration::from_millis);
        }
        transport.proxy_protocol = proxy_version(lb.proxy_protocol.as_ref(), "loadBalancer")?;
        let Some(written) = lb.servers_transport.as_deref().filter(|n| !n.is_empty()) else {
            return Ok((transport, tls));
        };
        let q = QualifiedName::resolve(written, provider).to_string();
        let named = self.transports.get(&q).ok_or_else(|| Problem::Missing {
            what: Reference::TcpServersTransport,
            name: q.clone(),
        })?;
        let in_transport = |problem: Problem| Problem::InReference {
            what: Reference::TcpServersTransport,
            name: q.clone(),
            problem: Box::new(problem),
        };
        let TcpServersTransport {
            dial_timeout,
            dial_keep_alive,
            termination_delay,
            proxy_protocol,
            tls: named_tls,
            spiffe,
        } = named;
        if spiffe.is_some() {
            return Err(in_transport(Problem::Unsupported {
                message: "`spiffe`: gangway has no SPIFFE support; use `tls.rootCAs`, `tls.certificates` and `tls.peerCertURI`".to_owned(),
            }));
        }
        if let Some(d) = dial_timeout {
            transport.dial_timeout = d.non_zero();
        }
        if let Some(d) = dial_keep_alive {
            transport.keep_alive = crate::runtime::tcp::keep_alive(*d);
        }
        if let Some(d) = termination_delay {
            transport.termination_delay = d.non_negative();
        }
        if let Some(version) =
            proxy_version(proxy_protocol.as_ref(), "proxyProtocol").map_err(in_transport)?
        {
            transport.proxy_protocol = Some(version);
        }
        if let Some(t) = named_tls {
            if t.spiffe.is_some() {
                return Err(in_transport(Problem::Unsupported {
                    message: "`tls.spiffe`: gangway has no SPIFFE support; use `tls.rootCAs`, `tls.certificates` and `tls.peerCertURI`".to_owned(),
                }));
            }
            tls = TlsSettings {
                insecure_skip_verify: t.insecure_skip_verify,
                root_cas: t.root_cas.clone(),
                server_name: t.server_name.clone().filter(|n| !n.is_empty()),
                disable_http2: false,
                certificates: t
                    .certificates
                    .iter()
                    .map(|c| (c.cert_file.clone(), c.key_file.clone()))
                    .collect(),
                peer_cert_uri: t.peer_cert_uri.clone().filter(|u| !u.is_empty()),
                ..TlsSettings::default()
            };
        }
        Ok((transport, tls))
    }
}

/// A PROXY protocol version, checked; a `proxyProtocol` section without
/// one means version 2, Traefik's default.
fn proxy_version(p: Option<&ProxyProtocol>, at: &str) -> Result<Option<u8>, Problem> {
    match p {
        None => Ok(None),
        Some(p) if p.version == 0 => Ok(Some(2)),
        Some(p) if matches!(p.version, 1 | 2) => Ok(Some(p.version)),
        Some(p) => Err(Problem::ProxyProtocolVersion {
            at: at.to_owned(),
            version: p.version,
        }),
    }
}

/// The name sent as SNI to a TLS server and verified in its certificate:
/// `serverName`, or the host of its address.
fn server_name(configured: Option<&str>, address: &str) -> Result<ServerName<'static>, Problem> {
    let host = match configured {
        Some(name) => name,
        None => address
            .rsplit_once(':')
            .map_or(address, |(host, _)| host)
            .trim_start_matches('[')
            .trim_end_matches(']'),
    };
    ServerName::try_from(host.to_owned()).map_err(|_| Problem::TlsServerName {
        host: host.to_owned(),
    })
}

/// A server's `host:port`, checked so that dialing it can only fail at
/// the network.
fn server_address(server: &TcpServer) -> Result<String, Problem> {
    let address = server.address.trim();
    let port = address
        .rsplit_once(':')
        .and_then(|(host, port)| (!host.is_empty()).then_some(port))
        .and_then(|port| port.parse::<u16>().ok())
        .filter(|&port| port != 0);
    match port {
        Some(_) => Ok(address.to_owned()),
        None => Err(Problem::NotHostPort {
            address: server.address.clone(),
        }),
    }
}
