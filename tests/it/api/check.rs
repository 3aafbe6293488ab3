//! `gangway check`, run as users run it: the real binary over compose files
//! with one mistake each (the message, the label it names and the exit
//! status), over Swarm stack files, over static and file-provider
//! configuration, and over the running containers of the real daemon. Its
//! silence on good files is checked over every example in
//! `tests/it/whole/examples.rs`.

use crate::support;

use support::check;

use std::process::Command;
use support::docker::{IMAGE, Run, SERIAL, Spec};

/// A compose file: gangway on two entry points with one certificate
/// resolver, and a service `app` with `labels` (YAML list items).
fn compose(labels: &[&str], extra_service: &str) -> String {
    let mut out = String::from(
        "services:\n  gangway:\n    image: gangway:local\n    network_mode: host\n    command:\n      - --providers.docker\n      - --entryPoints.web.address=127.0.0.1:8000\n      - --entryPoints.websecure.address=127.0.0.1:8443\n      - --certificatesResolvers.le.acme.tlsChallenge=true\n  app:\n    image: IMAGE\n    network_mode: host\n    labels:\n",
    )
    .replace("IMAGE", IMAGE);
    for l in labels {
        out.push_str(&format!("      - \"{l}\"\n"));
    }
    out.push_str(extra_service);
    out
}

const OK: &[&str] = &[
    "gangway.enable=true",
    "gangway.http.routers.app.rule=Host(`app.localhost`)",
    "gangway.http.services.app.loadbalancer.server.port=9001",
];

