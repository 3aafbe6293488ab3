//! HTTP/2 cleartext (prior knowledge, as gRPC servers speak it) to one
//! server, spoken with the `h2` crate itself rather than through hyper's
//! client. hyper's client runs a dispatcher task per connection and spawns
//! a task per request to wait for its answer (and usually one more to send
//! its body), so every gRPC call crossed three tasks. Here the request's
//! own task opens the stream, sends the body it already has and reads the
//! answer; the connection's one task only moves frames.

use super::pool::{Dialer, Reap, SendError, reaped};
use crate::body::RequestBody;
use crate::body::h2_stream::{H2Body, Pipe};
use bytes::Bytes;
use h2::RecvStream;
use h2::client::{ResponseFuture, SendRequest};
use http::{Method, Request, Response, header};
use http_body::Body;
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// The one HTTP/2 cleartext connection to a server: every request is a
/// stream on it, as HAProxy does for h2c. It is opened on the first
/// request, replaced when it closes (a request it could not carry goes on
/// the new one), and dropped after `idleConnTimeout` without a request;
/// streams still running on it then finish first.
pub struct H2cConn {
    dialer: Dialer,
    idle_timeout: Option<Duration>,
    /// `readIdleTimeout` and `pingTimeout`: how often the connection is
    /// checked with a PING and how long its answer may take.
    pings: Option<(Duration, Duration)>,
    current: Mutex<Option<Current>>,
    /// Held while a connection is opened, so that requests arriving
    /// together wait for one connection instead of each opening one.
    dialing: tokio::sync::Mutex<u64>,
}

/// The open connection.
struct Current {
    sender: SendRequest<Bytes>,
    /// Tells this connection from the ones before it.
    generation: u64,
    /// When it last took a request.
    used: Instant,
    /// Set by the connection's task when the connection has ended.
    closed: Arc<AtomicBool>,
}

impl Current {
    fn usable(&self, idle_timeout: Option<Duration>) -> bool {
        !self.closed.load(Ordering::Relaxed) && idle_timeout.is_none_or(|t| self.used.elapsed() < t)
    }
}

impl H2cConn {
    /// The connection to the server at `server` (port 80 when it names none).
    pub fn new(server: &http::uri::Authority, settings: &super::ClientSettings) -> Arc<Self> {
        reaped(Arc::new(H2cConn {
            dialer: Dialer::new(server, settings.dial_timeout),
            idle_timeout: settings.idle_conn_timeout,
            pings: settings
                .read_idle_timeout
                .map(|every| (every, settings.ping_timeout.unwrap_or(super::PING_TIMEOUT))),
            current: Mutex::new(None),
            dialing: tokio::sync::Mutex::new(0),
        }))
    }

    /// Sends `req` (absolute URI: HTTP/2 sends its authority) as a stream
    /// on the connection, opening it first if there is none. A request body
    /// that is not over when the answer's head arrives goes on streaming
    /// in a task of its own (streaming and bidirectional calls).
    pub async fn send(&self, req: Request<RequestBody>) -> Result<Response<H2Body>, SendError> {
        let (parts, body) = req.into_parts();
        let mut head = Request::from_parts(parts, ());
        set_length(&mut head, &body);
        let eos = body.is_end_stream();
        let mut fresh = false;
        let (answer, stream) = loop {
            let (mut sender, generation) = match self.open() {
                Some(open) => open,
                None => {
                    fresh = true;
                    // Boxed: the handshake's state is large and rarely
                    // needed; inline, every request's future would carry it.
                    Box::pin(self.connect()).await?
                }
            };
            // Fails only when the connection has gone (closed, GOAWAY):
            // the request has not left, so it may go on a new one.
            if let Err(e) = poll_fn(|cx| sender.poll_ready(cx)).await {
                self.forget(generation);
                if fresh {
                    return Err(SendError::connect(
                        "the new connection closed before the request left",
                        Some(Box::new(e)),
                    ));
                }
                continue;
            }
            match sender.send_request(head, eos) {
                Ok(sent) => break sent,
                Err(e) => {
                    self.forget(generation);
                    return Err(SendError::connect(
                        "the connection took no new stream",
                        Some(Box::new(e)),
                    ));
                }
            }
        };
        let mut pipe = (!eos).then(|| Pipe::new(body, stream, h2::Reason::CANCEL));
        let answer = Exchange {
            answer,
            pipe: &mut pipe,
        }
        .await?;
        if let Some(rest) = pipe {
            tokio::spawn(async move {
                if let Err(e) = rest.await {
                    tracing::debug!(error = %e, "request body to the h2c server broke off");
                }
            });
        }
        let (head, recv) = answer.into_parts();
        let body = H2Body::new(recv, &head.headers);
        Ok(Response::from_parts(head, body))
    }

