//! TLS termination: the certificate store chosen by SNI, the rustls server
//! configurations compiled from Traefik's `tls.options`, the self-signed
//! default certificate, and the challenge answers that ACME needs.
//!
//! Compile builds one [`Termination`] per runtime; the proxy does one
//! `load()` of the runtime per handshake and asks it for the server
//! configuration. State that outlives swaps (the default certificate,
//! certificates issued by ACME, challenge answers, the session cache) lives
//! in [`TlsState`], owned by the runtime's registries.

pub mod challenge;
pub mod negotiated;
pub mod options;
pub mod store;

pub use challenge::Challenges;
pub use store::{CertStore, LoadedCert};

use crate::config::dynamic;
use crate::config::problem::{Notice, Warning};
use rustls::ServerConfig;
use rustls::server::ClientHello;
use rustls::sign::CertifiedKey;
use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use tokio::sync::Notify;

/// The only ALPN protocol of a TLS-ALPN-01 challenge handshake (RFC 8737).
pub const ACME_TLS_ALPN: &[u8] = b"acme-tls/1";

/// Why a certificate or a set of TLS options cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A `curvePreferences` name gangway cannot offer.
    #[error("curvePreferences: `{name}` {reason}")]
    Curve {
        /// The name as configured.
        name: String,
        /// Why it cannot be offered.
        reason: &'static str,
    },
    /// A PEM file could not be read.
    #[error("cannot read `{path}`: {source}")]
    Read {
        /// The path as configured.
        path: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// The PEM data holds no certificate.
    #[error("{what}: no certificate found in the PEM data")]
    NoCertificate {
        /// Which certificate.
        what: String,
    },
    /// The PEM data holds no private key (or one rustls cannot use).
    #[error("{what}: no usable private key found in the PEM data")]
    NoKey {
        /// Which certificate.
        what: String,
    },
    /// The certificate cannot be parsed.
    #[error("{what}: {message}")]
    BadCertificate {
        /// Which certificate.
        what: String,
        /// What is wrong.
        message: String,
    },
    /// The key belongs to another certificate.
    #[error("{what}: the private key does not match the certificate")]
    KeyMismatch {
        /// Which certificate.
        what: String,
    },
    /// A TLS version rustls does not speak, or an unknown name.
    #[error("`{0}` is not a supported TLS version (use VersionTLS12 or VersionTLS13)")]
    Version(String),
    /// minVersion is above maxVersion.
    #[error("minVersion is above maxVersion")]
    VersionRange,
    /// None of the listed cipher suites is supported.
    #[error("none of the cipher suites is supported by gangway: {0}")]
    NoCipherSuite(String),
    /// An unknown client authentication type.
    #[error(
        "clientAuth.clientAuthType `{0}` is not one of NoClientCert, RequestClientCert, RequireAnyClientCert, VerifyClientCertIfGiven, RequireAndVerifyClientCert"
    )]
    ClientAuthType(String),
    /// Client authentication cannot be set up.
    #[error("clientAuth: {0}")]
    ClientAuth(String),
    /// rustls refused the configuration.
    #[error("{0}")]
    Rustls(#[from] rustls::Error),
}

/// The crypto provider everything TLS in gangway uses: ring with the
/// post-quantum `X25519MLKEM768` first ([`crate::crypto`]), chosen
/// explicitly so a dependency enabling another provider changes nothing.
pub fn provider() -> rustls::crypto::CryptoProvider {
    crate::crypto::provider()
}

/// Whether `name`, as Traefik's `cipherSuites` spell it (IANA's names:
/// `TLS_AES_128_GCM_SHA256` for TLS 1.3's, which rustls calls
/// `TLS13_AES_128_GCM_SHA256`), names `suite`.
pub fn is_suite_named(suite: &rustls::SupportedCipherSuite, name: &str) -> bool {
    let Some(own) = suite.suite().as_str() else {
        return false;
    };
    own == name
        || own
            .strip_prefix("TLS13_")
            .is_some_and(|rest| name.strip_prefix("TLS_") == Some(rest))
}

