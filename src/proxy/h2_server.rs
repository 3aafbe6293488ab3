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

use super::error::Kind;
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
use std::io;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

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
    header_table_size: u32,
) -> Builder {
    let mut b = Builder::new();
    b.initial_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
        .max_frame_size(MAX_FRAME_SIZE)
        .max_send_buffer_size(MAX_SEND_BUFFER)
        .max_local_error_reset_streams(Some(MAX_LOCAL_ERROR_RESETS))
        .max_concurrent_streams(max_concurrent_streams)
        .max_header_list_size(max_header_list_size)
        .header_table_size(header_table_size)
        .max_pending_accept_reset_streams(max_pending_accept_reset_streams);
    b
}

/// One client's HTTP/2 connection, served until the client closes it or,
/// after [`Connection::graceful_shutdown`], until its streams are done.
/// Its streams run in the connection's own task, as nginx and HAProxy run
/// them: a stream's answer is sent without waking another task, and the
/// frames its streams queue go out together.
pub(crate) struct Connection<I> {
    state: State<Guarded<I>>,
    proxy: Arc<Proxy>,
    info: Arc<ConnInfo>,
    /// Shutdown was asked for during the handshake.
    close_pending: bool,
    /// The streams in progress.
    streams: FuturesUnordered<Pin<Box<dyn Future<Output = ()> + Send>>>,
    /// Set by the connection's reader when the client sent more control
    /// frames than it may ([`Guarded`]).
    flooded: Arc<AtomicBool>,
    /// The GOAWAY for a flood has been asked for.
    calmed: bool,
    /// The GOAWAY for `keepAliveMaxRequests`/`keepAliveMaxTime` has been
    /// sent.
    spent: bool,
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
        let flooded = Arc::new(AtomicBool::new(false));
        let limit = info.entry_point.limits.max_control_frames;
        let io = Guarded::new(io, limit, flooded.clone());
        Connection {
            state: State::Handshaking(builder.handshake(io)),
            proxy,
            info,
            close_pending: false,
            streams: FuturesUnordered::new(),
            flooded,
            calmed: false,
            spent: false,
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
            if !this.calmed && this.flooded.load(Ordering::Relaxed) {
                // As h2 does for too many resets: GOAWAY, then the close.
                tracing::debug!(peer = %this.info.peer, "too many PING/SETTINGS frames; connection closed");
                conn.abrupt_shutdown(Reason::ENHANCE_YOUR_CALM);
                this.calmed = true;
            }
            loop {
                match conn.poll_accept(cx) {
                    Poll::Ready(Some(Ok((req, respond)))) => {
                        let stream =
                            answer_stream(this.proxy.clone(), this.info.clone(), req, respond);
                        this.streams.push(Box::pin(stream));
                        // The connection's share served (Traefik's keep-alive
                        // bounds): a graceful GOAWAY, as Go's server sends
                        // for Traefik; the streams open finish, and the
                        // client opens a new connection for the next.
                        if !this.spent && this.info.keep_alive_spent() {
                            conn.graceful_shutdown();
                            this.spent = true;
                        }
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

/// How long the window is in which a client may send
/// `limits.maxControlFrames` PING and SETTINGS frames.
const CONTROL_WINDOW: Duration = Duration::from_secs(10);

/// A client connection's bytes on their way to h2, counting the PING and
/// SETTINGS frames in them. h2 answers each (a PING ACK, a SETTINGS ACK)
/// without a limit, so a client can keep a core busy with a stream of
/// them ("ping flood", "settings flood"); past the entry point's limit in
/// one window the connection stops reading and `flooded` is set, and the
/// [`Connection`] sends GOAWAY `ENHANCE_YOUR_CALM` and closes.
pub(crate) struct Guarded<I> {
    io: I,
    scan: FrameScan,
    /// Control frames allowed per window; 0: no limit.
    limit: u32,
    /// Control frames seen in this window, and when it started.
    seen: u32,
    window: Option<Instant>,
    flooded: Arc<AtomicBool>,
    /// The connection's task was woken once after the flood.
    woke: bool,
}

impl<I> Guarded<I> {
    fn new(io: I, limit: u32, flooded: Arc<AtomicBool>) -> Self {
        Guarded {
            io,
            scan: FrameScan::default(),
            limit,
            seen: 0,
            window: None,
            flooded,
            woke: false,
        }
    }

    /// Counts the control frames in newly read bytes.
    fn count(&mut self, bytes: &[u8]) {
        let control = self.scan.feed(bytes);
        if control == 0 || self.limit == 0 {
            return;
        }
        let now = Instant::now();
        match self.window {
            Some(start) if now.duration_since(start) < CONTROL_WINDOW => {}
            _ => {
                self.window = Some(now);
                self.seen = 0;
            }
        }
        self.seen = self.seen.saturating_add(control);
        if self.seen > self.limit {
            self.flooded.store(true, Ordering::Relaxed);
        }
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for Guarded<I> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.flooded.load(Ordering::Relaxed) {
            // Nothing more is read from a flooding client. Its connection
            // is woken once so that it sends the GOAWAY; it closes after
            // that without reading again.
            if !this.woke {
                this.woke = true;
                cx.waker().wake_by_ref();
            }
            return Poll::Pending;
        }
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.io).poll_read(cx, buf))?;
        this.count(&buf.filled()[before..]);
        Poll::Ready(Ok(()))
    }
}

write_through!(Guarded, io);

/// Follows the frame boundaries of a client's byte stream (after the
/// 24-byte preface) by their 9-byte headers, without copying payloads.
#[derive(Debug)]
struct FrameScan {
    /// Preface bytes still to pass.
    preface: usize,
    /// The frame header being read, and how much of it is in.
    head: [u8; 9],
    have: usize,
    /// Payload bytes still to pass.
    skip: usize,
}

impl Default for FrameScan {
    fn default() -> Self {
        FrameScan {
            preface: H2_PREFACE_LEN,
            head: [0; 9],
            have: 0,
            skip: 0,
        }
    }
}

/// `PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n`.
const H2_PREFACE_LEN: usize = 24;
const FRAME_SETTINGS: u8 = 0x4;
const FRAME_PING: u8 = 0x6;

impl FrameScan {
    /// Reads `bytes`, the next ones of the stream; returns how many PING
    /// and SETTINGS frames begin in them.
    fn feed(&mut self, mut bytes: &[u8]) -> u32 {
        let mut control = 0;
        while !bytes.is_empty() {
            let n = if self.preface > 0 {
                let n = self.preface.min(bytes.len());
                self.preface -= n;
                n
            } else if self.skip > 0 {
                let n = self.skip.min(bytes.len());
                self.skip -= n;
                n
            } else {
                let n = (9 - self.have).min(bytes.len());
                self.head[self.have..self.have + n].copy_from_slice(&bytes[..n]);
                self.have += n;
                if self.have == 9 {
                    let h = self.head;
                    self.skip = u32::from_be_bytes([0, h[0], h[1], h[2]]) as usize;
                    self.have = 0;
                    if matches!(h[3], FRAME_SETTINGS | FRAME_PING) {
                        control += 1;
                    }
                }
                n
            };
            bytes = &bytes[n..];
        }
        control
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
    let started = Instant::now();
    let (parts, recv) = req.into_parts();
    let mut body = H2Body::new(recv, &parts.headers);
    // What already arrived of the body is looked at before the head goes
    // anywhere: a body already past its content-length (h2 has reset the
    // stream) is not forwarded at all.
    if let Err(e) = poll_fn(|cx| Poll::Ready(body.read_ready(cx))).await {
        tracing::debug!(error = %e, "request body broke its stream before forwarding");
        respond.send_reset(e.reason().unwrap_or(Reason::PROTOCOL_ERROR));
        refused_by_reset(&proxy, &info, parts, &e, started);
        return;
    }
    // As nginx reads a request's body before it goes to a server: a body
    // announced and not begun is waited for (within the head's time limit)
    // before the request can take a server's slot, so streams whose bodies
    // never come hold nothing but themselves. Not with
    // `Expect: 100-continue`, whose body waits for gangway's go-ahead, nor
    // when the announced length is past the entry point's limit: that
    // request gets its 413 without the body.
    let too_large = info
        .entry_point
        .max_request_body_bytes
        .zip(http_body::Body::size_hint(&body).exact())
        .is_some_and(|(limit, declared)| declared > limit);
    // The connection's clock counts a stream waiting for its body as a
    // request in flight: otherwise a connection whose first request waits
    // would be cut for a slow head, and its 408 lost with it.
    let _waiting = info.activity.as_ref().map(|a| a.request_started(true).1);
    if !body.started() && !too_large && !parts.headers.contains_key(header::EXPECT) {
        let limit = super::timeouts::first_bytes_limit(&info.entry_point);
        let begun = poll_fn(|cx| match body.read_ready(cx) {
            Err(e) => Poll::Ready(Err(e)),
            Ok(()) if body.started() => Poll::Ready(Ok(())),
            Ok(()) => Poll::Pending,
        });
        match tokio::time::timeout(limit, begun).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                tracing::debug!(error = %e, "request body broke its stream before it began");
                respond.send_reset(e.reason().unwrap_or(Reason::PROTOCOL_ERROR));
                refused_by_reset(&proxy, &info, parts, &e, started);
                return;
            }
            Err(_) => {
                tracing::debug!(peer = %info.peer, "announced request body never began");
                let resp = Kind::RequestTimeout.into_response();
                proxy.record_refusal(
                    &info,
                    &Request::from_parts(parts, ()),
                    resp.status(),
                    started,
                );
                answer(&mut respond, resp).await;
                return;
            }
        }
    }
    let body = ClientStream::H2(body);
    let mut served = pin!(proxy.serve_request(info, Request::from_parts(parts, body)));
    // The reset is looked at first: a stream h2 has reset since the last
    // look (the client's RST_STREAM, or DATA past the content-length that
    // arrived while the request waited for a slot or a middleware) is
    // dropped before its request can move on to a server.
    let served = poll_fn(|cx| {
        if respond.poll_reset(cx).is_ready() {
            return Poll::Ready(None);
        }
        served.as_mut().poll(cx).map(Some)
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
    answer(&mut respond, resp).await;
}

/// Records a stream h2 reset before its request was forwarded, because
/// its body broke the protocol (DATA past the `content-length`): metrics
/// and the access log count it as a 400, the answer it stands for. A
/// stream the client reset itself is its own cancellation, not recorded.
fn refused_by_reset(
    proxy: &Proxy,
    info: &ConnInfo,
    parts: http::request::Parts,
    e: &h2::Error,
    started: Instant,
) {
    if e.is_library() {
        let req = Request::from_parts(parts, ());
        proxy.record_refusal(info, &req, http::StatusCode::BAD_REQUEST, started);
    }
}

/// Sends `resp` on the stream: its head, then its body.
async fn answer<B>(respond: &mut SendResponse<Bytes>, resp: Response<B>)
where
    B: Body<Data = Bytes, Error = crate::body::BoxError> + Unpin,
{
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
pub(super) fn date() -> HeaderValue {
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

    fn frame(kind: u8, payload: &[u8]) -> Vec<u8> {
        let len = (payload.len() as u32).to_be_bytes();
        let mut out = vec![len[1], len[2], len[3], kind, 0, 0, 0, 0, 0];
        out.extend_from_slice(payload);
        out
    }

    #[test]
    fn control_frames_are_counted_however_the_bytes_arrive() {
        let mut stream = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        stream.extend(frame(FRAME_SETTINGS, &[0; 6]));
        // A DATA payload that looks like a PING header is not one.
        stream.extend(frame(0x0, &frame(FRAME_PING, &[0; 8])));
        stream.extend(frame(0x1, &[0; 20]));
        for _ in 0..3 {
            stream.extend(frame(FRAME_PING, &[7; 8]));
        }
        let mut whole = FrameScan::default();
        assert_eq!(whole.feed(&stream), 4);
        for size in [1, 2, 5, 9, 10, 23] {
            let mut scan = FrameScan::default();
            let seen: u32 = stream.chunks(size).map(|c| scan.feed(c)).sum();
            assert_eq!(seen, 4, "in pieces of {size}");
        }
    }

    #[test]
    fn past_the_limit_the_connection_is_flagged() {
        let flooded = Arc::new(AtomicBool::new(false));
        let mut guard = Guarded::new((), 3, flooded.clone());
        guard.count(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
        for _ in 0..3 {
            guard.count(&frame(FRAME_PING, &[0; 8]));
        }
        assert!(!flooded.load(Ordering::Relaxed));
        guard.count(&frame(FRAME_SETTINGS, &[]));
        assert!(flooded.load(Ordering::Relaxed));
        // 0: no limit.
        let free = Arc::new(AtomicBool::new(false));
        let mut guard = Guarded::new((), 0, free.clone());
        guard.count(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
        for _ in 0..1000 {
            guard.count(&frame(FRAME_PING, &[0; 8]));
        }
        assert!(!free.load(Ordering::Relaxed));
    }

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
