//! Percent-escapes (RFC 3986 §2.1), in the three forms gangway needs: query
//! components decoded for `Query` rules, request paths put in canonical form,
//! and URLs escaped into a query the way Go's `url.QueryEscape` does (which
//! Traefik's `errors` middleware uses). The byte work is the
//! `percent-encoding` crate's; what is here is which bytes each form touches.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode, percent_encode_byte};
use std::borrow::Cow;

/// A `%` not followed by two hexadecimal digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`%` at byte {at} does not start an escape of two hexadecimal digits")]
pub struct BadEscape {
    /// Where the `%` is.
    pub at: usize,
}

/// The byte that the escape starting at `bytes[at]` (a `%`) stands for.
fn escape_at(bytes: &[u8], at: usize) -> Result<u8, BadEscape> {
    let escape = bytes.get(at..at + 3).ok_or(BadEscape { at })?;
    if !escape[1..].iter().all(u8::is_ascii_hexdigit) {
        return Err(BadEscape { at });
    }
    percent_decode(escape).next().ok_or(BadEscape { at })
}

/// Checks that every `%` in `s` starts a well-formed escape: the
/// `percent-encoding` crate passes a broken escape through as text, while
/// Go's URL parsing (and so Traefik) refuses it.
fn check_escapes(s: &str) -> Result<(), BadEscape> {
    let bytes = s.as_bytes();
    bytes
        .iter()
        .enumerate()
        .filter(|&(_, &b)| b == b'%')
        .try_for_each(|(at, _)| escape_at(bytes, at).map(drop))
}

/// Decodes one query key or value as Go's `url.QueryUnescape` does: `+` is a
/// space, escapes are decoded, a malformed escape is an error. Decoded bytes
/// that are not UTF-8 become U+FFFD. Borrowed when nothing needs decoding.
pub fn decode_query_component(s: &str) -> Result<Cow<'_, str>, BadEscape> {
    if !s.bytes().any(|b| b == b'%' || b == b'+') {
        return Ok(Cow::Borrowed(s));
    }
    check_escapes(s)?;
    // `+` is replaced before decoding so that `%2B` stays a plus.
    let spaced = s.replace('+', " ");
    Ok(Cow::Owned(
        percent_decode(spaced.as_bytes())
            .decode_utf8_lossy()
            .into_owned(),
    ))
}

/// Decodes escapes the lenient way, for the user information of a storage
/// URL: a `%` that starts no escape stays text, `+` stays a plus, and
/// decoded bytes that are not UTF-8 become U+FFFD.
pub fn decode_lenient(s: &str) -> String {
    percent_decode(s.as_bytes())
        .decode_utf8_lossy()
        .into_owned()
}

/// RFC 3986 §2.3's unreserved characters: an escape of one of them means the
/// character itself (§6.2.2.2), every other escape must stay an escape.
fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// A path with its escapes normalised (RFC 3986 §6.2.2.1–2): escapes of
/// unreserved characters decoded (`%41` → `A`), all others kept and written
/// in upper case (`%2f` → `%2F`), so that `%2F` never becomes a separator.
/// Literal characters are left as they are.
pub fn normalize_escapes(path: &str) -> Result<String, BadEscape> {
    let bytes = path.as_bytes();
    let mut out = String::with_capacity(path.len());
    let mut rest = 0;
    while let Some(n) = bytes[rest..].iter().position(|&b| b == b'%') {
        let at = rest + n;
        out.push_str(&path[rest..at]);
        let byte = escape_at(bytes, at)?;
        if is_unreserved(byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(percent_encode_byte(byte));
        }
        rest = at + 3;
    }
    out.push_str(&path[rest..]);
    Ok(out)
}

/// The reserved characters whose escapes in a path a router may refuse
/// (`encodedCharacters`): an origin that decodes them before routing sees
/// another path than the proxy did (`/a%2F..%2Fadmin`, `%5C`, `;jsessionid`).
const AMBIGUOUS: [u8; 7] = [b'/', b'\\', 0, b';', b'%', b'?', b'#'];

/// Which of the [`AMBIGUOUS`] escapes a path may not hold, compiled from
/// an `encodedCharacters` setting: one bit per character.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeniedEscapes(u8);

impl DeniedEscapes {
    /// Every ambiguous escape refused (the default setting).
    pub const ALL: DeniedEscapes = DeniedEscapes(0b111_1111);

    /// The escapes `setting` does not allow.
    pub fn new(setting: &crate::config::dynamic::middleware::EncodedCharacters) -> Self {
        let crate::config::dynamic::middleware::EncodedCharacters {
            allow_encoded_slash,
            allow_encoded_back_slash,
            allow_encoded_null_character,
            allow_encoded_semicolon,
            allow_encoded_percent,
            allow_encoded_question_mark,
            allow_encoded_hash,
        } = *setting;
        let allowed = [
            allow_encoded_slash,
            allow_encoded_back_slash,
            allow_encoded_null_character,
            allow_encoded_semicolon,
            allow_encoded_percent,
            allow_encoded_question_mark,
            allow_encoded_hash,
        ];
        let bits = allowed
            .iter()
            .enumerate()
            .filter(|(_, allow)| !**allow)
            .fold(0, |bits, (i, _)| bits | 1 << i);
        DeniedEscapes(bits)
    }

