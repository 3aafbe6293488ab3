//! Middlewares: one file per Traefik middleware type, all behind the
//! [`Middleware`] trait, and the [`Chain`] that runs a router's list of them
//! around the call to its service.
//!
//! Each file has a `compile` function (model → compiled middleware, or a
//! [`MiddlewareError`] naming the option) and the compiled type. Compiling
//! does everything that can be done once: regexes, header names and values,
//! parsed password files. The hot path then only reads.

pub mod add_prefix;
pub mod basic_auth;
pub mod buffering;
pub mod chain;
pub mod circuit_breaker;
pub mod compress;
pub mod content_type;
pub mod crowdsec;
pub mod digest_auth;
pub mod encoded_characters;
pub mod errors;
pub mod expr;
pub mod forward_auth;
pub mod grpc_web;
pub mod headers;
pub mod htpasswd;
pub mod in_flight_req;
pub mod ip;
pub mod ip_allow_list;
pub mod pass_tls_client_cert;
pub mod path;
pub mod plugin;
pub mod rate_limit;
pub mod redirect;
pub mod replace_path;
pub mod retry;
pub mod source;
pub mod spool;
pub mod status;
pub mod strip_prefix;
pub mod tcp;

pub use chain::{Chain, LayerName, Next, ServiceRef, Terminal};

use crate::body::{ProxyBody, RequestBody};
use futures_util::future::BoxFuture;
use http::{HeaderValue, Request, Response, StatusCode, header};
use std::net::IpAddr;

/// A request as middlewares see it.
pub type Req = Request<RequestBody>;
/// A response as middlewares see it.
pub type Resp = Response<ProxyBody>;

/// The user an auth middleware (basicAuth, forwardAuth's `headerField`)
/// found, for the access log's `ClientUsername`. Set as a request
/// extension; the chain moves it onto the response, where the proxy reads
/// it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientUsername(pub String);

/// What a middleware decided about a request on its way in.
pub enum Flow {
    /// Go on to the next middleware (and finally the service).
    Continue,
    /// Answer now (redirect, 401, 429, CORS preflight): the service is not
    /// called, and only the middlewares before this one see the response.
    Respond(Resp),
}

/// What a middleware knows about the exchange besides the request itself.
/// Built once per request, only for routes that have middlewares.
#[derive(Clone, Debug)]
pub struct Exchange {
    /// The client's address (the TCP peer).
    pub peer: IpAddr,
    /// The connection is TLS.
    pub tls: bool,
    /// The client's `Host` (or HTTP/2 `:authority`) as it arrived.
    pub host: Option<HeaderValue>,
    /// The certificates the client sent over TLS, leaf first.
    pub client_certs: Option<ClientCerts>,
}

/// The certificate chain a TLS client presented, leaf first.
pub type ClientCerts = std::sync::Arc<[rustls::pki_types::CertificateDer<'static>]>;

impl Exchange {
    /// The host the client asked for, as text (empty when none or not text).
    pub fn host_str(&self) -> &str {
        self.host
            .as_ref()
            .and_then(|h| h.to_str().ok())
            .unwrap_or("")
    }
}

/// One compiled middleware.
///
/// Contract:
/// - Most middlewares are *steps*: `request` is called with the request on
///   its way in, in chain order; `response` with the response on its way
///   out, in reverse order, only if this middleware's `request` returned
///   `Continue`. Both are synchronous and must not block, await, take a
///   lock or allocate what could have been prepared at compile time.
/// - A middleware that must hold the rest of the chain (retry, buffering,
///   circuitBreaker, errors, forwardAuth, rate and concurrency limits,
///   compress) returns true from `wraps`; then `call` is used instead of
///   the two phases, and it runs the rest with `next.run(req)` zero or more
///   times. Its future is boxed, so only routes using it pay for that.
/// - Errors in the request (bad input from the client) become responses;
///   a middleware never panics and never fails the connection.
/// - The defaults pass the request and response through unchanged.
pub trait Middleware: Send + Sync + 'static {
    /// The request on its way in (steps only).
    fn request(&self, _req: &mut Req, _cx: &Exchange) -> Flow {
        Flow::Continue
    }

    /// The response on its way out (steps only).
    fn response(&self, _resp: &mut Resp, _cx: &Exchange) {}

    /// Whether this middleware wraps the rest of the chain (`call`).
    fn wraps(&self) -> bool {
        false
    }

    /// Runs this middleware around the rest of the chain (wrapping
    /// middlewares only). The default just goes on.
    fn call<'a>(&'a self, req: Req, _cx: &'a Exchange, next: Next<'a>) -> BoxFuture<'a, Resp> {
        next.run(req)
    }
}

/// Why a middleware's configuration cannot be used. Each variant names the
/// option, so the message tells the user what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MiddlewareError {
    /// A regular expression does not compile.
    #[error("{option}: invalid regex `{regex}`: {reason}")]
    Regex {
        /// The option, e.g. `regex`.
        option: &'static str,
        /// The expression as given.
        regex: String,
        /// What the regex engine said.
        reason: String,
    },
    /// An option has a value that cannot work.
    #[error("{option}: {reason}")]
    Invalid {
        /// The option, e.g. `average`.
        option: &'static str,
        /// Why, in a sentence.
        reason: String,
    },
    /// A line of a password file is not `user:hash` in a known format.
    #[error("{option}: line {line}: {reason}")]
    Htpasswd {
        /// `users` or `usersFile`.
        option: &'static str,
        /// 1-based line (or list entry) number.
        line: usize,
        /// What is wrong with it.
        reason: htpasswd::HtpasswdError,
    },
    /// A line of a digest password file is not `user:realm:hash`.
    #[error("{option}: line {line}: {reason}")]
    Htdigest {
        /// `users` or `usersFile`.
        option: &'static str,
        /// 1-based line (or list entry) number.
        line: usize,
        /// What is wrong with it.
        reason: digest_auth::HtdigestError,
    },
    /// A `plugin` middleware that cannot run: undeclared, not built in, or
    /// one of its own settings.
    #[error(transparent)]
    Plugin(crate::config::problem::PluginProblem),
}

impl MiddlewareError {
    /// Shorthand for [`MiddlewareError::Invalid`].
    pub fn invalid(option: &'static str, reason: impl Into<String>) -> Self {
        MiddlewareError::Invalid {
            option,
            reason: reason.into(),
        }
    }

    /// Compiles `regex` for `option`.
    pub fn regex(option: &'static str, regex: &str) -> Result<regex::Regex, Self> {
        regex::Regex::new(regex).map_err(|e| MiddlewareError::Regex {
            option,
            regex: regex.to_owned(),
            reason: e.to_string(),
        })
    }
}

/// A short plain-text response made by a middleware.
pub fn text_response(status: StatusCode, text: &'static str) -> Resp {
    let mut resp = Response::new(ProxyBody::text(text));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}

/// A response with `status` and its canonical reason as the body, as Go's
/// `http.Error` writes them (what Traefik's middlewares answer with).
pub fn status_response(status: StatusCode) -> Resp {
    let reason = status.canonical_reason().unwrap_or("");
    let mut resp = Response::new(ProxyBody::bytes(bytes::Bytes::from(format!("{reason}\n"))));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}
