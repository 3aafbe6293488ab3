//! Idle services sleep and wake: a container (or a group of them) whose
//! `gangway.sleep.idle` passes without a request is stopped, and the first
//! request to one of its services starts it again.
//!
//! The room owns the decisions; the providers own Docker. Each provider
//! (Docker's containers, Swarm's services) reports, at every rebuild, each
//! sleeping unit's members, whether they run and which services they serve
//! (`Sleeper::update`), and hands over an `Engine` that starts and stops
//! them while it is connected; a unit is woken and put to sleep by its own
//! provider's engine. The proxy asks, per request to such a service, whether it must wait
//! (`Sleeper::enter`, `Visit::ready`), and keeps a `Visit` for as long as
//! the request, its answer or its upgraded connection is open, so an open
//! WebSocket or stream keeps the unit awake.
//!
//! Correctness: one start per wake-up (every waiting request shares one
//! watch channel); a failed start is remembered with a growing backoff
//! instead of being retried by each request; nothing is stopped before the
//! provider is connected (no engine) or while its connection is lost.

pub mod claim;
pub mod spec;

pub use claim::Claim;
pub use spec::{Mode, SleepError, SleepSpec, parse_sleep_labels};

use futures_util::future::BoxFuture;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::{Semaphore, watch};

/// Wake-ups running at once; more wait for a turn, so that a burst of
/// requests to many sleeping services does not start every container of
/// the host at the same moment.
pub const MAX_CONCURRENT_WAKES: usize = 4;
/// Requests held per unit while it wakes; more are answered 503 at once,
/// which bounds the memory a flood to a sleeping service can take.
pub const MAX_HELD: usize = 1024;
/// The first wait after a failed wake-up; it doubles at each failure.
const BACKOFF_FIRST: Duration = Duration::from_secs(5);
/// The longest wait after failed wake-ups.
const BACKOFF_MAX: Duration = Duration::from_secs(300);
/// How often idleness is checked.
const TICK: Duration = Duration::from_millis(250);
/// The shortest time a start may take to be running and healthy before it
/// counts as failed (a longer `hold` raises it).
const START_LIMIT: Duration = Duration::from_secs(60);

/// Starts and stops a provider's members (containers, Swarm services) for
/// the sleeper; given by a connected provider.
pub trait Engine: Send + Sync {
    /// Starts these containers; resolves once each is running and, if it
    /// has a health check, healthy, or with why not within `limit`.
    fn start(&self, ids: Vec<String>, limit: Duration)
    -> BoxFuture<'static, Result<(), WakeError>>;
    /// Stops these containers.
    fn stop(&self, ids: Vec<String>) -> BoxFuture<'static, Result<(), WakeError>>;
}

/// Why a request to a sleeping service is not sent on.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WakeError {
    /// Docker refused to start a container.
    #[error("container {container} could not be started: {reason}")]
    Start {
        /// The container's name.
        container: String,
        /// Docker's answer.
        reason: String,
    },
    /// A container stopped again right after its start.
    #[error("container {container} exited right after starting (exit code {code})")]
    Exited {
        /// The container's name.
        container: String,
        /// Its exit code.
        code: i64,
    },
    /// A container was not running and healthy in time.
    #[error("container {container} was not running and healthy within {}", crate::config::Duration(*limit))]
    NotReady {
        /// The container's name.
        container: String,
        /// How long it had.
        limit: Duration,
    },
    /// Docker refused to stop a container.
    #[error("container {container} could not be stopped: {reason}")]
    Stop {
        /// The container's name.
        container: String,
        /// Docker's answer.
        reason: String,
    },
    /// The provider has no connection to Docker.
    #[error("gangway has no connection to Docker to start the service")]
    Disconnected,
    /// The Swarm manager refused to scale a service.
    #[error("service {service} could not be scaled: {reason}")]
    Scale {
        /// The service's name.
        service: String,
        /// The manager's answer.
        reason: String,
    },
    /// A task of a service being scaled up failed or was rejected.
    #[error("service {service}: a task is {state}: {reason}")]
    TaskFailed {
        /// The service's name.
        service: String,
        /// The task's state (`failed`, `rejected`).
        state: String,
        /// Its error, as the manager reports it.
        reason: String,
    },
    /// No task of a service was running (and healthy) in time.
    #[error("service {service} had no running task within {}", crate::config::Duration(*limit))]
    NoTask {
        /// The service's name.
        service: String,
        /// How long it had.
        limit: Duration,
    },
    /// The last wake-up failed; the next is not tried before its backoff.
    #[error("{unit} failed to wake ({cause}); next attempt in {retry_in_secs}s")]
    Backoff {
        /// The unit (container or group).
        unit: String,
        /// Why the last wake-up failed.
        cause: Box<WakeError>,
        /// Seconds until a request may try again.
        retry_in_secs: u64,
    },
    /// Too many requests already wait for this unit.
    #[error("{unit} is waking and {held} requests already wait for it")]
    TooManyHeld {
        /// The unit.
        unit: String,
        /// The bound reached.
        held: usize,
    },
    /// The request waited its whole `hold` bound.
    #[error("{unit} did not wake within {}", crate::config::Duration(*hold))]
    HoldExpired {
        /// The unit.
        unit: String,
        /// The bound.
        hold: Duration,
    },
}

