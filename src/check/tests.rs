use super::*;

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn own_flags_are_taken_and_the_rest_is_static_configuration() {
    let o = parse_args(&args(&[
        "--compose",
        "a.yml",
        "b.yml",
        "--format=json",
        "--providers.docker.labelPrefix=traefik",
        "--docker",
    ]))
    .unwrap();
    assert_eq!(o.compose, [PathBuf::from("a.yml"), PathBuf::from("b.yml")]);
    assert!(o.json && o.docker && !o.help);
    assert_eq!(o.static_args, ["--providers.docker.labelPrefix=traefik"]);
    let o = parse_args(&args(&["--format", "text", "--configFile=g.toml"])).unwrap();
    assert!(!o.json);
    assert_eq!(o.static_args, ["--configFile=g.toml"]);
    assert!(parse_args(&args(&["--format", "yaml"])).is_err());
    assert!(parse_args(&args(&["--compose"])).is_err());
}

#[test]
fn text_and_json_say_the_same() {
    let findings = vec![
        Finding {
            severity: Severity::Error,
            source: "docker-compose.yml, service `web`".into(),
            object: None,
            label: Some("gangway.http.routers.web.rul".into()),
            message: "unknown option `rul` (did you mean `rule`?)".into(),
            origin: None,
        },
        Finding {
            severity: Severity::Warning,
            source: "static configuration".into(),
            object: Some("router `web@docker`".into()),
            label: None,
            message: "something".into(),
            origin: None,
        },
    ];
    assert_eq!(
        render_text(&findings),
        "error: docker-compose.yml, service `web`: label `gangway.http.routers.web.rul`: unknown option `rul` (did you mean `rule`?)\n\
         warning: static configuration: router `web@docker`: something\n\
         gangway check: 1 error, 1 warning\n"
    );
    let json: serde_json::Value = serde_json::from_str(&render_json(&findings)).unwrap();
    assert_eq!(json["errors"], 1);
    assert_eq!(json["warnings"], 1);
    assert_eq!(json["findings"][0]["label"], "gangway.http.routers.web.rul");
    assert_eq!(json["findings"][1]["object"], "router `web@docker`");
    assert_eq!(exit_status(&findings), 1);
    assert_eq!(exit_status(&findings[1..]), 0);
    assert_eq!(render_text(&[]), "gangway check: no problems found\n");
}

fn settings(prefix: &str) -> Settings {
    Settings::new(&crate::config::static_config::DockerProvider {
        label_prefix: prefix.into(),
        ..Default::default()
    })
    .unwrap()
}

/// What `check` says about one container's labels alone.
fn label_findings(prefix: &str, labels: &[(&str, &str)]) -> Vec<(Severity, String, String)> {
    let view = ContainerView::running("id-1", "web-1", labels);
    let settings = settings(prefix);
    let parsed = parse_labels(prefix, &view.labels);
    let mut out: Vec<_> = parsed
        .errors
        .iter()
        .map(|e| {
            (
                Severity::Error,
                e.label().to_owned(),
                e.problem().to_string(),
            )
        })
        .collect();
    out.extend(
        prefix_findings(&view, &settings, "svc", &parsed)
            .into_iter()
            .map(|f| (f.severity, f.label.unwrap_or_default(), f.message)),
    );
    out
}

#[test]
fn a_stray_traefik_label_beside_gangway_labels_is_named_with_the_label_to_write() {
    let found = label_findings(
        "gangway",
        &[
            ("gangway.enable", "true"),
            ("gangway.http.routers.x.rule", "Host(`x`)"),
            ("traefik.http.routers.x.middlewares", "auth"),
        ],
    );
    assert_eq!(
        found,
        [(
            Severity::Warning,
            "traefik.http.routers.x.middlewares".to_owned(),
            "labels under `traefik.` are not read, the label prefix is `gangway` (did you mean `gangway.http.routers.x.middlewares`?)".to_owned()
        )]
    );
}

