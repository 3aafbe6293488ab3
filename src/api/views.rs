//! The API's answers as typed views of the runtime, in Traefik v3's field
//! names and shapes where Traefik has the endpoint, gangway's own where it
//! does not.
//!
//! Each view is built from the runtime when a request asks and serialized
//! as is: the field list of a struct here is the API's contract, checked
//! against the golden files in `tests/golden/api/`.

use super::ApiState;
use super::serving::{self, Cause, Proto, ServerState, ServerStateView, Serving, router_serving};
use super::state::{ErrorView, StateView};
use crate::acme::CertificateState;
use crate::config::QualifiedName;
use crate::config::dynamic::{
    Failover, HighestRandomWeight, LoadBalancer, Middleware, Mirroring, Router, RouterTls, Service,
    Weighted,
};
use crate::config::problem::Warning;
use crate::config::problem::{ObjectKind, ObjectRef, Problem};
use crate::config::provenance::{ContainerRecord, NotRouted, SwarmTask};
use crate::config::static_config::{EntryPoint, StaticConfig};
use crate::health::{ServerHealthReport, ServerStatus, ServiceHealthReport};
use crate::runtime::report::ProviderReport;
use crate::runtime::{ObjectReport, Runtime, Status, Upstream};
use crate::tls::FileCertificate;
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

fn provider_of(name: &str) -> String {
    QualifiedName::parse(name)
        .map(|q| q.provider)
        .unwrap_or_default()
}

// === live health ===

/// The services the proxy sends to now, by qualified name: the compiled
/// services of the runtime's routes and every load balancer below them.
/// Service status is read from these when the API is asked, so a server
/// going down shows without a recompile.
struct Live<'a> {
    services: HashMap<&'a str, &'a Upstream>,
}

/// How deep services may nest when walked here (compile refuses deeper).
const MAX_DEPTH: usize = 16;

impl<'a> Live<'a> {
    /// A digest of what router views take from outside the runtime: each
    /// routed service's serving state, and the certificate errors.
    fn digest(&self, certificates: &[CertificateState]) -> u64 {
        use std::hash::{Hash, Hasher};
        let one = |f: &dyn Fn(&mut std::hash::DefaultHasher)| {
            let mut h = std::hash::DefaultHasher::new();
            f(&mut h);
            h.finish()
        };
        // A sum, so that the map's order does not matter.
        let services = self.services.iter().fold(0u64, |sum, (name, u)| {
            let s = serving::http(u);
            sum.wrapping_add(one(&|h| {
                name.hash(h);
                s.failing.to_bits().hash(h);
                s.cause.hash(h);
            }))
        });
        let errors = one(&|h| {
            for c in certificates.iter().filter(|c| c.last_error.is_some()) {
                (&c.resolver, &c.domains, &c.routers, &c.last_error).hash(h);
                (c.failures, c.next_attempt).hash(h);
            }
        });
        services ^ errors
    }

    fn of(rt: &'a Runtime) -> Self {
        let mut services = HashMap::new();
        for route in rt.entry_points.iter().flat_map(|ep| ep.iter()) {
            services.insert(route.service_name.as_str(), &*route.upstream);
            Self::balancers(&route.upstream, &mut services, MAX_DEPTH);
        }
        Live { services }
    }

    fn balancers(u: &'a Upstream, out: &mut HashMap<&'a str, &'a Upstream>, depth: usize) {
        let Some(depth) = depth.checked_sub(1) else {
            return;
        };
        match u {
            Upstream::Servers(lb) => {
                out.insert(lb.name.as_str(), u);
            }
            Upstream::Weighted(w) => {
                for c in &w.children {
                    Self::balancers(c, out, depth);
                }
            }
            Upstream::Mirroring(m) => {
                Self::balancers(&m.main, out, depth);
                for mirror in &m.mirrors {
                    Self::balancers(&mirror.upstream, out, depth);
                }
            }
            Upstream::Failover(f) => {
                Self::balancers(&f.main, out, depth);
                Self::balancers(&f.fallback, out, depth);
            }
            Upstream::Internal(_) => {}
            Upstream::Chained(c) => Self::balancers(&c.service, out, depth),
        }
    }
}

/// Gives a service with members (weighted, mirroring, failover) what its
/// members' state does to its traffic; `name_of` names member `i`.
pub(super) fn members_serving(
    state: &mut StateView,
    service: ObjectRef,
    (s, proto): (&Serving, Proto),
    name_of: impl Fn(usize) -> Option<String>,
) {
    let members: Vec<String> = s.members_down.iter().filter_map(|&i| name_of(i)).collect();
    let disables = s.status() == Status::Disabled;
    if s.on_fallback
        && let (Some(main), Some(fallback)) = (name_of(0), name_of(1))
    {
        state.live_problem(
            service.clone(),
            Problem::OnFallback { main, fallback },
            false,
        );
    }
    match s.cause {
        Some(crate::api::serving::Cause::NoServer) if s.failing >= 1.0 => {
            state.live_problem(service, Problem::NoMemberUp, true);
        }
        Some(cause) if s.failing > 0.0 => state.live_problem(
            service,
            Problem::MembersFailing {
                percent: s.percent(),
                status: cause.status_of(proto),
                members,
                why: cause.words(proto),
            },
            disables,
        ),
        _ if !members.is_empty() && !s.on_fallback => {
            state.live_problem(service, Problem::MembersDown { members }, false);
        }
        _ => {}
    }
}

fn using(report: Option<&ObjectReport>) -> Vec<String> {
    report.map(|r| r.using.clone()).unwrap_or_default()
}

// === routers ===