impl WakeError {
    /// The status a waiting request is answered with: 502 when the
    /// container itself failed, 503 when it may still come.
    pub fn status(&self) -> http::StatusCode {
        match self {
            WakeError::Start { .. }
            | WakeError::Exited { .. }
            | WakeError::Scale { .. }
            | WakeError::TaskFailed { .. } => http::StatusCode::BAD_GATEWAY,
            WakeError::Backoff { cause, .. } => cause.status(),
            _ => http::StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// Seconds a client should wait before trying again.
    pub fn retry_after(&self) -> u64 {
        match self {
            WakeError::Backoff { retry_in_secs, .. } => (*retry_in_secs).max(1),
            _ => 2,
        }
    }
}

/// A unit's phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Running; stopped once idle.
    Awake,
    /// Being stopped by gangway.
    Stopping,
    /// Stopped by gangway (or stopped and wakeable); the next request wakes it.
    Asleep,
    /// Being started.
    Waking,
    /// Stopped by someone else and not wakeable: left alone.
    Stopped,
}

impl Phase {
    /// Its name in the API and the metrics' `state` label.
    pub const fn as_label(self) -> &'static str {
        match self {
            Phase::Awake => "awake",
            Phase::Stopping => "stopping",
            Phase::Asleep => "asleep",
            Phase::Waking => "waking",
            Phase::Stopped => "stopped",
        }
    }
}

/// One container (or Swarm service) as the provider reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    /// Docker's id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// Running now (a service: a task of it serves).
    pub running: bool,
}

/// One container (or Swarm service) with sleep labels, with what it serves.
#[derive(Clone, Debug)]
pub struct Report {
    /// Its labels, read.
    pub spec: SleepSpec,
    /// The container.
    pub member: Member,
    /// Qualified names of the services it serves (`web@docker`).
    pub services: Vec<String>,
}

/// A failed wake-up, remembered for its backoff.
#[derive(Clone, Debug)]
struct Failure {
    at: Instant,
    backoff: Duration,
    error: WakeError,
}

type WakeResult = Option<Result<(), WakeError>>;

/// Containers that sleep and wake together: one container, or a group.
struct Unit {
    /// The provider whose engine starts and stops it.
    provider: &'static str,
    spec: SleepSpec,
    members: Vec<Member>,
    services: BTreeSet<String>,
    phase: Phase,
    /// Since when (ms since the epoch) it has had no request open.
    idle_from_ms: u64,
    /// When the last request arrived or ended.
    last_request_ms: Option<u64>,
    /// When gangway stopped it.
    asleep_since_ms: Option<u64>,
    /// Requests, answers and upgraded connections open.
    open: usize,
    /// Requests waiting for the wake-up.
    held: usize,
    /// The wake-up under way (or asked for while stopping).
    wake: Option<watch::Receiver<WakeResult>>,
    /// A wake-up asked for while the unit was being stopped.
    pending: Option<watch::Sender<WakeResult>>,
    failure: Option<Failure>,
    /// The last wake-up: when (ms since the epoch) and how long it took.
    last_wake: Option<(u64, Duration)>,
    /// Whether the provider has seen every member stopped since gangway
    /// last stopped it. Until it has, a member it still reports running is
    /// its view lagging behind the stop, not someone starting it again.
    seen_down: bool,
}

impl Unit {
    fn ids(&self) -> Vec<String> {
        self.members.iter().map(|m| m.id.clone()).collect()
    }
}

#[derive(Default)]
struct Inner {
    units: BTreeMap<String, Unit>,
    by_service: HashMap<String, String>,
    /// Containers gangway stopped: their routers stay.
    stopped: BTreeSet<String>,
    /// The engine of each connected provider.
    engines: HashMap<&'static str, Arc<dyn Engine>>,
    ticking: bool,
    /// Where wake-ups are counted, when metrics are on.
    exporter: Option<Arc<crate::metrics::Exporter>>,
    /// Each unit's metric handles, by unit.
    series: BTreeMap<String, crate::metrics::SleepSeries>,
}

/// What the sleeper shows of one unit (API).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UnitView {
    /// The unit: the group's name, or the container's.
    pub unit: String,
    /// Its phase.
    pub state: Phase,
    /// How requests are answered while it sleeps.
    pub mode: Mode,
    /// The idle time after which it sleeps, when it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle: Option<String>,
    /// Its containers' names.
    pub containers: Vec<String>,
    /// When gangway stopped it (RFC 3339), while it sleeps.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub asleep_since: Option<String>,
    /// When the last request arrived or ended (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_request: Option<String>,
    /// When the last wake-up ended (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_wake: Option<String>,
    /// How long the last wake-up took, from the request to the service
    /// being ready, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_wake_ms: Option<u64>,
    /// Why the last wake-up failed, while its backoff lasts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The unit a report belongs to: its group, or its member alone. The
