//! Load-balancing strategies through the real binary, each measured for
//! what it is for: `p2c` and `leasttime` send less traffic to a slow
//! server, `hrw` and the `highestRandomWeight` service keep a client IP on
//! one member across a configuration change that adds a member, and a
//! strategy gangway does not know disables only its service.

use crate::support;

use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::{Client, connect::HttpConnector};
use hyper_util::rt::TokioExecutor;
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;
use support::counted::Counted;
use support::{Gangway, eventually};
use tokio::task::JoinSet;

const WAIT: Duration = Duration::from_secs(15);

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

/// `n` requests to `host` from `workers` concurrent clients; answers by
/// backend name.
async fn spread(gw: &Gangway, host: &str, n: usize, workers: usize) -> BTreeMap<String, usize> {
    let mut set = JoinSet::new();
    for w in 0..workers {
        let url = gw.url("/");
        let host = host.to_owned();
        let share = n / workers + usize::from(w < n % workers);
        set.spawn(async move {
            let c: Client<HttpConnector, Full<Bytes>> =
                Client::builder(TokioExecutor::new()).build_http();
            let mut counts: BTreeMap<String, usize> = BTreeMap::new();
            for _ in 0..share {
                let req = Request::get(&url)
                    .header("host", &host)
                    .body(Full::default())
                    .unwrap();
                let resp = c.request(req).await.expect("request");
                assert_eq!(resp.status(), 200);
                let body = resp.into_body().collect().await.expect("body").to_bytes();
                *counts
                    .entry(String::from_utf8_lossy(&body).into_owned())
                    .or_default() += 1;
            }
            counts
        });
    }
    let mut total = BTreeMap::new();
    while let Some(r) = set.join_next().await {
        for (k, v) in r.expect("worker") {
            *total.entry(k).or_default() += v;
        }
    }
    total
}

