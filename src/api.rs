//! The read-only API (Traefik v3's paths and JSON shapes, plus gangway's
//! own: certificates, providers, containers, explain), the embedded
//! dashboard, `/ping` and `/metrics`. Served as internal services
//! (`api@internal`, `ping@internal`, `prometheus@internal`) through the
//! normal proxy, so a router can put middlewares in front of them. Nothing
//! here changes any state.

mod certificates;
mod dashboard;
mod encode;
mod explain;
mod serving;
mod state;
mod tcp;
mod views;

use crate::config::static_config::StaticConfig;
use crate::runtime::{InternalService, Registries, RuntimeHandle, Status};
use axum::extract::{FromRequestParts, Path, Query, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use bytes::Bytes;
use futures_util::future::BoxFuture;
use http_body_util::{BodyExt, Full};
use serde::{Deserialize, Serialize};
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
    /// The providers configured, in Traefik's names, as `/api/overview`
    /// lists them.
    pub providers: Vec<&'static str>,
    /// When gangway started.
    pub started: SystemTime,
    /// Set when shutdown begins (`/ping` then answers 503).
    pub terminating: Arc<AtomicBool>,
    /// What `/metrics` renders; None when Prometheus metrics are off.
    pub metrics: Option<Arc<crate::metrics::Exporter>>,
    /// The router views last built, kept while nothing they show changes.
    pub router_views: views::RouterViews,
    /// The overview's HTTP counts last made, kept while nothing they count
    /// changes.
    pub overview_counts: views::OverviewCounts,
    /// Services that sleep when idle, for their state.
    pub sleeper: Arc<crate::sleep::Sleeper>,
}