/// Docker provider's are named as they always were; another provider's
/// carry its name (`group shop@swarm`), so that a group or a name of one
/// provider never joins a unit of another.
fn unit_key(provider: &str, r: &Report) -> String {
    let base = match &r.spec.group {
        Some(g) => format!("group {g}"),
        None => r.member.name.clone(),
    };
    if provider == "docker" {
        base
    } else {
        format!("{base}@{provider}")
    }
}

/// Keeps metric handles for exactly the units there are (none without an
/// exporter).
fn measure_units(inner: &mut Inner) {
    let Inner {
        units,
        series,
        exporter,
        ..
    } = inner;
    let Some(exporter) = exporter else {
        return;
    };
    series.retain(|key, _| units.contains_key(key));
    for key in units.keys() {
        if !series.contains_key(key) {
            series.insert(key.clone(), exporter.sleep_series(key));
        }
    }
}

/// Milliseconds since the epoch as RFC 3339 in UTC, second precision.
fn rfc3339(ms: u64) -> String {
    let secs = ms / 1000;
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (h, m, s) = (rem / 3600, (rem % 3600) / 60, rem % 60);
    // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let mo = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(mo <= 2);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{m:02}:{s:02}Z")
}

/// Idle tracking, sleep decisions and wake-ups for every sleeping unit.
pub struct Sleeper {
    inner: Mutex<Inner>,
    /// Whether any unit exists: requests to other services skip the lock.
    any: AtomicBool,
    /// The services that sleep, read without the lock: with sleeping
    /// services on a host, requests to the others still take no lock
    /// every worker would wait on.
    services: arc_swap::ArcSwap<HashSet<String>>,
    wakes: Arc<Semaphore>,
    /// The sleep that middlewares ask for (the Sablier plugin), from the
    /// last compiled configuration; providers rebuild when it changes.
    claims: watch::Sender<Arc<[Claim]>>,
}

impl Default for Sleeper {
    fn default() -> Self {
        Sleeper {
            inner: Mutex::new(Inner::default()),
            any: AtomicBool::new(false),
            services: arc_swap::ArcSwap::default(),
            wakes: Arc::new(Semaphore::new(MAX_CONCURRENT_WAKES)),
            claims: watch::Sender::new(Arc::from([])),
        }
    }
}

/// What `Visit::ready` found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ready {
    /// The unit is awake: go on.
    Now,
    /// The unit was stopped by someone else: not woken, go on.
    Alone,
    /// The request waited for a wake-up that succeeded.
    Woken,
    /// Answer the waiting page (the wake-up is under way).
    Page,
}

impl Sleeper {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves plain data behind; the
        // state stays usable.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes the sleep the compiled configuration's middlewares ask for;
    /// the providers are told only when it changed.
    pub fn claim(&self, claims: Vec<Claim>) {
        self.claims.send_if_modified(|now| {
            let changed = **now != *claims;
            if changed {
                *now = Arc::from(claims);
            }
            changed
        });
    }

    /// The claims now, and their changes from here on.
    pub fn claims(&self) -> watch::Receiver<Arc<[Claim]>> {
        self.claims.subscribe()
    }

    /// Containers gangway stopped to sleep: their routers stay.
    pub fn stopped_by_gangway(&self, id: &str) -> bool {
        self.lock().stopped.contains(id)
    }