/// A router as `/api/http/routers` lists it: Traefik's router fields with
/// the service and middlewares qualified and the effective priority, plus
/// the hosts and paths its rule routes.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RouterView {
    /// Qualified name, `name@provider`.
    pub name: String,
    /// The provider that defined it.
    pub provider: String,
    /// The entry points configured; empty means all but the internal one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub entry_points: Vec<String>,
    /// The entry points it is attached to.
    pub using: Vec<String>,
    /// The rule as written; absent only for a router left out by its
    /// provider whose rule was not read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// Traefik's `ruleSyntax`, when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule_syntax: Option<String>,
    /// The priority in effect: the configured one, or the rule's length;
    /// for a router left out by its provider, only one that was read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
    /// Middlewares in order, qualified; those of its entry points first
    /// when every entry point it is on has the same ones, as Traefik shows
    /// a router on one entry point.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub middlewares: Vec<String>,
    /// The middlewares each of its entry points runs before its own
    /// (`entryPoints.<name>.http.middlewares`), qualified.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub entry_point_middlewares: BTreeMap<String, Vec<String>>,
    /// The service, qualified; absent when none is configured (or, for a
    /// router left out by its provider, none was read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
    /// The routers it is a child of (multi-layer routing), qualified.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parent_refs: Vec<String>,
    /// TLS settings, when the router takes TLS connections only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<RouterTls>,
    /// Traefik's observability switches, as configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observability: Option<Value>,
    /// Hosts of the rule's `Host` matchers, lowercased, wildcards with
    /// their `*.` or `**.` (none under `!`).
    pub hosts: Vec<String>,
    /// Patterns of the rule's `HostRegexp` matchers.
    pub host_regexps: Vec<String>,
    /// Values of the rule's `Path` matchers.
    pub paths: Vec<String>,
    /// Values of the rule's `PathPrefix` matchers.
    pub path_prefixes: Vec<String>,
    /// For a TLS router: the certificate each of its hosts is served
    /// today (gangway's addition).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub certificates: Vec<ServedCertificateView>,
    /// For a router with `tls.certResolver`: the certificates its resolver
    /// failed to obtain for it, with why (gangway's addition).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub certificate_errors: Vec<CertificateErrorView>,
    /// Status, errors and provenance.
    #[serde(flatten)]
    pub state: StateView,
}

/// The certificate a TLS router's host is served now: from a file, from a
/// resolver, or the default one (with a warning when browsers will not
/// trust it).
#[derive(Debug, Serialize)]
pub struct ServedCertificateView {
    /// The host; absent for a router whose rule names none (clients then
    /// get the certificate of the name they ask for, else the default one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// `file` (with `certFile`), `acme` (with `resolver`), `default`, or
    /// `none` when `sniStrict` refuses the handshake.
    #[serde(flatten)]
    pub source: crate::tls::CertificateSource,
    /// Why a client may refuse it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// A certificate a resolver failed to obtain for a router.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CertificateErrorView {
    /// The certificate resolver.
    pub resolver: String,
    /// The certificate's names.
    pub domains: Vec<String>,
    /// Why the last order failed.
    pub error: String,
    /// Failed orders in a row.
    pub failures: u32,
    /// When the next order is placed, seconds since the epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_attempt: Option<i64>,
}

/// A certificate resolver on `/api/certificateresolvers`: how it obtains
/// certificates, and how its certificates stand.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResolverView {
    /// Its name in the static configuration.
    pub name: String,
    /// The ACME directory URL.
    pub ca_server: String,
    /// The challenge it answers: `tls-alpn-01`, `http-01` or `dns-01`.
    pub challenge: crate::acme::ChallengeKind,
    /// For DNS-01: the provider, the resolvers checked and the propagation
    /// settings (the provider's credentials are never shown).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dns_challenge: Option<crate::config::static_config::DnsChallenge>,
    /// Certificates it is asked for.
    pub certificates: usize,
    /// Those whose last order failed.
    pub failing: usize,
    /// The DNS-01 challenges being answered now.
    pub pending_challenges: Vec<crate::acme::PendingChallenge>,
    /// The failed orders' errors, one per failing certificate.
    pub errors: Vec<String>,
    /// Where its account and certificates are kept (`file`, `redis`,
    /// `etcd`), whether the store answers, this instance's name there, and
    /// warnings (private keys in clear).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub storage: Option<crate::acme::ResolverStorageView>,
    /// Validation requests that found no answer on this instance nor in a
    /// shared store: another ACME client (often another gangway with a
    /// storage of its own) orders for these names.
    pub unanswered_validations: Vec<crate::tls::challenge::Unanswered>,
}

/// Every certificate resolver of the static configuration, by name.
pub fn resolvers(state: &ApiState) -> Vec<ResolverView> {
    let certs = state.certificates.snapshot();
    let mut storage = state.certificates.storage_views();
    let unanswered = state.registries.tls.challenges.unanswered();
    state
        .static_config
        .certificates_resolvers
        .iter()
        .map(|(name, r)| {
            let mine: Vec<&CertificateState> =
                certs.iter().filter(|c| c.resolver == *name).collect();
            let errors: Vec<String> = mine.iter().filter_map(|c| c.last_error.clone()).collect();
            ResolverView {
                name: name.clone(),
                ca_server: r.acme.directory_url().to_owned(),
                challenge: crate::acme::ChallengeKind::of(&r.acme),
                dns_challenge: r.acme.dns_challenge.clone(),
                certificates: mine.len(),
                failing: errors.len(),
                pending_challenges: mine
                    .iter()
                    .filter_map(|c| c.pending_challenge.clone())
                    .collect(),
                errors,
                storage: storage.remove(name),
                unanswered_validations: unanswered.clone(),
            }
        })
        .collect()
}

/// Adds to each router the failed orders of the certificates it wants.
pub fn with_certificate_errors(
    mut views: Vec<RouterView>,
    certificates: &[CertificateState],
) -> Vec<RouterView> {
    for view in &mut views {
        view.certificate_errors = certificates
            .iter()
            .filter(|c| c.routers.contains(&view.name))
            .filter_map(|c| {
                Some(CertificateErrorView {
                    resolver: c.resolver.clone(),
                    domains: c.domains.clone(),
                    error: c.last_error.clone()?,
                    failures: c.failures,
                    next_attempt: c.next_attempt,
                })
            })
            .collect();
    }
    views
}

/// The warning for the generated default certificate.
const UNTRUSTED: &str = "gangway's self-signed default certificate is served: browsers and other clients will not trust it (add a certificate for this host in tls.certificates, or a certResolver)";

/// The warning for a host no certificate covers under sniStrict.
const REFUSED: &str = "no certificate covers this host and its TLS options have sniStrict: handshakes for it are refused";

/// The certificates a TLS router's hosts (from its rule and `tls.domains`)
/// are served now.
fn served_certificates(rt: &Runtime, view: &RouterView) -> Vec<ServedCertificateView> {
    let (Some(tls), Some(served)) = (&view.tls, &rt.tls.served) else {
        return Vec::new();
    };
    let warning = |source: &crate::tls::CertificateSource| match source {
        crate::tls::CertificateSource::Default if served.default.self_signed => {
            Some(UNTRUSTED.to_owned())
        }
        crate::tls::CertificateSource::Refused => Some(REFUSED.to_owned()),
        _ => None,
    };
    host_sources(rt, served, with_domains(view.hosts.clone(), &tls.domains))
        .into_iter()
        .map(|(host, source)| ServedCertificateView {
            host,
            warning: warning(&source),
            source,
        })
        .collect()
}

