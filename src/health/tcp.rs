//! Active health checks of TCP servers (Traefik 3.6's
//! `tcp.services.<name>.loadBalancer.healthCheck`): a connection within the
//! timeout, then optionally `send` written and `expect` awaited. A server
//! that fails is marked down in its [`ServerHealth`], which the load
//! balancer and the API read; it is marked up again when a check passes.
//!
//! Compile gets one [`TcpChecker`] per service and check from `Registries`
//! (kept while a runtime uses it); `Registries::sweep` starts its task.

use crate::balance::passive::ServerHealth;
use crate::config::dynamic::tcp::TcpHealthCheck;
use std::io;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Traefik's defaults.
const DEFAULT_INTERVAL: Duration = Duration::from_secs(30);
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
/// Bytes read while waiting for `expect` before the check gives up, so a
/// server that streams endlessly cannot grow the buffer without bound.
const READ_LIMIT: usize = 64 * 1024;

/// Why a TCP check of a server failed.
#[derive(Debug, thiserror::Error)]
pub enum TcpCheckFailure {
    /// The connection was refused or could not be made.
    #[error("cannot connect to {address}: {source}")]
    Connect {
        /// The address checked.
        address: String,
        /// What the system said.
        source: io::Error,
    },
    /// The check did not finish within the timeout.
    #[error("no answer from {address} within {limit:?}")]
    Timeout {
        /// The address checked.
        address: String,
        /// The check's timeout.
        limit: Duration,
    },
    /// Writing `send` failed.
    #[error("cannot send to {address}: {source}")]
    Send {
        /// The address checked.
        address: String,
        /// What the system said.
        source: io::Error,
    },
    /// Reading the answer failed.
    #[error("cannot read from {address}: {source}")]
    Read {
        /// The address checked.
        address: String,
        /// What the system said.
        source: io::Error,
    },
    /// The server closed the connection or answered something else.
    #[error("{address} answered {got:?}, not the expected {expected:?}")]
    Unexpected {
        /// The address checked.
        address: String,
        /// The `expect` setting.
        expected: String,
        /// What came back (lossy text, its first bytes).
        got: String,
    },
}

/// The compiled check of one load balancer's servers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TcpCheckPlan {
    /// Time between checks of a server that is up.
    pub interval: Duration,
    /// Time between checks of a server that is down.
    pub unhealthy_interval: Duration,
    /// Time one check may take.
    pub timeout: Duration,
    /// Written once connected.
    pub send: Vec<u8>,
    /// Awaited in the answer.
    pub expect: Vec<u8>,
    /// Port used instead of each server's own.
    pub port: Option<u16>,
}

impl TcpCheckPlan {
    /// The plan for `check`, with Traefik's defaults; a zero interval or
    /// timeout counts as unset (as in Traefik), so a check never spins.
    pub fn new(check: &TcpHealthCheck) -> Self {
        let set =
            |d: Option<crate::config::Duration>| d.map(Duration::from).filter(|d| !d.is_zero());
        let interval = set(check.interval).unwrap_or(DEFAULT_INTERVAL);
        TcpCheckPlan {
            interval,
            unhealthy_interval: set(check.unhealthy_interval).unwrap_or(interval),
            timeout: set(check.timeout).unwrap_or(DEFAULT_TIMEOUT),
            send: check.send.as_bytes().to_vec(),
            expect: check.expect.as_bytes().to_vec(),
            port: check.port,
        }
    }

    /// The address checked for a server at `address`: its own, or its host
    /// with the check's `port`.
    pub fn address_for(&self, address: &str) -> String {
        match (self.port, address.rsplit_once(':')) {
            (Some(port), Some((host, _))) => format!("{host}:{port}"),
            (Some(port), None) => format!("{address}:{port}"),
            (None, _) => address.to_owned(),
        }
    }

    /// One check of the server at `address` (already with the check's
    /// port), within the timeout.
    pub async fn check(&self, address: &str) -> Result<(), TcpCheckFailure> {
        let mut got = Vec::new();
        match tokio::time::timeout(self.timeout, self.probe(address, &mut got)).await {
            Ok(outcome) => outcome,
            // Something came back, only not what was expected: say what.
            Err(_) if !got.is_empty() => Err(self.unexpected(address, got)),
            Err(_) => Err(TcpCheckFailure::Timeout {
                address: address.to_owned(),
                limit: self.timeout,
            }),
        }
    }

    fn unexpected(&self, address: &str, mut got: Vec<u8>) -> TcpCheckFailure {
        got.truncate(self.expect.len().max(64));
        TcpCheckFailure::Unexpected {
            address: address.to_owned(),
            expected: String::from_utf8_lossy(&self.expect).into_owned(),
            got: String::from_utf8_lossy(&got).into_owned(),
        }
    }

