//! The `porkbun` provider, through Porkbun's JSON API (v3) and the
//! variables Traefik's DNS library documents for it: `PORKBUN_API_KEY`
//! and `PORKBUN_SECRET_API_KEY` (both required), `PORKBUN_TTL` (default
//! and minimum 300), `PORKBUN_HTTP_TIMEOUT`; `PORKBUN_API_URL` (gangway's
//! own, default `https://api.porkbun.com/api/json/v3`) points it
//! elsewhere.
//!
//! Every call is a `POST` whose JSON body carries both keys. The domain is
//! the longest of the account's domains (`/domain/listAll`) the record's
//! name ends with; each value is its own record, and cleanup deletes only
//! the records holding its value.

use super::api::{self, Api, ApiProblem};
use super::{DnsError, Env};
use http::Method;

/// Where the API is, unless `PORKBUN_API_URL` says otherwise.
const BASE_URL: &str = "https://api.porkbun.com/api/json/v3";
/// Porkbun's smallest TTL.
const MIN_TTL: u64 = 300;
/// Domains in one page of `/domain/listAll`.
const PAGE: usize = 1000;

/// The `porkbun` provider.
pub(super) struct Porkbun {
    api: Api,
    base: String,
    /// The API key; a secret, sent in each body.
    api_key: String,
    /// The secret API key; a secret, sent in each body.
    secret_key: String,
    ttl: u64,
}

#[derive(serde::Deserialize)]
struct Answer {
    #[serde(default)]
    status: String,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    domains: Vec<Domain>,
    #[serde(default)]
    records: Vec<Record>,
}

#[derive(serde::Deserialize)]
struct Domain {
    domain: String,
}

#[derive(serde::Deserialize)]
struct Record {
    /// A string in Porkbun's answers; a number is read too.
    id: serde_json::Value,
    #[serde(default)]
    content: String,
}

/// The `message` of an answer whose `status` is `ERROR`.
fn message(body: &[u8]) -> Option<String> {
    let json: serde_json::Value = serde_json::from_slice(body).ok()?;
    json["message"].as_str().map(str::to_owned)
}

impl Porkbun {
    /// Reads the keys and settings; fails naming what is missing.
    pub(super) fn from_env(mut env: Env<'_>) -> Result<Self, DnsError> {
        let api_key = env.required("PORKBUN_API_KEY")?;
        let secret_key = env.required("PORKBUN_SECRET_API_KEY")?;
        let ttl = api::ttl(&env, "PORKBUN_TTL", MIN_TTL, MIN_TTL)?;
        let base = api::base_url(&env, "PORKBUN_API_URL", BASE_URL)?;
        let api = Api::new(&env, "porkbun", "PORKBUN", message)?;
        env.finish()?;
        Ok(Porkbun {
            api,
            base,
            api_key,
            secret_key,
            ttl,
        })
    }

    /// POSTs `fields` with the keys to `path`; the answer when its
    /// `status` is `SUCCESS`.
    async fn call(
        &self,
        action: &str,
        path: &str,
        fields: serde_json::Value,
    ) -> Result<Answer, DnsError> {
        let mut body = fields;
        body["apikey"] = self.api_key.clone().into();
        body["secretapikey"] = self.secret_key.clone().into();
        let url = format!("{}{path}", self.base);
        let reply = self
            .api
            .json(action, Method::POST, &url, &[], Some(&body))
            .await?;
        let reply = self.api.success(action, reply)?;
        let answer: Answer = reply.json().map_err(|p| self.api.error(action, p))?;
        if answer.status != "SUCCESS" {
            let message = answer
                .message
                .unwrap_or_else(|| format!("status `{}`", answer.status));
            return Err(self.api.error(action, ApiProblem::Refused { message }));
        }
        Ok(answer)
    }

    /// The account's domain holding `fqdn`.
    async fn domain(&self, fqdn: &str) -> Result<String, DnsError> {
        let action = format!("finding the domain of `{fqdn}`");
        let tried = api::zone_candidates(fqdn);
        let mut start = 0;
        loop {
            let page = self
                .call(
                    &action,
                    "/domain/listAll",
                    serde_json::json!({ "start": start.to_string() }),
                )
                .await?;
            // Candidates are longest first: the first listed one wins.
            if let Some(found) = tried.iter().find(|name| {
                page.domains
                    .iter()
                    .any(|d| d.domain.eq_ignore_ascii_case(name))
            }) {
                return Ok(found.clone());
            }
            if page.domains.len() < PAGE {
                return Err(self.api.error(&action, ApiProblem::NoZone { tried }));
            }
            start += PAGE;
        }
    }

    async fn present(&self, fqdn: &str, value: &str) -> Result<(), DnsError> {
        let domain = self.domain(fqdn).await?;
        let action = format!("adding the TXT record `{fqdn}` to domain `{domain}`");
        let fields = serde_json::json!({
            "name": api::relative(fqdn, &domain),
            "type": "TXT",
            "content": value,
            "ttl": self.ttl.to_string(),
        });
        self.call(&action, &format!("/dns/create/{domain}"), fields)
            .await
            .map(drop)
    }

    async fn cleanup(&self, fqdn: &str, value: &str) -> Result<(), DnsError> {
        let domain = self.domain(fqdn).await?;
        let action = format!("removing the TXT record `{fqdn}` from domain `{domain}`");
        let sub = api::relative(fqdn, &domain);
        let records = self
            .call(
                &action,
                &format!("/dns/retrieveByNameType/{domain}/TXT/{sub}"),
                serde_json::json!({}),
            )
            .await?
            .records;
        for record in records
            .iter()
            .filter(|r| r.content.trim_matches('"') == value)
        {
            let id = match &record.id {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            self.call(
                &action,
                &format!("/dns/delete/{domain}/{id}"),
                serde_json::json!({}),
            )
            .await?;
        }
        Ok(())
    }
}

api::dns_provider!(Porkbun, "porkbun");
