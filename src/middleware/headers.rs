//! `headers`: custom request and response headers (an empty value removes
//! one), CORS (including preflight answers) and security headers.
//!
//! Every header name and value is built at compile time. Without CORS
//! origins and without `sslProxyHeaders` this is a plain step; with them it
//! wraps the rest of the chain, because the response then depends on the
//! request (its `Origin`, its forwarded scheme).

use super::{Exchange, Flow, Middleware, MiddlewareError, Next, Req, Resp, text_response};
use crate::body::ProxyBody;
use crate::config::dynamic::middleware as model;
use futures_util::future::BoxFuture;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Response, StatusCode};
use regex::Regex;

const ALLOW_CREDENTIALS: HeaderName = HeaderName::from_static("access-control-allow-credentials");
const ALLOW_HEADERS: HeaderName = HeaderName::from_static("access-control-allow-headers");
const ALLOW_METHODS: HeaderName = HeaderName::from_static("access-control-allow-methods");
const ALLOW_ORIGIN: HeaderName = HeaderName::from_static("access-control-allow-origin");
const EXPOSE_HEADERS: HeaderName = HeaderName::from_static("access-control-expose-headers");
const MAX_AGE: HeaderName = HeaderName::from_static("access-control-max-age");
const REQUEST_METHOD: HeaderName = HeaderName::from_static("access-control-request-method");
const REQUEST_HEADERS: HeaderName = HeaderName::from_static("access-control-request-headers");
const TRUE: HeaderValue = HeaderValue::from_static("true");
const STAR: HeaderValue = HeaderValue::from_static("*");

/// A compiled `headers`.
pub struct Headers {
    request: Vec<(HeaderName, Option<HeaderValue>)>,
    response: Vec<(HeaderName, Option<HeaderValue>)>,
    cors: Option<Cors>,
    /// Security headers always set on responses.
    secure: Vec<(HeaderName, HeaderValue)>,
    /// `Strict-Transport-Security`, set on HTTPS responses (or all, forced).
    sts: Option<HeaderValue>,
    force_sts: bool,
    allowed_hosts: Vec<String>,
    hosts_proxy_headers: Vec<HeaderName>,
    ssl_proxy_headers: Vec<(HeaderName, HeaderValue)>,
    wraps: bool,
}

struct Cors {
    credentials: bool,
    allow_headers: Option<HeaderValue>,
    allow_headers_any: bool,
    allow_methods: Option<HeaderValue>,
    allow_methods_any: bool,
    origins: Vec<String>,
    origin_regexes: Vec<Regex>,
    max_age: Option<HeaderValue>,
    expose: Option<HeaderValue>,
    vary: bool,
}

fn name(option: &'static str, n: &str) -> Result<HeaderName, MiddlewareError> {
    HeaderName::from_bytes(n.trim().as_bytes())
        .map_err(|_| MiddlewareError::invalid(option, format!("`{n}` is not a header name")))
}

fn value(option: &'static str, v: &str) -> Result<HeaderValue, MiddlewareError> {
    HeaderValue::from_str(v)
        .map_err(|_| MiddlewareError::invalid(option, format!("`{v}` is not a valid header value")))
}

fn joined(option: &'static str, list: &[String]) -> Result<Option<HeaderValue>, MiddlewareError> {
    if list.is_empty() {
        Ok(None)
    } else {
        value(option, &list.join(",")).map(Some)
    }
}

fn custom(
    option: &'static str,
    map: &std::collections::BTreeMap<String, String>,
) -> Result<Vec<(HeaderName, Option<HeaderValue>)>, MiddlewareError> {
    map.iter()
        .map(|(k, v)| {
            let v = if v.is_empty() {
                None
            } else {
                Some(value(option, v)?)
            };
            Ok((name(option, k)?, v))
        })
        .collect()
}

