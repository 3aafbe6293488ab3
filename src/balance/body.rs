//! The body of a request on its way to a server: streamed from the client,
//! fixed bytes (mirror copies, replays, health checks), or streamed while a
//! bounded copy is taken for mirrors. An enum, not a box: no allocation per
//! request.

use bytes::{Bytes, BytesMut};
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::sync::oneshot;

/// A request body sent upstream.
pub enum RequestBody {
    /// The client's body, streamed as it arrives.
    Incoming(Incoming),
    /// Bytes gangway holds (empty for replays and health checks).
    Bytes(Option<Bytes>),
    /// The client's body, streamed, with a bounded copy for mirrors.
    Tee(Tee),
}

impl RequestBody {
    /// An empty body.
    pub fn empty() -> Self {
        RequestBody::Bytes(None)
    }

    /// A body of fixed bytes.
    pub fn bytes(b: Bytes) -> Self {
        RequestBody::Bytes((!b.is_empty()).then_some(b))
    }
}

impl From<Incoming> for RequestBody {
    fn from(b: Incoming) -> Self {
        RequestBody::Incoming(b)
    }
}

impl Body for RequestBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        match self.get_mut() {
            RequestBody::Incoming(b) => Pin::new(b).poll_frame(cx),
            RequestBody::Bytes(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            RequestBody::Tee(t) => t.poll(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            RequestBody::Incoming(b) => b.is_end_stream(),
            RequestBody::Bytes(b) => b.is_none(),
            RequestBody::Tee(t) => t.inner.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            RequestBody::Incoming(b) => b.size_hint(),
            RequestBody::Bytes(b) => SizeHint::with_exact(b.as_ref().map_or(0, |b| b.len() as u64)),
            RequestBody::Tee(t) => t.inner.size_hint(),
        }
    }
}

/// Streams the client's body through and keeps a copy of up to `limit`
/// bytes. When the body ends within the limit the copy goes to `done`; when
/// it grows past the limit, fails or is dropped early, `done` is dropped and
/// the receiver learns that there is no copy.
pub struct Tee {
    inner: Incoming,
    copy: BytesMut,
    limit: usize,
    done: Option<oneshot::Sender<Bytes>>,
}

impl Tee {
    /// Wraps `inner`; the copy is delivered on the returned receiver.
    pub fn new(inner: Incoming, limit: usize) -> (Self, oneshot::Receiver<Bytes>) {
        let (tx, rx) = oneshot::channel();
        let tee = Self {
            inner,
            copy: BytesMut::new(),
            limit,
            done: Some(tx),
        };
        (tee, rx)
    }

    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let (Some(data), Some(_)) = (frame.data_ref(), &self.done) {
                    if self.copy.len() + data.len() > self.limit {
                        // Too large to mirror: give up the copy, keep streaming.
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