fn with(extra: &[&'static str]) -> Vec<&'static str> {
    OK.iter().chain(extra).copied().collect()
}

/// One broken file per mistake the issue lists: what, the labels of
/// `app`, more services, the exit status, texts the output must hold.
type Case = (
    &'static str,
    Vec<&'static str>,
    &'static str,
    i32,
    Vec<&'static str>,
);

fn cases() -> Vec<Case> {
    vec![
        (
            "the good file",
            with(&[]),
            "",
            0,
            vec!["gangway check: no problems found"],
        ),
        (
            "unknown option with a suggestion",
            vec![
                "gangway.enable=true",
                "gangway.http.routers.app.rul=Host(`app.localhost`)",
                "gangway.http.services.app.loadbalancer.server.port=9001",
            ],
            "",
            1,
            vec![
                "error: docker-compose.yml, service `app`: label `gangway.http.routers.app.rul`: unknown option `rul` (did you mean `rule`?)",
            ],
        ),
        (
            "a label typo and a rule error in one router",
            vec![
                "gangway.enable=true",
                "gangway.http.routers.app.rule=Host(`app.localhost`) &&",
                "gangway.http.routers.app.middlewarez=auth",
                "gangway.http.services.app.loadbalancer.server.port=9001",
            ],
            "",
            1,
            vec![
                "error: docker-compose.yml, service `app`: label `gangway.http.routers.app.middlewarez`: unknown option `middlewarez` (did you mean `middlewares`?)",
                "error: docker-compose.yml, service `app`: router `app@docker`: label `gangway.http.routers.app.rule`: rule `Host(`app.localhost`) &&`: ",
            ],
        ),
        (
            "unknown middleware option",
            with(&[
                "gangway.http.routers.app.middlewares=strip",
                "gangway.http.middlewares.strip.stripprefix.prefixs=/api",
            ]),
            "",
            1,
            vec![
                "label `gangway.http.middlewares.strip.stripprefix.prefixs`: unknown option `prefixs` (did you mean `prefixes`?)",
            ],
        ),
        (
            "misspelt label prefix",
            vec![
                "gangway.enable=true",
                "gangwy.http.routers.app.rule=Host(`app.localhost`)",
                "gangway.http.services.app.loadbalancer.server.port=9001",
            ],
            "",
            1,
            vec![
                "label `gangwy.http.routers.app.rule`: unknown label prefix `gangwy` (did you mean `gangway`?)",
            ],
        ),
        (
            "rule syntax error with its position",
            with(&["gangway.http.routers.bad.rule=Host(`a.localhost`) && Pathh(`/x`)"]),
            "",
            1,
            vec![
                "router `bad@docker`: label `gangway.http.routers.bad.rule`: rule `Host(`a.localhost`) && Pathh(`/x`)`: rule error at column 24",
            ],
        ),
        (
            "missing port",
            vec![
                "gangway.enable=true",
                "gangway.http.routers.app.rule=Host(`app.localhost`)",
            ],
            "",
            1,
            vec!["no port: the container exposes none"],
        ),
        (
            "port unknown: the image is not here to say (a warning)",
            with(&[]),
            "  other:\n    image: not-built-here:1\n    network_mode: host\n    labels: [gangway.enable=true]\n",
            0,
            vec![
                "warning: docker-compose.yml, service `other`: service `other-",
                "the image's exposed ports could not be read",
            ],
        ),
        (
            "several ports: the lowest, with a warning that names it",
            vec![
                "gangway.enable=true",
                "gangway.http.routers.app.rule=Host(`app.localhost`)",
            ],
            "    expose: [\"8080\", \"80\"]\n",
            0,
            vec![
                "warning: docker-compose.yml, service `app`: service `app-",
                "the container exposes several ports (80, 8080); port 80, the lowest, is used (as in Traefik); set `gangway.http.services.app-",
            ],
        ),
        (
            "a wildcard host with a certificate resolver: reported, not ordered",
            with(&[
                "gangway.http.routers.wild.rule=Host(`*.app.localhost`)",
                "gangway.http.routers.wild.service=app",
                "gangway.http.routers.wild.tls.certresolver=le",
            ]),
            "",
            0,
            vec![
                "warning: docker-compose.yml, service `app`: router `wild@docker`: label `gangway.http.routers.wild.rule`: no certificate is ordered for `*.app.localhost`: a wildcard name needs a wildcard certificate, which only the DNS-01 challenge can get, and resolver `le` has no dnsChallenge (set certificatesResolvers.le.acme.dnsChallenge",
            ],
        ),
        (
            "missing middleware",
            with(&["gangway.http.routers.app.middlewares=auth"]),
            "",
            1,
            vec![
                "router `app@docker`: label `gangway.http.routers.app.middlewares`: middleware `auth@docker`: does not exist",
            ],
        ),
        (
            "missing service",
            with(&[
                "gangway.http.routers.other.rule=Host(`other.localhost`)",
                "gangway.http.routers.other.service=nothing",
            ]),
            "",
            1,
            vec![
                "router `other@docker`: label `gangway.http.routers.other.service`: service `nothing@docker`: does not exist",
            ],
        ),
        (
            // A warning, as on the dashboard: the configuration is valid.
            "two routers with the same rule and priority",
            with(&[
                "gangway.http.routers.copy.rule=Host(`app.localhost`)",
                "gangway.http.routers.copy.service=app",
            ]),
            "",
            0,
            vec![
                "warning: docker-compose.yml, service `app`: router `copy@docker`: label `gangway.http.routers.copy.rule`: same rule `Host(`app.localhost`)` and priority 21 as router `app@docker`",
            ],
        ),
        (
            "certificate resolver that is not configured",
            with(&[
                "gangway.http.routers.app.entrypoints=websecure",
                "gangway.http.routers.app.tls.certresolver=letsencrypt",
            ]),
            "",
            1,
            vec![
                "label `gangway.http.routers.app.tls.certresolver`: certificate resolver `letsencrypt` does not exist",
            ],
        ),
        (
            "labels without enable, exposedByDefault not given: routed as in Traefik, said in a note",
            vec![
                "gangway.http.routers.app.rule=Host(`app.localhost`)",
                "gangway.http.services.app.loadbalancer.server.port=9001",
            ],
            "",
            0,
            vec![
                "note: static configuration: providers.docker.exposedByDefault is not given: containers with `gangway.` labels are routed without `gangway.enable=true`",
                "gangway check: no problems found, 1 note",
            ],
        ),
        (
            "a stray Traefik label with a typo beside gangway labels: a warning with the label meant",
            with(&["traefik.http.routers.app.rulee=Host(`app.localhost`)"]),
            "",
            0,
            vec![
                "warning: docker-compose.yml, service `app`: label `traefik.http.routers.app.rulee`: labels under `traefik.` are not read, the label prefix is `gangway`; and `rulee` is not an option (did you mean `gangway.http.routers.app.rule`?)",
                "gangway check: 0 errors, 1 warning",
            ],
        ),
        (
            "Traefik labels under the gangway prefix: a warning",
            vec![
                "traefik.enable=true",
                "traefik.http.routers.app.rule=Host(`app.localhost`)",
            ],
            "",
            0,
            vec![
                "labels under `traefik.` are not read: the label prefix is `gangway` (set --providers.docker.labelPrefix=traefik to read them)",
            ],
        ),
    ]
}

#[test]
fn every_mistake_is_named_with_its_label_and_sets_the_exit_status() {
    // Whether a port is missing depends on the image's EXPOSE, which check
    // reads from the daemon: the file uses the local test image.
    let image_here = Command::new("docker")
        .args(["image", "inspect", IMAGE])
        .output()
        .is_ok_and(|o| o.status.success());
    if !image_here {
        support::docker::skip(
            "every_mistake_is_named_with_its_label_and_sets_the_exit_status",
            "the test image is not available (scripts/ci/docker-up builds it)",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (what, labels, extra, status, wanted) in cases() {
        // As many errors as the case names (a case with two mistakes names
        // both), and at most one otherwise.
        let expected = wanted
            .iter()
            .filter(|w| w.starts_with("error: "))
            .count()
            .max(1);
        let file = dir.path().join("docker-compose.yml");
        std::fs::write(&file, compose(&labels, extra)).unwrap();
        let (code, out) = check(dir.path(), &["--compose", "docker-compose.yml"]);
        assert_eq!(code, status, "{what}: exit status; output:\n{out}");
        for w in wanted {
            assert!(out.contains(w), "{what}: wanted `{w}` in:\n{out}");
        }
        // Each mistake is reported once, without follow-on noise.
        let errors = out.lines().filter(|l| l.starts_with("error: ")).count();
        assert!(
            errors <= expected,
            "{what}: {expected} error(s) expected:\n{out}"
        );
    }
}

#[test]
fn json_output_carries_the_same_findings() {
    let dir = tempfile::tempdir().unwrap();
    let labels = [
        "gangway.enable=true",
        "gangway.http.routers.app.rul=Host(`app.localhost`)",
        "gangway.http.services.app.loadbalancer.server.port=9001",
    ];
    std::fs::write(dir.path().join("docker-compose.yml"), compose(&labels, "")).unwrap();
    let (code, out) = check(
        dir.path(),
        &["--compose", "docker-compose.yml", "--format", "json"],
    );
    assert_eq!(code, 1);
    let json: serde_json::Value = serde_json::from_str(&out).expect("one JSON document");
    assert_eq!(json["errors"], 1);
    assert_eq!(json["warnings"], 0);
    let f = &json["findings"][0];
    assert_eq!(f["severity"], "error");
    assert_eq!(f["source"], "docker-compose.yml, service `app`");
    assert_eq!(f["label"], "gangway.http.routers.app.rul");
    assert_eq!(f["message"], "unknown option `rul` (did you mean `rule`?)");
}

#[test]
fn a_traefik_compose_file_is_read_with_traefik_labels() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("docker-compose.yml"),
        "services:\n  traefik:\n    image: traefik:v3.3\n    command: --providers.docker=true --entrypoints.web.address=:80\n  app:\n    image: app\n    network_mode: host\n    labels:\n      - traefik.enable=true\n      - traefik.http.routers.app.rule=Host(`app.localhost`)\n      - traefik.http.routers.app.middlewares=gone\n      - traefik.http.services.app.loadbalancer.server.port=80\n",
    )
    .unwrap();
    let (code, out) = check(dir.path(), &["--compose", "docker-compose.yml"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(
            "label `traefik.http.routers.app.middlewares`: middleware `gone@docker`: does not exist"
        ),
        "{out}"
    );
}

#[test]
fn static_and_file_provider_configuration_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("gangway.toml"),
        "[entryPoints.web]\naddress = \"127.0.0.1:8000\"\n[providers.file]\nfilename = \"dynamic.toml\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("dynamic.toml"),
        "[http.routers.app]\nrule = \"Host(`app.localhost`)\"\nservice = \"app\"\nmiddlewares = [\"missing\"]\n[http.services.app.loadBalancer]\n[[http.services.app.loadBalancer.servers]]\nurl = \"http://127.0.0.1:9000\"\n",
    )
    .unwrap();
    let (code, out) = check(dir.path(), &["--configFile", "gangway.toml"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(
            "error: dynamic.toml:4: router `app@file`: middleware `missing@file`: does not exist"
        ),
        "the file and the line of `middlewares`:\n{out}"
    );
    let (_, out) = check(
        dir.path(),
        &["--configFile", "gangway.toml", "--format", "json"],
    );
    let json: serde_json::Value = serde_json::from_str(&out).expect("one JSON document");
    assert_eq!(
        json["findings"][0]["origin"],
        serde_json::json!({ "type": "file", "path": "dynamic.toml", "line": 4 }),
        "{json}"
    );

    // A static option that does not exist: named, exit 1.
    std::fs::write(
        dir.path().join("gangway.toml"),
        "[entryPoints.web]\nadress = \"127.0.0.1:8000\"\n",
    )
    .unwrap();
    let (code, out) = check(dir.path(), &["--configFile", "gangway.toml"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("error: static configuration: ") && out.contains("adress"),
        "{out}"
    );

    // A dynamic file that does not parse: named with its line.
    std::fs::write(
        dir.path().join("gangway.toml"),
        "[providers.file]\nfilename = \"dynamic.toml\"\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("dynamic.toml"), "[http.routers.app\n").unwrap();
    let (code, out) = check(dir.path(), &["--configFile", "gangway.toml"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("error: dynamic.toml:1: unclosed table"),
        "{out}"
    );
}

#[test]
fn an_object_with_two_problems_reports_both_at_their_lines_in_toml_and_yaml() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("gangway.toml"),
        "[entryPoints.web]\naddress = \"127.0.0.1:8000\"\n[providers.file]\ndirectory = \"conf\"\n",
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("conf")).unwrap();
    std::fs::write(
        dir.path().join("conf/a.toml"),
        "[http.services.app.loadBalancer]\n[[http.services.app.loadBalancer.servers]]\nurl = \"http://127.0.0.1:9000\"\n\n[http.routers.two]\nrule = \"Host(`two.localhost`) &&\"\nservice = \"app\"\nmiddlewares = [\"missing\"]\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("conf/b.yml"),
        "http:\n  routers:\n    three:\n      rule: Host(`three.localhost`)\n      service: app\n      middlewares:\n        - gone\n      entryPoints: [web, nowhere]\n",
    )
    .unwrap();
    let (code, out) = check(dir.path(), &["--configFile", "gangway.toml"]);
    assert_eq!(code, 1, "{out}");
    for line in [
        "error: conf/a.toml:6: router `two@file`: rule `Host(`two.localhost`) &&`: ",
        "error: conf/a.toml:8: router `two@file`: middleware `missing@file`: does not exist",
        "error: conf/b.yml:6: router `three@file`: middleware `gone@file`: does not exist",
        "error: conf/b.yml:8: router `three@file`: entry point `nowhere` does not exist",
    ] {
        assert!(out.contains(line), "wanted `{line}` in:\n{out}");
    }
}

#[test]
fn a_traefik_project_with_a_stray_gangway_label_is_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("docker-compose.yml"),
        "services:\n  traefik:\n    image: traefik:v3.3\n    command: --providers.docker=true --entrypoints.web.address=:80\n  app:\n    image: app\n    network_mode: host\n    labels:\n      - traefik.enable=true\n      - traefik.http.routers.app.rule=Host(`app.localhost`)\n      - traefik.http.services.app.loadbalancer.server.port=80\n      - gangway.http.routers.app.middlewares=auth\n",
    )
    .unwrap();
    let (code, out) = check(dir.path(), &["--compose", "docker-compose.yml"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(
            "warning: docker-compose.yml, service `app`: label `gangway.http.routers.app.middlewares`: labels under `gangway.` are not read, the label prefix is `traefik` (did you mean `traefik.http.routers.app.middlewares`?)"
        ),
        "{out}"
    );
    assert!(out.contains("gangway check: 0 errors, 1 warning"), "{out}");
}

#[test]
fn usage_errors_exit_with_2() {
    let dir = tempfile::tempdir().unwrap();
    let (code, _) = check(dir.path(), &["--format", "yaml"]);
    assert_eq!(code, 2);
    let (code, out) = check(dir.path(), &["--help"]);
    assert_eq!(code, 0);
    assert!(out.contains("usage: gangway check"));
}

/// `--docker` reads the running containers of the real daemon.
#[tokio::test]
async fn running_containers_are_checked() {
    let _serial = SERIAL.lock().await;
    if !support::docker::ready("running_containers_are_checked").await {
        return;
    }
    let run = Run::new("check-docker");
    let good = Spec::new("good").routed("gangway", "good", "good.localhost", "good");
    let port = good.port.to_string();
    run.start(&good).await;
    let typo = Spec::new("typo")
        .label("gangway.enable", "true")
        .label("gangway.http.routers.typo.rule", "Host(`typo.localhost`)")
        .label("gangway.http.routers.typo.midlewares", "auth")
        .label("gangway.http.services.typo.loadbalancer.server.port", &port);
    let typo_name = run.start(&typo).await;
    let dir = tempfile::tempdir().unwrap();
    let constraint = run.constraint();
    let (code, out) = check(dir.path(), &["--docker", &constraint]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!(
            "error: container `{typo_name}`: label `gangway.http.routers.typo.midlewares`: unknown option `midlewares` (did you mean `middlewares`?)"
        )),
        "{out}"
    );
    assert_eq!(
        out.lines().filter(|l| l.starts_with("error")).count(),
        1,
        "only the broken container is reported:\n{out}"
    );
}

#[test]
fn a_mistyped_key_and_a_rule_error_in_one_file_are_both_reported_at_their_lines() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("gangway.toml"),
        "[entryPoints.web]\naddress = \"127.0.0.1:8000\"\n[providers.file]\nfilename = \"dynamic.toml\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("dynamic.toml"),
        "[http.routers.typo]\nrule = \"Host(`typo.localhost`)\"\nservce = \"app\"\n\n[http.routers.broken]\nrule = \"Host(`broken.localhost`) &&\"\nservice = \"app\"\n\n[http.services.app.loadBalancer]\n[[http.services.app.loadBalancer.servers]]\nurl = \"http://127.0.0.1:9000\"\n\n[tls.options.modern]\nminVersoin = \"VersionTLS13\"\n",
    )
    .unwrap();
    let (code, out) = check(dir.path(), &["--configFile", "gangway.toml"]);
    assert_eq!(code, 1, "{out}");
    for line in [
        "error: dynamic.toml:3: router `typo@file`: unknown option `servce` (did you mean `service`?)",
        "error: dynamic.toml:13: TLS options `modern` is left out: unknown option `minVersoin` (did you mean `minVersion`?)",
        "error: dynamic.toml:6: router `broken@file`: rule `Host(`broken.localhost`) &&`: ",
    ] {
        assert!(out.contains(line), "wanted `{line}` in:\n{out}");
    }
    let (_, out) = check(
        dir.path(),
        &["--configFile", "gangway.toml", "--format", "json"],
    );
    let json: serde_json::Value = serde_json::from_str(&out).expect("one JSON document");
    let typo = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["object"] == "router `typo@file`")
        .unwrap_or_else(|| panic!("the typo in {json}"));
    assert_eq!(
        typo["origin"],
        serde_json::json!({ "type": "file", "path": "dynamic.toml", "line": 3 }),
        "{json}"
    );
}

