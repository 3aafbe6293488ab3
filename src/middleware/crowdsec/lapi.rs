//! Talking to CrowdSec's Local API: the two routes the bouncer reads
//! (`/v1/decisions?ip=` and `/v1/decisions/stream`), their answers, and the
//! Go durations those answers carry.

use crate::body::RequestBody;
use crate::client::{SendError, ServerKind, UpstreamClient};
use bytes::Bytes;
use http::header::{HOST, HeaderName, HeaderValue, USER_AGENT};
use http::{Request, Uri};
use http_body_util::BodyExt;
use serde::Deserialize;
use std::sync::Arc;
use std::time::Duration;

const API_KEY: HeaderName = HeaderName::from_static("x-api-key");
const AGENT: HeaderValue = HeaderValue::from_static("gangway-crowdsec-bouncer");
/// A LAPI answer larger than this is refused: a stream's first answer holds
/// every active decision, tens of thousands with the community lists.
const MAX_ANSWER: usize = 64 << 20;

/// Why a question to the LAPI got no usable answer.
#[derive(Debug, thiserror::Error)]
pub enum LapiError {
    /// No answer: refused, unreachable, broken exchange.
    #[error("the LAPI at {host} cannot be reached: {source}")]
    Unreachable {
        /// `crowdsecLapiHost`.
        host: String,
        /// What the client said.
        source: SendError,
    },
    /// No full answer within `httpTimeoutSeconds`.
    #[error("the LAPI at {host} did not answer within {seconds}s")]
    Timeout {
        /// `crowdsecLapiHost`.
        host: String,
        /// `httpTimeoutSeconds`.
        seconds: u64,
    },
    /// An answer other than 2xx (403: a wrong bouncer key).
    #[error("the LAPI at {host} answered {status}")]
    Status {
        /// `crowdsecLapiHost`.
        host: String,
        /// The status it answered.
        status: http::StatusCode,
    },
    /// The answer's body broke off or was too large.
    #[error("the LAPI at {host} sent an unreadable answer: {reason}")]
    Body {
        /// `crowdsecLapiHost`.
        host: String,
        /// Why.
        reason: String,
    },
    /// The answer is not the JSON the route gives.
    #[error("the LAPI at {host} sent an answer that is not its decisions: {source}")]
    Json {
        /// `crowdsecLapiHost`.
        host: String,
        /// What the parser said.
        source: serde_json::Error,
    },
}

/// One decision as the LAPI gives it.
#[derive(Debug, Deserialize)]
pub struct Decision {
    /// `ban`, `captcha` or another remediation.
    #[serde(rename = "type", default)]
    pub kind: String,
    /// `Ip` or `Range` (others, such as `Country`, are not about addresses).
    #[serde(default)]
    pub scope: String,
    /// The address or range.
    #[serde(default)]
    pub value: String,
    /// Time left, as a Go duration (`3h59m58.6s`).
    #[serde(default)]
    pub duration: String,
}

/// What `/v1/decisions/stream` answers: what is new and what was deleted
/// since the last pull (everything active at `startup=true`).
#[derive(Debug, Deserialize, Default)]
pub struct Stream {
    /// Decisions that were deleted or expired.
    #[serde(default, deserialize_with = "null_is_empty")]
    pub deleted: Vec<Decision>,
    /// Decisions that are new.
    #[serde(default, rename = "new", deserialize_with = "null_is_empty")]
    pub added: Vec<Decision>,
}

fn null_is_empty<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Decision>, D::Error> {
    Ok(Option::<Vec<Decision>>::deserialize(d)?.unwrap_or_default())
}

/// The LAPI as one bouncer configuration reaches it.
pub struct Lapi {
    client: Arc<UpstreamClient>,
    kind: ServerKind,
    /// `scheme://host` + `crowdsecLapiPath`, without its trailing slash.
    base: String,
    host: String,
    host_header: HeaderValue,
    key: Option<HeaderValue>,
    timeout: Duration,
}

impl Lapi {
    /// The LAPI at `host` (`crowdsecLapiHost`) under `path`, asked through
    /// `client` with `key`, each question bounded by `timeout`.
    pub fn new(
        client: Arc<UpstreamClient>,
        https: bool,
        host: &str,
        path: &str,
        key: &str,
        timeout: Duration,
    ) -> Option<Self> {
        let scheme = if https { "https" } else { "http" };
        let path = path.trim_end_matches('/');
        let path = if path.is_empty() || path.starts_with('/') {
            path.to_owned()
        } else {
            format!("/{path}")
        };
        Some(Lapi {
            client,
            kind: if https {
                ServerKind::Https
            } else {
                ServerKind::Http
            },
            base: format!("{scheme}://{host}{path}"),
            host: host.to_owned(),
            host_header: HeaderValue::from_str(host).ok()?,
            key: Some(key)
                .filter(|k| !k.is_empty())
                .map(HeaderValue::from_str)
                .transpose()
                .ok()?,
            timeout,
        })
    }

