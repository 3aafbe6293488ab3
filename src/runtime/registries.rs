//! State that must outlive a runtime swap, keyed by a stable identity:
//! the clients towards servers (`client::Clients`), balancer positions and
//! health-check state. Compile looks entries up here instead of creating
//! them, so a swap resets nothing that did not change.

mod keys;

pub use keys::{HealthKey, PositionKey, Shape, StateKey};

use crate::client::{ClientError, ClientSettings, Clients, TlsSettings, UpstreamClient};
use crate::health::{CheckPlan, ServiceHealth, ServiceHealthReport, spawn_checker};
use crate::metrics::Stats;
use http::uri::Authority;
use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::sync::{Arc, Mutex, PoisonError, Weak};

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
    /// The clients towards servers and the TLS client configurations.
    pub clients: Clients,
    positions: Mutex<HashMap<PositionKey, Arc<AtomicUsize>>>,
    health: Mutex<HashMap<HealthKey, HealthEntry>>,
    serial: AtomicU64,
    epoch: Arc<AtomicU64>,
    states: Mutex<HashMap<StateKey, Arc<dyn Any + Send + Sync>>>,
    /// Keyed by kind, name and (for routers) the service, which is a label
    /// of a router's series.
    stats: Mutex<HashMap<StatsKey, Arc<Stats>>>,
}

/// Kind, name and (for routers) service of one set of counters.
type StatsKey = (StatsKind, String, Option<String>);

/// Which family a set of counters belongs to.
pub use crate::metrics::ObjectKind as StatsKind;

impl Registries {
    /// The client for the server at `server` with these settings, created
    /// on first use (see [`Clients::client`]).
    pub fn client(
        &self,
        settings: &ClientSettings,
        server: &Authority,
    ) -> Result<Arc<UpstreamClient>, ClientError> {
        self.clients.client(settings, server)
    }

    /// The TLS client configuration for `settings`, made on first use (see
    /// [`Clients::tls_client`]).
    pub fn tls_client(
        &self,
        settings: &TlsSettings,
    ) -> Result<Arc<rustls::ClientConfig>, ClientError> {
        self.clients.tls_client(settings)
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

    /// Like [`Registries::state`], for state whose type the caller has
    /// already erased: the same key gives the same state for as long as
    /// some runtime holds it.
    pub fn kept(
        &self,
        key: &StateKey,
        make: impl FnOnce() -> Arc<dyn Any + Send + Sync>,
    ) -> Arc<dyn Any + Send + Sync> {
        let mut states = self.states.lock().unwrap_or_else(PoisonError::into_inner);
        states.entry(key.to_owned()).or_insert_with(make).clone()
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
            .entry((kind, name.to_owned(), None))
            .or_insert_with(|| Arc::new(exporter.stats(kind, name)))
            .clone()
    }

    /// The counters of router `name` while it sends to `service`, kept as
    /// [`Registries::stats`] keeps an object's.
    pub fn router_stats(
        &self,
        name: &str,
        service: &str,
        exporter: &Arc<crate::metrics::Exporter>,
    ) -> Arc<Stats> {
        let mut stats = self.stats.lock().unwrap_or_else(PoisonError::into_inner);
        stats
            .entry((StatsKind::Router, name.to_owned(), Some(service.to_owned())))
            .or_insert_with(|| Arc::new(exporter.router_stats(name, service)))
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
            .entry((StatsKind::EntryPoint, name.to_owned(), None))
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
        {
            let mut states = self.states.lock().unwrap_or_else(PoisonError::into_inner);
            states.retain(|_, s| Arc::strong_count(s) > 1);
            for state in states.values() {
                if let Some(checker) = state.downcast_ref::<crate::health::tcp::TcpChecker>() {
                    checker.start();
                }
                if let Some(bouncer) = state.downcast_ref::<crate::middleware::crowdsec::Shared>() {
                    bouncer.start();
                }
            }
        }
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
        self.clients.sweep();
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

impl crate::overload::KeepGates for Registries {
    fn keep_gate(
        &self,
        service: &str,
        limits: crate::overload::Limits,
        make: impl FnOnce() -> crate::overload::Gate,
    ) -> Arc<crate::overload::Gate> {
        let key = StateKey::ServiceGate {
            service: service.to_owned(),
            max_concurrent: limits.max_concurrent,
            queue_timeout: limits.queue_timeout,
        };
        self.state(&key, make)
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
