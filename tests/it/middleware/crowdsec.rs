//! The CrowdSec bouncer plugin, built in, against CrowdSec's real Local API:
//! a client speaking from a banned address (the client socket bound to
//! 127.0.0.2) gets the plugin's answer while others are served, in live
//! and stream mode; decisions added or deleted while gangway runs take
//! effect within the update interval; a stopped LAPI is handled as the
//! plugin's options say. With `crowdsecAppsecEnabled`, the requests the
//! decisions let through are judged by an AppSec component (a stand-in,
//! see `support::crowdsec::AppsecStandIn`) before they reach the backend.

use crate::support;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body::Frame;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::crowdsec::{self, AppsecStandIn, Lapi};
use support::{Backend, Gangway, eventually, free_port};

const MODULE: &str = "github.com/maxlerebourg/crowdsec-bouncer-traefik-plugin";
/// Long enough for a pull every second and a slow machine.
const WAIT: Duration = Duration::from_secs(15);

/// The static flags declaring the plugin under the key `csb`.
fn declare() -> [String; 2] {
    [
        format!("--experimental.plugins.csb.moduleName={MODULE}"),
        "--experimental.plugins.csb.version=v1.4.5".to_owned(),
    ]
}

/// A router for `host` through a bouncer middleware named after the host
/// with `options` (TOML lines) besides the LAPI's address and key.
fn routed(host: &str, backend: &Backend, lapi: &Lapi, options: &str) -> String {
    let lapi_options = format!(
        "crowdsecLapiHost = \"127.0.0.1:{port}\"\ncrowdsecLapiKey = \"{key}\"\n{options}",
        port = lapi.port,
        key = lapi.key,
    );
    router(host, backend, &lapi_options)
}

/// A router for `host` through an enabled bouncer middleware named after
/// the host with `options` (TOML lines).
fn router(host: &str, backend: &Backend, options: &str) -> String {
    let name = host.replace('.', "-");
    format!(
        "[http.routers.{name}]\nrule = \"Host(`{host}`)\"\nservice = \"{name}\"\nmiddlewares = [\"{name}\"]\n\
         [http.services.{name}.loadBalancer]\n[[http.services.{name}.loadBalancer.servers]]\nurl = \"{url}\"\n\
         [http.middlewares.{name}.plugin.csb]\nenabled = \"true\"\n{options}\n",
        url = backend.url(),
    )
}

/// GET `host` from a client socket bound to `source`: status and body.
async fn get_from(gw: &Gangway, source: &str, host: &str) -> (StatusCode, http::HeaderMap, String) {
    let req = Request::get("/")
        .header("host", host)
        .body(Full::<Bytes>::default())
        .unwrap();
    send_from(gw, source, req).await
}

/// Sends `req` to gangway from a client socket bound to `source`: status,
/// headers and body.
async fn send_from(
    gw: &Gangway,
    source: &str,
    req: Request<Full<Bytes>>,
) -> (StatusCode, http::HeaderMap, String) {
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket
        .bind(format!("{source}:0").parse().unwrap())
        .expect("bind the client address");
    let stream = socket
        .connect(format!("127.0.0.1:{}", gw.port).parse().unwrap())
        .await
        .expect("connect to gangway");
    let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake");
    tokio::spawn(conn);
    let resp = send.send_request(req).await.expect("answer from gangway");
    let (parts, body) = resp.into_parts();
    let body = body.collect().await.expect("body").to_bytes();
    (
        parts.status,
        parts.headers,
        String::from_utf8_lossy(&body).into_owned(),
    )
}

async fn status_from(gw: &Gangway, source: &str, host: &str) -> StatusCode {
    get_from(gw, source, host).await.0
}

/// Waits until `source` gets `want` from `host`.
async fn answers(gw: &Gangway, source: &str, host: &str, want: StatusCode) {
    let what = format!("{source} gets {want} from {host}");
    eventually(WAIT, &what, || async {
        status_from(gw, source, host).await == want
    })
    .await;
}

