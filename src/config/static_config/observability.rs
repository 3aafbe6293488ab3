//! Static options for what gangway shows about itself: the API and
//! dashboard, `/ping`, Prometheus metrics and the access log.

use crate::config::Duration;
use serde::{Deserialize, Deserializer, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The name of gangway's internal entry point, which serves the API, the
/// dashboard, `/metrics` and `/ping` (Traefik's is called `traefik`).
pub const INTERNAL_ENTRY_POINT: &str = "gangway";

/// The internal entry point's address when none is configured: loopback
/// only, unlike Traefik's `:8080` on every interface.
pub const INTERNAL_DEFAULT_ADDRESS: &str = "127.0.0.1:8080";

/// The internal entry point's address when none is configured and the
/// API is asked for with `api.insecure=true`: every interface, as Traefik,
/// so that a container's published `8080:8080` shows the dashboard. The
/// option's name says what it costs.
pub const INTERNAL_INSECURE_ADDRESS: &str = ":8080";

/// Traefik's name for its internal entry point.
pub const TRAEFIK_ENTRY_POINT: &str = "traefik";

/// The internal entry point's name in this configuration: `traefik` when an
/// entry point of that name is configured and none called `gangway` is, as
/// in Traefik setups that give `--entryPoints.traefik.address=:8080`;
/// else `gangway`.
pub fn internal_entry_point(config: &super::StaticConfig) -> &'static str {
    let eps = &config.entry_points;
    if eps.contains_key(TRAEFIK_ENTRY_POINT) && !eps.contains_key(INTERNAL_ENTRY_POINT) {
        TRAEFIK_ENTRY_POINT
    } else {
        INTERNAL_ENTRY_POINT
    }
}

/// Adds the internal entry point when something is served there (API with
/// `insecure`, `/ping`, `/metrics`) and no source configured it: on every
/// interface with `api.insecure=true`, else at its loopback default. An
/// entry point called `traefik` is the internal one under Traefik's name:
/// `/ping` and `/metrics` left at their default entry point move to it.
pub fn add_internal_entry_point(config: &mut super::StaticConfig) {
    let internal = internal_entry_point(config);
    if internal != INTERNAL_ENTRY_POINT {
        if let Some(ping) = &mut config.ping
            && ping.entry_point == INTERNAL_ENTRY_POINT
        {
            ping.entry_point = internal.to_owned();
        }
        if let Some(prometheus) = &mut config.metrics.prometheus
            && prometheus.entry_point == INTERNAL_ENTRY_POINT
        {
            prometheus.entry_point = internal.to_owned();
        }
        return;
    }
    let insecure_api = config.api.as_ref().is_some_and(|a| a.insecure);
    let wanted = insecure_api
        || config
            .ping
            .as_ref()
            .is_some_and(|p| p.entry_point == INTERNAL_ENTRY_POINT)
        || config
            .metrics
            .prometheus
            .as_ref()
            .is_some_and(|p| !p.manual_routing && p.entry_point == INTERNAL_ENTRY_POINT);
    if wanted && !config.entry_points.contains_key(INTERNAL_ENTRY_POINT) {
        let default = if insecure_api {
            INTERNAL_INSECURE_ADDRESS
        } else {
            INTERNAL_DEFAULT_ADDRESS
        };
        let address = default.parse().unwrap_or(super::ListenAddress {
            host: None,
            port: 8080,
            udp: false,
        });
        config.entry_points.insert(
            INTERNAL_ENTRY_POINT.to_owned(),
            super::EntryPoint {
                address,
                ..super::EntryPoint::default()
            },
        );
    }
}

/// The read-only API and the dashboard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Api {
    /// Serve the API and dashboard on the internal entry point `gangway`
    /// (loopback by default). Without it, route to them with a router whose
    /// service is `api@internal`.
    pub insecure: bool,
    /// Serve the dashboard next to the API. Default `true`.
    pub dashboard: bool,
    /// The path the API and the dashboard are served under, as in Traefik:
    /// with `/traefik`, the API answers at `/traefik/api/…` and the
    /// dashboard at `/traefik/dashboard/`. Default `/`.
    pub base_path: BasePath,
}

impl Default for Api {
    fn default() -> Self {
        Api {
            insecure: false,
            dashboard: true,
            base_path: BasePath::default(),
        }
    }
}

