//! Client-side time limits of a connection: how long a request head may
//! take (`headerReadTimeout`), how long a keep-alive connection may wait
//! for its next request (`idleTimeout`), and how long a tunnel (WebSocket)
//! may stay silent (`webSocketIdleTimeout`).
//!
//! hyper's own `header_read_timeout` is not used: it starts when an HTTP/1
//! connection goes idle, so on keep-alive connections it would cut the idle
//! time down to the head time. Here the head's clock starts at the head's
//! first byte, and the idle clock when the last answer has been sent. Both
//! share one timer per connection, driven by the connection's own task;
//! requests only bump a few atomics.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// What a connection is doing, as far as its time limits care. Shared by
/// the connection's task, its I/O and its requests, all of which run in
/// the connection's task (HTTP/2 streams too, in `h2_server`).
pub(crate) struct Activity {
    born: Instant,
    in_flight: AtomicU32,
    /// When the last request in flight ended (ms after `born`).
    idle_since: AtomicU64,
    /// When the head now being read started, as ms after `born` plus one;
    /// zero when no head is being read.
    head_since: AtomicU64,
    /// When the HTTP/1 answer in progress must be complete
    /// (`writeTimeout`), as ms after `born` plus one; zero for none.
    write_due: AtomicU64,
    /// The connection speaks HTTP/2: bytes without a stream open are
    /// control frames, not the start of a request head.
    h2: AtomicBool,
}

impl Activity {
    /// A connection that starts now, reading its first request head.
    pub(crate) fn new() -> Self {
        Activity {
            born: Instant::now(),
            in_flight: AtomicU32::new(0),
            idle_since: AtomicU64::new(0),
            head_since: AtomicU64::new(1),
            write_due: AtomicU64::new(0),
            h2: AtomicBool::new(false),
        }
    }

    fn at(&self, ms: u64) -> Instant {
        self.born + Duration::from_millis(ms)
    }

    fn now_ms(&self) -> u64 {
        self.born.elapsed().as_millis() as u64
    }

    /// Bytes arrived from the client: with nothing in flight on HTTP/1,
    /// they start a request head.
    fn bytes_arrived(&self) {
        if self.head_since.load(Relaxed) == 0
            && self.in_flight.load(Relaxed) == 0
            && !self.h2.load(Relaxed)
        {
            self.head_since.store(self.now_ms() + 1, Relaxed);
        }
    }

    /// A request's head has been read; returns when it started (for
    /// `readTimeout`) and a guard to hold until its answer has been sent.
    pub(crate) fn request_started(self: &Arc<Self>, h2: bool) -> (Instant, InFlight) {
        if h2 {
            self.h2.store(true, Relaxed);
        }
        self.in_flight.fetch_add(1, Relaxed);
        let head = self.head_since.swap(0, Relaxed);
        let started = match head {
            0 => Instant::now(),
            ms => self.at(ms - 1),
        };
        (started, InFlight(self.clone()))
    }

    /// The HTTP/1 answer now in progress must be complete `limit` after
    /// `from`, or the connection is closed. Kept by the connection's clock,
    /// which also sees a client that stops reading (its answer's body is
    /// then no longer polled).
    pub(crate) fn write_due(&self, from: Instant, limit: Duration) {
        let ms = (from + limit)
            .saturating_duration_since(self.born)
            .as_millis() as u64;
        self.write_due.store(ms + 1, Relaxed);
    }

    /// When the connection's next limit falls, and which.
    fn next_limit(&self, limits: &ConnLimits) -> Option<(Instant, Expired)> {
        if self.in_flight.load(Relaxed) > 0 {
            // Requests have their own limits (readTimeout in the body);
            // only an HTTP/1 answer's writeTimeout is kept here.
            return match self.write_due.load(Relaxed) {
                0 => None,
                ms => Some((self.at(ms - 1), Expired::Write)),
            };
        }
        let head = self.head_since.load(Relaxed);
        if head != 0
            && let Some(limit) = limits.header_read
        {
            return Some((self.at(head - 1) + limit, Expired::Head));
        }
        let idle = limits.idle?;
        Some((self.at(self.idle_since.load(Relaxed)) + idle, Expired::Idle))
    }
}

