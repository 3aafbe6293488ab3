//! The `autodns` provider, through InterNetX's AutoDNS JSON API (the
//! Domainrobot API) and the variables Traefik's DNS library documents for
//! it: `AUTODNS_API_USER`, `AUTODNS_API_PASSWORD`, `AUTODNS_ENDPOINT`
//! (default `https://api.autodns.com/v1/`), `AUTODNS_CONTEXT` (default 4,
//! the live system; 1 is the demo system), `AUTODNS_TTL` (default 600),
//! `AUTODNS_HTTP_TIMEOUT`.
//!
//! Every call carries HTTP basic authentication and the
//! `X-Domainrobot-Context` header. The zone is found with `POST
//! /zone/_search` filtered on each name the record's name ends with,
//! longest first; the record is added and removed with the zone's
//! `_stream` (`adds` / `rems`), which touches no other record.

use super::api::{self, Api, ApiProblem};
use super::{DnsError, Env};
use http::{HeaderName, HeaderValue, Method};

/// Where the API is, unless `AUTODNS_ENDPOINT` says otherwise.
const BASE_URL: &str = "https://api.autodns.com/v1";
/// The context unless `AUTODNS_CONTEXT` says otherwise (the live system).
const DEFAULT_CONTEXT: &str = "4";
/// The TTL unless `AUTODNS_TTL` says otherwise.
const DEFAULT_TTL: u64 = 600;

/// The `autodns` provider.
pub(super) struct AutoDns {
    api: Api,
    base: String,
    /// Basic authentication (a secret) and the context.
    headers: Vec<(HeaderName, HeaderValue)>,
    ttl: u64,
}

#[derive(serde::Deserialize)]
struct SearchAnswer {
    #[serde(default)]
    data: Vec<Zone>,
}

#[derive(serde::Deserialize)]
struct Zone {
    origin: String,
}

/// The status text and each message's `text (code)` of an error answer.
fn message(body: &[u8]) -> Option<String> {
    let json: serde_json::Value = serde_json::from_slice(body).ok()?;
    let mut parts = Vec::new();
    if let Some(text) = json["status"]["text"].as_str() {
        parts.push(match json["status"]["code"].as_str() {
            Some(code) => format!("{text} ({code})"),
            None => text.to_owned(),
        });
    }
    for m in json["messages"].as_array().into_iter().flatten() {
        if let Some(text) = m["text"].as_str() {
            parts.push(match m["code"].as_str() {
                Some(code) => format!("{text} ({code})"),
                None => text.to_owned(),
            });
        }
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

impl AutoDns {
    /// Reads the credentials and settings; fails naming what is missing.
    pub(super) fn from_env(mut env: Env<'_>) -> Result<Self, DnsError> {
        let user = env.required("AUTODNS_API_USER")?;
        let password = env.required("AUTODNS_API_PASSWORD")?;
        let context = env
            .optional("AUTODNS_CONTEXT")?
            .unwrap_or_else(|| DEFAULT_CONTEXT.to_owned());
        if context.trim().parse::<u32>().is_err() {
            return Err(DnsError::BadEnv {
                variable: "AUTODNS_CONTEXT".to_owned(),
                problem: format!("`{context}` is not a number (4 is the live system, 1 the demo)"),
            });
        }
        let ttl = api::ttl(&env, "AUTODNS_TTL", DEFAULT_TTL, 1)?;
        let base = api::base_url(&env, "AUTODNS_ENDPOINT", BASE_URL)?;
        let api = Api::new(&env, "autodns", "AUTODNS", message)?;
        env.finish()?;
        let mut headers = api::basic(&user, &password, "AUTODNS_API_PASSWORD")?;
        headers.push((
            HeaderName::from_static("x-domainrobot-context"),
            api::secret_header(context.trim(), "AUTODNS_CONTEXT")?,
        ));
        Ok(AutoDns {
            api,
            base,
            headers,
            ttl,
        })
    }

    /// The zone holding `fqdn`.
    async fn zone(&self, fqdn: &str) -> Result<String, DnsError> {
        let action = format!("finding the zone of `{fqdn}`");
        let tried = api::zone_candidates(fqdn);
        let url = format!("{}/zone/_search", self.base);
        for name in &tried {
            let body = serde_json::json!({
                "filters": [{ "key": "name", "value": name, "operator": "EQUAL" }],
            });
            let reply = self
                .api
                .json(&action, Method::POST, &url, &self.headers, Some(&body))
                .await?;
            let reply = self.api.success(&action, reply)?;
            let found: SearchAnswer = reply.json().map_err(|p| self.api.error(&action, p))?;
            if let Some(zone) = found.data.into_iter().next() {
                return Ok(zone.origin.trim_end_matches('.').to_owned());
            }
        }
        Err(self.api.error(&action, ApiProblem::NoZone { tried }))
    }

    /// Sends the zone's `_stream` with the record under `key` (`adds` or
    /// `rems`).
    async fn stream(&self, verb: &str, key: &str, fqdn: &str, value: &str) -> Result<(), DnsError> {
        let zone = self.zone(fqdn).await?;
        let action = format!("{verb} the TXT record `{fqdn}` in zone `{zone}`");
        let record = serde_json::json!({
            "name": api::relative(fqdn, &zone),
            "ttl": self.ttl,
            "type": "TXT",
            "value": value,
        });
        let body = serde_json::json!({ key: [record] });
        let url = format!("{}/zone/{zone}/_stream", self.base);
        let reply = self
            .api
            .json(&action, Method::POST, &url, &self.headers, Some(&body))
            .await?;
        self.api.success(&action, reply).map(drop)
    }

    async fn present(&self, fqdn: &str, value: &str) -> Result<(), DnsError> {
        self.stream("adding", "adds", fqdn, value).await
    }

    async fn cleanup(&self, fqdn: &str, value: &str) -> Result<(), DnsError> {
        self.stream("removing", "rems", fqdn, value).await
    }
}

api::dns_provider!(AutoDns, "autodns");
