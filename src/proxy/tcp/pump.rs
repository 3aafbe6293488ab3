//! Copies a TCP connection's bytes both ways, aware of half-closes: when
//! one side closes its writing half, that is passed on to the other, and
//! the other direction may go on, for at most the termination delay
//! (Traefik's `terminationDelay`), before the connection is closed.

use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Bytes read at once in each direction: large enough that a bulk
/// transfer costs few system calls, small enough for many idle
/// connections.
const BUFFER: usize = 16 * 1024;

/// How a copy ended, with the bytes it moved.
#[derive(Debug)]
pub(crate) struct Copied {
    /// Bytes from the client to the server.
    pub up: u64,
    /// Bytes from the server to the client.
    pub down: u64,
    /// Why it stopped.
    pub end: End,
}

/// Why a copy stopped.
#[derive(Debug)]
pub(crate) enum End {
    /// Both sides closed their writing halves, and each close was passed on.
    Closed,
    /// One side closed its writing half and the other direction was still
    /// open when the termination delay ran out.
    Delay,
    /// Reading or writing failed (a reset, say).
    Failed(io::Error),
}

/// One direction: what was read and not yet written, and whether the
/// reader is done.
struct Pipe {
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    total: u64,
    /// Bytes were written since the last flush.
    unflushed: bool,
    state: State,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    /// Copying.
    Open,
    /// The reader ended: flush, then close the writer's writing half.
    Closing,
    /// The writer's writing half is closed.
    Done,
}

impl Pipe {
    fn new() -> Self {
        Pipe {
            buf: vec![0; BUFFER].into_boxed_slice(),
            start: 0,
            end: 0,
            total: 0,
            unflushed: false,
            state: State::Open,
        }
    }

    /// Moves bytes from `reader` to `writer` until either has to wait, or
    /// the reader has ended and its end was passed on (`Ready(Ok)`).
    fn poll_copy<R, W>(
        &mut self,
        cx: &mut Context<'_>,
        mut reader: Pin<&mut R>,
        mut writer: Pin<&mut W>,
    ) -> Poll<io::Result<()>>
    where
        R: AsyncRead + ?Sized,
        W: AsyncWrite + ?Sized,
    {
        loop {
            match self.state {
                State::Done => return Poll::Ready(Ok(())),
                State::Closing => {
                    ready!(writer.as_mut().poll_flush(cx))?;
                    ready!(writer.as_mut().poll_shutdown(cx))?;
                    self.state = State::Done;
                    return Poll::Ready(Ok(()));
                }
                State::Open => {}
            }
            if self.start == self.end {
                let mut read = ReadBuf::new(&mut self.buf);
                match reader.as_mut().poll_read(cx, &mut read) {
                    Poll::Ready(result) => result?,
                    Poll::Pending => {
                        // Nothing more to write for now: what a TLS stream
                        // holds back must go out before waiting.
                        if self.unflushed {
                            ready!(writer.as_mut().poll_flush(cx))?;
                            self.unflushed = false;
                        }
                        return Poll::Pending;
                    }
                }
                let n = read.filled().len();
                if n == 0 {
                    self.state = State::Closing;
                    continue;
                }
                self.start = 0;
                self.end = n;
            }
            while self.start < self.end {
                let n = ready!(
                    writer
                        .as_mut()
                        .poll_write(cx, &self.buf[self.start..self.end])
                )?;
                if n == 0 {
                    return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
                }
                self.start += n;
                self.total += n as u64;
                self.unflushed = true;
            }
        }
    }
}

