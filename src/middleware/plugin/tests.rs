use super::*;
use serde::Deserialize;
use serde_json::json;

/// Runs `body` with a host whose state is kept in a map and whose clients
/// come from a pool of its own.
fn with_host<R>(body: impl FnOnce(&PluginHost<'_>) -> R) -> R {
    let transport = ClientSettings::default();
    let clients = crate::client::Clients::default();
    let kept = std::sync::Mutex::new(BTreeMap::<String, KeptState>::new());
    let client = |s: &ClientSettings, a: &Authority| clients.client(s, a);
    let keep = |key: &str, make: &mut dyn FnMut() -> KeptState| {
        let mut kept = kept.lock().unwrap();
        kept.entry(key.to_owned()).or_insert_with(make).clone()
    };
    let host = PluginHost {
        name: "demo@file",
        transport: &transport,
        client: &client,
        keep: &keep,
    };
    body(&host)
}

fn with_env<R>(body: impl FnOnce(&PluginEnv<'_>) -> R) -> R {
    with_host(|host| {
        body(&PluginEnv {
            named: Named {
                key: "demo",
                module: "github.com/example/demo",
            },
            host,
        })
    })
}

#[derive(Debug, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Demo {
    last_modified: bool,
    count: u32,
    types: Vec<String>,
    rewrites: Vec<Rewrite>,
}

#[derive(Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
struct Rewrite {
    regex: String,
    replacement: String,
}

#[test]
fn settings_read_in_any_case_with_text_values_and_indexed_lists() {
    let from_labels = json!({
        "LASTMODIFIED": "true",
        "count": "3",
        "types": "text/html, text/css",
        "rewrites": {"[1]": {"Regex": "b", "replacement": "B"}, "[0]": {"regex": "a"}},
    });
    let read: Demo = with_env(|env| env.read(&from_labels)).unwrap();
    assert_eq!(
        read,
        Demo {
            last_modified: true,
            count: 3,
            types: vec!["text/html".into(), "text/css".into()],
            rewrites: vec![
                Rewrite {
                    regex: "a".into(),
                    replacement: String::new()
                },
                Rewrite {
                    regex: "b".into(),
                    replacement: "B".into()
                },
            ],
        }
    );
}

#[test]
fn no_settings_read_as_the_defaults() {
    for none in [json!(null), json!(true), json!({}), json!("")] {
        let read: Demo = with_env(|env| env.read(&none)).unwrap();
        assert_eq!(read, Demo::default(), "{none}");
    }
}

#[test]
fn a_bad_setting_is_named_with_the_plugin() {
    let err = with_env(|env| env.read::<Demo>(&json!({"count": "many"}))).unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with("plugin `demo` (github.com/example/demo): count:"),
        "{text}"
    );
}

#[test]
fn module_paths_lose_their_version_and_case() {
    for (written, path) in [
        (
            "github.com/XciD/traefik-plugin-rewrite-headers",
            "github.com/xcid/traefik-plugin-rewrite-headers",
        ),
        (
            "github.com/sablierapp/sablier-traefik-plugin/v2",
            "github.com/sablierapp/sablier-traefik-plugin",
        ),
        (
            "github.com/packruler/rewrite-body@v1.2.0",
            "github.com/packruler/rewrite-body",
        ),
        (" github.com/a/b/ ", "github.com/a/b"),
        ("github.com/a/v", "github.com/a/v"),
    ] {
        assert_eq!(module_path(written), path, "{written}");
    }
}

#[test]
fn state_is_kept_by_key_and_type() {
    with_env(|env| {
        let a = env.state("cache", || 1_u32);
        let again = env.state("cache", || 2_u32);
        assert!(Arc::ptr_eq(&a, &again));
        let other: Arc<String> = env.state("cache", || "x".to_owned());
        assert_eq!(*other, "x");
    });
}

fn compile_with(model: Value, declared: &[(&str, &str)]) -> Result<(), MiddlewareError> {
    let model: Model = serde_json::from_value(model).unwrap();
    let declared = declared
        .iter()
        .map(|(k, m)| ((*k).to_owned(), (*m).to_owned()))
        .collect();
    with_host(|host| compile(&model, &declared, host).map(|_| ()))
}

