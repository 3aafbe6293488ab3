//! The read-only API (Traefik v3's paths and JSON shapes, plus gangway's
//! own: certificates, providers, containers, explain), the embedded
//! dashboard, `/ping` and `/metrics`. Served as internal services
//! (`api@internal`, `ping@internal`, `prometheus@internal`) through the
//! normal proxy, so a router can put middlewares in front of them. Nothing
//! here changes any state.

mod dashboard;
mod explain;
mod views;

use crate::config::static_config::StaticConfig;
use crate::runtime::{InternalService, Registries, RuntimeHandle};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use bytes::Bytes;
use futures_util::future::BoxFuture;
use http_body_util::{BodyExt, Full};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::SystemTime;

/// What the API reads.
pub struct ApiState {
    /// The published runtime.
    pub runtime: Arc<RuntimeHandle>,
    /// State that outlives swaps (counters, pools).
    pub registries: Arc<Registries>,
    /// Every ACME certificate's state.
    pub certificates: Arc<crate::acme::Status>,
    /// The static configuration, as loaded.
    pub static_config: Arc<StaticConfig>,
    /// When gangway started.
    pub started: SystemTime,
    /// Set when shutdown begins (`/ping` then answers 503).
    pub terminating: Arc<AtomicBool>,
    /// What `/metrics` renders; None when Prometheus metrics are off.
    pub metrics: Option<Arc<crate::metrics::Exporter>>,
}

/// The internal services gangway offers, by qualified name.
pub fn internal_services(state: &Arc<ApiState>) -> BTreeMap<String, Arc<dyn InternalService>> {
    let mut out: BTreeMap<String, Arc<dyn InternalService>> = BTreeMap::new();
    let dashboard = state
        .static_config
        .api
        .as_ref()
        .is_some_and(|a| a.dashboard);
    if state.static_config.api.is_some() {
        out.insert(
            "api@internal".into(),
            Arc::new(AxumService(api_router(state.clone(), dashboard))),
        );
        if dashboard {
            out.insert(
                "dashboard@internal".into(),
                Arc::new(AxumService(dashboard::router())),
            );
        }
    }
    if state.static_config.ping.is_some() {
        let st = state.clone();
        let router = Router::new().route(
            "/ping",
            get(move || {
                let st = st.clone();
                async move {
                    if st.terminating.load(Ordering::Relaxed) {
                        let code = st
                            .static_config
                            .ping
                            .as_ref()
                            .map_or(503, |p| p.terminating_status_code);
                        (
                            StatusCode::from_u16(code).unwrap_or(StatusCode::SERVICE_UNAVAILABLE),
                            "",
                        )
                    } else {
                        (StatusCode::OK, "OK")
                    }
                }
            })
            .head(|| async { StatusCode::OK }),
        );
        out.insert("ping@internal".into(), Arc::new(AxumService(router)));
    }
    if state.static_config.metrics.prometheus.is_some() {
        // Offered whenever it is configured, so `gangway check` (which
        // records nothing) resolves the same routers as a running gangway.
        let exporter = state.metrics.clone();
        let router = Router::new().route(
            "/metrics",
            get(move || {
                let exporter = exporter.clone();
                async move {
                    let mut headers = HeaderMap::new();
                    headers.insert(
                        "content-type",
                        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
                    );
                    let text = exporter.as_ref().map(|e| e.render()).unwrap_or_default();
                    (headers, text)
                }
            }),
        );
        out.insert("prometheus@internal".into(), Arc::new(AxumService(router)));
    }
    out.insert("noop@internal".into(), Arc::new(AxumService(Router::new())));
    out
}