    /// `provider` is connected: sleep decisions about its units start (the
    /// first call starts the idle timer).
    pub fn connected(self: &Arc<Self>, provider: &'static str, engine: Arc<dyn Engine>) {
        let start_timer = {
            let mut inner = self.lock();
            inner.engines.insert(provider, engine);
            !std::mem::replace(&mut inner.ticking, true)
        };
        if start_timer {
            let weak = Arc::downgrade(self);
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(TICK);
                loop {
                    tick.tick().await;
                    let Some(sleeper) = weak.upgrade() else {
                        return;
                    };
                    sleeper.check_idle();
                }
            });
        }
    }

    /// `provider` lost its connection: none of its units is stopped or
    /// started until it is back.
    pub fn disconnected(&self, provider: &'static str) {
        self.lock().engines.remove(provider);
    }

    /// A member the provider knows gangway put to sleep before it last
    /// started (a Swarm service scaled to 0 carries a label saying so):
    /// it counts as stopped by gangway, so its routers stay and a request
    /// wakes it. Call before `update`.
    pub fn stopped_earlier(&self, id: &str) {
        self.lock().stopped.insert(id.to_owned());
    }

    /// Takes `provider`'s view of every member with sleep labels; the
    /// units of other providers stay as they are.
    pub fn update(&self, provider: &'static str, reports: Vec<Report>) {
        let now = crate::clock::unix_ms();
        let mut inner = self.lock();
        let mut grouped: BTreeMap<String, (SleepSpec, Vec<Member>, BTreeSet<String>)> =
            BTreeMap::new();
        for r in reports {
            let key = unit_key(provider, &r);
            let entry = grouped
                .entry(key)
                .or_insert_with(|| (r.spec.clone(), Vec::new(), BTreeSet::new()));
            entry.1.push(r.member);
            entry.2.extend(r.services);
        }
        let Inner { units, stopped, .. } = &mut *inner;
        units.retain(|key, u| u.provider != provider || grouped.contains_key(key));
        for (key, (spec, members, services)) in grouped {
            let running = members.iter().any(|m| m.running);
            let ours = members.iter().all(|m| m.running || stopped.contains(&m.id));
            let keep = spec.wakeable || ours;
            match units.get_mut(&key) {
                Some(unit) => {
                    if !running {
                        unit.seen_down = true;
                    }
                    unit.phase = match (unit.phase, running) {
                        // Stopped by gangway, but not yet seen stopped.
                        (Phase::Asleep, true) if !unit.seen_down => Phase::Asleep,
                        // Started by someone else, or seen running for a
                        // moment by a failed start: its failure stays, so
                        // that its backoff holds if it stops again.
                        (Phase::Asleep | Phase::Stopped, true) => {
                            unit.idle_from_ms = now;
                            Phase::Awake
                        }
                        // Stopped by someone else.
                        (Phase::Awake, false) if keep => {
                            unit.asleep_since_ms = Some(now);
                            Phase::Asleep
                        }
                        (Phase::Awake, false) => Phase::Stopped,
                        (phase, _) => phase,
                    };
                    unit.spec = spec;
                    unit.members = members;
                    unit.services = services;
                }
                None => {
                    let phase = match (running, keep) {
                        (true, _) => Phase::Awake,
                        (false, true) => Phase::Asleep,
                        (false, false) => Phase::Stopped,
                    };
                    units.insert(
                        key,
                        Unit {
                            provider,
                            spec,
                            members,
                            services,
                            phase,
                            idle_from_ms: now,
                            last_request_ms: None,
                            asleep_since_ms: (phase == Phase::Asleep).then_some(now),
                            open: 0,
                            held: 0,
                            wake: None,
                            pending: None,
                            failure: None,
                            last_wake: None,
                            seen_down: !running,
                        },
                    );
                }
            }
        }
        // A container that runs again (started by anyone) or is gone is
        // no longer one gangway stopped; one being stopped still is.
        // A container being started, or whose last start failed, stays
        // one gangway stopped even if it was seen running for a moment.
        let known: BTreeMap<&str, (bool, bool)> = units
            .values()
            .flat_map(|u| {
                let hold = matches!(u.phase, Phase::Stopping | Phase::Waking)
                    || (u.phase == Phase::Asleep && !u.seen_down)
                    || u.failure.is_some();
                u.members
                    .iter()
                    .map(move |m| (m.id.as_str(), (m.running, hold)))
            })
            .collect();
        stopped.retain(|id| match known.get(id.as_str()) {
            Some((running, hold)) => !*running || *hold,
            None => false,
        });
        let by_service: HashMap<String, String> = units
            .iter()
            .flat_map(|(k, u)| u.services.iter().map(move |s| (s.clone(), k.clone())))
            .collect();
        self.services
            .store(Arc::new(by_service.keys().cloned().collect()));
        inner.by_service = by_service;
        measure_units(&mut inner);
        self.any.store(!inner.units.is_empty(), Ordering::Relaxed);
    }

    /// Counts wake-ups and waiting requests in `exporter`'s families, and
    /// lets it read each unit's state when it renders them.
    pub fn measure(self: &Arc<Self>, exporter: &Arc<crate::metrics::Exporter>) {
        let weak = Arc::downgrade(self);
        exporter.watch_sleep(move || weak.upgrade().map(|s| s.readings()).unwrap_or_default());
        let mut inner = self.lock();
        inner.exporter = Some(exporter.clone());
        measure_units(&mut inner);
    }

    /// Every unit's state and held requests now, for the metrics.
    fn readings(&self) -> Vec<crate::metrics::SleepReading> {
        let inner = self.lock();
        inner
            .units
            .iter()
            .map(|(key, u)| crate::metrics::SleepReading {
                unit: key.clone(),
                state: u.phase.as_label(),
                held: u.held,
            })
            .collect()
    }

    /// A request to `service` begins; None when the service does not sleep.
    /// Inlined: while no service sleeps, the proxy makes no call here.
    #[inline]
    pub fn enter(self: &Arc<Self>, service: &str) -> Option<Visit> {
        if !self.any.load(Ordering::Relaxed) {
            return None;
        }
        self.enter_sleeping(service)
    }

    fn enter_sleeping(self: &Arc<Self>, service: &str) -> Option<Visit> {
        if !self.services.load().contains(service) {
            return None;
        }
        let now = crate::clock::unix_ms();
        let mut inner = self.lock();
        let key = inner.by_service.get(service)?.clone();
        let unit = inner.units.get_mut(&key)?;
        unit.open += 1;
        unit.last_request_ms = Some(now);
        Some(Visit(Arc::new(VisitInner {
            sleeper: self.clone(),
            key,
            hold: unit.spec.hold,
            arrived: Instant::now(),
        })))
    }

    /// Stops the units idle for their `idle` time.
    fn check_idle(self: &Arc<Self>) {
        let now = crate::clock::unix_ms();
        let mut inner = self.lock();
        let mut to_stop = Vec::new();
        let Inner { units, engines, .. } = &mut *inner;
        for (key, unit) in units.iter_mut() {
            let Some(idle) = unit.spec.idle else { continue };
            // Nothing of a provider that is not connected is stopped.
            let Some(engine) = engines.get(unit.provider) else {
                continue;
            };
            if unit.phase != Phase::Awake
                || unit.open > 0
                || !unit.members.iter().all(|m| m.running)
                || now.saturating_sub(unit.idle_from_ms) < idle.as_millis() as u64
            {
                continue;
            }
            unit.phase = Phase::Stopping;
            unit.seen_down = false;
            to_stop.push((key.clone(), unit.ids(), engine.clone()));
        }
        for (_, ids, _) in &to_stop {
            inner.stopped.extend(ids.iter().cloned());
        }
        drop(inner);
        for (key, ids, engine) in to_stop {
            tracing::info!(unit = %key, "idle: stopping it to sleep");
            let sleeper = self.clone();
            let stop = engine.stop(ids.clone());
            tokio::spawn(async move {
                let result = stop.await;
                sleeper.stopped(&key, &ids, result);
            });
        }
    }

    /// A stop ended.
    fn stopped(self: &Arc<Self>, key: &str, ids: &[String], result: Result<(), WakeError>) {
        let now = crate::clock::unix_ms();
        let mut inner = self.lock();
        if result.is_err() {
            for id in ids {
                inner.stopped.remove(id);
            }
        }
        let Inner { units, engines, .. } = &mut *inner;
        let Some(unit) = units.get_mut(key) else {
            return;
        };
        let engine = engines.get(unit.provider).cloned();
        if unit.phase != Phase::Stopping {
            return;
        }
        match result {
            Ok(()) => {
                unit.phase = Phase::Asleep;
                unit.asleep_since_ms = Some(now);
                if let Some(tx) = unit.pending.take() {
                    // A request arrived while it was being stopped: wake it now.
                    match engine {
                        Some(engine) => self.begin_wake(key, unit, tx, engine),
                        None => {
                            unit.wake = None;
                            let _ = tx.send(Some(Err(WakeError::Disconnected)));
                        }
                    }
                }
            }
            Err(e) => {
                tracing::warn!(unit = %key, error = %e, "could not stop it to sleep");
                unit.phase = Phase::Awake;
                unit.idle_from_ms = now;
                unit.wake = None;
                if let Some(tx) = unit.pending.take() {
                    let _ = tx.send(Some(Ok(())));
                }
            }
        }
    }

    /// Starts the wake-up of `unit`; every waiter shares `tx`'s answer.
    fn begin_wake(
        self: &Arc<Self>,
        key: &str,
        unit: &mut Unit,
        tx: watch::Sender<WakeResult>,
        engine: Arc<dyn Engine>,
    ) {
        unit.phase = Phase::Waking;
        unit.wake = Some(tx.subscribe());
        let ids = unit.ids();
        let limit = unit.spec.hold.max(START_LIMIT);
        let sleeper = self.clone();
        let key = key.to_owned();
        let wakes = self.wakes.clone();
        tracing::info!(unit = %key, "request for a sleeping service: starting it");
        tokio::spawn(async move {
            let began = Instant::now();
            // The semaphore is never closed.
            let _turn = wakes.acquire_owned().await.ok();
            let result = engine.start(ids.clone(), limit).await;
            sleeper.woken(&key, &ids, began.elapsed(), &result);
            let _ = tx.send(Some(result));
        });
    }

    /// A wake-up ended.
    fn woken(&self, key: &str, ids: &[String], took: Duration, result: &Result<(), WakeError>) {
        let now = crate::clock::unix_ms();
        let mut inner = self.lock();
        if let Some(series) = inner.series.get(key) {
            series.woken(took, result.is_ok());
        }
        if result.is_ok() {
            for id in ids {
                inner.stopped.remove(id);
            }
        }
        let Some(unit) = inner.units.get_mut(key) else {
            return;
        };
        unit.wake = None;
        match result {
            Ok(()) => {
                tracing::info!(unit = %key, took_ms = took.as_millis() as u64, "woken");
                unit.phase = Phase::Awake;
                unit.idle_from_ms = now;
                unit.failure = None;
                unit.asleep_since_ms = None;
                unit.last_wake = Some((now, took));
            }
            Err(e) => {
                let backoff = match &unit.failure {
                    Some(f) => (f.backoff * 2).min(BACKOFF_MAX),
                    None => BACKOFF_FIRST,
                };
                tracing::warn!(unit = %key, error = %e, backoff_secs = backoff.as_secs(), "wake-up failed");
                unit.phase = Phase::Asleep;
                unit.failure = Some(Failure {
                    at: Instant::now(),
                    backoff,
                    error: e.clone(),
                });
            }
        }
    }

    /// Every unit, for the API.
    pub fn views(&self) -> BTreeMap<String, UnitView> {
        let inner = self.lock();
        let mut out = BTreeMap::new();
        for (service, key) in &inner.by_service {
            let Some(u) = inner.units.get(key) else {
                continue;
            };
            let error = u
                .failure
                .as_ref()
                .filter(|f| f.at.elapsed() < f.backoff)
                .map(|f| f.error.to_string());
            out.insert(
                service.clone(),
                UnitView {
                    unit: key.clone(),
                    state: u.phase,
                    mode: u.spec.mode,
                    idle: u.spec.idle.map(|d| crate::config::Duration(d).to_string()),
                    containers: u.members.iter().map(|m| m.name.clone()).collect(),
                    asleep_since: u
                        .asleep_since_ms
                        .filter(|_| u.phase == Phase::Asleep)
                        .map(rfc3339),
                    last_request: u.last_request_ms.map(rfc3339),
                    last_wake: u.last_wake.map(|(at, _)| rfc3339(at)),
                    last_wake_ms: u.last_wake.map(|(_, took)| took.as_millis() as u64),
                    error,
                },
            );
        }
        out
    }
}

