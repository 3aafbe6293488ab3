//! Prometheus metrics, kept and rendered by metrics-exporter-prometheus.
//!
//! The series of an object's requests (entry point, router, service; one
//! per protocol, method and status) are gangway's own: made when the
//! object first records a request with that protocol, method and status,
//! held by that object's [`Stats`], which `Registries` keeps across
//! configuration swaps, and written out with the exporter's formatting
//! functions next to what the exporter renders. Recording a request is a
//! few atomic adds on the current worker's shard of the series
//! (`shard`): no lock, no lookup by name, no formatting, and no cache line
//! another worker writes; reading sums the shards. The exporter's own
//! counters are one atomic every core would write, and its histograms keep
//! every sample, with its time, until they are folded into buckets.
//! Other series are the exporter's handles (`Counter`, `Gauge`).
//! Everything else `/metrics` shows is set where it happens:
//! configuration reloads when a runtime is published, certificates when
//! they are loaded or issued, dropped access log lines when one is dropped,
//! retries when the retry middleware sends a request again, a sleeping
//! service's wake-ups when they end (`sleep`); and, when `/metrics` is
//! read, the process's own figures, whether each server of a
//! health-checked service is up, read from the runtime the proxy routes
//! with (so a service that goes away leaves the exposition), and each
//! sleeping unit's state.
//!
//! Family names, types and label keys are Traefik v3's under
//! `metrics.prometheus.prefix`.

mod mirror;
pub mod push;
mod shard;
mod sleep;

pub use sleep::{STATES as SLEEP_STATES, SleepReading, SleepSeries, WAKE_BOUNDS};

use crate::tls::negotiated::Negotiated;
use http::{HeaderName, Method, Version};
use metrics::{Counter, Gauge, Key, KeyName, Label, Level, Metadata, Recorder};
use metrics_exporter_prometheus::formatting::{
    write_help_line, write_metric_line, write_type_line,
};
use metrics_exporter_prometheus::{LabelSet, PrometheusBuilder, PrometheusHandle};
use shard::RequestSeries;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

/// Label key of the response status (`other` past the distinct codes kept).
pub const CODE: &str = "code";
/// Label key of the request method.
pub const METHOD: &str = "method";
/// Label key of the protocol (`http`, `websocket`, `grpc`).
pub const PROTOCOL: &str = "protocol";
/// Label key of a certificate's main name.
pub const CN: &str = "cn";
/// Label key of a certificate's DNS names, sorted and comma-separated.
pub const SANS: &str = "sans";
/// Label key of a certificate's serial number, in decimal.
pub const SERIAL: &str = "serial";
/// Label key of a request's TLS version (`1.2`, `1.3`).
pub const TLS_VERSION: &str = "tls_version";
/// Label key of a request's TLS cipher suite (`TLS_AES_128_GCM_SHA256`).
pub const TLS_CIPHER: &str = "tls_cipher";
/// Label key of a server's URL.
pub const URL: &str = "url";

/// Status slots per (protocol, method) row; codes beyond this many distinct
/// ones in a row are counted under the last slot, labelled `other`, so a
/// backend inventing status codes cannot grow the exposition without end.
const SLOTS: usize = 24;
const PROTOCOLS: [&str; 5] = ["http", "websocket", "grpc", "sse", "grpc-web"];
/// Traefik's method values: the methods of HTTP/1.1, PATCH and HTTP/2's
/// PRI; any other is `EXTENSION_METHOD`, so a client cannot grow the
/// exposition by inventing methods.
const METHODS: [&str; 11] = [
    "GET",
    "HEAD",
    "POST",
    "PUT",
    "DELETE",
    "CONNECT",
    "OPTIONS",
    "TRACE",
    "PATCH",
    "PRI",
    "EXTENSION_METHOD",
];
/// Where gangway's handles say they were registered (the exporter ignores it).
const METADATA: Metadata<'static> =
    Metadata::new(module_path!(), Level::INFO, Some(module_path!()));

/// What an entry point or a stream router carries: its `protocol` label on
/// `open_connections` (Traefik v3's values) and its families' word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// TCP connections (HTTP ones included, as in Traefik).
    Tcp,
    /// UDP sessions.
    Udp,
}

impl Transport {
    /// The `protocol` label value.
    pub const fn label(self) -> &'static str {
        match self {
            Transport::Tcp => "TCP",
            Transport::Udp => "UDP",
        }
    }

    /// What one unit is: a connection or a session.
    const fn unit(self) -> &'static str {
        match self {
            Transport::Tcp => "connections",
            Transport::Udp => "sessions",
        }
    }

    /// The per-router families, without the prefix: open now (a gauge),
    /// opened, bytes received, bytes sent (counters).
    fn families(self) -> [String; 4] {
        let unit = self.unit();
        let word = self.label().to_ascii_lowercase();
        [
            format!("{word}_router_open_{unit}"),
            format!("{word}_router_{unit}_total"),
            format!("{word}_router_received_bytes_total"),
            format!("{word}_router_sent_bytes_total"),
        ]
    }
}

/// The protocol label of a request, as Traefik reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// Plain HTTP (any version).
    Http = 0,
    /// A WebSocket upgrade.
    WebSocket = 1,
    /// gRPC (`content-type: application/grpc*` over HTTP/2).
    Grpc = 2,
    /// Server-sent events (`accept: text/event-stream`).
    Sse = 3,
    /// gRPC-Web (`content-type: application/grpc-web*`).
    GrpcWeb = 4,
}

/// What is recorded for one finished request.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    /// The protocol label.
    pub protocol: Protocol,
    /// Index into the method labels.
    pub method: usize,
    /// The status sent to the client.
    pub status: u16,
    /// Time from request to end of response.
    pub duration: Duration,
    /// Request body size (from Content-Length; 0 when unknown).
    pub request_bytes: u64,
    /// Response body bytes sent.
    pub response_bytes: u64,
    /// What the connection's TLS handshake agreed on; `None` for plain
    /// connections.
    pub tls: Option<Negotiated>,
}

/// The method label index of `m`.
pub fn method_index(m: &Method) -> usize {
    match *m {
        Method::GET => 0,
        Method::HEAD => 1,
        Method::POST => 2,
        Method::PUT => 3,
        Method::DELETE => 4,
        Method::CONNECT => 5,
        Method::OPTIONS => 6,
        Method::TRACE => 7,
        Method::PATCH => 8,
        _ if m.as_str() == "PRI" => 9,
        _ => 10,
    }
}

