//! The Prometheus exposition at `/metrics`, read from the real binary after
//! real traffic: which families it has, their types and their label keys.
//! Dashboards and alerts are written against these names, so a change of
//! any of them is a change users see.

use crate::support;

use http::{Request, StatusCode};
use std::collections::BTreeMap;
use std::time::Duration;
use support::tls::TestCa;
use support::{Backend, Gangway, eventually, free_port};

/// One family as Prometheus sees it: its `# TYPE` and, per sample name,
/// the label keys in the order they are written.
#[derive(Debug, PartialEq, Eq)]
struct Family {
    kind: String,
    samples: BTreeMap<String, Vec<String>>,
}

/// The families of an exposition, by name. Panics on a line that is not
/// Prometheus text, on a sample outside any `# TYPE`, and on a sample name
/// written with two different sets of label keys.
fn families(text: &str) -> BTreeMap<String, Family> {
    let mut out: BTreeMap<String, Family> = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("# TYPE name kind");
            out.insert(
                name.to_owned(),
                Family {
                    kind: kind.to_owned(),
                    samples: BTreeMap::new(),
                },
            );
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        let (series, value) = line.rsplit_once(' ').expect("sample line");
        value
            .parse::<f64>()
            .unwrap_or_else(|_| panic!("value of `{line}`"));
        let (name, keys) = match series.split_once('{') {
            Some((name, labels)) => (name, label_keys(labels.trim_end_matches('}'))),
            None => (series, Vec::new()),
        };
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .filter_map(|s| name.strip_suffix(s))
            .find(|base| out.get(*base).is_some_and(|f| f.kind == "histogram"))
            .unwrap_or(name);
        let entry = out
            .get_mut(family)
            .unwrap_or_else(|| panic!("`{name}` has no # TYPE line"));
        let known = entry.samples.entry(name.to_owned()).or_insert(keys.clone());
        assert_eq!(*known, keys, "`{name}` written with two sets of labels");
    }
    out
}

/// `a="x",b="y\"z"` → `["a", "b"]`.
fn label_keys(labels: &str) -> Vec<String> {
    let mut keys = Vec::new();
    let mut rest = labels;
    while let Some((key, after)) = rest.split_once("=\"") {
        keys.push(key.trim_start_matches(',').to_owned());
        let mut escaped = false;
        let end = after
            .char_indices()
            .find(|&(_, c)| {
                let close = c == '"' && !escaped;
                escaped = c == '\\' && !escaped;
                close
            })
            .map(|(i, _)| i)
            .expect("closing quote");
        rest = &after[end + 1..];
    }
    keys
}

fn keys(list: &[&str]) -> Vec<String> {
    list.iter().map(|k| (*k).to_owned()).collect()
}

/// What gangway exported before metrics-exporter-prometheus wrote the
/// exposition: Traefik v3's families under gangway's prefix.
fn expected(prefix: &str) -> BTreeMap<String, Family> {
    let mut want = BTreeMap::new();
    let mut family = |name: &str, kind: &str, samples: &[(&str, &[&str])]| {
        let name = format!("{prefix}_{name}");
        let samples = samples
            .iter()
            .map(|(suffix, labels)| (format!("{name}{suffix}"), keys(labels)))
            .collect();
        want.insert(
            name,
            Family {
                kind: kind.to_owned(),
                samples,
            },
        );
    };
    family("config_reloads_total", "counter", &[("", &[])]);
    family("config_last_reload_success", "gauge", &[("", &[])]);
    family("accesslog_dropped_lines_total", "counter", &[("", &[])]);
    family(
        "tls_certs_not_after",
        "gauge",
        &[("", &["cn", "serial", "sans"])],
    );
    family("service_retries_total", "counter", &[("", &["service"])]);
    family("service_server_up", "gauge", &[("", &["service", "url"])]);
    family(
        "open_connections",
        "gauge",
        &[("", &["entrypoint", "protocol"])],
    );
    for (word, unit) in [("tcp", "connections"), ("udp", "sessions")] {
        family(
            &format!("{word}_router_open_{unit}"),
            "gauge",
            &[("", &["router"])],
        );
        for counter in [
            format!("{unit}_total"),
            "received_bytes_total".to_owned(),
            "sent_bytes_total".to_owned(),
        ] {
            family(
                &format!("{word}_router_{counter}"),
                "counter",
                &[("", &["router"])],
            );
        }
    }
    for object in ["entrypoint", "router", "service"] {
        // Traefik's router series carry the router's service too.
        let named: &[&str] = if object == "router" {
            &["router", "service"]
        } else {
            &[object]
        };
        let labels = &[&["code", "method", "protocol"], named].concat();
        let with_le = &[labels.as_slice(), &["le"]].concat();
        let tls = &[&["tls_version", "tls_cipher"], named].concat();
        family(
            &format!("{object}_requests_tls_total"),
            "counter",
            &[("", tls)],
        );
        for counter in [
            "requests_total",
            "requests_bytes_total",
            "responses_bytes_total",
        ] {
            family(&format!("{object}_{counter}"), "counter", &[("", labels)]);
        }
        family(
            &format!("{object}_request_duration_seconds"),
            "histogram",
            &[("_bucket", with_le), ("_sum", labels), ("_count", labels)],
        );
    }
    want
}

