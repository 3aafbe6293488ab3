//! ACME storage shared by several gangway instances through a store they
//! all reach (Redis or etcd): the account, the certificates, the pending
//! challenge answers and one lease per certificate, so that exactly one
//! instance orders it and every instance serves it.
//!
//! Keys, under the store's prefix (`gangway` unless the URL says another):
//!
//! ```text
//! <prefix>/acme/<CA>/accounts/<email or ->   the account key (JSON)
//! <prefix>/acme/<CA>/certs/<main>_<hash>     key and chain of a certificate (JSON)
//! <prefix>/acme/<CA>/leases/<main>_<hash>    who is ordering it (expires)
//! <prefix>/acme/<CA>/failures/<main>_<hash>  the last failed order and its retry time (expires)
//! <prefix>/acme/<CA>/generation              changes whenever a certificate is written
//! <prefix>/acme/challenges/http-01/<token>   an HTTP-01 key authorization (expires)
//! <prefix>/acme/challenges/tls-alpn-01/<name> a TLS-ALPN-01 certificate (JSON, expires)
//! ```

pub mod seal;

use crate::store::etcd::{EtcdError, EtcdSettings};
use crate::store::redis::{RedisSettings, RedisSetupError, RedisTls};
use crate::store::{Change, Lease, Store, StoreError};
use futures_util::StreamExt as _;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;

/// How long a pending challenge answer lives in the store if the order
/// that wrote it never removes it.
pub const CHALLENGE_TTL: Duration = Duration::from_secs(600);

/// Why the shared storage cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SharedError {
    /// A storage URL gangway cannot read.
    #[error("certificatesResolvers.{resolver}.acme.storage: `{url}`: {problem}")]
    BadUrl {
        /// The resolver.
        resolver: String,
        /// The URL, its password hidden.
        url: String,
        /// What is wrong, and what is expected.
        problem: UrlProblem,
    },
    /// The store could not be reached, refused a request or answered
    /// what it should not.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A stored value that cannot be read as what its key should hold.
    #[error("store {location}: `{key}` holds {problem}")]
    BadValue {
        /// Where the store is.
        location: String,
        /// The key.
        key: String,
        /// What is wrong with it.
        problem: ValueProblem,
    },
    /// The encryption key file cannot be used.
    #[error("certificatesResolvers.{resolver}.acme.storageEncryptionKeyFile `{path}`: {problem}")]
    KeyFile {
        /// The resolver.
        resolver: String,
        /// The file.
        path: String,
        /// What is wrong.
        problem: String,
    },
    /// A sealed value that the key file's key does not open.
    #[error("store {location}: `{key}` is encrypted and {problem}")]
    Sealed {
        /// Where the store is.
        location: String,
        /// The key.
        key: String,
        /// Why it cannot be opened.
        problem: &'static str,
    },
}

/// What is wrong with a store URL, and what is expected.
#[derive(Debug, thiserror::Error)]
pub enum UrlProblem {
    /// No `scheme://`.
    #[error("not a URL")]
    NotUrl,
    /// A scheme that names no store gangway has.
    #[error("the scheme must be redis://, rediss://, etcd:// or etcds:// (or give a folder path)")]
    Scheme,
    /// A server that is not `host:port`.
    #[error("`{host}` is not host:port")]
    NotHostPort {
        /// The server as written.
        host: String,
    },
    /// No server at all.
    #[error("no server is named (for example 127.0.0.1:6379)")]
    NoServer,
    /// Several servers in a `redis://` URL.
    #[error("name one Redis server (Sentinel and Cluster are not supported)")]
    SeveralRedisServers,
    /// A `redis://` path that is not a database number.
    #[error("the path of a redis:// URL is the database number")]
    RedisDatabase,
    /// A query parameter other than `prefix`.
    #[error("unknown parameter `{pair}` (only prefix=…)")]
    UnknownParameter {
        /// The parameter as written.
        pair: String,
    },
    /// The Redis client refused the settings.
    #[error("{0}")]
    Redis(Box<RedisSetupError>),
    /// The etcd client refused the settings.
    #[error("{0}")]
    Etcd(Box<EtcdError>),
}