/// The internal services gangway offers, by qualified name.
pub fn internal_services(state: &Arc<ApiState>) -> BTreeMap<String, Arc<dyn InternalService>> {
    let mut out: BTreeMap<String, Arc<dyn InternalService>> = BTreeMap::new();
    if let Some(api) = &state.static_config.api {
        let base = api.base_path.prefix();
        out.insert(
            "api@internal".into(),
            Arc::new(AxumService(api_router(state.clone(), api.dashboard, base))),
        );
        if api.dashboard {
            out.insert(
                "dashboard@internal".into(),
                Arc::new(AxumService(dashboard::router(base))),
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
            }),
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
    let internal = crate::config::static_config::observability::internal_entry_point(config);
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
    use crate::config::static_config::observability::{Api, Ping, Prometheus};
    // Each section is taken apart with no `..`: an option read nowhere is an
    // unused binding and fails the build. `_` says where it is read.
    if let Some(Api {
        insecure,
        dashboard,
        base_path,
    }) = &config.api
        && *insecure
    {
        // The base path is checked to hold path characters only, so it
        // cannot end the rule's quoted text.
        let base = base_path.prefix();
        add(
            "api",
            &format!("PathPrefix(`{base}/api`)"),
            internal,
            "api@internal",
        );
        if *dashboard {
            // `<base>` and `<base>/` both lead to the dashboard, as `/` does
            // without a base path.
            let rule = if base.is_empty() {
                String::from("PathPrefix(`/dashboard`) || Path(`/`)")
            } else {
                format!("PathPrefix(`{base}/dashboard`) || Path(`{base}`) || Path(`{base}/`)")
            };
            add("dashboard", &rule, internal, "dashboard@internal");
        }
    }
    if let Some(Ping {
        entry_point,
        terminating_status_code: _, // internal_services, answering /ping
        manual_routing,
    }) = &config.ping
        && !*manual_routing
    {
        add("ping", "Path(`/ping`)", entry_point, "ping@internal");
    }
    if let Some(Prometheus {
        entry_point,
        prefix: _,                  // views::prometheus
        buckets: _,                 // run(), as MetricsSettings
        add_entry_points_labels: _, // run()
        add_routers_labels: _,      // run(), as MetricsSettings
        add_services_labels: _,     // run(), as MetricsSettings
        header_labels: _,           // run(), as MetricsSettings
        manual_routing,
    }) = &config.metrics.prometheus
        && !*manual_routing
    {
        add(
            "prometheus",
            "Path(`/metrics`)",
            entry_point,
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

/// The API's routes under `base` (empty, or `/a/b`: `api.basePath`), with
/// the dashboard's when it is on.
fn api_router(state: Arc<ApiState>, dashboard: bool, base: &str) -> Router {
    let api = Router::new()
        .route("/api/overview", get(overview))
        .route("/api/entrypoints", get(entry_points))
        .route("/api/entrypoints/{name}", get(entry_point))
        .route("/api/http/routers", get(list_routers))
        .route("/api/http/routers/{name}", get(one_router))
        .route("/api/http/services", get(list_services))
        .route("/api/http/services/{name}", get(one_service))
        .route("/api/http/middlewares", get(list_middlewares))
        .route("/api/http/middlewares/{name}", get(one_middleware))
        .route("/api/tcp/routers", get(list_tcp_routers))
        .route("/api/tcp/routers/{name}", get(one_tcp_router))
        .route("/api/tcp/services", get(list_tcp_services))
        .route("/api/tcp/services/{name}", get(one_tcp_service))
        .route("/api/tcp/middlewares", get(list_tcp_middlewares))
        .route("/api/tcp/middlewares/{name}", get(one_tcp_middleware))
        .route("/api/udp/routers", get(list_udp_routers))
        .route("/api/udp/routers/{name}", get(one_udp_router))
        .route("/api/udp/services", get(list_udp_services))
        .route("/api/udp/services/{name}", get(one_udp_service))
        .route("/api/rawdata", get(rawdata))
        .route("/api/version", get(version))
        .route("/api/providers", get(providers))
        .route("/api/certificates", get(traefik_certificates))
        .route("/api/certificates/{id}", get(traefik_certificate))
        .route("/api/tls/certificates", get(certificates))
        .route("/api/tls/certificates/{id}", get(one_certificate))
        .route("/api/certificateresolvers", get(certificate_resolvers))
        .route("/api/containers", get(containers))
        .route("/api/explain", get(explain::explain))
        .fallback(|| async { ApiError::new(StatusCode::NOT_FOUND, "404 page not found") })
        .method_not_allowed_fallback(|| async {
            ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "the API is read-only: only GET and HEAD are answered",
            )
        })
        .with_state(state)
        .layer(axum::middleware::from_fn(with_etag));
    let api = if base.is_empty() {
        api
    } else {
        Router::new()
            .nest(base, api)
            .fallback(|| async { ApiError::new(StatusCode::NOT_FOUND, "404 page not found") })
    };
    if dashboard {
        api.merge(dashboard::router(base))
    } else {
        api
    }
}

/// Gives each successful answer an entity tag (a hash of its body and the
/// coding it goes in) and answers a request whose `If-None-Match` names it
/// with an empty 304: a dashboard left open then costs the headers of each
/// refresh, not the whole answer again. A 200 goes compressed when the
/// client takes zstd, br or gzip, the coding chosen by its
/// `Accept-Encoding`.
async fn with_etag(req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let asked = req.headers().clone();
    let resp = next.run(req).await;
    if resp.status() != StatusCode::OK {
        return resp;
    }
    let (mut parts, body) = resp.into_parts();
    let Ok(collected) = body.collect().await else {
        return ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the answer could not be read",
        )
        .into_response();
    };
    let bytes = collected.to_bytes();
    let coding = encode::choose(&asked).filter(|_| bytes.len() >= encode::MIN_BYTES);
    let hex: String = {
        use sha2::Digest as _;
        let digest = sha2::Sha256::digest(&bytes);
        digest[..12].iter().map(|b| format!("{b:02x}")).collect()
    };
    let tag = |coding: Option<encode::Coding>| {
        let suffix = coding.map_or("", encode::Coding::tag_suffix);
        HeaderValue::from_str(&format!("\"{hex}{suffix}\"")).ok()
    };
    // Whatever this answer's coding, a cache must ask again with the
    // client's own Accept-Encoding.
    parts.headers.insert(
        axum::http::header::VARY,
        HeaderValue::from_static("Accept-Encoding"),
    );
    let Some(etag) = tag(coding) else {
        return Response::from_parts(parts, axum::body::Body::from(bytes));
    };
    // Kept by the browser and asked about again on each use.
    parts.headers.insert(
        axum::http::header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache"),
    );
    parts.headers.insert(axum::http::header::ETAG, etag.clone());
    if dashboard::not_modified(&asked, &etag) {
        parts.status = StatusCode::NOT_MODIFIED;
        parts.headers.remove(axum::http::header::CONTENT_LENGTH);
        parts.headers.remove(axum::http::header::CONTENT_TYPE);
        return Response::from_parts(parts, axum::body::Body::empty());
    }
    let Some((coding, packed)) = coding.and_then(|c| Some((c, c.compress(&bytes)?))) else {
        // Sent as it is: its tag must say so.
        if let Some(plain) = tag(None) {
            parts.headers.insert(axum::http::header::ETAG, plain);
        }
        return Response::from_parts(parts, axum::body::Body::from(bytes));
    };
    parts
        .headers
        .insert(axum::http::header::CONTENT_ENCODING, coding.header());
    parts.headers.remove(axum::http::header::CONTENT_LENGTH);
    Response::from_parts(parts, axum::body::Body::from(packed))
}

/// Every error the API answers: a status and a JSON body with a message,
/// `{"message": "…"}` as in Traefik.
#[derive(Debug, Serialize)]
pub struct ApiError {
    #[serde(skip)]
    status: StatusCode,
    /// What went wrong, in a sentence.
    message: String,
}

impl ApiError {
    /// An error answered with `status`.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
        }
    }

    /// A 400 Bad Request.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }

    fn not_found(what: &str) -> Self {
        Self::new(StatusCode::NOT_FOUND, format!("{what} not found"))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(&self)).into_response()
    }
}

