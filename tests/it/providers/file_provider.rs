//! The file provider: edits take effect without a restart, swaps lose no
//! request, a broken file keeps the last good configuration.

use crate::support;

use http::StatusCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use support::{Backend, Gangway, eventually};

#[tokio::test]
async fn an_edit_changes_routing_within_a_second() {
    let a = Backend::echo("a").await;
    let b = Backend::echo("b").await;
    let gw = Gangway::with_file(
        &support::one_route("app", "Host(`app.test`)", &[&a.url()]),
        &[],
    )
    .await;
    eventually(Duration::from_secs(5), "first config", || async {
        gw.get("app.test", "/").await.status == StatusCode::OK
    })
    .await;

    gw.rewrite(&support::one_route("app", "Host(`app.test`)", &[&b.url()]));
    let started = Instant::now();
    eventually(Duration::from_secs(1), "edit applied within 1s", || async {
        gw.get("app.test", "/").await.status == StatusCode::OK
            && gw.get("app.test", "/").await.seen().backend == "b"
    })
    .await;
    eprintln!("edit applied after {:?}", started.elapsed());

    gw.rewrite(&support::one_route(
        "other",
        "Host(`other.test`)",
        &[&b.url()],
    ));
    eventually(
        Duration::from_secs(1),
        "router removed within 1s",
        || async { gw.get("app.test", "/").await.status == StatusCode::NOT_FOUND },
    )
    .await;
}

