//! Bodies over HTTP/2 streams of the `h2` crate, both ways and on both
//! sides: [`H2Body`] reads a stream (a client's request, an h2c server's
//! answer), [`Pipe`] writes a body into one (a request to an h2c server, an
//! answer to a client), as the peer's flow control allows.

use super::BoxError;
use bytes::Bytes;
use h2::{Reason, RecvStream, SendStream};
use http::{HeaderMap, HeaderValue, header};
use http_body::{Body, Frame, SizeHint};
use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

/// A body on its way into an HTTP/2 stream, sent as the peer's flow
/// control allows: the next part is read from its source only when the
/// peer has room for it, so a slow reader slows the writer instead of
/// filling gangway's memory. Ends quietly when the peer resets the stream
/// (whoever waits on the exchange learns why from the stream itself); a
/// body that fails resets the stream with the pipe's reason.
pub struct Pipe<B> {
    body: B,
    stream: SendStream<Bytes>,
    /// Data read from the source, waiting for room at the peer.
    waiting: Option<Bytes>,
    /// What the stream is reset with when the body fails.
    on_error: Reason,
}

impl<B> Pipe<B>
where
    B: Body<Data = Bytes, Error = BoxError> + Unpin,
{
    /// Sends `body` on `stream`, resetting it with `on_error` if the body
    /// fails.
    pub fn new(body: B, stream: SendStream<Bytes>, on_error: Reason) -> Self {
        Pipe {
            body,
            stream,
            waiting: None,
            on_error,
        }
    }

    /// Sends data; true when the body is over: this was the last part, or
    /// sending failed (stream reset, connection gone), which ends the pipe
    /// quietly since the stream reports it.
    fn send(&mut self, data: Bytes, last: bool) -> bool {
        self.stream.send_data(data, last).is_err() || last
    }
}

impl<B> Future for Pipe<B>
where
    B: Body<Data = Bytes, Error = BoxError> + Unpin,
{
    type Output = Result<(), BoxError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        loop {
            // A reset from the peer ends the body (a server may answer early
            // and then refuse the rest; a client may give up).
            if this.stream.poll_reset(cx).is_ready() {
                return Poll::Ready(Ok(()));
            }
            if let Some(data) = this.waiting.take() {
                while this.stream.capacity() == 0 {
                    match this.stream.poll_capacity(cx) {
                        Poll::Ready(Some(Ok(0))) => {}
                        Poll::Ready(Some(Ok(_))) => break,
                        Poll::Ready(Some(Err(_)) | None) => return Poll::Ready(Ok(())),
                        Poll::Pending => {
                            this.waiting = Some(data);
                            return Poll::Pending;
                        }
                    }
                }
                if this.send(data, false) {
                    return Poll::Ready(Ok(()));
                }
                continue;
            }
            match ready!(Pin::new(&mut this.body).poll_frame(cx)) {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => {
                        let last = this.body.is_end_stream();
                        if last || data.is_empty() {
                            // The last part (often the only one, as for a
                            // gRPC unary call) is already in memory: it goes
                            // at once, and h2 sends it as room appears.
                            if this.send(data, last) {
                                return Poll::Ready(Ok(()));
                            }
                        } else {
                            // More follows: ask for room (one byte, so as
                            // not to pin the connection's window for a body
                            // that might stall) and wait for it before
                            // reading on.
                            this.stream.reserve_capacity(1);
                            this.waiting = Some(data);
                        }
                    }
                    Err(frame) => {
                        if let Ok(mut trailers) = frame.into_trailers() {
                            this.stream.reserve_capacity(0);
                            detach_values(&mut trailers);
                            let _ = this.stream.send_trailers(trailers);
                            return Poll::Ready(Ok(()));
                        }
                    }
                },
                Some(Err(e)) => {
                    this.stream.send_reset(this.on_error);
                    return Poll::Ready(Err(e));
                }
                None => {
                    this.send(Bytes::new(), true);
                    return Poll::Ready(Ok(()));
                }
            }
        }
    }
}

