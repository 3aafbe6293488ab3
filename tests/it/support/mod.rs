//! Test harness: the real gangway binary on free loopback ports, real
//! backends on real sockets, and a small HTTP client.
#![allow(dead_code)]

pub mod ari;
pub mod browser;
pub mod counted;
pub mod crowdsec;
pub mod disk;
pub mod docker;
pub mod etcd;
pub mod http3;
pub mod kv;
pub mod named;
pub mod otlp;
pub mod pebble;
pub mod tls;

use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::client::legacy::{Client, connect::HttpConnector};
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;

/// Polls `check` until it returns true or `limit` passes; panics with `what` then.
pub async fn eventually<F, Fut>(limit: Duration, what: &str, check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    if !within(limit, check).await {
        panic!("not within {limit:?}: {what}");
    }
}

/// Polls `check` until it returns true (then true) or `limit` passes (then
/// false), for a caller that has more to say when it fails.
pub async fn within<F, Fut>(limit: Duration, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + limit;
    loop {
        if check().await {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A loopback port free for TCP and UDP, for a server that must be told its
/// port. It lies below the kernel's ephemeral range, so no outgoing
/// connection can take it before that server binds it; each call in a
/// process gets another port, and processes start at different places.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    const LOWEST: u32 = 10_000;
    let ephemeral = ephemeral_low();
    if ephemeral < LOWEST + 1_000 {
        return kernel_port();
    }
    let span = ephemeral - LOWEST;
    let start = std::process::id().wrapping_mul(7_919) % span;
    for _ in 0..span {
        let port = (LOWEST + (start + NEXT.fetch_add(1, Ordering::Relaxed)) % span) as u16;
        let tcp = std::net::TcpListener::bind(("127.0.0.1", port));
        let udp = std::net::UdpSocket::bind(("127.0.0.1", port));
        if tcp.is_ok() && udp.is_ok() {
            return port;
        }
    }
    kernel_port()
}

/// The first port of the kernel's ephemeral range (Linux's default if it
/// cannot be read).
fn ephemeral_low() -> u32 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse().ok())
        .unwrap_or(32_768)
}

fn kernel_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// What a backend saw of one request.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Seen {
    pub backend: String,
    pub method: String,
    pub uri: String,
    pub version: String,
    pub headers: BTreeMap<String, Vec<String>>,
}

impl Seen {
    /// The first value of a header, if any.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .and_then(|v| v.first())
            .map(String::as_str)
    }
}

/// An HTTP/1.1 + HTTP/2 (prior knowledge) backend on 127.0.0.1 that answers
/// every request with a JSON description of what it received.
pub struct Backend {
    pub addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Backend {
    pub async fn echo(name: &str) -> Backend {
        Self::echo_on(name, 0).await
    }

    /// An echo backend on `port` (0: any free one), so a test can stop one
    /// (drop it) and start it again where gangway looks for it.
    pub async fn echo_on(name: &str, port: u16) -> Backend {
        let name = name.to_owned();
        Self::serve_on(port, move |req: Request<Incoming>| {
            let name = name.clone();
            async move {
                let mut headers: BTreeMap<String, Vec<String>> = BTreeMap::new();
                for (k, v) in req.headers() {
                    headers
                        .entry(k.as_str().to_owned())
                        .or_default()
                        .push(String::from_utf8_lossy(v.as_bytes()).into_owned());
                }
                let body = serde_json::json!({
                    "backend": name,
                    "method": req.method().as_str(),
                    "uri": req.uri().to_string(),
                    "version": format!("{:?}", req.version()),
                    "headers": headers,
                });
                let mut resp = http::Response::new(Full::new(Bytes::from(body.to_string())));
                resp.headers_mut()
                    .insert("content-type", "application/json".parse().unwrap());
                resp.headers_mut()
                    .insert("x-backend", name.parse().unwrap());
                resp.headers_mut()
                    .insert("keep-alive", "timeout=5".parse().unwrap());
                resp
            }
        })
        .await
    }

    /// A backend that sleeps `delay` before answering.
    pub async fn slow(delay: Duration) -> Backend {
        Self::serve(move |_req: Request<Incoming>| async move {
            tokio::time::sleep(delay).await;
            http::Response::new(Full::new(Bytes::from_static(b"late")))
        })
        .await
    }

    pub async fn serve<F, Fut, B>(handler: F) -> Backend
    where
        F: Fn(Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
        Fut: Future<Output = http::Response<B>> + Send + 'static,
        B: http_body::Body<Data = Bytes> + Send + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        Self::serve_on(0, handler).await
    }

    /// `serve` on `port` (0: any free one).
    pub async fn serve_on<F, Fut, B>(port: u16, handler: F) -> Backend
    where
        F: Fn(Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
        Fut: Future<Output = http::Response<B>> + Send + 'static,
        B: http_body::Body<Data = Bytes> + Send + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let listener = TcpListener::bind(("127.0.0.1", port))
            .await
            .expect("bind backend");
        let addr = listener.local_addr().expect("addr");
        let task = tokio::spawn(async move {
            // The connections live in the accept task's set, so dropping the
            // backend closes them too: a stopped backend is really gone,
            // pooled connections included.
            let mut connections = tokio::task::JoinSet::new();
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                while connections.try_join_next().is_some() {}
                let handler = handler.clone();
                connections.spawn(async move {
                    let svc = service_fn(move |req| {
                        let handler = handler.clone();
                        async move { Ok::<_, Infallible>(handler(req).await) }
                    });
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection_with_upgrades(TokioIo::new(stream), svc)
                        .await;
                });
            }
        });
        Backend { addr, task }
    }