/// `api.basePath`, kept as the prefix to put before `/api` and
/// `/dashboard`: empty for `/`, else `/a/b` with no slash at the end.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BasePath(String);

/// A base path that cannot be a path prefix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{text}` is not a base path: use letters, digits and `-._~/` only, as in `/traefik` (it becomes part of a router rule)"
)]
pub struct BasePathError {
    /// The text given.
    pub text: String,
}

impl BasePath {
    /// Reads a base path; the leading slash may be left out and a trailing
    /// one is dropped, as Traefik joins it with `/api` and `/dashboard/`.
    pub fn parse(text: &str) -> Result<BasePath, BasePathError> {
        let allowed = |c: char| c.is_ascii_alphanumeric() || "-._~/".contains(c);
        if !text.chars().all(allowed) {
            return Err(BasePathError {
                text: text.to_owned(),
            });
        }
        let trimmed = text.trim_matches('/');
        if trimmed.is_empty() {
            return Ok(BasePath(String::new()));
        }
        Ok(BasePath(format!("/{trimmed}")))
    }

    /// The prefix: empty, or `/a/b`.
    pub fn prefix(&self) -> &str {
        &self.0
    }
}

impl Serialize for BasePath {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&format!("{}/", self.0))
    }
}

impl<'de> Deserialize<'de> for BasePath {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        BasePath::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// The `/ping` health endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Ping {
    /// The entry point that serves `/ping`. Default `gangway`.
    pub entry_point: String,
    /// Status answered while shutting down. Default 503.
    pub terminating_status_code: u16,
    /// Make no router for `/ping`: the user routes to `ping@internal`
    /// with a router of their own. Default `false`.
    pub manual_routing: bool,
}

impl Default for Ping {
    fn default() -> Self {
        Ping {
            entry_point: INTERNAL_ENTRY_POINT.to_owned(),
            terminating_status_code: 503,
            manual_routing: false,
        }
    }
}

/// Metrics exporters.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Metrics {
    /// Prometheus exposition at `/metrics`; absent when not enabled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prometheus: Option<Prometheus>,
    /// OpenTelemetry metrics pushed over OTLP; absent when not enabled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub otlp: Option<MetricsOtlp>,
    /// StatsD: plain counters, gauges and timings over UDP; absent when
    /// not enabled.
    #[serde(rename = "statsD", skip_serializing_if = "Option::is_none")]
    pub statsd: Option<MetricsStatsd>,
    /// Datadog: DogStatsD datagrams with the series' labels as tags, to
    /// the agent over UDP or its Unix socket; absent when not enabled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub datadog: Option<MetricsStatsd>,
    /// InfluxDB 2: line protocol written over HTTP; absent when not
    /// enabled.
    #[serde(rename = "influxDB2", skip_serializing_if = "Option::is_none")]
    pub influxdb2: Option<MetricsInfluxDb2>,
    /// Count requests to gangway's own routers (API, dashboard, `/ping`,
    /// `/metrics`) too. Default `false`, as in Traefik v3.
    pub add_internals: bool,
}

impl Metrics {
    /// No exporter is enabled and nothing is set: left out of the API.
    pub fn is_disabled(&self) -> bool {
        self.prometheus.is_none()
            && self.otlp.is_none()
            && self.statsd.is_none()
            && self.datadog.is_none()
            && self.influxdb2.is_none()
            && !self.add_internals
    }
}

/// Traefik's `metrics.statsD` and `metrics.datadog`, which take the same
/// options: where to send, how often, which objects, under which prefix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct MetricsStatsd {
    /// `host:port` of the UDP receiver; for Datadog also `unix:///path`
    /// (or `unixgram://`) for the agent's datagram socket. Default
    /// `localhost:8125`.
    pub address: String,
    /// How often the values are sent. Default `10s`.
    pub push_interval: Duration,
    /// Per-entry-point metrics. Default `true`.
    pub add_entry_points_labels: bool,
    /// Per-router metrics. Default `false`.
    pub add_routers_labels: bool,
    /// Per-service metrics. Default `true`.
    pub add_services_labels: bool,
    /// First segment of every metric name. Default `traefik`.
    pub prefix: String,
}

impl Default for MetricsStatsd {
    fn default() -> Self {
        MetricsStatsd {
            address: "localhost:8125".to_owned(),
            push_interval: Duration::from_secs(10),
            add_entry_points_labels: true,
            add_routers_labels: false,
            add_services_labels: true,
            prefix: "traefik".to_owned(),
        }
    }
}

