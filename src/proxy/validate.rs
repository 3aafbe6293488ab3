//! Checks a request before it is routed: framing that two HTTP parsers
//! could read differently is refused, the host must be unambiguous, and the
//! path is put in one canonical form so that rules, `stripPrefix` and the
//! server all see the same path.
//!
//! hyper has already refused what its parser cannot read (invalid bytes in
//! names and values, obsolete line folding, bare CR, malformed or
//! conflicting `Content-Length`); this adds what it lets through.

use http::header::{self, HeaderMap};
use http::uri::{PathAndQuery, Uri};
use http::{Request, Version};
use std::borrow::Cow;

/// Why a request is refused with 400.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Malformed {
    /// `Content-Length` together with `Transfer-Encoding`.
    #[error("Content-Length together with Transfer-Encoding")]
    LengthAndChunked,
    /// More than one `Content-Length` field, even with equal values.
    #[error("more than one Content-Length")]
    DuplicateLength,
    /// A transfer coding other than a single `chunked`.
    #[error("a transfer coding other than a single `chunked`")]
    TransferCoding,
    /// `Transfer-Encoding` on an HTTP/1.0 request.
    #[error("Transfer-Encoding on an HTTP/1.0 request")]
    ChunkedHttp10,
    /// More than one `Host` field.
    #[error("more than one Host")]
    DuplicateHost,
    /// An HTTP/1.1 request without a host.
    #[error("no Host")]
    MissingHost,
    /// HTTP/2's `:authority` and `Host` name different hosts.
    #[error(":authority and Host disagree")]
    AuthorityMismatch,
    /// A path that is not an absolute path, or a broken percent-escape.
    #[error("malformed path")]
    Path,
    /// A host (`Host` or the target's authority) with a byte no host name
    /// or address holds: userinfo (`evil@good`), spaces, `/`, `\`…
    #[error("a host with a character no host has")]
    HostSyntax,
    /// A percent-escape of a character `encodedCharacters` refuses.
    #[error("the path holds an escaped {}", describe_escaped(*.0))]
    EncodedCharacter(u8),
    /// A raw backslash in the path, which some servers read as `/`.
    #[error("a backslash in the path")]
    Backslash,
    /// A `..` segment spelled with escapes (`%2E%2E`, or `..` between
    /// `%2F` or `%5C`): a server that decodes them climbs out of the path
    /// the routers and middlewares saw.
    #[error("a `..` segment hidden behind escapes")]
    HiddenDotSegment,
    /// A chunked body whose framing is broken, found before forwarding.
    #[error("a broken chunked body")]
    Chunk,
    /// A header name with `_` on an entry point that rejects them.
    #[error("a header name with `_`")]
    UnderscoreHeader,
}

/// How an escaped character reads in a log line.
fn describe_escaped(byte: u8) -> String {
    match byte {
        0 => "NUL (`%00`)".to_owned(),
        b => format!("`{}` (`%{b:02X}`)", char::from(b)),
    }
}

/// Checks framing and host fields. Runs on every request, so it only
/// counts and compares; it allocates nothing.
pub fn check<B>(req: &Request<B>) -> Result<(), Malformed> {
    let headers = req.headers();
    let lengths = headers.get_all(header::CONTENT_LENGTH).iter().count();
    let codings: Vec<_> = headers.get_all(header::TRANSFER_ENCODING).iter().collect();
    if lengths > 1 {
        return Err(Malformed::DuplicateLength);
    }
    if !codings.is_empty() {
        if req.version() == Version::HTTP_10 || req.version() == Version::HTTP_09 {
            return Err(Malformed::ChunkedHttp10);
        }
        if lengths > 0 {
            return Err(Malformed::LengthAndChunked);
        }
        let single_chunked = codings.len() == 1
            && codings[0]
                .to_str()
                .is_ok_and(|v| v.trim().eq_ignore_ascii_case("chunked"));
        if !single_chunked {
            return Err(Malformed::TransferCoding);
        }
    }
    check_host(req.version(), req.uri(), headers)
}

