//! Metrics sent to StatsD, Datadog (DogStatsD) and InfluxDB 2, with the
//! names and types Traefik sends there. At each backend's `pushInterval`
//! a background task reads the very series `/metrics` renders
//! ([`Exporter::snapshot`]), turns counter totals into what was added
//! since its last push, and sends:
//!
//! - StatsD (`metrics.statsD`): `{prefix}.service.request.total:3|c`,
//!   gauges as `|g`, request durations in milliseconds as `|ms`; no
//!   labels, as Traefik's StatsD client has none, so the series of one
//!   name are added up (the earliest certificate expiry is sent).
//! - Datadog (`metrics.datadog`): the same names, durations in seconds
//!   as histograms (`|h`), each series with its labels as tags
//!   (`|#code:200,method:GET,…`), over UDP or the agent's Unix socket.
//! - InfluxDB 2 (`metrics.influxDB2`): line protocol `POST`ed to
//!   `/api/v2/write`: `traefik.service.requests.total,code=200,… count=3`,
//!   gauges as `value=`, durations as `p50=`, `p90=`, `p95=`, `p99=` in
//!   seconds, with `additionalLabels` as tags.
//!
//! gangway keeps a series' durations as histogram buckets, not every
//! sample. So a push sends StatsD and Datadog the interval's mean with a
//! sample rate of one over the number of samples (the receiver counts
//! them all and sums them right), and InfluxDB quantiles read from the
//! buckets, as Prometheus's `histogram_quantile` reads them.
//!
//! Nothing happens on the request path for a push: requests update the
//! handles as they do for Prometheus.

use super::{Exporter, Snapshot};
use crate::config::static_config::{Metrics, MetricsInfluxDb2, MetricsStatsd};
use crate::otel::{OtelError, PushTimes, Pusher, export};
use http::{HeaderMap, HeaderValue};
use metrics::Key;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A push interval of zero would spin; this is the shortest one kept.
const MIN_INTERVAL: Duration = Duration::from_millis(100);
/// Bytes in one datagram at most: lines are packed, newline-separated,
/// up to what an Ethernet frame carries over IPv6 without fragments.
const DATAGRAM: usize = 1432;
/// The prefix when `prefix` is empty, as in Traefik.
const DEFAULT_PREFIX: &str = "traefik";
/// The duration quantiles written to InfluxDB, and their field names.
const QUANTILES: [(f64, &str); 4] = [(0.5, "p50"), (0.9, "p90"), (0.95, "p95"), (0.99, "p99")];

