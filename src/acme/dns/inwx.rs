//! The `inwx` provider, through INWX's DomRobot JSON-RPC API and the
//! variables Traefik's DNS library documents for it: `INWX_USERNAME`,
//! `INWX_PASSWORD`, `INWX_SHARED_SECRET` (the two-factor secret, when the
//! account has two-factor authentication), `INWX_SANDBOX` (the OTE test
//! system), `INWX_TTL` (default and minimum 300); gangway's own
//! `INWX_API_URL` (default `https://api.domrobot.com/jsonrpc/`) points it
//! elsewhere.
//!
//! Each call is a `POST` of `{"method", "params"}`; every answer has a
//! `code` (1000 and 1001 are success) and `msg`. Each present or cleanup
//! logs in (`account.login`; the session is the cookie it sets), unlocks
//! the account with a TOTP code when it asks for one (`account.unlock`;
//! INWX refuses a code used before, so a second unlock within one 30 s
//! period waits for the next), finds the zone by asking `nameserver.info`
//! for each name the record's name ends with, creates the record
//! (`nameserver.createRecord`; cleanup: `nameserver.info` by name and type,
//! then `nameserver.deleteRecord` of the one holding the value), and logs
//! out.

use super::api::{self, Api, ApiProblem};
use super::{DnsError, Env};
use http::{HeaderName, HeaderValue, Method};
use std::sync::Mutex;
use std::time::Duration;

/// Where the API is, unless `INWX_API_URL` says otherwise.
const BASE_URL: &str = "https://api.domrobot.com/jsonrpc/";
/// The OTE test system's API, with `INWX_SANDBOX`.
const SANDBOX_URL: &str = "https://api.ote.domrobot.com/jsonrpc/";
/// INWX's smallest TTL, and the default.
const MIN_TTL: u64 = 300;
/// The length of one TOTP period.
const TOTP_PERIOD: u64 = 30;
/// The answer code of an object that does not exist.
const NO_OBJECT: i64 = 2303;
/// The answer code of an object that exists already.
const EXISTS: i64 = 2302;

/// The `inwx` provider.
pub(super) struct Inwx {
    api: Api,
    url: String,
    user: String,
    /// Secrets.
    password: String,
    shared_secret: Option<Vec<u8>>,
    ttl: u64,
    /// The TOTP period of the last unlock (a code is good only once).
    last_unlock: Mutex<Option<u64>>,
}

#[derive(serde::Deserialize)]
struct Answer {
    code: i64,
    #[serde(default)]
    msg: String,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default, rename = "resData")]
    data: serde_json::Value,
}

impl Answer {
    fn ok(&self) -> bool {
        matches!(self.code, 1000 | 1001)
    }

    fn sentence(&self) -> String {
        match self.reason.as_deref().filter(|r| !r.is_empty()) {
            Some(reason) => format!("{}: {reason} ({})", self.msg, self.code),
            None => format!("{} ({})", self.msg, self.code),
        }
    }
}

#[derive(serde::Deserialize)]
struct Record {
    id: serde_json::Value,
    #[serde(default)]
    content: String,
}

/// The message of an error answer.
fn message(body: &[u8]) -> Option<String> {
    let answer: Answer = serde_json::from_slice(body).ok()?;
    (!answer.ok()).then(|| answer.sentence())
}

/// RFC 4648 base32 (any case; spaces and padding ignored), or None.
fn base32(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let (mut buffer, mut bits) = (0u32, 0u32);
    for c in text.chars().filter(|c| !c.is_whitespace() && *c != '=') {
        let v = match c.to_ascii_uppercase() {
            c @ 'A'..='Z' => c as u32 - 'A' as u32,
            c @ '2'..='7' => c as u32 - '2' as u32 + 26,
            _ => return None,
        };
        buffer = (buffer << 5) | v;
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
            buffer &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// The 6-digit TOTP code (RFC 6238: HMAC-SHA1, 30 s periods) of `secret`
/// for the period `counter`.
pub(super) fn totp(secret: &[u8], counter: u64) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, secret);
    let tag = ring::hmac::sign(&key, &counter.to_be_bytes());
    let mac = tag.as_ref();
    let offset = usize::from(mac[mac.len() - 1] & 0x0f);
    let code = u32::from_be_bytes([
        mac[offset] & 0x7f,
        mac[offset + 1],
        mac[offset + 2],
        mac[offset + 3],
    ]);
    format!("{:06}", code % 1_000_000)
}

