//! The dashboard in a real browser: Debian's Chromium driven by
//! playwright-core (`tests/dashboard/drive.mjs`) against the real gangway.
//! Screenshots land in `target/dashboard-screenshots/`.
//!
//! Needs `node`, `/usr/bin/chromium` (or `CHROMIUM`) and
//! `tests/dashboard/node_modules` (`scripts/ci/browser-up` installs them).
//! Without them the test is skipped, unless `GANGWAY_TEST_STRICT=1`.
//! With Docker it also checks containers, and with Debian's redis-server
//! (`scripts/ci/servers-up`; required under `GANGWAY_TEST_STRICT=1`) the
//! keys a router from Redis is written in.

use crate::support;

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use support::docker::{Run, Spec};
use support::{Backend, Gangway, eventually, free_port};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

fn config(b: &Backend, dead: &[String; 3], changed: bool, cert: &(String, String)) -> String {
    let [dead, gone_a, gone_b] = dead;
    let mut s = format!(
        r#"
[http.routers.app]
rule = "Host(`app.test`)"
service = "app"
[http.routers.api-path]
rule = "Host(`app.test`) && PathPrefix(`/api`)"
service = "app"
[http.routers.copy]
rule = "Host(`app.test`)"
service = "app"
[http.routers.canary]
rule = "Host(`app.test`) && Header(`X-Env`, `canary`)"
service = "app"
[http.routers.chain]
rule = "Host(`chain.test`)"
service = "app"
middlewares = ["strip", "hdr"]
[http.routers.broken]
rule = "Host(`broken.test`) &&"
service = "app"
[http.routers.secure]
rule = "Host(`WWW.secure.test`) && PathPrefix(`/shop`)"
service = "app"
[http.routers.secure.tls]
[http.services.app.loadBalancer]
[[http.services.app.loadBalancer.servers]]
url = "{}"
[http.routers.checked]
rule = "Host(`checked.test`)"
service = "checked"
[http.services.checked.loadBalancer]
[[http.services.checked.loadBalancer.servers]]
url = "{}"
[[http.services.checked.loadBalancer.servers]]
url = "{dead}"
[http.services.checked.loadBalancer.healthCheck]
path = "/"
interval = "100ms"
[http.routers.gone-site]
rule = "Host(`gone.test`)"
service = "gone"
[http.services.gone.loadBalancer]
[[http.services.gone.loadBalancer.servers]]
url = "{gone_a}"
[[http.services.gone.loadBalancer.servers]]
url = "{gone_b}"
[http.services.gone.loadBalancer.healthCheck]
path = "/"
interval = "100ms"
[http.routers.bare]
rule = "Host(`bare.test`)"
service = "app"
[http.routers.bare.tls]
[http.routers.wild]
rule = "Host(`*.wild.test`)"
service = "app"
[http.routers.wild.tls]
certResolver = "dns"
[http.services.split.weighted]
[[http.services.split.weighted.services]]
name = "app"
weight = 3
[http.middlewares.strip.stripPrefix]
prefixes = ["/x"]
[http.middlewares.hdr.headers.customRequestHeaders]
X-From = "gangway"
[http.routers.chained]
rule = "Host(`chained.test`)"
service = "app"
middlewares = ["outer"]
[http.middlewares.outer.chain]
middlewares = ["only-in-chain", "hdr"]
[http.middlewares.only-in-chain.stripPrefix]
prefixes = ["/z"]
[tcp.routers.db]
entryPoints = ["gangway"]
rule = "HostSNI(`db.test`)"
service = "db"
middlewares = ["local"]
[tcp.routers.db.tls]
passthrough = true
[tcp.routers.named]
entryPoints = ["gangway"]
rule = "HostSNI(`named.test`)"
service = "db"
[[tcp.services.db.loadBalancer.servers]]
address = "127.0.0.1:5432"
[tcp.middlewares.local.ipAllowList]
sourceRange = ["127.0.0.1/32"]
[udp.routers.dns]
service = "dns"
[[udp.services.dns.loadBalancer.servers]]
address = "127.0.0.1:5353"
"#,
        b.url(),
        b.url()
    );
    // A certificate from a file, for the certificates page.
    s.push_str(&format!(
        "[[tls.certificates]]\ncertFile = {:?}\nkeyFile = {:?}\n",
        cert.0, cert.1
    ));
    // The change the open page must show without a reload: one router
    // added, one removed.
    s.push_str(if changed {
        "[http.routers.fresh]\nrule = \"Host(`fresh.test`)\"\nservice = \"app\"\n"
    } else {
        "[http.routers.orphan]\nrule = \"Host(`orphan.test`)\"\nservice = \"missing\"\n"
    });
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_in_a_real_browser_live_and_read_only() {
    let Some((chromium, dir)) = support::browser::parts_or_skip("dashboard browser test") else {
        return;
    };
    let b = Backend::echo("b").await;
    let internal = free_port();
    let ep = format!("--entryPoints.gangway.address=127.0.0.1:{internal}");
    let files = tempfile::tempdir().expect("tempdir");
    let ca = support::tls::TestCa::new("dashboard test CA");
    let (chain, key) = ca.issue(&["secure.test", "www.secure.test"]);
    let cert = (
        files.path().join("secure.pem").display().to_string(),
        files.path().join("secure.key").display().to_string(),
    );
    std::fs::write(&cert.0, chain).expect("write cert");
    std::fs::write(&cert.1, key).expect("write key");
    // With a Docker daemon, one container the provider sees but does not
    // route (no `gangway.enable`), for the containers page.
    let run = Run::new("dashboard");
    let docker = support::docker::ready("dashboard containers").await;
    let constraint = run.constraint();
    // HTTP/3 on `web`, which the entry points table says.
    let mut args = vec![
        "--api.insecure=true",
        ep.as_str(),
        "--entryPoints.web.http3.advertisedPort=8443",
    ];
    if docker {
        // exposedByDefault=false: the container without `gangway.enable`
        // below is listed as not routed, with the reason.
        args.extend([
            "--providers.docker",
            "--providers.docker.exposedByDefault=false",
            constraint.as_str(),
        ]);
    }
    // Nothing listens there: its health check fails, so it shows DOWN. The
    // other two are every server of `gone`, which is then an error.
    let dead: [String; 3] = std::array::from_fn(|_| format!("http://127.0.0.1:{}", free_port()));
    // A DNS-01 resolver whose CA cannot be reached: its wildcard
    // certificate is listed with its challenge and the failure.
    let ca = format!(
        "--certificatesResolvers.dns.acme.caServer=https://127.0.0.1:{}/dir",
        free_port()
    );
    let storage = format!(
        "--certificatesResolvers.dns.acme.storage={}",
        files.path().join("acme").display()
    );
    args.extend([
        ca.as_str(),
        storage.as_str(),
        "--certificatesResolvers.dns.acme.dnsChallenge.provider=exec",
    ]);
    // A router written in a real Redis: its page lists the keys it is
    // written in.
    let test = "every_page_in_a_real_browser_live_and_read_only";
    let redis = support::kv::Redis::start(test, true).await;
    let redis_endpoint = redis.as_ref().map(|r| r.endpoint()).unwrap_or_default();
    if let Some(redis) = &redis {
        for (key, value) in [
            (
                "gangway/http/routers/kvapp/rule",
                "Host(`kv.test`)".to_owned(),
            ),
            ("gangway/http/routers/kvapp/entryPoints/0", "web".to_owned()),
            ("gangway/http/routers/kvapp/service", "kvapp".to_owned()),
            (
                "gangway/http/services/kvapp/loadBalancer/servers/0/url",
                b.url(),
            ),
        ] {
            redis.set(key, &value);
        }
        args.push(redis_endpoint.as_str());
    }
    // A resolver sharing its certificates through the same Redis, keys in
    // clear: the certificates page shows the store and the warning.
    let shared_storage = redis
        .as_ref()
        .map(|r| {
            format!(
                "--certificatesResolvers.shared.acme.storage=redis://127.0.0.1:{}/0",
                r.port
            )
        })
        .unwrap_or_default();
    if redis.is_some() {
        args.push(shared_storage.as_str());
    }
    let gw = Gangway::with_file_env(
        &config(&b, &dead, false, &cert),
        &args,
        &[("EXEC_PATH", "/bin/true")],
    )
    .await;
    let hidden = if docker {
        let spec = Spec::new("hidden");
        let port = spec.port.to_string();
        let spec = spec.label(
            "gangway.http.services.hidden.loadbalancer.server.port",
            &port,
        );
        run.start(&spec).await
    } else {
        String::new()
    };
    // And one it routes: its service page traces the server to it.
    let (shown, shown_server) = if docker {
        let spec = Spec::new("shown").routed("gangway", "shown", "shown.test", "shown");
        let server = format!("http://127.0.0.1:{}", spec.port);
        (run.start(&spec).await, server)
    } else {
        (String::new(), String::new())
    };
    let base = format!("http://127.0.0.1:{internal}");
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<http_body_util::Full<bytes::Bytes>>();
    eventually(
        Duration::from_secs(10),
        "the API lists the file's and Redis's routers and the container",
        || async {
            let uri = format!("{base}/api/http/routers/broken@file");
            let routers = client
                .get(uri.parse().unwrap())
                .await
                .is_ok_and(|r| r.status() == 200);
            let uri = format!("{base}/api/containers");
            let containers = match client.get(uri.parse().unwrap()).await {
                Ok(r) => http_body_util::BodyExt::collect(r.into_body())
                    .await
                    .map(|b| {
                        let text = String::from_utf8_lossy(&b.to_bytes()).into_owned();
                        text.contains(&hidden) && text.contains(&shown)
                    })
                    .unwrap_or(false),
                Err(_) => false,
            };
            // The health checks have found every server of `gone` down.
            let uri = format!("{base}/api/http/services/gone@file");
            let gone = match client.get(uri.parse().unwrap()).await {
                Ok(r) => http_body_util::BodyExt::collect(r.into_body())
                    .await
                    .map(|b| {
                        String::from_utf8_lossy(&b.to_bytes()).contains("\"status\":\"disabled\"")
                    })
                    .unwrap_or(false),
                Err(_) => false,
            };
            // The wildcard's first order has failed.
            let uri = format!("{base}/api/tls/certificates");
            let failed = match client.get(uri.parse().unwrap()).await {
                Ok(r) => http_body_util::BodyExt::collect(r.into_body())
                    .await
                    .map(|b| String::from_utf8_lossy(&b.to_bytes()).contains("CA unreachable"))
                    .unwrap_or(false),
                Err(_) => false,
            };
            // The router from Redis is read.
            let uri = format!("{base}/api/http/routers/kvapp@redis");
            let from_redis = redis.is_none()
                || client
                    .get(uri.parse().unwrap())
                    .await
                    .is_ok_and(|r| r.status() == 200);
            routers && containers && gone && failed && from_redis
        },
    )
    .await;

    let shots = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("target dir")
        .join("dashboard-screenshots");
    let _ = std::fs::remove_dir_all(&shots);
    let mut node = tokio::process::Command::new("node")
        .arg("drive.mjs")
        .current_dir(&dir)
        .env("GANGWAY_URL", &base)
        .env("NOT_ROUTED_CONTAINER", &hidden)
        .env("ROUTED_CONTAINER", &shown)
        .env("ROUTED_SERVER", &shown_server)
        .env(
            "KV_ROUTER",
            if redis.is_some() { "kvapp@redis" } else { "" },
        )
        .env("SCREENSHOT_DIR", &shots)
        .env("CHROMIUM", &chromium)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start node");
    let mut stdin = node.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(node.stdout.take().expect("stdout")).lines();
    let mut stderr = node.stderr.take().expect("stderr");
    // Read concurrently, so a chatty browser cannot fill the pipe and stall.
    let stderr = tokio::spawn(async move {
        let mut err = String::new();
        let _ = tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut err).await;
        err
    });
    let mut transcript = String::new();
    let mut rewrote = false;
    let run = async {
        while let Some(line) = stdout.next_line().await.expect("read driver") {
            println!("{line}");
            transcript.push_str(&line);
            transcript.push('\n');
            if line == "REWRITE" {
                gw.rewrite(&config(&b, &dead, true, &cert));
                rewrote = true;
                stdin.write_all(b"REWRITTEN\n").await.expect("tell driver");
                stdin.flush().await.expect("tell driver");
            }
        }
        node.wait().await.expect("driver exit")
    };
    // A bound for the whole browser session, so a hung browser fails the
    // test instead of stalling the suite.
    let status = tokio::time::timeout(Duration::from_secs(300), run)
        .await
        .unwrap_or_else(|_| panic!("the browser session did not finish:\n{transcript}"));
    let err = stderr.await.unwrap_or_default();
    assert!(
        status.success(),
        "dashboard checks failed:\n{transcript}\n{err}\ngangway log:\n{}",
        gw.log()
    );
    assert!(rewrote, "the driver reached the live-update step");
    assert!(
        transcript.contains("all GET"),
        "the driver checked every request"
    );
    for page in [
        "overview",
        "routers",
        "router",
        "router-error",
        "services",
        "service",
        "service-down",
        "middlewares",
        "middleware",
        "certificates",
        "containers",
        "explain",
    ] {
        for variant in ["light-desktop", "dark-desktop", "light-phone", "dark-phone"] {
            let file = shots.join(format!("{page}-{variant}.png"));
            assert!(
                std::fs::metadata(&file).is_ok_and(|m| m.len() > 1000),
                "screenshot {}",
                file.display()
            );
        }
    }
    let file = shots.join("router-shadowed-1440x900.png");
    assert!(
        std::fs::metadata(&file).is_ok_and(|m| m.len() > 1000),
        "screenshot {}",
        file.display()
    );
}

