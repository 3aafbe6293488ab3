//! The `ovh` provider, through OVHcloud's API v1, and the variables
//! Traefik's DNS library documents for it: `OVH_ENDPOINT` (`ovh-eu`,
//! `ovh-ca`, `ovh-us`, `kimsufi-eu`, `kimsufi-ca`, `soyoustart-eu`,
//! `soyoustart-ca`, or a URL), `OVH_TTL` (default 120), `OVH_HTTP_TIMEOUT`,
//! and one of three ways in:
//!
//! - an application key: `OVH_APPLICATION_KEY`, `OVH_APPLICATION_SECRET`
//!   and `OVH_CONSUMER_KEY`. Every call then carries `X-Ovh-Application`,
//!   `X-Ovh-Consumer`, `X-Ovh-Timestamp` (the API's own clock, from
//!   `/auth/time`) and `X-Ovh-Signature`: `$1$` and the SHA-1 of the
//!   secret, the consumer key, the method, the whole URL, the body and the
//!   timestamp joined by `+`;
//! - an OAuth 2.0 service account: `OVH_CLIENT_ID` and `OVH_CLIENT_SECRET`,
//!   exchanged by the client credentials grant (scope `all`) at the
//!   endpoint's `/auth/oauth2/token` for a bearer token;
//! - an access token, `OVH_ACCESS_TOKEN`, sent as it is as a bearer token.
//!
//! The zone is found by asking for each name the record's name ends with;
//! each value is its own record, and a change is applied with the zone's
//! `refresh`.

use super::api::{self, Api, ApiProblem, Call};
use super::{DnsError, Env};
use http::{HeaderName, HeaderValue, Method};

/// The endpoints OVH's own libraries name, with their OAuth 2.0 token
/// endpoint where they have one.
const ENDPOINTS: &[(&str, &str, &str)] = &[
    (
        "ovh-eu",
        "https://eu.api.ovh.com/1.0",
        "https://www.ovh.com/auth/oauth2/token",
    ),
    (
        "ovh-ca",
        "https://ca.api.ovh.com/1.0",
        "https://ca.ovh.com/auth/oauth2/token",
    ),
    (
        "ovh-us",
        "https://api.us.ovhcloud.com/1.0",
        "https://us.ovhcloud.com/auth/oauth2/token",
    ),
    ("kimsufi-eu", "https://eu.api.kimsufi.com/1.0", ""),
    ("kimsufi-ca", "https://ca.api.kimsufi.com/1.0", ""),
    ("soyoustart-eu", "https://eu.api.soyoustart.com/1.0", ""),
    ("soyoustart-ca", "https://ca.api.soyoustart.com/1.0", ""),
];
/// How long an OAuth 2.0 token is used before another is asked for.
const TOKEN_KEPT: std::time::Duration = std::time::Duration::from_secs(600);
/// OVH's smallest TTL.
const MIN_TTL: u64 = 60;

/// The `ovh` provider.
pub(super) struct Ovh {
    api: Api,
    base: String,
    auth: Auth,
    ttl: u64,
}

/// A call's authentication headers.
type Headers = Vec<(HeaderName, HeaderValue)>;

/// How calls are authenticated; every field is a secret but the
/// application key and the client ID.
enum Auth {
    /// The application key's signature on each call.
    Signed {
        application_key: HeaderValue,
        application_secret: String,
        consumer_key: HeaderValue,
    },
    /// A bearer token from the client credentials grant, kept for
    /// [`TOKEN_KEPT`] (OVH's last an hour).
    OAuth2 {
        token_url: String,
        client_id: String,
        client_secret: String,
        /// The last token and when it was given.
        kept: std::sync::Mutex<Option<(Headers, std::time::Instant)>>,
    },
    /// A bearer token given as it is.
    Token(Vec<(HeaderName, HeaderValue)>),
}

#[derive(serde::Deserialize)]
struct Record {
    #[serde(default)]
    target: String,
}

/// `message (errorCode)` of an error answer.
fn message(body: &[u8]) -> Option<String> {
    let json: serde_json::Value = serde_json::from_slice(body).ok()?;
    let message = json["message"].as_str()?;
    Some(match json["errorCode"].as_str() {
        Some(code) => format!("{message} ({code})"),
        None => message.to_owned(),
    })
}

