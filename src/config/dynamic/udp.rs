//! The `udp` section: routers that take a UDP entry point's datagrams
//! (a UDP router has no rule) and services that forward them to servers,
//! one session per client. Traefik v3's shape and key names.

use super::WeightedService;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The `udp` section.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct Udp {
    /// UDP routers by name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub routers: BTreeMap<String, UdpRouter>,
    /// UDP services by name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub services: BTreeMap<String, UdpService>,
}

impl Udp {
    /// Whether the section defines nothing.
    pub fn is_empty(&self) -> bool {
        self.routers.is_empty() && self.services.is_empty()
    }
}

/// A UDP router: every datagram of its entry points goes to its service.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct UdpRouter {
    /// The UDP entry points it takes; empty means every UDP entry point.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub entry_points: Vec<String>,
    /// The service, by name (`name` or `name@provider`).
    pub service: String,
}

/// A UDP service: exactly one of its kinds is set.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct UdpService {
    /// Spreads client sessions over servers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_balancer: Option<UdpLoadBalancer>,
    /// Weighted round robin over other UDP services.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weighted: Option<UdpWeighted>,
}

/// Spreads client sessions over a list of servers, in turn.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct UdpLoadBalancer {
    /// The servers.
    pub servers: Vec<UdpServer>,
}

/// One UDP server.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct UdpServer {
    /// `host:port`.
    pub address: String,
}

/// Weighted round robin over UDP services.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct UdpWeighted {
    /// The services and their weights.
    pub services: Vec<WeightedService>,
}
