//! Routing through the real binary: every matcher, combinations, priority,
//! 404, 502, 504, HTTP/1.1 and HTTP/2 clients.

use crate::support;

use bytes::Bytes;
use http::{Request, StatusCode, Version};
use http_body_util::Full;
use std::time::Duration;
use support::{Backend, Gangway, eventually};

fn routers(backends: &[(&str, &str, &Backend)], extra: &str) -> String {
    let mut s = String::new();
    for (name, rule, b) in backends {
        s.push_str(&format!(
            "[http.routers.{name}]\nrule = {rule:?}\nservice = \"{name}\"\n{extra}\n[http.services.{name}.loadBalancer]\n[[http.services.{name}.loadBalancer.servers]]\nurl = \"{}\"\n",
            b.url()
        ));
    }
    s
}

async fn backend_of(gw: &Gangway, req: Request<Full<Bytes>>) -> Option<String> {
    let got = gw.send(req).await;
    (got.status == StatusCode::OK).then(|| got.seen().backend)
}

fn req(gw: &Gangway, method: &str, host: &str, path: &str) -> http::request::Builder {
    Request::builder()
        .method(method)
        .uri(gw.url(path))
        .header("host", host)
}

#[tokio::test]
async fn every_matcher_routes_and_others_do_not() {
    let b = Backend::echo("b").await;
    let cases: &[(&str, &str)] = &[
        ("host", "Host(`host.test`)"),
        ("hostre", "HostRegexp(`^[a-z]+\\.re\\.test$`)"),
        ("path", "Host(`p.test`) && Path(`/exact`)"),
        ("prefix", "Host(`p.test`) && PathPrefix(`/api`)"),
        ("pathre", "Host(`p.test`) && PathRegexp(`^/v[0-9]+/`)"),
        ("method", "Host(`m.test`) && Method(`DELETE`)"),
        ("header", "Host(`h.test`) && Header(`X-Env`, `prod`)"),
        (
            "headerre",
            "Host(`h.test`) && HeaderRegexp(`X-Team`, `^ops-`)",
        ),
        ("query", "Host(`q.test`) && Query(`mobile`, `true`)"),
        ("queryre", "Host(`q.test`) && QueryRegexp(`v`, `^[0-9]+$`)"),
        ("clientip", "Host(`ip.test`) && ClientIP(`127.0.0.0/8`)"),
        ("notip", "Host(`ip6.test`) && ClientIP(`::1`)"),
    ];
    let list: Vec<(&str, &str, &Backend)> = cases.iter().map(|(n, r)| (*n, *r, &b)).collect();
    let mut conf = String::new();
    for (name, rule, _) in &list {
        conf.push_str(&format!(
            "[http.routers.{name}]\nrule = {rule:?}\nservice = \"b\"\n"
        ));
    }
    conf.push_str(&format!(
        "[http.services.b.loadBalancer]\n[[http.services.b.loadBalancer.servers]]\nurl = \"{}\"\n",
        b.url()
    ));
    let gw = Gangway::with_file(&conf, &[]).await;
    eventually(Duration::from_secs(5), "config applied", || async {
        gw.get("host.test", "/").await.status == StatusCode::OK
    })
    .await;

    let ok = |r: http::request::Builder| r.body(Full::default()).unwrap();
    let hit = [
        ok(req(&gw, "GET", "HOST.Test:8080", "/")),
        ok(req(&gw, "GET", "abc.re.test", "/")),
        ok(req(&gw, "GET", "p.test", "/exact")),
        ok(req(&gw, "GET", "p.test", "/api/users")),
        ok(req(&gw, "GET", "p.test", "/v2/x")),
        ok(req(&gw, "DELETE", "m.test", "/")),
        ok(req(&gw, "GET", "h.test", "/").header("x-env", "prod")),
        ok(req(&gw, "GET", "h.test", "/").header("x-team", "ops-eu")),
        ok(req(&gw, "GET", "q.test", "/?mobile=true&x=1")),
        ok(req(&gw, "GET", "q.test", "/?v=42")),
        ok(req(&gw, "GET", "ip.test", "/")),
    ];
    for r in hit {
        let what = format!("{} {:?}", r.uri(), r.headers());
        assert_eq!(
            gw.send(r).await.status,
            StatusCode::OK,
            "should route: {what}"
        );
    }
    let miss = [
        ok(req(&gw, "GET", "other.test", "/")),
        ok(req(&gw, "GET", "a.b.re.test", "/")),
        ok(req(&gw, "GET", "p.test", "/exact/more")),
        ok(req(&gw, "GET", "p.test", "/web")),
        ok(req(&gw, "GET", "m.test", "/")),
        ok(req(&gw, "GET", "h.test", "/").header("x-env", "dev")),
        ok(req(&gw, "GET", "h.test", "/").header("x-team", "dev-ops")),
        ok(req(&gw, "GET", "q.test", "/?mobile=false")),
        ok(req(&gw, "GET", "q.test", "/?v=4a")),
        ok(req(&gw, "GET", "ip6.test", "/")),
    ];
    for r in miss {
        let what = format!("{} {:?}", r.uri(), r.headers());
        let got = gw.send(r).await;
        assert_eq!(
            got.status,
            StatusCode::NOT_FOUND,
            "should not route: {what}"
        );
        assert_eq!(got.text(), "404 page not found\n");
    }
}

