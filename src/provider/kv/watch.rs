//! The loop every KV provider runs: connect, read everything under the
//! root, send it, then wait for a change (a notification, or the poll
//! interval), let a burst of changes settle and read again. When the store
//! cannot be reached the last configuration stays in use while it
//! reconnects with backoff.

use super::parse::{Parsed, parse_pairs};
use crate::config::problem::{Notice, Origin, Problem, ProviderError, Warning};
use crate::provider::Snapshot;
use crate::provider::docker::{Reconnect, Stop};
use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;
use tokio::sync::mpsc;

/// A burst of notified changes (a script writing a router key by key) is
/// read once it has been quiet this long.
const QUIET: Duration = Duration::from_millis(100);
/// Changes that never stop are read at least this often.
const SETTLE_AT_MOST: Duration = Duration::from_secs(1);

/// A KV store as the provider loop sees it.
///
/// The loop calls [`connect`](Store::connect) first and after every
/// failure, then [`list`](Store::list), then [`changed`](Store::changed)
/// and `list` in turn. An error from any of them ends the session: the
/// loop reports the store unreachable, keeps the last configuration and
/// connects again after a backoff. `changed` may be cancelled (the loop
/// stops waiting after a quiet period); it must not lose the connection
/// when it is.
pub trait Store: Send {
    /// Connects (again), replacing any earlier connection, and says how
    /// changes will be followed.
    fn connect(&mut self) -> impl Future<Output = Result<Follow, StoreError>> + Send;

    /// Every key under the root (`<root>/`) with its value.
    fn list(&mut self) -> impl Future<Output = Result<Listing, StoreError>> + Send;

    /// Returns when something under the root may have changed: a change
    /// notification arrived, or the poll interval passed.
    fn changed(&mut self) -> impl Future<Output = Result<(), StoreError>> + Send;
}

/// How a store's changes are followed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Follow {
    /// The store tells of each change.
    Notifications,
    /// The store streams every change after the revision last read (an
    /// etcd watch).
    Watch,
    /// The store is read again at this interval.
    Polling(Duration),
}

impl fmt::Display for Follow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Follow::Notifications => f.write_str("change notifications"),
            Follow::Watch => f.write_str("a watch"),
            Follow::Polling(every) => write!(f, "polling every {}ms", every.as_millis()),
        }
    }
}

/// Everything under the root.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Listing {
    /// Keys and their values.
    pub pairs: BTreeMap<String, String>,
    /// Keys whose value cannot be read as text (another type of value, or
    /// bytes that are not UTF-8), each with why.
    pub unreadable: Vec<(String, String)>,
}

/// The store cannot be reached or answered an error, as a sentence.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct StoreError(pub String);

impl From<StoreError> for Stop {
    fn from(e: StoreError) -> Self {
        Stop::Failed(e.0)
    }
}

/// What the keys say, with the keys that could not be read.
fn build(provider: &str, root: &str, listing: Listing) -> Parsed {
    let mut parsed = parse_pairs(provider, root, &listing.pairs);
    for (key, why) in listing.unreadable {
        let notice = Notice::KeyIgnored {
            problem: Box::new(Problem::BadValue { message: why }),
        };
        let origin = Origin::Key {
            provider: provider.to_owned(),
            key,
        };
        parsed.warnings.push(Warning::new(notice, Some(origin)));
    }
    parsed.detail.connected = Some(true);
    parsed
}

/// What was sent last, and where to send.
struct Publisher {
    provider: &'static str,
    last: Option<Parsed>,
    /// Send the next configuration even if it equals the last one: it
    /// clears the error and says connected again.
    resend: bool,
    tx: mpsc::Sender<Snapshot>,
}

impl Publisher {
    async fn publish(&mut self, parsed: Parsed) -> Result<(), Stop> {
        if !self.resend && self.last.as_ref() == Some(&parsed) {
            return Ok(());
        }
        self.resend = false;
        let snapshot = Snapshot {
            provider: self.provider,
            dynamic: Some(parsed.dynamic.clone()),
            error: None,
            warnings: parsed.warnings.clone(),
            detail: Some(parsed.detail.clone()),
        };
        self.last = Some(parsed);
        self.tx.send(snapshot).await.map_err(|_| Stop::Closed)
    }

    async fn unreachable(&mut self, error: ProviderError) -> Result<(), Stop> {
        self.resend = true;
        let last = self.last.as_ref().map(|p| &p.detail);
        let snapshot = Snapshot::unreachable(self.provider, error, last);
        self.tx.send(snapshot).await.map_err(|_| Stop::Closed)
    }
}

/// Runs the provider `provider` on `store` until `tx` closes.
pub async fn run<S: Store>(
    provider: &'static str,
    root: String,
    mut store: S,
    tx: mpsc::Sender<Snapshot>,
) {
    let mut out = Publisher {
        provider,
        last: None,
        resend: false,
        tx,
    };
    let mut retry = Reconnect::new();
    loop {
        let message = match session(provider, &root, &mut store, &mut out, &mut retry).await {
            Err(Stop::Failed(message)) => message,
            Ok(()) | Err(Stop::Closed) => return,
        };
        if retry.failed() {
            tracing::error!(
                provider,
                error = %message,
                "store unreachable; keeping the last known routes and retrying"
            );
            let error = ProviderError::Store {
                store: provider.to_owned(),
                reason: message,
            };
            if out.unreachable(error).await.is_err() {
                return;
            }
        } else {
            tracing::debug!(provider, error = %message, "still cannot read the store");
        }
        retry.wait().await;
    }
}

async fn session<S: Store>(
    provider: &'static str,
    root: &str,
    store: &mut S,
    out: &mut Publisher,
    retry: &mut Reconnect,
) -> Result<(), Stop> {
    let follow = store.connect().await?;
    let listing = store.list().await?;
    tracing::info!(
        provider,
        root,
        keys = listing.pairs.len(),
        "connected to the store; following changes by {follow}"
    );
    retry.connected();
    out.publish(build(provider, root, listing)).await?;
    loop {
        store.changed().await?;
        // A poll is read at once: it comes after a whole interval already.
        let settle = match follow {
            Follow::Notifications | Follow::Watch => tokio::time::Instant::now() + SETTLE_AT_MOST,
            Follow::Polling(_) => tokio::time::Instant::now(),
        };
        while tokio::time::Instant::now() < settle {
            match tokio::time::timeout(QUIET, store.changed()).await {
                Ok(changed) => changed?,
                Err(_quiet) => break,
            }
        }
        let listing = store.list().await?;
        out.publish(build(provider, root, listing)).await?;
    }
}
