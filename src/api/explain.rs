//! `/api/explain`: which router gets a request, and why not the others.

use super::state::{ErrorView, ProblemView};
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
    let normalized_host = crate::rule::normalize_authority(&host).into_owned();
    let facts = RequestFacts {
        method: &method,
        host: &normalized_host,
        path: &path_only,
        query: query_part.as_deref(),
        headers: &headers,
        client_ip,
    };
    let rt = state.runtime.load_full();
    let internal =
        crate::config::static_config::observability::internal_entry_point(&state.static_config);
    // Every entry point is worked out, so one that routes nothing can point
    // at another that does; only the ones asked about are answered.
    let mut eps: Vec<EntryPointVerdict> = state
        .static_config
        .entry_points
        .keys()
        .enumerate()
        .filter_map(|(id, name)| Some(verdict(name, rt.entry_points.get(id)?, &rt, &facts, tls)))
        .collect();
    let routed: Vec<(String, String)> = eps
        .iter()
        .filter(|ep| ep.entry_point != internal)
        .filter_map(|ep| Some((ep.entry_point.clone(), ep.winner.as_ref()?.router.clone())))
        .collect();
    for ep in &mut eps {
        if ep.winner.is_none() && ep.hint.is_none() {
            ep.hint = routed
                .iter()
                .find(|(other, _)| *other != ep.entry_point)
                .map(|(entry_point, router)| Hint::OtherEntryPoint {
                    entry_point: entry_point.clone(),
                    router: router.clone(),
                });
        }
    }
    // The internal entry point (API, dashboard, ping) answers gangway's own
    // paths on any host: it is not where a user's request goes unless asked.
    eps.retain(|ep| match &only_ep {
        Some(only) => ep.entry_point == *only,
        None => ep.entry_point != internal,
    });
    // Those whose rule names the host asked come first: the likeliest to be
    // the router meant.
    let names_host = |name: &str| {
        !normalized_host.is_empty()
            && rt
                .dynamic
                .http
                .routers
                .get(name)
                .is_some_and(|r| r.rule.to_ascii_lowercase().contains(&normalized_host))
    };
    let mut disabled: Vec<(&String, &crate::runtime::ObjectReport)> = rt
        .report
        .routers
        .iter()
        .filter(|(_, r)| r.status == Status::Disabled)
        .collect();
    disabled.sort_by_key(|(n, _)| !names_host(n));
    let disabled_not_listed = disabled.len().saturating_sub(DISABLED_LISTED);
    let disabled: Vec<DisabledRouter> = disabled
        .into_iter()
        .take(DISABLED_LISTED)
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
        disabled_not_listed,
    })
    .into_response()
}

/// At most this many disabled routers are listed.
const DISABLED_LISTED: usize = 20;

/// At most this many routers are listed per entry point beside the
/// winner: at 10,000 routers a full list is megabytes no one reads.
const LISTED: usize = 50;

/// At most this many routers for a host that differs from the asked one
/// by a typing slip are listed, when no router names the asked host.
const NEAR_HOSTS: usize = 5;

/// Hosts this few edits apart count as the same host mistyped.
const NEAR_EDITS: usize = 2;

/// The positions of `table`'s routes that can take a request for `host`,
/// in the order the proxy tries them: the host's own, then those for any
/// host, merged by priority. The others name other hosts only.
fn tried(table: &crate::runtime::EntryPointRoutes, host: &str) -> Vec<usize> {
    let exact: &[usize] = table.by_host.get(host).map_or(&[], Vec::as_slice);
    let mut out: Vec<usize> = exact.iter().chain(&table.any_host).copied().collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// How many single-character edits `a` is from `b` (Levenshtein), when it
/// is at most `limit`; stops as soon as it cannot be.
fn edits(a: &str, b: &str, limit: usize) -> Option<usize> {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len().abs_diff(b.len()) > limit {
        return None;
    }
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut row = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        row[0] = i + 1;
        let mut best = row[0];
        for (j, cb) in b.iter().enumerate() {
            let swap = prev[j] + usize::from(ca != cb);
            row[j + 1] = swap.min(prev[j + 1] + 1).min(row[j] + 1);
            best = best.min(row[j + 1]);
        }
        if best > limit {
            return None;
        }
        std::mem::swap(&mut prev, &mut row);
    }
    Some(prev[b.len()]).filter(|d| *d <= limit)
}

