//! Passive health that routes, through the real binary: a server refusing
//! connections and one that never answers the connect are skipped once
//! their failures are known (with and without `passiveHealthCheck`), come
//! back after the window when they live again, 5xx answers count only with
//! `passiveHealthCheck`, and a pool whose every server is out still tries
//! one instead of answering 503.

use crate::support;

use std::time::Duration;
use support::counted::{Blackhole, Counted, refusing_port, take_port};
use support::{Gangway, eventually};

const WAIT: Duration = Duration::from_secs(15);

const API: &str = "[http.routers.api]\nrule = \"Host(`api.test`)\"\nservice = \"api@internal\"\n";

fn router(host: &str, service: &str) -> String {
    format!("[http.routers.{service}]\nrule = \"Host(`{host}`)\"\nservice = \"{service}\"\n")
}

fn lb(service: &str, urls: &[&str], extra: &str) -> String {
    let mut s = format!("[http.services.{service}.loadBalancer]\n{extra}\n");
    for url in urls {
        s.push_str(&format!(
            "[[http.services.{service}.loadBalancer.servers]]\nurl = \"{url}\"\n"
        ));
    }
    s
}

/// A servers transport that gives up a connection attempt after 300ms, so
/// that an unanswered connect costs little time in the test.
const QUICK_DIAL: &str =
    "[http.serversTransports.quick.forwardingTimeouts]\ndialTimeout = \"300ms\"\n";

/// A router to `/metrics` on the test's entry point.
const METRICS: &str = "[http.routers.metrics]\nrule = \"Host(`metrics.test`) && Path(`/metrics`)\"\nservice = \"prometheus@internal\"\n";

async fn service(gw: &Gangway, name: &str) -> serde_json::Value {
    let text = gw
        .get("api.test", &format!("/api/http/services/{name}"))
        .await
        .text();
    serde_json::from_str(&text).unwrap_or_default()
}

/// The connection attempts to `url` that failed in a row, as the API counts
/// them (0 when it shows none).
async fn failed_connections(gw: &Gangway, name: &str, url: &str) -> u64 {
    service(gw, name).await["serverHealth"][url]["failedConnections"]
        .as_u64()
        .unwrap_or(0)
}

