//! The CrowdSec bouncer plugin, built in, against CrowdSec's real Local API:
//! a client speaking from a banned address (the client socket bound to
//! 127.0.0.2) gets the plugin's answer while others are served, in live
//! and stream mode; decisions added or deleted while gangway runs take
//! effect within the update interval; a stopped LAPI is handled as the
//! plugin's options say.

use crate::support;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use std::time::Duration;
use support::crowdsec::{self, Lapi};
use support::{Backend, Gangway, eventually};

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
    let name = host.replace('.', "-");
    format!(
        "[http.routers.{name}]\nrule = \"Host(`{host}`)\"\nservice = \"{name}\"\nmiddlewares = [\"{name}\"]\n\
         [http.services.{name}.loadBalancer]\n[[http.services.{name}.loadBalancer.servers]]\nurl = \"{url}\"\n\
         [http.middlewares.{name}.plugin.csb]\nenabled = \"true\"\ncrowdsecLapiHost = \"127.0.0.1:{port}\"\n\
         crowdsecLapiKey = \"{key}\"\n{options}\n",
        url = backend.url(),
        port = lapi.port,
        key = lapi.key,
    )
}

/// GET `host` from a client socket bound to `source`: status and body.
async fn get_from(gw: &Gangway, source: &str, host: &str) -> (StatusCode, http::HeaderMap, String) {
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
    let req = Request::get("/")
        .header("host", host)
        .body(Full::<Bytes>::default())
        .unwrap();
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
