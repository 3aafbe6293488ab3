//! Listeners, connections and the request pipeline. Reads routing only
//! through `RuntimeHandle`; never sees configuration or providers.
//!
//! The hot path, in order: [`accept`] takes a connection and hands it to
//! `Proxy::serve_connection` (`connection`: TLS or plain, HTTP/1 or
//! HTTP/2; HTTP/2 streams in `h2_server`); each request goes through
//! `Proxy::serve_request` (`observe`: time limits, metrics, access log),
//! `Proxy::route` (`pipeline`: checks, routing, middlewares) and
//! `Proxy::forward` (`upstream`: the server's connection and the answer).
//! HTTP/3 (`http3`) has its own QUIC endpoint and connections, and its
//! requests join the same path at `Proxy::serve_request`.

/// `AsyncWrite` for a wrapper whose writes go straight to its `$field`
/// stream: the wrappers here (`Rewind`, `Guarded`, `Watched`) act on what
/// is read, never on what is written.
macro_rules! write_through {
    ($wrapper:ident, $field:ident) => {
        impl<I: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for $wrapper<I> {
            fn poll_write(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &[u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                std::pin::Pin::new(&mut self.get_mut().$field).poll_write(cx, buf)
            }

            fn poll_write_vectored(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                bufs: &[std::io::IoSlice<'_>],
            ) -> std::task::Poll<std::io::Result<usize>> {
                std::pin::Pin::new(&mut self.get_mut().$field).poll_write_vectored(cx, bufs)
            }

            fn is_write_vectored(&self) -> bool {
                self.$field.is_write_vectored()
            }

            fn poll_flush(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                std::pin::Pin::new(&mut self.get_mut().$field).poll_flush(cx)
            }

            fn poll_shutdown(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                std::pin::Pin::new(&mut self.get_mut().$field).poll_shutdown(cx)
            }
        }
    };
}

mod connection;
pub mod error;
pub mod forwarded;
mod h2_server;
pub mod http3;
pub mod observe;
mod pipeline;
mod proxy_protocol;
mod rewind;
mod tcp;
mod udp;

pub use udp::serve_udp;
mod timeouts;
mod upstream;
pub mod validate;

use crate::overload::ConnectionSlot;
use crate::runtime::{EntryPointId, RuntimeHandle};
use crate::worker::handoff::{Balance, Handed, Load};
use forwarded::TrustPolicy;
use http::HeaderValue;
use hyper::server::conn::http1;
use hyper_util::rt::TokioTimer;
use std::io;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// Shared by every connection of every entry point.
pub struct Proxy {
    /// The published routing table.
    pub runtime: Arc<RuntimeHandle>,
    /// This machine's host name, for `X-Forwarded-Server`.
    pub server_name: HeaderValue,
    /// The access log, when on.
    pub access_log: Option<Arc<crate::access_log::AccessLogger>>,
    /// Per-router or per-service metrics are on.
    pub route_metrics: bool,
    /// Requests to internal routers are counted in metrics.
    pub metrics_internals: bool,
    /// Requests to internal routers are logged.
    pub log_internals: bool,
    /// The request headers `metrics.prometheus.headerLabels` reads, in
    /// label order; empty (and nothing read) when none are configured.
    pub metrics_headers: Box<[http::HeaderName]>,
    /// OpenTelemetry tracing, when on.
    pub tracer: Option<Arc<crate::otel::trace::Tracer>>,
    /// Services that sleep when idle: a request may wait for a wake-up.
    pub sleeper: Arc<crate::sleep::Sleeper>,
}

/// What one client may send in its request heads and HTTP/2 control
/// frames (`entryPoints.<name>.limits`, read by settings).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeadLimits {
    /// Largest request head (HTTP/1 line and fields, or an HTTP/2 header
    /// list), in bytes.
    pub max_header_bytes: u32,
    /// Most fields in one HTTP/1 request head.
    pub max_headers: u32,
    /// HTTP/2 (and HTTP/3) streams a client may reset before they are
    /// accepted.
    pub max_pending_reset_streams: u32,
    /// PING and SETTINGS frames one HTTP/2 connection may send in ten
    /// seconds; 0: no limit.
    pub max_control_frames: u32,
}

/// An entry point as the proxy sees it.
pub struct EntryPointInfo {
    /// Name, for logs.
    pub name: String,
    /// Index into the runtime's tables.
    pub id: EntryPointId,
    /// Whose forwarded headers are believed.
    pub trust: TrustPolicy,
    /// Add the client's address to `X-Forwarded-For` (unless
    /// `forwardedHeaders.notAppendXForwardedFor`).
    pub append_x_forwarded_for: bool,
    /// An HTTP/1 connection's answer number this many says
    /// `Connection: close` (`transport.keepAliveMaxRequests`); 0: never.
    pub keep_alive_max_requests: u64,
    /// An HTTP/1 connection this old gets `Connection: close` on its next
    /// answer (`transport.keepAliveMaxTime`).
    pub keep_alive_max_time: Option<Duration>,
    /// Send `;` in queries on as `%3B` (`http.encodeQuerySemicolons`).
    pub encode_query_semicolons: bool,
    /// A router matching an ACME HTTP-01 challenge path takes it before
    /// gangway's own answer (`allowACMEByPass`).
    pub allow_acme_by_pass: bool,
    /// The HPACK table clients may use towards gangway
    /// (`http2.maxDecoderHeaderTableSize`).
    pub max_decoder_header_table_size: u32,
    /// Whose PROXY protocol header is read (`entryPoints.<n>.proxyProtocol`);
    /// `None`: no one's.
    pub proxy_protocol: Option<TrustPolicy>,
    /// Plain-HTTP requests here are redirected (`http.redirections`).
    pub redirect: Option<Redirect>,
    /// How long in-flight requests may take to finish at shutdown.
    pub grace: Duration,
    /// How long a client may take to send a request's head, from its
    /// first byte (`limits.headerReadTimeout`).
    pub header_read_timeout: Option<Duration>,
    /// How long a client may take to send a whole request, head and body
    /// (`respondingTimeouts.readTimeout`).
    pub read_timeout: Option<Duration>,
    /// How long from a request's head to the end of its answer
    /// (`respondingTimeouts.writeTimeout`).
    pub write_timeout: Option<Duration>,
    /// How long a keep-alive connection may wait for its next request
    /// (`respondingTimeouts.idleTimeout`).
    pub idle_timeout: Option<Duration>,
    /// How long an upgraded connection may stay silent both ways
    /// (`limits.webSocketIdleTimeout`).
    pub web_socket_idle_timeout: Option<Duration>,
    /// The largest request body (`limits.maxRequestBodyBytes`).
    pub max_request_body_bytes: Option<u64>,
    /// Put request paths in canonical form before routing
    /// (`http.sanitizePath`).
    pub sanitize_path: bool,
    /// The percent-escapes a request path may not hold
    /// (`http.encodedCharacters`), checked before routing.
    pub denied_escapes: crate::percent::DeniedEscapes,
    /// What happens to request headers whose names hold `_`
    /// (`http.underscoreHeadersStrategy`).
    pub underscore_headers: validate::Underscores,
    /// HTTP/2 streams open at once per connection (HTTP/3 too).
    pub max_concurrent_streams: u32,
    /// `Alt-Svc` for answers over TLS on TCP, when the entry point serves
    /// HTTP/3 too (`h3=":PORT"; ma=…`).
    pub alt_svc: Option<HeaderValue>,
    /// What one client may send.
    pub limits: HeadLimits,
    /// The bound on open connections; None when unlimited.
    pub connections: Option<crate::overload::ConnectionLimit>,
    /// The entry point's request counters, when per-entry-point metrics are on.
    pub stats: Option<Arc<crate::metrics::Stats>>,
    /// Requests here are traced when tracing is on
    /// (`observability.tracing`).
    pub traced: bool,
    /// Requests here are access-logged unless their router says otherwise
    /// (`observability.accessLogs`).
    pub access_logs: bool,
    /// Requests here are counted in the metrics unless their router says
    /// otherwise (`observability.metrics`).
    pub metrics: bool,
}

/// Where an entry point redirects plain-HTTP requests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Redirect {
    /// Scheme of the new URL (`https`).
    pub scheme: String,
    /// Port of the new URL; `None` for the scheme's default port.
    pub port: Option<u16>,
    /// 301/308 rather than 302/307.
    pub permanent: bool,
    /// Routers above this priority whose rule matches are served instead;
    /// `None`: the redirection comes before every router.
    pub priority: Option<i64>,
}

