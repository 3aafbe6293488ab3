//! The Redis provider: keys under `rootKey` read with `SCAN` and `MGET`.
//! Changes are followed through keyspace notifications when the server
//! sends them (`notify-keyspace-events` holds `K` and `A`, or `K`, `g` and
//! `$`); gangway never changes the server's configuration itself, so
//! otherwise it reads the keys again every `pollInterval`.

use super::watch::{Follow, Listing, Store, StoreError};
use crate::config::static_config::{ProviderTls, RedisProvider, RedisSentinel};
use crate::provider::Snapshot;
use crate::store::redis::{glob_escape, host_port, notifies_changes, scan_values};
use ::redis::aio::{MultiplexedConnection, PubSubStream};
use ::redis::{
    AsyncConnectionConfig, Client, ClientTlsConfig, ConnectionAddr, IntoConnectionInfo,
    RedisConnectionInfo, TlsCertificates,
};
use futures_util::StreamExt;
use std::time::Duration;
use tokio::sync::mpsc;

const PROVIDER: &str = "redis";
/// The longest a connection attempt or one command may take.
const CALL: Duration = Duration::from_secs(5);
/// With notifications, the keys are still read this often: a connection
/// that died without closing is found out, and nothing missed stays
/// missed for long.
const RESYNC: Duration = Duration::from_secs(60);

/// Why the Redis provider cannot start.
#[derive(Debug, thiserror::Error)]
pub enum RedisError {
    /// No server to connect to.
    #[error("providers.redis.endpoints: give at least one server as host:port")]
    NoEndpoint,
    /// A server that is not `host:port`.
    #[error("providers.redis.endpoints: `{0}` is not host:port (for example 127.0.0.1:6379)")]
    Endpoint(String),
    /// An empty root key.
    #[error(
        "providers.redis.rootKey: must not be empty (gangway's default is `gangway`, Traefik's `traefik`)"
    )]
    RootKey,
    /// Sentinel options, which gangway does not support yet.
    #[error(
        "providers.redis.sentinel: Redis Sentinel is not supported yet; point providers.redis.endpoints at the master instead"
    )]
    Sentinel,
    /// A TLS file that cannot be read.
    #[error("providers.redis.tls.{option} `{path}`: {reason}")]
    TlsFile {
        /// `ca`, `cert` or `key`.
        option: &'static str,
        /// The file.
        path: String,
        /// What the system said.
        reason: String,
    },
    /// TLS settings the client does not take.
    #[error("providers.redis.tls: {0}")]
    Tls(String),
}

/// Checks the options, then starts the provider: it sends a `Snapshot` on
/// `tx` at every change until `tx` closes.
pub fn spawn_redis(
    config: &RedisProvider,
    tx: mpsc::Sender<Snapshot>,
) -> Result<tokio::task::JoinHandle<()>, RedisError> {
    let (store, root) = RedisStore::new(config)?;
    Ok(tokio::spawn(super::watch::run(PROVIDER, root, store, tx)))
}

/// A Redis server (the first of the endpoints that answers) as a [`Store`].
pub struct RedisStore {
    /// Each endpoint as written, with its client.
    clients: Vec<(String, Client)>,
    root: String,
    db: u32,
    poll: Duration,
    connection: Option<MultiplexedConnection>,
    notifications: Option<PubSubStream>,
}

