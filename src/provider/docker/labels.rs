//! Traefik v3's label grammar under a prefix: labels in, typed routers,
//! services and middlewares out, each object on its own so that a label
//! that does not parse disables only the object it belongs to. Pure.

pub(crate) mod tree;

#[cfg(test)]
mod tests;

use crate::config::dynamic::tcp::{TcpMiddleware, TcpRouter, TcpService};
use crate::config::dynamic::udp::{UdpRouter, UdpService};
use crate::config::dynamic::{GeneratedCert, Middleware, Router, Service};
use crate::config::problem::Problem;
use serde::Deserialize;
use std::collections::BTreeMap;
pub use tree::suggest;
use tree::{DeError, MAX_DEPTH, Node, read, read_middleware};

/// A label that does not fit the grammar. Each names the label as written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LabelError {
    /// An option name that does not exist where it is written.
    #[error("label `{label}`: unknown option `{option}`{}", hint(suggestion.as_deref()))]
    UnknownOption {
        /// The label.
        label: String,
        /// The option as written.
        option: String,
        /// The closest option that exists there, if one is close.
        suggestion: Option<String>,
    },
    /// A value or key that does not parse.
    #[error("label `{label}`: {message}")]
    Invalid {
        /// The label.
        label: String,
        /// What is wrong.
        message: String,
    },
    /// A router's rule that does not parse, found while the router is left
    /// out for other labels (a router without other problems has its rule
    /// checked when the configuration is compiled).
    #[error("label `{label}`: rule `{rule}`: {error}")]
    Rule {
        /// The label.
        label: String,
        /// The rule as written.
        rule: String,
        /// The rule parser's error, with its position.
        error: String,
        /// The 1-based character column in `rule` the error points at.
        column: usize,
    },
    /// A part of Traefik's grammar that gangway does not take from labels.
    #[error("label `{label}`: {message}")]
    Unsupported {
        /// The label.
        label: String,
        /// What is not supported, and what to do instead.
        message: String,
    },
    /// A label under the prefix outside every section either reads
    /// (`traefik.constraint-label=…`, v1's `traefik.frontend.*`): Traefik
    /// ignores it, and so does gangway.
    #[error("label `{label}`: `{option}` is not read (only {}); Traefik ignores it too", TOP.join(", "))]
    NotRead {
        /// The label.
        label: String,
        /// The first segment after the prefix, as written.
        option: String,
    },
}

/// The first segments after the prefix that mean something.
const TOP: &[&str] = &["enable", "docker", "swarm", "http", "tcp", "udp", "tls"];

fn hint(suggestion: Option<&str>) -> String {
    suggestion
        .map(|s| format!(" (did you mean `{s}`?)"))
        .unwrap_or_default()
}

impl LabelError {
    /// The label the error is about.
    pub fn label(&self) -> &str {
        match self {
            LabelError::UnknownOption { label, .. }
            | LabelError::Invalid { label, .. }
            | LabelError::Rule { label, .. }
            | LabelError::Unsupported { label, .. }
            | LabelError::NotRead { label, .. } => label,
        }
    }

    /// The problem, without its label: the label is the place.
    pub fn problem(&self) -> Problem {
        match self {
            LabelError::UnknownOption {
                option, suggestion, ..
            } => Problem::UnknownOption {
                option: option.clone(),
                suggestion: suggestion.clone(),
            },
            LabelError::Invalid { message, .. } => Problem::BadLabel {
                message: message.clone(),
            },
            LabelError::Rule {
                rule,
                error,
                column,
                ..
            } => Problem::RuleSyntax {
                rule: rule.clone(),
                error: error.clone(),
                column: *column,
            },
            LabelError::Unsupported { message, .. } => Problem::Unsupported {
                message: message.clone(),
            },
            LabelError::NotRead { option, .. } => Problem::LabelNotRead {
                option: option.clone(),
                read: TOP,
            },
        }
    }

    /// Whether both are the same unknown option (below the same object).
    fn same_unknown_option(&self, other: &LabelError) -> bool {
        matches!(
            (self, other),
            (
                LabelError::UnknownOption { option: a, .. },
                LabelError::UnknownOption { option: b, .. },
            ) if a.eq_ignore_ascii_case(b)
        )
    }

    pub(crate) fn from_de(e: DeError, fallback: &str) -> Self {
        let label = e.label.unwrap_or_else(|| fallback.to_owned());
        match e.unknown {
            Some((option, suggestion)) => LabelError::UnknownOption {
                label,
                option,
                suggestion,
            },
            None => LabelError::Invalid {
                label,
                message: e.message,
            },
        }
    }
}

