//! TCP routers and services: what compiles, what is refused and why.

use super::*;
use crate::config::format::{Format, parse_document};
use crate::rule::ConnFacts;
use crate::runtime::Status;

fn compile_toml(text: &str) -> Runtime {
    let ctx = CompileContext {
        entry_points: vec!["web".into(), "db".into()],
        ..CompileContext::default()
    };
    let d: Dynamic = parse_document("d.toml", text, Format::Toml).expect("parses");
    let (merged, _) = crate::aggregate::merge([("file", &d)]);
    compile(Arc::new(merged), &ctx, &Registries::default())
}

fn problems(rt: &Runtime, router: &str) -> Vec<(Problem, Option<&'static str>)> {
    rt.report.tcp_routers[router]
        .errors
        .iter()
        .map(|e| (e.problem.clone(), e.option))
        .collect()
}

const SERVICES: &str = r#"
[[tcp.services.a.loadBalancer.servers]]
address = "127.0.0.1:1001"
[[tcp.services.b.loadBalancer.servers]]
address = "127.0.0.1:1002"
[tcp.services.both.weighted]
[[tcp.services.both.weighted.services]]
name = "a"
weight = 3
[[tcp.services.both.weighted.services]]
name = "b"
"#;

#[test]
fn routers_land_on_their_entry_points_in_priority_order() {
    let rt = compile_toml(&format!(
        r#"
[tcp.routers.all]
entryPoints = ["db"]
rule = "HostSNI(`*`)"
service = "a"
[tcp.routers.near]
entryPoints = ["db"]
rule = "HostSNI(`*`) && ClientIP(`127.0.0.0/8`)"
service = "b"
[tcp.routers.pass]
rule = "HostSNI(`pass.test`)"
service = "both"
[tcp.routers.pass.tls]
passthrough = true
{SERVICES}"#
    ));
    for name in ["all@file", "near@file", "pass@file"] {
        assert_eq!(
            rt.report.tcp_routers[name].status,
            Status::Enabled,
            "{name}"
        );
    }
    let db = rt.tcp[1].as_ref().expect("routes on db");
    let plain: Vec<&str> = db.plain.iter().map(|r| r.name.as_str()).collect();
    // The longer rule first, as for HTTP routers.
    assert_eq!(plain, ["near@file", "all@file"]);
    assert_eq!(db.tls.len(), 1);
    // Without `entryPoints`, every entry point.
    let web = rt.tcp[0].as_ref().expect("routes on web");
    assert!(web.plain.is_empty());
    let facts = ConnFacts {
        sni: Some("pass.test"),
        alpn: &[],
        client_ip: "127.0.0.1".parse().unwrap(),
    };
    let route = web.find_tls(&facts).expect("by SNI");
    assert_eq!(route.service_name, "both@file");
    let picks: Vec<String> = (0..4)
        .map(|_| route.target.pick().addresses()[0].to_owned())
        .collect();
    assert_eq!(
        picks.iter().filter(|p| p.ends_with(":1001")).count(),
        3,
        "{picks:?}"
    );
    assert_eq!(rt.report.tcp_services["both@file"].using, ["pass@file"]);
    assert_eq!(rt.report.tcp_services["a@file"].status, Status::Enabled);
}

#[test]
fn a_broken_router_or_service_is_disabled_with_its_reason() {
    let rt = compile_toml(&format!(
        r#"
[tcp.routers.named]
rule = "HostSNI(`db.test`)"
service = "a"
[tcp.routers.typo]
rule = "HostSNI(`*`) &&"
service = "a"
[tcp.routers.lost]
rule = "HostSNI(`*`)"
service = "nowhere"
[tcp.routers.guarded]
rule = "HostSNI(`*`)"
service = "a"
middlewares = ["allow"]
[tcp.routers.bad-address]
rule = "HostSNI(`*`)"
service = "noport"
[tcp.routers.resolver]
rule = "HostSNI(`r.test`)"
service = "a"
[tcp.routers.resolver.tls]
certResolver = "le"
[[tcp.services.noport.loadBalancer.servers]]
address = "127.0.0.1"
[tcp.services.proxied.loadBalancer]
proxyProtocol = {{ version = 3 }}
[[tcp.services.proxied.loadBalancer.servers]]
address = "127.0.0.1:1"
{SERVICES}"#
    ));
    let status = |name: &str| rt.report.tcp_routers[name].status;
    assert!(matches!(
        &problems(&rt, "named@file")[..],
        [(Problem::TcpRuleNeedsTls { .. }, Some("rule"))]
    ));
    assert!(matches!(
        &problems(&rt, "typo@file")[..],
        [(Problem::RuleSyntax { column: 16, .. }, Some("rule"))]
    ));
    assert!(matches!(
        &problems(&rt, "lost@file")[..],
        [(Problem::InReference { what: Reference::TcpService, problem, .. }, Some("service"))]
            if matches!(**problem, Problem::Missing { .. })
    ));
    assert!(matches!(
        &problems(&rt, "guarded@file")[..],
        [(Problem::InReference { what: Reference::TcpMiddleware, problem, .. }, Some("middlewares"))]
            if matches!(**problem, Problem::Missing { .. })
    ));
    assert_eq!(status("bad-address@file"), Status::Disabled);
    assert!(
        rt.report.tcp_services["noport@file"].errors[0]
            .to_string()
            .contains("`127.0.0.1` is not host:port")
    );
    assert!(
        rt.report.tcp_services["proxied@file"].errors[0]
            .to_string()
            .contains("3 is not a PROXY protocol version")
    );
    // A certificate resolver is not used for TCP routers yet: said, and
    // the router still serves with the certificates there are.
    assert_eq!(status("resolver@file"), Status::Warning);
    for name in ["named@file", "typo@file", "lost@file", "guarded@file"] {
        assert_eq!(status(name), Status::Disabled, "{name}");
    }
    let routed: Vec<&str> = rt
        .tcp
        .iter()
        .flatten()
        .flat_map(|t| t.plain.iter().chain(&t.tls))
        .map(|r| r.name.as_str())
        .collect();
    assert!(routed.iter().all(|n| *n == "resolver@file"), "{routed:?}");
}

