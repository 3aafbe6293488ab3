//! Talking to the daemon: connect and negotiate the API version, subscribe
//! to container events, list and inspect containers, and rebuild the
//! configuration after every burst of events. When the stream ends or a
//! call fails, the last known routes stay in use while it reconnects with
//! backoff and lists again.

use super::build::{Built, build};
use super::container::{ContainerView, RunState};
use super::power::{DockerPower, read_only};
use super::{Endpoint, Settings};
use crate::config::problem::ProviderError;
use crate::config::provenance::ProviderDetail;
use crate::provider::Snapshot;
use crate::sleep::{Member, Report, SleepError, Sleeper, parse_sleep_labels};
use bollard::Docker;
use bollard::errors::Error as BollardError;
use bollard::models::EventMessage;
use bollard::query_parameters::{EventsOptions, InspectContainerOptions, ListContainersOptions};
use futures_util::{FutureExt, Stream, StreamExt};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

const PROVIDER: &str = "docker";
/// Seconds a single Docker API call may take to answer (the event stream's
/// headers included; the stream itself may stay open for ever).
const CALL_TIMEOUT_SECS: u64 = 30;
const BACKOFF_FIRST: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);
/// A container still running this long after its stop began took no
/// notice of the signal; it is put back in rotation.
const DRAIN_LIMIT_MS: u64 = 60_000;
/// Events the provider acts on (Docker also sends exec_*, attach, … events,
/// every few seconds for containers with health checks).
const ACTIONS: &[&str] = &[
    "create",
    "start",
    "restart",
    "die",
    "stop",
    "kill",
    "pause",
    "unpause",
    "health_status",
    "destroy",
    "rename",
    "update",
];
/// Signals sent for a reload rather than a stop: no draining.
const RELOAD_SIGNALS: &[&str] = &[
    "1", "10", "12", "28", "SIGHUP", "SIGUSR1", "SIGUSR2", "SIGWINCH",
];

type Events = Pin<Box<dyn Stream<Item = Result<EventMessage, BollardError>> + Send>>;

/// What the provider remembers between rebuilds.
struct State {
    settings: Settings,
    /// Every container known, by id, including removed ones kept for their
    /// grace period.
    views: BTreeMap<String, ContainerView>,
    /// When draining began, per container.
    draining_since: HashMap<String, u64>,
    /// What was sent last, and where to send.
    out: Publisher,
    /// Per container, the last line logged about it, so each is logged once.
    logged: HashMap<String, String>,
    /// Sleeping services: told of every rebuild, given the daemon while connected.
    sleeper: Arc<Sleeper>,
    /// Why the daemon does not let gangway start and stop containers, when it does not.
    read_only: Option<String>,
}

/// What a provider watching a daemon sent last, and how it sends the next
/// configuration or the news that the daemon cannot be read.
pub(crate) struct Publisher {
    provider: &'static str,
    /// The last build sent (or found equal to it).
    last: Option<Built>,
    /// Send the next build even if it equals the last one.
    resend: bool,
    tx: mpsc::Sender<Snapshot>,
}

/// The aggregator is gone: the provider stops.
pub(crate) struct Closed;

impl Publisher {
    pub(crate) fn new(provider: &'static str, tx: mpsc::Sender<Snapshot>) -> Self {
        Publisher {
            provider,
            last: None,
            resend: false,
            tx,
        }
    }

    /// The last build.
    pub(crate) fn last(&self) -> Option<&Built> {
        self.last.as_ref()
    }

    /// Sends `built` unless it equals the last one sent.
    pub(crate) async fn publish(&mut self, built: Built) -> Result<(), Closed> {
        let same = self
            .last
            .as_ref()
            .is_some_and(|l| l.dynamic == built.dynamic && l.detail == built.detail);
        let send = !same || self.resend;
        let snapshot = send
            .then(|| Snapshot::read(self.provider, built.dynamic.clone(), built.detail.clone()));
        self.last = Some(built);
        let Some(snapshot) = snapshot else {
            return Ok(());
        };
        self.resend = false;
        self.tx.send(snapshot).await.map_err(|_| Closed)
    }

