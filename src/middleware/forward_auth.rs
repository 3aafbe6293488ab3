//! `forwardAuth`: ask an authentication server about each request. A 2xx
//! answer lets the request through (with `authResponseHeaders` copied onto
//! it); anything else is sent to the client as the auth server wrote it.

use super::spool::{self, Read};
use super::{Exchange, Middleware, MiddlewareError, Next, Req, Resp, status_response};
use crate::body::{ProxyBody, RequestBody};
use crate::client::{ClientError, ClientSettings, ServerKind, TlsSettings, UpstreamClient};
use crate::config::dynamic::middleware as model;
use futures_util::future::BoxFuture;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::uri::Authority;
use http::{Method, Request, Response, StatusCode, Uri};
use regex::Regex;
use std::collections::HashSet;
use std::sync::Arc;

const X_FORWARDED: [&str; 6] = [
    "x-forwarded-for",
    "x-forwarded-method",
    "x-forwarded-proto",
    "x-forwarded-port",
    "x-forwarded-host",
    "x-forwarded-uri",
];
const AUTH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);
const HOP_BY_HOP: [HeaderName; 8] = [
    header::CONNECTION,
    HeaderName::from_static("keep-alive"),
    header::PROXY_AUTHENTICATE,
    header::PROXY_AUTHORIZATION,
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
];

/// A compiled `forwardAuth`.
pub struct ForwardAuth {
    address: Uri,
    host: HeaderValue,
    /// How the auth server is spoken to, by the address's scheme.
    kind: ServerKind,
    client: Arc<UpstreamClient>,
    trust: bool,
    response_headers: Vec<HeaderName>,
    response_regex: Option<Regex>,
    request_headers: Vec<HeaderName>,
    cookies: HashSet<String>,
    forward_body: bool,
    max_body: Option<u64>,
    max_response_body: Option<u64>,
    preserve_location: bool,
    preserve_method: bool,
    signin: Option<HeaderValue>,
    /// `headerField`: the auth answer's header naming the user, for the
    /// access log.
    user_header: Option<HeaderName>,
}

fn names(option: &'static str, list: &[String]) -> Result<Vec<HeaderName>, MiddlewareError> {
    list.iter()
        .map(|h| {
            HeaderName::from_bytes(h.trim().as_bytes()).map_err(|_| {
                MiddlewareError::invalid(option, format!("`{h}` is not a header name"))
            })
        })
        .collect()
}

/// The client settings towards the auth server: the transport's, with
/// TLS as the middleware's `tls` says. As in Traefik, the auth server's
/// TLS is the middleware's own: without `tls.ca` the built-in roots are
/// trusted, not the servers transport's `rootCAs`.
fn settings(
    tls: Option<&model::ClientTls>,
    base: &ClientSettings,
) -> Result<ClientSettings, MiddlewareError> {
    let mut settings = base.clone();
    let given = |o: &Option<String>| o.clone().filter(|v| !v.trim().is_empty());
    let Some(tls) = tls else {
        settings.tls = TlsSettings::default();
        return Ok(settings);
    };
    #[deny(unused_variables)] // an option read nowhere fails the build
    let model::ClientTls {
        ca,
        cert,
        key,
        insecure_skip_verify,
        // Traefik's: a server-side notion, no effect on a client.
        ca_optional: _,
    } = tls;
    let certificates = match (given(cert), given(key)) {
        (Some(cert), Some(key)) => vec![(cert, key)],
        (None, None) => Vec::new(),
        _ => {
            return Err(MiddlewareError::invalid(
                "tls",
                ClientError::HalfCertificate.to_string(),
            ));
        }
    };
    settings.tls = TlsSettings {
        insecure_skip_verify: *insecure_skip_verify,
        root_cas: given(ca).into_iter().collect(),
        certificates,
        ..TlsSettings::default()
    };
    Ok(settings)
}

fn limit(v: Option<i64>) -> Option<u64> {
    v.and_then(|n| u64::try_from(n).ok())
}

