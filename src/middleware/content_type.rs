//! `contentType`: a response the server sent without `Content-Type` gets
//! one detected from its first bytes, the way Go's HTTP server (and so
//! Traefik with this middleware) detects it. Without the middleware gangway
//! leaves the header alone, as Traefik v3 does.

use super::{Exchange, Middleware, MiddlewareError, Next, Req, Resp};
use crate::body::ProxyBody;
use crate::config::dynamic::middleware as model;
use bytes::{Bytes, BytesMut};
use futures_util::StreamExt as _;
use futures_util::future::BoxFuture;
use http::{HeaderValue, StatusCode, header};
use http_body::Frame;
use http_body_util::{BodyExt as _, BodyStream, StreamBody};

/// How many bytes the detection looks at (Go's and the WHATWG's limit).
const SNIFF_LEN: usize = 512;

/// A compiled `contentType`.
pub struct ContentType {
    /// False when `autoDetect: false` turned detection off again.
    detect: bool,
}

/// Compiles a `contentType`.
pub fn compile(cfg: &model::ContentType) -> Result<ContentType, MiddlewareError> {
    if cfg.auto_detect.is_some() {
        tracing::warn!(
            "contentType.autoDetect is deprecated (as in Traefik): the middleware alone turns detection on"
        );
    }
    Ok(ContentType {
        detect: cfg.auto_detect != Some(false),
    })
}

impl Middleware for ContentType {
    fn wraps(&self) -> bool {
        self.detect
    }

    fn call<'a>(&'a self, req: Req, _cx: &'a Exchange, next: Next<'a>) -> BoxFuture<'a, Resp> {
        Box::pin(async move {
            let resp = next.run(req).await;
            if !wants_detection(&resp) {
                return resp;
            }
            let (mut parts, mut body) = resp.into_parts();
            // The first bytes are read ahead, then sent first: the server's
            // stream continues after them unchanged.
            let mut head = BytesMut::new();
            let mut held: Vec<Frame<Bytes>> = Vec::new();
            let mut failed = None;
            while head.len() < SNIFF_LEN {
                match body.frame().await {
                    None => break,
                    Some(Ok(frame)) => match frame.into_data() {
                        Ok(data) => {
                            head.extend_from_slice(&data);
                            held.push(Frame::data(data));
                        }
                        Err(trailers) => {
                            held.push(trailers);
                            break;
                        }
                    },
                    Some(Err(e)) => {
                        failed = Some(e);
                        break;
                    }
                }
            }
            let kind = detect(&head[..head.len().min(SNIFF_LEN)]);
            parts
                .headers
                .insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
            let front = futures_util::stream::iter(held.into_iter().map(Ok).chain(failed.map(Err)));
            let rest = BodyStream::new(body);
            let body = StreamBody::new(front.chain(rest));
            Resp::from_parts(parts, ProxyBody::boxed(body))
        })
    }
}

/// Whether Go's server would detect a type for this response: none was
/// set, the body is not encoded, and the status allows a body.
fn wants_detection(resp: &Resp) -> bool {
    let status = resp.status();
    let h = resp.headers();
    !h.contains_key(header::CONTENT_TYPE)
        && h.get(header::CONTENT_ENCODING).is_none_or(|v| v.is_empty())
        && !h.contains_key(header::TRANSFER_ENCODING)
        && !status.is_informational()
        && status != StatusCode::NO_CONTENT
        && status != StatusCode::NOT_MODIFIED
}

/// The media type of `data` (its first [`SNIFF_LEN`] bytes), by the
/// WHATWG MIME sniffing rules Go implements: markup first, then magic
/// numbers, then text or binary.
pub fn detect(data: &[u8]) -> &'static str {
    let data = &data[..data.len().min(SNIFF_LEN)];
    let trimmed = {
        let start = data
            .iter()
            .position(|b| !matches!(b, b'\t' | b'\n' | 0x0c | b'\r' | b' '))
            .unwrap_or(data.len());
        &data[start..]
    };
    if is_html(trimmed) {
        return "text/html; charset=utf-8";
    }
    if trimmed.starts_with(b"<?xml") {
        return "text/xml; charset=utf-8";
    }
    for (magic, kind) in MAGIC {
        if data.starts_with(magic) {
            return kind;
        }
    }
    for (mask, pattern, kind) in MASKED {
        if masked_match(data, mask, pattern) {
            return kind;
        }
    }
    if is_mp4(data) {
        return "video/mp4";
    }
    if data.len() >= 36 && data[..34].iter().all(|b| *b == 0) && &data[34..36] == b"LP" {
        return "application/vnd.ms-fontobject";
    }
    // A byte no text holds (WHATWG "binary data bytes") makes it binary.
    let binary = data
        .iter()
        .any(|b| matches!(b, 0x00..=0x08 | 0x0b | 0x0e..=0x1a | 0x1c..=0x1f));
    if binary {
        "application/octet-stream"
    } else {
        "text/plain; charset=utf-8"
    }
}

