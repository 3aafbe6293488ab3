//! The HTTP provider: the whole dynamic configuration read from an
//! endpoint every `pollInterval`, as Traefik's `providers.http` does.
//!
//! The answer is read as the file provider reads a YAML file (JSON is
//! YAML too, and Traefik decodes the answer with its YAML reader), so a
//! mistake in one object leaves out that object only. An answer that is
//! not `200 OK`, does not arrive within `pollTimeout`, is larger than
//! `maxResponseBodySize` or does not parse keeps the last good
//! configuration in use, and the API shows why. An answer identical to
//! the last one changes nothing; like Traefik, the provider compares
//! bodies rather than asking with `If-None-Match`.

use super::Snapshot;
use super::file::read_document_for;
use crate::client::ClientError;
use crate::config::format::Format;
use crate::config::problem::ProviderError;
use crate::config::provenance::ProviderDetail;
use crate::config::static_config::HttpProvider;
use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode, Uri};
use http_body_util::{BodyExt, Empty, Limited};
use std::time::Duration;
use tokio::sync::mpsc;

const PROVIDER: &str = "http";

type Client = crate::client::control::ControlClient<Empty<Bytes>>;

/// Why the HTTP provider cannot start.
#[derive(Debug, thiserror::Error)]
pub enum HttpProviderError {
    /// No endpoint given.
    #[error("providers.http.endpoint: give the URL that answers with the configuration")]
    NoEndpoint,
    /// An endpoint that is not an `http://` or `https://` URL.
    #[error("providers.http.endpoint `{endpoint}`: {problem}")]
    Endpoint {
        /// The endpoint as given.
        endpoint: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A poll interval of zero.
    #[error("providers.http.pollInterval: must be more than 0s")]
    PollInterval,
    /// A header whose name or value cannot be sent.
    #[error("providers.http.headers.{name}: {problem}")]
    Header {
        /// The header's name, as given.
        name: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A body size that is not a whole number.
    #[error(
        "providers.http.maxResponseBodySize: `{0}` is not a whole number of bytes (-1: no limit)"
    )]
    MaxBodySize(String),
    /// TLS settings that cannot be used.
    #[error("providers.http.tls: {0}")]
    Tls(ClientError),
}

/// Why one poll gave no configuration.
#[derive(Debug, thiserror::Error)]
enum FetchError {
    /// The request could not be made or sent.
    #[error("cannot ask the endpoint: {0}")]
    Request(String),
    /// No whole answer within `pollTimeout`.
    #[error("no answer within {0:?} (providers.http.pollTimeout)")]
    Timeout(Duration),
    /// An answer other than 200.
    #[error("answered {0}, not 200 OK")]
    Status(StatusCode),
    /// An answer larger than `maxResponseBodySize`.
    #[error("the answer is larger than {0} bytes (providers.http.maxResponseBodySize)")]
    TooLarge(u64),
    /// The answer's body broke off.
    #[error("the answer broke off: {0}")]
    Body(String),
    /// An answer with no configuration in it at all.
    #[error("the answer is empty; answer `{{}}` for a configuration with no objects")]
    Empty,
    /// An answer that is not UTF-8 text.
    #[error("the answer is not UTF-8 text")]
    NotText,
}

/// The provider's options, checked, with its client.
struct Poller {
    endpoint: String,
    uri: Uri,
    headers: HeaderMap,
    client: Client,
    interval: Duration,
    timeout: Duration,
    limit: Option<u64>,
}

