//! One client connection, plain or TLS alike, from accept to its end:
//! tell TLS from plain HTTP by the first byte (as Traefik does, so one
//! entry point serves both), terminate TLS with the server configuration
//! the runtime picks for the ClientHello, tell HTTP/1 from HTTP/2 by ALPN
//! or by the first bytes (read until they tell, however the client splits
//! them), and serve it: HTTP/1 with hyper's server, HTTP/2 with gangway's
//! own (`h2_server`), with the same settings and limits whichever way the
//! version was told. Each request then goes to `Proxy::serve_request`
//! (`observe`: time limits, metrics, access log), which routes it
//! (`pipeline`) and forwards it to a server (`upstream`).
//! Also what plain entry points answer before routing: ACME HTTP-01
//! challenges and redirections.

use super::observe::{ObservedBody, WriteTimedOut};
use super::rewind::Rewind;
use super::timeouts::{self, Activity, ConnLimits, Expired, Watched};
use super::{ConnInfo, EntryPointInfo, Held, HttpServers, Proxy, Redirect, h2_server};
use crate::body::{ClientStream, ProxyBody};
use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use std::future::poll_fn;
use std::net::SocketAddr;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::time::{Instant, timeout, timeout_at};

/// How long an idle HTTP/2 connection told to go away (GOAWAY) may take to
/// answer the PING that precedes the close.
const IDLE_CLOSE_GRACE: Duration = Duration::from_secs(5);

/// The most a PROXY protocol header may take, its extensions (TLVs)
/// included; real ones are under 256 bytes.
const MAX_PROXY_HEADER: usize = 4096;

/// Reads a PROXY protocol header off the start of `stream`, if one is
/// there: the client it names, or `None` when it names none or there is
/// no header (the connection's bytes are then left unread).
async fn proxy_protocol_header(stream: &mut TcpStream) -> std::io::Result<Option<SocketAddr>> {
    use super::proxy_protocol::{Parsed, parse};
    let invalid =
        |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_owned());
    let mut buf = vec![0u8; 256];
    loop {
        let n = stream.peek(&mut buf).await?;
        if n == 0 {
            return Err(invalid("closed before a PROXY protocol header ended"));
        }
        match parse(&buf[..n]) {
            Parsed::Absent => return Ok(None),
            Parsed::Invalid => return Err(invalid("not a valid PROXY protocol header")),
            Parsed::Header { len, client } => {
                let mut header = vec![0u8; len];
                stream.read_exact(&mut header).await?;
                return Ok(client);
            }
            // A larger buffer once the peek filled it.
            Parsed::Incomplete if n == buf.len() => {
                if buf.len() >= MAX_PROXY_HEADER {
                    return Err(invalid("PROXY protocol header too long"));
                }
                buf.resize(MAX_PROXY_HEADER, 0);
            }
            // The rest of the header is on its way (it nearly always comes
            // in one segment). A peek leaves the bytes in the socket, so
            // readiness would not wait: look again shortly, within the
            // caller's deadline.
            Parsed::Incomplete => tokio::time::sleep(Duration::from_millis(5)).await,
        }
    }
}

/// The first byte of every TLS record carrying a handshake.
const TLS_HANDSHAKE_RECORD: u8 = 0x16;

/// Where HTTP-01 validations ask for their answer (RFC 8555 §8.3).
const ACME_CHALLENGE_PATH: &str = "/.well-known/acme-challenge/";

