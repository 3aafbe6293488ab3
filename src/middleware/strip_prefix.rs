//! `stripPrefix` and `stripPrefixRegex`: remove the first matching prefix
//! from the path and tell the server what was removed in
//! `X-Forwarded-Prefix`.

use super::path::{is_clean, set_path, with_leading_slash};
use super::{Exchange, Flow, Middleware, MiddlewareError, Req, status_response};
use crate::config::dynamic::middleware as model;
use http::{HeaderName, HeaderValue, StatusCode};
use regex::Regex;

/// `X-Forwarded-Prefix`.
pub const X_FORWARDED_PREFIX: HeaderName = HeaderName::from_static("x-forwarded-prefix");

/// A compiled `stripPrefix`.
pub struct StripPrefix {
    /// Each prefix with its prebuilt header value, in configuration order.
    prefixes: Vec<(String, HeaderValue)>,
}

/// Compiles a `stripPrefix`.
pub fn compile(cfg: &model::StripPrefix) -> Result<StripPrefix, MiddlewareError> {
    let mut prefixes = Vec::with_capacity(cfg.prefixes.len());
    for p in &cfg.prefixes {
        let p = p.trim();
        let value = HeaderValue::from_str(p).map_err(|_| {
            MiddlewareError::invalid(
                "prefixes",
                format!("`{p}` cannot be sent as a header value"),
            )
        })?;
        prefixes.push((p.to_owned(), value));
    }
    Ok(StripPrefix { prefixes })
}

impl Middleware for StripPrefix {
    fn request(&self, req: &mut Req, _cx: &Exchange) -> Flow {
        let path = req.uri().path();
        let Some((prefix, value)) = self
            .prefixes
            .iter()
            .find(|(p, _)| path.starts_with(p.as_str()))
        else {
            return Flow::Continue;
        };
        let stripped = with_leading_slash(&path[prefix.len()..]).into_owned();
        strip_to(req, &stripped, value.clone())
    }
}

/// Sets the stripped path and the prefix header, or answers 400 when the
/// stripped path would escape through dot segments.
fn strip_to(req: &mut Req, stripped: &str, prefix: HeaderValue) -> Flow {
    if !is_clean(stripped) || set_path(req, stripped).is_none() {
        return Flow::Respond(status_response(StatusCode::BAD_REQUEST));
    }
    req.headers_mut().append(X_FORWARDED_PREFIX, prefix);
    Flow::Continue
}

/// A compiled `stripPrefixRegex`.
pub struct StripPrefixRegex {
    regexes: Vec<Regex>,
}

/// Compiles a `stripPrefixRegex`.
pub fn compile_regex(cfg: &model::StripPrefixRegex) -> Result<StripPrefixRegex, MiddlewareError> {
    let regexes = cfg
        .regex
        .iter()
        .map(|r| MiddlewareError::regex("regex", r.trim()))
        .collect::<Result<_, _>>()?;
    Ok(StripPrefixRegex { regexes })
}

impl Middleware for StripPrefixRegex {
    fn request(&self, req: &mut Req, _cx: &Exchange) -> Flow {
        let path = req.uri().path();
        for re in &self.regexes {
            let Some(m) = re.find(path) else { continue };
            // As Traefik: the matched text must be a prefix of the path.
            if m.is_empty() || !path.starts_with(m.as_str()) {
                continue;
            }
            let prefix = m.as_str();
            let Ok(value) = HeaderValue::from_str(prefix) else {
                return Flow::Respond(status_response(StatusCode::BAD_REQUEST));
            };
            let stripped = with_leading_slash(&path[prefix.len()..]).into_owned();
            return strip_to(req, &stripped, value);
        }
        Flow::Continue
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::RequestBody;
    use http::Request;

    fn run(m: &dyn Middleware, uri: &str) -> (Option<StatusCode>, String, Vec<String>) {
        let mut req = Request::get(uri)
            .body(RequestBody::empty())
            .expect("request");
        let cx = Exchange {
            peer: [127, 0, 0, 1].into(),
            tls: false,
            host: None,
            client_certs: None,
        };
        let status = match m.request(&mut req, &cx) {
            Flow::Continue => None,
            Flow::Respond(r) => Some(r.status()),
        };
        let prefixes = req
            .headers()
            .get_all(X_FORWARDED_PREFIX)
            .iter()
            .map(|v| v.to_str().unwrap_or("").to_owned())
            .collect();
        (status, req.uri().to_string(), prefixes)
    }

    #[test]
    fn the_first_matching_prefix_goes() {
        let m = compile(&model::StripPrefix {
            prefixes: vec!["/foo".into(), "/fiibar".into()],
            force_slash: None,
        })
        .expect("compiles");
        assert_eq!(
            run(&m, "/foo/bar?x=1"),
            (None, "/bar?x=1".into(), vec!["/foo".into()])
        );
        assert_eq!(run(&m, "/foo"), (None, "/".into(), vec!["/foo".into()]));
        assert_eq!(
            run(&m, "/foobar"),
            (None, "/bar".into(), vec!["/foo".into()])
        );
        assert_eq!(run(&m, "/other"), (None, "/other".into(), vec![]));
        assert_eq!(run(&m, "/foo/../admin").0, Some(StatusCode::BAD_REQUEST));
        assert_eq!(run(&m, "/foo//x").0, Some(StatusCode::BAD_REQUEST));
    }

    #[test]
    fn regex_prefixes_must_start_the_path() {
        let m = compile_regex(&model::StripPrefixRegex {
            regex: vec!["/foo/[a-z0-9]+/[0-9]+/".into()],
        })
        .expect("compiles");
        assert_eq!(
            run(&m, "/foo/abc/12/x"),
            (None, "/x".into(), vec!["/foo/abc/12/".into()])
        );
        assert_eq!(run(&m, "/a/foo/abc/12/x").1, "/a/foo/abc/12/x");
        let err = compile_regex(&model::StripPrefixRegex {
            regex: vec!["/(unclosed".into()],
        })
        .err()
        .expect("invalid regex");
        assert!(
            err.to_string()
                .starts_with("regex: invalid regex `/(unclosed`"),
            "{err}"
        );
    }
}