/// `<prefix>.http.services.<name>.loadbalancer.server.*`: the container's
/// own server of a service, which Traefik's labels describe by port and
/// scheme instead of by URL.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct ServerLabels {
    /// The port inside the container (default: its only exposed port).
    pub port: Option<u16>,
    /// `http` (default) or `h2c`.
    pub scheme: Option<String>,
    /// The whole URL; excludes `port` and `scheme`.
    pub url: Option<String>,
    /// Weight of this server.
    pub weight: Option<u32>,
    /// Keep the URL's path as a prefix.
    pub preserve_path: Option<bool>,
}

/// `<prefix>.tcp.services.<name>.loadbalancer.server.*`: the container's
/// own server of a TCP service.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct TcpServerLabels {
    /// The port inside the container (default: its only exposed TCP port).
    pub port: Option<u16>,
    /// Speak TLS to it, with the service's servers transport's TLS settings.
    pub tls: Option<bool>,
}

/// Objects of one kind found in one container's labels.
#[derive(Clone, Debug, PartialEq)]
pub struct Objects<T> {
    /// The objects that parsed, by name as written.
    pub parsed: BTreeMap<String, T>,
    /// Objects that did not parse, by name, with why.
    pub broken: BTreeMap<String, Vec<LabelError>>,
    /// The labels behind each object (parsed or broken), as written.
    pub labels: BTreeMap<String, Vec<String>>,
    /// What each broken object's labels read as (option names and values
    /// as written), so that it can be shown as what it is.
    pub read: BTreeMap<String, serde_json::Value>,
}

impl<T> Default for Objects<T> {
    fn default() -> Self {
        Objects {
            parsed: BTreeMap::new(),
            broken: BTreeMap::new(),
            labels: BTreeMap::new(),
            read: BTreeMap::new(),
        }
    }
}

impl<T> Objects<T> {
    /// Every name defined, parsed or not.
    pub fn names(&self) -> impl Iterator<Item = &String> {
        self.labels.keys()
    }

    /// How many names are defined, parsed or not.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// Whether no object of this kind is defined.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }
}

impl<T: Clone> Objects<T> {
    /// Each object that parsed, by name, with the labels behind it.
    pub fn with_labels(&self) -> impl Iterator<Item = (String, T, Vec<String>)> + '_ {
        self.parsed.iter().map(|(name, object)| {
            let labels = self.labels.get(name).cloned().unwrap_or_default();
            (name.clone(), object.clone(), labels)
        })
    }
}

/// What one container's labels say.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ContainerLabels {
    /// `<prefix>.enable`.
    pub enable: Option<bool>,
    /// `<prefix>.docker.network`.
    pub network: Option<String>,
    /// `<prefix>.docker.allownonrunning`: keep the routers while the
    /// container is not running, for as long as it exists.
    pub allow_non_running: bool,
    /// `<prefix>.swarm.lbswarm`: send to the Swarm service's virtual IP
    /// and let Swarm balance, rather than to each task.
    pub lb_swarm: bool,
    /// HTTP routers.
    pub routers: Objects<Router>,
    /// HTTP services, without the container's own server.
    pub services: Objects<Service>,
    /// The container's server settings per service that gives any.
    pub servers: BTreeMap<String, ServerLabels>,
    /// HTTP middlewares.
    pub middlewares: Objects<Middleware>,
    /// TCP routers.
    pub tcp_routers: Objects<TcpRouter>,
    /// TCP services, without the container's own server.
    pub tcp_services: Objects<TcpService>,
    /// The container's server settings per TCP service that gives any.
    pub tcp_servers: BTreeMap<String, TcpServerLabels>,
    /// TCP middlewares.
    pub tcp_middlewares: Objects<TcpMiddleware>,
    /// UDP routers.
    pub udp_routers: Objects<UdpRouter>,
    /// UDP services, without the container's own server.
    pub udp_services: Objects<UdpService>,
    /// The container's port per UDP service that gives one.
    pub udp_ports: BTreeMap<String, u16>,
    /// `<prefix>.tls.stores.default.defaultgeneratedcert`: the default
    /// certificate ordered from a resolver, the one TLS setting Traefik
    /// reads from labels.
    pub generated_cert: Option<GeneratedCert>,
    /// Every error, the ones that broke an object included.
    pub errors: Vec<LabelError>,
    /// Labels under the prefix that neither Traefik nor gangway reads
    /// ([`LabelError::NotRead`]): not errors, said by `gangway check`.
    pub ignored: Vec<LabelError>,
}