/// `hosts` with the names of a router's `tls.domains` added, lowercase,
/// each once.
fn with_domains(mut hosts: Vec<String>, domains: &[crate::config::dynamic::Domain]) -> Vec<String> {
    for d in domains {
        for name in std::iter::once(&d.main).chain(&d.sans) {
            let name = name.to_ascii_lowercase();
            if !name.is_empty() && !hosts.contains(&name) {
                hosts.push(name);
            }
        }
    }
    hosts
}

/// Where the certificate a handshake for each of `hosts` gets comes from;
/// with no host, the default certificate (a client asking for a name no
/// other certificate covers).
fn host_sources(
    rt: &Runtime,
    served: &crate::tls::ServedCertificates,
    hosts: Vec<String>,
) -> Vec<(Option<String>, crate::tls::CertificateSource)> {
    if hosts.is_empty() {
        return vec![(None, crate::tls::CertificateSource::Default)];
    }
    hosts
        .into_iter()
        .map(|host| {
            let source = served.source_for(&host, rt.tls.options_index(&host));
            (Some(host), source)
        })
        .collect()
}

/// The TCP routers gangway terminates TLS for, each with where the
/// certificates of its `HostSNI` names (and `tls.domains`) come from.
fn tcp_certificate_sources(rt: &Runtime) -> Vec<(String, Vec<crate::tls::CertificateSource>)> {
    let Some(served) = &rt.tls.served else {
        return Vec::new();
    };
    super::tcp::routers(rt)
        .into_iter()
        .filter(|r| r.state.status != Status::Disabled)
        .filter_map(|r| {
            let tls = r.tls.as_ref().filter(|t| !t.passthrough)?;
            let hosts = crate::rule::parse_tcp_rule(&r.rule)
                .map(|m| m.domains())
                .unwrap_or_default()
                .into_iter()
                .map(|h| h.to_ascii_lowercase())
                .collect();
            let sources = host_sources(rt, served, with_domains(hosts, &tls.domains))
                .into_iter()
                .map(|(_, source)| source)
                .collect();
            Some((r.name, sources))
        })
        .collect()
}

impl RouterView {
    fn new(name: &str, router: &Router, report: Option<&ObjectReport>) -> Self {
        let provider = provider_of(name);
        let Router {
            entry_points,
            rule,
            rule_syntax,
            priority,
            middlewares,
            service,
            parent_refs,
            tls,
            observability,
        } = router;
        // A rule that does not parse routes nothing; its error is in `error`.
        let targets = crate::rule::parse_rule_as_written(rule, rule_syntax.as_deref())
            .map(|m| m.targets())
            .unwrap_or_default();
        let entry_point_middlewares = report
            .map(|r| r.entry_point_middlewares.clone())
            .unwrap_or_default();
        let own = middlewares
            .iter()
            .map(|m| QualifiedName::resolve(m, &provider).to_string());
        // One list for all its entry points is what the router runs
        // everywhere; differing lists stay apart, in entryPointMiddlewares.
        let on_all = report.is_some_and(|r| r.using.len() == entry_point_middlewares.len());
        let mut lists = entry_point_middlewares.values();
        let first: Vec<String> = match lists.next() {
            Some(list) if on_all && lists.all(|l| l == list) => list.clone(),
            _ => Vec::new(),
        };
        RouterView {
            name: name.to_owned(),
            entry_points: entry_points.clone(),
            using: using(report),
            rule: Some(rule.clone()),
            rule_syntax: rule_syntax.clone(),
            priority: Some(priority.unwrap_or_else(|| crate::rule::default_priority(rule))),
            middlewares: first.into_iter().chain(own).collect(),
            entry_point_middlewares,
            service: (!service.is_empty())
                .then(|| QualifiedName::resolve(service, &provider).to_string()),
            parent_refs: parent_refs
                .iter()
                .map(|p| QualifiedName::resolve(p, &provider).to_string())
                .collect(),
            tls: tls.clone(),
            observability: observability.clone(),
            hosts: targets.hosts,
            host_regexps: targets.host_regexps,
            paths: targets.paths,
            path_prefixes: targets.path_prefixes,
            certificates: Vec::new(),
            certificate_errors: Vec::new(),
            state: StateView::of(report),
            provider,
        }
    }
}

/// Every router: the model as configured, plus name, provider, status,
/// errors, the entry points it is on (`using`), its effective priority and
/// the hosts and paths of its rule.
pub fn routers(rt: &Runtime) -> Vec<RouterView> {
    routers_with(rt, &Live::of(rt))
}

/// The router views last built and what they were built from: the
/// runtime's generation and a digest of the live state they show.
#[derive(Default)]
pub struct RouterViews(std::sync::Mutex<Option<(ViewsKey, Arc<Vec<RouterView>>)>>);

/// What router views show besides the runtime: its generation, the
/// serving state of every service routed to, and certificate errors.
#[derive(Clone, Copy, PartialEq, Eq)]
struct ViewsKey {
    generation: u64,
    live: u64,
}

impl RouterViews {
    /// Every router's view (as [`routers`], with certificate errors), built
    /// again only when the runtime, a routed service's serving state or a
    /// certificate's error has changed since the last call: with thousands
    /// of routers, parsing every rule for each poll of an open dashboard
    /// would cost more than anything else the API does.
    pub fn of(&self, rt: &Runtime, certificates: &[CertificateState]) -> Arc<Vec<RouterView>> {
        let live = Live::of(rt);
        let key = ViewsKey {
            generation: rt.generation,
            live: live.digest(certificates),
        };
        let mut last = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((k, views)) = last.as_ref()
            && *k == key
        {
            return views.clone();
        }
        let views = Arc::new(with_certificate_errors(
            routers_with(rt, &live),
            certificates,
        ));
        *last = Some((key, views.clone()));
        views
    }
}

fn routers_with(rt: &Runtime, live: &Live<'_>) -> Vec<RouterView> {
    // A router its provider left out (a key that does not exist, a label
    // that does not parse) has only its report: listed, disabled, with why
    // and with the values that were read, never defaults.
    let reported_only = rt
        .report
        .routers
        .iter()
        .filter(|(name, _)| !rt.dynamic.http.routers.contains_key(*name))
        .map(|(name, report)| left_out_router(name, report));
    rt.dynamic
        .http
        .routers
        .iter()
        .map(|(name, r)| {
            let mut view = RouterView::new(name, r, rt.report.routers.get(name));
            view.certificates = served_certificates(rt, &view);
            if view.state.status != Status::Disabled
                && let Some(service) = &view.service
                && let Some(u) = live.services.get(service.as_str())
            {
                router_serving(
                    &mut view.state,
                    ObjectRef::new(ObjectKind::Router, name),
                    service,
                    (&serving::http(u), Proto::Http),
                );
            }
            view
        })
        .chain(reported_only)
        .collect()
}

