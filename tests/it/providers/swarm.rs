//! The Swarm provider against a real swarm: Docker daemons of the test's
//! own (never the machine's), one made a swarm manager on loopback and,
//! where a test needs two nodes, a second joined as a worker, running
//! services whose labels gangway routes.
//!
//! Every node of such a swarm runs on this machine and reports the address
//! 127.0.0.1, so the tasks of one service on the host network all listen on
//! 127.0.0.1 and the label's port: they share it (the whoami stand-in's
//! `WHOAMI_REUSE_PORT`), and the kernel spreads connections between them.
//! Which tasks gangway counts as servers is read from the API, where each
//! server is traced to its task and node.

use crate::support;

use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};
use support::docker::{IMAGE, Load, PrivateDaemon, Probe, Swarm, WHOAMI_IMAGE, ready};
use support::{Gangway, eventually, free_port};

/// Swarm tests start daemons of their own; one at a time on two cores.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A file router that makes the API reachable at `api.test`.
const API: &str = "[http.routers.api]\nrule = \"Host(`api.test`)\"\nservice = \"api@internal\"\n";

/// `docker service create --detach --name <name> <options> --label k=v…
/// <image>`; Ok(its id) or Err(what the CLI said).
async fn create_service(
    swarm: &Swarm,
    name: &str,
    options: &[&str],
    labels: &[(&str, &str)],
    image: &str,
) -> Result<String, String> {
    let mut args = vec!["service", "create", "--detach", "--name", name];
    args.extend(options);
    let labels: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    for l in &labels {
        args.extend(["--label", l.as_str()]);
    }
    args.push(image);
    swarm.docker(&args).await
}

/// Creates a service of the test image on the host network, serving
/// `name` on `port`, with these labels.
async fn busybox_service(swarm: &Swarm, name: &str, port: u16, labels: &[(&str, &str)]) {
    let port_env = format!("PORT={port}");
    let name_env = format!("NAME={name}");
    let options = ["--network", "host", "--env", &port_env, "--env", &name_env];
    create_service(swarm, name, &options, labels, IMAGE)
        .await
        .expect("docker service create");
}

/// Creates a whoami service on the host network: its tasks share
/// 127.0.0.1:`port`, answer with their task's name, and on SIGTERM go on
/// answering for two seconds, closing each connection, as an application
/// with a graceful shutdown does. `extra` goes to `docker service create`
/// before the labels.
async fn whoami_service(
    swarm: &Swarm,
    name: &str,
    port: u16,
    extra: &[&str],
    labels: &[(&str, &str)],
) {
    let port_env = format!("WHOAMI_PORT_NUMBER={port}");
    let mut options = vec![
        "--network",
        "host",
        "--env",
        &port_env,
        "--env",
        "WHOAMI_NAME={{.Task.Name}}",
        "--env",
        "WHOAMI_REUSE_PORT=true",
        "--env",
        "WHOAMI_DRAIN=2",
        "--stop-grace-period",
        "10s",
    ];
    options.extend(extra);
    create_service(swarm, name, &options, labels, WHOAMI_IMAGE)
        .await
        .expect("docker service create");
}

/// Whether Docker, the test image and the whoami image are there; skips
/// (or, under GANGWAY_TEST_STRICT=1, fails) otherwise.
async fn whoami_ready(test: &str) -> bool {
    if !ready(test).await {
        return false;
    }
    if let Err(e) = support::docker::docker(&["image", "inspect", WHOAMI_IMAGE]).await {
        support::docker::skip(
            test,
            &format!("{WHOAMI_IMAGE} is missing (scripts/test builds it): {e}"),
        );
        return false;
    }
    true
}

/// The labels that route `Host(`<name>.test`)` to a service's tasks on
/// `port`, with the `gangway` prefix.
fn routed(name: &str, port: u16) -> Vec<(String, String)> {
    vec![
        ("gangway.enable".to_owned(), "true".to_owned()),
        (
            format!("gangway.http.routers.{name}.rule"),
            format!("Host(`{name}.test`)"),
        ),
        (
            format!("gangway.http.services.{name}.loadbalancer.server.port"),
            port.to_string(),
        ),
    ]
}

fn borrowed(labels: &[(String, String)]) -> Vec<(&str, &str)> {
    labels
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect()
}

/// The task behind a server of a Swarm service, as the API traces it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Served {
    task: String,
    node: String,
    servers: Vec<String>,
}