#[test]
fn an_undeclared_key_is_named() {
    let err = compile_with(json!({"bouncer": {}}), &[]).unwrap_err();
    assert_eq!(
        err,
        MiddlewareError::Plugin(PluginProblem::NotDeclared {
            key: "bouncer".into()
        })
    );
    assert!(
        err.to_string()
            .contains("experimental.plugins.bouncer.moduleName")
    );
}

#[test]
fn a_plugin_middleware_names_one_plugin() {
    let err = compile_with(json!({"a": {}, "b": {}}), &[("a", "x"), ("b", "y")]).unwrap_err();
    assert!(
        matches!(&err, MiddlewareError::Plugin(PluginProblem::Keys { keys }) if keys.len() == 2),
        "{err:?}"
    );
    assert!(compile_with(json!({}), &[]).is_err());
}

#[test]
fn an_unknown_module_is_named_with_what_gangway_has_instead() {
    let err = compile_with(
        json!({"redir": {"x": 1}}),
        &[("redir", "github.com/someone/traefik-plugin-redirect")],
    )
    .unwrap_err();
    let MiddlewareError::Plugin(PluginProblem::NotBuiltIn {
        key,
        module,
        instead,
    }) = &err
    else {
        panic!("{err:?}");
    };
    assert_eq!(key, "redir");
    assert_eq!(module, "github.com/someone/traefik-plugin-redirect");
    assert!(instead.as_deref().unwrap().contains("redirectRegex"));
    let none = compile_with(json!({"x": {}}), &[("x", "github.com/someone/odd")]).unwrap_err();
    assert!(!none.to_string().contains("instead"), "{none}");
}

#[test]
fn the_key_matches_its_declaration_in_any_case() {
    let err = compile_with(
        json!({"mybouncer": {}}),
        &[("myBouncer", "github.com/someone/odd")],
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            MiddlewareError::Plugin(PluginProblem::NotBuiltIn { .. })
        ),
        "{err:?}"
    );
}

#[test]
fn sablier_settings_become_sessions_with_the_servers_defaults() {
    let declared: BTreeMap<String, String> = [(
        "sablier".to_owned(),
        "github.com/sablierapp/sablier-traefik-plugin@v1.1.0".to_owned(),
    )]
    .into();
    let model =
        |settings: serde_json::Value| -> Model { [("sablier".to_owned(), settings)].into() };
    let dynamic = sablier_sessions(
        &model(json!({"group": "demo", "sessionDuration": "1m", "dynamic": {"theme": "ghost"}})),
        &declared,
    );
    assert_eq!(
        dynamic,
        Some(sablier::Sessions {
            names: Vec::new(),
            group: Some("demo".into()),
            session: std::time::Duration::from_secs(60),
            blocking: None,
        })
    );
    // Labels give every value as text and `names` as one comma list.
    let blocking = sablier_sessions(
        &model(json!({"names": "whoami, db", "blocking": {"timeout": "15s"}})),
        &declared,
    )
    .unwrap();
    assert_eq!(blocking.names, ["whoami", "db"]);
    assert_eq!(blocking.session, std::time::Duration::from_secs(300));
    assert_eq!(blocking.blocking, Some(std::time::Duration::from_secs(15)));
    assert_eq!(
        sablier_sessions(&model(json!({"names": "a", "blocking": {}})), &declared)
            .unwrap()
            .blocking,
        Some(std::time::Duration::from_secs(60))
    );
}

#[test]
fn sablier_settings_that_cannot_work_name_their_setting() {
    let module = "github.com/acouvreur/sablier";
    for (settings, setting) in [
        (json!({"dynamic": {}}), "names"),
        (json!({"group": "g"}), "dynamic"),
        (
            json!({"group": "g", "dynamic": {}, "blocking": {}}),
            "blocking",
        ),
        (
            json!({"group": "g", "dynamic": {}, "sessionDuration": "soon"}),
            "sessionDuration",
        ),
    ] {
        let err = compile_with(json!({ "s": settings }), &[("s", module)]).unwrap_err();
        assert!(
            matches!(&err, MiddlewareError::Plugin(PluginProblem::Setting { setting: s, .. }) if s == setting),
            "{settings}: {err:?}"
        );
    }
    assert!(
        compile_with(
            json!({"s": {"group": "g", "dynamic": {}}}),
            &[("s", module)]
        )
        .is_ok()
    );
}
