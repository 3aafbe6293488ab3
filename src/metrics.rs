//! Request statistics and their Prometheus exposition. Counters are plain
//! atomics owned by the object they count (entry point, router, service),
//! created when the runtime is compiled and kept across swaps by
//! `Registries`, so recording a request takes no lock, no lookup by name
//! and no formatting.

use http::{Method, Version};
use std::fmt::Write as _;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicI64, AtomicU16, AtomicU64, Ordering};
use std::time::Duration;

/// Status slots per (protocol, method) row; codes beyond this many distinct
/// ones in a row are counted under the last slot with code 0 (`other`).
const SLOTS: usize = 24;
/// Most histogram boundaries kept.
pub const MAX_BUCKETS: usize = 16;
const PROTOCOLS: [&str; 3] = ["http", "websocket", "grpc"];
const METHODS: [&str; 10] = [
    "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH", "other",
];

/// The protocol label of a request, as Traefik reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// Plain HTTP (any version).
    Http = 0,
    /// A WebSocket upgrade.
    WebSocket = 1,
    /// gRPC (`content-type: application/grpc*`).
    Grpc = 2,
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
        _ => 9,
    }
}

/// The protocol label of a request.
pub fn protocol_of<B>(req: &http::Request<B>) -> Protocol {
    let headers = req.headers();
    if headers
        .get(http::header::UPGRADE)
        .is_some_and(|u| u.as_bytes().eq_ignore_ascii_case(b"websocket"))
    {
        Protocol::WebSocket
    } else if req.version() == Version::HTTP_2
        && headers
            .get(http::header::CONTENT_TYPE)
            .is_some_and(|c| c.as_bytes().starts_with(b"application/grpc"))
    {
        Protocol::Grpc
    } else {
        Protocol::Http
    }
}

#[derive(Default)]
struct Cell {
    code: AtomicU16,
    requests: AtomicU64,
    duration_nanos: AtomicU64,
    request_bytes: AtomicU64,
    response_bytes: AtomicU64,
    buckets: [AtomicU64; MAX_BUCKETS],
}

type Row = [Cell; SLOTS];

/// Counters of one entry point, router or service. A (protocol, method) row
/// is allocated on its first request, so objects that see no traffic (or
/// only GETs) cost next to nothing.
pub struct Stats {
    rows: [OnceLock<Box<Row>>; PROTOCOLS.len() * METHODS.len()],
    bounds: Box<[f64]>,
    open: AtomicI64,
}

impl Stats {
    /// Counters with these histogram bounds (seconds, ascending; at most `MAX_BUCKETS`).
    pub fn new(bounds: &[f64]) -> Self {
        let bounds: Box<[f64]> = bounds.iter().copied().take(MAX_BUCKETS).collect();
        Self {
            rows: std::array::from_fn(|_| OnceLock::new()),
            bounds,
            open: AtomicI64::new(0),
        }
    }

