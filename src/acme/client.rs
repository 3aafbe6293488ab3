//! The wire side of ACME: the HTTPS client every exchange with a CA goes
//! through (the resolver's trust, `caServerName`, `clientTimeout`), and the
//! few signed requests instant-acme leaves to its caller — registering the
//! account with the key gangway stores (and an external account binding),
//! and downloading a certificate with its `Link` headers, which name the
//! alternate chains `preferredChain` chooses among.

use super::AcmeError;
use crate::client::control::ControlClient;
use base64::Engine as _;
use bytes::Bytes;
use http::{Method, Request, StatusCode};
use instant_acme::{BodyWrapper, BytesResponse};
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _};
use serde::Deserialize;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// Times one signed request is sent again after a `badNonce` refusal.
const NONCE_RETRIES: u32 = 5;

const JOSE_JSON: &str = "application/jose+json";

/// The HTTPS client of one resolver, shared by instant-acme and gangway's
/// own requests.
#[derive(Clone)]
pub(super) struct AcmeHttp {
    client: ControlClient<BodyWrapper<Bytes>>,
    /// `clientTimeout`: the longest one exchange may take, body included.
    timeout: Duration,
    /// `clientResponseHeaderTimeout`: the longest wait for an answer's head.
    header_timeout: Duration,
}

/// An exchange that did not end in an answer.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// No answer within `clientTimeout` or `clientResponseHeaderTimeout`.
    #[error("no answer within {0} ({1})")]
    Timeout(&'static str, crate::config::Duration),
    /// The connection or the exchange failed.
    #[error("{}", crate::cause::WithCauses(.0))]
    Failed(hyper_util::client::legacy::Error),
    /// The answer's body broke off.
    #[error("{}", crate::cause::WithCauses(.0))]
    Body(hyper::Error),
}

impl AcmeHttp {
    /// A client trusting what `tls` trusts; `server_name` (caServerName),
    /// when set, is the name the CA's certificate is verified for instead
    /// of the URL's host.
    pub(super) fn new(
        tls: rustls::ClientConfig,
        server_name: Option<rustls::pki_types::ServerName<'static>>,
        timeout: Duration,
        header_timeout: Duration,
    ) -> Self {
        let client = crate::client::control::Builder::with_config(tls)
            .server_name(server_name)
            .connect_timeout(header_timeout)
            .idle_timeout(Duration::from_secs(30))
            .build();
        AcmeHttp {
            client,
            timeout,
            header_timeout,
        }
    }

    /// Sends `request`; the answer's head and whole body.
    async fn send(
        &self,
        request: Request<BodyWrapper<Bytes>>,
    ) -> Result<(http::response::Parts, Bytes), AcmeError> {
        let url = request.uri().to_string();
        let whole = async {
            let response = self.exchange(request).await?;
            let (parts, body) = response.into_parts();
            let body = http_body_util::BodyExt::collect(body)
                .await
                .map_err(WireError::Body)?
                .to_bytes();
            Ok((parts, body))
        };
        let outcome = match tokio::time::timeout(self.timeout, whole).await {
            Ok(outcome) => outcome,
            Err(_) => Err(WireError::Timeout(
                "clientTimeout",
                crate::config::Duration(self.timeout),
            )),
        };
        outcome.map_err(|e| AcmeError::Wire {
            url,
            error: Box::new(e),
        })
    }

    async fn exchange(
        &self,
        request: Request<BodyWrapper<Bytes>>,
    ) -> Result<http::Response<hyper::body::Incoming>, WireError> {
        match tokio::time::timeout(self.header_timeout, self.client.request(request)).await {
            Ok(answer) => answer.map_err(WireError::Failed),
            Err(_) => Err(WireError::Timeout(
                "clientResponseHeaderTimeout",
                crate::config::Duration(self.header_timeout),
            )),
        }
    }
}

