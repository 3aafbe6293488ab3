//! A lean pool of HTTP/1.1 connections to one plain-HTTP server: the path
//! almost every proxied request takes. An idle connection is a stack entry
//! behind a short lock; it goes back on the stack when its answer's body
//! ends (see [`Checkin`]), so there is no pool key to hash and no task per
//! request. HTTPS, h2c and upgrades keep hyper-util's general client.

use crate::body::RequestBody;
use http::uri::{Authority, PathAndQuery};
use http::{Request, Response, Uri};
use hyper::body::Incoming;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
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
    host: String,
    port: u16,
    dial_timeout: Option<Duration>,
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
        let host = server.host().trim_start_matches('[').trim_end_matches(']');
        let pool = Arc::new(H1Pool {
            host: host.to_owned(),
            port: server.port_u16().unwrap_or(80),
            dial_timeout,
            idle_timeout,
            max_idle,
            idle: Mutex::new(Vec::new()),
        });
        if let Some(limit) = idle_timeout {
            spawn_reaper(Arc::downgrade(&pool), limit);
        }
        pool
    }

    /// Sends `req` (absolute URI; only its path and query go on the wire)
    /// over an idle connection, or a new one. A request that an idle
    /// connection closed under could not carry is sent once more on a new
    /// connection: it never left.
    pub async fn send(
        self: &Arc<Self>,
        mut req: Request<RequestBody>,
    ) -> Result<(Response<Incoming>, Checkin), SendError> {
        let pq = req
            .uri()
            .path_and_query()
            .cloned()
            .unwrap_or_else(|| PathAndQuery::from_static("/"));
        *req.uri_mut() = Uri::from(pq);
        let mut fresh = false;
        loop {
            let mut sender = match self.take() {
                Some(s) => s,
                None => {
                    fresh = true;
                    self.connect().await?
                }
            };
            match sender.try_send_request(req).await {
                Ok(resp) => {
                    let checkin = Checkin {
                        pool: self.clone(),
                        sender,
                    };
                    return Ok((resp, checkin));
                }
                Err(mut e) => match e.take_message() {
                    // The pooled connection was closing: not sent, so safe
                    // to send again whatever the method.
                    Some(unsent) if !fresh => req = unsent,
                    Some(_) => {
                        return Err(SendError::connect(
                            "the new connection closed before the request left",
                            Some(Box::new(e.into_error())),
                        ));
                    }
                    None => return Err(SendError::broken(Box::new(e.into_error()))),
                },
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
        let dial = tokio::net::TcpStream::connect((self.host.as_str(), self.port));
        let stream = match self.dial_timeout {
            Some(limit) => tokio::time::timeout(limit, dial)
                .await
                .map_err(|_| SendError::connect("dial timeout", None))?,
            None => dial.await,
        }
        .map_err(|e| {
            SendError::connect(
                format!("cannot connect to {}:{}", self.host, self.port),
                Some(Box::new(e)),
            )
        })?;
        let _ = stream.set_nodelay(true);
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

    /// Drops idle connections past the idle timeout.
    fn reap(&self) {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        idle.retain(|(s, since)| !s.is_closed() && !self.expired(*since));
    }
}

/// Closes a pool's expired idle connections now and then, so servers do not
/// see them linger; ends with the pool.
fn spawn_reaper(pool: Weak<H1Pool>, limit: Duration) {
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