/// Traefik's `metrics.influxDB2`: points written to a bucket of an
/// InfluxDB 2 server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct MetricsInfluxDb2 {
    /// The server's URL. Default `http://localhost:8086`.
    pub address: String,
    /// API token, sent as `Authorization: Token …` (required).
    pub token: String,
    /// Organisation the bucket belongs to (required).
    pub org: String,
    /// Bucket written to (required).
    pub bucket: String,
    /// How often the values are written. Default `10s`.
    pub push_interval: Duration,
    /// Per-entry-point metrics. Default `true`.
    pub add_entry_points_labels: bool,
    /// Per-router metrics. Default `false`.
    pub add_routers_labels: bool,
    /// Per-service metrics. Default `true`.
    pub add_services_labels: bool,
    /// Tags added to every point.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub additional_labels: BTreeMap<String, String>,
}

impl Default for MetricsInfluxDb2 {
    fn default() -> Self {
        MetricsInfluxDb2 {
            address: "http://localhost:8086".to_owned(),
            token: String::new(),
            org: String::new(),
            bucket: String::new(),
            push_interval: Duration::from_secs(10),
            add_entry_points_labels: true,
            add_routers_labels: false,
            add_services_labels: true,
            additional_labels: BTreeMap::new(),
        }
    }
}

/// Traefik's `metrics.otlp`: the same families as Prometheus, named as
/// Traefik names them over OTLP (`traefik_…`), pushed to a collector.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct MetricsOtlp {
    /// Per-entry-point metrics. Default `true`.
    pub add_entry_points_labels: bool,
    /// Per-router metrics. Default `false`.
    pub add_routers_labels: bool,
    /// Per-service metrics. Default `true`.
    pub add_services_labels: bool,
    /// Upper bounds of the request duration histograms, in seconds, when
    /// Prometheus is off (with Prometheus on, its `buckets` are used for
    /// both, as one set of handles feeds both). Default Traefik's:
    /// `0.005` to `10`.
    pub explicit_boundaries: Vec<Bucket>,
    /// How often metrics are pushed. Default `10s`.
    pub push_interval: Duration,
    /// `service.name` of the metrics' resource. Default `traefik`.
    pub service_name: String,
    /// More attributes of the metrics' resource.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub resource_attributes: BTreeMap<String, String>,
    /// OTLP over gRPC; wins over `http` when both are given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grpc: Option<super::otlp::OtlpGrpc>,
    /// OTLP over HTTP with protobuf bodies (the default, to
    /// `https://localhost:4318/v1/metrics`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http: Option<super::otlp::OtlpHttp>,
}

impl Default for MetricsOtlp {
    fn default() -> Self {
        MetricsOtlp {
            add_entry_points_labels: true,
            add_routers_labels: false,
            add_services_labels: true,
            explicit_boundaries: [
                0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
            ]
            .map(Bucket)
            .to_vec(),
            push_interval: Duration::from_secs(10),
            service_name: "traefik".to_owned(),
            resource_attributes: BTreeMap::new(),
            grpc: None,
            http: None,
        }
    }
}

impl MetricsOtlp {
    /// The collector, in the shape the exporters take.
    pub fn collector(&self) -> super::otlp::Otlp {
        super::otlp::Otlp {
            grpc: self.grpc.clone(),
            http: self.http.clone(),
        }
    }
}

/// A histogram bucket boundary, in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Bucket(pub f64);

// Boundaries are finite numbers (checked when read), so equality is total.
impl Eq for Bucket {}

impl<'de> Deserialize<'de> for Bucket {
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
                serde::de::Error::custom(format!("`{t}` is not a number of seconds"))
            })?,
        };
        if !value.is_finite() || value <= 0.0 {
            return Err(serde::de::Error::custom(format!(
                "bucket `{value}` must be a positive number of seconds"
            )));
        }
        Ok(Bucket(value))
    }
}

