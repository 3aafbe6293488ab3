//! Service compilation: state carried across compiles, and bad definitions
//! that disable one service with an error naming the problem.

use super::*;
use crate::aggregate::merge;
use crate::config::format::{Format, parse_document};
use crate::config::problem::{Problem, Reference};
use crate::runtime::Status;

fn dynamic(toml: &str) -> Arc<Dynamic> {
    let d: Dynamic = parse_document("d.toml", toml, Format::Toml).expect("parses");
    Arc::new(merge([("file", &d)]).0)
}

fn ctx() -> CompileContext {
    CompileContext {
        entry_points: vec!["web".to_owned()],
        not_default: Vec::new(),
        default_tcp_transport: Default::default(),
        default_tcp_tls: Default::default(),
        default_transport: ClientSettings::default(),
        service_limits: crate::overload::Limits {
            max_concurrent: 0,
            queue_timeout: std::time::Duration::ZERO,
            max_per_client: 0,
        },
        internal: BTreeMap::new(),
        plugins: BTreeMap::new(),
        metrics: None,
        entry_point_tls: Vec::new(),
        entry_point_middlewares: Vec::new(),
        cert_resolvers: Vec::new(),
        udp_entry_points: Vec::new(),
        default_rule_syntax: Default::default(),
        dns_resolvers: Vec::new(),
    }
}

fn balancer<'a>(runtime: &'a Runtime, router: &str) -> &'a LoadBalancer {
    let route = runtime.entry_points[0]
        .iter()
        .find(|r| r.name == router)
        .expect("route");
    match &*route.upstream {
        Upstream::Servers(lb) => lb,
        _ => panic!("not a load balancer"),
    }
}

const APP: &str = r#"
[http.routers.app]
rule = "Host(`app.test`)"
service = "app"
[http.services.app.loadBalancer]
[[http.services.app.loadBalancer.servers]]
url = "http://127.0.0.1:1001"
[[http.services.app.loadBalancer.servers]]
url = "http://127.0.0.1:1002"
[http.services.app.loadBalancer.healthCheck]
path = "/health"
"#;

#[test]
fn an_unchanged_service_keeps_its_position_and_health() {
    let registries = Registries::default();
    let first = compile(dynamic(APP), &ctx(), &registries);
    let lb1 = balancer(&first, "app@file");
    let none = ::http::HeaderMap::new();
    let mut cookies = Vec::new();
    assert_eq!(lb1.choose(&none, &mut cookies, None), Some(0));
    let health1 = lb1.health.clone().expect("checked");
    health1.record(1, Err("refused".to_owned()));

    let other =
        format!("{APP}[http.routers.other]\nrule = \"Host(`other.test`)\"\nservice = \"app\"\n");
    let second = compile(dynamic(&other), &ctx(), &registries);
    let lb2 = balancer(&second, "app@file");
    assert!(Arc::ptr_eq(&health1, lb2.health.as_ref().expect("checked")));
    // Server 1 is down, so the rotation (which continued) stays on server 0.
    assert_eq!(lb2.choose(&none, &mut cookies, None), Some(0));
    health1.record(1, Ok::<(), String>(()));
    let mut next_two = [
        lb2.choose(&none, &mut cookies, None),
        lb2.choose(&none, &mut cookies, None),
    ];
    next_two.sort();
    assert_eq!(
        next_two,
        [Some(0), Some(1)],
        "server 1 is back in the rotation"
    );

    // A changed server list is new state, but keeps what is known per URL.
    health1.record(0, Err("refused".to_owned()));
    let grown = format!(
        "{APP}[[http.services.app.loadBalancer.servers]]\nurl = \"http://127.0.0.1:1003\"\n"
    );
    let third = compile(dynamic(&grown), &ctx(), &registries);
    let lb3 = balancer(&third, "app@file");
    let health3 = lb3.health.as_ref().expect("checked");
    assert!(!Arc::ptr_eq(&health1, health3));
    assert!(!health3.is_up(0) && health3.is_up(1) && health3.is_up(2));

    // The API sees the newest state of each checked service.
    let report = serde_json::to_value(registries.health_report()).expect("serialises");
    let servers = &report["app@file"]["servers"];
    assert_eq!(servers["http://127.0.0.1:1001"]["status"], "DOWN");
    assert_eq!(servers["http://127.0.0.1:1001"]["lastError"], "refused");
    assert_eq!(servers["http://127.0.0.1:1003"]["status"], "UP");

    // Once no runtime holds the old state, a sweep forgets it.
    drop((first, second));
    registries.sweep();
    assert_eq!(registries.health_report().len(), 1);
    assert_eq!(
        registries.health_report()["app@file"].servers.len(),
        3,
        "the newest state"
    );
    drop((third, health1));
    registries.sweep();
    assert!(registries.health_report().is_empty());
}

