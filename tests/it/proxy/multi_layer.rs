//! Multi-layer routing (Traefik 3.6's `parentRefs`) through the real
//! binary and the file provider: a parent router's middlewares run first,
//! its children are chosen on the request as those middlewares left it,
//! then the child's middlewares run; children are never reached without
//! their parent; a child whose parent does not exist is disabled with why.

use crate::support;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::Full;
use std::time::Duration;
use support::{Backend, Gangway, eventually};

fn service(name: &str, backend: &Backend) -> String {
    format!(
        "[http.services.{name}.loadBalancer]\n[[http.services.{name}.loadBalancer.servers]]\nurl = \"{}\"\n",
        backend.url()
    )
}

fn config(admin: &Backend, users: &Backend) -> String {
    let mut conf = String::from(
        r#"
[http.routers.portal]
rule = "Host(`portal.test`)"
middlewares = ["outer"]

[http.routers.admin]
parentRefs = ["portal"]
rule = "PathPrefix(`/outer/admin`)"
middlewares = ["inner"]
service = "admin"

[http.routers.users]
parentRefs = ["portal@file"]
rule = "PathPrefix(`/outer`) && Header(`X-Role`, `user`)"
service = "users"

[http.routers.orphan]
parentRefs = ["ghost"]
rule = "PathPrefix(`/`)"
service = "admin"

[http.routers.api]
rule = "Host(`api.test`)"
service = "api@internal"

[http.middlewares.outer.addPrefix]
prefix = "/outer"

[http.middlewares.inner.addPrefix]
prefix = "/inner"
"#,
    );
    conf.push_str(&service("admin", admin));
    conf.push_str(&service("users", users));
    conf
}

fn get(gw: &Gangway, host: &str, path: &str, role: Option<&str>) -> Request<Full<Bytes>> {
    let mut req = Request::get(gw.url(path)).header("host", host);
    if let Some(role) = role {
        req = req.header("x-role", role);
    }
    req.body(Full::default()).unwrap()
}

#[tokio::test]
async fn parent_middlewares_run_first_and_children_match_what_they_left() {
    let admin = Backend::echo("admin").await;
    let users = Backend::echo("users").await;
    let gw = Gangway::with_file(&config(&admin, &users), &["--api=true"]).await;
    eventually(Duration::from_secs(5), "config applied", || async {
        gw.send(get(&gw, "portal.test", "/admin/x", None))
            .await
            .status
            == StatusCode::OK
    })
    .await;

    // The child's rule names `/outer`, which only the parent's middleware
    // adds; the child's own prefix lands outside the parent's, so the
    // parent's middleware ran first.
    let got = gw.send(get(&gw, "portal.test", "/admin/x", None)).await;
    let seen = got.seen();
    assert_eq!(seen.backend, "admin");
    assert_eq!(seen.uri, "/inner/outer/admin/x");

    // The other child, chosen on a header the client sent.
    let got = gw
        .send(get(&gw, "portal.test", "/reports", Some("user")))
        .await;
    assert_eq!(got.status, StatusCode::OK);
    let seen = got.seen();
    assert_eq!(seen.backend, "users");
    assert_eq!(seen.uri, "/outer/reports");

    // The parent matched and no child did: 404, from the parent.
    assert_eq!(
        gw.send(get(&gw, "portal.test", "/reports", Some("guest")))
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    // Children are not in the entry point's table: a request the parent
    // does not match never reaches them, even one their rule would take.
    assert_eq!(
        gw.send(get(&gw, "elsewhere.test", "/outer/admin", Some("user")))
            .await
            .status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn a_child_whose_parent_does_not_exist_is_disabled_with_why() {
    let admin = Backend::echo("admin").await;
    let users = Backend::echo("users").await;
    let gw = Gangway::with_file(&config(&admin, &users), &["--api=true"]).await;
    eventually(Duration::from_secs(5), "config applied", || async {
        gw.api_json("/api/http/routers/orphan@file").await["status"] == "disabled"
    })
    .await;
    let orphan = gw.api_json("/api/http/routers/orphan@file").await;
    let problems = orphan["problems"].to_string();
    assert!(
        problems.contains("parent router `ghost@file` does not exist"),
        "{orphan}"
    );
    assert!(
        problems.contains("dynamic.toml"),
        "where it is written: {orphan}"
    );
    // Its rule would take everything; being disabled it takes nothing.
    assert_eq!(
        gw.send(get(&gw, "any.test", "/", None)).await.status,
        StatusCode::NOT_FOUND
    );

    // The API shows the tree: children name their parent, qualified, and
    // are on no entry point of their own.
    let child = gw.api_json("/api/http/routers/admin@file").await;
    assert_eq!(child["status"], "enabled", "{child}");
    assert_eq!(child["parentRefs"], serde_json::json!(["portal@file"]));
    assert_eq!(child["using"], serde_json::json!([]), "{child}");
    let parent = gw.api_json("/api/http/routers/portal@file").await;
    assert_eq!(parent["status"], "enabled", "{parent}");
    assert!(parent.get("service").is_none(), "{parent}");
}
