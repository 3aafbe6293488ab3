//! `redirectScheme` and `redirectRegex`: answer with a redirect built from
//! the URL the client asked for.

use super::{Exchange, Flow, Middleware, MiddlewareError, Req, Resp};
use crate::body::ProxyBody;
use crate::config::dynamic::middleware as model;
use http::{HeaderValue, Method, Response, StatusCode, header};
use regex::Regex;

const X_FORWARDED_PROTO: &str = "x-forwarded-proto";

/// A compiled `redirectScheme`.
pub struct RedirectScheme {
    scheme: String,
    /// `:port`, or empty for the scheme's default port (or no port given).
    port: String,
    permanent: bool,
}

/// Compiles a `redirectScheme`.
pub fn compile_scheme(cfg: &model::RedirectScheme) -> Result<RedirectScheme, MiddlewareError> {
    let scheme = cfg.scheme.trim();
    if scheme.is_empty() {
        return Err(MiddlewareError::invalid(
            "scheme",
            "a target scheme is required",
        ));
    }
    if !scheme
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
    {
        return Err(MiddlewareError::invalid(
            "scheme",
            format!("`{scheme}` is not a URL scheme"),
        ));
    }
    let port = cfg.port.as_deref().map(str::trim).unwrap_or("");
    if !port.is_empty() && port.parse::<u16>().is_err() {
        return Err(MiddlewareError::invalid(
            "port",
            format!("`{port}` is not a port number"),
        ));
    }
    let default = (scheme == "http" && port == "80") || (scheme == "https" && port == "443");
    Ok(RedirectScheme {
        scheme: scheme.to_owned(),
        port: if port.is_empty() || default {
            String::new()
        } else {
            format!(":{port}")
        },
        permanent: cfg.permanent,
    })
}

/// The host and `:port` parts of a `Host` value.
fn split_host(host: &str) -> (&str, &str) {
    let after_v6 = host.rfind(']').map_or(0, |i| i + 1);
    match host[after_v6..].rfind(':') {
        Some(i) => host.split_at(after_v6 + i),
        None => (host, ""),
    }
}

fn request_target(req: &Req) -> &str {
    req.uri().path_and_query().map_or("/", |pq| pq.as_str())
}

impl Middleware for RedirectScheme {
    fn request(&self, req: &mut Req, cx: &Exchange) -> Flow {
        let mut scheme = if cx.tls { "https" } else { "http" };
        // Trusted X-Forwarded-Proto (untrusted ones are gone by now) says
        // what the client used before an earlier proxy.
        if let Some(p) = req.headers().get(X_FORWARDED_PROTO) {
            let p = p.as_bytes();
            if p.eq_ignore_ascii_case(b"http") || p.eq_ignore_ascii_case(b"ws") {
                scheme = "http";
            } else if p.eq_ignore_ascii_case(b"https") || p.eq_ignore_ascii_case(b"wss") {
                scheme = "https";
            }
        }
        let (host, mut port) = split_host(cx.host_str());
        if (scheme == "http" && port == ":80") || (scheme == "https" && port == ":443") {
            port = "";
        }
        if scheme == self.scheme && port == self.port {
            return Flow::Continue;
        }
        let target = request_target(req);
        let location = format!("{}://{host}{}{target}", self.scheme, self.port);
        Flow::Respond(redirect(&location, self.permanent, req.method()))
    }
}

/// A compiled `redirectRegex`.
pub struct RedirectRegex {
    regex: Regex,
    replacement: String,
    permanent: bool,
}

/// Compiles a `redirectRegex`.
pub fn compile_regex(cfg: &model::RedirectRegex) -> Result<RedirectRegex, MiddlewareError> {
    Ok(RedirectRegex {
        regex: MiddlewareError::regex("regex", &cfg.regex)?,
        replacement: cfg.replacement.clone(),
        permanent: cfg.permanent,
    })
}

