//! gangway: an edge router for Docker hosts. Providers turn container labels
//! and files into routes; the proxy serves them over HTTP/1.1, HTTP/2 and
//! HTTP/3.
//!
//! `run` is what the binary calls and what the integration tests start:
//! the story of a start, told with `settings` (the static configuration
//! translated into runtime settings, pure) and `start` (the wiring that
//! binds and spawns).

pub mod access_log;
pub mod acme;
pub mod aggregate;
pub mod api;
pub mod balance;
pub mod body;
pub mod cause;
pub mod check;
pub mod client;
pub mod clock;
pub mod compile;
pub mod config;
pub mod crypto;
pub mod health;
pub mod metrics;
pub mod middleware;
pub mod otel;
pub mod overload;
pub mod percent;
pub mod provider;
pub mod proxy;
pub mod rule;
pub mod runtime;
pub mod settings;
pub mod sleep;
pub mod start;
pub mod store;
pub mod template;
pub mod tls;
pub mod worker;

use config::static_config::StaticConfig;
use std::future::Future;
use std::sync::Arc;
use tokio::sync::mpsc;

pub use start::RunError;

/// Starts every entry point and provider, serves until `shutdown` resolves,
/// then stops accepting and drains in-flight requests.
pub async fn run(config: StaticConfig, shutdown: impl Future<Output = ()>) -> Result<(), RunError> {
    let config = Arc::new(config);
    let metrics = settings::metrics(&config)?;
    let exporter = metrics.as_ref().map(|m| m.exporter.clone());
    let access_log = start::open_access_log(&config, exporter.as_ref()).await?;
    let reopen = start::spawn_reopen_on_signal(access_log.clone());
    let (tracer, span_push) = match config.tracing.as_ref().map(otel::trace::Tracer::spawn) {
        Some(started) => {
            let (tracer, push) = started?;
            (Some(tracer), Some(push))
        }
        None => (None, None),
    };
    let metrics_push = match (&config.metrics.otlp, exporter.as_ref()) {
        (Some(otlp), Some(e)) => Some(otel::metrics::spawn_push(e.clone(), otlp)?),
        _ => None,
    };
    let backend_pushes = match exporter.as_ref() {
        Some(e) => metrics::push::spawn_all(e, &config.metrics)?,
        None => Vec::new(),
    };
    let log_push = start::log::spawn_otlp(&config.log)?;
    let registries = Arc::new(runtime::Registries::default());
    // Starts empty; the first compiled runtime (with TLS defaults) is stored
    // below, before anything is served.
    let handle = Arc::new(runtime::RuntimeHandle::new(runtime::Runtime::empty(
        config.entry_points.len(),
    )));
    let resolvers = start::resolvers(&config)?;

    // Bind everything before anything is served, so a port in use fails the start.
    let bound = start::bind(&config)?;
    let ep_stats = exporter
        .as_ref()
        .filter(|_| settings::entry_point_metrics(&config));
    let entry_points = start::set_up(&config, bound, &handle, &registries, ep_stats)?;

    // Stored certificates are served from the first handshake on.
    start::load_certificates(&resolvers, &registries).await?;

    let terminating = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let certificates = Arc::new(acme::Status::new(exporter.clone()));
    let sleeper = Arc::new(sleep::Sleeper::default());
    if let Some(e) = &exporter {
        sleeper.measure(e);
    }
    let api_state = Arc::new(api::ApiState {
        runtime: handle.clone(),
        certificates: certificates.clone(),
        registries: registries.clone(),
        static_config: config.clone(),
        providers: crate::provider::ProviderKind::names(&config.providers),
        started: std::time::SystemTime::now(),
        terminating: terminating.clone(),
        metrics: exporter,
        router_views: Default::default(),
        overview_counts: Default::default(),
        sleeper: sleeper.clone(),
    });
    let route_metrics = metrics.as_ref().is_some_and(|m| m.routers || m.services);
    let metrics_headers = metrics
        .as_ref()
        .map(|m| m.exporter.label_headers())
        .unwrap_or_default();
    if let Some(m) = metrics.as_ref().filter(|m| m.services) {
        let handle = handle.clone();
        m.exporter
            .watch_servers(Box::new(move || handle.checked_servers()));
    }
    let ctx = settings::compile_context(&config, api::internal_services(&api_state), metrics);
    handle.store(compile::compile(
        Arc::new(config::Dynamic::default()),
        &ctx,
        &registries,
    ));
    let acme = acme::spawn_acme(resolvers, handle.clone(), registries.clone(), certificates);
    let (tx, rx) = mpsc::channel(64);
    let aggregate = aggregate::spawn_aggregate(
        rx,
        handle.clone(),
        ctx,
        registries,
        sleeper.clone(),
        config.providers.providers_throttle_duration.0,
    );
    let providers = start::spawn_providers(&config, tx, &sleeper).await?;

    let proxy = Arc::new(proxy::Proxy {
        runtime: handle,
        server_name: start::server_name(),
        log_internals: config.access_log.as_ref().is_some_and(|a| a.add_internals),
        access_log,
        route_metrics,
        metrics_internals: config.metrics.add_internals,
        metrics_headers: metrics_headers.into(),
        tracer,
        sleeper,
    });
    let servers = start::spawn_servers(&proxy, entry_points)?;
    shutdown.await;
    tracing::info!("shutting down");
    // From here `/ping` answers with its terminating status, so that a load
    // balancer in front stops sending while the entry points still accept.
    terminating.store(true, std::sync::atomic::Ordering::Relaxed);
    servers.drain().await;
    for p in providers {
        p.abort();
    }
    aggregate.abort();
    acme.abort();
    if let Some(r) = reopen {
        r.abort();
    }
    // The last push: spans of the requests drained above, the final
    // counts, and the log records of the stop itself, bounded so that a
    // dead collector cannot hold the exit up.
    otel::finish_all(
        [span_push, metrics_push, log_push]
            .into_iter()
            .flatten()
            .chain(backend_pushes)
            .collect(),
    )
    .await;
    Ok(())
}
