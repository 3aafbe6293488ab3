//! The `linode` provider, through Linode's (Akamai's) API v4 and the
//! variables Traefik's DNS library documents for it: `LINODE_TOKEN` (a
//! personal access token allowed to write domains), `LINODE_TTL` (default
//! and minimum 300), `LINODE_HTTP_TIMEOUT`; `LINODE_API_URL` (gangway's
//! own, default `https://api.linode.com/v4`) points it elsewhere.
//!
//! The domain is found by asking for each name the record's name ends
//! with (an `X-Filter` on `domain`), longest first. Each value is its own
//! record; cleanup deletes only the records holding its value.

use super::api::{self, Api, ApiProblem};
use super::{DnsError, Env};
use http::{HeaderName, HeaderValue, Method};

/// Where the API is, unless `LINODE_API_URL` says otherwise.
const BASE_URL: &str = "https://api.linode.com/v4";
/// The smallest TTL Linode keeps (it rounds others to its own steps).
const MIN_TTL: u64 = 300;
/// Linode's largest page.
const PAGE_SIZE: u32 = 500;

/// The `linode` provider.
pub(super) struct Linode {
    api: Api,
    base: String,
    /// The token; a secret.
    auth: Vec<(HeaderName, HeaderValue)>,
    ttl: u64,
}

#[derive(serde::Deserialize)]
struct Page<T> {
    #[serde(default = "Vec::new")]
    data: Vec<T>,
    #[serde(default)]
    pages: u32,
}

#[derive(serde::Deserialize)]
struct Domain {
    id: u64,
    domain: String,
}

#[derive(serde::Deserialize)]
struct Record {
    id: u64,
    #[serde(default, rename = "type")]
    kind: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    target: String,
}

/// Linode's `errors: [{field, reason}]` as one sentence.
pub(super) fn message(body: &[u8]) -> Option<String> {
    let json: serde_json::Value = serde_json::from_slice(body).ok()?;
    let text = json["errors"]
        .as_array()?
        .iter()
        .filter_map(|e| {
            let reason = e["reason"].as_str()?;
            Some(match e["field"].as_str() {
                Some(field) => format!("{field}: {reason}"),
                None => reason.to_owned(),
            })
        })
        .collect::<Vec<_>>()
        .join("; ");
    (!text.is_empty()).then_some(text)
}

impl Linode {
    /// Reads the token and settings; fails naming what is missing.
    pub(super) fn from_env(mut env: Env<'_>) -> Result<Self, DnsError> {
        let token = env.required("LINODE_TOKEN")?;
        let ttl = api::ttl(&env, "LINODE_TTL", MIN_TTL, MIN_TTL)?;
        let base = api::base_url(&env, "LINODE_API_URL", BASE_URL)?;
        let api = Api::new(&env, "linode", "LINODE", message)?;
        env.finish()?;
        Ok(Linode {
            api,
            base,
            auth: api::authorization("Bearer", &token, "LINODE_TOKEN")?,
            ttl,
        })
    }

    /// The authentication headers plus an `X-Filter` of `filter`.
    fn filtered(&self, filter: &serde_json::Value) -> Vec<(HeaderName, HeaderValue)> {
        let mut headers = self.auth.clone();
        if let Ok(value) = HeaderValue::try_from(filter.to_string()) {
            headers.push((HeaderName::from_static("x-filter"), value));
        }
        headers
    }

    /// The id and name of the account's domain holding `fqdn`.
    async fn domain(&self, fqdn: &str) -> Result<(u64, String), DnsError> {
        let action = format!("finding the domain of `{fqdn}`");
        let tried = api::zone_candidates(fqdn);
        let url = format!("{}/domains", self.base);
        for name in &tried {
            let headers = self.filtered(&serde_json::json!({ "domain": name }));
            let reply = self
                .api
                .json(&action, Method::GET, &url, &headers, None)
                .await?;
            let reply = self.api.success(&action, reply)?;
            let page: Page<Domain> = reply.json().map_err(|p| self.api.error(&action, p))?;
            if let Some(d) = page
                .data
                .into_iter()
                .find(|d| d.domain.eq_ignore_ascii_case(name))
            {
                return Ok((d.id, d.domain));
            }
        }
        Err(self.api.error(&action, ApiProblem::NoZone { tried }))
    }

    async fn present(&self, fqdn: &str, value: &str) -> Result<(), DnsError> {
        let (id, domain) = self.domain(fqdn).await?;
        let action = format!("adding the TXT record `{fqdn}` to domain `{domain}`");
        let url = format!("{}/domains/{id}/records", self.base);
        let body = serde_json::json!({
            "type": "TXT",
            "name": api::relative(fqdn, &domain),
            "target": value,
            "ttl_sec": self.ttl,
        });
        let reply = self
            .api
            .json(&action, Method::POST, &url, &self.auth, Some(&body))
            .await?;
        self.api.success(&action, reply).map(drop)
    }

    async fn cleanup(&self, fqdn: &str, value: &str) -> Result<(), DnsError> {
        let (id, domain) = self.domain(fqdn).await?;
        let action = format!("removing the TXT record `{fqdn}` from domain `{domain}`");
        let name = api::relative(fqdn, &domain);
        let headers = self.filtered(&serde_json::json!({ "type": "TXT" }));
        let mut page = 1;
        let mut ours = Vec::new();
        loop {
            let url = format!(
                "{}/domains/{id}/records?page={page}&page_size={PAGE_SIZE}",
                self.base
            );
            let reply = self
                .api
                .json(&action, Method::GET, &url, &headers, None)
                .await?;
            let reply = self.api.success(&action, reply)?;
            let records: Page<Record> = reply.json().map_err(|p| self.api.error(&action, p))?;
            ours.extend(
                records
                    .data
                    .iter()
                    .filter(|r| r.kind == "TXT" && r.name == name && r.target == value)
                    .map(|r| r.id),
            );
            if page >= records.pages {
                break;
            }
            page += 1;
        }
        let urls: Vec<String> = ours
            .iter()
            .map(|record| format!("{}/domains/{id}/records/{record}", self.base))
            .collect();
        self.api.delete_each(&action, urls, &self.auth).await
    }
}

api::dns_provider!(Linode, "linode");