/// A certificate obtained by a certificate resolver, as stored and served.
#[derive(Debug)]
pub struct IssuedCert {
    /// The resolver that obtained it.
    pub resolver: String,
    /// The names it was ordered for, main name first.
    pub domains: Vec<String>,
    /// The certificate itself.
    pub cert: LoadedCert,
}

/// TLS state that outlives runtime swaps.
pub struct TlsState {
    default_cert: OnceLock<Arc<CertifiedKey>>,
    issued: Mutex<BTreeMap<String, Arc<IssuedCert>>>,
    /// Answers to ACME challenges in progress.
    pub challenges: Arc<Challenges>,
    challenge_config: OnceLock<Arc<ServerConfig>>,
    resumption: options::Resumption,
    changed: Notify,
}

impl Default for TlsState {
    fn default() -> Self {
        TlsState {
            default_cert: OnceLock::new(),
            issued: Mutex::new(BTreeMap::new()),
            challenges: Arc::new(Challenges::default()),
            challenge_config: OnceLock::new(),
            // Shared by every generation, so a swap does not end resumption.
            resumption: options::Resumption::new(4096),
            changed: Notify::new(),
        }
    }
}

impl TlsState {
    /// The self-signed certificate served when nothing else matches,
    /// generated on first use and kept for the life of the process.
    pub fn default_certificate(&self) -> Arc<CertifiedKey> {
        self.default_cert
            .get_or_init(|| Arc::new(store::generate_default()))
            .clone()
    }

    /// Adds or replaces an issued certificate under `key` and asks for a
    /// recompile, so the next runtime serves it.
    pub fn put_issued(&self, key: String, cert: Arc<IssuedCert>) {
        self.issued
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key, cert);
        self.changed.notify_one();
    }

    /// The issued certificate stored under `key`.
    pub fn issued(&self, key: &str) -> Option<Arc<IssuedCert>> {
        self.issued
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .cloned()
    }

    /// Every issued certificate.
    pub fn all_issued(&self) -> Vec<Arc<IssuedCert>> {
        self.issued
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .cloned()
            .collect()
    }

    /// Resolves when a certificate was added since the last call.
    pub async fn changed(&self) {
        self.changed.notified().await;
    }

    /// The server configuration for TLS-ALPN-01 challenge handshakes.
    fn challenge_config(&self) -> Option<Arc<ServerConfig>> {
        if let Some(c) = self.challenge_config.get() {
            return Some(c.clone());
        }
        let mut config = ServerConfig::builder_with_provider(Arc::new(provider()))
            .with_safe_default_protocol_versions()
            .ok()?
            .with_no_client_auth()
            .with_cert_resolver(self.challenges.clone());
        config.alpn_protocols = vec![ACME_TLS_ALPN.to_vec()];
        Some(
            self.challenge_config
                .get_or_init(|| Arc::new(config))
                .clone(),
        )
    }
}

/// A TLS router's claim on a host: which options its handshakes use.
#[derive(Debug, Clone)]
pub struct HostOptions {
    /// The host, lowercased (from the router's `Host` rule).
    pub host: String,
    /// Qualified name of the TLS options, `None` for the default ones.
    pub options: Option<String>,
    /// The router, for messages.
    pub router: String,
}

/// A certificate that a resolver should obtain.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CertificateRequest {
    /// The certificate resolver's name.
    pub resolver: String,
    /// The names, main name first.
    pub domains: Vec<String>,
    /// The routers that want it.
    pub routers: Vec<String>,
}

impl CertificateRequest {
    /// The identity of the certificate: resolver and names.
    pub fn key(&self) -> String {
        certificate_key(&self.resolver, &self.domains)
    }
}

/// The identity of a resolver's certificate for `domains`: the same set of
/// names in any order is the same certificate.
pub fn certificate_key(resolver: &str, domains: &[String]) -> String {
    let mut sorted: Vec<&str> = domains.iter().map(String::as_str).collect();
    sorted.sort_unstable();
    sorted.dedup();
    format!("{resolver}|{}", sorted.join(","))
}