fn check_host(version: Version, uri: &Uri, headers: &HeaderMap) -> Result<(), Malformed> {
    let mut hosts = headers.get_all(header::HOST).iter();
    let host = hosts.next();
    if hosts.next().is_some() {
        return Err(Malformed::DuplicateHost);
    }
    match (version, uri.authority(), host) {
        // HTTP/2 and HTTP/3 carry the host in :authority; a Host field, if
        // also sent, must name the same one (RFC 9113 §8.3.1).
        (Version::HTTP_2 | Version::HTTP_3, Some(a), Some(h)) => {
            let same = h.to_str().is_ok_and(|h| h.eq_ignore_ascii_case(a.as_str()));
            if same {
                Ok(())
            } else {
                Err(Malformed::AuthorityMismatch)
            }
        }
        // RFC 9112 §3.2: an HTTP/1.1 request must name its host. (An
        // absolute-form target's authority wins over the Host field, which
        // the pipeline then ignores.)
        (Version::HTTP_11, None, None) => Err(Malformed::MissingHost),
        _ => Ok(()),
    }?;
    let authority_ok = uri
        .authority()
        .is_none_or(|a| is_host(a.as_str().as_bytes()));
    if authority_ok && host.is_none_or(|h| is_host(h.as_bytes())) {
        Ok(())
    } else {
        Err(Malformed::HostSyntax)
    }
}

/// Whether `value` can be a host with an optional port: a name, an IPv4
/// address or a bracketed IPv6 literal, made of the bytes RFC 3986's
/// `reg-name`, `IP-literal` and `port` allow. Userinfo (`@`), spaces and
/// the delimiters of other URI parts are not among them.
fn is_host(value: &[u8]) -> bool {
    value.iter().all(|&b| {
        b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'-' | b'.'
                    | b'_'
                    | b'~'
                    | b'%'
                    | b'!'
                    | b'$'
                    | b'&'
                    | b'\''
                    | b'('
                    | b')'
                    | b'*'
                    | b'+'
                    | b','
                    | b';'
                    | b'='
                    | b':'
                    | b'['
                    | b']'
            )
    })
}

/// Checks the raw path against an `encodedCharacters` setting, and for a
/// backslash, which is never let through: some servers (IIS, and many on
/// Windows) read it as `/`, so `/admin\..\public` would be routed as one
/// path and served as another.
pub fn check_path_characters(
    path: &str,
    denied: crate::percent::DeniedEscapes,
) -> Result<(), Malformed> {
    if path.as_bytes().contains(&b'\\') {
        return Err(Malformed::Backslash);
    }
    match denied.first_in(path) {
        Some(byte) => Err(Malformed::EncodedCharacter(byte)),
        None => Ok(()),
    }
}

/// Refuses a path with a `..` segment that only appears once escapes are
/// decoded: a segment that is `%2E%2E` (in any mix with `.` and either
/// case), or a `..` between escaped separators (`..%2F..%2Fadmin`,
/// `..%5Cadmin`). Routers and middlewares match the path with `%2F` as
/// part of a segment, so `/api/..%2F..%2Fadmin` matches `PathPrefix(`/api`)`,
/// while a server that decodes it serves `/admin`. Runs whatever
/// `encodedCharacters` allows, and looks only at segments holding a `%`,
/// so a path without one costs one scan.
pub fn check_hidden_dot_segments(path: &str) -> Result<(), Malformed> {
    if !path.as_bytes().contains(&b'%') {
        return Ok(());
    }
    let hidden = path
        .split('/')
        .filter(|segment| segment.contains('%'))
        .flat_map(split_at_escaped_separators)
        .any(is_dot_dot);
    if hidden {
        Err(Malformed::HiddenDotSegment)
    } else {
        Ok(())
    }
}

/// The pieces of a segment between its `%2F` and `%5C` escapes.
fn split_at_escaped_separators(segment: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(segment);
    std::iter::from_fn(move || {
        let s = rest?;
        let bytes = s.as_bytes();
        let cut = (0..bytes.len()).find(|&i| {
            bytes[i] == b'%'
                && matches!(
                    bytes.get(i + 1..i + 3),
                    Some([b'2', b'f' | b'F'] | [b'5', b'c' | b'C'])
                )
        });
        match cut {
            Some(i) => {
                rest = s.get(i + 3..);
                s.get(..i)
            }
            None => {
                rest = None;
                Some(s)
            }
        }
    })
}

