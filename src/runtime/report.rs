//! What compile found out about each object: status and errors, for logs,
//! the API and the dashboard.

use crate::config::problem::{ConfigError, ObjectKind, Origin, ProviderError, Warning};
use crate::config::provenance::{
    ContainerRecord, FileLocation, ObjectDetail, ProviderDetail, Source, StoreKeys,
};
use serde::{Serialize, Serializer};
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
    /// What is wrong, each with its place; serialized as Traefik's
    /// `error`, one sentence each (the API adds the typed form beside it).
    #[serde(
        rename = "error",
        serialize_with = "sentences",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub errors: Vec<ConfigError>,
    /// For routers: the entry points it is attached to. For services and
    /// middlewares: the routers that use it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub using: Vec<String>,
    /// For routers: the middlewares each of its entry points puts before
    /// its own (`entryPoints.<name>.http.middlewares`), qualified.
    #[serde(
        rename = "entryPointMiddlewares",
        skip_serializing_if = "std::collections::BTreeMap::is_empty"
    )]
    pub entry_point_middlewares: std::collections::BTreeMap<String, Vec<String>>,
    /// For middlewares: the `chain` middlewares it is a member of.
    #[serde(rename = "inChains", skip_serializing_if = "Vec::is_empty")]
    pub in_chains: Vec<String>,
    /// The containers and labels behind the object, when its provider knows.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub provenance: Vec<Source>,
    /// The store keys behind the object, for KV providers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keys: Option<StoreKeys>,
    /// The file and line it is written at, for the file provider.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<FileLocation>,
    /// For an object its provider left out (it does not read): the values
    /// that were read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read: Option<serde_json::Value>,
}

fn sentences<S: Serializer>(errors: &[ConfigError], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(errors.iter().map(ToString::to_string))
}

impl ObjectReport {
    /// Marks the object disabled because of `error`.
    pub fn disable(&mut self, error: ConfigError) {
        self.status = Status::Disabled;
        self.errors.push(error);
    }

    /// Records a warning without disabling the object.
    pub fn warn(&mut self, warning: ConfigError) {
        if self.status == Status::Enabled {
            self.status = Status::Warning;
        }
        self.errors.push(warning);
    }

    /// Gives each error that has no place yet the place its object's
    /// provider reports for it (see [`origin_of`]).
    pub fn locate(&mut self, detail: &ObjectDetail) {
        for e in &mut self.errors {
            if e.origin.is_none() {
                e.origin = origin_of(detail, e.option);
            }
        }
    }
}

/// Where the object of `detail` writes `option` (None: the object as a
/// whole): the file and the line of the option (or of the object); or the
/// container and, when one of its labels sets the option, that label.
pub fn origin_of(detail: &ObjectDetail, option: Option<&str>) -> Option<Origin> {
    if let Some(file) = &detail.file {
        return Some(Origin::File {
            path: file.path.clone(),
            line: file.line_of(option),
        });
    }
    if let Some(store) = &detail.keys {
        // Store keys are matched without regard to case, as they are read;
        // an option above a list (`loadbalancer.servers`) is the first key
        // below it.
        let key = option
            .and_then(|option| {
                let path = format!("/{}", option.replace('.', "/"));
                let below = format!("{path}/");
                store.keys.iter().find(|k| {
                    let k = k.to_ascii_lowercase();
                    k.ends_with(&path) || k.contains(&below)
                })
            })
            .or(store.keys.first())?;
        return Some(Origin::Key {
            provider: store.provider.clone(),
            key: key.clone(),
        });
    }
    let first = detail.sources.first()?;
    // Label keys are matched without regard to case, as the parser reads them.
    let label = option.and_then(|option| {
        let suffix = format!(".{option}");
        detail
            .sources
            .iter()
            .flat_map(|s| &s.labels)
            .find(|l| l.to_ascii_lowercase().ends_with(&suffix))
    });
    let source = label
        .and_then(|l| detail.sources.iter().find(|s| s.labels.contains(l)))
        .unwrap_or(first);
    Some(Origin::Container {
        id: source.container_id.clone(),
        name: source.container_name.clone(),
        label: label.cloned(),
    })
}

/// A provider's error as its sentence: the API has always given it so.
fn message_of<S: serde::Serializer>(
    error: &Option<ProviderError>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match error {
        Some(e) => serializer.collect_str(e),
        None => serializer.serialize_none(),
    }
}

