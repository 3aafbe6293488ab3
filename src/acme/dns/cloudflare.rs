//! The `cloudflare` provider, through Cloudflare's API v4 and the
//! variables Traefik's DNS library documents for it:
//!
//! - `CF_DNS_API_TOKEN` (alias `CLOUDFLARE_DNS_API_TOKEN`): an API token
//!   allowed to edit DNS; with `CF_ZONE_API_TOKEN` (alias
//!   `CLOUDFLARE_ZONE_API_TOKEN`), a second token used only to read zones;
//! - or the legacy `CF_API_EMAIL` + `CF_API_KEY` (aliases
//!   `CLOUDFLARE_EMAIL`, `CLOUDFLARE_API_KEY`), the global API key;
//! - `CLOUDFLARE_TTL` (default and minimum 120 s, Cloudflare's smallest
//!   TTL other than "automatic"), `CLOUDFLARE_HTTP_TIMEOUT`,
//!   `CLOUDFLARE_BASE_URL` (default `https://api.cloudflare.com/client/v4`).
//!
//! The zone is found by asking for each name the record's name ends with,
//! longest first. Each value is its own record, so a wildcard and its apex
//! can be validated at once; cleanup deletes only the record holding its
//! value.

use super::api::{self, Api, ApiProblem, Call};
use super::{DnsError, Env};
use http::{HeaderName, HeaderValue, Method};

/// Where the API is, unless `CLOUDFLARE_BASE_URL` says otherwise.
const BASE_URL: &str = "https://api.cloudflare.com/client/v4";
/// Cloudflare's smallest TTL (other than 1, "automatic").
const MIN_TTL: u64 = 120;

/// The `cloudflare` provider.
pub(super) struct Cloudflare {
    api: Api,
    base: String,
    /// Authentication for record changes; secrets.
    dns_auth: Vec<(HeaderName, HeaderValue)>,
    /// Authentication for zone reads (the zone token when split); secrets.
    zone_auth: Vec<(HeaderName, HeaderValue)>,
    ttl: u64,
}

/// Cloudflare's envelope around every answer.
#[derive(serde::Deserialize)]
struct Envelope<T> {
    #[serde(default)]
    success: bool,
    #[serde(default)]
    errors: Vec<Message>,
    result: Option<T>,
}

#[derive(serde::Deserialize)]
struct Message {
    #[serde(default)]
    code: u64,
    #[serde(default)]
    message: String,
}

#[derive(serde::Deserialize)]
struct Zone {
    id: String,
    name: String,
}

#[derive(serde::Deserialize)]
struct Record {
    id: String,
    #[serde(default)]
    content: String,
}

/// The messages of an error answer: `Authentication error (code 10000)`.
fn messages(body: &[u8]) -> Option<String> {
    let envelope: Envelope<serde_json::Value> = serde_json::from_slice(body).ok()?;
    let text = envelope
        .errors
        .iter()
        .map(|m| format!("{} (code {})", m.message.trim(), m.code))
        .collect::<Vec<_>>()
        .join("; ");
    (!text.is_empty()).then_some(text)
}

impl Cloudflare {
    /// Reads the credentials and settings; fails naming what is missing.
    pub(super) fn from_env(mut env: Env<'_>) -> Result<Self, DnsError> {
        let dns_token = env.first_of(&["CF_DNS_API_TOKEN", "CLOUDFLARE_DNS_API_TOKEN"])?;
        let zone_token = env.first_of(&["CF_ZONE_API_TOKEN", "CLOUDFLARE_ZONE_API_TOKEN"])?;
        let email = env.first_of(&["CF_API_EMAIL", "CLOUDFLARE_EMAIL"])?;
        let key = env.first_of(&["CF_API_KEY", "CLOUDFLARE_API_KEY"])?;
        let bearer = |token: &str, variable: &str| {
            Ok::<_, DnsError>(vec![(
                http::header::AUTHORIZATION,
                api::secret_header(&format!("Bearer {token}"), variable)?,
            )])
        };
        let (dns_auth, zone_auth) = match (dns_token, zone_token, email, key) {
            (Some(dns), zone, _, _) => {
                let dns_auth = bearer(&dns, "CF_DNS_API_TOKEN")?;
                let zone_auth = match zone {
                    Some(zone) => bearer(&zone, "CF_ZONE_API_TOKEN")?,
                    None => dns_auth.clone(),
                };
                (dns_auth, zone_auth)
            }
            // A zone token alone cannot change records.
            (None, Some(_), _, _) => {
                env.missing.push("CF_DNS_API_TOKEN".to_owned());
                (Vec::new(), Vec::new())
            }
            (None, None, Some(email), Some(key)) => {
                let auth = vec![
                    (
                        HeaderName::from_static("x-auth-email"),
                        api::secret_header(&email, "CF_API_EMAIL")?,
                    ),
                    (
                        HeaderName::from_static("x-auth-key"),
                        api::secret_header(&key, "CF_API_KEY")?,
                    ),
                ];
                (auth.clone(), auth)
            }
            (None, None, Some(_), None) => {
                env.missing.push("CF_API_KEY".to_owned());
                (Vec::new(), Vec::new())
            }
            (None, None, None, Some(_)) => {
                env.missing.push("CF_API_EMAIL".to_owned());
                (Vec::new(), Vec::new())
            }
            (None, None, None, None) => {
                return Err(env.no_credentials(
                    "CF_DNS_API_TOKEN (with CF_ZONE_API_TOKEN if zones are read with another token), or CF_API_EMAIL and CF_API_KEY",
                ));
            }
        };
        let ttl = env
            .seconds("CLOUDFLARE_TTL", std::time::Duration::from_secs(MIN_TTL))?
            .as_secs()
            .max(MIN_TTL);
        let base = api::base_url(&env, "CLOUDFLARE_BASE_URL", BASE_URL)?;
        let api = Api::new(&env, "cloudflare", "CLOUDFLARE", messages)?;
        env.finish()?;
        Ok(Cloudflare {
            api,
            base,
            dns_auth,
            zone_auth,
            ttl,
        })
    }

