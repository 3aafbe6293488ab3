//! One document of the file provider, read so that a mistake in one object
//! leaves out that object only: a document that fits the model is read
//! whole, as it always was; one that does not is read again as a generic
//! tree whose named objects (routers, services, middlewares, servers
//! transports, TLS options and stores) are read one by one.

use super::locate;
use crate::config::Dynamic;
use crate::config::dynamic::tcp::{TcpMiddleware, TcpRouter, TcpServersTransport, TcpService};
use crate::config::dynamic::udp::{UdpRouter, UdpService};
use crate::config::dynamic::{Middleware, Router, ServersTransport, Service, TlsOptions, TlsStore};
use crate::config::format::{Format, parse_document};
use crate::config::lenient::{self, LenientError};
use crate::config::problem::{
    ConfigError, Notice, ObjectKind, ObjectRef, Origin, Problem, ProviderError, Section, Warning,
};
use crate::config::provenance::{ObjectDetail, ProviderDetail};
use crate::provider::docker::labels::suggest;
use serde::de::DeserializeOwned;
use serde_value::Value;
use std::collections::BTreeMap;

/// What one document gives.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Read {
    /// Its objects, without the ones left out.
    pub dynamic: Dynamic,
    /// The place of each object; the objects left out carry their errors.
    pub detail: ProviderDetail,
    /// Objects left out that have no place in the report of routers,
    /// services and middlewares (servers transports, TLS options, stores).
    pub warnings: Vec<Warning>,
}

/// Reads one document for `provider` (the namespace its objects are
/// named in). A syntax error, or a mistake outside every named object, is
/// an error for the whole document.
pub(super) fn read(
    provider: &str,
    path: &str,
    text: &str,
    format: Format,
) -> Result<Read, ProviderError> {
    let (detail, sections) = locate::locate(path, text, format);
    let whole = match parse_document::<Dynamic>(path, text, format) {
        Ok(dynamic) => {
            return Ok(Read {
                dynamic,
                detail,
                warnings: Vec::new(),
            });
        }
        Err(e) => e,
    };
    let mut tree: Value =
        parse_document(path, text, format).map_err(|e| ProviderError::syntax(&e))?;
    fold_sections(&mut tree);
    let ignored = take_static_sections(&mut tree);
    let mut split = Split {
        provider,
        path,
        tree,
        read: Read {
            detail,
            ..Read::default()
        },
        sections,
        left_out: 0,
    };
    let routers = split.objects::<Router>(&["http", "routers"], Target::Object(ObjectKind::Router));
    let services =
        split.objects::<Service>(&["http", "services"], Target::Object(ObjectKind::Service));
    let middlewares = split.objects::<Middleware>(
        &["http", "middlewares"],
        Target::Object(ObjectKind::Middleware),
    );
    let transports = split.objects::<ServersTransport>(
        &["http", "serversTransports"],
        Target::Section(Section::ServersTransport),
    );
    let options =
        split.objects::<TlsOptions>(&["tls", "options"], Target::Section(Section::TlsOptions));
    let stores = split.objects::<TlsStore>(&["tls", "stores"], Target::Section(Section::TlsStore));
    let tcp_routers =
        split.objects::<TcpRouter>(&["tcp", "routers"], Target::Section(Section::TcpRouter));
    let tcp_services =
        split.objects::<TcpService>(&["tcp", "services"], Target::Section(Section::TcpService));
    let udp_routers =
        split.objects::<UdpRouter>(&["udp", "routers"], Target::Section(Section::UdpRouter));
    let udp_services =
        split.objects::<UdpService>(&["udp", "services"], Target::Section(Section::UdpService));
    let tcp_middlewares = split.objects::<TcpMiddleware>(
        &["tcp", "middlewares"],
        Target::Section(Section::TcpMiddleware),
    );
    let tcp_transports = split.objects::<TcpServersTransport>(
        &["tcp", "serversTransports"],
        Target::Section(Section::TcpServersTransport),
    );
    let left_out = split.left_out;
    let Split { tree, mut read, .. } = split;
    if !ignored.is_empty() {
        read.warnings.push(Warning::new(
            Notice::StaticSectionsIgnored {
                sections: ignored.clone(),
            },
            Some(Origin::Document {
                path: path.to_owned(),
            }),
        ));
    }
    let mut dynamic: Dynamic = match read_lenient(&tree) {
        Ok(rest) => rest,
        // Every object read on its own: the mistake the whole read found
        // is outside them, and the whole read says on which line (unless
        // it was about a static section, since taken out).
        Err(_) if left_out == 0 && ignored.is_empty() => {
            return Err(ProviderError::syntax(&whole));
        }
        Err(e) => {
            return Err(ProviderError::Syntax {
                origin: Origin::Document {
                    path: path.to_owned(),
                },
                message: e.to_string(),
            });
        }
    };
    dynamic.http.routers.extend(routers);
    dynamic.http.services.extend(services);
    dynamic.http.middlewares.extend(middlewares);
    dynamic.http.servers_transports.extend(transports);
    dynamic.tls.options.extend(options);
    dynamic.tls.stores.extend(stores);
    dynamic.tcp.routers.extend(tcp_routers);
    dynamic.tcp.services.extend(tcp_services);
    dynamic.tcp.middlewares.extend(tcp_middlewares);
    dynamic.tcp.servers_transports.extend(tcp_transports);
    dynamic.udp.routers.extend(udp_routers);
    dynamic.udp.services.extend(udp_services);
    read.dynamic = dynamic;
    Ok(read)
}

