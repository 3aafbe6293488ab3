//! Go templates in file-provider files, through the real binary: the
//! environment fills a router's host, a `range` makes one router per
//! name, and a template mistake keeps the last good file with its line
//! shown by the API.

use crate::support;

use support::kv::{WITHIN, answer, provider_state};
use support::{Backend, Gangway, eventually};

fn dynamic(backend: &str) -> String {
    format!(
        r#"http:
  routers:
    api:
      rule: Host(`api.{{{{ env "APP_DOMAIN" | lower }}}}`)
      service: api@internal
{{{{- range $name := split (env "APP_NAMES") "," }}}}
    {{{{ $name }}}}:
      rule: Host(`{{{{ $name }}}}.{{{{ env "APP_DOMAIN" | lower }}}}`)
      service: app
{{{{- end }}}}
  services:
    app:
      loadBalancer:
        servers:
          - url: {backend}
"#
    )
}

#[tokio::test]
async fn templates_fill_routers_from_the_environment_and_mistakes_keep_the_last_good_file() {
    let a = Backend::echo("a").await;
    let gw = Gangway::with_yaml_env(
        &dynamic(&a.url()),
        &["--api=true"],
        &[("APP_DOMAIN", "Test"), ("APP_NAMES", "one,two")],
    )
    .await;
    for host in ["one.test", "two.test"] {
        eventually(WITHIN, host, || async {
            answer(&gw, host).await.is_some_and(|(who, _)| who == "a")
        })
        .await;
    }
    assert_eq!(answer(&gw, "three.test").await, None);

    // A misspelt function: the file keeps its last good version, and the
    // API names the file and the line of the action.
    gw.rewrite(&dynamic(&a.url()).replace("split (env", "splt (env"));
    eventually(WITHIN, "the template error is shown", || async {
        provider_state_of(&gw)
            .await
            .is_some_and(|e| e.contains("dynamic.yml:6: template: function `splt` is not defined"))
    })
    .await;
    assert!(
        answer(&gw, "one.test").await.is_some(),
        "the last good file stays"
    );
}

async fn provider_state_of(gw: &Gangway) -> Option<String> {
    provider_state(gw, "file").await["lastError"]
        .as_str()
        .map(str::to_owned)
}