impl RedisStore {
    /// Checks the options and reads the TLS files; returns the store and
    /// the root key.
    pub fn new(config: &RedisProvider) -> Result<(RedisStore, String), RedisError> {
        #[deny(unused_variables)] // an option read nowhere fails the build
        let RedisProvider {
            endpoints,
            root_key,
            username,
            password,
            db,
            tls,
            sentinel,
            poll_interval,
        } = config;
        let RedisSentinel {
            master_name,
            username: sentinel_user,
            password: sentinel_password,
        } = sentinel;
        if master_name.is_some() || sentinel_user.is_some() || sentinel_password.is_some() {
            return Err(RedisError::Sentinel);
        }
        let root = root_key.trim().trim_end_matches('/').to_owned();
        if root.is_empty() {
            return Err(RedisError::RootKey);
        }
        let certificates = match tls {
            Some(tls) => certificates(tls)?,
            None => None,
        };
        let mut settings = RedisConnectionInfo::default().set_db(i64::from(*db));
        if let Some(user) = username.as_deref().filter(|u| !u.is_empty()) {
            settings = settings.set_username(user);
        }
        if let Some(password) = password.as_deref().filter(|p| !p.is_empty()) {
            settings = settings.set_password(password);
        }
        let mut clients = Vec::new();
        for endpoint in endpoints.iter().map(|e| e.trim()).filter(|e| !e.is_empty()) {
            let (host, port) =
                host_port(endpoint).ok_or_else(|| RedisError::Endpoint(endpoint.to_owned()))?;
            let addr = match tls {
                Some(tls) => ConnectionAddr::TcpTls {
                    host,
                    port,
                    insecure: tls.insecure_skip_verify,
                    tls_params: None,
                },
                None => ConnectionAddr::Tcp(host, port),
            };
            let info = addr
                .into_connection_info()
                .map_err(|e| RedisError::Tls(e.to_string()))?
                .set_redis_settings(settings.clone());
            let client = match &certificates {
                Some(c) => Client::build_with_tls(info, c.clone()),
                None => Client::open(info),
            }
            .map_err(|e| RedisError::Tls(e.to_string()))?;
            clients.push((endpoint.to_owned(), client));
        }
        if clients.is_empty() {
            return Err(RedisError::NoEndpoint);
        }
        let store = RedisStore {
            clients,
            root: root.clone(),
            db: *db,
            poll: poll_interval.0.max(Duration::from_millis(100)),
            connection: None,
            notifications: None,
        };
        Ok((store, root))
    }

    fn connection(&mut self) -> Result<&mut MultiplexedConnection, StoreError> {
        self.connection
            .as_mut()
            .ok_or_else(|| StoreError("not connected".to_owned()))
    }

    /// Subscribes to the root's keyspace notifications if the server sends
    /// them; how changes are followed.
    async fn follow(&mut self, client: &Client) -> Result<Follow, StoreError> {
        let polling = Follow::Polling(self.poll);
        let flags: Result<Vec<String>, _> = ::redis::cmd("CONFIG")
            .arg("GET")
            .arg("notify-keyspace-events")
            .query_async(self.connection()?)
            .await;
        let flags = match flags {
            Ok(pair) => pair.into_iter().nth(1).unwrap_or_default(),
            Err(e) => {
                tracing::info!(
                    provider = PROVIDER,
                    error = %e,
                    "cannot read the server's notify-keyspace-events; polling"
                );
                return Ok(polling);
            }
        };
        if !notifies_changes(&flags) {
            tracing::info!(
                provider = PROVIDER,
                notify_keyspace_events = %flags,
                "the server sends no keyspace notifications for string keys (notify-keyspace-events needs K and A, or K, g and $); polling"
            );
            return Ok(polling);
        }
        let mut pubsub = tokio::time::timeout(CALL, client.get_async_pubsub())
            .await
            .map_err(|_| StoreError("subscribing timed out".to_owned()))?
            .map_err(|e| StoreError(format!("subscribing: {e}")))?;
        let pattern = format!("__keyspace@{}__:{}/*", self.db, glob_escape(&self.root));
        tokio::time::timeout(CALL, pubsub.psubscribe(&pattern))
            .await
            .map_err(|_| StoreError("subscribing timed out".to_owned()))?
            .map_err(|e| StoreError(format!("subscribing to {pattern}: {e}")))?;
        self.notifications = Some(pubsub.into_on_message());
        Ok(Follow::Notifications)
    }
}

