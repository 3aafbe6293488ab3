//! Traefik v3's KV layout read into the dynamic model: keys under a root
//! (`<root>/http/routers/<name>/rule`), string values, lists as numbered
//! children (`…/entryPoints/0`). The keys become the label parser's tree of
//! strings, so options match whatever their case and each object is read
//! on its own: a key that does not read disables its object only. Pure.

#[cfg(test)]
mod tests;

use crate::config::Dynamic;
use crate::config::dynamic::tcp::TcpServersTransport;
use crate::config::dynamic::{CertificateFile, ServersTransport, TlsOptions, TlsStore};
use crate::config::problem::{
    ConfigError, Notice, ObjectKind, ObjectRef, Origin, Problem, Section, Warning,
};
use crate::config::provenance::{ObjectDetail, ProviderDetail, StoreKeys};
use crate::provider::docker::labels::tree::{DeError, MAX_DEPTH, Node, read, read_middleware};
use crate::provider::docker::labels::{
    LabelError, Objects, read_objects_mut, rule_error, suggest, tcp_rule_error,
};
use std::collections::BTreeMap;

/// What the keys under a root say.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Parsed {
    /// The configuration, names bare.
    pub dynamic: Dynamic,
    /// The keys behind each object, and the objects left out with why.
    pub detail: ProviderDetail,
    /// Keys that belong to no object and were skipped, and parts of the
    /// configuration without an object kind of their own (servers
    /// transports, TLS) that were left out.
    pub warnings: Vec<Warning>,
}

/// Reads the pairs under `<root>/` (keys elsewhere are ignored) as the
/// provider `provider` (`redis`), which names the objects and the keys in
/// errors.
pub fn parse_pairs(provider: &str, root: &str, pairs: &BTreeMap<String, String>) -> Parsed {
    let mut out = Out {
        provider,
        parsed: Parsed::default(),
    };
    let mut tree = Node::root(root);
    for (key, value) in pairs {
        let Some(rest) = key.strip_prefix(root).and_then(|r| r.strip_prefix('/')) else {
            continue;
        };
        // A folder marker (a key ending in `/` with no value), as some
        // tools write them, holds nothing.
        if rest.is_empty() || (rest.ends_with('/') && value.is_empty()) {
            continue;
        }
        let segs = match segments(rest) {
            Ok(s) => s,
            Err(message) => {
                out.ignored(key, Problem::BadLabel { message });
                continue;
            }
        };
        let mut node = &mut tree;
        for s in &segs {
            node = node.child_mut(s);
        }
        match &node.label {
            Some(first) => out.ignored(
                key,
                Problem::BadLabel {
                    message: format!(
                        "`{first}` sets the same option (keys are read without regard to case); that one is used"
                    ),
                },
            ),
            None => {
                node.label = Some(key.clone());
                node.value = Some(value.clone());
            }
        }
    }
    const TOP: &[&str] = &["http", "tcp", "udp", "tls"];
    out.stray_value(&tree, "expects `http`, `tcp`, `udp` or `tls` below it");
    for (written, node) in tree.children.into_values() {
        match written.to_ascii_lowercase().as_str() {
            "http" => out.http(node),
            "tcp" => out.tcp(node),
            "udp" => out.udp(node),
            "tls" => out.tls(node),
            _ => out.unknown(&written, &node, TOP),
        }
    }
    out.parsed
}

/// Splits `http/routers/web/entryPoints/0` into its segments; numbers
/// below an object's name (and the items of `tls/certificates`) are list
/// indexes.
fn segments(rest: &str) -> Result<Vec<String>, String> {
    let raw: Vec<&str> = rest.split('/').collect();
    if raw.iter().any(|s| s.is_empty()) {
        return Err(
            "empty segment in the key (two slashes in a row, or one at the end)".to_owned(),
        );
    }
    if raw.len() > MAX_DEPTH {
        return Err("the key has too many segments".to_owned());
    }
    let certificates = raw.len() > 1
        && raw[0].eq_ignore_ascii_case("tls")
        && raw[1].eq_ignore_ascii_case("certificates");
    let first_index = if certificates { 2 } else { 3 };
    let mut out = Vec::with_capacity(raw.len());
    for (i, s) in raw.into_iter().enumerate() {
        if i >= first_index && s.bytes().all(|b| b.is_ascii_digit()) {
            // Bounded: an index is a position in a short list, not a size.
            let n: usize = s.parse().unwrap_or(usize::MAX);
            if n >= 1000 {
                return Err(format!("`{s}`: index too large"));
            }
            out.push(format!("[{n}]"));
        } else {
            out.push(s.to_owned());
        }
    }
    Ok(out)
}

struct Out<'a> {
    provider: &'a str,
    parsed: Parsed,
}

