//! Spreading one TCP entry point's connections evenly over the workers.
//!
//! The kernel spreads new connections over the workers' `SO_REUSEPORT`
//! listeners by a hash of their addresses: fair over many connections, but
//! a client holding one or two long-lived connections (a browser over
//! HTTP/2, a gRPC channel) finds both on one worker about as often as not,
//! and gets half the machine. So a worker that accepts a connection while
//! it serves more of the entry point's connections than the least busy
//! worker does (more than an eighth more, once there are several) hands
//! the socket to that worker over a channel, as Envoy's "exact" connection
//! balance does. Deciding costs one read per worker at each accept; a
//! request costs nothing; a connection handed on costs one wake of the
//! worker it goes to.

use crate::overload::ConnectionSlot;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::mpsc;

/// A counter alone on its cache line, so that one worker counting its
/// connections never slows another reading or counting its own.
#[repr(align(128))]
#[derive(Default)]
struct Line(AtomicUsize);

/// One TCP entry point's connections across its workers: how many each
/// serves now, and where to send a connection to another.
pub struct Spread {
    /// Connections served now, per worker.
    loads: Box<[Line]>,
    /// Each worker's inbox of connections handed to it.
    inboxes: Box<[mpsc::UnboundedSender<Handed>]>,
}

/// An accepted connection on its way to the worker that will serve it.
pub struct Handed {
    /// The socket, out of the accepting worker's reactor.
    pub stream: std::net::TcpStream,
    /// The client's address.
    pub peer: SocketAddr,
    /// Its place under the entry point's `maxConnections`, when bounded.
    pub slot: Option<ConnectionSlot>,
    /// It counted already among the receiving worker's connections.
    pub load: Load,
}

/// A connection counted among its worker's until dropped.
pub struct Load {
    spread: Arc<Spread>,
    worker: usize,
    peer: SocketAddr,
}

impl Drop for Load {
    fn drop(&mut self) {
        self.spread.loads[self.worker]
            .0
            .fetch_sub(1, Ordering::Relaxed);
        tracing::debug!(worker = self.worker, client = %self.peer, "connection closed");
    }
}

impl Spread {
    /// The spread of an entry point served by `workers` workers, with
    /// worker `i`'s inbox at index `i`.
    pub fn new(workers: usize) -> (Arc<Spread>, Vec<mpsc::UnboundedReceiver<Handed>>) {
        let (inboxes, receivers): (Vec<_>, Vec<_>) =
            (0..workers).map(|_| mpsc::unbounded_channel()).unzip();
        let spread = Spread {
            loads: (0..workers).map(|_| Line::default()).collect(),
            inboxes: inboxes.into(),
        };
        (Arc::new(spread), receivers)
    }

    /// The worker that is to serve a connection worker `me` has just
    /// accepted: `me`, unless another serves clearly fewer connections.
    pub fn place(&self, me: usize) -> usize {
        let own = self.load_of(me);
        let (least, fewest) = (0..self.loads.len())
            .map(|w| (w, self.load_of(w)))
            .min_by_key(|(_, load)| *load)
            .unwrap_or((me, own));
        if own > fewest + fewest / 8 { least } else { me }
    }

    /// Counts a connection from `peer` among `worker`'s until the guard
    /// is dropped.
    pub fn count(self: &Arc<Self>, worker: usize, peer: SocketAddr) -> Load {
        self.loads[worker].0.fetch_add(1, Ordering::Relaxed);
        Load {
            spread: self.clone(),
            worker,
            peer,
        }
    }

    /// Puts `handed` in `worker`'s inbox; gives it back when that worker
    /// no longer takes connections (it has stopped accepting).
    pub fn hand(&self, worker: usize, handed: Handed) -> Result<(), Handed> {
        self.inboxes[worker].send(handed).map_err(|e| e.0)
    }

    fn load_of(&self, worker: usize) -> usize {
        self.loads[worker].0.load(Ordering::Relaxed)
    }
}

/// What one worker's accept loop of an entry point balances with.
pub struct Balance {
    /// The entry point's spread, shared by its workers.
    pub spread: Arc<Spread>,
    /// This worker.
    pub me: usize,
    /// Connections other workers hand to this one.
    pub inbox: mpsc::UnboundedReceiver<Handed>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer() -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], 1))
    }

    #[test]
    fn a_busier_worker_places_its_connection_with_the_least_busy() {
        let (spread, _inboxes) = Spread::new(3);
        assert_eq!(spread.place(1), 1, "all idle: keep it");
        let first = spread.count(1, peer());
        assert_eq!(spread.place(1), 0, "one more than the others");
        assert_eq!(spread.place(0), 0);
        let second = spread.count(0, peer());
        assert_eq!(spread.place(0), 2);
        let third = spread.count(2, peer());
        assert_eq!(spread.place(2), 2, "even again");
        drop((first, second, third));
        assert!(
            spread
                .loads
                .iter()
                .all(|l| l.0.load(Ordering::Relaxed) == 0)
        );
    }

    #[test]
    fn with_many_connections_a_small_difference_is_kept() {
        let (spread, _inboxes) = Spread::new(2);
        let mine: Vec<Load> = (0..17).map(|_| spread.count(0, peer())).collect();
        let theirs: Vec<Load> = (0..16).map(|_| spread.count(1, peer())).collect();
        assert_eq!(spread.place(0), 0, "17 against 16 is within an eighth");
        let more: Vec<Load> = (0..2).map(|_| spread.count(0, peer())).collect();
        assert_eq!(spread.place(0), 1, "19 against 16 is not");
        drop((mine, theirs, more));
    }

    #[test]
    fn a_closed_inbox_gives_the_connection_back() {
        let (spread, inboxes) = Spread::new(2);
        drop(inboxes);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let stream =
            std::net::TcpStream::connect(listener.local_addr().expect("addr")).expect("connect");
        let handed = Handed {
            stream,
            peer: peer(),
            slot: None,
            load: spread.count(1, peer()),
        };
        assert!(spread.hand(1, handed).is_err());
    }
}