/// The protocol label of a request.
pub fn protocol_of<B>(req: &http::Request<B>) -> Protocol {
    let headers = req.headers();
    let content_type = headers
        .get(http::header::CONTENT_TYPE)
        .map_or(&b""[..], |c| c.as_bytes());
    if headers
        .get(http::header::UPGRADE)
        .is_some_and(|u| u.as_bytes().eq_ignore_ascii_case(b"websocket"))
    {
        Protocol::WebSocket
    } else if headers.get(http::header::ACCEPT).is_some_and(|a| {
        a.as_bytes()
            .split(|b| *b == b',')
            .any(|item| item.trim_ascii().eq_ignore_ascii_case(b"text/event-stream"))
    }) {
        Protocol::Sse
    } else if content_type.starts_with(b"application/grpc-web") {
        Protocol::GrpcWeb
    } else if req.version() >= Version::HTTP_2 && content_type.starts_with(b"application/grpc") {
        Protocol::Grpc
    } else {
        Protocol::Http
    }
}

/// The kinds of object requests are counted for; each has its own families
/// (`entrypoint_requests_total`, `router_…`, `service_…`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ObjectKind {
    /// An entry point's.
    EntryPoint = 0,
    /// A router's.
    Router = 1,
    /// A service's.
    Service = 2,
}

impl ObjectKind {
    /// The label key naming the object, which is also its families' word.
    pub const fn label(self) -> &'static str {
        match self {
            ObjectKind::EntryPoint => "entrypoint",
            ObjectKind::Router => "router",
            ObjectKind::Service => "service",
        }
    }
}

/// Why the Prometheus settings cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    /// A duration histogram needs at least one finite, increasing bound.
    #[error(
        "metrics.prometheus.buckets: the duration histograms need at least one bound, finite and increasing"
    )]
    NoBuckets,
    /// A `headerLabels` name Prometheus would refuse, or one of the
    /// labels the families have already.
    #[error(
        "metrics.prometheus.headerLabels.{label}: `{label}` is not a label name Prometheus accepts (letters, digits and `_`, not starting with a digit nor `__`), or it is one of the families' own labels"
    )]
    BadLabel {
        /// The label name as given.
        label: String,
    },
    /// A `headerLabels` value that is not a header name.
    #[error("metrics.prometheus.headerLabels.{label}: `{header}` is not a header name")]
    BadHeader {
        /// The label name.
        label: String,
        /// The header name as given.
        header: String,
    },
}

/// The labels every request family has already: a header label may not
/// take one of their names.
const OWN_LABELS: [&str; 8] = [
    CODE,
    METHOD,
    PROTOCOL,
    "entrypoint",
    "router",
    "service",
    TLS_VERSION,
    TLS_CIPHER,
];

/// Whether Prometheus accepts `name` as a label name (and it is not one of
/// the names it keeps for itself, starting with `__`).
fn label_name_ok(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with("__")
}

/// What `service_server_up` reports: per service and server URL, whether
/// the server is up, read from the state the balancers route with.
pub type ServerStates = Box<dyn Fn() -> BTreeMap<(String, String), bool> + Send + Sync>;

/// The names of one object kind's families, and the help lines of those
/// gangway renders itself.
struct Families {
    requests: KeyName,
    requests_help: String,
    tls_requests: KeyName,
    duration: KeyName,
    duration_help: String,
    request_bytes: KeyName,
    request_bytes_help: String,
    response_bytes: KeyName,
    response_bytes_help: String,
}

/// One request series as registered: its labels, as rendered and as
/// given (for an OTLP push), and its figures.
struct Registered {
    labels: LabelSet,
    key_labels: Vec<Label>,
    figures: Arc<RequestSeries>,
}

/// Appends a histogram's `_bucket`, `_sum` and `_count` lines.
fn render_buckets(
    text: &mut String,
    name: &str,
    labels: &LabelSet,
    bounds: &[f64],
    totals: &shard::Totals,
) {
    let mut seen = 0u64;
    for (bound, count) in bounds.iter().zip(totals.counts.iter()) {
        seen += count;
        write_metric_line(
            text,
            name,
            Some("bucket"),
            labels,
            Some(("le", bound)),
            seen,
            None,
        );
    }
    seen += totals.counts.last().copied().unwrap_or(0);
    write_metric_line(
        text,
        name,
        Some("bucket"),
        labels,
        Some(("le", "+Inf")),
        seen,
        None,
    );
    write_metric_line::<&str, f64>(text, name, Some("sum"), labels, None, totals.sum, None);
    write_metric_line::<&str, u64>(text, name, Some("count"), labels, None, seen, None);
}

/// gangway's recorder and what `/metrics` renders from it.
pub struct Exporter {
    recorder: mirror::Tee,
    handle: PrometheusHandle,
    prefix: String,
    families: [Families; 3],
    bounds: Arc<[f64]>,
    /// Every request series registered, per object kind, in order.
    series: [Mutex<Vec<Registered>>; 3],
    /// `headerLabels`: label name and the request header it is read from,
    /// sorted by label name.
    header_labels: Box<[(String, HeaderName)]>,
    open_connections: KeyName,
    retries: KeyName,
    server_up: KeyName,
    /// Where the servers' states are read from, once there is one.
    servers: OnceLock<ServerStates>,
    reloads: Counter,
    last_reload: Gauge,
    certificates: Certificates,
    process: metrics_process::Collector,
    /// The families of services that sleep when idle.
    sleep: sleep::SleepFamilies,
}

