//! `digestAuth`: HTTP digest authentication (RFC 7616 with MD5 and
//! `qop=auth`) against `htdigest` users, with Traefik's nonce handling: a
//! nonce is good only if this middleware issued it, each use must carry a
//! higher nonce count than the last, and a client whose nonce is unknown
//! or replayed is sent a fresh one with `stale=true`.

use super::htpasswd::constant_time_eq;
use super::{Exchange, Flow, Middleware, MiddlewareError, Req};
use crate::body::ProxyBody;
use crate::config::dynamic::middleware as model;
use crate::crypto::hex;
use http::header::{self, HeaderName, HeaderValue};
use http::{Response, StatusCode};
use md5::{Digest as _, Md5};
use ring::rand::{SecureRandom, SystemRandom};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Nonces kept per middleware before the least recently used go, as in
/// Traefik's digest library (1000, purged past a tolerance of 100).
const NONCES_KEPT: usize = 1000;
const NONCES_TOLERANCE: usize = 100;

/// Why an `htdigest` line does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HtdigestError {
    /// Not three fields separated by `:`.
    #[error("expected `user:realm:hash`")]
    Shape,
    /// Nothing before the first `:`.
    #[error("the user name is empty")]
    EmptyUser,
    /// The hash is not 32 hexadecimal digits (an MD5).
    #[error("the hash is not an MD5 in hexadecimal (32 digits)")]
    Hash,
}

/// A compiled `digestAuth`.
pub struct DigestAuth {
    /// `user:realm` → the HA1 in lowercase hexadecimal.
    users: HashMap<String, String>,
    realm: String,
    remove_header: bool,
    header_field: Option<HeaderName>,
    state: Arc<State>,
}

/// What outlives a configuration swap: the issued nonces (so a browser's
/// session survives a reload) and the opaque value.
pub struct State {
    nonces: papaya::HashMap<String, Client>,
    opaque: String,
    random: SystemRandom,
    start: Instant,
}

struct Client {
    /// The highest nonce count seen with this nonce (0: none yet).
    nc: AtomicU64,
    /// When it was issued or last used, in nanoseconds since `start`.
    last_seen: AtomicU64,
}

impl Default for State {
    fn default() -> Self {
        let random = SystemRandom::new();
        let opaque = random_key(&random);
        State {
            nonces: papaya::HashMap::new(),
            opaque,
            random,
            start: Instant::now(),
        }
    }
}

/// 16 random bytes in hexadecimal.
fn random_key(random: &SystemRandom) -> String {
    let mut bytes = [0u8; 16];
    // SystemRandom reads the OS generator, which does not fail once the
    // process runs.
    let _ = random.fill(&mut bytes);
    hex(&bytes)
}

fn md5_hex(parts: &[&str]) -> String {
    let mut h = Md5::new();
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            h.update(b":");
        }
        h.update(p.as_bytes());
    }
    hex(&h.finalize())
}

/// Parses one `user:realm:hash` line into (`user:realm`, hash).
pub fn parse_line(line: &str) -> Result<(String, String), HtdigestError> {
    let mut fields = line.splitn(3, ':');
    let (Some(user), Some(realm), Some(hash)) = (fields.next(), fields.next(), fields.next())
    else {
        return Err(HtdigestError::Shape);
    };
    if user.is_empty() {
        return Err(HtdigestError::EmptyUser);
    }
    let hash = hash.trim();
    if hash.len() != 32 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(HtdigestError::Hash);
    }
    Ok((format!("{user}:{realm}"), hash.to_ascii_lowercase()))
}

