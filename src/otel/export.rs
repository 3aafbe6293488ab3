//! Sends encoded OTLP messages to a collector: OTLP/HTTP (a protobuf
//! `POST` to `/v1/<signal>`) or OTLP/gRPC (the same message in gRPC's
//! framing, over HTTP/2 with or without TLS), through hyper and rustls.
//! Every export has a deadline, so a collector that hangs holds up only
//! the background task that sends, never a request.

use super::OtelError;
use crate::client::control::{Builder, ControlClient, Versions};
use crate::config::static_config::Otlp;
use bytes::{BufMut, Bytes, BytesMut};
use http::header::{CONTENT_TYPE, HeaderName, HeaderValue};
use http::{HeaderMap, Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use std::time::Duration;

/// How long one export may take, connection included (OTLP's default).
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// Which signal an exporter sends: it decides the HTTP path and the gRPC
/// method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// Spans.
    Traces,
    /// Metric points.
    Metrics,
    /// Log records.
    Logs,
}

impl Signal {
    fn http_path(self) -> &'static str {
        match self {
            Signal::Traces => "/v1/traces",
            Signal::Metrics => "/v1/metrics",
            Signal::Logs => "/v1/logs",
        }
    }

    fn grpc_path(self) -> &'static str {
        match self {
            Signal::Traces => "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
            Signal::Metrics => "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export",
            Signal::Logs => "/opentelemetry.proto.collector.logs.v1.LogsService/Export",
        }
    }
}

/// Why one export failed; the exporter logs it and drops the batch.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// No answer within the deadline.
    #[error("the collector did not answer within {0:?}")]
    TimedOut(Duration),
    /// The connection or the exchange failed.
    #[error("cannot reach the collector: {0}")]
    Transport(#[source] hyper_util::client::legacy::Error),
    /// The answer's body broke off.
    #[error("the collector's answer broke off: {0}")]
    Body(#[source] hyper::Error),
    /// The collector answered with an HTTP error.
    #[error("the collector answered {0}")]
    Status(StatusCode),
    /// The collector answered with a gRPC error.
    #[error("the collector answered gRPC status {code}: {message}")]
    Grpc {
        /// `grpc-status`.
        code: String,
        /// `grpc-message`.
        message: String,
    },
}

/// Where and how one signal is sent.
pub struct Exporter {
    client: ControlClient<Full<Bytes>>,
    uri: Uri,
    grpc: bool,
    headers: HeaderMap,
    /// The body's type over HTTP (gRPC has its own).
    content_type: HeaderValue,
}

impl Exporter {
    /// The exporter `otlp` describes for `signal` (`None`: Traefik's
    /// default, OTLP/HTTP to `https://localhost:4318`). `section` names the
    /// options in errors (`tracing.otlp`).
    pub fn new(
        otlp: Option<&Otlp>,
        signal: Signal,
        section: &'static str,
    ) -> Result<Self, OtelError> {
        let default = Otlp::default();
        let otlp = otlp.unwrap_or(&default);
        let http_default = crate::config::static_config::otlp::OtlpHttp::default();
        let (uri, grpc, headers, tls, option) = match (&otlp.grpc, &otlp.http) {
            (Some(g), _) => {
                let scheme = if g.insecure { "http" } else { "https" };
                let text = format!("{scheme}://{}{}", g.endpoint, signal.grpc_path());
                (text, true, &g.headers, g.tls.as_ref(), "grpc")
            }
            (None, h) => {
                let h = h.as_ref().unwrap_or(&http_default);
                let trimmed = h.endpoint.trim_end_matches('/');
                let has_path = trimmed
                    .split_once("://")
                    .is_some_and(|(_, rest)| rest.contains('/'));
                let text = if has_path {
                    h.endpoint.clone()
                } else {
                    format!("{trimmed}{}", signal.http_path())
                };
                (text, false, &h.headers, h.tls.as_ref(), "http")
            }
        };
        let parsed = parse_uri(&uri, endpoint_option(section, option))?;
        let mut header_map = HeaderMap::new();
        for (name, value) in headers {
            let bad_header = || OtelError::BadHeader {
                option: headers_option(section, option),
                name: name.clone(),
            };
            let n = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad_header())?;
            let v = HeaderValue::from_str(value).map_err(|_| bad_header())?;
            header_map.append(n, v);
        }
        let builder = Builder::options(tls).map_err(|source| OtelError::Tls {
            option: tls_option(section, option),
            source,
        })?;
        Ok(Self::connect(parsed, grpc, header_map, builder))
    }

    /// An exporter that `POST`s `content_type` bodies to `url` as given,
    /// with `headers`, trusting the built-in roots: for a backend that is
    /// not OTLP (InfluxDB 2's write API). `option` names the URL in errors.
    pub fn plain(
        url: &str,
        headers: HeaderMap,
        content_type: &'static str,
        option: &'static str,
    ) -> Result<Self, OtelError> {
        let parsed = parse_uri(url, option)?;
        let builder = Builder::options(None).map_err(|source| OtelError::Tls { option, source })?;
        let mut exporter = Self::connect(parsed, false, headers, builder);
        exporter.content_type = HeaderValue::from_static(content_type);
        Ok(exporter)
    }

    fn connect(parsed: Uri, grpc: bool, header_map: HeaderMap, builder: Builder) -> Self {
        // gRPC is HTTP/2 only; in the clear (`insecure`) that is h2c with
        // prior knowledge, as collectors expect.
        let versions = if grpc {
            Versions::Http2
        } else {
            Versions::Both
        };
        let client = builder
            .versions(versions)
            .connect_timeout(EXPORT_TIMEOUT)
            .nodelay()
            .build();
        Exporter {
            client,
            uri: parsed,
            grpc,
            headers: header_map,
            content_type: HeaderValue::from_static("application/x-protobuf"),
        }
    }

    /// Where it sends.
    pub fn uri(&self) -> &Uri {
        &self.uri
    }

    /// Sends one encoded export request and waits for the collector's
    /// answer, at most [`EXPORT_TIMEOUT`].
    pub async fn send(&self, message: Vec<u8>) -> Result<(), ExportError> {
        match tokio::time::timeout(EXPORT_TIMEOUT, self.exchange(message)).await {
            Ok(result) => result,
            Err(_) => Err(ExportError::TimedOut(EXPORT_TIMEOUT)),
        }
    }

    async fn exchange(&self, message: Vec<u8>) -> Result<(), ExportError> {
        let mut req = Request::builder()
            .method(Method::POST)
            .uri(self.uri.clone());
        let body = if self.grpc {
            // gRPC's message framing: not compressed, then the length.
            let mut framed = BytesMut::with_capacity(message.len() + 5);
            framed.put_u8(0);
            framed.put_u32(u32::try_from(message.len()).unwrap_or(u32::MAX));
            framed.put_slice(&message);
            req = req
                .version(http::Version::HTTP_2)
                .header(CONTENT_TYPE, "application/grpc")
                .header(http::header::TE, "trailers");
            framed.freeze()
        } else {
            req = req.header(CONTENT_TYPE, self.content_type.clone());
            Bytes::from(message)
        };
        let mut req = req
            .body(Full::new(body))
            .expect("a POST to a parsed URI with static headers is a valid request");
        for (name, value) in &self.headers {
            req.headers_mut().append(name.clone(), value.clone());
        }
        let resp = self
            .client
            .request(req)
            .await
            .map_err(ExportError::Transport)?;
        let status = resp.status();
        let head_grpc = grpc_status(resp.headers());
        let collected = resp
            .into_body()
            .collect()
            .await
            .map_err(ExportError::Body)?;
        if !status.is_success() {
            return Err(ExportError::Status(status));
        }
        if self.grpc {
            let trailers = collected.trailers().and_then(grpc_status);
            if let Some((code, message)) = head_grpc.or(trailers)
                && code != "0"
            {
                return Err(ExportError::Grpc { code, message });
            }
        }
        Ok(())
    }
}