/// A query string read into `T`, refused as a JSON [`ApiError`] (axum's own
/// `Query` answers text/plain) naming the parameter that did not parse.
struct ApiQuery<T>(T);

impl<T: serde::de::DeserializeOwned, S: Send + Sync> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match Query::<T>::from_request_parts(parts, state).await {
            Ok(Query(q)) => Ok(ApiQuery(q)),
            Err(rejection) => Err(ApiError::bad_request(rejection.body_text())),
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
    /// The column to sort by (Traefik's `sortBy`); by name when absent.
    #[serde(rename = "sortBy")]
    sort_by: Option<String>,
    /// `asc` (the default) or `desc`.
    direction: Option<String>,
    /// Traefik's `serviceName`: only routers sending to this service.
    #[serde(rename = "serviceName")]
    service_name: Option<String>,
    /// Traefik's `middlewareName`: only routers using this middleware.
    #[serde(rename = "middlewareName")]
    middleware_name: Option<String>,
}

/// Whether the name `have` (qualified, or as written) is the one a filter
/// names, as Traefik matches them: a name written without a provider is
/// compared with the filter's name part; otherwise a filter without a
/// provider matches the name in any provider, and one with a provider only
/// that qualified name.
fn names(filter: &str, have: &str) -> bool {
    match (filter.split_once('@'), have.split_once('@')) {
        (_, None) => filter.split('@').next() == Some(have),
        (None, Some((bare, _))) => bare == filter,
        (Some(_), Some(_)) => filter == have,
    }
}

/// What a list is sorted on for one column: a number or a text, so that
/// priorities and counts sort as numbers.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum SortKey<'a> {
    Num(i64),
    Text(std::borrow::Cow<'a, str>),
}

