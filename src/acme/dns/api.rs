//! What the providers that call a DNS host's HTTP API share: one HTTPS
//! client (the web PKI's roots, gangway's TLS provider; plain `http://`
//! only when a base URL variable says so), JSON requests under a time
//! limit, and retries with backoff while the API says to slow down or is
//! briefly unavailable.

use super::{DnsError, Env};
use bytes::Bytes;
use http::{HeaderName, HeaderValue, Method, StatusCode};
use http_body_util::{BodyExt, Full};
use std::time::Duration;

/// Default time limit of one request, unless `<PREFIX>_HTTP_TIMEOUT` says
/// otherwise.
const HTTP_TIMEOUT: Duration = Duration::from_secs(30);
/// Attempts of one request while the API answers 429 or 502–504.
const ATTEMPTS: u32 = 4;
/// The first wait between two attempts; it doubles after each.
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// Longest wait a `Retry-After` may ask for before gangway gives up on
/// the request (the order's own backoff takes over).
const LONGEST_RETRY_AFTER: Duration = Duration::from_secs(30);
/// Most of an answer's text shown when it is not the API's error shape.
const BODY_SHOWN: usize = 300;

/// The HTTPS client every API provider uses.
pub(super) type Client = crate::client::control::ControlClient<Full<Bytes>>;

/// Why a DNS host's API did not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum ApiProblem {
    /// The credentials were refused (401 or 403).
    #[error("the API refused the credentials ({status}): {message}")]
    Credentials {
        /// The answer's status.
        status: StatusCode,
        /// The provider's own message.
        message: String,
    },
    /// Any other error answer.
    #[error("the API answered {status}: {message}")]
    Status {
        /// The answer's status.
        status: StatusCode,
        /// The provider's own message.
        message: String,
    },
    /// Still rate limited (or unavailable) after every attempt.
    #[error("the API still answered {status} after {attempts} attempts with backoff: {message}")]
    RateLimited {
        /// The last answer's status.
        status: StatusCode,
        /// How many requests were made.
        attempts: u32,
        /// The provider's own message.
        message: String,
    },
    /// The account holds no zone for the name.
    #[error("the account has no zone for it (asked for {})", tried.join(", "))]
    NoZone {
        /// The zone names asked for, longest first.
        tried: Vec<String>,
    },
    /// The API said no without an error status (Duck DNS's `KO`).
    #[error("the API refused it: {message}")]
    Refused {
        /// The provider's own answer.
        message: String,
    },
    /// The provider serves no names outside its own domain.
    #[error("the provider serves only names under {suffix}")]
    Outside {
        /// Its domain.
        suffix: &'static str,
    },
    /// The answer is not what the API documents.
    #[error("unreadable answer ({status}): {reason}")]
    Unreadable {
        /// The answer's status.
        status: StatusCode,
        /// What is wrong with it.
        reason: String,
    },
    /// No answer came.
    #[error("no answer: {0}")]
    Transport(String),
    /// No answer within the time limit.
    #[error("no answer within {}s", .0.as_secs())]
    Timeout(Duration),
}

/// An API answer gangway can act on (a 2xx, or an error the provider
/// reads itself, such as 404).
pub(super) struct Reply {
    /// Its status.
    pub status: StatusCode,
    /// Its body.
    pub body: Bytes,
    /// Its headers (a session cookie).
    pub headers: http::HeaderMap,
}

impl Reply {
    /// The body as `T`, or why not.
    pub fn json<T: serde::de::DeserializeOwned>(&self) -> Result<T, ApiProblem> {
        serde_json::from_slice(&self.body).map_err(|e| ApiProblem::Unreadable {
            status: self.status,
            reason: e.to_string(),
        })
    }
}

/// One provider's access to its API.
pub(super) struct Api {
    provider: &'static str,
    client: Client,
    timeout: Duration,
    /// Reads the provider's own error message out of an error answer.
    message: fn(&[u8]) -> Option<String>,
    /// Whether an error answer other than 429 says to slow down (Route 53
    /// answers 400 `Throttling`).
    throttled: fn(StatusCode, &[u8]) -> bool,
}