#[tokio::test]
async fn combinations_and_priority() {
    let a = Backend::echo("a").await;
    let b = Backend::echo("b").await;
    let c = Backend::echo("c").await;
    let d = Backend::echo("d").await;
    let conf = routers(
        &[
            // Longer rule wins by default.
            ("short", "Host(`x.test`)", &a),
            ("long", "Host(`x.test`) && PathPrefix(`/api`)", &b),
            // || and ! and parentheses.
            (
                "either",
                "(Host(`y.test`) || Host(`z.test`)) && !Method(`POST`)",
                &c,
            ),
        ],
        "",
    ) + &routers(
        &[("explicit", "Host(`x.test`) && PathPrefix(`/api/admin`)", &d)],
        "priority = 1",
    );
    let gw = Gangway::with_file(&conf, &[]).await;
    eventually(Duration::from_secs(5), "config applied", || async {
        gw.get("x.test", "/").await.status == StatusCode::OK
    })
    .await;

    let get = |host: &'static str, path: &'static str| {
        req(&gw, "GET", host, path).body(Full::default()).unwrap()
    };
    assert_eq!(
        backend_of(&gw, get("x.test", "/")).await.as_deref(),
        Some("a")
    );
    assert_eq!(
        backend_of(&gw, get("x.test", "/api/v1")).await.as_deref(),
        Some("b")
    );
    // The explicit low priority loses to the shorter, default-priority rule.
    assert_eq!(
        backend_of(&gw, get("x.test", "/api/admin"))
            .await
            .as_deref(),
        Some("b")
    );
    assert_eq!(
        backend_of(&gw, get("y.test", "/")).await.as_deref(),
        Some("c")
    );
    assert_eq!(
        backend_of(&gw, get("z.test", "/")).await.as_deref(),
        Some("c")
    );
    let post = req(&gw, "POST", "z.test", "/")
        .body(Full::default())
        .unwrap();
    assert_eq!(gw.send(post).await.status, StatusCode::NOT_FOUND);
}

/// gangway routing `Host(127.0.0.1)` to an echo backend, once it does.
async fn loopback_route() -> (Backend, Gangway) {
    loopback_route_with("", &[]).await
}

