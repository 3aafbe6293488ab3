//! The `ionos` provider, through IONOS's DNS API (v1) and the variables
//! Traefik's DNS library documents for it: `IONOS_API_KEY` (the
//! `prefix.secret` pair IONOS's developer portal gives), `IONOS_TTL`
//! (default and minimum 300), `IONOS_HTTP_TIMEOUT`; `IONOS_API_URL`
//! (gangway's own, default `https://api.hosting.ionos.com/dns`) points it
//! elsewhere.
//!
//! The zone is the longest of the account's zones (`GET /v1/zones`) the
//! record's name ends with. Each value is its own record: present creates
//! one, cleanup lists the zone's TXT records at the name and deletes the
//! one holding the value.

use super::api::{self, Api, ApiProblem};
use super::{DnsError, Env};
use http::{HeaderName, HeaderValue, Method};

/// Where the API is, unless `IONOS_API_URL` says otherwise.
const BASE_URL: &str = "https://api.hosting.ionos.com/dns";
/// IONOS's smallest TTL, and the default.
const MIN_TTL: u64 = 300;

/// The `ionos` provider.
pub(super) struct Ionos {
    api: Api,
    base: String,
    /// The key; a secret.
    auth: Vec<(HeaderName, HeaderValue)>,
    ttl: u64,
}

#[derive(serde::Deserialize)]
struct Zone {
    id: String,
    name: String,
}

#[derive(serde::Deserialize)]
struct ZoneRecords {
    #[serde(default)]
    records: Vec<Record>,
}

#[derive(serde::Deserialize)]
struct Record {
    id: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    content: String,
}

/// IONOS's `[{"code", "message"}]` as `message (code)`, joined.
fn message(body: &[u8]) -> Option<String> {
    let json: serde_json::Value = serde_json::from_slice(body).ok()?;
    let list = json.as_array()?;
    let parts: Vec<String> = list
        .iter()
        .filter_map(|e| {
            let message = e["message"].as_str()?;
            Some(match e["code"].as_str() {
                Some(code) => format!("{message} ({code})"),
                None => message.to_owned(),
            })
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join("; "))
}

impl Ionos {
    /// Reads the key and settings; fails naming what is missing.
    pub(super) fn from_env(mut env: Env<'_>) -> Result<Self, DnsError> {
        let key = env.required("IONOS_API_KEY")?;
        let ttl = api::ttl(&env, "IONOS_TTL", MIN_TTL, MIN_TTL)?;
        let base = api::base_url(&env, "IONOS_API_URL", BASE_URL)?;
        let api = Api::new(&env, "ionos", "IONOS", message)?;
        env.finish()?;
        Ok(Ionos {
            api,
            base,
            auth: vec![(
                HeaderName::from_static("x-api-key"),
                api::secret_header(&key, "IONOS_API_KEY")?,
            )],
            ttl,
        })
    }

    /// The account's zone holding `fqdn`: its id and name.
    async fn zone(&self, fqdn: &str) -> Result<(String, String), DnsError> {
        let action = format!("finding the zone of `{fqdn}`");
        let url = format!("{}/v1/zones", self.base);
        let reply = self
            .api
            .json(&action, Method::GET, &url, &self.auth, None)
            .await?;
        let reply = self.api.success(&action, reply)?;
        let zones: Vec<Zone> = reply.json().map_err(|p| self.api.error(&action, p))?;
        let tried = api::zone_candidates(fqdn);
        tried
            .iter()
            .find_map(|name| zones.iter().find(|z| z.name.eq_ignore_ascii_case(name)))
            .map(|z| (z.id.clone(), z.name.clone()))
            .ok_or_else(|| self.api.error(&action, ApiProblem::NoZone { tried }))
    }

    async fn present(&self, fqdn: &str, value: &str) -> Result<(), DnsError> {
        let (id, zone) = self.zone(fqdn).await?;
        let action = format!("adding the TXT record `{fqdn}` to zone `{zone}`");
        let body = serde_json::json!([{
            "name": fqdn.trim_end_matches('.'),
            "type": "TXT",
            "content": value,
            "ttl": self.ttl,
            "prio": 0,
            "disabled": false,
        }]);
        let url = format!("{}/v1/zones/{id}/records", self.base);
        let reply = self
            .api
            .json(&action, Method::POST, &url, &self.auth, Some(&body))
            .await?;
        self.api.success(&action, reply).map(drop)
    }

    async fn cleanup(&self, fqdn: &str, value: &str) -> Result<(), DnsError> {
        let (id, zone) = self.zone(fqdn).await?;
        let action = format!("removing the TXT record `{fqdn}` from zone `{zone}`");
        let name = fqdn.trim_end_matches('.');
        let url = format!(
            "{}/v1/zones/{id}?recordName={name}&recordType=TXT",
            self.base
        );
        let reply = self
            .api
            .json(&action, Method::GET, &url, &self.auth, None)
            .await?;
        let reply = self.api.success(&action, reply)?;
        let found: ZoneRecords = reply.json().map_err(|p| self.api.error(&action, p))?;
        let urls = found
            .records
            .iter()
            .filter(|r| r.name.eq_ignore_ascii_case(name) && r.content.trim_matches('"') == value)
            .map(|r| format!("{}/v1/zones/{id}/records/{}", self.base, r.id))
            .collect();
        self.api.delete_each(&action, urls, &self.auth).await
    }
}

api::dns_provider!(Ionos, "ionos");