/// Why a metrics backend cannot be set up, named by its option.
#[derive(Debug, thiserror::Error)]
pub enum PushError {
    /// InfluxDB 2 needs a token, an organisation and a bucket.
    #[error(
        "metrics.influxDB2.{field}: required to write to InfluxDB 2 (token, org and bucket must all be set)"
    )]
    Missing {
        /// `token`, `org` or `bucket`.
        field: &'static str,
    },
    /// The token cannot be sent in a header.
    #[error("metrics.influxDB2.token: not a value an HTTP header can carry")]
    BadToken,
    /// An address that names no host and port (or socket) to send to.
    #[error("{option}: `{address}` is not an address to send to ({why})")]
    BadAddress {
        /// `metrics.statsD.address` or `metrics.datadog.address`.
        option: &'static str,
        /// The value given.
        address: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// InfluxDB 2's URL.
    #[error(transparent)]
    Http(#[from] OtelError),
}

/// Why one push failed; the task logs it and sends again at its next
/// interval.
#[derive(Debug, thiserror::Error)]
enum SendError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Http(#[from] export::ExportError),
}

/// Starts a push task for each of `metrics.statsD`, `metrics.datadog`
/// and `metrics.influxDB2` that is on. Every option is checked before
/// any task starts.
pub fn spawn_all(exporter: &Arc<Exporter>, config: &Metrics) -> Result<Vec<Pusher>, PushError> {
    let mut sinks = Vec::new();
    if let Some(s) = &config.statsd {
        let to = Datagrams::parse(&s.address, "metrics.statsD.address", false)?;
        sinks.push((
            Sink::Statsd(prefix(s), to),
            Objects::of(s),
            s.push_interval.0,
        ));
    }
    if let Some(d) = &config.datadog {
        let address = datadog_address(&d.address);
        let to = Datagrams::parse(&address, "metrics.datadog.address", true)?;
        sinks.push((
            Sink::Datadog(prefix(d), to),
            Objects::of(d),
            d.push_interval.0,
        ));
    }
    if let Some(i) = &config.influxdb2 {
        let objects = Objects {
            entry_points: i.add_entry_points_labels,
            routers: i.add_routers_labels,
            services: i.add_services_labels,
        };
        sinks.push((Sink::influx(i)?, objects, i.push_interval.0));
    }
    Ok(sinks
        .into_iter()
        .map(|(sink, objects, interval)| {
            let exporter = exporter.clone();
            let interval = interval.max(MIN_INTERVAL);
            Pusher::spawn(move |stop| push(exporter, sink, objects, interval, stop))
        })
        .collect())
}

fn prefix(s: &MetricsStatsd) -> String {
    if s.prefix.is_empty() {
        DEFAULT_PREFIX.to_owned()
    } else {
        s.prefix.clone()
    }
}

/// An empty Datadog address is the agent's from `DD_AGENT_HOST` and
/// `DD_DOGSTATSD_PORT`, as the Datadog libraries read them.
fn datadog_address(address: &str) -> String {
    if !address.is_empty() {
        return address.to_owned();
    }
    let host = std::env::var("DD_AGENT_HOST").unwrap_or_else(|_| "localhost".to_owned());
    let port = std::env::var("DD_DOGSTATSD_PORT").unwrap_or_else(|_| "8125".to_owned());
    format!("{host}:{port}")
}

/// Pushes every `interval`, and once more at `stop`.
async fn push(
    exporter: Arc<Exporter>,
    sink: Sink,
    objects: Objects,
    interval: Duration,
    stop: Arc<tokio::sync::Notify>,
) {
    let mut times = PushTimes::new(interval, stop).await;
    let mut previous = Previous::default();
    let mut failing = false;
    while times.next().await {
        let points = previous.read(exporter.prefix(), &exporter.snapshot(), objects);
        let backend = sink.name();
        match sink.send(&points).await {
            Ok(()) => {
                if failing {
                    tracing::info!(backend, "metrics are sent again");
                }
                failing = false;
            }
            Err(e) => {
                // Said once per outage, not once per push.
                if failing {
                    tracing::debug!(backend, error = %e, "metrics not sent");
                } else {
                    tracing::warn!(backend, error = %e, "metrics not sent; trying again at the next interval");
                }
                failing = true;
            }
        }
    }
}

/// The object kind a family reports on; `add…Labels` turns kinds off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scope {
    Global,
    EntryPoint,
    Router,
    Service,
}

/// Which object kinds a backend reports on.
#[derive(Clone, Copy, Debug)]
struct Objects {
    entry_points: bool,
    routers: bool,
    services: bool,
}

impl Objects {
    fn of(s: &MetricsStatsd) -> Self {
        Objects {
            entry_points: s.add_entry_points_labels,
            routers: s.add_routers_labels,
            services: s.add_services_labels,
        }
    }

    fn wants(self, scope: Scope) -> bool {
        match scope {
            Scope::Global => true,
            Scope::EntryPoint => self.entry_points,
            Scope::Router => self.routers,
            Scope::Service => self.services,
        }
    }
}

/// Traefik's names of `family` (a Prometheus family without its prefix):
/// the StatsD and Datadog one, then the InfluxDB one (without its
/// `traefik.`), with the kind it reports on; `None` for families Traefik
/// does not send to these backends.
fn traefik_names(family: &str) -> Option<(Scope, String, String)> {
    let global = match family {
        "config_reloads_total" => Some("config.reload.total"),
        "config_last_reload_success" => Some("config.reload.lastSuccessTimestamp"),
        "open_connections" => Some("open.connections"),
        "tls_certs_not_after" => Some("tls.certs.notAfterTimestamp"),
        _ => None,
    };
    if let Some(name) = global {
        return Some((Scope::Global, name.to_owned(), name.to_owned()));
    }
    let (scope, object, rest) = [
        (Scope::EntryPoint, "entrypoint"),
        (Scope::Router, "router"),
        (Scope::Service, "service"),
    ]
    .into_iter()
    .find_map(|(scope, object)| {
        let rest = family.strip_prefix(object)?.strip_prefix('_')?;
        Some((scope, object, rest))
    })?;
    let (statsd, influx) = match rest {
        "requests_total" => ("request.total", "requests.total"),
        "requests_tls_total" => ("request.tls.total", "requests.tls.total"),
        "request_duration_seconds" => ("request.duration", "request.duration"),
        "requests_bytes_total" => ("requests.bytes.total", "requests.bytes.total"),
        "responses_bytes_total" => ("responses.bytes.total", "responses.bytes.total"),
        "retries_total" if scope == Scope::Service => ("retries.total", "retries.total"),
        "server_up" if scope == Scope::Service => ("server.up", "server.up"),
        _ => return None,
    };
    Some((
        scope,
        format!("{object}.{statsd}"),
        format!("{object}.{influx}"),
    ))
}

