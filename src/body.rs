//! The bodies that flow through gangway: `RequestBody` towards servers and
//! `ProxyBody` towards clients. Each is an enum so that the common case (a
//! body streamed straight through) costs no allocation; middlewares that
//! must hold, replay or transform a body (buffering, retry, compress) use the
//! in-memory or boxed variants, and only their routes pay for it.
//!
//! Every room may use this one, like `config`: the proxy streams these
//! bodies, the middlewares make and replace them, mirroring tees them and
//! health checks send fixed ones.

use bytes::{Bytes, BytesMut};
use http_body::{Body, Frame, SizeHint};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use tokio::sync::oneshot;

pub mod checkin;
pub mod h2_stream;
pub mod h3_stream;

/// Any error a body may end with.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A body made by a middleware, boxed: only routes that use such a
/// middleware pay for the allocation.
pub type BoxBody = UnsyncBoxBody<Bytes, BoxError>;

/// A request body on its way to a server.
pub enum RequestBody {
    /// Streamed from the client as it arrives (trailers included), within
    /// the entry point's limits.
    Incoming(ClientBody),
    /// Held in memory: empty, made by gangway, or buffered so that it can be
    /// sent again (`Bytes` clones share the buffer).
    Full(Option<Bytes>),
    /// Anything else a middleware built: a buffered head followed by the
    /// rest of the stream, a body spooled to disk.
    Boxed(BoxBody),
    /// Another body streamed on while a bounded copy is taken for mirrors.
    /// Boxed: only mirrored requests pay for it.
    Tee(Box<Tee>),
}

impl RequestBody {
    /// An empty body.
    pub const fn empty() -> Self {
        RequestBody::Full(None)
    }

    /// A body with these bytes.
    pub fn full(bytes: Bytes) -> Self {
        if bytes.is_empty() {
            RequestBody::Full(None)
        } else {
            RequestBody::Full(Some(bytes))
        }
    }

    /// Boxes any body with gangway's error type.
    pub fn boxed<B>(body: B) -> Self
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        RequestBody::Boxed(body.map_err(Into::into).boxed_unsync())
    }

    /// The bytes, when the whole body is already in memory (so it can be
    /// sent more than once).
    pub fn as_full(&self) -> Option<Bytes> {
        match self {
            RequestBody::Full(b) => Some(b.clone().unwrap_or_default()),
            _ => None,
        }
    }

    /// This body, to be sent on as before, and a copy of it of at most
    /// `limit` bytes, delivered on the receiver once the body has been read
    /// to its end. A body held in memory is copied at once (sharing its
    /// buffer); a streamed one is copied as it passes. The receiver gets no
    /// copy (the sender is dropped) when the body is larger than `limit`,
    /// fails, or is dropped before its end.
    pub fn tee(self, limit: usize) -> (RequestBody, oneshot::Receiver<Bytes>) {
        let (tx, rx) = oneshot::channel();
        if let Some(bytes) = self.as_full() {
            if bytes.len() <= limit {
                let _ = tx.send(bytes);
            }
            return (self, rx);
        }
        let tee = Tee {
            inner: self,
            copy: BytesMut::new(),
            limit,
            done: Some(tx),
        };
        (RequestBody::Tee(Box::new(tee)), rx)
    }
}

impl Default for RequestBody {
    fn default() -> Self {
        RequestBody::empty()
    }
}

impl From<Incoming> for RequestBody {
    fn from(b: Incoming) -> Self {
        RequestBody::Incoming(ClientBody::new(ClientStream::Hyper(b), None, None))
    }
}

/// A client's request body as it arrives: read by hyper's server, or from
/// an HTTP/2 stream that gangway serves with `h2` itself.
pub enum ClientStream {
    /// HTTP/1, read by hyper's server.
    Hyper(Incoming),
    /// A stream of an HTTP/2 connection.
    H2(h2_stream::H2Body),
    /// A stream of an HTTP/3 connection; boxed, so the other versions'
    /// requests stay as small as they were.
    H3(Box<h3_stream::H3Body>),
    /// HTTP/1 with its first parts already read ([`ClientStream::read_ready`]).
    Prefetched(Box<Prefetched>),
}