    /// Tells the aggregator the daemon cannot be read; the last
    /// configuration stays in use.
    pub(crate) async fn unreachable(&mut self, error: ProviderError) -> Result<(), Closed> {
        // The first build after reconnecting is sent even if nothing
        // changed: it clears the error and says connected again.
        self.resend = true;
        let last = self.last.as_ref().map(|b| &b.detail);
        let snapshot = Snapshot::unreachable(self.provider, error, last);
        self.tx.send(snapshot).await.map_err(|_| Closed)
    }
}

impl From<Closed> for Stop {
    fn from(_: Closed) -> Self {
        Stop::Closed
    }
}

/// The wait between attempts of a provider that reconnects to a daemon,
/// and whether an outage is under way (so it is logged and reported once).
pub(crate) struct Reconnect {
    backoff: Duration,
    failing: bool,
}

impl Reconnect {
    pub(crate) fn new() -> Self {
        Reconnect {
            backoff: BACKOFF_FIRST,
            failing: false,
        }
    }

    /// A session got through: the next failure starts a new outage, and
    /// the next wait is the shortest again.
    pub(crate) fn connected(&mut self) {
        self.backoff = BACKOFF_FIRST;
        self.failing = false;
    }

    /// A session failed: whether this starts an outage (the first failure
    /// since the daemon was last reached).
    pub(crate) fn failed(&mut self) -> bool {
        !std::mem::replace(&mut self.failing, true)
    }

    /// Waits before the next attempt, twice as long as the last time, up to
    /// a limit.
    pub(crate) async fn wait(&mut self) {
        tokio::time::sleep(self.backoff).await;
        self.backoff = (self.backoff * 2).min(BACKOFF_MAX);
    }
}

/// Runs the provider until `tx` closes.
pub(super) async fn run(
    settings: Settings,
    endpoint: Endpoint,
    watch: bool,
    tx: mpsc::Sender<Snapshot>,
    sleeper: Arc<Sleeper>,
) {
    let mut state = State {
        settings,
        views: BTreeMap::new(),
        draining_since: HashMap::new(),
        out: Publisher::new(PROVIDER, tx),
        logged: HashMap::new(),
        sleeper,
        read_only: None,
    };
    let mut retry = Reconnect::new();
    loop {
        let outcome = session(&mut state, &endpoint, watch, &mut retry).await;
        // Nothing is stopped or started while the daemon cannot be followed.
        state.sleeper.disconnected(PROVIDER);
        let message = match outcome {
            Ok(()) => return,
            Err(Stop::Closed) => return,
            Err(Stop::Failed(message)) => message,
        };
        if retry.failed() {
            tracing::error!(
                provider = PROVIDER,
                error = %message,
                "Docker unreachable; keeping the last known routes and retrying"
            );
            // Once per outage: the aggregator logs what it is told.
            if state.report_failure(&message).await.is_err() {
                return;
            }
        } else {
            tracing::debug!(provider = PROVIDER, error = %message, "still cannot reach Docker");
        }
        retry.wait().await;
    }
}

/// Why a session of a provider watching a daemon ended.
pub(crate) enum Stop {
    /// The aggregator is gone: stop for good.
    Closed,
    /// The daemon failed; reconnect.
    Failed(String),
}

impl From<BollardError> for Stop {
    fn from(e: BollardError) -> Self {
        Stop::Failed(crate::cause::WithCauses(&e).to_string())
    }
}

