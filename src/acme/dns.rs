//! The DNS-01 challenge: the TXT record's name and value, the providers
//! that publish and remove it, and the propagation checks that wait until
//! DNS servers answer it before the CA is told to look.
//!
//! Providers read their settings from environment variables only, each
//! also as `<NAME>_FILE` naming a file that holds the value (Docker
//! secrets), the convention of Traefik's DNS library; nothing is read from
//! labels, and no secret is ever logged or shown (the types holding one
//! have no `Debug` that prints it).

mod api;
mod autodns;
mod azuredns;
mod cloudflare;
mod desec;
mod digitalocean;
mod duckdns;
mod exec;
mod gandiv5;
mod gcloud;
mod godaddy;
mod hetzner;
mod httpreq;
mod inwx;
mod ionos;
mod linode;
mod namecheap;
mod netcup;
mod ovh;
mod porkbun;
mod rfc2136;
mod route53;
mod transip;
mod vultr;

pub use api::ApiProblem;

use crate::config::static_config::DnsChallenge;
use base64::Engine as _;
use futures_util::future::BoxFuture;
use hickory_proto::op::{Message, Query, ResponseCode};
use hickory_proto::rr::{Name, RData, RecordType};
use sha2::Digest as _;
use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Longest time one DNS exchange (connect, send, answer) may take.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(10);
/// Where the system's resolvers are listed.
const RESOLV_CONF: &str = "/etc/resolv.conf";

/// What went wrong publishing, checking or removing a TXT record.
#[derive(Debug, thiserror::Error)]
pub enum DnsError {
    /// `dnsChallenge.provider` names no provider gangway has.
    #[error(
        "certificatesResolvers.{resolver}.acme.dnsChallenge.provider: `{provider}` is not a DNS provider gangway has (it has {}; use exec or httpreq to reach any other)",
        PROVIDERS.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
    )]
    UnknownProvider {
        /// The resolver.
        resolver: String,
        /// The name given.
        provider: String,
    },
    /// Environment variables the provider needs are not set.
    #[error(
        "certificatesResolvers.{resolver}.acme.dnsChallenge: provider `{provider}` needs the environment variable{} {} (or {} naming a file that holds it)",
        if variables.len() > 1 { "s" } else { "" },
        variables.join(", "),
        variables.iter().map(|v| format!("{v}_FILE")).collect::<Vec<_>>().join(", ")
    )]
    MissingEnv {
        /// The resolver.
        resolver: String,
        /// The provider.
        provider: &'static str,
        /// The variables missing.
        variables: Vec<String>,
    },
    /// None of the provider's ways to authenticate is set.
    #[error(
        "certificatesResolvers.{resolver}.acme.dnsChallenge: provider `{provider}` needs {choices} (each also as <NAME>_FILE naming a file that holds it)"
    )]
    MissingCredentials {
        /// The resolver.
        resolver: String,
        /// The provider.
        provider: &'static str,
        /// The ways, in words (`CF_DNS_API_TOKEN, or CF_API_EMAIL and CF_API_KEY`).
        choices: &'static str,
    },
    /// A DNS host's API did not do what was asked.
    #[error("{provider}: {action}: {problem}")]
    Api {
        /// The provider.
        provider: &'static str,
        /// What was being done (`adding the TXT record …`).
        action: String,
        /// What went wrong, with the provider's own message.
        problem: ApiProblem,
    },
    /// The HTTPS client for a provider's API cannot be set up.
    #[error("{provider}: cannot set up TLS for its API: {reason}")]
    Tls {
        /// The provider.
        provider: &'static str,
        /// What rustls said.
        reason: rustls::Error,
    },
    /// A `*_FILE` variable names a file that cannot be read.
    #[error("{variable}: cannot read `{}`: {source}", path.display())]
    EnvFile {
        /// The variable, with its `_FILE`.
        variable: String,
        /// The file it names.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// A variable's value cannot be used (the value is not repeated: it
    /// may be a secret).
    #[error("{variable}: {problem}")]
    BadEnv {
        /// The variable.
        variable: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A `dnsChallenge.resolvers` entry that is not an address.
    #[error(
        "certificatesResolvers.{resolver}.acme.dnsChallenge.resolvers: `{value}` is not `host` or `host:port`"
    )]
    BadResolver {
        /// The resolver.
        resolver: String,
        /// The entry.
        value: String,
    },
    /// A DNS exchange failed before any answer.
    #[error("{provider}: {action} `{fqdn}` at {server} failed: {reason}")]
    Exchange {
        /// The provider (or `check` for propagation checks).
        provider: &'static str,
        /// What was being done.
        action: &'static str,
        /// The record's name.
        fqdn: String,
        /// The DNS server.
        server: String,
        /// Why.
        reason: Box<ExchangeError>,
    },
    /// A DNS server refused an update.
    #[error("{provider}: {action} `{fqdn}` at {server} was refused: {rcode}{hint}")]
    Refused {
        /// The provider.
        provider: &'static str,
        /// What was being done.
        action: &'static str,
        /// The record's name.
        fqdn: String,
        /// The DNS server.
        server: String,
        /// The server's response code (NOTAUTH, REFUSED, …).
        rcode: String,
        /// What usually causes it.
        hint: &'static str,
    },
    /// No zone could be found for the record.
    #[error("{provider}: no zone found for `{fqdn}` at {server}: {reason}")]
    NoZone {
        /// The provider (or `check`).
        provider: &'static str,
        /// The record's name.
        fqdn: String,
        /// The DNS server asked.
        server: String,
        /// What it answered.
        reason: String,
    },
    /// The user's program failed.
    #[error("exec: `{} {action} {fqdn} …` failed: {reason}", program.display())]
    Exec {
        /// The program (`EXEC_PATH`).
        program: PathBuf,
        /// `present` or `cleanup`.
        action: &'static str,
        /// The record's name.
        fqdn: String,
        /// Its exit status and what it wrote on stderr.
        reason: String,
    },
    /// The user's HTTP endpoint failed.
    #[error("httpreq: POST {url} for `{fqdn}` failed: {reason}")]
    HttpReq {
        /// The URL posted to.
        url: String,
        /// The record's name.
        fqdn: String,
        /// The status and body, or why no answer came.
        reason: String,
    },
    /// The record was not answered in time.
    #[error(
        "the TXT record `{fqdn}` was not visible at {server} after {}s{}",
        waited.as_secs(),
        if seen.is_empty() { String::new() } else { format!(" (it answered {seen})") }
    )]
    NotPropagated {
        /// The record's name.
        fqdn: String,
        /// The first server that did not answer it.
        server: String,
        /// How long gangway waited.
        waited: Duration,
        /// What that server answered last, if anything.
        seen: String,
    },
    /// The provider could not be set up at start (a credential missing or
    /// unreadable); every order through it fails with that reason.
    #[error(transparent)]
    NotSetUp(Arc<DnsError>),
}