impl instant_acme::HttpClient for AcmeHttp {
    fn request(
        &self,
        req: Request<BodyWrapper<Bytes>>,
    ) -> Pin<Box<dyn Future<Output = Result<BytesResponse, instant_acme::Error>> + Send>> {
        let http = self.clone();
        Box::pin(async move {
            http.exchange(req)
                .await
                .map(BytesResponse::from)
                .map_err(|e| instant_acme::Error::Other(Box::new(e)))
        })
    }
}

/// The parts of a CA's directory (RFC 8555 §7.1.1) gangway reads itself.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Directory {
    new_nonce: String,
    new_account: String,
    #[serde(default)]
    meta: Meta,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Meta {
    #[serde(default)]
    external_account_required: bool,
    /// The profiles the CA offers, by name, with their descriptions.
    #[serde(default)]
    profiles: HashMap<String, String>,
}

impl Directory {
    /// The profiles the CA offers, sorted; empty when it has none.
    pub(super) fn profiles(&self) -> Vec<String> {
        let mut names: Vec<String> = self.meta.profiles.keys().cloned().collect();
        names.sort();
        names
    }
}

/// An external account binding (RFC 8555 §7.3.4): the key identifier and
/// the HMAC key the CA gave.
pub(super) struct Binding {
    pub kid: String,
    pub key: Vec<u8>,
}

/// An account registered with a CA: instant-acme's, for orders, and what
/// gangway signs its own requests with.
pub(super) struct Session {
    /// The account, for orders.
    pub account: instant_acme::Account,
    /// The CA's directory.
    pub directory: Directory,
    http: AcmeHttp,
    key: EcdsaKeyPair,
    /// The account URL.
    kid: String,
}

impl Session {
    /// Registers the account of `key_der` (PKCS#8, P-256) with the CA of
    /// `directory_url`, or finds it again: the CA answers with the
    /// account it already has for this key.
    pub(super) async fn open(
        http: &AcmeHttp,
        directory_url: &str,
        key_der: &[u8],
        contact: &[String],
        binding: Option<&Binding>,
    ) -> Result<Session, AcmeError> {
        let rng = ring::rand::SystemRandom::new();
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, key_der, &rng)
            .map_err(|_| AcmeError::Order("the account key is not a P-256 key".to_owned()))?;
        let request = Request::get(directory_url)
            .body(BodyWrapper::default())
            .map_err(|e| AcmeError::Protocol(e.to_string()))?;
        let (parts, body) = http.send(request).await?;
        if !parts.status.is_success() {
            return Err(refused(parts.status, &body));
        }
        let directory: Directory = serde_json::from_slice(&body).map_err(|e| {
            AcmeError::Protocol(format!(
                "the directory at {directory_url} does not read: {e}"
            ))
        })?;
        if directory.meta.external_account_required && binding.is_none() {
            return Err(AcmeError::BindingRequired {
                url: directory_url.to_owned(),
            });
        }
        let jwk = jwk(&key);
        let mut payload = serde_json::json!({
            "termsOfServiceAgreed": true,
            "contact": contact,
        });
        if let Some(binding) = binding {
            payload["externalAccountBinding"] =
                external_binding(binding, &jwk, &directory.new_account);
        }
        let signer = Signer {
            key: &key,
            id: KeyId::Jwk(&jwk),
        };
        let (parts, _) = signer
            .post(http, &directory, &directory.new_account, Some(&payload))
            .await?;
        let kid = parts
            .headers
            .get(http::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| {
                AcmeError::Protocol("the new account's answer has no Location".to_owned())
            })?
            .to_owned();
        let account = instant_acme::Account::builder_with_http(Box::new(http.clone()))
            .from_parts(
                kid.clone(),
                rustls::pki_types::PrivatePkcs8KeyDer::from(key_der),
                directory_url.to_owned(),
            )
            .await
            .map_err(|e| AcmeError::from_client(directory_url, e))?;
        Ok(Session {
            account,
            directory,
            http: http.clone(),
            key,
            kid,
        })
    }

    /// Fetches `url` with a signed POST-as-GET (RFC 8555 §6.3).
    pub(super) async fn fetch(
        &self,
        url: &str,
    ) -> Result<(http::response::Parts, Bytes), AcmeError> {
        let signer = Signer {
            key: &self.key,
            id: KeyId::Kid(&self.kid),
        };
        signer
            .post(&self.http, &self.directory, url, None::<&()>)
            .await
    }
}