impl Inwx {
    /// Reads the credentials and settings; fails naming what is missing.
    pub(super) fn from_env(mut env: Env<'_>) -> Result<Self, DnsError> {
        let user = env.required("INWX_USERNAME")?;
        let password = env.required("INWX_PASSWORD")?;
        let shared_secret = match env.optional("INWX_SHARED_SECRET")? {
            None => None,
            Some(text) => Some(base32(&text).ok_or_else(|| DnsError::BadEnv {
                variable: "INWX_SHARED_SECRET".to_owned(),
                problem: "is not base32 (the secret of the account's two-factor setup)".to_owned(),
            })?),
        };
        let sandbox = env.flag("INWX_SANDBOX")?;
        let ttl = api::ttl(&env, "INWX_TTL", MIN_TTL, MIN_TTL)?;
        let default = if sandbox { SANDBOX_URL } else { BASE_URL };
        let url = api::base_url(&env, "INWX_API_URL", default)?;
        let api = Api::new(&env, "inwx", "INWX", message)?;
        env.finish()?;
        Ok(Inwx {
            api,
            // base_url drops the final slash the endpoint is documented with.
            url: format!("{url}/"),
            user,
            password,
            shared_secret,
            ttl,
            last_unlock: Mutex::new(None),
        })
    }

    /// Calls `method` with `params` in the session of `cookie`: the
    /// answer, and its `Set-Cookie`s as one `Cookie` value.
    async fn call(
        &self,
        what: &str,
        cookie: &[(HeaderName, HeaderValue)],
        method: &str,
        params: serde_json::Value,
    ) -> Result<(Answer, String), DnsError> {
        let body = serde_json::json!({ "method": method, "params": params });
        let reply = self
            .api
            .json(what, Method::POST, &self.url, cookie, Some(&body))
            .await?;
        let reply = self.api.success(what, reply)?;
        let cookies = reply
            .headers
            .get_all(http::header::SET_COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok()?.split(';').next())
            .collect::<Vec<_>>()
            .join("; ");
        let answer = reply.json().map_err(|p| self.api.error(what, p))?;
        Ok((answer, cookies))
    }