/// Compiles a `digestAuth`, reading `usersFile` if set (`users` win over the
/// file's lines for the same user and realm, as in Traefik).
pub fn compile(cfg: &model::DigestAuth, state: Arc<State>) -> Result<DigestAuth, MiddlewareError> {
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
    // Traefik's default: an htdigest hash covers the realm, so a file made
    // for Traefik only works with the same one.
    let realm = cfg
        .realm
        .as_deref()
        .filter(|r| !r.is_empty())
        .unwrap_or("traefik");
    if realm.contains('"') || HeaderValue::from_str(realm).is_err() {
        return Err(MiddlewareError::invalid(
            "realm",
            format!("`{realm}` cannot be sent in a quoted header value"),
        ));
    }
    let header_field = match cfg.header_field.as_deref().filter(|h| !h.is_empty()) {
        None => None,
        Some(h) => Some(HeaderName::from_bytes(h.as_bytes()).map_err(|_| {
            MiddlewareError::invalid("headerField", format!("`{h}` is not a header name"))
        })?),
    };
    Ok(DigestAuth {
        users,
        realm: realm.to_owned(),
        remove_header: cfg.remove_header,
        header_field,
        state,
    })
}

fn add_lines<'a>(
    users: &mut HashMap<String, String>,
    option: &'static str,
    lines: impl Iterator<Item = &'a str>,
) -> Result<(), MiddlewareError> {
    for (i, line) in lines.enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, hash) = parse_line(line).map_err(|reason| MiddlewareError::Htdigest {
            option,
            line: i + 1,
            reason,
        })?;
        users.insert(key, hash);
    }
    Ok(())
}

/// The `key=value` pairs of a `Digest …` credential; None when the header
/// is not one.
pub fn parse_credentials(value: &str) -> Option<HashMap<&str, &str>> {
    let rest = value.trim_start();
    let (scheme, rest) = rest.split_at_checked(6)?;
    if !scheme.eq_ignore_ascii_case("digest") || !rest.starts_with([' ', '\t']) {
        return None;
    }
    let mut out = HashMap::new();
    let mut s = rest.trim_start();
    while !s.is_empty() {
        let (key, after) = s.split_once('=')?;
        let key = key.trim();
        let after = after.trim_start();
        let (value, after) = if let Some(quoted) = after.strip_prefix('"') {
            // Values are tokens or quoted strings; RFC 7616 needs no escapes
            // in the fields checked here, so a backslash is kept as is.
            let end = quoted.find('"')?;
            (&quoted[..end], &quoted[end + 1..])
        } else {
            let end = after.find(',').unwrap_or(after.len());
            (after[..end].trim_end(), &after[end..])
        };
        out.insert(key, value);
        s = after.trim_start();
        match s.strip_prefix(',') {
            Some(next) => s = next.trim_start(),
            None if s.is_empty() => {}
            None => return None,
        }
    }
    Some(out)
}

/// What a check of the credentials found.
#[derive(Debug, PartialEq, Eq)]
enum Outcome<'a> {
    /// Right credentials on a good nonce: the user name.
    Passed(&'a str),
    /// Right credentials, but the nonce is unknown or was replayed.
    Stale,
    /// Anything else.
    Failed,
}