/// Like `loopback_route`, with more dynamic configuration (which may use
/// the service `app`) and environment variables for gangway.
async fn loopback_route_with(more: &str, env: &[(&str, &str)]) -> (Backend, Gangway) {
    let b = Backend::echo("b").await;
    let dynamic = support::one_route("app", "Host(`127.0.0.1`)", &[&b.url()]) + more;
    let gw = Gangway::with_file_env(&dynamic, &[], env).await;
    eventually(Duration::from_secs(5), "config applied", || async {
        gw.get("127.0.0.1", "/").await.status == StatusCode::OK
    })
    .await;
    (b, gw)
}

#[tokio::test]
async fn http2_prior_knowledge_clients_are_served() {
    let (_b, gw) = loopback_route().await;
    // HTTP/2 carries the host in :authority, not in a Host header; routing and
    // the Host header sent upstream come from it.
    let r = Request::get(gw.url("/hello?x=1"))
        .version(Version::HTTP_2)
        .body(Full::default())
        .unwrap();
    let got = gw.send(r).await;
    assert_eq!(got.status, StatusCode::OK, "{}", got.text());
    let seen = got.seen();
    assert_eq!(seen.uri, "/hello?x=1");
    assert_eq!(
        seen.version, "HTTP/1.1",
        "plain http:// servers get HTTP/1.1"
    );
    assert_eq!(
        seen.header("host"),
        Some(format!("127.0.0.1:{}", gw.port).as_str())
    );
}

/// Sends `req` with `version` over a connection whose first byte reaches
/// gangway alone, 200 ms before the rest: too little to tell HTTP/1 from an
/// HTTP/2 preface, so gangway reads on before it chooses.
async fn send_first_byte_alone(gw: &Gangway, req: Request<Full<Bytes>>) -> StatusCode {
    use hyper_util::rt::{TokioExecutor, TokioIo};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (client_side, mut relay) = tokio::io::duplex(64 * 1024);
    let mut tcp = tokio::net::TcpStream::connect(("127.0.0.1", gw.port))
        .await
        .expect("connect");
    tcp.set_nodelay(true).unwrap();
    tokio::spawn(async move {
        let mut first = [0u8; 1];
        relay.read_exact(&mut first).await.expect("first byte");
        tcp.write_all(&first).await.expect("send first byte");
        tokio::time::sleep(Duration::from_millis(200)).await;
        let _ = tokio::io::copy_bidirectional(&mut relay, &mut tcp).await;
    });
    let io = TokioIo::new(client_side);
    let resp = if req.version() == Version::HTTP_2 {
        let (mut send, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
            .await
            .expect("h2 handshake");
        tokio::spawn(conn);
        send.send_request(req).await.expect("h2 answer")
    } else {
        let (mut send, conn) = hyper::client::conn::http1::handshake(io)
            .await
            .expect("http1 handshake");
        tokio::spawn(conn);
        send.send_request(req).await.expect("http1 answer")
    };
    resp.status()
}

#[tokio::test]
async fn a_first_byte_that_arrives_alone_does_not_confuse_the_version() {
    let (_b, gw) = loopback_route().await;
    // "P" starts both a POST and the HTTP/2 preface ("PRI * HTTP/2.0").
    let post = Request::post("/form")
        .header("host", "127.0.0.1")
        .body(Full::new(Bytes::from_static(b"a=1")))
        .unwrap();
    assert_eq!(send_first_byte_alone(&gw, post).await, StatusCode::OK);
    let h2 = Request::get(gw.url("/h2"))
        .version(Version::HTTP_2)
        .body(Full::default())
        .unwrap();
    assert_eq!(send_first_byte_alone(&gw, h2).await, StatusCode::OK);
}

#[tokio::test]
async fn wildcard_hosts_match_one_label_any_depth_or_everything_by_priority() {
    let exact = Backend::echo("exact").await;
    let one = Backend::echo("one").await;
    let deep = Backend::echo("deep").await;
    let conf = routers(
        &[
            ("exact", "Host(`api.w.test`)", &exact),
            ("one", "Host(`*.w.test`)", &one),
            ("deep", "Host(`**.w.test`)", &deep),
        ],
        "",
    );
    let gw = Gangway::with_file(&conf, &[]).await;
    eventually(Duration::from_secs(5), "config applied", || async {
        gw.get("api.w.test", "/").await.status == StatusCode::OK
    })
    .await;
    let who = |host: &'static str| {
        let gw = &gw;
        async move {
            let got = gw.get(host, "/").await;
            (got.status == StatusCode::OK).then(|| got.seen().backend)
        }
    };
    // Priority is the rule's length, as in Traefik, where the stars of
    // `**.` do not count: Host(`api.w.test`) (18) before Host(`*.w.test`)
    // (16) before Host(`**.w.test`) (17 - 2).
    assert_eq!(who("api.w.test").await.as_deref(), Some("exact"));
    assert_eq!(who("www.w.test").await.as_deref(), Some("one"));
    assert_eq!(who("WWW.W.TEST:8080").await.as_deref(), Some("one"));
    assert_eq!(who("a.b.w.test").await.as_deref(), Some("deep"));
    // Neither wildcard covers the name itself, nor another domain.
    assert_eq!(who("w.test").await, None);
    assert_eq!(who("xw.test").await, None);
    assert_eq!(who("www.w.test.evil").await, None);
    // An explicit priority puts the any-depth wildcard first, even before
    // the exact name; `Host(`*`)` takes what no other router does.
    let every = Backend::echo("every").await;
    let catch_all = routers(&[("every", "Host(`*`)", &every)], "");
    gw.rewrite(&format!(
        "{}{catch_all}",
        conf.replace(
            "[http.routers.deep]\n",
            "[http.routers.deep]\npriority = 100\n",
        )
    ));
    eventually(Duration::from_secs(5), "priority applied", || async {
        who("www.w.test").await.as_deref() == Some("deep")
    })
    .await;
    assert_eq!(who("api.w.test").await.as_deref(), Some("deep"));
    assert_eq!(who("w.test").await.as_deref(), Some("every"));
    assert_eq!(who("elsewhere.test").await.as_deref(), Some("every"));
}