#[test]
fn file_provider_problems_outside_objects_name_their_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("gangway.toml"),
        "[entryPoints.web]\naddress = \"127.0.0.1:8000\"\n[providers.file]\ndirectory = \"conf\"\n",
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("conf")).unwrap();
    let router = "[http.routers.app]\nrule = \"Host(`app.localhost`)\"\nservice = \"app\"\n";
    std::fs::write(
        dir.path().join("conf/a.toml"),
        format!("{router}[http.services.app.loadBalancer]\n[[http.services.app.loadBalancer.servers]]\nurl = \"http://127.0.0.1:9000\"\n"),
    )
    .unwrap();
    std::fs::write(dir.path().join("conf/b.toml"), format!("\n\n{router}")).unwrap();
    let (code, out) = check(dir.path(), &["--configFile", "gangway.toml"]);
    assert_eq!(code, 0, "{out}");
    let line = "warning: conf/b.toml:3: router `app` is already defined in another file; the first definition is kept";
    assert!(out.contains(line), "wanted `{line}` in:\n{out}");

    std::fs::write(
        dir.path().join("conf/c.toml"),
        "[http.routers.x]\nrule = \n",
    )
    .unwrap();
    let (code, out) = check(dir.path(), &["--configFile", "gangway.toml"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("error: conf/c.toml:2: "), "{out}");
}

