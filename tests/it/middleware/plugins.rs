//! Traefik plugins gangway runs natively, each configured with the plugin's
//! own settings through the real binary: rewrite-headers, rewrite-body (plain
//! and gzip answers), theme.park, GeoBlock (with an IP2Location database
//! built here, and clients on several loopback addresses); a plugin gangway
//! has not built in keeps its router disabled, and `gangway check` says so.

use crate::support;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;
use std::io::{Read, Write};
use std::time::Duration;
use support::docker::{Probe, Run, SERIAL, Spec, ready};
use support::{Backend, Gangway, eventually};

/// The page every HTML backend here serves.
const PAGE: &str = "<html><head><title>foo</title></head><body>foo and foo</body></html>";

/// A backend answering `PAGE` as HTML, gzip-compressed when the request
/// accepts gzip, with a `Last-Modified` and a `Location` header.
async fn html_backend() -> Backend {
    Backend::serve(|req: Request<Incoming>| async move {
        let gzip = req
            .headers()
            .get("accept-encoding")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("gzip"));
        let mut resp = Response::builder()
            .header("content-type", "text/html; charset=utf-8")
            .header("last-modified", "Wed, 21 Oct 2015 07:28:00 GMT")
            .header("location", "http://internal.example/a/b")
            .header(
                "x-seen-accept-encoding",
                req.headers()
                    .get("accept-encoding")
                    .cloned()
                    .unwrap_or(http::HeaderValue::from_static("")),
            );
        let body = if gzip {
            resp = resp.header("content-encoding", "gzip");
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(PAGE.as_bytes()).unwrap();
            e.finish().unwrap()
        } else {
            PAGE.as_bytes().to_vec()
        };
        resp.body(Full::new(Bytes::from(body))).unwrap()
    })
    .await
}

fn declare(key: &str, module: &str) -> String {
    format!("--experimental.plugins.{key}.moduleName={module}")
}

/// A dynamic YAML file: router `app` on `app.test` through middleware `mw`,
/// which is `plugin: {key: settings}` with `settings` indented below it.
fn dynamic(backend: &Backend, key: &str, settings: &str) -> String {
    let settings: String = settings
        .lines()
        .map(|l| format!("          {l}\n"))
        .collect();
    format!(
        "http:\n  routers:\n    api:\n      rule: Host(`api.test`)\n      service: api@internal\n    app:\n      rule: Host(`app.test`)\n      service: app\n      middlewares: [mw]\n  middlewares:\n    mw:\n      plugin:\n        {key}:\n{settings}  services:\n    app:\n      loadBalancer:\n        servers:\n          - url: {}\n",
        backend.url()
    )
}

/// gangway with `dynamic`, the plugin `key` declared as `module`, and the
/// API, once the file's routers are loaded.
async fn start(dynamic: &str, key: &str, module: &str) -> Gangway {
    let gw = Gangway::with_yaml(dynamic, &[&declare(key, module), "--api=true"]).await;
    loaded(&gw).await;
    gw
}

/// Waits until the file's routers are loaded (the API answers).
async fn loaded(gw: &Gangway) {
    eventually(
        Duration::from_secs(10),
        "the configuration is loaded",
        || async { gw.get("api.test", "/api/version").await.status == 200 },
    )
    .await;
}

async fn get(gw: &Gangway, headers: &[(&str, &str)]) -> support::Got {
    let mut req = Request::get(gw.url("/")).header("host", "app.test");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    gw.send(req.body(Full::default()).unwrap()).await
}

fn gunzip(body: &[u8]) -> String {
    let mut out = String::new();
    flate2::read::GzDecoder::new(body)
        .read_to_string(&mut out)
        .expect("a gzip body");
    out
}

#[tokio::test]
async fn rewrite_headers_rewrites_each_value_of_the_header_by_regex() {
    let app = html_backend().await;
    let gw = start(
        &dynamic(
            &app,
            "rewriteHeaders",
            "rewrites:\n  - header: Location\n    regex: ^http://internal\\.example/(.+)$\n    replacement: https://app.test/$1",
        ),
        "rewriteHeaders",
        "github.com/XciD/traefik-plugin-rewrite-headers",
    )
    .await;
    let got = get(&gw, &[]).await;
    assert_eq!(got.status, 200, "{}", gw.log());
    assert_eq!(got.headers["location"], "https://app.test/a/b");
    // Other headers and the body are untouched.
    assert!(got.headers.contains_key("last-modified"));
    assert_eq!(got.text(), PAGE);
}