#[tokio::test]
async fn live_mode_refuses_a_banned_address_and_serves_the_others() {
    let Some(root) = crowdsec::available("live_mode") else {
        return;
    };
    let lapi = Lapi::start(root).await;
    lapi.ban("127.0.0.2");
    let app = Backend::echo("app").await;
    let page = lapi.scratch().join("ban.html");
    std::fs::write(
        &page,
        "<h1>{{ .ClientIP }} is refused: {{ .RemediationReason }}</h1>",
    )
    .unwrap();
    let options = format!(
        "crowdsecMode = \"live\"\ndefaultDecisionSeconds = \"1\"\nbanFilePath = \"{}\"\n\
         remediationHeadersCustomName = \"cs-remediation\"",
        page.display()
    );
    let dynamic = routed("live.test", &app, &lapi, &options);
    let gw = Gangway::with_file(&dynamic, &declare().each_ref().map(String::as_str)).await;

    answers(&gw, "127.0.0.1", "live.test", StatusCode::OK).await;
    let (status, headers, body) = get_from(&gw, "127.0.0.2", "live.test").await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body, "<h1>127.0.0.2 is refused: LAPI</h1>");
    assert_eq!(headers["content-type"], "text/html; charset=utf-8");
    assert_eq!(headers["cs-remediation"], "ban");

    // Answers are cached for defaultDecisionSeconds (1s): a change at the
    // LAPI shows within it.
    lapi.unban("127.0.0.2");
    lapi.ban("127.0.0.3");
    answers(&gw, "127.0.0.2", "live.test", StatusCode::OK).await;
    answers(&gw, "127.0.0.3", "live.test", StatusCode::FORBIDDEN).await;
}

#[tokio::test]
async fn stream_mode_follows_decisions_added_and_deleted_while_running() {
    let Some(root) = crowdsec::available("stream_mode") else {
        return;
    };
    let lapi = Lapi::start(root).await;
    lapi.ban("127.0.0.2");
    let app = Backend::echo("app").await;
    let options =
        "crowdsecMode = \"stream\"\nupdateIntervalSeconds = \"1\"\nremediationStatusCode = \"429\"";
    let dynamic = routed("stream.test", &app, &lapi, options);
    let gw = Gangway::with_file(&dynamic, &declare().each_ref().map(String::as_str)).await;

    // Until the first pull, streamStartupBlock refuses every address.
    answers(&gw, "127.0.0.1", "stream.test", StatusCode::OK).await;
    let (status, _, body) = get_from(&gw, "127.0.0.1", "stream.test").await;
    assert!(body.contains("\"backend\":\"app\""), "{status} {body}");
    let banned = status_from(&gw, "127.0.0.2", "stream.test").await;
    assert_eq!(banned, StatusCode::TOO_MANY_REQUESTS);

    lapi.ban("127.0.0.3");
    answers(
        &gw,
        "127.0.0.3",
        "stream.test",
        StatusCode::TOO_MANY_REQUESTS,
    )
    .await;
    lapi.unban("127.0.0.2");
    answers(&gw, "127.0.0.2", "stream.test", StatusCode::OK).await;
    assert_eq!(
        status_from(&gw, "127.0.0.3", "stream.test").await,
        StatusCode::TOO_MANY_REQUESTS
    );
}