/// The value of `key` in the values read of an object left out, matched
/// without regard to case as providers read keys.
fn read_value<'a>(read: Option<&'a Value>, key: &str) -> Option<&'a Value> {
    read?
        .as_object()?
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(key))
        .map(|(_, v)| v)
}

fn read_strings(read: Option<&Value>, key: &str) -> Vec<String> {
    read_value(read, key)
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// A router its provider left out: what was read of it, nothing more.
fn left_out_router(name: &str, report: &ObjectReport) -> RouterView {
    let provider = provider_of(name);
    let read = report.read.as_ref();
    let text = |key: &str| {
        read_value(read, key)
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let rule = text("rule");
    let targets = rule
        .as_deref()
        .and_then(|r| crate::rule::parse_rule_as_written(r, None).ok())
        .map(|m| m.targets())
        .unwrap_or_default();
    RouterView {
        name: name.to_owned(),
        entry_points: read_strings(read, "entryPoints"),
        using: Vec::new(),
        rule,
        rule_syntax: text("ruleSyntax"),
        priority: read_value(read, "priority").and_then(Value::as_i64),
        middlewares: read_strings(read, "middlewares")
            .iter()
            .map(|m| QualifiedName::resolve(m, &provider).to_string())
            .collect(),
        entry_point_middlewares: BTreeMap::new(),
        service: text("service")
            .filter(|s| !s.is_empty())
            .map(|s| QualifiedName::resolve(&s, &provider).to_string()),
        parent_refs: read_strings(read, "parentRefs")
            .iter()
            .map(|p| QualifiedName::resolve(p, &provider).to_string())
            .collect(),
        tls: None,
        observability: None,
        hosts: targets.hosts,
        host_regexps: targets.host_regexps,
        paths: targets.paths,
        path_prefixes: targets.path_prefixes,
        certificates: Vec::new(),
        certificate_errors: Vec::new(),
        state: StateView::of(Some(report)),
        provider,
    }
}

// === services ===

/// What kind of service it is, in Traefik's lowercase spelling.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ServiceType {
    /// Balances over servers.
    LoadBalancer,
    /// Weighted round robin over services.
    Weighted,
    /// Copies requests to mirrors.
    Mirroring,
    /// Falls back to another service.
    Failover,
    /// Keeps each client IP on one of several services.
    HighestRandomWeight,
}

/// A service as `/api/http/services` lists it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceView {
    /// Qualified name, `name@provider`.
    pub name: String,
    /// The provider that defined it.
    pub provider: String,
    /// Its kind; absent for a service known only from its errors.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<ServiceType>,
    /// Load balancer settings, as configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_balancer: Option<LoadBalancer>,
    /// Weighted service settings, as configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weighted: Option<Weighted>,
    /// Mirroring settings, as configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mirroring: Option<Mirroring>,
    /// Failover settings, as configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failover: Option<Failover>,
    /// Highest-random-weight settings, as configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub highest_random_weight: Option<HighestRandomWeight>,
    /// For a load balancer: UP or DOWN per server URL (Traefik's field).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_status: Option<BTreeMap<String, ServerStatus>>,
    /// For a load balancer, gangway's addition: per server URL, what its
    /// requests got lately (the model every surface reads): `unknown`
    /// until one is sent to it, `up`, `erroring` (its newest answer was a
    /// 5xx of its own), `unreachable` (its newest request got no answer) or
    /// `down` (its active health check failed), with the counts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_states: Option<BTreeMap<String, ServerStateView>>,
    /// For a health-checked load balancer, gangway's own addition: per
    /// server URL, the status, the last check's error and its time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_health: Option<BTreeMap<String, ServerHealthReport>>,
    /// The routers that use it.
    pub used_by: Vec<String>,
    /// For a service whose containers sleep when idle (`gangway.sleep.*`
    /// labels), gangway's addition: its state (awake, stopping, asleep,
    /// waking, stopped), when it went to sleep, the last request and the
    /// last wake-up with its duration.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sleep: Option<crate::sleep::UnitView>,
    /// Status, errors and provenance.
    #[serde(flatten)]
    pub state: StateView,
}

impl ServiceView {
    fn new(
        name: &str,
        service: Option<&Service>,
        report: Option<&ObjectReport>,
        health: Option<&ServiceHealthReport>,
        live: Option<&Upstream>,
    ) -> Self {
        let mut view = ServiceView {
            name: name.to_owned(),
            provider: provider_of(name),
            kind: None,
            load_balancer: None,
            weighted: None,
            mirroring: None,
            failover: None,
            highest_random_weight: None,
            server_status: None,
            server_states: None,
            server_health: None,
            used_by: using(report),
            sleep: None,
            state: StateView::of(report),
        };
        let Some(Service {
            load_balancer,
            weighted,
            mirroring,
            failover,
            highest_random_weight,
            middlewares: _,
        }) = service
        else {
            return view;
        };
        view.kind = Some(if load_balancer.is_some() {
            ServiceType::LoadBalancer
        } else if weighted.is_some() {
            ServiceType::Weighted
        } else if mirroring.is_some() {
            ServiceType::Mirroring
        } else if highest_random_weight.is_some() {
            ServiceType::HighestRandomWeight
        } else {
            ServiceType::Failover
        });
        if let Some(lb) = load_balancer {
            view.read_servers(name, lb, health, live);
        } else if let Some(u) = live {
            let members: Vec<String> = match (weighted, mirroring, failover) {
                (Some(w), _, _) => w.services.iter().map(|m| m.name.clone()).collect(),
                (_, Some(m), _) => vec![m.service.clone()],
                (_, _, Some(f)) => vec![f.service.clone(), f.fallback.clone()],
                _ => Vec::new(),
            };
            let provider = view.provider.clone();
            members_serving(
                &mut view.state,
                ObjectRef::new(ObjectKind::Service, name),
                (&serving::http(u), Proto::Http),
                |i| {
                    members
                        .get(i)
                        .map(|m| QualifiedName::resolve(m, &provider).to_string())
                },
            );
        }
        view.load_balancer.clone_from(load_balancer);
        if let Some(lb) = view.load_balancer.as_mut() {
            // Shown with its default, as Traefik's API does, so that the
            // setting in effect is read rather than remembered.
            lb.pass_host_header = Some(lb.passes_host_header());
        }
        view.weighted.clone_from(weighted);
        view.mirroring.clone_from(mirroring);
        view.failover.clone_from(failover);
        view.highest_random_weight.clone_from(highest_random_weight);
        view
    }
}

