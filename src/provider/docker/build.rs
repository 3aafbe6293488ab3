//! Every container the provider knows → one dynamic configuration, the
//! provenance of each object and a record per container. Pure: the time is
//! an argument.
//!
//! Traefik's implicit rules are followed: a container without router labels
//! gets one router with the default rule; a router without `service` uses
//! the container's only service; without service labels a service named
//! after the container (compose: `service_project`, normalized) uses its
//! only exposed port. Containers of one compose service (scaling) and
//! identical definitions from several containers join one object whose
//! load balancer has every container's server.

use super::Settings;
use super::container::{ContainerView, Health, RunState};
use super::default_rule::Model;
use super::labels::{ContainerLabels, LabelError, Objects, ServerLabels, parse_labels};
use crate::config::Dynamic;
use crate::config::dynamic::tcp::{
    TcpLoadBalancer, TcpMiddleware, TcpRouter, TcpServer, TcpService,
};
use crate::config::dynamic::udp::{UdpLoadBalancer, UdpRouter, UdpServer, UdpService};
use crate::config::dynamic::{GeneratedCert, LoadBalancer, Middleware, Router, Server, Service};
use crate::config::problem::{ConfigError, ObjectKind, ObjectRef, Origin, Problem};
use crate::config::provenance::{ContainerRecord, NotRouted, ObjectDetail, ProviderDetail, Source};
use crate::config::static_config::ConflictPolicy;
use crate::template::normalize;
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

#[cfg(test)]
mod tests;

/// What one build produced.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Built {
    /// The provider's configuration, names bare.
    pub dynamic: Dynamic,
    /// Provenance, dropped objects and container records.
    pub detail: ProviderDetail,
    /// When (ms since the epoch) the result changes by itself: a stopped
    /// container's grace period ends.
    pub next_change_ms: Option<u64>,
}

/// What keeps a container's server out, with its reason.
type ServerProblem = (NotRouted, String);

/// An object left out: its problems (each with the label at fault, when
/// one is) and the labels behind it.
/// A broken object's problems (each with its label), its labels, and what
/// its labels read as.
type Broken = (
    Vec<(Problem, Option<String>)>,
    Vec<String>,
    Option<serde_json::Value>,
);

/// Object kinds by their index in `Contribution::broken`.
const KINDS: [ObjectKind; 8] = [
    ObjectKind::Router,
    ObjectKind::Service,
    ObjectKind::Middleware,
    ObjectKind::TcpRouter,
    ObjectKind::TcpService,
    ObjectKind::TcpMiddleware,
    ObjectKind::UdpRouter,
    ObjectKind::UdpService,
];

/// One container's objects, before they meet other containers'.
struct Contribution<'a> {
    view: &'a ContainerView,
    serving: bool,
    routers: BTreeMap<String, (Router, Vec<String>)>,
    services: BTreeMap<String, (Service, Vec<String>)>,
    middlewares: BTreeMap<String, (Middleware, Vec<String>)>,
    tcp_routers: BTreeMap<String, (TcpRouter, Vec<String>)>,
    tcp_services: BTreeMap<String, (TcpService, Vec<String>)>,
    tcp_middlewares: BTreeMap<String, (TcpMiddleware, Vec<String>)>,
    udp_routers: BTreeMap<String, (UdpRouter, Vec<String>)>,
    udp_services: BTreeMap<String, (UdpService, Vec<String>)>,
    /// Objects of this container that are out, by kind.
    broken: [BTreeMap<String, Broken>; 8],
    /// Services this container adds a server to.
    serves: BTreeSet<String>,
    /// TCP services this container adds a server to.
    tcp_serves: BTreeSet<String>,
    /// UDP services this container adds a server to.
    udp_serves: BTreeSet<String>,
    /// Whether another container's different definition won over one of its objects.
    lost_conflict: bool,
    /// The first problem that kept a server out.
    problem: Option<ServerProblem>,
    /// Problems of its services that left them working, by service name.
    warnings: Vec<(String, Problem)>,
    /// `tls.stores.default.defaultGeneratedCert`, when its labels give it.
    generated_cert: Option<GeneratedCert>,
    record: ContainerRecord,
}

const ROUTER: usize = 0;
const SERVICE: usize = 1;
const MIDDLEWARE: usize = 2;
const TCP_ROUTER: usize = 3;
const TCP_SERVICE: usize = 4;
const TCP_MIDDLEWARE: usize = 5;
const UDP_ROUTER: usize = 6;
const UDP_SERVICE: usize = 7;

/// Every kind's objects as merged so far, by name.
#[derive(Default)]
struct Merged {
    routers: BTreeMap<String, Slot<Router>>,
    services: BTreeMap<String, Slot<Service>>,
    middlewares: BTreeMap<String, Slot<Middleware>>,
    tcp_routers: BTreeMap<String, Slot<TcpRouter>>,
    tcp_services: BTreeMap<String, Slot<TcpService>>,
    tcp_middlewares: BTreeMap<String, Slot<TcpMiddleware>>,
    udp_routers: BTreeMap<String, Slot<UdpRouter>>,
    udp_services: BTreeMap<String, Slot<UdpService>>,
}

/// Builds the configuration from every container.
pub fn build(views: &[ContainerView], s: &Settings, now_ms: u64) -> Built {
    let mut records = Vec::new();
    let mut contributions = Vec::new();
    let mut next_change_ms: Option<u64> = None;
    for view in views {
        match contribute(view, s, now_ms, &mut next_change_ms) {
            Ok(c) => contributions.push(c),
            Err(record) => records.push(*record),
        }
    }
    // Running containers first, then the oldest: the first definition of a
    // name is the one kept, so a stale definition from a stopped container
    // never wins over a running one.
    contributions.sort_by(|a, b| {
        (!a.serving, a.view.created_ns, &a.view.id).cmp(&(
            !b.serving,
            b.view.created_ns,
            &b.view.id,
        ))
    });
    let merged = merge_all(&mut contributions, s);
    let mut detail = left_out(&contributions, &merged, s);
    let dynamic = finish_all(&contributions, merged, &mut detail);
    for c in contributions {
        records.push(container_record(c, &dynamic));
    }
    records.sort_by(|a, b| (&a.name, &a.id).cmp(&(&b.name, &b.id)));
    detail.containers = records;
    Built {
        dynamic,
        detail,
        next_change_ms,
    }
}