/// One series' value in one push, under Traefik's names.
#[derive(Debug, Clone, PartialEq)]
struct Point {
    /// The StatsD and Datadog name, without the prefix.
    name: String,
    /// The InfluxDB measurement, without its `traefik.`.
    measurement: String,
    /// The series' labels, in order.
    labels: Vec<(String, String)>,
    value: Value,
}

#[derive(Debug, Clone, PartialEq)]
enum Value {
    /// Added since the last push.
    Count(u64),
    /// The value now.
    Gauge(f64),
    /// The request durations since the last push: samples per bucket
    /// (one more than `bounds`, the last above every bound) and their
    /// sum, in seconds.
    Durations {
        bounds: Arc<[f64]>,
        counts: Vec<u64>,
        sum: f64,
    },
}

/// What the last push read, so that the next one sends what was added
/// since.
#[derive(Default)]
struct Previous {
    counters: HashMap<Key, u64>,
    histograms: HashMap<Key, (Vec<u64>, f64)>,
}

impl Previous {
    /// The points of `snapshot` (names carrying `prefix`) a backend
    /// reporting on `objects` sends: counters and durations that moved,
    /// every gauge.
    fn read(&mut self, prefix: &str, snapshot: &Snapshot, objects: Objects) -> Vec<Point> {
        let own = format!("{prefix}_");
        let named = |key: &Key| {
            let family = key.name().strip_prefix(&own)?;
            let (scope, name, measurement) = traefik_names(family)?;
            objects.wants(scope).then(|| {
                let labels = key
                    .labels()
                    .map(|l| (l.key().to_owned(), l.value().to_owned()))
                    .collect();
                (name, measurement, labels)
            })
        };
        let mut points = Vec::new();
        for (key, total) in &snapshot.counters {
            let Some((name, measurement, labels)) = named(key) else {
                continue;
            };
            let before = self.counters.insert(key.clone(), *total).unwrap_or(0);
            let added = total.checked_sub(before).unwrap_or(*total);
            if added > 0 {
                let value = Value::Count(added);
                points.push(Point {
                    name,
                    measurement,
                    labels,
                    value,
                });
            }
        }
        for (key, value) in &snapshot.gauges {
            if let Some((name, measurement, labels)) = named(key) {
                let value = Value::Gauge(*value);
                points.push(Point {
                    name,
                    measurement,
                    labels,
                    value,
                });
            }
        }
        for h in &snapshot.histograms {
            let Some((name, measurement, labels)) = named(&h.key) else {
                continue;
            };
            let (counts_before, sum_before) = self
                .histograms
                .insert(h.key.clone(), (h.counts.clone(), h.sum))
                .unwrap_or_default();
            let counts: Vec<u64> = h
                .counts
                .iter()
                .enumerate()
                .map(|(i, now)| now.saturating_sub(counts_before.get(i).copied().unwrap_or(0)))
                .collect();
            if counts.iter().any(|c| *c > 0) {
                let value = Value::Durations {
                    bounds: h.bounds.clone(),
                    counts,
                    sum: (h.sum - sum_before).max(0.0),
                };
                points.push(Point {
                    name,
                    measurement,
                    labels,
                    value,
                });
            }
        }
        points
    }
}

/// Where one backend's points go, in its own format.
enum Sink {
    /// StatsD, with its prefix.
    Statsd(String, Datagrams),
    /// DogStatsD, with its prefix.
    Datadog(String, Datagrams),
    /// InfluxDB 2's write API, with `additionalLabels`.
    Influx(Box<export::Exporter>, BTreeMap<String, String>),
}

