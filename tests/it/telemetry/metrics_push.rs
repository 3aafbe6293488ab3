//! Metrics sent to StatsD, Datadog and InfluxDB 2 by the real binary,
//! counting real requests routed through it.
//!
//! Receivers: StatsD is Etsy's own daemon (`statsd` from the npm registry,
//! installed in `tests/statsd` by `scripts/ci/browser-up`), asked through
//! its management port what it has counted. No Datadog agent nor
//! InfluxDB 2 server can be installed on these machines, so DogStatsD is
//! received by a UDP (and a Unix datagram) socket in the test that reads
//! the DogStatsD datagram grammar (`name:value|type[|@rate][|#tags]`), and
//! InfluxDB 2 by an HTTP server in the test that takes
//! `/api/v2/write?org=&bucket=&precision=` with `Authorization: Token …`
//! and reads the line protocol.

use crate::support;

use bytes::Bytes;
use http::StatusCode;
use http_body_util::{BodyExt, Full};
use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::{Backend, Gangway, eventually, free_port, one_route};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const LIMIT: Duration = Duration::from_secs(15);

/// Routes `app.test` to an echo backend, waits until it answers, then
/// sends `more` requests; returns how many requests reached the entry
/// point in all (the ones before the route was ready included). The
/// route itself answered `more + 1` of them.
async fn traffic(gw: &Gangway, more: u64) -> u64 {
    let sent = AtomicU64::new(0);
    eventually(LIMIT, "the route answers", || async {
        sent.fetch_add(1, Ordering::Relaxed);
        gw.get("app.test", "/warm").await.status == StatusCode::OK
    })
    .await;
    for _ in 0..more {
        assert_eq!(gw.get("app.test", "/x").await.status, StatusCode::OK);
    }
    sent.load(Ordering::Relaxed) + more
}

/// gangway with `flags`, routing `app.test` to an echo backend of its
/// own (kept alive beside it).
async fn gangway(flags: &[&str]) -> (Gangway, Backend) {
    let backend = Backend::echo("b").await;
    let dynamic = one_route("app", "Host(`app.test`)", &[&backend.url()]);
    (Gangway::with_file(&dynamic, flags).await, backend)
}

/// Etsy's StatsD daemon on loopback ports of its own, flushing never
/// during a test, so its counters hold everything received.
struct Statsd {
    child: std::process::Child,
    port: u16,
    management: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Statsd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Statsd {
    /// The daemon, or `None` (the test skips) when it is not installed;
    /// under `GANGWAY_TEST_STRICT=1` a missing daemon fails.
    async fn start() -> Option<Statsd> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/statsd");
        let bin = root.join("node_modules/statsd/bin/statsd");
        let path = std::env::var_os("PATH").unwrap_or_default();
        let node = std::env::split_paths(&path)
            .map(|dir| dir.join("node"))
            .find(|p| p.is_file());
        let (Some(node), true) = (node, bin.is_file()) else {
            let why = format!(
                "node or {} missing (scripts/ci/browser-up installs it)",
                bin.display()
            );
            assert!(
                std::env::var("GANGWAY_TEST_STRICT").as_deref() != Ok("1"),
                "{why}"
            );
            eprintln!("SKIPPED: {why}");
            return None;
        };
        let dir = tempfile::tempdir().expect("tempdir");
        let (port, management) = (free_port(), free_port());
        let config = dir.path().join("config.js");
        std::fs::write(
            &config,
            format!(
                "{{ address: \"127.0.0.1\", port: {port}, mgmt_address: \"127.0.0.1\", \
                 mgmt_port: {management}, backends: [\"./backends/console\"], \
                 flushInterval: 3600000 }}"
            ),
        )
        .expect("write config");
        let log = std::fs::File::create(dir.path().join("statsd.log")).expect("log");
        let child = std::process::Command::new(node)
            .arg(bin)
            .arg(&config)
            .current_dir(root.join("node_modules/statsd"))
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("start statsd");
        let statsd = Statsd {
            child,
            port,
            management,
            _dir: dir,
        };
        eventually(LIMIT, "statsd's management port answers", || async {
            statsd.ask("health").await.is_some_and(|a| a.contains("up"))
        })
        .await;
        Some(statsd)
    }

