//! Headers that change hands at the proxy: hop-by-hop headers removed, and
//! `X-Forwarded-*` / `X-Real-Ip` set, trusting incoming ones only from
//! trusted addresses.

use http::header::{self, Entry, HeaderMap, HeaderName, HeaderValue};
use ipnet::IpNet;
use std::net::IpAddr;

/// `X-Forwarded-For`.
pub const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");
/// `X-Forwarded-Proto`.
pub const X_FORWARDED_PROTO: HeaderName = HeaderName::from_static("x-forwarded-proto");
/// `X-Forwarded-Host`.
pub const X_FORWARDED_HOST: HeaderName = HeaderName::from_static("x-forwarded-host");
/// `X-Forwarded-Port`.
pub const X_FORWARDED_PORT: HeaderName = HeaderName::from_static("x-forwarded-port");
/// `X-Forwarded-Server`.
pub const X_FORWARDED_SERVER: HeaderName = HeaderName::from_static("x-forwarded-server");
/// `X-Forwarded-Prefix`.
pub const X_FORWARDED_PREFIX: HeaderName = HeaderName::from_static("x-forwarded-prefix");
/// `X-Forwarded-Uri`.
pub const X_FORWARDED_URI: HeaderName = HeaderName::from_static("x-forwarded-uri");
/// `X-Forwarded-Method`.
pub const X_FORWARDED_METHOD: HeaderName = HeaderName::from_static("x-forwarded-method");
/// `X-Forwarded-Tls-Client-Cert`.
pub const X_FORWARDED_TLS_CLIENT_CERT: HeaderName =
    HeaderName::from_static("x-forwarded-tls-client-cert");
/// `X-Real-Ip`.
pub const X_REAL_IP: HeaderName = HeaderName::from_static("x-real-ip");
const FORWARDED: HeaderName = HeaderName::from_static("forwarded");
const KEEP_ALIVE: HeaderName = HeaderName::from_static("keep-alive");
const PROXY_CONNECTION: HeaderName = HeaderName::from_static("proxy-connection");

/// Headers a client may use to claim another origin; dropped unless the
/// client is trusted.
const SPOOFABLE: [HeaderName; 11] = [
    X_FORWARDED_FOR,
    X_FORWARDED_PROTO,
    X_FORWARDED_HOST,
    X_FORWARDED_PORT,
    X_FORWARDED_SERVER,
    X_FORWARDED_PREFIX,
    X_FORWARDED_URI,
    X_FORWARDED_METHOD,
    X_FORWARDED_TLS_CLIENT_CERT,
    X_REAL_IP,
    FORWARDED,
];

/// An entry point's `forwardedHeaders` setting.
#[derive(Clone, Debug, Default)]
pub struct TrustPolicy {
    /// Addresses whose `X-Forwarded-*` headers are kept.
    pub trusted: Vec<IpNet>,
    /// Trust everyone (Traefik's `insecure`).
    pub insecure: bool,
}

impl TrustPolicy {
    /// Whether `ip`'s forwarded headers are believed.
    pub fn trusts(&self, ip: IpAddr) -> bool {
        self.insecure || self.trusted.iter().any(|net| net.contains(&ip))
    }
}

/// What the proxy knows about the request's arrival.
pub struct Arrival<'a> {
    /// The client's address as a header value (IPv4-mapped addresses
    /// already unmapped), made once per connection by [`peer_value`].
    pub peer: &'a HeaderValue,
    /// Arrived over TLS.
    pub tls: bool,
    /// Is a WebSocket upgrade.
    pub websocket: bool,
    /// The request's host as the client sent it (with port, if any).
    pub host: Option<&'a HeaderValue>,
    /// The entry point's port, used when the host names none.
    pub port: &'a HeaderValue,
    /// This machine's host name.
    pub server: &'a HeaderValue,
}