#[test]
fn a_router_that_never_gets_a_request_is_named_with_its_winner_and_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("gangway.toml"),
        "[entryPoints.web]\naddress = \"127.0.0.1:8000\"\n[entryPoints.other]\naddress = \"127.0.0.1:8001\"\n[providers.file]\nfilename = \"dynamic.toml\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("dynamic.toml"),
        "[http.services.app.loadBalancer]\n[[http.services.app.loadBalancer.servers]]\nurl = \"http://127.0.0.1:9000\"\n\
         [http.routers.first]\nrule = \"Host(`app.localhost`)\"\nservice = \"app\"\nentryPoints = [\"web\"]\n\
         [http.routers.second]\nrule = \"Host(`app.localhost`)\"\nservice = \"app\"\nentryPoints = [\"web\"]\n\
         [http.routers.elsewhere]\nrule = \"Host(`app.localhost`)\"\nservice = \"app\"\nentryPoints = [\"other\"]\n",
    )
    .unwrap();
    let (code, out) = check(dir.path(), &["--configFile", "gangway.toml"]);
    // A warning, as the dashboard shows it: a setup Traefik runs passes.
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(
            "warning: dynamic.toml:9: router `second@file`: same rule `Host(`app.localhost`)` and priority 21 as router `first@file` on entry point `web`: `first@file` gets every request"
        ),
        "{out}"
    );
    assert_eq!(
        out.matches("warning: ").count(),
        1,
        "only the loser:\n{out}"
    );
    assert_eq!(out.matches("error: ").count(), 0, "{out}");

    let (_, out) = check(
        dir.path(),
        &["--configFile", "gangway.toml", "--format", "json"],
    );
    let json: serde_json::Value = serde_json::from_str(&out).expect("one JSON document");
    let f = &json["findings"][0];
    assert_eq!(f["object"], "router `second@file`", "{json}");
    assert_eq!(
        f["origin"],
        serde_json::json!({ "type": "file", "path": "dynamic.toml", "line": 9 })
    );
}