/// A request to send.
pub(super) struct Call<'a> {
    /// What is being done, for errors and logs (`adding the TXT record …`).
    pub action: &'a str,
    /// The method.
    pub method: Method,
    /// The whole URL.
    pub url: &'a str,
    /// Extra headers (authentication); values marked sensitive.
    pub headers: &'a [(HeaderName, HeaderValue)],
    /// A JSON body, if any.
    pub body: Option<&'a serde_json::Value>,
    /// Or a body of another type: (content type, text).
    pub text: Option<(&'a str, &'a str)>,
}

impl Api {
    /// The API of `provider`, with `<prefix>_HTTP_TIMEOUT` read from `env`.
    pub(super) fn new(
        env: &Env<'_>,
        provider: &'static str,
        prefix: &str,
        message: fn(&[u8]) -> Option<String>,
    ) -> Result<Self, DnsError> {
        Self::with_timeout(env, provider, prefix, message, HTTP_TIMEOUT)
    }

    /// As [`Api::new`], with the provider's own default time limit.
    pub(super) fn with_timeout(
        env: &Env<'_>,
        provider: &'static str,
        prefix: &str,
        message: fn(&[u8]) -> Option<String>,
        default: Duration,
    ) -> Result<Self, DnsError> {
        let timeout = env.seconds(&format!("{prefix}_HTTP_TIMEOUT"), default)?;
        Ok(Api {
            provider,
            client: client().map_err(|e| DnsError::Tls {
                provider,
                reason: e,
            })?,
            timeout: if timeout.is_zero() { default } else { timeout },
            message,
            throttled: |_, _| false,
        })
    }

    /// The same, also retrying the error answers `throttled` recognises.
    pub(super) fn with_throttle(mut self, throttled: fn(StatusCode, &[u8]) -> bool) -> Self {
        self.throttled = throttled;
        self
    }

    /// The error of `call` for `problem`.
    pub(super) fn error(&self, action: &str, problem: ApiProblem) -> DnsError {
        DnsError::Api {
            provider: self.provider,
            action: action.to_owned(),
            problem,
        }
    }

    /// The error of `call` for an answer the provider refused: its status
    /// with the provider's own message.
    pub(super) fn refused(&self, action: &str, reply: &Reply) -> DnsError {
        self.error(
            action,
            ApiProblem::Status {
                status: reply.status,
                message: self.message_of(&reply.body, reply.status),
            },
        )
    }

    /// Sends `call`, again after a backoff while the API answers 429 or
    /// 502–504 (honouring a `Retry-After` in seconds). A 2xx answer, and
    /// a 404 the caller may expect, come back as a [`Reply`]; any other
    /// answer is an error with the provider's own message.
    pub(super) async fn send(&self, call: &Call<'_>) -> Result<Reply, DnsError> {
        let mut backoff = FIRST_BACKOFF;
        let mut attempt = 1;
        loop {
            let (status, headers, body) = self.once(call).await?;
            if status.is_success() || status == StatusCode::NOT_FOUND {
                return Ok(Reply {
                    status,
                    body,
                    headers,
                });
            }
            let retry_after = headers
                .get(http::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(Duration::from_secs);
            let message = self.message_of(&body, status);
            let again = matches!(
                status,
                StatusCode::TOO_MANY_REQUESTS
                    | StatusCode::BAD_GATEWAY
                    | StatusCode::SERVICE_UNAVAILABLE
                    | StatusCode::GATEWAY_TIMEOUT
            ) || (self.throttled)(status, &body);
            if !again {
                let problem = if matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN)
                {
                    ApiProblem::Credentials { status, message }
                } else {
                    ApiProblem::Status { status, message }
                };
                return Err(self.error(call.action, problem));
            }
            let wait = retry_after.unwrap_or(backoff);
            if attempt >= ATTEMPTS || wait > LONGEST_RETRY_AFTER {
                return Err(self.error(
                    call.action,
                    ApiProblem::RateLimited {
                        status,
                        attempts: attempt,
                        message,
                    },
                ));
            }
            tracing::warn!(
                provider = self.provider,
                "{}: {}: the API answered {status}: {message}; trying again in {}s",
                self.provider,
                call.action,
                wait.as_secs()
            );
            tokio::time::sleep(wait).await;
            backoff *= 2;
            attempt += 1;
        }
    }

