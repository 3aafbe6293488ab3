//! HTTP routers and what they use: each router's rule and entry points,
//! its chain (the entry point's middlewares, its own, its service's), the
//! service it sends to, multi-layer routing's parents and children; then
//! the report of every declared service and middleware.

use super::router::{self, RouterStep, Using};
use super::tree::{self, Tree};
use super::{CompileContext, ServiceCompiler, TlsUses};
use crate::config::QualifiedName;
use crate::config::dynamic::{self, Dynamic};
use crate::config::problem::{ConfigError, ObjectKind, ObjectRef, Problem};
use crate::middleware::Chain;
use crate::rule::{Matcher, RuleSyntax, default_priority, parse_rule_in};
use crate::runtime::registries::StatsKind;
use crate::runtime::report::{ObjectReport, Report};
use crate::runtime::{EntryPointRoutes, Registries, Route, Upstream};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// Each entry point's routes, indexed by `EntryPointId`, in the order
/// they were compiled.
pub(super) type PerEntryPoint = Vec<Vec<Arc<Route>>>;

/// A router's chains: per distinct list of entry point middlewares, the
/// entry points that have it and the chain built with it; None when a
/// middleware is broken.
type Chains = Option<Vec<(Vec<usize>, Chain)>>;

/// Compiles every HTTP router, service and middleware; adds their reports,
/// and the TLS of routers with `tls` (theirs or their entry point's) to
/// `tls_uses`. Returns each entry point's root routes.
pub(super) fn compile(
    dynamic: &Dynamic,
    ctx: &CompileContext,
    registries: &Registries,
    report: &mut Report,
    tls_uses: &mut TlsUses,
) -> PerEntryPoint {
    let mut services = ServiceCompiler::new(dynamic, ctx, registries);
    let mut http = Http {
        dynamic,
        ctx,
        registries,
        per_ep: vec![Vec::new(); ctx.entry_points.len()],
        using: Using::new(),
        child_routes: HashMap::new(),
        tls_uses,
    };
    // Multi-layer routing: children are compiled before their parents,
    // which hold them; only roots go into the entry points' tables.
    let tree = tree::plan(&dynamic.http.routers);
    for name in &tree.order {
        let Some((name, router)) = dynamic.http.routers.get_key_value(name) else {
            continue;
        };
        let entry = report.routers.entry(name.clone()).or_default();
        http.router(name, router, &tree, entry, &mut services);
    }
    let Http {
        per_ep, mut using, ..
    } = http;
    report_services(dynamic, ctx, report, &mut services, &mut using);
    report_middlewares(dynamic, report, &mut services, &mut using);
    per_ep
}

/// The HTTP routers' compilation under way.
struct Http<'a, 't> {
    dynamic: &'a Dynamic,
    ctx: &'a CompileContext,
    registries: &'a Registries,
    per_ep: PerEntryPoint,
    /// Who uses each service and middleware.
    using: Using,
    /// Children compiled so far (multi-layer routing), by name.
    child_routes: HashMap<&'a str, Arc<Route>>,
    tls_uses: &'t mut TlsUses,
}

