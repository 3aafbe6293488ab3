//! The `netcup` provider, through netcup's CCP DNS API (JSON) and the
//! variables Traefik's DNS library documents for it:
//! `NETCUP_CUSTOMER_NUMBER`, `NETCUP_API_KEY`, `NETCUP_API_PASSWORD`,
//! `NETCUP_HTTP_TIMEOUT` (default 10); gangway's own `NETCUP_API_URL`
//! (default netcup's endpoint) points it elsewhere. netcup sets the TTL
//! of a zone, not of a record.
//!
//! Every call is a `POST` of `{"action", "param"}` to one endpoint, and
//! every answer says `status` (`success` or `error`) with a `statuscode`
//! and messages. Each present or cleanup logs in for a session, finds
//! the zone by asking `infoDnsZone` for each name the record's name ends
//! with (longest first), changes only its own record with
//! `updateDnsRecords` (a new record; cleanup: the record holding the
//! value, marked `deleterecord`), and logs out.

use super::api::{self, Api, ApiProblem};
use super::{DnsError, Env};
use http::Method;
use std::time::Duration;

/// Where the API is, unless `NETCUP_API_URL` says otherwise.
const BASE_URL: &str = "https://ccp.netcup.net/run/webservice/servers/endpoint.php?JSON";
/// The time limit of one call unless `NETCUP_HTTP_TIMEOUT` says otherwise.
const HTTP_TIMEOUT: Duration = Duration::from_secs(10);

/// The `netcup` provider.
pub(super) struct Netcup {
    api: Api,
    url: String,
    customer: String,
    /// Secrets.
    key: String,
    password: String,
}

#[derive(serde::Deserialize)]
struct Answer {
    #[serde(default)]
    status: String,
    #[serde(default)]
    statuscode: i64,
    #[serde(default)]
    shortmessage: String,
    #[serde(default)]
    longmessage: Option<String>,
    #[serde(default)]
    responsedata: serde_json::Value,
}

impl Answer {
    fn sentence(&self) -> String {
        match self.longmessage.as_deref().filter(|m| !m.is_empty()) {
            Some(long) => format!("{}: {long} ({})", self.shortmessage, self.statuscode),
            None => format!("{} ({})", self.shortmessage, self.statuscode),
        }
    }
}

#[derive(serde::Deserialize)]
struct Record {
    id: String,
    #[serde(default)]
    hostname: String,
    #[serde(default, rename = "type")]
    kind: String,
    #[serde(default)]
    destination: String,
}

/// The messages of an error answer.
fn message(body: &[u8]) -> Option<String> {
    let answer: Answer = serde_json::from_slice(body).ok()?;
    (answer.status != "success").then(|| answer.sentence())
}

impl Netcup {
    /// Reads the credentials and settings; fails naming what is missing.
    pub(super) fn from_env(mut env: Env<'_>) -> Result<Self, DnsError> {
        let customer = env.required("NETCUP_CUSTOMER_NUMBER")?;
        let key = env.required("NETCUP_API_KEY")?;
        let password = env.required("NETCUP_API_PASSWORD")?;
        let url = api::base_url(&env, "NETCUP_API_URL", BASE_URL)?;
        let api = Api::with_timeout(&env, "netcup", "NETCUP", message, HTTP_TIMEOUT)?;
        env.finish()?;
        Ok(Netcup {
            api,
            url,
            customer,
            key,
            password,
        })
    }

    /// Runs `action` with `param`: the answer, whatever its status.
    async fn call(
        &self,
        what: &str,
        action: &str,
        param: serde_json::Value,
    ) -> Result<Answer, DnsError> {
        let body = serde_json::json!({ "action": action, "param": param });
        let reply = self
            .api
            .json(what, Method::POST, &self.url, &[], Some(&body))
            .await?;
        let reply = self.api.success(what, reply)?;
        reply.json().map_err(|p| self.api.error(what, p))
    }