/// An echo server on a fixed port for TCP: dropping it stops it, its open
/// connections included, and it can be started again on the same port.
struct TcpEcho(tokio::task::JoinHandle<()>);

impl TcpEcho {
    async fn on(port: u16) -> TcpEcho {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .expect("bind TCP echo");
        TcpEcho(tokio::spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            while let Ok((mut stream, _)) = listener.accept().await {
                while connections.try_join_next().is_some() {}
                connections.spawn(async move {
                    let (mut r, mut w) = stream.split();
                    let _ = tokio::io::copy(&mut r, &mut w).await;
                });
            }
        }))
    }
}

impl Drop for TcpEcho {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// One connection through gangway's TCP entry point: whether the echo
/// came back.
async fn tcp_echoes(port: u16) -> bool {
    let Ok(mut conn) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await else {
        return false;
    };
    if conn.write_all(b"ping").await.is_err() {
        return false;
    }
    let mut buf = [0u8; 4];
    matches!(
        tokio::time::timeout(
            Duration::from_secs(2),
            tokio::io::AsyncReadExt::read_exact(&mut conn, &mut buf)
        )
        .await,
        Ok(Ok(_)) if &buf == b"ping"
    )
}

/// What the dashboard and the API say about serving follows real backends
/// stopped and started: a weighted service whose larger member's server is
/// gone loses no request (the refused ones go on to the other member: a
/// warning, its router serving, explain says served), a failover whose
/// main server is gone serves from its fallback and says so, servers that
/// answer 502 make their service and router an error, a server never tried
/// reads unknown, a health-checked member that is down is skipped (a
/// warning only), a TCP service and router with their only server gone are
/// errors on the overview; all of it clears once the backends are back.
/// Beside them, a router with a mistyped key is shown with what was read
/// of it, and every file object with its file and line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serving_follows_backends_stopped_and_started() {
    let test = "serving_follows_backends_stopped_and_started";
    if support::browser::parts_or_skip(test).is_none() {
        return;
    }
    let good = Backend::echo("good").await;
    let erring = support::counted::Counted::start("erring").await;
    let (bad_port, checked_port, db_port) = (free_port(), free_port(), free_port());
    let mut bad = Some(Backend::echo_on("bad", bad_port).await);
    let mut checked = Some(Backend::echo_on("checked", checked_port).await);
    let mut db = Some(TcpEcho::on(db_port).await);
    let (internal, tcp) = (free_port(), free_port());
    let dynamic = format!(
        r#"
[http.routers.flaky]
rule = "Host(`flaky.test`)"
service = "flaky"
[[http.services.flaky.weighted.services]]
name = "good"
weight = 1
[[http.services.flaky.weighted.services]]
name = "bad"
weight = 3
[http.routers.steady]
rule = "Host(`steady.test`)"
service = "steady"
[[http.services.steady.weighted.services]]
name = "good"
weight = 1
[[http.services.steady.weighted.services]]
name = "checked"
weight = 3
[http.routers.down]
rule = "Host(`down.test`)"
service = "bad"
[http.routers.fo]
rule = "Host(`fo.test`)"
service = "fo"
[http.services.fo.failover]
service = "bad"
fallback = "good"
[http.routers.erring]
rule = "Host(`erring.test`)"
service = "erring"
[[http.services.erring.loadBalancer.servers]]
url = "{erring}"
[http.routers.idle]
rule = "Host(`idle.test`)"
service = "idle"
[[http.services.idle.loadBalancer.servers]]
url = "http://127.0.0.1:{idle_port}"
[http.routers.typo]
rule = "Host(`typo.test`)"
servce = "good"
[[http.services.good.loadBalancer.servers]]
url = "{good}"
[[http.services.bad.loadBalancer.servers]]
url = "http://127.0.0.1:{bad_port}"
# A passive health check that tolerates many failures keeps the stopped
# server in the rotation: each request of its member's share of
# flaky.test meets the refusal and goes on to the other member.
[http.services.bad.loadBalancer.passiveHealthCheck]
maxFailedAttempts = 1000
failureWindow = "1s"
[[http.services.checked.loadBalancer.servers]]
url = "http://127.0.0.1:{checked_port}"
[http.services.checked.loadBalancer.healthCheck]
path = "/"
interval = "100ms"
timeout = "500ms"
[tcp.routers.db]
entryPoints = ["db"]
rule = "HostSNI(`*`)"
service = "db"
[[tcp.services.db.loadBalancer.servers]]
address = "127.0.0.1:{db_port}"
"#,
        good = good.url(),
        erring = erring.url(),
        idle_port = free_port(),
    );
    let gw = Gangway::with_file(
        &dynamic,
        &[
            "--api.insecure=true",
            &format!("--entryPoints.gangway.address=127.0.0.1:{internal}"),
            &format!("--entryPoints.db.address=127.0.0.1:{tcp}"),
        ],
    )
    .await;
    let base = format!("http://127.0.0.1:{internal}");
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("target dir")
        .join("dashboard-screenshots");
    let shots = shots.display().to_string();
    let status = |host: &'static str| {
        let gw = &gw;
        async move { gw.get(host, "/").await.status.as_u16() }
    };
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<http_body_util::Full<bytes::Bytes>>();
    let api = |path: String| {
        let (client, uri) = (client.clone(), format!("{base}{path}"));
        async move {
            let Ok(resp) = client.get(uri.parse().expect("uri")).await else {
                return serde_json::Value::Null;
            };
            let body = http_body_util::BodyExt::collect(resp.into_body())
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            serde_json::from_slice::<serde_json::Value>(&body).unwrap_or_default()
        }
    };
    // The health check's first round too: on a busy machine it may find
    // checked@file slow once, and the first phase is about all being up.
    eventually(Duration::from_secs(10), "every route answers", || async {
        status("flaky.test").await == 200
            && status("steady.test").await == 200
            && tcp_echoes(tcp).await
            && api("/api/http/services/steady@file".to_owned()).await["status"] == "enabled"
    })
    .await;
    let drive = |phase: &'static str| {
        let (base, shots) = (base.clone(), shots.clone());
        async move {
            support::browser::drive(
                test,
                "serving.mjs",
                &base,
                &[("PHASE", phase), ("SCREENSHOT_DIR", &shots)],
            )
            .await;
        }
    };
    drive("up").await;

    // Stop them; real requests and connections then fail on them.
    drop(bad.take());
    drop(checked.take());
    drop(db.take());
    erring.set_status(502);
    for host in ["flaky.test", "fo.test", "erring.test"] {
        let mut got = Vec::new();
        for _ in 0..8 {
            got.push(status(host).await);
        }
        let expected = if host == "erring.test" { 502 } else { 200 };
        println!("{host}: {got:?}");
        assert!(got.iter().all(|&s| s == expected), "{host}: {got:?}");
    }
    assert_eq!(status("down.test").await, 502);
    assert!(!tcp_echoes(tcp).await, "the TCP route has no server");
    eventually(
        Duration::from_secs(10),
        "the health check sees checked@file down",
        || async { api("/api/http/services/steady@file".to_owned()).await["status"] == "warning" },
    )
    .await;
    drive("down").await;

    // Start them again where they were: the checked one comes back by its
    // health check, the others with the next requests that reach them.
    bad = Some(Backend::echo_on("bad", bad_port).await);
    checked = Some(Backend::echo_on("checked", checked_port).await);
    db = Some(TcpEcho::on(db_port).await);
    erring.set_status(200);
    eventually(
        Duration::from_secs(10),
        "every route answers again",
        || async {
            status("flaky.test").await == 200
                && status("erring.test").await == 200
                && status("down.test").await == 200
                && tcp_echoes(tcp).await
                && api("/api/http/services/steady@file".to_owned()).await["status"] == "enabled"
        },
    )
    .await;
    drive("up").await;

    // A section name left open: the whole file is rejected, its last good
    // version stays in use, and every page says so.
    gw.rewrite("[http.routers.flaky\nrule = 1\n");
    eventually(
        Duration::from_secs(10),
        "the file is rejected, its last good version kept",
        || async {
            let typo = api("/api/http/routers/typo@file".to_owned()).await;
            !typo["file"]["lastGood"].is_null()
        },
    )
    .await;
    assert_eq!(
        status("flaky.test").await,
        200,
        "the last good version serves"
    );
    drive("rejected").await;
    drop((bad, checked, db));
}
