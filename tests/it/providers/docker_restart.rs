//! The Docker daemon dies and comes back while gangway runs: gangway keeps
//! its routes meanwhile, reconnects, lists the containers again and follows
//! new events, without being restarted.
//!
//! Under a steady load the whole time: no request to a route that did not
//! change fails (the file provider's, and the container's while it runs).
//!
//! The daemon it kills and restarts is one it started itself, beside the
//! one already running (which it never touches), with the same flags each
//! time.

use crate::support;

use std::time::Duration;
use support::docker::{Load, PrivateDaemon, Probe, Run, Spec, ready};
use support::{Backend, Gangway, eventually, one_route};

const P: &str = "gangway";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn gangway_reconnects_relists_and_routes_again_after_dockerd_restarts() {
    const TEST: &str = "dockerd_restart";
    if !ready(TEST).await {
        return;
    }
    let mut daemon = match PrivateDaemon::start().await {
        Ok(d) => d,
        Err(e) => panic!("{TEST}: a daemon of the test's own did not start: {e}"),
    };
    let run = Run::on("restart", &daemon);
    // A file-provider route too: the daemon's restart must not touch it.
    let file_backend = Backend::serve(|_req| async {
        http::Response::new(http_body_util::Full::new(bytes::Bytes::from_static(
            b"file",
        )))
    })
    .await;
    let endpoint = run.endpoint().expect("a run on the test's own daemon");
    let gw = Gangway::with_file(
        &one_route("file", "Host(`file.test`)", &[&file_backend.url()]),
        &["--providers.docker", &run.constraint(), &endpoint],
    )
    .await;
    let gangway_pid = gw.pid();
    let probe = Probe::new(&gw);
    let before = Spec::new("before")
        .routed(P, "before", "before.test", "before")
        .args(&["--restart", "always"]);
    run.start(&before).await;
    eventually(Duration::from_secs(10), "routed before the restart", || {
        probe.answers("before.test", "before")
    })
    .await;
    eventually(Duration::from_secs(10), "file route", || {
        probe.answers("file.test", "file")
    })
    .await;
    // Steady load through the whole restart on the file route, and on the
    // container's route for as long as its container runs (until the
    // daemon comes back and restarts it).
    let file_load = Load::start(&probe, "file.test", &["file"], 4);
    let docker_load = Load::start(&probe, "before.test", &["before"], 4);

    // The daemon dies (its containers keep running: containerd holds them).
    daemon.kill().await;
    eventually(Duration::from_secs(10), "gangway notices", || async {
        gw.log().contains("Docker unreachable")
    })
    .await;
    // Meanwhile the last known routes stay in use.
    for _ in 0..20 {
        assert!(
            probe.answers("before.test", "before").await,
            "the route was dropped while Docker was away"
        );
    }
    let (docker_ok, docker_failed) = docker_load.finish().await;
    eprintln!(
        "before.test while dockerd was down: {docker_ok} answered, {} failed",
        docker_failed.len()
    );
    assert!(docker_ok > 0);
    assert!(
        docker_failed.is_empty(),
        "the container kept running, so its route must keep answering: {docker_failed:?}"
    );

    // The daemon comes back with the same flags.
    let restart_load = Load::start(&probe, "before.test", &["before"], 4);
    if let Err(e) = daemon.restart().await {
        panic!("the test's daemon did not come back: {e}");
    }
    // It restores (here: restarts) the running container; gangway re-lists.
    eventually(
        Duration::from_secs(30),
        "routed again after the restart",
        || probe.answers("before.test", "before"),
    )
    .await;
    // Not asserted: dockerd without live-restore restarts the container, so
    // its route changes and some requests fail until it is back.
    let (ok, failed) = restart_load.finish().await;
    eprintln!(
        "before.test while dockerd restarted its container: {ok} answered, {} failed (first: {:?})",
        failed.len(),
        failed.first()
    );
    // And follows events again: a new container is routed, a stopped one goes.
    let after = Spec::new("after").routed(P, "after", "after.test", "after");
    let after_name = run.start(&after).await;
    eventually(Duration::from_secs(10), "a new container is routed", || {
        probe.answers("after.test", "after")
    })
    .await;
    run.docker(&["rm", "-f", &after_name]).await.expect("rm");
    eventually(
        Duration::from_secs(5),
        "a removed container stops answering",
        || async { probe.status("after.test").await != 200 },
    )
    .await;
    let (file_ok, file_failed) = file_load.finish().await;
    eprintln!(
        "file.test through the whole dockerd restart: {file_ok} answered, {} failed",
        file_failed.len()
    );
    assert!(file_ok > 0);
    assert!(
        file_failed.is_empty(),
        "a route that did not change lost requests: {file_failed:?}"
    );
    assert_eq!(gw.pid(), gangway_pid);
    assert!(gw.log().contains("Docker unreachable"), "{}", gw.log());
}