#[test]
fn weighted_services_in_a_cycle_are_refused() {
    let rt = compile_toml(
        r#"
[tcp.routers.loop]
rule = "HostSNI(`*`)"
service = "x"
[tcp.services.x.weighted]
[[tcp.services.x.weighted.services]]
name = "y"
[tcp.services.y.weighted]
[[tcp.services.y.weighted.services]]
name = "x"
"#,
    );
    assert_eq!(rt.report.tcp_routers["loop@file"].status, Status::Disabled);
    assert_eq!(rt.report.tcp_services["x@file"].status, Status::Disabled);
}

#[test]
fn middlewares_are_compiled_once_and_refuse_by_client_address() {
    let rt = compile_toml(&format!(
        r#"
[tcp.routers.guarded]
rule = "HostSNI(`*`)"
service = "a"
middlewares = ["local", "one"]
[tcp.routers.both]
rule = "HostSNI(`*`)"
service = "a"
middlewares = ["local", "broken"]
[tcp.middlewares.local.ipAllowList]
sourceRange = ["127.0.0.1/32", "::1"]
[tcp.middlewares.one.inFlightConn]
amount = 1
[tcp.middlewares.broken.inFlightConn]
amount = 0
{SERVICES}"#
    ));
    assert_eq!(
        rt.report.tcp_routers["guarded@file"].status,
        Status::Enabled
    );
    assert_eq!(rt.report.tcp_routers["both@file"].status, Status::Disabled);
    assert!(
        rt.report.tcp_middlewares["broken@file"].errors[0]
            .to_string()
            .contains("amount: must be at least 1, not 0")
    );
    assert_eq!(
        rt.report.tcp_middlewares["local@file"].using,
        ["both@file", "guarded@file"]
    );
    let route = rt.tcp[0].as_ref().unwrap().plain[0].clone();
    assert_eq!(route.name, "guarded@file");
    let local: std::net::IpAddr = "127.0.0.1".parse().unwrap();
    let far: std::net::IpAddr = "10.1.2.3".parse().unwrap();
    assert_eq!(route.admit(far).err(), Some("local@file"));
    let first = route.admit(local).expect("first connection");
    assert_eq!(route.admit(local).err(), Some("one@file"));
    drop(first);
    assert!(route.admit(local).is_ok(), "the slot came back");
}

/// The compiled transport of TCP service `name`.
fn transport_of(rt: &Runtime, name: &str) -> crate::runtime::tcp::TcpTransport {
    match rt.tcp_services.get(name).map(|t| &**t) {
        Some(crate::runtime::tcp::TcpTarget::Servers { transport, .. }) => (**transport).clone(),
        _ => panic!(
            "{name} is no compiled load balancer: {:?}",
            rt.report.tcp_services.get(name)
        ),
    }
}

fn service_problem(rt: &Runtime, name: &str) -> String {
    let report = &rt.report.tcp_services[name];
    assert_eq!(report.status, Status::Disabled, "{name}");
    report.errors[0].to_string()
}

