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
/// `X-Forwarded-Tls-Client-Cert-Info`.
pub const X_FORWARDED_TLS_CLIENT_CERT_INFO: HeaderName =
    HeaderName::from_static("x-forwarded-tls-client-cert-info");
/// `X-Real-Ip`.
pub const X_REAL_IP: HeaderName = HeaderName::from_static("x-real-ip");
const FORWARDED: HeaderName = HeaderName::from_static("forwarded");
const KEEP_ALIVE: HeaderName = HeaderName::from_static("keep-alive");
const PROXY_CONNECTION: HeaderName = HeaderName::from_static("proxy-connection");

/// Headers a client may use to claim another origin; dropped unless the
/// client is trusted.
const SPOOFABLE: [HeaderName; 12] = [
    X_FORWARDED_FOR,
    X_FORWARDED_PROTO,
    X_FORWARDED_HOST,
    X_FORWARDED_PORT,
    X_FORWARDED_SERVER,
    X_FORWARDED_PREFIX,
    X_FORWARDED_URI,
    X_FORWARDED_METHOD,
    X_FORWARDED_TLS_CLIENT_CERT,
    X_FORWARDED_TLS_CLIENT_CERT_INFO,
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

    /// Who sent a request, as far as this policy lets gangway know: the
    /// last address in `X-Forwarded-For` when `peer` is trusted (the one
    /// the trusted proxy in front saw), else `peer` itself.
    pub fn client(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        if !self.trusts(peer) {
            return peer;
        }
        headers
            .get_all(X_FORWARDED_FOR)
            .iter()
            .next_back()
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.rsplit(',').next())
            .and_then(|last| last.trim().parse().ok())
            .unwrap_or(peer)
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
    /// This machine's host name.
    pub server: &'a HeaderValue,
    /// Add the client's address to `X-Forwarded-For`; when false the
    /// header goes on as it came, or stays absent.
    pub append_for: bool,
}

/// The hop-by-hop headers (RFC 9110 §7.6.1) a proxy never passes on as
/// they are; [`strip_hop_by_hop`] keeps one bit per entry. A static, not a
/// const: a const array of names would be built and dropped at each use.
static HOP_BY_HOP: [HeaderName; 9] = [
    header::CONNECTION,
    KEEP_ALIVE,
    PROXY_CONNECTION,
    header::PROXY_AUTHENTICATE,
    header::PROXY_AUTHORIZATION,
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::TE,
    header::UPGRADE,
];
const CONNECTION_BIT: u16 = 1;
const TE_BIT: u16 = 1 << 7;
const UPGRADE_BIT: u16 = 1 << 8;

/// `name`'s bit in [`HOP_BY_HOP`], 0 for any other header. Compared with
/// each constant in turn rather than through the array, so that standard
/// names cost a tag check (a loop over the static compares bytes).
fn hop_by_hop_bit(name: &HeaderName) -> u16 {
    if *name == header::CONNECTION {
        CONNECTION_BIT
    } else if *name == KEEP_ALIVE {
        1 << 1
    } else if *name == PROXY_CONNECTION {
        1 << 2
    } else if *name == header::PROXY_AUTHENTICATE {
        1 << 3
    } else if *name == header::PROXY_AUTHORIZATION {
        1 << 4
    } else if *name == header::TRAILER {
        1 << 5
    } else if *name == header::TRANSFER_ENCODING {
        1 << 6
    } else if *name == header::TE {
        TE_BIT
    } else if *name == header::UPGRADE {
        UPGRADE_BIT
    } else {
        0
    }
}

