//! Let's Encrypt's test CA, Debian's `pebble`, with `pebble-challtestsrv`
//! as its DNS server answering 127.0.0.1 for every name. Each test starts
//! its own pair on free loopback ports, because pebble validates on fixed
//! ports (`httpPort`, `tlsPort`) that must be the gangway under test's.
//! Validation is real: `PEBBLE_VA_ALWAYS_VALID` is never set.

use super::free_port;
use super::tls::TestCa;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// Whether pebble can run here. Without it a test skips, except under
/// `GANGWAY_TEST_STRICT=1` (the project's test command), where it fails.
pub fn available(test: &str) -> bool {
    let found = ["pebble", "pebble-challtestsrv"].iter().all(|b| {
        Command::new("sh")
            .arg("-c")
            .arg(format!("command -v {b}"))
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    });
    if !found {
        if std::env::var("GANGWAY_TEST_STRICT").as_deref() == Ok("1") {
            panic!("{test}: pebble is not installed (scripts/ci/pebble-up installs it)");
        }
        eprintln!("{test}: SKIPPED: pebble and pebble-challtestsrv are not installed");
    }
    found
}

pub struct Pebble {
    pub dir: tempfile::TempDir,
    /// The ACME directory URL.
    pub directory: String,
    /// The CA of pebble's own HTTPS endpoints (gangway's caCertificates).
    pub api_ca: PathBuf,
    api_ca_pem: String,
    listen: u16,
    management: u16,
    dns: u16,
    pebble: Option<Child>,
    /// None when pebble resolves through a DNS server of the test's own.
    challtestsrv: Option<Child>,
    starts: usize,
    nonce_reject: u32,
    extras: Extras,
}

/// pebble's options beyond the ports and validity.
#[derive(Debug, Clone, Default)]
pub struct Extras {
    /// `externalAccountBindingRequired` with this one MAC key (key
    /// identifier, base64url HMAC key).
    pub binding: Option<(String, String)>,
    /// `PEBBLE_ALTERNATE_ROOTS`: chains to other roots offered besides
    /// the default one.
    pub alternate_roots: u32,
}

impl Pebble {
    /// Starts pebble validating HTTP-01 on `http_port` and TLS-ALPN-01 on
    /// `tls_port` of 127.0.0.1, issuing certificates valid for `validity`
    /// seconds (pebble's default: 5 years).
    pub async fn start(http_port: u16, tls_port: u16, validity: Option<u64>) -> Pebble {
        Self::start_with(http_port, tls_port, validity, 0).await
    }

    /// Like `start`, refusing `nonce_reject` percent of nonces with
    /// `badNonce` (pebble's default is 5), to exercise the client's retry.
    ///
    /// pebble and challtestsrv must be given their ports; a port found free
    /// can be taken by a test running alongside before they bind it, so a
    /// start that exits is tried again on other ports, and a start that
    /// never listens fails with what the program logged.
    pub async fn start_with(
        http_port: u16,
        tls_port: u16,
        validity: Option<u64>,
        nonce_reject: u32,
    ) -> Pebble {
        Self::start_on(http_port, tls_port, validity, nonce_reject, None).await
    }

    /// Starts pebble resolving every name through the DNS server on
    /// 127.0.0.1:`dns` (DNS-01 is validated against its real records),
    /// with no challtestsrv; HTTP-01 and TLS-ALPN-01 ports are unused.
    pub async fn start_with_dns(dns: u16, validity: Option<u64>) -> Pebble {
        Self::start_on(free_port(), free_port(), validity, 0, Some(dns)).await
    }

    /// Like `start`, with pebble's external account binding or alternate
    /// roots set up as `extras` says.
    pub async fn start_extras(http_port: u16, tls_port: u16, extras: Extras) -> Pebble {
        Self::start_full(http_port, tls_port, None, 0, None, extras).await
    }

    async fn start_on(
        http_port: u16,
        tls_port: u16,
        validity: Option<u64>,
        nonce_reject: u32,
        dns: Option<u16>,
    ) -> Pebble {
        Self::start_full(
            http_port,
            tls_port,
            validity,
            nonce_reject,
            dns,
            Extras::default(),
        )
        .await
    }

