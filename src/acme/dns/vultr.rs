//! The `vultr` provider, through Vultr's API v2 and the variables
//! Traefik's DNS library documents for it: `VULTR_API_KEY` (required),
//! `VULTR_TTL` (default 120), `VULTR_HTTP_TIMEOUT`; `VULTR_API_URL`
//! (gangway's own, default `https://api.vultr.com/v2`) points it
//! elsewhere.
//!
//! The domain is the longest of the account's domains the record's name
//! ends with. Each value is its own record (its data quoted, as Vultr
//! wants TXT data); cleanup deletes only the records holding its value.

use super::api::{self, Api, ApiProblem};
use super::{DnsError, Env};
use http::{HeaderName, HeaderValue, Method};

/// Where the API is, unless `VULTR_API_URL` says otherwise.
const BASE_URL: &str = "https://api.vultr.com/v2";
/// The TTL unless `VULTR_TTL` says otherwise.
const DEFAULT_TTL: u64 = 120;
/// Vultr's largest page.
const PER_PAGE: u32 = 500;

/// The `vultr` provider.
pub(super) struct Vultr {
    api: Api,
    base: String,
    /// The API key; a secret.
    auth: Vec<(HeaderName, HeaderValue)>,
    ttl: u64,
}

/// One page of a listing: its items (`domains` or `records`) and the
/// cursor of the next page.
#[derive(serde::Deserialize)]
struct Page<T> {
    #[serde(alias = "domains", alias = "records", default = "Vec::new")]
    items: Vec<T>,
    #[serde(default)]
    meta: Meta,
}

#[derive(serde::Deserialize, Default)]
struct Meta {
    #[serde(default)]
    links: Links,
}

#[derive(serde::Deserialize, Default)]
struct Links {
    #[serde(default)]
    next: String,
}

#[derive(serde::Deserialize)]
struct Domain {
    domain: String,
}

#[derive(serde::Deserialize)]
struct Record {
    id: String,
    #[serde(default, rename = "type")]
    kind: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    data: String,
}

/// Vultr's `{"error": …, "status": …}`.
pub(super) fn message(body: &[u8]) -> Option<String> {
    let json: serde_json::Value = serde_json::from_slice(body).ok()?;
    json["error"].as_str().map(str::to_owned)
}

impl Vultr {
    /// Reads the key and settings; fails naming what is missing.
    pub(super) fn from_env(mut env: Env<'_>) -> Result<Self, DnsError> {
        let key = env.required("VULTR_API_KEY")?;
        let ttl = api::ttl(&env, "VULTR_TTL", DEFAULT_TTL, 1)?;
        let base = api::base_url(&env, "VULTR_API_URL", BASE_URL)?;
        let api = Api::new(&env, "vultr", "VULTR", message)?;
        env.finish()?;
        Ok(Vultr {
            api,
            base,
            auth: api::authorization("Bearer", &key, "VULTR_API_KEY")?,
            ttl,
        })
    }

    /// Every item of the listing at `url`, page after page by cursor.
    async fn all<T: serde::de::DeserializeOwned>(
        &self,
        action: &str,
        url: &str,
    ) -> Result<Vec<T>, DnsError> {
        let mut items = Vec::new();
        let mut cursor = String::new();
        loop {
            let page_url = if cursor.is_empty() {
                format!("{url}?per_page={PER_PAGE}")
            } else {
                format!("{url}?per_page={PER_PAGE}&cursor={cursor}")
            };
            let reply = self
                .api
                .json(action, Method::GET, &page_url, &self.auth, None)
                .await?;
            let reply = self.api.success(action, reply)?;
            let page: Page<T> = reply.json().map_err(|p| self.api.error(action, p))?;
            items.extend(page.items);
            if page.meta.links.next.is_empty() {
                return Ok(items);
            }
            cursor = page.meta.links.next;
        }
    }

    /// The account's domain holding `fqdn`.
    async fn domain(&self, fqdn: &str) -> Result<String, DnsError> {
        let action = format!("finding the domain of `{fqdn}`");
        let tried = api::zone_candidates(fqdn);
        let held: Vec<Domain> = self.all(&action, &format!("{}/domains", self.base)).await?;
        // Candidates are longest first: the first held one wins.
        tried
            .iter()
            .find(|name| held.iter().any(|d| d.domain.eq_ignore_ascii_case(name)))
            .cloned()
            .ok_or_else(|| self.api.error(&action, ApiProblem::NoZone { tried }))
    }

    async fn present(&self, fqdn: &str, value: &str) -> Result<(), DnsError> {
        let domain = self.domain(fqdn).await?;
        let action = format!("adding the TXT record `{fqdn}` to domain `{domain}`");
        let url = format!("{}/domains/{domain}/records", self.base);
        let body = serde_json::json!({
            "name": api::relative(fqdn, &domain),
            "type": "TXT",
            "data": format!("\"{value}\""),
            "ttl": self.ttl,
            "priority": 0,
        });
        let reply = self
            .api
            .json(&action, Method::POST, &url, &self.auth, Some(&body))
            .await?;
        self.api.success(&action, reply).map(drop)
    }

    async fn cleanup(&self, fqdn: &str, value: &str) -> Result<(), DnsError> {
        let domain = self.domain(fqdn).await?;
        let action = format!("removing the TXT record `{fqdn}` from domain `{domain}`");
        let name = api::relative(fqdn, &domain);
        let records: Vec<Record> = self
            .all(&action, &format!("{}/domains/{domain}/records", self.base))
            .await?;
        let urls: Vec<String> = records
            .iter()
            .filter(|r| r.kind == "TXT" && r.name == name && r.data.trim_matches('"') == value)
            .map(|r| format!("{}/domains/{domain}/records/{}", self.base, r.id))
            .collect();
        self.api.delete_each(&action, urls, &self.auth).await
    }
}

api::dns_provider!(Vultr, "vultr");
