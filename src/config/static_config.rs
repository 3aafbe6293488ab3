//! Static configuration: what gangway needs before it starts, read once at
//! startup from a file, the environment and the command line.
//!
//! Keys and their meaning follow Traefik v3's static configuration
//! (`entryPoints`, `providers`, `log`, `serversTransport`), so a Traefik
//! file for the features gangway has loads unchanged. Every option is listed
//! once in [`OPTIONS`], which drives the command line, the environment and
//! `--help`; adding an option means adding a field here and a row there.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::config::duration::{Duration, SignedDuration};
use crate::config::format::FormatError;

mod address;
mod load;
pub mod observability;
mod options;
pub mod otlp;
#[cfg(test)]
mod tests;
mod tree;

pub use address::{AddressError, ListenAddress};
pub use load::{
    ENV_ALLOWLIST, ENV_PREFIX, Loaded, Notes, SearchRoots, TRAEFIK_ENV_PREFIX, load, load_from,
};
pub use observability::{
    AccessLog, Api, Metrics, MetricsInfluxDb2, MetricsOtlp, MetricsStatsd, Ping, Prometheus,
};
pub use options::{
    AcceptedOption, OPTIONS, OptionSpec, OptionState, ValueKind, all_options, help_text,
};
pub use otlp::{EntryPointObservability, Otlp, Tracing};

/// The whole static configuration.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct StaticConfig {
    /// The network addresses gangway listens on, by name. Routers pick
    /// entry points by these names. When no source defines any, gangway
    /// listens on one entry point named `web` at `:80`.
    pub entry_points: BTreeMap<String, EntryPoint>,
    /// Where the dynamic configuration (routers, services, middlewares)
    /// comes from.
    pub providers: Providers,
    /// gangway's own log.
    pub log: Log,
    /// How gangway talks to the backend servers.
    pub servers_transport: ServersTransport,
    /// How gangway connects to TCP servers whose load balancer names no
    /// `serversTransport` (Traefik's `tcpServersTransport`).
    pub tcp_servers_transport: TcpServersTransport,
    /// The read-only API and dashboard; absent when not enabled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api: Option<Api>,
    /// The `/ping` health endpoint; absent when not enabled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ping: Option<Ping>,
    /// Metrics exporters.
    #[serde(skip_serializing_if = "Metrics::is_disabled")]
    pub metrics: Metrics,
    /// The access log; absent when not enabled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access_log: Option<AccessLog>,
    /// Where certificates come from, by name; routers name one with
    /// `tls.certResolver`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub certificates_resolvers: BTreeMap<String, CertificatesResolver>,
    /// Traefik options given in some source that gangway accepts without
    /// implementing them; the log, `/api/overview` and `gangway check`
    /// name each.
    #[serde(skip)]
    pub accepted: Vec<AcceptedOption>,
    /// Traefik's `core` section: how router rules are read by default.
    pub core: Core,
    /// OpenTelemetry tracing; absent when not enabled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tracing: Option<Tracing>,
    /// Traefik's `global` section; its update check and usage statistics
    /// are inert here (said once at start).
    pub global: Global,
    /// Traefik's `experimental` section: the plugins that middlewares'
    /// `plugin.<key>` name.
    #[serde(skip_serializing_if = "Experimental::is_empty")]
    pub experimental: Experimental,
}

/// Traefik's `experimental` section, what gangway reads of it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Experimental {
    /// Plugins Traefik would download from its catalogue, by the key
    /// middlewares name them with (`plugin.<key>`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub plugins: BTreeMap<String, PluginDecl>,
    /// Plugins Traefik would read from a local folder, by key.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub local_plugins: BTreeMap<String, PluginDecl>,
}

impl Experimental {
    /// No plugin is declared.
    pub fn is_empty(&self) -> bool {
        self.plugins.is_empty() && self.local_plugins.is_empty()
    }

    /// Every declared plugin's key and module name; a key declared in both
    /// maps takes its `plugins` entry, as Traefik lets a catalogue plugin
    /// win over a local one of the same key.
    pub fn module_names(&self) -> BTreeMap<String, String> {
        self.local_plugins
            .iter()
            .chain(&self.plugins)
            .map(|(key, decl)| (key.clone(), decl.module_name.clone()))
            .collect()
    }
}

/// One declared plugin.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct PluginDecl {
    /// The plugin's module path, e.g.
    /// `github.com/packruler/rewrite-body`; it chooses gangway's native
    /// implementation.
    pub module_name: String,
}

/// Traefik's `global` section, what gangway does with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Global {
    /// `forwardedHeaders.notAppendXForwardedFor` on every entry point.
    /// Default `false`.
    pub not_append_x_forwarded_for: bool,
}

/// Traefik's `core` section.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Core {
    /// The syntax of router rules whose router sets no `ruleSyntax`: `v3`
    /// (the default) or `v2`, which Traefik v3 deprecates and still reads.
    pub default_rule_syntax: DefaultRuleSyntax,
}

/// The values of `core.defaultRuleSyntax`; anything else is refused at
/// start, as Traefik does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DefaultRuleSyntax {
    /// Traefik v2's rule syntax.
    V2,
    /// Traefik v3's rule syntax.
    #[default]
    V3,
}

/// One address gangway listens on, with how it treats connections there.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct EntryPoint {
    /// The address to listen on, `[host]:port` such as `:80` or
    /// `127.0.0.1:8080`. Required: [`load`] rejects an entry point that no
    /// source gave an address (a bare deserialization falls back to `:80`).
    pub address: ListenAddress,
    /// Which clients may set the `X-Forwarded-*` headers.
    pub forwarded_headers: ForwardedHeaders,
    /// Timeouts for client connections on this entry point.
    pub transport: EntryPointTransport,
    /// HTTP settings every router on this entry point gets: default TLS
    /// and redirection to another entry point.
    pub http: EntryPointHttp,
    /// HTTP/2 settings (Traefik's `http2` section).
    pub http2: EntryPointHttp2,
    /// When present, HTTP/3 over QUIC on the same port, UDP (Traefik's
    /// `http3` section), for the entry point's TLS routers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http3: Option<EntryPointHttp3>,
    /// UDP settings, for an entry point whose address ends in `/udp`.
    pub udp: EntryPointUdp,
    /// When present, connections from these sources may start with a
    /// PROXY protocol header (v1 or v2) naming the real client, as a load
    /// balancer in front sends it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proxy_protocol: Option<ProxyProtocol>,
    /// gangway's own request limits, where Traefik has none.
    pub limits: EntryPointLimits,
    /// One of the entry points HTTP and TCP routers without `entryPoints`
    /// join. When no entry point says so, they join every HTTP and TCP
    /// one; when some do, only those. Default `false`.
    pub as_default: bool,
    /// Bind the port with `SO_REUSEPORT`, so that another process (a
    /// second gangway during an upgrade) may listen on it too; the kernel
    /// spreads new connections between them. Default `false`.
    pub reuse_port: bool,
    /// Let routers on this entry point take ACME HTTP-01 challenge
    /// requests (`/.well-known/acme-challenge/…`) for tokens gangway did
    /// not ask for itself: a router whose rule matches one gets it. By
    /// default gangway's resolvers answer every challenge path first, as
    /// Traefik does. Default `false`.
    #[serde(rename = "allowACMEByPass")]
    pub allow_acme_by_pass: bool,
    /// Traefik's per-entry-point `observability` switches.
    pub observability: EntryPointObservability,
}

