//! TCP routing: a connection taken by a TCP router instead of the HTTP
//! ones, as in Traefik. Plain routers (``HostSNI(`*`)``, `ClientIP`) take
//! non-TLS connections; TLS routers take TLS connections by their
//! ClientHello (SNI, ALPN), then forward the TLS stream untouched
//! (`passthrough`) or terminate it here and forward the plain bytes.
//! A connection no TCP router takes goes on to the HTTP routers.

use super::rewind::Rewind;
use super::{EntryPointInfo, Proxy};
use crate::rule::ConnFacts;
use crate::runtime::tcp::{TcpRoute, TcpRoutes, TcpTls};
use bytes::Bytes;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use tokio::net::TcpStream;
use tokio::time::{Instant, timeout, timeout_at};

/// Time to connect to a server.
const DIAL_TIMEOUT: Duration = Duration::from_secs(30);

/// The most a ClientHello may take before it is refused (it may span
/// several records; real ones are a few hundred bytes).
const MAX_CLIENT_HELLO: usize = 64 * 1024;

/// What a TLS connection's ClientHello decided.
pub(super) enum TlsDecision {
    /// A TCP router took the connection and served it.
    Served,
    /// No TCP router takes it: HTTPS, with the bytes read so far.
    Http(Rewind<TcpStream>),
    /// The hello was malformed or never came: closed.
    Closed,
}

impl Proxy {
    /// Serves a plain connection with a plain TCP router, if one takes it
    /// from what is known before any byte (the client's address); what
    /// the client sent is still unread. `Err` hands the stream back for
    /// HTTP.
    pub(super) async fn tcp_plain(
        &self,
        routes: &TcpRoutes,
        stream: TcpStream,
        peer: SocketAddr,
        entry_point: &EntryPointInfo,
    ) -> Result<(), TcpStream> {
        let facts = ConnFacts {
            sni: None,
            alpn: &[],
            client_ip: peer.ip(),
        };
        match routes.find_plain(&facts) {
            Some(route) => {
                if let Some(_held) = admitted(route, peer) {
                    forward(route, stream, peer, entry_point).await;
                }
                Ok(())
            }
            None => Err(stream),
        }
    }

    /// Reads a TLS connection's ClientHello and gives it to the TCP router
    /// that takes it, if any.
    pub(super) async fn tcp_tls(
        &self,
        routes: &TcpRoutes,
        http_hosts: &(dyn Fn(&str) -> bool + Sync),
        mut stream: TcpStream,
        peer: SocketAddr,
        entry_point: &EntryPointInfo,
        deadline: Instant,
    ) -> TlsDecision {
        let mut acceptor = rustls::server::Acceptor::default();
        let mut seen: Vec<u8> = Vec::with_capacity(1024);
        let mut chunk = [0u8; 4096];
        let accepted = loop {
            let n = match timeout_at(deadline, stream.read(&mut chunk)).await {
                Ok(Ok(n)) if n > 0 => n,
                _ => return TlsDecision::Closed,
            };
            seen.extend_from_slice(&chunk[..n]);
            if seen.len() > MAX_CLIENT_HELLO {
                return TlsDecision::Closed;
            }
            let mut fresh = &chunk[..n];
            while !fresh.is_empty() {
                if acceptor.read_tls(&mut fresh).is_err() {
                    return TlsDecision::Closed;
                }
            }
            match acceptor.accept() {
                Ok(Some(accepted)) => break accepted,
                Ok(None) => {}
                Err(_) => return TlsDecision::Closed,
            }
        };
        let route = {
            let hello = accepted.client_hello();
            let sni = hello.server_name().map(str::to_ascii_lowercase);
            let alpn: Vec<&[u8]> = hello.alpn().map(Iterator::collect).unwrap_or_default();
            let facts = ConnFacts {
                sni: sni.as_deref(),
                alpn: &alpn,
                client_ip: peer.ip(),
            };
            routes.find_tls(&facts).filter(|route| {
                // As in Traefik: an HTTPS router for this very name wins
                // over a TCP router that takes every name.
                route.matcher.needs_client_hello() || !sni.as_deref().is_some_and(http_hosts)
            })
        }
        .cloned();
        drop(accepted);
        let stream = Rewind::new(Bytes::from(seen), stream);
        let Some(route) = route else {
            return TlsDecision::Http(stream);
        };
        let Some(_held) = admitted(&route, peer) else {
            return TlsDecision::Served;
        };
        match route.tls {
            TcpTls::Terminate => {
                let limit = deadline.saturating_duration_since(Instant::now());
                self.tcp_terminate(&route, stream, peer, entry_point, limit)
                    .await;
            }
            TcpTls::Passthrough | TcpTls::Plain => {
                forward(&route, stream, peer, entry_point).await;
            }
        }
        TlsDecision::Served
    }