impl<'a> Http<'a, '_> {
    /// Compiles one router: a root joins its entry points' tables, a
    /// child waits for its parent in `child_routes`.
    fn router(
        &mut self,
        name: &'a String,
        router: &'a dynamic::Router,
        tree: &Tree,
        entry: &mut ObjectReport,
        services: &mut ServiceCompiler<'_>,
    ) {
        let ctx = self.ctx;
        let is_child = !router.parent_refs.is_empty();
        let mut step = RouterStep::new(&router::HTTP, name, entry);
        for finding in tree.findings.get(name).into_iter().flatten() {
            if finding.disables {
                step.disable(finding.problem.clone(), finding.at);
            } else {
                step.warn(finding.problem.clone(), finding.at);
            }
        }
        let syntax = step.rule_syntax(router.rule_syntax.as_deref(), ctx.default_rule_syntax);
        let matcher = step.rule(&router.rule, parse_rule_in(&router.rule, syntax));
        if let (RuleSyntax::V2, Some(matcher)) = (syntax, &matcher) {
            step.warn(
                Problem::DeprecatedRuleSyntax {
                    v3: matcher.to_string(),
                },
                "rule",
            );
        }
        // A child is reached through its root's entry points only.
        let eps = if is_child {
            Vec::new()
        } else {
            step.entry_points(&router.entry_points, ctx)
        };
        let chains = self.chains(&mut step, router, &eps, services);
        let (service_name, upstream, children) = self.target(&mut step, router, tree, services);
        let (Some(matcher), Some(upstream), Some(chains), true) =
            (matcher, upstream, chains, step.enabled())
        else {
            return;
        };
        let parts = RouteParts {
            name,
            router,
            internal: step.provider == "internal",
            service_name,
            priority: router
                .priority
                .unwrap_or_else(|| default_priority(&router.rule)),
            rule: Arc::from(router.rule.as_str()),
            upstream,
            children,
        };
        if is_child {
            if let Some((_, chain)) = chains.into_iter().next() {
                let child = parts.route(self, matcher, false, chain);
                self.child_routes.insert(name.as_str(), Arc::new(child));
            }
            return;
        }
        // One route for plain connections and one for TLS ones, as an
        // entry point's default TLS can make the router TLS on some only.
        for (members, chain) in chains {
            let mut made: [Option<Arc<Route>>; 2] = [None, None];
            for i in members {
                let tls = router
                    .tls
                    .as_ref()
                    .or_else(|| ctx.entry_point_tls.get(i).and_then(Option::as_ref));
                if let Some(tls) = tls {
                    self.tls_uses.add(
                        (name, ObjectKind::Router),
                        &step.provider,
                        tls,
                        matcher.domains(),
                        ctx,
                        &mut |e: ConfigError| step.entry.warn(e),
                    );
                }
                let made = made[usize::from(tls.is_some())].get_or_insert_with(|| {
                    Arc::new(parts.route(self, matcher.clone(), tls.is_some(), chain.clone()))
                });
                self.per_ep[i].push(made.clone());
            }
        }
    }

    /// The router's chains on its entry points `eps`. Traefik puts an entry
    /// point's middlewares before the router's own and names them in the
    /// router's provider, so the chain can differ per entry point: one
    /// chain for each distinct list.
    fn chains(
        &mut self,
        step: &mut RouterStep<'_>,
        router: &dynamic::Router,
        eps: &[usize],
        services: &mut ServiceCompiler<'_>,
    ) -> Chains {
        let ctx = self.ctx;
        let mut groups: Vec<(&[String], Vec<usize>)> = Vec::new();
        for &i in eps {
            let first = ctx
                .entry_point_middlewares
                .get(i)
                .map_or(&[][..], Vec::as_slice);
            match groups.iter_mut().find(|(list, _)| *list == first) {
                Some((_, members)) => members.push(i),
                None => groups.push((first, vec![i])),
            }
        }
        if groups.is_empty() {
            // Still checked, so that the report says what is wrong with them.
            groups.push((&[], Vec::new()));
        }
        let own = self.own_middlewares(step, router);
        let mut registered: Vec<String> = Vec::new();
        let mut chains = Some(Vec::with_capacity(groups.len()));
        for (first, members) in groups {
            let chain_names: Vec<String> = first
                .iter()
                .map(|mw| step.qualify(mw))
                .chain(own.iter().cloned())
                .collect();
            if !first.is_empty() {
                for &i in &members {
                    step.entry.entry_point_middlewares.insert(
                        ctx.entry_points[i].clone(),
                        chain_names[..first.len()].to_vec(),
                    );
                }
            }
            for q in &chain_names {
                if !registered.contains(q) {
                    step.uses(&mut self.using, ObjectKind::Middleware, q);
                    registered.push(q.clone());
                }
            }
            match services.chain(step.name, &chain_names) {
                Ok(chain) => {
                    if let Some(chains) = chains.as_mut() {
                        chains.push((members, chain));
                    }
                }
                Err(problem) => {
                    if chains.is_some() {
                        step.disable(problem, "middlewares");
                    }
                    chains = None;
                }
            }
        }
        chains
    }

    /// The router's middlewares, qualified, then (Traefik 3.7) its
    /// service's own, which run after them, named in the service's
    /// provider.
    fn own_middlewares(&self, step: &RouterStep<'_>, router: &dynamic::Router) -> Vec<String> {
        let service_q = step.qualify(&router.service);
        let service_provider = QualifiedName::parse(&service_q)
            .map(|q| q.provider)
            .unwrap_or_default();
        router
            .middlewares
            .iter()
            .map(|mw| step.qualify(mw))
            .chain(
                self.dynamic
                    .http
                    .services
                    .get(&service_q)
                    .into_iter()
                    .flat_map(|s| s.middlewares.iter())
                    .map(|mw| QualifiedName::resolve(mw, &service_provider).to_string()),
            )
            .collect()
    }

    /// Where the router sends requests: its service's name and compiled
    /// form, or, for a parent, the children still usable (and 404 when
    /// none matches).
    fn target(
        &mut self,
        step: &mut RouterStep<'_>,
        router: &dynamic::Router,
        tree: &Tree,
        services: &mut ServiceCompiler<'_>,
    ) -> (String, Option<Arc<Upstream>>, Option<Arc<EntryPointRoutes>>) {
        let name = step.name;
        if tree.is_parent(name) {
            // Children disabled for their own reasons are left out, as in
            // Traefik; a parent left with none cannot take requests.
            let all = &tree.children[name];
            let usable: Vec<Arc<Route>> = all
                .iter()
                .filter_map(|c| self.child_routes.get(c.as_str()).cloned())
                .collect();
            if usable.is_empty() && step.enabled() {
                step.disable(
                    Problem::NoUsableChild {
                        children: all.clone(),
                    },
                    "parentrefs",
                );
            }
            let upstream: Arc<Upstream> =
                Arc::new(Upstream::Internal(Arc::new(crate::runtime::NoChildRoute)));
            return (
                String::new(),
                Some(upstream),
                Some(Arc::new(EntryPointRoutes::new(usable))),
            );
        }
        if tree
            .findings
            .get(name)
            .is_some_and(|f| f.iter().any(|f| f.at == "service"))
        {
            return (String::new(), None, None);
        }
        let (service_name, upstream) =
            step.service(&router.service, &mut self.using, |q| services.get(q));
        (service_name, upstream, None)
    }
}

