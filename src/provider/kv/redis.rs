//! The Redis provider: keys under `rootKey` read with `SCAN` and `MGET`.
//! Changes are followed through keyspace notifications: a server whose
//! `notify-keyspace-events` does not announce them (`K` and `A`, or `K`,
//! `g` and `$`) is asked to with `CONFIG SET`, as Traefik's client does;
//! where that is refused (a managed Redis), the keys are read again every
//! `pollInterval`. With `sentinel.masterName`, the endpoints are Redis
//! Sentinels, asked where the master is at every (re)connection.

use crate::config::static_config::{ProviderTls, RedisProvider, RedisSentinel};
use crate::provider::Snapshot;
use crate::store::redis::{RedisSettings, RedisSetupError, RedisStore, RedisTls, SentinelSettings};
use ::redis::{ClientTlsConfig, TlsCertificates};
use std::time::Duration;
use tokio::sync::mpsc;

const PROVIDER: &str = "redis";
/// The longest a connection attempt or one command may take.
const CALL: Duration = Duration::from_secs(5);

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
    /// Sentinel options without the master's name.
    #[error(
        "providers.redis.sentinel: give sentinel.masterName, the name the sentinels monitor the master under"
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
    let poll = config.poll_interval.0.max(Duration::from_millis(100));
    Ok(tokio::spawn(super::watch::run(
        PROVIDER, root, store, poll, tx,
    )))
}

impl RedisStore {
    /// Checks the provider's options and reads the TLS files; returns the
    /// store and the root key.
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
            poll_interval: _, // spawn_redis, for the loop
        } = config;
        #[deny(unused_variables)] // an option read nowhere fails the build
        let RedisSentinel {
            master_name,
            username: sentinel_user,
            password: sentinel_password,
            // Both read from the master, one of the nodes they may pick.
            latency_strategy: _,
            random_strategy: _,
            replica_strategy,
            use_disconnected_replicas,
        } = sentinel;
        let sentinel = match master_name.as_deref().map(str::trim) {
            Some("") => return Err(RedisError::Sentinel),
            Some(name) => Some(SentinelSettings {
                master_name: name.to_owned(),
                username: sentinel_user.clone(),
                password: sentinel_password.clone(),
                replica: *replica_strategy,
                disconnected_replicas: *use_disconnected_replicas,
            }),
            None if sentinel_user.is_some() || sentinel_password.is_some() => {
                return Err(RedisError::Sentinel);
            }
            None => None,
        };
        let root = super::root_key(root_key).ok_or(RedisError::RootKey)?;
        let tls = match tls {
            Some(tls) => Some(RedisTls {
                insecure: tls.insecure_skip_verify,
                certificates: certificates(tls)?,
            }),
            None => None,
        };
        let endpoints = super::endpoints(endpoints).ok_or(RedisError::NoEndpoint)?;
        let location = match &sentinel {
            Some(s) => format!(
                "redis+sentinel://{}/{}/{db}",
                endpoints.join(","),
                s.master_name
            ),
            None => format!("redis://{}/{db}", endpoints.join(",")),
        };
        let settings = RedisSettings {
            endpoints,
            tls,
            username: username.clone(),
            password: password.clone(),
            db: *db,
            location,
            timeout: CALL,
            sentinel,
        };
        let store = crate::store::open(settings).map_err(|e| match e {
            RedisSetupError::Endpoint(endpoint) => RedisError::Endpoint(endpoint),
            RedisSetupError::Client(e) => RedisError::Tls(e.to_string()),
        })?;
        Ok((store, root))
    }
}

/// The TLS files, read; None when TLS is off or needs none of them.
fn certificates(tls: &ProviderTls) -> Result<Option<TlsCertificates>, RedisError> {
    #[deny(unused_variables)] // an option read nowhere fails the build
    let ProviderTls {
        ca,
        cert,
        key,
        insecure_skip_verify: _, // RedisStore::new, for the address
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
        let nameless = RedisProvider {
            sentinel: RedisSentinel {
                password: Some("p".into()),
                ..RedisSentinel::default()
            },
            ..RedisProvider::default()
        };
        assert!(matches!(
            RedisStore::new(&nameless),
            Err(RedisError::Sentinel)
        ));
        let sentinel = RedisProvider {
            sentinel: RedisSentinel {
                master_name: Some("mymaster".into()),
                ..RedisSentinel::default()
            },
            ..RedisProvider::default()
        };
        let (store, _) = RedisStore::new(&sentinel).unwrap();
        assert_eq!(
            crate::store::Store::location(&store),
            "redis+sentinel://127.0.0.1:6379/mymaster/0"
        );
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
