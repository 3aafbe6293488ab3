//! What `gangway check` finds beside the objects' own problems, typed:
//! each variant is one error of the room that found it, or one situation
//! `check` itself sees, and renders as the message `gangway check` prints.

use super::compose::ComposeError;
use crate::config::problem::{Notice, Problem, ProviderError};
use crate::config::static_config::StaticConfigError;

/// A problem no one object has: the compose project, the static
/// configuration, the Docker daemon, a provider's files or options.
#[derive(Debug, thiserror::Error)]
pub enum CheckProblem {
    /// The compose files cannot be read.
    #[error(transparent)]
    Compose(#[from] ComposeError),
    /// The static configuration does not load.
    #[error(transparent)]
    StaticConfig(#[from] StaticConfigError),
    /// The router's compose service runs gangway with flags or an
    /// environment that do not load.
    #[error("its command is not a static configuration gangway accepts: {0}")]
    RouterCommand(StaticConfigError),
    /// The Docker provider's options are wrong.
    #[error(transparent)]
    Docker(#[from] crate::provider::docker::DockerError),
    /// The Swarm provider's options are wrong.
    #[error(transparent)]
    Swarm(#[from] crate::provider::swarm::SwarmError),
    /// A provider's options are wrong.
    #[error(transparent)]
    ProviderOptions(#[from] crate::provider::OptionsError),
    /// The Docker daemon does not answer (`--docker`).
    #[error("cannot reach the Docker daemon: {0}")]
    DockerUnreachable(bollard::errors::Error),
    /// The Docker daemon does not list its containers (`--docker`).
    #[error("cannot list containers: {0}")]
    ListContainers(bollard::errors::Error),
    /// A certificate resolver cannot be used.
    #[error(transparent)]
    Acme(#[from] crate::acme::AcmeError),
    /// A certificate resolver's shared storage cannot be used.
    #[error(transparent)]
    SharedStorage(#[from] crate::acme::shared::SharedError),
    /// A DNS-01 provider cannot be set up.
    #[error(transparent)]
    Dns(#[from] crate::acme::dns::DnsError),
    /// A Traefik option accepted without being implemented.
    #[error("{0}")]
    Accepted(crate::config::static_config::AcceptedOption),
    /// Something that loads, but probably not as meant.
    #[error(transparent)]
    Notice(#[from] Notice),
    /// A Traefik ACME option accepted and not honoured.
    #[error(transparent)]
    AcmeUnsupported(crate::acme::Unsupported),
    /// A resolver's Traefik `acme.json`, and what gangway reuses from it.
    #[error(
        "certificatesResolvers.{resolver}.acme.storage: `{}` is read in Traefik's format: {certificates} certificate(s) will be served without a new order{}{}",
        path.display(),
        if names.is_empty() { String::new() } else { format!(" ({names})") },
        if *traefik_account { "; Traefik's account is kept in the file, and gangway registers its own P-256 account beside it" } else { "" }
    )]
    AcmeJsonReused {
        /// The resolver.
        resolver: String,
        /// The file.
        path: std::path::PathBuf,
        /// Certificates with a chain and a key.
        certificates: usize,
        /// Their main names.
        names: String,
        /// Whether the file holds Traefik's account.
        traefik_account: bool,
    },
    /// A file of the file provider cannot be read (its place is the
    /// finding's source).
    #[error("{}", .0.what())]
    File(ProviderError),
    /// `api.insecure` serves the API and dashboard on an entry point that
    /// listens on every interface: anyone who reaches the port reads them.
    #[error(
        "`api.insecure` serves the API and dashboard on entry point `{entry_point}` at `{address}`, every interface: anyone who can reach that port reads the whole configuration. Use `--entryPoints.{entry_point}.address=127.0.0.1:{port}` to keep it to this host, or publish `api@internal` through a router with authentication"
    )]
    ApiOnEveryInterface {
        /// The internal entry point.
        entry_point: String,
        /// Its address, as configured or by default.
        address: String,
        /// Its port.
        port: u16,
    },
    /// Compose labels are checked with neither label provider on.
    #[error(
        "the Docker provider is off (no --providers.docker): labels are checked as if it were on"
    )]
    DockerOff,
    /// The file provider's path is in the router's container and no bind
    /// mount brings it from this machine.
    #[error(
        "the file provider reads `{path}` in the container, which no bind mount of this service brings from this machine: its dynamic configuration is not checked"
    )]
    NotMounted {
        /// The path in the container.
        path: String,
    },
    /// `exposedByDefault` is not given: labelled containers (or Swarm
    /// services) are routed as in Traefik, bare ones are not.
    #[error("{0}")]
    ExposedByLabels(crate::provider::docker::ExposedByLabels),
    /// A container (or Swarm service) with routing labels that is not
    /// routed, for want of `enable=true`.
    #[error(
        "the {holder} has `{prefix}.` labels but no `{prefix}.enable=true`, and providers.{provider}.exposedByDefault is false: it is not routed"
    )]
    NotEnabled {
        /// `container` or `service`.
        holder: &'static str,
        /// The provider's label prefix.
        prefix: String,
        /// The provider (`docker`, `swarm`).
        provider: &'static str,
    },
    /// An object's problem, as the label grammar, a provider or compile
    /// reports it; or a label that the other router's prefix would reject.
    #[error(transparent)]
    Object(#[from] Problem),
    /// A container not routed for want of a port, whose image's exposed
    /// ports could not be read: the port may well be known to Docker.
    #[error("{0} (the image's exposed ports could not be read: is it built or pulled?)")]
    PortsUnknown(Problem),
    /// `deploy.labels` with the Swarm provider off.
    #[error(
        "`deploy.labels` are read by the Swarm provider only, and it is off (no --providers.swarm): these `{prefix}.` labels are ignored (the Docker provider reads the service's `labels:`)"
    )]
    DeployLabelsIgnored {
        /// The Docker provider's label prefix.
        prefix: String,
    },
    /// Container `labels:` with only the Swarm provider on.
    #[error(
        "the Swarm provider reads `deploy.labels`, and the Docker provider is off (no --providers.docker): these container `labels:` are ignored (move them under `deploy.labels`)"
    )]
    ContainerLabelsIgnored,
    /// A label prefix close to the provider's.
    #[error("unknown label prefix `{written}` (did you mean `{prefix}`?); the label is ignored")]
    UnknownPrefix {
        /// The prefix as written.
        written: String,
        /// The provider's label prefix.
        prefix: String,
    },
    /// A whole set of labels under the other router's prefix.
    #[error(
        "labels under `{other}.` are not read: the label prefix is `{prefix}` (set --providers.{provider}.labelPrefix={other} to read them)"
    )]
    OtherPrefix {
        /// The other known prefix (`traefik`).
        other: String,
        /// The provider's label prefix.
        prefix: String,
        /// The provider (`docker`, `swarm`).
        provider: &'static str,
    },
    /// A label under the other router's prefix beside ones under the
    /// provider's: most likely meant for them.
    #[error(
        "labels under `{other}.` are not read, the label prefix is `{prefix}` (did you mean `{rewritten}`?)"
    )]
    StrayLabel {
        /// The other known prefix.
        other: String,
        /// The provider's label prefix.
        prefix: String,
        /// The label under the provider's prefix.
        rewritten: String,
    },
    /// A stray label (as [`CheckProblem::StrayLabel`]) whose option is
    /// misspelt too.
    #[error(
        "labels under `{other}.` are not read, the label prefix is `{prefix}`; and `{option}` is not an option (did you mean `{rewritten}`?)"
    )]
    StrayOption {
        /// The other known prefix.
        other: String,
        /// The provider's label prefix.
        prefix: String,
        /// The option as written.
        option: String,
        /// The label under the provider's prefix, with the option spelt right.
        rewritten: String,
    },
    /// A stray label (as [`CheckProblem::StrayLabel`]) that is wrong under
    /// the other prefix too.
    #[error(
        "labels under `{other}.` are not read, the label prefix is `{prefix}`; and under `{other}.` too: {problem}"
    )]
    StrayProblem {
        /// The other known prefix.
        other: String,
        /// The provider's label prefix.
        prefix: String,
        /// What is wrong with it there.
        problem: Problem,
    },
}