/// What a route takes from its router and service whatever the entry
/// point.
struct RouteParts<'a> {
    name: &'a str,
    router: &'a dynamic::Router,
    /// One of gangway's own routers.
    internal: bool,
    service_name: String,
    priority: i64,
    rule: Arc<str>,
    upstream: Arc<Upstream>,
    children: Option<Arc<EntryPointRoutes>>,
}

impl RouteParts<'_> {
    /// The route on connections that are TLS (`tls`) or not. A parent's
    /// requests are counted, and limited, on the child that answers them.
    fn route(&self, http: &Http<'_, '_>, matcher: Matcher, tls: bool, chain: Chain) -> Route {
        let (name, service_name) = (self.name, &self.service_name);
        let parent = self.children.is_some();
        let metrics = http.ctx.metrics.as_ref().filter(|_| !parent);
        let observability = self.router.observability.as_ref();
        Route {
            name: name.to_owned(),
            priority: self.priority,
            matcher,
            rule: self.rule.clone(),
            tls,
            chain,
            upstream: self.upstream.clone(),
            children: self.children.clone(),
            stats: metrics.filter(|m| m.routers).map(|m| {
                http.registries
                    .router_stats(name, service_name, &m.exporter)
            }),
            service_stats: metrics.filter(|m| m.services).map(|m| {
                http.registries
                    .stats(StatsKind::Service, service_name, &m.exporter)
            }),
            gate: if parent {
                None
            } else {
                crate::overload::Gate::for_service(
                    http.registries,
                    service_name,
                    crate::overload::Limits::of(
                        http.dynamic.http.services.get(service_name),
                        http.ctx.service_limits,
                    ),
                )
            },
            service_name: service_name.clone(),
            internal: self.internal,
            traced: router_traced(observability),
            access_logs: router_switch(observability, "accessLogs"),
            metrics: router_switch(observability, "metrics"),
        }
    }
}

/// Every declared service gets a report, used or not; so do gangway's own
/// services that a router names.
fn report_services(
    dynamic: &Dynamic,
    ctx: &CompileContext,
    report: &mut Report,
    services: &mut ServiceCompiler<'_>,
    using: &mut Using,
) {
    for name in dynamic.http.services.keys() {
        let entry = report.services.entry(name.clone()).or_default();
        let object = ObjectRef::new(ObjectKind::Service, name);
        if let Err(problem) = services.get(name) {
            entry.disable(ConfigError::new(object.clone(), problem));
            for more in services.more.remove(name).unwrap_or_default() {
                entry.disable(ConfigError::new(object.clone(), more));
            }
        }
        for w in services.warnings.remove(name).unwrap_or_default() {
            entry.warn(ConfigError::new(object.clone(), w));
        }
        entry.using = using.remove(&object).unwrap_or_default();
    }
    for name in ctx.internal.keys() {
        let users = using
            .remove(&ObjectRef::new(ObjectKind::Service, name))
            .unwrap_or_default();
        if !users.is_empty() {
            report.services.entry(name.clone()).or_default().using = users;
        }
    }
}

