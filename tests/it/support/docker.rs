//! Harness for the tests against a real Docker daemon: the local test image
//! (`scripts/ci/docker-up` builds it), containers on the host network that
//! listen on 127.0.0.1, one run label per test so that each gangway sees
//! only its own containers, and cleanup of everything a test started.

use crate::support::{Gangway, free_port};
use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::{Client, connect::HttpConnector};
use hyper_util::rt::TokioExecutor;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// The image `scripts/ci/docker-up` builds: busybox httpd on
/// 127.0.0.1:$PORT serving $NAME at `/` and an echo CGI at `/cgi-bin/echo`.
pub const IMAGE: &str = "gangway-test-bb:local";
/// The stand-in for traefik/whoami that `scripts/test` builds
/// (`scripts/image whoami` under this tag): several of its instances can
/// share a port, as a Swarm service's tasks on the host network of one
/// machine must.
pub const WHOAMI_IMAGE: &str = "gangway-test-whoami:local";
/// Every test container carries this label (value: the test's run id).
pub const RUN_LABEL: &str = "gangway-test.run";

/// Docker tests share one daemon and two cores: one at a time.
pub static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Whether a missing part must fail the test instead of skipping it.
pub fn strict() -> bool {
    std::env::var("GANGWAY_TEST_STRICT").is_ok_and(|v| v == "1")
}

/// Skips (or, under GANGWAY_TEST_STRICT=1, fails) a test that cannot run.
pub fn skip(test: &str, why: &str) {
    assert!(!strict(), "{test}: {why}");
    // Written past the test harness's capture, so a skip is seen.
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {why}");
}

/// Runs the docker CLI; Ok(stdout) or Err(stderr).
pub async fn docker(args: &[&str]) -> Result<String, String> {
    command("docker", args).await
}

/// Runs a program; Ok(stdout) or Err(what went wrong).
pub async fn command(program: &str, args: &[&str]) -> Result<String, String> {
    command_env(program, args, &[]).await
}

