//! The shared ACME storage on Redis: plain keys, `SET NX PX` leases with a
//! fencing counter beside each (`<lease>:fence`, bumped by every lease
//! taken), and small Lua scripts for the compare-and-act steps, which
//! Redis runs atomically.

use super::{Changes, KvStore, Lease, Pairs, SharedError, StoreUrl};
use crate::store::redis::{glob_escape, scan_values};
use ::redis::aio::MultiplexedConnection;
use ::redis::{
    AsyncConnectionConfig, Client, ConnectionAddr, IntoConnectionInfo, RedisConnectionInfo,
    RedisError, Script,
};
use futures_util::StreamExt as _;
use futures_util::future::BoxFuture;
use std::time::Duration;
use tokio::sync::Mutex;

/// Extends the lease if it is still ours.
const RENEW: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0";

/// Removes the lease if it is still ours.
const RELEASE: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0";

/// Writes KEYS[2] only while the lease KEYS[1] is ours.
const PUT_FENCED: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[2], ARGV[2])
  return 1
end
return 0";

/// One Redis server; the connection is made on first use and again after
/// a failure.
pub struct RedisKv {
    client: Client,
    db: u32,
    location: String,
    timeout: Duration,
    connection: Mutex<Option<MultiplexedConnection>>,
}

impl RedisKv {
    pub fn new(url: &StoreUrl, timeout: Duration) -> Result<Self, SharedError> {
        let endpoint = url.endpoints.first().cloned().unwrap_or_default();
        let location = url.location();
        let bad = |problem: String| SharedError::BadUrl {
            resolver: String::new(),
            url: location.clone(),
            problem,
        };
        let (host, port) = endpoint
            .rsplit_once(':')
            .and_then(|(h, p)| Some((h.trim_matches(['[', ']']).to_owned(), p.parse().ok()?)))
            .ok_or_else(|| bad(format!("`{endpoint}` is not host:port")))?;
        let addr = if url.tls {
            ConnectionAddr::TcpTls {
                host,
                port,
                insecure: false,
                tls_params: None,
            }
        } else {
            ConnectionAddr::Tcp(host, port)
        };
        let mut settings = RedisConnectionInfo::default().set_db(i64::from(url.db));
        if let Some(user) = &url.username {
            settings = settings.set_username(user);
        }
        if let Some(password) = &url.password {
            settings = settings.set_password(password);
        }
        let info = addr
            .into_connection_info()
            .map_err(|e| bad(e.to_string()))?
            .set_redis_settings(settings);
        let client = Client::open(info).map_err(|e| bad(e.to_string()))?;
        Ok(RedisKv {
            client,
            db: url.db,
            location,
            timeout,
            connection: Mutex::new(None),
        })
    }

    fn failed(
        &self,
        action: &'static str,
        key: &str,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> SharedError {
        SharedError::Store {
            location: self.location.clone(),
            action,
            key: key.to_owned(),
            source: Box::new(source),
        }
    }

    /// The connection, made if there is none.
    async fn connection(
        &self,
        action: &'static str,
        key: &str,
    ) -> Result<MultiplexedConnection, SharedError> {
        let mut slot = self.connection.lock().await;
        if let Some(c) = slot.as_ref() {
            return Ok(c.clone());
        }
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.timeout))
            .set_response_timeout(Some(self.timeout));
        let connection = self
            .client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(|e| self.failed(action, key, e))?;
        *slot = Some(connection.clone());
        Ok(connection)
    }

    /// Runs `cmd`; a failure that broke the connection drops it.
    async fn run<T: ::redis::FromRedisValue>(
        &self,
        action: &'static str,
        key: &str,
        cmd: &::redis::Cmd,
    ) -> Result<T, SharedError> {
        let mut connection = self.connection(action, key).await?;
        match cmd.query_async(&mut connection).await {
            Ok(v) => Ok(v),
            Err(e) => Err(self.fail(action, key, e).await),
        }
    }

    /// The error for `e`; one that broke the connection drops it, so the
    /// next call makes a new one.
    async fn fail(&self, action: &'static str, key: &str, e: RedisError) -> SharedError {
        if e.is_io_error() || e.is_timeout() || e.is_connection_dropped() {
            *self.connection.lock().await = None;
        }
        self.failed(action, key, e)
    }

    async fn script<T: ::redis::FromRedisValue>(
        &self,
        action: &'static str,
        source: &str,
        keys: &[&str],
        args: &[&[u8]],
    ) -> Result<T, SharedError> {
        let key = keys.first().copied().unwrap_or_default();
        let mut connection = self.connection(action, key).await?;
        let script = Script::new(source);
        let mut invocation = script.prepare_invoke();
        for k in keys {
            invocation.key(*k);
        }
        for a in args {
            invocation.arg(*a);
        }
        match invocation.invoke_async(&mut connection).await {
            Ok(v) => Ok(v),
            Err(e) => {
                *self.connection.lock().await = None;
                Err(self.failed(action, key, e))
            }
        }
    }
}

fn millis(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1)
}

impl KvStore for RedisKv {
    fn location(&self) -> &str {
        &self.location
    }

    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, SharedError>> {
        Box::pin(async move { self.run("reading", key, ::redis::cmd("GET").arg(key)).await })
    }

