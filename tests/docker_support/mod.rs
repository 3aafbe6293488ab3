//! Harness for the tests against a real Docker daemon: the local test image
//! (`scripts/ci/docker-up` builds it), containers on the host network that
//! listen on 127.0.0.1, one run label per test so that each gangway sees
//! only its own containers, and cleanup of everything a test started.
#![allow(dead_code)]

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
/// Every test container carries this label (value: the test's run id).
pub const RUN_LABEL: &str = "gangway-test.run";
/// Where `scripts/ci/docker-up` keeps dockerd's pid and log.
pub const STATE_DIR: &str = "/tmp/gangway-docker";

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
    let out = tokio::process::Command::new(program)
        .args(args)
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

/// Like `ready`, and docker-compose is there too.
pub async fn compose_ready(test: &str) -> bool {
    if !ready(test).await {
        return false;
    }
    if let Err(e) = command("docker-compose", &["version", "--short"]).await {
        skip(
            test,
            &format!("docker-compose is not available (run scripts/ci/docker-up): {e}"),
        );
        return false;
    }
    true
}

/// One test's containers, removed when it is dropped.
pub struct Run {
    /// The value of RUN_LABEL on this test's containers.
    pub id: String,
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
            suffix: format!("{}x{n}", std::process::id()),
            projects: std::sync::Mutex::new(Vec::new()),
            dir: tempfile::tempdir().expect("tempdir"),
        }
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
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        docker(&args).await.expect("docker run");
        name
    }

    /// Writes a compose file for project `project` and runs
    /// `docker-compose -p <project> -f <file> <args>`.
    pub async fn compose(
        &self,
        project: &str,
        file: &str,
        args: &[&str],
    ) -> Result<String, String> {
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
        command("docker-compose", &all).await
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        let projects = self.projects.lock().map(|p| p.clone()).unwrap_or_default();
        for (project, path) in projects {
            let _ = std::process::Command::new("docker-compose")
                .args([
                    "-p",
                    &project,
                    "-f",
                    &path.display().to_string(),
                    "down",
                    "-t",
                    "1",
                ])
                .output();
        }
        let filter = format!("label={RUN_LABEL}={}", self.id);
        if let Ok(out) = std::process::Command::new("docker")
            .args(["ps", "-aq", "--filter", &filter])
            .output()
        {
            let ids: Vec<String> = String::from_utf8_lossy(&out.stdout)
                .split_whitespace()
                .map(str::to_owned)
                .collect();
            if !ids.is_empty() {
                let mut args = vec!["rm".to_owned(), "-f".to_owned()];
                args.extend(ids);
                let _ = std::process::Command::new("docker").args(&args).output();
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
        tokio::time::timeout(Duration::from_secs(10), exchange)
            .await
            .map_err(|_| "timed out".to_owned())?
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
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let ok = std::sync::Arc::new(AtomicUsize::new(0));
        let failures = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let bodies: Vec<String> = bodies.iter().map(|b| (*b).to_owned()).collect();
        let tasks = (0..clients)
            .map(|_| {
                let (probe, host, bodies) = (probe.clone(), host.to_owned(), bodies.clone());
                let (stop, ok, failures) = (stop.clone(), ok.clone(), failures.clone());
                tokio::spawn(async move {
                    while !stop.load(Ordering::Relaxed) {
                        match probe.get(&host, "/").await {
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