#[test]
fn a_stray_label_with_a_typo_gets_the_label_it_meant_under_either_prefix() {
    // The case: a gangway service with one misspelt Traefik label.
    let found = label_findings(
        "gangway",
        &[
            ("gangway.enable", "true"),
            ("gangway.http.routers.x.rule", "Host(`x`)"),
            ("traefik.http.routers.x.rulee", "Host(`x`)"),
        ],
    );
    assert_eq!(
        found,
        [(
            Severity::Warning,
            "traefik.http.routers.x.rulee".to_owned(),
            "labels under `traefik.` are not read, the label prefix is `gangway`; and `rulee` is not an option (did you mean `gangway.http.routers.x.rule`?)".to_owned()
        )]
    );
    // The reverse: a Traefik-labelled service read with `traefik.`, and a
    // stray gangway label.
    let found = label_findings(
        "traefik",
        &[
            ("traefik.enable", "true"),
            ("traefik.http.routers.x.rule", "Host(`x`)"),
            ("gangway.http.services.x.loadbalancer.server.prot", "80"),
        ],
    );
    assert_eq!(
        found,
        [(
            Severity::Warning,
            "gangway.http.services.x.loadbalancer.server.prot".to_owned(),
            "labels under `gangway.` are not read, the label prefix is `traefik`; and `prot` is not an option (did you mean `traefik.http.services.x.loadbalancer.server.port`?)".to_owned()
        )]
    );
    // A typo under the prefix read: an error, with the option it meant.
    let found = label_findings(
        "traefik",
        &[
            ("traefik.enable", "true"),
            ("traefik.http.routers.x.rulee", "Host(`x`)"),
        ],
    );
    assert_eq!(
        found,
        [(
            Severity::Error,
            "traefik.http.routers.x.rulee".to_owned(),
            "unknown option `rulee` (did you mean `rule`?)".to_owned()
        )]
    );
}

#[test]
fn labels_only_under_the_other_prefix_warn_once_and_name_their_typos() {
    let found = label_findings(
        "gangway",
        &[
            ("traefik.enable", "true"),
            ("traefik.http.routers.x.rule", "Host(`x`)"),
            ("traefik.http.routers.x.middlewaress", "auth"),
        ],
    );
    assert_eq!(
        found,
        [
            (
                Severity::Warning,
                "traefik.enable".to_owned(),
                "labels under `traefik.` are not read: the label prefix is `gangway` (set --providers.docker.labelPrefix=traefik to read them)".to_owned()
            ),
            (
                Severity::Warning,
                "traefik.http.routers.x.middlewaress".to_owned(),
                "unknown option `middlewaress` (did you mean `middlewares`?)".to_owned()
            ),
        ]
    );
}

#[test]
fn a_label_is_rewritten_under_another_prefix_and_option() {
    let (from, to) = ("RULEE".to_owned(), "rule".to_owned());
    assert_eq!(
        rewrite(
            "traefik.http.routers.rulee.RULEE",
            "gangway",
            Some((&from, &to))
        ),
        "gangway.http.routers.rulee.rule",
        "the last segment that is the option"
    );
    assert_eq!(
        rewrite("Traefik.http.routers.x.rule", "gangway", None),
        "gangway.http.routers.x.rule"
    );
}

#[test]
fn a_problem_that_only_repeats_a_dropped_object_is_recognised_by_its_kind() {
    let dropped: BTreeSet<ObjectRef> = [ObjectRef::new(ObjectKind::Service, "gone@docker")].into();
    let refers = |what, name: &str, problem| Problem::InReference {
        what,
        name: name.to_owned(),
        problem: Box::new(problem),
    };
    assert!(refers_to_dropped(
        &refers(Reference::Service, "gone@docker", Problem::NotFound),
        &dropped
    ));
    assert!(!refers_to_dropped(
        &refers(Reference::Middleware, "gone@docker", Problem::NotFound),
        &dropped
    ));
    assert!(!refers_to_dropped(
        &refers(Reference::Service, "other@docker", Problem::NotFound),
        &dropped
    ));
    assert!(!refers_to_dropped(&Problem::NoService, &dropped));
}

