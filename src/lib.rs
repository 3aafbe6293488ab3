//! gangway: an edge router for Docker hosts. Providers turn container labels
//! and files into routes; the proxy serves them over HTTP/1.1 and HTTP/2.
//!
//! `run` is what the binary calls and what the integration tests start.

pub mod aggregate;
pub mod balance;
pub mod compile;
pub mod config;
pub mod health;
pub mod provider;
pub mod proxy;
pub mod rule;
pub mod runtime;

use config::static_config::StaticConfig;
use http::HeaderValue;
use std::future::Future;
use std::sync::Arc;
use tokio::sync::{mpsc, watch};

/// Why gangway could not start.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
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
}

/// Starts every entry point and provider, serves until `shutdown` resolves,
/// then stops accepting and drains in-flight requests.
pub async fn run(config: StaticConfig, shutdown: impl Future<Output = ()>) -> Result<(), RunError> {
    let names: Vec<String> = config.entry_points.keys().cloned().collect();
    let registries = Arc::new(runtime::Registries::default());
    let handle = Arc::new(runtime::RuntimeHandle::new(runtime::Runtime::empty(
        names.len(),
    )));

    // Bind everything before anything is served, so a port in use fails the start.
    let mut listeners = Vec::new();
    for (id, (name, ep)) in config.entry_points.iter().enumerate() {
        let listener =
            proxy::bind(ep.address.host, ep.address.port).map_err(|source| RunError::Bind {
                name: name.clone(),
                address: ep.address.to_string(),
                source,
            })?;
        let port = listener
            .local_addr()
            .map(|a| a.port())
            .unwrap_or(ep.address.port);
        tracing::info!(entry_point = %name, address = %listener.local_addr().map(|a| a.to_string()).unwrap_or_default(), "listening");
        let info = proxy::EntryPointInfo {
            name: name.clone(),
            id,
            trust: proxy::forwarded::TrustPolicy {
                trusted: ep.forwarded_headers.trusted_ips.clone(),
                insecure: ep.forwarded_headers.insecure,
            },
            tls: false,
            port: HeaderValue::from(port),
            grace: ep.transport.life_cycle.grace_time_out.0,
            header_read_timeout: nonzero(ep.transport.responding_timeouts.read_timeout.0),
        };
        listeners.push((listener, Arc::new(info)));
    }

    let ft = &config.servers_transport.forwarding_timeouts;
    let ctx = compile::CompileContext {
        entry_points: names,
        not_default: Vec::new(),
        default_transport: runtime::registries::ClientSettings {
            dial_timeout: nonzero(ft.dial_timeout.0),
            response_header_timeout: nonzero(ft.response_header_timeout.0),
            idle_conn_timeout: nonzero(ft.idle_conn_timeout.0),
            max_idle_per_host: config.servers_transport.max_idle_conns_per_host,
            tls: runtime::registries::TlsSettings {
                insecure_skip_verify: config.servers_transport.insecure_skip_verify,
                root_cas: config.servers_transport.root_cas.clone(),
                server_name: None,
                disable_http2: false,
            },
        },
    };
    let (tx, rx) = mpsc::channel(64);
    let aggregate = aggregate::spawn_aggregate(
        rx,
        handle.clone(),
        ctx,
        registries,
        config.providers.providers_throttle_duration.0,
    );
    let mut providers = Vec::new();
    if let Some(file) = &config.providers.file {
        // validate() guarantees exactly one of filename and directory.
        let source = match (&file.filename, &file.directory) {
            (Some(f), _) => Some(provider::file::Source::File(f.clone())),
            (None, Some(d)) => Some(provider::file::Source::Directory(d.clone())),
            (None, None) => None,
        };
        if let Some(source) = source {
            providers.push(provider::file::spawn_file(source, file.watch, tx.clone()));
        }
    }
    drop(tx);

    let proxy = Arc::new(proxy::Proxy {
        runtime: handle,
        server_name: server_name(),
    });
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut servers = Vec::new();
    for (listener, info) in listeners {
        servers.push(tokio::spawn(proxy::serve(
            proxy.clone(),
            listener,
            info,
            stop_rx.clone(),
        )));
    }
    shutdown.await;
    tracing::info!("shutting down");
    let _ = stop_tx.send(true);
    for s in servers {
        let _ = s.await;
    }
    for p in providers {
        p.abort();
    }
    aggregate.abort();
    Ok(())
}

fn nonzero(d: std::time::Duration) -> Option<std::time::Duration> {
    (!d.is_zero()).then_some(d)
}

fn server_name() -> HeaderValue {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "gangway".to_owned());
    HeaderValue::from_str(&name).unwrap_or_else(|_| HeaderValue::from_static("gangway"))
}