/// Compiles a `headers`.
pub fn compile(cfg: &model::Headers) -> Result<Headers, MiddlewareError> {
    let has_cors = cfg.access_control_allow_credentials
        || !cfg.access_control_allow_headers.is_empty()
        || !cfg.access_control_allow_methods.is_empty()
        || !cfg.access_control_allow_origin_list.is_empty()
        || !cfg.access_control_allow_origin_list_regex.is_empty()
        || !cfg.access_control_expose_headers.is_empty()
        || cfg.access_control_max_age.is_some()
        || cfg.add_vary_header;
    let cors = if has_cors {
        let star_expose = cfg.access_control_expose_headers.iter().any(|h| h == "*");
        Some(Cors {
            credentials: cfg.access_control_allow_credentials,
            allow_headers: joined(
                "accessControlAllowHeaders",
                &cfg.access_control_allow_headers,
            )?,
            allow_headers_any: cfg.access_control_allow_headers.iter().any(|h| h == "*"),
            allow_methods: joined(
                "accessControlAllowMethods",
                &cfg.access_control_allow_methods,
            )?,
            allow_methods_any: cfg.access_control_allow_methods.iter().any(|h| h == "*"),
            origins: cfg.access_control_allow_origin_list.clone(),
            origin_regexes: cfg
                .access_control_allow_origin_list_regex
                .iter()
                .map(|r| MiddlewareError::regex("accessControlAllowOriginListRegex", r))
                .collect::<Result<_, _>>()?,
            max_age: cfg.access_control_max_age.map(HeaderValue::from),
            // With credentials, a `*` would be taken literally by browsers;
            // Traefik leaves the header out then, and so does this.
            expose: if star_expose && cfg.access_control_allow_credentials {
                None
            } else {
                joined(
                    "accessControlExposeHeaders",
                    &cfg.access_control_expose_headers,
                )?
            },
            vary: cfg.add_vary_header,
        })
    } else {
        None
    };

    let mut secure = Vec::new();
    let frame = match (&cfg.custom_frame_options_value, cfg.frame_deny) {
        (Some(v), _) if !v.is_empty() => Some(value("customFrameOptionsValue", v)?),
        (_, true) => Some(HeaderValue::from_static("DENY")),
        _ => None,
    };
    if let Some(v) = frame {
        secure.push((header::X_FRAME_OPTIONS, v));
    }
    if cfg.content_type_nosniff {
        secure.push((
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ));
    }
    let xss = match (&cfg.custom_browser_xss_value, cfg.browser_xss_filter) {
        (Some(v), _) if !v.is_empty() => Some(value("customBrowserXSSValue", v)?),
        (_, true) => Some(HeaderValue::from_static("1; mode=block")),
        _ => None,
    };
    if let Some(v) = xss {
        secure.push((header::X_XSS_PROTECTION, v));
    }
    for (h, option, v) in [
        (
            header::CONTENT_SECURITY_POLICY,
            "contentSecurityPolicy",
            &cfg.content_security_policy,
        ),
        (
            header::CONTENT_SECURITY_POLICY_REPORT_ONLY,
            "contentSecurityPolicyReportOnly",
            &cfg.content_security_policy_report_only,
        ),
        (
            HeaderName::from_static("public-key-pins"),
            "publicKey",
            &cfg.public_key,
        ),
        (
            header::REFERRER_POLICY,
            "referrerPolicy",
            &cfg.referrer_policy,
        ),
        (
            HeaderName::from_static("permissions-policy"),
            "permissionsPolicy",
            &cfg.permissions_policy,
        ),
    ] {
        if let Some(v) = v.as_deref().filter(|v| !v.is_empty()) {
            secure.push((h, value(option, v)?));
        }
    }
    let sts = match cfg.sts_seconds {
        Some(s) if s > 0 && !cfg.is_development => {
            let mut v = format!("max-age={s}");
            if cfg.sts_include_subdomains {
                v.push_str("; includeSubDomains");
            }
            if cfg.sts_preload {
                v.push_str("; preload");
            }
            Some(value("stsSeconds", &v)?)
        }
        Some(s) if s < 0 => {
            return Err(MiddlewareError::invalid(
                "stsSeconds",
                "must not be negative",
            ));
        }
        _ => None,
    };
    let ssl_proxy_headers = cfg
        .ssl_proxy_headers
        .iter()
        .map(|(k, v)| Ok((name("sslProxyHeaders", k)?, value("sslProxyHeaders", v)?)))
        .collect::<Result<Vec<_>, _>>()?;
    let origin_dependent = cors
        .as_ref()
        .is_some_and(|c| !c.origins.is_empty() || !c.origin_regexes.is_empty());
    Ok(Headers {
        request: custom("customRequestHeaders", &cfg.custom_request_headers)?,
        response: custom("customResponseHeaders", &cfg.custom_response_headers)?,
        wraps: origin_dependent || (sts.is_some() && !ssl_proxy_headers.is_empty()),
        cors,
        secure,
        sts,
        force_sts: cfg.force_sts_header,
        allowed_hosts: if cfg.is_development {
            Vec::new()
        } else {
            cfg.allowed_hosts.clone()
        },
        hosts_proxy_headers: cfg
            .hosts_proxy_headers
            .iter()
            .map(|h| name("hostsProxyHeaders", h))
            .collect::<Result<_, _>>()?,
        ssl_proxy_headers,
    })
}

/// The request phase's outcome.
enum Checked {
    /// Go on; the response phase needs this.
    Pass(Seen),
    /// Answer now (preflight, bad host).
    Answer(Resp),
}

