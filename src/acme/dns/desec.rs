//! The `desec` provider, through deSEC's REST API (v1) and the variables
//! Traefik's DNS library documents for it: `DESEC_TOKEN` (a token allowed
//! to write the domain's records), `DESEC_TTL` (default 3600, deSEC's
//! usual minimum, which is also gangway's floor), `DESEC_HTTP_TIMEOUT`;
//! `DESEC_API_URL` (gangway's own, default `https://desec.io/api/v1`)
//! points it elsewhere.
//!
//! The domain is the one deSEC says owns the record's name
//! (`owns_qname`). deSEC holds one record set per name and type: a second
//! value (a wildcard and its apex) is added to the set with `PATCH`, and
//! cleanup writes the set back without its value (an empty set deletes
//! it).

use super::api::{self, Api, ApiProblem};
use super::{DnsError, Env};
use http::{HeaderName, HeaderValue, Method, StatusCode};

/// Where the API is, unless `DESEC_API_URL` says otherwise.
const BASE_URL: &str = "https://desec.io/api/v1";
/// deSEC's smallest TTL for a domain (its `minimum_ttl` unless deSEC
/// lowered it for the account).
const MIN_TTL: u64 = 3600;

/// The `desec` provider.
pub(super) struct Desec {
    api: Api,
    base: String,
    /// The token; a secret.
    auth: Vec<(HeaderName, HeaderValue)>,
    ttl: u64,
}

#[derive(serde::Deserialize)]
struct Domain {
    name: String,
}

#[derive(serde::Deserialize)]
struct RecordSet {
    #[serde(default)]
    records: Vec<String>,
}

/// deSEC's `detail`, or its field errors (`ttl: Ensure this value …`).
pub(super) fn message(body: &[u8]) -> Option<String> {
    let json: serde_json::Value = serde_json::from_slice(body).ok()?;
    if let Some(detail) = json["detail"].as_str() {
        return Some(detail.to_owned());
    }
    // A bulk request answers a list of such objects; gangway sends one.
    let fields = json.as_object().or_else(|| json[0].as_object())?;
    let text = fields
        .iter()
        .map(|(field, problems)| {
            let problems: Vec<&str> = match problems {
                serde_json::Value::Array(list) => list.iter().filter_map(|p| p.as_str()).collect(),
                other => other.as_str().into_iter().collect(),
            };
            format!("{field}: {}", problems.join(" "))
        })
        .collect::<Vec<_>>()
        .join("; ");
    (!text.is_empty()).then_some(text)
}

impl Desec {
    /// Reads the token and settings; fails naming what is missing.
    pub(super) fn from_env(mut env: Env<'_>) -> Result<Self, DnsError> {
        let token = env.required("DESEC_TOKEN")?;
        let ttl = api::ttl(&env, "DESEC_TTL", MIN_TTL, MIN_TTL)?;
        let base = api::base_url(&env, "DESEC_API_URL", BASE_URL)?;
        let api = Api::new(&env, "desec", "DESEC", message)?;
        env.finish()?;
        Ok(Desec {
            api,
            base,
            auth: api::authorization("Token", &token, "DESEC_TOKEN")?,
            ttl,
        })
    }

    /// The account's domain owning `fqdn`, and the set's URL.
    async fn set_url(&self, action: &str, fqdn: &str) -> Result<(String, String), DnsError> {
        let name = fqdn.trim_end_matches('.');
        let url = format!("{}/domains/?owns_qname={name}", self.base);
        let reply = self
            .api
            .json(action, Method::GET, &url, &self.auth, None)
            .await?;
        let reply = self.api.success(action, reply)?;
        let domains: Vec<Domain> = reply.json().map_err(|p| self.api.error(action, p))?;
        let Some(domain) = domains.into_iter().next() else {
            return Err(self.api.error(
                action,
                ApiProblem::NoZone {
                    tried: vec![name.to_owned()],
                },
            ));
        };
        let sub = api::relative(fqdn, &domain.name);
        let sub = if sub.is_empty() { "@".to_owned() } else { sub };
        let url = format!("{}/domains/{}/rrsets/{sub}/TXT/", self.base, domain.name);
        Ok((domain.name, url))
    }

    /// The set's values, quoted as deSEC writes them; None when no set.
    async fn current(&self, action: &str, url: &str) -> Result<Option<Vec<String>>, DnsError> {
        let reply = self
            .api
            .json(action, Method::GET, url, &self.auth, None)
            .await?;
        if reply.status == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        let set: RecordSet = reply.json().map_err(|p| self.api.error(action, p))?;
        Ok(Some(set.records))
    }

    async fn patch(&self, action: &str, url: &str, records: &[String]) -> Result<(), DnsError> {
        let body = serde_json::json!({ "records": records });
        let reply = self
            .api
            .json(action, Method::PATCH, url, &self.auth, Some(&body))
            .await?;
        self.api.success(action, reply).map(drop)
    }

    async fn present(&self, fqdn: &str, value: &str) -> Result<(), DnsError> {
        let action = format!("adding the TXT record `{fqdn}`");
        let (domain, url) = self.set_url(&action, fqdn).await?;
        let action = format!("{action} to domain `{domain}`");
        let quoted = format!("\"{value}\"");
        match self.current(&action, &url).await? {
            Some(records) if records.contains(&quoted) => Ok(()),
            Some(mut records) => {
                records.push(quoted);
                self.patch(&action, &url, &records).await
            }
            None => {
                let body = serde_json::json!({
                    "subname": api::relative(fqdn, &domain),
                    "type": "TXT",
                    "ttl": self.ttl,
                    "records": [quoted],
                });
                let create = format!("{}/domains/{domain}/rrsets/", self.base);
                let reply = self
                    .api
                    .json(&action, Method::POST, &create, &self.auth, Some(&body))
                    .await?;
                self.api.success(&action, reply).map(drop)
            }
        }
    }

    async fn cleanup(&self, fqdn: &str, value: &str) -> Result<(), DnsError> {
        let action = format!("removing the TXT record `{fqdn}`");
        let (domain, url) = self.set_url(&action, fqdn).await?;
        let action = format!("{action} from domain `{domain}`");
        let quoted = format!("\"{value}\"");
        let Some(records) = self.current(&action, &url).await? else {
            return Ok(());
        };
        if !records.contains(&quoted) {
            return Ok(());
        }
        let rest: Vec<String> = records.into_iter().filter(|r| *r != quoted).collect();
        self.patch(&action, &url, &rest).await
    }
}

api::dns_provider!(Desec, "desec");