/// One provider's state as the aggregator last saw it.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderReport {
    /// The last error the provider reported, if its newest attempt failed;
    /// its last good configuration stays in use meanwhile.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "message_of")]
    pub last_error: Option<ProviderError>,
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
    /// TCP routers by qualified name.
    #[serde(rename = "tcpRouters", skip_serializing_if = "BTreeMap::is_empty")]
    pub tcp_routers: BTreeMap<String, ObjectReport>,
    /// TCP services by qualified name.
    #[serde(rename = "tcpServices", skip_serializing_if = "BTreeMap::is_empty")]
    pub tcp_services: BTreeMap<String, ObjectReport>,
    /// TCP middlewares by qualified name.
    #[serde(rename = "tcpMiddlewares", skip_serializing_if = "BTreeMap::is_empty")]
    pub tcp_middlewares: BTreeMap<String, ObjectReport>,
    /// UDP routers by qualified name.
    #[serde(rename = "udpRouters", skip_serializing_if = "BTreeMap::is_empty")]
    pub udp_routers: BTreeMap<String, ObjectReport>,
    /// UDP services by qualified name.
    #[serde(rename = "udpServices", skip_serializing_if = "BTreeMap::is_empty")]
    pub udp_services: BTreeMap<String, ObjectReport>,
    /// Providers by name.
    pub providers: BTreeMap<String, ProviderReport>,
    /// Problems not tied to one object.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<Warning>,
}

