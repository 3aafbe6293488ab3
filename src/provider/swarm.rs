//! The Swarm provider: the labels of Docker Swarm services (`deploy.labels`
//! in a stack file) become routers, services and middlewares, with one
//! server per running task (or the service's virtual IP with
//! `<prefix>.swarm.lbswarm=true`). It reads a manager's services, tasks and
//! nodes, then follows the daemon's events: after any service, node or
//! container event it reads them again four times a second for a while, so
//! a task that starts on any node is routed within about a second, and
//! every `refreshSeconds` in any case.
//!
//! The label grammar, templates, constraints, conflict handling and "not
//! routed because…" records are the Docker provider's (`views` turns tasks
//! into its `ContainerView`s).

mod power;
mod tasks;
pub mod views;
mod watch;

use super::Snapshot;
use super::docker::{DockerError, Endpoint, Settings};
use crate::config::static_config::{DockerProvider, SwarmProvider};
use std::time::Duration;
use tokio::sync::mpsc;

/// Why the Swarm provider cannot start.
#[derive(Debug, thiserror::Error)]
pub enum SwarmError {
    /// `providers.swarm.defaultRule` does not parse.
    #[error("providers.swarm.defaultRule: {0}")]
    DefaultRule(super::docker::default_rule::DefaultRuleError),
    /// `providers.swarm.constraints` does not parse.
    #[error("providers.swarm.constraints: {0}")]
    Constraints(super::docker::constraints::ConstraintError),
    /// `providers.swarm.endpoint` is neither `unix://` nor `tcp://`.
    #[error("providers.swarm.endpoint `{0}`: use unix:///path/to/docker.sock or tcp://host:port")]
    Endpoint(String),
    /// `providers.swarm.tls` with a unix socket endpoint.
    #[error("providers.swarm.tls: TLS needs a tcp:// endpoint, not `{0}`")]
    TlsNeedsTcp(String),
    /// `providers.swarm.tls.*` cannot make a TLS client.
    #[error("providers.swarm.tls: {0}")]
    Tls(crate::client::ClientError),
    /// `providers.swarm.labelPrefix` is empty or holds a dot at an end.
    #[error(
        "providers.swarm.labelPrefix `{0}`: must be a non-empty label key prefix such as `gangway` or `traefik`"
    )]
    Prefix(String),
}

impl From<DockerError> for SwarmError {
    fn from(e: DockerError) -> Self {
        match e {
            DockerError::DefaultRule(t) => SwarmError::DefaultRule(t),
            DockerError::Constraints(c) => SwarmError::Constraints(c),
            DockerError::Endpoint(e) => SwarmError::Endpoint(e),
            DockerError::TlsNeedsTcp(e) => SwarmError::TlsNeedsTcp(e),
            DockerError::Tls(e) => SwarmError::Tls(e),
            DockerError::Prefix(p) => SwarmError::Prefix(p),
        }
    }
}

/// The Docker provider's settings for the Swarm provider's options: the
/// shared label reading with `swarm` as the provider's name.
pub fn settings(c: &SwarmProvider) -> Result<Settings, SwarmError> {
    #[deny(unused_variables)] // an option read nowhere fails the build
    let SwarmProvider {
        endpoint: _,            // spawn_swarm
        tls: _,                 // spawn_swarm
        watch: _,               // spawn_swarm
        refresh_seconds: _,     // spawn_swarm
        http_client_timeout: _, // spawn_swarm
        exposed_by_default,
        network,
        default_rule,
        constraints,
        allow_empty_services,
        label_prefix,
    } = c;
    let docker = DockerProvider {
        exposed_by_default: *exposed_by_default,
        network: network.clone(),
        default_rule: default_rule.clone(),
        constraints: constraints.clone(),
        allow_empty_services: *allow_empty_services,
        label_prefix: label_prefix.clone(),
        ..DockerProvider::default()
    };
    let mut settings = Settings::new(&docker)?;
    settings.provider = "swarm";
    // A task that ends is replaced by another (or the service scaled
    // down): its server leaves at once rather than answering 503.
    settings.down_grace = Duration::ZERO;
    Ok(settings)
}

/// Checks the options, then starts the provider: it sends a `Snapshot` on
/// `tx` at every change until `tx` closes, and scales the services that
/// sleep for `sleeper`.
pub fn spawn_swarm(
    config: &SwarmProvider,
    tx: mpsc::Sender<Snapshot>,
    sleeper: std::sync::Arc<crate::sleep::Sleeper>,
) -> Result<tokio::task::JoinHandle<()>, SwarmError> {
    let settings = settings(config)?;
    let endpoint = Endpoint::with_tls(&config.endpoint, config.tls.as_ref())?;
    if let Some(notice) = crate::provider::docker::ExposedByLabels::of(&settings) {
        tracing::info!(provider = settings.provider, "{notice}");
    }
    let timeout = if config.http_client_timeout.0.is_zero() {
        Duration::from_secs(30)
    } else {
        config.http_client_timeout.0
    };
    Ok(tokio::spawn(watch::run(
        settings,
        endpoint,
        watch::Timing {
            call: timeout,
            refresh: config.refresh_seconds.0.max(Duration::from_secs(1)),
            watch: config.watch,
        },
        tx,
        sleeper,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_swarm_options() {
        let bad = SwarmProvider {
            default_rule: "Host(`{{ .Nope }}`)".into(),
            ..SwarmProvider::default()
        };
        let e = settings(&bad).unwrap_err();
        assert!(
            e.to_string().starts_with("providers.swarm.defaultRule"),
            "{e}"
        );
        let bad = SwarmProvider {
            label_prefix: ".x".into(),
            ..SwarmProvider::default()
        };
        assert!(matches!(settings(&bad), Err(SwarmError::Prefix(_))));
        let ok = settings(&SwarmProvider::default()).unwrap();
        assert_eq!((ok.provider, ok.prefix.as_str()), ("swarm", "gangway"));
    }
}