/// The warning for a part of the TLS configuration that is skipped.
pub(crate) fn skipped(option: &str, message: impl std::fmt::Display) -> Warning {
    let notice = Notice::TlsSkipped {
        option: option.to_owned(),
        message: message.to_string(),
    };
    Warning::new(notice, None)
}

/// What compiling the TLS part of a configuration found wrong.
#[derive(Debug, Default)]
pub struct TlsReport {
    /// Options that cannot be used, by qualified name, with the reason;
    /// routers that use them are disabled.
    pub broken_options: BTreeMap<String, String>,
    /// Problems not tied to a router (certificate files, conflicts).
    pub warnings: Vec<Warning>,
}

/// The TLS part of one runtime: server configurations per TLS options,
/// which host uses which, and the certificate store they share.
#[derive(Default)]
pub struct Termination {
    configs: Vec<Arc<ServerConfig>>,
    /// TLS options by router host; wildcard hosts keep their `*.`/`**.`.
    by_host: HashMap<String, usize>,
    /// Some key of `by_host` is a wildcard: only then do handshakes look
    /// for one.
    wildcard_hosts: bool,
    challenge: Option<Arc<ServerConfig>>,
    challenges: Option<Arc<Challenges>>,
    /// Per entry of `configs`: whether its options can be kept over QUIC
    /// (HTTP/3), which speaks TLS 1.3 only and where gangway asks for no
    /// client certificate.
    quic: Vec<bool>,
    /// Certificates the resolvers should obtain.
    pub requests: Vec<CertificateRequest>,
    /// The certificates loaded from files, for the API.
    pub files: Vec<FileCertificate>,
    /// Which certificate each name gets, for the API.
    pub served: Option<ServedCertificates>,
}

/// Where a served certificate comes from.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "source", rename_all = "lowercase")]
pub enum CertificateSource {
    /// `tls.certificates`.
    File {
        /// The certificate file, as configured.
        #[serde(rename = "certFile")]
        cert_file: String,
    },
    /// Obtained by a certificate resolver.
    Acme {
        /// The resolver's name.
        resolver: String,
    },
    /// The default certificate: served for a name no other one covers.
    Default,
    /// None: no certificate covers the name and its TLS options have
    /// `sniStrict`, so handshakes for it are refused.
    #[serde(rename = "none")]
    Refused,
}

/// The default certificate as the API describes it.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DefaultCertificate {
    /// The names it carries (none a client will ask for, when generated).
    pub domains: Vec<String>,
    /// The issuer's distinguished name.
    pub issuer: String,
    /// Start of validity, seconds since the Unix epoch.
    pub not_before: i64,
    /// End of validity, seconds since the Unix epoch.
    pub not_after: i64,
    /// True for the certificate gangway generated, which no browser trusts;
    /// false for `tls.stores.default.defaultCertificate`.
    pub self_signed: bool,
    /// `tls.stores.default.defaultCertificate`'s file, when that is the one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cert_file: Option<String>,
}

/// The certificate store of a runtime with where each certificate in it
/// comes from, so the API can say what a name is served today.
pub struct ServedCertificates {
    store: Arc<CertStore>,
    sources: Vec<(Arc<CertifiedKey>, CertificateSource)>,
    /// The certificate served when none matches.
    pub default: DefaultCertificate,
    /// Per server configuration of the termination: whether its options
    /// have `sniStrict`, refusing names no certificate covers.
    strict: Vec<bool>,
}

impl ServedCertificates {
    /// The leaf of every certificate served (from files and resolvers, and
    /// a configured default; not gangway's generated one), once each.
    pub fn leaves(&self) -> Vec<&[u8]> {
        let mut out: Vec<&[u8]> = Vec::new();
        for (key, source) in &self.sources {
            let generated =
                matches!(source, CertificateSource::Default) && self.default.self_signed;
            if let Some(leaf) = key.cert.first().filter(|_| !generated)
                && !out.contains(&leaf.as_ref())
            {
                out.push(leaf.as_ref());
            }
        }
        out
    }

