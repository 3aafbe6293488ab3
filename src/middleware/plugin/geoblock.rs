//! `github.com/nscuro/traefik-plugin-geoblock` (and its fork
//! `github.com/david-garcia-garcia/traefik-geoblock`, which reads the same
//! settings and more): requests allowed or refused by their client's
//! country, from an IP2Location BIN database the user gives.
//!
//! As the plugin decides, per client address: a private one (RFC 1918,
//! `fc00::/7`; not loopback) by `allowPrivate`; then the longest of the
//! `allowedIPBlocks` / `blockedIPBlocks` ranges that holds it; then its
//! country: in `allowedCountries`, allowed; in `blockedCountries`, refused;
//! else `defaultAllow`. The addresses checked are those of
//! `X-Forwarded-For` and `X-Real-Ip` as they reach the middleware (only a
//! trusted proxy's survive the entry point), else the peer's — as
//! Traefik's entry point sets `X-Real-Ip` to the peer. Every one must pass.

pub mod ip2location;

use super::PluginEnv;
use crate::body::ProxyBody;
use crate::middleware::{Exchange, Flow, Middleware, MiddlewareError, Req, Resp};
use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{HeaderMap, HeaderName, HeaderValue, Response, StatusCode};
use ip2location::Countries;
use ipnet::IpNet;
use serde::Deserialize;
use std::collections::{BTreeMap, HashSet};
use std::net::IpAddr;
use std::sync::Arc;

/// The module paths of the plugin and of its fork.
pub const MODULES: &[&str] = &[
    "github.com/nscuro/traefik-plugin-geoblock",
    "github.com/david-garcia-garcia/traefik-geoblock",
];

const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");
const X_REAL_IP: HeaderName = HeaderName::from_static("x-real-ip");

/// The plugin's settings, by its own names, with its defaults.
#[derive(Debug, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Settings {
    enabled: bool,
    database_file_path: String,
    default_allow: bool,
    allow_private: bool,
    ban_if_error: bool,
    allowed_countries: Vec<String>,
    blocked_countries: Vec<String>,
    #[serde(rename = "allowedIPBlocks")]
    allowed_ip_blocks: Vec<String>,
    #[serde(rename = "blockedIPBlocks")]
    blocked_ip_blocks: Vec<String>,
    disallowed_status_code: u16,
    ban_html_file_path: String,
    bypass_headers: BTreeMap<String, String>,
    database_auto_update: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            enabled: false,
            database_file_path: String::new(),
            default_allow: false,
            allow_private: false,
            ban_if_error: true,
            allowed_countries: Vec::new(),
            blocked_countries: Vec::new(),
            allowed_ip_blocks: Vec::new(),
            blocked_ip_blocks: Vec::new(),
            disallowed_status_code: 403,
            ban_html_file_path: String::new(),
            bypass_headers: BTreeMap::new(),
            database_auto_update: false,
        }
    }
}

/// The compiled plugin.
pub struct GeoBlock {
    /// None: `enabled` is false, everything passes.
    rules: Option<Rules>,
}

struct Rules {
    countries: Arc<Countries>,
    allowed: HashSet<String>,
    blocked: HashSet<String>,
    allowed_blocks: Vec<IpNet>,
    blocked_blocks: Vec<IpNet>,
    default_allow: bool,
    allow_private: bool,
    ban_if_error: bool,
    status: StatusCode,
    page: Option<String>,
    bypass: Vec<(HeaderName, String)>,
}