/// The routers of the internal provider: the API and dashboard on the
/// internal entry point (with `api.insecure`), `/ping` and `/metrics` on
/// their entry points, each at the highest priority as in Traefik.
pub fn internal_routers(config: &StaticConfig) -> crate::config::Dynamic {
    use crate::config::dynamic::Router as R;
    let mut d = crate::config::Dynamic::default();
    let internal = crate::config::static_config::observability::INTERNAL_ENTRY_POINT;
    let mut add = |name: &str, rule: &str, ep: &str, service: &str| {
        d.http.routers.insert(
            name.to_owned(),
            R {
                rule: rule.to_owned(),
                entry_points: vec![ep.to_owned()],
                service: service.to_owned(),
                priority: Some(i64::from(i32::MAX) - 1),
                ..R::default()
            },
        );
    };
    if let Some(api) = config.api.as_ref().filter(|a| a.insecure) {
        add("api", "PathPrefix(`/api`)", internal, "api@internal");
        if api.dashboard {
            add(
                "dashboard",
                "PathPrefix(`/dashboard`) || Path(`/`)",
                internal,
                "dashboard@internal",
            );
        }
    }
    if let Some(ping) = &config.ping {
        add("ping", "Path(`/ping`)", &ping.entry_point, "ping@internal");
    }
    if let Some(p) = &config.metrics.prometheus {
        add(
            "prometheus",
            "Path(`/metrics`)",
            &p.entry_point,
            "prometheus@internal",
        );
    }
    d
}

/// An axum router answering as an internal service.
struct AxumService(Router);

impl InternalService for AxumService {
    fn call(&self, req: http::Request<()>) -> BoxFuture<'static, http::Response<Full<Bytes>>> {
        let router = self.0.clone();
        Box::pin(async move {
            let req = req.map(|()| axum::body::Body::empty());
            let resp = match tower::ServiceExt::oneshot(router, req).await {
                Ok(r) => r,
                Err(never) => match never {},
            };
            let (parts, body) = resp.into_parts();
            // Answers are small JSON documents, pages and metric texts.
            let bytes = body
                .collect()
                .await
                .map(|c| c.to_bytes())
                .unwrap_or_default();
            http::Response::from_parts(parts, Full::new(bytes))
        })
    }
}

fn api_router(state: Arc<ApiState>, dashboard: bool) -> Router {
    let api = Router::new()
        .route("/api/overview", get(overview))
        .route("/api/entrypoints", get(entry_points))
        .route("/api/entrypoints/{name}", get(entry_point))
        .route("/api/http/routers", get(|s, q| list(s, q, Kind::Routers)))
        .route(
            "/api/http/routers/{name}",
            get(|s, p| one(s, p, Kind::Routers)),
        )
        .route("/api/http/services", get(|s, q| list(s, q, Kind::Services)))
        .route(
            "/api/http/services/{name}",
            get(|s, p| one(s, p, Kind::Services)),
        )
        .route(
            "/api/http/middlewares",
            get(|s, q| list(s, q, Kind::Middlewares)),
        )
        .route(
            "/api/http/middlewares/{name}",
            get(|s, p| one(s, p, Kind::Middlewares)),
        )
        .route("/api/rawdata", get(rawdata))
        .route("/api/version", get(version))
        .route("/api/providers", get(providers))
        .route("/api/certificates", get(certificates))
        .route("/api/containers", get(containers))
        .route("/api/explain", get(explain::explain))
        .fallback(|| async {
            (
                StatusCode::NOT_FOUND,
                Json(json!({"message": "404 page not found"})),
            )
        })
        .with_state(state);
    if dashboard {
        api.merge(dashboard::router())
    } else {
        api
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Routers,
    Services,
    Middlewares,
}

impl Kind {
    fn singular(self) -> &'static str {
        match self {
            Kind::Routers => "router",
            Kind::Services => "service",
            Kind::Middlewares => "middleware",
        }
    }
}

/// Traefik's list parameters.
#[derive(Deserialize, Default)]
struct ListQuery {
    search: Option<String>,
    status: Option<String>,
    provider: Option<String>,
    page: Option<usize>,
    per_page: Option<usize>,
}