impl std::fmt::Debug for Exporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exporter")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl Exporter {
    /// A recorder whose families are named `{prefix}_…`, with these upper
    /// bounds (seconds) for the request duration histograms.
    pub fn new(prefix: &str, buckets: &[f64]) -> Result<Self, MetricsError> {
        Self::with_header_labels(prefix, buckets, &BTreeMap::new())
    }

    /// As [`Exporter::new`], with `headerLabels` (label name → request
    /// header) added to the `*_requests_total` families.
    pub fn with_header_labels(
        prefix: &str,
        buckets: &[f64],
        header_labels: &BTreeMap<String, String>,
    ) -> Result<Self, MetricsError> {
        Self::build(prefix, buckets, header_labels, false)
    }

    /// As [`Exporter::with_header_labels`]; with `push`, every counter's
    /// and gauge's value is also kept where [`Exporter::snapshot`] reads
    /// it, for an OTLP push.
    pub fn build(
        prefix: &str,
        buckets: &[f64],
        header_labels: &BTreeMap<String, String>,
        push: bool,
    ) -> Result<Self, MetricsError> {
        let increasing = buckets.windows(2).all(|pair| pair[0] < pair[1]);
        if buckets.is_empty() || !increasing || !buckets.iter().all(|b| b.is_finite()) {
            return Err(MetricsError::NoBuckets);
        }
        let header_labels = header_labels
            .iter()
            .map(|(label, header)| {
                if !label_name_ok(label) || OWN_LABELS.contains(&label.as_str()) {
                    return Err(MetricsError::BadLabel {
                        label: label.clone(),
                    });
                }
                let name =
                    HeaderName::try_from(header.trim()).map_err(|_| MetricsError::BadHeader {
                        label: label.clone(),
                        header: header.clone(),
                    })?;
                Ok((label.clone(), name))
            })
            .collect::<Result<Box<[_]>, _>>()?;
        let recorder = PrometheusBuilder::new().build_recorder();
        let handle = recorder.handle();
        let recorder = mirror::Tee::new(recorder, push);
        let name = |family: &str| KeyName::from(format!("{prefix}_{family}"));
        let families = [
            ObjectKind::EntryPoint,
            ObjectKind::Router,
            ObjectKind::Service,
        ]
        .map(|kind| {
            let object = kind.label();
            let per = format!("per {object}, code, method and protocol.");
            let families = Families {
                requests: name(&format!("{object}_requests_total")),
                requests_help: format!("How many HTTP requests processed, {per}"),
                tls_requests: name(&format!("{object}_requests_tls_total")),
                duration: name(&format!("{object}_request_duration_seconds")),
                duration_help: format!("How long requests took, {per}"),
                request_bytes: name(&format!("{object}_requests_bytes_total")),
                request_bytes_help: format!("Total request body bytes, {per}"),
                response_bytes: name(&format!("{object}_responses_bytes_total")),
                response_bytes_help: format!("Total response body bytes, {per}"),
            };
            // With header labels, the exporter keeps the requests counters
            // (a series per header value, found at each request).
            recorder.describe_counter(
                families.requests.clone(),
                None,
                families.requests_help.clone().into(),
            );
            recorder.describe_counter(
                families.tls_requests.clone(),
                None,
                format!(
                    "How many HTTPS requests processed, per {object}, TLS version and cipher suite."
                )
                .into(),
            );
            families
        });
        let open_connections = name("open_connections");
        recorder.describe_gauge(
            open_connections.clone(),
            None,
            "Connections (UDP: sessions) open now, per entry point and protocol.".into(),
        );
        for transport in [Transport::Tcp, Transport::Udp] {
            let (upper, unit) = (transport.label(), transport.unit());
            let helps = [
                format!("{upper} {unit} open now, per router."),
                format!("{upper} {unit} forwarded, per router."),
                format!("Bytes received from {upper} clients, per router."),
                format!("Bytes sent to {upper} clients, per router."),
            ];
            for (i, (family, help)) in transport.families().iter().zip(helps).enumerate() {
                if i == 0 {
                    recorder.describe_gauge(name(family), None, help.into());
                } else {
                    recorder.describe_counter(name(family), None, help.into());
                }
            }
        }
        let reloads_name = name("config_reloads_total");
        recorder.describe_counter(
            reloads_name.clone(),
            None,
            "Configuration reloads applied.".into(),
        );
        let reloads = recorder.register_counter(&Key::from_name(reloads_name), &METADATA);
        let last_name = name("config_last_reload_success");
        recorder.describe_gauge(
            last_name.clone(),
            None,
            "Time of the last configuration applied, in seconds since the epoch.".into(),
        );
        let last_reload = recorder.register_gauge(&Key::from_name(last_name), &METADATA);
        let retries = name("service_retries_total");
        recorder.describe_counter(
            retries.clone(),
            None,
            "How many times the retry middleware sent a request again, per service.".into(),
        );
        let process = metrics_process::Collector::default();
        metrics::with_local_recorder(&recorder, || process.describe());
        let sleep = sleep::SleepFamilies::new(prefix, &recorder);
        Ok(Exporter {
            sleep,
            certificates: Certificates::new(name("tls_certs_not_after")),
            header_labels,
            retries,
            server_up: name("service_server_up"),
            servers: OnceLock::new(),
            recorder,
            handle,
            prefix: prefix.to_owned(),
            families,
            bounds: buckets.into(),
            series: Default::default(),
            open_connections,
            reloads,
            last_reload,
            process,
        })
    }

    /// The Prometheus text exposition of everything recorded so far, with
    /// the process's figures read now.
    pub fn render(&self) -> String {
        metrics::with_local_recorder(&self.recorder, || self.process.collect());
        let mut text = self.handle.render();
        self.render_series(&mut text);
        self.render_servers(&mut text);
        self.sleep.render(&mut text);
        text.push_str(&self.certificates.render());
        text
    }

    /// Reads whether servers are up from `states`, at each render from
    /// then on (per-service metrics only, as in Traefik).
    pub fn watch_servers(&self, states: ServerStates) {
        let _ = self.servers.set(states);
    }

    /// The request headers whose values `headerLabels` puts in labels, in
    /// label order; empty when none are configured.
    pub fn label_headers(&self) -> Vec<HeaderName> {
        self.header_labels.iter().map(|(_, h)| h.clone()).collect()
    }

    /// Appends `service_server_up`: 1 or 0 per server of every service the
    /// proxy routes to that has a health check, from the very state its
    /// balancer routes with.
    fn render_servers(&self, text: &mut String) {
        let servers = self.servers_up();
        if servers.is_empty() {
            return;
        }
        let name = self.server_up.as_str();
        write_help_line(
            text,
            name,
            None,
            None,
            "Whether a server of a health-checked service is up (1) or down (0).",
        );
        write_type_line(text, name, None, None, "gauge");
        for ((service, url), up) in servers {
            let labels = LabelSet::from_key_and_global(
                &Key::from_parts(
                    self.server_up.clone(),
                    vec![
                        Label::new(ObjectKind::Service.label(), service.to_owned()),
                        Label::new(URL, url.to_owned()),
                    ],
                ),
                &Default::default(),
            );
            write_metric_line::<&str, u8>(text, name, None, &labels, None, u8::from(up), None);
        }
        text.push('\n');
    }

    /// Whether each server of a health-checked service is up, by service
    /// and URL, from the runtime the proxy routes with.
    fn servers_up(&self) -> BTreeMap<(String, String), bool> {
        self.servers
            .get()
            .map(|states| states())
            .unwrap_or_default()
    }

    /// The prefix of every family's name.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Every series' value now, for a push (OTLP, StatsD, Datadog,
    /// InfluxDB 2): empty unless the
    /// exporter was built with `push`. Names carry [`Exporter::prefix`].
    pub fn snapshot(&self) -> Snapshot {
        let own = format!("{}_", self.prefix);
        let mut counters: Vec<(Key, u64)> = self
            .recorder
            .counters()
            .into_iter()
            .filter(|(key, _)| key.name().starts_with(&own))
            .collect();
        let mut gauges: Vec<(Key, f64)> = self
            .recorder
            .gauges()
            .into_iter()
            .filter(|(key, _)| key.name().starts_with(&own))
            .collect();
        if self.recorder.pushes() {
            for ((service, url), up) in self.servers_up() {
                let key = Key::from_parts(
                    self.server_up.clone(),
                    vec![
                        Label::new(ObjectKind::Service.label(), service),
                        Label::new(URL, url),
                    ],
                );
                gauges.push((key, if up { 1.0 } else { 0.0 }));
            }
        }
        let mut histograms = Vec::new();
        if self.recorder.pushes() {
            gauges.extend(self.certificates.snapshot());
            self.sleep.snapshot(&mut gauges, &mut histograms);
            for (families, series) in self.families.iter().zip(&self.series) {
                let series = series.lock().unwrap_or_else(PoisonError::into_inner);
                for registered in series.iter() {
                    let totals = registered.figures.totals();
                    let key = |name: &KeyName| {
                        Key::from_parts(name.clone(), registered.key_labels.clone())
                    };
                    if self.header_labels.is_empty() {
                        counters.push((key(&families.requests), totals.requests));
                    }
                    counters.push((key(&families.request_bytes), totals.request_bytes));
                    counters.push((key(&families.response_bytes), totals.response_bytes));
                    histograms.push(HistogramPoint {
                        key: key(&families.duration),
                        bounds: registered.figures.bounds().clone(),
                        counts: totals.counts,
                        sum: totals.sum,
                    });
                }
            }
        }
        Snapshot {
            counters,
            gauges,
            histograms,
        }
    }

    /// Appends the request families that have at least one series: the
    /// requests (unless the exporter counts them, with header labels), the
    /// bytes each way, the durations.
    fn render_series(&self, text: &mut String) {
        for (families, series) in self.families.iter().zip(&self.series) {
            let series = series.lock().unwrap_or_else(PoisonError::into_inner);
            if series.is_empty() {
                continue;
            }
            let totals: Vec<shard::Totals> = series.iter().map(|r| r.figures.totals()).collect();
            let counters = [
                (
                    &families.requests,
                    &families.requests_help,
                    (|t: &shard::Totals| t.requests) as fn(&shard::Totals) -> u64,
                ),
                (&families.request_bytes, &families.request_bytes_help, |t| {
                    t.request_bytes
                }),
                (
                    &families.response_bytes,
                    &families.response_bytes_help,
                    |t| t.response_bytes,
                ),
            ];
            let skip = usize::from(!self.header_labels.is_empty());
            for (name, help, figure) in &counters[skip..] {
                let name = name.as_str();
                write_help_line(text, name, None, None, help);
                write_type_line(text, name, None, None, "counter");
                for (registered, totals) in series.iter().zip(&totals) {
                    write_metric_line::<&str, u64>(
                        text,
                        name,
                        None,
                        &registered.labels,
                        None,
                        figure(totals),
                        None,
                    );
                }
                text.push('\n');
            }
            let name = families.duration.as_str();
            write_help_line(text, name, None, None, &families.duration_help);
            write_type_line(text, name, None, None, "histogram");
            for (registered, totals) in series.iter().zip(&totals) {
                render_buckets(text, name, &registered.labels, &self.bounds, totals);
            }
            text.push('\n');
        }
    }

    /// A new request series of `kind` with these labels.
    fn register_series(&self, kind: ObjectKind, labels: Vec<Label>) -> Arc<RequestSeries> {
        let figures = Arc::new(RequestSeries::new(self.bounds.clone()));
        let key = Key::from_parts(self.families[kind as usize].requests.clone(), labels);
        let rendered = LabelSet::from_key_and_global(&key, &Default::default());
        let (_, key_labels) = key.into_parts();
        self.series[kind as usize]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Registered {
                labels: rendered,
                key_labels,
                figures: figures.clone(),
            });
        figures
    }

    /// The request counters of one object, registered as its requests
    /// arrive.
    pub fn stats(self: &Arc<Self>, kind: ObjectKind, name: &str) -> Stats {
        self.stats_on(kind, name, Transport::Tcp)
    }

    /// The request counters of router `name`, whose series also carry the
    /// name of its service (`service`), as Traefik's router families do.
    pub fn router_stats(self: &Arc<Self>, name: &str, service: &str) -> Stats {
        let mut stats = self.stats_on(ObjectKind::Router, name, Transport::Tcp);
        stats.service = Some(Arc::from(service));
        stats
    }

    /// The counters of an entry point that carries `transport`: its
    /// `open_connections` series has that `protocol` label.
    pub fn entry_point_stats(self: &Arc<Self>, name: &str, transport: Transport) -> Stats {
        self.stats_on(ObjectKind::EntryPoint, name, transport)
    }

    fn stats_on(self: &Arc<Self>, kind: ObjectKind, name: &str, transport: Transport) -> Stats {
        let open = if kind == ObjectKind::EntryPoint {
            let key = Key::from_parts(
                self.open_connections.clone(),
                vec![
                    Label::new(kind.label(), name.to_owned()),
                    Label::from_static_parts(PROTOCOL, transport.label()),
                ],
            );
            let gauge = self.recorder.register_gauge(&key, &METADATA);
            // Registered now, so an idle entry point shows 0 rather than nothing.
            gauge.set(0.0);
            gauge
        } else {
            Gauge::noop()
        };
        Stats {
            exporter: self.clone(),
            kind,
            name: Arc::from(name),
            service: None,
            rows: std::array::from_fn(|_| OnceLock::new()),
            tls: OnceLock::new(),
            retries: OnceLock::new(),
            open,
        }
    }

    /// The counters of the TCP or UDP router `router`. Registering a series
    /// again returns the one already there, so they run on across
    /// configuration swaps.
    pub fn stream_stats(&self, transport: Transport, router: &str) -> StreamStats {
        let key = |family: &str| {
            Key::from_parts(
                format!("{}_{family}", self.prefix),
                vec![Label::new(ObjectKind::Router.label(), router.to_owned())],
            )
        };
        let [open, opened, received, sent] = transport.families();
        let open = self.recorder.register_gauge(&key(&open), &METADATA);
        // Registered now, so a router without traffic shows 0 rather than nothing.
        open.increment(0.0);
        StreamStats {
            open,
            opened: self.recorder.register_counter(&key(&opened), &METADATA),
            received: self.recorder.register_counter(&key(&received), &METADATA),
            sent: self.recorder.register_counter(&key(&sent), &METADATA),
        }
    }

    /// Records that configuration `generation` was applied, the newest of
    /// its providers' configurations having arrived at `last_sync` (seconds
    /// since the epoch).
    pub fn configuration_applied(&self, generation: u64, last_sync: Option<u64>) {
        self.reloads.absolute(generation);
        if let Some(at) = last_sync {
            self.last_reload.set(at as f64);
        }
    }

    /// The counter of access log lines dropped because the writer fell behind.
    pub fn access_log_dropped(&self) -> Counter {
        let name = KeyName::from(format!("{}_accesslog_dropped_lines_total", self.prefix));
        self.recorder.describe_counter(
            name.clone(),
            None,
            "Access log lines dropped because the writer fell behind.".into(),
        );
        self.recorder
            .register_counter(&Key::from_name(name), &METADATA)
    }

    /// The gauge that says whether the shared store of ACME resolver
    /// `resolver` answers (1) or not (0).
    pub fn acme_store_up(&self, resolver: &str) -> Gauge {
        let name = KeyName::from(format!("{}_acme_store_up", self.prefix));
        self.recorder.describe_gauge(
            name.clone(),
            None,
            "Whether the shared ACME store of a certificate resolver answers (1) or not (0)."
                .into(),
        );
        self.recorder.register_gauge(
            &Key::from_parts(name, vec![Label::new("resolver", resolver.to_owned())]),
            &METADATA,
        )
    }

    /// The counter of certificate orders for `resolver`'s certificates
    /// placed through `issuer` (the resolver itself or one of its
    /// `fallback`), ending in `result` (`obtained` or `failed`).
    pub fn acme_orders(&self, resolver: &str, issuer: &str, result: &'static str) -> Counter {
        let name = KeyName::from(format!("{}_acme_orders_total", self.prefix));
        self.recorder.describe_counter(
            name.clone(),
            None,
            "Certificate orders by the resolver a certificate is kept for, the resolver whose CA it went to, and how it ended."
                .into(),
        );
        let labels = vec![
            Label::new("resolver", resolver.to_owned()),
            Label::new("issuer", issuer.to_owned()),
            Label::new("result", result),
        ];
        self.recorder
            .register_counter(&Key::from_parts(name, labels), &METADATA)
    }

    /// Replaces the certificates served from `source` (`acme` or `file`).
    pub fn set_certificates(&self, source: &'static str, certificates: Vec<CertificateExpiry>) {
        self.certificates.set(source, certificates);
    }
}