impl ServiceView {
    /// A load balancer's servers as the proxy finds them now: each one's
    /// status (its health check, or the proxy's failed connections) and
    /// state from the record of its requests, and the service's problems
    /// when servers are down or answer errors.
    fn read_servers(
        &mut self,
        name: &str,
        lb: &LoadBalancer,
        health: Option<&ServiceHealthReport>,
        live: Option<&Upstream>,
    ) {
        // A server is UP unless its health check or the proxy's failed
        // connections say otherwise, read from the balancer the proxy
        // uses now.
        let compiled = match live {
            Some(Upstream::Servers(c)) => Some(c),
            _ => None,
        };
        let mut server_health = health.map(|h| h.servers.clone());
        let mut down = 0;
        let mut statuses = BTreeMap::new();
        let mut states = BTreeMap::new();
        for srv in &lb.servers {
            let index = compiled.and_then(|c| c.servers.iter().position(|s| s.url == srv.url));
            let mut status = health
                .and_then(|h| h.servers.get(&srv.url))
                .map_or(ServerStatus::Up, |r| r.status);
            if let (Some(c), Some(i)) = (compiled, index) {
                if serving::server_down(c, i) {
                    status = ServerStatus::Down;
                }
                states.insert(srv.url.clone(), ServerStateView::of(c, i));
                let passive = &c.servers[i].client.passive;
                if passive.failures() > 0 {
                    let entry = server_health
                        .get_or_insert_with(BTreeMap::new)
                        .entry(srv.url.clone())
                        .or_insert(ServerHealthReport {
                            status,
                            last_error: None,
                            last_check: None,
                            failed_connections: None,
                        });
                    entry.status = status;
                    entry.failed_connections = Some(passive.failures());
                    if entry.last_error.is_none() {
                        entry.last_error = passive.last_error();
                    }
                }
            }
            if status == ServerStatus::Down {
                down += 1;
            }
            statuses.insert(srv.url.clone(), status);
        }
        self.server_status = Some(statuses);
        self.server_health = server_health;
        let serving = live.map(serving::http);
        let object = ObjectRef::new(ObjectKind::Service, name);
        let total = lb.servers.len();
        if down > 0 {
            let problem = Problem::ServersDown { down, total };
            let disables = serving
                .as_ref()
                .map_or(down >= total, |s| s.status() == Status::Disabled);
            self.state.live_problem(object.clone(), problem, disables);
        }
        let erroring = states
            .values()
            .filter(|s| s.state == ServerState::Erroring)
            .count();
        if let Some(s) = &serving
            && let Some(Cause::ServerErrors(status)) = s.cause
            && s.failing > 0.0
        {
            let problem = Problem::ServersErroring {
                erroring,
                total,
                status,
                percent: s.percent(),
            };
            self.state
                .live_problem(object, problem, s.status() == Status::Disabled);
        }
        self.server_states = (!states.is_empty()).then_some(states);
    }

    /// Leaves out when each server was last checked: a list polled every
    /// few seconds would otherwise change at every check and never answer
    /// 304. The one-service answer keeps it.
    pub fn forget_check_times(&mut self) {
        for report in self.server_health.iter_mut().flat_map(|h| h.values_mut()) {
            report.last_check = None;
        }
    }
}

/// Every service, including the internal ones in use and those known only
/// from their errors. `health` holds the active health checks by service
/// name.
pub fn services(rt: &Runtime, health: &BTreeMap<String, ServiceHealthReport>) -> Vec<ServiceView> {
    let live = Live::of(rt);
    let mut out: Vec<ServiceView> = rt
        .dynamic
        .http
        .services
        .iter()
        .map(|(name, s)| {
            ServiceView::new(
                name,
                Some(s),
                rt.report.services.get(name),
                health.get(name),
                live.services.get(name.as_str()).copied(),
            )
        })
        .collect();
    for (name, report) in &rt.report.services {
        if !rt.dynamic.http.services.contains_key(name) {
            out.push(ServiceView::new(name, None, Some(report), None, None));
        }
    }
    out
}

// === middlewares ===

/// A middleware as `/api/http/middlewares` lists it: its options under its
/// type's name (`stripPrefix`, …), as in Traefik.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MiddlewareView {
    /// Qualified name, `name@provider`.
    pub name: String,
    /// The provider that defined it.
    pub provider: String,
    /// Its type, lowercased (`stripprefix`); absent when none is set.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The key its options are under (`stripPrefix`), gangway's addition so
    /// a client need not search for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub options_key: Option<&'static str>,
    /// The options, under the type's name.
    #[serde(flatten)]
    pub config: Middleware,
    /// The routers that use it, directly or through a `chain`.
    pub used_by: Vec<String>,
    /// The `chain` middlewares it is a member of, gangway's addition.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub in_chains: Vec<String>,
    /// Status, errors and provenance.
    #[serde(flatten)]
    pub state: StateView,
}

/// Every middleware: its options under its type name, plus the usual fields.
pub fn middlewares(rt: &Runtime) -> Vec<MiddlewareView> {
    // As for routers: one its provider left out is listed from its report.
    let left_out = Middleware::default();
    let reported_only = rt
        .report
        .middlewares
        .keys()
        .filter(|name| !rt.dynamic.http.middlewares.contains_key(*name))
        .map(|name| (name, &left_out));
    rt.dynamic
        .http
        .middlewares
        .iter()
        .chain(reported_only)
        .map(|(name, m)| {
            let report = rt.report.middlewares.get(name);
            let key = m.kinds().first().copied();
            MiddlewareView {
                name: name.clone(),
                provider: provider_of(name),
                kind: key.map(str::to_ascii_lowercase),
                options_key: key,
                config: m.clone(),
                used_by: using(report),
                in_chains: report.map(|r| r.in_chains.clone()).unwrap_or_default(),
                state: StateView::of(report),
            }
        })
        .collect()
}

// === entry points, overview, providers, version ===

/// An entry point as configured, with its name.
#[derive(Debug, Serialize)]
pub struct EntryPointView<'a> {
    /// Its name.
    pub name: &'a str,
    /// Its static configuration, in Traefik's field names.
    #[serde(flatten)]
    pub config: &'a EntryPoint,
}

/// Every entry point as configured, with its name.
pub fn entry_points(config: &StaticConfig) -> Vec<EntryPointView<'_>> {
    config
        .entry_points
        .iter()
        .map(|(name, ep)| EntryPointView { name, config: ep })
        .collect()
}

