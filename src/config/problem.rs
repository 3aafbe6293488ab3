//! What is wrong with a piece of dynamic configuration, typed: the object,
//! its provider, where the object is written (file and line, container and
//! label) and the kind of problem. Every reader — the log, the API, the
//! dashboard, `gangway check` — renders from these fields; the message is
//! written once, by `Display`, and nothing reads it back.

use super::QualifiedName;
use serde::Serialize;
use std::fmt;

/// The kind of a dynamic object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ObjectKind {
    /// An HTTP router.
    Router,
    /// An HTTP service.
    Service,
    /// An HTTP middleware.
    Middleware,
    /// A TCP router.
    #[serde(rename = "tcpRouter")]
    TcpRouter,
    /// A TCP service.
    #[serde(rename = "tcpService")]
    TcpService,
    /// A TCP middleware.
    #[serde(rename = "tcpMiddleware")]
    TcpMiddleware,
    /// A UDP router.
    #[serde(rename = "udpRouter")]
    UdpRouter,
    /// A UDP service.
    #[serde(rename = "udpService")]
    UdpService,
}

impl ObjectKind {
    /// The word for it: `router`, `service`, `middleware`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ObjectKind::Router => "router",
            ObjectKind::Service => "service",
            ObjectKind::Middleware => "middleware",
            ObjectKind::TcpRouter => "TCP router",
            ObjectKind::TcpService => "TCP service",
            ObjectKind::TcpMiddleware => "TCP middleware",
            ObjectKind::UdpRouter => "UDP router",
            ObjectKind::UdpService => "UDP service",
        }
    }
}

impl fmt::Display for ObjectKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One object of the dynamic configuration: its kind and qualified name.
/// Also the key of the "used by" relations compile works out.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct ObjectRef {
    /// Router, service or middleware.
    pub kind: ObjectKind,
    /// `name@provider`.
    pub name: QualifiedName,
}

impl ObjectRef {
    /// The object of `kind` named `qualified` (`name@provider`); a name
    /// without a provider part keeps an empty provider.
    pub fn new(kind: ObjectKind, qualified: &str) -> Self {
        ObjectRef {
            kind,
            name: QualifiedName::parse(qualified)
                .unwrap_or_else(|| QualifiedName::new(qualified, "")),
        }
    }
}

impl fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} `{}`", self.kind, self.name)
    }
}

/// Where a piece of configuration is written. Each provider has its own
/// shape of place: a file and line, a container (or Swarm service) and
/// label, a key of a KV store.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Origin {
    /// A file of the file provider.
    #[serde(rename_all = "camelCase")]
    File {
        /// The file, as the provider was told to read it.
        path: String,
        /// The 1-based line of the key the problem is about, or of the
        /// object's table when no single key is at fault.
        line: usize,
    },
    /// A file of the file provider, as a whole (no one line is at fault).
    #[serde(rename_all = "camelCase")]
    Document {
        /// The file, as the provider was told to read it.
        path: String,
    },
    /// A Docker container's labels.
    #[serde(rename_all = "camelCase")]
    Container {
        /// The container's full id.
        id: String,
        /// The container's name, without Docker's leading `/`.
        name: String,
        /// The label at fault, exactly as written; None when no single
        /// label is (a missing label, a conflict between containers).
        #[serde(skip_serializing_if = "Option::is_none")]
        label: Option<String>,
    },
    /// A key of a KV store (Redis, etcd).
    #[serde(rename_all = "camelCase")]
    Key {
        /// The provider that reads the store (`redis`).
        provider: String,
        /// The key at fault, exactly as stored; for a problem of a whole
        /// object, the first of its keys.
        key: String,
    },
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File { path, line } => write!(f, "{path}:{line}"),
            Origin::Document { path } => f.write_str(path),
            Origin::Container { name, label, .. } => {
                write!(f, "container `{name}`")?;
                match label {
                    Some(label) => write!(f, ": label `{label}`"),
                    None => Ok(()),
                }
            }
            Origin::Key { provider, key } => write!(f, "{provider} key `{key}`"),
        }
    }
}

/// What a reference names: the words a message uses for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Reference {
    /// A service a router or middleware uses.
    Service,
    /// A middleware in a router's list or a chain.
    Middleware,
    /// An entry point a router is attached to.
    EntryPoint,
    /// A certificate resolver of the static configuration.
    CertResolver,
    /// Named TLS options.
    TlsOptions,
    /// A named servers transport.
    ServersTransport,
    /// A member of a weighted service.
    WeightedChild,
    /// The main service of a mirroring service.
    MirroringService,
    /// A mirror of a mirroring service.
    Mirror,
    /// The main service of a failover service.
    FailoverService,
    /// The fallback of a failover service.
    FailoverFallback,
    /// A TCP service a TCP router or weighted TCP service uses.
    TcpService,
    /// A TCP middleware in a TCP router's list.
    TcpMiddleware,
    /// A TCP servers transport a TCP load balancer names.
    TcpServersTransport,
    /// A router a child router names in `parentRefs`.
    ParentRouter,
    /// A UDP service a UDP router or weighted UDP service uses.
    UdpService,
}

impl Reference {
    /// What it is, in words (`service`, `TCP service`, …).
    pub const fn words(self) -> &'static str {
        match self {
            Reference::Service => "service",
            Reference::Middleware => "middleware",
            Reference::EntryPoint => "entry point",
            Reference::CertResolver => "certificate resolver",
            Reference::TlsOptions => "TLS options",
            Reference::ServersTransport => "servers transport",
            Reference::WeightedChild => "weighted child",
            Reference::MirroringService => "mirroring service",
            Reference::Mirror => "mirror",
            Reference::FailoverService => "failover service",
            Reference::FailoverFallback => "failover fallback",
            Reference::TcpService => "TCP service",
            Reference::TcpMiddleware => "TCP middleware",
            Reference::TcpServersTransport => "TCP servers transport",
            Reference::ParentRouter => "parent router",
            Reference::UdpService => "UDP service",
        }
    }

    /// "does not exist", or "do not exist" for a plural name.
    const fn missing(self) -> &'static str {
        match self {
            Reference::TlsOptions => "do not exist",
            _ => "does not exist",
        }
    }
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.words())
    }
}