impl<'a> SortKey<'a> {
    fn text(s: &'a str) -> Self {
        SortKey::Text(std::borrow::Cow::Borrowed(s))
    }

    fn joined(list: &[String]) -> Self {
        SortKey::Text(std::borrow::Cow::Owned(list.join(",")))
    }

    fn count(n: usize) -> Self {
        SortKey::Num(i64::try_from(n).unwrap_or(i64::MAX))
    }
}

impl ListQuery {
    /// The `status` asked for: `None` for all, an error for a value that is
    /// not a status (rather than an empty list that looks like an answer).
    fn status(&self) -> Result<Option<Status>, ApiError> {
        let Some(s) = self.status.as_deref().filter(|s| !s.is_empty()) else {
            return Ok(None);
        };
        match s.to_ascii_lowercase().as_str() {
            "enabled" => Ok(Some(Status::Enabled)),
            "warning" => Ok(Some(Status::Warning)),
            "disabled" => Ok(Some(Status::Disabled)),
            _ => Err(ApiError::bad_request(format!(
                "unknown status `{s}`: use one of enabled, warning, disabled"
            ))),
        }
    }
}

/// What the list endpoints filter and search on.
trait Listed {
    fn name(&self) -> &str;
    fn provider(&self) -> &str;
    fn status(&self) -> Status;
    /// The fields `search` looks in.
    fn searched(&self) -> [&str; 3];
    /// The key of column `by` (beside `name`, `provider` and `status`,
    /// which every list sorts on); None for a column it does not have.
    fn column(&self, by: &str) -> Option<SortKey<'_>>;
    /// The service a router sends to, for `serviceName`; None on lists
    /// that are not of routers (the filter does not apply to them).
    fn service_name(&self) -> Option<&str> {
        None
    }
    /// The middlewares a router uses, for `middlewareName`; None on lists
    /// without middlewares.
    fn middleware_names(&self) -> Option<&[String]> {
        None
    }

    /// The key of column `by`, the common ones included.
    fn sort_key(&self, by: &str) -> Option<SortKey<'_>> {
        match by {
            "name" => Some(SortKey::text(self.name())),
            "provider" => Some(SortKey::text(self.provider())),
            // Errors last in ascending order, so `desc` puts them first.
            "status" => Some(SortKey::Num(match self.status() {
                Status::Enabled => 0,
                Status::Warning => 1,
                Status::Disabled => 2,
            })),
            other => self.column(other),
        }
    }
}

/// A view with a name, a provider and a status (its `state`), searched in
/// the three fields the closure gives.
macro_rules! listed {
    ($view:ty, |$v:ident| $searched:expr, |$c:ident, $by:ident| $column:expr) => {
        listed!($view, |$v| $searched, |$c, $by| $column, {});
    };
    ($view:ty, |$v:ident| $searched:expr, |$c:ident, $by:ident| $column:expr, { $($extra:item)* }) => {
        impl Listed for $view {
            $($extra)*
            fn column(&self, $by: &str) -> Option<SortKey<'_>> {
                let $c = self;
                $column
            }
            fn name(&self) -> &str {
                &self.name
            }
            fn provider(&self) -> &str {
                &self.provider
            }
            fn status(&self) -> Status {
                self.state.status
            }
            fn searched(&self) -> [&str; 3] {
                let $v = self;
                $searched
            }
        }
    };
}

listed!(
    tcp::TcpRouterView,
    |v| [&v.name, &v.rule, &v.service],
    |v, by| match by {
        "rule" => Some(SortKey::text(&v.rule)),
        "priority" => Some(SortKey::Num(v.priority)),
        "service" => Some(SortKey::text(&v.service)),
        "entryPoints" => Some(SortKey::joined(&v.entry_points)),
        "middlewares" => Some(SortKey::joined(&v.middlewares)),
        "tls" => Some(SortKey::Num(tcp_tls_rank(v.tls.as_ref()))),
        _ => None,
    },
    {
        fn service_name(&self) -> Option<&str> {
            Some(&self.service)
        }
        fn middleware_names(&self) -> Option<&[String]> {
            Some(&self.middlewares)
        }
    }
);