/// What a stored value holds instead of what its key should hold.
#[derive(Debug, thiserror::Error)]
pub enum ValueProblem {
    /// A stored key with neither a clear nor a sealed private key.
    #[error("no private key")]
    NoPrivateKey,
    /// An account key value that is not the expected JSON.
    #[error("no account key: {0}")]
    NoAccountKey(serde_json::Error),
    /// An account key that is not PKCS#8 PEM.
    #[error("no PKCS#8 key: {0}")]
    NoPkcs8Key(rustls::pki_types::pem::Error),
    /// The account key another instance created was gone when read.
    #[error("an account key that vanished")]
    AccountKeyVanished,
    /// A certificate value that is not the expected JSON.
    #[error("no certificate: {0}")]
    NoCertificate(serde_json::Error),
}

/// Every stored certificate by key: what it holds and its key and chain
/// PEM, or why it cannot be read.
pub type StoredCerts = Vec<(String, Result<(StoredCert, Vec<u8>), SharedError>)>;

/// One item per change of a watched key; ends when the store's connection
/// does.
pub type Announcements = futures_util::stream::BoxStream<'static, ()>;

/// Where a storage URL points, for refusing two resolvers that would
/// write the same keys.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct StoreSpot {
    /// `redis` or `etcd`.
    pub kind: &'static str,
    /// Servers, database and prefix, normalised.
    pub place: String,
}

/// A parsed storage URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreUrl {
    /// `redis` or `etcd`.
    pub kind: &'static str,
    /// The servers, `host:port`.
    pub endpoints: Vec<String>,
    /// TLS towards the servers (`rediss://`, `etcds://`).
    pub tls: bool,
    /// User name, if any.
    pub username: Option<String>,
    /// Password, if any.
    pub password: Option<String>,
    /// Redis' database number.
    pub db: u32,
    /// The key prefix.
    pub prefix: String,
}

impl StoreUrl {
    /// Whether a storage setting is a store URL rather than a path.
    pub fn is_url(storage: &str) -> bool {
        storage.contains("://")
    }

