//! The bouncer's answer to a refused request: `remediationStatusCode`,
//! the `remediationHeadersCustomName` header, and the page of
//! `banFilePath` with its `{{ .ClientIP }}`, `{{ .RemediationReason }}` and
//! `{{ .TraceID }}` filled in.

use super::super::{MiddlewareError, Resp};
use crate::body::ProxyBody;
use crate::template::{Template, Value};
use bytes::Bytes;
use http::header::{CONTENT_TYPE, HeaderName, HeaderValue};
use http::{HeaderMap, Method, Response, StatusCode};
use std::collections::BTreeMap;
use std::net::IpAddr;

/// Why a request is refused, in the words the plugin gives its page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// The LAPI has a decision about the address (or could not be asked).
    Lapi,
    /// The client's address could not be read, or the stream's pulls fail.
    Technical,
    /// The AppSec component found the request malicious, or could not
    /// judge it and its options say to refuse then.
    Appsec,
}

impl Reason {
    fn as_str(self) -> &'static str {
        match self {
            Reason::Lapi => "LAPI",
            Reason::Technical => "TECHNICAL_ISSUE",
            Reason::Appsec => "APPSEC",
        }
    }
}

/// The compiled answer.
#[derive(Debug)]
pub struct Ban {
    status: StatusCode,
    remediation_header: Option<HeaderName>,
    trace_header: Option<HeaderName>,
    page: Option<(Template, HeaderValue)>,
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
                let page = Template::parse(&text).map_err(|e| {
                    MiddlewareError::invalid("banFilePath", format!("`{path}`: {e}"))
                })?;
                Some((page, HeaderValue::from_static(content_type(path))))
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
            Some((page, _)) if method != Method::HEAD => {
                let trace = self
                    .trace_header
                    .as_ref()
                    .and_then(|h| headers.get(h))
                    .and_then(|v| v.to_str().ok());
                ProxyBody::bytes(Bytes::from(render(page, ip, reason, trace)))
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

/// The page with the plugin's fields: `.ClientIP`, `.RemediationReason`
/// and `.TraceID` (empty when the request has no trace header). A page that fails while it
/// runs is sent as far as it got, as Go's template writes to the response
/// as it goes.
fn render(page: &Template, ip: Option<IpAddr>, reason: Reason, trace: Option<&str>) -> String {
    let mut data = BTreeMap::new();
    let ip = ip.map(|ip| ip.to_string()).unwrap_or_default();
    data.insert("ClientIP".to_owned(), Value::Str(ip));
    data.insert(
        "RemediationReason".to_owned(),
        Value::Str(reason.as_str().to_owned()),
    );
    // The plugin's data is a map of text, where a missing key reads empty.
    let trace = trace.unwrap_or_default().to_owned();
    data.insert("TraceID".to_owned(), Value::Str(trace));
    // The plugin's pages run without the environment.
    page.render(&Value::Map(data), &|_| None)
        .unwrap_or_else(|e| {
            tracing::warn!(error = %e, "crowdsec: the ban page failed");
            String::new()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_fill_the_plugins_fields() {
        let page = Template::parse(
            "<p>{{ .ClientIP }} {{.RemediationReason}}{{ with .TraceID }} trace {{ . }}{{ end }}</p>",
        )
        .unwrap();
        let ip = Some("127.0.0.2".parse().unwrap());
        assert_eq!(
            render(&page, ip, Reason::Lapi, None),
            "<p>127.0.0.2 LAPI</p>"
        );
        assert_eq!(
            render(&page, None, Reason::Technical, Some("abc")),
            "<p> TECHNICAL_ISSUE trace abc</p>"
        );
    }

    #[test]
    fn content_type_follows_the_extension() {
        assert_eq!(content_type("/x/ban.JSON"), "application/json");
        assert_eq!(content_type("/x/ban.html"), "text/html; charset=utf-8");
        assert_eq!(content_type("/x/ban"), "text/html; charset=utf-8");
    }
}