/// An HTTP/1 body whose first parts were read before the request was
/// forwarded, then the rest as it arrives (`None` once it all was read).
pub struct Prefetched {
    parts: std::collections::VecDeque<Frame<Bytes>>,
    rest: Option<Incoming>,
}

/// How much of a chunked body is read ahead before its request is
/// forwarded: enough for the small bodies of most API calls and forms.
const PREFETCH_BYTES: usize = 64 * 1024;
/// How many times in a row the ahead-reading lets the connection read on
/// before it takes what is there as all there is for now.
const PREFETCH_TURNS: usize = 2;

impl ClientStream {
    /// Reads what a client has already sent of an HTTP/1 body, up to
    /// 64 KiB, without waiting on the network, so that a chunked body
    /// whose framing is broken is refused before its head goes to a
    /// server. What has not arrived yet streams afterwards as usual
    /// (holding a head until a slow body ends would hold the server's
    /// answer too). An HTTP/2 body is returned as it is.
    pub async fn read_ready(self) -> Result<ClientStream, BoxError> {
        let ClientStream::Hyper(mut incoming) = self else {
            return Ok(self);
        };
        let mut parts = std::collections::VecDeque::new();
        let mut read = 0;
        let mut idle_turns = 0;
        let mut done = false;
        while read < PREFETCH_BYTES {
            let polled =
                std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut incoming).poll_frame(cx)))
                    .await;
            match polled {
                Poll::Ready(Some(Ok(frame))) => {
                    read += frame.data_ref().map_or(0, Bytes::len);
                    parts.push_back(frame);
                    idle_turns = 0;
                }
                Poll::Ready(Some(Err(e))) => return Err(e.into()),
                Poll::Ready(None) => {
                    done = true;
                    break;
                }
                Poll::Pending if idle_turns == PREFETCH_TURNS => break,
                Poll::Pending => {
                    // hyper reads a body in the connection's task, which is
                    // this one: letting it run once moves bytes already
                    // received into the body.
                    idle_turns += 1;
                    tokio::task::yield_now().await;
                }
            }
        }
        Ok(ClientStream::Prefetched(Box::new(Prefetched {
            parts,
            rest: (!done).then_some(incoming),
        })))
    }
}

impl Body for ClientStream {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match self.get_mut() {
            ClientStream::Hyper(b) => Pin::new(b).poll_frame(cx).map_err(Into::into),
            ClientStream::H2(b) => Pin::new(b).poll_frame(cx).map_err(Into::into),
            ClientStream::H3(b) => Pin::new(&mut **b).poll_frame(cx),
            ClientStream::Prefetched(p) => {
                if let Some(part) = p.parts.pop_front() {
                    return Poll::Ready(Some(Ok(part)));
                }
                match &mut p.rest {
                    Some(rest) => Pin::new(rest).poll_frame(cx).map_err(Into::into),
                    None => Poll::Ready(None),
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            ClientStream::Hyper(b) => b.is_end_stream(),
            ClientStream::H2(b) => b.is_end_stream(),
            ClientStream::H3(b) => b.is_end_stream(),
            ClientStream::Prefetched(p) => {
                p.parts.is_empty() && p.rest.as_ref().is_none_or(Incoming::is_end_stream)
            }
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ClientStream::Hyper(b) => b.size_hint(),
            ClientStream::H2(b) => b.size_hint(),
            ClientStream::H3(b) => b.size_hint(),
            // Read whole, without trailers: its length is known.
            ClientStream::Prefetched(p)
                if p.rest.is_none() && p.parts.iter().all(Frame::is_data) =>
            {
                let len = p
                    .parts
                    .iter()
                    .filter_map(Frame::data_ref)
                    .map(|d| d.len() as u64)
                    .sum();
                SizeHint::with_exact(len)
            }
            ClientStream::Prefetched(_) => SizeHint::default(),
        }
    }
}

/// Why a client's request body could not be passed on: the client's
/// fault, never the server's. A server call that fails with one of these
/// (found in its error's source chain) is answered with [`Self::status`].
#[derive(Debug, thiserror::Error)]
pub enum ClientBodyError {
    /// The client did not send its whole request within `readTimeout`.
    #[error("the client did not send its request body in time")]
    TimedOut,
    /// The body grew past `maxRequestBodyBytes`.
    #[error("the request body is larger than the entry point allows")]
    TooLarge,
    /// The client broke its body: bad chunked framing, or the connection
    /// closed before the end.
    #[error("the client's request body broke off: {0}")]
    Broken(#[source] BoxError),
}

impl ClientBodyError {
    /// The status the client gets when no answer has started yet.
    pub const fn status(&self) -> http::StatusCode {
        match self {
            ClientBodyError::TimedOut => http::StatusCode::REQUEST_TIMEOUT,
            ClientBodyError::TooLarge => http::StatusCode::PAYLOAD_TOO_LARGE,
            ClientBodyError::Broken(_) => http::StatusCode::BAD_REQUEST,
        }
    }