/// `gangway check --compose stack.yml ARGS` over a stack file holding the
/// router's service (gangway with `command`) and `services` (YAML under
/// `services:`); see [`check_file`].
fn check_stack(command: &str, services: &str, extra: &[&str]) -> Vec<Finding> {
    check_file(
        &format!(
            "  gangway:\n    image: gangway:local\n    command: {command}\n    networks: [hostnet]\n{services}"
        ),
        extra,
    )
}

/// `gangway check --compose stack.yml ARGS` over a stack file of project
/// `shop` with `services` and a `hostnet` network (the host's); the
/// findings, with the file's path taken out of their sources.
fn check_file(services: &str, extra: &[&str]) -> Vec<Finding> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("stack.yml");
    std::fs::write(
        &file,
        format!(
            "name: shop\nservices:\n{services}networks:\n  hostnet:\n    external: true\n    name: host\n"
        ),
    )
    .unwrap();
    let options = Options {
        compose: vec![file.clone()],
        static_args: extra.iter().map(|s| (*s).to_owned()).collect(),
        ..Options::default()
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let prefix = format!("{}, ", file.display());
    runtime
        .block_on(check(&options, &[], dir.path()))
        .into_iter()
        .map(|f| Finding {
            source: f.source.replacen(&prefix, "", 1),
            ..f
        })
        .collect()
}

/// A service routed by `deploy.labels` (on the host network), with its port.
const WEB: &str = "  web:\n    image: web\n    networks: [hostnet]\n    deploy:\n      labels:\n        gangway.enable: \"true\"\n        gangway.http.routers.web.rule: Host(`web.localhost`)\n        gangway.http.services.web.loadbalancer.server.port: \"8080\"\n";

/// A finding as (severity, source, object, label, message).
type Summary<'a> = (Severity, &'a str, Option<&'a str>, Option<&'a str>, &'a str);

/// Findings in a form to compare with a table.
fn summary(findings: &[Finding]) -> Vec<Summary<'_>> {
    findings
        .iter()
        .map(|f| {
            (
                f.severity,
                f.source.as_str(),
                f.object.as_deref(),
                f.label.as_deref(),
                f.message.as_str(),
            )
        })
        .collect()
}

#[test]
fn a_good_stack_under_the_swarm_provider_has_nothing_to_report() {
    let found = check_stack("--providers.swarm", WEB, &[]);
    assert_eq!(summary(&found), []);
}

#[test]
fn a_stack_service_without_a_port_label_is_an_error_at_its_deploy_labels() {
    let api = "  api:\n    image: api\n    networks: [hostnet]\n    deploy:\n      labels:\n        - gangway.enable=true\n        - gangway.http.routers.api.rule=Host(`api.localhost`)\n";
    let found = check_stack("--providers.swarm", &format!("{WEB}{api}"), &[]);
    assert_eq!(
        summary(&found),
        [(
            Severity::Error,
            "service `api`, deploy.labels",
            Some("service `shop-api@swarm`"),
            None,
            "no port: a Swarm service's port must be given by label; set `gangway.http.services.shop-api.loadbalancer.server.port`"
        )]
    );
    // The place is typed too: the Swarm service, as the API names it.
    assert_eq!(
        found[0].origin,
        Some(Origin::Container {
            id: "shop_api".into(),
            name: "shop_api".into(),
            label: None,
        })
    );
}

#[test]
fn swarm_label_grammar_and_options_are_the_swarm_providers() {
    // `swarm.*` labels are read, and the provider's own options apply:
    // its prefix and network (the stack's prefix left out).
    let svc = "  api:\n    image: api\n    networks: [front, back]\n    deploy:\n      labels:\n        traefik.enable: \"true\"\n        traefik.http.services.api.loadbalancer.server.port: \"80\"\n        traefik.swarm.lbswarm: \"true\"\n  typo:\n    image: api\n    networks: [front, back]\n    deploy:\n      labels:\n        traefik.enable: \"true\"\n        traefik.http.services.typo.loadbalancer.server.port: \"80\"\n        traefik.swarm.netwrok: front\n  lost:\n    image: api\n    networks: [front]\n    deploy:\n      labels:\n        traefik.enable: \"true\"\n        traefik.http.services.lost.loadbalancer.server.port: \"80\"\n        traefik.swarm.network: nowhere\n";
    let found = check_stack(
        "--providers.swarm --providers.swarm.labelPrefix=traefik",
        svc,
        &["--providers.swarm.network=back"],
    );
    assert_eq!(
        summary(&found),
        [
            (
                Severity::Error,
                "service `lost`, deploy.labels",
                Some("service `lost@swarm`"),
                None,
                "network `nowhere` not found on the container (it is on: shop_front)"
            ),
            (
                Severity::Error,
                "service `typo`, deploy.labels",
                None,
                Some("traefik.swarm.netwrok"),
                "unknown option `netwrok` (did you mean `network`?)"
            ),
        ]
    );
}

