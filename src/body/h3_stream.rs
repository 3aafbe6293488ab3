//! A client's request body read from an HTTP/3 stream: its DATA frames,
//! then its trailers, held to the `content-length` the request declared
//! (h3 itself does not check it; hyper and h2 do for the other versions).

use super::BoxError;
use bytes::{Buf, Bytes};
use http::HeaderMap;
use http::header::CONTENT_LENGTH;
use http_body::{Body, Frame, SizeHint};
use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

/// The receiving half of a request's stream.
pub type RecvStream = h3::server::RequestStream<h3_quinn::RecvStream, Bytes>;

/// Why an HTTP/3 request body was refused.
#[derive(Debug, thiserror::Error)]
pub enum H3BodyError {
    /// More bytes came than `content-length` said.
    #[error("the body runs past its content-length ({declared} bytes)")]
    Excess {
        /// The declared length.
        declared: u64,
    },
    /// The stream ended before the bytes `content-length` said.
    #[error("the body ended short of its content-length ({declared} bytes)")]
    Short {
        /// The declared length.
        declared: u64,
    },
    /// The stream failed (reset by the client, connection lost).
    #[error("the HTTP/3 stream failed: {0}")]
    Stream(#[from] h3::error::StreamError),
}

/// How much of a body is read ahead of forwarding, to see whether what
/// already came runs past its `content-length`. A body announced within it
/// is checked whole before its request goes anywhere; a longer one has its
/// last part held back instead (see [`H3Body`]). QUIC's stream window bounds
/// what a client can have sent by then anyway.
const READ_AHEAD: usize = 64 * 1024;

/// A request body arriving on an HTTP/3 stream.
///
/// When the request declared a `content-length`, the part that completes
/// it is held until the stream's end confirms it: excess data is only seen
/// when it arrives, and a server given every declared byte could by then
/// have taken the body as whole. Held back, the last part never leaves,
/// and the server sees a body cut short instead.
pub struct H3Body {
    recv: RecvStream,
    /// The declared length, if any, and what of it is still to come.
    declared: Option<u64>,
    remaining: u64,
    /// Parts read from the stream and not yet passed on: read ahead by
    /// [`H3Body::read_ready`], or the one that completes the declared
    /// length, waiting for the stream's end.
    ahead: VecDeque<Bytes>,
    ahead_bytes: usize,
    /// Trailers read ahead with the end of the data.
    trailers: Option<HeaderMap>,
    state: State,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Data,
    Trailers,
    Done,
}

impl H3Body {
    /// The body of a request with these `headers`.
    pub fn new(recv: RecvStream, headers: &HeaderMap) -> Self {
        let declared = headers
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        H3Body {
            recv,
            declared,
            remaining: declared.unwrap_or(u64::MAX),
            ahead: VecDeque::new(),
            ahead_bytes: 0,
            trailers: None,
            state: State::Data,
        }
    }

    /// Reads what is there already without waiting (up to [`READ_AHEAD`]
    /// bytes): a body that already ran past its `content-length` is an
    /// error here, before anything of its request is forwarded, and a body
    /// that has ended by now (a GET's, whose stream ends right after its
    /// head) is then known to be empty, so it is not sent on as a stream of
    /// unknown length. Returns whether the body's start (data or its end)
    /// is known.
    pub fn read_ready(&mut self, cx: &mut Context<'_>) -> Result<bool, H3BodyError> {
        // Once the declared length is complete, anything more already there
        // is looked at too: it can only be the end or the excess.
        while self.state == State::Data && (self.ahead_bytes < READ_AHEAD || self.must_hold()) {
            match self.poll_data(cx) {
                Poll::Ready(Ok(Some(data))) => self.keep(data),
                Poll::Ready(Ok(None)) => {}
                Poll::Ready(Err(e)) => return Err(e),
                Poll::Pending => break,
            }
        }
        if self.state == State::Trailers
            && let Poll::Ready(Err(e)) = self.poll_trailers(cx)
        {
            return Err(e);
        }
        Ok(!self.ahead.is_empty() || self.state != State::Data)
    }