/// Compiles a `forwardAuth`; `client_for` gives the client of the auth
/// server's address (`host:port`) with these settings: the transport's
/// `base` ones, with the middleware's `tls` towards `https://` servers.
pub fn compile(
    cfg: &model::ForwardAuth,
    base: &ClientSettings,
    client_for: impl FnOnce(&ClientSettings, &Authority) -> Result<Arc<UpstreamClient>, ClientError>,
) -> Result<ForwardAuth, MiddlewareError> {
    let address: Uri = cfg
        .address
        .trim()
        .parse()
        .map_err(|e| MiddlewareError::invalid("address", format!("`{}`: {e}", cfg.address)))?;
    let (kind, default_port) = match address.scheme_str() {
        Some("http") => (ServerKind::Http, 80),
        Some("https") => (ServerKind::Https, 443),
        _ => {
            return Err(MiddlewareError::invalid(
                "address",
                format!("`{}` is not an http:// or https:// URL", cfg.address),
            ));
        }
    };
    let settings = settings(cfg.tls.as_ref(), base)?;
    let host = address
        .authority()
        .and_then(|a| HeaderValue::from_str(a.as_str()).ok())
        .ok_or_else(|| {
            MiddlewareError::invalid("address", format!("`{}` has no host", cfg.address))
        })?;
    let client = address
        .authority()
        .and_then(|a| match a.port() {
            Some(_) => Some(a.clone()),
            None => format!("{}:{default_port}", a.host()).parse().ok(),
        })
        .ok_or_else(|| {
            MiddlewareError::invalid("address", format!("`{}` has no host", cfg.address))
        })
        .and_then(|server| {
            client_for(&settings, &server).map_err(|e| {
                let option = if cfg.tls.is_some() { "tls" } else { "address" };
                MiddlewareError::invalid(option, e.to_string())
            })
        })?;
    let response_regex = match cfg
        .auth_response_headers_regex
        .as_deref()
        .filter(|r| !r.is_empty())
    {
        None => None,
        Some(r) => Some(MiddlewareError::regex("authResponseHeadersRegex", r)?),
    };
    let signin = match cfg.auth_signin_url.as_deref().filter(|s| !s.is_empty()) {
        None => None,
        Some(s) => Some(HeaderValue::from_str(s).map_err(|_| {
            MiddlewareError::invalid("authSigninURL", format!("`{s}` is not a valid URL"))
        })?),
    };
    let user_header = match cfg.header_field.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(h) => Some(HeaderName::from_bytes(h.as_bytes()).map_err(|_| {
            MiddlewareError::invalid("headerField", format!("`{h}` is not a header name"))
        })?),
    };
    Ok(ForwardAuth {
        user_header,
        address,
        host,
        kind,
        client,
        trust: cfg.trust_forward_header,
        response_headers: names("authResponseHeaders", &cfg.auth_response_headers)?,
        response_regex,
        request_headers: names("authRequestHeaders", &cfg.auth_request_headers)?,
        cookies: cfg.add_auth_cookies_to_response.iter().cloned().collect(),
        forward_body: cfg.forward_body,
        max_body: limit(cfg.max_body_size),
        max_response_body: limit(cfg.max_response_body_size),
        preserve_location: cfg.preserve_location_header,
        preserve_method: cfg.preserve_request_method,
        signin,
    })
}

/// `x-auth-user` → `X-Auth-User`, the form Go gives header names, which
/// `authResponseHeadersRegex` is written against.
fn canonical(name: &str) -> String {
    let mut up = true;
    name.chars()
        .map(|c| {
            let out = if up { c.to_ascii_uppercase() } else { c };
            up = c == '-';
            out
        })
        .collect()
}

/// Removes the headers of the client's connection: those `Connection` names
/// and the standard hop-by-hop ones.
pub(super) fn remove_hop_by_hop(h: &mut HeaderMap) {
    let named: Vec<HeaderName> = h
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|t| HeaderName::from_bytes(t.trim().as_bytes()).ok())
        .collect();
    for n in named.into_iter().chain(HOP_BY_HOP) {
        h.remove(n);
    }
}