/// "the fallback is never used" is said only where it is true: a failover
/// with `errors`, or over servers without a health check (a refused
/// connection takes them out), passes silently, nested under other
/// services too; one whose main service gangway answers itself warns.
#[test]
fn a_failover_is_said_to_never_use_its_fallback_only_when_it_never_does() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("gangway.toml"),
        "[entryPoints.web]\naddress = \"127.0.0.1:8000\"\n[ping]\n[providers.file]\nfilename = \"dynamic.toml\"\n",
    )
    .unwrap();
    let servers = "[http.services.main.loadBalancer]\n[[http.services.main.loadBalancer.servers]]\nurl = \"http://127.0.0.1:9000\"\n\
         [http.services.spare.loadBalancer]\n[[http.services.spare.loadBalancer.servers]]\nurl = \"http://127.0.0.1:9001\"\n\
         [http.routers.app]\nrule = \"Host(`app.localhost`)\"\nservice = \"top\"\n\
         [[http.services.top.weighted.services]]\nname = \"safe\"\n\
         [[http.services.top.weighted.services]]\nname = \"plain\"\n";
    let failovers = |main: &str| {
        format!(
            "{servers}[http.services.safe.failover]\nservice = \"main\"\nfallback = \"spare\"\n\
             [http.services.safe.failover.errors]\nstatus = [\"502\"]\n\
             [http.services.plain.failover]\nservice = \"{main}\"\nfallback = \"spare\"\n"
        )
    };
    let write = |text: String| std::fs::write(dir.path().join("dynamic.toml"), text).unwrap();

    write(failovers("main"));
    let (code, out) = check(dir.path(), &["--configFile", "gangway.toml"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("gangway check: no problems found"), "{out}");

    write(failovers("ping@internal"));
    let (code, out) = check(dir.path(), &["--configFile", "gangway.toml"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("service `plain@file`: the main service is answered by gangway itself and is never down, so the fallback is never used"),
        "{out}"
    );
    assert!(out.contains("gangway check: 0 errors, 1 warning"), "{out}");
}

#[test]
fn a_router_on_an_entry_point_that_does_not_exist_is_reported_once() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("gangway.toml"),
        "[entryPoints.web]\naddress = \"127.0.0.1:8000\"\n[providers.file]\nfilename = \"dynamic.toml\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("dynamic.toml"),
        "[http.routers.app]\nrule = \"Host(`app.localhost`)\"\nentryPoints = [\"nope\"]\nservice = \"app\"\n[http.services.app.loadBalancer]\n[[http.services.app.loadBalancer.servers]]\nurl = \"http://127.0.0.1:9000\"\n",
    )
    .unwrap();
    let (code, out) = check(dir.path(), &["--configFile", "gangway.toml"]);
    assert_eq!(code, 1, "{out}");
    let findings: Vec<&str> = out.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(
        findings,
        ["error: dynamic.toml:3: router `app@file`: entry point `nope` does not exist"],
        "{out}"
    );
    assert!(out.contains("gangway check: 1 error, 0 warnings"), "{out}");

    // A directory of its own, so the `gangway.toml` above is not read.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("docker-compose.yml"),
        "services:\n  gangway:\n    image: gangway:local\n    network_mode: host\n    command:\n      - --providers.docker\n      - --entryPoints.web.address=127.0.0.1:8000\n  app:\n    image: app\n    network_mode: host\n    labels:\n      - gangway.enable=true\n      - gangway.http.routers.app.rule=Host(`app.localhost`)\n      - gangway.http.routers.app.entrypoints=nope\n      - gangway.http.services.app.loadbalancer.server.port=80\n",
    )
    .unwrap();
    let (code, out) = check(dir.path(), &["--compose", "docker-compose.yml"]);
    assert_eq!(code, 1, "{out}");
    let findings: Vec<&str> = out.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(
        findings,
        [
            "error: docker-compose.yml, service `app`: router `app@docker`: label `gangway.http.routers.app.entrypoints`: entry point `nope` does not exist"
        ],
        "{out}"
    );
}

#[test]
fn tcp_routers_and_services_are_checked_too() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("gangway.toml"),
        "[entryPoints.db]\naddress = \"127.0.0.1:5432\"\n[providers.file]\nfilename = \"dynamic.toml\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("dynamic.toml"),
        "[tcp.routers.named]\nrule = \"HostSNI(`db.test`)\"\nservice = \"db\"\n\n[tcp.routers.web]\nrule = \"Host(`db.test`)\"\nservice = \"db\"\n\n[[tcp.services.db.loadBalancer.servers]]\naddress = \"127.0.0.1\"\n",
    )
    .unwrap();
    let (code, out) = check(dir.path(), &["--configFile", "gangway.toml"]);
    assert_eq!(code, 1, "{out}");
    // Each named by its file and line, as HTTP objects are.
    for line in [
        "dynamic.toml:2: TCP router `named@file`: rule `HostSNI(`db.test`)`: a TCP router without `tls` sees no ClientHello",
        "dynamic.toml:6: TCP router `web@file`: rule `Host(`db.test`)`: rule error at column 1: unknown matcher `Host`; `Host` is an HTTP router matcher; TCP rules use HostSNI, HostSNIRegexp, ClientIP, ALPN",
        "dynamic.toml:9: TCP service `db@file`: server address `127.0.0.1` is not host:port",
    ] {
        assert!(out.contains(line), "wanted `{line}` in:\n{out}");
    }
}

