//! OpenTelemetry over OTLP, received by a collector built on the official
//! protocol definitions: the span tree of a request through two
//! middlewares under the client's trace (gRPC and HTTP), sampling, the
//! per-router switch, trace ids in the access log, and a broken collector
//! that never fails or holds up a request.

use crate::support;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::Full;
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use std::collections::HashSet;
use std::time::Duration;
use support::otlp::{Collector, Hanging, attribute, hex};
use support::{Backend, Gangway, eventually};

const CLIENT_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";

/// One router through two middlewares (headers, then stripPrefix) to
/// `backend`, and a second router with tracing turned off.
fn two_middlewares(backend: &str) -> String {
    format!(
        r#"
[http.routers.app]
rule = "Host(`app.test`)"
service = "app"
middlewares = ["hdr", "strip"]

[http.routers.quiet]
rule = "Host(`quiet.test`)"
service = "app"
[http.routers.quiet.observability]
tracing = false

[http.middlewares.hdr.headers.customRequestHeaders]
X-Traced = "yes"

[http.middlewares.strip.stripPrefix]
prefixes = ["/api"]

[http.services.app.loadBalancer]
[[http.services.app.loadBalancer.servers]]
url = "{backend}"
"#
    )
}

fn traced_get(
    gw: &Gangway,
    host: &str,
    path: &str,
    traceparent: Option<&str>,
) -> Request<Full<Bytes>> {
    let mut req = Request::get(gw.url(path)).header("host", host);
    if let Some(tp) = traceparent {
        req = req
            .header("traceparent", tp)
            .header("tracestate", "vendor=abc");
    }
    req.body(Full::default()).unwrap()
}

fn named<'a>(spans: &'a [Span], name: &str) -> &'a Span {
    spans
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no `{name}` span among {:?}", names(spans)))
}

fn names(spans: &[Span]) -> Vec<String> {
    spans.iter().map(|s| s.name.clone()).collect()
}

fn of_trace(collector: &Collector, trace: &str) -> Vec<Span> {
    collector
        .spans()
        .into_iter()
        .filter(|s| hex(&s.trace_id) == trace)
        .collect()
}

