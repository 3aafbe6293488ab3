//! The stores gangway reads and writes keys in, behind one contract: the
//! [`Store`] trait. The KV providers list a root and follow its changes;
//! the shared ACME storage reads, writes, creates if absent, takes leases
//! with fencing and watches one key. [`redis::RedisStore`] and
//! [`etcd::EtcdStore`] implement it; another store (Consul, for instance)
//! is one more implementation of the same trait.

pub mod etcd;
pub mod redis;

use futures_util::future::BoxFuture;
use std::fmt;
use std::time::Duration;

/// A store's keys, as the KV providers and the shared ACME storage see
/// them. Every call is one request (or a few, for a listing that needs
/// pages), bounded by the store's timeout; a connection is made on first
/// use and again after one broke.
///
/// A store is shared (`&self`): the calls may run at the same time.
/// [`watch`](Store::watch)'s stream may be polled with a timeout and
/// dropped unfinished; no call loses its connection when it is cancelled.
pub trait Store: Send + Sync {
    /// Where the store is, for messages (no password).
    fn location(&self) -> &str;
    /// Connects again now, replacing any earlier connection, and makes sure
    /// the store answers (with the credentials given, when there are).
    fn connect(&self) -> BoxFuture<'_, Result<(), StoreError>>;
    /// A key's value, if it exists.
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, StoreError>>;
    /// Writes a key, expiring after `ttl` when given.
    fn put<'a>(
        &'a self,
        key: &'a str,
        value: &'a [u8],
        ttl: Option<Duration>,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
    /// Writes a key only if it does not exist; true if it was written.
    fn create<'a>(
        &'a self,
        key: &'a str,
        value: &'a [u8],
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// Removes a key.
    fn delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), StoreError>>;
    /// Every key under `prefix` with its value, read at one moment where
    /// the store can (etcd's revision).
    fn list<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<Listing, StoreError>>;
    /// Takes the lease on `key` for `holder` if nobody holds it.
    fn acquire<'a>(
        &'a self,
        key: &'a str,
        holder: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Option<Lease>, StoreError>>;
    /// Extends a lease; false if it was lost (expired, taken over).
    fn renew<'a>(
        &'a self,
        lease: &'a Lease,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// Gives a lease up, if it is still this one.
    fn release<'a>(&'a self, lease: &'a Lease) -> BoxFuture<'a, Result<(), StoreError>>;
    /// Writes `key` only while `lease` is still held; false otherwise.
    fn put_fenced<'a>(
        &'a self,
        lease: &'a Lease,
        key: &'a str,
        value: &'a [u8],
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// Changes of the keys under `prefix` from now on, as the store
    /// announces them (Redis' keyspace notifications when the server sends
    /// them, etcd's watch); None when it does not, and the keys must be
    /// read again now and then. The stream ends after its first error.
    fn watch<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<Option<Changes>, StoreError>>;
    /// Whether a watch tells of every change (etcd keeps a history), rather
    /// than of those that happen while its connection lives (Redis'
    /// notifications are sent once, to whoever listens then).
    fn watch_is_complete(&self) -> bool;
}

/// A lease held on one key: who holds it, and the fencing token that
/// makes a write by a holder whose lease has expired fail.
#[derive(Debug, Clone)]
pub struct Lease {
    /// The lease's key.
    pub key: String,
    /// The value the key holds while the lease is this one's:
    /// `<holder>#<token>`.
    pub mark: String,
    /// Grows with every lease taken on the key.
    pub token: u64,
    /// etcd's lease id, for keep-alive and revoke (0 for Redis).
    pub(crate) etcd_lease: i64,
}

/// Everything under a prefix.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Listing {
    /// Keys and their values, in key order.
    pub values: Vec<(String, Vec<u8>)>,
    /// Keys whose value is not a value to read, each with why.
    pub unreadable: Vec<(String, Unreadable)>,
    /// The revision the keys were read at; changes at or before it are in
    /// the listing already (0 when the store keeps none).
    pub revision: i64,
}

/// Why a listed key has no value to read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unreadable {
    /// The key's bytes are not UTF-8 (shown with U+FFFD).
    KeyNotText,
    /// The key holds another type of value (a Redis hash, list …).
    NotAString {
        /// The type, as the store names it.
        kind: String,
    },
}

/// One announcement of a watch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// Something under the prefix changed, at this revision (0 when the
    /// store keeps none).
    Changed {
        /// The store's revision of the change.
        revision: i64,
    },
    /// Changes may have been missed (the history since the watch began was
    /// compacted, or a change cannot be read): read everything again. The
    /// stream ends after it.
    Lost,
}

/// A watch's announcements; ends after an error, or when the store's
/// connection does.
pub type Changes = futures_util::stream::BoxStream<'static, Result<Change, StoreError>>;

/// The settings of one kind of store, [`redis::RedisSettings`] or
/// [`etcd::EtcdSettings`]: what [`open`] makes a client from.
pub trait StoreSettings {
    /// The store they describe.
    type Store: Store;
    /// Why they make no client, naming what to fix.
    type Error: std::error::Error + Send + Sync + 'static;
    /// The client, nothing sent yet; called through [`open`].
    fn into_store(self) -> Result<Self::Store, Self::Error>;
}

/// A client for the store `settings` describe, with nothing connected or
/// sent yet: the one way a store is made, for the KV providers, the shared
/// ACME storage and `rateLimit.redis` alike. Settings the client cannot
/// use (an endpoint that is no `host:port`, TLS it refuses) are an error
/// here, so that they stop the start rather than being retried for ever.
pub fn open<S: StoreSettings>(settings: S) -> Result<S::Store, S::Error> {
    settings.into_store()
}

/// What went wrong with a store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The store could not be reached or refused a request.
    #[error("store {location}: {action} `{key}`: {source}")]
    Request {
        /// Where the store is (no password).
        location: String,
        /// What was asked (`reading`, `writing` …).
        action: &'static str,
        /// The key it was about.
        key: String,
        /// What the client said.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// An answer that does not hold what the request gives.
    #[error("store {location}: `{key}` holds {problem}")]
    BadAnswer {
        /// Where the store is.
        location: String,
        /// The key.
        key: String,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// No server of the store could be connected to: each, with why.
    #[error("{}", Tried(.tried))]
    Unreachable {
        /// Each server tried, and what failed.
        tried: Vec<(String, String)>,
    },
    /// etcd refused to connect (authentication, no member answering).
    #[error(transparent)]
    Etcd(#[from] etcd::EtcdError),
    /// A watch whose connection ended.
    #[error("the watch on `{prefix}` ended")]
    WatchEnded {
        /// The prefix watched.
        prefix: String,
    },
    /// The connection that carried Redis' keyspace notifications closed.
    #[error("the keyspace notification connection closed")]
    NotificationsClosed,
}

/// `a: why; b: why`.
struct Tried<'a>(&'a [(String, String)]);

impl fmt::Display for Tried<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (server, why)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{server}: {why}")?;
        }
        Ok(())
    }
}