/// One accepted connection.
pub(crate) struct ConnInfo {
    pub(crate) entry_point: Arc<EntryPointInfo>,
    pub(crate) peer: SocketAddr,
    /// The client's address as a header value, made once per connection.
    pub(crate) peer_header: HeaderValue,
    /// The connection is TLS: routers with `tls` match, others do not.
    pub(crate) tls: bool,
    /// The TLS server name the client asked for, lowercased.
    pub(crate) sni: Option<Box<str>>,
    /// The TLS version and cipher suite agreed on, for TLS connections.
    pub(crate) negotiated: Option<crate::tls::negotiated::Negotiated>,
    /// What the connection is doing, when its head or idle time is limited.
    pub(crate) activity: Option<Arc<timeouts::Activity>>,
    /// The client certificate's subject, for the access log, when the
    /// client sent one.
    pub(crate) client_subject: Option<Arc<str>>,
    /// The certificates the client sent (leaf first), for
    /// `passTLSClientCert`.
    pub(crate) client_certs: Option<crate::middleware::ClientCerts>,
    /// Requests answered so far, counted when the entry point bounds them
    /// (`keepAliveMaxRequests`).
    answered: std::sync::atomic::AtomicU64,
    /// When the connection was accepted, kept when the entry point bounds
    /// its age (`keepAliveMaxTime`).
    opened: Option<std::time::Instant>,
}

