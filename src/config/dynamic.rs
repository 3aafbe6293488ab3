//! The dynamic model: routers, services, middlewares and TLS material, in
//! Traefik v3's shape and key names, so that a Traefik file-provider
//! configuration loads unchanged. Every provider produces this; the API
//! publishes it as raw data.

pub mod middleware;
pub mod tcp;
pub mod udp;

pub use middleware::Middleware;
pub use tcp::Tcp;
pub use udp::Udp;

use super::Duration;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A whole dynamic configuration. Inside one provider, names are bare
/// (`app`); after aggregation every key is qualified (`app@file`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Dynamic {
    /// HTTP routers, services, middlewares and servers transports.
    pub http: Http,
    /// TLS certificates, options and stores.
    pub tls: Tls,
    /// TCP routers, services and middlewares.
    #[serde(skip_serializing_if = "Tcp::is_empty")]
    pub tcp: Tcp,
    /// UDP routers and services.
    #[serde(skip_serializing_if = "Udp::is_empty")]
    pub udp: Udp,
}

/// The `http` section.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct Http {
    /// Routers by name: which requests go where.
    pub routers: BTreeMap<String, Router>,
    /// Services by name: where requests are sent.
    pub services: BTreeMap<String, Service>,
    /// Middlewares by name: what happens to a request on the way.
    pub middlewares: BTreeMap<String, Middleware>,
    /// How gangway talks to servers, by name, referenced from load balancers.
    pub servers_transports: BTreeMap<String, ServersTransport>,
}

/// A router: a rule that selects requests, and the service that answers them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct Router {
    /// The entry points this router listens on; empty means all of them
    /// (except gangway's internal one), as in Traefik.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub entry_points: Vec<String>,
    /// The rule, e.g. ``Host(`app.localhost`) && PathPrefix(`/api`)``.
    pub rule: String,
    /// Traefik's `ruleSyntax`: `v2` reads the rule in Traefik v2's syntax
    /// (deprecated, with a warning), `v3` in v3's; unset, the static
    /// `core.defaultRuleSyntax` decides.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule_syntax: Option<String>,
    /// Explicit priority; by default the length of the rule. Higher wins.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
    /// Middlewares applied in order, by name (`name` or `name@provider`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub middlewares: Vec<String>,
    /// The service that answers, by name (`name` or `name@provider`).
    /// A router that other routers name as their parent has none.
    pub service: String,
    /// Multi-layer routing (Traefik 3.6): the routers this one is a child
    /// of, by name (`name` or `name@provider`). A child is tried only for
    /// requests its parent matched, after the parent's middlewares ran, and
    /// has no `entryPoints`, `tls` or `observability` of its own. Read from
    /// files and KV stores, not from labels, as in Traefik.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parent_refs: Vec<String>,
    /// When present, the router matches only TLS connections.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<RouterTls>,
    /// Traefik's per-router observability switches; `tracing: false` keeps
    /// the router's requests out of traces (the others are accepted, not
    /// yet used).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observability: Option<serde_json::Value>,
}

/// A router's TLS settings.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct RouterTls {
    /// Name of the TLS options (`tls.options.<name>`) to use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub options: Option<String>,
    /// Name of the certificate resolver that obtains certificates for this router.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cert_resolver: Option<String>,
    /// Explicit domains to obtain certificates for, instead of the rule's hosts.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub domains: Vec<Domain>,
}

/// A certificate's main domain and its alternative names.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct Domain {
    /// The main name.
    pub main: String,
    /// Subject alternative names.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sans: Vec<String>,
}

/// A service: exactly one of its kinds is set.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct Service {
    /// Balances requests over servers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_balancer: Option<LoadBalancer>,
    /// Weighted round robin over other services.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weighted: Option<Weighted>,
    /// Sends to one service and copies a share of requests to others.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mirroring: Option<Mirroring>,
    /// Sends to one service, and to a fallback while it is down.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failover: Option<Failover>,
    /// Keeps each client IP on one of several services (rendezvous hashing
    /// with weights).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub highest_random_weight: Option<HighestRandomWeight>,
    /// Middlewares applied to every request this service handles, after
    /// the router's (by name, `name` or `name@provider`, in the service's
    /// provider). Applied when a router names the service directly.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub middlewares: Vec<String>,
}