/// Each container's objects merged with the others', in `contributions`'
/// order: the first definition of a name is the one kept.
fn merge_all(contributions: &mut [Contribution<'_>], s: &Settings) -> Merged {
    let mut merged = Merged::default();
    for c in contributions.iter_mut() {
        let src = source(c.view);
        for (name, (r, labels)) in std::mem::take(&mut c.routers) {
            merge(&mut merged.routers, ROUTER, name, r, c, &src, labels, s);
        }
        for (name, (svc, labels)) in std::mem::take(&mut c.services) {
            let urls = svc.load_balancer.iter().flat_map(|lb| &lb.servers);
            let src = with_servers(&src, urls.map(|s| s.url.clone()));
            merge(&mut merged.services, SERVICE, name, svc, c, &src, labels, s);
        }
        for (name, (m, labels)) in std::mem::take(&mut c.middlewares) {
            merge(
                &mut merged.middlewares,
                MIDDLEWARE,
                name,
                m,
                c,
                &src,
                labels,
                s,
            );
        }
        for (name, (r, labels)) in std::mem::take(&mut c.tcp_routers) {
            merge(
                &mut merged.tcp_routers,
                TCP_ROUTER,
                name,
                r,
                c,
                &src,
                labels,
                s,
            );
        }
        for (name, (svc, labels)) in std::mem::take(&mut c.tcp_services) {
            let addresses = svc.load_balancer.iter().flat_map(|lb| &lb.servers);
            let src = with_servers(&src, addresses.map(|s| s.address.clone()));
            merge(
                &mut merged.tcp_services,
                TCP_SERVICE,
                name,
                svc,
                c,
                &src,
                labels,
                s,
            );
        }
        for (name, (m, labels)) in std::mem::take(&mut c.tcp_middlewares) {
            merge(
                &mut merged.tcp_middlewares,
                TCP_MIDDLEWARE,
                name,
                m,
                c,
                &src,
                labels,
                s,
            );
        }
        for (name, (r, labels)) in std::mem::take(&mut c.udp_routers) {
            merge(
                &mut merged.udp_routers,
                UDP_ROUTER,
                name,
                r,
                c,
                &src,
                labels,
                s,
            );
        }
        for (name, (svc, labels)) in std::mem::take(&mut c.udp_services) {
            let addresses = svc.load_balancer.iter().flat_map(|lb| &lb.servers);
            let src = with_servers(&src, addresses.map(|s| s.address.clone()));
            merge(
                &mut merged.udp_services,
                UDP_SERVICE,
                name,
                svc,
                c,
                &src,
                labels,
                s,
            );
        }
    }
    merged
}

/// The objects each container left out, with their problems: a warning
/// where another container's definition of the name serves, an error where
/// none does.
fn left_out(contributions: &[Contribution<'_>], merged: &Merged, s: &Settings) -> ProviderDetail {
    let mut detail = ProviderDetail::default();
    for c in contributions {
        let src = source(c.view);
        for (kind, into) in [
            (ROUTER, &mut detail.routers),
            (SERVICE, &mut detail.services),
            (MIDDLEWARE, &mut detail.middlewares),
            (TCP_ROUTER, &mut detail.tcp_routers),
            (TCP_SERVICE, &mut detail.tcp_services),
            (TCP_MIDDLEWARE, &mut detail.tcp_middlewares),
            (UDP_ROUTER, &mut detail.udp_routers),
            (UDP_SERVICE, &mut detail.udp_services),
        ] {
            for (name, (errors, labels, read)) in &c.broken[kind] {
                let live = match kind {
                    ROUTER => merged.routers.get(name).is_some_and(|s| !s.dropped),
                    SERVICE => merged.services.get(name).is_some_and(|s| !s.dropped),
                    MIDDLEWARE => merged.middlewares.get(name).is_some_and(|s| !s.dropped),
                    TCP_ROUTER => merged.tcp_routers.get(name).is_some_and(|s| !s.dropped),
                    TCP_SERVICE => merged.tcp_services.get(name).is_some_and(|s| !s.dropped),
                    TCP_MIDDLEWARE => merged.tcp_middlewares.get(name).is_some_and(|s| !s.dropped),
                    UDP_ROUTER => merged.udp_routers.get(name).is_some_and(|s| !s.dropped),
                    _ => merged.udp_services.get(name).is_some_and(|s| !s.dropped),
                };
                let d = into.entry(name.clone()).or_default();
                d.sources.push(Source {
                    labels: labels.clone(),
                    ..src.clone()
                });
                // Left out (no other container defines it): what its
                // labels say, so that the API shows it as written.
                if !live && d.read.is_none() {
                    d.read.clone_from(read);
                }
                for (problem, label) in errors {
                    let object = ObjectRef::new(KINDS[kind], &format!("{name}@{}", s.provider));
                    let origin = origin(c.view, label.clone());
                    if live {
                        let problem = Problem::Ignored {
                            problem: Box::new(problem.clone()),
                        };
                        d.warnings
                            .push(ConfigError::new(object, problem).with_origin(origin));
                    } else {
                        d.errors
                            .push(ConfigError::new(object, problem.clone()).with_origin(origin));
                    }
                }
            }
        }
        for (name, problem) in &c.warnings {
            let d = detail.services.entry(name.clone()).or_default();
            // Each container of a scaled service says the same: once is enough.
            if d.warnings.iter().any(|w| w.problem == *problem) {
                continue;
            }
            let object = ObjectRef::new(ObjectKind::Service, &format!("{name}@{}", s.provider));
            d.warnings
                .push(ConfigError::new(object, problem.clone()).with_origin(origin(c.view, None)));
        }
    }
    detail
}

/// The configuration of what was merged, each object's detail beside it.
fn finish_all(
    contributions: &[Contribution<'_>],
    merged: Merged,
    detail: &mut ProviderDetail,
) -> Dynamic {
    let mut dynamic = Dynamic::default();
    // As with objects, the first serving container that gives the default
    // store's generated certificate is the one kept.
    if let Some(generated) = contributions
        .iter()
        .filter(|c| c.serving)
        .find_map(|c| c.generated_cert.clone())
    {
        dynamic.tls.stores.insert(
            "default".to_owned(),
            crate::config::dynamic::TlsStore {
                default_generated_cert: Some(generated),
                ..Default::default()
            },
        );
    }
    let Merged {
        routers,
        services,
        middlewares,
        tcp_routers,
        tcp_services,
        tcp_middlewares,
        udp_routers,
        udp_services,
    } = merged;
    finish(&mut dynamic.http.routers, &mut detail.routers, routers);
    finish(&mut dynamic.http.services, &mut detail.services, services);
    finish(
        &mut dynamic.http.middlewares,
        &mut detail.middlewares,
        middlewares,
    );
    finish(
        &mut dynamic.tcp.routers,
        &mut detail.tcp_routers,
        tcp_routers,
    );
    finish(
        &mut dynamic.tcp.services,
        &mut detail.tcp_services,
        tcp_services,
    );
    finish(
        &mut dynamic.tcp.middlewares,
        &mut detail.tcp_middlewares,
        tcp_middlewares,
    );
    finish(
        &mut dynamic.udp.routers,
        &mut detail.udp_routers,
        udp_routers,
    );
    finish(
        &mut dynamic.udp.services,
        &mut detail.udp_services,
        udp_services,
    );
    dynamic
}

/// A container's record, routed or with why not, once `dynamic` says which
/// of its services made it.
fn container_record(c: Contribution<'_>, dynamic: &Dynamic) -> ContainerRecord {
    let mut record = c.record;
    let live = c
        .serves
        .iter()
        .filter(|name| dynamic.http.services.contains_key(*name))
        .count()
        + c.tcp_serves
            .iter()
            .filter(|name| dynamic.tcp.services.contains_key(*name))
            .count()
        + c.udp_serves
            .iter()
            .filter(|name| dynamic.udp.services.contains_key(*name))
            .count();
    record.routed = c.serving && live > 0;
    if !record.routed && record.reason.is_none() {
        let (reason, message) = c.problem.clone().unwrap_or_else(|| {
            if c.lost_conflict
                || (c.serving
                    && !(c.serves.is_empty() && c.tcp_serves.is_empty() && c.udp_serves.is_empty()))
            {
                (
                    NotRouted::Conflict,
                    "its services are defined differently by another container".to_owned(),
                )
            } else {
                (
                    NotRouted::LabelError,
                    "none of its services can be used".to_owned(),
                )
            }
        });
        record.reason = Some(reason);
        record.messages.insert(0, message);
    }
    record
}

fn source(view: &ContainerView) -> Source {
    Source {
        container_id: view.id.clone(),
        container_name: view.name.clone(),
        compose_project: view.compose_project().map(str::to_owned),
        compose_service: view.compose_service().map(str::to_owned),
        labels: Vec::new(),
        servers: Vec::new(),
        swarm: view.swarm.clone(),
    }
}

/// A service's source: the container's, with the servers it adds.
fn with_servers(src: &Source, servers: impl Iterator<Item = String>) -> Source {
    Source {
        servers: servers.collect(),
        ..src.clone()
    }
}

fn origin(view: &ContainerView, label: Option<String>) -> Origin {
    Origin::Container {
        id: view.id.clone(),
        name: view.name.clone(),
        label,
    }
}

fn record(view: &ContainerView) -> ContainerRecord {
    ContainerRecord {
        id: view.id.clone(),
        name: view.name.clone(),
        compose_project: view.compose_project().map(str::to_owned),
        compose_service: view.compose_service().map(str::to_owned),
        state: view.state.as_str().to_owned(),
        health: view.health.map(|h| h.as_str().to_owned()),
        swarm: view.swarm.clone(),
        ..ContainerRecord::default()
    }
}

fn not_routed(
    mut record: ContainerRecord,
    reason: NotRouted,
    message: String,
) -> Box<ContainerRecord> {
    record.reason = Some(reason);
    record.messages.insert(0, message);
    Box::new(record)
}

/// Why a container cannot take traffic now; None when it can.
fn down_reason(view: &ContainerView) -> Option<NotRouted> {
    Some(match view.state {
        RunState::Running if view.draining => NotRouted::Draining,
        RunState::Running => match view.health {
            Some(Health::Starting) => NotRouted::Starting,
            Some(Health::Unhealthy) => NotRouted::Unhealthy,
            _ => return None,
        },
        RunState::Paused => NotRouted::Paused,
        RunState::Restarting => NotRouted::Restarting,
        RunState::Removed => NotRouted::Removed,
        RunState::Created | RunState::Removing | RunState::Exited | RunState::Dead => {
            NotRouted::Stopped
        }
    })
}

fn describe(reason: NotRouted) -> &'static str {
    match reason {
        NotRouted::Draining => "it is being stopped",
        NotRouted::Starting => "its health check has not passed yet",
        NotRouted::Unhealthy => "its health check fails",
        NotRouted::Paused => "it is paused",
        NotRouted::Restarting => "it is restarting",
        NotRouted::Removed => "it was removed",
        _ => "it is not running",
    }
}

/// Whether the container is routed at all, as its labels, the provider's
/// options and its state say: its record (with why it is kept while down,
/// when it is), or the record of why it is left out.
fn admit(
    view: &ContainerView,
    s: &Settings,
    labels: &ContainerLabels,
    mut rec: ContainerRecord,
    now_ms: u64,
    next_change_ms: &mut Option<u64>,
) -> Result<ContainerRecord, Box<ContainerRecord>> {
    let p = &s.prefix;
    rec.unlabelled = !view.labels.keys().any(|key| {
        key.get(..p.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(p))
            && key.as_bytes().get(p.len()) == Some(&b'.')
    });
    match labels.enable {
        Some(false) => {
            return Err(not_routed(
                rec,
                NotRouted::NotEnabled,
                format!("`{p}.enable=false`"),
            ));
        }
        None if s.exposed_by_default == Some(false) => {
            let provider = s.provider;
            return Err(not_routed(
                rec,
                NotRouted::NotEnabled,
                format!(
                    "no `{p}.enable=true` label, and providers.{provider}.exposedByDefault is false"
                ),
            ));
        }
        // Traefik would route a bare container too; one started for
        // something else is kept out unless the option says so.
        None if s.exposed_by_default.is_none() && rec.unlabelled => {
            let provider = s.provider;
            return Err(not_routed(
                rec,
                NotRouted::NotEnabled,
                format!(
                    "no label under `{p}.`, and providers.{provider}.exposedByDefault is not given: only labelled containers are routed"
                ),
            ));
        }
        _ => {}
    }
    if let Some(c) = &s.constraints
        && !c.matches(&view.labels)
    {
        {
            return Err(not_routed(
                rec,
                NotRouted::ConstraintNotMet,
                "its labels do not satisfy providers.docker.constraints".to_owned(),
            ));
        }
    }
    if view.is_one_off() && !s.include_one_off {
        return Err(not_routed(
            rec,
            NotRouted::OneOff,
            "a one-off container (docker compose run); set providers.docker.includeOneOff to route these".to_owned(),
        ));
    }
    if let Some(reason) = down_reason(view) {
        let health_only = matches!(reason, NotRouted::Starting | NotRouted::Unhealthy);
        let asleep = s.keep.contains(&view.id);
        let forever = labels.allow_non_running || asleep || (s.allow_empty_services && health_only);
        let until = view
            .down_since_ms
            .map(|since| since.saturating_add(s.down_grace.as_millis() as u64));
        let kept = forever || until.is_some_and(|u| u > now_ms);
        if !kept {
            return Err(not_routed(
                rec,
                reason,
                format!("not routed: {}", describe(reason)),
            ));
        }
        rec.reason = Some(reason);
        rec.messages.push(match until {
            _ if asleep => {
                "asleep (gangway.sleep): its routers stay, and the first request starts it"
                    .to_owned()
            }
            Some(u) if !forever => {
                *next_change_ms = Some(next_change_ms.map_or(u, |n| n.min(u)));
                format!(
                    "{}; its routers answer 503 for up to {} after it went down",
                    describe(reason),
                    crate::config::Duration(s.down_grace)
                )
            }
            _ => format!(
                "{}; its routers answer 503 until it is back",
                describe(reason)
            ),
        });
    }
    Ok(rec)
}

fn contribute<'a>(
    view: &'a ContainerView,
    s: &Settings,
    now_ms: u64,
    next_change_ms: &mut Option<u64>,
) -> Result<Contribution<'a>, Box<ContainerRecord>> {
    let labels = parse_labels(&s.prefix, &view.labels);
    let rec = admit(view, s, &labels, record(view), now_ms, next_change_ms)?;
    let serving = view.can_serve();
    let any_http =
        !labels.routers.is_empty() || !labels.services.is_empty() || !labels.middlewares.is_empty();
    let any_tcp = !labels.tcp_routers.is_empty()
        || !labels.tcp_services.is_empty()
        || !labels.tcp_middlewares.is_empty();
    let any_udp = !labels.udp_routers.is_empty() || !labels.udp_services.is_empty();
    // As in Traefik: a container with TCP or UDP labels and no HTTP ones
    // gets no HTTP router or service of its own.
    let http = any_http || !(any_tcp || any_udp);

    let name = normalize(&match (view.compose_project(), view.compose_service()) {
        (Some(project), Some(service)) => format!("{service}_{project}"),
        _ => view.name.clone(),
    });
    let mut c = Contribution {
        view,
        serving,
        routers: BTreeMap::new(),
        services: BTreeMap::new(),
        middlewares: BTreeMap::new(),
        tcp_routers: BTreeMap::new(),
        tcp_services: BTreeMap::new(),
        tcp_middlewares: BTreeMap::new(),
        udp_routers: BTreeMap::new(),
        udp_services: BTreeMap::new(),
        broken: Default::default(),
        serves: BTreeSet::new(),
        tcp_serves: BTreeSet::new(),
        udp_serves: BTreeSet::new(),
        lost_conflict: false,
        problem: None,
        warnings: Vec::new(),
        generated_cert: labels.generated_cert.clone(),
        record: rec,
    };
    for e in &labels.errors {
        c.record.messages.push(e.to_string());
    }
    note_broken(&mut c, &labels);
    let service_names = contribute_services(&mut c, &labels, s, &name, http);
    contribute_routers(&mut c, &labels, s, &name, http, &service_names);
    for (n, m) in &labels.middlewares.parsed {
        let keys = labels
            .middlewares
            .labels
            .get(n)
            .cloned()
            .unwrap_or_default();
        c.middlewares.insert(n.clone(), (m.clone(), keys));
    }
    if any_tcp {
        contribute_tcp(&mut c, &labels, s, &name);
    }
    if any_udp {
        contribute_udp(&mut c, &labels, s, &name);
    }
    if c.routers.is_empty()
        && c.services.is_empty()
        && c.middlewares.is_empty()
        && c.tcp_routers.is_empty()
        && c.tcp_services.is_empty()
        && c.tcp_middlewares.is_empty()
        && c.udp_routers.is_empty()
        && c.udp_services.is_empty()
        && !labels.errors.is_empty()
    {
        c.problem.get_or_insert((
            NotRouted::LabelError,
            "none of its labels could be used".to_owned(),
        ));
    }
    Ok(c)
}