/// HTTP/2 settings of an entry point.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct EntryPointHttp2 {
    /// Streams a client may have open at once on one connection. Default
    /// `250`, as in Traefik.
    pub max_concurrent_streams: u32,
    /// The HPACK table a client's header compression may use, in bytes
    /// (announced as `SETTINGS_HEADER_TABLE_SIZE`). Default `4096`, the
    /// protocol's and Traefik's.
    pub max_decoder_header_table_size: u32,
}

impl Default for EntryPointHttp2 {
    fn default() -> Self {
        EntryPointHttp2 {
            max_concurrent_streams: 250,
            max_decoder_header_table_size: 4096,
        }
    }
}

/// HTTP/3 settings of an entry point.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct EntryPointHttp3 {
    /// The UDP port that `Alt-Svc` names, for when clients reach gangway
    /// on another port than the one it listens on (a port mapping). `0`,
    /// the default: the entry point's own port.
    pub advertised_port: u16,
}

/// UDP settings of an entry point.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct EntryPointUdp {
    /// How long a client's session (its own socket towards the server)
    /// lives without a datagram either way. Default `3s`, as in Traefik.
    pub timeout: Duration,
}

impl Default for EntryPointUdp {
    fn default() -> Self {
        EntryPointUdp {
            timeout: Duration(std::time::Duration::from_secs(3)),
        }
    }
}

/// Limits on what one client may send (gangway's own names).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct EntryPointLimits {
    /// Largest request head: HTTP/1 request line and fields, or an HTTP/2
    /// header list (HPACK-decoded, so a compression bomb stops here too).
    /// Past it: 431. Default 64 KiB; at least 8 KiB.
    pub max_header_bytes: u32,
    /// Most fields in one HTTP/1 request head. Past it: 431. Default 100.
    pub max_headers: u32,
    /// HTTP/2 streams a client may reset before gangway has accepted them
    /// (the "rapid reset" attack); past it the connection is closed.
    /// Default 20.
    pub max_pending_reset_streams: u32,
    /// PING and SETTINGS frames one HTTP/2 connection may send in ten
    /// seconds (a control-frame flood keeps a core busy answering them);
    /// past it GOAWAY `ENHANCE_YOUR_CALM` and the connection is closed.
    /// Default 200; `0`: no limit.
    pub max_control_frames: u32,
    /// Longest time a client may take to send a complete request head,
    /// from its first byte (slowloris); past it the connection is closed.
    /// Default `10s`, HAProxy's usual `timeout http-request`; `0s`: none.
    pub header_read_timeout: Duration,
    /// Largest request body, in bytes; past it 413 and nothing more reaches
    /// the server. Default `0`: no limit (as Traefik).
    pub max_request_body_bytes: u64,
    /// An upgraded connection (WebSocket) with no byte in either direction
    /// for this long is closed. Default `1h`, HAProxy's usual
    /// `timeout tunnel`; `0s`: none.
    pub web_socket_idle_timeout: Duration,
}

impl Default for EntryPointLimits {
    fn default() -> Self {
        EntryPointLimits {
            max_header_bytes: 64 * 1024,
            max_headers: 100,
            max_pending_reset_streams: 20,
            max_control_frames: 200,
            header_read_timeout: Duration(std::time::Duration::from_secs(10)),
            max_request_body_bytes: 0,
            web_socket_idle_timeout: Duration(std::time::Duration::from_secs(3600)),
        }
    }
}

/// HTTP defaults of an entry point.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct EntryPointHttp {
    /// When present, every router on this entry point is a TLS router
    /// with these settings unless it has a `tls` section of its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<EntryPointTls>,
    /// Redirect every plain-HTTP request to another entry point; None (and
    /// left out of the API) when no redirection option is given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redirections: Option<Redirections>,
    /// Middlewares every HTTP router on this entry point runs before its
    /// own, named as that router names its own: without `@provider`, in
    /// the router's provider.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub middlewares: Vec<String>,
    /// Put request paths in canonical form before routing (dot segments
    /// resolved, `//` merged, escapes of unreserved characters decoded).
    /// Default `true`, as in Traefik.
    pub sanitize_path: bool,
    /// Which percent-escapes of reserved characters a request path may
    /// hold; every one is allowed by default, as in Traefik 3.7. Dot
    /// segments hidden behind escapes are refused whatever this says.
    pub encoded_characters: EntryPointEncodedCharacters,
    /// What happens to request headers whose names contain `_`
    /// (`keep`, `delete` or `reject`). Default `keep`, as in Traefik.
    pub underscore_headers_strategy: UnderscoreHeadersStrategy,
    /// Traefik's name for the largest request head, in bytes; when given it
    /// replaces `limits.maxHeaderBytes` (past it: 431). Traefik's default
    /// is 1 MiB, gangway's 64 KiB (`limits.maxHeaderBytes`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_header_bytes: Option<u32>,
    /// Send `;` in query strings on as `%3B`, so that servers which split
    /// parameters on `;` as well as `&` see one parameter. By default the
    /// query goes on as received. Default `false`.
    pub encode_query_semicolons: bool,
}

impl Default for EntryPointHttp {
    fn default() -> Self {
        EntryPointHttp {
            tls: None,
            redirections: None,
            middlewares: Vec::new(),
            sanitize_path: true,
            encoded_characters: EntryPointEncodedCharacters::default(),
            underscore_headers_strategy: UnderscoreHeadersStrategy::default(),
            max_header_bytes: None,
            encode_query_semicolons: false,
        }
    }
}

pub use crate::config::dynamic::middleware::EncodedCharacters;

/// An entry point's `http.encodedCharacters`: the options of the
/// `encodedCharacters` middleware, each `true` unless set, as Traefik 3.7
/// defaults them (Traefik had them refuse in early 3.6 releases, which
/// broke GitLab's `/projects/group%2Fproject`, WebDAV and S3-style keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct EntryPointEncodedCharacters {
    /// Allow `%2F` (`/`). Default `true`.
    pub allow_encoded_slash: bool,
    /// Allow `%5C` (`\`). Default `true`.
    pub allow_encoded_back_slash: bool,
    /// Allow `%00` (NUL). Default `true`.
    pub allow_encoded_null_character: bool,
    /// Allow `%3B` (`;`). Default `true`.
    pub allow_encoded_semicolon: bool,
    /// Allow `%25` (`%`). Default `true`.
    pub allow_encoded_percent: bool,
    /// Allow `%3F` (`?`). Default `true`.
    pub allow_encoded_question_mark: bool,
    /// Allow `%23` (`#`). Default `true`.
    pub allow_encoded_hash: bool,
}

impl Default for EntryPointEncodedCharacters {
    fn default() -> Self {
        EntryPointEncodedCharacters {
            allow_encoded_slash: true,
            allow_encoded_back_slash: true,
            allow_encoded_null_character: true,
            allow_encoded_semicolon: true,
            allow_encoded_percent: true,
            allow_encoded_question_mark: true,
            allow_encoded_hash: true,
        }
    }
}

