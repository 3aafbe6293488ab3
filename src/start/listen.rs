//! Binding the entry points, and setting each up with its settings.

use super::RunError;
use crate::config::duration::Duration;
use crate::config::static_config::StaticConfig;
use crate::proxy::{self, EntryPointInfo, Listener};
use crate::runtime::{Registries, RuntimeHandle};
use crate::settings;
use std::sync::Arc;

/// Where an entry point's connections or datagrams arrive.
pub(crate) enum Sockets {
    /// One listener or socket served on the main runtime: UDP, and TCP
    /// when there is one worker.
    Main(Listener),
    /// A TCP entry point with several workers: one `SO_REUSEPORT`
    /// listener per worker, all on the same port, registered by the worker
    /// that serves it.
    Workers(Vec<std::net::TcpListener>),
}

/// An entry point's sockets, bound and not yet served.
pub(crate) struct Bound {
    /// The TCP listeners or UDP socket.
    sockets: Sockets,
    /// The port it got (the configured one, or the OS's pick for port 0).
    port: u16,
    /// The HTTP/3 side's UDP socket, when `http3` is on.
    quic: Option<std::net::UdpSocket>,
}

impl Bound {
    /// The port it got.
    pub(crate) fn port(&self) -> u16 {
        self.port
    }
}

/// An entry point ready to serve: bound, and set up with its settings.
pub(crate) struct Ready {
    /// The TCP listeners or UDP socket.
    pub(crate) sockets: Sockets,
    /// The HTTP/3 endpoint on the same port, when `http3` is on.
    pub(crate) quic: Option<quinn::Endpoint>,
    /// What the proxy serves it with.
    pub(crate) info: Arc<EntryPointInfo>,
    /// `requestAcceptGraceTimeout`.
    pub(crate) accept_grace: Duration,
    /// `udp.timeout`.
    pub(crate) udp_timeout: std::time::Duration,
}

/// Binds every entry point, in the configuration's order, before anything
/// is served, so that a port in use fails the start. TCP entry points get
/// one listener per worker (`worker::count`).
pub(crate) fn bind(config: &StaticConfig) -> Result<Vec<Bound>, RunError> {
    let workers = crate::worker::count();
    let mut bound = Vec::new();
    for (name, ep) in &config.entry_points {
        let bind_error = |source| RunError::Bind {
            name: name.clone(),
            address: ep.address.to_string(),
            source,
        };
        let sockets = if ep.address.udp {
            Sockets::Main(Listener::Udp(
                proxy::bind_udp_at(ep.address.socket_addr(), ep.reuse_port)
                    .and_then(tokio::net::UdpSocket::from_std)
                    .map_err(bind_error)?,
            ))
        } else if workers > 1 {
            Sockets::Workers(
                bind_per_worker(ep.address.host, ep.address.port, workers).map_err(bind_error)?,
            )
        } else {
            Sockets::Main(Listener::Tcp(
                proxy::bind(ep.address.host, ep.address.port, ep.reuse_port).map_err(bind_error)?,
            ))
        };
        let local = match &sockets {
            Sockets::Main(listener) => listener.local_addr().ok(),
            Sockets::Workers(listeners) => listeners.first().and_then(|l| l.local_addr().ok()),
        };
        let port = local.map_or(ep.address.port, |a| a.port());
        tracing::info!(entry_point = %name, address = %local.map(|a| a.to_string()).unwrap_or_default(), udp = ep.address.udp, "listening");
        // HTTP/3 on the same port, UDP (validate() keeps it off UDP entry
        // points); with port 0, the one the TCP side got.
        let quic = match &ep.http3 {
            Some(_) => {
                let socket = proxy::bind_udp(ep.address.host, port).map_err(bind_error)?;
                tracing::info!(entry_point = %name, port, "listening for HTTP/3 (QUIC, UDP)");
                Some(socket)
            }
            None => None,
        };
        bound.push(Bound {
            sockets,
            port,
            quic,
        });
    }
    Ok(bound)
}

/// `workers` listeners on the same port, among which the kernel spreads
/// new connections (`SO_REUSEPORT`). The port is first bound alone, without
/// `SO_REUSEPORT`: a port someone holds fails here as it does with one
/// worker, even when the holder set `SO_REUSEPORT` too (another gangway),
/// and port 0 becomes the port the OS picks, which the others then bind.
fn bind_per_worker(
    host: Option<std::net::IpAddr>,
    port: u16,
    workers: usize,
) -> std::io::Result<Vec<std::net::TcpListener>> {
    let port = proxy::bind_std(host, port, false)?.local_addr()?.port();
    (0..workers)
        .map(|_| proxy::bind_std(host, port, true))
        .collect()
}

/// Sets up each bound entry point with its settings (`settings::entry_point`),
/// its request counters when `stats` carries the exporter and
/// per-entry-point metrics are on, and its HTTP/3 endpoint.
pub(crate) fn set_up(
    config: &StaticConfig,
    bound: Vec<Bound>,
    handle: &Arc<RuntimeHandle>,
    registries: &Registries,
    stats: Option<&Arc<crate::metrics::Exporter>>,
) -> Result<Vec<Ready>, RunError> {
    let names: Vec<String> = config.entry_points.keys().cloned().collect();
    let ports: Vec<u16> = bound.iter().map(Bound::port).collect();
    let mut ready = Vec::new();
    for (id, ((name, ep), bound)) in config.entry_points.iter().zip(bound).enumerate() {
        let stats = stats.map(|exporter| {
            let transport = if ep.address.udp {
                crate::metrics::Transport::Udp
            } else {
                crate::metrics::Transport::Tcp
            };
            registries.entry_point_stats(name, transport, exporter)
        });
        let settings::EntryPointSettings {
            info,
            accept_grace,
            udp_timeout,
        } = settings::entry_point(id, name, ep, &names, &ports, stats, config.global)?;
        let info = Arc::new(info);
        let quic = match bound.quic {
            Some(socket) => Some(
                proxy::http3::endpoint(socket, handle.clone(), &info).map_err(|source| {
                    RunError::Http3 {
                        name: name.clone(),
                        source,
                    }
                })?,
            ),
            None => None,
        };
        ready.push(Ready {
            sockets: bound.sockets,
            quic,
            info,
            accept_grace,
            udp_timeout,
        });
    }
    Ok(ready)
}
