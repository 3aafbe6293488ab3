//! The Docker provider: container labels become routers, services and
//! middlewares. It lists the containers once, then follows the daemon's
//! event stream; when the stream drops it reconnects with backoff and lists
//! again, keeping the last known routes meanwhile.
//!
//! `watch` talks to Docker and narrows each container to a
//! `container::ContainerView`; everything after that is pure:
//! `labels::parse_labels` reads one container's labels, `build::build` turns
//! all containers into one configuration with provenance and a record per
//! container.

pub mod build;
pub mod constraints;
pub mod container;
pub mod default_rule;
pub mod labels;
pub(super) mod power;
mod watch;

pub use labels::{LabelError, parse_labels};
pub(crate) use watch::{Publisher, Reconnect, Stop, connect};

use super::Snapshot;
use crate::config::static_config::{ConflictPolicy, DockerProvider, ProviderTls};
use constraints::{ConstraintError, Constraints};
use default_rule::{DefaultRule, DefaultRuleError};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// Why the Docker provider cannot start.
#[derive(Debug, thiserror::Error)]
pub enum DockerError {
    /// `providers.docker.defaultRule` does not parse.
    #[error("providers.docker.defaultRule: {0}")]
    DefaultRule(#[from] DefaultRuleError),
    /// `providers.docker.constraints` does not parse.
    #[error("providers.docker.constraints: {0}")]
    Constraints(#[from] ConstraintError),
    /// `providers.docker.endpoint` is neither `unix://` nor `tcp://`.
    #[error("providers.docker.endpoint `{0}`: use unix:///path/to/docker.sock or tcp://host:port")]
    Endpoint(String),
    /// `providers.docker.tls` with a unix socket endpoint.
    #[error("providers.docker.tls: TLS needs a tcp:// endpoint, not `{0}`")]
    TlsNeedsTcp(String),
    /// `providers.docker.tls.*` cannot make a TLS client (a file that
    /// cannot be read, a certificate without its key).
    #[error("providers.docker.tls: {0}")]
    Tls(crate::client::ClientError),
    /// `providers.docker.labelPrefix` is empty or holds a dot at an end.
    #[error(
        "providers.docker.labelPrefix `{0}`: must be a non-empty label key prefix such as `gangway` or `traefik`"
    )]
    Prefix(String),
}

/// The provider's options, checked and compiled.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The provider's name in qualified names (`docker`, `swarm`).
    pub provider: &'static str,
    /// Label prefix, without the trailing dot.
    pub prefix: String,
    /// Route containers without `<prefix>.enable=true`: every one
    /// (`Some(true)`), none (`Some(false)`), or those with a label under
    /// the prefix (`None`, the option not given).
    pub exposed_by_default: Option<bool>,
    /// The network to use by default.
    pub network: Option<String>,
    /// The rule of routers without one.
    pub default_rule: DefaultRule,
    /// Which containers are considered.
    pub constraints: Option<Constraints>,
    /// Use the published address and port.
    pub use_bind_port_ip: bool,
    /// Keep services of unhealthy containers, without servers.
    pub allow_empty_services: bool,
    /// What to do when containers disagree.
    pub conflicts: ConflictPolicy,
    /// `.Domain` of the default rule.
    pub domain: String,
    /// Address of host-network containers.
    pub host_address: IpAddr,
    /// How long routers of down containers stay, answering 503.
    pub down_grace: Duration,
    /// Route one-off containers.
    pub include_one_off: bool,
    /// Networks of gangway's own container, when it runs in one.
    pub own_networks: Vec<String>,
    /// Stopped containers whose routers stay, without servers, because a
    /// request may wake them: put to sleep by gangway, or
    /// `gangway.sleep.wakeable` (set by the provider at each build).
    pub keep: std::collections::BTreeSet<String>,
}