listed!(
    tcp::TcpMiddlewareView,
    |v| [&v.name, v.kind.unwrap_or(""), &v.provider],
    |v, by| match by {
        "type" => Some(SortKey::text(v.kind.unwrap_or(""))),
        "usedBy" => Some(SortKey::count(v.used_by.len())),
        _ => None,
    }
);
listed!(
    tcp::UdpRouterView,
    |v| [&v.name, &v.service, &v.provider],
    |v, by| match by {
        "service" => Some(SortKey::text(&v.service)),
        "entryPoints" => Some(SortKey::joined(&v.entry_points)),
        _ => None,
    },
    {
        fn service_name(&self) -> Option<&str> {
            Some(&self.service)
        }
    }
);
listed!(
    tcp::UdpServiceView,
    |v| [&v.name, v.kind.unwrap_or(""), &v.provider],
    |v, by| match by {
        "type" => Some(SortKey::text(v.kind.unwrap_or(""))),
        "usedBy" => Some(SortKey::count(v.used_by.len())),
        _ => None,
    }
);
listed!(
    tcp::TcpServiceView,
    |v| [&v.name, v.kind.unwrap_or(""), &v.provider],
    |v, by| match by {
        "type" => Some(SortKey::text(v.kind.unwrap_or(""))),
        "servers" => Some(SortKey::count(
            v.load_balancer.as_ref().map_or(0, |lb| lb.servers.len())
        )),
        "usedBy" => Some(SortKey::count(v.used_by.len())),
        _ => None,
    }
);

listed!(
    views::RouterView,
    |v| [
        &v.name,
        v.rule.as_deref().unwrap_or(""),
        v.service.as_deref().unwrap_or("")
    ],
    |v, by| match by {
        "rule" => Some(SortKey::text(v.rule.as_deref().unwrap_or(""))),
        "priority" => Some(SortKey::Num(v.priority.unwrap_or(i64::MIN))),
        "service" => Some(SortKey::text(v.service.as_deref().unwrap_or(""))),
        "entryPoints" => Some(SortKey::joined(if v.using.is_empty() {
            &v.entry_points
        } else {
            &v.using
        })),
        "middlewares" => Some(SortKey::joined(&v.middlewares)),
        "tls" => Some(SortKey::Num(i64::from(v.tls.is_some()))),
        _ => None,
    },
    {
        fn service_name(&self) -> Option<&str> {
            Some(self.service.as_deref().unwrap_or(""))
        }
        fn middleware_names(&self) -> Option<&[String]> {
            Some(&self.middlewares)
        }
    }
);

listed!(
    views::ServiceView,
    |v| [&v.name, "", ""],
    |v, by| match by {
        "type" => Some(SortKey::text(match v.kind {
            None => "",
            Some(views::ServiceType::LoadBalancer) => "loadbalancer",
            Some(views::ServiceType::Weighted) => "weighted",
            Some(views::ServiceType::Mirroring) => "mirroring",
            Some(views::ServiceType::Failover) => "failover",
            Some(views::ServiceType::HighestRandomWeight) => "highestrandomweight",
        })),
        "servers" => Some(SortKey::count(
            v.load_balancer.as_ref().map_or(0, |lb| lb.servers.len())
        )),
        "usedBy" => Some(SortKey::count(v.used_by.len())),
        _ => None,
    }
);

listed!(
    views::MiddlewareView,
    |v| [&v.name, "", ""],
    |v, by| match by {
        "type" => Some(SortKey::text(v.kind.as_deref().unwrap_or(""))),
        "usedBy" => Some(SortKey::count(v.used_by.len())),
        _ => None,
    }
);

