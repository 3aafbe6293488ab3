//! The access log in both formats, and its dropped-line counter when the
//! writer cannot keep up.

use crate::support;

use http::StatusCode;
use std::time::Duration;
use support::{Backend, Gangway, eventually, free_port};

async fn metrics(port: u16) -> String {
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<http_body_util::Full<bytes::Bytes>>();
    let req = http::Request::get(format!("http://127.0.0.1:{port}/metrics"))
        .body(Default::default())
        .unwrap();
    let resp = client.request(req).await.expect("metrics");
    let body = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .unwrap()
        .to_bytes();
    String::from_utf8_lossy(&body).into_owned()
}

#[tokio::test]
async fn common_format_lines_name_the_request_router_and_server() {
    let b = Backend::echo("b").await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("access.log");
    let flag = format!("--accessLog.filePath={}", path.display());
    let gw = Gangway::with_file(
        &support::one_route("app", "Host(`app.test`)", &[&b.url()]),
        &[&flag],
    )
    .await;
    eventually(Duration::from_secs(5), "routed", || async {
        gw.get("app.test", "/warm").await.status == StatusCode::OK
    })
    .await;
    gw.get("app.test", "/hello?x=1").await;
    gw.get("nowhere.test", "/missing").await;
    eventually(Duration::from_secs(5), "lines written", || async {
        std::fs::read_to_string(&path)
            .unwrap_or_default()
            .contains("/missing")
    })
    .await;
    let text = std::fs::read_to_string(&path).unwrap();
    let hello = text
        .lines()
        .find(|l| l.contains("/hello"))
        .expect("hello line");
    assert!(hello.starts_with("127.0.0.1 - - ["), "{hello}");
    assert!(
        hello.contains(r#""GET /hello?x=1 HTTP/1.1" 200 "#),
        "{hello}"
    );
    assert!(
        hello.contains(r#""app@file""#) && hello.contains(&format!(r#""{}""#, b.url())),
        "{hello}"
    );
    assert!(hello.ends_with("ms"), "{hello}");
    let missing = text
        .lines()
        .find(|l| l.contains("/missing"))
        .expect("404 line");
    assert!(
        missing.contains(r#""GET /missing HTTP/1.1" 404 19 "#),
        "{missing}"
    );
}

#[tokio::test]
async fn json_format_has_traefiks_field_names_and_filters_apply() {
    let b = Backend::echo("b").await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("access.json");
    let flags = [
        format!("--accessLog.filePath={}", path.display()),
        "--accessLog.format=json".to_owned(),
        "--accessLog.filters.statusCodes=400-499".to_owned(),
        "--accessLog.fields.headers.names.User-Agent=keep".to_owned(),
        "--accessLog.fields.names.ClientHost=redact".to_owned(),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let gw = Gangway::with_file(
        &support::one_route("app", "Host(`app.test`)", &[&b.url()]),
        &flags,
    )
    .await;
    eventually(Duration::from_secs(5), "routed", || async {
        gw.get("app.test", "/").await.status == StatusCode::OK
    })
    .await;
    let req = http::Request::get(gw.url("/nope"))
        .header("host", "x.test")
        .header("user-agent", "probe/1")
        .body(Default::default())
        .unwrap();
    assert_eq!(gw.send(req).await.status, StatusCode::NOT_FOUND);
    eventually(Duration::from_secs(5), "line written", || async {
        std::fs::read_to_string(&path)
            .unwrap_or_default()
            .contains("/nope")
    })
    .await;
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The warm-up 200s are filtered out; only 404s (the probe, and warm-ups
    // sent before the configuration was applied) pass.
    assert!(
        lines.iter().all(|l| l["DownstreamStatus"] == 404),
        "only 4xx passes the filter:\n{text}"
    );
    let line = lines
        .iter()
        .find(|l| l["RequestPath"] == "/nope")
        .expect("probe line");
    assert_eq!(line["DownstreamStatus"], 404);
    assert_eq!(line["RequestMethod"], "GET");
    assert_eq!(line["RequestPath"], "/nope");
    assert_eq!(line["RequestHost"], "x.test");
    assert_eq!(line["entryPointName"], "web");
    assert_eq!(line["ClientHost"], "REDACTED");
    assert_eq!(line["request_User-Agent"], "probe/1");
    assert!(line["Duration"].as_u64().is_some());
    assert!(line.get("RouterName").is_none());
}

#[tokio::test]
async fn a_blocked_writer_drops_lines_and_counts_them_without_slowing_requests() {
    let b = Backend::echo("b").await;
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    // Held open for reading (so gangway's open succeeds) but never read.
    let _held = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&fifo)
        .unwrap();
    let internal = free_port();
    let flags = [
        format!("--accessLog.filePath={}", fifo.display()),
        "--accessLog.bufferingSize=5".to_owned(),
        "--metrics.prometheus".to_owned(),
        format!("--entryPoints.gangway.address=127.0.0.1:{internal}"),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let gw = Gangway::with_file(
        &support::one_route("app", "Host(`app.test`)", &[&b.url()]),
        &flags,
    )
    .await;
    eventually(Duration::from_secs(5), "routed", || async {
        gw.get("app.test", "/").await.status == StatusCode::OK
    })
    .await;
    let long = format!("/{}", "p".repeat(400));
    for _ in 0..1500 {
        assert_eq!(
            gw.get("app.test", &long).await.status,
            StatusCode::OK,
            "requests keep being served"
        );
    }
    let text = metrics(internal).await;
    let dropped: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("gangway_accesslog_dropped_lines_total "))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no dropped counter in\n{text}"));
    assert!(dropped > 0.0, "lines were dropped and counted: {dropped}");
}

/// Dashboard-like polling of the API on the internal entry point, then one
/// user request; (access log text, /metrics text).
async fn after_polling(extra: &[&str]) -> (String, String) {
    let b = Backend::echo("b").await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("access.log");
    let internal = free_port();
    let mut flags = vec![
        format!("--accessLog.filePath={}", path.display()),
        "--api.insecure=true".to_owned(),
        "--ping=true".to_owned(),
        "--metrics.prometheus".to_owned(),
        "--metrics.prometheus.addRoutersLabels=true".to_owned(),
        format!("--entryPoints.gangway.address=127.0.0.1:{internal}"),
    ];
    flags.extend(extra.iter().map(|f| (*f).to_owned()));
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let gw = Gangway::with_file(
        &support::one_route("app", "Host(`app.test`)", &[&b.url()]),
        &flags,
    )
    .await;
    eventually(Duration::from_secs(5), "routed", || async {
        gw.get("app.test", "/warm").await.status == StatusCode::OK
    })
    .await;
    // An hour of a dashboard polling every two seconds, played quickly.
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<http_body_util::Full<bytes::Bytes>>();
    for i in 0..1800 {
        let path = ["/api/overview", "/api/http/routers", "/dashboard/", "/ping"][i % 4];
        let req = http::Request::get(format!("http://127.0.0.1:{internal}{path}"))
            .body(Default::default())
            .unwrap();
        let resp = client.request(req).await.expect("internal request");
        assert!(resp.status().is_success(), "{path}: {}", resp.status());
    }
    gw.get("app.test", "/after").await;
    eventually(
        Duration::from_secs(5),
        "the user's line written",
        || async {
            std::fs::read_to_string(&path)
                .unwrap_or_default()
                .contains("/after")
        },
    )
    .await;
    let log = std::fs::read_to_string(&path).unwrap();
    (log, metrics(internal).await)
}

#[tokio::test]
async fn the_dashboards_own_requests_are_not_logged_or_counted_unless_asked() {
    let (log, metrics) = after_polling(&[]).await;
    assert!(log.contains("GET /after"), "{log}");
    assert!(!log.contains("/api/") && !log.contains("/ping"), "{log}");
    assert!(
        !metrics.lines().any(|l| l.starts_with("gangway_entrypoint_")
            && !l.starts_with("gangway_entrypoint_open")
            && l.contains(r#"entrypoint="gangway""#)),
        "no request series of the internal entry point:\n{metrics}"
    );
    assert!(!metrics.contains("@internal"), "{metrics}");
    assert!(
        metrics.contains(r#"router="app@file""#),
        "the user's request is counted:\n{metrics}"
    );

    let (log, metrics) = after_polling(&[
        "--accessLog.addInternals=true",
        "--metrics.addInternals=true",
    ])
    .await;
    assert!(log.contains("GET /api/overview"), "{log}");
    assert!(log.contains("GET /ping"), "{log}");
    let internal_requests = metrics
        .lines()
        .find(|l| {
            l.starts_with("gangway_entrypoint_requests_total{")
                && l.contains(r#"entrypoint="gangway""#)
                && l.contains(r#"code="200""#)
        })
        .unwrap_or_else(|| panic!("no internal entry point series in\n{metrics}"));
    let count: u64 = internal_requests
        .rsplit(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(count >= 1800, "{internal_requests}");
    assert!(metrics.contains(r#"router="api@internal""#), "{metrics}");
}

#[tokio::test]
async fn the_user_of_basic_auth_and_of_forward_auths_header_field_is_logged() {
    let b = Backend::echo("b").await;
    // A real auth server: the bearer token names the user it answers with.
    let auth = Backend::serve(|req: http::Request<hyper::body::Incoming>| async move {
        let token = req
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::to_owned);
        let mut r = http::Response::new(http_body_util::Full::new(bytes::Bytes::new()));
        match token {
            Some(user) => {
                r.headers_mut()
                    .insert("x-auth-user", user.parse().expect("value"));
            }
            None => *r.status_mut() = StatusCode::UNAUTHORIZED,
        }
        r
    })
    .await;
    let dynamic = format!(
        "{}[http.routers.fa]\nrule = \"Host(`fa.test`)\"\nservice = \"b\"\nmiddlewares = [\"fa\"]\n\
         [http.routers.ba]\nrule = \"Host(`ba.test`)\"\nservice = \"b\"\nmiddlewares = [\"ba\"]\n\
         [http.middlewares.fa.forwardAuth]\naddress = \"{}/check\"\nheaderField = \"X-Auth-User\"\n\
         [http.middlewares.ba.basicAuth]\nusers = [\"ann:{{SHA}}87u9ZqY9S/F0eUBXjsPQEDUw4h0=\"]\n",
        support::one_route("b", "Host(`b.test`)", &[&b.url()]),
        auth.url()
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("access.log");
    let flag = format!("--accessLog.filePath={}", path.display());
    let gw = Gangway::with_file(&dynamic, &[&flag]).await;
    let with_auth = |host: &str, path: &str, value: &str| {
        http::Request::get(gw.url(path))
            .header("host", host)
            .header("authorization", value)
            .body(Default::default())
            .unwrap()
    };
    eventually(Duration::from_secs(5), "routed", || async {
        gw.send(with_auth("fa.test", "/warm", "Bearer zoe"))
            .await
            .status
            == StatusCode::OK
    })
    .await;
    assert_eq!(
        gw.send(with_auth("fa.test", "/fa", "Bearer carol"))
            .await
            .status,
        StatusCode::OK
    );
    assert_eq!(
        gw.send(with_auth("ba.test", "/ba", "Basic YW5uOmh1bnRlcjI="))
            .await
            .status,
        StatusCode::OK
    );
    assert_eq!(
        gw.send(with_auth("fa.test", "/refused", "none"))
            .await
            .status,
        StatusCode::UNAUTHORIZED
    );
    eventually(Duration::from_secs(5), "lines written", || async {
        std::fs::read_to_string(&path)
            .unwrap_or_default()
            .contains("/refused")
    })
    .await;
    let text = std::fs::read_to_string(&path).unwrap();
    let line = |p: &str| {
        text.lines()
            .find(|l| l.contains(&format!("GET {p} ")))
            .unwrap_or_else(|| panic!("no line for {p}:\n{text}"))
            .to_owned()
    };
    assert!(line("/fa").starts_with("127.0.0.1 - carol ["), "{text}");
    assert!(line("/ba").starts_with("127.0.0.1 - ann ["), "{text}");
    assert!(line("/refused").starts_with("127.0.0.1 - - ["), "{text}");
}

/// A real request through gangway, its JSON line held against the line
/// Traefik's documentation describes for it, field by field.
#[tokio::test]
async fn a_proxied_requests_json_line_has_traefiks_fields_and_values() {
    let b = Backend::echo("b").await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("access.json");
    let flags = [
        format!("--accessLog.filePath={}", path.display()),
        "--accessLog.format=json".to_owned(),
        "--accessLog.fields.headers.names.User-Agent=keep".to_owned(),
        "--accessLog.fields.headers.names.Authorization=redact".to_owned(),
        "--accessLog.fields.headers.names.Content-Type=keep".to_owned(),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let gw = Gangway::with_file(
        &support::one_route("app", "Host(`app.test`)", &[&b.url()]),
        &flags,
    )
    .await;
    eventually(Duration::from_secs(5), "routed", || async {
        gw.get("app.test", "/warm").await.status == StatusCode::OK
    })
    .await;
    let req = http::Request::post(gw.url("/api/users?page=2"))
        .header("host", "app.test:8000")
        .header("user-agent", "probe/1")
        .header("authorization", "Bearer secret")
        .header("cookie", "session=1")
        .body(http_body_util::Full::new(bytes::Bytes::from_static(
            b"hello",
        )))
        .unwrap();
    let got = gw.send(req).await;
    assert_eq!(got.status, StatusCode::OK);
    eventually(Duration::from_secs(5), "line written", || async {
        std::fs::read_to_string(&path)
            .unwrap_or_default()
            .contains("/api/users")
    })
    .await;
    let text = std::fs::read_to_string(&path).unwrap();
    let line: serde_json::Value = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|l| l["RequestPath"] == "/api/users?page=2")
        .unwrap();
    let backend = b.url();
    let backend_addr = backend.trim_start_matches("http://");
    let port = line["ClientPort"].as_str().expect("ClientPort is text");
    // What Traefik writes for this request, less the values only the run
    // decides (times, durations, the client's port, the request count).
    let expected = serde_json::json!({
        "ClientAddr": format!("127.0.0.1:{port}"),
        "ClientHost": "127.0.0.1",
        "ClientUsername": "-",
        "DownstreamStatus": 200,
        "OriginStatus": 200,
        "RequestAddr": "app.test:8000",
        "RequestContentSize": 5,
        "RequestHost": "app.test",
        "RequestMethod": "POST",
        "RequestPath": "/api/users?page=2",
        "RequestPort": "8000",
        "RequestProtocol": "HTTP/1.1",
        "RequestScheme": "http",
        "RetryAttempts": 0,
        "RouterName": "app@file",
        "ServiceAddr": backend_addr,
        "ServiceName": "app@file",
        "ServiceURL": backend,
        "entryPointName": "web",
        "request_User-Agent": "probe/1",
        "request_Authorization": "REDACTED",
        "level": "info",
        "msg": "",
    });
    for (name, value) in expected.as_object().unwrap() {
        assert_eq!(&line[name], value, "{name} in {line}");
    }
    let size = line["DownstreamContentSize"].as_u64().unwrap();
    assert_eq!(size, got.body.len() as u64, "{line}");
    assert_eq!(line["OriginContentSize"].as_u64(), Some(size), "{line}");
    let duration = line["Duration"].as_u64().unwrap();
    let origin = line["OriginDuration"].as_u64().unwrap();
    let overhead = line["Overhead"].as_u64().unwrap();
    assert!(origin > 0 && origin <= duration, "{line}");
    assert_eq!(overhead, duration - origin, "{line}");
    assert!(line["RequestCount"].as_u64().unwrap() >= 2, "{line}");
    for stamp in ["StartUTC", "StartLocal", "time"] {
        let s = line[stamp].as_str().unwrap();
        assert!(
            s.ends_with('Z') && s.as_bytes()[10] == b'T',
            "{stamp} {line}"
        );
    }
    assert!(
        line.get("request_Cookie").is_none(),
        "headers not named are dropped: {line}"
    );
    let origin_headers: Vec<&String> = line
        .as_object()
        .unwrap()
        .keys()
        .filter(|k| k.starts_with("origin_") || k.starts_with("downstream_"))
        .collect();
    assert!(
        origin_headers.iter().all(|k| k.ends_with("Content-Type")),
        "only the kept response header: {origin_headers:?}"
    );
}

/// `filters.retryAttempts`: only retried requests are logged, with their
/// `RetryAttempts`; `genericCLF` lines stop after the user agent.
#[tokio::test]
async fn retried_requests_pass_the_retry_filter_and_generic_clf_is_plain_clf() {
    let live = Backend::echo("live").await;
    let dead = format!("http://127.0.0.1:{}", free_port());
    let conf = format!(
        "[http.routers.app]\nrule = \"Host(`app.test`)\"\nservice = \"app\"\nmiddlewares = [\"retry\"]\n\
         [http.services.app.loadBalancer]\n\
         [[http.services.app.loadBalancer.servers]]\nurl = \"{dead}\"\n\
         [[http.services.app.loadBalancer.servers]]\nurl = \"{}\"\n\
         [http.middlewares.retry.retry]\nattempts = 2\ninitialInterval = \"10ms\"\n\
         [http.services.app.loadBalancer.passiveHealthCheck]\nmaxFailedAttempts = 1000\n",
        live.url()
    );
    // Passive health that never takes the dead server out keeps it in the
    // rotation, so every other request is retried on the live one.
    let dir = tempfile::tempdir().unwrap();
    let json_path = dir.path().join("retried.json");
    let flags = [
        format!("--accessLog.filePath={}", json_path.display()),
        "--accessLog.format=json".to_owned(),
        "--accessLog.filters.retryAttempts=true".to_owned(),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let gw = Gangway::with_file(&conf, &flags).await;
    let post = |path: &str| {
        http::Request::post(gw.url(path))
            .header("host", "app.test")
            .body(http_body_util::Full::new(bytes::Bytes::from_static(b"x")))
            .unwrap()
    };
    eventually(Duration::from_secs(5), "routed", || async {
        gw.send(post("/warm")).await.status == StatusCode::OK
    })
    .await;
    for i in 0..6 {
        assert_eq!(
            gw.send(post(&format!("/p{i}"))).await.status,
            StatusCode::OK
        );
    }
    eventually(Duration::from_secs(5), "a retried line", || async {
        std::fs::read_to_string(&json_path)
            .unwrap_or_default()
            .contains("/p")
    })
    .await;
    let text = std::fs::read_to_string(&json_path).unwrap();
    for l in text.lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        assert_eq!(v["RetryAttempts"], 1, "only retried requests: {l}");
        assert_eq!(v["DownstreamStatus"], 200, "{l}");
        assert_eq!(v["ServiceURL"], live.url(), "{l}");
    }
    drop(gw);

    let clf_path = dir.path().join("generic.log");
    let flags = [
        format!("--accessLog.filePath={}", clf_path.display()),
        "--accessLog.format=genericCLF".to_owned(),
        "--accessLog.fields.headers.names.User-Agent=keep".to_owned(),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let gw = Gangway::with_file(
        &support::one_route("app", "Host(`app.test`)", &[&live.url()]),
        &flags,
    )
    .await;
    eventually(Duration::from_secs(5), "routed", || async {
        gw.get("app.test", "/warm").await.status == StatusCode::OK
    })
    .await;
    let req = http::Request::get(gw.url("/plain"))
        .header("host", "app.test")
        .header("user-agent", "analyzer/2")
        .body(Default::default())
        .unwrap();
    let got = gw.send(req).await;
    eventually(Duration::from_secs(5), "the line written", || async {
        std::fs::read_to_string(&clf_path)
            .unwrap_or_default()
            .contains("/plain")
    })
    .await;
    let text = std::fs::read_to_string(&clf_path).unwrap();
    let line = text.lines().find(|l| l.contains("/plain")).unwrap();
    let (head, _) = line.split_once(" [").unwrap();
    assert_eq!(head, "127.0.0.1 - -", "{line}");
    assert!(
        line.ends_with(&format!(
            "] \"GET /plain HTTP/1.1\" 200 {} \"-\" \"analyzer/2\"",
            got.body.len()
        )),
        "{line}"
    );
}

#[tokio::test]
async fn an_entry_points_switches_are_its_routers_defaults_and_a_router_may_say_otherwise() {
    let b = Backend::echo("b").await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("access.log");
    let internal = free_port();
    let flags = [
        format!("--accessLog.filePath={}", path.display()),
        "--metrics.prometheus".to_owned(),
        "--metrics.prometheus.addRoutersLabels=true".to_owned(),
        format!("--entryPoints.gangway.address=127.0.0.1:{internal}"),
        "--entryPoints.web.observability.accessLogs=false".to_owned(),
        "--entryPoints.web.observability.metrics=false".to_owned(),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    // `quiet` takes the entry point's switches; `loud` says otherwise.
    let conf = format!(
        "{}{}[http.routers.loud.observability]\naccessLogs = true\nmetrics = true\n",
        support::one_route("quiet", "Host(`quiet.test`)", &[&b.url()]),
        support::one_route("loud", "Host(`loud.test`)", &[&b.url()]),
    );
    let gw = Gangway::with_file(&conf, &flags).await;
    eventually(Duration::from_secs(5), "routed", || async {
        gw.get("quiet.test", "/warm").await.status == StatusCode::OK
            && gw.get("loud.test", "/warm").await.status == StatusCode::OK
    })
    .await;
    assert_eq!(gw.get("quiet.test", "/q").await.status, StatusCode::OK);
    assert_eq!(
        gw.get("nowhere.test", "/unrouted").await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(gw.get("loud.test", "/l").await.status, StatusCode::OK);
    // Lines are written in order: once `/l` is there, `/q` and
    // `/unrouted` would be too.
    eventually(Duration::from_secs(5), "the loud line written", || async {
        std::fs::read_to_string(&path)
            .unwrap_or_default()
            .contains("GET /l ")
    })
    .await;
    let log = std::fs::read_to_string(&path).unwrap();
    assert!(!log.contains("/q "), "{log}");
    assert!(!log.contains("/unrouted"), "{log}");
    let metrics = metrics(internal).await;
    assert!(metrics.contains(r#"router="loud@file""#), "{metrics}");
    assert!(!metrics.contains(r#"router="quiet@file""#), "{metrics}");
    // The entry point counted the loud router's requests only: its two.
    let web_200 = metrics
        .lines()
        .find(|l| {
            l.starts_with("gangway_entrypoint_requests_total{")
                && l.contains(r#"entrypoint="web""#)
                && l.contains(r#"code="200""#)
        })
        .unwrap_or_else(|| panic!("no web series in\n{metrics}"));
    assert!(web_200.ends_with(" 2"), "{web_200}");
    assert!(
        !metrics
            .lines()
            .any(|l| l.contains(r#"entrypoint="web""#) && l.contains(r#"code="404""#)),
        "{metrics}"
    );
}
