//! TCP routing: a connection taken by a TCP router instead of the HTTP
//! ones, as in Traefik. Plain routers (``HostSNI(`*`)``, `ClientIP`) take
//! non-TLS connections; TLS routers take TLS connections by their
//! ClientHello (SNI, ALPN), then forward the TLS stream untouched
//! (`passthrough`) or terminate it here and forward the plain bytes.
//! A connection no TCP router takes goes on to the HTTP routers.

mod pump;

use super::rewind::Rewind;
use super::{EntryPointInfo, Proxy};
use crate::client;
use crate::rule::ConnFacts;
use crate::runtime::HttpsClaim;
use crate::runtime::tcp::{TcpRoute, TcpRoutes, TcpTls};
use bytes::Bytes;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{Instant, timeout, timeout_at};

/// Time a PostgreSQL server behind passthrough has to answer the
/// SSLRequest gangway passes on.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// The most a ClientHello may take before it is refused (it may span
/// several records; real ones are a few hundred bytes).
const MAX_CLIENT_HELLO: usize = 64 * 1024;

/// PostgreSQL's SSLRequest: length 8, then the code 80877103. A client
/// that wants TLS sends it first and starts TLS once the server answers
/// `S` (RFC-less "STARTTLS" of the PostgreSQL protocol).
pub(super) const POSTGRES_SSL_REQUEST: [u8; 8] = [0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f];

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
                if let (Some(_held), Ok(local)) = (admitted(route, peer), stream.local_addr()) {
                    forward(route, stream, (peer, local, Preamble::None), entry_point).await;
                }
                Ok(())
            }
            None => Err(stream),
        }
    }

    /// A PostgreSQL client asking for TLS: answered `S` as a server would,
    /// then routed by the SNI of the ClientHello that follows, as Traefik
    /// does. Only TCP routers can take it; a server behind `passthrough`
    /// is asked for TLS the same way before the hello is passed on.
    pub(super) async fn tcp_postgres(
        &self,
        routes: &TcpRoutes,
        mut stream: TcpStream,
        peer: SocketAddr,
        entry_point: &EntryPointInfo,
        deadline: Instant,
    ) {
        let mut request = [0u8; POSTGRES_SSL_REQUEST.len()];
        let asked = timeout_at(deadline, stream.read_exact(&mut request)).await;
        if !matches!(asked, Ok(Ok(_))) || stream.write_all(b"S").await.is_err() {
            return;
        }
        let no_https = |_: Option<&str>| HttpsClaim::Nothing;
        let decision = self
            .tcp_tls(routes, &no_https, stream, peer, entry_point, deadline, true)
            .await;
        if let TlsDecision::Http(_) = decision {
            tracing::debug!(%peer, entry_point = %entry_point.name, "PostgreSQL TLS request: no TCP router takes its server name; closed");
        }
    }

    /// Reads a TLS connection's ClientHello and gives it to the TCP router
    /// that takes it, if any. `postgres`: the client asked for TLS with
    /// PostgreSQL's SSLRequest first.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn tcp_tls(
        &self,
        routes: &TcpRoutes,
        https: &(dyn Fn(Option<&str>) -> HttpsClaim + Sync),
        mut stream: TcpStream,
        peer: SocketAddr,
        entry_point: &EntryPointInfo,
        deadline: Instant,
        postgres: bool,
    ) -> TlsDecision {
        let Ok(local) = stream.local_addr() else {
            return TlsDecision::Closed;
        };
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
            // An ACME TLS-ALPN-01 validation is answered on the HTTPS side,
            // whatever router its name has (a TCP router's certificate is
            // ordered that way too).
            let validation = hello
                .alpn()
                .is_some_and(|mut p| p.any(|p| p == crate::tls::ACME_TLS_ALPN));
            let sni = hello.server_name().map(str::to_ascii_lowercase);
            let alpn: Vec<&[u8]> = hello.alpn().map(Iterator::collect).unwrap_or_default();
            let facts = ConnFacts {
                sni: sni.as_deref(),
                alpn: &alpn,
                client_ip: peer.ip(),
            };
            match https(sni.as_deref()) {
                _ if validation => None,
                HttpsClaim::Named => None,
                claim => routes
                    .find_tls(&facts)
                    .filter(|route| !route.matcher.is_catch_all() || claim == HttpsClaim::Nothing),
            }
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
                self.tcp_terminate(&route, stream, (peer, local), entry_point, limit)
                    .await;
            }
            TcpTls::Passthrough | TcpTls::Plain => {
                let preamble = if postgres {
                    Preamble::PostgresSslRequest
                } else {
                    Preamble::None
                };
                forward(&route, stream, (peer, local, preamble), entry_point).await;
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
        (peer, local): (SocketAddr, SocketAddr),
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
        forward(route, tls, (peer, local, Preamble::None), entry_point).await;
    }
}