    /// The decisions about `ip` (live and none modes); empty when none.
    pub async fn decisions(&self, ip: std::net::IpAddr) -> Result<Vec<Decision>, LapiError> {
        let body = self.get(&format!("/v1/decisions?ip={ip}")).await?;
        // The LAPI answers `null` when it has no decision.
        let found: Option<Vec<Decision>> = self.json(&body)?;
        Ok(found.unwrap_or_default())
    }

    /// The stream's changes; `startup` asks for every active decision.
    pub async fn stream(&self, startup: bool) -> Result<Stream, LapiError> {
        let body = self
            .get(&format!("/v1/decisions/stream?startup={startup}"))
            .await?;
        self.json(&body)
    }

    fn json<T: serde::de::DeserializeOwned>(&self, body: &[u8]) -> Result<T, LapiError> {
        serde_json::from_slice(body).map_err(|source| LapiError::Json {
            host: self.host.clone(),
            source,
        })
    }

    async fn get(&self, route: &str) -> Result<Bytes, LapiError> {
        let timeout = || LapiError::Timeout {
            host: self.host.clone(),
            seconds: self.timeout.as_secs(),
        };
        tokio::time::timeout(self.timeout, self.exchange(route))
            .await
            .map_err(|_| timeout())?
    }

    async fn exchange(&self, route: &str) -> Result<Bytes, LapiError> {
        let uri: Uri =
            format!("{}{route}", self.base)
                .parse()
                .map_err(|e: http::uri::InvalidUri| LapiError::Body {
                    host: self.host.clone(),
                    reason: e.to_string(),
                })?;
        let mut req = Request::new(RequestBody::full(Bytes::new()));
        *req.uri_mut() = uri;
        let headers = req.headers_mut();
        headers.insert(HOST, self.host_header.clone());
        headers.insert(USER_AGENT, AGENT);
        if let Some(key) = &self.key {
            headers.insert(API_KEY, key.clone());
        }
        let resp = self
            .client
            .send(self.kind, false, Box::new(req))
            .await
            .map_err(|source| LapiError::Unreachable {
                host: self.host.clone(),
                source,
            })?;
        if !resp.status().is_success() {
            return Err(LapiError::Status {
                host: self.host.clone(),
                status: resp.status(),
            });
        }
        let body = http_body_util::Limited::new(resp.into_body(), MAX_ANSWER);
        let collected = body.collect().await.map_err(|e| LapiError::Body {
            host: self.host.clone(),
            reason: e.to_string(),
        })?;
        Ok(collected.to_bytes())
    }
}

/// A Go duration (`1h2m3.5s`, `250ms`, `-3s`); None when it is not one.
/// Negative durations (a decision that has just expired) come out as zero.
pub fn parse_go_duration(text: &str) -> Option<Duration> {
    let (negative, mut rest) = match text.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    if rest == "0" {
        return Some(Duration::ZERO);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let seconds = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        total += number * seconds;
        rest = &rest[unit_len..];
    }
    if negative {
        return Some(Duration::ZERO);
    }
    Duration::try_from_secs_f64(total).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        let d = |s| parse_go_duration(s);
        assert_eq!(
            d("3h59m58s"),
            Some(Duration::from_secs(3 * 3600 + 59 * 60 + 58))
        );
        assert_eq!(d("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(d("250ms"), Some(Duration::from_millis(250)));
        assert_eq!(d("-3s"), Some(Duration::ZERO));
        assert_eq!(d("0"), Some(Duration::ZERO));
        for bad in ["", "3", "3d", "h", "1.2.3s"] {
            assert_eq!(d(bad), None, "{bad}");
        }
    }

    #[test]
    fn stream_answers_with_nulls_read_as_empty() {
        let s: Stream = serde_json::from_str(r#"{"deleted":null,"new":null}"#).unwrap();
        assert!(s.added.is_empty() && s.deleted.is_empty());
        let s: Stream = serde_json::from_str(
            r#"{"deleted":[],"new":[{"duration":"59m59.2s","id":1,"origin":"cscli","scenario":"x","scope":"Ip","type":"ban","value":"127.0.0.2"}]}"#,
        )
        .unwrap();
        assert_eq!(s.added[0].value, "127.0.0.2");
        assert_eq!(s.added[0].kind, "ban");
    }
}
