//! `github.com/packruler/rewrite-body` (and Traefik's own
//! `plugin-rewritebody`, whose settings it extends), and
//! `github.com/packruler/traefik-themepark`, which is rewrite-body with one
//! rule made from a theme.
//!
//! As the plugin: only requests whose method is monitored (`GET` unless
//! `monitoring.methods` says otherwise) and whose `Accept` names a monitored
//! type (`text/html`) are looked at, never a WebSocket upgrade; the server
//! is asked only for encodings that can be read back; an answer of a
//! monitored type (or none) in gzip, deflate, Brotli or no encoding is
//! decoded, every rule's regex replaced in turn, and encoded as it came.
//! `Last-Modified` is removed unless `lastModified` is true. Anything else
//! passes unchanged, and so does a body larger than [`MAX_BODY`] (read into
//! memory at most that far) or one that does not decode.

use super::PluginEnv;
use crate::body::ProxyBody;
use crate::middleware::compress::Replay;
use crate::middleware::{Exchange, Middleware, MiddlewareError, Next, Req, Resp};
use bytes::Bytes;
use futures_util::future::BoxFuture;
use http::header::{self, HeaderValue};
use http_body::Frame;
use http_body_util::BodyExt as _;
use regex::bytes::Regex;
use serde::Deserialize;
use std::collections::VecDeque;
use std::io::{Read, Write};

/// The largest body rewritten, before and after decoding; a larger one
/// passes unchanged, so one answer cannot hold unbounded memory.
pub const MAX_BODY: usize = 16 << 20;

/// rewrite-body's settings, by its own names.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Settings {
    last_modified: bool,
    rewrites: Vec<Rule>,
    monitoring: Monitoring,
    /// Read so that configurations giving it load; gangway's log level
    /// applies.
    #[serde(rename = "logLevel")]
    _log_level: Option<serde_json::Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Rule {
    regex: String,
    replacement: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Monitoring {
    types: Vec<String>,
    methods: Vec<String>,
}

/// theme.park's settings, by the plugin's own names.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Theme {
    app: String,
    theme: String,
    base_url: String,
    addons: Vec<String>,
    target: String,
    #[serde(rename = "logLevel")]
    _log_level: Option<serde_json::Value>,
}

/// The compiled plugin.
pub struct RewriteBody {
    rules: Vec<(Regex, Vec<u8>)>,
    last_modified: bool,
    types: Vec<String>,
    methods: Vec<String>,
}

/// Compiles rewrite-body from its settings.
pub fn compile(
    settings: &serde_json::Value,
    env: &PluginEnv<'_>,
) -> Result<RewriteBody, MiddlewareError> {
    let read: Settings = env.read(settings)?;
    let mut rules = Vec::with_capacity(read.rewrites.len());
    for (i, rule) in read.rewrites.into_iter().enumerate() {
        rules.push((
            regex(env, &format!("rewrites[{i}].regex"), &rule.regex)?,
            rule.replacement.into_bytes(),
        ));
    }
    Ok(RewriteBody {
        rules,
        last_modified: read.last_modified,
        types: monitored(&read.monitoring.types, "text/html", str::to_ascii_lowercase),
        methods: monitored(&read.monitoring.methods, "GET", str::to_ascii_uppercase),
    })
}

/// Compiles theme.park: a link to the app's theme (and addons) stylesheet
/// put before `target`, which is `</body>` for the apps whose page needs it
/// there and `</head>` otherwise.
pub fn compile_theme(
    settings: &serde_json::Value,
    env: &PluginEnv<'_>,
) -> Result<RewriteBody, MiddlewareError> {
    let read: Theme = env.read(settings)?;
    if read.app.trim().is_empty() {
        return Err(env.invalid(
            "app",
            "the application to theme is required (e.g. `sonarr`)",
        ));
    }
    let base = if read.base_url.is_empty() {
        "https://theme-park.dev"
    } else {
        read.base_url.as_str()
    };
    let app = &read.app;
    let theme = if read.theme.is_empty() || read.theme == "base" {
        format!("{app}-base")
    } else {
        read.theme.clone()
    };
    let target = if !read.target.is_empty() {
        read.target.clone()
    } else if BODY_BASED_APPS
        .iter()
        .any(|a| app.to_ascii_lowercase().contains(a))
    {
        "</body>".to_owned()
    } else {
        "</head>".to_owned()
    };
    let mut links = format!(
        "<link rel=\"stylesheet\" type=\"text/css\" href=\"{base}/css/base/{app}/{theme}.css\">"
    );
    for addon in &read.addons {
        links.push_str(&format!(
            "<link rel=\"stylesheet\" type=\"text/css\" href=\"{base}/css/addons/{app}/{addon}/{addon}.css\">"
        ));
    }
    links.push_str(&target);
    Ok(RewriteBody {
        rules: vec![(regex(env, "target", &target)?, links.into_bytes())],
        last_modified: false,
        types: vec!["text/html".to_owned()],
        methods: vec!["GET".to_owned()],
    })
}