/// Sends one request under the client's trace and checks the tree the
/// collector gets, and what the server saw.
async fn assert_span_tree(collector: &Collector, flags: &[&str]) {
    let backend = Backend::echo("b").await;
    let gw = Gangway::with_file(&two_middlewares(&backend.url()), flags).await;
    eventually(Duration::from_secs(10), "routed", || async {
        gw.get("app.test", "/api/warm").await.status == StatusCode::OK
    })
    .await;
    let traceparent = format!("00-{CLIENT_TRACE}-{CLIENT_SPAN}-01");
    let got = gw
        .send(traced_get(
            &gw,
            "app.test",
            "/api/hello?q=secret",
            Some(&traceparent),
        ))
        .await;
    assert_eq!(got.status, StatusCode::OK);
    let seen = got.seen();
    assert_eq!(seen.uri, "/hello?q=secret", "stripPrefix ran");
    assert_eq!(seen.header("x-traced"), Some("yes"), "headers ran");
    eventually(
        Duration::from_secs(10),
        "six spans of the client's trace",
        || async { of_trace(collector, CLIENT_TRACE).len() >= 6 },
    )
    .await;
    let spans = of_trace(collector, CLIENT_TRACE);
    assert_eq!(spans.len(), 6, "{:?}", names(&spans));
    let entry = named(&spans, "EntryPoint");
    let router = named(&spans, "Router");
    let headers = named(&spans, "Headers");
    let strip = named(&spans, "StripPrefix");
    let service = named(&spans, "Service");
    let proxy = named(&spans, "ReverseProxy");
    // The tree, each under the one before, the first under the client's span.
    assert_eq!(hex(&entry.parent_span_id), CLIENT_SPAN);
    for (child, parent) in [
        (router, entry),
        (headers, router),
        (strip, headers),
        (service, strip),
        (proxy, service),
    ] {
        assert_eq!(
            hex(&child.parent_span_id),
            hex(&parent.span_id),
            "`{}` is not under `{}`",
            child.name,
            parent.name
        );
    }
    assert_eq!(entry.kind, SpanKind::Server as i32);
    assert_eq!(proxy.kind, SpanKind::Client as i32);
    assert_eq!(router.kind, SpanKind::Internal as i32);
    assert_eq!(entry.trace_state, "vendor=abc");
    // The server is told about the ReverseProxy span, in the same trace.
    assert_eq!(
        seen.header("traceparent"),
        Some(format!("00-{CLIENT_TRACE}-{}-01", hex(&proxy.span_id)).as_str())
    );
    assert_eq!(seen.header("tracestate"), Some("vendor=abc"));
    // Traefik's attributes.
    let a = |s: &Span, k: &str| attribute(&s.attributes, k);
    assert_eq!(a(entry, "http.request.method").as_deref(), Some("GET"));
    assert_eq!(
        a(entry, "http.response.status_code").as_deref(),
        Some("200")
    );
    assert_eq!(a(entry, "url.path").as_deref(), Some("/api/hello"));
    assert_eq!(a(entry, "url.query").as_deref(), Some("q=REDACTED"));
    assert_eq!(a(entry, "entry_point").as_deref(), Some("web"));
    assert_eq!(
        a(router, "traefik.router.name").as_deref(),
        Some("app@file")
    );
    assert_eq!(
        a(router, "traefik.service.name").as_deref(),
        Some("app@file")
    );
    // Traefik's `http.route` is the router's rule as written.
    assert_eq!(a(router, "http.route").as_deref(), Some("Host(`app.test`)"));
    assert_eq!(
        a(headers, "traefik.middleware.name").as_deref(),
        Some("hdr@file")
    );
    assert_eq!(
        a(strip, "traefik.middleware.name").as_deref(),
        Some("strip@file")
    );
    assert_eq!(
        a(service, "traefik.service.name").as_deref(),
        Some("app@file")
    );
    assert_eq!(
        a(proxy, "url.full").as_deref(),
        Some(format!("{}/hello?q=REDACTED", backend.url()).as_str())
    );
    assert_eq!(
        a(proxy, "http.response.status_code").as_deref(),
        Some("200")
    );
    for s in &spans {
        assert!(s.start_time_unix_nano > 0 && s.end_time_unix_nano >= s.start_time_unix_nano);
    }
    // The resource names the service as Traefik's default does.
    let service_name = collector.with(|r| {
        r.traces
            .iter()
            .flat_map(|t| &t.resource_spans)
            .find_map(|rs| attribute(&rs.resource.as_ref()?.attributes, "service.name"))
    });
    assert_eq!(service_name.as_deref(), Some("traefik"));
}

#[tokio::test]
async fn a_request_through_two_middlewares_makes_traefiks_span_tree_over_grpc() {
    let collector = Collector::grpc().await;
    let endpoint = format!("--tracing.otlp.grpc.endpoint={}", collector.endpoint());
    assert_span_tree(
        &collector,
        &[
            "--tracing=true",
            &endpoint,
            "--tracing.otlp.grpc.insecure=true",
        ],
    )
    .await;
}

#[tokio::test]
async fn a_request_through_two_middlewares_makes_traefiks_span_tree_over_http() {
    let collector = Collector::http().await;
    let endpoint = format!("--tracing.otlp.http.endpoint={}", collector.url());
    assert_span_tree(&collector, &["--tracing=true", &endpoint]).await;
}