#[test]
fn swarm_constraints_and_the_stack_namespace_decide_which_services_are_checked() {
    let broken = "  api:\n    image: api\n    deploy:\n      labels:\n        gangway.enable: \"true\"\n        gangway.http.routers.api.rul: Host(`api.localhost`)\n        gangway.http.services.api.loadbalancer.server.port: \"80\"\n";
    let constraint = |stack: &str| {
        format!("--providers.swarm.constraints=Label(`com.docker.stack.namespace`,`{stack}`)")
    };
    let other = check_stack("--providers.swarm", broken, &[&constraint("other")]);
    assert_eq!(summary(&other), [], "another stack's services are not ours");
    let ours = check_stack("--providers.swarm", broken, &[&constraint("shop")]);
    assert_eq!(
        ours.iter().map(|f| f.label.as_deref()).collect::<Vec<_>>(),
        [Some("gangway.http.routers.api.rul")]
    );
}

#[test]
fn labels_where_no_enabled_provider_reads_them_are_warned_about() {
    let both = "  app:\n    image: app\n    network_mode: host\n    labels:\n      gangway.enable: \"true\"\n      gangway.http.routers.app.rule: Host(`app.localhost`)\n      gangway.http.services.app.loadbalancer.server.port: \"9000\"\n    deploy:\n      labels:\n        gangway.enable: \"true\"\n        gangway.http.routers.svc.rule: Host(`svc.localhost`)\n        gangway.http.services.svc.loadbalancer.server.port: \"9001\"\n";
    // Swarm only: the container labels are ignored.
    let found = check_stack("--providers.swarm", both, &[]);
    assert_eq!(
        summary(&found),
        [(
            Severity::Warning,
            "service `app`",
            None,
            Some("gangway.enable"),
            "the Swarm provider reads `deploy.labels`, and the Docker provider is off (no --providers.docker): these container `labels:` are ignored (move them under `deploy.labels`)"
        )]
    );
    // Docker only: `deploy.labels` are.
    let found = check_stack("--providers.docker", both, &[]);
    assert_eq!(
        summary(&found),
        [(
            Severity::Warning,
            "service `app`, deploy.labels",
            None,
            Some("gangway.enable"),
            "`deploy.labels` are read by the Swarm provider only, and it is off (no --providers.swarm): these `gangway.` labels are ignored (the Docker provider reads the service's `labels:`)"
        )]
    );
    // Both: each place is read by its provider.
    let found = check_stack("--providers.docker --providers.swarm", both, &[]);
    assert_eq!(summary(&found), []);
}

#[test]
fn with_both_providers_each_place_is_checked_as_its_provider_reads_it() {
    let app = "  app:\n    image: app\n    network_mode: host\n    labels:\n      gangway.enable: \"true\"\n      gangway.http.routers.app.rule: Host(`app.localhost`)\n      gangway.http.routers.app.middlewares: gone\n      gangway.http.services.app.loadbalancer.server.port: \"9000\"\n    deploy:\n      labels:\n        gangway.enable: \"true\"\n        gangway.http.routers.svc.rule: Host(`svc.localhost`)\n        gangway.http.routers.svc.middlewares: gone\n        gangway.http.services.svc.loadbalancer.server.port: \"9001\"\n";
    let found = check_stack("--providers.docker --providers.swarm", app, &[]);
    let places: Vec<_> = summary(&found)
        .into_iter()
        .map(|(severity, source, object, label, _)| (severity, source, object, label))
        .collect();
    assert_eq!(
        places,
        [
            (
                Severity::Error,
                "service `app`",
                Some("router `app@docker`"),
                Some("gangway.http.routers.app.middlewares")
            ),
            (
                Severity::Error,
                "service `app`, deploy.labels",
                Some("router `svc@swarm`"),
                Some("gangway.http.routers.svc.middlewares")
            ),
        ],
        "{found:#?}"
    );
}

