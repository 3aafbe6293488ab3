//! What a manager says about services, tasks and nodes, narrowed to the
//! facts routing needs, and turned into the Docker provider's
//! `ContainerView`s so that one label parser and one builder serve both.
//! Everything here is pure.

use crate::config::provenance::SwarmTask;
use crate::provider::docker::container::{ContainerView, RunState};
use crate::provider::docker::parse_labels;
use std::collections::{BTreeMap, HashMap};

/// One Swarm service.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServiceFacts {
    /// Its id.
    pub id: String,
    /// Its name (`stack_web`).
    pub name: String,
    /// `deploy.labels`: the service's labels, not its containers'.
    pub labels: BTreeMap<String, String>,
    /// Creation time, nanoseconds since the epoch.
    pub created_ns: i128,
    /// Its tasks use the host's network.
    pub host_network: bool,
    /// Its virtual IP on each network, by network name (no prefix length).
    pub virtual_ips: BTreeMap<String, String>,
    /// Its mode: `replicated`, `global`, `replicated-job` or `global-job`.
    pub mode: &'static str,
    /// The replicas asked for, for a replicated service.
    pub replicas: Option<u64>,
}

/// One task that is meant to run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskFacts {
    /// Its id.
    pub id: String,
    /// Its service's id.
    pub service_id: String,
    /// The node it was placed on.
    pub node_id: String,
    /// Creation time, nanoseconds since the epoch.
    pub created_ns: i128,
    /// Its state is `running` (which, for an image with a health check,
    /// Swarm reports only once the check passes).
    pub running: bool,
    /// Its address on each network, by network name (no prefix length).
    pub addresses: BTreeMap<String, String>,
}

/// One node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeFacts {
    /// `Status.Addr`: where tasks on the host network listen.
    pub addr: String,
    /// Its state is `ready`.
    pub ready: bool,
    /// Its availability is `active` (not `pause` or `drain`).
    pub active: bool,
}

/// Everything read from a manager in one pass.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cluster {
    /// Every service.
    pub services: Vec<ServiceFacts>,
    /// Tasks whose desired state is `running`.
    pub tasks: Vec<TaskFacts>,
    /// Nodes by id.
    pub nodes: HashMap<String, NodeFacts>,
}

/// One view per task that can take traffic (a running task on a ready,
/// active node), named after its service so that a service's tasks join
/// one load balancer; with `<prefix>.swarm.lbswarm=true`, one view for the
/// service at its virtual IP instead. A service with no such task gets one
/// stopped view, so it is reported as not routed, with why.
pub fn views(cluster: &Cluster, prefix: &str) -> Vec<ContainerView> {
    let mut out = Vec::new();
    for service in &cluster.services {
        let base = ContainerView {
            id: service.id.clone(),
            name: service.name.clone(),
            created_ns: service.created_ns,
            labels: service.labels.clone(),
            state: RunState::Running,
            health: None,
            network_mode: if service.host_network {
                "host".to_owned()
            } else {
                String::new()
            },
            networks: BTreeMap::new(),
            ports: Vec::new(),
            finished_ms: None,
            draining: false,
            down_since_ms: None,
            swarm: None,
        };
        let service_ref = SwarmTask {
            service_id: service.id.clone(),
            service_name: service.name.clone(),
            ..SwarmTask::default()
        };
        let serving: Vec<&TaskFacts> = cluster
            .tasks
            .iter()
            .filter(|t| t.service_id == service.id && t.running)
            .filter(|t| {
                cluster
                    .nodes
                    .get(&t.node_id)
                    .is_some_and(|n| n.ready && n.active)
            })
            .collect();
        if serving.is_empty() {
            out.push(ContainerView {
                state: RunState::Exited,
                down_since_ms: Some(0),
                swarm: Some(service_ref),
                ..base
            });
            continue;
        }
        if parse_labels(prefix, &service.labels).lb_swarm {
            out.push(ContainerView {
                networks: service.virtual_ips.clone(),
                swarm: Some(service_ref),
                ..base
            });
            continue;
        }
        for task in serving {
            let networks = if service.host_network {
                let addr = cluster
                    .nodes
                    .get(&task.node_id)
                    .map(|n| n.addr.clone())
                    .unwrap_or_default();
                BTreeMap::from([("host".to_owned(), addr)])
            } else {
                task.addresses.clone()
            };
            out.push(ContainerView {
                id: task.id.clone(),
                created_ns: task.created_ns,
                networks,
                swarm: Some(SwarmTask {
                    task_id: Some(task.id.clone()),
                    node_id: Some(task.node_id.clone()),
                    ..service_ref.clone()
                }),
                ..base.clone()
            });
        }
    }
    out
}

