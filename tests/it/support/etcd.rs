//! etcd, Debian's `etcd-server`, as a one-member cluster on loopback ports
//! of its own with its data in a temporary directory. Tests write to it
//! through its JSON gateway with a plain HTTP client of their own, so what
//! gangway reads is checked against writes it did not make.

use super::free_port;
use super::pebble::{Exit, Silent, listens};
use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::{Client, connect::HttpConnector};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The etcd binary, or None when it is not installed: the test then skips,
/// except under `GANGWAY_TEST_STRICT=1`, where it fails.
pub fn available(test: &str) -> Option<PathBuf> {
    super::program(test, &["etcd"], "scripts/ci/servers-up")
}

/// How many sets of ports a start tries.
const ATTEMPTS: usize = 5;

/// A running etcd member; stopped when dropped.
pub struct Etcd {
    binary: PathBuf,
    pub dir: tempfile::TempDir,
    pub client_port: u16,
    peer_port: u16,
    /// The certificate and key files of the TLS client port, if it has one.
    tls: Option<(PathBuf, PathBuf)>,
    /// The client port speaking TLS (0 without one).
    pub tls_port: u16,
    child: Option<Child>,
    starts: usize,
    /// The root user's password once auth is on.
    root_password: Option<String>,
    http: Client<HttpConnector, Full<Bytes>>,
}

impl Etcd {
    /// Starts etcd with `binary` on free ports, trying other ports when the
    /// chosen ones were taken meanwhile, and waits until it is healthy.
    pub async fn start(binary: PathBuf) -> Etcd {
        Self::start_on(binary, None).await
    }

    /// Like `start`, with a second client port speaking TLS with the
    /// certificate chain and key given as PEM (the plain one stays, for the
    /// test's own writes).
    pub async fn start_with_tls(binary: PathBuf, cert_pem: &str, key_pem: &str) -> Etcd {
        Self::start_on(binary, Some((cert_pem, key_pem))).await
    }