    /// The answer to a management command: what arrives until the
    /// daemon has said nothing more for a moment.
    async fn ask(&self, command: &str) -> Option<String> {
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", self.management))
            .await
            .ok()?;
        stream
            .write_all(format!("{command}\n").as_bytes())
            .await
            .ok()?;
        let mut answer = Vec::new();
        let mut buf = [0u8; 4096];
        let mut wait = Duration::from_secs(2);
        while let Ok(Ok(n)) = tokio::time::timeout(wait, stream.read(&mut buf)).await {
            if n == 0 {
                break;
            }
            answer.extend_from_slice(&buf[..n]);
            wait = Duration::from_millis(200);
        }
        (!answer.is_empty()).then(|| String::from_utf8_lossy(&answer).into_owned())
    }

    /// `'name': value` pairs of a management answer (the daemon prints
    /// its objects with node's `util.inspect`; dotted names are quoted).
    async fn values(&self, command: &str) -> BTreeMap<String, String> {
        let answer = self.ask(command).await.unwrap_or_default();
        let mut values = BTreeMap::new();
        let mut rest = answer.as_str();
        while let Some(open) = rest.find('\'') {
            let after = &rest[open + 1..];
            let Some(close) = after.find('\'') else { break };
            let name = &after[..close];
            let tail = after[close + 1..].trim_start();
            if let Some(value) = tail.strip_prefix(':') {
                let value = value.trim_start();
                let end = value.find([',', '\n', '}']).unwrap_or(value.len());
                values.insert(name.to_owned(), value[..end].trim().to_owned());
            }
            rest = &after[close + 1..];
        }
        values
    }
}

#[tokio::test]
async fn statsd_daemon_counts_the_requests_under_the_prefix() {
    let Some(statsd) = Statsd::start().await else {
        return;
    };
    let address = format!("--metrics.statsD.address=127.0.0.1:{}", statsd.port);
    let (gw, _backend) = gangway(&[
        &address,
        "--metrics.statsD.prefix=edge",
        "--metrics.statsD.pushInterval=200ms",
        "--metrics.statsD.addRoutersLabels=true",
    ])
    .await;
    let at_entry_point = traffic(&gw, 3).await;
    let routed = "4";
    eventually(LIMIT, "statsd counts the four routed requests", || async {
        let counters = statsd.values("counters").await;
        counters
            .get("edge.service.request.total")
            .map(String::as_str)
            == Some(routed)
            && counters
                .get("edge.router.request.total")
                .map(String::as_str)
                == Some(routed)
            && counters.get("edge.entrypoint.request.total") == Some(&at_entry_point.to_string())
    })
    .await;
    let counters = statsd.values("counters").await;
    assert!(
        counters
            .get("edge.service.responses.bytes.total")
            .is_some_and(|b| b.parse::<u64>().is_ok_and(|b| b > 0)),
        "{counters:?}"
    );
    assert!(
        counters
            .get("edge.config.reload.total")
            .is_some_and(|n| n.parse::<u64>().is_ok_and(|n| n > 0)),
        "{counters:?}"
    );
    let timers = statsd.ask("timers").await.unwrap_or_default();
    assert!(
        timers.contains("'edge.service.request.duration'"),
        "{timers}"
    );
    let gauges = statsd.values("gauges").await;
    assert!(
        gauges.contains_key("edge.config.reload.lastSuccessTimestamp"),
        "{gauges:?}"
    );
    assert!(
        !counters.keys().any(|k| k.starts_with("traefik.")),
        "nothing is sent under the default prefix: {counters:?}"
    );
}