impl Sink {
    /// The writer of `config`'s bucket.
    fn influx(config: &MetricsInfluxDb2) -> Result<Sink, PushError> {
        for (field, value) in [
            ("token", &config.token),
            ("org", &config.org),
            ("bucket", &config.bucket),
        ] {
            if value.is_empty() {
                return Err(PushError::Missing { field });
            }
        }
        let encode = |text: &str| {
            percent_encoding::utf8_percent_encode(text, percent_encoding::NON_ALPHANUMERIC)
                .to_string()
        };
        let url = format!(
            "{}/api/v2/write?org={}&bucket={}&precision=ns",
            config.address.trim_end_matches('/'),
            encode(&config.org),
            encode(&config.bucket),
        );
        let mut headers = HeaderMap::new();
        let token = HeaderValue::from_str(&format!("Token {}", config.token))
            .map_err(|_| PushError::BadToken)?;
        headers.insert(http::header::AUTHORIZATION, token);
        let sender = export::Exporter::plain(
            &url,
            headers,
            "text/plain; charset=utf-8",
            "metrics.influxDB2.address",
        )?;
        Ok(Sink::Influx(
            Box::new(sender),
            config.additional_labels.clone(),
        ))
    }

    fn name(&self) -> &'static str {
        match self {
            Sink::Statsd(..) => "statsd",
            Sink::Datadog(..) => "datadog",
            Sink::Influx(..) => "influxdb2",
        }
    }

    async fn send(&self, points: &[Point]) -> Result<(), SendError> {
        match self {
            Sink::Statsd(prefix, to) => Ok(to.send(statsd_lines(prefix, points)).await?),
            Sink::Datadog(prefix, to) => Ok(to.send(datadog_lines(prefix, points)).await?),
            Sink::Influx(sender, additional) => {
                let now = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos());
                let body = influx_lines(points, additional, now);
                if !body.is_empty() {
                    sender.send(body.into_bytes()).await?;
                }
                Ok(())
            }
        }
    }
}

/// A StatsD or DogStatsD receiver.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Datagrams {
    /// `host:port` over UDP, looked up at each push.
    Udp(String),
    /// A Unix datagram socket (Datadog's agent).
    Unix(PathBuf),
}

impl Datagrams {
    /// `address` as `option` gives it: `host:port` (an empty host is
    /// `localhost`), or with `unix` a `unix://` or `unixgram://` path.
    fn parse(address: &str, option: &'static str, unix: bool) -> Result<Self, PushError> {
        let bad = |why| PushError::BadAddress {
            option,
            address: address.to_owned(),
            why,
        };
        if let Some(path) = ["unix://", "unixgram://"]
            .into_iter()
            .find_map(|scheme| address.strip_prefix(scheme))
        {
            if !unix {
                return Err(bad("StatsD is sent over UDP only"));
            }
            if path.is_empty() {
                return Err(bad("no socket path"));
            }
            return Ok(Datagrams::Unix(PathBuf::from(path)));
        }
        let Some((host, port)) = address.rsplit_once(':') else {
            return Err(bad("no port"));
        };
        if port.parse::<u16>().is_err() {
            return Err(bad("the port is not a number from 0 to 65535"));
        }
        let host = if host.is_empty() { "localhost" } else { host };
        Ok(Datagrams::Udp(format!("{host}:{port}")))
    }

