//! Load balancing through the real binary: weights, sticky cookies, active
//! health checks under load, failover, mirroring, passive retry, HTTPS
//! servers with their own CAs, state that survives a configuration change,
//! and bad service definitions that disable only themselves.

use crate::support;

use bytes::Bytes;
use http::header::{COOKIE, SET_COOKIE};
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::client::legacy::{Client, connect::HttpConnector};
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::{Backend, Gangway, eventually, free_port};
use tokio::net::TcpListener;
use tokio::task::JoinSet;

const WAIT: Duration = Duration::from_secs(10);

// === backends ===

/// What a [`Server`] saw of one request.
#[derive(Clone, Debug)]
struct Hit {
    method: String,
    path: String,
    body: Bytes,
}

/// A backend that answers with its name, records what it got, answers
/// `/health` according to a switch, and can be killed (listener and every
/// open connection closed) and started again on the same port.
struct Server {
    name: String,
    addr: SocketAddr,
    healthy: Arc<AtomicBool>,
    health_checks: Arc<AtomicUsize>,
    hits: Arc<Mutex<Vec<Hit>>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Server {
    async fn start(name: &str) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let mut s = Server {
            name: name.to_owned(),
            addr,
            healthy: Arc::new(AtomicBool::new(true)),
            health_checks: Arc::default(),
            hits: Arc::default(),
            task: None,
        };
        s.serve(listener);
        s
    }

