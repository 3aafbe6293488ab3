//! `basicAuth`: HTTP basic authentication against htpasswd users.

use super::htpasswd::{self, Hash, constant_time_eq};
use super::{Exchange, Flow, Middleware, MiddlewareError, Req};
use crate::body::ProxyBody;
use crate::config::dynamic::middleware as model;
use arc_swap::ArcSwapOption;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use http::header::{self, HeaderName, HeaderValue};
use http::{Response, StatusCode};
use sha2::{Digest as _, Sha256};
use std::collections::HashMap;
use std::sync::Arc;

/// A compiled `basicAuth`.
pub struct BasicAuth {
    users: HashMap<String, User>,
    challenge: HeaderValue,
    remove_header: bool,
    header_field: Option<HeaderName>,
}

struct User {
    hash: Hash,
    /// SHA-256 of the last password that passed a slow (bcrypt) check, so
    /// that a browser sending the same credentials on every request does
    /// not cost a bcrypt round each time.
    passed: ArcSwapOption<[u8; 32]>,
}

/// Compiles a `basicAuth`, reading `usersFile` if set (`users` win over the
/// file's lines for the same user, as in Traefik).
pub fn compile(cfg: &model::BasicAuth) -> Result<BasicAuth, MiddlewareError> {
    let mut users = HashMap::new();
    if let Some(path) = cfg.users_file.as_deref().filter(|p| !p.is_empty()) {
        let text = std::fs::read_to_string(path).map_err(|e| {
            MiddlewareError::invalid("usersFile", format!("cannot read `{path}`: {e}"))
        })?;
        add_lines(&mut users, "usersFile", text.lines())?;
    }
    add_lines(&mut users, "users", cfg.users.iter().map(String::as_str))?;
    if users.is_empty() {
        return Err(MiddlewareError::invalid(
            "users",
            "no users given (users or usersFile)",
        ));
    }
    let realm = cfg.realm.as_deref().unwrap_or("gangway");
    let challenge = HeaderValue::from_str(&format!("Basic realm=\"{}\"", realm.replace('"', "")))
        .map_err(|_| {
        MiddlewareError::invalid("realm", format!("`{realm}` cannot be sent in a header"))
    })?;
    let header_field = match cfg.header_field.as_deref().filter(|h| !h.is_empty()) {
        None => None,
        Some(h) => Some(HeaderName::from_bytes(h.as_bytes()).map_err(|_| {
            MiddlewareError::invalid("headerField", format!("`{h}` is not a header name"))
        })?),
    };
    Ok(BasicAuth {
        users,
        challenge,
        remove_header: cfg.remove_header,
        header_field,
    })
}

fn add_lines<'a>(
    users: &mut HashMap<String, User>,
    option: &'static str,
    lines: impl Iterator<Item = &'a str>,
) -> Result<(), MiddlewareError> {
    for (i, line) in lines.enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (user, hash) =
            htpasswd::parse_line(line).map_err(|reason| MiddlewareError::Htpasswd {
                option,
                line: i + 1,
                reason,
            })?;
        users.insert(
            user,
            User {
                hash,
                passed: ArcSwapOption::empty(),
            },
        );
    }
    Ok(())
}

impl BasicAuth {
    /// The user name, when the request's credentials are right.
    fn check<'r>(&self, decoded: &'r [u8]) -> Option<&'r str> {
        let text = std::str::from_utf8(decoded).ok()?;
        let (name, password) = text.split_once(':')?;
        let user = self.users.get(name)?;
        if !user.hash.is_slow() {
            return user.hash.verify(password.as_bytes()).then_some(name);
        }
        let digest: [u8; 32] = Sha256::digest(password.as_bytes()).into();
        if user
            .passed
            .load()
            .as_deref()
            .is_some_and(|d| constant_time_eq(d, &digest))
        {
            return Some(name);
        }
        if slow(|| user.hash.verify(password.as_bytes())) {
            user.passed.store(Some(Arc::new(digest)));
            return Some(name);
        }
        None
    }

    fn unauthorized(&self) -> Response<ProxyBody> {
        let mut resp = Response::new(ProxyBody::text("401 Unauthorized\n"));
        *resp.status_mut() = StatusCode::UNAUTHORIZED;
        resp.headers_mut()
            .insert(header::WWW_AUTHENTICATE, self.challenge.clone());
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        resp
    }
}

/// Runs a CPU-heavy check (bcrypt) without stalling the other tasks of this
/// worker thread, where the runtime allows it.
fn slow(f: impl FnOnce() -> bool) -> bool {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

impl Middleware for BasicAuth {
    fn request(&self, req: &mut Req, _cx: &Exchange) -> Flow {
        let Some(encoded) = req
            .headers()
            .get(header::AUTHORIZATION)
            .map(HeaderValue::as_bytes)
            .and_then(|v| {
                (v.len() > 6 && v[..6].eq_ignore_ascii_case(b"basic ")).then(|| v[6..].trim_ascii())
            })
        else {
            return Flow::Respond(self.unauthorized());
        };
        // Decoded into the stack: credentials longer than this are refused.
        let mut buf = [0u8; 768];
        let Ok(n) = STANDARD.decode_slice(encoded, &mut buf) else {
            return Flow::Respond(self.unauthorized());
        };
        let Some(user) = self.check(&buf[..n]) else {
            return Flow::Respond(self.unauthorized());
        };
        let user_value = self
            .header_field
            .as_ref()
            .and_then(|h| HeaderValue::from_str(user).ok().map(|v| (h.clone(), v)));
        if self.remove_header {
            req.headers_mut().remove(header::AUTHORIZATION);
        }
        if let Some((h, v)) = user_value {
            req.headers_mut().insert(h, v);
        }
        req.extensions_mut()
            .insert(super::ClientUsername(user.to_owned()));
        Flow::Continue
    }
}
