//! The HTTP/1.1 connection a server's answer is read over. The client
//! room's pool lends a connection to the answer's body, which moves it on
//! while it is read and hands it back once it has ended ([`Checkin`]). It
//! lives here, beside [`super::UpstreamBody`], so that the body needs
//! nothing of the pool but the small [`Shelf`] trait it hands back to.

use super::RequestBody;
use http::{Request, Response};
use hyper::body::Incoming;
use hyper::client::conn::{TrySendError, http1};
use hyper_util::rt::TokioIo;
use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

/// The handle that sends requests on a connection.
pub type Sender = http1::SendRequest<RequestBody>;
/// The connection itself, moved on by whoever uses it.
pub type Conn = http1::Connection<TokioIo<tokio::net::TcpStream>, RequestBody>;

/// One HTTP/1.1 connection to a server: the handle that sends requests on it
/// and the connection itself, which has no task of its own. Whoever uses it
/// moves it on: the request's task while the request goes out and its answer
/// comes back (through [`Checkin`] while the body is read), nobody while it
/// sits idle. A request and its answer then cross no task boundary.
pub struct Link {
    sender: Sender,
    /// `None` once the connection has ended.
    conn: Option<Pin<Box<Conn>>>,
}

impl Link {
    /// Moves the connection on: writes what is queued, reads what arrived,
    /// notices a close. False once it has ended.
    pub fn poll_conn(&mut self, cx: &mut Context<'_>) -> bool {
        let Some(conn) = self.conn.as_mut() else {
            return false;
        };
        match conn.as_mut().poll(cx) {
            Poll::Pending => true,
            Poll::Ready(ended) => {
                if let Err(e) = ended {
                    tracing::debug!(error = %e, "server connection ended");
                }
                self.conn = None;
                false
            }
        }
    }

    /// Whether the connection can carry a request now: still open and done
    /// with the last exchange. Not polled (a connection that finished its
    /// exchange is ready when the exchange ends): a close that arrived while
    /// it was idle shows when the next exchange polls it, and the request
    /// then comes back unsent.
    pub fn reusable(&self) -> bool {
        self.conn.is_some() && self.sender.is_ready()
    }

    /// Reads a close that arrived while the connection sat idle. Polled
    /// with no waker: nothing waits on an idle connection, its next user
    /// polls it again.
    pub fn notice_close(&mut self) -> bool {
        self.poll_conn(&mut Context::from_waker(Waker::noop())) && self.reusable()
    }

    /// Sends `req` and waits for its answer's head, moving the connection
    /// on meanwhile. If the connection ends first, the answer is an error
    /// (with the request back when it never left).
    pub async fn exchange(
        &mut self,
        req: Request<RequestBody>,
    ) -> Result<Response<Incoming>, TrySendError<Request<RequestBody>>> {
        let mut answer = pin!(self.sender.try_send_request(req));
        let mut woken = false;
        poll_fn(|cx| {
            // Only the connection can answer (or, when it ends, give the
            // request back), so the answer wakes no one: a wake would only
            // poll this task once more for nothing.
            let quiet = &mut Context::from_waker(Waker::noop());
            // Once the request is out, the connection is moved on without
            // a waker first: handing over the answer and its body then
            // wakes no task, neither this one (which reads them right
            // after) nor, at the next request, whichever task this one
            // was. Only while the answer is still out does the connection
            // need to know whom to wake.
            if woken {
                self.poll_conn(quiet);
                if let Poll::Ready(answered) = answer.as_mut().poll(quiet) {
                    return Poll::Ready(answered);
                }
            }
            woken = true;
            self.poll_conn(cx);
            answer.as_mut().poll(quiet)
        })
        .await
    }
}

impl Link {
    /// A connection just opened: `sender` sends on it, `conn` is moved on.
    pub fn new(sender: Sender, conn: Conn) -> Self {
        Link {
            sender,
            conn: Some(Box::pin(conn)),
        }
    }
}

/// Where a lent connection goes back to once its answer has ended: the
/// client room's pool. The one call is made once per answer, after its body
/// has ended; it must not block (a short lock at most).
pub trait Shelf: Send + Sync {
    /// Keeps `link` for the next request if it can carry one.
    fn put(&self, link: Link);
}

/// The connection an answer is coming over: moved on while the answer's
/// body is read, handed back to its pool once that body has ended (dropped
/// before, it closes).
pub struct Checkin {
    shelf: Arc<dyn Shelf>,
    link: Link,
}

impl Checkin {
    /// `link`, lent by `shelf` to one answer.
    pub fn new(shelf: Arc<dyn Shelf>, link: Link) -> Self {
        Checkin { shelf, link }
    }

    /// Moves the connection on, so that more of the body arrives.
    pub fn poll_conn(&mut self, cx: &mut Context<'_>) {
        self.link.poll_conn(cx);
    }

    /// The answer is complete: the connection may carry the next request.
    pub fn done(self) {
        self.shelf.put(self.link);
    }
}
