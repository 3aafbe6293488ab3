//! A client's byte stream with the bytes already read off it put back in
//! front: the connection's start reads a connection's first
//! bytes to tell HTTP/1 from HTTP/2, and the server it then picks must
//! read them again as the start of the conversation.
//!
//! hyper-util has the same wrapper, but keeps it private; tokio's `chain`
//! only reads, and the servers need to write through it too.

use bytes::{Buf, Bytes};
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, ReadBuf};

/// `io` with `first` read from it again before anything new.
pub(crate) struct Rewind<I> {
    first: Bytes,
    io: I,
}

impl<I> Rewind<I> {
    /// `io`, of which `first` was read already (possibly nothing).
    pub(crate) fn new(first: Bytes, io: I) -> Self {
        Rewind { first, io }
    }

    /// The wrapped `io`.
    pub(crate) fn get_ref(&self) -> &I {
        &self.io
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for Rewind<I> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.first.is_empty() {
            return Pin::new(&mut this.io).poll_read(cx, buf);
        }
        let n = this.first.len().min(buf.remaining());
        buf.put_slice(&this.first[..n]);
        this.first.advance(n);
        Poll::Ready(Ok(()))
    }
}

write_through!(Rewind, io);

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn the_bytes_read_first_come_again_before_the_rest_and_writes_pass() {
        let (mut client, server) = tokio::io::duplex(64);
        client.write_all(b" / HTTP/1.1\r\n").await.unwrap();
        let mut io = Rewind::new(Bytes::from_static(b"GET"), server);
        // A reader smaller than what was read first gets it in pieces.
        let mut small = [0u8; 2];
        io.read_exact(&mut small).await.unwrap();
        assert_eq!(&small, b"GE");
        let mut rest = [0u8; 14];
        io.read_exact(&mut rest).await.unwrap();
        assert_eq!(&rest, b"T / HTTP/1.1\r\n");
        io.write_all(b"HTTP/1.1 200 OK\r\n").await.unwrap();
        let mut answer = [0u8; 17];
        client.read_exact(&mut answer).await.unwrap();
        assert_eq!(&answer, b"HTTP/1.1 200 OK\r\n");
    }
}
