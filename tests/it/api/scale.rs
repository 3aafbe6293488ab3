//! The API and dashboard at 10,000 routers (file provider, the file
//! written here): explain's answer stays small, the lists a dashboard polls
//! answer 304 when nothing they show changed (health checks running
//! meanwhile), answers come compressed when the client asks, and the
//! dashboard in Chromium (`tests/dashboard/scale.mjs`) counts every
//! problem, keeps explain short and an idle page quiet.

use crate::support;

use bytes::Bytes;
use http::{HeaderMap, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::{Client, connect::HttpConnector};
use serde_json::Value;
use std::fmt::Write as _;
use std::time::Duration;
use support::{Backend, Gangway, eventually, free_port};

const ROUTERS: usize = 10_000;
/// Every this many routers, one sends to a service that does not exist.
const BROKEN_EVERY: usize = 40;
/// Every this many services, one is health-checked (so check times move).
const CHECKED_EVERY: usize = 500;

/// `ROUTERS` routers, each on its own host, each with its own service.
fn config(server: &str) -> String {
    let mut s = String::with_capacity(ROUTERS * 160);
    for i in 0..ROUTERS {
        let service = if i % BROKEN_EVERY == 1 {
            format!("missing{i}")
        } else {
            format!("s{i}")
        };
        writeln!(
            s,
            "[http.routers.r{i}]\nrule = \"Host(`h{i}.test`) && PathPrefix(`/p{}`)\"\nservice = \"{service}\"",
            i % 7
        )
        .unwrap();
        writeln!(
            s,
            "[[http.services.s{i}.loadBalancer.servers]]\nurl = \"{server}\""
        )
        .unwrap();
        if i % CHECKED_EVERY == 3 {
            writeln!(
                s,
                "[http.services.s{i}.loadBalancer.healthCheck]\npath = \"/\"\ninterval = \"100ms\""
            )
            .unwrap();
        }
    }
    s
}

struct Api {
    port: u16,
    client: Client<HttpConnector, Full<Bytes>>,
}

impl Api {
    /// GET `path` with `headers`; the answer's status, headers and body as
    /// sent (not decoded).
    async fn get(&self, path: &str, headers: &[(&str, &str)]) -> (StatusCode, HeaderMap, Bytes) {
        let mut req = http::Request::get(format!("http://127.0.0.1:{}{path}", self.port));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let resp = self
            .client
            .request(req.body(Full::default()).unwrap())
            .await
            .expect("api request");
        let (parts, body) = resp.into_parts();
        let body = body.collect().await.expect("body").to_bytes();
        (parts.status, parts.headers, body)
    }

    async fn json(&self, path: &str) -> Value {
        let (_, _, body) = self.get(path, &[]).await;
        serde_json::from_slice(&body).unwrap_or_default()
    }
}

async fn start() -> (Backend, Gangway, Api) {
    let backend = Backend::echo("b").await;
    let internal = free_port();
    let ep = format!("--entryPoints.gangway.address=127.0.0.1:{internal}");
    let gw = Gangway::with_file(&config(&backend.url()), &["--api.insecure=true", &ep]).await;
    let api = Api {
        port: internal,
        client: Client::builder(hyper_util::rt::TokioExecutor::new()).build_http(),
    };
    eventually(
        Duration::from_secs(120),
        "the API counts the file's routers",
        || async {
            api.json("/api/overview").await["http"]["routers"]["total"]
                .as_u64()
                .is_some_and(|n| n >= ROUTERS as u64)
        },
    )
    .await;
    (backend, gw, api)
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> &'a str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

#[tokio::test]
async fn at_ten_thousand_routers_explain_is_bounded_lists_answer_304_and_the_dashboard_keeps_up() {
    let (_backend, _gw, api) = start().await;

    // Explain names the winner among the routers of its host and counts
    // the rest, in well under 200 KB.
    let (status, _, body) = api
        .get("/api/explain?host=h5000.test&path=/p2/x", &[])
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        body.len() < 200_000,
        "explain answered {} bytes",
        body.len()
    );
    let explained: Value = serde_json::from_slice(&body).expect("json");
    let web = explained["entryPoints"]
        .as_array()
        .and_then(|eps| eps.iter().find(|e| e["entryPoint"] == "web"))
        .expect("the web entry point");
    assert_eq!(web["winner"]["router"], "r5000@file", "{web}");
    // Every enabled router but the winner names another host.
    assert_eq!(
        web["otherHosts"],
        (ROUTERS - ROUTERS / BROKEN_EVERY - 1) as u64,
        "{web}"
    );
    assert_eq!(web["notListed"], 0, "{web}");
    let disabled = explained["disabledRouters"].as_array().expect("a list");
    let not_listed = explained["disabledNotListed"].as_u64().expect("a count");
    assert_eq!(
        disabled.len() as u64 + not_listed,
        (ROUTERS / BROKEN_EVERY) as u64,
        "every disabled router is listed or counted"
    );
    // A host one slip away: the router it was meant for is named.
    let (_, _, body) = api.get("/api/explain?host=h500O.test&path=/", &[]).await;
    assert!(
        body.len() < 200_000,
        "explain answered {} bytes",
        body.len()
    );
    let typo: Value = serde_json::from_slice(&body).expect("json");
    assert!(
        typo.to_string().contains("\"router\":\"r5000@file\""),
        "the nearest host's router is named"
    );

    // The lists the dashboard polls: compressed when asked, 304 when the
    // same again, with health checks running all the while.
    let polled = [
        "/api/overview",
        "/api/http/routers",
        "/api/http/services",
        "/api/http/routers?status=disabled&per_page=100",
        "/api/http/services?search=s3",
    ];
    let checked = "/api/http/services/s3@file";
    let last_check = || async {
        api.json(checked).await["serverHealth"]
            .as_object()
            .and_then(|m| m.values().next())
            .and_then(|s| s["lastCheck"].as_u64())
    };
    for path in polled {
        let (status, headers, plain) = api.get(path, &[]).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        assert_eq!(header(&headers, "vary"), "Accept-Encoding", "{path}");
        let (status, headers, packed) = api
            .get(path, &[("accept-encoding", "gzip, deflate, br, zstd")])
            .await;
        assert_eq!(status, StatusCode::OK, "{path}");
        if plain.len() >= 1024 {
            assert_eq!(header(&headers, "content-encoding"), "zstd", "{path}");
            let unpacked = zstd::bulk::decompress(&packed, plain.len()).expect("zstd");
            assert_eq!(unpacked, plain, "{path}: the same answer, compressed");
            assert!(
                packed.len() < plain.len() / 4,
                "{path}: {} bytes",
                packed.len()
            );
        }
        let (_, headers, _) = api.get(path, &[("accept-encoding", "gzip")]).await;
        let etag = header(&headers, "etag").to_owned();
        assert!(
            etag.ends_with("-gz\"") || plain.len() < 1024,
            "{path}: {etag}"
        );
        // A health check runs between the two polls: what the list shows
        // is the same, so it answers 304.
        let before = last_check().await;
        eventually(Duration::from_secs(10), "a health check ran", || async {
            last_check().await.is_some_and(|t| Some(t) != before)
        })
        .await;
        let (status, headers, body) = api
            .get(
                path,
                &[("accept-encoding", "gzip"), ("if-none-match", &etag)],
            )
            .await;
        assert_eq!(status, StatusCode::NOT_MODIFIED, "{path}: {headers:?}");
        assert!(body.is_empty(), "{path}");
    }

    support::browser::drive(
        "at_ten_thousand_routers",
        "scale.mjs",
        &format!("http://127.0.0.1:{}", api.port),
        &[("HOST", "h5000.test"), ("ITS_ROUTER", "r5000@file")],
    )
    .await;
}
