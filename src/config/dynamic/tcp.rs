//! The `tcp` section: routers that pick a connection by what the client's
//! TLS ClientHello says (or by nothing at all), and services that forward
//! its bytes to servers. Traefik v3's shape and key names.

use super::{Domain, WeightedService};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The `tcp` section.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct Tcp {
    /// TCP routers by name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub routers: BTreeMap<String, TcpRouter>,
    /// TCP services by name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub services: BTreeMap<String, TcpService>,
    /// TCP middlewares by name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub middlewares: BTreeMap<String, TcpMiddleware>,
    /// TCP servers transports by name; accepted, not applied yet.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub servers_transports: BTreeMap<String, serde_json::Value>,
}

impl Tcp {
    /// Whether the section defines nothing.
    pub fn is_empty(&self) -> bool {
        self.routers.is_empty()
            && self.services.is_empty()
            && self.middlewares.is_empty()
            && self.servers_transports.is_empty()
    }
}

/// A TCP router: a rule over the connection (``HostSNI(`db.example.com`)``,
/// ``HostSNI(`*`)``, `ALPN`, `ClientIP`) and the service that takes it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct TcpRouter {
    /// The entry points this router listens on; empty means all of them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub entry_points: Vec<String>,
    /// The rule.
    pub rule: String,
    /// Traefik's `ruleSyntax`; informational, as for HTTP routers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule_syntax: Option<String>,
    /// Explicit priority; by default the length of the rule. Higher wins.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
    /// TCP middlewares, by name.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub middlewares: Vec<String>,
    /// The service, by name (`name` or `name@provider`).
    pub service: String,
    /// When present, the router takes TLS connections only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<TcpRouterTls>,
}

/// A TCP router's TLS settings.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct TcpRouterTls {
    /// Forward the TLS stream as it is (routed by SNI, never decrypted).
    pub passthrough: bool,
    /// Name of the TLS options used when gangway terminates TLS.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub options: Option<String>,
    /// Certificate resolver for the rule's `HostSNI` names.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cert_resolver: Option<String>,
    /// Explicit domains to obtain certificates for.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub domains: Vec<Domain>,
}

/// A TCP service: exactly one of its kinds is set.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct TcpService {
    /// Spreads connections over servers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_balancer: Option<TcpLoadBalancer>,
    /// Weighted round robin over other TCP services.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weighted: Option<TcpWeighted>,
}

/// Spreads connections over a list of servers, in turn.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct TcpLoadBalancer {
    /// The servers.
    pub servers: Vec<TcpServer>,
    /// PROXY protocol towards the servers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proxy_protocol: Option<ProxyProtocol>,
    /// How long one side of a connection stays open after the other closed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub termination_delay: Option<i64>,
    /// Name of the TCP servers transport to use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub servers_transport: Option<String>,
}

/// One TCP server.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct TcpServer {
    /// `host:port`.
    pub address: String,
    /// Speak TLS to the server.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub tls: bool,
}

/// The PROXY protocol version sent to servers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct ProxyProtocol {
    /// 1 or 2.
    pub version: u8,
}

/// Weighted round robin over TCP services.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct TcpWeighted {
    /// The services and their weights.
    pub services: Vec<WeightedService>,
}

/// A TCP middleware: exactly one of its kinds is set.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct TcpMiddleware {
    /// Only clients from these addresses get through.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip_allow_list: Option<TcpIpAllowList>,
    /// Traefik v2's name for `ipAllowList`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip_white_list: Option<TcpIpAllowList>,
    /// At most `amount` connections of one client address at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_flight_conn: Option<TcpInFlightConn>,
}

/// `ipAllowList` for TCP: the client's own address, in the ranges.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct TcpIpAllowList {
    /// Addresses and CIDR ranges.
    pub source_range: Vec<String>,
}

/// `inFlightConn`: connections of one client address open at once.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct TcpInFlightConn {
    /// The most; a connection past it is closed at once.
    pub amount: i64,
}