impl Proxy {
    /// Serves one accepted connection to its end: TLS or plain HTTP by its
    /// first byte, then HTTP/1 or HTTP/2 by ALPN or by the first bytes of
    /// the conversation ([`Proxy::serve_http`]).
    pub(crate) async fn serve_connection(
        self: Arc<Self>,
        stream: TcpStream,
        peer: SocketAddr,
        entry_point: Arc<EntryPointInfo>,
        servers: Arc<HttpServers>,
        drain: watch::Receiver<bool>,
        held: Held,
    ) {
        // The connection counts against the entry point's limit, and among
        // its worker's connections, until this future ends, whichever way.
        let _held = held;
        let limit = timeouts::first_bytes_limit(&entry_point);
        let deadline = Instant::now() + limit;
        let mut stream = stream;
        let mut peer = peer;
        // A load balancer in front names the real client first (Traefik's
        // entryPoints.<n>.proxyProtocol); it then counts as the client
        // everywhere: rules, forwarded headers, logs, TCP servers. A header
        // from a peer outside `trustedIPs` is read and dropped, as Traefik
        // does: believed, it would forge the client; left on the stream, it
        // would reach a server that may parse PROXY headers itself.
        if let Some(trust) = &entry_point.proxy_protocol {
            match timeout_at(deadline, proxy_protocol_header(&mut stream)).await {
                Ok(Ok(Some(client))) if trust.trusts(peer.ip()) => {
                    peer = SocketAddr::new(client.ip().to_canonical(), client.port());
                }
                Ok(Ok(Some(client))) => {
                    tracing::debug!(%peer, %client, entry_point = %entry_point.name, "PROXY protocol header from an untrusted peer dropped");
                }
                Ok(Ok(None)) => {}
                Ok(Err(e)) => {
                    tracing::debug!(%peer, entry_point = %entry_point.name, error = %e, "PROXY protocol header refused; connection closed");
                    return;
                }
                Err(_) => return,
            }
        }
        // Only where TCP routers listen does the rest of the runtime matter
        // before the first bytes: HTTP-only entry points pay one load.
        let (tcp, https) = {
            let runtime = self.runtime.load();
            let tcp = runtime.tcp.get(entry_point.id).cloned().flatten();
            let https = tcp.is_some()
                && runtime
                    .entry_points
                    .get(entry_point.id)
                    .is_some_and(|routes| routes.iter().any(|r| r.tls));
            (tcp, https)
        };
        if let Some(tcp) = &tcp {
            // As in Traefik: with no TLS router here, TCP or HTTP, a plain
            // TCP router takes the connection before the client says
            // anything, so protocols where the server speaks first work.
            if tcp.tls.is_empty() && !https {
                match Box::pin(self.tcp_plain(tcp, stream, peer, &entry_point)).await {
                    Ok(()) => return,
                    Err(back) => stream = back,
                }
            }
        }
        // As much as an HTTP/2 preface: enough to tell TLS, HTTP/2 and HTTP/1.
        let mut first = [0u8; H2_PREFACE.len()];
        let seen = match timeout_at(deadline, stream.peek(&mut first)).await {
            Ok(Ok(n)) if n > 0 => &first[..n],
            // Closed, failed or silent: nothing to serve.
            _ => return,
        };
        if seen == super::tcp::POSTGRES_SSL_REQUEST
            && let Some(tcp) = tcp.as_ref().filter(|t| !t.tls.is_empty())
        {
            // Boxed, as every TCP path here: entry points without TCP
            // routers keep their connections' tasks as small as they were.
            Box::pin(self.tcp_postgres(tcp, stream, peer, &entry_point, deadline)).await;
            return;
        }
        // The connection's task keeps only what serving needs: the
        // handshake's state (rustls' acceptor and handshake, larger than
        // the connection it yields) is boxed and freed once it is done, and
        // the served connection is a box of its own, sized for its HTTP
        // version and transport (`serve_http`).
        let served = if seen[0] == TLS_HANDSHAKE_RECORD {
            let io = match tcp.as_ref().filter(|t| !t.tls.is_empty()) {
                // TLS routers of TCP see the ClientHello first; what none
                // of them takes is HTTPS, with the bytes read put back.
                Some(tcp) => {
                    let runtime = self.runtime.load_full();
                    let https = |name: Option<&str>| {
                        runtime
                            .entry_points
                            .get(entry_point.id)
                            .map_or(crate::runtime::HttpsClaim::Nothing, |routes| {
                                routes.https_claim(name)
                            })
                    };
                    let decision = Box::pin(self.tcp_tls(
                        tcp,
                        &https,
                        stream,
                        peer,
                        &entry_point,
                        deadline,
                        false,
                    ))
                    .await;
                    match decision {
                        super::tcp::TlsDecision::Http(io) => io,
                        _ => return,
                    }
                }
                None => Rewind::new(Bytes::new(), stream),
            };
            let handshake = Box::pin(self.tls_handshake(io, peer, limit));
            let Some((version, io, sni, negotiated, client_subject, client_certs)) =
                handshake.await
            else {
                return;
            };
            let mut info = ConnInfo::new(entry_point, peer, true, sni);
            info.negotiated = Some(negotiated);
            info.client_subject = client_subject;
            info.client_certs = client_certs;
            self.serve_http(io, info, &servers, version, drain)
        } else {
            if let Some(tcp) = tcp.as_ref().filter(|t| !t.plain.is_empty()) {
                match Box::pin(self.tcp_plain(tcp, stream, peer, &entry_point)).await {
                    Ok(()) => return,
                    Err(back) => stream = back,
                }
            }
            // What a peek sees usually tells already, and then the server
            // reads those bytes itself. Only the start of the HTTP/2 preface
            // does not (it arrived in pieces): it is read until it tells,
            // within the same time limit, and handed on.
            let (version, io) = match plain_version(seen) {
                Some(version) => (version, Rewind::new(Bytes::new(), stream)),
                None => match timeout_at(deadline, read_version(stream)).await {
                    Ok(Some(told)) => told,
                    _ => return,
                },
            };
            let info = ConnInfo::new(entry_point, peer, false, None);
            self.serve_http(io, info, &servers, version, drain)
        };
        served.await;
    }