    pub fn url(&self) -> String {
        self.url_as("http")
    }

    /// The backend's URL with `scheme` (`h2c`: it speaks HTTP/2 with prior
    /// knowledge too).
    pub fn url_as(&self, scheme: &str) -> String {
        format!("{scheme}://{}", self.addr)
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The real gangway binary with a file provider in a temporary directory.
pub struct Gangway {
    child: Child,
    pub port: u16,
    pub dir: tempfile::TempDir,
    pub dynamic: PathBuf,
    client: Client<HttpConnector, Full<Bytes>>,
    h2: Client<HttpConnector, Full<Bytes>>,
}

/// A response, read whole.
pub struct Got {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Got {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    pub fn seen(&self) -> Seen {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not a backend echo ({e}): {}", self.text()))
    }
}

pub fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_gangway")
}

impl Gangway {
    /// Starts gangway with `dynamic` (TOML) as its file provider, plus extra flags.
    pub async fn with_file(dynamic: &str, extra: &[&str]) -> Gangway {
        Self::with_file_env(dynamic, extra, &[]).await
    }

    /// Like `with_file`, with more environment variables for gangway.
    pub async fn with_file_env(dynamic: &str, extra: &[&str], env: &[(&str, &str)]) -> Gangway {
        // A port found free can be taken before gangway binds it (another
        // test's outgoing connection gets it as its local port): gangway then
        // exits at once, and another port is tried.
        let mut retries = 2;
        loop {
            match Self::start(free_port(), ("dynamic.toml", dynamic), extra, env).await {
                Ok(gw) => return gw,
                Err(log) if retries > 0 && log.contains("in use") => retries -= 1,
                Err(log) => panic!("gangway exited at start:\n{log}"),
            }
        }
    }

    /// Like `with_file`, with the `web` entry point on `port`.
    pub async fn with_file_on(port: u16, dynamic: &str, extra: &[&str]) -> Gangway {
        match Self::start(port, ("dynamic.toml", dynamic), extra, &[]).await {
            Ok(gw) => gw,
            Err(log) => panic!("gangway exited at start:\n{log}"),
        }
    }

    /// Like `with_file`, with `dynamic` written as YAML (`dynamic.yml`).
    pub async fn with_yaml(dynamic: &str, extra: &[&str]) -> Gangway {
        match Self::start(free_port(), ("dynamic.yml", dynamic), extra, &[]).await {
            Ok(gw) => gw,
            Err(log) => panic!("gangway exited at start:\n{log}"),
        }
    }

    /// Like `with_yaml`, with more environment variables for gangway.
    pub async fn with_yaml_env(dynamic: &str, extra: &[&str], env: &[(&str, &str)]) -> Gangway {
        match Self::start(free_port(), ("dynamic.yml", dynamic), extra, env).await {
            Ok(gw) => gw,
            Err(log) => panic!("gangway exited at start:\n{log}"),
        }
    }

    /// Starts gangway and waits until it listens on `port`; its log if it
    /// exits first.
    async fn start(
        port: u16,
        (file, dynamic): (&str, &str),
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Result<Gangway, String> {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(file);
        std::fs::write(&path, dynamic).expect("write dynamic");
        let mut args = vec![
            format!("--entryPoints.web.address=127.0.0.1:{port}"),
            format!("--providers.file.filename={}", path.display()),
            "--providers.providersThrottleDuration=20ms".to_owned(),
        ];
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        let log = std::fs::File::create(dir.path().join("gangway.log")).expect("log file");
        let child = Command::new(binary())
            .args(&args)
            .current_dir(dir.path())
            .env("RUST_LOG", "warn")
            .env("NO_COLOR", "1")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log file"))
            .stderr(log)
            .spawn()
            .expect("start gangway");
        let mut gw = Gangway {
            child,
            port,
            dir,
            dynamic: path,
            client: Client::builder(TokioExecutor::new()).build_http(),
            h2: Client::builder(TokioExecutor::new())
                .http2_only(true)
                .build_http(),
        };
        let addr = format!("127.0.0.1:{port}");
        let exited = std::cell::Cell::new(false);
        eventually(Duration::from_secs(10), "gangway listens", || {
            let addr = addr.clone();
            exited.set(gw.child.try_wait().is_ok_and(|status| status.is_some()));
            let exited = exited.get();
            async move { exited || tokio::net::TcpStream::connect(&addr).await.is_ok() }
        })
        .await;
        if exited.get() {
            return Err(gw.log());
        }
        Ok(gw)
    }

    /// Everything gangway logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("gangway.log")).unwrap_or_default()
    }

    /// The first log line that contains `needle`.
    pub fn log_line(&self, needle: &str) -> Option<String> {
        self.log()
            .lines()
            .find(|l| l.contains(needle))
            .map(str::to_owned)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Replaces the dynamic file atomically (write + rename), as editors do.
    pub fn rewrite(&self, text: &str) {
        let tmp = self.dir.path().join(".dynamic.toml.tmp");
        std::fs::write(&tmp, text).expect("write");
        std::fs::rename(&tmp, &self.dynamic).expect("rename");
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub async fn send(&self, req: Request<Full<Bytes>>) -> Got {
        let h2 = req.version() == http::Version::HTTP_2;
        let client = if h2 { &self.h2 } else { &self.client };
        // An idempotent request that meets a kept-alive connection closed
        // under it is sent once more, as HTTP clients do (RFC 9110 §9.2.2).
        let again = matches!(*req.method(), http::Method::GET | http::Method::HEAD)
            .then(|| copy_request(&req));
        let resp = match (client.request(req).await, again) {
            (Ok(resp), _) => resp,
            (Err(e), Some(again)) if !e.is_connect() => {
                eprintln!("request through gangway failed ({e}); sending it once more");
                client
                    .request(again)
                    .await
                    .expect("request through gangway")
            }
            (Err(e), _) => panic!("request through gangway: {e:?}"),
        };
        let (parts, body) = resp.into_parts();
        let body = body.collect().await.expect("body").to_bytes();
        Got {
            status: parts.status,
            headers: parts.headers,
            body,
        }
    }

    pub async fn get(&self, host: &str, path: &str) -> Got {
        self.send(
            Request::get(self.url(path))
                .header("host", host)
                .body(Full::default())
                .unwrap(),
        )
        .await
    }

    /// `path` of gangway's API, served at `api.test`, as JSON (Null when
    /// it is not JSON).
    pub async fn api_json(&self, path: &str) -> serde_json::Value {
        serde_json::from_str(&self.get("api.test", path).await.text()).unwrap_or_default()
    }

    /// Peak resident memory of the gangway process, in KiB (VmHWM).
    pub fn peak_rss_kib(&self) -> u64 {
        let status =
            std::fs::read_to_string(format!("/proc/{}/status", self.pid())).expect("proc status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmHWM")
    }

    /// Sends SIGTERM and waits for the process to exit; returns its status.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        self.sigterm();
        self.child.wait().expect("wait")
    }

    /// Kills the process at once (SIGKILL), as a crash would, and reaps it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Sends SIGTERM without waiting for the process to exit.
    pub fn sigterm(&self) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.pid().to_string())
            .status();
    }

    /// The exit status once the process has exited, without waiting.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }
}

impl Drop for Gangway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A file-provider configuration with one router and one load-balanced service.
pub fn one_route(router: &str, rule: &str, servers: &[&str]) -> String {
    let mut s = format!(
        "[http.routers.{router}]\nrule = {rule:?}\nservice = \"{router}\"\n[http.services.{router}.loadBalancer]\n"
    );
    for url in servers {
        s.push_str(&format!(
            "[[http.services.{router}.loadBalancer.servers]]\nurl = \"{url}\"\n"
        ));
    }
    s
}

/// Sends raw bytes to gangway's entry point and reads until gangway closes
/// the connection or nothing arrives for `quiet`; returns what came back and
/// whether gangway closed it.
pub async fn raw_exchange(gw: &Gangway, bytes: &[u8], quiet: Duration) -> (String, bool) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = gw.url("").trim_start_matches("http://").to_owned();
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    s.write_all(bytes).await.expect("send");
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    let closed = loop {
        match tokio::time::timeout(quiet, s.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => break true,
            Ok(Ok(n)) => out.extend_from_slice(&buf[..n]),
            Err(_) => break false,
        }
    };
    (String::from_utf8_lossy(&out).into_owned(), closed)
}