/// Like `command`, with more environment variables.
pub async fn command_env(
    program: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> Result<String, String> {
    let out = tokio::process::Command::new(program)
        .args(args)
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .map_err(|e| format!("{program}: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    } else {
        Err(format!(
            "{program} {}: {}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        ))
    }
}

/// Whether the daemon answers and the test image exists; skips otherwise.
pub async fn ready(test: &str) -> bool {
    if let Err(e) = docker(&["image", "inspect", "--format", "{{.Id}}", IMAGE]).await {
        skip(
            test,
            &format!("Docker or the test image is not available (run scripts/ci/docker-up): {e}"),
        );
        return false;
    }
    true
}

/// Which Compose is installed: Docker's plugin (`docker compose`, v2) or
/// the older standalone program (`docker-compose`, v1, Debian's). The
/// examples are written with v2's spelling and run with either.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compose {
    /// `docker compose`.
    Plugin,
    /// `docker-compose`.
    Standalone,
}

impl Compose {
    /// The installed one, the plugin first; None when there is neither.
    /// Asked once per test binary: every compose call and cleanup needs it.
    pub fn find() -> Option<Compose> {
        static FOUND: std::sync::OnceLock<Option<Compose>> = std::sync::OnceLock::new();
        *FOUND.get_or_init(Compose::probe)
    }

    fn probe() -> Option<Compose> {
        let works = |program: &str, args: &[&str]| {
            std::process::Command::new(program)
                .args(args)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        };
        if works("docker", &["compose", "version"]) {
            Some(Compose::Plugin)
        } else if works("docker-compose", &["version"]) {
            Some(Compose::Standalone)
        } else {
            None
        }
    }

    /// A blocking command running this Compose with `args`.
    pub fn command(self, args: &[&str]) -> std::process::Command {
        let mut cmd = match self {
            Compose::Plugin => {
                let mut c = std::process::Command::new("docker");
                c.arg("compose");
                c
            }
            Compose::Standalone => std::process::Command::new("docker-compose"),
        };
        cmd.args(args);
        cmd
    }

    /// Runs this Compose; Ok(stdout) or Err(what went wrong).
    pub async fn run(self, args: &[&str]) -> Result<String, String> {
        match self {
            Compose::Plugin => {
                let mut all = vec!["compose"];
                all.extend_from_slice(args);
                command("docker", &all).await
            }
            Compose::Standalone => command("docker-compose", args).await,
        }
    }

    /// A shell command written with `docker compose`, spelt for this one.
    pub fn spell(self, shell: &str) -> String {
        match self {
            Compose::Plugin => shell.to_owned(),
            Compose::Standalone => shell.replace("docker compose ", "docker-compose "),
        }
    }
}

/// Like `ready`, and Compose (v2 or v1) is there too.
pub async fn compose_ready(test: &str) -> Option<Compose> {
    if !ready(test).await {
        return None;
    }
    let found = Compose::find();
    if found.is_none() {
        skip(
            test,
            "neither `docker compose` nor `docker-compose` is available (run scripts/ci/docker-up)",
        );
    }
    found
}

/// One test's containers, removed when it is dropped.
pub struct Run {
    /// The value of RUN_LABEL on this test's containers.
    pub id: String,
    /// The daemon's address when it is not the default one (`DOCKER_HOST`).
    host: Option<String>,
    suffix: String,
    projects: std::sync::Mutex<Vec<(String, PathBuf)>>,
    pub dir: tempfile::TempDir,
}

static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// One container to start.
#[derive(Clone, Debug, Default)]
pub struct Spec {
    /// Name, made unique by the run (`<name>-<run>`).
    pub name: String,
    /// Port httpd listens on (127.0.0.1).
    pub port: u16,
    /// Labels.
    pub labels: Vec<(String, String)>,
    /// More `docker run` arguments (health checks, restart policy, env).
    pub args: Vec<String>,
    /// The command instead of the image's (after the image name).
    pub command: Vec<String>,
}

impl Spec {
    /// A container named `name` listening on a free port.
    pub fn new(name: &str) -> Spec {
        Spec {
            name: name.to_owned(),
            port: free_port(),
            ..Spec::default()
        }
    }

    /// Adds a label.
    pub fn label(mut self, key: &str, value: &str) -> Spec {
        self.labels.push((key.to_owned(), value.to_owned()));
        self
    }

    /// Adds `docker run` arguments.
    pub fn args(mut self, args: &[&str]) -> Spec {
        self.args.extend(args.iter().map(|a| (*a).to_owned()));
        self
    }

    /// Runs `sh -c script` instead of the image's command.
    pub fn shell(mut self, script: &str) -> Spec {
        self.command = vec!["sh".into(), "-c".into(), script.into()];
        self
    }

    /// A router `<router>` for Host(`<host>`) and a service `<service>` on this port.
    pub fn routed(self, prefix: &str, router: &str, host: &str, service: &str) -> Spec {
        let port = self.port.to_string();
        self.label(&format!("{prefix}.enable"), "true")
            .label(
                &format!("{prefix}.http.routers.{router}.rule"),
                &format!("Host(`{host}`)"),
            )
            .label(&format!("{prefix}.http.routers.{router}.service"), service)
            .label(
                &format!("{prefix}.http.services.{service}.loadbalancer.server.port"),
                &port,
            )
    }

    /// A Docker health check that passes while /tmp/healthy exists.
    pub fn health_checked(self) -> Spec {
        self.args(&[
            "--health-cmd",
            "test -f /tmp/healthy",
            "--health-interval",
            "300ms",
            "--health-retries",
            "1",
            "--health-timeout",
            "2s",
        ])
    }
}

impl Run {
    /// A new run for `test`.
    pub fn new(test: &str) -> Run {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        Run {
            id: format!("{test}-{}-{n}", std::process::id()),
            host: None,
            suffix: format!("{}x{n}", std::process::id()),
            projects: std::sync::Mutex::new(Vec::new()),
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    /// A run on another daemon than the default one: its containers are
    /// started there, and its gangway watches that daemon.
    pub fn on(test: &str, daemon: &PrivateDaemon) -> Run {
        let mut run = Run::new(test);
        run.host = Some(daemon.host());
        run
    }

    /// The docker CLI against this run's daemon.
    pub async fn docker(&self, args: &[&str]) -> Result<String, String> {
        match &self.host {
            Some(host) => command_env("docker", args, &[("DOCKER_HOST", host)]).await,
            None => docker(args).await,
        }
    }

    /// The gangway argument that watches this run's daemon.
    pub fn endpoint(&self) -> Option<String> {
        self.host
            .as_ref()
            .map(|h| format!("--providers.docker.endpoint={h}"))
    }

    /// A short suffix unique to this run, for names.
    pub fn suffix(&self) -> &str {
        &self.suffix
    }

    /// The constraint that makes a gangway see only this run's containers.
    pub fn constraint(&self) -> String {
        format!(
            "--providers.docker.constraints=Label(`{RUN_LABEL}`, `{}`)",
            self.id
        )
    }

    /// Starts gangway with the Docker provider, for this run's containers.
    pub async fn gangway(&self, extra: &[&str]) -> Gangway {
        let mut args = vec!["--providers.docker".to_owned(), self.constraint()];
        args.extend(self.endpoint());
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        Gangway::with_file("", &args).await
    }

    /// The full name of a container of this run.
    pub fn name(&self, name: &str) -> String {
        format!("{name}-{}", self.suffix())
    }

    /// Creates (without starting) a container.
    pub async fn create(&self, spec: &Spec) -> String {
        self.docker_run("create", spec).await
    }

    /// Creates and starts a container; returns its name.
    pub async fn start(&self, spec: &Spec) -> String {
        self.docker_run("run", spec).await
    }

    async fn docker_run(&self, verb: &str, spec: &Spec) -> String {
        let name = self.name(&spec.name);
        let run_label = format!("{RUN_LABEL}={}", self.id);
        let port = format!("PORT={}", spec.port);
        let env_name = format!("NAME={}", spec.name);
        let mut args: Vec<String> = vec![verb.into()];
        if verb == "run" {
            args.push("-d".into());
        }
        args.extend(
            [
                "--name",
                &name,
                "--network",
                "host",
                "--label",
                &run_label,
                "-e",
                &port,
                "-e",
                &env_name,
            ]
            .iter()
            .map(|s| (*s).to_owned()),
        );
        for (k, v) in &spec.labels {
            args.push("--label".into());
            args.push(format!("{k}={v}"));
        }
        args.extend(spec.args.iter().cloned());
        args.push(IMAGE.into());
        args.extend(spec.command.iter().cloned());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.docker(&args).await.expect("docker run");
        name
    }

    /// Writes a compose file for project `project` and runs
    /// `docker compose -p <project> -f <file> <args>`.
    pub async fn compose(
        &self,
        project: &str,
        file: &str,
        args: &[&str],
    ) -> Result<String, String> {
        let compose = Compose::find().ok_or("Compose is not installed")?;
        let path = self.dir.path().join(format!("{project}.yml"));
        std::fs::write(&path, file).expect("write compose file");
        {
            let mut projects = self.projects.lock().expect("projects");
            if !projects.iter().any(|(p, _)| p == project) {
                projects.push((project.to_owned(), path.clone()));
            }
        }
        let path = path.display().to_string();
        let mut all = vec!["-p", project, "-f", &path];
        all.extend_from_slice(args);
        compose.run(&all).await
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        let projects = self.projects.lock().map(|p| p.clone()).unwrap_or_default();
        if let Some(compose) = Compose::find() {
            for (project, path) in projects {
                let path = path.display().to_string();
                let _ = compose
                    .command(&["-p", &project, "-f", &path, "down", "-t", "1"])
                    .output();
            }
        }
        let filter = format!("label={RUN_LABEL}={}", self.id);
        let docker = || {
            let mut cmd = std::process::Command::new("docker");
            if let Some(host) = &self.host {
                cmd.env("DOCKER_HOST", host);
            }
            cmd
        };
        if let Ok(out) = docker().args(["ps", "-aq", "--filter", &filter]).output() {
            let ids: Vec<String> = String::from_utf8_lossy(&out.stdout)
                .split_whitespace()
                .map(str::to_owned)
                .collect();
            if !ids.is_empty() {
                let mut args = vec!["rm".to_owned(), "-f".to_owned()];
                args.extend(ids);
                let _ = docker().args(&args).output();
            }
        }
    }
}

/// A small client that reports failures instead of panicking, for load.
#[derive(Clone)]
pub struct Probe {
    client: Client<HttpConnector, Full<Bytes>>,
    base: String,
}

/// One answer: status, Retry-After, body.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: StatusCode,
    pub retry_after: Option<String>,
    pub headers: http::HeaderMap,
    pub body: String,
}

impl Probe {
    /// A client for this gangway.
    pub fn new(gw: &Gangway) -> Probe {
        Probe {
            client: Client::builder(TokioExecutor::new()).build_http(),
            base: gw.url(""),
        }
    }

    /// GET `path` with `Host: host`; Err on a connection failure or timeout.
    pub async fn get(&self, host: &str, path: &str) -> Result<Answer, String> {
        self.get_within(host, path, Duration::from_secs(10)).await
    }

    /// The same, waiting up to `limit` for the answer (a request to a
    /// sleeping service waits for its wake-up).
    pub async fn get_within(
        &self,
        host: &str,
        path: &str,
        limit: Duration,
    ) -> Result<Answer, String> {
        let req = Request::get(format!("{}{path}", self.base))
            .header("host", host)
            .body(Full::default())
            .map_err(|e| e.to_string())?;
        let exchange = async {
            let resp = self.client.request(req).await.map_err(|e| e.to_string())?;
            let status = resp.status();
            let retry_after = resp
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let headers = resp.headers().clone();
            let body = resp
                .into_body()
                .collect()
                .await
                .map_err(|e| e.to_string())?
                .to_bytes();
            Ok(Answer {
                status,
                retry_after,
                headers,
                body: String::from_utf8_lossy(&body).trim().to_owned(),
            })
        };
        tokio::time::timeout(limit, exchange)
            .await
            .map_err(|_| format!("no answer within {limit:?}"))?
    }

    /// The status for `host` (0 for a connection failure).
    pub async fn status(&self, host: &str) -> u16 {
        self.get(host, "/")
            .await
            .map(|a| a.status.as_u16())
            .unwrap_or(0)
    }

    /// Whether `host` answers 200 with `body`.
    pub async fn answers(&self, host: &str, body: &str) -> bool {
        self.get(host, "/")
            .await
            .is_ok_and(|a| a.status == StatusCode::OK && a.body == body)
    }
}

/// Continuous requests to one host from several tasks, counting failures.
pub struct Load {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    pub ok: std::sync::Arc<AtomicUsize>,
    pub failures: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Load {
    /// Starts `clients` tasks that GET `host` until stopped; an answer that
    /// is not 200 (or whose body is not one of `bodies`) is a failure.
    pub fn start(probe: &Probe, host: &str, bodies: &[&str], clients: usize) -> Load {
        Load::start_on(probe, host, "/", bodies, clients)
    }

    /// Like `start`, asking for `path`.
    pub fn start_on(
        probe: &Probe,
        host: &str,
        path: &str,
        bodies: &[&str],
        clients: usize,
    ) -> Load {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let ok = std::sync::Arc::new(AtomicUsize::new(0));
        let failures = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let bodies: Vec<String> = bodies.iter().map(|b| (*b).to_owned()).collect();
        let tasks = (0..clients)
            .map(|_| {
                let (probe, host, bodies) = (probe.clone(), host.to_owned(), bodies.clone());
                let path = path.to_owned();
                let (stop, ok, failures) = (stop.clone(), ok.clone(), failures.clone());
                tokio::spawn(async move {
                    while !stop.load(Ordering::Relaxed) {
                        match probe.get(&host, &path).await {
                            Ok(a) if a.status == StatusCode::OK && bodies.contains(&a.body) => {
                                ok.fetch_add(1, Ordering::Relaxed);
                            }
                            other => failures
                                .lock()
                                .expect("failures")
                                .push(format!("{other:?}")),
                        }
                    }
                })
            })
            .collect();
        Load {
            stop,
            tasks,
            ok,
            failures,
        }
    }

    /// Stops the clients; returns (successes, failures).
    pub async fn finish(self) -> (usize, Vec<String>) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.tasks {
            let _ = t.await;
        }
        let failures = self.failures.lock().expect("failures").clone();
        (self.ok.load(Ordering::Relaxed), failures)
    }
}

/// A Docker daemon of a test's own, beside whatever daemon already runs:
/// its own socket, data root, exec root and pid file in a temporary folder,
/// the no-bridge flags of `scripts/ci/docker-up`, and a containerd
/// namespace of its own in case it shares a system containerd. A test that
/// stops or restarts a daemon uses one of these: no test ever stops a
/// daemon it did not start.
pub struct PrivateDaemon {
    dir: tempfile::TempDir,
    child: Option<std::process::Child>,
    number: usize,
    /// The loopback port it also listens on with TLS (`--tlsverify`).
    tls_port: Option<u16>,
}

/// Private daemons started by this test binary, for unique names.
static DAEMONS: AtomicUsize = AtomicUsize::new(0);

/// The files a client of a daemon started with TLS needs.
pub struct DaemonTls {
    /// `tcp://127.0.0.1:<port>`.
    pub endpoint: String,
    /// The CA the daemon's certificate is signed by (PEM file).
    pub ca: String,
    /// A client certificate the daemon accepts, and its key (PEM files).
    pub cert: String,
    pub key: String,
}

impl PrivateDaemon {
    /// Starts the daemon and loads the test image into it from the default
    /// daemon; Err says why (with the daemon's log) when it cannot.
    pub async fn start() -> Result<PrivateDaemon, String> {
        // A short path: the socket's must fit in 108 bytes.
        let dir = tempfile::Builder::new()
            .prefix("gw-dockerd")
            .tempdir_in("/tmp")
            .map_err(|e| format!("tempdir: {e}"))?;
        let mut daemon = PrivateDaemon {
            dir,
            child: None,
            number: DAEMONS.fetch_add(1, Ordering::Relaxed),
            tls_port: None,
        };
        daemon.spawn()?;
        daemon.wait_ready().await?;
        daemon.load(IMAGE).await?;
        Ok(daemon)
    }

    /// Like `start`, also listening on a loopback TCP port with TLS that
    /// requires a client certificate (`--tlsverify`), with a CA, server
    /// and client certificates of its own; returns the client's files.
    pub async fn start_tls() -> Result<(PrivateDaemon, DaemonTls), String> {
        let mut last = String::new();
        // The port is chosen before dockerd binds it: another one is
        // tried when it was taken meanwhile.
        for _ in 0..3 {
            let dir = tempfile::Builder::new()
                .prefix("gw-dockerd")
                .tempdir_in("/tmp")
                .map_err(|e| format!("tempdir: {e}"))?;
            let ca = crate::support::tls::TestCa::new("dockerd test CA");
            let (server, server_key) = ca.issue(&["127.0.0.1", "localhost"]);
            let (client, client_key) = ca.issue_client("gangway");
            let file = |name: &str, text: &str| -> Result<String, String> {
                let path = dir.path().join(name);
                std::fs::write(&path, text).map_err(|e| format!("{name}: {e}"))?;
                Ok(path.display().to_string())
            };
            let tls = DaemonTls {
                endpoint: String::new(),
                ca: file("ca.pem", &ca.pem())?,
                cert: file("client.pem", &client)?,
                key: file("client-key.pem", &client_key)?,
            };
            file("server.pem", &server)?;
            file("server-key.pem", &server_key)?;
            let port = free_port();
            let mut daemon = PrivateDaemon {
                dir,
                child: None,
                number: DAEMONS.fetch_add(1, Ordering::Relaxed),
                tls_port: Some(port),
            };
            daemon.spawn()?;
            match daemon.wait_ready().await {
                Ok(()) => {
                    daemon.load(IMAGE).await?;
                    let endpoint = format!("tcp://127.0.0.1:{port}");
                    return Ok((daemon, DaemonTls { endpoint, ..tls }));
                }
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// Copies an image from the default daemon into this one.
    pub async fn load(&self, image: &str) -> Result<(), String> {
        let load = format!(
            "set -o pipefail; docker save {image} | DOCKER_HOST={} docker load",
            self.host()
        );
        command("bash", &["-c", &load]).await.map(drop)
    }

    /// Runs the docker CLI against this daemon; Ok(stdout) or Err(stderr).
    pub async fn docker(&self, args: &[&str]) -> Result<String, String> {
        command_env("docker", args, &[("DOCKER_HOST", &self.host())]).await
    }

    /// Its address, for `DOCKER_HOST` and gangway's endpoint.
    pub fn host(&self) -> String {
        format!("unix://{}", self.dir.path().join("docker.sock").display())
    }

    /// The daemon's process id.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(std::process::Child::id)
    }

    /// What the daemon logged.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("dockerd.log")).unwrap_or_default()
    }

    /// Kills the daemon at once (SIGKILL), as a crash would; its containers
    /// keep running under their shims.
    pub async fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        // dockerd's containerd dies with it, but may stay a zombie until
        // whoever inherits it reaps it; a new dockerd that finds the
        // zombie's pid would wait for it instead of starting a new one.
        let pid_file = self.dir.path().join("exec/containerd/containerd.pid");
        let Ok(pid) = std::fs::read_to_string(&pid_file) else {
            return;
        };
        let stat = format!("/proc/{}/stat", pid.trim());
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            let state = std::fs::read_to_string(&stat).ok().and_then(|s| {
                s.rsplit_once(") ")
                    .and_then(|(_, rest)| rest.chars().next())
            });
            match state {
                None | Some('Z') => {
                    let _ = std::fs::remove_file(&pid_file);
                    return;
                }
                // Still running: the new dockerd adopts it.
                Some(_) if std::time::Instant::now() > deadline => return,
                Some(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    }

    /// Starts the daemon again with the same flags and waits until it
    /// answers.
    pub async fn restart(&mut self) -> Result<(), String> {
        self.kill().await;
        self.spawn()?;
        self.wait_ready().await
    }

    fn spawn(&mut self) -> Result<(), String> {
        let d = self.dir.path();
        let path = |name: &str| d.join(name).display().to_string();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(d.join("dockerd.log"))
            .map_err(|e| format!("dockerd.log: {e}"))?;
        let err = log.try_clone().map_err(|e| format!("dockerd.log: {e}"))?;
        // One namespace per daemon: two daemons of one test (a swarm's
        // manager and worker) may share a system containerd.
        let namespace = format!("gangway-test-{}-{}", std::process::id(), self.number);
        let mut tls = Vec::new();
        if let Some(port) = self.tls_port {
            tls = vec![
                "-H".to_owned(),
                format!("tcp://127.0.0.1:{port}"),
                "--tlsverify".to_owned(),
                format!("--tlscacert={}", path("ca.pem")),
                format!("--tlscert={}", path("server.pem")),
                format!("--tlskey={}", path("server-key.pem")),
            ];
        }
        let child = std::process::Command::new("dockerd")
            .args(&tls)
            .args([
                "-H",
                &self.host(),
                "--data-root",
                &path("data"),
                "--exec-root",
                &path("exec"),
                "--pidfile",
                &path("docker.pid"),
                "--containerd-namespace",
                &namespace,
                "--containerd-plugins-namespace",
                &format!("{namespace}-plugins"),
                "--bridge=none",
                "--iptables=false",
                "--ip-forward=false",
                "--ip-masq=false",
                "--storage-driver=vfs",
            ])
            .stdin(std::process::Stdio::null())
            .stdout(log)
            .stderr(err)
            .spawn()
            .map_err(|e| format!("dockerd: {e}"))?;
        self.child = Some(child);
        Ok(())
    }

    async fn wait_ready(&mut self) -> Result<(), String> {
        let host = self.host();
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            if command_env("docker", &["version"], &[("DOCKER_HOST", &host)])
                .await
                .is_ok()
            {
                return Ok(());
            }
            let exited = match self.child.as_mut().map(std::process::Child::try_wait) {
                Some(Ok(None)) => None,
                Some(Ok(Some(status))) => Some(status.to_string()),
                Some(Err(e)) => Some(e.to_string()),
                None => Some("not started".to_owned()),
            };
            if let Some(how) = exited {
                return Err(format!("dockerd exited ({how}); its log:\n{}", self.log()));
            }
            if std::time::Instant::now() > deadline {
                return Err(format!(
                    "dockerd did not answer within 60 s; its log:\n{}",
                    self.log()
                ));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

impl Drop for PrivateDaemon {
    fn drop(&mut self) {
        let host = self.host();
        let docker = |args: &[&str]| {
            std::process::Command::new("docker")
                .args(args)
                .env("DOCKER_HOST", &host)
                .stdin(std::process::Stdio::null())
                .output()
        };
        let ids: Vec<String> = docker(&["ps", "-aq", "--no-trunc"])
            .map(|out| {
                String::from_utf8_lossy(&out.stdout)
                    .split_whitespace()
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        if !ids.is_empty() {
            let mut args = vec!["rm", "-f"];
            args.extend(ids.iter().map(String::as_str));
            let _ = docker(&args);
        }
        let kill = |signal: &str, pid: &str| {
            let _ = std::process::Command::new("kill")
                .args([signal, pid])
                .status();
        };
        if let Some(mut child) = self.child.take() {
            // SIGTERM: dockerd stops the containerd it started, too.
            kill("-TERM", &child.id().to_string());
            let _ = child.wait();
        }
        // After a SIGKILL and a restart, the containerd of the first start
        // may still run: the new dockerd adopts it without stopping it.
        let containerd = self.dir.path().join("exec/containerd/containerd.pid");
        if let Ok(pid) = std::fs::read_to_string(containerd) {
            let pid = pid.trim();
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            if String::from_utf8_lossy(&cmdline).contains("containerd") {
                kill("-TERM", pid);
            }
        }
        // A container that was running when dockerd was killed can outlive
        // its shim, unknown to the restarted daemon: find its processes by
        // their cgroup (named after the container's id).
        if let Ok(procs) = std::fs::read_dir("/proc") {
            for entry in procs.flatten() {
                let cgroup =
                    std::fs::read_to_string(entry.path().join("cgroup")).unwrap_or_default();
                if ids
                    .iter()
                    .any(|id| cgroup.contains(&format!("/docker/{id}")))
                {
                    kill("-KILL", &entry.file_name().to_string_lossy());
                }
            }
        }
        // dockerd mounts its data root on itself and a network namespace
        // under its exec root; unmounted (deepest first), the TempDir can
        // remove the folder.
        let dir = self.dir.path().display().to_string();
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let mut mounts: Vec<&str> = mountinfo
            .lines()
            .filter_map(|l| l.split(' ').nth(4))
            .filter(|m| m.starts_with(&dir))
            .collect();
        mounts.sort_by_key(|m| std::cmp::Reverse(m.len()));
        for mount in mounts {
            let _ = std::process::Command::new("umount")
                .args(["-l", mount])
                .status();
        }
    }
}

/// A swarm on daemons of the test's own (never the machine's): a manager
/// on loopback, and workers joined to it on demand. Every node leaves the
/// swarm and its daemon stops when this is dropped.
pub struct Swarm {
    /// The manager, which gangway reads.
    pub manager: PrivateDaemon,
    /// The workers, in the order they joined.
    pub workers: Vec<PrivateDaemon>,
    address: String,
}

impl Swarm {
    /// A one-node swarm with `images` (besides the test image) on it.
    pub async fn start(test: &str, images: &[&str]) -> Swarm {
        let manager = PrivateDaemon::start()
            .await
            .unwrap_or_else(|e| panic!("{test}: a daemon of the test's own did not start: {e}"));
        Swarm::start_on(test, manager, images).await
    }

    /// A one-node swarm whose manager is `manager`.
    pub async fn start_on(test: &str, manager: PrivateDaemon, images: &[&str]) -> Swarm {
        for image in images {
            manager
                .load(image)
                .await
                .unwrap_or_else(|e| panic!("{test}: loading {image}: {e}"));
        }
        // The manager's port must be free: a contributor's own swarm may use
        // 2377. Another port is tried when one is taken.
        let mut last = String::new();
        for _ in 0..3 {
            let address = format!("127.0.0.1:{}", free_port());
            match manager
                .docker(&[
                    "swarm",
                    "init",
                    "--advertise-addr",
                    &address,
                    "--listen-addr",
                    &address,
                ])
                .await
            {
                Ok(_) => {
                    return Swarm {
                        manager,
                        workers: Vec::new(),
                        address,
                    };
                }
                Err(e) => last = e,
            }
        }
        panic!(
            "{test}: swarm init failed: {last}\ndaemon log:\n{}",
            manager.log()
        );
    }

    /// Starts another daemon, puts `images` on it and joins it to the
    /// swarm as a worker; returns its node id.
    pub async fn add_worker(&mut self, test: &str, images: &[&str]) -> String {
        let worker = PrivateDaemon::start()
            .await
            .unwrap_or_else(|e| panic!("{test}: a second daemon did not start: {e}"));
        for image in images {
            worker
                .load(image)
                .await
                .unwrap_or_else(|e| panic!("{test}: loading {image} on the worker: {e}"));
        }
        let token = self
            .docker(&["swarm", "join-token", "-q", "worker"])
            .await
            .unwrap_or_else(|e| panic!("{test}: join token: {e}"));
        let mut last = String::new();
        for _ in 0..3 {
            let address = format!("127.0.0.1:{}", free_port());
            let joined = worker
                .docker(&[
                    "swarm",
                    "join",
                    "--token",
                    &token,
                    "--listen-addr",
                    &address,
                    "--advertise-addr",
                    &address,
                    &self.address,
                ])
                .await;
            match joined {
                Ok(_) => {
                    let id = worker
                        .docker(&["info", "--format", "{{.Swarm.NodeID}}"])
                        .await
                        .unwrap_or_else(|e| panic!("{test}: the worker's node id: {e}"));
                    self.workers.push(worker);
                    return id;
                }
                Err(e) => last = e,
            }
        }
        panic!(
            "{test}: swarm join failed: {last}\nworker log:\n{}",
            worker.log()
        );
    }

    /// The manager's node id.
    pub async fn manager_id(&self) -> String {
        self.docker(&["info", "--format", "{{.Swarm.NodeID}}"])
            .await
            .expect("the manager's node id")
    }

    /// Runs the docker CLI against the manager.
    pub async fn docker(&self, args: &[&str]) -> Result<String, String> {
        self.manager.docker(args).await
    }
}

impl Drop for Swarm {
    fn drop(&mut self) {
        for daemon in self.workers.iter().chain([&self.manager]) {
            let _ = std::process::Command::new("docker")
                .args(["swarm", "leave", "--force"])
                .env("DOCKER_HOST", daemon.host())
                .stdin(std::process::Stdio::null())
                .output();
        }
    }
}

/// A socket proxy that lets reads through to the daemon at `socket` and
/// refuses every write with 403, as a read-only socket proxy does; its port.
pub async fn read_only_proxy(socket: String) -> u16 {
    use http_body_util::Either;
    use hyper::service::service_fn;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("address").port();
    tokio::spawn(async move {
        while let Ok((conn, _)) = listener.accept().await {
            let socket = socket.clone();
            tokio::spawn(async move {
                let service = service_fn(move |req: http::Request<hyper::body::Incoming>| {
                    let socket = socket.clone();
                    async move {
                        if req.method() != http::Method::GET && req.method() != http::Method::HEAD {
                            let refused = http::Response::builder()
                                .status(403)
                                .header("content-type", "application/json")
                                .body(Either::Right(Full::new(Bytes::from_static(
                                    b"{\"message\":\"write access refused by the socket proxy\"}",
                                ))))
                                .expect("response");
                            return Ok::<_, hyper::Error>(refused);
                        }
                        let daemon = tokio::net::UnixStream::connect(&socket)
                            .await
                            .expect("the daemon's socket");
                        let (mut send, conn) = hyper::client::conn::http1::handshake(
                            hyper_util::rt::TokioIo::new(daemon),
                        )
                        .await?;
                        tokio::spawn(conn);
                        Ok(send.send_request(req).await?.map(Either::Left))
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(conn), service)
                    .await;
            });
        }
    });
    port
}
