//! The response body type: the upstream's streamed body, or a short body
//! gangway wrote itself. An enum instead of a box: no allocation per request.

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::Full;
use hyper::body::Incoming;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A response body.
pub enum ProxyBody {
    /// Streamed from the server as it arrives (trailers included).
    Upstream(Incoming),
    /// Written by gangway (errors, redirects).
    Local(Full<Bytes>),
}

impl ProxyBody {
    /// A body with fixed content.
    pub fn text(text: &'static str) -> Self {
        ProxyBody::Local(Full::new(Bytes::from_static(text.as_bytes())))
    }

    /// An empty body.
    pub fn empty() -> Self {
        ProxyBody::Local(Full::new(Bytes::new()))
    }
}

impl Body for ProxyBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        match self.get_mut() {
            ProxyBody::Upstream(b) => Pin::new(b).poll_frame(cx),
            ProxyBody::Local(b) => Pin::new(b).poll_frame(cx).map_err(|never| match never {}),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            ProxyBody::Upstream(b) => b.is_end_stream(),
            ProxyBody::Local(b) => b.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ProxyBody::Upstream(b) => b.size_hint(),
            ProxyBody::Local(b) => b.size_hint(),
        }
    }
}