const REWRITE_FOO: &str = "rewrites:\n  - regex: foo\n    replacement: bar";

#[tokio::test]
async fn rewrite_body_rewrites_plain_and_gzip_answers_of_monitored_requests() {
    let app = html_backend().await;
    let gw = start(
        &dynamic(&app, "rewrite-body", REWRITE_FOO),
        "rewrite-body",
        "github.com/packruler/rewrite-body",
    )
    .await;
    let rewritten = PAGE.replace("foo", "bar");

    let plain = get(&gw, &[("accept", "text/html")]).await;
    assert_eq!(plain.status, 200, "{}", gw.log());
    assert_eq!(plain.text(), rewritten);
    assert_eq!(
        plain.headers["content-length"],
        rewritten.len().to_string().as_str()
    );
    assert!(
        !plain.headers.contains_key("last-modified"),
        "removed by default"
    );

    let gzip = get(
        &gw,
        &[("accept", "text/html"), ("accept-encoding", "gzip, zstd")],
    )
    .await;
    assert_eq!(gzip.headers["content-encoding"], "gzip");
    assert_eq!(gunzip(&gzip.body), rewritten);
    // The server was asked only for what can be read back.
    assert_eq!(gzip.headers["x-seen-accept-encoding"], "gzip");

    // A request that does not ask for HTML, or is not a GET, is not touched.
    let json = get(&gw, &[("accept", "application/json")]).await;
    assert_eq!(json.text(), PAGE);
    assert!(json.headers.contains_key("last-modified"));
    let post = gw
        .send(
            Request::post(gw.url("/"))
                .header("host", "app.test")
                .header("accept", "text/html")
                .body(Full::default())
                .unwrap(),
        )
        .await;
    assert_eq!(post.text(), PAGE);
}

#[tokio::test]
async fn rewrite_body_keeps_last_modified_and_monitors_what_it_is_told() {
    let app = html_backend().await;
    let gw = start(
        &dynamic(
            &app,
            "rb",
            &format!("{REWRITE_FOO}\nlastModified: \"true\"\nmonitoring:\n  methods: [GET, POST]\n  types: [text/html]"),
        ),
        "rb",
        "github.com/packruler/rewrite-body",
    )
    .await;
    let post = gw
        .send(
            Request::post(gw.url("/"))
                .header("host", "app.test")
                .header("accept", "text/html")
                .body(Full::default())
                .unwrap(),
        )
        .await;
    assert_eq!(post.text(), PAGE.replace("foo", "bar"), "{}", gw.log());
    assert!(post.headers.contains_key("last-modified"));
}

#[tokio::test]
async fn themepark_adds_the_theme_stylesheet_before_the_target() {
    let app = html_backend().await;
    let gw = start(
        &dynamic(
            &app,
            "themepark",
            "app: bazarr\ntheme: nord\naddons: [bazarr-4k-logo]",
        ),
        "themepark",
        "github.com/packruler/traefik-themepark",
    )
    .await;
    let got = get(&gw, &[("accept", "text/html,application/xhtml+xml")]).await;
    assert_eq!(
        got.text(),
        PAGE.replace(
            "</head>",
            "<link rel=\"stylesheet\" type=\"text/css\" href=\"https://theme-park.dev/css/base/bazarr/nord.css\">\
             <link rel=\"stylesheet\" type=\"text/css\" href=\"https://theme-park.dev/css/addons/bazarr/bazarr-4k-logo/bazarr-4k-logo.css\"></head>"
        ),
        "{}",
        gw.log()
    );
}