    /// One exchange: the status, the headers, the body.
    async fn once(
        &self,
        call: &Call<'_>,
    ) -> Result<(StatusCode, http::HeaderMap, Bytes), DnsError> {
        let fail = |problem: ApiProblem| self.error(call.action, problem);
        let mut request = http::Request::builder()
            .method(call.method.clone())
            .uri(call.url)
            .header(http::header::ACCEPT, "application/json");
        for (name, value) in call.headers {
            request = request.header(name, value.clone());
        }
        let body = match (call.body, call.text) {
            (Some(json), _) => {
                request = request.header(http::header::CONTENT_TYPE, "application/json");
                Bytes::from(json.to_string())
            }
            (None, Some((content_type, text))) => {
                request = request.header(http::header::CONTENT_TYPE, content_type);
                Bytes::copy_from_slice(text.as_bytes())
            }
            (None, None) => Bytes::new(),
        };
        let request = request.body(Full::new(body)).map_err(|e| {
            fail(ApiProblem::Transport(format!(
                "cannot build the request: {e}"
            )))
        })?;
        let exchange = async {
            let response = self.client.request(request).await.map_err(|e| {
                fail(ApiProblem::Transport(
                    crate::cause::WithCauses(&e).to_string(),
                ))
            })?;
            let (head, body) = response.into_parts();
            let body = body.collect().await.map(|b| b.to_bytes()).map_err(|e| {
                fail(ApiProblem::Transport(
                    crate::cause::WithCauses(&e).to_string(),
                ))
            })?;
            Ok::<_, DnsError>((head.status, head.headers, body))
        };
        tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| fail(ApiProblem::Timeout(self.timeout)))?
    }

    /// The provider's message in an error answer, else its text cut short,
    /// else the status's reason.
    pub(super) fn message_of(&self, body: &[u8], status: StatusCode) -> String {
        if let Some(m) = (self.message)(body).filter(|m| !m.trim().is_empty()) {
            return m;
        }
        // On one line: an HTML error page's line breaks would split the
        // sentence in a log.
        let text = String::from_utf8_lossy(body);
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let shown: String = text.chars().take(BODY_SHOWN).collect();
        if shown.is_empty() {
            status.canonical_reason().unwrap_or("no message").to_owned()
        } else {
            shown
        }
    }
}

/// An HTTPS client trusting the web PKI's roots.
pub(super) fn client() -> Result<Client, rustls::Error> {
    Ok(crate::client::control::Builder::web_pki()?.build())
}

/// A header value holding a secret (never printed by `Debug`), or the
/// error naming `variable` when it cannot be one.
pub(super) fn secret_header(value: &str, variable: &str) -> Result<HeaderValue, DnsError> {
    let mut header = HeaderValue::try_from(value).map_err(|_| DnsError::BadEnv {
        variable: variable.to_owned(),
        problem: "holds characters that cannot be sent in a header".to_owned(),
    })?;
    header.set_sensitive(true);
    Ok(header)
}

/// The API's base URL from `variable`, else `default`, without a final
/// slash; an error naming the variable when it is not an http(s) URL.
pub(super) fn base_url(env: &Env<'_>, variable: &str, default: &str) -> Result<String, DnsError> {
    let url = env
        .optional(variable)?
        .unwrap_or_else(|| default.to_owned());
    let bad = |problem: String| DnsError::BadEnv {
        variable: variable.to_owned(),
        problem,
    };
    let uri: http::Uri = url
        .parse()
        .map_err(|e| bad(format!("`{url}` is not a URL: {e}")))?;
    if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.host().is_none() {
        return Err(bad(format!("`{url}` is not an http:// or https:// URL")));
    }
    Ok(url.trim_end_matches('/').to_owned())
}

/// The zone names that may hold `fqdn`, longest first: every suffix of
/// two labels or more (a top-level domain is never an account's zone).
pub(super) fn zone_candidates(fqdn: &str) -> Vec<String> {
    let name = fqdn.trim_end_matches('.');
    let labels: Vec<&str> = name.split('.').collect();
    (0..labels.len().saturating_sub(1))
        .map(|i| labels[i..].join("."))
        .collect()
}