type St = State<Arc<ApiState>>;

fn objects(state: &ApiState, kind: Kind) -> Vec<Value> {
    let rt = state.runtime.load_full();
    match kind {
        Kind::Routers => views::routers(&rt),
        Kind::Services => views::services(&rt, &state.registries.health_report()),
        Kind::Middlewares => views::middlewares(&rt),
    }
}

async fn list(State(state): St, Query(q): Query<ListQuery>, kind: Kind) -> Response {
    let all = objects(&state, kind);
    let wanted = |v: &Value, key: &str, want: &Option<String>| {
        want.as_deref().is_none_or(|w| {
            w.is_empty()
                || v.get(key)
                    .and_then(Value::as_str)
                    .is_some_and(|x| x.eq_ignore_ascii_case(w))
        })
    };
    let search = q.search.as_deref().unwrap_or("").to_ascii_lowercase();
    let filtered: Vec<Value> = all
        .into_iter()
        .filter(|v| wanted(v, "status", &q.status) && wanted(v, "provider", &q.provider))
        .filter(|v| {
            search.is_empty()
                || ["name", "rule", "service"].iter().any(|k| {
                    v.get(*k)
                        .and_then(Value::as_str)
                        .is_some_and(|s| s.to_ascii_lowercase().contains(&search))
                })
        })
        .collect();
    let per_page = q.per_page.unwrap_or(100).clamp(1, 1000);
    let page = q.page.unwrap_or(1).max(1);
    let start = (page - 1).saturating_mul(per_page);
    let items: Vec<Value> = filtered
        .iter()
        .skip(start)
        .take(per_page)
        .cloned()
        .collect();
    let next = if start + per_page < filtered.len() {
        page + 1
    } else {
        1
    };
    let mut resp = Json(items).into_response();
    resp.headers_mut()
        .insert("x-next-page", HeaderValue::from(next));
    resp
}

async fn one(State(state): St, Path(name): Path<String>, kind: Kind) -> Response {
    match objects(&state, kind)
        .into_iter()
        .find(|v| v.get("name").and_then(Value::as_str) == Some(name.as_str()))
    {
        Some(v) => Json(v).into_response(),
        None => not_found(kind.singular()),
    }
}

fn not_found(what: &str) -> Response {
    (
        StatusCode::NOT_FOUND,
        Json(json!({ "message": format!("{what} not found") })),
    )
        .into_response()
}

async fn overview(State(state): St) -> Json<Value> {
    let rt = state.runtime.load_full();
    let count = |items: Vec<Value>| {
        let status = |s: &str| {
            items
                .iter()
                .filter(|v| v.get("status").and_then(Value::as_str) == Some(s))
                .count()
        };
        json!({ "total": items.len(), "warnings": status("warning"), "errors": status("disabled") })
    };
    let zero = json!({ "total": 0, "warnings": 0, "errors": 0 });
    let cfg = &state.static_config;
    let mut providers: Vec<&str> = Vec::new();
    if cfg.providers.file.is_some() {
        providers.push("File");
    }
    if cfg.providers.docker.is_some() {
        providers.push("Docker");
    }
    Json(json!({
        "http": { "routers": count(views::routers(&rt)), "services": count(views::services(&rt, &state.registries.health_report())), "middlewares": count(views::middlewares(&rt)) },
        "tcp": { "routers": zero, "services": zero, "middlewares": zero },
        "udp": { "routers": zero, "services": zero },
        "features": {
            "tracing": "",
            "metrics": if cfg.metrics.prometheus.is_some() { "Prometheus" } else { "" },
            "accessLog": cfg.access_log.is_some(),
        },
        "providers": providers,
        "generation": rt.generation,
        "warnings": rt.report.warnings,
    }))
}

async fn entry_points(State(state): St) -> Json<Vec<Value>> {
    Json(views::entry_points(&state.static_config))
}

