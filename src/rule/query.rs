//! Query string parsing for the `Query` and `QueryRegexp` matchers.

use std::borrow::Cow;

/// Decoded `(key, value)` pairs in the order they appear.
pub(super) type Pairs<'a> = Vec<(Cow<'a, str>, Cow<'a, str>)>;

/// Splits a raw query string (`a=1&b=2`) into decoded pairs.
///
/// Like Go's `url.ParseQuery`, which Traefik uses: pairs are separated by `&`,
/// empty pairs are skipped, a pair without `=` has an empty value, `+` means a
/// space, and a pair with a malformed percent escape is dropped. Decoded bytes
/// that are not UTF-8 are replaced with U+FFFD.
pub(super) fn parse(raw: &str) -> Pairs<'_> {
    raw.split('&')
        .filter(|pair| !pair.is_empty())
        .filter_map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            Some((decode(key)?, decode(value)?))
        })
        .collect()
}

/// Percent-decodes one key or value, borrowing when nothing needs decoding;
/// `None` when an escape is malformed.
pub(super) fn decode(s: &str) -> Option<Cow<'_, str>> {
    if !s.bytes().any(|b| b == b'%' || b == b'+') {
        return Some(Cow::Borrowed(s));
    }
    let mut out = Vec::with_capacity(s.len());
    let mut bytes = s.bytes();
    while let Some(b) = bytes.next() {
        match b {
            b'+' => out.push(b' '),
            b'%' => {
                let hi = bytes.next().and_then(hex_value)?;
                let lo = bytes.next().and_then(hex_value)?;
                out.push(hi << 4 | lo);
            }
            other => out.push(other),
        }
    }
    Some(Cow::Owned(match String::from_utf8(out) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }))
}

fn hex_value(b: u8) -> Option<u8> {
    char::from(b)
        .to_digit(16)
        .and_then(|d| u8::try_from(d).ok())
}