    /// Reads `redis://[user:password@]host:port[/db][?prefix=p]`,
    /// `rediss://…` (TLS), `etcd://[user:password@]host:port[,host:port…][/prefix]`
    /// and `etcds://…` (TLS). `resolver` names the resolver in errors.
    pub fn parse(resolver: &str, url: &str) -> Result<StoreUrl, SharedError> {
        let bad = |problem: UrlProblem| SharedError::BadUrl {
            resolver: resolver.to_owned(),
            url: hide_password(url),
            problem,
        };
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| bad(UrlProblem::NotUrl))?;
        let (kind, tls) = match scheme.to_ascii_lowercase().as_str() {
            "redis" => ("redis", false),
            "rediss" => ("redis", true),
            "etcd" => ("etcd", false),
            "etcds" => ("etcd", true),
            _ => {
                return Err(bad(UrlProblem::Scheme));
            }
        };
        let (rest, query) = match rest.split_once('?') {
            Some((r, q)) => (r, Some(q)),
            None => (rest, None),
        };
        let (authority, path) = match rest.split_once('/') {
            Some((a, p)) => (a, p.trim_matches('/')),
            None => (rest, ""),
        };
        let (userinfo, hosts) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        let (username, password) = match userinfo {
            Some(u) => {
                let (user, pass) = u.split_once(':').unwrap_or((u, ""));
                (
                    Some(crate::percent::decode_lenient(user)).filter(|s| !s.is_empty()),
                    Some(crate::percent::decode_lenient(pass)).filter(|s| !s.is_empty()),
                )
            }
            None => (None, None),
        };
        let mut endpoints = Vec::new();
        for host in hosts.split(',').filter(|h| !h.is_empty()) {
            let default_port = if kind == "redis" { 6379 } else { 2379 };
            let with_port = if host.rsplit_once(':').is_some_and(|(_, p)| {
                !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) && !host.ends_with(']')
            }) {
                host.to_owned()
            } else {
                format!("{host}:{default_port}")
            };
            let port_ok = with_port
                .rsplit_once(':')
                .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok_and(|p| p > 0));
            if !port_ok {
                return Err(bad(UrlProblem::NotHostPort {
                    host: host.to_owned(),
                }));
            }
            endpoints.push(with_port);
        }
        if endpoints.is_empty() {
            return Err(bad(UrlProblem::NoServer));
        }
        if kind == "redis" && endpoints.len() > 1 {
            return Err(bad(UrlProblem::SeveralRedisServers));
        }
        let mut prefix = String::from("gangway");
        let mut db = 0;
        if kind == "redis" {
            if !path.is_empty() {
                db = path.parse().map_err(|_| bad(UrlProblem::RedisDatabase))?;
            }
        } else if !path.is_empty() {
            prefix = path.to_owned();
        }
        for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("prefix", p)) if !p.trim_matches('/').is_empty() => {
                    prefix = p.trim_matches('/').to_owned();
                }
                _ => {
                    return Err(bad(UrlProblem::UnknownParameter {
                        pair: pair.to_owned(),
                    }));
                }
            }
        }
        Ok(StoreUrl {
            kind,
            endpoints,
            tls,
            username,
            password,
            db,
            prefix,
        })
    }

    /// Where the keys land: two resolvers with the same spot and CA would
    /// write the same keys.
    pub fn spot(&self) -> StoreSpot {
        let mut endpoints = self.endpoints.clone();
        endpoints.sort();
        StoreSpot {
            kind: self.kind,
            place: format!("{}/{}/{}", endpoints.join(","), self.db, self.prefix),
        }
    }

    /// The store's address for messages and the API, with no password.
    pub fn location(&self) -> String {
        let scheme = match (self.kind, self.tls) {
            ("redis", false) => "redis",
            ("redis", true) => "rediss",
            (_, false) => "etcd",
            (_, true) => "etcds",
        };
        let path = if self.kind == "redis" {
            format!("/{}", self.db)
        } else {
            String::new()
        };
        format!(
            "{scheme}://{}{path} (prefix `{}`)",
            self.endpoints.join(","),
            self.prefix
        )
    }

    /// A client for the store; nothing is connected yet.
    pub fn open(&self, timeout: Duration) -> Result<Arc<dyn Store>, SharedError> {
        let bad = |problem: UrlProblem| SharedError::BadUrl {
            resolver: String::new(),
            url: self.location(),
            problem,
        };
        if self.kind == "redis" {
            let settings = RedisSettings {
                endpoints: self.endpoints.iter().take(1).cloned().collect(),
                tls: self.tls.then_some(RedisTls {
                    insecure: false,
                    certificates: None,
                }),
                username: self.username.clone(),
                password: self.password.clone(),
                db: self.db,
                location: self.location(),
                timeout,
                sentinel: None,
            };
            let store =
                crate::store::open(settings).map_err(|e| bad(UrlProblem::Redis(Box::new(e))))?;
            return Ok(Arc::new(store));
        }
        let scheme = if self.tls { "https" } else { "http" };
        let endpoints = self
            .endpoints
            .iter()
            .map(|e| format!("{scheme}://{e}"))
            .collect();
        let auth = self
            .username
            .clone()
            .map(|u| (u, self.password.clone().unwrap_or_default()));
        let settings = EtcdSettings {
            endpoints,
            auth,
            tls: None,
            timeout,
            location: self.location(),
        };
        let store = crate::store::open(settings).map_err(|e| bad(UrlProblem::Etcd(Box::new(e))))?;
        Ok(Arc::new(store))
    }
}

/// `redis://user:secret@host` → `redis://user:***@host`.
pub fn hide_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rsplit_once('@') {
        Some((userinfo, _)) if userinfo.contains(':') => {
            let user = userinfo.split_once(':').map_or(userinfo, |(u, _)| u);
            let at = rest[..authority_end].rfind('@').unwrap_or(0);
            format!("{scheme}://{user}:***{}", &rest[at..])
        }
        _ => url.to_owned(),
    }
}

/// A private key as stored: in clear, or sealed with the key file's key.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct StoredKey {
    /// The key's PEM, when stored in clear.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The key's PEM sealed (AES-256-GCM, base64), when a key file is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sealed_key: Option<String>,
}

/// A certificate as stored: names, chain in clear, private key apart.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredCert {
    /// Its names, main name first.
    pub domains: Vec<String>,
    /// The chain's PEM.
    pub chain: String,
    /// The private key.
    #[serde(flatten)]
    pub key: StoredKey,
    /// The instance that ordered it.
    #[serde(default)]
    pub ordered_by: String,
}

/// A failed order as stored, so that the cluster backs off as one.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Failure {
    /// Failed orders in a row, across the instances.
    pub failures: u32,
    /// No instance orders again before this, seconds since the epoch.
    pub retry_at: i64,
    /// Why the last one failed.
    pub error: String,
    /// The instance that placed it.
    pub instance: String,
}