/// The values of every series at one moment, for an OTLP push.
#[derive(Debug, Default)]
pub struct Snapshot {
    /// Counters and their totals.
    pub counters: Vec<(Key, u64)>,
    /// Gauges and their values.
    pub gauges: Vec<(Key, f64)>,
    /// Duration histograms.
    pub histograms: Vec<HistogramPoint>,
}

/// One duration histogram series at one moment.
#[derive(Debug)]
pub struct HistogramPoint {
    /// Its name and labels.
    pub key: Key,
    /// Upper bounds, in seconds.
    pub bounds: Arc<[f64]>,
    /// Samples per bucket, not cumulative; one more than `bounds`, the
    /// last above every bound.
    pub counts: Vec<u64>,
    /// Sum of the samples, in seconds.
    pub sum: f64,
}

/// One certificate's end of validity, for `tls_certs_not_after`, with
/// the labels Traefik gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertificateExpiry {
    /// The subject's common name (empty when it has none).
    pub cn: String,
    /// The serial number, in decimal.
    pub serial: String,
    /// The DNS names of its subject alternative names, sorted.
    pub sans: Vec<String>,
    /// End of validity, seconds since the epoch.
    pub not_after: i64,
}

/// The certificate gauges. Certificates come and go with the configuration
/// and the exporter cannot forget a series, so they live in a recorder of
/// their own, rebuilt whenever the set changes.
struct Certificates {
    name: KeyName,
    state: Mutex<CertificateState>,
}