async fn routed(gw: &Gangway, host: &str) {
    eventually(WAIT, &format!("{host} is routed"), || async {
        gw.get(host, "/").await.status == 200
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p2c_and_leasttime_send_less_to_a_slow_server() {
    let slow = Counted::slow("slow", Duration::from_millis(150)).await;
    let fast = Counted::start("fast").await;
    let conf = format!(
        "{}{}{}{}{}{}",
        router("p2c.test", "p2c"),
        lb("p2c", &[&slow.url(), &fast.url()], "strategy = \"p2c\""),
        router("leasttime.test", "leasttime"),
        lb(
            "leasttime",
            &[&slow.url(), &fast.url()],
            "strategy = \"leasttime\""
        ),
        router("wrr.test", "wrr"),
        lb("wrr", &[&slow.url(), &fast.url()], "strategy = \"wrr\""),
    );
    let gw = Gangway::with_file(&conf, &[]).await;
    for host in ["p2c.test", "leasttime.test", "wrr.test"] {
        routed(&gw, host).await;
    }

    // The same servers under wrr: an even split, whatever their speed.
    let wrr = spread(&gw, "wrr.test", 40, 4).await;
    println!("wrr, 40 requests from 4 clients: {wrr:?}");
    assert_eq!((wrr["slow"], wrr["fast"]), (20, 20));

    // p2c: a slow server holds its requests longer, so it is the busier of
    // the two more often and loses the draw.
    let p2c = spread(&gw, "p2c.test", 200, 8).await;
    println!("p2c, 200 requests from 8 clients: {p2c:?}");
    let (s, f) = (
        p2c.get("slow").copied().unwrap_or(0),
        p2c.get("fast").copied().unwrap_or(0),
    );
    assert!(s * 4 < f, "slow {s}, fast {f}");

    // leasttime: once both are measured, the slow one's time to first
    // byte keeps it behind, even with one request at a time.
    let lt = spread(&gw, "leasttime.test", 60, 1).await;
    println!("leasttime, 60 requests one at a time: {lt:?}");
    let (s, f) = (
        lt.get("slow").copied().unwrap_or(0),
        lt.get("fast").copied().unwrap_or(0),
    );
    assert!(s * 10 < f, "slow {s}, fast {f}");
}

/// The backend that answers `host` for a client connecting from `ip`.
async fn answer_from(gw: &Gangway, ip: IpAddr, host: &str) -> String {
    let mut connector = HttpConnector::new();
    connector.set_local_address(Some(ip));
    let c: Client<HttpConnector, Full<Bytes>> =
        Client::builder(TokioExecutor::new()).build(connector);
    let req = Request::get(gw.url("/"))
        .header("host", host)
        .body(Full::default())
        .unwrap();
    let resp = c.request(req).await.expect("request");
    let body = resp.into_body().collect().await.expect("body").to_bytes();
    String::from_utf8_lossy(&body).into_owned()
}

/// Loopback client addresses 127.0.0.2 and up: each is one client IP.
fn clients(n: u8) -> Vec<IpAddr> {
    (2..2 + n)
        .map(|i| IpAddr::V4(Ipv4Addr::new(127, 0, 0, i)))
        .collect()
}

/// Each client's backend, asked `times` times; panics if a client moves.
async fn placement(gw: &Gangway, host: &str, ips: &[IpAddr], times: usize) -> Vec<String> {
    let mut out = Vec::new();
    for &ip in ips {
        let first = answer_from(gw, ip, host).await;
        for _ in 1..times {
            assert_eq!(answer_from(gw, ip, host).await, first, "{ip} moved");
        }
        out.push(first);
    }
    out
}

#[tokio::test]
async fn hrw_keeps_each_client_on_one_server_across_a_swap_that_adds_one() {
    let a = Counted::start("a").await;
    let b = Counted::start("b").await;
    let c = Counted::start("c").await;
    let d = Counted::start("d").await;
    let three = format!(
        "{}{}",
        router("app.test", "app"),
        lb("app", &[&a.url(), &b.url(), &c.url()], "strategy = \"hrw\""),
    );
    let gw = Gangway::with_file(&three, &[]).await;
    routed(&gw, "app.test").await;
    let ips = clients(40);
    let before = placement(&gw, "app.test", &ips, 3).await;
    let mut used: Vec<&String> = before.iter().collect();
    used.sort();
    used.dedup();
    assert_eq!(used.len(), 3, "40 clients over 3 servers: {before:?}");

    // A fourth server joins (and a marker router shows the swap is live).
    let four = format!(
        "{}{}{}",
        router("app.test", "app"),
        lb(
            "app",
            &[&a.url(), &b.url(), &c.url(), &d.url()],
            "strategy = \"hrw\""
        ),
        "[http.routers.marker]\nrule = \"Host(`marker.test`)\"\nservice = \"app\"\n",
    );
    gw.rewrite(&four);
    routed(&gw, "marker.test").await;
    let after = placement(&gw, "app.test", &ips, 3).await;
    let moved: Vec<(&String, &String)> =
        before.iter().zip(&after).filter(|(b, a)| b != a).collect();
    println!(
        "hrw: {} of {} clients moved after a fourth server joined",
        moved.len(),
        ips.len()
    );
    // A client moves only to the new server, and most stay where they were.
    assert!(moved.iter().all(|(_, to)| to.as_str() == "d"), "{moved:?}");
    assert!(!moved.is_empty() && moved.len() < 20, "{moved:?}");
}

#[tokio::test]
async fn highest_random_weight_service_keeps_each_client_on_one_service() {
    let a = Counted::start("a").await;
    let b = Counted::start("b").await;
    let conf = format!(
        "{}[[http.services.app.highestRandomWeight.services]]\nname = \"one\"\nweight = 1\n[[http.services.app.highestRandomWeight.services]]\nname = \"two\"\nweight = 1\n{}{}",
        router("app.test", "app"),
        lb("one", &[&a.url()], ""),
        lb("two", &[&b.url()], ""),
    );
    let gw = Gangway::with_file(&conf, &[]).await;
    routed(&gw, "app.test").await;
    let ips = clients(20);
    let placed = placement(&gw, "app.test", &ips, 3).await;
    let to_a = placed.iter().filter(|p| p.as_str() == "a").count();
    println!("highestRandomWeight: {to_a} of 20 clients on the first service");
    assert!(to_a > 0 && to_a < 20, "{placed:?}");
}

#[tokio::test]
async fn an_unknown_strategy_disables_only_its_service() {
    let a = Counted::start("a").await;
    let conf = format!(
        "{}{}{}{}[http.routers.api]\nrule = \"Host(`api.test`)\"\nservice = \"api@internal\"\n",
        router("bad.test", "bad"),
        lb("bad", &[&a.url()], "strategy = \"fastest\""),
        router("good.test", "good"),
        lb("good", &[&a.url()], "strategy = \"WRR\""),
    );
    let gw = Gangway::with_file(&conf, &["--api=true"]).await;
    routed(&gw, "good.test").await;
    assert_eq!(gw.get("bad.test", "/").await.status, 404);
    let svc: serde_json::Value = serde_json::from_str(
        &gw.get("api.test", "/api/http/services/bad@file")
            .await
            .text(),
    )
    .unwrap_or_default();
    assert_eq!(svc["status"], "disabled", "{svc}");
    assert!(
        svc["error"].to_string().contains("`fastest`"),
        "the error names the value: {svc}"
    );
}

/// A YAML file as Traefik's documentation writes it (`passiveHealthcheck`,
/// `strategy`, `highestRandomWeight`, `weighted.healthCheck: {}`): every
/// service is enabled, the API shows the options back, and a weighted
/// service whose only member's server is out reports itself down to the
/// failover above it, which then answers from its fallback.
#[tokio::test]
async fn a_yaml_file_in_traefiks_spelling_balances_and_propagates_health() {
    let fast = Counted::start("fast").await;
    let spare = Counted::start("spare").await;
    let dead = support::counted::refusing_port();
    let yaml = format!(
        r#"http:
  routers:
    api:
      rule: Host(`api.test`)
      service: api@internal
    app:
      rule: Host(`app.test`)
      service: app
    guarded:
      rule: Host(`guarded.test`)
      service: guarded
  services:
    app:
      loadBalancer:
        strategy: leasttime
        passiveHealthcheck:
          failureWindow: 30s
          maxFailedAttempts: 2
        servers:
          - url: {fast}
    guarded:
      failover:
        healthCheck: {{}}
        service: pool
        fallback: spare
    pool:
      weighted:
        healthCheck: {{}}
        services:
          - name: dying
            weight: 1
    dying:
      loadBalancer:
        passiveHealthcheck:
          failureWindow: 10m
        servers:
          - url: http://{dead}
    spare:
      highestRandomWeight:
        services:
          - name: spareLb
            weight: 1
    spareLb:
      loadBalancer:
        servers:
          - url: {spare}
"#,
        fast = fast.url(),
        spare = spare.url(),
    );
    let gw = Gangway::with_yaml(&yaml, &["--api=true"]).await;
    routed(&gw, "app.test").await;
    let api = |path: String| {
        let gw = &gw;
        async move {
            serde_json::from_str::<serde_json::Value>(&gw.get("api.test", &path).await.text())
                .unwrap_or_default()
        }
    };
    for name in ["app", "guarded", "pool", "dying", "spare", "spareLb"] {
        let svc = api(format!("/api/http/services/{name}@file")).await;
        assert_eq!(svc["status"], "enabled", "{svc}");
    }
    let app = api("/api/http/services/app@file".to_owned()).await;
    assert_eq!(app["loadBalancer"]["strategy"], "leasttime", "{app}");
    assert_eq!(
        app["loadBalancer"]["passiveHealthCheck"]["maxFailedAttempts"], 2,
        "{app}"
    );
    assert_eq!(
        api("/api/http/services/spare@file".to_owned()).await["type"],
        "highestrandomweight"
    );

    // The first request finds the dead server refusing and goes on to the
    // fallback; from then on the server is out, the weighted service has no
    // member up, and the failover answers from its fallback.
    for _ in 0..6 {
        let got = gw.get("guarded.test", "/").await;
        assert_eq!((got.status.as_u16(), got.text()), (200, "spare".to_owned()));
    }
}

/// Traefik 3.7's service-level `middlewares` run after the router's where
/// a router names the service, and in front of it wherever another service
/// (here a `weighted` one) chooses it; a member without middlewares of its
/// own gets none.
#[tokio::test]
async fn service_middlewares_run_where_the_service_is_chosen_at_any_depth() {
    let echo = support::Backend::echo("echo").await;
    let bare = support::Backend::echo("bare").await;
    let conf = format!(
        r#"[http.routers.api]
rule = "Host(`api.test`)"
service = "api@internal"
[http.routers.app]
rule = "Host(`app.test`)"
service = "app"
middlewares = ["fromRouter"]
[http.routers.nested]
rule = "Host(`nested.test`)"
service = "split"
middlewares = ["fromRouter"]
[http.middlewares.fromRouter.addPrefix]
prefix = "/router"
[http.middlewares.fromService.addPrefix]
prefix = "/service"
[http.services.app]
middlewares = ["fromService"]
[http.services.app.loadBalancer]
[[http.services.app.loadBalancer.servers]]
url = "{url}"
[[http.services.split.weighted.services]]
name = "app"
[[http.services.split.weighted.services]]
name = "plain"
{plain}"#,
        url = echo.url(),
        plain = lb("plain", &[&bare.url()], ""),
    );
    let gw = Gangway::with_file(&conf, &["--api=true"]).await;
    routed(&gw, "app.test").await;
    // The router's prefix is added first, the service's last (outermost).
    assert_eq!(
        gw.get("app.test", "/x").await.seen().uri,
        "/service/router/x"
    );
    routed(&gw, "nested.test").await;
    let mut seen = BTreeMap::new();
    for _ in 0..4 {
        let s = gw.get("nested.test", "/x").await.seen();
        seen.insert(s.backend, s.uri);
    }
    assert_eq!(
        seen,
        BTreeMap::from([
            ("bare".to_owned(), "/router/x".to_owned()),
            ("echo".to_owned(), "/service/router/x".to_owned()),
        ])
    );
    assert_enabled(&gw, "services", &["split@file", "app@file"]).await;
    assert_enabled(&gw, "routers", &["nested@file"]).await;
}

/// Each of `names` (`name@provider`) of `kind` (`routers`, `services`)
/// is enabled in the API, with no error.
async fn assert_enabled(gw: &Gangway, kind: &str, names: &[&str]) {
    for name in names {
        let got = gw.api_json(&format!("/api/http/{kind}/{name}")).await;
        assert_eq!(got["status"], "enabled", "{got}");
        assert!(got.get("error").is_none(), "{got}");
    }
}

/// A main service answering 503 and a fallback that answers with the
/// body it received.
async fn failing_main_and_spare() -> (Counted, support::Backend) {
    let main = Counted::start("main").await;
    main.set_status(503);
    let spare = support::Backend::serve(|req: Request<hyper::body::Incoming>| async move {
        let body = req.into_body().collect().await.expect("body").to_bytes();
        http::Response::new(Full::new(body))
    })
    .await;
    (main, spare)
}

/// `failover.errors` on a failover that a `weighted` service chooses (two
/// services below the router): the request, body included, is sent again
/// to the fallback when the main service answers a listed status.
#[tokio::test]
async fn failover_errors_hold_and_resend_below_another_service() {
    let (main, spare) = failing_main_and_spare().await;
    let conf = format!(
        "[http.routers.r-top]\nrule = \"Host(`app.test`)\"\nservice = \"top\"\n\
         [http.routers.api]\nrule = \"Host(`api.test`)\"\nservice = \"api@internal\"\n\
         [[http.services.top.weighted.services]]\nname = \"safe\"\n\
         [http.services.safe.failover]\nservice = \"main\"\nfallback = \"spare\"\n\
         [http.services.safe.failover.errors]\nstatus = [\"500-504\"]\n{}{}",
        lb("main", &[&main.url()], ""),
        lb("spare", &[&spare.url()], ""),
    );
    let gw = Gangway::with_file(&conf, &["--api=true"]).await;
    routed(&gw, "app.test").await;
    let before = main.hits();
    let got = gw
        .send(
            Request::post(gw.url("/"))
                .header("host", "app.test")
                .body(Full::new(Bytes::from_static(b"the payload")))
                .unwrap(),
        )
        .await;
    assert_eq!(
        (got.status.as_u16(), got.text()),
        (200, "the payload".to_owned())
    );
    assert_eq!(main.hits() - before, 1, "the main service answered first");
    main.set_status(404);
    assert_eq!(gw.get("app.test", "/").await.status, 404);
    assert_enabled(&gw, "services", &["top@file", "safe@file"]).await;
    assert_enabled(&gw, "routers", &["r-top@file"]).await;
    let safe = gw.api_json("/api/http/services/safe@file").await;
    assert!(safe.get("warnings").is_none(), "{safe}");
}

/// A `mirroring` service whose main service and mirror have middlewares
/// of their own: the client's request goes through the main service's,
/// each copy through the mirror's.
#[tokio::test]
async fn mirroring_runs_the_middlewares_of_its_main_service_and_its_mirror() {
    let echo = support::Backend::echo("echo").await;
    let copies = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let kept = copies.clone();
    let mirror = support::Backend::serve(move |req: Request<hyper::body::Incoming>| {
        let kept = kept.clone();
        async move {
            kept.lock().unwrap().push(req.uri().to_string());
            http::Response::new(Full::new(Bytes::from_static(b"copy")))
        }
    })
    .await;
    let conf = format!(
        "[http.routers.r-mir]\nrule = \"Host(`app.test`)\"\nservice = \"mir\"\n\
         [http.routers.api]\nrule = \"Host(`api.test`)\"\nservice = \"api@internal\"\n\
         [http.middlewares.toMain.addPrefix]\nprefix = \"/main\"\n\
         [http.middlewares.toCopy.addPrefix]\nprefix = \"/copy\"\n\
         [http.services.mir.mirroring]\nservice = \"app\"\n\
         [[http.services.mir.mirroring.mirrors]]\nname = \"shadow\"\npercent = 100\n\
         [http.services.app]\nmiddlewares = [\"toMain\"]\n\
         [http.services.shadow]\nmiddlewares = [\"toCopy\"]\n{}{}",
        lb("app", &[&echo.url()], ""),
        lb("shadow", &[&mirror.url()], ""),
    );
    let gw = Gangway::with_file(&conf, &["--api=true"]).await;
    routed(&gw, "app.test").await;
    assert_eq!(gw.get("app.test", "/x").await.seen().uri, "/main/x");
    eventually(
        WAIT,
        "the mirror gets its copy through its middleware",
        || {
            let copies = copies.clone();
            async move { copies.lock().unwrap().iter().any(|u| u == "/copy/x") }
        },
    )
    .await;
    assert!(
        copies
            .lock()
            .unwrap()
            .iter()
            .all(|u| u.starts_with("/copy/")),
        "{copies:?}"
    );
    assert_enabled(&gw, "services", &["mir@file", "app@file", "shadow@file"]).await;
    assert_enabled(&gw, "routers", &["r-mir@file"]).await;
}

/// `failover.errors`: a listed status from the main service sends the same
/// request (its body held up to `maxRequestBodyBytes`) to the fallback; an
/// unlisted one is the answer; a larger body gets 413.
#[tokio::test]
async fn failover_errors_send_the_request_again_to_the_fallback() {
    let (main, spare) = failing_main_and_spare().await;
    let conf = format!(
        "{}[http.services.app.failover]\nservice = \"main\"\nfallback = \"spare\"\n[http.services.app.failover.errors]\nstatus = [\"500-504\"]\nmaxRequestBodyBytes = 16\n{}{}",
        router("app.test", "app"),
        lb("main", &[&main.url()], ""),
        lb("spare", &[&spare.url()], ""),
    );
    let gw = Gangway::with_file(&conf, &[]).await;
    routed(&gw, "app.test").await;
    let post = |body: &'static str| {
        Request::post(gw.url("/"))
            .header("host", "app.test")
            .body(Full::new(Bytes::from_static(body.as_bytes())))
            .unwrap()
    };
    let before = main.hits();
    let got = gw.send(post("the payload")).await;
    assert_eq!(
        (got.status.as_u16(), got.text()),
        (200, "the payload".to_owned())
    );
    assert_eq!(main.hits() - before, 1, "the main service answered first");

    // A status not listed is the answer.
    main.set_status(404);
    assert_eq!(gw.send(post("x")).await.status, 404);

    // A body over the bound cannot be sent twice: 413, and nothing sent.
    let before = main.hits();
    let got = gw.send(post("a body longer than sixteen bytes")).await;
    assert_eq!(got.status, 413);
    assert_eq!(main.hits(), before);
}
