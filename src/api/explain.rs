//! `/api/explain`: which router gets a request, and why not the others.

use super::ApiState;
use crate::config::QualifiedName;
use crate::rule::RequestFacts;
use crate::runtime::{Status, Upstream};
use axum::Json;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use serde_json::{Value, json};
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
        // The rule language's own decoder, so explain reads a query the way
        // `Query` matchers do; a malformed escape is refused like any bad value.
        let Some(v) = crate::rule::decode_query_component(v).map(std::borrow::Cow::into_owned)
        else {
            return (
                StatusCode::BAD_REQUEST,
                Json(json!({ "message": format!("`{k}`: malformed percent-encoding") })),
            )
                .into_response();
        };
        let bad = |what: &str| {
            (
                StatusCode::BAD_REQUEST,
                Json(json!({ "message": format!("{what}: `{v}`") })),
            )
                .into_response()
        };
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
        let mut winner: Option<Value> = None;
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
            candidates.push(json!({
                "router": route.name,
                "priority": route.priority,
                "rule": route.matcher.to_string(),
                "matched": matched,
                "reason": match (&verdict, shadowed) {
                    (Some(r), _) => r.clone(),
                    (None, true) => "matches, but a router with higher priority takes the request".to_owned(),
                    (None, false) => "matches".to_owned(),
                },
            }));
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
                winner = Some(json!({
                    "router": route.name,
                    "middlewares": middlewares,
                    "service": route.service_name,
                    "servers": servers,
                }));
            }
        }
        eps.push(json!({ "entryPoint": name, "winner": winner, "candidates": candidates }));
    }
    let disabled: Vec<Value> = rt
        .report
        .routers
        .iter()
        .filter(|(_, r)| r.status == Status::Disabled)
        .map(|(n, r)| {
            let errors: Vec<String> = r.errors.iter().map(ToString::to_string).collect();
            json!({ "router": n, "errors": errors, "problems": super::views::problems(&r.errors) })
        })
        .collect();
    Json(json!({
        "request": { "method": method.as_str(), "host": host, "path": path, "clientIp": client_ip.to_string(), "tls": tls },
        "entryPoints": eps,
        "disabledRouters": disabled,
    }))
    .into_response()
}