    /// Where the certificate served for `host` (a router's host, lowercase,
    /// maybe `*.` wildcard) comes from; what a handshake naming it gets
    /// when its TLS options are `options` (an index of the termination's
    /// configurations, see [`Termination::options_index`]).
    pub fn source_for(&self, host: &str, options: usize) -> CertificateSource {
        let found = self.store.find(host).and_then(|key| {
            self.sources
                .iter()
                .find(|(k, _)| Arc::ptr_eq(k, key))
                .map(|(_, s)| s.clone())
        });
        match found {
            Some(source) => source,
            None if self.strict.get(options).copied().unwrap_or(false) => {
                CertificateSource::Refused
            }
            None => CertificateSource::Default,
        }
    }
}

/// A certificate from `tls.certificates`, as the API lists it.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileCertificate {
    /// The certificate file, as configured.
    pub cert_file: String,
    /// The DNS names it is valid for.
    pub domains: Vec<String>,
    /// The issuer's distinguished name.
    pub issuer: String,
    /// Start of validity, seconds since the Unix epoch.
    pub not_before: i64,
    /// End of validity, seconds since the Unix epoch.
    pub not_after: i64,
    /// Its labels on `tls_certs_not_after`.
    #[serde(skip)]
    pub labels: store::CertLabels,
}

impl Termination {
    /// The server configuration for a handshake: the challenge one for a
    /// TLS-ALPN-01 validation, otherwise the one of the options the SNI's
    /// routers use. `None` refuses the handshake (no TLS configured yet).
    pub fn config_for(&self, hello: &ClientHello<'_>) -> Option<Arc<ServerConfig>> {
        if hello
            .alpn()
            .is_some_and(|mut p| p.any(|p| p == ACME_TLS_ALPN))
        {
            return self.challenge.clone();
        }
        let index = hello
            .server_name()
            .and_then(|name| store::with_lowercase(name, |n| self.options_for(n)))
            .unwrap_or(0);
        self.configs.get(index).cloned()
    }

    /// The server configuration for a handshake that reached the local
    /// address `local`: when it names no server (a client connecting by
    /// address) and a certificate for that address is in the store (RFC
    /// 8738), that one, with the address's TLS options; otherwise as
    /// [`Termination::config_for`].
    pub fn config_at(&self, hello: &ClientHello<'_>, local: IpAddr) -> Option<Arc<ServerConfig>> {
        if hello.server_name().is_some() {
            return self.config_for(hello);
        }
        let address = local.to_canonical().to_string();
        let found = self
            .served
            .as_ref()
            .and_then(|s| s.store.find(&address).cloned());
        let Some(key) = found else {
            return self.config_for(hello);
        };
        let index = self.options_for(&address).unwrap_or(0);
        let mut config = ServerConfig::clone(self.configs.get(index)?);
        config.cert_resolver = Arc::new(store::Fixed(key));
        Some(Arc::new(config))
    }

    /// The server configuration for TLS that gangway terminates for a TCP
    /// router: the one HTTPS would use for the name, without HTTP's ALPN
    /// protocols (the client speaks whatever the server does).
    pub fn tcp_config_for(&self, hello: &ClientHello<'_>) -> Option<Arc<ServerConfig>> {
        let index = hello
            .server_name()
            .and_then(|name| store::with_lowercase(name, |n| self.options_for(n)))
            .unwrap_or(0);
        let config = self.configs.get(index)?;
        let mut plain = ServerConfig::clone(config);
        plain.alpn_protocols.clear();
        Some(Arc::new(plain))
    }

    /// The certificate for a QUIC (HTTP/3) handshake: the one a TCP
    /// handshake naming the same server would get, when that name's TLS
    /// options can be kept over QUIC. None refuses the handshake (the
    /// client then stays on TCP): options that allow TLS 1.2 only, or
    /// that ask for client certificates, which QUIC connections are not
    /// asked for, so HTTP/3 never bypasses them.
    pub fn quic_certificate(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let index = hello
            .server_name()
            .and_then(|name| store::with_lowercase(name, |n| self.options_for(n)))
            .unwrap_or(0);
        if !self.quic.get(index).copied().unwrap_or(false) {
            return None;
        }
        self.configs.get(index)?.cert_resolver.resolve(hello)
    }