/// Copies `client` to `server` and back until both have closed their
/// writing halves, or one has and `termination_delay` (`None`: no limit)
/// has passed since, or either fails.
pub(crate) async fn copy_both_ways<C, S>(
    client: &mut C,
    server: &mut S,
    termination_delay: Option<Duration>,
) -> Copied
where
    C: AsyncRead + AsyncWrite + Unpin + ?Sized,
    S: AsyncRead + AsyncWrite + Unpin + ?Sized,
{
    let mut up = Pipe::new();
    let mut down = Pipe::new();
    let mut delay: Option<Pin<Box<tokio::time::Sleep>>> = None;
    let end = poll_fn(|cx| {
        for (pipe, from_client) in [(&mut up, true), (&mut down, false)] {
            if pipe.state == State::Done {
                continue;
            }
            let polled = if from_client {
                pipe.poll_copy(cx, Pin::new(&mut *client), Pin::new(&mut *server))
            } else {
                pipe.poll_copy(cx, Pin::new(&mut *server), Pin::new(&mut *client))
            };
            if let Poll::Ready(Err(e)) = polled {
                return Poll::Ready(End::Failed(e));
            }
        }
        match (up.state == State::Done, down.state == State::Done) {
            (true, true) => Poll::Ready(End::Closed),
            (false, false) => Poll::Pending,
            // One side is done writing: the other direction has until the
            // delay runs out, counted from the first time this is seen.
            _ => match termination_delay {
                None => Poll::Pending,
                Some(limit) => {
                    let sleep = delay.get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
                    sleep.as_mut().poll(cx).map(|()| End::Delay)
                }
            },
        }
    })
    .await;
    Copied {
        up: up.total,
        down: down.total,
        end,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt, duplex};

    /// A copy between two in-memory pipes; returns the far ends (what the
    /// client and the server hold) and the copy's task.
    fn start(
        delay: Option<Duration>,
    ) -> (
        tokio::io::DuplexStream,
        tokio::io::DuplexStream,
        tokio::task::JoinHandle<Copied>,
    ) {
        let (client, mut near_client) = duplex(64 * 1024);
        let (server, mut near_server) = duplex(64 * 1024);
        let task =
            tokio::spawn(
                async move { copy_both_ways(&mut near_client, &mut near_server, delay).await },
            );
        (client, server, task)
    }

    async fn finish(task: tokio::task::JoinHandle<Copied>) -> Copied {
        // Only a guard against a hang; the copy ends on its own.
        tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .expect("the copy ends")
            .expect("no panic")
    }

    #[tokio::test]
    async fn bytes_go_both_ways_and_are_counted() {
        let (mut client, mut server, task) = start(None);
        client.write_all(b"hello").await.unwrap();
        let mut got = [0u8; 5];
        server.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"hello");
        server.write_all(b"world!").await.unwrap();
        let mut got = [0u8; 6];
        client.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"world!");
        client.shutdown().await.unwrap();
        server.shutdown().await.unwrap();
        let copied = finish(task).await;
        assert_eq!((copied.up, copied.down), (5, 6));
        assert!(matches!(copied.end, End::Closed), "{copied:?}");
    }

    #[tokio::test]
    async fn a_half_close_is_passed_on_and_the_other_way_goes_on() {
        let (mut client, mut server, task) = start(None);
        client.write_all(b"request").await.unwrap();
        client.shutdown().await.unwrap();
        let mut request = Vec::new();
        server.read_to_end(&mut request).await.unwrap();
        assert_eq!(
            request, b"request",
            "the end of the request reached the server"
        );
        // With no delay the answer may come any time after.
        tokio::task::yield_now().await;
        server.write_all(b"answer").await.unwrap();
        server.shutdown().await.unwrap();
        let mut answer = Vec::new();
        client.read_to_end(&mut answer).await.unwrap();
        assert_eq!(answer, b"answer");
        let copied = finish(task).await;
        assert_eq!((copied.up, copied.down), (7, 6));
        assert!(matches!(copied.end, End::Closed), "{copied:?}");
    }

    #[tokio::test]
    async fn after_a_half_close_the_other_way_ends_with_the_delay() {
        let (mut client, mut server, task) = start(Some(Duration::from_millis(50)));
        server.write_all(b"bye").await.unwrap();
        server.shutdown().await.unwrap();
        let mut got = Vec::new();
        client.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, b"bye");
        // The client never closes its side: the delay ends the copy.
        let copied = finish(task).await;
        assert!(matches!(copied.end, End::Delay), "{copied:?}");
        assert_eq!(copied.down, 3);
        // Both ends see the connection closed.
        let mut rest = Vec::new();
        server.read_to_end(&mut rest).await.unwrap();
        assert!(rest.is_empty());
        drop(client);
    }

    #[tokio::test]
    async fn a_failing_side_ends_the_copy() {
        let (mut client, server, task) = start(None);
        drop(server);
        client.write_all(b"lost").await.unwrap();
        let copied = finish(task).await;
        assert!(matches!(copied.end, End::Failed(_)), "{copied:?}");
    }
}