    /// The client fault somewhere in `err`'s source chain, if any.
    pub fn find<'a>(err: &'a (dyn std::error::Error + 'static)) -> Option<&'a ClientBodyError> {
        let mut cur = Some(err);
        while let Some(e) = cur {
            if let Some(found) = e.downcast_ref::<ClientBodyError>() {
                return Some(found);
            }
            cur = e.source();
        }
        None
    }
}

/// A client's request body, streamed on under the entry point's body size
/// limit and read deadline. Neither costs anything when off; the deadline's
/// timer is made only if the body ever has to wait for the client.
pub struct ClientBody {
    body: ClientStream,
    /// Bytes the client may still send (`u64::MAX`: no limit).
    remaining: u64,
    deadline: Option<tokio::time::Instant>,
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
    failed: bool,
}

impl ClientBody {
    /// `body` with at most `max_bytes` bytes (None: any size) and its last
    /// byte due by `deadline` (None: whenever).
    pub fn new(
        body: ClientStream,
        max_bytes: Option<u64>,
        deadline: Option<tokio::time::Instant>,
    ) -> Self {
        ClientBody {
            body,
            remaining: max_bytes.unwrap_or(u64::MAX),
            deadline,
            timer: None,
            failed: false,
        }
    }

    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if self.failed {
            return Poll::Ready(None);
        }
        let fault = match Pin::new(&mut self.body).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                let len = frame.data_ref().map_or(0, |d| d.len() as u64);
                // The frame that would cross the limit is never passed on,
                // so the server receives at most the limit.
                match self.remaining.checked_sub(len) {
                    Some(left) => {
                        self.remaining = left;
                        return Poll::Ready(Some(Ok(frame)));
                    }
                    None => ClientBodyError::TooLarge,
                }
            }
            Poll::Ready(Some(Err(e))) => ClientBodyError::Broken(e),
            Poll::Ready(None) => return Poll::Ready(None),
            Poll::Pending => {
                let Some(deadline) = self.deadline else {
                    return Poll::Pending;
                };
                let timer = self
                    .timer
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
                if timer.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                ClientBodyError::TimedOut
            }
        };
        self.failed = true;
        self.timer = None;
        Poll::Ready(Some(Err(Box::new(fault))))
    }
}

impl Body for RequestBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match self.get_mut() {
            RequestBody::Incoming(b) => b.poll(cx),
            RequestBody::Full(b) => Poll::Ready(b.take().map(|d| Ok(Frame::data(d)))),
            RequestBody::Boxed(b) => Pin::new(b).poll_frame(cx),
            RequestBody::Tee(t) => t.poll(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            RequestBody::Incoming(b) => b.failed || b.body.is_end_stream(),
            RequestBody::Full(b) => b.is_none(),
            RequestBody::Boxed(b) => b.is_end_stream(),
            RequestBody::Tee(t) => t.inner.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            RequestBody::Incoming(b) => b.body.size_hint(),
            RequestBody::Full(b) => SizeHint::with_exact(b.as_ref().map_or(0, |b| b.len() as u64)),
            RequestBody::Boxed(b) => b.size_hint(),
            RequestBody::Tee(t) => t.inner.size_hint(),
        }
    }
}