/// The kind of problem, with what the user needs to fix it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Problem {
    /// An option name that does not exist where it is written.
    #[error("unknown option `{option}`{}", hint(.suggestion.as_deref()))]
    UnknownOption {
        /// The option as written.
        option: String,
        /// The closest option that exists there, if one is close.
        #[serde(skip_serializing_if = "Option::is_none")]
        suggestion: Option<String>,
    },
    /// A value or key that does not parse or is out of range.
    #[error("{message}")]
    BadValue {
        /// What is wrong.
        message: String,
    },
    /// A label value or key that does not parse (the label parser's own
    /// finding, reported with its label).
    #[error("{message}")]
    BadLabel {
        /// What is wrong.
        message: String,
    },
    /// A part of Traefik's configuration that gangway does not take there.
    #[error("{message}")]
    Unsupported {
        /// What is not supported, and what to do instead.
        message: String,
    },
    /// A TCP router without `tls` whose rule needs the ClientHello.
    #[error(
        "rule `{rule}`: a TCP router without `tls` sees no ClientHello, so its rule may only use HostSNI(`*`) and ClientIP; add `tls` (terminated, or `passthrough=true`) to route by server name or ALPN"
    )]
    TcpRuleNeedsTls {
        /// The rule as written.
        rule: String,
    },
    /// A router rule that does not parse.
    #[error("rule `{rule}`: {error}")]
    RuleSyntax {
        /// The rule as written.
        rule: String,
        /// The rule parser's error, with its position.
        error: String,
        /// The 1-based character column in `rule` the error points at.
        column: usize,
    },
    /// A router rule read in Traefik v2's syntax, which Traefik v3
    /// deprecates; the router works.
    #[error("the v2 rule syntax is deprecated; in v3 syntax this rule is `{v3}`")]
    DeprecatedRuleSyntax {
        /// The same rule in v3 syntax.
        v3: String,
    },
    /// A `ruleSyntax` other than `v2` or `v3`; the rule is read as v3.
    #[error("ruleSyntax `{value}` is neither `v2` nor `v3`; the rule is read as v3")]
    UnknownRuleSyntax {
        /// The value as written.
        value: String,
    },
    /// A Traefik v2 option that Traefik v3 parses and ignores; gangway
    /// ignores it the same way and says so.
    #[error(
        "`{option}` is a Traefik v2 option that Traefik v3 ignores, and so does gangway: use {instead}"
    )]
    IgnoredV2Option {
        /// The option, e.g. `headers.sslRedirect`.
        option: String,
        /// What does its work today.
        instead: String,
    },
    /// The object named here is not defined.
    #[error("does not exist")]
    NotFound,
    /// A named object this one refers to is not defined.
    #[error("{what} `{name}` {}", .what.missing())]
    Missing {
        /// What kind of thing is missing.
        what: Reference,
        /// Its name, as resolved.
        name: String,
    },
    /// An object this one refers to has a problem of its own.
    #[error("{what} `{name}`: {problem}")]
    InReference {
        /// What kind of thing it refers to.
        what: Reference,
        /// Its name, as resolved.
        name: String,
        /// The referred object's problem.
        problem: Box<Problem>,
    },
    /// A reference with an empty name.
    #[error("{what}: no service name given")]
    NoName {
        /// What the reference is.
        what: Reference,
    },
    /// References that come back to where they started.
    #[error("{}", cycle(*.what, .path))]
    Cycle {
        /// Services or middlewares.
        what: Reference,
        /// The names on the way round, the first one again last.
        path: Vec<String>,
    },
    /// A router without a service.
    #[error("the router has no service")]
    NoService,
    /// A child router (one with `parentRefs`) with an option only a root
    /// router may have.
    #[error("a router with `parentRefs` cannot have `{option}`: its root router's applies")]
    NotAtRoot {
        /// The option: `entryPoints`, `tls` or `observability`.
        option: &'static str,
    },
    /// A router no root router leads to through `parentRefs`.
    #[error("the router is not reachable: no chain of `parentRefs` leads to a router without them")]
    Unreachable,
    /// A router with neither a service nor a child router.
    #[error("the router has no service and no child routers")]
    NoServiceNorChildren,
    /// A router with a service that other routers name as their parent.
    #[error("the router has a service and is the parent of {}: a parent router has no service", names(.children))]
    ServiceAndChildren {
        /// Its child routers.
        children: Vec<String>,
    },
    /// `parentRefs` that go round; the link back is left out.
    #[error("cyclic reference in the router tree: {}; the last link is ignored", .path.join(" -> "))]
    RouterCycle {
        /// The routers on the way round, the first one again last.
        path: Vec<String>,
    },
    /// A parent router none of whose children can be used.
    #[error("none of the child routers can take requests: {}", names(.children))]
    NoUsableChild {
        /// Its child routers, each disabled for its own reason.
        children: Vec<String>,
    },
    /// A certificate resolver that the static configuration does not have.
    #[error("certificate resolver `{name}` does not exist; the default certificate is served")]
    UnknownResolver {
        /// The resolver's name.
        name: String,
    },
    /// A name no certificate can be ordered for.
    #[error("no certificate is ordered for `{domain}`: {reason}")]
    NotOrderable {
        /// The name.
        domain: String,
        /// Why not.
        reason: Unorderable,
    },
    /// A router with a certificate resolver and no host name.
    #[error(
        "certificate resolver `{resolver}`: the router names no host to obtain a certificate for (use Host(`…`) or tls.domains)"
    )]
    NoHostForCertificate {
        /// The resolver.
        resolver: String,
    },
    /// An object without a type (`loadBalancer`, `stripPrefix`, …).
    #[error("{}", no_type(*.of))]
    NoType {
        /// A service or a middleware.
        of: ObjectKind,
    },
    /// An object with more than one type.
    #[error("{}", several_types(*.of, .types))]
    SeveralTypes {
        /// A service or a middleware.
        of: ObjectKind,
        /// The types given.
        types: Vec<String>,
    },
    /// A balancer whose members all have weight 0.
    #[error("every {} has weight 0, so none can take traffic", if *.services { "service" } else { "server" })]
    AllWeightsZero {
        /// Whether the members are services (weighted) rather than servers.
        services: bool,
    },
    /// A failover without `errors` whose main service can never be down
    /// (only gangway's own services answer it).
    #[error(
        "the main service is answered by gangway itself and is never down, so the fallback is never used"
    )]
    FallbackNeverUsed,
    /// A container's server cannot be reached: no port, no address.
    #[error("{message}")]
    NoServer {
        /// Why, as the container list says it.
        reason: NotRouted,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// Two containers define the object differently.
    #[error("conflict: containers `{kept}` and `{other}` define it differently; {}", conflict_end(.kept, *.dropped))]
    Conflict {
        /// The container whose definition came first.
        kept: String,
        /// The container with the other definition.
        other: String,
        /// Whether both are dropped (`conflicts=drop`) instead of the first kept.
        dropped: bool,
    },
    /// A container exposing several ports, with no port label: the
    /// lowest is used, as in Traefik.
    #[error(
        "the container exposes several ports ({}); port {port}, the lowest, is used (as in Traefik); set `{label}` to choose another",
        port_list(.exposed)
    )]
    PortChosen {
        /// The port used.
        port: u16,
        /// Every TCP port the container exposes, ascending.
        exposed: Vec<u16>,
        /// The label that chooses a port, with the container's prefix.
        label: String,
    },
    /// A router that never gets a request on an entry point: a router tried
    /// before it there (higher priority first, then names in byte order)
    /// has the same rule and takes the same connections (plain or TLS).
    #[error("{}", shadowed(.rule, *.priority, .winner, *.winner_priority, .entry_points))]
    #[serde(rename_all = "camelCase")]
    Shadowed {
        /// The router that gets every request this one would match.
        winner: String,
        /// The entry points where it does, in the static configuration's
        /// order.
        entry_points: Vec<String>,
        /// The rule both have, in canonical form.
        rule: String,
        /// This router's priority.
        priority: i64,
        /// The winner's priority: the same, or higher.
        winner_priority: i64,
    },
    /// Servers of a load balancer that are down now, by active health
    /// check or by failed connections (read when the API is asked, not
    /// when the configuration was compiled).
    #[error("{}", servers_down(*.down, *.total))]
    ServersDown {
        /// Servers down.
        down: usize,
        /// Servers configured.
        total: usize,
    },
    /// A service with members (weighted, mirroring, failover) none of
    /// which has a server up now.
    #[error("no service it sends to has a server up")]
    NoMemberUp,
    /// A router every request of which fails now.
    #[error("{}: {why} (service `{service}`)", fails_with(None, *.status))]
    ServiceDown {
        /// The service, qualified.
        service: String,
        /// The status those requests get: the servers' own 5xx, or
        /// gangway's 502, 503 or 504; none for TCP and UDP.
        #[serde(skip_serializing_if = "Option::is_none")]
        status: Option<u16>,
        /// Why, as the model of serving says it.
        why: String,
    },
    /// A label under the prefix in no section Traefik or gangway reads.
    #[error("`{option}` is not read (only {}); Traefik ignores it too", read.join(", "))]
    LabelNotRead {
        /// The first segment after the prefix, as written.
        option: String,
        /// The sections that are read.
        read: &'static [&'static str],
    },
    /// A router whose service fails part of its traffic now.
    #[error("{}: {why} (service `{service}`)", fails_with(Some(*.percent), *.status))]
    ServiceFailing {
        /// The service, qualified.
        service: String,
        /// The share of requests that fail, in percent.
        percent: u32,
        /// The status those requests get: the servers' own 5xx, or
        /// gangway's 502, 503 or 504; none for TCP and UDP.
        #[serde(skip_serializing_if = "Option::is_none")]
        status: Option<u16>,
        /// Why, as the model of serving says it.
        why: String,
    },
    /// A service with members (weighted, failover) some of whose traffic
    /// goes to members that cannot serve it.
    #[error("{}: they go to {}, where {why}", fails_with(Some(*.percent), *.status), names(.members))]
    MembersFailing {
        /// The share of requests that fail, in percent.
        percent: u32,
        /// The status those requests get: the servers' own 5xx, or
        /// gangway's 502, 503 or 504; none for TCP and UDP.
        #[serde(skip_serializing_if = "Option::is_none")]
        status: Option<u16>,
        /// The members that cannot serve, qualified.
        members: Vec<String>,
        /// Why, as the model of serving says it.
        why: String,
    },
    /// Servers of a load balancer that answer with a 5xx of their own.
    #[error("{erroring} of {total} servers answer {status}: {percent} % of its requests fail")]
    ServersErroring {
        /// Servers whose newest answer was a 5xx.
        erroring: usize,
        /// Servers configured.
        total: usize,
        /// The newest 5xx they answered.
        status: u16,
        /// The share of its requests that failed lately, in percent.
        percent: u32,
    },
    /// A service with members some of which cannot serve now, while the
    /// others take all of the traffic.
    #[error("{} cannot serve now; the other members take their traffic", names(.members))]
    MembersDown {
        /// The members that cannot serve, qualified.
        members: Vec<String>,
    },
    /// A failover service whose main service has no server up now.
    #[error("its main service `{main}` has no server up: requests go to the fallback `{fallback}`")]
    OnFallback {
        /// The main service, qualified.
        main: String,
        /// The fallback, qualified.
        fallback: String,
    },
    /// A problem in one container's definition of an object that another
    /// container defines as well, whose definition is used.
    #[error("{problem} (this container's definition is ignored)")]
    Ignored {
        /// The problem of the ignored definition.
        problem: Box<Problem>,
    },
    /// A middleware option whose value cannot work.
    #[error("{option}: {reason}")]
    MiddlewareOption {
        /// The option, e.g. `average` or `ipAllowList.sourceRange`.
        option: String,
        /// Why, in a sentence.
        reason: String,
    },
    /// A middleware's regular expression that does not compile.
    #[error("{option}: invalid regex `{regex}`: {reason}")]
    MiddlewareRegex {
        /// The option, e.g. `regex`.
        option: String,
        /// The expression as given.
        regex: String,
        /// What the regex engine said.
        reason: String,
    },
    /// A `plugin` middleware gangway cannot run.
    #[error("{0}")]
    Plugin(PluginProblem),
    /// A line of a password list that is not `user:hash` in a known format.
    #[error("{option}: line {line}: {reason}")]
    PasswordLine {
        /// `users` or `usersFile`.
        option: String,
        /// 1-based line (or list entry) number.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// A server URL that cannot be connected to.
    #[error("server url `{url}`{}", server_url(.reason))]
    ServerUrl {
        /// The URL as written.
        url: String,
        /// What is wrong with it.
        reason: ServerUrlProblem,
    },
    /// Client settings (TLS towards servers: root CAs, certificates,
    /// server name) that cannot be used, in the client's words.
    #[error("{reason}")]
    ClientSettings {
        /// What the client said.
        reason: String,
    },
    /// A sticky cookie that cannot be set, in the balancer's words.
    #[error("{reason}")]
    StickyCookie {
        /// What is wrong.
        reason: String,
    },
    /// A health check that cannot run, in the checker's words.
    #[error("{reason}")]
    HealthCheck {
        /// What is wrong.
        reason: String,
    },
    /// TLS options that do not build, in the TLS room's words.
    #[error("{reason}")]
    TlsOptions {
        /// What is wrong.
        reason: String,
    },
    /// A weighted service without members.
    #[error("the weighted service lists no services")]
    NoWeightedServices,
    /// A `failover.errors.status` entry that is not a status or a range.
    #[error(
        "failover.errors.status: `{value}` is not a status code (100-599) or a range (`500-504`)"
    )]
    FailoverStatus {
        /// The entry as written.
        value: String,
    },
    /// A `highestRandomWeight` service without members.
    #[error("the highestRandomWeight service lists no services")]
    NoHrwServices,
    /// A load-balancing strategy gangway does not know.
    #[error("unknown load-balancing strategy `{value}` (known: wrr, p2c, hrw, leasttime)")]
    Strategy {
        /// The value as configured.
        value: String,
    },
    /// A mirror asked to copy more than every request.
    #[error("mirror `{mirror}`: percent {percent} is more than 100")]
    MirrorPercent {
        /// The mirror as written.
        mirror: String,
        /// The share asked for.
        percent: u32,
    },
    /// TLS settings of a `tls.passthrough` TCP router, which are not used.
    #[error(
        "with `tls.passthrough` the server's own TLS is what clients get: `tls.certResolver` and `tls.options` are not used"
    )]
    PassthroughTlsUnused,
    /// A TCP load balancer's deprecated option that its servers transport
    /// sets too.
    #[error(
        "not used: the TCP servers transport `{transport}` sets its own `{option}` (the load balancer's is deprecated in Traefik v3)"
    )]
    OverriddenByTransport {
        /// The servers transport, qualified.
        transport: String,
        /// The option both set (`terminationDelay`, `proxyProtocol`).
        option: String,
    },
    /// Weighted TCP or UDP services nested too deep, or in a cycle.
    #[error("weighted {what}s nest deeper than {max} (or in a cycle) at `{name}`")]
    TooDeep {
        /// TCP or UDP services.
        what: Reference,
        /// The deepest nesting allowed.
        max: usize,
        /// The service where the limit was passed.
        name: String,
    },
    /// A TCP or UDP load balancer without servers.
    #[error("the load balancer has no servers")]
    NoServers,
    /// A PROXY protocol version that does not exist.
    #[error("{at}.proxyProtocol.version: {version} is not a PROXY protocol version (1 or 2)")]
    ProxyProtocolVersion {
        /// Where it is written (`loadBalancer`, `proxyProtocol`).
        at: String,
        /// The version given.
        version: u8,
    },
    /// A name TLS cannot send as SNI nor verify.
    #[error(
        "`{host}` is not a DNS name or IP address TLS can verify; set the servers transport's `tls.serverName`"
    )]
    TlsServerName {
        /// The name or address.
        host: String,
    },
    /// A TCP or UDP server address that is not `host:port`.
    #[error("server address `{address}` is not host:port")]
    NotHostPort {
        /// The address as written.
        address: String,
    },
    /// A UDP router without entry points when no UDP entry point exists.
    #[error("no UDP entry point exists (an entry point's address ending in `/udp`)")]
    NoUdpEntryPoint,
    /// A UDP router naming an entry point that is not a UDP one.
    #[error("entry point `{entry_point}` is not a UDP entry point (its address has no `/udp`)")]
    NotUdpEntryPoint {
        /// The entry point.
        entry_point: String,
    },
    /// A UDP entry point another router serves: the one whose name sorts
    /// last, as in Traefik.
    #[error(
        "UDP entry point `{entry_point}` is served by router `{router}`, whose name sorts last: a UDP entry point has one router, so this one is shadowed there"
    )]
    UdpEntryPointTaken {
        /// The entry point.
        entry_point: String,
        /// The router that has it.
        router: String,
    },
}

