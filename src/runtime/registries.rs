//! State that must outlive a runtime swap, keyed by a stable identity:
//! connection pools, balancer positions and health-check state. Compile
//! looks entries up here instead of creating them, so a swap resets nothing
//! that did not change.

pub mod h2c;
mod keys;
pub mod pool;

pub use keys::{HealthKey, PositionKey, Shape, StateKey};

use crate::body::{RequestBody, UpstreamBody};
use crate::health::{CheckPlan, ServiceHealth, ServiceHealthReport, spawn_checker};
use crate::metrics::Stats;
use crate::runtime::ServerKind;
use http::uri::Authority;
use http::{Request, Response, Uri};
use hyper_rustls::{FixedServerNameResolver, HttpsConnector};
use hyper_util::client::legacy::{Client, connect::HttpConnector};
use hyper_util::rt::{TokioExecutor, TokioTimer};
use rustls::pki_types::ServerName;
use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

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
}

type Tls = HttpsConnector<Pinned>;

/// Connects to one server's address whatever authority the request URI
/// names. The URI can then carry the Host the server should see, which
/// HTTP/2 sends as `:authority` (there is no other way to set it), while the
/// pool and the connection stay this server's.
#[derive(Clone)]
pub struct Pinned {
    target: Uri,
    inner: HttpConnector,
}

impl tower_service::Service<Uri> for Pinned {
    type Response = <HttpConnector as tower_service::Service<Uri>>::Response;
    type Error = <HttpConnector as tower_service::Service<Uri>>::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, _dst: Uri) -> Self::Future {
        // Boxed: HttpConnector's future type is not nameable; this runs once
        // per new connection, not per request.
        Box::pin(self.inner.call(self.target.clone()))
    }
}

/// Pooled clients towards one server address, with one settings set:
/// HTTP/1.1 and HTTPS (HTTP/2 when the server offers it in ALPN), HTTP/2
/// cleartext (gRPC), and HTTPS with HTTP/1.1 only for upgrades such as
/// WebSocket.
pub struct UpstreamClient {
    /// Plain HTTP/1.1 without an upgrade: most requests.
    h1: Arc<pool::H1Pool>,
    main: Client<Tls, RequestBody>,
    /// h2c (gRPC): one multiplexed connection.
    h2c: Arc<h2c::H2cConn>,
    https_h1: Client<Tls, RequestBody>,
    /// Time allowed until the response headers arrive (None: unbounded, as Traefik).
    pub response_header_timeout: Option<Duration>,
    /// What the proxy's requests say about the server: kept here, where it
    /// outlives runtime swaps, because the client is per server address.
    pub passive: crate::health::PassiveHealth,
}

impl UpstreamClient {
    fn new(settings: &ClientSettings, server: &Authority) -> Result<Self, String> {
        let mut inner = HttpConnector::new();
        inner.set_nodelay(true);
        inner.set_connect_timeout(settings.dial_timeout);
        inner.enforce_http(false);
        let target = Uri::builder()
            .scheme("http")
            .authority(server.clone())
            .path_and_query("/")
            .build()
            .map_err(|e| format!("server address `{server}`: {e}"))?;
        let http = Pinned { target, inner };
        let mut builder = Client::builder(TokioExecutor::new());
        builder
            .timer(TokioTimer::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(settings.idle_conn_timeout)
            .pool_max_idle_per_host(settings.max_idle_per_host)
            .set_host(false);

        let https_h1 = builder.build(connector(&settings.tls, server, false, http.clone())?);
        let main = if settings.tls.disable_http2 {
            https_h1.clone()
        } else {
            builder.build(connector(&settings.tls, server, true, http)?)
        };
        let h2c = h2c::H2cConn::new(server, settings.dial_timeout, settings.idle_conn_timeout);
        let h1 = pool::H1Pool::new(
            server,
            settings.dial_timeout,
            settings.idle_conn_timeout,
            settings.max_idle_per_host,
        );
        Ok(Self {
            h1,
            main,
            h2c,
            https_h1,
            response_header_timeout: settings.response_header_timeout,
            passive: crate::health::PassiveHealth::default(),
        })
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
    ) -> Result<Response<UpstreamBody>, pool::SendError> {
        let sent = match kind {
            ServerKind::Http if !upgrade => {
                let (resp, checkin) = self.h1.send(req).await?;
                return Ok(resp.map(|b| UpstreamBody::pooled(b, Some(checkin))));
            }
            ServerKind::Http => self.main.request(*req),
            ServerKind::H2c => {
                let resp = self.h2c.send(*req).await?;
                return Ok(resp.map(UpstreamBody::H2c));
            }
            ServerKind::Https if upgrade => self.https_h1.request(*req),
            ServerKind::Https => self.main.request(*req),
        };
        Ok(sent.await?.map(|b| UpstreamBody::pooled(b, None)))
    }
}

/// The connector for `http://` and `https://` servers. ALPN offers `h2` and
/// `http/1.1` with `http2`, nothing otherwise (servers then speak HTTP/1.1).
/// TLS sends and verifies `serverName`, or the server URL's host (never the
/// client's Host, which the request URI carries).
fn connector(
    settings: &TlsSettings,
    server: &Authority,
    http2: bool,
    http: Pinned,
) -> Result<Tls, String> {
    let name = match settings.server_name.as_deref().filter(|n| !n.is_empty()) {
        Some(name) => ServerName::try_from(name.to_owned())
            .map_err(|_| format!("serverName `{name}` is not a valid DNS name or IP"))?,
        None => {
            let host = server.host().trim_start_matches('[').trim_end_matches(']');
            ServerName::try_from(host.to_owned())
                .map_err(|_| format!("`{host}` is not a valid DNS name or IP for TLS"))?
        }
    };
    let builder = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls_config(settings)?)
        .https_or_http()
        .with_server_name_resolver(FixedServerNameResolver::new(name));
    let builder = builder.enable_http1();
    Ok(if http2 {
        builder.enable_http2().wrap_connector(http)
    } else {
        builder.wrap_connector(http)
    })
}