/// The objects whose labels could not be read, each with its problems,
/// labels and what they read as.
fn note_broken(c: &mut Contribution<'_>, labels: &ContainerLabels) {
    let broken_entry = |e: &LabelError| (e.problem(), Some(e.label().to_owned()));
    // (kind, broken objects, their labels, what their labels read as)
    let kinds = [
        (
            ROUTER,
            &labels.routers.broken,
            &labels.routers.labels,
            &labels.routers.read,
        ),
        (
            SERVICE,
            &labels.services.broken,
            &labels.services.labels,
            &labels.services.read,
        ),
        (
            MIDDLEWARE,
            &labels.middlewares.broken,
            &labels.middlewares.labels,
            &labels.middlewares.read,
        ),
        (
            TCP_ROUTER,
            &labels.tcp_routers.broken,
            &labels.tcp_routers.labels,
            &labels.tcp_routers.read,
        ),
        (
            TCP_SERVICE,
            &labels.tcp_services.broken,
            &labels.tcp_services.labels,
            &labels.tcp_services.read,
        ),
        (
            TCP_MIDDLEWARE,
            &labels.tcp_middlewares.broken,
            &labels.tcp_middlewares.labels,
            &labels.tcp_middlewares.read,
        ),
        (
            UDP_ROUTER,
            &labels.udp_routers.broken,
            &labels.udp_routers.labels,
            &labels.udp_routers.read,
        ),
        (
            UDP_SERVICE,
            &labels.udp_services.broken,
            &labels.udp_services.labels,
            &labels.udp_services.read,
        ),
    ];
    for (kind, objects_broken, objects_labels, objects_read) in kinds {
        for (n, errors) in objects_broken {
            c.broken[kind].insert(
                n.clone(),
                (
                    errors.iter().map(broken_entry).collect(),
                    objects_labels.get(n).cloned().unwrap_or_default(),
                    objects_read.get(n).cloned(),
                ),
            );
        }
    }
}

