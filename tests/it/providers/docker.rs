//! The Docker provider against a real Docker daemon: containers on the host
//! network, labelled as users label them, routed by the real gangway binary.
//! Needs `scripts/ci/docker-up` (the test command runs it); without Docker a
//! test is skipped, or fails under GANGWAY_TEST_STRICT=1.

use crate::support;

use std::time::{Duration, Instant};
use support::docker::{Load, PrivateDaemon, Probe, Run, SERIAL, Spec, docker, ready};
use support::{Gangway, eventually};

const P: &str = "gangway";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_labelled_container_is_routed_within_a_second_and_gone_after_stop_or_kill() {
    let _serial = SERIAL.lock().await;
    if !ready("routed_within_a_second").await {
        return;
    }
    let run = Run::new("routed");
    let gw = run
        .gangway(&["--providers.docker.downGracePeriod=0s"])
        .await;
    let probe = Probe::new(&gw);

    let first = Spec::new("first").routed(P, "first", "first.test", "first");
    run.start(&first).await;
    eventually(Duration::from_secs(10), "first container routed", || {
        probe.answers("first.test", "first")
    })
    .await;

    // Now that gangway is connected: a new container is routed within a second.
    let second = Spec::new("second").routed(P, "second", "second.test", "second");
    let name = run.start(&second).await;
    let started = Instant::now();
    eventually(
        Duration::from_secs(1),
        "routed within 1s of docker run",
        || probe.answers("second.test", "second"),
    )
    .await;
    eprintln!("routed {:?} after docker run returned", started.elapsed());

    docker(&["stop", &name]).await.expect("docker stop");
    eventually(
        Duration::from_secs(1),
        "gone within 1s of docker stop",
        || async { probe.status("second.test").await == 404 },
    )
    .await;
    assert!(probe.answers("first.test", "first").await);

    let first_name = run.name("first");
    docker(&["kill", &first_name]).await.expect("docker kill");
    eventually(
        Duration::from_secs(1),
        "gone within 1s of docker kill",
        || async { probe.status("first.test").await == 404 },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_containers_of_one_compose_service_answer_in_turn() {
    let _serial = SERIAL.lock().await;
    if !ready("scaled").await {
        return;
    }
    let run = Run::new("scaled");
    let gw = run.gangway(&[]).await;
    let probe = Probe::new(&gw);
    let project = format!("shop{}", run.suffix());
    // What `docker compose up --scale web=2` makes: two containers of one
    // service (each on its own port, as host networking needs).
    for replica in ["web1", "web2"] {
        let spec = Spec::new(replica);
        let port = spec.port.to_string();
        let spec = spec
            .label("gangway.enable", "true")
            .label("com.docker.compose.project", &project)
            .label("com.docker.compose.service", "web")
            .label(
                &format!("gangway.http.services.web-{project}.loadbalancer.server.port"),
                &port,
            );
        run.start(&spec).await;
    }
    // Traefik's default rule for a compose service: Host(`<service>-<project>`).
    let host = format!("web-{project}");
    eventually(
        Duration::from_secs(10),
        "both replicas in rotation",
        || async {
            let mut seen = std::collections::BTreeSet::new();
            for _ in 0..4 {
                if let Ok(a) = probe.get(&host, "/").await {
                    seen.insert(a.body);
                }
            }
            seen.len() == 2
        },
    )
    .await;
    let mut answers = Vec::new();
    for _ in 0..10 {
        answers.push(probe.get(&host, "/").await.expect("answer").body);
    }
    for pair in answers.windows(2) {
        assert_ne!(pair[0], pair[1], "round robin alternates: {answers:?}");
    }
    assert_eq!(answers.iter().filter(|a| *a == "web1").count(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_health_check_takes_a_container_out_and_back() {
    let _serial = SERIAL.lock().await;
    if !ready("health").await {
        return;
    }
    let run = Run::new("health");
    let gw = run
        .gangway(&["--providers.docker.downGracePeriod=1m"])
        .await;
    let probe = Probe::new(&gw);
    let spec = Spec::new("checked")
        .routed(P, "checked", "checked.test", "checked")
        .health_checked();
    let name = run.start(&spec).await;

    // Starting: known, so 503 (not 404) with Retry-After.
    eventually(Duration::from_secs(10), "503 while starting", || async {
        probe
            .get("checked.test", "/")
            .await
            .is_ok_and(|a| a.status == 503 && a.retry_after.as_deref() == Some("5"))
    })
    .await;
    docker(&["exec", &name, "touch", "/tmp/healthy"])
        .await
        .expect("exec");
    eventually(Duration::from_secs(5), "healthy: routed", || {
        probe.answers("checked.test", "checked")
    })
    .await;
    docker(&["exec", &name, "rm", "/tmp/healthy"])
        .await
        .expect("exec");
    eventually(
        Duration::from_secs(5),
        "unhealthy: out of rotation",
        || async { probe.status("checked.test").await == 503 },
    )
    .await;
    docker(&["exec", &name, "touch", "/tmp/healthy"])
        .await
        .expect("exec");
    eventually(Duration::from_secs(5), "healthy again: back", || {
        probe.answers("checked.test", "checked")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_label_error_disables_one_router_names_container_and_label_and_is_logged_once() {
    let _serial = SERIAL.lock().await;
    if !ready("label_error").await {
        return;
    }
    let run = Run::new("labelerror");
    let gw = run.gangway(&[]).await;
    let probe = Probe::new(&gw);
    let bad = Spec::new("bad")
        .routed(P, "fine", "fine.test", "bad")
        .label("gangway.http.routers.broken.rul", "Host(`broken.test`)")
        .label("gangway.http.routers.broken.service", "bad");
    let bad_name = run.start(&bad).await;
    let good = Spec::new("good").routed(P, "good", "good.test", "good");
    run.start(&good).await;

    eventually(
        Duration::from_secs(10),
        "other routers of both containers",
        || async {
            probe.answers("good.test", "good").await && probe.answers("fine.test", "bad").await
        },
    )
    .await;
    assert_eq!(probe.status("broken.test").await, 404);
    let expected = format!(
        "container `{bad_name}`: label `gangway.http.routers.broken.rul`: unknown option `rul` (did you mean `rule`?)"
    );
    eventually(Duration::from_secs(5), "the error is logged", || async {
        gw.log().contains(&expected)
    })
    .await;
    // More events (another container comes and goes): still logged once.
    let other = Spec::new("other").routed(P, "other", "other.test", "other");
    let other_name = run.start(&other).await;
    eventually(Duration::from_secs(5), "third container routed", || {
        probe.answers("other.test", "other")
    })
    .await;
    docker(&["rm", "-f", &other_name]).await.expect("rm");
    eventually(Duration::from_secs(5), "third container gone", || async {
        probe.status("other.test").await != 200
    })
    .await;
    let log = gw.log();
    assert_eq!(log.matches(&expected).count(), 1, "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn without_exposed_by_default_labelled_containers_are_routed_and_bare_ones_not() {
    let _serial = SERIAL.lock().await;
    if !ready("exposed_by_labels").await {
        return;
    }
    let run = Run::new("bylabels");
    // At the info level, where the start says what the default routes.
    let gw = support::Gangway::with_file_env(
        "",
        &["--providers.docker", &run.constraint(), "--log.level=INFO"],
        &[("RUST_LOG", "")],
    )
    .await;
    let probe = Probe::new(&gw);
    // Labels under the prefix and no `gangway.enable`, as Traefik setups
    // that rely on its default are written.
    let spec = Spec::new("labelled");
    let port = spec.port.to_string();
    let spec = spec
        .label(
            "gangway.http.routers.labelled.rule",
            "Host(`labelled.test`)",
        )
        .label(
            "gangway.http.services.labelled.loadbalancer.server.port",
            &port,
        );
    run.start(&spec).await;
    // No label under the prefix at all: Traefik would route it at
    // Host(`<name>`), its default rule.
    let bare_name = run.start(&Spec::new("bare")).await;
    eventually(
        Duration::from_secs(10),
        "the labelled container is routed",
        || probe.answers("labelled.test", "labelled"),
    )
    .await;
    assert_eq!(probe.status(&bare_name.replace('_', "-")).await, 404);
    let log = gw.log();
    assert_eq!(
        log.matches("providers.docker.exposedByDefault is not given: containers with")
            .count(),
        1,
        "said once: {log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn exposed_by_default_false_ignores_unlabelled_containers() {
    let _serial = SERIAL.lock().await;
    if !ready("exposed_by_default").await {
        return;
    }
    let run = Run::new("exposed");
    // This one also routes `gw.test` to its API, to read /api/containers.
    let api_router = "[http.routers.gw]\nrule = \"Host(`gw.test`)\"\nservice = \"api@internal\"\n";
    let safe = support::Gangway::with_file(
        api_router,
        &[
            "--providers.docker",
            "--providers.docker.exposedByDefault=false",
            &run.constraint(),
            "--api=true",
        ],
    )
    .await;
    let open = run
        .gangway(&["--providers.docker.exposedByDefault=true"])
        .await;
    let (safe_probe, open_probe) = (Probe::new(&safe), Probe::new(&open));
    // No `gangway.enable`: only the port is given.
    let spec = Spec::new("quiet");
    let port = spec.port.to_string();
    let spec = spec.label(
        "gangway.http.services.quiet.loadbalancer.server.port",
        &port,
    );
    let name = run.start(&spec).await;
    // The default rule: Host(`<container name>`), normalized.
    let host = name.replace('_', "-");
    eventually(
        Duration::from_secs(10),
        "exposedByDefault=true routes it",
        || open_probe.answers(&host, "quiet"),
    )
    .await;
    assert_eq!(safe_probe.status(&host).await, 404);
    // Opting in with the label is what the default expects.
    let labelled = Spec::new("loud").routed(P, "loud", "loud.test", "loud");
    let loud_name = run.start(&labelled).await;
    eventually(
        Duration::from_secs(10),
        "a labelled container is routed",
        || safe_probe.answers("loud.test", "loud"),
    )
    .await;
    assert_eq!(safe_probe.status(&host).await, 404);

    // The API says which container is routed and why the other is not.
    let containers: serde_json::Value = serde_json::from_str(
        &safe_probe
            .get("gw.test", "/api/containers")
            .await
            .expect("api")
            .body,
    )
    .expect("json");
    let find = |n: &str| {
        containers
            .as_array()
            .and_then(|a| a.iter().find(|c| c["name"] == n))
            .cloned()
            .unwrap_or_else(|| panic!("{n} in /api/containers: {containers}"))
    };
    let quiet = find(&name);
    assert_eq!(quiet["routed"], false, "{quiet}");
    assert_eq!(quiet["reason"], "notEnabled", "{quiet}");
    assert!(
        quiet["reasons"][0]
            .as_str()
            .is_some_and(|r| r.contains("enable")),
        "{quiet}"
    );
    let loud = find(&loud_name);
    assert_eq!(loud["routed"], true, "{loud}");
    assert_eq!(
        loud["routers"],
        serde_json::json!(["loud@docker"]),
        "{loud}"
    );
    assert_eq!(
        containers[0]["routed"], false,
        "not-routed first: {containers}"
    );
    let only_routed = safe_probe
        .get("gw.test", "/api/containers?routed=true")
        .await
        .expect("api")
        .body;
    assert!(
        !only_routed.contains(&format!("\"{name}\"")),
        "{only_routed}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn several_exposed_ports_and_no_port_label_use_the_lowest_and_say_so() {
    let _serial = SERIAL.lock().await;
    if !ready("several_exposed_ports").await {
        return;
    }
    let run = Run::new("ports");
    let api_router = "[http.routers.gw]\nrule = \"Host(`gw.test`)\"\nservice = \"api@internal\"\n";
    let gw = support::Gangway::with_file(
        api_router,
        &["--providers.docker", &run.constraint(), "--api=true"],
    )
    .await;
    let probe = Probe::new(&gw);
    // httpd listens on the lower port; nothing listens on the higher one
    // (the highest TCP port, so it is above any port the test is given).
    let spec = Spec::new("multi")
        .label(&format!("{P}.enable"), "true")
        .label(
            &format!("{P}.http.routers.multi.rule"),
            "Host(`multi.test`)",
        );
    let low = spec.port.to_string();
    let spec = spec.args(&["--expose", "65535", "--expose", &low]);
    let name = run.start(&spec).await;
    eventually(
        Duration::from_secs(10),
        "routed to the lowest exposed port",
        || probe.answers("multi.test", "multi"),
    )
    .await;
    // The service is named after the container and carries a warning that
    // names the port chosen and the label that chooses another.
    let service = format!("{}@docker", name.replace('_', "-"));
    let view: serde_json::Value = serde_json::from_str(
        &probe
            .get("gw.test", &format!("/api/http/services/{service}"))
            .await
            .expect("api")
            .body,
    )
    .expect("json");
    assert_eq!(view["status"], "warning", "{view}");
    assert_eq!(view["problems"][0]["kind"], "portChosen", "{view}");
    let message = view["problems"][0]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!("({low}, 65535); port {low}, the lowest, is used")),
        "{view}"
    );
    assert!(
        message.contains(&format!(
            "`{P}.http.services.{}.loadbalancer.server.port`",
            name.replace('_', "-")
        )),
        "{view}"
    );
    assert_eq!(
        view["loadBalancer"]["servers"][0]["url"],
        format!("http://127.0.0.1:{low}"),
        "{view}"
    );
}

fn compose_file(run: &Run, services: &[(&str, u16, &[&str])]) -> String {
    let mut out = String::from("version: \"2.4\"\nservices:\n");
    for (name, port, labels) in services {
        out.push_str(&format!(
            "  {name}:\n    image: {}\n    network_mode: host\n    environment:\n      - PORT={port}\n      - NAME={name}\n    labels:\n      - \"{}={}\"\n",
            support::docker::IMAGE,
            support::docker::RUN_LABEL,
            run.id
        ));
        for l in *labels {
            out.push_str(&format!("      - \"{l}\"\n"));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_compose_project_with_traefik_labels_is_routed_as_traefik_would() {
    let _serial = SERIAL.lock().await;
    if support::docker::compose_ready("compose").await.is_none() {
        return;
    }
    let run = Run::new("compose");
    let gw = run
        .gangway(&["--providers.docker.labelPrefix=traefik"])
        .await;
    let probe = Probe::new(&gw);
    let project = format!("blog{}", run.suffix());
    let (web, api) = (support::free_port(), support::free_port());
    let web_port = format!("traefik.http.services.web.loadbalancer.server.port={web}");
    let api_port = format!("traefik.http.services.api.loadbalancer.server.port={api}");
    let file = compose_file(
        &run,
        &[
            (
                "web",
                web,
                &[
                    "traefik.enable=true",
                    "traefik.http.routers.web.rule=Host(`blog.test`) || Host(`www.blog.test`)",
                    "traefik.http.routers.web.entrypoints=web",
                    &web_port,
                ],
            ),
            // No router label: Traefik's default rule, Host(`api-<project>`).
            ("api", api, &["traefik.enable=true", &api_port]),
            // Labelled for gangway's own prefix only: ignored with labelPrefix=traefik.
            ("other", support::free_port(), &["gangway.enable=true"]),
        ],
    );
    run.compose(&project, &file, &["up", "-d"])
        .await
        .expect("docker-compose up");
    eventually(Duration::from_secs(15), "web routed by its rule", || {
        probe.answers("www.blog.test", "web")
    })
    .await;
    let api_host = format!("api-{project}");
    eventually(
        Duration::from_secs(5),
        "api routed by the default rule",
        || probe.answers(&api_host, "api"),
    )
    .await;
    assert!(probe.answers("blog.test", "web").await);
    assert_eq!(probe.status(&format!("other-{project}")).await, 404);

    run.compose(&project, &file, &["down", "-t", "1"])
        .await
        .expect("docker-compose down");
    eventually(Duration::from_secs(5), "down: no longer served", || async {
        probe.status("blog.test").await != 200 && probe.status(&api_host).await != 200
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_off_containers_are_not_routed() {
    let _serial = SERIAL.lock().await;
    if support::docker::compose_ready("one_off").await.is_none() {
        return;
    }
    let run = Run::new("oneoff");
    let gw = run.gangway(&[]).await;
    let probe = Probe::new(&gw);
    let project = format!("jobs{}", run.suffix());
    let port = support::free_port();
    let port_label = format!("gangway.http.services.task.loadbalancer.server.port={port}");
    let file = compose_file(
        &run,
        &[(
            "task",
            port,
            &[
                "gangway.enable=true",
                "gangway.http.routers.task.rule=Host(`task.test`)",
                &port_label,
            ],
        )],
    );
    // `docker compose run`: a one-off container of the service, with its labels.
    let oneoff = format!("oneoff{}", run.suffix());
    run.compose(&project, &file, &["run", "-d", "--name", &oneoff, "task"])
        .await
        .expect("docker-compose run");
    // It serves (directly), but gangway leaves it alone.
    let direct = format!("http://127.0.0.1:{port}/");
    eventually(
        Duration::from_secs(10),
        "the one-off container serves",
        || async {
            support::docker::command("curl", &["-sf", &direct])
                .await
                .is_ok_and(|b| b == "task")
        },
    )
    .await;
    // A router for it would have appeared by now (others appear within 1s).
    let other = Spec::new("marker").routed(P, "marker", "marker.test", "marker");
    run.start(&other).await;
    eventually(
        Duration::from_secs(10),
        "a later container is routed",
        || probe.answers("marker.test", "marker"),
    )
    .await;
    assert_eq!(probe.status("task.test").await, 404);

    // The service itself (not one-off) is routed.
    docker(&["rm", "-f", &oneoff]).await.expect("rm one-off");
    run.compose(&project, &file, &["up", "-d", "task"])
        .await
        .expect("docker-compose up");
    eventually(Duration::from_secs(10), "the service is routed", || {
        probe.answers("task.test", "task")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn conflicting_definitions_keep_the_oldest_containers_and_are_reported() {
    let _serial = SERIAL.lock().await;
    if !ready("conflict").await {
        return;
    }
    let run = Run::new("conflict");
    let gw = run.gangway(&[]).await;
    let dropping = run.gangway(&["--providers.docker.conflicts=drop"]).await;
    let (probe, drop_probe) = (Probe::new(&gw), Probe::new(&dropping));
    let older = Spec::new("older").routed(P, "app", "older.test", "older");
    let older_name = run.start(&older).await;
    eventually(Duration::from_secs(10), "older routed", || {
        probe.answers("older.test", "older")
    })
    .await;
    // A newer container defines the same router differently.
    let newer = Spec::new("newer").routed(P, "app", "newer.test", "newer");
    let newer_name = run.start(&newer).await;
    let warning = format!(
        "conflict: containers `{older_name}` and `{newer_name}` define it differently; `{older_name}`'s definition (the oldest) is used"
    );
    eventually(
        Duration::from_secs(5),
        "the conflict is reported",
        || async { gw.log().contains(&warning) },
    )
    .await;
    // The site stays up (Traefik would drop both: 404).
    assert!(probe.answers("older.test", "older").await);
    assert_eq!(probe.status("newer.test").await, 404);
    // With conflicts=drop, as Traefik: gone.
    eventually(
        Duration::from_secs(5),
        "conflicts=drop removes the router",
        || async { drop_probe.status("older.test").await == 404 },
    )
    .await;
    assert!(dropping.log().contains("conflicts=drop"));
    assert_eq!(gw.log().matches(&warning).count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stopped_service_answers_503_with_retry_after_then_404_after_the_grace_period() {
    let _serial = SERIAL.lock().await;
    if !ready("known_but_down").await {
        return;
    }
    let run = Run::new("down");
    let gw = run
        .gangway(&["--providers.docker.downGracePeriod=3s"])
        .await;
    let probe = Probe::new(&gw);
    let name = run
        .start(&Spec::new("site").routed(P, "site", "site.test", "site"))
        .await;
    eventually(Duration::from_secs(10), "routed", || {
        probe.answers("site.test", "site")
    })
    .await;

    docker(&["stop", &name]).await.expect("stop");
    eventually(
        Duration::from_secs(2),
        "503 with Retry-After while down",
        || async {
            probe.get("site.test", "/").await.is_ok_and(|a| {
                a.status == 503
                    && a.retry_after.as_deref() == Some("5")
                    && a.body == "no available server"
            })
        },
    )
    .await;
    docker(&["start", &name]).await.expect("start");
    eventually(Duration::from_secs(2), "back after start", || {
        probe.answers("site.test", "site")
    })
    .await;

    docker(&["stop", &name]).await.expect("stop");
    let stopped = Instant::now();
    eventually(Duration::from_secs(2), "503 again", || async {
        probe.status("site.test").await == 503
    })
    .await;
    eventually(
        Duration::from_secs(6),
        "404 after the grace period",
        || async { probe.status("site.test").await == 404 },
    )
    .await;
    assert!(
        stopped.elapsed() >= Duration::from_secs(2),
        "gone too early: {:?}",
        stopped.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_start_stop_cycles_of_other_containers_cost_no_request_to_a() {
    let _serial = SERIAL.lock().await;
    if !ready("churn").await {
        return;
    }
    let run = Run::new("churn");
    let gw = run
        .gangway(&["--providers.docker.downGracePeriod=0s"])
        .await;
    let probe = Probe::new(&gw);
    run.start(&Spec::new("a").routed(P, "a", "a.test", "a"))
        .await;
    let mut others = Vec::new();
    for n in ["b", "c", "d"] {
        let spec = Spec::new(n).routed(P, n, &format!("{n}.test"), n);
        others.push((n, run.create(&spec).await));
    }
    eventually(Duration::from_secs(10), "a routed", || {
        probe.answers("a.test", "a")
    })
    .await;

    let load = Load::start(&probe, "a.test", &["a"], 8);
    let names: Vec<&str> = others.iter().map(|(_, name)| name.as_str()).collect();
    for cycle in 0..50 {
        let mut start = vec!["start"];
        start.extend(&names);
        docker(&start).await.expect("docker start");
        for (n, _) in &others {
            let host = format!("{n}.test");
            eventually(
                Duration::from_secs(5),
                &format!("cycle {cycle}: {n} routed"),
                || probe.answers(&host, n),
            )
            .await;
        }
        let mut stop = vec!["stop", "-t", "5"];
        stop.extend(&names);
        docker(&stop).await.expect("docker stop");
        for (n, _) in &others {
            eventually(
                Duration::from_secs(5),
                &format!("cycle {cycle}: {n} gone"),
                || async { probe.status(&format!("{n}.test")).await == 404 },
            )
            .await;
        }
    }
    let (ok, failures) = load.finish().await;
    eprintln!(
        "{ok} requests to a during 50 cycles, {} failed",
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} failures: {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
    assert!(ok > 500, "too little load to mean anything: {ok}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rolling_redeploy_under_load_loses_no_request() {
    let _serial = SERIAL.lock().await;
    if !ready("rolling").await {
        return;
    }
    let run = Run::new("rolling");
    let gw = run.gangway(&[]).await;
    let probe = Probe::new(&gw);
    // Both versions define the same router and service; each brings its own
    // server (port). On SIGTERM each keeps serving for 2s, as applications
    // with a graceful shutdown do.
    let version = |name: &str| {
        let spec = Spec::new(name).health_checked().args(&["-e", "DRAIN=2"]);
        let port = spec.port.to_string();
        spec.label("gangway.enable", "true")
            .label("gangway.http.routers.app.rule", "Host(`app.test`)")
            .label("gangway.http.services.app.loadbalancer.server.port", &port)
    };
    let v1 = run.start(&version("v1")).await;
    docker(&["exec", &v1, "touch", "/tmp/healthy"])
        .await
        .expect("exec");
    eventually(Duration::from_secs(10), "v1 routed", || {
        probe.answers("app.test", "v1")
    })
    .await;

    let load = Load::start(&probe, "app.test", &["v1", "v2"], 8);
    let v2 = run.start(&version("v2")).await;
    docker(&["exec", &v2, "touch", "/tmp/healthy"])
        .await
        .expect("exec");
    eventually(Duration::from_secs(10), "v2 in rotation", || {
        probe.answers("app.test", "v2")
    })
    .await;
    docker(&["stop", &v1]).await.expect("stop v1");
    eventually(Duration::from_secs(5), "only v2 answers", || async {
        let mut all_v2 = true;
        for _ in 0..6 {
            all_v2 &= probe.answers("app.test", "v2").await;
        }
        all_v2
    })
    .await;
    let (ok, failures) = load.finish().await;
    eprintln!(
        "{ok} requests during the redeploy, {} failed",
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} failures: {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
    assert!(ok > 100, "too little load to mean anything: {ok}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn without_a_daemon_gangway_serves_its_other_providers_and_says_why() {
    // Needs no Docker: the daemon is deliberately somewhere else.
    let backend = support::Backend::echo("file").await;
    let gw = support::Gangway::with_file(
        &support::one_route("app", "Host(`app.test`)", &[&backend.url()]),
        &[
            "--providers.docker",
            "--providers.docker.endpoint=unix:///nonexistent/docker.sock",
        ],
    )
    .await;
    let probe = Probe::new(&gw);
    eventually(
        Duration::from_secs(5),
        "the file provider's route",
        || async { probe.status("app.test").await == 200 },
    )
    .await;
    eventually(Duration::from_secs(5), "the outage is logged", || async {
        let log = gw.log();
        log.contains("Docker unreachable") && log.contains("/nonexistent/docker.sock")
    })
    .await;
    assert_eq!(gw.log().matches("Docker unreachable").count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn middlewares_from_labels_act_on_a_real_container() {
    let _serial = SERIAL.lock().await;
    if !ready("middlewares_from_labels").await {
        return;
    }
    let run = Run::new("mwlabels");
    let gw = run.gangway(&[]).await;
    let probe = Probe::new(&gw);
    let spec = Spec::new("mw");
    let port = spec.port.to_string();
    let mut spec = spec
        .label("gangway.enable", "true")
        .label("gangway.http.services.mw.loadbalancer.server.port", &port)
        .label(
            "gangway.http.middlewares.strip.stripprefix.prefixes",
            "/api",
        )
        .label(
            "gangway.http.middlewares.auth.basicauth.users",
            "user:{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ=",
        )
        .label(
            "gangway.http.middlewares.redir.redirectscheme.scheme",
            "https",
        )
        .label(
            "gangway.http.middlewares.redir.redirectscheme.permanent",
            "true",
        )
        .label(
            "gangway.http.middlewares.hdr.headers.customrequestheaders.X-From",
            "gangway",
        )
        .label(
            "gangway.http.middlewares.hdr.headers.customresponseheaders.X-Served",
            "yes",
        )
        .label("gangway.http.middlewares.rate.ratelimit.average", "1")
        .label("gangway.http.middlewares.rate.ratelimit.period", "1m")
        .label("gangway.http.middlewares.rate.ratelimit.burst", "2")
        .label(
            "gangway.http.middlewares.both.chain.middlewares",
            "strip,hdr",
        );
    for (router, middleware) in [
        ("strip", "strip"),
        ("auth", "auth"),
        ("redir", "redir"),
        ("hdr", "hdr"),
        ("rate", "rate"),
        ("chain", "both"),
    ] {
        spec = spec
            .label(
                &format!("gangway.http.routers.{router}.rule"),
                &format!("Host(`{router}.test`)"),
            )
            .label(&format!("gangway.http.routers.{router}.service"), "mw")
            .label(
                &format!("gangway.http.routers.{router}.middlewares"),
                middleware,
            );
    }
    run.start(&spec).await;
    eventually(Duration::from_secs(10), "the routers are up", || async {
        probe.status("hdr.test").await == 200
    })
    .await;
    let get = |host: &'static str, path: &'static str| {
        let probe = &probe;
        async move { probe.get(host, path).await.expect(host) }
    };

    // stripPrefix: the container sees the path without /api.
    let a = get("strip.test", "/api/cgi-bin/echo?x=1").await;
    assert!(a.body.contains("path=/cgi-bin/echo?x=1"), "{}", a.body);
    assert!(
        a.body.contains("HTTP_X_FORWARDED_PREFIX=/api"),
        "{}",
        a.body
    );

    // basicAuth: 401 with a challenge without credentials, through with them.
    let a = get("auth.test", "/").await;
    assert_eq!(a.status, 401);
    assert!(a.headers.contains_key("www-authenticate"));
    let req = http::Request::get(gw.url("/cgi-bin/echo"))
        .header("host", "auth.test")
        .header("authorization", "Basic dXNlcjpzZWNyZXQ=")
        .body(Default::default())
        .unwrap();
    let ok = gw.send(req).await;
    assert_eq!(ok.status, 200);
    assert!(ok.text().contains("name=mw"), "{}", ok.text());

    // redirectScheme: permanent redirect to https.
    let a = get("redir.test", "/x?y=1").await;
    assert!(matches!(a.status.as_u16(), 301 | 308), "{}", a.status);
    assert_eq!(a.headers["location"], "https://redir.test/x?y=1");

    // headers: the container sees the request header, the client the response one.
    let a = get("hdr.test", "/cgi-bin/echo").await;
    assert!(a.body.contains("HTTP_X_FROM=gangway"), "{}", a.body);
    assert_eq!(a.headers["x-served"], "yes");

    // rateLimit: a burst of two, then 429.
    let codes = [
        get("rate.test", "/").await.status.as_u16(),
        get("rate.test", "/").await.status.as_u16(),
        get("rate.test", "/").await.status.as_u16(),
    ];
    assert_eq!(codes, [200, 200, 429]);

    // chain: stripPrefix then headers.
    let a = get("chain.test", "/api/cgi-bin/echo").await;
    assert!(a.body.contains("path=/cgi-bin/echo"), "{}", a.body);
    assert!(a.body.contains("HTTP_X_FROM=gangway"), "{}", a.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_container_killed_mid_request_costs_only_that_request() {
    let _serial = SERIAL.lock().await;
    if !ready("killed_mid_request").await {
        return;
    }
    let run = Run::new("midreq");
    let gw = run
        .gangway(&["--providers.docker.downGracePeriod=0s"])
        .await;
    let probe = Probe::new(&gw);
    let dying = run
        .start(&Spec::new("dying").routed(P, "dying", "dying.test", "dying"))
        .await;
    run.start(&Spec::new("steady").routed(P, "steady", "steady.test", "steady"))
        .await;
    // A CGI that says it started, then takes a minute: the request is
    // certainly in flight at the container when it is killed.
    docker(&[
        "exec",
        &dying,
        "sh",
        "-c",
        "printf '#!/bin/sh\\ntouch /tmp/started\\nsleep 60\\necho\\necho late\\n' \
         > /www/cgi-bin/slow && chmod 755 /www/cgi-bin/slow",
    ])
    .await
    .expect("docker exec");
    for (host, body) in [("dying.test", "dying"), ("steady.test", "steady")] {
        eventually(Duration::from_secs(10), &format!("{host} routed"), || {
            probe.answers(host, body)
        })
        .await;
    }

    let load = Load::start(&probe, "steady.test", &["steady"], 4);
    let slow = {
        let probe = probe.clone();
        tokio::spawn(async move {
            let answer = probe.get("dying.test", "/cgi-bin/slow").await;
            (answer, Instant::now())
        })
    };
    eventually(
        Duration::from_secs(10),
        "the slow request reached the container",
        || async {
            docker(&["exec", &dying, "test", "-f", "/tmp/started"])
                .await
                .is_ok()
        },
    )
    .await;
    let killed = Instant::now();
    docker(&["kill", &dying]).await.expect("docker kill");

    // Its client gets 502 at once, not after the CGI's minute (the probe
    // gives up after 10 s, so a hang fails here).
    let (answer, at) = slow.await.expect("slow client");
    let answer = answer.expect("an answer, not a hang");
    assert_eq!(answer.status, 502, "{answer:?}");
    eprintln!(
        "502 {:?} after docker kill was run",
        at.saturating_duration_since(killed)
    );
    eventually(
        Duration::from_secs(1),
        "the dead container's route gone within 1s of docker kill returning",
        || async { probe.status("dying.test").await == 404 },
    )
    .await;
    eprintln!(
        "route gone {:?} after docker kill was run",
        killed.elapsed()
    );

    // Meanwhile every request to the other container succeeded.
    let (ok, failures) = load.finish().await;
    eprintln!(
        "steady.test during the kill: {ok} answered, {} failed",
        failures.len()
    );
    assert!(ok > 0);
    assert!(failures.is_empty(), "{failures:?}");
    assert!(!gw.log().contains("panicked"), "{}", gw.log());
}

/// One HTTP/1.0 exchange written byte for byte on a plain TCP connection
/// to 127.0.0.1:`port`: the answer's body, or why there is none.
async fn over_tcp(port: u16) -> Result<String, String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let exchange = async {
        let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .map_err(|e| e.to_string())?;
        s.write_all(b"GET / HTTP/1.0\r\nHost: any.test\r\n\r\n")
            .await
            .map_err(|e| e.to_string())?;
        let mut answer = String::new();
        s.read_to_string(&mut answer)
            .await
            .map_err(|e| e.to_string())?;
        match answer.split_once("\r\n\r\n") {
            Some((head, body)) if head.starts_with("HTTP/1.") => Ok(body.trim().to_owned()),
            _ => Err(format!("not an HTTP answer: {answer:?}")),
        }
    };
    tokio::time::timeout(Duration::from_secs(5), exchange)
        .await
        .map_err(|_| "timed out".to_owned())?
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tcp_labels_route_a_container_and_give_it_no_http_router() {
    let _serial = SERIAL.lock().await;
    if !ready("tcp_labels_route_a_container").await {
        return;
    }
    let run = Run::new("tcplabels");
    let tcp_port = support::free_port();
    let gw = run
        .gangway(&[
            &format!("--entryPoints.tcp.address=127.0.0.1:{tcp_port}"),
            "--api=true",
        ])
        .await;
    let probe = Probe::new(&gw);
    let spec = Spec::new("db");
    let port = spec.port.to_string();
    let spec = spec
        .label(&format!("{P}.enable"), "true")
        .label(&format!("{P}.tcp.routers.db.rule"), "HostSNI(`*`)")
        .label(&format!("{P}.tcp.routers.db.entrypoints"), "tcp")
        .label(&format!("{P}.tcp.routers.db.middlewares"), "local")
        .label(
            &format!("{P}.tcp.middlewares.local.ipallowlist.sourcerange"),
            "127.0.0.0/8",
        )
        .label(
            &format!("{P}.tcp.services.db.loadbalancer.server.port"),
            &port,
        )
        // A TCP router with a mistyped option is left out, with its label.
        .label(&format!("{P}.tcp.routers.typo.rule"), "HostSNI(`*`)")
        .label(&format!("{P}.tcp.routers.typo.entrypoint"), "tcp");
    run.start(&spec).await;
    // The container's web server, reached through the TCP router: the
    // bytes pass as they are, so its HTTP answer comes back whole.
    eventually(
        Duration::from_secs(10),
        "TCP router from labels",
        || async { over_tcp(tcp_port).await.is_ok_and(|body| body == "db") },
    )
    .await;
    // No HTTP router for it on the other entry point.
    assert_eq!(probe.status("db.test").await, 404);
    // The typo is reported on the router, with its label.
    let api = gw_api(&gw).await;
    let typo = api
        .as_array()
        .and_then(|a| a.iter().find(|r| r["name"] == "typo@docker"))
        .cloned()
        .unwrap_or_else(|| panic!("typo@docker in {api}"));
    assert_eq!(typo["status"], "disabled");
    let error = typo["error"][0].as_str().unwrap_or_default();
    assert!(
        error.contains("entrypoint") && error.contains("did you mean `entrypoints`"),
        "{typo}"
    );
    let db = api
        .as_array()
        .and_then(|a| a.iter().find(|r| r["name"] == "db@docker"))
        .cloned()
        .unwrap_or_else(|| panic!("db@docker in {api}"));
    assert_eq!(db["status"], "enabled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn udp_labels_route_to_the_containers_port_while_it_runs() {
    let _serial = SERIAL.lock().await;
    if !ready("udp_labels_route_to_the_containers_port").await {
        return;
    }
    let run = Run::new("udplabels");
    let udp_port = support::free_port();
    let gw = run
        .gangway(&[&format!(
            "--entryPoints.dns.address=127.0.0.1:{udp_port}/udp"
        )])
        .await;
    // The container shares the host's network: the UDP server it stands
    // for listens on the host's loopback, at the port its labels name.
    let echo = support::udp_echo("echo").await;
    let spec = Spec::new("dns")
        .label(&format!("{P}.enable"), "true")
        .label(&format!("{P}.udp.routers.dns.entrypoints"), "dns")
        .label(
            &format!("{P}.udp.services.dns.loadbalancer.server.port"),
            &echo.to_string(),
        );
    let name = run.start(&spec).await;
    eventually(
        Duration::from_secs(10),
        "UDP router from labels",
        || async { support::udp_ask(udp_port, "ping").await.as_deref() == Some("echo: ping") },
    )
    .await;
    // Its container stopped, the router goes: a new client's datagram
    // gets no answer.
    docker(&["stop", "-t", "1", &name]).await.expect("stop");
    eventually(
        Duration::from_secs(10),
        "UDP route gone with the container",
        || async { support::udp_ask(udp_port, "again").await.is_none() },
    )
    .await;
    assert!(!gw.log().contains("panicked"), "{}", gw.log());
}

/// `tls.stores.default.defaultGeneratedCert` is the one TLS setting
/// Traefik reads from labels: a container's labels reach the compiled
/// configuration, where a resolver gangway does not have is reported on
/// the overview (the order itself is the ACME tests' subject).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_default_generated_certificate_is_read_from_a_container_s_labels() {
    let _serial = SERIAL.lock().await;
    if !ready("default_generated_cert_label").await {
        return;
    }
    let run = Run::new("gencert");
    let gw = run.gangway(&["--api=true"]).await;
    let probe = Probe::new(&gw);
    let app = Spec::new("app")
        .routed(P, "app", "app.test", "app")
        .label(
            "gangway.tls.stores.default.defaultgeneratedcert.resolver",
            "nowhere",
        )
        .label(
            "gangway.tls.stores.default.defaultgeneratedcert.domain.main",
            "fallback.test",
        );
    run.start(&app).await;
    eventually(Duration::from_secs(10), "app routed", || {
        probe.answers("app.test", "app")
    })
    .await;
    gw.rewrite(
        "[http.routers.api]\nentryPoints = [\"web\"]\nrule = \"Host(`api.test`)\"\nservice = \"api@internal\"\n",
    );
    let warned = || async {
        let got = gw.get("api.test", "/api/overview").await;
        let text = String::from_utf8_lossy(&got.body).into_owned();
        got.status == 200
            && text.contains("tls.stores.default.defaultGeneratedCert")
            && text.contains("nowhere")
    };
    eventually(
        Duration::from_secs(10),
        "the overview names the label's unknown resolver",
        warned,
    )
    .await;
    // The container's routers are not touched by it.
    assert!(probe.answers("app.test", "app").await);
    let record = gw.get("api.test", "/api/http/routers/app@docker").await;
    assert_eq!(record.status, 200, "{}", record.text());
    assert!(
        !record.text().contains("defaultgeneratedcert"),
        "{}",
        record.text()
    );
}

/// `/api/tcp/routers` of a gangway started with `--api=true` and an API
/// router on its web entry point.
async fn gw_api(gw: &support::Gangway) -> serde_json::Value {
    gw.rewrite(
        "[http.routers.api]\nentryPoints = [\"web\"]\nrule = \"Host(`api.test`)\"\nservice = \"api@internal\"\n",
    );
    let found = std::sync::Mutex::new(None);
    eventually(Duration::from_secs(5), "the API answers", || async {
        let got = gw.get("api.test", "/api/tcp/routers").await;
        let ok = got.status == 200;
        if ok {
            *found.lock().unwrap() = serde_json::from_slice(&got.body).ok();
        }
        ok
    })
    .await;
    found.into_inner().unwrap().expect("JSON")
}

/// A daemon on a TCP port with TLS that requires a client certificate
/// (`--tlsverify`), as remote Docker hosts are reached: the provider's
/// `tls.*` options carry the CA and the client certificate.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_daemon_over_tls_is_read_with_its_ca_and_a_client_certificate() {
    const TEST: &str = "docker_tls";
    if !ready(TEST).await {
        return;
    }
    let _serial = SERIAL.lock().await;
    let (daemon, tls) = PrivateDaemon::start_tls()
        .await
        .unwrap_or_else(|e| panic!("{TEST}: a daemon with TLS did not start: {e}"));
    let run = Run::on(TEST, &daemon);
    run.start(&Spec::new("secure").routed("gangway", "secure", "secure.test", "secure"))
        .await;
    let gw = Gangway::with_file(
        "",
        &[
            "--providers.docker",
            &run.constraint(),
            &format!("--providers.docker.endpoint={}", tls.endpoint),
            &format!("--providers.docker.tls.ca={}", tls.ca),
            &format!("--providers.docker.tls.cert={}", tls.cert),
            &format!("--providers.docker.tls.key={}", tls.key),
        ],
    )
    .await;
    let probe = Probe::new(&gw);
    eventually(Duration::from_secs(30), "routed over TLS", || {
        probe.answers("secure.test", "secure")
    })
    .await;
}