// === the record ===

/// The TXT record's name for `domain`: `_acme-challenge.<domain>.`, with
/// a wildcard's `*.` left out (a wildcard's authorization names the base
/// domain, and so does its record).
pub fn challenge_fqdn(domain: &str) -> String {
    let base = domain.strip_prefix("*.").unwrap_or(domain);
    let base = base.trim_end_matches('.');
    format!("_acme-challenge.{base}.")
}

/// RFC 7638 thumbprint of a P-256 account key given as its uncompressed
/// point (`0x04 || x || y`), base64url without padding; None for any
/// other shape.
pub fn thumbprint(public_key: &[u8]) -> Option<String> {
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let point = public_key.strip_prefix(&[0x04])?;
    if point.len() != 64 {
        return None;
    }
    let (x, y) = point.split_at(32);
    // The required members in lexicographic order, no whitespace (§3).
    let jwk = format!(
        r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
        b64.encode(x),
        b64.encode(y)
    );
    Some(b64.encode(sha2::Sha256::digest(jwk.as_bytes())))
}

/// The key authorization of a challenge `token` (RFC 8555 §8.1).
pub fn key_authorization(token: &str, thumbprint: &str) -> String {
    format!("{token}.{thumbprint}")
}

/// The TXT record's value: base64url of the key authorization's SHA-256
/// (RFC 8555 §8.4).
pub fn txt_value(key_authorization: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(sha2::Sha256::digest(key_authorization.as_bytes()))
}

// === providers ===

/// Publishes and removes the challenge's TXT records.
///
/// `present` is called once per authorization, before the propagation
/// checks; `cleanup` once after the CA has validated (or failed to), and
/// also when the order is abandoned. Both get the record's name with its
/// final dot (`_acme-challenge.example.com.`) and the value. Several
/// records may exist at one name at once (a wildcard and its base domain):
/// `cleanup` removes only the one with this value. Neither logs a secret.
pub trait DnsProvider: Send + Sync {
    /// The provider's name, as in `dnsChallenge.provider`.
    fn name(&self) -> &'static str;
    /// Publishes the TXT record `fqdn` = `value`.
    fn present<'a>(&'a self, fqdn: &'a str, value: &'a str) -> BoxFuture<'a, Result<(), DnsError>>;
    /// Removes the TXT record `fqdn` = `value`.
    fn cleanup<'a>(&'a self, fqdn: &'a str, value: &'a str) -> BoxFuture<'a, Result<(), DnsError>>;
}

