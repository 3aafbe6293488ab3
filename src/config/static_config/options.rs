//! The table of known options, the matching of flag and environment names
//! against it, and `--help`.

use std::fmt::Write as _;

mod traefik;

/// The placeholder segment for a user-chosen name, such as an entry
/// point's.
pub(super) const NAME: &str = "<name>";

/// What kind of value an option takes, which says how a flag or an
/// environment variable's text becomes a configuration value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ValueKind {
    /// Free text, such as a path or a log level.
    String,
    /// `true` or `false`; a flag given without a value means `true`.
    Bool,
    /// A whole number, zero or more.
    Int,
    /// A duration such as `10s` or `250ms`, or a number of seconds.
    Duration,
    /// A duration that may be negative (`-1s`), where Traefik gives that a
    /// meaning.
    SignedDuration,
    /// Comma-separated values: `a,b,c`.
    List,
    /// A listen address such as `:80` or `127.0.0.1:8080`.
    Address,
    /// A section enabled with its defaults by `true` (or no value) and
    /// removed by `false`.
    Section,
}

impl ValueKind {
    /// The placeholder shown after `=` in `--help`.
    pub fn metavar(self) -> &'static str {
        match self {
            ValueKind::String => "TEXT",
            ValueKind::Bool | ValueKind::Section => "BOOL",
            ValueKind::Int => "N",
            ValueKind::Duration => "DURATION",
            ValueKind::SignedDuration => "[-]DURATION",
            ValueKind::List => "A,B,...",
            ValueKind::Address => "[HOST]:PORT",
        }
    }

    /// What a value of this kind looks like, for error messages.
    pub fn expected(self) -> &'static str {
        match self {
            ValueKind::String => "a value",
            ValueKind::Bool | ValueKind::Section => "true or false",
            ValueKind::Int => "a whole number",
            ValueKind::Duration => "a duration such as `10s` or `250ms`",
            ValueKind::SignedDuration => "a duration such as `10s`, `250ms` or `-1s`",
            ValueKind::List => "a comma-separated list",
            ValueKind::Address => "an address such as `:80` or `127.0.0.1:8080`",
        }
    }

    /// Whether a flag of this kind may be given without a value.
    pub fn value_optional(self) -> bool {
        matches!(self, ValueKind::Bool | ValueKind::Section)
    }
}

/// What gangway does with an option it accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OptionState {
    /// gangway does what the option says.
    Implemented,
    /// The option has no meaning for gangway (Traefik's update check, its
    /// usage statistics, …): accepted and said once, never a refusal.
    Inert,
    /// A Traefik subsystem gangway does not have: accepted so that a
    /// Traefik setup starts, and reported loudly with what does not happen.
    Unsupported,
}

impl OptionState {
    /// The word shown in `--help`, the docs, the log and `check`.
    pub fn as_str(self) -> &'static str {
        match self {
            OptionState::Implemented => "implemented",
            OptionState::Inert => "inert",
            OptionState::Unsupported => "unsupported",
        }
    }
}

/// One known option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionSpec {
    /// The dotted key path with Traefik's names, `<name>` standing for a
    /// user-chosen name: `entryPoints.<name>.address`.
    pub path: &'static str,
    /// The kind of value it takes.
    pub kind: ValueKind,
    /// The default as written in configuration; empty when there is none.
    pub default: &'static str,
    /// One line saying what it does; for an option that is not
    /// implemented, what does not happen.
    pub description: &'static str,
    /// Whether gangway implements it.
    pub state: OptionState,
}

impl OptionSpec {
    /// The path's segments; a list index (`domains[n]`) is a segment of
    /// its own, [`INDEX`].
    pub fn segments(&self) -> impl Iterator<Item = &'static str> {
        self.path.split('.').flat_map(|segment| {
            match segment.strip_suffix(INDEX_SUFFIX) {
                Some(list) => [Some(list), Some(INDEX)],
                None => [Some(segment), None],
            }
            .into_iter()
            .flatten()
        })
    }
}

/// The placeholder segment for a list index, written `[n]` after the
/// list's name in a row's path.
pub(super) const INDEX: &str = "[n]";
const INDEX_SUFFIX: &str = "[n]";

const fn opt(
    path: &'static str,
    kind: ValueKind,
    default: &'static str,
    description: &'static str,
) -> OptionSpec {
    OptionSpec {
        path,
        kind,
        default,
        description,
        state: OptionState::Implemented,
    }
}

/// A Traefik option with no meaning for gangway.
const fn inert(
    path: &'static str,
    kind: ValueKind,
    default: &'static str,
    description: &'static str,
) -> OptionSpec {
    OptionSpec {
        path,
        kind,
        default,
        description,
        state: OptionState::Inert,
    }
}

/// A Traefik option of a subsystem gangway does not have.
const fn unsupported(
    path: &'static str,
    kind: ValueKind,
    default: &'static str,
    description: &'static str,
) -> OptionSpec {
    OptionSpec {
        path,
        kind,
        default,
        description,
        state: OptionState::Unsupported,
    }
}

/// Every row: the implemented options of [`OPTIONS`], then the Traefik
/// options gangway accepts without implementing them.
pub fn all_options() -> impl Iterator<Item = &'static OptionSpec> {
    OPTIONS.iter().chain(traefik::NOT_IMPLEMENTED)
}

