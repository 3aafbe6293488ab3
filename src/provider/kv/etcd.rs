//! The etcd provider: keys under `rootKey` read with one range request
//! (in pages, all at one revision), then followed with a watch from the
//! revision after it, so no change between the read and the watch is
//! missed. etcd always tells of changes: there is no polling.

use super::watch::{Follow, Listing, Store, StoreError};
use crate::config::static_config::{EtcdProvider, ProviderTls};
use crate::provider::Snapshot;
use crate::store::etcd::{EtcdClient, EtcdError, EtcdWatch};
use crate::tls::client::provider_config;
use std::time::Duration;
use tokio::sync::mpsc;

const PROVIDER: &str = "etcd";
/// The longest connecting, or waiting for one answer, may take.
const CALL: Duration = Duration::from_secs(5);

/// Why the etcd provider cannot start.
#[derive(Debug, thiserror::Error)]
pub enum EtcdProviderError {
    /// No member to connect to.
    #[error("providers.etcd.endpoints: give at least one member as host:port")]
    NoEndpoint,
    /// An endpoint the client cannot use.
    #[error("providers.etcd.endpoints: {0}")]
    Endpoint(EtcdError),
    /// An empty root key.
    #[error(
        "providers.etcd.rootKey: must not be empty (gangway's default is `gangway`, Traefik's `traefik`)"
    )]
    RootKey,
    /// TLS settings that cannot be used (a file that cannot be read, a
    /// certificate without its key).
    #[error("providers.etcd.tls: {0}")]
    Tls(String),
}

/// Checks the options, then starts the provider: it sends a `Snapshot` on
/// `tx` at every change until `tx` closes.
pub fn spawn_etcd(
    config: &EtcdProvider,
    tx: mpsc::Sender<Snapshot>,
) -> Result<tokio::task::JoinHandle<()>, EtcdProviderError> {
    let (store, root) = EtcdStore::new(config)?;
    Ok(tokio::spawn(super::watch::run(PROVIDER, root, store, tx)))
}

/// An etcd cluster as a [`Store`].
pub struct EtcdStore {
    endpoints: Vec<String>,
    auth: Option<(String, String)>,
    tls: Option<rustls::ClientConfig>,
    /// `<root>/`: what is read and watched, so that a sibling such as
    /// `<root>x/…` is not.
    prefix: String,
    client: Option<EtcdClient>,
    /// The revision of the last read; the watch starts after it.
    revision: i64,
    /// The next watch starts from now: the history after `revision` is
    /// gone, and the read that follows catches up instead.
    watch_from_now: bool,
    watch: Option<EtcdWatch>,
}

impl EtcdStore {
    /// Checks the options and reads the TLS files; returns the store and
    /// the root key.
    pub fn new(config: &EtcdProvider) -> Result<(EtcdStore, String), EtcdProviderError> {
        #[deny(unused_variables)] // an option read nowhere fails the build
        let EtcdProvider {
            endpoints,
            root_key,
            username,
            password,
            tls,
        } = config;
        let root = root_key.trim().trim_end_matches('/').to_owned();
        if root.is_empty() {
            return Err(EtcdProviderError::RootKey);
        }
        let endpoints: Vec<String> = endpoints
            .iter()
            .map(|e| e.trim())
            .filter(|e| !e.is_empty())
            .map(str::to_owned)
            .collect();
        if endpoints.is_empty() {
            return Err(EtcdProviderError::NoEndpoint);
        }
        let tls = tls.as_ref().map(tls_config).transpose()?;
        // Made once here so that a bad endpoint stops the start, rather
        // than being retried for ever.
        EtcdClient::new(&endpoints, None, tls.clone(), CALL)
            .map_err(EtcdProviderError::Endpoint)?;
        let auth = username
            .as_deref()
            .filter(|u| !u.is_empty())
            .map(|user| (user.to_owned(), password.clone().unwrap_or_default()));
        let store = EtcdStore {
            endpoints,
            auth,
            tls,
            prefix: format!("{root}/"),
            client: None,
            revision: 0,
            watch_from_now: false,
            watch: None,
        };
        Ok((store, root))
    }

    fn client(&self) -> Result<&EtcdClient, StoreError> {
        self.client
            .as_ref()
            .ok_or_else(|| StoreError("not connected".to_owned()))
    }
}

impl Store for EtcdStore {
    async fn connect(&mut self) -> Result<Follow, StoreError> {
        self.client = None;
        self.watch = None;
        let client =
            EtcdClient::connect(&self.endpoints, self.auth.clone(), self.tls.clone(), CALL)
                .await
                .map_err(|e| StoreError(e.to_string()))?;
        self.client = Some(client);
        Ok(Follow::Watch)
    }