impl ConnInfo {
    /// A connection from `peer` on `entry_point`, before any request.
    #[inline]
    pub(crate) fn new(
        entry_point: Arc<EntryPointInfo>,
        peer: SocketAddr,
        tls: bool,
        sni: Option<Box<str>>,
    ) -> Self {
        let opened = entry_point
            .keep_alive_max_time
            .map(|_| std::time::Instant::now());
        ConnInfo {
            entry_point,
            peer,
            peer_header: forwarded::peer_value(peer.ip()),
            tls,
            sni,
            negotiated: None,
            activity: None,
            client_subject: None,
            client_certs: None,
            answered: std::sync::atomic::AtomicU64::new(0),
            opened,
        }
    }

    /// Counts one more answer and says whether the connection has served
    /// its share (`keepAliveMaxRequests`, `keepAliveMaxTime`) and is to be
    /// closed after it.
    #[inline]
    pub(crate) fn keep_alive_spent(&self) -> bool {
        let ep = &self.entry_point;
        if ep.keep_alive_max_requests > 0 {
            let n = self
                .answered
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                + 1;
            if n >= ep.keep_alive_max_requests {
                return true;
            }
        }
        match (ep.keep_alive_max_time, self.opened) {
            (Some(max), Some(opened)) => opened.elapsed() >= max,
            _ => false,
        }
    }
}

/// A bound entry point: TCP, or UDP (`/udp` in its address).
pub enum Listener {
    /// Accepts connections.
    Tcp(TcpListener),
    /// Receives datagrams.
    Udp(tokio::net::UdpSocket),
}

impl Listener {
    /// Where it listens.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        match self {
            Listener::Tcp(l) => l.local_addr(),
            Listener::Udp(s) => s.local_addr(),
        }
    }
}

/// Binds the UDP socket of an entry point's HTTP/3 side, at the address
/// of its TCP side: no host means every interface, IPv6 and IPv4 together
/// where the machine has IPv6.
pub fn bind_udp(host: Option<IpAddr>, port: u16) -> io::Result<std::net::UdpSocket> {
    use socket2::{Domain, Socket, Type};
    let open = |addr: SocketAddr, dual: bool| -> io::Result<Socket> {
        let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, None)?;
        if dual {
            socket.set_only_v6(false)?;
        }
        socket.set_nonblocking(true)?;
        socket.bind(&addr.into())?;
        Ok(socket)
    };
    let socket = match host {
        Some(ip) => open(SocketAddr::new(ip, port), false)?,
        None => open(
            SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), port),
            true,
        )
        .or_else(|_| {
            open(
                SocketAddr::new(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED), port),
                false,
            )
        })?,
    };
    Ok(socket.into())
}

/// Binds a UDP entry point's socket at `addr`, non-blocking; with
/// `reuse_port` (`SO_REUSEPORT`), other sockets (another gangway taking
/// over during an upgrade) may bind the same port, and the kernel spreads
/// the clients among them by their addresses, so a client's datagrams keep
/// reaching one session.
pub fn bind_udp_at(addr: SocketAddr, reuse_port: bool) -> io::Result<std::net::UdpSocket> {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, None)?;
    if reuse_port {
        socket.set_reuse_port(true)?;
    }
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    Ok(socket.into())
}

/// `Alt-Svc` advertising HTTP/3 on `port` for a day, as Traefik sends it.
pub fn alt_svc(port: u16) -> HeaderValue {
    HeaderValue::try_from(format!("h3=\":{port}\"; ma=86400"))
        .expect("digits and ASCII punctuation make a header value")
}