#[test]
fn bad_service_definitions_disable_only_their_service() {
    let cases: &[(&str, &str)] = &[
        (
            "[http.services.s.loadBalancer]\n[[http.services.s.loadBalancer.servers]]\nurl = \"http://a:1\"\nweight = 0\n",
            "every server has weight 0",
        ),
        (
            "[http.services.s.loadBalancer]\nserversTransport = \"nope\"\n[[http.services.s.loadBalancer.servers]]\nurl = \"http://a:1\"\n",
            "servers transport `nope@file` does not exist",
        ),
        (
            "[http.services.s.loadBalancer]\n[[http.services.s.loadBalancer.servers]]\nurl = \"http://a:1\"\n[http.services.s.loadBalancer.healthCheck]\npath = \"health\"\n",
            "must be a path starting with `/`",
        ),
        (
            "[http.services.s.loadBalancer]\n[[http.services.s.loadBalancer.servers]]\nurl = \"http://a:1\"\n[http.services.s.loadBalancer.healthCheck]\npath = \"/h\"\ninterval = \"0s\"\n",
            "interval must be more than 0s",
        ),
        (
            "[http.services.s.loadBalancer]\n[[http.services.s.loadBalancer.servers]]\nurl = \"http://a:1\"\n[http.services.s.loadBalancer.healthCheck]\npath = \"/h\"\nmode = \"tcp\"\n",
            "mode `tcp` is not http or grpc",
        ),
        (
            "[http.services.s.loadBalancer]\n[[http.services.s.loadBalancer.servers]]\nurl = \"http://a:1\"\n[http.services.s.loadBalancer.healthCheck]\npath = \"/h\"\nmethod = \"G E T\"\n",
            "method `G E T` is not a valid method",
        ),
        (
            "[http.services.s.loadBalancer]\n[[http.services.s.loadBalancer.servers]]\nurl = \"ftp://a:1\"\n",
            "the scheme must be http, https or h2c",
        ),
        (
            "[http.services.s.loadBalancer]\n[[http.services.s.loadBalancer.servers]]\nurl = \"http://\"\n",
            "server url `http://`",
        ),
        (
            "[http.services.s.loadBalancer]\nserversTransport = \"t\"\n[[http.services.s.loadBalancer.servers]]\nurl = \"https://a:1\"\n[http.serversTransports.t]\nrootCAs = [\"-----BEGIN CERTIFICATE-----\\nnot base64\\n-----END CERTIFICATE-----\\n\"]\n",
            "rootCAs: inline PEM",
        ),
        (
            "[http.services.s.loadBalancer]\nserversTransport = \"t\"\n[[http.services.s.loadBalancer.servers]]\nurl = \"https://a:1\"\n[http.serversTransports.t]\nserverName = \"not a name\"\n",
            "serverName `not a name`",
        ),
        (
            "[http.services.s.mirroring]\nservice = \"good\"\n[[http.services.s.mirroring.mirrors]]\nname = \"missing\"\npercent = 10\n",
            "mirror `missing@file`: does not exist",
        ),
        (
            "[http.services.s.failover]\nservice = \"good\"\n",
            "failover fallback: no service name given",
        ),
        (
            "[http.services.s.weighted]\nservices = []\n",
            "the weighted service lists no services",
        ),
        (
            "[[http.services.s.weighted.services]]\nname = \"s\"\n",
            "refers to itself",
        ),
    ];
    let good = "[http.services.good.loadBalancer]\n[[http.services.good.loadBalancer.servers]]\nurl = \"http://127.0.0.1:9\"\n[http.routers.good]\nrule = \"Host(`good.test`)\"\nservice = \"good\"\n[http.routers.bad]\nrule = \"Host(`bad.test`)\"\nservice = \"s\"\n";
    for (service, error) in cases {
        let registries = Registries::default();
        let runtime = compile(dynamic(&format!("{good}{service}")), &ctx(), &registries);
        let report = &runtime.report.services["s@file"];
        assert_eq!(report.status, Status::Disabled, "{service}");
        assert!(
            report.errors.iter().any(|e| e.to_string().contains(error)),
            "`{error}` not in {:?}",
            report.errors
        );
        assert_eq!(runtime.report.routers["bad@file"].status, Status::Disabled);
        assert_eq!(runtime.report.services["good@file"].status, Status::Enabled);
        assert_eq!(runtime.report.routers["good@file"].status, Status::Enabled);
    }
}