/// Held by a request until its answer has been sent (or dropped).
pub(crate) struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        let activity = &self.0;
        if activity.in_flight.fetch_sub(1, Relaxed) == 1 {
            activity.write_due.store(0, Relaxed);
            activity.idle_since.store(activity.now_ms(), Relaxed);
            // No wake-up needed: an answer (HTTP/1, or an HTTP/2 stream's)
            // ends inside the connection's own poll, and its clock looks
            // again right after.
        }
    }
}

/// The connection limits of an entry point.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ConnLimits {
    /// `headerReadTimeout`.
    pub(crate) header_read: Option<Duration>,
    /// `idleTimeout`.
    pub(crate) idle: Option<Duration>,
    /// `writeTimeout`.
    pub(crate) write: Option<Duration>,
}

impl ConnLimits {
    /// Whether any is on (otherwise connections are not watched at all).
    pub(crate) fn any(&self) -> bool {
        self.header_read.is_some() || self.idle.is_some() || self.write.is_some()
    }
}

/// Which limit a connection ran past.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Expired {
    /// A request head took too long: the connection is dropped.
    Head,
    /// Nothing happened for too long: the connection is shut down
    /// gracefully (HTTP/2: GOAWAY).
    Idle,
    /// An HTTP/1 answer was not complete in time: the connection is
    /// dropped.
    Write,
}

/// Polls a connection's limits: `Ready` once one is passed. Called by the
/// connection's task after each poll of the connection itself, so that the
/// one timer always sits at the next limit.
pub(crate) struct Clock<'a> {
    activity: &'a Activity,
    limits: ConnLimits,
    timer: Pin<&'a mut Sleep>,
    armed: Option<Instant>,
}

impl<'a> Clock<'a> {
    /// A clock for `activity`, using `timer` (pinned by the caller).
    pub(crate) fn new(
        activity: &'a Activity,
        limits: ConnLimits,
        timer: Pin<&'a mut Sleep>,
    ) -> Self {
        Clock {
            activity,
            limits,
            timer,
            armed: None,
        }
    }

    /// `Ready` with the limit passed, if one is.
    pub(crate) fn poll_expired(&mut self, cx: &mut Context<'_>) -> Poll<Expired> {
        let Some((deadline, which)) = self.activity.next_limit(&self.limits) else {
            return Poll::Pending;
        };
        if self.armed != Some(deadline) {
            self.timer.as_mut().reset(deadline);
            self.armed = Some(deadline);
        }
        match self.timer.as_mut().poll(cx) {
            Poll::Ready(()) => {
                self.armed = None;
                Poll::Ready(which)
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

/// A client connection's I/O, telling its [`Activity`] when bytes arrive.
pub(crate) struct Watched<I> {
    inner: I,
    activity: Option<Arc<Activity>>,
}

impl<I> Watched<I> {
    /// `inner`, reporting to `activity` when there is one.
    pub(crate) fn new(inner: I, activity: Option<Arc<Activity>>) -> Self {
        Watched { inner, activity }
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for Watched<I> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Some(a) = &this.activity
            && buf.filled().len() > before
        {
            a.bytes_arrived();
        }
        polled
    }
}

write_through!(Watched, inner);

/// Copies both ways between an upgraded client connection and its server
/// until either side closes, or, with `idle`, until nothing has passed in
/// either direction for that long.
pub(crate) async fn tunnel<A, B>(a: &mut A, b: &mut B, idle: Option<Duration>) -> io::Result<()>
where
    A: AsyncRead + AsyncWrite + Unpin,
    B: AsyncRead + AsyncWrite + Unpin,
{
    let Some(idle) = idle else {
        return tokio::io::copy_bidirectional(a, b).await.map(drop);
    };
    let start = Instant::now();
    let last = AtomicU64::new(0);
    let mut a = Noting {
        io: a,
        start,
        last: &last,
    };
    let mut b = Noting {
        io: b,
        start,
        last: &last,
    };
    let copy = tokio::io::copy_bidirectional(&mut a, &mut b);
    tokio::pin!(copy);
    let mut deadline = start + idle;
    loop {
        tokio::select! {
            done = &mut copy => return done.map(drop),
            () = tokio::time::sleep_until(deadline) => {
                let due = start + Duration::from_millis(last.load(Relaxed)) + idle;
                if due <= Instant::now() {
                    return Err(io::ErrorKind::TimedOut.into());
                }
                deadline = due;
            }
        }
    }
}

/// One side of a tunnel, noting when bytes last passed.
struct Noting<'a, T> {
    io: &'a mut T,
    start: Instant,
    last: &'a AtomicU64,
}

impl<T> Noting<'_, T> {
    fn note(&self) {
        self.last
            .store(self.start.elapsed().as_millis() as u64, Relaxed);
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Noting<'_, T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut *this.io).poll_read(cx, buf);
        if buf.filled().len() > before {
            this.note();
        }
        polled
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Noting<'_, T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut *this.io).poll_write(cx, buf);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            this.note();
        }
        polled
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.get_mut().io).poll_shutdown(cx)
    }
}

