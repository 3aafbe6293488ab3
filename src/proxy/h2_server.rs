//! All HTTP/2 from clients, served with the `h2` crate directly and the
//! same settings and limits however the version was told (`connection`:
//! ALPN `h2`, or the preface in the clear or over TLS without ALPN, in one
//! piece or many). Each stream's request goes to `Proxy::serve_request`.
//!
//! hyper's HTTP/2 server ran each stream as a task of its own, which asked
//! for flow-control room before an answer's first byte and then waited for
//! the connection's task to grant it, so every answer crossed between two
//! tasks several times. Here a connection's streams run in its own task,
//! and an answer's last (often only) part is sent at once.
//!
//! What hyper did for each answer is done here too: `Date` is added,
//! headers HTTP/2 forbids (hop-by-hop, `TE`) are removed, `content-length`
//! is set when the body's size is known, a stream the client resets stops
//! its request, and a failed answer resets its stream.

use super::forwarded::strip_connection_specific;
use super::{ConnInfo, Proxy};
use crate::body::ClientStream;
use crate::body::h2_stream::{H2Body, Pipe};
use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use h2::server::{Builder, Handshake, SendResponse};
use h2::{Reason, RecvStream};
use http::header::{self, HeaderValue};
use http::{Request, Response};
use http_body::Body;
use std::cell::RefCell;
use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncRead, AsyncWrite};

/// Flow-control windows and frame size, as hyper's server sets them: the
/// protocol's 64 KiB windows would hold back large answers on fast links.
const STREAM_WINDOW: u32 = 1024 * 1024;
const CONNECTION_WINDOW: u32 = 1024 * 1024;
const MAX_FRAME_SIZE: u32 = 16 * 1024;
/// Answer bytes buffered per stream before its sender waits for the client.
const MAX_SEND_BUFFER: usize = 400 * 1024;
/// Streams gangway itself may reset on a connection before it closes it
/// (a client provoking errors on purpose).
const MAX_LOCAL_ERROR_RESETS: usize = 1024;

/// The settings every HTTP/2 connection of an entry point starts with.
pub(crate) fn builder(
    max_concurrent_streams: u32,
    max_header_list_size: u32,
    max_pending_accept_reset_streams: usize,
) -> Builder {
    let mut b = Builder::new();
    b.initial_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
        .max_frame_size(MAX_FRAME_SIZE)
        .max_send_buffer_size(MAX_SEND_BUFFER)
        .max_local_error_reset_streams(Some(MAX_LOCAL_ERROR_RESETS))
        .max_concurrent_streams(max_concurrent_streams)
        .max_header_list_size(max_header_list_size)
        .max_pending_accept_reset_streams(max_pending_accept_reset_streams);
    b
}

/// One client's HTTP/2 connection, served until the client closes it or,
/// after [`Connection::graceful_shutdown`], until its streams are done.
/// Its streams run in the connection's own task, as nginx and HAProxy run
/// them: a stream's answer is sent without waking another task, and the
/// frames its streams queue go out together.
pub(crate) struct Connection<I> {
    state: State<I>,
    proxy: Arc<Proxy>,
    info: Arc<ConnInfo>,
    /// Shutdown was asked for during the handshake.
    close_pending: bool,
    /// The streams in progress.
    streams: FuturesUnordered<Pin<Box<dyn Future<Output = ()> + Send>>>,
}

enum State<I> {
    Handshaking(Handshake<I, Bytes>),
    Serving(h2::server::Connection<I, Bytes>),
    /// The client's side has ended; streams still in progress finish.
    Closed,
}

impl<I> Connection<I>
where
    I: AsyncRead + AsyncWrite + Unpin,
{
    /// Starts the handshake on `io` (the preface is read, the settings
    /// sent, as the connection is polled).
    pub(crate) fn new(io: I, builder: &Builder, proxy: Arc<Proxy>, info: Arc<ConnInfo>) -> Self {
        Connection {
            state: State::Handshaking(builder.handshake(io)),
            proxy,
            info,
            close_pending: false,
            streams: FuturesUnordered::new(),
        }
    }

    /// Takes no new streams (GOAWAY), lets those open finish, then closes.
    pub(crate) fn graceful_shutdown(&mut self) {
        match &mut self.state {
            State::Handshaking(_) => self.close_pending = true,
            State::Serving(conn) => conn.graceful_shutdown(),
            State::Closed => {}
        }
    }
}