/// What the response phase needs to know about its request.
struct Seen {
    origin: Option<HeaderValue>,
    https: bool,
}

impl Headers {
    /// The request phase; `Err` is the early answer.
    fn on_request(&self, req: &mut Req, cx: &Exchange) -> Checked {
        if !self.allowed_hosts.is_empty() {
            let host = self
                .hosts_proxy_headers
                .iter()
                .find_map(|h| req.headers().get(h))
                .and_then(|v| v.to_str().ok())
                .unwrap_or(cx.host_str());
            if !self.allowed_hosts.iter().any(|h| h == host) {
                return Checked::Answer(text_response(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "Bad Host\n",
                ));
            }
        }
        if let Some(cors) = &self.cors
            && let Some(resp) = cors.preflight(req)
        {
            return Checked::Answer(resp);
        }
        let seen = Seen {
            origin: req.headers().get(header::ORIGIN).cloned(),
            https: cx.tls
                || self
                    .ssl_proxy_headers
                    .iter()
                    .any(|(k, v)| req.headers().get(k) == Some(v)),
        };
        apply(req.headers_mut(), &self.request);
        Checked::Pass(seen)
    }

    fn on_response(&self, resp: &mut Resp, seen: &Seen) {
        let headers = resp.headers_mut();
        for (k, v) in &self.secure {
            headers.insert(k.clone(), v.clone());
        }
        if let Some(sts) = &self.sts
            && (seen.https || self.force_sts)
        {
            headers.insert(header::STRICT_TRANSPORT_SECURITY, sts.clone());
        }
        apply(headers, &self.response);
        if let Some(cors) = &self.cors {
            cors.on_response(headers, seen.origin.as_ref());
        }
    }
}

fn apply(headers: &mut HeaderMap, list: &[(HeaderName, Option<HeaderValue>)]) {
    for (k, v) in list {
        match v {
            Some(v) => {
                headers.insert(k.clone(), v.clone());
            }
            None => {
                headers.remove(k);
            }
        }
    }
}

impl Cors {
    fn allowed_origin(&self, origin: Option<&HeaderValue>) -> Option<HeaderValue> {
        let text = origin.and_then(|o| o.to_str().ok()).unwrap_or("");
        for item in &self.origins {
            if item == text {
                return origin.cloned();
            }
            if item == "*" {
                // A wildcard cannot go with credentials; echo the origin.
                return if self.credentials {
                    origin.cloned()
                } else {
                    Some(STAR)
                };
            }
        }
        self.origin_regexes
            .iter()
            .any(|r| r.is_match(text))
            .then(|| origin.cloned())
            .flatten()
    }

    /// The answer to a preflight request, when this is one.
    fn preflight(&self, req: &Req) -> Option<Resp> {
        let h = req.headers();
        let method = h.get(REQUEST_METHOD).filter(|v| !v.is_empty())?;
        let origin = h.get(header::ORIGIN).filter(|v| !v.is_empty())?;
        if req.method() != Method::OPTIONS {
            return None;
        }
        let mut resp = Response::new(ProxyBody::empty());
        let out = resp.headers_mut();
        if self.credentials {
            out.insert(ALLOW_CREDENTIALS, TRUE);
        }
        if self.allow_headers_any && self.credentials {
            if let Some(asked) = h.get(REQUEST_HEADERS).filter(|v| !v.is_empty()) {
                out.insert(ALLOW_HEADERS, asked.clone());
            }
        } else if let Some(v) = &self.allow_headers {
            out.insert(ALLOW_HEADERS, v.clone());
        }
        if self.allow_methods_any && self.credentials {
            out.insert(ALLOW_METHODS, method.clone());
        } else if let Some(v) = &self.allow_methods {
            out.insert(ALLOW_METHODS, v.clone());
        }
        if let Some(o) = self.allowed_origin(Some(origin)) {
            out.insert(ALLOW_ORIGIN, o);
        }
        if let Some(v) = &self.max_age {
            out.insert(MAX_AGE, v.clone());
        }
        if let Some(v) = &self.expose {
            out.insert(EXPOSE_HEADERS, v.clone());
        }
        out.insert(header::CONTENT_LENGTH, HeaderValue::from_static("0"));
        Some(resp)
    }

