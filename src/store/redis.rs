//! Redis as a [`Store`]: the KV provider's keys and the shared ACME
//! storage. Also what every Redis client of gangway's shares: reading the
//! keys under a pattern, escaping text into a glob, reading the server's
//! keyspace notification flags, and `host:port` endpoints.

use super::{Change, Changes, Lease, Listing, Store, StoreError, StoreSettings, Unreadable};
use ::redis::aio::MultiplexedConnection;
use ::redis::{
    AsyncConnectionConfig, Client, ConnectionAddr, IntoConnectionInfo, RedisConnectionInfo,
    RedisError, Script, TlsCertificates,
};
use futures_util::StreamExt as _;
use futures_util::future::BoxFuture;
use std::time::Duration;
use tokio::sync::Mutex;

/// Keys asked for in one `MGET`, so that one answer stays small.
const MGET_BATCH: usize = 500;

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

/// How to reach a Redis server: the first of `endpoints` that answers.
#[derive(Clone)]
pub struct RedisSettings {
    /// The servers, `host:port` or `[v6]:port`, tried in order.
    pub endpoints: Vec<String>,
    /// TLS towards the servers, when on.
    pub tls: Option<RedisTls>,
    /// The user name, if any.
    pub username: Option<String>,
    /// The password, if any.
    pub password: Option<String>,
    /// The database number.
    pub db: u32,
    /// Where the store is, for messages (no password).
    pub location: String,
    /// The longest a connection attempt or one command may take.
    pub timeout: Duration,
    /// Ask `endpoints`, as Redis Sentinels, where this master is, rather
    /// than connecting to them.
    pub sentinel: Option<SentinelSettings>,
}

/// Where a master is found through Redis Sentinel.
#[derive(Clone)]
pub struct SentinelSettings {
    /// The name the sentinels monitor the master under.
    pub master_name: String,
    /// The user to log in to the sentinels as.
    pub username: Option<String>,
    /// The password to log in to the sentinels with.
    pub password: Option<String>,
    /// Read from a replica rather than from the master.
    pub replica: bool,
    /// With `replica`, also replicas the sentinels see as disconnected.
    pub disconnected_replicas: bool,
}

/// TLS towards a Redis server.
#[derive(Clone)]
pub struct RedisTls {
    /// Accept any certificate the server shows.
    pub insecure: bool,
    /// A CA to trust and a client certificate, when given.
    pub certificates: Option<TlsCertificates>,
}

/// Why a Redis client cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum RedisSetupError {
    /// A server that is not `host:port`.
    #[error("`{0}` is not host:port")]
    Endpoint(String),
    /// Settings the client does not take.
    #[error("{0}")]
    Client(#[from] ::redis::RedisError),
}

/// A Redis server as a [`Store`]: plain keys, `SET NX PX` leases with a
/// fencing counter beside each (`<lease>:fence`, bumped by every lease
/// taken), and small Lua scripts for the compare-and-act steps, which
/// Redis runs atomically. The connection is made on first use and again
/// after a failure.
pub struct RedisStore {
    /// Each endpoint as written, with its client (with `sentinel`, the
    /// sentinels').
    clients: Vec<(String, Client)>,
    db: u32,
    location: String,
    timeout: Duration,
    /// With Sentinel: the master's name, and how to reach the server the
    /// sentinels name.
    sentinel: Option<(SentinelSettings, ServerSettings)>,
    /// The connection, and the client of the server it goes to.
    connection: Mutex<Option<(Client, MultiplexedConnection)>>,
}

/// How to log in to a server, for the one the sentinels name.
struct ServerSettings {
    redis: RedisConnectionInfo,
    tls: Option<RedisTls>,
}

impl StoreSettings for RedisSettings {
    type Store = RedisStore;
    type Error = RedisSetupError;

