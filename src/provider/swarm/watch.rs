//! Talking to the manager: check it is one, read services, tasks and
//! nodes, follow events, and rebuild after each read that changed
//! something. When a call fails the last known routes stay while it
//! reconnects with backoff.

use super::power::{Mend, REPLICAS_LABEL, Remembered, SwarmPower, mend, read_only, settle};
use super::tasks;
use super::views::{Cluster, NodeFacts, ServiceFacts, views, without_prefix};
use crate::config::problem::ProviderError;
use crate::provider::Snapshot;
use crate::provider::docker::build::Built;
use crate::provider::docker::build::build;
use crate::provider::docker::container::{ContainerView, RunState};
use crate::provider::docker::{Endpoint, Settings};
use crate::provider::docker::{Publisher, Reconnect, Stop};
use crate::sleep::{Member, Report, SleepError, SleepSpec, Sleeper, parse_sleep_labels};
use bollard::Docker;
use bollard::models::{NodeSpecAvailabilityEnum, NodeState, ServiceSpecMode};
use bollard::query_parameters::{
    EventsOptions, InspectNetworkOptions, ListNetworksOptions, ListNodesOptions,
};
use futures_util::{FutureExt, StreamExt};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

const PROVIDER: &str = "swarm";
/// After an event, how often and for how long everything is read again:
/// tasks on other nodes start and stop without an event reaching this
/// manager's stream, so a deployment is followed by reading.
const FAST_READ: Duration = Duration::from_millis(250);
const FAST_FOR: Duration = Duration::from_secs(30);

/// How the provider reads.
pub(super) struct Timing {
    /// The longest one call may take.
    pub call: Duration,
    /// Read everything this often whatever happens.
    pub refresh: Duration,
    /// Follow events.
    pub watch: bool,
}

struct State {
    settings: Settings,
    out: Publisher,
    /// Sleeping services: told of every rebuild, given the manager while connected.
    sleeper: Arc<Sleeper>,
    /// Why the manager does not let gangway update services, when it does not.
    read_only: Option<String>,
    /// Replicas of the services gangway scaled to 0.
    previous: Remembered,
    /// Services whose label gangway could not mend, told once.
    unmended: BTreeSet<String>,
}

/// Each sleeping service's labels read, by service id.
type Specs = BTreeMap<String, Result<SleepSpec, Vec<SleepError>>>;

/// Runs the provider until `tx` closes.
pub(super) async fn run(
    settings: Settings,
    endpoint: Endpoint,
    timing: Timing,
    tx: mpsc::Sender<Snapshot>,
    sleeper: Arc<Sleeper>,
) {
    let mut state = State {
        settings,
        out: Publisher::new(PROVIDER, tx),
        sleeper,
        read_only: None,
        previous: Remembered::default(),
        unmended: BTreeSet::new(),
    };
    let mut retry = Reconnect::new();
    loop {
        let outcome = session(&mut state, &endpoint, &timing, &mut retry).await;
        // Nothing is scaled while the manager cannot be followed.
        state.sleeper.disconnected(PROVIDER);
        let message = match outcome {
            Err(Stop::Failed(message)) => message,
            Ok(()) | Err(Stop::Closed) => return,
        };
        if retry.failed() {
            tracing::error!(
                provider = PROVIDER,
                error = %message,
                "swarm manager unreachable or unusable; keeping the last known routes and retrying"
            );
            if state.report_failure(&message).await.is_err() {
                return;
            }
        } else {
            tracing::debug!(provider = PROVIDER, error = %message, "still cannot read the swarm");
        }
        retry.wait().await;
    }
}