/// Removes hop-by-hop headers (RFC 9110 §7.6.1): `Connection` and the headers
/// it names, `Keep-Alive`, `Proxy-*`, `Transfer-Encoding`, `Upgrade` (unless
/// this is an upgrade), `TE` except `trailers` (gRPC needs it).
pub fn strip_hop_by_hop(headers: &mut HeaderMap, upgrade: bool) {
    // One pass over the names finds which are there; only those are removed,
    // since each removal hashes its name. Most messages carry none, and most
    // that do carry one (`Connection: keep-alive` from browsers and nginx).
    let present = headers
        .keys()
        .fold(0, |bits, name| bits | hop_by_hop_bit(name));
    if present == 0 && !upgrade {
        return;
    }
    if present & CONNECTION_BIT != 0 {
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
    let keep = if upgrade {
        TE_BIT | UPGRADE_BIT
    } else {
        TE_BIT
    };
    for (i, name) in HOP_BY_HOP.iter().enumerate() {
        if present & !keep & (1 << i) != 0 {
            headers.remove(name);
        }
    }
    // A header named by Connection is gone already, TE too.
    if present & TE_BIT != 0
        && let Some(te) = headers.remove(header::TE)
    {
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
    }
}

/// Removes what HTTP/2 forbids in an answer (RFC 9113 §8.2.2): the
/// hop-by-hop headers, `TE` among them.
pub fn strip_connection_specific(headers: &mut HeaderMap) {
    let present = headers
        .keys()
        .fold(0, |bits, name| bits | hop_by_hop_bit(name));
    if present == 0 {
        return;
    }
    strip_hop_by_hop(headers, false);
    if present & TE_BIT != 0 {
        headers.remove(header::TE);
    }
}

/// Whether `name` is one of [`SPOOFABLE`], or an alias of one: the same
/// name with other punctuation for its dashes (`x_forwarded_for`,
/// `x.real.ip`), which CGI, PHP, WSGI and nginx read as the dashed header.
fn spoofable_or_alias(name: &str) -> Option<bool> {
    let canonical = |b: u8| if b.is_ascii_alphanumeric() { b } else { b'-' };
    let same = |target: &str| {
        name.len() == target.len()
            && name
                .bytes()
                .zip(target.bytes())
                .all(|(a, t)| canonical(a) == t)
    };
    let prefix_same = |target: &str| {
        name.len() > target.len()
            && name
                .bytes()
                .zip(target.bytes())
                .all(|(a, t)| canonical(a) == t)
    };
    if !(prefix_same("x-forwarded-") || same("x-real-ip") || same("forwarded")) {
        return None;
    }
    // Some(true): an alias (not spelt with dashes), to remove by name.
    Some(
        name.bytes()
            .any(|b| !b.is_ascii_alphanumeric() && b != b'-'),
    )
}

/// Removes the forwarded headers an untrusted client may have sent, and
/// their aliases spelt with `_` or other punctuation, before middlewares
/// read them (ipStrategy, redirectScheme) and whatever the entry point's
/// `underscoreHeadersStrategy`.
pub fn remove_spoofable(headers: &mut HeaderMap) {
    // As in strip_hop_by_hop: look before removing, since usually none is there.
    let mut found = false;
    let mut aliases = false;
    for name in headers.keys() {
        if let Some(alias) = spoofable_or_alias(name.as_str()) {
            found = true;
            aliases |= alias;
        }
    }
    if !found {
        return;
    }
    for name in SPOOFABLE {
        headers.remove(name);
    }
    if aliases {
        // Only the aliases of headers gangway itself sets or reads go; an
        // alias of an unknown `X-Forwarded-Other` is as harmless as it.
        let names: Vec<HeaderName> = headers
            .keys()
            .filter(|n| spoofable_or_alias(n.as_str()) == Some(true))
            .filter(|n| {
                let dashed: String = n
                    .as_str()
                    .bytes()
                    .map(|b| {
                        if b.is_ascii_alphanumeric() {
                            char::from(b)
                        } else {
                            '-'
                        }
                    })
                    .collect();
                SPOOFABLE.iter().any(|s| s.as_str() == dashed)
            })
            .cloned()
            .collect();
        for name in names {
            headers.remove(name);
        }
    }
}

/// `HTTP2-Settings`, sent with an `Upgrade: h2c`.
const HTTP2_SETTINGS: HeaderName = HeaderName::from_static("http2-settings");

/// Removes a client's offer to switch to cleartext HTTP/2 (`Upgrade: h2c`
/// and `HTTP2-Settings`): a server that accepted it would hold an HTTP/2
/// connection with the client past every router and middleware. Other
/// upgrades (WebSocket) stay. Costs two lookups when there is no `Upgrade`.
pub fn strip_h2c_upgrade(headers: &mut HeaderMap) {
    headers.remove(HTTP2_SETTINGS);
    let Some(upgrade) = headers.get(header::UPGRADE) else {
        return;
    };
    let offers_h2c = upgrade.to_str().map_or(true, |v| {
        v.split(',').any(|t| t.trim().eq_ignore_ascii_case("h2c"))
    }) || headers.get_all(header::UPGRADE).iter().count() > 1;
    if !offers_h2c {
        return;
    }
    let others: Vec<String> = headers
        .get_all(header::UPGRADE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|t| !t.is_empty() && !t.eq_ignore_ascii_case("h2c"))
        .map(str::to_owned)
        .collect();
    headers.remove(header::UPGRADE);
    if !others.is_empty()
        && let Ok(v) = HeaderValue::from_str(&others.join(", "))
    {
        headers.insert(header::UPGRADE, v);
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
        _ if !a.append_for => {}
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
    if !headers.contains_key(X_FORWARDED_PORT) {
        // As in Traefik: the port the client addressed (the Host's), else
        // the default port of the scheme it used, by the (possibly
        // trusted) X-Forwarded-Proto; never the port gangway listens on,
        // which a port mapping (`8000:80`) hides from the client.
        let port = a
            .host
            .and_then(|h| h.to_str().ok())
            .and_then(host_port)
            .and_then(|p| HeaderValue::from_str(p).ok())
            .unwrap_or_else(|| {
                let secure = a.tls
                    || headers
                        .get(X_FORWARDED_PROTO)
                        .is_some_and(|p| p == "https" || p == "wss");
                HeaderValue::from_static(if secure { "443" } else { "80" })
            });
        headers.insert(X_FORWARDED_PORT, port);
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
    let text = match ip {
        // Made for every new connection: written digit by digit, about a
        // tenth of what going through `Display` costs.
        IpAddr::V4(v4) => {
            let mut buf = [0u8; 15];
            let mut len = 0;
            for (i, octet) in v4.octets().into_iter().enumerate() {
                if i > 0 {
                    buf[len] = b'.';
                    len += 1;
                }
                if octet >= 100 {
                    buf[len] = b'0' + octet / 100;
                    len += 1;
                }
                if octet >= 10 {
                    buf[len] = b'0' + octet / 10 % 10;
                    len += 1;
                }
                buf[len] = b'0' + octet % 10;
                len += 1;
            }
            return HeaderValue::from_bytes(&buf[..len])
                .unwrap_or_else(|_| HeaderValue::from_static("unknown"));
        }
        IpAddr::V6(v6) => v6.to_string(),
    };
    // An IP address always renders as a valid header value.
    HeaderValue::from_str(&text).unwrap_or_else(|_| HeaderValue::from_static("unknown"))
}

/// The port part of a `Host` value (`a:8080` → `8080`, `[::1]:8443` → `8443`).
fn host_port(host: &str) -> Option<&str> {
    let after_v6 = match host.rfind(']') {
        Some(i) => &host[i + 1..],
        None => host,
    };
    crate::rule::host::last_colon(after_v6)
        .map(|i| &after_v6[i + 1..])
        .filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trusted_peer_s_client_is_the_last_forwarded_address() {
        let policy = TrustPolicy {
            trusted: vec!["10.0.0.0/8".parse().expect("net")],
            insecure: false,
        };
        let mut headers = HeaderMap::new();
        headers.append(X_FORWARDED_FOR, HeaderValue::from_static("192.0.2.7"));
        headers.append(
            X_FORWARDED_FOR,
            HeaderValue::from_static("198.51.100.1, 2001:db8::5 "),
        );
        let proxy: IpAddr = "10.1.2.3".parse().expect("ip");
        let stranger: IpAddr = "203.0.113.9".parse().expect("ip");
        assert_eq!(
            policy.client(proxy, &headers),
            "2001:db8::5".parse::<IpAddr>().expect("ip")
        );
        assert_eq!(policy.client(stranger, &headers), stranger);
        assert_eq!(policy.client(proxy, &HeaderMap::new()), proxy);
        headers.append(X_FORWARDED_FOR, HeaderValue::from_static("unknown"));
        assert_eq!(policy.client(proxy, &headers), proxy);
    }

    #[test]
    fn a_host_value_s_port_is_its_digits() {
        assert_eq!(host_port("[::1]:8443"), Some("8443"));
        assert_eq!(host_port("a.test"), None);
        assert_eq!(host_port("[::1]"), None);
        assert_eq!(host_port("a.test:"), None);
        assert_eq!(host_port("a.test:x1"), None);
    }

    #[test]
    fn each_hop_by_hop_header_has_its_own_bit() {
        for (i, name) in HOP_BY_HOP.iter().enumerate() {
            assert_eq!(hop_by_hop_bit(name), 1 << i, "{name}");
        }
        assert_eq!(hop_by_hop_bit(&header::HOST), 0);
        assert_eq!(hop_by_hop_bit(&X_FORWARDED_FOR), 0);
    }

    #[test]
    fn peer_values_read_as_the_address() {
        let mut addresses: Vec<IpAddr> = vec![
            "0.0.0.0".parse().unwrap(),
            "255.255.255.255".parse().unwrap(),
            "127.0.0.1".parse().unwrap(),
            "::1".parse().unwrap(),
            "2001:db8::8:1".parse().unwrap(),
        ];
        // Every octet value in every position.
        for n in 0..=255u8 {
            addresses.push(IpAddr::from([n, 255 - n, n / 3, n.wrapping_mul(7)]));
        }
        for ip in addresses {
            assert_eq!(peer_value(ip).to_str().unwrap(), ip.to_string());
        }
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
        h.insert("x_forwarded_for", HeaderValue::from_static("6.6.6.6"));
        h.insert("x.real_ip", HeaderValue::from_static("6.6.6.6"));
        h.insert("x_forwarded_other", HeaderValue::from_static("kept"));
        h.insert("x_user", HeaderValue::from_static("kept"));
        remove_spoofable(&mut h);
        let mut left: Vec<&str> = h.keys().map(HeaderName::as_str).collect();
        left.sort_unstable();
        assert_eq!(
            left,
            ["host", "x-forwarded-other", "x_forwarded_other", "x_user"]
        );
        // Only an alias: it goes too.
        let mut h = HeaderMap::new();
        h.insert("x_real_ip", HeaderValue::from_static("6.6.6.6"));
        remove_spoofable(&mut h);
        assert!(h.is_empty());
    }

    #[test]
    fn h2c_upgrades_go_and_websocket_stays() {
        let mut h = HeaderMap::new();
        h.insert(header::UPGRADE, HeaderValue::from_static("h2c"));
        h.insert(
            HTTP2_SETTINGS,
            HeaderValue::from_static("AAMAAABkAAQCAAAAAAIAAAAA"),
        );
        h.insert(
            header::CONNECTION,
            HeaderValue::from_static("Upgrade, HTTP2-Settings"),
        );
        strip_h2c_upgrade(&mut h);
        assert!(h.get(header::UPGRADE).is_none() && h.get(HTTP2_SETTINGS).is_none());
        let mut h = HeaderMap::new();
        h.insert(header::UPGRADE, HeaderValue::from_static("H2C, websocket"));
        strip_h2c_upgrade(&mut h);
        assert_eq!(h.get(header::UPGRADE).unwrap(), "websocket");
        let mut h = HeaderMap::new();
        h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
        let before = h.clone();
        strip_h2c_upgrade(&mut h);
        assert_eq!(h, before);
    }
}
