//! Every middleware through the real binary: what the backend received and
//! what the client got; bad configurations disable only their routers; and
//! state (rate-limit buckets, breaker state) survives unrelated changes.

use crate::support;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use support::{Backend, Gangway, Got, eventually};

const WAIT: Duration = Duration::from_secs(10);

/// A router `app` for `app.test` using `middlewares`, a service on
/// `backend`, and the middleware definitions in `defs` (TOML).
fn config(middlewares: &[&str], backend: &str, defs: &str) -> String {
    let list = middlewares
        .iter()
        .map(|m| format!("{m:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "[http.routers.app]\nrule = \"Host(`app.test`)\"\nservice = \"app\"\nmiddlewares = [{list}]\n\
         [http.services.app.loadBalancer]\n[[http.services.app.loadBalancer.servers]]\nurl = \"{backend}\"\n\
         [http.routers.plain]\nrule = \"Host(`plain.test`)\"\nservice = \"app\"\n{defs}"
    )
}

/// Starts gangway and waits until the `plain` router (no middlewares)
/// answers, i.e. the configuration is in.
async fn start(conf: &str, extra: &[&str]) -> Gangway {
    let gw = Gangway::with_file(conf, extra).await;
    eventually(WAIT, "configuration applied", || async {
        gw.get("plain.test", "/").await.status == StatusCode::OK
    })
    .await;
    gw
}

fn get(gw: &Gangway, host: &str, path: &str) -> http::request::Builder {
    Request::get(gw.url(path)).header("host", host)
}

fn done(b: http::request::Builder) -> Request<Full<Bytes>> {
    b.body(Full::default()).expect("request")
}

/// A backend that counts requests and answers with `status`.
async fn counting(status: StatusCode, hits: Arc<AtomicUsize>) -> Backend {
    Backend::serve(move |_req: Request<Incoming>| {
        let hits = hits.clone();
        async move {
            hits.fetch_add(1, Ordering::SeqCst);
            let mut r = http::Response::new(Full::new(Bytes::from_static(b"counted")));
            *r.status_mut() = status;
            r
        }
    })
    .await
}

/// A backend that answers with what it received: method, target, the body's
/// length and `Content-Length`.
async fn body_echo() -> Backend {
    Backend::serve(|req: Request<Incoming>| async move {
        let method = req.method().to_string();
        let uri = req.uri().to_string();
        let cl = req
            .headers()
            .get("content-length")
            .map(|v| v.to_str().unwrap_or("").to_owned());
        let body = req.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
        let json = serde_json::json!({"method": method, "uri": uri, "len": body.len(), "contentLength": cl});
        http::Response::new(Full::new(Bytes::from(json.to_string())))
    })
    .await
}

fn json(got: &Got) -> serde_json::Value {
    serde_json::from_slice(&got.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", got.text()))
}

// === paths and redirects ===

#[tokio::test]
async fn strip_prefix_removes_the_prefix_and_tells_the_backend() {
    let b = Backend::echo("b").await;
    let gw = start(
        &config(
            &["strip"],
            &b.url(),
            "[http.middlewares.strip.stripPrefix]\nprefixes = [\"/api\", \"/v1\"]\n",
        ),
        &[],
    )
    .await;
    let seen = gw.get("app.test", "/api/users?x=1").await.seen();
    assert_eq!(seen.uri, "/users?x=1");
    assert_eq!(seen.header("x-forwarded-prefix"), Some("/api"));
    let seen = gw.get("app.test", "/v1").await.seen();
    assert_eq!(seen.uri, "/");
    assert_eq!(seen.header("x-forwarded-prefix"), Some("/v1"));
    let seen = gw.get("app.test", "/other").await.seen();
    assert_eq!(
        (seen.uri.as_str(), seen.header("x-forwarded-prefix")),
        ("/other", None)
    );
    // Dot segments are resolved before routing (sanitizePath): the path is
    // /admin, outside the prefix, and reaches the backend as such.
    let seen = gw.get("app.test", "/api/../admin").await.seen();
    assert_eq!(
        (seen.uri.as_str(), seen.header("x-forwarded-prefix")),
        ("/admin", None)
    );
}

#[tokio::test]
async fn strip_prefix_regex_add_prefix_and_replace_path() {
    let b = Backend::echo("b").await;
    let defs = r#"
[http.middlewares.re.stripPrefixRegex]
regex = ["/tenant/[a-z]+"]
[http.middlewares.add.addPrefix]
prefix = "/base"
[http.middlewares.replace.replacePath]
path = "/fixed"
[http.middlewares.rx.replacePathRegex]
regex = "^/old/(.*)"
replacement = "/new/${1}"
[http.routers.a]
rule = "Host(`a.test`)"
service = "app"
middlewares = ["add"]
[http.routers.r]
rule = "Host(`r.test`)"
service = "app"
middlewares = ["replace"]
[http.routers.x]
rule = "Host(`x.test`)"
service = "app"
middlewares = ["rx"]
"#;
    let gw = start(&config(&["re"], &b.url(), defs), &[]).await;
    let seen = gw.get("app.test", "/tenant/acme/orders").await.seen();
    assert_eq!(seen.uri, "/orders");
    assert_eq!(seen.header("x-forwarded-prefix"), Some("/tenant/acme"));
    assert_eq!(gw.get("a.test", "/x?q=1").await.seen().uri, "/base/x?q=1");
    let seen = gw.get("r.test", "/anything?q=2").await.seen();
    assert_eq!(seen.uri, "/fixed?q=2");
    assert_eq!(seen.header("x-replaced-path"), Some("/anything"));
    let seen = gw.get("x.test", "/old/a/b").await.seen();
    assert_eq!(seen.uri, "/new/a/b");
    assert_eq!(seen.header("x-replaced-path"), Some("/old/a/b"));
    let seen = gw.get("x.test", "/other").await.seen();
    assert_eq!(
        (seen.uri.as_str(), seen.header("x-replaced-path")),
        ("/other", None)
    );
}

#[tokio::test]
async fn redirects_answer_without_calling_the_backend() {
    let hits = Arc::new(AtomicUsize::new(0));
    let b = counting(StatusCode::OK, hits.clone()).await;
    let defs = r#"
[http.middlewares.https.redirectScheme]
scheme = "https"
permanent = true
[http.middlewares.moved.redirectRegex]
regex = "^http://old\\.test(:[0-9]+)?/(.*)"
replacement = "http://new.test/${2}"
[http.routers.old]
rule = "Host(`old.test`)"
service = "app"
middlewares = ["moved"]
"#;
    let gw = start(&config(&["https"], &b.url(), defs), &[]).await;
    let before = hits.load(Ordering::SeqCst);
    let got = gw.get("app.test", "/login?next=/home").await;
    assert_eq!(got.status, StatusCode::MOVED_PERMANENTLY);
    assert_eq!(got.headers["location"], "https://app.test/login?next=/home");
    let post = gw
        .send(
            Request::post(gw.url("/form"))
                .header("host", "app.test")
                .body(Full::default())
                .expect("request"),
        )
        .await;
    assert_eq!(post.status, StatusCode::PERMANENT_REDIRECT);
    let got = gw.get("old.test", "/a/b").await;
    assert_eq!(got.status, StatusCode::FOUND);
    assert_eq!(got.headers["location"], "http://new.test/a/b");
    assert_eq!(
        hits.load(Ordering::SeqCst),
        before,
        "the backend saw none of these"
    );
}

// === headers ===

#[tokio::test]
async fn headers_set_and_remove_request_and_response_headers() {
    let b = Backend::echo("b").await;
    let defs = r#"
[http.middlewares.h.headers]
customRequestHeaders = { X-Script-Name = "test", X-Drop = "" }
customResponseHeaders = { X-Custom = "yes", X-Backend = "" }
frameDeny = true
contentTypeNosniff = true
browserXssFilter = true
referrerPolicy = "same-origin"
contentSecurityPolicy = "default-src 'self'"
permissionsPolicy = "camera=()"
stsSeconds = 31536000
stsIncludeSubdomains = true
"#;
    let gw = start(&config(&["h"], &b.url(), defs), &[]).await;
    let got = gw
        .send(done(get(&gw, "app.test", "/").header("x-drop", "secret")))
        .await;
    let seen = got.seen();
    assert_eq!(seen.header("x-script-name"), Some("test"));
    assert_eq!(seen.header("x-drop"), None);
    let h = &got.headers;
    assert_eq!(h["x-custom"], "yes");
    assert!(
        h.get("x-backend").is_none(),
        "an empty value removes the server's header"
    );
    assert_eq!(h["x-frame-options"], "DENY");
    assert_eq!(h["x-content-type-options"], "nosniff");
    assert_eq!(h["x-xss-protection"], "1; mode=block");
    assert_eq!(h["referrer-policy"], "same-origin");
    assert_eq!(h["content-security-policy"], "default-src 'self'");
    assert_eq!(h["permissions-policy"], "camera=()");
    assert!(
        h.get("strict-transport-security").is_none(),
        "no STS over plain HTTP"
    );
}

#[tokio::test]
async fn cors_preflight_is_answered_and_responses_carry_the_origin() {
    let hits = Arc::new(AtomicUsize::new(0));
    let b = counting(StatusCode::OK, hits.clone()).await;
    let defs = r#"
[http.middlewares.cors.headers]
accessControlAllowMethods = ["GET", "OPTIONS", "PUT"]
accessControlAllowHeaders = ["Content-Type"]
accessControlAllowOriginList = ["https://app.example"]
accessControlAllowOriginListRegex = ["^https://[a-z]+\\.trusted\\.example$"]
accessControlExposeHeaders = ["X-Total"]
accessControlMaxAge = 600
addVaryHeader = true
"#;
    let gw = start(&config(&["cors"], &b.url(), defs), &[]).await;
    let before = hits.load(Ordering::SeqCst);
    let preflight = gw
        .send(
            Request::builder()
                .method("OPTIONS")
                .uri(gw.url("/api"))
                .header("host", "app.test")
                .header("origin", "https://app.example")
                .header("access-control-request-method", "PUT")
                .body(Full::default())
                .expect("request"),
        )
        .await;
    assert_eq!(preflight.status, StatusCode::OK);
    let h = &preflight.headers;
    assert_eq!(h["access-control-allow-origin"], "https://app.example");
    assert_eq!(h["access-control-allow-methods"], "GET,OPTIONS,PUT");
    assert_eq!(h["access-control-allow-headers"], "Content-Type");
    assert_eq!(h["access-control-max-age"], "600");
    assert_eq!(
        hits.load(Ordering::SeqCst),
        before,
        "a preflight never reaches the backend"
    );

    let got = gw
        .send(done(
            get(&gw, "app.test", "/api").header("origin", "https://eu.trusted.example"),
        ))
        .await;
    assert_eq!(
        got.headers["access-control-allow-origin"],
        "https://eu.trusted.example"
    );
    assert_eq!(got.headers["access-control-expose-headers"], "X-Total");
    assert_eq!(got.headers["vary"], "Origin");
    let got = gw
        .send(done(
            get(&gw, "app.test", "/api").header("origin", "https://evil.example"),
        ))
        .await;
    assert!(got.headers.get("access-control-allow-origin").is_none());
}

// === access ===

#[tokio::test]
async fn basic_auth_with_users_and_a_users_file() {
    let b = Backend::echo("b").await;
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("users");
    // Hashes made with openssl and glibc's crypt(3): passwords hunter2.
    std::fs::write(
        &file,
        "# team\nbob:$apr1$Zx9mQ2aB$am5BKSoVjrs8gyWVDEIEm0\ncarol:$2b$05$abcdefghijklmnopqrstuuoXuKqgZXLiJqzfmMXDDhSFPIvxV7t8.\n",
    )
    .expect("users file");
    let defs = format!(
        "[http.middlewares.auth.basicAuth]\nusers = [\"alice:{{SHA}}87u9ZqY9S/F0eUBXjsPQEDUw4h0=\"]\nusersFile = {:?}\nrealm = \"staff\"\nremoveHeader = true\nheaderField = \"X-WebAuth-User\"\n",
        file.display().to_string()
    );
    let gw = start(&config(&["auth"], &b.url(), &defs), &[]).await;
    let none = gw.get("app.test", "/").await;
    assert_eq!(none.status, StatusCode::UNAUTHORIZED);
    assert_eq!(none.headers["www-authenticate"], "Basic realm=\"staff\"");
    use base64::Engine as _;
    let basic = |user: &str, pass: &str| {
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"))
        )
    };
    for user in ["alice", "bob", "carol"] {
        let got = gw
            .send(done(
                get(&gw, "app.test", "/").header("authorization", basic(user, "hunter2")),
            ))
            .await;
        assert_eq!(got.status, StatusCode::OK, "{user}");
        let seen = got.seen();
        assert_eq!(seen.header("x-webauth-user"), Some(user));
        assert_eq!(seen.header("authorization"), None, "removeHeader");
        let wrong = gw
            .send(done(
                get(&gw, "app.test", "/").header("authorization", basic(user, "hunter3")),
            ))
            .await;
        assert_eq!(wrong.status, StatusCode::UNAUTHORIZED, "{user}");
    }
}

#[tokio::test]
async fn forward_auth_lets_through_copies_headers_or_relays_the_refusal() {
    let b = Backend::echo("b").await;
    let auth = Backend::serve(|req: Request<Incoming>| async move {
        let h = req.headers();
        let ok = h.get("authorization").is_some_and(|v| v == "Bearer good");
        let saw = format!(
            "{} {} {} {}",
            req.method(),
            h.get("x-forwarded-method")
                .map_or("-", |v| v.to_str().unwrap_or("?")),
            h.get("x-forwarded-uri")
                .map_or("-", |v| v.to_str().unwrap_or("?")),
            h.get("x-forwarded-host")
                .map_or("-", |v| v.to_str().unwrap_or("?")),
        );
        let mut r = http::Response::new(Full::new(Bytes::from(if ok {
            String::new()
        } else {
            format!("denied: {saw}")
        })));
        if ok {
            r.headers_mut()
                .insert("x-auth-user", "ann".parse().expect("value"));
            r.headers_mut()
                .insert("x-auth-role-admin", "1".parse().expect("value"));
            r.headers_mut()
                .insert("x-other", "no".parse().expect("value"));
        } else {
            *r.status_mut() = StatusCode::UNAUTHORIZED;
            r.headers_mut()
                .insert("location", "/login".parse().expect("value"));
        }
        r
    })
    .await;
    let defs = format!(
        "[http.middlewares.fa.forwardAuth]\naddress = \"{}/check\"\nauthResponseHeaders = [\"X-Auth-User\"]\nauthResponseHeadersRegex = \"^X-Auth-Role-\"\n",
        auth.url()
    );
    let gw = start(&config(&["fa"], &b.url(), &defs), &[]).await;
    let refused = gw
        .send(
            Request::post(gw.url("/orders?id=7"))
                .header("host", "app.test")
                .body(Full::new(Bytes::from_static(b"payload")))
                .expect("request"),
        )
        .await;
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED);
    assert_eq!(refused.text(), "denied: GET POST /orders?id=7 app.test");
    assert_eq!(refused.headers["location"], format!("{}/login", auth.url()));

    let got = gw
        .send(done(
            get(&gw, "app.test", "/x")
                .header("authorization", "Bearer good")
                .header("x-auth-user", "mallory"),
        ))
        .await;
    assert_eq!(got.status, StatusCode::OK);
    let seen = got.seen();
    assert_eq!(
        seen.header("x-auth-user"),
        Some("ann"),
        "the auth server's value replaces the client's"
    );
    assert_eq!(seen.header("x-auth-role-admin"), Some("1"));
    assert_eq!(seen.header("x-other"), None);
}