/// Apps whose theme goes before `</body>` (theme.park's list).
const BODY_BASED_APPS: &[&str] = &[
    "vuetorrent",
    "qbittorrent",
    "emby",
    "jellyfin",
    "radarr",
    "prowlarr",
    "sonarr",
    "readarr",
    "lidarr",
    "whisparr",
];

fn regex(env: &PluginEnv<'_>, setting: &str, text: &str) -> Result<Regex, MiddlewareError> {
    Regex::new(text).map_err(|e| env.invalid(setting, format!("invalid regex `{text}`: {e}")))
}

fn monitored(given: &[String], default: &str, case: fn(&str) -> String) -> Vec<String> {
    let list: Vec<String> = given
        .iter()
        .map(|s| case(s.trim()))
        .filter(|s| !s.is_empty())
        .collect();
    if list.is_empty() {
        vec![default.to_owned()]
    } else {
        list
    }
}

/// A content coding this plugin reads and writes back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Coding {
    Identity,
    Gzip,
    Deflate,
    Brotli,
}

impl Coding {
    fn of(value: Option<&HeaderValue>) -> Option<Coding> {
        let Some(value) = value else {
            return Some(Coding::Identity);
        };
        let text = value.to_str().ok()?.trim();
        [
            ("", Coding::Identity),
            ("identity", Coding::Identity),
            ("gzip", Coding::Gzip),
            ("x-gzip", Coding::Gzip),
            ("deflate", Coding::Deflate),
            ("br", Coding::Brotli),
        ]
        .iter()
        .find(|(name, _)| text.eq_ignore_ascii_case(name))
        .map(|(_, c)| *c)
    }

    fn decode(self, body: &[u8]) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        let limit = MAX_BODY as u64 + 1;
        let read = match self {
            Coding::Identity => return Some(body.to_vec()),
            Coding::Gzip => flate2::read::MultiGzDecoder::new(body)
                .take(limit)
                .read_to_end(&mut out),
            // `deflate` is zlib-wrapped by the standard; some servers send
            // it raw.
            Coding::Deflate => flate2::read::ZlibDecoder::new(body)
                .take(limit)
                .read_to_end(&mut out)
                .or_else(|_| {
                    out.clear();
                    flate2::read::DeflateDecoder::new(body)
                        .take(limit)
                        .read_to_end(&mut out)
                }),
            Coding::Brotli => brotli::Decompressor::new(body, 4096)
                .take(limit)
                .read_to_end(&mut out),
        };
        (read.is_ok() && out.len() <= MAX_BODY).then_some(out)
    }

    fn encode(self, body: Vec<u8>) -> std::io::Result<Vec<u8>> {
        match self {
            Coding::Identity => Ok(body),
            Coding::Gzip => {
                let mut e =
                    flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
                e.write_all(&body)?;
                e.finish()
            }
            Coding::Deflate => {
                let mut e =
                    flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
                e.write_all(&body)?;
                e.finish()
            }
            Coding::Brotli => {
                let mut e = brotli::CompressorWriter::new(Vec::new(), 4096, 5, 22);
                e.write_all(&body)?;
                e.flush()?;
                Ok(e.into_inner())
            }
        }
    }
}

/// The request's `Accept-Encoding` with only the encodings this plugin can
/// read back (the plugin asks the server for no other).
fn readable_encodings(accept: Option<&HeaderValue>) -> HeaderValue {
    let kept: Vec<&str> = accept
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|item| {
            let name = item.split(';').next().unwrap_or("").trim();
            ["gzip", "deflate", "br", "identity"]
                .iter()
                .any(|n| name.eq_ignore_ascii_case(n))
        })
        .collect();
    if kept.is_empty() {
        return HeaderValue::from_static("identity");
    }
    HeaderValue::from_str(&kept.join(", ")).unwrap_or(HeaderValue::from_static("identity"))
}