/// An address without its prefix length (`10.0.1.5/24` → `10.0.1.5`).
pub fn without_prefix(cidr: &str) -> String {
    cidr.split('/').next().unwrap_or_default().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service(id: &str, labels: &[(&str, &str)], host: bool) -> ServiceFacts {
        ServiceFacts {
            id: id.to_owned(),
            name: format!("stack_{id}"),
            labels: labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            created_ns: 1,
            host_network: host,
            virtual_ips: BTreeMap::from([("stack_net".to_owned(), "10.0.1.2".to_owned())]),
            mode: "replicated",
            replicas: Some(1),
        }
    }

    fn task(id: &str, service: &str, node: &str, running: bool) -> TaskFacts {
        TaskFacts {
            id: id.to_owned(),
            service_id: service.to_owned(),
            node_id: node.to_owned(),
            created_ns: 2,
            running,
            addresses: BTreeMap::from([("stack_net".to_owned(), format!("10.0.1.{}", id.len()))]),
        }
    }

    fn node(addr: &str, ready: bool, active: bool) -> NodeFacts {
        NodeFacts {
            addr: addr.to_owned(),
            ready,
            active,
        }
    }

    #[test]
    fn running_tasks_on_ready_active_nodes_are_the_servers() {
        let cluster = Cluster {
            services: vec![service("web", &[], true)],
            tasks: vec![
                task("t1", "web", "n1", true),
                task("t2", "web", "n2", true),
                task("t3", "web", "n3", true),
                task("t4", "web", "n1", false),
            ],
            nodes: HashMap::from([
                ("n1".to_owned(), node("127.0.0.1", true, true)),
                ("n2".to_owned(), node("127.0.0.2", true, false)),
                ("n3".to_owned(), node("127.0.0.3", false, true)),
            ]),
        };
        let views = views(&cluster, "gangway");
        // The drained node's and the down node's tasks, and the task not
        // running yet, are left out.
        assert_eq!(views.len(), 1, "{views:?}");
        let v = &views[0];
        assert_eq!((v.id.as_str(), v.name.as_str()), ("t1", "stack_web"));
        assert_eq!(v.network_mode, "host");
        assert_eq!(v.networks["host"], "127.0.0.1", "the node's address");
        assert_eq!(v.state, RunState::Running);
        assert_eq!(
            v.swarm,
            Some(SwarmTask {
                service_id: "web".to_owned(),
                service_name: "stack_web".to_owned(),
                task_id: Some("t1".to_owned()),
                node_id: Some("n1".to_owned()),
            })
        );
    }

    #[test]
    fn lbswarm_gives_one_server_at_the_virtual_ip_and_no_task_a_stopped_view() {
        let cluster = Cluster {
            services: vec![
                service("vip", &[("traefik.swarm.lbswarm", "true")], false),
                service("idle", &[], false),
                service("each", &[], false),
            ],
            tasks: vec![
                task("a", "vip", "n1", true),
                task("bb", "vip", "n1", true),
                task("c", "each", "n1", true),
                task("dd", "each", "n1", true),
            ],
            nodes: HashMap::from([("n1".to_owned(), node("127.0.0.1", true, true))]),
        };
        let views = views(&cluster, "traefik");
        let vip: Vec<_> = views.iter().filter(|v| v.name == "stack_vip").collect();
        assert_eq!(vip.len(), 1);
        assert_eq!(vip[0].networks["stack_net"], "10.0.1.2");
        let service_only = vip[0].swarm.as_ref().expect("the service");
        assert_eq!(service_only.service_id, "vip");
        assert_eq!(service_only.task_id, None, "no task behind a virtual IP");
        let idle: Vec<_> = views.iter().filter(|v| v.name == "stack_idle").collect();
        assert_eq!(idle.len(), 1);
        assert_eq!(idle[0].state, RunState::Exited);
        let each: Vec<&str> = views
            .iter()
            .filter(|v| v.name == "stack_each")
            .map(|v| v.networks["stack_net"].as_str())
            .collect();
        assert_eq!(each, ["10.0.1.1", "10.0.1.2"]);
    }

    #[test]
    fn prefix_lengths_are_dropped() {
        assert_eq!(without_prefix("10.0.1.5/24"), "10.0.1.5");
        assert_eq!(without_prefix("fd00::5/64"), "fd00::5");
        assert_eq!(without_prefix("127.0.0.1"), "127.0.0.1");
    }
}