/// The fallback of a failover over a load balancer is used even without
/// a health check (the default quarantine takes a refusing server out, and
/// `errors` sends listed answers there): no warning. Only a main service
/// gangway answers itself is never down.
#[test]
fn failover_warns_only_when_the_fallback_is_never_used() {
    let servers = "[http.services.a.loadBalancer]\n[[http.services.a.loadBalancer.servers]]\nurl = \"http://127.0.0.1:1\"\n[http.services.b.loadBalancer]\n[[http.services.b.loadBalancer.servers]]\nurl = \"http://127.0.0.1:2\"\n";
    let failover = |main: &str, more: &str| {
        format!(
            "{servers}[http.services.f.failover]\nservice = \"{main}\"\nfallback = \"b\"\n{more}"
        )
    };
    let mut ctx = ctx();
    ctx.internal.insert(
        "noop@internal".to_owned(),
        Arc::new(crate::runtime::NoChildRoute) as Arc<dyn InternalService>,
    );
    let errors = "[http.services.f.failover.errors]\nstatus = [\"500-504\"]\n";
    for (toml, warned) in [
        (failover("a", ""), false),
        (failover("a", errors), false),
        (failover("noop@internal", ""), true),
        (failover("noop@internal", errors), false),
    ] {
        let runtime = compile(dynamic(&toml), &ctx, &Registries::default());
        let f = &runtime.report.services["f@file"];
        let expected = if warned {
            Status::Warning
        } else {
            Status::Enabled
        };
        assert_eq!(f.status, expected, "{toml}");
        if warned {
            assert_eq!(f.errors[0].problem, Problem::FallbackNeverUsed);
            assert_eq!(
                f.errors[0].to_string(),
                "the main service is answered by gangway itself and is never down, so the fallback is never used"
            );
        }
    }
}

#[test]
fn a_service_with_two_bad_servers_reports_both() {
    let registries = Registries::default();
    let toml = "[http.routers.r]\nrule = \"Host(`r.test`)\"\nservice = \"s\"\n[http.services.s.loadBalancer]\n[[http.services.s.loadBalancer.servers]]\nurl = \"ftp://127.0.0.1:1\"\n[[http.services.s.loadBalancer.servers]]\nurl = \"http://127.0.0.1:2\"\n[[http.services.s.loadBalancer.servers]]\nurl = \"http://\"\n";
    let runtime = compile(dynamic(toml), &ctx(), &registries);
    let s = &runtime.report.services["s@file"];
    assert_eq!(s.status, Status::Disabled);
    let texts: Vec<String> = s.errors.iter().map(ToString::to_string).collect();
    assert_eq!(texts.len(), 2, "{texts:?}");
    assert!(texts[0].contains("ftp://127.0.0.1:1"), "{texts:?}");
    assert!(texts[1].contains("`http://`"), "{texts:?}");
    // The router names the service once, by its first problem.
    let r = &runtime.report.routers["r@file"];
    assert_eq!(r.errors.len(), 1, "{:?}", r.errors);
    assert!(matches!(
        &r.errors[0].problem,
        Problem::InReference { what: Reference::Service, name, .. } if name == "s@file"
    ));
}
