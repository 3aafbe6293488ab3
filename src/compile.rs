//! Dynamic configuration → `Runtime`. Pure and synchronous. Never fails as a
//! whole: an object with an error is disabled and carries the error, and
//! everything else keeps working.

mod http;
mod middleware;
mod router;
mod tcp;
mod tree;
mod udp;

use crate::balance::strategy::member_hash;
use crate::balance::{
    MirrorShare, PassivePolicy, Rotation, ServerState, StickyCookie, StickyCookieError, Strategy,
};
use crate::client::{ClientSettings, ServerKind, TlsSettings};
use crate::config::QualifiedName;
use crate::config::dynamic::{self, Dynamic};
use crate::config::problem::{
    ConfigError, ObjectKind, ObjectRef, Problem, Reference, ServerUrlProblem, Unorderable,
};
use crate::health::{CheckServer, compile_plan};
use crate::rule::RuleSyntax;
use crate::runtime::InternalService;
use crate::runtime::registries::{HealthKey, PositionKey, Shape, StateKey};
use crate::runtime::tcp::TcpRoutes;
use crate::runtime::{
    Chain, ChainedService, EntryPointRoutes, FailoverService, LoadBalancer, Mirror,
    MirroringService, OnStatus, Registries, Report, Route, Runtime, Server, Upstream,
    WeightedService,
};
use ::http::{HeaderValue, Uri, uri::Authority};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

/// The members of a weighted or highest-random-weight service: each
/// compiled, their rotation by weight, and their qualified names.
type Members = (Vec<Arc<Upstream>>, Rotation, Vec<String>);

/// What compile needs to know about the static configuration.
#[derive(Clone, Debug, Default)]
pub struct CompileContext {
    /// Entry point names; a name's index is its `EntryPointId`.
    pub entry_points: Vec<String>,
    /// Entry points that routers without `entryPoints` do not join (gangway's
    /// internal one).
    pub not_default: Vec<String>,
    /// Client settings of the default servers transport.
    pub default_transport: ClientSettings,
    /// The static `tcpServersTransport`: how TCP servers are connected to
    /// unless their load balancer's transport says otherwise.
    pub default_tcp_transport: crate::runtime::tcp::TcpTransport,
    /// TLS towards TCP servers marked `tls`, unless their load balancer's
    /// transport has TLS settings of its own.
    pub default_tcp_tls: TlsSettings,
    /// Each service's bound on requests in progress, unless it sets its own.
    pub service_limits: crate::overload::Limits,
    /// Services gangway answers itself, by qualified name (`api@internal`).
    pub internal: BTreeMap<String, Arc<dyn InternalService>>,
    /// Which request counters to keep; None when metrics are off.
    pub metrics: Option<MetricsSettings>,
    /// Default TLS of each entry point (`entryPoints.<name>.http.tls`),
    /// indexed by `EntryPointId`; routers without `tls` there get it.
    pub entry_point_tls: Vec<Option<dynamic::RouterTls>>,
    /// Middlewares of each entry point (`entryPoints.<name>.http.middlewares`),
    /// indexed by `EntryPointId`; empty where none are given.
    pub entry_point_middlewares: Vec<Vec<String>>,
    /// Names of the certificate resolvers of the static configuration.
    pub cert_resolvers: Vec<String>,
    /// Those of them that answer DNS-01, the only challenge that can get a
    /// wildcard certificate.
    pub dns_resolvers: Vec<String>,
    /// Which entry points are UDP ones, indexed by `EntryPointId`; only
    /// UDP routers join them.
    pub udp_entry_points: Vec<bool>,
    /// The syntax of rules whose router names no `ruleSyntax` (the static
    /// `core.defaultRuleSyntax`).
    pub default_rule_syntax: RuleSyntax,
    /// The plugins the static configuration declares
    /// (`experimental.plugins.<key>.moduleName`): key → module name.
    pub plugins: BTreeMap<String, String>,
}

/// What compile needs to know about metrics.
#[derive(Clone, Debug)]
pub struct MetricsSettings {
    /// The recorder the counters are registered with.
    pub exporter: Arc<crate::metrics::Exporter>,
    /// Keep per-router counters.
    pub routers: bool,
    /// Keep per-service counters.
    pub services: bool,
}

impl std::fmt::Debug for dyn InternalService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InternalService")
    }
}

/// Compiles `dynamic` (keys already qualified `name@provider`): HTTP, TCP
/// and UDP routers with what they use, then TLS termination for the
/// routers that ask for it, and the report of every object.
pub fn compile(dynamic: Arc<Dynamic>, ctx: &CompileContext, registries: &Registries) -> Runtime {
    let mut report = Report::default();
    let mut tls_uses = TlsUses::default();
    let mut per_ep = http::compile(&dynamic, ctx, registries, &mut report, &mut tls_uses);
    let (mut tcp, tcp_services) =
        tcp::compile(&dynamic, ctx, registries, &mut report, &mut tls_uses);
    let udp = udp::compile(&dynamic, ctx, &mut report);
    let tls = terminate_tls(
        &dynamic,
        ctx,
        registries,
        tls_uses,
        &mut report,
        (&mut per_ep, &mut tcp),
    );
    let entry_points: Vec<EntryPointRoutes> =
        per_ep.into_iter().map(EntryPointRoutes::new).collect();
    mark_shadowed(&entry_points, ctx, &mut report);
    Runtime {
        generation: 0,
        entry_points,
        tcp,
        tcp_services,
        udp,
        report,
        dynamic,
        tls,
    }
}

