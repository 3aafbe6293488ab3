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
use super::{DnsError, DnsProvider, Env};
use futures_util::future::BoxFuture;
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
struct Domains {
    #[serde(default)]
    domains: Vec<Domain>,
    #[serde(default)]
    meta: Meta,
}

#[derive(serde::Deserialize)]
struct Domain {
    domain: String,
}

#[derive(serde::Deserialize)]
struct Records {
    #[serde(default)]
    records: Vec<Record>,
    #[serde(default)]
    meta: Meta,
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

    /// `url` of a listing with its page size and, after the first page,
    /// Vultr's cursor.
    fn page(url: &str, cursor: &str) -> String {
        if cursor.is_empty() {
            format!("{url}?per_page={PER_PAGE}")
        } else {
            format!("{url}?per_page={PER_PAGE}&cursor={cursor}")
        }
    }

    /// The account's domain holding `fqdn`.
    async fn domain(&self, fqdn: &str) -> Result<String, DnsError> {
        let action = format!("finding the domain of `{fqdn}`");
        let tried = api::zone_candidates(fqdn);
        let url = format!("{}/domains", self.base);
        let mut cursor = String::new();
        let mut held = Vec::new();
        loop {
            let reply = self
                .api
                .json(
                    &action,
                    Method::GET,
                    &Self::page(&url, &cursor),
                    &self.auth,
                    None,
                )
                .await?;
            let reply = self.api.success(&action, reply)?;
            let page: Domains = reply.json().map_err(|p| self.api.error(&action, p))?;
            held.extend(page.domains.into_iter().map(|d| d.domain));
            if page.meta.links.next.is_empty() {
                break;
            }
            cursor = page.meta.links.next;
        }
        // Candidates are longest first: the first held one wins.
        tried
            .iter()
            .find(|name| held.iter().any(|d| d.eq_ignore_ascii_case(name)))
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
        let url = format!("{}/domains/{domain}/records", self.base);
        let mut cursor = String::new();
        let mut ours = Vec::new();
        loop {
            let reply = self
                .api
                .json(
                    &action,
                    Method::GET,
                    &Self::page(&url, &cursor),
                    &self.auth,
                    None,
                )
                .await?;
            let reply = self.api.success(&action, reply)?;
            let page: Records = reply.json().map_err(|p| self.api.error(&action, p))?;
            ours.extend(
                page.records
                    .into_iter()
                    .filter(|r| {
                        r.kind == "TXT" && r.name == name && r.data.trim_matches('"') == value
                    })
                    .map(|r| r.id),
            );
            if page.meta.links.next.is_empty() {
                break;
            }
            cursor = page.meta.links.next;
        }
        for id in ours {
            let url = format!("{}/domains/{domain}/records/{id}", self.base);
            // A 404 means it is gone already, which is what was wanted.
            self.api
                .json(&action, Method::DELETE, &url, &self.auth, None)
                .await?;
        }
        Ok(())
    }
}

impl DnsProvider for Vultr {
    fn name(&self) -> &'static str {
        "vultr"
    }

    fn present<'a>(&'a self, fqdn: &'a str, value: &'a str) -> BoxFuture<'a, Result<(), DnsError>> {
        Box::pin(Vultr::present(self, fqdn, value))
    }

    fn cleanup<'a>(&'a self, fqdn: &'a str, value: &'a str) -> BoxFuture<'a, Result<(), DnsError>> {
        Box::pin(Vultr::cleanup(self, fqdn, value))
    }
}