    fn put<'a>(
        &'a self,
        key: &'a str,
        value: &'a [u8],
        ttl: Option<Duration>,
    ) -> BoxFuture<'a, Result<(), SharedError>> {
        Box::pin(async move {
            let mut cmd = ::redis::cmd("SET");
            cmd.arg(key).arg(value);
            if let Some(ttl) = ttl {
                cmd.arg("PX").arg(millis(ttl));
            }
            self.run::<()>("writing", key, &cmd).await
        })
    }

    fn create<'a>(
        &'a self,
        key: &'a str,
        value: &'a [u8],
    ) -> BoxFuture<'a, Result<bool, SharedError>> {
        Box::pin(async move {
            let set: Option<String> = self
                .run(
                    "writing",
                    key,
                    ::redis::cmd("SET").arg(key).arg(value).arg("NX"),
                )
                .await?;
            Ok(set.is_some())
        })
    }

    fn delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), SharedError>> {
        Box::pin(async move {
            self.run::<()>("removing", key, ::redis::cmd("DEL").arg(key))
                .await
        })
    }

    fn list<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<Pairs, SharedError>> {
        Box::pin(async move {
            let pattern = format!("{}*", glob_escape(prefix));
            let mut connection = self.connection("listing", prefix).await?;
            let read = match scan_values(&mut connection, &pattern).await {
                Ok(read) => read,
                Err(e) => return Err(self.fail("listing", prefix, e).await),
            };
            // gangway writes text keys only; another kind is not its own.
            let out = read
                .into_iter()
                .filter_map(|(k, v)| Some((String::from_utf8(k).ok()?, v?)))
                .collect();
            Ok(out)
        })
    }

    fn acquire<'a>(
        &'a self,
        key: &'a str,
        holder: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Option<Lease>, SharedError>> {
        Box::pin(async move {
            let fence = format!("{key}:fence");
            let token: u64 = self
                .run("taking the lease", key, ::redis::cmd("INCR").arg(&fence))
                .await?;
            let mark = format!("{holder}#{token}");
            let set: Option<String> = self
                .run(
                    "taking the lease",
                    key,
                    ::redis::cmd("SET")
                        .arg(key)
                        .arg(&mark)
                        .arg("NX")
                        .arg("PX")
                        .arg(millis(ttl)),
                )
                .await?;
            Ok(set.map(|_| Lease {
                key: key.to_owned(),
                mark,
                token,
                etcd_lease: 0,
            }))
        })
    }

    fn renew<'a>(
        &'a self,
        lease: &'a Lease,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<bool, SharedError>> {
        Box::pin(async move {
            let ttl = millis(ttl).to_string();
            let renewed: i64 = self
                .script(
                    "renewing the lease",
                    RENEW,
                    &[&lease.key],
                    &[lease.mark.as_bytes(), ttl.as_bytes()],
                )
                .await?;
            Ok(renewed == 1)
        })
    }

    fn release<'a>(&'a self, lease: &'a Lease) -> BoxFuture<'a, Result<(), SharedError>> {
        Box::pin(async move {
            self.script::<i64>(
                "releasing the lease",
                RELEASE,
                &[&lease.key],
                &[lease.mark.as_bytes()],
            )
            .await
            .map(drop)
        })
    }

    fn watch<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Changes>, SharedError>> {
        Box::pin(self.subscribe(key))
    }

    fn put_fenced<'a>(
        &'a self,
        lease: &'a Lease,
        key: &'a str,
        value: &'a [u8],
    ) -> BoxFuture<'a, Result<bool, SharedError>> {
        Box::pin(async move {
            let written: i64 = self
                .script(
                    "writing",
                    PUT_FENCED,
                    &[&lease.key, key],
                    &[lease.mark.as_bytes(), value],
                )
                .await?;
            Ok(written == 1)
        })
    }
}

impl RedisKv {
    /// Subscribes to `key`'s keyspace notifications if the server sends
    /// them for string keys.
    async fn subscribe(&self, key: &str) -> Result<Option<Changes>, SharedError> {
        let flags: Result<Vec<String>, SharedError> = self
            .run(
                "reading notify-keyspace-events for",
                key,
                ::redis::cmd("CONFIG")
                    .arg("GET")
                    .arg("notify-keyspace-events"),
            )
            .await;
        // A server that refuses CONFIG (a managed one) is polled.
        let flags = flags
            .ok()
            .and_then(|f| f.into_iter().nth(1))
            .unwrap_or_default();
        if !crate::store::redis::notifies_changes(&flags) {
            return Ok(None);
        }
        let channel = format!("__keyspace@{}__:{key}", self.db);
        let timed_out = |_| {
            self.failed(
                "subscribing to",
                key,
                std::io::Error::from(std::io::ErrorKind::TimedOut),
            )
        };
        let mut pubsub = tokio::time::timeout(self.timeout, self.client.get_async_pubsub())
            .await
            .map_err(timed_out)?
            .map_err(|e| self.failed("subscribing to", key, e))?;
        tokio::time::timeout(self.timeout, pubsub.subscribe(&channel))
            .await
            .map_err(timed_out)?
            .map_err(|e| self.failed("subscribing to", key, e))?;
        Ok(Some(pubsub.into_on_message().map(drop).boxed()))
    }
}