/// The containers that Sablier plugin middlewares put to sleep, as gangway's
/// own sleeping services: `sessionDuration` is the idle time, the dynamic
/// strategy the waiting page, the blocking one a held request. What the
/// plugin wakes it wakes whoever stopped it, so these are wakeable.
pub fn sleep_claims(dynamic: &Dynamic, ctx: &CompileContext) -> Vec<crate::sleep::Claim> {
    dynamic
        .http
        .middlewares
        .iter()
        .filter_map(|(name, m)| {
            let s = crate::middleware::plugin::sablier_sessions(m.plugin.as_ref()?, &ctx.plugins)?;
            // Containers named together wake together, as Sablier starts
            // every name of a request at once.
            let unit = s.group.clone().filter(|_| s.names.is_empty());
            Some(crate::sleep::Claim {
                by: name.clone(),
                spec: crate::sleep::SleepSpec {
                    idle: Some(s.session),
                    mode: if s.blocking.is_some() {
                        crate::sleep::Mode::Hold
                    } else {
                        crate::sleep::Mode::Page
                    },
                    hold: s.blocking.unwrap_or(crate::sleep::spec::DEFAULT_HOLD),
                    group: Some(unit.unwrap_or_else(|| name.clone())),
                    wakeable: true,
                },
                names: s.names,
                group: s.group,
            })
        })
        .collect()
}

/// TLS termination for the routers that asked for it (and the default
/// certificate's order); a router whose TLS options are missing or broken
/// is disabled and taken out of its entry points' tables, as it never
/// falls back to weaker options than it asked for.
fn terminate_tls(
    dynamic: &Dynamic,
    ctx: &CompileContext,
    registries: &Registries,
    mut tls_uses: TlsUses,
    report: &mut Report,
    (per_ep, tcp): (&mut http::PerEntryPoint, &mut [Option<Arc<TcpRoutes>>]),
) -> crate::tls::Termination {
    let generated_default = tls_uses.add_generated_default(&dynamic.tls, ctx);
    report.warnings.extend(generated_default);
    let (tls, tls_report) = crate::tls::compile_termination(
        &dynamic.tls,
        &tls_uses.hosts,
        tls_uses.requests,
        &registries.tls,
    );
    report.warnings.extend(tls_report.warnings);
    for (router, options) in &tls_uses.options {
        let problem = match tls_report.broken_options.get(options) {
            Some(e) => Problem::InReference {
                what: Reference::TlsOptions,
                name: options.clone(),
                problem: Box::new(Problem::TlsOptions { reason: e.clone() }),
            },
            None if !dynamic.tls.options.contains_key(options) => Problem::Missing {
                what: Reference::TlsOptions,
                name: options.clone(),
            },
            None => continue,
        };
        if let Some(entry) = report.routers.get_mut(router) {
            entry.disable(
                ConfigError::new(ObjectRef::new(ObjectKind::Router, router), problem.clone())
                    .at("tls.options"),
            );
        }
        for routes in per_ep.iter_mut() {
            routes.retain(|r| r.name != *router);
        }
        if let Some(entry) = report.tcp_routers.get_mut(router) {
            entry.disable(
                ConfigError::new(ObjectRef::new(ObjectKind::TcpRouter, router), problem)
                    .at("tls.options"),
            );
            tcp::remove_router(tcp, router);
        }
    }
    tls
}

impl TlsUses {
    /// `tls.stores.default.defaultGeneratedCert`: the default certificate
    /// is ordered like a router's (and renewed with them); what keeps it
    /// from being ordered is returned as warnings, and the generated
    /// self-signed certificate stays the default.
    fn add_generated_default(
        &mut self,
        tls: &dynamic::Tls,
        ctx: &CompileContext,
    ) -> Vec<crate::config::problem::Warning> {
        const OPTION: &str = "tls.stores.default.defaultGeneratedCert";
        let Some(store) = tls.stores.get("default") else {
            return Vec::new();
        };
        let Some(generated) = &store.default_generated_cert else {
            return Vec::new();
        };
        let skipped = |message: String| crate::tls::skipped(OPTION, message);
        // Traefik gives the configured certificate precedence.
        if store.default_certificate.is_some() {
            return vec![skipped(
                "`defaultCertificate` is set too and is served; nothing is ordered".to_owned(),
            )];
        }
        let resolver = generated.resolver.as_str();
        let domains = generated.domains();
        if resolver.is_empty() || domains.is_empty() {
            return vec![skipped(
                "needs both `resolver` and `domain.main`; the generated certificate is served"
                    .to_owned(),
            )];
        }
        if !ctx.cert_resolvers.iter().any(|r| r == resolver) {
            return vec![skipped(
                Problem::UnknownResolver {
                    name: resolver.to_owned(),
                }
                .to_string(),
            )];
        }
        let dns01 = ctx.dns_resolvers.iter().any(|r| r == resolver);
        let mut warnings = Vec::new();
        for name in &domains {
            if let Err(reason) = orderable(name, resolver, dns01) {
                warnings.push(skipped(
                    Problem::NotOrderable {
                        domain: name.clone(),
                        reason,
                    }
                    .to_string(),
                ));
            }
        }
        if !warnings.is_empty() {
            return warnings;
        }
        let request = crate::tls::CertificateRequest {
            resolver: resolver.to_owned(),
            domains,
            routers: Vec::new(),
        };
        // A router may order the same names from the same resolver: one
        // certificate serves both.
        let key = request.key();
        if !self.requests.iter().any(|r| r.key() == key) {
            self.requests.push(request);
        }
        Vec::new()
    }
}