    /// The id and name of the zone holding `fqdn`.
    async fn zone(&self, fqdn: &str) -> Result<Zone, DnsError> {
        let action = format!("finding the zone of `{fqdn}`");
        let tried = api::zone_candidates(fqdn);
        for name in &tried {
            let url = format!("{}/zones?name={name}", self.base);
            let reply = self
                .api
                .send(&Call {
                    action: &action,
                    method: Method::GET,
                    url: &url,
                    headers: &self.zone_auth,
                    body: None,
                    text: None,
                })
                .await?;
            let zones: Vec<Zone> = self.result(&action, &reply)?.unwrap_or_default();
            if let Some(zone) = zones
                .into_iter()
                .find(|z| z.name.eq_ignore_ascii_case(name))
            {
                return Ok(zone);
            }
        }
        Err(self.api.error(&action, ApiProblem::NoZone { tried }))
    }

    /// The `result` of a 2xx answer, or the error it holds.
    fn result<T: serde::de::DeserializeOwned>(
        &self,
        action: &str,
        reply: &api::Reply,
    ) -> Result<Option<T>, DnsError> {
        let envelope: Envelope<T> = reply.json().map_err(|p| self.api.error(action, p))?;
        if reply.status.is_success() && envelope.success {
            return Ok(envelope.result);
        }
        Err(self.api.refused(action, reply))
    }

    async fn present(&self, fqdn: &str, value: &str) -> Result<(), DnsError> {
        let zone = self.zone(fqdn).await?;
        let name = fqdn.trim_end_matches('.');
        let action = format!("adding the TXT record `{fqdn}` to zone `{}`", zone.name);
        let url = format!("{}/zones/{}/dns_records", self.base, zone.id);
        let body = serde_json::json!({
            "type": "TXT",
            "name": name,
            "content": value,
            "ttl": self.ttl,
        });
        let reply = self
            .api
            .send(&Call {
                action: &action,
                method: Method::POST,
                url: &url,
                headers: &self.dns_auth,
                body: Some(&body),
                text: None,
            })
            .await?;
        self.result::<serde_json::Value>(&action, &reply)?;
        Ok(())
    }

    async fn cleanup(&self, fqdn: &str, value: &str) -> Result<(), DnsError> {
        let zone = self.zone(fqdn).await?;
        let name = fqdn.trim_end_matches('.');
        let action = format!("removing the TXT record `{fqdn}` from zone `{}`", zone.name);
        let url = format!(
            "{}/zones/{}/dns_records?type=TXT&name={name}&per_page=100",
            self.base, zone.id
        );
        let reply = self
            .api
            .send(&Call {
                action: &action,
                method: Method::GET,
                url: &url,
                headers: &self.dns_auth,
                body: None,
                text: None,
            })
            .await?;
        let records: Vec<Record> = self.result(&action, &reply)?.unwrap_or_default();
        // Cloudflare may hand the content back quoted.
        for record in records
            .iter()
            .filter(|r| r.content.trim_matches('"') == value)
        {
            let url = format!("{}/zones/{}/dns_records/{}", self.base, zone.id, record.id);
            let reply = self
                .api
                .send(&Call {
                    action: &action,
                    method: Method::DELETE,
                    url: &url,
                    headers: &self.dns_auth,
                    body: None,
                    text: None,
                })
                .await?;
            // Gone already (a second cleanup) is what was wanted.
            if reply.status != http::StatusCode::NOT_FOUND {
                self.result::<serde_json::Value>(&action, &reply)?;
            }
        }
        Ok(())
    }
}

api::dns_provider!(Cloudflare, "cloudflare");