#[test]
fn a_dns_provider_without_its_environment_variables_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("gangway.toml"),
        "[entryPoints.websecure]\naddress = \"127.0.0.1:8443\"\n\
         [certificatesResolvers.le.acme.dnsChallenge]\nprovider = \"rfc2136\"\n",
    )
    .unwrap();
    let run = |env: &[(&str, &str)]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_gangway"));
        cmd.args(["check", "--configFile", "gangway.toml"])
            .current_dir(dir.path())
            .env_remove("GANGWAY_TEST_STRICT");
        for v in [
            "RFC2136_NAMESERVER",
            "RFC2136_TSIG_KEY",
            "RFC2136_TSIG_SECRET",
        ] {
            cmd.env_remove(v).env_remove(format!("{v}_FILE"));
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("run gangway check");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let (code, out) = run(&[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(
            "error: static configuration: certificatesResolvers.le.acme.dnsChallenge: provider \
             `rfc2136` needs the environment variable RFC2136_NAMESERVER (or \
             RFC2136_NAMESERVER_FILE naming a file that holds it)"
        ),
        "{out}"
    );
    // A key without its secret is named too, and the secret file is read.
    let (code, out) = run(&[
        ("RFC2136_NAMESERVER", "127.0.0.1"),
        ("RFC2136_TSIG_KEY", "k"),
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("RFC2136_TSIG_SECRET"), "{out}");
    let secret = dir.path().join("secret");
    std::fs::write(&secret, "c2VjcmV0\n").unwrap();
    let (code, out) = run(&[
        ("RFC2136_NAMESERVER", "127.0.0.1"),
        ("RFC2136_TSIG_KEY", "k"),
        ("RFC2136_TSIG_SECRET_FILE", secret.to_str().unwrap()),
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("c2VjcmV0"), "{out}");
}

/// A stack file (`docker stack deploy -c stack.yml shop`): gangway with
/// the Swarm provider (prefix `prefix`) on the host network, and `web`
/// whose `deploy.labels` and container `labels` are given.
fn stack(prefix: &str, deploy_labels: &[&str], container_labels: &[&str]) -> String {
    let mut out = format!(
        "name: shop\nservices:\n  gangway:\n    image: gangway:local\n    networks: [hostnet]\n    command:\n      - --providers.swarm\n      - --providers.swarm.labelPrefix={prefix}\n      - --entryPoints.web.address=:80\n  web:\n    image: example/web\n    networks: [hostnet]\n    deploy:\n      replicas: 2\n      labels:\n"
    );
    for l in deploy_labels {
        out.push_str(&format!("        - \"{l}\"\n"));
    }
    if !container_labels.is_empty() {
        out.push_str("    labels:\n");
        for l in container_labels {
            out.push_str(&format!("      - \"{l}\"\n"));
        }
    }
    out.push_str("networks:\n  hostnet:\n    external: true\n    name: host\n");
    out
}

#[test]
fn a_stack_file_is_checked_as_the_swarm_provider_reads_deploy_labels() {
    let dir = tempfile::tempdir().unwrap();
    let run = |yaml: String| {
        std::fs::write(dir.path().join("stack.yml"), yaml).unwrap();
        check(dir.path(), &["--compose", "stack.yml"])
    };
    let good = [
        "traefik.enable=true",
        "traefik.http.routers.web.rule=Host(`web.example.com`)",
        "traefik.http.services.web.loadbalancer.server.port=8080",
    ];

    // The prefix the Swarm provider is given is the one read.
    let (code, out) = run(stack("traefik", &good, &[]));
    assert_eq!(code, 0, "{out}");
    assert_eq!(out, "gangway check: no problems found\n");

    // Swarm gives no port to pick: without the label, the service is not
    // routed, and the error says which label to set, where (the service
    // without labels of its own is named after the Swarm service).
    let (code, out) = run(stack("traefik", &good[..2], &[]));
    assert_eq!(code, 1, "{out}");
    assert_eq!(
        out,
        "error: stack.yml, service `web`, deploy.labels: service `shop-web@swarm`: no port: a Swarm service's port must be given by label; set `traefik.http.services.shop-web.loadbalancer.server.port`\n\
         gangway check: 1 error, 0 warnings\n"
    );

    // The labels under another prefix than the provider's are not read.
    let (code, out) = run(stack("gangway", &good, &[]));
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(
            "warning: stack.yml, service `web`, deploy.labels: label `traefik.enable`: labels under `traefik.` are not read: the label prefix is `gangway` (set --providers.swarm.labelPrefix=traefik to read them)"
        ),
        "{out}"
    );

    // Routing labels on the container, not the service: Traefik users'
    // most common Swarm mistake.
    let (code, out) = run(stack("traefik", &[], &good));
    assert_eq!(code, 0, "warnings only: {out}");
    assert_eq!(
        out,
        "warning: stack.yml, service `web`: label `traefik.enable`: the Swarm provider reads `deploy.labels`, and the Docker provider is off (no --providers.docker): these container `labels:` are ignored (move them under `deploy.labels`)\n\
         gangway check: 0 errors, 1 warning\n"
    );

    // JSON names the place as well.
    std::fs::write(
        dir.path().join("stack.yml"),
        stack("traefik", &good[..2], &[]),
    )
    .unwrap();
    let (_, out) = check(dir.path(), &["--compose", "stack.yml", "--format", "json"]);
    let json: serde_json::Value = serde_json::from_str(&out).expect("one JSON document");
    let f = &json["findings"][0];
    assert_eq!(f["source"], "stack.yml, service `web`, deploy.labels");
    assert_eq!(f["object"], "service `shop-web@swarm`");
    assert_eq!(f["origin"]["name"], "shop_web");
}

/// The file provider of a router in a compose file reads paths in its
/// container: they are followed through the service's bind mounts, and a
/// path no bind mount brings in is said to be unchecked, not missing.
#[test]
fn a_compose_routers_dynamic_files_are_found_through_its_bind_mounts() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("conf/dynamic")).expect("mkdir");
    std::fs::write(
        dir.path().join("conf/dynamic/routes.toml"),
        "[http.routers.web]\nrule = \"Host(`web.localhost`)\"\nservice = \"gone\"\n",
    )
    .expect("write");
    let project = |volumes: &str, path: &str| {
        format!(
            "services:\n  gangway:\n    image: gangway:local\n    network_mode: host\n{volumes}    command:\n      - --entryPoints.web.address=127.0.0.1:8000\n      - --providers.file.directory={path}\n"
        )
    };
    // Short form: the folder is read, and its mistake found at its line.
    std::fs::write(
        dir.path().join("docker-compose.yml"),
        project(
            "    volumes:\n      - ./conf:/etc/gangway:ro\n      - certs:/var/lib/gangway\n",
            "/etc/gangway/dynamic",
        ),
    )
    .expect("write");
    let (code, out) = check(dir.path(), &["--compose", "docker-compose.yml"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("conf/dynamic/routes.toml:3") && out.contains("`gone@file`"),
        "the mounted file is checked: {out}"
    );
    // Long form, a file mounted on its own.
    std::fs::write(
        dir.path().join("docker-compose.yml"),
        project(
            "    volumes:\n      - type: bind\n        source: ./conf/dynamic/routes.toml\n        target: /routes.toml\n",
            "/routes.toml",
        )
        .replace("providers.file.directory", "providers.file.filename"),
    )
    .expect("write");
    let (code, out) = check(dir.path(), &["--compose", "docker-compose.yml"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("conf/dynamic/routes.toml:3"), "{out}");
    // In the image (no bind mount): said, not reported as missing.
    std::fs::write(
        dir.path().join("docker-compose.yml"),
        project("", "/etc/gangway/dynamic"),
    )
    .expect("write");
    let (code, out) = check(dir.path(), &["--compose", "docker-compose.yml"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("`/etc/gangway/dynamic`") && out.contains("not checked"),
        "{out}"
    );
    assert!(!out.contains("No such file"), "{out}");
}

/// What a provider would refuse at start is an error of `check` too:
/// TLS with a unix socket, a TLS file that cannot be read, Redis Sentinel
/// (not supported), a certificate without its key.
#[test]
fn provider_options_refused_at_start_are_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cases: [(&[&str], &str); 4] = [
        (
            &[
                "--providers.docker",
                "--providers.docker.tls.insecureSkipVerify=true",
            ],
            "providers.docker.tls: TLS needs a tcp:// endpoint",
        ),
        (
            &[
                "--providers.swarm",
                "--providers.swarm.endpoint=tcp://127.0.0.1:2376",
                "--providers.swarm.tls.cert=client.pem",
            ],
            "providers.swarm.tls: give both cert and key",
        ),
        (
            &[
                "--providers.redis.endpoints=127.0.0.1:6379",
                "--providers.redis.sentinel.password=secret",
            ],
            "give sentinel.masterName",
        ),
        (
            &[
                "--providers.etcd.endpoints=127.0.0.1:2379",
                "--providers.etcd.tls.ca=missing-ca.pem",
            ],
            "providers.etcd.tls",
        ),
    ];
    for (args, expected) in cases {
        let (code, out) = check(dir.path(), args);
        assert_eq!(code, 1, "{args:?}: {out}");
        assert!(
            out.contains(expected),
            "{args:?}: expected `{expected}` in:\n{out}"
        );
    }
    // And the same options, well formed, pass.
    let (code, out) = check(
        dir.path(),
        &[
            "--providers.swarm",
            "--providers.swarm.endpoint=tcp://127.0.0.1:2376",
            "--providers.swarm.tls.insecureSkipVerify=true",
            "--providers.redis.endpoints=127.0.0.1:6379",
        ],
    );
    assert_eq!(code, 0, "{out}");
}

#[test]
fn shared_acme_storage_urls_and_key_files_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let resolver = |name: &str, storage: &str, key: Option<&str>| {
        let mut s = format!(
            "[certificatesResolvers.{name}.acme]\nstorage = \"{storage}\"\ncaServer = \"https://ca.test/dir\"\n"
        );
        if let Some(key) = key {
            s.push_str(&format!("storageEncryptionKeyFile = \"{key}\"\n"));
        }
        s
    };
    std::fs::write(
        dir.path().join("good.key"),
        "q83vEjRWeJCrze8SNFZ4kKvN7xI0VniQq83vEjRWeJA=\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("short.key"), "c2hvcnQ=\n").unwrap();
    // Sealed, in clear, and one that would write the same keys as another.
    std::fs::write(
        dir.path().join("gangway.toml"),
        [
            resolver("a", "redis://127.0.0.1:6379/0", Some("good.key")),
            resolver("b", "redis://127.0.0.1:6379/1", None),
            resolver("c", "redis://127.0.0.1/0", Some("good.key")),
            resolver("d", "etcd://127.0.0.1:2379/edge", Some("short.key")),
            resolver("e", "ftp://u:secret@host", None),
            resolver("f", "acme", None),
        ]
        .concat(),
    )
    .unwrap();
    let (code, out) = check(dir.path(), &["--configFile", "gangway.toml"]);
    assert_eq!(code, 1, "{out}");
    for expected in [
        "warning: static configuration: certificatesResolvers.b.acme: private keys are stored in clear in redis://127.0.0.1:6379/1",
        "error: static configuration: certificatesResolvers.c.acme.storage: resolver `a` already stores",
        "error: static configuration: certificatesResolvers.d.acme.storageEncryptionKeyFile `short.key`: must hold a 32-byte key",
        "error: static configuration: certificatesResolvers.e.acme.storage: `ftp://u:***@host`: the scheme must be",
    ] {
        assert!(out.contains(expected), "{expected}\nin:\n{out}");
    }
    assert!(!out.contains("secret"), "{out}");
    assert!(
        !out.contains("certificatesResolvers.a.") && !out.contains("certificatesResolvers.f."),
        "{out}"
    );
}

/// Traefik's own DNS-01 set-up with Cloudflare, as its documentation and
/// public compose files write it.
fn traefik_cloudflare(provider: &str, environment: &str) -> String {
    format!(
        "services:\n  traefik:\n    image: traefik:v3.7\n    command:\n      - --providers.docker=true\n      - --providers.docker.exposedbydefault=false\n      - --entrypoints.websecure.address=:443\n      - --certificatesresolvers.myresolver.acme.dnschallenge.provider={provider}\n      - --certificatesresolvers.myresolver.acme.dnschallenge.resolvers=1.1.1.1:53,1.0.0.1:53\n      - --certificatesresolvers.myresolver.acme.email=postmaster@example.com\n      - --certificatesresolvers.myresolver.acme.storage=/letsencrypt/acme.json\n    ports:\n      - \"443:443\"\n{environment}    volumes:\n      - ./letsencrypt:/letsencrypt\n      - /var/run/docker.sock:/var/run/docker.sock:ro\n  whoami:\n    image: traefik/whoami\n    labels:\n      - traefik.enable=true\n      - traefik.http.routers.whoami.rule=Host(`whoami.example.com`)\n      - traefik.http.routers.whoami.entrypoints=websecure\n      - traefik.http.routers.whoami.tls.certresolver=myresolver\n      - traefik.http.routers.whoami.tls.domains[0].main=example.com\n      - traefik.http.routers.whoami.tls.domains[0].sans=*.example.com\n      - traefik.http.services.whoami.loadbalancer.server.port=80\n"
    )
}

#[test]
fn a_traefik_compose_file_with_cloudflare_dns_01_is_accepted_and_a_missing_token_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("docker-compose.yml");
    let run = |text: String| {
        std::fs::write(&file, text).unwrap();
        check(dir.path(), &["--compose", "docker-compose.yml"])
    };
    // The token from the deploying shell, or as a Docker secret's file.
    for environment in [
        "    environment:\n      - CF_DNS_API_TOKEN=${CF_DNS_API_TOKEN}\n",
        "    environment:\n      - CF_DNS_API_TOKEN_FILE=/run/secrets/cf_dns_api_token\n",
        "    environment:\n      CF_API_EMAIL: me@example.com\n      CF_API_KEY: ${CF_API_KEY}\n",
    ] {
        let (code, out) = run(traefik_cloudflare("cloudflare", environment));
        assert_eq!(code, 0, "{environment}\n{out}");
        assert!(!out.contains("error:"), "{environment}\n{out}");
        assert!(!out.contains("dnsChallenge"), "{environment}\n{out}");
    }
    let (_, out) = run(traefik_cloudflare("cloudflare", ""));
    assert!(
        out.contains(
            "warning: docker-compose.yml, service `traefik`: certificatesResolvers.myresolver.acme.dnsChallenge: \
             provider `cloudflare` needs CF_DNS_API_TOKEN (with CF_ZONE_API_TOKEN if zones are read \
             with another token), or CF_API_EMAIL and CF_API_KEY"
        ),
        "{out}"
    );
    let half = "    environment:\n      - CF_API_EMAIL=me@example.com\n";
    let (_, out) = run(traefik_cloudflare("cloudflare", half));
    assert!(
        out.contains("provider `cloudflare` needs the environment variable CF_API_KEY"),
        "{out}"
    );
    let (code, out) = run(traefik_cloudflare("nosuchdns", ""));
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(
            "error: docker-compose.yml, service `traefik`: certificatesResolvers.myresolver.acme.dnsChallenge.provider: `nosuchdns` is not a DNS provider gangway has"
        ),
        "{out}"
    );
}

/// `api.insecure` with the internal entry point at its default (`:8080`,
/// every interface, as Traefik) is worth a warning that says how to keep
/// it to this host; kept to loopback, check is quiet about it.
#[test]
fn an_insecure_api_on_every_interface_is_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out) = check(dir.path(), &["--api.insecure"]);
    assert_eq!(code, 0, "a warning, not an error: {out}");
    assert!(
        out.contains("`api.insecure`")
            && out.contains("`:8080`, every interface")
            && out.contains("--entryPoints.gangway.address=127.0.0.1:8080"),
        "{out}"
    );
    for address in ["0.0.0.0:9000", "[::]:9000"] {
        let flag = format!("--entryPoints.gangway.address={address}");
        let (_, out) = check(dir.path(), &["--api.insecure", &flag]);
        assert!(out.contains("every interface"), "{address}: {out}");
    }
    let (code, out) = check(
        dir.path(),
        &[
            "--api.insecure",
            "--entryPoints.gangway.address=127.0.0.1:8080",
        ],
    );
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("every interface"), "{out}");
    // Without api.insecure nothing is served there to warn about.
    let (_, out) = check(dir.path(), &["--api", "--ping"]);
    assert!(!out.contains("every interface"), "{out}");
}
