//! `ContainerView`: the few facts about a container that routing needs,
//! narrowed from Docker's inspect answer so that everything after it is pure.

use crate::config::provenance::SwarmTask;
use bollard::models::{ContainerInspectResponse, ContainerStateStatusEnum, HealthStatusEnum};
use std::collections::BTreeMap;

/// Compose's labels, read for names, one-off detection and network prefixes.
pub const COMPOSE_PROJECT: &str = "com.docker.compose.project";
/// The compose service a container belongs to.
pub const COMPOSE_SERVICE: &str = "com.docker.compose.service";
/// The stack a Swarm service belongs to (`docker stack deploy`): its
/// project, for names and network prefixes.
pub const STACK_NAMESPACE: &str = "com.docker.stack.namespace";
/// `True` on containers made by `docker compose run`.
pub const COMPOSE_ONEOFF: &str = "com.docker.compose.oneoff";

/// Docker's container state, plus `Removed` for a container the provider
/// still remembers after Docker deleted it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunState {
    /// Created, never started.
    Created,
    /// Running (it may still be unhealthy).
    Running,
    /// Paused.
    Paused,
    /// Being restarted by its restart policy.
    Restarting,
    /// Being removed.
    Removing,
    /// Stopped.
    Exited,
    /// Failed to stop or remove.
    Dead,
    /// No longer known to Docker.
    Removed,
}

impl RunState {
    /// Docker's word for the state.
    pub fn as_str(self) -> &'static str {
        match self {
            RunState::Created => "created",
            RunState::Running => "running",
            RunState::Paused => "paused",
            RunState::Restarting => "restarting",
            RunState::Removing => "removing",
            RunState::Exited => "exited",
            RunState::Dead => "dead",
            RunState::Removed => "removed",
        }
    }
}

/// The result of a container's Docker health check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Health {
    /// Not passed yet.
    Starting,
    /// Passing.
    Healthy,
    /// Failing.
    Unhealthy,
}

impl Health {
    /// Docker's word for the status.
    pub fn as_str(self) -> &'static str {
        match self {
            Health::Starting => "starting",
            Health::Healthy => "healthy",
            Health::Unhealthy => "unhealthy",
        }
    }
}

/// One port of a container, exposed or published.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortView {
    /// The port inside the container.
    pub port: u16,
    /// `tcp`, `udp` or `sctp`.
    pub proto: String,
    /// Where it is published on the host: (host IP as Docker reports it, host port).
    pub bindings: Vec<(String, u16)>,
}

/// What routing needs to know about one container.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContainerView {
    /// The full id.
    pub id: String,
    /// The name, without Docker's leading `/`.
    pub name: String,
    /// Creation time in nanoseconds since the Unix epoch ("oldest" wins conflicts).
    pub created_ns: i128,
    /// Every label.
    pub labels: BTreeMap<String, String>,
    /// Docker's state.
    pub state: RunState,
    /// Health check status, when the container has a health check.
    pub health: Option<Health>,
    /// `host`, `bridge`, `none`, `container:<id>` or a network name.
    pub network_mode: String,
    /// Networks the container is attached to, with its address on each
    /// (empty when it has none there).
    pub networks: BTreeMap<String, String>,
    /// Exposed and published ports.
    pub ports: Vec<PortView>,
    /// When it stopped (exited/dead), in milliseconds since the Unix epoch.
    pub finished_ms: Option<u64>,
    /// Set by the provider: a stop or kill was seen and the container is
    /// being taken out of rotation before its process exits.
    pub draining: bool,
    /// Set by the provider: since when (ms since the epoch) the container has
    /// not been able to take traffic; None while it can.
    pub down_since_ms: Option<u64>,
    /// Set by the Swarm provider: the service and task this view stands for.
    pub swarm: Option<SwarmTask>,
}

impl ContainerView {
    /// A running container with these labels and nothing else, for tests.
    #[cfg(test)]
    pub(crate) fn running(id: &str, name: &str, labels: &[(&str, &str)]) -> ContainerView {
        ContainerView {
            id: id.to_owned(),
            name: name.to_owned(),
            created_ns: 0,
            labels: labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            state: RunState::Running,
            health: None,
            network_mode: "host".to_owned(),
            networks: BTreeMap::new(),
            ports: Vec::new(),
            finished_ms: None,
            draining: false,
            down_since_ms: None,
            swarm: None,
        }
    }