impl<I> Future for Connection<I>
where
    I: AsyncRead + AsyncWrite + Unpin,
{
    type Output = Result<(), h2::Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        if let State::Handshaking(handshake) = &mut this.state {
            let mut conn = ready!(Pin::new(handshake).poll(cx))?;
            if this.close_pending {
                conn.graceful_shutdown();
            }
            this.state = State::Serving(conn);
        }
        // New streams, then the streams in progress; the frames these
        // queue wake this task, whose next poll sends them.
        if let State::Serving(conn) = &mut this.state {
            loop {
                match conn.poll_accept(cx) {
                    Poll::Ready(Some(Ok((req, respond)))) => {
                        let stream =
                            answer_stream(this.proxy.clone(), this.info.clone(), req, respond);
                        this.streams.push(Box::pin(stream));
                    }
                    Poll::Ready(Some(Err(e))) => return Poll::Ready(Err(e)),
                    Poll::Ready(None) => {
                        this.state = State::Closed;
                        break;
                    }
                    Poll::Pending => break,
                }
            }
        }
        while let Poll::Ready(Some(())) = this.streams.poll_next_unpin(cx) {}
        if matches!(this.state, State::Closed) && this.streams.is_empty() {
            return Poll::Ready(Ok(()));
        }
        Poll::Pending
    }
}

/// One stream: the request through the proxy, then its answer back. A
/// reset from the client while the answer is pending drops the request
/// (and with it the exchange with the server).
async fn answer_stream(
    proxy: Arc<Proxy>,
    info: Arc<ConnInfo>,
    req: Request<RecvStream>,
    mut respond: SendResponse<Bytes>,
) {
    let (parts, recv) = req.into_parts();
    let body = ClientStream::H2(H2Body::new(recv, &parts.headers));
    let mut served = pin!(proxy.serve_request(info, Request::from_parts(parts, body)));
    let served = poll_fn(|cx| {
        if let Poll::Ready(resp) = served.as_mut().poll(cx) {
            return Poll::Ready(Some(resp));
        }
        respond.poll_reset(cx).map(|_| None)
    })
    .await;
    let resp = match served {
        Some(Ok(resp)) => resp,
        // writeTimeout passed before the answer started.
        Some(Err(_)) => {
            respond.send_reset(Reason::INTERNAL_ERROR);
            return;
        }
        None => {
            tracing::trace!("the client reset the stream before its answer");
            return;
        }
    };
    let (mut head, body) = resp.into_parts();
    strip_connection_specific(&mut head.headers);
    if !head.headers.contains_key(header::DATE) {
        head.headers.insert(header::DATE, date());
    }
    let last = body.is_end_stream();
    if !last
        && let Some(len) = body.size_hint().exact()
        && !head.headers.contains_key(header::CONTENT_LENGTH)
    {
        head.headers.insert(header::CONTENT_LENGTH, len.into());
    }
    let stream = match respond.send_response(Response::from_parts(head, ()), last) {
        Ok(stream) => stream,
        Err(e) => {
            tracing::debug!(error = %e, "answer head not sent");
            respond.send_reset(Reason::INTERNAL_ERROR);
            return;
        }
    };
    if !last && let Err(e) = Pipe::new(body, stream, Reason::INTERNAL_ERROR).await {
        tracing::debug!(error = %e, "answer body broke off; stream reset");
    }
}

/// `Date` for now (RFC 9110 §6.6.1), formatted once a second per thread.
fn date() -> HeaderValue {
    thread_local! {
        static NOW: RefCell<(u64, HeaderValue)> =
            const { RefCell::new((u64::MAX, HeaderValue::from_static(""))) };
    }
    let now = SystemTime::now();
    let second = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    NOW.with_borrow_mut(|(at, value)| {
        if *at != second {
            let text = httpdate::fmt_http_date(now);
            if let Ok(v) = HeaderValue::from_str(&text) {
                *at = second;
                *value = v;
            }
        }
        value.clone()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_date_is_an_http_date_of_now() {
        let value = date();
        let parsed = httpdate::parse_http_date(value.to_str().unwrap()).unwrap();
        let off = SystemTime::now()
            .duration_since(parsed)
            .unwrap_or_default()
            .as_secs();
        assert!(off <= 1, "{value:?} is {off} s off");
    }
}