impl Settings {
    /// Checks and compiles the static options.
    pub fn new(c: &DockerProvider) -> Result<Settings, DockerError> {
        // Taken apart with no `..`: an option read nowhere is an unused
        // binding and fails the build.
        #[deny(unused_variables)] // an option read nowhere fails the build
        let DockerProvider {
            endpoint: _, // spawn_docker
            tls: _,      // spawn_docker
            exposed_by_default,
            network,
            default_rule,
            constraints,
            watch: _, // spawn_docker
            use_bind_port_ip,
            allow_empty_services,
            label_prefix,
            conflicts,
            domain,
            host_address,
            down_grace_period,
            include_one_off,
        } = c;
        let prefix = label_prefix.trim().to_owned();
        if prefix.is_empty() || prefix.starts_with('.') || prefix.ends_with('.') {
            return Err(DockerError::Prefix(label_prefix.clone()));
        }
        let constraints = match constraints.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(text) => Some(Constraints::parse(text)?),
        };
        Ok(Settings {
            provider: "docker",
            prefix,
            exposed_by_default: *exposed_by_default,
            network: network.clone().filter(|n| !n.is_empty()),
            default_rule: DefaultRule::parse(default_rule)?,
            constraints,
            use_bind_port_ip: *use_bind_port_ip,
            allow_empty_services: *allow_empty_services,
            conflicts: *conflicts,
            domain: domain.clone().unwrap_or_default(),
            host_address: *host_address,
            down_grace: down_grace_period.0,
            include_one_off: *include_one_off,
            own_networks: Vec::new(),
            keep: std::collections::BTreeSet::new(),
        })
    }
}

/// Where the daemon listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// A unix socket path.
    Unix(String),
    /// `host:port`, plain HTTP.
    Tcp(String),
    /// `host:port`, HTTPS with this client configuration.
    Tls(String, TlsClient),
}

/// A TLS client configuration, compared by identity (rustls gives it no
/// equality of its own).
#[derive(Clone, Debug)]
pub struct TlsClient(pub Arc<rustls::ClientConfig>);

impl PartialEq for TlsClient {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for TlsClient {}

impl Endpoint {
    /// Parses `unix:///path` or `tcp://host:port` (also `http://`).
    pub fn parse(text: &str) -> Result<Endpoint, DockerError> {
        if let Some(path) = text.strip_prefix("unix://")
            && path.starts_with('/')
        {
            return Ok(Endpoint::Unix(path.to_owned()));
        }
        for scheme in ["tcp://", "http://"] {
            if let Some(addr) = text.strip_prefix(scheme)
                && !addr.is_empty()
            {
                return Ok(Endpoint::Tcp(addr.trim_end_matches('/').to_owned()));
            }
        }
        Err(DockerError::Endpoint(text.to_owned()))
    }

    /// Parses `text`, then with `tls` options makes a `tcp://` endpoint
    /// speak HTTPS (a unix socket with `tls` is refused, not ignored).
    pub fn with_tls(text: &str, tls: Option<&ProviderTls>) -> Result<Endpoint, DockerError> {
        let endpoint = Endpoint::parse(text)?;
        let Some(tls) = tls else {
            return Ok(endpoint);
        };
        let Endpoint::Tcp(addr) = endpoint else {
            return Err(DockerError::TlsNeedsTcp(text.to_owned()));
        };
        let config = crate::client::tls::provider_config(tls).map_err(DockerError::Tls)?;
        Ok(Endpoint::Tls(addr, TlsClient(Arc::new(config))))
    }
}

/// What the provider routes when `exposedByDefault` is not given, said once
/// at the start and by `gangway check`: Traefik would route every
/// container, gangway only those that carry a label under its prefix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "providers.{provider}.exposedByDefault is not given: {holder}s with `{prefix}.` labels are routed without `{prefix}.enable=true`, as in Traefik, and {holder}s with none are not (set it to true to route those too, to false to route only `{prefix}.enable=true`)"
)]
pub struct ExposedByLabels {
    /// `docker` or `swarm`.
    pub provider: &'static str,
    /// `container` or `service`.
    pub holder: &'static str,
    /// The label prefix.
    pub prefix: String,
}

