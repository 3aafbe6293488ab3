//! Compose files → the containers they would start, as the Docker provider
//! would see them, and the command line of the service that runs the
//! router (gangway, or Traefik in a file being moved over), so that labels
//! are checked against the static configuration they will meet.
//!
//! What is read: `image`, `command`, `environment`, `labels`,
//! `network_mode`, `networks`, `expose`, `ports`, `container_name` and
//! `deploy.labels` of each service, and the top-level `networks`, after
//! `${VAR}` interpolation (from the environment and the `.env` file beside
//! the first compose file) and YAML merge keys. Several files are one
//! project, later files overriding a service's keys.
//!
//! A file may also be a stack file (`docker stack deploy -c FILE`): each
//! service is then read twice, as the container Docker starts for it (its
//! `labels:`) and as the Swarm service (its `deploy.labels`), each the way
//! its provider would see it.

use crate::config::provenance::SwarmTask;
use crate::provider::docker::container::{
    COMPOSE_PROJECT, COMPOSE_SERVICE, ContainerView, PortView, RunState, STACK_NAMESPACE,
};
use serde_yaml::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Why a compose file cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ComposeError {
    /// The file cannot be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The file is not YAML, or its merge keys do not merge.
    #[error("{path}: {source}")]
    Yaml {
        /// The file.
        path: String,
        /// What the YAML parser said.
        source: serde_yaml::Error,
    },
    /// The file is YAML, but not a compose file gangway can read.
    #[error("{path}: {problem}")]
    Invalid {
        /// The file.
        path: String,
        /// What is wrong.
        problem: ComposeProblem,
    },
}

/// What is wrong in a compose file's content.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ComposeProblem {
    /// The file has no `services:`.
    #[error("no `services` section")]
    NoServices,
    /// A service is not a mapping of its fields.
    #[error("service `{0}` is not a mapping")]
    ServiceNotMapping(String),
    /// A service's `deploy` is not a mapping.
    #[error("service `{0}`: `deploy` must be a mapping")]
    DeployNotMapping(String),
    /// `labels`, `deploy.labels` or `environment` is neither a list of
    /// `KEY=VALUE` nor a mapping.
    #[error("service `{service}`: `{field}` must be a list or a mapping")]
    NotPairs {
        /// The service.
        service: String,
        /// The field, as written (`deploy.labels`).
        field: &'static str,
    },
    /// A `${` is never closed.
    #[error("`{text}`: `${{` without a closing `}}`")]
    Unclosed {
        /// The string it is in.
        text: String,
    },
    /// `${VAR:?message}` or `${VAR?message}` with the variable missing.
    #[error("variable `{name}` is required: {message}")]
    Required {
        /// The variable.
        name: String,
        /// The file's message for it.
        message: String,
    },
    /// `${…}` holding something other than a variable reference.
    #[error("`${{{expr}}}`: not a variable reference")]
    NotAVariable {
        /// What is between the braces.
        expr: String,
    },
}

/// One compose service, as far as routing cares.
#[derive(Clone, Debug, PartialEq)]
pub struct ComposeService {
    /// The service's name in the file.
    pub name: String,
    /// The file that (last) defined it.
    pub file: String,
    /// The image, interpolated.
    pub image: String,
    /// The command as a list of arguments.
    pub command: Vec<String>,
    /// Its environment.
    pub environment: Vec<(String, String)>,
    /// The container Docker would start for it.
    pub view: ContainerView,
    /// The Swarm service `docker stack deploy` would make of it, as the
    /// Swarm provider sees one of its running tasks: `deploy.labels` and
    /// the stack namespace as its labels, named `<stack>_<service>`, on
    /// the stack's networks (or the host's), with no port.
    pub swarm: ContainerView,
    /// Its bind mounts: (the folder or file on this machine, where it
    /// appears in the container), so that files the router reads in its
    /// container can be found here.
    pub binds: Vec<(PathBuf, String)>,
}