/// Every static configuration option, grouped by their first segment.
pub const OPTIONS: &[OptionSpec] = &[
    opt(
        "entryPoints.<name>.address",
        ValueKind::Address,
        "",
        "Address to listen on (required for each entry point).",
    ),
    opt(
        "entryPoints.<name>.asDefault",
        ValueKind::Bool,
        "false",
        "HTTP and TCP routers without entryPoints join only the entry points marked so (all when none is).",
    ),
    opt(
        "entryPoints.<name>.observability.tracing",
        ValueKind::Bool,
        "true",
        "Trace requests on this entry point when tracing is on.",
    ),
    opt(
        "entryPoints.<name>.observability.accessLogs",
        ValueKind::Bool,
        "true",
        "Log requests on this entry point when the access log is on; a router's observability.accessLogs wins for its requests.",
    ),
    opt(
        "entryPoints.<name>.observability.metrics",
        ValueKind::Bool,
        "true",
        "Count requests on this entry point in the metrics; a router's observability.metrics wins for its requests.",
    ),
    opt(
        "entryPoints.<name>.reusePort",
        ValueKind::Bool,
        "false",
        "Bind with SO_REUSEPORT, so another process may listen on the same port (TCP and UDP).",
    ),
    opt(
        "entryPoints.<name>.allowACMEByPass",
        ValueKind::Bool,
        "false",
        "A router matching an ACME HTTP-01 challenge path takes it before gangway's own answer.",
    ),
    opt(
        "entryPoints.<name>.forwardedHeaders.trustedIPs",
        ValueKind::List,
        "",
        "Proxies (IPs or CIDR ranges) whose X-Forwarded-* headers are kept.",
    ),
    opt(
        "entryPoints.<name>.forwardedHeaders.insecure",
        ValueKind::Bool,
        "false",
        "Keep X-Forwarded-* headers from every client.",
    ),
    opt(
        "entryPoints.<name>.forwardedHeaders.notAppendXForwardedFor",
        ValueKind::Bool,
        "false",
        "Do not add the client's address to X-Forwarded-For (a trusted one goes on as it came).",
    ),
    opt(
        "entryPoints.<name>.transport.lifeCycle.requestAcceptGraceTimeout",
        ValueKind::Duration,
        "0s",
        "On shutdown, keep accepting requests this long before closing the listener.",
    ),
    opt(
        "entryPoints.<name>.transport.lifeCycle.graceTimeOut",
        ValueKind::Duration,
        "10s",
        "On shutdown, time given to in-flight requests to finish.",
    ),
    opt(
        "entryPoints.<name>.transport.maxConnections",
        ValueKind::Int,
        "16384",
        "Connections open at once; past it new ones wait to be accepted (0: no limit).",
    ),
    opt(
        "entryPoints.<name>.transport.keepAliveMaxRequests",
        ValueKind::Int,
        "0",
        "Close a connection after this many requests (HTTP/1: Connection: close; HTTP/2: a graceful GOAWAY; 0: no limit).",
    ),
    opt(
        "entryPoints.<name>.transport.keepAliveMaxTime",
        ValueKind::Duration,
        "0s",
        "Close a connection this old after its current request (HTTP/1: Connection: close; HTTP/2: a graceful GOAWAY; 0s: no limit).",
    ),
    opt(
        "entryPoints.<name>.transport.respondingTimeouts.readTimeout",
        ValueKind::Duration,
        "60s",
        "Longest time to read a request, head and body; past it 408 (0s: no limit).",
    ),
    opt(
        "entryPoints.<name>.transport.respondingTimeouts.writeTimeout",
        ValueKind::Duration,
        "0s",
        "Longest time from a request's head to the end of its response; past it the connection closes (0s: no limit).",
    ),
    opt(
        "entryPoints.<name>.transport.respondingTimeouts.idleTimeout",
        ValueKind::Duration,
        "180s",
        "Longest wait for the next request on a keep-alive connection (0s: no limit).",
    ),
    opt(
        "entryPoints.<name>.http.tls",
        ValueKind::Section,
        "false",
        "Make every router on this entry point a TLS router.",
    ),
    opt(
        "entryPoints.<name>.http.tls.certResolver",
        ValueKind::String,
        "",
        "Default certificate resolver of the routers on this entry point.",
    ),
    opt(
        "entryPoints.<name>.http.tls.options",
        ValueKind::String,
        "",
        "Default TLS options of the routers on this entry point.",
    ),
    opt(
        "entryPoints.<name>.http.tls.domains[n].main",
        ValueKind::String,
        "",
        "Main name of a certificate to obtain for this entry point's routers.",
    ),
    opt(
        "entryPoints.<name>.http.tls.domains[n].sans",
        ValueKind::List,
        "",
        "Other names of that certificate.",
    ),
    opt(
        "entryPoints.<name>.http.redirections.entryPoint.to",
        ValueKind::String,
        "",
        "Redirect plain-HTTP requests to this entry point (or :port).",
    ),
    opt(
        "entryPoints.<name>.http.redirections.entryPoint.scheme",
        ValueKind::String,
        "https",
        "Scheme of the redirection's URL.",
    ),
    opt(
        "entryPoints.<name>.http.redirections.entryPoint.permanent",
        ValueKind::Bool,
        "true",
        "Redirect permanently (301/308) rather than temporarily (302/307).",
    ),
    opt(
        "entryPoints.<name>.http.redirections.entryPoint.priority",
        ValueKind::Int,
        "",
        "Routers above this priority whose rule matches are served instead of the redirection.",
    ),
    opt(
        "entryPoints.<name>.http.middlewares",
        ValueKind::List,
        "",
        "Middlewares every HTTP router on this entry point runs before its own.",
    ),
    opt(
        "entryPoints.<name>.http.sanitizePath",
        ValueKind::Bool,
        "true",
        "Canonical request paths before routing: dot segments, `//`, escapes of unreserved characters.",
    ),
    opt(
        "entryPoints.<name>.http.encodedCharacters.allowEncodedSlash",
        ValueKind::Bool,
        "true",
        "Let request paths hold `%2F` (/) (Traefik 3.7's default); `false` refuses it with 400.",
    ),
    opt(
        "entryPoints.<name>.http.encodedCharacters.allowEncodedBackSlash",
        ValueKind::Bool,
        "true",
        "Let request paths hold `%5C` (\\) (Traefik 3.7's default); `false` refuses it with 400.",
    ),
    opt(
        "entryPoints.<name>.http.encodedCharacters.allowEncodedNullCharacter",
        ValueKind::Bool,
        "true",
        "Let request paths hold `%00` (NUL) (Traefik 3.7's default); `false` refuses it with 400.",
    ),
    opt(
        "entryPoints.<name>.http.encodedCharacters.allowEncodedSemicolon",
        ValueKind::Bool,
        "true",
        "Let request paths hold `%3B` (;) (Traefik 3.7's default); `false` refuses it with 400.",
    ),
    opt(
        "entryPoints.<name>.http.encodedCharacters.allowEncodedPercent",
        ValueKind::Bool,
        "true",
        "Let request paths hold `%25` (%) (Traefik 3.7's default); `false` refuses it with 400.",
    ),
    opt(
        "entryPoints.<name>.http.encodedCharacters.allowEncodedQuestionMark",
        ValueKind::Bool,
        "true",
        "Let request paths hold `%3F` (?) (Traefik 3.7's default); `false` refuses it with 400.",
    ),
    opt(
        "entryPoints.<name>.http.encodedCharacters.allowEncodedHash",
        ValueKind::Bool,
        "true",
        "Let request paths hold `%23` (#) (Traefik 3.7's default); `false` refuses it with 400.",
    ),
    opt(
        "entryPoints.<name>.http.underscoreHeadersStrategy",
        ValueKind::String,
        "keep",
        "Request headers with `_` in their names: keep, delete or reject (400).",
    ),
    opt(
        "entryPoints.<name>.http.maxHeaderBytes",
        ValueKind::Int,
        "",
        "Traefik's name for limits.maxHeaderBytes; given, it wins (past it 431).",
    ),
    opt(
        "entryPoints.<name>.http.encodeQuerySemicolons",
        ValueKind::Bool,
        "false",
        "Send `;` in query strings on as `%3B`.",
    ),
    opt(
        "entryPoints.<name>.http2.maxConcurrentStreams",
        ValueKind::Int,
        "250",
        "HTTP/2 streams a client may have open at once on one connection.",
    ),
    opt(
        "entryPoints.<name>.http2.maxDecoderHeaderTableSize",
        ValueKind::Int,
        "4096",
        "HPACK table size clients may use for request headers (SETTINGS_HEADER_TABLE_SIZE).",
    ),
    opt(
        "entryPoints.<name>.http3",
        ValueKind::Section,
        "false",
        "Serve HTTP/3 (QUIC) on the same port over UDP, advertised with Alt-Svc.",
    ),
    opt(
        "entryPoints.<name>.http3.advertisedPort",
        ValueKind::Int,
        "0",
        "UDP port named in Alt-Svc when a port mapping differs (0: the entry point's port).",
    ),
    opt(
        "entryPoints.<name>.proxyProtocol",
        ValueKind::Section,
        "false",
        "Read a PROXY protocol header (v1 or v2) from trusted sources.",
    ),
    opt(
        "entryPoints.<name>.proxyProtocol.trustedIPs",
        ValueKind::List,
        "",
        "Sources (IPs or CIDR ranges) whose PROXY protocol header is read.",
    ),
    opt(
        "entryPoints.<name>.proxyProtocol.insecure",
        ValueKind::Bool,
        "false",
        "Read a PROXY protocol header from every source.",
    ),
    opt(
        "entryPoints.<name>.udp.timeout",
        ValueKind::Duration,
        "3s",
        "On a UDP entry point: how long a client's session lives without a datagram.",
    ),
    opt(
        "entryPoints.<name>.limits.maxHeaderBytes",
        ValueKind::Int,
        "65536",
        "Largest request head (HTTP/1 line and fields, HTTP/2 header list); past it 431.",
    ),
    opt(
        "entryPoints.<name>.limits.maxHeaders",
        ValueKind::Int,
        "100",
        "Most fields in one HTTP/1 request head; past it 431.",
    ),
    opt(
        "entryPoints.<name>.limits.maxPendingResetStreams",
        ValueKind::Int,
        "20",
        "HTTP/2 streams a client may reset before they are accepted (rapid reset); past it the connection closes.",
    ),
    opt(
        "entryPoints.<name>.limits.maxControlFrames",
        ValueKind::Int,
        "200",
        "HTTP/2 PING and SETTINGS frames a connection may send in 10 s; past it GOAWAY and close (0: no limit).",
    ),
    opt(
        "entryPoints.<name>.limits.headerReadTimeout",
        ValueKind::Duration,
        "10s",
        "Longest time to receive a request head, from its first byte (0s: no limit).",
    ),
    opt(
        "entryPoints.<name>.limits.maxRequestBodyBytes",
        ValueKind::Int,
        "0",
        "Largest request body; past it 413 (0: no limit).",
    ),
    opt(
        "entryPoints.<name>.limits.webSocketIdleTimeout",
        ValueKind::Duration,
        "1h",
        "Close an upgraded connection (WebSocket) silent both ways this long (0s: no limit).",
    ),
    opt(
        "providers.providersThrottleDuration",
        ValueKind::Duration,
        "50ms",
        "Wait this long after a provider change to batch further ones.",
    ),
    opt(
        "providers.file",
        ValueKind::Section,
        "false",
        "Enable the file provider.",
    ),
    opt(
        "providers.file.filename",
        ValueKind::String,
        "",
        "Dynamic configuration file (TOML or YAML); set this or directory.",
    ),
    opt(
        "providers.file.directory",
        ValueKind::String,
        "",
        "Directory of dynamic configuration files; set this or filename.",
    ),
    opt(
        "providers.file.watch",
        ValueKind::Bool,
        "true",
        "Reload when the file or directory changes.",
    ),
    opt(
        "providers.docker",
        ValueKind::Section,
        "false",
        "Enable the Docker provider.",
    ),
    opt(
        "providers.docker.endpoint",
        ValueKind::String,
        "unix:///var/run/docker.sock",
        "Docker daemon: unix:///path or tcp://host:port.",
    ),
    opt(
        "providers.docker.tls",
        ValueKind::Section,
        "false",
        "HTTPS to a tcp:// endpoint (the system's CAs unless tls.ca).",
    ),
    opt(
        "providers.docker.tls.ca",
        ValueKind::String,
        "",
        "CA certificates (PEM file) for the daemon's certificate.",
    ),
    opt(
        "providers.docker.tls.cert",
        ValueKind::String,
        "",
        "Client certificate (PEM file), for a daemon run with --tlsverify.",
    ),
    opt(
        "providers.docker.tls.key",
        ValueKind::String,
        "",
        "Client certificate's key (PEM file).",
    ),
    opt(
        "providers.docker.tls.insecureSkipVerify",
        ValueKind::Bool,
        "false",
        "Accept any daemon certificate (tests only).",
    ),
    opt(
        "providers.docker.exposedByDefault",
        ValueKind::Bool,
        "",
        "Route containers without an explicit <labelPrefix>.enable=true; not given, those with a label under the prefix.",
    ),
    opt(
        "providers.docker.network",
        ValueKind::String,
        "",
        "Network whose container address is used (compose prefix optional).",
    ),
    opt(
        "providers.docker.defaultRule",
        ValueKind::String,
        "Host(`{{ normalize .Name }}`)",
        "Rule template for routers that have no rule label.",
    ),
    opt(
        "providers.docker.constraints",
        ValueKind::String,
        "",
        "Label expression a container must satisfy, e.g. Label(`a`,`b`).",
    ),
    opt(
        "providers.docker.watch",
        ValueKind::Bool,
        "true",
        "Follow Docker events.",
    ),
    opt(
        "providers.docker.useBindPortIP",
        ValueKind::Bool,
        "false",
        "Use the published host address and port instead of the container's.",
    ),
    opt(
        "providers.docker.allowEmptyServices",
        ValueKind::Bool,
        "false",
        "Keep services of unhealthy containers, without servers (503).",
    ),
    opt(
        "providers.docker.labelPrefix",
        ValueKind::String,
        "gangway",
        "Label prefix; `traefik` reads Traefik labels unchanged.",
    ),
    opt(
        "providers.docker.conflicts",
        ValueKind::String,
        "oldest",
        "Containers defining one name differently: oldest (keep the oldest's) or drop.",
    ),
    opt(
        "providers.docker.domain",
        ValueKind::String,
        "",
        "Value of {{ .Domain }} in defaultRule.",
    ),
    opt(
        "providers.docker.hostAddress",
        ValueKind::String,
        "127.0.0.1",
        "Address of containers on the host network.",
    ),
    opt(
        "providers.docker.downGracePeriod",
        ValueKind::Duration,
        "30s",
        "Routers of stopped or unhealthy containers answer 503 this long, then go.",
    ),
    opt(
        "providers.docker.includeOneOff",
        ValueKind::Bool,
        "false",
        "Route one-off containers (docker compose run).",
    ),
    opt(
        "providers.swarm",
        ValueKind::Section,
        "false",
        "Enable the Docker Swarm provider (service labels).",
    ),
    opt(
        "providers.swarm.endpoint",
        ValueKind::String,
        "unix:///var/run/docker.sock",
        "A swarm manager's daemon: unix:///path or tcp://host:port.",
    ),
    opt(
        "providers.swarm.tls",
        ValueKind::Section,
        "false",
        "HTTPS to a tcp:// endpoint (the system's CAs unless tls.ca).",
    ),
    opt(
        "providers.swarm.tls.ca",
        ValueKind::String,
        "",
        "CA certificates (PEM file) for the manager's certificate.",
    ),
    opt(
        "providers.swarm.tls.cert",
        ValueKind::String,
        "",
        "Client certificate (PEM file), for a daemon run with --tlsverify.",
    ),
    opt(
        "providers.swarm.tls.key",
        ValueKind::String,
        "",
        "Client certificate's key (PEM file).",
    ),
    opt(
        "providers.swarm.tls.insecureSkipVerify",
        ValueKind::Bool,
        "false",
        "Accept any manager certificate (tests only).",
    ),
    opt(
        "providers.swarm.exposedByDefault",
        ValueKind::Bool,
        "",
        "Route services without an explicit <labelPrefix>.enable=true; not given, those with a label under the prefix.",
    ),
    opt(
        "providers.swarm.network",
        ValueKind::String,
        "",
        "Network whose task addresses are used (stack prefix optional).",
    ),
    opt(
        "providers.swarm.defaultRule",
        ValueKind::String,
        "Host(`{{ normalize .Name }}`)",
        "Rule template for routers that have no rule label.",
    ),
    opt(
        "providers.swarm.constraints",
        ValueKind::String,
        "",
        "Label expression a service must satisfy, e.g. Label(`a`,`b`).",
    ),
    opt(
        "providers.swarm.watch",
        ValueKind::Bool,
        "true",
        "Follow the daemon's events between reads.",
    ),
    opt(
        "providers.swarm.refreshSeconds",
        ValueKind::Duration,
        "15s",
        "Read services, tasks and nodes again this often whatever the events say.",
    ),
    opt(
        "providers.swarm.allowEmptyServices",
        ValueKind::Bool,
        "false",
        "Keep services without a running task, without servers (503).",
    ),
    opt(
        "providers.swarm.httpClientTimeout",
        ValueKind::Duration,
        "0s",
        "Longest call to the daemon; 0s: 30 seconds.",
    ),
    opt(
        "providers.swarm.labelPrefix",
        ValueKind::String,
        "gangway",
        "Label prefix; `traefik` reads Traefik labels unchanged.",
    ),
    opt(
        "providers.redis",
        ValueKind::Section,
        "false",
        "Enable the Redis provider (Traefik's KV layout).",
    ),
    opt(
        "providers.redis.endpoints",
        ValueKind::List,
        "127.0.0.1:6379",
        "Redis servers, host:port, tried in order.",
    ),
    opt(
        "providers.redis.rootKey",
        ValueKind::String,
        "gangway",
        "Key the configuration is under; `traefik` reads a Traefik setup unchanged.",
    ),
    opt(
        "providers.redis.username",
        ValueKind::String,
        "",
        "User to log in as (Redis ACLs).",
    ),
    opt(
        "providers.redis.password",
        ValueKind::String,
        "",
        "Password to log in with.",
    ),
    opt(
        "providers.redis.db",
        ValueKind::Int,
        "0",
        "Database number.",
    ),
    opt(
        "providers.redis.tls",
        ValueKind::Section,
        "false",
        "TLS to the servers (the system's CAs unless tls.ca).",
    ),
    opt(
        "providers.redis.tls.ca",
        ValueKind::String,
        "",
        "CA certificates (PEM file) for the server's; default: the system's.",
    ),
    opt(
        "providers.redis.tls.cert",
        ValueKind::String,
        "",
        "Client certificate (PEM file).",
    ),
    opt(
        "providers.redis.tls.key",
        ValueKind::String,
        "",
        "Client certificate's key (PEM file).",
    ),
    opt(
        "providers.redis.tls.insecureSkipVerify",
        ValueKind::Bool,
        "false",
        "Accept any server certificate (tests only).",
    ),
    opt(
        "providers.redis.sentinel.masterName",
        ValueKind::String,
        "",
        "Redis Sentinel: the master's name; endpoints are then sentinels asked where it is.",
    ),
    opt(
        "providers.redis.sentinel.username",
        ValueKind::String,
        "",
        "User to log in to the sentinels as.",
    ),
    opt(
        "providers.redis.sentinel.password",
        ValueKind::String,
        "",
        "Password to log in to the sentinels with.",
    ),
    opt(
        "providers.redis.sentinel.latencyStrategy",
        ValueKind::Bool,
        "false",
        "Traefik: reads to the closest node; gangway reads from the master.",
    ),
    opt(
        "providers.redis.sentinel.randomStrategy",
        ValueKind::Bool,
        "false",
        "Traefik: reads to a random node; gangway reads from the master.",
    ),
    opt(
        "providers.redis.sentinel.replicaStrategy",
        ValueKind::Bool,
        "false",
        "Read from a replica the sentinels name, not from the master.",
    ),
    opt(
        "providers.redis.sentinel.useDisconnectedReplicas",
        ValueKind::Bool,
        "false",
        "With replicaStrategy, also use replicas disconnected from their master.",
    ),
    opt(
        "providers.redis.pollInterval",
        ValueKind::Duration,
        "2s",
        "Read the keys this often when the server sends no keyspace notifications.",
    ),
    opt(
        "providers.etcd",
        ValueKind::Section,
        "false",
        "Enable the etcd provider (Traefik's KV layout).",
    ),
    opt(
        "providers.etcd.endpoints",
        ValueKind::List,
        "127.0.0.1:2379",
        "etcd members, host:port, tried in order.",
    ),
    opt(
        "providers.etcd.rootKey",
        ValueKind::String,
        "gangway",
        "Key the configuration is under; `traefik` reads a Traefik setup unchanged.",
    ),
    opt(
        "providers.etcd.username",
        ValueKind::String,
        "",
        "User to authenticate as (etcd auth).",
    ),
    opt(
        "providers.etcd.password",
        ValueKind::String,
        "",
        "Password to authenticate with.",
    ),
    opt(
        "providers.etcd.tls",
        ValueKind::Section,
        "false",
        "TLS to the members (the built-in CAs unless tls.ca).",
    ),
    opt(
        "providers.etcd.tls.ca",
        ValueKind::String,
        "",
        "CA certificates (PEM file) for the members'; default: the built-in ones.",
    ),
    opt(
        "providers.etcd.tls.cert",
        ValueKind::String,
        "",
        "Client certificate (PEM file).",
    ),
    opt(
        "providers.etcd.tls.key",
        ValueKind::String,
        "",
        "Client certificate's key (PEM file).",
    ),
    opt(
        "providers.etcd.tls.insecureSkipVerify",
        ValueKind::Bool,
        "false",
        "Accept any server certificate (tests only).",
    ),
    opt(
        "providers.http",
        ValueKind::Section,
        "false",
        "Enable the HTTP provider: dynamic configuration (JSON or YAML) polled from an endpoint.",
    ),
    opt(
        "providers.http.endpoint",
        ValueKind::String,
        "",
        "URL answering with the dynamic configuration (required).",
    ),
    opt(
        "providers.http.headers.<name>",
        ValueKind::String,
        "",
        "Header sent with every request to the endpoint.",
    ),
    opt(
        "providers.http.maxResponseBodySize",
        ValueKind::String,
        "-1",
        "Largest answer read, in bytes; larger is an error (-1: no limit).",
    ),
    opt(
        "providers.http.pollInterval",
        ValueKind::Duration,
        "5s",
        "Ask the endpoint this often.",
    ),
    opt(
        "providers.http.pollTimeout",
        ValueKind::Duration,
        "5s",
        "Longest time one request to the endpoint may take.",
    ),
    opt(
        "providers.http.tls",
        ValueKind::Section,
        "false",
        "TLS settings for an https:// endpoint.",
    ),
    opt(
        "providers.http.tls.ca",
        ValueKind::String,
        "",
        "CA certificates (PEM file) for the endpoint's; default: the system's.",
    ),
    opt(
        "providers.http.tls.cert",
        ValueKind::String,
        "",
        "Client certificate (PEM file).",
    ),
    opt(
        "providers.http.tls.key",
        ValueKind::String,
        "",
        "Client certificate's key (PEM file).",
    ),
    opt(
        "providers.http.tls.insecureSkipVerify",
        ValueKind::Bool,
        "false",
        "Accept any server certificate (tests only).",
    ),
    opt(
        "log.otlp",
        ValueKind::Section,
        "false",
        "Send log records over OTLP (HTTP to https://localhost:4318 unless grpc or http says).",
    ),
    opt(
        "log.otlp.grpc",
        ValueKind::Section,
        "false",
        "Send over OTLP/gRPC.",
    ),
    opt(
        "log.otlp.grpc.endpoint",
        ValueKind::String,
        "localhost:4317",
        "Collector address (host:port).",
    ),
    opt(
        "log.otlp.grpc.headers.<name>",
        ValueKind::String,
        "",
        "Header sent with every export.",
    ),
    opt(
        "log.otlp.grpc.insecure",
        ValueKind::Bool,
        "false",
        "Plain HTTP/2 (h2c) instead of TLS.",
    ),
    opt(
        "log.otlp.grpc.tls.ca",
        ValueKind::String,
        "",
        "CA to trust for the collector (PEM file).",
    ),
    opt(
        "log.otlp.grpc.tls.cert",
        ValueKind::String,
        "",
        "Client certificate (PEM file).",
    ),
    opt(
        "log.otlp.grpc.tls.insecureSkipVerify",
        ValueKind::Bool,
        "false",
        "Accept any certificate the collector shows.",
    ),
    opt(
        "log.otlp.grpc.tls.key",
        ValueKind::String,
        "",
        "Client certificate's key (PEM file).",
    ),
    opt(
        "log.otlp.http",
        ValueKind::Section,
        "false",
        "Send over OTLP/HTTP (protobuf).",
    ),
    opt(
        "log.otlp.http.endpoint",
        ValueKind::String,
        "https://localhost:4318",
        "Collector URL; /v1/logs is added when it has no path.",
    ),
    opt(
        "log.otlp.http.headers.<name>",
        ValueKind::String,
        "",
        "Header sent with every export.",
    ),
    opt(
        "log.otlp.http.tls.ca",
        ValueKind::String,
        "",
        "CA to trust for the collector (PEM file).",
    ),
    opt(
        "log.otlp.http.tls.cert",
        ValueKind::String,
        "",
        "Client certificate (PEM file).",
    ),
    opt(
        "log.otlp.http.tls.insecureSkipVerify",
        ValueKind::Bool,
        "false",
        "Accept any certificate the collector shows.",
    ),
    opt(
        "log.otlp.http.tls.key",
        ValueKind::String,
        "",
        "Client certificate's key (PEM file).",
    ),
    opt(
        "log.otlp.resourceAttributes.<name>",
        ValueKind::String,
        "",
        "Attribute of the records' resource.",
    ),
    opt(
        "log.otlp.serviceName",
        ValueKind::String,
        "traefik",
        "service.name of the records' resource.",
    ),
    opt(
        "log.level",
        ValueKind::String,
        "INFO",
        "Log level: TRACE, DEBUG, INFO, WARN, ERROR (FATAL and PANIC read as ERROR).",
    ),
    opt(
        "log.format",
        ValueKind::String,
        "common",
        "`common` (Traefik's text line) or `json` (one object per line).",
    ),
    opt(
        "log.filePath",
        ValueKind::String,
        "",
        "Log file (standard error when unset); reopened on SIGUSR1.",
    ),
    opt(
        "log.noColor",
        ValueKind::Bool,
        "false",
        "No colours in the `common` format.",
    ),
    opt(
        "log.maxSize",
        ValueKind::Int,
        "0",
        "Megabytes past which the log file is rotated (0 means 100).",
    ),
    opt(
        "log.maxBackups",
        ValueKind::Int,
        "0",
        "Rotated log files kept (0 keeps all).",
    ),
    opt(
        "log.maxAge",
        ValueKind::Int,
        "0",
        "Days a rotated log file is kept (0 keeps all).",
    ),
    opt(
        "log.compress",
        ValueKind::Bool,
        "false",
        "Gzip rotated log files.",
    ),
    opt(
        "serversTransport.maxIdleConnsPerHost",
        ValueKind::Int,
        "200",
        "Idle keep-alive connections kept per backend host.",
    ),
    opt(
        "serversTransport.insecureSkipVerify",
        ValueKind::Bool,
        "false",
        "Accept any certificate from https:// backends.",
    ),
    opt(
        "serversTransport.rootCAs",
        ValueKind::List,
        "",
        "CA files (PEM) trusted for https:// backends, instead of the built-in roots.",
    ),
    opt(
        "serversTransport.maxConcurrentRequests",
        ValueKind::Int,
        "1024",
        "Requests each service may have in progress at once (0: no limit).",
    ),
    opt(
        "serversTransport.queueTimeout",
        ValueKind::Duration,
        "100ms",
        "Longest wait for a slot past a service's limit before a 503.",
    ),
    opt(
        "serversTransport.maxConcurrentRequestsPerClient",
        ValueKind::Int,
        "256",
        "Requests one client address may have in progress at each service (0: no own limit).",
    ),
    opt(
        "serversTransport.forwardingTimeouts.dialTimeout",
        ValueKind::Duration,
        "30s",
        "Longest time to connect to a backend.",
    ),
    opt(
        "serversTransport.forwardingTimeouts.responseHeaderTimeout",
        ValueKind::Duration,
        "0s",
        "Longest wait for a backend's response headers (0s: no limit).",
    ),
    opt(
        "serversTransport.forwardingTimeouts.idleConnTimeout",
        ValueKind::Duration,
        "90s",
        "How long an idle connection to a backend stays open.",
    ),
    opt(
        "tcpServersTransport.dialTimeout",
        ValueKind::Duration,
        "30s",
        "Longest time to connect to a TCP server (0s: no limit).",
    ),
    opt(
        "tcpServersTransport.dialKeepAlive",
        ValueKind::SignedDuration,
        "15s",
        "TCP keep-alive interval on TCP server connections (0s: 15s; negative: none).",
    ),
    opt(
        "tcpServersTransport.terminationDelay",
        ValueKind::SignedDuration,
        "100ms",
        "How long a TCP connection's other direction may go on after one side closed its writing half (negative: no limit).",
    ),
    opt(
        "tcpServersTransport.tls.insecureSkipVerify",
        ValueKind::Bool,
        "false",
        "Accept any certificate from TCP servers marked `tls`.",
    ),
    opt(
        "tcpServersTransport.tls.rootCAs",
        ValueKind::List,
        "",
        "CA files (PEM) trusted for TCP servers marked `tls`, instead of the built-in roots.",
    ),
    opt(
        "api",
        ValueKind::Section,
        "false",
        "Enable the read-only API and dashboard.",
    ),
    opt(
        "api.insecure",
        ValueKind::Bool,
        "false",
        "Serve the API and dashboard on the internal entry point `gangway`: `:8080` on every interface unless configured, as Traefik (a container's published port reaches it); `--entryPoints.gangway.address=127.0.0.1:8080` keeps it to this host.",
    ),
    opt(
        "api.dashboard",
        ValueKind::Bool,
        "true",
        "Serve the dashboard next to the API.",
    ),
    opt(
        "api.basePath",
        ValueKind::String,
        "/",
        "Path the API and dashboard are served under (`/traefik`: /traefik/api/…, /traefik/dashboard/).",
    ),
    opt(
        "ping",
        ValueKind::Section,
        "false",
        "Enable the /ping health endpoint.",
    ),
    opt(
        "ping.entryPoint",
        ValueKind::String,
        "gangway",
        "Entry point that serves /ping.",
    ),
    opt(
        "ping.terminatingStatusCode",
        ValueKind::Int,
        "503",
        "Status /ping answers while gangway shuts down.",
    ),
    opt(
        "ping.manualRouting",
        ValueKind::Bool,
        "false",
        "Make no router for /ping; route to the service ping@internal yourself.",
    ),
    opt(
        "metrics.addInternals",
        ValueKind::Bool,
        "false",
        "Count requests to the API, dashboard, /ping and /metrics too.",
    ),
    opt(
        "metrics.otlp",
        ValueKind::Section,
        "false",
        "Push metrics over OTLP (HTTP to https://localhost:4318 unless grpc or http says).",
    ),
    opt(
        "metrics.otlp.addEntryPointsLabels",
        ValueKind::Bool,
        "true",
        "Per-entry-point metrics.",
    ),
    opt(
        "metrics.otlp.addRoutersLabels",
        ValueKind::Bool,
        "false",
        "Per-router metrics.",
    ),
    opt(
        "metrics.otlp.addServicesLabels",
        ValueKind::Bool,
        "true",
        "Per-service metrics.",
    ),
    opt(
        "metrics.otlp.explicitBoundaries",
        ValueKind::List,
        "0.005,0.01,0.025,0.05,0.075,0.1,0.25,0.5,0.75,1.0,2.5,5.0,7.5,10.0",
        "Request duration histogram bounds, in seconds (Prometheus's buckets when it is on too).",
    ),
    opt(
        "metrics.otlp.grpc",
        ValueKind::Section,
        "false",
        "Push over OTLP/gRPC.",
    ),
    opt(
        "metrics.otlp.grpc.endpoint",
        ValueKind::String,
        "localhost:4317",
        "Collector address (host:port).",
    ),
    opt(
        "metrics.otlp.grpc.headers.<name>",
        ValueKind::String,
        "",
        "Header sent with every push.",
    ),
    opt(
        "metrics.otlp.grpc.insecure",
        ValueKind::Bool,
        "false",
        "Plain HTTP/2 (h2c) instead of TLS.",
    ),
    opt(
        "metrics.otlp.grpc.tls.ca",
        ValueKind::String,
        "",
        "CA to trust for the collector (PEM file).",
    ),
    opt(
        "metrics.otlp.grpc.tls.cert",
        ValueKind::String,
        "",
        "Client certificate (PEM file).",
    ),
    opt(
        "metrics.otlp.grpc.tls.insecureSkipVerify",
        ValueKind::Bool,
        "false",
        "Accept any certificate the collector shows.",
    ),
    opt(
        "metrics.otlp.grpc.tls.key",
        ValueKind::String,
        "",
        "Client certificate's key (PEM file).",
    ),
    opt(
        "metrics.otlp.http",
        ValueKind::Section,
        "false",
        "Push over OTLP/HTTP (protobuf).",
    ),
    opt(
        "metrics.otlp.http.endpoint",
        ValueKind::String,
        "https://localhost:4318",
        "Collector URL; /v1/metrics is added when it has no path.",
    ),
    opt(
        "metrics.otlp.http.headers.<name>",
        ValueKind::String,
        "",
        "Header sent with every push.",
    ),
    opt(
        "metrics.otlp.http.tls.ca",
        ValueKind::String,
        "",
        "CA to trust for the collector (PEM file).",
    ),
    opt(
        "metrics.otlp.http.tls.cert",
        ValueKind::String,
        "",
        "Client certificate (PEM file).",
    ),
    opt(
        "metrics.otlp.http.tls.insecureSkipVerify",
        ValueKind::Bool,
        "false",
        "Accept any certificate the collector shows.",
    ),
    opt(
        "metrics.otlp.http.tls.key",
        ValueKind::String,
        "",
        "Client certificate's key (PEM file).",
    ),
    opt(
        "metrics.otlp.pushInterval",
        ValueKind::Duration,
        "10s",
        "How often metrics are pushed.",
    ),
    opt(
        "metrics.otlp.resourceAttributes.<name>",
        ValueKind::String,
        "",
        "Attribute of the metrics' resource.",
    ),
    opt(
        "metrics.otlp.serviceName",
        ValueKind::String,
        "traefik",
        "service.name of the metrics' resource.",
    ),
    opt(
        "metrics.statsD",
        ValueKind::Section,
        "false",
        "Send metrics to a StatsD daemon over UDP (Traefik's names, no labels).",
    ),
    opt(
        "metrics.statsD.address",
        ValueKind::String,
        "localhost:8125",
        "The StatsD daemon's host:port (UDP).",
    ),
    opt(
        "metrics.statsD.addEntryPointsLabels",
        ValueKind::Bool,
        "true",
        "Per-entry-point metrics.",
    ),
    opt(
        "metrics.statsD.addRoutersLabels",
        ValueKind::Bool,
        "false",
        "Per-router metrics.",
    ),
    opt(
        "metrics.statsD.addServicesLabels",
        ValueKind::Bool,
        "true",
        "Per-service metrics.",
    ),
    opt(
        "metrics.statsD.prefix",
        ValueKind::String,
        "traefik",
        "First segment of every metric name.",
    ),
    opt(
        "metrics.statsD.pushInterval",
        ValueKind::Duration,
        "10s",
        "How often metrics are sent.",
    ),
    opt(
        "metrics.datadog",
        ValueKind::Section,
        "false",
        "Send metrics to a Datadog agent as DogStatsD, labels as tags.",
    ),
    opt(
        "metrics.datadog.address",
        ValueKind::String,
        "localhost:8125",
        "The agent's host:port (UDP), or unix:///path of its datagram socket.",
    ),
    opt(
        "metrics.datadog.addEntryPointsLabels",
        ValueKind::Bool,
        "true",
        "Per-entry-point metrics.",
    ),
    opt(
        "metrics.datadog.addRoutersLabels",
        ValueKind::Bool,
        "false",
        "Per-router metrics.",
    ),
    opt(
        "metrics.datadog.addServicesLabels",
        ValueKind::Bool,
        "true",
        "Per-service metrics.",
    ),
    opt(
        "metrics.datadog.prefix",
        ValueKind::String,
        "traefik",
        "First segment of every metric name.",
    ),
    opt(
        "metrics.datadog.pushInterval",
        ValueKind::Duration,
        "10s",
        "How often metrics are sent.",
    ),
    opt(
        "metrics.influxDB2",
        ValueKind::Section,
        "false",
        "Write metrics to an InfluxDB 2 bucket (line protocol over HTTP).",
    ),
    opt(
        "metrics.influxDB2.address",
        ValueKind::String,
        "http://localhost:8086",
        "The server's URL.",
    ),
    opt(
        "metrics.influxDB2.token",
        ValueKind::String,
        "",
        "API token (required).",
    ),
    opt(
        "metrics.influxDB2.org",
        ValueKind::String,
        "",
        "Organisation of the bucket (required).",
    ),
    opt(
        "metrics.influxDB2.bucket",
        ValueKind::String,
        "",
        "Bucket written to (required).",
    ),
    opt(
        "metrics.influxDB2.addEntryPointsLabels",
        ValueKind::Bool,
        "true",
        "Per-entry-point metrics.",
    ),
    opt(
        "metrics.influxDB2.addRoutersLabels",
        ValueKind::Bool,
        "false",
        "Per-router metrics.",
    ),
    opt(
        "metrics.influxDB2.addServicesLabels",
        ValueKind::Bool,
        "true",
        "Per-service metrics.",
    ),
    opt(
        "metrics.influxDB2.additionalLabels.<name>",
        ValueKind::String,
        "",
        "Tag added to every point.",
    ),
    opt(
        "metrics.influxDB2.pushInterval",
        ValueKind::Duration,
        "10s",
        "How often metrics are written.",
    ),
    opt(
        "metrics.prometheus",
        ValueKind::Section,
        "false",
        "Enable Prometheus metrics at /metrics.",
    ),
    opt(
        "metrics.prometheus.buckets",
        ValueKind::List,
        "0.1,0.3,1.2,5.0",
        "Request duration histogram bounds, in seconds.",
    ),
    opt(
        "metrics.prometheus.addEntryPointsLabels",
        ValueKind::Bool,
        "true",
        "Per-entry-point metrics.",
    ),
    opt(
        "metrics.prometheus.addRoutersLabels",
        ValueKind::Bool,
        "false",
        "Per-router metrics.",
    ),
    opt(
        "metrics.prometheus.addServicesLabels",
        ValueKind::Bool,
        "true",
        "Per-service metrics.",
    ),
    opt(
        "metrics.prometheus.entryPoint",
        ValueKind::String,
        "gangway",
        "Entry point that serves /metrics.",
    ),
    opt(
        "metrics.prometheus.prefix",
        ValueKind::String,
        "gangway",
        "Metric name prefix (`traefik` reuses Traefik dashboards).",
    ),
    opt(
        "metrics.prometheus.headerLabels.<name>",
        ValueKind::String,
        "",
        "Label <name> on requests_total, from this request header.",
    ),
    opt(
        "metrics.prometheus.manualRouting",
        ValueKind::Bool,
        "false",
        "No /metrics router: route to prometheus@internal yourself.",
    ),
    opt(
        "accessLog",
        ValueKind::Section,
        "false",
        "Enable the access log.",
    ),
    opt(
        "accessLog.addInternals",
        ValueKind::Bool,
        "false",
        "Log requests to the API, dashboard, /ping and /metrics too.",
    ),
    opt(
        "accessLog.dualOutput",
        ValueKind::Bool,
        "false",
        "With accessLog.otlp, write the lines too.",
    ),
    opt(
        "accessLog.otlp",
        ValueKind::Section,
        "false",
        "Send access log records over OTLP (HTTP to https://localhost:4318 unless grpc or http says).",
    ),
    opt(
        "accessLog.otlp.grpc",
        ValueKind::Section,
        "false",
        "Send over OTLP/gRPC.",
    ),
    opt(
        "accessLog.otlp.grpc.endpoint",
        ValueKind::String,
        "localhost:4317",
        "Collector address (host:port).",
    ),
    opt(
        "accessLog.otlp.grpc.headers.<name>",
        ValueKind::String,
        "",
        "Header sent with every export.",
    ),
    opt(
        "accessLog.otlp.grpc.insecure",
        ValueKind::Bool,
        "false",
        "Plain HTTP/2 (h2c) instead of TLS.",
    ),
    opt(
        "accessLog.otlp.grpc.tls.ca",
        ValueKind::String,
        "",
        "CA to trust for the collector (PEM file).",
    ),
    opt(
        "accessLog.otlp.grpc.tls.cert",
        ValueKind::String,
        "",
        "Client certificate (PEM file).",
    ),
    opt(
        "accessLog.otlp.grpc.tls.insecureSkipVerify",
        ValueKind::Bool,
        "false",
        "Accept any certificate the collector shows.",
    ),
    opt(
        "accessLog.otlp.grpc.tls.key",
        ValueKind::String,
        "",
        "Client certificate's key (PEM file).",
    ),
    opt(
        "accessLog.otlp.http",
        ValueKind::Section,
        "false",
        "Send over OTLP/HTTP (protobuf).",
    ),
    opt(
        "accessLog.otlp.http.endpoint",
        ValueKind::String,
        "https://localhost:4318",
        "Collector URL; /v1/logs is added when it has no path.",
    ),
    opt(
        "accessLog.otlp.http.headers.<name>",
        ValueKind::String,
        "",
        "Header sent with every export.",
    ),
    opt(
        "accessLog.otlp.http.tls.ca",
        ValueKind::String,
        "",
        "CA to trust for the collector (PEM file).",
    ),
    opt(
        "accessLog.otlp.http.tls.cert",
        ValueKind::String,
        "",
        "Client certificate (PEM file).",
    ),
    opt(
        "accessLog.otlp.http.tls.insecureSkipVerify",
        ValueKind::Bool,
        "false",
        "Accept any certificate the collector shows.",
    ),
    opt(
        "accessLog.otlp.http.tls.key",
        ValueKind::String,
        "",
        "Client certificate's key (PEM file).",
    ),
    opt(
        "accessLog.otlp.resourceAttributes.<name>",
        ValueKind::String,
        "",
        "Attribute of the records' resource.",
    ),
    opt(
        "accessLog.otlp.serviceName",
        ValueKind::String,
        "traefik",
        "service.name of the records' resource.",
    ),
    opt(
        "accessLog.filePath",
        ValueKind::String,
        "",
        "Access log file (standard output when unset); reopened on SIGUSR1.",
    ),
    opt(
        "accessLog.format",
        ValueKind::String,
        "common",
        "`common`, `genericCLF` or `json`.",
    ),
    opt(
        "accessLog.bufferingSize",
        ValueKind::Int,
        "0",
        "Lines buffered for the writer (0 means 1024); beyond it lines are dropped and counted.",
    ),
    opt(
        "accessLog.filters.statusCodes",
        ValueKind::List,
        "",
        "Log only these status codes or ranges (`500-599`).",
    ),
    opt(
        "accessLog.filters.retryAttempts",
        ValueKind::Bool,
        "false",
        "Log requests that were retried.",
    ),
    opt(
        "accessLog.filters.minDuration",
        ValueKind::Duration,
        "0s",
        "Log requests slower than this.",
    ),
    opt(
        "accessLog.fields.defaultMode",
        ValueKind::String,
        "keep",
        "`keep`, `drop` or `redact` for fields not named.",
    ),
    opt(
        "accessLog.fields.names.<name>",
        ValueKind::String,
        "",
        "Mode of one field (`ClientAddr`, `RequestPath`, ...).",
    ),
    opt(
        "accessLog.fields.headers.defaultMode",
        ValueKind::String,
        "drop",
        "Mode for headers not named (request_, origin_, downstream_).",
    ),
    opt(
        "accessLog.fields.headers.names.<name>",
        ValueKind::String,
        "",
        "Mode of one header, request or response.",
    ),
    opt(
        "certificatesResolvers.<name>.acme.email",
        ValueKind::String,
        "",
        "Contact address registered with the ACME server.",
    ),
    opt(
        "certificatesResolvers.<name>.acme.storage",
        ValueKind::String,
        "acme",
        "Directory for the account key and certificates (mode 0700), a Traefik acme.json file (read and written in its format), or a store URL (redis://, etcd://) shared by instances.",
    ),
    opt(
        "certificatesResolvers.<name>.acme.fallback",
        ValueKind::List,
        "",
        "gangway's own: resolvers whose CAs are tried, in order, when an order through this one fails.",
    ),
    opt(
        "certificatesResolvers.<name>.acme.storageEncryptionKeyFile",
        ValueKind::String,
        "",
        "File with a 32-byte key that encrypts private keys in a shared store.",
    ),
    opt(
        "certificatesResolvers.<name>.acme.caServer",
        ValueKind::String,
        "https://acme-v02.api.letsencrypt.org/directory",
        "ACME directory URL; `staging` means Let's Encrypt staging.",
    ),
    opt(
        "certificatesResolvers.<name>.acme.keyType",
        ValueKind::String,
        "EC256",
        "Certificate key type: EC256, EC384, RSA2048, RSA3072, RSA4096 or RSA8192.",
    ),
    opt(
        "certificatesResolvers.<name>.acme.certificatesDuration",
        ValueKind::Int,
        "2160",
        "Certificate validity in hours; sets how long before expiry renewal starts, as in Traefik (2160: 30 days).",
    ),
    opt(
        "certificatesResolvers.<name>.acme.caCertificates",
        ValueKind::List,
        "",
        "PEM files of CAs trusted for the ACME server (e.g. pebble's).",
    ),
    opt(
        "certificatesResolvers.<name>.acme.caSystemCertPool",
        ValueKind::Bool,
        "false",
        "Trust the system's roots for the ACME server as well as caCertificates.",
    ),
    opt(
        "certificatesResolvers.<name>.acme.caServerName",
        ValueKind::String,
        "",
        "Name the ACME server's certificate is verified for (and sent as SNI) instead of caServer's host.",
    ),
    opt(
        "certificatesResolvers.<name>.acme.preferredChain",
        ValueKind::String,
        "",
        "Issuer common name of the top certificate of the chain to serve, when the CA offers alternates.",
    ),
    opt(
        "certificatesResolvers.<name>.acme.profile",
        ValueKind::String,
        "",
        "ACME profile orders ask for (e.g. shortlived); none: the CA's default.",
    ),
    opt(
        "certificatesResolvers.<name>.acme.emailAddresses",
        ValueKind::List,
        "",
        "E-mail addresses added to certificate requests.",
    ),
    opt(
        "certificatesResolvers.<name>.acme.disableCommonName",
        ValueKind::Bool,
        "false",
        "Leave the common name out of certificate requests.",
    ),
    opt(
        "certificatesResolvers.<name>.acme.eab.kid",
        ValueKind::String,
        "",
        "External account binding: the key identifier the CA gave.",
    ),
    opt(
        "certificatesResolvers.<name>.acme.eab.hmacEncoded",
        ValueKind::String,
        "",
        "External account binding: the HMAC key the CA gave (base64url).",
    ),
    opt(
        "certificatesResolvers.<name>.acme.clientTimeout",
        ValueKind::Duration,
        "2m",
        "Longest exchange with the ACME server, body included.",
    ),
    opt(
        "certificatesResolvers.<name>.acme.clientResponseHeaderTimeout",
        ValueKind::Duration,
        "30s",
        "Longest wait for the head of the ACME server's answer, and for the connection.",
    ),
    opt(
        "certificatesResolvers.<name>.acme.certificateTimeout",
        ValueKind::Duration,
        "30s",
        "How long the CA may take to issue once the order is finalized.",
    ),
    opt(
        "certificatesResolvers.<name>.acme.tlsChallenge",
        ValueKind::Section,
        "false",
        "Answer TLS-ALPN-01 challenges (the default when no challenge is set).",
    ),
    opt(
        "certificatesResolvers.<name>.acme.tlsChallenge.delay",
        ValueKind::Duration,
        "0s",
        "Wait this long before asking the CA to validate.",
    ),
    opt(
        "certificatesResolvers.<name>.acme.httpChallenge.entryPoint",
        ValueKind::String,
        "",
        "Answer HTTP-01 challenges on this plain entry point.",
    ),
    opt(
        "certificatesResolvers.<name>.acme.httpChallenge.delay",
        ValueKind::Duration,
        "0s",
        "Wait this long before asking the CA to validate.",
    ),
    opt(
        "certificatesResolvers.<name>.acme.dnsChallenge.provider",
        ValueKind::String,
        "",
        "Answer DNS-01 challenges through this DNS provider: rfc2136, exec or httpreq.",
    ),
    opt(
        "certificatesResolvers.<name>.acme.dnsChallenge.resolvers",
        ValueKind::List,
        "",
        "DNS servers asked for the TXT record before the CA is (default: the zone's authoritative ones).",
    ),
    opt(
        "certificatesResolvers.<name>.acme.dnsChallenge.propagation.delayBeforeChecks",
        ValueKind::Duration,
        "0s",
        "Wait this long after publishing the TXT record before checking it.",
    ),
    opt(
        "certificatesResolvers.<name>.acme.dnsChallenge.propagation.disableChecks",
        ValueKind::Bool,
        "false",
        "Tell the CA without checking that DNS servers answer the TXT record.",
    ),
    opt(
        "certificatesResolvers.<name>.acme.dnsChallenge.propagation.requireAllRNS",
        ValueKind::Bool,
        "false",
        "Without resolvers: ask the system's recursive resolvers too.",
    ),
    opt(
        "certificatesResolvers.<name>.acme.dnsChallenge.delayBeforeCheck",
        ValueKind::Duration,
        "0s",
        "Traefik v2's name of propagation.delayBeforeChecks.",
    ),
    opt(
        "certificatesResolvers.<name>.acme.dnsChallenge.disablePropagationCheck",
        ValueKind::Bool,
        "false",
        "Traefik v2's name of propagation.disableChecks.",
    ),
    opt(
        "certificatesResolvers.<name>.acme.dnsChallenge.propagation.disableANSChecks",
        ValueKind::Bool,
        "false",
        "Accepted, not supported: the authoritative servers are asked.",
    ),
    opt(
        "core.defaultRuleSyntax",
        ValueKind::String,
        "v3",
        "Syntax of rules whose router sets no ruleSyntax: v3, or v2 (deprecated).",
    ),
    opt(
        "tracing",
        ValueKind::Section,
        "false",
        "Enable OpenTelemetry tracing: spans sent over OTLP.",
    ),
    opt(
        "tracing.addInternals",
        ValueKind::Bool,
        "false",
        "Trace requests to the API, dashboard, /ping and /metrics too.",
    ),
    opt(
        "tracing.capturedRequestHeaders",
        ValueKind::List,
        "",
        "Request headers recorded on spans.",
    ),
    opt(
        "tracing.capturedResponseHeaders",
        ValueKind::List,
        "",
        "Response headers recorded on spans.",
    ),
    opt(
        "tracing.otlp",
        ValueKind::Section,
        "false",
        "Send spans over OTLP (HTTP to https://localhost:4318 unless grpc or http says).",
    ),
    opt(
        "tracing.otlp.grpc",
        ValueKind::Section,
        "false",
        "Send spans over OTLP/gRPC.",
    ),
    opt(
        "tracing.otlp.grpc.endpoint",
        ValueKind::String,
        "localhost:4317",
        "Collector address (host:port).",
    ),
    opt(
        "tracing.otlp.grpc.headers.<name>",
        ValueKind::String,
        "",
        "Header sent with every export.",
    ),
    opt(
        "tracing.otlp.grpc.insecure",
        ValueKind::Bool,
        "false",
        "Plain HTTP/2 to the collector, no TLS.",
    ),
    opt(
        "tracing.otlp.grpc.tls.ca",
        ValueKind::String,
        "",
        "CA file trusted for the collector.",
    ),
    opt(
        "tracing.otlp.grpc.tls.cert",
        ValueKind::String,
        "",
        "Client certificate file for the collector.",
    ),
    opt(
        "tracing.otlp.grpc.tls.insecureSkipVerify",
        ValueKind::Bool,
        "false",
        "Accept any collector certificate.",
    ),
    opt(
        "tracing.otlp.grpc.tls.key",
        ValueKind::String,
        "",
        "Client certificate key file for the collector.",
    ),
    opt(
        "tracing.otlp.http",
        ValueKind::Section,
        "false",
        "Send spans over OTLP/HTTP (protobuf).",
    ),
    opt(
        "tracing.otlp.http.endpoint",
        ValueKind::String,
        "https://localhost:4318",
        "Collector URL; /v1/traces is added when it has no path.",
    ),
    opt(
        "tracing.otlp.http.headers.<name>",
        ValueKind::String,
        "",
        "Header sent with every export.",
    ),
    opt(
        "tracing.otlp.http.tls.ca",
        ValueKind::String,
        "",
        "CA file trusted for the collector.",
    ),
    opt(
        "tracing.otlp.http.tls.cert",
        ValueKind::String,
        "",
        "Client certificate file for the collector.",
    ),
    opt(
        "tracing.otlp.http.tls.insecureSkipVerify",
        ValueKind::Bool,
        "false",
        "Accept any collector certificate.",
    ),
    opt(
        "tracing.otlp.http.tls.key",
        ValueKind::String,
        "",
        "Client certificate key file for the collector.",
    ),
    opt(
        "tracing.resourceAttributes.<name>",
        ValueKind::String,
        "",
        "Attribute of the spans' resource.",
    ),
    opt(
        "tracing.safeQueryParams",
        ValueKind::List,
        "",
        "Query parameters whose values spans keep (others: REDACTED).",
    ),
    opt(
        "tracing.sampleRate",
        ValueKind::String,
        "1.0",
        "Share of new traces recorded, 0 to 1.",
    ),
    opt(
        "tracing.serviceName",
        ValueKind::String,
        "traefik",
        "service.name of the spans' resource.",
    ),
    opt(
        "experimental.plugins.<name>.moduleName",
        ValueKind::String,
        "",
        "The plugin that middlewares' plugin.<name> runs, by its module path; gangway runs its own implementation of the plugins it knows.",
    ),
    opt(
        "experimental.localPlugins.<name>.moduleName",
        ValueKind::String,
        "",
        "As experimental.plugins.<name>.moduleName, for a plugin Traefik would read from a local folder.",
    ),
    opt(
        "global.notAppendXForwardedFor",
        ValueKind::Bool,
        "false",
        "forwardedHeaders.notAppendXForwardedFor on every entry point.",
    ),
];