/// The container's HTTP services, each with its server when it serves;
/// returns their names.
fn contribute_services(
    c: &mut Contribution<'_>,
    labels: &ContainerLabels,
    s: &Settings,
    name: &str,
    http: bool,
) -> Vec<String> {
    let view = c.view;
    let serving = c.serving;
    // Services: the labelled ones, else one named after the container.
    let mut service_names: Vec<String> = labels.services.names().cloned().collect();
    let mut services: Vec<(String, Service, Vec<String>)> = labels
        .services
        .parsed
        .iter()
        .map(|(n, svc)| {
            let keys = labels.services.labels.get(n).cloned().unwrap_or_default();
            (n.clone(), svc.clone(), keys)
        })
        .collect();
    if service_names.is_empty() && http {
        service_names.push(name.to_owned());
        services.push((
            name.to_owned(),
            Service {
                load_balancer: Some(LoadBalancer::default()),
                ..Service::default()
            },
            Vec::new(),
        ));
    }
    for (svc_name, mut svc, keys) in services {
        if let (true, Some(lb)) = (serving, svc.load_balancer.as_mut()) {
            match server(
                view,
                s,
                labels.servers.get(&svc_name),
                labels.network.as_deref(),
                &svc_name,
            ) {
                Ok((server, chosen)) => {
                    lb.servers.push(server);
                    c.serves.insert(svc_name.clone());
                    if let Some(problem) = chosen {
                        c.record
                            .messages
                            .push(format!("service `{svc_name}`: {problem}"));
                        c.warnings.push((svc_name.clone(), problem));
                    }
                }
                Err((reason, message)) => {
                    c.record
                        .messages
                        .push(format!("service `{svc_name}`: {message}"));
                    c.problem
                        .get_or_insert((reason, format!("service `{svc_name}`: {message}")));
                    let problem = Problem::NoServer { reason, message };
                    c.broken[SERVICE].insert(svc_name, (vec![(problem, None)], keys, None));
                    continue;
                }
            }
        }
        c.record.services.push(svc_name.clone());
        c.services.insert(svc_name, (svc, keys));
    }
    service_names
}