impl Middleware for RedirectRegex {
    fn request(&self, req: &mut Req, cx: &Exchange) -> Flow {
        // As Traefik: the scheme of the connection (not X-Forwarded-Proto)
        // and the Host as sent, port included.
        let scheme = if cx.tls { "https" } else { "http" };
        let url = format!("{scheme}://{}{}", cx.host_str(), request_target(req));
        if !self.regex.is_match(&url) {
            return Flow::Continue;
        }
        let location = self.regex.replace_all(&url, self.replacement.as_str());
        if location == url {
            return Flow::Continue;
        }
        Flow::Respond(redirect(&location, self.permanent, req.method()))
    }
}

/// 302/307, or 301/308 when permanent (the 30x that keep the method for
/// anything but GET), with `Location` and the status text as body.
fn redirect(location: &str, permanent: bool, method: &Method) -> Resp {
    let status = match (permanent, method == Method::GET) {
        (false, true) => StatusCode::FOUND,
        (false, false) => StatusCode::TEMPORARY_REDIRECT,
        (true, true) => StatusCode::MOVED_PERMANENTLY,
        (true, false) => StatusCode::PERMANENT_REDIRECT,
    };
    let Ok(value) = HeaderValue::from_str(location) else {
        return super::status_response(StatusCode::INTERNAL_SERVER_ERROR);
    };
    let mut resp = Response::new(ProxyBody::text(status.canonical_reason().unwrap_or("")));
    *resp.status_mut() = status;
    resp.headers_mut().insert(header::LOCATION, value);
    resp
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::RequestBody;
    use http::Request;

    fn answer(m: &dyn Middleware, tls: bool, host: &str, req: Req) -> Option<(StatusCode, String)> {
        let cx = Exchange {
            peer: [127, 0, 0, 1].into(),
            tls,
            host: Some(HeaderValue::from_str(host).expect("host")),
            client_certs: None,
        };
        let mut req = req;
        match m.request(&mut req, &cx) {
            Flow::Continue => None,
            Flow::Respond(r) => Some((
                r.status(),
                r.headers()[header::LOCATION]
                    .to_str()
                    .expect("text")
                    .to_owned(),
            )),
        }
    }

    fn get(uri: &str) -> Req {
        Request::get(uri)
            .body(RequestBody::empty())
            .expect("request")
    }

    #[test]
    fn scheme_redirects_keep_host_and_target() {
        let https = compile_scheme(&model::RedirectScheme {
            scheme: "https".into(),
            port: None,
            permanent: true,
        })
        .expect("compiles");
        assert_eq!(
            answer(&https, false, "a.test:8080", get("/x?y=1")),
            Some((StatusCode::MOVED_PERMANENTLY, "https://a.test/x?y=1".into()))
        );
        assert_eq!(answer(&https, true, "a.test", get("/x")), None);
        assert_eq!(answer(&https, true, "a.test:443", get("/x")), None);
        let post = Request::post("/form")
            .body(RequestBody::empty())
            .expect("request");
        assert_eq!(
            answer(&https, false, "a.test", post).map(|a| a.0),
            Some(StatusCode::PERMANENT_REDIRECT)
        );
        let mut forwarded = get("/x");
        forwarded
            .headers_mut()
            .insert(X_FORWARDED_PROTO, HeaderValue::from_static("https"));
        assert_eq!(answer(&https, false, "a.test", forwarded), None);

        let port = compile_scheme(&model::RedirectScheme {
            scheme: "https".into(),
            port: Some("8443".into()),
            permanent: false,
        })
        .expect("compiles");
        assert_eq!(
            answer(&port, false, "[::1]:8000", get("/")),
            Some((StatusCode::FOUND, "https://[::1]:8443/".into()))
        );
        assert!(compile_scheme(&model::RedirectScheme::default()).is_err());
    }

    #[test]
    fn regex_redirects_rewrite_the_whole_url() {
        let m = compile_regex(&model::RedirectRegex {
            regex: "^http://localhost/(.*)".into(),
            replacement: "http://mydomain/${1}".into(),
            permanent: false,
        })
        .expect("compiles");
        assert_eq!(
            answer(&m, false, "localhost", get("/a/b?c")),
            Some((StatusCode::FOUND, "http://mydomain/a/b?c".into()))
        );
        assert_eq!(answer(&m, false, "other", get("/a")), None);
    }
}
