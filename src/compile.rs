//! Dynamic configuration → `Runtime`. Pure and synchronous. Never fails as a
//! whole: an object with an error is disabled and carries the error, and
//! everything else keeps working.

use crate::config::QualifiedName;
use crate::config::dynamic::{self, Dynamic};
use crate::rule::{default_priority, parse_rule};
use crate::runtime::InternalService;
use crate::runtime::registries::{ClientSettings, StatsKind};
use crate::runtime::{
    Balancer, EntryPointRoutes, Registries, Report, Route, Runtime, Server, Upstream,
};
use http::{HeaderValue, Uri, uri::Authority};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

/// What compile needs to know about the static configuration.
#[derive(Clone, Debug)]
pub struct CompileContext {
    /// Entry point names; a name's index is its `EntryPointId`.
    pub entry_points: Vec<String>,
    /// Entry points that routers without `entryPoints` do not join (gangway's
    /// internal one).
    pub not_default: Vec<String>,
    /// Client settings of the default servers transport.
    pub default_transport: ClientSettings,
    /// Services gangway answers itself, by qualified name (`api@internal`).
    pub internal: BTreeMap<String, Arc<dyn InternalService>>,
    /// Which request counters to keep; None when metrics are off.
    pub metrics: Option<MetricsSettings>,
}