    /// The compose project, if the container belongs to one.
    pub fn compose_project(&self) -> Option<&str> {
        [COMPOSE_PROJECT, STACK_NAMESPACE]
            .iter()
            .find_map(|key| self.labels.get(*key))
            .map(String::as_str)
            .filter(|s| !s.is_empty())
    }

    /// The compose service, if the container belongs to one.
    pub fn compose_service(&self) -> Option<&str> {
        self.labels
            .get(COMPOSE_SERVICE)
            .map(String::as_str)
            .filter(|s| !s.is_empty())
    }

    /// Whether `docker compose run` made it.
    pub fn is_one_off(&self) -> bool {
        self.labels
            .get(COMPOSE_ONEOFF)
            .is_some_and(|v| v.eq_ignore_ascii_case("true"))
    }

    /// Whether it can take traffic now: running, healthy if checked, not draining.
    pub fn can_serve(&self) -> bool {
        self.state == RunState::Running
            && matches!(self.health, None | Some(Health::Healthy))
            && !self.draining
    }

    /// Narrows Docker's inspect answer. None when the answer lacks an id.
    pub fn from_inspect(c: ContainerInspectResponse) -> Option<ContainerView> {
        let id = c.id.filter(|s| !s.is_empty())?;
        let name = c
            .name
            .map(|n| n.trim_start_matches('/').to_owned())
            .unwrap_or_else(|| id.chars().take(12).collect());
        let created_ns = c.created.as_deref().and_then(parse_rfc3339).unwrap_or(0);
        let (labels, exposed) = match c.config {
            Some(config) => (
                config.labels.unwrap_or_default(),
                config.exposed_ports.unwrap_or_default(),
            ),
            None => Default::default(),
        };
        let state = c.state.unwrap_or_default();
        let run_state = match state.status {
            Some(ContainerStateStatusEnum::CREATED) => RunState::Created,
            Some(ContainerStateStatusEnum::RUNNING) => RunState::Running,
            Some(ContainerStateStatusEnum::PAUSED) => RunState::Paused,
            Some(ContainerStateStatusEnum::RESTARTING) => RunState::Restarting,
            Some(ContainerStateStatusEnum::REMOVING) => RunState::Removing,
            Some(ContainerStateStatusEnum::DEAD) => RunState::Dead,
            Some(
                ContainerStateStatusEnum::EXITED
                | ContainerStateStatusEnum::STOPPING
                | ContainerStateStatusEnum::EMPTY,
            )
            | None => {
                if state.running == Some(true) {
                    RunState::Running
                } else {
                    RunState::Exited
                }
            }
        };
        let health = match state.health.and_then(|h| h.status) {
            Some(HealthStatusEnum::STARTING) => Some(Health::Starting),
            Some(HealthStatusEnum::HEALTHY) => Some(Health::Healthy),
            Some(HealthStatusEnum::UNHEALTHY) => Some(Health::Unhealthy),
            Some(HealthStatusEnum::NONE | HealthStatusEnum::EMPTY) | None => None,
        };
        let finished_ms = state
            .finished_at
            .as_deref()
            .and_then(parse_rfc3339)
            .filter(|ns| *ns > 0)
            .map(|ns| (ns / 1_000_000) as u64);
        let network_mode = c
            .host_config
            .and_then(|h| h.network_mode)
            .unwrap_or_default();
        let mut networks = BTreeMap::new();
        let mut published = std::collections::HashMap::new();
        if let Some(settings) = c.network_settings {
            for (net, endpoint) in settings.networks.unwrap_or_default() {
                let ip = endpoint
                    .ip_address
                    .filter(|s| !s.is_empty())
                    .or(endpoint.global_ipv6_address.filter(|s| !s.is_empty()))
                    .unwrap_or_default();
                networks.insert(net, ip);
            }
            published = settings.ports.unwrap_or_default();
        }
        let mut ports: BTreeMap<(u16, String), Vec<(String, u16)>> = BTreeMap::new();
        for spec in exposed.iter().chain(published.keys()) {
            if let Some(key) = parse_port_spec(spec) {
                ports.entry(key).or_default();
            }
        }
        for (spec, bindings) in published {
            let Some(key) = parse_port_spec(&spec) else {
                continue;
            };
            let list = ports.entry(key).or_default();
            for b in bindings.unwrap_or_default() {
                if let Some(port) = b.host_port.as_deref().and_then(|p| p.parse().ok()) {
                    list.push((b.host_ip.unwrap_or_default(), port));
                }
            }
        }
        Some(ContainerView {
            id,
            name,
            created_ns,
            labels: labels.into_iter().collect(),
            state: run_state,
            health,
            network_mode,
            networks,
            ports: ports
                .into_iter()
                .map(|((port, proto), bindings)| PortView {
                    port,
                    proto,
                    bindings,
                })
                .collect(),
            finished_ms,
            draining: false,
            down_since_ms: None,
            swarm: None,
        })
    }
}