    /// Counts a connection opened (entry points only).
    pub fn connection_opened(&self) {
        self.open.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a connection closed.
    pub fn connection_closed(&self) {
        self.open.fetch_sub(1, Ordering::Relaxed);
    }

    /// Connections open now.
    pub fn open_connections(&self) -> i64 {
        self.open.load(Ordering::Relaxed)
    }

    /// Records one finished request.
    pub fn record(&self, s: &Sample) {
        let row = self.rows[s.protocol as usize * METHODS.len() + s.method.min(METHODS.len() - 1)]
            .get_or_init(|| Box::new(std::array::from_fn(|_| Cell::default())));
        let cell = slot(row, s.status);
        cell.requests.fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(s.duration.as_nanos()).unwrap_or(u64::MAX);
        cell.duration_nanos.fetch_add(nanos, Ordering::Relaxed);
        cell.request_bytes
            .fetch_add(s.request_bytes, Ordering::Relaxed);
        cell.response_bytes
            .fetch_add(s.response_bytes, Ordering::Relaxed);
        let secs = s.duration.as_secs_f64();
        if let Some(i) = self.bounds.iter().position(|b| secs <= *b) {
            cell.buckets[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Total requests recorded, over every label.
    pub fn total(&self) -> u64 {
        self.rows
            .iter()
            .filter_map(OnceLock::get)
            .flat_map(|row| row.iter())
            .map(|c| c.requests.load(Ordering::Relaxed))
            .sum()
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

/// Writes Prometheus text for a family of objects.
pub struct Exposition {
    out: String,
    prefix: String,
}

/// Label name and value identifying one object (`entrypoint="web"`).
#[derive(Clone, Copy)]
pub struct ObjectLabels<'a> {
    /// Label pairs, e.g. `[("router", "app@file"), ("service", "app@file")]`.
    pub pairs: &'a [(&'a str, &'a str)],
}

impl Exposition {
    /// An empty exposition whose metric names start with `prefix_`.
    pub fn new(prefix: &str) -> Self {
        Self {
            out: String::with_capacity(4096),
            prefix: prefix.to_owned(),
        }
    }

    /// The text so far.
    pub fn finish(self) -> String {
        self.out
    }

    /// Writes a gauge or counter with no labels.
    pub fn scalar(&mut self, name: &str, kind: &str, help: &str, value: f64) {
        let p = &self.prefix;
        let _ = writeln!(
            self.out,
            "# HELP {p}_{name} {help}\n# TYPE {p}_{name} {kind}\n{p}_{name} {value}"
        );
    }

    /// Writes a family header.
    pub fn header(&mut self, name: &str, kind: &str, help: &str) {
        let p = &self.prefix;
        let _ = writeln!(
            self.out,
            "# HELP {p}_{name} {help}\n# TYPE {p}_{name} {kind}"
        );
    }

    /// Writes one sample line with labels.
    pub fn line(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        let _ = write!(self.out, "{}_{name}{{", self.prefix);
        for (i, (k, v)) in labels.iter().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            let _ = write!(self.out, "{sep}{k}=\"{}\"", escape(v));
        }
        let _ = writeln!(self.out, "}} {value}");
    }

    /// Writes the four families of one kind of object (`entrypoint`,
    /// `router`, `service`): requests, duration histogram, request and
    /// response bytes.
    pub fn objects(&mut self, kind: &str, objects: &[(ObjectLabels<'_>, &Stats)]) {
        let requests = format!("{kind}_requests_total");
        self.header(
            &requests,
            "counter",
            &format!("How many HTTP requests processed, per {kind}, code, method and protocol."),
        );
        self.each(objects, |e, labels, _, cell| {
            e.line(
                &requests,
                labels,
                cell.requests.load(Ordering::Relaxed) as f64,
            );
        });
        let duration = format!("{kind}_request_duration_seconds");
        self.header(
            &duration,
            "histogram",
            &format!("How long requests took, per {kind}, code, method and protocol."),
        );
        self.each(objects, |e, labels, bounds, cell| {
            let mut cumulative = 0u64;
            let bucket = format!("{duration}_bucket");
            for (i, bound) in bounds.iter().enumerate() {
                cumulative += cell.buckets[i].load(Ordering::Relaxed);
                let le = format_bound(*bound);
                let mut with_le: Vec<(&str, &str)> = labels.to_vec();
                with_le.push(("le", &le));
                e.line(&bucket, &with_le, cumulative as f64);
            }
            let count = cell.requests.load(Ordering::Relaxed);
            let mut with_le: Vec<(&str, &str)> = labels.to_vec();
            with_le.push(("le", "+Inf"));
            e.line(&bucket, &with_le, count as f64);
            e.line(
                &format!("{duration}_sum"),
                labels,
                cell.duration_nanos.load(Ordering::Relaxed) as f64 / 1e9,
            );
            e.line(&format!("{duration}_count"), labels, count as f64);
        });
        for (family, help, pick) in [
            ("requests_bytes_total", "request body bytes", 0),
            ("responses_bytes_total", "response body bytes", 1),
        ] {
            let name = format!("{kind}_{family}");
            self.header(
                &name,
                "counter",
                &format!("Total {help}, per {kind}, code, method and protocol."),
            );
            self.each(objects, |e, labels, _, cell| {
                let v = if pick == 0 {
                    &cell.request_bytes
                } else {
                    &cell.response_bytes
                };
                e.line(&name, labels, v.load(Ordering::Relaxed) as f64);
            });
        }
    }

    fn each(
        &mut self,
        objects: &[(ObjectLabels<'_>, &Stats)],
        mut write: impl FnMut(&mut Self, &[(&str, &str)], &[f64], &Cell),
    ) {
        for (object, stats) in objects {
            for (r, row) in stats.rows.iter().enumerate() {
                let Some(row) = row.get() else { continue };
                let (protocol, method) = (PROTOCOLS[r / METHODS.len()], METHODS[r % METHODS.len()]);
                for cell in row.iter() {
                    if cell.requests.load(Ordering::Relaxed) == 0 {
                        continue;
                    }
                    let code = cell.code.load(Ordering::Relaxed);
                    let code_text = if code == 0 {
                        "other".to_owned()
                    } else {
                        code.to_string()
                    };
                    let mut labels: Vec<(&str, &str)> = vec![
                        ("code", &code_text),
                        ("method", method),
                        ("protocol", protocol),
                    ];
                    labels.extend_from_slice(object.pairs);
                    write(self, &labels, &stats.bounds, cell);
                }
            }
        }
    }
}

fn format_bound(b: f64) -> String {
    let s = format!("{b}");
    if s.contains('.') || s.contains('e') {
        s
    } else {
        format!("{s}.0")
    }
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_land_in_their_code_method_and_bucket() {
        let stats = Stats::new(&[0.1, 1.0]);
        let sample = |status, ms| Sample {
            protocol: Protocol::Http,
            method: 0,
            status,
            duration: Duration::from_millis(ms),
            request_bytes: 3,
            response_bytes: 10,
        };
        stats.record(&sample(200, 50));
        stats.record(&sample(200, 500));
        stats.record(&sample(404, 5000));
        assert_eq!(stats.total(), 3);
        let mut e = Exposition::new("gangway");
        e.objects(
            "router",
            &[(
                ObjectLabels {
                    pairs: &[("router", "a@file")],
                },
                &stats,
            )],
        );
        let text = e.finish();
        assert!(text.contains(r#"gangway_router_requests_total{code="200",method="GET",protocol="http",router="a@file"} 2"#), "{text}");
        assert!(text.contains(r#"gangway_router_requests_total{code="404",method="GET",protocol="http",router="a@file"} 1"#));
        assert!(text.contains(r#"gangway_router_request_duration_seconds_bucket{code="200",method="GET",protocol="http",router="a@file",le="0.1"} 1"#));
        assert!(text.contains(r#"gangway_router_request_duration_seconds_bucket{code="200",method="GET",protocol="http",router="a@file",le="1.0"} 2"#));
        assert!(text.contains(r#"gangway_router_request_duration_seconds_bucket{code="404",method="GET",protocol="http",router="a@file",le="+Inf"} 1"#));
        assert!(text.contains(r#"gangway_router_responses_bytes_total{code="200",method="GET",protocol="http",router="a@file"} 20"#));
    }

    #[test]
    fn many_distinct_codes_overflow_into_one_cell() {
        let stats = Stats::new(&[1.0]);
        for status in 200..260u16 {
            stats.record(&Sample {
                protocol: Protocol::Http,
                method: 2,
                status,
                duration: Duration::ZERO,
                request_bytes: 0,
                response_bytes: 0,
            });
        }
        assert_eq!(stats.total(), 60);
    }
}