/// The container's HTTP routers, with the default rule and its only
/// service where their labels give none.
fn contribute_routers(
    c: &mut Contribution<'_>,
    labels: &ContainerLabels,
    s: &Settings,
    name: &str,
    http: bool,
    service_names: &[String],
) {
    let view = c.view;
    let p = &s.prefix;
    // Routers: the labelled ones, else one with the default rule.
    let mut routers: Vec<(String, Router, Vec<String>)> = labels
        .routers
        .parsed
        .iter()
        .map(|(n, r)| {
            let keys = labels.routers.labels.get(n).cloned().unwrap_or_default();
            (n.clone(), r.clone(), keys)
        })
        .collect();
    if labels.routers.is_empty() && http {
        if service_names.len() > 1 {
            c.record.messages.push(format!(
                "no router: the container defines several services ({}) and no router",
                service_names.join(", ")
            ));
        } else {
            routers.push((name.to_owned(), Router::default(), Vec::new()));
        }
    }
    let model = Model {
        name,
        container_name: &view.name,
        project: view.compose_project().unwrap_or_default(),
        service: view.compose_service().unwrap_or_default(),
        domain: &s.domain,
        labels: Some(&view.labels),
    };
    for (router_name, mut router, keys) in routers {
        let mut error = None;
        if router.rule.is_empty() {
            match s.default_rule.render(&model) {
                Ok(rule) if rule.trim().is_empty() => {
                    error =
                        Some("no `rule` label, and the default rule comes out empty".to_owned());
                }
                Ok(rule) => router.rule = rule,
                Err(e) => error = Some(format!("the default rule: {e}")),
            }
        }
        if router.service.is_empty() {
            match service_names {
                [only] => router.service.clone_from(only),
                many => {
                    error = Some(format!(
                        "no `service` label, and the container defines several services ({}); set `{p}.http.routers.{router_name}.service`",
                        many.join(", ")
                    ));
                }
            }
        }
        match error {
            Some(e) => {
                c.record
                    .messages
                    .push(format!("router `{router_name}`: {e}"));
                let problem = Problem::BadValue { message: e };
                c.broken[ROUTER].insert(router_name, (vec![(problem, None)], keys, None));
            }
            None => {
                c.record.routers.push(router_name.clone());
                c.routers.insert(router_name, (router, keys));
            }
        }
    }
}

/// TCP or UDP: what their labels share is read by the same code, which
/// differs only in these words and slots.
#[derive(Clone, Copy)]
enum Stream {
    Tcp,
    Udp,
}

impl Stream {
    /// The labels' word (`tcp`), the messages' (`TCP`), and the kinds'
    /// slots in `Contribution::broken` (router, service).
    const fn words(self) -> (&'static str, &'static str, usize, usize) {
        match self {
            Stream::Tcp => ("tcp", "TCP", TCP_ROUTER, TCP_SERVICE),
            Stream::Udp => ("udp", "UDP", UDP_ROUTER, UDP_SERVICE),
        }
    }
}