    fn into_store(self) -> Result<RedisStore, RedisSetupError> {
        #[deny(unused_variables)] // a setting read nowhere fails the build
        let RedisSettings {
            endpoints,
            tls,
            username,
            password,
            db,
            location,
            timeout,
            sentinel,
        } = self;
        let redis = login(
            RedisConnectionInfo::default().set_db(i64::from(db)),
            username.as_deref(),
            password.as_deref(),
        );
        // The sentinels are asked with their own credentials and no
        // database; the server they name gets the server's.
        let (first, sentinel) = match sentinel {
            Some(s) => {
                let asked = login(
                    RedisConnectionInfo::default(),
                    s.username.as_deref(),
                    s.password.as_deref(),
                );
                (
                    asked,
                    Some((
                        s,
                        ServerSettings {
                            redis,
                            tls: tls.clone(),
                        },
                    )),
                )
            }
            None => (redis, None),
        };
        let mut clients = Vec::new();
        for endpoint in endpoints {
            let (host, port) =
                host_port(&endpoint).ok_or_else(|| RedisSetupError::Endpoint(endpoint.clone()))?;
            clients.push((endpoint, client_for(host, port, &first, tls.as_ref())?));
        }
        Ok(RedisStore {
            clients,
            db,
            location,
            timeout,
            sentinel,
            connection: Mutex::new(None),
        })
    }
}

impl RedisStore {
    /// A connection to the server to use: the first endpoint that answers,
    /// or, with Sentinel, the server the first sentinel that answers names.
    /// Each endpoint tried, with why it failed, otherwise.
    async fn dial(&self) -> Result<(Client, MultiplexedConnection), Vec<(String, String)>> {
        let mut tried = Vec::new();
        for (endpoint, client) in &self.clients {
            let connection = client
                .get_multiplexed_async_connection_with_config(&self.config())
                .await;
            let mut connection = match connection {
                Ok(c) => c,
                Err(e) => {
                    tried.push((endpoint.clone(), e.to_string()));
                    continue;
                }
            };
            let Some((sentinel, server)) = &self.sentinel else {
                return Ok((client.clone(), connection));
            };
            match self
                .through_sentinel(&mut connection, sentinel, server)
                .await
            {
                Ok(found) => return Ok(found),
                Err(why) => tried.push((format!("sentinel {endpoint}"), why)),
            }
        }
        Err(tried)
    }

    /// Asks a sentinel for the master (or a replica), connects to it and
    /// makes sure it has the role the sentinel gave it: during a failover
    /// a sentinel may still name the old master.
    async fn through_sentinel(
        &self,
        asked: &mut MultiplexedConnection,
        sentinel: &SentinelSettings,
        server: &ServerSettings,
    ) -> Result<(Client, MultiplexedConnection), String> {
        let name = &sentinel.master_name;
        let (host, port, role) = if sentinel.replica {
            let replicas: Vec<std::collections::HashMap<String, String>> = ::redis::cmd("SENTINEL")
                .arg("REPLICAS")
                .arg(name)
                .query_async(asked)
                .await
                .map_err(|e| e.to_string())?;
            let usable = replicas.iter().find_map(|r| {
                let flags = r.get("flags").map_or("", String::as_str);
                let down = flags.split(',').any(|f| matches!(f, "s_down" | "o_down"));
                let disconnected = flags.split(',').any(|f| f == "disconnected")
                    || r.get("master-link-status").is_some_and(|s| s != "ok");
                if down || (disconnected && !sentinel.disconnected_replicas) {
                    return None;
                }
                Some((r.get("ip")?.clone(), r.get("port")?.parse::<u16>().ok()?))
            });
            let (host, port) =
                usable.ok_or_else(|| format!("no usable replica of master `{name}`"))?;
            (host, port, "slave")
        } else {
            let addr: Option<(String, u16)> = ::redis::cmd("SENTINEL")
                .arg("GET-MASTER-ADDR-BY-NAME")
                .arg(name)
                .query_async(asked)
                .await
                .map_err(|e| e.to_string())?;
            let (host, port) = addr.ok_or_else(|| format!("knows no master named `{name}`"))?;
            (host, port, "master")
        };
        let client = client_for(host.clone(), port, &server.redis, server.tls.as_ref())
            .map_err(|e| e.to_string())?;
        let mut connection = client
            .get_multiplexed_async_connection_with_config(&self.config())
            .await
            .map_err(|e| format!("{host}:{port}: {e}"))?;
        let answer: ::redis::Value = ::redis::cmd("ROLE")
            .query_async(&mut connection)
            .await
            .map_err(|e| format!("{host}:{port}: {e}"))?;
        let is = match &answer {
            ::redis::Value::Array(items) => match items.first() {
                Some(::redis::Value::BulkString(b)) => String::from_utf8_lossy(b).into_owned(),
                Some(::redis::Value::SimpleString(s)) => s.clone(),
                _ => String::new(),
            },
            _ => String::new(),
        };
        if is != role {
            return Err(format!(
                "{host}:{port}, named for `{name}`, is a {is}, not a {role} (a failover in progress?)"
            ));
        }
        tracing::info!(store = %self.location, master = %name, server = %format!("{host}:{port}"), role, "connected through Redis Sentinel");
        Ok((client, connection))
    }