#[tokio::test]
async fn a_quarter_of_new_traces_are_kept_at_sample_rate_one_quarter() {
    let collector = Collector::http().await;
    let backend = Backend::echo("b").await;
    let endpoint = format!("--tracing.otlp.http.endpoint={}", collector.url());
    let gw = Gangway::with_file(
        &two_middlewares(&backend.url()),
        &["--tracing.sampleRate=0.25", &endpoint],
    )
    .await;
    eventually(Duration::from_secs(10), "routed", || async {
        gw.get("app.test", "/warm").await.status == StatusCode::OK
    })
    .await;
    const SENT: usize = 400;
    for _ in 0..SENT {
        assert_eq!(gw.get("app.test", "/x").await.status, StatusCode::OK);
    }
    // A request the client sampled is always traced, and its spans are
    // queued after every earlier one: once they arrive, all have.
    let marker = format!("00-{CLIENT_TRACE}-{CLIENT_SPAN}-01");
    gw.send(traced_get(&gw, "app.test", "/marker", Some(&marker)))
        .await;
    eventually(Duration::from_secs(15), "the marker's spans", || async {
        !of_trace(&collector, CLIENT_TRACE).is_empty()
    })
    .await;
    let traces: HashSet<String> = collector
        .spans()
        .iter()
        .filter(|s| {
            s.name == "EntryPoint" && attribute(&s.attributes, "url.path").as_deref() == Some("/x")
        })
        .map(|s| hex(&s.trace_id))
        .collect();
    // 100 expected; the bounds are more than four standard deviations out.
    assert!(
        (60..=140).contains(&traces.len()),
        "{} of {SENT} requests traced",
        traces.len()
    );
    // A client that did not sample is followed too: nothing recorded, and
    // its traceparent reaches the server untouched.
    let unsampled = format!("00-{CLIENT_TRACE}-{CLIENT_SPAN}-00");
    let seen = gw
        .send(traced_get(&gw, "app.test", "/unsampled", Some(&unsampled)))
        .await
        .seen();
    assert_eq!(seen.header("traceparent"), Some(unsampled.as_str()));
}