async fn session(
    state: &mut State,
    endpoint: &Endpoint,
    timing: &Timing,
    retry: &mut Reconnect,
) -> Result<(), Stop> {
    let docker = crate::provider::docker::connect(endpoint, timing.call).await?;
    let info = docker.info().await?;
    let swarm = info.swarm.unwrap_or_default();
    if swarm.control_available != Some(true) {
        let state = swarm
            .local_node_state
            .map(|s| s.to_string())
            .unwrap_or_default();
        return Err(Stop::Failed(format!(
            "the daemon at the endpoint is not a swarm manager (its swarm state: `{state}`); \
             the Swarm provider reads services, tasks and nodes, which only managers answer: \
             run gangway on a manager node or point providers.swarm.endpoint at one"
        )));
    }
    let version = docker.client_version();
    let version = format!("{}.{}", version.major_version, version.minor_version);
    let since = (crate::clock::unix_ms() / 1000)
        .saturating_sub(1)
        .to_string();
    let mut events = docker.events(Some(EventsOptions {
        since: Some(since),
        until: None,
        filters: Some(HashMap::from([(
            "type".to_owned(),
            vec![
                "service".to_owned(),
                "node".to_owned(),
                "container".to_owned(),
                "network".to_owned(),
            ],
        )])),
    }));
    // Only a watching provider follows services closely enough to wake one.
    state.read_only = if timing.watch {
        read_only(&docker).await
    } else {
        None
    };
    let cluster = read(&docker, endpoint, &version, timing.call).await?;
    tracing::info!(
        provider = PROVIDER,
        services = cluster.services.len(),
        tasks = cluster.tasks.len(),
        nodes = cluster.nodes.len(),
        "connected to the swarm manager"
    );
    retry.connected();
    state.publish(&cluster).await?;
    let mends = timing.watch && state.read_only.is_none();
    if mends {
        state.settle(&docker, &cluster).await;
    }
    // After the first build: every idle time counts from here, so nothing
    // is scaled as gangway starts.
    if timing.watch && state.read_only.is_none() {
        state.sleeper.connected(
            PROVIDER,
            Arc::new(SwarmPower {
                docker: docker.clone(),
                previous: state.previous.clone(),
            }),
        );
    }
    let mut fast_until = Instant::now();
    loop {
        let wait = if Instant::now() < fast_until {
            FAST_READ
        } else {
            timing.refresh
        };
        tokio::select! {
            ev = events.next(), if timing.watch => {
                let mut next = ev;
                loop {
                    match next {
                        Some(Ok(_)) => {}
                        Some(Err(e)) => {
                            let e = crate::cause::WithCauses(&e);
                            return Err(Stop::Failed(format!("event stream: {e}")));
                        }
                        None => return Err(Stop::Failed("the event stream ended".to_owned())),
                    }
                    match events.next().now_or_never() {
                        Some(more) => next = more,
                        None => break,
                    }
                }
                fast_until = Instant::now() + FAST_FOR;
            }
            () = tokio::time::sleep(wait) => {}
        }
        let cluster = read(&docker, endpoint, &version, timing.call).await?;
        state.publish(&cluster).await?;
        if mends {
            state.settle(&docker, &cluster).await;
        }
    }
}

/// Services, running tasks and nodes, as the manager has them now.
async fn read(
    docker: &Docker,
    endpoint: &Endpoint,
    version: &str,
    call: Duration,
) -> Result<Cluster, Stop> {
    let mut networks: HashMap<String, String> = docker
        .list_networks(None::<ListNetworksOptions>)
        .await?
        .into_iter()
        .filter_map(|n| Some((n.id?, n.name?)))
        .collect();
    let services = docker
        .list_services(None::<bollard::query_parameters::ListServicesOptions>)
        .await?;
    // Services name networks by id; Swarm's own `host` network has an id
    // of the swarm's that the local list does not show.
    let targets: Vec<String> = services
        .iter()
        .filter_map(|s| s.spec.as_ref()?.task_template.as_ref()?.networks.as_ref())
        .flatten()
        .filter_map(|n| n.target.clone())
        .filter(|t| !networks.contains_key(t))
        .collect();
    for target in targets {
        let options = InspectNetworkOptions {
            scope: Some("swarm".to_owned()),
            ..InspectNetworkOptions::default()
        };
        if let Ok(found) = docker.inspect_network(&target, Some(options)).await
            && let Some(name) = found.name
        {
            networks.insert(target, name);
        }
    }
    let services = services
        .into_iter()
        .filter_map(|s| {
            let id = s.id?;
            let spec = s.spec.unwrap_or_default();
            let attached: Vec<String> = spec
                .task_template
                .and_then(|t| t.networks)
                .unwrap_or_default()
                .into_iter()
                .filter_map(|n| n.target)
                .map(|target| networks.get(&target).cloned().unwrap_or(target))
                .collect();
            let virtual_ips = s
                .endpoint
                .and_then(|e| e.virtual_ips)
                .unwrap_or_default()
                .into_iter()
                .filter_map(|v| {
                    let net = v.network_id?;
                    let name = networks.get(&net).cloned().unwrap_or(net);
                    Some((name, without_prefix(&v.addr?)))
                })
                .collect();
            let (mode, replicas) = mode_of(spec.mode.as_ref());
            Some(ServiceFacts {
                mode,
                replicas,
                name: spec.name.unwrap_or_else(|| id.clone()),
                labels: spec.labels.unwrap_or_default().into_iter().collect(),
                created_ns: s.created_at.map(|t| tasks::created_ns(&t)).unwrap_or(0),
                host_network: attached.iter().any(|n| n == "host"),
                virtual_ips,
                id,
            })
        })
        .collect();
    let tasks = tasks::running_tasks(endpoint, version, call)
        .await
        .map_err(Stop::Failed)?;
    let nodes = docker
        .list_nodes(None::<ListNodesOptions>)
        .await?
        .into_iter()
        .filter_map(|n| {
            let status = n.status.unwrap_or_default();
            let availability = n.spec.and_then(|s| s.availability);
            Some((
                n.id?,
                NodeFacts {
                    addr: status.addr.unwrap_or_default(),
                    ready: status.state == Some(NodeState::READY),
                    active: matches!(availability, Some(NodeSpecAvailabilityEnum::ACTIVE) | None),
                },
            ))
        })
        .collect();
    Ok(Cluster {
        services,
        tasks,
        nodes,
    })
}