impl Out<'_> {
    fn origin(&self, key: &str) -> Origin {
        Origin::Key {
            provider: self.provider.to_owned(),
            key: key.to_owned(),
        }
    }

    /// A key that belongs to no object, skipped.
    fn ignored(&mut self, key: &str, problem: Problem) {
        let notice = Notice::KeyIgnored {
            problem: Box::new(problem),
        };
        let w = Warning::new(notice, Some(self.origin(key)));
        self.parsed.warnings.push(w);
    }

    /// A value set on a section that expects options below it.
    fn stray_value(&mut self, node: &Node, expects: &str) {
        if let Some(key) = &node.label {
            let message = expects.to_owned();
            self.ignored(key, Problem::BadLabel { message });
        }
    }

    /// A section that does not exist where it is written: one warning, at
    /// the first key below it.
    fn unknown(&mut self, written: &str, node: &Node, known: &[&str]) {
        let problem = Problem::UnknownOption {
            option: written.to_owned(),
            suggestion: suggest(written, known).map(str::to_owned),
        };
        self.ignored(&node.name(), problem);
    }

    fn http(&mut self, node: Node) {
        const HTTP: &[&str] = &["routers", "services", "middlewares", "serversTransports"];
        self.stray_value(
            &node,
            "expects `routers`, `services`, `middlewares` or `serversTransports` below it",
        );
        for (written, kind) in node.children.into_values() {
            match written.to_ascii_lowercase().as_str() {
                "routers" => {
                    self.parsed.dynamic.http.routers =
                        self.objects(kind, ObjectKind::Router, |n| read(n), rule_error);
                }
                "services" => {
                    self.parsed.dynamic.http.services =
                        self.objects(kind, ObjectKind::Service, |n| read(n), |_, _| None);
                }
                "middlewares" => {
                    self.parsed.dynamic.http.middlewares =
                        self.objects(kind, ObjectKind::Middleware, read_middleware, |_, _| None);
                }
                "serverstransports" => {
                    self.parsed.dynamic.http.servers_transports =
                        self.sections::<ServersTransport>(kind, Section::ServersTransport);
                }
                _ => self.unknown(&written, &kind, HTTP),
            }
        }
    }

    fn tcp(&mut self, node: Node) {
        const TCP: &[&str] = &["routers", "services", "middlewares", "serversTransports"];
        self.stray_value(
            &node,
            "expects `routers`, `services`, `middlewares` or `serversTransports` below it",
        );
        for (written, kind) in node.children.into_values() {
            match written.to_ascii_lowercase().as_str() {
                "routers" => {
                    self.parsed.dynamic.tcp.routers =
                        self.objects(kind, ObjectKind::TcpRouter, |n| read(n), tcp_rule_error);
                }
                "services" => {
                    self.parsed.dynamic.tcp.services =
                        self.objects(kind, ObjectKind::TcpService, |n| read(n), |_, _| None);
                }
                "middlewares" => {
                    self.parsed.dynamic.tcp.middlewares =
                        self.objects(kind, ObjectKind::TcpMiddleware, |n| read(n), |_, _| None);
                }
                "serverstransports" => {
                    self.parsed.dynamic.tcp.servers_transports =
                        self.sections::<TcpServersTransport>(kind, Section::TcpServersTransport);
                }
                _ => self.unknown(&written, &kind, TCP),
            }
        }
    }

    fn udp(&mut self, node: Node) {
        const UDP: &[&str] = &["routers", "services"];
        self.stray_value(&node, "expects `routers` or `services` below it");
        for (written, kind) in node.children.into_values() {
            match written.to_ascii_lowercase().as_str() {
                "routers" => {
                    self.parsed.dynamic.udp.routers =
                        self.objects(kind, ObjectKind::UdpRouter, |n| read(n), |_, _| None);
                }
                "services" => {
                    self.parsed.dynamic.udp.services =
                        self.objects(kind, ObjectKind::UdpService, |n| read(n), |_, _| None);
                }
                _ => self.unknown(&written, &kind, UDP),
            }
        }
    }

    fn tls(&mut self, node: Node) {
        const TLS: &[&str] = &["certificates", "options", "stores"];
        self.stray_value(
            &node,
            "expects `certificates`, `options` or `stores` below it",
        );
        for (written, kind) in node.children.into_values() {
            match written.to_ascii_lowercase().as_str() {
                "certificates" => self.certificates(&kind),
                "options" => {
                    self.parsed.dynamic.tls.options =
                        self.sections::<TlsOptions>(kind, Section::TlsOptions);
                }
                "stores" => {
                    self.parsed.dynamic.tls.stores =
                        self.sections::<TlsStore>(kind, Section::TlsStore);
                }
                _ => self.unknown(&written, &kind, TLS),
            }
        }
    }

    /// `tls/certificates/<n>/certFile` and `…/keyFile`: each certificate
    /// on its own.
    fn certificates(&mut self, kind: &Node) {
        self.stray_value(
            kind,
            "expects numbered certificates below it (`certificates/0/certFile`)",
        );
        for (written, item) in kind.children.values() {
            if !written.starts_with('[') {
                let problem = Problem::BadLabel {
                    message: format!(
                        "`{written}`: certificates are numbered (`tls/certificates/0/certFile`)"
                    ),
                };
                self.ignored(&item.name(), problem);
                continue;
            }
            match read::<CertificateFile>(item) {
                Ok(c) => self.parsed.dynamic.tls.certificates.push(c),
                Err(e) => {
                    let key = e.label.clone().unwrap_or_else(|| item.name());
                    let notice = Notice::TlsSkipped {
                        option: "tls.certificates".to_owned(),
                        message: e.message,
                    };
                    let w = Warning::new(notice, Some(self.origin(&key)));
                    self.parsed.warnings.push(w);
                }
            }
        }
    }

    /// Reads each object of one kind on its own; the ones that do not read
    /// are left out and carry their errors, each at its key.
    fn objects<T>(
        &mut self,
        kind: Node,
        object_kind: ObjectKind,
        read_one: impl Fn(&Node) -> Result<T, DeError>,
        also: impl Fn(&Node, &T) -> Option<LabelError>,
    ) -> BTreeMap<String, T> {
        self.stray_value(&kind, "expects object names below it");
        let mut objects = Objects::default();
        // Every error is also in `objects.broken`, by object.
        let mut errors = Vec::new();
        // What each object reads as, kept for those that do not read.
        let read: BTreeMap<String, serde_json::Value> = kind
            .children
            .values()
            .map(|(written, node)| (written.clone(), node.as_json()))
            .collect();
        read_objects_mut(
            without_value(kind),
            &mut objects,
            &mut errors,
            |_, n| read_one(n),
            also,
        );
        // The read kept is this provider's own, of the keys as stored.
        let Objects {
            parsed,
            mut broken,
            labels,
            read: _,
        } = objects;
        let details = details_of(&mut self.parsed.detail, object_kind);
        for (name, keys) in labels {
            let errors = broken
                .remove(&name)
                .unwrap_or_default()
                .into_iter()
                .map(|e| {
                    let object = ObjectRef::new(object_kind, &format!("{name}@{}", self.provider));
                    ConfigError::new(object, e.problem()).with_origin(Origin::Key {
                        provider: self.provider.to_owned(),
                        key: e.label().to_owned(),
                    })
                })
                .collect::<Vec<_>>();
            let read = if errors.is_empty() {
                None
            } else {
                read.get(&name).cloned()
            };
            details.insert(
                name,
                ObjectDetail {
                    keys: Some(StoreKeys {
                        provider: self.provider.to_owned(),
                        keys,
                    }),
                    errors,
                    read,
                    ..ObjectDetail::default()
                },
            );
        }
        parsed
    }

    /// Reads each named section of a kind without an object report of its
    /// own (servers transports, TLS options and stores); one that does not
    /// read is left out with a warning at its key.
    fn sections<T: for<'de> serde::Deserialize<'de>>(
        &mut self,
        kind: Node,
        section: Section,
    ) -> BTreeMap<String, T> {
        self.stray_value(&kind, "expects names below it");
        let mut out = BTreeMap::new();
        for (name, node) in kind.children.into_values() {
            match read::<T>(&node) {
                Ok(value) => {
                    out.insert(name, value);
                }
                Err(e) => {
                    let key = e.label.clone().unwrap_or_else(|| node.name());
                    let problem = LabelError::from_de(e, &key).problem();
                    let notice = Notice::LeftOut {
                        what: section,
                        name,
                        problem: Box::new(problem),
                    };
                    let w = Warning::new(notice, Some(self.origin(&key)));
                    self.parsed.warnings.push(w);
                }
            }
        }
        out
    }
}

/// The node with its own value dropped (reported already as a stray value).
fn without_value(mut node: Node) -> Node {
    node.label = None;
    node.value = None;
    node
}

fn details_of(
    detail: &mut ProviderDetail,
    kind: ObjectKind,
) -> &mut BTreeMap<String, ObjectDetail> {
    match kind {
        ObjectKind::Router => &mut detail.routers,
        ObjectKind::Service => &mut detail.services,
        ObjectKind::Middleware => &mut detail.middlewares,
        ObjectKind::TcpRouter => &mut detail.tcp_routers,
        ObjectKind::TcpService => &mut detail.tcp_services,
        ObjectKind::TcpMiddleware => &mut detail.tcp_middlewares,
        ObjectKind::UdpRouter => &mut detail.udp_routers,
        ObjectKind::UdpService => &mut detail.udp_services,
    }
}