    /// The TLS handshake of [`Proxy::serve_connection`] (certificate by
    /// SNI, ACME TLS-ALPN-01 answers), then the HTTP version the client
    /// speaks over it, by ALPN or by its first bytes. None when the
    /// connection ends there. `stream` may hold bytes read already (a
    /// ClientHello that TCP routers looked at).
    async fn tls_handshake(
        &self,
        stream: Rewind<TcpStream>,
        peer: SocketAddr,
        limit: Duration,
    ) -> Option<(
        Version,
        Rewind<TlsStream>,
        Option<Box<str>>,
        crate::tls::negotiated::Negotiated,
        Option<Arc<str>>,
        Option<crate::middleware::ClientCerts>,
    )> {
        // A client connecting by address names no server: the address it
        // reached picks the certificate.
        let local = stream.get_ref().local_addr().ok().map(|a| a.ip());
        let acceptor =
            tokio_rustls::LazyConfigAcceptor::new(rustls::server::Acceptor::default(), stream);
        let start = match timeout(limit, acceptor).await {
            Ok(Ok(start)) => start,
            Ok(Err(e)) => {
                tracing::debug!(%peer, error = %e, "TLS ClientHello rejected");
                return None;
            }
            Err(_) => return None,
        };
        let (config, sni, challenge) = {
            let hello = start.client_hello();
            // One load per handshake: the configuration holds this
            // generation's certificate store.
            let tls = &self.runtime.load().tls;
            let config = match local {
                Some(local) => tls.config_at(&hello, local),
                None => tls.config_for(&hello),
            };
            let sni = hello
                .server_name()
                .map(|n| Box::<str>::from(n.to_ascii_lowercase()));
            let challenge = hello
                .alpn()
                .is_some_and(|mut p| p.any(|p| p == crate::tls::ACME_TLS_ALPN));
            (config, sni, challenge)
        };
        let Some(config) = config else {
            tracing::debug!(%peer, "TLS handshake refused: no TLS configuration yet");
            return None;
        };
        // A validation may reach this instance for an order another one
        // placed: its answer comes from the shared store.
        let challenges = match (&sni, challenge) {
            (Some(name), true) => self
                .runtime
                .load()
                .tls
                .challenges()
                .cloned()
                .map(|c| (c, name.clone())),
            _ => None,
        };
        let fetched = match &challenges {
            Some((c, name)) => timeout(limit, Box::pin(c.fetch_tls_alpn(name)))
                .await
                .unwrap_or(false),
            None => false,
        };
        let handshake = timeout(limit, start.into_stream(config)).await;
        if fetched && let Some((c, name)) = &challenges {
            c.handshake_done(name);
        }
        let mut tls = match handshake {
            Ok(Ok(tls)) => tls,
            Ok(Err(e)) => {
                tracing::debug!(%peer, sni = sni.as_deref().unwrap_or(""), error = %e, "TLS handshake failed");
                return None;
            }
            Err(_) => return None,
        };
        if challenge {
            // A TLS-ALPN-01 validation only looks at the certificate.
            let _ = tls.shutdown().await;
            return None;
        }
        let negotiated = crate::tls::negotiated::Negotiated::of(tls.get_ref().1);
        let client_subject = crate::access_log::client_subject(tls.get_ref().1);
        let client_certs = tls
            .get_ref()
            .1
            .peer_certificates()
            .filter(|chain| !chain.is_empty())
            .map(|chain| chain.iter().map(|c| c.clone().into_owned()).collect());
        // ALPN says which HTTP the client speaks; a client that named none
        // may still open with an HTTP/2 preface, so its first bytes decide.
        let (version, io) = match tls.get_ref().1.alpn_protocol() {
            Some(b"h2") => (Version::Two, Rewind::new(Bytes::new(), tls)),
            Some(_) => (Version::One, Rewind::new(Bytes::new(), tls)),
            None => match timeout(limit, read_version(tls)).await {
                Ok(Some(told)) => told,
                _ => return None,
            },
        };
        Some((version, io, sni, negotiated, client_subject, client_certs))
    }

