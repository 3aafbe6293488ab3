//! The API's answers compressed as the client asks (`Accept-Encoding`):
//! zstd, br or gzip, each answer whole, since every API answer is built in
//! memory before it is sent.

use axum::http::{HeaderMap, HeaderValue, header};

/// Answers shorter than this go as they are: the coding's own framing
/// would eat most of the gain (Traefik's `compress` uses the same floor).
pub const MIN_BYTES: usize = 1024;

/// A content coding the API answers in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coding {
    /// `zstd`: the cheapest to make at a ratio close to brotli's.
    Zstd,
    /// `br`.
    Brotli,
    /// `gzip`: every client has it.
    Gzip,
}

/// In the order preferred when the client's qualities are equal.
const PREFERRED: [Coding; 3] = [Coding::Zstd, Coding::Brotli, Coding::Gzip];

impl Coding {
    /// Its `Content-Encoding` token.
    pub const fn token(self) -> &'static str {
        match self {
            Coding::Zstd => "zstd",
            Coding::Brotli => "br",
            Coding::Gzip => "gzip",
        }
    }

    /// What an entity tag ends with for this coding, so that a client that
    /// kept one coding is never told "unchanged" about another.
    pub const fn tag_suffix(self) -> &'static str {
        match self {
            Coding::Zstd => "-zst",
            Coding::Brotli => "-br",
            Coding::Gzip => "-gz",
        }
    }

    /// `bytes` in this coding; None if the encoder failed (then the answer
    /// goes as it is).
    pub fn compress(self, bytes: &[u8]) -> Option<Vec<u8>> {
        use std::io::Write as _;
        match self {
            // Level 3 is zstd's own default: fast enough for an answer
            // built per request.
            Coding::Zstd => zstd::bulk::compress(bytes, 3).ok(),
            Coding::Brotli => {
                // Quality 5: most of brotli's gain at a small part of the
                // cost of its maximum.
                let mut w = brotli::CompressorWriter::new(Vec::new(), 4096, 5, 22);
                w.write_all(bytes).ok()?;
                Some(w.into_inner())
            }
            Coding::Gzip => {
                let mut w =
                    flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
                w.write_all(bytes).ok()?;
                w.finish().ok()
            }
        }
    }

    /// The `Content-Encoding` header value.
    pub fn header(self) -> HeaderValue {
        HeaderValue::from_static(self.token())
    }
}

/// The quality the client gives `token` in `Accept-Encoding`: the named
/// entry's, else the `*` entry's, else 0. Values that do not parse count
/// as 0, so a malformed header never gets a coding the client did not ask
/// for.
fn quality(headers: &HeaderMap, token: &str) -> f32 {
    let mut named = None;
    let mut any = None;
    for item in headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
    {
        let mut parts = item.split(';').map(str::trim);
        let coding = parts.next().unwrap_or("");
        let q = parts
            .find_map(|p| p.strip_prefix("q=").or_else(|| p.strip_prefix("Q=")))
            .map_or(Some(1.0), |q| q.trim().parse::<f32>().ok())
            .unwrap_or(0.0);
        if coding.eq_ignore_ascii_case(token) {
            named = Some(q);
        } else if coding == "*" {
            any = Some(q);
        }
    }
    named.or(any).unwrap_or(0.0)
}

/// Whether the client takes `coding` at all.
pub fn accepts(headers: &HeaderMap, coding: Coding) -> bool {
    quality(headers, coding.token()) > 0.0
}

/// The coding to answer in: the one the client rates highest, ties going
/// to [`PREFERRED`]'s order; None when it takes none of them.
pub fn choose(headers: &HeaderMap) -> Option<Coding> {
    let mut best: Option<(f32, Coding)> = None;
    for coding in PREFERRED {
        let q = quality(headers, coding.token());
        if q > 0.0 && best.is_none_or(|(b, _)| q > b) {
            best = Some((q, coding));
        }
    }
    best.map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            header::ACCEPT_ENCODING,
            HeaderValue::from_str(value).unwrap(),
        );
        h
    }

    #[test]
    fn the_client_s_qualities_choose_then_the_preferred_order() {
        let cases: &[(&str, Option<Coding>)] = &[
            ("gzip, deflate, br, zstd", Some(Coding::Zstd)),
            ("gzip, br", Some(Coding::Brotli)),
            ("gzip", Some(Coding::Gzip)),
            ("gzip;q=1, zstd;q=0.5", Some(Coding::Gzip)),
            ("zstd;q=0, br;q=0, gzip;q=0", None),
            ("*", Some(Coding::Zstd)),
            ("*;q=0.5, gzip;q=0", Some(Coding::Zstd)),
            ("identity", None),
            ("gzip;q=oops", None),
            ("", None),
        ];
        for (value, want) in cases {
            assert_eq!(choose(&asked(value)), *want, "Accept-Encoding: {value}");
        }
        assert_eq!(choose(&HeaderMap::new()), None);
    }

    #[test]
    fn each_coding_gives_back_what_it_was_given() {
        use std::io::Read as _;
        let text = br#"{"name":"a@file","status":"enabled"}"#.repeat(100);
        let zstd = Coding::Zstd.compress(&text).unwrap();
        assert_eq!(zstd::bulk::decompress(&zstd, text.len()).unwrap(), text);
        let mut out = Vec::new();
        brotli::Decompressor::new(&Coding::Brotli.compress(&text).unwrap()[..], 4096)
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, text);
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&Coding::Gzip.compress(&text).unwrap()[..])
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, text);
    }
}
