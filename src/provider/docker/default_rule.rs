//! The `defaultRule` template of the Docker and Swarm providers, on the
//! project's one Go-template engine (`crate::template`): the data a
//! container offers it is Traefik's, `.Name`, `.ContainerName`,
//! `.Project`, `.Service`, `.Domain` and `.Labels`. Parsed once at start and
//! tried on an empty container, so a misspelt field or function, or a
//! function given the wrong number of arguments, stops gangway with a
//! message instead of failing per container.

use crate::template::{Template, TemplateError, Value};
use std::collections::BTreeMap;

/// The fields a container offers the template, as Traefik names them.
const FIELDS: &[&str] = &[
    "Name",
    "ContainerName",
    "Project",
    "Service",
    "Domain",
    "Labels",
];

/// A `defaultRule` that does not parse, or fails on an empty container.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("defaultRule template `{template}`: {error}")]
pub struct DefaultRuleError {
    /// The template as given.
    pub template: String,
    /// What is wrong, with its line.
    pub error: TemplateError,
}

/// What the template reads of one container.
#[derive(Clone, Debug, Default)]
pub struct Model<'a> {
    /// The service name: compose `service_project`, else the container
    /// name, normalized (Traefik's `.Name`).
    pub name: &'a str,
    /// The container name.
    pub container_name: &'a str,
    /// The compose project, or empty.
    pub project: &'a str,
    /// The compose service, or empty.
    pub service: &'a str,
    /// `providers.docker.domain`.
    pub domain: &'a str,
    /// The container's labels.
    pub labels: Option<&'a BTreeMap<String, String>>,
}

impl Model<'_> {
    /// The template's data: a map with Traefik's field names.
    fn value(&self) -> Value {
        let text = |s: &str| Value::Str(s.to_owned());
        let labels = self
            .labels
            .map(|l| l.iter().map(|(k, v)| (k.clone(), text(v))).collect())
            .unwrap_or_default();
        Value::Map(BTreeMap::from([
            ("Name".to_owned(), text(self.name)),
            ("ContainerName".to_owned(), text(self.container_name)),
            ("Project".to_owned(), text(self.project)),
            ("Service".to_owned(), text(self.service)),
            ("Domain".to_owned(), text(self.domain)),
            ("Labels".to_owned(), Value::Map(labels)),
        ]))
    }
}

/// A parsed `defaultRule`.
#[derive(Clone, Debug, PartialEq)]
pub struct DefaultRule {
    template: Template,
}

impl DefaultRule {
    /// Parses `text` and tries it on an empty container.
    pub fn parse(text: &str) -> Result<DefaultRule, DefaultRuleError> {
        let err = |error| DefaultRuleError {
            template: text.to_owned(),
            error,
        };
        let template = Template::parse(text).map_err(err)?;
        template.check_fields(FIELDS).map_err(err)?;
        let rule = DefaultRule { template };
        rule.render(&Model::default()).map_err(err)?;
        Ok(rule)
    }

    /// Fills the template in for one container. Nothing outside the
    /// container is read: `env` finds no variable, as a label's rule must
    /// not depend on the router's own environment. A label the container
    /// does not have reads as empty text, as Go reads a `map[string]string`.
    pub fn render(&self, model: &Model<'_>) -> Result<String, TemplateError> {
        let empty = Value::Str(String::new());
        self.template.render_with(&model.value(), &|_| None, &empty)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model<'a>(labels: &'a BTreeMap<String, String>) -> Model<'a> {
        Model {
            name: "web-shop",
            container_name: "shop_web_1",
            project: "shop",
            service: "web",
            domain: "example.com",
            labels: Some(labels),
        }
    }

    #[test]
    fn renders_traefik_default_and_compose_fields() {
        let labels: BTreeMap<String, String> = [("team".to_owned(), "blue".to_owned())].into();
        let m = model(&labels);
        let cases = [
            ("Host(`{{ normalize .Name }}`)", "Host(`web-shop`)"),
            (
                "Host(`{{ .Service }}.{{ .Domain }}`)",
                "Host(`web.example.com`)",
            ),
            (
                "Host(`{{ .ContainerName | normalize }}.local`)",
                "Host(`shop-web-1.local`)",
            ),
            (
                "Host(`{{ index .Labels \"team\" }}.{{.Project}}`)",
                "Host(`blue.shop`)",
            ),
            (
                "Host(`{{ index .Labels \"missing\" }}{{ .Labels.missing }}x`)",
                "Host(`x`)",
            ),
            ("Host(`{{ .Service | upper | lower }}`)", "Host(`web`)"),
            ("Host(`{{ trimPrefix \"web\" .Name }}`)", "Host(`-shop`)"),
            (
                "Host(`{{ .Name | replace \"-\" \".\" }}`)",
                "Host(`web.shop`)",
            ),
            (
                "Host(`{{ default \"none\" .Domain }}`)",
                "Host(`example.com`)",
            ),
            ("PathPrefix(`/`)", "PathPrefix(`/`)"),
            (
                "Host(`{{ lower (trimPrefix `/` .ContainerName )}}.x`)",
                "Host(`shop_web_1.x`)",
            ),
            (
                "Host(`{{ (index .Labels \"team\") | upper }}`)",
                "Host(`BLUE`)",
            ),
            (
                "Host(`{{ default (normalize .ContainerName) (index .Labels \"host\") }}`)",
                "Host(`shop-web-1`)",
            ),
            (
                "Host(`{{ replace \"_\" \"-\" (trimSuffix \"_1\" (lower .ContainerName)) }}`)",
                "Host(`shop-web`)",
            ),
            (
                "Host(`{{ trimAll \"-\" .Name | title }}`)",
                "Host(`Web-Shop`)",
            ),
            ("Host(`{{ ucfirst .Service }}`)", "Host(`Web`)"),
            (
                "Host(`{{ if .Project }}{{ .Project }}.{{ end }}{{ .Domain }}`)",
                "Host(`shop.example.com`)",
            ),
        ];
        for (t, want) in cases {
            let rule = DefaultRule::parse(t).unwrap_or_else(|e| panic!("{t}: {e}"));
            assert_eq!(rule.render(&m).unwrap(), want, "{t}");
        }
    }

    #[test]
    fn mistakes_are_reported_at_parse() {
        for (t, needle) in [
            ("Host(`{{ .Nmae }}`)", "unknown field `.Nmae`"),
            (
                "Host(`{{ normalise .Name }}`)",
                "function `normalise` is not defined",
            ),
            ("Host(`{{ .Name `)", "line 1"),
            ("Host(`{{ lower }}`)", "lower"),
            (
                "Host(`{{ lower (nope .Name) }}`)",
                "function `nope` is not defined",
            ),
            (
                "Host(`{{ range .Labels }}{{ $.Nope }}{{ end }}`)",
                "unknown field `.Nope`",
            ),
        ] {
            let e = DefaultRule::parse(t).expect_err(t);
            let shown = e.to_string();
            assert!(
                shown.starts_with(&format!("defaultRule template `{t}`: ")),
                "{shown}"
            );
            assert!(shown.contains(needle), "{t}: {shown}");
        }
    }

    #[test]
    fn a_field_of_what_range_or_with_gives_is_not_checked_against_the_container() {
        let t = "Host(`{{ range $k, $v := .Labels }}{{ end }}{{ with .Service }}{{ . }}{{ end }}`)";
        assert!(DefaultRule::parse(t).is_ok());
    }
}