/// Object names cannot hold `@` (it separates the provider) and must be
/// something.
fn check_name(name: &str, label: &str) -> Result<(), LabelError> {
    if name.contains('@') {
        return Err(LabelError::Invalid {
            label: label.to_owned(),
            message: format!(
                "the name `{name}` contains `@`, which separates a name from its provider"
            ),
        });
    }
    Ok(())
}

/// Splits `tls.domains[0].main` into `tls`, `domains`, `[0]`, `main`.
fn segments(rest: &str, label: &str) -> Result<Vec<String>, LabelError> {
    let invalid = |message: String| LabelError::Invalid {
        label: label.to_owned(),
        message,
    };
    let mut out = Vec::new();
    for part in rest.split('.') {
        if part.is_empty() {
            return Err(invalid(
                "empty segment in the key (two dots in a row, or a dot at an end)".to_owned(),
            ));
        }
        match part.find('[') {
            None if part.contains(']') => {
                return Err(invalid(format!("`{part}`: `]` without `[`")));
            }
            None => out.push(part.to_owned()),
            Some(open) => {
                let (name, index) = part.split_at(open);
                let digits = index
                    .strip_prefix('[')
                    .and_then(|s| s.strip_suffix(']'))
                    .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()));
                let Some(digits) = digits.filter(|_| !name.is_empty()) else {
                    return Err(invalid(format!("`{part}`: an index is written `name[0]`")));
                };
                // Bounded: an index is a position in a short list, not a size.
                let n: usize = digits.parse().unwrap_or(usize::MAX);
                if n >= 1000 {
                    return Err(invalid(format!("`{part}`: index too large")));
                }
                out.push(name.to_owned());
                out.push(format!("[{n}]"));
            }
        }
    }
    if out.len() > MAX_DEPTH {
        return Err(invalid("the key has too many segments".to_owned()));
    }
    Ok(out)
}

/// Reads the labels under `prefix` (`gangway`, `traefik`; matched without
/// regard to case, as every option name is). Labels of other prefixes are
/// ignored.
pub fn parse_labels(prefix: &str, labels: &BTreeMap<String, String>) -> ContainerLabels {
    let mut out = ContainerLabels::default();
    let mut root = Node::root(prefix);
    for (key, value) in labels {
        let Some(rest) = key
            .get(..prefix.len())
            .filter(|p| p.eq_ignore_ascii_case(prefix))
            .and_then(|_| key.get(prefix.len()..))
            .and_then(|r| r.strip_prefix('.'))
        else {
            continue;
        };
        let segs = match segments(rest, key) {
            Ok(s) => s,
            Err(e) => {
                out.errors.push(e);
                continue;
            }
        };
        let mut node = &mut root;
        for s in &segs {
            node = node.child_mut(s);
        }
        match &node.label {
            Some(first) => out.errors.push(LabelError::Invalid {
                label: key.clone(),
                message: format!("the same option is also set by `{first}`; that one is used"),
            }),
            None => {
                node.label = Some(key.clone());
                node.value = Some(value.clone());
            }
        }
    }

    let children: Vec<(String, Node)> = std::mem::take(&mut root.children).into_values().collect();
    for (written, node) in children {
        match written.to_ascii_lowercase().as_str() {
            "enable" => match read::<bool>(&node) {
                Ok(b) => out.enable = Some(b),
                Err(e) => out.errors.push(LabelError::from_de(e, &node.name())),
            },
            "docker" => read_engine(node, &mut out, Engine::Docker),
            "swarm" => read_engine(node, &mut out, Engine::Swarm),
            "http" => read_http(node, &mut out),
            "tcp" => read_tcp(node, &mut out),
            // gangway's own sleep labels (`crate::sleep::spec`), read apart.
            "sleep" if prefix.eq_ignore_ascii_case("gangway") => {}
            "udp" => read_udp(node, &mut out),
            "tls" => read_tls(node, &mut out),
            // Traefik reads only these sections of its labels and passes
            // over the rest; a near miss of one is still a typo.
            _ => match suggest(&written, TOP) {
                Some(near) => out.errors.push(LabelError::UnknownOption {
                    label: node.label.clone().unwrap_or_else(|| first_label(&node)),
                    option: written.clone(),
                    suggestion: Some(near.to_owned()),
                }),
                None => {
                    let mut labels = Vec::new();
                    node.labels(&mut labels);
                    out.ignored
                        .extend(labels.into_iter().map(|label| LabelError::NotRead {
                            label,
                            option: written.clone(),
                        }));
                }
            },
        }
    }
    out
}