impl State {
    /// Rebuilds and sends the configuration if it changed.
    async fn publish(&mut self, cluster: &Cluster) -> Result<(), Stop> {
        let views = views(cluster, &self.settings.prefix);
        let specs = self.sleep_specs(cluster, &views);
        let mut built = build(&views, &self.settings, crate::clock::unix_ms());
        built.detail.connected = Some(true);
        self.report_sleepers(cluster, &views, &specs, &mut built);
        if self.out.last().is_none_or(|l| l.detail != built.detail) {
            for r in built.detail.containers.iter().filter(|r| !r.routed) {
                if let Some(line) = r.messages.first() {
                    tracing::debug!(provider = PROVIDER, service = %r.name, "not routed: {line}");
                }
            }
        }
        Ok(self.out.publish(built).await?)
    }

    /// Mends gangway's label where someone else changed a service so that
    /// it no longer holds (see `power::mend`); the update it makes brings
    /// the next read.
    async fn settle(&mut self, docker: &Docker, cluster: &Cluster) {
        let needing: Vec<&ServiceFacts> = cluster
            .services
            .iter()
            .filter(|s| mend(s.replicas, &s.labels).is_some())
            .collect();
        // A service mended, or gone, is told of again if it fails again.
        self.unmended
            .retain(|id| needing.iter().any(|s| &s.id == id));
        for service in needing {
            match settle(docker, &service.id, &self.previous).await {
                Ok(Some((name, Mend::DropLabel))) => tracing::info!(
                    provider = PROVIDER,
                    service = %name,
                    "scaled by someone else while asleep: no longer one gangway put to sleep"
                ),
                Ok(Some((name, Mend::GiveBack))) => tracing::info!(
                    provider = PROVIDER,
                    service = %name,
                    "its sleep labels were removed while asleep: given its replicas back"
                ),
                Ok(None) => {}
                Err(e) => {
                    if self.unmended.insert(service.id.clone()) {
                        tracing::warn!(provider = PROVIDER, error = %e, "cannot mend the sleep label {REPLICAS_LABEL}; trying again at the next change");
                    }
                }
            }
        }
    }