/// A streamed body passed through while a copy of up to `limit` bytes is
/// kept (see [`RequestBody::tee`]).
pub struct Tee {
    inner: RequestBody,
    copy: BytesMut,
    limit: usize,
    done: Option<oneshot::Sender<Bytes>>,
}

impl Tee {
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let (Some(data), Some(_)) = (frame.data_ref(), &self.done) {
                    if self.copy.len() + data.len() > self.limit {
                        // Too large to copy: give the copy up, keep streaming.
                        self.done = None;
                        self.copy = BytesMut::new();
                    } else {
                        self.copy.extend_from_slice(data);
                    }
                }
                // hyper stops polling once a body says it has ended, so the
                // final `None` may never come.
                if self.inner.is_end_stream() {
                    self.finish();
                }
            }
            Poll::Ready(None) => self.finish(),
            Poll::Ready(Some(Err(_))) => self.done = None,
            Poll::Pending => {}
        }
        polled
    }

    fn finish(&mut self) {
        if let Some(tx) = self.done.take() {
            let _ = tx.send(std::mem::take(&mut self.copy).freeze());
        }
    }
}

/// A response body on its way to the client.
pub enum ProxyBody {
    /// Streamed from the server as it arrives (trailers included).
    Upstream(UpstreamBody),
    /// Written by gangway (errors, redirects, small pages).
    Local(Full<Bytes>),
    /// Made by a middleware: compressed, buffered, or holding a guard until
    /// the body ends.
    Boxed(BoxBody),
}

impl ProxyBody {
    /// A body with fixed content.
    pub fn text(text: &'static str) -> Self {
        ProxyBody::Local(Full::new(Bytes::from_static(text.as_bytes())))
    }

    /// A body with these bytes.
    pub fn bytes(bytes: Bytes) -> Self {
        ProxyBody::Local(Full::new(bytes))
    }

    /// An empty body.
    pub fn empty() -> Self {
        ProxyBody::Local(Full::new(Bytes::new()))
    }

    /// Boxes any body with gangway's error type.
    pub fn boxed<B>(body: B) -> Self
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        ProxyBody::Boxed(body.map_err(Into::into).boxed_unsync())
    }
}

impl Default for ProxyBody {
    fn default() -> Self {
        ProxyBody::empty()
    }
}

impl Body for ProxyBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match self.get_mut() {
            ProxyBody::Upstream(b) => Pin::new(b).poll_frame(cx).map_err(Into::into),
            ProxyBody::Local(b) => Pin::new(b).poll_frame(cx).map_err(|never| match never {}),
            ProxyBody::Boxed(b) => Pin::new(b).poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            ProxyBody::Upstream(b) => b.is_end_stream(),
            ProxyBody::Local(b) => b.is_end_stream(),
            ProxyBody::Boxed(b) => b.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ProxyBody::Upstream(b) => b.size_hint(),
            ProxyBody::Local(b) => b.size_hint(),
            ProxyBody::Boxed(b) => b.size_hint(),
        }
    }
}

/// A server's answer body.
pub enum UpstreamBody {
    /// From hyper's client. When it came over a pooled HTTP/1.1
    /// connection, reading it moves that connection on, and the connection
    /// goes back to its pool as soon as the body has ended.
    Hyper {
        body: Incoming,
        checkin: Option<checkin::Checkin>,
    },
    /// A stream of an h2c (gRPC) connection.
    H2c(h2_stream::H2Body),
}

impl UpstreamBody {
    /// `body`, handing `checkin`'s connection back once it has ended.
    pub fn pooled(body: Incoming, checkin: Option<checkin::Checkin>) -> Self {
        let mut b = UpstreamBody::Hyper { body, checkin };
        // A body that is empty from the start (HEAD, 204, 304, length 0) may
        // never be read.
        b.check_end();
        b
    }

    fn check_end(&mut self) {
        if let UpstreamBody::Hyper { body, checkin } = self
            && body.is_end_stream()
            && let Some(c) = checkin.take()
        {
            c.done();
        }
    }
}