/// The first label at or below a node, to name it in a message.
fn first_label(node: &Node) -> String {
    node.name()
}

/// Whose options a `<prefix>.docker.*` or `<prefix>.swarm.*` label sets.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Engine {
    Docker,
    Swarm,
}

fn read_engine(mut node: Node, out: &mut ContainerLabels, engine: Engine) {
    let (options, expects): (&[&str], _) = match engine {
        Engine::Docker => (
            &["network", "allownonrunning"],
            "expects `network` or `allownonrunning` below it",
        ),
        Engine::Swarm => (
            &["network", "lbswarm"],
            "expects `network` or `lbswarm` below it",
        ),
    };
    if let Some(n) = node.take_child("network") {
        match read::<String>(&n) {
            Ok(v) => out.network = Some(v),
            Err(e) => out.errors.push(LabelError::from_de(e, &n.name())),
        }
    }
    let flag = options[1];
    if let Some(n) = node.take_child(flag) {
        match read::<bool>(&n) {
            Ok(v) if engine == Engine::Docker => out.allow_non_running = v,
            Ok(v) => out.lb_swarm = v,
            Err(e) => out.errors.push(LabelError::from_de(e, &n.name())),
        }
    }
    if node.value.is_some() {
        out.errors.push(LabelError::Invalid {
            label: node.name(),
            message: expects.to_owned(),
        });
    }
    for (written, child) in node.children.into_values() {
        out.errors.push(LabelError::UnknownOption {
            label: first_label(&child),
            option: written.clone(),
            suggestion: suggest(&written, options).map(str::to_owned),
        });
    }
}

fn read_http(node: Node, out: &mut ContainerLabels) {
    const HTTP: &[&str] = &["routers", "services", "middlewares"];
    if node.value.is_some() {
        out.errors.push(LabelError::Invalid {
            label: node.name(),
            message: "expects `routers`, `services` or `middlewares` below it".to_owned(),
        });
    }
    for (written, kind) in node.children.into_values() {
        match written.to_ascii_lowercase().as_str() {
            "routers" => {
                let mut refused = Vec::new();
                read_objects_mut(
                    kind,
                    &mut out.routers,
                    &mut out.errors,
                    |_, n| {
                        // Traefik reads `parentRefs` from files and KV
                        // stores only: a container cannot hang its router
                        // below another one's middlewares.
                        if let Some(refs) = n.take_child("parentrefs") {
                            let mut labels = Vec::new();
                            refs.labels(&mut labels);
                            refused.extend(labels.into_iter().map(|label| {
                                LabelError::Unsupported {
                                    label,
                                    message: "`parentRefs` (multi-layer routing) is not read from labels, as in Traefik; define the child routers with the file provider".to_owned(),
                                }
                            }));
                        }
                        read::<Router>(n)
                    },
                    rule_error,
                );
                out.errors.extend(refused);
            }
            "services" => {
                let mut servers = BTreeMap::new();
                read_objects_mut(
                    kind,
                    &mut out.services,
                    &mut out.errors,
                    |name, n| {
                        let server = take_server(n)?;
                        let service = read::<Service>(n)?;
                        if let Some(server) = server {
                            servers.insert(name.to_owned(), server);
                        }
                        Ok(service)
                    },
                    |_, _| None,
                );
                out.servers = servers;
            }
            "middlewares" => {
                read_objects(kind, &mut out.middlewares, &mut out.errors, read_middleware)
            }
            "serverstransports" => {
                let mut keys = Vec::new();
                kind.labels(&mut keys);
                for label in keys {
                    out.errors.push(LabelError::Unsupported {
                        label,
                        message: "servers transports cannot be set from labels; use the file provider and refer to it as `name@file`".to_owned(),
                    });
                }
            }
            _ => out.errors.push(LabelError::UnknownOption {
                label: first_label(&kind),
                option: written.clone(),
                suggestion: suggest(&written, HTTP).map(str::to_owned),
            }),
        }
    }
}