    /// Nothing is refused.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The first refused character that `path` holds as an escape, in
    /// either case of hexadecimal digits. A malformed escape is not looked
    /// at here (path normalisation refuses it).
    pub fn first_in(self, path: &str) -> Option<u8> {
        if self.is_empty() {
            return None;
        }
        let bytes = path.as_bytes();
        let mut at = 0;
        while let Some(n) = bytes[at..].iter().position(|&b| b == b'%') {
            at += n;
            match escape_at(bytes, at) {
                Ok(byte) => {
                    let denied = AMBIGUOUS
                        .iter()
                        .position(|&c| c == byte)
                        .is_some_and(|i| self.0 & (1 << i) != 0);
                    if denied {
                        return Some(byte);
                    }
                    at += 3;
                }
                Err(_) => at += 1,
            }
        }
        None
    }
}

/// What Go's `url.QueryEscape` leaves as it is: letters, digits and `-_.~`.
const QUERY_ESCAPE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// Escapes `s` to be one query value, as Go's `url.QueryEscape` does: every
/// byte but letters, digits and `-_.~` as `%XX`, a space as `+`.
pub fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    for (i, piece) in s.split(' ').enumerate() {
        if i > 0 {
            out.push('+');
        }
        out.extend(percent_encoding::utf8_percent_encode(piece, QUERY_ESCAPE));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenient_decoding_keeps_what_is_not_an_escape() {
        assert_eq!(decode_lenient("us%40er"), "us@er");
        assert_eq!(decode_lenient("p%zz+%4"), "p%zz+%4");
        assert_eq!(decode_lenient("%ff"), "\u{fffd}");
    }

    #[test]
    fn query_components_decode_like_go() {
        for (raw, want) in [
            ("plain", Ok("plain")),
            ("a+b", Ok("a b")),
            ("a%2Bb", Ok("a+b")),
            ("%41%62", Ok("Ab")),
            ("%c3%bc", Ok("ü")),
            ("%ff", Ok("\u{fffd}")),
            ("", Ok("")),
            ("%", Err(BadEscape { at: 0 })),
            ("ab%4", Err(BadEscape { at: 2 })),
            ("%g0", Err(BadEscape { at: 0 })),
            ("%+1", Err(BadEscape { at: 0 })),
        ] {
            assert_eq!(
                decode_query_component(raw).as_deref(),
                want.as_deref(),
                "{raw:?}"
            );
        }
        assert!(matches!(
            decode_query_component("plain"),
            Ok(Cow::Borrowed(_))
        ));
    }

    #[test]
    fn path_escapes_are_normalised_not_decoded() {
        for (raw, want) in [
            ("/a/b", Ok("/a/b")),
            ("/%41%7e", Ok("/A~")),
            ("/a%2fb", Ok("/a%2Fb")),
            ("/%2e%2E", Ok("/..")),
            ("/%c3%bc", Ok("/%C3%BC")),
            ("/ü!", Ok("/ü!")),
            ("/%zz", Err(BadEscape { at: 1 })),
            ("/a%2", Err(BadEscape { at: 2 })),
        ] {
            assert_eq!(
                normalize_escapes(raw).as_deref(),
                want.as_deref(),
                "{raw:?}"
            );
        }
    }

    #[test]
    fn ambiguous_escapes_are_found_unless_allowed() {
        use crate::config::dynamic::middleware::EncodedCharacters;
        let all = DeniedEscapes::ALL;
        assert_eq!(DeniedEscapes::new(&EncodedCharacters::default()), all);
        for (path, want) in [
            ("/a%2Fb", Some(b'/')),
            ("/a%2fb", Some(b'/')),
            ("/a%5cb", Some(b'\\')),
            ("/a%00", Some(0)),
            ("/a%3bjsessionid=1", Some(b';')),
            ("/a%252F", Some(b'%')),
            ("/a%3F", Some(b'?')),
            ("/a%23", Some(b'#')),
            ("/a%20b%41", None),
            ("/a/b", None),
            ("/a%zz%2F", Some(b'/')),
            ("/a%2", None),
        ] {
            assert_eq!(all.first_in(path), want, "{path}");
        }
        let slash_ok = DeniedEscapes::new(&EncodedCharacters {
            allow_encoded_slash: true,
            ..EncodedCharacters::default()
        });
        assert_eq!(slash_ok.first_in("/a%2Fb"), None);
        assert_eq!(slash_ok.first_in("/a%2Fb%3B"), Some(b';'));
        let none = DeniedEscapes::new(&EncodedCharacters {
            allow_encoded_slash: true,
            allow_encoded_back_slash: true,
            allow_encoded_null_character: true,
            allow_encoded_semicolon: true,
            allow_encoded_percent: true,
            allow_encoded_question_mark: true,
            allow_encoded_hash: true,
        });
        assert!(none.is_empty());
        assert_eq!(none.first_in("/%2F%5C%00%3B%25%3F%23"), None);
    }

    #[test]
    fn urls_escape_like_go() {
        for (raw, want) in [
            (
                "http://a.test/x y?q=1&r=ü",
                "http%3A%2F%2Fa.test%2Fx+y%3Fq%3D1%26r%3D%C3%BC",
            ),
            ("  ", "++"),
            ("a-_.~z", "a-_.~z"),
            ("100%", "100%25"),
            ("", ""),
        ] {
            assert_eq!(query_escape(raw), want, "{raw:?}");
        }
    }
}