#[tokio::test]
async fn ip_allow_list_by_peer_and_by_forwarded_depth() {
    let b = Backend::echo("b").await;
    let defs = r#"
[http.middlewares.local.ipAllowList]
sourceRange = ["127.0.0.1/32", "::1"]
[http.middlewares.tenners.ipWhiteList]
sourceRange = ["10.0.0.0/8"]
[http.middlewares.depth.ipAllowList]
sourceRange = ["10.0.0.0/8"]
ipStrategy = { depth = 1 }
[http.routers.t]
rule = "Host(`t.test`)"
service = "app"
middlewares = ["tenners"]
[http.routers.d]
rule = "Host(`d.test`)"
service = "app"
middlewares = ["depth"]
"#;
    let gw = start(&config(&["local"], &b.url(), defs), &[]).await;
    assert_eq!(gw.get("app.test", "/").await.status, StatusCode::OK);
    assert_eq!(gw.get("t.test", "/").await.status, StatusCode::FORBIDDEN);
    // Not trusted: the client's X-Forwarded-For is ignored, so no address
    // is found at depth 1.
    let spoofed = gw
        .send(done(
            get(&gw, "d.test", "/").header("x-forwarded-for", "10.1.2.3"),
        ))
        .await;
    assert_eq!(spoofed.status, StatusCode::FORBIDDEN);

    let trusting = start(
        &config(&[], &b.url(), defs),
        &["--entryPoints.web.forwardedHeaders.trustedIPs=127.0.0.1/32"],
    )
    .await;
    let got = trusting
        .send(done(
            get(&trusting, "d.test", "/").header("x-forwarded-for", "192.168.0.9, 10.1.2.3"),
        ))
        .await;
    assert_eq!(got.status, StatusCode::OK);
    let got = trusting
        .send(done(
            get(&trusting, "d.test", "/").header("x-forwarded-for", "10.1.2.3, 192.168.0.9"),
        ))
        .await;
    assert_eq!(got.status, StatusCode::FORBIDDEN);
}