impl ExposedByLabels {
    /// The notice for these settings; `None` when the option is given.
    pub fn of(settings: &Settings) -> Option<ExposedByLabels> {
        settings
            .exposed_by_default
            .is_none()
            .then(|| ExposedByLabels {
                provider: settings.provider,
                holder: if settings.provider == "swarm" {
                    "service"
                } else {
                    "container"
                },
                prefix: settings.prefix.clone(),
            })
    }
}

/// Checks the options, then starts the provider: it sends a `Snapshot` on
/// `tx` at every change until `tx` closes, and starts and stops the
/// containers of sleeping services for `sleeper`.
pub fn spawn_docker(
    config: &DockerProvider,
    tx: mpsc::Sender<Snapshot>,
    sleeper: Arc<crate::sleep::Sleeper>,
) -> Result<tokio::task::JoinHandle<()>, DockerError> {
    let settings = Settings::new(config)?;
    let endpoint = Endpoint::with_tls(&config.endpoint, config.tls.as_ref())?;
    if let Some(notice) = ExposedByLabels::of(&settings) {
        tracing::info!(provider = settings.provider, "{notice}");
    }
    Ok(tokio::spawn(watch::run(
        settings,
        endpoint,
        config.watch,
        tx,
        sleeper,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints() {
        assert_eq!(
            Endpoint::parse("unix:///var/run/docker.sock").unwrap(),
            Endpoint::Unix("/var/run/docker.sock".into())
        );
        assert_eq!(
            Endpoint::parse("tcp://127.0.0.1:2375").unwrap(),
            Endpoint::Tcp("127.0.0.1:2375".into())
        );
        for bad in [
            "",
            "unix://relative",
            "tcp://",
            "ssh://host",
            "/var/run/docker.sock",
        ] {
            assert!(Endpoint::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn tls_options_make_a_tcp_endpoint_speak_https_and_are_never_ignored() {
        let tls = ProviderTls {
            insecure_skip_verify: true,
            ..ProviderTls::default()
        };
        assert!(matches!(
            Endpoint::with_tls("tcp://127.0.0.1:2376", Some(&tls)),
            Ok(Endpoint::Tls(addr, _)) if addr == "127.0.0.1:2376"
        ));
        assert_eq!(
            Endpoint::with_tls("tcp://127.0.0.1:2375", None).unwrap(),
            Endpoint::Tcp("127.0.0.1:2375".into())
        );
        assert!(matches!(
            Endpoint::with_tls("unix:///var/run/docker.sock", Some(&tls)),
            Err(DockerError::TlsNeedsTcp(_))
        ));
        let half = ProviderTls {
            cert: Some("cert.pem".into()),
            ..ProviderTls::default()
        };
        let err = Endpoint::with_tls("tcp://127.0.0.1:2376", Some(&half)).unwrap_err();
        assert!(matches!(err, DockerError::Tls(_)), "{err}");
        assert!(
            err.to_string().starts_with("providers.docker.tls: "),
            "{err}"
        );
    }

    #[test]
    fn settings_reject_bad_templates_constraints_and_prefixes() {
        let ok = DockerProvider::default();
        assert!(Settings::new(&ok).is_ok());
        let bad_rule = DockerProvider {
            default_rule: "Host(`{{ .Nope }}`)".into(),
            ..DockerProvider::default()
        };
        assert!(matches!(
            Settings::new(&bad_rule),
            Err(DockerError::DefaultRule(_))
        ));
        let bad_constraints = DockerProvider {
            constraints: Some("Label(`a`)".into()),
            ..DockerProvider::default()
        };
        assert!(matches!(
            Settings::new(&bad_constraints),
            Err(DockerError::Constraints(_))
        ));
        let bad_prefix = DockerProvider {
            label_prefix: "traefik.".into(),
            ..DockerProvider::default()
        };
        assert!(matches!(
            Settings::new(&bad_prefix),
            Err(DockerError::Prefix(_))
        ));
    }
}
