//! Putting Swarm services to sleep and waking them (`crate::sleep::Engine`):
//! a service is scaled to 0 replicas when idle and back to its previous
//! count by the first request; and finding out whether the manager lets
//! gangway update services at all.
//!
//! A scale is one service update at the version just read, with only
//! `Mode.Replicated.Replicas` and one label of gangway's changed: the rest
//! of the spec goes back as the manager gave it. The previous count is
//! kept in memory and in the label `gangway.sleep.replicas`, so that a
//! gangway that restarts still knows the service is asleep because of it,
//! and how many replicas to give back. When someone else changes the
//! service so that the label no longer holds, gangway mends it
//! (`settle`): a service scaled up by hand loses the label, and one whose
//! sleep labels were removed while asleep is given its replicas back.

use crate::provider::docker::power::{reason, refused_write};
use crate::sleep::{Engine, WakeError, parse_sleep_labels};
use bollard::Docker;
use bollard::errors::Error as BollardError;
use bollard::models::{ServiceSpec, TaskState};
use bollard::query_parameters::{ListTasksOptions, UpdateServiceOptions};
use futures_util::future::BoxFuture;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The label gangway sets on a service it scaled to 0: the replicas to
/// give back. Written and removed by gangway only; its presence on a
/// service at 0 replicas says gangway put it to sleep.
pub const REPLICAS_LABEL: &str = "gangway.sleep.replicas";

/// How often the tasks of a waking service are read until one runs.
const POLL: Duration = Duration::from_millis(100);
/// A service id that cannot exist: updating it tells whether updates are
/// allowed without changing anything.
const PROBE_ID: &str = "gangway-write-probe-not-a-service";

/// Replicas of the services gangway scaled to 0, by service id; kept
/// across reconnections.
pub(super) type Remembered = Arc<Mutex<HashMap<String, u64>>>;

/// The manager client of a connected Swarm provider.
pub(super) struct SwarmPower {
    pub(super) docker: Docker,
    pub(super) previous: Remembered,
}

/// Whether the manager lets gangway update services: Some(why not) when a
/// harmless update of a service that does not exist is refused (a socket
/// proxy that allows only reads answers 401/403/405) rather than answered
/// "no such service".
pub(super) async fn read_only(docker: &Docker) -> Option<String> {
    let answer = docker
        .update_service(
            PROBE_ID,
            ServiceSpec::default(),
            UpdateServiceOptions {
                version: 0,
                registry_auth_from: "spec".to_owned(),
                rollback: None,
            },
            None,
        )
        .await;
    refused_write(answer, "the manager", "a service update")
}

/// A service as read for a scale: its name, version and spec.
struct Current {
    name: String,
    version: i32,
    spec: ServiceSpec,
}

fn scale_error(service: &str, e: &BollardError) -> WakeError {
    WakeError::Scale {
        service: service.to_owned(),
        reason: reason(e),
    }
}

async fn current(docker: &Docker, id: &str) -> Result<Current, WakeError> {
    let service = docker
        .inspect_service(id, None)
        .await
        .map_err(|e| scale_error(id, &e))?;
    let spec = service.spec.unwrap_or_default();
    let name = spec.name.clone().unwrap_or_else(|| id.to_owned());
    let version = service
        .version
        .and_then(|v| v.index)
        .and_then(|i| i32::try_from(i).ok())
        .ok_or_else(|| WakeError::Scale {
            service: name.clone(),
            reason: "the manager gave no usable version for it".to_owned(),
        })?;
    Ok(Current {
        name,
        version,
        spec,
    })
}

/// Sends `spec` back as the service's new spec, at the version it was read.
async fn update(docker: &Docker, id: &str, current: Current) -> Result<(), WakeError> {
    let options = UpdateServiceOptions {
        version: current.version,
        registry_auth_from: "spec".to_owned(),
        rollback: None,
    };
    docker
        .update_service(id, current.spec, options, None)
        .await
        .map(|_| ())
        .map_err(|e| scale_error(&current.name, &e))
}

/// Its replicas, for a replicated service.
fn replicas(spec: &ServiceSpec) -> Option<u64> {
    let r = spec.mode.as_ref()?.replicated.as_ref()?;
    Some(r.replicas.unwrap_or(1).max(0) as u64)
}

fn set_replicas(spec: &mut ServiceSpec, n: u64) {
    if let Some(r) = spec.mode.as_mut().and_then(|m| m.replicated.as_mut()) {
        r.replicas = Some(i64::try_from(n).unwrap_or(i64::MAX));
    }
}

/// Takes gangway's label off `spec` and scales it back to the replicas
/// gangway took (remembered, or from the label); a wakeable service
/// someone else scaled to 0 gets one.
fn give_back(spec: &mut ServiceSpec, remembered: Option<u64>) {
    let from_label = spec
        .labels
        .get_or_insert_default()
        .remove(REPLICAS_LABEL)
        .and_then(|v| v.trim().parse::<u64>().ok());
    set_replicas(spec, remembered.or(from_label).unwrap_or(1).max(1));
}