    /// Sends `lines`, packed into as few datagrams as fit.
    async fn send(&self, lines: Vec<String>) -> std::io::Result<()> {
        let packets = pack(lines);
        if packets.is_empty() {
            return Ok(());
        }
        match self {
            Datagrams::Udp(address) => {
                let to = tokio::net::lookup_host(address.as_str())
                    .await?
                    .next()
                    .ok_or_else(|| std::io::Error::other(format!("`{address}` has no address")))?;
                let local: std::net::SocketAddr = if to.is_ipv4() {
                    (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
                } else {
                    (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
                };
                let socket = tokio::net::UdpSocket::bind(local).await?;
                for packet in &packets {
                    socket.send_to(packet.as_bytes(), to).await?;
                }
            }
            Datagrams::Unix(path) => {
                let socket = tokio::net::UnixDatagram::unbound()?;
                for packet in &packets {
                    socket.send_to(packet.as_bytes(), path).await?;
                }
            }
        }
        Ok(())
    }
}

/// `lines` joined by newlines into packets of at most [`DATAGRAM`] bytes
/// (a longer line goes alone).
fn pack(lines: Vec<String>) -> Vec<String> {
    let mut packets: Vec<String> = Vec::new();
    for line in lines {
        match packets.last_mut() {
            Some(packet) if packet.len() + 1 + line.len() <= DATAGRAM => {
                packet.push('\n');
                packet.push_str(&line);
            }
            _ => packets.push(line),
        }
    }
    packets
}

/// The interval's samples and their mean in `scale` units per second,
/// as StatsD's `value|type|@rate`: one line whose rate makes the receiver
/// count every sample.
fn mean_line(counts: &[u64], sum: f64, scale: f64) -> (f64, String) {
    let samples: u64 = counts.iter().sum();
    let mean = sum * scale / samples.max(1) as f64;
    let rate = if samples > 1 {
        format!("|@{}", 1.0 / samples as f64)
    } else {
        String::new()
    };
    (mean, rate)
}

/// StatsD lines: one per name, the series of a name added up.
fn statsd_lines(prefix: &str, points: &[Point]) -> Vec<String> {
    let mut by_name: BTreeMap<&str, Value> = BTreeMap::new();
    for point in points {
        let merged = match (by_name.remove(point.name.as_str()), &point.value) {
            (None, value) => value.clone(),
            (Some(Value::Count(a)), Value::Count(b)) => Value::Count(a + b),
            (Some(Value::Gauge(a)), Value::Gauge(b)) => {
                // A certificate's expiry does not add up: the earliest tells.
                if point.measurement == "tls.certs.notAfterTimestamp" {
                    Value::Gauge(a.min(*b))
                } else {
                    Value::Gauge(a + b)
                }
            }
            (
                Some(Value::Durations {
                    bounds,
                    mut counts,
                    sum,
                }),
                Value::Durations {
                    counts: more,
                    sum: more_sum,
                    ..
                },
            ) => {
                counts.resize(counts.len().max(more.len()), 0);
                for (c, m) in counts.iter_mut().zip(more) {
                    *c += m;
                }
                Value::Durations {
                    bounds,
                    counts,
                    sum: sum + more_sum,
                }
            }
            (Some(kept), _) => kept,
        };
        by_name.insert(&point.name, merged);
    }
    by_name
        .into_iter()
        .map(|(name, value)| match value {
            Value::Count(n) => format!("{prefix}.{name}:{n}|c"),
            Value::Gauge(v) => format!("{prefix}.{name}:{v}|g"),
            Value::Durations { counts, sum, .. } => {
                let (mean, rate) = mean_line(&counts, sum, 1000.0);
                format!("{prefix}.{name}:{mean}|ms{rate}")
            }
        })
        .collect()
}

/// A tag's text without the characters DogStatsD's grammar gives a
/// meaning to.
fn tag_text(text: &str) -> String {
    text.replace(['|', ',', '#', '\n'], "_")
}

/// DogStatsD lines: one per series, its labels as tags.
fn datadog_lines(prefix: &str, points: &[Point]) -> Vec<String> {
    points
        .iter()
        .map(|point| {
            let name = &point.name;
            let mut line = match &point.value {
                Value::Count(n) => format!("{prefix}.{name}:{n}|c"),
                Value::Gauge(v) => format!("{prefix}.{name}:{v}|g"),
                Value::Durations { counts, sum, .. } => {
                    let (mean, rate) = mean_line(counts, *sum, 1.0);
                    format!("{prefix}.{name}:{mean}|h{rate}")
                }
            };
            for (i, (key, value)) in point.labels.iter().enumerate() {
                line.push_str(if i == 0 { "|#" } else { "," });
                let _ = write!(line, "{}:{}", tag_text(key), tag_text(value));
            }
            line
        })
        .collect()
}

/// Line protocol's escaping: a backslash before each of `special`.
fn escape(text: &str, special: &[char]) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if special.contains(&c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The `q` quantile of samples counted in buckets with upper `bounds`,
/// found by linear interpolation within its bucket (the last bound for
/// samples above it), as Prometheus's `histogram_quantile`.
fn quantile(bounds: &[f64], counts: &[u64], q: f64) -> f64 {
    let total: u64 = counts.iter().sum();
    let rank = q * total as f64;
    let mut seen = 0u64;
    for (i, &count) in counts.iter().enumerate() {
        if count > 0 && (seen + count) as f64 >= rank {
            let lower = if i == 0 { 0.0 } else { bounds[i - 1] };
            let Some(&upper) = bounds.get(i) else {
                return lower;
            };
            return lower + (upper - lower) * (rank - seen as f64) / count as f64;
        }
        seen += count;
    }
    bounds.last().copied().unwrap_or(0.0)
}

/// InfluxDB line protocol, one line per series, timestamped `now` (ns).
fn influx_lines(points: &[Point], additional: &BTreeMap<String, String>, now: u128) -> String {
    let mut body = String::new();
    for point in points {
        let mut tags = additional.clone();
        tags.extend(point.labels.iter().cloned());
        body.push_str(&escape(
            &format!("{DEFAULT_PREFIX}.{}", point.measurement),
            &[',', ' '],
        ));
        // Line protocol has no empty tag values.
        for (key, value) in tags.iter().filter(|(_, v)| !v.is_empty()) {
            let special = [',', '=', ' '];
            let _ = write!(
                body,
                ",{}={}",
                escape(key, &special),
                escape(value, &special)
            );
        }
        match &point.value {
            Value::Count(n) => {
                let _ = write!(body, " count={n}");
            }
            Value::Gauge(v) => {
                let _ = write!(body, " value={v}");
            }
            Value::Durations { bounds, counts, .. } => {
                for (i, (q, field)) in QUANTILES.iter().enumerate() {
                    let sep = if i == 0 { ' ' } else { ',' };
                    let _ = write!(body, "{sep}{field}={}", quantile(bounds, counts, *q));
                }
            }
        }
        let _ = writeln!(body, " {now}");
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::HistogramPoint;
    use metrics::Label;

    fn key(name: &str, labels: &[(&str, &str)]) -> Key {
        let labels = labels
            .iter()
            .map(|(k, v)| Label::new(k.to_string(), v.to_string()))
            .collect::<Vec<_>>();
        Key::from_parts(name.to_owned(), labels)
    }

    const ALL: Objects = Objects {
        entry_points: true,
        routers: true,
        services: true,
    };

    #[test]
    fn names_are_traefiks_for_each_backend() {
        let names = |f| traefik_names(f).map(|(_, s, i)| (s, i));
        assert_eq!(
            names("entrypoint_requests_total"),
            Some((
                "entrypoint.request.total".into(),
                "entrypoint.requests.total".into()
            ))
        );
        assert_eq!(
            names("service_server_up"),
            Some(("service.server.up".into(), "service.server.up".into()))
        );
        assert_eq!(
            names("config_last_reload_success").map(|n| n.0),
            Some("config.reload.lastSuccessTimestamp".into())
        );
        assert_eq!(names("router_server_up"), None);
        assert_eq!(names("tcp_router_connections_total"), None);
        assert_eq!(names("process_cpu_seconds_total"), None);
    }

    #[test]
    fn counters_send_what_was_added_since_the_last_push() {
        let mut previous = Previous::default();
        let k = key("gw_service_requests_total", &[("service", "a@file")]);
        let snap = |n| Snapshot {
            counters: vec![(k.clone(), n)],
            ..Default::default()
        };
        let first = previous.read("gw", &snap(3), ALL);
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].value, Value::Count(3));
        assert!(previous.read("gw", &snap(3), ALL).is_empty());
        assert_eq!(previous.read("gw", &snap(5), ALL)[0].value, Value::Count(2));
    }

    #[test]
    fn objects_turned_off_are_not_sent() {
        let mut previous = Previous::default();
        let snapshot = Snapshot {
            counters: vec![
                (key("gw_router_requests_total", &[]), 1),
                (key("gw_config_reloads_total", &[]), 1),
            ],
            ..Default::default()
        };
        let objects = Objects {
            routers: false,
            ..ALL
        };
        let points = previous.read("gw", &snapshot, objects);
        let names: Vec<_> = points.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["config.reload.total"]);
    }

    fn durations(counts: Vec<u64>, sum: f64) -> Point {
        Point {
            name: "service.request.duration".into(),
            measurement: "service.request.duration".into(),
            labels: vec![("service".into(), "a b,c".into())],
            value: Value::Durations {
                bounds: Arc::from([0.1, 1.0]),
                counts,
                sum,
            },
        }
    }

    #[test]
    fn statsd_adds_up_series_and_weights_the_mean_duration() {
        let count = |n| Point {
            name: "service.request.total".into(),
            measurement: "service.requests.total".into(),
            labels: vec![],
            value: Value::Count(n),
        };
        let lines = statsd_lines(
            "gw",
            &[
                count(2),
                count(3),
                durations(vec![3, 1, 0], 0.8),
                durations(vec![0, 0, 0], 0.0),
            ],
        );
        assert_eq!(
            lines,
            [
                "gw.service.request.duration:200|ms|@0.25",
                "gw.service.request.total:5|c"
            ]
        );
    }

    #[test]
    fn datadog_tags_carry_the_labels() {
        let lines = datadog_lines("gw", &[durations(vec![1, 0, 0], 0.05)]);
        assert_eq!(lines, ["gw.service.request.duration:0.05|h|#service:a b_c"]);
    }

    #[test]
    fn influx_lines_escape_and_read_quantiles_from_buckets() {
        let additional = BTreeMap::from([("host".to_owned(), "edge 1".to_owned())]);
        let body = influx_lines(&[durations(vec![2, 2, 0], 1.0)], &additional, 7);
        let line = body.strip_suffix('\n').expect("one line");
        // Fields and time hold no space; escaped ones are in the tags.
        let mut parts = line.rsplitn(3, ' ');
        let (time, fields, head) = (parts.next(), parts.next(), parts.next());
        assert_eq!(
            head,
            Some("traefik.service.request.duration,host=edge\\ 1,service=a\\ b\\,c")
        );
        assert_eq!(time, Some("7"));
        let fields = fields.expect("fields");
        let read: Vec<(&str, f64)> = fields
            .split(',')
            .map(|f| {
                let (name, value) = f.split_once('=').expect("name=value");
                (name, value.parse().expect("a number"))
            })
            .collect();
        // Two samples up to 0.1 s, two between 0.1 and 1 s.
        let expected = [("p50", 0.1), ("p90", 0.82), ("p95", 0.91), ("p99", 0.982)];
        assert_eq!(read.len(), expected.len());
        for ((name, value), (want_name, want)) in read.iter().zip(expected) {
            assert_eq!(*name, want_name);
            assert!((value - want).abs() < 1e-9, "{name}: {value}");
        }
    }

    #[test]
    fn samples_above_every_bound_read_as_the_last_bound() {
        assert_eq!(quantile(&[0.1, 1.0], &[0, 0, 4], 0.5), 1.0);
        assert_eq!(quantile(&[0.1, 1.0], &[4, 0, 0], 0.5), 0.05);
    }

    #[test]
    fn addresses_are_checked_before_anything_is_sent() {
        let parse = |a, unix| Datagrams::parse(a, "metrics.datadog.address", unix);
        assert_eq!(
            parse(":8125", false).ok(),
            Some(Datagrams::Udp("localhost:8125".into()))
        );
        assert_eq!(
            parse("unix:///var/run/datadog/dsd.socket", true).ok(),
            Some(Datagrams::Unix("/var/run/datadog/dsd.socket".into()))
        );
        let err = parse("unix:///x", false).unwrap_err().to_string();
        assert!(
            err.starts_with("metrics.datadog.address: `unix:///x`"),
            "{err}"
        );
        assert!(parse("localhost", false).is_err());
        assert!(parse("localhost:99999", false).is_err());
    }

    #[test]
    fn packets_hold_whole_lines() {
        let line = "x".repeat(600);
        let packets = pack(vec![line.clone(), line.clone(), line.clone()]);
        assert_eq!(packets.len(), 2);
        assert_eq!(packets[0], format!("{line}\n{line}"));
    }

    #[test]
    fn histogram_points_are_read_as_deltas() {
        let mut previous = Previous::default();
        let h = |counts: Vec<u64>, sum| HistogramPoint {
            key: key("gw_service_request_duration_seconds", &[]),
            bounds: Arc::from([0.1]),
            counts,
            sum,
        };
        let snap = |p| Snapshot {
            histograms: vec![p],
            ..Default::default()
        };
        previous.read("gw", &snap(h(vec![1, 0], 0.5)), ALL);
        let points = previous.read("gw", &snap(h(vec![1, 2], 2.5)), ALL);
        assert_eq!(
            points[0].value,
            Value::Durations {
                bounds: Arc::from([0.1]),
                counts: vec![0, 2],
                sum: 2.0
            }
        );
    }
}