async fn server_status(gw: &Gangway, name: &str, url: &str) -> String {
    service(gw, name).await["serverStatus"][url]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn without_passive_health_check_a_refusing_server_is_tried_once_then_skipped_until_it_lives()
{
    let live = Counted::start("live").await;
    let dead = refusing_port();
    let dead_url = format!("http://{dead}");
    let conf = format!(
        "{API}{}{}",
        router("app.test", "app"),
        lb("app", &[&dead_url, &live.url()], ""),
    );
    let gw = Gangway::with_file(&conf, &["--api=true"]).await;
    eventually(WAIT, "routed", || async {
        gw.get("app.test", "/").await.status == 200
    })
    .await;

    // POSTs are never replayed: before, every other one went to the dead
    // server first and got 502. Now the first refusal takes it out of the
    // rotation, and every request goes to the live one.
    let mut statuses = Vec::new();
    for _ in 0..20 {
        let got = gw
            .send(
                http::Request::post(gw.url("/"))
                    .header("host", "app.test")
                    .body(http_body_util::Full::new(bytes::Bytes::from_static(b"x")))
                    .unwrap(),
            )
            .await;
        statuses.push(got.status.as_u16());
    }
    let failed = failed_connections(&gw, "app@file", &dead_url).await;
    println!("20 POSTs: {statuses:?}; connection attempts to the dead server: {failed}");
    assert!(failed <= 1, "{failed} attempts: {statuses:?}");
    assert!(
        statuses.iter().filter(|&&s| s == 502).count() <= 1,
        "{statuses:?}"
    );
    assert!(
        statuses.iter().filter(|&&s| s == 200).count() >= 19,
        "{statuses:?}"
    );
    if failed == 1 {
        assert_eq!(server_status(&gw, "app@file", &dead_url).await, "DOWN");
    }

    // It comes to life: after the quarantine it is tried again and serves.
    let revived = take_port(dead, "revived").await;
    eventually(WAIT, "the revived server gets traffic", || async {
        gw.get("app.test", "/").await;
        revived.hits() > 0
    })
    .await;
    assert_eq!(server_status(&gw, "app@file", &dead_url).await, "UP");
}

#[tokio::test]
async fn passive_health_check_takes_refusing_and_unreachable_servers_out_for_the_window() {
    let live = Counted::start("live").await;
    let refused = refusing_port();
    let refused_url = format!("http://{refused}");
    let mut hole = Blackhole::start().await;
    let hole_url = hole.url();
    let conf = format!(
        "{API}{QUICK_DIAL}{METRICS}{}{}[http.services.app.loadBalancer.passiveHealthCheck]\nfailureWindow = \"4s\"\nmaxFailedAttempts = 2\n",
        router("app.test", "app"),
        lb(
            "app",
            &[&refused_url, &hole_url, &live.url()],
            "serversTransport = \"quick\"",
        ),
    );
    let gw = Gangway::with_file(
        &conf,
        &[
            "--api=true",
            "--metrics.prometheus=true",
            "--metrics.prometheus.manualRouting=true",
        ],
    )
    .await;
    eventually(WAIT, "routed", || async {
        gw.get("app.test", "/").await.status == 200
    })
    .await;

    // GETs are replayed to the next server after a failed connection: each
    // request is answered by the live server while the window fills.
    eventually(WAIT, "both dead servers are out", || async {
        assert_eq!(gw.get("app.test", "/").await.text(), "live");
        server_status(&gw, "app@file", &refused_url).await == "DOWN"
            && server_status(&gw, "app@file", &hole_url).await == "DOWN"
    })
    .await;
    // Prometheus says the same as the API: Traefik's alert on
    // `service_server_up == 0` fires for a passive-health service too.
    let scraped = gw.get("metrics.test", "/metrics").await.text();
    for (url, up) in [(&refused_url, 0), (&hole_url, 0), (&live.url(), 1)] {
        let series =
            format!("gangway_service_server_up{{service=\"app@file\",url=\"{url}\"}} {up}");
        assert!(scraped.contains(&series), "{series} in:\n{scraped}");
    }
    let refused_before = failed_connections(&gw, "app@file", &refused_url).await;
    let hole_before = failed_connections(&gw, "app@file", &hole_url).await;
    assert!(
        refused_before >= 2 && hole_before >= 2,
        "{refused_before} {hole_before}"
    );
    for _ in 0..20 {
        assert_eq!(gw.get("app.test", "/").await.text(), "live");
    }
    // No connection attempt went to either while they were out.
    let refused_after = failed_connections(&gw, "app@file", &refused_url).await;
    let hole_after = failed_connections(&gw, "app@file", &hole_url).await;
    println!(
        "failed attempts before/after 20 requests: refused {refused_before}/{refused_after}, unanswered {hole_before}/{hole_after}"
    );
    assert_eq!(
        (refused_after, hole_after),
        (refused_before, hole_before),
        "a server out of the rotation was tried"
    );

    // Both come to life; after the window each gets traffic again.
    let revived = take_port(refused, "revived").await;
    let woken = hole.come_alive("woken");
    eventually(WAIT, "both servers are back in the rotation", || async {
        assert_eq!(gw.get("app.test", "/").await.status, 200);
        revived.hits() > 0 && woken.hits() > 0
    })
    .await;
    assert_eq!(server_status(&gw, "app@file", &refused_url).await, "UP");
    assert_eq!(server_status(&gw, "app@file", &hole_url).await, "UP");
}

#[tokio::test]
async fn server_errors_count_only_with_passive_health_check() {
    let bad = Counted::start("bad").await;
    bad.set_status(500);
    let good = Counted::start("good").await;
    let conf = format!(
        "{}{}{}{}[http.services.checked.loadBalancer.passiveHealthCheck]\nfailureWindow = \"1m\"\n",
        router("plain.test", "plain"),
        lb("plain", &[&bad.url(), &good.url()], ""),
        router("checked.test", "checked"),
        lb("checked", &[&bad.url(), &good.url()], ""),
    );
    let gw = Gangway::with_file(&conf, &[]).await;
    eventually(WAIT, "routed", || async {
        gw.get("checked.test", "/").await.status != 404
    })
    .await;
    let before = bad.hits();
    for _ in 0..20 {
        gw.get("checked.test", "/").await;
    }
    // One 500 (maxFailedAttempts defaults to 1) takes it out for the window.
    assert!(bad.hits() - before <= 1, "{}", bad.hits() - before);

    // Without passiveHealthCheck a 500 is an answer like any other.
    let before = bad.hits();
    let mut errors = 0;
    for _ in 0..20 {
        if gw.get("plain.test", "/").await.status == 500 {
            errors += 1;
        }
    }
    assert_eq!((bad.hits() - before, errors), (10, 10));
}

#[tokio::test]
async fn when_every_server_is_out_one_is_still_tried() {
    let dead = refusing_port();
    let dead_url = format!("http://{dead}");
    let conf = format!(
        "{}{}[http.services.app.loadBalancer.passiveHealthCheck]\nfailureWindow = \"10m\"\n",
        router("app.test", "app"),
        lb("app", &[&dead_url], ""),
    );
    let gw = Gangway::with_file(&conf, &[]).await;
    eventually(WAIT, "routed", || async {
        gw.get("app.test", "/").await.status != 404
    })
    .await;
    // Out for ten minutes, yet each request tries it (502, not 503)...
    for _ in 0..3 {
        assert_eq!(gw.get("app.test", "/").await.status, 502);
    }
    // ...so that it serves as soon as it lives, well within the window.
    let revived = take_port(dead, "revived").await;
    let got = gw.get("app.test", "/").await;
    assert_eq!(
        (got.status.as_u16(), got.text()),
        (200, "revived".to_owned())
    );
    assert_eq!(revived.hits(), 1);
}
