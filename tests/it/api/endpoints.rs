//! The read-only API, /ping, /metrics and the access log, through the real
//! binary.

use crate::support;
use sha2::Digest as _;

use http::StatusCode;
use serde_json::Value;
use std::time::Duration;
use support::docker::{Run, SERIAL, Spec, ready};
use support::{Backend, Gangway, eventually, free_port};

struct Api {
    port: u16,
    client: hyper_util::client::legacy::Client<
        hyper_util::client::legacy::connect::HttpConnector,
        http_body_util::Full<bytes::Bytes>,
    >,
}

impl Api {
    fn new(port: u16) -> Self {
        Api {
            port,
            client: hyper_util::client::legacy::Client::builder(
                hyper_util::rt::TokioExecutor::new(),
            )
            .build_http(),
        }
    }

    async fn get(&self, path: &str) -> (StatusCode, http::HeaderMap, String) {
        let req = http::Request::get(format!("http://127.0.0.1:{}{path}", self.port))
            .body(Default::default())
            .unwrap();
        let resp = self.client.request(req).await.expect("api request");
        let (parts, body) = resp.into_parts();
        let body = http_body_util::BodyExt::collect(body)
            .await
            .expect("body")
            .to_bytes();
        (
            parts.status,
            parts.headers,
            String::from_utf8_lossy(&body).into_owned(),
        )
    }

    /// GET with extra request headers.
    async fn get_with(
        &self,
        path: &str,
        headers: &[(&str, &str)],
    ) -> (StatusCode, http::HeaderMap, bytes::Bytes) {
        let mut req = http::Request::get(format!("http://127.0.0.1:{}{path}", self.port));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let resp = self
            .client
            .request(req.body(Default::default()).unwrap())
            .await
            .expect("api request");
        let (parts, body) = resp.into_parts();
        let body = http_body_util::BodyExt::collect(body)
            .await
            .expect("body")
            .to_bytes();
        (parts.status, parts.headers, body)
    }

    async fn json(&self, path: &str) -> Value {
        let (status, _, body) = self.get(path).await;
        assert_eq!(status, StatusCode::OK, "{path}: {body}");
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"))
    }
}

fn config(b: &Backend) -> String {
    format!(
        r#"
[http.routers.app]
rule = "Host(`app.test`)"
service = "app"
[http.routers.api-path]
rule = "Host(`app.test`) && PathPrefix(`/api`)"
service = "app"
[http.routers.broken]
rule = "Host(`broken.test`) &&"
service = "app"
[http.routers.orphan]
rule = "Host(`orphan.test`)"
service = "missing"
[http.routers.dash]
rule = "Host(`dash.test`)"
service = "api@internal"
[http.services.app.loadBalancer]
[[http.services.app.loadBalancer.servers]]
url = "{}"
[http.middlewares.strip.stripPrefix]
prefixes = ["/x"]
[http.middlewares.login.basicAuth]
users = ["ann:{hash}"]
"#,
        b.url(),
        hash = ANN_HASH,
    )
}

/// bcrypt of `secret`: must never leave gangway.
const ANN_HASH: &str = "$2y$05$AC0XYuNFBobK5nnBvVR4f.WQZqNqrPfJUnYCQH2H5AknOw.NRvXoy";

async fn start(extra: &[&str]) -> (Backend, Gangway, Api) {
    let b = Backend::echo("b").await;
    let internal = free_port();
    let ep = format!("--entryPoints.gangway.address=127.0.0.1:{internal}");
    let mut flags = vec![
        "--api.insecure=true",
        "--ping",
        "--metrics.prometheus",
        ep.as_str(),
    ];
    flags.extend_from_slice(extra);
    let gw = Gangway::with_file(&config(&b), &flags).await;
    let api = Api::new(internal);
    eventually(
        Duration::from_secs(10),
        "API answers with the file's routers",
        || async { api.get("/api/http/routers/app@file").await.0 == StatusCode::OK },
    )
    .await;
    (b, gw, api)
}

fn by_name<'a>(list: &'a Value, name: &str) -> &'a Value {
    list.as_array()
        .and_then(|a| a.iter().find(|v| v["name"] == name))
        .unwrap_or_else(|| panic!("{name} in {list}"))
}

#[tokio::test]
async fn routers_services_and_middlewares_in_traefiks_shapes() {
    let (b, _gw, api) = start(&[]).await;
    let routers = api.json("/api/http/routers").await;
    let app = by_name(&routers, "api-path@file");
    assert_eq!(app["provider"], "file");
    assert_eq!(app["rule"], "Host(`app.test`) && PathPrefix(`/api`)");
    assert_eq!(app["service"], "app@file");
    assert_eq!(app["status"], "enabled");
    assert_eq!(app["priority"], 38);
    assert_eq!(
        app["using"],
        serde_json::json!(["web"]),
        "routers without entryPoints join every entry point but the internal one"
    );

    let broken = by_name(&routers, "broken@file");
    assert_eq!(broken["status"], "disabled");
    assert!(
        broken["error"][0]
            .as_str()
            .is_some_and(|e| e.contains("column")),
        "{broken}"
    );
    // Each error names the file and the line of the option at fault, as
    // text and as typed fields.
    let problem = &broken["problems"][0];
    assert_eq!(problem["origin"]["type"], "file", "{broken}");
    assert_eq!(problem["origin"]["line"], 9, "the `rule` line: {broken}");
    let path = problem["origin"]["path"].as_str().expect("path");
    assert!(path.ends_with("dynamic.toml"), "{path}");
    assert_eq!(problem["kind"], "ruleSyntax");
    assert_eq!(problem["object"]["name"], "broken@file");
    // The column as a field, the same one the sentence names: the rule
    // ends where its second operand should be.
    let rule = "Host(`broken.test`) &&";
    assert_eq!(problem["column"], rule.chars().count() + 1, "{broken}");
    assert!(
        problem["error"]
            .as_str()
            .is_some_and(|e| e.contains(&format!("column {}", rule.chars().count() + 1))),
        "{broken}"
    );
    assert!(
        broken["error"][0]
            .as_str()
            .is_some_and(|e| e.starts_with(&format!("{path}:9: rule `"))),
        "{broken}"
    );
    let orphan = by_name(&routers, "orphan@file");
    assert_eq!(orphan["status"], "disabled");
    assert!(
        orphan["error"][0]
            .as_str()
            .is_some_and(|e| e.contains("missing@file")),
        "{orphan}"
    );
    assert_eq!(orphan["problems"][0]["origin"]["line"], 13, "{orphan}");
    assert_eq!(
        orphan["problems"][0]["message"],
        "service `missing@file`: does not exist"
    );

    let services = api.json("/api/http/services").await;
    let svc = by_name(&services, "app@file");
    assert_eq!(svc["type"], "loadbalancer");
    assert_eq!(svc["loadBalancer"]["servers"][0]["url"], b.url());
    assert_eq!(svc["serverStatus"][b.url()], "UP");
    // Not set in the file: shown with Traefik's default, as Traefik does.
    assert_eq!(svc["loadBalancer"]["passHostHeader"], true, "{svc}");
    let raw = api.json("/api/rawdata").await;
    assert_eq!(
        raw["services"]["app@file"]["loadBalancer"]["passHostHeader"], true,
        "{raw}"
    );
    let used: Vec<&str> = svc["usedBy"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        used.contains(&"api-path@file") && used.contains(&"app@file"),
        "{svc}"
    );

    let middlewares = api.json("/api/http/middlewares").await;
    let strip = by_name(&middlewares, "strip@file");
    assert_eq!(strip["type"], "stripprefix");
    assert_eq!(strip["stripPrefix"]["prefixes"][0], "/x");
    assert_eq!(strip["usedBy"], serde_json::json!([]));

    // One object by name; a missing one is a 404 with a message.
    assert_eq!(
        api.json("/api/http/routers/orphan@file").await["status"],
        "disabled"
    );
    let (status, _, body) = api.get("/api/http/routers/nope@file").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(body.contains("router not found"));
}