impl From<EntryPointEncodedCharacters> for EncodedCharacters {
    fn from(ep: EntryPointEncodedCharacters) -> Self {
        let EntryPointEncodedCharacters {
            allow_encoded_slash,
            allow_encoded_back_slash,
            allow_encoded_null_character,
            allow_encoded_semicolon,
            allow_encoded_percent,
            allow_encoded_question_mark,
            allow_encoded_hash,
        } = ep;
        EncodedCharacters {
            allow_encoded_slash,
            allow_encoded_back_slash,
            allow_encoded_null_character,
            allow_encoded_semicolon,
            allow_encoded_percent,
            allow_encoded_question_mark,
            allow_encoded_hash,
        }
    }
}

/// What an entry point does with request headers whose names contain `_`,
/// which many servers (CGI, PHP, WSGI, nginx) read as the same header as
/// its dashed form.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UnderscoreHeadersStrategy {
    /// Forward them as they are (an untrusted client's forms of the
    /// `X-Forwarded-*` and `X-Real-Ip` headers still go).
    #[default]
    Keep,
    /// Remove them before routing.
    Delete,
    /// Answer 400.
    Reject,
}

/// Default TLS settings of the routers on an entry point.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct EntryPointTls {
    /// The certificate resolver that obtains certificates for these routers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cert_resolver: Option<String>,
    /// The TLS options (`tls.options.<name>` of the dynamic configuration).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub options: Option<String>,
    /// Domains to obtain certificates for instead of the routers' hosts
    /// (file only: a list of `{ main, sans }`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub domains: Vec<TlsDomain>,
}

/// A certificate's main name and its other names.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct TlsDomain {
    /// The main name.
    pub main: String,
    /// Subject alternative names.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sans: Vec<String>,
}

/// Redirections of an entry point.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Redirections {
    /// Redirect to another entry point.
    pub entry_point: RedirectEntryPoint,
}

/// Where plain-HTTP requests on an entry point are sent instead.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct RedirectEntryPoint {
    /// The entry point to redirect to (its port goes into the new URL),
    /// or a port such as `:443`. No redirection when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// The scheme of the new URL. Default `https`.
    pub scheme: String,
    /// Permanent (301/308) rather than temporary (302/307). Default `true`.
    pub permanent: bool,
    /// The redirection's place among the entry point's routers: a router
    /// whose priority is higher and whose rule matches is served instead.
    /// Default: above every router (Traefik's `MaxInt64 - 1`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
}

impl Default for RedirectEntryPoint {
    fn default() -> Self {
        RedirectEntryPoint {
            to: None,
            scheme: String::from("https"),
            permanent: true,
            priority: None,
        }
    }
}

/// A source of certificates.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct CertificatesResolver {
    /// Certificates from an ACME server such as Let's Encrypt.
    pub acme: Acme,
}

/// Let's Encrypt's production directory, the default `caServer`.
pub const LETS_ENCRYPT_PRODUCTION: &str = "https://acme-v02.api.letsencrypt.org/directory";
/// Let's Encrypt's staging directory: untrusted certificates, generous rate limits.
pub const LETS_ENCRYPT_STAGING: &str = "https://acme-staging-v02.api.letsencrypt.org/directory";

/// An ACME certificate resolver.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Acme {
    /// Contact address given to the CA (optional).
    pub email: String,
    /// Directory where the account key and certificates are kept (created
    /// with mode 0700, files 0600). Default `acme`. A file instead (one
    /// that exists, or a name ending in `.json`), such as Traefik's
    /// `acme.json`, is read and written in Traefik's format. A store URL
    /// instead (`redis://host:6379/0`, `etcd://host:2379`) shares the
    /// account, certificates, challenge answers and order leases with
    /// every instance that names the same store.
    pub storage: PathBuf,
    /// A file holding a 32-byte key (base64, hex or raw) with which private
    /// keys are encrypted in a shared store. Without it they are stored in
    /// clear, with a warning.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_encryption_key_file: Option<PathBuf>,
    /// The ACME directory URL. Default Let's Encrypt production; the word
    /// `staging` selects Let's Encrypt's staging directory.
    pub ca_server: String,
    /// Key type of certificates: `EC256` (default; Traefik's is
    /// `RSA4096`), `EC384`, `RSA2048`, `RSA3072`, `RSA4096` or `RSA8192`.
    pub key_type: String,
    /// Validity of the certificates in hours, as Traefik's option: it sets
    /// how long before expiry renewal starts (30 days for the default
    /// `2160`, see `acme::schedule::renew_window`), never earlier than a
    /// third of a certificate's real lifetime.
    pub certificates_duration: u64,
    /// PEM files of CAs to trust when talking to the ACME server (a
    /// private CA such as pebble), in addition to the system's web roots.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ca_certificates: Vec<PathBuf>,
    /// Answer TLS-ALPN-01 challenges on the TLS entry points (used when no
    /// challenge is configured).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_challenge: Option<TlsChallenge>,
    /// Answer HTTP-01 challenges on a plain entry point.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_challenge: Option<HttpChallenge>,
    /// Answer DNS-01 challenges by publishing TXT records through a DNS
    /// provider: for hosts the CA cannot reach, and for wildcard names.
    /// Takes precedence over the other two challenges when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dns_challenge: Option<DnsChallenge>,
    /// Trust the system's (web) roots for the ACME server as well as
    /// `caCertificates`. Without `caCertificates` they are always trusted;
    /// with them, only when this is set (as in Traefik).
    pub ca_system_cert_pool: bool,
    /// Leave the common name out of certificate requests (the names are in
    /// the subject alternative names either way).
    pub disable_common_name: bool,
    /// The name the ACME server's certificate is verified for (and sent as
    /// SNI) instead of the URL's host.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub ca_server_name: String,
    /// The common name of the issuer of the top certificate of the chain to
    /// serve, when the CA offers alternate chains.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub preferred_chain: String,
    /// The ACME profile orders ask for (`shortlived`, …); none: the CA's
    /// default.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub profile: String,
    /// E-mail addresses added to certificate requests as subject
    /// alternative names.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub email_addresses: Vec<String>,
    /// External account binding (a CA account tied to one of the CA's own,
    /// as ZeroSSL and Google Trust Services require).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eab: Option<Eab>,
    /// The longest exchange with the ACME server, body included (default
    /// 2 minutes).
    pub client_timeout: Duration,
    /// The longest wait for the head of the ACME server's answer, and for
    /// the connection (default 30 s).
    pub client_response_header_timeout: Duration,
    /// How long the CA may take to issue the certificate once the order is
    /// finalized. Default 30 s.
    pub certificate_timeout: Duration,
    /// gangway's own (Traefik has none): resolvers whose CAs are tried, in
    /// this order, when an order through this one fails (an error or a
    /// rate limit); the certificate is kept in this resolver's storage.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fallback: Vec<String>,
}

/// External account binding: the key id and HMAC key the CA gave.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Eab {
    /// The key identifier.
    pub kid: String,
    /// The HMAC key, base64url (padding and the standard alphabet are read
    /// too).
    pub hmac_encoded: String,
}

