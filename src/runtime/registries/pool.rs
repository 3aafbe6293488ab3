//! Lean connections to one plain-HTTP server: the path almost every proxied
//! request takes. For HTTP/1.1 a pool, where an idle connection is a stack
//! entry behind a short lock and goes back on the stack when its answer's
//! body ends (see [`Checkin`]); for h2c (gRPC) one multiplexed connection
//! that every request shares ([`H2cConn`]). Neither has a pool key to hash
//! or a task per request. HTTPS and upgrades keep hyper-util's general
//! client.

use crate::body::RequestBody;
use http::uri::{Authority, PathAndQuery};
use http::{Request, Response, Uri};
use hyper::body::Incoming;
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

/// Why a request got no answer: [`SendError::is_connect`] when no
/// connection could be made, so the request never left.
#[derive(Debug, thiserror::Error)]
#[error("{what}")]
pub struct SendError {
    connect: bool,
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
            what: what.into(),
            source,
        }
    }

    /// A failure after the request (maybe partly) left.
    pub fn broken(source: crate::body::BoxError) -> Self {
        SendError {
            connect: false,
            what: "the exchange with the server broke".to_owned(),
            source: Some(source),
        }
    }
}

impl From<hyper_util::client::legacy::Error> for SendError {
    fn from(e: hyper_util::client::legacy::Error) -> Self {
        SendError {
            connect: e.is_connect(),
            what: "request to the server failed".to_owned(),
            source: Some(Box::new(e)),
        }
    }
}

type Sender = http1::SendRequest<RequestBody>;

/// Idle connections to one server, most recently used on top.
pub struct H1Pool {
    dialer: Dialer,
    idle_timeout: Option<Duration>,
    max_idle: usize,
    idle: Mutex<Vec<(Sender, Instant)>>,
}

/// Hands a connection back to its pool once the answer it carried has been
/// read to the end (dropped unread, it closes with the connection).
pub struct Checkin {
    pool: Arc<H1Pool>,
    sender: Sender,
}

impl Checkin {
    /// The answer is complete: the connection may carry the next request.
    pub fn done(self) {
        self.pool.put(self.sender);
    }
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
            let mut sender = match self.take() {
                Some(s) => s,
                None => {
                    fresh = true;
                    self.connect().await?
                }
            };
            match sender.try_send_request(*req).await {
                Ok(resp) => {
                    let checkin = Checkin {
                        pool: self.clone(),
                        sender,
                    };
                    return Ok((resp, checkin));
                }
                // The pooled connection was closing: not sent, so safe to
                // send again whatever the method.
                Err(e) => *req = unsent(e, fresh)?,
            }
        }
    }

    /// The most recently used idle connection that can take a request now.
    /// One still finishing its last exchange waits for it off the stack and
    /// comes back when ready.
    fn take(self: &Arc<Self>) -> Option<Sender> {
        loop {
            let (mut sender, since) = self
                .idle
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .pop()?;
            if sender.is_closed() || self.expired(since) {
                continue;
            }
            if sender.is_ready() {
                return Some(sender);
            }
            let pool = Arc::downgrade(self);
            tokio::spawn(async move {
                if sender.ready().await.is_ok()
                    && let Some(pool) = pool.upgrade()
                {
                    pool.put(sender);
                }
            });
        }
    }

    fn put(&self, sender: Sender) {
        if sender.is_closed() {
            return;
        }
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        if idle.len() < self.max_idle {
            idle.push((sender, Instant::now()));
        }
    }

    fn expired(&self, since: Instant) -> bool {
        self.idle_timeout.is_some_and(|t| since.elapsed() >= t)
    }

    async fn connect(&self) -> Result<Sender, SendError> {
        let stream = self.dialer.dial().await?;
        let (sender, conn) = http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| SendError::connect("HTTP/1.1 handshake", Some(Box::new(e))))?;
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "server connection ended");
            }
        });
        Ok(sender)
    }
}

/// The request back from a failed send when it never left a connection
/// that was already open, so that it may go on a new one; otherwise why it
/// failed: a connection just opened that cannot carry it counts as no
/// connection, a request that (maybe partly) left as a broken exchange.
fn unsent(
    mut e: hyper::client::conn::TrySendError<Request<RequestBody>>,
    fresh: bool,
) -> Result<Request<RequestBody>, SendError> {
    match e.take_message() {
        Some(req) if !fresh => Ok(req),
        Some(_) => Err(SendError::connect(
            "the new connection closed before the request left",
            Some(Box::new(e.into_error())),
        )),
        None => Err(SendError::broken(Box::new(e.into_error()))),
    }
}

/// Where a server is, and how long connecting to it may take.
struct Dialer {
    host: String,
    port: u16,
    timeout: Option<Duration>,
}

impl Dialer {
    /// The server at `server` (port 80 when it names none).
    fn new(server: &Authority, timeout: Option<Duration>) -> Self {
        let host = server.host().trim_start_matches('[').trim_end_matches(']');
        Dialer {
            host: host.to_owned(),
            port: server.port_u16().unwrap_or(80),
            timeout,
        }
    }