/// Compiles the plugin; the database is read once per file version and
/// kept across configuration changes.
pub fn compile(
    settings: &serde_json::Value,
    env: &PluginEnv<'_>,
) -> Result<GeoBlock, MiddlewareError> {
    let s: Settings = env.read(settings)?;
    if !s.enabled {
        return Ok(GeoBlock { rules: None });
    }
    let status = StatusCode::from_u16(s.disallowed_status_code)
        .ok()
        .filter(|s| s.canonical_reason().is_some())
        .ok_or_else(|| {
            env.invalid(
                "disallowedStatusCode",
                format!("{} is not an HTTP status", s.disallowed_status_code),
            )
        })?;
    if s.database_file_path.trim().is_empty() {
        let why = if s.database_auto_update {
            "gangway downloads no database: give the path of an IP2Location BIN file"
        } else {
            "give the path of an IP2Location BIN file (DB1 LITE or larger)"
        };
        return Err(env.invalid("databaseFilePath", why));
    }
    let countries = database(s.database_file_path.trim(), env)?;
    let blocks = |list: &[String], setting: &str| -> Result<Vec<IpNet>, MiddlewareError> {
        list.iter()
            .map(|b| {
                b.trim()
                    .parse::<IpNet>()
                    .or_else(|_| b.trim().parse::<IpAddr>().map(IpNet::from))
                    .map_err(|_| env.invalid(setting, format!("`{b}` is not a CIDR range")))
            })
            .collect()
    };
    let page = match s.ban_html_file_path.trim() {
        "" => None,
        path => Some(
            std::fs::read_to_string(path)
                .map_err(|e| env.invalid("banHtmlFilePath", format!("`{path}`: {e}")))?,
        ),
    };
    let bypass = s
        .bypass_headers
        .iter()
        .map(|(name, value)| {
            HeaderName::try_from(name.trim())
                .map(|n| (n, value.clone()))
                .map_err(|_| env.invalid("bypassHeaders", format!("`{name}` is not a header name")))
        })
        .collect::<Result<_, _>>()?;
    let codes = |list: &[String]| list.iter().map(|c| c.trim().to_owned()).collect();
    Ok(GeoBlock {
        rules: Some(Rules {
            countries,
            allowed: codes(&s.allowed_countries),
            blocked: codes(&s.blocked_countries),
            allowed_blocks: blocks(&s.allowed_ip_blocks, "allowedIPBlocks")?,
            blocked_blocks: blocks(&s.blocked_ip_blocks, "blockedIPBlocks")?,
            default_allow: s.default_allow,
            allow_private: s.allow_private,
            ban_if_error: s.ban_if_error,
            status,
            page,
            bypass,
        }),
    })
}

/// The database at `path`, read again only when the file changed.
fn database(path: &str, env: &PluginEnv<'_>) -> Result<Arc<Countries>, MiddlewareError> {
    let invalid =
        |e: &dyn std::fmt::Display| env.invalid("databaseFilePath", format!("`{path}`: {e}"));
    let meta = std::fs::metadata(path).map_err(|e| invalid(&e))?;
    let version = format!("{path} {:?} {}", meta.modified().ok(), meta.len());
    let kept = env.state(&version, || {
        std::fs::read(path)
            .map_err(|e| e.to_string())
            .and_then(|bytes| Countries::parse(&bytes).map_err(|e| e.to_string()))
            .map(Arc::new)
    });
    match &*kept {
        Ok(countries) => Ok(countries.clone()),
        Err(e) => Err(invalid(e)),
    }
}

/// What one address is found to be.
enum Verdict {
    Allowed,
    Refused(String),
}

impl Rules {
    fn check(&self, ip: IpAddr) -> Verdict {
        let ip = ip.to_canonical();
        if is_private(ip) {
            return self.verdict(self.allow_private, "PRIVATE");
        }
        let longest = |blocks: &[IpNet]| {
            blocks
                .iter()
                .filter(|b| b.contains(&ip))
                .map(IpNet::prefix_len)
                .max()
        };
        match (longest(&self.allowed_blocks), longest(&self.blocked_blocks)) {
            (Some(a), Some(b)) if b > a => return Verdict::Refused(ip.to_string()),
            (Some(_), _) => return Verdict::Allowed,
            (None, Some(_)) => return Verdict::Refused(ip.to_string()),
            (None, None) => {}
        }
        let Some(country) = self.countries.country(ip) else {
            return self.verdict(!self.ban_if_error, "Unknown");
        };
        if self.allowed.contains(country) {
            Verdict::Allowed
        } else if self.blocked.contains(country) {
            Verdict::Refused(country.to_owned())
        } else {
            self.verdict(self.default_allow, country)
        }
    }

