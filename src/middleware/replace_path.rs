//! `replacePath` and `replacePathRegex`: replace the path, and keep the
//! original in `X-Replaced-Path`.

use super::path::{is_clean, set_path};
use super::{Exchange, Flow, Middleware, MiddlewareError, Req, status_response};
use crate::config::dynamic::middleware as model;
use http::uri::PathAndQuery;
use http::{HeaderName, HeaderValue, StatusCode};
use regex::Regex;

/// `X-Replaced-Path`.
pub const X_REPLACED_PATH: HeaderName = HeaderName::from_static("x-replaced-path");

/// A compiled `replacePath`.
pub struct ReplacePath {
    path: String,
}

/// Compiles a `replacePath`.
pub fn compile(cfg: &model::ReplacePath) -> Result<ReplacePath, MiddlewareError> {
    match PathAndQuery::try_from(cfg.path.as_str()) {
        Ok(pq) if pq.query().is_none() && pq.path() == cfg.path => Ok(ReplacePath {
            path: cfg.path.clone(),
        }),
        _ => Err(MiddlewareError::invalid(
            "path",
            format!("`{}` is not a path", cfg.path),
        )),
    }
}

fn keep_original(req: &mut Req) {
    // A path from the request line is always a valid header value.
    if let Ok(v) = HeaderValue::from_str(req.uri().path()) {
        req.headers_mut().append(X_REPLACED_PATH, v);
    }
}

impl Middleware for ReplacePath {
    fn request(&self, req: &mut Req, _cx: &Exchange) -> Flow {
        keep_original(req);
        match set_path(req, &self.path) {
            Some(()) => Flow::Continue,
            None => Flow::Respond(status_response(StatusCode::INTERNAL_SERVER_ERROR)),
        }
    }
}

/// A compiled `replacePathRegex`.
pub struct ReplacePathRegex {
    regex: Regex,
    replacement: String,
}

/// Compiles a `replacePathRegex`.
pub fn compile_regex(cfg: &model::ReplacePathRegex) -> Result<ReplacePathRegex, MiddlewareError> {
    Ok(ReplacePathRegex {
        regex: MiddlewareError::regex("regex", cfg.regex.trim())?,
        replacement: cfg.replacement.trim().to_owned(),
    })
}

impl Middleware for ReplacePathRegex {
    fn request(&self, req: &mut Req, _cx: &Exchange) -> Flow {
        if !self.regex.is_match(req.uri().path()) {
            return Flow::Continue;
        }
        let replaced = self
            .regex
            .replace_all(req.uri().path(), self.replacement.as_str())
            .into_owned();
        keep_original(req);
        if !is_clean(&replaced) {
            return Flow::Respond(status_response(StatusCode::BAD_REQUEST));
        }
        match set_path(req, &replaced) {
            Some(()) => Flow::Continue,
            None => Flow::Respond(status_response(StatusCode::INTERNAL_SERVER_ERROR)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::RequestBody;
    use http::Request;

    #[test]
    fn regex_replacement_uses_groups_and_keeps_the_original() {
        let m = compile_regex(&model::ReplacePathRegex {
            regex: "^/foo/(.*)".into(),
            replacement: "/bar/${1}".into(),
        })
        .expect("compiles");
        let mut req = Request::get("/foo/x/y?q=1")
            .body(RequestBody::empty())
            .expect("request");
        let cx = Exchange {
            peer: [127, 0, 0, 1].into(),
            tls: false,
            host: None,
            client_certs: None,
        };
        assert!(matches!(m.request(&mut req, &cx), Flow::Continue));
        assert_eq!(req.uri().to_string(), "/bar/x/y?q=1");
        assert_eq!(req.headers()[&X_REPLACED_PATH], "/foo/x/y");
        assert!(
            compile(&model::ReplacePath {
                path: "/a?b".into()
            })
            .is_err()
        );
    }
}
