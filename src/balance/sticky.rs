//! Sticky sessions by cookie: the cookie names the member (server or
//! service) that answered first, as a hash of its URL or name, so later
//! requests from the same client go to the same member while it is up.

use crate::config::dynamic;
use http::header::{COOKIE, HeaderMap, HeaderValue};
use sha1::{Digest, Sha1};
use std::collections::HashMap;
use std::fmt::Write as _;

/// Cookie settings that cannot be sent as a `Set-Cookie` header.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StickyCookieError {
    /// `sameSite` is not one of the three values browsers know.
    #[error("sticky cookie sameSite `{value}` is not one of none, lax, strict")]
    SameSite {
        /// The value as given, lowercased.
        value: String,
    },
    /// `path` or `domain` would end the cookie attribute early.
    #[error("sticky cookie {attribute} `{value}` contains `;` or a control character")]
    Attribute {
        /// `path` or `domain`.
        attribute: &'static str,
        /// The value as given.
        value: String,
    },
    /// The `Set-Cookie` value for a member is not a valid header value.
    #[error("sticky cookie for `{member}` is not a valid header value")]
    Header {
        /// The member's id (server URL or service name).
        member: String,
    },
}

/// A compiled sticky cookie of one balancer.
pub struct StickyCookie {
    name: Box<str>,
    /// Cookie value → member index. Holds the hash of each member's id and,
    /// as Traefik accepts them too, the id itself.
    members: HashMap<Box<str>, usize>,
    /// The prebuilt `Set-Cookie` value per member.
    set_cookie: Box<[HeaderValue]>,
}

impl StickyCookie {
    /// Compiles the cookie settings of balancer `service` whose members have
    /// these ids (server URLs, or service names for a weighted service).
    pub fn compile(
        config: &dynamic::StickyCookie,
        service: &str,
        member_ids: &[&str],
    ) -> Result<Self, StickyCookieError> {
        let dynamic::StickyCookie {
            name,
            secure,
            http_only,
            same_site,
            max_age,
            path,
            domain,
        } = config;
        let name = match name.as_deref() {
            Some(n) if !n.is_empty() => sanitize_name(n),
            _ => default_cookie_name(service),
        };
        let same_site = match same_site.as_deref().map(str::to_ascii_lowercase).as_deref() {
            None | Some("") => None,
            Some("none") => Some("None"),
            Some("lax") => Some("Lax"),
            Some("strict") => Some("Strict"),
            Some(other) => {
                return Err(StickyCookieError::SameSite {
                    value: other.to_owned(),
                });
            }
        };
        let path = path.as_deref().filter(|p| !p.is_empty()).unwrap_or("/");
        for (what, value) in [("path", Some(path)), ("domain", domain.as_deref())] {
            if let Some(v) = value
                && v.bytes().any(|b| b == b';' || b.is_ascii_control())
            {
                return Err(StickyCookieError::Attribute {
                    attribute: what,
                    value: v.to_owned(),
                });
            }
        }
        let mut members = HashMap::with_capacity(member_ids.len() * 2);
        let mut set_cookie = Vec::with_capacity(member_ids.len());
        for (i, id) in member_ids.iter().enumerate() {
            let value = member_hash(id);
            let mut header = format!("{name}={value}; Path={path}");
            if let Some(d) = domain.as_deref().filter(|d| !d.is_empty()) {
                let _ = write!(header, "; Domain={d}");
            }
            // Traefik: 0 means a session cookie, a negative age deletes it.
            match max_age {
                Some(age) if *age > 0 => {
                    let _ = write!(header, "; Max-Age={age}");
                }
                Some(age) if *age < 0 => header.push_str("; Max-Age=0"),
                _ => {}
            }
            if *http_only {
                header.push_str("; HttpOnly");
            }
            if *secure {
                header.push_str("; Secure");
            }
            if let Some(s) = same_site {
                let _ = write!(header, "; SameSite={s}");
            }
            let header = HeaderValue::try_from(header).map_err(|_| StickyCookieError::Header {
                member: (*id).to_owned(),
            })?;
            set_cookie.push(header);
            members.entry(value.into_boxed_str()).or_insert(i);
            members.entry((*id).into()).or_insert(i);
        }
        Ok(Self {
            name: name.into_boxed_str(),
            members,
            set_cookie: set_cookie.into_boxed_slice(),
        })
    }

    /// The cookie's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The member the request's cookie names, if it names one.
    pub fn lookup(&self, headers: &HeaderMap) -> Option<usize> {
        let value = find_cookie(headers, &self.name)?;
        self.members.get(value).copied()
    }

    /// The `Set-Cookie` value that sends a client to `member`.
    pub fn set_cookie(&self, member: usize) -> Option<&HeaderValue> {
        self.set_cookie.get(member)
    }
}