    fn config(&self) -> AsyncConnectionConfig {
        AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.timeout))
            .set_response_timeout(Some(self.timeout))
    }

    fn failed(
        &self,
        action: &'static str,
        key: &str,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> StoreError {
        StoreError::Request {
            location: self.location.clone(),
            action,
            key: key.to_owned(),
            source: Box::new(source),
        }
    }

    /// The connection, made to the first endpoint that answers if there
    /// is none.
    async fn connection(
        &self,
        action: &'static str,
        key: &str,
    ) -> Result<MultiplexedConnection, StoreError> {
        let mut slot = self.connection.lock().await;
        if let Some((_, c)) = slot.as_ref() {
            return Ok(c.clone());
        }
        match self.dial().await {
            Ok((client, connection)) => {
                *slot = Some((client, connection.clone()));
                Ok(connection)
            }
            Err(tried) => Err(match tried.into_iter().last() {
                Some((_, why)) => self.failed(action, key, std::io::Error::other(why)),
                None => StoreError::Unreachable { tried: Vec::new() },
            }),
        }
    }

    /// Runs `cmd`; a failure that broke the connection drops it.
    async fn run<T: ::redis::FromRedisValue>(
        &self,
        action: &'static str,
        key: &str,
        cmd: &::redis::Cmd,
    ) -> Result<T, StoreError> {
        let mut connection = self.connection(action, key).await?;
        match cmd.query_async(&mut connection).await {
            Ok(v) => Ok(v),
            Err(e) => Err(self.fail(action, key, e).await),
        }
    }

    /// The error for `e`; one that broke the connection drops it, so the
    /// next call makes a new one.
    async fn fail(&self, action: &'static str, key: &str, e: RedisError) -> StoreError {
        if e.is_io_error() || e.is_timeout() || e.is_connection_dropped() {
            *self.connection.lock().await = None;
        }
        self.failed(action, key, e)
    }

    /// Runs the Lua `source` with `keys` and `args` (by its digest, loading
    /// it when the server does not know it yet); Redis runs it atomically.
    pub async fn script<T: ::redis::FromRedisValue>(
        &self,
        action: &'static str,
        source: &str,
        keys: &[&str],
        args: &[&[u8]],
    ) -> Result<T, StoreError> {
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

    /// Every key under `prefix`: SCAN and MGET, then TYPE for a key MGET
    /// found no string in.
    async fn list_prefix(&self, prefix: &str) -> Result<Listing, StoreError> {
        let pattern = format!("{}*", glob_escape(prefix));
        let mut connection = self.connection("listing", prefix).await?;
        let read = match scan_values(&mut connection, &pattern).await {
            Ok(read) => read,
            Err(e) => return Err(self.fail("listing", prefix, e).await),
        };
        let mut listing = Listing::default();
        for (key, value) in read {
            let Ok(text_key) = String::from_utf8(key.clone()) else {
                let name = String::from_utf8_lossy(&key).into_owned();
                listing.unreadable.push((name, Unreadable::KeyNotText));
                continue;
            };
            match value {
                Some(bytes) => listing.values.push((text_key, bytes)),
                // Gone since SCAN, or not a string: MGET answers nil for
                // both.
                None => {
                    let kind: String = self
                        .run(
                            "reading the type of",
                            &text_key,
                            ::redis::cmd("TYPE").arg(&key),
                        )
                        .await?;
                    if kind != "none" {
                        listing
                            .unreadable
                            .push((text_key, Unreadable::NotAString { kind }));
                    }
                }
            }
        }
        Ok(listing)
    }

    /// Subscribes to the keyspace notifications of the keys under
    /// `prefix`. A server that does not send them for string keys is asked
    /// to (`CONFIG SET notify-keyspace-events`, as Traefik's client does);
    /// one that refuses (a managed Redis) is polled: `None`.
    async fn subscribe(&self, prefix: &str) -> Result<Option<Changes>, StoreError> {
        let flags: Result<Vec<String>, StoreError> = self
            .run(
                "reading notify-keyspace-events for",
                prefix,
                ::redis::cmd("CONFIG")
                    .arg("GET")
                    .arg("notify-keyspace-events"),
            )
            .await;
        // A server that refuses CONFIG (a managed one) is polled.
        let flags = match flags {
            Ok(pair) => pair.into_iter().nth(1).unwrap_or_default(),
            Err(e) => {
                tracing::info!(
                    store = %self.location,
                    error = %e,
                    "cannot read the server's notify-keyspace-events; polling"
                );
                return Ok(None);
            }
        };
        if !notifies_changes(&flags) {
            // Traefik's client sets `KEA` and nothing else; the flags the
            // server had are kept beside them, so that other clients of the
            // same server lose no events they subscribed to.
            let wanted = format!("{flags}{NOTIFY_FLAGS}");
            let set: Result<(), StoreError> = self
                .run(
                    "asking for keyspace notifications for",
                    prefix,
                    ::redis::cmd("CONFIG")
                        .arg("SET")
                        .arg("notify-keyspace-events")
                        .arg(&wanted),
                )
                .await;
            match set {
                Ok(()) => tracing::info!(
                    store = %self.location,
                    before = %flags,
                    notify_keyspace_events = %wanted,
                    "asked the server for keyspace notifications"
                ),
                Err(e) => {
                    tracing::info!(
                        store = %self.location,
                        notify_keyspace_events = %flags,
                        error = %e,
                        "the server sends no keyspace notifications for string keys (notify-keyspace-events needs K and A, or K, g and $) and refuses to be asked; polling"
                    );
                    return Ok(None);
                }
            }
        }
        let client = self
            .connection
            .lock()
            .await
            .as_ref()
            .map(|(client, _)| client.clone());
        let Some(client) = client else {
            return Ok(None);
        };
        let pattern = format!("__keyspace@{}__:{}*", self.db, glob_escape(prefix));
        let timed_out = |_| {
            self.failed(
                "subscribing to",
                prefix,
                std::io::Error::from(std::io::ErrorKind::TimedOut),
            )
        };
        let mut pubsub = tokio::time::timeout(self.timeout, client.get_async_pubsub())
            .await
            .map_err(timed_out)?
            .map_err(|e| self.failed("subscribing to", prefix, e))?;
        tokio::time::timeout(self.timeout, pubsub.psubscribe(&pattern))
            .await
            .map_err(timed_out)?
            .map_err(|e| self.failed("subscribing to", prefix, e))?;
        let closed = futures_util::stream::once(async { Err(StoreError::NotificationsClosed) });
        let changes = pubsub
            .into_on_message()
            .map(|_| Ok(Change::Changed { revision: 0 }))
            .chain(closed);
        Ok(Some(changes.boxed()))
    }
}

/// `info` with a user and password, when given (empty is not given).
fn login(
    mut info: RedisConnectionInfo,
    username: Option<&str>,
    password: Option<&str>,
) -> RedisConnectionInfo {
    if let Some(user) = username.filter(|u| !u.is_empty()) {
        info = info.set_username(user);
    }
    if let Some(password) = password.filter(|p| !p.is_empty()) {
        info = info.set_password(password);
    }
    info
}

/// A client of the server at `host:port`.
fn client_for(
    host: String,
    port: u16,
    redis: &RedisConnectionInfo,
    tls: Option<&RedisTls>,
) -> Result<Client, RedisError> {
    let addr = match tls {
        Some(tls) => ConnectionAddr::TcpTls {
            host,
            port,
            insecure: tls.insecure,
            tls_params: None,
        },
        None => ConnectionAddr::Tcp(host, port),
    };
    let info = addr
        .into_connection_info()?
        .set_redis_settings(redis.clone());
    match tls.and_then(|t| t.certificates.clone()) {
        Some(c) => Client::build_with_tls(info, c),
        None => Client::open(info),
    }
}

fn millis(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1)
}

