//! Lean connections to one plain-HTTP/1.1 server: the path almost every
//! proxied request takes. A pool where an idle connection is a stack entry
//! behind a short lock and goes back on the stack when its answer's body
//! ends (see `body::checkin::Checkin`). It has no pool key to hash and no task per
//! request, and a connection has no task at all: the request's own task
//! moves it on ([`Link`]). h2c has its own module (`h2c`); HTTPS and
//! upgrades keep hyper-util's general client. The dialer and the reaper of
//! idle connections serve both lean clients.

use crate::body::RequestBody;
use crate::body::checkin::{Checkin, Link, Shelf};
use http::uri::{Authority, PathAndQuery};
use http::{Request, Response, Uri};
use hyper::body::Incoming;
use hyper::client::conn::{TrySendError, http1};
use hyper_util::rt::TokioIo;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

/// Why a request got no answer: [`SendError::is_connect`] when no
/// connection could be made, so the request never left.
#[derive(Debug, thiserror::Error)]
#[error("{what}")]
pub struct SendError {
    connect: bool,
    /// Sent on a kept-alive connection the server had closed: no answer
    /// and no sign it was read.
    stale: bool,
    what: String,
    #[source]
    source: Option<crate::body::BoxError>,
}

impl SendError {
    /// No connection could be made: the request was not sent.
    pub fn is_connect(&self) -> bool {
        self.connect
    }

    /// A failure before the request left: refused, unreachable, timed out.
    pub fn connect(what: impl Into<String>, source: Option<crate::body::BoxError>) -> Self {
        SendError {
            connect: true,
            stale: false,
            what: what.into(),
            source,
        }
    }

    /// The request went out on a kept-alive connection that the server
    /// closed without a byte of answer: the server did not take it (RFC
    /// 9112 §9.3.1), so an idempotent one may be sent again.
    pub fn is_stale(&self) -> bool {
        self.stale
    }

    /// A failure after the request (maybe partly) left.
    pub fn broken(source: crate::body::BoxError) -> Self {
        SendError {
            connect: false,
            stale: false,
            what: "the exchange with the server broke".to_owned(),
            source: Some(source),
        }
    }
}

impl From<hyper_util::client::legacy::Error> for SendError {
    fn from(e: hyper_util::client::legacy::Error) -> Self {
        SendError {
            connect: e.is_connect(),
            stale: false,
            what: "request to the server failed".to_owned(),
            source: Some(Box::new(e)),
        }
    }
}

/// Idle connections to one server, most recently used on top.
pub struct H1Pool {
    dialer: Dialer,
    idle_timeout: Option<Duration>,
    max_idle: usize,
    idle: Mutex<Vec<(Link, Instant)>>,
}

impl H1Pool {
    /// A pool for the server at `server` (port 80 when it names none).
    pub fn new(
        server: &Authority,
        dial_timeout: Option<Duration>,
        idle_timeout: Option<Duration>,
        max_idle: usize,
    ) -> Arc<Self> {
        reaped(Arc::new(H1Pool {
            dialer: Dialer::new(server, dial_timeout),
            idle_timeout,
            max_idle,
            idle: Mutex::new(Vec::new()),
        }))
    }

    /// Sends `req` over an idle connection, or a new one; only the URI's
    /// path and query go on the wire (the proxy makes origin-form URIs for
    /// this pool; an absolute one is cut down). A request that an idle
    /// connection closed under could not carry is sent once more on a new
    /// connection: it never left.
    pub async fn send(
        self: &Arc<Self>,
        mut req: Box<Request<RequestBody>>,
    ) -> Result<(Response<Incoming>, Checkin), SendError> {
        if req.uri().scheme().is_some() {
            let pq = req
                .uri()
                .path_and_query()
                .cloned()
                .unwrap_or_else(|| PathAndQuery::from_static("/"));
            *req.uri_mut() = Uri::from(pq);
        }
        let mut fresh = false;
        loop {
            let mut link = match self.take() {
                Some(link) => link,
                None => {
                    fresh = true;
                    // Boxed: dialing is the rare case, and its state (the
                    // resolver, the dial timer, the handshake) would
                    // otherwise be part of every request's future.
                    Box::pin(self.connect()).await?
                }
            };
            match link.exchange(*req).await {
                Ok(resp) => {
                    let checkin = Checkin::new(self.clone(), link);
                    return Ok((resp, checkin));
                }
                // The pooled connection was closing: not sent, so safe to
                // send again whatever the method.
                Err(e) => *req = unsent(e, fresh)?,
            }
        }
    }

