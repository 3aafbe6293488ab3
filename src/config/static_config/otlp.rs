//! Static options for OpenTelemetry: `tracing` and the OTLP exporters it
//! (and, with Traefik's names, metrics and logs) sends through.

use serde::{Deserialize, Deserializer, Serialize};
use std::collections::BTreeMap;

/// Traefik's `tracing` section: spans for each request, sent over OTLP.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Tracing {
    /// `service.name` of the spans' resource. Default `traefik`, as in
    /// Traefik, so that dashboards built for it find gangway's spans.
    pub service_name: String,
    /// More attributes of the spans' resource.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub resource_attributes: BTreeMap<String, String>,
    /// The share of new traces recorded, from 0 to 1 (default 1). A
    /// request that arrives with a `traceparent` follows its sampled flag.
    pub sample_rate: SampleRate,
    /// Request headers recorded on the spans
    /// (`http.request.header.<name>`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub captured_request_headers: Vec<String>,
    /// Response headers recorded on the spans
    /// (`http.response.header.<name>`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub captured_response_headers: Vec<String>,
    /// Query parameters whose values are kept in `url.query` and
    /// `url.full`; others' values read `REDACTED`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub safe_query_params: Vec<String>,
    /// Trace requests to gangway's own routers (API, dashboard, `/ping`,
    /// `/metrics`) too. Default `false`.
    pub add_internals: bool,
    /// Where spans go; without it, OTLP/HTTP to `https://localhost:4318`,
    /// as Traefik's default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub otlp: Option<Otlp>,
}

impl Default for Tracing {
    fn default() -> Self {
        Tracing {
            service_name: "traefik".to_owned(),
            resource_attributes: BTreeMap::new(),
            sample_rate: SampleRate(1.0),
            captured_request_headers: Vec::new(),
            captured_response_headers: Vec::new(),
            safe_query_params: Vec::new(),
            add_internals: false,
            otlp: None,
        }
    }
}

/// A sampling ratio from 0 to 1.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(transparent)]
pub struct SampleRate(pub f64);

// Ratios are finite numbers (checked when read), so equality is total.
impl Eq for SampleRate {}

impl<'de> Deserialize<'de> for SampleRate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(f64),
            Text(String),
        }
        let value = match Raw::deserialize(d)? {
            Raw::Number(n) => n,
            Raw::Text(t) => t.trim().parse::<f64>().map_err(|_| {
                serde::de::Error::custom(format!("`{t}` is not a ratio between 0 and 1"))
            })?,
        };
        if !(0.0..=1.0).contains(&value) {
            return Err(serde::de::Error::custom(format!(
                "sampleRate `{value}` must be between 0 and 1"
            )));
        }
        Ok(SampleRate(value))
    }
}

/// Traefik's `otlp` section: one collector, over gRPC or HTTP.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Otlp {
    /// OTLP over gRPC; wins over `http` when both are given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grpc: Option<OtlpGrpc>,
    /// OTLP over HTTP with protobuf bodies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http: Option<OtlpHttp>,
}

/// `otlp.grpc`: the collector's gRPC endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct OtlpGrpc {
    /// `host:port` of the collector. Default `localhost:4317`.
    pub endpoint: String,
    /// Plain HTTP/2 (h2c) instead of TLS.
    pub insecure: bool,
    /// Headers sent with every export (an API key, a tenant).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// TLS towards the collector.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<OtlpTls>,
}

impl Default for OtlpGrpc {
    fn default() -> Self {
        OtlpGrpc {
            endpoint: "localhost:4317".to_owned(),
            insecure: false,
            headers: BTreeMap::new(),
            tls: None,
        }
    }
}

/// `otlp.http`: the collector's OTLP/HTTP endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct OtlpHttp {
    /// URL of the collector: `http://` or `https://`. Without a path, the
    /// signal's standard one (`/v1/traces`, `/v1/metrics`, `/v1/logs`) is
    /// added. Default `https://localhost:4318`.
    pub endpoint: String,
    /// Headers sent with every export (an API key, a tenant).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// TLS towards the collector, for an `https://` endpoint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<OtlpTls>,
}

impl Default for OtlpHttp {
    fn default() -> Self {
        OtlpHttp {
            endpoint: "https://localhost:4318".to_owned(),
            headers: BTreeMap::new(),
            tls: None,
        }
    }
}

/// Traefik's `log.otlp` and `accessLog.otlp` (Traefik 3.3): log records
/// sent to a collector.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct OtlpLogs {
    /// `service.name` of the records' resource. Default `traefik`.
    pub service_name: String,
    /// More attributes of the records' resource.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub resource_attributes: BTreeMap<String, String>,
    /// OTLP over gRPC; wins over `http` when both are given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grpc: Option<OtlpGrpc>,
    /// OTLP over HTTP with protobuf bodies (the default, to
    /// `https://localhost:4318/v1/logs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http: Option<OtlpHttp>,
}

impl Default for OtlpLogs {
    fn default() -> Self {
        OtlpLogs {
            service_name: "traefik".to_owned(),
            resource_attributes: BTreeMap::new(),
            grpc: None,
            http: None,
        }
    }
}

impl OtlpLogs {
    /// The collector, in the shape the exporters take.
    pub fn collector(&self) -> Otlp {
        Otlp {
            grpc: self.grpc.clone(),
            http: self.http.clone(),
        }
    }
}

/// TLS towards a collector: the same options as a provider's `tls`.
pub type OtlpTls = super::ProviderTls;

/// An entry point's `observability` switches (Traefik v3.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct EntryPointObservability {
    /// Trace requests on this entry point when `tracing` is on. Default
    /// `true`.
    pub tracing: bool,
    /// Write access log lines for requests on this entry point when the
    /// access log is on; a router's `observability.accessLogs` overrides it
    /// for that router's requests, as in Traefik. Default `true`.
    pub access_logs: bool,
    /// Count requests on this entry point in the metrics; a router's
    /// `observability.metrics` overrides it for that router's requests.
    /// Default `true`.
    pub metrics: bool,
}

impl Default for EntryPointObservability {
    fn default() -> Self {
        EntryPointObservability {
            tracing: true,
            access_logs: true,
            metrics: true,
        }
    }
}