    async fn start_on(binary: PathBuf, tls: Option<(&str, &str)>) -> Etcd {
        let dir = tempfile::tempdir().expect("tempdir");
        let tls = tls.map(|(cert, key)| {
            let (cert_path, key_path) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
            std::fs::write(&cert_path, cert).unwrap();
            std::fs::write(&key_path, key).unwrap();
            (cert_path, key_path)
        });
        let mut etcd = Etcd {
            binary,
            dir,
            client_port: 0,
            peer_port: 0,
            tls,
            tls_port: 0,
            child: None,
            starts: 0,
            root_password: None,
            http: Client::builder(hyper_util::rt::TokioExecutor::new()).build_http(),
        };
        for attempt in 1..=ATTEMPTS {
            etcd.client_port = free_port();
            etcd.peer_port = free_port();
            if etcd.tls.is_some() {
                etcd.tls_port = free_port();
            }
            if etcd.spawn().await {
                return etcd;
            }
            eprintln!("etcd did not start (attempt {attempt}); trying other ports");
            // A failed first start may have left a half-made member behind.
            let _ = std::fs::remove_dir_all(etcd.data_dir());
        }
        panic!(
            "etcd did not start in {ATTEMPTS} attempts; its log:\n{}",
            etcd.log()
        );
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn log_path(&self, start: usize) -> PathBuf {
        self.dir.path().join(format!("etcd-{start}.log"))
    }

    /// Everything etcd logged, over all its starts.
    pub fn log(&self) -> String {
        (1..=self.starts)
            .map(|i| std::fs::read_to_string(self.log_path(i)).unwrap_or_default())
            .collect()
    }

    /// Starts the process on the chosen ports; false when it exits before
    /// it listens.
    async fn spawn(&mut self) -> bool {
        self.starts += 1;
        let log = std::fs::File::create(self.log_path(self.starts)).unwrap();
        let mut client = format!("http://127.0.0.1:{}", self.client_port);
        let peer = format!("http://127.0.0.1:{}", self.peer_port);
        let mut command = Command::new(&self.binary);
        if let Some((cert, key)) = &self.tls {
            client.push_str(&format!(",https://127.0.0.1:{}", self.tls_port));
            command.arg("--cert-file").arg(cert);
            command.arg("--key-file").arg(key);
        }
        let child = command
            .args(["--name", "t", "--data-dir"])
            .arg(self.data_dir())
            .args([
                "--listen-client-urls",
                &client,
                "--advertise-client-urls",
                &client,
                "--listen-peer-urls",
                &peer,
                "--initial-advertise-peer-urls",
                &peer,
                "--initial-cluster",
                &format!("t={peer}"),
            ])
            // Whatever the machine's environment sets for etcd is not ours.
            .env_clear()
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start etcd");
        let child = self.child.insert(child);
        match listens(child, self.client_port).await {
            Ok(()) => {}
            Err(Exit) => {
                self.child = None;
                return false;
            }
            Err(Silent) => panic!(
                "etcd did not listen on 127.0.0.1:{} within 20 s; its log:\n{}",
                self.client_port,
                self.log()
            ),
        }
        self.wait_healthy().await;
        true
    }

    /// Waits until the member has elected itself and serves requests.
    async fn wait_healthy(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let got = self
                .http
                .request(
                    http::Request::get(format!("{}/health", self.url()))
                        .body(Full::default())
                        .unwrap(),
                )
                .await;
            if let Ok(resp) = got {
                let body = resp.into_body().collect().await.map(|b| b.to_bytes());
                if body.is_ok_and(|b| b.windows(6).any(|w| w == b"\"true\"")) {
                    return;
                }
            }
            if Instant::now() > deadline {
                panic!("etcd is not healthy within 20 s; its log:\n{}", self.log());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The value of one of etcd's own Prometheus metrics (`/metrics`).
    pub async fn metric(&self, name: &str) -> Option<f64> {
        let resp = self
            .http
            .request(
                http::Request::get(format!("{}/metrics", self.url()))
                    .body(Full::default())
                    .unwrap(),
            )
            .await
            .ok()?;
        let body = resp.into_body().collect().await.ok()?.to_bytes();
        String::from_utf8_lossy(&body).lines().find_map(|line| {
            let (metric, value) = line.split_once(' ')?;
            (metric == name).then(|| value.trim().parse().ok())?
        })
    }

    /// `127.0.0.1:port`, as `providers.etcd.endpoints` takes it.
    pub fn endpoint(&self) -> String {
        format!("127.0.0.1:{}", self.client_port)
    }

    /// `127.0.0.1:port` of the TLS client port.
    pub fn tls_endpoint(&self) -> String {
        format!("127.0.0.1:{}", self.tls_port)
    }

    /// The plain client URL.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port)
    }

    /// POSTs `body` to the gateway's `path` (as root once auth is on) and
    /// returns the status and JSON answer.
    pub async fn post(&self, path: &str, body: serde_json::Value) -> (u16, serde_json::Value) {
        let mut req = http::Request::post(format!("{}{path}", self.url()));
        if let Some(password) = &self.root_password {
            req = req.header("authorization", self.token("root", password).await);
        }
        self.send(req.body(Full::new(Bytes::from(body.to_string()))).unwrap())
            .await
    }

    async fn send(&self, req: http::Request<Full<Bytes>>) -> (u16, serde_json::Value) {
        let resp = self.http.request(req).await.expect("request to etcd");
        let status = resp.status().as_u16();
        let body = resp
            .into_body()
            .collect()
            .await
            .expect("etcd body")
            .to_bytes();
        let json = serde_json::from_slice(&body).unwrap_or_else(|e| {
            panic!("etcd answered {status} with something not JSON ({e}): {body:?}")
        });
        (status, json)
    }

    /// A token for `user`, straight from the gateway.
    async fn token(&self, user: &str, password: &str) -> String {
        let req = http::Request::post(format!("{}/v3/auth/authenticate", self.url()))
            .body(Full::new(Bytes::from(
                serde_json::json!({"name": user, "password": password}).to_string(),
            )))
            .unwrap();
        let (status, json) = self.send(req).await;
        assert_eq!(status, 200, "authenticate {user}: {json}");
        json["token"].as_str().expect("token").to_owned()
    }

    /// Writes `value` under `key`; the revision of the write.
    pub async fn put(&self, key: &str, value: &str) -> i64 {
        self.put_bytes(key.as_bytes(), value.as_bytes()).await
    }

    /// Writes raw bytes (for keys and values that are not UTF-8).
    pub async fn put_bytes(&self, key: &[u8], value: &[u8]) -> i64 {
        let (status, json) = self
            .post(
                "/v3/kv/put",
                serde_json::json!({"key": b64(key), "value": b64(value)}),
            )
            .await;
        assert_eq!(status, 200, "put: {json}");
        revision(&json)
    }

    /// Writes many keys in transactions of 100 (etcd's limit per
    /// transaction is 128 operations); the revision of the last.
    pub async fn put_many(&self, pairs: &[(String, String)]) -> i64 {
        let mut last = 0;
        for chunk in pairs.chunks(100) {
            let ops: Vec<_> = chunk
                .iter()
                .map(|(k, v)| {
                    serde_json::json!({"request_put": {"key": b64(k.as_bytes()), "value": b64(v.as_bytes())}})
                })
                .collect();
            let (status, json) = self
                .post("/v3/kv/txn", serde_json::json!({"success": ops}))
                .await;
            assert_eq!(status, 200, "txn: {json}");
            last = revision(&json);
        }
        last
    }

    /// Deletes `key`; the revision of the delete.
    pub async fn delete(&self, key: &str) -> i64 {
        let (status, json) = self
            .post(
                "/v3/kv/deleterange",
                serde_json::json!({"key": b64(key.as_bytes())}),
            )
            .await;
        assert_eq!(status, 200, "delete: {json}");
        revision(&json)
    }

    /// Forgets the history before `revision`.
    pub async fn compact(&self, revision: i64) {
        let (status, json) = self
            .post(
                "/v3/kv/compaction",
                serde_json::json!({"revision": revision.to_string(), "physical": true}),
            )
            .await;
        assert_eq!(status, 200, "compaction: {json}");
    }

    /// Turns auth on with a `root` user holding `password`; later writes
    /// from the test go as root.
    pub async fn enable_auth(&mut self, password: &str) {
        for (path, body) in [
            (
                "/v3/auth/user/add",
                serde_json::json!({"name": "root", "password": password}),
            ),
            (
                "/v3/auth/user/grant",
                serde_json::json!({"user": "root", "role": "root"}),
            ),
            ("/v3/auth/enable", serde_json::json!({})),
        ] {
            let (status, json) = self.post(path, body).await;
            assert_eq!(status, 200, "{path}: {json}");
        }
        self.root_password = Some(password.to_owned());
    }

    /// Makes etcd refuse every token it gave out so far: changing root's
    /// password (to the same one) does that, while a restart does not (the
    /// member replays the authentications from its log).
    pub async fn invalidate_tokens(&self) {
        let password = self.root_password.clone().expect("auth is on");
        let (status, json) = self
            .post(
                "/v3/auth/user/changepw",
                serde_json::json!({"name": "root", "password": password}),
            )
            .await;
        assert_eq!(status, 200, "changepw: {json}");
    }

    /// Kills the process at once (SIGKILL), as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts etcd again on the same ports and data directory.
    pub async fn restart(&mut self) {
        self.kill();
        if !self.spawn().await {
            panic!(
                "etcd did not start again on 127.0.0.1:{}; its log:\n{}",
                self.client_port,
                self.log()
            );
        }
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        self.kill();
    }
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The header revision of an answer (a JSON string, as 64-bit integers are).
fn revision(json: &serde_json::Value) -> i64 {
    json["header"]["revision"]
        .as_str()
        .and_then(|r| r.parse().ok())
        .unwrap_or_else(|| panic!("no revision in {json}"))
}