/// A provider whose set-up failed at start: every call fails with the
/// reason, so orders through it fail with what to fix.
struct NotSetUp {
    name: &'static str,
    reason: Arc<DnsError>,
}

impl DnsProvider for NotSetUp {
    fn name(&self) -> &'static str {
        self.name
    }

    fn present<'a>(&'a self, _: &'a str, _: &'a str) -> BoxFuture<'a, Result<(), DnsError>> {
        Box::pin(async move { Err(DnsError::NotSetUp(self.reason.clone())) })
    }

    fn cleanup<'a>(&'a self, _: &'a str, _: &'a str) -> BoxFuture<'a, Result<(), DnsError>> {
        Box::pin(async { Ok(()) })
    }
}

/// A provider gangway has: its name (as in `dnsChallenge.provider`), the
/// prefix of its `_PROPAGATION_TIMEOUT` / `_POLLING_INTERVAL` variables,
/// their defaults (the provider's documented propagation delays), and how
/// it is built from its variables.
struct ProviderKind {
    name: &'static str,
    prefix: &'static str,
    timeout: Duration,
    interval: Duration,
    build: fn(Env<'_>) -> Result<Box<dyn DnsProvider>, DnsError>,
}

const fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// Every provider, in the order the documentation lists them.
const PROVIDERS: &[ProviderKind] = &[
    ProviderKind {
        name: "cloudflare",
        prefix: "CLOUDFLARE",
        timeout: secs(120),
        interval: secs(2),
        build: |env| Ok(Box::new(cloudflare::Cloudflare::from_env(env)?)),
    },
    ProviderKind {
        name: "route53",
        prefix: "AWS",
        timeout: secs(120),
        interval: secs(4),
        build: |env| Ok(Box::new(route53::Route53::from_env(env)?)),
    },
    ProviderKind {
        name: "digitalocean",
        prefix: "DO",
        timeout: secs(60),
        interval: secs(5),
        build: |env| Ok(Box::new(digitalocean::DigitalOcean::from_env(env)?)),
    },
    ProviderKind {
        name: "ovh",
        prefix: "OVH",
        timeout: secs(60),
        interval: secs(2),
        build: |env| Ok(Box::new(ovh::Ovh::from_env(env)?)),
    },
    ProviderKind {
        name: "gandiv5",
        prefix: "GANDIV5",
        timeout: secs(1200),
        interval: secs(20),
        build: |env| Ok(Box::new(gandiv5::GandiV5::from_env(env)?)),
    },
    ProviderKind {
        name: "duckdns",
        prefix: "DUCKDNS",
        timeout: secs(60),
        interval: secs(2),
        build: |env| Ok(Box::new(duckdns::DuckDns::from_env(env)?)),
    },
    ProviderKind {
        name: "desec",
        prefix: "DESEC",
        timeout: secs(120),
        interval: secs(4),
        build: |env| Ok(Box::new(desec::Desec::from_env(env)?)),
    },
    ProviderKind {
        name: "porkbun",
        prefix: "PORKBUN",
        timeout: secs(600),
        interval: secs(10),
        build: |env| Ok(Box::new(porkbun::Porkbun::from_env(env)?)),
    },
    ProviderKind {
        name: "linode",
        prefix: "LINODE",
        timeout: secs(120),
        interval: secs(15),
        build: |env| Ok(Box::new(linode::Linode::from_env(env)?)),
    },
    ProviderKind {
        name: "vultr",
        prefix: "VULTR",
        timeout: secs(60),
        interval: secs(2),
        build: |env| Ok(Box::new(vultr::Vultr::from_env(env)?)),
    },
    ProviderKind {
        name: "hetzner",
        prefix: "HETZNER",
        timeout: secs(60),
        interval: secs(2),
        build: |env| Ok(Box::new(hetzner::Hetzner::from_env(env)?)),
    },
    ProviderKind {
        name: "autodns",
        prefix: "AUTODNS",
        timeout: secs(120),
        interval: secs(2),
        build: |env| Ok(Box::new(autodns::AutoDns::from_env(env)?)),
    },
    ProviderKind {
        name: "ionos",
        prefix: "IONOS",
        timeout: secs(900),
        interval: secs(2),
        build: |env| Ok(Box::new(ionos::Ionos::from_env(env)?)),
    },
    ProviderKind {
        name: "godaddy",
        prefix: "GODADDY",
        timeout: secs(120),
        interval: secs(2),
        build: |env| Ok(Box::new(godaddy::GoDaddy::from_env(env)?)),
    },
    ProviderKind {
        name: "namecheap",
        prefix: "NAMECHEAP",
        timeout: secs(3600),
        interval: secs(15),
        build: |env| Ok(Box::new(namecheap::Namecheap::from_env(env)?)),
    },
    ProviderKind {
        name: "netcup",
        prefix: "NETCUP",
        timeout: secs(900),
        interval: secs(30),
        build: |env| Ok(Box::new(netcup::Netcup::from_env(env)?)),
    },
    ProviderKind {
        name: "inwx",
        prefix: "INWX",
        timeout: secs(360),
        interval: secs(2),
        build: |env| Ok(Box::new(inwx::Inwx::from_env(env)?)),
    },
    ProviderKind {
        name: "transip",
        prefix: "TRANSIP",
        timeout: secs(600),
        interval: secs(10),
        build: |env| Ok(Box::new(transip::TransIp::from_env(env)?)),
    },
    ProviderKind {
        name: "azuredns",
        prefix: "AZURE",
        timeout: secs(120),
        interval: secs(2),
        build: |env| Ok(Box::new(azuredns::AzureDns::from_env(env)?)),
    },
    ProviderKind {
        name: "gcloud",
        prefix: "GCE",
        timeout: secs(180),
        interval: secs(5),
        build: |env| Ok(Box::new(gcloud::GCloud::from_env(env)?)),
    },
    ProviderKind {
        name: "rfc2136",
        prefix: "RFC2136",
        timeout: secs(60),
        interval: secs(2),
        build: |env| Ok(Box::new(rfc2136::Rfc2136::from_env(env)?)),
    },
    ProviderKind {
        name: "exec",
        prefix: "EXEC",
        timeout: secs(60),
        interval: secs(2),
        build: |env| Ok(Box::new(exec::Exec::from_env(env)?)),
    },
    ProviderKind {
        name: "httpreq",
        prefix: "HTTPREQ",
        timeout: secs(60),
        interval: secs(2),
        build: |env| Ok(Box::new(httpreq::HttpReq::from_env(env)?)),
    },
];

/// The environment a provider reads its settings from.
pub struct Env<'a> {
    lookup: &'a dyn Fn(&str) -> Option<String>,
    resolver: &'a str,
    provider: &'static str,
    missing: Vec<String>,
}