/// How many objects of one kind there are, and how many have problems.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Counts {
    /// All of them.
    pub total: usize,
    /// Working, with a warning.
    pub warnings: usize,
    /// Disabled by an error.
    pub errors: usize,
}

impl Counts {
    fn of<'a>(statuses: impl Iterator<Item = &'a Status>) -> Self {
        statuses.fold(Counts::default(), |mut c, s| {
            c.total += 1;
            match s {
                Status::Warning => c.warnings += 1,
                Status::Disabled => c.errors += 1,
                Status::Enabled => {}
            }
            c
        })
    }
}

/// Counts of HTTP (and TCP) routers, services and middlewares.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SectionCounts {
    /// Routers.
    pub routers: Counts,
    /// Services.
    pub services: Counts,
    /// Middlewares.
    pub middlewares: Counts,
}

/// Counts of UDP routers and services (UDP has no middlewares).
#[derive(Debug, Default, Serialize)]
pub struct UdpCounts {
    /// Routers.
    pub routers: Counts,
    /// Services.
    pub services: Counts,
}

/// Which optional features are on, in Traefik's spelling.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Features {
    /// The tracing backend; always empty (gangway has no tracing).
    pub tracing: &'static str,
    /// `Prometheus` when metrics are on, else empty.
    pub metrics: &'static str,
    /// Whether the access log is on.
    pub access_log: bool,
}

/// `/api/overview`.
#[derive(Debug, Serialize)]
pub struct OverviewView {
    /// HTTP objects.
    pub http: SectionCounts,
    /// TCP objects.
    pub tcp: SectionCounts,
    /// UDP objects.
    pub udp: UdpCounts,
    /// Optional features.
    pub features: Features,
    /// The providers configured, in Traefik's capitalised names.
    pub providers: Vec<&'static str>,
    /// How many configurations have been applied.
    pub generation: u64,
    /// Problems not tied to one object.
    pub warnings: Vec<Warning>,
    /// Traefik options given at start that gangway accepts without
    /// implementing them, each with what does not happen.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<crate::config::static_config::AcceptedOption>,
}

/// The HTTP counts of `/api/overview` last made, with what they were made
/// from: at 10,000 routers, building every router and service view again
/// for each poll of an open dashboard is the most the overview costs.
#[derive(Default)]
pub struct OverviewCounts(std::sync::Mutex<Option<(OverviewKey, Arc<SectionCounts>)>>);

/// What the HTTP counts read: the runtime, the serving state of each
/// service routed to, certificate errors and the active health checks'
/// verdicts (not their times, which change at every check).
#[derive(Clone, Copy, PartialEq, Eq)]
struct OverviewKey {
    generation: u64,
    live: u64,
    health: u64,
}

impl OverviewCounts {
    fn of(&self, state: &ApiState, rt: &Runtime) -> Arc<SectionCounts> {
        let certificates = state.certificates.snapshot();
        let health = state.registries.health_report();
        let key = OverviewKey {
            generation: rt.generation,
            live: Live::of(rt).digest(&certificates),
            health: health_digest(&health),
        };
        let mut last = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((k, counts)) = last.as_ref()
            && *k == key
        {
            return counts.clone();
        }
        let count =
            |items: &mut dyn Iterator<Item = &StateView>| Counts::of(items.map(|s| &s.status));
        let counts = Arc::new(SectionCounts {
            routers: count(
                &mut state
                    .router_views
                    .of(rt, &certificates)
                    .iter()
                    .map(|v| &v.state),
            ),
            services: count(&mut services(rt, &health).iter().map(|v| &v.state)),
            middlewares: count(&mut middlewares(rt).iter().map(|v| &v.state)),
        });
        *last = Some((key, counts.clone()));
        counts
    }
}

/// A digest of each checked server's verdict and error, leaving out when
/// it was checked.
fn health_digest(health: &BTreeMap<String, ServiceHealthReport>) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    for (service, report) in health {
        service.hash(&mut h);
        for (url, server) in &report.servers {
            (url, server.status == ServerStatus::Up, &server.last_error).hash(&mut h);
            server.failed_connections.hash(&mut h);
        }
    }
    h.finish()
}

/// `/api/overview`: counts by status, features and providers.
pub fn overview(state: &ApiState) -> OverviewView {
    let rt = state.runtime.load_full();
    let cfg = &state.static_config;
    let count = |items: &mut dyn Iterator<Item = &StateView>| Counts::of(items.map(|s| &s.status));
    let providers = state.providers.clone();
    OverviewView {
        http: state.overview_counts.of(state, &rt).as_ref().clone(),
        tcp: SectionCounts {
            routers: count(&mut super::tcp::routers(&rt).iter().map(|v| &v.state)),
            services: count(&mut super::tcp::services(&rt).iter().map(|v| &v.state)),
            middlewares: count(&mut super::tcp::middlewares(&rt).iter().map(|v| &v.state)),
        },
        udp: UdpCounts {
            routers: count(&mut super::tcp::udp_routers(&rt).iter().map(|v| &v.state)),
            services: count(&mut super::tcp::udp_services(&rt).iter().map(|v| &v.state)),
        },
        features: Features {
            tracing: "",
            metrics: if cfg.metrics.prometheus.is_some() {
                "Prometheus"
            } else {
                ""
            },
            access_log: cfg.access_log.is_some(),
        },
        providers,
        generation: rt.generation,
        warnings: rt
            .report
            .warnings
            .iter()
            .cloned()
            .chain(acme_warnings(state))
            .collect(),
        notices: cfg.accepted.clone(),
    }
}

/// What the ACME side should have fixed: keys kept in clear in a shared
/// store, validations nobody here answered.
fn acme_warnings(state: &ApiState) -> Vec<Warning> {
    use crate::config::problem::Notice;
    let mut out: Vec<Warning> = state
        .certificates
        .storage_views()
        .into_iter()
        .filter(|(_, v)| v.storage.encrypted == Some(false))
        .map(|(resolver, v)| {
            Warning::new(
                Notice::AcmeKeysInClear {
                    resolver,
                    location: v.storage.location,
                },
                None,
            )
        })
        .collect();
    out.extend(
        state
            .registries
            .tls
            .challenges
            .unanswered()
            .into_iter()
            .map(|u| {
                Warning::new(
                    Notice::AcmeUnanswered {
                        challenge: u.challenge.to_owned(),
                        name: u.name,
                    },
                    None,
                )
            }),
    );
    out
}

