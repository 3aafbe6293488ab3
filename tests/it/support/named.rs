//! A real authoritative DNS server for the DNS-01 tests: Debian's BIND
//! (`named`), started per test in a temporary folder on a free loopback
//! port, serving the zone `test.` and accepting dynamic updates (RFC 2136)
//! signed with the TSIG key [`KEY`].

use super::free_port;
use super::pebble::{NotListening, listens};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// The TSIG key's name.
pub const KEY: &str = "gangway-key";
/// Its secret (base64), as the server knows it.
pub const SECRET: &str = "Z2FuZ3dheSB0ZXN0IFRTSUcga2V5LCAzMiBieXRlcyE=";
/// A secret of the right shape that the server does not know.
pub const WRONG_SECRET: &str = "d3Jvbmcgc2VjcmV0LCB3cm9uZyBzZWNyZXQsIHdyb25n";

/// Where Debian puts the server.
const NAMED: &str = "/usr/sbin/named";

/// Whether `named`, `nsupdate` and `dig` are installed. Without them a
/// test skips, except under `GANGWAY_TEST_STRICT=1`, where it fails.
pub fn available(test: &str) -> bool {
    let found = std::path::Path::new(NAMED).exists()
        && ["nsupdate", "dig"].iter().all(|b| {
            Command::new("sh")
                .arg("-c")
                .arg(format!("command -v {b}"))
                .stdout(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        });
    if !found {
        if std::env::var("GANGWAY_TEST_STRICT").as_deref() == Ok("1") {
            panic!(
                "{test}: bind9 / bind9-dnsutils are not installed (scripts/ci/pebble-up installs them)"
            );
        }
        eprintln!("{test}: SKIPPED: named, nsupdate or dig is not installed");
    }
    found
}

pub struct Named {
    dir: tempfile::TempDir,
    /// The port on 127.0.0.1 (UDP and TCP).
    pub port: u16,
    child: Option<Child>,
}

/// How many ports a start tries.
const ATTEMPTS: usize = 5;

impl Named {
    /// Starts the server with the zone `test.`: `ns.test`, `apps.test` and
    /// `*.apps.test` resolve to 127.0.0.1; and the zone `duckdns.org.`,
    /// where `apps.duckdns.org` and `*.apps.duckdns.org` do (a Duck DNS
    /// subdomain's names).
    pub async fn start() -> Named {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join("test.zone"),
            "$TTL 60\n\
             @ IN SOA ns.test. hostmaster.test. 1 60 60 600 5\n\
             @ IN NS ns.test.\n\
             ns IN A 127.0.0.1\n\
             apps IN A 127.0.0.1\n\
             *.apps IN A 127.0.0.1\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("duckdns.zone"),
            "$TTL 60\n\
             @ IN SOA ns.test. hostmaster.test. 1 60 60 600 5\n\
             @ IN NS ns.test.\n\
             apps IN A 127.0.0.1\n\
             *.apps IN A 127.0.0.1\n",
        )
        .unwrap();
        let mut named = Named {
            dir,
            port: 0,
            child: None,
        };
        for attempt in 1..=ATTEMPTS {
            named.port = free_port();
            named.write_config();
            let log = std::fs::File::create(named.log_path()).unwrap();
            let child = Command::new(NAMED)
                .args(["-g", "-4", "-c"])
                .arg(named.dir.path().join("named.conf"))
                .stdin(Stdio::null())
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .spawn()
                .expect("start named");
            let child = named.child.insert(child);
            match listens(child, named.port).await {
                Ok(()) => return named,
                Err(NotListening::Exit) => {
                    named.child = None;
                    eprintln!(
                        "named did not start (attempt {attempt}); its log:\n{}",
                        named.log()
                    );
                }
                Err(NotListening::Silent) => {
                    panic!(
                        "named did not listen within 20 s; its log:\n{}",
                        named.log()
                    )
                }
            }
        }
        panic!(
            "named did not start in {ATTEMPTS} attempts; its log:\n{}",
            named.log()
        );
    }

    fn write_config(&self) {
        let d = self.dir.path().display();
        let port = self.port;
        std::fs::write(
            self.dir.path().join("named.conf"),
            format!(
                r#"options {{
  directory "{d}";
  pid-file "{d}/named.pid";
  session-keyfile "{d}/session.key";
  managed-keys-directory "{d}";
  listen-on port {port} {{ 127.0.0.1; }};
  listen-on-v6 {{ none; }};
  recursion no;
  dnssec-validation no;
  notify no;
  allow-query {{ any; }};
}};
controls {{ }};
key "{KEY}" {{ algorithm hmac-sha256; secret "{SECRET}"; }};
zone "test." {{
  type primary;
  file "{d}/test.zone";
  allow-update {{ key "{KEY}"; }};
}};
zone "duckdns.org." {{
  type primary;
  file "{d}/duckdns.zone";
  allow-update {{ key "{KEY}"; }};
}};
"#
            ),
        )
        .unwrap();
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("named.log")
    }

    /// Everything named logged.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// The server as `RFC2136_NAMESERVER` and `dnsChallenge.resolvers` name it.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The TXT values at `name`, asked with `dig` over TCP.
    pub async fn txt(&self, name: &str) -> Vec<String> {
        let out = tokio::process::Command::new("dig")
            .args([
                "@127.0.0.1",
                "-p",
                &self.port.to_string(),
                "+tcp",
                "+short",
                name,
                "TXT",
            ])
            .output()
            .await
            .expect("run dig");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.trim().trim_matches('"').to_owned())
            .filter(|l| !l.is_empty())
            .collect()
    }

    /// An `nsupdate` script's first lines: the key and this server.
    pub fn nsupdate_header(&self) -> String {
        format!(
            "key hmac-sha256:{KEY} {SECRET}\nserver 127.0.0.1 {}\n",
            self.port
        )
    }
}

impl Drop for Named {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