/// Time a client gets for its first byte, its TLS handshake, and the
/// first bytes that tell its HTTP version, when the entry point has no
/// header read timeout (`limits.headerReadTimeout`).
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a new connection has to say what it is (its first bytes, its
/// ClientHello, its TLS handshake) before HTTP or TCP routing decides: the
/// header read timeout, and at most `respondingTimeouts.readTimeout`, which
/// Traefik applies to that wait on every connection, TCP ones included.
pub(super) fn first_bytes_limit(entry_point: &super::EntryPointInfo) -> Duration {
    limit_of(entry_point.header_read_timeout, entry_point.read_timeout)
}

/// [`first_bytes_limit`] of these timeouts (`None`: not set).
fn limit_of(header_read: Option<Duration>, read: Option<Duration>) -> Duration {
    let limit = header_read.unwrap_or(HANDSHAKE_TIMEOUT);
    read.map_or(limit, |read| limit.min(read))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_for_first_bytes_is_bounded_by_the_read_timeout_too() {
        let s = Duration::from_secs;
        assert_eq!(limit_of(Some(s(10)), Some(s(60))), s(10));
        assert_eq!(limit_of(Some(s(10)), Some(s(2))), s(2));
        assert_eq!(limit_of(None, Some(s(5))), s(5));
        assert_eq!(limit_of(None, None), HANDSHAKE_TIMEOUT);
    }

    const LIMITS: ConnLimits = ConnLimits {
        header_read: Some(Duration::from_secs(10)),
        idle: Some(Duration::from_secs(180)),
        write: None,
    };

    #[tokio::test]
    async fn a_connection_moves_between_head_busy_and_idle_limits() {
        let a = Arc::new(Activity::new());
        // New: its first head is due headerReadTimeout after it opened.
        assert_eq!(
            a.next_limit(&LIMITS),
            Some((a.born + Duration::from_secs(10), Expired::Head))
        );
        // A request in flight: nothing at the connection's level...
        let (started, guard) = a.request_started(false);
        assert_eq!(started, a.born);
        assert_eq!(a.next_limit(&LIMITS), None);
        // ...unless its answer has a writeTimeout.
        a.write_due(a.born, Duration::from_secs(5));
        assert_eq!(
            a.next_limit(&LIMITS),
            Some((a.born + Duration::from_secs(5), Expired::Write))
        );
        // Answered: idle, for the whole idleTimeout (not the head's limit).
        let before = Instant::now();
        drop(guard);
        let after = Instant::now();
        let (due, which) = a.next_limit(&LIMITS).expect("an idle limit");
        assert_eq!(which, Expired::Idle);
        let idle = Duration::from_secs(180);
        assert!(
            due + Duration::from_millis(1) >= before + idle && due <= after + idle,
            "{due:?}"
        );
        // The next head's first byte starts the head's clock again.
        a.bytes_arrived();
        assert_eq!(a.next_limit(&LIMITS).map(|(_, w)| w), Some(Expired::Head));
        // Bytes while a request is in flight start nothing.
        let (_, guard) = a.request_started(false);
        a.bytes_arrived();
        drop(guard);
        assert_eq!(a.next_limit(&LIMITS).map(|(_, w)| w), Some(Expired::Idle));
    }

    #[tokio::test]
    async fn on_http2_bytes_between_streams_are_not_a_head() {
        let a = Arc::new(Activity::new());
        drop(a.request_started(true));
        // PINGs and WINDOW_UPDATEs between streams.
        a.bytes_arrived();
        assert_eq!(a.next_limit(&LIMITS).map(|(_, w)| w), Some(Expired::Idle));
        // Without limits, nothing is ever due.
        assert_eq!(a.next_limit(&ConnLimits::default()), None);
    }
}
