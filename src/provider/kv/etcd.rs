//! The etcd provider: keys under `rootKey` read with one range request
//! (in pages, all at one revision), then followed with a watch from the
//! revision of the read on (the watch begins just before it), so no change
//! between the read and the watch is missed. etcd always tells of changes:
//! there is no polling.

use crate::client::tls::provider_config;
use crate::config::static_config::{EtcdProvider, ProviderTls};
use crate::provider::Snapshot;
use crate::store::etcd::{EtcdError, EtcdSettings, EtcdStore};
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
    Tls(crate::client::ClientError),
}

/// Checks the options, then starts the provider: it sends a `Snapshot` on
/// `tx` at every change until `tx` closes.
pub fn spawn_etcd(
    config: &EtcdProvider,
    tx: mpsc::Sender<Snapshot>,
) -> Result<tokio::task::JoinHandle<()>, EtcdProviderError> {
    let (store, root) = EtcdStore::new(config)?;
    // etcd always tells of changes: the poll interval is never used.
    Ok(tokio::spawn(super::watch::run(
        PROVIDER, root, store, CALL, tx,
    )))
}

impl EtcdStore {
    /// Checks the provider's options and reads the TLS files; returns the
    /// store and the root key.
    pub fn new(config: &EtcdProvider) -> Result<(EtcdStore, String), EtcdProviderError> {
        #[deny(unused_variables)] // an option read nowhere fails the build
        let EtcdProvider {
            endpoints,
            root_key,
            username,
            password,
            tls,
        } = config;
        let root = super::root_key(root_key).ok_or(EtcdProviderError::RootKey)?;
        let endpoints = super::endpoints(endpoints).ok_or(EtcdProviderError::NoEndpoint)?;
        let tls = tls.as_ref().map(tls_config).transpose()?;
        let auth = username
            .as_deref()
            .filter(|u| !u.is_empty())
            .map(|user| (user.to_owned(), password.clone().unwrap_or_default()));
        let location = format!("etcd {}", endpoints.join(","));
        // Made here so that a bad endpoint stops the start, rather than
        // being retried for ever.
        let settings = EtcdSettings {
            endpoints,
            auth,
            tls,
            timeout: CALL,
            location,
        };
        let store = crate::store::open(settings).map_err(EtcdProviderError::Endpoint)?;
        Ok((store, root))
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
        let (_, root) = EtcdStore::new(&EtcdProvider {
            root_key: "traefik/".into(),
            ..EtcdProvider::default()
        })
        .unwrap();
        assert_eq!(root, "traefik");
    }
}