/// A client for the daemon at `endpoint` whose calls may take up to
/// `timeout`, at the API version both sides speak.
pub(crate) async fn connect(
    endpoint: &Endpoint,
    timeout: Duration,
) -> Result<Docker, BollardError> {
    let secs = timeout.as_secs().max(1);
    let docker = match endpoint {
        Endpoint::Unix(path) => {
            Docker::connect_with_unix(path, secs, bollard::API_DEFAULT_VERSION)?
        }
        Endpoint::Tcp(addr) => Docker::connect_with_http(addr, secs, bollard::API_DEFAULT_VERSION)?,
        Endpoint::Tls(addr, tls) => {
            // bollard's own TLS wants files and its own trust rules; this
            // client takes the configuration the provider's options made.
            let client = crate::client::control::Builder::with_config((*tls.0).clone())
                .https_only()
                .build();
            Docker::connect_with_custom_transport(
                move |req: bollard::BollardRequest| {
                    let client = client.clone();
                    async move { client.request(req).await.map_err(BollardError::from) }
                },
                Some(format!("https://{addr}")),
                secs,
                bollard::API_DEFAULT_VERSION,
            )?
        }
    };
    // Debian's dockerd speaks API 1.41; bollard starts higher.
    docker.negotiate_version().await
}

/// One connection: list, then follow events until something fails.
async fn session(
    state: &mut State,
    endpoint: &Endpoint,
    watch: bool,
    retry: &mut Reconnect,
) -> Result<(), Stop> {
    let docker = connect(endpoint, Duration::from_secs(CALL_TIMEOUT_SECS)).await?;
    let version = docker.version().await?;
    // Subscribe before listing, replaying from a little before, so that no
    // change between the list and the subscription is missed.
    let since = (crate::clock::unix_ms() / 1000)
        .saturating_sub(1)
        .to_string();
    let mut events: Events = Box::pin(
        docker.events(Some(EventsOptions {
            since: Some(since),
            until: None,
            filters: Some(
                [
                    ("type".to_owned(), vec!["container".to_owned()]),
                    (
                        "event".to_owned(),
                        ACTIONS.iter().map(|a| (*a).to_owned()).collect(),
                    ),
                ]
                .into(),
            ),
        })),
    );
    state.settings.own_networks = own_networks(&docker).await;
    // Only a watching provider sees containers start and stop, which
    // sleeping needs.
    state.read_only = if watch {
        read_only(&docker).await
    } else {
        None
    };
    state.relist(&docker).await?;
    tracing::info!(
        provider = PROVIDER,
        api_version = version.api_version.as_deref().unwrap_or("?"),
        containers = state.views.len(),
        "connected to Docker"
    );
    retry.connected();
    state.publish(true).await?;
    if !watch {
        return Ok(());
    }
    // After the first build: the idle time of every container counts from
    // here, so nothing is stopped as gangway starts.
    if state.read_only.is_none() {
        state.sleeper.connected(
            PROVIDER,
            Arc::new(DockerPower {
                docker: docker.clone(),
            }),
        );
    }
    // Sablier middlewares name containers that sleep: a change to them is
    // a rebuild, as a container's own labels are.
    let mut claims = state.sleeper.claims();
    claims.mark_unchanged();
    loop {
        let next_change = state.next_change();
        let wake = async {
            match next_change {
                Some(at) => {
                    tokio::time::sleep(Duration::from_millis(
                        at.saturating_sub(crate::clock::unix_ms()) + 1,
                    ))
                    .await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            ev = events.next() => {
                let mut touched = BTreeSet::new();
                let mut next = ev;
                loop {
                    match next {
                        Some(Ok(ev)) => state.note(&ev, &mut touched),
                        Some(Err(e)) => {
                            let e = crate::cause::WithCauses(&e);
                            return Err(Stop::Failed(format!("event stream: {e}")));
                        }
                        None => return Err(Stop::Failed("the event stream ended".to_owned())),
                    }
                    // Take the rest of the burst (kill, die, stop…) in one go.
                    match events.next().now_or_never() {
                        Some(more) => next = more,
                        None => break,
                    }
                }
                for id in touched {
                    state.refresh(&docker, &id).await?;
                }
            }
            () = wake => {}
            Ok(()) = claims.changed() => {}
        }
        state.publish(true).await?;
    }
}

/// The networks of gangway's own container, when it runs in one.
async fn own_networks(docker: &Docker) -> Vec<String> {
    if tokio::fs::metadata("/.dockerenv").await.is_err() {
        return Vec::new();
    }
    let Ok(mounts) = tokio::fs::read_to_string("/proc/self/mountinfo").await else {
        return Vec::new();
    };
    let Some(id) = own_container_id(&mounts) else {
        return Vec::new();
    };
    match docker
        .inspect_container(&id, None::<InspectContainerOptions>)
        .await
    {
        Ok(me) => me
            .network_settings
            .and_then(|n| n.networks)
            .map(|n| n.into_keys().collect())
            .unwrap_or_default(),
        Err(_) => Vec::new(),
    }
}

/// Docker bind-mounts `/var/lib/docker/containers/<id>/hostname` onto a
/// container's `/etc/hostname`: the id in that line is the container's own.
fn own_container_id(mountinfo: &str) -> Option<String> {
    mountinfo.lines().find_map(|line| {
        let mut fields = line.split(' ');
        let root = fields.nth(3)?;
        let mount_point = fields.next()?;
        if mount_point != "/etc/hostname" {
            return None;
        }
        let at = root.find("/containers/")? + "/containers/".len();
        let id = root.get(at..at + 64)?;
        id.bytes()
            .all(|b| b.is_ascii_hexdigit())
            .then(|| id.to_owned())
    })
}

fn is_not_found(e: &BollardError) -> bool {
    matches!(
        e,
        BollardError::DockerResponseServerError {
            status_code: 404,
            ..
        }
    )
}

impl State {
    /// Lists every container and inspects each.
    async fn relist(&mut self, docker: &Docker) -> Result<(), Stop> {
        let list = docker
            .list_containers(Some(ListContainersOptions {
                all: true,
                ..ListContainersOptions::default()
            }))
            .await?;
        let ids: BTreeSet<String> = list.into_iter().filter_map(|c| c.id).collect();
        // Containers that went away while disconnected.
        let gone: Vec<String> = self
            .views
            .keys()
            .filter(|id| !ids.contains(*id))
            .cloned()
            .collect();
        for id in gone {
            self.remove(&id);
        }
        for id in ids {
            self.refresh(docker, &id).await?;
        }
        Ok(())
    }

    /// Reads one event: drain on stop/kill, clear on start; remember to inspect.
    fn note(&mut self, ev: &EventMessage, touched: &mut BTreeSet<String>) {
        let Some(actor) = &ev.actor else { return };
        let Some(id) = actor.id.clone() else { return };
        let action = ev.action.as_deref().unwrap_or_default();
        let verb = action.split(':').next().unwrap_or_default().trim();
        tracing::debug!(provider = PROVIDER, container = %id, action, "event");
        match verb {
            "kill" => {
                let signal = actor
                    .attributes
                    .as_ref()
                    .and_then(|a| a.get("signal"))
                    .map(String::as_str)
                    .unwrap_or_default();
                if !RELOAD_SIGNALS.contains(&signal) {
                    self.draining_since
                        .entry(id.clone())
                        .or_insert_with(crate::clock::unix_ms);
                }
            }
            "stop" | "die" => {
                self.draining_since
                    .entry(id.clone())
                    .or_insert_with(crate::clock::unix_ms);
            }
            "start" | "restart" | "unpause" => {
                self.draining_since.remove(&id);
            }
            _ => {}
        }
        touched.insert(id);
    }

    /// Inspects one container and updates its view; a container Docker no
    /// longer knows is kept as removed for its grace period.
    async fn refresh(&mut self, docker: &Docker, id: &str) -> Result<(), Stop> {
        let inspected = match docker
            .inspect_container(id, None::<InspectContainerOptions>)
            .await
        {
            Ok(c) => c,
            Err(e) if is_not_found(&e) => {
                self.remove(id);
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        };
        let Some(mut view) = ContainerView::from_inspect(inspected) else {
            return Ok(());
        };
        // `network_mode: container:<id>` shares that container's network.
        if let Some(other) = view.network_mode.strip_prefix("container:")
            && let Ok(o) = docker
                .inspect_container(other, None::<InspectContainerOptions>)
                .await
            && let Some(o) = ContainerView::from_inspect(o)
        {
            view.network_mode = o.network_mode;
            view.networks = o.networks;
        }
        self.settle(view);
        Ok(())
    }

    /// Carries draining and down-since over from the previous view.
    fn settle(&mut self, mut view: ContainerView) {
        let now = crate::clock::unix_ms();
        let prev = self.views.get(&view.id);
        if view.state != RunState::Running {
            self.draining_since.remove(&view.id);
        }
        if let Some(since) = self.draining_since.get(&view.id).copied() {
            if now.saturating_sub(since) < DRAIN_LIMIT_MS {
                view.draining = true;
            } else {
                self.draining_since.remove(&view.id);
            }
        }
        view.down_since_ms = if view.can_serve() {
            None
        } else {
            match prev {
                Some(p) if p.down_since_ms.is_some() => p.down_since_ms,
                Some(_) => Some(now),
                // First sight: a stopped container has been down since it
                // finished, one that never started since it was created.
                None => match view.state {
                    RunState::Exited | RunState::Dead => view.finished_ms.or(Some(now)),
                    RunState::Created => Some((view.created_ns.max(0) / 1_000_000) as u64),
                    _ => Some(now),
                },
            }
        };
        self.views.insert(view.id.clone(), view);
    }

    fn remove(&mut self, id: &str) {
        self.draining_since.remove(id);
        if let Some(view) = self.views.get_mut(id) {
            view.state = RunState::Removed;
            view.draining = false;
            view.health = None;
            if view.down_since_ms.is_none() {
                view.down_since_ms = Some(crate::clock::unix_ms());
            }
        }
    }

    /// The earliest time the configuration changes by itself.
    fn next_change(&self) -> Option<u64> {
        let drain_end = self
            .draining_since
            .values()
            .map(|s| s + DRAIN_LIMIT_MS)
            .min();
        let grace_end = self.out.last().and_then(|b| b.next_change_ms);
        match (drain_end, grace_end) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Rebuilds and sends the configuration if it changed.
    async fn publish(&mut self, connected: bool) -> Result<(), Stop> {
        let now = crate::clock::unix_ms();
        let grace = self.settings.down_grace.as_millis() as u64;
        // Removed containers are forgotten once their grace period is over.
        self.views.retain(|_, v| {
            v.state != RunState::Removed || v.down_since_ms.is_some_and(|d| d + grace > now)
        });
        // Drains that outlived their limit end here (the container ignored the signal).
        let expired: Vec<String> = self
            .draining_since
            .iter()
            .filter(|(_, since)| now.saturating_sub(**since) >= DRAIN_LIMIT_MS)
            .map(|(id, _)| id.clone())
            .collect();
        for id in expired {
            self.draining_since.remove(&id);
            if let Some(v) = self.views.get_mut(&id) {
                v.draining = false;
                if v.can_serve() {
                    v.down_since_ms = None;
                }
            }
        }
        let specs = self.sleep_specs();
        let views: Vec<ContainerView> = self.views.values().cloned().collect();
        let mut built = build(&views, &self.settings, now);
        built.detail.connected = Some(connected);
        self.report_sleepers(&specs, &mut built);
        self.log_records(&built.detail);
        Ok(self.out.publish(built).await?)
    }

    /// Reads every container's sleep labels, and keeps the routers of the
    /// stopped ones gangway may wake: those it put to sleep, and wakeable ones.
    fn sleep_specs(
        &mut self,
    ) -> BTreeMap<String, Result<crate::sleep::SleepSpec, Vec<SleepError>>> {
        let mut specs = BTreeMap::new();
        self.settings.keep.clear();
        let claims = self.sleeper.claims().borrow().clone();
        for v in self.views.values() {
            // A container's own labels come before what a middleware asks.
            let Some(parsed) = parse_sleep_labels(&v.labels)
                .or_else(|| crate::sleep::claim::claimed(&claims, &v.name, &v.labels).map(Ok))
            else {
                continue;
            };
            let parsed = match (parsed, &self.read_only) {
                (Ok(_), Some(why)) => Err(vec![SleepError::ReadOnly {
                    label: crate::sleep::spec::first_label(&v.labels)
                        .unwrap_or(crate::sleep::claim::ENABLE_LABEL)
                        .to_owned(),
                    reason: why.clone(),
                }]),
                (parsed, _) => parsed,
            };
            if let Ok(spec) = &parsed
                && !v.can_serve()
                && v.state != RunState::Removed
                && (spec.wakeable || self.sleeper.stopped_by_gangway(&v.id))
            {
                self.settings.keep.insert(v.id.clone());
            }
            specs.insert(v.id.clone(), parsed);
        }
        specs
    }

    /// Tells the sleeper which containers sleep and what they serve; shows
    /// sleep label errors on their containers.
    fn report_sleepers(
        &self,
        specs: &BTreeMap<String, Result<crate::sleep::SleepSpec, Vec<SleepError>>>,
        built: &mut Built,
    ) {
        let mut services: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for (name, detail) in &built.detail.services {
            for source in &detail.sources {
                services
                    .entry(source.container_id.as_str())
                    .or_default()
                    .push(format!("{name}@{}", self.settings.provider));
            }
        }
        let mut reports = Vec::new();
        for (id, parsed) in specs {
            match parsed {
                Err(errors) => {
                    if let Some(r) = built.detail.containers.iter_mut().find(|r| &r.id == id) {
                        r.messages.extend(errors.iter().map(ToString::to_string));
                    }
                }
                Ok(spec) => {
                    let (Some(view), Some(served)) =
                        (self.views.get(id), services.get(id.as_str()))
                    else {
                        continue;
                    };
                    reports.push(Report {
                        spec: spec.clone(),
                        member: Member {
                            id: id.clone(),
                            name: view.name.clone(),
                            running: view.state == RunState::Running,
                        },
                        services: served.clone(),
                    });
                }
            }
        }
        self.sleeper.update(PROVIDER, reports);
    }

    /// Tells the aggregator that Docker is unreachable; the last
    /// configuration stays in use.
    async fn report_failure(&mut self, message: &str) -> Result<(), Stop> {
        let error = ProviderError::Docker {
            reason: message.to_owned(),
        };
        Ok(self.out.unreachable(error).await?)
    }

    /// Logs, once per change, why each container is not routed.
    fn log_records(&mut self, detail: &ProviderDetail) {
        let mut seen = BTreeSet::new();
        for r in &detail.containers {
            seen.insert(r.id.clone());
            let line = if r.routed {
                String::new()
            } else {
                r.messages.first().cloned().unwrap_or_default()
            };
            if self.logged.get(&r.id) == Some(&line) {
                continue;
            }
            match (line.is_empty(), r.reason) {
                (true, _) => {}
                (false, Some(reason)) => {
                    tracing::info!(provider = PROVIDER, container = %r.name, reason = %reason, "not routed: {line}");
                }
                (false, None) => {
                    tracing::info!(provider = PROVIDER, container = %r.name, "not routed: {line}");
                }
            }
            self.logged.insert(r.id.clone(), line);
        }
        self.logged.retain(|id, _| seen.contains(id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_its_own_container_id_only_from_its_hostname_mount() {
        let id = "0d5d040e8c16a401f0f670811db21c7cdae7f463962e572ad1592f86534073ef";
        let inside = format!(
            "600 580 254:1 /var/lib/docker/containers/{id}/resolv.conf /etc/resolv.conf rw - ext4 /dev/vda rw\n\
             601 580 254:1 /var/lib/docker/containers/{id}/hostname /etc/hostname rw - ext4 /dev/vda rw\n"
        );
        assert_eq!(own_container_id(&inside).as_deref(), Some(id));
        // On the host, other containers' shm mounts must not be taken for ours.
        let host =
            format!("35 25 0:50 / /var/lib/docker/containers/{id}/mounts/shm rw - tmpfs shm rw\n");
        assert_eq!(own_container_id(&host), None);
        assert_eq!(own_container_id(""), None);
    }
}