    /// Serves plain HTTP on one connection over any byte stream, with the
    /// entry point's server settings and limits, as for an accepted TCP
    /// connection whose first byte is not TLS: the first bytes the client
    /// sends pick the HTTP version. For the fuzz targets, which feed raw
    /// bytes through an in-memory stream; not part of the API.
    #[doc(hidden)]
    pub async fn serve_stream<I>(
        self: Arc<Self>,
        io: I,
        peer: SocketAddr,
        entry_point: Arc<EntryPointInfo>,
    ) where
        I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let servers = HttpServers::new(&entry_point);
        let limit = timeouts::first_bytes_limit(&entry_point);
        let Ok(Some((version, io))) = timeout(limit, read_version(io)).await else {
            return;
        };
        // Held until the connection ends: a closed channel means "drain".
        let (drain, drain_rx) = watch::channel(false);
        let info = ConnInfo::new(entry_point, peer, false, None);
        self.serve_http(io, info, &servers, version, drain_rx).await;
        drop(drain);
    }

    /// Serves HTTP on a connection until it ends: the client closes it, a
    /// connection limit (head or idle time) passes, or shutdown drains it.
    ///
    /// Returns the served connection as one box, made here rather than in
    /// an `async fn` so that no enclosing future keeps a second slot for
    /// `io` (with TLS, rustls' connection state): its size is what this
    /// HTTP version over this transport needs, and no more.
    fn serve_http<I>(
        self: Arc<Self>,
        io: I,
        mut info: ConnInfo,
        servers: &HttpServers,
        version: Version,
        drain: watch::Receiver<bool>,
    ) -> Served
    where
        I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let ep = &info.entry_point;
        // A head is part of the request, so readTimeout bounds it too.
        let header_read = match (ep.header_read_timeout, ep.read_timeout) {
            (Some(h), Some(r)) => Some(h.min(r)),
            (h, r) => h.or(r),
        };
        let limits = ConnLimits {
            header_read,
            idle: ep.idle_timeout,
            write: ep.write_timeout,
        };
        let activity = limits.any().then(|| Arc::new(Activity::new()));
        info.activity = activity.clone();
        let stats = info.entry_point.stats.clone();
        let peer = info.peer;
        let info = Arc::new(info);
        if let Some(s) = &stats {
            s.connection_opened();
        }
        let io = Watched::new(io, activity.clone());
        let run = Run {
            peer,
            activity,
            limits,
            drain,
            stats,
        };
        match version {
            Version::One => {
                let service = hyper_service(self, info);
                let conn = servers
                    .one
                    .serve_connection(TokioIo::new(io), service)
                    .with_upgrades();
                Box::pin(run.drive(Box::pin(conn), |c| c.graceful_shutdown()))
            }
            Version::Two => {
                let conn = h2_server::Connection::new(io, &servers.two, self, info);
                Box::pin(run.drive(Box::pin(conn), |c| c.get_mut().graceful_shutdown()))
            }
        }
    }

    /// Whether [`plain_answer`](Self::plain_answer) can answer `req` at all:
    /// the entry point redirects, or the path is an ACME challenge's.
    /// Asked first, so that the usual request makes no `plain_answer`
    /// future.
    pub(crate) fn may_answer_plain<B>(conn: &ConnInfo, req: &Request<B>) -> bool {
        conn.entry_point.redirect.is_some() || req.uri().path().starts_with(ACME_CHALLENGE_PATH)
    }

    /// What a plain-HTTP request gets before routing: the answer to an
    /// ACME HTTP-01 validation, or the entry point's redirection. `routed`
    /// is the router that matches it, when it was looked up first: with
    /// `allowACMEByPass` it takes challenge paths, and above the
    /// redirection's priority it is served instead.
    pub(crate) async fn plain_answer<B>(
        &self,
        conn: &ConnInfo,
        req: &Request<B>,
        routed: Option<&crate::runtime::Route>,
    ) -> Option<Response<ProxyBody>> {
        let by_pass = conn.entry_point.allow_acme_by_pass && routed.is_some();
        let challenges = (!by_pass).then_some(req).and_then(|req| {
            req.uri()
                .path()
                .strip_prefix(ACME_CHALLENGE_PATH)
                .and_then(|token| Some((token, self.runtime.load().tls.challenges()?.clone())))
        });
        if let Some((token, challenges)) = challenges
            && let Some(answer) = Box::pin(challenges.http_answer_anywhere(token)).await
        {
            let mut resp = Response::new(ProxyBody::Local(http_body_util::Full::new(
                bytes::Bytes::from(answer.to_string()),
            )));
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/octet-stream"),
            );
            return Some(resp);
        }
        let redirect = conn.entry_point.redirect.as_ref()?;
        if let (Some(priority), Some(route)) = (redirect.priority, routed)
            && route.priority > priority
        {
            return None;
        }
        Some(redirect_response(redirect, req))
    }
}

