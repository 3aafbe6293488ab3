//! Everything that connects out to servers: the upstream HTTP client (a lean
//! HTTP/1.1 pool, one h2c connection, hyper-util's client with rustls for
//! `https://` and upgrades), the TLS client configuration, what the proxy's
//! own requests say about a server (passive health), and the TCP dial.
//!
//! The proxy, forwardAuth and the health checks all send through an
//! [`UpstreamClient`]: one per servers transport and server address, kept in
//! [`Clients`] so that a configuration swap keeps its connections; inside,
//! one set of connections per worker thread.
//!
//! This room uses `config` and `body`, nothing that routes: the runtime
//! holds clients, the client never looks at the runtime.

pub mod control;
pub mod h2c;
pub mod https;
pub mod passive;
pub mod pool;
pub mod tcp;
pub mod tls;

pub use passive::PassiveHealth;
pub use pool::SendError;

use crate::body::{RequestBody, UpstreamBody};
use http::uri::{Authority, Scheme};
use http::{Request, Response};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

/// Traefik's default `pingTimeout`: how long an HTTP/2 PING's answer may
/// take.
pub const PING_TIMEOUT: Duration = Duration::from_secs(15);

/// How gangway speaks to a server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ServerKind {
    /// `http://`: HTTP/1.1 with keep-alive.
    Http,
    /// `h2c://`: HTTP/2 cleartext with prior knowledge (gRPC).
    H2c,
    /// `https://`: TLS, HTTP/2 when the server offers it in ALPN.
    Https,
}

impl ServerKind {
    /// The URI scheme requests to this kind of server carry.
    pub fn scheme(self) -> Scheme {
        match self {
            ServerKind::Https => Scheme::HTTPS,
            ServerKind::Http | ServerKind::H2c => Scheme::HTTP,
        }
    }
}

