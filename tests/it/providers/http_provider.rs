//! The HTTP provider against a real HTTP server the test runs, serving a
//! configuration it changes: a route appears, follows the changes, and
//! survives answers that are not a configuration (broken JSON, a 500, a
//! server gone) with the error shown by the API until a good answer
//! comes back.

use crate::support;

use bytes::Bytes;
use http::StatusCode;
use http_body_util::Full;
use hyper::body::Incoming;
use std::sync::{Arc, Mutex};
use support::kv::{API, WITHIN, answer, provider_state};
use support::{Backend, Gangway, eventually};

/// What the configuration server answers, and the headers it was last
/// asked with.
#[derive(Default)]
struct Served {
    status: u16,
    body: String,
    authorization: Option<String>,
    asked: usize,
}

/// A configuration server on a loopback port: it answers every request
/// with what `served` holds at that moment.
async fn config_server(served: &Arc<Mutex<Served>>) -> Backend {
    let served = served.clone();
    Backend::serve(move |req: http::Request<Incoming>| {
        let served = served.clone();
        async move {
            let mut s = served.lock().unwrap();
            s.asked += 1;
            s.authorization = req
                .headers()
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let mut resp = http::Response::new(Full::new(Bytes::from(s.body.clone())));
            *resp.status_mut() = StatusCode::from_u16(s.status).unwrap();
            resp
        }
    })
    .await
}

/// The configuration as JSON: a router per (name, host) to a service with
/// one server.
fn config(routes: &[(&str, &str, &str)]) -> String {
    let mut routers = serde_json::Map::new();
    let mut services = serde_json::Map::new();
    for (name, host, url) in routes {
        routers.insert(
            (*name).to_owned(),
            serde_json::json!({"rule": format!("Host(`{host}`)"), "service": name}),
        );
        services.insert(
            (*name).to_owned(),
            serde_json::json!({"loadBalancer": {"servers": [{"url": url}]}}),
        );
    }
    serde_json::json!({"http": {"routers": routers, "services": services}}).to_string()
}

fn serve(served: &Arc<Mutex<Served>>, status: u16, body: &str) {
    let mut s = served.lock().unwrap();
    s.status = status;
    s.body = body.to_owned();
}

async fn who_answers(gw: &Gangway, host: &str) -> Option<String> {
    answer(gw, host).await.map(|(who, _)| who)
}

/// Waits until the API shows an error on the HTTP provider containing
/// `needle`, and checks that `host` is still answered by `backend`.
async fn error_shown_and_route_kept(gw: &Gangway, needle: &str, host: &str, backend: &str) {
    eventually(WITHIN, &format!("the API shows `{needle}`"), || async {
        provider_state(gw, "http").await["lastError"]
            .as_str()
            .is_some_and(|e| e.contains(needle))
    })
    .await;
    assert_eq!(
        who_answers(gw, host).await.as_deref(),
        Some(backend),
        "the last good configuration stays in use ({needle})"
    );
}