/// The proxy as a hyper service, for the HTTP/1 connections hyper serves.
fn hyper_service(
    proxy: Arc<Proxy>,
    info: Arc<ConnInfo>,
) -> impl hyper::service::Service<
    Request<Incoming>,
    Response = Response<ObservedBody>,
    Error = WriteTimedOut,
    Future = impl Future<Output = Result<Response<ObservedBody>, WriteTimedOut>> + Send + 'static,
> + Clone {
    service_fn(move |req: Request<Incoming>| {
        let proxy = proxy.clone();
        let info = info.clone();
        async move {
            proxy
                .serve_request(info, req.map(ClientStream::Hyper))
                .await
        }
    })
}

/// Which HTTP a connection is served with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Version {
    /// HTTP/1.1 or 1.0, by hyper's server.
    One,
    /// HTTP/2, by gangway's own ([`h2_server`]).
    Two,
}

/// What every HTTP/2 connection in the clear opens with (RFC 9113 §3.4).
const H2_PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// The version of a plain connection from its first bytes: HTTP/2 once
/// the whole preface is there, HTTP/1 as soon as they differ from it, and
/// None while they are the start of it (or nothing).
fn plain_version(first: &[u8]) -> Option<Version> {
    if !H2_PREFACE.starts_with(first) {
        Some(Version::One)
    } else if first.len() == H2_PREFACE.len() {
        Some(Version::Two)
    } else {
        None
    }
}

/// Reads a connection's first bytes until they tell its version, however
/// the client splits them, and returns the version with `io` set to give
/// those bytes again to the server that speaks it. None when the client
/// closes (or the connection fails) first. Reads at most the preface's
/// length, so nothing past it is taken from `io`.
async fn read_version<I: AsyncRead + Unpin>(mut io: I) -> Option<(Version, Rewind<I>)> {
    let mut first = [0u8; H2_PREFACE.len()];
    let mut len = 0;
    loop {
        let n = io.read(&mut first[len..]).await.ok()?;
        if n == 0 {
            return None;
        }
        len += n;
        // Always decided once the buffer is full, so this ends.
        if let Some(version) = plain_version(&first[..len]) {
            return Some((
                version,
                Rewind::new(Bytes::copy_from_slice(&first[..len]), io),
            ));
        }
    }
}

/// A served connection, boxed ([`Proxy::serve_http`]).
type Served = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The TLS stream of a client connection.
type TlsStream = tokio_rustls::server::TlsStream<Rewind<TcpStream>>;

/// What a served connection answers to besides its client: its time
/// limits and the entry point's shutdown; and the entry point's connection
/// count, which it leaves when it ends.
struct Run {
    peer: SocketAddr,
    activity: Option<Arc<Activity>>,
    limits: ConnLimits,
    drain: watch::Receiver<bool>,
    stats: Option<Arc<crate::metrics::Stats>>,
}

