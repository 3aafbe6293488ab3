//! `encodedCharacters`: refuse, for one router, request paths holding
//! percent-escapes of reserved characters that a server might decode before
//! it routes (`%2F`, `%5C`, `%00`, `%3B`, `%25`, `%3F`, `%23`).
//!
//! The entry point's own `http.encodedCharacters` check runs first, before
//! routing, so this middleware can only make a router stricter than its
//! entry point: an escape the entry point refuses never reaches it.

use super::{Exchange, Flow, Middleware, MiddlewareError, Req, status_response};
use crate::config::dynamic::middleware as model;
use crate::percent::DeniedEscapes;
use http::StatusCode;

/// A compiled `encodedCharacters`.
pub struct EncodedCharacters {
    denied: DeniedEscapes,
}

/// Compiles an `encodedCharacters`; every setting is valid.
pub fn compile(cfg: &model::EncodedCharacters) -> Result<EncodedCharacters, MiddlewareError> {
    Ok(EncodedCharacters {
        denied: DeniedEscapes::new(cfg),
    })
}

impl Middleware for EncodedCharacters {
    fn request(&self, req: &mut Req, _cx: &Exchange) -> Flow {
        match self.denied.first_in(req.uri().path()) {
            None => Flow::Continue,
            Some(_) => Flow::Respond(status_response(StatusCode::BAD_REQUEST)),
        }
    }
}