/// The path of the first of `programs` found (on `PATH`, or in
/// `/usr/sbin` where Debian puts servers). Without it a test skips, saying
/// so, except under `GANGWAY_TEST_STRICT=1` (the project's test command),
/// where it fails naming `installer`, the script that installs it.
pub fn program(test: &str, programs: &[&str], installer: &str) -> Option<PathBuf> {
    let found = programs.iter().find_map(|p| {
        let sbin = std::path::Path::new("/usr/sbin").join(p);
        if sbin.is_file() {
            return Some(sbin);
        }
        let path = std::env::var_os("PATH")?;
        std::env::split_paths(&path)
            .map(|dir| dir.join(p))
            .find(|candidate| candidate.is_file())
    });
    if found.is_none() {
        let names = programs.join(", ");
        if std::env::var("GANGWAY_TEST_STRICT").as_deref() == Ok("1") {
            panic!("{test}: {names} not installed ({installer} installs it)");
        }
        eprintln!("{test}: SKIPPED: {names} not installed ({installer} installs it)");
    }
    found
}

/// A UDP server on 127.0.0.1 that answers each datagram with
/// `<name>: <datagram>`; its port.
pub async fn udp_echo(name: &'static str) -> u16 {
    let socket = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let port = socket.local_addr().unwrap().port();
    tokio::spawn(async move {
        let mut buf = [0u8; 2048];
        while let Ok((n, from)) = socket.recv_from(&mut buf).await {
            let reply = format!("{name}: {}", String::from_utf8_lossy(&buf[..n]));
            let _ = socket.send_to(reply.as_bytes(), from).await;
        }
    });
    port
}