#[tokio::test]
async fn a_plugin_gangway_has_not_built_in_keeps_its_router_disabled() {
    let app = html_backend().await;
    let gw = start(
        &dynamic(&app, "redirect", "from: a\nto: b"),
        "redirect",
        "github.com/someone/traefik-redirect-plugin",
    )
    .await;
    let router = gw.api_json("/api/http/routers/app@file").await;
    let error = router["error"].to_string();
    assert!(
        error.contains("github.com/someone/traefik-redirect-plugin")
            && error.contains("redirectRegex"),
        "{router}"
    );
    assert_eq!(get(&gw, &[]).await.status, 404);
}

#[test]
fn check_names_an_unknown_plugin_and_an_undeclared_key() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("traefik.yml"),
        "entryPoints:\n  web:\n    address: 127.0.0.1:8000\nproviders:\n  file:\n    filename: dynamic.yml\nexperimental:\n  plugins:\n    odd:\n      moduleName: github.com/someone/odd-plugin\n      version: v0.1.0\n    headers:\n      moduleName: github.com/XciD/traefik-plugin-rewrite-headers\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("dynamic.yml"),
        "http:\n  routers:\n    a:\n      rule: Host(`a.test`)\n      service: s\n      middlewares: [odd]\n    b:\n      rule: Host(`b.test`)\n      service: s\n      middlewares: [missing]\n    c:\n      rule: Host(`c.test`)\n      service: s\n      middlewares: [headers]\n  middlewares:\n    odd:\n      plugin:\n        odd: {}\n    missing:\n      plugin:\n        nowhere: {}\n    headers:\n      plugin:\n        headers:\n          rewrites:\n            - header: Location\n              regex: \"(\"\n  services:\n    s:\n      loadBalancer:\n        servers:\n          - url: http://127.0.0.1:9000\n",
    )
    .unwrap();
    let (code, out) = support::check(dir.path(), &["--configFile", "traefik.yml"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("`github.com/someone/odd-plugin` is not built into gangway"),
        "{out}"
    );
    assert!(
        out.contains("plugin `nowhere` is not declared")
            && out.contains("experimental.plugins.nowhere.moduleName"),
        "{out}"
    );
    assert!(
        out.contains("plugin `headers` (github.com/XciD/traefik-plugin-rewrite-headers): rewrites[0].regex: invalid regex"),
        "{out}"
    );
}

/// What the echo backend saw of a request sent with `headers`.
async fn seen_with(gw: &Gangway, headers: &[(&str, &str)]) -> support::Seen {
    get(gw, headers).await.seen()
}

