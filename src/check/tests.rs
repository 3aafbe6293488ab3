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
        },
        Finding {
            severity: Severity::Warning,
            source: "static configuration".into(),
            object: Some("router `web@docker`".into()),
            label: None,
            message: "something".into(),
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

#[test]
fn compile_errors_point_at_their_label() {
    assert_eq!(
        label_suffix("rule `Host(`: rule error at column 6"),
        Some(".rule")
    );
    assert_eq!(
        label_suffix("middleware `auth@docker`: does not exist"),
        Some(".middlewares")
    );
    assert_eq!(label_suffix("something else"), None);
    assert_eq!(
        split_container("container `web-1`: no port: x"),
        (Some("web-1"), "no port: x")
    );
    assert_eq!(split_container("plain"), (None, "plain"));
}
