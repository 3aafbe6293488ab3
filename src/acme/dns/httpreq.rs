//! The `httpreq` provider: POSTs `{"fqdn": …, "value": …}` to the user's
//! endpoint, at `<HTTPREQ_ENDPOINT>/present` and `<HTTPREQ_ENDPOINT>/cleanup`
//! (Traefik's convention), with basic authentication when
//! `HTTPREQ_USERNAME` and `HTTPREQ_PASSWORD` are set. A 2xx answer is
//! success.

use super::{DnsError, DnsProvider, Env};
use bytes::Bytes;
use futures_util::future::BoxFuture;
use http_body_util::{BodyExt, Full};
use std::time::Duration;

/// Longest exchange with the endpoint.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// Most of an error answer's body shown.
const BODY_SHOWN: usize = 500;

use super::api::Client;

/// The `httpreq` provider.
pub(super) struct HttpReq {
    endpoint: String,
    /// The `Authorization` header's value; a secret.
    authorization: Option<http::HeaderValue>,
    client: Client,
}

impl HttpReq {
    /// Reads `HTTPREQ_ENDPOINT` and the optional credentials.
    pub(super) fn from_env(mut env: Env<'_>) -> Result<Self, DnsError> {
        use base64::Engine as _;
        let endpoint = env.required("HTTPREQ_ENDPOINT")?;
        let username = env.optional("HTTPREQ_USERNAME")?;
        let password = env.optional("HTTPREQ_PASSWORD")?;
        if let Some(mode) = env
            .optional("HTTPREQ_MODE")?
            .filter(|m| !m.trim().is_empty())
        {
            return Err(DnsError::BadEnv {
                variable: "HTTPREQ_MODE".to_owned(),
                problem: format!(
                    "`{mode}` is not supported: gangway always posts the record's name and value"
                ),
            });
        }
        match (&username, &password) {
            (Some(_), None) => env.missing.push("HTTPREQ_PASSWORD".to_owned()),
            (None, Some(_)) => env.missing.push("HTTPREQ_USERNAME".to_owned()),
            _ => {}
        }
        env.finish()?;
        let bad = |problem: String| DnsError::BadEnv {
            variable: "HTTPREQ_ENDPOINT".to_owned(),
            problem,
        };
        let uri: http::Uri = endpoint
            .parse()
            .map_err(|e| bad(format!("`{endpoint}` is not a URL: {e}")))?;
        if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.host().is_none() {
            return Err(bad(format!(
                "`{endpoint}` is not an http:// or https:// URL"
            )));
        }
        let authorization = match (username, password) {
            (Some(u), Some(p)) => {
                let token = base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"));
                let mut value =
                    http::HeaderValue::try_from(format!("Basic {token}")).map_err(|_| {
                        DnsError::BadEnv {
                            variable: "HTTPREQ_USERNAME".to_owned(),
                            problem: "cannot be sent in a header".to_owned(),
                        }
                    })?;
                value.set_sensitive(true);
                Some(value)
            }
            _ => None,
        };
        let client = super::api::client().map_err(|reason| DnsError::Tls {
            provider: "httpreq",
            reason,
        })?;
        Ok(HttpReq {
            endpoint: endpoint.trim_end_matches('/').to_owned(),
            authorization,
            client,
        })
    }

    async fn post(&self, action: &'static str, fqdn: &str, value: &str) -> Result<(), DnsError> {
        let url = format!("{}/{action}", self.endpoint);
        let error = |reason: String| DnsError::HttpReq {
            url: url.clone(),
            fqdn: fqdn.to_owned(),
            reason,
        };
        let body = serde_json::json!({ "fqdn": fqdn, "value": value }).to_string();
        let mut request =
            http::Request::post(&url).header(http::header::CONTENT_TYPE, "application/json");
        if let Some(auth) = &self.authorization {
            request = request.header(http::header::AUTHORIZATION, auth.clone());
        }
        let request = request
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| error(format!("cannot build the request: {e}")))?;
        let exchange = async {
            let response = self
                .client
                .request(request)
                .await
                .map_err(|e| error(format!("no answer: {}", crate::cause::WithCauses(&e))))?;
            let status = response.status();
            let body = response
                .into_body()
                .collect()
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            Ok::<_, DnsError>((status, body))
        };
        let (status, body) = tokio::time::timeout(REQUEST_TIMEOUT, exchange)
            .await
            .map_err(|_| error(format!("no answer within {}s", REQUEST_TIMEOUT.as_secs())))??;
        if status.is_success() {
            return Ok(());
        }
        let text = String::from_utf8_lossy(&body);
        let shown: String = text.trim().chars().take(BODY_SHOWN).collect();
        Err(error(if shown.is_empty() {
            format!("it answered {status}")
        } else {
            format!("it answered {status}: {shown}")
        }))
    }
}

impl DnsProvider for HttpReq {
    fn name(&self) -> &'static str {
        "httpreq"
    }

    fn present<'a>(&'a self, fqdn: &'a str, value: &'a str) -> BoxFuture<'a, Result<(), DnsError>> {
        Box::pin(self.post("present", fqdn, value))
    }

    fn cleanup<'a>(&'a self, fqdn: &'a str, value: &'a str) -> BoxFuture<'a, Result<(), DnsError>> {
        Box::pin(self.post("cleanup", fqdn, value))
    }
}