impl ComposeService {
    /// Where `path`, as the container sees it, is on this machine: through
    /// the bind mount with the longest target that holds it; None when no
    /// bind mount does (the file is in the image or a named volume).
    pub fn host_path(&self, path: &str) -> Option<PathBuf> {
        let absolute = if path.starts_with('/') {
            path.to_owned()
        } else {
            format!("/{path}")
        };
        self.binds
            .iter()
            .filter_map(|(host, target)| {
                let target = target.trim_end_matches('/');
                let rest = absolute.strip_prefix(target)?;
                (rest.is_empty() || rest.starts_with('/')).then_some((target.len(), host, rest))
            })
            .max_by_key(|(len, _, _)| *len)
            .map(|(_, host, rest)| {
                let rest = rest.trim_start_matches('/');
                if rest.is_empty() {
                    host.clone()
                } else {
                    host.join(rest)
                }
            })
    }
}

/// A compose project read from one or more files.
#[derive(Clone, Debug, PartialEq)]
pub struct Project {
    /// The project name (`name:` in the file, else the first file's folder).
    pub name: String,
    /// Its services, in name order.
    pub services: Vec<ComposeService>,
}

impl Project {
    /// The service that runs the router: the image is gangway's or
    /// Traefik's, or its command configures the Docker or Swarm provider.
    /// Returns it with whether it is Traefik.
    pub fn router(&self) -> Option<(&ComposeService, bool)> {
        let repo = |image: &str| {
            let without_tag = image.split('@').next().unwrap_or(image);
            let last = without_tag.rsplit('/').next().unwrap_or(without_tag);
            last.split(':').next().unwrap_or(last).to_ascii_lowercase()
        };
        self.services.iter().find_map(|s| {
            let r = repo(&s.image);
            let flags = s.command.iter().any(|a| {
                let a = a.to_ascii_lowercase();
                a.starts_with("--providers.docker") || a.starts_with("--providers.swarm")
            });
            match r.as_str() {
                "traefik" => Some((s, true)),
                "gangway" => Some((s, false)),
                _ if flags => Some((s, false)),
                _ => None,
            }
        })
    }
}

/// Reads `files` as one project; `env` is the environment for
/// interpolation (the `.env` file beside the first file adds to it).
pub fn read_project(files: &[PathBuf], env: &[(String, String)]) -> Result<Project, ComposeError> {
    let mut vars: BTreeMap<String, String> = BTreeMap::new();
    if let Some(dir) = files.first().and_then(|f| f.parent())
        && let Ok(text) = std::fs::read_to_string(dir.join(".env"))
    {
        for line in text.lines() {
            let line = line.trim();
            if line.starts_with('#') {
                continue;
            }
            if let Some((k, v)) = line.split_once('=') {
                let v = v.trim().trim_matches('"').trim_matches('\'');
                vars.insert(k.trim().to_owned(), v.to_owned());
            }
        }
    }
    // The shell's environment wins over .env, as in compose.
    vars.extend(env.iter().cloned());

    let mut name = None;
    let mut services: BTreeMap<String, (String, serde_yaml::Mapping)> = BTreeMap::new();
    // Top-level network definitions, by key: a later file's replaces an
    // earlier one's.
    let mut networks = serde_yaml::Mapping::new();
    for file in files {
        let path = file.display().to_string();
        let text = std::fs::read_to_string(file).map_err(|source| ComposeError::Read {
            path: path.clone(),
            source,
        })?;
        let invalid = |problem: ComposeProblem| ComposeError::Invalid {
            path: path.clone(),
            problem,
        };
        let yaml = |source| ComposeError::Yaml {
            path: path.clone(),
            source,
        };
        let mut doc: Value = serde_yaml::from_str(&text).map_err(yaml)?;
        doc.apply_merge().map_err(yaml)?;
        interpolate(&mut doc, &vars).map_err(invalid)?;
        if let Some(n) = doc.get("name").and_then(Value::as_str) {
            name = Some(n.to_owned());
        }
        if let Some(defined) = doc.get("networks").and_then(Value::as_mapping) {
            for (k, v) in defined {
                networks.insert(k.clone(), v.clone());
            }
        }
        let Some(map) = doc.get("services").and_then(Value::as_mapping) else {
            return Err(invalid(ComposeProblem::NoServices));
        };
        for (key, service) in map {
            let Some(key) = key.as_str() else { continue };
            let mut service = service.clone();
            // Anchored fragments in a service may carry merge keys of their own.
            service.apply_merge().map_err(yaml)?;
            let Some(fields) = service.as_mapping() else {
                return Err(invalid(ComposeProblem::ServiceNotMapping(key.to_owned())));
            };
            let entry = services
                .entry(key.to_owned())
                .or_insert_with(|| (path.clone(), serde_yaml::Mapping::new()));
            entry.0.clone_from(&path);
            for (k, v) in fields {
                entry.1.insert(k.clone(), v.clone());
            }
        }
    }
    let name = name.unwrap_or_else(|| {
        files
            .first()
            .and_then(|f| std::fs::canonicalize(f).ok())
            .and_then(|f| f.parent().map(Path::to_path_buf))
            .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "default".to_owned())
    });
    let project = normalize_project(&name);
    let services = services
        .into_iter()
        .map(|(service, (file, fields))| {
            read_service(&project, &service, &file, &fields, &networks)
        })
        .collect::<Result<Vec<_>, ComposeProblem>>()
        .map_err(|problem| ComposeError::Invalid {
            path: files
                .first()
                .map(|f| f.display().to_string())
                .unwrap_or_default(),
            problem,
        })?;
    Ok(Project {
        name: project,
        services,
    })
}