impl Poller {
    fn new(config: &HttpProvider) -> Result<Poller, HttpProviderError> {
        #[deny(unused_variables)] // an option read nowhere fails the build
        let HttpProvider {
            endpoint,
            poll_interval,
            poll_timeout,
            headers,
            tls,
            max_response_body_size,
        } = config;
        let endpoint = endpoint.trim();
        if endpoint.is_empty() {
            return Err(HttpProviderError::NoEndpoint);
        }
        let bad = |problem: &str| HttpProviderError::Endpoint {
            endpoint: endpoint.to_owned(),
            problem: problem.to_owned(),
        };
        let uri: Uri = endpoint
            .parse()
            .map_err(|e: http::uri::InvalidUri| bad(&format!("is not a URL: {e}")))?;
        match uri.scheme_str() {
            Some("http" | "https") => {}
            Some(_) | None => return Err(bad("give an http:// or https:// URL")),
        }
        if uri.host().is_none_or(str::is_empty) {
            return Err(bad("names no host"));
        }
        let limit: i64 = max_response_body_size
            .trim()
            .parse()
            .map_err(|_| HttpProviderError::MaxBodySize(max_response_body_size.clone()))?;
        if poll_interval.0.is_zero() {
            return Err(HttpProviderError::PollInterval);
        }
        let mut sent = HeaderMap::new();
        for (name, value) in headers {
            let problem = |problem: String| HttpProviderError::Header {
                name: name.clone(),
                problem,
            };
            let header = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| problem("is not a header name".to_owned()))?;
            let value = HeaderValue::from_str(value)
                .map_err(|_| problem("the value holds characters a header cannot".to_owned()))?;
            sent.insert(header, value);
        }
        // Without `tls`, an https:// endpoint is checked as any TLS
        // connection out is: against the Web PKI's roots.
        let client = crate::client::control::Builder::options(tls.as_ref())
            .map_err(HttpProviderError::Tls)?
            .connect_timeout(poll_timeout.0)
            .nodelay()
            .build();
        Ok(Poller {
            endpoint: endpoint.to_owned(),
            uri,
            headers: sent,
            client,
            interval: poll_interval.0,
            timeout: poll_timeout.0,
            // Traefik reads any size when the option is negative.
            limit: u64::try_from(limit).ok(),
        })
    }

    /// One request: the answer's body, or why there is none.
    async fn fetch(&self) -> Result<Bytes, FetchError> {
        match tokio::time::timeout(self.timeout, self.fetch_untimed()).await {
            Ok(answer) => answer,
            Err(_) => Err(FetchError::Timeout(self.timeout)),
        }
    }

    async fn fetch_untimed(&self) -> Result<Bytes, FetchError> {
        let mut request = http::Request::get(self.uri.clone())
            .body(Empty::new())
            .map_err(|e| FetchError::Request(e.to_string()))?;
        request.headers_mut().extend(self.headers.clone());
        let response = self
            .client
            .request(request)
            .await
            .map_err(|e| FetchError::Request(crate::cause::WithCauses(&e).to_string()))?;
        if response.status() != StatusCode::OK {
            return Err(FetchError::Status(response.status()));
        }
        let body = response.into_body();
        let collected = match self.limit {
            Some(limit) => {
                let limited = Limited::new(body, usize::try_from(limit).unwrap_or(usize::MAX));
                limited.collect().await.map_err(|e| {
                    if e.is::<http_body_util::LengthLimitError>() {
                        FetchError::TooLarge(limit)
                    } else {
                        FetchError::Body(e.to_string())
                    }
                })?
            }
            None => body
                .collect()
                .await
                .map_err(|e| FetchError::Body(e.to_string()))?,
        };
        Ok(collected.to_bytes())
    }

    /// The snapshot for one answer's body.
    fn read(&self, body: &[u8]) -> Result<Snapshot, ProviderError> {
        let text = std::str::from_utf8(body).map_err(|_| self.failed(&FetchError::NotText))?;
        if text.trim().is_empty() {
            return Err(self.failed(&FetchError::Empty));
        }
        let loaded = read_document_for(PROVIDER, &self.endpoint, text, Format::Yaml)?;
        let mut detail = loaded.detail;
        detail.connected = Some(true);
        Ok(Snapshot {
            provider: PROVIDER,
            dynamic: Some(loaded.dynamic),
            error: None,
            warnings: loaded.warnings,
            detail: Some(detail),
        })
    }

    fn failed(&self, e: &FetchError) -> ProviderError {
        ProviderError::Http {
            endpoint: self.endpoint.clone(),
            reason: e.to_string(),
        }
    }
}

/// Checks the provider's options, connecting to nothing.
pub fn check_http(config: &HttpProvider) -> Result<(), HttpProviderError> {
    Poller::new(config).map(drop)
}

/// Checks the options, then starts the provider: it asks the endpoint at
/// once and every `pollInterval`, and sends a `Snapshot` when the answer
/// changes or fails, until `tx` closes.
pub fn spawn_http(
    config: &HttpProvider,
    tx: mpsc::Sender<Snapshot>,
) -> Result<tokio::task::JoinHandle<()>, HttpProviderError> {
    let poller = Poller::new(config)?;
    Ok(tokio::spawn(run(poller, tx)))
}