/// Balances requests over a list of servers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct LoadBalancer {
    /// The servers, each a URL (`http://127.0.0.1:9000`, `h2c://…` for HTTP/2 cleartext).
    pub servers: Vec<Server>,
    /// Whether the client's `Host` header is sent to the server (default true).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pass_host_header: Option<bool>,
    /// Sticky sessions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sticky: Option<Sticky>,
    /// How a server is chosen: `wrr` (weighted round robin, the default),
    /// `p2c` (power of two choices on requests in flight), `hrw` (highest
    /// random weight on the client's IP) or `leasttime` (lowest time to
    /// first byte times requests in flight, over the weight).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strategy: Option<String>,
    /// Active health checks of the servers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health_check: Option<HealthCheck>,
    /// Passive health: servers whose requests fail are taken out of the
    /// rotation for a while. (`passiveHealthcheck`, as Traefik's examples
    /// spell it, is read too.)
    #[serde(skip_serializing_if = "Option::is_none", alias = "passiveHealthcheck")]
    pub passive_health_check: Option<PassiveHealthCheck>,
    /// How responses are flushed to the client.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_forwarding: Option<ResponseForwarding>,
    /// Name of the servers transport to use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub servers_transport: Option<String>,
    /// gangway: requests that may be in progress at once for this service
    /// (0: no limit); default `serversTransport.maxConcurrentRequests`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_concurrent_requests: Option<usize>,
    /// gangway: how long a request past `maxConcurrentRequests` may wait for
    /// a slot before it gets 503; default `serversTransport.queueTimeout`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_timeout: Option<Duration>,
}

impl LoadBalancer {
    /// `passHostHeader` with Traefik's default applied.
    pub fn passes_host_header(&self) -> bool {
        self.pass_host_header.unwrap_or(true)
    }
}

/// One server of a load balancer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct Server {
    /// Where the server is: `http://host:port[/path]`, `https://…` or `h2c://…`.
    pub url: String,
    /// Relative weight in the rotation (default 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weight: Option<u32>,
    /// Keep the URL's path as a prefix of the request path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preserve_path: Option<bool>,
}

/// Sticky sessions.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct Sticky {
    /// Stickiness by cookie.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cookie: Option<StickyCookie>,
}

/// The cookie that keeps a client on one server.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct StickyCookie {
    /// Cookie name (default: derived from the service name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Set the `Secure` attribute.
    pub secure: bool,
    /// Set the `HttpOnly` attribute.
    pub http_only: bool,
    /// `SameSite` attribute: `none`, `lax` or `strict`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub same_site: Option<String>,
    /// `Max-Age` in seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_age: Option<i64>,
    /// `Path` attribute (default `/`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// `Domain` attribute.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
}

/// An active health check.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct HealthCheck {
    /// `http` or `https` (default: the server's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheme: Option<String>,
    /// `http` or `grpc`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Path to request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Method to use (default GET).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Expected status (default: any 2xx or 3xx).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Port to check instead of the server's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// Time between checks (default 30s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval: Option<Duration>,
    /// Time between checks while the server is down (default: `interval`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unhealthy_interval: Option<Duration>,
    /// Time a check may take (default 5s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Duration>,
    /// `Host` header of the check request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// Follow redirects (default true).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub follow_redirects: Option<bool>,
    /// Extra request headers.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
}

/// Passive health of a load balancer's servers, judged from the proxy's
/// own requests: a server that fails `maxFailedAttempts` times within
/// `failureWindow` (no connection, or a 5xx answer) is out of the rotation
/// for `failureWindow`, then tried again.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct PassiveHealthCheck {
    /// The window the failures must fall in, and how long the server then
    /// stays out (default 10s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_window: Option<Duration>,
    /// Failures within the window that take the server out (default 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_failed_attempts: Option<u32>,
}

/// Response forwarding options.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct ResponseForwarding {
    /// How often buffered response data is flushed; gangway streams frames as
    /// they arrive, so this is accepted for compatibility.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flush_interval: Option<Duration>,
}

/// Weighted round robin over services.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct Weighted {
    /// The services and their weights.
    pub services: Vec<WeightedService>,
    /// Sticky sessions across the services.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sticky: Option<Sticky>,
    /// Propagate health from the children.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health_check: Option<serde_json::Value>,
}

/// Highest random weight over services: each client IP goes to the
/// service that scores highest for it, so a client stays on one service
/// while the list changes around it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct HighestRandomWeight {
    /// The services and their weights.
    pub services: Vec<WeightedService>,
    /// Propagate health from the children.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health_check: Option<serde_json::Value>,
}

/// One service of a weighted service.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct WeightedService {
    /// Service name (`name` or `name@provider`).
    pub name: String,
    /// Relative weight (default 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weight: Option<u32>,
}