    /// Reads every service's sleep labels (refusing them on services that
    /// cannot be scaled to 0, or when the manager refuses updates), and
    /// keeps the routers of the services at 0 replicas a request may wake:
    /// those gangway put to sleep, and wakeable ones.
    fn sleep_specs(&mut self, cluster: &Cluster, views: &[ContainerView]) -> Specs {
        let serving = serving(views);
        let mut specs = Specs::new();
        self.settings.keep.clear();
        // Counts of services that are gone are of no use any more.
        self.previous
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|id, _| cluster.services.iter().any(|s| &s.id == id));
        for service in &cluster.services {
            let mut labels = service.labels.clone();
            let asleep_with = labels.remove(REPLICAS_LABEL);
            let Some(parsed) = parse_sleep_labels(&labels) else {
                continue;
            };
            let label = || {
                crate::sleep::spec::first_label(&labels)
                    .unwrap_or_default()
                    .to_owned()
            };
            let parsed = match (parsed, service.replicas, &self.read_only) {
                (Ok(_), None, _) => Err(vec![SleepError::NotReplicated {
                    label: label(),
                    service: service.name.clone(),
                    mode: service.mode.to_owned(),
                }]),
                (Ok(_), Some(_), Some(why)) => Err(vec![SleepError::SwarmReadOnly {
                    label: label(),
                    reason: why.clone(),
                }]),
                (parsed, ..) => parsed,
            };
            if let Ok(spec) = &parsed
                && !serving.contains(service.id.as_str())
            {
                // Scaled to 0 by gangway before it (re)started: the label
                // it left says so.
                if service.replicas == Some(0) && asleep_with.is_some() {
                    self.sleeper.stopped_earlier(&service.id);
                }
                if spec.wakeable || self.sleeper.stopped_by_gangway(&service.id) {
                    self.settings.keep.insert(service.id.clone());
                }
            }
            specs.insert(service.id.clone(), parsed);
        }
        specs
    }

    /// Tells the sleeper which services sleep and which of gangway's
    /// services each serves; shows sleep label errors on the service's
    /// records.
    fn report_sleepers(
        &self,
        cluster: &Cluster,
        views: &[ContainerView],
        specs: &Specs,
        built: &mut Built,
    ) {
        // A server's source is a task (or the service itself, at 0 tasks
        // or behind its virtual IP): the service it belongs to.
        let owner: HashMap<&str, &str> = views
            .iter()
            .filter_map(|v| Some((v.id.as_str(), v.swarm.as_ref()?.service_id.as_str())))
            .collect();
        let mut served: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
        for (name, detail) in &built.detail.services {
            for source in &detail.sources {
                if let Some(service) = owner.get(source.container_id.as_str()) {
                    served
                        .entry(service)
                        .or_default()
                        .insert(format!("{name}@{PROVIDER}"));
                }
            }
        }
        let serving = serving(views);
        let mut reports = Vec::new();
        for service in &cluster.services {
            match specs.get(&service.id) {
                None => {}
                Some(Err(errors)) => {
                    for r in
                        built.detail.containers.iter_mut().filter(|r| {
                            r.swarm.as_ref().is_some_and(|t| t.service_id == service.id)
                        })
                    {
                        r.messages.extend(errors.iter().map(ToString::to_string));
                    }
                }
                Some(Ok(spec)) => {
                    let Some(services) = served.get(service.id.as_str()) else {
                        continue;
                    };
                    reports.push(Report {
                        spec: spec.clone(),
                        member: Member {
                            id: service.id.clone(),
                            name: service.name.clone(),
                            running: serving.contains(service.id.as_str()),
                        },
                        services: services.iter().cloned().collect(),
                    });
                }
            }
        }
        self.sleeper.update(PROVIDER, reports);
    }

    /// Tells the aggregator the manager cannot be read; the last
    /// configuration stays in use.
    async fn report_failure(&mut self, message: &str) -> Result<(), Stop> {
        let error = ProviderError::Swarm {
            reason: message.to_owned(),
        };
        Ok(self.out.unreachable(error).await?)
    }
}

/// The services with a task that can take traffic.
fn serving(views: &[ContainerView]) -> BTreeSet<&str> {
    views
        .iter()
        .filter(|v| v.state == RunState::Running)
        .filter_map(|v| Some(v.swarm.as_ref()?.service_id.as_str()))
        .collect()
}

/// A service's mode, and its replicas when it is replicated.
fn mode_of(mode: Option<&ServiceSpecMode>) -> (&'static str, Option<u64>) {
    match mode {
        Some(ServiceSpecMode {
            global: Some(_), ..
        }) => ("global", None),
        Some(ServiceSpecMode {
            replicated_job: Some(_),
            ..
        }) => ("replicated-job", None),
        Some(ServiceSpecMode {
            global_job: Some(_),
            ..
        }) => ("global-job", None),
        Some(ServiceSpecMode {
            replicated: Some(r),
            ..
        }) => ("replicated", Some(r.replicas.unwrap_or(1).max(0) as u64)),
        // The manager's default.
        _ => ("replicated", Some(1)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bollard::models::ServiceSpecModeReplicated;
    use std::collections::HashMap;

    #[test]
    fn only_replicated_services_have_replicas() {
        let replicated = ServiceSpecMode {
            replicated: Some(ServiceSpecModeReplicated { replicas: Some(3) }),
            ..ServiceSpecMode::default()
        };
        assert_eq!(mode_of(Some(&replicated)), ("replicated", Some(3)));
        let global = ServiceSpecMode {
            global: Some(HashMap::new()),
            ..ServiceSpecMode::default()
        };
        assert_eq!(mode_of(Some(&global)), ("global", None));
        let job = ServiceSpecMode {
            global_job: Some(HashMap::new()),
            ..ServiceSpecMode::default()
        };
        assert_eq!(mode_of(Some(&job)), ("global-job", None));
        assert_eq!(mode_of(None), ("replicated", Some(1)));
    }
}