/// `text` as an `http`/`https` URL with a host; `option` names it in the
/// error.
fn parse_uri(text: &str, option: &'static str) -> Result<Uri, OtelError> {
    let bad = |why| OtelError::BadEndpoint {
        option,
        endpoint: text.to_owned(),
        why,
    };
    let parsed: Uri = text.parse().map_err(|_| bad("not a URL"))?;
    match parsed.scheme_str() {
        Some("http" | "https") => {}
        _ => return Err(bad("the scheme must be http or https")),
    }
    if parsed.host().is_none() {
        return Err(bad("no host"));
    }
    Ok(parsed)
}

/// `grpc-status` and `grpc-message` of a head or trailers, when present.
fn grpc_status(headers: &HeaderMap) -> Option<(String, String)> {
    let code = headers.get("grpc-status")?.to_str().ok()?.to_owned();
    let message = headers
        .get("grpc-message")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    Some((code, message))
}

// Option names for errors, spelt out so that they are `'static`.
fn endpoint_option(section: &'static str, proto: &str) -> &'static str {
    match (section, proto) {
        ("tracing.otlp", "grpc") => "tracing.otlp.grpc.endpoint",
        ("tracing.otlp", _) => "tracing.otlp.http.endpoint",
        ("metrics.otlp", "grpc") => "metrics.otlp.grpc.endpoint",
        ("metrics.otlp", _) => "metrics.otlp.http.endpoint",
        ("log.otlp", "grpc") => "log.otlp.grpc.endpoint",
        ("log.otlp", _) => "log.otlp.http.endpoint",
        (_, "grpc") => "accessLog.otlp.grpc.endpoint",
        _ => "accessLog.otlp.http.endpoint",
    }
}

fn headers_option(section: &'static str, proto: &str) -> &'static str {
    match (section, proto) {
        ("tracing.otlp", "grpc") => "tracing.otlp.grpc.headers",
        ("tracing.otlp", _) => "tracing.otlp.http.headers",
        ("metrics.otlp", "grpc") => "metrics.otlp.grpc.headers",
        ("metrics.otlp", _) => "metrics.otlp.http.headers",
        ("log.otlp", "grpc") => "log.otlp.grpc.headers",
        ("log.otlp", _) => "log.otlp.http.headers",
        (_, "grpc") => "accessLog.otlp.grpc.headers",
        _ => "accessLog.otlp.http.headers",
    }
}

fn tls_option(section: &'static str, proto: &str) -> &'static str {
    match (section, proto) {
        ("tracing.otlp", "grpc") => "tracing.otlp.grpc.tls",
        ("tracing.otlp", _) => "tracing.otlp.http.tls",
        ("metrics.otlp", "grpc") => "metrics.otlp.grpc.tls",
        ("metrics.otlp", _) => "metrics.otlp.http.tls",
        ("log.otlp", "grpc") => "log.otlp.grpc.tls",
        ("log.otlp", _) => "log.otlp.http.tls",
        (_, "grpc") => "accessLog.otlp.grpc.tls",
        _ => "accessLog.otlp.http.tls",
    }
}

/// Items in one export at most.
const BATCH: usize = 512;
/// How long an item may wait for its batch.
const FLUSH_EVERY: Duration = Duration::from_secs(1);

/// What an export task sends, in batches: up to [`BATCH`] items, each
/// waiting at most [`FLUSH_EVERY`]; once `stop` is notified, what is still
/// queued, then nothing.
pub(super) struct Batches<T> {
    rx: tokio::sync::mpsc::Receiver<T>,
    stop: std::sync::Arc<tokio::sync::Notify>,
    stopping: bool,
}

impl<T> Batches<T> {
    pub(super) fn new(
        rx: tokio::sync::mpsc::Receiver<T>,
        stop: std::sync::Arc<tokio::sync::Notify>,
    ) -> Self {
        Batches {
            rx,
            stop,
            stopping: false,
        }
    }

    /// The next batch; None when every sender is gone, or when the stop's
    /// last items have been taken.
    pub(super) async fn next(&mut self) -> Option<Vec<T>> {
        let Batches { rx, stop, stopping } = self;
        if !*stopping {
            let first = tokio::select! {
                biased;
                () = stop.notified() => None,
                first = rx.recv() => Some(first?),
            };
            if let Some(first) = first {
                let mut batch = Vec::with_capacity(BATCH.min(rx.len() + 1));
                batch.push(first);
                let deadline = tokio::time::Instant::now() + FLUSH_EVERY;
                while batch.len() < BATCH {
                    tokio::select! {
                        biased;
                        () = stop.notified() => {
                            *stopping = true;
                            break;
                        }
                        next = tokio::time::timeout_at(deadline, rx.recv()) => match next {
                            Ok(Some(item)) => batch.push(item),
                            Ok(None) | Err(_) => break,
                        },
                    }
                }
                return Some(batch);
            }
            *stopping = true;
        }
        let mut batch = Vec::new();
        while batch.len() < BATCH {
            match rx.try_recv() {
                Ok(item) => batch.push(item),
                Err(_) => break,
            }
        }
        (!batch.is_empty()).then_some(batch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::static_config::otlp::{OtlpGrpc, OtlpHttp};

    fn http(endpoint: &str) -> Otlp {
        Otlp {
            grpc: None,
            http: Some(OtlpHttp {
                endpoint: endpoint.to_owned(),
                ..OtlpHttp::default()
            }),
        }
    }

    #[tokio::test]
    async fn http_endpoints_get_the_signal_path_only_without_one() {
        let e = Exporter::new(
            Some(&http("http://127.0.0.1:4318")),
            Signal::Traces,
            "tracing.otlp",
        )
        .expect("valid");
        assert_eq!(e.uri().to_string(), "http://127.0.0.1:4318/v1/traces");
        let e = Exporter::new(
            Some(&http("http://127.0.0.1:4318/custom/traces")),
            Signal::Traces,
            "tracing.otlp",
        )
        .expect("valid");
        assert_eq!(e.uri().path(), "/custom/traces");
        let e = Exporter::new(None, Signal::Metrics, "metrics.otlp").expect("valid");
        assert_eq!(e.uri().to_string(), "https://localhost:4318/v1/metrics");
    }

    #[tokio::test]
    async fn grpc_endpoints_are_host_and_port() {
        let otlp = Otlp {
            grpc: Some(OtlpGrpc {
                endpoint: "127.0.0.1:4317".to_owned(),
                insecure: true,
                ..OtlpGrpc::default()
            }),
            http: None,
        };
        let e = Exporter::new(Some(&otlp), Signal::Logs, "log.otlp").expect("valid");
        assert_eq!(
            e.uri().to_string(),
            "http://127.0.0.1:4317/opentelemetry.proto.collector.logs.v1.LogsService/Export"
        );
    }

    #[tokio::test]
    async fn a_bad_endpoint_names_its_option() {
        let err = Exporter::new(Some(&http("ftp://x")), Signal::Traces, "tracing.otlp")
            .err()
            .expect("refused");
        assert!(
            matches!(
                err,
                OtelError::BadEndpoint {
                    option: "tracing.otlp.http.endpoint",
                    ..
                }
            ),
            "{err}"
        );
    }
}
