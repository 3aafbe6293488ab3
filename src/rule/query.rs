//! Query string parsing for the `Query` and `QueryRegexp` matchers.

use crate::percent::decode_query_component as decode;
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
            Some((decode(key).ok()?, decode(value).ok()?))
        })
        .collect()
}