impl<'a> Env<'a> {
    fn new(
        lookup: &'a dyn Fn(&str) -> Option<String>,
        resolver: &'a str,
        provider: &'static str,
    ) -> Self {
        Env {
            lookup,
            resolver,
            provider,
            missing: Vec::new(),
        }
    }

    /// `name`, else the content of the file `name_FILE` names (without
    /// its final line break); None when neither is set or it is empty.
    fn optional(&self, name: &str) -> Result<Option<String>, DnsError> {
        if let Some(v) = (self.lookup)(name).filter(|v| !v.is_empty()) {
            return Ok(Some(v));
        }
        let variable = format!("{name}_FILE");
        let Some(path) = (self.lookup)(&variable).filter(|v| !v.is_empty()) else {
            return Ok(None);
        };
        let path = PathBuf::from(path);
        let text = std::fs::read_to_string(&path).map_err(|source| DnsError::EnvFile {
            variable,
            path,
            source,
        })?;
        let text = text.trim_end_matches(['\n', '\r']).to_owned();
        Ok((!text.is_empty()).then_some(text))
    }

    /// The first of `names` that is set (a variable and its aliases).
    fn first_of(&self, names: &[&str]) -> Result<Option<String>, DnsError> {
        for name in names {
            if let Some(v) = self.optional(name)? {
                return Ok(Some(v));
            }
        }
        Ok(None)
    }

    /// Fails saying which ways to authenticate the provider has.
    fn no_credentials(&self, choices: &'static str) -> DnsError {
        DnsError::MissingCredentials {
            resolver: self.resolver.to_owned(),
            provider: self.provider,
            choices,
        }
    }

    /// Like `optional`, noting the variable as missing when unset; the
    /// provider calls [`Env::finish`] once all are read.
    fn required(&mut self, name: &str) -> Result<String, DnsError> {
        let value = self.optional(name)?;
        if value.is_none() {
            self.missing.push(name.to_owned());
        }
        Ok(value.unwrap_or_default())
    }

    /// A whole number of seconds in `name`, or `default`.
    fn seconds(&self, name: &str, default: Duration) -> Result<Duration, DnsError> {
        match self.optional(name)? {
            None => Ok(default),
            Some(v) => v
                .trim()
                .parse::<u64>()
                .map(Duration::from_secs)
                .map_err(|_| DnsError::BadEnv {
                    variable: name.to_owned(),
                    problem: format!("`{v}` is not a whole number of seconds"),
                }),
        }
    }

