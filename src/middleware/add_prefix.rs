//! `addPrefix`: put a prefix in front of the path.

use super::path::set_path;
use super::{Exchange, Flow, Middleware, MiddlewareError, Req, status_response};
use crate::config::dynamic::middleware as model;
use http::StatusCode;

/// A compiled `addPrefix`.
pub struct AddPrefix {
    prefix: String,
}

/// Compiles an `addPrefix`.
pub fn compile(cfg: &model::AddPrefix) -> Result<AddPrefix, MiddlewareError> {
    let prefix = super::path::with_leading_slash(cfg.prefix.trim()).into_owned();
    if prefix.contains(['?', '#', ' ']) {
        return Err(MiddlewareError::invalid(
            "prefix",
            format!("`{}` is not a path", cfg.prefix),
        ));
    }
    Ok(AddPrefix { prefix })
}

impl Middleware for AddPrefix {
    fn request(&self, req: &mut Req, _cx: &Exchange) -> Flow {
        let mut path = String::with_capacity(self.prefix.len() + req.uri().path().len());
        path.push_str(&self.prefix);
        path.push_str(req.uri().path());
        match set_path(req, &path) {
            Some(()) => Flow::Continue,
            None => Flow::Respond(status_response(StatusCode::BAD_REQUEST)),
        }
    }
}