/// The signature of one call (`$1$` + hex SHA-1).
pub(super) fn signature(
    secret: &str,
    consumer_key: &str,
    method: &str,
    url: &str,
    body: &str,
    timestamp: u64,
) -> String {
    let text = format!("{secret}+{consumer_key}+{method}+{url}+{body}+{timestamp}");
    let digest = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, text.as_bytes());
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("$1${hex}")
}

impl Ovh {
    /// Reads the keys and settings; fails naming what is missing.
    pub(super) fn from_env(mut env: Env<'_>) -> Result<Self, DnsError> {
        let endpoint = env.required("OVH_ENDPOINT")?;
        let ttl = env
            .seconds("OVH_TTL", std::time::Duration::from_secs(120))?
            .as_secs()
            .max(MIN_TTL);
        let api = Api::new(&env, "ovh", "OVH", message)?;
        let (base, token_url) = match ENDPOINTS.iter().find(|(name, ..)| *name == endpoint.trim()) {
            Some((_, url, token)) => ((*url).to_owned(), (*token).to_owned()),
            None if endpoint.is_empty() => (String::new(), String::new()),
            None => {
                let url = api::base_url(&env, "OVH_ENDPOINT", &endpoint)?;
                // gangway's choice for an endpoint given as a URL: the
                // token endpoint on the same host, as OVH places it.
                let host = url.strip_suffix("/1.0").unwrap_or(&url);
                let token = format!("{host}/auth/oauth2/token");
                (url, token)
            }
        };
        let auth = Self::auth(&mut env, token_url)?;
        env.finish()?;
        Ok(Ovh {
            api,
            base,
            auth,
            ttl,
        })
    }

    /// The way in the variables give: an access token, else an OAuth 2.0
    /// client, else the application key (whose variables are then each
    /// required).
    fn auth(env: &mut Env<'_>, token_url: String) -> Result<Auth, DnsError> {
        if let Some(token) = env.optional("OVH_ACCESS_TOKEN")? {
            return Ok(Auth::Token(api::authorization(
                "Bearer",
                &token,
                "OVH_ACCESS_TOKEN",
            )?));
        }
        if let Some(client_id) = env.optional("OVH_CLIENT_ID")? {
            return Ok(Auth::OAuth2 {
                token_url,
                client_id,
                client_secret: env.required("OVH_CLIENT_SECRET")?,
                kept: std::sync::Mutex::default(),
            });
        }
        let application_key = env.required("OVH_APPLICATION_KEY")?;
        let application_secret = env.required("OVH_APPLICATION_SECRET")?;
        let consumer_key = env.required("OVH_CONSUMER_KEY")?;
        Ok(Auth::Signed {
            application_key: api::secret_header(&application_key, "OVH_APPLICATION_KEY")?,
            application_secret,
            consumer_key: api::secret_header(&consumer_key, "OVH_CONSUMER_KEY")?,
        })
    }

    /// The headers of one call to `url` with `text` as its body.
    async fn headers(
        &self,
        action: &str,
        method: &Method,
        url: &str,
        text: &str,
    ) -> Result<Vec<(HeaderName, HeaderValue)>, DnsError> {
        let (application_key, application_secret, consumer_key) = match &self.auth {
            Auth::Token(header) => return Ok(header.clone()),
            Auth::OAuth2 {
                token_url,
                client_id,
                client_secret,
                kept,
            } => {
                let fresh = kept
                    .lock()
                    .ok()
                    .and_then(|k| k.clone())
                    .filter(|(_, at)| at.elapsed() < TOKEN_KEPT);
                if let Some((header, _)) = fresh {
                    return Ok(header);
                }
                let grant = [
                    ("grant_type", "client_credentials"),
                    ("client_id", client_id.as_str()),
                    ("client_secret", client_secret.as_str()),
                    ("scope", "all"),
                ];
                let header = self
                    .api
                    .bearer_token(action, token_url, &grant, "OVH_CLIENT_SECRET")
                    .await?;
                if let Ok(mut kept) = kept.lock() {
                    *kept = Some((header.clone(), std::time::Instant::now()));
                }
                return Ok(header);
            }
            Auth::Signed {
                application_key,
                application_secret,
                consumer_key,
            } => (application_key, application_secret, consumer_key),
        };
        let timestamp = self.time(action).await?;
        let consumer = consumer_key.to_str().unwrap_or_default();
        let signed = signature(
            application_secret,
            consumer,
            method.as_str(),
            url,
            text,
            timestamp,
        );
        Ok(vec![
            (
                HeaderName::from_static("x-ovh-application"),
                application_key.clone(),
            ),
            (
                HeaderName::from_static("x-ovh-consumer"),
                consumer_key.clone(),
            ),
            (
                HeaderName::from_static("x-ovh-timestamp"),
                HeaderValue::from(timestamp),
            ),
            (
                HeaderName::from_static("x-ovh-signature"),
                api::secret_header(&signed, "OVH_APPLICATION_SECRET")?,
            ),
        ])
    }