/// Why a `plugin` middleware cannot run. Traefik plugins are Go code that
/// gangway does not load; it runs its own implementation of the plugins it
/// knows, chosen by the `moduleName` declared for the middleware's key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(tag = "plugin", rename_all = "camelCase")]
pub enum PluginProblem {
    /// `plugin` must hold exactly one key, the plugin's.
    #[error("plugin: names {} plugins ({}); a plugin middleware runs exactly one", .keys.len(), .keys.join(", "))]
    Keys {
        /// The keys found (none or several).
        keys: Vec<String>,
    },
    /// The key is declared by no `experimental.plugins.<key>` (nor
    /// `localPlugins`) of the static configuration.
    #[error(
        "plugin `{key}` is not declared: the static configuration needs \
         `experimental.plugins.{key}.moduleName` naming the plugin"
    )]
    NotDeclared {
        /// The plugin's key, as the middleware writes it.
        key: String,
    },
    /// The declared module is not one gangway has built in.
    #[error(
        "plugin `{key}`: `{module}` is not built into gangway (Traefik plugins are Go code \
         that gangway cannot run){}; routers using it stay disabled",
        instead_hint(.instead.as_deref())
    )]
    NotBuiltIn {
        /// The plugin's key.
        key: String,
        /// Its declared `moduleName`.
        module: String,
        /// What gangway has that does the same, if anything.
        #[serde(skip_serializing_if = "Option::is_none")]
        instead: Option<String>,
    },
    /// One of the plugin's own settings cannot be used.
    #[error("plugin `{key}` ({module}): {setting}: {reason}")]
    Setting {
        /// The plugin's key.
        key: String,
        /// Its declared `moduleName`.
        module: String,
        /// The setting, as the plugin names it (`rewrites[0].regex`).
        setting: String,
        /// Why, in a sentence.
        reason: String,
    },
}

