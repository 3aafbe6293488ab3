//! Compile's TLS part: which certificates are ordered, which routers are
//! TLS where, and what is refused.

use super::*;
use crate::config::format::{Format, parse_document};

fn ctx(ep_tls: Vec<Option<dynamic::RouterTls>>) -> CompileContext {
    CompileContext {
        entry_points: vec!["web".into(), "websecure".into()],
        not_default: Vec::new(),
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
        entry_point_tls: ep_tls,
        entry_point_middlewares: Vec::new(),
        cert_resolvers: vec!["le".into(), "dns".into()],
        dns_resolvers: vec!["dns".into()],
        internal: BTreeMap::new(),
        plugins: BTreeMap::new(),
        metrics: None,
        udp_entry_points: Vec::new(),
        default_rule_syntax: Default::default(),
    }
}

fn compile_toml(text: &str, ctx: &CompileContext) -> Runtime {
    let mut d: Dynamic = parse_document("d.toml", text, Format::Toml).expect("parses");
    let (merged, _) = crate::aggregate::merge([("file", &d)]);
    d = merged;
    compile(Arc::new(d), ctx, &Registries::default())
}

const SERVICE: &str = "[http.services.s.loadBalancer]\n[[http.services.s.loadBalancer.servers]]\nurl = \"http://127.0.0.1:1\"\n";

fn requests(rt: &Runtime) -> Vec<(Vec<String>, Vec<String>)> {
    rt.tls
        .requests
        .iter()
        .map(|r| (r.domains.clone(), r.routers.clone()))
        .collect()
}

#[test]
fn certificates_come_from_host_rules_or_tls_domains() {
    let text = format!(
        r#"{SERVICE}
[http.routers.a]
rule = "Host(`a.test`) || (Host(`B.test`) && Path(`/x`))"
service = "s"
[http.routers.a.tls]
certResolver = "le"
[http.routers.same]
rule = "Host(`b.test`) || Host(`a.test`)"
service = "s"
[http.routers.same.tls]
certResolver = "le"
[http.routers.d]
rule = "PathPrefix(`/`)"
service = "s"
[http.routers.d.tls]
certResolver = "le"
[[http.routers.d.tls.domains]]
main = "main.test"
sans = ["www.main.test"]
[[http.routers.d.tls.domains]]
main = "other.test"
[http.routers.notls]
rule = "Host(`plain.test`)"
service = "s"
"#
    );
    let rt = compile_toml(&text, &ctx(vec![None, None]));
    assert_eq!(
        requests(&rt),
        vec![
            (
                vec!["a.test".to_owned(), "b.test".to_owned()],
                vec!["a@file".to_owned(), "same@file".to_owned()]
            ),
            (
                vec!["main.test".to_owned(), "www.main.test".to_owned()],
                vec!["d@file".to_owned()]
            ),
            (vec!["other.test".to_owned()], vec!["d@file".to_owned()]),
        ]
    );
}

#[test]
fn names_that_cannot_be_ordered_are_reported_not_ordered() {
    let text = format!(
        r#"{SERVICE}
[http.routers.ip]
rule = "Host(`127.0.0.1`)"
service = "s"
[http.routers.ip.tls]
certResolver = "le"
[http.routers.ipdns]
rule = "Host(`127.0.0.2`)"
service = "s"
[http.routers.ipdns.tls]
certResolver = "dns"
[http.routers.wild]
rule = "PathPrefix(`/`)"
service = "s"
[http.routers.wild.tls]
certResolver = "le"
[[http.routers.wild.tls.domains]]
main = "*.wild.test"
[http.routers.nohost]
rule = "PathPrefix(`/`)"
service = "s"
[http.routers.nohost.tls]
certResolver = "le"
[http.routers.unknown]
rule = "Host(`u.test`)"
service = "s"
[http.routers.unknown.tls]
certResolver = "nope"
"#
    );
    let rt = compile_toml(&text, &ctx(vec![None, None]));
    // An address is ordered (RFC 8738) through HTTP-01 or TLS-ALPN-01.
    let ordered: Vec<&Vec<String>> = rt.tls.requests.iter().map(|r| &r.domains).collect();
    assert_eq!(ordered, [&vec!["127.0.0.1".to_owned()]]);
    let errors = |r: &str| {
        rt.report.routers[r]
            .errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(" | ")
    };
    assert!(
        errors("wild@file").contains("DNS-01"),
        "{}",
        errors("wild@file")
    );
    assert!(
        errors("ipdns@file").contains("validated only through HTTP-01 or TLS-ALPN-01"),
        "{}",
        errors("ipdns@file")
    );
    assert!(
        errors("nohost@file").contains("no host"),
        "{}",
        errors("nohost@file")
    );
    assert!(errors("unknown@file").contains("`nope` does not exist"));
    // Warnings only: every router still routes.
    assert!(
        rt.report
            .routers
            .values()
            .all(|r| r.status != crate::runtime::Status::Disabled)
    );
}