    /// The API's clock.
    async fn time(&self, action: &str) -> Result<u64, DnsError> {
        let url = format!("{}/auth/time", self.base);
        let reply = self
            .api
            .send(&Call {
                action,
                method: Method::GET,
                url: &url,
                headers: &[],
                body: None,
                text: None,
            })
            .await?;
        reply.json::<u64>().map_err(|p| self.api.error(action, p))
    }

    /// Sends one signed call; the reply (2xx or 404).
    async fn call(
        &self,
        action: &str,
        method: Method,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<api::Reply, DnsError> {
        let url = format!("{}{path}", self.base);
        let text = body.map(ToString::to_string).unwrap_or_default();
        let headers = self.headers(action, &method, &url, &text).await?;
        self.api
            .send(&Call {
                action,
                method,
                url: &url,
                headers: &headers,
                body: None,
                text: body.map(|_| ("application/json", text.as_str())),
            })
            .await
    }

    /// The account's zone holding `fqdn`.
    async fn zone(&self, fqdn: &str) -> Result<String, DnsError> {
        let action = format!("finding the zone of `{fqdn}`");
        let tried = api::zone_candidates(fqdn);
        for name in &tried {
            let reply = self
                .call(&action, Method::GET, &format!("/domain/zone/{name}"), None)
                .await?;
            if reply.status.is_success() {
                return Ok(name.clone());
            }
        }
        Err(self.api.error(&action, ApiProblem::NoZone { tried }))
    }

    async fn refresh(&self, action: &str, zone: &str) -> Result<(), DnsError> {
        let reply = self
            .call(
                action,
                Method::POST,
                &format!("/domain/zone/{zone}/refresh"),
                None,
            )
            .await?;
        if reply.status.is_success() {
            Ok(())
        } else {
            Err(self.api.refused(action, &reply))
        }
    }

    async fn present(&self, fqdn: &str, value: &str) -> Result<(), DnsError> {
        let zone = self.zone(fqdn).await?;
        let action = format!("adding the TXT record `{fqdn}` to zone `{zone}`");
        let body = serde_json::json!({
            "fieldType": "TXT",
            "subDomain": api::relative(fqdn, &zone),
            "target": value,
            "ttl": self.ttl,
        });
        let reply = self
            .call(
                &action,
                Method::POST,
                &format!("/domain/zone/{zone}/record"),
                Some(&body),
            )
            .await?;
        if !reply.status.is_success() {
            return Err(self.api.refused(&action, &reply));
        }
        self.refresh(&action, &zone).await
    }

    async fn cleanup(&self, fqdn: &str, value: &str) -> Result<(), DnsError> {
        let zone = self.zone(fqdn).await?;
        let action = format!("removing the TXT record `{fqdn}` from zone `{zone}`");
        let sub = api::relative(fqdn, &zone);
        let reply = self
            .call(
                &action,
                Method::GET,
                &format!("/domain/zone/{zone}/record?fieldType=TXT&subDomain={sub}"),
                None,
            )
            .await?;
        if !reply.status.is_success() {
            return Err(self.api.refused(&action, &reply));
        }
        let ids: Vec<u64> = reply.json().map_err(|p| self.api.error(&action, p))?;
        let mut removed = false;
        for id in ids {
            let path = format!("/domain/zone/{zone}/record/{id}");
            let reply = self.call(&action, Method::GET, &path, None).await?;
            if !reply.status.is_success() {
                continue;
            }
            let record: Record = reply.json().map_err(|p| self.api.error(&action, p))?;
            if record.target.trim_matches('"') != value {
                continue;
            }
            let reply = self.call(&action, Method::DELETE, &path, None).await?;
            // A 404 means it is gone already, which is what was wanted.
            if !reply.status.is_success() && reply.status != http::StatusCode::NOT_FOUND {
                return Err(self.api.refused(&action, &reply));
            }
            removed = true;
        }
        if removed {
            self.refresh(&action, &zone).await?;
        }
        Ok(())
    }
}

api::dns_provider!(Ovh, "ovh");
