//! Headers across the proxy: X-Forwarded-* with and without trusted IPs,
//! hop-by-hop removal, passHostHeader.

use crate::support;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::Full;
use std::time::Duration;
use support::{Backend, Gangway, eventually};

fn spoofed(gw: &Gangway, host: &str) -> Request<Full<Bytes>> {
    Request::get(gw.url("/path?q=1"))
        .header("host", host)
        .header("x-forwarded-for", "203.0.113.7")
        .header("x-forwarded-proto", "https")
        .header("x-forwarded-host", "evil.test")
        .header("x-real-ip", "203.0.113.7")
        .header("forwarded", "for=203.0.113.7")
        .header("connection", "keep-alive, x-drop-me")
        .header("x-drop-me", "secret")
        .header("keep-alive", "timeout=5")
        .header("proxy-authorization", "Basic Zm9vOmJhcg==")
        .header("te", "trailers")
        .header("x-kept", "yes")
        .body(Full::default())
        .unwrap()
}

#[tokio::test]
async fn untrusted_clients_cannot_spoof_forwarded_headers() {
    let b = Backend::echo("b").await;
    let gw = Gangway::with_file(
        &support::one_route("app", "Host(`app.test`)", &[&b.url()]),
        &[],
    )
    .await;
    eventually(Duration::from_secs(5), "routed", || async {
        gw.get("app.test", "/").await.status == StatusCode::OK
    })
    .await;
    let got = gw.send(spoofed(&gw, "app.test:8080")).await;
    assert_eq!(got.status, StatusCode::OK);
    let seen = got.seen();
    assert_eq!(seen.header("x-forwarded-for"), Some("127.0.0.1"));
    assert_eq!(seen.header("x-real-ip"), Some("127.0.0.1"));
    assert_eq!(seen.header("x-forwarded-proto"), Some("http"));
    assert_eq!(seen.header("x-forwarded-host"), Some("app.test:8080"));
    assert_eq!(seen.header("x-forwarded-port"), Some("8080"));
    assert!(
        seen.header("x-forwarded-server")
            .is_some_and(|s| !s.is_empty())
    );
    assert_eq!(seen.header("forwarded"), None);
    // Hop-by-hop headers stop at the proxy; TE: trailers and end-to-end headers pass.
    assert_eq!(seen.header("x-drop-me"), None);
    assert_eq!(seen.header("keep-alive"), None);
    assert_eq!(seen.header("proxy-authorization"), None);
    assert_eq!(seen.header("te"), Some("trailers"));
    assert_eq!(seen.header("x-kept"), Some("yes"));
    assert_eq!(
        seen.header("host"),
        Some("app.test:8080"),
        "passHostHeader defaults to true"
    );
    assert_eq!(seen.uri, "/path?q=1");
    // Hop-by-hop headers from the server stop too.
    assert!(got.headers.get("keep-alive").is_none());
    assert_eq!(
        got.headers.get("x-backend").map(|v| v.as_bytes()),
        Some(&b"b"[..])
    );
}

#[tokio::test]
async fn trusted_clients_forwarded_headers_are_kept_and_extended() {
    let b = Backend::echo("b").await;
    let gw = Gangway::with_file(
        &support::one_route("app", "Host(`app.test`)", &[&b.url()]),
        &["--entryPoints.web.forwardedHeaders.trustedIPs=127.0.0.0/8"],
    )
    .await;
    eventually(Duration::from_secs(5), "routed", || async {
        gw.get("app.test", "/").await.status == StatusCode::OK
    })
    .await;
    let seen = gw.send(spoofed(&gw, "app.test")).await.seen();
    assert_eq!(
        seen.header("x-forwarded-for"),
        Some("203.0.113.7, 127.0.0.1")
    );
    assert_eq!(seen.header("x-real-ip"), Some("203.0.113.7"));
    assert_eq!(seen.header("x-forwarded-proto"), Some("https"));
    assert_eq!(seen.header("x-forwarded-host"), Some("evil.test"));
    assert_eq!(seen.header("forwarded"), Some("for=203.0.113.7"));
    // No port in the Host: the default port of the trusted proxy's scheme.
    assert_eq!(seen.header("x-forwarded-port"), Some("443"));
    // A trusted proxy's own X-Forwarded-Port is kept.
    let mut req = spoofed(&gw, "app.test");
    req.headers_mut()
        .insert("x-forwarded-port", http::HeaderValue::from_static("8443"));
    let seen = gw.send(req).await.seen();
    assert_eq!(seen.header("x-forwarded-port"), Some("8443"));
}

#[tokio::test]
async fn x_forwarded_port_is_the_hosts_port_else_the_schemes_not_the_listening_port() {
    let b = Backend::echo("b").await;
    let tls_port = support::free_port();
    let gw = Gangway::with_file(
        &support::one_route("app", "Host(`app.test`)", &[&b.url()]),
        &[
            &format!("--entryPoints.websecure.address=127.0.0.1:{tls_port}"),
            "--entryPoints.websecure.http.tls",
        ],
    )
    .await;
    eventually(Duration::from_secs(5), "routed", || async {
        gw.get("app.test", "/").await.status == StatusCode::OK
    })
    .await;
    // gangway listens on an ephemeral port, as behind a port mapping
    // (`8000:80`): the application must see the port the client used.
    let port = |got: support::Got| got.seen().header("x-forwarded-port").map(str::to_owned);
    assert_eq!(port(gw.get("app.test", "/").await).as_deref(), Some("80"));
    assert_eq!(
        port(gw.get("app.test:8000", "/").await).as_deref(),
        Some("8000")
    );
    let seen_over_tls = |host: Option<&'static str>, h2: bool| async move {
        let got = support::tls::TlsClient::insecure()
            .get(tls_port, "app.test", host, "/", h2)
            .await
            .expect("TLS request");
        assert_eq!(got.status, StatusCode::OK);
        let seen: support::Seen = serde_json::from_slice(&got.body).expect("an echo");
        seen.header("x-forwarded-port").map(str::to_owned)
    };
    assert_eq!(seen_over_tls(None, false).await.as_deref(), Some("443"));
    assert_eq!(seen_over_tls(None, true).await.as_deref(), Some("443"));
    assert_eq!(
        seen_over_tls(Some("app.test:8443"), false).await.as_deref(),
        Some("8443")
    );
    assert_eq!(
        seen_over_tls(Some("app.test:8443"), true).await.as_deref(),
        Some("8443")
    );
}

#[tokio::test]
async fn pass_host_header_false_sends_the_servers_own_host() {
    let b = Backend::echo("b").await;
    let conf = support::one_route("app", "Host(`app.test`)", &[&b.url()]).replace(
        "[http.services.app.loadBalancer]\n",
        "[http.services.app.loadBalancer]\npassHostHeader = false\n",
    );
    let gw = Gangway::with_file(&conf, &[]).await;
    eventually(Duration::from_secs(5), "routed", || async {
        gw.get("app.test", "/").await.status == StatusCode::OK
    })
    .await;
    let seen = gw.get("app.test", "/").await.seen();
    assert_eq!(seen.header("host"), Some(b.addr.to_string().as_str()));
    assert_eq!(seen.header("x-forwarded-host"), Some("app.test"));
}