/// `fqdn` (with or without its final dot) relative to `zone`: `@`-free
/// label(s) before it, or empty at the apex.
pub(super) fn relative(fqdn: &str, zone: &str) -> String {
    let name = fqdn.trim_end_matches('.');
    let zone = zone.trim_end_matches('.');
    if name.eq_ignore_ascii_case(zone) {
        return String::new();
    }
    name.strip_suffix(zone)
        .and_then(|n| n.strip_suffix('.'))
        .unwrap_or(name)
        .to_owned()
}

impl Api {
    /// Sends `method url` with `headers` and, if any, a JSON `body`.
    pub(super) async fn json(
        &self,
        action: &str,
        method: Method,
        url: &str,
        headers: &[(HeaderName, HeaderValue)],
        body: Option<&serde_json::Value>,
    ) -> Result<Reply, DnsError> {
        self.send(&Call {
            action,
            method,
            url,
            headers,
            body,
            text: None,
        })
        .await
    }

    /// `reply` when it is a 2xx, else the refusal with the provider's own
    /// message (a 404 the caller did not expect).
    pub(super) fn success(&self, action: &str, reply: Reply) -> Result<Reply, DnsError> {
        if reply.status.is_success() {
            Ok(reply)
        } else {
            Err(self.refused(action, &reply))
        }
    }
}

/// The `Authorization` header `<scheme> <secret>`, marked sensitive; the
/// error names `variable` when the secret cannot be sent in a header.
pub(super) fn authorization(
    scheme: &str,
    secret: &str,
    variable: &str,
) -> Result<Vec<(HeaderName, HeaderValue)>, DnsError> {
    Ok(vec![(
        http::header::AUTHORIZATION,
        secret_header(&format!("{scheme} {secret}"), variable)?,
    )])
}

/// The TTL in `variable` (seconds), else `default`, raised to the
/// provider's smallest `min`.
pub(super) fn ttl(env: &Env<'_>, variable: &str, default: u64, min: u64) -> Result<u64, DnsError> {
    Ok(env
        .seconds(variable, Duration::from_secs(default))?
        .as_secs()
        .max(min))
}

/// Implements [`DnsProvider`](super::DnsProvider) for a provider type
/// whose own `async fn present` and `async fn cleanup` do the work, under
/// the name `dnsChallenge.provider` gives it.
macro_rules! dns_provider {
    ($provider:ident, $name:literal) => {
        impl super::DnsProvider for $provider {
            fn name(&self) -> &'static str {
                $name
            }

            fn present<'a>(
                &'a self,
                fqdn: &'a str,
                value: &'a str,
            ) -> futures_util::future::BoxFuture<'a, Result<(), super::DnsError>> {
                Box::pin($provider::present(self, fqdn, value))
            }

            fn cleanup<'a>(
                &'a self,
                fqdn: &'a str,
                value: &'a str,
            ) -> futures_util::future::BoxFuture<'a, Result<(), super::DnsError>> {
                Box::pin($provider::cleanup(self, fqdn, value))
            }
        }
    };
}
pub(super) use dns_provider;

impl Api {
    /// Deletes each of `urls` (a 404 means it is gone already, which is
    /// what was wanted).
    pub(super) async fn delete_each(
        &self,
        action: &str,
        urls: Vec<String>,
        headers: &[(HeaderName, HeaderValue)],
    ) -> Result<(), DnsError> {
        for url in urls {
            self.json(action, Method::DELETE, &url, headers, None)
                .await?;
        }
        Ok(())
    }
}

impl Api {
    /// The zone holding `fqdn`: the first of its [`zone_candidates`],
    /// longest first, for which `GET url(candidate)` answers a 2xx.
    pub(super) async fn zone_by_get(
        &self,
        fqdn: &str,
        headers: &[(HeaderName, HeaderValue)],
        url: impl Fn(&str) -> String,
    ) -> Result<String, DnsError> {
        let action = format!("finding the zone of `{fqdn}`");
        let tried = zone_candidates(fqdn);
        for name in &tried {
            let reply = self
                .json(&action, Method::GET, &url(name), headers, None)
                .await?;
            if reply.status.is_success() {
                return Ok(name.clone());
            }
        }
        Err(self.error(&action, ApiProblem::NoZone { tried }))
    }
}

