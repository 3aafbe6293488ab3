//! TCP routers against the real binary: a plain `HostSNI(`*`)` router
//! for a protocol where the server speaks first, TLS passthrough by SNI
//! beside an HTTPS router on the same entry point, TLS terminated by
//! gangway for a plain server, a server that refuses skipped, a rule that
//! does not match falling through to HTTP, what the API reports, and
//! real servers: a Redis session (redis-cli), PostgreSQL (psql), nginx
//! checking the PROXY protocol.

use crate::support;

use http::StatusCode;
use std::sync::Arc;
use std::time::Duration;
use support::tls::{TestCa, TlsClient};
use support::{Backend, Gangway, eventually, free_port, udp_ask, udp_echo, within};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;

/// A line-echo server that greets first (`hello from <name>`), as SMTP,
/// MySQL or SSH servers do; every line it reads comes back prefixed with
/// its name.
async fn echo_server(name: &'static str) -> (u16, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let task = tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(echo(name, stream));
        }
    });
    (port, task)
}

/// The same as [`echo_server`] behind TLS with `chain`/`key`.
async fn tls_echo_server(name: &'static str, chain: &str, key: &str) -> u16 {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(chain.as_bytes())
        .map(Result::unwrap)
        .collect();
    let key = PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                if let Ok(tls) = acceptor.accept(stream).await {
                    echo(name, tls).await;
                }
            });
        }
    });
    port
}

async fn echo<S: AsyncRead + AsyncWrite + Unpin>(name: &str, mut stream: S) {
    if stream
        .write_all(format!("hello from {name}\n").as_bytes())
        .await
        .is_err()
    {
        return;
    }
    let mut buf = [0u8; 1024];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                let reply = format!("{name}: {}", String::from_utf8_lossy(&buf[..n]));
                if stream.write_all(reply.as_bytes()).await.is_err() {
                    return;
                }
                let _ = stream.flush().await;
            }
        }
    }
}