#[test]
fn wildcard_hosts_are_reported_not_ordered_and_their_other_names_are() {
    let text = format!(
        r#"{SERVICE}
[http.routers.mixed]
rule = "Host(`*.wild.test`) || Host(`ok.test`)"
service = "s"
[http.routers.mixed.tls]
certResolver = "le"
[http.routers.deep]
rule = "Host(`**.deep.test`)"
service = "s"
[http.routers.deep.tls]
certResolver = "le"
"#
    );
    let rt = compile_toml(&text, &ctx(vec![None, None]));
    // Only the plain name is ordered.
    assert_eq!(
        requests(&rt),
        vec![(vec!["ok.test".to_owned()], vec!["mixed@file".to_owned()])]
    );
    let problems = |r: &str| rt.report.routers[r].errors.clone();
    let mixed = problems("mixed@file");
    assert_eq!(mixed.len(), 1, "{mixed:?}");
    assert_eq!(mixed[0].option, Some("rule"));
    assert!(
        matches!(&mixed[0].problem, Problem::NotOrderable { domain, reason }
            if domain == "*.wild.test" && matches!(reason, Unorderable::WildcardWithoutDns { .. })),
        "{mixed:?}"
    );
    // One warning that says why, not a second one saying the router names no host.
    let deep = problems("deep@file");
    assert_eq!(deep.len(), 1, "{deep:?}");
    assert!(
        matches!(&deep[0].problem, Problem::NotOrderable { domain, reason }
            if domain == "**.deep.test" && *reason == Unorderable::AnyDepth),
        "{deep:?}"
    );
    assert!(
        rt.report
            .routers
            .values()
            .all(|r| r.status == crate::runtime::Status::Warning)
    );
}

#[test]
fn a_resolver_with_dns01_orders_wildcards_from_rules_and_domains() {
    let text = format!(
        r#"{SERVICE}
[http.routers.wild]
rule = "Host(`*.apps.test`)"
service = "s"
[http.routers.wild.tls]
certResolver = "dns"
[http.routers.listed]
rule = "Host(`www.site.test`)"
service = "s"
[http.routers.listed.tls]
certResolver = "dns"
[[http.routers.listed.tls.domains]]
main = "*.site.test"
sans = ["site.test"]
[http.routers.deep]
rule = "Host(`**.deep.test`)"
service = "s"
[http.routers.deep.tls]
certResolver = "dns"
[http.routers.plain]
rule = "Host(`*.plain.test`)"
service = "s"
[http.routers.plain.tls]
certResolver = "le"
"#
    );
    let rt = compile_toml(&text, &ctx(vec![None, None]));
    let mut got = requests(&rt);
    got.sort();
    assert_eq!(
        got,
        vec![
            (vec!["*.apps.test".to_owned()], vec!["wild@file".to_owned()]),
            (
                vec!["*.site.test".to_owned(), "site.test".to_owned()],
                vec!["listed@file".to_owned()]
            ),
        ]
    );
    let problems = |r: &str| rt.report.routers[r].errors.clone();
    assert!(problems("wild@file").is_empty());
    assert!(problems("listed@file").is_empty());
    // DNS-01 does not make `**.` orderable.
    assert!(matches!(&problems("deep@file")[0].problem,
        Problem::NotOrderable { reason, .. } if *reason == Unorderable::AnyDepth));
    // A resolver without DNS-01 says which resolver and what to set.
    let plain = problems("plain@file");
    assert_eq!(plain.len(), 1, "{plain:?}");
    assert_eq!(
        plain[0].problem.to_string(),
        "no certificate is ordered for `*.plain.test`: a wildcard name needs a wildcard \
         certificate, which only the DNS-01 challenge can get, and resolver `le` has no \
         dnsChallenge (set certificatesResolvers.le.acme.dnsChallenge, or serve a certificate \
         from tls.certificates)"
    );
}

#[test]
fn entry_point_tls_applies_to_its_routers_there_only() {
    let default_tls = dynamic::RouterTls {
        cert_resolver: Some("le".into()),
        ..dynamic::RouterTls::default()
    };
    let text = format!("{SERVICE}[http.routers.r]\nrule = \"Host(`r.test`)\"\nservice = \"s\"\n");
    let rt = compile_toml(&text, &ctx(vec![None, Some(default_tls)]));
    assert!(!rt.entry_points[0].routes[0].tls, "plain on web");
    assert!(rt.entry_points[1].routes[0].tls, "TLS on websecure");
    assert_eq!(
        requests(&rt),
        vec![(vec!["r.test".to_owned()], vec!["r@file".to_owned()])]
    );
}

#[test]
fn routers_with_missing_or_broken_tls_options_are_disabled() {
    let text = format!(
        r#"{SERVICE}
[http.routers.missing]
rule = "Host(`m.test`)"
service = "s"
[http.routers.missing.tls]
options = "nothere"
[http.routers.broken]
rule = "Host(`b.test`)"
service = "s"
[http.routers.broken.tls]
options = "old"
[http.routers.fine]
rule = "Host(`f.test`)"
service = "s"
[http.routers.fine.tls]
options = "modern"
[tls.options.old]
minVersion = "VersionTLS12"
maxVersion = "VersionTLS11"
[tls.options.modern]
minVersion = "VersionTLS13"
"#
    );
    let rt = compile_toml(&text, &ctx(vec![None, None]));
    let status = |r: &str| rt.report.routers[r].status;
    assert_eq!(status("missing@file"), crate::runtime::Status::Disabled);
    assert_eq!(status("broken@file"), crate::runtime::Status::Disabled);
    assert_eq!(status("fine@file"), crate::runtime::Status::Enabled);
    let names: Vec<&str> = rt.entry_points[0]
        .routes
        .iter()
        .map(|r| r.name.as_str())
        .collect();
    assert_eq!(names, ["fine@file"]);
}
