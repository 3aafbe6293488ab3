//! A certificate resolver: its checked configuration, where it keeps its
//! account and certificates (a folder or a shared store), the account it
//! orders with, and the reason the CA cannot be reached when it cannot.

use super::error::ProbeError;
use super::{
    AcmeConfig, AcmeError, ChallengeKind, IssuedCert, Registries, ResolverStorageView,
    STORE_TIMEOUT, SharedStorage, Storage, StorageView, client, dns, schedule, shared, storage,
};
use serde::Serialize;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// Longest wait for the CA while finding out why it cannot be reached.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// Connects to the server of `url` (TCP, then TLS for `https`) with
/// `client`'s trust; `Err` says where that fails.
async fn probe(url: &str, client: &Arc<rustls::ClientConfig>) -> Result<(), ProbeError> {
    let uri: http::Uri = url.parse().map_err(ProbeError::NotUrl)?;
    let host = uri.host().ok_or(ProbeError::NoHost)?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let tls = uri.scheme_str() != Some("http");
    let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
    let timeout = |what: &'static str| ProbeError::Timeout {
        what,
        host: host.to_owned(),
        port,
        after: crate::config::Duration(PROBE_TIMEOUT),
    };
    let tcp = tokio::time::timeout(PROBE_TIMEOUT, tokio::net::TcpStream::connect((host, port)))
        .await
        .map_err(|_| timeout("connecting to"))?
        .map_err(|error| ProbeError::Connect {
            host: host.to_owned(),
            port,
            error,
        })?;
    if !tls {
        return Ok(());
    }
    let name = rustls::pki_types::ServerName::try_from(host.to_owned()).map_err(|error| {
        ProbeError::BadName {
            host: host.to_owned(),
            error,
        }
    })?;
    let connector = tokio_rustls::TlsConnector::from(client.clone());
    tokio::time::timeout(PROBE_TIMEOUT, connector.connect(name, tcp))
        .await
        .map_err(|_| timeout("the TLS handshake with"))?
        .map_err(|error| ProbeError::Handshake {
            host: host.to_owned(),
            port,
            error,
        })?;
    Ok(())
}

/// Where a resolver keeps its account and certificates.
pub(super) enum ResolverStorage {
    /// A folder of this instance.
    File(Storage),
    /// Traefik's `acme.json`, shared by the resolvers that name it.
    Traefik(storage::traefik::AcmeJson),
    /// A store shared with other instances.
    Shared(Arc<SharedStorage>),
}

/// What is known of a shared store's health, for the API and metrics.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StoreHealth {
    /// Whether the last request answered (None before the first).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reachable: Option<bool>,
    /// The last failure, until a request succeeds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// When the store last answered, seconds since the epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_sync: Option<i64>,
    /// How new certificates are noticed: `notifications` (Redis keyspace
    /// notifications), `watch` (etcd) or `polling` (every second).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub follow: Option<&'static str>,
}