#[derive(Default)]
struct CertificateState {
    by_source: std::collections::BTreeMap<&'static str, Vec<CertificateExpiry>>,
    rendered: Option<PrometheusHandle>,
}

impl Certificates {
    fn new(name: KeyName) -> Self {
        Certificates {
            name,
            state: Mutex::default(),
        }
    }

    fn set(&self, source: &'static str, certificates: Vec<CertificateExpiry>) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.by_source.get(source) == Some(&certificates) {
            return;
        }
        state.by_source.insert(source, certificates);
        let recorder = PrometheusBuilder::new().build_recorder();
        recorder.describe_gauge(
            self.name.clone(),
            None,
            "End of validity of each certificate served, in seconds since the epoch.".into(),
        );
        for (key, not_after) in self.keyed(&state) {
            recorder.register_gauge(&key, &METADATA).set(not_after);
        }
        state.rendered = Some(recorder.handle());
    }

    /// Every certificate's series and end of validity.
    fn keyed(&self, state: &CertificateState) -> Vec<(Key, f64)> {
        state
            .by_source
            .values()
            .flatten()
            .map(|cert| {
                let labels = vec![
                    Label::new(CN, cert.cn.clone()),
                    Label::new(SERIAL, cert.serial.clone()),
                    Label::new(SANS, cert.sans.join(",")),
                ];
                let key = Key::from_parts(self.name.clone(), labels);
                (key, cert.not_after as f64)
            })
            .collect()
    }

    /// Every certificate's gauge now, for a push.
    fn snapshot(&self) -> Vec<(Key, f64)> {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        self.keyed(&state)
    }

    fn render(&self) -> String {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state
            .rendered
            .as_ref()
            .map(PrometheusHandle::render)
            .unwrap_or_default()
    }
}

/// The counters of one TCP or UDP router.
pub struct StreamStats {
    open: Gauge,
    opened: Counter,
    received: Counter,
    sent: Counter,
}

impl StreamStats {
    /// Counts a connection (or session) opened; it counts as open until
    /// the guard is dropped.
    pub fn open(&self) -> OpenStream {
        self.opened.increment(1);
        self.open.increment(1.0);
        OpenStream(self.open.clone())
    }