async fn run(poller: Poller, tx: mpsc::Sender<Snapshot>) {
    // The body of the configuration in use, so that an identical answer
    // costs no parse; and the error last sent, so that one failing
    // endpoint is reported once, not at every poll.
    let mut in_use: Option<Bytes> = None;
    let mut detail: Option<ProviderDetail> = None;
    let mut last_error: Option<ProviderError> = None;
    let mut ticks = tokio::time::interval(poller.interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let snapshot = match poller.fetch().await {
            Ok(body) if last_error.is_none() && in_use.as_ref() == Some(&body) => continue,
            Ok(body) => match poller.read(&body) {
                Ok(snapshot) => {
                    in_use = Some(body);
                    detail.clone_from(&snapshot.detail);
                    last_error = None;
                    snapshot
                }
                Err(error) => {
                    if last_error.as_ref() == Some(&error) {
                        continue;
                    }
                    tracing::warn!(provider = PROVIDER, %error, "the endpoint's answer is not a configuration; the last good one stays in use");
                    last_error = Some(error.clone());
                    Snapshot {
                        provider: PROVIDER,
                        dynamic: None,
                        error: Some(error),
                        warnings: Vec::new(),
                        detail: None,
                    }
                }
            },
            Err(e) => {
                let error = poller.failed(&e);
                if last_error.as_ref() == Some(&error) {
                    continue;
                }
                tracing::warn!(provider = PROVIDER, %error, "cannot read the endpoint; the last good configuration stays in use");
                last_error = Some(error.clone());
                Snapshot::unreachable(PROVIDER, error, detail.as_ref())
            }
        };
        if tx.send(snapshot).await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::static_config::ProviderTls;

    fn config(endpoint: &str) -> HttpProvider {
        HttpProvider {
            endpoint: endpoint.to_owned(),
            ..HttpProvider::default()
        }
    }

    #[test]
    fn options_that_cannot_work_are_refused_naming_them() {
        assert!(matches!(
            Poller::new(&config(" ")),
            Err(HttpProviderError::NoEndpoint)
        ));
        for endpoint in [
            "ftp://127.0.0.1/c",
            "127.0.0.1:8080",
            "http://",
            "http://a b",
        ] {
            assert!(
                matches!(
                    Poller::new(&config(endpoint)),
                    Err(HttpProviderError::Endpoint { endpoint: e, .. }) if e == endpoint
                ),
                "{endpoint}"
            );
        }
        let zero = HttpProvider {
            poll_interval: crate::config::duration::Duration::from_secs(0),
            ..config("http://127.0.0.1/c")
        };
        assert!(matches!(
            Poller::new(&zero),
            Err(HttpProviderError::PollInterval)
        ));
        let header = HttpProvider {
            headers: [("bad name".to_owned(), "v".to_owned())].into(),
            ..config("http://127.0.0.1/c")
        };
        assert_eq!(
            Poller::new(&header).err().map(|e| e.to_string()).as_deref(),
            Some("providers.http.headers.bad name: is not a header name")
        );
        let size = HttpProvider {
            max_response_body_size: "1MB".into(),
            ..config("http://127.0.0.1/c")
        };
        assert!(matches!(
            Poller::new(&size),
            Err(HttpProviderError::MaxBodySize(_))
        ));
        let tls = HttpProvider {
            tls: Some(ProviderTls {
                cert: Some("/nonexistent/cert.pem".into()),
                ..ProviderTls::default()
            }),
            ..config("https://127.0.0.1/c")
        };
        assert!(matches!(Poller::new(&tls), Err(HttpProviderError::Tls(_))));
    }

    #[tokio::test]
    async fn json_and_yaml_answers_read_alike_and_name_objects_in_http() {
        let poller = Poller::new(&config("http://127.0.0.1:1/config")).unwrap();
        let json = r#"{"http":{"routers":{"app":{"rule":"Host(`a.test`)","service":"app"}},
            "services":{"app":{"loadBalancer":{"servers":[{"url":"http://127.0.0.1:9"}]}}}}}"#;
        let yaml = "http:\n  routers:\n    app:\n      rule: Host(`a.test`)\n      service: app\n  services:\n    app:\n      loadBalancer:\n        servers:\n          - url: http://127.0.0.1:9\n";
        let a = poller.read(json.as_bytes()).unwrap();
        let b = poller.read(yaml.as_bytes()).unwrap();
        assert_eq!(a.dynamic, b.dynamic);
        assert_eq!(
            a.dynamic.unwrap().http.routers["app"].rule,
            "Host(`a.test`)"
        );
        let typo = r#"{"http":{"routers":{"app":{"rule":"Host(`a.test`)","servce":"app"}}}}"#;
        let read = poller.read(typo.as_bytes()).unwrap();
        let errors = &read.detail.unwrap().routers["app"].errors;
        assert_eq!(errors[0].object.to_string(), "router `app@http`");
        for (body, reason) in [
            (&b" \n"[..], "the answer is empty"),
            (&b"\xff\xfe"[..], "not UTF-8"),
        ] {
            let e = poller.read(body).unwrap_err();
            assert!(e.to_string().contains(reason), "{e}");
        }
        assert!(matches!(
            poller.read(b"{\"http\": [").unwrap_err(),
            ProviderError::Syntax { .. }
        ));
    }
}
