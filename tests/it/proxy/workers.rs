//! Workers, end to end: the real binary with four workers
//! (`TOKIO_WORKER_THREADS=4`) on one `SO_REUSEPORT` port. Which worker took
//! a connection is read where a user reads it, in the debug line
//! `connection accepted` (`worker`, `client`). Connections spread over the
//! workers; each worker keeps and reuses upstream connections of its own;
//! a stop drains every worker; the entry point's connection bound and a
//! rate limit's budget hold across workers; the request counters each
//! worker keeps apart add up to every request sent. With two workers, a client's
//! two long-lived connections always get a worker each, which the kernel's
//! hashing alone does half the time. No timings are asserted: the backends
//! hold requests until the test releases them.

use crate::support;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use support::{Gangway, eventually, one_route};
use tokio::net::{TcpListener, TcpStream};

const WAIT: Duration = Duration::from_secs(15);
const WORKERS: &str = "4";

/// gangway with four workers, logging which worker accepts each connection.
async fn start(conf: &str, extra: &[&str]) -> Gangway {
    start_with(WORKERS, conf, extra).await
}

/// gangway with `workers` workers, logging which worker serves each
/// connection and when it closes.
async fn start_with(workers: &str, conf: &str, extra: &[&str]) -> Gangway {
    let mut args = vec!["--log.format=json"];
    args.extend_from_slice(extra);
    Gangway::with_file_env(
        conf,
        &args,
        &[
            ("TOKIO_WORKER_THREADS", workers),
            (
                "RUST_LOG",
                "warn,gangway::proxy=debug,gangway::worker=debug",
            ),
        ],
    )
    .await
}

/// The first value named `key` anywhere in a JSON log line.
fn field<'a>(v: &'a serde_json::Value, key: &str) -> Option<&'a serde_json::Value> {
    match v {
        serde_json::Value::Object(map) => map
            .get(key)
            .or_else(|| map.values().find_map(|inner| field(inner, key))),
        _ => None,
    }
}

/// The worker that accepted each connection, by the client's port, as the
/// `connection accepted` lines say.
fn accepted_by(gw: &Gangway) -> HashMap<u16, u64> {
    accepted_since(gw, 0)
}

/// As [`accepted_by`], from the log's byte `from` on (a port a closed
/// connection had may come back).
fn accepted_since(gw: &Gangway, from: usize) -> HashMap<u16, u64> {
    let log = gw.log();
    let mut workers = HashMap::new();
    for line in log.get(from..).unwrap_or_default().lines() {
        if !line.contains("connection accepted") {
            continue;
        }
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let worker = field(&v, "worker").and_then(|w| {
            w.as_u64()
                .or_else(|| w.as_str().and_then(|s| s.parse().ok()))
        });
        let port = field(&v, "client")
            .and_then(serde_json::Value::as_str)
            .and_then(|c| c.rsplit(':').next())
            .and_then(|p| p.parse::<u16>().ok());
        if let (Some(worker), Some(port)) = (worker, port) {
            workers.insert(port, worker);
        }
    }
    workers
}

/// The workers of the connections from `ports`, once every one is logged.
async fn workers_of(gw: &Gangway, ports: &[u16]) -> Vec<u64> {
    eventually(WAIT, "every connection logged with its worker", || async {
        let seen = accepted_by(gw);
        ports.iter().all(|p| seen.contains_key(p))
    })
    .await;
    let seen = accepted_by(gw);
    ports.iter().map(|p| seen[p]).collect()
}

/// A client connection of its own: its local port and its sender.
async fn connect(gw: &Gangway) -> (u16, SendRequest<Full<Bytes>>) {
    let stream = TcpStream::connect(("127.0.0.1", gw.port))
        .await
        .expect("connect");
    let port = stream.local_addr().expect("local address").port();
    let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake");
    tokio::spawn(conn);
    (port, send)
}

/// `GET /` for `app.test`, `close` asking for the connection to end after it.
fn get(close: bool) -> Request<Full<Bytes>> {
    let mut req = Request::get("/").header("host", "app.test");
    if close {
        req = req.header("connection", "close");
    }
    req.body(Full::default()).expect("request")
}