// === traffic control ===

#[tokio::test]
async fn rate_limit_refuses_past_the_burst_and_keeps_its_buckets_across_reloads() {
    let b = Backend::echo("b").await;
    let defs = "[http.middlewares.rl.rateLimit]\naverage = 1\nperiod = \"1m\"\nburst = 2\n";
    let conf = config(&["rl"], &b.url(), defs);
    let gw = start(&conf, &[]).await;
    assert_eq!(gw.get("app.test", "/").await.status, StatusCode::OK);
    assert_eq!(gw.get("app.test", "/").await.status, StatusCode::OK);
    let refused = gw.get("app.test", "/").await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
    let retry_after: u64 = refused.headers["retry-after"]
        .to_str()
        .expect("text")
        .parse()
        .expect("seconds");
    assert!((50..=60).contains(&retry_after), "{retry_after}");

    // An unrelated change: a new router appears. The bucket stays empty.
    gw.rewrite(&format!(
        "{conf}\n[http.routers.new]\nrule = \"Host(`new.test`)\"\nservice = \"app\"\n"
    ));
    eventually(WAIT, "new router", || async {
        gw.get("new.test", "/").await.status == StatusCode::OK
    })
    .await;
    assert_eq!(
        gw.get("app.test", "/").await.status,
        StatusCode::TOO_MANY_REQUESTS
    );

    // Changing the limiter itself starts a fresh bucket.
    gw.rewrite(&config(
        &["rl"],
        &b.url(),
        "[http.middlewares.rl.rateLimit]\naverage = 1\nperiod = \"1m\"\nburst = 3\n",
    ));
    eventually(WAIT, "new limit", || async {
        gw.get("app.test", "/").await.status == StatusCode::OK
    })
    .await;
}