/// gangway with every family switched on (routers, services, entry points,
/// the access log, a file certificate, a health-checked service, a retry)
/// after GET, POST, HTTPS, retried and unrouted requests.
async fn scraped(prefix: &str) -> String {
    let app = Backend::echo("app").await;
    let files = tempfile::tempdir().unwrap();
    let (chain, key) = TestCa::new("metrics CA").issue(&["secure.test"]);
    let cert = files.path().join("secure.pem");
    let key_file = files.path().join("secure.key");
    std::fs::write(&cert, chain).unwrap();
    std::fs::write(&key_file, key).unwrap();
    // A TCP and a UDP router: their families exist from the start.
    let streams = "[tcp.routers.db]\nentryPoints = [\"db\"]\nrule = \"HostSNI(`*`)\"\nservice = \"db\"\n\
                   [[tcp.services.db.loadBalancer.servers]]\naddress = \"127.0.0.1:9\"\n\
                   [udp.routers.dns]\nentryPoints = [\"dns\"]\nservice = \"dns\"\n\
                   [[udp.services.dns.loadBalancer.servers]]\naddress = \"127.0.0.1:9\"\n";
    // HTTPS to the app, a health-checked service, and a router whose only
    // server is gone, behind a retry.
    let more = format!(
        "[http.routers.secure]\nrule = \"Host(`secure.test`)\"\nservice = \"app\"\n[http.routers.secure.tls]\n\
         [http.services.app.loadBalancer.healthCheck]\npath = \"/\"\ninterval = \"1s\"\n\
         [http.routers.gone]\nrule = \"Host(`gone.test`)\"\nservice = \"gone\"\nmiddlewares = [\"again\"]\n\
         [http.middlewares.again.retry]\nattempts = 3\n\
         [[http.services.gone.loadBalancer.servers]]\nurl = \"http://127.0.0.1:{}\"\n",
        free_port()
    );
    let dynamic = format!(
        "{}{more}{streams}[[tls.certificates]]\ncertFile = {:?}\nkeyFile = {:?}\n",
        support::one_route("app", "Host(`app.test`)", &[&app.url()]),
        cert.display().to_string(),
        key_file.display().to_string(),
    );
    let internal = free_port();
    let flags = [
        "--metrics.prometheus".to_owned(),
        format!("--metrics.prometheus.prefix={prefix}"),
        "--metrics.prometheus.addRoutersLabels=true".to_owned(),
        format!("--entryPoints.gangway.address=127.0.0.1:{internal}"),
        format!("--entryPoints.db.address=127.0.0.1:{}", free_port()),
        format!("--entryPoints.dns.address=127.0.0.1:{}/udp", free_port()),
        format!(
            "--accessLog.filePath={}",
            files.path().join("access.log").display()
        ),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let gw = Gangway::with_file(&dynamic, &flags).await;
    eventually(Duration::from_secs(5), "routed", || async {
        gw.get("app.test", "/").await.status == StatusCode::OK
    })
    .await;
    assert_eq!(
        gw.get("nowhere.test", "/").await.status,
        StatusCode::NOT_FOUND
    );
    let post = Request::post(gw.url("/form"))
        .header("host", "app.test")
        .body("name=value".into())
        .unwrap();
    assert_eq!(gw.send(post).await.status, StatusCode::OK);
    // One request over TLS 1.3, one over TLS 1.2.
    for tls12_only in [false, true] {
        let client = support::tls::TlsClient {
            tls12_only,
            ..support::tls::TlsClient::insecure()
        };
        let https = client
            .get(gw.port, "secure.test", None, "/", false)
            .await
            .expect("HTTPS request");
        assert_eq!(https.status, StatusCode::OK);
    }
    assert_eq!(
        gw.get("gone.test", "/").await.status,
        StatusCode::BAD_GATEWAY
    );
    let scrape = Request::get(format!("http://127.0.0.1:{internal}/metrics"))
        .body(Default::default())
        .unwrap();
    let got = gw.send(scrape).await;
    assert_eq!(got.status, StatusCode::OK);
    got.text()
}

#[tokio::test]
async fn families_types_and_label_keys_are_traefiks() {
    let text = scraped("gangway").await;
    let got = families(&text);
    let ours: BTreeMap<String, Family> = got
        .into_iter()
        .filter(|(name, _)| name.starts_with("gangway_"))
        .collect();
    assert_eq!(ours, expected("gangway"), "in\n{text}");
    // Each TLS request is counted under the version and suite its
    // handshake agreed on, named as Traefik names them.
    for (version, suite) in [("1.3", "TLS_AES_"), ("1.2", "TLS_ECDHE_ECDSA_WITH_")] {
        let prefix = format!(
            r#"gangway_entrypoint_requests_tls_total{{tls_version="{version}",tls_cipher="{suite}"#
        );
        let lines: Vec<&str> = text.lines().filter(|l| l.starts_with(&prefix)).collect();
        assert_eq!(lines.len(), 1, "{prefix} in\n{text}");
        assert!(lines[0].ends_with(r#"entrypoint="web"} 1"#), "{}", lines[0]);
    }
}

#[tokio::test]
async fn process_figures_are_prometheus_standard_ones() {
    let text = scraped("gangway").await;
    let got = families(&text);
    for (name, kind) in [
        ("process_cpu_seconds_total", "counter"),
        ("process_resident_memory_bytes", "gauge"),
        ("process_virtual_memory_bytes", "gauge"),
        ("process_open_fds", "gauge"),
        ("process_max_fds", "gauge"),
        ("process_start_time_seconds", "gauge"),
        ("process_threads", "gauge"),
    ] {
        let family = got
            .get(name)
            .unwrap_or_else(|| panic!("no {name} in\n{text}"));
        assert_eq!(family.kind, kind, "{name}");
        assert_eq!(
            family.samples,
            BTreeMap::from([(name.to_owned(), Vec::new())]),
            "{name} is one unlabelled series"
        );
    }
    let value = |name: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{name} in\n{text}"))
    };
    assert!(value("process_resident_memory_bytes") > 1_000_000.0);
    assert!(value("process_open_fds") >= 3.0);
    assert!(value("process_start_time_seconds") > 1.7e9);
}

#[tokio::test]
async fn the_prefix_names_every_family() {
    let text = scraped("traefik").await;
    let got = families(&text);
    for name in expected("traefik").keys() {
        assert!(got.contains_key(name), "no {name} in\n{text}");
    }
    assert!(!text.contains("gangway_"), "{text}");
}

/// `headerLabels.<label>=<Header>`: the requests_total families gain the
/// label, valued from the request's header (empty when it has none).
#[tokio::test]
async fn header_labels_come_from_the_request_headers() {
    let app = Backend::echo("app").await;
    let internal = free_port();
    let internal_flag = format!("--entryPoints.gangway.address=127.0.0.1:{internal}");
    let gw = Gangway::with_file(
        &support::one_route("app", "Host(`app.test`)", &[&app.url()]),
        &[
            "--metrics.prometheus",
            "--metrics.prometheus.prefix=traefik",
            "--metrics.prometheus.headerLabels.useragent=User-Agent",
            &internal_flag,
        ],
    )
    .await;
    eventually(Duration::from_secs(5), "routed", || async {
        gw.get("app.test", "/").await.status == StatusCode::OK
    })
    .await;
    for _ in 0..2 {
        let req = Request::get(gw.url("/"))
            .header("host", "app.test")
            .header("user-agent", "probe/1.0")
            .body(Default::default())
            .unwrap();
        assert_eq!(gw.send(req).await.status, StatusCode::OK);
    }
    let scrape = Request::get(format!("http://127.0.0.1:{internal}/metrics"))
        .body(Default::default())
        .unwrap();
    let text = gw.send(scrape).await.text();
    let value = |series: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
            .map(str::to_owned)
    };
    assert_eq!(
        value(r#"traefik_service_requests_total{code="200",method="GET",protocol="http",service="app@file",useragent="probe/1.0"}"#)
            .as_deref(),
        Some("2"),
        "{text}"
    );
    assert_eq!(
        value(r#"traefik_entrypoint_requests_total{code="200",method="GET",protocol="http",entrypoint="web",useragent="probe/1.0"}"#)
            .as_deref(),
        Some("2"),
        "{text}"
    );
    // The other families keep their own labels.
    assert!(
        text.lines()
            .filter(|l| l.contains("useragent="))
            .all(|l| l.starts_with("traefik_service_requests_total{")
                || l.starts_with("traefik_entrypoint_requests_total{")),
        "{text}"
    );
}

/// A header label Prometheus would refuse stops the start, naming it.
#[tokio::test]
async fn a_bad_header_label_stops_the_start_naming_it() {
    let refused = tokio::process::Command::new(support::binary())
        .args([
            format!("--entryPoints.web.address=127.0.0.1:{}", free_port()),
            "--metrics.prometheus".to_owned(),
            "--metrics.prometheus.headerLabels.user-agent=User-Agent".to_owned(),
        ])
        .env("NO_COLOR", "1")
        .kill_on_drop(true)
        .output();
    // Bounded only so that a gangway that wrongly starts fails the test
    // instead of hanging it.
    let out = tokio::time::timeout(Duration::from_secs(30), refused)
        .await
        .expect("gangway exits on a bad header label")
        .unwrap();
    assert!(!out.status.success());
    let log =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    assert!(
        log.contains("metrics.prometheus.headerLabels.user-agent"),
        "{log}"
    );
}

/// `manualRouting=true`: no `/metrics` router of gangway's own; the
/// user's router to `prometheus@internal` serves it where they want.
#[tokio::test]
async fn manual_routing_leaves_metrics_to_the_users_router() {
    let internal = free_port();
    let internal_flag = format!("--entryPoints.gangway.address=127.0.0.1:{internal}");
    let dynamic = "[http.routers.metrics]\nrule = \"Host(`metrics.test`) && Path(`/metrics`)\"\nservice = \"prometheus@internal\"\n";
    let gw = Gangway::with_file(
        dynamic,
        &[
            "--metrics.prometheus",
            "--metrics.prometheus.manualRouting=true",
            &internal_flag,
        ],
    )
    .await;
    eventually(
        Duration::from_secs(5),
        "the user's router serves /metrics",
        || async {
            let got = gw.get("metrics.test", "/metrics").await;
            got.status == StatusCode::OK && got.text().contains("gangway_config_reloads_total")
        },
    )
    .await;
    let default = Request::get(format!("http://127.0.0.1:{internal}/metrics"))
        .body(Default::default())
        .unwrap();
    assert_eq!(gw.send(default).await.status, StatusCode::NOT_FOUND);
}