impl Store for RedisStore {
    fn location(&self) -> &str {
        &self.location
    }

    fn connect(&self) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async move {
            let mut slot = self.connection.lock().await;
            *slot = None;
            let found = self
                .dial()
                .await
                .map_err(|tried| StoreError::Unreachable { tried })?;
            *slot = Some(found);
            Ok(())
        })
    }

    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, StoreError>> {
        Box::pin(async move { self.run("reading", key, ::redis::cmd("GET").arg(key)).await })
    }

    fn put<'a>(
        &'a self,
        key: &'a str,
        value: &'a [u8],
        ttl: Option<Duration>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
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
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
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

    fn delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            self.run::<()>("removing", key, ::redis::cmd("DEL").arg(key))
                .await
        })
    }

    fn list<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<Listing, StoreError>> {
        Box::pin(self.list_prefix(prefix))
    }

    fn acquire<'a>(
        &'a self,
        key: &'a str,
        holder: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Option<Lease>, StoreError>> {
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
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
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

    fn release<'a>(&'a self, lease: &'a Lease) -> BoxFuture<'a, Result<(), StoreError>> {
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

    fn watch<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<Option<Changes>, StoreError>> {
        Box::pin(self.subscribe(prefix))
    }

    fn watch_is_complete(&self) -> bool {
        false
    }

    fn put_fenced<'a>(
        &'a self,
        lease: &'a Lease,
        key: &'a str,
        value: &'a [u8],
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
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

/// The `notify-keyspace-events` flags asked of a server that does not
/// announce changes: keyspace events (`K`), keyevent events (`E`), all
/// classes (`A`), as Traefik's client asks.
const NOTIFY_FLAGS: &str = "KEA";

/// Whether `notify-keyspace-events` flags announce every change to a
/// string key: keyspace events (`K`) of string commands (`$`) and generic
/// ones such as DEL and RENAME (`g`), or all of them (`A`).
pub fn notifies_changes(flags: &str) -> bool {
    flags.contains('K') && (flags.contains('A') || (flags.contains('g') && flags.contains('$')))
}

/// `host:port` or `[v6]:port`.
pub fn host_port(text: &str) -> Option<(String, u16)> {
    let (host, port) = text.rsplit_once(':')?;
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if host.is_empty() {
        return None;
    }
    Some((host.to_owned(), port.parse().ok()?))
}

/// The keys matching `pattern`, each once (SCAN may repeat a key), with
/// their values read by MGET in batches; a value is None for a key gone
/// since the SCAN or holding no string.
pub async fn scan_values(
    connection: &mut MultiplexedConnection,
    pattern: &str,
) -> Result<Vec<(Vec<u8>, Option<Vec<u8>>)>, ::redis::RedisError> {
    let mut keys: Vec<Vec<u8>> = Vec::new();
    let mut cursor: u64 = 0;
    loop {
        let (next, batch): (u64, Vec<Vec<u8>>) = ::redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(pattern)
            .arg("COUNT")
            .arg(MGET_BATCH)
            .query_async(connection)
            .await?;
        keys.extend(batch);
        if next == 0 {
            break;
        }
        cursor = next;
    }
    keys.sort();
    keys.dedup();
    let mut read = Vec::with_capacity(keys.len());
    for batch in keys.chunks(MGET_BATCH) {
        let values: Vec<Option<Vec<u8>>> = ::redis::cmd("MGET")
            .arg(batch)
            .query_async(connection)
            .await?;
        read.extend(batch.iter().cloned().zip(values));
    }
    Ok(read)
}

/// `text` with Redis glob characters escaped, for SCAN MATCH and
/// PSUBSCRIBE.
pub fn glob_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notifications_are_used_only_when_they_cover_string_keys() {
        assert!(notifies_changes("KA"));
        assert!(notifies_changes("AKE"));
        assert!(notifies_changes("Kg$"));
        assert!(!notifies_changes(""));
        assert!(!notifies_changes("EA"), "keyevent only");
        assert!(!notifies_changes("K$"), "no DEL");
    }

    #[test]
    fn endpoints_and_globs() {
        assert_eq!(
            host_port("127.0.0.1:6379"),
            Some(("127.0.0.1".into(), 6379))
        );
        assert_eq!(host_port("[::1]:6380"), Some(("::1".into(), 6380)));
        assert_eq!(host_port("redis"), None);
        assert_eq!(host_port(":6379"), None);
        assert_eq!(glob_escape("a*b/[x]"), "a\\*b/\\[x\\]");
    }
}