impl Store for RedisStore {
    async fn connect(&mut self) -> Result<Follow, StoreError> {
        self.connection = None;
        self.notifications = None;
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(CALL))
            .set_response_timeout(Some(CALL));
        let mut failures = Vec::new();
        let clients = self.clients.clone();
        for (endpoint, client) in clients {
            match client
                .get_multiplexed_async_connection_with_config(&config)
                .await
            {
                Ok(connection) => {
                    self.connection = Some(connection);
                    return self
                        .follow(&client)
                        .await
                        .map_err(|e| StoreError(format!("{endpoint}: {}", e.0)));
                }
                Err(e) => failures.push(format!("{endpoint}: {e}")),
            }
        }
        Err(StoreError(failures.join("; ")))
    }

    async fn list(&mut self) -> Result<Listing, StoreError> {
        let pattern = format!("{}/*", glob_escape(&self.root));
        let connection = self.connection()?;
        let read = scan_values(connection, &pattern)
            .await
            .map_err(|e| StoreError(format!("reading the keys under {pattern}: {e}")))?;
        let mut listing = Listing::default();
        for (key, value) in read {
            let name = String::from_utf8_lossy(&key).into_owned();
            let Ok(text_key) = String::from_utf8(key.clone()) else {
                listing
                    .unreadable
                    .push((name, "the key is not UTF-8 text".to_owned()));
                continue;
            };
            match value {
                Some(bytes) => match String::from_utf8(bytes) {
                    Ok(text) => {
                        listing.pairs.insert(text_key, text);
                    }
                    Err(_) => listing
                        .unreadable
                        .push((name, "the value is not UTF-8 text".to_owned())),
                },
                // Gone since SCAN, or not a string: MGET answers nil
                // for both.
                None => {
                    let kind: String = ::redis::cmd("TYPE")
                        .arg(&key)
                        .query_async(connection)
                        .await
                        .map_err(|e| StoreError(format!("TYPE: {e}")))?;
                    if kind != "none" {
                        listing.unreadable.push((
                            name,
                            format!("the key holds a {kind}, not a string; values are strings in Traefik's KV layout"),
                        ));
                    }
                }
            }
        }
        Ok(listing)
    }

    async fn changed(&mut self) -> Result<(), StoreError> {
        let Some(stream) = self.notifications.as_mut() else {
            tokio::time::sleep(self.poll).await;
            return Ok(());
        };
        match tokio::time::timeout(RESYNC, stream.next()).await {
            Ok(Some(_)) | Err(_) => Ok(()),
            Ok(None) => Err(StoreError(
                "the keyspace notification connection closed".to_owned(),
            )),
        }
    }
}

/// The TLS files, read; None when TLS is off or needs none of them.
fn certificates(tls: &ProviderTls) -> Result<Option<TlsCertificates>, RedisError> {
    #[deny(unused_variables)] // an option read nowhere fails the build
    let ProviderTls {
        ca,
        cert,
        key,
        insecure_skip_verify: _, // RedisStore::new, on the address
    } = tls;
    let read =
        |option: &'static str, path: &Option<String>| -> Result<Option<Vec<u8>>, RedisError> {
            let Some(path) = path.as_deref().filter(|p| !p.is_empty()) else {
                return Ok(None);
            };
            std::fs::read(path)
                .map(Some)
                .map_err(|e| RedisError::TlsFile {
                    option,
                    path: path.to_owned(),
                    reason: crate::cause::WithCauses(&e).to_string(),
                })
        };
    let root_cert = read("ca", ca)?;
    let client_tls = match (read("cert", cert)?, read("key", key)?) {
        (Some(client_cert), Some(client_key)) => Some(ClientTlsConfig {
            client_cert,
            client_key,
        }),
        (None, None) => None,
        _ => {
            return Err(RedisError::Tls(
                "give both cert and key for a client certificate".to_owned(),
            ));
        }
    };
    if root_cert.is_none() && client_tls.is_none() {
        return Ok(None);
    }
    Ok(Some(TlsCertificates {
        client_tls,
        root_cert,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_that_cannot_be_honoured_are_refused() {
        let sentinel = RedisProvider {
            sentinel: RedisSentinel {
                master_name: Some("mymaster".into()),
                ..RedisSentinel::default()
            },
            ..RedisProvider::default()
        };
        assert!(matches!(
            RedisStore::new(&sentinel),
            Err(RedisError::Sentinel)
        ));
        let bad = RedisProvider {
            endpoints: vec!["redis.local".into()],
            ..RedisProvider::default()
        };
        assert!(matches!(
            RedisStore::new(&bad),
            Err(RedisError::Endpoint(_))
        ));
        let root = RedisProvider {
            root_key: "/".into(),
            ..RedisProvider::default()
        };
        assert!(matches!(RedisStore::new(&root), Err(RedisError::RootKey)));
        let missing = RedisProvider {
            tls: Some(ProviderTls {
                ca: Some("/nonexistent/ca.pem".into()),
                ..ProviderTls::default()
            }),
            ..RedisProvider::default()
        };
        assert!(matches!(
            RedisStore::new(&missing),
            Err(RedisError::TlsFile { option: "ca", .. })
        ));
        let (_, root) = RedisStore::new(&RedisProvider {
            root_key: "traefik/".into(),
            ..RedisProvider::default()
        })
        .unwrap();
        assert_eq!(root, "traefik");
    }
}
