//! The Swarm provider against a real swarm: a Docker daemon of the test's
//! own (never the machine's), made a one-node swarm manager on loopback,
//! running services on the host network whose labels gangway routes.

mod docker_support;
mod support;

use docker_support::{IMAGE, PrivateDaemon, Probe, command_env, ready};
use std::time::{Duration, Instant};
use support::{Gangway, eventually, free_port};

/// A swarm of one manager on a private daemon; it leaves the swarm and
/// the daemon stops when dropped.
struct Swarm {
    daemon: PrivateDaemon,
}

impl Swarm {
    async fn start(test: &str) -> Swarm {
        let daemon = PrivateDaemon::start()
            .await
            .unwrap_or_else(|e| panic!("{test}: a daemon of the test's own did not start: {e}"));
        let swarm = Swarm { daemon };
        // The manager's port must be free: a contributor's own swarm may use
        // 2377. Another port is tried when one is taken.
        let mut last = String::new();
        for _ in 0..3 {
            let listen = format!("127.0.0.1:{}", free_port());
            match swarm
                .docker(&[
                    "swarm",
                    "init",
                    "--advertise-addr",
                    &listen,
                    "--listen-addr",
                    &listen,
                ])
                .await
            {
                Ok(_) => return swarm,
                Err(e) => last = e,
            }
        }
        panic!(
            "{test}: swarm init failed: {last}\ndaemon log:\n{}",
            swarm.daemon.log()
        );
    }

    async fn docker(&self, args: &[&str]) -> Result<String, String> {
        command_env("docker", args, &[("DOCKER_HOST", &self.daemon.host())]).await
    }

    /// Creates a service of the test image on the host network, serving
    /// `name` on `port`, with these labels.
    async fn service(&self, name: &str, port: u16, labels: &[(&str, &str)]) {
        let port_env = format!("PORT={port}");
        let name_env = format!("NAME={name}");
        let mut args = vec![
            "service",
            "create",
            "--detach",
            "--name",
            name,
            "--network",
            "host",
            "--env",
            &port_env,
            "--env",
            &name_env,
        ];
        let labels: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        for l in &labels {
            args.extend(["--label", l.as_str()]);
        }
        args.push(IMAGE);
        self.docker(&args).await.expect("docker service create");
    }
}

impl Drop for Swarm {
    fn drop(&mut self) {
        let _ = std::process::Command::new("docker")
            .args(["swarm", "leave", "--force"])
            .env("DOCKER_HOST", self.daemon.host())
            .output();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn service_labels_become_routes_that_follow_the_services_tasks() {
    const TEST: &str = "swarm_service_labels";
    if !ready(TEST).await {
        return;
    }
    let swarm = Swarm::start(TEST).await;
    let gw = Gangway::with_file(
        "[http.routers.api]\nrule = \"Host(`api.test`)\"\nservice = \"api@internal\"\n",
        &[
            "--providers.swarm",
            &format!("--providers.swarm.endpoint={}", swarm.daemon.host()),
            "--providers.swarm.labelPrefix=traefik",
            "--api=true",
        ],
    )
    .await;
    let probe = Probe::new(&gw);
    let port = free_port();
    let created = Instant::now();
    swarm
        .service(
            "web",
            port,
            &[
                ("traefik.enable", "true"),
                ("traefik.http.routers.web.rule", "Host(`web.test`)"),
                (
                    "traefik.http.services.web.loadbalancer.server.port",
                    &port.to_string(),
                ),
            ],
        )
        .await;
    while !probe.answers("web.test", "web").await {
        if created.elapsed() > Duration::from_secs(60) {
            panic!(
                "not routed within 60s\ntasks: {:?}\nproviders: {}\ncontainers: {}\ngangway log:\n{}",
                (
                    swarm.docker(&["service", "inspect", "web"]).await,
                    swarm.docker(&["network", "ls", "--no-trunc"]).await
                ),
                gw.get("api.test", "/api/providers").await.text(),
                gw.get("api.test", "/api/containers").await.text(),
                gw.log()
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    eprintln!(
        "{TEST}: routed {:?} after `docker service create`",
        created.elapsed()
    );
    // Named after the swarm provider, with the service's labels as its
    // provenance.
    let router = gw.get("api.test", "/api/http/routers/web@swarm").await;
    assert_eq!(router.status, 200, "{}", router.text());
    let router: serde_json::Value = serde_json::from_slice(&router.body).expect("JSON");
    assert_eq!(router["provider"], "swarm");
    assert_eq!(router["status"], "enabled");

    // A service without a port label is not routed, and says why.
    swarm
        .service(
            "noport",
            free_port(),
            &[
                ("traefik.enable", "true"),
                ("traefik.http.routers.noport.rule", "Host(`noport.test`)"),
            ],
        )
        .await;
    eventually(
        Duration::from_secs(60),
        "the reason is reported",
        || async {
            let containers = gw.get("api.test", "/api/containers").await.text();
            containers.contains("noport") && containers.contains("loadbalancer.server.port")
        },
    )
    .await;
    assert_eq!(probe.status("noport.test").await, 404);

    // The service removed, its route goes.
    swarm
        .docker(&["service", "rm", "web"])
        .await
        .expect("docker service rm");
    eventually(
        Duration::from_secs(30),
        "the route leaves with the service",
        || async { probe.status("web.test").await == 404 },
    )
    .await;
    assert!(!gw.log().contains("panicked"), "{}", gw.log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_daemon_that_is_no_manager_is_reported_clearly_and_nothing_is_routed() {
    const TEST: &str = "swarm_not_a_manager";
    if !ready(TEST).await {
        return;
    }
    let daemon = PrivateDaemon::start()
        .await
        .unwrap_or_else(|e| panic!("{TEST}: a daemon of the test's own did not start: {e}"));
    let gw = Gangway::with_file(
        "",
        &[
            "--providers.swarm",
            &format!("--providers.swarm.endpoint={}", daemon.host()),
        ],
    )
    .await;
    eventually(Duration::from_secs(20), "the reason is logged", || async {
        gw.log().contains("not a swarm manager")
    })
    .await;
    assert!(
        gw.log().contains("providers.swarm.endpoint"),
        "{}",
        gw.log()
    );
}