#[test]
fn servers_transports_set_how_servers_are_connected_to() {
    use std::time::Duration;
    let defaults = crate::runtime::tcp::TcpTransport {
        dial_timeout: Some(Duration::from_secs(30)),
        keep_alive: Some(Duration::from_secs(15)),
        termination_delay: Some(Duration::from_millis(100)),
        proxy_protocol: None,
    };
    let ctx = CompileContext {
        entry_points: vec!["web".into()],
        default_tcp_transport: defaults.clone(),
        ..CompileContext::default()
    };
    let text = r#"
[tcp.serversTransports.quick]
dialTimeout = "2s"
dialKeepAlive = "-1s"
terminationDelay = "-1s"
proxyProtocol = { version = 2 }
[tcp.serversTransports.bare]
[tcp.serversTransports.versionless]
proxyProtocol = {}

[[tcp.services.plain.loadBalancer.servers]]
address = "127.0.0.1:1001"

[tcp.services.old.loadBalancer]
terminationDelay = 250
proxyProtocol = { version = 1 }
[[tcp.services.old.loadBalancer.servers]]
address = "127.0.0.1:1002"

[tcp.services.named.loadBalancer]
serversTransport = "quick"
terminationDelay = 250
proxyProtocol = { version = 1 }
[[tcp.services.named.loadBalancer.servers]]
address = "127.0.0.1:1003"

[tcp.services.fallback.loadBalancer]
serversTransport = "bare@file"
proxyProtocol = { version = 1 }
[[tcp.services.fallback.loadBalancer.servers]]
address = "127.0.0.1:1004"

[tcp.services.versionless.loadBalancer]
serversTransport = "versionless"
[[tcp.services.versionless.loadBalancer.servers]]
address = "127.0.0.1:1006"

[tcp.services.lost.loadBalancer]
serversTransport = "nowhere"
[[tcp.services.lost.loadBalancer.servers]]
address = "127.0.0.1:1005"
"#;
    let d: Dynamic = parse_document("d.toml", text, Format::Toml).expect("parses");
    let (merged, _) = crate::aggregate::merge([("file", &d)]);
    let rt = compile(Arc::new(merged), &ctx, &Registries::default());
    // No transport: the static defaults.
    assert_eq!(transport_of(&rt, "plain@file"), defaults);
    // The load balancer's deprecated options, in milliseconds.
    let old = transport_of(&rt, "old@file");
    assert_eq!(old.termination_delay, Some(Duration::from_millis(250)));
    assert_eq!(old.proxy_protocol, Some(1));
    assert_eq!(old.dial_timeout, defaults.dial_timeout);
    // A named transport's own settings win; negative means none.
    let named = transport_of(&rt, "named@file");
    assert_eq!(named.dial_timeout, Some(Duration::from_secs(2)));
    assert_eq!(named.keep_alive, None);
    assert_eq!(named.termination_delay, None);
    assert_eq!(named.proxy_protocol, Some(2));
    // The load balancer's own are not used, and a warning says so.
    let warnings: Vec<String> = rt.report.tcp_services["named@file"]
        .errors
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(rt.report.tcp_services["named@file"].status, Status::Warning);
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("sets its own `terminationDelay`"))
            && warnings
                .iter()
                .any(|w| w.contains("sets its own `proxyProtocol`")),
        "{warnings:?}"
    );
    // What the transport leaves out: the load balancer's, then the defaults.
    let fallback = transport_of(&rt, "fallback@file");
    assert_eq!(fallback.proxy_protocol, Some(1));
    assert_eq!(fallback.termination_delay, defaults.termination_delay);
    // A `proxyProtocol` without a version is version 2, as in Traefik.
    assert_eq!(
        transport_of(&rt, "versionless@file").proxy_protocol,
        Some(2)
    );
    // A transport that does not exist disables the service, naming it.
    let problem = service_problem(&rt, "lost@file");
    assert!(
        problem.contains("TCP servers transport `nowhere@file` does not exist"),
        "{problem}"
    );
}

#[test]
fn tls_to_servers_needs_settings_it_can_use() {
    let ca = rcgen::generate_simple_self_signed(vec!["ca.test".to_owned()])
        .expect("a certificate")
        .cert
        .pem();
    let rt = compile_toml(&format!(
        r#"
[tcp.serversTransports.ca.tls]
rootCAs = ["""{ca}"""]
serverName = "db.internal"
[tcp.serversTransports.spiffe.tls.spiffe]
trustDomain = "example.org"
[tcp.serversTransports.unreadable.tls]
rootCAs = ["/nonexistent/ca.pem"]

[tcp.services.good.loadBalancer]
serversTransport = "ca"
[[tcp.services.good.loadBalancer.servers]]
address = "127.0.0.1:1001"
tls = true
[[tcp.services.good.loadBalancer.servers]]
address = "127.0.0.1:1002"

[tcp.services.spiffe.loadBalancer]
serversTransport = "spiffe"
[[tcp.services.spiffe.loadBalancer.servers]]
address = "127.0.0.1:1001"
tls = true

[tcp.services.unreadable.loadBalancer]
serversTransport = "unreadable"
[[tcp.services.unreadable.loadBalancer.servers]]
address = "127.0.0.1:1001"
tls = true

[tcp.services.nameless.loadBalancer]
[[tcp.services.nameless.loadBalancer.servers]]
address = "-db-:5432"
tls = true
"#
    ));
    let Some(crate::runtime::tcp::TcpTarget::Servers { servers, .. }) =
        rt.tcp_services.get("good@file").map(|t| &**t)
    else {
        panic!("{:?}", rt.report.tcp_services["good@file"]);
    };
    let tls = servers[0].tls.as_ref().expect("TLS to the first server");
    assert_eq!(
        tls.name,
        rustls::pki_types::ServerName::try_from("db.internal").unwrap()
    );
    assert!(servers[1].tls.is_none(), "plain to the second");
    assert!(service_problem(&rt, "spiffe@file").contains("SPIFFE"));
    assert!(service_problem(&rt, "unreadable@file").contains("/nonexistent/ca.pem"));
    // Not a DNS name TLS can verify: the message says what to set.
    assert!(service_problem(&rt, "nameless@file").contains("tls.serverName"));
}
