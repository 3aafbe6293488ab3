//! The `digitalocean` provider, through DigitalOcean's API v2 and the
//! variables Traefik's DNS library documents for it: `DO_AUTH_TOKEN` (a
//! personal access token with write scope), `DO_TTL` (default and minimum
//! 30 s), `DO_HTTP_TIMEOUT` and `DO_API_URL` (default
//! `https://api.digitalocean.com`).
//!
//! The domain is found by asking for each name the record's name ends
//! with, longest first. Each value is its own record; cleanup deletes only
//! the record holding its value.

use super::api::{self, Api, ApiProblem, Call};
use super::{DnsError, Env};
use http::{HeaderName, HeaderValue, Method, StatusCode};

/// Where the API is, unless `DO_API_URL` says otherwise.
const BASE_URL: &str = "https://api.digitalocean.com";
/// DigitalOcean's smallest TTL.
const MIN_TTL: u64 = 30;

/// The `digitalocean` provider.
pub(super) struct DigitalOcean {
    api: Api,
    base: String,
    /// The bearer token; a secret.
    auth: Vec<(HeaderName, HeaderValue)>,
    ttl: u64,
}

#[derive(serde::Deserialize)]
struct Records {
    #[serde(default)]
    domain_records: Vec<Record>,
}

#[derive(serde::Deserialize)]
struct Record {
    id: u64,
    #[serde(default)]
    data: String,
}

/// The `message` of an error answer (`{"id": …, "message": …}`).
fn message(body: &[u8]) -> Option<String> {
    let json: serde_json::Value = serde_json::from_slice(body).ok()?;
    let message = json["message"].as_str()?;
    Some(match json["id"].as_str() {
        Some(id) => format!("{message} ({id})"),
        None => message.to_owned(),
    })
}

impl DigitalOcean {
    /// Reads the token and settings; fails naming what is missing.
    pub(super) fn from_env(mut env: Env<'_>) -> Result<Self, DnsError> {
        let token = env.required("DO_AUTH_TOKEN")?;
        let ttl = env
            .seconds("DO_TTL", std::time::Duration::from_secs(MIN_TTL))?
            .as_secs()
            .max(MIN_TTL);
        let base = api::base_url(&env, "DO_API_URL", BASE_URL)?;
        let api = Api::new(&env, "digitalocean", "DO", message)?;
        env.finish()?;
        Ok(DigitalOcean {
            api,
            base,
            auth: vec![(
                http::header::AUTHORIZATION,
                api::secret_header(&format!("Bearer {token}"), "DO_AUTH_TOKEN")?,
            )],
            ttl,
        })
    }

    fn call<'a>(
        &'a self,
        action: &'a str,
        method: Method,
        url: &'a str,
        body: Option<&'a serde_json::Value>,
    ) -> Call<'a> {
        Call {
            action,
            method,
            url,
            headers: &self.auth,
            body,
            text: None,
        }
    }

    /// The account's domain holding `fqdn`.
    async fn domain(&self, fqdn: &str) -> Result<String, DnsError> {
        let action = format!("finding the domain of `{fqdn}`");
        let tried = api::zone_candidates(fqdn);
        for name in &tried {
            let url = format!("{}/v2/domains/{name}", self.base);
            let reply = self
                .api
                .send(&self.call(&action, Method::GET, &url, None))
                .await?;
            if reply.status.is_success() {
                return Ok(name.clone());
            }
        }
        Err(self.api.error(&action, ApiProblem::NoZone { tried }))
    }

    async fn present(&self, fqdn: &str, value: &str) -> Result<(), DnsError> {
        let domain = self.domain(fqdn).await?;
        let action = format!("adding the TXT record `{fqdn}` to domain `{domain}`");
        let url = format!("{}/v2/domains/{domain}/records", self.base);
        let body = serde_json::json!({
            "type": "TXT",
            "name": api::relative(fqdn, &domain),
            "data": value,
            "ttl": self.ttl,
        });
        let reply = self
            .api
            .send(&self.call(&action, Method::POST, &url, Some(&body)))
            .await?;
        if reply.status == StatusCode::NOT_FOUND {
            return Err(self.api.refused(&action, &reply));
        }
        Ok(())
    }

    async fn cleanup(&self, fqdn: &str, value: &str) -> Result<(), DnsError> {
        let domain = self.domain(fqdn).await?;
        let action = format!("removing the TXT record `{fqdn}` from domain `{domain}`");
        let name = fqdn.trim_end_matches('.');
        let url = format!(
            "{}/v2/domains/{domain}/records?type=TXT&name={name}&per_page=200",
            self.base
        );
        let reply = self
            .api
            .send(&self.call(&action, Method::GET, &url, None))
            .await?;
        if reply.status == StatusCode::NOT_FOUND {
            return Err(self.api.refused(&action, &reply));
        }
        let records: Records = reply.json().map_err(|p| self.api.error(&action, p))?;
        let urls: Vec<String> = records
            .domain_records
            .iter()
            .filter(|r| r.data == value)
            .map(|r| format!("{}/v2/domains/{domain}/records/{}", self.base, r.id))
            .collect();
        self.api.delete_each(&action, urls, &self.auth).await
    }
}

api::dns_provider!(DigitalOcean, "digitalocean");