/// The heading for a group of options, by first segment.
fn group_title(first: &str) -> &str {
    match first {
        "entryPoints" => "Entry points (one set per <name>)",
        "providers" => "Providers",
        "log" => "Log",
        "serversTransport" => "Connections to backend servers",
        "tcpServersTransport" => "Connections to TCP servers",
        "certificatesResolvers" => "Certificate resolvers (one set per <name>)",
        other => other,
    }
}

/// The `--help` text: usage, how the sources combine, and every option with
/// its default.
pub fn help_text() -> String {
    let mut out = String::new();
    // Writing to a String cannot fail; the results are ignored.
    let _ = writeln!(
        out,
        "gangway {}: an edge router configured like Traefik v3\n",
        env!("CARGO_PKG_VERSION")
    );
    let _ = writeln!(
        out,
        "Usage: gangway [--configFile=PATH] [--OPTION=VALUE]...\n\
         \x20      gangway check [--compose FILE...] [--docker] [--format text|json] [--OPTION=VALUE]...\n"
    );
    out.push_str(
        "Commands:\n\
         \x20 (none)  Run the router until SIGTERM or SIGINT.\n\
         \x20 check   Check labels and configuration without starting anything;\n\
         \x20         `gangway check --help` tells more.\n\n",
    );
    out.push_str(
        "Sources, each overriding the ones before it option by option:\n\
         \x20 built-in defaults < configuration file < environment < command line.\n\
         Configuration file: --configFile=PATH (or GANGWAY_CONFIGFILE), otherwise\n\
         \x20 gangway.toml, gangway.yml or gangway.yaml in the working directory if present.\n\
         Environment: GANGWAY_ then the option path in upper case with `_` for `.`:\n\
         \x20 GANGWAY_LOG_LEVEL=DEBUG is --log.level=DEBUG; names (<name>) are lower-cased.\n\
         Command line: --option=value or --option value; option names ignore case;\n\
         \x20 lists are comma-separated; a BOOL option alone means true.\n\
         With no entry point configured, gangway listens on `web` at :80.\n",
    );
    out.push_str(
        "\nGeneral\n\
         \x20 --configFile=PATH\n\
         \x20     Static configuration file (.toml, .yml or .yaml).\n\
         \x20 -h, --help\n\
         \x20     Show this help and exit.\n\
         \x20 --version\n\
         \x20     Show the version and exit.\n",
    );
    let mut current_group = "";
    for spec in OPTIONS {
        let first = spec.segments().next().unwrap_or_default();
        if first != current_group {
            current_group = first;
            let _ = writeln!(out, "\n{}", group_title(first));
        }
        let value = if spec.kind.value_optional() {
            format!("[={}]", spec.kind.metavar())
        } else {
            format!("={}", spec.kind.metavar())
        };
        let default = if spec.default.is_empty() {
            String::from("none")
        } else {
            spec.default.to_owned()
        };
        let _ = writeln!(
            out,
            "  --{}{value}\n      {} [default: {default}]",
            spec.path, spec.description
        );
    }
    out.push_str(
        "\nAccepted from Traefik, not implemented\n\
         \x20 Given in any source, each is named once in the log, /api/overview and\n\
         \x20 `gangway check` with what does not happen; gangway starts all the same.\n\
         \x20 inert: no meaning for gangway. unsupported: a subsystem gangway lacks.\n",
    );
    for spec in traefik::NOT_IMPLEMENTED {
        let _ = writeln!(
            out,
            "  {:<12} {}\n      {}",
            spec.state.as_str(),
            spec.path,
            spec.description
        );
    }
    out
}