impl Body for UpstreamBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        let (body, checkin) = match this {
            UpstreamBody::Hyper { body, checkin } => (body, checkin),
            UpstreamBody::H2c(b) => return Pin::new(b).poll_frame(cx).map_err(Into::into),
        };
        let polled = match checkin.as_mut() {
            // The connection has no task of its own: reading the body is
            // what moves it on when nothing has arrived yet. Only that
            // connection fills the body, so the body wakes no one (a wake
            // would only poll this task once more for nothing); the
            // connection wakes the task when its server sends more.
            Some(c) => {
                let quiet = &mut Context::from_waker(Waker::noop());
                match Pin::new(&mut *body).poll_frame(quiet) {
                    Poll::Pending => {
                        c.poll_conn(cx);
                        Pin::new(&mut *body).poll_frame(quiet)
                    }
                    ready => ready,
                }
            }
            None => Pin::new(&mut *body).poll_frame(cx),
        };
        match &polled {
            Poll::Ready(Some(Ok(_))) => this.check_end(),
            Poll::Ready(None) => {
                if let Some(c) = checkin.take() {
                    c.done();
                }
            }
            // Broken: the connection is not reused.
            Poll::Ready(Some(Err(_))) => *checkin = None,
            Poll::Pending => {}
        }
        polled.map_err(Into::into)
    }

    fn is_end_stream(&self) -> bool {
        match self {
            UpstreamBody::Hyper { body, .. } => body.is_end_stream(),
            UpstreamBody::H2c(b) => b.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            UpstreamBody::Hyper { body, .. } => body.size_hint(),
            UpstreamBody::H2c(b) => b.size_hint(),
        }
    }
}

/// Marks a response that gangway made because the server could not be used
/// (not the server's own answer). Retry, circuitBreaker and buffering's
/// `IsNetworkError()` read it from the response's extensions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpstreamFailure {
    /// Nothing reached a server (no server, connection refused or failed):
    /// sending the request again is safe whatever its method.
    NotSent,
    /// The exchange broke after the request was (maybe partly) sent.
    Broken,
    /// The server did not answer in time.
    Timeout,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn full_bodies_replay_and_report_their_size() {
        let body = RequestBody::full(Bytes::from_static(b"abc"));
        assert_eq!(body.size_hint().exact(), Some(3));
        let again = body.as_full().expect("in memory");
        let got = body.collect().await.expect("collect").to_bytes();
        assert_eq!((&got[..], &again[..]), (&b"abc"[..], &b"abc"[..]));
        assert!(RequestBody::empty().is_end_stream());
        assert!(RequestBody::full(Bytes::new()).is_end_stream());
    }

    fn streamed(chunks: &[&'static [u8]]) -> RequestBody {
        let frames = chunks
            .iter()
            .map(|c| Ok::<_, BoxError>(Frame::data(Bytes::from_static(c))))
            .collect::<Vec<_>>();
        RequestBody::boxed(http_body_util::StreamBody::new(futures_util::stream::iter(
            frames,
        )))
    }

    #[tokio::test]
    async fn tee_copies_within_its_limit_and_streams_everything() {
        let (body, copy) = streamed(&[b"ab", b"cd"]).tee(4);
        let sent = body.collect().await.expect("collect").to_bytes();
        assert_eq!(&sent[..], b"abcd");
        assert_eq!(&copy.await.expect("a copy")[..], b"abcd");

        // Past the limit: everything still streams, but there is no copy.
        let (body, copy) = streamed(&[b"ab", b"cd"]).tee(3);
        let sent = body.collect().await.expect("collect").to_bytes();
        assert_eq!(&sent[..], b"abcd");
        assert!(copy.await.is_err());

        // Dropped before its end: no copy.
        let (body, copy) = streamed(&[b"ab"]).tee(10);
        drop(body);
        assert!(copy.await.is_err());

        // In memory: copied at once, and still sent.
        let (body, copy) = RequestBody::full(Bytes::from_static(b"xyz")).tee(3);
        assert_eq!(&copy.await.expect("a copy")[..], b"xyz");
        assert_eq!(body.as_full().as_deref(), Some(&b"xyz"[..]));
        let (_, copy) = RequestBody::full(Bytes::from_static(b"xyz")).tee(2);
        assert!(copy.await.is_err());
    }
}