/// Sends `req` and reads the answer whole.
async fn send(
    sender: &mut SendRequest<Full<Bytes>>,
    req: Request<Full<Bytes>>,
) -> (StatusCode, String) {
    sender.ready().await.expect("connection ready");
    let resp = sender.send_request(req).await.expect("answer");
    let status = resp.status();
    let body = resp.into_body().collect().await.expect("body").to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// A backend that answers each request with the port gangway's connection
/// to it came from: which upstream connection carried the request.
async fn naming_connections() -> (String, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let task = tokio::spawn(async move {
        loop {
            let Ok((stream, peer)) = listener.accept().await else {
                continue;
            };
            tokio::spawn(async move {
                let svc = service_fn(move |_req: Request<Incoming>| async move {
                    Ok::<_, Infallible>(http::Response::new(Full::new(Bytes::from(
                        peer.port().to_string(),
                    ))))
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    (url, task)
}

/// A backend that holds every request until `release` turns true (or,
/// with `one_by_one`, lets one through per permit), counting the requests
/// in progress and the most it saw at once.
struct Holding {
    url: String,
    in_progress: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
    arrived: Arc<AtomicUsize>,
    permits: Arc<tokio::sync::Semaphore>,
    task: tokio::task::JoinHandle<()>,
}

impl Holding {
    async fn start() -> Holding {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let in_progress: Arc<AtomicUsize> = Arc::default();
        let most: Arc<AtomicUsize> = Arc::default();
        let arrived: Arc<AtomicUsize> = Arc::default();
        let permits = Arc::new(tokio::sync::Semaphore::new(0));
        let (i, m, a, p) = (
            in_progress.clone(),
            most.clone(),
            arrived.clone(),
            permits.clone(),
        );
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let (i, m, a, p) = (i.clone(), m.clone(), a.clone(), p.clone());
                tokio::spawn(async move {
                    let svc = service_fn(move |_req: Request<Incoming>| {
                        let (i, m, a, p) = (i.clone(), m.clone(), a.clone(), p.clone());
                        async move {
                            let now = i.fetch_add(1, Ordering::SeqCst) + 1;
                            m.fetch_max(now, Ordering::SeqCst);
                            a.fetch_add(1, Ordering::SeqCst);
                            p.acquire().await.expect("open").forget();
                            i.fetch_sub(1, Ordering::SeqCst);
                            Ok::<_, Infallible>(http::Response::new(Full::new(Bytes::from_static(
                                b"done",
                            ))))
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                });
            }
        });
        Holding {
            url,
            in_progress,
            most,
            arrived,
            permits,
            task,
        }
    }
}

impl Drop for Holding {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Waits until the route answers, so that the requests below meet the
/// configuration and not an empty router. Each probe is a connection of its
/// own that closes after its answer, so none stays open to count against
/// `maxConnections`.
async fn route_ready(gw: &Gangway) {
    eventually(WAIT, "route applied", || async {
        let (_, mut sender) = connect(gw).await;
        send(&mut sender, get(true)).await.0 != StatusCode::NOT_FOUND
    })
    .await;
}

#[tokio::test]
async fn connections_spread_over_workers_and_each_worker_reuses_its_own_upstream_connections() {
    let (backend, task) = naming_connections().await;
    let gw = start(&one_route("app", "Host(`app.test`)", &[&backend]), &[]).await;
    route_ready(&gw).await;

    let mut clients = Vec::new();
    for _ in 0..24 {
        clients.push(connect(&gw).await);
    }
    let ports: Vec<u16> = clients.iter().map(|(port, _)| *port).collect();
    let workers = workers_of(&gw, &ports).await;
    let used: BTreeSet<u64> = workers.iter().copied().collect();
    assert!(
        used.len() > 1,
        "24 connections all went to one worker: {workers:?}"
    );
    assert!(used.iter().all(|w| *w < 4), "worker numbers: {used:?}");

    // One request at a time, round the connections three times: each worker
    // has one request in progress at most, so its pool needs one upstream
    // connection and reuses it.
    let mut carried: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
    let mut requests = 0;
    for _ in 0..3 {
        for ((_, sender), worker) in clients.iter_mut().zip(&workers) {
            let (status, upstream) = send(sender, get(false)).await;
            assert_eq!(status, StatusCode::OK);
            carried.entry(upstream).or_default().insert(*worker);
            requests += 1;
        }
    }
    // Pools shared between workers would carry several workers' requests
    // on one upstream connection.
    for (upstream, by) in &carried {
        assert_eq!(
            by.len(),
            1,
            "upstream connection from port {upstream} carried requests of workers {by:?}"
        );
    }
    // Pools not reused would open one connection per request; reused, a
    // worker opens one (two if a request came before the last one's
    // connection was back in its pool).
    assert!(
        carried.len() <= 2 * used.len(),
        "{} upstream connections for {requests} requests over {} workers",
        carried.len(),
        used.len()
    );
    task.abort();
}

#[tokio::test]
async fn a_stop_drains_the_requests_of_every_worker() {
    let held = Holding::start().await;
    let gw = start(&one_route("app", "Host(`app.test`)", &[&held.url]), &[]).await;
    // The readiness probe's request is held too: let it through.
    held.permits.add_permits(1);
    route_ready(&gw).await;
    let before = held.arrived.load(Ordering::SeqCst);

    let mut ports = Vec::new();
    let mut answers = Vec::new();
    for _ in 0..16 {
        let (port, mut sender) = connect(&gw).await;
        ports.push(port);
        answers.push(tokio::spawn(
            async move { send(&mut sender, get(false)).await },
        ));
    }
    let workers: BTreeSet<u64> = workers_of(&gw, &ports).await.into_iter().collect();
    assert!(workers.len() > 1, "16 connections on one worker");
    eventually(WAIT, "every request reached the backend", || async {
        held.arrived.load(Ordering::SeqCst) - before == 16
    })
    .await;

    gw.sigterm();
    eventually(WAIT, "gangway stopped accepting", || async {
        gw.log().contains("stopped accepting")
    })
    .await;
    held.permits.add_permits(16);
    for answer in answers {
        let (status, body) = answer.await.expect("task");
        assert_eq!((status, body.as_str()), (StatusCode::OK, "done"));
    }
    let mut gw = gw;
    let mut exited = None;
    for _ in 0..300 {
        exited = gw.exited();
        if exited.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        exited.is_some_and(|status| status.success()),
        "gangway did not stop cleanly: {exited:?}"
    );
}

#[tokio::test]
async fn the_connection_bound_holds_across_workers() {
    let held = Holding::start().await;
    let gw = start(
        &one_route("app", "Host(`app.test`)", &[&held.url]),
        &["--entryPoints.web.transport.maxConnections=3"],
    )
    .await;
    held.permits.add_permits(1);
    route_ready(&gw).await;

    // Twelve connections, each asking for one request and then to close.
    let mut answers = Vec::new();
    let mut ports = Vec::new();
    for _ in 0..12 {
        let stream = TcpStream::connect(("127.0.0.1", gw.port))
            .await
            .expect("connect");
        ports.push(stream.local_addr().expect("local address").port());
        answers.push(tokio::spawn(async move {
            let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
                .await
                .expect("handshake");
            tokio::spawn(conn);
            send(&mut sender, get(true)).await
        }));
    }
    // Three are served (held by the backend); the rest wait to be accepted.
    eventually(WAIT, "three requests in progress", || async {
        held.in_progress.load(Ordering::SeqCst) == 3
    })
    .await;
    // Let every request through: each closed connection lets one more in,
    // and never more than three are in progress at the backend.
    held.permits.add_permits(12);
    for answer in answers {
        let (status, body) = answer.await.expect("task");
        assert_eq!((status, body.as_str()), (StatusCode::OK, "done"));
    }
    assert_eq!(
        held.most.load(Ordering::SeqCst),
        3,
        "requests in progress at once behind maxConnections=3"
    );
    let workers: BTreeSet<u64> = workers_of(&gw, &ports).await.into_iter().collect();
    assert!(workers.len() > 1, "12 connections on one worker");
}

#[tokio::test]
async fn a_rate_limit_budget_holds_across_workers() {
    let (backend, task) = naming_connections().await;
    let conf = format!(
        "[http.routers.app]\nrule = \"Host(`app.test`)\"\nservice = \"app\"\nmiddlewares = [\"rl\"]\n\
         [http.middlewares.rl.rateLimit]\naverage = 1\nperiod = \"1m\"\nburst = 5\n\
         [http.services.app.loadBalancer]\n[[http.services.app.loadBalancer.servers]]\nurl = \"{backend}\"\n"
    );
    let gw = start(&conf, &[]).await;
    // The probe that finds the route applied is answered, and spends one of
    // the burst's five (answers before that are 404s, which the limiter
    // never sees).
    route_ready(&gw).await;

    let mut clients = Vec::new();
    for _ in 0..20 {
        clients.push(connect(&gw).await);
    }
    let ports: Vec<u16> = clients.iter().map(|(port, _)| *port).collect();
    let workers: BTreeSet<u64> = workers_of(&gw, &ports).await.into_iter().collect();
    assert!(workers.len() > 1, "20 connections on one worker");
    let answers: Vec<_> = clients
        .into_iter()
        .map(|(_, mut sender)| tokio::spawn(async move { send(&mut sender, get(false)).await.0 }))
        .collect();
    let mut statuses = BTreeMap::new();
    for answer in answers {
        *statuses.entry(answer.await.expect("task")).or_insert(0) += 1;
    }
    // A burst of five, one of which the readiness probe took.
    assert_eq!(
        statuses,
        BTreeMap::from([(StatusCode::OK, 4), (StatusCode::TOO_MANY_REQUESTS, 16)])
    );
    task.abort();
}

/// Waits until every connection gangway accepted so far has closed, as its
/// `connection closed` lines say, so that none still counts for a worker.
async fn all_closed(gw: &Gangway) {
    eventually(WAIT, "every accepted connection closed", || async {
        let log = gw.log();
        let count = |what: &str| log.lines().filter(|l| l.contains(what)).count();
        count("connection closed") == count("connection accepted")
    })
    .await;
}

#[tokio::test]
async fn two_long_lived_connections_get_a_worker_each() {
    let (backend, task) = naming_connections().await;
    let gw = start_with("2", &one_route("app", "Host(`app.test`)", &[&backend]), &[]).await;
    route_ready(&gw).await;
    all_closed(&gw).await;

    // The kernel's hash puts two connections on one worker half the time:
    // sixteen rounds in a row one worker each is left to luck once in
    // 65,536 runs without the hand-off.
    for round in 0..16 {
        let from = gw.log().len();
        let mut first = connect(&gw).await;
        let mut second = connect(&gw).await;
        for (_, sender) in [&mut first, &mut second] {
            assert_eq!(send(sender, get(false)).await.0, StatusCode::OK);
        }
        let ports = [first.0, second.0];
        eventually(
            WAIT,
            "both connections logged with their worker",
            || async {
                let seen = accepted_since(&gw, from);
                ports.iter().all(|p| seen.contains_key(p))
            },
        )
        .await;
        let seen = accepted_since(&gw, from);
        let workers = [seen[&ports[0]], seen[&ports[1]]];
        assert_ne!(
            workers[0], workers[1],
            "round {round}: both long-lived connections on worker {}",
            workers[0]
        );
        drop((first, second));
        all_closed(&gw).await;
    }
    task.abort();
}

#[tokio::test]
async fn request_counters_add_up_over_workers() {
    let (backend, task) = naming_connections().await;
    let internal = support::free_port();
    let internal_flag = format!("--entryPoints.gangway.address=127.0.0.1:{internal}");
    let gw = start(
        &one_route("app", "Host(`app.test`)", &[&backend]),
        &[
            "--metrics.prometheus",
            "--metrics.prometheus.prefix=gangway",
            "--metrics.prometheus.addRoutersLabels=true",
            &internal_flag,
        ],
    )
    .await;
    // The probe that finds the route applied is the first request counted.
    route_ready(&gw).await;

    let mut clients = Vec::new();
    for _ in 0..16 {
        clients.push(connect(&gw).await);
    }
    let ports: Vec<u16> = clients.iter().map(|(port, _)| *port).collect();
    let workers: BTreeSet<u64> = workers_of(&gw, &ports).await.into_iter().collect();
    assert!(workers.len() > 1, "16 connections on one worker");
    // Every connection sends at the same time as the others, so that the
    // workers count at once.
    let sent: Vec<_> = clients
        .into_iter()
        .map(|(_, mut sender)| {
            tokio::spawn(async move {
                for _ in 0..25 {
                    assert_eq!(send(&mut sender, get(false)).await.0, StatusCode::OK);
                }
            })
        })
        .collect();
    for task in sent {
        task.await.expect("client");
    }

    let scrape = Request::get(format!("http://127.0.0.1:{internal}/metrics"))
        .body(Default::default())
        .expect("request");
    let text = gw.send(scrape).await.text();
    let value = |series: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
            .map(str::to_owned)
    };
    let labels = r#"code="200",method="GET",protocol="http",router="app@file",service="app@file""#;
    let expected = (1 + 16 * 25).to_string();
    for series in [
        format!("gangway_router_requests_total{{{labels}}}"),
        format!("gangway_router_request_duration_seconds_count{{{labels}}}"),
        r#"gangway_service_requests_total{code="200",method="GET",protocol="http",service="app@file"}"#
            .to_owned(),
    ] {
        assert_eq!(
            value(&series).as_deref(),
            Some(expected.as_str()),
            "{series} in\n{text}"
        );
    }
    task.abort();
}