/// One DogStatsD line as the agent reads it.
#[derive(Debug, Clone, PartialEq)]
struct DogLine {
    name: String,
    value: f64,
    kind: String,
    rate: f64,
    tags: BTreeMap<String, String>,
}

fn parse_dogstatsd(line: &str) -> DogLine {
    let (name, rest) = line.split_once(':').expect("name:value");
    let mut parts = rest.split('|');
    let value = parts.next().expect("value").parse().expect("a number");
    let kind = parts.next().expect("type").to_owned();
    let (mut rate, mut tags) = (1.0, BTreeMap::new());
    for part in parts {
        if let Some(r) = part.strip_prefix('@') {
            rate = r.parse().expect("a sample rate");
        } else if let Some(list) = part.strip_prefix('#') {
            for tag in list.split(',') {
                let (k, v) = tag.split_once(':').expect("key:value tag");
                tags.insert(k.to_owned(), v.to_owned());
            }
        } else {
            panic!("`{part}` in `{line}` is no DogStatsD field");
        }
    }
    DogLine {
        name: name.to_owned(),
        value,
        kind,
        rate,
        tags,
    }
}

/// Every line received so far, by a socket's reading task.
type Lines = Arc<Mutex<Vec<String>>>;

/// A datagram socket of either kind the agent listens on.
trait Datagrams: Send + Sync + 'static {
    fn take(&self, buf: &mut [u8]) -> impl Future<Output = std::io::Result<usize>> + Send;
}

impl Datagrams for tokio::net::UdpSocket {
    fn take(&self, buf: &mut [u8]) -> impl Future<Output = std::io::Result<usize>> + Send {
        self.recv(buf)
    }
}

impl Datagrams for tokio::net::UnixDatagram {
    fn take(&self, buf: &mut [u8]) -> impl Future<Output = std::io::Result<usize>> + Send {
        self.recv(buf)
    }
}

/// Keeps every line `socket` receives, from a task of its own.
fn keep_lines(socket: impl Datagrams) -> Lines {
    let lines = Lines::default();
    let kept = lines.clone();
    tokio::spawn(async move {
        let mut buf = vec![0u8; 65536];
        while let Ok(n) = socket.take(&mut buf).await {
            let text = String::from_utf8_lossy(&buf[..n]).into_owned();
            kept.lock().unwrap().extend(text.lines().map(str::to_owned));
        }
    });
    lines
}

async fn udp_receiver() -> (u16, Lines) {
    let socket = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let port = socket.local_addr().unwrap().port();
    (port, keep_lines(socket))
}

/// The sum of `name`'s counts whose tags include `tags`, each line
/// weighted by its sample rate as the agent weighs it.
fn counted(lines: &Lines, name: &str, kind: &str, tags: &[(&str, &str)]) -> f64 {
    lines
        .lock()
        .unwrap()
        .iter()
        .map(|l| parse_dogstatsd(l))
        .filter(|l| l.name == name && l.kind == kind)
        .filter(|l| {
            tags.iter()
                .all(|(k, v)| l.tags.get(*k).map(String::as_str) == Some(v))
        })
        .map(|l| if kind == "c" { l.value } else { 1.0 / l.rate })
        .sum()
}

const SERVICE_200: [(&str, &str); 4] = [
    ("code", "200"),
    ("method", "GET"),
    ("protocol", "http"),
    ("service", "app@file"),
];

