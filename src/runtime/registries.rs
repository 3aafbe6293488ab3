//! State that must outlive a runtime swap, keyed by a stable identity:
//! connection pools and balancer positions. Compile looks entries up here
//! instead of creating them, so a swap resets nothing that did not change.

use crate::metrics::Stats;
use hyper::body::Incoming;
use hyper_util::client::legacy::{Client, connect::HttpConnector};
use hyper_util::rt::{TokioExecutor, TokioTimer};
use std::collections::HashMap;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// Settings of an upstream client; equal settings share one pool.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ClientSettings {
    /// Time allowed to connect.
    pub dial_timeout: Option<Duration>,
    /// Time allowed between sending a request and receiving its headers.
    pub response_header_timeout: Option<Duration>,
    /// How long idle keep-alive connections are kept.
    pub idle_conn_timeout: Option<Duration>,
    /// Idle connections kept per server.
    pub max_idle_per_host: usize,
}

/// Pooled clients towards servers: HTTP/1.1 (with upgrades) and HTTP/2
/// cleartext (gRPC), sharing one settings set.
pub struct UpstreamClient {
    /// Client for `http://` servers.
    pub http1: Client<HttpConnector, Incoming>,
    /// Client for `h2c://` servers: HTTP/2 with prior knowledge.
    pub h2c: Client<HttpConnector, Incoming>,
    /// Time allowed until the response headers arrive (None: unbounded, as Traefik).
    pub response_header_timeout: Option<Duration>,
}

impl UpstreamClient {
    fn new(settings: &ClientSettings) -> Self {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        connector.set_connect_timeout(settings.dial_timeout);
        connector.enforce_http(false);
        let mut builder = Client::builder(TokioExecutor::new());
        builder
            .timer(TokioTimer::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(settings.idle_conn_timeout)
            .pool_max_idle_per_host(settings.max_idle_per_host)
            .set_host(false);
        let http1 = builder.build(connector.clone());
        builder.http2_only(true);
        let h2c = builder.build(connector);
        Self {
            http1,
            h2c,
            response_header_timeout: settings.response_header_timeout,
        }
    }
}

/// The registries, shared by every compile for the life of the process.
#[derive(Default)]
pub struct Registries {
    clients: Mutex<HashMap<ClientSettings, Arc<UpstreamClient>>>,
    positions: Mutex<HashMap<String, Arc<AtomicUsize>>>,
    stats: Mutex<HashMap<(StatsKind, String), Arc<Stats>>>,
}

/// Which family a set of counters belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StatsKind {
    /// An entry point's.
    EntryPoint,
    /// A router's.
    Router,
    /// A service's.
    Service,
}

impl Registries {
    /// The client for these settings, created on first use.
    pub fn client(&self, settings: &ClientSettings) -> Arc<UpstreamClient> {
        let mut clients = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
        clients
            .entry(settings.clone())
            .or_insert_with(|| Arc::new(UpstreamClient::new(settings)))
            .clone()
    }

    /// The rotation position of a balancer, keyed by its service name and the
    /// shape of its server list, so an unchanged service keeps its place.
    pub fn position(&self, key: &str) -> Arc<AtomicUsize> {
        let mut positions = self
            .positions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        positions.entry(key.to_owned()).or_default().clone()
    }

    /// The counters of one object, created on first use and kept for the
    /// life of the process, so a configuration swap never resets them.
    pub fn stats(&self, kind: StatsKind, name: &str, bounds: &[f64]) -> Arc<Stats> {
        let mut stats = self.stats.lock().unwrap_or_else(PoisonError::into_inner);
        stats
            .entry((kind, name.to_owned()))
            .or_insert_with(|| Arc::new(Stats::new(bounds)))
            .clone()
    }

    /// Every set of counters, sorted by family and name, for `/metrics`.
    pub fn all_stats(&self) -> Vec<(StatsKind, String, Arc<Stats>)> {
        let stats = self.stats.lock().unwrap_or_else(PoisonError::into_inner);
        let mut all: Vec<_> = stats
            .iter()
            .map(|((k, n), s)| (*k, n.clone(), s.clone()))
            .collect();
        all.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        all
    }

    /// Drops state no longer referenced by any runtime (called after a swap).
    pub fn sweep(&self) {
        let mut positions = self
            .positions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        positions.retain(|_, p| Arc::strong_count(p) > 1);
        let mut clients = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
        clients.retain(|_, c| Arc::strong_count(c) > 1);
    }
}