impl Default for Acme {
    fn default() -> Self {
        Acme {
            email: String::new(),
            storage: PathBuf::from("acme"),
            storage_encryption_key_file: None,
            ca_server: String::from(LETS_ENCRYPT_PRODUCTION),
            key_type: String::from("EC256"),
            certificates_duration: 2160,
            ca_certificates: Vec::new(),
            tls_challenge: None,
            http_challenge: None,
            dns_challenge: None,
            ca_system_cert_pool: false,
            disable_common_name: false,
            ca_server_name: String::new(),
            preferred_chain: String::new(),
            profile: String::new(),
            email_addresses: Vec::new(),
            eab: None,
            client_timeout: Duration(std::time::Duration::from_secs(120)),
            client_response_header_timeout: Duration(std::time::Duration::from_secs(30)),
            certificate_timeout: Duration(std::time::Duration::from_secs(30)),
            fallback: Vec::new(),
        }
    }
}

impl Acme {
    /// The directory URL, with `staging` and `production` read as Let's
    /// Encrypt's.
    pub fn directory_url(&self) -> &str {
        match self.ca_server.trim() {
            s if s.eq_ignore_ascii_case("staging") => LETS_ENCRYPT_STAGING,
            s if s.eq_ignore_ascii_case("production") || s.is_empty() => LETS_ENCRYPT_PRODUCTION,
            s => s,
        }
    }
}

/// The TLS-ALPN-01 challenge.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct TlsChallenge {
    /// Wait this long after setting up the answer before asking the CA to
    /// validate. Default 0.
    pub delay: Duration,
}

/// The HTTP-01 challenge.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct HttpChallenge {
    /// The plain-HTTP entry point (port 80 for a public CA) that answers
    /// `/.well-known/acme-challenge/`.
    pub entry_point: String,
    /// Wait this long after setting up the answer before asking the CA to
    /// validate. Default 0.
    pub delay: Duration,
}

/// The DNS-01 challenge: a TXT record `_acme-challenge.<name>` published
/// through a DNS provider. The provider's settings and credentials come
/// from environment variables (or `*_FILE` variables naming files), never
/// from this configuration.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct DnsChallenge {
    /// Who publishes the record: `rfc2136` (dynamic update with a TSIG
    /// key), `exec` (a program of yours) or `httpreq` (an HTTP endpoint of
    /// yours).
    pub provider: String,
    /// DNS servers (`host` or `host:port`, port 53 by default) asked for
    /// the record before the CA is told to look; without any, the zone's
    /// authoritative servers, found through the system's resolvers.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resolvers: Vec<String>,
    /// When and how the record's propagation is checked.
    pub propagation: Propagation,
    /// Traefik v2's name of `propagation.delayBeforeChecks` (deprecated in
    /// Traefik v3), used when that is not set.
    pub delay_before_check: Duration,
    /// Traefik v2's name of `propagation.disableChecks` (deprecated in
    /// Traefik v3).
    pub disable_propagation_check: bool,
}

/// Propagation checks of the DNS-01 challenge's TXT record.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Propagation {
    /// Wait this long after publishing the record before the first check
    /// (or before telling the CA, when checks are off). Default 0.
    pub delay_before_checks: Duration,
    /// Tell the CA as soon as the record is published (after
    /// `delayBeforeChecks`), without asking any DNS server for it.
    pub disable_checks: bool,
    /// Without `resolvers`: ask the system's recursive resolvers too, not
    /// only the zone's authoritative servers. With `resolvers`, every one
    /// listed is always asked.
    #[serde(rename = "requireAllRNS")]
    pub require_all_rns: bool,
    /// Traefik's switch to skip the authoritative servers' check. Accepted
    /// and not supported: reported at start and by `check`.
    #[serde(rename = "disableANSChecks")]
    pub disable_ans_checks: bool,
}

/// Whose PROXY protocol header an entry point reads.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ProxyProtocol {
    /// Sources whose header is read, as IP addresses or CIDR ranges.
    #[serde(rename = "trustedIPs", deserialize_with = "deserialize_ip_nets")]
    pub trusted_ips: Vec<ipnet::IpNet>,
    /// Read the header from every source.
    pub insecure: bool,
}

/// Trust in the `X-Forwarded-*` headers that clients send.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ForwardedHeaders {
    /// Proxies whose `X-Forwarded-*` headers are kept, as IP addresses or
    /// CIDR ranges (`10.0.0.0/8`, `192.168.1.7`); from any other client
    /// those headers are replaced.
    #[serde(rename = "trustedIPs", deserialize_with = "deserialize_ip_nets")]
    pub trusted_ips: Vec<ipnet::IpNet>,
    /// Keep `X-Forwarded-*` headers from every client. Only safe when
    /// gangway is reachable solely through a trusted proxy.
    pub insecure: bool,
    /// Do not add the client's address to `X-Forwarded-For`: a trusted
    /// proxy's header goes on as it came, and none is added when there was
    /// none (Traefik 3.7). Default `false`.
    pub not_append_x_forwarded_for: bool,
}

/// Connection handling on an entry point.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct EntryPointTransport {
    /// How the entry point shuts down.
    pub life_cycle: LifeCycle,
    /// Limits on how long a client connection may take.
    pub responding_timeouts: RespondingTimeouts,
    /// gangway: connections open at once; at the limit the entry point
    /// stops accepting until one closes (`0`: no limit). Default `16384`.
    pub max_connections: usize,
    /// An HTTP/1 connection is closed after this many requests (the last
    /// answer says `Connection: close`). Default `0`: no limit.
    pub keep_alive_max_requests: u64,
    /// An HTTP/1 connection older than this is closed after its current
    /// request (the answer says `Connection: close`). Default `0s`: no
    /// limit.
    pub keep_alive_max_time: Duration,
}

impl Default for EntryPointTransport {
    fn default() -> Self {
        EntryPointTransport {
            life_cycle: LifeCycle::default(),
            responding_timeouts: RespondingTimeouts::default(),
            max_connections: 16384,
            keep_alive_max_requests: 0,
            keep_alive_max_time: Duration::default(),
        }
    }
}

/// Graceful shutdown of an entry point.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct LifeCycle {
    /// After shutdown starts, how long the entry point keeps accepting new
    /// requests before it stops listening (time for a load balancer in
    /// front to notice). Default `0s`.
    pub request_accept_grace_timeout: Duration,
    /// After it stops listening, how long requests already in progress get
    /// to finish before their connections are closed. Default `10s`.
    pub grace_time_out: Duration,
}

impl Default for LifeCycle {
    fn default() -> Self {
        LifeCycle {
            request_accept_grace_timeout: Duration::ZERO,
            grace_time_out: Duration::from_secs(10),
        }
    }
}

/// Time limits for client connections; `0s` means no limit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct RespondingTimeouts {
    /// Longest time to read a whole request, head and body, from its first
    /// byte; past it 408 (or the connection closed if the answer has
    /// started). Default `60s`.
    pub read_timeout: Duration,
    /// Longest time from the end of a request's head to the end of its
    /// response; past it the connection is closed. Default `0s` (no limit).
    pub write_timeout: Duration,
    /// Longest time a keep-alive connection may wait for its next request
    /// (HTTP/2: with no stream open; then GOAWAY). Default `180s`.
    pub idle_timeout: Duration,
}

impl Default for RespondingTimeouts {
    fn default() -> Self {
        RespondingTimeouts {
            read_timeout: Duration::from_secs(60),
            write_timeout: Duration::ZERO,
            idle_timeout: Duration::from_secs(180),
        }
    }
}