/// The tasks that give `service@swarm` its servers (empty when it does
/// not exist).
async fn served(gw: &Gangway, service: &str) -> Vec<Served> {
    let answer = gw
        .get("api.test", &format!("/api/http/services/{service}@swarm"))
        .await;
    if answer.status != 200 {
        return Vec::new();
    }
    let json: Value = serde_json::from_slice(&answer.body).expect("JSON");
    let mut out: Vec<Served> = json["provenance"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| {
            Some(Served {
                task: p["swarm"]["taskId"].as_str()?.to_owned(),
                node: p["swarm"]["nodeId"].as_str()?.to_owned(),
                servers: p["servers"]
                    .as_array()?
                    .iter()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect(),
            })
        })
        .collect();
    out.sort();
    out
}

/// The name of the task that answered for `host`, if one did.
async fn answered_by(probe: &Probe, host: &str) -> Option<String> {
    let answer = probe.get(host, "/").await.ok()?;
    if answer.status != 200 {
        return None;
    }
    answer
        .body
        .lines()
        .find_map(|l| l.strip_prefix("Name: "))
        .map(str::to_owned)
}

/// What gangway and the swarm say, for a failure message.
async fn state(swarm: &Swarm, gw: &Gangway) -> String {
    let services = swarm
        .docker(&["service", "ls", "-q"])
        .await
        .unwrap_or_default();
    let mut ps = vec!["service", "ps", "--no-trunc"];
    ps.extend(services.split_whitespace());
    format!(
        "tasks:\n{}\nnodes:\n{}\nproviders: {}\ncontainers: {}\ngangway log:\n{}",
        swarm.docker(&ps).await.unwrap_or_else(|e| e),
        swarm.docker(&["node", "ls"]).await.unwrap_or_else(|e| e),
        gw.get("api.test", "/api/providers").await.text(),
        gw.get("api.test", "/api/containers").await.text(),
        gw.log()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn service_labels_become_routes_that_follow_the_services_tasks() {
    const TEST: &str = "swarm_service_labels";
    if !ready(TEST).await {
        return;
    }
    let _serial = SERIAL.lock().await;
    let swarm = Swarm::start(TEST, &[]).await;
    let internal = free_port();
    let gw = watching(
        &swarm,
        &[
            "--providers.swarm.labelPrefix=traefik",
            "--api.insecure=true",
            &format!("--entryPoints.gangway.address=127.0.0.1:{internal}"),
        ],
    )
    .await;
    let probe = Probe::new(&gw);
    let port = free_port();
    let created = Instant::now();
    busybox_service(
        &swarm,
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
    // The overview names the provider.
    let overview: serde_json::Value =
        serde_json::from_slice(&gw.get("api.test", "/api/overview").await.body).expect("JSON");
    assert_eq!(overview["providers"], serde_json::json!(["File", "Swarm"]));
    // Named after the swarm provider, with the service's labels as its
    // provenance.
    let router = gw.get("api.test", "/api/http/routers/web@swarm").await;
    assert_eq!(router.status, 200, "{}", router.text());
    let router: serde_json::Value = serde_json::from_slice(&router.body).expect("JSON");
    assert_eq!(router["provider"], "swarm");
    assert_eq!(router["status"], "enabled");

    // A service without a port label is not routed, and says why.
    busybox_service(
        &swarm,
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
            containers.contains("noport")
                && containers.contains("port must be given by label")
                && containers.contains("loadbalancer.server.port")
        },
    )
    .await;
    assert_eq!(probe.status("noport.test").await, 404);
    // What the dashboard shows of both, read in a browser.
    support::browser::drive(
        TEST,
        "swarm.mjs",
        &format!("http://127.0.0.1:{internal}"),
        &[("NOT_ROUTED", "noport"), ("ROUTER", "web@swarm")],
    )
    .await;

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
    let _serial = SERIAL.lock().await;
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

/// Waits until every task of `service` that Swarm is shutting down has
/// stopped (its graceful shutdown over).
async fn replaced_tasks_stopped(swarm: &Swarm, service: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let states = swarm
            .docker(&[
                "service",
                "ps",
                "--filter",
                "desired-state=shutdown",
                "--format",
                "{{.CurrentState}}",
                service,
            ])
            .await
            .unwrap_or_else(|e| e);
        if states.lines().all(|s| {
            s.starts_with("Shutdown") || s.starts_with("Complete") || s.starts_with("Failed")
        }) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{service}: replaced tasks still stopping after 60 s:\n{states}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits until the tasks giving `service` its servers satisfy `want`;
/// panics with the swarm's and gangway's state when they do not in time.
async fn wait_served(
    swarm: &Swarm,
    gw: &Gangway,
    service: &str,
    what: &str,
    want: impl Fn(&[Served]) -> bool,
) -> Vec<Served> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let now = served(gw, service).await;
        if want(&now) {
            return now;
        }
        if Instant::now() > deadline {
            panic!(
                "{service}: {what}, not within 60 s; served by {now:?}\n{}",
                state(swarm, gw).await
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_nodes_tasks_follow_scaling_draining_updates_and_a_manager_restart() {
    const TEST: &str = "swarm_two_nodes";
    if !whoami_ready(TEST).await {
        return;
    }
    let _serial = SERIAL.lock().await;
    let mut swarm = Swarm::start(TEST, &[WHOAMI_IMAGE]).await;
    let worker = swarm.add_worker(TEST, &[WHOAMI_IMAGE]).await;
    let manager = swarm.manager_id().await;
    let gw = watching(&swarm, &[]).await;
    let probe = Probe::new(&gw);

    // A task on the second node is routed, and traced to that node.
    let pinned = free_port();
    whoami_service(
        &swarm,
        "pinned",
        pinned,
        &["--constraint", "node.role==worker"],
        &borrowed(&routed("pinned", pinned)),
    )
    .await;
    let on_worker = wait_served(&swarm, &gw, "pinned", "one task on the worker", |s| {
        s.len() == 1 && s[0].node == worker
    })
    .await;
    assert_eq!(on_worker[0].servers, [format!("http://127.0.0.1:{pinned}")]);
    let name = answered_by(&probe, "pinned.test").await;
    assert!(
        name.as_deref().is_some_and(|n| n.starts_with("pinned.1.")),
        "{name:?}"
    );

    // Scaling 1 → 3 → 1 changes the servers.
    let port = free_port();
    whoami_service(
        &swarm,
        "scaled",
        port,
        &["--update-order", "start-first", "--update-delay", "1s"],
        &borrowed(&routed("scaled", port)),
    )
    .await;
    wait_served(&swarm, &gw, "scaled", "one task", |s| s.len() == 1).await;
    swarm
        .docker(&["service", "scale", "--detach", "scaled=3"])
        .await
        .expect("scale to 3");
    let three = wait_served(&swarm, &gw, "scaled", "three tasks", |s| s.len() == 3).await;
    let nodes: BTreeSet<&str> = three.iter().map(|s| s.node.as_str()).collect();
    assert_eq!(nodes.len(), 2, "spread over both nodes: {three:?}");
    swarm
        .docker(&["service", "scale", "--detach", "scaled=2"])
        .await
        .expect("scale to 2");
    wait_served(&swarm, &gw, "scaled", "two tasks, one per node", |s| {
        s.len() == 2 && s.iter().any(|t| t.node == worker) && s.iter().any(|t| t.node == manager)
    })
    .await;

    // Draining the second node under load: its task moves to the manager,
    // the servers follow, and no request fails.
    let load = Load::start_on(&probe, "scaled.test", "/bench", &["1"], 4);
    swarm
        .docker(&["node", "update", "--availability", "drain", &worker])
        .await
        .expect("drain the worker");
    wait_served(&swarm, &gw, "scaled", "both tasks on the manager", |s| {
        s.len() == 2 && s.iter().all(|t| t.node == manager)
    })
    .await;
    // The drained task's graceful shutdown ends while the load runs.
    replaced_tasks_stopped(&swarm, "scaled").await;
    let (ok, failures) = load.finish().await;
    assert!(
        failures.is_empty(),
        "{} of {} requests failed while the worker drained: {:?}",
        failures.len(),
        ok + failures.len(),
        &failures[..failures.len().min(5)]
    );
    assert!(ok > 0);
    swarm
        .docker(&["node", "update", "--availability", "active", &worker])
        .await
        .expect("activate the worker");

    // A rolling update (start-first) under load loses no request, and the
    // servers end up being the new tasks.
    let before: BTreeSet<String> = served(&gw, "scaled")
        .await
        .into_iter()
        .map(|s| s.task)
        .collect();
    let load = Load::start_on(&probe, "scaled.test", "/bench", &["1"], 4);
    swarm
        .docker(&[
            "service",
            "update",
            "--detach",
            "--env-add",
            "VERSION=2",
            "scaled",
        ])
        .await
        .expect("update the service");
    wait_served(&swarm, &gw, "scaled", "two new tasks", |s| {
        s.len() == 2 && s.iter().all(|t| !before.contains(&t.task))
    })
    .await;
    replaced_tasks_stopped(&swarm, "scaled").await;
    let (ok, failures) = load.finish().await;
    assert!(
        failures.is_empty(),
        "{} of {} requests failed during the rolling update: {:?}",
        failures.len(),
        ok + failures.len(),
        &failures[..failures.len().min(5)]
    );

    // The manager killed: gangway keeps the last routes (the worker's task
    // goes on answering), says the manager is unreachable, and re-syncs
    // when it is back.
    let load = Load::start_on(&probe, "pinned.test", "/bench", &["1"], 2);
    swarm.manager.kill().await;
    eventually(
        Duration::from_secs(30),
        "the provider reports the lost manager",
        || async {
            let providers = gw.get("api.test", "/api/providers").await.text();
            providers.contains("\"connected\":false")
        },
    )
    .await;
    // Requests go on being answered while it is down.
    let answered = load.ok.load(std::sync::atomic::Ordering::Relaxed);
    eventually(
        Duration::from_secs(30),
        "requests answered meanwhile",
        || async { load.ok.load(std::sync::atomic::Ordering::Relaxed) > answered + 50 },
    )
    .await;
    swarm
        .manager
        .restart()
        .await
        .unwrap_or_else(|e| panic!("the manager did not come back: {e}"));
    let (ok, failures) = load.finish().await;
    assert!(
        failures.is_empty() && ok > 0,
        "{} of {} requests to the worker's task failed while the manager was down: {:?}",
        failures.len(),
        ok + failures.len(),
        &failures[..failures.len().min(5)]
    );
    // Re-synced: a service created after the restart is routed.
    let late = free_port();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        // The swarm answers once its raft has a leader again.
        let port_env = format!("WHOAMI_PORT_NUMBER={late}");
        let options = [
            "--network",
            "host",
            "--env",
            &port_env,
            "--env",
            "WHOAMI_NAME=late",
        ];
        let labels = routed("late", late);
        match create_service(&swarm, "late", &options, &borrowed(&labels), WHOAMI_IMAGE).await {
            Ok(_) => break,
            Err(e) if Instant::now() > deadline => {
                panic!("the swarm did not answer after the restart: {e}")
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while answered_by(&probe, "late.test").await.as_deref() != Some("late") {
        if Instant::now() > deadline {
            panic!(
                "not re-synced after the manager's restart\n{}",
                state(&swarm, &gw).await
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let providers = gw.get("api.test", "/api/providers").await.text();
    assert!(providers.contains("\"connected\":true"), "{providers}");
    assert!(!gw.log().contains("panicked"), "{}", gw.log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn lbswarm_exposed_by_default_and_constraints_behave_as_documented() {
    const TEST: &str = "swarm_options";
    if !whoami_ready(TEST).await {
        return;
    }
    let _serial = SERIAL.lock().await;
    let swarm = Swarm::start(TEST, &[WHOAMI_IMAGE]).await;
    // A VXLAN id of its own: a daemon killed mid-test (or a swarm of the
    // user's) may leave the first one Docker hands out, 4097, in use, and
    // the tasks would then fail with "error creating vxlan interface".
    let vni = format!(
        "com.docker.network.driver.overlay.vxlanid_list={}",
        5000 + free_port()
    );
    swarm
        .docker(&[
            "network", "create", "--driver", "overlay", "--opt", &vni, "apps",
        ])
        .await
        .expect("an overlay network");
    let gw = watching(
        &swarm,
        &[
            "--providers.swarm.exposedByDefault=true",
            "--providers.swarm.constraints=Label(`team`,`edge`)",
            "--providers.swarm.defaultRule=Host(`{{ normalize .Name }}.test`)",
        ],
    )
    .await;
    let probe = Probe::new(&gw);

    // Two services on the overlay network (gangway never sends them
    // traffic here: their addresses are not on loopback), one balanced by
    // Swarm at its virtual IP, one with a server per task.
    for (name, lbswarm) in [("vip", "true"), ("each", "false")] {
        let port = format!("gangway.http.services.{name}.loadbalancer.server.port");
        let labels = [
            ("team", "edge"),
            ("gangway.swarm.lbswarm", lbswarm),
            (port.as_str(), "8080"),
        ];
        let options = ["--replicas", "2", "--network", "apps"];
        create_service(&swarm, name, &options, &labels, WHOAMI_IMAGE)
            .await
            .expect("docker service create");
    }
    // On the host network: exposed by default under the default rule, one
    // left out by the constraint, one by its own `enable=false`.
    let open = free_port();
    let open_port = open.to_string();
    whoami_service(
        &swarm,
        "open",
        open,
        &[],
        &[
            ("team", "edge"),
            (
                "gangway.http.services.open.loadbalancer.server.port",
                &open_port,
            ),
        ],
    )
    .await;
    whoami_service(&swarm, "ops", free_port(), &[], &[("team", "ops")]).await;
    whoami_service(
        &swarm,
        "off",
        free_port(),
        &[],
        &[("team", "edge"), ("gangway.enable", "false")],
    )
    .await;

    until_answered(
        &swarm,
        &gw,
        &probe,
        "open.test",
        "open.test not routed by the default rule",
    )
    .await;

    let vip = swarm
        .docker(&[
            "service",
            "inspect",
            "vip",
            "--format",
            "{{range .Endpoint.VirtualIPs}}{{.Addr}}{{end}}",
        ])
        .await
        .expect("the service's virtual IP");
    let vip = vip.split('/').next().unwrap_or_default().to_owned();
    assert!(!vip.is_empty(), "no virtual IP");
    let urls = |service: &'static str| {
        let gw = &gw;
        async move {
            let answer = gw
                .get("api.test", &format!("/api/http/services/{service}@swarm"))
                .await;
            let json: Value = serde_json::from_slice(&answer.body).unwrap_or_default();
            let mut urls: Vec<String> = json["loadBalancer"]["servers"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|s| s["url"].as_str().map(str::to_owned))
                .collect();
            urls.sort();
            urls
        }
    };
    let deadline = Instant::now() + Duration::from_secs(90);
    while urls("vip").await.is_empty() || urls("each").await.len() != 2 {
        assert!(
            Instant::now() < deadline,
            "both overlay services should have their servers\n{}",
            state(&swarm, &gw).await
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // lbswarm: one server, the service's virtual IP, with both tasks behind
    // it; otherwise one server per task at the task's own address.
    assert_eq!(urls("vip").await, [format!("http://{vip}:8080")]);
    let each = urls("each").await;
    assert!(
        each.iter()
            .all(|u| u.starts_with("http://10.") && u.ends_with(":8080") && !u.contains(&vip)),
        "{each:?}"
    );
    assert_ne!(each[0], each[1], "one server per task");

    // The services gangway leaves out say why.
    let containers = gw.get("api.test", "/api/containers").await.text();
    let list: Vec<Value> = serde_json::from_str(&containers).expect("JSON");
    let reason = |name: &str| {
        list.iter()
            .find(|c| c["name"] == name)
            .map(|c| c["reason"].as_str().unwrap_or_default().to_owned())
    };
    assert_eq!(
        reason("ops").as_deref(),
        Some("constraintNotMet"),
        "{containers}"
    );
    assert_eq!(reason("off").as_deref(), Some("notEnabled"), "{containers}");
    assert_eq!(probe.status("ops.test").await, 404);
    assert_eq!(probe.status("off.test").await, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_manager_over_tls_is_read_with_a_client_certificate_and_refuses_a_client_without() {
    const TEST: &str = "swarm_tls";
    if !ready(TEST).await {
        return;
    }
    let _serial = SERIAL.lock().await;
    let (manager, tls) = PrivateDaemon::start_tls()
        .await
        .unwrap_or_else(|e| panic!("{TEST}: a daemon with TLS did not start: {e}"));
    let swarm = Swarm::start_on(TEST, manager, &[]).await;
    let port = free_port();
    busybox_service(&swarm, "web", port, &borrowed(&routed("web", port))).await;
    let endpoint = format!("--providers.swarm.endpoint={}", tls.endpoint);
    let ca = format!("--providers.swarm.tls.ca={}", tls.ca);
    let gw = Gangway::with_file(
        API,
        &[
            "--providers.swarm",
            &endpoint,
            &ca,
            &format!("--providers.swarm.tls.cert={}", tls.cert),
            &format!("--providers.swarm.tls.key={}", tls.key),
            "--api=true",
        ],
    )
    .await;
    let probe = Probe::new(&gw);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !probe.answers("web.test", "web").await {
        assert!(
            Instant::now() < deadline,
            "not routed over TLS within 60 s\n{}",
            state(&swarm, &gw).await
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The daemon runs with --tlsverify: without a client certificate the
    // handshake fails, and the provider says so instead of routing.
    let bare = Gangway::with_file(API, &["--providers.swarm", &endpoint, &ca, "--api=true"]).await;
    eventually(
        Duration::from_secs(30),
        "the refused connection is reported",
        || async {
            let providers = bare.get("api.test", "/api/providers").await.text();
            providers.contains("\"connected\":false") && providers.contains("lastError")
        },
    )
    .await;
    assert_eq!(Probe::new(&bare).status("web.test").await, 404);
}

/// `docker service inspect --format <format> <service>` on the swarm.
async fn inspect(swarm: &Swarm, service: &str, format: &str) -> String {
    swarm
        .docker(&["service", "inspect", "--format", format, service])
        .await
        .unwrap_or_else(|e| panic!("docker service inspect {service}: {e}"))
}

/// Now, as `docker events --since/--until` read it.
fn stamp() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970");
    format!("{}.{:09}", now.as_secs(), now.subsec_nanos())
}

/// gangway with the Swarm provider on `swarm`'s manager, its API on, and
/// `extra` flags.
async fn watching(swarm: &Swarm, extra: &[&str]) -> Gangway {
    let endpoint = format!("--providers.swarm.endpoint={}", swarm.manager.host());
    let mut flags = vec!["--providers.swarm", &endpoint, "--api=true"];
    flags.extend_from_slice(extra);
    Gangway::with_file(API, &flags).await
}

/// The replica counts `service` was scaled to since `since`, one per
/// update event that changed them, as the manager's events say.
async fn scaled_to(swarm: &Swarm, service: &str, since: &str) -> Vec<String> {
    let until = stamp();
    let filter = format!("service={service}");
    swarm
        .docker(&[
            "events",
            "--since",
            since,
            "--until",
            &until,
            "--filter",
            "type=service",
            "--filter",
            &filter,
            "--filter",
            "event=update",
            "--format",
            "{{index .Actor.Attributes \"replicas.new\"}}",
        ])
        .await
        .expect("docker events")
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

/// GET `/` of `host` through gangway, waiting up to a minute for the
/// answer (a request to a sleeping service waits for its wake-up).
async fn get_waiting(gw: &Gangway, host: &str) -> Result<(u16, String), String> {
    let answer = Probe::new(gw)
        .get_within(host, "/", Duration::from_secs(60))
        .await?;
    Ok((answer.status.as_u16(), answer.body))
}

/// Waits until gangway has scaled `service` to 0 for being idle, with
/// `count` in its label: the replicas it will give back.
async fn put_to_sleep(swarm: &Swarm, gw: &Gangway, service: &str, count: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while inspect(swarm, service, "{{.Spec.Mode.Replicated.Replicas}}").await != "0" {
        assert!(
            Instant::now() < deadline,
            "{service} not scaled to 0 after its idle time\n{}",
            state(swarm, gw).await
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(sleep_label(swarm, service).await.as_deref(), Some(count));
}

/// Waits up to a minute until a server answers `host` through gangway;
/// fails saying `what` did not happen, with the swarm's state.
async fn until_answered(swarm: &Swarm, gw: &Gangway, probe: &Probe, host: &str, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while answered_by(probe, host).await.is_none() {
        assert!(
            Instant::now() < deadline,
            "{what}\n{}",
            state(swarm, gw).await
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `docker service update --detach <args> <service>`, done by hand as a
/// user would.
async fn update_service(swarm: &Swarm, service: &str, args: &[&str]) {
    swarm
        .docker(&[&["service", "update", "--detach"][..], args, &[service]].concat())
        .await
        .unwrap_or_else(|e| panic!("docker service update {service}: {e}"));
}

/// The label `gangway.sleep.replicas` of `service`, if it has it.
async fn sleep_label(swarm: &Swarm, service: &str) -> Option<String> {
    let labels: HashMap<String, String> =
        serde_json::from_str(&inspect(swarm, service, "{{json .Spec.Labels}}").await)
            .expect("the labels as JSON");
    labels.get("gangway.sleep.replicas").cloned()
}

/// The API's view of one service's sleep (`state`: awake, asleep, …).
async fn sleep_state(gw: &Gangway, service: &str) -> Option<String> {
    let got = gw
        .get("api.test", &format!("/api/http/services/{service}"))
        .await;
    let json: Value = serde_json::from_slice(&got.body).ok()?;
    json["sleep"]["state"].as_str().map(str::to_owned)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_idle_service_is_scaled_to_0_and_back_once_and_global_or_read_only_is_refused() {
    const TEST: &str = "swarm_sleep";
    if !whoami_ready(TEST).await {
        return;
    }
    let _serial = SERIAL.lock().await;
    let swarm = Swarm::start(TEST, &[WHOAMI_IMAGE]).await;
    let gw = watching(&swarm, &[]).await;
    let probe = Probe::new(&gw);

    // A global service cannot be scaled to 0: its sleep labels are refused.
    let everywhere = free_port();
    let mut labels = routed("everywhere", everywhere);
    labels.push(("gangway.sleep.idle".to_owned(), "2s".to_owned()));
    whoami_service(
        &swarm,
        "everywhere",
        everywhere,
        &["--mode", "global"],
        &borrowed(&labels),
    )
    .await;
    // Two replicas that sleep after 2 s without a request.
    let port = free_port();
    let mut labels = routed("napper", port);
    labels.push(("gangway.sleep.idle".to_owned(), "2s".to_owned()));
    whoami_service(
        &swarm,
        "napper",
        port,
        &["--replicas", "2"],
        &borrowed(&labels),
    )
    .await;
    let spec = inspect(&swarm, "napper", "{{json .Spec}}").await;
    let created = stamp();

    until_answered(
        &swarm,
        &gw,
        &probe,
        "everywhere.test",
        "the global service is not routed",
    )
    .await;
    let global_version = inspect(&swarm, "everywhere", "{{.Version.Index}}").await;
    eventually(
        Duration::from_secs(30),
        "the global service's record says why it does not sleep",
        || async {
            let containers = gw.get("api.test", "/api/containers").await.text();
            let list: Vec<Value> = serde_json::from_str(&containers).unwrap_or_default();
            list.iter().any(|c| {
                c["name"] == "everywhere"
                    && c["messages"].as_array().is_some_and(|m| {
                        m.iter().any(|m| {
                            m.as_str().is_some_and(|m| {
                                m.contains("gangway.sleep.idle")
                                    && m.contains("global mode")
                                    && m.contains("cannot be scaled to 0")
                            })
                        })
                    })
            })
        },
    )
    .await;

    // Idle: scaled to 0, with the count to give back in its label, and its
    // router kept, marked asleep.
    put_to_sleep(&swarm, &gw, "napper", "2").await;
    eventually(Duration::from_secs(30), "asleep in the API", || async {
        sleep_state(&gw, "napper@swarm").await.as_deref() == Some("asleep")
    })
    .await;
    let router = gw.get("api.test", "/api/http/routers/napper@swarm").await;
    assert_eq!(router.status, 200, "its router stays: {}", router.text());
    // Its tasks gone, nothing answers but gangway's wake-up.
    eventually(Duration::from_secs(60), "its tasks are gone", || async {
        swarm
            .docker(&[
                "service",
                "ps",
                "--filter",
                "desired-state=running",
                "-q",
                "napper",
            ])
            .await
            .is_ok_and(|out| out.trim().is_empty())
    })
    .await;

    // 20 requests at once wake it with one scale, back to 2, and all are
    // answered by its tasks.
    let since = stamp();
    let asked = Instant::now();
    let answers =
        futures_util::future::join_all((0..20).map(|_| get_waiting(&gw, "napper.test"))).await;
    for answer in &answers {
        match answer {
            Ok((200, body)) if body.contains("Name: napper.") => {}
            other => panic!(
                "a request to the sleeping service got {other:?}\n{}",
                state(&swarm, &gw).await
            ),
        }
    }
    assert_eq!(
        scaled_to(&swarm, "napper", &since).await,
        ["2"],
        "one scale, back to the previous count"
    );
    // The spec is the one it was created with: the count given back, the
    // label gone, nothing else changed.
    assert_eq!(inspect(&swarm, "napper", "{{json .Spec}}").await, spec);
    eventually(Duration::from_secs(30), "awake in the API", || async {
        sleep_state(&gw, "napper@swarm").await.as_deref() == Some("awake")
    })
    .await;
    let view: Value = serde_json::from_slice(
        &gw.get("api.test", "/api/http/services/napper@swarm")
            .await
            .body,
    )
    .expect("JSON");
    eprintln!(
        "{TEST}: 20 requests answered {:?} after they were sent; the wake-up took {} ms (lastWakeMs)",
        asked.elapsed(),
        view["sleep"]["lastWakeMs"]
    );

    // Idle again: asleep again.
    put_to_sleep(&swarm, &gw, "napper", "2").await;
    // The global service was never touched, and kept answering.
    assert_eq!(
        inspect(&swarm, "everywhere", "{{.Version.Index}}").await,
        global_version
    );
    assert_eq!(
        scaled_to(&swarm, "everywhere", &created).await,
        Vec::<String>::new()
    );
    assert!(answered_by(&probe, "everywhere.test").await.is_some());
    assert!(!gw.log().contains("panicked"), "{}", gw.log());

    // A gangway started while it sleeps knows, from its label, that it put
    // it to sleep and with how many replicas: its router is there and a
    // request wakes it to 2.
    drop(probe);
    drop(gw);
    let gw = watching(&swarm, &[]).await;
    eventually(
        Duration::from_secs(30),
        "asleep after a restart",
        || async { sleep_state(&gw, "napper@swarm").await.as_deref() == Some("asleep") },
    )
    .await;
    let since = stamp();
    match get_waiting(&gw, "napper.test").await {
        Ok((200, body)) if body.contains("Name: napper.") => {}
        other => panic!(
            "after a restart, a request got {other:?}\n{}",
            state(&swarm, &gw).await
        ),
    }
    assert_eq!(scaled_to(&swarm, "napper", &since).await, ["2"]);
    assert_eq!(inspect(&swarm, "napper", "{{json .Spec}}").await, spec);
    assert!(!gw.log().contains("panicked"), "{}", gw.log());

    // Through a socket proxy that refuses writes, the sleep labels are
    // refused at once, on the service's entries, and it does not sleep:
    // routed as without them.
    drop(gw);
    let socket = swarm
        .manager
        .host()
        .trim_start_matches("unix://")
        .to_owned();
    let proxy = support::docker::read_only_proxy(socket).await;
    let gw = Gangway::with_file(
        API,
        &[
            "--providers.swarm",
            &format!("--providers.swarm.endpoint=tcp://127.0.0.1:{proxy}"),
            "--api=true",
        ],
    )
    .await;
    let probe = Probe::new(&gw);
    eventually(
        Duration::from_secs(30),
        "the refusal is shown on the service",
        || async {
            let containers = gw.get("api.test", "/api/containers").await.text();
            containers.contains("cannot update services")
                && containers.contains("write access refused by the socket proxy")
        },
    )
    .await;
    assert!(answered_by(&probe, "napper.test").await.is_some());
    assert_eq!(
        sleep_state(&gw, "napper@swarm").await,
        None,
        "it does not sleep"
    );
    assert!(!gw.log().contains("panicked"), "{}", gw.log());
    drop(probe);
    drop(gw);

    // Scaled up by hand while asleep, it is no longer one gangway put to
    // sleep: gangway takes its label off, and a scale to 0 by hand is then
    // left alone (its router goes, a request does not wake it).
    let gw = watching(&swarm, &[]).await;
    let probe = Probe::new(&gw);
    put_to_sleep(&swarm, &gw, "napper", "2").await;
    update_service(
        &swarm,
        "napper",
        &["--replicas=1", "--label-add=gangway.sleep.idle=1h"],
    )
    .await;
    eventually(
        Duration::from_secs(30),
        "awake, without gangway's label",
        || async {
            sleep_label(&swarm, "napper").await.is_none()
                && sleep_state(&gw, "napper@swarm").await.as_deref() == Some("awake")
        },
    )
    .await;
    let since = stamp();
    swarm
        .docker(&["service", "scale", "--detach", "napper=0"])
        .await
        .expect("docker service scale");
    eventually(Duration::from_secs(30), "its router goes", || async {
        probe.status("napper.test").await == 404
    })
    .await;
    assert_eq!(probe.status("napper.test").await, 404);
    assert_eq!(
        scaled_to(&swarm, "napper", &since).await,
        ["0"],
        "only the scale by hand: not woken\n{}",
        state(&swarm, &gw).await
    );
    assert_eq!(sleep_label(&swarm, "napper").await, None);

    // Its sleep labels removed while gangway keeps it asleep: nothing would
    // wake it, so gangway gives it its replicas back.
    update_service(
        &swarm,
        "napper",
        &["--replicas=2", "--label-add=gangway.sleep.idle=2s"],
    )
    .await;
    put_to_sleep(&swarm, &gw, "napper", "2").await;
    update_service(&swarm, "napper", &["--label-rm=gangway.sleep.idle"]).await;
    until_answered(
        &swarm,
        &gw,
        &probe,
        "napper.test",
        "not given its replicas back",
    )
    .await;
    assert_eq!(
        inspect(&swarm, "napper", "{{.Spec.Mode.Replicated.Replicas}}").await,
        "2"
    );
    assert_eq!(sleep_label(&swarm, "napper").await, None);
    assert_eq!(sleep_state(&gw, "napper@swarm").await, None);
    assert!(!gw.log().contains("panicked"), "{}", gw.log());
}