    fn on_response(&self, out: &mut HeaderMap, origin: Option<&HeaderValue>) {
        if let Some(o) = self.allowed_origin(origin) {
            out.insert(ALLOW_ORIGIN, o);
        }
        if self.credentials {
            out.insert(ALLOW_CREDENTIALS, TRUE);
        }
        if let Some(v) = &self.expose {
            out.insert(EXPOSE_HEADERS, v.clone());
        }
        if self.vary {
            let vary = match out.get(header::VARY) {
                Some(v) if v == "Origin" => return,
                Some(v) => {
                    let mut s = v.as_bytes().to_vec();
                    s.extend_from_slice(b",Origin");
                    HeaderValue::from_bytes(&s).unwrap_or(HeaderValue::from_static("Origin"))
                }
                None => HeaderValue::from_static("Origin"),
            };
            out.insert(header::VARY, vary);
        }
    }
}

impl Middleware for Headers {
    fn request(&self, req: &mut Req, cx: &Exchange) -> Flow {
        match self.on_request(req, cx) {
            Checked::Pass(_) => Flow::Continue,
            Checked::Answer(resp) => Flow::Respond(resp),
        }
    }

    fn response(&self, resp: &mut Resp, cx: &Exchange) {
        // As a step, the response depends on nothing but the connection.
        let seen = Seen {
            origin: None,
            https: cx.tls,
        };
        self.on_response(resp, &seen);
    }

    fn wraps(&self) -> bool {
        self.wraps
    }

    fn call<'a>(&'a self, mut req: Req, cx: &'a Exchange, next: Next<'a>) -> BoxFuture<'a, Resp> {
        Box::pin(async move {
            let seen = match self.on_request(&mut req, cx) {
                Checked::Pass(seen) => seen,
                Checked::Answer(resp) => return resp,
            };
            let mut resp = next.run(req).await;
            self.on_response(&mut resp, &seen);
            resp
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::RequestBody;
    use http::Request;

    fn cx(tls: bool) -> Exchange {
        Exchange {
            peer: [127, 0, 0, 1].into(),
            tls,
            host: Some(HeaderValue::from_static("a.test")),
            client_certs: None,
        }
    }

    #[test]
    fn preflight_is_answered_here() {
        let h = compile(&model::Headers {
            access_control_allow_methods: vec!["GET".into(), "PUT".into()],
            access_control_allow_headers: vec!["X-A".into()],
            access_control_allow_origin_list: vec!["https://app.test".into()],
            access_control_max_age: Some(100),
            ..Default::default()
        })
        .expect("compiles");
        let mut req = Request::builder()
            .method("OPTIONS")
            .uri("/x")
            .header("origin", "https://app.test")
            .header("access-control-request-method", "PUT")
            .body(RequestBody::empty())
            .expect("request");
        let Checked::Answer(resp) = h.on_request(&mut req, &cx(false)) else {
            panic!("a preflight is answered")
        };
        let got = resp.headers();
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(got[ALLOW_METHODS], "GET,PUT");
        assert_eq!(got[ALLOW_HEADERS], "X-A");
        assert_eq!(got[ALLOW_ORIGIN], "https://app.test");
        assert_eq!(got[MAX_AGE], "100");
    }

    #[test]
    fn security_headers_and_sts_only_over_https() {
        let h = compile(&model::Headers {
            sts_seconds: Some(31536000),
            sts_include_subdomains: true,
            sts_preload: true,
            frame_deny: true,
            content_type_nosniff: true,
            referrer_policy: Some("no-referrer".into()),
            custom_response_headers: [("X-Powered-By".to_owned(), String::new())].into(),
            ..Default::default()
        })
        .expect("compiles");
        assert!(!h.wraps());
        let mut resp = Response::new(ProxyBody::empty());
        resp.headers_mut()
            .insert("x-powered-by", HeaderValue::from_static("php"));
        h.response(&mut resp, &cx(false));
        assert!(
            resp.headers()
                .get(header::STRICT_TRANSPORT_SECURITY)
                .is_none()
        );
        assert!(resp.headers().get("x-powered-by").is_none());
        assert_eq!(resp.headers()[header::X_FRAME_OPTIONS], "DENY");
        let mut resp = Response::new(ProxyBody::empty());
        h.response(&mut resp, &cx(true));
        assert_eq!(
            resp.headers()[header::STRICT_TRANSPORT_SECURITY],
            "max-age=31536000; includeSubDomains; preload"
        );
    }

    #[test]
    fn bad_values_name_their_option() {
        let err = compile(&model::Headers {
            custom_request_headers: [("X Bad".to_owned(), "v".to_owned())].into(),
            ..Default::default()
        })
        .err()
        .expect("bad header name");
        assert!(err.to_string().starts_with("customRequestHeaders"), "{err}");
        let err = compile(&model::Headers {
            access_control_allow_origin_list_regex: vec!["(".into()],
            ..Default::default()
        })
        .err()
        .expect("bad regex");
        assert!(
            err.to_string()
                .starts_with("accessControlAllowOriginListRegex"),
            "{err}"
        );
    }
}