/// Routes for hosts a slip away from `host`, when none names `host`
/// itself: the routers the request was most likely meant for.
fn near_hosts(table: &crate::runtime::EntryPointRoutes, host: &str) -> Vec<usize> {
    if host.is_empty() || table.by_host.contains_key(host) {
        return Vec::new();
    }
    // The nearest hosts first, each host's routes in the order tried.
    let mut near: Vec<(usize, usize)> = table
        .by_host
        .iter()
        .filter_map(|(other, routes)| Some((edits(other, host, NEAR_EDITS)?, routes)))
        .flat_map(|(d, routes)| routes.iter().map(move |&i| (d, i)))
        .collect();
    near.sort_unstable();
    let mut seen = std::collections::HashSet::new();
    near.retain(|(_, i)| seen.insert(*i));
    near.into_iter().take(NEAR_HOSTS).map(|(_, i)| i).collect()
}

/// What one entry point's table does with the request.
fn verdict(
    name: &str,
    table: &crate::runtime::EntryPointRoutes,
    rt: &crate::runtime::Runtime,
    facts: &RequestFacts<'_>,
    tls: bool,
) -> EntryPointVerdict {
    let mut candidates = Vec::new();
    let mut winner: Option<Winner> = None;
    let mut winner_priority: Option<i64> = None;
    let mut hint = None;
    let tried = tried(table, facts.host);
    let mut not_listed = 0;
    for route in tried.iter().filter_map(|&i| table.routes.get(i)) {
        // What the rule says first: a router whose rule does not match is
        // not one the request "needs TLS" for.
        let mismatch = route.matcher.explain_mismatch(facts);
        let other_side = mismatch.is_none() && route.tls != tls;
        let verdict = mismatch.or_else(|| {
            other_side.then(|| {
                if route.tls {
                    "matches, but takes TLS connections only".to_owned()
                } else {
                    "matches, but takes plain HTTP only".to_owned()
                }
            })
        });
        if other_side && hint.is_none() {
            let router = route.name.clone();
            hint = Some(if route.tls {
                Hint::NeedsTls { router }
            } else {
                Hint::NeedsPlainHttp { router }
            });
        }
        let matched = verdict.is_none() && winner.is_none();
        let shadowed = verdict.is_none() && winner.is_some();
        if matched {
            winner_priority = Some(route.priority);
            winner = Some(Winner::of(route, rt));
        }
        if candidates.len() >= LISTED && !matched {
            not_listed += 1;
            continue;
        }
        candidates.push(Candidate {
            router: route.name.clone(),
            priority: route.priority,
            rule: route.matcher.to_string(),
            matched,
            reason: match (&verdict, shadowed) {
                (Some(r), _) => r.clone(),
                // Traefik sorts routers by priority alone (an unstable
                // sort), so its order at equal priority is not defined;
                // gangway's is the name, and the reason says so.
                (None, true) if winner_priority == Some(route.priority) => format!(
                    "matches, but router `{}` has the equal priority {} and wins by the tie-break: at equal priority the qualified name that sorts first is tried first",
                    winner.as_ref().map_or("", |w| w.router.as_str()),
                    route.priority
                ),
                (None, true) => format!(
                    "matches, but router `{}` has a higher priority ({} > {}) and takes the request",
                    winner.as_ref().map_or("", |w| w.router.as_str()),
                    winner_priority.unwrap_or_default(),
                    route.priority
                ),
                (None, false) => "matches".to_owned(),
            },
        });
    }
    let near_hosts = near_hosts(table, facts.host)
        .into_iter()
        .filter_map(|i| table.routes.get(i))
        .map(|route| Candidate {
            router: route.name.clone(),
            priority: route.priority,
            rule: route.matcher.to_string(),
            matched: false,
            reason: route
                .matcher
                .explain_mismatch(facts)
                .unwrap_or_else(|| "names a host close to the one asked".to_owned()),
        })
        .collect();
    EntryPointVerdict {
        entry_point: name.to_owned(),
        hint: if winner.is_some() { None } else { hint },
        winner,
        candidates,
        not_listed,
        near_hosts,
        other_hosts: table.routes.len() - tried.len(),
    }
}

impl Winner {
    fn of(route: &crate::runtime::Route, rt: &crate::runtime::Runtime) -> Self {
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
        Winner {
            router: route.name.clone(),
            middlewares,
            service: route.service_name.clone(),
            servers,
            answer: Answer::of(&route.service_name, &super::serving::http(&route.upstream)),
        }
    }
}