#[tokio::test]
async fn in_flight_requests_are_capped_per_source() {
    let (release_tx, release_rx) = tokio::sync::watch::channel(false);
    let started = Arc::new(AtomicUsize::new(0));
    let s = started.clone();
    let b = Backend::serve(move |req: Request<Incoming>| {
        let mut rx = release_rx.clone();
        let s = s.clone();
        async move {
            if req.uri().path() == "/hold" {
                s.fetch_add(1, Ordering::SeqCst);
                let _ = rx.wait_for(|v| *v).await;
            }
            http::Response::new(Full::new(Bytes::from_static(b"done")))
        }
    })
    .await;
    let defs = "[http.middlewares.one.inFlightReq]\namount = 1\n";
    let gw = Arc::new(start(&config(&["one"], &b.url(), defs), &[]).await);
    let held = {
        let gw = gw.clone();
        tokio::spawn(async move { gw.get("app.test", "/hold").await.status })
    };
    eventually(WAIT, "first request reached the backend", || async {
        started.load(Ordering::SeqCst) == 1
    })
    .await;
    assert_eq!(
        gw.get("app.test", "/").await.status,
        StatusCode::TOO_MANY_REQUESTS
    );
    // Another host is another source (the default criterion is the host).
    release_tx.send(true).expect("release");
    assert_eq!(held.await.expect("task"), StatusCode::OK);
    eventually(WAIT, "slot given back", || async {
        gw.get("app.test", "/").await.status == StatusCode::OK
    })
    .await;
}