#[tokio::test]
async fn list_filters_and_pages_like_traefik() {
    let (_b, _gw, api) = start(&[]).await;
    let disabled = api.json("/api/http/routers?status=disabled").await;
    let names: Vec<&str> = disabled
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v["name"].as_str())
        .collect();
    assert_eq!(names, ["broken@file", "orphan@file"]);
    let searched = api.json("/api/http/routers?search=orphan").await;
    assert_eq!(searched.as_array().unwrap().len(), 1);
    let internal = api.json("/api/http/routers?provider=internal").await;
    assert!(
        internal
            .as_array()
            .unwrap()
            .iter()
            .all(|v| v["provider"] == "internal")
            && !internal.as_array().unwrap().is_empty()
    );
    let (_, headers, body) = api.get("/api/http/routers?per_page=2&page=1").await;
    assert_eq!(
        serde_json::from_str::<Value>(&body)
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(headers["x-next-page"], "2");
    let (_, headers, _) = api.get("/api/http/routers?per_page=2&page=100").await;
    assert_eq!(
        headers["x-next-page"], "1",
        "the last page points back to the first"
    );
}

#[tokio::test]
async fn router_lists_filter_by_service_and_middleware_like_traefik() {
    let b = Backend::echo("b").await;
    let internal = free_port();
    let tcp = free_port();
    let dynamic = format!(
        r#"
[http.routers.a]
rule = "Host(`a.test`)"
service = "s"
middlewares = ["m1"]
[http.routers.b]
rule = "Host(`b.test`)"
service = "s"
[http.routers.c]
rule = "Host(`c.test`)"
service = "t"
middlewares = ["m1", "m2"]
[http.services.s.loadBalancer]
[[http.services.s.loadBalancer.servers]]
url = "{url}"
[http.services.t.loadBalancer]
[[http.services.t.loadBalancer.servers]]
url = "{url}"
[http.middlewares.m1.stripPrefix]
prefixes = ["/x"]
[http.middlewares.m2.stripPrefix]
prefixes = ["/y"]
[tcp.routers.db]
entryPoints = ["db"]
rule = "HostSNI(`*`)"
service = "db"
[tcp.routers.cache]
entryPoints = ["db"]
rule = "HostSNI(`cache.test`)"
service = "cache"
[tcp.routers.cache.tls]
[[tcp.services.db.loadBalancer.servers]]
address = "127.0.0.1:1"
[[tcp.services.cache.loadBalancer.servers]]
address = "127.0.0.1:2"
"#,
        url = b.url()
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
    let api = Api::new(internal);
    eventually(Duration::from_secs(10), "the file's routers", || async {
        api.get("/api/tcp/routers/cache@file").await.0 == StatusCode::OK
    })
    .await;
    // HostSNI(`*`) alone shows Traefik's -1, not its rule's length.
    let (_, _, body) = api
        .get("/api/tcp/routers?sortBy=priority&direction=desc")
        .await;
    let tcp: Vec<Value> = serde_json::from_str(&body).unwrap();
    let priorities: Vec<(&str, i64)> = tcp
        .iter()
        .map(|r| (r["name"].as_str().unwrap(), r["priority"].as_i64().unwrap()))
        .collect();
    assert_eq!(priorities, [("cache@file", 21), ("db@file", -1)], "{body}");
    for (query, want) in [
        ("serviceName=s@file", vec!["a@file", "b@file"]),
        // Without a provider, the name in any provider, as Traefik matches it.
        ("serviceName=s", vec!["a@file", "b@file"]),
        ("serviceName=s@docker", vec![]),
        ("middlewareName=m1@file", vec!["a@file", "c@file"]),
        ("middlewareName=m2", vec!["c@file"]),
        ("serviceName=t&middlewareName=m1", vec!["c@file"]),
    ] {
        let got = api
            .json(&format!("/api/http/routers?provider=file&{query}"))
            .await;
        assert_eq!(names(&got), want, "{query}");
    }
    let tcp_got = api.json("/api/tcp/routers?serviceName=cache").await;
    assert_eq!(names(&tcp_got), ["cache@file"]);
    // Lists without services or middlewares are not filtered by them.
    let services = api
        .json("/api/http/services?provider=file&serviceName=s")
        .await;
    assert_eq!(names(&services), ["s@file", "t@file"]);

    // rawdata has the TCP section as Traefik names it, the HTTP ones beside it.
    let raw = api.json("/api/rawdata").await;
    assert!(raw["tcpRouters"]["cache@file"].is_object(), "{raw}");
    assert!(raw["tcpServices"]["db@file"].is_object(), "{raw}");
    assert!(raw["routers"]["a@file"].is_object(), "{raw}");
    drop(gw);
}

fn names(list: &Value) -> Vec<&str> {
    list.as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v["name"].as_str())
        .collect()
}