/// One datagram from a new socket to 127.0.0.1:`port`, and the answer
/// if one comes within half a second.
pub async fn udp_ask(port: u16, what: &str) -> Option<String> {
    let s = tokio::net::UdpSocket::bind("127.0.0.1:0").await.ok()?;
    s.connect(("127.0.0.1", port)).await.ok()?;
    s.send(what.as_bytes()).await.ok()?;
    let mut buf = [0u8; 2048];
    let n = tokio::time::timeout(std::time::Duration::from_millis(500), s.recv(&mut buf))
        .await
        .ok()?
        .ok()?;
    Some(String::from_utf8_lossy(&buf[..n]).into_owned())
}

/// Runs `gangway check ARGS` in `dir`, as a user would; (exit status,
/// stdout). The strict-test variable is not passed on: check reads no
/// test set-up.
pub fn check(dir: &std::path::Path, args: &[&str]) -> (i32, String) {
    let out = std::process::Command::new(binary())
        .arg("check")
        .args(args)
        .current_dir(dir)
        .env_remove("GANGWAY_TEST_STRICT")
        .output()
        .expect("run gangway check");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// The value of the series `name` with exactly these labels in gangway's
/// `/metrics` (internal entry point on `port`), when it has one.
pub async fn metric(port: u16, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let uri = format!("http://127.0.0.1:{port}/metrics").parse().ok()?;
    let resp = client.get(uri).await.ok()?;
    let body = resp.into_body().collect().await.ok()?.to_bytes();
    let want: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
    String::from_utf8_lossy(&body).lines().find_map(|line| {
        let (series, value) = line.rsplit_once(' ')?;
        let inner = series
            .strip_prefix(name)?
            .strip_prefix('{')?
            .strip_suffix('}')?;
        let have: Vec<&str> = inner.split(',').collect();
        let same = have.len() == want.len() && want.iter().all(|w| have.contains(&w.as_str()));
        if same { value.parse().ok() } else { None }
    })
}

/// A copy of `req`, to send again.
fn copy_request(req: &Request<Full<Bytes>>) -> Request<Full<Bytes>> {
    let mut copy = Request::new(req.body().clone());
    *copy.method_mut() = req.method().clone();
    *copy.uri_mut() = req.uri().clone();
    *copy.version_mut() = req.version();
    *copy.headers_mut() = req.headers().clone();
    copy
}
