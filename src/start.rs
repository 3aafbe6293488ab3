//! The wiring of a start: setting up gangway's own log (`log`), binding
//! the entry points, opening the access log, loading stored certificates, spawning the providers and serving
//! until shutdown. What each part is set up with comes from `settings`,
//! the pure translation of the static configuration; this room only binds
//! and spawns.

mod listen;
pub mod log;
mod serve;
mod workers;

use listen::Ready;
pub(crate) use listen::{bind, set_up};
pub(crate) use serve::spawn_servers;

use crate::config::static_config::StaticConfig;
use crate::provider::{OptionsError, ProviderKind, Snapshot};
use crate::{access_log, acme, metrics, provider, proxy, runtime};
use http::HeaderValue;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Why gangway could not start.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The access log could not be opened.
    #[error(transparent)]
    AccessLog(#[from] access_log::AccessLogError),
    /// An entry point's address could not be bound.
    #[error("entry point `{name}`: cannot listen on {address}: {source}")]
    Bind {
        /// The entry point.
        name: String,
        /// Its address as configured.
        address: String,
        /// What the OS said.
        source: std::io::Error,
    },
    /// A worker's thread or runtime could not be started.
    #[error("worker {index}: cannot start its thread: {source}")]
    Worker {
        /// The worker's number, from 0.
        index: usize,
        /// What the OS said.
        source: std::io::Error,
    },
    /// A certificate resolver cannot be used.
    #[error(transparent)]
    Acme(#[from] acme::AcmeError),
    /// The Prometheus options cannot be used.
    #[error(transparent)]
    Metrics(#[from] metrics::MetricsError),
    /// An OpenTelemetry exporter cannot be set up.
    #[error(transparent)]
    Otel(#[from] crate::otel::OtelError),
    /// A StatsD, Datadog or InfluxDB 2 option that cannot be used.
    #[error(transparent)]
    MetricsPush(#[from] metrics::push::PushError),
    /// HTTP/3 could not be set up on an entry point.
    #[error("entry point `{name}`: HTTP/3: {source}")]
    Http3 {
        /// The entry point.
        name: String,
        /// What failed.
        source: proxy::http3::Http3Error,
    },
    /// A redirection names neither an entry point nor a port.
    #[error(
        "entryPoints.{entry_point}.http.redirections.entryPoint.to: `{to}` is neither an entry point nor a port such as `:443`"
    )]
    Redirect {
        /// The entry point that redirects.
        entry_point: String,
        /// The target as given.
        to: String,
    },
    /// The Docker provider's options are wrong.
    #[error(transparent)]
    Docker(#[from] provider::docker::DockerError),
    /// The Swarm provider's options are wrong.
    #[error(transparent)]
    Swarm(#[from] provider::swarm::SwarmError),
    /// The Redis provider's options are wrong.
    #[error(transparent)]
    Redis(#[from] provider::kv::redis::RedisError),
    /// The etcd provider's options are wrong.
    #[error(transparent)]
    Etcd(#[from] provider::kv::etcd::EtcdProviderError),
    /// The HTTP provider's options are wrong.
    #[error(transparent)]
    Http(#[from] provider::http::HttpProviderError),
}

impl From<crate::settings::RedirectError> for RunError {
    fn from(e: crate::settings::RedirectError) -> Self {
        let crate::settings::RedirectError { entry_point, to } = e;
        RunError::Redirect { entry_point, to }
    }
}

impl From<OptionsError> for RunError {
    fn from(e: OptionsError) -> Self {
        match e {
            OptionsError::Docker(e) => RunError::Docker(e),
            OptionsError::Swarm(e) => RunError::Swarm(e),
            OptionsError::Redis(e) => RunError::Redis(e),
            OptionsError::Etcd(e) => RunError::Etcd(e),
            OptionsError::Http(e) => RunError::Http(e),
        }
    }
}

/// Opens the access log when it is on; its dropped lines are counted when
/// metrics are on.
pub(crate) async fn open_access_log(
    config: &StaticConfig,
    exporter: Option<&Arc<metrics::Exporter>>,
) -> Result<Option<Arc<access_log::AccessLogger>>, RunError> {
    let Some(a) = &config.access_log else {
        return Ok(None);
    };
    let dropped = exporter.map_or_else(::metrics::Counter::noop, |e| e.access_log_dropped());
    Ok(Some(access_log::AccessLogger::spawn(a, dropped).await?))
}

/// The one `SIGUSR1` listener, for logrotate's rename-then-signal: on
/// every signal it reopens each file gangway writes lines to, its own log
/// (`log.filePath`, see [`log::file`]) and the access log's. None when
/// neither goes to a file.
pub(crate) fn spawn_reopen_on_signal(
    access_log: Option<Arc<access_log::AccessLogger>>,
) -> Option<JoinHandle<()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let access_log = access_log.filter(|a| a.file_path().is_some());
    let log_file = log::file();
    if access_log.is_none() && log_file.is_none() {
        return None;
    }
    let mut usr1 = signal(SignalKind::user_defined1()).ok()?;
    Some(tokio::spawn(async move {
        while usr1.recv().await.is_some() {
            if let Some(file) = &log_file {
                log::reopen(file);
            }
            if let Some(access_log) = &access_log {
                access_log.reopen();
            }
        }
    }))
}

/// The certificate resolvers, their options checked.
pub(crate) fn resolvers(config: &StaticConfig) -> Result<Vec<Arc<acme::Resolver>>, RunError> {
    let names: Vec<String> = config.entry_points.keys().cloned().collect();
    let mut resolvers = Vec::new();
    for (name, resolver) in &config.certificates_resolvers {
        resolvers.push(Arc::new(acme::Resolver::new(name, &resolver.acme, &names)?));
    }
    let lists = config
        .certificates_resolvers
        .iter()
        .map(|(n, r)| (n.as_str(), r.acme.fallback.as_slice()))
        .collect::<Vec<_>>();
    if let Some(e) = acme::fallback_errors(&lists).into_iter().next() {
        return Err(e.into());
    }
    Ok(resolvers)
}

/// Puts the certificates the resolvers stored in `registries`, so they are
/// served from the first handshake on: a restart never shows the default
/// certificate for a known name.
pub(crate) async fn load_certificates(
    resolvers: &[Arc<acme::Resolver>],
    registries: &runtime::Registries,
) -> Result<(), RunError> {
    acme::check_shared_keys(resolvers)?;
    for resolver in resolvers {
        let loaded = resolver.load_stored(registries).await;
        tracing::info!(resolver = %resolver.name, certificates = loaded, ca = %resolver.directory_url, "certificate resolver ready");
    }
    Ok(())
}

/// Sends the internal provider's routers (API, dashboard, ping, metrics)
/// when there are any, then starts every provider the configuration turns
/// on.
pub(crate) async fn spawn_providers(
    config: &StaticConfig,
    tx: mpsc::Sender<Snapshot>,
    sleeper: &std::sync::Arc<crate::sleep::Sleeper>,
) -> Result<Vec<JoinHandle<()>>, RunError> {
    let internal = crate::api::internal_routers(config);
    if !internal.http.routers.is_empty() {
        let snapshot = Snapshot {
            provider: "internal",
            dynamic: Some(internal),
            error: None,
            warnings: Vec::new(),
            detail: None,
        };
        let _ = tx.send(snapshot).await;
    }
    let mut providers = Vec::new();
    for kind in ProviderKind::configured(&config.providers) {
        providers.extend(kind.spawn(&config.providers, &tx, sleeper)?);
    }
    Ok(providers)
}

/// This machine's host name, for `X-Forwarded-Server`.
pub(crate) fn server_name() -> HeaderValue {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "gangway".to_owned());
    HeaderValue::from_str(&name).unwrap_or_else(|_| HeaderValue::from_static("gangway"))
}