impl Report {
    /// Adds what `provider` reported beyond its configuration: provenance
    /// on its objects and the place of their errors, objects it had to
    /// drop (as disabled, with the reason), conflicts as warnings, its
    /// containers and connection state.
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
                entry.keys.clone_from(&detail.keys);
                entry.file.clone_from(&detail.file);
                entry.read.clone_from(&detail.read);
                entry.locate(detail);
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
        attach(&mut self.tcp_routers, provider, &detail.tcp_routers);
        attach(&mut self.tcp_services, provider, &detail.tcp_services);
        attach(&mut self.tcp_middlewares, provider, &detail.tcp_middlewares);
        attach(&mut self.udp_routers, provider, &detail.udp_routers);
        attach(&mut self.udp_services, provider, &detail.udp_services);
        let report = self.providers.entry(provider.to_owned()).or_default();
        report.connected = detail.connected;
        report.containers.clone_from(&detail.containers);
    }

    /// Every error and warning, one line each, prefixed by its object, for logs.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (kind, map) in [
            (ObjectKind::Router, &self.routers),
            (ObjectKind::Service, &self.services),
            (ObjectKind::Middleware, &self.middlewares),
            (ObjectKind::TcpRouter, &self.tcp_routers),
            (ObjectKind::TcpService, &self.tcp_services),
            (ObjectKind::TcpMiddleware, &self.tcp_middlewares),
            (ObjectKind::UdpRouter, &self.udp_routers),
            (ObjectKind::UdpService, &self.udp_services),
        ] {
            for (name, r) in map {
                for e in &r.errors {
                    out.push(format!("{kind} {name}: {e}"));
                }
            }
        }
        out.extend(self.warnings.iter().map(Warning::to_string));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::problem::{ObjectRef, Problem, Reference};
    use crate::config::provenance::{FileLocation, NotRouted};

    fn router(name: &str, problem: Problem) -> ConfigError {
        ConfigError::new(ObjectRef::new(ObjectKind::Router, name), problem)
    }

    #[test]
    fn provider_detail_lands_on_the_objects_and_the_provider() {
        let mut report = Report::default();
        let mut app = ObjectReport::default();
        // What compile found: it knows the option, not the label.
        app.warn(
            router("app@docker", Problem::UnknownResolver { name: "le".into() })
                .at("tls.certresolver"),
        );
        app.warn(
            router(
                "app@docker",
                Problem::Missing {
                    what: Reference::EntryPoint,
                    name: "nope".into(),
                },
            )
            .at("entrypoints"),
        );
        report.routers.insert("app@docker".into(), app);
        let source = Source {
            container_id: "abc".into(),
            container_name: "web-1".into(),
            labels: vec![
                "gangway.http.routers.app.rule".into(),
                "gangway.http.routers.app.tls.certResolver".into(),
            ],
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
                warnings: vec![router(
                    "app@docker",
                    Problem::Conflict {
                        kept: "web-1".into(),
                        other: "web-2".into(),
                        dropped: false,
                    },
                )],
                ..ObjectDetail::default()
            },
        );
        detail.routers.insert(
            "broken".into(),
            ObjectDetail {
                sources: vec![source],
                errors: vec![
                    router(
                        "broken@docker",
                        Problem::UnknownOption {
                            option: "rul".into(),
                            suggestion: Some("rule".into()),
                        },
                    )
                    .with_origin(Origin::Container {
                        id: "abc".into(),
                        name: "web-1".into(),
                        label: Some("gangway.http.routers.broken.rul".into()),
                    }),
                ],
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
        // The label that sets the option at fault, exactly as written.
        assert_eq!(
            app.errors[0].origin,
            Some(Origin::Container {
                id: "abc".into(),
                name: "web-1".into(),
                label: Some("gangway.http.routers.app.tls.certResolver".into()),
            })
        );
        // No label sets it: the container alone.
        assert_eq!(
            app.errors[1].origin,
            Some(Origin::Container {
                id: "abc".into(),
                name: "web-1".into(),
                label: None,
            })
        );
        assert_eq!(app.errors.len(), 3, "the provider's warning is added");
        let broken = &report.routers["broken@docker"];
        assert_eq!(broken.status, Status::Disabled);
        assert_eq!(broken.errors.len(), 1);
        assert_eq!(
            broken.errors[0].to_string(),
            "container `web-1`: label `gangway.http.routers.broken.rul`: unknown option `rul` (did you mean `rule`?)"
        );
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

    #[test]
    fn errors_of_store_objects_name_the_key_of_the_option() {
        let mut report = Report::default();
        let mut app = ObjectReport::default();
        app.warn(
            router("app@redis", Problem::UnknownResolver { name: "le".into() })
                .at("tls.certresolver"),
        );
        app.disable(router("app@redis", Problem::NoService).at("service"));
        report.routers.insert("app@redis".into(), app);
        let mut detail = ProviderDetail::default();
        let keys = vec![
            "traefik/http/routers/app/rule".to_owned(),
            "traefik/http/routers/app/tls/certResolver".to_owned(),
        ];
        detail.routers.insert(
            "app".into(),
            ObjectDetail {
                keys: Some(StoreKeys {
                    provider: "redis".into(),
                    keys: keys.clone(),
                }),
                ..ObjectDetail::default()
            },
        );
        report.add_provider_detail("redis", &detail);
        let app = &report.routers["app@redis"];
        // The key that sets the option, whatever its case.
        assert!(
            app.errors[0]
                .to_string()
                .starts_with("redis key `traefik/http/routers/app/tls/certResolver`: "),
            "{}",
            app.errors[0]
        );
        assert_eq!(
            app.errors[0].origin,
            Some(Origin::Key {
                provider: "redis".into(),
                key: keys[1].clone()
            })
        );
        // No key sets it: the object's first key.
        assert_eq!(
            app.errors[1].origin,
            Some(Origin::Key {
                provider: "redis".into(),
                key: keys[0].clone()
            })
        );
        assert_eq!(app.keys.as_ref().map(|k| k.keys.len()), Some(2));
    }

    #[test]
    fn errors_of_file_objects_name_the_file_and_line_of_the_option() {
        let mut report = Report::default();
        let mut app = ObjectReport::default();
        let missing = Problem::InReference {
            what: Reference::Middleware,
            name: "auth@file".into(),
            problem: Box::new(Problem::NotFound),
        };
        app.disable(router("app@file", missing).at("middlewares"));
        app.disable(router("app@file", Problem::NoService).at("service"));
        report.routers.insert("app@file".into(), app);
        let mut detail = ProviderDetail::default();
        detail.routers.insert(
            "app".into(),
            ObjectDetail {
                file: Some(FileLocation {
                    path: "dynamic.toml".into(),
                    line: 3,
                    options: [("middlewares".to_owned(), 5)].into(),
                    last_good: None,
                }),
                ..ObjectDetail::default()
            },
        );
        report.add_provider_detail("file", &detail);
        let errors = &report.routers["app@file"].errors;
        assert_eq!(
            errors[0].origin,
            Some(Origin::File {
                path: "dynamic.toml".into(),
                line: 5
            })
        );
        assert_eq!(
            errors[0].to_string(),
            "dynamic.toml:5: middleware `auth@file`: does not exist"
        );
        // Not written at all: the object's own line.
        assert_eq!(
            errors[1].to_string(),
            "dynamic.toml:3: the router has no service"
        );
        let json = serde_json::to_value(&report.routers["app@file"]).unwrap();
        assert_eq!(
            json["error"],
            serde_json::json!([
                "dynamic.toml:5: middleware `auth@file`: does not exist",
                "dynamic.toml:3: the router has no service"
            ])
        );
        assert_eq!(
            report.lines(),
            [
                "router app@file: dynamic.toml:5: middleware `auth@file`: does not exist",
                "router app@file: dynamic.toml:3: the router has no service"
            ]
        );
    }
}