    /// A boolean in `name` as Traefik's DNS library reads it (`1`, `t`,
    /// `true`, `0`, `f`, `false`, any case), false when unset.
    fn flag(&self, name: &str) -> Result<bool, DnsError> {
        match self.optional(name)?.map(|v| v.trim().to_ascii_lowercase()) {
            None => Ok(false),
            Some(v) if matches!(v.as_str(), "1" | "t" | "true") => Ok(true),
            Some(v) if matches!(v.as_str(), "0" | "f" | "false") => Ok(false),
            Some(v) => Err(DnsError::BadEnv {
                variable: name.to_owned(),
                problem: format!("`{v}` is not true or false"),
            }),
        }
    }

    /// Fails naming every required variable that was missing.
    fn finish(self) -> Result<(), DnsError> {
        if self.missing.is_empty() {
            Ok(())
        } else {
            Err(DnsError::MissingEnv {
                resolver: self.resolver.to_owned(),
                provider: self.provider,
                variables: self.missing,
            })
        }
    }
}

/// Parses `host` or `host:port` (IPv6 in brackets when with a port) into
/// an address, port 53 by default; None for a name that is not an IP.
pub fn parse_server(text: &str) -> Option<SocketAddr> {
    let text = text.trim();
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Some(addr);
    }
    let ip = text.trim_start_matches('[').trim_end_matches(']');
    ip.parse::<std::net::IpAddr>()
        .ok()
        .map(|ip| SocketAddr::new(ip, 53))
}

// === the solver ===

/// A resolver's DNS-01 side: its provider and how propagation is checked.
pub struct Solver {
    provider: Box<dyn DnsProvider>,
    checks: Checks,
}

/// How the record's propagation is checked.
#[derive(Debug, Clone)]
struct Checks {
    resolvers: Vec<SocketAddr>,
    delay: Duration,
    disabled: bool,
    require_all_rns: bool,
    timeout: Duration,
    interval: Duration,
}

/// Where a DNS-01 challenge stands, for the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Step {
    /// The provider is publishing the record.
    Publishing,
    /// Waiting until DNS servers answer it.
    Propagating,
    /// The CA is validating.
    Validating,
}