    fn serve(&mut self, listener: TcpListener) {
        let name = self.name.clone();
        let healthy = self.healthy.clone();
        let checks = self.health_checks.clone();
        let hits = self.hits.clone();
        self.task = Some(tokio::spawn(async move {
            // Dropping the set (when this task is aborted) closes every connection.
            let mut conns = JoinSet::new();
            loop {
                tokio::select! {
                    accepted = listener.accept() => {
                        let Ok((stream, _)) = accepted else { continue };
                        let (name, healthy, checks, hits) =
                            (name.clone(), healthy.clone(), checks.clone(), hits.clone());
                        conns.spawn(async move {
                            let svc = service_fn(move |req: Request<Incoming>| {
                                let (name, healthy, checks, hits) =
                                    (name.clone(), healthy.clone(), checks.clone(), hits.clone());
                                async move {
                                    Ok::<_, Infallible>(answer(req, &name, &healthy, &checks, &hits).await)
                                }
                            });
                            let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                                .serve_connection(TokioIo::new(stream), svc)
                                .await;
                        });
                    }
                    Some(_) = conns.join_next() => {}
                }
            }
        }));
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn kill(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }

    async fn restart(&mut self) {
        let listener = TcpListener::bind(self.addr).await.expect("bind again");
        self.serve(listener);
    }

    fn hits(&self) -> Vec<Hit> {
        self.hits.lock().unwrap().clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

async fn answer(
    req: Request<Incoming>,
    name: &str,
    healthy: &AtomicBool,
    checks: &AtomicUsize,
    hits: &Mutex<Vec<Hit>>,
) -> http::Response<Full<Bytes>> {
    if req.uri().path() == "/health" {
        let n = checks.fetch_add(1, Ordering::SeqCst);
        if n > 0 && name.ends_with("-hang") {
            // Only the first check gets an answer; later ones wait forever.
            std::future::pending::<()>().await;
        }
        let status = if healthy.load(Ordering::SeqCst) {
            StatusCode::OK
        } else {
            StatusCode::SERVICE_UNAVAILABLE
        };
        let mut resp = http::Response::new(Full::new(Bytes::from_static(b"health")));
        *resp.status_mut() = status;
        return resp;
    }
    let method = req.method().to_string();
    let path = req.uri().path().to_owned();
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    hits.lock().unwrap().push(Hit { method, path, body });
    let mut resp = http::Response::new(Full::new(Bytes::from(name.to_owned())));
    resp.headers_mut()
        .insert("x-backend", name.parse().expect("name"));
    resp
}

// === client ===

/// A response, read whole.
struct Got {
    status: StatusCode,
    backend: String,
    set_cookie: Vec<String>,
}

fn client() -> Client<HttpConnector, Full<Bytes>> {
    Client::builder(TokioExecutor::new()).build_http()
}

async fn send(client: &Client<HttpConnector, Full<Bytes>>, req: Request<Full<Bytes>>) -> Got {
    match client.request(req).await {
        Ok(resp) => {
            let status = resp.status();
            let set_cookie = resp
                .headers()
                .get_all(SET_COOKIE)
                .iter()
                .map(|v| v.to_str().unwrap_or_default().to_owned())
                .collect();
            let body = resp
                .into_body()
                .collect()
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            Got {
                status,
                backend: String::from_utf8_lossy(&body).into_owned(),
                set_cookie,
            }
        }
        Err(e) => Got {
            status: StatusCode::IM_A_TEAPOT,
            backend: format!("client error: {e}"),
            set_cookie: Vec::new(),
        },
    }
}

fn get(gw: &Gangway, host: &str, cookie: Option<&str>) -> Request<Full<Bytes>> {
    let mut b = Request::get(gw.url("/")).header("host", host);
    if let Some(c) = cookie {
        b = b.header(COOKIE, c);
    }
    b.body(Full::default()).unwrap()
}

fn post(gw: &Gangway, host: &str, body: &'static [u8]) -> Request<Full<Bytes>> {
    Request::post(gw.url("/upload"))
        .header("host", host)
        .body(Full::new(Bytes::from_static(body)))
        .unwrap()
}

async fn wait_for(gw: &Gangway, host: &str) {
    let c = client();
    eventually(WAIT, &format!("{host} is routed"), || async {
        send(&c, get(gw, host, None)).await.status != StatusCode::NOT_FOUND
    })
    .await;
}

fn router(name: &str, host: &str, service: &str) -> String {
    format!("[http.routers.{name}]\nrule = \"Host(`{host}`)\"\nservice = \"{service}\"\n")
}

fn lb(service: &str, servers: &[(&str, u32)], extra: &str) -> String {
    let mut s = format!("[http.services.{service}.loadBalancer]\n{extra}\n");
    for (url, weight) in servers {
        s.push_str(&format!(
            "[[http.services.{service}.loadBalancer.servers]]\nurl = \"{url}\"\nweight = {weight}\n"
        ));
    }
    s
}

fn health(service: &str, interval: &str) -> String {
    format!(
        "[http.services.{service}.loadBalancer.healthCheck]\npath = \"/health\"\ninterval = \"{interval}\"\ntimeout = \"1s\"\n"
    )
}

/// Sends `n` requests from `workers` concurrent clients; counts answers by backend.
async fn spread(gw: &Gangway, host: &str, n: usize, workers: usize) -> BTreeMap<String, usize> {
    let mut set = JoinSet::new();
    for w in 0..workers {
        let url = gw.url("/");
        let host = host.to_owned();
        let share = n / workers + usize::from(w < n % workers);
        set.spawn(async move {
            let c = client();
            let mut counts: BTreeMap<String, usize> = BTreeMap::new();
            for _ in 0..share {
                let req = Request::get(&url)
                    .header("host", &host)
                    .body(Full::default())
                    .unwrap();
                let got = send(&c, req).await;
                assert_eq!(got.status, StatusCode::OK, "{}", got.backend);
                *counts.entry(got.backend).or_default() += 1;
            }
            counts
        });
    }
    let mut total = BTreeMap::new();
    while let Some(r) = set.join_next().await {
        for (k, v) in r.expect("worker") {
            *total.entry(k).or_default() += v;
        }
    }
    total
}

fn share(counts: &BTreeMap<String, usize>, name: &str) -> f64 {
    let total: usize = counts.values().sum();
    counts.get(name).copied().unwrap_or(0) as f64 / total as f64
}

/// The value of cookie `name` in a list of `Set-Cookie` headers.
fn cookie_value<'a>(set_cookie: &'a [String], name: &str) -> Option<&'a str> {
    set_cookie.iter().find_map(|c| {
        let first = c.split(';').next()?;
        let (k, v) = first.split_once('=')?;
        (k == name).then_some(v)
    })
}

// === tests ===

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weights_hold_over_ten_thousand_requests() {
    let a = Server::start("a").await;
    let b = Server::start("b").await;
    let c = Server::start("c").await;
    let conf = format!(
        "{}{}{}{}{}{}",
        router("servers", "servers.test", "servers"),
        lb("servers", &[(&a.url(), 3), (&b.url(), 1)], ""),
        router("services", "services.test", "split"),
        "[[http.services.split.weighted.services]]\nname = \"one\"\nweight = 1\n[[http.services.split.weighted.services]]\nname = \"two\"\nweight = 4\n",
        lb("one", &[(&c.url(), 1)], ""),
        lb("two", &[(&a.url(), 1), (&b.url(), 1)], ""),
    );
    let gw = Gangway::with_file(&conf, &[]).await;
    wait_for(&gw, "servers.test").await;
    wait_for(&gw, "services.test").await;

    let servers = spread(&gw, "servers.test", 10_000, 8).await;
    let a_share = share(&servers, "a");
    println!("servers 3:1 over 10,000 requests: {servers:?}");
    assert!(
        (a_share - 0.75).abs() < 0.02,
        "a got {a_share}: {servers:?}"
    );
    assert_eq!(servers.len(), 2, "{servers:?}");

    let services = spread(&gw, "services.test", 10_000, 8).await;
    let c_share = share(&services, "c");
    println!("services 1:4 over 10,000 requests: {services:?}");
    assert!(
        (c_share - 0.2).abs() < 0.02,
        "c got {c_share}: {services:?}"
    );
    assert!((share(&services, "a") - 0.4).abs() < 0.02, "{services:?}");
}

#[tokio::test]
async fn sticky_cookie_keeps_a_client_on_one_server_and_moves_it_when_that_one_is_gone() {
    let mut servers = Vec::new();
    for name in ["s0", "s1", "s2"] {
        servers.push(Server::start(name).await);
    }
    let urls: Vec<String> = servers.iter().map(Server::url).collect();
    let list: Vec<(&str, u32)> = urls.iter().map(|u| (u.as_str(), 1)).collect();
    let conf = format!(
        "{}{}{}[http.services.app.loadBalancer.sticky.cookie]\nname = \"lb\"\nhttpOnly = true\nsameSite = \"lax\"\n",
        router("app", "app.test", "app"),
        lb("app", &list, ""),
        health("app", "100ms"),
    );
    let gw = Gangway::with_file(&conf, &[]).await;
    wait_for(&gw, "app.test").await;
    let c = client();

    let first = send(&c, get(&gw, "app.test", None)).await;
    assert_eq!(first.status, StatusCode::OK);
    let value = cookie_value(&first.set_cookie, "lb")
        .unwrap_or_else(|| panic!("sticky cookie set: {:?}", first.set_cookie))
        .to_owned();
    assert!(
        !value.contains("127.0.0.1"),
        "the cookie names the server by a hash, not its address: {value}"
    );
    assert!(
        first.set_cookie[0].contains("HttpOnly") && first.set_cookie[0].contains("SameSite=Lax")
    );
    let cookie = format!("other=1; lb={value}");
    for _ in 0..30 {
        let got = send(&c, get(&gw, "app.test", Some(&cookie))).await;
        assert_eq!(got.backend, first.backend, "the client stays on its server");
        assert!(got.set_cookie.is_empty(), "a valid cookie is not set again");
    }
    // Without the cookie, traffic still rotates.
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..6 {
        seen.insert(send(&c, get(&gw, "app.test", None)).await.backend);
    }
    assert_eq!(seen.len(), 3, "{seen:?}");

    // An unknown cookie falls back to balancing and is replaced.
    let got = send(&c, get(&gw, "app.test", Some("lb=0123456789abcdef"))).await;
    assert_eq!(got.status, StatusCode::OK);
    assert!(cookie_value(&got.set_cookie, "lb").is_some());

    // The client's server goes away: the next request lands elsewhere and
    // the cookie follows it there.
    let gone = servers
        .iter()
        .position(|s| s.name == first.backend)
        .expect("known backend");
    servers[gone].kill();
    let deadline = Instant::now() + WAIT;
    let moved = loop {
        let got = send(&c, get(&gw, "app.test", Some(&cookie))).await;
        if got.status == StatusCode::OK && got.backend != first.backend {
            break got;
        }
        assert!(Instant::now() < deadline, "the sticky client never moved");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let new_value = cookie_value(&moved.set_cookie, "lb").expect("cookie reset");
    assert_ne!(new_value, value);
    let new_cookie = format!("lb={new_value}");
    for _ in 0..10 {
        let got = send(&c, get(&gw, "app.test", Some(&new_cookie))).await;
        assert_eq!(got.backend, moved.backend);
    }
}

#[tokio::test]
async fn sticky_weighted_service_keeps_a_client_on_one_child() {
    let a = Server::start("a").await;
    let b = Server::start("b").await;
    let conf = format!(
        "{}[http.services.w.weighted.sticky.cookie]\n[[http.services.w.weighted.services]]\nname = \"sa\"\n[[http.services.w.weighted.services]]\nname = \"sb\"\n{}{}",
        router("w", "w.test", "w"),
        lb("sa", &[(&a.url(), 1)], ""),
        lb("sb", &[(&b.url(), 1)], ""),
    );
    let gw = Gangway::with_file(&conf, &[]).await;
    wait_for(&gw, "w.test").await;
    let c = client();
    let first = send(&c, get(&gw, "w.test", None)).await;
    // The default name: `_` and five hex digits, as Traefik derives it.
    let set = first.set_cookie.first().expect("a cookie").clone();
    let (name, rest) = set.split_once('=').expect("name=value");
    assert!(name.len() == 6 && name.starts_with('_'), "{set}");
    let value = rest.split(';').next().unwrap();
    assert!(!value.contains("sa@file"), "{set}");
    let cookie = format!("{name}={value}");
    for _ in 0..10 {
        assert_eq!(
            send(&c, get(&gw, "w.test", Some(&cookie))).await.backend,
            first.backend
        );
    }
}

/// A load loop: GET requests one after another until stopped; records when
/// each started and how it ended.
struct Load {
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<Vec<(Instant, StatusCode, String)>>,
}

impl Load {
    fn start(gw: &Gangway, host: &str) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let url = gw.url("/");
        let host = host.to_owned();
        let flag = stop.clone();
        let task = tokio::spawn(async move {
            let c = client();
            let mut out = Vec::new();
            // Bounded: a few minutes of requests at most.
            for _ in 0..200_000 {
                if flag.load(Ordering::SeqCst) {
                    break;
                }
                let started = Instant::now();
                let req = Request::get(&url)
                    .header("host", &host)
                    .body(Full::default())
                    .unwrap();
                let got = send(&c, req).await;
                out.push((started, got.status, got.backend));
            }
            out
        });
        Load { stop, task }
    }

    async fn finish(self) -> Vec<(Instant, StatusCode, String)> {
        self.stop.store(true, Ordering::SeqCst);
        self.task.await.expect("load task")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_check_takes_a_dead_server_out_and_back_under_load() {
    let mut a = Server::start("a").await;
    let b = Server::start("b").await;
    let conf = format!(
        "{}{}{}",
        router("app", "app.test", "app"),
        lb("app", &[(&a.url(), 1), (&b.url(), 1)], ""),
        health("app", "100ms"),
    );
    let gw = Gangway::with_file(&conf, &[]).await;
    wait_for(&gw, "app.test").await;
    let load = Load::start(&gw, "app.test");
    let hits_before = a.hits().len();
    eventually(WAIT, "a takes traffic", || async {
        a.hits().len() > hits_before + 5
    })
    .await;

    a.kill();
    eventually(WAIT, "the checker reports a down", || async {
        gw.log().contains("server is unhealthy")
    })
    .await;
    let seen_down = Instant::now();
    // Some requests while it is down, all to b.
    tokio::time::sleep(Duration::from_millis(300)).await;

    a.restart().await;
    let back_from = a.hits().len();
    eventually(WAIT, "a takes traffic again after it recovers", || async {
        a.hits().len() > back_from + 5
    })
    .await;
    let outcomes = load.finish().await;

    let after: Vec<_> = outcomes.iter().filter(|(t, _, _)| *t > seen_down).collect();
    let failed: Vec<_> = after
        .iter()
        .filter(|(_, s, _)| *s != StatusCode::OK)
        .collect();
    let before_failed = outcomes
        .iter()
        .filter(|(t, s, _)| *t <= seen_down && *s != StatusCode::OK)
        .count();
    println!(
        "health: {} requests, {} after the checker saw a down ({} failed before that, {} after)",
        outcomes.len(),
        after.len(),
        before_failed,
        failed.len()
    );
    assert!(after.len() > 20, "the load kept going: {}", after.len());
    assert!(
        failed.is_empty(),
        "failed after the checker saw it down: {failed:?}"
    );
    assert!(
        after.iter().any(|(_, _, backend)| backend == "a"),
        "a came back"
    );
}

/// A service as `/api/http/services/{name}` shows it; None while the API
/// does not answer with one.
async fn api_service(port: u16, name: &str) -> Option<serde_json::Value> {
    let req = Request::get(format!("http://127.0.0.1:{port}/api/http/services/{name}"))
        .body(Full::default())
        .ok()?;
    let resp = client().request(req).await.ok()?;
    if resp.status() != StatusCode::OK {
        return None;
    }
    let body = resp.into_body().collect().await.ok()?.to_bytes();
    serde_json::from_slice(&body).ok()
}

#[tokio::test]
async fn the_api_shows_a_dead_server_down_and_up_again_when_it_recovers() {
    let mut a = Server::start("a").await;
    let b = Server::start("b").await;
    let api = free_port();
    let conf = format!(
        "{}{}{}{}{}",
        router("app", "app.test", "app"),
        lb("app", &[(&a.url(), 1), (&b.url(), 1)], ""),
        health("app", "100ms"),
        router("plain", "plain.test", "plain"),
        lb("plain", &[(&a.url(), 1)], ""),
    );
    let ep = format!("--entryPoints.gangway.address=127.0.0.1:{api}");
    let gw = Gangway::with_file(&conf, &["--api.insecure=true", &ep]).await;
    wait_for(&gw, "app.test").await;
    let status = |svc: &serde_json::Value, server: &Server| {
        svc["serverStatus"][server.url()]
            .as_str()
            .map(str::to_owned)
    };
    eventually(WAIT, "both servers are UP and checked", || async {
        api_service(api, "app@file").await.is_some_and(|svc| {
            status(&svc, &a).as_deref() == Some("UP")
                && status(&svc, &b).as_deref() == Some("UP")
                && svc["serverHealth"][a.url()]["lastCheck"].is_u64()
        })
    })
    .await;

    a.kill();
    eventually(WAIT, "the API shows a DOWN, b still UP", || async {
        api_service(api, "app@file").await.is_some_and(|svc| {
            status(&svc, &a).as_deref() == Some("DOWN")
                && status(&svc, &b).as_deref() == Some("UP")
                && svc["serverHealth"][a.url()]["lastError"].is_string()
        })
    })
    .await;
    // The same in the list, and a service without health checks says UP
    // for the same dead server: nothing checks it.
    let req = Request::get(format!("http://127.0.0.1:{api}/api/http/services"))
        .body(Full::default())
        .unwrap();
    let list = client().request(req).await.expect("services list");
    let list: serde_json::Value =
        serde_json::from_slice(&list.into_body().collect().await.unwrap().to_bytes())
            .expect("json");
    let find = |name: &str| {
        list.as_array()
            .and_then(|l| l.iter().find(|s| s["name"] == name))
            .cloned()
            .unwrap_or_else(|| panic!("{name} in {list}"))
    };
    assert_eq!(status(&find("app@file"), &a).as_deref(), Some("DOWN"));
    let plain = find("plain@file");
    assert_eq!(status(&plain, &a).as_deref(), Some("UP"));
    assert!(plain.get("serverHealth").is_none(), "{plain}");

    a.restart().await;
    eventually(WAIT, "the API shows a UP again", || async {
        api_service(api, "app@file").await.is_some_and(|svc| {
            status(&svc, &a).as_deref() == Some("UP")
                && svc["serverHealth"][a.url()].get("lastError").is_none()
        })
    })
    .await;
}

/// `GET` of an API path on the internal entry point at `port`; None while
/// it does not answer 200 with JSON.
async fn api_json(port: u16, path: &str) -> Option<serde_json::Value> {
    let req = Request::get(format!("http://127.0.0.1:{port}{path}"))
        .body(Full::default())
        .ok()?;
    let resp = client().request(req).await.ok()?;
    if resp.status() != StatusCode::OK {
        return None;
    }
    let body = resp.into_body().collect().await.ok()?.to_bytes();
    serde_json::from_slice(&body).ok()
}

/// The kinds of the problems an API object lists.
fn problem_kinds(v: &serde_json::Value) -> Vec<String> {
    v["problems"]
        .as_array()
        .map(|l| {
            l.iter()
                .filter_map(|p| p["kind"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn a_service_whose_checked_servers_are_down_is_a_warning_then_an_error_and_ok_again() {
    let mut a = Server::start("a").await;
    let mut b = Server::start("b").await;
    let api = free_port();
    let conf = format!(
        "{}{}{}",
        router("app", "app.test", "app"),
        lb("app", &[(&a.url(), 1), (&b.url(), 1)], ""),
        health("app", "100ms"),
    );
    let ep = format!("--entryPoints.gangway.address=127.0.0.1:{api}");
    let gw = Gangway::with_file(&conf, &["--api.insecure=true", &ep]).await;
    wait_for(&gw, "app.test").await;
    let service_status = || async {
        api_service(api, "app@file")
            .await
            .and_then(|s| s["status"].as_str().map(str::to_owned))
    };
    eventually(WAIT, "the service is enabled", || async {
        service_status().await.as_deref() == Some("enabled")
    })
    .await;
    // Read once while serving, so what follows is seen as it changes, not
    // as it was first shown.
    let router = api_json(api, "/api/http/routers/app@file")
        .await
        .expect("router");
    assert_eq!(router["status"], "enabled", "{router}");

    a.kill();
    eventually(WAIT, "one of two down: a warning", || async {
        service_status().await.as_deref() == Some("warning")
    })
    .await;
    let svc = api_service(api, "app@file").await.expect("service");
    assert!(
        problem_kinds(&svc).contains(&"serversDown".to_owned()),
        "{svc}"
    );
    assert!(
        svc["error"][0].as_str().unwrap_or("").contains("1 of 2"),
        "{svc}"
    );

    b.kill();
    eventually(WAIT, "all down: an error", || async {
        service_status().await.as_deref() == Some("disabled")
    })
    .await;
    let svc = api_service(api, "app@file").await.expect("service");
    assert!(
        svc["error"][0]
            .as_str()
            .unwrap_or("")
            .contains("every server is down"),
        "{svc}"
    );
    // The overview counts it, and the router says its service is down.
    let overview = api_json(api, "/api/overview").await.expect("overview");
    assert_eq!(overview["http"]["services"]["errors"], 1, "{overview}");
    let router = api_json(api, "/api/http/routers/app@file")
        .await
        .expect("router");
    // Every request to it fails: the router is in error, not a warning.
    assert_eq!(router["status"], "disabled", "{router}");
    assert!(
        problem_kinds(&router).contains(&"serviceDown".to_owned()),
        "{router}"
    );
    assert!(
        router["error"][0]
            .as_str()
            .unwrap_or("")
            .contains("app@file"),
        "{router}"
    );
    assert_eq!(overview["http"]["routers"]["errors"], 1, "{overview}");

    a.restart().await;
    b.restart().await;
    eventually(WAIT, "both back: OK again", || async {
        service_status().await.as_deref() == Some("enabled")
    })
    .await;
    let router = api_json(api, "/api/http/routers/app@file")
        .await
        .expect("router");
    assert_eq!(router["status"], "enabled", "{router}");
}

#[tokio::test]
async fn a_service_without_health_check_is_down_after_a_refused_connection_and_up_after_a_success()
{
    let mut a = Server::start("a").await;
    let api = free_port();
    let conf = format!(
        "{}{}",
        router("app", "app.test", "app"),
        lb("app", &[(&a.url(), 1)], ""),
    );
    let ep = format!("--entryPoints.gangway.address=127.0.0.1:{api}");
    let gw = Gangway::with_file(&conf, &["--api.insecure=true", &ep]).await;
    wait_for(&gw, "app.test").await;
    let c = client();
    assert_eq!(
        send(&c, get(&gw, "app.test", None)).await.status,
        StatusCode::OK
    );

    a.kill();
    // The first request may find a pooled connection closed rather than a
    // refusal; the first refusal takes the server out of the rotation (the
    // default quarantine), which the API shows at once. As the only server
    // it is still tried by each request.
    let mut requests = 0;
    loop {
        assert_eq!(
            send(&c, get(&gw, "app.test", None)).await.status,
            StatusCode::BAD_GATEWAY
        );
        requests += 1;
        let svc = api_service(api, "app@file").await.expect("service");
        if svc["status"] == "disabled" {
            assert_eq!(
                svc["serverStates"][a.url()]["state"],
                "unreachable",
                "{svc}"
            );
            break;
        }
        assert!(
            requests < 3,
            "still not down after {requests} refused requests: {svc}"
        );
    }
    // The next request meets the refusal itself (the pooled connection is
    // gone), which the server's health counts.
    assert_eq!(
        send(&c, get(&gw, "app.test", None)).await.status,
        StatusCode::BAD_GATEWAY
    );
    let svc = api_service(api, "app@file").await.expect("service");
    assert!(
        svc["serverHealth"][a.url()]["failedConnections"]
            .as_u64()
            .is_some_and(|n| n >= 1),
        "{svc}"
    );
    assert_eq!(svc["status"], "disabled", "{svc}");
    assert_eq!(svc["serverStatus"][a.url()], "DOWN", "{svc}");
    assert!(
        svc["serverHealth"][a.url()]["lastError"].is_string(),
        "{svc}"
    );
    assert!(
        problem_kinds(&svc).contains(&"serversDown".to_owned()),
        "{svc}"
    );
    let overview = api_json(api, "/api/overview").await.expect("overview");
    assert_eq!(overview["http"]["services"]["errors"], 1, "{overview}");

    a.restart().await;
    assert_eq!(
        send(&c, get(&gw, "app.test", None)).await.status,
        StatusCode::OK
    );
    let svc = api_service(api, "app@file").await.expect("service");
    assert_eq!(svc["status"], "enabled", "{svc}");
    assert_eq!(svc["serverStatus"][a.url()], "UP", "{svc}");
    assert!(svc.get("serverHealth").is_none(), "{svc}");
}

#[tokio::test]
async fn failover_uses_the_fallback_while_the_main_service_is_down_and_comes_back() {
    let main = Server::start("main").await;
    let spare = Server::start("spare").await;
    let conf = format!(
        "{}[http.services.app.failover]\nservice = \"primary\"\nfallback = \"backup\"\n{}{}{}",
        router("app", "app.test", "app"),
        lb("primary", &[(&main.url(), 1)], ""),
        health("primary", "100ms"),
        lb("backup", &[(&spare.url(), 1)], ""),
    );
    let gw = Gangway::with_file(&conf, &[]).await;
    wait_for(&gw, "app.test").await;
    let c = client();
    for _ in 0..5 {
        assert_eq!(send(&c, get(&gw, "app.test", None)).await.backend, "main");
    }
    main.healthy.store(false, Ordering::SeqCst);
    eventually(WAIT, "traffic goes to the fallback", || async {
        send(&c, get(&gw, "app.test", None)).await.backend == "spare"
    })
    .await;
    for _ in 0..5 {
        assert_eq!(send(&c, get(&gw, "app.test", None)).await.backend, "spare");
    }
    main.healthy.store(true, Ordering::SeqCst);
    eventually(WAIT, "traffic returns to the main service", || async {
        send(&c, get(&gw, "app.test", None)).await.backend == "main"
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mirroring_copies_a_share_and_never_changes_the_answer() {
    let main = Server::start("main").await;
    let copy = Server::start("copy").await;
    let dead = format!("http://127.0.0.1:{}", free_port());
    let conf = format!(
        "{}[http.services.m.mirroring]\nservice = \"main\"\nmaxBodySize = 16\n[[http.services.m.mirroring.mirrors]]\nname = \"copy\"\npercent = 25\n[[http.services.m.mirroring.mirrors]]\nname = \"dead\"\npercent = 100\n{}{}{}",
        router("m", "m.test", "m"),
        lb("main", &[(&main.url(), 1)], ""),
        lb("copy", &[(&copy.url(), 1)], ""),
        lb("dead", &[(&dead, 1)], ""),
    );
    let gw = Gangway::with_file(&conf, &[]).await;
    wait_for(&gw, "m.test").await;
    let c = client();
    let main_before = main.hits().len();
    let counted = || {
        Request::get(gw.url("/counted"))
            .header("host", "m.test")
            .body(Full::default())
            .unwrap()
    };
    for i in 0..400 {
        // Every third request has a body (the mirror takes every fourth).
        let got = if i % 3 != 0 {
            send(&c, counted()).await
        } else {
            send(&c, post(&gw, "m.test", b"small body")).await
        };
        // A dead mirror never shows in the client's answer.
        assert_eq!((got.status, got.backend.as_str()), (StatusCode::OK, "main"));
    }
    assert_eq!(main.hits().len() - main_before, 400);
    let ours = |hits: Vec<Hit>| -> Vec<Hit> {
        hits.into_iter()
            .filter(|h| h.path == "/counted" || h.path == "/upload")
            .collect()
    };
    eventually(WAIT, "the mirror got its copies", || async {
        ours(copy.hits()).len() >= 100
    })
    .await;
    let copies = ours(copy.hits());
    println!("mirror at 25%: {} copies of 400 requests", copies.len());
    assert_eq!(copies.len(), 100, "exactly a quarter");
    let posts: Vec<&Hit> = copies.iter().filter(|h| h.method == "POST").collect();
    assert!(!posts.is_empty());
    for p in posts {
        assert_eq!(
            (p.path.as_str(), &p.body[..]),
            ("/upload", &b"small body"[..])
        );
    }

    // A body over maxBodySize reaches the main service whole and is not mirrored.
    let before = copy.hits().len();
    for _ in 0..8 {
        let got = send(
            &c,
            post(&gw, "m.test", b"this body is longer than sixteen bytes"),
        )
        .await;
        assert_eq!(got.backend, "main");
    }
    let last = main.hits().last().cloned().expect("hit");
    assert_eq!(&last.body[..], b"this body is longer than sixteen bytes");
    // Two small requests after them show that the copies are flowing again.
    for _ in 0..8 {
        send(&c, post(&gw, "m.test", b"tiny")).await;
    }
    eventually(WAIT, "copies of the small bodies", || async {
        copy.hits()[before..]
            .iter()
            .filter(|h| &h.body[..] == b"tiny")
            .count()
            == 2
    })
    .await;
    assert!(
        copy.hits()[before..].iter().all(|h| &h.body[..] == b"tiny"),
        "no large body was mirrored"
    );
}

#[tokio::test]
async fn mirror_body_false_sends_copies_without_their_body() {
    let main = Server::start("main").await;
    let copy = Server::start("copy").await;
    let conf = format!(
        "{}[http.services.m.mirroring]\nservice = \"main\"\nmirrorBody = false\n[[http.services.m.mirroring.mirrors]]\nname = \"copy\"\npercent = 100\n{}{}",
        router("m", "m.test", "m"),
        lb("main", &[(&main.url(), 1)], ""),
        lb("copy", &[(&copy.url(), 1)], ""),
    );
    let gw = Gangway::with_file(&conf, &[]).await;
    wait_for(&gw, "m.test").await;
    let got = send(&client(), post(&gw, "m.test", b"the body")).await;
    assert_eq!(got.backend, "main");
    assert_eq!(&main.hits().last().expect("main hit").body[..], b"the body");
    eventually(WAIT, "the copy arrives", || async {
        copy.hits().iter().any(|h| h.method == "POST")
    })
    .await;
    let hit = copy
        .hits()
        .into_iter()
        .find(|h| h.method == "POST")
        .expect("copy");
    assert_eq!((hit.path.as_str(), hit.body.len()), ("/upload", 0));
}

#[tokio::test]
async fn refused_connection_moves_a_get_to_the_next_server_but_not_a_post() {
    let alive = Server::start("alive").await;
    let dead = format!("http://127.0.0.1:{}", free_port());
    let dead2 = format!("http://127.0.0.1:{}", free_port());
    let conf = format!(
        "{}{}{}{}",
        router("app", "app.test", "app"),
        lb("app", &[(&dead, 1), (&alive.url(), 1)], ""),
        router("none", "none.test", "none"),
        lb("none", &[(&dead, 1), (&dead2, 1)], ""),
    );
    let gw = Gangway::with_file(&conf, &[]).await;
    wait_for(&gw, "app.test").await;
    let c = client();
    for _ in 0..20 {
        let got = send(&c, get(&gw, "app.test", None)).await;
        assert_eq!(
            (got.status, got.backend.as_str()),
            (StatusCode::OK, "alive")
        );
    }
    let mut statuses = BTreeMap::new();
    for _ in 0..20 {
        let got = send(&c, post(&gw, "app.test", b"not replayable")).await;
        *statuses.entry(got.status.as_u16()).or_insert(0) += 1;
    }
    // The GETs' refusals took the dead server out of the rotation for the
    // default quarantine, so the POSTs (which could not be replayed) all go
    // to the live one.
    assert_eq!(statuses.get(&200), Some(&20), "{statuses:?}");
    // Every server refuses: each is tried once, then 502.
    let got = send(&c, get(&gw, "none.test", None)).await;
    assert_eq!(got.status, StatusCode::BAD_GATEWAY);
}

// === HTTPS servers ===

struct Pki {
    ca_pem: String,
    cert: rustls::pki_types::CertificateDer<'static>,
    key: Vec<u8>,
}

/// A CA, and a server certificate it signed for `names` only.
fn pki(names: &[&str]) -> Pki {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};
    let ca_key = KeyPair::generate().expect("ca key");
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("ca params");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "gangway test CA");
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca.self_signed(&ca_key).expect("ca cert");
    let key = KeyPair::generate().expect("key");
    let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
    let params = CertificateParams::new(names).expect("server params");
    let cert = params
        .signed_by(&key, &ca_cert, &ca_key)
        .expect("server cert");
    Pki {
        ca_pem: ca_cert.pem(),
        cert: cert.der().clone(),
        key: key.serialize_der(),
    }
}

/// An HTTPS echo server (HTTP/2 and HTTP/1.1 by ALPN) that answers with the
/// HTTP version and the authority it saw (`:authority` over HTTP/2, `Host`
/// over HTTP/1.1).
async fn https_server(pki: &Pki) -> (SocketAddr, tokio::task::JoinHandle<()>) {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(pki.key.clone().into());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(vec![pki.cert.clone()], key)
        .expect("server config");
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let task = tokio::spawn(async move {
        let mut conns = JoinSet::new();
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                continue;
            };
            let acceptor = acceptor.clone();
            conns.spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let svc = service_fn(|req: Request<Incoming>| async move {
                    let authority = req
                        .uri()
                        .authority()
                        .map(|a| a.to_string())
                        .or_else(|| {
                            req.headers()
                                .get("host")
                                .and_then(|h| h.to_str().ok())
                                .map(str::to_owned)
                        })
                        .unwrap_or_default();
                    let text = format!("{:?} {authority}", req.version());
                    Ok::<_, Infallible>(http::Response::new(Full::new(Bytes::from(text))))
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tls), svc)
                    .await;
            });
        }
    });
    (addr, task)
}

#[tokio::test]
async fn https_servers_with_root_cas_server_name_and_insecure_skip_verify() {
    let pki = pki(&["backend.internal"]);
    let (addr, _server) = https_server(&pki).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let ca_path = dir.path().join("ca.pem");
    std::fs::write(&ca_path, &pki.ca_pem).expect("write ca");
    let url = format!("https://{addr}");
    let conf = format!(
        "{r1}{s1}{r2}{s2}{r3}{s3}{r4}{s4}{r5}{s5}
[http.serversTransports.trusted]
serverName = \"backend.internal\"
rootCAs = [{ca:?}]
[http.serversTransports.h1]
serverName = \"backend.internal\"
rootCAs = [{ca:?}]
disableHTTP2 = true
[http.serversTransports.anything]
insecureSkipVerify = true
[http.serversTransports.wrongname]
rootCAs = [{ca:?}]
",
        r1 = router("trusted", "trusted.test", "trusted"),
        s1 = lb("trusted", &[(&url, 1)], "serversTransport = \"trusted\""),
        r2 = router("h1", "h1.test", "h1"),
        s2 = lb("h1", &[(&url, 1)], "serversTransport = \"h1\""),
        r3 = router("anything", "anything.test", "anything"),
        s3 = lb("anything", &[(&url, 1)], "serversTransport = \"anything\""),
        r4 = router("default", "default.test", "default"),
        s4 = lb("default", &[(&url, 1)], ""),
        r5 = router("wrongname", "wrongname.test", "wrongname"),
        s5 = lb(
            "wrongname",
            &[(&url, 1)],
            "serversTransport = \"wrongname\""
        ),
        ca = ca_path.display().to_string(),
    );
    let gw = Gangway::with_file(&conf, &[]).await;
    wait_for(&gw, "trusted.test").await;
    let c = client();
    let got = send(&c, get(&gw, "trusted.test", None)).await;
    // rootCAs + serverName verify the server; HTTP/2 by ALPN, and the
    // client's Host arrives as :authority.
    assert_eq!(
        (got.status, got.backend.as_str()),
        (StatusCode::OK, "HTTP/2.0 trusted.test"),
    );
    let got = send(&c, get(&gw, "h1.test", None)).await;
    assert_eq!(
        (got.status, got.backend.as_str()),
        (StatusCode::OK, "HTTP/1.1 h1.test")
    );
    let got = send(&c, get(&gw, "anything.test", None)).await;
    assert_eq!(
        got.status,
        StatusCode::OK,
        "insecureSkipVerify: {}",
        got.backend
    );
    // The built-in roots do not know the test CA.
    let got = send(&c, get(&gw, "default.test", None)).await;
    assert_eq!(got.status, StatusCode::BAD_GATEWAY);
    // The right CA, but the certificate is not for 127.0.0.1.
    let got = send(&c, get(&gw, "wrongname.test", None)).await;
    assert_eq!(got.status, StatusCode::BAD_GATEWAY);
}

#[tokio::test]
async fn static_servers_transport_applies_to_every_service_without_its_own() {
    let pki = pki(&["127.0.0.1"]);
    let (addr, _server) = https_server(&pki).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let ca_path = dir.path().join("ca.pem");
    std::fs::write(&ca_path, &pki.ca_pem).expect("write ca");
    let conf = format!(
        "{}{}",
        router("app", "app.test", "app"),
        lb("app", &[(&format!("https://{addr}"), 1)], "")
    );
    let flag = format!("--serversTransport.rootCAs={}", ca_path.display());
    let gw = Gangway::with_file(&conf, &[&flag]).await;
    wait_for(&gw, "app.test").await;
    let got = send(&client(), get(&gw, "app.test", None)).await;
    assert_eq!(
        (got.status, got.backend.as_str()),
        (StatusCode::OK, "HTTP/2.0 app.test")
    );
}

// === health-check options ===

#[tokio::test]
async fn health_checks_send_the_configured_request_and_judge_by_status() {
    let app = Server::start("app").await;
    // The check goes to another port, which records what it is asked and
    // answers /hc with a redirect to /ready, and /ready with 204.
    type Probe = (String, String, String, String);
    let seen: Arc<Mutex<Vec<Probe>>> = Arc::default();
    let record = seen.clone();
    let probe = Backend::serve(move |req: Request<Incoming>| {
        let record = record.clone();
        async move {
            let header = |n: &str| {
                req.headers()
                    .get(n)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_owned()
            };
            record.lock().unwrap().push((
                req.method().to_string(),
                req.uri().to_string(),
                header("host"),
                header("x-check"),
            ));
            let mut resp = http::Response::new(Full::new(Bytes::new()));
            if req.uri().path() == "/hc" {
                *resp.status_mut() = StatusCode::FOUND;
                resp.headers_mut()
                    .insert("location", "/ready".parse().unwrap());
            } else {
                *resp.status_mut() = StatusCode::NO_CONTENT;
            }
            resp
        }
    })
    .await;
    let check = |service: &str, follow: bool| {
        format!(
            "[http.services.{service}.loadBalancer.healthCheck]\npath = \"/hc?from=gw\"\nport = {}\nhostname = \"check.internal\"\nmethod = \"HEAD\"\nstatus = 204\ninterval = \"100ms\"\nfollowRedirects = {follow}\n[http.services.{service}.loadBalancer.healthCheck.headers]\nX-Check = \"yes\"\n",
            probe.addr.port()
        )
    };
    let conf = format!(
        "{}{}{}{}{}{}",
        router("follow", "follow.test", "follow"),
        lb("follow", &[(&app.url(), 1)], ""),
        check("follow", true),
        router("stay", "stay.test", "stay"),
        lb("stay", &[(&app.url(), 1)], ""),
        check("stay", false),
    );
    let gw = Gangway::with_file(&conf, &[]).await;
    wait_for(&gw, "follow.test").await;
    let c = client();
    // Without following, the 302 is not the expected 204: no server is up.
    eventually(
        WAIT,
        "the service that does not follow redirects is down",
        || async {
            send(&c, get(&gw, "stay.test", None)).await.status == StatusCode::SERVICE_UNAVAILABLE
        },
    )
    .await;
    for _ in 0..5 {
        let got = send(&c, get(&gw, "follow.test", None)).await;
        assert_eq!((got.status, got.backend.as_str()), (StatusCode::OK, "app"));
    }
    let probe_of = |path: &str| {
        (
            "HEAD".to_owned(),
            path.to_owned(),
            "check.internal".to_owned(),
            "yes".to_owned(),
        )
    };
    eventually(WAIT, "the check followed the redirect", || async {
        seen.lock().unwrap().contains(&probe_of("/ready"))
    })
    .await;
    let seen = seen.lock().unwrap().clone();
    assert!(seen.contains(&probe_of("/hc?from=gw")), "{seen:?}");
    assert!(
        app.hits().iter().all(|h| h.path == "/"),
        "checks went to the check port only"
    );
}

#[tokio::test]
async fn grpc_health_checks_follow_the_serving_status() {
    use http_body::Frame;
    let serving = Arc::new(AtomicBool::new(true));
    let flag = serving.clone();
    let backend = Backend::serve(move |req: Request<Incoming>| {
        let flag = flag.clone();
        async move {
            let health = req.uri().path() == "/grpc.health.v1.Health/Check";
            let frames: Vec<Result<Frame<Bytes>, Infallible>> = if health {
                // HealthCheckResponse { status: SERVING (1) or NOT_SERVING (2) }
                let status = if flag.load(Ordering::SeqCst) { 1 } else { 2 };
                let mut trailers = http::HeaderMap::new();
                trailers.insert("grpc-status", "0".parse().unwrap());
                vec![
                    Ok(Frame::data(Bytes::from(vec![0, 0, 0, 0, 2, 0x08, status]))),
                    Ok(Frame::trailers(trailers)),
                ]
            } else {
                vec![Ok(Frame::data(Bytes::from_static(b"grpc app")))]
            };
            let mut resp = http::Response::new(http_body_util::StreamBody::new(
                futures_util::stream::iter(frames),
            ));
            if health {
                resp.headers_mut()
                    .insert("content-type", "application/grpc".parse().unwrap());
            }
            resp
        }
    })
    .await;
    let conf = format!(
        "{}{}[http.services.app.loadBalancer.healthCheck]\nmode = \"grpc\"\ninterval = \"100ms\"\n",
        router("app", "app.test", "app"),
        lb("app", &[(&backend.url_as("h2c"), 1)], ""),
    );
    let gw = Gangway::with_file(&conf, &[]).await;
    wait_for(&gw, "app.test").await;
    let c = client();
    let got = send(&c, get(&gw, "app.test", None)).await;
    assert_eq!(
        (got.status, got.backend.as_str()),
        (StatusCode::OK, "grpc app")
    );
    serving.store(false, Ordering::SeqCst);
    eventually(WAIT, "NOT_SERVING takes the server out", || async {
        send(&c, get(&gw, "app.test", None)).await.status == StatusCode::SERVICE_UNAVAILABLE
    })
    .await;
    serving.store(true, Ordering::SeqCst);
    eventually(WAIT, "SERVING brings it back", || async {
        send(&c, get(&gw, "app.test", None)).await.status == StatusCode::OK
    })
    .await;
}

// === state across configuration changes ===

#[tokio::test]
async fn balancer_position_and_health_survive_an_unrelated_change() {
    let s: Vec<Server> = vec![
        Server::start("p0").await,
        Server::start("p1").await,
        Server::start("p2").await,
    ];
    // `x-hang` answers its first health check with 503, and never answers
    // another: a fresh checker would leave it up for a whole timeout.
    let flaky = Server::start("x-hang").await;
    flaky.healthy.store(false, Ordering::SeqCst);
    let steady = Server::start("steady").await;
    let base = format!(
        "{}{}{}{}{}",
        router("rr", "rr.test", "rr"),
        lb(
            "rr",
            &[(&s[0].url(), 1), (&s[1].url(), 1), (&s[2].url(), 1)],
            ""
        ),
        router("hc", "hc.test", "hc"),
        lb("hc", &[(&flaky.url(), 1), (&steady.url(), 1)], ""),
        "[http.services.hc.loadBalancer.healthCheck]\npath = \"/health\"\ninterval = \"1h\"\ntimeout = \"5s\"\n",
    );
    let gw = Gangway::with_file(&base, &[]).await;
    wait_for(&gw, "rr.test").await;
    let c = client();
    eventually(WAIT, "the checker took x-hang out", || async {
        flaky.health_checks.load(Ordering::SeqCst) == 1
            && send(&c, get(&gw, "hc.test", None)).await.backend == "steady"
            && send(&c, get(&gw, "hc.test", None)).await.backend == "steady"
    })
    .await;

    let first = send(&c, get(&gw, "rr.test", None)).await.backend;

    let other = Server::start("other").await;
    let changed = format!(
        "{base}{}{}",
        router("other", "other.test", "other"),
        lb("other", &[(&other.url(), 1)], "")
    );
    gw.rewrite(&changed);
    wait_for(&gw, "other.test").await;

    // The rotation goes on where it was instead of starting over.
    let second = send(&c, get(&gw, "rr.test", None)).await.backend;
    let third = send(&c, get(&gw, "rr.test", None)).await.backend;
    let order = ["p0", "p1", "p2"];
    let at = |n: &str| order.iter().position(|o| *o == n).expect("known");
    assert_eq!(at(&second), (at(&first) + 1) % 3, "{first} then {second}");
    assert_eq!(
        at(&third),
        (at(&first) + 2) % 3,
        "{first}, {second}, {third}"
    );

    // The health state and its checker carried over: still down, not checked again.
    for _ in 0..10 {
        assert_eq!(send(&c, get(&gw, "hc.test", None)).await.backend, "steady");
    }
    assert_eq!(flaky.health_checks.load(Ordering::SeqCst), 1);
}

// === bad input ===

#[tokio::test]
async fn bad_service_definitions_disable_only_their_service() {
    let good = Backend::echo("good").await;
    let dead = format!("http://127.0.0.1:{}", free_port());
    let cases: &[(&str, String, &str)] = &[
        (
            "zero",
            lb("zero", &[(&good.url(), 0), (&dead, 0)], ""),
            "every server has weight 0",
        ),
        (
            "transport",
            lb("transport", &[(&good.url(), 1)], "serversTransport = \"nope\""),
            "servers transport `nope@file` does not exist",
        ),
        (
            "hcpath",
            format!(
                "{}[http.services.hcpath.loadBalancer.healthCheck]\npath = \"health\"\n",
                lb("hcpath", &[(&good.url(), 1)], "")
            ),
            "healthCheck path `health` must be a path starting with `/`",
        ),
        (
            "url",
            lb("url", &[("ftp://127.0.0.1:21", 1)], ""),
            "the scheme must be http, https or h2c",
        ),
        (
            "cas",
            format!(
                "{}[http.serversTransports.cas]\nrootCAs = [\"/nonexistent/ca.pem\"]\n",
                lb("cas", &[(&good.url(), 1)], "serversTransport = \"cas\"")
            ),
            "rootCAs: cannot read `/nonexistent/ca.pem`",
        ),
        (
            "samesite",
            format!(
                "{}[http.services.samesite.loadBalancer.sticky.cookie]\nsameSite = \"often\"\n",
                lb("samesite", &[(&good.url(), 1)], "")
            ),
            "sameSite `often`",
        ),
        (
            "mirror",
            "[http.services.mirror.mirroring]\nservice = \"ok\"\n[[http.services.mirror.mirroring.mirrors]]\nname = \"ok\"\npercent = 150\n".to_owned(),
            "percent 150 is more than 100",
        ),
        (
            "weights",
            "[[http.services.weights.weighted.services]]\nname = \"ok\"\nweight = 0\n".to_owned(),
            "every service has weight 0",
        ),
    ];
    let mut conf = format!(
        "{}{}",
        router("ok", "ok.test", "ok"),
        lb("ok", &[(&good.url(), 1)], "")
    );
    for (name, service, _) in cases {
        conf.push_str(&router(name, &format!("{name}.test"), name));
        conf.push_str(service);
    }
    let gw = Gangway::with_file(&conf, &[]).await;
    wait_for(&gw, "ok.test").await;
    let c = client();
    assert_eq!(
        send(&c, get(&gw, "ok.test", None)).await.status,
        StatusCode::OK
    );
    for (name, _, error) in cases {
        let got = send(&c, get(&gw, &format!("{name}.test"), None)).await;
        assert_eq!(got.status, StatusCode::NOT_FOUND, "{name} is disabled");
        let log = gw.log();
        assert!(
            log.lines()
                .any(|l| l.contains(&format!("service {name}@file")) && l.contains(error)),
            "{name}: `{error}` not in the log:\n{log}"
        );
    }
    assert!(!gw.log().contains("panicked"));
}