/// How a signed request names its key (RFC 8555 §6.2).
enum KeyId<'a> {
    /// The public key itself, for a new account.
    Jwk(&'a serde_json::Value),
    /// The account URL.
    Kid(&'a str),
}

struct Signer<'a> {
    key: &'a EcdsaKeyPair,
    id: KeyId<'a>,
}

impl Signer<'_> {
    /// Posts `payload` (none: POST-as-GET) signed, with a fresh nonce, and
    /// again with a new one when the CA refuses the nonce (RFC 8555 §6.5).
    /// Safe to repeat: a request refused for its nonce had no effect.
    async fn post<T: serde::Serialize>(
        &self,
        http: &AcmeHttp,
        directory: &Directory,
        url: &str,
        payload: Option<&T>,
    ) -> Result<(http::response::Parts, Bytes), AcmeError> {
        let payload = match payload {
            Some(p) => b64(&serde_json::to_vec(p).unwrap_or_default()),
            None => String::new(),
        };
        let mut retries = 0;
        loop {
            let nonce = nonce(http, &directory.new_nonce).await?;
            let body = self.sign(url, &nonce, &payload)?;
            let request = Request::builder()
                .method(Method::POST)
                .uri(url)
                .header(http::header::CONTENT_TYPE, JOSE_JSON)
                .body(BodyWrapper::from(body))
                .map_err(|e| AcmeError::Protocol(e.to_string()))?;
            let (parts, body) = http.send(request).await?;
            if parts.status.is_success() {
                return Ok((parts, body));
            }
            let error = refused(parts.status, &body);
            if !(error.is_bad_nonce() && retries < NONCE_RETRIES) {
                return Err(error);
            }
            retries += 1;
        }
    }

    /// The flattened JWS (RFC 7515 §7.2.2) of `payload` (base64url).
    fn sign(&self, url: &str, nonce: &str, payload: &str) -> Result<Vec<u8>, AcmeError> {
        let mut protected = serde_json::json!({ "alg": "ES256", "nonce": nonce, "url": url });
        match &self.id {
            KeyId::Jwk(jwk) => protected["jwk"] = (*jwk).clone(),
            KeyId::Kid(kid) => protected["kid"] = serde_json::Value::from(*kid),
        }
        let protected = b64(protected.to_string().as_bytes());
        let signature = self
            .key
            .sign(
                &ring::rand::SystemRandom::new(),
                format!("{protected}.{payload}").as_bytes(),
            )
            .map_err(|_| AcmeError::Order("signing the request failed".to_owned()))?;
        let jws = serde_json::json!({
            "protected": protected,
            "payload": payload,
            "signature": b64(signature.as_ref()),
        });
        Ok(jws.to_string().into_bytes())
    }
}

/// A fresh nonce from the CA (RFC 8555 §7.2).
async fn nonce(http: &AcmeHttp, url: &str) -> Result<String, AcmeError> {
    let request = Request::head(url)
        .body(BodyWrapper::default())
        .map_err(|e| AcmeError::Protocol(e.to_string()))?;
    let (parts, body) = http.send(request).await?;
    if !parts.status.is_success() {
        return Err(refused(parts.status, &body));
    }
    parts
        .headers
        .get("replay-nonce")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .ok_or_else(|| AcmeError::Protocol("the CA's newNonce gave no Replay-Nonce".to_owned()))
}

/// The public JWK of a P-256 key (RFC 7518 §6.2).
fn jwk(key: &EcdsaKeyPair) -> serde_json::Value {
    // The uncompressed point: 0x04, then x and y.
    let xy = key.public_key().as_ref().get(1..).unwrap_or_default();
    let (x, y) = xy.split_at(xy.len() / 2);
    serde_json::json!({ "crv": "P-256", "kty": "EC", "x": b64(x), "y": b64(y) })
}