fn instead_hint(instead: Option<&str>) -> String {
    instead.map_or_else(String::new, |i| format!("; use {i} instead"))
}

/// What is wrong with a server URL.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ServerUrlProblem {
    /// It does not parse, or its host does not make a `Host` header.
    Invalid {
        /// What the parser said.
        message: String,
    },
    /// Its scheme is not one gangway connects with.
    Scheme,
    /// It names no host.
    NoHost,
}

fn server_url(reason: &ServerUrlProblem) -> String {
    match reason {
        ServerUrlProblem::Invalid { message } => format!(": {message}"),
        ServerUrlProblem::Scheme => ": the scheme must be http, https or h2c".to_owned(),
        ServerUrlProblem::NoHost => " has no host".to_owned(),
    }
}

/// Why no certificate can be ordered for a name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Unorderable {
    /// An IP address, through a resolver that answers DNS-01 only.
    #[error(
        "an IP address is validated only through HTTP-01 or TLS-ALPN-01 (RFC 8738), and resolver `{resolver}` answers DNS-01; give this router a resolver with httpChallenge or tlsChallenge"
    )]
    IpAddressWithDns {
        /// The resolver.
        resolver: String,
    },
    /// `**.`, which no certificate covers.
    #[error(
        "`**.` stands for any depth of subdomains, which no certificate covers (a wildcard certificate covers one label); list the names in tls.domains, or serve a certificate from tls.certificates"
    )]
    AnyDepth,
    /// A wildcard, through a resolver that cannot answer DNS-01.
    #[error(
        "a wildcard name needs a wildcard certificate, which only the DNS-01 challenge can get, and resolver `{resolver}` has no dnsChallenge (set certificatesResolvers.{resolver}.acme.dnsChallenge, or serve a certificate from tls.certificates)"
    )]
    WildcardWithoutDns {
        /// The resolver.
        resolver: String,
    },
    /// A `*` elsewhere than as a whole first label.
    #[error("`*` may only stand for a whole first label (`*.example.com`)")]
    MisplacedStar,
    /// Not a DNS name.
    #[error("not a valid DNS name")]
    NotDnsName,
}

