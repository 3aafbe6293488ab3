//! Serving the entry points, and stopping them at shutdown.

use super::listen::Sockets;
use super::workers::{self, Share};
use super::{Ready, RunError};
use crate::config::duration::Duration;
use crate::proxy::{self, Listener, Proxy};
use crate::worker::handoff::{Balance, Spread};
use std::sync::Arc;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

/// The entry points being served, each with its own stop signal.
pub(crate) struct Servers(Vec<Server>);

struct Server {
    name: String,
    accept_grace: Duration,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

/// Starts serving every entry point with `proxy`: UDP and HTTP/3 on the
/// main runtime, TCP there too with one worker, on the worker threads with
/// several.
pub(crate) fn spawn_servers(proxy: &Arc<Proxy>, ready: Vec<Ready>) -> Result<Servers, RunError> {
    let mut servers = Vec::new();
    // What each worker serves: its listener of every TCP entry point.
    let mut shares: Vec<Vec<Share>> = Vec::new();
    for Ready {
        sockets,
        quic,
        info,
        accept_grace,
        udp_timeout,
    } in ready
    {
        // One stop signal per entry point: each stops accepting after its
        // own requestAcceptGraceTimeout.
        let (stop, stop_rx) = watch::channel(false);
        let name = info.name.clone();
        let quic = quic.map(|endpoint| {
            tokio::spawn(proxy::http3::serve_http3(
                proxy.clone(),
                endpoint,
                info.clone(),
                stop_rx.clone(),
            ))
        });
        let task = match sockets {
            Sockets::Main(Listener::Tcp(listener)) => {
                let tcp = proxy::accept(proxy.clone(), listener, info, stop_rx, None);
                // Both sides of the port stop and drain together.
                tokio::spawn(async move {
                    tcp.await;
                    if let Some(quic) = quic {
                        let _ = quic.await;
                    }
                })
            }
            Sockets::Workers(listeners) => {
                shares.resize_with(shares.len().max(listeners.len()), Vec::new);
                let mut drained = Vec::new();
                let (spread, inboxes) = Spread::new(listeners.len());
                for (me, ((share, listener), inbox)) in
                    shares.iter_mut().zip(listeners).zip(inboxes).enumerate()
                {
                    let (done, done_rx) = oneshot::channel();
                    drained.push(done_rx);
                    share.push(Share {
                        listener,
                        info: info.clone(),
                        stop: stop_rx.clone(),
                        drained: done,
                        balance: Balance {
                            spread: spread.clone(),
                            me,
                            inbox,
                        },
                    });
                }
                // The entry point has drained when every worker has.
                tokio::spawn(async move {
                    futures_util::future::join_all(drained).await;
                    if let Some(quic) = quic {
                        let _ = quic.await;
                    }
                })
            }
            Sockets::Main(Listener::Udp(socket)) => tokio::spawn(proxy::serve_udp(
                proxy.runtime.clone(),
                socket,
                info,
                udp_timeout,
                stop_rx,
            )),
        };
        servers.push(Server {
            name,
            accept_grace,
            stop,
            task,
        });
    }
    if !shares.is_empty() {
        workers::spawn(proxy, shares)?;
    }
    Ok(Servers(servers))
}

impl Servers {
    /// Stops every entry point and waits until its requests in flight are
    /// done (or its graceTimeOut has passed).
    pub(crate) async fn drain(self) {
        let stopped = self.0.into_iter().map(|server| async move {
            let Server {
                name,
                accept_grace,
                stop,
                task,
            } = server;
            // Traefik's requestAcceptGraceTimeout: keep accepting and serving
            // for that long, then stop accepting and drain (graceTimeOut).
            if !accept_grace.0.is_zero() {
                tracing::info!(entry_point = %name, "still accepting requests for {accept_grace} (requestAcceptGraceTimeout)");
                tokio::time::sleep(accept_grace.0).await;
            }
            let _ = stop.send(true);
            let _ = task.await;
        });
        futures_util::future::join_all(stopped).await;
    }
}