/// An object by name, with the labels behind it.
type Labelled<T> = (String, T, Vec<String>);

/// The services of one kind a container's labels define, with their
/// labels, plus `implicit` named after the container when it has routers
/// of that kind and no service; and every service name a router may
/// default to.
fn stream_services<T: Clone>(
    objects: &Objects<T>,
    has_routers: bool,
    name: &str,
    implicit: T,
) -> (Vec<String>, Vec<Labelled<T>>) {
    let mut names: Vec<String> = objects.names().cloned().collect();
    let mut services: Vec<_> = objects.with_labels().collect();
    if names.is_empty() && has_routers {
        names.push(name.to_owned());
        services.push((name.to_owned(), implicit, Vec::new()));
    }
    (names, services)
}

/// The container's `host:port` for a server of the TCP or UDP service
/// `svc`; `None`, with the service out and the reason recorded on the
/// container, when it has no usable port or address.
fn stream_server(
    c: &mut Contribution<'_>,
    (labels, s): (&ContainerLabels, &Settings),
    stream: Stream,
    (svc, keys): (&str, &[String]),
    label_port: Option<u16>,
) -> Option<String> {
    let (word, upper, _, slot) = stream.words();
    let key = format!(
        "{}.{word}.services.{svc}.loadbalancer.server.port",
        s.prefix
    );
    let found = exposed_port(c.view, label_port, key, word).and_then(|(port, chosen)| {
        let ip = address(c.view, s, labels.network.as_deref())?;
        Ok((format!("{}:{port}", host(ip)), chosen))
    });
    match found {
        Ok((address, chosen)) => {
            if let Some(problem) = chosen {
                c.record
                    .messages
                    .push(format!("{upper} service `{svc}`: {problem}"));
            }
            Some(address)
        }
        Err((reason, message)) => {
            let message_for_container = format!("{upper} service `{svc}`: {message}");
            c.record.messages.push(message_for_container.clone());
            c.problem.get_or_insert((reason, message_for_container));
            let problem = Problem::NoServer { reason, message };
            c.broken[slot].insert(svc.to_owned(), (vec![(problem, None)], keys.to_vec(), None));
            None
        }
    }
}

/// Why a TCP or UDP router of a container is left out.
#[derive(Debug, thiserror::Error)]
enum StreamRouterError {
    /// A TCP router without `rule`.
    #[error(
        "no `rule` label: a TCP router has no default rule; set `{prefix}.tcp.routers.{router}.rule` (HostSNI(`*`) takes the whole entry point)"
    )]
    NoRule {
        /// The label prefix.
        prefix: String,
        /// The router's name.
        router: String,
    },
    /// No `service` label, and no service of the kind to default to.
    #[error(
        "no `service` label, and the container defines no {upper} service; set `{prefix}.{word}.routers.{router}.service`"
    )]
    NoService {
        /// `TCP` or `UDP`.
        upper: &'static str,
        /// `tcp` or `udp`.
        word: &'static str,
        /// The label prefix.
        prefix: String,
        /// The router's name.
        router: String,
    },
    /// No `service` label, and several services of the kind to choose from.
    #[error(
        "no `service` label, and the container defines several {upper} services ({}); set `{prefix}.{word}.routers.{router}.service`",
        .services.join(", ")
    )]
    SeveralServices {
        /// `TCP` or `UDP`.
        upper: &'static str,
        /// `tcp` or `udp`.
        word: &'static str,
        /// The label prefix.
        prefix: String,
        /// The router's name.
        router: String,
        /// The container's services of the kind.
        services: Vec<String>,
    },
}

/// A TCP or UDP router's service when its labels name none: the
/// container's only service of that kind; otherwise why it has none.
fn default_stream_service(
    stream: Stream,
    prefix: &str,
    router: &str,
    services: &[String],
) -> Result<String, StreamRouterError> {
    let (word, upper, ..) = stream.words();
    match services {
        [only] => Ok(only.clone()),
        [] => Err(StreamRouterError::NoService {
            upper,
            word,
            prefix: prefix.to_owned(),
            router: router.to_owned(),
        }),
        many => Err(StreamRouterError::SeveralServices {
            upper,
            word,
            prefix: prefix.to_owned(),
            router: router.to_owned(),
            services: many.to_vec(),
        }),
    }
}

/// Leaves a TCP or UDP router of the container out, with why.
fn break_stream_router(
    c: &mut Contribution<'_>,
    stream: Stream,
    (router, keys): (&str, Vec<String>),
    error: &StreamRouterError,
) {
    let (_, upper, slot, _) = stream.words();
    let message = error.to_string();
    c.record
        .messages
        .push(format!("{upper} router `{router}`: {message}"));
    let problem = Problem::BadValue { message };
    c.broken[slot].insert(router.to_owned(), (vec![(problem, None)], keys, None));
}

/// The container's TCP routers, services (with its server) and
/// middlewares. Traefik's implicit rules as for HTTP, except that a TCP
/// router has no default rule.
fn contribute_tcp(c: &mut Contribution<'_>, labels: &ContainerLabels, s: &Settings, name: &str) {
    let p = &s.prefix;
    let implicit = TcpService {
        load_balancer: Some(TcpLoadBalancer::default()),
        ..TcpService::default()
    };
    let (service_names, services) = stream_services(
        &labels.tcp_services,
        !labels.tcp_routers.is_empty(),
        name,
        implicit,
    );
    for (svc_name, mut svc, keys) in services {
        if let (true, Some(lb)) = (c.serving, svc.load_balancer.as_mut()) {
            let server_labels = labels.tcp_servers.get(&svc_name);
            let port = server_labels.and_then(|l| l.port);
            let Some(address) =
                stream_server(c, (labels, s), Stream::Tcp, (&svc_name, &keys), port)
            else {
                continue;
            };
            lb.servers.push(TcpServer {
                address,
                tls: server_labels.and_then(|l| l.tls).unwrap_or(false),
            });
            c.tcp_serves.insert(svc_name.clone());
        }
        c.tcp_services.insert(svc_name, (svc, keys));
    }
    for (router_name, mut router, keys) in labels.tcp_routers.with_labels() {
        let checked = if router.rule.trim().is_empty() {
            Err(StreamRouterError::NoRule {
                prefix: p.clone(),
                router: router_name.clone(),
            })
        } else if router.service.is_empty() {
            default_stream_service(Stream::Tcp, p, &router_name, &service_names)
                .map(|service| router.service = service)
        } else {
            Ok(())
        };
        match checked {
            Ok(()) => {
                c.tcp_routers.insert(router_name, (router, keys));
            }
            Err(e) => break_stream_router(c, Stream::Tcp, (&router_name, keys), &e),
        }
    }
    for (n, m, keys) in labels.tcp_middlewares.with_labels() {
        c.tcp_middlewares.insert(n, (m, keys));
    }
}