/// Whether `piece` is `..` with each dot written as `.` or `%2E`.
fn is_dot_dot(piece: &str) -> bool {
    let mut rest = piece.as_bytes();
    for _ in 0..2 {
        rest = match rest {
            [b'.', tail @ ..] => tail,
            [b'%', b'2', b'e' | b'E', tail @ ..] => tail,
            _ => return false,
        };
    }
    rest.is_empty()
}

/// What an entry point does with request headers whose names hold `_`
/// (`http.underscoreHeadersStrategy`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Underscores {
    /// Forward them as they are.
    #[default]
    Keep,
    /// Remove them before routing.
    Delete,
    /// Refuse the request (400).
    Reject,
}

/// Applies an entry point's `underscoreHeadersStrategy` to the request's
/// headers: nothing for `keep`, every header whose name holds `_` removed
/// for `delete`, a refusal for `reject`. Costs one look at each name when
/// the strategy is not `keep`.
pub fn underscore_headers(headers: &mut HeaderMap, strategy: Underscores) -> Result<(), Malformed> {
    use Underscores as S;
    let has_underscore = |name: &http::HeaderName| name.as_str().contains('_');
    match strategy {
        S::Keep => Ok(()),
        S::Reject if headers.keys().any(has_underscore) => Err(Malformed::UnderscoreHeader),
        S::Reject => Ok(()),
        S::Delete => {
            if headers.keys().any(has_underscore) {
                let names: Vec<http::HeaderName> = headers
                    .keys()
                    .filter(|n| has_underscore(n))
                    .cloned()
                    .collect();
                for name in names {
                    headers.remove(name);
                }
            }
            Ok(())
        }
    }
}

/// The path in canonical form, or why it cannot be read:
/// percent-escapes of unreserved characters decoded (`%41` → `A`), other
/// escapes upper-cased, `.` and `..` segments resolved, and — with
/// `merge_slashes` — runs of `/` merged. `%2F` stays encoded, so it never
/// separates segments. Borrowed when already canonical, which is the
/// common case and costs one scan.
pub fn normalize_path(path: &str, merge_slashes: bool) -> Result<Cow<'_, str>, Malformed> {
    if !path.starts_with('/') {
        // `*` (OPTIONS) and authority-form (CONNECT) have no path to clean.
        return if path == "*" || path.is_empty() {
            Ok(Cow::Borrowed(path))
        } else {
            Err(Malformed::Path)
        };
    }
    if is_canonical(path.as_bytes(), merge_slashes) {
        return Ok(Cow::Borrowed(path));
    }
    let decoded = crate::percent::normalize_escapes(path).map_err(|_| Malformed::Path)?;
    let mut segments: Vec<&str> = Vec::new();
    let mut rest = &decoded[1..];
    loop {
        let (segment, tail) = match rest.find('/') {
            Some(i) => (&rest[..i], Some(&rest[i + 1..])),
            None => (rest, None),
        };
        match segment {
            "." => {}
            ".." => {
                segments.pop();
            }
            "" if merge_slashes && tail.is_some() => {}
            s => segments.push(s),
        }
        match tail {
            Some(t) => rest = t,
            None => break,
        }
    }
    // A path ending in a dot segment names a directory: keep its slash.
    let trailing = decoded.ends_with('/') || decoded.ends_with("/.") || decoded.ends_with("/..");
    let mut out = String::with_capacity(decoded.len());
    for s in &segments {
        out.push('/');
        out.push_str(s);
    }
    if trailing && !out.ends_with('/') || out.is_empty() {
        out.push('/');
    }
    Ok(Cow::Owned(out))
}