#[tokio::test]
async fn dogstatsd_lines_carry_labels_as_tags_and_the_last_push_comes_at_stop() {
    let (port, lines) = udp_receiver().await;
    let address = format!("--metrics.datadog.address=127.0.0.1:{port}");
    // An hour between pushes: what arrives is the push made at the stop.
    let (mut gw, _backend) = gangway(&[&address, "--metrics.datadog.pushInterval=1h"]).await;
    let at_entry_point = traffic(&gw, 3).await;
    assert!(gw.terminate().success());
    eventually(LIMIT, "the last push", || async {
        counted(&lines, "traefik.service.request.total", "c", &SERVICE_200) == 4.0
    })
    .await;
    let entry_point = [("entrypoint", "web")];
    assert_eq!(
        counted(
            &lines,
            "traefik.entrypoint.request.total",
            "c",
            &entry_point
        ),
        at_entry_point as f64
    );
    // Four samples, however many lines carry them.
    assert_eq!(
        counted(
            &lines,
            "traefik.service.request.duration",
            "h",
            &SERVICE_200
        ),
        4.0
    );
    let all: Vec<DogLine> = lines
        .lock()
        .unwrap()
        .iter()
        .map(|l| parse_dogstatsd(l))
        .collect();
    assert!(
        !all.iter().any(|l| l.name.starts_with("traefik.router.")),
        "routers are off by default: {all:?}"
    );
    let open = all
        .iter()
        .find(|l| l.name == "traefik.open.connections")
        .expect("open connections");
    assert_eq!(open.kind, "g");
    assert_eq!(open.tags.get("entrypoint").map(String::as_str), Some("web"));
}

#[tokio::test]
async fn dogstatsd_reaches_the_agent_over_its_unix_socket() {
    let dir = tempfile::tempdir().unwrap();
    let path: PathBuf = dir.path().join("dsd.socket");
    let lines = keep_lines(tokio::net::UnixDatagram::bind(&path).unwrap());
    let address = format!("--metrics.datadog.address=unix://{}", path.display());
    let (gw, _backend) = gangway(&[
        &address,
        "--metrics.datadog.prefix=gw",
        "--metrics.datadog.pushInterval=200ms",
        "--metrics.datadog.addServicesLabels=false",
        "--metrics.datadog.addRoutersLabels=true",
    ])
    .await;
    traffic(&gw, 1).await;
    let router = [("router", "app@file"), ("service", "app@file")];
    eventually(LIMIT, "the router's two requests", || async {
        counted(&lines, "gw.router.request.total", "c", &router) == 2.0
    })
    .await;
    let names: Vec<String> = lines
        .lock()
        .unwrap()
        .iter()
        .map(|l| parse_dogstatsd(l).name)
        .collect();
    assert!(
        !names.iter().any(|n| n.starts_with("gw.service.")),
        "services are off: {names:?}"
    );
}

/// What one write to the InfluxDB 2 double carried.
#[derive(Debug, Clone)]
struct Write {
    path: String,
    query: String,
    authorization: Option<String>,
    body: String,
}

/// One line-protocol point: measurement, tags, fields.
#[derive(Debug)]
struct InfluxPoint {
    measurement: String,
    tags: BTreeMap<String, String>,
    fields: BTreeMap<String, f64>,
}

/// Splits `text` at `sep` where it is not escaped by a backslash, and
/// removes the escapes.
fn unescaped_split(text: &str, sep: char) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => parts.last_mut().unwrap().extend(chars.next()),
            c if c == sep => parts.push(String::new()),
            c => parts.last_mut().unwrap().push(c),
        }
    }
    parts
}

fn parse_line(line: &str) -> InfluxPoint {
    // The tags end at the first unescaped space; fields and time hold none.
    let mut split = line.rsplitn(3, ' ');
    let (_time, fields, head) = (split.next(), split.next(), split.next());
    let head = unescaped_split(head.expect("measurement and tags"), ',');
    let tags = head[1..]
        .iter()
        .map(|t| {
            let (k, v) = t.split_once('=').expect("key=value tag");
            (k.to_owned(), v.to_owned())
        })
        .collect();
    let fields = fields
        .expect("fields")
        .split(',')
        .map(|f| {
            let (k, v) = f.split_once('=').expect("key=value field");
            (k.to_owned(), v.parse().expect("a float field"))
        })
        .collect();
    InfluxPoint {
        measurement: head[0].clone(),
        tags,
        fields,
    }
}

