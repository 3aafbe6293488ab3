//! The request path on raw bytes: the input is everything a client sends
//! on one plain-HTTP connection (HTTP/1, or HTTP/2 with prior knowledge),
//! served by gangway's own connection handling (`Proxy::serve_stream`: the
//! HTTP version told from the first bytes, the entry point's server
//! settings, validation, routing, middlewares) through an in-memory stream.
//! Routes lead to an internal echo service, through middlewares, and to a
//! server nobody listens on (127.0.0.1:1). The input's
//! length picks the entry point: as configured, redirecting to HTTPS, or
//! trusting forwarded headers.
//!
//! The path of the request line also goes through `normalize_path`, whose
//! output must be canonical: normalising it again changes nothing, and no
//! dot segment (or `//` when merged) is left for a rule to be fooled by.

#![no_main]

use bytes::Bytes;
use futures_util::future::BoxFuture;
use gangway::compile::{CompileContext, MetricsSettings, compile};
use gangway::config::Dynamic;
use gangway::config::format::{Format, parse_document};
use gangway::proxy::forwarded::TrustPolicy;
use gangway::proxy::validate::normalize_path;
use gangway::proxy::{EntryPointInfo, Proxy, Redirect};
use gangway::runtime::registries::StatsKind;
use gangway::runtime::{InternalService, Registries, RuntimeHandle};
use http::{HeaderValue, Request, Response};
use http_body_util::Full;
use libfuzzer_sys::fuzz_target;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Routers and middlewares the requests go through.
const ROUTES: &str = r#"
[http.routers.echo]
rule = "Host(`echo.test`) || PathPrefix(`/echo`)"
service = "echo@internal"

[http.routers.api]
rule = "Host(`api.test`) && PathPrefix(`/api`) && !Header(`X-Block`, `1`)"
service = "echo@internal"
middlewares = ["strip", "headers", "auth"]

[http.routers.gz]
rule = "Host(`gz.test`) && (Method(`GET`) || Query(`q`, `1`))"
service = "echo@internal"
middlewares = ["gz", "buffer", "allow", "limit"]

[http.routers.regex]
rule = "HostRegexp(`^[a-z]+\\.re\\.test$`) && PathRegexp(`^/v[0-9]+/`)"
service = "echo@internal"
middlewares = ["replace", "redirect"]

[http.routers.down]
rule = "Host(`down.test`)"
service = "down"

[http.services.down.loadBalancer]
servers = [{ url = "http://127.0.0.1:1" }]

[http.middlewares.strip.stripPrefix]
prefixes = ["/api"]

[http.middlewares.headers.headers.customRequestHeaders]
X-Added = "1"

[http.middlewares.auth.basicAuth]
# test:test, as an htpasswd {SHA} line (bcrypt would make each run slow).
users = ["test:{SHA}qUqP5cyxm6YcTAhz05Hph5gvu9M="]

[http.middlewares.gz.compress]

[http.middlewares.buffer.buffering]
maxRequestBodyBytes = 4096

[http.middlewares.allow.ipAllowList]
sourceRange = ["127.0.0.0/8"]

[http.middlewares.limit.rateLimit]
average = 1000
burst = 1000

[http.middlewares.replace.replacePathRegex]
regex = "^/v([0-9]+)/(.*)"
replacement = "/$2"

[http.middlewares.redirect.redirectRegex]
regex = "^http://([a-z]+)\\.re\\.test/old/(.*)"
replacement = "https://${1}.test/${2}"
"#;

/// Answers with the request's method, target and number of fields.
struct Echo;

impl InternalService for Echo {
    fn call(&self, req: Request<()>) -> BoxFuture<'static, Response<Full<Bytes>>> {
        let text = format!("{} {} {}", req.method(), req.uri(), req.headers().len());
        Box::pin(async move { Response::new(Full::new(Bytes::from(text))) })
    }
}

struct Harness {
    rt: tokio::runtime::Runtime,
    proxy: Arc<Proxy>,
    /// The same entry point three ways: as configured above, redirecting
    /// to HTTPS (`http.redirections`), and trusting everyone's forwarded
    /// headers (`forwardedHeaders.insecure`).
    entry_points: [Arc<EntryPointInfo>; 3],
}