/// `/api/rawdata`: every router, service and middleware by qualified name,
/// HTTP, TCP and UDP, in Traefik's sections.
#[derive(Debug, Serialize)]
pub struct RawDataView {
    /// Routers by name.
    pub routers: BTreeMap<String, RouterView>,
    /// Services by name.
    pub services: BTreeMap<String, ServiceView>,
    /// Middlewares by name.
    pub middlewares: BTreeMap<String, MiddlewareView>,
    /// TCP routers by name (left out when there are none, as Traefik).
    #[serde(rename = "tcpRouters", skip_serializing_if = "BTreeMap::is_empty")]
    pub tcp_routers: BTreeMap<String, super::tcp::TcpRouterView>,
    /// TCP middlewares by name.
    #[serde(rename = "tcpMiddlewares", skip_serializing_if = "BTreeMap::is_empty")]
    pub tcp_middlewares: BTreeMap<String, super::tcp::TcpMiddlewareView>,
    /// TCP services by name.
    #[serde(rename = "tcpServices", skip_serializing_if = "BTreeMap::is_empty")]
    pub tcp_services: BTreeMap<String, super::tcp::TcpServiceView>,
    /// UDP routers by name.
    #[serde(rename = "udpRouters", skip_serializing_if = "BTreeMap::is_empty")]
    pub udp_routers: BTreeMap<String, super::tcp::UdpRouterView>,
    /// UDP services by name.
    #[serde(rename = "udpServices", skip_serializing_if = "BTreeMap::is_empty")]
    pub udp_services: BTreeMap<String, super::tcp::UdpServiceView>,
}

/// `/api/rawdata`.
pub fn rawdata(state: &ApiState) -> RawDataView {
    let rt = state.runtime.load_full();
    RawDataView {
        routers: routers(&rt)
            .into_iter()
            .map(|v| (v.name.clone(), v))
            .collect(),
        services: services(&rt, &state.registries.health_report())
            .into_iter()
            .map(|v| (v.name.clone(), v))
            .collect(),
        middlewares: middlewares(&rt)
            .into_iter()
            .map(|v| (v.name.clone(), v))
            .collect(),
        tcp_routers: super::tcp::routers(&rt)
            .into_iter()
            .map(|v| (v.name.clone(), v))
            .collect(),
        tcp_middlewares: super::tcp::middlewares(&rt)
            .into_iter()
            .map(|v| (v.name.clone(), v))
            .collect(),
        tcp_services: super::tcp::services(&rt)
            .into_iter()
            .map(|v| (v.name.clone(), v))
            .collect(),
        udp_routers: super::tcp::udp_routers(&rt)
            .into_iter()
            .map(|v| (v.name.clone(), v))
            .collect(),
        udp_services: super::tcp::udp_services(&rt)
            .into_iter()
            .map(|v| (v.name.clone(), v))
            .collect(),
    }
}

/// `/api/version`, with Traefik's capitalised keys.
#[derive(Debug, Serialize)]
pub struct VersionView {
    /// The version of gangway.
    #[serde(rename = "Version")]
    pub version: &'static str,
    /// Always `gangway`.
    #[serde(rename = "Codename")]
    pub codename: &'static str,
    /// When gangway started, in RFC 3339 with nanoseconds and UTC, as
    /// Traefik writes its start time (`2026-01-02T15:04:05.123456789Z`).
    #[serde(rename = "startDate")]
    pub start_date: String,
}

/// One provider on `/api/providers`: its state and how many objects it
/// defines (TCP and UDP ones named apart, when it defines any).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderView<'a> {
    /// Connection, last sync, last error and containers.
    #[serde(flatten)]
    pub report: &'a ProviderReport,
    /// Routers it defines.
    pub routers: usize,
    /// Services it defines.
    pub services: usize,
    /// Middlewares it defines.
    pub middlewares: usize,
    /// TCP routers it defines.
    #[serde(skip_serializing_if = "is_zero")]
    pub tcp_routers: usize,
    /// TCP services it defines.
    #[serde(skip_serializing_if = "is_zero")]
    pub tcp_services: usize,
    /// TCP middlewares it defines.
    #[serde(skip_serializing_if = "is_zero")]
    pub tcp_middlewares: usize,
    /// UDP routers it defines.
    #[serde(skip_serializing_if = "is_zero")]
    pub udp_routers: usize,
    /// UDP services it defines.
    #[serde(skip_serializing_if = "is_zero")]
    pub udp_services: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// `/api/providers`, by provider name.
pub fn providers(rt: &Runtime) -> BTreeMap<&str, ProviderView<'_>> {
    rt.report
        .providers
        .iter()
        .map(|(name, report)| {
            let suffix = format!("@{name}");
            let count = |map: &BTreeMap<String, ObjectReport>| {
                map.keys().filter(|k| k.ends_with(&suffix)).count()
            };
            let view = ProviderView {
                report,
                routers: count(&rt.report.routers),
                services: count(&rt.report.services),
                middlewares: count(&rt.report.middlewares),
                tcp_routers: count(&rt.report.tcp_routers),
                tcp_services: count(&rt.report.tcp_services),
                tcp_middlewares: count(&rt.report.tcp_middlewares),
                udp_routers: count(&rt.report.udp_routers),
                udp_services: count(&rt.report.udp_services),
            };
            (name.as_str(), view)
        })
        .collect()
}

// === containers ===

/// A container on `/api/containers`: what Docker said about it, whether it
/// is routed and why not, and the objects it defines, qualified.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerView {
    /// The provider that saw it.
    pub provider: String,
    /// The container's full id.
    pub id: String,
    /// Its name, without Docker's leading `/`.
    pub name: String,
    /// `com.docker.compose.project`, for compose containers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compose_project: Option<String>,
    /// `com.docker.compose.service`, for compose containers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compose_service: Option<String>,
    /// Docker's state: `running`, `exited`, …
    pub state: String,
    /// Docker's health status, for containers with a health check.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health: Option<String>,
    /// Whether it receives traffic now.
    pub routed: bool,
    /// Why it does not, as a code, when it does not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<NotRouted>,
    /// The reason in words, or problems that did not stop it being routed.
    pub reasons: Vec<ErrorView>,
    /// The same sentences under the provider's own name for them, kept for
    /// clients written before `reasons`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<ErrorView>,
    /// Routers it defines, qualified.
    pub routers: Vec<String>,
    /// Services it defines, qualified.
    pub services: Vec<String>,
    /// For the Swarm provider: the service and task it stands for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swarm: Option<SwarmTask>,
    /// No label of the provider's prefix: nothing asks for it to be
    /// routed, so the dashboard does not count it as a problem.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unlabelled: bool,
}