#[tokio::test]
async fn unreachable_server_is_502_and_slow_server_is_504() {
    let dead = format!("http://127.0.0.1:{}", support::free_port());
    let slow = Backend::slow(Duration::from_secs(3)).await;
    let conf = format!(
        "{}{}\n[http.services.slow.loadBalancer]\nserversTransport = \"quick\"\n[[http.services.slow.loadBalancer.servers]]\nurl = \"{}\"\n[http.serversTransports.quick.forwardingTimeouts]\nresponseHeaderTimeout = \"300ms\"\n",
        support::one_route("dead", "Host(`dead.test`)", &[&dead]),
        "[http.routers.slow]\nrule = \"Host(`slow.test`)\"\nservice = \"slow\"",
        slow.url()
    );
    let gw = Gangway::with_file(&conf, &[]).await;
    eventually(Duration::from_secs(5), "config applied", || async {
        gw.get("dead.test", "/").await.status != StatusCode::NOT_FOUND
    })
    .await;
    let got = gw.get("dead.test", "/").await;
    assert_eq!(got.status, StatusCode::BAD_GATEWAY);
    assert_eq!(got.text(), "Bad Gateway\n");
    let got = gw.get("slow.test", "/").await;
    assert_eq!(got.status, StatusCode::GATEWAY_TIMEOUT);
    assert_eq!(got.text(), "Gateway Timeout\n");
}