/// Gives header values read from one connection storage of their own
/// before h2 sends them on another. hyper and h2 read values as slices of
/// the connection's read buffer, and h2 keeps the values it indexes in the
/// sending connection's HPACK table for as long as that connection lasts:
/// a client's table would hold whole read buffers of server connections
/// (and an h2c server connection's, of clients'). Values h2 never indexes
/// (`content-length`, sensitive ones) are left as they are.
pub(crate) fn detach_values(headers: &mut HeaderMap) {
    for (name, value) in headers.iter_mut() {
        if name == header::CONTENT_LENGTH || value.is_sensitive() {
            continue;
        }
        if let Some(own) = own_value(value.as_bytes()) {
            *value = own;
        }
    }
}

/// How many recent values each thread shares, and up to what length.
const SHARED_VALUES: usize = 8;
const SHARED_VALUE_LEN: usize = 64;

/// A value with storage of its own. Answers mostly repeat a few short
/// values (a content type, this second's date): a thread's recent ones are
/// shared, so that repeating one allocates nothing.
fn own_value(bytes: &[u8]) -> Option<HeaderValue> {
    type Recent = ([Option<HeaderValue>; SHARED_VALUES], usize);
    thread_local! {
        static RECENT: RefCell<Recent> = const { RefCell::new(([const { None }; SHARED_VALUES], 0)) };
    }
    if bytes.len() > SHARED_VALUE_LEN {
        return HeaderValue::from_bytes(bytes).ok();
    }
    RECENT.with_borrow_mut(|(values, next)| {
        if let Some(known) = values.iter().flatten().find(|v| v.as_bytes() == bytes) {
            return Some(known.clone());
        }
        let own = HeaderValue::from_bytes(bytes).ok()?;
        values[*next] = Some(own.clone());
        *next = (*next + 1) % SHARED_VALUES;
        Some(own)
    })
}

/// A body read from an HTTP/2 stream: data as it arrives (each part handed
/// back to the peer's flow control once passed on), then trailers, which
/// gRPC's status travels in. Never holds more than one part.
///
/// When the message announced a `content-length`, the part that completes
/// it is held until the stream's end confirms it: h2 resets a stream whose
/// data runs past its length, but only when the excess arrives, and by then
/// a server given every announced byte could have taken the body as whole.
/// Held back, the last part never leaves, and the server sees a body cut
/// short instead.
pub struct H2Body {
    recv: RecvStream,
    data_done: bool,
    /// What the peer announced in `content-length` and has not sent yet.
    remaining: Option<u64>,
    /// A part read from the stream and not yet passed on: read ahead
    /// before forwarding, or the one that completes the announced length,
    /// waiting for the stream's end. Its flow-control capacity is released
    /// when it is passed on.
    held: Option<Bytes>,
}

impl H2Body {
    /// `recv`, with the length its message's `headers` announce (h2 itself
    /// checks that the peer keeps to it).
    pub fn new(recv: RecvStream, headers: &HeaderMap) -> Self {
        let remaining = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok());
        H2Body {
            recv,
            data_done: false,
            remaining,
            held: None,
        }
    }

    /// Looks at what the stream has already received, without waiting: a
    /// body that already broke its length (or was reset) is an error here,
    /// before anything of the request is forwarded. Keeps the first part.
    pub fn read_ready(&mut self, cx: &mut Context<'_>) -> Result<(), h2::Error> {
        for _ in 0..2 {
            // The second look only for a first part that completes the
            // announced length: is the stream's end (or excess) there too?
            if self.data_done || self.held.is_some() && !self.must_hold() {
                break;
            }
            match self.recv.poll_data(cx) {
                Poll::Ready(Some(Ok(data))) => self.take(data),
                Poll::Ready(Some(Err(e))) => {
                    self.held = None;
                    return Err(e);
                }
                Poll::Ready(None) => self.data_done = true,
                Poll::Pending => break,
            }
        }
        Ok(())
    }

    /// Whether the body is known to have begun, or to have none: a body
    /// announced with a `content-length` above 0 has begun once its first
    /// bytes (or the stream's end) have been read. A body of unknown
    /// length counts as begun: it may never come, and streams without
    /// one (gRPC) are not held back.
    pub fn started(&self) -> bool {
        self.data_done || self.held.is_some() || !matches!(self.remaining, Some(n) if n > 0)
    }

    /// Counts `data` against the announced length and keeps it.
    fn take(&mut self, data: Bytes) {
        if let Some(left) = self.remaining.as_mut() {
            *left = left.saturating_sub(data.len() as u64);
        }
        // An empty DATA frame carries nothing to pass on; h2 refuses data
        // past the length, so a held part is never replaced by another.
        if !data.is_empty() && self.held.is_none() {
            self.held = Some(data);
        }
    }

    /// The held part completes the announced length and the stream's end
    /// has not been seen yet.
    fn must_hold(&self) -> bool {
        !self.data_done && self.remaining == Some(0)
    }
}