/// What a service carrying gangway's label needs once someone else has
/// changed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mend {
    /// It has replicas again, scaled by someone else: the label no longer
    /// says gangway put it to sleep, and goes.
    DropLabel,
    /// Asleep because of gangway, and its sleep labels are gone: nothing
    /// will wake it, so it gets its replicas back now.
    GiveBack,
}

/// What a service with `replicas` (None: not replicated) and `labels`
/// needs mended, if anything.
pub(super) fn mend(replicas: Option<u64>, labels: &BTreeMap<String, String>) -> Option<Mend> {
    if !labels.contains_key(REPLICAS_LABEL) {
        return None;
    }
    if replicas? > 0 {
        return Some(Mend::DropLabel);
    }
    let mut own = labels.clone();
    own.remove(REPLICAS_LABEL);
    parse_sleep_labels(&own).is_none().then_some(Mend::GiveBack)
}

/// Mends the service as `mend` says of its spec read now (a scale of
/// gangway's own since the watcher read it is left alone); the service's
/// name and what was done, or None when nothing needed it.
pub(super) async fn settle(
    docker: &Docker,
    id: &str,
    previous: &Remembered,
) -> Result<Option<(String, Mend)>, WakeError> {
    let mut current = current(docker, id).await?;
    let labels: BTreeMap<String, String> = current
        .spec
        .labels
        .clone()
        .unwrap_or_default()
        .into_iter()
        .collect();
    let Some(what) = mend(replicas(&current.spec), &labels) else {
        return Ok(None);
    };
    let remembered = previous
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(id)
        .copied();
    match what {
        Mend::DropLabel => {
            current
                .spec
                .labels
                .get_or_insert_default()
                .remove(REPLICAS_LABEL);
        }
        Mend::GiveBack => give_back(&mut current.spec, remembered),
    }
    let name = current.name.clone();
    update(docker, id, current).await?;
    previous
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .remove(id);
    Ok(Some((name, what)))
}

fn not_replicated(name: &str) -> WakeError {
    WakeError::Scale {
        service: name.to_owned(),
        reason: "it is not a replicated service".to_owned(),
    }
}

impl SwarmPower {
    fn remembered(&self, id: &str) -> Option<u64> {
        self.previous
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .copied()
    }
}

impl Engine for SwarmPower {
    fn start(
        &self,
        ids: Vec<String>,
        limit: Duration,
    ) -> BoxFuture<'static, Result<(), WakeError>> {
        let docker = self.docker.clone();
        let remembered: Vec<Option<u64>> = ids.iter().map(|id| self.remembered(id)).collect();
        let previous = self.previous.clone();
        Box::pin(async move {
            let deadline = tokio::time::Instant::now() + limit;
            let mut waiting = Vec::new();
            for (id, remembered) in ids.iter().zip(remembered) {
                let mut current = current(&docker, id).await?;
                let name = current.name.clone();
                let Some(now) = replicas(&current.spec) else {
                    return Err(not_replicated(&name));
                };
                // Tasks from before the scale: their failures are old news.
                let before = task_ids(&docker, id)
                    .await
                    .map_err(|e| scale_error(&name, &e))?;
                if now == 0 {
                    give_back(&mut current.spec, remembered);
                    update(&docker, id, current).await?;
                }
                previous
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(id);
                waiting.push((id.clone(), name, before));
            }
            for (id, name, before) in waiting {
                wait_running(&docker, &id, &name, &before, deadline, limit).await?;
            }
            Ok(())
        })
    }

    fn stop(&self, ids: Vec<String>) -> BoxFuture<'static, Result<(), WakeError>> {
        let docker = self.docker.clone();
        let previous = self.previous.clone();
        Box::pin(async move {
            for id in &ids {
                let mut current = current(&docker, id).await?;
                let Some(n) = replicas(&current.spec) else {
                    return Err(not_replicated(&current.name));
                };
                if n == 0 {
                    continue;
                }
                set_replicas(&mut current.spec, 0);
                current
                    .spec
                    .labels
                    .get_or_insert_default()
                    .insert(REPLICAS_LABEL.to_owned(), n.to_string());
                update(&docker, id, current).await?;
                previous
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(id.clone(), n);
            }
            Ok(())
        })
    }
}

/// The ids of every task the manager keeps for the service.
async fn task_ids(docker: &Docker, id: &str) -> Result<BTreeSet<String>, BollardError> {
    let options = ListTasksOptions {
        filters: Some(HashMap::from([("service".to_owned(), vec![id.to_owned()])])),
    };
    Ok(docker
        .list_tasks(Some(options))
        .await?
        .into_iter()
        .filter_map(|t| t.id)
        .collect())
}

