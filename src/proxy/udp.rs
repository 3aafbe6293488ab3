//! A UDP entry point: each client (address and port) gets a session, its
//! own socket towards the server its router's service picks, so replies go
//! back to that client only. A session ends after `udp.timeout` without a
//! datagram either way (Traefik's semantics); the next datagram from that
//! client starts a new one.

use super::EntryPointInfo;
use crate::metrics::StreamStats;
use crate::runtime::RuntimeHandle;
use crate::runtime::tcp::{ServerHealth, UdpRoute};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::net::UdpSocket;
use tokio::sync::watch;
use tokio::time::Instant;

/// The largest datagram forwarded (IPv4's limit; larger ones cannot exist).
const MAX_DATAGRAM: usize = 65_535;

/// Sessions one entry point keeps at once; datagrams of new clients past
/// this are dropped until sessions end, so a flood of spoofed sources
/// cannot take every socket of the machine.
const MAX_SESSIONS: usize = 16_384;

/// One client's session.
struct Session {
    /// Connected to the server.
    upstream: Arc<UdpSocket>,
    /// What the server's datagrams say of it, for every surface.
    server: Arc<ServerHealth>,
    /// The router that opened it, for its counters.
    route: Arc<UdpRoute>,
    /// Milliseconds since `epoch` of the last datagram either way.
    last: AtomicU64,
}

type Sessions = Arc<Mutex<HashMap<SocketAddr, Arc<Session>>>>;

/// Receives datagrams on `socket` until `shutdown`, forwarding each to its
/// client's session.
pub async fn serve_udp(
    runtime: Arc<RuntimeHandle>,
    socket: UdpSocket,
    entry_point: Arc<EntryPointInfo>,
    timeout: Duration,
    mut shutdown: watch::Receiver<bool>,
) {
    let socket = Arc::new(socket);
    let sessions: Sessions = Arc::default();
    let epoch = Instant::now();
    let mut buf = vec![0u8; MAX_DATAGRAM];
    loop {
        let (n, client) = tokio::select! {
            got = socket.recv_from(&mut buf) => match got {
                Ok(got) => got,
                // An ICMP error for an earlier send, and the like: the
                // socket itself still works.
                Err(_) => continue,
            },
            _ = shutdown.changed() => break,
        };
        let client = SocketAddr::new(client.ip().to_canonical(), client.port());
        let known = sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&client)
            .cloned();
        let session = match known {
            Some(s) => s,
            None => {
                let full = sessions
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .len()
                    >= MAX_SESSIONS;
                if full {
                    continue;
                }
                match open(&runtime, &entry_point, client).await {
                    Some((upstream, server, route)) => {
                        let session = Arc::new(Session {
                            upstream,
                            server,
                            route,
                            last: AtomicU64::new(millis(epoch)),
                        });
                        sessions
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .insert(client, session.clone());
                        tokio::spawn(replies(
                            session.clone(),
                            socket.clone(),
                            (client, entry_point.clone()),
                            sessions.clone(),
                            (epoch, timeout),
                        ));
                        session
                    }
                    None => continue,
                }
            }
        };
        session.last.store(millis(epoch), Ordering::Relaxed);
        if let Some(stats) = &session.route.stats {
            stats.received(n as u64);
        }
        let _ = session.upstream.send(&buf[..n]).await;
    }
    tracing::info!(entry_point = %entry_point.name, "UDP entry point stopped");
}

fn millis(epoch: Instant) -> u64 {
    u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// A socket connected to the server the entry point's router picks for a
/// new client, and that server's health; `None` (the datagram is dropped)
/// when there is no router or no server can be used.
async fn open(
    runtime: &RuntimeHandle,
    entry_point: &EntryPointInfo,
    client: SocketAddr,
) -> Option<(Arc<UdpSocket>, Arc<ServerHealth>, Arc<UdpRoute>)> {
    let route = runtime.load().udp.get(entry_point.id).cloned().flatten()?;
    let picked: Vec<(String, Arc<ServerHealth>)> = route
        .target
        .pick()
        .servers
        .iter()
        .map(|s| (s.address.clone(), s.health.clone()))
        .collect();
    for (address, health) in picked {
        let Ok(server) = tokio::net::lookup_host(&address)
            .await
            .map(|mut a| a.next())
        else {
            continue;
        };
        let Some(server) = server else { continue };
        let local: SocketAddr = if server.is_ipv4() {
            ([0, 0, 0, 0], 0).into()
        } else {
            (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
        };
        let Ok(upstream) = UdpSocket::bind(local).await else {
            continue;
        };
        if upstream.connect(server).await.is_ok() {
            tracing::debug!(router = %route.name, %client, %server, "UDP session opened");
            return Some((Arc::new(upstream), health, route));
        }
    }
    tracing::warn!(router = %route.name, service = %route.service_name, %client, "no UDP server could be used; datagram dropped");
    None
}

/// Sends the server's datagrams back to the client until the session has
/// been idle for `timeout`, then forgets it.
async fn replies(
    session: Arc<Session>,
    socket: Arc<UdpSocket>,
    (client, entry_point): (SocketAddr, Arc<EntryPointInfo>),
    sessions: Sessions,
    (epoch, timeout): (Instant, Duration),
) {
    // Counted as open (per entry point and per router) while it lasts.
    let _router_open = session.route.stats.as_ref().map(StreamStats::open);
    if let Some(stats) = &entry_point.stats {
        stats.connection_opened();
    }
    let mut buf = vec![0u8; MAX_DATAGRAM];
    let timeout_ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
    // Noted once per session: the first answer, or the port's refusal.
    let mut noted = false;
    loop {
        let idle = millis(epoch).saturating_sub(session.last.load(Ordering::Relaxed));
        let Some(left) = timeout_ms.checked_sub(idle).filter(|l| *l > 0) else {
            break;
        };
        match tokio::time::timeout(Duration::from_millis(left), session.upstream.recv(&mut buf))
            .await
        {
            Ok(Ok(n)) => {
                if !noted {
                    session.server.answered();
                    noted = true;
                }
                session.last.store(millis(epoch), Ordering::Relaxed);
                if let Ok(sent) = socket.send_to(&buf[..n], client).await
                    && let Some(stats) = &session.route.stats
                {
                    stats.sent(sent as u64);
                }
            }
            // The server's port refused an earlier datagram (ICMP port
            // unreachable): the session stays until it is idle.
            Ok(Err(e)) => {
                if !noted && e.kind() == std::io::ErrorKind::ConnectionRefused {
                    session.server.failed();
                    noted = true;
                }
            }
            // Idle so far; the loop checks against the latest datagram.
            Err(_) => {}
        }
    }
    if !noted {
        // Datagrams went out and nothing came back within `udp.timeout`.
        session.server.timed_out();
    }
    let mut map = sessions.lock().unwrap_or_else(PoisonError::into_inner);
    if map.get(&client).is_some_and(|s| Arc::ptr_eq(s, &session)) {
        map.remove(&client);
    }
    if let Some(stats) = &entry_point.stats {
        stats.connection_closed();
    }
}