/// No escape to decode or fix, no dot segment, no `//` (when merged).
fn is_canonical(p: &[u8], merge_slashes: bool) -> bool {
    let mut i = 0;
    while i < p.len() {
        match p[i] {
            b'%' => return false,
            b'/' => {
                let next = p.get(i + 1).copied();
                if merge_slashes && next == Some(b'/') {
                    return false;
                }
                if next == Some(b'.') {
                    let after = p.get(i + 2).copied();
                    let dotdot =
                        after == Some(b'.') && matches!(p.get(i + 3).copied(), None | Some(b'/'));
                    if matches!(after, None | Some(b'/')) || dotdot {
                        return false;
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    true
}

/// The URI with its path replaced by `path` (query kept).
pub fn with_path(uri: &Uri, path: &str) -> Option<Uri> {
    let pq = match uri.query() {
        Some(q) => PathAndQuery::try_from(format!("{path}?{q}")).ok()?,
        None => PathAndQuery::try_from(path).ok()?,
    };
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = Some(pq);
    Uri::from_parts(parts).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(p: &str) -> String {
        normalize_path(p, true).expect(p).into_owned()
    }

    #[test]
    fn canonical_paths_are_borrowed() {
        for p in ["/", "/a/b", "/a/b/", "/a.b/c..d/.e", "/a/%2F", "*"] {
            let got = normalize_path(p, true);
            if p.contains('%') {
                continue;
            }
            assert!(matches!(got, Ok(Cow::Borrowed(_))), "{p}");
        }
    }

    #[test]
    fn dot_segments_escapes_and_slashes() {
        assert_eq!(norm("/a/./b"), "/a/b");
        assert_eq!(norm("/a/../b"), "/b");
        assert_eq!(norm("/../../etc/passwd"), "/etc/passwd");
        assert_eq!(norm("/a/b/.."), "/a/");
        assert_eq!(norm("/a/."), "/a/");
        assert_eq!(norm("//admin"), "/admin");
        assert_eq!(norm("/a//b///c/"), "/a/b/c/");
        assert_eq!(norm("/%61dmin"), "/admin");
        assert_eq!(norm("/%2e%2e/admin"), "/admin");
        assert_eq!(norm("/a/%2E/b"), "/a/b");
        assert_eq!(norm("/a%2fb"), "/a%2Fb");
        assert_eq!(norm("/a%2F..%2Fb"), "/a%2F..%2Fb");
        assert_eq!(norm("/x%20y"), "/x%20y");
        assert_eq!(norm("/x%7e"), "/x~");
        assert_eq!(
            normalize_path("/a//b", false).unwrap(),
            Cow::<str>::Borrowed("/a//b")
        );
        assert_eq!(normalize_path("/a/%zz", true), Err(Malformed::Path));
        assert_eq!(normalize_path("/a/%4", true), Err(Malformed::Path));
        assert_eq!(normalize_path("a", true), Err(Malformed::Path));
    }

    #[test]
    fn backslashes_and_refused_escapes() {
        let all = crate::percent::DeniedEscapes::ALL;
        assert_eq!(check_path_characters("/a/b", all), Ok(()));
        assert_eq!(
            check_path_characters("/admin\\..\\x", all),
            Err(Malformed::Backslash)
        );
        assert_eq!(
            check_path_characters("/a%5cb", all),
            Err(Malformed::EncodedCharacter(b'\\'))
        );
        assert_eq!(
            Malformed::EncodedCharacter(b'/').to_string(),
            "the path holds an escaped `/` (`%2F`)"
        );
    }

    #[test]
    fn dot_segments_hidden_behind_escapes_are_found() {
        for bad in [
            "/api/..%2F..%2Fadmin",
            "/api/..%2f..%2fadmin",
            "/api/%2E%2E/admin",
            "/api/%2e./admin",
            "/api/.%2E",
            "/api/x%2F..%2F..%2Fadmin",
            "/api/..%5Cadmin",
            "/api/a%5c..%5c..%5cadmin",
            "/api/%2E%2E%2Fadmin",
        ] {
            assert_eq!(
                check_hidden_dot_segments(bad),
                Err(Malformed::HiddenDotSegment),
                "{bad}"
            );
        }
        for good in [
            "/projects/group%2Fproject",
            "/api/a%2F.%2Fb",
            "/api/..x%2Fy",
            "/api/x..%2Fy",
            "/files/%2E%2E%2E",
            "/a%20b/..c",
            "/api/../admin",
            "/%2",
        ] {
            assert_eq!(check_hidden_dot_segments(good), Ok(()), "{good}");
        }
    }

    #[test]
    fn underscore_strategies() {
        use Underscores as S;
        let headers = || {
            let mut h = HeaderMap::new();
            h.insert("x_user", http::HeaderValue::from_static("eve"));
            h.insert("x-user", http::HeaderValue::from_static("adam"));
            h
        };
        let mut h = headers();
        assert_eq!(underscore_headers(&mut h, S::Keep), Ok(()));
        assert_eq!(h.len(), 2);
        assert_eq!(
            underscore_headers(&mut headers(), S::Reject),
            Err(Malformed::UnderscoreHeader)
        );
        let mut h = headers();
        assert_eq!(underscore_headers(&mut h, S::Delete), Ok(()));
        assert!(h.get("x_user").is_none() && h.get("x-user").is_some());
    }

    #[test]
    fn framing_and_host_checks() {
        let req = |v: Version, headers: &[(&str, &str)], uri: &str| {
            let mut b = Request::builder().version(v).uri(uri);
            for (k, val) in headers {
                b = b.header(*k, *val);
            }
            b.body(()).unwrap()
        };
        let h11 = Version::HTTP_11;
        assert_eq!(check(&req(h11, &[("host", "a")], "/")), Ok(()));
        assert_eq!(
            check(&req(
                h11,
                &[
                    ("host", "a"),
                    ("content-length", "1"),
                    ("transfer-encoding", "chunked")
                ],
                "/"
            )),
            Err(Malformed::LengthAndChunked)
        );
        assert_eq!(
            check(&req(
                h11,
                &[
                    ("host", "a"),
                    ("content-length", "1"),
                    ("content-length", "1")
                ],
                "/"
            )),
            Err(Malformed::DuplicateLength)
        );
        for te in ["gzip, chunked", "chunked, chunked", "identity"] {
            assert_eq!(
                check(&req(h11, &[("host", "a"), ("transfer-encoding", te)], "/")),
                Err(Malformed::TransferCoding),
                "{te}"
            );
        }
        assert_eq!(
            check(&req(
                h11,
                &[("host", "a"), ("transfer-encoding", "Chunked")],
                "/"
            )),
            Ok(())
        );
        assert_eq!(
            check(&req(
                Version::HTTP_10,
                &[("transfer-encoding", "chunked")],
                "/"
            )),
            Err(Malformed::ChunkedHttp10)
        );
        assert_eq!(check(&req(h11, &[], "/")), Err(Malformed::MissingHost));
        assert_eq!(check(&req(Version::HTTP_10, &[], "/")), Ok(()));
        assert_eq!(check(&req(h11, &[], "http://a/x")), Ok(()));
        assert_eq!(
            check(&req(h11, &[("host", "a"), ("host", "b")], "/")),
            Err(Malformed::DuplicateHost)
        );
        for host in ["evil@good", "a b", "a\tb", "a/b", "a\\b", "a?b", "a#b"] {
            assert_eq!(
                check(&req(h11, &[("host", host)], "/")),
                Err(Malformed::HostSyntax),
                "{host}"
            );
        }
        for host in [
            "a.test:8080",
            "[::1]:8443",
            "127.0.0.1",
            "xn--bcher-kva.test",
            "a_b",
        ] {
            assert_eq!(check(&req(h11, &[("host", host)], "/")), Ok(()), "{host}");
        }
        assert_eq!(
            check(&req(h11, &[], "http://evil@good/x")),
            Err(Malformed::HostSyntax)
        );
        let h2 = Version::HTTP_2;
        assert_eq!(
            check(&req(h2, &[], "https://evil@good/")),
            Err(Malformed::HostSyntax)
        );
        assert_eq!(check(&req(h2, &[("host", "A")], "https://a/")), Ok(()));
        assert_eq!(
            check(&req(h2, &[("host", "b")], "https://a/")),
            Err(Malformed::AuthorityMismatch)
        );
    }
}
