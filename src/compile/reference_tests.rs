//! Who uses what: middlewares reached through chains, and routers on entry
//! points that do not exist.

use super::*;
use crate::config::format::{Format, parse_document};
use crate::runtime::Status;

fn compile_toml(text: &str) -> Runtime {
    let ctx = CompileContext {
        entry_points: vec!["web".into(), "websecure".into()],
        ..CompileContext::default()
    };
    let d: Dynamic = parse_document("d.toml", text, Format::Toml).expect("parses");
    let (merged, _) = crate::aggregate::merge([("file", &d)]);
    compile(Arc::new(merged), &ctx, &Registries::default())
}

const SERVICE: &str = r#"
[http.services.s.loadBalancer]
[[http.services.s.loadBalancer.servers]]
url = "http://127.0.0.1:1"
"#;

fn users(rt: &Runtime, middleware: &str) -> (Vec<String>, Vec<String>) {
    let r = &rt.report.middlewares[middleware];
    (r.using.clone(), r.in_chains.clone())
}

#[test]
fn a_middleware_in_a_chain_is_used_by_the_chains_routers() {
    let rt = compile_toml(&format!(
        r#"{SERVICE}
[http.routers.r1]
rule = "Path(`/1`)"
service = "s"
middlewares = ["outer"]
[http.routers.r2]
rule = "Path(`/2`)"
service = "s"
middlewares = ["leaf", "inner"]
[http.middlewares.outer.chain]
middlewares = ["inner"]
[http.middlewares.inner.chain]
middlewares = ["leaf"]
[http.middlewares.leaf.stripPrefix]
prefixes = ["/x"]
[http.middlewares.alone.stripPrefix]
prefixes = ["/y"]
"#
    ));
    let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    // r2 names `leaf` itself and through `inner`: listed once.
    assert_eq!(
        users(&rt, "leaf@file"),
        (names(&["r1@file", "r2@file"]), names(&["inner@file"]))
    );
    assert_eq!(
        users(&rt, "inner@file"),
        (names(&["r1@file", "r2@file"]), names(&["outer@file"]))
    );
    assert_eq!(users(&rt, "outer@file"), (names(&["r1@file"]), vec![]));
    assert_eq!(users(&rt, "alone@file"), (vec![], vec![]));
}

#[test]
fn chains_in_a_cycle_end_and_are_still_reported() {
    let rt = compile_toml(&format!(
        r#"{SERVICE}
[http.routers.r]
rule = "Path(`/`)"
service = "s"
middlewares = ["a"]
[http.middlewares.a.chain]
middlewares = ["b"]
[http.middlewares.b.chain]
middlewares = ["a"]
"#
    ));
    assert_eq!(rt.report.routers["r@file"].status, Status::Disabled);
    assert_eq!(rt.report.middlewares["a@file"].using, ["r@file"]);
    assert_eq!(rt.report.middlewares["b@file"].using, ["r@file"]);
    assert_eq!(rt.report.middlewares["a@file"].in_chains, ["b@file"]);
}

#[test]
fn an_entry_point_that_does_not_exist_is_one_error_or_one_warning() {
    let rt = compile_toml(&format!(
        r#"{SERVICE}
[http.routers.nowhere]
rule = "Path(`/a`)"
service = "s"
entryPoints = ["nope"]
[http.routers.partly]
rule = "Path(`/b`)"
service = "s"
entryPoints = ["web", "nope"]
"#
    ));
    for (router, status) in [
        ("nowhere@file", Status::Disabled),
        ("partly@file", Status::Warning),
    ] {
        let r = &rt.report.routers[router];
        assert_eq!(r.status, status, "{router}");
        let problems: Vec<&Problem> = r.errors.iter().map(|e| &e.problem).collect();
        assert_eq!(
            problems,
            [&Problem::Missing {
                what: Reference::EntryPoint,
                name: "nope".into(),
            }],
            "{router}"
        );
    }
}

#[test]
fn headers_with_v2_only_options_work_and_name_them_in_a_warning() {
    let rt = compile_toml(&format!(
        r#"{SERVICE}
[http.routers.r]
rule = "Path(`/`)"
service = "s"
middlewares = ["secure"]
[http.middlewares.secure.headers]
sslRedirect = true
sslHost = "example.com"
featurePolicy = "camera 'none'"
stsSeconds = 31536000
"#
    ));
    assert_eq!(rt.report.routers["r@file"].status, Status::Enabled);
    let mw = &rt.report.middlewares["secure@file"];
    assert_eq!(mw.status, Status::Warning);
    let ignored: Vec<&str> = mw
        .errors
        .iter()
        .filter_map(|e| match &e.problem {
            Problem::IgnoredV2Option { option, .. } => Some(option.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        ignored,
        [
            "headers.featurePolicy",
            "headers.sslRedirect",
            "headers.sslHost"
        ]
    );
}

#[test]
fn entry_point_middlewares_come_first_on_that_entry_point_only() {
    let ctx = CompileContext {
        entry_points: vec!["web".into(), "websecure".into()],
        entry_point_middlewares: vec![vec!["strip".into(), "other@file".into()], Vec::new()],
        ..CompileContext::default()
    };
    let text = format!(
        r#"{SERVICE}
[http.routers.r]
rule = "Path(`/r`)"
service = "s"
middlewares = ["own"]
[http.middlewares.strip.stripPrefix]
prefixes = ["/a"]
[http.middlewares.other.stripPrefix]
prefixes = ["/b"]
[http.middlewares.own.stripPrefix]
prefixes = ["/c"]
"#
    );
    let d: Dynamic = parse_document("d.toml", &text, Format::Toml).expect("parses");
    let (merged, _) = crate::aggregate::merge([("file", &d)]);
    let rt = compile(Arc::new(merged), &ctx, &Registries::default());
    let report = &rt.report.routers["r@file"];
    assert_eq!(report.status, Status::Enabled, "{:?}", report.errors);
    assert_eq!(
        report.entry_point_middlewares,
        [(
            "web".to_owned(),
            vec!["strip@file".to_owned(), "other@file".to_owned()]
        )]
        .into()
    );
    let chain_len = |ep: usize| rt.entry_points[ep].routes[0].chain.len();
    assert_eq!(chain_len(0), 3, "the entry point's two, then the router's");
    assert_eq!(chain_len(1), 1, "websecure has none of its own");
    assert_eq!(users(&rt, "strip@file").0, ["r@file"]);
}

#[test]
fn a_missing_entry_point_middleware_disables_its_routers() {
    let ctx = CompileContext {
        entry_points: vec!["web".into()],
        entry_point_middlewares: vec![vec!["ghost".into()]],
        ..CompileContext::default()
    };
    let text = format!("{SERVICE}\n[http.routers.r]\nrule = \"Path(`/r`)\"\nservice = \"s\"\n");
    let d: Dynamic = parse_document("d.toml", &text, Format::Toml).expect("parses");
    let (merged, _) = crate::aggregate::merge([("file", &d)]);
    let rt = compile(Arc::new(merged), &ctx, &Registries::default());
    let report = &rt.report.routers["r@file"];
    assert_eq!(report.status, Status::Disabled);
    assert!(
        report.errors[0].to_string().contains("ghost@file"),
        "{}",
        report.errors[0]
    );
    assert!(rt.entry_points[0].routes.is_empty());
}