impl ContainerView {
    /// The view of one container `provider` reported.
    pub fn new(provider: &str, record: &ContainerRecord) -> Self {
        let ContainerRecord {
            id,
            name,
            compose_project,
            compose_service,
            state,
            health,
            routed,
            reason,
            messages,
            routers,
            services,
            swarm,
            unlabelled,
        } = record;
        let qualify = |names: &[String]| -> Vec<String> {
            names.iter().map(|n| format!("{n}@{provider}")).collect()
        };
        ContainerView {
            provider: provider.to_owned(),
            id: id.clone(),
            name: name.clone(),
            compose_project: compose_project.clone(),
            compose_service: compose_service.clone(),
            state: state.clone(),
            health: health.clone(),
            routed: *routed,
            reason: *reason,
            reasons: ErrorView::all(messages),
            messages: ErrorView::all(messages),
            routers: qualify(routers),
            services: qualify(services),
            swarm: swarm.clone(),
            unlabelled: *unlabelled,
        }
    }
}

// === certificates ===

/// A certificate on `/api/certificates`, tagged by its `source`.
#[derive(Debug, Serialize)]
#[serde(tag = "source", rename_all = "lowercase")]
pub enum CertificateView {
    /// Obtained by a certificate resolver, with its order state.
    Acme(Box<CertificateState>),
    /// Loaded from `tls.certificates`.
    File {
        /// The certificate as loaded.
        #[serde(flatten)]
        cert: FileCertificate,
        /// Whether it is still valid.
        status: FileCertificateStatus,
        /// The TLS routers with a host it is served for.
        routers: Vec<String>,
        /// The TCP routers gangway terminates TLS for with a `HostSNI`
        /// name it is served for.
        #[serde(rename = "tcpRouters", skip_serializing_if = "Vec::is_empty")]
        tcp_routers: Vec<String>,
    },
    /// The certificate served for a name no other one covers: gangway's
    /// generated self-signed one, or `tls.stores.default.defaultCertificate`.
    Default {
        /// Names, issuer, validity and whether it is self-signed.
        #[serde(flatten)]
        cert: crate::tls::DefaultCertificate,
        /// The TLS routers with a host it is served for.
        routers: Vec<String>,
        /// The terminating TCP routers it is served to (as for `File`).
        #[serde(rename = "tcpRouters", skip_serializing_if = "Vec::is_empty")]
        tcp_routers: Vec<String>,
        /// Why clients may refuse it, when they will.
        #[serde(skip_serializing_if = "Option::is_none")]
        warning: Option<String>,
    },
}

/// Whether a certificate from a file is still valid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FileCertificateStatus {
    /// Within its validity.
    Valid,
    /// Past its end of validity.
    Expired,
}

/// A certificate with the id `/api/certificates/{id}` finds it by.
#[derive(Debug, Serialize)]
pub struct CertificateItem {
    /// Stable while the certificate's source and names stay: a digest of
    /// its source (resolver or file) and its names, in hex.
    pub id: String,
    /// The certificate.
    #[serde(flatten)]
    pub certificate: CertificateView,
}

impl CertificateView {
    /// What tells this certificate from every other one: its source and
    /// its names.
    fn identity(&self) -> String {
        let (source, key, domains) = match self {
            CertificateView::Acme(c) => ("acme", c.resolver.as_str(), &c.domains),
            CertificateView::File { cert, .. } => ("file", cert.cert_file.as_str(), &cert.domains),
            CertificateView::Default { cert, .. } => ("default", "", &cert.domains),
        };
        format!("{source}\n{key}\n{}", domains.join("\n"))
    }

    /// The id of [`CertificateItem`]: the first 16 hex digits of the
    /// identity's SHA-256, so that it is the same on every instance and
    /// after a restart.
    pub fn id(&self) -> String {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(self.identity().as_bytes());
        digest[..8].iter().map(|b| format!("{b:02x}")).collect()
    }

    fn not_after(&self) -> Option<i64> {
        match self {
            CertificateView::Acme(c) => c.not_after,
            CertificateView::File { cert, .. } => Some(cert.not_after),
            CertificateView::Default { cert, .. } => Some(cert.not_after),
        }
    }
}

/// The source a certificate from `tls.certificates` is served as.
fn file_source(c: &FileCertificate) -> crate::tls::CertificateSource {
    crate::tls::CertificateSource::File {
        cert_file: c.cert_file.clone(),
    }
}

/// The certificates for `/api/certificates`: ACME ones with their order
/// state, then file ones (status `valid` or `expired`), soonest expiry first
/// within each source.
pub fn certificate_views(state: &ApiState) -> Vec<CertificateItem> {
    let now = crate::clock::unix_time();
    // One snapshot for both the list and the routers' view of it, so the
    // two cannot disagree about a certificate that changes meanwhile.
    let orders = state.certificates.snapshot();
    let rt = state.runtime.load_full();
    let all_routers = state.router_views.of(&rt, &orders);
    let mut acme: Vec<CertificateView> = orders
        .into_iter()
        .map(|c| CertificateView::Acme(Box::new(c)))
        .collect();
    acme.sort_by_key(|c| c.not_after().unwrap_or(i64::MAX));
    // The routers served a certificate from `source`, by name.
    let served_to = |source: &crate::tls::CertificateSource| -> Vec<String> {
        all_routers
            .iter()
            .filter(|r| r.certificates.iter().any(|c| c.source == *source))
            .map(|r| r.name.clone())
            .collect()
    };
    let tcp = tcp_certificate_sources(&rt);
    let tcp_served_to = |source: &crate::tls::CertificateSource| -> Vec<String> {
        tcp.iter()
            .filter(|(_, sources)| sources.contains(source))
            .map(|(name, _)| name.clone())
            .collect()
    };
    let mut files: Vec<CertificateView> = rt
        .tls
        .files
        .iter()
        .map(|c| CertificateView::File {
            cert: c.clone(),
            status: if c.not_after <= now {
                FileCertificateStatus::Expired
            } else {
                FileCertificateStatus::Valid
            },
            routers: served_to(&file_source(c)),
            tcp_routers: tcp_served_to(&file_source(c)),
        })
        .collect();
    files.sort_by_key(|c| c.not_after().unwrap_or(i64::MAX));
    acme.extend(files);
    if let Some(served) = &rt.tls.served {
        acme.push(CertificateView::Default {
            warning: served.default.self_signed.then(|| UNTRUSTED.to_owned()),
            cert: served.default.clone(),
            routers: served_to(&crate::tls::CertificateSource::Default),
            tcp_routers: tcp_served_to(&crate::tls::CertificateSource::Default),
        });
    }
    acme.into_iter()
        .map(|certificate| CertificateItem {
            id: certificate.id(),
            certificate,
        })
        .collect()
}
