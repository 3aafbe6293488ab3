//! The `hetzner` provider, through the DNS part of the Hetzner Cloud API
//! (v1, where Hetzner moved DNS from its former DNS Console) and the
//! variables Traefik's DNS library documents for it today:
//! `HETZNER_API_TOKEN` (a Hetzner Console project's API token with write
//! access), `HETZNER_TTL` (default 120, minimum 60),
//! `HETZNER_HTTP_TIMEOUT`; `HETZNER_API_URL` (gangway's own, default
//! `https://api.hetzner.cloud/v1`) points it elsewhere. The DNS
//! Console's `HETZNER_API_KEY` (its own, older API) is refused with a
//! sentence saying what to set instead.
//!
//! The zone is found by asking for each name the record's name ends with,
//! longest first. Values are added to, and removed from, the name's TXT
//! record set with the set's `add_records` / `remove_records` actions;
//! gangway waits until each action has succeeded.

use super::api::{self, Api, ApiProblem};
use super::{DnsError, Env};
use http::{HeaderName, HeaderValue, Method, StatusCode};
use std::time::Duration;

/// Where the API is, unless `HETZNER_API_URL` says otherwise.
const BASE_URL: &str = "https://api.hetzner.cloud/v1";
/// The TTL unless `HETZNER_TTL` says otherwise.
const DEFAULT_TTL: u64 = 120;
/// Hetzner's smallest TTL.
const MIN_TTL: u64 = 60;
/// Longest wait for an action to finish.
const ACTION_TIMEOUT: Duration = Duration::from_secs(120);
/// Time between two looks at an action.
const ACTION_POLL: Duration = Duration::from_secs(1);

/// The `hetzner` provider.
pub(super) struct Hetzner {
    api: Api,
    base: String,
    /// The token; a secret.
    auth: Vec<(HeaderName, HeaderValue)>,
    ttl: u64,
}

#[derive(serde::Deserialize)]
struct ActionAnswer {
    action: Action,
}

#[derive(serde::Deserialize)]
struct Action {
    id: u64,
    #[serde(default)]
    status: String,
    #[serde(default)]
    error: Option<ErrorInfo>,
}

#[derive(serde::Deserialize)]
struct ErrorInfo {
    #[serde(default)]
    code: String,
    #[serde(default)]
    message: String,
}

impl ErrorInfo {
    fn sentence(&self) -> String {
        format!("{} ({})", self.message, self.code)
    }
}

/// Hetzner's `{"error": {"code", "message"}}` as `message (code)`.
pub(super) fn message(body: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Answer {
        error: ErrorInfo,
    }
    let answer: Answer = serde_json::from_slice(body).ok()?;
    Some(answer.error.sentence())
}

impl Hetzner {
    /// Reads the token and settings; fails naming what is missing.
    pub(super) fn from_env(mut env: Env<'_>) -> Result<Self, DnsError> {
        if env.optional("HETZNER_API_TOKEN")?.is_none()
            && env.optional("HETZNER_API_KEY")?.is_some()
        {
            return Err(DnsError::BadEnv {
                variable: "HETZNER_API_KEY".to_owned(),
                problem: "is a key of Hetzner's former DNS Console API, which gangway does not use; create an API token in the Hetzner Console project holding the zone and set HETZNER_API_TOKEN".to_owned(),
            });
        }
        let token = env.required("HETZNER_API_TOKEN")?;
        let ttl = api::ttl(&env, "HETZNER_TTL", DEFAULT_TTL, MIN_TTL)?;
        let base = api::base_url(&env, "HETZNER_API_URL", BASE_URL)?;
        let api = Api::new(&env, "hetzner", "HETZNER", message)?;
        env.finish()?;
        Ok(Hetzner {
            api,
            base,
            auth: api::authorization("Bearer", &token, "HETZNER_API_TOKEN")?,
            ttl,
        })
    }

    /// The zone holding `fqdn`.
    async fn zone(&self, fqdn: &str) -> Result<String, DnsError> {
        let action = format!("finding the zone of `{fqdn}`");
        let tried = api::zone_candidates(fqdn);
        for name in &tried {
            let url = format!("{}/zones/{name}", self.base);
            let reply = self
                .api
                .json(&action, Method::GET, &url, &self.auth, None)
                .await?;
            if reply.status.is_success() {
                return Ok(name.clone());
            }
        }
        Err(self.api.error(&action, ApiProblem::NoZone { tried }))
    }

    /// Runs the set's action `verb` (`add_records`, `remove_records`) with
    /// `body` and waits until it succeeded; false when there is no set.
    async fn act(
        &self,
        action: &str,
        zone: &str,
        fqdn: &str,
        verb: &str,
        body: &serde_json::Value,
    ) -> Result<bool, DnsError> {
        let name = api::relative(fqdn, zone);
        let name = if name.is_empty() {
            "@".to_owned()
        } else {
            name
        };
        let url = format!(
            "{}/zones/{zone}/rrsets/{name}/TXT/actions/{verb}",
            self.base
        );
        let reply = self
            .api
            .json(action, Method::POST, &url, &self.auth, Some(body))
            .await?;
        if reply.status == StatusCode::NOT_FOUND {
            return Ok(false);
        }
        let status = reply.status;
        let mut current: ActionAnswer = reply.json().map_err(|p| self.api.error(action, p))?;
        let started = tokio::time::Instant::now();
        loop {
            match current.action.status.as_str() {
                "success" => return Ok(true),
                "error" => {
                    let message = current.action.error.as_ref().map_or_else(
                        || format!("action {} failed", current.action.id),
                        ErrorInfo::sentence,
                    );
                    return Err(self.api.error(action, ApiProblem::Refused { message }));
                }
                _ if started.elapsed() >= ACTION_TIMEOUT => {
                    return Err(self.api.error(
                        action,
                        ApiProblem::Status {
                            status,
                            message: format!(
                                "action {} still `{}` after {}s",
                                current.action.id,
                                current.action.status,
                                ACTION_TIMEOUT.as_secs()
                            ),
                        },
                    ));
                }
                _ => {}
            }
            tokio::time::sleep(ACTION_POLL).await;
            let url = format!("{}/actions/{}", self.base, current.action.id);
            let reply = self
                .api
                .json(action, Method::GET, &url, &self.auth, None)
                .await?;
            let reply = self.api.success(action, reply)?;
            current = reply.json().map_err(|p| self.api.error(action, p))?;
        }
    }

    async fn present(&self, fqdn: &str, value: &str) -> Result<(), DnsError> {
        let zone = self.zone(fqdn).await?;
        let action = format!("adding the TXT record `{fqdn}` to zone `{zone}`");
        let body = serde_json::json!({
            "ttl": self.ttl,
            "records": [{ "value": format!("\"{value}\"") }],
        });
        if self.act(&action, &zone, fqdn, "add_records", &body).await? {
            Ok(())
        } else {
            Err(self.api.error(
                &action,
                ApiProblem::NoZone {
                    tried: vec![zone.clone()],
                },
            ))
        }
    }

    async fn cleanup(&self, fqdn: &str, value: &str) -> Result<(), DnsError> {
        let zone = self.zone(fqdn).await?;
        let action = format!("removing the TXT record `{fqdn}` from zone `{zone}`");
        let body = serde_json::json!({ "records": [{ "value": format!("\"{value}\"") }] });
        // No set means nothing left to remove, which is what was wanted.
        self.act(&action, &zone, fqdn, "remove_records", &body)
            .await
            .map(drop)
    }
}

api::dns_provider!(Hetzner, "hetzner");
