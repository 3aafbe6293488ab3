//! The `godaddy` provider, through GoDaddy's Domains API (v1) and the
//! variables Traefik's DNS library documents for it: `GODADDY_API_KEY`,
//! `GODADDY_API_SECRET`, `GODADDY_TTL` (default and minimum 600),
//! `GODADDY_HTTP_TIMEOUT`; `GODADDY_API_URL` (gangway's own, default
//! `https://api.godaddy.com`) points it elsewhere (the OTE test system is
//! `https://api.ote-godaddy.com`).
//!
//! Every call carries `Authorization: sso-key <key>:<secret>`. The domain
//! is found by asking for each name the record's name ends with, longest
//! first. The name's TXT records are read, and written back whole with
//! the value added (cleanup: without it) by `PUT`, or deleted with
//! `DELETE` when it was the last.

use super::api::{self, Api};
use super::{DnsError, Env};
use http::{HeaderName, HeaderValue, Method, StatusCode};

/// Where the API is, unless `GODADDY_API_URL` says otherwise.
const BASE_URL: &str = "https://api.godaddy.com";
/// GoDaddy's smallest TTL, and the default.
const MIN_TTL: u64 = 600;

/// The `godaddy` provider.
pub(super) struct GoDaddy {
    api: Api,
    base: String,
    /// The key and secret; secrets.
    auth: Vec<(HeaderName, HeaderValue)>,
    ttl: u64,
}

#[derive(serde::Deserialize)]
struct Record {
    #[serde(default)]
    data: String,
}

/// GoDaddy's `{"code", "message"}` as `message (code)`.
fn message(body: &[u8]) -> Option<String> {
    let json: serde_json::Value = serde_json::from_slice(body).ok()?;
    let message = json["message"].as_str()?;
    Some(match json["code"].as_str() {
        Some(code) => format!("{message} ({code})"),
        None => message.to_owned(),
    })
}

impl GoDaddy {
    /// Reads the key, secret and settings; fails naming what is missing.
    pub(super) fn from_env(mut env: Env<'_>) -> Result<Self, DnsError> {
        let key = env.required("GODADDY_API_KEY")?;
        let secret = env.required("GODADDY_API_SECRET")?;
        let ttl = api::ttl(&env, "GODADDY_TTL", MIN_TTL, MIN_TTL)?;
        let base = api::base_url(&env, "GODADDY_API_URL", BASE_URL)?;
        let api = Api::new(&env, "godaddy", "GODADDY", message)?;
        env.finish()?;
        Ok(GoDaddy {
            api,
            base,
            auth: api::authorization("sso-key", &format!("{key}:{secret}"), "GODADDY_API_SECRET")?,
            ttl,
        })
    }

    /// The domain holding `fqdn`, and the URL of the name's TXT records.
    async fn records_url(&self, fqdn: &str) -> Result<(String, String), DnsError> {
        let domain = self
            .api
            .zone_by_get(fqdn, &self.auth, |name| {
                format!("{}/v1/domains/{name}", self.base)
            })
            .await?;
        let name = api::relative(fqdn, &domain);
        let name = if name.is_empty() {
            "@".to_owned()
        } else {
            name
        };
        let url = format!("{}/v1/domains/{domain}/records/TXT/{name}", self.base);
        Ok((domain, url))
    }

    /// The values of the TXT records at `url`.
    async fn values(&self, action: &str, url: &str) -> Result<Vec<String>, DnsError> {
        let reply = self
            .api
            .json(action, Method::GET, url, &self.auth, None)
            .await?;
        if reply.status == StatusCode::NOT_FOUND {
            return Ok(Vec::new());
        }
        let records: Vec<Record> = reply.json().map_err(|p| self.api.error(action, p))?;
        Ok(records.into_iter().map(|r| r.data).collect())
    }

    async fn put(&self, action: &str, url: &str, values: &[String]) -> Result<(), DnsError> {
        let body: Vec<serde_json::Value> = values
            .iter()
            .map(|v| serde_json::json!({ "data": v, "ttl": self.ttl }))
            .collect();
        let body = serde_json::Value::Array(body);
        let reply = self
            .api
            .json(action, Method::PUT, url, &self.auth, Some(&body))
            .await?;
        self.api.success(action, reply).map(drop)
    }

    async fn present(&self, fqdn: &str, value: &str) -> Result<(), DnsError> {
        let (domain, url) = self.records_url(fqdn).await?;
        let action = format!("adding the TXT record `{fqdn}` to domain `{domain}`");
        match api::with_value(&self.values(&action, &url).await?, value) {
            Some(all) => self.put(&action, &url, &all).await,
            None => Ok(()),
        }
    }

    async fn cleanup(&self, fqdn: &str, value: &str) -> Result<(), DnsError> {
        let (domain, url) = self.records_url(fqdn).await?;
        let action = format!("removing the TXT record `{fqdn}` from domain `{domain}`");
        match api::without_value(&self.values(&action, &url).await?, value) {
            None => Ok(()),
            Some(rest) if rest.is_empty() => {
                self.api.delete_each(&action, vec![url], &self.auth).await
            }
            Some(rest) => self.put(&action, &url, &rest).await,
        }
    }
}

api::dns_provider!(GoDaddy, "godaddy");