/// The value of cookie `name` in the request's `Cookie` headers.
pub fn find_cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (k, v) = pair.split_once('=')?;
            (k.trim() == name).then(|| v.trim().trim_matches('"'))
        })
}

/// Traefik's default cookie name for a service: `_` and the first five hex
/// digits of a SHA-1 over a fixed prefix and the service name.
pub fn default_cookie_name(service: &str) -> String {
    let mut h = Sha1::new();
    h.update(b"_TRAEFIK_BACKEND_");
    h.update(service.as_bytes());
    let digest = h.finalize();
    let mut out = String::with_capacity(6);
    out.push('_');
    for b in digest.iter().take(3) {
        let _ = write!(out, "{b:02x}");
    }
    out.truncate(6);
    out
}

/// The cookie value naming a member: FNV-1a (64 bit) of its id in hex, so
/// the cookie does not reveal server addresses.
pub fn member_hash(id: &str) -> String {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let hash = id
        .bytes()
        .fold(OFFSET, |h, b| (h ^ u64::from(b)).wrapping_mul(PRIME));
    format!("{hash:x}")
}

/// Replaces characters a cookie name may not contain with `_`.
fn sanitize_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            let ok = c.is_ascii_graphic() && !"()<>@,;:\\\"/[]?={}".contains(c);
            if ok { c } else { '_' }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cookie(cfg: &dynamic::StickyCookie) -> StickyCookie {
        StickyCookie::compile(cfg, "app@file", &["http://a:1", "http://b:2"]).expect("compiles")
    }

    #[test]
    fn default_name_is_six_characters_and_stable() {
        let n = default_cookie_name("app@file");
        assert_eq!(n.len(), 6);
        assert!(n.starts_with('_'));
        assert!(n[1..].bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(n, default_cookie_name("app@file"));
        assert_ne!(n, default_cookie_name("other@file"));
        // SHA-1("_TRAEFIK_BACKEND_") starts with these hex digits (checked with sha1sum).
        assert_eq!(default_cookie_name(""), "_53542");
    }

    #[test]
    fn fnv_matches_the_reference_values() {
        assert_eq!(member_hash(""), "cbf29ce484222325");
        assert_eq!(member_hash("a"), "af63dc4c8601ec8c");
    }

    #[test]
    fn set_cookie_carries_every_attribute() {
        let c = cookie(&dynamic::StickyCookie {
            name: Some("lb".into()),
            secure: true,
            http_only: true,
            same_site: Some("Strict".into()),
            max_age: Some(60),
            path: Some("/app".into()),
            domain: Some("example.test".into()),
        });
        let v = c.set_cookie(1).unwrap().to_str().unwrap();
        assert_eq!(
            v,
            format!(
                "lb={}; Path=/app; Domain=example.test; Max-Age=60; HttpOnly; Secure; SameSite=Strict",
                member_hash("http://b:2")
            )
        );
        let plain = cookie(&dynamic::StickyCookie::default());
        let v = plain.set_cookie(0).unwrap().to_str().unwrap();
        assert!(v.starts_with(&format!("{}=", default_cookie_name("app@file"))));
        assert!(v.ends_with("; Path=/"), "{v}");
        let gone = cookie(&dynamic::StickyCookie {
            max_age: Some(-1),
            ..Default::default()
        });
        assert!(
            gone.set_cookie(0)
                .unwrap()
                .to_str()
                .unwrap()
                .ends_with("Max-Age=0")
        );
    }

    #[test]
    fn lookup_reads_the_named_cookie_among_others() {
        let c = cookie(&dynamic::StickyCookie {
            name: Some("lb".into()),
            ..Default::default()
        });
        let mut h = HeaderMap::new();
        h.append(COOKIE, "a=1; lbx=2".parse().unwrap());
        assert_eq!(c.lookup(&h), None);
        h.append(
            COOKIE,
            format!("x=y; lb={}", member_hash("http://b:2"))
                .parse()
                .unwrap(),
        );
        assert_eq!(c.lookup(&h), Some(1));
        let mut raw = HeaderMap::new();
        raw.insert(COOKIE, "lb=http://a:1".parse().unwrap());
        assert_eq!(c.lookup(&raw), Some(0));
        let mut unknown = HeaderMap::new();
        unknown.insert(COOKIE, "lb=deadbeef".parse().unwrap());
        assert_eq!(c.lookup(&unknown), None);
    }

    #[test]
    fn bad_settings_are_errors_and_names_are_sanitized() {
        let bad = StickyCookie::compile(
            &dynamic::StickyCookie {
                same_site: Some("sometimes".into()),
                ..Default::default()
            },
            "s",
            &["http://a"],
        );
        assert!(bad.err().unwrap().to_string().contains("sameSite"));
        let c = cookie(&dynamic::StickyCookie {
            name: Some("my cookie;x".into()),
            ..Default::default()
        });
        assert_eq!(c.name(), "my_cookie_x");
    }
}