/// Compose's project names: lower case letters, digits, `-` and `_`.
fn normalize_project(name: &str) -> String {
    name.to_ascii_lowercase()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .collect()
}

fn read_service(
    project: &str,
    service: &str,
    file: &str,
    fields: &serde_yaml::Mapping,
    defined_networks: &serde_yaml::Mapping,
) -> Result<ComposeService, ComposeProblem> {
    let get = |k: &str| fields.get(k);
    let image = get("image")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let command = match get("command") {
        Some(Value::String(s)) => split_words(s),
        Some(Value::Sequence(items)) => items.iter().map(scalar).collect(),
        _ => Vec::new(),
    };
    let environment = pairs(get("environment"), service, "environment")?;
    let mut labels: BTreeMap<String, String> = pairs(get("labels"), service, "labels")?
        .into_iter()
        .collect();
    labels.insert(COMPOSE_PROJECT.to_owned(), project.to_owned());
    labels.insert(COMPOSE_SERVICE.to_owned(), service.to_owned());

    let network_mode = get("network_mode")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let mut networks = BTreeMap::new();
    if network_mode.is_empty() {
        let names: Vec<String> = match get("networks") {
            Some(Value::Sequence(items)) => items.iter().map(scalar).collect(),
            Some(Value::Mapping(m)) => m.keys().map(scalar).collect(),
            _ => vec!["default".to_owned()],
        };
        // The address is not known before the container starts; any
        // address stands for it (only its presence matters to the checks).
        // Compose names a network as a stack does: its `name:`, an
        // external one's key, else the key under the project's prefix.
        for n in names {
            networks.insert(
                stack_network(project, &n, defined_networks),
                "192.0.2.1".to_owned(),
            );
        }
    }
    let mut ports: BTreeMap<(u16, String), Vec<(String, u16)>> = BTreeMap::new();
    if let Some(Value::Sequence(items)) = get("expose") {
        for item in items {
            if let Some(key) = port_spec(&scalar(item)) {
                ports.entry(key).or_default();
            }
        }
    }
    if let Some(Value::Sequence(items)) = get("ports") {
        for item in items {
            let target = match item {
                Value::Mapping(m) => m.get("target").map(scalar).map(|t| {
                    let proto = m
                        .get("protocol")
                        .map(scalar)
                        .unwrap_or_else(|| "tcp".to_owned());
                    format!("{t}/{proto}")
                }),
                other => {
                    // `[ip:][host:]container[/proto]`: the container port is last.
                    let text = scalar(other);
                    let (addr, proto) = text.split_once('/').unwrap_or((&text, "tcp"));
                    addr.rsplit(':').next().map(|p| format!("{p}/{proto}"))
                }
            };
            // A range (`8000-8002`) is several ports; its first one stands for it.
            let first = target.map(|t| {
                let (port, proto) = t.split_once('/').unwrap_or((&t, "tcp"));
                format!("{}/{proto}", port.split('-').next().unwrap_or(port))
            });
            if let Some(key) = first.as_deref().and_then(port_spec) {
                ports.entry(key).or_default();
            }
        }
    }
    let name = get("container_name")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| format!("{project}-{service}-1"));
    let view = ContainerView {
        id: format!("{project}-{service}"),
        name,
        created_ns: 0,
        labels,
        state: RunState::Running,
        health: None,
        network_mode,
        networks,
        ports: ports
            .into_keys()
            .map(|(port, proto)| PortView {
                port,
                proto,
                bindings: Vec::new(),
            })
            .collect(),
        finished_ms: None,
        draining: false,
        down_since_ms: None,
        swarm: None,
    };
    let swarm = swarm_view(project, service, fields, defined_networks)?;
    let binds = binds(get("volumes"), file);
    Ok(ComposeService {
        name: service.to_owned(),
        file: file.to_owned(),
        image,
        command,
        environment,
        view,
        swarm,
        binds,
    })
}