/// Every declared middleware gets a report, used or not: checked on its
/// own, with its users (through chains too) and the chains it is in.
fn report_middlewares(
    dynamic: &Dynamic,
    report: &mut Report,
    services: &mut ServiceCompiler<'_>,
    using: &mut Using,
) {
    let in_chains = chain_users(&dynamic.http.middlewares, using);
    for (name, m) in &dynamic.http.middlewares {
        let entry = report.middlewares.entry(name.clone()).or_default();
        let object = ObjectRef::new(ObjectKind::Middleware, name);
        if let Err(problem) = services.check_middleware(name) {
            entry.disable(ConfigError::new(object.clone(), problem));
        }
        if let Some(headers) = m.headers.as_ref() {
            for (option, instead) in headers.ignored_v2_options() {
                entry.warn(
                    ConfigError::new(
                        object.clone(),
                        Problem::IgnoredV2Option {
                            option: format!("headers.{option}"),
                            instead: instead.to_owned(),
                        },
                    )
                    .at(option),
                );
            }
        }
        entry.using = using.remove(&object).unwrap_or_default();
        entry.in_chains = in_chains.get(name).cloned().unwrap_or_default();
    }
}

/// Counts a router that reaches a middleware only through a `chain` as one
/// of that middleware's users, as it is: the member runs on its requests.
/// Returns, per middleware, the chains it is a member of.
fn chain_users(
    middlewares: &BTreeMap<String, dynamic::Middleware>,
    using: &mut BTreeMap<ObjectRef, Vec<String>>,
) -> BTreeMap<String, Vec<String>> {
    let mut in_chains: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut edges = Vec::new();
    for (name, m) in middlewares {
        let Some(chain) = &m.chain else { continue };
        let provider = QualifiedName::parse(name)
            .map(|q| q.provider)
            .unwrap_or_default();
        for member in &chain.middlewares {
            let member = QualifiedName::resolve(member, &provider).to_string();
            let chains = in_chains.entry(member.clone()).or_default();
            if !chains.contains(name) {
                chains.push(name.clone());
                edges.push((name.clone(), member));
            }
        }
    }
    // Users flow from a chain to its members until nothing changes; a cycle
    // (reported by the chain check) only ends the flow sooner, as sets only
    // grow and are bounded by the routers.
    let mut changed = true;
    while changed {
        changed = false;
        for (chain, member) in &edges {
            let from = ObjectRef::new(ObjectKind::Middleware, chain);
            let Some(users) = using.get(&from).cloned() else {
                continue;
            };
            let to = using
                .entry(ObjectRef::new(ObjectKind::Middleware, member))
                .or_default();
            for user in users {
                if !to.contains(&user) {
                    to.push(user);
                    changed = true;
                }
            }
        }
    }
    for users in using.values_mut() {
        users.sort();
        users.dedup();
    }
    in_chains
}

/// A router's `observability.<key>` switch when it is given (a bool, or
/// the text `true`/`false` as labels give it); None leaves the decision to
/// the entry point, as Traefik's entry point models do.
fn router_switch(observability: Option<&serde_json::Value>, key: &str) -> Option<bool> {
    let value = observability?
        .as_object()?
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(key))
        .map(|(_, v)| v)?;
    match value {
        serde_json::Value::Bool(b) => Some(*b),
        serde_json::Value::String(s) if s.trim().eq_ignore_ascii_case("true") => Some(true),
        serde_json::Value::String(s) if s.trim().eq_ignore_ascii_case("false") => Some(false),
        _ => None,
    }
}

/// A router's `observability.tracing`: `false` (or the text `false`, as
/// labels give it) turns tracing off for it; anything else leaves it on.
fn router_traced(observability: Option<&serde_json::Value>) -> bool {
    let Some(tracing) = observability.and_then(|o| {
        o.as_object()?
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("tracing"))
            .map(|(_, v)| v)
    }) else {
        return true;
    };
    match tracing {
        serde_json::Value::Bool(b) => *b,
        serde_json::Value::String(s) => !s.trim().eq_ignore_ascii_case("false"),
        _ => true,
    }
}