/// Prometheus metrics.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Prometheus {
    /// Upper bounds of the request duration histograms, in seconds.
    /// Default `0.1, 0.3, 1.2, 5` (Traefik's).
    pub buckets: Vec<Bucket>,
    /// Per-entry-point metrics. Default `true`.
    pub add_entry_points_labels: bool,
    /// Per-router metrics. Default `false` (Traefik's default).
    pub add_routers_labels: bool,
    /// Per-service metrics. Default `true`.
    pub add_services_labels: bool,
    /// The entry point that serves `/metrics`. Default `gangway`.
    pub entry_point: String,
    /// Prefix of every metric name. Default `gangway`; `traefik` gives
    /// Traefik's names, so existing dashboards work.
    pub prefix: String,
    /// Extra labels on the `*_requests_total` families: label name →
    /// the request header whose value it takes (empty when the request
    /// has none), as in Traefik.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub header_labels: BTreeMap<String, String>,
    /// Add no router for `/metrics`: the user routes to
    /// `prometheus@internal` with a router of their own. Default `false`.
    pub manual_routing: bool,
}

impl Default for Prometheus {
    fn default() -> Self {
        Prometheus {
            buckets: vec![Bucket(0.1), Bucket(0.3), Bucket(1.2), Bucket(5.0)],
            add_entry_points_labels: true,
            add_routers_labels: false,
            add_services_labels: true,
            entry_point: INTERNAL_ENTRY_POINT.to_owned(),
            prefix: "gangway".to_owned(),
            header_labels: BTreeMap::new(),
            manual_routing: false,
        }
    }
}

/// The access log.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct AccessLog {
    /// Where lines go; standard output when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_path: Option<PathBuf>,
    /// `common` (Traefik's CLF-like line), `genericCLF` (plain CLF) or
    /// `json`. Default `common`.
    pub format: AccessLogFormat,
    /// Lines held in memory waiting for the writer. Default 0 means 1024;
    /// past it, lines are dropped and counted, never slowing requests.
    pub buffering_size: usize,
    /// Which requests are logged.
    pub filters: AccessLogFilters,
    /// Which fields are written.
    pub fields: AccessLogFields,
    /// Log requests to gangway's own routers (API, dashboard, `/ping`,
    /// `/metrics`) too. Default `false`, as in Traefik v3.
    pub add_internals: bool,
    /// Send each entry as an OTLP log record (Traefik 3.3's
    /// `accessLog.otlp`) instead of writing a line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub otlp: Option<super::otlp::OtlpLogs>,
    /// With `otlp`, write the lines too. Default `false`.
    pub dual_output: bool,
}

/// Access log line formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum AccessLogFormat {
    /// `client - user [time] "METHOD path proto" status size "referer" "agent" count "router" "url" duration`.
    #[default]
    #[serde(rename = "common")]
    Common,
    /// The Common Log Format analyzers read: `common` without the count,
    /// router, URL and duration.
    #[serde(rename = "genericCLF")]
    GenericClf,
    /// One JSON object per line.
    #[serde(rename = "json")]
    Json,
}

/// Access log filters; a request is logged when any filter matches (or no
/// filter is set).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct AccessLogFilters {
    /// Status codes or ranges, e.g. `200`, `300-302`, `500-599`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub status_codes: Vec<String>,
    /// Log requests that were retried.
    pub retry_attempts: bool,
    /// Log requests that took longer than this.
    pub min_duration: Duration,
}

/// Per-field modes: `keep`, `drop` or `redact`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct AccessLogFields {
    /// Mode of fields not named. Default `keep`.
    pub default_mode: FieldMode,
    /// Mode per field name (`ClientAddr`, `RequestPath`, …).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub names: BTreeMap<String, FieldMode>,
    /// Request headers in JSON lines.
    pub headers: AccessLogHeaders,
}

impl Default for AccessLogFields {
    fn default() -> Self {
        AccessLogFields {
            default_mode: FieldMode::Keep,
            names: BTreeMap::new(),
            headers: AccessLogHeaders::default(),
        }
    }
}

/// Header fields of the access log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct AccessLogHeaders {
    /// Mode of headers not named. Default `drop`.
    pub default_mode: FieldMode,
    /// Mode per header name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub names: BTreeMap<String, FieldMode>,
}

impl Default for AccessLogHeaders {
    fn default() -> Self {
        AccessLogHeaders {
            default_mode: FieldMode::Drop,
            names: BTreeMap::new(),
        }
    }
}

/// What happens to one field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FieldMode {
    /// Written as is.
    #[default]
    Keep,
    /// Left out.
    Drop,
    /// Written as `REDACTED`.
    Redact,
}