#[tokio::test]
async fn servers_take_turns_and_weighted_services_split_traffic() {
    let a = Backend::echo("a").await;
    let b = Backend::echo("b").await;
    let conf = format!(
        "{}\n[http.routers.w]\nrule = \"Host(`w.test`)\"\nservice = \"w\"\n[[http.services.w.weighted.services]]\nname = \"sa\"\nweight = 3\n[[http.services.w.weighted.services]]\nname = \"sb\"\nweight = 1\n[http.services.sa.loadBalancer]\n[[http.services.sa.loadBalancer.servers]]\nurl = \"{}\"\n[http.services.sb.loadBalancer]\n[[http.services.sb.loadBalancer.servers]]\nurl = \"{}\"\n",
        support::one_route("rr", "Host(`rr.test`)", &[&a.url(), &b.url()]),
        a.url(),
        b.url()
    );
    let gw = Gangway::with_file(&conf, &[]).await;
    eventually(Duration::from_secs(5), "config applied", || async {
        gw.get("rr.test", "/").await.status == StatusCode::OK
    })
    .await;
    let mut rr = Vec::new();
    for _ in 0..4 {
        rr.push(gw.get("rr.test", "/").await.seen().backend);
    }
    assert!(
        rr.windows(2).all(|w| w[0] != w[1]),
        "round robin alternates: {rr:?}"
    );
    let mut count_a = 0;
    for _ in 0..40 {
        if gw.get("w.test", "/").await.seen().backend == "a" {
            count_a += 1;
        }
    }
    assert_eq!(count_a, 30, "weights 3:1 over 40 requests");
}

#[tokio::test]
async fn a_broken_router_is_disabled_and_the_others_keep_working() {
    let b = Backend::echo("b").await;
    let conf = format!(
        "{}[http.routers.broken]\nrule = \"Host(`broken.test`) &&\"\nservice = \"app\"\n[http.routers.orphan]\nrule = \"Host(`orphan.test`)\"\nservice = \"missing\"\n",
        support::one_route("app", "Host(`ok.test`)", &[&b.url()])
    );
    let gw = Gangway::with_file(&conf, &[]).await;
    eventually(Duration::from_secs(5), "config applied", || async {
        gw.get("ok.test", "/").await.status == StatusCode::OK
    })
    .await;
    assert_eq!(
        gw.get("broken.test", "/").await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        gw.get("orphan.test", "/").await.status,
        StatusCode::NOT_FOUND
    );
    let log = gw.log();
    assert!(
        log.contains("router broken@file") && log.contains("column"),
        "rule error logged with its position:\n{log}"
    );
    // Each error names the router, then the file and line it is written at.
    assert!(
        log.lines().any(|l| l.contains("router orphan@file: ")
            && l.contains("dynamic.toml:12: service `missing@file`: does not exist")),
        "{log}"
    );
}

/// With one worker thread gangway runs tokio's single-thread scheduler:
/// the same proxy, HTTP/1.1 and HTTP/2, many requests at once, and a
/// bcrypt check (which the multi-thread scheduler moves off the worker).
#[tokio::test]
async fn one_worker_thread_serves_the_same() {
    let hash = bcrypt::hash("secret", 4).unwrap();
    let private = format!(
        "[http.routers.private]\nrule = \"Host(`private.test`)\"\nservice = \"app\"\n\
         middlewares = [\"auth\"]\n[http.middlewares.auth.basicAuth]\nusers = [\"ann:{hash}\"]\n"
    );
    let (_b, gw) = loopback_route_with(&private, &[("TOKIO_WORKER_THREADS", "1")]).await;
    let paths: Vec<String> = (0..50).map(|i| format!("/n{i}")).collect();
    let many = futures_util::future::join_all(paths.iter().map(|p| gw.get("127.0.0.1", p))).await;
    for (i, got) in many.iter().enumerate() {
        assert_eq!(got.status, StatusCode::OK, "request {i}");
        assert!(got.text().contains(&format!("/n{i}")), "{}", got.text());
    }
    let h2 = Request::get(gw.url("/two"))
        .version(Version::HTTP_2)
        .body(Full::default())
        .unwrap();
    assert_eq!(gw.send(h2).await.status, StatusCode::OK);
    assert_eq!(
        gw.get("private.test", "/").await.status,
        StatusCode::UNAUTHORIZED
    );
    use base64::Engine as _;
    let login = base64::engine::general_purpose::STANDARD.encode("ann:secret");
    let authed = Request::get(gw.url("/"))
        .header("host", "private.test")
        .header("authorization", format!("Basic {login}"))
        .body(Full::default())
        .unwrap();
    assert_eq!(gw.send(authed).await.status, StatusCode::OK);
}