/// Binds a listening socket. No host means every interface, IPv6 and IPv4
/// together where the machine has IPv6, as Traefik's `:80` does. With
/// `reuse_port`, other sockets (another process) may bind the same port
/// (`SO_REUSEPORT`; `reusePort`).
pub fn bind(host: Option<IpAddr>, port: u16, reuse_port: bool) -> io::Result<TcpListener> {
    TcpListener::from_std(bind_std(host, port, reuse_port)?)
}

/// Binds a listening socket as [`bind`] does, not yet registered with a
/// runtime; with `reuse_port`, one of several (`SO_REUSEPORT`) among which
/// the kernel spreads the port's new connections.
pub fn bind_std(
    host: Option<IpAddr>,
    port: u16,
    reuse_port: bool,
) -> io::Result<std::net::TcpListener> {
    use socket2::{Domain, Socket, Type};
    let (addr, dual) = match host {
        Some(ip) => (SocketAddr::new(ip, port), false),
        None => (
            SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), port),
            true,
        ),
    };
    let open = |addr: SocketAddr, dual: bool| -> io::Result<Socket> {
        let socket = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
        if dual {
            socket.set_only_v6(false)?;
        }
        socket.set_reuse_address(true)?;
        if reuse_port {
            socket.set_reuse_port(true)?;
        }
        socket.set_nonblocking(true)?;
        socket.bind(&addr.into())?;
        socket.listen(1024)?;
        Ok(socket)
    };
    let socket = match open(addr, dual) {
        Ok(s) => s,
        // A machine without IPv6 still serves `:port` on IPv4.
        Err(_) if dual => open(
            SocketAddr::new(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED), port),
            false,
        )?,
        Err(e) => return Err(e),
    };
    Ok(socket.into())
}

/// An entry point's HTTP servers, one per version; a connection gets the
/// one that speaks what ALPN or its first bytes say.
pub(crate) struct HttpServers {
    /// HTTP/1.1 (and 1.0).
    pub(crate) one: http1::Builder,
    /// HTTP/2, over TLS or in the clear, served with `h2` itself
    /// (`h2_server`).
    pub(crate) two: h2::server::Builder,
}

impl HttpServers {
    /// The servers of `entry_point`, with its limits.
    fn new(entry_point: &EntryPointInfo) -> Self {
        let limits = &entry_point.limits;
        let mut one = http1::Builder::new();
        // hyper's header read timeout also runs while a keep-alive connection
        // waits for its next request; gangway times heads and idle connections
        // itself (`timeouts`), so it is turned off (its default is 30 s).
        one.timer(TokioTimer::new())
            .header_read_timeout(None)
            .max_buf_size(head_bytes(limits));
        // hyper's own bound is 100 fields, in a table on the stack; any bound
        // set here (even 100) makes it fill a table element by element for
        // every request head, so it is set only when it differs.
        const HYPER_MAX_HEADERS: u32 = 100;
        if limits.max_headers != HYPER_MAX_HEADERS {
            one.max_headers(limits.max_headers as usize);
        }
        let two = h2_server::builder(
            entry_point.max_concurrent_streams,
            head_bytes(limits) as u32,
            limits.max_pending_reset_streams as usize,
            entry_point.max_decoder_header_table_size,
        );
        HttpServers { one, two }
    }
}

/// The most a request head may hold: the entry point's limit, but no less
/// than the 8 KiB under which hyper refuses to go.
fn head_bytes(limits: &HeadLimits) -> usize {
    (limits.max_header_bytes as usize).max(8 * 1024)
}

/// What an accepted connection holds while it is served: its place under
/// the entry point's `maxConnections`, and its count among its worker's
/// connections (several workers only).
// Never read: held for what dropping them does.
#[allow(dead_code)]
pub(crate) struct Held {
    slot: Option<ConnectionSlot>,
    load: Option<Load>,
}