/// The bind mounts among a service's `volumes`: the short form
/// `./dir:/in/container[:ro]` (a source that is a path, not a volume's
/// name) and the long form with `type: bind`; sources relative to the
/// compose file's folder.
fn binds(volumes: Option<&Value>, file: &str) -> Vec<(PathBuf, String)> {
    let base = Path::new(file).parent().unwrap_or(Path::new("."));
    let Some(Value::Sequence(items)) = volumes else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|item| match item {
            Value::Mapping(m) => {
                let bind = m.get("type").map(scalar).is_some_and(|t| t == "bind");
                let source = m.get("source").map(scalar)?;
                let target = m.get("target").map(scalar)?;
                bind.then_some((source, target))
            }
            other => {
                let text = scalar(other);
                let mut parts = text.splitn(3, ':');
                let source = parts.next()?.to_owned();
                let target = parts.next()?.to_owned();
                let path = source.starts_with('.') || source.starts_with('/');
                path.then_some((source, target))
            }
        })
        .map(|(source, target)| (base.join(source), target))
        .collect()
}

/// The Swarm service of a stack's `service`, as the Swarm provider sees
/// one of its running tasks. Swarm has no container ports to offer (the
/// port comes from a label), and a task's address is not known before it
/// runs: any address stands for it, as for compose containers.
fn swarm_view(
    stack: &str,
    service: &str,
    fields: &serde_yaml::Mapping,
    networks: &serde_yaml::Mapping,
) -> Result<ContainerView, ComposeProblem> {
    let deploy = fields.get("deploy");
    if deploy.is_some_and(|d| !d.is_mapping() && !d.is_null()) {
        return Err(ComposeProblem::DeployNotMapping(service.to_owned()));
    }
    let mut labels: BTreeMap<String, String> = pairs(
        deploy.and_then(|d| d.get("labels")),
        service,
        "deploy.labels",
    )?
    .into_iter()
    .collect();
    // `docker stack deploy` labels every service with its stack.
    labels.insert(STACK_NAMESPACE.to_owned(), stack.to_owned());
    let keys: Vec<String> = match fields.get("networks") {
        Some(Value::Sequence(items)) => items.iter().map(scalar).collect(),
        Some(Value::Mapping(m)) => m.keys().map(scalar).collect(),
        _ => vec!["default".to_owned()],
    };
    let names: Vec<String> = keys
        .iter()
        .map(|k| stack_network(stack, k, networks))
        .collect();
    let host = names.iter().any(|n| n == "host");
    let networks = if host {
        BTreeMap::from([("host".to_owned(), "192.0.2.1".to_owned())])
    } else {
        names
            .into_iter()
            .map(|n| (n, "192.0.2.1".to_owned()))
            .collect()
    };
    let name = format!("{stack}_{service}");
    // The service stands for its tasks, whose ids are not known yet.
    let task = SwarmTask {
        service_id: name.clone(),
        service_name: name.clone(),
        ..SwarmTask::default()
    };
    Ok(ContainerView {
        id: name.clone(),
        name,
        created_ns: 0,
        labels,
        state: RunState::Running,
        health: None,
        network_mode: if host { "host" } else { "" }.to_owned(),
        networks,
        ports: Vec::new(),
        finished_ms: None,
        draining: false,
        down_since_ms: None,
        swarm: Some(task),
    })
}