async fn influx_double() -> (Backend, Arc<Mutex<Vec<Write>>>) {
    let writes = Arc::new(Mutex::new(Vec::new()));
    let kept = writes.clone();
    let server = Backend::serve(move |req: http::Request<hyper::body::Incoming>| {
        let kept = kept.clone();
        async move {
            let path = req.uri().path().to_owned();
            let query = req.uri().query().unwrap_or_default().to_owned();
            let authorization = req
                .headers()
                .get(http::header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let body = req.into_body().collect().await.unwrap().to_bytes();
            kept.lock().unwrap().push(Write {
                path,
                query,
                authorization,
                body: String::from_utf8_lossy(&body).into_owned(),
            });
            // InfluxDB answers a write it took with 204.
            http::Response::builder()
                .status(StatusCode::NO_CONTENT)
                .body(Full::new(Bytes::new()))
                .unwrap()
        }
    })
    .await;
    (server, writes)
}

fn points(writes: &Arc<Mutex<Vec<Write>>>) -> Vec<InfluxPoint> {
    writes
        .lock()
        .unwrap()
        .iter()
        .flat_map(|w| w.body.lines().map(parse_line).collect::<Vec<_>>())
        .collect()
}

fn counted_points(points: &[InfluxPoint], measurement: &str, tags: &[(&str, &str)]) -> f64 {
    points
        .iter()
        .filter(|p| p.measurement == measurement)
        .filter(|p| {
            tags.iter()
                .all(|(k, v)| p.tags.get(*k).map(String::as_str) == Some(v))
        })
        .filter_map(|p| p.fields.get("count"))
        .sum()
}

#[tokio::test]
async fn influxdb2_gets_line_protocol_in_the_bucket_with_the_token() {
    let (server, writes) = influx_double().await;
    let address = format!("--metrics.influxDB2.address={}", server.url());
    let (gw, _backend) = gangway(&[
        &address,
        "--metrics.influxDB2.token=s3cret",
        "--metrics.influxDB2.org=acme",
        "--metrics.influxDB2.bucket=edge metrics",
        "--metrics.influxDB2.pushInterval=200ms",
        "--metrics.influxDB2.additionalLabels.host=edge 1",
    ])
    .await;
    traffic(&gw, 3).await;
    let service = [
        ("code", "200"),
        ("method", "GET"),
        ("service", "app@file"),
        ("host", "edge 1"),
    ];
    eventually(LIMIT, "four requests written", || async {
        counted_points(&points(&writes), "traefik.service.requests.total", &service) == 4.0
    })
    .await;
    let first = writes.lock().unwrap()[0].clone();
    assert_eq!(first.path, "/api/v2/write");
    assert_eq!(first.query, "org=acme&bucket=edge%20metrics&precision=ns");
    assert_eq!(first.authorization.as_deref(), Some("Token s3cret"));
    let all = points(&writes);
    let duration = all
        .iter()
        .find(|p| p.measurement == "traefik.service.request.duration")
        .expect("a duration point");
    let quantiles: Vec<&str> = duration.fields.keys().map(String::as_str).collect();
    assert_eq!(quantiles, ["p50", "p90", "p95", "p99"]);
    assert!(duration.fields.values().all(|q| *q > 0.0), "{duration:?}");
    assert!(
        all.iter()
            .any(|p| p.measurement == "traefik.config.reload.total"),
        "{all:?}"
    );
}

#[tokio::test]
async fn influxdb2_without_a_token_refuses_the_start_naming_the_option() {
    let out = tokio::process::Command::new(support::binary())
        .args([
            "--entryPoints.web.address=127.0.0.1:0",
            "--metrics.influxDB2.org=acme",
            "--metrics.influxDB2.bucket=b",
        ])
        .output()
        .await
        .expect("run gangway");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("metrics.influxDB2.token"), "{stderr}");
}