#[tokio::test]
async fn retry_moves_a_refused_request_to_the_next_server() {
    let live = body_echo().await;
    let dead = format!("http://127.0.0.1:{}", support::free_port());
    let conf = format!(
        "[http.routers.app]\nrule = \"Host(`app.test`)\"\nservice = \"app\"\nmiddlewares = [\"retry\"]\n\
         [http.routers.plain]\nrule = \"Host(`plain.test`)\"\nservice = \"app\"\n\
         [http.services.app.loadBalancer]\n\
         [[http.services.app.loadBalancer.servers]]\nurl = \"{dead}\"\n\
         [[http.services.app.loadBalancer.servers]]\nurl = \"{}\"\n\
         [http.middlewares.retry.retry]\nattempts = 2\ninitialInterval = \"10ms\"\n\
         [http.services.app.loadBalancer.passiveHealthCheck]\nmaxFailedAttempts = 1000\n",
        live.url()
    );
    // A passive health check that tolerates many failures keeps the dead
    // server in the rotation, so every other request is sent to it first.
    let gw = Gangway::with_file(&conf, &[]).await;
    eventually(WAIT, "configuration applied", || async {
        gw.get("app.test", "/").await.status == StatusCode::OK
    })
    .await;
    for i in 0..10 {
        let body = Bytes::from(vec![b'x'; 1000 + i]);
        let got = gw
            .send(
                Request::post(gw.url("/upload"))
                    .header("host", "app.test")
                    .body(Full::new(body))
                    .expect("request"),
            )
            .await;
        assert_eq!(got.status, StatusCode::OK, "request {i}: {}", got.text());
        assert_eq!(json(&got)["len"], 1000 + i, "the body is replayed whole");
    }
    // Without the middleware, every other POST fails. (A GET would not:
    // the balancer itself moves bodiless idempotent requests on.)
    let statuses: Vec<StatusCode> = futures_util::future::join_all((0..4).map(|_| {
        gw.send(
            Request::post(gw.url("/upload"))
                .header("host", "plain.test")
                .body(Full::new(Bytes::from_static(b"x")))
                .expect("request"),
        )
    }))
    .await
    .into_iter()
    .map(|g| g.status)
    .collect();
    assert!(statuses.contains(&StatusCode::BAD_GATEWAY), "{statuses:?}");
}

