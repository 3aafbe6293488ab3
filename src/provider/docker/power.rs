//! Starting and stopping containers for sleeping services
//! (`crate::sleep::Engine`), and finding out whether the daemon lets
//! gangway do it at all.

use crate::sleep::{Engine, WakeError};
use bollard::Docker;
use bollard::errors::Error as BollardError;
use bollard::models::{ContainerStateStatusEnum, HealthStatusEnum};
use bollard::query_parameters::{
    InspectContainerOptions, StartContainerOptions, StopContainerOptions,
};
use futures_util::future::BoxFuture;
use std::time::Duration;

/// How often a starting container is inspected until it is ready.
const POLL: Duration = Duration::from_millis(50);
/// A container without a health check counts as ready once it has been
/// running this long: one whose command fails at once is caught exiting
/// instead of being sent requests.
const SETTLE: Duration = Duration::from_millis(150);
/// Seconds a stopping container gets between SIGTERM and SIGKILL.
const STOP_GRACE_SECS: i32 = 10;
/// A container id that cannot exist (ids are hexadecimal): starting it
/// tells whether writes are allowed without changing anything.
const PROBE_ID: &str = "gangway-write-probe-not-a-container";

/// The Docker client of a connected provider.
pub(super) struct DockerPower {
    pub(super) docker: Docker,
}

/// The HTTP status of a daemon's refusal.
fn status(e: &BollardError) -> Option<u16> {
    match e {
        BollardError::DockerResponseServerError { status_code, .. } => Some(*status_code),
        _ => None,
    }
}

/// A daemon's refusal in words: its message, or the error and its causes.
pub(in crate::provider) fn reason(e: &BollardError) -> String {
    match e {
        BollardError::DockerResponseServerError { message, .. } => message.clone(),
        other => crate::cause::WithCauses(other).to_string(),
    }
}

/// Whether the daemon lets gangway start and stop containers: Some(why
/// not) when a harmless start of a container that does not exist is
/// refused (a socket proxy that allows only reads answers 401/403/405)
/// rather than answered "no such container".
pub(super) async fn read_only(docker: &Docker) -> Option<String> {
    let answer = docker
        .start_container(PROBE_ID, None::<StartContainerOptions>)
        .await;
    refused_write(answer, "the daemon", "a start")
}

/// Some(why) when `answer`, to a harmless write, is a refusal to write
/// (401, 403 or 405, as socket proxies that allow only reads answer);
/// `who` and `what` name the one that answered and the write.
pub(in crate::provider) fn refused_write<T>(
    answer: Result<T, BollardError>,
    who: &str,
    what: &str,
) -> Option<String> {
    let e = answer.err()?;
    let code = status(&e).filter(|c| matches!(c, 401 | 403 | 405))?;
    Some(format!("{who} answered {code} to {what}: {}", reason(&e)))
}

impl Engine for DockerPower {
    fn start(
        &self,
        ids: Vec<String>,
        limit: Duration,
    ) -> BoxFuture<'static, Result<(), WakeError>> {
        let docker = self.docker.clone();
        Box::pin(async move {
            for id in &ids {
                match docker
                    .start_container(id, None::<StartContainerOptions>)
                    .await
                {
                    // 304: already running.
                    Err(e) if status(&e) != Some(304) => {
                        return Err(WakeError::Start {
                            container: name(&docker, id).await,
                            reason: reason(&e),
                        });
                    }
                    _ => {}
                }
            }
            let deadline = tokio::time::Instant::now() + limit;
            for id in &ids {
                wait_ready(&docker, id, deadline, limit).await?;
            }
            Ok(())
        })
    }

    fn stop(&self, ids: Vec<String>) -> BoxFuture<'static, Result<(), WakeError>> {
        let docker = self.docker.clone();
        Box::pin(async move {
            for id in &ids {
                let options = StopContainerOptions {
                    t: Some(STOP_GRACE_SECS),
                    signal: None,
                };
                match docker.stop_container(id, Some(options)).await {
                    // 304: already stopped.
                    Err(e) if status(&e) != Some(304) => {
                        return Err(WakeError::Stop {
                            container: name(&docker, id).await,
                            reason: reason(&e),
                        });
                    }
                    _ => {}
                }
            }
            Ok(())
        })
    }
}

/// A container's name for messages (its short id when it cannot be read).
async fn name(docker: &Docker, id: &str) -> String {
    docker
        .inspect_container(id, None::<InspectContainerOptions>)
        .await
        .ok()
        .and_then(|c| c.name)
        .map(|n| n.trim_start_matches('/').to_owned())
        .unwrap_or_else(|| id.chars().take(12).collect())
}

/// Waits until the container runs and, when it has a health check, is healthy.
async fn wait_ready(
    docker: &Docker,
    id: &str,
    deadline: tokio::time::Instant,
    limit: Duration,
) -> Result<(), WakeError> {
    let mut running_since: Option<tokio::time::Instant> = None;
    loop {
        let inspected = docker
            .inspect_container(id, None::<InspectContainerOptions>)
            .await
            .map_err(|e| WakeError::Start {
                container: id.chars().take(12).collect(),
                reason: reason(&e),
            })?;
        let container = inspected
            .name
            .as_deref()
            .map(|n| n.trim_start_matches('/').to_owned())
            .unwrap_or_else(|| id.chars().take(12).collect());
        let state = inspected.state.unwrap_or_default();
        match state.status {
            Some(ContainerStateStatusEnum::RUNNING) => {
                let since = *running_since.get_or_insert_with(tokio::time::Instant::now);
                match state.health.and_then(|h| h.status) {
                    Some(HealthStatusEnum::HEALTHY) => return Ok(()),
                    None | Some(HealthStatusEnum::EMPTY | HealthStatusEnum::NONE)
                        if since.elapsed() >= SETTLE =>
                    {
                        return Ok(());
                    }
                    _ => {}
                }
            }
            Some(ContainerStateStatusEnum::EXITED | ContainerStateStatusEnum::DEAD) => {
                return Err(WakeError::Exited {
                    container,
                    code: state.exit_code.unwrap_or_default(),
                });
            }
            _ => {}
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(WakeError::NotReady { container, limit });
        }
        tokio::time::sleep(POLL).await;
    }
}