/// TCP routers by what they do with TLS: plain, terminated, passed through.
fn tcp_tls_rank(tls: Option<&crate::config::dynamic::tcp::TcpRouterTls>) -> i64 {
    match tls {
        None => 0,
        Some(t) if t.passthrough => 2,
        Some(_) => 1,
    }
}

type St = State<Arc<ApiState>>;

/// One page of `all` as Traefik answers it: filtered by status, provider
/// and search text, with `X-Next-Page` (1 on the last page).
fn page<T: Listed + Serialize>(all: &[T], q: &ListQuery) -> Result<Response, ApiError> {
    let status = q.status()?;
    let provider = q.provider.as_deref().filter(|p| !p.is_empty());
    let search = q.search.as_deref().unwrap_or("").to_ascii_lowercase();
    let service = q.service_name.as_deref().filter(|s| !s.is_empty());
    let middleware = q.middleware_name.as_deref().filter(|m| !m.is_empty());
    let filtered: Vec<&T> = all
        .iter()
        .filter(|v| status.is_none_or(|s| v.status() == s))
        .filter(|v| match (service, v.service_name()) {
            (Some(want), Some(have)) => names(want, have),
            _ => true,
        })
        .filter(|v| match (middleware, v.middleware_names()) {
            (Some(want), Some(have)) => have.iter().any(|m| names(want, m)),
            _ => true,
        })
        .filter(|v| provider.is_none_or(|p| v.provider().eq_ignore_ascii_case(p)))
        .filter(|v| {
            search.is_empty()
                || v.searched()
                    .iter()
                    .any(|s| s.to_ascii_lowercase().contains(&search))
        })
        .collect();
    let mut filtered = filtered;
    if let Some(by) = q.sort_by.as_deref().filter(|b| !b.is_empty()) {
        if filtered.iter().any(|v| v.sort_key(by).is_none()) {
            return Err(ApiError::bad_request(format!(
                "cannot sort by `{by}`: this list has no such column"
            )));
        }
        let desc = match q.direction.as_deref().unwrap_or("asc") {
            "asc" | "" => false,
            "desc" => true,
            other => {
                return Err(ApiError::bad_request(format!(
                    "unknown direction `{other}`: use asc or desc"
                )));
            }
        };
        // A stable sort: ties keep name order, whichever the direction.
        filtered.sort_by(|a, b| {
            let order = a.sort_key(by).cmp(&b.sort_key(by));
            if desc { order.reverse() } else { order }
        });
    }
    let per_page = q.per_page.unwrap_or(100).clamp(1, 1000);
    let page = q.page.unwrap_or(1).max(1);
    let start = (page - 1).saturating_mul(per_page);
    let next = if start.saturating_add(per_page) < filtered.len() {
        page + 1
    } else {
        1
    };
    let total = filtered.len();
    let items: Vec<&T> = filtered
        .into_iter()
        .skip(start.min(total))
        .take(per_page)
        .collect();
    let mut resp = Json(items).into_response();
    resp.headers_mut()
        .insert("x-next-page", HeaderValue::from(next));
    // gangway's addition: how many match, so a client can say "page 2 of 7".
    resp.headers_mut()
        .insert("x-total-count", HeaderValue::from(total));
    Ok(resp)
}

fn find<T: Listed + Serialize>(all: &[T], name: &str, what: &str) -> Result<Response, ApiError> {
    all.iter()
        .find(|v| v.name() == name)
        .map(|v| Json(v).into_response())
        .ok_or_else(|| ApiError::not_found(what))
}