/// Mirroring: one main service, copies to others.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct Mirroring {
    /// The service that answers.
    pub service: String,
    /// Whether request bodies are mirrored too (default true).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mirror_body: Option<bool>,
    /// Largest body that is mirrored, in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_body_size: Option<i64>,
    /// Where copies go.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mirrors: Vec<Mirror>,
    /// Propagate health from the main service.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health_check: Option<serde_json::Value>,
}

/// One mirror target.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct Mirror {
    /// Service name.
    pub name: String,
    /// Share of requests copied, 0–100.
    pub percent: u32,
}

/// Failover: a main service and a fallback.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct Failover {
    /// The main service.
    pub service: String,
    /// The service used while the main one is down.
    pub fallback: String,
    /// Propagate health from the children.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health_check: Option<serde_json::Value>,
    /// Fail over on the main service's answer too: a status in these
    /// ranges sends the request again to the fallback.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<FailoverErrors>,
}

/// Failover on status codes (Traefik 3.7).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct FailoverErrors {
    /// Statuses that fail over: codes (`"502"`) and ranges (`"500-504"`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub status: Vec<String>,
    /// Largest request body held in memory to send it again (bigger: 413);
    /// unset or negative: gangway's bound of 4 MiB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_request_body_bytes: Option<i64>,
}

/// How gangway connects to servers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct ServersTransport {
    /// SNI sent to HTTPS servers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_name: Option<String>,
    /// Skip verification of HTTPS servers' certificates.
    pub insecure_skip_verify: bool,
    /// PEM files of CAs trusted for HTTPS servers.
    #[serde(rename = "rootCAs", skip_serializing_if = "Vec::is_empty")]
    pub root_cas: Vec<String>,
    /// Idle keep-alive connections kept per server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_idle_conns_per_host: Option<usize>,
    /// Timeouts when talking to servers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forwarding_timeouts: Option<ForwardingTimeouts>,
    /// Never use HTTP/2 towards HTTPS servers.
    #[serde(rename = "disableHTTP2")]
    pub disable_http2: bool,
    /// Client certificates offered to HTTPS servers that ask for one
    /// (mTLS); with several, the one issued by a CA the server names in its
    /// request, else the first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub certificates: Vec<tcp::ClientCertificate>,
    /// TLS 1.2 cipher suites offered, by IANA name (TLS 1.3 suites are
    /// always offered, as in Go).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cipher_suites: Vec<String>,
    /// Lowest TLS version towards servers: `VersionTLS12` (default) or
    /// `VersionTLS13`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_version: Option<String>,
    /// Highest TLS version towards servers (default `VersionTLS13`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_version: Option<String>,
    /// A URI the server certificate's subject alternative names must hold
    /// (SPIFFE-style), checked instead of the server name.
    #[serde(rename = "peerCertURI", skip_serializing_if = "Option::is_none")]
    pub peer_cert_uri: Option<String>,
    /// SPIFFE identities (Traefik's; not supported by gangway: a service
    /// naming a transport with it is disabled with that reason).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spiffe: Option<serde_json::Value>,
}

/// Timeouts towards servers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct ForwardingTimeouts {
    /// Time to establish a connection (default 30s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dial_timeout: Option<Duration>,
    /// Time to wait for the response headers once the request is sent (default: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_header_timeout: Option<Duration>,
    /// How long an idle keep-alive connection is kept (default 90s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_conn_timeout: Option<Duration>,
    /// HTTP/2 towards servers: after this long without a frame from the
    /// server, a PING checks the connection (default: no pings).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_idle_timeout: Option<Duration>,
    /// HTTP/2 towards servers: how long a PING's answer may take before the
    /// connection is closed (default 15s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ping_timeout: Option<Duration>,
}

/// The `tls` section.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct Tls {
    /// Certificates from files.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub certificates: Vec<CertificateFile>,
    /// Named TLS options.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub options: BTreeMap<String, TlsOptions>,
    /// Certificate stores (gangway has one, `default`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub stores: BTreeMap<String, TlsStore>,
}

/// A certificate and key, as PEM file paths (or inline PEM).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct CertificateFile {
    /// Certificate chain, PEM.
    pub cert_file: String,
    /// Private key, PEM. Never published by the API.
    #[serde(skip_serializing)]
    pub key_file: String,
    /// Stores this certificate belongs to.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stores: Vec<String>,
}