/// What a segment of a concrete option path stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Seg {
    /// One of the row's own names, written as the row writes it.
    Literal,
    /// A user-chosen name (`<name>`).
    Name,
    /// A list index (`[n]`).
    Index,
}

impl Seg {
    fn of(pattern: &str) -> Seg {
        match pattern {
            NAME => Seg::Name,
            INDEX => Seg::Index,
            _ => Seg::Literal,
        }
    }
}

/// An option found for a flag or an environment variable.
#[derive(Debug, Clone)]
pub(super) struct Matched {
    /// The row; for a section given as a value (`--api=true`), the first
    /// row under it.
    pub spec: &'static OptionSpec,
    /// The concrete key path: the row's segments with names filled in.
    pub path: Vec<String>,
    /// What each segment of `path` is.
    pub segs: Vec<Seg>,
    /// How the value is read: the row's kind, or `Section` for a section
    /// given as a value.
    pub kind: ValueKind,
}

impl Matched {
    /// Whether gangway implements the option.
    pub fn state(&self) -> OptionState {
        self.spec.state
    }
}

/// More tokens than this is no option; the bound keeps matching cheap on
/// hostile input.
const MAX_TOKENS: usize = 32;
/// Longest segment compared for suggestions.
const MAX_SEGMENT_LEN: usize = 64;
/// Largest total edit distance that still earns a suggestion.
const MAX_SUGGESTION_DISTANCE: usize = 3;