    /// Whether a QUIC handshake for `sni` (lowercase; None: no SNI) would
    /// be taken ([`Termination::quic_certificate`]), so that HTTP/3 is
    /// advertised only where a client can use it.
    pub fn quic_serves(&self, sni: Option<&str>) -> bool {
        let index = sni.and_then(|n| self.options_for(n)).unwrap_or(0);
        self.quic.get(index).copied().unwrap_or(false)
    }

    /// The index of the server configuration a handshake for `name`
    /// (lowercase) uses: its routers' TLS options, else the default ones.
    pub fn options_index(&self, name: &str) -> usize {
        self.options_for(name).unwrap_or(0)
    }

    /// The TLS options of the routers for `name` (lowercase): its own
    /// name's, else a `*.` router's for its parent, else the nearest `**.`
    /// router's above it, as Traefik lets wildcard hosts carry options.
    fn options_for(&self, name: &str) -> Option<usize> {
        if let Some(&i) = self.by_host.get(name) {
            return Some(i);
        }
        if !self.wildcard_hosts {
            return None;
        }
        let (_, parent) = name.split_once('.')?;
        if let Some(&i) = self.by_host.get(&format!("*.{parent}")) {
            return Some(i);
        }
        let mut above = parent;
        loop {
            if let Some(&i) = self.by_host.get(&format!("**.{above}")) {
                return Some(i);
            }
            above = above.split_once('.')?.1;
        }
    }

    /// The ACME challenge answers, where this runtime has them.
    pub fn challenges(&self) -> Option<&Arc<Challenges>> {
        self.challenges.as_ref()
    }
}

/// Builds the TLS part of a runtime from the dynamic `tls` section, the
/// TLS routers' hosts and the certificates issued so far.
///
/// Reads the certificate files named in the configuration: small local
/// files, and the only input compile cannot get from the model itself.
pub fn compile_termination(
    tls: &dynamic::Tls,
    hosts: &[HostOptions],
    requests: Vec<CertificateRequest>,
    state: &TlsState,
) -> (Termination, TlsReport) {
    let mut report = TlsReport::default();
    let certificates = load_certificates(tls, state, &mut report);
    let store = Arc::new(certificates.store);
    let options = compile_all_options(tls, &store, &state.resumption, &mut report);
    let by_host = options_by_host(hosts, &options.index_of, &mut report);
    let served = certificates.default.map(|default| ServedCertificates {
        store: store.clone(),
        sources: certificates.sources,
        default,
        strict: options.strict,
    });
    (
        Termination {
            configs: options.configs,
            wildcard_hosts: by_host.keys().any(|h| h.starts_with('*')),
            by_host,
            challenge: state.challenge_config(),
            challenges: Some(state.challenges.clone()),
            quic: options.quic,
            requests,
            files: certificates.files,
            served,
        },
        report,
    )
}

/// The certificates one runtime serves, before they are shared.
struct LoadedCertificates {
    store: CertStore,
    /// Where each certificate of the store comes from.
    sources: Vec<(Arc<CertifiedKey>, CertificateSource)>,
    /// The certificates read from files.
    files: Vec<FileCertificate>,
    /// The certificate served when none matches, described.
    default: Option<DefaultCertificate>,
}