/// Tags that start an HTML document, matched without case and followed by
/// a space or `>`.
const HTML_TAGS: [&[u8]; 17] = [
    b"<!DOCTYPE HTML",
    b"<HTML",
    b"<HEAD",
    b"<SCRIPT",
    b"<IFRAME",
    b"<H1",
    b"<DIV",
    b"<FONT",
    b"<TABLE",
    b"<A",
    b"<STYLE",
    b"<TITLE",
    b"<B",
    b"<BODY",
    b"<BR",
    b"<P",
    b"<!--",
];

fn is_html(data: &[u8]) -> bool {
    HTML_TAGS.iter().any(|tag| {
        data.len() > tag.len()
            && data[..tag.len()].eq_ignore_ascii_case(tag)
            && matches!(data[tag.len()], b' ' | b'>')
    })
}

/// Exact leading bytes.
const MAGIC: [(&[u8], &str); 26] = [
    (b"%PDF-", "application/pdf"),
    (b"%!PS-Adobe-", "application/postscript"),
    (b"\xfe\xff", "text/plain; charset=utf-16be"),
    (b"\xff\xfe", "text/plain; charset=utf-16le"),
    (b"\xef\xbb\xbf", "text/plain; charset=utf-8"),
    (b"\x00\x00\x01\x00", "image/x-icon"),
    (b"\x00\x00\x02\x00", "image/x-icon"),
    (b"BM", "image/bmp"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"ID3", "audio/mpeg"),
    (b"OggS\x00", "application/ogg"),
    (b"MThd\x00\x00\x00\x06", "audio/midi"),
    (b"\x1a\x45\xdf\xa3", "video/webm"),
    (b"OTTO", "font/otf"),
    (b"\x00\x01\x00\x00", "font/ttf"),
    (b"ttcf", "font/collection"),
    (b"wOFF", "font/woff"),
    (b"wOF2", "font/woff2"),
    (b"\x1f\x8b\x08", "application/x-gzip"),
    (b"PK\x03\x04", "application/zip"),
    (b"Rar!\x1a\x07\x00", "application/x-rar-compressed"),
    (b"Rar!\x1a\x07\x01\x00", "application/x-rar-compressed"),
    (b"\x00asm", "application/wasm"),
];

/// Leading bytes with some that do not matter (a size field): the mask
/// keeps the bits compared.
const MASKED: [(&[u8], &[u8], &str); 4] = [
    (
        b"\xff\xff\xff\xff\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff",
        b"RIFF\x00\x00\x00\x00WEBPVP",
        "image/webp",
    ),
    (
        b"\xff\xff\xff\xff\x00\x00\x00\x00\xff\xff\xff\xff",
        b"FORM\x00\x00\x00\x00AIFF",
        "audio/aiff",
    ),
    (
        b"\xff\xff\xff\xff\x00\x00\x00\x00\xff\xff\xff\xff",
        b"RIFF\x00\x00\x00\x00AVI ",
        "video/avi",
    ),
    (
        b"\xff\xff\xff\xff\x00\x00\x00\x00\xff\xff\xff\xff",
        b"RIFF\x00\x00\x00\x00WAVE",
        "audio/wave",
    ),
];

fn masked_match(data: &[u8], mask: &[u8], pattern: &[u8]) -> bool {
    data.len() >= pattern.len()
        && data
            .iter()
            .zip(mask)
            .zip(pattern)
            .all(|((d, m), p)| d & m == *p)
}

/// An ISO media file whose first box is `ftyp` naming an `mp4` brand.
fn is_mp4(data: &[u8]) -> bool {
    if data.len() < 12 {
        return false;
    }
    let size = u32::from_be_bytes([data[0], data[1], data[2], data[3]]) as usize;
    if data.len() < size || !size.is_multiple_of(4) || &data[4..8] != b"ftyp" {
        return false;
    }
    // The brands are the major one at 8 and the compatible ones from 16;
    // 12 holds the minor version.
    (8..size)
        .step_by(4)
        .filter(|at| *at != 12)
        .any(|at| data.get(at..at + 3) == Some(b"mp4"))
}

#[cfg(test)]
mod tests {
    use super::detect;

    #[test]
    fn types_are_detected_as_go_detects_them() {
        let cases: [(&[u8], &str); 14] = [
            (b"", "text/plain; charset=utf-8"),
            (b"hello, world\n", "text/plain; charset=utf-8"),
            (b"  \n<!doctype html><p>x", "text/html; charset=utf-8"),
            (b"<HTML>", "text/html; charset=utf-8"),
            (b"<p>hi</p>", "text/html; charset=utf-8"),
            (b"<pre>no", "text/plain; charset=utf-8"),
            (b"<?xml version=\"1.0\"?>", "text/xml; charset=utf-8"),
            (b"%PDF-1.7", "application/pdf"),
            (b"\x89PNG\r\n\x1a\n\0\0", "image/png"),
            (b"GIF89a...", "image/gif"),
            (b"RIFF\x10\x00\x00\x00WEBPVP8 ", "image/webp"),
            (b"\x1f\x8b\x08\x00", "application/x-gzip"),
            (
                b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom",
                "video/mp4",
            ),
            (b"\x00\x01\x02\x03binary", "application/octet-stream"),
        ];
        for (data, want) in cases {
            assert_eq!(detect(data), want, "{data:?}");
        }
    }
}