impl Solver {
    /// The solver `config` describes, with the provider's settings from
    /// `lookup` (the process environment, or `check`'s); fails naming
    /// every variable that is missing.
    pub fn new(
        resolver: &str,
        config: &DnsChallenge,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, DnsError> {
        Self::build(resolver, config, lookup, false).map(|(solver, _)| solver)
    }

    /// As [`Solver::new`], for a start: a provider whose credentials are
    /// missing or unreadable does not stop gangway, as it does not stop
    /// Traefik (which finds out at the first order). Its reason is
    /// returned, to be logged, and every order through it fails with it;
    /// `gangway check` still reports it as an error.
    pub fn for_start(
        resolver: &str,
        config: &DnsChallenge,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<(Self, Option<Arc<DnsError>>), DnsError> {
        Self::build(resolver, config, lookup, true)
    }

    fn build(
        resolver: &str,
        config: &DnsChallenge,
        lookup: &dyn Fn(&str) -> Option<String>,
        lenient: bool,
    ) -> Result<(Self, Option<Arc<DnsError>>), DnsError> {
        #[deny(unused_variables)] // an option read nowhere fails the build
        let DnsChallenge {
            provider,
            resolvers,
            propagation,
            delay_before_check,
            disable_propagation_check,
        } = config;
        #[deny(unused_variables)]
        let crate::config::static_config::Propagation {
            delay_before_checks,
            disable_checks,
            require_all_rns,
            disable_ans_checks: _, // reported as not supported (acme::unsupported)
        } = propagation;
        // Traefik v2's names, used when the v3 ones are not set.
        let delay_before_checks = if delay_before_checks.0.is_zero() {
            delay_before_check
        } else {
            delay_before_checks
        };
        let disable_checks = *disable_checks || *disable_propagation_check;
        let wanted = provider.trim().to_ascii_lowercase();
        let Some(kind) = PROVIDERS.iter().find(|p| p.name == wanted) else {
            return Err(DnsError::UnknownProvider {
                resolver: resolver.to_owned(),
                provider: provider.clone(),
            });
        };
        let (provider, not_set_up) = match (kind.build)(Env::new(lookup, resolver, kind.name)) {
            Ok(provider) => (provider, None),
            Err(e) if lenient => {
                let reason = Arc::new(e);
                let provider: Box<dyn DnsProvider> = Box::new(NotSetUp {
                    name: kind.name,
                    reason: reason.clone(),
                });
                (provider, Some(reason))
            }
            Err(e) => return Err(e),
        };
        let prefix = kind.prefix;
        let env = Env::new(lookup, resolver, provider.name());
        let timeout = env.seconds(&format!("{prefix}_PROPAGATION_TIMEOUT"), kind.timeout)?;
        let interval = env.seconds(&format!("{prefix}_POLLING_INTERVAL"), kind.interval)?;
        let resolvers = resolvers
            .iter()
            .map(|r| {
                parse_server(r).ok_or_else(|| DnsError::BadResolver {
                    resolver: resolver.to_owned(),
                    value: r.clone(),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let solver = Solver {
            provider,
            checks: Checks {
                resolvers,
                delay: delay_before_checks.0,
                disabled: disable_checks,
                require_all_rns: *require_all_rns,
                timeout,
                interval: interval.max(Duration::from_millis(100)),
            },
        };
        Ok((solver, not_set_up))
    }

    /// The provider's name.
    pub fn provider_name(&self) -> &'static str {
        self.provider.name()
    }

    /// Publishes the record and waits until it is answered; the returned
    /// guard removes it when [`Published::remove`] is called or, failing
    /// that, when dropped (an order aborted or timed out).
    pub async fn publish(
        self: &Arc<Self>,
        fqdn: &str,
        value: &str,
        step: &(dyn Fn(Step) + Sync),
    ) -> Result<Published, DnsError> {
        step(Step::Publishing);
        self.provider.present(fqdn, value).await?;
        let published = Published {
            solver: Some(self.clone()),
            fqdn: fqdn.to_owned(),
            value: value.to_owned(),
        };
        step(Step::Propagating);
        if !self.checks.delay.is_zero() {
            tokio::time::sleep(self.checks.delay).await;
        }
        if !self.checks.disabled {
            self.wait_until_visible(fqdn, value).await?;
        }
        Ok(published)
    }

    /// Waits until every server to check answers `fqdn` with `value`.
    async fn wait_until_visible(&self, fqdn: &str, value: &str) -> Result<(), DnsError> {
        let started = tokio::time::Instant::now();
        let servers = self.servers(fqdn).await?;
        let mut pending: Vec<SocketAddr> = servers;
        let mut last_seen = String::new();
        loop {
            let mut still = Vec::new();
            for server in pending {
                match txt_at(server, fqdn).await {
                    Ok(values) if values.iter().any(|v| v == value) => {}
                    Ok(values) => {
                        if still.is_empty() {
                            last_seen = if values.is_empty() {
                                "no TXT record".to_owned()
                            } else {
                                format!("only {}", values.join(", "))
                            };
                        }
                        still.push(server);
                    }
                    Err(e) => {
                        if still.is_empty() {
                            last_seen = format!("an error: {e}");
                        }
                        still.push(server);
                    }
                }
            }
            let Some(first) = still.first() else {
                tracing::debug!(fqdn, "TXT record visible at every server checked");
                return Ok(());
            };
            let left = self.checks.timeout.saturating_sub(started.elapsed());
            if left.is_zero() {
                return Err(DnsError::NotPropagated {
                    fqdn: fqdn.to_owned(),
                    server: first.to_string(),
                    waited: started.elapsed(),
                    seen: last_seen,
                });
            }
            pending = still;
            // The last check falls on the timeout itself.
            tokio::time::sleep(self.checks.interval.min(left)).await;
        }
    }

    /// The servers to check: the listed ones, else the zone's
    /// authoritative servers (plus the system's resolvers with
    /// `requireAllRNS`).
    async fn servers(&self, fqdn: &str) -> Result<Vec<SocketAddr>, DnsError> {
        if !self.checks.resolvers.is_empty() {
            return Ok(self.checks.resolvers.clone());
        }
        let system = system_resolvers();
        let Some(&recursive) = system.first() else {
            return Err(DnsError::NoZone {
                provider: "check",
                fqdn: fqdn.to_owned(),
                server: RESOLV_CONF.to_owned(),
                reason: "no nameserver is listed there; set dnsChallenge.resolvers".to_owned(),
            });
        };
        let zone = find_zone("check", recursive, fqdn).await?;
        let mut servers = Vec::new();
        for ns in records_at(recursive, &zone, RecordType::NS, "check").await? {
            let RData::NS(ns) = ns else { continue };
            for a in records_at(recursive, &ns.0.to_ascii(), RecordType::A, "check").await? {
                if let RData::A(a) = a {
                    servers.push(SocketAddr::new(std::net::IpAddr::V4(a.0), 53));
                }
            }
        }
        if servers.is_empty() {
            return Err(DnsError::NoZone {
                provider: "check",
                fqdn: fqdn.to_owned(),
                server: recursive.to_string(),
                reason: format!("zone `{zone}` has no name server with an IPv4 address"),
            });
        }
        if self.checks.require_all_rns {
            servers.extend(system);
        }
        Ok(servers)
    }
}

/// A published TXT record; removed by [`Published::remove`], or in the
/// background when dropped without it.
pub struct Published {
    solver: Option<Arc<Solver>>,
    fqdn: String,
    value: String,
}

impl Published {
    /// Removes the record, logging a failure (the order's outcome does not
    /// depend on it).
    pub async fn remove(mut self) {
        if let Some(solver) = self.solver.take() {
            cleanup(&solver, &self.fqdn, &self.value).await;
        }
    }
}

impl Drop for Published {
    fn drop(&mut self) {
        let Some(solver) = self.solver.take() else {
            return;
        };
        let (fqdn, value) = (
            std::mem::take(&mut self.fqdn),
            std::mem::take(&mut self.value),
        );
        // Dropped inside the order's task (aborted or timed out): the
        // removal cannot be awaited there, so it runs on its own.
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move { cleanup(&solver, &fqdn, &value).await });
        }
    }
}

async fn cleanup(solver: &Solver, fqdn: &str, value: &str) {
    match solver.provider.cleanup(fqdn, value).await {
        Ok(()) => tracing::debug!(fqdn, "TXT record removed"),
        Err(e) => tracing::warn!(fqdn, error = %e, "TXT record not removed"),
    }
}

impl fmt::Debug for Solver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The provider may hold a secret: only its name is shown.
        f.debug_struct("Solver")
            .field("provider", &self.provider.name())
            .field("checks", &self.checks)
            .finish()
    }
}

// === DNS exchanges ===

/// Why a DNS exchange (a query, or an RFC 2136 update) got no usable answer.
#[derive(Debug, thiserror::Error)]
pub enum ExchangeError {
    /// A name that is not a DNS name.
    #[error("`{name}` is not a DNS name: {source}")]
    BadName {
        /// The name.
        name: String,
        /// What hickory said.
        source: hickory_proto::ProtoError,
    },
    /// A zone (from an SOA answer) that is not a DNS name.
    #[error("zone `{zone}` is not a DNS name: {source}")]
    BadZone {
        /// The zone.
        zone: String,
        /// What hickory said.
        source: hickory_proto::ProtoError,
    },
    /// The query could not be encoded.
    #[error("{0}")]
    Encode(hickory_proto::ProtoError),
    /// The update could not be encoded.
    #[error("cannot encode the update: {0}")]
    EncodeUpdate(hickory_proto::ProtoError),
    /// The update could not be signed with the TSIG key.
    #[error("cannot sign the update: {0}")]
    Sign(hickory_proto::ProtoError),
    /// The message does not fit DNS over TCP's length prefix.
    #[error("message too long")]
    TooLong,
    /// The TCP connection failed.
    #[error("cannot connect: {0}")]
    Connect(std::io::Error),
    /// The message could not be sent.
    #[error("cannot send: {0}")]
    Send(std::io::Error),
    /// The server closed or failed before the answer's length.
    #[error("no answer: {0}")]
    NoAnswer(std::io::Error),
    /// The answer ended before its length.
    #[error("answer cut short: {0}")]
    CutShort(std::io::Error),
    /// No answer within the exchange's time limit.
    #[error("no answer within {}s", .0.as_secs())]
    Timeout(Duration),
    /// The answer is not a DNS message.
    #[error("unreadable answer: {0}")]
    Unreadable(hickory_proto::serialize::binary::DecodeError),
    /// The answer's id is not the query's.
    #[error("the answer is for another query")]
    OtherQuery,
    /// The server answered with an error code (TXT checks).
    #[error("{0}")]
    Rcode(ResponseCode),
    /// The answer's TSIG signature does not verify.
    #[error("the answer's TSIG signature is wrong: {0}")]
    Tsig(hickory_proto::ProtoError),
}

/// The nameservers of the system's resolv.conf.
fn system_resolvers() -> Vec<SocketAddr> {
    let text = std::fs::read_to_string(RESOLV_CONF).unwrap_or_default();
    parse_resolv_conf(&text)
}

/// The `nameserver` lines of a resolv.conf.
fn parse_resolv_conf(text: &str) -> Vec<SocketAddr> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("nameserver"))
        .filter_map(|rest| parse_server(rest.split('%').next().unwrap_or(rest)))
        .collect()
}