/// Fills the certificate store: the default certificate (the `default`
/// store's file, the ordered `defaultGeneratedCert`, else the generated
/// one), the files, then the issued certificates.
fn load_certificates(
    tls: &dynamic::Tls,
    state: &TlsState,
    report: &mut TlsReport,
) -> LoadedCertificates {
    let generated = state.default_certificate();
    let mut default = describe_generated(&generated);
    let mut store = CertStore::new(generated);
    let mut sources = Vec::new();

    // The `default` store's own default certificate replaces the generated one.
    if let Some(file) = tls
        .stores
        .get("default")
        .and_then(|s| s.default_certificate.as_ref())
    {
        match store::load_file(file) {
            Ok(cert) => {
                default = Some(DefaultCertificate {
                    domains: cert.names.clone(),
                    issuer: cert.issuer.clone(),
                    not_before: cert.not_before,
                    not_after: cert.not_after,
                    self_signed: false,
                    cert_file: Some(file.cert_file.clone()),
                });
                store.set_default(cert.key);
            }
            Err(e) => report.warnings.push(skipped(
                "tls.stores.default.defaultCertificate",
                format!("{e}; the generated certificate is served"),
            )),
        }
    }
    // Certificates from files first: they win over issued ones for the same name.
    let mut files = Vec::new();
    for file in &tls.certificates {
        match store::load_file(file) {
            Ok(cert) => {
                store.insert(&cert.names, &cert.key);
                sources.push((
                    cert.key.clone(),
                    CertificateSource::File {
                        cert_file: file.cert_file.clone(),
                    },
                ));
                files.push(FileCertificate {
                    cert_file: file.cert_file.clone(),
                    domains: cert.names,
                    issuer: cert.issuer,
                    not_before: cert.not_before,
                    not_after: cert.not_after,
                    labels: cert.labels,
                });
            }
            Err(e) => report.warnings.push(skipped("tls.certificates", e)),
        }
    }
    let mut issued = state.all_issued();
    // The newest certificate wins when several cover a name.
    issued.sort_by_key(|c| std::cmp::Reverse(c.cert.not_after));
    for cert in &issued {
        store.insert(&cert.cert.names, &cert.cert.key);
        sources.push((
            cert.cert.key.clone(),
            CertificateSource::Acme {
                resolver: cert.resolver.clone(),
            },
        ));
    }
    // `defaultGeneratedCert`: once the resolver's certificate for its names
    // is issued (compile ordered it), it is the default; until then the
    // generated one stays.
    if let Some(generated) = tls.stores.get("default").and_then(|s| {
        s.default_generated_cert
            .as_ref()
            .filter(|_| s.default_certificate.is_none())
    }) && let Some(cert) =
        state.issued(&certificate_key(&generated.resolver, &generated.domains()))
    {
        default = Some(DefaultCertificate {
            domains: cert.cert.names.clone(),
            issuer: cert.cert.issuer.clone(),
            not_before: cert.cert.not_before,
            not_after: cert.cert.not_after,
            self_signed: false,
            cert_file: None,
        });
        store.set_default(cert.cert.key.clone());
    }
    LoadedCertificates {
        store,
        sources,
        files,
        default,
    }
}

/// The server configurations of every set of TLS options.
struct CompiledOptions<'a> {
    /// Index 0 is the default (`default@…` if configured).
    configs: Vec<Arc<ServerConfig>>,
    /// Per entry of `configs`: whether it refuses names without a
    /// certificate.
    strict: Vec<bool>,
    /// Per entry of `configs`: whether QUIC can keep its options.
    quic: Vec<bool>,
    /// The entry of `configs` of each options' name that compiled.
    index_of: HashMap<&'a str, usize>,
}

/// Compiles the default options, then every other set; a set that does not
/// compile is reported broken (its routers are disabled), a broken default
/// falls back to rustls's defaults.
fn compile_all_options<'a>(
    tls: &'a dynamic::Tls,
    store: &Arc<CertStore>,
    resumption: &options::Resumption,
    report: &mut TlsReport,
) -> CompiledOptions<'a> {
    let default_options = tls
        .options
        .iter()
        .find(|(name, _)| name.split('@').next() == Some("default"))
        .map(|(_, o)| o.clone())
        .unwrap_or_default();
    let mut out = CompiledOptions {
        configs: Vec::new(),
        strict: Vec::new(),
        quic: Vec::new(),
        index_of: HashMap::new(),
    };
    match options::compile_options(&default_options, store, resumption) {
        Ok((config, warnings)) => {
            out.push(config, &default_options);
            report.warnings.extend(
                warnings
                    .into_iter()
                    .map(|w| skipped("default TLS options", w)),
            );
        }
        Err(e) => {
            report.warnings.push(skipped(
                "default TLS options",
                format!("{e}; rustls defaults are used instead"),
            ));
            let defaults = dynamic::TlsOptions::default();
            if let Ok((config, _)) = options::compile_options(&defaults, store, resumption) {
                out.push(config, &defaults);
            }
        }
    }
    for (name, opts) in &tls.options {
        if name.split('@').next() == Some("default") {
            out.index_of.insert(name, 0);
            continue;
        }
        match options::compile_options(opts, store, resumption) {
            Ok((config, warnings)) => {
                out.index_of.insert(name, out.configs.len());
                out.push(config, opts);
                report.warnings.extend(
                    warnings
                        .into_iter()
                        .map(|w| skipped(&format!("TLS options `{name}`"), w)),
                );
            }
            Err(e) => {
                report.broken_options.insert(name.clone(), e.to_string());
            }
        }
    }
    out
}