impl DigestAuth {
    fn check<'r>(
        &self,
        value: &'r str,
        method: &str,
        request_uri: &str,
        path: &str,
    ) -> Outcome<'r> {
        let Some(auth) = parse_credentials(value) else {
            return Outcome::Failed;
        };
        let get = |k: &str| auth.get(k).copied().unwrap_or("");
        // A missing algorithm is MD5 (RFC 7616 §3.4), which some clients
        // rely on; anything else is not offered.
        let algorithm = auth.get("algorithm").copied().unwrap_or("MD5");
        if get("opaque") != self.state.opaque || algorithm != "MD5" || get("qop") != "auth" {
            return Outcome::Failed;
        }
        let uri = get("uri");
        if uri != request_uri {
            // As Traefik: the credential's URI may also be a path that the
            // request's path starts with.
            let uri_path = uri
                .split_once("://")
                .map_or(uri, |(_, rest)| rest.find('/').map_or("", |i| &rest[i..]));
            let uri_path = uri_path.split('?').next().unwrap_or("");
            if uri_path.is_empty() || !path.starts_with(uri_path) {
                return Outcome::Failed;
            }
        }
        let username = get("username");
        let Some(ha1) = self.users.get(&format!("{username}:{}", self.realm)) else {
            return Outcome::Failed;
        };
        let ha2 = md5_hex(&[method, uri]);
        let expected = md5_hex(&[
            ha1,
            get("nonce"),
            get("nc"),
            get("cnonce"),
            get("qop"),
            &ha2,
        ]);
        if !constant_time_eq(expected.as_bytes(), get("response").as_bytes()) {
            return Outcome::Failed;
        }
        let Ok(nc) = u64::from_str_radix(get("nc"), 16) else {
            return Outcome::Failed;
        };
        let nonces = self.state.nonces.pin();
        let Some(client) = nonces.get(get("nonce")) else {
            return Outcome::Stale;
        };
        let advanced = client
            .nc
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |seen| {
                (seen == 0 || nc > seen).then_some(nc)
            })
            .is_ok();
        if !advanced {
            return Outcome::Stale;
        }
        client.last_seen.store(self.state.now(), Ordering::Relaxed);
        Outcome::Passed(username)
    }

    fn challenge(&self, stale: bool) -> Response<ProxyBody> {
        let nonce = self.state.issue();
        let text = format!(
            "Digest realm=\"{}\", nonce=\"{nonce}\", opaque=\"{}\", algorithm=\"MD5\", qop=\"auth\"{}",
            self.realm,
            self.state.opaque,
            if stale { ", stale=true" } else { "" }
        );
        let mut resp = Response::new(ProxyBody::text("401 Unauthorized\n"));
        *resp.status_mut() = StatusCode::UNAUTHORIZED;
        if let Ok(v) = HeaderValue::from_str(&text) {
            resp.headers_mut().insert(header::WWW_AUTHENTICATE, v);
        }
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        resp
    }
}