/// Accepts connections until `shutdown` turns true, each served in a task
/// of its own (`Proxy::serve_connection`), then stops accepting and waits
/// up to the grace period for in-flight requests. With `balance` (several
/// workers), a connection this worker accepts while it is clearly busier
/// than another goes to that one, and those handed to this one are served
/// here (`worker::handoff`).
pub async fn accept(
    proxy: Arc<Proxy>,
    listener: TcpListener,
    entry_point: Arc<EntryPointInfo>,
    mut shutdown: watch::Receiver<bool>,
    mut balance: Option<Balance>,
) {
    let servers = Arc::new(HttpServers::new(&entry_point));
    // Each connection holds a receiver: `true` asks it to finish, and the
    // channel closes when the last one is gone.
    let (drain, drain_rx) = watch::channel(false);
    let serve = |stream: TcpStream, peer: SocketAddr, held: Held| {
        tracing::debug!(entry_point = %entry_point.name, worker = crate::worker::current(), client = %peer, "connection accepted");
        // The handshake runs in the connection's task, so a slow client
        // never holds up the accept loop. The task itself is small: what
        // a connection holds while it is served is boxed by
        // `serve_connection`, sized for its protocol. Spawned as it is
        // (what it holds inside), not wrapped in an `async` block that
        // would store it a second time.
        tokio::spawn(proxy.clone().serve_connection(
            stream,
            peer,
            entry_point.clone(),
            servers.clone(),
            drain_rx.clone(),
            held,
        ));
    };
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            Some(handed) = next_handed(&mut balance) => {
                take_handed(handed, &serve);
                continue;
            }
            _ = shutdown.changed() => break,
        };
        let (stream, peer) = match accepted {
            Ok(x) => x,
            Err(e) => {
                // Out of file descriptors and the like: back off instead of spinning.
                tracing::warn!(entry_point = %entry_point.name, error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        // At the connection limit, stop accepting: this connection waits
        // for a slot, and the next ones in the listen backlog, until one
        // closes (as HAProxy's maxconn). The slot is taken after `accept`:
        // with several workers, one waiting for a connection on its own
        // listener must not hold a slot another worker's connection needs.
        // While it waits, connections other workers hand to this one are
        // served: each already holds a slot, and one left in the inbox
        // would keep the slot this wait needs.
        let slot = match &entry_point.connections {
            Some(limit) => match limit.try_acquire() {
                Some(slot) => Some(slot),
                None => {
                    let slot = loop {
                        tokio::select! {
                            slot = limit.acquire() => break Some(slot),
                            Some(handed) = next_handed(&mut balance) => take_handed(handed, &serve),
                            _ = shutdown.changed() => break None,
                        }
                    };
                    match slot {
                        Some(slot) => Some(slot),
                        None => break,
                    }
                }
            },
            None => None,
        };
        let _ = stream.set_nodelay(true);
        let peer = SocketAddr::new(peer.ip().to_canonical(), peer.port());
        let Some(balance) = &balance else {
            serve(stream, peer, Held { slot, load: None });
            continue;
        };
        let to = balance.spread.place(balance.me);
        if to == balance.me {
            let load = Some(balance.spread.count(to, peer));
            serve(stream, peer, Held { slot, load });
            continue;
        }
        // Out of this worker's reactor, so that the other registers it
        // with its own.
        let stream = match stream.into_std() {
            Ok(stream) => stream,
            Err(e) => {
                tracing::debug!(entry_point = %entry_point.name, client = %peer, error = %e, "accepted connection lost before it was served");
                continue;
            }
        };
        let handed = Handed {
            stream,
            peer,
            slot,
            load: balance.spread.count(to, peer),
        };
        tracing::debug!(entry_point = %entry_point.name, worker = balance.me, to, client = %peer, "connection handed to a less busy worker");
        if let Err(handed) = balance.spread.hand(to, handed) {
            // That worker has stopped accepting (a stop is under way, and
            // balance no longer matters): this one serves it.
            take_handed(handed, &serve);
        }
    }
    drop(listener);
    // Connections handed to this worker before it stopped are served, as
    // accepted ones are; no more can arrive once the inbox is closed.
    if let Some(balance) = &mut balance {
        balance.inbox.close();
        while let Ok(handed) = balance.inbox.try_recv() {
            take_handed(handed, &serve);
        }
    }
    drop(drain_rx);
    tracing::info!(entry_point = %entry_point.name, "stopped accepting; draining");
    let _ = drain.send(true);
    if tokio::time::timeout(entry_point.grace, drain.closed())
        .await
        .is_err()
    {
        tracing::warn!(entry_point = %entry_point.name, "grace period over; closing remaining connections");
    }
}

/// The next connection another worker hands to this one; never, without
/// balance.
async fn next_handed(balance: &mut Option<Balance>) -> Option<Handed> {
    match balance {
        Some(balance) => balance.inbox.recv().await,
        None => std::future::pending().await,
    }
}

/// Serves a connection handed to this worker, registered with its reactor.
fn take_handed(handed: Handed, serve: &impl Fn(TcpStream, SocketAddr, Held)) {
    let Handed {
        stream,
        peer,
        slot,
        load,
    } = handed;
    match TcpStream::from_std(stream) {
        Ok(stream) => serve(
            stream,
            peer,
            Held {
                slot,
                load: Some(load),
            },
        ),
        Err(e) => {
            tracing::warn!(client = %peer, error = %e, "a connection handed to this worker cannot be served");
        }
    }
}