impl CompiledOptions<'_> {
    fn push(&mut self, config: Arc<ServerConfig>, opts: &dynamic::TlsOptions) {
        self.configs.push(config);
        self.strict.push(opts.sni_strict);
        self.quic.push(options::quic_can_keep(opts));
    }
}

/// The options each TLS router's host asks for, by entry of the compiled
/// configurations; hosts on the default options are left out. Routers
/// asking for different options for one host get the default ones, as in
/// Traefik, with a warning.
fn options_by_host(
    hosts: &[HostOptions],
    index_of: &HashMap<&str, usize>,
    report: &mut TlsReport,
) -> HashMap<String, usize> {
    let mut wanted: BTreeMap<&str, Vec<(usize, &str)>> = BTreeMap::new();
    for use_ in hosts {
        let index = match &use_.options {
            None => 0,
            Some(name) => match index_of.get(name.as_str()) {
                Some(&i) => i,
                // Unknown or broken options: compile disabled the router already.
                None => continue,
            },
        };
        wanted
            .entry(&use_.host)
            .or_default()
            .push((index, &use_.router));
    }
    let mut by_host: HashMap<String, usize> = HashMap::new();
    for (host, uses) in wanted {
        let first = uses[0];
        match uses.iter().find(|(i, _)| *i != first.0) {
            Some(other) => report.warnings.push(Warning::new(
                Notice::TlsOptionsConflict {
                    host: host.to_owned(),
                    first: first.1.to_owned(),
                    other: other.1.to_owned(),
                },
                None,
            )),
            None if first.0 != 0 => {
                by_host.insert(host.to_owned(), first.0);
            }
            None => {}
        }
    }
    by_host
}

/// Names, issuer and validity of the generated default certificate, held
/// only as DER; None if it does not parse, which gangway's own certificate
/// always does.
fn describe_generated(key: &CertifiedKey) -> Option<DefaultCertificate> {
    let (_, parsed) = x509_parser::parse_x509_certificate(key.cert.first()?).ok()?;
    let mut domains = Vec::new();
    if let Ok(Some(san)) = parsed.subject_alternative_name() {
        for name in &san.value.general_names {
            if let x509_parser::extensions::GeneralName::DNSName(dns) = name {
                domains.push(dns.to_ascii_lowercase());
            }
        }
    }
    let validity = parsed.validity();
    Some(DefaultCertificate {
        domains,
        issuer: parsed.issuer().to_string(),
        not_before: validity.not_before.timestamp(),
        not_after: validity.not_after.timestamp(),
        self_signed: true,
        cert_file: None,
    })
}

#[cfg(test)]
mod wildcard_options_tests {
    use super::*;

    #[test]
    fn wildcard_routers_carry_their_tls_options() {
        let by_host: HashMap<String, usize> = [
            ("exact.a.test".to_owned(), 1),
            ("*.a.test".to_owned(), 2),
            ("**.b.test".to_owned(), 3),
            ("**.c.b.test".to_owned(), 4),
        ]
        .into();
        let t = Termination {
            wildcard_hosts: true,
            by_host,
            ..Termination::default()
        };
        assert_eq!(t.options_for("exact.a.test"), Some(1));
        assert_eq!(t.options_for("www.a.test"), Some(2));
        assert_eq!(t.options_for("x.www.a.test"), None, "`*.` is one label");
        assert_eq!(t.options_for("a.test"), None);
        assert_eq!(t.options_for("x.b.test"), Some(3));
        assert_eq!(t.options_for("x.y.b.test"), Some(3));
        assert_eq!(t.options_for("x.c.b.test"), Some(4), "the nearest `**.`");
        assert_eq!(t.options_for("b.test"), None);
        assert_eq!(t.options_for("other.test"), None);
    }
}