/// Warns on each router that can never get a request on an entry point:
/// one tried before it there (the table's own order, the one requests
/// see) has the same rule and takes the same connections, plain or TLS.
/// Only identical rules are compared; deciding whether one rule covers
/// another in general is not attempted.
fn mark_shadowed(entry_points: &[EntryPointRoutes], ctx: &CompileContext, report: &mut Report) {
    // Per losing router, per winner: the entry points, so a router beaten
    // by the same one everywhere gets one warning.
    type Lost = BTreeMap<(String, i64), (String, i64, Vec<String>)>;
    let mut lost: BTreeMap<String, Lost> = BTreeMap::new();
    for (i, table) in entry_points.iter().enumerate() {
        let Some(ep) = ctx.entry_points.get(i) else {
            continue;
        };
        let mut first: HashMap<(String, bool), &Route> = HashMap::new();
        for route in table.iter() {
            let rule = route.matcher.to_string();
            let Some(winner) = first.get(&(rule.clone(), route.tls)) else {
                first.insert((rule, route.tls), route);
                continue;
            };
            lost.entry(route.name.clone())
                .or_default()
                .entry((winner.name.clone(), winner.priority))
                .or_insert_with(|| (rule, route.priority, Vec::new()))
                .2
                .push(ep.clone());
        }
    }
    for (name, winners) in lost {
        let Some(entry) = report.routers.get_mut(&name) else {
            continue;
        };
        for ((winner, winner_priority), (rule, priority, entry_points)) in winners {
            entry.warn(
                ConfigError::new(
                    ObjectRef::new(ObjectKind::Router, &name),
                    Problem::Shadowed {
                        winner,
                        entry_points,
                        rule,
                        priority,
                        winner_priority,
                    },
                )
                .at("rule"),
            );
        }
    }
}

#[cfg(test)]
mod reference_tests;
#[cfg(test)]
mod shadow_tests;
#[cfg(test)]
mod tcp_tests;
#[cfg(test)]
mod tls_tests;

/// What TLS routers need: hosts per TLS options, certificates to obtain.
#[derive(Default)]
pub(super) struct TlsUses {
    hosts: Vec<crate::tls::HostOptions>,
    requests: Vec<crate::tls::CertificateRequest>,
    /// (router, qualified options name) for routers with named options.
    options: Vec<(String, String)>,
    seen: HashSet<(String, String)>,
}

impl TlsUses {
    /// Adds one router's TLS: `hosts` are the names its rule routes
    /// (`Host`, or `HostSNI` for a TCP router of kind `kind`).
    #[allow(clippy::too_many_arguments)]
    fn add(
        &mut self,
        (router, kind): (&str, ObjectKind),
        provider: &str,
        tls: &dynamic::RouterTls,
        hosts: Vec<String>,
        ctx: &CompileContext,
        warn: &mut dyn FnMut(ConfigError),
    ) {
        let error = |problem| ConfigError::new(ObjectRef::new(kind, router), problem);
        // A router on several entry points with the same TLS is counted once.
        if !self.seen.insert((router.to_owned(), format!("{tls:?}"))) {
            return;
        }
        let options = match tls.options.as_deref() {
            None | Some("") | Some("default") => None,
            Some(name) => Some(QualifiedName::resolve(name, provider).to_string()),
        };
        if let Some(q) = &options {
            self.options.push((router.to_owned(), q.clone()));
        }
        for host in &hosts {
            self.hosts.push(crate::tls::HostOptions {
                host: host.clone(),
                options: options.clone(),
                router: router.to_owned(),
            });
        }
        let Some(resolver) = tls.cert_resolver.as_deref().filter(|r| !r.is_empty()) else {
            return;
        };
        if !ctx.cert_resolvers.iter().any(|r| r == resolver) {
            warn(
                error(Problem::UnknownResolver {
                    name: resolver.to_owned(),
                })
                .at("tls.certresolver"),
            );
            return;
        }
        let from_rule = tls.domains.is_empty();
        let sets: Vec<Vec<String>> = if from_rule {
            vec![hosts]
        } else {
            tls.domains
                .iter()
                .map(|d| {
                    std::iter::once(&d.main)
                        .chain(&d.sans)
                        .map(|n| n.trim().trim_end_matches('.').to_ascii_lowercase())
                        .collect()
                })
                .collect()
        };
        let dns01 = ctx.dns_resolvers.iter().any(|r| r == resolver);
        for set in sets {
            let mut domains: Vec<String> = Vec::new();
            let mut refused = false;
            for name in set {
                match orderable(&name, resolver, dns01) {
                    Ok(()) if !domains.contains(&name) => domains.push(name),
                    Ok(()) => {}
                    Err(why) => {
                        refused = true;
                        warn(
                            error(Problem::NotOrderable {
                                domain: name,
                                reason: why,
                            })
                            .at(if from_rule {
                                "rule"
                            } else {
                                "tls.domains"
                            }),
                        );
                    }
                }
            }
            // A router whose only names were refused has been told why.
            if domains.is_empty() && refused {
                continue;
            }
            if domains.is_empty() {
                warn(
                    error(Problem::NoHostForCertificate {
                        resolver: resolver.to_owned(),
                    })
                    .at("tls.certresolver"),
                );
                continue;
            }
            let request = crate::tls::CertificateRequest {
                resolver: resolver.to_owned(),
                domains,
                routers: vec![router.to_owned()],
            };
            let key = request.key();
            match self.requests.iter_mut().find(|r| r.key() == key) {
                Some(existing) if !existing.routers.iter().any(|r| r == router) => {
                    existing.routers.push(router.to_owned());
                }
                Some(_) => {}
                None => self.requests.push(request),
            }
        }
    }
}