/// Serialised as its sentence, as the API has always given the reason.
impl Serialize for Unorderable {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

fn hint(suggestion: Option<&str>) -> String {
    suggestion
        .map(|s| format!(" (did you mean `{s}`?)"))
        .unwrap_or_default()
}

fn servers_down(down: usize, total: usize) -> String {
    if down >= total {
        format!("every server is down ({down} of {total}): requests to this service fail")
    } else {
        format!("{down} of {total} servers are down; the others take their traffic")
    }
}

/// How many requests (with a status: HTTP) or connections fail.
fn fails_with(percent: Option<u32>, status: Option<u16>) -> String {
    match (percent, status) {
        (None, Some(s)) => format!("every request fails with {s}"),
        (None, None) => "every connection fails".to_owned(),
        (Some(p), Some(s)) => format!("{p} % of its requests fail with {s}"),
        (Some(p), None) => format!("{p} % of its connections fail"),
    }
}

fn names(members: &[String]) -> String {
    let quoted: Vec<String> = members.iter().map(|m| format!("`{m}`")).collect();
    match quoted.as_slice() {
        [] => "members".to_owned(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

fn port_list(ports: &[u16]) -> String {
    ports
        .iter()
        .map(u16::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn conflict_end(kept: &str, dropped: bool) -> String {
    if dropped {
        "removed (providers.docker.conflicts=drop)".to_owned()
    } else {
        format!("`{kept}`'s definition (the oldest) is used")
    }
}

fn shadowed(
    rule: &str,
    priority: i64,
    winner: &str,
    winner_priority: i64,
    eps: &[String],
) -> String {
    let eps = match eps {
        [one] => format!("entry point `{one}`"),
        many => format!(
            "entry points {}",
            many.iter()
                .map(|e| format!("`{e}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    if winner_priority == priority {
        format!(
            "same rule `{rule}` and priority {priority} as router `{winner}` on {eps}: `{winner}` gets every request (its name sorts first); set a `priority` on one of them"
        )
    } else {
        format!(
            "router `{winner}` has the same rule `{rule}` with a higher priority ({winner_priority}, this one {priority}) on {eps}: it gets every request"
        )
    }
}

fn cycle(what: Reference, path: &[String]) -> String {
    match what {
        Reference::Service => format!(
            "service `{}` refers to itself through other services",
            path.first().map_or("", String::as_str)
        ),
        _ => format!("chain cycle: {}", path.join(" → ")),
    }
}

fn no_type(of: ObjectKind) -> &'static str {
    match of {
        ObjectKind::Service => {
            "no service type given (loadBalancer, weighted, mirroring or failover)"
        }
        // TCP and UDP services name their kind in the message.
        ObjectKind::TcpService => "a TCP service needs `loadBalancer` or `weighted`",
        ObjectKind::UdpService => "a UDP service needs `loadBalancer` or `weighted`",
        ObjectKind::TcpMiddleware => {
            "a TCP middleware has exactly one of `ipAllowList` and `inFlightConn`"
        }
        _ => "no middleware type given",
    }
}

fn several_types(of: ObjectKind, types: &[String]) -> String {
    match of {
        ObjectKind::Service => {
            "a service has exactly one type (loadBalancer, weighted, mirroring or failover)"
                .to_owned()
        }
        ObjectKind::TcpService | ObjectKind::UdpService => {
            format!("a {of} has either `loadBalancer` or `weighted`, not both")
        }
        ObjectKind::TcpMiddleware => {
            "a TCP middleware has exactly one of `ipAllowList` and `inFlightConn`".to_owned()
        }
        _ => format!(
            "several middleware types in one middleware: {}",
            types
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

impl Problem {
    /// Whether it is a label-grammar problem (reported by the label parser
    /// itself, with its label), also under `Ignored`.
    pub fn is_label_grammar(&self) -> bool {
        match self {
            Problem::UnknownOption { .. }
            | Problem::BadLabel { .. }
            | Problem::Unsupported { .. } => true,
            Problem::Ignored { problem } => problem.is_label_grammar(),
            _ => false,
        }
    }

    /// The container reason behind a `NoServer` problem, also under `Ignored`.
    pub fn not_routed(&self) -> Option<NotRouted> {
        match self {
            Problem::NoServer { reason, .. } => Some(*reason),
            Problem::Ignored { problem } => problem.not_routed(),
            _ => None,
        }
    }
}

/// One problem of one object, with where it is written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigError {
    /// The object it is about (its provider is the name's).
    pub object: ObjectRef,
    /// The option at fault, as a path in the dynamic model, lower case
    /// (`rule`, `tls.certresolver`, `middlewares`); None for the object as
    /// a whole. Used to find the line or label it is written on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub option: Option<&'static str>,
    /// Where it is written, when the provider knows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
    /// What is wrong.
    #[serde(flatten)]
    pub problem: Problem,
}

impl ConfigError {
    /// A problem of `object`, its place not known yet.
    pub fn new(object: ObjectRef, problem: Problem) -> Self {
        ConfigError {
            object,
            option: None,
            origin: None,
            problem,
        }
    }

    /// The same, about one option of the object.
    #[must_use]
    pub fn at(mut self, option: &'static str) -> Self {
        self.option = Some(option);
        self
    }

    /// The same, written at `origin`.
    #[must_use]
    pub fn with_origin(mut self, origin: Origin) -> Self {
        self.origin = Some(origin);
        self
    }

    /// The provider that defined the object.
    pub fn provider(&self) -> &str {
        &self.object.name.provider
    }
}

/// The place (when known), then the problem: ``container `web-1`: label
/// `gangway.http.routers.web.rul`: unknown option `rul` (did you mean
/// `rule`?)`` or ``dynamic.toml:4: middleware `auth@file`: does not exist``.
impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.origin {
            Some(origin) => write!(f, "{origin}: {}", self.problem),
            None => write!(f, "{}", self.problem),
        }
    }
}

impl std::error::Error for ConfigError {}

/// A named section of the dynamic configuration, for problems about a
/// definition rather than an object's options.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Section {
    /// `http.routers`.
    Router,
    /// `http.services`.
    Service,
    /// `http.middlewares`.
    Middleware,
    /// `http.serversTransports`.
    ServersTransport,
    /// `tls.options`.
    TlsOptions,
    /// `tls.stores`.
    TlsStore,
    /// `tcp.routers`.
    TcpRouter,
    /// `tcp.services`.
    TcpService,
    /// `tcp.middlewares`.
    TcpMiddleware,
    /// `tcp.serversTransports`.
    TcpServersTransport,
    /// `udp.routers`.
    UdpRouter,
    /// `udp.services`.
    UdpService,
}

impl fmt::Display for Section {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Section::Router => "router",
            Section::Service => "service",
            Section::Middleware => "middleware",
            Section::ServersTransport => "servers transport",
            Section::TlsOptions => "TLS options",
            Section::TlsStore => "TLS store",
            Section::TcpRouter => "TCP router",
            Section::TcpService => "TCP service",
            Section::TcpMiddleware => "TCP middleware",
            Section::TcpServersTransport => "TCP servers transport",
            Section::UdpRouter => "UDP router",
            Section::UdpService => "UDP service",
        })
    }
}

/// A problem that is no one object's: a definition a provider or the merge
/// of providers leaves out, or a part of the TLS configuration skipped.
/// Nothing stops loading because of it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Notice {
    /// A name defined in two files of the provider's directory.
    #[error("{what} `{name}` is already defined in another file; the first definition is kept")]
    DefinedTwice {
        /// The section.
        what: Section,
        /// The name as written.
        name: String,
    },
    /// An object of a file that does not read, left out of the
    /// configuration (routers, services and middlewares carry such an
    /// error themselves, as disabled objects).
    #[error("{what} `{name}` is left out: {problem}")]
    LeftOut {
        /// The section.
        what: Section,
        /// The name as written.
        name: String,
        /// Why it does not read.
        problem: Box<Problem>,
    },
    /// A name with `@`, which would read as a qualified name.
    #[error("{what} `{name}` from provider {provider}: names cannot contain `@`; ignored")]
    NameWithAt {
        /// The section.
        what: Section,
        /// The name as written.
        name: String,
        /// The provider that defined it.
        provider: String,
    },
    /// Top-level sections of the static configuration in a file the file
    /// provider reads (a file that is both): Traefik's file provider skips
    /// them, and so does gangway, reading its `http`, `tcp`, `udp` and
    /// `tls` only.
    #[error("static configuration sections ignored by the file provider: {}", sections.join(", "))]
    StaticSectionsIgnored {
        /// The sections, as written.
        sections: Vec<String>,
    },
    /// A part of the TLS configuration that cannot be used and is skipped.
    #[error("{option}: {message}")]
    TlsSkipped {
        /// Where in the TLS configuration (`tls.certificates`,
        /// `` TLS options `modern@file` ``).
        option: String,
        /// What is wrong and what is used instead. Serialised as `detail`:
        /// the warning's own `message` (the whole sentence) sits beside it.
        #[serde(rename = "detail")]
        message: String,
    },
    /// A key of a KV store that cannot be read into the configuration,
    /// and belongs to no one object (its place is the key).
    #[error("{problem}; the key is ignored")]
    KeyIgnored {
        /// What is wrong with it.
        problem: Box<Problem>,
    },
    /// Routers asking for different TLS options for one host.
    #[error(
        "host `{host}`: routers `{first}` and `{other}` ask for different TLS options; the default options are used"
    )]
    TlsOptionsConflict {
        /// The host name.
        host: String,
        /// One router.
        first: String,
        /// A router asking for other options.
        other: String,
    },
    /// A certificate resolver keeps private keys in a shared store in clear.
    #[error(
        "certificatesResolvers.{resolver}.acme: private keys are stored in clear in {location}; set storageEncryptionKeyFile to encrypt them"
    )]
    AcmeKeysInClear {
        /// The resolver.
        resolver: String,
        /// The store, no password.
        location: String,
    },
    /// An ACME validation that found no answer here nor in a shared store.
    #[error(
        "an ACME {challenge} validation for `{name}` found no answer on this instance nor in a shared store: another ACME client orders certificates for it (another gangway instance with a storage of its own?)"
    )]
    AcmeUnanswered {
        /// `http-01` or `tls-alpn-01`.
        challenge: String,
        /// The token or name asked for.
        name: String,
    },
}