/// The name Swarm gives the network a stack service lists as `key`: the
/// `name:` of its top-level definition (an external network's is its key
/// without one), else the key under the stack's prefix. `host` with no
/// definition is the host's network.
fn stack_network(stack: &str, key: &str, networks: &serde_yaml::Mapping) -> String {
    let Some(definition) = networks.get(key).filter(|d| !d.is_null()) else {
        return match key {
            "host" => "host".to_owned(),
            _ => format!("{stack}_{key}"),
        };
    };
    // `external: {name: x}` is the older spelling of `external: true` + `name: x`.
    let external = definition.get("external");
    let name = definition
        .get("name")
        .or_else(|| external.and_then(|e| e.get("name")))
        .map(scalar);
    let is_external = match external {
        Some(Value::Bool(b)) => *b,
        Some(Value::Mapping(_)) => true,
        _ => false,
    };
    match name {
        Some(name) => name,
        None if is_external => key.to_owned(),
        None => format!("{stack}_{key}"),
    }
}

fn port_spec(spec: &str) -> Option<(u16, String)> {
    let (port, proto) = spec.split_once('/').unwrap_or((spec, "tcp"));
    Some((port.trim().parse().ok()?, proto.trim().to_ascii_lowercase()))
}

/// A scalar as text (`80` and `true` as written).
fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Null => String::new(),
        other => serde_yaml::to_string(other)
            .unwrap_or_default()
            .trim()
            .to_owned(),
    }
}

/// `labels` and `environment`: a list of `KEY=VALUE` or a mapping.
fn pairs(
    v: Option<&Value>,
    service: &str,
    field: &'static str,
) -> Result<Vec<(String, String)>, ComposeProblem> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Sequence(items)) => Ok(items
            .iter()
            .map(|i| {
                let text = scalar(i);
                match text.split_once('=') {
                    Some((k, v)) => (k.to_owned(), v.to_owned()),
                    None => (text, String::new()),
                }
            })
            .collect()),
        Some(Value::Mapping(m)) => Ok(m.iter().map(|(k, v)| (scalar(k), scalar(v))).collect()),
        Some(_) => Err(ComposeProblem::NotPairs {
            service: service.to_owned(),
            field,
        }),
    }
}

/// Splits a command string as compose does (shell-like words, quotes kept
/// together, no expansion).
fn split_words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') => {
                if let Some(n) = chars.next() {
                    word.push(n);
                }
            }
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, '\\') => {
                if let Some(n) = chars.next() {
                    word.push(n);
                    in_word = true;
                }
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        out.push(word);
    }
    out
}

/// Compose's interpolation in every string of the document: `$$` is a
/// dollar, `${VAR}`, `$VAR`, `${VAR:-default}` (unset or empty),
/// `${VAR-default}` (unset), `${VAR:?message}` and `${VAR?message}`
/// (an error when missing).
fn interpolate(doc: &mut Value, vars: &BTreeMap<String, String>) -> Result<(), ComposeProblem> {
    match doc {
        Value::String(s) => {
            *s = interpolate_str(s, vars)?;
            Ok(())
        }
        Value::Sequence(items) => items.iter_mut().try_for_each(|i| interpolate(i, vars)),
        Value::Mapping(m) => m.iter_mut().try_for_each(|(_, v)| interpolate(v, vars)),
        Value::Tagged(t) => interpolate(&mut t.value, vars),
        _ => Ok(()),
    }
}

fn interpolate_str(s: &str, vars: &BTreeMap<String, String>) -> Result<String, ComposeProblem> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(r) = after.strip_prefix('$') {
            out.push('$');
            rest = r;
        } else if let Some(body) = after.strip_prefix('{') {
            let Some(end) = closing_brace(body) else {
                return Err(ComposeProblem::Unclosed { text: s.to_owned() });
            };
            out.push_str(&substitute(&body[..end], vars)?);
            rest = &body[end + 1..];
        } else {
            let len = after
                .char_indices()
                .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '_'))
                .map_or(after.len(), |(i, _)| i);
            if len == 0 {
                out.push('$');
            } else {
                out.push_str(vars.get(&after[..len]).map_or("", String::as_str));
            }
            rest = &after[len..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// The `}` closing a `${`, allowing nested `${…}` in the default.
fn closing_brace(body: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in body.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return Some(i),
            '}' => depth -= 1,
            _ => {}
        }
    }
    None
}