#[tokio::test]
async fn a_stopped_lapi_is_handled_as_the_options_say() {
    let Some(root) = crowdsec::available("stopped_lapi") else {
        return;
    };
    let mut lapi = Lapi::start(root).await;
    lapi.ban("127.0.0.2");
    let app = Backend::echo("app").await;
    let stream =
        "crowdsecMode = \"stream\"\nupdateIntervalSeconds = \"1\"\nhttpTimeoutSeconds = \"1\"";
    // updateMaxFailure 0 (the default): the first failed pull refuses
    // every address not known to be clean; -1: keep answering from the
    // decisions already pulled.
    let dynamic = [
        routed("strict.test", &app, &lapi, stream),
        routed(
            "lenient.test",
            &app,
            &lapi,
            &format!("{stream}\nupdateMaxFailure = \"-1\""),
        ),
        routed(
            "live.test",
            &app,
            &lapi,
            "crowdsecMode = \"live\"\nhttpTimeoutSeconds = \"1\"",
        ),
    ]
    .concat();
    let gw = Gangway::with_file(&dynamic, &declare().each_ref().map(String::as_str)).await;
    for host in ["strict.test", "lenient.test", "live.test"] {
        answers(&gw, "127.0.0.1", host, StatusCode::OK).await;
        answers(&gw, "127.0.0.2", host, StatusCode::FORBIDDEN).await;
    }

    lapi.stop();
    answers(&gw, "127.0.0.1", "strict.test", StatusCode::FORBIDDEN).await;
    // The plugin's live mode refuses when the LAPI cannot be asked.
    answers(&gw, "127.0.0.4", "live.test", StatusCode::FORBIDDEN).await;
    assert_eq!(
        status_from(&gw, "127.0.0.1", "lenient.test").await,
        StatusCode::OK
    );
    assert_eq!(
        status_from(&gw, "127.0.0.2", "lenient.test").await,
        StatusCode::FORBIDDEN
    );

    lapi.restart().await;
    answers(&gw, "127.0.0.1", "strict.test", StatusCode::OK).await;
    answers(&gw, "127.0.0.4", "live.test", StatusCode::OK).await;
    assert_eq!(
        status_from(&gw, "127.0.0.2", "strict.test").await,
        StatusCode::FORBIDDEN
    );
}

// === AppSec ===

/// The bouncer key the AppSec stand-in expects when no LAPI gives one.
const KEY: &str = "appsec-test-key";

/// A ban page showing why and whom the bouncer refused.
fn ban_page(dir: &tempfile::TempDir) -> String {
    let page = dir.path().join("ban.txt");
    std::fs::write(&page, "{{ .RemediationReason }} {{ .ClientIP }}").unwrap();
    format!(
        "banFilePath = \"{}\"\nremediationHeadersCustomName = \"cs-remediation\"",
        page.display()
    )
}

/// Bouncer options for appsec mode (no LAPI) asking the component at
/// `appsec_host`, with more `options`.
fn appsec_only(appsec_host: &str, options: &str) -> String {
    format!(
        "crowdsecMode = \"appsec\"\ncrowdsecLapiKey = \"{KEY}\"\ncrowdsecAppsecEnabled = \"true\"\n\
         crowdsecAppsecHost = \"{appsec_host}\"\n{options}"
    )
}

/// A backend that answers with the method, target and body it received,
/// and keeps `METHOD target` of each request.
async fn recording_backend() -> (Backend, Arc<Mutex<Vec<String>>>) {
    let reached = Arc::new(Mutex::new(Vec::new()));
    let record = reached.clone();
    let backend = Backend::serve(move |req: Request<hyper::body::Incoming>| {
        let record = record.clone();
        async move {
            let line = format!("{} {}", req.method(), req.uri());
            let body = req.into_body().collect().await.expect("body").to_bytes();
            record.lock().expect("record").push(line.clone());
            let text = format!("{line}\n{}", String::from_utf8_lossy(&body));
            http::Response::new(Full::new(Bytes::from(text)))
        }
    })
    .await;
    (backend, reached)
}

/// A request as a browser's would arrive, with a user agent and a header
/// of the application's own.
fn request(method: &str, host: &str, target: &str, body: &str) -> Request<Full<Bytes>> {
    Request::builder()
        .method(method)
        .uri(target)
        .header("host", host)
        .header("user-agent", "appsec-test/1.0")
        .header("x-app-trace", "t-1")
        .body(Full::new(Bytes::from(body.to_owned())))
        .unwrap()
}