/// One resolver's view of the shared store for one CA.
pub struct SharedStorage {
    store: Arc<dyn Store>,
    url: StoreUrl,
    /// `<prefix>/acme/<CA>`.
    base: String,
    /// `<prefix>/acme/challenges`.
    challenges: String,
    seal: Option<seal::Seal>,
}

impl std::fmt::Debug for SharedStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedStorage")
            .field("location", &self.url.location())
            .field("base", &self.base)
            .field("encrypted", &self.seal.is_some())
            .finish_non_exhaustive()
    }
}

impl SharedStorage {
    /// The storage of `url` for the CA folder `ca`, sealing private keys
    /// with `seal` when given.
    pub fn new(store: Arc<dyn Store>, url: StoreUrl, ca: &str, seal: Option<seal::Seal>) -> Self {
        SharedStorage {
            base: format!("{}/acme/{ca}", url.prefix),
            challenges: format!("{}/acme/challenges", url.prefix),
            store,
            url,
            seal,
        }
    }

    /// The store's address, no password.
    pub fn location(&self) -> String {
        self.url.location()
    }

    /// `redis` or `etcd`.
    pub fn kind(&self) -> &'static str {
        self.url.kind
    }

    /// Where its keys land.
    pub fn spot(&self) -> StoreSpot {
        self.url.spot()
    }

    /// Whether private keys are sealed.
    pub fn encrypted(&self) -> bool {
        self.seal.is_some()
    }

    /// The key of a certificate (`certs/<name>`).
    pub fn cert_key(&self, name: &str) -> String {
        format!("{}/certs/{name}", self.base)
    }

    /// The key of a certificate's lease.
    pub fn lease_key(&self, name: &str) -> String {
        format!("{}/leases/{name}", self.base)
    }

    fn failure_key(&self, name: &str) -> String {
        format!("{}/failures/{name}", self.base)
    }

    /// Records that an order of `name` failed: every instance waits until
    /// `retry_at` (seconds since the epoch) before ordering it again.
    pub async fn put_failure(&self, name: &str, failure: &Failure) -> Result<(), SharedError> {
        let now = crate::clock::unix_time();
        let ttl = Duration::from_secs(u64::try_from(failure.retry_at - now).unwrap_or(0).max(1));
        let value = serde_json::to_vec(failure).unwrap_or_default();
        self.store
            .put(&self.failure_key(name), &value, Some(ttl))
            .await
            .map_err(SharedError::from)
    }

    /// The last failed order of `name`, while its retry time is ahead.
    pub async fn failure(&self, name: &str) -> Result<Option<Failure>, SharedError> {
        let Some(value) = self.store.get(&self.failure_key(name)).await? else {
            return Ok(None);
        };
        Ok(serde_json::from_slice::<Failure>(&value)
            .ok()
            .filter(|f| f.retry_at > crate::clock::unix_time()))
    }

    /// Forgets a failed order (the certificate was obtained).
    pub async fn clear_failure(&self, name: &str) -> Result<(), SharedError> {
        self.store
            .delete(&self.failure_key(name))
            .await
            .map_err(SharedError::from)
    }

    fn generation_key(&self) -> String {
        format!("{}/generation", self.base)
    }

    fn http_key(&self, token: &str) -> String {
        format!("{}/http-01/{token}", self.challenges)
    }

    fn alpn_key(&self, domain: &str) -> String {
        format!(
            "{}/tls-alpn-01/{}",
            self.challenges,
            domain.to_ascii_lowercase()
        )
    }

    /// A stored value at `key` that does not hold what the key should.
    fn unreadable(&self, key: &str, problem: ValueProblem) -> SharedError {
        SharedError::BadValue {
            location: self.location(),
            key: key.to_owned(),
            problem,
        }
    }

    /// Seals (or not) a private key's PEM stored at `key`.
    fn stored_key(&self, key: &str, pem: &str) -> StoredKey {
        match &self.seal {
            Some(seal) => StoredKey {
                key: None,
                sealed_key: Some(seal.seal(key, pem.as_bytes())),
            },
            None => StoredKey {
                key: Some(pem.to_owned()),
                sealed_key: None,
            },
        }
    }

    /// The private key's PEM of a stored value at `key`.
    fn open_key(&self, key: &str, stored: &StoredKey) -> Result<String, SharedError> {
        let sealed_error = |problem| SharedError::Sealed {
            location: self.location(),
            key: key.to_owned(),
            problem,
        };
        match (&stored.key, &stored.sealed_key, &self.seal) {
            (Some(pem), _, _) => Ok(pem.clone()),
            (None, Some(sealed), Some(seal)) => seal
                .open(key, sealed)
                .and_then(|b| String::from_utf8(b).ok())
                .ok_or_else(|| sealed_error("the storageEncryptionKeyFile's key does not open it")),
            (None, Some(_), None) => Err(sealed_error(
                "no storageEncryptionKeyFile is set to open it",
            )),
            (None, None, _) => Err(self.unreadable(key, ValueProblem::NoPrivateKey)),
        }
    }

    /// The account key (PKCS#8 DER) for `email`: the stored one, or a new
    /// one stored unless another instance stored one first (then that one).
    pub async fn account_key(&self, email: &str) -> Result<Vec<u8>, SharedError> {
        use rustls::pki_types::PrivatePkcs8KeyDer;
        use rustls::pki_types::pem::PemObject;
        let name = if email.is_empty() { "-" } else { email };
        let key = format!("{}/accounts/{}", self.base, name.replace('/', "_"));
        let read = |bytes: Vec<u8>| -> Result<Vec<u8>, SharedError> {
            let stored: StoredKey = serde_json::from_slice(&bytes)
                .map_err(|e| self.unreadable(&key, ValueProblem::NoAccountKey(e)))?;
            let pem = self.open_key(&key, &stored)?;
            PrivatePkcs8KeyDer::from_pem_slice(pem.as_bytes())
                .map(|k| k.secret_pkcs8_der().to_vec())
                .map_err(|e| self.unreadable(&key, ValueProblem::NoPkcs8Key(e)))
        };
        if let Some(bytes) = self.store.get(&key).await? {
            return read(bytes);
        }
        let der = super::key::account_key();
        let pem = super::storage::pem_block("PRIVATE KEY", &der);
        let value = serde_json::to_vec(&self.stored_key(&key, &pem)).unwrap_or_default();
        if self.store.create(&key, &value).await? {
            return Ok(der);
        }
        match self.store.get(&key).await? {
            Some(bytes) => read(bytes),
            None => Err(self.unreadable(&key, ValueProblem::AccountKeyVanished)),
        }
    }

    /// Every stored certificate: its key and the key and chain PEM as one
    /// (key first), or why it cannot be read.
    pub async fn certificates(&self) -> Result<StoredCerts, SharedError> {
        let prefix = format!("{}/certs/", self.base);
        let mut out = Vec::new();
        for (key, value) in self.store.list(&prefix).await?.values {
            let parsed = serde_json::from_slice::<StoredCert>(&value)
                .map_err(|e| self.unreadable(&key, ValueProblem::NoCertificate(e)))
                .and_then(|cert| {
                    let mut pem = self.open_key(&key, &cert.key)?;
                    pem.push_str(&cert.chain);
                    Ok((cert, pem.into_bytes()))
                });
            out.push((key, parsed));
        }
        Ok(out)
    }

    /// One stored certificate, as [`SharedStorage::certificates`] gives it.
    pub async fn certificate(
        &self,
        name: &str,
    ) -> Result<Option<(StoredCert, Vec<u8>)>, SharedError> {
        self.read_pem(&self.cert_key(name)).await
    }

    /// The certificate stored at `key`, with its key (opened if sealed)
    /// and chain as PEM.
    async fn read_pem(&self, key: &str) -> Result<Option<(StoredCert, Vec<u8>)>, SharedError> {
        let Some(value) = self.store.get(key).await? else {
            return Ok(None);
        };
        let cert: StoredCert = serde_json::from_slice(&value)
            .map_err(|e| self.unreadable(key, ValueProblem::NoCertificate(e)))?;
        let mut pem = self.open_key(key, &cert.key)?;
        pem.push_str(&cert.chain);
        Ok(Some((cert, pem.into_bytes())))
    }

    /// Stores a certificate (`pem`: key, then chain) while `lease` holds;
    /// false if the lease was lost meanwhile (nothing is written then).
    pub async fn save_certificate(
        &self,
        lease: &Lease,
        name: &str,
        domains: &[String],
        pem: &[u8],
        holder: &str,
    ) -> Result<bool, SharedError> {
        let text = String::from_utf8_lossy(pem);
        let (key_pem, chain) = split_key(&text);
        let key = self.cert_key(name);
        let stored = StoredCert {
            domains: domains.to_vec(),
            chain: chain.to_owned(),
            key: self.stored_key(&key, key_pem),
            ordered_by: holder.to_owned(),
        };
        let value = serde_json::to_vec(&stored).unwrap_or_default();
        if !self.store.put_fenced(lease, &key, &value).await? {
            return Ok(false);
        }
        self.bump().await?;
        Ok(true)
    }

    /// Marks that certificates changed, for the other instances.
    async fn bump(&self) -> Result<(), SharedError> {
        let mark = format!("{:x}", rand_u64());
        self.store
            .put(&self.generation_key(), mark.as_bytes(), None)
            .await
            .map_err(SharedError::from)
    }

    /// The current generation mark (changes with every certificate written).
    pub async fn generation(&self) -> Result<Option<Vec<u8>>, SharedError> {
        self.store
            .get(&self.generation_key())
            .await
            .map_err(SharedError::from)
    }

    /// Changes of the generation mark, where the store announces them.
    pub async fn watch_generation(&self) -> Result<Option<Announcements>, SharedError> {
        let Some(changes) = self.store.watch(&self.generation_key()).await? else {
            return Ok(None);
        };
        // Lost changes, or an error, end the announcements: the mark is
        // read again, and watched again, as when the connection ends.
        let announced = changes
            .take_while(|c| std::future::ready(matches!(c, Ok(Change::Changed { .. }))))
            .map(drop);
        Ok(Some(announced.boxed()))
    }

    /// Takes the lease for a certificate's order.
    pub async fn acquire(
        &self,
        name: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<Option<Lease>, SharedError> {
        self.store
            .acquire(&self.lease_key(name), holder, ttl)
            .await
            .map_err(SharedError::from)
    }

    /// Who holds a certificate's lease now, if anyone (`<holder>#<token>`).
    pub async fn lease_holder(&self, name: &str) -> Result<Option<String>, SharedError> {
        Ok(self
            .store
            .get(&self.lease_key(name))
            .await?
            .map(|v| String::from_utf8_lossy(&v).into_owned()))
    }

    /// Extends a lease; false if it is lost.
    pub async fn renew(&self, lease: &Lease, ttl: Duration) -> Result<bool, SharedError> {
        self.store
            .renew(lease, ttl)
            .await
            .map_err(SharedError::from)
    }

    /// Gives a lease up.
    pub async fn release(&self, lease: &Lease) -> Result<(), SharedError> {
        self.store.release(lease).await.map_err(SharedError::from)
    }

    /// Publishes an HTTP-01 answer for every instance.
    pub async fn put_http(&self, token: &str, key_auth: &str) -> Result<(), SharedError> {
        self.store
            .put(
                &self.http_key(token),
                key_auth.as_bytes(),
                Some(CHALLENGE_TTL),
            )
            .await
            .map_err(SharedError::from)
    }

    /// An HTTP-01 answer another instance published.
    pub async fn http(&self, token: &str) -> Result<Option<String>, SharedError> {
        Ok(self
            .store
            .get(&self.http_key(token))
            .await?
            .map(|v| String::from_utf8_lossy(&v).into_owned()))
    }

    /// Removes an HTTP-01 answer.
    pub async fn remove_http(&self, token: &str) -> Result<(), SharedError> {
        self.store
            .delete(&self.http_key(token))
            .await
            .map_err(SharedError::from)
    }

    /// Publishes a TLS-ALPN-01 certificate (`cert_pem`, `key_pem`).
    pub async fn put_tls_alpn(
        &self,
        domain: &str,
        cert_pem: &str,
        key_pem: &str,
    ) -> Result<(), SharedError> {
        let key = self.alpn_key(domain);
        let stored = StoredCert {
            domains: vec![domain.to_owned()],
            chain: cert_pem.to_owned(),
            key: self.stored_key(&key, key_pem),
            ordered_by: String::new(),
        };
        let value = serde_json::to_vec(&stored).unwrap_or_default();
        self.store
            .put(&key, &value, Some(CHALLENGE_TTL))
            .await
            .map_err(SharedError::from)
    }

    /// A TLS-ALPN-01 certificate another instance published: key, then
    /// certificate, as PEM.
    pub async fn tls_alpn(&self, domain: &str) -> Result<Option<Vec<u8>>, SharedError> {
        let read = self.read_pem(&self.alpn_key(domain)).await?;
        Ok(read.map(|(_, pem)| pem))
    }

    /// Removes a TLS-ALPN-01 certificate.
    pub async fn remove_tls_alpn(&self, domain: &str) -> Result<(), SharedError> {
        self.store
            .delete(&self.alpn_key(domain))
            .await
            .map_err(SharedError::from)
    }
}

