//! `errors`: when the service answers with one of `status`, fetch a page
//! from another `service` (`GET query`, with `{status}`, `{originalStatus}`
//! and `{url}` filled in) and send it instead, keeping the error status (or
//! its `statusRewrites` replacement).

use super::status::StatusRanges;
use super::{Exchange, Middleware, MiddlewareError, Next, Req, Resp, ServiceRef};
use crate::body::RequestBody;
use crate::config::dynamic::middleware as model;
use futures_util::future::BoxFuture;
use http::header::{self, HeaderMap, HeaderName};
use http::{Request, StatusCode};

/// A compiled `errors`.
pub struct Errors {
    status: StatusRanges,
    service: ServiceRef,
    query: String,
    rewrites: Vec<(StatusRanges, StatusCode)>,
    /// Request headers sent on to the page service (None: all).
    headers: Option<Vec<HeaderName>>,
}

/// Compiles an `errors` whose page service is `service`.
pub fn compile(cfg: &model::Errors, service: ServiceRef) -> Result<Errors, MiddlewareError> {
    let status = StatusRanges::parse(&cfg.status, "status")?;
    if status.is_empty() {
        return Err(MiddlewareError::invalid(
            "status",
            "at least one status or range is required",
        ));
    }
    let mut rewrites = Vec::new();
    for (from, to) in &cfg.status_rewrites {
        let to = StatusCode::from_u16(*to).map_err(|_| {
            MiddlewareError::invalid("statusRewrites", format!("{to} is not an HTTP status"))
        })?;
        rewrites.push((
            StatusRanges::parse(std::slice::from_ref(from), "statusRewrites")?,
            to,
        ));
    }
    let query = format!(
        "/{}",
        cfg.query.as_deref().unwrap_or("").trim_start_matches('/')
    );
    let headers = match &cfg.error_request_headers {
        None => None,
        Some(list) => Some(
            list.iter()
                .map(|h| {
                    HeaderName::from_bytes(h.trim().as_bytes()).map_err(|_| {
                        MiddlewareError::invalid(
                            "errorRequestHeaders",
                            format!("`{h}` is not a header name"),
                        )
                    })
                })
                .collect::<Result<_, _>>()?,
        ),
    };
    Ok(Errors {
        status,
        service,
        query,
        rewrites,
        headers,
    })
}

impl Middleware for Errors {
    fn wraps(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, req: Req, cx: &'a Exchange, next: Next<'a>) -> BoxFuture<'a, Resp> {
        // What the page request needs of the original: its URL and headers.
        let url = format!(
            "{}://{}{}",
            if cx.tls { "https" } else { "http" },
            cx.host_str(),
            req.uri().path_and_query().map_or("/", |pq| pq.as_str())
        );
        let mut headers = HeaderMap::new();
        match &self.headers {
            None => headers.clone_from(req.headers()),
            Some(names) => {
                for n in names {
                    for v in req.headers().get_all(n) {
                        headers.append(n.clone(), v.clone());
                    }
                }
            }
        }
        Box::pin(async move {
            let resp = next.run(req).await;
            let original = resp.status();
            if !self.status.contains(original) {
                return resp;
            }
            drop(resp);
            let code = self
                .rewrites
                .iter()
                .find(|(from, _)| from.contains(original))
                .map_or(original, |(_, to)| *to);
            let target = self
                .query
                .replace("{status}", code.as_str())
                .replace("{originalStatus}", original.as_str())
                .replace("{url}", &crate::percent::query_escape(&url));
            let Ok(mut page) = Request::get(target.as_str()).body(RequestBody::empty()) else {
                return super::status_response(code);
            };
            for name in [
                header::CONTENT_LENGTH,
                header::TRANSFER_ENCODING,
                header::CONTENT_TYPE,
            ] {
                headers.remove(name);
            }
            *page.headers_mut() = headers;
            let mut resp = next.send_to(&self.service, page).await;
            *resp.status_mut() = code;
            resp
        })
    }
}