/// Sources of dynamic configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Providers {
    /// After a provider reports a change, how long to wait for further
    /// changes before applying them together. Default `50ms` (Traefik's is
    /// `2s`; gangway applies changes faster on purpose).
    pub providers_throttle_duration: Duration,
    /// Dynamic configuration from a file or a directory of files; absent
    /// when not enabled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<FileProvider>,
    /// Dynamic configuration from Docker container labels; absent when not
    /// enabled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub docker: Option<DockerProvider>,
    /// Dynamic configuration from Docker Swarm service labels; absent when
    /// not enabled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swarm: Option<SwarmProvider>,
    /// Dynamic configuration from keys in Redis, in Traefik's KV layout;
    /// absent when not enabled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redis: Option<RedisProvider>,
    /// Dynamic configuration from keys in etcd (v3 API), in Traefik's KV
    /// layout; absent when not enabled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub etcd: Option<EtcdProvider>,
    /// Dynamic configuration polled from an HTTP endpoint; absent when not
    /// enabled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpProvider>,
}

impl Default for Providers {
    fn default() -> Self {
        Providers {
            providers_throttle_duration: Duration::from_millis(50),
            file: None,
            docker: None,
            swarm: None,
            redis: None,
            etcd: None,
            http: None,
        }
    }
}

/// The Redis provider: routers, services, middlewares and TLS settings
/// from keys under `rootKey` in Traefik v3's KV layout
/// (`<rootKey>/http/routers/<name>/rule`). Traefik v3's options, plus
/// gangway's `pollInterval`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct RedisProvider {
    /// The servers, `host:port`, tried in order until one answers.
    /// Default `127.0.0.1:6379`.
    pub endpoints: Vec<String>,
    /// The key everything is under. Default `gangway` (Traefik's is
    /// `traefik`; set it to read a Traefik setup unchanged).
    pub root_key: String,
    /// The user to log in as (Redis 6 ACLs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// The password to log in with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    /// The database number. Default `0`.
    pub db: u32,
    /// TLS to the servers; on when the section is present, even empty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<ProviderTls>,
    /// Redis Sentinel: with `sentinel.masterName`, `endpoints` are the
    /// sentinels to ask where the master is.
    pub sentinel: RedisSentinel,
    /// gangway: how often the keys are read again when the server does not
    /// send keyspace notifications. Default `2s`.
    pub poll_interval: Duration,
}

impl Default for RedisProvider {
    fn default() -> Self {
        RedisProvider {
            endpoints: vec![String::from("127.0.0.1:6379")],
            root_key: String::from("gangway"),
            username: None,
            password: None,
            db: 0,
            tls: None,
            sentinel: RedisSentinel::default(),
            poll_interval: Duration::from_secs(2),
        }
    }
}

/// The etcd provider: routers, services, middlewares and TLS settings
/// from keys under `rootKey` in Traefik v3's KV layout, read through etcd's
/// v3 API and followed with a watch. Traefik v3's options.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct EtcdProvider {
    /// The cluster's members, `host:port` (or `http://`, `https://` URLs),
    /// tried in order until one answers. Default `127.0.0.1:2379`.
    pub endpoints: Vec<String>,
    /// The key everything is under. Default `gangway` (Traefik's is
    /// `traefik`; set it to read a Traefik setup unchanged).
    pub root_key: String,
    /// The user to authenticate as (etcd's auth).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// The password to authenticate with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    /// TLS to the members; on when the section is present, even empty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<ProviderTls>,
}

impl Default for EtcdProvider {
    fn default() -> Self {
        EtcdProvider {
            endpoints: vec![String::from("127.0.0.1:2379")],
            root_key: String::from("gangway"),
            username: None,
            password: None,
            tls: None,
        }
    }
}

/// The HTTP provider: the whole dynamic configuration, as JSON or YAML,
/// read from an endpoint every `pollInterval`. Traefik v3's options.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct HttpProvider {
    /// The URL answering with the configuration (`http://` or `https://`).
    /// Required.
    pub endpoint: String,
    /// How often the endpoint is asked. Default `5s`; must be more than 0.
    pub poll_interval: Duration,
    /// The longest one request may take, answer included. Default `5s`.
    pub poll_timeout: Duration,
    /// Headers sent with every request (a token, for instance).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// TLS to an `https://` endpoint: its CA, a client certificate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<ProviderTls>,
    /// The largest answer read, in bytes, as a whole number; a larger
    /// answer is an error and the last configuration stays. Default `-1`:
    /// no limit, as Traefik's. Read when the provider starts.
    pub max_response_body_size: String,
}

impl Default for HttpProvider {
    fn default() -> Self {
        HttpProvider {
            endpoint: String::new(),
            poll_interval: Duration::from_secs(5),
            poll_timeout: Duration::from_secs(5),
            headers: BTreeMap::new(),
            tls: None,
            max_response_body_size: String::from("-1"),
        }
    }
}

/// TLS to what a provider reads: a Docker daemon or Swarm manager on a
/// `tcp://` endpoint, a KV store (Redis, etcd). Traefik's names.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ProviderTls {
    /// The CA certificates (PEM file) the server's certificate must chain
    /// to; without it, the system's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ca: Option<String>,
    /// The client certificate (PEM file), for servers that ask for one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cert: Option<String>,
    /// The client certificate's key (PEM file).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Accept any server certificate. For tests only.
    pub insecure_skip_verify: bool,
}

/// Redis Sentinel: with `masterName`, the provider's `endpoints` are
/// sentinels, asked where the master is (again after every lost
/// connection, so a failover is followed). Traefik v3's options.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct RedisSentinel {
    /// The name of the master to ask the sentinels for; Sentinel is on
    /// when it is given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub master_name: Option<String>,
    /// The user to log in to the sentinels as.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// The password to log in to the sentinels with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    /// Traefik: send read-only commands to the closest node. gangway reads
    /// from the master (a node this strategy may pick too).
    pub latency_strategy: bool,
    /// Traefik: send read-only commands to a random node. gangway reads
    /// from the master (a node this strategy may pick too).
    pub random_strategy: bool,
    /// Read from a replica the sentinels name, not from the master.
    pub replica_strategy: bool,
    /// With `replicaStrategy`, also use replicas the sentinels see as
    /// disconnected from their master.
    pub use_disconnected_replicas: bool,
}

/// The Swarm provider: routers, services and middlewares from the labels
/// of Swarm services (`deploy.labels`), one server per running task.
/// Traefik v3's options, plus gangway's `labelPrefix`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct SwarmProvider {
    /// A manager's daemon: `unix:///var/run/docker.sock` (default) or
    /// `tcp://host:port` (HTTP, or HTTPS with `tls`).
    pub endpoint: String,
    /// TLS to a `tcp://` endpoint, as for the Docker provider.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<ProviderTls>,
    /// Route services that carry no `<labelPrefix>.enable=true` label:
    /// `true` routes every service, `false` only those with the label. Not
    /// given, as for the Docker provider: services with labels under the
    /// prefix are routed, bare ones are not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exposed_by_default: Option<bool>,
    /// The network whose task addresses are used, for services on several
    /// networks; the stack prefix may be left out. Overridden per service
    /// by `<labelPrefix>.swarm.network`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<String>,
    /// The rule of routers whose labels give none, as a template (as for
    /// the Docker provider; `.Name` is the service's name).
    pub default_rule: String,
    /// Only services whose labels satisfy this expression are considered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub constraints: Option<String>,
    /// Follow the daemon's events between reads. Default `true`.
    pub watch: bool,
    /// How often services, tasks and nodes are read again whatever the
    /// events say. Default `15s`.
    pub refresh_seconds: Duration,
    /// Keep routers and services of services without a running task, with
    /// no servers (503), instead of removing them.
    pub allow_empty_services: bool,
    /// How long one call to the daemon may take; `0s`: 30 seconds.
    pub http_client_timeout: Duration,
    /// The label prefix: `gangway` (default) or `traefik`.
    pub label_prefix: String,
}

