//! Bodies read whole before they go on (buffering, retry): kept in memory
//! up to a bound, the rest in an unlinked temporary file, so memory stays
//! bounded whatever the size. A read body can be sent any number of times.

use crate::body::BoxError;
use bytes::{Bytes, BytesMut};
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use tokio::task::JoinHandle;

/// Size of the pieces read back from the file.
const CHUNK: u64 = 64 * 1024;

/// A body read whole. Cloning shares the buffers.
#[derive(Clone, Debug, Default)]
pub struct Spooled {
    head: Bytes,
    file: Option<Arc<File>>,
    file_len: u64,
    trailers: Option<HeaderMap>,
}

/// The outcome of reading a body against a limit.
pub enum Read<B> {
    /// All of it.
    Whole(Spooled),
    /// More than the limit: what was read so far, and the rest unread.
    TooLarge(Spooled, B),
}

impl Spooled {
    /// A body already in memory.
    pub fn from_bytes(bytes: Bytes) -> Self {
        Self {
            head: bytes,
            ..Self::default()
        }
    }

    /// Bytes in all.
    pub fn len(&self) -> u64 {
        self.head.len() as u64 + self.file_len
    }

    /// No bytes at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether part of it is on disk.
    pub fn on_disk(&self) -> bool {
        self.file.is_some()
    }

    /// Whether the body ended with trailers.
    pub fn has_trailers(&self) -> bool {
        self.trailers.is_some()
    }

    /// The whole body in memory, when it is (no file part).
    pub fn in_memory(&self) -> Option<Bytes> {
        self.file.is_none().then(|| self.head.clone())
    }

    /// A body that sends it (again).
    pub fn body(&self) -> SpooledBody {
        SpooledBody {
            spooled: self.clone(),
            head_sent: false,
            pos: 0,
            reading: None,
            trailers_sent: false,
        }
    }
}

/// Reads `body` whole, keeping up to `mem` bytes in memory and the rest in a
/// temporary file; stops past `max` bytes (None: no limit).
pub async fn read<B>(mut body: B, max: Option<u64>, mem: u64) -> Result<Read<B>, BoxError>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    let mut head = BytesMut::new();
    let mut spooled = Spooled::default();
    let mut total: u64 = 0;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(Into::into)?;
        let frame = match frame.into_data() {
            Ok(data) => {
                total += data.len() as u64;
                if spooled.file.is_none() && (head.len() + data.len()) as u64 <= mem {
                    head.extend_from_slice(&data);
                } else {
                    let file = match &spooled.file {
                        Some(f) => f.clone(),
                        None => {
                            let f =
                                Arc::new(tokio::task::spawn_blocking(tempfile::tempfile).await??);
                            spooled.file = Some(f.clone());
                            f
                        }
                    };
                    let at = spooled.file_len;
                    spooled.file_len += data.len() as u64;
                    tokio::task::spawn_blocking(move || file.write_all_at(&data, at)).await??;
                }
                if max.is_some_and(|m| total > m) {
                    spooled.head = head.freeze();
                    return Ok(Read::TooLarge(spooled, body));
                }
                continue;
            }
            Err(frame) => frame,
        };
        if let Ok(trailers) = frame.into_trailers() {
            spooled.trailers = Some(trailers);
        }
    }
    spooled.head = head.freeze();
    Ok(Read::Whole(spooled))
}

/// Sends a [`Spooled`] body: memory part, file part, trailers.
pub struct SpooledBody {
    spooled: Spooled,
    head_sent: bool,
    pos: u64,
    reading: Option<JoinHandle<std::io::Result<Bytes>>>,
    trailers_sent: bool,
}