impl Body for H2Body {
    type Data = Bytes;
    type Error = h2::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, h2::Error>>> {
        let this = &mut *self;
        loop {
            if this.held.is_some() && !this.must_hold() {
                let part = this.held.take().unwrap_or_default();
                let _ = this.recv.flow_control().release_capacity(part.len());
                return Poll::Ready(Some(Ok(Frame::data(part))));
            }
            if this.data_done {
                break;
            }
            match ready!(this.recv.poll_data(cx)) {
                Some(Ok(data)) => this.take(data),
                Some(Err(e)) => {
                    this.held = None;
                    return Poll::Ready(Some(Err(e)));
                }
                None => this.data_done = true,
            }
        }
        match ready!(this.recv.poll_trailers(cx)) {
            Ok(Some(trailers)) => Poll::Ready(Some(Ok(Frame::trailers(trailers)))),
            Ok(None) => Poll::Ready(None),
            Err(e) => Poll::Ready(Some(Err(e))),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.held.is_none() && self.recv.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        let held = self.held.as_ref().map_or(0, |h| h.len() as u64);
        match self.remaining {
            _ if self.recv.is_end_stream() => SizeHint::with_exact(held),
            Some(left) => SizeHint::with_exact(left + held),
            None => SizeHint::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_values_no_longer_share_the_buffer_they_were_read_from() {
        let read = Bytes::from(vec![b'x'; 8192]);
        let other = Bytes::from(vec![b'1'; 64]);
        let slice = |b: &Bytes, r: std::ops::Range<usize>| {
            HeaderValue::from_maybe_shared(b.slice(r)).unwrap()
        };
        let answer = || {
            let mut headers = HeaderMap::new();
            headers.insert(header::CONTENT_TYPE, slice(&read, 0..16));
            headers.append(header::SET_COOKIE, slice(&read, 16..20));
            headers.append(header::SET_COOKIE, slice(&read, 20..30));
            // Longer than what is shared between answers.
            headers.insert(header::ETAG, slice(&read, 30..130));
            headers.insert(
                header::DATE,
                HeaderValue::from_static("Wed, 02 Dec 2026 07:00:00 GMT"),
            );
            // Never indexed by h2: left as they are.
            headers.insert(header::CONTENT_LENGTH, slice(&other, 0..4));
            let mut secret = slice(&other, 4..8);
            secret.set_sensitive(true);
            headers.insert(header::AUTHORIZATION, secret);
            headers
        };
        let (mut first, mut second) = (answer(), answer());
        let before = first.clone();
        detach_values(&mut first);
        detach_values(&mut second);
        assert_eq!(first, before);
        assert!(first[header::AUTHORIZATION].is_sensitive());
        // A repeated short value is shared, not copied again.
        let at = |h: &HeaderMap, n| h[n].as_bytes().as_ptr();
        assert_eq!(
            at(&first, header::CONTENT_TYPE),
            at(&second, header::CONTENT_TYPE)
        );
        assert_ne!(at(&first, header::ETAG), at(&second, header::ETAG));
        drop(before);
        // Only the test's own handle on the read buffer is left: the server
        // connection could read into it again.
        assert!(
            read.try_into_mut().is_ok(),
            "an answer value still holds the read buffer"
        );
        assert!(other.try_into_mut().is_err());
    }
}