impl Run {
    /// Drives `conn` (any HTTP version; `graceful_shutdown` asks it to
    /// finish what is in progress and close) to its end.
    ///
    /// `conn` comes boxed: a future pinned inside this one would be stored
    /// twice in it, as the argument and as the pinned local, and a
    /// connection's state (h2's, with rustls' inside) is the largest part.
    async fn drive<C, E>(mut self, mut conn: Pin<Box<C>>, graceful_shutdown: impl Fn(Pin<&mut C>))
    where
        C: Future<Output = Result<(), E>>,
        E: std::fmt::Display,
    {
        let peer = self.peer;
        // Parked far away until a limit arms it; one timer per connection.
        let timer = pin!(tokio::time::sleep(Duration::from_secs(86_400)));
        let activity = self.activity.take();
        let mut clock = activity
            .as_deref()
            .map(|a| timeouts::Clock::new(a, self.limits, timer));
        let mut draining = false;
        let mut cut_off: Option<tokio::time::Instant> = None;
        let far = tokio::time::Instant::now() + Duration::from_secs(86_400);
        loop {
            let step = {
                let drive = poll_fn(|cx| {
                    if let Poll::Ready(done) = conn.as_mut().poll(cx) {
                        return Poll::Ready(Step::Done(done));
                    }
                    match clock.as_mut() {
                        Some(c) if !draining => c.poll_expired(cx).map(Step::Expired),
                        _ => Poll::Pending,
                    }
                });
                // Biased: the connection first, and no random draw per wake.
                tokio::select! {
                    biased;
                    step = drive => step,
                    _ = self.drain.changed(), if !draining => Step::Drain,
                    () = tokio::time::sleep_until(cut_off.unwrap_or(far)), if cut_off.is_some() => Step::CutOff,
                }
            };
            match step {
                Step::Done(Ok(())) => break,
                Step::Done(Err(e)) => {
                    tracing::trace!(error = %e, "connection ended with an error");
                    break;
                }
                // Dropping the connection closes it: no answer is owed to a
                // head that never arrived.
                Step::Expired(Expired::Head) => {
                    tracing::debug!(%peer, "request head not received in time; closing");
                    break;
                }
                Step::Expired(Expired::Write) => {
                    tracing::debug!(%peer, "answer not sent within writeTimeout; closing");
                    break;
                }
                Step::Expired(Expired::Idle) => {
                    // HTTP/1: closes now; HTTP/2: GOAWAY, then a PING the
                    // client must answer before the connection closes. A
                    // client that never answers is not waited for long.
                    graceful_shutdown(conn.as_mut());
                    draining = true;
                    cut_off = Some(tokio::time::Instant::now() + IDLE_CLOSE_GRACE);
                }
                Step::Drain => {
                    // Closes once the answers in progress are sent; the
                    // entry point's grace period bounds the wait.
                    graceful_shutdown(conn.as_mut());
                    draining = true;
                }
                Step::CutOff => break,
            }
        }
        if let Some(s) = &self.stats {
            s.connection_closed();
        }
    }
}

/// What woke a connection's task.
enum Step<E> {
    Done(Result<(), E>),
    Expired(Expired),
    Drain,
    /// An idle connection did not close within `IDLE_CLOSE_GRACE`.
    CutOff,
}

/// Whether a request on a TLS connection names another host than its SNI:
/// such a request is answered 421 on routers that require TLS, so a
/// certificate or client-certificate check made for one name never covers
/// another (HTTP/2 connection reuse, or a forged Host).
pub(crate) fn misdirected(conn: &ConnInfo, host: &str) -> bool {
    match &conn.sni {
        Some(sni) => !host.is_empty() && **sni != *host,
        None => false,
    }
}

