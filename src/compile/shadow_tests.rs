//! Routers that never get a request: the same rule as one tried before them.

use super::*;
use crate::config::format::{Format, parse_document};
use crate::rule::default_priority;
use crate::runtime::Status;

fn ctx() -> CompileContext {
    CompileContext {
        entry_points: vec!["web".into(), "websecure".into()],
        default_tcp_transport: Default::default(),
        default_tcp_tls: Default::default(),
        default_transport: ClientSettings {
            dial_timeout: None,
            response_header_timeout: None,
            idle_conn_timeout: None,
            max_idle_per_host: 1,
            tls: TlsSettings::default(),
            ..ClientSettings::default()
        },
        service_limits: crate::overload::Limits {
            max_concurrent: 0,
            queue_timeout: std::time::Duration::ZERO,
            max_per_client: 0,
        },
        ..CompileContext::default()
    }
}

fn compile_toml(text: &str) -> Runtime {
    let d: Dynamic = parse_document("d.toml", text, Format::Toml).expect("parses");
    let (merged, _) = crate::aggregate::merge([("file", &d)]);
    compile(Arc::new(merged), &ctx(), &Registries::default())
}

/// (winner, entry points, winner's priority) of each `Shadowed` warning.
fn shadowed_by(rt: &Runtime, router: &str) -> Vec<(String, Vec<&'static str>, i64)> {
    rt.report.routers[router]
        .errors
        .iter()
        .filter_map(|e| match &e.problem {
            Problem::Shadowed {
                winner,
                entry_points,
                winner_priority,
                ..
            } => Some((
                winner.clone(),
                entry_points
                    .iter()
                    .map(|e| if e == "web" { "web" } else { "websecure" })
                    .collect(),
                *winner_priority,
            )),
            _ => None,
        })
        .collect()
}

const ROUTERS: &str = r#"
[http.services.s.loadBalancer]
[[http.services.s.loadBalancer.servers]]
url = "http://127.0.0.1:1"
[http.routers.b-first]
rule = "Host(`app.test`) && PathPrefix(`/a`)"
service = "s"
entryPoints = ["web"]
[http.routers.a-second]
rule = "Host(`app.test`) && PathPrefix(`/a`)"
service = "s"
entryPoints = ["web", "websecure"]
[http.routers.c-other-ep]
rule = "Host(`app.test`) && PathPrefix(`/a`)"
service = "s"
entryPoints = ["websecure"]
[http.routers.d-tls]
rule = "Host(`app.test`) && PathPrefix(`/a`)"
service = "s"
entryPoints = ["web"]
tls = {}
[http.routers.high]
rule = "Path(`/p`)"
service = "s"
priority = 100
[http.routers.low]
rule = "Path(`/p`)"
service = "s"
[http.routers.spaced-1]
rule = "Path(`/s`) && Method(`GET`)"
service = "s"
priority = 5
[http.routers.spaced-2]
rule = "Path(`/s`)&&Method(`GET`)"
service = "s"
priority = 5
[http.routers.different]
rule = "Path(`/q`)"
service = "s"
"#;

#[test]
fn a_router_with_the_rule_of_one_tried_before_it_is_shadowed_there() {
    let rt = compile_toml(ROUTERS);
    let p = default_priority("Host(`app.test`) && PathPrefix(`/a`)");
    // Equal priorities: the name that sorts first wins, on each entry point
    // the two share.
    assert_eq!(
        shadowed_by(&rt, "b-first@file"),
        [("a-second@file".to_owned(), vec!["web"], p)]
    );
    assert_eq!(
        shadowed_by(&rt, "c-other-ep@file"),
        [("a-second@file".to_owned(), vec!["websecure"], p)]
    );
    assert!(shadowed_by(&rt, "a-second@file").is_empty());
    // TLS connections are not plain ones: each has its own winner.
    assert!(shadowed_by(&rt, "d-tls@file").is_empty());
    // A higher priority with the same rule covers the lower one on every
    // entry point both are on: one warning names them all.
    assert_eq!(
        shadowed_by(&rt, "low@file"),
        [("high@file".to_owned(), vec!["web", "websecure"], 100)]
    );
    // Spacing does not make another rule.
    assert_eq!(
        shadowed_by(&rt, "spaced-2@file"),
        [("spaced-1@file".to_owned(), vec!["web", "websecure"], 5)]
    );
    assert!(shadowed_by(&rt, "different@file").is_empty());
    assert!(shadowed_by(&rt, "high@file").is_empty());

    let loser = &rt.report.routers["b-first@file"];
    assert_eq!(
        loser.status,
        Status::Warning,
        "still enabled, with a warning"
    );
    assert_eq!(loser.errors[0].option, Some("rule"));
    assert_eq!(
        loser.errors[0].to_string(),
        format!(
            "same rule `Host(`app.test`) && PathPrefix(`/a`)` and priority {p} as router `a-second@file` on entry point `web`: `a-second@file` gets every request (its name sorts first); set a `priority` on one of them"
        )
    );
    assert_eq!(
        rt.report.routers["low@file"].errors[0].to_string(),
        format!(
            "router `high@file` has the same rule `Path(`/p`)` with a higher priority (100, this one {}) on entry points `web`, `websecure`: it gets every request",
            default_priority("Path(`/p`)")
        )
    );
    assert_eq!(rt.report.routers["a-second@file"].status, Status::Enabled);
    // What requests see agrees: the winner named is the one that answers.
    let method = ::http::Method::GET;
    let headers = ::http::HeaderMap::new();
    let facts = crate::rule::RequestFacts {
        method: &method,
        host: "app.test",
        path: "/a",
        query: None,
        headers: &headers,
        client_ip: std::net::IpAddr::from([127, 0, 0, 1]),
    };
    assert_eq!(
        rt.entry_points[0]
            .find(false, &facts)
            .map(|r| r.name.as_str()),
        Some("a-second@file")
    );
    assert_eq!(
        rt.entry_points[1]
            .find(false, &facts)
            .map(|r| r.name.as_str()),
        Some("a-second@file")
    );
}
