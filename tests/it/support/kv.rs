//! What the KV provider tests share: Debian's redis-server as a store of
//! the test's own, the keys of a router in Traefik's KV layout, and the
//! questions asked of gangway (who answers, what the API says of the
//! provider). etcd's own server is in `support::etcd`.

use super::tls::TestCa;
use super::{Backend, Gangway, free_port};
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
    /// redis-cli.
    pub cli: PathBuf,
    pub port: u16,
    notify: bool,
    /// `CONFIG` is renamed away, as managed services refuse it.
    refuse_config: bool,
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

    /// Starts a server without notifications that refuses `CONFIG`, as a
    /// managed Redis does.
    pub async fn start_managed(test: &str) -> Option<Redis> {
        Self::start_full(test, false, false, true).await
    }

    /// Starts a server; with `tls`, it speaks TLS only, with a certificate
    /// for 127.0.0.1 from a CA of the test's own.
    pub async fn start_with(test: &str, notify: bool, tls: bool) -> Option<Redis> {
        Self::start_full(test, notify, tls, false).await
    }

    async fn start_full(test: &str, notify: bool, tls: bool, refuse_config: bool) -> Option<Redis> {
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
            refuse_config,
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
        if self.refuse_config {
            command.args(["--rename-command", "CONFIG", ""]);
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

    /// Stops the server after it wrote its data to disk, so that
    /// [`Redis::run`] starts it again with the same keys, as a server
    /// with persistence restarts.
    pub fn shutdown_saving(&mut self) {
        self.cli(&["SHUTDOWN", "SAVE"]);
        if let Some(mut child) = self.child.take() {
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

/// `path` of gangway's API (served at `api.test`), as JSON.
pub async fn api_json(gw: &Gangway, path: &str) -> serde_json::Value {
    gw.api_json(path).await
}

/// Waits until `/api/providers` says `provider` is not connected, and
/// returns the error it shows.
pub async fn unreachable(gw: &Gangway, provider: &str) -> String {
    super::eventually(WITHIN, "the API says the store is unreachable", || async {
        let state = provider_state(gw, provider).await;
        state["connected"] == false && state["lastError"].is_string()
    })
    .await;
    let state = provider_state(gw, provider).await;
    state["lastError"].as_str().unwrap_or_default().to_owned()
}

/// With routers `good` (for `good.test`) and `bad` (for `bad.test`)
/// written: waits until `good` answers, then checks that `bad` does not,
/// that `bad@provider` is disabled with `error` as its first error, that
/// its keys are `provider`'s, and that a warning says `warning`.
pub async fn assert_disabled_and_named(gw: &Gangway, provider: &str, error: &str, warning: &str) {
    super::eventually(WITHIN, "the good router answers", || async {
        answer(gw, "good.test").await.is_some()
    })
    .await;
    assert_eq!(gw.get("bad.test", "/api/x").await.status, 404);
    let router = api_json(gw, &format!("/api/http/routers/bad@{provider}")).await;
    assert_eq!(router["status"], "disabled", "{router}");
    assert_eq!(router["error"][0], error, "{router}");
    assert_eq!(router["keys"]["provider"], provider, "{router}");
    let overview = api_json(gw, "/api/overview").await;
    let warnings = overview["warnings"].as_array().cloned().unwrap_or_default();
    assert!(
        warnings.iter().any(|w| w["message"] == warning),
        "`{warning}` is reported: {warnings:?}"
    );
}

/// A store the test writes keys to.
pub trait Writes {
    /// Writes `value` under `key`.
    fn put_key(&self, key: &str, value: &str) -> impl Future<Output = ()>;
    /// Deletes `key`.
    fn delete_key(&self, key: &str) -> impl Future<Output = ()>;
}

impl Writes for Redis {
    async fn put_key(&self, key: &str, value: &str) {
        self.set(key, value);
    }

    async fn delete_key(&self, key: &str) {
        self.del(key);
    }
}

impl Writes for super::etcd::Etcd {
    async fn put_key(&self, key: &str, value: &str) {
        self.put(key, value).await;
    }

    async fn delete_key(&self, key: &str) {
        self.delete(key).await;
    }
}

/// Writes router `name` for `host` to service `name` at `url`, under
/// `root` (see `route_keys`), key by key.
pub async fn write_route(store: &impl Writes, root: &str, name: &str, host: &str, url: &str) {
    for (key, value) in route_keys(root, name, host, url) {
        store.put_key(&key, &value).await;
    }
}

/// With router `app` for `app.test` to backend `a` written under
/// `traefik/` before gangway started: checks it is routed through its
/// middleware and the provider is connected, then that a new router, a
/// changed server URL (to backend `b`) and a deleted router are followed.
pub async fn assert_changes_followed(
    gw: &Gangway,
    store: &impl Writes,
    provider: &str,
    a: &Backend,
    b: &Backend,
) {
    super::eventually(WITHIN, "the router from the store answers", || async {
        answer(gw, "app.test").await.is_some()
    })
    .await;
    assert_eq!(
        answer(gw, "app.test").await,
        Some(("a".to_owned(), "/x".to_owned())),
        "the middleware from the store took /api off"
    );
    let state = provider_state(gw, provider).await;
    assert_eq!(state["connected"], true, "{state}");
    assert!(state["lastSync"].is_u64(), "{state}");

    write_route(store, "traefik", "two", "two.test", &a.url()).await;
    super::eventually(WITHIN, "a new router is routed", || async {
        answer(gw, "two.test").await.is_some()
    })
    .await;
    store
        .put_key(
            "traefik/http/services/app/loadBalancer/servers/0/url",
            &b.url(),
        )
        .await;
    super::eventually(WITHIN, "the changed server gets the traffic", || async {
        answer(gw, "app.test")
            .await
            .is_some_and(|(who, _)| who == "b")
    })
    .await;
    for option in ["rule", "entryPoints/0", "middlewares/0", "service"] {
        store
            .delete_key(&format!("traefik/http/routers/two/{option}"))
            .await;
    }
    super::eventually(WITHIN, "the deleted router is gone", || async {
        gw.get("two.test", "/api/x").await.status == 404
    })
    .await;
    assert!(answer(gw, "app.test").await.is_some());
}

/// After the store came back: waits until `app.test` goes to backend `b`
/// (written while or after it was away), and checks the provider says
/// connected again, without an error.
pub async fn assert_resynced(gw: &Gangway, provider: &str) {
    super::eventually(
        Duration::from_secs(15),
        "the provider reconnects and reads the keys again",
        || async {
            answer(gw, "app.test")
                .await
                .is_some_and(|(who, _)| who == "b")
        },
    )
    .await;
    let state = provider_state(gw, provider).await;
    assert_eq!(state["connected"], true, "{state}");
    assert!(state.get("lastError").is_none(), "{state}");
}

/// With the store speaking TLS only at `endpoint` (the whole
/// `--providers.<provider>.endpoints=…` flag), with a certificate from the
/// CA in the file `ca`, and router `app` for `app.test` under `gangway/`:
/// gangway given `tls.ca` routes it; gangway with TLS on but without the
/// CA reports a certificate error and routes nothing.
pub async fn assert_tls_checked(provider: &str, endpoint: &str, ca: &std::path::Path) {
    let trusting = Gangway::with_file(
        API,
        &[
            endpoint,
            &format!("--providers.{provider}.tls.ca={}", ca.display()),
            "--api=true",
        ],
    )
    .await;
    super::eventually(
        WITHIN,
        "the router from the store over TLS answers",
        || async { answer(&trusting, "app.test").await.is_some() },
    )
    .await;
    let tls_on = format!("--providers.{provider}.tls=true");
    let doubting = Gangway::with_file(API, &[endpoint, &tls_on, "--api=true"]).await;
    let error = unreachable(&doubting, provider).await;
    assert!(error.contains("certificate"), "{error}");
    assert_eq!(doubting.get("app.test", "/api/x").await.status, 404);
}

/// After the store went away: waits until the API says so, and checks that
/// `app.test` still goes to backend `a`.
pub async fn assert_routes_kept(gw: &Gangway, provider: &str) {
    unreachable(gw, provider).await;
    assert_eq!(
        answer(gw, "app.test").await.map(|(who, _)| who),
        Some("a".to_owned()),
        "the last routes stay while the store is away"
    );
}

/// gangway reading `provider` at `endpoint` (the whole
/// `--providers.<provider>.endpoints=…` flag) under Traefik's root key,
/// with the API at `api.test`.
pub async fn on_traefik_root(provider: &str, endpoint: &str) -> Gangway {
    let root = format!("--providers.{provider}.rootKey=traefik");
    Gangway::with_file(API, &[endpoint, &root, "--api=true"]).await
}