/// Where the error of an object left out goes.
#[derive(Clone, Copy)]
enum Target {
    /// On the object, which the report then shows as disabled.
    Object(ObjectKind),
    /// A warning of the provider, naming the section and the name.
    Section(Section),
}

struct Split<'a> {
    provider: &'a str,
    path: &'a str,
    tree: Value,
    read: Read,
    /// The line of each object that has no object report.
    sections: BTreeMap<(Section, String), usize>,
    left_out: usize,
}

impl Split<'_> {
    /// Takes the map at `at` out of the tree and reads each of its entries
    /// as a `T`; an entry that does not read is left out and reported.
    /// Anything that is not a map of named entries stays in the tree, for
    /// the read of the rest to report.
    fn objects<T: DeserializeOwned>(
        &mut self,
        at: &[&str; 2],
        target: Target,
    ) -> BTreeMap<String, T> {
        let mut out = BTreeMap::new();
        let Some(entries) = take_map(&mut self.tree, at) else {
            return out;
        };
        let mut back = BTreeMap::new();
        for (key, value) in entries {
            let Value::String(name) = key else {
                back.insert(key, value);
                continue;
            };
            let read = serde_json::to_value(&value).ok();
            let mut value = value;
            let mut found = 0;
            // Each read stops at its first problem. A mistyped key at the
            // object's top level is taken out and the object read again,
            // so that it reports each of them, not only the first.
            loop {
                match read_lenient::<T>(&value) {
                    Ok(object) if found == 0 => {
                        out.insert(name.clone(), object);
                        break;
                    }
                    Ok(_) => break,
                    Err(e) => {
                        if found == 0 {
                            self.left_out += 1;
                        }
                        found += 1;
                        self.report(target, name.clone(), &e);
                        let taken = match (&e, &mut value) {
                            (LenientError::UnknownField { field, .. }, Value::Map(map)) => {
                                map.remove(&Value::String(field.clone())).is_some()
                            }
                            _ => false,
                        };
                        if !taken {
                            break;
                        }
                    }
                }
            }
            if found > 0 {
                self.keep_read(target, &name, read);
            }
        }
        if !back.is_empty() {
            put_map(&mut self.tree, at, back);
        }
        out
    }

    /// Keeps the values read of an object left out, for the API to show.
    fn keep_read(&mut self, target: Target, name: &str, read: Option<serde_json::Value>) {
        let detail = match target {
            Target::Object(ObjectKind::Router) => &mut self.read.detail.routers,
            Target::Object(ObjectKind::Service) => &mut self.read.detail.services,
            Target::Object(ObjectKind::Middleware) => &mut self.read.detail.middlewares,
            _ => return,
        };
        if let Some(entry) = detail.get_mut(name) {
            entry.read = read;
        }
    }

    fn report(&mut self, target: Target, name: String, e: &LenientError) {
        let (problem, key) = problem_of(e);
        match target {
            Target::Object(kind) => {
                let detail = match kind {
                    ObjectKind::Router => &mut self.read.detail.routers,
                    ObjectKind::Service => &mut self.read.detail.services,
                    ObjectKind::Middleware => &mut self.read.detail.middlewares,
                    // Read as sections (`Target::Section`): never here.
                    ObjectKind::TcpRouter
                    | ObjectKind::TcpService
                    | ObjectKind::TcpMiddleware
                    | ObjectKind::UdpRouter
                    | ObjectKind::UdpService => {
                        return;
                    }
                };
                let entry = detail.entry(name.clone()).or_default();
                let origin = origin_in(entry, key.as_deref(), self.path);
                let object = ObjectRef::new(kind, &format!("{name}@{}", self.provider));
                entry
                    .errors
                    .push(ConfigError::new(object, problem).with_origin(origin));
            }
            Target::Section(what) => {
                let origin = match self.sections.get(&(what, name.clone())) {
                    Some(&line) => Origin::File {
                        path: self.path.to_owned(),
                        line,
                    },
                    None => Origin::Document {
                        path: self.path.to_owned(),
                    },
                };
                self.read.warnings.push(Warning::new(
                    Notice::LeftOut {
                        what,
                        name,
                        problem: Box::new(problem),
                    },
                    Some(origin),
                ));
            }
        }
    }
}