/// TLS options for routers that name them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct TlsOptions {
    /// Lowest version: `VersionTLS12` or `VersionTLS13`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_version: Option<String>,
    /// Highest version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_version: Option<String>,
    /// Allowed cipher suites, by IANA name.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cipher_suites: Vec<String>,
    /// Preferred key-exchange groups.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub curve_preferences: Vec<String>,
    /// Client certificate authentication.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_auth: Option<ClientAuth>,
    /// Refuse handshakes without a known SNI.
    pub sni_strict: bool,
    /// ALPN protocols offered (default `h2`, `http/1.1`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub alpn_protocols: Vec<String>,
    /// Issue no session tickets (`disableSessionTickets`): TLS 1.3 clients
    /// then resume no session, TLS 1.2 ones only from the server's session
    /// cache (by session ID).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub disable_session_tickets: bool,
    /// Pick the cipher suite in the server's order of preference rather
    /// than the client's (`preferServerCipherSuites`). Go, and so Traefik,
    /// always uses its own order; rustls follows the client's unless this
    /// is set.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub prefer_server_cipher_suites: bool,
}

/// Client certificate requirements.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct ClientAuth {
    /// PEM files of the CAs that client certificates must chain to.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ca_files: Vec<String>,
    /// `NoClientCert`, `RequestClientCert`, `RequireAnyClientCert`,
    /// `VerifyClientCertIfGiven` or `RequireAndVerifyClientCert`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_auth_type: Option<String>,
}

/// A certificate store.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct TlsStore {
    /// The certificate served when no other matches the SNI.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_certificate: Option<CertificateFile>,
    /// The default certificate ordered from a certificate resolver for
    /// the names given, stored and renewed like a router's; the generated
    /// self-signed one is served until it arrives. `defaultCertificate`
    /// wins when both are set, as in Traefik.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_generated_cert: Option<GeneratedCert>,
}

/// A default certificate ordered from a certificate resolver
/// (`tls.stores.default.defaultGeneratedCert`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct GeneratedCert {
    /// The certificate resolver that orders it.
    pub resolver: String,
    /// The names it is ordered for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domain: Option<Domain>,
}

impl GeneratedCert {
    /// The names to order, main name first, lowercased and without a
    /// trailing dot; empty names are left out.
    pub fn domains(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for name in self
            .domain
            .iter()
            .flat_map(|d| std::iter::once(&d.main).chain(&d.sans))
        {
            let name = name.trim().trim_end_matches('.').to_ascii_lowercase();
            if !name.is_empty() && !out.contains(&name) {
                out.push(name);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::format::{Format, parse_document};

    #[test]
    fn traefik_file_provider_toml_loads_unchanged() {
        let text = r#"
[http.routers.app]
  rule = "Host(`app.localhost`) && PathPrefix(`/api`)"
  service = "app"
  entryPoints = ["web"]
[http.services.app.loadBalancer]
  [[http.services.app.loadBalancer.servers]]
    url = "http://127.0.0.1:9000"
"#;
        let d: Dynamic = parse_document("dynamic.toml", text, Format::Toml).expect("loads");
        let r = &d.http.routers["app"];
        assert_eq!(r.entry_points, ["web"]);
        assert_eq!(r.service, "app");
        let lb = d.http.services["app"].load_balancer.as_ref().expect("lb");
        assert_eq!(lb.servers[0].url, "http://127.0.0.1:9000");
        assert!(lb.passes_host_header());
    }

    #[test]
    fn traefik_file_provider_yaml_loads_unchanged() {
        let text = r#"
http:
  routers:
    app:
      rule: "Host(`app.localhost`)"
      service: app
      middlewares: [strip]
      tls:
        certResolver: le
  middlewares:
    strip:
      stripPrefix:
        prefixes: ["/api"]
  services:
    app:
      weighted:
        services:
          - name: a
            weight: 3
          - name: b
tcp:
  routers: {}
"#;
        let d: Dynamic = parse_document("dynamic.yml", text, Format::Yaml).expect("loads");
        assert_eq!(
            d.http.routers["app"]
                .tls
                .as_ref()
                .and_then(|t| t.cert_resolver.as_deref()),
            Some("le")
        );
        assert_eq!(
            d.http.middlewares["strip"]
                .strip_prefix
                .as_ref()
                .map(|s| s.prefixes.clone()),
            Some(vec!["/api".to_owned()])
        );
        assert_eq!(
            d.http.services["app"]
                .weighted
                .as_ref()
                .map(|w| w.services.len()),
            Some(2)
        );
        assert!(d.tcp.is_empty());
    }

    #[test]
    fn unknown_keys_name_the_key_and_line() {
        let text = "[http.routers.app]\nrule = \"Host(`a`)\"\nservise = \"app\"\n";
        let err = parse_document::<Dynamic>("d.toml", text, Format::Toml).expect_err("unknown key");
        let msg = err.to_string();
        assert!(msg.contains("line 3") && msg.contains("servise"), "{msg}");
    }
}