/// The rustls client configuration `settings` describe: which server
/// certificates are accepted, and the client certificate offered.
fn tls_config(settings: &TlsSettings) -> Result<rustls::ClientConfig, String> {
    crate::tls::client::client_config(&crate::tls::client::ClientTls {
        insecure_skip_verify: settings.insecure_skip_verify,
        root_cas: &settings.root_cas,
        peer_cert_uri: settings.peer_cert_uri.as_deref(),
        certificates: &settings.certificates,
    })
}

struct HealthEntry {
    service: String,
    /// Registration order, so the API reports the newest state of a service.
    serial: u64,
    state: Weak<ServiceHealth>,
    plan: Arc<CheckPlan>,
    task: Option<tokio::task::AbortHandle>,
}

/// The registries, shared by every compile for the life of the process.
#[derive(Default)]
pub struct Registries {
    /// Certificates, challenge answers and TLS sessions.
    pub tls: crate::tls::TlsState,
    clients: Mutex<HashMap<(ClientSettings, Authority), Arc<UpstreamClient>>>,
    tls_clients: Mutex<HashMap<TlsSettings, Arc<rustls::ClientConfig>>>,
    open_clients: Mutex<HashMap<ClientSettings, Client<HttpConnector, RequestBody>>>,
    positions: Mutex<HashMap<PositionKey, Arc<AtomicUsize>>>,
    health: Mutex<HashMap<HealthKey, HealthEntry>>,
    serial: AtomicU64,
    epoch: Arc<AtomicU64>,
    states: Mutex<HashMap<StateKey, Arc<dyn Any + Send + Sync>>>,
    stats: Mutex<HashMap<(StatsKind, String), Arc<Stats>>>,
}

/// Which family a set of counters belongs to.
pub use crate::metrics::ObjectKind as StatsKind;

