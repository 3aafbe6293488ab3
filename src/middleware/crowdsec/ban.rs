//! The bouncer's answer to a refused request: `remediationStatusCode`,
//! the `remediationHeadersCustomName` header, and the page of
//! `banFilePath` with its `{{ .ClientIP }}`, `{{ .RemediationReason }}` and
//! `{{ .TraceID }}` filled in.

use super::super::{MiddlewareError, Resp};
use crate::body::ProxyBody;
use bytes::Bytes;
use http::header::{CONTENT_TYPE, HeaderName, HeaderValue};
use http::{HeaderMap, Method, Response, StatusCode};
use std::net::IpAddr;

/// Why a request is refused, in the words the plugin gives its page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// The LAPI has a decision about the address (or could not be asked).
    Lapi,
    /// The client's address could not be read, or the stream's pulls fail.
    Technical,
}

impl Reason {
    fn as_str(self) -> &'static str {
        match self {
            Reason::Lapi => "LAPI",
            Reason::Technical => "TECHNICAL_ISSUE",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    ClientIp,
    Reason,
    TraceId,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Text(String),
    Field(Field),
}

/// The compiled answer.
#[derive(Debug)]
pub struct Ban {
    status: StatusCode,
    remediation_header: Option<HeaderName>,
    trace_header: Option<HeaderName>,
    page: Option<(Vec<Part>, HeaderValue)>,
}

const BANNED: HeaderValue = HeaderValue::from_static("ban");

impl Ban {
    /// The answer from the plugin's options; the page file is read now.
    pub fn compile(
        status: u16,
        remediation_header: &str,
        trace_header: &str,
        page_file: Option<&str>,
    ) -> Result<Self, MiddlewareError> {
        let header = |option: &'static str, name: &str| {
            Some(name)
                .filter(|n| !n.is_empty())
                .map(|n| {
                    HeaderName::from_bytes(n.as_bytes()).map_err(|_| {
                        MiddlewareError::invalid(option, format!("`{n}` is not a header name"))
                    })
                })
                .transpose()
        };
        let page = match page_file {
            None => None,
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    MiddlewareError::invalid("banFilePath", format!("`{path}`: {e}"))
                })?;
                let parts = parse_page(&text).map_err(|reason| {
                    MiddlewareError::invalid("banFilePath", format!("`{path}`: {reason}"))
                })?;
                Some((parts, HeaderValue::from_static(content_type(path))))
            }
        };
        Ok(Ban {
            status: StatusCode::from_u16(status)
                .map_err(|e| MiddlewareError::invalid("remediationStatusCode", e.to_string()))?,
            remediation_header: header("remediationHeadersCustomName", remediation_header)?,
            trace_header: header("traceHeadersCustomName", trace_header)?,
            page,
        })
    }

    /// The answer to a request with `headers` and `method` from `ip`.
    pub fn respond(
        &self,
        method: &Method,
        headers: &HeaderMap,
        ip: Option<IpAddr>,
        reason: Reason,
    ) -> Resp {
        let body = match &self.page {
            Some((parts, _)) if method != Method::HEAD => {
                let trace = self
                    .trace_header
                    .as_ref()
                    .and_then(|h| headers.get(h))
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("");
                let mut out = String::new();
                for part in parts {
                    match part {
                        Part::Text(t) => out.push_str(t),
                        Part::Field(Field::ClientIp) => {
                            if let Some(ip) = ip {
                                out.push_str(&ip.to_string());
                            }
                        }
                        Part::Field(Field::Reason) => out.push_str(reason.as_str()),
                        Part::Field(Field::TraceId) => out.push_str(trace),
                    }
                }
                ProxyBody::bytes(Bytes::from(out))
            }
            _ => ProxyBody::empty(),
        };
        let mut resp = Response::new(body);
        *resp.status_mut() = self.status;
        if let Some((_, kind)) = &self.page {
            resp.headers_mut().insert(CONTENT_TYPE, kind.clone());
        }
        if let Some(h) = &self.remediation_header {
            resp.headers_mut().insert(h.clone(), BANNED);
        }
        resp
    }
}

/// The page's content type by its file's extension, as the plugin picks it.
fn content_type(path: &str) -> &'static str {
    let ext = std::path::Path::new(path)
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    match ext.as_str() {
        "json" => "application/json",
        "txt" => "text/plain",
        "xml" => "application/xml",
        "js" => "application/javascript",
        "css" => "text/css",
        _ => "text/html; charset=utf-8",
    }
}

/// Splits the page into text and the three fields it may name. Any other
/// template action is an error: only field references are built in.
fn parse_page(text: &str) -> Result<Vec<Part>, String> {
    let mut parts = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("{{") {
        if open > 0 {
            parts.push(Part::Text(rest[..open].to_owned()));
        }
        let after = &rest[open + 2..];
        let close = after
            .find("}}")
            .ok_or_else(|| "a `{{` is never closed".to_owned())?;
        let action = after[..close].trim_matches(|c: char| c == '-' || c.is_whitespace());
        let field = match action {
            ".ClientIP" => Field::ClientIp,
            ".RemediationReason" => Field::Reason,
            ".TraceID" => Field::TraceId,
            other => {
                return Err(format!(
                    "`{{{{{other}}}}}`: only {{{{ .ClientIP }}}}, {{{{ .RemediationReason }}}} and {{{{ .TraceID }}}} are filled in"
                ));
            }
        };
        parts.push(Part::Field(field));
        rest = &after[close + 2..];
    }
    if !rest.is_empty() {
        parts.push(Part::Text(rest.to_owned()));
    }
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_fill_the_plugins_fields() {
        let parts =
            parse_page("<p>{{ .ClientIP }} {{.RemediationReason}} {{- .TraceID -}}</p>").unwrap();
        assert_eq!(
            parts,
            [
                Part::Text("<p>".into()),
                Part::Field(Field::ClientIp),
                Part::Text(" ".into()),
                Part::Field(Field::Reason),
                Part::Text(" ".into()),
                Part::Field(Field::TraceId),
                Part::Text("</p>".into()),
            ]
        );
        assert!(parse_page("{{ if .ClientIP }}x{{ end }}").is_err());
        assert!(parse_page("{{ .ClientIP ").is_err());
    }

    #[test]
    fn content_type_follows_the_extension() {
        assert_eq!(content_type("/x/ban.JSON"), "application/json");
        assert_eq!(content_type("/x/ban.html"), "text/html; charset=utf-8");
        assert_eq!(content_type("/x/ban"), "text/html; charset=utf-8");
    }
}
