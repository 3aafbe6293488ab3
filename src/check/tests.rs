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