#[tokio::test]
async fn a_router_with_rule_syntax_v2_routes_its_v2_rule_and_is_warned() {
    let a = Backend::echo("a").await;
    let b = Backend::echo("b").await;
    let conf = routers(
        &[
            (
                "legacy",
                "HostRegexp(`{sub:[a-z]+}.v2.test`) && PathPrefix(`/api/{version:v[0-9]+}/`) \
                 && Headers(`X-Env`, `prod`) && Query(`debug=`)",
                &a,
            ),
            ("hosts", "HostHeader(`one.test`, `two.test`)", &b),
        ],
        "ruleSyntax = \"v2\"",
    ) + "[http.routers.api]\nrule = \"Host(`api.test`)\"\nservice = \"api@internal\"\n";
    let gw = Gangway::with_file(&conf, &["--api=true"]).await;
    eventually(Duration::from_secs(5), "config applied", || async {
        gw.get("two.test", "/").await.status == StatusCode::OK
    })
    .await;
    let ok = |r: http::request::Builder| r.body(Full::default()).unwrap();
    let legacy = || req(&gw, "GET", "app.v2.test", "/api/v2/users?debug=1").header("x-env", "prod");
    assert_eq!(backend_of(&gw, ok(legacy())).await.as_deref(), Some("a"));
    assert_eq!(
        backend_of(&gw, ok(req(&gw, "GET", "one.test", "/")))
            .await
            .as_deref(),
        Some("b")
    );
    for miss in [
        req(&gw, "GET", "a.b.v2.test", "/api/v2/users?debug=1").header("x-env", "prod"),
        req(&gw, "GET", "app.v2.test", "/api/latest/users?debug=1").header("x-env", "prod"),
        req(&gw, "GET", "app.v2.test", "/api/v2/users?debug=1").header("x-env", "dev"),
        req(&gw, "GET", "app.v2.test", "/api/v2/users").header("x-env", "prod"),
    ] {
        let r = ok(miss);
        let what = format!("{} {:?}", r.uri(), r.headers());
        assert_eq!(gw.send(r).await.status, StatusCode::NOT_FOUND, "{what}");
    }
    // The API keeps the rule as written and warns, with the v3 rewrite.
    let view = gw.api_json("/api/http/routers/hosts@file").await;
    assert_eq!(view["status"], "warning", "{view}");
    assert_eq!(view["ruleSyntax"], "v2", "{view}");
    let problem = &view["problems"][0];
    assert_eq!(problem["kind"], "deprecatedRuleSyntax", "{view}");
    assert_eq!(problem["v3"], "Host(`one.test`, `two.test`)", "{view}");
}

#[tokio::test]
async fn core_default_rule_syntax_v2_reads_rules_without_their_own_syntax() {
    let a = Backend::echo("a").await;
    let b = Backend::echo("b").await;
    let conf = routers(&[("legacy", "Headers(`X-Env`, `prod`)", &a)], "")
        + &routers(
            &[("modern", "Header(`X-Env`, `dev`)", &b)],
            "ruleSyntax = \"v3\"",
        );
    let gw = Gangway::with_file(&conf, &["--core.defaultRuleSyntax=v2"]).await;
    let ok = |env: &str| {
        req(&gw, "GET", "any.test", "/")
            .header("x-env", env)
            .body(Full::default())
            .unwrap()
    };
    eventually(Duration::from_secs(5), "config applied", || async {
        backend_of(&gw, ok("dev")).await.is_some()
    })
    .await;
    assert_eq!(backend_of(&gw, ok("prod")).await.as_deref(), Some("a"));
    assert_eq!(backend_of(&gw, ok("dev")).await.as_deref(), Some("b"));
}