/// The typed problem of an object that does not read, and the key at
/// fault when one is.
fn problem_of(e: &LenientError) -> (Problem, Option<String>) {
    match e {
        // A middleware's type is a key too: an unknown one is a mistyped key.
        LenientError::UnknownField {
            field: key,
            expected: known,
        }
        | LenientError::UnknownVariant {
            variant: key,
            expected: known,
        } => (
            Problem::UnknownOption {
                option: key.clone(),
                suggestion: suggest(key, known).map(str::to_owned),
            },
            Some(key.clone()),
        ),
        other => (
            Problem::BadValue {
                message: other.to_string(),
            },
            None,
        ),
    }
}

/// The line of `key` under the object (the first option whose last part
/// it is), else the object's line, else the file.
fn origin_in(detail: &ObjectDetail, key: Option<&str>, path: &str) -> Origin {
    let Some(file) = &detail.file else {
        return Origin::Document {
            path: path.to_owned(),
        };
    };
    let line = key
        .map(str::to_ascii_lowercase)
        .and_then(|key| {
            file.options
                .iter()
                .filter(|(option, _)| option.rsplit('.').next() == Some(key.as_str()))
                .map(|(_, line)| *line)
                .min()
        })
        .unwrap_or(file.line);
    Origin::File {
        path: file.path.clone(),
        line,
    }
}

/// Reads a part of the tree the way Traefik's file provider does: option
/// names in any case, scalars converted, `a,b` for a list.
fn read_lenient<T: DeserializeOwned>(value: &Value) -> Result<T, LenientError> {
    let json = serde_json::to_value(value).map_err(|e| LenientError::Invalid(e.to_string()))?;
    lenient::from_value(json)
}

/// Sections spelt in several cases (`http` and `HTTP`, `routers` and
/// `Routers`) become one, spelt as the model spells it, so that each object
/// is read wherever it was written.
fn fold_sections(tree: &mut Value) {
    const TOP: &[&str] = &["http", "tcp", "udp", "tls"];
    const INNER: &[&str] = &[
        "routers",
        "services",
        "middlewares",
        "serversTransports",
        "options",
        "stores",
        "certificates",
    ];
    let Value::Map(top) = tree else {
        return;
    };
    fold(top, TOP);
    for section in top.values_mut() {
        if let Value::Map(inner) = section {
            fold(inner, INNER);
        }
    }
}

