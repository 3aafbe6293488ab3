//! Forwarding a request to CrowdSec's AppSec component (its WAF) before it
//! goes on, as the plugin does with `crowdsecAppsecEnabled`: the request's
//! own headers, and its body up to `crowdsecAppsecBodyLimit`, plus the
//! `X-Crowdsec-Appsec-*` headers that tell the component who asked what.
//! A 200 lets the request through; anything else is an [`AppsecError`],
//! which refuses it unless the options tolerate that kind.

use super::super::Req;
use super::super::forward_auth::remove_hop_by_hop;
use super::super::spool::{self, Read, Rest};
use crate::body::{BoxError, ClientBodyError, RequestBody};
use crate::client::{SendError, ServerKind, UpstreamClient};
use bytes::Bytes;
use http::header::{CONTENT_LENGTH, EXPECT, HOST, HeaderName, HeaderValue, USER_AGENT};
use http::{Method, Request, StatusCode, Uri, Version};
use http_body::Body as _;
use http_body_util::BodyExt;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

// The names CrowdSec's AppSec protocol reads.
const IP: HeaderName = HeaderName::from_static("x-crowdsec-appsec-ip");
const URI: HeaderName = HeaderName::from_static("x-crowdsec-appsec-uri");
const HOST_OF: HeaderName = HeaderName::from_static("x-crowdsec-appsec-host");
const VERB: HeaderName = HeaderName::from_static("x-crowdsec-appsec-verb");
const API_KEY: HeaderName = HeaderName::from_static("x-crowdsec-appsec-api-key");
const AGENT_OF: HeaderName = HeaderName::from_static("x-crowdsec-appsec-user-agent");
/// The component answers with a short JSON verdict; more is not read.
const MAX_ANSWER: usize = 64 << 10;

/// Why the AppSec component did not let a request through.
#[derive(Debug, thiserror::Error)]
pub enum AppsecError {
    /// 403: a rule matched; the request is refused whatever the options.
    #[error("the AppSec component at {host} found the request malicious")]
    Malicious {
        /// `crowdsecAppsecHost`.
        host: String,
    },
    /// 500: the component failed (`crowdsecAppsecFailureBlock` decides).
    #[error("the AppSec component at {host} failed to judge the request (500)")]
    Failed {
        /// `crowdsecAppsecHost`.
        host: String,
    },
    /// Another answer (401: a wrong key); the request is refused.
    #[error("the AppSec component at {host} answered {status}")]
    Status {
        /// `crowdsecAppsecHost`.
        host: String,
        /// What it answered.
        status: StatusCode,
    },
    /// No answer, or a proxy in front of it answered 502, 503 or 504
    /// (`crowdsecAppsecUnreachableBlock` decides).
    #[error("the AppSec component at {host} cannot be reached: {reason}")]
    Unreachable {
        /// `crowdsecAppsecHost`.
        host: String,
        /// What the client said, or the gateway's status.
        reason: String,
    },
    /// No answer within `httpTimeoutSeconds` (handled as unreachable).
    #[error("the AppSec component at {host} did not answer within {seconds}s")]
    Timeout {
        /// `crowdsecAppsecHost`.
        host: String,
        /// `httpTimeoutSeconds`.
        seconds: u64,
    },
    /// An HTTP/2 or 3 body without a length, which may never end (a gRPC
    /// stream), with `crowdsecAppsecUnreadableBodyBlock` on.
    #[error("the request's body has no length and cannot be read before it goes on")]
    UnreadableBody,
    /// The client's body broke off or broke a limit while it was read.
    #[error("the request's body could not be read: {0}")]
    Body(#[source] BoxError),
}

impl AppsecError {
    /// The status for the client when the fault is its own (its body),
    /// rather than the ban answer.
    pub fn client_status(&self) -> Option<StatusCode> {
        match self {
            AppsecError::Body(e) => Some(
                ClientBodyError::find(e.as_ref()).map_or(StatusCode::BAD_REQUEST, |f| f.status()),
            ),
            _ => None,
        }
    }
}

/// The AppSec component as one bouncer configuration reaches it.
pub struct Appsec {
    client: Arc<UpstreamClient>,
    kind: ServerKind,
    /// `scheme://host` + `crowdsecAppsecPath`.
    uri: Uri,
    host: String,
    host_header: HeaderValue,
    key: HeaderValue,
    timeout: Duration,
    body_limit: u64,
    failure_block: bool,
    unreachable_block: bool,
    unreadable_body_block: bool,
}

/// How the component is asked: where, with what, and what is tolerated.
pub struct Settings<'a> {
    /// Over TLS.
    pub https: bool,
    /// `crowdsecAppsecHost`.
    pub host: &'a str,
    /// `crowdsecAppsecPath`.
    pub path: &'a str,
    /// The key sent as `X-Crowdsec-Appsec-Api-Key`.
    pub key: &'a str,
    /// `httpTimeoutSeconds`.
    pub timeout: Duration,
    /// `crowdsecAppsecBodyLimit`.
    pub body_limit: u64,
    /// `crowdsecAppsecFailureBlock`.
    pub failure_block: bool,
    /// `crowdsecAppsecUnreachableBlock`.
    pub unreachable_block: bool,
    /// `crowdsecAppsecUnreadableBodyBlock`.
    pub unreadable_body_block: bool,
}