impl Registries {
    /// The client for the server at `server` with these settings, created
    /// on first use. Fails when the TLS settings are unusable (unreadable
    /// rootCAs, bad serverName).
    pub fn client(
        &self,
        settings: &ClientSettings,
        server: &Authority,
    ) -> Result<Arc<UpstreamClient>, String> {
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
    pub fn tls_client(&self, settings: &TlsSettings) -> Result<Arc<rustls::ClientConfig>, String> {
        let mut configs = self
            .tls_clients
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(c) = configs.get(settings) {
            return Ok(c.clone());
        }
        let config = Arc::new(tls_config(settings)?);
        configs.insert(settings.clone(), config.clone());
        Ok(config)
    }

    /// An HTTP/1.1 client with these settings that connects wherever a
    /// request's URI points (forwardAuth's authentication server), created
    /// on first use. Kept for the life of the process: there are as many as
    /// distinct transports, and a clone shares the pool.
    pub fn open_client(&self, settings: &ClientSettings) -> Client<HttpConnector, RequestBody> {
        let mut clients = self
            .open_clients
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        clients
            .entry(settings.clone())
            .or_insert_with(|| {
                let mut connector = HttpConnector::new();
                connector.set_nodelay(true);
                connector.set_connect_timeout(settings.dial_timeout);
                connector.enforce_http(false);
                Client::builder(TokioExecutor::new())
                    .timer(TokioTimer::new())
                    .pool_timer(TokioTimer::new())
                    .pool_idle_timeout(settings.idle_conn_timeout)
                    .pool_max_idle_per_host(settings.max_idle_per_host)
                    .set_host(false)
                    .build(connector)
            })
            .clone()
    }

    /// The rotation position of a balancer (or a mirror's counter), keyed by
    /// its service name and the shape of its members, so an unchanged
    /// service keeps its place.
    pub fn position(&self, key: &PositionKey) -> Arc<AtomicUsize> {
        let mut positions = self
            .positions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        positions.entry(key.to_owned()).or_default().clone()
    }

    /// The state kept for `key` (a middleware's router, qualified name and
    /// configuration: rate-limit buckets, in-flight counts, breaker state),
    /// made with `make` on first use. The same key gives the same state for
    /// as long as some runtime uses it, so an unrelated change resets nothing.
    pub fn state<T: Any + Send + Sync>(&self, key: &StateKey, make: impl FnOnce() -> T) -> Arc<T> {
        let mut states = self.states.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(found) = states.get(key).and_then(|s| s.clone().downcast::<T>().ok()) {
            return found;
        }
        let made = Arc::new(make());
        states.insert(key.to_owned(), made.clone());
        made
    }

    /// The counters of one object, created on first use and kept for the
    /// life of the process, so a configuration swap never resets them.
    pub fn stats(
        &self,
        kind: StatsKind,
        name: &str,
        exporter: &Arc<crate::metrics::Exporter>,
    ) -> Arc<Stats> {
        let mut stats = self.stats.lock().unwrap_or_else(PoisonError::into_inner);
        stats
            .entry((kind, name.to_owned()))
            .or_insert_with(|| Arc::new(exporter.stats(kind, name)))
            .clone()
    }

    /// The counters of an entry point carrying `transport`, kept as
    /// [`Registries::stats`] keeps an object's.
    pub fn entry_point_stats(
        &self,
        name: &str,
        transport: crate::metrics::Transport,
        exporter: &Arc<crate::metrics::Exporter>,
    ) -> Arc<Stats> {
        let mut stats = self.stats.lock().unwrap_or_else(PoisonError::into_inner);
        stats
            .entry((StatsKind::EntryPoint, name.to_owned()))
            .or_insert_with(|| Arc::new(exporter.entry_point_stats(name, transport)))
            .clone()
    }

    /// The process-wide health epoch: moves whenever any server changes
    /// between up and down, so balancers know to recompute.
    pub fn health_epoch(&self) -> Arc<AtomicU64> {
        self.epoch.clone()
    }

    /// The health state of a checked load balancer. `key` identifies the
    /// service with its check, servers and transport: the same key gives the
    /// same state (and keeps its checker running). A new key for a known
    /// service starts from that service's last known state per server URL.
    /// The checker itself starts at the next [`Registries::sweep`].
    pub fn health(
        &self,
        key: &HealthKey,
        service: &str,
        servers: &[(String, bool)],
        plan: CheckPlan,
    ) -> Arc<ServiceHealth> {
        let mut health = self.health.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(state) = health.get(key).and_then(|e| e.state.upgrade()) {
            return state;
        }
        let state = Arc::new(ServiceHealth::new(service, servers, self.epoch.clone()));
        let previous = health
            .values()
            .filter(|e| e.service == service)
            .max_by_key(|e| e.serial)
            .and_then(|e| e.state.upgrade());
        if let Some(previous) = previous {
            state.inherit(&previous);
        }
        let serial = self
            .serial
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let Some(old) = health.insert(
            key.to_owned(),
            HealthEntry {
                service: service.to_owned(),
                serial,
                state: Arc::downgrade(&state),
                plan: Arc::new(plan),
                task: None,
            },
        ) && let Some(task) = old.task
        {
            task.abort();
        }
        state
    }

    /// After a swap: drops state no runtime refers to any more (stopping its
    /// health checker) and starts the checkers of new health states. Needs a
    /// tokio runtime to start checkers; without one they start at a later
    /// sweep.
    pub fn sweep(&self) {
        self.states
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|_, s| Arc::strong_count(s) > 1);
        {
            let mut health = self.health.lock().unwrap_or_else(PoisonError::into_inner);
            health.retain(|_, e| {
                let alive = e.state.strong_count() > 0;
                if !alive && let Some(task) = e.task.take() {
                    task.abort();
                }
                alive
            });
            if tokio::runtime::Handle::try_current().is_ok() {
                for e in health.values_mut().filter(|e| e.task.is_none()) {
                    let task = spawn_checker(e.plan.clone(), e.state.clone());
                    e.task = Some(task.abort_handle());
                }
            }
        }
        let mut positions = self
            .positions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        positions.retain(|_, p| Arc::strong_count(p) > 1);
        let mut clients = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
        clients.retain(|_, c| Arc::strong_count(c) > 1);
        self.tls_clients
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|_, c| Arc::strong_count(c) > 1);
    }

    /// The health of every checked service still in use, by service name;
    /// serialisable for the API.
    pub fn health_report(&self) -> BTreeMap<String, ServiceHealthReport> {
        let health = self.health.lock().unwrap_or_else(PoisonError::into_inner);
        let mut newest: BTreeMap<&str, &HealthEntry> = BTreeMap::new();
        for e in health.values() {
            if e.state.strong_count() == 0 {
                continue;
            }
            let slot = newest.entry(e.service.as_str()).or_insert(e);
            if e.serial > slot.serial {
                *slot = e;
            }
        }
        newest
            .into_iter()
            .filter_map(|(name, e)| Some((name.to_owned(), e.state.upgrade()?.report())))
            .collect()
    }
}

impl Drop for Registries {
    fn drop(&mut self) {
        let health = self
            .health
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        for e in health.values_mut() {
            if let Some(task) = e.task.take() {
                task.abort();
            }
        }
    }
}