/// Whether an ACME CA can issue a certificate for `name` through the
/// challenges `resolver` answers (`dns01`: it answers DNS-01, so a `*.`
/// wildcard can be ordered).
fn orderable(name: &str, resolver: &str, dns01: bool) -> Result<(), Unorderable> {
    // RFC 8738: an address is ordered as an `ip` identifier, which no
    // DNS record can prove.
    if name.parse::<std::net::IpAddr>().is_ok() {
        return match dns01 {
            true => Err(Unorderable::IpAddressWithDns {
                resolver: resolver.to_owned(),
            }),
            false => Ok(()),
        };
    }
    if name.starts_with("**.") {
        return Err(Unorderable::AnyDepth);
    }
    // Reported rather than ordered without DNS-01: the CA would refuse the
    // wildcard, and keep refusing at every retry.
    let name = match name.strip_prefix("*.") {
        Some(base) if dns01 => base,
        Some(_) => {
            return Err(Unorderable::WildcardWithoutDns {
                resolver: resolver.to_owned(),
            });
        }
        None => name,
    };
    if name.contains('*') {
        return Err(Unorderable::MisplacedStar);
    }
    let valid = !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        });
    if valid {
        Ok(())
    } else {
        Err(Unorderable::NotDnsName)
    }
}

/// Largest request body held to send it again to a failover's fallback
/// when `errors.maxRequestBodyBytes` is unset or negative. Traefik's
/// default is unlimited; gangway keeps memory bounded.
pub const DEFAULT_FAILOVER_BODY: usize = 4 * 1024 * 1024;

/// Largest request body copied to mirrors when `maxBodySize` is unset or
/// negative. Traefik's default is unlimited; gangway keeps memory bounded.
pub const DEFAULT_MIRROR_BODY: usize = 4 * 1024 * 1024;

struct ServiceCompiler<'a> {
    dynamic: &'a Dynamic,
    ctx: &'a CompileContext,
    registries: &'a Registries,
    done: HashMap<String, Result<Arc<Upstream>, Problem>>,
    visiting: HashSet<String>,
    /// Problems that leave a service working, by service name.
    warnings: BTreeMap<String, Vec<Problem>>,
    /// A broken service's problems after the first (which is its `Err`),
    /// so that its report lists every one.
    more: BTreeMap<String, Vec<Problem>>,
    /// Services with middlewares of their own as another service reaches
    /// them: behind their chain.
    chained: HashMap<String, Result<Arc<Upstream>, Problem>>,
    /// Compiles the routers' and services' chains; None while one is being
    /// compiled (see `chain`).
    middlewares: Option<middleware::MiddlewareCompiler<'a>>,
}

impl<'a> ServiceCompiler<'a> {
    fn new(dynamic: &'a Dynamic, ctx: &'a CompileContext, registries: &'a Registries) -> Self {
        ServiceCompiler {
            dynamic,
            ctx,
            registries,
            done: HashMap::new(),
            visiting: HashSet::new(),
            warnings: BTreeMap::new(),
            more: BTreeMap::new(),
            chained: HashMap::new(),
            middlewares: Some(middleware::MiddlewareCompiler::new(
                dynamic, registries, ctx,
            )),
        }
    }

    /// The chain of middlewares `names` (qualified) for `user`, the router
    /// or service whose state they keep. The error names the middleware at
    /// fault.
    fn chain(&mut self, user: &str, names: &[String]) -> Result<Chain, Problem> {
        self.with_middlewares(|m, services| m.chain(user, names, services))
    }