impl Default for SwarmProvider {
    fn default() -> Self {
        SwarmProvider {
            endpoint: String::from("unix:///var/run/docker.sock"),
            tls: None,
            exposed_by_default: None,
            network: None,
            default_rule: String::from("Host(`{{ normalize .Name }}`)"),
            constraints: None,
            watch: true,
            refresh_seconds: Duration::from_secs(15),
            allow_empty_services: false,
            http_client_timeout: Duration::from_secs(0),
            label_prefix: String::from("gangway"),
        }
    }
}

/// The Docker provider: routers, services and middlewares from container
/// labels, following the daemon's event stream. Traefik v3's options, plus
/// gangway's own (`labelPrefix`, `conflicts`, `domain`, `hostAddress`,
/// `downGracePeriod`, `includeOneOff`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct DockerProvider {
    /// The daemon: `unix:///var/run/docker.sock` (default) or
    /// `tcp://host:port` (HTTP, or HTTPS with `tls`).
    pub endpoint: String,
    /// TLS to a `tcp://` endpoint: the daemon's CA, and the client
    /// certificate a daemon run with `--tlsverify` asks for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<ProviderTls>,
    /// Route containers that carry no `<labelPrefix>.enable=true` label:
    /// `true` routes every container, `false` only those with the label.
    /// Not given (Traefik's default is `true`): containers that carry any
    /// label under the prefix are routed, as Traefik routes them, and bare
    /// containers, started for something else, are not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exposed_by_default: Option<bool>,
    /// The container network whose address is used, for containers on
    /// several networks; the compose project prefix may be left out.
    /// Overridden per container by `<labelPrefix>.docker.network`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<String>,
    /// The rule of routers whose labels give none, as a template over
    /// `.Name`, `.ContainerName`, `.Project`, `.Service`, `.Domain` and
    /// `.Labels`. Default ``Host(`{{ normalize .Name }}`)``.
    pub default_rule: String,
    /// Only containers whose labels satisfy this expression are considered:
    /// ``Label(`key`, `value`)``, ``LabelRegex(`key`, `regex`)``, `!`, `&&`,
    /// `||`, parentheses. Empty: every container.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub constraints: Option<String>,
    /// Follow the daemon's events; without it the containers are read once.
    /// Default `true`.
    pub watch: bool,
    /// Use the address a container's port is published on instead of the
    /// container's own address.
    #[serde(rename = "useBindPortIP")]
    pub use_bind_port_ip: bool,
    /// Keep routers and services of unhealthy or starting containers, with
    /// no servers (503), instead of removing them.
    pub allow_empty_services: bool,
    /// The label prefix: `gangway` (default) reads `gangway.http.routers…`;
    /// `traefik` reads Traefik's labels unchanged.
    pub label_prefix: String,
    /// When two containers define one router, service or middleware name
    /// differently: `oldest` (default) keeps the oldest container's
    /// definition and reports the conflict; `drop` removes it, as Traefik does.
    pub conflicts: ConflictPolicy,
    /// Value of `.Domain` in `defaultRule`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// The address of containers that use the host's network. Default
    /// `127.0.0.1`.
    pub host_address: std::net::IpAddr,
    /// How long routers stay (answering 503 with `Retry-After`) after their
    /// containers stopped, died or turned unhealthy. `0s`: removed at once.
    /// Default `30s`.
    pub down_grace_period: Duration,
    /// Route one-off containers (`docker compose run`). Default `false`.
    pub include_one_off: bool,
}

impl Default for DockerProvider {
    fn default() -> Self {
        DockerProvider {
            endpoint: String::from("unix:///var/run/docker.sock"),
            tls: None,
            exposed_by_default: None,
            network: None,
            default_rule: String::from("Host(`{{ normalize .Name }}`)"),
            constraints: None,
            watch: true,
            use_bind_port_ip: false,
            allow_empty_services: false,
            label_prefix: String::from("gangway"),
            conflicts: ConflictPolicy::Oldest,
            domain: None,
            host_address: std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
            down_grace_period: Duration::from_secs(30),
            include_one_off: false,
        }
    }
}

/// What the Docker provider does when containers disagree about an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConflictPolicy {
    /// Keep the definition of the oldest container and report the conflict.
    #[default]
    Oldest,
    /// Remove the object and report the conflict (Traefik's behaviour).
    Drop,
}

/// The file provider: dynamic configuration read from TOML or YAML files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct FileProvider {
    /// One dynamic configuration file. Set this or `directory`, not both.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filename: Option<PathBuf>,
    /// A directory whose `.toml`, `.yml` and `.yaml` files together form the
    /// dynamic configuration. Set this or `filename`, not both.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub directory: Option<PathBuf>,
    /// Reload when the file or directory changes. Default `true`.
    pub watch: bool,
}

impl Default for FileProvider {
    fn default() -> Self {
        FileProvider {
            filename: None,
            directory: None,
            watch: true,
        }
    }
}

impl FileProvider {
    /// Checks that exactly one of `filename` and `directory` is set.
    pub fn validate(&self) -> Result<(), StaticConfigError> {
        match (&self.filename, &self.directory) {
            (Some(_), None) | (None, Some(_)) => Ok(()),
            (None, None) => Err(StaticConfigError::FileProviderWithoutSource),
            (Some(filename), Some(directory)) => Err(StaticConfigError::FileProviderBothSources {
                filename: filename.clone(),
                directory: directory.clone(),
            }),
        }
    }
}

/// gangway's own log.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Log {
    /// The least severe level logged: `TRACE`, `DEBUG`, `INFO`, `WARN` or
    /// `ERROR`, in any case; Traefik's `FATAL` and `PANIC` are read as
    /// `ERROR`. Default `INFO`.
    pub level: LogLevel,
    /// `common` (Traefik's text line) or `json` (one object per line with
    /// `level`, `time` and `message`). Default `common`.
    pub format: LogFormat,
    /// Where the log goes; standard error when unset. The file is appended
    /// to, its directory created, and it is reopened on `SIGUSR1`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_path: Option<PathBuf>,
    /// No colours in the `common` format (a file or a pipe never gets
    /// them). Default `false`.
    pub no_color: bool,
    /// Size in megabytes past which the log file is renamed aside and a
    /// new one started. Default 0, which means 100 (Traefik's).
    pub max_size: u64,
    /// Renamed-aside files kept; the oldest beyond are removed. Default 0
    /// keeps them all.
    pub max_backups: u32,
    /// Days a renamed-aside file is kept. Default 0 keeps them whatever
    /// their age.
    pub max_age: u32,
    /// Gzip renamed-aside files (`….log.gz`). Default `false`.
    pub compress: bool,
    /// Also send each log event as an OTLP log record (Traefik 3.3's
    /// `log.otlp`); lines still go where `filePath` says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub otlp: Option<otlp::OtlpLogs>,
}