/// A certificate resolver ready to order.
pub struct Resolver {
    /// Its name in the static configuration.
    pub name: String,
    /// The ACME directory URL.
    pub directory_url: String,
    pub(super) contact: Vec<String>,
    pub(super) email: String,
    pub(super) storage: ResolverStorage,
    /// This instance in leases and stored certificates: host, process, and
    /// a random part.
    pub(super) instance: String,
    pub(super) health: Mutex<StoreHealth>,
    pub(super) store_up: OnceLock<::metrics::Gauge>,
    pub(super) key_type: super::key::KeyType,
    /// Whether certificate requests carry the first name as common name.
    pub(super) common_name: bool,
    /// Wait between setting up an HTTP-01 or TLS-ALPN-01 answer and asking
    /// the CA to validate.
    pub(super) challenge_delay: Duration,
    /// How long the CA may take to issue once the order is finalized.
    pub(super) certificate_timeout: Duration,
    /// Seconds before expiry when certificates are renewed, from
    /// `certificatesDuration`.
    pub(super) renew_window: i64,
    pub(super) challenge: ChallengeKind,
    /// The DNS-01 side, when `dnsChallenge` is set.
    pub(super) dns: Option<Arc<dns::Solver>>,
    /// The trust the CA's certificate is verified with (for the probe).
    pub(super) client: Arc<rustls::ClientConfig>,
    /// Every exchange with the CA goes through it.
    pub(super) http: client::AcmeHttp,
    /// `eab`: the external account binding, when the CA needs one.
    pub(super) binding: Option<client::Binding>,
    /// `profile`: the profile orders ask for (none: the CA's default).
    pub(super) profile: Option<String>,
    /// `preferredChain`: the issuer's common name of the top certificate
    /// of the chain to serve, when the CA offers several.
    pub(super) preferred_chain: Option<String>,
    /// `emailAddresses`: added to certificate requests as e-mail names.
    pub(super) email_addresses: Vec<String>,
    /// `fallback`: the resolvers tried, in order, after a failed order.
    pub(super) fallback: Vec<String>,
    pub(super) account: tokio::sync::Mutex<Option<Arc<client::Session>>>,
    pub(super) orders: Mutex<schedule::OrderWindow>,
}

impl Resolver {
    /// Checks a resolver's static configuration and prepares its storage
    /// (a storage that cannot be written is logged, not fatal).
    pub fn new(
        name: &str,
        config: &AcmeConfig,
        entry_points: &[String],
    ) -> Result<Self, AcmeError> {
        // Taken apart with no `..`: an option read nowhere is an unused
        // binding and fails the build.
        #[deny(unused_variables)] // an option read nowhere fails the build
        let AcmeConfig {
            email,
            storage,
            storage_encryption_key_file,
            ca_server: _, // read through config.directory_url()
            key_type,
            certificates_duration,
            ca_certificates,
            tls_challenge,
            http_challenge,
            dns_challenge,
            ca_system_cert_pool,
            disable_common_name,
            ca_server_name,
            preferred_chain,
            profile,
            email_addresses,
            eab,
            client_timeout,
            client_response_header_timeout,
            certificate_timeout,
            fallback,
        } = config;
        for option in unsupported(name, config) {
            tracing::warn!(resolver = %name, "{option}");
        }
        let key_type = super::key::KeyType::parse(name, key_type)?;
        let dns = dns_solver(name, dns_challenge.as_ref())?;
        let challenge = ChallengeKind::of(config);
        let challenge_delay = match challenge {
            ChallengeKind::Http01 => http_challenge.as_ref().map(|h| h.delay.0),
            ChallengeKind::TlsAlpn01 => tls_challenge.as_ref().map(|t| t.delay.0),
            ChallengeKind::Dns01 => None,
        }
        .unwrap_or_default();
        if let (ChallengeKind::Http01, Some(http)) = (challenge, http_challenge)
            && !entry_points.contains(&http.entry_point)
        {
            return Err(AcmeError::NoEntryPoint {
                resolver: name.to_owned(),
                entry_point: http.entry_point.clone(),
            });
        }
        let roots = roots(name, ca_certificates, *ca_system_cert_pool)?;
        let client = crate::client::control::trusting(roots)
            .map_err(|e| AcmeError::Order(format!("cannot set up TLS towards the CA: {e}")))?;
        let binding = binding(name, eab.as_ref())?;
        let server_name = server_name(name, ca_server_name)?;
        let http = client::AcmeHttp::new(
            client.clone(),
            server_name,
            client_timeout.0,
            client_response_header_timeout.0,
        );
        let directory_url = config.directory_url().to_owned();
        let storage = open_storage(
            name,
            storage,
            storage_encryption_key_file.as_deref(),
            email,
            &directory_url,
        )?;
        Ok(Resolver {
            name: name.to_owned(),
            storage,
            email: email.clone(),
            instance: instance_name(),
            health: Mutex::new(StoreHealth::default()),
            store_up: OnceLock::new(),
            directory_url,
            contact: if email.is_empty() {
                Vec::new()
            } else {
                vec![format!("mailto:{email}")]
            },
            key_type,
            renew_window: schedule::renew_window(*certificates_duration),
            common_name: !*disable_common_name,
            challenge_delay,
            certificate_timeout: certificate_timeout.0,
            challenge,
            dns,
            client: Arc::new(client),
            http,
            binding,
            profile: Some(profile.clone()).filter(|p| !p.is_empty()),
            preferred_chain: Some(preferred_chain.clone()).filter(|p| !p.is_empty()),
            email_addresses: email_addresses.clone(),
            fallback: fallback.clone(),
            account: tokio::sync::Mutex::new(None),
            orders: Mutex::new(schedule::OrderWindow::default()),
        })
    }

