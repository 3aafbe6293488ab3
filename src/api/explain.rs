//! `/api/explain`: which router gets a request, and why not the others.

use super::views::{ErrorView, ProblemView};
use super::{ApiError, ApiState};
use crate::config::QualifiedName;
use crate::rule::RequestFacts;
use crate::runtime::{Status, Upstream};
use axum::Json;
use axum::extract::{RawQuery, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use serde::Serialize;
use std::net::IpAddr;
use std::sync::Arc;

/// Answers `?method=&host=&path=&header=Name:%20value&clientIp=&entryPoint=&tls=`.
pub async fn explain(State(state): State<Arc<ApiState>>, RawQuery(query): RawQuery) -> Response {
    let (mut method, mut host, mut path, mut client_ip, mut only_ep, mut tls) = (
        Method::GET,
        String::new(),
        "/".to_owned(),
        IpAddr::from([127, 0, 0, 1]),
        None::<String>,
        false,
    );
    let mut headers = HeaderMap::new();
    for pair in query
        .as_deref()
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
    {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        // The decoder `Query` matchers use, so explain reads a query the way
        // they do; a malformed escape is refused like any bad value.
        let Ok(v) = crate::percent::decode_query_component(v).map(std::borrow::Cow::into_owned)
        else {
            return ApiError::bad_request(format!("`{k}`: malformed percent-encoding"))
                .into_response();
        };
        let bad = |what: &str| ApiError::bad_request(format!("{what}: `{v}`")).into_response();
        match k {
            "method" => match Method::from_bytes(v.to_ascii_uppercase().as_bytes()) {
                Ok(m) => method = m,
                Err(_) => return bad("not an HTTP method"),
            },
            "host" => host = v,
            "path" => path = v,
            "clientIp" | "clientip" => match v.parse() {
                Ok(ip) => client_ip = ip,
                Err(_) => return bad("not an IP address"),
            },
            "entryPoint" | "entrypoint" => only_ep = Some(v),
            "tls" => tls = v == "true" || v == "1",
            "header" => {
                let Some((name, value)) = v.split_once(':') else {
                    return bad("a header is `Name: value`");
                };
                match (
                    HeaderName::from_bytes(name.trim().as_bytes()),
                    HeaderValue::from_str(value.trim()),
                ) {
                    (Ok(n), Ok(val)) => {
                        headers.append(n, val);
                    }
                    _ => return bad("not a valid header"),
                }
            }
            _ => {}
        }
    }
    let (path_only, query_part) = match path.split_once('?') {
        Some((p, q)) => (p.to_owned(), Some(q.to_owned())),
        None => (path.clone(), None),
    };
    let normalized_host = crate::proxy::forwarded::normalize_host(&host).into_owned();
    let facts = RequestFacts {
        method: &method,
        host: &normalized_host,
        path: &path_only,
        query: query_part.as_deref(),
        headers: &headers,
        client_ip,
    };
    let rt = state.runtime.load_full();
    let mut eps = Vec::new();
    for (id, name) in state.static_config.entry_points.keys().enumerate() {
        if only_ep.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        let Some(table) = rt.entry_points.get(id) else {
            continue;
        };
        let mut candidates = Vec::new();
        let mut winner: Option<Winner> = None;
        for route in table.iter() {
            let verdict = if route.tls != tls {
                Some(if route.tls {
                    "needs a TLS connection".to_owned()
                } else {
                    "takes plain HTTP only".to_owned()
                })
            } else {
                route.matcher.explain_mismatch(&facts)
            };
            let matched = verdict.is_none() && winner.is_none();
            let shadowed = verdict.is_none() && winner.is_some();
            candidates.push(Candidate {
                router: route.name.clone(),
                priority: route.priority,
                rule: route.matcher.to_string(),
                matched,
                reason: match (&verdict, shadowed) {
                    (Some(r), _) => r.clone(),
                    (None, true) => {
                        "matches, but a router with higher priority takes the request".to_owned()
                    }
                    (None, false) => "matches".to_owned(),
                },
            });
            if matched {
                let config = rt.dynamic.http.routers.get(&route.name);
                let servers: Vec<String> = match &*route.upstream {
                    Upstream::Servers(lb) => lb.servers.iter().map(|s| s.url.clone()).collect(),
                    _ => Vec::new(),
                };
                // Qualified, as on /api/http/routers, so a client can link them.
                let provider = QualifiedName::parse(&route.name)
                    .map(|q| q.provider)
                    .unwrap_or_default();
                let middlewares: Vec<String> = config
                    .map(|c| {
                        c.middlewares
                            .iter()
                            .map(|m| QualifiedName::resolve(m, &provider).to_string())
                            .collect()
                    })
                    .unwrap_or_default();
                winner = Some(Winner {
                    router: route.name.clone(),
                    middlewares,
                    service: route.service_name.clone(),
                    servers,
                });
            }
        }
        eps.push(EntryPointVerdict {
            entry_point: name.clone(),
            winner,
            candidates,
        });
    }
    let disabled: Vec<DisabledRouter> = rt
        .report
        .routers
        .iter()
        .filter(|(_, r)| r.status == Status::Disabled)
        .map(|(n, r)| DisabledRouter {
            router: n.clone(),
            errors: ErrorView::of_report(r),
            problems: ProblemView::all(&r.errors),
        })
        .collect();
    Json(ExplainView {
        request: RequestView {
            method: method.as_str().to_owned(),
            host,
            path,
            client_ip: client_ip.to_string(),
            tls,
        },
        entry_points: eps,
        disabled_routers: disabled,
    })
    .into_response()
}

/// The answer of `/api/explain`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExplainView {
    /// The request as understood.
    pub request: RequestView,
    /// Per entry point, the winner and every candidate.
    pub entry_points: Vec<EntryPointVerdict>,
    /// Routers that take no request because of an error.
    pub disabled_routers: Vec<DisabledRouter>,
}

/// The request explained, as read from the query.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestView {
    /// Method, uppercase.
    pub method: String,
    /// Host as given.
    pub host: String,
    /// Path (and query) as given.
    pub path: String,
    /// The client's address.
    pub client_ip: String,
    /// Whether the connection is TLS.
    pub tls: bool,
}

/// What one entry point does with the request.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EntryPointVerdict {
    /// The entry point.
    pub entry_point: String,
    /// The router that takes the request there, if one does.
    pub winner: Option<Winner>,
    /// Every router on the entry point, in the order they are tried.
    pub candidates: Vec<Candidate>,
}

/// The router that takes the request, and where it sends it.
#[derive(Debug, Serialize)]
pub struct Winner {
    /// Qualified router name.
    pub router: String,
    /// Its middlewares in order, qualified.
    pub middlewares: Vec<String>,
    /// Its service, qualified.
    pub service: String,
    /// The service's server URLs, for a load balancer.
    pub servers: Vec<String>,
}

/// One router tried, and whether and why it matched.
#[derive(Debug, Serialize)]
pub struct Candidate {
    /// Qualified router name.
    pub router: String,
    /// Its effective priority.
    pub priority: i64,
    /// Its rule, in canonical form.
    pub rule: String,
    /// Whether it takes the request.
    pub matched: bool,
    /// Why it matched or not, in a sentence.
    pub reason: String,
}

/// A router that is disabled, with its errors.
#[derive(Debug, Serialize)]
pub struct DisabledRouter {
    /// Qualified router name.
    pub router: String,
    /// Why it is disabled.
    pub errors: Vec<ErrorView>,
    /// The same, as typed problems with where each is written.
    pub problems: Vec<ProblemView>,
}