/// Reads until a newline (or the end).
async fn line<S: AsyncRead + Unpin>(stream: &mut S) -> String {
    let mut out = Vec::new();
    let mut byte = [0u8; 1];
    while tokio::time::timeout(Duration::from_secs(5), stream.read(&mut byte))
        .await
        .expect("a line within 5 s")
        .expect("read")
        == 1
    {
        out.push(byte[0]);
        if byte[0] == b'\n' {
            break;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The greeting and one echoed line through `stream`.
async fn talk<S: AsyncRead + AsyncWrite + Unpin>(stream: &mut S) -> (String, String) {
    let greeting = line(stream).await;
    stream.write_all(b"ping\n").await.unwrap();
    stream.flush().await.unwrap();
    (greeting, line(stream).await)
}

fn write(dir: &std::path::Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[tokio::test]
async fn a_plain_catch_all_router_forwards_a_server_first_protocol_both_ways() {
    let (db, _db) = echo_server("db").await;
    let (spare, _spare) = echo_server("spare").await;
    let app = Backend::echo("app").await;
    let tcp_port = free_port();
    // The first server refuses connections: each new connection is
    // offered to the next one instead.
    let closed = free_port();
    let dynamic = format!(
        r#"
[tcp.routers.db]
entryPoints = ["db"]
rule = "HostSNI(`*`)"
service = "db"
[[tcp.services.db.loadBalancer.servers]]
address = "127.0.0.1:{closed}"
[[tcp.services.db.loadBalancer.servers]]
address = "127.0.0.1:{db}"
[[tcp.services.db.loadBalancer.servers]]
address = "127.0.0.1:{spare}"

[http.routers.app]
rule = "Host(`app.test`)"
service = "app"
[[http.services.app.loadBalancer.servers]]
url = "{}"
"#,
        app.url()
    );
    let gw = Gangway::with_file(
        &dynamic,
        &[
            &format!("--entryPoints.db.address=127.0.0.1:{tcp_port}"),
            "--metrics.prometheus",
            "--metrics.prometheus.entryPoint=web",
            "--metrics.prometheus.addRoutersLabels=true",
        ],
    )
    .await;
    eventually(Duration::from_secs(5), "TCP router routes", || async {
        match tokio::net::TcpStream::connect(("127.0.0.1", tcp_port)).await {
            Ok(mut s) => tokio::time::timeout(Duration::from_secs(1), line(&mut s))
                .await
                .is_ok_and(|l| l.starts_with("hello from")),
            Err(_) => false,
        }
    })
    .await;
    let mut seen = Vec::new();
    let mut to_clients = 0;
    for _ in 0..4 {
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", tcp_port))
            .await
            .unwrap();
        // The client says nothing first: the server's greeting must come.
        let (greeting, reply) = talk(&mut stream).await;
        let name = greeting.trim().trim_start_matches("hello from ").to_owned();
        assert_eq!(reply, format!("{name}: ping\n"), "byte for byte");
        to_clients += greeting.len() + reply.len();
        seen.push(name);
        // The client's end of writing reaches the server, whose close
        // comes back as the end of the stream.
        stream.shutdown().await.unwrap();
        let mut rest = Vec::new();
        tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut rest))
            .await
            .expect("the server's close passed on")
            .unwrap();
        assert!(rest.is_empty(), "{rest:?}");
    }
    assert!(
        seen.iter().any(|n| n == "db") && seen.iter().any(|n| n == "spare"),
        "{seen:?}"
    );
    // A forwarded connection counts in its entry point's open connections
    // while it lasts.
    let open = |want: &'static str| {
        let gw = &gw;
        async move {
            let metrics = gw.get("any.test", "/metrics").await.text();
            metrics.lines().any(|l| {
                l == format!(
                    "gangway_open_connections{{entrypoint=\"db\",protocol=\"TCP\"}} {want}"
                ) && metrics.contains(&format!(
                    "gangway_tcp_router_open_connections{{router=\"db@file\"}} {want}\n"
                ))
            })
        }
    };
    let mut held = tokio::net::TcpStream::connect(("127.0.0.1", tcp_port))
        .await
        .unwrap();
    assert!(line(&mut held).await.starts_with("hello from"));
    eventually(Duration::from_secs(5), "one open TCP connection", || {
        open("1")
    })
    .await;
    drop(held);
    eventually(Duration::from_secs(5), "none open once it closed", || {
        open("0")
    })
    .await;
    // The router's bytes: the four pings exactly (nothing else was sent
    // by a client), and at least the four conversations' answers back.
    let metrics = gw.get("any.test", "/metrics").await.text();
    let value = |series: &str| -> f64 {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("no {series} in\n{metrics}"))
    };
    assert_eq!(
        value(r#"gangway_tcp_router_received_bytes_total{router="db@file"}"#),
        20.0
    );
    assert!(value(r#"gangway_tcp_router_sent_bytes_total{router="db@file"}"#) >= to_clients as f64);
    assert!(value(r#"gangway_tcp_router_connections_total{router="db@file"}"#) >= 5.0);
    // HTTP routers on the other entry point are untouched.
    assert_eq!(gw.get("app.test", "/").await.status, StatusCode::OK);
}

#[tokio::test]
async fn passthrough_by_sni_beside_an_https_router_on_one_entry_point() {
    let backend_ca = TestCa::new("backend CA");
    let (db_chain, db_key) = backend_ca.issue(&["db.test"]);
    let db = tls_echo_server("db", &db_chain, &db_key).await;
    let gw_ca = TestCa::new("gangway CA");
    let files = tempfile::tempdir().unwrap();
    let (web_chain, web_key) = gw_ca.issue(&["web.test"]);
    let cert = write(files.path(), "web.pem", &web_chain);
    let key = write(files.path(), "web.key", &web_key);
    let app = Backend::echo("app").await;
    let tls_port = free_port();
    let dynamic = format!(
        r#"
[tcp.routers.db]
entryPoints = ["websecure"]
rule = "HostSNI(`db.test`)"
service = "db"
[tcp.routers.db.tls]
passthrough = true
[[tcp.services.db.loadBalancer.servers]]
address = "127.0.0.1:{db}"

[http.routers.web]
entryPoints = ["websecure"]
rule = "Host(`web.test`)"
service = "app"
[http.routers.web.tls]
[[http.services.app.loadBalancer.servers]]
url = "{}"
[[tls.certificates]]
certFile = {cert:?}
keyFile = {key:?}
"#,
        app.url()
    );
    let _gw = Gangway::with_file(
        &dynamic,
        &[&format!(
            "--entryPoints.websecure.address=127.0.0.1:{tls_port}"
        )],
    )
    .await;
    // The database's own certificate comes through: gangway never
    // decrypts the stream.
    let db_client = TlsClient::trusting(backend_ca.pem().as_bytes());
    eventually(Duration::from_secs(5), "passthrough routes", || async {
        db_client.connect(tls_port, "db.test", b"").await.is_ok()
    })
    .await;
    let mut tls = db_client.connect(tls_port, "db.test", b"").await.unwrap();
    let (greeting, reply) = talk(&mut tls).await;
    assert_eq!(greeting, "hello from db\n");
    assert_eq!(reply, "db: ping\n");
    // The HTTPS router on the same port answers with gangway's certificate.
    let web = TlsClient::trusting(gw_ca.pem().as_bytes())
        .get(tls_port, "web.test", None, "/", true)
        .await
        .expect("HTTPS beside passthrough");
    assert_eq!(web.status, StatusCode::OK);
    assert_eq!(web.names(), ["web.test"]);
}

#[tokio::test]
async fn gangway_terminates_tls_for_a_plain_server_and_unmatched_connections_go_to_http() {
    let (plain, _plain) = echo_server("plain").await;
    let ca = TestCa::new("gangway CA");
    let files = tempfile::tempdir().unwrap();
    let (chain, key) = ca.issue(&["echo.test", "web.test"]);
    let cert = write(files.path(), "c.pem", &chain);
    let key = write(files.path(), "c.key", &key);
    let app = Backend::echo("app").await;
    let tls_port = free_port();
    let dynamic = format!(
        r#"
[tcp.routers.echo]
entryPoints = ["websecure"]
rule = "HostSNI(`echo.test`)"
service = "echo"
[tcp.routers.echo.tls]
[[tcp.services.echo.loadBalancer.servers]]
address = "127.0.0.1:{plain}"

# Only for clients from 10.0.0.0/8: the tests' connections come from
# 127.0.0.1, so they go on to the HTTP router.
[tcp.routers.far]
entryPoints = ["web"]
rule = "ClientIP(`10.0.0.0/8`)"
service = "echo"

[http.routers.web]
rule = "Host(`web.test`)"
service = "app"
[http.routers.web.tls]
[http.routers.plain]
entryPoints = ["web"]
rule = "Host(`web.test`)"
service = "app"
[[http.services.app.loadBalancer.servers]]
url = "{}"
[[tls.certificates]]
certFile = {cert:?}
keyFile = {key:?}
"#,
        app.url()
    );
    let gw = Gangway::with_file(
        &dynamic,
        &[&format!(
            "--entryPoints.websecure.address=127.0.0.1:{tls_port}"
        )],
    )
    .await;
    let client = TlsClient::trusting(ca.pem().as_bytes());
    eventually(
        Duration::from_secs(5),
        "terminating router routes",
        || async { client.connect(tls_port, "echo.test", b"").await.is_ok() },
    )
    .await;
    // With and without an ALPN offer the client is not refused: gangway
    // advertises no HTTP protocols to a TCP router's clients.
    for alpn in [&b""[..], b"postgresql"] {
        let mut tls = client.connect(tls_port, "echo.test", alpn).await.unwrap();
        assert_eq!(tls.get_ref().1.alpn_protocol(), None);
        let (greeting, reply) = talk(&mut tls).await;
        assert_eq!(greeting, "hello from plain\n");
        assert_eq!(reply, "plain: ping\n");
    }
    // Another name on the same port is HTTPS.
    let web = client
        .get(tls_port, "web.test", None, "/", false)
        .await
        .expect("HTTPS for another name");
    assert_eq!(web.status, StatusCode::OK);
    // A plain connection the TCP router's ClientIP refuses is HTTP.
    assert_eq!(gw.get("web.test", "/").await.status, StatusCode::OK);
}

#[tokio::test]
async fn the_api_lists_tcp_routers_and_services_with_their_errors() {
    let (db, _db) = echo_server("db").await;
    let tcp_port = free_port();
    let dynamic = format!(
        r#"
[tcp.routers.db]
entryPoints = ["db"]
rule = "HostSNI(`*`)"
service = "db"
[tcp.routers.named]
entryPoints = ["db"]
rule = "HostSNI(`db.test`)"
service = "db"
[tcp.routers.lost]
entryPoints = ["db"]
rule = "HostSNI(`*`)"
service = "nowhere"
[[tcp.services.db.loadBalancer.servers]]
address = "127.0.0.1:{db}"
[http.routers.api]
entryPoints = ["web"]
rule = "Host(`api.test`)"
service = "api@internal"
"#
    );
    let gw = Gangway::with_file(
        &dynamic,
        &[
            &format!("--entryPoints.db.address=127.0.0.1:{tcp_port}"),
            "--api=true",
        ],
    )
    .await;
    let json = |got: support::Got| -> serde_json::Value {
        serde_json::from_slice(&got.body)
            .unwrap_or_else(|e| panic!("{e}: {} {}", got.status, got.text()))
    };
    eventually(Duration::from_secs(5), "TCP routers listed", || async {
        let got = gw.get("api.test", "/api/tcp/routers").await;
        got.status == StatusCode::OK && json(got).as_array().is_some_and(|a| a.len() == 3)
    })
    .await;
    let routers = json(gw.get("api.test", "/api/tcp/routers").await);
    let by_name = |name: &str| {
        routers
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} in {routers}"))
    };
    let ok = by_name("db@file");
    assert_eq!(ok["status"], "enabled");
    assert_eq!(ok["service"], "db@file");
    assert_eq!(ok["using"], serde_json::json!(["db"]));
    let named = by_name("named@file");
    assert_eq!(named["status"], "disabled");
    let error = named["error"][0].as_str().unwrap();
    assert!(
        error.contains("without `tls`") && error.contains("HostSNI(`*`)"),
        "{error}"
    );
    // Each error names the file and the line of the option at fault.
    let origin = &named["problems"][0]["origin"];
    assert_eq!(origin["type"], "file", "{named}");
    assert_eq!(origin["line"], 8, "the `rule` line: {named}");
    let lost = by_name("lost@file");
    assert_eq!(
        lost["problems"][0]["origin"]["line"], 13,
        "the `service` line: {lost}"
    );
    assert_eq!(lost["status"], "disabled");
    assert!(
        lost["error"][0]
            .as_str()
            .unwrap()
            .contains("`nowhere@file` does not exist"),
        "{lost}"
    );
    let service = json(gw.get("api.test", "/api/tcp/services/db@file").await);
    assert_eq!(service["type"], "loadbalancer");
    assert_eq!(service["status"], "enabled");
    assert_eq!(
        service["usedBy"],
        serde_json::json!(["db@file", "named@file"])
    );
    assert_eq!(
        service["loadBalancer"]["servers"][0]["address"],
        format!("127.0.0.1:{db}")
    );
    let overview = json(gw.get("api.test", "/api/overview").await);
    assert_eq!(overview["tcp"]["routers"]["total"], 3);
    assert_eq!(overview["tcp"]["routers"]["errors"], 2);
    assert_eq!(
        gw.get("api.test", "/api/tcp/routers/nothing@file")
            .await
            .status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn middlewares_refuse_by_address_and_by_open_connections() {
    let (db, _db) = echo_server("db").await;
    let (open_port, closed_port) = (free_port(), free_port());
    let dynamic = format!(
        r#"
[tcp.routers.one-at-a-time]
entryPoints = ["open"]
rule = "HostSNI(`*`)"
service = "db"
middlewares = ["local", "one"]
[tcp.routers.far-only]
entryPoints = ["closed"]
rule = "HostSNI(`*`)"
service = "db"
middlewares = ["far"]
[tcp.middlewares.local.ipAllowList]
sourceRange = ["127.0.0.0/8", "::1"]
[tcp.middlewares.far.ipAllowList]
sourceRange = ["10.0.0.0/8"]
[tcp.middlewares.one.inFlightConn]
amount = 1
[[tcp.services.db.loadBalancer.servers]]
address = "127.0.0.1:{db}"
"#
    );
    let _gw = Gangway::with_file(
        &dynamic,
        &[
            &format!("--entryPoints.open.address=127.0.0.1:{open_port}"),
            &format!("--entryPoints.closed.address=127.0.0.1:{closed_port}"),
        ],
    )
    .await;
    let greeted = |port: u16| async move {
        let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .ok()?;
        let greeting = tokio::time::timeout(Duration::from_secs(2), line(&mut s))
            .await
            .ok()?;
        Some((s, greeting))
    };
    // The first connection that reaches the server is kept open (one
    // closed just before may still hold the slot for a moment).
    let kept = std::sync::Mutex::new(None);
    eventually(Duration::from_secs(5), "TCP router routes", || async {
        match greeted(open_port).await {
            Some((stream, g)) if g == "hello from db\n" => {
                *kept.lock().unwrap() = Some(stream);
                true
            }
            _ => false,
        }
    })
    .await;
    let mut first = kept.lock().unwrap().take().expect("kept");
    // One connection at a time from this address: the second is closed
    // without reaching the server while the first is open.
    let (_, refused) = greeted(open_port).await.expect("accepted, then closed");
    assert_eq!(refused, "", "the second connection reaches nothing");
    assert_eq!(talk_more(&mut first).await, "db: ping\n");
    drop(first);
    eventually(Duration::from_secs(5), "the slot is given back", || async {
        greeted(open_port)
            .await
            .is_some_and(|(_, g)| g == "hello from db\n")
    })
    .await;
    // 127.0.0.1 is not in 10.0.0.0/8.
    let (_, refused) = greeted(closed_port).await.expect("accepted, then closed");
    assert_eq!(refused, "");
}

/// One more echoed line on a stream already greeted.
async fn talk_more<S: AsyncRead + AsyncWrite + Unpin>(stream: &mut S) -> String {
    stream.write_all(b"ping\n").await.unwrap();
    stream.flush().await.unwrap();
    line(stream).await
}

/// nginx, told to expect the PROXY protocol on `port`, answering every
/// request with the client address and port the header gave it.
struct Nginx {
    child: std::process::Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Nginx {
    async fn start(nginx: &std::path::Path) -> Nginx {
        // nginx must be given its port: another one is tried if it is taken.
        for _ in 0..3 {
            let dir = tempfile::tempdir().unwrap();
            let port = free_port();
            let d = dir.path().display();
            let conf = format!(
                "daemon off;\nworker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
                 events {{}}\nhttp {{\n  access_log off;\n  client_body_temp_path {d}/body;\n\
                 proxy_temp_path {d}/proxy;\n  fastcgi_temp_path {d}/fastcgi;\n\
                 uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n\
                 server {{\n    listen 127.0.0.1:{port} proxy_protocol;\n\
                 location / {{ return 200 \"$proxy_protocol_addr $proxy_protocol_port\\n\"; }}\n  }}\n}}\n"
            );
            let conf_path = dir.path().join("nginx.conf");
            std::fs::write(&conf_path, conf).unwrap();
            let child = std::process::Command::new(nginx)
                .arg("-c")
                .arg(&conf_path)
                .arg("-e")
                .arg(dir.path().join("error.log"))
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("start nginx");
            let mut n = Nginx { child, port, dir };
            let up = std::cell::Cell::new(false);
            eventually(Duration::from_secs(10), "nginx listens or exits", || {
                let exited = n.child.try_wait().is_ok_and(|s| s.is_some());
                let up = &up;
                async move {
                    let listening = tokio::net::TcpStream::connect(("127.0.0.1", port))
                        .await
                        .is_ok();
                    up.set(listening);
                    exited || listening
                }
            })
            .await;
            if up.get() {
                return n;
            }
            let log = std::fs::read_to_string(n.dir.path().join("error.log")).unwrap_or_default();
            eprintln!("nginx did not start on port {port}:\n{log}");
            let _ = n.child.kill();
        }
        panic!("nginx did not start (its log is above)");
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SIGTERM: the master stops its workers before it exits; a killed
        // master would leave its worker running, holding the port.
        let termed = std::process::Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .is_ok_and(|s| s.success());
        if !termed {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn servers_learn_the_client_address_from_the_proxy_protocol_v1_and_v2() {
    let test = "servers_learn_the_client_address_from_the_proxy_protocol_v1_and_v2";
    let Some(nginx) = support::program(test, &["nginx"], "scripts/ci/servers-up") else {
        return;
    };
    let nginx = Nginx::start(&nginx).await;
    let (v1_port, v2_port) = (free_port(), free_port());
    let dynamic = format!(
        r#"
[tcp.routers.v1]
entryPoints = ["v1"]
rule = "HostSNI(`*`)"
service = "v1"
[tcp.routers.v2]
entryPoints = ["v2"]
rule = "HostSNI(`*`)"
service = "v2"
[tcp.services.v1.loadBalancer]
proxyProtocol = {{ version = 1 }}
[[tcp.services.v1.loadBalancer.servers]]
address = "127.0.0.1:{port}"
[tcp.services.v2.loadBalancer]
proxyProtocol = {{ version = 2 }}
[[tcp.services.v2.loadBalancer.servers]]
address = "127.0.0.1:{port}"
"#,
        port = nginx.port
    );
    let _gw = Gangway::with_file(
        &dynamic,
        &[
            &format!("--entryPoints.v1.address=127.0.0.1:{v1_port}"),
            &format!("--entryPoints.v2.address=127.0.0.1:{v2_port}"),
        ],
    )
    .await;
    // nginx refuses a connection without a valid header: an answer at all
    // means the header parsed, and its body is what the header said.
    let ask = |port: u16| async move {
        let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .ok()?;
        let me = s.local_addr().ok()?;
        s.write_all(b"GET / HTTP/1.0\r\nHost: pp.test\r\n\r\n")
            .await
            .ok()?;
        let mut answer = String::new();
        tokio::time::timeout(Duration::from_secs(5), s.read_to_string(&mut answer))
            .await
            .ok()?
            .ok()?;
        Some((me, answer))
    };
    for port in [v1_port, v2_port] {
        eventually(
            Duration::from_secs(5),
            "nginx answers through gangway",
            || async {
                ask(port)
                    .await
                    .is_some_and(|(_, a)| a.starts_with("HTTP/1.1 200"))
            },
        )
        .await;
        let (me, answer) = ask(port).await.expect("an answer");
        let body = answer.rsplit("\r\n\r\n").next().unwrap_or("");
        assert_eq!(body, format!("127.0.0.1 {}\n", me.port()), "{answer}");
    }
}

/// A PostgreSQL cluster of the test's own, in a temporary directory, on
/// a loopback port; TLS on with `cert`/`key`. Run as the `postgres` user
/// when the tests run as root (PostgreSQL refuses root).
struct Postgres {
    port: u16,
    bin: std::path::PathBuf,
    dir: tempfile::TempDir,
}

impl Postgres {
    fn run_as(bin: &std::path::Path, args: &[&str]) -> std::process::Command {
        let root = std::process::Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| o.stdout.starts_with(b"0\n"));
        if root {
            let mut c = std::process::Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(bin).args(args);
            c
        } else {
            let mut c = std::process::Command::new(bin);
            c.args(args);
            c
        }
    }

    async fn start(initdb: &std::path::Path, cert: &str, key: &str) -> Postgres {
        let bin = initdb.parent().expect("bin folder").to_owned();
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("server.crt"), cert).unwrap();
        std::fs::write(d.join("server.key"), key).unwrap();
        let root = std::process::Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| o.stdout.starts_with(b"0\n"));
        if root {
            let ok = std::process::Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(d)
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "chown to postgres");
        }
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(d.join("server.key"), std::fs::Permissions::from_mode(0o600))
            .unwrap();
        let data = d.join("data").display().to_string();
        let out = Self::run_as(
            &bin.join("initdb"),
            &["-D", &data, "-A", "trust", "-U", "postgres", "--no-sync"],
        )
        .output()
        .expect("initdb");
        assert!(
            out.status.success(),
            "initdb failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // PostgreSQL must be given its port: another is tried if it is taken.
        for _ in 0..3 {
            let port = free_port();
            let options = format!(
                "-p {port} -k {d} -c listen_addresses=127.0.0.1 -c ssl=on \
                 -c ssl_cert_file={d}/server.crt -c ssl_key_file={d}/server.key -c fsync=off",
                d = d.display()
            );
            let log = d.join("postgres.log").display().to_string();
            let started = Self::run_as(
                &bin.join("pg_ctl"),
                &[
                    "-D", &data, "-l", &log, "-o", &options, "-w", "-t", "30", "start",
                ],
            )
            .output()
            .expect("pg_ctl");
            if started.status.success() {
                return Postgres { port, bin, dir };
            }
            eprintln!(
                "PostgreSQL did not start on port {port}:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        panic!("PostgreSQL did not start (its log is above)");
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let data = self.dir.path().join("data").display().to_string();
        let _ = Self::run_as(
            &self.bin.join("pg_ctl"),
            &["-D", &data, "-m", "immediate", "stop"],
        )
        .output();
    }
}

/// `select inet_server_port()` with psql through 127.0.0.1:`port`, asking
/// for `host` (the SNI) over TLS verified with `root`: the port of the
/// PostgreSQL that answered, or psql's error.
fn psql(
    psql: &std::path::Path,
    port: u16,
    host: &str,
    root: &std::path::Path,
) -> Result<String, String> {
    let conninfo = format!(
        "host={host} hostaddr=127.0.0.1 port={port} user=postgres dbname=postgres \
         sslmode=verify-full sslrootcert={} connect_timeout=5",
        root.display()
    );
    let out = std::process::Command::new(psql)
        .args([&conninfo, "-Atc", "select inet_server_port()"])
        .env("PGPASSFILE", "/dev/null")
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[tokio::test]
async fn psql_reaches_postgresql_by_name_through_starttls_terminated_or_passed_through() {
    let test = "psql_reaches_postgresql_by_name_through_starttls_terminated_or_passed_through";
    let initdb = {
        let found = std::fs::read_dir("/usr/lib/postgresql")
            .into_iter()
            .flatten()
            .flatten()
            .map(|v| v.path().join("bin/initdb"))
            .find(|p| p.is_file());
        match found {
            Some(p) => Some(p),
            None => support::program(test, &["initdb"], "scripts/ci/servers-up"),
        }
    };
    let (Some(initdb), Some(psql_bin)) = (
        initdb,
        support::program(test, &["psql"], "scripts/ci/servers-up"),
    ) else {
        return;
    };
    let pg_ca = TestCa::new("database CA");
    let (pg_cert, pg_key) = pg_ca.issue(&["pass.test"]);
    let pg = Postgres::start(&initdb, &pg_cert, &pg_key).await;
    let gw_ca = TestCa::new("gangway CA");
    let files = tempfile::tempdir().unwrap();
    let (chain, key) = gw_ca.issue(&["db.test"]);
    let cert = write(files.path(), "db.pem", &chain);
    let key = write(files.path(), "db.key", &key);
    let gw_root = files.path().join("gangway-ca.pem");
    std::fs::write(&gw_root, gw_ca.pem()).unwrap();
    let pg_root = files.path().join("database-ca.pem");
    std::fs::write(&pg_root, pg_ca.pem()).unwrap();
    let pg_port = free_port();
    let dynamic = format!(
        r#"
[tcp.routers.db]
entryPoints = ["pg"]
rule = "HostSNI(`db.test`)"
service = "pg"
[tcp.routers.db.tls]
[tcp.routers.pass]
entryPoints = ["pg"]
rule = "HostSNI(`pass.test`)"
service = "pg"
[tcp.routers.pass.tls]
passthrough = true
[[tcp.services.pg.loadBalancer.servers]]
address = "127.0.0.1:{}"
[[tls.certificates]]
certFile = {cert:?}
keyFile = {key:?}
"#,
        pg.port
    );
    let _gw = Gangway::with_file(
        &dynamic,
        &[&format!("--entryPoints.pg.address=127.0.0.1:{pg_port}")],
    )
    .await;
    let want = pg.port.to_string();
    // Terminated: psql's STARTTLS is answered by gangway, which shows its
    // own certificate for db.test and speaks plain PostgreSQL onwards.
    eventually(Duration::from_secs(10), "psql through gangway", || async {
        psql(&psql_bin, pg_port, "db.test", &gw_root).as_deref() == Ok(want.as_str())
    })
    .await;
    // Passed through: the database's own certificate for pass.test.
    assert_eq!(
        psql(&psql_bin, pg_port, "pass.test", &pg_root),
        Ok(want.clone())
    );
    // gangway has no certificate for pass.test, and the database none for
    // db.test: each name went where its router sends it.
    assert!(psql(&psql_bin, pg_port, "pass.test", &gw_root).is_err());
    // No router for the name: closed.
    let err = psql(&psql_bin, pg_port, "other.test", &gw_root).unwrap_err();
    assert!(!err.is_empty());
}

#[tokio::test]
async fn udp_sessions_keep_each_clients_replies_apart_and_share_servers_by_weight() {
    let (a, b) = (udp_echo("a").await, udp_echo("b").await);
    // A port free for TCP is very likely free for UDP too; gangway exits
    // at once (and the test says so) if it is not.
    let udp_port = free_port();
    let dynamic = format!(
        r#"
[udp.routers.echo]
service = "both"
[udp.services.both.weighted]
[[udp.services.both.weighted.services]]
name = "a"
[[udp.services.both.weighted.services]]
name = "b"
[[udp.services.a.loadBalancer.servers]]
address = "127.0.0.1:{a}"
[[udp.services.b.loadBalancer.servers]]
address = "127.0.0.1:{b}"
[http.routers.api]
entryPoints = ["web"]
rule = "Host(`api.test`)"
service = "api@internal"
"#
    );
    let gw = Gangway::with_file(
        &dynamic,
        &[
            &format!("--entryPoints.dns.address=127.0.0.1:{udp_port}/udp"),
            "--entryPoints.dns.udp.timeout=30s",
            "--api=true",
            "--metrics.prometheus",
            "--metrics.prometheus.entryPoint=web",
            "--metrics.prometheus.addRoutersLabels=true",
        ],
    )
    .await;
    let client = || async {
        let s = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
        s.connect(("127.0.0.1", udp_port)).await.unwrap();
        s
    };
    async fn ask(s: &tokio::net::UdpSocket, what: &str) -> Option<String> {
        s.send(what.as_bytes()).await.ok()?;
        let mut buf = [0u8; 2048];
        let n = tokio::time::timeout(Duration::from_millis(500), s.recv(&mut buf))
            .await
            .ok()?
            .ok()?;
        Some(String::from_utf8_lossy(&buf[..n]).into_owned())
    }
    let first = client().await;
    eventually(Duration::from_secs(5), "UDP router routes", || async {
        ask(&first, "hello").await.is_some()
    })
    .await;
    let second = client().await;
    // Each client's session stays on its server, and replies go to the
    // client that sent: they never cross.
    let one = ask(&first, "from one").await.expect("a reply to one");
    let two = ask(&second, "from two").await.expect("a reply to two");
    let server_of = |reply: &str| reply.split(':').next().unwrap_or("").to_owned();
    assert!(one.ends_with(": from one"), "{one}");
    assert!(two.ends_with(": from two"), "{two}");
    // Two sessions, the weighted service's two halves in turn.
    assert_ne!(server_of(&one), server_of(&two), "{one} / {two}");
    for i in 0..5 {
        assert_eq!(
            ask(&first, &format!("again {i}")).await,
            Some(format!("{}: again {i}", server_of(&one)))
        );
    }
    let routers = gw.get("api.test", "/api/udp/routers").await;
    let routers: serde_json::Value = serde_json::from_slice(&routers.body).expect("JSON");
    assert_eq!(routers[0]["name"], "echo@file");
    assert_eq!(routers[0]["using"], serde_json::json!(["dns"]));
    assert_eq!(routers[0]["status"], "enabled");
    let overview: serde_json::Value =
        serde_json::from_slice(&gw.get("api.test", "/api/overview").await.body).expect("JSON");
    assert_eq!(overview["udp"]["services"]["total"], 3);
    // Two clients, two sessions, open until `udp.timeout`.
    let metrics = gw.get("any.test", "/metrics").await.text();
    for series in [
        r#"gangway_udp_router_open_sessions{router="echo@file"} 2"#,
        r#"gangway_udp_router_sessions_total{router="echo@file"} 2"#,
        r#"gangway_open_connections{entrypoint="dns",protocol="UDP"} 2"#,
    ] {
        assert!(
            metrics.lines().any(|l| l == series),
            "{series} in\n{metrics}"
        );
    }
}

#[tokio::test]
async fn a_proxy_protocol_header_from_a_trusted_source_names_the_client_everywhere() {
    let (db, _db) = echo_server("db").await;
    let app = Backend::echo("app").await;
    let (trusting, distrusting) = (free_port(), free_port());
    let dynamic = format!(
        r#"
[tcp.routers.inside]
entryPoints = ["lb"]
rule = "ClientIP(`10.0.0.0/8`)"
service = "db"
[[tcp.services.db.loadBalancer.servers]]
address = "127.0.0.1:{db}"
[http.routers.app]
rule = "Host(`app.test`)"
service = "app"
[[http.services.app.loadBalancer.servers]]
url = "{}"
"#,
        app.url()
    );
    let gw = Gangway::with_file_env(
        &dynamic,
        &[
            &format!("--entryPoints.lb.address=127.0.0.1:{trusting}"),
            "--entryPoints.lb.proxyProtocol.trustedIPs=127.0.0.1/32",
            &format!("--entryPoints.strict.address=127.0.0.1:{distrusting}"),
            "--entryPoints.strict.proxyProtocol.trustedIPs=10.0.0.0/8",
        ],
        &[("RUST_LOG", "info")],
    )
    .await;
    // What a load balancer in front sends: the header, then the client's
    // bytes.
    let through = |port: u16, client: &'static str, version: u8, bytes: &'static [u8]| async move {
        let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .ok()?;
        let local = s.local_addr().ok()?;
        let mut header = match version {
            1 => format!("PROXY TCP4 {client} 127.0.0.1 40000 {}\r\n", local.port()).into_bytes(),
            _ => {
                let ip: std::net::Ipv4Addr = client.parse().ok()?;
                let mut h = b"\r\n\r\n\0\r\nQUIT\n".to_vec();
                h.extend_from_slice(&[0x21, 0x11, 0, 12]);
                h.extend_from_slice(&ip.octets());
                h.extend_from_slice(&[127, 0, 0, 1]);
                h.extend_from_slice(&40000u16.to_be_bytes());
                h.extend_from_slice(&local.port().to_be_bytes());
                h
            }
        };
        header.extend_from_slice(bytes);
        s.write_all(&header).await.ok()?;
        let mut answer = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(2), s.read_to_end(&mut answer)).await;
        Some(String::from_utf8_lossy(&answer).into_owned())
    };
    let get = b"GET / HTTP/1.1\r\nHost: app.test\r\nConnection: close\r\n\r\n";
    let last = std::sync::Mutex::new(None);
    let answers = within(Duration::from_secs(15), || async {
        let answer = through(trusting, "192.0.2.1", 1, get).await;
        let ok = answer
            .as_ref()
            .is_some_and(|a| a.starts_with("HTTP/1.1 200"));
        *last.lock().unwrap() = Some(answer);
        ok
    })
    .await;
    assert!(
        answers,
        "the HTTP router does not answer; last answer {:?}; gangway's log:\n{}",
        last.lock().unwrap(),
        gw.log()
    );
    for version in [1, 2] {
        // A client inside 10.0.0.0/8, as the header says: the TCP router's
        // ClientIP rule takes it.
        let inside = through(trusting, "10.1.2.3", version, b"")
            .await
            .unwrap_or_default();
        assert!(inside.starts_with("hello from db"), "v{version}: {inside}");
        // Anyone else goes on to HTTP, where the header's client is the
        // client the server is told about.
        let outside = through(trusting, "192.0.2.1", version, get)
            .await
            .unwrap_or_default();
        assert!(outside.starts_with("HTTP/1.1 200"), "v{version}: {outside}");
        let body = outside.split("\r\n\r\n").nth(1).unwrap_or("");
        let seen: serde_json::Value = serde_json::from_str(body.trim()).expect("echo JSON");
        assert_eq!(
            seen["headers"]["x-forwarded-for"],
            serde_json::json!(["192.0.2.1"]),
            "v{version}: {seen}"
        );
    }
    // From a source that is not trusted the header is read and dropped:
    // the request goes on from the real peer.
    let dropped = through(distrusting, "10.1.2.3", 1, get)
        .await
        .unwrap_or_default();
    assert!(dropped.starts_with("HTTP/1.1 200"), "{dropped}");
}

/// A forged PROXY protocol header (`version` 1 or 2) naming `forged`,
/// then `bytes`, as a client outside `trustedIPs` would send them.
fn forged_header(version: u8, forged: std::net::Ipv4Addr, to: u16, bytes: &[u8]) -> Vec<u8> {
    let mut out = match version {
        1 => format!("PROXY TCP4 {forged} 127.0.0.1 40000 {to}\r\n").into_bytes(),
        _ => {
            let mut h = b"\r\n\r\n\0\r\nQUIT\n".to_vec();
            h.extend_from_slice(&[0x21, 0x11, 0, 12]);
            h.extend_from_slice(&forged.octets());
            h.extend_from_slice(&[127, 0, 0, 1]);
            h.extend_from_slice(&40000u16.to_be_bytes());
            h.extend_from_slice(&to.to_be_bytes());
            h
        }
    };
    out.extend_from_slice(bytes);
    out
}

#[tokio::test]
async fn a_proxy_protocol_header_from_an_untrusted_peer_never_reaches_the_server() {
    // The TCP server reads two lines, the PROXY header gangway's transport
    // sends and the client's first line, and answers with both: a forged
    // header passed on would come second, in place of the client's line.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let header = line(&mut stream).await;
                let first = line(&mut stream).await;
                let _ = stream
                    .write_all(format!("{header}{first}").as_bytes())
                    .await;
            });
        }
    });
    let app = Backend::echo("app").await;
    let (tcp, front) = (free_port(), free_port());
    let dynamic = format!(
        r#"
[tcp.routers.db]
entryPoints = ["tcp"]
rule = "HostSNI(`*`)"
service = "db"
[tcp.serversTransports.pp]
proxyProtocol = {{ version = 1 }}
[tcp.services.db.loadBalancer]
serversTransport = "pp"
[[tcp.services.db.loadBalancer.servers]]
address = "127.0.0.1:{server}"
[http.routers.app]
entryPoints = ["front"]
rule = "Host(`app.test`)"
service = "app"
[[http.services.app.loadBalancer.servers]]
url = "{}"
"#,
        app.url()
    );
    // Only a load balancer at 10.0.0.0/8 is believed: 127.0.0.1 is not.
    let gw = Gangway::with_file(
        &dynamic,
        &[
            &format!("--entryPoints.tcp.address=127.0.0.1:{tcp}"),
            "--entryPoints.tcp.proxyProtocol.trustedIPs=10.0.0.0/8",
            &format!("--entryPoints.front.address=127.0.0.1:{front}"),
            "--entryPoints.front.proxyProtocol.trustedIPs=10.0.0.0/8",
        ],
    )
    .await;
    let forged: std::net::Ipv4Addr = "10.6.6.6".parse().unwrap();
    let send = |port: u16, version: u8, bytes: &'static [u8]| async move {
        let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .ok()?;
        let mine = s.local_addr().ok()?.port();
        s.write_all(&forged_header(version, forged, port, bytes))
            .await
            .ok()?;
        let mut answer = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut answer)).await;
        Some((mine, String::from_utf8_lossy(&answer).into_owned()))
    };
    let get = b"GET / HTTP/1.1\r\nHost: app.test\r\nConnection: close\r\n\r\n";
    let routed = within(Duration::from_secs(15), || async {
        let tcp_up = send(tcp, 1, b"hello\n")
            .await
            .is_some_and(|(_, a)| a.ends_with("hello\n"));
        let web_up = send(front, 1, get)
            .await
            .is_some_and(|(_, a)| a.starts_with("HTTP/1.1 200"));
        tcp_up && web_up
    })
    .await;
    assert!(
        routed,
        "the routers do not answer; gangway's log:\n{}",
        gw.log()
    );
    for version in [1, 2] {
        // The server is told the real peer, and its first line is the
        // client's own.
        let (mine, answer) = send(tcp, version, b"hello\n").await.unwrap_or_default();
        assert_eq!(
            answer,
            format!("PROXY TCP4 127.0.0.1 127.0.0.1 {mine} {tcp}\r\nhello\n"),
            "v{version}"
        );
        // The HTTP server gets a well-formed request from the real peer.
        let (_, answer) = send(front, version, get).await.unwrap_or_default();
        assert!(answer.starts_with("HTTP/1.1 200"), "v{version}: {answer}");
        let body = answer.split("\r\n\r\n").nth(1).unwrap_or("");
        let seen: serde_json::Value = serde_json::from_str(body.trim()).expect("echo JSON");
        assert_eq!(
            seen["headers"]["x-forwarded-for"],
            serde_json::json!(["127.0.0.1"]),
            "v{version}: {seen}"
        );
    }
}

/// redis-cli against 127.0.0.1:`port` with `args`, `stdin` fed to it:
/// its exit status and standard output, bytes as they came.
fn redis_cli(cli: &std::path::Path, port: u16, args: &[&str], stdin: &[u8]) -> (bool, Vec<u8>) {
    use std::io::Write;
    let mut child = std::process::Command::new(cli)
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("redis-cli");
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin).unwrap();
    drop(input);
    let out = child.wait_with_output().unwrap();
    (out.status.success(), out.stdout)
}

#[tokio::test]
async fn a_redis_session_passes_a_plain_catch_all_router_byte_for_byte() {
    let test = "a_redis_session_passes_a_plain_catch_all_router_byte_for_byte";
    let Some(redis) = support::kv::Redis::start(test, false).await else {
        return;
    };
    let cli = redis.cli.clone();
    let port = free_port();
    let dynamic = format!(
        r#"
[tcp.routers.cache]
entryPoints = ["redis"]
rule = "HostSNI(`*`)"
service = "cache"
[[tcp.services.cache.loadBalancer.servers]]
address = "127.0.0.1:{}"
"#,
        redis.port
    );
    let _gw = Gangway::with_file(
        &dynamic,
        &[&format!("--entryPoints.redis.address=127.0.0.1:{port}")],
    )
    .await;
    eventually(Duration::from_secs(5), "the router forwards", || async {
        redis_cli(&cli, port, &["ping"], b"").1.starts_with(b"PONG")
    })
    .await;
    // One session of several commands, through gangway and then straight
    // to the server: the answers are the same bytes (the counter going on
    // from where the first session left it).
    let session = b"SET visits 41\nINCR visits\nRPUSH list a b c\nLRANGE list 0 -1\nGET nothing\n";
    let (ok, through) = redis_cli(&cli, port, &[], session);
    assert!(ok, "{}", String::from_utf8_lossy(&through));
    assert_eq!(
        String::from_utf8_lossy(&through),
        "OK\n42\n3\na\nb\nc\n\n",
        "the session's answers through gangway"
    );
    let (_, direct) = redis_cli(
        &cli,
        redis.port,
        &[],
        b"DEL list\nSET visits 41\nINCR visits\n",
    );
    assert_eq!(String::from_utf8_lossy(&direct), "1\nOK\n42\n");
    // A value of every byte, larger than any buffer on the way, in and
    // out again: exactly what went in.
    let blob: Vec<u8> = (0..300_000u32).map(|i| (i * 7 + i / 251) as u8).collect();
    let (ok, out) = redis_cli(&cli, port, &["-x", "SET", "blob"], &blob);
    assert!(
        ok && out.starts_with(b"OK"),
        "{}",
        String::from_utf8_lossy(&out)
    );
    let (ok, back) = redis_cli(&cli, port, &["--raw", "GET", "blob"], b"");
    assert!(ok);
    assert_eq!(
        back.len(),
        blob.len() + 1,
        "the value and redis-cli's newline"
    );
    assert!(
        back[..blob.len()] == blob[..],
        "the value came back changed"
    );
    let (_, len) = redis_cli(&cli, redis.port, &["STRLEN", "blob"], b"");
    assert_eq!(String::from_utf8_lossy(&len).trim(), blob.len().to_string());
}

/// Who answers a TLS connection to 127.0.0.1:`port` for `sni`:
/// `tcp <name>` when a TCP router's echo server greets, `https <name>`
/// when an HTTPS router's backend answers a request.
async fn who_answers(client: &TlsClient, port: u16, sni: &str) -> String {
    let Ok(mut tls) = client.connect(port, sni, b"").await else {
        return "refused".into();
    };
    let request = format!("GET / HTTP/1.1\r\nHost: {sni}\r\nConnection: close\r\n\r\n");
    if tls.write_all(request.as_bytes()).await.is_err() {
        return "closed".into();
    }
    let mut seen = Vec::new();
    let mut chunk = [0u8; 1024];
    loop {
        let text = String::from_utf8_lossy(&seen).into_owned();
        if let Some(greeting) = text.strip_prefix("hello from ")
            && let Some((name, _)) = greeting.split_once('\n')
        {
            return format!("tcp {name}");
        }
        if let Some((head, _)) = text.split_once("\r\n\r\n") {
            let backend = head
                .lines()
                .find_map(|l| l.strip_prefix("x-backend: "))
                .unwrap_or("none");
            return format!("https {backend}");
        }
        match tokio::time::timeout(Duration::from_secs(5), tls.read(&mut chunk)).await {
            Ok(Ok(n)) if n > 0 => seen.extend_from_slice(&chunk[..n]),
            _ => return format!("unfinished: {text}"),
        }
    }
}

#[tokio::test]
async fn https_routers_take_their_names_and_unnamed_ones_before_a_tcp_catch_all() {
    let (named_tcp, _a) = echo_server("named-tcp").await;
    let (catch_all, _b) = echo_server("catch-all").await;
    let named_web = Backend::echo("named-web").await;
    let any_web = Backend::echo("any-web").await;
    let ca = TestCa::new("gangway CA");
    let files = tempfile::tempdir().unwrap();
    let (chain, key) = ca.issue(&["both.test", "tcp.test", "other.test", "web.test"]);
    let cert = write(files.path(), "c.pem", &chain);
    let key = write(files.path(), "c.key", &key);
    let (shared, edge) = (free_port(), free_port());
    // On `shared`: a name both an HTTPS and a TCP router claim, a name only
    // a TCP router claims, a TCP `HostSNI(*)` and an HTTPS `PathPrefix(/)`.
    // On `edge`: the TCP `HostSNI(*)` beside an HTTPS router for one name.
    let dynamic = format!(
        r#"
[tcp.routers.both]
entryPoints = ["shared"]
rule = "HostSNI(`both.test`)"
service = "named"
[tcp.routers.both.tls]
[tcp.routers.tcponly]
entryPoints = ["shared"]
rule = "HostSNI(`tcp.test`)"
service = "named"
[tcp.routers.tcponly.tls]
[tcp.routers.any]
entryPoints = ["shared", "edge"]
rule = "HostSNI(`*`)"
service = "any"
[tcp.routers.any.tls]
[[tcp.services.named.loadBalancer.servers]]
address = "127.0.0.1:{named_tcp}"
[[tcp.services.any.loadBalancer.servers]]
address = "127.0.0.1:{catch_all}"

[http.routers.both]
entryPoints = ["shared"]
rule = "Host(`both.test`)"
service = "named"
[http.routers.both.tls]
[http.routers.web]
entryPoints = ["edge"]
rule = "Host(`web.test`)"
service = "named"
[http.routers.web.tls]
[http.routers.any]
entryPoints = ["shared"]
rule = "PathPrefix(`/`)"
service = "any"
[http.routers.any.tls]
[[http.services.named.loadBalancer.servers]]
url = "{}"
[[http.services.any.loadBalancer.servers]]
url = "{}"
[[tls.certificates]]
certFile = {cert:?}
keyFile = {key:?}
"#,
        named_web.url(),
        any_web.url()
    );
    let gw = Gangway::with_file(
        &dynamic,
        &[
            &format!("--entryPoints.shared.address=127.0.0.1:{shared}"),
            &format!("--entryPoints.edge.address=127.0.0.1:{edge}"),
        ],
    )
    .await;
    let client = TlsClient::trusting(ca.pem().as_bytes());
    let routed = within(Duration::from_secs(15), || async {
        who_answers(&client, shared, "tcp.test").await == "tcp named-tcp"
            && who_answers(&client, edge, "web.test").await == "https named-web"
    })
    .await;
    assert!(
        routed,
        "the routers do not answer; gangway's log:\n{}",
        gw.log()
    );
    // Traefik's order: an HTTPS router naming the server name, then a TCP
    // router with more than `HostSNI(*)`, then an HTTPS router naming no
    // host, then the TCP `HostSNI(*)`.
    for (port, sni, expected) in [
        (shared, "both.test", "https named-web"),
        (shared, "tcp.test", "tcp named-tcp"),
        (shared, "other.test", "https any-web"),
        (edge, "web.test", "https named-web"),
        (edge, "other.test", "tcp catch-all"),
    ] {
        assert_eq!(who_answers(&client, port, sni).await, expected, "{sni}");
    }
}

#[tokio::test]
async fn two_udp_routers_on_one_entry_point_the_last_by_name_serves() {
    let (first, last) = (udp_echo("first").await, udp_echo("last").await);
    let udp_port = free_port();
    // Declared in the other order on purpose: the names decide.
    let dynamic = format!(
        r#"
[udp.routers.b]
entryPoints = ["dns"]
service = "last"
[udp.routers.a]
entryPoints = ["dns"]
service = "first"
[[udp.services.first.loadBalancer.servers]]
address = "127.0.0.1:{first}"
[[udp.services.last.loadBalancer.servers]]
address = "127.0.0.1:{last}"
[http.routers.api]
entryPoints = ["web"]
rule = "Host(`api.test`)"
service = "api@internal"
"#
    );
    let gw = Gangway::with_file(
        &dynamic,
        &[
            &format!("--entryPoints.dns.address=127.0.0.1:{udp_port}/udp"),
            "--api=true",
        ],
    )
    .await;
    let served = within(Duration::from_secs(15), || async {
        udp_ask(udp_port, "hi").await.is_some()
    })
    .await;
    assert!(served, "no UDP answer; gangway's log:\n{}", gw.log());
    for i in 0..3 {
        assert_eq!(
            udp_ask(udp_port, &format!("hi {i}")).await,
            Some(format!("last: hi {i}"))
        );
    }
    let api = &gw;
    let json = move |path: &'static str| async move {
        let got = api.get("api.test", path).await;
        serde_json::from_slice::<serde_json::Value>(&got.body).expect("JSON")
    };
    let shadowed = json("/api/udp/routers/a@file").await;
    assert_eq!(shadowed["status"], "warning", "{shadowed}");
    let error = shadowed["error"][0].as_str().unwrap_or_default();
    assert!(
        error.contains("served by router `b@file`") && error.contains("shadowed"),
        "{shadowed}"
    );
    let serving = json("/api/udp/routers/b@file").await;
    assert_eq!(serving["status"], "enabled", "{serving}");
    assert_eq!(serving["using"], serde_json::json!(["dns"]));
}

#[tokio::test]
async fn a_wildcard_server_name_takes_one_label_and_a_longer_exact_name_wins() {
    let (wild, _a) = echo_server("wild").await;
    let (exact, _b) = echo_server("exact").await;
    let web = Backend::echo("web").await;
    let ca = TestCa::new("gangway CA");
    let files = tempfile::tempdir().unwrap();
    let (chain, key) = ca.issue(&["*.db.test", "a.eu.db.test", "web.test"]);
    let cert = write(files.path(), "c.pem", &chain);
    let key = write(files.path(), "c.key", &key);
    let tls_port = free_port();
    let dynamic = format!(
        r#"
[tcp.routers.wild]
entryPoints = ["websecure"]
rule = "HostSNI(`*.db.test`)"
service = "wild"
[tcp.routers.wild.tls]
[[tcp.services.wild.loadBalancer.servers]]
address = "127.0.0.1:{wild}"
[tcp.routers.exact]
entryPoints = ["websecure"]
rule = "HostSNI(`one.db.test`)"
service = "exact"
[tcp.routers.exact.tls]
[[tcp.services.exact.loadBalancer.servers]]
address = "127.0.0.1:{exact}"
[http.routers.web]
rule = "HostRegexp(`.+`)"
service = "web"
[http.routers.web.tls]
[[http.services.web.loadBalancer.servers]]
url = "{}"
[[tls.certificates]]
certFile = {cert:?}
keyFile = {key:?}
"#,
        web.url()
    );
    let _gw = Gangway::with_file(
        &dynamic,
        &[&format!(
            "--entryPoints.websecure.address=127.0.0.1:{tls_port}"
        )],
    )
    .await;
    let client = TlsClient::trusting(ca.pem().as_bytes());
    eventually(
        Duration::from_secs(10),
        "wildcard router routes",
        || async { who_answers(&client, tls_port, "two.db.test").await == "tcp wild" },
    )
    .await;
    // Any one label under db.test; the exact name, with the longer rule
    // (a higher default priority, as in Traefik), goes to its own router.
    assert_eq!(
        who_answers(&client, tls_port, "EU.db.test").await,
        "tcp wild"
    );
    assert_eq!(
        who_answers(&client, tls_port, "one.db.test").await,
        "tcp exact"
    );
    // Two labels deep is not under `*.`: the HTTPS router takes it.
    assert_eq!(
        who_answers(&client, tls_port, "a.eu.db.test").await,
        "https web"
    );
}
