//! What can go wrong with a certificate resolver or an order, as the
//! messages users see in the log and the API.

use super::{dns, schedule, shared};
use crate::cause::WithCauses;
use crate::tls::TlsError;
use std::path::PathBuf;
use std::time::Duration;

/// What went wrong with a resolver or an order.
#[derive(Debug, thiserror::Error)]
pub enum AcmeError {
    /// An unsupported `keyType`.
    #[error(
        "certificatesResolvers.{resolver}.acme.keyType: `{value}` is not a key type (use EC256, EC384, RSA2048, RSA3072, RSA4096 or RSA8192)"
    )]
    KeyType {
        /// The resolver.
        resolver: String,
        /// The value given.
        value: String,
    },
    /// A `caCertificates` file that cannot be used.
    #[error("certificatesResolvers.{resolver}.acme.caCertificates: `{}`: {message}", path.display())]
    CaFile {
        /// The resolver.
        resolver: String,
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The HTTP-01 challenge names an entry point that does not exist.
    #[error(
        "certificatesResolvers.{resolver}.acme.httpChallenge.entryPoint: entry point `{entry_point}` does not exist"
    )]
    NoEntryPoint {
        /// The resolver.
        resolver: String,
        /// The name given.
        entry_point: String,
    },
    /// A Traefik `acme.json` that does not read.
    #[error("ACME storage `{}` is not a Traefik acme.json gangway can read ({problem}); it is left as it is", path.display())]
    TraefikFile {
        /// The file.
        path: PathBuf,
        /// What is wrong, and where in the file.
        problem: String,
    },
    /// The storage folder or a file in it cannot be used.
    #[error("ACME storage `{}`: {source}", path.display())]
    Storage {
        /// The folder or file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The ACME server answered with an error.
    #[error("the ACME server answered {status}: {detail}")]
    Refused {
        /// The HTTP status.
        status: u16,
        /// The problem's detail (or body), with its type.
        detail: String,
        /// The problem's type (`urn:ietf:params:acme:error:…`), if any.
        kind: Option<String>,
        /// When the server allows the next attempt, seconds since the epoch.
        retry_after: Option<i64>,
    },
    /// An HTTP exchange with the ACME server failed before any answer;
    /// the order loop replaces this with [`AcmeError::Unreachable`] after
    /// finding out where connecting fails ([`Resolver::unreachable`]).
    #[error("the ACME server at {url} did not answer: {error}")]
    Wire {
        /// The URL asked.
        url: String,
        /// What failed.
        error: Box<super::client::WireError>,
    },
    /// The CA requires an external account binding and the resolver has
    /// none (`acme.eab.kid` and `acme.eab.hmacEncoded`).
    #[error(
        "the CA at {url} requires an external account binding (externalAccountRequired): set acme.eab.kid and acme.eab.hmacEncoded from the CA's account page"
    )]
    BindingRequired {
        /// The directory URL.
        url: String,
    },
    /// `acme.eab.hmacEncoded` is not base64url.
    #[error(
        "certificatesResolvers.{resolver}.acme.eab.hmacEncoded: not base64url ({error}); give the HMAC key exactly as the CA shows it"
    )]
    BadHmac {
        /// The resolver.
        resolver: String,
        /// What the decoder said.
        error: base64::DecodeError,
    },
    /// Only one of `acme.eab.kid` and `acme.eab.hmacEncoded` is set.
    #[error("certificatesResolvers.{resolver}.acme.eab: both kid and hmacEncoded are needed")]
    HalfBinding {
        /// The resolver.
        resolver: String,
    },
    /// `acme.caServerName` is not a name a certificate can be verified for.
    #[error("certificatesResolvers.{resolver}.acme.caServerName: `{name}` is not a server name")]
    BadServerName {
        /// The resolver.
        resolver: String,
        /// The value given.
        name: String,
    },
    /// `acme.fallback` names a resolver that does not exist, or this one.
    #[error("certificatesResolvers.{resolver}.acme.fallback: `{fallback}` {problem}")]
    BadFallback {
        /// The resolver.
        resolver: String,
        /// The name given.
        fallback: String,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// The CA does not offer the profile `acme.profile` names.
    #[error(
        "certificatesResolvers.{resolver}.acme.profile: the CA does not offer profile `{profile}` (it offers: {offered})"
    )]
    NoProfile {
        /// The resolver.
        resolver: String,
        /// The profile asked for.
        profile: String,
        /// The profiles the CA's directory lists.
        offered: String,
    },
    /// The ACME server cannot be reached, and why.
    #[error("CA unreachable at {url}: {reason}")]
    Unreachable {
        /// The directory URL.
        url: String,
        /// What connecting to it showed.
        reason: ProbeError,
    },
    /// The ACME server answered something the client cannot use.
    #[error("the ACME server's answer cannot be used: {0}")]
    Protocol(String),
    /// The CA could not validate a name.
    #[error("validation of `{domain}` failed: {detail}")]
    Validation {
        /// The name.
        domain: String,
        /// The CA's explanation.
        detail: String,
    },
    /// The order failed otherwise.
    #[error("order failed: {0}")]
    Order(String),
    /// The order took longer than allowed.
    #[error("the order did not finish within {}", crate::config::Duration(*.0))]
    Timeout(Duration),
    /// The issued certificate cannot be served.
    #[error("the issued certificate cannot be used: {0}")]
    Certificate(#[from] TlsError),
    /// The DNS-01 side of a resolver cannot be set up (provider, its
    /// environment variables, resolvers).
    #[error("{0}")]
    DnsSetup(Box<dns::DnsError>),
    /// Publishing, checking or removing a DNS-01 TXT record failed.
    #[error("DNS-01 challenge for `{domain}`: {source}")]
    Dns {
        /// The name being validated (a wildcard's base name).
        domain: String,
        /// What failed.
        source: Box<dns::DnsError>,
    },
    /// The shared store (a storage URL) failed or holds something unusable.
    #[error(transparent)]
    Shared(#[from] shared::SharedError),
    /// Two resolvers whose storage URLs and CA would write the same keys.
    #[error(
        "certificatesResolvers.{second}.acme.storage: resolver `{first}` already stores its account and certificates for this CA at {location}; give one of them another store or prefix (?prefix=…)"
    )]
    SameKeys {
        /// The resolver named first.
        first: String,
        /// The resolver that would write over it.
        second: String,
        /// The store.
        location: String,
    },
}