#[tokio::test]
async fn appsec_refuses_attacks_and_clean_requests_reach_the_backend_whole() {
    let waf = AppsecStandIn::start(KEY).await;
    let (app, reached) = recording_backend().await;
    let scratch = tempfile::tempdir().unwrap();
    let page = ban_page(&scratch);
    let dynamic = [
        router("waf.test", &app, &appsec_only(&waf.host(), &page)),
        router(
            "short.test",
            &app,
            &appsec_only(&waf.host(), "crowdsecAppsecBodyLimit = \"8\""),
        ),
    ]
    .concat();
    let gw = Gangway::with_file(&dynamic, &declare().each_ref().map(String::as_str)).await;
    answers(&gw, "127.0.0.1", "waf.test", StatusCode::OK).await;

    // A clean request without a body: the component is asked with a GET
    // carrying the client's headers and the protocol's own.
    let (status, _, body) = send_from(
        &gw,
        "127.0.0.1",
        request("GET", "waf.test", "/docs?page=2", ""),
    )
    .await;
    assert_eq!(
        (status, body.as_str()),
        (StatusCode::OK, "GET /docs?page=2\n")
    );
    let asked = waf.asked().pop().expect("AppSec asked");
    assert_eq!((asked.method.as_str(), &asked.body[..]), ("GET", &b""[..]));
    for (header, want) in [
        ("x-crowdsec-appsec-ip", "127.0.0.1"),
        ("x-crowdsec-appsec-uri", "/docs?page=2"),
        ("x-crowdsec-appsec-host", "waf.test"),
        ("x-crowdsec-appsec-verb", "GET"),
        ("x-crowdsec-appsec-api-key", KEY),
        ("x-crowdsec-appsec-user-agent", "appsec-test/1.0"),
        ("x-app-trace", "t-1"),
    ] {
        assert_eq!(asked.header(header), want, "{header}");
    }

    // A clean request with a body: forwarded with a POST, and the backend
    // still gets all of it.
    let form = "user=alice&password=s3cret";
    let (status, _, body) = send_from(
        &gw,
        "127.0.0.1",
        request("POST", "waf.test", "/login", form),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body, format!("POST /login\n{form}"));
    let asked = waf.asked().pop().expect("AppSec asked");
    assert_eq!(asked.method, "POST");
    assert_eq!(asked.body, form.as_bytes());
    assert_eq!(asked.header("x-crowdsec-appsec-verb"), "POST");
    assert_eq!(asked.header("x-crowdsec-appsec-uri"), "/login");

    // Attacks, in the target and in the body: the bouncer's ban answer,
    // and the backend never sees them.
    let attacks = [
        request("GET", "waf.test", "/static/..;/etc/passwd", ""),
        request("POST", "waf.test", "/search", "q=' OR 1=1 --"),
    ];
    for attack in attacks {
        let what = format!("{} {}", attack.method(), attack.uri());
        let (status, headers, body) = send_from(&gw, "127.0.0.1", attack).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{what}: {body}");
        assert_eq!(body, "APPSEC 127.0.0.1", "{what}");
        assert_eq!(headers["cs-remediation"], "ban", "{what}");
        assert!(
            !reached.lock().unwrap().contains(&what),
            "{what} reached the backend"
        );
    }

    // crowdsecAppsecBodyLimit: the component sees the first bytes only,
    // the backend the whole body.
    let long = "0123456789abcdef";
    let (status, _, body) = send_from(
        &gw,
        "127.0.0.1",
        request("PUT", "short.test", "/upload", long),
    )
    .await;
    assert_eq!(
        (status, body),
        (StatusCode::OK, format!("PUT /upload\n{long}"))
    );
    let asked = waf.asked().pop().expect("AppSec asked");
    assert_eq!(
        (asked.method.as_str(), &asked.body[..]),
        ("POST", &b"01234567"[..])
    );
}

