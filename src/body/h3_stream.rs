//! A client's request body read from an HTTP/3 stream: its DATA frames,
//! then its trailers, held to the `content-length` the request declared
//! (h3 itself does not check it; hyper and h2 do for the other versions).

use super::BoxError;
use bytes::{Buf, Bytes};
use http::HeaderMap;
use http::header::CONTENT_LENGTH;
use http_body::{Body, Frame, SizeHint};
use std::pin::Pin;
use std::task::{Context, Poll};

/// The receiving half of a request's stream.
pub type RecvStream = h3::server::RequestStream<h3_quinn::RecvStream, Bytes>;

/// Why an HTTP/3 request body was refused.
#[derive(Debug, thiserror::Error)]
pub enum H3BodyError {
    /// More or fewer bytes came than `content-length` said.
    #[error("the body's length differs from its content-length ({declared} bytes)")]
    Length {
        /// The declared length.
        declared: u64,
    },
    /// The stream failed (reset by the client, connection lost).
    #[error("the HTTP/3 stream failed: {0}")]
    Stream(#[from] h3::error::StreamError),
}

/// A request body arriving on an HTTP/3 stream.
pub struct H3Body {
    recv: RecvStream,
    /// The declared length, if any, and what of it is still to come.
    declared: Option<u64>,
    remaining: u64,
    /// A data frame read ahead by [`H3Body::read_ready`].
    ahead: Option<Bytes>,
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
            ahead: None,
            state: State::Data,
        }
    }

    /// Reads what is there already without waiting: a body that has ended
    /// by now (a GET's, whose stream ends right after its head) is then
    /// known to be empty, so it is not sent on as a stream of unknown
    /// length. Returns whether the body's start (data or its end) is known.
    pub fn read_ready(&mut self, cx: &mut Context<'_>) -> Result<bool, H3BodyError> {
        if self.ahead.is_some() || self.state == State::Done {
            return Ok(true);
        }
        match self.poll_inner(cx) {
            Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                Ok(data) => {
                    self.ahead = Some(data);
                    Ok(true)
                }
                // Trailers right after the head: nothing else can follow.
                Err(_) => Ok(true),
            },
            Poll::Ready(Some(Err(e))) => Err(e),
            Poll::Ready(None) => Ok(true),
            Poll::Pending => Ok(false),
        }
    }

    fn poll_inner(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, H3BodyError>>> {
        loop {
            match self.state {
                State::Data => match self.recv.poll_recv_data(cx) {
                    Poll::Ready(Ok(Some(mut buf))) => {
                        let data = buf.copy_to_bytes(buf.remaining());
                        match self.remaining.checked_sub(data.len() as u64) {
                            Some(left) => self.remaining = left,
                            None => return Poll::Ready(Some(Err(self.length_error()))),
                        }
                        if data.is_empty() {
                            continue;
                        }
                        return Poll::Ready(Some(Ok(Frame::data(data))));
                    }
                    Poll::Ready(Ok(None)) => {
                        if self.declared.is_some() && self.remaining != 0 {
                            return Poll::Ready(Some(Err(self.length_error())));
                        }
                        self.state = State::Trailers;
                    }
                    Poll::Ready(Err(e)) => {
                        self.state = State::Done;
                        return Poll::Ready(Some(Err(e.into())));
                    }
                    Poll::Pending => return Poll::Pending,
                },
                State::Trailers => {
                    let polled = self.recv.poll_recv_trailers(cx);
                    return match polled {
                        Poll::Ready(Ok(Some(trailers))) => {
                            self.state = State::Done;
                            Poll::Ready(Some(Ok(Frame::trailers(trailers))))
                        }
                        Poll::Ready(Ok(None)) => {
                            self.state = State::Done;
                            Poll::Ready(None)
                        }
                        Poll::Ready(Err(e)) => {
                            self.state = State::Done;
                            Poll::Ready(Some(Err(e.into())))
                        }
                        Poll::Pending => Poll::Pending,
                    };
                }
                State::Done => return Poll::Ready(None),
            }
        }
    }

    fn length_error(&mut self) -> H3BodyError {
        self.state = State::Done;
        H3BodyError::Length {
            declared: self.declared.unwrap_or(0),
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
        if let Some(data) = this.ahead.take() {
            return Poll::Ready(Some(Ok(Frame::data(data))));
        }
        this.poll_inner(cx).map_err(Into::into)
    }

    fn is_end_stream(&self) -> bool {
        self.ahead.is_none() && self.state == State::Done
    }

    fn size_hint(&self) -> SizeHint {
        match self.declared {
            Some(len) => SizeHint::with_exact(len),
            None if self.is_end_stream() => SizeHint::with_exact(0),
            None => SizeHint::default(),
        }
    }
}