    /// Checks one declared middleware on its own, for its report.
    fn check_middleware(&mut self, name: &str) -> Result<(), Problem> {
        self.with_middlewares(|m, services| m.check(name, services))
    }

    /// Lends the middleware compiler, which compiles the services that
    /// middlewares name (`errors`) through `self`. A chain compiled while
    /// another is (a service behind an `errors` middleware has middlewares
    /// of its own) gets a compiler of its own: it only misses the cache of
    /// stateless layers, as stateful ones keep their state in `Registries`.
    fn with_middlewares<T>(
        &mut self,
        f: impl FnOnce(&mut middleware::MiddlewareCompiler<'a>, &mut Self) -> T,
    ) -> T {
        let mut m = self.middlewares.take().unwrap_or_else(|| {
            middleware::MiddlewareCompiler::new(self.dynamic, self.registries, self.ctx)
        });
        let out = f(&mut m, self);
        if self.middlewares.is_none() {
            self.middlewares = Some(m);
        }
        out
    }

    fn get(&mut self, name: &str) -> Result<Arc<Upstream>, Problem> {
        if let Some(done) = self.done.get(name) {
            return done.clone();
        }
        if !self.visiting.insert(name.to_owned()) {
            return Err(Problem::Cycle {
                what: Reference::Service,
                path: vec![name.to_owned()],
            });
        }
        let result = match (
            self.dynamic.http.services.get(name),
            self.ctx.internal.get(name),
        ) {
            (_, Some(internal)) => Ok(Arc::new(Upstream::Internal(internal.clone()))),
            (None, None) => Err(Problem::NotFound),
            (Some(service), None) => self.compile(name, service),
        };
        self.visiting.remove(name);
        self.done.insert(name.to_owned(), result.clone());
        result
    }

    /// A child service (weighted member, mirror, failover side) by name.
    fn child(
        &mut self,
        what: Reference,
        name: &str,
        provider: &str,
    ) -> Result<Arc<Upstream>, Problem> {
        if name.is_empty() {
            return Err(Problem::NoName { what });
        }
        let q = QualifiedName::resolve(name, provider).to_string();
        self.reached(&q).map_err(|problem| Problem::InReference {
            what,
            name: q,
            problem: Box::new(problem),
        })
    }

    /// Service `q` as another service reaches it: a router joins a
    /// service's middlewares to its own chain, so here, as in Traefik, they
    /// run in front of the service whenever it is chosen.
    fn reached(&mut self, q: &str) -> Result<Arc<Upstream>, Problem> {
        let service = self.get(q)?;
        let Some(own) = self
            .dynamic
            .http
            .services
            .get(q)
            .map(|s| &s.middlewares)
            .filter(|m| !m.is_empty())
        else {
            return Ok(service);
        };
        if let Some(done) = self.chained.get(q) {
            return done.clone();
        }
        let provider = QualifiedName::parse(q)
            .map(|n| n.provider)
            .unwrap_or_default();
        let names: Vec<String> = own
            .iter()
            .map(|m| QualifiedName::resolve(m, &provider).to_string())
            .collect();
        let chained = self.chain(q, &names).map(|chain| {
            Arc::new(Upstream::Chained(ChainedService {
                name: q.to_owned(),
                chain,
                service,
            }))
        });
        self.chained.insert(q.to_owned(), chained.clone());
        chained
    }

    fn compile(
        &mut self,
        name: &str,
        service: &dynamic::Service,
    ) -> Result<Arc<Upstream>, Problem> {
        let provider = QualifiedName::parse(name)
            .map(|q| q.provider)
            .unwrap_or_default();
        let dynamic::Service {
            load_balancer,
            weighted,
            mirroring,
            failover,
            highest_random_weight,
            // Joined to the router's chain where a router names the service,
            // put in front of it where another service does (`reached`).
            middlewares: _,
        } = service;
        let kinds = [
            load_balancer.is_some(),
            weighted.is_some(),
            mirroring.is_some(),
            failover.is_some(),
            highest_random_weight.is_some(),
        ];
        match kinds.iter().filter(|k| **k).count() {
            0 => {
                return Err(Problem::NoType {
                    of: ObjectKind::Service,
                });
            }
            1 => {}
            _ => {
                let types = [
                    "loadBalancer",
                    "weighted",
                    "mirroring",
                    "failover",
                    "highestRandomWeight",
                ]
                .iter()
                .zip(kinds)
                .filter(|(_, given)| *given)
                .map(|(t, _)| (*t).to_owned())
                .collect();
                return Err(Problem::SeveralTypes {
                    of: ObjectKind::Service,
                    types,
                });
            }
        }
        if let Some(lb) = load_balancer {
            return self.load_balancer(name, lb, &provider);
        }
        if let Some(w) = weighted {
            return self.weighted(name, w, &provider);
        }
        if let Some(m) = mirroring {
            return self.mirroring(name, m, &provider);
        }
        if let Some(h) = highest_random_weight {
            return self.highest_random_weight(name, h, &provider);
        }
        match failover {
            Some(f) => self.failover(name, f, &provider),
            None => Err(Problem::NoType {
                of: ObjectKind::Service,
            }),
        }
    }

    fn load_balancer(
        &mut self,
        name: &str,
        lb: &dynamic::LoadBalancer,
        provider: &str,
    ) -> Result<Arc<Upstream>, Problem> {
        let dynamic::LoadBalancer {
            servers,
            pass_host_header: _,
            strategy,
            sticky,
            health_check,
            passive_health_check,
            // gangway streams every frame as it arrives.
            response_forwarding: _,
            servers_transport,
            // Read where the route's gate is built.
            max_concurrent_requests: _,
            queue_timeout: _,
        } = lb;
        let strategy = Strategy::parse(strategy.as_deref().unwrap_or_default())
            .map_err(|e| Problem::Strategy { value: e.value })?;
        let passive = match passive_health_check {
            Some(p) => PassivePolicy::configured(
                p.failure_window.as_ref().map(|d| d.0),
                p.max_failed_attempts,
            ),
            None => PassivePolicy::DEFAULT,
        };
        let settings = self.transport(servers_transport.as_deref(), provider)?;
        let registries = self.registries;
        let mut compiled = Vec::with_capacity(servers.len());
        let mut uris = Vec::with_capacity(servers.len());
        let mut weights = Vec::with_capacity(servers.len());
        let mut problems = Vec::new();
        for s in servers {
            match compile_server(s, lb.passes_host_header(), registries, &settings) {
                Ok((server, uri)) => {
                    compiled.push(server);
                    uris.push(uri);
                }
                Err(problem) => problems.push(problem),
            }
            weights.push(s.weight.unwrap_or(1));
        }
        // Every bad server is named, not only the first.
        let mut problems = problems.into_iter();
        if let Some(first) = problems.next() {
            self.more
                .entry(name.to_owned())
                .or_default()
                .extend(problems);
            return Err(first);
        }
        if !servers.is_empty() && weights.iter().all(|&w| w == 0) {
            return Err(Problem::AllWeightsZero { services: false });
        }
        let shape: Shape = servers
            .iter()
            .zip(&weights)
            .map(|(s, &w)| (s.url.clone(), w))
            .collect();
        let rotation = Rotation::new(
            weights.clone(),
            self.registries.position(&PositionKey::Servers {
                service: name.to_owned(),
                shape: shape.clone(),
            }),
            self.registries.health_epoch(),
        );
        let urls: Vec<&str> = servers.iter().map(|s| s.url.as_str()).collect();
        let sticky = match sticky.as_ref().and_then(|s| s.cookie.as_ref()) {
            Some(c) => Some(StickyCookie::compile(c, name, &urls).map_err(|e| sticky_problem(&e))?),
            None => None,
        };
        let health = match health_check {
            None => None,
            Some(hc) => {
                let targets: Vec<CheckServer<'_>> = compiled
                    .iter()
                    .zip(&uris)
                    .map(|(s, uri)| CheckServer {
                        uri,
                        kind: s.kind,
                        authority: &s.authority,
                    })
                    .collect();
                let plan = compile_plan(hc, &targets, &mut |a: &Authority| {
                    registries.client(&settings, a)
                })
                .map_err(|e| Problem::HealthCheck {
                    reason: e.to_string(),
                })?;
                let members: Vec<(String, bool)> = servers
                    .iter()
                    .zip(&weights)
                    .map(|(s, &w)| (s.url.clone(), w > 0))
                    .collect();
                let key = HealthKey {
                    service: name.to_owned(),
                    check: hc.clone(),
                    shape,
                    transport: settings,
                };
                Some(self.registries.health(&key, name, &members, plan))
            }
        };
        let states = servers
            .iter()
            .map(|s| {
                let key = StateKey::HttpServer {
                    service: name.to_owned(),
                    url: s.url.clone(),
                };
                self.registries.state(&key, ServerState::default)
            })
            .collect();
        let hashes = servers.iter().map(|s| member_hash(&s.url)).collect();
        Ok(Arc::new(Upstream::Servers(LoadBalancer {
            name: name.to_owned(),
            servers: compiled,
            rotation,
            strategy,
            sticky,
            health,
            states,
            passive,
            passive_configured: passive_health_check.is_some(),
            hashes,
            epoch: self.registries.health_epoch(),
        })))
    }

    fn weighted(
        &mut self,
        name: &str,
        w: &dynamic::Weighted,
        provider: &str,
    ) -> Result<Arc<Upstream>, Problem> {
        // Health always propagates from the children here, so Traefik's
        // opt-in `healthCheck: {}` changes nothing.
        let dynamic::Weighted {
            services,
            sticky,
            health_check: _,
        } = w;
        if services.is_empty() {
            return Err(Problem::NoWeightedServices);
        }
        let (children, rotation, ids) = self.members(name, services, provider)?;
        let id_refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        let sticky = match sticky.as_ref().and_then(|s| s.cookie.as_ref()) {
            Some(c) => {
                Some(StickyCookie::compile(c, name, &id_refs).map_err(|e| sticky_problem(&e))?)
            }
            None => None,
        };
        Ok(Arc::new(Upstream::Weighted(WeightedService {
            children,
            rotation,
            sticky,
            by_client: None,
        })))
    }

    /// The members of a weighted or highest-random-weight service `name`:
    /// each compiled, their rotation by weight (its place kept across
    /// swaps while the members and weights stay), and their qualified names.
    fn members(
        &mut self,
        name: &str,
        services: &[dynamic::WeightedService],
        provider: &str,
    ) -> Result<Members, Problem> {
        let mut children = Vec::with_capacity(services.len());
        let mut weights = Vec::with_capacity(services.len());
        let mut ids = Vec::with_capacity(services.len());
        for child in services {
            children.push(self.child(Reference::WeightedChild, &child.name, provider)?);
            weights.push(child.weight.unwrap_or(1));
            ids.push(QualifiedName::resolve(&child.name, provider).to_string());
        }
        if weights.iter().all(|&w| w == 0) {
            return Err(Problem::AllWeightsZero { services: true });
        }
        let shape: Shape = ids.iter().cloned().zip(weights.iter().copied()).collect();
        let rotation = Rotation::new(
            weights,
            self.registries.position(&PositionKey::Weighted {
                service: name.to_owned(),
                shape,
            }),
            self.registries.health_epoch(),
        );
        Ok((children, rotation, ids))
    }

    /// A `highestRandomWeight` service: a weighted service whose child is
    /// chosen by the client's IP. Health propagates from the children as
    /// for `weighted`, so `healthCheck: {}` changes nothing.
    fn highest_random_weight(
        &mut self,
        name: &str,
        h: &dynamic::HighestRandomWeight,
        provider: &str,
    ) -> Result<Arc<Upstream>, Problem> {
        let dynamic::HighestRandomWeight {
            services,
            health_check: _,
        } = h;
        if services.is_empty() {
            return Err(Problem::NoHrwServices);
        }
        // The rotation serves requests without a client IP (mirror copies).
        let (children, rotation, ids) = self.members(name, services, provider)?;
        Ok(Arc::new(Upstream::Weighted(WeightedService {
            children,
            rotation,
            sticky: None,
            by_client: Some(ids.iter().map(|id| member_hash(id)).collect()),
        })))
    }

    fn mirroring(
        &mut self,
        name: &str,
        m: &dynamic::Mirroring,
        provider: &str,
    ) -> Result<Arc<Upstream>, Problem> {
        let dynamic::Mirroring {
            service,
            mirror_body,
            max_body_size,
            mirrors,
            health_check: _,
        } = m;
        let main = self.child(Reference::MirroringService, service, provider)?;
        let mut list = Vec::with_capacity(mirrors.len());
        for mirror in mirrors {
            if mirror.percent > 100 {
                return Err(Problem::MirrorPercent {
                    mirror: mirror.name.clone(),
                    percent: mirror.percent,
                });
            }
            let upstream = self.child(Reference::Mirror, &mirror.name, provider)?;
            let q = QualifiedName::resolve(&mirror.name, provider);
            let counter = self.registries.position(&PositionKey::Mirror {
                service: name.to_owned(),
                mirror: q.to_string(),
            });
            list.push(Mirror {
                upstream,
                share: MirrorShare::new(mirror.percent, counter),
            });
        }
        let body_limit = mirror_body.unwrap_or(true).then(|| match max_body_size {
            Some(n) if *n >= 0 => usize::try_from(*n).unwrap_or(usize::MAX),
            _ => DEFAULT_MIRROR_BODY,
        });
        Ok(Arc::new(Upstream::Mirroring(MirroringService {
            main,
            mirrors: list,
            body_limit,
        })))
    }

    fn failover(
        &mut self,
        name: &str,
        f: &dynamic::Failover,
        provider: &str,
    ) -> Result<Arc<Upstream>, Problem> {
        let dynamic::Failover {
            service,
            fallback,
            health_check: _,
            errors,
        } = f;
        let on_status = match errors {
            None => None,
            Some(dynamic::FailoverErrors {
                status,
                max_request_body_bytes,
            }) => Some(OnStatus {
                ranges: OnStatus::parse_ranges(status)
                    .map_err(|value| Problem::FailoverStatus { value })?,
                max_body: match max_request_body_bytes {
                    Some(n) if *n >= 0 => usize::try_from(*n).unwrap_or(usize::MAX),
                    _ => DEFAULT_FAILOVER_BODY,
                },
            }),
        };
        let main = self.child(Reference::FailoverService, service, provider)?;
        let fallback = self.child(Reference::FailoverFallback, fallback, provider)?;
        if on_status.is_none() && !main.can_be_down() {
            self.warnings
                .entry(name.to_owned())
                .or_default()
                .push(Problem::FallbackNeverUsed);
        }
        Ok(Arc::new(Upstream::Failover(FailoverService {
            main,
            fallback,
            on_status,
        })))
    }

    /// Client settings for a load balancer: the static `serversTransport`,
    /// or a named one from `http.serversTransports`. A named transport takes
    /// the static timeouts and idle-connection limit unless it sets its own;
    /// its TLS settings are its own.
    fn transport(&self, name: Option<&str>, provider: &str) -> Result<ClientSettings, Problem> {
        let Some(name) = name.filter(|n| !n.is_empty()) else {
            return Ok(self.ctx.default_transport.clone());
        };
        let q = QualifiedName::resolve(name, provider).to_string();
        let t = self
            .dynamic
            .http
            .servers_transports
            .get(&q)
            .ok_or_else(|| Problem::Missing {
                what: Reference::ServersTransport,
                name: q.clone(),
            })?;
        let dynamic::ServersTransport {
            server_name,
            insecure_skip_verify,
            root_cas,
            max_idle_conns_per_host,
            forwarding_timeouts,
            disable_http2,
            certificates,
            cipher_suites,
            min_version,
            max_version,
            peer_cert_uri,
            spiffe,
        } = t;
        let in_transport = |problem: Problem| Problem::InReference {
            what: Reference::ServersTransport,
            name: q.clone(),
            problem: Box::new(problem),
        };
        if spiffe.is_some() {
            return Err(in_transport(Problem::Unsupported {
                message: "`spiffe`: gangway has no SPIFFE support; use `rootCAs`, `certificates` and `peerCertURI`".to_owned(),
            }));
        }
        let mut settings = self.ctx.default_transport.clone();
        if let Some(n) = max_idle_conns_per_host {
            settings.max_idle_per_host = *n;
        }
        if let Some(ft) = forwarding_timeouts {
            let nonzero = |d: &crate::config::Duration| (!d.0.is_zero()).then_some(d.0);
            if let Some(d) = &ft.dial_timeout {
                settings.dial_timeout = nonzero(d);
            }
            if let Some(d) = &ft.response_header_timeout {
                settings.response_header_timeout = nonzero(d);
            }
            if let Some(d) = &ft.idle_conn_timeout {
                settings.idle_conn_timeout = nonzero(d);
            }
            if let Some(d) = &ft.read_idle_timeout {
                settings.read_idle_timeout = nonzero(d);
            }
            if let Some(d) = &ft.ping_timeout {
                settings.ping_timeout = nonzero(d);
            }
        }
        let given = |o: &Option<String>| o.clone().filter(|v| !v.trim().is_empty());
        settings.tls = TlsSettings {
            insecure_skip_verify: *insecure_skip_verify,
            root_cas: root_cas.clone(),
            server_name: given(server_name),
            disable_http2: *disable_http2,
            certificates: certificates
                .iter()
                .map(|c| (c.cert_file.clone(), c.key_file.clone()))
                .collect(),
            peer_cert_uri: given(peer_cert_uri),
            cipher_suites: cipher_suites.clone(),
            min_version: given(min_version),
            max_version: given(max_version),
        };
        Ok(settings)
    }
}

/// A sticky cookie's error, as the service's problem.
fn sticky_problem(e: &StickyCookieError) -> Problem {
    Problem::StickyCookie {
        reason: e.to_string(),
    }
}

fn compile_server(
    s: &dynamic::Server,
    pass_host_header: bool,
    registries: &Registries,
    settings: &ClientSettings,
) -> Result<(Server, Uri), Problem> {
    let bad = |reason| Problem::ServerUrl {
        url: s.url.clone(),
        reason,
    };
    let invalid = |e: &dyn std::fmt::Display| {
        bad(ServerUrlProblem::Invalid {
            message: e.to_string(),
        })
    };
    let uri: Uri = s.url.parse().map_err(|e| invalid(&e))?;
    let (kind, default_port) = match uri.scheme_str() {
        Some("http") => (ServerKind::Http, 80),
        Some("h2c") => (ServerKind::H2c, 80),
        Some("https") => (ServerKind::Https, 443),
        _ => return Err(bad(ServerUrlProblem::Scheme)),
    };
    let authority = uri
        .authority()
        .ok_or_else(|| bad(ServerUrlProblem::NoHost))?;
    if authority.host().is_empty() {
        return Err(bad(ServerUrlProblem::NoHost));
    }
    let authority: Authority = if authority.port().is_some() {
        authority.clone()
    } else {
        format!("{}:{default_port}", authority.host())
            .parse()
            .map_err(|e| invalid(&e))?
    };
    let path_prefix = if s.preserve_path.unwrap_or(false) {
        uri.path().trim_end_matches('/').to_owned()
    } else {
        String::new()
    };
    let host_header = HeaderValue::from_str(authority.as_str()).map_err(|e| invalid(&e))?;
    let client = registries
        .client(settings, &authority)
        .map_err(|e| Problem::ClientSettings {
            reason: e.to_string(),
        })?;
    let server = Server {
        url: s.url.clone(),
        kind,
        authority,
        path_prefix,
        pass_host_header,
        host_header,
        client,
    };
    Ok((server, uri))
}

#[cfg(test)]
mod service_tests;
