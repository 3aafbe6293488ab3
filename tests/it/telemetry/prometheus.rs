//! A real Prometheus (Debian's `prometheus`) scraping a real gangway with
//! `metrics.prometheus.prefix=traefik` while it serves traffic to real
//! backends: every query of Traefik's official Grafana dashboard for
//! standalone Traefik (tests/prometheus/traefik-dashboard.promql) returns
//! data through Prometheus's HTTP API, and the usual alert on
//! `traefik_service_server_up == 0` names the server that was killed.

use crate::support;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::client::legacy::{Client, connect::HttpConnector};
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use support::pebble::{Exit, Silent, listens};
use support::{Gangway, eventually, free_port};
use tokio::net::TcpListener;
use tokio::task::JoinSet;

/// The dashboard's expressions, as copied from Traefik's repository.
const DASHBOARD: &str = include_str!("../../prometheus/traefik-dashboard.promql");

/// How long a query may take to return data: a few scrapes a second apart.
const WAIT: Duration = Duration::from_secs(60);

/// How many sets of ports a Prometheus start tries.
const ATTEMPTS: usize = 5;

type Http = Client<HttpConnector, Full<Bytes>>;

fn http() -> Http {
    Client::builder(TokioExecutor::new()).build_http()
}

/// A backend answering by path: `/slow` after 1.5 s (slower than the
/// dashboard's 1.2 s bucket), `/error` with 500, `/missing` with 404,
/// anything else with 200. Killing it closes its connections too, so
/// nothing kept alive answers for it.
struct App {
    addr: SocketAddr,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl App {
    async fn start() -> App {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let task = tokio::spawn(async move {
            // Dropping the set (when this task is aborted) closes every connection.
            let mut conns = JoinSet::new();
            loop {
                tokio::select! {
                    accepted = listener.accept() => {
                        let Ok((stream, _)) = accepted else { continue };
                        conns.spawn(async move {
                            let svc = service_fn(|req: Request<Incoming>| async move {
                                Ok::<_, Infallible>(answer(req.uri().path()).await)
                            });
                            let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                                .serve_connection(TokioIo::new(stream), svc)
                                .await;
                        });
                    }
                    Some(_) = conns.join_next() => {}
                }
            }
        });
        App {
            addr,
            task: Some(task),
        }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn kill(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

impl Drop for App {
    fn drop(&mut self) {
        self.kill();
    }
}

async fn answer(path: &str) -> Response<Full<Bytes>> {
    let status = match path {
        "/slow" => {
            tokio::time::sleep(Duration::from_millis(1500)).await;
            StatusCode::OK
        }
        "/error" => StatusCode::INTERNAL_SERVER_ERROR,
        "/missing" => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    };
    let mut resp = Response::new(Full::new(Bytes::from_static(b"hello from the app\n")));
    *resp.status_mut() = status;
    resp
}

/// Prometheus on a loopback port of its own, scraping `target` every
/// second, its data in a temporary directory; stopped when dropped.
struct Prometheus {
    child: Option<Child>,
    port: u16,
    dir: tempfile::TempDir,
    starts: usize,
    http: Http,
}

impl Prometheus {
    async fn start(binary: PathBuf, target: u16) -> Prometheus {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
                 scrape_configs:\n  - job_name: gangway\n    static_configs:\n      - targets: ['127.0.0.1:{target}']\n"
            ),
        )
        .expect("write prometheus.yml");
        let mut prometheus = Prometheus {
            child: None,
            port: 0,
            dir,
            starts: 0,
            http: http(),
        };
        for attempt in 1..=ATTEMPTS {
            prometheus.port = free_port();
            prometheus.starts += 1;
            let log = std::fs::File::create(prometheus.log_path(prometheus.starts)).unwrap();
            let child = Command::new(&binary)
                .arg(format!("--config.file={}", config.display()))
                .arg(format!(
                    "--storage.tsdb.path={}",
                    prometheus.dir.path().join("data").display()
                ))
                .arg(format!(
                    "--web.listen-address=127.0.0.1:{}",
                    prometheus.port
                ))
                .current_dir(prometheus.dir.path())
                .stdin(Stdio::null())
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .spawn()
                .expect("start prometheus");
            let child = prometheus.child.insert(child);
            match listens(child, prometheus.port).await {
                Ok(()) => {
                    prometheus.wait_ready().await;
                    return prometheus;
                }
                Err(Exit) => {
                    prometheus.child = None;
                    eprintln!("prometheus did not start (attempt {attempt}); trying another port");
                }
                Err(Silent) => panic!(
                    "prometheus did not listen on 127.0.0.1:{} within 20 s; its log:\n{}",
                    prometheus.port,
                    prometheus.log()
                ),
            }
        }
        panic!(
            "prometheus did not start in {ATTEMPTS} attempts; its log:\n{}",
            prometheus.log()
        );
    }

    fn log_path(&self, start: usize) -> PathBuf {
        self.dir.path().join(format!("prometheus-{start}.log"))
    }

    /// Everything Prometheus logged, over all its starts.
    fn log(&self) -> String {
        (1..=self.starts)
            .map(|i| std::fs::read_to_string(self.log_path(i)).unwrap_or_default())
            .collect()
    }

    async fn get(&self, path_and_query: &str) -> Option<(StatusCode, serde_json::Value)> {
        let req = Request::get(format!("http://127.0.0.1:{}{path_and_query}", self.port))
            .body(Full::default())
            .ok()?;
        let resp = self.http.request(req).await.ok()?;
        let status = resp.status();
        let body = resp.into_body().collect().await.ok()?.to_bytes();
        Some((status, serde_json::from_slice(&body).unwrap_or_default()))
    }

    async fn wait_ready(&self) {
        let ready = support::within(Duration::from_secs(30), || async {
            let req = Request::get(format!("http://127.0.0.1:{}/-/ready", self.port))
                .body(Full::default())
                .unwrap();
            matches!(self.http.request(req).await, Ok(r) if r.status() == StatusCode::OK)
        })
        .await;
        assert!(
            ready,
            "prometheus is not ready within 30 s; its log:\n{}",
            self.log()
        );
    }

    /// The result of an instant query, or Prometheus's error for it.
    async fn query(&self, promql: &str) -> Result<Vec<serde_json::Value>, String> {
        let encoded: String =
            percent_encoding::utf8_percent_encode(promql, percent_encoding::NON_ALPHANUMERIC)
                .to_string();
        let (status, body) = self
            .get(&format!("/api/v1/query?query={encoded}"))
            .await
            .ok_or("no answer")?;
        if status != StatusCode::OK || body["status"] != "success" {
            return Err(format!("{status}: {body}"));
        }
        Ok(body["data"]["result"]
            .as_array()
            .cloned()
            .unwrap_or_default())
    }

    /// Grafana's `label_values(metric, label)`: the values of `label` on
    /// the series of `metric`.
    async fn label_values(&self, metric: &str, label: &str) -> Result<Vec<String>, String> {
        let (status, body) = self
            .get(&format!(
                "/api/v1/label/{label}/values?match%5B%5D={metric}"
            ))
            .await
            .ok_or("no answer")?;
        if status != StatusCode::OK || body["status"] != "success" {
            return Err(format!("{status}: {body}"));
        }
        Ok(body["data"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect())
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The dashboard's expressions, comments left out.
fn dashboard_queries() -> Vec<String> {
    let text: String = DASHBOARD
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    text.split("\n---\n")
        .map(|q| q.trim().to_owned())
        .filter(|q| !q.is_empty())
        .collect()
}

/// `label_values(metric, label)` taken apart, for a variable's query.
fn label_values_of(query: &str) -> Option<(&str, &str)> {
    let inner = query.strip_prefix("label_values(")?.strip_suffix(')')?;
    let (metric, label) = inner.split_once(',')?;
    Some((metric.trim(), label.trim()))
}

/// Requests of every kind the dashboard shows, sent until the test ends:
/// GET and POST answered 200, a 404, a 500, and one request a second
/// slower than the dashboard's slowest bucket.
fn traffic(port: u16) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let client = http();
        let send = |method: &str, path: &str| {
            let req = Request::builder()
                .method(method)
                .uri(format!("http://127.0.0.1:{port}{path}"))
                .header("host", "app.test")
                .body(Full::new(Bytes::from_static(b"name=value")))
                .unwrap();
            let client = client.clone();
            async move {
                if let Ok(resp) = client.request(req).await {
                    let _ = resp.into_body().collect().await;
                }
            }
        };
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        for n in 0u64.. {
            tick.tick().await;
            send("GET", "/").await;
            send("POST", "/form").await;
            send("GET", "/missing").await;
            send("GET", "/error").await;
            if n % 10 == 0 {
                tokio::spawn(send("GET", "/slow"));
            }
        }
    })
}

#[tokio::test]
async fn traefiks_grafana_dashboard_and_server_up_alert_work_through_prometheus() {
    let Some(binary) = support::program(
        "traefiks_grafana_dashboard_and_server_up_alert_work_through_prometheus",
        &["prometheus"],
        "scripts/ci/servers-up",
    ) else {
        return;
    };
    let one = App::start().await;
    let mut two = App::start().await;
    let dynamic = format!(
        "{}[http.services.app.loadBalancer.healthCheck]\npath = \"/health\"\ninterval = \"1s\"\ntimeout = \"1s\"\n",
        support::one_route("app", "Host(`app.test`)", &[&one.url(), &two.url()])
    );
    let internal = free_port();
    let internal_flag = format!("--entryPoints.gangway.address=127.0.0.1:{internal}");
    let gw = Gangway::with_file(
        &dynamic,
        &[
            "--metrics.prometheus",
            "--metrics.prometheus.prefix=traefik",
            "--metrics.prometheus.addRoutersLabels=true",
            &internal_flag,
        ],
    )
    .await;
    eventually(Duration::from_secs(5), "routed", || async {
        gw.get("app.test", "/").await.status == StatusCode::OK
    })
    .await;
    let prometheus = Prometheus::start(binary, internal).await;
    let _traffic = traffic(gw.port);

    // The variables first, as Grafana fills them: an entry point and a
    // service the dashboard offers.
    let queries = dashboard_queries();
    assert_eq!(queries.len(), 16, "{queries:#?}");
    let mut offered = Vec::new();
    for query in queries.iter().filter(|q| q.starts_with("label_values(")) {
        let (metric, label) = label_values_of(query).expect("label_values(metric, label)");
        let values = std::cell::RefCell::new(Vec::new());
        eventually(WAIT, query, || async {
            let got = prometheus
                .label_values(metric, label)
                .await
                .unwrap_or_else(|e| panic!("{query}: {e}"));
            let some = !got.is_empty();
            *values.borrow_mut() = got;
            some
        })
        .await;
        offered.push((label.to_owned(), values.into_inner()));
    }
    let values_of =
        |label: &str| -> &[String] { &offered.iter().find(|(l, _)| l == label).expect(label).1 };
    assert!(
        values_of("entrypoint").contains(&"web".to_owned()),
        "{offered:?}"
    );
    assert_eq!(values_of("service"), ["app@file"], "{offered:?}");

    let fill = |query: &str| {
        query
            .replace("$entrypoint", "web")
            .replace("$service", "app@file")
            .replace("$interval", "1m")
    };
    for query in queries.iter().filter(|q| !q.starts_with("label_values(")) {
        let promql = fill(query);
        let last = std::cell::RefCell::new(Ok(Vec::new()));
        let answered = support::within(WAIT, || async {
            let got = prometheus.query(&promql).await;
            let some = got.as_ref().is_ok_and(|r| !r.is_empty());
            *last.borrow_mut() = got;
            some
        })
        .await;
        assert!(
            answered,
            "no data for\n{promql}\nlast answer: {:?}\ngangway's log:\n{}\nprometheus' log:\n{}",
            last.borrow(),
            gw.log(),
            prometheus.log()
        );
    }

    // The alert most Traefik setups carry: nothing while both servers are
    // up, then the server that died.
    let up = "traefik_service_server_up == 1";
    eventually(WAIT, up, || async {
        prometheus.query(up).await.is_ok_and(|r| r.len() == 2)
    })
    .await;
    let alert = "traefik_service_server_up == 0";
    assert_eq!(prometheus.query(alert).await, Ok(Vec::new()));
    two.kill();
    let firing = std::cell::RefCell::new(Vec::new());
    eventually(WAIT, alert, || async {
        let got = prometheus.query(alert).await.unwrap_or_default();
        let some = !got.is_empty();
        *firing.borrow_mut() = got;
        some
    })
    .await;
    let firing = firing.into_inner();
    assert_eq!(firing.len(), 1, "{firing:?}");
    let labels = &firing[0]["metric"];
    assert_eq!(labels["service"], "app@file", "{firing:?}");
    assert_eq!(labels["url"], two.url().as_str(), "{firing:?}");
    assert_eq!(
        labels["__name__"], "traefik_service_server_up",
        "{firing:?}"
    );
}