/// Merges the maps under keys that are one of `names` in any case into one
/// under that name.
fn fold(map: &mut BTreeMap<Value, Value>, names: &[&str]) {
    for name in names {
        let spellings: Vec<Value> = map
            .keys()
            .filter(|k| matches!(k, Value::String(s) if s.eq_ignore_ascii_case(name)))
            .cloned()
            .collect();
        if spellings.len() < 2 && spellings.iter().all(|k| *k == key(name)) {
            continue;
        }
        let mut merged = BTreeMap::new();
        let mut other = None;
        for spelling in spellings {
            match map.remove(&spelling) {
                Some(Value::Map(entries)) => merged.extend(entries),
                // Not a map: left for the model's read to report.
                Some(value) => other = Some((spelling, value)),
                None => {}
            }
        }
        map.insert(key(name), Value::Map(merged));
        if let Some((spelling, value)) = other
            && spelling != key(name)
        {
            map.insert(spelling, value);
        }
    }
}

/// Takes the top-level sections of the static configuration (`global`,
/// `entryPoints`, `providers`, … in any case) out of the tree, as Traefik's
/// file provider skips them in a file that is also the static one; returns
/// them as written.
fn take_static_sections(tree: &mut Value) -> Vec<String> {
    let Value::Map(top) = tree else {
        return Vec::new();
    };
    let is_static = |name: &str| {
        crate::config::static_config::all_options().any(|option| {
            option
                .segments()
                .next()
                .is_some_and(|first| first.eq_ignore_ascii_case(name))
        })
    };
    let mut taken = Vec::new();
    top.retain(|k, _| match k {
        Value::String(name) if is_static(name) => {
            taken.push(name.clone());
            false
        }
        _ => true,
    });
    taken
}

fn key(name: &str) -> Value {
    Value::String(name.to_owned())
}

/// Removes the map at `outer.inner` (sections already spelt as the model
/// spells them, by [`fold_sections`]); anything else there stays.
fn take_map(tree: &mut Value, [outer, inner]: &[&str; 2]) -> Option<BTreeMap<Value, Value>> {
    let Value::Map(top) = tree else {
        return None;
    };
    let Some(Value::Map(section)) = top.get_mut(&key(outer)) else {
        return None;
    };
    match section.remove(&key(inner)) {
        Some(Value::Map(entries)) => Some(entries),
        Some(other) => {
            section.insert(key(inner), other);
            None
        }
        None => None,
    }
}