#[tokio::test]
async fn a_route_from_the_endpoint_appears_follows_changes_and_survives_bad_answers() {
    let a = Backend::echo("a").await;
    let b = Backend::echo("b").await;
    let served = Arc::new(Mutex::new(Served::default()));
    serve(&served, 200, &config(&[("app", "app.test", &a.url())]));
    let server = config_server(&served).await;
    let endpoint = format!("--providers.http.endpoint={}/dynamic", server.url());
    let gw = Gangway::with_file(
        API,
        &[
            &endpoint,
            "--providers.http.pollInterval=100ms",
            "--providers.http.headers.Authorization=Bearer s3cret",
            "--providers.http.maxResponseBodySize=4096",
            "--api=true",
        ],
    )
    .await;

    eventually(WITHIN, "the route from the endpoint answers", || async {
        who_answers(&gw, "app.test").await.as_deref() == Some("a")
    })
    .await;
    assert_eq!(
        served.lock().unwrap().authorization.as_deref(),
        Some("Bearer s3cret"),
        "the configured header is sent"
    );
    let state = provider_state(&gw, "http").await;
    assert!(state["lastError"].is_null(), "{state}");
    assert_eq!(state["routers"], 1, "{state}");

    // The server changes and a second router appears.
    serve(
        &served,
        200,
        &config(&[("app", "app.test", &b.url()), ("two", "two.test", &a.url())]),
    );
    eventually(WITHIN, "the changed server gets the traffic", || async {
        who_answers(&gw, "app.test").await.as_deref() == Some("b")
            && who_answers(&gw, "two.test").await.as_deref() == Some("a")
    })
    .await;

    // Answers that are not a configuration keep the last good one.
    serve(&served, 200, "{\"http\": {\"routers\": [");
    error_shown_and_route_kept(&gw, "/dynamic", "app.test", "b").await;
    serve(&served, 500, "oops");
    error_shown_and_route_kept(&gw, "answered 500", "app.test", "b").await;
    serve(&served, 200, "");
    error_shown_and_route_kept(&gw, "the answer is empty", "app.test", "b").await;
    let padded = format!(
        "{}{}",
        config(&[("app", "app.test", &a.url())]),
        " ".repeat(4096)
    );
    serve(&served, 200, &padded);
    error_shown_and_route_kept(&gw, "larger than 4096 bytes", "app.test", "b").await;
    assert!(
        gw.log()
            .contains("the last good configuration stays in use")
            || gw.log().contains("the last good one stays in use"),
        "{}",
        gw.log()
    );

    // A good answer again: the error clears and the change applies.
    serve(&served, 200, &config(&[("app", "app.test", &a.url())]));
    eventually(
        WITHIN,
        "the good answer applies and clears the error",
        || async {
            who_answers(&gw, "app.test").await.as_deref() == Some("a")
                && who_answers(&gw, "two.test").await.is_none()
                && provider_state(&gw, "http").await["lastError"].is_null()
        },
    )
    .await;

    // The server gone: the routes stay, the API says so.
    drop(server);
    error_shown_and_route_kept(&gw, "cannot ask the endpoint", "app.test", "a").await;
    assert_eq!(provider_state(&gw, "http").await["connected"], false);
}

#[tokio::test]
async fn a_mistake_in_one_object_leaves_out_that_object_only() {
    let a = Backend::echo("a").await;
    let served = Arc::new(Mutex::new(Served::default()));
    // YAML, as Traefik also reads the answer.
    let body = format!(
        "http:\n  routers:\n    good:\n      rule: Host(`good.test`)\n      service: app\n    bad:\n      rule: Host(`bad.test`)\n      servce: app\n  services:\n    app:\n      loadBalancer:\n        servers:\n          - url: {}\n",
        a.url()
    );
    serve(&served, 200, &body);
    let server = config_server(&served).await;
    let endpoint = format!("--providers.http.endpoint={}/", server.url());
    let gw = Gangway::with_file(
        API,
        &[
            &endpoint,
            "--providers.http.pollInterval=100ms",
            "--api=true",
        ],
    )
    .await;
    eventually(WITHIN, "the good router answers", || async {
        who_answers(&gw, "good.test").await.as_deref() == Some("a")
    })
    .await;
    assert_eq!(who_answers(&gw, "bad.test").await, None);
    let router = support::kv::api_json(&gw, "/api/http/routers/bad@http").await;
    assert_eq!(router["status"], "disabled", "{router}");
    let error = router["error"][0].as_str().unwrap_or_default();
    assert!(error.contains("servce"), "{router}");
    // An identical answer is read once: polling goes on, nothing changes.
    let asked = served.lock().unwrap().asked;
    eventually(WITHIN, "the endpoint is asked again", || async {
        served.lock().unwrap().asked > asked + 2
    })
    .await;
    assert!(
        provider_state(&gw, "http").await["lastError"].is_null(),
        "an object's mistake is not the provider's error"
    );
}

#[test]
fn an_endpoint_that_cannot_work_stops_the_start() {
    let out = std::process::Command::new(support::binary())
        .args([
            "--entryPoints.web.address=127.0.0.1:0",
            "--providers.http.endpoint=ftp://127.0.0.1/config",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("providers.http.endpoint `ftp://127.0.0.1/config`"),
        "{text}"
    );
}