fn read_tcp(node: Node, out: &mut ContainerLabels) {
    const TCP: &[&str] = &["routers", "services", "middlewares"];
    if node.value.is_some() {
        out.errors.push(LabelError::Invalid {
            label: node.name(),
            message: "expects `routers`, `services` or `middlewares` below it".to_owned(),
        });
    }
    for (written, kind) in node.children.into_values() {
        match written.to_ascii_lowercase().as_str() {
            "routers" => read_objects_mut(
                kind,
                &mut out.tcp_routers,
                &mut out.errors,
                |_, n| read::<TcpRouter>(n),
                tcp_rule_error,
            ),
            "services" => {
                let mut servers = BTreeMap::new();
                read_objects_mut(
                    kind,
                    &mut out.tcp_services,
                    &mut out.errors,
                    |name, n| {
                        let server = match n.children.get_mut("loadbalancer") {
                            Some((_, lb)) => match lb.take_child("server") {
                                Some(server) => Some(read::<TcpServerLabels>(&server)?),
                                None => None,
                            },
                            None => None,
                        };
                        let service = read::<TcpService>(n)?;
                        if let Some(server) = server {
                            servers.insert(name.to_owned(), server);
                        }
                        Ok(service)
                    },
                    |_, _| None,
                );
                out.tcp_servers = servers;
            }
            "middlewares" => read_objects(kind, &mut out.tcp_middlewares, &mut out.errors, |n| {
                read::<TcpMiddleware>(n)
            }),
            _ => out.errors.push(LabelError::UnknownOption {
                label: first_label(&kind),
                option: written.clone(),
                suggestion: suggest(&written, TCP).map(str::to_owned),
            }),
        }
    }
}

/// `loadbalancer.server.*` of a UDP service: only its port.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
struct UdpServerLabels {
    port: Option<u16>,
}

/// `<prefix>.tls`: as in Traefik, only the default store's generated
/// certificate is read from labels; TLS options, certificates and other
/// stores belong to the file provider.
fn read_tls(mut node: Node, out: &mut ContainerLabels) {
    let mut stores = node.take_child("stores");
    let mut default = stores.as_mut().and_then(|s| s.take_child("default"));
    if let Some(generated) = default
        .as_mut()
        .and_then(|d| d.take_child("defaultgeneratedcert"))
    {
        match read::<GeneratedCert>(&generated) {
            Ok(g) => out.generated_cert = Some(g),
            Err(e) => out.errors.push(LabelError::from_de(e, &generated.name())),
        }
    }
    let mut rest = Vec::new();
    for n in [Some(&node), stores.as_ref(), default.as_ref()]
        .into_iter()
        .flatten()
    {
        n.labels(&mut rest);
    }
    for label in rest {
        out.errors.push(LabelError::Unsupported {
            label,
            message: "of TLS settings, labels give only `tls.stores.default.defaultGeneratedCert`; options, certificates and other stores come from the file provider".to_owned(),
        });
    }
}

fn read_udp(node: Node, out: &mut ContainerLabels) {
    const UDP: &[&str] = &["routers", "services"];
    if node.value.is_some() {
        out.errors.push(LabelError::Invalid {
            label: node.name(),
            message: "expects `routers` or `services` below it".to_owned(),
        });
    }
    for (written, kind) in node.children.into_values() {
        match written.to_ascii_lowercase().as_str() {
            "routers" => read_objects(kind, &mut out.udp_routers, &mut out.errors, |n| {
                read::<UdpRouter>(n)
            }),
            "services" => {
                let mut ports = BTreeMap::new();
                read_objects_mut(
                    kind,
                    &mut out.udp_services,
                    &mut out.errors,
                    |name, n| {
                        let server = match n.children.get_mut("loadbalancer") {
                            Some((_, lb)) => match lb.take_child("server") {
                                Some(server) => Some(read::<UdpServerLabels>(&server)?),
                                None => None,
                            },
                            None => None,
                        };
                        let service = read::<UdpService>(n)?;
                        if let Some(port) = server.and_then(|s| s.port) {
                            ports.insert(name.to_owned(), port);
                        }
                        Ok(service)
                    },
                    |_, _| None,
                );
                out.udp_ports = ports;
            }
            _ => out.errors.push(LabelError::UnknownOption {
                label: first_label(&kind),
                option: written.clone(),
                suggestion: suggest(&written, UDP).map(str::to_owned),
            }),
        }
    }
}