/// Why a client or a TLS client configuration could not be made; each
/// variant says what to fix in the servers transport (or the provider's
/// `tls` options).
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server's `host:port` makes no URI.
    #[error("server address `{server}`: {source}")]
    BadAddress {
        /// The address.
        server: Authority,
        /// Why it makes no URI.
        source: http::Error,
    },
    /// `serverName` is neither a DNS name nor an IP address.
    #[error("serverName `{name}` is not a valid DNS name or IP")]
    BadServerName {
        /// The name as configured.
        name: String,
    },
    /// The server's host cannot be verified by TLS.
    #[error("`{host}` is not a valid DNS name or IP for TLS")]
    BadTlsHost {
        /// The host, without brackets.
        host: String,
    },
    /// A provider's `tls` options give a certificate without its key or
    /// the other way round.
    #[error("give both cert and key for a client certificate")]
    HalfCertificate,
    /// rustls refused the protocol versions or the verifier.
    #[error("TLS setup: {0}")]
    Setup(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// A PEM file that cannot be read.
    #[error("{what}: cannot read `{entry}`: {source}")]
    Unreadable {
        /// The option naming it (`rootCAs`, `certificates.certFile`, …).
        what: &'static str,
        /// The path as configured.
        entry: String,
        /// Why it cannot be read.
        source: std::io::Error,
    },
    /// The client certificate's chain does not parse.
    #[error("certificates.certFile: {0}")]
    CertFile(#[source] rustls::pki_types::pem::Error),
    /// The client certificate's file holds no certificate.
    #[error("certificates.certFile holds no PEM certificate")]
    NoCertificate,
    /// The client certificate's key does not parse.
    #[error("certificates.keyFile: {0}")]
    KeyFile(#[source] rustls::pki_types::pem::Error),
    /// rustls refused the client certificate and its key.
    #[error("certificates: {0}")]
    ClientCertificate(#[source] rustls::Error),
    /// A `minVersion` or `maxVersion` gangway cannot speak or does not know.
    #[error("{option}: `{value}` {reason}")]
    Version {
        /// `minVersion` or `maxVersion`.
        option: &'static str,
        /// The version as configured.
        value: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// `minVersion` above `maxVersion`.
    #[error("minVersion `{min}` is above maxVersion `{max}`")]
    VersionRange {
        /// The lowest version as configured.
        min: String,
        /// The highest version as configured.
        max: String,
    },
    /// A `cipherSuites` name rustls does not implement.
    #[error(
        "cipherSuites: `{name}` is not a cipher suite gangway offers (TLS 1.2 suites with ECDHE and AES-GCM or ChaCha20-Poly1305, and TLS 1.3's, which are always on)"
    )]
    CipherSuite {
        /// The name as configured.
        name: String,
    },
    /// A CA in `rootCAs` that does not parse or is refused.
    #[error("rootCAs: {what}: {source}")]
    RootCa {
        /// `inline PEM` or the quoted path.
        what: String,
        /// Why it was not taken.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// An entry of `rootCAs` without a certificate.
    #[error("rootCAs: {what} holds no PEM certificate")]
    NoRootCa {
        /// `inline PEM` or the quoted path.
        what: String,
    },
}

/// Settings of an upstream client; equal settings share one pool.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct ClientSettings {
    /// Time allowed to connect.
    pub dial_timeout: Option<Duration>,
    /// Time allowed between sending a request and receiving its headers.
    pub response_header_timeout: Option<Duration>,
    /// How long idle keep-alive connections are kept.
    pub idle_conn_timeout: Option<Duration>,
    /// Idle connections kept per server.
    pub max_idle_per_host: usize,
    /// HTTP/2: a PING after this long without a frame from the server
    /// (`readIdleTimeout`); None: no pings.
    pub read_idle_timeout: Option<Duration>,
    /// HTTP/2: how long a PING's answer may take (`pingTimeout`); None:
    /// Traefik's 15s.
    pub ping_timeout: Option<Duration>,
    /// How `https://` servers are verified and spoken to.
    pub tls: TlsSettings,
}

/// TLS towards `https://` servers.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct TlsSettings {
    /// Accept any certificate (no chain or name verification).
    pub insecure_skip_verify: bool,
    /// CAs to trust instead of the built-in roots: PEM file paths or PEM text.
    pub root_cas: Vec<String>,
    /// Name sent as SNI and verified in the certificate, instead of the URL's host.
    pub server_name: Option<String>,
    /// Offer only HTTP/1.1 in ALPN.
    pub disable_http2: bool,
    /// Client certificates offered to servers that ask for one (mTLS):
    /// chain and key, each a PEM file path or PEM text.
    pub certificates: Vec<(String, String)>,
    /// A URI the server certificate's subject alternative names must hold;
    /// checked instead of the server's name (the chain still is).
    pub peer_cert_uri: Option<String>,
    /// TLS 1.2 cipher suites offered, by IANA name; empty: all of them.
    pub cipher_suites: Vec<String>,
    /// Lowest version, as Traefik names it (`VersionTLS12`); None: TLS 1.2.
    pub min_version: Option<String>,
    /// Highest version (`VersionTLS13`); None: TLS 1.3.
    pub max_version: Option<String>,
}

/// Pooled clients towards one server address, with one settings set:
/// HTTP/1.1 and HTTPS (HTTP/2 when the server offers it in ALPN), HTTP/2
/// cleartext (gRPC), and HTTPS with HTTP/1.1 only for upgrades such as
/// WebSocket. Each worker (`crate::worker`) sends through connections of
/// its own, made on its first request, so that a request and its upstream
/// connection stay on one thread; what the requests say about the server
/// (`passive`) is shared.
pub struct UpstreamClient {
    /// One set of pools per worker, and the last one for the main runtime
    /// (health checks, HTTP/3); each made on first use.
    shards: Box<[OnceLock<Shard>]>,
    /// What a shard is made with.
    maker: ShardMaker,
    /// Time allowed until the response headers arrive (None: unbounded, as Traefik).
    pub response_header_timeout: Option<Duration>,
    /// What the proxy's requests say about the server: kept here, where it
    /// outlives runtime swaps, because the client is per server address.
    pub passive: PassiveHealth,
}

/// One worker's connections to the server.
struct Shard {
    /// Plain HTTP/1.1 without an upgrade: most requests.
    h1: Arc<pool::H1Pool>,
    main: https::HttpsClient,
    /// h2c (gRPC): one multiplexed connection.
    h2c: Arc<h2c::H2cConn>,
    https_h1: https::HttpsClient,
}

/// The settings a shard is made with, checked once.
struct ShardMaker {
    server: Authority,
    settings: ClientSettings,
    connectors: https::Connectors,
}

impl ShardMaker {
    fn shard(&self) -> Shard {
        let (main, https_h1) = self.connectors.clients();
        Shard {
            h1: pool::H1Pool::new(
                &self.server,
                self.settings.dial_timeout,
                self.settings.idle_conn_timeout,
                self.settings.max_idle_per_host,
            ),
            main,
            h2c: h2c::H2cConn::new(&self.server, &self.settings),
            https_h1,
        }
    }
}

impl UpstreamClient {
    fn new(settings: &ClientSettings, server: &Authority) -> Result<Self, ClientError> {
        let maker = ShardMaker {
            server: server.clone(),
            settings: settings.clone(),
            connectors: https::Connectors::new(settings, server)?,
        };
        Ok(Self {
            shards: (0..=crate::worker::count())
                .map(|_| OnceLock::new())
                .collect(),
            maker,
            response_header_timeout: settings.response_header_timeout,
            passive: PassiveHealth::default(),
        })
    }

    /// The current worker's connections, made on its first request.
    fn shard(&self) -> &Shard {
        let slot = crate::worker::slot().min(self.shards.len() - 1);
        self.shards[slot].get_or_init(|| self.maker.shard())
    }

    /// Sends `req` to this client's server, speaking `kind`. The URI is
    /// absolute (origin form for plain HTTP/1.1, which gangway's own pool
    /// sends); its authority is what the server sees as the request's
    /// authority (HTTP/2), not where it goes. `upgrade` requests to HTTPS
    /// servers go over HTTP/1.1, which can upgrade.
    pub async fn send(
        &self,
        kind: ServerKind,
        upgrade: bool,
        req: Box<Request<RequestBody>>,
    ) -> Result<Response<UpstreamBody>, SendError> {
        let shard = self.shard();
        let sent = match kind {
            ServerKind::Http if !upgrade => {
                let (resp, checkin) = shard.h1.send(req).await?;
                return Ok(resp.map(|b| UpstreamBody::pooled(b, Some(checkin))));
            }
            ServerKind::Http => shard.main.request(*req),
            ServerKind::H2c => {
                let resp = shard.h2c.send(*req).await?;
                return Ok(resp.map(UpstreamBody::H2c));
            }
            ServerKind::Https if upgrade => shard.https_h1.request(*req),
            ServerKind::Https => shard.main.request(*req),
        };
        Ok(sent.await?.map(|b| UpstreamBody::pooled(b, None)))
    }
}

/// The clients and TLS client configurations in use, shared by every
/// compile for the life of the process: equal settings towards the same
/// server get the same client, so a swap keeps its connections.
#[derive(Default)]
pub struct Clients {
    clients: Mutex<HashMap<(ClientSettings, Authority), Arc<UpstreamClient>>>,
    tls_clients: Mutex<HashMap<TlsSettings, Arc<rustls::ClientConfig>>>,
}

impl Clients {
    /// The client for the server at `server` with these settings, created
    /// on first use. Fails when the TLS settings are unusable (unreadable
    /// rootCAs, bad serverName).
    pub fn client(
        &self,
        settings: &ClientSettings,
        server: &Authority,
    ) -> Result<Arc<UpstreamClient>, ClientError> {
        let mut clients = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
        let key = (settings.clone(), server.clone());
        if let Some(c) = clients.get(&key) {
            return Ok(c.clone());
        }
        let client = Arc::new(UpstreamClient::new(settings, server)?);
        clients.insert(key, client.clone());
        Ok(client)
    }

    /// The TLS client configuration for `settings` (TLS towards TCP
    /// servers), made on first use. Fails when the settings are unusable
    /// (unreadable rootCAs or certificates).
    pub fn tls_client(
        &self,
        settings: &TlsSettings,
    ) -> Result<Arc<rustls::ClientConfig>, ClientError> {
        let mut configs = self
            .tls_clients
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(c) = configs.get(settings) {
            return Ok(c.clone());
        }
        let config = Arc::new(https::tls_config(settings)?);
        configs.insert(settings.clone(), config.clone());
        Ok(config)
    }

    /// Drops the clients and configurations no runtime refers to any more.
    pub fn sweep(&self) {
        self.clients
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|_, c| Arc::strong_count(c) > 1);
        self.tls_clients
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|_, c| Arc::strong_count(c) > 1);
    }
}