#[tokio::test]
async fn lists_sort_by_any_column_and_say_how_many_match() {
    let (_b, _gw, api) = start(&[]).await;
    let by_name = api
        .json("/api/http/routers?provider=file&sortBy=name")
        .await;
    assert_eq!(
        names(&by_name),
        [
            "api-path@file",
            "app@file",
            "broken@file",
            "dash@file",
            "orphan@file"
        ]
    );
    let desc = api
        .json("/api/http/routers?provider=file&sortBy=name&direction=desc")
        .await;
    assert_eq!(
        names(&desc),
        [
            "orphan@file",
            "dash@file",
            "broken@file",
            "app@file",
            "api-path@file"
        ]
    );
    // Priorities sort as numbers: the rule's length by default.
    let by_priority = api
        .json("/api/http/routers?provider=file&sortBy=priority&direction=desc")
        .await;
    let priorities: Vec<i64> = by_priority
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v["priority"].as_i64())
        .collect();
    assert!(
        priorities.windows(2).all(|w| w[0] >= w[1]) && priorities.len() == 5,
        "{priorities:?}"
    );
    // Errors first when sorted by status, descending.
    let by_status = api
        .json("/api/http/routers?provider=file&sortBy=status&direction=desc")
        .await;
    assert_eq!(names(&by_status)[..2], ["broken@file", "orphan@file"]);
    let (status, _, body) = api.get("/api/http/routers?sortBy=colour").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains("colour"), "{body}");
    let (status, _, body) = api.get("/api/http/routers?sortBy=name&direction=up").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (_, headers, _) = api.get("/api/http/routers?provider=file&per_page=2").await;
    assert_eq!(headers["x-total-count"], "5");
    // TCP lists sort the same way.
    let (status, _, body) = api.get("/api/tcp/routers?sortBy=priority").await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn an_unchanged_answer_is_an_empty_304_and_assets_come_compressed() {
    let (_b, _gw, api) = start(&[]).await;
    let (status, headers, body) = api.get_with("/api/overview", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert!(!body.is_empty());
    let etag = headers["etag"].to_str().unwrap().to_owned();
    let (status, _, body) = api
        .get_with("/api/overview", &[("if-none-match", &etag)])
        .await;
    assert_eq!(status, StatusCode::NOT_MODIFIED);
    assert!(body.is_empty(), "a 304 has no body");
    let (status, _, _) = api
        .get_with("/api/overview", &[("if-none-match", "\"something-else\"")])
        .await;
    assert_eq!(status, StatusCode::OK, "another tag gets the answer");
    // A dashboard file: gzipped for a client that takes it, with a tag a
    // second visit revalidates against.
    let (status, plain_headers, plain) = api.get_with("/dashboard/app.js", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert!(plain_headers.get("content-encoding").is_none());
    let (status, headers, gz) = api
        .get_with("/dashboard/app.js", &[("accept-encoding", "gzip, br")])
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-encoding"], "gzip");
    assert!(
        gz.len() < plain.len() / 2,
        "{} of {}",
        gz.len(),
        plain.len()
    );
    let mut unzipped = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut unzipped)
        .expect("gzip");
    assert_eq!(unzipped, plain, "the same file");
    let etag = headers["etag"].to_str().unwrap().to_owned();
    assert_ne!(etag, plain_headers["etag"].to_str().unwrap());
    let (status, _, body) = api
        .get_with(
            "/dashboard/app.js",
            &[("accept-encoding", "gzip"), ("if-none-match", &etag)],
        )
        .await;
    assert_eq!(status, StatusCode::NOT_MODIFIED);
    assert!(body.is_empty());
}

#[tokio::test]
async fn overview_entrypoints_rawdata_version_providers() {
    let (_b, _gw, api) = start(&[]).await;
    let overview = api.json("/api/overview").await;
    assert_eq!(overview["http"]["routers"]["errors"], 2);
    assert!(overview["http"]["routers"]["total"].as_u64().unwrap() >= 5);
    assert_eq!(overview["features"]["metrics"], "Prometheus");
    assert_eq!(overview["providers"], serde_json::json!(["File"]));

    let eps = api.json("/api/entrypoints").await;
    let web = by_name(&eps, "web");
    assert!(web["address"].as_str().unwrap().starts_with("127.0.0.1:"));
    assert_eq!(web["transport"]["lifeCycle"]["graceTimeOut"], "10s");
    assert_eq!(
        api.json("/api/entrypoints/gangway").await["name"],
        "gangway"
    );

    let raw = api.json("/api/rawdata").await;
    assert_eq!(raw["routers"]["app@file"]["service"], "app@file");
    assert!(
        raw["services"]["app@file"].is_object() && raw["middlewares"]["strip@file"].is_object()
    );
    let version = api.json("/api/version").await;
    assert_eq!(version["Version"], env!("CARGO_PKG_VERSION"));
    // A date string, as Traefik sends it: 2026-01-02T15:04:05.123Z.
    let started = version["startDate"].as_str().expect("a string");
    assert!(
        started.len() >= 20
            && started.ends_with('Z')
            && started.as_bytes()[4] == b'-'
            && started.as_bytes()[10] == b'T'
            && started[..4].parse::<u32>().is_ok_and(|y| y >= 2024),
        "{started}"
    );
    // Traefik's sections, TCP and UDP ones only when there are any.
    assert!(
        raw.get("tcpRouters").is_none() && raw.get("udpServices").is_none(),
        "{raw}"
    );
    let providers = api.json("/api/providers").await;
    assert!(
        providers["file"]["lastSync"].as_u64().is_some(),
        "{providers}"
    );
    assert_eq!(providers["file"]["routers"], 5);
}

#[tokio::test]
async fn explain_names_the_winner_and_why_the_others_lost() {
    let (b, _gw, api) = start(&[]).await;
    let e = api
        .json("/api/explain?host=app.test&path=/api/users&method=GET")
        .await;
    let web = &e["entryPoints"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["entryPoint"] == "web")
        .cloned()
        .unwrap();
    assert_eq!(web["winner"]["router"], "api-path@file");
    assert_eq!(web["winner"]["service"], "app@file");
    assert_eq!(web["winner"]["servers"][0], b.url());
    let shadowed = web["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["router"] == "app@file")
        .unwrap();
    assert_eq!(shadowed["matched"], false);
    assert!(
        shadowed["reason"]
            .as_str()
            .unwrap()
            .contains("higher priority"),
        "{shadowed}"
    );
    let other = web["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["router"] == "orphan@file");
    assert!(other.is_none(), "disabled routers are not candidates");
    // A router for another host is not one the request can reach: it is
    // counted, not listed, as the proxy never tries it.
    let dash = web["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["router"] == "dash@file");
    assert!(dash.is_none(), "{web}");
    assert!(web["otherHosts"].as_u64().is_some_and(|n| n >= 1), "{web}");
    assert_eq!(web["notListed"], 0, "{web}");
    // Asked about a host a slip away from one routed, explain names the
    // router it was likely meant for.
    let typo = api.json("/api/explain?host=dahs.test&path=/").await;
    let near = &typo["entryPoints"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["entryPoint"] == "web")
        .unwrap()["nearHosts"];
    assert!(
        near.as_array()
            .is_some_and(|n| n.iter().any(|c| c["router"] == "dash@file")),
        "{typo}"
    );
    assert!(
        e["disabledRouters"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["router"] == "broken@file")
    );

    let (status, _, body) = api.get("/api/explain?method=G%20T").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, _, body) = api.get("/api/explain?host=a%zz").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains("malformed percent-encoding"), "{body}");
    let e = api
        .json("/api/explain?host=app.test&path=%2Fapi%2Fx+y")
        .await;
    assert_eq!(
        e["request"]["path"], "/api/x y",
        "decoded as Query matchers decode"
    );
}

#[tokio::test]
async fn no_secret_leaves_through_the_api_or_the_log() {
    let (_b, gw, api) = start(&["--log.level=DEBUG"]).await;
    let login = api.json("/api/http/middlewares/login@file").await;
    assert_eq!(login["basicAuth"]["users"], serde_json::json!(["ann"]));
    let mut seen = String::new();
    for path in [
        "/api/http/middlewares",
        "/api/rawdata",
        "/api/overview",
        "/api/http/routers",
    ] {
        seen.push_str(&api.get(path).await.2);
    }
    assert!(seen.contains("login@file"), "the middleware is listed");
    let salt = &ANN_HASH[..20];
    assert!(!seen.contains(salt), "a basicAuth hash in the API: {seen}");
    assert!(!gw.log().contains(salt), "a basicAuth hash in the log");
}

#[tokio::test]
async fn ping_dashboard_and_api_behind_a_router() {
    let (_b, gw, api) = start(&[]).await;
    let (status, _, body) = api.get("/ping").await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "OK"));
    let (status, headers, body) = api.get("/dashboard/").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    assert!(body.contains("<title>gangway</title>"));
    assert!(
        headers["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("default-src 'self'"),
        "the dashboard may load nothing from elsewhere"
    );
    // Browsers run module scripts only when served with a JavaScript type.
    let (status, headers, body) = api.get("/dashboard/app.js").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/javascript")
    );
    assert!(body.contains("import "));
    assert_eq!(
        api.get("/dashboard/nothing.js").await.0,
        StatusCode::NOT_FOUND
    );
    let (status, headers, _) = api.get("/").await;
    assert_eq!(status, StatusCode::TEMPORARY_REDIRECT);
    assert_eq!(headers["location"], "/dashboard/");
    // A user router sends a host to api@internal on the public entry point.
    let got = gw.get("dash.test", "/api/version").await;
    assert_eq!(got.status, StatusCode::OK);
    assert!(got.text().contains("\"Version\""));
    // The API is not on the public entry point for other hosts.
    assert_eq!(
        gw.get("app.test", "/api/version").await.status,
        StatusCode::OK,
        "app routes /api to its own backend"
    );
    assert!(
        gw.get("app.test", "/api/version")
            .await
            .text()
            .contains("\"backend\":\"b\"")
    );
    // No API endpoint accepts a change.
    let req = http::Request::post(format!("http://127.0.0.1:{}/api/http/routers", api.port))
        .body(Default::default())
        .unwrap();
    let resp = api.client.request(req).await.unwrap();
    assert_eq!(resp.status(), StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test]
async fn api_and_dashboard_move_under_the_base_path() {
    let b = Backend::echo("b").await;
    let internal = free_port();
    let ep = format!("--entryPoints.gangway.address=127.0.0.1:{internal}");
    let gw = Gangway::with_file(
        &config(&b),
        &["--api.insecure=true", "--api.basePath=/traefik/", &ep],
    )
    .await;
    let api = Api::new(internal);
    eventually(
        Duration::from_secs(10),
        "the API answers under the base path",
        || async { api.get("/traefik/api/http/routers/app@file").await.0 == StatusCode::OK },
    )
    .await;
    // Nothing is left at the old places.
    assert_eq!(api.get("/api/version").await.0, StatusCode::NOT_FOUND);
    assert_eq!(api.get("/dashboard/").await.0, StatusCode::NOT_FOUND);
    // The dashboard and its files, under the base path.
    let (status, headers, body) = api.get("/traefik/dashboard/").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    assert!(body.contains("<title>gangway</title>"));
    let (status, _, body) = api.get("/traefik/dashboard/api.js").await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains("fetch("));
    // The base path and the dashboard's own path lead to the dashboard.
    for path in ["/traefik", "/traefik/", "/traefik/dashboard"] {
        let (status, headers, _) = api.get(path).await;
        assert_eq!(status, StatusCode::TEMPORARY_REDIRECT, "{path}");
        assert_eq!(headers["location"], "/traefik/dashboard/", "{path}");
    }
    // The internal routers match the moved paths.
    let router = api.json("/traefik/api/http/routers/api@internal").await;
    assert_eq!(router["rule"], "PathPrefix(`/traefik/api`)");
    let router = api
        .json("/traefik/api/http/routers/dashboard@internal")
        .await;
    assert_eq!(
        router["rule"],
        "PathPrefix(`/traefik/dashboard`) || Path(`/traefik`) || Path(`/traefik/`)"
    );
    // A user's router to api@internal answers under the base path too.
    let got = gw.get("dash.test", "/traefik/api/version").await;
    assert_eq!(got.status, StatusCode::OK);
    assert!(got.text().contains("\"Version\""));
    assert_eq!(
        gw.get("dash.test", "/api/version").await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn metrics_count_exactly_the_requests_sent() {
    let (_b, gw, api) = start(&[
        "--metrics.prometheus.addRoutersLabels=true",
        "--metrics.prometheus.buckets=0.05,0.5",
    ])
    .await;
    for _ in 0..7 {
        assert_eq!(gw.get("app.test", "/").await.status, StatusCode::OK);
    }
    for _ in 0..3 {
        assert_eq!(gw.get("app.test", "/api/x").await.status, StatusCode::OK);
    }
    for _ in 0..2 {
        assert_eq!(
            gw.get("nowhere.test", "/").await.status,
            StatusCode::NOT_FOUND
        );
    }
    let (_, headers, text) = api.get("/metrics").await;
    assert!(
        headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain")
    );
    let line = |needle: &str| -> f64 {
        text.lines()
            .find(|l| l.starts_with(needle))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no `{needle}` in\n{text}"))
    };
    assert_eq!(
        line(
            r#"gangway_router_requests_total{code="200",method="GET",protocol="http",router="app@file",service="app@file"}"#
        ),
        7.0
    );
    assert_eq!(
        line(
            r#"gangway_router_requests_total{code="200",method="GET",protocol="http",router="api-path@file",service="app@file"}"#
        ),
        3.0
    );
    assert_eq!(
        line(
            r#"gangway_service_requests_total{code="200",method="GET",protocol="http",service="app@file"}"#
        ),
        10.0
    );
    // The entry point also saw the 404s (and the warm-up requests of the harness, none here).
    assert_eq!(
        line(
            r#"gangway_entrypoint_requests_total{code="404",method="GET",protocol="http",entrypoint="web"}"#
        ),
        2.0
    );
    assert_eq!(
        line(
            r#"gangway_entrypoint_requests_total{code="200",method="GET",protocol="http",entrypoint="web"}"#
        ),
        10.0
    );
    assert_eq!(
        line(
            r#"gangway_router_request_duration_seconds_bucket{code="200",method="GET",protocol="http",router="app@file",service="app@file",le="+Inf"}"#
        ),
        7.0
    );
    assert!(
        text.contains(r#"le="0.05""#)
            && text.contains(r#"le="0.5""#)
            && !text.contains(r#"le="1.2""#),
        "buckets follow the configuration"
    );
    assert!(line("gangway_config_reloads_total") >= 1.0);
    assert!(line("gangway_config_last_reload_success") > 1.7e9);
    assert!(line(r#"gangway_open_connections{entrypoint="web",protocol="TCP"}"#) >= 0.0);
}

#[tokio::test]
async fn metric_prefix_can_be_traefiks() {
    let (_b, gw, api) = start(&["--metrics.prometheus.prefix=traefik"]).await;
    gw.get("app.test", "/").await;
    let (_, _, text) = api.get("/metrics").await;
    assert!(text.contains(r#"traefik_service_requests_total{code="200",method="GET",protocol="http",service="app@file"} 1"#), "{text}");
    assert!(!text.contains("gangway_service_requests_total"));
}

#[tokio::test]
async fn an_api_error_is_json_with_a_message() {
    let (_b, _gw, api) = start(&[]).await;
    for (path, status, says) in [
        (
            "/api/http/routers?per_page=abc",
            StatusCode::BAD_REQUEST,
            "per_page",
        ),
        (
            "/api/http/services?page=-1",
            StatusCode::BAD_REQUEST,
            "page",
        ),
        (
            "/api/containers?routed=maybe",
            StatusCode::BAD_REQUEST,
            "routed",
        ),
        (
            "/api/http/routers?status=broken",
            StatusCode::BAD_REQUEST,
            "enabled, warning, disabled",
        ),
        (
            "/api/http/middlewares?status=broken",
            StatusCode::BAD_REQUEST,
            "broken",
        ),
        (
            "/api/http/routers/nope@file",
            StatusCode::NOT_FOUND,
            "router not found",
        ),
        (
            "/api/nothing-here",
            StatusCode::NOT_FOUND,
            "404 page not found",
        ),
    ] {
        let (got, headers, body) = api.get(path).await;
        assert_eq!(got, status, "{path}: {body}");
        assert_eq!(
            headers["content-type"], "application/json",
            "{path}: {body}"
        );
        let json: Value =
            serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"));
        let message = json["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{path}: {body}");
    }
    // The API is read-only: another method is refused, in JSON too.
    let req = http::Request::post(format!("http://127.0.0.1:{}/api/overview", api.port))
        .body(Default::default())
        .unwrap();
    let resp = api.client.request(req).await.expect("api request");
    assert_eq!(resp.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(resp.headers()["content-type"], "application/json");
    let body = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .expect("body")
        .to_bytes();
    let json: Value = serde_json::from_slice(&body).expect("a JSON error");
    assert!(
        json["message"]
            .as_str()
            .is_some_and(|m| m.contains("read-only")),
        "{json}"
    );

    // Still accepted: any case, and empty meaning "all", as the dashboard sends.
    let disabled = api.json("/api/http/routers?status=DISABLED").await;
    assert_eq!(disabled.as_array().map(Vec::len), Some(2), "{disabled}");
    let all = api.json("/api/http/routers?status=").await;
    assert!(all.as_array().is_some_and(|a| a.len() > 2), "{all}");
}

// === golden files ===

/// The fixed configuration the golden files describe. Servers are never
/// contacted (no health check, no request), so their URLs can be fixed.
fn golden_config(cert: &std::path::Path, key: &std::path::Path) -> String {
    format!(
        r#"
[http.routers.app]
rule = "Host(`app.test`) || Host(`www.app.test`)"
service = "app"
middlewares = ["strip", "login"]
[http.routers.api-path]
rule = "Host(`app.test`) && (PathPrefix(`/api`) || Path(`/health`)) && !PathPrefix(`/api/admin`)"
service = "app"
priority = 100
[http.routers.regexp]
rule = "HostRegexp(`^[a-z]+\\.regexp\\.test$`)"
service = "split"
entryPoints = ["web"]
[http.routers.secure]
rule = "Host(`secure.test`)"
service = "app"
[http.routers.secure.tls]
[http.routers.broken]
rule = "Host(`broken.test`) &&"
service = "app"
[http.routers.orphan]
rule = "Host(`orphan.test`)"
service = "missing"
[http.services.app.loadBalancer]
passHostHeader = false
[[http.services.app.loadBalancer.servers]]
url = "http://127.0.0.1:9"
[[http.services.app.loadBalancer.servers]]
url = "http://127.0.0.1:10"
[http.services.split.weighted]
[[http.services.split.weighted.services]]
name = "app"
weight = 3
[http.middlewares.strip.stripPrefix]
prefixes = ["/x"]
[http.middlewares.login.basicAuth]
users = ["ann:{hash}"]
[[tls.certificates]]
certFile = "{cert}"
keyFile = "{key}"
[tcp.routers.db]
entryPoints = ["web"]
rule = "HostSNI(`db.test`)"
service = "db"
[tcp.routers.db.tls]
passthrough = true
[tcp.routers.named]
entryPoints = ["web"]
rule = "HostSNI(`named.test`)"
service = "db"
middlewares = ["local"]
[tcp.middlewares.local.ipAllowList]
sourceRange = ["127.0.0.1/32"]
[[tcp.services.db.loadBalancer.servers]]
address = "127.0.0.1:11"
"#,
        hash = ANN_HASH,
        cert = cert.display(),
        key = key.display(),
    )
}

/// Each endpoint, by the golden file that holds its answer.
const GOLDEN: &[(&str, &str)] = &[
    ("overview", "/api/overview"),
    ("entrypoints", "/api/entrypoints"),
    ("entrypoint-web", "/api/entrypoints/web"),
    ("routers", "/api/http/routers"),
    ("router-api-path", "/api/http/routers/api-path@file"),
    ("routers-disabled", "/api/http/routers?status=disabled"),
    ("services", "/api/http/services"),
    ("service-app", "/api/http/services/app@file"),
    ("middlewares", "/api/http/middlewares"),
    ("middleware-strip", "/api/http/middlewares/strip@file"),
    ("rawdata", "/api/rawdata"),
    ("version", "/api/version"),
    ("providers", "/api/providers"),
    ("certificates", "/api/tls/certificates"),
    ("certificates-traefik", "/api/certificates"),
    ("certificateresolvers", "/api/certificateresolvers"),
    ("containers", "/api/containers"),
    ("explain", "/api/explain?host=app.test&path=/api/users"),
    ("tcp-routers", "/api/tcp/routers"),
    ("tcp-router-named", "/api/tcp/routers/named@file"),
    ("tcp-services", "/api/tcp/services"),
    ("tcp-service-db", "/api/tcp/services/db@file"),
    ("tcp-middlewares", "/api/tcp/middlewares"),
    ("tcp-middleware-local", "/api/tcp/middlewares/local@file"),
];

/// Errors, by golden file: the status and the answer.
const GOLDEN_ERRORS: &[(&str, &str, StatusCode)] = &[
    (
        "error-not-found",
        "/api/http/routers/nope@file",
        StatusCode::NOT_FOUND,
    ),
    (
        "error-per-page",
        "/api/http/routers?per_page=abc",
        StatusCode::BAD_REQUEST,
    ),
    (
        "error-status",
        "/api/http/routers?status=broken",
        StatusCode::BAD_REQUEST,
    ),
];

/// Keys whose values differ from run to run: times, the count of
/// configurations applied (file-watch events may add one), the version,
/// which changes with every release, and Docker's container ids.
const VARYING: &[&str] = &[
    "startDate",
    // The golden certificate's key and serial are made at each run.
    "serialNumber",
    "publicKeyFingerprint",
    "lastSync",
    "generation",
    "Version",
    // Docker's container ids.
    "id",
    "containerId",
];

/// Replaces what must vary between runs: the values of [`VARYING`] keys,
/// the ports of gangway and of the servers, and `texts` (such as the
/// certificate's directory or the suffix of the Docker containers' names).
fn normalize(value: &mut Value, ports: &[(u16, &str)], texts: &[(&str, &str)]) {
    let text = |s: &str| {
        let mut text = s.to_owned();
        for (varying, placeholder) in texts {
            text = text.replace(varying, placeholder);
        }
        for (port, name) in ports {
            text = text.replace(&format!("127.0.0.1:{port}"), &format!("127.0.0.1:<{name}>"));
        }
        text
    };
    match value {
        // Keys too: server URLs are the keys of `serverStatus`.
        Value::Object(map) => {
            *map = std::mem::take(map)
                .into_iter()
                .map(|(k, mut v)| {
                    if VARYING.contains(&k.as_str()) {
                        v = Value::String("<varies>".into());
                    } else {
                        normalize(&mut v, ports, texts);
                    }
                    (text(&k), v)
                })
                .collect();
        }
        Value::Array(items) => items.iter_mut().for_each(|v| normalize(v, ports, texts)),
        Value::String(s) => *s = text(s),
        _ => {}
    }
}

/// Every difference between the golden and the live answer, one line each,
/// by JSON pointer: a changed value, a field gone, a field new.
fn differences(at: &str, want: &Value, got: &Value, out: &mut Vec<String>) {
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            // JSON pointer escapes, since server URLs are keys.
            let key = |k: &str| k.replace('~', "~0").replace('/', "~1");
            for (k, wv) in w {
                match g.get(k) {
                    Some(gv) => differences(&format!("{at}/{}", key(k)), wv, gv, out),
                    None => out.push(format!("{at}/{}: gone (golden: {wv})", key(k))),
                }
            }
            for (k, gv) in g {
                if !w.contains_key(k) {
                    out.push(format!("{at}/{}: new field: {gv}", key(k)));
                }
            }
        }
        (Value::Array(w), Value::Array(g)) => {
            for i in 0..w.len().max(g.len()) {
                match (w.get(i), g.get(i)) {
                    (Some(wv), Some(gv)) => differences(&format!("{at}/{i}"), wv, gv, out),
                    (Some(wv), None) => out.push(format!("{at}/{i}: gone (golden: {wv})")),
                    (None, Some(gv)) => out.push(format!("{at}/{i}: new item: {gv}")),
                    (None, None) => {}
                }
            }
        }
        _ if want == got => {}
        _ => out.push(format!("{at}: golden {want}, now {got}")),
    }
}

#[tokio::test]
async fn every_endpoint_answers_as_its_golden_file() {
    let certs = tempfile::tempdir().expect("tempdir");
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let mut params = rcgen::CertificateParams::new(vec!["secure.test".to_owned()]).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "golden test");
    params.not_before = rcgen::date_time_ymd(2026, 1, 1);
    params.not_after = rcgen::date_time_ymd(2099, 1, 1);
    let cert = params.self_signed(&key).unwrap();
    let (cert_path, key_path) = (certs.path().join("cert.pem"), certs.path().join("key.pem"));
    std::fs::write(&cert_path, cert.pem()).unwrap();
    std::fs::write(&key_path, key.serialize_pem()).unwrap();

    let internal = free_port();
    let ep = format!("--entryPoints.gangway.address=127.0.0.1:{internal}");
    // Two resolvers no router uses: listed with their challenges, never
    // contacted.
    let le_storage = format!(
        "--certificatesResolvers.le.acme.storage={}",
        certs.path().join("acme-le").display()
    );
    let dns_storage = format!(
        "--certificatesResolvers.dns.acme.storage={}",
        certs.path().join("acme-dns").display()
    );
    let gw = Gangway::with_file_env(
        &golden_config(&cert_path, &key_path),
        &[
            "--api.insecure=true",
            "--ping",
            "--metrics.prometheus",
            &ep,
            &le_storage,
            "--certificatesResolvers.le.acme.caServer=staging",
            &dns_storage,
            "--certificatesResolvers.dns.acme.dnsChallenge.provider=exec",
            "--certificatesResolvers.dns.acme.dnsChallenge.resolvers=192.0.2.53:53",
            "--certificatesResolvers.dns.acme.dnsChallenge.propagation.delayBeforeChecks=5s",
        ],
        &[("EXEC_PATH", "/bin/true")],
    )
    .await;
    let api = Api::new(internal);
    eventually(
        Duration::from_secs(10),
        "the file's routers and certificate",
        || async {
            let (status, _, body) = api.get("/api/tls/certificates").await;
            status == StatusCode::OK && body.contains("secure.test")
        },
    )
    .await;

    let ports = [(gw.port, "web"), (internal, "gangway")];
    let dir = certs.path().display().to_string();
    let config_dir = gw.dir.path().display().to_string();
    let mut answers: Vec<(&str, &str, Value)> = Vec::new();
    for (file, path) in GOLDEN {
        answers.push((file, path, api.json(path).await));
    }
    // One certificate by the id the list gives it: the same object.
    let certificates = api.json("/api/tls/certificates").await;
    for listed in certificates.as_array().expect("a list") {
        let id = listed["id"].as_str().expect("every certificate has an id");
        assert_eq!(id.len(), 16, "{listed}");
        assert_eq!(
            &api.json(&format!("/api/tls/certificates/{id}")).await,
            listed
        );
    }
    let (status, _, body) = api.get("/api/tls/certificates/0000000000000000").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    // Traefik's view: one served certificate, found by its fingerprint,
    // searched and filtered as Traefik's lists are.
    let fingerprint: String = sha2::Sha256::digest(cert.der())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let traefik = api.json("/api/certificates").await;
    assert_eq!(
        traefik[0]["certFingerprint"],
        fingerprint.as_str(),
        "{traefik}"
    );
    assert_eq!(
        api.json(&format!("/api/certificates/{fingerprint}")).await,
        traefik[0]
    );
    for (query, found) in [
        ("search=secure", 1),
        ("search=elsewhere", 0),
        ("status=enabled", 1),
        ("status=disabled", 0),
        ("sortBy=validUntil&direction=desc", 1),
    ] {
        let list = api.json(&format!("/api/certificates?{query}")).await;
        assert_eq!(
            list.as_array().map(Vec::len),
            Some(found),
            "{query}: {list}"
        );
    }
    let (status, _, body) = api.get("/api/certificates/0000").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    for (file, path, status) in GOLDEN_ERRORS {
        let (got, _, body) = api.get(path).await;
        assert_eq!(got, *status, "{path}: {body}");
        let json = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"));
        answers.push((file, path, json));
    }
    for (_, _, got) in &mut answers {
        normalize(
            got,
            &ports,
            &[
                (dir.as_str(), "<dir>"),
                (config_dir.as_str(), "<config>"),
                (fingerprint.as_str(), "<fingerprint>"),
            ],
        );
    }
    compare_with_golden(answers);
}

/// Compares each answer with its golden file, field by field, and fails
/// listing every difference; with `GANGWAY_BLESS=1`, rewrites the files.
fn compare_with_golden(answers: Vec<(&str, &str, Value)>) {
    let bless = std::env::var_os("GANGWAY_BLESS").is_some_and(|v| v == "1");
    let golden_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/api");
    let mut failures = Vec::new();
    for (file, path, got) in answers {
        let golden = golden_dir.join(format!("{file}.json"));
        if bless {
            std::fs::create_dir_all(&golden_dir).unwrap();
            let text = serde_json::to_string_pretty(&got).unwrap() + "\n";
            std::fs::write(&golden, text).unwrap();
            continue;
        }
        let want: Value = match std::fs::read_to_string(&golden) {
            Ok(text) => {
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", golden.display()))
            }
            Err(e) => {
                failures.push(format!("{file}.json ({path}): {e}"));
                continue;
            }
        };
        let mut diffs = Vec::new();
        differences("", &want, &got, &mut diffs);
        if !diffs.is_empty() {
            failures.push(format!("{file}.json ({path}):\n  {}", diffs.join("\n  ")));
        }
    }
    assert!(
        failures.is_empty(),
        "answers differ from tests/golden/api (GANGWAY_BLESS=1 rewrites them; review the diff):\n{}",
        failures.join("\n")
    );
}

#[tokio::test]
async fn docker_objects_answer_as_their_golden_files() {
    let _serial = SERIAL.lock().await;
    if !ready("docker_objects_answer_as_their_golden_files").await {
        return;
    }
    let run = Run::new("apigolden");
    let internal = free_port();
    let ep = format!("--entryPoints.gangway.address=127.0.0.1:{internal}");
    let _gw = run.gangway(&["--api.insecure=true", &ep]).await;
    let api = Api::new(internal);
    let shop = Spec::new("shop")
        .routed("gangway", "shop", "shop.test", "shop")
        .label("gangway.http.routers.shop.middlewares", "strip")
        .label(
            "gangway.http.middlewares.strip.stripprefix.prefixes",
            "/shop",
        );
    let quiet = Spec::new("quiet");
    let shop_name = run.start(&shop).await;
    let quiet_name = run.start(&quiet).await;
    eventually(
        Duration::from_secs(10),
        "both containers running in the API",
        || async {
            let (_, _, body) = api.get("/api/containers").await;
            let list: Value = serde_json::from_str(&body).unwrap_or_default();
            let running = |name: &str| {
                list.as_array().is_some_and(|a| {
                    a.iter()
                        .any(|c| c["name"] == name && c["state"] == "running")
                })
            };
            running(&shop_name) && running(&quiet_name) && body.contains("shop@docker")
        },
    )
    .await;

    let mut answers = Vec::new();
    for (file, path) in [
        ("docker-containers", "/api/containers"),
        ("docker-routers", "/api/http/routers?provider=docker"),
        ("docker-services", "/api/http/services?provider=docker"),
        (
            "docker-middlewares",
            "/api/http/middlewares?provider=docker",
        ),
    ] {
        let mut got = api.json(path).await;
        // The daemon may run other containers (another test, a user's):
        // gangway lists them as not routed, and they are not this test's.
        if let Some(list) = got.as_array_mut().filter(|_| file == "docker-containers") {
            list.retain(|c| {
                c["name"]
                    .as_str()
                    .is_some_and(|n| n.ends_with(run.suffix()))
            });
        }
        normalize(&mut got, &[(shop.port, "shop")], &[(run.suffix(), "<run>")]);
        answers.push((file, path, got));
    }
    compare_with_golden(answers);
}

/// Two routers with one rule on `web`, a third with it on `websecure`, and
/// a host only `web` routes.
const SAME_RULE: &str = r#"
[http.routers.first]
rule = "Host(`same.test`)"
service = "app"
entryPoints = ["web"]
[http.routers.second]
rule = "Host(`same.test`)"
service = "app"
entryPoints = ["web"]
[http.routers.third]
rule = "Host(`same.test`)"
service = "app"
entryPoints = ["websecure"]
tls = {}
[http.routers.plain]
rule = "Host(`plain.test`)"
service = "app"
entryPoints = ["web"]
[http.services.app.loadBalancer]
[[http.services.app.loadBalancer.servers]]
url = "BACKEND"
"#;

async fn start_same_rule() -> (Backend, Gangway, Api) {
    let b = Backend::echo("b").await;
    let internal = free_port();
    let ep = format!("--entryPoints.gangway.address=127.0.0.1:{internal}");
    let secure = format!("--entryPoints.websecure.address=127.0.0.1:{}", free_port());
    let gw = Gangway::with_file(
        &SAME_RULE.replace("BACKEND", &b.url()),
        &["--api.insecure=true", "--ping", &ep, &secure],
    )
    .await;
    let api = Api::new(internal);
    eventually(
        Duration::from_secs(10),
        "API answers with the file's routers",
        || async { api.get("/api/http/routers/third@file").await.0 == StatusCode::OK },
    )
    .await;
    (b, gw, api)
}

#[tokio::test]
async fn a_router_that_never_gets_a_request_carries_a_warning_naming_the_winner() {
    let (_b, gw, api) = start_same_rule().await;
    let second = api.json("/api/http/routers/second@file").await;
    assert_eq!(second["status"], "warning", "{second}");
    let problem = &second["problems"][0];
    assert_eq!(problem["kind"], "shadowed", "{second}");
    assert_eq!(problem["winner"], "first@file");
    assert_eq!(problem["entryPoints"], serde_json::json!(["web"]));
    assert_eq!(problem["option"], "rule");
    assert_eq!(problem["origin"]["type"], "file");
    assert_eq!(problem["origin"]["line"], 7, "the line of `second`'s rule");
    assert!(
        second["error"][0]
            .as_str()
            .unwrap()
            .contains("as router `first@file` on entry point `web`"),
        "{second}"
    );
    for name in ["first@file", "third@file"] {
        let r = api.json(&format!("/api/http/routers/{name}")).await;
        assert_eq!(r["status"], "enabled", "{r}");
        assert!(r.get("problems").is_none(), "{r}");
    }
    // The list filter agrees, and requests go where the warning says.
    let warned = api.json("/api/http/routers?status=warning").await;
    let names: Vec<&str> = warned
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert_eq!(names, ["second@file"]);
    let e = api.json("/api/explain?host=same.test").await;
    let web = by_entry_point(&e, "web");
    assert_eq!(web["winner"]["router"], "first@file");
    assert_eq!(gw.get("same.test", "/").await.status, StatusCode::OK);
}

fn by_entry_point<'a>(explain: &'a Value, name: &str) -> &'a Value {
    explain["entryPoints"]
        .as_array()
        .and_then(|a| a.iter().find(|v| v["entryPoint"] == name))
        .unwrap_or_else(|| panic!("entry point {name} in {explain}"))
}

fn entry_point_names(explain: &Value) -> Vec<&str> {
    explain["entryPoints"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v["entryPoint"].as_str())
        .collect()
}

#[tokio::test]
async fn explain_answers_for_the_users_entry_points_and_says_what_a_request_needs() {
    let (_b, _gw, api) = start_same_rule().await;

    // A host no router knows: not routed anywhere. The internal entry
    // point's `Path(/)` (the dashboard) is no answer to a user's request.
    let e = api.json("/api/explain?host=nobody.test&path=/").await;
    assert_eq!(entry_point_names(&e), ["web", "websecure"], "{e}");
    for ep in e["entryPoints"].as_array().unwrap() {
        assert!(ep["winner"].is_null(), "{ep}");
        assert!(ep.get("hint").is_none(), "nothing would route it: {ep}");
    }

    // A routed request has one winner per entry point that takes it, and
    // no internal router among them.
    let e = api.json("/api/explain?host=same.test&path=/").await;
    let winners: Vec<&str> = e["entryPoints"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|ep| ep["winner"]["router"].as_str())
        .collect();
    assert_eq!(winners, ["first@file"], "{e}");
    // Over plain HTTP, `websecure` would take it over TLS.
    assert_eq!(
        by_entry_point(&e, "websecure")["hint"],
        serde_json::json!({ "kind": "needsTls", "router": "third@file" })
    );

    // Asking about the TLS entry point alone, without TLS: it needs TLS,
    // and says which router would take it.
    let e = api
        .json("/api/explain?host=same.test&path=/&entryPoint=websecure")
        .await;
    assert_eq!(entry_point_names(&e), ["websecure"]);
    let secure = by_entry_point(&e, "websecure");
    assert!(secure["winner"].is_null());
    assert_eq!(secure["hint"]["kind"], "needsTls", "{secure}");
    assert_eq!(secure["hint"]["router"], "third@file");
    assert_eq!(
        secure["candidates"][0]["reason"],
        "matches, but takes TLS connections only"
    );
    // Over TLS, it is routed there, and `web` points at nothing it would
    // take over TLS but names the entry point that does.
    let e = api
        .json("/api/explain?host=same.test&path=/&tls=true")
        .await;
    assert_eq!(
        by_entry_point(&e, "websecure")["winner"]["router"],
        "third@file"
    );
    assert_eq!(
        by_entry_point(&e, "web")["hint"],
        serde_json::json!({ "kind": "needsPlainHttp", "router": "first@file" })
    );

    // A host only `web` knows: `websecure` names the entry point that
    // takes it.
    let e = api.json("/api/explain?host=plain.test&path=/").await;
    assert_eq!(by_entry_point(&e, "web")["winner"]["router"], "plain@file");
    assert_eq!(
        by_entry_point(&e, "websecure")["hint"],
        serde_json::json!({ "kind": "otherEntryPoint", "entryPoint": "web", "router": "plain@file" })
    );

    // The internal entry point, asked about by name, answers for itself.
    let e = api
        .json("/api/explain?path=/api/version&entryPoint=gangway")
        .await;
    assert_eq!(entry_point_names(&e), ["gangway"]);
    assert_eq!(
        by_entry_point(&e, "gangway")["winner"]["router"],
        "api@internal"
    );
}

const CHAINS: &str = r#"
[http.routers.outer]
rule = "Host(`outer.test`)"
service = "app"
middlewares = ["outer"]
[http.routers.direct]
rule = "Host(`direct.test`)"
service = "app"
middlewares = ["strip"]
[http.middlewares.outer.chain]
middlewares = ["inner", "headers"]
[http.middlewares.inner.chain]
middlewares = ["strip"]
[http.middlewares.strip.stripPrefix]
prefixes = ["/x"]
[http.middlewares.headers.headers.customRequestHeaders]
X-Chained = "yes"
[http.middlewares.unused.stripPrefix]
prefixes = ["/y"]
[http.services.app.loadBalancer]
[[http.services.app.loadBalancer.servers]]
url = "BACKEND"
"#;

#[tokio::test]
async fn a_middleware_used_through_a_chain_names_its_routers_and_its_chains() {
    let b = Backend::echo("b").await;
    let internal = free_port();
    let ep = format!("--entryPoints.gangway.address=127.0.0.1:{internal}");
    let gw = Gangway::with_file(
        &CHAINS.replace("BACKEND", &b.url()),
        &["--api.insecure=true", &ep],
    )
    .await;
    let api = Api::new(internal);
    eventually(
        Duration::from_secs(10),
        "API answers with the file's middlewares",
        || async { api.get("/api/http/middlewares/unused@file").await.0 == StatusCode::OK },
    )
    .await;
    // The chain's members really run on `outer`'s requests.
    let seen = gw.get("outer.test", "/x/here").await;
    assert_eq!(seen.status, StatusCode::OK);
    let echoed: Value = serde_json::from_str(&seen.text()).expect("echo JSON");
    assert_eq!(echoed["headers"]["x-chained"], serde_json::json!(["yes"]));
    assert_eq!(echoed["uri"], "/here");

    let mw = |name: &'static str| {
        let api = &api;
        async move {
            api.json(&format!("/api/http/middlewares/{name}@file"))
                .await
        }
    };
    let strip = mw("strip").await;
    assert_eq!(
        strip["usedBy"],
        serde_json::json!(["direct@file", "outer@file"]),
        "{strip}"
    );
    assert_eq!(
        strip["inChains"],
        serde_json::json!(["inner@file"]),
        "{strip}"
    );
    let headers = mw("headers").await;
    assert_eq!(
        headers["usedBy"],
        serde_json::json!(["outer@file"]),
        "{headers}"
    );
    assert_eq!(
        headers["inChains"],
        serde_json::json!(["outer@file"]),
        "{headers}"
    );
    let inner = mw("inner").await;
    assert_eq!(
        inner["usedBy"],
        serde_json::json!(["outer@file"]),
        "{inner}"
    );
    assert_eq!(
        inner["inChains"],
        serde_json::json!(["outer@file"]),
        "{inner}"
    );
    let outer = mw("outer").await;
    assert_eq!(
        outer["usedBy"],
        serde_json::json!(["outer@file"]),
        "{outer}"
    );
    assert!(outer.get("inChains").is_none(), "{outer}");
    let unused = mw("unused").await;
    assert_eq!(unused["usedBy"], serde_json::json!([]), "{unused}");
    assert!(unused.get("inChains").is_none(), "{unused}");

    // The list agrees with the detail.
    let all = api.json("/api/http/middlewares").await;
    assert_eq!(by_name(&all, "strip@file")["usedBy"], strip["usedBy"]);
}

#[tokio::test]
async fn an_entry_point_called_traefik_is_the_internal_one_as_in_traefik() {
    let b = Backend::echo("b").await;
    let internal = free_port();
    // Lower case, as Traefik's compose files write it.
    let ep = format!("--entrypoints.traefik.address=127.0.0.1:{internal}");
    let gw = Gangway::with_file(
        &config(&b),
        &["--api.insecure", "--ping", "--metrics.prometheus", &ep],
    )
    .await;
    let api = Api::new(internal);
    eventually(Duration::from_secs(10), "the API answers", || async {
        api.get("/api/version").await.0 == StatusCode::OK
    })
    .await;
    assert_eq!(api.get("/ping").await.0, StatusCode::OK);
    let (status, _, metrics) = api.get("/metrics").await;
    assert_eq!(status, StatusCode::OK);
    assert!(metrics.contains("# TYPE"), "{metrics}");
    assert_eq!(api.get("/dashboard/").await.0, StatusCode::OK);
    // No second internal entry point beside it.
    let (_, _, eps) = api.get("/api/entrypoints").await;
    let names: Vec<String> = serde_json::from_str::<Vec<Value>>(&eps)
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(names, ["traefik", "web"], "{eps}");
    // The application's routes stay on `web`.
    assert_eq!(gw.get("app.test", "/").await.status, StatusCode::OK);
}