/// Puts entries taken by [`take_map`] back.
fn put_map(tree: &mut Value, [outer, inner]: &[&str; 2], entries: BTreeMap<Value, Value>) {
    if let Value::Map(top) = tree
        && let Some(Value::Map(section)) = top.get_mut(&key(outer))
    {
        section.insert(key(inner), Value::Map(entries));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_of(detail: &BTreeMap<String, ObjectDetail>, name: &str) -> ConfigError {
        let errors = &detail[name].errors;
        assert_eq!(errors.len(), 1, "{errors:?}");
        errors[0].clone()
    }

    #[test]
    fn static_sections_are_skipped_with_one_warning_and_unknown_ones_still_refused() {
        let both = "\
entrypoints:
  web:
    address: :80
Providers:
  file:
    filename: traefik.yml
http:
  routers:
    app:
      rule: Host(`app`)
      service: app
";
        let got = read("file", "traefik.yml", both, Format::Yaml).unwrap();
        assert!(got.dynamic.http.routers.contains_key("app"));
        assert_eq!(got.warnings.len(), 1, "{:?}", got.warnings);
        assert_eq!(
            got.warnings[0].notice,
            Notice::StaticSectionsIgnored {
                sections: vec!["Providers".into(), "entrypoints".into()]
            }
        );
        let unknown = format!("{both}htpp:\n  routers: {{}}\n");
        let e = read("file", "traefik.yml", &unknown, Format::Yaml).unwrap_err();
        assert!(e.to_string().contains("htpp"), "{e}");
    }

    #[test]
    fn a_mistyped_key_in_toml_leaves_out_its_router_only() {
        let text = "\
[http.routers.good]
rule = \"Host(`good`)\"
service = \"app\"

[http.routers.bad]
rule = \"Host(`bad`)\"
servce = \"app\"

[http.services.app.loadBalancer]
[[http.services.app.loadBalancer.servers]]
url = \"http://127.0.0.1:9000\"
";
        let read = read("file", "dynamic.toml", text, Format::Toml).unwrap();
        assert_eq!(
            read.dynamic.http.routers.keys().collect::<Vec<_>>(),
            ["good"]
        );
        assert!(read.dynamic.http.services.contains_key("app"));
        let e = error_of(&read.detail.routers, "bad");
        assert_eq!(e.object, ObjectRef::new(ObjectKind::Router, "bad@file"));
        assert_eq!(
            e.problem,
            Problem::UnknownOption {
                option: "servce".into(),
                suggestion: Some("service".into()),
            }
        );
        assert_eq!(
            e.origin,
            Some(Origin::File {
                path: "dynamic.toml".into(),
                line: 7
            })
        );
        assert!(read.detail.routers["good"].errors.is_empty());
    }

    #[test]
    fn a_mistyped_key_in_a_tcp_servers_transport_leaves_out_that_transport_only() {
        let text = "\
[tcp.serversTransports.good]
dialTimeout = \"5s\"

[tcp.serversTransports.bad]
dialTimout = \"5s\"

[[tcp.services.db.loadBalancer.servers]]
address = \"127.0.0.1:5432\"
";
        let read = read("file", "dynamic.toml", text, Format::Toml).unwrap();
        assert_eq!(
            read.dynamic
                .tcp
                .servers_transports
                .keys()
                .collect::<Vec<_>>(),
            ["good"]
        );
        assert!(read.dynamic.tcp.services.contains_key("db"));
        assert_eq!(read.warnings.len(), 1, "{:?}", read.warnings);
        let warning = read.warnings[0].to_string();
        assert!(
            warning.contains("TCP servers transport `bad`") && warning.contains("dialTimout"),
            "{warning}"
        );
    }

    #[test]
    fn a_mistyped_key_in_a_tcp_router_leaves_out_that_router_only() {
        let text = "\
[tcp.routers.db]
rule = \"HostSNI(`*`)\"
service = \"db\"

[tcp.routers.bad]
rule = \"HostSNI(`*`)\"
servise = \"db\"

[[tcp.services.db.loadBalancer.servers]]
address = \"127.0.0.1:5432\"
";
        let read = read("file", "dynamic.toml", text, Format::Toml).unwrap();
        assert_eq!(read.dynamic.tcp.routers.keys().collect::<Vec<_>>(), ["db"]);
        assert_eq!(
            read.dynamic.tcp.services["db"]
                .load_balancer
                .as_ref()
                .map(|lb| lb.servers[0].address.as_str()),
            Some("127.0.0.1:5432")
        );
        assert_eq!(read.warnings.len(), 1, "{:?}", read.warnings);
        let warning = read.warnings[0].to_string();
        assert!(
            warning.contains("TCP router `bad`") && warning.contains("servise"),
            "{warning}"
        );
        assert_eq!(
            read.warnings[0].origin,
            Some(Origin::File {
                path: "dynamic.toml".into(),
                line: 5
            })
        );
    }

    #[test]
    fn every_mistyped_key_of_an_object_is_reported_at_its_line() {
        let text = "\
[http.routers.bad]
rule = \"Host(`bad`)\"
servce = \"app\"
middlewarez = [\"auth\"]
priority = 3
";
        let read = read("file", "dynamic.toml", text, Format::Toml).unwrap();
        assert!(read.dynamic.http.routers.is_empty());
        let errors = &read.detail.routers["bad"].errors;
        let mut got: Vec<(String, Option<String>, usize)> = errors
            .iter()
            .map(|e| match (&e.problem, &e.origin) {
                (
                    Problem::UnknownOption { option, suggestion },
                    Some(Origin::File { line, .. }),
                ) => (option.clone(), suggestion.clone(), *line),
                other => panic!("{other:?}"),
            })
            .collect();
        got.sort();
        assert_eq!(
            got,
            [
                ("middlewarez".into(), Some("middlewares".into()), 4),
                ("servce".into(), Some("service".into()), 3),
            ]
        );
        assert_eq!(errors.len(), 2, "{errors:?}");
    }

    #[test]
    fn yaml_objects_are_read_one_by_one_too() {
        let text = "\
http:
  routers:
    good:
      rule: Host(`good`)
      service: app
    typo:
      rule: Host(`typo`)
      service: app
      entrypoint: [web]
  services:
    app:
      loadBalancer:
        servers:
          - url: http://127.0.0.1:9000
        passHostHeader: maybe
tls:
  options:
    modern:
      minVersion: VersionTLS13
    old:
      minVersoin: VersionTLS12
";
        let read = read("file", "dynamic.yml", text, Format::Yaml).unwrap();
        assert_eq!(
            read.dynamic.http.routers.keys().collect::<Vec<_>>(),
            ["good"]
        );
        let typo = error_of(&read.detail.routers, "typo");
        assert_eq!(
            typo.problem,
            Problem::UnknownOption {
                option: "entrypoint".into(),
                suggestion: Some("entryPoints".into()),
            }
        );
        assert_eq!(
            typo.origin,
            Some(Origin::File {
                path: "dynamic.yml".into(),
                line: 9
            })
        );
        // A value of the wrong type: the object's line, the reader's words.
        assert!(read.dynamic.http.services.is_empty());
        let app = error_of(&read.detail.services, "app");
        assert!(matches!(app.problem, Problem::BadValue { .. }), "{app:?}");
        assert_eq!(
            app.origin,
            Some(Origin::File {
                path: "dynamic.yml".into(),
                line: 11
            })
        );
        // TLS options have no object report: a warning names them.
        assert_eq!(
            read.dynamic.tls.options.keys().collect::<Vec<_>>(),
            ["modern"]
        );
        assert_eq!(read.warnings.len(), 1);
        assert_eq!(
            read.warnings[0].to_string(),
            "dynamic.yml:20: TLS options `old` is left out: unknown option `minVersoin` (did you mean `minVersion`?)"
        );
    }

    #[test]
    fn a_valid_document_reads_as_the_whole_reader_reads_it() {
        let text = "[http.routers.a]\nrule = \"Host(`a`)\"\nservice = \"s\"\n";
        let read = read("file", "d.toml", text, Format::Toml).unwrap();
        let whole: Dynamic = parse_document("d.toml", text, Format::Toml).unwrap();
        assert_eq!(read.dynamic, whole);
        assert!(read.warnings.is_empty());
        assert!(read.detail.routers["a"].errors.is_empty());
    }

    #[test]
    fn a_mistake_outside_every_object_fails_the_document_at_its_line() {
        let text = "[http.routers.a]\nrule = \"Host(`a`)\"\n\n[htp.routers.b]\nrule = \"x\"\n";
        let e = read("file", "d.toml", text, Format::Toml).unwrap_err();
        assert_eq!(
            e.origin(),
            Some(Origin::File {
                path: "d.toml".into(),
                line: 4
            })
        );
        // Syntax errors as before.
        let e = read("file", "d.yml", "http:\n  routers: [\n", Format::Yaml).unwrap_err();
        assert!(matches!(e, ProviderError::Syntax { .. }), "{e:?}");
    }
}