#[cfg(test)]
mod suite_name_tests {
    use super::*;

    #[test]
    fn suites_are_named_as_traefik_names_them() {
        let p = provider();
        let named = |name: &str| {
            p.cipher_suites
                .iter()
                .filter(|s| is_suite_named(s, name))
                .count()
        };
        assert_eq!(named("TLS_AES_128_GCM_SHA256"), 1);
        assert_eq!(named("TLS_CHACHA20_POLY1305_SHA256"), 1);
        assert_eq!(named("TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"), 1);
        assert_eq!(named("TLS13_AES_128_GCM_SHA256"), 1, "rustls's own name");
        assert_eq!(named("TLS_RSA_WITH_AES_128_CBC_SHA"), 0);
        assert_eq!(named("AES_128_GCM_SHA256"), 0);
    }
}

#[cfg(test)]
mod served_tests {
    use super::*;

    #[test]
    fn a_name_is_served_the_file_the_resolver_or_the_default_certificate() {
        let state = TlsState::default();
        let generated = state.default_certificate();
        let file_key = Arc::new(store::generate_default());
        let issued_key = Arc::new(store::generate_default());
        let mut cert_store = CertStore::new(generated.clone());
        cert_store.insert(&["app.test".to_owned()], &file_key);
        cert_store.insert(&["*.wild.test".to_owned()], &issued_key);
        let served = ServedCertificates {
            store: Arc::new(cert_store),
            sources: vec![
                (
                    file_key,
                    CertificateSource::File {
                        cert_file: "app.pem".to_owned(),
                    },
                ),
                (
                    issued_key,
                    CertificateSource::Acme {
                        resolver: "le".to_owned(),
                    },
                ),
            ],
            default: describe_generated(&generated).expect("the generated certificate parses"),
            strict: vec![false, true],
        };
        assert_eq!(
            served.source_for("app.test", 0),
            CertificateSource::File {
                cert_file: "app.pem".to_owned()
            }
        );
        let acme = CertificateSource::Acme {
            resolver: "le".to_owned(),
        };
        assert_eq!(served.source_for("x.wild.test", 0), acme);
        // A router's own wildcard host is covered by the wildcard certificate.
        assert_eq!(served.source_for("*.wild.test", 0), acme);
        assert_eq!(
            served.source_for("other.test", 0),
            CertificateSource::Default
        );
        assert_eq!(
            served.source_for("a.b.wild.test", 0),
            CertificateSource::Default
        );
        // Options with sniStrict refuse what no certificate covers.
        assert_eq!(
            served.source_for("other.test", 1),
            CertificateSource::Refused
        );
        assert_eq!(
            served.source_for("app.test", 1),
            served.source_for("app.test", 0)
        );
        assert!(served.default.self_signed);
        assert_eq!(served.default.domains, ["gangway.default.invalid"]);
        assert!(served.default.not_after > served.default.not_before);
    }
}

#[cfg(test)]
mod resumption_tests {
    use super::*;

    /// Every runtime generation's configurations hand out and accept the
    /// same tickets and look in the same session cache: a swap must not
    /// send every returning client back to a full handshake.
    #[test]
    fn generations_share_the_ticketer_and_the_session_cache() {
        let state = TlsState::default();
        let tls = dynamic::Tls::default();
        let (first, _) = compile_termination(&tls, &[], Vec::new(), &state);
        let (second, _) = compile_termination(&tls, &[], Vec::new(), &state);
        let (a, b) = (&first.configs[0], &second.configs[0]);
        assert!(!Arc::ptr_eq(a, b), "a new configuration per generation");
        assert!(a.ticketer.enabled(), "session tickets are on");
        assert!(Arc::ptr_eq(&a.ticketer, &b.ticketer));
        assert!(Arc::ptr_eq(&a.session_storage, &b.session_storage));
    }
}