    /// Opens a TCP connection to the server, within the dial timeout.
    async fn dial(&self) -> Result<tokio::net::TcpStream, SendError> {
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

type H2Sender = http2::SendRequest<RequestBody>;

/// The one HTTP/2 cleartext connection (prior knowledge) to a server:
/// every request is a stream on it, as HAProxy and hyper-util's client do
/// for h2c. It is opened on the first request, replaced when it closes (a
/// request it could not carry goes on the new one), and dropped after
/// `idleConnTimeout` without a request; streams still running on it then
/// finish first.
pub struct H2cConn {
    dialer: Dialer,
    idle_timeout: Option<Duration>,
    /// The connection, a number that tells it from the ones before, and
    /// when it last took a request.
    current: Mutex<Option<(H2Sender, u64, Instant)>>,
    /// Held while a connection is opened, so that requests arriving
    /// together wait for one connection instead of each opening one.
    dialing: tokio::sync::Mutex<u64>,
}

impl H2cConn {
    /// The connection to the server at `server` (port 80 when it names none).
    pub fn new(
        server: &Authority,
        dial_timeout: Option<Duration>,
        idle_timeout: Option<Duration>,
    ) -> Arc<Self> {
        reaped(Arc::new(H2cConn {
            dialer: Dialer::new(server, dial_timeout),
            idle_timeout,
            current: Mutex::new(None),
            dialing: tokio::sync::Mutex::new(0),
        }))
    }

    /// Sends `req` (absolute URI: HTTP/2 sends its authority) as a stream
    /// on the connection, opening it first if there is none.
    pub async fn send(
        self: &Arc<Self>,
        mut req: Request<RequestBody>,
    ) -> Result<Response<Incoming>, SendError> {
        let mut fresh = false;
        loop {
            let (mut sender, generation) = match self.open() {
                Some(open) => open,
                None => {
                    fresh = true;
                    // Boxed: the handshake's state is large and rarely
                    // needed; inline, every request's future would carry it.
                    Box::pin(self.connect()).await?
                }
            };
            match sender.try_send_request(req).await {
                Ok(resp) => return Ok(resp),
                // The connection was going away (GOAWAY, closed): the
                // request never left, so it may go on a new one.
                Err(e) => {
                    req = unsent(e, fresh)?;
                    self.forget(generation);
                }
            }
        }
    }

    /// The connection, if there is one that is open and not past its idle time.
    fn open(&self) -> Option<(H2Sender, u64)> {
        let mut current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        match current.as_mut() {
            Some((sender, generation, used)) if !sender.is_closed() && !self.expired(*used) => {
                *used = Instant::now();
                Some((sender.clone(), *generation))
            }
            Some(_) => {
                *current = None;
                None
            }
            None => None,
        }
    }

    fn forget(&self, generation: u64) {
        let mut current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        if current.as_ref().is_some_and(|(_, g, _)| *g == generation) {
            *current = None;
        }
    }

    fn expired(&self, since: Instant) -> bool {
        self.idle_timeout.is_some_and(|t| since.elapsed() >= t)
    }

    /// Opens a connection, unless another request opened one meanwhile.
    async fn connect(&self) -> Result<(H2Sender, u64), SendError> {
        let mut last = self.dialing.lock().await;
        if let Some(open) = self.open() {
            return Ok(open);
        }
        let stream = self.dialer.dial().await?;
        let (sender, conn) = http2::Builder::new(crate::executor::Boxing)
            .timer(TokioTimer::new())
            .handshake(TokioIo::new(stream))
            .await
            .map_err(|e| SendError::connect("HTTP/2 handshake", Some(Box::new(e))))?;
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "server connection ended");
            }
        });
        *last += 1;
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) =
            Some((sender.clone(), *last, Instant::now()));
        Ok((sender, *last))
    }
}

/// What the reaper does to a pool now and then.
trait Reap: Send + Sync + 'static {
    /// How long a connection may stay unused.
    fn idle_timeout(&self) -> Option<Duration>;
    /// Drops connections idle past the idle timeout.
    fn reap(&self);
}

impl Reap for H1Pool {
    fn idle_timeout(&self) -> Option<Duration> {
        self.idle_timeout
    }

    fn reap(&self) {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        idle.retain(|(s, since)| !s.is_closed() && !self.expired(*since));
    }
}

impl Reap for H2cConn {
    fn idle_timeout(&self) -> Option<Duration> {
        self.idle_timeout
    }

    fn reap(&self) {
        let mut current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        if current
            .as_ref()
            .is_some_and(|(s, _, used)| s.is_closed() || self.expired(*used))
        {
            *current = None;
        }
    }
}

/// `pool`, with a reaper when it has an idle timeout.
fn reaped<P: Reap>(pool: Arc<P>) -> Arc<P> {
    if let Some(limit) = pool.idle_timeout() {
        spawn_reaper(Arc::downgrade(&pool), limit);
    }
    pool
}

/// Closes a pool's expired idle connections now and then, so servers do not
/// see them linger; ends with the pool.
fn spawn_reaper<P: Reap>(pool: Weak<P>, limit: Duration) {
    let every = limit.max(Duration::from_secs(1));
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