/// The form of gangway's own log lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// `2026-01-02T15:04:05Z INF message key=value`, as Traefik writes it.
    #[default]
    Common,
    /// One JSON object per line: `level`, `time`, `message` and the fields.
    Json,
}

/// How much gangway logs, from most to least verbose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum LogLevel {
    /// Everything, including per-request detail.
    Trace,
    /// Diagnostics useful when something misbehaves.
    Debug,
    /// Startup, shutdown and configuration changes.
    #[default]
    Info,
    /// Things that work but probably aren't what was meant.
    Warn,
    /// Failures only.
    Error,
}

/// Text that is not a log level.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{input}` is not a log level (TRACE, DEBUG, INFO, WARN, ERROR)")]
pub struct LogLevelError {
    /// The text as given.
    pub input: String,
}

impl LogLevel {
    /// The level's name in upper case, as written in configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Trace => "TRACE",
            LogLevel::Debug => "DEBUG",
            LogLevel::Info => "INFO",
            LogLevel::Warn => "WARN",
            LogLevel::Error => "ERROR",
        }
    }
}

impl FromStr for LogLevel {
    type Err = LogLevelError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        const NAMES: &[(&str, LogLevel)] = &[
            ("TRACE", LogLevel::Trace),
            ("DEBUG", LogLevel::Debug),
            ("INFO", LogLevel::Info),
            ("WARN", LogLevel::Warn),
            ("ERROR", LogLevel::Error),
            ("FATAL", LogLevel::Error),
            ("PANIC", LogLevel::Error),
        ];
        NAMES
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(input.trim()))
            .map(|&(_, level)| level)
            .ok_or_else(|| LogLevelError {
                input: input.to_owned(),
            })
    }
}

impl fmt::Display for LogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for LogLevel {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for LogLevel {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// How gangway connects to backend servers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ServersTransport {
    /// Idle keep-alive connections kept open per backend host. Default
    /// `200`.
    pub max_idle_conns_per_host: usize,
    /// Time limits on backend connections.
    pub forwarding_timeouts: ForwardingTimeouts,
    /// Accept any certificate from `https://` servers (no verification).
    /// Default `false`.
    pub insecure_skip_verify: bool,
    /// CAs trusted for `https://` servers, as PEM file paths or PEM text;
    /// when given, they replace the built-in roots. Default none.
    #[serde(rename = "rootCAs")]
    pub root_cas: Vec<String>,
    /// gangway: requests each service may have in progress at once, unless
    /// its `loadBalancer` says otherwise (`0`: no limit). Default `1024`.
    pub max_concurrent_requests: usize,
    /// gangway: how long a request past a service's limit may wait for a
    /// slot before it gets 503 (`0s`: no wait). Default `100ms`.
    pub queue_timeout: Duration,
    /// gangway: requests one client (source address; an IPv6 /64) may have
    /// in progress at once at each service, so that no client can hold a
    /// whole service's `maxConcurrentRequests` (`0`: no share of its own).
    /// Past it the client's request gets 503 at once. Default `256`, more
    /// than one HTTP/2 connection's streams.
    pub max_concurrent_requests_per_client: usize,
}

impl Default for ServersTransport {
    fn default() -> Self {
        ServersTransport {
            max_idle_conns_per_host: 200,
            forwarding_timeouts: ForwardingTimeouts::default(),
            insecure_skip_verify: false,
            root_cas: Vec::new(),
            max_concurrent_requests: 1024,
            queue_timeout: Duration::from_millis(100),
            max_concurrent_requests_per_client: 256,
        }
    }
}

/// How gangway connects to TCP servers by default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct TcpServersTransport {
    /// Longest time to connect to a TCP server (`0s`: no limit). Default
    /// `30s`.
    pub dial_timeout: Duration,
    /// Interval of TCP keep-alive probes on server connections (`0s`: the
    /// default; negative: none). Default `15s`.
    pub dial_keep_alive: SignedDuration,
    /// How long one direction of a connection may go on after the other
    /// side closed its writing half (negative: no limit). Default `100ms`.
    pub termination_delay: SignedDuration,
    /// TLS towards servers marked `tls`.
    pub tls: TcpServersTransportTls,
}

impl Default for TcpServersTransport {
    fn default() -> Self {
        TcpServersTransport {
            dial_timeout: Duration::from_secs(30),
            dial_keep_alive: SignedDuration::positive(std::time::Duration::from_secs(15)),
            termination_delay: SignedDuration::positive(std::time::Duration::from_millis(100)),
            tls: TcpServersTransportTls::default(),
        }
    }
}

/// TLS towards TCP servers marked `tls`, by default.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct TcpServersTransportTls {
    /// Accept any certificate from TCP servers. Default `false`.
    pub insecure_skip_verify: bool,
    /// CAs trusted for TCP servers, as PEM file paths or PEM text; when
    /// given, they replace the built-in roots. Default none.
    #[serde(rename = "rootCAs", alias = "rootcas")]
    pub root_cas: Vec<String>,
}

/// Time limits on connections to backend servers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ForwardingTimeouts {
    /// Longest time to open a connection to a backend. Default `30s`.
    pub dial_timeout: Duration,
    /// Longest time to wait for a backend's response headers once the
    /// request is sent. Default `0s` (no limit).
    pub response_header_timeout: Duration,
    /// How long an idle keep-alive connection to a backend stays open.
    /// Default `90s`.
    pub idle_conn_timeout: Duration,
}

impl Default for ForwardingTimeouts {
    fn default() -> Self {
        ForwardingTimeouts {
            dial_timeout: Duration::from_secs(30),
            response_header_timeout: Duration::ZERO,
            idle_conn_timeout: Duration::from_secs(90),
        }
    }
}

impl StaticConfig {
    /// Checks the rules that types alone don't enforce: a file provider
    /// must name exactly one of a file or a directory.
    pub fn validate(&self) -> Result<(), StaticConfigError> {
        if let Some(file) = &self.providers.file {
            file.validate()?;
        }
        if let Some((name, _)) = self
            .entry_points
            .iter()
            .find(|(_, ep)| ep.http3.is_some() && ep.address.udp)
        {
            return Err(StaticConfigError::Http3OnUdp { name: name.clone() });
        }
        Ok(())
    }
}

/// Reads a list of IP networks where a plain address means just that
/// address (`/32` or `/128`).
fn deserialize_ip_nets<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<ipnet::IpNet>, D::Error> {
    let texts = Vec::<String>::deserialize(deserializer)?;
    texts.iter().map(|text| parse_ip_net(text)).collect()
}

fn parse_ip_net<E: serde::de::Error>(text: &str) -> Result<ipnet::IpNet, E> {
    let trimmed = text.trim();
    if let Ok(net) = trimmed.parse::<ipnet::IpNet>() {
        return Ok(net);
    }
    trimmed
        .parse::<std::net::IpAddr>()
        .map(ipnet::IpNet::from)
        .map_err(|_| {
            E::custom(format!(
                "`{text}` is not an IP address or CIDR range (try `10.0.0.0/8` or `192.168.1.7`)"
            ))
        })
}