impl Appsec {
    /// The component asked through `client`; None when the host, path or
    /// key cannot be written into a request.
    pub fn new(client: Arc<UpstreamClient>, s: &Settings<'_>) -> Option<Self> {
        let scheme = if s.https { "https" } else { "http" };
        // As Go writes a URL with a host: the path starts with a slash.
        let slash = if s.path.starts_with('/') { "" } else { "/" };
        let uri: Uri = format!("{scheme}://{}{slash}{}", s.host, s.path)
            .parse()
            .ok()?;
        Some(Appsec {
            client,
            kind: if s.https {
                ServerKind::Https
            } else {
                ServerKind::Http
            },
            uri,
            host: s.host.to_owned(),
            host_header: HeaderValue::from_str(s.host).ok()?,
            key: HeaderValue::from_str(s.key).ok()?,
            timeout: s.timeout,
            body_limit: s.body_limit,
            failure_block: s.failure_block,
            unreachable_block: s.unreachable_block,
            unreadable_body_block: s.unreadable_body_block,
        })
    }

    /// Asks the component about `req` from `ip`. Ok: the request goes on
    /// (its body, if read, put back whole); Err: it is refused, for the
    /// reason given. Failures the options tolerate come out as Ok.
    pub async fn check(&self, req: &mut Req, ip: IpAddr) -> Result<(), AppsecError> {
        match self.ask(req, ip).await {
            Err(e) if tolerated(&e, self.failure_block, self.unreachable_block) => {
                tracing::debug!(error = %e, %ip, "crowdsec: AppSec could not judge; the request passes");
                Ok(())
            }
            done => done,
        }
    }

    async fn ask(&self, req: &mut Req, ip: IpAddr) -> Result<(), AppsecError> {
        let body = self.read_body(req).await?;
        let question = self.question(req, ip, body);
        let status = tokio::time::timeout(self.timeout, self.exchange(question))
            .await
            .map_err(|_| AppsecError::Timeout {
                host: self.host.clone(),
                seconds: self.timeout.as_secs(),
            })??;
        verdict(&self.host, status)
    }

    /// The body to forward (None: the question is a GET), read up to the
    /// limit. What was read goes back in front of the rest, so the request
    /// goes on with its whole body.
    async fn read_body(&self, req: &mut Req) -> Result<Option<Bytes>, AppsecError> {
        if req.body().is_end_stream() {
            return Ok(None);
        }
        let sized =
            req.headers().contains_key(CONTENT_LENGTH) || req.body().size_hint().exact().is_some();
        if req.version() >= Version::HTTP_2 && !sized {
            // It may be a stream that ends only with the exchange (gRPC):
            // waiting for its end would hold the request until it times out.
            if self.unreadable_body_block && carries_body(req.method()) {
                return Err(AppsecError::UnreadableBody);
            }
            return Ok(None);
        }
        if self.body_limit == 0 {
            return Ok(None);
        }
        let body = std::mem::take(req.body_mut());
        // All in memory: at most the limit plus the last frame read.
        let read = spool::read(body, Some(self.body_limit), u64::MAX)
            .await
            .map_err(AppsecError::Body)?;
        let forwarded = match read {
            Read::Whole(whole) => {
                let bytes = whole.in_memory().unwrap_or_default();
                *req.body_mut() = if whole.has_trailers() {
                    RequestBody::boxed(whole.body())
                } else {
                    RequestBody::full(bytes.clone())
                };
                bytes
            }
            Read::TooLarge(head, rest) => {
                let bytes = head.in_memory().unwrap_or_default();
                let limit = usize::try_from(self.body_limit).unwrap_or(usize::MAX);
                *req.body_mut() = RequestBody::boxed(Rest::new(&head, rest));
                bytes.slice(..limit.min(bytes.len()))
            }
        };
        Ok(Some(forwarded).filter(|b| !b.is_empty()))
    }