/// The answer of `/api/explain`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExplainView {
    /// The request as understood.
    pub request: RequestView,
    /// Per entry point, the winner and every candidate. The internal entry
    /// point (`gangway`) only when asked about by name.
    pub entry_points: Vec<EntryPointVerdict>,
    /// Routers that take no request because of an error: those whose rule
    /// names the host asked first, at most [`DISABLED_LISTED`].
    pub disabled_routers: Vec<DisabledRouter>,
    /// How many more disabled routers there are, not listed.
    pub disabled_not_listed: usize,
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
    /// When no router takes the request here: what would make one take it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<Hint>,
    /// The routers on the entry point that can take a request for this
    /// host (its own, then those for any host), in the order they are
    /// tried: the first [`LISTED`], and the winner wherever it comes.
    pub candidates: Vec<Candidate>,
    /// How many more such routers were tried and are not listed.
    pub not_listed: usize,
    /// When no router names the host asked: a few that name a host one or
    /// two characters away from it, with why they do not match.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub near_hosts: Vec<Candidate>,
    /// How many routers on the entry point name other hosts only, and were
    /// not tried (the proxy does not try them either).
    pub other_hosts: usize,
}

/// Why a request no router takes on an entry point would be taken with
/// another connection or elsewhere.
#[derive(Debug, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Hint {
    /// A router here takes the request over TLS (https) only.
    NeedsTls {
        /// The first such router in the order routers are tried.
        router: String,
    },
    /// A router here takes the request over plain HTTP only.
    NeedsPlainHttp {
        /// The first such router in the order routers are tried.
        router: String,
    },
    /// No router here takes it at all, but one on another entry point does.
    #[serde(rename_all = "camelCase")]
    OtherEntryPoint {
        /// The first such entry point, in the static configuration's order
        /// (never the internal one).
        entry_point: String,
        /// The router that takes the request there.
        router: String,
    },
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
    /// What the request gets from the service now.
    pub answer: Answer,
}

/// What a request a router takes gets from its service now: sent to a
/// server, or answered by gangway with an error status, and why.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Answer {
    /// `served`: its servers answer; `fails`: it gets `status`;
    /// `sometimes`: `failingPercent` of such requests get `status`;
    /// `unknown`: nothing was sent to its servers yet.
    pub outcome: Outcome,
    /// The status a failing request gets (502 or 503).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The share of such requests that fail now, in percent.
    pub failing_percent: u32,
    /// Why, in a sentence; absent when it is served.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Whether a request reaches a server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// It reaches a server.
    Served,
    /// Some such requests fail.
    Sometimes,
    /// Every such request fails.
    Fails,
    /// Nothing was sent to its servers yet: whether they answer is not
    /// known.
    Unknown,
}

impl Answer {
    fn of(service: &str, s: &super::serving::Serving) -> Self {
        let Some(cause) = s.cause.filter(|_| s.failing > 0.0) else {
            return Answer {
                outcome: if s.unknown {
                    Outcome::Unknown
                } else {
                    Outcome::Served
                },
                status: None,
                failing_percent: 0,
                reason: s.unknown.then(|| {
                    format!("service `{service}`: no request was sent to its servers yet")
                }),
            };
        };
        let outcome = if s.failing >= 1.0 {
            Outcome::Fails
        } else {
            Outcome::Sometimes
        };
        Answer {
            outcome,
            status: Some(cause.status()),
            failing_percent: s.percent(),
            reason: Some(format!(
                "service `{service}`: {}",
                cause.words(super::serving::Proto::Http)
            )),
        }
    }
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

#[cfg(test)]
mod tests {
    use super::edits;

    #[test]
    fn hosts_a_slip_apart_are_near() {
        let cases = [
            ("app.example.com", "app.example.com", 0, Some(0)),
            ("app.exmaple.com", "app.example.com", 2, Some(2)),
            ("app.example.co", "app.example.com", 2, Some(1)),
            ("ap.example.com", "app.example.com", 1, Some(1)),
            ("api.example.com", "app.example.com", 2, Some(1)),
            ("web.example.com", "app.example.com", 2, None),
            ("example.com", "app.example.com", 2, None),
            ("", "a", 1, Some(1)),
        ];
        for (a, b, limit, want) in cases {
            assert_eq!(edits(a, b, limit), want, "{a} / {b} within {limit}");
        }
    }
}
