//! The `gcloud` provider, through Google Cloud DNS's API v1 and the
//! variables Traefik's DNS library documents for it: a service account's
//! JSON key in `GCE_SERVICE_ACCOUNT` (its content) or
//! `GCE_SERVICE_ACCOUNT_FILE` (its path), else the file
//! `GOOGLE_APPLICATION_CREDENTIALS` names; `GCE_PROJECT` (default: the
//! key's `project_id`), `GCE_ZONE_ID` (skips the zone lookup),
//! `GCE_ALLOW_PRIVATE_ZONE`, `GCE_TTL` (default 120); gangway's own
//! `GCE_API_URL` (default `https://dns.googleapis.com/dns/v1`) points it
//! elsewhere. Not read: the metadata server's credentials and
//! `GCE_IMPERSONATE_SERVICE_ACCOUNT`.
//!
//! Each present or cleanup first gets an access token by OAuth 2.0's JWT
//! grant: a JWT naming the service account and Cloud DNS's read-write
//! scope, signed RS256 with the key's private key, posted to the key's
//! `token_uri`. The zone is the managed zone whose `dnsName` is the
//! longest name the record's name ends with; the name's TXT set is read
//! and replaced by one change (deleting the old set, adding the new one),
//! and gangway waits until the change is `done`.

use super::api::{self, Api, ApiProblem};
use super::{DnsError, Env};
use base64::Engine as _;
use http::{HeaderName, HeaderValue, Method};
use ring::signature::RsaKeyPair;
use std::time::Duration;

/// Where the API is, unless `GCE_API_URL` says otherwise.
const BASE_URL: &str = "https://dns.googleapis.com/dns/v1";
/// Google's token endpoint when the key names none.
const TOKEN_URI: &str = "https://oauth2.googleapis.com/token";
/// The scope asked for: reading and changing Cloud DNS.
const SCOPE: &str = "https://www.googleapis.com/auth/ndev.clouddns.readwrite";
/// The TTL unless `GCE_TTL` says otherwise.
const DEFAULT_TTL: u64 = 120;
/// Longest wait for a change to be `done`.
const CHANGE_TIMEOUT: Duration = Duration::from_secs(60);
/// Time between two looks at a change.
const CHANGE_POLL: Duration = Duration::from_secs(1);

/// The `gcloud` provider.
pub(super) struct GCloud {
    api: Api,
    base: String,
    project: String,
    zone_id: Option<String>,
    allow_private: bool,
    email: String,
    key_id: String,
    token_uri: String,
    /// A secret.
    key: RsaKeyPair,
    ttl: u64,
}

/// The parts of a service account's JSON key gangway uses.
#[derive(serde::Deserialize)]
struct ServiceAccount {
    client_email: String,
    private_key: String,
    #[serde(default)]
    private_key_id: String,
    #[serde(default)]
    project_id: String,
    #[serde(default)]
    token_uri: Option<String>,
}

#[derive(serde::Deserialize)]
struct ManagedZones {
    #[serde(default, rename = "managedZones")]
    managed_zones: Vec<ManagedZone>,
}

#[derive(serde::Deserialize)]
struct ManagedZone {
    name: String,
    #[serde(default, rename = "dnsName")]
    dns_name: String,
    #[serde(default)]
    visibility: String,
}

