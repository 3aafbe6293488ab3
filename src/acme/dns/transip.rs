//! The `transip` provider, through TransIP's REST API v6 and the
//! variables Traefik's DNS library documents for it:
//! `TRANSIP_ACCOUNT_NAME`, `TRANSIP_PRIVATE_KEY_PATH` (the key pair's
//! private key made in TransIP's control panel, PEM), `TRANSIP_TTL`
//! (default 10), `TRANSIP_HTTP_TIMEOUT`; gangway's own `TRANSIP_API_URL`
//! (default `https://api.transip.nl/v6`) points it elsewhere.
//!
//! Each present or cleanup first asks `POST /auth` for an access token: a
//! JSON body naming the account and a fresh nonce, signed with the
//! private key (RSA with SHA-512, base64 in the `Signature` header). With
//! the token, the domain is found by asking `GET /domains/<name>` for
//! each name the record's name ends with, and the record is added with
//! `POST /domains/<domain>/dns` (cleanup: `DELETE` with the same entry).

use super::api::{self, Api};
use super::{DnsError, Env};
use base64::Engine as _;
use http::{HeaderName, HeaderValue, Method};
use ring::signature::RsaKeyPair;

/// Where the API is, unless `TRANSIP_API_URL` says otherwise.
const BASE_URL: &str = "https://api.transip.nl/v6";
/// The TTL (TransIP's `expire`) unless `TRANSIP_TTL` says otherwise.
const DEFAULT_TTL: u64 = 10;
/// How long a token asked for lives (one present or cleanup needs it).
const TOKEN_LIFE: &str = "30 minutes";

/// The `transip` provider.
pub(super) struct TransIp {
    api: Api,
    base: String,
    account: String,
    /// A secret.
    key: RsaKeyPair,
    ttl: u64,
}

/// TransIP's `{"error": "…"}`.
fn message(body: &[u8]) -> Option<String> {
    let json: serde_json::Value = serde_json::from_slice(body).ok()?;
    json["error"].as_str().map(str::to_owned)
}

impl TransIp {
    /// Reads the account, the key and settings; fails naming what is
    /// missing or unreadable.
    pub(super) fn from_env(mut env: Env<'_>) -> Result<Self, DnsError> {
        let account = env.required("TRANSIP_ACCOUNT_NAME")?;
        let path = env.required("TRANSIP_PRIVATE_KEY_PATH")?;
        let ttl = api::ttl(&env, "TRANSIP_TTL", DEFAULT_TTL, 1)?;
        let base = api::base_url(&env, "TRANSIP_API_URL", BASE_URL)?;
        let api = Api::new(&env, "transip", "TRANSIP", message)?;
        env.finish()?;
        let text = std::fs::read_to_string(&path).map_err(|source| DnsError::EnvFile {
            variable: "TRANSIP_PRIVATE_KEY_PATH".to_owned(),
            path: path.clone().into(),
            source,
        })?;
        let key = api::rsa_key(&text).map_err(|problem| DnsError::BadEnv {
            variable: "TRANSIP_PRIVATE_KEY_PATH".to_owned(),
            problem: format!("`{path}` {problem}"),
        })?;
        Ok(TransIp {
            api,
            base,
            account,
            key,
            ttl,
        })
    }

    /// A new access token, as the bearer header.
    async fn token(&self, what: &str) -> Result<Vec<(HeaderName, HeaderValue)>, DnsError> {
        let rng = ring::rand::SystemRandom::new();
        let nonce: [u8; 16] = ring::rand::generate(&rng)
            .map(|n| n.expose())
            .unwrap_or_default();
        let nonce: String = nonce.iter().map(|b| format!("{b:02x}")).collect();
        let body = serde_json::json!({
            "login": self.account,
            "nonce": nonce,
            "read_only": false,
            "expiration_time": TOKEN_LIFE,
            "label": format!("gangway {nonce}"),
            "global_key": true,
        })
        .to_string();
        let signature = api::rsa_sign(
            &self.key,
            &ring::signature::RSA_PKCS1_SHA512,
            body.as_bytes(),
            "TRANSIP_PRIVATE_KEY_PATH",
        )?;
        let signature = base64::engine::general_purpose::STANDARD.encode(signature);
        let headers = [(
            HeaderName::from_static("signature"),
            api::secret_header(&signature, "TRANSIP_PRIVATE_KEY_PATH")?,
        )];
        let url = format!("{}/auth", self.base);
        let reply = self
            .api
            .send(&api::Call {
                action: what,
                method: Method::POST,
                url: &url,
                headers: &headers,
                body: None,
                text: Some(("application/json", &body)),
            })
            .await?;
        let reply = self.api.success(what, reply)?;
        let token: serde_json::Value = reply.json().map_err(|p| self.api.error(what, p))?;
        let token = token["token"].as_str().unwrap_or_default();
        api::authorization("Bearer", token, "TRANSIP_PRIVATE_KEY_PATH")
    }

    /// Sends the entry of `value` at `fqdn` with `method` (`POST` adds,
    /// `DELETE` removes).
    async fn entry(
        &self,
        verb: &str,
        method: Method,
        fqdn: &str,
        value: &str,
    ) -> Result<(), DnsError> {
        let what = format!("{verb} the TXT record `{fqdn}`");
        let auth = self.token(&what).await?;
        let domain = self
            .api
            .zone_by_get(fqdn, &auth, |name| format!("{}/domains/{name}", self.base))
            .await?;
        let name = api::relative(fqdn, &domain);
        let body = serde_json::json!({ "dnsEntry": {
            "name": if name.is_empty() { "@".to_owned() } else { name },
            "expire": self.ttl,
            "type": "TXT",
            "content": value,
        }});
        let url = format!("{}/domains/{domain}/dns", self.base);
        let reply = self
            .api
            .json(&what, method.clone(), &url, &auth, Some(&body))
            .await?;
        // A removal that finds no entry leaves what was wanted.
        if method == Method::DELETE && reply.status == http::StatusCode::NOT_FOUND {
            return Ok(());
        }
        self.api.success(&what, reply).map(drop)
    }

    async fn present(&self, fqdn: &str, value: &str) -> Result<(), DnsError> {
        self.entry("adding", Method::POST, fqdn, value).await
    }

    async fn cleanup(&self, fqdn: &str, value: &str) -> Result<(), DnsError> {
        self.entry("removing", Method::DELETE, fqdn, value).await
    }
}

api::dns_provider!(TransIp, "transip");