/// One request (with its answer and upgraded connection) to a service
/// that sleeps; the unit stays awake while any clone lives.
#[derive(Clone)]
pub struct Visit(Arc<VisitInner>);

struct VisitInner {
    sleeper: Arc<Sleeper>,
    key: String,
    hold: Duration,
    arrived: Instant,
}

impl Drop for VisitInner {
    fn drop(&mut self) {
        let now = crate::clock::unix_ms();
        let mut inner = self.sleeper.lock();
        if let Some(unit) = inner.units.get_mut(&self.key) {
            unit.open = unit.open.saturating_sub(1);
            unit.last_request_ms = Some(now);
            unit.idle_from_ms = now;
        }
    }
}

/// Counts a request as held (in `held_requests` and against
/// [`MAX_HELD`]) until it is dropped: while the unit wakes, and after, while
/// the request waits for the woken servers to be routed.
pub struct Held<'a> {
    sleeper: &'a Sleeper,
    key: &'a str,
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        if let Some(unit) = self.sleeper.lock().units.get_mut(self.key) {
            unit.held = unit.held.saturating_sub(1);
        }
    }
}

impl Visit {
    /// The longest this request may wait for its service.
    pub fn hold(&self) -> Duration {
        self.0.hold
    }

    /// When the request arrived.
    pub fn arrived(&self) -> Instant {
        self.0.arrived
    }