    /// Runs `action` in `session`; its data, or the refusal.
    async fn in_session(
        &self,
        what: &str,
        session: &str,
        action: &str,
        mut param: serde_json::Value,
    ) -> Result<Result<serde_json::Value, Answer>, DnsError> {
        param["customernumber"] = self.customer.as_str().into();
        param["apikey"] = self.key.as_str().into();
        param["apisessionid"] = session.into();
        let answer = self.call(what, action, param).await?;
        Ok(if answer.status == "success" {
            Ok(answer.responsedata)
        } else {
            Err(answer)
        })
    }

    fn refused(&self, what: &str, answer: &Answer) -> DnsError {
        self.api.error(
            what,
            ApiProblem::Refused {
                message: answer.sentence(),
            },
        )
    }

    /// Logs in, adds (or removes) the record in the session, logs out (a
    /// failed logout is only logged: the session expires on its own).
    async fn session(
        &self,
        what: &str,
        fqdn: &str,
        value: &str,
        add: bool,
    ) -> Result<(), DnsError> {
        let login = serde_json::json!({
            "customernumber": self.customer,
            "apikey": self.key,
            "apipassword": self.password,
        });
        let answer = self.call(what, "login", login).await?;
        if answer.status != "success" {
            return Err(self.api.error(
                what,
                ApiProblem::Credentials {
                    status: http::StatusCode::OK,
                    message: answer.sentence(),
                },
            ));
        }
        let session = answer.responsedata["apisessionid"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let outcome = self.change(what, &session, fqdn, value, add).await;
        if let Ok(Err(answer)) = self
            .in_session(what, &session, "logout", serde_json::json!({}))
            .await
        {
            tracing::warn!(
                provider = "netcup",
                "netcup: logging out failed: {}",
                answer.sentence()
            );
        }
        outcome
    }

    /// The zone holding `fqdn`.
    async fn zone(&self, session: &str, fqdn: &str) -> Result<String, DnsError> {
        let what = format!("finding the zone of `{fqdn}`");
        let tried = api::zone_candidates(fqdn);
        for name in &tried {
            let param = serde_json::json!({ "domainname": name });
            if self
                .in_session(&what, session, "infoDnsZone", param)
                .await?
                .is_ok()
            {
                return Ok(name.clone());
            }
        }
        Err(self.api.error(&what, ApiProblem::NoZone { tried }))
    }

    async fn change(
        &self,
        what: &str,
        session: &str,
        fqdn: &str,
        value: &str,
        add: bool,
    ) -> Result<(), DnsError> {
        let zone = self.zone(session, fqdn).await?;
        let host = api::relative(fqdn, &zone);
        let host = if host.is_empty() {
            "@".to_owned()
        } else {
            host
        };
        let record = if add {
            serde_json::json!({
                "hostname": host,
                "type": "TXT",
                "priority": "",
                "destination": value,
                "deleterecord": false,
            })
        } else {
            let param = serde_json::json!({ "domainname": zone });
            let data = self
                .in_session(what, session, "infoDnsRecords", param)
                .await?
                .map_err(|answer| self.refused(what, &answer))?;
            let records: Vec<Record> =
                serde_json::from_value(data["dnsrecords"].clone()).unwrap_or_default();
            let Some(found) = records.iter().find(|r| {
                r.kind.eq_ignore_ascii_case("TXT")
                    && r.hostname.eq_ignore_ascii_case(&host)
                    && r.destination.trim_matches('"') == value
            }) else {
                return Ok(());
            };
            serde_json::json!({
                "id": found.id,
                "hostname": found.hostname,
                "type": "TXT",
                "priority": "",
                "destination": found.destination,
                "deleterecord": true,
            })
        };
        let param = serde_json::json!({
            "domainname": zone,
            "dnsrecordset": { "dnsrecords": [record] },
        });
        self.in_session(what, session, "updateDnsRecords", param)
            .await?
            .map(drop)
            .map_err(|answer| self.refused(what, &answer))
    }

    async fn present(&self, fqdn: &str, value: &str) -> Result<(), DnsError> {
        let what = format!("adding the TXT record `{fqdn}`");
        self.session(&what, fqdn, value, true).await
    }

    async fn cleanup(&self, fqdn: &str, value: &str) -> Result<(), DnsError> {
        let what = format!("removing the TXT record `{fqdn}`");
        self.session(&what, fqdn, value, false).await
    }
}

api::dns_provider!(Netcup, "netcup");