#[tokio::test]
async fn circuit_breaker_opens_and_stays_open_across_an_unrelated_reload() {
    let hits = Arc::new(AtomicUsize::new(0));
    let b = counting(StatusCode::INTERNAL_SERVER_ERROR, hits.clone()).await;
    let ok = Backend::echo("ok").await;
    let defs = "[http.middlewares.cb.circuitBreaker]\nexpression = \"ResponseCodeRatio(500, 600, 0, 600) > 0.5\"\ncheckPeriod = \"1ms\"\nfallbackDuration = \"1m\"\n";
    let conf = config(&["cb"], &b.url(), defs)
        + &format!(
            "[http.routers.plain2]\nrule = \"Host(`plain.test`)\"\npriority = 1000\nservice = \"ok\"\n[http.services.ok.loadBalancer]\n[[http.services.ok.loadBalancer.servers]]\nurl = \"{}\"\n",
            ok.url()
        );
    let gw = start(&conf, &[]).await;
    eventually(WAIT, "breaker opens", || async {
        gw.get("app.test", "/").await.status == StatusCode::SERVICE_UNAVAILABLE
    })
    .await;
    let seen = hits.load(Ordering::SeqCst);
    for _ in 0..5 {
        assert_eq!(
            gw.get("app.test", "/").await.status,
            StatusCode::SERVICE_UNAVAILABLE
        );
    }
    assert_eq!(
        hits.load(Ordering::SeqCst),
        seen,
        "an open breaker does not call the service"
    );

    gw.rewrite(&format!(
        "{conf}\n[http.routers.new]\nrule = \"Host(`new.test`)\"\nservice = \"ok\"\n"
    ));
    eventually(WAIT, "new router", || async {
        gw.get("new.test", "/").await.status == StatusCode::OK
    })
    .await;
    assert_eq!(
        gw.get("app.test", "/").await.status,
        StatusCode::SERVICE_UNAVAILABLE
    );
    assert_eq!(
        hits.load(Ordering::SeqCst),
        seen,
        "still open after the reload"
    );
}

#[tokio::test]
async fn buffering_limits_bodies_and_sends_a_fixed_length() {
    let b = body_echo().await;
    let defs = "[http.middlewares.buf.buffering]\nmaxRequestBodyBytes = 100000\nmemRequestBodyBytes = 1000\n";
    let gw = start(&config(&["buf"], &b.url(), defs), &[]).await;
    let post = |n: usize| {
        Request::post(gw.url("/in"))
            .header("host", "app.test")
            .body(Full::new(Bytes::from(vec![b'y'; n])))
            .expect("request")
    };
    // Above the in-memory part, so it goes through the temporary file.
    let got = gw.send(post(50_000)).await;
    assert_eq!(got.status, StatusCode::OK);
    let j = json(&got);
    assert_eq!(
        (j["len"].as_u64(), j["contentLength"].as_str()),
        (Some(50_000), Some("50000"))
    );
    assert_eq!(
        gw.send(post(100_001)).await.status,
        StatusCode::PAYLOAD_TOO_LARGE
    );

    // A chunked upload (no length) reaches the server with one.
    let (tx, rx) =
        tokio::sync::mpsc::channel::<Result<http_body::Frame<Bytes>, std::convert::Infallible>>(4);
    let body = http_body_util::StreamBody::new(tokio_stream::wrappers::ReceiverStream::new(rx));
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http();
    let send = tokio::spawn(
        client.request(
            Request::post(gw.url("/in"))
                .header("host", "app.test")
                .body(body)
                .expect("request"),
        ),
    );
    for _ in 0..3 {
        tx.send(Ok(http_body::Frame::data(Bytes::from_static(b"chunk"))))
            .await
            .expect("send");
    }
    drop(tx);
    let resp = send.await.expect("task").expect("response");
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    let j: serde_json::Value = serde_json::from_slice(&bytes).expect("json");
    assert_eq!(
        (j["len"].as_u64(), j["contentLength"].as_str()),
        (Some(15), Some("15"))
    );
}

#[tokio::test]
async fn compress_by_accept_encoding_and_not_below_the_minimum() {
    use std::io::Read as _;
    let text = "gangway compresses text; ".repeat(200);
    let t = text.clone();
    let b = Backend::serve(move |req: Request<Incoming>| {
        let t = t.clone();
        async move {
            let body = if req.uri().path() == "/small" {
                "tiny".to_owned()
            } else {
                t
            };
            let mut r = http::Response::new(Full::new(Bytes::from(body)));
            r.headers_mut().insert(
                "content-type",
                "text/plain; charset=utf-8".parse().expect("value"),
            );
            r
        }
    })
    .await;
    let gw = start(
        &config(&["gz"], &b.url(), "[http.middlewares.gz.compress]\n"),
        &[],
    )
    .await;
    let fetch = |enc: &'static str, path: &'static str| {
        let gw = &gw;
        async move {
            gw.send(done(
                get(gw, "app.test", path).header("accept-encoding", enc),
            ))
            .await
        }
    };
    let gz = fetch("gzip", "/").await;
    assert_eq!(gz.headers["content-encoding"], "gzip");
    assert!(gz.body.len() < text.len() / 5, "{} bytes", gz.body.len());
    let mut out = String::new();
    flate2::read::GzDecoder::new(&gz.body[..])
        .read_to_string(&mut out)
        .expect("gunzip");
    assert_eq!(out, text);

    let br = fetch("br;q=1, gzip;q=0.5", "/").await;
    assert_eq!(br.headers["content-encoding"], "br");
    let mut out = Vec::new();
    brotli::Decompressor::new(&br.body[..], 4096)
        .read_to_end(&mut out)
        .expect("unbrotli");
    assert_eq!(out, text.as_bytes());

    let zs = fetch("zstd", "/").await;
    assert_eq!(zs.headers["content-encoding"], "zstd");
    assert_eq!(
        zstd::decode_all(&zs.body[..]).expect("unzstd"),
        text.as_bytes()
    );

    let small = fetch("gzip", "/small").await;
    assert!(small.headers.get("content-encoding").is_none());
    assert_eq!(small.text(), "tiny");
    let plain = fetch("identity", "/").await;
    assert!(plain.headers.get("content-encoding").is_none());
    assert_eq!(plain.text(), text);
}