    /// Counts bytes received from the client.
    pub fn received(&self, bytes: u64) {
        self.received.increment(bytes);
    }

    /// Counts bytes sent to the client.
    pub fn sent(&self, bytes: u64) {
        self.sent.increment(bytes);
    }
}

/// A connection counted in its router's open connections until dropped.
pub struct OpenStream(Gauge);

impl Drop for OpenStream {
    fn drop(&mut self) {
        self.0.decrement(1.0);
    }
}

#[derive(Default)]
struct Cell {
    code: AtomicU16,
    series: OnceLock<Arc<RequestSeries>>,
}

type Row = [Cell; SLOTS];

/// The request series of one entry point, router or service. A (protocol,
/// method) row is allocated on its first request, and a status's handles
/// are registered on its first request, so objects that see no traffic (or
/// only GETs) cost next to nothing.
pub struct Stats {
    exporter: Arc<Exporter>,
    kind: ObjectKind,
    name: Arc<str>,
    /// A router's service, its series' `service` label.
    service: Option<Arc<str>>,
    rows: [OnceLock<Box<Row>>; PROTOCOLS.len() * METHODS.len()],
    /// The `*_requests_tls_total` counters, by [`Negotiated::index`],
    /// allocated on the first request over TLS.
    tls: OnceLock<Box<[OnceLock<Counter>]>>,
    /// `service_retries_total`, registered on the first retry.
    retries: OnceLock<Counter>,
    open: Gauge,
}

impl Stats {
    /// Counts a connection opened (entry points only).
    pub fn connection_opened(&self) {
        self.open.increment(1.0);
    }

    /// Counts a connection closed.
    pub fn connection_closed(&self) {
        self.open.decrement(1.0);
    }

    /// Records one finished request.
    pub fn record(&self, s: &Sample) {
        self.record_with_headers(s, &[]);
    }

    /// Records one finished request whose `headerLabels` headers had these
    /// values (in label order; ignored when no header labels are
    /// configured).
    pub fn record_with_headers(&self, s: &Sample, header_values: &[String]) {
        let method = s.method.min(METHODS.len() - 1);
        let row = self.rows[s.protocol as usize * METHODS.len() + method]
            .get_or_init(|| Box::new(std::array::from_fn(|_| Cell::default())));
        let cell = slot(row, s.status);
        let series = cell
            .series
            .get_or_init(|| self.register(s.protocol, method, cell.code.load(Ordering::Relaxed)));
        let by_headers = !self.exporter.header_labels.is_empty();
        if by_headers {
            self.count_with_headers(s.protocol, method, cell, header_values);
        }
        series.record(!by_headers, s.duration, s.request_bytes, s.response_bytes);
        if let Some(tls) = s.tls {
            self.tls
                .get_or_init(|| (0..Negotiated::COUNT).map(|_| OnceLock::new()).collect())
                [tls.index()]
            .get_or_init(|| self.register_tls(tls))
            .increment(1);
        }
    }

    /// Counts one request of a retried service: `retries` times sent
    /// again.
    pub fn retried(&self, retries: u64) {
        self.retries
            .get_or_init(|| {
                let key = Key::from_parts(
                    self.exporter.retries.clone(),
                    vec![Label::new(self.kind.label(), self.name.to_string())],
                );
                self.exporter.recorder.register_counter(&key, &METADATA)
            })
            .increment(retries);
    }

    /// The labels of a request series, in Traefik's order.
    fn labels(&self, protocol: Protocol, method: usize, code: u16) -> Vec<Label> {
        let code = if code == 0 {
            Label::from_static_parts(CODE, "other")
        } else {
            Label::new(CODE, code.to_string())
        };
        let mut labels = vec![
            code,
            Label::from_static_parts(METHOD, METHODS[method]),
            Label::from_static_parts(PROTOCOL, PROTOCOLS[protocol as usize]),
            Label::new(self.kind.label(), self.name.to_string()),
        ];
        if let Some(service) = &self.service {
            labels.push(Label::new(ObjectKind::Service.label(), service.to_string()));
        }
        labels
    }

    /// `*_requests_total` with the `headerLabels` labels: one series per
    /// combination of header values, so it is looked up by its labels at
    /// each request; this is paid only when header labels are configured.
    fn count_with_headers(
        &self,
        protocol: Protocol,
        method: usize,
        cell: &Cell,
        values: &[String],
    ) {
        let mut labels = self.labels(protocol, method, cell.code.load(Ordering::Relaxed));
        for (i, (label, _)) in self.exporter.header_labels.iter().enumerate() {
            let value = values.get(i).cloned().unwrap_or_default();
            labels.push(Label::new(label.clone(), value));
        }
        let families = &self.exporter.families[self.kind as usize];
        let key = Key::from_parts(families.requests.clone(), labels);
        self.exporter
            .recorder
            .register_counter(&key, &METADATA)
            .increment(1);
    }

    /// The `*_requests_tls_total` counter of one version and cipher suite.
    fn register_tls(&self, tls: Negotiated) -> Counter {
        let mut labels = vec![
            Label::from_static_parts(TLS_VERSION, tls.version()),
            Label::from_static_parts(TLS_CIPHER, tls.cipher()),
            Label::new(self.kind.label(), self.name.to_string()),
        ];
        if let Some(service) = &self.service {
            labels.push(Label::new(ObjectKind::Service.label(), service.to_string()));
        }
        let families = &self.exporter.families[self.kind as usize];
        let key = Key::from_parts(families.tls_requests.clone(), labels);
        self.exporter.recorder.register_counter(&key, &METADATA)
    }

    /// A new request series; `code` 0 is the overflow cell.
    fn register(&self, protocol: Protocol, method: usize, code: u16) -> Arc<RequestSeries> {
        self.exporter
            .register_series(self.kind, self.labels(protocol, method, code))
    }
}