/// Sends `message` to `server` over TCP and returns the answer's bytes.
async fn exchange(server: SocketAddr, message: &[u8]) -> Result<Vec<u8>, ExchangeError> {
    let run = async {
        let mut stream = tokio::net::TcpStream::connect(server)
            .await
            .map_err(ExchangeError::Connect)?;
        let len = u16::try_from(message.len()).map_err(|_| ExchangeError::TooLong)?;
        let mut out = Vec::with_capacity(message.len() + 2);
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(message);
        stream.write_all(&out).await.map_err(ExchangeError::Send)?;
        let mut len = [0u8; 2];
        stream
            .read_exact(&mut len)
            .await
            .map_err(ExchangeError::NoAnswer)?;
        let mut answer = vec![0u8; usize::from(u16::from_be_bytes(len))];
        stream
            .read_exact(&mut answer)
            .await
            .map_err(ExchangeError::CutShort)?;
        Ok(answer)
    };
    tokio::time::timeout(EXCHANGE_TIMEOUT, run)
        .await
        .map_err(|_| ExchangeError::Timeout(EXCHANGE_TIMEOUT))?
}

/// Asks `server` (recursion desired) for `name`'s records of `rtype`.
async fn query(
    server: SocketAddr,
    name: &str,
    rtype: RecordType,
) -> Result<Message, ExchangeError> {
    let name = Name::from_str(name).map_err(|source| ExchangeError::BadName {
        name: name.to_owned(),
        source,
    })?;
    let mut message = Message::query();
    message.metadata.recursion_desired = true;
    message.add_query(Query::query(name, rtype));
    let bytes = message.to_vec().map_err(ExchangeError::Encode)?;
    let answer = exchange(server, &bytes).await?;
    let answer = Message::from_vec(&answer).map_err(ExchangeError::Unreadable)?;
    if answer.metadata.id != message.metadata.id {
        return Err(ExchangeError::OtherQuery);
    }
    Ok(answer)
}