/// What compile needs to know about metrics.
#[derive(Clone, Debug)]
pub struct MetricsSettings {
    /// Histogram bounds in seconds.
    pub bounds: Vec<f64>,
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

/// Compiles `dynamic` (keys already qualified `name@provider`).
pub fn compile(dynamic: Arc<Dynamic>, ctx: &CompileContext, registries: &Registries) -> Runtime {
    let mut report = Report::default();
    let mut services = ServiceCompiler {
        dynamic: &dynamic,
        ctx,
        registries,
        done: HashMap::new(),
        visiting: HashSet::new(),
    };
    let mut per_ep: Vec<Vec<Arc<Route>>> = vec![Vec::new(); ctx.entry_points.len()];
    let mut using: BTreeMap<String, Vec<String>> = BTreeMap::new();

    for (name, router) in &dynamic.http.routers {
        let entry = report.routers.entry(name.clone()).or_default();
        let provider = QualifiedName::parse(name)
            .map(|q| q.provider)
            .unwrap_or_default();

        let matcher = match parse_rule(&router.rule) {
            Ok(m) => Some(m),
            Err(e) => {
                entry.disable(format!("rule `{}`: {e}", router.rule));
                None
            }
        };

        let mut eps = Vec::new();
        if router.entry_points.is_empty() {
            eps.extend(
                (0..ctx.entry_points.len())
                    .filter(|&i| !ctx.not_default.contains(&ctx.entry_points[i])),
            );
        } else {
            for ep in &router.entry_points {
                match ctx.entry_points.iter().position(|n| n == ep) {
                    Some(i) => eps.push(i),
                    None => entry.warn(format!("entry point `{ep}` does not exist")),
                }
            }
            if eps.is_empty() {
                entry.disable("none of the router's entry points exist");
            }
        }
        entry.using = eps.iter().map(|&i| ctx.entry_points[i].clone()).collect();

        for mw in &router.middlewares {
            let q = QualifiedName::resolve(mw, &provider).to_string();
            using
                .entry(format!("m:{q}"))
                .or_default()
                .push(name.clone());
            match dynamic.http.middlewares.get(&q) {
                None => entry.disable(format!("middleware `{q}` does not exist")),
                Some(m) => {
                    let kinds = m.kinds();
                    let what = match kinds.as_slice() {
                        [one] => format!("middleware `{q}`: type `{one}` is not supported yet"),
                        [] => format!("middleware `{q}` has no type"),
                        _ => format!("middleware `{q}` has several types"),
                    };
                    entry.disable(what);
                }
            }
        }

        let service_name = QualifiedName::resolve(&router.service, &provider).to_string();
        let upstream = if router.service.is_empty() {
            entry.disable("the router has no service");
            None
        } else {
            using
                .entry(format!("s:{service_name}"))
                .or_default()
                .push(name.clone());
            match services.get(&service_name) {
                Ok(u) => Some(u),
                Err(e) => {
                    entry.disable(format!("service `{service_name}`: {e}"));
                    None
                }
            }
        };

        if let (Some(matcher), Some(upstream), false) = (
            matcher,
            upstream,
            entry.status == crate::runtime::Status::Disabled,
        ) {
            let stats = |kind, on: fn(&MetricsSettings) -> bool, object: &str| {
                ctx.metrics
                    .as_ref()
                    .filter(|m| on(m))
                    .map(|m| registries.stats(kind, object, &m.bounds))
            };
            let route = Arc::new(Route {
                name: name.clone(),
                priority: router
                    .priority
                    .unwrap_or_else(|| default_priority(&router.rule)),
                matcher,
                tls: router.tls.is_some(),
                upstream,
                stats: stats(StatsKind::Router, |m| m.routers, name),
                service_stats: stats(StatsKind::Service, |m| m.services, &service_name),
                service_name: service_name.clone(),
            });
            for i in eps {
                per_ep[i].push(route.clone());
            }
        }
    }

    // Every declared service and middleware gets a report, used or not.
    let names: Vec<String> = dynamic.http.services.keys().cloned().collect();
    for name in names {
        let entry = report.services.entry(name.clone()).or_default();
        if let Err(e) = services.get(&name) {
            entry.disable(e);
        }
        entry.using = using.get(&format!("s:{name}")).cloned().unwrap_or_default();
    }
    for name in ctx.internal.keys() {
        let users = using.get(&format!("s:{name}")).cloned().unwrap_or_default();
        if !users.is_empty() {
            report.services.entry(name.clone()).or_default().using = users;
        }
    }
    for (name, m) in &dynamic.http.middlewares {
        let entry = report.middlewares.entry(name.clone()).or_default();
        match m.kinds().as_slice() {
            [one] => entry.disable(format!("type `{one}` is not supported yet")),
            [] => entry.disable("no middleware type given"),
            many => entry.disable(format!(
                "several middleware types in one middleware: {}",
                many.iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
        entry.using = using.get(&format!("m:{name}")).cloned().unwrap_or_default();
    }
    if dynamic.tcp.is_some() || dynamic.udp.is_some() {
        report
            .warnings
            .push("tcp and udp sections are ignored: gangway routes HTTP only".to_owned());
    }

    Runtime {
        generation: 0,
        entry_points: per_ep.into_iter().map(EntryPointRoutes::new).collect(),
        report,
        dynamic,
    }
}

struct ServiceCompiler<'a> {
    dynamic: &'a Dynamic,
    ctx: &'a CompileContext,
    registries: &'a Registries,
    done: HashMap<String, Result<Arc<Upstream>, String>>,
    visiting: HashSet<String>,
}

impl ServiceCompiler<'_> {
    fn get(&mut self, name: &str) -> Result<Arc<Upstream>, String> {
        if let Some(done) = self.done.get(name) {
            return done.clone();
        }
        if !self.visiting.insert(name.to_owned()) {
            return Err(format!(
                "service `{name}` refers to itself through weighted services"
            ));
        }
        let result = match (
            self.dynamic.http.services.get(name),
            self.ctx.internal.get(name),
        ) {
            (_, Some(internal)) => Ok(Arc::new(Upstream::Internal(internal.clone()))),
            (None, None) => Err("does not exist".to_owned()),
            (Some(service), None) => self.compile(name, service),
        };
        self.visiting.remove(name);
        self.done.insert(name.to_owned(), result.clone());
        result
    }

    fn compile(&mut self, name: &str, service: &dynamic::Service) -> Result<Arc<Upstream>, String> {
        let provider = QualifiedName::parse(name)
            .map(|q| q.provider)
            .unwrap_or_default();
        let dynamic::Service {
            load_balancer,
            weighted,
            mirroring,
            failover,
        } = service;
        let kinds = [
            load_balancer.is_some(),
            weighted.is_some(),
            mirroring.is_some(),
            failover.is_some(),
        ];
        match kinds.iter().filter(|k| **k).count() {
            0 => {
                return Err(
                    "no service type given (loadBalancer, weighted, mirroring or failover)"
                        .to_owned(),
                );
            }
            1 => {}
            _ => return Err(
                "a service has exactly one type (loadBalancer, weighted, mirroring or failover)"
                    .to_owned(),
            ),
        }
        if let Some(lb) = load_balancer {
            let settings = self.transport(lb.servers_transport.as_deref(), &provider)?;
            let client = self.registries.client(&settings);
            let mut servers = Vec::with_capacity(lb.servers.len());
            for s in &lb.servers {
                let server = compile_server(s, lb.passes_host_header(), client.clone())?;
                servers.push((server, s.weight.unwrap_or(1)));
            }
            let key = format!(
                "{name}|{}",
                lb.servers
                    .iter()
                    .map(|s| s.url.as_str())
                    .collect::<Vec<_>>()
                    .join(",")
            );
            return Ok(Arc::new(Upstream::Servers(Balancer::new(
                servers,
                self.registries.position(&key),
            ))));
        }
        if let Some(w) = weighted {
            let mut children = Vec::with_capacity(w.services.len());
            for child in &w.services {
                let q = QualifiedName::resolve(&child.name, &provider).to_string();
                let up = self
                    .get(&q)
                    .map_err(|e| format!("weighted child `{q}`: {e}"))?;
                children.push((up, child.weight.unwrap_or(1)));
            }
            let key = format!("{name}|w");
            return Ok(Arc::new(Upstream::Weighted(Balancer::new(
                children,
                self.registries.position(&key),
            ))));
        }
        if mirroring.is_some() {
            return Err("mirroring services are not supported yet".to_owned());
        }
        Err("failover services are not supported yet".to_owned())
    }

    fn transport(&self, name: Option<&str>, provider: &str) -> Result<ClientSettings, String> {
        let Some(name) = name else {
            return Ok(self.ctx.default_transport.clone());
        };
        let q = QualifiedName::resolve(name, provider).to_string();
        let t = self
            .dynamic
            .http
            .servers_transports
            .get(&q)
            .ok_or_else(|| format!("servers transport `{q}` does not exist"))?;
        let mut settings = self.ctx.default_transport.clone();
        if let Some(n) = t.max_idle_conns_per_host {
            settings.max_idle_per_host = n;
        }
        if let Some(ft) = &t.forwarding_timeouts {
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
        }
        Ok(settings)
    }
}

fn compile_server(
    s: &dynamic::Server,
    pass_host_header: bool,
    client: Arc<crate::runtime::registries::UpstreamClient>,
) -> Result<Server, String> {
    let uri: Uri = s
        .url
        .parse()
        .map_err(|e| format!("server url `{}`: {e}", s.url))?;
    let h2c = match uri.scheme_str() {
        Some("http") => false,
        Some("h2c") => true,
        Some("https") => {
            return Err(format!(
                "server url `{}`: https servers are not supported yet",
                s.url
            ));
        }
        _ => {
            return Err(format!(
                "server url `{}`: the scheme must be http or h2c",
                s.url
            ));
        }
    };
    let authority = uri
        .authority()
        .ok_or_else(|| format!("server url `{}` has no host", s.url))?;
    let authority: Authority = if authority.port().is_some() {
        authority.clone()
    } else {
        format!("{}:80", authority.host())
            .parse()
            .map_err(|e| format!("server url `{}`: {e}", s.url))?
    };
    let path_prefix = if s.preserve_path.unwrap_or(false) {
        uri.path().trim_end_matches('/').to_owned()
    } else {
        String::new()
    };
    let host_header = HeaderValue::from_str(authority.as_str())
        .map_err(|e| format!("server url `{}`: {e}", s.url))?;
    Ok(Server {
        url: s.url.clone(),
        h2c,
        authority,
        path_prefix,
        pass_host_header,
        host_header,
        client,
    })
}