/// The container's UDP routers and services (with its server): a router
/// without `service` uses the container's only UDP service, and a container
/// with UDP routers and no UDP service gets one named after it.
fn contribute_udp(c: &mut Contribution<'_>, labels: &ContainerLabels, s: &Settings, name: &str) {
    let implicit = UdpService {
        load_balancer: Some(UdpLoadBalancer::default()),
        ..UdpService::default()
    };
    let (service_names, services) = stream_services(
        &labels.udp_services,
        !labels.udp_routers.is_empty(),
        name,
        implicit,
    );
    for (svc_name, mut svc, keys) in services {
        if let (true, Some(lb)) = (c.serving, svc.load_balancer.as_mut()) {
            let port = labels.udp_ports.get(&svc_name).copied();
            let Some(address) =
                stream_server(c, (labels, s), Stream::Udp, (&svc_name, &keys), port)
            else {
                continue;
            };
            lb.servers.push(UdpServer { address });
            c.udp_serves.insert(svc_name.clone());
        }
        c.udp_services.insert(svc_name, (svc, keys));
    }
    for (router_name, mut router, keys) in labels.udp_routers.with_labels() {
        if router.service.is_empty() {
            match default_stream_service(Stream::Udp, &s.prefix, &router_name, &service_names) {
                Ok(service) => router.service = service,
                Err(e) => {
                    break_stream_router(c, Stream::Udp, (&router_name, keys), &e);
                    continue;
                }
            }
        }
        c.udp_routers.insert(router_name, (router, keys));
    }
}

/// The container's port for an HTTP or TCP server (see [`exposed_port`]).
fn container_port(
    view: &ContainerView,
    label_port: Option<u16>,
    label: String,
) -> Result<(u16, Option<Problem>), ServerProblem> {
    exposed_port(view, label_port, label, "tcp")
}

/// The container's port for a server of `proto` (`tcp` or `udp`): the
/// label's, else its only exposed port of that protocol, else the lowest
/// with a warning naming the label to set.
fn exposed_port(
    view: &ContainerView,
    label_port: Option<u16>,
    label: String,
    proto: &str,
) -> Result<(u16, Option<Problem>), ServerProblem> {
    if let Some(port) = label_port {
        return Ok((port, None));
    }
    // Ports of the other protocol are left out: an HTTP or TCP server
    // listens on TCP, a UDP one on UDP (Traefik takes the lowest port
    // whatever its protocol).
    let mut tcp: Vec<u16> = view
        .ports
        .iter()
        .filter(|x| x.proto == proto)
        .map(|x| x.port)
        .collect();
    tcp.sort_unstable();
    tcp.dedup();
    match tcp.as_slice() {
        [] if view.swarm.is_some() => Err((
            NotRouted::NoPort,
            format!("no port: a Swarm service's port must be given by label; set `{label}`"),
        )),
        [] => Err((
            NotRouted::NoPort,
            format!("no port: the container exposes none; set `{label}`"),
        )),
        [one] => Ok((*one, None)),
        // Traefik's choice, said out loud: an image that also exposes a
        // metrics or admin port is a common surprise.
        [lowest, ..] => Ok((
            *lowest,
            Some(Problem::PortChosen {
                port: *lowest,
                exposed: tcp.clone(),
                label,
            }),
        )),
    }
}

/// The container's server for one service, and a warning when its port
/// was chosen among several.
fn server(
    view: &ContainerView,
    s: &Settings,
    labels: Option<&ServerLabels>,
    label_network: Option<&str>,
    service: &str,
) -> Result<(Server, Option<Problem>), ServerProblem> {
    let labels = labels.cloned().unwrap_or_default();
    let mut server = Server {
        url: String::new(),
        weight: labels.weight,
        preserve_path: labels.preserve_path,
    };
    if let Some(url) = labels.url {
        server.url = url;
        return Ok((server, None));
    }
    let p = &s.prefix;
    let (port, chosen) = container_port(
        view,
        labels.port,
        format!("{p}.http.services.{service}.loadbalancer.server.port"),
    )?;
    let scheme = labels.scheme.unwrap_or_else(|| "http".to_owned());
    if s.use_bind_port_ip {
        let binding = view
            .ports
            .iter()
            .find(|x| x.port == port && x.proto == "tcp")
            .and_then(|x| x.bindings.first());
        if let Some((host_ip, host_port)) = binding {
            // Published on every interface: the host's own address reaches it.
            let ip = match host_ip.parse::<IpAddr>() {
                Ok(ip) if !ip.is_unspecified() => ip,
                _ => s.host_address,
            };
            server.url = format!("{scheme}://{}:{host_port}", host(ip));
            return Ok((server, chosen));
        }
    }
    let ip = address(view, s, label_network)?;
    server.url = format!("{scheme}://{}:{port}", host(ip));
    Ok((server, chosen))
}

fn host(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    }
}