#[tokio::test]
async fn appsec_is_asked_only_once_the_lapi_lets_the_address_through() {
    let Some(root) = crowdsec::available("appsec_after_lapi") else {
        return;
    };
    let lapi = Lapi::start(root).await;
    lapi.ban("127.0.0.2");
    let waf = AppsecStandIn::start(&lapi.key).await;
    let app = Backend::echo("app").await;
    let scratch = tempfile::tempdir().unwrap();
    let appsec = format!(
        "crowdsecAppsecEnabled = \"true\"\ncrowdsecAppsecHost = \"{}\"\n{}",
        waf.host(),
        ban_page(&scratch)
    );
    // Stream mode answers from memory, yet with AppSec on it still waits
    // for the component's verdict.
    let dynamic = [
        routed("live.test", &app, &lapi, &appsec),
        routed(
            "stream.test",
            &app,
            &lapi,
            &format!("{appsec}\ncrowdsecMode = \"stream\"\nupdateIntervalSeconds = \"1\""),
        ),
    ]
    .concat();
    let gw = Gangway::with_file(&dynamic, &declare().each_ref().map(String::as_str)).await;
    for host in ["live.test", "stream.test"] {
        answers(&gw, "127.0.0.1", host, StatusCode::OK).await;
        answers(&gw, "127.0.0.2", host, StatusCode::FORBIDDEN).await;
    }

    let before = waf.asked().len();
    for host in ["live.test", "stream.test"] {
        let (status, _, body) = get_from(&gw, "127.0.0.2", host).await;
        assert_eq!(
            (status, body.as_str()),
            (StatusCode::FORBIDDEN, "LAPI 127.0.0.2")
        );
    }
    assert_eq!(
        waf.asked().len(),
        before,
        "AppSec was asked about a banned address"
    );

    for host in ["live.test", "stream.test"] {
        let attack = request("GET", host, "/?file=../../etc/passwd", "");
        let (status, _, body) = send_from(&gw, "127.0.0.1", attack).await;
        assert_eq!(
            (status, body.as_str()),
            (StatusCode::FORBIDDEN, "APPSEC 127.0.0.1")
        );
    }
    let asked = waf.asked().pop().expect("AppSec asked");
    assert_eq!(asked.header("x-crowdsec-appsec-api-key"), lapi.key);
    assert_eq!(asked.header("x-crowdsec-appsec-host"), "stream.test");
}

#[tokio::test]
async fn appsec_failures_refuse_unless_the_options_let_requests_through() {
    let failing = AppsecStandIn::answering(StatusCode::INTERNAL_SERVER_ERROR).await;
    let waf = AppsecStandIn::start(KEY).await;
    let nowhere = format!("127.0.0.1:{}", free_port());
    let app = Backend::echo("app").await;
    let (failing_at, waf_at) = (failing.host(), waf.host());
    let routers = [
        ("failed.test", &failing_at, ""),
        (
            "failed-open.test",
            &failing_at,
            "crowdsecAppsecFailureBlock = \"false\"",
        ),
        ("gone.test", &nowhere, "httpTimeoutSeconds = \"1\""),
        (
            "gone-open.test",
            &nowhere,
            "httpTimeoutSeconds = \"1\"\ncrowdsecAppsecUnreachableBlock = \"false\"",
        ),
        // As the plugin: only a 500 is a failure the options may forgive;
        // a 401 (a wrong key) always refuses.
        (
            "wrong-key.test",
            &waf_at,
            "crowdsecAppsecKey = \"not-the-key\"\ncrowdsecAppsecFailureBlock = \"false\"",
        ),
    ];
    let dynamic: String = routers
        .iter()
        .map(|(host, at, options)| router(host, &app, &appsec_only(at, options)))
        .collect();
    let gw = Gangway::with_file(&dynamic, &declare().each_ref().map(String::as_str)).await;
    answers(&gw, "127.0.0.1", "failed-open.test", StatusCode::OK).await;
    assert!(
        !failing.asked().is_empty(),
        "the failing component was not asked"
    );

    for (host, want) in [
        ("failed.test", StatusCode::FORBIDDEN),
        ("gone.test", StatusCode::FORBIDDEN),
        ("gone-open.test", StatusCode::OK),
        ("wrong-key.test", StatusCode::FORBIDDEN),
    ] {
        assert_eq!(status_from(&gw, "127.0.0.1", host).await, want, "{host}");
    }
    let asked = waf.asked().pop().expect("AppSec asked");
    assert_eq!(asked.header("x-crowdsec-appsec-api-key"), "not-the-key");
}