    /// Whether the body is known to have begun, or to have none: one
    /// declared with a `content-length` above 0 has begun once its first
    /// bytes (or its end) have been read. A body of unknown length counts
    /// as begun: it may never come, and streams without one are not held
    /// back.
    pub fn started(&self) -> bool {
        !self.ahead.is_empty()
            || self.state != State::Data
            || !matches!(self.declared, Some(n) if n > 0)
    }

    /// The declared length, if any.
    pub fn declared(&self) -> Option<u64> {
        self.declared
    }

    fn keep(&mut self, data: Bytes) {
        self.ahead_bytes += data.len();
        self.ahead.push_back(data);
    }

    /// The last part read completes the declared length and the stream's
    /// end has not been seen yet.
    fn must_hold(&self) -> bool {
        self.declared.is_some() && self.remaining == 0 && self.state == State::Data
    }

    /// The next non-empty part of the data, counted against the declared
    /// length; `None` at the data's end.
    fn poll_data(&mut self, cx: &mut Context<'_>) -> Poll<Result<Option<Bytes>, H3BodyError>> {
        loop {
            match self.recv.poll_recv_data(cx) {
                Poll::Ready(Ok(Some(mut buf))) => {
                    let data = buf.copy_to_bytes(buf.remaining());
                    match self.remaining.checked_sub(data.len() as u64) {
                        Some(left) => self.remaining = left,
                        None => return Poll::Ready(Err(self.length_error(true))),
                    }
                    if !data.is_empty() {
                        return Poll::Ready(Ok(Some(data)));
                    }
                }
                Poll::Ready(Ok(None)) => {
                    if self.declared.is_some() && self.remaining != 0 {
                        return Poll::Ready(Err(self.length_error(false)));
                    }
                    self.state = State::Trailers;
                    return Poll::Ready(Ok(None));
                }
                Poll::Ready(Err(e)) => {
                    self.fail();
                    return Poll::Ready(Err(e.into()));
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }

    /// The trailers, kept for after the data.
    fn poll_trailers(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), H3BodyError>> {
        match self.recv.poll_recv_trailers(cx) {
            Poll::Ready(Ok(trailers)) => {
                self.trailers = trailers;
                self.state = State::Done;
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => {
                self.fail();
                Poll::Ready(Err(e.into()))
            }
            Poll::Pending => Poll::Pending,
        }
    }

    /// Nothing read ahead of a broken body is passed on.
    fn fail(&mut self) {
        self.state = State::Done;
        self.ahead.clear();
        self.ahead_bytes = 0;
        self.trailers = None;
    }

    fn length_error(&mut self, excess: bool) -> H3BodyError {
        self.fail();
        let declared = self.declared.unwrap_or(0);
        if excess {
            H3BodyError::Excess { declared }
        } else {
            H3BodyError::Short { declared }
        }
    }
}

impl Body for H3Body {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        loop {
            if this.ahead.len() > 1 || !this.ahead.is_empty() && !this.must_hold() {
                let data = this.ahead.pop_front().unwrap_or_default();
                this.ahead_bytes -= data.len();
                return Poll::Ready(Some(Ok(Frame::data(data))));
            }
            match this.state {
                State::Data => match ready!(this.poll_data(cx)) {
                    Ok(Some(data)) => this.keep(data),
                    Ok(None) => {}
                    Err(e) => return Poll::Ready(Some(Err(e.into()))),
                },
                State::Trailers => {
                    if let Err(e) = ready!(this.poll_trailers(cx)) {
                        return Poll::Ready(Some(Err(e.into())));
                    }
                }
                State::Done => {
                    return Poll::Ready(this.trailers.take().map(|t| Ok(Frame::trailers(t))));
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.ahead.is_empty() && self.state == State::Done && self.trailers.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        match self.declared {
            Some(_) => SizeHint::with_exact(self.remaining + self.ahead_bytes as u64),
            None if self.state == State::Done && self.trailers.is_none() => {
                SizeHint::with_exact(self.ahead_bytes as u64)
            }
            None => SizeHint::default(),
        }
    }
}