async fn list_routers(
    State(state): St,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> Result<Response, ApiError> {
    page(&all_routers(&state), &q)
}

async fn list_tcp_routers(
    State(state): St,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> Result<Response, ApiError> {
    page(&tcp::routers(&state.runtime.load_full()), &q)
}

async fn one_tcp_router(State(state): St, Path(name): Path<String>) -> Result<Response, ApiError> {
    find(
        &tcp::routers(&state.runtime.load_full()),
        &name,
        "TCP router",
    )
}

async fn list_tcp_services(
    State(state): St,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> Result<Response, ApiError> {
    page(&tcp::services(&state.runtime.load_full()), &q)
}

async fn one_tcp_service(State(state): St, Path(name): Path<String>) -> Result<Response, ApiError> {
    find(
        &tcp::services(&state.runtime.load_full()),
        &name,
        "TCP service",
    )
}

async fn list_tcp_middlewares(
    State(state): St,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> Result<Response, ApiError> {
    page(&tcp::middlewares(&state.runtime.load_full()), &q)
}

async fn one_tcp_middleware(
    State(state): St,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    find(
        &tcp::middlewares(&state.runtime.load_full()),
        &name,
        "TCP middleware",
    )
}

async fn list_udp_routers(
    State(state): St,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> Result<Response, ApiError> {
    page(&tcp::udp_routers(&state.runtime.load_full()), &q)
}

async fn one_udp_router(State(state): St, Path(name): Path<String>) -> Result<Response, ApiError> {
    find(
        &tcp::udp_routers(&state.runtime.load_full()),
        &name,
        "UDP router",
    )
}

async fn list_udp_services(
    State(state): St,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> Result<Response, ApiError> {
    page(&tcp::udp_services(&state.runtime.load_full()), &q)
}

async fn one_udp_service(State(state): St, Path(name): Path<String>) -> Result<Response, ApiError> {
    find(
        &tcp::udp_services(&state.runtime.load_full()),
        &name,
        "UDP service",
    )
}

async fn one_router(State(state): St, Path(name): Path<String>) -> Result<Response, ApiError> {
    find(&all_routers(&state), &name, "router")
}

fn all_routers(state: &ApiState) -> Arc<Vec<views::RouterView>> {
    state
        .router_views
        .of(&state.runtime.load_full(), &state.certificates.snapshot())
}

fn all_services(state: &ApiState) -> Vec<views::ServiceView> {
    let mut services = views::services(
        &state.runtime.load_full(),
        &state.registries.health_report(),
    );
    let mut sleeping = state.sleeper.views();
    if !sleeping.is_empty() {
        for s in &mut services {
            s.sleep = sleeping.remove(&s.name);
        }
    }
    services
}

async fn list_services(
    State(state): St,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> Result<Response, ApiError> {
    let mut services = all_services(&state);
    for s in &mut services {
        s.forget_check_times();
    }
    page(&services, &q)
}

async fn one_service(State(state): St, Path(name): Path<String>) -> Result<Response, ApiError> {
    find(&all_services(&state), &name, "service")
}

async fn list_middlewares(
    State(state): St,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> Result<Response, ApiError> {
    page(&views::middlewares(&state.runtime.load_full()), &q)
}

async fn one_middleware(State(state): St, Path(name): Path<String>) -> Result<Response, ApiError> {
    find(
        &views::middlewares(&state.runtime.load_full()),
        &name,
        "middleware",
    )
}

async fn overview(State(state): St) -> Json<views::OverviewView> {
    Json(views::overview(&state))
}

async fn entry_points(State(state): St) -> Response {
    Json(views::entry_points(&state.static_config)).into_response()
}

async fn entry_point(State(state): St, Path(name): Path<String>) -> Response {
    match views::entry_points(&state.static_config)
        .into_iter()
        .find(|v| v.name == name)
    {
        Some(v) => Json(v).into_response(),
        None => ApiError::not_found("entry point").into_response(),
    }
}

async fn rawdata(State(state): St) -> Json<views::RawDataView> {
    Json(views::rawdata(&state))
}

async fn certificate_resolvers(State(state): St) -> Json<Vec<views::ResolverView>> {
    Json(views::resolvers(&state))
}

async fn version(State(state): St) -> Json<views::VersionView> {
    Json(views::VersionView {
        version: env!("CARGO_PKG_VERSION"),
        codename: "gangway",
        start_date: crate::clock::Utc::of(state.started).nanos(),
    })
}

async fn providers(State(state): St) -> Response {
    let rt = state.runtime.load_full();
    Json(views::providers(&rt)).into_response()
}

/// Every certificate gangway serves or is obtaining: ACME ones with their
/// order state, then those from files. Soonest expiry first within each.
/// Every certificate served, in Traefik's shape, filtered, sorted and
/// paged as its other lists.
async fn traefik_certificates(
    State(state): St,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> Result<Response, ApiError> {
    page(&served_certificates(&state), &q)
}

/// One served certificate by its SHA-256 fingerprint, in Traefik's shape.
async fn traefik_certificate(
    State(state): St,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    served_certificates(&state)
        .into_iter()
        .find(|c| c.cert_fingerprint == id)
        .map(|c| Json(c).into_response())
        .ok_or_else(|| ApiError::not_found("certificate"))
}

/// The certificates the TLS entry points serve now, sorted by common name.
fn served_certificates(state: &ApiState) -> Vec<certificates::TraefikCertificate> {
    let rt = state.runtime.load_full();
    let now = crate::clock::unix_time();
    let mut all: Vec<_> = rt
        .tls
        .served
        .iter()
        .flat_map(|s| s.leaves())
        .filter_map(|der| certificates::TraefikCertificate::of(der, now))
        .collect();
    all.sort_by(|a, b| a.common_name.cmp(&b.common_name).then(a.id.cmp(&b.id)));
    all
}

impl Listed for certificates::TraefikCertificate {
    /// As Traefik sorts them by name: by common name.
    fn name(&self) -> &str {
        &self.common_name
    }
    fn provider(&self) -> &str {
        ""
    }
    fn status(&self) -> Status {
        self.status
    }
    fn searched(&self) -> [&str; 3] {
        [&self.searched, "", ""]
    }
    fn column(&self, by: &str) -> Option<SortKey<'_>> {
        match by {
            "issuer" => Some(SortKey::text(self.issuer())),
            "validUntil" => Some(SortKey::text(&self.not_after)),
            _ => None,
        }
    }
}

/// gangway's view of the certificates: how each is obtained and renewed.
async fn certificates(State(state): St) -> Json<Vec<views::CertificateItem>> {
    Json(views::certificate_views(&state))
}

/// One certificate by the `id` the list gives it. Traefik has no such
/// endpoint; this is gangway's certificate object.
async fn one_certificate(
    State(state): St,
    Path(id): Path<String>,
) -> Result<Json<views::CertificateItem>, ApiError> {
    views::certificate_views(&state)
        .into_iter()
        .find(|c| c.id == id)
        .map(Json)
        .ok_or_else(|| ApiError::not_found("certificate"))
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
async fn containers(
    State(state): St,
    ApiQuery(q): ApiQuery<ContainerQuery>,
) -> Json<Vec<views::ContainerView>> {
    let rt = state.runtime.load_full();
    let needle = q.search.as_deref().map(str::to_lowercase);
    let mut out: Vec<views::ContainerView> = Vec::new();
    for (provider, report) in &rt.report.providers {
        for c in &report.containers {
            if q.routed.is_some_and(|r| r != c.routed) {
                continue;
            }
            if let Some(needle) = &needle {
                let hay = [
                    Some(c.name.as_str()),
                    c.compose_project.as_deref(),
                    c.compose_service.as_deref(),
                ];
                if !hay
                    .iter()
                    .flatten()
                    .any(|h| h.to_lowercase().contains(needle))
                {
                    continue;
                }
            }
            out.push(views::ContainerView::new(provider, c));
        }
    }
    out.sort_by(|a, b| (a.routed, &a.name).cmp(&(b.routed, &b.name)));
    Json(out)
}