#[tokio::test]
async fn errors_fetch_a_page_from_another_service() {
    let failing = Backend::serve(|req: Request<Incoming>| async move {
        let status = match req.uri().path() {
            "/missing" => StatusCode::NOT_FOUND,
            "/teapot" => StatusCode::IM_A_TEAPOT,
            _ => StatusCode::OK,
        };
        let mut r = http::Response::new(Full::new(Bytes::from_static(b"backend body")));
        *r.status_mut() = status;
        r
    })
    .await;
    let pages = Backend::echo("pages").await;
    let defs = format!(
        "[http.middlewares.err.errors]\nstatus = [\"404\", \"418\"]\nservice = \"pages\"\nquery = \"/{{status}}.html?from={{url}}&was={{originalStatus}}\"\nstatusRewrites = {{ \"418\" = 400 }}\n\
         [http.services.pages.loadBalancer]\n[[http.services.pages.loadBalancer.servers]]\nurl = \"{}\"\n",
        pages.url()
    );
    let gw = start(&config(&["err"], &failing.url(), &defs), &[]).await;
    let got = gw
        .send(done(
            get(&gw, "app.test", "/missing").header("x-trace", "t1"),
        ))
        .await;
    assert_eq!(got.status, StatusCode::NOT_FOUND);
    let seen = got.seen();
    assert_eq!(seen.backend, "pages");
    assert_eq!(seen.method, "GET");
    assert_eq!(
        seen.uri,
        "/404.html?from=http%3A%2F%2Fapp.test%2Fmissing&was=404"
    );
    assert_eq!(
        seen.header("x-trace"),
        Some("t1"),
        "request headers go to the page service"
    );
    let got = gw.get("app.test", "/teapot").await;
    assert_eq!(got.status, StatusCode::BAD_REQUEST);
    assert!(
        got.seen().uri.starts_with("/400.html?"),
        "{}",
        got.seen().uri
    );
    let ok = gw.get("app.test", "/fine").await;
    assert_eq!(
        (ok.status, ok.text().as_str()),
        (StatusCode::OK, "backend body")
    );
}

#[tokio::test]
async fn chains_run_in_order_and_may_nest() {
    let b = Backend::echo("b").await;
    let defs = r#"
[http.middlewares.outer.chain]
middlewares = ["strip", "inner"]
[http.middlewares.inner.chain]
middlewares = ["tag", "add"]
[http.middlewares.strip.stripPrefix]
prefixes = ["/api"]
[http.middlewares.tag.headers]
customRequestHeaders = { X-Chained = "yes" }
[http.middlewares.add.addPrefix]
prefix = "/v2"
"#;
    let gw = start(&config(&["outer"], &b.url(), defs), &[]).await;
    let seen = gw.get("app.test", "/api/items").await.seen();
    assert_eq!(seen.uri, "/v2/items", "strip first, then add");
    assert_eq!(seen.header("x-chained"), Some("yes"));
    assert_eq!(seen.header("x-forwarded-prefix"), Some("/api"));
}

// === bad input ===

