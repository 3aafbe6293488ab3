//! DNS-01 against real parts: Debian's BIND (`named`) serving the zone
//! `test.` on a loopback port of each test's own, accepting TSIG-signed
//! updates; pebble resolving every name through it, so that it validates
//! the TXT records gangway really published. Covers wildcard certificates,
//! the three providers (`rfc2136`, `exec` with `nsupdate`, `httpreq`) and
//! each DNS host API provider through a stand-in of its API, a
//! wrong TSIG secret, and renewal.

use crate::support;

use bytes::Bytes;
use http::StatusCode;
use http_body_util::{BodyExt, Full};
use std::os::unix::fs::PermissionsExt;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::named::{self, KEY, Named, SECRET, WRONG_SECRET};
use support::pebble::{self, Pebble};
use support::tls::TlsClient;
use support::{Backend, Gangway, eventually, free_port};

/// Time for one certificate from pebble (a few seconds here).
const ISSUE: Duration = Duration::from_secs(60);

/// Whether named and pebble can run here (skips, or fails under
/// `GANGWAY_TEST_STRICT=1`).
fn ready(test: &str) -> bool {
    named::available(test) && pebble::available(test)
}

/// A dynamic configuration: a backend, the API on `gw.test`, and one TLS
/// router per (name, rule, resolver, extra TOML lines of its `tls`).
fn routers(backend: &str, routers: &[(&str, &str, &str, &str)]) -> String {
    let mut s = format!(
        "[http.services.app.loadBalancer]\n[[http.services.app.loadBalancer.servers]]\nurl = \"{backend}\"\n\
         [http.routers.gw]\nrule = \"Host(`gw.test`)\"\nservice = \"api@internal\"\n"
    );
    for (name, rule, resolver, tls) in routers {
        s.push_str(&format!(
            "[http.routers.{name}]\nrule = \"{rule}\"\nservice = \"app\"\n[http.routers.{name}.tls]\ncertResolver = \"{resolver}\"\n{tls}"
        ));
    }
    s
}

/// named, pebble resolving through it, and where gangway listens for TLS.
struct Setup {
    named: Named,
    pebble: Pebble,
    /// The TLS port of the newest gangway (each gets a fresh one: a port
    /// found free may be taken by another test's connection meanwhile).
    tls: std::sync::atomic::AtomicU16,
    storage: tempfile::TempDir,
}

impl Setup {
    async fn start(validity: Option<u64>) -> Setup {
        let named = Named::start().await;
        let pebble = Pebble::start_with_dns(named.port, validity).await;
        Setup {
            named,
            pebble,
            tls: std::sync::atomic::AtomicU16::new(free_port()),
            storage: tempfile::tempdir().unwrap(),
        }
    }