/// The address to reach a container at.
fn address(
    view: &ContainerView,
    s: &Settings,
    label_network: Option<&str>,
) -> Result<IpAddr, ServerProblem> {
    if view.network_mode == "host" {
        // A Swarm task on the host network listens on its node's address.
        let node = view.networks.get("host").and_then(|ip| ip.parse().ok());
        return Ok(node.unwrap_or(s.host_address));
    }
    let p = &s.prefix;
    let parse = |net: &str, ip: &str| {
        ip.parse::<IpAddr>().map_err(|_| {
            (
                NotRouted::NoAddress,
                format!("no usable address on network `{net}` (got `{ip}`)"),
            )
        })
    };
    let names = || view.networks.keys().cloned().collect::<Vec<_>>().join(", ");
    if let Some(want) = label_network.or(s.network.as_deref()) {
        let prefixed = view
            .compose_project()
            .map(|project| format!("{project}_{want}"));
        let found = view.networks.get_key_value(want).or_else(|| {
            prefixed
                .as_deref()
                .and_then(|p| view.networks.get_key_value(p))
        });
        return match found {
            Some((net, ip)) => parse(net, ip),
            None => Err((
                NotRouted::NetworkNotFound,
                format!(
                    "network `{want}` not found on the container (it is on: {})",
                    names()
                ),
            )),
        };
    }
    let with_ip: Vec<(&String, &String)> = view
        .networks
        .iter()
        .filter(|(_, ip)| !ip.is_empty())
        .collect();
    if !s.own_networks.is_empty() {
        let shared: Vec<&(&String, &String)> = with_ip
            .iter()
            .filter(|(net, _)| s.own_networks.iter().any(|o| o == *net))
            .collect();
        match shared.as_slice() {
            [(net, ip)] => return parse(net, ip),
            [] => {}
            many => {
                return Err((
                    NotRouted::AmbiguousNetwork,
                    format!(
                        "the container shares several networks with gangway ({}); choose one with `{p}.docker.network`",
                        many.iter()
                            .map(|(n, _)| n.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
        }
    }
    match with_ip.as_slice() {
        [(net, ip)] => parse(net, ip),
        [] => Err((
            NotRouted::NoAddress,
            format!(
                "the container has no network address (network mode `{}`, networks: {})",
                view.network_mode,
                names()
            ),
        )),
        many => Err((
            NotRouted::AmbiguousNetwork,
            format!(
                "the container is on several networks ({}); choose one with `{p}.docker.network` or providers.docker.network",
                many.iter()
                    .map(|(n, _)| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    }
}

/// An object as merged so far.
struct Slot<T> {
    value: T,
    detail: ObjectDetail,
    /// Whether the definition in use comes from a container that can serve.
    serving: bool,
    /// The container whose definition is in use.
    owner: String,
    dropped: bool,
}

/// How two containers' definitions of one name meet.
trait Join: PartialEq + Sized {
    /// Whether they are the same definition.
    fn same(&self, other: &Self) -> bool {
        self == other
    }
    /// Folds an equal definition in (services add their servers).
    fn join(&mut self, _other: Self) {}
}

impl Join for Router {}
impl Join for Middleware {}
impl Join for TcpRouter {}
impl Join for TcpMiddleware {}

impl Join for UdpRouter {}

/// Services of every kind: the same definition apart from their servers
/// is one service, and joining adds the servers it lacks (told apart by
/// `$key`: a URL for HTTP, an address for TCP and UDP).
macro_rules! join_servers {
    ($service:ty, $key:ident) => {
        impl Join for $service {
            fn same(&self, other: &Self) -> bool {
                let strip = |s: &$service| {
                    let mut s = s.clone();
                    if let Some(lb) = s.load_balancer.as_mut() {
                        lb.servers.clear();
                    }
                    s
                };
                strip(self) == strip(other)
            }

            fn join(&mut self, other: Self) {
                if let (Some(mine), Some(theirs)) =
                    (self.load_balancer.as_mut(), other.load_balancer)
                {
                    for server in theirs.servers {
                        if !mine.servers.iter().any(|s| s.$key == server.$key) {
                            mine.servers.push(server);
                        }
                    }
                }
            }
        }
    };
}

join_servers!(Service, url);
join_servers!(TcpService, address);
join_servers!(UdpService, address);

#[allow(clippy::too_many_arguments)]
fn merge<T: Join>(
    slots: &mut BTreeMap<String, Slot<T>>,
    kind: usize,
    name: String,
    value: T,
    c: &mut Contribution<'_>,
    src: &Source,
    labels: Vec<String>,
    s: &Settings,
) {
    let policy = s.conflicts;
    let source = Source {
        labels,
        ..src.clone()
    };
    let Some(slot) = slots.get_mut(&name) else {
        slots.insert(
            name,
            Slot {
                value,
                detail: ObjectDetail {
                    sources: vec![source],
                    ..ObjectDetail::default()
                },
                serving: c.serving,
                owner: c.view.name.clone(),
                dropped: false,
            },
        );
        return;
    };
    if slot.value.same(&value) {
        slot.value.join(value);
        slot.detail.sources.push(source);
        return;
    }
    if slot.serving && !c.serving {
        // A stopped container's older definition: it is going away, and the
        // running one is what users deployed last.
        c.serves.remove(&name);
        return;
    }
    c.serves.remove(&name);
    c.lost_conflict = true;
    slot.detail.sources.push(source);
    let dropped = policy == ConflictPolicy::Drop;
    let conflict = ConfigError::new(
        ObjectRef::new(KINDS[kind], &format!("{name}@{}", s.provider)),
        Problem::Conflict {
            kept: slot.owner.clone(),
            other: c.view.name.clone(),
            dropped,
        },
    )
    .with_origin(origin(c.view, None));
    if dropped {
        slot.dropped = true;
        slot.detail.errors.push(conflict);
    } else {
        slot.detail.warnings.push(conflict);
    }
}

/// Puts each object that was not dropped into `into`, and its detail (with
/// errors recorded earlier for the same name) into `details`.
fn finish<T>(
    into: &mut BTreeMap<String, T>,
    details: &mut BTreeMap<String, ObjectDetail>,
    slots: impl IntoIterator<Item = (String, Slot<T>)>,
) {
    for (name, slot) in slots {
        let d = details.entry(name.clone()).or_default();
        let Slot {
            value,
            detail,
            dropped,
            ..
        } = slot;
        let broken = std::mem::take(d);
        *d = detail;
        d.sources.extend(broken.sources);
        d.errors.extend(broken.errors);
        d.warnings.extend(broken.warnings);
        if !dropped {
            into.insert(name, value);
        }
    }
}