#[tokio::test]
async fn bad_middlewares_disable_only_their_routers_and_say_why() {
    let b = Backend::echo("b").await;
    let cases: &[(&str, &str, &str)] = &[
        (
            "regex",
            "[http.middlewares.m_regex.replacePathRegex]\nregex = \"/(unclosed\"\nreplacement = \"/\"\n",
            "regex: invalid regex",
        ),
        (
            "kind",
            "[http.middlewares.m_kind.stripPrefixes]\nprefixes = [\"/a\"]\n",
            "unknown middleware type `stripPrefixes`",
        ),
        (
            "option",
            "[http.middlewares.m_option.stripPrefix]\nprefixs = [\"/a\"]\n",
            "stripPrefix",
        ),
        (
            "htpasswd",
            "[http.middlewares.m_htpasswd.basicAuth]\nusers = [\"ann:{SHA}87u9ZqY9S/F0eUBXjsPQEDUw4h0=\", \"bob-no-hash\"]\n",
            "users: line 2",
        ),
        (
            "rate",
            "[http.middlewares.m_rate.rateLimit]\naverage = 0\n",
            "average",
        ),
        (
            "cycle",
            "[http.middlewares.m_cycle.chain]\nmiddlewares = [\"m_cycle2\"]\n[http.middlewares.m_cycle2.chain]\nmiddlewares = [\"m_cycle\"]\n",
            "chain cycle",
        ),
        ("missing", "", "does not exist"),
    ];
    let mut conf = config(&[], &b.url(), "");
    for (name, defs, _) in cases {
        conf.push_str(defs);
        conf.push_str(&format!(
            "[http.routers.r_{name}]\nrule = \"Host(`{name}.test`)\"\nservice = \"app\"\nmiddlewares = [\"m_{name}\"]\n"
        ));
    }
    let gw = start(&conf, &[]).await;
    assert_eq!(
        gw.get("app.test", "/").await.status,
        StatusCode::OK,
        "other routers keep working"
    );
    for (name, _, _) in cases {
        assert_eq!(
            gw.get(&format!("{name}.test"), "/").await.status,
            StatusCode::NOT_FOUND,
            "{name}"
        );
    }
    eventually(WAIT, "errors logged", || async {
        let log = gw.log();
        cases.iter().all(|(name, _, why)| {
            log.lines().any(|l| {
                // The router, then where the reference is written, then
                // the middleware's problem.
                l.contains(&format!("router r_{name}@file: "))
                    && l.contains("dynamic.toml:")
                    && l.contains(&format!("middleware `m_{name}@file`"))
                    && l.contains(why)
            })
        })
    })
    .await;
    // A fix brings the router back.
    gw.rewrite(&conf.replace("average = 0", "average = 5"));
    eventually(WAIT, "fixed router", || async {
        gw.get("rate.test", "/").await.status == StatusCode::OK
    })
    .await;
}

// === entry-point middlewares ===

/// `Basic` credentials for bob, whose password is hunter2.
fn bob() -> String {
    use base64::Engine as _;
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("bob:hunter2")
    )
}

#[tokio::test]
async fn entry_point_middlewares_run_before_every_routers_own() {
    let b = Backend::echo("b").await;
    // The router's own middleware would let a request through if it ran
    // first: it writes valid credentials.
    let defs = format!(
        r#"
[http.middlewares.auth.basicAuth]
users = ["bob:$apr1$Zx9mQ2aB$am5BKSoVjrs8gyWVDEIEm0"]
[http.middlewares.tag.headers]
customResponseHeaders = {{ X-Entry = "web" }}
[http.middlewares.creds.headers]
customRequestHeaders = {{ Authorization = "{}" }}
[http.routers.api]
rule = "Host(`api.test`)"
service = "api@internal"
"#,
        bob()
    );
    let gw = Gangway::with_file(
        &config(&["creds"], &b.url(), &defs),
        &[
            "--api=true",
            "--entryPoints.web.http.middlewares=tag@file,auth",
        ],
    )
    .await;
    eventually(WAIT, "configuration applied", || async {
        gw.get("plain.test", "/").await.status == StatusCode::UNAUTHORIZED
    })
    .await;
    let refused = gw.get("app.test", "/").await;
    assert_eq!(
        refused.status,
        StatusCode::UNAUTHORIZED,
        "the entry point's basicAuth runs before the router's own middleware"
    );
    assert_eq!(refused.headers["x-entry"], "web");
    let plain = gw
        .send(done(
            get(&gw, "plain.test", "/").header("authorization", bob()),
        ))
        .await;
    assert_eq!(plain.status, StatusCode::OK);
    assert_eq!(plain.headers["x-entry"], "web");

    let view = gw
        .send(done(
            get(&gw, "api.test", "/api/http/routers/app@file").header("authorization", bob()),
        ))
        .await;
    assert_eq!(view.status, StatusCode::OK, "{}", view.text());
    let view = json(&view);
    assert_eq!(
        view["middlewares"],
        serde_json::json!(["tag@file", "auth@file", "creds@file"])
    );
    assert_eq!(
        view["entryPointMiddlewares"],
        serde_json::json!({"web": ["tag@file", "auth@file"]})
    );
}

#[tokio::test]
async fn a_missing_entry_point_middleware_disables_the_routers_there() {
    let b = Backend::echo("b").await;
    let gw = Gangway::with_file(
        &config(&[], &b.url(), ""),
        &["--entryPoints.web.http.middlewares=ghost"],
    )
    .await;
    let named = |gw: &Gangway| {
        gw.log()
            .lines()
            .any(|l| l.contains("router plain@file") && l.contains("`ghost@file`: does not exist"))
    };
    eventually(WAIT, "the router disabled with the reason", || async {
        named(&gw)
    })
    .await;
    assert_eq!(
        gw.get("plain.test", "/").await.status,
        StatusCode::NOT_FOUND
    );
}
