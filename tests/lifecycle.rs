//! Start-up and shutdown: SIGTERM drains in-flight requests, then exits 0;
//! configuration errors stop the start with a clear message.

mod support;

use http::StatusCode;
use std::process::Command;
use std::time::Duration;
use support::{Backend, Gangway, eventually};

#[tokio::test]
async fn sigterm_finishes_requests_in_flight_then_exits_cleanly() {
    // The backend says when the request has reached it, then takes its time.
    let (reached_tx, mut reached) = tokio::sync::mpsc::unbounded_channel::<()>();
    let slow = Backend::serve(move |_req| {
        let reached_tx = reached_tx.clone();
        async move {
            let _ = reached_tx.send(());
            tokio::time::sleep(Duration::from_millis(800)).await;
            http::Response::new(http_body_util::Full::new(bytes::Bytes::from_static(
                b"late",
            )))
        }
    })
    .await;
    let mut gw = Gangway::with_file(
        &support::one_route("slow", "Host(`slow.test`)", &[&slow.url()]),
        &[],
    )
    .await;
    eventually(Duration::from_secs(5), "routed", || async {
        gw.get("slow.test", "/").await.status == StatusCode::OK
    })
    .await;
    while reached.try_recv().is_ok() {}

    let url = gw.url("/");
    let in_flight = tokio::spawn(async move {
        let client =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .build_http::<http_body_util::Full<bytes::Bytes>>();
        let req = http::Request::get(url)
            .header("host", "slow.test")
            .body(Default::default())
            .unwrap();
        let resp = client
            .request(req)
            .await
            .expect("in-flight request answered");
        let status = resp.status();
        let body = http_body_util::BodyExt::collect(resp.into_body())
            .await
            .expect("body")
            .to_bytes();
        (status, body)
    });
    reached
        .recv()
        .await
        .expect("the request reached the backend");
    let status = tokio::task::spawn_blocking(move || {
        let status = gw.terminate();
        (status, gw)
    });
    let (code, body) = in_flight.await.expect("client task");
    assert_eq!(code, StatusCode::OK, "the request in flight was finished");
    assert_eq!(&body[..], b"late");
    let (exit, gw) = status.await.expect("terminate");
    assert!(exit.success(), "gangway exits 0 after draining: {exit:?}");
    assert!(
        tokio::net::TcpStream::connect(("127.0.0.1", gw.port))
            .await
            .is_err(),
        "no longer accepting"
    );
}

#[test]
fn configuration_errors_stop_the_start_and_name_the_key() {
    let out = Command::new(support::binary())
        .arg("--entryPoints.web.adress=:8000")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--entryPoints.web.adress") && err.contains("address"),
        "{err}"
    );

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("gangway.toml"),
        "[entryPoints.web]\naddress = \":8000\"\n\n[log]\nlevel = \"LOUD\"\n",
    )
    .unwrap();
    let out = Command::new(support::binary())
        .current_dir(dir.path())
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("gangway.toml") && err.contains("line 5"),
        "{err}"
    );
}

#[test]
fn help_lists_every_option_with_its_default() {
    let out = Command::new(support::binary())
        .arg("--help")
        .output()
        .expect("run");
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for option in [
        "entryPoints.<name>.address",
        "entryPoints.<name>.forwardedHeaders.trustedIPs",
        "providers.file.filename",
        "providers.file.watch",
        "providers.providersThrottleDuration",
        "log.level",
    ] {
        assert!(help.contains(option), "--help lists {option}:\n{help}");
    }
    assert!(help.contains("50ms"), "defaults are shown");
}

#[tokio::test]
async fn a_port_in_use_fails_the_start() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let out = tokio::process::Command::new(support::binary())
        .arg(format!("--entryPoints.web.address=127.0.0.1:{port}"))
        .output()
        .await
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("entry point `web`: cannot listen on 127.0.0.1:")
    );
}