    /// The most recently used idle connection that can take a request now.
    fn take(&self) -> Option<Link> {
        loop {
            let (link, since) = self
                .idle
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .pop()?;
            if !self.expired(since) && link.reusable() {
                return Some(link);
            }
        }
    }

    fn expired(&self, since: Instant) -> bool {
        self.idle_timeout.is_some_and(|t| since.elapsed() >= t)
    }

    async fn connect(&self) -> Result<Link, SendError> {
        let stream = self.dialer.dial().await?;
        let (sender, conn) = http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| SendError::connect("HTTP/1.1 handshake", Some(Box::new(e))))?;
        Ok(Link::new(sender, conn))
    }
}

impl Shelf for H1Pool {
    /// Keeps `link` for the next request if it can carry one (one still
    /// busy with the last exchange, e.g. sending a body the server did not
    /// wait for, is closed instead).
    fn put(&self, link: Link) {
        if !link.reusable() {
            return;
        }
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        if idle.len() < self.max_idle {
            idle.push((link, Instant::now()));
        }
    }
}

/// The request back from a failed send when it never left a connection
/// that was already open, so that it may go on a new one; otherwise why it
/// failed: a connection just opened that cannot carry it counts as no
/// connection, a request that (maybe partly) left as a broken exchange.
fn unsent(
    mut e: TrySendError<Request<RequestBody>>,
    fresh: bool,
) -> Result<Request<RequestBody>, SendError> {
    match e.take_message() {
        Some(req) if !fresh => Ok(req),
        Some(_) => Err(SendError::connect(
            "the new connection closed before the request left",
            Some(Box::new(e.into_error())),
        )),
        None if !fresh && e.error().is_incomplete_message() => Err(SendError {
            connect: false,
            stale: true,
            what: "the kept-alive connection was closed by the server".to_owned(),
            source: Some(Box::new(e.into_error())),
        }),
        None => Err(SendError::broken(Box::new(e.into_error()))),
    }
}

/// Where a server is, and how long connecting to it may take.
pub(super) struct Dialer {
    host: String,
    port: u16,
    timeout: Option<Duration>,
}

impl Dialer {
    /// The server at `server` (port 80 when it names none).
    pub(super) fn new(server: &Authority, timeout: Option<Duration>) -> Self {
        let host = server.host().trim_start_matches('[').trim_end_matches(']');
        Dialer {
            host: host.to_owned(),
            port: server.port_u16().unwrap_or(80),
            timeout,
        }
    }

    /// Opens a TCP connection to the server, within the dial timeout.
    pub(super) async fn dial(&self) -> Result<tokio::net::TcpStream, SendError> {
        let (host, port) = (self.host.as_str(), self.port);
        let dial = tokio::net::TcpStream::connect((host, port));
        let stream = match self.timeout {
            Some(limit) => tokio::time::timeout(limit, dial)
                .await
                .map_err(|_| SendError::connect("dial timeout", None))?,
            None => dial.await,
        }
        .map_err(|e| {
            SendError::connect(
                format!("cannot connect to {host}:{port}"),
                Some(Box::new(e)),
            )
        })?;
        let _ = stream.set_nodelay(true);
        Ok(stream)
    }
}

/// How often at most the reaper looks at a pool's idle connections.
const REAP_EVERY: Duration = Duration::from_secs(5);

/// What the reaper does to a pool now and then.
pub(super) trait Reap: Send + Sync + 'static {
    /// How long a connection may stay unused.
    fn idle_timeout(&self) -> Option<Duration>;
    /// Drops connections idle past the idle timeout or closed by the server.
    fn reap(&self);
}

impl Reap for H1Pool {
    fn idle_timeout(&self) -> Option<Duration> {
        self.idle_timeout
    }

    fn reap(&self) {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        idle.retain_mut(|(link, since)| !self.expired(*since) && link.notice_close());
    }
}

/// `pool`, with its reaper.
pub(super) fn reaped<P: Reap>(pool: Arc<P>) -> Arc<P> {
    spawn_reaper(Arc::downgrade(&pool), pool.idle_timeout());
    pool
}

/// Closes a pool's idle connections that expired or that their server
/// closed, so that neither lingers (an idle HTTP/1.1 connection has no task
/// to notice a close; the reaper reads it within 5 s); ends with the pool.
fn spawn_reaper<P: Reap>(pool: Weak<P>, limit: Option<Duration>) {
    let every = limit
        .unwrap_or(REAP_EVERY)
        .clamp(Duration::from_secs(1), REAP_EVERY);
    if tokio::runtime::Handle::try_current().is_err() {
        return;
    }
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.tick().await;
        loop {
            tick.tick().await;
            let Some(pool) = pool.upgrade() else { return };
            pool.reap();
        }
    });
}