fn cookie_name(set_cookie: &HeaderValue) -> &str {
    set_cookie
        .to_str()
        .ok()
        .and_then(|v| v.split_once('='))
        .map_or("", |(n, _)| n.trim())
}

impl ForwardAuth {
    /// The request to the auth server, from the client's.
    fn auth_request(&self, req: &Req, cx: &Exchange, body: RequestBody) -> Request<RequestBody> {
        let mut h = if self.request_headers.is_empty() {
            req.headers().clone()
        } else {
            let mut h = HeaderMap::new();
            for n in &self.request_headers {
                for v in req.headers().get_all(n) {
                    h.append(n.clone(), v.clone());
                }
            }
            h
        };
        remove_hop_by_hop(&mut h);
        if !self.trust {
            for n in X_FORWARDED {
                h.remove(n);
            }
        }
        if !self.forward_body {
            h.remove(header::CONTENT_LENGTH);
        }
        let peer = HeaderValue::from_str(&cx.peer.to_string())
            .unwrap_or(HeaderValue::from_static("unknown"));
        let xff = match h.get("x-forwarded-for") {
            Some(prior) => {
                let mut v = prior.as_bytes().to_vec();
                v.extend_from_slice(b", ");
                v.extend_from_slice(peer.as_bytes());
                HeaderValue::from_bytes(&v).unwrap_or(peer)
            }
            None => peer,
        };
        h.insert("x-forwarded-for", xff);
        let proto = if cx.tls { "https" } else { "http" };
        let set = |h: &mut HeaderMap, name: &'static str, v: Option<HeaderValue>| {
            if let (false, Some(v)) = (h.contains_key(name), v) {
                h.insert(name, v);
            }
        };
        set(
            &mut h,
            "x-forwarded-method",
            HeaderValue::from_str(req.method().as_str()).ok(),
        );
        set(
            &mut h,
            "x-forwarded-proto",
            Some(HeaderValue::from_static(proto)),
        );
        let port = cx
            .host_str()
            .rsplit_once(':')
            .map(|(_, p)| p)
            .filter(|p| p.bytes().all(|b| b.is_ascii_digit()) && !p.is_empty())
            .unwrap_or(if cx.tls { "443" } else { "80" });
        set(&mut h, "x-forwarded-port", HeaderValue::from_str(port).ok());
        set(&mut h, "x-forwarded-host", cx.host.clone());
        set(
            &mut h,
            "x-forwarded-uri",
            req.uri()
                .path_and_query()
                .and_then(|pq| HeaderValue::from_str(pq.as_str()).ok()),
        );
        h.insert(header::HOST, self.host.clone());
        let method = if self.preserve_method {
            req.method().clone()
        } else {
            Method::GET
        };
        let mut out = Request::new(body);
        *out.method_mut() = method;
        *out.uri_mut() = self.address.clone();
        *out.headers_mut() = h;
        out
    }

    /// The auth server's refusal, for the client.
    fn refusal(&self, parts: http::response::Parts, body: bytes::Bytes) -> Resp {
        let mut h = parts.headers;
        remove_hop_by_hop(&mut h);
        h.remove(header::CONTENT_LENGTH);
        if !self.preserve_location
            && let Some(loc) = h.get(header::LOCATION).and_then(|l| l.to_str().ok())
            && loc.starts_with('/')
            && !loc.starts_with("//")
            && let Some(authority) = self.address.authority()
            && let Ok(v) = HeaderValue::from_str(&format!("http://{authority}{loc}"))
        {
            h.insert(header::LOCATION, v);
        }
        let mut resp = Response::new(ProxyBody::bytes(body));
        *resp.status_mut() = parts.status;
        *resp.headers_mut() = h;
        resp
    }
}