impl Body for SpooledBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        if !this.head_sent {
            this.head_sent = true;
            if !this.spooled.head.is_empty() {
                return Poll::Ready(Some(Ok(Frame::data(this.spooled.head.clone()))));
            }
        }
        if let Some(file) = &this.spooled.file
            && this.pos < this.spooled.file_len
        {
            let reading = this.reading.get_or_insert_with(|| {
                let file = file.clone();
                let at = this.pos;
                let n = CHUNK.min(this.spooled.file_len - at) as usize;
                tokio::task::spawn_blocking(move || {
                    let mut buf = vec![0u8; n];
                    file.read_exact_at(&mut buf, at)?;
                    Ok(Bytes::from(buf))
                })
            });
            let got = ready!(Pin::new(reading).poll(cx));
            this.reading = None;
            return Poll::Ready(Some(match got {
                Ok(Ok(bytes)) => {
                    this.pos += bytes.len() as u64;
                    Ok(Frame::data(bytes))
                }
                Ok(Err(e)) => Err(e.into()),
                Err(e) => Err(e.into()),
            }));
        }
        if !this.trailers_sent {
            this.trailers_sent = true;
            if let Some(t) = this.spooled.trailers.clone() {
                return Poll::Ready(Some(Ok(Frame::trailers(t))));
            }
        }
        Poll::Ready(None)
    }

    fn is_end_stream(&self) -> bool {
        self.head_sent
            && self.pos >= self.spooled.file_len
            && (self.trailers_sent || self.spooled.trailers.is_none())
    }

    fn size_hint(&self) -> SizeHint {
        let mut left = self.spooled.file_len - self.pos;
        if !self.head_sent {
            left += self.spooled.head.len() as u64;
        }
        SizeHint::with_exact(left)
    }
}

use std::future::Future as _;

/// What was read of a body, then the rest of it unread: how a body too large
/// to hold goes on once (retry sends it without replays).
pub struct Rest<B> {
    first: SpooledBody,
    rest: B,
}

impl<B> Rest<B> {
    /// `read` followed by `rest`.
    pub fn new(read: &Spooled, rest: B) -> Self {
        Self {
            first: read.body(),
            rest,
        }
    }
}

impl<B> Body for Rest<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if !self.first.is_end_stream()
            && let Some(frame) = ready!(Pin::new(&mut self.first).poll_frame(cx))
        {
            return Poll::Ready(Some(frame));
        }
        Pin::new(&mut self.rest).poll_frame(cx).map_err(Into::into)
    }

    fn is_end_stream(&self) -> bool {
        self.first.is_end_stream() && self.rest.is_end_stream()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::{Full, StreamBody};

    fn chunks(
        n: usize,
        size: usize,
    ) -> impl Body<Data = Bytes, Error = std::convert::Infallible> + Unpin {
        let frames: Vec<Result<Frame<Bytes>, std::convert::Infallible>> = (0..n)
            .map(|i| Ok(Frame::data(Bytes::from(vec![b'a' + (i % 26) as u8; size]))))
            .collect();
        StreamBody::new(futures_util::stream::iter(frames))
    }

    #[tokio::test]
    async fn small_bodies_stay_in_memory_and_large_ones_spill() {
        let Read::Whole(small) = read(Full::new(Bytes::from_static(b"hello")), None, 1024)
            .await
            .expect("reads")
        else {
            panic!("whole")
        };
        assert!(!small.on_disk());
        assert_eq!(small.in_memory().as_deref(), Some(&b"hello"[..]));

        let Read::Whole(big) = read(chunks(10, 1000), None, 2500).await.expect("reads") else {
            panic!("whole")
        };
        assert!(big.on_disk());
        assert_eq!(big.len(), 10_000);
        // Sent twice, the same bytes both times.
        for _ in 0..2 {
            let got = big.body().collect().await.expect("collect").to_bytes();
            assert_eq!(got.len(), 10_000);
            assert_eq!(&got[..1000], &[b'a'; 1000][..]);
            assert_eq!(&got[9000..], &[b'j'; 1000][..]);
        }
    }

    #[tokio::test]
    async fn a_limit_stops_reading_and_the_rest_can_still_go_on() {
        let Read::TooLarge(read_part, rest) = read(chunks(10, 1000), Some(3500), 2000)
            .await
            .expect("reads")
        else {
            panic!("too large")
        };
        assert_eq!(read_part.len(), 4000);
        let all = Rest::new(&read_part, rest)
            .collect()
            .await
            .expect("collect")
            .to_bytes();
        assert_eq!(all.len(), 10_000);
        assert_eq!(&all[3000..4000], &[b'd'; 1000][..]);
        assert_eq!(&all[4000..5000], &[b'e'; 1000][..]);
    }
}