#[tokio::test]
async fn a_hundred_edits_under_load_lose_no_request() {
    let a = Backend::echo("a").await;
    let b = Backend::echo("b").await;
    let base = support::one_route("stable", "Host(`stable.test`)", &[&a.url()]);
    let gw = Arc::new(Gangway::with_file(&base, &[]).await);
    eventually(Duration::from_secs(5), "first config", || async {
        gw.get("stable.test", "/").await.status == StatusCode::OK
    })
    .await;

    let stop = Arc::new(AtomicBool::new(false));
    let ok = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicUsize::new(0));
    let mut load = Vec::new();
    for _ in 0..8 {
        let (gw, stop, ok, failed) = (gw.clone(), stop.clone(), ok.clone(), failed.clone());
        load.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let got = gw.get("stable.test", "/").await;
                if got.status == StatusCode::OK && got.seen().backend == "a" {
                    ok.fetch_add(1, Ordering::Relaxed);
                } else {
                    failed.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    for i in 0..100 {
        // Each edit changes another router, so every edit is a real swap.
        let extra = support::one_route(
            &format!("churn{i}"),
            &format!("Host(`churn{i}.test`)"),
            &[&b.url()],
        );
        gw.rewrite(&format!("{base}{extra}"));
        let host = format!("churn{i}.test");
        eventually(Duration::from_secs(2), "edit applied", || {
            let (gw, host) = (gw.clone(), host.clone());
            async move { gw.get(&host, "/").await.status == StatusCode::OK }
        })
        .await;
    }
    stop.store(true, Ordering::Relaxed);
    for l in load {
        l.await.expect("load task");
    }
    let (ok, failed) = (ok.load(Ordering::Relaxed), failed.load(Ordering::Relaxed));
    eprintln!("{ok} requests during 100 swaps");
    assert_eq!(failed, 0, "{failed} of {} requests failed", ok + failed);
    assert!(ok > 100, "the load actually ran ({ok} requests)");
}

#[tokio::test]
async fn a_broken_edit_keeps_the_old_routes_and_reports_the_error() {
    let a = Backend::echo("a").await;
    let gw = Gangway::with_file(
        &support::one_route("app", "Host(`app.test`)", &[&a.url()]),
        &[],
    )
    .await;
    eventually(Duration::from_secs(5), "first config", || async {
        gw.get("app.test", "/").await.status == StatusCode::OK
    })
    .await;

    // A mistyped key disables its own router only.
    gw.rewrite(&format!(
        "{}[http.routers.typo]\nrule = \"Host(`typo.test`)\"\nservise = \"app\"\n",
        support::one_route("app", "Host(`app.test`)", &[&a.url()])
    ));
    eventually(Duration::from_secs(2), "error logged", || async {
        gw.log().contains("servise")
    })
    .await;
    let log = gw.log();
    assert!(
        log.contains("dynamic.toml:9: unknown option `servise` (did you mean `service`?)"),
        "{log}"
    );
    assert_eq!(
        gw.get("app.test", "/").await.status,
        StatusCode::OK,
        "the rest of the file serves"
    );

    // A file that does not parse at all: the last good version stays.
    gw.rewrite("this is not toml = = =");
    eventually(Duration::from_secs(2), "syntax error logged", || async {
        gw.log().contains("configuration rejected")
    })
    .await;
    assert_eq!(gw.get("app.test", "/").await.status, StatusCode::OK);
}

#[tokio::test]
async fn a_mistyped_key_disables_its_router_while_a_new_router_of_the_same_edit_routes() {
    let old_app = Backend::echo("old").await;
    let new_app = Backend::echo("new").await;
    let api = "[http.routers.gw]\nrule = \"Host(`gw.test`)\"\nservice = \"api@internal\"\n";
    let old = format!(
        "{api}{}",
        support::one_route("old", "Host(`old.test`)", &[&old_app.url()])
    );
    let gw = Gangway::with_file(&old, &["--api=true"]).await;
    eventually(Duration::from_secs(5), "first config", || async {
        gw.get("old.test", "/").await.status == StatusCode::OK
    })
    .await;

    // One edit: a good new router, and a router with `servce` for `service`.
    let edit = format!(
        "{old}{}[http.routers.bad]\nrule = \"Host(`bad.test`)\"\nservce = \"good\"\n",
        support::one_route("good", "Host(`good.test`)", &[&new_app.url()])
    );
    let bad_line = edit
        .lines()
        .position(|l| l.starts_with("servce"))
        .expect("the typo")
        + 1;
    gw.rewrite(&edit);
    eventually(Duration::from_secs(5), "the new router routes", || async {
        gw.get("good.test", "/").await.status == StatusCode::OK
    })
    .await;
    assert_eq!(gw.get("good.test", "/").await.seen().backend, "new");
    assert_eq!(gw.get("old.test", "/").await.seen().backend, "old");
    assert_eq!(gw.get("bad.test", "/").await.status, StatusCode::NOT_FOUND);

    let got = gw.get("gw.test", "/api/http/routers/bad@file").await;
    assert_eq!(got.status, StatusCode::OK);
    let bad: serde_json::Value = serde_json::from_slice(&got.body).expect("router json");
    assert_eq!(bad["status"], "disabled", "{bad}");
    let problem = &bad["problems"][0];
    assert_eq!(problem["kind"], "unknownOption", "{bad}");
    assert_eq!(problem["option"], "servce", "{bad}");
    assert_eq!(problem["suggestion"], "service", "{bad}");
    assert_eq!(
        problem["origin"],
        serde_json::json!({
            "type": "file",
            "path": gw.dynamic.display().to_string(),
            "line": bad_line,
        }),
        "{bad}"
    );
    assert_eq!(
        file_provider_error(&gw).await,
        None,
        "the provider itself read its file"
    );
}

/// gangway started by hand on a directory (the harness passes a filename),
/// stopped when dropped.
struct OnDirectory {
    child: std::process::Child,
    port: u16,
    client: hyper_util::client::legacy::Client<
        hyper_util::client::legacy::connect::HttpConnector,
        http_body_util::Full<bytes::Bytes>,
    >,
}

impl OnDirectory {
    fn start(dir: &std::path::Path) -> OnDirectory {
        let port = support::free_port();
        let child = std::process::Command::new(support::binary())
            .args([
                format!("--entryPoints.web.address=127.0.0.1:{port}"),
                format!("--providers.file.directory={}", dir.display()),
                "--providers.providersThrottleDuration=20ms".to_owned(),
                "--api=true".to_owned(),
            ])
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start");
        let client =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .build_http();
        OnDirectory {
            child,
            port,
            client,
        }
    }

    /// The status and body for `host` and `path`; None while gangway does
    /// not answer.
    async fn get(&self, host: &str, path: &str) -> Option<(StatusCode, bytes::Bytes)> {
        use http_body_util::BodyExt;
        let req = http::Request::get(format!("http://127.0.0.1:{}{path}", self.port))
            .header("host", host)
            .body(Default::default())
            .ok()?;
        let resp = self.client.request(req).await.ok()?;
        let status = resp.status();
        let body = resp.into_body().collect().await.ok()?.to_bytes();
        Some((status, body))
    }

    /// The backend that answered `host`, if one did.
    async fn backend(&self, host: &str) -> Option<String> {
        let (status, body) = self.get(host, "/").await?;
        let seen: serde_json::Value = serde_json::from_slice(&body).ok()?;
        (status == StatusCode::OK).then(|| seen["backend"].as_str().map(str::to_owned))?
    }

    async fn provider_error(&self) -> Option<String> {
        let (_, body) = self.get("gw.test", "/api/providers").await?;
        let providers: serde_json::Value = serde_json::from_slice(&body).ok()?;
        providers["file"]["lastError"].as_str().map(str::to_owned)
    }
}

impl Drop for OnDirectory {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn a_file_of_a_directory_that_does_not_parse_keeps_its_objects_while_others_change() {
    let a = Backend::echo("a").await;
    let b = Backend::echo("b").await;
    let dir = tempfile::tempdir().expect("tempdir");
    let api = "[http.routers.gw]\nrule = \"Host(`gw.test`)\"\nservice = \"api@internal\"\n";
    let one = dir.path().join("one.toml");
    let two = dir.path().join("two.yml");
    std::fs::write(
        &one,
        format!(
            "{api}{}",
            support::one_route("one", "Host(`one.test`)", &[&a.url()])
        ),
    )
    .unwrap();
    let two_good = format!(
        "http:\n  routers:\n    two:\n      rule: Host(`two.test`)\n      service: two\n  services:\n    two:\n      loadBalancer:\n        servers:\n          - url: {}\n",
        a.url()
    );
    std::fs::write(&two, &two_good).unwrap();
    let gw = OnDirectory::start(dir.path());
    eventually(Duration::from_secs(10), "both files route", || async {
        gw.backend("one.test").await.as_deref() == Some("a")
            && gw.backend("two.test").await.as_deref() == Some("a")
    })
    .await;

    // two.yml breaks (an unclosed flow list from line 4) while one.toml
    // changes its server.
    std::fs::write(
        &two,
        "http:\n  routers:\n    two:\n      rule: [Host(`two.test`)\n",
    )
    .unwrap();
    std::fs::write(
        &one,
        format!(
            "{api}{}",
            support::one_route("one", "Host(`one.test`)", &[&b.url()])
        ),
    )
    .unwrap();
    eventually(
        Duration::from_secs(5),
        "one.toml's change applies",
        || async { gw.backend("one.test").await.as_deref() == Some("b") },
    )
    .await;
    let place = format!("{}:", two.display());
    eventually(
        Duration::from_secs(5),
        "lastError names two.yml",
        || async {
            gw.provider_error()
                .await
                .is_some_and(|e| e.starts_with(&place))
        },
    )
    .await;
    let error = gw.provider_error().await.expect("an error");
    let line: usize = error[place.len()..]
        .split(':')
        .next()
        .and_then(|l| l.parse().ok())
        .unwrap_or_else(|| panic!("a line in {error}"));
    assert!((4..=5).contains(&line), "{error}");
    assert_eq!(
        gw.backend("two.test").await.as_deref(),
        Some("a"),
        "two.yml's last good objects stay"
    );

    // Mended: the error goes.
    std::fs::write(&two, &two_good).unwrap();
    eventually(Duration::from_secs(5), "the error clears", || async {
        gw.get("gw.test", "/api/providers").await.is_some() && gw.provider_error().await.is_none()
    })
    .await;
}

/// `/api/providers`' `lastError` of the file provider, through the router
/// that sends `gw.test` to the API.
async fn file_provider_error(gw: &Gangway) -> Option<String> {
    let providers: serde_json::Value =
        serde_json::from_slice(&gw.get("gw.test", "/api/providers").await.body)
            .expect("providers json");
    providers["file"]["lastError"].as_str().map(str::to_owned)
}

#[tokio::test]
async fn a_half_written_file_keeps_the_old_routes_until_it_is_whole() {
    let a = Backend::echo("a").await;
    let b = Backend::echo("b").await;
    let api = "[http.routers.gw]\nrule = \"Host(`gw.test`)\"\nservice = \"api@internal\"\n";
    let old = format!(
        "{api}{}",
        support::one_route("app", "Host(`app.test`)", &[&a.url()])
    );
    let new = format!(
        "{api}{}{}",
        support::one_route("app", "Host(`app.test`)", &[&b.url()]),
        support::one_route("extra", "Host(`extra.test`)", &[&b.url()])
    );
    let gw = Arc::new(Gangway::with_file(&old, &["--api=true"]).await);
    eventually(Duration::from_secs(5), "first config", || async {
        gw.get("app.test", "/").await.status == StatusCode::OK
    })
    .await;

    // Requests to app.test all the time: none may fail, whatever the file holds.
    let stop = Arc::new(AtomicBool::new(false));
    let failed = Arc::new(AtomicUsize::new(0));
    let ok = Arc::new(AtomicUsize::new(0));
    let load: Vec<_> = (0..4)
        .map(|_| {
            let (gw, stop, ok, failed) = (gw.clone(), stop.clone(), ok.clone(), failed.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    if gw.get("app.test", "/").await.status == StatusCode::OK {
                        ok.fetch_add(1, Ordering::Relaxed);
                    } else {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();

    // Written in place (no rename), first half: cut inside the new router's
    // rule, so it does not parse.
    let cut = new.find("extra.test").expect("cut point");
    let reported = |gw: Arc<Gangway>| async move {
        file_provider_error(&gw)
            .await
            .is_some_and(|e| e.contains("dynamic.toml"))
    };
    std::fs::write(&gw.dynamic, &new[..cut]).unwrap();
    eventually(Duration::from_secs(5), "the error in the API", || {
        reported(gw.clone())
    })
    .await;
    assert!(gw.log().contains("dynamic.toml"), "{}", gw.log());
    assert_eq!(
        gw.get("app.test", "/").await.seen().backend,
        "a",
        "old routes stay"
    );
    assert_eq!(
        gw.get("extra.test", "/").await.status,
        StatusCode::NOT_FOUND
    );

    // The rest arrives: the whole file takes effect, the error goes.
    std::fs::write(&gw.dynamic, &new).unwrap();
    eventually(
        Duration::from_secs(5),
        "the complete file applied",
        || async {
            gw.get("extra.test", "/").await.status == StatusCode::OK
                && gw.get("app.test", "/").await.seen().backend == "b"
                && file_provider_error(&gw).await.is_none()
        },
    )
    .await;

    // Emptied in place (`> dynamic.toml`), and left so: not an empty
    // configuration but an error; the routes stay.
    std::fs::write(&gw.dynamic, "").unwrap();
    eventually(
        Duration::from_secs(5),
        "the empty file reported",
        || async {
            file_provider_error(&gw)
                .await
                .is_some_and(|e| e.contains("empty"))
        },
    )
    .await;
    assert_eq!(gw.get("extra.test", "/").await.status, StatusCode::OK);

    // Truncated mid-file and left so: the error stays, so do the routes.
    std::fs::write(&gw.dynamic, &new[..cut]).unwrap();
    eventually(
        Duration::from_secs(5),
        "the truncation reported",
        || async {
            file_provider_error(&gw)
                .await
                .is_some_and(|e| !e.contains("empty"))
        },
    )
    .await;
    for _ in 0..20 {
        assert_eq!(gw.get("extra.test", "/").await.status, StatusCode::OK);
    }

    stop.store(true, Ordering::Relaxed);
    for l in load {
        l.await.unwrap();
    }
    let (ok, failed) = (ok.load(Ordering::Relaxed), failed.load(Ordering::Relaxed));
    eprintln!("app.test while the file was half-written: {ok} answered, {failed} failed");
    assert!(ok > 0);
    assert_eq!(failed, 0, "old routes stay while the file is broken");
}

/// A file written as Traefik users write them: option names in another
/// case, a list as one comma-separated string, numbers and flags quoted.
/// Traefik reads it; so does gangway, and the router works as written.
#[tokio::test]
async fn keys_in_another_case_and_scalars_of_another_kind_read_as_traefik_reads_them() {
    let app = Backend::echo("app").await;
    let file = format!(
        "[http.routers.gw]\nrule = \"Host(`gw.test`)\"\nservice = \"api@internal\"\n\
         [HTTP.Routers.app]\n\
         Rule = \"Host(`app.test`)\"\n\
         Service = \"app\"\n\
         Middlewares = \"auth, strip\"\n\
         Priority = \"10\"\n\
         [http.middlewares.auth.basicauth]\n\
         Users = \"alice:{{SHA}}87u9ZqY9S/F0eUBXjsPQEDUw4h0=\"\n\
         RemoveHeader = \"true\"\n\
         [http.middlewares.strip.StripPrefix]\n\
         prefixes = \"/api\"\n\
         [http.services.app.LoadBalancer]\n\
         PassHostHeader = \"false\"\n\
         [[http.services.app.LoadBalancer.Servers]]\n\
         URL = \"{}\"\n",
        app.url()
    );
    let gw = Gangway::with_file(&file, &["--api=true"]).await;
    let login = |pass: &str| {
        use base64::Engine as _;
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("alice:{pass}"))
        )
    };
    let request = |auth: Option<String>| {
        let mut req = http::Request::get(gw.url("/api/items")).header("host", "app.test");
        if let Some(auth) = auth {
            req = req.header("authorization", auth);
        }
        req.body(http_body_util::Full::default()).unwrap()
    };
    eventually(Duration::from_secs(5), "the router routes", || async {
        gw.send(request(Some(login("hunter2")))).await.status == StatusCode::OK
    })
    .await;
    let got = gw.send(request(Some(login("hunter2")))).await;
    let seen = got.seen();
    assert_eq!(seen.backend, "app");
    assert_eq!(seen.uri, "/items", "stripPrefix from `prefixes = \"/api\"`");
    assert_eq!(
        seen.header("authorization"),
        None,
        "removeHeader = \"true\""
    );
    assert_ne!(
        seen.header("host"),
        Some("app.test"),
        "passHostHeader = \"false\""
    );
    assert_eq!(
        gw.send(request(Some(login("wrong")))).await.status,
        StatusCode::UNAUTHORIZED,
        "the user list read from one string"
    );
    assert_eq!(file_provider_error(&gw).await, None);
}