/// A [`Notice`] with where it is written, when that is known.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Warning {
    /// Where it is written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
    /// What it is.
    #[serde(flatten)]
    pub notice: Notice,
    /// The whole sentence, as the log and `gangway check` show it.
    pub message: String,
}

impl Warning {
    /// The warning for `notice`, written at `origin`.
    pub fn new(notice: Notice, origin: Option<Origin>) -> Self {
        let message = match &origin {
            Some(origin) => format!("{origin}: {notice}"),
            None => notice.to_string(),
        };
        Warning {
            origin,
            notice,
            message,
        }
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Why a provider's newest configuration could not be read; the last one
/// read stays in use.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum ProviderError {
    /// A file the file provider cannot take.
    #[error("{path}: the file name must end in .toml, .yml or .yaml")]
    FileKind {
        /// The file.
        path: String,
    },
    /// A file or folder that cannot be read.
    #[error("{path}: {reason}")]
    Unreadable {
        /// The file or folder.
        path: String,
        /// What the system said.
        reason: String,
    },
    /// A file emptied in place while a configuration with objects is in use.
    #[error(
        "{path}: the file is empty (still being written?); the last configuration stays in use"
    )]
    Empty {
        /// The file.
        path: String,
    },
    /// A file that does not parse as its format.
    #[error("{origin}: {message}")]
    Syntax {
        /// The file, and the line when the parser gave one.
        origin: Origin,
        /// What is wrong, without the place.
        message: String,
    },
    /// The Docker daemon cannot be reached or answered an error.
    #[error("Docker: {reason}")]
    Docker {
        /// What went wrong, as a sentence.
        reason: String,
    },
    /// The Swarm manager cannot be reached, answered an error, or is not a
    /// manager.
    #[error("Docker Swarm: {reason}")]
    Swarm {
        /// What went wrong, as a sentence.
        reason: String,
    },
    /// A KV store cannot be reached or answered an error.
    #[error("{store}: {reason}")]
    Store {
        /// The provider reading the store (`redis`).
        store: String,
        /// What went wrong, as a sentence.
        reason: String,
    },
    /// The HTTP provider's endpoint cannot be reached or did not answer
    /// with a configuration.
    #[error("{endpoint}: {reason}")]
    Http {
        /// The endpoint asked.
        endpoint: String,
        /// What went wrong, as a sentence.
        reason: String,
    },
}