    /// The request to the component: the client's headers (less those of
    /// its connection) and the protocol's own.
    fn question(&self, req: &Req, ip: IpAddr, body: Option<Bytes>) -> Request<RequestBody> {
        let mut h = req.headers().clone();
        remove_hop_by_hop(&mut h);
        for name in [HOST, CONTENT_LENGTH, EXPECT] {
            h.remove(name);
        }
        h.insert(HOST, self.host_header.clone());
        h.insert(API_KEY, self.key.clone());
        let ip = HeaderValue::try_from(ip.to_string()).expect("an address is header text");
        h.insert(IP, ip);
        let verb = HeaderValue::from_str(req.method().as_str()).expect("a method is header text");
        h.insert(VERB, verb);
        // The host the client asked for: `Host`, or HTTP/2's authority.
        let host = req.headers().get(HOST).cloned().or_else(|| {
            req.uri()
                .authority()
                .and_then(|a| HeaderValue::from_str(a.as_str()).ok())
        });
        h.insert(HOST_OF, host.unwrap_or(HeaderValue::from_static("")));
        // The request's target as the client wrote it in origin form (an
        // HTTP/2 request's URI also holds scheme and authority).
        let target = req
            .uri()
            .path_and_query()
            .and_then(|pq| HeaderValue::from_str(pq.as_str()).ok())
            .unwrap_or(HeaderValue::from_static("/"));
        h.insert(URI, target);
        let agent = req.headers().get(USER_AGENT).cloned();
        h.insert(AGENT_OF, agent.unwrap_or(HeaderValue::from_static("")));
        let (method, body) = match body {
            Some(bytes) => {
                h.insert(CONTENT_LENGTH, HeaderValue::from(bytes.len()));
                (Method::POST, RequestBody::full(bytes))
            }
            None => (Method::GET, RequestBody::empty()),
        };
        let mut out = Request::new(body);
        *out.method_mut() = method;
        *out.uri_mut() = self.uri.clone();
        *out.headers_mut() = h;
        out
    }

    /// Sends the question; the answer's status once its (small) body is
    /// read, so the connection can be used again.
    async fn exchange(&self, question: Request<RequestBody>) -> Result<StatusCode, AppsecError> {
        let answer = self
            .client
            .send(self.kind, false, Box::new(question))
            .await
            .map_err(|e: SendError| AppsecError::Unreachable {
                host: self.host.clone(),
                reason: e.to_string(),
            })?;
        let status = answer.status();
        // The verdict is the status; a body that breaks off changes nothing.
        let _ = http_body_util::Limited::new(answer.into_body(), MAX_ANSWER)
            .collect()
            .await;
        Ok(status)
    }
}

/// What the component's answer means.
fn verdict(host: &str, status: StatusCode) -> Result<(), AppsecError> {
    let host = host.to_owned();
    match status {
        StatusCode::OK => Ok(()),
        StatusCode::FORBIDDEN => Err(AppsecError::Malicious { host }),
        StatusCode::INTERNAL_SERVER_ERROR => Err(AppsecError::Failed { host }),
        // As the plugin: a gateway's error means the component is not
        // there, not that it judged.
        StatusCode::BAD_GATEWAY | StatusCode::SERVICE_UNAVAILABLE | StatusCode::GATEWAY_TIMEOUT => {
            Err(AppsecError::Unreachable {
                host,
                reason: format!("its gateway answered {status}"),
            })
        }
        status => Err(AppsecError::Status { host, status }),
    }
}

/// Whether `crowdsecAppsecFailureBlock` and `…UnreachableBlock` let the
/// request through despite `e`. A verdict, a wrong key and the client's
/// own body never do.
fn tolerated(e: &AppsecError, failure_block: bool, unreachable_block: bool) -> bool {
    match e {
        AppsecError::Failed { .. } => !failure_block,
        AppsecError::Unreachable { .. } | AppsecError::Timeout { .. } => !unreachable_block,
        AppsecError::Malicious { .. }
        | AppsecError::Status { .. }
        | AppsecError::UnreadableBody
        | AppsecError::Body(_) => false,
    }
}

/// The methods whose requests normally carry a body, as the plugin lists
/// them for bodies it cannot read.
fn carries_body(method: &Method) -> bool {
    [Method::POST, Method::PUT, Method::PATCH, Method::DELETE].contains(method)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_failures_and_silence_can_be_let_through() {
        // (status, passes with both …Block options off)
        let cases = [
            (200, true),
            (403, false),
            (401, false),
            (404, false),
            (500, true),
            (502, true),
            (503, true),
            (504, true),
        ];
        for (code, forgiven) in cases {
            let status = StatusCode::from_u16(code).unwrap();
            let passes = |failure_block, unreachable_block| match verdict("waf:7422", status) {
                Ok(()) => true,
                Err(e) => tolerated(&e, failure_block, unreachable_block),
            };
            assert_eq!(passes(false, false), forgiven, "{code}");
            assert_eq!(passes(true, true), code == 200, "{code}");
        }
        let failed = verdict("waf:7422", StatusCode::INTERNAL_SERVER_ERROR).unwrap_err();
        assert!(!tolerated(&failed, true, false));
        let timeout = AppsecError::Timeout {
            host: "waf:7422".to_owned(),
            seconds: 10,
        };
        assert!(tolerated(&timeout, true, false));
        assert!(!tolerated(&AppsecError::UnreadableBody, false, false));
    }
}