/// Waits until a task of the service runs (for an image with a health
/// check, Swarm says `running` only once it is healthy); a new task that
/// fails or is rejected ends the wait with its error.
async fn wait_running(
    docker: &Docker,
    id: &str,
    name: &str,
    before: &BTreeSet<String>,
    deadline: tokio::time::Instant,
    limit: Duration,
) -> Result<(), WakeError> {
    loop {
        let options = ListTasksOptions {
            filters: Some(HashMap::from([("service".to_owned(), vec![id.to_owned()])])),
        };
        let tasks = docker
            .list_tasks(Some(options))
            .await
            .map_err(|e| scale_error(name, &e))?;
        for task in &tasks {
            let status = task.status.clone().unwrap_or_default();
            let state = status.state;
            if state == Some(TaskState::RUNNING) && task.desired_state == Some(TaskState::RUNNING) {
                return Ok(());
            }
            let new = task.id.as_ref().is_some_and(|t| !before.contains(t));
            if new && matches!(state, Some(TaskState::FAILED | TaskState::REJECTED)) {
                return Err(WakeError::TaskFailed {
                    service: name.to_owned(),
                    state: state.map(|s| s.to_string()).unwrap_or_default(),
                    reason: status.err.or(status.message).unwrap_or_default(),
                });
            }
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(WakeError::NoTask {
                service: name.to_owned(),
                limit,
            });
        }
        tokio::time::sleep(POLL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bollard::models::{ServiceSpecMode, ServiceSpecModeReplicated};

    #[test]
    fn only_the_replica_count_changes() {
        let mut spec = ServiceSpec {
            name: Some("web".into()),
            mode: Some(ServiceSpecMode {
                replicated: Some(ServiceSpecModeReplicated { replicas: Some(3) }),
                ..ServiceSpecMode::default()
            }),
            ..ServiceSpec::default()
        };
        assert_eq!(replicas(&spec), Some(3));
        let before = spec.clone();
        set_replicas(&mut spec, 0);
        assert_eq!(replicas(&spec), Some(0));
        set_replicas(&mut spec, 3);
        assert_eq!(spec, before);
        let global = ServiceSpec {
            mode: Some(ServiceSpecMode {
                global: Some(HashMap::new()),
                ..ServiceSpecMode::default()
            }),
            ..ServiceSpec::default()
        };
        assert_eq!(replicas(&global), None);
    }

    #[test]
    fn only_a_label_that_no_longer_holds_is_mended() {
        let labels = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        let asleep = labels(&[(REPLICAS_LABEL, "2"), ("gangway.sleep.idle", "5m")]);
        assert_eq!(mend(Some(0), &asleep), None, "asleep as gangway left it");
        assert_eq!(mend(Some(1), &asleep), Some(Mend::DropLabel));
        let unlabelled = labels(&[(REPLICAS_LABEL, "2"), ("traefik.enable", "true")]);
        assert_eq!(mend(Some(0), &unlabelled), Some(Mend::GiveBack));
        assert_eq!(mend(Some(3), &unlabelled), Some(Mend::DropLabel));
        let never = labels(&[("gangway.sleep.idle", "5m")]);
        assert_eq!(mend(Some(0), &never), None, "not gangway's doing");
        assert_eq!(mend(None, &asleep), None, "not replicated");
        let broken = labels(&[(REPLICAS_LABEL, "2"), ("gangway.sleep.idle", "soon")]);
        assert_eq!(
            mend(Some(0), &broken),
            None,
            "its labels' error is shown instead"
        );
    }

    #[test]
    fn giving_back_restores_the_count_and_drops_the_label() {
        let mut spec = ServiceSpec {
            mode: Some(ServiceSpecMode {
                replicated: Some(ServiceSpecModeReplicated { replicas: Some(0) }),
                ..ServiceSpecMode::default()
            }),
            labels: Some(HashMap::from([
                (REPLICAS_LABEL.to_owned(), "3".to_owned()),
                ("keep".to_owned(), "me".to_owned()),
            ])),
            ..ServiceSpec::default()
        };
        let mut remembered = spec.clone();
        give_back(&mut spec, None);
        assert_eq!(replicas(&spec), Some(3));
        assert_eq!(
            spec.labels,
            Some(HashMap::from([("keep".to_owned(), "me".to_owned())]))
        );
        give_back(&mut remembered, Some(2));
        assert_eq!(replicas(&remembered), Some(2), "memory before the label");
        let mut bare = ServiceSpec {
            mode: remembered.mode.clone(),
            ..ServiceSpec::default()
        };
        set_replicas(&mut bare, 0);
        give_back(&mut bare, None);
        assert_eq!(replicas(&bare), Some(1), "a wakeable service gets one");
    }
}
