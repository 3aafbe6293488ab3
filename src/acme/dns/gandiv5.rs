//! The `gandiv5` provider, through Gandi's LiveDNS API (v5) and the
//! variables Traefik's DNS library documents for it:
//! `GANDIV5_PERSONAL_ACCESS_TOKEN` (or the deprecated `GANDIV5_API_KEY`),
//! `GANDIV5_TTL` (default and minimum 300) and `GANDIV5_HTTP_TIMEOUT`;
//! `GANDIV5_API_URL` (gangway's own, default `https://api.gandi.net/v5/livedns`)
//! points it elsewhere.
//!
//! LiveDNS holds one record set per name and type: a second value at a
//! name (a wildcard and its apex) is added to the set with `PUT`, and
//! cleanup writes the set back without its value, or deletes it when it
//! was the last.

use super::api::{self, Api, ApiProblem, Call};
use super::{DnsError, Env};
use http::{HeaderName, HeaderValue, Method, StatusCode};

/// Where the API is, unless `GANDIV5_API_URL` says otherwise.
const BASE_URL: &str = "https://api.gandi.net/v5/livedns";
/// Gandi's smallest TTL.
const MIN_TTL: u64 = 300;

/// The `gandiv5` provider.
pub(super) struct GandiV5 {
    api: Api,
    base: String,
    /// The token or key; a secret.
    auth: Vec<(HeaderName, HeaderValue)>,
    ttl: u64,
}

#[derive(serde::Deserialize)]
struct RecordSet {
    #[serde(default)]
    rrset_ttl: Option<u64>,
    #[serde(default)]
    rrset_values: Vec<String>,
}

/// `message (cause)` of an error answer.
fn message(body: &[u8]) -> Option<String> {
    let json: serde_json::Value = serde_json::from_slice(body).ok()?;
    let message = json["message"].as_str()?;
    Some(match json["cause"].as_str() {
        Some(cause) => format!("{message} ({cause})"),
        None => message.to_owned(),
    })
}

impl GandiV5 {
    /// Reads the token and settings; fails naming what is missing.
    pub(super) fn from_env(env: Env<'_>) -> Result<Self, DnsError> {
        let auth = match (
            env.optional("GANDIV5_PERSONAL_ACCESS_TOKEN")?,
            env.optional("GANDIV5_API_KEY")?,
        ) {
            (Some(token), _) => {
                api::secret_header(&format!("Bearer {token}"), "GANDIV5_PERSONAL_ACCESS_TOKEN")?
            }
            (None, Some(key)) => api::secret_header(&format!("Apikey {key}"), "GANDIV5_API_KEY")?,
            (None, None) => {
                return Err(env.no_credentials(
                    "GANDIV5_PERSONAL_ACCESS_TOKEN (or the deprecated GANDIV5_API_KEY)",
                ));
            }
        };
        let ttl = env
            .seconds("GANDIV5_TTL", std::time::Duration::from_secs(MIN_TTL))?
            .as_secs()
            .max(MIN_TTL);
        let base = api::base_url(&env, "GANDIV5_API_URL", BASE_URL)?;
        let api = Api::new(&env, "gandiv5", "GANDIV5", message)?;
        env.finish()?;
        Ok(GandiV5 {
            api,
            base,
            auth: vec![(http::header::AUTHORIZATION, auth)],
            ttl,
        })
    }

    async fn call(
        &self,
        action: &str,
        method: Method,
        url: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<api::Reply, DnsError> {
        self.api
            .send(&Call {
                action,
                method,
                url,
                headers: &self.auth,
                body,
                text: None,
            })
            .await
    }

    /// The account's domain holding `fqdn`.
    async fn domain(&self, fqdn: &str) -> Result<String, DnsError> {
        let action = format!("finding the domain of `{fqdn}`");
        let tried = api::zone_candidates(fqdn);
        for name in &tried {
            let url = format!("{}/domains/{name}", self.base);
            if self
                .call(&action, Method::GET, &url, None)
                .await?
                .status
                .is_success()
            {
                return Ok(name.clone());
            }
        }
        Err(self.api.error(&action, ApiProblem::NoZone { tried }))
    }

    /// The set's URL, and its values and TTL (none when there is no set).
    async fn current(
        &self,
        action: &str,
        domain: &str,
        fqdn: &str,
    ) -> Result<(String, Vec<String>, Option<u64>), DnsError> {
        let name = api::relative(fqdn, domain);
        let name = if name.is_empty() {
            "@".to_owned()
        } else {
            name
        };
        let url = format!("{}/domains/{domain}/records/{name}/TXT", self.base);
        let reply = self.call(action, Method::GET, &url, None).await?;
        if reply.status == StatusCode::NOT_FOUND {
            return Ok((url, Vec::new(), None));
        }
        let set: RecordSet = reply.json().map_err(|p| self.api.error(action, p))?;
        Ok((url, set.rrset_values, set.rrset_ttl))
    }

    async fn put(
        &self,
        action: &str,
        url: &str,
        ttl: u64,
        values: &[String],
    ) -> Result<(), DnsError> {
        let body = serde_json::json!({ "rrset_ttl": ttl, "rrset_values": values });
        let reply = self.call(action, Method::PUT, url, Some(&body)).await?;
        if reply.status.is_success() {
            Ok(())
        } else {
            Err(self.api.refused(action, &reply))
        }
    }

    async fn present(&self, fqdn: &str, value: &str) -> Result<(), DnsError> {
        let domain = self.domain(fqdn).await?;
        let action = format!("adding the TXT record `{fqdn}` to domain `{domain}`");
        let (url, mut values, _) = self.current(&action, &domain, fqdn).await?;
        if values.iter().any(|v| v.trim_matches('"') == value) {
            return Ok(());
        }
        values.push(value.to_owned());
        self.put(&action, &url, self.ttl, &values).await
    }

    async fn cleanup(&self, fqdn: &str, value: &str) -> Result<(), DnsError> {
        let domain = self.domain(fqdn).await?;
        let action = format!("removing the TXT record `{fqdn}` from domain `{domain}`");
        let (url, values, ttl) = self.current(&action, &domain, fqdn).await?;
        let rest: Vec<String> = values
            .iter()
            .filter(|v| v.trim_matches('"') != value)
            .cloned()
            .collect();
        if rest.len() == values.len() {
            return Ok(());
        }
        if !rest.is_empty() {
            return self
                .put(&action, &url, ttl.unwrap_or(self.ttl), &rest)
                .await;
        }
        let reply = self.call(&action, Method::DELETE, &url, None).await?;
        // A 404 means it is gone already, which is what was wanted.
        if reply.status.is_success() || reply.status == StatusCode::NOT_FOUND {
            Ok(())
        } else {
            Err(self.api.refused(&action, &reply))
        }
    }
}

api::dns_provider!(GandiV5, "gandiv5");