    async fn probe(&self, address: &str, got: &mut Vec<u8>) -> Result<(), TcpCheckFailure> {
        let mut stream =
            TcpStream::connect(address)
                .await
                .map_err(|source| TcpCheckFailure::Connect {
                    address: address.to_owned(),
                    source,
                })?;
        if !self.send.is_empty() {
            stream
                .write_all(&self.send)
                .await
                .map_err(|source| TcpCheckFailure::Send {
                    address: address.to_owned(),
                    source,
                })?;
        }
        if self.expect.is_empty() {
            return Ok(());
        }
        let mut chunk = [0u8; 4096];
        loop {
            if contains(got, &self.expect) {
                return Ok(());
            }
            if got.len() >= READ_LIMIT {
                break;
            }
            let n = stream
                .read(&mut chunk)
                .await
                .map_err(|source| TcpCheckFailure::Read {
                    address: address.to_owned(),
                    source,
                })?;
            if n == 0 {
                break;
            }
            got.extend_from_slice(&chunk[..n]);
        }
        Err(self.unexpected(address, std::mem::take(got)))
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// The check of one TCP load balancer: its plan, the health of each of its
/// servers (held weakly, so the check ends when no runtime keeps them) and
/// its task once started. Dropping it stops the task.
pub struct TcpChecker {
    service: String,
    plan: TcpCheckPlan,
    servers: Vec<(String, Weak<ServerHealth>)>,
    task: Mutex<Option<tokio::task::AbortHandle>>,
}

impl TcpChecker {
    /// A checker for `service`'s servers (address and health) by `plan`;
    /// it checks nothing until [`TcpChecker::start`].
    pub fn new(service: &str, plan: TcpCheckPlan, servers: &[(String, Arc<ServerHealth>)]) -> Self {
        TcpChecker {
            service: service.to_owned(),
            servers: servers
                .iter()
                .map(|(address, health)| (plan.address_for(address), Arc::downgrade(health)))
                .collect(),
            plan,
            task: Mutex::new(None),
        }
    }

    /// Starts the checks unless they run already. Needs a tokio runtime;
    /// without one it does nothing (a later call starts them).
    pub fn start(&self) {
        let mut task = self.task.lock().unwrap_or_else(PoisonError::into_inner);
        if task.is_some() || tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let service = self.service.clone();
        let plan = self.plan.clone();
        let servers = self.servers.clone();
        let handle = tokio::spawn(async move {
            let loops = servers
                .iter()
                .map(|(address, health)| check_loop(&service, &plan, address, health));
            futures_util::future::join_all(loops).await;
        });
        *task = Some(handle.abort_handle());
    }
}

impl Drop for TcpChecker {
    fn drop(&mut self) {
        let task = self.task.get_mut().unwrap_or_else(PoisonError::into_inner);
        if let Some(task) = task.take() {
            task.abort();
        }
    }
}

async fn check_loop(
    service: &str,
    plan: &TcpCheckPlan,
    address: &str,
    health: &Weak<ServerHealth>,
) {
    loop {
        let outcome = plan.check(address).await;
        let Some(h) = health.upgrade() else {
            return;
        };
        let up = outcome.is_ok();
        if h.set_checked(up) {
            match outcome {
                Ok(()) => {
                    tracing::info!(%service, server = %address, "TCP server passes its health check again")
                }
                Err(e) => {
                    tracing::warn!(%service, server = %address, error = %e, "TCP server fails its health check; no new connections until it passes")
                }
            }
        }
        drop(h);
        tokio::time::sleep(if up {
            plan.interval
        } else {
            plan.unhealthy_interval
        })
        .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_traefik_and_unhealthy_interval_follows_interval() {
        let plan = TcpCheckPlan::new(&TcpHealthCheck::default());
        assert_eq!(plan.interval, DEFAULT_INTERVAL);
        assert_eq!(plan.unhealthy_interval, DEFAULT_INTERVAL);
        assert_eq!(plan.timeout, DEFAULT_TIMEOUT);
        let plan = TcpCheckPlan::new(&TcpHealthCheck {
            interval: Some(Duration::from_secs(2).into()),
            ..TcpHealthCheck::default()
        });
        assert_eq!(plan.unhealthy_interval, Duration::from_secs(2));
    }

    #[test]
    fn the_check_port_replaces_the_servers_port() {
        let plan = TcpCheckPlan::new(&TcpHealthCheck {
            port: Some(9000),
            ..TcpHealthCheck::default()
        });
        assert_eq!(plan.address_for("127.0.0.1:80"), "127.0.0.1:9000");
        assert_eq!(plan.address_for("[::1]:80"), "[::1]:9000");
        let plain = TcpCheckPlan::new(&TcpHealthCheck::default());
        assert_eq!(plain.address_for("127.0.0.1:80"), "127.0.0.1:80");
    }
}