fn redirect_response<B>(redirect: &Redirect, req: &Request<B>) -> Response<ProxyBody> {
    let host = req
        .uri()
        .authority()
        .map(|a| a.host())
        .or_else(|| {
            req.headers()
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
                .map(crate::rule::without_port)
        })
        .unwrap_or("");
    let default_port = match redirect.scheme.as_str() {
        "https" => 443,
        "http" => 80,
        _ => 0,
    };
    let path = req.uri().path_and_query().map_or("/", |pq| pq.as_str());
    let mut location = String::with_capacity(redirect.scheme.len() + host.len() + path.len() + 10);
    location.push_str(&redirect.scheme);
    location.push_str("://");
    location.push_str(host);
    if let Some(port) = redirect.port.filter(|p| *p != default_port) {
        location.push(':');
        location.push_str(&port.to_string());
    }
    location.push_str(path);
    let safe = req.method() == Method::GET || req.method() == Method::HEAD;
    let status = match (redirect.permanent, safe) {
        (true, true) => StatusCode::MOVED_PERMANENTLY,
        (true, false) => StatusCode::PERMANENT_REDIRECT,
        (false, true) => StatusCode::FOUND,
        (false, false) => StatusCode::TEMPORARY_REDIRECT,
    };
    let mut resp = Response::new(ProxyBody::empty());
    *resp.status_mut() = status;
    if let Ok(value) = HeaderValue::from_str(&location) {
        resp.headers_mut().insert(header::LOCATION, value);
    }
    resp
}

/// `host[:port]` → `host`, keeping an IPv6 literal's brackets.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_bytes_tell_the_version_once_they_can() {
        assert_eq!(plain_version(b"GET / HTTP/1.1\r\n"), Some(Version::One));
        assert_eq!(plain_version(b"POST"), Some(Version::One));
        assert_eq!(plain_version(b"PRI * HTTP/1.1\r\n"), Some(Version::One));
        assert_eq!(plain_version(b"P"), None);
        assert_eq!(plain_version(b"PRI * HTTP/2.0\r\n"), None);
        assert_eq!(plain_version(H2_PREFACE), Some(Version::Two));
    }

    /// The preface (then a frame) one byte per write, as a client may
    /// send it: the version is told once the preface is whole, and the
    /// server that gets the stream reads every byte, in order.
    #[tokio::test]
    async fn a_preface_in_pieces_is_read_until_it_tells_and_given_back_whole() {
        use tokio::io::AsyncReadExt;
        let (mut client, server) = tokio::io::duplex(64);
        let reading = tokio::spawn(read_version(server));
        let mut sent = H2_PREFACE.to_vec();
        sent.extend_from_slice(b"\0\0\0\x04\0\0\0\0\0");
        for byte in &sent {
            client.write_all(std::slice::from_ref(byte)).await.unwrap();
            client.flush().await.unwrap();
        }
        let (version, mut io) = reading.await.unwrap().expect("told");
        assert_eq!(version, Version::Two);
        let mut got = vec![0u8; sent.len()];
        io.read_exact(&mut got).await.unwrap();
        assert_eq!(got, sent);
    }

    #[tokio::test]
    async fn http1_is_told_at_its_first_byte_and_a_closed_start_is_nothing() {
        let (mut client, server) = tokio::io::duplex(64);
        client.write_all(b"GET / HTTP/1.1\r\n").await.unwrap();
        let (version, _) = read_version(server).await.expect("told");
        assert_eq!(version, Version::One);
        let (mut client, server) = tokio::io::duplex(64);
        client.write_all(b"PRI * HT").await.unwrap();
        drop(client);
        assert!(read_version(server).await.is_none());
    }

    fn location(redirect: &Redirect, method: Method, host: &str, path: &str) -> (u16, String) {
        let req = Request::builder()
            .method(method)
            .uri(path)
            .header("host", host)
            .body(())
            .unwrap();
        let resp = redirect_response(redirect, &req);
        (
            resp.status().as_u16(),
            resp.headers()[header::LOCATION]
                .to_str()
                .unwrap()
                .to_owned(),
        )
    }

    #[test]
    fn redirects_keep_host_path_and_query_and_pick_the_status() {
        let https = Redirect {
            scheme: "https".into(),
            port: Some(443),
            permanent: true,
            priority: None,
        };
        assert_eq!(
            location(&https, Method::GET, "app.test:80", "/a?b=1"),
            (301, "https://app.test/a?b=1".into())
        );
        assert_eq!(
            location(&https, Method::POST, "app.test", "/"),
            (308, "https://app.test/".into())
        );
        let temp = Redirect {
            scheme: "https".into(),
            port: Some(8443),
            permanent: false,
            priority: None,
        };
        assert_eq!(
            location(&temp, Method::GET, "[::1]:80", "/x"),
            (302, "https://[::1]:8443/x".into())
        );
        assert_eq!(
            location(&temp, Method::PUT, "app.test", "/x"),
            (307, "https://app.test:8443/x".into())
        );
    }
}