impl State {
    fn now(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// A new nonce, remembered; the least recently used go first when
    /// there are too many.
    fn issue(&self) -> String {
        let nonces = self.nonces.pin();
        if nonces.len() > NONCES_KEPT + NONCES_TOLERANCE {
            let mut ages: Vec<(u64, String)> = nonces
                .iter()
                .map(|(k, c)| (c.last_seen.load(Ordering::Relaxed), k.clone()))
                .collect();
            ages.sort_unstable();
            for (_, k) in ages.into_iter().take(NONCES_TOLERANCE * 2) {
                nonces.remove(&k);
            }
        }
        let nonce = random_key(&self.random);
        nonces.insert(
            nonce.clone(),
            Client {
                nc: AtomicU64::new(0),
                last_seen: AtomicU64::new(self.now()),
            },
        );
        nonce
    }
}

impl Middleware for DigestAuth {
    fn request(&self, req: &mut Req, _cx: &Exchange) -> Flow {
        let Some(value) = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
        else {
            return Flow::Respond(self.challenge(false));
        };
        let request_uri = req
            .uri()
            .path_and_query()
            .map_or("/", http::uri::PathAndQuery::as_str);
        let user = match self.check(value, req.method().as_str(), request_uri, req.uri().path()) {
            Outcome::Passed(user) => user.to_owned(),
            Outcome::Stale => return Flow::Respond(self.challenge(true)),
            Outcome::Failed => return Flow::Respond(self.challenge(false)),
        };
        if self.remove_header {
            req.headers_mut().remove(header::AUTHORIZATION);
        }
        if let Some(h) = &self.header_field
            && let Ok(v) = HeaderValue::from_str(&user)
        {
            req.headers_mut().insert(h.clone(), v);
        }
        req.extensions_mut().insert(super::ClientUsername(user));
        Flow::Continue
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth(users: &[&str]) -> DigestAuth {
        let cfg = model::DigestAuth {
            users: users.iter().map(|s| (*s).to_owned()).collect(),
            ..Default::default()
        };
        compile(&cfg, Arc::default()).expect("compiles")
    }

    /// What a client computes for `password` on the challenge's nonce.
    fn answer(d: &DigestAuth, user: &str, password: &str, nonce: &str, nc: &str) -> String {
        let ha1 = md5_hex(&[user, &d.realm, password]);
        let ha2 = md5_hex(&["GET", "/dir/index.html"]);
        let response = md5_hex(&[&ha1, nonce, nc, "0a4f113b", "auth", &ha2]);
        format!(
            "Digest username=\"{user}\", realm=\"{}\", nonce=\"{nonce}\", uri=\"/dir/index.html\", \
             qop=auth, nc={nc}, cnonce=\"0a4f113b\", response=\"{response}\", opaque=\"{}\"",
            d.realm, d.state.opaque
        )
    }

    #[test]
    fn htdigest_lines_parse_and_bad_ones_say_why() {
        let ha1 = md5_hex(&["ann", "traefik", "secret"]);
        assert_eq!(
            parse_line(&format!("ann:traefik:{ha1}")),
            Ok(("ann:traefik".to_owned(), ha1))
        );
        assert_eq!(parse_line("ann:traefik"), Err(HtdigestError::Shape));
        assert_eq!(parse_line(":r:00"), Err(HtdigestError::EmptyUser));
        assert_eq!(parse_line("ann:r:xyz"), Err(HtdigestError::Hash));
    }

    #[test]
    fn credentials_parse_quoted_and_bare_values() {
        let p =
            parse_credentials(r#"Digest username="a, b", qop=auth, nc=00000001"#).expect("parses");
        assert_eq!(p["username"], "a, b");
        assert_eq!(p["qop"], "auth");
        assert_eq!(p["nc"], "00000001");
        assert_eq!(parse_credentials("Basic YTpi"), None);
        assert_eq!(parse_credentials(r#"Digest username="open"#), None);
    }

    #[test]
    fn a_right_answer_passes_once_per_count_and_a_wrong_one_fails() {
        let ha1 = md5_hex(&["ann", "traefik", "secret"]);
        let d = auth(&[&format!("ann:traefik:{ha1}")]);
        let nonce = d.state.issue();
        let good = answer(&d, "ann", "secret", &nonce, "00000001");
        let uri = "/dir/index.html";
        assert_eq!(d.check(&good, "GET", uri, uri), Outcome::Passed("ann"));
        // The same count again is a replay.
        assert_eq!(d.check(&good, "GET", uri, uri), Outcome::Stale);
        let next = answer(&d, "ann", "secret", &nonce, "00000002");
        assert_eq!(d.check(&next, "GET", uri, uri), Outcome::Passed("ann"));
        let wrong = answer(&d, "ann", "guess", &nonce, "00000003");
        assert_eq!(d.check(&wrong, "GET", uri, uri), Outcome::Failed);
        // Right password, but a nonce this middleware never issued.
        let forged = answer(&d, "ann", "secret", "feedface", "00000001");
        assert_eq!(d.check(&forged, "GET", uri, uri), Outcome::Stale);
        // Another method than the one signed.
        assert_eq!(
            d.check(
                &answer(&d, "ann", "secret", &nonce, "00000004"),
                "POST",
                uri,
                uri
            ),
            Outcome::Failed
        );
    }

    #[test]
    fn users_of_another_realm_do_not_pass() {
        let ha1 = md5_hex(&["ann", "elsewhere", "secret"]);
        let d = auth(&[&format!("ann:elsewhere:{ha1}")]);
        let nonce = d.state.issue();
        let good = answer(&d, "ann", "secret", &nonce, "00000001");
        let uri = "/dir/index.html";
        assert_eq!(d.check(&good, "GET", uri, uri), Outcome::Failed);
    }

    #[test]
    fn nonces_are_bounded() {
        let state = State::default();
        for _ in 0..(NONCES_KEPT + NONCES_TOLERANCE + 50) {
            state.issue();
        }
        assert!(state.nonces.pin().len() <= NONCES_KEPT + NONCES_TOLERANCE + 1);
    }
}