/// The records of `rtype` at `name`, as `server` answers.
async fn records_at(
    server: SocketAddr,
    name: &str,
    rtype: RecordType,
    provider: &'static str,
) -> Result<Vec<RData>, DnsError> {
    let answer = query(server, name, rtype)
        .await
        .map_err(|reason| DnsError::Exchange {
            provider,
            action: "looking up",
            fqdn: name.to_owned(),
            server: server.to_string(),
            reason: Box::new(reason),
        })?;
    Ok(answer
        .answers
        .into_iter()
        .filter(|r| r.record_type() == rtype)
        .map(|r| r.data)
        .collect())
}

/// The TXT values at `fqdn` as `server` answers (each record's strings
/// joined, as the CA reads them).
async fn txt_at(server: SocketAddr, fqdn: &str) -> Result<Vec<String>, ExchangeError> {
    let answer = query(server, fqdn, RecordType::TXT).await?;
    match answer.metadata.response_code {
        ResponseCode::NoError | ResponseCode::NXDomain => {}
        code => return Err(ExchangeError::Rcode(code)),
    }
    Ok(answer
        .answers
        .iter()
        .filter_map(|r| match &r.data {
            RData::TXT(txt) => Some(
                txt.txt_data
                    .iter()
                    .map(|d| String::from_utf8_lossy(d))
                    .collect::<String>(),
            ),
            _ => None,
        })
        .collect())
}

/// The zone `fqdn` belongs to, from the SOA record `server` returns for
/// it (in the answer at a zone's apex, else in the authority section).
async fn find_zone(
    provider: &'static str,
    server: SocketAddr,
    fqdn: &str,
) -> Result<String, DnsError> {
    let no_zone = |reason: String| DnsError::NoZone {
        provider,
        fqdn: fqdn.to_owned(),
        server: server.to_string(),
        reason,
    };
    let answer = query(server, fqdn, RecordType::SOA)
        .await
        .map_err(|reason| DnsError::Exchange {
            provider,
            action: "finding the zone of",
            fqdn: fqdn.to_owned(),
            server: server.to_string(),
            reason: Box::new(reason),
        })?;
    match answer.metadata.response_code {
        ResponseCode::NoError | ResponseCode::NXDomain => {}
        code => return Err(no_zone(format!("it answered {code}"))),
    }
    answer
        .answers
        .iter()
        .chain(&answer.authorities)
        .find(|r| r.record_type() == RecordType::SOA)
        .map(|r| r.name.to_ascii())
        .ok_or_else(|| no_zone("it answered no SOA record".to_owned()))
}

#[cfg(test)]
mod tests;