    /// The ACME account: the stored key registered (or found again) once,
    /// then reused. Serialised, so concurrent orders share one account.
    pub(super) async fn account(&self) -> Result<Arc<client::Session>, AcmeError> {
        let mut slot = self.account.lock().await;
        if let Some(account) = slot.as_ref() {
            return Ok(account.clone());
        }
        let key = match &self.storage {
            ResolverStorage::File(storage) => storage.account_key()?,
            ResolverStorage::Traefik(file) => file.account_key(),
            ResolverStorage::Shared(shared) => {
                let key = shared.account_key(&self.email).await;
                self.store_answered(key.as_ref().err());
                key?
            }
        };
        let account = client::Session::open(
            &self.http,
            &self.directory_url,
            &key,
            &self.contact,
            self.binding.as_ref(),
        )
        .await?;
        if let Some(profile) = &self.profile {
            let offered = account.directory.profiles();
            // A CA that lists no profiles is left to answer the order.
            if !offered.is_empty() && !offered.contains(profile) {
                return Err(AcmeError::NoProfile {
                    resolver: self.name.clone(),
                    profile: profile.clone(),
                    offered: offered.join(", "),
                });
            }
        }
        let account = Arc::new(account);
        *slot = Some(account.clone());
        Ok(account)
    }

    /// Why the CA cannot be reached, found out by connecting to it as the
    /// ACME client would: TCP, then TLS with the same trust. Used when an
    /// exchange failed before any answer.
    pub(super) async fn unreachable(&self) -> AcmeError {
        let url = self.directory_url.clone();
        let reason = match probe(&url, &self.client).await {
            Err(reason) => reason,
            Ok(()) => ProbeError::Reachable,
        };
        AcmeError::Unreachable { url, reason }
    }

    /// Forgets the registered account (after a failure the CA may have lost
    /// it, as a restarted test CA does); the key stays.
    pub(super) async fn forget_account(&self) {
        *self.account.lock().await = None;
    }

    /// The challenge this resolver answers.
    pub fn challenge(&self) -> ChallengeKind {
        self.challenge
    }

    /// Loads every stored certificate of this resolver into the registry
    /// (a shared store that does not answer within its timeout is skipped:
    /// its certificates arrive once it answers).
    pub async fn load_stored(&self, registries: &Registries) -> usize {
        let mut loaded = 0;
        match &self.storage {
            ResolverStorage::File(storage) => {
                for (path, bytes) in storage.certificates() {
                    let what = format!("`{}`", path.display());
                    match bytes {
                        Ok(b) => loaded += usize::from(self.serve_stored(registries, &what, &b)),
                        Err(e) => {
                            tracing::warn!(resolver = %self.name, file = %path.display(), error = %e, "stored certificate ignored")
                        }
                    }
                }
            }
            ResolverStorage::Traefik(file) => match file.certificates() {
                Ok(certs) => {
                    for (what, pem) in certs {
                        loaded += usize::from(self.serve_stored(registries, &what, &pem));
                    }
                }
                Err(e) => {
                    tracing::error!(resolver = %self.name, error = %e, "stored certificates cannot be read")
                }
            },
            ResolverStorage::Shared(shared) => {
                let listed = tokio::time::timeout(STORE_TIMEOUT, shared.certificates())
                    .await
                    .unwrap_or_else(|_| Err(self.store_timeout(shared)));
                self.store_answered(listed.as_ref().err());
                match listed {
                    Ok(certs) => {
                        for (key, cert) in certs {
                            match cert {
                                Ok((_, pem)) => {
                                    loaded += usize::from(self.serve_stored(
                                        registries,
                                        &format!("`{key}`"),
                                        &pem,
                                    ));
                                }
                                Err(e) => {
                                    tracing::warn!(resolver = %self.name, error = %e, "stored certificate ignored")
                                }
                            }
                        }
                    }
                    Err(e) => {
                        tracing::error!(resolver = %self.name, error = %e, "the shared store does not answer; its certificates are loaded once it does")
                    }
                }
            }
        }
        loaded
    }