    /// The connection, if there is one that is open and not past its idle time.
    fn open(&self) -> Option<(SendRequest<Bytes>, u64)> {
        let mut current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        match current.as_mut() {
            Some(c) if c.usable(self.idle_timeout) => {
                c.used = Instant::now();
                Some((c.sender.clone(), c.generation))
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
        if current.as_ref().is_some_and(|c| c.generation == generation) {
            *current = None;
        }
    }

    /// Opens a connection, unless another request opened one meanwhile.
    async fn connect(&self) -> Result<(SendRequest<Bytes>, u64), SendError> {
        let mut last = self.dialing.lock().await;
        if let Some(open) = self.open() {
            return Ok(open);
        }
        let stream = self.dialer.dial().await?;
        // hyper's client defaults, which gangway used before it spoke h2
        // directly: larger windows than HTTP/2's 64 KB, no server push.
        let (sender, mut conn) = h2::client::Builder::new()
            .initial_window_size(2 * 1024 * 1024)
            .initial_connection_window_size(5 * 1024 * 1024)
            .max_frame_size(16 * 1024)
            .max_header_list_size(16 * 1024)
            .max_send_buffer_size(1024 * 1024)
            .initial_max_send_streams(100)
            .enable_push(false)
            .handshake(stream)
            .await
            .map_err(|e| SendError::connect("HTTP/2 handshake", Some(Box::new(e))))?;
        let closed = Arc::new(AtomicBool::new(false));
        let ended = closed.clone();
        let pinger = self
            .pings
            .and_then(|(every, wait)| Some((conn.ping_pong()?, every, wait)));
        tokio::spawn(async move {
            let outcome = match pinger {
                None => conn.await.map_err(|e| e.to_string()),
                Some((pings, every, wait)) => tokio::select! {
                    done = conn => done.map_err(|e| e.to_string()),
                    dead = ping_until_silent(pings, every, wait) => Err(dead),
                },
            };
            if let Err(e) = outcome {
                tracing::debug!(error = %e, "server connection ended");
            }
            ended.store(true, Ordering::Relaxed);
        });
        *last += 1;
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = Some(Current {
            sender: sender.clone(),
            generation: *last,
            used: Instant::now(),
            closed,
        });
        Ok((sender, *last))
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
            .is_some_and(|c| !c.usable(self.idle_timeout))
        {
            *current = None;
        }
    }
}

/// Adds `content-length` when the body's size is known and the request
/// has none, as hyper's client does (not for an empty body of a method
/// whose requests normally have none, such as GET).
fn set_length(head: &mut Request<()>, body: &RequestBody) {
    let Some(len) = body.size_hint().exact() else {
        return;
    };
    let bodiless = matches!(
        *head.method(),
        Method::GET
            | Method::HEAD
            | Method::DELETE
            | Method::OPTIONS
            | Method::CONNECT
            | Method::TRACE
    );
    if (len != 0 || !bodiless) && !head.headers().contains_key(header::CONTENT_LENGTH) {
        head.headers_mut()
            .insert(header::CONTENT_LENGTH, len.into());
    }
}

/// Waits for the answer's head while sending the request body, both in
/// the request's task.
struct Exchange<'a> {
    answer: ResponseFuture,
    pipe: &'a mut Option<Pipe<RequestBody>>,
}

impl Future for Exchange<'_> {
    type Output = Result<Response<RecvStream>, SendError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Some(pipe) = self.pipe.as_mut() {
            match Pin::new(pipe).poll(cx) {
                Poll::Ready(Ok(())) => *self.pipe = None,
                // The client's body failed (the error says how); the stream
                // is reset, so no answer will come.
                Poll::Ready(Err(e)) => {
                    *self.pipe = None;
                    return Poll::Ready(Err(SendError::broken(e)));
                }
                Poll::Pending => {}
            }
        }
        Pin::new(&mut self.answer).poll(cx).map_err(|e| {
            if e.reason() == Some(h2::Reason::REFUSED_STREAM) {
                // RFC 9113 §8.7: a refused stream was not processed at all.
                SendError::connect("the server refused the stream", Some(Box::new(e)))
            } else {
                SendError::broken(Box::new(e))
            }
        })
    }
}

/// Sends a PING every `every` and returns, saying why, once one is not
/// answered within `wait`: the connection is then dropped, as hyper does
/// for HTTP/2 keep-alive towards `https://` servers.
async fn ping_until_silent(mut pings: h2::PingPong, every: Duration, wait: Duration) -> String {
    loop {
        tokio::time::sleep(every).await;
        match tokio::time::timeout(wait, pings.ping(h2::Ping::opaque())).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return format!("PING failed: {e}"),
            Err(_) => return format!("no PING answer within {wait:?}"),
        }
    }
}