    /// Waits until the unit is awake, waking it if it sleeps. With
    /// `page` (a browser asking for HTML) and the page mode, answers
    /// `Ready::Page` at once instead of waiting. A request that waited
    /// gets its [`Held`] count, for the caller to keep while it waits on.
    pub async fn ready(&self, page: bool) -> Result<(Ready, Option<Held<'_>>), WakeError> {
        let VisitInner {
            sleeper, key, hold, ..
        } = &*self.0;
        let mut rx = {
            let mut inner = sleeper.lock();
            let Inner { units, engines, .. } = &mut *inner;
            let Some(unit) = units.get_mut(key) else {
                return Ok((Ready::Alone, None));
            };
            let engine = engines.get(unit.provider).cloned();
            let rx = match unit.phase {
                Phase::Awake => return Ok((Ready::Now, None)),
                Phase::Stopped => return Ok((Ready::Alone, None)),
                Phase::Waking => match &unit.wake {
                    Some(rx) => rx.clone(),
                    None => return Ok((Ready::Now, None)),
                },
                Phase::Stopping => match &unit.wake {
                    Some(rx) => rx.clone(),
                    None => {
                        let (tx, rx) = watch::channel(None);
                        unit.pending = Some(tx);
                        unit.wake = Some(rx.clone());
                        rx
                    }
                },
                Phase::Asleep => {
                    let Some(engine) = engine else {
                        return Err(WakeError::Disconnected);
                    };
                    if let Some(f) = &unit.failure {
                        let since = f.at.elapsed();
                        if since < f.backoff {
                            return Err(WakeError::Backoff {
                                unit: key.clone(),
                                cause: Box::new(f.error.clone()),
                                retry_in_secs: (f.backoff - since).as_secs().max(1),
                            });
                        }
                    }
                    let (tx, rx) = watch::channel(None);
                    sleeper.begin_wake(key, unit, tx, engine);
                    rx
                }
            };
            if page && unit.spec.mode == Mode::Page {
                return Ok((Ready::Page, None));
            }
            if unit.held >= MAX_HELD {
                return Err(WakeError::TooManyHeld {
                    unit: key.clone(),
                    held: unit.held,
                });
            }
            unit.held += 1;
            if let Some(series) = inner.series.get(key) {
                series.waited();
            }
            rx
        };
        let held = Held {
            sleeper,
            key: key.as_str(),
        };
        let deadline = self.0.arrived + *hold;
        let waited = tokio::time::timeout_at(deadline.into(), rx.wait_for(Option::is_some)).await;
        match waited {
            Ok(Ok(result)) => match result.as_ref() {
                Some(Ok(())) => Ok((Ready::Woken, Some(held))),
                Some(Err(e)) => Err(e.clone()),
                None => Ok((Ready::Now, Some(held))),
            },
            // The wake-up's sender is gone only when the unit went away.
            Ok(Err(_)) => Ok((Ready::Alone, None)),
            Err(_) => Err(WakeError::HoldExpired {
                unit: key.clone(),
                hold: *hold,
            }),
        }
    }
}