impl Middleware for ForwardAuth {
    fn wraps(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, req: Req, cx: &'a Exchange, next: Next<'a>) -> BoxFuture<'a, Resp> {
        Box::pin(async move {
            let (parts, body) = req.into_parts();
            let mut req = Request::from_parts(parts, RequestBody::empty());
            let auth_body = if self.forward_body {
                match spool::read(body, self.max_body, u64::MAX).await {
                    Ok(Read::Whole(s)) => {
                        let bytes = s.in_memory().unwrap_or_default();
                        *req.body_mut() = RequestBody::full(bytes.clone());
                        RequestBody::full(bytes)
                    }
                    Ok(Read::TooLarge(..)) => return status_response(StatusCode::UNAUTHORIZED),
                    Err(_) => return status_response(StatusCode::BAD_REQUEST),
                }
            } else {
                *req.body_mut() = body;
                RequestBody::empty()
            };
            let auth = self.auth_request(&req, cx, auth_body);
            // Traefik's auth client gives up after 30 s too.
            let sent = self.client.send(self.kind, false, Box::new(auth));
            let answer = match tokio::time::timeout(AUTH_TIMEOUT, sent).await {
                Ok(Ok(a)) => a,
                Ok(Err(e)) => {
                    tracing::debug!(address = %self.address, error = %e, "auth server unreachable");
                    return status_response(StatusCode::INTERNAL_SERVER_ERROR);
                }
                Err(_) => {
                    tracing::debug!(address = %self.address, "auth server did not answer in time");
                    return status_response(StatusCode::INTERNAL_SERVER_ERROR);
                }
            };
            let (parts, body) = answer.into_parts();
            let body = match spool::read(body, self.max_response_body, u64::MAX).await {
                Ok(Read::Whole(s)) => s.in_memory().unwrap_or_default(),
                Ok(Read::TooLarge(..)) => return status_response(StatusCode::UNAUTHORIZED),
                Err(_) => return status_response(StatusCode::INTERNAL_SERVER_ERROR),
            };
            if let (Some(signin), StatusCode::UNAUTHORIZED) = (&self.signin, parts.status) {
                let mut resp = Response::new(ProxyBody::text("Found"));
                *resp.status_mut() = StatusCode::FOUND;
                resp.headers_mut().insert(header::LOCATION, signin.clone());
                return resp;
            }
            if !parts.status.is_success() {
                return self.refusal(parts, body);
            }
            // As Traefik: the first value of `headerField` in the auth
            // answer is the user the access log shows.
            if let Some(user) = self
                .user_header
                .as_ref()
                .and_then(|h| parts.headers.get(h))
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            {
                req.extensions_mut().insert(super::ClientUsername(user));
            }
            let rh = req.headers_mut();
            for n in &self.response_headers {
                rh.remove(n);
                for v in parts.headers.get_all(n) {
                    rh.append(n.clone(), v.clone());
                }
            }
            if let Some(re) = &self.response_regex {
                let drop: Vec<HeaderName> = rh
                    .keys()
                    .filter(|k| re.is_match(&canonical(k.as_str())))
                    .cloned()
                    .collect();
                for k in drop {
                    rh.remove(k);
                }
                for (k, v) in &parts.headers {
                    if re.is_match(&canonical(k.as_str())) {
                        rh.append(k.clone(), v.clone());
                    }
                }
            }
            let auth_cookies: Vec<HeaderValue> = if self.cookies.is_empty() {
                Vec::new()
            } else {
                parts
                    .headers
                    .get_all(header::SET_COOKIE)
                    .iter()
                    .filter(|c| self.cookies.contains(cookie_name(c)))
                    .cloned()
                    .collect()
            };
            let mut resp = next.run(req).await;
            if !auth_cookies.is_empty() {
                let kept: Vec<HeaderValue> = resp
                    .headers()
                    .get_all(header::SET_COOKIE)
                    .iter()
                    .filter(|c| !self.cookies.contains(cookie_name(c)))
                    .cloned()
                    .collect();
                let h = resp.headers_mut();
                h.remove(header::SET_COOKIE);
                for c in kept.into_iter().chain(auth_cookies) {
                    h.append(header::SET_COOKIE, c);
                }
            }
            resp
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_names_canonicalise_like_go() {
        assert_eq!(canonical("x-auth-user"), "X-Auth-User");
        assert_eq!(canonical("remote-groups"), "Remote-Groups");
    }
}