/// Sends `req` to gangway over HTTP/2 without TLS (prior knowledge): status
/// and body.
async fn send_h2(gw: &Gangway, req: Request<BoxBody<Bytes, Infallible>>) -> (StatusCode, String) {
    let stream = tokio::net::TcpStream::connect(("127.0.0.1", gw.port))
        .await
        .expect("connect to gangway");
    let (mut send, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .expect("handshake");
    tokio::spawn(conn);
    let resp = send.send_request(req).await.expect("answer from gangway");
    let status = resp.status();
    let body = resp.into_body().collect().await.expect("body").to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// An HTTP/2 `POST` whose body comes in two frames with no length, as a
/// gRPC stream's does.
fn streamed_post(host: &str) -> Request<BoxBody<Bytes, Infallible>> {
    let frames =
        ["part one, ", "part two"].map(|p| Ok(Frame::data(Bytes::from_static(p.as_bytes()))));
    let body = StreamBody::new(futures_util::stream::iter(frames)).boxed();
    Request::post(format!("http://{host}/upload"))
        .body(body)
        .unwrap()
}

#[tokio::test]
async fn appsec_refuses_an_http2_body_it_cannot_read_first_unless_told_otherwise() {
    let waf = AppsecStandIn::start(KEY).await;
    let (app, reached) = recording_backend().await;
    let dynamic = [
        router("h2.test", &app, &appsec_only(&waf.host(), "")),
        router(
            "h2-open.test",
            &app,
            &appsec_only(&waf.host(), "crowdsecAppsecUnreadableBodyBlock = \"false\""),
        ),
    ]
    .concat();
    let gw = Gangway::with_file(&dynamic, &declare().each_ref().map(String::as_str)).await;
    answers(&gw, "127.0.0.1", "h2-open.test", StatusCode::OK).await;

    // Waiting for such a body's end could hold the request as long as the
    // stream lasts: by default it is refused before anything is forwarded.
    let (status, body) = send_h2(&gw, streamed_post("h2.test")).await;
    assert_eq!((status, body.as_str()), (StatusCode::FORBIDDEN, ""));
    assert!(
        !reached
            .lock()
            .unwrap()
            .iter()
            .any(|r| r.starts_with("POST"))
    );
    // A bodiless HTTP/2 request is not such a body.
    let get = Request::get("http://h2.test/")
        .body(Full::default().boxed())
        .unwrap();
    assert_eq!(send_h2(&gw, get).await.0, StatusCode::OK);

    // Told otherwise, only the headers are forwarded, and the body streams
    // on to the backend untouched.
    let (status, body) = send_h2(&gw, streamed_post("h2-open.test")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body, "POST /upload\npart one, part two");
    let asked = waf.asked().pop().expect("AppSec asked");
    assert_eq!((asked.method.as_str(), &asked.body[..]), ("GET", &b""[..]));
    assert_eq!(asked.header("x-crowdsec-appsec-verb"), "POST");
    assert_eq!(asked.header("x-crowdsec-appsec-host"), "h2-open.test");
}