fn substitute(expr: &str, vars: &BTreeMap<String, String>) -> Result<String, ComposeProblem> {
    let name_len = expr
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '_'))
        .map_or(expr.len(), |(i, _)| i);
    let (name, op) = expr.split_at(name_len);
    let value = vars.get(name);
    let set_nonempty = value.is_some_and(|v| !v.is_empty());
    let fallback = |default: &str| interpolate_str(default, vars);
    match op {
        "" => Ok(value.cloned().unwrap_or_default()),
        _ if op.starts_with(":-") => match set_nonempty {
            true => Ok(value.cloned().unwrap_or_default()),
            false => fallback(&op[2..]),
        },
        _ if op.starts_with('-') => match value {
            Some(v) => Ok(v.clone()),
            None => fallback(&op[1..]),
        },
        _ if op.starts_with(":?") || op.starts_with('?') => {
            let missing = if op.starts_with(':') {
                !set_nonempty
            } else {
                value.is_none()
            };
            if missing {
                let message = op.trim_start_matches(':').trim_start_matches('?');
                Err(ComposeProblem::Required {
                    name: name.to_owned(),
                    message: message.to_owned(),
                })
            } else {
                Ok(value.cloned().unwrap_or_default())
            }
        }
        _ => Err(ComposeProblem::NotAVariable {
            expr: expr.to_owned(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn interpolation_follows_compose() {
        let v = vars(&[("SET", "x"), ("EMPTY", "")]);
        for (input, want) in [
            ("plain", "plain"),
            ("$$apr1$$salt", "$apr1$salt"),
            ("${SET}", "x"),
            ("$SET/y", "x/y"),
            ("${UNSET:-d}", "d"),
            ("${EMPTY:-d}", "d"),
            ("${EMPTY-d}", ""),
            ("${UNSET-d}", "d"),
            ("${SET:-d}", "x"),
            ("${UNSET:-${SET}}", "x"),
            ("a ${UNSET} b", "a  b"),
            ("Host(`x`)", "Host(`x`)"),
        ] {
            assert_eq!(interpolate_str(input, &v).unwrap(), want, "{input}");
        }
        assert!(interpolate_str("${UNSET:?set it}", &v).is_err());
        for (input, message) in [
            ("${UNSET:?set it}", "variable `UNSET` is required: set it"),
            ("a ${SET", "`a ${SET`: `${` without a closing `}`"),
            ("${SET!}", "`${SET!}`: not a variable reference"),
        ] {
            let e = interpolate_str(input, &v).unwrap_err();
            assert_eq!(e.to_string(), message, "{input}");
        }
        assert!(interpolate_str("${SET", &v).is_err());
    }

    #[test]
    fn commands_split_like_a_shell() {
        assert_eq!(
            split_words(r#"--port=9001 --name "a b" 'c d'"#),
            ["--port=9001", "--name", "a b", "c d"]
        );
    }

    #[test]
    fn services_become_container_views() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("docker-compose.yml");
        std::fs::write(
            &file,
            r#"
name: Shop
x-labels: &labels
  gangway.enable: "true"
services:
  gw:
    image: ${GANGWAY_IMAGE:-gangway:local}
    command: ["--providers.docker", "--entryPoints.web.address=:80"]
  web:
    image: nginx
    expose: ["80", "443/tcp"]
    ports: ["127.0.0.1:8080:8080", {target: 9000}]
    networks: [front, back, proxy, edge]
    labels:
      <<: *labels
      gangway.http.routers.web.rule: Host(`${HOST:-shop.localhost}`)
  api:
    image: api
    network_mode: host
    labels: ["gangway.enable=true"]
    environment: {A: 1}
networks:
  proxy:
    name: web
  edge:
    external: true
"#,
        )
        .unwrap();
        let p = read_project(&[file], &[("HOST".into(), "shop.example".into())]).unwrap();
        assert_eq!(p.name, "shop");
        let (router, traefik) = p.router().unwrap();
        assert_eq!((router.name.as_str(), traefik), ("gw", false));
        assert_eq!(router.image, "gangway:local");
        let web = p.services.iter().find(|s| s.name == "web").unwrap();
        assert_eq!(web.view.labels["gangway.enable"], "true");
        assert_eq!(
            web.view.labels["gangway.http.routers.web.rule"],
            "Host(`shop.example`)"
        );
        assert_eq!(web.view.labels[COMPOSE_PROJECT], "shop");
        let ports: Vec<u16> = web.view.ports.iter().map(|p| p.port).collect();
        assert_eq!(ports, [80, 443, 8080, 9000]);
        assert_eq!(
            web.view.networks.keys().collect::<Vec<_>>(),
            ["edge", "shop_back", "shop_front", "web"],
            "a network's `name:` and an external network's key, as Compose names them"
        );
        let api = p.services.iter().find(|s| s.name == "api").unwrap();
        assert_eq!(api.view.network_mode, "host");
        assert_eq!(api.environment, [("A".to_owned(), "1".to_owned())]);
    }

    #[test]
    fn stack_services_carry_deploy_labels_the_stack_and_its_networks() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("stack.yml");
        std::fs::write(
            &file,
            r#"
name: Shop
services:
  gw:
    image: registry.example/edge:1
    command: --providers.swarm --providers.swarm.labelPrefix=traefik
  web:
    image: nginx
    labels: ["gangway.enable=true"]
    networks: [front, back, shared, named]
    deploy:
      replicas: 2
      labels:
        gangway.enable: "true"
        gangway.http.routers.web.rule: Host(`${HOST:-shop.localhost}`)
  api:
    image: api
    networks:
      hostnet: {}
    deploy:
      labels: ["gangway.http.services.api.loadbalancer.server.port=8080"]
  old:
    image: old
    networks: [legacy]
  bare:
    image: bare
    networks: [host]
networks:
  front:
  back: {driver: overlay}
  shared: {external: true}
  named: {name: custom-name}
  hostnet: {external: true, name: host}
  legacy: {external: {name: outside}}
"#,
        )
        .unwrap();
        let p = read_project(&[file], &[("HOST".into(), "shop.example".into())]).unwrap();
        let (router, _) = p
            .router()
            .expect("a --providers.swarm command runs the router");
        assert_eq!(router.name, "gw");
        let service = |name: &str| &p.services.iter().find(|s| s.name == name).unwrap().swarm;

        let web = service("web");
        assert_eq!(
            (web.id.as_str(), web.name.as_str()),
            ("shop_web", "shop_web")
        );
        let labels: Vec<(&str, &str)> = web
            .labels
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            labels,
            [
                (STACK_NAMESPACE, "shop"),
                ("gangway.enable", "true"),
                ("gangway.http.routers.web.rule", "Host(`shop.example`)"),
            ],
            "deploy.labels, interpolated, and the stack; not the container's labels"
        );
        assert_eq!(
            web.networks.keys().collect::<Vec<_>>(),
            ["custom-name", "shared", "shop_back", "shop_front"]
        );
        assert!(web.ports.is_empty(), "Swarm gives no port to pick");
        assert_eq!(web.network_mode, "");

        let api = service("api");
        assert_eq!(api.network_mode, "host", "an external network named host");
        assert_eq!(
            api.labels["gangway.http.services.api.loadbalancer.server.port"],
            "8080"
        );
        assert_eq!(service("bare").network_mode, "host", "`host` itself");
        assert_eq!(
            service("old").networks.keys().collect::<Vec<_>>(),
            ["outside"]
        );
        let gw = service("gw");
        assert_eq!(
            gw.networks.keys().collect::<Vec<_>>(),
            ["shop_default"],
            "no networks: the stack's default one"
        );
        assert_eq!(gw.labels.len(), 1, "only the stack: {:?}", gw.labels);
    }

    #[test]
    fn deploy_that_is_no_mapping_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("stack.yml");
        std::fs::write(&file, "services:\n  web:\n    image: x\n    deploy: [1]\n").unwrap();
        let e = read_project(&[file], &[]).unwrap_err();
        assert!(e.to_string().contains("`deploy` must be a mapping"), "{e}");
    }
}