impl Api {
    /// Posts `pairs` as a form to an OAuth 2.0 token endpoint (a client
    /// credentials or JWT grant) and gives the `Authorization: Bearer`
    /// header of the access token it answers; errors name `variable`.
    pub(super) async fn bearer_token(
        &self,
        action: &str,
        url: &str,
        pairs: &[(&str, &str)],
        variable: &str,
    ) -> Result<Vec<(HeaderName, HeaderValue)>, DnsError> {
        let text = form(pairs);
        let reply = self
            .send(&Call {
                action,
                method: Method::POST,
                url,
                headers: &[],
                body: None,
                text: Some(("application/x-www-form-urlencoded", &text)),
            })
            .await?;
        let reply = self.success(action, reply)?;
        let token: serde_json::Value = reply.json().map_err(|p| self.error(action, p))?;
        let Some(token) = token["access_token"].as_str() else {
            return Err(self.error(
                action,
                ApiProblem::Unreadable {
                    status: reply.status,
                    reason: "the token endpoint's answer has no access_token".to_owned(),
                },
            ));
        };
        authorization("Bearer", token, variable)
    }
}

/// The `Authorization: Basic` header of `user` and `password`, marked
/// sensitive.
pub(super) fn basic(
    user: &str,
    password: &str,
    variable: &str,
) -> Result<Vec<(HeaderName, HeaderValue)>, DnsError> {
    use base64::Engine as _;
    let pair = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    authorization("Basic", &pair, variable)
}

/// A TXT set's values with `value` added, or None when it holds it
/// already (values may come back quoted).
pub(super) fn with_value(values: &[String], value: &str) -> Option<Vec<String>> {
    if values.iter().any(|v| v.trim_matches('"') == value) {
        return None;
    }
    let mut all = values.to_vec();
    all.push(value.to_owned());
    Some(all)
}

/// A TXT set's values without `value`, or None when it does not hold it.
pub(super) fn without_value(values: &[String], value: &str) -> Option<Vec<String>> {
    let rest: Vec<String> = values
        .iter()
        .filter(|v| v.trim_matches('"') != value)
        .cloned()
        .collect();
    (rest.len() != values.len()).then_some(rest)
}

/// `pairs` as `application/x-www-form-urlencoded` text (also a query).
pub(super) fn form(pairs: &[(&str, &str)]) -> String {
    use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
    pairs
        .iter()
        .map(|(k, v)| {
            format!(
                "{}={}",
                utf8_percent_encode(k, NON_ALPHANUMERIC),
                utf8_percent_encode(v, NON_ALPHANUMERIC)
            )
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// The RSA private key in PEM `text` (PKCS#8 `PRIVATE KEY` or PKCS#1 `RSA
/// PRIVATE KEY`), or why not.
pub(super) fn rsa_key(text: &str) -> Result<ring::signature::RsaKeyPair, String> {
    use base64::Engine as _;
    use ring::signature::RsaKeyPair;
    let pkcs1 = text.contains("BEGIN RSA PRIVATE KEY");
    let b64: String = text
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .flat_map(|l| l.trim().chars())
        .collect();
    let der = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .map_err(|_| "is not a PEM private key".to_owned())?;
    let key = if pkcs1 {
        RsaKeyPair::from_der(&der)
    } else {
        RsaKeyPair::from_pkcs8(&der)
    };
    key.map_err(|e| format!("is not an RSA private key gangway can use ({e})"))
}

/// `data` signed with `key` (RSA PKCS#1 v1.5 with `padding`'s hash); the
/// error names `variable` when the key cannot sign.
pub(super) fn rsa_sign(
    key: &ring::signature::RsaKeyPair,
    padding: &'static dyn ring::signature::RsaEncoding,
    data: &[u8],
    variable: &str,
) -> Result<Vec<u8>, DnsError> {
    let rng = ring::rand::SystemRandom::new();
    let mut signature = vec![0; key.public().modulus_len()];
    key.sign(padding, &rng, data, &mut signature)
        .map_err(|_| DnsError::BadEnv {
            variable: variable.to_owned(),
            problem: "its private key cannot sign".to_owned(),
        })?;
    Ok(signature)
}