    /// Where the newest gangway listens for TLS.
    fn tls(&self) -> u16 {
        self.tls.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The flags of a resolver `name` on this pebble (with `provider`, if any).
    fn resolver(&self, name: &str, provider: Option<&str>) -> Vec<String> {
        let mut flags = self.pebble.resolver_flags(name);
        flags.push(format!(
            "--certificatesResolvers.{name}.acme.storage={}",
            self.storage.path().join(name).display()
        ));
        if let Some(provider) = provider {
            flags.push(format!(
                "--certificatesResolvers.{name}.acme.dnsChallenge.provider={provider}"
            ));
            flags.push(format!(
                "--certificatesResolvers.{name}.acme.dnsChallenge.resolvers={}",
                self.named.address()
            ));
        }
        flags
    }

    /// gangway with resolver `le` answering DNS-01 through `provider`.
    async fn gangway(
        &self,
        dynamic: &str,
        provider: &str,
        env: &[(&str, &str)],
        extra: &[&str],
    ) -> Gangway {
        self.tls
            .store(free_port(), std::sync::atomic::Ordering::Relaxed);
        let mut flags = vec![
            format!("--entryPoints.websecure.address=127.0.0.1:{}", self.tls()),
            "--api=true".to_owned(),
        ];
        flags.extend(self.resolver("le", Some(provider)));
        flags.extend(extra.iter().map(|s| (*s).to_owned()));
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        Gangway::with_file_env(dynamic, &flags, env).await
    }

    /// The environment of the `rfc2136` provider for this named.
    fn rfc2136_env(&self, secret: &'static str) -> Vec<(&'static str, String)> {
        vec![
            ("RFC2136_NAMESERVER", self.named.address()),
            ("RFC2136_TSIG_KEY", KEY.to_owned()),
            ("RFC2136_TSIG_SECRET", secret.to_owned()),
            ("RFC2136_TSIG_ALGORITHM", "hmac-sha256.".to_owned()),
        ]
    }

    /// Waits until `host` is served with a pebble certificate naming
    /// `names`; returns a client trusting pebble's root.
    async fn wait_for_certificate(&self, host: &str, names: &[&str]) -> TlsClient {
        let client = TlsClient::trusting(&self.pebble.issuing_root().await);
        let tls = self.tls();
        eventually(
            ISSUE,
            &format!("a certificate {names:?} for {host}"),
            || {
                let client = client.clone();
                async move {
                    client
                        .get(tls, host, None, "/", true)
                        .await
                        .is_ok_and(|g| g.status == StatusCode::OK && g.names() == names)
                }
            },
        )
        .await;
        client
    }
}

fn env_refs<'a>(env: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    env.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// `/api/tls/certificates` (null until the router to the API is loaded).
async fn certificates(gw: &Gangway) -> serde_json::Value {
    serde_json::from_slice(&gw.get("gw.test", "/api/tls/certificates").await.body)
        .unwrap_or_default()
}

/// The ACME certificate whose main name is `main`, if listed.
fn cert(certs: &serde_json::Value, main: &str) -> Option<serde_json::Value> {
    certs
        .as_array()?
        .iter()
        .find(|c| c["source"] == "acme" && c["domains"][0] == main)
        .cloned()
}

#[tokio::test]
async fn a_wildcard_certificate_from_rfc2136_serves_every_host_under_it_and_an_exact_one_wins() {
    if !ready("a_wildcard_certificate_from_rfc2136") {
        return;
    }
    let app = Backend::echo("app").await;
    let setup = Setup::start(None).await;
    let dynamic = routers(
        &app.url(),
        &[
            ("wild", "Host(`*.apps.test`)", "le", ""),
            ("exact", "Host(`exact.apps.test`)", "le", ""),
            ("other", "Host(`*.other.test`)", "plain", ""),
        ],
    );
    let env = setup.rfc2136_env(SECRET);
    let mut extra = setup.resolver("plain", None);
    // The record stays up at least this long, so the test sees it.
    extra.push(
        "--certificatesResolvers.le.acme.dnsChallenge.propagation.delayBeforeChecks=2s".to_owned(),
    );
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let gw = setup
        .gangway(&dynamic, "rfc2136", &env_refs(&env), &extra)
        .await;

    // The TXT record is on the real server while the CA validates, and the
    // API shows the pending challenge with its name.
    let fqdn = "_acme-challenge.apps.test";
    eventually(ISSUE, "the TXT record published on named", || async {
        !setup.named.txt(fqdn).await.is_empty()
    })
    .await;
    let during = setup.named.txt(fqdn).await;
    assert_eq!(during.len(), 1, "{during:?}");
    assert_eq!(during[0].len(), 43, "a base64url SHA-256: {during:?}");
    let certs = certificates(&gw).await;
    let wild = cert(&certs, "*.apps.test").expect("the wildcard certificate listed");
    assert_eq!(wild["challenge"], "dns-01");
    assert_eq!(wild["pendingChallenge"]["type"], "dns-01", "{wild}");
    assert_eq!(
        wild["pendingChallenge"]["fqdn"],
        format!("{fqdn}."),
        "{wild}"
    );
    assert_eq!(wild["pendingChallenge"]["domain"], "apps.test", "{wild}");
    let resolvers: serde_json::Value =
        serde_json::from_slice(&gw.get("gw.test", "/api/certificateresolvers").await.body).unwrap();
    let le = resolvers
        .as_array()
        .and_then(|a| a.iter().find(|r| r["name"] == "le"))
        .expect("resolver le listed");
    assert_eq!(le["challenge"], "dns-01", "{resolvers}");
    assert_eq!(le["dnsChallenge"]["provider"], "rfc2136", "{resolvers}");
    assert!(
        le["pendingChallenges"]
            .as_array()
            .is_some_and(|p| p.iter().any(|c| c["fqdn"] == format!("{fqdn}."))),
        "{resolvers}"
    );

    // One wildcard certificate serves every host under it; the host with
    // its own certificate gets that one.
    let client = setup
        .wait_for_certificate("one.apps.test", &["*.apps.test"])
        .await;
    let two = client
        .get(setup.tls(), "two.apps.test", None, "/", true)
        .await
        .expect("the wildcard is valid for two.apps.test");
    assert_eq!(two.names(), ["*.apps.test"]);
    setup
        .wait_for_certificate("exact.apps.test", &["exact.apps.test"])
        .await;

    // The records are gone once validated.
    for name in [fqdn, "_acme-challenge.exact.apps.test"] {
        eventually(
            Duration::from_secs(10),
            &format!("{name} removed"),
            || async { setup.named.txt(name).await.is_empty() },
        )
        .await;
    }
    let certs = certificates(&gw).await;
    let wild = cert(&certs, "*.apps.test").unwrap();
    assert_eq!(wild["status"], "valid", "{wild}");
    assert!(wild.get("pendingChallenge").is_none(), "{wild}");

    // A wildcard on a resolver without DNS-01 is an error on its router,
    // with the reason, and is never ordered.
    let other = gw
        .get("gw.test", "/api/http/routers/other@file")
        .await
        .text();
    assert!(
        other.contains("no certificate is ordered for `*.other.test`")
            && other.contains("resolver `plain` has no dnsChallenge"),
        "{other}"
    );
    assert!(!setup.pebble.log().contains("other.test"));
    assert_eq!(setup.pebble.orders(), 2, "{}", setup.pebble.log());
}

#[tokio::test]
async fn a_wrong_tsig_secret_is_an_error_on_resolver_and_router_retried_while_the_default_certificate_is_served()
 {
    if !ready("a_wrong_tsig_secret") {
        return;
    }
    let app = Backend::echo("app").await;
    let setup = Setup::start(None).await;
    let dynamic = routers(&app.url(), &[("wild", "Host(`*.apps.test`)", "le", "")]);
    let env = setup.rfc2136_env(WRONG_SECRET);
    let gw = setup
        .gangway(&dynamic, "rfc2136", &env_refs(&env), &[])
        .await;

    // Failed twice: the second attempt came after the backoff.
    eventually(Duration::from_secs(60), "two failed orders", || async {
        cert(&certificates(&gw).await, "*.apps.test")
            .is_some_and(|c| c["failures"].as_u64().unwrap_or(0) >= 2)
    })
    .await;
    let wild = cert(&certificates(&gw).await, "*.apps.test").unwrap();
    let error = wild["lastError"].as_str().unwrap_or_default().to_owned();
    eprintln!("lastError: {error}");
    let server = setup.named.address();
    for part in [
        "DNS-01 challenge for `apps.test`",
        "rfc2136: adding `_acme-challenge.apps.test.`",
        server.as_str(),
        "was refused: NOTAUTH",
        "TSIG",
    ] {
        assert!(error.contains(part), "`{part}` in: {error}");
    }
    assert_eq!(wild["status"], "error");
    assert!(wild["nextAttempt"].as_i64().is_some(), "{wild}");
    // The secret is nowhere: not in the API, not in the log.
    assert!(!wild.to_string().contains(WRONG_SECRET));
    assert!(!gw.log().contains(WRONG_SECRET));
    assert!(
        gw.log().contains("certificate order failed"),
        "{}",
        gw.log()
    );

    // So do the resolver…
    let resolvers: serde_json::Value =
        serde_json::from_slice(&gw.get("gw.test", "/api/certificateresolvers").await.body).unwrap();
    assert_eq!(resolvers[0]["name"], "le", "{resolvers}");
    assert_eq!(resolvers[0]["failing"], 1, "{resolvers}");
    assert!(
        resolvers[0]["errors"][0]
            .as_str()
            .is_some_and(|e| e.contains("NOTAUTH")),
        "{resolvers}"
    );
    assert!(!resolvers.to_string().contains(WRONG_SECRET));

    // …and the router.
    let router: serde_json::Value =
        serde_json::from_slice(&gw.get("gw.test", "/api/http/routers/wild@file").await.body)
            .unwrap();
    let errors = &router["certificateErrors"];
    assert_eq!(errors[0]["resolver"], "le", "{router}");
    assert_eq!(errors[0]["domains"][0], "*.apps.test", "{router}");
    assert!(
        errors[0]["error"]
            .as_str()
            .unwrap_or_default()
            .contains("TSIG"),
        "{router}"
    );

    // Meanwhile the hosts get the default certificate.
    let served = TlsClient::insecure()
        .get(setup.tls(), "one.apps.test", None, "/", true)
        .await
        .expect("a handshake with the default certificate");
    assert_eq!(served.common_name(), "GANGWAY DEFAULT CERT");
    assert_eq!(setup.pebble.log().matches("Added order").count(), 2);
}

#[tokio::test]
async fn the_exec_provider_runs_a_script_that_updates_with_nsupdate() {
    if !ready("the_exec_provider") {
        return;
    }
    let app = Backend::echo("app").await;
    let setup = Setup::start(None).await;
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls.log");
    let script = dir.path().join("dns-hook.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nset -e\necho \"$1 $2\" >> '{calls}'\n\
             case \"$1\" in present) op=add;; cleanup) op=delete;; *) exit 2;; esac\n\
             nsupdate <<EOF\n{header}update $op $2 60 TXT \"$3\"\nsend\nEOF\n",
            calls = calls.display(),
            header = setup.named.nsupdate_header(),
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let dynamic = routers(
        &app.url(),
        &[("hooked", "Host(`exec.apps.test`)", "le", "")],
    );
    let path = script.display().to_string();
    let _gw = setup
        .gangway(&dynamic, "exec", &[("EXEC_PATH", path.as_str())], &[])
        .await;
    setup
        .wait_for_certificate("exec.apps.test", &["exec.apps.test"])
        .await;
    let fqdn = "_acme-challenge.exec.apps.test.";
    eventually(Duration::from_secs(10), "present, then cleanup", || async {
        std::fs::read_to_string(&calls).unwrap_or_default()
            == format!("present {fqdn}\ncleanup {fqdn}\n")
    })
    .await;
    assert!(setup.named.txt(fqdn).await.is_empty());
}

#[tokio::test]
async fn the_httpreq_provider_posts_to_an_endpoint_that_updates_the_server() {
    if !ready("the_httpreq_provider") {
        return;
    }
    let app = Backend::echo("app").await;
    let setup = Setup::start(None).await;
    let header = setup.named.nsupdate_header();
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let endpoint = {
        let seen = seen.clone();
        Backend::serve(move |req: http::Request<hyper::body::Incoming>| {
            let (seen, header) = (seen.clone(), header.clone());
            async move {
                let path = req.uri().path().to_owned();
                let auth = req
                    .headers()
                    .get(http::header::AUTHORIZATION)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_owned();
                let body = req.into_body().collect().await.unwrap().to_bytes();
                let reply = |status: StatusCode, text: String| {
                    http::Response::builder()
                        .status(status)
                        .body(Full::new(Bytes::from(text)))
                        .unwrap()
                };
                // "dns:s3cret" in base64.
                if auth != "Basic ZG5zOnMzY3JldA==" {
                    return reply(StatusCode::UNAUTHORIZED, "who are you".into());
                }
                let json: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                let (Some(fqdn), Some(value)) = (json["fqdn"].as_str(), json["value"].as_str())
                else {
                    return reply(StatusCode::BAD_REQUEST, "fqdn and value please".into());
                };
                let op = match path.as_str() {
                    "/dns/present" => "add",
                    "/dns/cleanup" => "delete",
                    _ => return reply(StatusCode::NOT_FOUND, path),
                };
                seen.lock().unwrap().push(format!("{path} {fqdn}"));
                let mut child = tokio::process::Command::new("nsupdate")
                    .stdin(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap();
                let script = format!("{header}update {op} {fqdn} 60 TXT \"{value}\"\nsend\n");
                use tokio::io::AsyncWriteExt;
                let mut stdin = child.stdin.take().unwrap();
                stdin.write_all(script.as_bytes()).await.unwrap();
                drop(stdin);
                let out = child.wait_with_output().await.unwrap();
                if out.status.success() {
                    reply(StatusCode::OK, String::new())
                } else {
                    reply(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        String::from_utf8_lossy(&out.stderr).into_owned(),
                    )
                }
            }
        })
        .await
    };
    let dynamic = routers(
        &app.url(),
        &[("posted", "Host(`http.apps.test`)", "le", "")],
    );
    let url = format!("{}/dns", endpoint.url());
    let gw = setup
        .gangway(
            &dynamic,
            "httpreq",
            &[
                ("HTTPREQ_ENDPOINT", url.as_str()),
                ("HTTPREQ_USERNAME", "dns"),
                ("HTTPREQ_PASSWORD", "s3cret"),
            ],
            &[],
        )
        .await;
    setup
        .wait_for_certificate("http.apps.test", &["http.apps.test"])
        .await;
    let fqdn = "_acme-challenge.http.apps.test.";
    eventually(Duration::from_secs(10), "present, then cleanup", || async {
        *seen.lock().unwrap()
            == [
                format!("/dns/present {fqdn}"),
                format!("/dns/cleanup {fqdn}"),
            ]
    })
    .await;
    assert!(setup.named.txt(fqdn).await.is_empty());
    assert!(!gw.log().contains("s3cret"));
}

#[tokio::test]
async fn a_short_lived_wildcard_certificate_is_renewed() {
    if !ready("a_short_lived_wildcard_certificate_is_renewed") {
        return;
    }
    let app = Backend::echo("app").await;
    // 30 s certificates: renewal when 10 s are left.
    let setup = Setup::start(Some(30)).await;
    let dynamic = routers(
        &app.url(),
        &[(
            "site",
            "Host(`www.apps.test`)",
            "le",
            "[[http.routers.site.tls.domains]]\nmain = \"*.apps.test\"\nsans = [\"apps.test\"]\n",
        )],
    );
    let env = setup.rfc2136_env(SECRET);
    let _gw = setup
        .gangway(&dynamic, "rfc2136", &env_refs(&env), &[])
        .await;
    let names = ["*.apps.test", "apps.test"];
    let client = setup.wait_for_certificate("www.apps.test", &names).await;
    let first = client
        .get(setup.tls(), "www.apps.test", None, "/", true)
        .await
        .unwrap();
    eventually(Duration::from_secs(60), "a renewed certificate", || {
        let client = client.clone();
        let first = first.serial();
        let tls = setup.tls();
        async move {
            client
                .get(tls, "www.apps.test", None, "/", true)
                .await
                .is_ok_and(|g| g.serial() != first)
        }
    })
    .await;
    let renewed = client
        .get(setup.tls(), "www.apps.test", None, "/", true)
        .await
        .unwrap();
    assert_eq!(renewed.names(), names);
    assert!(renewed.not_after() > first.not_after());
    assert!(setup.pebble.orders() >= 2);
}

#[tokio::test]
async fn a_record_that_never_shows_up_fails_naming_the_resolver_and_the_wait() {
    if !ready("a_record_that_never_shows_up") {
        return;
    }
    let app = Backend::echo("app").await;
    let setup = Setup::start(None).await;
    let dir = tempfile::tempdir().unwrap();
    // Says it published the record, and did not.
    let script = dir.path().join("liar.sh");
    std::fs::write(&script, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = script.display().to_string();
    let dynamic = routers(&app.url(), &[("lost", "Host(`lost.apps.test`)", "le", "")]);
    let gw = setup
        .gangway(
            &dynamic,
            "exec",
            &[
                ("EXEC_PATH", path.as_str()),
                ("EXEC_PROPAGATION_TIMEOUT", "3"),
                ("EXEC_POLLING_INTERVAL", "1"),
            ],
            &[],
        )
        .await;
    eventually(Duration::from_secs(30), "a failed order", || async {
        cert(&certificates(&gw).await, "lost.apps.test")
            .is_some_and(|c| c["failures"].as_u64().unwrap_or(0) >= 1)
    })
    .await;
    let lost = cert(&certificates(&gw).await, "lost.apps.test").unwrap();
    let error = lost["lastError"].as_str().unwrap_or_default();
    eprintln!("lastError: {error}");
    assert!(
        error.starts_with(&format!(
            "DNS-01 challenge for `lost.apps.test`: the TXT record \
             `_acme-challenge.lost.apps.test.` was not visible at {} after ",
            setup.named.address()
        )) && error.ends_with("s (it answered no TXT record)"),
        "{error}"
    );
    // The CA was never told to look.
    assert!(
        !setup.pebble.log().contains("Attempting to validate"),
        "{}",
        setup.pebble.log()
    );
}

// === DNS hosts' APIs, stood in for ===

/// Runs `nsupdate` against `named` for one TXT record (`op`: add or delete);
/// its stderr when it fails.
async fn nsupdate(header: &str, op: &str, fqdn: &str, value: &str) -> Result<(), String> {
    use tokio::io::AsyncWriteExt;
    let mut child = tokio::process::Command::new("nsupdate")
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let script = format!("{header}update {op} {fqdn} 60 TXT \"{value}\"\nsend\n");
    let mut stdin = child.stdin.take().expect("piped stdin");
    stdin
        .write_all(script.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    drop(stdin);
    let out = child.wait_with_output().await.map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

fn json_reply(status: StatusCode, body: &serde_json::Value) -> http::Response<Full<Bytes>> {
    http::Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap()
}

/// What a stand-in API saw and holds.
#[derive(Default)]
struct Seen {
    /// `METHOD path?query` of every request, in order.
    calls: Vec<String>,
    /// The records it holds: (id, name, content).
    records: Vec<(String, String, String)>,
    /// How many record creations are still answered 429.
    rate_limited: u32,
    next_id: u32,
}

/// The token the Cloudflare stand-in accepts.
const CF_TOKEN: &str = "cf-token-Zx81kq";

/// Cloudflare's API v4 under `/client/v4`, for the calls gangway makes
/// (zones by name; TXT records: create, list by type and name, delete),
/// with its answer envelope (`success`, `errors: [{code, message}]`,
/// `result`), API token authentication, its TTL minimum, and its 429
/// answer; the account holds the zone `apps.test` (id `z-apps`), whose
/// records go into `named` through RFC 2136.
async fn cloudflare_api(header: String, seen: Arc<Mutex<Seen>>) -> Backend {
    Backend::serve(move |req: http::Request<hyper::body::Incoming>| {
        let (seen, header) = (seen.clone(), header.clone());
        async move {
            let method = req.method().clone();
            let path = req.uri().path().to_owned();
            let query = req.uri().query().unwrap_or_default().to_owned();
            let auth = req
                .headers()
                .get(http::header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            let json_body = req
                .headers()
                .get(http::header::CONTENT_TYPE)
                .is_some_and(|v| v == "application/json");
            let body = req.into_body().collect().await.unwrap().to_bytes();
            seen.lock()
                .unwrap()
                .calls
                .push(format!("{method} {path}?{query}"));
            let error = |status: StatusCode, code: u32, message: &str| {
                json_reply(status, &serde_json::json!({"success": false, "errors": [{"code": code, "message": message}], "messages": [], "result": null}),
                )
            };
            let ok = |result: serde_json::Value| {
                json_reply(StatusCode::OK, &serde_json::json!({"success": true, "errors": [], "messages": [], "result": result}),
                )
            };
            if auth != format!("Bearer {CF_TOKEN}") {
                return error(StatusCode::FORBIDDEN, 10000, "Authentication error");
            }
            let param = |name: &str| {
                query
                    .split('&')
                    .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
                    .unwrap_or_default()
                    .to_owned()
            };
            let Some(rest) = path.strip_prefix("/client/v4/zones") else {
                return error(StatusCode::NOT_FOUND, 7000, "No route for that URI");
            };
            match (method.as_str(), rest) {
                ("GET", "") => {
                    if param("name") == "apps.test" {
                        ok(serde_json::json!([{"id": "z-apps", "name": "apps.test", "status": "active"}]))
                    } else {
                        ok(serde_json::json!([]))
                    }
                }
                ("POST", "/z-apps/dns_records") => {
                    let record: serde_json::Value =
                        serde_json::from_slice(&body).unwrap_or_default();
                    let (Some(name), Some(content), Some(ttl)) = (
                        record["name"].as_str(),
                        record["content"].as_str(),
                        record["ttl"].as_u64(),
                    ) else {
                        return error(StatusCode::BAD_REQUEST, 9005, "Content for TXT record is invalid");
                    };
                    if !json_body || record["type"] != "TXT" {
                        return error(StatusCode::BAD_REQUEST, 1004, "DNS Validation Error");
                    }
                    if ttl != 1 && !(120..=86400).contains(&ttl) {
                        return error(StatusCode::BAD_REQUEST, 9021, "Invalid TTL. Must be between 120 and 2,147,483,647 seconds, or 1 for automatic");
                    }
                    {
                        let mut seen = seen.lock().unwrap();
                        if seen.rate_limited > 0 {
                            seen.rate_limited -= 1;
                            drop(seen);
                            let mut reply = error(StatusCode::TOO_MANY_REQUESTS, 971, "Please wait and consider throttling your request speed");
                            reply.headers_mut().insert(http::header::RETRY_AFTER, http::HeaderValue::from_static("1"));
                            return reply;
                        }
                    }
                    if let Err(e) = nsupdate(&header, "add", name, content).await {
                        return error(StatusCode::INTERNAL_SERVER_ERROR, 1000, &e);
                    }
                    let mut seen = seen.lock().unwrap();
                    seen.next_id += 1;
                    let id = format!("r{}", seen.next_id);
                    seen.records.push((id.clone(), name.to_owned(), content.to_owned()));
                    ok(serde_json::json!({"id": id, "type": "TXT", "name": name, "content": content, "ttl": ttl}))
                }
                ("GET", "/z-apps/dns_records") => {
                    let (rtype, name) = (param("type"), param("name"));
                    let records: Vec<serde_json::Value> = seen
                        .lock()
                        .unwrap()
                        .records
                        .iter()
                        .filter(|(_, n, _)| rtype == "TXT" && *n == name)
                        .map(|(id, n, c)| serde_json::json!({"id": id, "type": "TXT", "name": n, "content": c}))
                        .collect();
                    ok(serde_json::Value::Array(records))
                }
                ("DELETE", rest) => {
                    let id = rest.strip_prefix("/z-apps/dns_records/").unwrap_or_default();
                    let found = take_record(&seen, id);
                    let Some((id, name, content)) = found else {
                        return error(StatusCode::NOT_FOUND, 81044, "Record does not exist.");
                    };
                    if let Err(e) = nsupdate(&header, "delete", &name, &content).await {
                        return error(StatusCode::INTERNAL_SERVER_ERROR, 1000, &e);
                    }
                    ok(serde_json::json!({"id": id}))
                }
                _ => error(
                    StatusCode::NOT_FOUND,
                    7003,
                    "Could not route to /zones, perhaps your object identifier is invalid?",
                ),
            }
        }
    })
    .await
}

#[tokio::test]
async fn cloudflare_publishes_a_wildcard_and_its_apex_through_its_api_and_names_what_fails() {
    if !ready("cloudflare") {
        return;
    }
    let app = Backend::echo("app").await;
    let setup = Setup::start(None).await;
    let seen: Arc<Mutex<Seen>> = Arc::default();
    seen.lock().unwrap().rate_limited = 1;
    // Someone else's TXT record at the same name: it must stay.
    let theirs = "kept-by-someone-else";
    nsupdate(
        &setup.named.nsupdate_header(),
        "add",
        "_acme-challenge.apps.test",
        theirs,
    )
    .await
    .unwrap();
    seen.lock().unwrap().records.push((
        "r0".to_owned(),
        "_acme-challenge.apps.test".to_owned(),
        theirs.to_owned(),
    ));
    let api = cloudflare_api(setup.named.nsupdate_header(), seen.clone()).await;
    let base = format!("{}/client/v4", api.url());
    let dynamic = routers(
        &app.url(),
        &[
            (
                "site",
                "Host(`www.apps.test`)",
                "le",
                "[[http.routers.site.tls.domains]]\nmain = \"*.apps.test\"\nsans = [\"apps.test\"]\n",
            ),
            ("lost", "Host(`lost.elsewhere.test`)", "le", ""),
        ],
    );
    let gw = setup
        .gangway(
            &dynamic,
            "cloudflare",
            &[
                ("CF_DNS_API_TOKEN", CF_TOKEN),
                ("CLOUDFLARE_BASE_URL", base.as_str()),
            ],
            &[],
        )
        .await;

    // A wildcard and its apex: two values at one name, both validated by
    // pebble through named, after one 429 answered with a retry.
    setup
        .wait_for_certificate("www.apps.test", &["*.apps.test", "apps.test"])
        .await;
    assert!(
        gw.log().contains(
            "cloudflare: adding the TXT record `_acme-challenge.apps.test.` to zone `apps.test`: \
             the API answered 429 Too Many Requests: Please wait and consider throttling your \
             request speed (code 971); trying again in 1s"
        ),
        "{}",
        gw.log()
    );
    // Both records are removed after validation, on the API and on named;
    // the other value at that name is left alone.
    eventually(Duration::from_secs(10), "the records removed", || async {
        seen.lock().unwrap().records.len() == 1
            && setup.named.txt("_acme-challenge.apps.test").await == [theirs]
    })
    .await;
    assert_eq!(seen.lock().unwrap().records[0].0, "r0");
    let calls = seen.lock().unwrap().calls.clone();
    let count = |c: &str| calls.iter().filter(|x| *x == c).count();
    // Every record created was deleted; one creation was answered 429
    // first. (An order retried under load makes more calls, never fewer.)
    let created = seen.lock().unwrap().next_id as usize;
    assert!(created >= 2, "{calls:#?}");
    assert!(
        count("POST /client/v4/zones/z-apps/dns_records?") > created,
        "{calls:#?}"
    );
    assert_eq!(
        calls
            .iter()
            .filter(|c| c.starts_with("DELETE /client/v4/zones/z-apps/dns_records/r"))
            .count(),
        created,
        "{calls:#?}"
    );
    // The zone was found by walking up the name.
    assert!(count("GET /client/v4/zones?name=_acme-challenge.apps.test") >= 1);
    assert!(count("GET /client/v4/zones?name=apps.test") >= 2);
    assert!(
        count(
            "GET /client/v4/zones/z-apps/dns_records?type=TXT&name=_acme-challenge.apps.test&per_page=100"
        ) >= 2
    );

    // A name in no zone of the account: its sentence, and a retry later.
    eventually(Duration::from_secs(60), "two failed orders", || async {
        cert(&certificates(&gw).await, "lost.elsewhere.test")
            .is_some_and(|c| c["failures"].as_u64().unwrap_or(0) >= 2)
    })
    .await;
    let lost = cert(&certificates(&gw).await, "lost.elsewhere.test").unwrap();
    assert_eq!(
        lost["lastError"],
        "DNS-01 challenge for `lost.elsewhere.test`: cloudflare: finding the zone of \
         `_acme-challenge.lost.elsewhere.test.`: the account has no zone for it (asked for \
         _acme-challenge.lost.elsewhere.test, lost.elsewhere.test, elsewhere.test)",
        "{lost}"
    );
    assert!(lost["nextAttempt"].as_i64().is_some(), "{lost}");
    assert!(!gw.log().contains(CF_TOKEN));
    drop(gw);

    // A token the API refuses: the provider's own message, no secret, and
    // a retry later (on a name the first run holds no certificate for).
    let wrong = "cf-token-wrong-0xdead";
    let dynamic = routers(&app.url(), &[("deny", "Host(`*.sub.apps.test`)", "le", "")]);
    let gw = setup
        .gangway(
            &dynamic,
            "cloudflare",
            &[
                ("CF_DNS_API_TOKEN", wrong),
                ("CLOUDFLARE_BASE_URL", base.as_str()),
            ],
            &[],
        )
        .await;
    eventually(Duration::from_secs(60), "two refused orders", || async {
        cert(&certificates(&gw).await, "*.sub.apps.test")
            .is_some_and(|c| c["failures"].as_u64().unwrap_or(0) >= 2)
    })
    .await;
    let refused = cert(&certificates(&gw).await, "*.sub.apps.test").unwrap();
    assert_eq!(
        refused["lastError"],
        "DNS-01 challenge for `sub.apps.test`: cloudflare: finding the zone of \
         `_acme-challenge.sub.apps.test.`: the API refused the credentials (403 Forbidden): \
         Authentication error (code 10000)",
        "{refused}"
    );
    assert!(!refused.to_string().contains(wrong));
    assert!(!gw.log().contains(wrong));
}

/// The token the DigitalOcean stand-in accepts.
const DO_TOKEN: &str = "dop_v1_5e1f00d";

/// DigitalOcean's API v2 for the calls gangway makes (a domain by name;
/// a domain's records: create, list by type and full name, delete), with
/// its error shape (`{"id", "message"}`), bearer token authentication and
/// its TTL minimum; the account holds the domain `apps.test`, whose
/// records go into `named` through RFC 2136.
async fn digitalocean_api(header: String, seen: Arc<Mutex<Seen>>) -> Backend {
    Backend::serve(move |req: http::Request<hyper::body::Incoming>| {
        let (seen, header) = (seen.clone(), header.clone());
        async move {
            let method = req.method().clone();
            let path = req.uri().path().to_owned();
            let query = req.uri().query().unwrap_or_default().to_owned();
            let auth = req
                .headers()
                .get(http::header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            let body = req.into_body().collect().await.unwrap().to_bytes();
            seen.lock()
                .unwrap()
                .calls
                .push(format!("{method} {path}?{query}"));
            let error = |status: StatusCode, id: &str, message: &str| {
                json_reply(status, &serde_json::json!({"id": id, "message": message}))
            };
            if auth != format!("Bearer {DO_TOKEN}") {
                return error(StatusCode::UNAUTHORIZED, "unauthorized", "Unable to authenticate you");
            }
            let param = |name: &str| {
                query
                    .split('&')
                    .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
                    .unwrap_or_default()
                    .to_owned()
            };
            let not_found = || error(StatusCode::NOT_FOUND, "not_found", "The resource you were accessing could not be found.");
            let Some(rest) = path.strip_prefix("/v2/domains/") else {
                return not_found();
            };
            let (domain, rest) = rest.split_once('/').unwrap_or((rest, ""));
            if domain != "apps.test" {
                return not_found();
            }
            match (method.as_str(), rest) {
                ("GET", "") => json_reply(StatusCode::OK, &serde_json::json!({"domain": {"name": "apps.test", "ttl": 1800, "zone_file": ""}})),
                ("POST", "records") => {
                    let record: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                    let (Some(name), Some(data), Some(ttl)) = (record["name"].as_str(), record["data"].as_str(), record["ttl"].as_u64()) else {
                        return error(StatusCode::UNPROCESSABLE_ENTITY, "unprocessable_entity", "Name, data and ttl are required");
                    };
                    if record["type"] != "TXT" || name.ends_with('.') || name.contains("apps.test") {
                        return error(StatusCode::UNPROCESSABLE_ENTITY, "unprocessable_entity", "Name must be relative to the domain");
                    }
                    if ttl < 30 {
                        return error(StatusCode::UNPROCESSABLE_ENTITY, "unprocessable_entity", "TTL must be at least 30");
                    }
                    let fqdn = format!("{name}.apps.test");
                    if let Err(e) = nsupdate(&header, "add", &fqdn, data).await {
                        return error(StatusCode::INTERNAL_SERVER_ERROR, "server_error", &e);
                    }
                    let mut seen = seen.lock().unwrap();
                    seen.next_id += 1;
                    let id = seen.next_id;
                    seen.records.push((id.to_string(), fqdn, data.to_owned()));
                    json_reply(StatusCode::CREATED, &serde_json::json!({"domain_record": {"id": id, "type": "TXT", "name": name, "data": data, "ttl": ttl}}))
                }
                ("GET", "records") => {
                    let (rtype, name) = (param("type"), param("name"));
                    let records: Vec<serde_json::Value> = seen
                        .lock()
                        .unwrap()
                        .records
                        .iter()
                        .filter(|(_, n, _)| rtype == "TXT" && *n == name)
                        .map(|(id, n, d)| serde_json::json!({"id": id.parse::<u64>().unwrap_or(0), "type": "TXT", "name": n.trim_end_matches(".apps.test"), "data": d, "ttl": 30}))
                        .collect();
                    let total = records.len();
                    json_reply(StatusCode::OK, &serde_json::json!({"domain_records": records, "links": {}, "meta": {"total": total}}))
                }
                ("DELETE", rest) => {
                    let id = rest.strip_prefix("records/").unwrap_or_default();
                    let found = take_record(&seen, id);
                    let Some((_, fqdn, data)) = found else {
                        return not_found();
                    };
                    if let Err(e) = nsupdate(&header, "delete", &fqdn, &data).await {
                        return error(StatusCode::INTERNAL_SERVER_ERROR, "server_error", &e);
                    }
                    http::Response::builder()
                        .status(StatusCode::NO_CONTENT)
                        .body(Full::new(Bytes::new()))
                        .unwrap()
                }
                _ => not_found(),
            }
        }
    })
    .await
}

/// A DNS host's stand-in, made by `api` from the header that sends its
/// records to `named` through RFC 2136, beside pebble and `named`, with a
/// backend for the routers; None (after skipping) without those parts.
async fn with_stand_in<F, Fut>(
    provider: &str,
    api: F,
) -> Option<(Backend, Setup, Arc<Mutex<Seen>>, Backend)>
where
    F: FnOnce(String, Arc<Mutex<Seen>>) -> Fut,
    Fut: std::future::Future<Output = Backend>,
{
    if !ready(provider) {
        return None;
    }
    let app = Backend::echo("app").await;
    let setup = Setup::start(None).await;
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let api = api(setup.named.nsupdate_header(), seen.clone()).await;
    Some((app, setup, seen, api))
}

#[tokio::test]
async fn digitalocean_publishes_a_wildcard_and_its_apex_through_its_api() {
    let Some((app, setup, seen, api)) = with_stand_in("digitalocean", digitalocean_api).await
    else {
        return;
    };
    let dynamic = routers(
        &app.url(),
        &[(
            "site",
            "Host(`www.apps.test`)",
            "le",
            "[[http.routers.site.tls.domains]]\nmain = \"*.apps.test\"\nsans = [\"apps.test\"]\n",
        )],
    );
    let url = api.url();
    let gw = setup
        .gangway(
            &dynamic,
            "digitalocean",
            &[("DO_AUTH_TOKEN", DO_TOKEN), ("DO_API_URL", url.as_str())],
            &[],
        )
        .await;
    setup
        .wait_for_certificate("www.apps.test", &["*.apps.test", "apps.test"])
        .await;
    eventually(Duration::from_secs(10), "the records removed", || async {
        seen.lock().unwrap().records.is_empty()
            && setup
                .named
                .txt("_acme-challenge.apps.test")
                .await
                .is_empty()
    })
    .await;
    let calls = seen.lock().unwrap().calls.clone();
    let count = |c: &str| calls.iter().filter(|x| *x == c).count();
    // Every record created was deleted.
    let created = seen.lock().unwrap().next_id as usize;
    assert!(created >= 2, "{calls:#?}");
    assert_eq!(
        count("POST /v2/domains/apps.test/records?"),
        created,
        "{calls:#?}"
    );
    assert_eq!(
        calls
            .iter()
            .filter(|c| c.starts_with("DELETE /v2/domains/apps.test/records/"))
            .count(),
        created,
        "{calls:#?}"
    );
    assert!(
        count("GET /v2/domains/_acme-challenge.apps.test?") >= 1,
        "{calls:#?}"
    );
    assert!(!gw.log().contains(DO_TOKEN));
}

/// The keys the Route 53 stand-in knows.
const AWS_KEY_ID: &str = "AKIAGANGWAYTEST";
const AWS_SECRET: &str = "r53/secret+Key0000000000000000000000000";

/// The inner texts of every `<name>…</name>`.
fn xml_tags<'x>(xml: &'x str, name: &str) -> Vec<&'x str> {
    let (open, close) = (format!("<{name}>"), format!("</{name}>"));
    let mut out = Vec::new();
    let mut rest = xml;
    while let Some(i) = rest.find(&open) {
        let after = &rest[i + open.len()..];
        let Some(j) = after.find(&close) else { break };
        out.push(&after[..j]);
        rest = &after[j + close.len()..];
    }
    out
}

fn sha256_hex(data: &[u8]) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn hmac256(key: &[u8], data: &[u8]) -> Vec<u8> {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, key);
    ring::hmac::sign(&key, data).as_ref().to_vec()
}

/// An access key id, its secret, and the session token of temporary keys.
type Keys = (&'static str, &'static str, Option<&'static str>);

/// Checks a request's AWS Signature Version 4 as AWS does, from what was
/// received: the error code and message AWS answers, if it is wrong.
fn sigv4_problem(
    method: &str,
    uri: &http::Uri,
    headers: &http::HeaderMap,
    body: &[u8],
    (service_wanted, keys): (&str, Keys),
) -> Option<(&'static str, &'static str)> {
    let (key_id, secret, token) = keys;
    const INVALID: (&str, &str) = (
        "InvalidClientTokenId",
        "The security token included in the request is invalid.",
    );
    const MISMATCH: (&str, &str) = (
        "SignatureDoesNotMatch",
        "The request signature we calculated does not match the signature you provided.",
    );
    let auth = headers.get("authorization")?.to_str().ok()?;
    let rest = auth.strip_prefix("AWS4-HMAC-SHA256 ")?;
    let field = |name: &str| {
        rest.split(", ")
            .find_map(|p| p.strip_prefix(&format!("{name}=")))
            .unwrap_or_default()
    };
    let credential: Vec<&str> = field("Credential").split('/').collect();
    if credential.len() != 5 || credential[0] != key_id {
        return Some(INVALID);
    }
    let sent_token = headers
        .get("x-amz-security-token")
        .and_then(|v| v.to_str().ok());
    if sent_token != token {
        return Some(INVALID);
    }
    let (day, region, service) = (credential[1], credential[2], credential[3]);
    if service != service_wanted || credential[4] != "aws4_request" {
        return Some(MISMATCH);
    }
    let signed: Vec<&str> = field("SignedHeaders").split(';').collect();
    if !signed.contains(&"host") || !signed.contains(&"x-amz-date") {
        return Some(MISMATCH);
    }
    let canonical_headers: String = signed
        .iter()
        .map(|h| {
            let v = headers
                .get(*h)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default();
            format!("{h}:{}\n", v.trim())
        })
        .collect();
    let mut query: Vec<&str> = uri
        .query()
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
        .collect();
    query.sort_unstable();
    let canonical = format!(
        "{method}\n{}\n{}\n{canonical_headers}\n{}\n{}",
        uri.path(),
        query.join("&"),
        signed.join(";"),
        sha256_hex(body)
    );
    let date = headers.get("x-amz-date")?.to_str().ok()?;
    let scope = format!("{day}/{region}/{service}/aws4_request");
    let to_sign = format!(
        "AWS4-HMAC-SHA256\n{date}\n{scope}\n{}",
        sha256_hex(canonical.as_bytes())
    );
    let mut key = hmac256(format!("AWS4{secret}").as_bytes(), day.as_bytes());
    for part in [region, service, "aws4_request"] {
        key = hmac256(&key, part.as_bytes());
    }
    let expected: String = hmac256(&key, to_sign.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    (field("Signature") != expected).then_some(MISMATCH)
}

/// Route 53's REST API 2013-04-01 for the calls gangway makes
/// (ListHostedZonesByName, ListResourceRecordSets, ChangeResourceRecordSets
/// with UPSERT and DELETE, GetChange), with its XML shapes and error
/// answers, SigV4 checked on every request, and its 400 `Throttling`; the
/// account holds the public hosted zone `apps.test.` (`Z0APPS`), whose TXT
/// sets go into `named` through RFC 2136. Each change is PENDING until
/// looked at once.
async fn route53_api(header: String, seen: Arc<Mutex<Seen>>, keys: Keys) -> Backend {
    const NS: &str = "https://route53.amazonaws.com/doc/2013-04-01/";
    Backend::serve(move |req: http::Request<hyper::body::Incoming>| {
        let (seen, header) = (seen.clone(), header.clone());
        async move {
            let (parts, body) = req.into_parts();
            let body = body.collect().await.unwrap().to_bytes();
            let method = parts.method.as_str().to_owned();
            let path = parts.uri.path().to_owned();
            let query = parts.uri.query().unwrap_or_default().to_owned();
            seen.lock().unwrap().calls.push(format!("{method} {path}?{query}"));
            let xml = |status: StatusCode, text: String| {
                http::Response::builder()
                    .status(status)
                    .header(http::header::CONTENT_TYPE, "text/xml")
                    .body(Full::new(Bytes::from(format!("<?xml version=\"1.0\"?>\n{text}"))))
                    .unwrap()
            };
            let error = |status: StatusCode, code: &str, message: &str| {
                xml(status, format!("<ErrorResponse xmlns=\"{NS}\"><Error><Type>Sender</Type><Code>{code}</Code><Message>{message}</Message></Error><RequestId>r-1</RequestId></ErrorResponse>"))
            };
            if let Some((code, message)) = sigv4_problem(&method, &parts.uri, &parts.headers, &body, ("route53", keys)) {
                return error(StatusCode::FORBIDDEN, code, message);
            }
            let param = |name: &str| {
                query
                    .split('&')
                    .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
                    .unwrap_or_default()
                    .to_owned()
            };
            let info = |id: &str, status: &str| format!("<ChangeInfo><Id>/change/{id}</Id><Status>{status}</Status><SubmittedAt>2026-01-01T00:00:00.000Z</SubmittedAt></ChangeInfo>");
            match (method.as_str(), path.as_str()) {
                ("GET", "/2013-04-01/hostedzonesbyname") => {
                    // The zones from `dnsname` on, in order: the account's one zone.
                    let dns = param("dnsname");
                    xml(StatusCode::OK, format!("<ListHostedZonesByNameResponse xmlns=\"{NS}\"><HostedZones><HostedZone><Id>/hostedzone/Z0APPS</Id><Name>apps.test.</Name><CallerReference>c-1</CallerReference><Config><PrivateZone>false</PrivateZone></Config><ResourceRecordSetCount>3</ResourceRecordSetCount></HostedZone></HostedZones><DNSName>{dns}</DNSName><IsTruncated>false</IsTruncated><MaxItems>1</MaxItems></ListHostedZonesByNameResponse>"))
                }
                ("GET", "/2013-04-01/hostedzone/Z0APPS/rrset") => {
                    let name = param("name");
                    let values: Vec<String> = seen.lock().unwrap().records.iter().filter(|(_, n, _)| *n == name).map(|(_, _, v)| v.clone()).collect();
                    // The sets from `name` on: the apex's NS when there is none at it.
                    let set = if values.is_empty() {
                        "<ResourceRecordSet><Name>apps.test.</Name><Type>NS</Type><TTL>172800</TTL><ResourceRecords><ResourceRecord><Value>ns.test.</Value></ResourceRecord></ResourceRecords></ResourceRecordSet>".to_owned()
                    } else {
                        let records: String = values.iter().map(|v| format!("<ResourceRecord><Value>&quot;{v}&quot;</Value></ResourceRecord>")).collect();
                        format!("<ResourceRecordSet><Name>{name}</Name><Type>TXT</Type><TTL>10</TTL><ResourceRecords>{records}</ResourceRecords></ResourceRecordSet>")
                    };
                    xml(StatusCode::OK, format!("<ListResourceRecordSetsResponse xmlns=\"{NS}\"><ResourceRecordSets>{set}</ResourceRecordSets><IsTruncated>false</IsTruncated><MaxItems>1</MaxItems></ListResourceRecordSetsResponse>"))
                }
                ("POST", "/2013-04-01/hostedzone/Z0APPS/rrset") => {
                    let text = String::from_utf8_lossy(&body).into_owned();
                    let (Some(action), Some(name), Some("TXT"), Some(_ttl)) = (
                        xml_tags(&text, "Action").first().copied(),
                        xml_tags(&text, "Name").first().copied(),
                        xml_tags(&text, "Type").first().copied(),
                        xml_tags(&text, "TTL").first().and_then(|t| t.parse::<u32>().ok()),
                    ) else {
                        return error(StatusCode::BAD_REQUEST, "InvalidInput", "Invalid XML ; cvc-complex-type");
                    };
                    let values: Vec<String> = xml_tags(&text, "Value").iter().map(|v| v.replace("&quot;", "\"").trim_matches('"').to_owned()).collect();
                    if !text.starts_with("<?xml") || !text.contains(&format!("<ChangeResourceRecordSetsRequest xmlns=\"{NS}\">")) {
                        return error(StatusCode::BAD_REQUEST, "InvalidInput", "Invalid XML ; the root element");
                    }
                    {
                        let mut seen = seen.lock().unwrap();
                        if seen.rate_limited > 0 {
                            seen.rate_limited -= 1;
                            drop(seen);
                            return error(StatusCode::BAD_REQUEST, "Throttling", "Rate exceeded");
                        }
                    }
                    let name = name.to_owned();
                    let before: Vec<String> = seen.lock().unwrap().records.iter().filter(|(_, n, _)| *n == name).map(|(_, _, v)| v.clone()).collect();
                    let after = match action {
                        "UPSERT" => values.clone(),
                        "DELETE" => {
                            let (mut a, mut b) = (before.clone(), values.clone());
                            a.sort();
                            b.sort();
                            if a != b {
                                return error(StatusCode::BAD_REQUEST, "InvalidChangeBatch", "[Tried to delete resource record set but it was not found]");
                            }
                            Vec::new()
                        }
                        _ => return error(StatusCode::BAD_REQUEST, "InvalidInput", "Invalid Action"),
                    };
                    for v in before.iter().filter(|v| !after.contains(v)) {
                        if let Err(e) = nsupdate(&header, "delete", &name, v).await {
                            return error(StatusCode::INTERNAL_SERVER_ERROR, "InternalFailure", &e);
                        }
                    }
                    for v in after.iter().filter(|v| !before.contains(v)) {
                        if let Err(e) = nsupdate(&header, "add", &name, v).await {
                            return error(StatusCode::INTERNAL_SERVER_ERROR, "InternalFailure", &e);
                        }
                    }
                    let mut seen = seen.lock().unwrap();
                    seen.records.retain(|(_, n, _)| *n != name);
                    for v in after {
                        seen.records.push((String::new(), name.clone(), v));
                    }
                    seen.next_id += 1;
                    let id = format!("C{}", seen.next_id);
                    xml(StatusCode::OK, format!("<ChangeResourceRecordSetsResponse xmlns=\"{NS}\">{}</ChangeResourceRecordSetsResponse>", info(&id, "PENDING")))
                }
                ("GET", change) if change.starts_with("/2013-04-01/change/C") => {
                    let id = change.trim_start_matches("/2013-04-01/change/");
                    xml(StatusCode::OK, format!("<GetChangeResponse xmlns=\"{NS}\">{}</GetChangeResponse>", info(id, "INSYNC")))
                }
                _ => error(StatusCode::NOT_FOUND, "NoSuchHostedZone", "No hosted zone found with ID"),
            }
        }
    })
    .await
}

#[tokio::test]
async fn route53_publishes_a_wildcard_and_its_apex_with_signed_requests() {
    if !ready("route53") {
        return;
    }
    let app = Backend::echo("app").await;
    let setup = Setup::start(None).await;
    let seen: Arc<Mutex<Seen>> = Arc::default();
    seen.lock().unwrap().rate_limited = 1;
    let api = route53_api(
        setup.named.nsupdate_header(),
        seen.clone(),
        (AWS_KEY_ID, AWS_SECRET, None),
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let credentials = dir.path().join("credentials");
    std::fs::write(
        &credentials,
        format!("[default]\naws_access_key_id = AKIAOTHER\naws_secret_access_key = other\n\n[dns]\naws_access_key_id = {AWS_KEY_ID}\naws_secret_access_key = {AWS_SECRET}\n"),
    )
    .unwrap();
    let dynamic = routers(
        &app.url(),
        &[(
            "site",
            "Host(`www.apps.test`)",
            "le",
            "[[http.routers.site.tls.domains]]\nmain = \"*.apps.test\"\nsans = [\"apps.test\"]\n",
        )],
    );
    let (url, file) = (api.url(), credentials.display().to_string());
    let gw = setup
        .gangway(
            &dynamic,
            "route53",
            &[
                ("AWS_SHARED_CREDENTIALS_FILE", file.as_str()),
                ("AWS_PROFILE", "dns"),
                ("AWS_ENDPOINT_URL_ROUTE_53", url.as_str()),
            ],
            &[],
        )
        .await;
    setup
        .wait_for_certificate("www.apps.test", &["*.apps.test", "apps.test"])
        .await;
    eventually(
        Duration::from_secs(10),
        "the record set removed",
        || async {
            seen.lock().unwrap().records.is_empty()
                && setup
                    .named
                    .txt("_acme-challenge.apps.test")
                    .await
                    .is_empty()
        },
    )
    .await;
    assert!(
        gw.log().contains(
            "route53: adding the TXT record `_acme-challenge.apps.test.` to hosted zone \
             `apps.test`: the API answered 400 Bad Request: Rate exceeded (Throttling); trying again in 1s"
        ),
        "{}",
        gw.log()
    );
    let calls = seen.lock().unwrap().calls.clone();
    let count = |p: &str| calls.iter().filter(|c| c.starts_with(p)).count();
    // An order retried under load says why here.
    for line in gw.log().lines().filter(|l| l.contains("order failed")) {
        eprintln!("{line}");
    }
    // At least two creations and two removals, one change throttled
    // first, and each accepted change polled until INSYNC.
    let changes = seen.lock().unwrap().next_id as usize;
    assert!(changes >= 4, "{calls:#?}");
    assert!(
        count("POST /2013-04-01/hostedzone/Z0APPS/rrset") > changes,
        "{calls:#?}"
    );
    assert_eq!(count("GET /2013-04-01/change/C"), changes, "{calls:#?}");
    assert!(
        count("GET /2013-04-01/hostedzonesbyname?dnsname=_acme-challenge.apps.test&maxitems=1")
            >= 1,
        "{calls:#?}"
    );
    assert!(!gw.log().contains(AWS_SECRET));
    drop(gw);

    // Static keys win over the file; a wrong secret gets AWS's answer.
    let wrong = "wrong/secret+Key000000000000000000000000";
    let dynamic = routers(&app.url(), &[("deny", "Host(`*.sub.apps.test`)", "le", "")]);
    let gw = setup
        .gangway(
            &dynamic,
            "route53",
            &[
                ("AWS_ACCESS_KEY_ID", AWS_KEY_ID),
                ("AWS_SECRET_ACCESS_KEY", wrong),
                ("AWS_SHARED_CREDENTIALS_FILE", file.as_str()),
                ("AWS_PROFILE", "dns"),
                ("AWS_ENDPOINT_URL_ROUTE_53", url.as_str()),
            ],
            &[],
        )
        .await;
    eventually(Duration::from_secs(60), "a refused order", || async {
        cert(&certificates(&gw).await, "*.sub.apps.test")
            .is_some_and(|c| c["failures"].as_u64().unwrap_or(0) >= 1)
    })
    .await;
    let refused = cert(&certificates(&gw).await, "*.sub.apps.test").unwrap();
    assert_eq!(
        refused["lastError"],
        "DNS-01 challenge for `sub.apps.test`: route53: finding the hosted zone of \
         `_acme-challenge.sub.apps.test.`: the API refused the credentials (403 Forbidden): \
         The request signature we calculated does not match the signature you provided. \
         (SignatureDoesNotMatch)",
        "{refused}"
    );
    assert!(!gw.log().contains(wrong));
}

/// The keys the OVH stand-in knows.
const OVH_APP_KEY: &str = "ovh-app-7Kq2";
const OVH_APP_SECRET: &str = "ovh-secret-Vb81nQ";
const OVH_CONSUMER: &str = "ovh-consumer-Lr04";
/// The OAuth 2.0 service account the OVH stand-in knows, and the token
/// its token endpoint gives it.
const OVH_CLIENT_ID: &str = "ovh-client-3Fp9";
const OVH_CLIENT_SECRET: &str = "ovh-client-secret-Wd52";
const OVH_TOKEN: &str = "ovh-bearer-Qx7Tz";

/// OVHcloud's API v1 under `/1.0` for the calls gangway makes
/// (`/auth/time`; a zone by name; its TXT records: create, list ids by
/// type and sub-domain, read, delete; `refresh`), with its application
/// signature checked on every authenticated call as OVH does (`$1$` +
/// SHA-1 of secret, consumer key, method, URL, body and timestamp) and its
/// error shape; the account holds the zone `apps.test`, whose records go
/// into `named` through RFC 2136.
async fn ovh_api(header: String, seen: Arc<Mutex<Seen>>) -> Backend {
    Backend::serve(move |req: http::Request<hyper::body::Incoming>| {
        let (seen, header) = (seen.clone(), header.clone());
        async move {
            let (parts, body) = req.into_parts();
            let body = body.collect().await.unwrap().to_bytes();
            let method = parts.method.as_str().to_owned();
            let path = parts.uri.path().to_owned();
            let query = parts.uri.query().unwrap_or_default().to_owned();
            seen.lock().unwrap().calls.push(format!("{method} {path}?{query}"));
            let error = |status: StatusCode, code: &str, message: &str| {
                json_reply(status, &serde_json::json!({"message": message, "errorCode": code, "httpCode": status.to_string()}))
            };
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs();
            if path == "/1.0/auth/time" {
                return json_reply(StatusCode::OK, &serde_json::json!(now));
            }
            if path == "/auth/oauth2/token" {
                let text = String::from_utf8_lossy(&body).into_owned();
                let form = percent_encoding::percent_decode_str(&text).decode_utf8_lossy();
                let wanted = format!("grant_type=client_credentials&client_id={OVH_CLIENT_ID}&client_secret={OVH_CLIENT_SECRET}&scope=all");
                if method != "POST" || form != wanted {
                    return json_reply(StatusCode::UNAUTHORIZED, &serde_json::json!({"error": "invalid_client"}));
                }
                return json_reply(StatusCode::OK, &serde_json::json!({"access_token": OVH_TOKEN, "token_type": "Bearer", "expires_in": 3600}));
            }
            let get = |name: &str| {
                parts
                    .headers
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_owned()
            };
            let bearer = get("authorization") == format!("Bearer {OVH_TOKEN}");
            if !bearer && (get("x-ovh-application") != OVH_APP_KEY || get("x-ovh-consumer") != OVH_CONSUMER) {
                return error(StatusCode::FORBIDDEN, "INVALID_CREDENTIAL", "This credential does not exist");
            }
            let timestamp = get("x-ovh-timestamp");
            let url = format!("http://{}{}", get("host"), parts.uri.path_and_query().map(|p| p.as_str()).unwrap_or_default());
            let text = format!(
                "{OVH_APP_SECRET}+{OVH_CONSUMER}+{method}+{url}+{}+{timestamp}",
                String::from_utf8_lossy(&body)
            );
            let digest = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, text.as_bytes());
            let expected: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
            let fresh = timestamp.parse::<u64>().is_ok_and(|t| t.abs_diff(now) < 60);
            if !bearer && (get("x-ovh-signature") != format!("$1${expected}") || !fresh) {
                return error(StatusCode::BAD_REQUEST, "INVALID_SIGNATURE", "Invalid signature");
            }
            let param = |name: &str| {
                query
                    .split('&')
                    .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
                    .unwrap_or_default()
                    .to_owned()
            };
            let missing = || error(StatusCode::NOT_FOUND, "CLIENT::NotFound", "This service does not exist");
            let Some(rest) = path.strip_prefix("/1.0/domain/zone/") else {
                return missing();
            };
            let (zone, rest) = rest.split_once('/').unwrap_or((rest, ""));
            if zone != "apps.test" {
                return missing();
            }
            let record_json = |(id, fqdn, target): &(String, String, String)| {
                serde_json::json!({"id": id.parse::<u64>().unwrap_or(0), "zone": "apps.test", "fieldType": "TXT", "subDomain": fqdn.trim_end_matches(".apps.test"), "target": target, "ttl": 120})
            };
            match (method.as_str(), rest) {
                ("GET", "") => json_reply(StatusCode::OK, &serde_json::json!({"name": "apps.test", "hasDnsAnycast": false, "nameServers": ["ns.test"], "dnssecSupported": false})),
                ("POST", "refresh") => json_reply(StatusCode::OK, &serde_json::Value::Null),
                ("POST", "record") => {
                    let record: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                    let (Some("TXT"), Some(sub), Some(target), Some(_)) = (
                        record["fieldType"].as_str(),
                        record["subDomain"].as_str(),
                        record["target"].as_str(),
                        record["ttl"].as_u64(),
                    ) else {
                        return error(StatusCode::BAD_REQUEST, "CLIENT::BadRequest", "Invalid body");
                    };
                    let fqdn = if sub.is_empty() { "apps.test".to_owned() } else { format!("{sub}.apps.test") };
                    if let Err(e) = nsupdate(&header, "add", &fqdn, target).await {
                        return error(StatusCode::INTERNAL_SERVER_ERROR, "SERVER::Error", &e);
                    }
                    let mut seen = seen.lock().unwrap();
                    seen.next_id += 1;
                    let entry = (seen.next_id.to_string(), fqdn, target.to_owned());
                    let reply = record_json(&entry);
                    seen.records.push(entry);
                    json_reply(StatusCode::OK, &reply)
                }
                ("GET", "record") => {
                    let (field, sub) = (param("fieldType"), param("subDomain"));
                    let ids: Vec<u64> = seen
                        .lock()
                        .unwrap()
                        .records
                        .iter()
                        .filter(|(_, n, _)| field == "TXT" && *n == format!("{sub}.apps.test"))
                        .map(|(id, _, _)| id.parse().unwrap_or(0))
                        .collect();
                    json_reply(StatusCode::OK, &serde_json::json!(ids))
                }
                (_, rest) if rest.starts_with("record/") => {
                    let id = rest.trim_start_matches("record/");
                    let found = seen.lock().unwrap().records.iter().find(|(i, _, _)| i == id).cloned();
                    let Some(entry) = found else {
                        return missing();
                    };
                    match method.as_str() {
                        "GET" => json_reply(StatusCode::OK, &record_json(&entry)),
                        "DELETE" => {
                            if let Err(e) = nsupdate(&header, "delete", &entry.1, &entry.2).await {
                                return error(StatusCode::INTERNAL_SERVER_ERROR, "SERVER::Error", &e);
                            }
                            seen.lock().unwrap().records.retain(|(i, _, _)| i != id);
                            json_reply(StatusCode::OK, &serde_json::Value::Null)
                        }
                        _ => missing(),
                    }
                }
                _ => missing(),
            }
        }
    })
    .await
}

#[tokio::test]
async fn ovh_publishes_a_wildcard_and_its_apex_with_signed_requests() {
    let Some((app, setup, seen, api)) = with_stand_in("ovh", ovh_api).await else {
        return;
    };
    let dynamic = routers(
        &app.url(),
        &[(
            "site",
            "Host(`www.apps.test`)",
            "le",
            "[[http.routers.site.tls.domains]]\nmain = \"*.apps.test\"\nsans = [\"apps.test\"]\n",
        )],
    );
    let endpoint = format!("{}/1.0", api.url());
    let env = [
        ("OVH_ENDPOINT", endpoint.as_str()),
        ("OVH_APPLICATION_KEY", OVH_APP_KEY),
        ("OVH_APPLICATION_SECRET", OVH_APP_SECRET),
        ("OVH_CONSUMER_KEY", OVH_CONSUMER),
    ];
    let gw = setup.gangway(&dynamic, "ovh", &env, &[]).await;
    setup
        .wait_for_certificate("www.apps.test", &["*.apps.test", "apps.test"])
        .await;
    eventually(Duration::from_secs(10), "the records removed", || async {
        seen.lock().unwrap().records.is_empty()
            && setup
                .named
                .txt("_acme-challenge.apps.test")
                .await
                .is_empty()
    })
    .await;
    let calls = seen.lock().unwrap().calls.clone();
    let count = |p: &str| calls.iter().filter(|c| c.starts_with(p)).count();
    // Every record created was deleted, and each change refreshed the zone.
    let created = seen.lock().unwrap().next_id as usize;
    assert!(created >= 2, "{calls:#?}");
    assert_eq!(
        count("DELETE /1.0/domain/zone/apps.test/record/"),
        created,
        "{calls:#?}"
    );
    assert_eq!(
        count("POST /1.0/domain/zone/apps.test/refresh"),
        2 * created,
        "{calls:#?}"
    );
    assert!(!gw.log().contains(OVH_APP_SECRET));
    drop(gw);

    // A wrong secret: OVH's own answer, named in one sentence.
    let dynamic = routers(&app.url(), &[("deny", "Host(`*.sub.apps.test`)", "le", "")]);
    let mut env = env;
    env[2].1 = "not-the-secret";
    let gw = setup.gangway(&dynamic, "ovh", &env, &[]).await;
    eventually(Duration::from_secs(60), "a refused order", || async {
        cert(&certificates(&gw).await, "*.sub.apps.test")
            .is_some_and(|c| c["failures"].as_u64().unwrap_or(0) >= 1)
    })
    .await;
    let refused = cert(&certificates(&gw).await, "*.sub.apps.test").unwrap();
    assert_eq!(
        refused["lastError"],
        "DNS-01 challenge for `sub.apps.test`: ovh: finding the zone of \
         `_acme-challenge.sub.apps.test.`: the API answered 400 Bad Request: Invalid signature \
         (INVALID_SIGNATURE)",
        "{refused}"
    );
}

#[tokio::test]
async fn ovh_publishes_with_an_oauth2_client_and_with_an_access_token() {
    let Some((app, setup, seen, api)) = with_stand_in("ovh", ovh_api).await else {
        return;
    };
    let endpoint = format!("{}/1.0", api.url());
    let ways = [
        (
            "oauth2",
            vec![
                ("OVH_CLIENT_ID", OVH_CLIENT_ID),
                ("OVH_CLIENT_SECRET", OVH_CLIENT_SECRET),
            ],
        ),
        ("token", vec![("OVH_ACCESS_TOKEN", OVH_TOKEN)]),
    ];
    for (way, credentials) in ways {
        let host = format!("{way}.apps.test");
        let rule = format!("Host(`{host}`)");
        let dynamic = routers(&app.url(), &[(way, rule.as_str(), "le", "")]);
        let mut env = vec![("OVH_ENDPOINT", endpoint.as_str())];
        env.extend(credentials);
        let gw = setup.gangway(&dynamic, "ovh", &env, &[]).await;
        setup.wait_for_certificate(&host, &[host.as_str()]).await;
        eventually(Duration::from_secs(10), "the record removed", || async {
            seen.lock().unwrap().records.is_empty()
        })
        .await;
        let calls = seen.lock().unwrap().calls.clone();
        // Bearer calls need no clock: only signed ones ask for it.
        assert!(
            !calls.iter().any(|c| c.contains("/auth/time")),
            "{calls:#?}"
        );
        let tokens = calls
            .iter()
            .filter(|c| c.starts_with("POST /auth/oauth2/token"))
            .count();
        assert_eq!(tokens > 0, way == "oauth2", "{calls:#?}");
        assert!(!gw.log().contains(OVH_CLIENT_SECRET) && !gw.log().contains(OVH_TOKEN));
        seen.lock().unwrap().calls.clear();
    }
}

/// The personal access token the Gandi stand-in accepts.
const GANDI_TOKEN: &str = "gandi-pat-3f9c";

/// Gandi's LiveDNS API v5 under `/v5/livedns` for the calls gangway makes
/// (a domain by name; a TXT record set: read, replace with `PUT`,
/// delete), with its error shape (`code`, `message`, `object`, `cause`),
/// bearer token authentication and its TTL minimum; the account holds
/// the domain `apps.test`, whose sets go into `named` through RFC 2136.
async fn gandi_api(header: String, seen: Arc<Mutex<Seen>>) -> Backend {
    Backend::serve(move |req: http::Request<hyper::body::Incoming>| {
        let (seen, header) = (seen.clone(), header.clone());
        async move {
            let (parts, body) = req.into_parts();
            let body = body.collect().await.unwrap().to_bytes();
            let method = parts.method.as_str().to_owned();
            let path = parts.uri.path().to_owned();
            seen.lock().unwrap().calls.push(format!("{method} {path}"));
            let error = |status: StatusCode, message: &str| {
                json_reply(status, &serde_json::json!({"code": status.as_u16(), "message": message, "object": "HTTPError", "cause": status.canonical_reason()}))
            };
            let auth = parts.headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or_default();
            if auth != format!("Bearer {GANDI_TOKEN}") {
                return error(StatusCode::UNAUTHORIZED, "The server could not verify that you are authorized to access the document you requested.");
            }
            let missing = || error(StatusCode::NOT_FOUND, "The resource could not be found.");
            let Some(rest) = path.strip_prefix("/v5/livedns/domains/") else {
                return missing();
            };
            let (domain, rest) = rest.split_once('/').unwrap_or((rest, ""));
            if domain != "apps.test" {
                return missing();
            }
            if rest.is_empty() && method == "GET" {
                return json_reply(StatusCode::OK, &serde_json::json!({"fqdn": "apps.test", "automatic_snapshots": false}));
            }
            let Some(name) = rest.strip_prefix("records/").and_then(|r| r.strip_suffix("/TXT")) else {
                return missing();
            };
            let fqdn = if name == "@" { "apps.test".to_owned() } else { format!("{name}.apps.test") };
            let before: Vec<String> = seen.lock().unwrap().records.iter().filter(|(_, n, _)| *n == fqdn).map(|(_, _, v)| v.clone()).collect();
            let after = match method.as_str() {
                "GET" if before.is_empty() => return missing(),
                "GET" => {
                    let values: Vec<String> = before.iter().map(|v| format!("\"{v}\"")).collect();
                    return json_reply(StatusCode::OK, &serde_json::json!({"rrset_name": name, "rrset_type": "TXT", "rrset_ttl": 300, "rrset_values": values}));
                }
                "PUT" => {
                    let set: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                    let (Some(ttl), Some(values)) = (set["rrset_ttl"].as_u64(), set["rrset_values"].as_array()) else {
                        return error(StatusCode::BAD_REQUEST, "rrset_ttl and rrset_values are required");
                    };
                    if ttl < 300 {
                        return error(StatusCode::BAD_REQUEST, "rrset_ttl must be at least 300");
                    }
                    values.iter().filter_map(|v| v.as_str()).map(|v| v.trim_matches('"').to_owned()).collect::<Vec<_>>()
                }
                "DELETE" if before.is_empty() => return missing(),
                "DELETE" => Vec::new(),
                _ => return missing(),
            };
            for v in before.iter().filter(|v| !after.contains(v)) {
                if let Err(e) = nsupdate(&header, "delete", &fqdn, v).await {
                    return error(StatusCode::INTERNAL_SERVER_ERROR, &e);
                }
            }
            for v in after.iter().filter(|v| !before.contains(v)) {
                if let Err(e) = nsupdate(&header, "add", &fqdn, v).await {
                    return error(StatusCode::INTERNAL_SERVER_ERROR, &e);
                }
            }
            let mut seen = seen.lock().unwrap();
            seen.records.retain(|(_, n, _)| *n != fqdn);
            seen.next_id += 1;
            let deleted = after.is_empty();
            for v in after {
                seen.records.push((String::new(), fqdn.clone(), v));
            }
            if deleted {
                http::Response::builder().status(StatusCode::NO_CONTENT).body(Full::new(Bytes::new())).unwrap()
            } else {
                json_reply(StatusCode::CREATED, &serde_json::json!({"message": "DNS Record Created"}))
            }
        }
    })
    .await
}

#[tokio::test]
async fn gandiv5_publishes_a_wildcard_and_its_apex_through_its_api() {
    let Some((app, setup, seen, api)) = with_stand_in("gandiv5", gandi_api).await else {
        return;
    };
    let dynamic = routers(
        &app.url(),
        &[(
            "site",
            "Host(`www.apps.test`)",
            "le",
            "[[http.routers.site.tls.domains]]\nmain = \"*.apps.test\"\nsans = [\"apps.test\"]\n",
        )],
    );
    let url = format!("{}/v5/livedns", api.url());
    let gw = setup
        .gangway(
            &dynamic,
            "gandiv5",
            &[
                ("GANDIV5_PERSONAL_ACCESS_TOKEN", GANDI_TOKEN),
                ("GANDIV5_API_URL", url.as_str()),
                ("GANDIV5_POLLING_INTERVAL", "1"),
            ],
            &[],
        )
        .await;
    setup
        .wait_for_certificate("www.apps.test", &["*.apps.test", "apps.test"])
        .await;
    eventually(
        Duration::from_secs(10),
        "the record set removed",
        || async {
            seen.lock().unwrap().records.is_empty()
                && setup
                    .named
                    .txt("_acme-challenge.apps.test")
                    .await
                    .is_empty()
        },
    )
    .await;
    let calls = seen.lock().unwrap().calls.clone();
    let count = |p: &str| calls.iter().filter(|c| *c == p).count();
    let set = "/v5/livedns/domains/apps.test/records/_acme-challenge/TXT";
    assert!(count(&format!("PUT {set}")) >= 2, "{calls:#?}");
    assert!(count(&format!("DELETE {set}")) >= 1, "{calls:#?}");
    assert!(!gw.log().contains(GANDI_TOKEN));
}

/// The token the Duck DNS stand-in accepts.
const DUCK_TOKEN: &str = "a7c4d3e2-0b1f-4e5d-9c8b-7a6f5e4d3c2b";

/// Duck DNS's update API (`GET /update?domains=&token=&txt=&clear=`), as
/// its specification describes it: the answer is `OK` or `KO` with status
/// 200, the token is checked, and a subdomain holds one TXT value, served
/// at every name under it; the account holds the subdomain `apps`, whose
/// value goes into `named` (zone `duckdns.org.`) through RFC 2136.
async fn duckdns_api(header: String, seen: Arc<Mutex<Seen>>) -> Backend {
    Backend::serve(move |req: http::Request<hyper::body::Incoming>| {
        let (seen, header) = (seen.clone(), header.clone());
        async move {
            let path = req.uri().path().to_owned();
            let query = req.uri().query().unwrap_or_default().to_owned();
            let param = |name: &str| {
                query
                    .split('&')
                    .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
                    .map(str::to_owned)
            };
            // Recorded without the token, as a log of calls would be.
            seen.lock().unwrap().calls.push(format!(
                "GET {path} domains={} txt={} clear={}",
                param("domains").unwrap_or_default(),
                param("txt").unwrap_or_default(),
                param("clear").unwrap_or_default()
            ));
            let reply = |text: &'static str| {
                http::Response::builder()
                    .status(StatusCode::OK)
                    .header(http::header::CONTENT_TYPE, "text/plain")
                    .body(Full::new(Bytes::from_static(text.as_bytes())))
                    .unwrap()
            };
            if path != "/update" || param("token").as_deref() != Some(DUCK_TOKEN) {
                return reply("KO");
            }
            let domain = param("domains").unwrap_or_default();
            if domain != "apps" && domain != "apps.duckdns.org" {
                return reply("KO");
            }
            let fqdn = "_acme-challenge.apps.duckdns.org";
            // One value per subdomain: the old one goes first either way.
            let old: Vec<(String, String, String)> =
                seen.lock().unwrap().records.drain(..).collect();
            for (_, name, value) in old {
                if nsupdate(&header, "delete", &name, &value).await.is_err() {
                    return reply("KO");
                }
            }
            if param("clear").as_deref() == Some("true") {
                return reply("OK");
            }
            let Some(txt) = param("txt").filter(|t| !t.is_empty()) else {
                return reply("KO");
            };
            if nsupdate(&header, "add", fqdn, &txt).await.is_err() {
                return reply("KO");
            }
            let mut seen = seen.lock().unwrap();
            seen.next_id += 1;
            let id = seen.next_id.to_string();
            seen.records.push((id, fqdn.to_owned(), txt));
            reply("OK")
        }
    })
    .await
}

#[tokio::test]
async fn duckdns_publishes_a_wildcard_and_its_apex_one_after_the_other() {
    let Some((app, setup, seen, api)) = with_stand_in("duckdns", duckdns_api).await else {
        return;
    };
    let dynamic = routers(
        &app.url(),
        &[(
            "site",
            "Host(`www.apps.duckdns.org`)",
            "le",
            "[[http.routers.site.tls.domains]]\nmain = \"*.apps.duckdns.org\"\nsans = [\"apps.duckdns.org\"]\n",
        )],
    );
    let url = format!("{}/update", api.url());
    let gw = setup
        .gangway(
            &dynamic,
            "duckdns",
            &[
                ("DUCKDNS_TOKEN", DUCK_TOKEN),
                ("DUCKDNS_API_URL", url.as_str()),
            ],
            &[],
        )
        .await;
    setup
        .wait_for_certificate(
            "www.apps.duckdns.org",
            &["*.apps.duckdns.org", "apps.duckdns.org"],
        )
        .await;
    eventually(Duration::from_secs(10), "the record cleared", || async {
        seen.lock().unwrap().records.is_empty()
            && setup
                .named
                .txt("_acme-challenge.apps.duckdns.org")
                .await
                .is_empty()
    })
    .await;
    let calls = seen.lock().unwrap().calls.clone();
    let sets = calls.iter().filter(|c| c.ends_with("clear=false")).count();
    let clears = calls
        .iter()
        .filter(|c| *c == "GET /update domains=apps txt= clear=true")
        .count();
    // Each authorization set its value and cleared it before the next.
    assert!(sets >= 2, "{calls:#?}");
    assert_eq!(sets, clears, "{calls:#?}");
    assert!(!gw.log().contains(DUCK_TOKEN));

    drop(gw);

    // A wrong token: Duck DNS's own answer, no secret, and a retry later;
    // a name outside duckdns.org: its sentence, without calling the API.
    let wrong = "00000000-0000-4000-8000-00000000dead";
    let before = seen.lock().unwrap().calls.len();
    let dynamic = routers(
        &app.url(),
        &[
            ("deny", "Host(`*.sub.apps.duckdns.org`)", "le", ""),
            ("lost", "Host(`lost.elsewhere.test`)", "le", ""),
        ],
    );
    let gw = setup
        .gangway(
            &dynamic,
            "duckdns",
            &[("DUCKDNS_TOKEN", wrong), ("DUCKDNS_API_URL", url.as_str())],
            &[],
        )
        .await;
    eventually(
        Duration::from_secs(60),
        "two failed orders each",
        || async {
            let certs = certificates(&gw).await;
            ["*.sub.apps.duckdns.org", "lost.elsewhere.test"]
                .iter()
                .all(|main| {
                    cert(&certs, main).is_some_and(|c| c["failures"].as_u64().unwrap_or(0) >= 2)
                })
        },
    )
    .await;
    let certs = certificates(&gw).await;
    let refused = cert(&certs, "*.sub.apps.duckdns.org").unwrap();
    assert_eq!(
        refused["lastError"],
        "DNS-01 challenge for `sub.apps.duckdns.org`: duckdns: setting the TXT record of \
         `_acme-challenge.sub.apps.duckdns.org.`: the API refused it: KO (a wrong token, or \
         `apps` is not the account's)",
        "{refused}"
    );
    assert!(refused["nextAttempt"].as_i64().is_some(), "{refused}");
    let lost = cert(&certs, "lost.elsewhere.test").unwrap();
    assert_eq!(
        lost["lastError"],
        "DNS-01 challenge for `lost.elsewhere.test`: duckdns: setting the TXT record of \
         `_acme-challenge.lost.elsewhere.test.`: the provider serves only names under duckdns.org",
        "{lost}"
    );
    let calls = seen.lock().unwrap().calls[before..].to_vec();
    assert!(
        calls.iter().all(|c| c.contains("domains=apps ")),
        "{calls:#?}"
    );
    assert!(!refused.to_string().contains(wrong));
    assert!(!gw.log().contains(wrong));
}

/// Makes the TXT values at `fqdn` be `after`, on `named` (through RFC 2136)
/// and in what the stand-in holds; the failing `nsupdate`'s stderr, if any.
async fn replace_txt(
    header: &str,
    seen: &Mutex<Seen>,
    fqdn: &str,
    after: &[String],
) -> Result<(), String> {
    let before: Vec<String> = seen
        .lock()
        .unwrap()
        .records
        .iter()
        .filter(|(_, n, _)| n == fqdn)
        .map(|(_, _, v)| v.clone())
        .collect();
    for v in before.iter().filter(|v| !after.contains(v)) {
        nsupdate(header, "delete", fqdn, v).await?;
    }
    for v in after.iter().filter(|v| !before.contains(v)) {
        nsupdate(header, "add", fqdn, v).await?;
    }
    let mut seen = seen.lock().unwrap();
    seen.records.retain(|(_, n, _)| n != fqdn);
    for v in after {
        seen.records
            .push((String::new(), fqdn.to_owned(), v.clone()));
    }
    seen.next_id += 1;
    Ok(())
}

/// The TXT values the stand-in holds at `fqdn`.
fn held(seen: &Mutex<Seen>, fqdn: &str) -> Vec<String> {
    seen.lock()
        .unwrap()
        .records
        .iter()
        .filter(|(_, n, _)| n == fqdn)
        .map(|(_, _, v)| v.clone())
        .collect()
}

/// Removes and returns the record `id` the stand-in holds.
fn take_record(seen: &Mutex<Seen>, id: &str) -> Option<(String, String, String)> {
    let mut seen = seen.lock().unwrap();
    let at = seen.records.iter().position(|(i, _, _)| i == id)?;
    Some(seen.records.remove(at))
}

/// Whether the stand-in answers this request 429 (it was told to, once
/// per `rate_limited`).
fn throttle(seen: &Mutex<Seen>) -> bool {
    let mut seen = seen.lock().unwrap();
    if seen.rate_limited > 0 {
        seen.rate_limited -= 1;
        true
    } else {
        false
    }
}

/// `query`'s parameter `name`, as sent.
fn query_param(query: &str, name: &str) -> Option<String> {
    query
        .split('&')
        .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
        .map(str::to_owned)
}

/// The token the deSEC stand-in accepts.
const DESEC_TOKEN: &str = "desec-token-h8Qw2";

/// deSEC's REST API v1 under `/api/v1` for the calls gangway makes (the
/// domain owning a name with `owns_qname`; a TXT record set: read, create
/// with `POST`, replace its records with `PATCH`, which deletes it when
/// empty), with `Token` authentication, its error shapes (`detail`, or
/// the fields' messages), its TTL minimum (3600) and its 429 with
/// `Retry-After`; the account holds the domain `apps.test`, whose sets go
/// into `named` through RFC 2136.
async fn desec_api(header: String, seen: Arc<Mutex<Seen>>) -> Backend {
    Backend::serve(move |req: http::Request<hyper::body::Incoming>| {
        let (seen, header) = (seen.clone(), header.clone());
        async move {
            let (parts, body) = req.into_parts();
            let body = body.collect().await.unwrap().to_bytes();
            let method = parts.method.as_str().to_owned();
            let path = parts.uri.path().to_owned();
            let query = parts.uri.query().unwrap_or_default().to_owned();
            seen.lock().unwrap().calls.push(format!("{method} {path}?{query}"));
            let detail = |status: StatusCode, text: &str| json_reply(status, &serde_json::json!({"detail": text}));
            let auth = parts.headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or_default();
            if auth != format!("Token {DESEC_TOKEN}") {
                return detail(StatusCode::UNAUTHORIZED, "Invalid token.");
            }
            if path == "/api/v1/domains/" && method == "GET" {
                let qname = query_param(&query, "owns_qname").unwrap_or_default();
                let owned = qname == "apps.test" || qname.ends_with(".apps.test");
                let list = if owned { serde_json::json!([{"name": "apps.test", "minimum_ttl": 3600, "created": "2026-01-01T00:00:00Z"}]) } else { serde_json::json!([]) };
                return json_reply(StatusCode::OK, &list);
            }
            let Some(rest) = path.strip_prefix("/api/v1/domains/apps.test/rrsets/") else {
                return detail(StatusCode::NOT_FOUND, "Not found.");
            };
            let set = |sub: &str, values: &[String]| {
                let records: Vec<String> = values.iter().map(|v| format!("\"{v}\"")).collect();
                let name = if sub.is_empty() { "apps.test.".to_owned() } else { format!("{sub}.apps.test.") };
                serde_json::json!({"domain": "apps.test", "subname": sub, "name": name, "type": "TXT", "ttl": 3600, "records": records})
            };
            let unquote = |records: &serde_json::Value| -> Option<Vec<String>> {
                records.as_array()?.iter().map(|r| r.as_str()?.strip_prefix('"')?.strip_suffix('"').map(str::to_owned)).collect()
            };
            if rest.is_empty() && method == "POST" {
                let new: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                let (Some(sub), Some(ttl), Some(values)) = (new["subname"].as_str(), new["ttl"].as_u64(), unquote(&new["records"])) else {
                    return json_reply(StatusCode::BAD_REQUEST, &serde_json::json!({"records": ["TXT records must be quoted strings."]}));
                };
                if new["type"] != "TXT" {
                    return json_reply(StatusCode::BAD_REQUEST, &serde_json::json!({"type": ["This field is required."]}));
                }
                if ttl < 3600 {
                    return json_reply(StatusCode::BAD_REQUEST, &serde_json::json!({"ttl": ["Ensure this value is greater than or equal to 3600."]}));
                }
                let fqdn = if sub.is_empty() { "apps.test".to_owned() } else { format!("{sub}.apps.test") };
                if !held(&seen, &fqdn).is_empty() {
                    return json_reply(StatusCode::BAD_REQUEST, &serde_json::json!({"non_field_errors": ["Another RRset with the same subdomain and type exists for this domain."]}));
                }
                if throttle(&seen) {
                    return too_many(&serde_json::json!({"detail": "Request was throttled. Expected available in 1 second."}));
                }
                if let Err(e) = replace_txt(&header, &seen, &fqdn, &values).await {
                    return detail(StatusCode::INTERNAL_SERVER_ERROR, &e);
                }
                return json_reply(StatusCode::CREATED, &set(sub, &values));
            }
            let Some(sub) = rest.strip_suffix("/TXT/") else {
                return detail(StatusCode::NOT_FOUND, "Not found.");
            };
            let sub = if sub == "@" { "" } else { sub };
            let fqdn = if sub.is_empty() { "apps.test".to_owned() } else { format!("{sub}.apps.test") };
            let before = held(&seen, &fqdn);
            match method.as_str() {
                "GET" if before.is_empty() => detail(StatusCode::NOT_FOUND, "Not found."),
                "GET" => json_reply(StatusCode::OK, &set(sub, &before)),
                "PATCH" if before.is_empty() => detail(StatusCode::NOT_FOUND, "Not found."),
                "PATCH" => {
                    let change: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                    let Some(values) = unquote(&change["records"]) else {
                        return json_reply(StatusCode::BAD_REQUEST, &serde_json::json!({"records": ["TXT records must be quoted strings."]}));
                    };
                    if throttle(&seen) {
                        return too_many(&serde_json::json!({"detail": "Request was throttled. Expected available in 1 second."}));
                    }
                    if let Err(e) = replace_txt(&header, &seen, &fqdn, &values).await {
                        return detail(StatusCode::INTERNAL_SERVER_ERROR, &e);
                    }
                    if values.is_empty() {
                        http::Response::builder().status(StatusCode::NO_CONTENT).body(Full::new(Bytes::new())).unwrap()
                    } else {
                        json_reply(StatusCode::OK, &set(sub, &values))
                    }
                }
                _ => detail(StatusCode::METHOD_NOT_ALLOWED, &format!("Method \"{method}\" not allowed.")),
            }
        }
    })
    .await
}

/// The dynamic configuration of the provider tests: one router asking for
/// `*.<base>` and `<base>` on one certificate (a value each at one name),
/// and one router per host in `others` (`host0`, `host1`, …).
fn wildcard_and_apex(backend: &str, base: &str, others: &[&str]) -> String {
    let tls =
        format!("[[http.routers.site.tls.domains]]\nmain = \"*.{base}\"\nsans = [\"{base}\"]\n");
    let rules: Vec<(String, String)> =
        std::iter::once(("site".to_owned(), format!("Host(`www.{base}`)")))
            .chain(
                others
                    .iter()
                    .enumerate()
                    .map(|(i, h)| (format!("host{i}"), format!("Host(`{h}`)"))),
            )
            .collect();
    let list: Vec<(&str, &str, &str, &str)> = rules
        .iter()
        .enumerate()
        .map(|(i, (name, rule))| {
            (
                name.as_str(),
                rule.as_str(),
                "le",
                if i == 0 { tls.as_str() } else { "" },
            )
        })
        .collect();
    routers(backend, &list)
}

/// Waits until the ACME certificate `main` failed `times` times and a
/// retry is planned (between two attempts: while one runs, none is); its
/// `lastError` then.
async fn failed(gw: &Gangway, main: &str, times: u64) -> String {
    let waiting = |c: &serde_json::Value| {
        c["failures"].as_u64().unwrap_or(0) >= times && c["nextAttempt"].as_i64().is_some()
    };
    let last: Mutex<Option<serde_json::Value>> = Mutex::new(None);
    eventually(
        Duration::from_secs(60),
        &format!("{times} failed orders for {main}, and a retry planned"),
        || async {
            let found = cert(&certificates(gw).await, main).filter(waiting);
            let done = found.is_some();
            *last.lock().unwrap() = found;
            done
        },
    )
    .await;
    let c = last.lock().unwrap().take().unwrap();
    c["lastError"].as_str().unwrap_or_default().to_owned()
}

/// Puts someone else's TXT value at `fqdn` on `named` and in the
/// stand-in: a provider must leave it alone.
async fn someone_elses(setup: &Setup, seen: &Mutex<Seen>, fqdn: &str) -> &'static str {
    let theirs = "kept-by-someone-else";
    nsupdate(&setup.named.nsupdate_header(), "add", fqdn, theirs)
        .await
        .unwrap();
    seen.lock()
        .unwrap()
        .records
        .push(("r0".to_owned(), fqdn.to_owned(), theirs.to_owned()));
    theirs
}

#[tokio::test]
async fn desec_publishes_a_wildcard_and_its_apex_into_one_record_set() {
    if !ready("desec") {
        return;
    }
    let app = Backend::echo("app").await;
    let setup = Setup::start(None).await;
    let seen: Arc<Mutex<Seen>> = Arc::default();
    seen.lock().unwrap().rate_limited = 1;
    let fqdn = "_acme-challenge.apps.test";
    let theirs = someone_elses(&setup, &seen, fqdn).await;
    let api = desec_api(setup.named.nsupdate_header(), seen.clone()).await;
    let url = format!("{}/api/v1", api.url());
    let dynamic = wildcard_and_apex(
        &app.url(),
        "apps.test",
        &["solo.apps.test", "lost.elsewhere.test"],
    );
    let gw = setup
        .gangway(
            &dynamic,
            "desec",
            &[
                ("DESEC_TOKEN", DESEC_TOKEN),
                ("DESEC_API_URL", url.as_str()),
                ("DESEC_POLLING_INTERVAL", "1"),
            ],
            &[],
        )
        .await;
    // Two values beside someone else's in one set, validated by pebble
    // through named; a name with no set gets one created.
    setup
        .wait_for_certificate("www.apps.test", &["*.apps.test", "apps.test"])
        .await;
    setup
        .wait_for_certificate("solo.apps.test", &["solo.apps.test"])
        .await;
    eventually(Duration::from_secs(10), "the values removed", || async {
        held(&seen, fqdn) == [theirs]
            && seen.lock().unwrap().records.len() == 1
            && setup.named.txt(fqdn).await == [theirs]
            && setup
                .named
                .txt("_acme-challenge.solo.apps.test")
                .await
                .is_empty()
    })
    .await;
    assert!(
        gw.log().contains(
            "the API answered 429 Too Many Requests: Request was throttled. Expected available \
             in 1 second.; trying again in 1s"
        ),
        "{}",
        gw.log()
    );
    let calls = seen.lock().unwrap().calls.clone();
    let count = |p: &str| calls.iter().filter(|c| *c == p).count();
    let set = "/api/v1/domains/apps.test/rrsets/_acme-challenge/TXT/?";
    // Each value added to the set and written back without it; the other
    // name's set created, then emptied (which deletes it).
    assert!(count(&format!("PATCH {set}")) >= 4, "{calls:#?}");
    assert!(
        count("POST /api/v1/domains/apps.test/rrsets/?") >= 1,
        "{calls:#?}"
    );
    assert!(
        count("PATCH /api/v1/domains/apps.test/rrsets/_acme-challenge.solo/TXT/?") >= 1,
        "{calls:#?}"
    );
    assert!(
        count("GET /api/v1/domains/?owns_qname=_acme-challenge.apps.test") >= 2,
        "{calls:#?}"
    );
    assert_eq!(
        failed(&gw, "lost.elsewhere.test", 1).await,
        "DNS-01 challenge for `lost.elsewhere.test`: desec: adding the TXT record \
         `_acme-challenge.lost.elsewhere.test.`: the account has no zone for it (asked for \
         _acme-challenge.lost.elsewhere.test)"
    );
    assert!(!gw.log().contains(DESEC_TOKEN));
    drop(gw);

    // A token deSEC refuses: its own message, no secret, a retry later.
    let wrong = "desec-token-wrong";
    let dynamic = routers(&app.url(), &[("deny", "Host(`*.sub.apps.test`)", "le", "")]);
    let gw = setup
        .gangway(
            &dynamic,
            "desec",
            &[("DESEC_TOKEN", wrong), ("DESEC_API_URL", url.as_str())],
            &[],
        )
        .await;
    assert_eq!(
        failed(&gw, "*.sub.apps.test", 1).await,
        "DNS-01 challenge for `sub.apps.test`: desec: adding the TXT record \
         `_acme-challenge.sub.apps.test.`: the API refused the credentials (401 Unauthorized): \
         Invalid token."
    );
    assert!(!gw.log().contains(wrong));
}

/// The keys the Porkbun stand-in accepts.
const PORKBUN_KEY: &str = "pk1_0a1b2c3d";
const PORKBUN_SECRET: &str = "sk1_9f8e7d6c";

/// Porkbun's JSON API v3 under `/api/json/v3` for the calls gangway makes
/// (`/domain/listAll`; `/dns/create/<domain>`,
/// `/dns/retrieveByNameType/<domain>/TXT/<sub>`, `/dns/delete/<domain>/<id>`),
/// every one a `POST` whose JSON body carries `apikey` and `secretapikey`,
/// answering `{"status": "SUCCESS", …}` or 400 `{"status": "ERROR",
/// "message"}`, with its TTL minimum (300, as a string) and its gateway's
/// 503 page; the account holds the domain `apps.test`, whose records go
/// into `named` through RFC 2136.
async fn porkbun_api(header: String, seen: Arc<Mutex<Seen>>) -> Backend {
    Backend::serve(move |req: http::Request<hyper::body::Incoming>| {
        let (seen, header) = (seen.clone(), header.clone());
        async move {
            let (parts, body) = req.into_parts();
            let body = body.collect().await.unwrap().to_bytes();
            let method = parts.method.as_str().to_owned();
            let path = parts.uri.path().to_owned();
            seen.lock().unwrap().calls.push(format!("{method} {path}"));
            let error = |message: &str| json_reply(StatusCode::BAD_REQUEST, &serde_json::json!({"status": "ERROR", "message": message}));
            let ok = |mut extra: serde_json::Value| {
                extra["status"] = "SUCCESS".into();
                json_reply(StatusCode::OK, &extra)
            };
            let fields: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            if method != "POST" || fields["apikey"].as_str().is_none() {
                return error("All API requests require an API key.");
            }
            if fields["apikey"] != PORKBUN_KEY {
                return error("Invalid API key. (001)");
            }
            if fields["secretapikey"] != PORKBUN_SECRET {
                return error("Invalid API key. (002)");
            }
            let Some(rest) = path.strip_prefix("/api/json/v3/") else {
                return error("Invalid endpoint.");
            };
            if rest == "domain/listAll" {
                return ok(serde_json::json!({"domains": [{"domain": "apps.test", "status": "ACTIVE", "tld": "test", "createDate": "2026-01-01 00:00:00", "expireDate": "2027-01-01 00:00:00", "securityLock": "1", "whoisPrivacy": "1", "autoRenew": 0, "notLocal": 0}]}));
            }
            let parts: Vec<&str> = rest.split('/').collect();
            if parts.len() < 3 || parts[0] != "dns" {
                return error("Invalid endpoint.");
            }
            if parts[2] != "apps.test" {
                return error("Invalid domain.");
            }
            match parts[1] {
                "create" => {
                    let (Some(name), Some(content), Some(ttl)) = (fields["name"].as_str(), fields["content"].as_str(), fields["ttl"].as_str()) else {
                        return error("Invalid record data.");
                    };
                    if fields["type"] != "TXT" || name.ends_with("apps.test") {
                        return error("Invalid type or name.");
                    }
                    if ttl.parse::<u64>().map_or(true, |t| t < 300) {
                        return error("TTL must be at least 300.");
                    }
                    if throttle(&seen) {
                        return http::Response::builder()
                            .status(StatusCode::SERVICE_UNAVAILABLE)
                            .header(http::header::CONTENT_TYPE, "text/html")
                            .body(Full::new(Bytes::from_static(b"<html>\r\n<head><title>503 Service Temporarily Unavailable</title></head>\r\n<body>\r\n<center><h1>503 Service Temporarily Unavailable</h1></center>\r\n<hr><center>openresty</center>\r\n</body>\r\n</html>\r\n")))
                            .unwrap();
                    }
                    let fqdn = format!("{name}.apps.test");
                    if let Err(e) = nsupdate(&header, "add", &fqdn, content).await {
                        return error(&e);
                    }
                    let mut seen = seen.lock().unwrap();
                    seen.next_id += 1;
                    let id = 106_926_600 + seen.next_id;
                    seen.records.push((id.to_string(), fqdn, content.to_owned()));
                    ok(serde_json::json!({"id": id}))
                }
                "retrieveByNameType" if parts.len() >= 4 && parts[3] == "TXT" => {
                    let sub = parts.get(4).copied().unwrap_or_default();
                    let fqdn = if sub.is_empty() { "apps.test".to_owned() } else { format!("{sub}.apps.test") };
                    let records: Vec<serde_json::Value> = seen.lock().unwrap().records.iter().filter(|(_, n, _)| *n == fqdn)
                        .map(|(id, n, c)| serde_json::json!({"id": id, "name": n, "type": "TXT", "content": c, "ttl": "300", "prio": "0", "notes": ""}))
                        .collect();
                    ok(serde_json::json!({"records": records}))
                }
                "delete" if parts.len() == 4 => {
                    let found = take_record(&seen, parts[3]);
                    let Some((_, fqdn, content)) = found else {
                        return error("Invalid record id.");
                    };
                    if let Err(e) = nsupdate(&header, "delete", &fqdn, &content).await {
                        return error(&e);
                    }
                    ok(serde_json::json!({}))
                }
                _ => error("Invalid endpoint."),
            }
        }
    })
    .await
}

#[tokio::test]
async fn porkbun_publishes_a_wildcard_and_its_apex_with_keys_in_each_body() {
    if !ready("porkbun") {
        return;
    }
    let app = Backend::echo("app").await;
    let setup = Setup::start(None).await;
    let seen: Arc<Mutex<Seen>> = Arc::default();
    seen.lock().unwrap().rate_limited = 1;
    let fqdn = "_acme-challenge.apps.test";
    let theirs = someone_elses(&setup, &seen, fqdn).await;
    let api = porkbun_api(setup.named.nsupdate_header(), seen.clone()).await;
    let url = format!("{}/api/json/v3", api.url());
    let dynamic = wildcard_and_apex(&app.url(), "apps.test", &["lost.elsewhere.test"]);
    let gw = setup
        .gangway(
            &dynamic,
            "porkbun",
            &[
                ("PORKBUN_API_KEY", PORKBUN_KEY),
                ("PORKBUN_SECRET_API_KEY", PORKBUN_SECRET),
                ("PORKBUN_API_URL", url.as_str()),
                ("PORKBUN_POLLING_INTERVAL", "1"),
            ],
            &[],
        )
        .await;
    setup
        .wait_for_certificate("www.apps.test", &["*.apps.test", "apps.test"])
        .await;
    eventually(Duration::from_secs(10), "the records removed", || async {
        seen.lock().unwrap().records.len() == 1 && setup.named.txt(fqdn).await == [theirs]
    })
    .await;
    assert!(
        gw.log().contains(
            "porkbun: adding the TXT record `_acme-challenge.apps.test.` to domain `apps.test`: \
             the API answered 503 Service Unavailable: <html>"
        ) && gw.log().contains("trying again in 1s"),
        "{}",
        gw.log()
    );
    let calls = seen.lock().unwrap().calls.clone();
    let count = |p: &str| calls.iter().filter(|c| *c == p).count();
    // Every record created was deleted, by its id.
    let created = seen.lock().unwrap().next_id as usize;
    assert!(created >= 2, "{calls:#?}");
    assert!(
        count("POST /api/json/v3/dns/create/apps.test") > created,
        "{calls:#?}"
    );
    assert_eq!(
        calls
            .iter()
            .filter(|c| c.starts_with("POST /api/json/v3/dns/delete/apps.test/1069266"))
            .count(),
        created,
        "{calls:#?}"
    );
    assert!(
        count("POST /api/json/v3/dns/retrieveByNameType/apps.test/TXT/_acme-challenge") >= 2,
        "{calls:#?}"
    );
    assert_eq!(
        failed(&gw, "lost.elsewhere.test", 1).await,
        "DNS-01 challenge for `lost.elsewhere.test`: porkbun: finding the domain of \
         `_acme-challenge.lost.elsewhere.test.`: the account has no zone for it (asked for \
         _acme-challenge.lost.elsewhere.test, lost.elsewhere.test, elsewhere.test)"
    );
    assert!(!gw.log().contains(PORKBUN_SECRET));
    drop(gw);

    // A secret key Porkbun refuses: its own message, no secret, a retry.
    let wrong = "sk1_wrong0000";
    let dynamic = routers(&app.url(), &[("deny", "Host(`*.sub.apps.test`)", "le", "")]);
    let gw = setup
        .gangway(
            &dynamic,
            "porkbun",
            &[
                ("PORKBUN_API_KEY", PORKBUN_KEY),
                ("PORKBUN_SECRET_API_KEY", wrong),
                ("PORKBUN_API_URL", url.as_str()),
            ],
            &[],
        )
        .await;
    assert_eq!(
        failed(&gw, "*.sub.apps.test", 1).await,
        "DNS-01 challenge for `sub.apps.test`: porkbun: finding the domain of \
         `_acme-challenge.sub.apps.test.`: the API answered 400 Bad Request: Invalid API key. (002)"
    );
    assert!(!gw.log().contains(wrong));
}

/// The common story of an API provider, after its stand-in started:
/// gangway with `env` obtains one certificate for `*.apps.test` and
/// `apps.test` (two values at one name, beside someone else's), pebble
/// validates both through named, and every value of gangway's is removed
/// afterwards, on the stand-in and on named, while the other stays; a name
/// in no zone of the account fails with the provider's sentence (returned
/// with the running gangway).
async fn wildcard_story(
    setup: &Setup,
    seen: &Mutex<Seen>,
    provider: &str,
    env: &[(&str, &str)],
) -> (Gangway, String) {
    let app = Backend::echo("app").await;
    let fqdn = "_acme-challenge.apps.test";
    let dynamic = wildcard_and_apex(&app.url(), "apps.test", &["lost.elsewhere.test"]);
    let gw = setup.gangway(&dynamic, provider, env, &[]).await;
    setup
        .wait_for_certificate("www.apps.test", &["*.apps.test", "apps.test"])
        .await;
    let theirs = held(seen, fqdn);
    eventually(
        Duration::from_secs(10),
        "gangway's values removed",
        || async {
            seen.lock().unwrap().records.len() == theirs.len()
                && setup.named.txt(fqdn).await == theirs
        },
    )
    .await;
    let lost = failed(&gw, "lost.elsewhere.test", 1).await;
    (gw, lost)
}

/// gangway with `env` (holding a refused credential) asking for
/// `*.sub.apps.test`: the order's sentence once it failed and a retry is
/// planned, checked free of `secret` in the API and the log.
async fn refused_story(
    setup: &Setup,
    provider: &str,
    env: &[(&str, &str)],
    secret: &str,
) -> String {
    let app = Backend::echo("app").await;
    let dynamic = routers(&app.url(), &[("deny", "Host(`*.sub.apps.test`)", "le", "")]);
    let gw = setup.gangway(&dynamic, provider, env, &[]).await;
    let error = failed(&gw, "*.sub.apps.test", 1).await;
    assert!(!certificates(&gw).await.to_string().contains(secret));
    assert!(!gw.log().contains(secret));
    error
}

/// A JSON answer 429 with `Retry-After: 1`.
fn too_many(body: &serde_json::Value) -> http::Response<Full<Bytes>> {
    let mut reply = json_reply(StatusCode::TOO_MANY_REQUESTS, body);
    reply.headers_mut().insert(
        http::header::RETRY_AFTER,
        http::HeaderValue::from_static("1"),
    );
    reply
}

/// The token the Linode stand-in accepts.
const LINODE_TOKEN: &str = "linode-pat-7c2e";

/// Linode's API v4 under `/v4` for the calls gangway makes (domains
/// filtered by name with `X-Filter`; a domain's records: create, list
/// filtered by type with `page`/`page_size`, delete), with bearer
/// authentication, its error shape (`errors: [{field, reason}]`) and its
/// 429; the account holds the domain `apps.test` (id 1234), whose records
/// go into `named` through RFC 2136.
async fn linode_api(header: String, seen: Arc<Mutex<Seen>>) -> Backend {
    Backend::serve(move |req: http::Request<hyper::body::Incoming>| {
        let (seen, header) = (seen.clone(), header.clone());
        async move {
            let (parts, body) = req.into_parts();
            let body = body.collect().await.unwrap().to_bytes();
            let method = parts.method.as_str().to_owned();
            let path = parts.uri.path().to_owned();
            let query = parts.uri.query().unwrap_or_default().to_owned();
            let filter: serde_json::Value = parts.headers.get("x-filter").and_then(|v| serde_json::from_slice(v.as_bytes()).ok()).unwrap_or_default();
            seen.lock().unwrap().calls.push(format!("{method} {path}?{query} {filter}"));
            let error = |status: StatusCode, field: Option<&str>, reason: &str| {
                let mut e = serde_json::json!({"reason": reason});
                if let Some(f) = field { e["field"] = f.into(); }
                json_reply(status, &serde_json::json!({"errors": [e]}))
            };
            let auth = parts.headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or_default();
            if auth != format!("Bearer {LINODE_TOKEN}") {
                return error(StatusCode::UNAUTHORIZED, None, "Invalid Token");
            }
            let page = |data: Vec<serde_json::Value>| {
                let results = data.len();
                json_reply(StatusCode::OK, &serde_json::json!({"data": data, "page": 1, "pages": 1, "results": results}))
            };
            match (method.as_str(), path.as_str()) {
                ("GET", "/v4/domains") => {
                    if filter["domain"] == "apps.test" {
                        page(vec![serde_json::json!({"id": 1234, "domain": "apps.test", "type": "master", "status": "active", "soa_email": "admin@apps.test"})])
                    } else {
                        page(Vec::new())
                    }
                }
                ("POST", "/v4/domains/1234/records") => {
                    let new: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                    let (Some(name), Some(target), Some(ttl)) = (new["name"].as_str(), new["target"].as_str(), new["ttl_sec"].as_u64()) else {
                        return error(StatusCode::BAD_REQUEST, Some("target"), "target is required");
                    };
                    if new["type"] != "TXT" || name.ends_with("apps.test") {
                        return error(StatusCode::BAD_REQUEST, Some("name"), "Invalid record name");
                    }
                    if throttle(&seen) {
                        return too_many(&serde_json::json!({"errors": [{"reason": "Too Many Requests"}]}));
                    }
                    let fqdn = format!("{name}.apps.test");
                    if let Err(e) = nsupdate(&header, "add", &fqdn, target).await {
                        return error(StatusCode::INTERNAL_SERVER_ERROR, None, &e);
                    }
                    let mut seen = seen.lock().unwrap();
                    seen.next_id += 1;
                    let id = 5000 + seen.next_id;
                    seen.records.push((id.to_string(), fqdn, target.to_owned()));
                    json_reply(StatusCode::OK, &serde_json::json!({"id": id, "type": "TXT", "name": name, "target": target, "ttl_sec": ttl}))
                }
                ("GET", "/v4/domains/1234/records") => {
                    let data = seen.lock().unwrap().records.iter()
                        .filter(|_| filter["type"] == "TXT")
                        .map(|(id, n, t)| serde_json::json!({"id": id.parse::<u64>().unwrap_or(1), "type": "TXT", "name": n.trim_end_matches("apps.test").trim_end_matches('.'), "target": t, "ttl_sec": 300}))
                        .collect();
                    page(data)
                }
                ("DELETE", rest) if rest.starts_with("/v4/domains/1234/records/") => {
                    let id = rest.trim_start_matches("/v4/domains/1234/records/");
                    let found = take_record(&seen, id);
                    let Some((_, fqdn, target)) = found else {
                        return error(StatusCode::NOT_FOUND, None, "Not found");
                    };
                    if let Err(e) = nsupdate(&header, "delete", &fqdn, &target).await {
                        return error(StatusCode::INTERNAL_SERVER_ERROR, None, &e);
                    }
                    json_reply(StatusCode::OK, &serde_json::json!({}))
                }
                _ => error(StatusCode::NOT_FOUND, None, "Not found"),
            }
        }
    })
    .await
}

#[tokio::test]
async fn linode_publishes_a_wildcard_and_its_apex_through_its_api() {
    if !ready("linode") {
        return;
    }
    let setup = Setup::start(None).await;
    let seen: Arc<Mutex<Seen>> = Arc::default();
    seen.lock().unwrap().rate_limited = 1;
    someone_elses(&setup, &seen, "_acme-challenge.apps.test").await;
    let api = linode_api(setup.named.nsupdate_header(), seen.clone()).await;
    let url = format!("{}/v4", api.url());
    let (gw, lost) = wildcard_story(
        &setup,
        &seen,
        "linode",
        &[
            ("LINODE_TOKEN", LINODE_TOKEN),
            ("LINODE_API_URL", url.as_str()),
            ("LINODE_POLLING_INTERVAL", "1"),
        ],
    )
    .await;
    assert!(
        gw.log().contains(
            "linode: adding the TXT record `_acme-challenge.apps.test.` to domain `apps.test`: \
             the API answered 429 Too Many Requests: Too Many Requests; trying again in 1s"
        ),
        "{}",
        gw.log()
    );
    let calls = seen.lock().unwrap().calls.clone();
    let count = |p: &str| calls.iter().filter(|c| c.starts_with(p)).count();
    let created = seen.lock().unwrap().next_id as usize;
    assert!(created >= 2, "{calls:#?}");
    assert_eq!(
        count("DELETE /v4/domains/1234/records/50"),
        created,
        "{calls:#?}"
    );
    assert!(
        count("GET /v4/domains? {\"domain\":\"apps.test\"}") >= 2,
        "{calls:#?}"
    );
    assert!(
        count("GET /v4/domains/1234/records?page=1&page_size=500 {\"type\":\"TXT\"}") >= 2,
        "{calls:#?}"
    );
    assert_eq!(
        lost,
        "DNS-01 challenge for `lost.elsewhere.test`: linode: finding the domain of \
         `_acme-challenge.lost.elsewhere.test.`: the account has no zone for it (asked for \
         _acme-challenge.lost.elsewhere.test, lost.elsewhere.test, elsewhere.test)"
    );
    assert!(!gw.log().contains(LINODE_TOKEN));
    drop(gw);
    let wrong = "linode-pat-wrong";
    let error = refused_story(
        &setup,
        "linode",
        &[("LINODE_TOKEN", wrong), ("LINODE_API_URL", url.as_str())],
        wrong,
    )
    .await;
    assert_eq!(
        error,
        "DNS-01 challenge for `sub.apps.test`: linode: finding the domain of \
         `_acme-challenge.sub.apps.test.`: the API refused the credentials (401 Unauthorized): \
         Invalid Token"
    );
}

/// The API key the Vultr stand-in accepts.
const VULTR_KEY: &str = "VULTRKEY0123456789";

/// Vultr's API v2 under `/v2` for the calls gangway makes (the account's
/// domains; a domain's records: create, list, delete), with bearer
/// authentication, cursor pagination (`meta.links.next`), its error shape
/// (`{"error", "status"}`), TXT data quoted, and its 429; the account
/// holds the domain `apps.test`, whose records go into `named` through
/// RFC 2136.
async fn vultr_api(header: String, seen: Arc<Mutex<Seen>>) -> Backend {
    Backend::serve(move |req: http::Request<hyper::body::Incoming>| {
        let (seen, header) = (seen.clone(), header.clone());
        async move {
            let (parts, body) = req.into_parts();
            let body = body.collect().await.unwrap().to_bytes();
            let method = parts.method.as_str().to_owned();
            let path = parts.uri.path().to_owned();
            let query = parts.uri.query().unwrap_or_default().to_owned();
            seen.lock().unwrap().calls.push(format!("{method} {path}?{query}"));
            let error = |status: StatusCode, text: &str| json_reply(status, &serde_json::json!({"error": text, "status": status.as_u16()}));
            let auth = parts.headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or_default();
            if auth != format!("Bearer {VULTR_KEY}") {
                return error(StatusCode::UNAUTHORIZED, "Invalid API token.");
            }
            let cursor = query_param(&query, "cursor").unwrap_or_default();
            match (method.as_str(), path.as_str()) {
                // Two pages, as a cursor walks them.
                ("GET", "/v2/domains") if cursor.is_empty() => json_reply(StatusCode::OK, &serde_json::json!({"domains": [{"domain": "other.test", "date_created": "2026-01-01T00:00:00+00:00", "dns_sec": "disabled"}], "meta": {"total": 2, "links": {"next": "bmV4dA==", "prev": ""}}})),
                ("GET", "/v2/domains") => json_reply(StatusCode::OK, &serde_json::json!({"domains": [{"domain": "apps.test", "date_created": "2026-01-01T00:00:00+00:00", "dns_sec": "disabled"}], "meta": {"total": 2, "links": {"next": "", "prev": "cHJldg=="}}})),
                ("POST", "/v2/domains/apps.test/records") => {
                    let new: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                    let (Some(name), Some(data), Some(ttl)) = (new["name"].as_str(), new["data"].as_str(), new["ttl"].as_u64()) else {
                        return error(StatusCode::BAD_REQUEST, "Invalid record: name, data and ttl are required");
                    };
                    let Some(value) = data.strip_prefix('"').and_then(|d| d.strip_suffix('"')) else {
                        return error(StatusCode::BAD_REQUEST, "Invalid record data: TXT data must be quoted");
                    };
                    if new["type"] != "TXT" || name.ends_with("apps.test") {
                        return error(StatusCode::BAD_REQUEST, "Invalid record name");
                    }
                    if throttle(&seen) {
                        return too_many(&serde_json::json!({"error": "Rate limit reached - please try your request again later.", "status": 429}));
                    }
                    let fqdn = format!("{name}.apps.test");
                    if let Err(e) = nsupdate(&header, "add", &fqdn, value).await {
                        return error(StatusCode::INTERNAL_SERVER_ERROR, &e);
                    }
                    let mut seen = seen.lock().unwrap();
                    seen.next_id += 1;
                    let id = format!("cb676a46-66fd-4dfb-b839-44312347{:04}", seen.next_id);
                    seen.records.push((id.clone(), fqdn, value.to_owned()));
                    json_reply(StatusCode::CREATED, &serde_json::json!({"record": {"id": id, "type": "TXT", "name": name, "data": data, "priority": 0, "ttl": ttl}}))
                }
                ("GET", "/v2/domains/apps.test/records") => {
                    let records: Vec<serde_json::Value> = seen.lock().unwrap().records.iter()
                        .map(|(id, n, v)| serde_json::json!({"id": id, "type": "TXT", "name": n.trim_end_matches("apps.test").trim_end_matches('.'), "data": format!("\"{v}\""), "priority": 0, "ttl": 120}))
                        .collect();
                    let total = records.len();
                    json_reply(StatusCode::OK, &serde_json::json!({"records": records, "meta": {"total": total, "links": {"next": "", "prev": ""}}}))
                }
                ("DELETE", rest) if rest.starts_with("/v2/domains/apps.test/records/") => {
                    let id = rest.trim_start_matches("/v2/domains/apps.test/records/");
                    let found = take_record(&seen, id);
                    let Some((_, fqdn, value)) = found else {
                        return error(StatusCode::NOT_FOUND, "Record not found.");
                    };
                    if let Err(e) = nsupdate(&header, "delete", &fqdn, &value).await {
                        return error(StatusCode::INTERNAL_SERVER_ERROR, &e);
                    }
                    http::Response::builder().status(StatusCode::NO_CONTENT).body(Full::new(Bytes::new())).unwrap()
                }
                _ => error(StatusCode::NOT_FOUND, "Not found."),
            }
        }
    })
    .await
}

#[tokio::test]
async fn vultr_publishes_a_wildcard_and_its_apex_through_its_api() {
    if !ready("vultr") {
        return;
    }
    let setup = Setup::start(None).await;
    let seen: Arc<Mutex<Seen>> = Arc::default();
    seen.lock().unwrap().rate_limited = 1;
    someone_elses(&setup, &seen, "_acme-challenge.apps.test").await;
    let api = vultr_api(setup.named.nsupdate_header(), seen.clone()).await;
    let url = format!("{}/v2", api.url());
    let (gw, lost) = wildcard_story(
        &setup,
        &seen,
        "vultr",
        &[
            ("VULTR_API_KEY", VULTR_KEY),
            ("VULTR_API_URL", url.as_str()),
        ],
    )
    .await;
    assert!(
        gw.log().contains(
            "vultr: adding the TXT record `_acme-challenge.apps.test.` to domain `apps.test`: \
             the API answered 429 Too Many Requests: Rate limit reached - please try your \
             request again later.; trying again in 1s"
        ),
        "{}",
        gw.log()
    );
    let calls = seen.lock().unwrap().calls.clone();
    let count = |p: &str| calls.iter().filter(|c| c.starts_with(p)).count();
    let created = seen.lock().unwrap().next_id as usize;
    assert!(created >= 2, "{calls:#?}");
    assert_eq!(
        count("DELETE /v2/domains/apps.test/records/cb676a46"),
        created,
        "{calls:#?}"
    );
    // The domain list was walked to its second page.
    assert!(
        count("GET /v2/domains?per_page=500&cursor=bmV4dA==") >= 2,
        "{calls:#?}"
    );
    assert_eq!(
        lost,
        "DNS-01 challenge for `lost.elsewhere.test`: vultr: finding the domain of \
         `_acme-challenge.lost.elsewhere.test.`: the account has no zone for it (asked for \
         _acme-challenge.lost.elsewhere.test, lost.elsewhere.test, elsewhere.test)"
    );
    assert!(!gw.log().contains(VULTR_KEY));
    drop(gw);
    let wrong = "VULTRWRONG";
    let error = refused_story(
        &setup,
        "vultr",
        &[("VULTR_API_KEY", wrong), ("VULTR_API_URL", url.as_str())],
        wrong,
    )
    .await;
    assert_eq!(
        error,
        "DNS-01 challenge for `sub.apps.test`: vultr: finding the domain of \
         `_acme-challenge.sub.apps.test.`: the API refused the credentials (401 Unauthorized): \
         Invalid API token."
    );
}

/// The token the Hetzner stand-in accepts.
const HETZNER_TOKEN: &str = "hcloud-token-4Fz9";

/// The DNS part of the Hetzner Cloud API v1 for the calls gangway makes (a
/// zone by name; a TXT record set's `add_records` and `remove_records`
/// actions; an action by id), with bearer authentication, its error shape
/// (`{"error": {"code", "message"}}`), its TTL minimum (60), its 429, and
/// actions that are `running` until looked at once; the project holds the
/// zone `apps.test`, whose sets go into `named` through RFC 2136.
async fn hetzner_api(header: String, seen: Arc<Mutex<Seen>>) -> Backend {
    Backend::serve(move |req: http::Request<hyper::body::Incoming>| {
        let (seen, header) = (seen.clone(), header.clone());
        async move {
            let (parts, body) = req.into_parts();
            let body = body.collect().await.unwrap().to_bytes();
            let method = parts.method.as_str().to_owned();
            let path = parts.uri.path().to_owned();
            seen.lock().unwrap().calls.push(format!("{method} {path}"));
            let error = |status: StatusCode, code: &str, message: &str| json_reply(status, &serde_json::json!({"error": {"code": code, "message": message, "details": {}}}));
            let auth = parts.headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or_default();
            if auth != format!("Bearer {HETZNER_TOKEN}") {
                return error(StatusCode::UNAUTHORIZED, "unauthorized", "unable to authenticate");
            }
            let action = |id: u32, command: &str, status: &str| serde_json::json!({"action": {"id": id, "command": command, "status": status, "progress": if status == "running" { 50 } else { 100 }, "started": "2026-01-01T00:00:00+00:00", "finished": null, "resources": [{"id": 4711, "type": "zone"}], "error": null}});
            if method == "GET" && path == "/v1/zones/apps.test" {
                return json_reply(StatusCode::OK, &serde_json::json!({"zone": {"id": 4711, "name": "apps.test", "mode": "primary", "ttl": 3600, "status": "ok"}}));
            }
            if method == "GET" && path.starts_with("/v1/zones/") {
                return error(StatusCode::NOT_FOUND, "not_found", "zone not found");
            }
            if let Some(id) = path.strip_prefix("/v1/actions/") {
                let id = id.parse::<u32>().unwrap_or(0);
                return json_reply(StatusCode::OK, &action(id, "add_rrset_records", "success"));
            }
            let Some(rest) = path.strip_prefix("/v1/zones/apps.test/rrsets/") else {
                return error(StatusCode::NOT_FOUND, "not_found", "zone not found");
            };
            let Some((name, verb)) = rest.split_once("/TXT/actions/") else {
                return error(StatusCode::NOT_FOUND, "not_found", "rrset not found");
            };
            let fqdn = if name == "@" { "apps.test".to_owned() } else { format!("{name}.apps.test") };
            let change: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            let Some(values) = change["records"].as_array().and_then(|r| r.iter().map(|v| v["value"].as_str()?.strip_prefix('"')?.strip_suffix('"').map(str::to_owned)).collect::<Option<Vec<String>>>()) else {
                return error(StatusCode::BAD_REQUEST, "invalid_input", "invalid input in field 'records': TXT values must be quoted");
            };
            let mut after = held(&seen, &fqdn);
            match (method.as_str(), verb) {
                ("POST", "add_records") => {
                    if change["ttl"].as_u64().is_some_and(|t| t < 60) {
                        return error(StatusCode::BAD_REQUEST, "invalid_input", "invalid input in field 'ttl': must be at least 60");
                    }
                    if throttle(&seen) {
                        return too_many(&serde_json::json!({"error": {"code": "rate_limit_exceeded", "message": "limit of 3600 requests per hour reached", "details": {}}}));
                    }
                    after.extend(values.into_iter().filter(|v| !after.contains(v)).collect::<Vec<_>>());
                }
                ("POST", "remove_records") if after.is_empty() => return error(StatusCode::NOT_FOUND, "not_found", "rrset not found"),
                ("POST", "remove_records") => after.retain(|v| !values.contains(v)),
                _ => return error(StatusCode::NOT_FOUND, "not_found", "action not found"),
            }
            if let Err(e) = replace_txt(&header, &seen, &fqdn, &after).await {
                return error(StatusCode::INTERNAL_SERVER_ERROR, "server_error", &e);
            }
            let id = seen.lock().unwrap().next_id;
            json_reply(StatusCode::CREATED, &action(id, &format!("{}_rrset_records", verb.trim_end_matches("_records")), "running"))
        }
    })
    .await
}

#[tokio::test]
async fn hetzner_publishes_a_wildcard_and_its_apex_with_record_set_actions() {
    if !ready("hetzner") {
        return;
    }
    let setup = Setup::start(None).await;
    let seen: Arc<Mutex<Seen>> = Arc::default();
    seen.lock().unwrap().rate_limited = 1;
    someone_elses(&setup, &seen, "_acme-challenge.apps.test").await;
    let api = hetzner_api(setup.named.nsupdate_header(), seen.clone()).await;
    let url = format!("{}/v1", api.url());
    let (gw, lost) = wildcard_story(
        &setup,
        &seen,
        "hetzner",
        &[
            ("HETZNER_API_TOKEN", HETZNER_TOKEN),
            ("HETZNER_API_URL", url.as_str()),
        ],
    )
    .await;
    assert!(
        gw.log().contains(
            "hetzner: adding the TXT record `_acme-challenge.apps.test.` to zone `apps.test`: \
             the API answered 429 Too Many Requests: limit of 3600 requests per hour reached \
             (rate_limit_exceeded); trying again in 1s"
        ),
        "{}",
        gw.log()
    );
    let calls = seen.lock().unwrap().calls.clone();
    let count = |p: &str| calls.iter().filter(|c| *c == p).count();
    let set = "POST /v1/zones/apps.test/rrsets/_acme-challenge/TXT/actions";
    // Each value added (one after a 429) and removed, and each accepted
    // action looked at until it succeeded.
    assert!(count(&format!("{set}/add_records")) >= 3, "{calls:#?}");
    assert!(count(&format!("{set}/remove_records")) >= 2, "{calls:#?}");
    let actions = calls
        .iter()
        .filter(|c| c.starts_with("GET /v1/actions/"))
        .count();
    assert_eq!(actions, seen.lock().unwrap().next_id as usize, "{calls:#?}");
    assert_eq!(
        lost,
        "DNS-01 challenge for `lost.elsewhere.test`: hetzner: finding the zone of \
         `_acme-challenge.lost.elsewhere.test.`: the account has no zone for it (asked for \
         _acme-challenge.lost.elsewhere.test, lost.elsewhere.test, elsewhere.test)"
    );
    assert!(!gw.log().contains(HETZNER_TOKEN));
    drop(gw);
    let wrong = "hcloud-token-wrong";
    let error = refused_story(
        &setup,
        "hetzner",
        &[
            ("HETZNER_API_TOKEN", wrong),
            ("HETZNER_API_URL", url.as_str()),
        ],
        wrong,
    )
    .await;
    assert_eq!(
        error,
        "DNS-01 challenge for `sub.apps.test`: hetzner: finding the zone of \
         `_acme-challenge.sub.apps.test.`: the API refused the credentials (401 Unauthorized): \
         unable to authenticate (unauthorized)"
    );
}

/// The role the STS stand-in lets the Route 53 keys assume, and the
/// temporary keys it hands out for it.
const AWS_ROLE: &str = "arn:aws:iam::123456789012:role/dns-01";
const AWS_ROLE_KEYS: Keys = (
    "ASIAGANGWAYROLE",
    "role/secret+Key0000000000000000000000000",
    Some("FwoGZXIvYXdzEJr//////////wEaDGangwayRoleSession"),
);

/// AWS STS's query API for `AssumeRole` (a form `POST /` with `Action`,
/// `Version` 2011-06-15, `RoleArn`, `RoleSessionName`, `ExternalId`),
/// SigV4 (service `sts`) checked with the Route 53 keys, answering the
/// role's temporary credentials in STS's XML, or its `AccessDenied`.
async fn sts_api(seen: Arc<Mutex<Seen>>) -> Backend {
    const NS: &str = "https://sts.amazonaws.com/doc/2011-06-15/";
    Backend::serve(move |req: http::Request<hyper::body::Incoming>| {
        let seen = seen.clone();
        async move {
            let (parts, body) = req.into_parts();
            let body = body.collect().await.unwrap().to_bytes();
            let form = String::from_utf8_lossy(&body).into_owned();
            seen.lock().unwrap().calls.push(format!("{} {} {form}", parts.method, parts.uri.path()));
            let xml = |status: StatusCode, text: String| {
                http::Response::builder()
                    .status(status)
                    .header(http::header::CONTENT_TYPE, "text/xml")
                    .body(Full::new(Bytes::from(text)))
                    .unwrap()
            };
            let error = |status: StatusCode, code: &str, message: &str| {
                xml(status, format!("<ErrorResponse xmlns=\"{NS}\"><Error><Type>Sender</Type><Code>{code}</Code><Message>{message}</Message></Error><RequestId>s-1</RequestId></ErrorResponse>"))
            };
            if let Some((code, message)) = sigv4_problem(parts.method.as_str(), &parts.uri, &parts.headers, &body, ("sts", (AWS_KEY_ID, AWS_SECRET, None))) {
                return error(StatusCode::FORBIDDEN, code, message);
            }
            let param = |name: &str| query_param(&form, name).unwrap_or_default();
            if parts.method != "POST" || param("Action") != "AssumeRole" || param("Version") != "2011-06-15" || param("RoleSessionName").is_empty() {
                return error(StatusCode::BAD_REQUEST, "InvalidAction", "Could not find operation for this request");
            }
            let role = param("RoleArn").replace("%3A", ":").replace("%2F", "/");
            if role != AWS_ROLE || param("ExternalId") != "gangway-ext-1" {
                return error(StatusCode::FORBIDDEN, "AccessDenied", &format!("User: arn:aws:iam::123456789012:user/dns is not authorized to perform: sts:AssumeRole on resource: {role}"));
            }
            let (id, secret, token) = AWS_ROLE_KEYS;
            xml(StatusCode::OK, format!("<AssumeRoleResponse xmlns=\"{NS}\"><AssumeRoleResult><Credentials><AccessKeyId>{id}</AccessKeyId><SecretAccessKey>{secret}</SecretAccessKey><SessionToken>{}</SessionToken><Expiration>2099-01-01T00:00:00Z</Expiration></Credentials><AssumedRoleUser><Arn>{AWS_ROLE}/gangway</Arn><AssumedRoleId>AROA1:gangway</AssumedRoleId></AssumedRoleUser></AssumeRoleResult><ResponseMetadata><RequestId>s-2</RequestId></ResponseMetadata></AssumeRoleResponse>", token.unwrap_or_default()))
        }
    })
    .await
}

#[tokio::test]
async fn route53_assumes_a_role_through_sts_and_signs_with_its_temporary_keys() {
    if !ready("route53_role") {
        return;
    }
    let setup = Setup::start(None).await;
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let sts_seen: Arc<Mutex<Seen>> = Arc::default();
    // Route 53 accepts only the role's keys: the user's keys reach STS.
    let api = route53_api(setup.named.nsupdate_header(), seen.clone(), AWS_ROLE_KEYS).await;
    let sts = sts_api(sts_seen.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let secret_file = dir.path().join("aws-secret");
    std::fs::write(&secret_file, format!("{AWS_SECRET}\n")).unwrap();
    let (url, sts_url, secret_file) = (api.url(), sts.url(), secret_file.display().to_string());
    let env = [
        ("AWS_ACCESS_KEY_ID", AWS_KEY_ID),
        ("AWS_SECRET_ACCESS_KEY_FILE", secret_file.as_str()),
        ("AWS_ASSUME_ROLE_ARN", AWS_ROLE),
        ("AWS_EXTERNAL_ID", "gangway-ext-1"),
        ("AWS_REGION", "eu-west-1"),
        ("AWS_ENDPOINT_URL_ROUTE_53", url.as_str()),
        ("AWS_ENDPOINT_URL_STS", sts_url.as_str()),
    ];
    let (gw, _) = wildcard_story(&setup, &seen, "route53", &env).await;
    // The role was assumed (at most once by each of the two orders that
    // start together) and its keys reused for every later call.
    let assumed = sts_seen.lock().unwrap().calls.clone();
    assert!((1..=2).contains(&assumed.len()), "{assumed:#?}");
    assert!(
        assumed.iter().all(|c| c.starts_with("POST / Action=AssumeRole&DurationSeconds=900&ExternalId=gangway-ext-1&RoleArn=arn%3Aaws%3Aiam%3A%3A123456789012%3Arole%2Fdns-01&RoleSessionName=")),
        "{assumed:#?}"
    );
    assert!(seen.lock().unwrap().calls.len() > 2 * assumed.len());
    assert!(seen.lock().unwrap().next_id >= 4);
    assert!(!gw.log().contains(AWS_SECRET));
    assert!(!gw.log().contains(AWS_ROLE_KEYS.1));
    drop(gw);

    // A role the user may not assume: STS's own sentence.
    let mut env = env.to_vec();
    env[3] = ("AWS_EXTERNAL_ID", "wrong-ext");
    let error = refused_story(&setup, "route53", &env, AWS_SECRET).await;
    assert_eq!(
        error,
        "DNS-01 challenge for `sub.apps.test`: route53: finding the hosted zone of \
         `_acme-challenge.sub.apps.test.`: assuming the role \
         `arn:aws:iam::123456789012:role/dns-01`: the API refused the credentials (403 \
         Forbidden): User: arn:aws:iam::123456789012:user/dns is not authorized to perform: \
         sts:AssumeRole on resource: arn:aws:iam::123456789012:role/dns-01 (AccessDenied)"
    );
}

/// The AutoDNS user and password the stand-in accepts.
const AUTODNS_USER: &str = "autodns-user";
const AUTODNS_PASSWORD: &str = "autodns-pass-7Hq";

/// AutoDNS's JSON API under `/v1` for the calls gangway makes (`POST
/// /zone/_search` filtered on the zone's name; `POST /zone/{origin}/_stream`
/// with `adds` and `rems`), with HTTP basic authentication, the
/// `X-Domainrobot-Context` header and its error envelope; the account
/// holds the zone `apps.test`, whose records go into `named` through
/// RFC 2136. (AutoDNS itself cannot be reached from here.)
async fn autodns_api(header: String, seen: Arc<Mutex<Seen>>) -> Backend {
    use base64::Engine as _;
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD
            .encode(format!("{AUTODNS_USER}:{AUTODNS_PASSWORD}"))
    );
    Backend::serve(move |req: http::Request<hyper::body::Incoming>| {
        let (seen, header, basic) = (seen.clone(), header.clone(), basic.clone());
        async move {
            let (parts, body) = req.into_parts();
            let body = body.collect().await.unwrap().to_bytes();
            let path = parts.uri.path().to_owned();
            seen.lock().unwrap().calls.push(format!("{} {path}", parts.method));
            let error = |status: StatusCode, code: &str, text: &str| {
                json_reply(status, &serde_json::json!({
                    "status": {"code": "E0001", "text": "Request failed.", "type": "ERROR"},
                    "messages": [{"text": text, "code": code, "status": "ERROR"}],
                }))
            };
            let auth = parts.headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or_default();
            let context = parts.headers.get("x-domainrobot-context").and_then(|v| v.to_str().ok()).unwrap_or_default();
            if auth != basic || context != "4" {
                return error(StatusCode::UNAUTHORIZED, "EF00000", "Authentication failed.");
            }
            let json: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            if path == "/v1/zone/_search" {
                let found = json["filters"][0]["value"] == "apps.test";
                let data = if found { serde_json::json!([{"origin": "apps.test", "virtualNameServer": "a.ns14.net"}]) } else { serde_json::json!([]) };
                return json_reply(StatusCode::OK, &serde_json::json!({"status": {"code": "S0205", "text": "Zones found.", "type": "SUCCESS"}, "data": data}));
            }
            if path != "/v1/zone/apps.test/_stream" {
                return error(StatusCode::NOT_FOUND, "EF02020", "Zone not found.");
            }
            let name = |r: &serde_json::Value| match r["name"].as_str().unwrap_or_default() {
                "" => "apps.test".to_owned(),
                n => format!("{n}.apps.test"),
            };
            for (key, op) in [("adds", "add"), ("rems", "delete")] {
                for r in json[key].as_array().into_iter().flatten() {
                    let (fqdn, value) = (name(r), r["value"].as_str().unwrap_or_default().to_owned());
                    if let Err(e) = nsupdate(&header, op, &fqdn, &value).await {
                        return error(StatusCode::INTERNAL_SERVER_ERROR, "EF00500", &e);
                    }
                    let mut seen = seen.lock().unwrap();
                    if op == "add" {
                        seen.records.push((String::new(), fqdn, value));
                    } else {
                        seen.records.retain(|(_, n, v)| !(*n == fqdn && *v == value));
                    }
                }
            }
            json_reply(StatusCode::OK, &serde_json::json!({"status": {"code": "S0306", "text": "Zone updated.", "type": "SUCCESS"}, "data": [{"origin": "apps.test"}]}))
        }
    })
    .await
}

#[tokio::test]
async fn autodns_publishes_a_wildcard_and_its_apex_through_its_zone_stream() {
    let Some((app, setup, seen, api)) = with_stand_in("autodns", autodns_api).await else {
        return;
    };
    let dynamic = routers(
        &app.url(),
        &[(
            "site",
            "Host(`www.apps.test`)",
            "le",
            "[[http.routers.site.tls.domains]]\nmain = \"*.apps.test\"\nsans = [\"apps.test\"]\n",
        )],
    );
    let url = format!("{}/v1/", api.url());
    let gw = setup
        .gangway(
            &dynamic,
            "autodns",
            &[
                ("AUTODNS_API_USER", AUTODNS_USER),
                ("AUTODNS_API_PASSWORD", AUTODNS_PASSWORD),
                ("AUTODNS_ENDPOINT", url.as_str()),
                ("AUTODNS_POLLING_INTERVAL", "1"),
            ],
            &[],
        )
        .await;
    setup
        .wait_for_certificate("www.apps.test", &["*.apps.test", "apps.test"])
        .await;
    eventually(Duration::from_secs(10), "the records removed", || async {
        seen.lock().unwrap().records.is_empty()
            && setup
                .named
                .txt("_acme-challenge.apps.test")
                .await
                .is_empty()
    })
    .await;
    let calls = seen.lock().unwrap().calls.clone();
    let streams = calls
        .iter()
        .filter(|c| *c == "POST /v1/zone/apps.test/_stream")
        .count();
    assert!(streams >= 4, "two adds and two removals: {calls:#?}");
    assert!(!gw.log().contains(AUTODNS_PASSWORD));
}