#[tokio::test]
async fn routers_with_tracing_off_make_no_spans_and_traced_requests_log_their_ids() {
    let collector = Collector::grpc().await;
    let backend = Backend::echo("b").await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.json");
    let flags = [
        format!("--tracing.otlp.grpc.endpoint={}", collector.endpoint()),
        "--tracing.otlp.grpc.insecure=true".to_owned(),
        format!("--accessLog.filePath={}", log.display()),
        "--accessLog.format=json".to_owned(),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let gw = Gangway::with_file(&two_middlewares(&backend.url()), &flags).await;
    eventually(Duration::from_secs(10), "routed", || async {
        gw.get("app.test", "/warm").await.status == StatusCode::OK
    })
    .await;
    let quiet_trace = "0af7651916cd43dd8448eb211c80319c";
    let quiet = format!("00-{quiet_trace}-b7ad6b7169203331-01");
    let seen = gw
        .send(traced_get(&gw, "quiet.test", "/q", Some(&quiet)))
        .await
        .seen();
    assert_eq!(
        seen.header("traceparent"),
        Some(quiet.as_str()),
        "passed on untouched"
    );
    let traceparent = format!("00-{CLIENT_TRACE}-{CLIENT_SPAN}-01");
    gw.send(traced_get(&gw, "app.test", "/logged", Some(&traceparent)))
        .await;
    eventually(
        Duration::from_secs(10),
        "the traced request's spans",
        || async { of_trace(&collector, CLIENT_TRACE).len() >= 6 },
    )
    .await;
    assert!(
        of_trace(&collector, quiet_trace).is_empty(),
        "no span for the quiet router"
    );
    let entry_span = hex(&named(&of_trace(&collector, CLIENT_TRACE), "EntryPoint").span_id);
    eventually(Duration::from_secs(5), "access log lines", || async {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("/logged")
    })
    .await;
    let text = std::fs::read_to_string(&log).unwrap();
    let line = |path: &str| -> serde_json::Value {
        let l = text
            .lines()
            .find(|l| l.contains(path))
            .unwrap_or_else(|| panic!("no line for {path}"));
        serde_json::from_str(l).unwrap()
    };
    let logged = line("/logged");
    assert_eq!(logged["TraceId"], CLIENT_TRACE);
    assert_eq!(logged["SpanId"], entry_span.as_str());
    let q = line("\"/q\"");
    assert!(q.get("TraceId").is_none(), "{q}");
}

/// Every request answers while the collector is broken.
async fn assert_unaffected(flags: &[&str]) {
    let backend = Backend::echo("b").await;
    let gw = Gangway::with_file(&two_middlewares(&backend.url()), flags).await;
    eventually(Duration::from_secs(10), "routed", || async {
        gw.get("app.test", "/warm").await.status == StatusCode::OK
    })
    .await;
    // Well past one batch and past the exporter's queue, so that exports
    // are under way (and stuck) while requests keep coming.
    for i in 0..800 {
        let got = gw.get("app.test", &format!("/r{i}")).await;
        assert_eq!(got.status, StatusCode::OK, "request {i}");
    }
    assert_eq!(gw.get("app.test", "/still").await.status, StatusCode::OK);
}

#[tokio::test]
async fn a_collector_that_refuses_or_hangs_never_fails_a_request() {
    let closed = support::counted::refusing_port();
    let refused = format!("--tracing.otlp.grpc.endpoint={closed}");
    assert_unaffected(&[&refused, "--tracing.otlp.grpc.insecure=true"]).await;

    let hanging = Hanging::start().await;
    let hung_http = format!("--tracing.otlp.http.endpoint=http://{}", hanging.addr);
    assert_unaffected(&[&hung_http]).await;
    let hung_grpc = format!("--tracing.otlp.grpc.endpoint={}", hanging.addr);
    assert_unaffected(&[&hung_grpc, "--tracing.otlp.grpc.insecure=true"]).await;
}

/// The value and kind of the `traefik_…` counter series of `metric` whose
/// labels include every one of `labels`, in the newest push holding it.
fn pushed_counter(collector: &Collector, metric: &str, labels: &[(&str, &str)]) -> Option<i64> {
    use opentelemetry_proto::tonic::metrics::v1::{
        AggregationTemporality, metric, number_data_point,
    };
    collector.with(|received| {
        let pushes = received.metrics.iter().rev();
        let metrics = pushes
            .flat_map(|p| &p.resource_metrics)
            .flat_map(|r| &r.scope_metrics)
            .flat_map(|s| &s.metrics);
        for m in metrics.filter(|m| m.name == metric) {
            let Some(metric::Data::Sum(sum)) = &m.data else {
                panic!("{metric} is not a Sum: {:?}", m.data);
            };
            assert!(sum.is_monotonic, "{metric} is a monotonic sum");
            assert_eq!(
                sum.aggregation_temporality,
                AggregationTemporality::Cumulative as i32
            );
            for point in &sum.data_points {
                if labels
                    .iter()
                    .all(|(k, v)| attribute(&point.attributes, k).as_deref() == Some(*v))
                {
                    return match point.value {
                        Some(number_data_point::Value::AsInt(n)) => Some(n),
                        ref other => panic!("{metric} carries {other:?}"),
                    };
                }
            }
        }
        None
    })
}

/// Four requests, then the pushes carry the request counters of the entry
/// point and the service with Traefik's names, values and labels, and the
/// duration histogram in seconds.
async fn assert_metrics_pushed(collector: &Collector, flags: &[&str]) {
    let backend = Backend::echo("b").await;
    let gw = Gangway::with_file(&two_middlewares(&backend.url()), flags).await;
    eventually(Duration::from_secs(10), "routed", || async {
        gw.get("app.test", "/api/warm").await.status == StatusCode::OK
    })
    .await;
    for _ in 0..3 {
        assert_eq!(gw.get("app.test", "/api/x").await.status, StatusCode::OK);
    }
    let service = [
        ("code", "200"),
        ("method", "GET"),
        ("protocol", "http"),
        ("service", "app@file"),
    ];
    eventually(
        Duration::from_secs(10),
        "a push counting the four requests",
        || async {
            pushed_counter(collector, "traefik_service_requests_total", &service) == Some(4)
        },
    )
    .await;
    let entry_point = [("code", "200"), ("method", "GET"), ("entrypoint", "web")];
    assert_eq!(
        pushed_counter(collector, "traefik_entrypoint_requests_total", &entry_point),
        Some(4)
    );
    collector.with(|received| {
        use opentelemetry_proto::tonic::metrics::v1::metric;
        let push = received.metrics.last().expect("a push");
        let resource = push.resource_metrics[0]
            .resource
            .as_ref()
            .expect("resource");
        assert_eq!(
            attribute(&resource.attributes, "service.name").as_deref(),
            Some("traefik")
        );
        let histogram = push.resource_metrics[0].scope_metrics[0]
            .metrics
            .iter()
            .find(|m| m.name == "traefik_service_request_duration_seconds")
            .expect("the service's duration histogram");
        assert_eq!(histogram.unit, "s");
        let Some(metric::Data::Histogram(h)) = &histogram.data else {
            panic!("not a histogram: {:?}", histogram.data);
        };
        let point = h
            .data_points
            .iter()
            .find(|p| attribute(&p.attributes, "code").as_deref() == Some("200"))
            .expect("the 200s' series");
        assert_eq!(point.count, 4);
        assert_eq!(point.bucket_counts.len(), point.explicit_bounds.len() + 1);
        assert_eq!(point.bucket_counts.iter().sum::<u64>(), 4);
    });
}

#[tokio::test]
async fn metrics_are_pushed_over_grpc_without_prometheus() {
    let collector = Collector::grpc().await;
    let endpoint = format!("--metrics.otlp.grpc.endpoint={}", collector.endpoint());
    assert_metrics_pushed(
        &collector,
        &[
            &endpoint,
            "--metrics.otlp.grpc.insecure=true",
            "--metrics.otlp.pushInterval=200ms",
        ],
    )
    .await;
}

#[tokio::test]
async fn metrics_are_pushed_over_http_beside_prometheus() {
    let collector = Collector::http().await;
    let endpoint = format!("--metrics.otlp.http.endpoint={}", collector.url());
    assert_metrics_pushed(
        &collector,
        &[
            &endpoint,
            "--metrics.otlp.pushInterval=200ms",
            "--metrics.prometheus=true",
        ],
    )
    .await;
}

/// Every log record received so far.
fn records(collector: &Collector) -> Vec<opentelemetry_proto::tonic::logs::v1::LogRecord> {
    collector.with(|received| {
        received
            .logs
            .iter()
            .flat_map(|l| &l.resource_logs)
            .flat_map(|r| &r.scope_logs)
            .flat_map(|s| s.log_records.clone())
            .collect()
    })
}

fn body(record: &opentelemetry_proto::tonic::logs::v1::LogRecord) -> String {
    use opentelemetry_proto::tonic::common::v1::any_value;
    match record.body.as_ref().and_then(|b| b.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        other => panic!("body {other:?}"),
    }
}

#[tokio::test]
async fn access_log_records_carry_traefiks_fields_over_http() {
    let collector = Collector::http().await;
    let backend = Backend::echo("b").await;
    let endpoint = format!("--accessLog.otlp.http.endpoint={}", collector.url());
    let gw = Gangway::with_file(&two_middlewares(&backend.url()), &[&endpoint]).await;
    eventually(Duration::from_secs(10), "routed", || async {
        gw.get("app.test", "/api/warm").await.status == StatusCode::OK
    })
    .await;
    assert_eq!(
        gw.get("app.test", "/api/logged").await.status,
        StatusCode::OK
    );
    eventually(
        Duration::from_secs(10),
        "the request's access-log record",
        || async {
            records(&collector)
                .iter()
                .any(|r| attribute(&r.attributes, "RequestPath").as_deref() == Some("/api/logged"))
        },
    )
    .await;
    let all = records(&collector);
    let record = all
        .iter()
        .find(|r| attribute(&r.attributes, "RequestPath").as_deref() == Some("/api/logged"))
        .unwrap();
    assert_eq!(
        attribute(&record.attributes, "DownstreamStatus").as_deref(),
        Some("200")
    );
    assert_eq!(
        attribute(&record.attributes, "RouterName").as_deref(),
        Some("app@file")
    );
    assert_eq!(
        attribute(&record.attributes, "ServiceName").as_deref(),
        Some("app@file")
    );
    assert_eq!(
        attribute(&record.attributes, "RequestMethod").as_deref(),
        Some("GET")
    );
    assert_eq!(record.severity_text, "INFO");
    assert!(
        body(record).contains("\"GET /api/logged HTTP/1.1\" 200"),
        "{}",
        body(record)
    );
}

#[tokio::test]
async fn log_lines_arrive_as_records_over_grpc() {
    let collector = Collector::grpc().await;
    let backend = Backend::echo("b").await;
    let endpoint = format!("--log.otlp.grpc.endpoint={}", collector.endpoint());
    // An empty RUST_LOG leaves the level to `log.level`.
    let _gw = Gangway::with_file_env(
        &two_middlewares(&backend.url()),
        &[
            &endpoint,
            "--log.otlp.grpc.insecure=true",
            "--log.level=INFO",
        ],
        &[("RUST_LOG", "")],
    )
    .await;
    eventually(Duration::from_secs(10), "an info record", || async {
        records(&collector)
            .iter()
            .any(|r| r.severity_text == "INFO")
    })
    .await;
    let all = records(&collector);
    let info = all.iter().find(|r| r.severity_text == "INFO").unwrap();
    assert_eq!(
        info.severity_number,
        opentelemetry_proto::tonic::logs::v1::SeverityNumber::Info as i32
    );
    assert!(!body(info).is_empty(), "{info:?}");
    let resource = collector.with(|r| r.logs[0].resource_logs[0].resource.clone().unwrap());
    assert_eq!(
        attribute(&resource.attributes, "service.name").as_deref(),
        Some("traefik")
    );
}

/// With `OTEL_PROPAGATORS=b3multi,jaeger` (Traefik reads the variable
/// as OpenTelemetry SDKs do) a client's B3 or Jaeger context is the
/// parent of the `EntryPoint` span, the server gets both formats naming
/// the `ReverseProxy` span, and `traceparent` is neither read nor written.
#[tokio::test]
async fn b3_and_jaeger_contexts_are_followed_when_otel_propagators_names_them() {
    let collector = Collector::http().await;
    let backend = Backend::echo("b").await;
    let endpoint = format!("--tracing.otlp.http.endpoint={}", collector.url());
    let gw = Gangway::with_file_env(
        &two_middlewares(&backend.url()),
        &[&endpoint],
        &[("OTEL_PROPAGATORS", "b3multi,jaeger")],
    )
    .await;
    eventually(Duration::from_secs(10), "routed", || async {
        gw.get("app.test", "/api/warm").await.status == StatusCode::OK
    })
    .await;
    let b3_trace = "a3ce929d0e0e47364bf92f3577b34da6";
    let clients: [(&str, Vec<(&str, String)>); 2] = [
        (
            b3_trace,
            vec![
                ("x-b3-traceid", b3_trace.to_owned()),
                ("x-b3-spanid", CLIENT_SPAN.to_owned()),
                ("x-b3-sampled", "1".to_owned()),
            ],
        ),
        (
            CLIENT_TRACE,
            vec![("uber-trace-id", format!("{CLIENT_TRACE}:{CLIENT_SPAN}:0:1"))],
        ),
    ];
    for (trace, headers) in clients {
        let mut req = Request::get(gw.url("/api/b3")).header("host", "app.test");
        for (k, v) in &headers {
            req = req.header(*k, v.as_str());
        }
        let got = gw.send(req.body(Full::default()).unwrap()).await;
        assert_eq!(got.status, StatusCode::OK);
        eventually(Duration::from_secs(10), "the client's trace", || async {
            of_trace(&collector, trace).len() >= 6
        })
        .await;
        let spans = of_trace(&collector, trace);
        let entry = named(&spans, "EntryPoint");
        let proxy = named(&spans, "ReverseProxy");
        assert_eq!(hex(&entry.parent_span_id), CLIENT_SPAN, "{headers:?}");
        let seen = got.seen();
        let proxy_span = hex(&proxy.span_id);
        assert_eq!(seen.header("x-b3-traceid"), Some(trace));
        assert_eq!(seen.header("x-b3-spanid"), Some(proxy_span.as_str()));
        assert_eq!(seen.header("x-b3-sampled"), Some("1"));
        assert_eq!(
            seen.header("uber-trace-id"),
            Some(format!("{trace}:{proxy_span}:0:1").as_str())
        );
        assert_eq!(seen.header("traceparent"), None, "tracecontext not chosen");
    }
    // A `traceparent` is not read: the request starts a trace of its own,
    // and the client's header reaches the server as it was sent.
    let other = "0af7651916cd43dd8448eb211c80319c";
    let traceparent = format!("00-{other}-{CLIENT_SPAN}-01");
    let got = gw
        .send(traced_get(&gw, "app.test", "/api/w3c", Some(&traceparent)))
        .await;
    assert_eq!(got.status, StatusCode::OK);
    let seen = got.seen();
    assert_eq!(seen.header("traceparent"), Some(traceparent.as_str()));
    let started = seen.header("x-b3-traceid").expect("a trace of its own");
    assert_ne!(started, other);
    eventually(Duration::from_secs(10), "the new trace", || async {
        of_trace(&collector, started).len() >= 6
    })
    .await;
    assert!(of_trace(&collector, other).is_empty());
}

/// At SIGTERM, the spans of a request that ended just before, the
/// metrics (whose next push is an hour away) and the log records of the
/// stop itself are exported before gangway exits.
#[tokio::test]
async fn a_graceful_stop_pushes_the_last_spans_metrics_and_log_records() {
    let collector = Collector::http().await;
    let backend = Backend::echo("b").await;
    let traces = format!("--tracing.otlp.http.endpoint={}", collector.url());
    let metrics = format!("--metrics.otlp.http.endpoint={}", collector.url());
    let logs = format!("--log.otlp.http.endpoint={}", collector.url());
    let mut gw = Gangway::with_file_env(
        &two_middlewares(&backend.url()),
        &[
            &traces,
            &metrics,
            "--metrics.otlp.pushInterval=1h",
            &logs,
            "--log.level=INFO",
        ],
        &[("RUST_LOG", "")],
    )
    .await;
    let sent = std::cell::Cell::new(0);
    eventually(Duration::from_secs(10), "routed", || async {
        let ok = gw.get("app.test", "/api/warm").await.status == StatusCode::OK;
        sent.set(sent.get() + usize::from(ok));
        ok
    })
    .await;
    let traceparent = format!("00-{CLIENT_TRACE}-{CLIENT_SPAN}-01");
    let got = gw
        .send(traced_get(&gw, "app.test", "/api/last", Some(&traceparent)))
        .await;
    assert_eq!(got.status, StatusCode::OK);
    let served = sent.get() + 1;
    assert!(
        collector.with(|r| r.metrics.is_empty()),
        "no push before the stop"
    );
    gw.sigterm();
    eventually(Duration::from_secs(10), "gangway exits", || {
        let exited = gw.exited().is_some();
        async move { exited }
    })
    .await;
    let spans = of_trace(&collector, CLIENT_TRACE);
    assert_eq!(spans.len(), 6, "{:?}", names(&spans));
    assert_eq!(
        collector.with(|r| r.metrics.len()),
        1,
        "one push, at the stop"
    );
    let service = [("code", "200"), ("service", "app@file")];
    assert_eq!(
        pushed_counter(&collector, "traefik_service_requests_total", &service),
        i64::try_from(served).ok()
    );
    assert!(
        records(&collector)
            .iter()
            .any(|r| body(r).contains("shutting down")),
        "the stop's own log record"
    );
}