/// `80/tcp` → (80, "tcp"); a bare `80` is TCP.
fn parse_port_spec(spec: &str) -> Option<(u16, String)> {
    let (port, proto) = spec.split_once('/').unwrap_or((spec, "tcp"));
    Some((port.trim().parse().ok()?, proto.trim().to_ascii_lowercase()))
}

/// Parses Docker's RFC 3339 timestamps (`2024-05-01T12:00:00.123456789Z`,
/// offsets allowed) into nanoseconds since the Unix epoch. Docker writes
/// `0001-01-01T00:00:00Z` for "never", which comes out negative.
pub fn parse_rfc3339(text: &str) -> Option<i128> {
    let b = text.as_bytes();
    let num = |from: usize, len: usize| -> Option<i64> {
        let s = text.get(from..from + len)?;
        if !s.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        s.parse().ok()
    };
    let (year, month, day) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    if b.get(4) != Some(&b'-')
        || b.get(7) != Some(&b'-')
        || !matches!(b.get(10), Some(b'T' | b't' | b' '))
    {
        return None;
    }
    let (hour, minute, second) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut at = 19;
    let mut nanos: i128 = 0;
    if b.get(at) == Some(&b'.') {
        at += 1;
        let start = at;
        while b.get(at).is_some_and(u8::is_ascii_digit) {
            at += 1;
        }
        let digits = text.get(start..at)?;
        if digits.is_empty() {
            return None;
        }
        let kept: String = digits.chars().take(9).collect();
        nanos = kept.parse::<i128>().ok()? * 10i128.pow(9 - kept.len() as u32);
    }
    let offset_secs: i64 = match b.get(at) {
        Some(b'Z' | b'z') if at + 1 == b.len() => 0,
        Some(sign @ (b'+' | b'-')) if at + 6 == b.len() => {
            let h = num(at + 1, 2)?;
            let m = num(at + 4, 2)?;
            let s = (h * 60 + m) * 60;
            if *sign == b'+' { s } else { -s }
        }
        _ => return None,
    };
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + hour * 3_600 + minute * 60 + second - offset_secs;
    Some(i128::from(secs) * 1_000_000_000 + nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_timestamps_parse_to_nanoseconds() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            parse_rfc3339("2026-11-30T05:30:59.069209913Z"),
            Some(1_796_016_659_069_209_913)
        );
        assert_eq!(
            parse_rfc3339("2026-11-30T05:30:59.0692Z"),
            Some(1_796_016_659_069_200_000)
        );
        assert_eq!(
            parse_rfc3339("2026-11-30T06:30:59+01:00"),
            parse_rfc3339("2026-11-30T05:30:59Z")
        );
        assert!(parse_rfc3339("0001-01-01T00:00:00Z").is_some_and(|n| n < 0));
        for bad in [
            "",
            "2026-11-30",
            "2026-13-01T00:00:00Z",
            "2026-11-30T05:30:59",
            "x026-11-30T05:30:59Z",
            "2026-11-30T05:30:59.Z",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }

    #[test]
    fn port_specs() {
        assert_eq!(parse_port_spec("80/tcp"), Some((80, "tcp".into())));
        assert_eq!(parse_port_spec("53/UDP"), Some((53, "udp".into())));
        assert_eq!(parse_port_spec("8080"), Some((8080, "tcp".into())));
        assert_eq!(parse_port_spec("x/tcp"), None);
    }
}
