//! What the KV provider tests share: Debian's redis-server as a store of
//! the test's own, the keys of a router in Traefik's KV layout, and the
//! questions asked of gangway (who answers, what the API says of the
//! provider). etcd's own server is in `support::etcd`.

use super::tls::TestCa;
use super::{Gangway, free_port};
use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::Duration;

const INSTALLER: &str = "scripts/ci/servers-up";
/// A file router that makes the API reachable at `api.test`.
pub const API: &str =
    "[http.routers.api]\nrule = \"Host(`api.test`)\"\nservice = \"api@internal\"\n";
/// Long enough for a loaded machine; changes are expected far sooner.
pub const WITHIN: Duration = Duration::from_secs(5);

/// Debian's redis-server on a loopback port of its own, with no
/// persistence, in a temporary directory; stopped when dropped.
pub struct Redis {
    server: PathBuf,
    cli: PathBuf,
    pub port: u16,
    notify: bool,
    /// With TLS only: the CA's PEM file, which signed the server's.
    pub ca: Option<PathBuf>,
    child: Option<Child>,
    dir: tempfile::TempDir,
}

impl Redis {
    /// The programs, or None (the test skips, or fails under
    /// GANGWAY_TEST_STRICT=1).
    fn programs(test: &str) -> Option<(PathBuf, PathBuf)> {
        Some((
            super::program(test, &["redis-server"], INSTALLER)?,
            super::program(test, &["redis-cli"], INSTALLER)?,
        ))
    }

    /// Starts a server; with `notify`, it sends keyspace notifications.
    pub async fn start(test: &str, notify: bool) -> Option<Redis> {
        Self::start_with(test, notify, false).await
    }

    /// Starts a server; with `tls`, it speaks TLS only, with a certificate
    /// for 127.0.0.1 from a CA of the test's own.
    pub async fn start_with(test: &str, notify: bool, tls: bool) -> Option<Redis> {
        let (server, cli) = Self::programs(test)?;
        let dir = tempfile::tempdir().unwrap();
        let ca = tls.then(|| {
            let ca = TestCa::new("kv test CA");
            let (cert, key) = ca.issue(&["127.0.0.1"]);
            std::fs::write(dir.path().join("server.pem"), cert).unwrap();
            std::fs::write(dir.path().join("server.key"), key).unwrap();
            let path = dir.path().join("ca.pem");
            std::fs::write(&path, ca.pem()).unwrap();
            path
        });
        let mut redis = Redis {
            server,
            cli,
            port: 0,
            notify,
            ca,
            child: None,
            dir,
        };
        for _ in 0..3 {
            redis.port = free_port();
            if redis.run().await {
                return Some(redis);
            }
        }
        panic!("redis-server did not start (its log is above)");
    }

    /// Starts the server on its port; whether it answers.
    pub async fn run(&mut self) -> bool {
        let port = self.port.to_string();
        let log = self.dir.path().join(format!("redis-{port}.log"));
        let mut command = Command::new(&self.server);
        match &self.ca {
            None => command.args(["--port", &port]),
            Some(ca) => command
                .args(["--port", "0", "--tls-port", &port])
                .arg("--tls-cert-file")
                .arg(self.dir.path().join("server.pem"))
                .arg("--tls-key-file")
                .arg(self.dir.path().join("server.key"))
                .arg("--tls-ca-cert-file")
                .arg(ca)
                .args(["--tls-auth-clients", "no"]),
        };
        command
            .args(["--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .arg("--dir")
            .arg(self.dir.path())
            .arg("--logfile")
            .arg(&log);
        if self.notify {
            command.args(["--notify-keyspace-events", "KA"]);
        }
        let mut child = command.spawn().expect("redis-server");
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while std::time::Instant::now() < deadline {
            if self.cli(&["ping"]).starts_with("PONG") {
                self.child = Some(child);
                return true;
            }
            if child.try_wait().ok().flatten().is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let _ = child.kill();
        let _ = child.wait();
        eprintln!(
            "redis-server did not start on port {port}:\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        false
    }

    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// redis-cli with `args`; its standard output.
    pub fn cli(&self, args: &[&str]) -> String {
        let mut command = Command::new(&self.cli);
        command.args(["-h", "127.0.0.1", "-p", &self.port.to_string()]);
        if let Some(ca) = &self.ca {
            command.arg("--tls").arg("--cacert").arg(ca);
        }
        let out = command.args(args).output().expect("redis-cli");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn set(&self, key: &str, value: &str) {
        let answer = self.cli(&["SET", key, value]);
        assert!(answer.starts_with("OK"), "SET {key}: {answer}");
    }

    pub fn del(&self, key: &str) {
        self.cli(&["DEL", key]);
    }

    pub fn endpoint(&self) -> String {
        format!("--providers.redis.endpoints=127.0.0.1:{}", self.port)
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The keys of router `name` for `host`, through middleware `strip` (which
/// takes `/api` off), to service `name` at `url`, under `root`.
pub fn route_keys(root: &str, name: &str, host: &str, url: &str) -> Vec<(String, String)> {
    vec![
        (
            format!("{root}/http/routers/{name}/rule"),
            format!("Host(`{host}`)"),
        ),
        (
            format!("{root}/http/routers/{name}/entryPoints/0"),
            "web".to_owned(),
        ),
        (
            format!("{root}/http/routers/{name}/middlewares/0"),
            "strip".to_owned(),
        ),
        (
            format!("{root}/http/routers/{name}/service"),
            name.to_owned(),
        ),
        (
            format!("{root}/http/services/{name}/loadBalancer/servers/0/url"),
            url.to_owned(),
        ),
        (
            format!("{root}/http/middlewares/strip/stripPrefix/prefixes/0"),
            "/api".to_owned(),
        ),
    ]
}

/// Which backend answers `host` at `/api/x`, and the path it saw; None
/// when no route answers.
pub async fn answer(gw: &Gangway, host: &str) -> Option<(String, String)> {
    let got = gw.get(host, "/api/x").await;
    if !got.status.is_success() {
        return None;
    }
    let seen = got.seen();
    Some((seen.backend, seen.uri))
}

/// What `/api/providers` says of `provider`.
pub async fn provider_state(gw: &Gangway, provider: &str) -> serde_json::Value {
    let text = gw.get("api.test", "/api/providers").await.text();
    let all: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    all[provider].clone()
}