async fn entry_point(State(state): St, Path(name): Path<String>) -> Response {
    match views::entry_points(&state.static_config)
        .into_iter()
        .find(|v| v["name"] == name.as_str())
    {
        Some(v) => Json(v).into_response(),
        None => not_found("entry point"),
    }
}

async fn rawdata(State(state): St) -> Json<Value> {
    let rt = state.runtime.load_full();
    let by_name = |items: Vec<Value>| -> serde_json::Map<String, Value> {
        items
            .into_iter()
            .filter_map(|v| Some((v.get("name")?.as_str()?.to_owned(), v)))
            .collect()
    };
    Json(json!({
        "routers": by_name(views::routers(&rt)),
        "services": by_name(views::services(&rt, &state.registries.health_report())),
        "middlewares": by_name(views::middlewares(&rt)),
    }))
}

async fn version(State(state): St) -> Json<Value> {
    let started = state
        .started
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    Json(
        json!({ "Version": env!("CARGO_PKG_VERSION"), "Codename": "gangway", "startDate": started }),
    )
}

async fn providers(State(state): St) -> Json<Value> {
    let rt = state.runtime.load_full();
    let mut out = serde_json::Map::new();
    for (name, report) in &rt.report.providers {
        let count = |map: &BTreeMap<String, crate::runtime::ObjectReport>| {
            map.keys()
                .filter(|k| k.ends_with(&format!("@{name}")))
                .count()
        };
        let mut v = serde_json::to_value(report).unwrap_or_default();
        if let Value::Object(m) = &mut v {
            m.insert("routers".into(), json!(count(&rt.report.routers)));
            m.insert("services".into(), json!(count(&rt.report.services)));
            m.insert("middlewares".into(), json!(count(&rt.report.middlewares)));
        }
        out.insert(name.clone(), v);
    }
    Json(Value::Object(out))
}

/// Every certificate gangway serves or is obtaining: ACME ones with their
/// order state, then those from files. Soonest expiry first within each.
async fn certificates(State(state): St) -> Json<Vec<Value>> {
    Json(views::certificates(&state))
}

#[derive(Deserialize, Default)]
struct ContainerQuery {
    /// `true` or `false`: only routed / only not-routed containers.
    routed: Option<bool>,
    /// Substring of the name, compose project or service.
    search: Option<String>,
}

/// Every container a provider saw, routed or not, the not-routed first,
/// each with the reason and the (qualified) routers and services it defines.
async fn containers(State(state): St, Query(q): Query<ContainerQuery>) -> Json<Vec<Value>> {
    let rt = state.runtime.load_full();
    let mut out: Vec<Value> = Vec::new();
    for (provider, report) in &rt.report.providers {
        for c in &report.containers {
            if q.routed.is_some_and(|r| r != c.routed) {
                continue;
            }
            if let Some(needle) = q.search.as_deref().map(str::to_lowercase) {
                let hay = [
                    Some(c.name.as_str()),
                    c.compose_project.as_deref(),
                    c.compose_service.as_deref(),
                ];
                if !hay
                    .iter()
                    .flatten()
                    .any(|h| h.to_lowercase().contains(&needle))
                {
                    continue;
                }
            }
            let mut v = serde_json::to_value(c).unwrap_or_default();
            if let Value::Object(m) = &mut v {
                let qualify = |names: &[String]| -> Vec<String> {
                    names.iter().map(|n| format!("{n}@{provider}")).collect()
                };
                m.insert("provider".into(), json!(provider));
                m.insert("routers".into(), json!(qualify(&c.routers)));
                m.insert("services".into(), json!(qualify(&c.services)));
                m.insert("reasons".into(), json!(c.messages));
            }
            out.push(v);
        }
    }
    out.sort_by_key(|v| {
        (
            v["routed"].as_bool() == Some(true),
            v["name"].as_str().map(str::to_owned),
        )
    });
    Json(out)
}