impl RewriteBody {
    fn monitors(&self, req: &Req) -> bool {
        let accept = req
            .headers()
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let upgrade = req
            .headers()
            .get(header::UPGRADE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        self.types.iter().any(|t| accept.contains(t.as_str()))
            && self.methods.iter().any(|m| m == req.method().as_str())
            && !upgrade.to_ascii_lowercase().contains("websocket")
    }

    /// Whether an answer is of a monitored type; one without a type is.
    fn rewrites_type(&self, resp: &Resp) -> bool {
        match resp.headers().get(header::CONTENT_TYPE) {
            None => true,
            Some(v) => v.to_str().is_ok_and(|t| {
                self.types
                    .iter()
                    .any(|m| t.to_ascii_lowercase().contains(m.as_str()))
            }),
        }
    }

    async fn rewrite(&self, resp: Resp) -> Resp {
        let (mut parts, mut body) = resp.into_parts();
        if !self.last_modified {
            parts.headers.remove(header::LAST_MODIFIED);
        }
        let Some(coding) = Coding::of(parts.headers.get(header::CONTENT_ENCODING)) else {
            return Resp::from_parts(parts, body);
        };
        let mut frames: VecDeque<Frame<Bytes>> = VecDeque::new();
        let mut read = 0usize;
        loop {
            match body.frame().await {
                None => break,
                Some(Ok(frame)) => {
                    read += frame.data_ref().map_or(0, Bytes::len);
                    frames.push_back(frame);
                    if read > MAX_BODY {
                        return replay(parts, frames, None, Some(body));
                    }
                }
                Some(Err(e)) => return replay(parts, frames, Some(e), None),
            }
        }
        let mut whole = Vec::with_capacity(read);
        for frame in &frames {
            if let Some(data) = frame.data_ref() {
                whole.extend_from_slice(data);
            }
        }
        let Some(mut text) = coding.decode(&whole).filter(|t| !t.is_empty()) else {
            return replay(parts, frames, None, None);
        };
        for (regex, replacement) in &self.rules {
            if let std::borrow::Cow::Owned(changed) =
                regex.replace_all(&text, replacement.as_slice())
            {
                text = changed;
            }
        }
        let Ok(encoded) = coding.encode(text) else {
            return replay(parts, frames, None, None);
        };
        parts
            .headers
            .insert(header::CONTENT_LENGTH, HeaderValue::from(encoded.len()));
        Resp::from_parts(parts, ProxyBody::bytes(Bytes::from(encoded)))
    }
}

/// The answer as it came: frames already read, then the rest.
fn replay(
    parts: http::response::Parts,
    peeked: VecDeque<Frame<Bytes>>,
    failed: Option<crate::body::BoxError>,
    rest: Option<ProxyBody>,
) -> Resp {
    Resp::from_parts(
        parts,
        ProxyBody::boxed(Replay {
            peeked,
            failed,
            rest,
        }),
    )
}

impl Middleware for RewriteBody {
    fn wraps(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, mut req: Req, _cx: &'a Exchange, next: Next<'a>) -> BoxFuture<'a, Resp> {
        if !self.monitors(&req) {
            return next.run(req);
        }
        let accept = readable_encodings(req.headers().get(header::ACCEPT_ENCODING));
        req.headers_mut().insert(header::ACCEPT_ENCODING, accept);
        Box::pin(async move {
            let resp = next.run(req).await;
            if !self.rewrites_type(&resp) {
                return resp;
            }
            self.rewrite(resp).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_coding_reads_back_what_it_writes() {
        let text = b"<html><head></head><body>hello</body></html>".repeat(50);
        for coding in [
            Coding::Identity,
            Coding::Gzip,
            Coding::Deflate,
            Coding::Brotli,
        ] {
            let encoded = coding.encode(text.clone()).unwrap();
            assert_eq!(
                coding.decode(&encoded).as_deref(),
                Some(&text[..]),
                "{coding:?}"
            );
        }
        assert_eq!(Coding::Gzip.decode(b"not gzip"), None);
    }

    #[test]
    fn only_readable_encodings_are_asked_for() {
        let asked = |v: &'static str| readable_encodings(Some(&HeaderValue::from_static(v)));
        assert_eq!(asked("gzip, zstd;q=0.9, br"), "gzip, br");
        assert_eq!(asked("zstd"), "identity");
        assert_eq!(readable_encodings(None), "identity");
    }

    #[test]
    fn a_body_that_inflates_past_the_bound_is_not_decoded() {
        let big = vec![b'a'; MAX_BODY + 10];
        let packed = Coding::Gzip.encode(big).unwrap();
        assert!(packed.len() < MAX_BODY);
        assert_eq!(Coding::Gzip.decode(&packed), None);
    }
}
