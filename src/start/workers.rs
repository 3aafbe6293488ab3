//! The worker threads: each runs a single-thread runtime that accepts on
//! its own listener of every TCP entry point and serves those connections
//! start to finish (`crate::worker`).

use super::RunError;
use crate::proxy::{self, EntryPointInfo, Proxy};
use crate::worker::handoff::Balance;
use std::sync::Arc;
use tokio::sync::{oneshot, watch};

/// A TCP entry point's share of one worker.
pub(super) struct Share {
    /// This worker's listener of the entry point.
    pub(super) listener: std::net::TcpListener,
    /// What the proxy serves it with.
    pub(super) info: Arc<EntryPointInfo>,
    /// Turns true when the entry point stops accepting.
    pub(super) stop: watch::Receiver<bool>,
    /// Told when this worker has stopped accepting and drained the entry
    /// point's connections.
    pub(super) drained: oneshot::Sender<()>,
    /// How this worker evens out the entry point's connections with the
    /// other workers.
    pub(super) balance: Balance,
}

/// Starts one thread per element of `shares` (worker `i` serves
/// `shares[i]`), each with its own single-thread runtime. The threads end
/// once every entry point they serve has drained.
pub(super) fn spawn(proxy: &Arc<Proxy>, shares: Vec<Vec<Share>>) -> Result<(), RunError> {
    for (index, share) in shares.into_iter().enumerate() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|source| RunError::Worker { index, source })?;
        let proxy = proxy.clone();
        std::thread::Builder::new()
            .name(format!("gangway-worker-{index}"))
            .spawn(move || {
                crate::worker::enter(index);
                runtime.block_on(serve(proxy, share));
            })
            .map_err(|source| RunError::Worker { index, source })?;
    }
    Ok(())
}

/// Serves a worker's listeners until each has stopped and drained.
async fn serve(proxy: Arc<Proxy>, shares: Vec<Share>) {
    let loops = shares.into_iter().map(|share| {
        let proxy = proxy.clone();
        async move {
            let Share {
                listener,
                info,
                stop,
                drained,
                balance,
            } = share;
            // Registered here, with this worker's runtime, so that its
            // readiness wakes this thread only.
            match tokio::net::TcpListener::from_std(listener) {
                Ok(listener) => proxy::accept(proxy, listener, info, stop, Some(balance)).await,
                Err(e) => {
                    tracing::error!(entry_point = %info.name, error = %e, "worker cannot serve its listener");
                }
            }
            let _ = drained.send(());
        }
    });
    futures_util::future::join_all(loops).await;
}