    /// Serves a stored certificate (key and chain PEM) unless the one
    /// served for the same names lasts as long or longer; true if it is
    /// served now.
    pub(super) fn serve_stored(&self, registries: &Registries, what: &str, pem: &[u8]) -> bool {
        match crate::tls::store::parse_pem(what, pem, pem) {
            Ok(cert) => {
                let domains = cert.names.clone();
                let key = crate::tls::certificate_key(&self.name, &domains);
                if registries
                    .tls
                    .issued(&key)
                    .is_some_and(|c| c.cert.not_after >= cert.not_after)
                {
                    return false;
                }
                registries.tls.put_issued(
                    key,
                    Arc::new(IssuedCert {
                        resolver: self.name.clone(),
                        domains,
                        cert,
                    }),
                );
                true
            }
            Err(e) => {
                tracing::warn!(resolver = %self.name, error = %e, "stored certificate ignored");
                false
            }
        }
    }

    /// The shared storage, if this resolver has one.
    pub fn shared(&self) -> Option<&Arc<SharedStorage>> {
        match &self.storage {
            ResolverStorage::Shared(s) => Some(s),
            ResolverStorage::File(_) | ResolverStorage::Traefik(_) => None,
        }
    }

    /// Where the keys of this resolver land in a shared store, with its CA:
    /// two resolvers with the same would write over each other.
    pub fn shared_spot(&self) -> Option<(shared::StoreSpot, String)> {
        let shared = self.shared()?;
        Some((shared.spot(), storage::ca_folder(&self.directory_url)))
    }

    /// Warnings about this resolver's storage, for the API.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(shared) = self.shared()
            && !shared.encrypted()
        {
            out.push(format!(
                "certificatesResolvers.{}.acme: private keys are stored in clear in {}; set storageEncryptionKeyFile to encrypt them",
                self.name,
                shared.location()
            ));
        }
        out
    }

    /// The resolver's storage as the API shows it.
    pub fn storage_view(&self) -> ResolverStorageView {
        ResolverStorageView {
            storage: match &self.storage {
                ResolverStorage::File(s) => StorageView {
                    kind: "file",
                    location: s.folder().display().to_string(),
                    encrypted: None,
                    instance: None,
                    health: None,
                },
                ResolverStorage::Traefik(f) => StorageView {
                    kind: "acme.json",
                    location: f.path().display().to_string(),
                    encrypted: None,
                    instance: None,
                    health: None,
                },
                ResolverStorage::Shared(s) => StorageView {
                    kind: s.kind(),
                    location: s.location(),
                    encrypted: Some(s.encrypted()),
                    instance: Some(self.instance.clone()),
                    health: Some(self.health()),
                },
            },
            warnings: self.warnings(),
        }
    }
}

/// A Traefik ACME option gangway accepts and cannot honour.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("certificatesResolvers.{resolver}.acme.{option} is accepted and not supported: {why}")]
pub struct Unsupported {
    /// The resolver.
    pub resolver: String,
    /// The option below `acme.`.
    pub option: &'static str,
    /// What does not happen, and why.
    pub why: &'static str,
}