/// Case-insensitive edit distance between two segments.
pub(super) fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().flat_map(char::to_lowercase).collect();
    let b: Vec<char> = b.chars().flat_map(char::to_lowercase).collect();
    if a.len() > MAX_SEGMENT_LEN || b.len() > MAX_SEGMENT_LEN {
        return if a == b { 0 } else { usize::MAX / 4 };
    }
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        current[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

/// Whether `token` can stand at a list index.
pub(super) fn is_index(token: &str) -> bool {
    !token.is_empty() && token.len() <= 4 && token.bytes().all(|b| b.is_ascii_digit())
}

/// The cheapest way to line `tokens` up with `pattern`: each literal segment
/// takes one token, each `<name>` takes one token or, when `multi_token_names`
/// is set, several, and each `[n]` one number. Returns the summed edit
/// distance of the literal segments and, per `<name>`, the number of tokens
/// it took.
fn align(
    pattern: &[&str],
    tokens: &[&str],
    multi_token_names: bool,
) -> Option<(usize, Vec<usize>)> {
    let Some((first, rest)) = pattern.split_first() else {
        return tokens.is_empty().then(|| (0, Vec::new()));
    };
    if tokens.len() < pattern.len() {
        return None;
    }
    if *first == NAME {
        let most = if multi_token_names {
            tokens.len() - rest.len()
        } else {
            1
        };
        let mut best: Option<(usize, Vec<usize>)> = None;
        for taken in 1..=most {
            let name_tokens = tokens.get(..taken)?;
            if name_tokens.iter().all(|t| t.is_empty()) {
                continue;
            }
            let Some((cost, mut widths)) = align(rest, tokens.get(taken..)?, multi_token_names)
            else {
                continue;
            };
            // Ties go to the shortest name, i.e. the most literal segments
            // matched.
            if best.as_ref().is_none_or(|(b, _)| cost < *b) {
                widths.insert(0, taken);
                best = Some((cost, widths));
            }
        }
        best
    } else if *first == INDEX {
        let (token, rest_tokens) = tokens.split_first()?;
        if !is_index(token) {
            return None;
        }
        align(rest, rest_tokens, multi_token_names)
    } else {
        let (token, rest_tokens) = tokens.split_first()?;
        let (cost, widths) = align(rest, rest_tokens, multi_token_names)?;
        Some((cost + distance(first, token), widths))
    }
}

/// Fills a row's segments (or the first ones, as many as `pattern` has)
/// with names taken from `tokens` according to `widths`, joining
/// multi-token names with `_`.
fn fill(
    pattern: &[&str],
    tokens: &[&str],
    widths: &[usize],
    lowercase_names: bool,
) -> (Vec<String>, Vec<Seg>) {
    let mut path = Vec::new();
    let mut segs = Vec::new();
    let mut at = 0;
    let mut names = widths.iter();
    for segment in pattern {
        let seg = Seg::of(segment);
        segs.push(seg);
        match seg {
            Seg::Name => {
                let width = names.next().copied().unwrap_or(1);
                let end = (at + width).min(tokens.len());
                let name = tokens.get(at..end).unwrap_or_default().join("_");
                path.push(if lowercase_names {
                    name.to_lowercase()
                } else {
                    name
                });
                at = end;
            }
            Seg::Index => {
                path.push(tokens.get(at).copied().unwrap_or_default().to_owned());
                at += 1;
            }
            Seg::Literal => {
                path.push((*segment).to_owned());
                at += 1;
            }
        }
    }
    (path, segs)
}

/// How a name was split into tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Style {
    /// A flag: dot-separated, names kept as written.
    Flag,
    /// An environment variable: `_`-separated, names lower-cased and able
    /// to span several tokens.
    Env,
}

