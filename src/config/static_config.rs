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

use crate::config::duration::Duration;
use crate::config::format::FormatError;

mod address;
mod load;
mod options;
#[cfg(test)]
mod tests;

pub use address::{AddressError, ListenAddress};
pub use load::{ENV_ALLOWLIST, ENV_PREFIX, Loaded, load};
pub use options::{OPTIONS, OptionSpec, ValueKind, help_text};

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
}

/// Connection handling on an entry point.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct EntryPointTransport {
    /// How the entry point shuts down.
    pub life_cycle: LifeCycle,
    /// Limits on how long a client connection may take.
    pub responding_timeouts: RespondingTimeouts,
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
    /// Longest time to read a whole request, body included. Default `60s`.
    pub read_timeout: Duration,
    /// Longest time to write a whole response. Default `0s` (no limit).
    pub write_timeout: Duration,
    /// Longest time a keep-alive connection may wait for its next request.
    /// Default `180s`.
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
}

impl Default for Providers {
    fn default() -> Self {
        Providers {
            providers_throttle_duration: Duration::from_millis(50),
            file: None,
        }
    }
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
}

impl Default for ServersTransport {
    fn default() -> Self {
        ServersTransport {
            max_idle_conns_per_host: 200,
            forwarding_timeouts: ForwardingTimeouts::default(),
            insecure_skip_verify: false,
            root_cas: Vec::new(),
        }
    }
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
        message: String,
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
        message: String,
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
    /// The merged configuration does not fit the expected shape. Every
    /// single source is checked as it is applied, so this is not expected.
    #[error("configuration: {message}")]
    Merged {
        /// What is wrong.
        message: String,
    },
}

fn suggestion_text(suggestion: Option<&str>) -> String {
    match suggestion {
        Some(s) => format!("; did you mean `{s}`?"),
        None => String::from(" (see --help for the list)"),
    }
}