/// The options of `config` that are set and that gangway cannot honour.
pub fn unsupported(resolver: &str, config: &AcmeConfig) -> Vec<Unsupported> {
    let mut out = Vec::new();
    let mut not = |set: bool, option: &'static str, why: &'static str| {
        if set {
            out.push(Unsupported {
                resolver: resolver.to_owned(),
                option,
                why,
            });
        }
    };
    not(
        config
            .dns_challenge
            .as_ref()
            .is_some_and(|d| d.propagation.disable_ans_checks),
        "dnsChallenge.propagation.disableANSChecks",
        "the authoritative servers are asked when no resolvers are listed",
    );
    out
}

/// What is wrong with a resolver's `eab` and `caServerName` options (they
/// stop the start), for `gangway check`.
pub fn option_errors(resolver: &str, config: &AcmeConfig) -> Vec<AcmeError> {
    [
        binding(resolver, config.eab.as_ref()).err(),
        server_name(resolver, &config.ca_server_name).err(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The DNS-01 solver of a resolver that answers DNS-01; one whose
/// provider's variables are missing is logged and kept, failing orders.
fn dns_solver(
    name: &str,
    dns_challenge: Option<&crate::config::static_config::DnsChallenge>,
) -> Result<Option<Arc<dns::Solver>>, AcmeError> {
    let Some(d) = dns_challenge else {
        return Ok(None);
    };
    let (solver, not_set_up) = dns::Solver::for_start(name, d, &|v| std::env::var(v).ok())
        .map_err(|e| AcmeError::DnsSetup(Box::new(e)))?;
    if let Some(reason) = not_set_up {
        // Loud, and again with each order that fails on it; the rest of
        // gangway serves meanwhile.
        tracing::error!(resolver = %name, "no certificate can be ordered through this resolver until this is fixed: {reason}");
    }
    Ok(Some(Arc::new(solver)))
}

/// The roots the CA's certificate is verified against: as Traefik,
/// `caCertificates` replace the system's unless `caSystemCertPool` keeps
/// them.
fn roots(
    name: &str,
    ca_certificates: &[std::path::PathBuf],
    ca_system_cert_pool: bool,
) -> Result<rustls::RootCertStore, AcmeError> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let mut roots = if ca_certificates.is_empty() || ca_system_cert_pool {
        crate::client::tls::web_pki_roots()
    } else {
        rustls::RootCertStore::empty()
    };
    for path in ca_certificates {
        let ca_error = |message: String| AcmeError::CaFile {
            resolver: name.to_owned(),
            path: path.clone(),
            message,
        };
        let pem = std::fs::read(path).map_err(|e| ca_error(e.to_string()))?;
        let mut added = 0;
        for cert in CertificateDer::pem_slice_iter(&pem).filter_map(Result::ok) {
            roots.add(cert).map_err(|e| ca_error(e.to_string()))?;
            added += 1;
        }
        if added == 0 {
            return Err(ca_error("no certificate in the file".to_owned()));
        }
    }
    Ok(roots)
}

/// A resolver's storage: a shared store by URL, Traefik's acme.json, or a
/// folder (one that cannot be written is logged, not fatal).
fn open_storage(
    name: &str,
    storage: &std::path::Path,
    storage_encryption_key_file: Option<&std::path::Path>,
    email: &str,
    directory_url: &str,
) -> Result<ResolverStorage, AcmeError> {
    let storage_text = storage.to_string_lossy();
    Ok(if shared::StoreUrl::is_url(&storage_text) {
        let url = shared::StoreUrl::parse(name, &storage_text)?;
        let seal = match storage_encryption_key_file {
            Some(path) => Some(shared::seal::Seal::from_file(name, path)?),
            None => {
                tracing::warn!(resolver = %name, store = %url.location(), "private keys are stored in clear in the shared store: set certificatesResolvers.{name}.acme.storageEncryptionKeyFile to encrypt them");
                None
            }
        };
        let store = url.open(STORE_TIMEOUT).map_err(|e| match e {
            shared::SharedError::BadUrl { url, problem, .. } => shared::SharedError::BadUrl {
                resolver: name.to_owned(),
                url,
                problem,
            },
            e => e,
        })?;
        ResolverStorage::Shared(Arc::new(SharedStorage::new(
            store,
            url,
            &storage::ca_folder(directory_url),
            seal,
        )))
    } else if storage::is_traefik_file(storage) {
        let file = storage::traefik::AcmeJson::open(storage, name, email, directory_url)?;
        let contents = storage::traefik::read(storage, name)?;
        if contents.traefik_account.is_some() && contents.gangway_account.is_none() {
            // The ACME client here signs with P-256 keys only.
            tracing::info!(resolver = %name, file = %storage.display(), "Traefik's account (an RSA key) is kept in the file for a move back; gangway registers its own P-256 account beside it");
        }
        ResolverStorage::Traefik(file)
    } else {
        if storage_encryption_key_file.is_some() {
            tracing::warn!(resolver = %name, "storageEncryptionKeyFile is used only with a store URL as storage; the files of a folder storage are protected by their mode (0600)");
        }
        let storage = Storage::new(storage, directory_url);
        if let Err(e) = storage.prepare() {
            // Not fatal: certificates are then ordered and served from
            // memory, and stored once the storage can be written.
            tracing::error!(resolver = %name, error = %e, "certificate storage cannot be used; certificates are kept in memory until it can");
        }
        ResolverStorage::File(storage)
    })
}

/// What is wrong with the `fallback` lists of `resolvers` (name, its
/// fallback list): names that are no resolver, or the resolver itself.
pub fn fallback_errors(resolvers: &[(&str, &[String])]) -> Vec<AcmeError> {
    let mut out = Vec::new();
    for &(name, fallback) in resolvers {
        for next in fallback {
            let problem = if next == name {
                "is this resolver itself"
            } else if !resolvers.iter().any(|(n, _)| n == next) {
                "is not a certificate resolver"
            } else {
                continue;
            };
            out.push(AcmeError::BadFallback {
                resolver: name.to_owned(),
                fallback: next.clone(),
                problem,
            });
        }
    }
    out
}

/// `caServerName`: the name the CA's certificate is verified for, when set.
fn server_name(
    resolver: &str,
    name: &str,
) -> Result<Option<rustls::pki_types::ServerName<'static>>, AcmeError> {
    if name.is_empty() {
        return Ok(None);
    }
    rustls::pki_types::ServerName::try_from(name.to_owned())
        .map(Some)
        .map_err(|_| AcmeError::BadServerName {
            resolver: resolver.to_owned(),
            name: name.to_owned(),
        })
}

/// The external account binding of `eab`, its HMAC key decoded.
fn binding(
    resolver: &str,
    eab: Option<&crate::config::static_config::Eab>,
) -> Result<Option<client::Binding>, AcmeError> {
    let Some(eab) = eab.filter(|e| !e.kid.is_empty() || !e.hmac_encoded.is_empty()) else {
        return Ok(None);
    };
    if eab.kid.is_empty() || eab.hmac_encoded.is_empty() {
        return Err(AcmeError::HalfBinding {
            resolver: resolver.to_owned(),
        });
    }
    Ok(Some(client::Binding {
        kid: eab.kid.clone(),
        key: decode_hmac(&eab.hmac_encoded).map_err(|error| AcmeError::BadHmac {
            resolver: resolver.to_owned(),
            error,
        })?,
    }))
}

/// An HMAC key as CAs show it: base64url, with or without padding (lego
/// reads it so; some CAs hand out the standard alphabet, also read).
pub fn decode_hmac(text: &str) -> Result<Vec<u8>, base64::DecodeError> {
    use base64::Engine as _;
    use base64::alphabet;
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    let lenient =
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
    let text = text.trim();
    GeneralPurpose::new(&alphabet::URL_SAFE, lenient)
        .decode(text)
        .or_else(|e| {
            GeneralPurpose::new(&alphabet::STANDARD, lenient)
                .decode(text)
                .map_err(|_| e)
        })
}

/// `host/pid/random`: unique among the instances sharing a store.
fn instance_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "gangway".to_owned());
    format!(
        "{host}/{}/{:06x}",
        std::process::id(),
        shared::rand_u64() & 0xff_ffff
    )
}