/// The syntax error of a TCP router's rule, with the label it is written in.
pub(crate) fn tcp_rule_error(node: &Node, router: &TcpRouter) -> Option<LabelError> {
    let e = crate::rule::parse_tcp_rule(&router.rule).err()?;
    Some(LabelError::Rule {
        label: node
            .child("rule")
            .and_then(|n| n.label.clone())
            .unwrap_or_else(|| first_label(node)),
        rule: router.rule.clone(),
        error: e.to_string(),
        column: e.position,
    })
}

/// Takes `loadbalancer.server` out of a service's node and reads it.
fn take_server(service: &mut Node) -> Result<Option<ServerLabels>, DeError> {
    let Some((_, lb)) = service.children.get_mut("loadbalancer") else {
        return Ok(None);
    };
    let Some(server) = lb.take_child("server") else {
        return Ok(None);
    };
    let labels: ServerLabels = read(&server)?;
    if labels.url.is_some() && (labels.port.is_some() || labels.scheme.is_some()) {
        return Err(DeError {
            label: server.child("url").map(|n| n.name()),
            message: "`server.url` cannot be combined with `server.port` or `server.scheme`"
                .to_owned(),
            unknown: None,
        });
    }
    Ok(Some(labels))
}

fn read_objects<T>(
    kind: Node,
    into: &mut Objects<T>,
    errors: &mut Vec<LabelError>,
    read_one: impl Fn(&Node) -> Result<T, DeError>,
) {
    read_objects_mut(kind, into, errors, |_, n| read_one(n), |_, _| None);
}

/// The syntax error of a router's rule, with the label it is written in.
pub(crate) fn rule_error(node: &Node, router: &Router) -> Option<LabelError> {
    // A rule nobody wrote is not a rule error: the provider's defaultRule
    // fills it in, and a misspelt `rule` key has its own "did you mean".
    let written = node.child("rule")?;
    // The static default syntax is not known here: compile, which knows
    // it, reports a rule that only one syntax reads.
    let e =
        crate::rule::parse_rule_as_written(&router.rule, router.rule_syntax.as_deref()).err()?;
    Some(LabelError::Rule {
        label: written.label.clone().unwrap_or_else(|| first_label(node)),
        rule: router.rule.clone(),
        error: e.to_string(),
        column: e.position,
    })
}

pub(crate) fn read_objects_mut<T>(
    kind: Node,
    into: &mut Objects<T>,
    errors: &mut Vec<LabelError>,
    mut read_one: impl FnMut(&str, &mut Node) -> Result<T, DeError>,
    also: impl Fn(&Node, &T) -> Option<LabelError>,
) {
    if kind.value.is_some() {
        errors.push(LabelError::Invalid {
            label: kind.name(),
            message: "expects object names below it".to_owned(),
        });
    }
    for (name, mut node) in kind.children.into_values() {
        let mut keys = Vec::new();
        node.labels(&mut keys);
        let tries = keys.len() + 1;
        into.labels.insert(name.clone(), keys);
        let fallback = first_label(&node);
        if let Err(e) = check_name(&name, &fallback) {
            errors.push(e.clone());
            into.broken.entry(name).or_default().push(e);
            continue;
        }
        let mut found: Vec<LabelError> = Vec::new();
        // Before any label is taken out: what the object's labels say.
        let written = node.as_json();
        // Each read stops at its first problem; the label at fault is
        // taken out and the object read again, so that it reports every
        // problem, not only the first. A label that cannot be taken out
        // ends the search.
        for _ in 0..tries {
            match read_one(&name, &mut node) {
                Ok(object) if found.is_empty() => {
                    into.parsed.insert(name.clone(), object);
                    break;
                }
                // Left out for its other labels, the object still reports
                // what compile would have found in the labels that read.
                Ok(object) => {
                    found.extend(also(&node, &object));
                    break;
                }
                Err(e) => {
                    let pruned = e.label.as_deref().is_some_and(|l| node.prune(l));
                    // Past the first, a problem not on a label the user
                    // wrote comes from the labels taken out, not from them.
                    if !pruned && !found.is_empty() {
                        break;
                    }
                    let e = LabelError::from_de(e, &fallback);
                    // An unknown option with several labels below it is
                    // one problem.
                    if !found.iter().any(|f| f.same_unknown_option(&e)) {
                        found.push(e);
                    }
                    if !pruned || node.is_empty() {
                        break;
                    }
                }
            }
        }
        if !found.is_empty() {
            errors.extend(found.iter().cloned());
            into.read.insert(name.clone(), written);
            into.broken.entry(name).or_default().extend(found);
        }
    }
}
