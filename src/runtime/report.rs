//! What compile found out about each object: status and errors, for logs,
//! the API and the dashboard.

use crate::config::provenance::{ContainerRecord, ObjectDetail, ProviderDetail, Source};
use serde::Serialize;
use std::collections::BTreeMap;

/// An object's status, as Traefik's API spells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Working.
    #[default]
    Enabled,
    /// Working, with something the user should look at.
    Warning,
    /// Not in use because of an error.
    Disabled,
}

/// Status and errors of one router, service or middleware.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ObjectReport {
    /// Enabled, warning or disabled.
    pub status: Status,
    /// What is wrong, one sentence each.
    #[serde(rename = "error", skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    /// For routers: the entry points it is attached to. For services and
    /// middlewares: the routers that use it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub using: Vec<String>,
    /// The containers and labels behind the object, when its provider knows.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub provenance: Vec<Source>,
}

impl ObjectReport {
    /// Marks the object disabled because of `error`.
    pub fn disable(&mut self, error: impl Into<String>) {
        self.status = Status::Disabled;
        self.errors.push(error.into());
    }

    /// Records a warning without disabling the object.
    pub fn warn(&mut self, warning: impl Into<String>) {
        if self.status == Status::Enabled {
            self.status = Status::Warning;
        }
        self.errors.push(warning.into());
    }
}

/// One provider's state as the aggregator last saw it.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderReport {
    /// The last error the provider reported, if its newest attempt failed;
    /// its last good configuration stays in use meanwhile.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Seconds since the Unix epoch of the last configuration accepted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_sync: Option<u64>,
    /// Whether the provider is connected to its source (Docker only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connected: Option<bool>,
    /// Every container seen, routed or not, and why (Docker only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub containers: Vec<ContainerRecord>,
}

/// The status of every object of one runtime.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    /// Routers by qualified name.
    pub routers: BTreeMap<String, ObjectReport>,
    /// Services by qualified name.
    pub services: BTreeMap<String, ObjectReport>,
    /// Middlewares by qualified name.
    pub middlewares: BTreeMap<String, ObjectReport>,
    /// Providers by name.
    pub providers: BTreeMap<String, ProviderReport>,
    /// Problems not tied to one object.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl Report {
    /// Adds what `provider` reported beyond its configuration: provenance
    /// on its objects, objects it had to drop (as disabled, with the
    /// reason), conflicts as warnings, its containers and connection state.
    pub fn add_provider_detail(&mut self, provider: &str, detail: &ProviderDetail) {
        fn attach(
            reports: &mut BTreeMap<String, ObjectReport>,
            provider: &str,
            details: &BTreeMap<String, ObjectDetail>,
        ) {
            for (name, detail) in details {
                let known = reports.contains_key(&format!("{name}@{provider}"));
                if !known && detail.errors.is_empty() {
                    continue;
                }
                let entry = reports.entry(format!("{name}@{provider}")).or_default();
                entry.provenance.clone_from(&detail.sources);
                for e in &detail.errors {
                    entry.disable(e.clone());
                }
                for w in &detail.warnings {
                    entry.warn(w.clone());
                }
            }
        }
        attach(&mut self.routers, provider, &detail.routers);
        attach(&mut self.services, provider, &detail.services);
        attach(&mut self.middlewares, provider, &detail.middlewares);
        let report = self.providers.entry(provider.to_owned()).or_default();
        report.connected = detail.connected;
        report.containers.clone_from(&detail.containers);
    }

    /// Every error and warning, one line each, prefixed by its object, for logs.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (kind, map) in [
            ("router", &self.routers),
            ("service", &self.services),
            ("middleware", &self.middlewares),
        ] {
            for (name, r) in map {
                for e in &r.errors {
                    out.push(format!("{kind} {name}: {e}"));
                }
            }
        }
        out.extend(self.warnings.iter().cloned());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::provenance::NotRouted;

    #[test]
    fn provider_detail_lands_on_the_objects_and_the_provider() {
        let mut report = Report::default();
        report
            .routers
            .insert("app@docker".into(), ObjectReport::default());
        let source = Source {
            container_id: "abc".into(),
            container_name: "web-1".into(),
            labels: vec!["gangway.http.routers.app.rule".into()],
            ..Source::default()
        };
        let mut detail = ProviderDetail {
            connected: Some(true),
            ..ProviderDetail::default()
        };
        detail.routers.insert(
            "app".into(),
            ObjectDetail {
                sources: vec![source.clone()],
                warnings: vec!["conflict: …".into()],
                ..ObjectDetail::default()
            },
        );
        detail.routers.insert(
            "broken".into(),
            ObjectDetail {
                sources: vec![source],
                errors: vec!["container `web-1`: label …".into()],
                ..ObjectDetail::default()
            },
        );
        // Known to the provider only: nothing to say about it.
        detail
            .services
            .insert("quiet".into(), ObjectDetail::default());
        detail.containers.push(ContainerRecord {
            id: "abc".into(),
            name: "web-1".into(),
            reason: Some(NotRouted::Stopped),
            ..ContainerRecord::default()
        });
        report.add_provider_detail("docker", &detail);

        let app = &report.routers["app@docker"];
        assert_eq!(app.status, Status::Warning);
        assert_eq!(app.provenance[0].container_name, "web-1");
        let broken = &report.routers["broken@docker"];
        assert_eq!(broken.status, Status::Disabled);
        assert_eq!(broken.errors, ["container `web-1`: label …"]);
        assert!(!report.services.contains_key("quiet@docker"));
        let p = &report.providers["docker"];
        assert_eq!(p.connected, Some(true));
        assert_eq!(p.containers.len(), 1);
        // Everything serializes for the API.
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(
            json["routers"]["app@docker"]["provenance"][0]["containerName"],
            "web-1"
        );
        assert_eq!(
            json["providers"]["docker"]["containers"][0]["reason"],
            "stopped"
        );
        assert!(
            report
                .lines()
                .iter()
                .any(|l| l.starts_with("router broken@docker: container `web-1`"))
        );
    }
}