    async fn start_full(
        http_port: u16,
        tls_port: u16,
        validity: Option<u64>,
        nonce_reject: u32,
        dns: Option<u16>,
        extras: Extras,
    ) -> Pebble {
        let dir = tempfile::tempdir().expect("tempdir");
        let ca = TestCa::new("pebble API test CA");
        let (cert, key) = ca.issue(&["localhost", "127.0.0.1"]);
        std::fs::write(dir.path().join("cert.pem"), cert).unwrap();
        std::fs::write(dir.path().join("key.pem"), key).unwrap();
        let api_ca = dir.path().join("api-ca.pem");
        std::fs::write(&api_ca, ca.pem()).unwrap();
        let (challtestsrv, dns) = match dns {
            Some(port) => (None, port),
            None => {
                let (child, port) = start_challtestsrv(dir.path()).await;
                (Some(child), port)
            }
        };
        let mut pebble = Pebble {
            directory: String::new(),
            api_ca_pem: ca.pem(),
            api_ca,
            dir,
            listen: 0,
            management: 0,
            dns,
            pebble: None,
            challtestsrv,
            starts: 0,
            nonce_reject,
            extras,
        };
        for attempt in 1..=ATTEMPTS {
            pebble.listen = free_port();
            pebble.management = free_port();
            pebble.write_config(http_port, tls_port, validity);
            if pebble.start_pebble().await {
                pebble.directory = format!("https://127.0.0.1:{}/dir", pebble.listen);
                return pebble;
            }
            eprintln!("pebble did not start (attempt {attempt}); trying other ports");
        }
        panic!(
            "pebble did not start in {ATTEMPTS} attempts; its log:\n{}",
            pebble.log()
        );
    }

    fn write_config(&self, http_port: u16, tls_port: u16, validity: Option<u64>) {
        let mut config = serde_json::json!({"pebble": {
            "listenAddress": format!("127.0.0.1:{}", self.listen),
            "managementListenAddress": format!("127.0.0.1:{}", self.management),
            "certificate": "cert.pem",
            "privateKey": "key.pem",
            "httpPort": http_port,
            "tlsPort": tls_port,
            "ocspResponderURL": "",
            "externalAccountBindingRequired": false,
        }});
        if let Some(v) = validity {
            config["pebble"]["certificateValidityPeriod"] = v.into();
        }
        if let Some((kid, key)) = &self.extras.binding {
            config["pebble"]["externalAccountBindingRequired"] = true.into();
            config["pebble"]["externalAccountMACKeys"] = serde_json::json!({ kid: key });
        }
        std::fs::write(self.dir.path().join("pebble.json"), config.to_string()).unwrap();
    }

    /// Starts pebble on its configured ports; false when it exits before
    /// it listens (a port was taken).
    async fn start_pebble(&mut self) -> bool {
        self.starts += 1;
        let log = std::fs::File::create(self.log_path(self.starts)).unwrap();
        let child = Command::new("pebble")
            .args([
                "-config",
                "pebble.json",
                "-dnsserver",
                &format!("127.0.0.1:{}", self.dns),
            ])
            .current_dir(self.dir.path())
            .env("PEBBLE_VA_NOSLEEP", "1")
            .env("PEBBLE_WFE_NONCEREJECT", self.nonce_reject.to_string())
            .env(
                "PEBBLE_ALTERNATE_ROOTS",
                self.extras.alternate_roots.to_string(),
            )
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start pebble");
        let child = self.pebble.insert(child);
        match listens(child, self.listen).await {
            Ok(()) => true,
            Err(Exit) => {
                self.pebble = None;
                false
            }
            Err(Silent) => panic!(
                "pebble did not listen on 127.0.0.1:{} within 20 s; its log:\n{}",
                self.listen,
                self.log()
            ),
        }
    }

    fn log_path(&self, start: usize) -> PathBuf {
        self.dir.path().join(format!("pebble-{start}.log"))
    }

    /// The flags that point resolver `name` at this pebble: its directory
    /// and the CA of its HTTPS endpoints.
    pub fn resolver_flags(&self, name: &str) -> Vec<String> {
        vec![
            format!(
                "--certificatesResolvers.{name}.acme.caServer={}",
                self.directory
            ),
            format!(
                "--certificatesResolvers.{name}.acme.caCertificates={}",
                self.api_ca.display()
            ),
        ]
    }

