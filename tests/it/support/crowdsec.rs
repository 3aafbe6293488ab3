//! CrowdSec's Local API (LAPI) from Debian's `crowdsec` package, unpacked
//! (never installed) by `scripts/ci/crowdsec-up`, run as `crowdsec -no-cs`
//! (no log acquisition, no central API) with its config, database and
//! credentials in a temporary directory; `cscli` adds the bouncer key and
//! the decisions, as a user would.
//!
//! Beside it, [`AppsecStandIn`]: a stand-in for CrowdSec's AppSec
//! component, which the Debian CrowdSec (1.4.6) does not have (AppSec came
//! with CrowdSec 1.6, and no newer CrowdSec installs here).

use super::{Backend, free_port};
use bytes::Bytes;
use http::{HeaderMap, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Where the unpacked package is: `GANGWAY_CROWDSEC_DIR` or the folder
/// `scripts/ci/crowdsec-up` uses. None when it is missing: the test then
/// skips, except under `GANGWAY_TEST_STRICT=1`, where it fails.
pub fn available(test: &str) -> Option<PathBuf> {
    let root = std::env::var_os("GANGWAY_CROWDSEC_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/opt/crowdsec-deb"));
    if root.join("usr/bin/crowdsec").is_file() && root.join("usr/bin/cscli").is_file() {
        return Some(root);
    }
    let why = format!(
        "{test}: CrowdSec is not unpacked in {} (scripts/ci/crowdsec-up unpacks it)",
        root.display()
    );
    if std::env::var("GANGWAY_TEST_STRICT").as_deref() == Ok("1") {
        panic!("{why}");
    }
    eprintln!("SKIPPED: {why}");
    None
}

/// A running LAPI; stopped when dropped.
pub struct Lapi {
    root: PathBuf,
    dir: tempfile::TempDir,
    pub port: u16,
    child: Option<Child>,
    /// The bouncer key `cscli bouncers add` gave.
    pub key: String,
}

impl Lapi {
    /// Writes a config with scratch paths, starts the LAPI on a free port,
    /// registers a machine (for cscli) and a bouncer (for gangway).
    pub async fn start(root: PathBuf) -> Lapi {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut lapi = Lapi {
            root,
            dir,
            port: free_port(),
            child: None,
            key: String::new(),
        };
        lapi.write_config();
        lapi.spawn().await;
        let creds = lapi.path("cfg/local_api_credentials.yaml");
        lapi.cscli(&["machines", "add", "tests", "--auto", "-f", &creds]);
        // cscli writes the URL it guesses; it must be this LAPI's.
        let written = std::fs::read_to_string(&creds).expect("credentials");
        let fixed: String = written
            .lines()
            .map(|l| {
                if l.starts_with("url:") {
                    format!("url: http://127.0.0.1:{}/\n", lapi.port)
                } else {
                    format!("{l}\n")
                }
            })
            .collect();
        std::fs::write(&creds, fixed).expect("credentials");
        lapi.key = lapi
            .cscli(&["bouncers", "add", "gangway", "-o", "raw"])
            .trim()
            .to_owned();
        assert!(!lapi.key.is_empty(), "cscli gave no bouncer key");
        lapi
    }

    fn path(&self, rel: &str) -> String {
        self.dir.path().join(rel).display().to_string()
    }

    fn write_config(&self) {
        let d = self.dir.path();
        for sub in ["cfg", "data", "hub"] {
            std::fs::create_dir_all(d.join(sub)).expect("scratch folder");
        }
        let etc = self.root.join("etc/crowdsec");
        for file in ["profiles.yaml", "simulation.yaml"] {
            std::fs::copy(etc.join(file), d.join("cfg").join(file)).expect("copy config");
        }
        std::fs::write(d.join("hub/.index.json"), "{}").expect("hub index");
        let p = |rel: &str| self.path(rel);
        let config = format!(
            "common:\n  daemonize: false\n  log_media: stdout\n  log_level: info\n  working_dir: .\n\
             config_paths:\n  config_dir: {cfg}/\n  data_dir: {data}/\n  simulation_path: {cfg}/simulation.yaml\n  \
             hub_dir: {hub}/\n  index_path: {hub}/.index.json\n  notification_dir: {cfg}/notifications/\n  plugin_dir: {cfg}/plugins/\n\
             db_config:\n  type: sqlite\n  use_wal: false\n  db_path: {data}/crowdsec.db\n\
             api:\n  client:\n    credentials_path: {cfg}/local_api_credentials.yaml\n  \
             server:\n    log_level: info\n    listen_uri: 127.0.0.1:{port}\n    profiles_path: {cfg}/profiles.yaml\n    \
             trusted_ips:\n      - 127.0.0.1\n\
             prometheus:\n  enabled: false\n",
            cfg = p("cfg"),
            data = p("data"),
            hub = p("hub"),
            port = self.port,
        );
        std::fs::write(self.config_path(), config).expect("config");
    }

    fn config_path(&self) -> PathBuf {
        self.dir.path().join("config.yaml")
    }

    fn bin(&self, name: &str) -> PathBuf {
        self.root.join("usr/bin").join(name)
    }

