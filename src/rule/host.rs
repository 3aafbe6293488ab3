//! Hosts as routing compares them. One normaliser, [`normalize_host`], with
//! the steps that come before it for a `Host` value (dropping the port,
//! lowering the case) as named functions beside it.

use std::borrow::Cow;

/// A request host in the form that [`Matcher::exact_hosts`] lists hosts in and
/// that `Host` compares: without one trailing dot and without the brackets of
/// an IPv6 literal (`example.com.` → `example.com`, `[::1]` → `::1`). A host
/// index built from `exact_hosts` must be looked up with this form.
///
/// [`Matcher::exact_hosts`]: super::Matcher::exact_hosts
pub fn normalize_host(host: &str) -> &str {
    let host = host.strip_suffix('.').unwrap_or(host);
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
}

/// The host of a `Host` value as routers match it: without a port (digits
/// after the last colon; `a:b` is a host, not `a` with a port), then
/// [`normalize_host`], lowercased (`App.Localhost:8080` → `app.localhost`,
/// `[::1]:8443` → `::1`). Borrowed unless the case had to change.
pub fn normalize_authority(raw: &str) -> Cow<'_, str> {
    let host = if let Some(rest) = raw.strip_prefix('[') {
        // An IPv6 literal: whatever follows its closing bracket is the port.
        rest.split(']').next().unwrap_or(rest)
    } else {
        match last_colon(raw) {
            Some(i) if raw.as_bytes()[i + 1..].iter().all(u8::is_ascii_digit) => &raw[..i],
            _ => raw,
        }
    };
    let host = normalize_host(host);
    if host.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(host.to_ascii_lowercase())
    } else {
        Cow::Borrowed(host)
    }
}

/// The host of a `Host` value with whatever follows the last colon removed,
/// as written otherwise: an IPv6 literal keeps its brackets
/// (`a.test:8080` → `a.test`, `[::1]:8443` → `[::1]`). For writing the host
/// back out, as a redirection's `Location` does.
pub fn without_port(host: &str) -> &str {
    if host.starts_with('[') {
        return host.split_inclusive(']').next().unwrap_or(host);
    }
    last_colon(host).map_or(host, |i| &host[..i])
}

/// Where the last `:` of `s` is. A byte loop: host values are short, and
/// `rsplit_once(':')` costs several times as much on them.
pub(crate) fn last_colon(s: &str) -> Option<usize> {
    s.bytes().rposition(|b| b == b':')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_lose_one_trailing_dot_and_the_brackets_of_ipv6() {
        assert_eq!(normalize_host("example.com"), "example.com");
        assert_eq!(normalize_host("example.com."), "example.com");
        assert_eq!(normalize_host("[::1]"), "::1");
        assert_eq!(normalize_host("[::1]."), "::1");
        assert_eq!(normalize_host("[::1"), "[::1");
        assert_eq!(normalize_host("."), "");
        assert_eq!(normalize_host(""), "");
    }

    #[test]
    fn host_values_lose_their_port_and_case() {
        assert_eq!(normalize_authority("App.Localhost:8080"), "app.localhost");
        assert_eq!(normalize_authority("a.test."), "a.test");
        assert_eq!(normalize_authority("A.test.:80"), "a.test");
        assert_eq!(normalize_authority("[::1]:8443"), "::1");
        assert_eq!(normalize_authority("[::1"), "::1");
        assert_eq!(normalize_authority("127.0.0.1"), "127.0.0.1");
        assert_eq!(normalize_authority("a.test:"), "a.test");
        assert_eq!(normalize_authority("a:b"), "a:b");
        assert!(matches!(normalize_authority("a.test:80"), Cow::Borrowed(_)));
    }

    #[test]
    fn writing_a_host_back_keeps_its_brackets() {
        assert_eq!(without_port("a.test:8080"), "a.test");
        assert_eq!(without_port("a.test"), "a.test");
        assert_eq!(without_port("[::1]:8443"), "[::1]");
        assert_eq!(without_port("[::1]"), "[::1]");
        assert_eq!(without_port("a:b"), "a");
    }
}