    /// Everything pebble logged, over all its starts.
    pub fn log(&self) -> String {
        (1..=self.starts)
            .map(|i| std::fs::read_to_string(self.log_path(i)).unwrap_or_default())
            .collect()
    }

    /// New orders pebble accepted so far (one log line each).
    pub fn orders(&self) -> usize {
        self.log()
            .lines()
            .filter(|l| l.contains("Added order"))
            .count()
    }

    /// Stops pebble (challtestsrv stays).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.pebble.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts pebble again with the same ports and configuration (it forgets
    /// accounts and makes a new issuing root).
    pub async fn restart(&mut self) {
        self.stop();
        if !self.start_pebble().await {
            panic!(
                "pebble did not start again on 127.0.0.1:{}; its log:\n{}",
                self.listen,
                self.log()
            );
        }
    }

    /// The root that certificates issued now chain to (PEM), from pebble's
    /// management API, fetched over TLS trusting pebble's API CA.
    pub async fn issuing_root(&self) -> Vec<u8> {
        self.root(0).await
    }

    /// Root `n` (PEM): 0 is the default chain's, 1… the alternates'.
    pub async fn root(&self, n: u32) -> Vec<u8> {
        let client = super::tls::TlsClient::trusting(self.api_ca_pem.as_bytes());
        let path = format!("/roots/{n}");
        let got = client
            .get(self.management, "127.0.0.1", None, &path, false)
            .await
            .expect("pebble root");
        assert_eq!(got.status, 200, "pebble {path}: {}", got.text());
        got.body.to_vec()
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Pebble {
    fn drop(&mut self) {
        self.stop();
        if let Some(mut child) = self.challtestsrv.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// How many sets of ports a start tries.
const ATTEMPTS: usize = 5;

/// Why a program did not come to listen.
#[derive(Debug)]
pub enum NotListening {
    /// It exited (most likely: the port was taken meanwhile).
    Exit,
    /// It runs, but does not listen within 20 s.
    Silent,
}
pub use NotListening::{Exit, Silent};

/// Waits until `child` accepts connections on 127.0.0.1:`port`.
pub async fn listens(child: &mut Child, port: u16) -> Result<(), NotListening> {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return Ok(());
        }
        if !matches!(child.try_wait(), Ok(None)) {
            return Err(Exit);
        }
        if std::time::Instant::now() > deadline {
            return Err(Silent);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// pebble's DNS server, answering 127.0.0.1 for every name; returns it and
/// its DNS port (ready once its management port listens: it opens that
/// after its DNS listeners).
async fn start_challtestsrv(dir: &Path) -> (Child, u16) {
    let log_path = dir.join("challtestsrv.log");
    for attempt in 1..=ATTEMPTS {
        let (dns, management) = (free_port(), free_port());
        let log = std::fs::File::create(&log_path).unwrap();
        let mut child = Command::new("pebble-challtestsrv")
            .args([
                "-defaultIPv4",
                "127.0.0.1",
                "-defaultIPv6",
                "",
                "-dns01",
                &format!("127.0.0.1:{dns}"),
                "-http01",
                "",
                "-https01",
                "",
                "-tlsalpn01",
                "",
                "-management",
                &format!("127.0.0.1:{management}"),
            ])
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start pebble-challtestsrv");
        match listens(&mut child, management).await {
            Ok(()) => return (child, dns),
            Err(Exit) => {
                eprintln!(
                    "pebble-challtestsrv did not start (attempt {attempt}); trying other ports"
                );
            }
            Err(Silent) => {
                let _ = child.kill();
                panic!(
                    "pebble-challtestsrv did not listen within 20 s; its log:\n{}",
                    std::fs::read_to_string(&log_path).unwrap_or_default()
                );
            }
        }
    }
    panic!(
        "pebble-challtestsrv did not start in {ATTEMPTS} attempts; its log:\n{}",
        std::fs::read_to_string(&log_path).unwrap_or_default()
    );
}