    fn verdict(&self, allow: bool, country: &str) -> Verdict {
        if allow {
            Verdict::Allowed
        } else {
            Verdict::Refused(country.to_owned())
        }
    }

    fn refuse(&self, ip: &str, country: &str) -> Resp {
        let mut resp = match &self.page {
            Some(page) => {
                let body = page.replace("{{.Country}}", country).replace("{{.IP}}", ip);
                let mut resp = Response::new(ProxyBody::bytes(Bytes::from(body)));
                resp.headers_mut().insert(
                    CONTENT_TYPE,
                    HeaderValue::from_static("text/html; charset=utf-8"),
                );
                resp
            }
            None => Response::new(ProxyBody::empty()),
        };
        *resp.status_mut() = self.status;
        resp
    }
}

/// Go's `IsPrivate`: RFC 1918 and unique local IPv6 addresses.
fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_private(),
        IpAddr::V6(v6) => (v6.segments()[0] & 0xfe00) == 0xfc00,
    }
}

/// The addresses the request names in `X-Forwarded-For` and `X-Real-Ip`,
/// each as written (a port after it taken off).
fn named(headers: &HeaderMap) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for name in [X_FORWARDED_FOR, X_REAL_IP] {
        for value in headers.get_all(name) {
            let Ok(text) = value.to_str() else { continue };
            for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
                let item = without_port(item);
                if !out.contains(&item) {
                    out.push(item);
                }
            }
        }
    }
    out
}

fn without_port(item: &str) -> &str {
    if let Some(rest) = item.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match item.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') && port.bytes().all(|b| b.is_ascii_digit()) => {
            host
        }
        _ => item,
    }
}

impl Middleware for GeoBlock {
    fn request(&self, req: &mut Req, cx: &Exchange) -> Flow {
        let Some(rules) = &self.rules else {
            return Flow::Continue;
        };
        let headers = req.headers();
        if rules.bypass.iter().any(|(name, value)| {
            headers
                .get(name)
                .is_some_and(|v| v.as_bytes() == value.as_bytes())
        }) {
            return Flow::Continue;
        }
        let named = named(headers);
        if named.is_empty() {
            return match rules.check(cx.peer) {
                Verdict::Allowed => Flow::Continue,
                Verdict::Refused(country) => {
                    Flow::Respond(rules.refuse(&cx.peer.to_string(), &country))
                }
            };
        }
        for item in named {
            let verdict = match item.parse::<IpAddr>() {
                Ok(ip) => rules.check(ip),
                // An address that does not read is the plugin's error.
                Err(_) if rules.ban_if_error => Verdict::Refused("Unknown".to_owned()),
                Err(_) => continue,
            };
            if let Verdict::Refused(country) = verdict {
                return Flow::Respond(rules.refuse(item, &country));
            }
        }
        Flow::Continue
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_come_off_forwarded_addresses() {
        assert_eq!(without_port("192.0.2.1:8080"), "192.0.2.1");
        assert_eq!(without_port("192.0.2.1"), "192.0.2.1");
        assert_eq!(without_port("[2001:db8::1]:443"), "2001:db8::1");
        assert_eq!(without_port("2001:db8::1"), "2001:db8::1");
        let mut h = HeaderMap::new();
        h.append(
            X_FORWARDED_FOR,
            HeaderValue::from_static("10.0.0.1, 192.0.2.9:80"),
        );
        h.append(X_REAL_IP, HeaderValue::from_static("10.0.0.1"));
        assert_eq!(named(&h), ["10.0.0.1", "192.0.2.9"]);
    }

    #[test]
    fn private_is_gos_private_not_loopback() {
        assert!(is_private("10.1.2.3".parse().unwrap()));
        assert!(is_private("fd00::1".parse().unwrap()));
        assert!(!is_private("127.0.0.1".parse().unwrap()));
        assert!(!is_private("::1".parse().unwrap()));
    }
}