/// The cell for `status` in a row: the one already holding that code, else
/// a free one claimed with a compare-and-swap, else the overflow cell.
fn slot(row: &Row, status: u16) -> &Cell {
    for cell in &row[..SLOTS - 1] {
        let code = cell.code.load(Ordering::Relaxed);
        if code == status {
            return cell;
        }
        if code == 0 {
            match cell
                .code
                .compare_exchange(0, status, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return cell,
                Err(now) if now == status => return cell,
                Err(_) => continue,
            }
        }
    }
    &row[SLOTS - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(method: usize, status: u16, ms: u64) -> Sample {
        Sample {
            protocol: Protocol::Http,
            method,
            status,
            duration: Duration::from_millis(ms),
            request_bytes: 3,
            response_bytes: 10,
            tls: None,
        }
    }

    fn line<'a>(text: &'a str, series: &str) -> Option<&'a str> {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
    }

    #[test]
    fn counts_land_in_their_code_method_and_bucket() {
        let exporter = Arc::new(Exporter::new("gangway", &[0.1, 1.0]).unwrap());
        let stats = exporter.stats(ObjectKind::Router, "a@file");
        stats.record(&sample(0, 200, 50));
        stats.record(&sample(0, 200, 500));
        stats.record(&sample(0, 404, 5000));
        let text = exporter.render();
        let labels =
            |code: &str| format!(r#"code="{code}",method="GET",protocol="http",router="a@file""#);
        let get = |series: String| line(&text, &series).map(str::to_owned);
        assert_eq!(
            get(format!(
                "gangway_router_requests_total{{{}}}",
                labels("200")
            ))
            .as_deref(),
            Some("2"),
            "{text}"
        );
        assert_eq!(
            get(format!(
                "gangway_router_requests_total{{{}}}",
                labels("404")
            ))
            .as_deref(),
            Some("1")
        );
        assert_eq!(
            get(format!(
                "gangway_router_request_duration_seconds_bucket{{{},le=\"0.1\"}}",
                labels("200")
            ))
            .as_deref(),
            Some("1")
        );
        assert_eq!(
            get(format!(
                "gangway_router_request_duration_seconds_bucket{{{},le=\"1\"}}",
                labels("200")
            ))
            .as_deref(),
            Some("2")
        );
        assert_eq!(
            get(format!(
                "gangway_router_request_duration_seconds_bucket{{{},le=\"+Inf\"}}",
                labels("404")
            ))
            .as_deref(),
            Some("1")
        );
        assert_eq!(
            get(format!(
                "gangway_router_responses_bytes_total{{{}}}",
                labels("200")
            ))
            .as_deref(),
            Some("20")
        );
        assert_eq!(
            get(format!(
                "gangway_router_requests_bytes_total{{{}}}",
                labels("404")
            ))
            .as_deref(),
            Some("3")
        );
    }

    #[test]
    fn many_distinct_codes_overflow_into_one_series() {
        let exporter = Arc::new(Exporter::new("gangway", &[1.0]).unwrap());
        let stats = exporter.stats(ObjectKind::Service, "s@file");
        for status in 200..260u16 {
            stats.record(&sample(2, status, 0));
        }
        let text = exporter.render();
        let series: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("gangway_service_requests_total{"))
            .collect();
        assert_eq!(series.len(), SLOTS, "{text}");
        let other = line(
            &text,
            r#"gangway_service_requests_total{code="other",method="POST",protocol="http",service="s@file"}"#,
        );
        assert_eq!(other, Some(&*(60 - (SLOTS - 1)).to_string()), "{text}");
    }

    #[test]
    fn open_connections_follow_the_entry_point() {
        let exporter = Arc::new(Exporter::new("gangway", &[1.0]).unwrap());
        let stats = exporter.stats(ObjectKind::EntryPoint, "web");
        let series = r#"gangway_open_connections{entrypoint="web",protocol="TCP"}"#;
        assert_eq!(line(&exporter.render(), series), Some("0"));
        stats.connection_opened();
        stats.connection_opened();
        stats.connection_closed();
        assert_eq!(line(&exporter.render(), series), Some("1"));
    }

    #[test]
    fn stream_routers_count_connections_and_bytes_across_swaps() {
        let exporter = Arc::new(Exporter::new("gangway", &[1.0]).unwrap());
        let udp = exporter.entry_point_stats("dns", Transport::Udp);
        udp.connection_opened();
        let text = exporter.render();
        assert_eq!(
            line(
                &text,
                r#"gangway_open_connections{entrypoint="dns",protocol="UDP"}"#
            ),
            Some("1"),
            "{text}"
        );
        let first = exporter.stream_stats(Transport::Tcp, "db@file");
        let open = first.open();
        first.received(10);
        first.sent(7);
        // A configuration swap compiles the router again: the same series.
        let again = exporter.stream_stats(Transport::Tcp, "db@file");
        again.received(5);
        let held = again.open();
        drop(open);
        let text = exporter.render();
        let value = |series: &str| line(&text, series).map(str::to_owned);
        let router = r#"{router="db@file"}"#;
        assert_eq!(
            value(&format!("gangway_tcp_router_open_connections{router}")).as_deref(),
            Some("1"),
            "{text}"
        );
        assert_eq!(
            value(&format!("gangway_tcp_router_connections_total{router}")).as_deref(),
            Some("2")
        );
        assert_eq!(
            value(&format!("gangway_tcp_router_received_bytes_total{router}")).as_deref(),
            Some("15")
        );
        assert_eq!(
            value(&format!("gangway_tcp_router_sent_bytes_total{router}")).as_deref(),
            Some("7")
        );
        drop(held);
        let sessions = exporter.stream_stats(Transport::Udp, "dns@file");
        drop(sessions.open());
        let text = exporter.render();
        assert_eq!(
            line(
                &text,
                r#"gangway_udp_router_open_sessions{router="dns@file"}"#
            ),
            Some("0"),
            "{text}"
        );
        assert_eq!(
            line(
                &text,
                r#"gangway_udp_router_sessions_total{router="dns@file"}"#
            ),
            Some("1")
        );
    }

    #[test]
    fn certificates_that_go_away_leave_the_exposition() {
        let exporter = Exporter::new("gangway", &[1.0]).unwrap();
        let cert = |name: &str, not_after| CertificateExpiry {
            cn: name.to_owned(),
            serial: "1234567890123456789".to_owned(),
            sans: vec![name.to_owned(), format!("www.{name}")],
            not_after,
        };
        exporter.set_certificates(
            "file",
            vec![cert("a.test", 1_900_000_000), cert("b.test", 2_000_000_000)],
        );
        let text = exporter.render();
        assert_eq!(
            line(
                &text,
                r#"gangway_tls_certs_not_after{cn="a.test",serial="1234567890123456789",sans="a.test,www.a.test"}"#
            ),
            Some("1900000000"),
            "{text}"
        );
        exporter.set_certificates("file", vec![cert("b.test", 2_000_000_000)]);
        let text = exporter.render();
        assert!(!text.contains("a.test"), "{text}");
        assert!(text.contains(r#"cn="b.test""#), "{text}");
    }

    #[test]
    fn reloads_and_process_figures_are_exported() {
        let exporter = Exporter::new("gangway", &[1.0]).unwrap();
        exporter.configuration_applied(3, Some(1_800_000_000));
        let text = exporter.render();
        assert_eq!(
            line(&text, "gangway_config_reloads_total"),
            Some("3"),
            "{text}"
        );
        assert_eq!(
            line(&text, "gangway_config_last_reload_success"),
            Some("1800000000")
        );
        let rss: f64 = line(&text, "process_resident_memory_bytes")
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no resident memory in\n{text}"));
        assert!(rss > 0.0);
        assert!(line(&text, "process_open_fds").is_some(), "{text}");
        assert!(
            line(&text, "process_start_time_seconds").is_some(),
            "{text}"
        );
    }

    #[test]
    fn tls_requests_are_counted_by_version_and_cipher_with_the_routers_service() {
        let exporter = Arc::new(Exporter::new("traefik", &[1.0]).unwrap());
        let router = exporter.router_stats("app@file", "app-svc@file");
        let mut s = sample(0, 200, 1);
        s.tls = Some(Negotiated::from_wire(Some(0x0304), Some(0x1301)));
        router.record(&s);
        router.record(&s);
        router.record(&sample(0, 200, 1));
        let text = exporter.render();
        assert_eq!(
            line(
                &text,
                r#"traefik_router_requests_tls_total{tls_version="1.3",tls_cipher="TLS_AES_128_GCM_SHA256",router="app@file",service="app-svc@file"}"#
            ),
            Some("2"),
            "{text}"
        );
        assert_eq!(
            line(
                &text,
                r#"traefik_router_requests_total{code="200",method="GET",protocol="http",router="app@file",service="app-svc@file"}"#
            ),
            Some("3"),
            "{text}"
        );
    }

    #[test]
    fn other_methods_are_extension_method_as_in_traefik() {
        assert_eq!(
            METHODS[method_index(&Method::from_bytes(b"PRI").unwrap())],
            "PRI"
        );
        assert_eq!(
            METHODS[method_index(&Method::from_bytes(b"PURGE").unwrap())],
            "EXTENSION_METHOD"
        );
    }

    #[test]
    fn header_labels_split_requests_total_by_header_value() {
        let labels = BTreeMap::from([("useragent".to_owned(), "User-Agent".to_owned())]);
        let exporter = Arc::new(Exporter::with_header_labels("traefik", &[1.0], &labels).unwrap());
        assert_eq!(exporter.label_headers(), [http::header::USER_AGENT]);
        let stats = exporter.stats(ObjectKind::EntryPoint, "web");
        stats.record_with_headers(&sample(0, 200, 1), &["curl".to_owned()]);
        stats.record_with_headers(&sample(0, 200, 1), &["curl".to_owned()]);
        stats.record_with_headers(&sample(0, 200, 1), &[String::new()]);
        let text = exporter.render();
        let series = |agent: &str| {
            format!(
                r#"traefik_entrypoint_requests_total{{code="200",method="GET",protocol="http",entrypoint="web",useragent="{agent}"}}"#
            )
        };
        assert_eq!(line(&text, &series("curl")), Some("2"), "{text}");
        assert_eq!(line(&text, &series("")), Some("1"), "{text}");
        // No series without the label: every requests_total line has it.
        assert!(
            text.lines()
                .filter(|l| l.starts_with("traefik_entrypoint_requests_total{"))
                .all(|l| l.contains("useragent=")),
            "{text}"
        );
    }

    #[test]
    fn bad_header_labels_are_refused_naming_the_label() {
        for (label, header) in [
            ("user-agent", "User-Agent"),
            ("1st", "User-Agent"),
            ("__name", "User-Agent"),
            ("code", "User-Agent"),
            ("agent", "User Agent"),
        ] {
            let labels = BTreeMap::from([(label.to_owned(), header.to_owned())]);
            let err = Exporter::with_header_labels("gangway", &[1.0], &labels).unwrap_err();
            assert!(
                err.to_string()
                    .starts_with(&format!("metrics.prometheus.headerLabels.{label}:")),
                "{err}"
            );
        }
    }

    #[test]
    fn retries_are_counted_per_service() {
        let exporter = Arc::new(Exporter::new("traefik", &[1.0]).unwrap());
        let stats = exporter.stats(ObjectKind::Service, "app@file");
        assert!(!exporter.render().contains("service_retries_total{"));
        stats.retried(2);
        stats.retried(1);
        assert_eq!(
            line(
                &exporter.render(),
                r#"traefik_service_retries_total{service="app@file"}"#
            ),
            Some("3")
        );
    }

    #[test]
    fn no_buckets_is_refused() {
        assert!(Exporter::new("gangway", &[]).is_err());
        assert!(Exporter::new("gangway", &[1.0, 0.5]).is_err());
        assert!(Exporter::new("gangway", &[1.0, f64::INFINITY]).is_err());
        assert!(Exporter::new("gangway", &[f64::NAN]).is_err());
    }

    #[test]
    fn histograms_count_and_sum_every_sample_once() {
        let exporter = Arc::new(Exporter::new("gangway", &[0.1, 1.0]).unwrap());
        let stats = exporter.stats(ObjectKind::EntryPoint, "web");
        for ms in [50, 100, 250, 2000] {
            stats.record(&sample(0, 200, ms));
        }
        let text = exporter.render();
        let series = |suffix: &str, extra: &str| {
            let name = format!(
                r#"gangway_entrypoint_request_duration_seconds_{suffix}{{code="200",method="GET",protocol="http",entrypoint="web"{extra}}}"#
            );
            line(&text, &name).map(str::to_owned)
        };
        assert_eq!(
            series("bucket", r#",le="0.1""#).as_deref(),
            Some("2"),
            "{text}"
        );
        assert_eq!(series("bucket", r#",le="1""#).as_deref(), Some("3"));
        assert_eq!(series("bucket", r#",le="+Inf""#).as_deref(), Some("4"));
        assert_eq!(series("count", "").as_deref(), Some("4"));
        let sum: f64 = series("sum", "").unwrap().parse().unwrap();
        assert!((sum - 2.4).abs() < 1e-9, "{sum}");
        let help = text
            .lines()
            .filter(|l| l.starts_with("# TYPE gangway_entrypoint_request_duration_seconds "))
            .collect::<Vec<_>>();
        assert_eq!(
            help,
            ["# TYPE gangway_entrypoint_request_duration_seconds histogram"]
        );
    }
}