/// One connection counted in its entry point's `open_connections`, until
/// dropped.
struct OpenConnection<'a>(&'a crate::metrics::Stats);

impl<'a> OpenConnection<'a> {
    fn new(stats: &'a crate::metrics::Stats) -> Self {
        stats.connection_opened();
        OpenConnection(stats)
    }
}

impl Drop for OpenConnection<'_> {
    fn drop(&mut self) {
        self.0.connection_closed();
    }
}

/// What is said to a server before the client's bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Preamble {
    /// Nothing.
    None,
    /// PostgreSQL's SSLRequest, whose `S` answer is read and dropped: the
    /// client got its `S` from gangway already.
    PostgresSslRequest,
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

/// Connects to the route's servers in turn until one answers (servers
/// that failed lately last), then copies bytes both ways until both sides
/// are done, or one is and the termination delay has passed.
async fn forward<C>(
    route: &TcpRoute,
    client: C,
    (peer, local, preamble): (SocketAddr, SocketAddr, Preamble),
    entry_point: &EntryPointInfo,
) where
    C: AsyncRead + AsyncWrite + Unpin,
{
    let picked = route.target.pick();
    let transport = picked.transport;
    let mut upstream = None;
    for &server in &picked.servers {
        match client::tcp::dial(
            &server.address,
            transport.dial_timeout,
            transport.keep_alive,
        )
        .await
        {
            Ok(stream) => {
                server.health.answered();
                upstream = Some((server, stream));
                break;
            }
            Err(e) => {
                server.health.failed();
                tracing::warn!(router = %route.name, service = %route.service_name, server = %server.address, error = %e, "TCP server could not be reached; skipped for a while, trying the next");
            }
        }
    }
    let Some((target, mut server)) = upstream else {
        tracing::warn!(router = %route.name, service = %route.service_name, %peer, "no TCP server could be reached; connection closed");
        return;
    };
    // Counted in the entry point's open connections while it is forwarded,
    // as HTTP connections are.
    let _open = entry_point.stats.as_deref().map(OpenConnection::new);
    if let Some(version) = transport.proxy_protocol {
        let header = super::proxy_protocol::header(version, peer, local);
        if let Err(e) = server.write_all(&header).await {
            tracing::debug!(router = %route.name, error = %e, "PROXY protocol header not sent");
            return;
        }
    }
    if preamble == Preamble::PostgresSslRequest {
        let mut answer = [0u8; 1];
        let asked = async {
            server.write_all(&POSTGRES_SSL_REQUEST).await?;
            server.read_exact(&mut answer).await
        };
        match timeout(ANSWER_TIMEOUT, asked).await {
            Ok(Ok(_)) if answer == *b"S" => {}
            _ => {
                tracing::warn!(router = %route.name, service = %route.service_name, "the PostgreSQL server behind passthrough does not accept TLS; connection closed");
                return;
            }
        }
    }
    let _counted = route.stats.as_ref().map(crate::metrics::StreamStats::open);
    let mut client = Counted {
        inner: client,
        stats: route.stats.as_ref(),
    };
    let copied = match &target.tls {
        None => pump::copy_both_ways(&mut client, &mut server, transport.termination_delay).await,
        Some(tls) => {
            let handshake =
                client::tcp::start_tls(&tls.config, &tls.name, server, transport.dial_timeout);
            match handshake.await {
                Ok(mut server) => {
                    pump::copy_both_ways(&mut client, &mut server, transport.termination_delay)
                        .await
                }
                Err(e) => {
                    // Fails closed: the client's connection ends here.
                    tracing::error!(router = %route.name, service = %route.service_name, server = %target.address, error = %e, "TLS with the TCP server failed; connection closed");
                    return;
                }
            }
        }
    };
    let pump::Copied { up, down, end } = copied;
    match end {
        pump::End::Failed(e) => {
            tracing::debug!(router = %route.name, entry_point = %entry_point.name, %peer, up, down, error = %e, "TCP connection ended");
        }
        end => {
            tracing::debug!(router = %route.name, entry_point = %entry_point.name, %peer, up, down, ?end, "TCP connection done");
        }
    }
}

/// The client's side of a forwarded connection, counting its bytes in the
/// router's counters as they pass (not only when the connection ends).
struct Counted<'a, C> {
    inner: C,
    stats: Option<&'a crate::metrics::StreamStats>,
}

impl<C: AsyncRead + Unpin> AsyncRead for Counted<'_, C> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Some(stats) = self.stats {
            stats.received((buf.filled().len() - before) as u64);
        }
        polled
    }
}

impl<C: AsyncWrite + Unpin> AsyncWrite for Counted<'_, C> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let polled = std::pin::Pin::new(&mut self.inner).poll_write(cx, buf);
        if let (Some(stats), std::task::Poll::Ready(Ok(n))) = (self.stats, &polled) {
            stats.sent(*n as u64);
        }
        polled
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