impl ProviderError {
    /// The error for a file that does not parse.
    pub fn syntax(e: &super::format::FormatError) -> Self {
        use super::format::FormatError;
        match e {
            FormatError::AtLine {
                name,
                line,
                message,
            } => ProviderError::Syntax {
                origin: Origin::File {
                    path: name.clone(),
                    line: *line,
                },
                message: message.clone(),
            },
            FormatError::Document { name, message } => ProviderError::Syntax {
                origin: Origin::Document { path: name.clone() },
                message: message.clone(),
            },
        }
    }

    /// The error for a file or folder that cannot be read.
    pub fn unreadable(path: &std::path::Path, e: &std::io::Error) -> Self {
        ProviderError::Unreadable {
            path: path.display().to_string(),
            reason: crate::cause::WithCauses(e).to_string(),
        }
    }

    /// What is wrong, without the place [`origin`](Self::origin) gives.
    pub fn what(&self) -> String {
        match self {
            ProviderError::FileKind { .. } => {
                "the file name must end in .toml, .yml or .yaml".to_owned()
            }
            ProviderError::Unreadable { reason, .. } => reason.clone(),
            ProviderError::Empty { .. } => {
                "the file is empty (still being written?); the last configuration stays in use"
                    .to_owned()
            }
            ProviderError::Syntax { message, .. } => message.clone(),
            ProviderError::Docker { .. }
            | ProviderError::Swarm { .. }
            | ProviderError::Store { .. }
            | ProviderError::Http { .. } => self.to_string(),
        }
    }