#[test]
fn a_traefik_router_on_swarm_alone_reads_traefik_labels_with_the_swarm_provider_only() {
    let services = "  traefik:\n    image: traefik:v3.3\n    command: --providers.swarm.endpoint=unix:///var/run/docker.sock\n  web:\n    image: web\n    networks: [hostnet]\n    labels:\n      traefik.enable: \"true\"\n    deploy:\n      labels:\n        traefik.enable: \"true\"\n        traefik.http.routers.web.rule: Host(`web.localhost`)\n        traefik.http.services.web.loadbalancer.server.port: \"8080\"\n";
    let found = check_file(services, &[]);
    // The Docker provider stays off: the container label is named as
    // ignored, and the deploy.labels are read under `traefik.`.
    assert_eq!(
        found
            .iter()
            .map(|f| (f.severity, f.label.as_deref()))
            .collect::<Vec<_>>(),
        [(Severity::Warning, Some("traefik.enable"))],
        "{found:#?}"
    );
    assert!(found[0].message.contains("container `labels:` are ignored"));
}

#[test]
fn the_not_routed_warning_names_the_swarm_option() {
    let svc = "  api:\n    image: api\n    networks: [hostnet]\n    deploy:\n      labels:\n        gangway.http.routers.api.rule: Host(`api.localhost`)\n        gangway.http.services.api.loadbalancer.server.port: \"80\"\n";
    let found = check_stack(
        "--providers.swarm --providers.swarm.exposedByDefault=false",
        svc,
        &[],
    );
    assert_eq!(
        summary(&found),
        [(
            Severity::Warning,
            "service `api`, deploy.labels",
            None,
            None,
            "the service has `gangway.` labels but no `gangway.enable=true`, and providers.swarm.exposedByDefault is false: it is not routed"
        )]
    );
    // Not given: it is routed for its labels, and that is said once.
    let found = check_stack("--providers.swarm", svc, &[]);
    assert_eq!(
        summary(&found),
        [(
            Severity::Note,
            "static configuration",
            None,
            None,
            "providers.swarm.exposedByDefault is not given: services with `gangway.` labels are routed without `gangway.enable=true`, as in Traefik, and services with none are not (set it to true to route those too, to false to route only `gangway.enable=true`)"
        )]
    );
    // With exposedByDefault every service is routed, the router's own
    // too, which gives no port.
    let found = check_stack(
        "--providers.swarm --providers.swarm.exposedByDefault=true",
        svc,
        &[],
    );
    assert_eq!(
        summary(&found)
            .into_iter()
            .map(|(severity, source, object, ..)| (severity, source, object))
            .collect::<Vec<_>>(),
        [(
            Severity::Error,
            "service `gangway`, deploy.labels",
            Some("service `shop-gangway@swarm`")
        )]
    );
}

#[test]
fn a_traefik_router_gets_the_traefik_prefix_for_the_providers_it_turns_on() {
    let prefixes =
        |command: &[&str], extra: &[&str]| traefik_prefixes(&args(command), &args(extra));
    let docker = "--providers.docker.labelPrefix=traefik";
    let swarm = "--providers.swarm.labelPrefix=traefik";
    assert_eq!(prefixes(&[], &[]), [docker], "a compose file is for Docker");
    assert_eq!(prefixes(&["--providers.docker=true"], &[]), [docker]);
    assert_eq!(prefixes(&["--Providers.Swarm"], &[]), [swarm]);
    assert_eq!(
        prefixes(&["--providers.swarm.network=net"], &["--providers.docker"]),
        [docker, swarm],
        "check's own flags count too"
    );
}