/// Splits a flag's name into tokens: at dots, and a list index written
/// `domains[0]` into `domains` and `0`.
pub(super) fn flag_tokens(key: &str) -> Vec<&str> {
    let mut tokens = Vec::new();
    for part in key.split('.') {
        match part.strip_suffix(']').and_then(|p| p.split_once('[')) {
            Some((list, index)) if !list.is_empty() => {
                tokens.push(list);
                tokens.push(index);
            }
            _ => tokens.push(part),
        }
    }
    tokens
}

/// Finds the row `tokens` names exactly (segments compared without regard
/// to case), or else the closest row as a suggestion.
///
/// Besides exact rows, two forms are found: a section given as a value
/// (`--api=true`, `--certificatesResolvers.le.acme.httpChallenge=true`),
/// which names the start of a row, and anything below an option gangway
/// does not implement (a plugin's own settings), which it accepts whole.
pub(super) fn lookup(tokens: &[&str], style: Style) -> Result<Matched, Option<Vec<String>>> {
    if tokens.len() > MAX_TOKENS {
        return Err(None);
    }
    let multi = style == Style::Env;
    let lower = style == Style::Env;
    let mut best: Option<(usize, usize, &'static OptionSpec, Vec<usize>)> = None;
    for spec in all_options() {
        let pattern: Vec<&str> = spec.segments().collect();
        let Some((cost, widths)) = align(&pattern, tokens, multi) else {
            continue;
        };
        let name_tokens: usize = widths.iter().sum();
        let better = best
            .as_ref()
            .is_none_or(|(c, n, _, _)| (cost, name_tokens) < (*c, *n));
        if better {
            best = Some((cost, name_tokens, spec, widths));
        }
    }
    if let Some((0, _, spec, widths)) = &best {
        let pattern: Vec<&str> = spec.segments().collect();
        let (path, segs) = fill(&pattern, tokens, widths, lower);
        return Ok(Matched {
            spec,
            path,
            segs,
            kind: spec.kind,
        });
    }
    if let Some(found) = lookup_partial(tokens, multi, lower) {
        return Ok(found);
    }
    match best {
        Some((cost, _, spec, widths)) if cost <= MAX_SUGGESTION_DISTANCE => {
            let pattern: Vec<&str> = spec.segments().collect();
            Err(Some(fill(&pattern, tokens, &widths, false).0))
        }
        _ => Err(suggest_by_last_segment(tokens)),
    }
}

/// A section given as a value, or a name below an option that is not
/// implemented; implemented rows win over the others.
fn lookup_partial(tokens: &[&str], multi: bool, lower: bool) -> Option<Matched> {
    let mut found: Option<Matched> = None;
    for spec in all_options() {
        let pattern: Vec<&str> = spec.segments().collect();
        let candidate = if pattern.len() > tokens.len() {
            // The start of a row: a section.
            let Some(head) = pattern.get(..tokens.len()) else {
                continue;
            };
            let Some((0, widths)) = align(head, tokens, multi) else {
                continue;
            };
            let (path, segs) = fill(head, tokens, &widths, lower);
            Matched {
                spec,
                path,
                segs,
                kind: ValueKind::Section,
            }
        } else if spec.state != OptionState::Implemented
            && (spec.kind == ValueKind::Section || pattern.last() == Some(&NAME))
        {
            // Free-form settings below an option that is not implemented.
            let mut best = None;
            for end in pattern.len()..tokens.len() {
                if let Some((0, widths)) = align(&pattern, tokens.get(..end)?, multi) {
                    best = Some(widths);
                    break;
                }
            }
            let Some(widths) = best else { continue };
            let (mut path, mut segs) = fill(&pattern, tokens, &widths, lower);
            let used: usize = path.len() + widths.iter().map(|w| w - 1).sum::<usize>();
            for token in tokens.get(used..).unwrap_or_default() {
                path.push((*token).to_owned());
                segs.push(Seg::Name);
            }
            Matched {
                spec,
                path,
                segs,
                kind: ValueKind::String,
            }
        } else {
            continue;
        };
        let replace = match &found {
            None => true,
            Some(current) => {
                current.state() != OptionState::Implemented
                    && candidate.state() == OptionState::Implemented
            }
        };
        if replace {
            found = Some(candidate);
        }
    }
    found
}

/// For a name with segments missing or extra, suggests the one row whose
/// last segment is the name's last token, if exactly one is.
fn suggest_by_last_segment(tokens: &[&str]) -> Option<Vec<String>> {
    let last = tokens.last()?;
    let mut candidates = all_options().filter(|spec| {
        spec.segments()
            .last()
            .is_some_and(|segment| segment.eq_ignore_ascii_case(last))
    });
    let spec = candidates.next()?;
    if candidates.next().is_some() {
        return None;
    }
    Some(
        spec.segments()
            .enumerate()
            .map(|(i, segment)| match tokens.get(i) {
                Some(token) if segment == NAME && tokens.len() > 2 => (*token).to_owned(),
                _ => segment.to_owned(),
            })
            .collect(),
    )
}

/// A Traefik option given in some source that gangway accepts without
/// implementing it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AcceptedOption {
    /// The option's path as given, names filled in (`tracing.otlp.http.endpoint`).
    pub option: String,
    /// Where it was given: a file name, a flag or a variable.
    pub source: String,
    /// Inert or unsupported.
    pub state: OptionState,
    /// What does not happen.
    pub description: &'static str,
}

impl std::fmt::Display for AcceptedOption {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({}, from {}): {}",
            self.option,
            self.state.as_str(),
            self.source,
            self.description
        )
    }
}

/// A flag's value as Go's strconv.ParseBool reads it (`true`, `t`, `1`,
/// `false`, `f`, `0`, in any case).
pub(super) fn parse_bool(text: &str) -> Option<bool> {
    const TRUE: &[&str] = &["true", "t", "1"];
    const FALSE: &[&str] = &["false", "f", "0"];
    let text = text.trim();
    if TRUE.iter().any(|t| t.eq_ignore_ascii_case(text)) {
        Some(true)
    } else if FALSE.iter().any(|f| f.eq_ignore_ascii_case(text)) {
        Some(false)
    } else {
        None
    }
}