    async fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("crowdsec.log"))
            .expect("log");
        let child = Command::new(self.bin("crowdsec"))
            .arg("-c")
            .arg(self.config_path())
            .arg("-no-cs")
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("start crowdsec");
        self.child = Some(child);
        let addr = format!("127.0.0.1:{}", self.port);
        let listens = super::within(Duration::from_secs(20), || {
            let addr = addr.clone();
            async move { tokio::net::TcpStream::connect(&addr).await.is_ok() }
        })
        .await;
        assert!(listens, "the LAPI did not listen; its log:\n{}", self.log());
    }

    /// Everything the LAPI logged.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("crowdsec.log")).unwrap_or_default()
    }

    /// Runs cscli against this LAPI; its standard output.
    pub fn cscli(&self, args: &[&str]) -> String {
        let out = Command::new(self.bin("cscli"))
            .arg("-c")
            .arg(self.config_path())
            .args(args)
            .current_dir(self.dir.path())
            .output()
            .expect("run cscli");
        assert!(
            out.status.success(),
            "cscli {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Bans `ip` for an hour.
    pub fn ban(&self, ip: &str) {
        self.cscli(&["decisions", "add", "--ip", ip, "--duration", "1h"]);
    }

    /// Deletes the decisions about `ip`.
    pub fn unban(&self, ip: &str) {
        self.cscli(&["decisions", "delete", "--ip", ip]);
    }

    /// Stops the LAPI (its database stays).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the LAPI again on the same port, with the same database.
    pub async fn restart(&mut self) {
        self.stop();
        self.spawn().await;
    }

    /// The folder the test may put files in (a ban page).
    pub fn scratch(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Lapi {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One question the AppSec stand-in received.
#[derive(Clone, Debug)]
pub struct Asked {
    pub method: String,
    pub uri: String,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Asked {
    /// A header's value as text ("" when missing).
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }
}

/// A small HTTP server on 127.0.0.1 that answers as CrowdSec's AppSec
/// component does, over the same protocol (CrowdSec's "WAF / bouncer
/// communication protocol"): it reads the `X-Crowdsec-Appsec-*` headers
/// and the forwarded body, answers 401 to a wrong
/// `X-Crowdsec-Appsec-Api-Key`, 403 with `{"action":"ban","http_status":403}`
/// when the request carries one of two attacks its rules know (a path
/// walking out of the site, `/..;/` or `etc/passwd`; SQL injection,
/// `' OR 1=1`), and 200 with `{"action":"allow","http_status":200}`
/// otherwise. It is a stand-in because the CrowdSec these tests run has no
/// AppSec component; its rules are two patterns, not CrowdSec's.
pub struct AppsecStandIn {
    server: Backend,
    asked: Arc<Mutex<Vec<Asked>>>,
}

impl AppsecStandIn {
    /// Judges requests, expecting `key`.
    pub async fn start(key: &str) -> AppsecStandIn {
        Self::serve(key.to_owned(), None).await
    }

    /// Answers every question with `status` (500: the component failed),
    /// after recording it.
    pub async fn answering(status: StatusCode) -> AppsecStandIn {
        Self::serve(String::new(), Some(status)).await
    }

    async fn serve(key: String, fixed: Option<StatusCode>) -> AppsecStandIn {
        let asked = Arc::new(Mutex::new(Vec::new()));
        let record = asked.clone();
        let server = Backend::serve(move |req: Request<Incoming>| {
            let (key, record) = (key.clone(), record.clone());
            async move {
                let (parts, body) = req.into_parts();
                let body = body
                    .collect()
                    .await
                    .map(|b| b.to_bytes())
                    .unwrap_or_default();
                let question = Asked {
                    method: parts.method.to_string(),
                    uri: parts.uri.to_string(),
                    headers: parts.headers,
                    body,
                };
                let status = fixed.unwrap_or_else(|| judge(&question, &key));
                record.lock().expect("record").push(question);
                let verdict = match status {
                    StatusCode::OK => r#"{"action":"allow","http_status":200}"#,
                    StatusCode::FORBIDDEN => r#"{"action":"ban","http_status":403}"#,
                    _ => r#"{"message":"internal error"}"#,
                };
                let mut resp = Response::new(Full::new(Bytes::from_static(verdict.as_bytes())));
                *resp.status_mut() = status;
                resp
            }
        })
        .await;
        AppsecStandIn { server, asked }
    }

    /// `host:port`, for `crowdsecAppsecHost`.
    pub fn host(&self) -> String {
        self.server.addr.to_string()
    }

    /// Every question so far, oldest first.
    pub fn asked(&self) -> Vec<Asked> {
        self.asked.lock().expect("asked").clone()
    }
}

/// The stand-in's verdict: the key first, then its two rules, on the
/// forwarded URI and body with percent-escapes and `+` decoded.
fn judge(q: &Asked, key: &str) -> StatusCode {
    if q.header("x-crowdsec-appsec-api-key") != key {
        return StatusCode::UNAUTHORIZED;
    }
    let seen = [q.header("x-crowdsec-appsec-uri").as_bytes(), &q.body[..]]
        .map(|raw| {
            let spaced: Vec<u8> = raw
                .iter()
                .map(|&b| if b == b'+' { b' ' } else { b })
                .collect();
            percent_encoding::percent_decode(&spaced)
                .decode_utf8_lossy()
                .to_lowercase()
        })
        .join("\n");
    let attacks = ["/..;/", "etc/passwd", "' or 1=1"];
    if attacks.iter().any(|a| seen.contains(a)) {
        StatusCode::FORBIDDEN
    } else {
        StatusCode::OK
    }
}