/// The external account binding: the account's JWK signed with the CA's
/// HMAC key (RFC 8555 §7.3.4).
fn external_binding(binding: &Binding, jwk: &serde_json::Value, url: &str) -> serde_json::Value {
    let protected = b64(
        serde_json::json!({ "alg": "HS256", "kid": binding.kid, "url": url })
            .to_string()
            .as_bytes(),
    );
    let payload = b64(jwk.to_string().as_bytes());
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &binding.key);
    let tag = ring::hmac::sign(&key, format!("{protected}.{payload}").as_bytes());
    serde_json::json!({ "protected": protected, "payload": payload, "signature": b64(tag.as_ref()) })
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The error for a CA's answer with status `status`: its problem document
/// (RFC 7807) when it sent one.
pub(super) fn refused(status: StatusCode, body: &[u8]) -> AcmeError {
    match serde_json::from_slice::<instant_acme::Problem>(body) {
        Ok(problem) => AcmeError::from_problem(Some(status.as_u16()), &problem),
        Err(_) => AcmeError::Refused {
            status: status.as_u16(),
            detail: String::from_utf8_lossy(body).chars().take(300).collect(),
            kind: None,
            retry_after: None,
        },
    }
}

/// The `Link` targets of relation `rel` in an answer's head (RFC 8288),
/// as ACME names alternate chains (RFC 8555 §7.4.2).
pub(super) fn links(parts: &http::response::Parts, rel: &str) -> Vec<String> {
    let mut out = Vec::new();
    for value in parts.headers.get_all(http::header::LINK) {
        let Ok(text) = value.to_str() else { continue };
        for link in text.split(',') {
            let mut pieces = link.split(';').map(str::trim);
            let Some(target) = pieces
                .next()
                .and_then(|t| t.strip_prefix('<'))
                .and_then(|t| t.strip_suffix('>'))
            else {
                continue;
            };
            let named = pieces.any(|p| {
                p.strip_prefix("rel=")
                    .is_some_and(|r| r.trim_matches('"').eq_ignore_ascii_case(rel))
            });
            if named {
                out.push(target.to_owned());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alternate_chains_are_read_from_link_headers() {
        let response = http::Response::builder()
            .header("link", r#"<https://ca/dir>;rel="index""#)
            .header(
                "link",
                r#"<https://ca/cert/1/1>;rel="alternate", <https://ca/cert/1/2>; rel=alternate"#,
            )
            .body(())
            .unwrap();
        let (parts, ()) = response.into_parts();
        assert_eq!(
            links(&parts, "alternate"),
            ["https://ca/cert/1/1", "https://ca/cert/1/2"]
        );
        assert_eq!(links(&parts, "index"), ["https://ca/dir"]);
        assert!(links(&parts, "up").is_empty());
    }

    #[test]
    fn a_binding_signs_the_accounts_key_with_the_cas_hmac_key() {
        let jwk = serde_json::json!({ "crv": "P-256", "kty": "EC", "x": "AA", "y": "BB" });
        let binding = Binding {
            kid: "kid-1".to_owned(),
            key: b"secret".to_vec(),
        };
        let eab = external_binding(&binding, &jwk, "https://ca/new-acct");
        let b64d = |s: &serde_json::Value| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(s.as_str().unwrap())
                .unwrap()
        };
        let protected: serde_json::Value =
            serde_json::from_slice(&b64d(&eab["protected"])).unwrap();
        assert_eq!(protected["alg"], "HS256");
        assert_eq!(protected["kid"], "kid-1");
        assert_eq!(protected["url"], "https://ca/new-acct");
        let payload: serde_json::Value = serde_json::from_slice(&b64d(&eab["payload"])).unwrap();
        assert_eq!(payload, jwk);
        let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, b"secret");
        let signed = format!(
            "{}.{}",
            eab["protected"].as_str().unwrap(),
            eab["payload"].as_str().unwrap()
        );
        assert!(ring::hmac::verify(&key, signed.as_bytes(), &b64d(&eab["signature"])).is_ok());
    }
}
