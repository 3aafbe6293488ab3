//! The loop every KV provider runs: connect, read everything under the
//! root, send it, then wait for a change (a notification, or the poll
//! interval), let a burst of changes settle and read again. When the store
//! cannot be reached the last configuration stays in use while it
//! reconnects with backoff.

use super::parse::{Parsed, parse_pairs};
use crate::config::problem::{Notice, Origin, Problem, ProviderError, Warning};
use crate::provider::Snapshot;
use crate::provider::docker::{Reconnect, Stop};
use crate::store::{Change, Changes, Listing, Store, StoreError, Unreadable};
use futures_util::StreamExt as _;
use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;
use tokio::sync::mpsc;

/// A burst of notified changes (a script writing a router key by key) is
/// read once it has been quiet this long.
const QUIET: Duration = Duration::from_millis(100);
/// Changes that never stop are read at least this often.
const SETTLE_AT_MOST: Duration = Duration::from_secs(1);
/// With notifications, the keys are still read this often: a connection
/// that died without closing is found out, and nothing missed stays
/// missed for long.
const RESYNC: Duration = Duration::from_secs(60);

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

impl From<StoreError> for Stop {
    fn from(e: StoreError) -> Self {
        Stop::Failed(e.to_string())
    }
}

/// What the keys say, with the keys that could not be read.
fn build(provider: &str, root: &str, listing: Listing) -> Parsed {
    let mut pairs = BTreeMap::new();
    let mut unreadable = Vec::new();
    for (key, value) in listing.values {
        match String::from_utf8(value) {
            Ok(value) => {
                pairs.insert(key, value);
            }
            Err(_) => unreadable.push((key, "the value is not UTF-8 text".to_owned())),
        }
    }
    for (key, why) in listing.unreadable {
        let why = match why {
            Unreadable::KeyNotText => "the key is not UTF-8 text".to_owned(),
            Unreadable::NotAString { kind } => format!(
                "the key holds a {kind}, not a string; values are strings in Traefik's KV layout"
            ),
        };
        unreadable.push((key, why));
    }
    unreadable.sort();
    let mut parsed = parse_pairs(provider, root, &pairs);
    for (key, why) in unreadable {
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

/// How the session hears of changes under the root.
struct Follower<'a, S: ?Sized> {
    store: &'a S,
    prefix: &'a str,
    follow: Follow,
    changes: Option<Changes>,
    /// The watch lost changes: a new one is started before waiting again.
    lost: bool,
    /// The revision of the last read; changes at or before it are in it.
    revision: i64,
}

impl<S: Store + ?Sized> Follower<'_, S> {
    /// Returns when something under the root may have changed: a change
    /// was announced, or the poll interval passed. It may be cancelled
    /// (the loop stops waiting after a quiet period) without losing
    /// anything: the watch's stream keeps what it has not handed out.
    async fn changed(&mut self) -> Result<(), StoreError> {
        if self.lost {
            // Cancelled while this waits, nothing is lost: the next call
            // starts again, and the read that follows catches up.
            self.changes = self.store.watch(self.prefix).await?;
            self.lost = false;
        }
        let Some(stream) = self.changes.as_mut() else {
            if let Follow::Polling(every) = self.follow {
                tokio::time::sleep(every).await;
            }
            return Ok(());
        };
        loop {
            let next = match self.follow {
                Follow::Notifications => match tokio::time::timeout(RESYNC, stream.next()).await {
                    Ok(next) => next,
                    Err(_resync) => return Ok(()),
                },
                Follow::Watch | Follow::Polling(_) => stream.next().await,
            };
            match next {
                // Changes already in the last read come again when the
                // watch began before it: they change nothing.
                Some(Ok(Change::Changed { revision }))
                    if revision != 0 && revision <= self.revision => {}
                Some(Ok(Change::Changed { .. })) => return Ok(()),
                Some(Ok(Change::Lost)) => {
                    self.changes = None;
                    self.lost = true;
                    return Ok(());
                }
                Some(Err(e)) => {
                    self.changes = None;
                    return Err(e);
                }
                None => {
                    self.changes = None;
                    return Err(StoreError::WatchEnded {
                        prefix: self.prefix.to_owned(),
                    });
                }
            }
        }
    }
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

/// Runs the provider `provider` on `store` until `tx` closes; a store
/// that announces no changes is read every `poll`.
pub async fn run<S: Store>(
    provider: &'static str,
    root: String,
    store: S,
    poll: Duration,
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
        let message = match session(provider, &root, &store, poll, &mut out, &mut retry).await {
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
    store: &S,
    poll: Duration,
    out: &mut Publisher,
    retry: &mut Reconnect,
) -> Result<(), Stop> {
    let prefix = format!("{root}/");
    store.connect().await?;
    // The watch begins before the read, so that no change between the two
    // is missed.
    let changes = store.watch(&prefix).await?;
    let follow = match &changes {
        Some(_) if store.watch_is_complete() => Follow::Watch,
        Some(_) => Follow::Notifications,
        None => Follow::Polling(poll),
    };
    let listing = store.list(&prefix).await?;
    let mut follower = Follower {
        store,
        prefix: &prefix,
        follow,
        changes,
        lost: false,
        revision: listing.revision,
    };
    tracing::info!(
        provider,
        root,
        keys = listing.values.len(),
        "connected to the store; following changes by {follow}"
    );
    retry.connected();
    out.publish(build(provider, root, listing)).await?;
    loop {
        follower.changed().await?;
        // A poll is read at once: it comes after a whole interval already.
        let settle = match follow {
            Follow::Notifications | Follow::Watch => tokio::time::Instant::now() + SETTLE_AT_MOST,
            Follow::Polling(_) => tokio::time::Instant::now(),
        };
        while tokio::time::Instant::now() < settle {
            match tokio::time::timeout(QUIET, follower.changed()).await {
                Ok(changed) => changed?,
                Err(_quiet) => break,
            }
        }
        let listing = store.list(&prefix).await?;
        follower.revision = listing.revision;
        out.publish(build(provider, root, listing)).await?;
    }
}
