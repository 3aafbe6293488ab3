//! The file provider: edits take effect without a restart, swaps lose no
//! request, a broken file keeps the last good configuration.

mod support;

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

    gw.rewrite("[http.routers.app]\nrule = \"Host(`app.test`)\"\nservise = \"app\"\n");
    eventually(Duration::from_secs(2), "error logged", || async {
        gw.log().contains("servise")
    })
    .await;
    let log = gw.log();
    assert!(
        log.contains("dynamic.toml:3: unknown field `servise`"),
        "{log}"
    );
    assert_eq!(
        gw.get("app.test", "/").await.status,
        StatusCode::OK,
        "last good configuration still serves"
    );

    gw.rewrite("this is not toml = = =");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(gw.get("app.test", "/").await.status, StatusCode::OK);
}

#[tokio::test]
async fn a_directory_of_toml_and_yaml_files_is_one_configuration() {
    let a = Backend::echo("a").await;
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("routers.yml"),
        "http:\n  routers:\n    app:\n      rule: \"Host(`dir.test`)\"\n      service: app\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("services.toml"),
        format!("[http.services.app.loadBalancer]\n[[http.services.app.loadBalancer.servers]]\nurl = \"{}\"\n", a.url()),
    )
    .unwrap();
    let flag = format!("--providers.file.directory={}", dir.path().display());
    // The harness also passes a filename; a directory flag makes the config ambiguous, so start by hand.
    let port = support::free_port();
    let mut child = std::process::Command::new(support::binary())
        .args([format!("--entryPoints.web.address=127.0.0.1:{port}"), flag])
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start");
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<http_body_util::Full<bytes::Bytes>>();
    let get = || async {
        let req = http::Request::get(format!("http://127.0.0.1:{port}/"))
            .header("host", "dir.test")
            .body(Default::default())
            .unwrap();
        client.request(req).await.map(|r| r.status()).ok()
    };
    eventually(Duration::from_secs(10), "directory routes", || async {
        get().await == Some(StatusCode::OK)
    })
    .await;
    // A new file in the directory is picked up too, and may use the other files' services.
    std::fs::write(
        dir.path().join("more.toml"),
        "[http.routers.app2]\nrule = \"Host(`dir2.test`)\"\nservice = \"app\"\n",
    )
    .unwrap();
    let get2 = || async {
        let req = http::Request::get(format!("http://127.0.0.1:{port}/"))
            .header("host", "dir2.test")
            .body(Default::default())
            .unwrap();
        client.request(req).await.map(|r| r.status()).ok()
    };
    eventually(Duration::from_secs(2), "new file routes", || async {
        get2().await == Some(StatusCode::OK)
    })
    .await;
    let _ = child.kill();
    let _ = child.wait();
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