/// What is wrong with the value a flag or an environment variable gives.
#[derive(Debug, thiserror::Error)]
pub enum SettingError {
    /// Not a boolean.
    #[error("`{text}` is not a boolean (true or false)")]
    NotABool {
        /// The value as given.
        text: String,
    },
    /// Not a whole number.
    #[error("`{text}` is not a whole number (0 or more)")]
    NotAWholeNumber {
        /// The value as given.
        text: String,
    },
    /// Not a duration.
    #[error(transparent)]
    Duration(#[from] crate::config::duration::DurationError),
    /// Not an address to listen on.
    #[error(transparent)]
    Address(#[from] AddressError),
    /// The configuration with the value in it does not read.
    #[error("{0}")]
    Unreadable(serde_json::Error),
    /// A section given a value that is neither a table nor a boolean.
    #[error("`{text}` is not a section (give a table, or true/false)")]
    NotASection {
        /// The value as given.
        text: String,
    },
}

/// Why the static configuration could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum StaticConfigError {
    /// `--configFile` (or `GANGWAY_CONFIGFILE`) names a file that isn't
    /// there.
    #[error("configuration file `{}` does not exist", path.display())]
    ConfigFileMissing {
        /// The path as resolved against the working directory.
        path: PathBuf,
    },
    /// The configuration file exists but could not be read.
    #[error("cannot read configuration file `{}`: {source}", path.display())]
    ConfigFileUnreadable {
        /// The path as resolved against the working directory.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The configuration file's name doesn't say TOML or YAML.
    #[error(
        "configuration file `{}`: can't tell its format from the name (use .toml, .yml or .yaml)",
        path.display()
    )]
    ConfigFileFormat {
        /// The path as given.
        path: PathBuf,
    },
    /// The configuration file is not valid TOML/YAML, has an unknown key or
    /// a bad value; the message names the file and line.
    #[error(transparent)]
    ConfigFile(#[from] FormatError),
    /// A command-line option that doesn't exist.
    #[error("{flag}: unknown option{}", suggestion_text(suggestion.as_deref()))]
    UnknownFlag {
        /// The option as written, without its value.
        flag: String,
        /// The closest known option, written as a flag, if one is close.
        suggestion: Option<String>,
    },
    /// A command-line option whose value is wrong.
    #[error("{flag}={value}: {message}")]
    BadFlagValue {
        /// The option as written.
        flag: String,
        /// The value as given.
        value: String,
        /// What is wrong with it.
        message: SettingError,
    },
    /// A command-line option that needs a value was last or followed by
    /// another option.
    #[error("{flag}: missing value (expected {expected})")]
    MissingFlagValue {
        /// The option as written.
        flag: String,
        /// What kind of value it takes.
        expected: &'static str,
    },
    /// An argument that is neither an option nor an option's value.
    #[error("unexpected argument `{arg}`: options are written `--name=value` (see --help)")]
    UnexpectedArgument {
        /// The argument as given.
        arg: String,
    },
    /// A `GANGWAY_` environment variable that matches no option.
    #[error("{var}: unknown environment variable{}", suggestion_text(suggestion.as_deref()))]
    UnknownEnv {
        /// The variable's name.
        var: String,
        /// The closest known variable, if one is close.
        suggestion: Option<String>,
    },
    /// A `GANGWAY_` environment variable whose value is wrong.
    #[error("{var}={value}: {message}")]
    BadEnvValue {
        /// The variable's name.
        var: String,
        /// The value as given.
        value: String,
        /// What is wrong with it.
        message: SettingError,
    },
    /// HTTP/3 asked for on an entry point that is UDP already: HTTP/3
    /// listens on the UDP side of a TCP entry point.
    #[error(
        "entryPoints.{name}.http3: HTTP/3 goes on an entry point with TLS routers, whose address is TCP; `{name}` is a UDP entry point"
    )]
    Http3OnUdp {
        /// The entry point's name.
        name: String,
    },
    /// An entry point that no source gave an address.
    #[error(
        "entry point `{name}` has no address (set `entryPoints.{name}.address`, e.g. to `:80`)"
    )]
    EntryPointWithoutAddress {
        /// The entry point's name.
        name: String,
    },
    /// The file provider is enabled without a file or directory.
    #[error("providers.file: set `filename` or `directory` to say what to read")]
    FileProviderWithoutSource,
    /// The file provider names both a file and a directory.
    #[error(
        "providers.file: both `filename` ({}) and `directory` ({}) are set; keep one",
        filename.display(),
        directory.display()
    )]
    FileProviderBothSources {
        /// The `filename` given.
        filename: PathBuf,
        /// The `directory` given.
        directory: PathBuf,
    },
    /// A key in the configuration file that is no option.
    #[error("{file}{}: `{key}`: unknown option{}", line_text(*line), suggestion_text(suggestion.as_deref()))]
    UnknownKey {
        /// The file's name.
        file: String,
        /// The line the key is on, when found.
        line: Option<usize>,
        /// The key's path, dotted.
        key: String,
        /// The closest known option, if one is close.
        suggestion: Option<String>,
    },
    /// A value in the configuration file that is wrong for its option.
    #[error("{file}{}: `{key}`: {message}", line_text(*line))]
    BadKeyValue {
        /// The file's name.
        file: String,
        /// The line the key is on, when found.
        line: Option<usize>,
        /// The key's path, dotted.
        key: String,
        /// What is wrong with it.
        message: SettingError,
    },
    /// One option written twice in one table, in different cases.
    #[error("{file}{}: `{key}` is given twice (keys ignore case)", line_text(*line))]
    DuplicateKey {
        /// The file's name.
        file: String,
        /// The line of the second one, when found.
        line: Option<usize>,
        /// The key's path, dotted.
        key: String,
    },
    /// One option set by a `GANGWAY_` and a `TRAEFIK_` variable.
    #[error("{first} and {second} both set `{option}`; keep one")]
    BothPrefixes {
        /// The first variable.
        first: String,
        /// The second variable.
        second: String,
        /// The option both set.
        option: String,
    },
    /// Several problems, each one of the other variants.
    #[error("{} problems in the static configuration:{}", problems.len(), list_text(problems))]
    Several {
        /// The problems, in the order found.
        problems: Vec<StaticConfigError>,
    },
    /// The merged configuration does not fit the expected shape. Every
    /// single source is checked as it is applied, so this is not expected.
    #[error("configuration: {message}")]
    Merged {
        /// What is wrong.
        message: String,
    },
}

impl StaticConfigError {
    /// One problem as itself, several as [`StaticConfigError::Several`].
    pub fn from_problems(mut problems: Vec<StaticConfigError>) -> StaticConfigError {
        if problems.len() == 1
            && let Some(only) = problems.pop()
        {
            return only;
        }
        StaticConfigError::Several { problems }
    }

    /// The problems one by one: the inner ones of
    /// [`StaticConfigError::Several`], or this one.
    pub fn problems(&self) -> Vec<&StaticConfigError> {
        match self {
            StaticConfigError::Several { problems } => problems.iter().collect(),
            other => vec![other],
        }
    }
}

fn line_text(line: Option<usize>) -> String {
    line.map(|l| format!(", line {l}")).unwrap_or_default()
}

fn list_text(problems: &[StaticConfigError]) -> String {
    problems.iter().map(|p| format!("\n  - {p}")).collect()
}

fn suggestion_text(suggestion: Option<&str>) -> String {
    match suggestion {
        Some(s) => format!("; did you mean `{s}`?"),
        None => String::from(" (see --help for the list)"),
    }
}