/// Removes hop-by-hop headers (RFC 9110 §7.6.1): `Connection` and the headers
/// it names, `Keep-Alive`, `Proxy-*`, `Transfer-Encoding`, `Upgrade` (unless
/// this is an upgrade), `TE` except `trailers` (gRPC needs it).
pub fn strip_hop_by_hop(headers: &mut HeaderMap, upgrade: bool) {
    // Most messages carry none of these: one pass over the names costs far
    // less than ten removals, each hashing its name.
    if !upgrade && !headers.keys().any(is_hop_by_hop) {
        return;
    }
    if headers.contains_key(header::CONNECTION) {
        // Connection may name other headers to drop; rare, so the allocation
        // happens only when it names something beyond keep-alive/close/upgrade.
        let named: Vec<HeaderName> = headers
            .get_all(header::CONNECTION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .filter(|t| !t.eq_ignore_ascii_case("close") && !t.eq_ignore_ascii_case("keep-alive"))
            .filter(|t| !(upgrade && t.eq_ignore_ascii_case("upgrade")))
            .filter_map(|t| HeaderName::from_bytes(t.as_bytes()).ok())
            .collect();
        for name in named {
            headers.remove(name);
        }
    }
    headers.remove(header::CONNECTION);
    headers.remove(KEEP_ALIVE);
    headers.remove(PROXY_CONNECTION);
    headers.remove(header::PROXY_AUTHENTICATE);
    headers.remove(header::PROXY_AUTHORIZATION);
    headers.remove(header::TRAILER);
    headers.remove(header::TRANSFER_ENCODING);
    if let Some(te) = headers.remove(header::TE) {
        let trailers = te.to_str().is_ok_and(|v| {
            v.split(',')
                .any(|t| t.trim().eq_ignore_ascii_case("trailers"))
        });
        if trailers {
            headers.insert(header::TE, HeaderValue::from_static("trailers"));
        }
    }
    if upgrade {
        headers.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    } else {
        headers.remove(header::UPGRADE);
    }
}

fn is_hop_by_hop(name: &HeaderName) -> bool {
    *name == header::CONNECTION
        || *name == header::TE
        || *name == header::TRANSFER_ENCODING
        || *name == header::UPGRADE
        || *name == header::TRAILER
        || *name == header::PROXY_AUTHENTICATE
        || *name == header::PROXY_AUTHORIZATION
        || *name == KEEP_ALIVE
        || *name == PROXY_CONNECTION
}

/// Removes the forwarded headers an untrusted client may have sent, before
/// middlewares read them (ipStrategy, redirectScheme).
pub fn remove_spoofable(headers: &mut HeaderMap) {
    // As in strip_hop_by_hop: look before removing, since usually none is there.
    let spoofable = |name: &HeaderName| {
        let name = name.as_str();
        name.starts_with("x-forwarded-") || name == "x-real-ip" || name == "forwarded"
    };
    if !headers.keys().any(spoofable) {
        return;
    }
    for name in SPOOFABLE {
        headers.remove(name);
    }
}

/// Sets `X-Forwarded-*` and `X-Real-Ip` for the server. An untrusted
/// client's own values are already gone (`remove_spoofable`, when the
/// request arrived), so what is left came from a trusted proxy or from a
/// middleware (`X-Forwarded-Prefix`).
pub fn set_forwarded(headers: &mut HeaderMap, a: &Arrival<'_>) {
    // Up to six new headers: grow the map once rather than step by step.
    headers.reserve(6);
    let peer = a.peer;
    // One lookup per header (`entry`), not a check and then an insert.
    match headers.entry(X_FORWARDED_FOR) {
        Entry::Occupied(mut prior) if !prior.get().is_empty() => {
            let prior_bytes = prior.get().as_bytes();
            let mut buf = Vec::with_capacity(prior_bytes.len() + 2 + peer.len());
            buf.extend_from_slice(prior_bytes);
            buf.extend_from_slice(b", ");
            buf.extend_from_slice(peer.as_bytes());
            prior.insert(HeaderValue::from_bytes(&buf).unwrap_or_else(|_| peer.clone()));
        }
        Entry::Occupied(mut empty) => {
            empty.insert(peer.clone());
        }
        Entry::Vacant(slot) => {
            slot.insert(peer.clone());
        }
    }
    if let Entry::Vacant(slot) = headers.entry(X_FORWARDED_PROTO) {
        let proto = match (a.tls, a.websocket) {
            (false, false) => "http",
            (true, false) => "https",
            (false, true) => "ws",
            (true, true) => "wss",
        };
        slot.insert(HeaderValue::from_static(proto));
    }
    if let (Entry::Vacant(slot), Some(host)) = (headers.entry(X_FORWARDED_HOST), a.host) {
        slot.insert(host.clone());
    }
    if let Entry::Vacant(slot) = headers.entry(X_FORWARDED_PORT) {
        let port = a
            .host
            .and_then(|h| h.to_str().ok())
            .and_then(host_port)
            .and_then(|p| HeaderValue::from_str(p).ok())
            .unwrap_or_else(|| a.port.clone());
        slot.insert(port);
    }
    if let Entry::Vacant(slot) = headers.entry(X_FORWARDED_SERVER) {
        slot.insert(a.server.clone());
    }
    if let Entry::Vacant(slot) = headers.entry(X_REAL_IP) {
        slot.insert(peer.clone());
    }
}

/// A client address as a header value, for `X-Forwarded-For` and `X-Real-Ip`.
pub fn peer_value(ip: IpAddr) -> HeaderValue {
    // An IP address always renders as a valid header value.
    HeaderValue::from_str(&ip.to_string()).unwrap_or_else(|_| HeaderValue::from_static("unknown"))
}

/// The port part of a `Host` value (`a:8080` → `8080`, `[::1]:8443` → `8443`).
fn host_port(host: &str) -> Option<&str> {
    let after_v6 = match host.rfind(']') {
        Some(i) => &host[i + 1..],
        None => host,
    };
    after_v6
        .rsplit_once(':')
        .map(|(_, p)| p)
        .filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// The host of a `Host` value, lowercased, without port or trailing dot.
pub fn normalize_host(raw: &str) -> std::borrow::Cow<'_, str> {
    let host = if let Some(rest) = raw.strip_prefix('[') {
        // IPv6 literal: keep the brackets off, as Traefik's Host matcher sees it.
        rest.split(']').next().unwrap_or(rest)
    } else {
        raw.rsplit_once(':').map_or(raw, |(h, p)| {
            if p.bytes().all(|b| b.is_ascii_digit()) {
                h
            } else {
                raw
            }
        })
    };
    let host = host.strip_suffix('.').unwrap_or(host);
    if host.bytes().any(|b| b.is_ascii_uppercase()) {
        std::borrow::Cow::Owned(host.to_ascii_lowercase())
    } else {
        std::borrow::Cow::Borrowed(host)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_normalise() {
        assert_eq!(normalize_host("App.Localhost:8080"), "app.localhost");
        assert_eq!(normalize_host("a.test."), "a.test");
        assert_eq!(normalize_host("[::1]:8443"), "::1");
        assert_eq!(normalize_host("127.0.0.1"), "127.0.0.1");
        assert_eq!(host_port("[::1]:8443"), Some("8443"));
        assert_eq!(host_port("a.test"), None);
        assert_eq!(host_port("[::1]"), None);
    }

    #[test]
    fn hop_by_hop_headers_go_and_te_trailers_stays() {
        let mut h = HeaderMap::new();
        h.insert(
            header::CONNECTION,
            HeaderValue::from_static("keep-alive, X-Secret"),
        );
        h.insert("x-secret", HeaderValue::from_static("1"));
        h.insert("keep-alive", HeaderValue::from_static("timeout=5"));
        h.insert(header::TE, HeaderValue::from_static("trailers, deflate"));
        h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
        h.insert("x-kept", HeaderValue::from_static("1"));
        strip_hop_by_hop(&mut h, false);
        assert!(
            h.get("x-secret").is_none()
                && h.get("keep-alive").is_none()
                && h.get(header::UPGRADE).is_none()
        );
        assert_eq!(
            h.get(header::TE).map(|v| v.as_bytes()),
            Some(&b"trailers"[..])
        );
        assert!(h.get("x-kept").is_some());
        // Nothing to strip: nothing changes (the fast path).
        let mut plain = HeaderMap::new();
        plain.insert(header::HOST, HeaderValue::from_static("a.test"));
        plain.insert("x-kept", HeaderValue::from_static("1"));
        let before = plain.clone();
        strip_hop_by_hop(&mut plain, false);
        assert_eq!(plain, before);
    }

    #[test]
    fn spoofable_headers_go_and_others_stay() {
        let mut h = HeaderMap::new();
        h.insert(X_FORWARDED_FOR, HeaderValue::from_static("6.6.6.6"));
        h.insert(X_REAL_IP, HeaderValue::from_static("6.6.6.6"));
        h.insert(FORWARDED, HeaderValue::from_static("for=6.6.6.6"));
        h.insert("x-forwarded-other", HeaderValue::from_static("kept"));
        h.insert(header::HOST, HeaderValue::from_static("a.test"));
        remove_spoofable(&mut h);
        let mut left: Vec<&str> = h.keys().map(HeaderName::as_str).collect();
        left.sort_unstable();
        assert_eq!(left, ["host", "x-forwarded-other"]);
    }
}
