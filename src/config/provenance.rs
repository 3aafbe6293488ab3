//! Where dynamic objects come from, as providers that know more than a file
//! does (Docker) report it: the containers and labels behind each router,
//! service and middleware, every container seen and why it is or is not
//! routed, and the provider's connection state. Plain data for the API.

use super::problem::ConfigError;
use serde::Serialize;
use std::collections::BTreeMap;

/// One container that contributed to an object.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Source {
    /// The container's full id.
    pub container_id: String,
    /// The container's name, without Docker's leading `/`.
    pub container_name: String,
    /// `com.docker.compose.project`, for compose containers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compose_project: Option<String>,
    /// `com.docker.compose.service`, for compose containers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compose_service: Option<String>,
    /// The label keys that produced the object, as written; empty when the
    /// object is implicit (a container's default router or service).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    /// For a service: the servers this container (or task) adds to it, as
    /// URLs (HTTP) or addresses (TCP, UDP), so that each server can be
    /// traced to the container behind it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<String>,
    /// For the Swarm provider: the service and task behind it
    /// (`containerId` is then the task's id, `containerName` the service's
    /// name, and `composeProject` the stack).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swarm: Option<SwarmTask>,
}

/// A Swarm service and, when the view is one of its tasks, the task: where
/// a server of a Swarm service comes from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SwarmTask {
    /// The service's id.
    pub service_id: String,
    /// The service's name (`stack_web`).
    pub service_name: String,
    /// The task's id; none for a service routed at its virtual IP
    /// (`lbswarm`) or with no task that can take traffic.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// The node the task runs on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_id: Option<String>,
}

/// Where the file provider read one object: the file, the line of its
/// table (or key), and the line of each option under it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileLocation {
    /// The file, as the provider was told to read it.
    pub path: String,
    /// The 1-based line the object starts on.
    pub line: usize,
    /// Lines of the options under the object, by their dotted path in
    /// lower case (`rule`, `tls.certresolver`, `loadbalancer.servers`).
    #[serde(skip)]
    pub options: BTreeMap<String, usize>,
    /// Set while the file is rejected: the object (and its line) are
    /// those of the file's last good version, still in use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_good: Option<LastGood>,
}

/// The last good version of a file that no longer reads, which stays in
/// use until the file is fixed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LastGood {
    /// When that version was read, seconds since the Unix epoch.
    pub read_at: u64,
    /// Since when the file is rejected, seconds since the Unix epoch.
    pub rejected_since: u64,
    /// Why the file is rejected now.
    pub error: super::problem::ProviderError,
    /// The same as one sentence, with the file and line, as the log
    /// writes it.
    pub message: String,
}

impl FileLocation {
    /// The line of `option`, or of the closest enclosing option that has
    /// one, else of the object.
    pub fn line_of(&self, option: Option<&str>) -> usize {
        let mut path = option.unwrap_or_default();
        while !path.is_empty() {
            if let Some(line) = self.options.get(path) {
                return *line;
            }
            path = path.rsplit_once('.').map_or("", |(parent, _)| parent);
        }
        self.line
    }
}

/// The keys of a KV store behind one object (Redis, etcd).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StoreKeys {
    /// The provider that reads the store (`redis`).
    pub provider: String,
    /// The keys, exactly as stored, in order.
    pub keys: Vec<String>,
}

/// What a provider knows about one object beyond its configuration.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectDetail {
    /// The containers behind it, the one whose definition is in use first.
    pub sources: Vec<Source>,
    /// The file and line it is written at (file provider).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<FileLocation>,
    /// The keys it is written in (KV providers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keys: Option<StoreKeys>,
    /// Errors that removed the object from the configuration (a label that
    /// does not parse, a conflict under `conflicts=drop`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<ConfigError>,
    /// Problems that left it in use (a conflict resolved by keeping the
    /// oldest container's definition).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<ConfigError>,
    /// For an object left out because it does not read (a mistyped key):
    /// the values that were read, as written, so that it can be shown as
    /// what it is rather than with defaults.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read: Option<serde_json::Value>,
}

pub use super::problem::NotRouted;

/// One container as the provider last saw it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerRecord {
    /// The container's full id.
    pub id: String,
    /// The container's name, without Docker's leading `/`.
    pub name: String,
    /// `com.docker.compose.project`, for compose containers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compose_project: Option<String>,
    /// `com.docker.compose.service`, for compose containers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compose_service: Option<String>,
    /// Docker's state: `running`, `exited`, `paused`, …
    pub state: String,
    /// Docker's health status, for containers with a health check.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health: Option<String>,
    /// Whether it receives traffic now.
    pub routed: bool,
    /// Why it does not, when it does not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<NotRouted>,
    /// The reason in words, or problems that did not stop it being routed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<String>,
    /// Routers it defines (bare names).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub routers: Vec<String>,
    /// Services it defines (bare names).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub services: Vec<String>,
    /// For the Swarm provider: the service and task it stands for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swarm: Option<SwarmTask>,
    /// It has no label of the provider's prefix: nothing asks for it to be
    /// routed (gangway's own container, a database), so its not being
    /// routed is no problem.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unlabelled: bool,
}

/// Everything a provider reports besides its configuration.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderDetail {
    /// Whether the provider is connected to its source (the Docker daemon).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connected: Option<bool>,
    /// Routers by bare name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub routers: BTreeMap<String, ObjectDetail>,
    /// Services by bare name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub services: BTreeMap<String, ObjectDetail>,
    /// Middlewares by bare name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub middlewares: BTreeMap<String, ObjectDetail>,
    /// TCP routers by bare name.
    #[serde(rename = "tcpRouters", skip_serializing_if = "BTreeMap::is_empty")]
    pub tcp_routers: BTreeMap<String, ObjectDetail>,
    /// TCP services by bare name.
    #[serde(rename = "tcpServices", skip_serializing_if = "BTreeMap::is_empty")]
    pub tcp_services: BTreeMap<String, ObjectDetail>,
    /// TCP middlewares by bare name.
    #[serde(rename = "tcpMiddlewares", skip_serializing_if = "BTreeMap::is_empty")]
    pub tcp_middlewares: BTreeMap<String, ObjectDetail>,
    /// UDP routers by bare name.
    #[serde(rename = "udpRouters", skip_serializing_if = "BTreeMap::is_empty")]
    pub udp_routers: BTreeMap<String, ObjectDetail>,
    /// UDP services by bare name.
    #[serde(rename = "udpServices", skip_serializing_if = "BTreeMap::is_empty")]
    pub udp_services: BTreeMap<String, ObjectDetail>,
    /// Every container seen, routed or not.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub containers: Vec<ContainerRecord>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_routed_displays_as_the_api_names_it() {
        use NotRouted::*;
        for reason in [
            NotEnabled,
            ConstraintNotMet,
            OneOff,
            TcpOrUdpOnly,
            NoPort,
            LabelError,
            NetworkNotFound,
            AmbiguousNetwork,
            NoAddress,
            Stopped,
            Paused,
            Restarting,
            Starting,
            Unhealthy,
            Draining,
            Removed,
            Conflict,
        ] {
            let api = serde_json::to_value(reason).expect("serialises");
            assert_eq!(api.as_str(), Some(reason.to_string().as_str()));
        }
    }
}