/// The private key block of a key-then-chain PEM, and the rest.
fn split_key(pem: &str) -> (&str, &str) {
    const END: &str = "PRIVATE KEY-----";
    let Some(begin) = pem.find("-----BEGIN") else {
        return ("", pem);
    };
    match pem[begin..].find("-----END").and_then(|end| {
        let after = begin + end;
        pem[after..].find(END).map(|i| after + i + END.len())
    }) {
        Some(end) => {
            let end = pem[end..]
                .find(|c: char| c != '\n' && c != '\r')
                .map_or(pem.len(), |i| end + i);
            (&pem[..end], &pem[end..])
        }
        None => ("", pem),
    }
}

/// A random number, for marks and instance names.
pub fn rand_u64() -> u64 {
    use ring::rand::SecureRandom as _;
    let mut bytes = [0u8; 8];
    let _ = ring::rand::SystemRandom::new().fill(&mut bytes);
    u64::from_le_bytes(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_urls_are_read_with_their_defaults() {
        let u = StoreUrl::parse("le", "redis://127.0.0.1:6390/2").unwrap();
        assert_eq!(
            (u.kind, u.endpoints.clone(), u.db, u.prefix.as_str(), u.tls),
            (
                "redis",
                vec!["127.0.0.1:6390".to_owned()],
                2,
                "gangway",
                false
            )
        );
        let u = StoreUrl::parse("le", "rediss://:s%40cret@cache?prefix=edge").unwrap();
        assert_eq!(u.endpoints, vec!["cache:6379".to_owned()]);
        assert_eq!(
            (u.password.as_deref(), u.prefix.as_str(), u.tls),
            (Some("s@cret"), "edge", true)
        );
        let u = StoreUrl::parse("le", "etcd://a:2379,b/cluster/one").unwrap();
        assert_eq!(u.endpoints, vec!["a:2379".to_owned(), "b:2379".to_owned()]);
        assert_eq!(u.prefix, "cluster/one");
        assert_eq!(
            StoreUrl::parse("le", "etcd://b,a:2379/cluster/one/")
                .unwrap()
                .spot(),
            u.spot(),
            "the same servers and prefix are the same place"
        );
        for (bad, says) in [
            ("http://x", "scheme"),
            ("redis://", "no server"),
            ("redis://x/zero", "database number"),
            ("redis://x:99999", "host:port"),
            ("redis://a,b", "one Redis server"),
            ("etcd://x?ttl=3", "unknown parameter"),
        ] {
            let e = StoreUrl::parse("le", bad).unwrap_err().to_string();
            assert!(
                e.contains(says) && e.starts_with("certificatesResolvers.le.acme.storage"),
                "{bad}: {e}"
            );
        }
        assert!(StoreUrl::is_url("redis://x") && !StoreUrl::is_url("acme"));
    }

    #[test]
    fn passwords_never_reach_messages() {
        assert_eq!(
            hide_password("redis://u:secret@h:1/0"),
            "redis://u:***@h:1/0"
        );
        assert_eq!(hide_password("redis://h:1/0"), "redis://h:1/0");
        let e = StoreUrl::parse("le", "ftp://u:secret@h").unwrap_err();
        assert!(!e.to_string().contains("secret"), "{e}");
        let u = StoreUrl::parse("le", "redis://u:secret@h").unwrap();
        assert!(!u.location().contains("secret"), "{}", u.location());
    }

    #[test]
    fn the_key_block_is_split_from_the_chain() {
        let pem = "-----BEGIN PRIVATE KEY-----\nAAA\n-----END PRIVATE KEY-----\n-----BEGIN CERTIFICATE-----\nBBB\n-----END CERTIFICATE-----\n";
        let (key, chain) = split_key(pem);
        assert_eq!(
            key,
            "-----BEGIN PRIVATE KEY-----\nAAA\n-----END PRIVATE KEY-----\n"
        );
        assert!(chain.starts_with("-----BEGIN CERTIFICATE-----"));
        assert_eq!(split_key("no pem").0, "");
    }
}