/// What connecting to the CA showed, when an exchange with it failed
/// before any answer.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// The directory URL does not parse.
    #[error("not a URL ({0})")]
    NotUrl(http::uri::InvalidUri),
    /// The directory URL has no host.
    #[error("the URL names no host")]
    NoHost,
    /// A step took longer than the probe allows.
    #[error("{what} {host}:{port} took longer than {after}")]
    Timeout {
        /// The step: connecting, or the TLS handshake.
        what: &'static str,
        /// The CA's host.
        host: String,
        /// The CA's port.
        port: u16,
        /// The time allowed.
        after: crate::config::Duration,
    },
    /// The TCP connection failed.
    #[error("cannot connect to {host}:{port}: {}", WithCauses(.error))]
    Connect {
        /// The CA's host.
        host: String,
        /// The CA's port.
        port: u16,
        /// What the system said.
        error: std::io::Error,
    },
    /// The host cannot be a TLS server name.
    #[error("`{host}` is not a server name: {error}")]
    BadName {
        /// The CA's host.
        host: String,
        /// What rustls said.
        error: rustls::pki_types::InvalidDnsNameError,
    },
    /// The TLS handshake failed.
    #[error("TLS handshake with {host}:{port} failed: {}", WithCauses(.error))]
    Handshake {
        /// The CA's host.
        host: String,
        /// The CA's port.
        port: u16,
        /// What rustls (through the system) said.
        error: std::io::Error,
    },
    /// Connecting works now: only the exchange before failed.
    #[error("connecting works again; the exchange before it failed")]
    Reachable,
}

impl AcmeError {
    /// The error for a failed exchange through instant-acme with the
    /// server at `url`.
    pub(super) fn from_client(url: &str, e: instant_acme::Error) -> Self {
        use instant_acme::Error as Client;
        match e {
            Client::Api(problem) => Self::from_problem(problem.status, &problem),
            Client::Other(other) => match other.downcast::<super::client::WireError>() {
                Ok(error) => AcmeError::Wire {
                    url: url.to_owned(),
                    error,
                },
                Err(other) => AcmeError::Protocol(crate::cause::WithCauses(&*other).to_string()),
            },
            e => AcmeError::Protocol(crate::cause::WithCauses(&e).to_string()),
        }
    }

    /// The error for a problem document (RFC 7807) with HTTP `status`.
    pub(super) fn from_problem(status: Option<u16>, problem: &instant_acme::Problem) -> Self {
        let detail = match (&problem.r#type, &problem.detail) {
            (Some(t), Some(d)) => format!("{d} ({t})"),
            (_, Some(d)) => d.clone(),
            (Some(t), None) => t.clone(),
            (None, None) => "no detail given".to_owned(),
        };
        AcmeError::Refused {
            status: status.or(problem.status).unwrap_or(0),
            // Let's Encrypt repeats its Retry-After header in the detail.
            retry_after: problem.detail.as_deref().and_then(schedule::retry_after_in),
            kind: problem.r#type.clone(),
            detail,
        }
    }

    pub(super) fn is_bad_nonce(&self) -> bool {
        matches!(self, AcmeError::Refused { kind: Some(k), .. } if k == "urn:ietf:params:acme:error:badNonce")
    }

    /// Whether the CA refused for its rate limits.
    pub fn is_rate_limited(&self) -> bool {
        matches!(self, AcmeError::Refused { kind: Some(k), .. } if k == "urn:ietf:params:acme:error:rateLimited")
    }

    pub(super) fn retry_after(&self) -> Option<i64> {
        match self {
            AcmeError::Refused { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}