fn harness() -> &'static Harness {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    HARNESS.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .expect("a tokio runtime");
        let dynamic: Dynamic =
            parse_document("routes", ROUTES, Format::Toml).expect("the routes parse");
        let (merged, _) = gangway::aggregate::merge([("file", &dynamic)]);
        let exporter = Arc::new(
            gangway::metrics::Exporter::new("gangway", &[0.1, 1.0]).expect("two buckets"),
        );
        let echo: Arc<dyn InternalService> = Arc::new(Echo);
        let ctx = CompileContext {
            entry_points: vec!["web".to_owned()],
            internal: BTreeMap::from([("echo@internal".to_owned(), echo)]),
            metrics: Some(MetricsSettings {
                exporter: exporter.clone(),
                routers: true,
                services: true,
            }),
            entry_point_tls: vec![None],
            cert_resolvers: Vec::new(),
            ..Default::default()
        };
        let registries = Registries::default();
        let runtime = compile(Arc::new(merged), &ctx, &registries);
        let errors = runtime.report.lines();
        assert!(errors.is_empty(), "the fuzz routes compile: {errors:?}");
        let entry_point = |redirect: Option<Redirect>, insecure: bool| {
            Arc::new(EntryPointInfo {
                name: "web".to_owned(),
                id: 0,
                trust: TrustPolicy {
                    trusted: Vec::new(),
                    insecure,
                },
                append_x_forwarded_for: true,
                keep_alive_max_requests: 0,
                keep_alive_max_time: None,
                encode_query_semicolons: false,
                allow_acme_by_pass: false,
                max_decoder_header_table_size: 4096,
                redirect,
                grace: Duration::from_secs(1),
                header_read_timeout: Some(Duration::from_secs(2)),
                read_timeout: Some(Duration::from_secs(5)),
                write_timeout: None,
                idle_timeout: Some(Duration::from_secs(5)),
                web_socket_idle_timeout: Some(Duration::from_secs(5)),
                max_request_body_bytes: Some(4096),
                sanitize_path: true,
                denied_escapes: gangway::percent::DeniedEscapes::ALL,
                underscore_headers: Default::default(),
                max_concurrent_streams: 16,
                alt_svc: None,
                limits: gangway::proxy::HeadLimits {
                    max_header_bytes: 64 * 1024,
                    max_headers: 100,
                    max_pending_reset_streams: 20,
                    max_control_frames: 200,
                },
                connections: None,
                proxy_protocol: None,
                stats: Some(registries.stats(StatsKind::EntryPoint, "web", &exporter)),
                traced: false,
                access_logs: true,
                metrics: true,
            })
        };
        let https = Redirect {
            scheme: "https".to_owned(),
            port: Some(8443),
            permanent: true,
            priority: None,
        };
        let entry_points = [
            entry_point(None, false),
            entry_point(Some(https), false),
            entry_point(None, true),
        ];
        let proxy = Arc::new(Proxy {
            runtime: Arc::new(RuntimeHandle::new(runtime)),
            server_name: HeaderValue::from_static("fuzz"),
            access_log: None,
            route_metrics: true,
            metrics_internals: false,
            log_internals: false,
            metrics_headers: Box::new([]),
            tracer: None,
            sleeper: Default::default(),
        });
        let h = Harness {
            rt,
            proxy,
            entry_points,
        };
        // The harness reaches routing and the service, not only 400s and 404s.
        let answer = exchange(&h, b"GET /echo/x HTTP/1.1\r\nHost: echo.test\r\n\r\n");
        let answer = String::from_utf8_lossy(&answer);
        assert!(
            answer.starts_with("HTTP/1.1 200") && answer.contains("\r\n\r\nGET /echo/x "),
            "the echo route answers: {answer}"
        );
        h
    })
}

/// `normalize_path`'s promise: its output is canonical.
fn check_path(path: &str) {
    for merge in [false, true] {
        let Ok(clean) = normalize_path(path, merge) else {
            continue;
        };
        let again = normalize_path(&clean, merge)
            .unwrap_or_else(|e| panic!("{path:?} → {clean:?}, which is refused: {e}"));
        assert_eq!(
            again, clean,
            "{path:?} (merge {merge}) is not canonical in one pass"
        );
        if clean.starts_with('/') {
            assert!(
                !clean.split('/').any(|s| s == "." || s == ".."),
                "{path:?} → {clean:?} keeps a dot segment"
            );
            assert!(
                !merge || !clean.contains("//"),
                "{path:?} → {clean:?} keeps an empty segment"
            );
        }
    }
}

/// Everything the server sends back on a connection that carries `data`.
fn exchange(h: &Harness, data: &[u8]) -> Vec<u8> {
    // Picked by length, so that an input always meets the same entry point.
    let which = match data.len() % 8 {
        0 => 1,
        1 => 2,
        _ => 0,
    };
    let peer = SocketAddr::from(([127, 0, 0, 1], 40000));
    h.rt.block_on(async {
        let (client, server) = tokio::io::duplex(64 * 1024);
        let serve = h
            .proxy
            .clone()
            .serve_stream(server, peer, h.entry_points[which].clone());
        let talk = async move {
            let (mut rx, mut tx) = tokio::io::split(client);
            let send = async {
                // The server may close before reading everything.
                let _ = tx.write_all(data).await;
                // hyper drops a request in flight when the client closes
                // its side (no HTTP/1 half-close), so the client closes
                // only once nothing has happened for a second: the clock
                // is paused and jumps ahead whenever every task waits.
                tokio::time::sleep(Duration::from_secs(1)).await;
                let _ = tx.shutdown().await;
            };
            let receive = async {
                let mut out = Vec::new();
                let _ = rx.read_to_end(&mut out).await;
                out
            };
            tokio::join!(send, receive).1
        };
        // Longer than every timeout of the route and the entry point: a
        // connection still open after it (in paused time) is a hang.
        tokio::time::timeout(Duration::from_secs(300), async {
            tokio::join!(serve, talk)
        })
        .await
        .expect("the connection ends once the client has sent everything")
        .1
    })
}

fuzz_target!(|data: &[u8]| {
    let line = data.split(|&b| b == b'\n').next().unwrap_or(data);
    if let Some(target) = std::str::from_utf8(line)
        .ok()
        .and_then(|l| l.split(' ').nth(1))
    {
        check_path(target.split('?').next().unwrap_or(target));
    }
    let _ = exchange(harness(), data);
});