/// Response extension: how long the request waited for its service to
/// wake, for the access log.
#[derive(Clone, Copy, Debug)]
pub struct Waited(pub Duration);

/// Whether a request asks for HTML (a browser navigating), for the page mode.
pub fn wants_page(headers: &http::HeaderMap) -> bool {
    headers
        .get_all(http::header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.split(',').any(|t| t.trim().starts_with("text/html")))
}

/// A body that keeps its request's `Visit` until it ends, so that a long
/// answer (a stream, gRPC) keeps its service awake.
pub struct Open<B> {
    body: std::pin::Pin<Box<B>>,
    _visit: Visit,
}

impl<B> Open<B> {
    /// Wraps `body`.
    pub fn new(body: B, visit: Visit) -> Self {
        Open {
            body: Box::pin(body),
            _visit: visit,
        }
    }
}

impl<B: http_body::Body> http_body::Body for Open<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        self.body.as_mut().poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// The page a browser gets while its service wakes: it reloads itself.
pub const WAITING_PAGE: &str = "<!doctype html>\n<html><head><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"2\"><title>Starting…</title></head>\n<body style=\"font-family:sans-serif;text-align:center;margin-top:20vh\"><h1>Starting…</h1><p>This service was asleep and is starting. The page reloads by itself.</p></body></html>\n";

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// Counts starts; each takes 50 ms and then succeeds or fails.
    struct Counting {
        starts: AtomicUsize,
        stops: AtomicUsize,
        fail: bool,
    }

    impl Engine for Arc<Counting> {
        fn start(
            &self,
            _ids: Vec<String>,
            _limit: Duration,
        ) -> BoxFuture<'static, Result<(), WakeError>> {
            self.starts.fetch_add(1, Ordering::SeqCst);
            let fail = self.fail;
            Box::pin(async move {
                tokio::time::sleep(Duration::from_millis(50)).await;
                if fail {
                    Err(WakeError::Exited {
                        container: "app".into(),
                        code: 1,
                    })
                } else {
                    Ok(())
                }
            })
        }

        fn stop(&self, _ids: Vec<String>) -> BoxFuture<'static, Result<(), WakeError>> {
            self.stops.fetch_add(1, Ordering::SeqCst);
            Box::pin(async { Ok(()) })
        }
    }

    fn report(running: bool, idle: Option<Duration>, wakeable: bool) -> Report {
        Report {
            spec: SleepSpec {
                idle,
                mode: Mode::Hold,
                hold: Duration::from_secs(5),
                group: None,
                wakeable,
            },
            member: Member {
                id: "id1".into(),
                name: "app".into(),
                running,
            },
            services: vec!["app@docker".into()],
        }
    }

    fn engine(fail: bool) -> Arc<Counting> {
        Arc::new(Counting {
            starts: AtomicUsize::new(0),
            stops: AtomicUsize::new(0),
            fail,
        })
    }

    /// What `ready` answers, its held count let go at once.
    async fn ready(v: &Visit, page: bool) -> Result<Ready, WakeError> {
        v.ready(page).await.map(|(ready, _)| ready)
    }

    #[tokio::test]
    async fn many_waiters_share_one_start() {
        let sleeper = Arc::new(Sleeper::default());
        let e = engine(false);
        sleeper.connected("docker", Arc::new(e.clone()));
        sleeper.update("docker", vec![report(false, None, true)]);
        let visits: Vec<Visit> = (0..50)
            .map(|_| sleeper.enter("app@docker").expect("managed"))
            .collect();
        let results = futures_util::future::join_all(visits.iter().map(|v| v.ready(false))).await;
        let woken = results
            .iter()
            .filter(|r| matches!(r, Ok((Ready::Woken, Some(_)))))
            .count();
        assert_eq!(woken, 50);
        assert_eq!(e.starts.load(Ordering::SeqCst), 1);
        // Still held while the callers wait for the woken servers to be
        // routed; no longer once they let go.
        assert_eq!(sleeper.readings()[0].held, 50);
        drop(results);
        assert_eq!(sleeper.readings()[0].held, 0);
        assert!(sleeper.enter("other@docker").is_none());
    }

    #[tokio::test]
    async fn a_failed_start_backs_off_instead_of_starting_again() {
        let sleeper = Arc::new(Sleeper::default());
        let e = engine(true);
        sleeper.connected("docker", Arc::new(e.clone()));
        sleeper.update("docker", vec![report(false, None, true)]);
        let v = sleeper.enter("app@docker").expect("managed");
        assert!(matches!(
            ready(&v, false).await,
            Err(WakeError::Exited { .. })
        ));
        let again = ready(&v, false).await.expect_err("backoff");
        assert!(matches!(again, WakeError::Backoff { .. }), "{again}");
        assert_eq!(again.status(), http::StatusCode::BAD_GATEWAY);
        assert_eq!(e.starts.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn stopped_by_someone_else_is_left_alone_unless_wakeable() {
        let sleeper = Arc::new(Sleeper::default());
        let e = engine(false);
        sleeper.connected("docker", Arc::new(e.clone()));
        sleeper.update(
            "docker",
            vec![report(true, Some(Duration::from_secs(60)), false)],
        );
        sleeper.update(
            "docker",
            vec![report(false, Some(Duration::from_secs(60)), false)],
        );
        let v = sleeper.enter("app@docker").expect("managed");
        assert_eq!(ready(&v, false).await, Ok(Ready::Alone));
        assert_eq!(e.starts.load(Ordering::SeqCst), 0);
        assert!(!sleeper.stopped_by_gangway("id1"));
    }

    /// Docker's answer to a stop comes before the watcher sees the
    /// container die: a report of it still running in between is that
    /// lag, not someone starting it, and it stays asleep and routed.
    #[tokio::test]
    async fn a_report_lagging_behind_gangway_s_stop_keeps_it_asleep() {
        let sleeper = Arc::new(Sleeper::default());
        let e = engine(false);
        sleeper.connected("docker", Arc::new(e.clone()));
        let idle = Some(Duration::ZERO);
        sleeper.update("docker", vec![report(true, idle, false)]);
        sleeper.check_idle();
        for _ in 0..100 {
            if sleeper.views()["app@docker"].state == Phase::Asleep {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(e.stops.load(Ordering::SeqCst), 1);
        sleeper.update("docker", vec![report(true, idle, false)]);
        assert_eq!(sleeper.views()["app@docker"].state, Phase::Asleep);
        assert!(sleeper.stopped_by_gangway("id1"));
        sleeper.update("docker", vec![report(false, idle, false)]);
        assert_eq!(sleeper.views()["app@docker"].state, Phase::Asleep);
        assert!(sleeper.stopped_by_gangway("id1"), "its routers stay");
        // Seen stopped, then running again: someone else started it.
        sleeper.update("docker", vec![report(true, idle, false)]);
        assert_eq!(sleeper.views()["app@docker"].state, Phase::Awake);
        assert!(!sleeper.stopped_by_gangway("id1"));
    }

    /// Docker and Swarm at once: each provider's report leaves the other's
    /// units alone, a group of one never joins the other's group of the
    /// same name, and each unit is woken by its own provider's engine.
    #[tokio::test]
    async fn each_provider_s_units_are_its_own_and_woken_by_its_engine() {
        let sleeper = Arc::new(Sleeper::default());
        let docker = engine(false);
        let swarm = engine(false);
        sleeper.connected("docker", Arc::new(docker.clone()));
        sleeper.connected("swarm", Arc::new(swarm.clone()));
        let mut d = report(false, None, true);
        d.spec.group = Some("shop".into());
        let mut s = d.clone();
        s.member.id = "service1".into();
        s.services = vec!["app@swarm".into()];
        sleeper.update("swarm", vec![s]);
        sleeper.update("docker", vec![d]);
        let views = sleeper.views();
        assert_eq!(views["app@docker"].unit, "group shop");
        assert_eq!(views["app@swarm"].unit, "group shop@swarm");
        let v = sleeper.enter("app@swarm").expect("managed");
        assert_eq!(ready(&v, false).await, Ok(Ready::Woken));
        assert_eq!(swarm.starts.load(Ordering::SeqCst), 1);
        assert_eq!(docker.starts.load(Ordering::SeqCst), 0);
        // The Swarm provider lost its manager: its units wait, Docker's wake.
        sleeper.update("docker", vec![]);
        assert!(sleeper.enter("app@docker").is_none());
        assert!(sleeper.enter("app@swarm").is_some(), "the Swarm unit stays");
        sleeper.disconnected("swarm");
        let mut s = report(false, None, true);
        s.member.id = "service2".into();
        s.member.name = "other".into();
        s.services = vec!["other@swarm".into()];
        sleeper.update("swarm", vec![s]);
        let v = sleeper.enter("other@swarm").expect("managed");
        assert_eq!(ready(&v, false).await, Err(WakeError::Disconnected));
        assert_eq!(swarm.starts.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn the_page_mode_answers_browsers_at_once_and_still_wakes() {
        let sleeper = Arc::new(Sleeper::default());
        let e = engine(false);
        sleeper.connected("docker", Arc::new(e.clone()));
        let mut r = report(false, None, true);
        r.spec.mode = Mode::Page;
        sleeper.update("docker", vec![r]);
        let v = sleeper.enter("app@docker").expect("managed");
        assert_eq!(ready(&v, true).await, Ok(Ready::Page));
        assert_eq!(ready(&v, false).await, Ok(Ready::Woken));
        assert_eq!(e.starts.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn dates_are_rfc3339() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_709_251_199_000), "2024-02-29T23:59:59Z");
    }

    #[test]
    fn browsers_get_the_page_and_curl_does_not() {
        let mut h = http::HeaderMap::new();
        assert!(!wants_page(&h));
        h.insert(http::header::ACCEPT, "*/*".parse().expect("value"));
        assert!(!wants_page(&h));
        h.insert(
            http::header::ACCEPT,
            "text/html,application/xhtml+xml;q=0.9"
                .parse()
                .expect("value"),
        );
        assert!(wants_page(&h));
    }
}
