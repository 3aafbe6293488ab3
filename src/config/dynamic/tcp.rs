//! The `tcp` section: routers that pick a connection by what the client's
//! TLS ClientHello says (or by nothing at all), and services that forward
//! its bytes to servers. Traefik v3's shape and key names.

use super::{Domain, WeightedService};
use crate::config::{Duration, SignedDuration};
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
    /// TCP servers transports by name: how gangway connects to the
    /// servers of the load balancers that name them.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub servers_transports: BTreeMap<String, TcpServersTransport>,
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
    /// PROXY protocol towards the servers (Traefik v3 moved it to the
    /// servers transport; still read here).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proxy_protocol: Option<ProxyProtocol>,
    /// Milliseconds one direction of a connection may go on after the other
    /// side closed its writing half; negative: no limit. Deprecated in
    /// Traefik v3 for the servers transport's `terminationDelay`, still read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub termination_delay: Option<i64>,
    /// Name of the TCP servers transport to use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub servers_transport: Option<String>,
    /// Active health check of the servers (Traefik 3.6): a server that
    /// fails it gets no new connections until it passes again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health_check: Option<TcpHealthCheck>,
}

/// How the servers of a TCP load balancer are checked: a connection, then
/// optionally bytes sent and bytes expected back.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct TcpHealthCheck {
    /// Port checked instead of the server address's own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// Bytes written once connected (none when empty).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub send: String,
    /// Bytes the server must answer with (nothing awaited when empty).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub expect: String,
    /// Time between checks of a server that is up (default `30s`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval: Option<Duration>,
    /// Time between checks of a server that is down (default: `interval`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unhealthy_interval: Option<Duration>,
    /// Time one check may take, connection included (default `5s`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Duration>,
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

/// How gangway connects to TCP servers (`tcp.serversTransports.<name>`).
/// What is not set here comes from the static `tcpServersTransport`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct TcpServersTransport {
    /// Time allowed to connect to a server; zero: no limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dial_timeout: Option<Duration>,
    /// Interval of TCP keep-alive probes on server connections; zero: the
    /// default (15s); negative: no probes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dial_keep_alive: Option<SignedDuration>,
    /// How long one direction of a connection may go on after the other
    /// side closed its writing half; negative: no limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub termination_delay: Option<SignedDuration>,
    /// PROXY protocol header sent first to each server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proxy_protocol: Option<ProxyProtocol>,
    /// TLS towards servers marked `tls`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<TcpClientTls>,
    /// SPIFFE identities (Traefik's; not supported by gangway).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spiffe: Option<serde_json::Value>,
}

/// TLS towards TCP servers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct TcpClientTls {
    /// Name sent as SNI and verified in the server's certificate, instead
    /// of the server address's host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_name: Option<String>,
    /// Accept any server certificate.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub insecure_skip_verify: bool,
    /// CAs trusted for the servers' certificates instead of the built-in
    /// roots: PEM file paths or PEM text.
    #[serde(
        rename = "rootCAs",
        alias = "rootcas",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub root_cas: Vec<String>,
    /// Client certificates offered to servers that ask for one (mTLS).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub certificates: Vec<ClientCertificate>,
    /// A URI the server certificate's subject alternative names must hold
    /// (SPIFFE-style), checked instead of the server name.
    #[serde(rename = "peerCertURI", skip_serializing_if = "Option::is_none")]
    pub peer_cert_uri: Option<String>,
    /// SPIFFE settings (Traefik's; not supported by gangway).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spiffe: Option<serde_json::Value>,
}

/// A client certificate and its key, as PEM file paths or inline PEM.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct ClientCertificate {
    /// Certificate chain, PEM.
    pub cert_file: String,
    /// Private key, PEM. Never published by the API.
    #[serde(skip_serializing)]
    pub key_file: String,
}

/// The PROXY protocol version sent to servers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct ProxyProtocol {
    /// 1 or 2; when left out, 2 (Traefik's default).
    pub version: u8,
}

/// Weighted round robin over TCP services.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct TcpWeighted {
    /// The services and their weights.
    pub services: Vec<WeightedService>,
    /// Traefik 3.6: propagate health from the children. A child with no
    /// server up is always passed over, so this is accepted as the
    /// behaviour it asks for (its value has no options).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health_check: Option<serde_json::Value>,
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