    async fn list(&mut self) -> Result<Listing, StoreError> {
        let (raw, revision) = self
            .client()?
            .range_prefix_bytes(&self.prefix)
            .await
            .map_err(|e| StoreError(e.to_string()))?;
        self.revision = revision;
        self.watch_from_now = false;
        let mut listing = Listing::default();
        for (key, value) in raw {
            let name = String::from_utf8_lossy(&key).into_owned();
            let Ok(key) = String::from_utf8(key) else {
                listing
                    .unreadable
                    .push((name, "the key is not UTF-8 text".to_owned()));
                continue;
            };
            match String::from_utf8(value) {
                Ok(value) => {
                    listing.pairs.insert(key, value);
                }
                Err(_) => listing
                    .unreadable
                    .push((name, "the value is not UTF-8 text".to_owned())),
            }
        }
        Ok(listing)
    }

    async fn changed(&mut self) -> Result<(), StoreError> {
        loop {
            if self.watch.is_none() {
                // Cancelled while this waits, nothing is lost: the next
                // call starts again from the same revision.
                let from = if self.watch_from_now {
                    0
                } else {
                    self.revision + 1
                };
                let watch = self
                    .client()?
                    .watch_prefix(&self.prefix, from)
                    .await
                    .map_err(|e| StoreError(e.to_string()))?;
                self.watch = Some(watch);
            }
            let Some(watch) = self.watch.as_mut() else {
                continue;
            };
            // `next` takes a batch only when it returns it, so the loop may
            // stop waiting here at any time.
            match watch.next().await {
                // Changes already in the last read come again when the
                // watch outlives a read: they change nothing.
                Some(Ok(batch)) if batch.revision <= self.revision => continue,
                Some(Ok(_)) => return Ok(()),
                // History before the watch's revision is gone, or a change
                // that is not text cannot be followed: reading everything
                // again (and watching after that) catches up either way.
                Some(Err(EtcdError::Compacted { .. } | EtcdError::NotUtf8 { .. })) => {
                    self.watch = None;
                    self.watch_from_now = true;
                    return Ok(());
                }
                Some(Err(e)) => {
                    self.watch = None;
                    return Err(StoreError(e.to_string()));
                }
                None => {
                    self.watch = None;
                    return Err(StoreError(format!("the watch on `{}` ended", self.prefix)));
                }
            }
        }
    }
}

/// The rustls configuration `tls` describes, built as for every other TLS
/// client of gangway's.
fn tls_config(tls: &ProviderTls) -> Result<rustls::ClientConfig, EtcdProviderError> {
    provider_config(tls).map_err(EtcdProviderError::Tls)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_that_cannot_be_used_are_refused() {
        let root = EtcdProvider {
            root_key: " / ".into(),
            ..EtcdProvider::default()
        };
        assert!(matches!(
            EtcdStore::new(&root),
            Err(EtcdProviderError::RootKey)
        ));
        let none = EtcdProvider {
            endpoints: vec![" ".into()],
            ..EtcdProvider::default()
        };
        assert!(matches!(
            EtcdStore::new(&none),
            Err(EtcdProviderError::NoEndpoint)
        ));
        let bad = EtcdProvider {
            endpoints: vec!["ftp://etcd:2379".into()],
            ..EtcdProvider::default()
        };
        assert!(matches!(
            EtcdStore::new(&bad),
            Err(EtcdProviderError::Endpoint(_))
        ));
        let missing = EtcdProvider {
            tls: Some(ProviderTls {
                ca: Some("/nonexistent/ca.pem".into()),
                ..ProviderTls::default()
            }),
            ..EtcdProvider::default()
        };
        let err = EtcdStore::new(&missing).err().expect("a missing CA file");
        assert!(err.to_string().contains("/nonexistent/ca.pem"), "{err}");
        let half = EtcdProvider {
            tls: Some(ProviderTls {
                cert: Some("cert.pem".into()),
                ..ProviderTls::default()
            }),
            ..EtcdProvider::default()
        };
        assert!(matches!(
            EtcdStore::new(&half),
            Err(EtcdProviderError::Tls(_))
        ));
    }

    #[test]
    fn the_root_is_read_as_a_whole_segment() {
        let (store, root) = EtcdStore::new(&EtcdProvider {
            root_key: "traefik/".into(),
            ..EtcdProvider::default()
        })
        .unwrap();
        assert_eq!(root, "traefik");
        assert_eq!(store.prefix, "traefik/");
    }
}