    /// Terminates TLS with the certificate and options the runtime picks
    /// for the ClientHello, and forwards the plain bytes.
    async fn tcp_terminate(
        &self,
        route: &Arc<TcpRoute>,
        stream: Rewind<TcpStream>,
        peer: SocketAddr,
        entry_point: &EntryPointInfo,
        limit: Duration,
    ) {
        let acceptor =
            tokio_rustls::LazyConfigAcceptor::new(rustls::server::Acceptor::default(), stream);
        let Ok(Ok(start)) = timeout(limit, acceptor).await else {
            return;
        };
        let Some(config) = self
            .runtime
            .load()
            .tls
            .tcp_config_for(&start.client_hello())
        else {
            return;
        };
        let tls = match timeout(limit, start.into_stream(config)).await {
            Ok(Ok(tls)) => tls,
            Ok(Err(e)) => {
                tracing::debug!(%peer, router = %route.name, error = %e, "TLS handshake failed");
                return;
            }
            Err(_) => return,
        };
        forward(route, tls, peer, entry_point).await;
    }
}

/// What the route's middlewares hold while the connection lasts; `None`
/// when one refuses it (the connection is then closed, as in Traefik).
fn admitted(route: &TcpRoute, peer: SocketAddr) -> Option<Vec<impl Drop>> {
    match route.admit(peer.ip()) {
        Ok(held) => Some(held),
        Err(middleware) => {
            tracing::debug!(router = %route.name, %middleware, %peer, "TCP connection refused by a middleware");
            None
        }
    }
}

/// Connects to the route's servers in turn until one answers, then copies
/// bytes both ways until both sides are done.
async fn forward<C>(route: &TcpRoute, mut client: C, peer: SocketAddr, entry_point: &EntryPointInfo)
where
    C: AsyncRead + AsyncWrite + Unpin,
{
    let mut upstream = None;
    for address in route.target.pick() {
        match timeout(DIAL_TIMEOUT, TcpStream::connect(address)).await {
            Ok(Ok(server)) => {
                let _ = server.set_nodelay(true);
                upstream = Some(server);
                break;
            }
            Ok(Err(e)) => {
                tracing::warn!(router = %route.name, service = %route.service_name, server = %address, error = %e, "TCP server refused the connection; trying the next");
            }
            Err(_) => {
                tracing::warn!(router = %route.name, service = %route.service_name, server = %address, "TCP server did not answer in time; trying the next");
            }
        }
    }
    let Some(mut server) = upstream else {
        tracing::warn!(router = %route.name, service = %route.service_name, %peer, "no TCP server could be reached; connection closed");
        return;
    };
    match tokio::io::copy_bidirectional(&mut client, &mut server).await {
        Ok((up, down)) => {
            tracing::debug!(router = %route.name, entry_point = %entry_point.name, %peer, up, down, "TCP connection done");
        }
        Err(e) => {
            tracing::debug!(router = %route.name, entry_point = %entry_point.name, %peer, error = %e, "TCP connection ended");
        }
    }
}
