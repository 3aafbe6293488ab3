//! `gangway healthcheck [--ping]`, run as a container's `HEALTHCHECK` runs
//! `traefik healthcheck --ping`: against the real binary, healthy, not
//! enabled, unreachable and shutting down, with Traefik's messages and exit
//! codes.

use crate::support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use support::{Backend, Gangway, binary, eventually, free_port};

/// Runs `gangway healthcheck ARGS` in `dir` with `env`; (status, stdout).
fn healthcheck(dir: &Path, args: &[String], env: &[(&str, &str)]) -> (i32, String) {
    let out = Command::new(binary())
        .arg("healthcheck")
        .args(args)
        .current_dir(dir)
        .env_clear()
        .envs(env.iter().copied())
        .output()
        .expect("run gangway healthcheck");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[tokio::test]
async fn healthy_gangway_is_reported_healthy_from_flags_a_traefik_yml_and_variables() {
    let app = Backend::echo("app").await;
    let gw = Gangway::with_file(
        &support::one_route("app", "Host(`app.test`)", &[&app.url()]),
        &["--ping", "--ping.entryPoint=web"],
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let address = format!("127.0.0.1:{}", gw.port);
    let args = [
        "--ping".to_owned(),
        "--ping.entryPoint=web".to_owned(),
        format!("--entryPoints.web.address={address}"),
    ];
    // /ping is routed once the first configuration is applied, as a
    // container's health check retries until then.
    let last = std::cell::RefCell::new(String::new());
    eventually(Duration::from_secs(5), "the check passes", || {
        let (status, out) = healthcheck(dir.path(), &args, &[]);
        *last.borrow_mut() = out;
        async move { status == 0 }
    })
    .await;
    assert_eq!(
        last.borrow().as_str(),
        format!("OK: http://{address}/ping\n")
    );

    // The same static configuration as the start: a traefik.yml where
    // Traefik looks, and TRAEFIK_ variables.
    std::fs::write(
        dir.path().join("traefik.yml"),
        format!("entryPoints:\n  web:\n    address: '{address}'\nping:\n  entryPoint: web\n"),
    )
    .unwrap();
    let (status, out) = healthcheck(dir.path(), &[], &[]);
    assert_eq!(status, 0, "{out}");
    let other = tempfile::tempdir().unwrap();
    let (status, out) = healthcheck(
        other.path(),
        &["--ping".to_owned()],
        &[
            ("TRAEFIK_ENTRYPOINTS_WEB_ADDRESS", address.as_str()),
            ("TRAEFIK_PING_ENTRYPOINT", "web"),
        ],
    );
    assert_eq!(status, 0, "{out}");
}

#[test]
fn without_ping_or_without_an_answer_the_check_fails() {
    let dir = tempfile::tempdir().unwrap();
    let (status, out) = healthcheck(dir.path(), &[], &[]);
    assert_eq!(
        (status, out.as_str()),
        (
            1,
            "Error calling healthcheck: please enable `ping` to use health check\n"
        )
    );
    let port = free_port();
    let (status, out) = healthcheck(
        dir.path(),
        &[
            "--ping".to_owned(),
            "--ping.entryPoint=web".to_owned(),
            format!("--entryPoints.web.address=127.0.0.1:{port}"),
        ],
        &[],
    );
    assert_eq!(status, 1, "{out}");
    assert!(
        out.starts_with(&format!(
            "Error calling healthcheck: GET http://127.0.0.1:{port}/ping: "
        )),
        "{out}"
    );
    let (status, out) = healthcheck(
        dir.path(),
        &["--ping".to_owned(), "--ping.entryPoint=admin".to_owned()],
        &[],
    );
    assert_eq!(
        (status, out.as_str()),
        (
            1,
            "Error calling healthcheck: ping: missing admin entry point\n"
        )
    );
}

/// The image's HEALTHCHECK passes `--if-enabled`: a container whose
/// configuration has no ping is not ill, one whose ping fails still is.
#[test]
fn if_enabled_passes_without_ping_and_still_asks_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let (status, out) = healthcheck(dir.path(), &["--if-enabled".to_owned()], &[]);
    assert_eq!(
        (status, out.as_str()),
        (0, "OK: ping is not enabled, nothing to check\n")
    );
    let port = free_port();
    let address = format!("127.0.0.1:{port}");
    let (status, out) = healthcheck(
        dir.path(),
        &["--if-enabled".to_owned()],
        &[
            ("TRAEFIK_PING", "true"),
            ("TRAEFIK_PING_ENTRYPOINT", "web"),
            ("TRAEFIK_ENTRYPOINTS_WEB_ADDRESS", &address),
        ],
    );
    assert_eq!(status, 1, "{out}");
    assert!(out.contains(&format!("GET http://{address}/ping")), "{out}");
}

#[tokio::test]
async fn a_gangway_shutting_down_is_reported_unhealthy() {
    let app = Backend::echo("app").await;
    let gw = Gangway::with_file(
        &support::one_route("app", "Host(`app.test`)", &[&app.url()]),
        &[
            "--ping",
            "--ping.entryPoint=web",
            "--entryPoints.web.transport.lifeCycle.requestAcceptGraceTimeout=10s",
        ],
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let args = vec![
        "--ping".to_owned(),
        "--ping.entryPoint=web".to_owned(),
        format!("--entryPoints.web.address=127.0.0.1:{}", gw.port),
    ];
    // The ping router is in place once gangway has compiled its first
    // configuration, a moment after its port is bound.
    eventually(Duration::from_secs(5), "the check passes", || async {
        healthcheck(dir.path(), &args, &[]).0 == 0
    })
    .await;
    gw.sigterm();
    let last = std::cell::RefCell::new(String::new());
    eventually(Duration::from_secs(5), "the check fails", || {
        let (status, out) = healthcheck(dir.path(), &args, &[]);
        *last.borrow_mut() = out;
        async move { status == 1 }
    })
    .await;
    assert_eq!(
        last.borrow().as_str(),
        "Bad healthcheck status: 503 Service Unavailable\n"
    );
}

#[tokio::test]
async fn the_url_flag_asks_that_url_as_traefik_3_5_does() {
    let app = Backend::echo("app").await;
    let gw = Gangway::with_file(
        &support::one_route("app", "Host(`app.test`)", &[&app.url()]),
        &["--ping", "--ping.entryPoint=web"],
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    // No configuration at all: the URL is all the check needs.
    let url = format!("http://localhost:{}/ping", gw.port);
    let last = std::cell::RefCell::new(String::new());
    eventually(Duration::from_secs(5), "the check passes", || {
        let (status, out) = healthcheck(dir.path(), &["--url".to_owned(), url.clone()], &[]);
        *last.borrow_mut() = out;
        async move { status == 0 }
    })
    .await;
    assert_eq!(last.borrow().as_str(), format!("OK: {url}\n"));
    // A path that answers 404 is ill health, with Traefik's message.
    let missing = format!("--url=http://127.0.0.1:{}/nothing-here", gw.port);
    let (status, out) = healthcheck(dir.path(), &[missing], &[]);
    assert_eq!(
        (status, out.as_str()),
        (1, "Bad healthcheck status: 404 Not Found\n")
    );
    // Nothing listening, and a URL that is not http://.
    let closed = format!("--url=http://127.0.0.1:{}/ping", free_port());
    let (status, out) = healthcheck(dir.path(), &[closed], &[]);
    assert_eq!(status, 1);
    assert!(
        out.starts_with("Error calling healthcheck: GET http://127.0.0.1:"),
        "{out}"
    );
    let (status, out) = healthcheck(
        dir.path(),
        &["--url=https://127.0.0.1/ping".to_owned()],
        &[],
    );
    assert_eq!(
        (status, out.as_str()),
        (
            1,
            "Error calling healthcheck: --url https://127.0.0.1/ping: not an http:// URL (https is not asked by the health check)\n"
        )
    );
}