#[tokio::test]
async fn cloudflarewarp_believes_cloudflare_headers_only_from_trusted_peers() {
    let app = Backend::echo("app").await;
    let cf = [
        ("cf-connecting-ip", "203.0.113.9"),
        ("cf-visitor", "{\"scheme\":\"https\"}"),
    ];
    let trusted = start(
        &dynamic(
            &app,
            "cloudflarewarp",
            "disableDefault: true\ntrustip:\n  - 127.0.0.1/32",
        ),
        "cloudflarewarp",
        "github.com/BetterCorp/cloudflarewarp",
    )
    .await;
    let seen = seen_with(&trusted, &cf).await;
    assert_eq!(seen.header("x-is-trusted"), Some("yes"), "{seen:?}");
    assert_eq!(seen.header("x-real-ip"), Some("203.0.113.9"));
    assert_eq!(seen.header("x-forwarded-proto"), Some("https"));
    assert!(
        seen.header("x-forwarded-for")
            .is_some_and(|v| v.starts_with("203.0.113.9")),
        "{seen:?}"
    );
    let danger = seen_with(&trusted, &[cf[0], ("cf-visitor", "not json")]).await;
    assert_eq!(danger.header("x-is-trusted"), Some("danger"));
    assert_eq!(danger.header("cf-connecting-ip"), None);

    // Cloudflare's ranges alone: 127.0.0.1 is not Cloudflare, so the
    // headers it sends are dropped and its own address is the real one.
    let untrusted = start(
        &dynamic(&app, "cloudflarewarp", "{}"),
        "cloudflarewarp",
        "github.com/BetterCorp/cloudflarewarp",
    )
    .await;
    let seen = seen_with(&untrusted, &cf).await;
    assert_eq!(seen.header("x-is-trusted"), Some("no"), "{seen:?}");
    assert_eq!(seen.header("x-real-ip"), Some("127.0.0.1"));
    assert_eq!(seen.header("cf-connecting-ip"), None);
    assert_eq!(seen.header("cf-visitor"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_plugin_configured_by_docker_labels_runs() {
    let _serial = SERIAL.lock().await;
    if !ready("plugin_labels").await {
        return;
    }
    let run = Run::new("plugin-labels");
    let gw = run
        .gangway(&[&declare(
            "cloudflare",
            "github.com/BetterCorp/cloudflarewarp",
        )])
        .await;
    let probe = Probe::new(&gw);
    // Label keys in any case; the list and the flag as label text.
    let spec = Spec::new("cf")
        .routed("gangway", "cf", "cf.test", "cf")
        .label("gangway.http.routers.cf.middlewares", "warp")
        .label(
            "gangway.http.middlewares.warp.plugin.Cloudflare.TrustIP",
            "127.0.0.1/32, ::1/128",
        )
        .label(
            "gangway.http.middlewares.warp.plugin.Cloudflare.disabledefault",
            "true",
        );
    run.start(&spec).await;
    eventually(Duration::from_secs(10), "the container is routed", || {
        probe.answers("cf.test", "cf")
    })
    .await;
    let req = Request::get(gw.url("/cgi-bin/echo"))
        .header("host", "cf.test")
        .header("cf-connecting-ip", "198.51.100.7")
        .body(Full::default())
        .unwrap();
    let echo = gw.send(req).await.text();
    assert!(echo.contains("HTTP_X_IS_TRUSTED=yes"), "{echo}");
    assert!(echo.contains("HTTP_X_REAL_IP=198.51.100.7"), "{echo}");
}

/// The status and body of `GET /` for `app.test` sent from the loopback
/// address `from`, with these extra header lines.
async fn status_from(gw: &Gangway, from: &str, headers: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket
        .bind(format!("{from}:0").parse().expect("source address"))
        .expect("bind the source address");
    let mut stream = socket
        .connect(format!("127.0.0.1:{}", gw.port).parse().expect("address"))
        .await
        .expect("connect");
    let request = format!("GET / HTTP/1.1\r\nHost: app.test\r\nConnection: close\r\n{headers}\r\n");
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.expect("answer");
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let body = answer.split_once("\r\n\r\n").map(|(_, b)| b.to_owned());
    (status, body.unwrap_or_default())
}

#[tokio::test]
async fn geoblock_allows_and_refuses_clients_by_the_country_the_database_gives() {
    use gangway::middleware::plugin::geoblock::ip2location::write_db1;
    let app = Backend::echo("app").await;
    let dir = tempfile::tempdir().expect("tempdir");
    // 127.0.0.x is Germany, 127.0.1.x France, 127.0.2.x Italy, the rest none.
    let db = dir.path().join("IP2LOCATION-LITE-DB1.IPV6.BIN");
    let v4 = [
        ("0.0.0.0".parse().unwrap(), "-"),
        ("127.0.0.0".parse().unwrap(), "DE"),
        ("127.0.1.0".parse().unwrap(), "FR"),
        ("127.0.2.0".parse().unwrap(), "IT"),
        ("127.0.3.0".parse().unwrap(), "-"),
    ];
    std::fs::write(&db, write_db1(&v4, &[("::".parse().unwrap(), "-")])).expect("write db");
    let page = dir.path().join("ban.html");
    std::fs::write(&page, "<p>{{.IP}} from {{.Country}} may not</p>").expect("write page");
    let settings = format!(
        "enabled: true\ndatabaseFilePath: {}\nallowedCountries: [DE]\nblockedCountries: [FR]\n\
         defaultAllow: true\nallowPrivate: false\ndisallowedStatusCode: 451\n\
         banHtmlFilePath: {}\nblockedIPBlocks: [127.0.0.9/32]\nbypassHeaders:\n  X-Let-Me: in",
        db.display(),
        page.display()
    );
    let gw = Gangway::with_yaml(
        &dynamic(&app, "geoblock", &settings),
        &[
            &declare("geoblock", "github.com/nscuro/traefik-plugin-geoblock"),
            "--api=true",
            // Forwarded addresses count only from a trusted proxy.
            "--entryPoints.web.forwardedHeaders.trustedIPs=127.0.0.1/32",
        ],
    )
    .await;
    loaded(&gw).await;
    assert_eq!(
        status_from(&gw, "127.0.0.2", "").await.0,
        200,
        "Germany is allowed"
    );
    let (status, body) = status_from(&gw, "127.0.1.5", "").await;
    assert_eq!(status, 451, "France is blocked");
    assert_eq!(body, "<p>127.0.1.5 from FR may not</p>");
    assert_eq!(
        status_from(&gw, "127.0.2.1", "").await.0,
        200,
        "Italy: the default allows"
    );
    assert_eq!(
        status_from(&gw, "127.0.0.9", "").await.0,
        451,
        "a blocked range comes first"
    );
    let bypass = status_from(&gw, "127.0.1.5", "X-Let-Me: in\r\n").await;
    assert_eq!(bypass.0, 200);
    // Through the trusted proxy every forwarded address must pass.
    let forwarded = |xff: &str| format!("X-Forwarded-For: {xff}\r\n");
    assert_eq!(
        status_from(&gw, "127.0.0.1", &forwarded("127.0.0.7"))
            .await
            .0,
        200
    );
    assert_eq!(
        status_from(&gw, "127.0.0.1", &forwarded("127.0.0.7, 127.0.1.1"))
            .await
            .0,
        451
    );
    assert_eq!(
        status_from(&gw, "127.0.0.1", &forwarded("10.1.2.3"))
            .await
            .0,
        451,
        "private refused"
    );
    // A client that is not a trusted proxy cannot name another address.
    assert_eq!(
        status_from(&gw, "127.0.1.5", &forwarded("127.0.0.7"))
            .await
            .0,
        451
    );
}

#[tokio::test]
async fn geoblock_lets_private_addresses_through_when_told_and_refuses_a_bad_database() {
    let app = Backend::echo("app").await;
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db.bin");
    let v4 = [
        ("0.0.0.0".parse().unwrap(), "-"),
        ("127.0.0.0".parse().unwrap(), "FR"),
    ];
    std::fs::write(
        &db,
        gangway::middleware::plugin::geoblock::ip2location::write_db1(&v4, &[]),
    )
    .expect("write db");
    let settings = format!(
        "enabled: true\ndatabaseFilePath: {}\nallowPrivate: true\nallowedCountries: [DE]",
        db.display()
    );
    let gw = Gangway::with_yaml(
        &dynamic(&app, "geoblock", &settings),
        &[
            &declare("geoblock", "github.com/nscuro/traefik-plugin-geoblock"),
            "--api=true",
            "--entryPoints.web.forwardedHeaders.trustedIPs=127.0.0.1/32",
        ],
    )
    .await;
    loaded(&gw).await;
    assert_eq!(
        status_from(&gw, "127.0.0.2", "").await.0,
        403,
        "the plugin's status"
    );
    let private = "X-Forwarded-For: 192.168.1.20\r\n";
    assert_eq!(status_from(&gw, "127.0.0.1", private).await.0, 200);

    // A file that is no database keeps the router disabled, its setting named.
    let broken = dir.path().join("broken.bin");
    std::fs::write(&broken, b"not a database").expect("write");
    let gw = Gangway::with_yaml(
        &dynamic(
            &app,
            "geoblock",
            &format!("enabled: true\ndatabaseFilePath: {}", broken.display()),
        ),
        &[
            &declare("geoblock", "github.com/nscuro/traefik-plugin-geoblock"),
            "--api=true",
        ],
    )
    .await;
    loaded(&gw).await;
    let router = gw.get("api.test", "/api/http/routers/app@file").await;
    let text = String::from_utf8_lossy(&router.body);
    assert!(
        text.contains("disabled") && text.contains("databaseFilePath"),
        "{text}"
    );
    assert_eq!(get(&gw, &[]).await.status, 404);
}