    /// Calls `method` in the session; its data, or the refusal as an error.
    async fn data(
        &self,
        what: &str,
        cookie: &[(HeaderName, HeaderValue)],
        method: &str,
        params: serde_json::Value,
    ) -> Result<Result<serde_json::Value, Answer>, DnsError> {
        let (answer, _) = self.call(what, cookie, method, params).await?;
        Ok(if answer.ok() {
            Ok(answer.data)
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

    /// Logs in (and unlocks); the session's cookie header.
    async fn login(&self, what: &str) -> Result<Vec<(HeaderName, HeaderValue)>, DnsError> {
        let params = serde_json::json!({ "user": self.user, "pass": self.password });
        let (answer, cookies) = self.call(what, &[], "account.login", params).await?;
        if !answer.ok() {
            return Err(self.api.error(
                what,
                ApiProblem::Credentials {
                    status: http::StatusCode::OK,
                    message: answer.sentence(),
                },
            ));
        }
        let cookie = vec![(
            http::header::COOKIE,
            api::secret_header(&cookies, "INWX_PASSWORD")?,
        )];
        if answer.data["tfa"].as_str() != Some("GOOGLE-AUTH") {
            return Ok(cookie);
        }
        let Some(secret) = &self.shared_secret else {
            return Err(self.api.error(
                what,
                ApiProblem::Refused {
                    message: "the account asks for a two-factor code; set INWX_SHARED_SECRET"
                        .to_owned(),
                },
            ));
        };
        let tan = self.next_code(secret).await;
        let unlock = self
            .data(
                what,
                &cookie,
                "account.unlock",
                serde_json::json!({ "tan": tan }),
            )
            .await?;
        unlock.map_err(|answer| self.refused(what, &answer))?;
        Ok(cookie)
    }

    /// A TOTP code not used before, waiting for the next period when this
    /// one's was.
    async fn next_code(&self, secret: &[u8]) -> String {
        let now = crate::clock::unix_secs;
        let last = *self.last_unlock.lock().expect("no code panics holding it");
        if last == Some(now() / TOTP_PERIOD) {
            let wait = TOTP_PERIOD - now() % TOTP_PERIOD;
            tokio::time::sleep(Duration::from_secs(wait)).await;
        }
        let period = now() / TOTP_PERIOD;
        *self.last_unlock.lock().expect("no code panics holding it") = Some(period);
        totp(secret, period)
    }

    /// The zone holding `fqdn`.
    async fn zone(
        &self,
        cookie: &[(HeaderName, HeaderValue)],
        fqdn: &str,
    ) -> Result<String, DnsError> {
        let what = format!("finding the zone of `{fqdn}`");
        let tried = api::zone_candidates(fqdn);
        for name in &tried {
            let params = serde_json::json!({ "domain": name });
            match self.data(&what, cookie, "nameserver.info", params).await? {
                Ok(_) => return Ok(name.clone()),
                Err(answer) if answer.code == NO_OBJECT => {}
                Err(answer) => return Err(self.refused(&what, &answer)),
            }
        }
        Err(self.api.error(&what, ApiProblem::NoZone { tried }))
    }

    /// Logs in, adds (or removes) the record, logs out (a failed logout is
    /// only logged: the session expires on its own).
    async fn session(
        &self,
        what: &str,
        fqdn: &str,
        value: &str,
        add: bool,
    ) -> Result<(), DnsError> {
        let cookie = self.login(what).await?;
        let outcome = self.change(what, &cookie, fqdn, value, add).await;
        if let Ok(Err(answer)) = self
            .data(what, &cookie, "account.logout", serde_json::json!({}))
            .await
        {
            tracing::warn!(
                provider = "inwx",
                "inwx: logging out failed: {}",
                answer.sentence()
            );
        }
        outcome
    }

    async fn change(
        &self,
        what: &str,
        cookie: &[(HeaderName, HeaderValue)],
        fqdn: &str,
        value: &str,
        add: bool,
    ) -> Result<(), DnsError> {
        let zone = self.zone(cookie, fqdn).await?;
        let name = fqdn.trim_end_matches('.');
        if add {
            let params = serde_json::json!({
                "domain": zone, "name": name, "type": "TXT", "content": value, "ttl": self.ttl,
            });
            return match self
                .data(what, cookie, "nameserver.createRecord", params)
                .await?
            {
                Err(answer) if answer.code != EXISTS => Err(self.refused(what, &answer)),
                _ => Ok(()),
            };
        }
        let params = serde_json::json!({ "domain": zone, "name": name, "type": "TXT" });
        let data = self
            .data(what, cookie, "nameserver.info", params)
            .await?
            .map_err(|answer| self.refused(what, &answer))?;
        let records: Vec<Record> =
            serde_json::from_value(data["record"].clone()).unwrap_or_default();
        for record in records
            .iter()
            .filter(|r| r.content.trim_matches('"') == value)
        {
            let params = serde_json::json!({ "id": record.id });
            self.data(what, cookie, "nameserver.deleteRecord", params)
                .await?
                .map_err(|answer| self.refused(what, &answer))?;
        }
        Ok(())
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

api::dns_provider!(Inwx, "inwx");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totp_matches_rfc_6238_and_base32_reads_the_secret() {
        // RFC 6238 appendix B, SHA-1, T = 59 s: 94287082 (8 digits).
        let secret = base32("GEZDGNBVGY3TQOJQ gezdgnbvgy3tqojq").unwrap();
        assert_eq!(secret, b"12345678901234567890");
        assert_eq!(totp(&secret, 59 / TOTP_PERIOD), "287082");
        // T = 1111111109 s: 07081804.
        assert_eq!(totp(&secret, 1_111_111_109 / TOTP_PERIOD), "081804");
        assert_eq!(base32("not base32!"), None);
    }
}