/// Google's `{"error": {"message", "status"}}` (or OAuth's
/// `{"error", "error_description"}`).
fn message(body: &[u8]) -> Option<String> {
    let json: serde_json::Value = serde_json::from_slice(body).ok()?;
    if let Some(message) = json["error"]["message"].as_str() {
        return Some(match json["error"]["status"].as_str() {
            Some(status) => format!("{message} ({status})"),
            None => message.to_owned(),
        });
    }
    let error = json["error"].as_str()?;
    Some(match json["error_description"].as_str() {
        Some(text) => format!("{text} ({error})"),
        None => error.to_owned(),
    })
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

impl GCloud {
    /// Reads the key and settings; fails naming what is missing.
    pub(super) fn from_env(env: Env<'_>) -> Result<Self, DnsError> {
        let (variable, text) = if let Some(text) = env.optional("GCE_SERVICE_ACCOUNT")? {
            ("GCE_SERVICE_ACCOUNT", text)
        } else {
            let Some((variable, path)) =
                ["GCE_SERVICE_ACCOUNT_FILE", "GOOGLE_APPLICATION_CREDENTIALS"]
                    .into_iter()
                    .find_map(|v| env.optional(v).ok().flatten().map(|p| (v, p)))
            else {
                return Err(env.no_credentials(
                    "GCE_SERVICE_ACCOUNT (a service account's JSON key), GCE_SERVICE_ACCOUNT_FILE or GOOGLE_APPLICATION_CREDENTIALS (its path)",
                ));
            };
            let text = std::fs::read_to_string(&path).map_err(|source| DnsError::EnvFile {
                variable: variable.to_owned(),
                path: path.into(),
                source,
            })?;
            (variable, text)
        };
        let bad = |problem: String| DnsError::BadEnv {
            variable: variable.to_owned(),
            problem,
        };
        let account: ServiceAccount = serde_json::from_str(&text)
            .map_err(|e| bad(format!("is not a service account's JSON key: {e}")))?;
        let key = api::rsa_key(&account.private_key)
            .map_err(|problem| bad(format!("its private_key {problem}")))?;
        let project = env
            .optional("GCE_PROJECT")?
            .unwrap_or(account.project_id.clone());
        if project.is_empty() {
            return Err(env.no_credentials("GCE_PROJECT (the key names no project_id)"));
        }
        let zone_id = env.optional("GCE_ZONE_ID")?;
        let allow_private = env.flag("GCE_ALLOW_PRIVATE_ZONE")?;
        let ttl = api::ttl(&env, "GCE_TTL", DEFAULT_TTL, 1)?;
        let base = api::base_url(&env, "GCE_API_URL", BASE_URL)?;
        let api = Api::new(&env, "gcloud", "GCE", message)?;
        env.finish()?;
        Ok(GCloud {
            api,
            base,
            project,
            zone_id,
            allow_private,
            email: account.client_email,
            key_id: account.private_key_id,
            token_uri: account.token_uri.unwrap_or_else(|| TOKEN_URI.to_owned()),
            key,
            ttl,
        })
    }

    /// A new access token by the JWT grant, as the bearer header.
    async fn token(&self, what: &str) -> Result<Vec<(HeaderName, HeaderValue)>, DnsError> {
        let now = crate::clock::unix_secs();
        let header = serde_json::json!({ "alg": "RS256", "typ": "JWT", "kid": self.key_id });
        let claims = serde_json::json!({
            "iss": self.email,
            "scope": SCOPE,
            "aud": self.token_uri,
            "iat": now,
            "exp": now + 3600,
        });
        let signed = format!(
            "{}.{}",
            b64(header.to_string().as_bytes()),
            b64(claims.to_string().as_bytes())
        );
        let signature = api::rsa_sign(
            &self.key,
            &ring::signature::RSA_PKCS1_SHA256,
            signed.as_bytes(),
            "GCE_SERVICE_ACCOUNT",
        )?;
        let assertion = format!("{signed}.{}", b64(&signature));
        let grant = [
            ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
            ("assertion", assertion.as_str()),
        ];
        self.api
            .bearer_token(what, &self.token_uri, &grant, "GCE_SERVICE_ACCOUNT")
            .await
    }

    fn zones_url(&self) -> String {
        format!("{}/projects/{}/managedZones", self.base, self.project)
    }

    /// The managed zone holding `fqdn`.
    async fn zone(
        &self,
        what: &str,
        auth: &[(HeaderName, HeaderValue)],
        fqdn: &str,
    ) -> Result<String, DnsError> {
        if let Some(id) = &self.zone_id {
            return Ok(id.clone());
        }
        let tried = api::zone_candidates(fqdn);
        for name in &tried {
            let url = format!("{}?dnsName={name}.", self.zones_url());
            let reply = self.api.json(what, Method::GET, &url, auth, None).await?;
            let reply = self.api.success(what, reply)?;
            let found: ManagedZones = reply.json().map_err(|p| self.api.error(what, p))?;
            let usable = found.managed_zones.into_iter().find(|z| {
                z.dns_name.trim_end_matches('.').eq_ignore_ascii_case(name)
                    && (self.allow_private || z.visibility != "private")
            });
            if let Some(zone) = usable {
                return Ok(zone.name);
            }
        }
        Err(self.api.error(what, ApiProblem::NoZone { tried }))
    }

    /// Replaces the TXT set at `fqdn` by one where `change` made its
    /// values from the old ones (None: nothing to do).
    async fn replace(
        &self,
        verb: &str,
        fqdn: &str,
        change: impl Fn(&[String]) -> Option<Vec<String>>,
    ) -> Result<(), DnsError> {
        let what = format!("{verb} the TXT record `{fqdn}`");
        let auth = self.token(&what).await?;
        let zone = self.zone(&what, &auth, fqdn).await?;
        let zone_url = format!("{}/{zone}", self.zones_url());
        let url = format!("{zone_url}/rrsets?name={fqdn}&type=TXT");
        let reply = self.api.json(&what, Method::GET, &url, &auth, None).await?;
        let reply = self.api.success(&what, reply)?;
        let sets: serde_json::Value = reply.json().map_err(|p| self.api.error(&what, p))?;
        let old = sets["rrsets"].as_array().and_then(|s| s.first()).cloned();
        let values: Vec<String> = old
            .as_ref()
            .and_then(|s| s["rrdatas"].as_array())
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str())
            .map(|v| v.trim_matches('"').to_owned())
            .collect();
        let Some(new) = change(&values) else {
            return Ok(());
        };
        let additions: Vec<serde_json::Value> = (!new.is_empty())
            .then(|| {
                let quoted: Vec<String> = new.iter().map(|v| format!("\"{v}\"")).collect();
                serde_json::json!({ "name": fqdn, "type": "TXT", "ttl": self.ttl, "rrdatas": quoted })
            })
            .into_iter()
            .collect();
        let body = serde_json::json!({
            "additions": additions,
            "deletions": old.into_iter().collect::<Vec<_>>(),
        });
        let url = format!("{zone_url}/changes");
        let reply = self
            .api
            .json(&what, Method::POST, &url, &auth, Some(&body))
            .await?;
        let mut answer: serde_json::Value = self
            .api
            .success(&what, reply)?
            .json()
            .map_err(|p| self.api.error(&what, p))?;
        let started = tokio::time::Instant::now();
        while answer["status"] != "done" {
            if started.elapsed() >= CHANGE_TIMEOUT {
                let message = format!(
                    "change {} still {} after {}s",
                    answer["id"],
                    answer["status"],
                    CHANGE_TIMEOUT.as_secs()
                );
                return Err(self.api.error(&what, ApiProblem::Refused { message }));
            }
            tokio::time::sleep(CHANGE_POLL).await;
            let url = format!(
                "{zone_url}/changes/{}",
                answer["id"].as_str().unwrap_or_default()
            );
            let reply = self.api.json(&what, Method::GET, &url, &auth, None).await?;
            answer = self
                .api
                .success(&what, reply)?
                .json()
                .map_err(|p| self.api.error(&what, p))?;
        }
        Ok(())
    }

    async fn present(&self, fqdn: &str, value: &str) -> Result<(), DnsError> {
        self.replace("adding", fqdn, |v| api::with_value(v, value))
            .await
    }

    async fn cleanup(&self, fqdn: &str, value: &str) -> Result<(), DnsError> {
        self.replace("removing", fqdn, |v| api::without_value(v, value))
            .await
    }
}

api::dns_provider!(GCloud, "gcloud");