    /// Where it is written, when it is about one file.
    pub fn origin(&self) -> Option<Origin> {
        match self {
            ProviderError::FileKind { path }
            | ProviderError::Unreadable { path, .. }
            | ProviderError::Empty { path } => Some(Origin::Document { path: path.clone() }),
            ProviderError::Syntax { origin, .. } => Some(origin.clone()),
            ProviderError::Docker { .. }
            | ProviderError::Swarm { .. }
            | ProviderError::Store { .. }
            | ProviderError::Http { .. } => None,
        }
    }
}

/// Why a container gets no traffic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum NotRouted {
    /// No `<prefix>.enable=true` while `exposedByDefault` is false, or
    /// `<prefix>.enable=false`.
    NotEnabled,
    /// The provider's `constraints` expression does not match its labels.
    ConstraintNotMet,
    /// A one-off container (`docker compose run`).
    OneOff,
    /// Its labels define only TCP or UDP routing, which gangway does not do.
    TcpOrUdpOnly,
    /// No port to send to: none exposed and none given by a label.
    NoPort,
    /// Its labels did not parse (each broken object is disabled).
    LabelError,
    /// The network to use does not exist on the container.
    NetworkNotFound,
    /// Several networks could be used and none is chosen.
    AmbiguousNetwork,
    /// The container has no address on the chosen network.
    NoAddress,
    /// Not running (created, exited, dead).
    Stopped,
    /// Paused.
    Paused,
    /// Restarting.
    Restarting,
    /// Its Docker health check has not passed yet.
    Starting,
    /// Its Docker health check fails.
    Unhealthy,
    /// It is being stopped; no new request is sent to it.
    Draining,
    /// Removed from Docker.
    Removed,
    /// Another container defines its service differently, and that
    /// definition is the one in use (or both are dropped).
    Conflict,
}

impl NotRouted {
    /// The name the API uses for it (`notEnabled`), also used in logs.
    pub const fn as_str(self) -> &'static str {
        match self {
            NotRouted::NotEnabled => "notEnabled",
            NotRouted::ConstraintNotMet => "constraintNotMet",
            NotRouted::OneOff => "oneOff",
            NotRouted::TcpOrUdpOnly => "tcpOrUdpOnly",
            NotRouted::NoPort => "noPort",
            NotRouted::LabelError => "labelError",
            NotRouted::NetworkNotFound => "networkNotFound",
            NotRouted::AmbiguousNetwork => "ambiguousNetwork",
            NotRouted::NoAddress => "noAddress",
            NotRouted::Stopped => "stopped",
            NotRouted::Paused => "paused",
            NotRouted::Restarting => "restarting",
            NotRouted::Starting => "starting",
            NotRouted::Unhealthy => "unhealthy",
            NotRouted::Draining => "draining",
            NotRouted::Removed => "removed",
            NotRouted::Conflict => "conflict",
        }
    }
}

impl std::fmt::Display for NotRouted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_warning_serialises_each_key_once() {
        let w = Warning::new(
            Notice::TlsSkipped {
                option: "tls.certificates".into(),
                message: "cannot read the key".into(),
            },
            None,
        );
        let text = serde_json::to_string(&w).unwrap();
        assert_eq!(text.matches("\"message\"").count(), 1, "{text}");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["detail"], "cannot read the key");
        assert_eq!(
            v["message"], "tls.certificates: cannot read the key",
            "the whole sentence"
        );
    }

    #[test]
    fn the_message_is_the_place_then_the_problem() {
        let object = ObjectRef::new(ObjectKind::Router, "app@file");
        assert_eq!(object.name, QualifiedName::new("app", "file"));
        let e = ConfigError::new(
            object.clone(),
            Problem::InReference {
                what: Reference::Middleware,
                name: "auth@file".into(),
                problem: Box::new(Problem::NotFound),
            },
        )
        .at("middlewares");
        assert_eq!(e.to_string(), "middleware `auth@file`: does not exist");
        let e = e.with_origin(Origin::File {
            path: "dynamic.toml".into(),
            line: 4,
        });
        assert_eq!(
            e.to_string(),
            "dynamic.toml:4: middleware `auth@file`: does not exist"
        );
        assert_eq!(e.provider(), "file");
        let label = ConfigError::new(
            object,
            Problem::UnknownOption {
                option: "rul".into(),
                suggestion: Some("rule".into()),
            },
        )
        .with_origin(Origin::Container {
            id: "abc".into(),
            name: "web-1".into(),
            label: Some("gangway.http.routers.app.rul".into()),
        });
        assert_eq!(
            label.to_string(),
            "container `web-1`: label `gangway.http.routers.app.rul`: unknown option `rul` (did you mean `rule`?)"
        );
        let json = serde_json::to_value(&label).unwrap();
        assert_eq!(json["kind"], "unknownOption");
        assert_eq!(json["suggestion"], "rule");
        assert_eq!(json["origin"]["type"], "container");
        assert_eq!(json["origin"]["label"], "gangway.http.routers.app.rul");
        assert_eq!(json["object"]["kind"], "router");
        assert_eq!(json["object"]["name"], "app@file");
    }

    #[test]
    fn each_kind_says_what_is_wrong() {
        assert_eq!(
            Problem::Missing {
                what: Reference::TlsOptions,
                name: "strict@file".into()
            }
            .to_string(),
            "TLS options `strict@file` do not exist"
        );
        assert_eq!(
            Problem::Cycle {
                what: Reference::Middleware,
                path: vec!["a@file".into(), "b@file".into(), "a@file".into()]
            }
            .to_string(),
            "chain cycle: a@file → b@file → a@file"
        );
        assert_eq!(
            Problem::Conflict {
                kept: "a".into(),
                other: "b".into(),
                dropped: false
            }
            .to_string(),
            "conflict: containers `a` and `b` define it differently; `a`'s definition (the oldest) is used"
        );
        let ignored = Problem::Ignored {
            problem: Box::new(Problem::UnknownOption {
                option: "x".into(),
                suggestion: None,
            }),
        };
        assert!(ignored.is_label_grammar());
        assert!(
            ignored
                .to_string()
                .ends_with("(this container's definition is ignored)")
        );
    }
}
