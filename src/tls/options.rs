//! Traefik's `tls.options` compiled into rustls server configurations.

use super::TlsError;
use super::store::{CertStore, SniResolver};
use crate::config::dynamic::TlsOptions;
use rustls::crypto::SupportedKxGroup;
use rustls::server::{
    ProducesTickets, ServerSessionMemoryCache, StoresServerSessions, WebPkiClientVerifier,
};
use rustls::version::{TLS12, TLS13};
use rustls::{NamedGroup, RootCertStore, ServerConfig, SupportedProtocolVersion};
use std::sync::Arc;

/// How returning clients skip the full handshake: a server-side session
/// cache (TLS 1.2 session IDs) and encrypted session tickets (TLS 1.3, and
/// TLS 1.2 clients that ask for them). Made once per process and given to
/// every compiled configuration, so a runtime swap neither empties the
/// cache nor changes the ticket keys, which would turn every returning
/// client's handshake into a full one.
#[derive(Clone)]
pub struct Resumption {
    sessions: Arc<dyn StoresServerSessions>,
    /// rustls' rotating ticketer: a new key every six hours, the previous
    /// one still accepted for the next period. None when the system's
    /// random source failed at start-up; the cache alone then resumes.
    tickets: Option<Arc<dyn ProducesTickets>>,
}

impl Resumption {
    /// A session cache of `cache_size` entries and a ticketer.
    pub fn new(cache_size: usize) -> Self {
        let tickets = match rustls::crypto::ring::Ticketer::new() {
            Ok(t) => Some(t),
            Err(e) => {
                tracing::warn!(error = %e, "TLS session tickets are off");
                None
            }
        };
        Resumption {
            sessions: ServerSessionMemoryCache::new(cache_size),
            tickets,
        }
    }

    /// Puts the shared cache, and the ticketer unless `tickets` is false,
    /// on `config`. Without tickets no TLS 1.3 ticket is sent either (rustls
    /// would otherwise send ones that name cache entries), as Go does with
    /// `SessionTicketsDisabled`.
    fn apply(&self, config: &mut ServerConfig, tickets: bool) {
        config.session_storage = self.sessions.clone();
        match &self.tickets {
            Some(t) if tickets => config.ticketer = t.clone(),
            _ if !tickets => config.send_tls13_tickets = 0,
            _ => {}
        }
    }
}

/// Traefik's `RequestClientCert` and `RequireAnyClientCert`: a client
/// certificate is asked for (with no CA hinted), required or not, and taken
/// without any check of its chain, names or dates, as Go's `tls` does for
/// these two types. The client still proves it holds the certificate's key:
/// its handshake signature is verified against the certificate.
#[derive(Debug)]
struct AnyClientCert {
    /// A certificate is required (`RequireAnyClientCert`).
    mandatory: bool,
    /// The signature algorithms of the crypto provider.
    algorithms: rustls::crypto::WebPkiSupportedAlgorithms,
}

impl rustls::server::danger::ClientCertVerifier for AnyClientCert {
    fn client_auth_mandatory(&self) -> bool {
        self.mandatory
    }

    fn root_hint_subjects(&self) -> &[rustls::DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::server::danger::ClientCertVerified, rustls::Error> {
        Ok(rustls::server::danger::ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// Builds the server configuration for one set of options, serving
/// certificates from `store`. Returns warnings for settings that were
/// skipped (cipher suites or curves rustls does not implement).
pub fn compile_options(
    opts: &TlsOptions,
    store: &Arc<CertStore>,
    resumption: &Resumption,
) -> Result<(Arc<ServerConfig>, Vec<String>), TlsError> {
    let mut warnings = Vec::new();
    let mut min = parse_version(opts.min_version.as_deref().unwrap_or("VersionTLS12"))?;
    if min < 12 {
        // Traefik would accept TLS 1.0 and 1.1 clients; rustls has neither,
        // so 1.2 is the floor and the option still serves its routers.
        warnings.push(format!(
            "minVersion {}: TLS 1.0 and 1.1 are not served; TLS 1.2 is the lowest",
            opts.min_version.as_deref().unwrap_or_default()
        ));
        min = 12;
    }
    let max = parse_version(opts.max_version.as_deref().unwrap_or("VersionTLS13"))?;
    if min > max {
        return Err(TlsError::VersionRange);
    }
    let versions: Vec<&'static SupportedProtocolVersion> = [(12, &TLS12), (13, &TLS13)]
        .into_iter()
        .filter(|(v, _)| (min..=max).contains(v))
        .map(|(_, v)| v)
        .collect();

    let mut provider = super::provider();
    if !opts.cipher_suites.is_empty() {
        // As in Go (and so Traefik), the list selects TLS 1.2 suites; TLS 1.3
        // suites are always on.
        let mut unknown = Vec::new();
        for name in &opts.cipher_suites {
            let known = provider
                .cipher_suites
                .iter()
                .any(|s| crate::tls::is_suite_named(s, name));
            if !known {
                unknown.push(name.as_str());
            }
        }
        provider.cipher_suites.retain(|s| {
            s.version() == &TLS13
                || opts
                    .cipher_suites
                    .iter()
                    .any(|n| *n == format!("{:?}", s.suite()))
        });
        if !unknown.is_empty() {
            warnings.push(format!(
                "cipher suites not supported and skipped: {}",
                unknown.join(", ")
            ));
        }
        let has_tls12 = provider.cipher_suites.iter().any(|s| s.version() == &TLS12);
        if min == 12 && !has_tls12 {
            return Err(TlsError::NoCipherSuite(opts.cipher_suites.join(", ")));
        }
    }
    if !opts.curve_preferences.is_empty() {
        let all = std::mem::take(&mut provider.kx_groups);
        provider.kx_groups = choose_curves(&opts.curve_preferences, all, &mut warnings)?;
    }
    let provider = Arc::new(provider);

    let builder =
        ServerConfig::builder_with_provider(provider.clone()).with_protocol_versions(&versions)?;
    let client_auth = opts.client_auth.clone().unwrap_or_default();
    let kind =
        client_auth
            .client_auth_type
            .as_deref()
            .unwrap_or(if client_auth.ca_files.is_empty() {
                "NoClientCert"
            } else {
                "RequireAndVerifyClientCert"
            });
    let resolver = Arc::new(SniResolver {
        store: store.clone(),
        strict: opts.sni_strict,
    });
    let mut config = match kind {
        "NoClientCert" => builder.with_no_client_auth().with_cert_resolver(resolver),
        "VerifyClientCertIfGiven" | "RequireAndVerifyClientCert" => {
            let roots = client_roots(&client_auth.ca_files)?;
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            let verifier = if kind == "VerifyClientCertIfGiven" {
                verifier.allow_unauthenticated()
            } else {
                verifier
            };
            let verifier = verifier
                .build()
                .map_err(|e| TlsError::ClientAuth(e.to_string()))?;
            builder
                .with_client_cert_verifier(verifier)
                .with_cert_resolver(resolver)
        }
        "RequestClientCert" | "RequireAnyClientCert" => builder
            .with_client_cert_verifier(Arc::new(AnyClientCert {
                mandatory: kind == "RequireAnyClientCert",
                algorithms: provider.signature_verification_algorithms,
            }))
            .with_cert_resolver(resolver),
        other => return Err(TlsError::ClientAuthType(other.to_owned())),
    };
    config.alpn_protocols = if opts.alpn_protocols.is_empty() {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    } else {
        opts.alpn_protocols
            .iter()
            // acme-tls/1 is answered by the challenge configuration only.
            .filter(|p| p.as_bytes() != super::ACME_TLS_ALPN)
            .map(|p| p.as_bytes().to_vec())
            .collect()
    };
    config.ignore_client_order = opts.prefer_server_cipher_suites;
    resumption.apply(&mut config, !opts.disable_session_tickets);
    Ok((Arc::new(config), warnings))
}

/// The key-exchange groups `names` (`curvePreferences`) choose among `all`,
/// in their order. A curve the crypto provider lacks is skipped with a
/// warning, as Traefik would serve it; none left gives `all` back.
fn choose_curves(
    names: &[String],
    all: Vec<&'static dyn SupportedKxGroup>,
    warnings: &mut Vec<String>,
) -> Result<Vec<&'static dyn SupportedKxGroup>, TlsError> {
    let mut chosen: Vec<&'static dyn SupportedKxGroup> = Vec::new();
    for name in names {
        // Traefik's names (Go's constants and the IANA ones).
        let wanted = match name.trim() {
            "X25519MLKEM768" | "x25519mlkem768" => NamedGroup::X25519MLKEM768,
            "X25519" | "x25519" => NamedGroup::X25519,
            "CurveP256" | "secp256r1" => NamedGroup::secp256r1,
            "CurveP384" | "secp384r1" => NamedGroup::secp384r1,
            "CurveP521" | "secp521r1" => NamedGroup::secp521r1,
            _ => {
                return Err(TlsError::Curve {
                    name: name.clone(),
                    reason: "is not a curve Traefik names (X25519MLKEM768, X25519, CurveP256, CurveP384, CurveP521)",
                });
            }
        };
        match all.iter().find(|g| g.name() == wanted) {
            Some(group) if !chosen.iter().any(|c| c.name() == wanted) => chosen.push(*group),
            Some(_) => {}
            // Traefik serves it; a curve the crypto provider lacks is
            // left out rather than taking the option's routers down.
            None => warnings.push(format!(
                "curvePreferences: {name} is not implemented by the crypto provider and is skipped"
            )),
        }
    }
    if chosen.is_empty() {
        warnings.push(String::from(
            "curvePreferences: no curve listed is implemented; the default curves are used",
        ));
        chosen = all;
    }
    Ok(chosen)
}

/// Whether a QUIC handshake can keep these options: QUIC speaks TLS 1.3
/// only, and gangway's QUIC side asks for no client certificate.
pub fn quic_can_keep(opts: &TlsOptions) -> bool {
    let tls13 = parse_version(opts.max_version.as_deref().unwrap_or("VersionTLS13"))
        .is_ok_and(|max| max >= 13);
    let client_auth = opts.client_auth.as_ref().is_some_and(|auth| {
        auth.client_auth_type
            .as_deref()
            .map_or(!auth.ca_files.is_empty(), |kind| kind != "NoClientCert")
    });
    tls13 && !client_auth
}

fn parse_version(name: &str) -> Result<u8, TlsError> {
    match name {
        "VersionTLS10" => Ok(10),
        "VersionTLS11" => Ok(11),
        "VersionTLS12" => Ok(12),
        "VersionTLS13" => Ok(13),
        other => Err(TlsError::Version(other.to_owned())),
    }
}

fn client_roots(files: &[String]) -> Result<RootCertStore, TlsError> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    if files.is_empty() {
        return Err(TlsError::ClientAuth(
            "caFiles is empty; list the CAs client certificates must chain to".to_owned(),
        ));
    }
    let mut roots = RootCertStore::empty();
    for file in files {
        let pem = if file.contains("-----BEGIN") {
            file.as_bytes().to_vec()
        } else {
            std::fs::read(file).map_err(|source| TlsError::Read {
                path: file.clone(),
                source,
            })?
        };
        for cert in CertificateDer::pem_slice_iter(&pem).filter_map(Result::ok) {
            roots
                .add(cert)
                .map_err(|e| TlsError::ClientAuth(format!("`{file}`: {e}")))?;
        }
    }
    if roots.is_empty() {
        return Err(TlsError::ClientAuth(
            "no CA certificate found in caFiles".to_owned(),
        ));
    }
    Ok(roots)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compile(opts: &TlsOptions) -> Result<(Arc<ServerConfig>, Vec<String>), TlsError> {
        let store = Arc::new(CertStore::new(Arc::new(
            super::super::store::generate_default(),
        )));
        compile_options(opts, &store, &Resumption::new(8))
    }

    #[test]
    fn defaults_offer_h2_and_http11_on_tls12_and_13() {
        let (config, warnings) = compile(&TlsOptions::default()).unwrap();
        assert!(config.ticketer.enabled(), "session tickets are on");
        assert_eq!(
            config.alpn_protocols,
            [b"h2".to_vec(), b"http/1.1".to_vec()]
        );
        assert!(warnings.is_empty());
    }

    #[test]
    fn curve_preferences_take_traefiks_names_and_refuse_p521_saying_why() {
        let curves = |names: &[&str]| TlsOptions {
            curve_preferences: names.iter().map(|n| (*n).to_owned()).collect(),
            ..TlsOptions::default()
        };
        let (config, _) = compile(&TlsOptions::default()).unwrap();
        let groups: Vec<NamedGroup> = config
            .crypto_provider()
            .kx_groups
            .iter()
            .map(|g| g.name())
            .collect();
        assert_eq!(
            groups[..2],
            [NamedGroup::X25519MLKEM768, NamedGroup::X25519]
        );
        let (config, _) = compile(&curves(&["CurveP384", "X25519MLKEM768", "secp256r1"])).unwrap();
        let groups: Vec<NamedGroup> = config
            .crypto_provider()
            .kx_groups
            .iter()
            .map(|g| g.name())
            .collect();
        assert_eq!(
            groups,
            [
                NamedGroup::secp384r1,
                NamedGroup::X25519MLKEM768,
                NamedGroup::secp256r1
            ]
        );
        let Err(e) = compile(&curves(&["X25519", "P999"])) else {
            panic!("P999 taken");
        };
        assert!(e.to_string().contains("not a curve"), "{e}");
        // A curve Traefik names that the crypto provider lacks is skipped
        // with a warning; the option still serves.
        let has_p521 = crate::tls::provider()
            .kx_groups
            .iter()
            .any(|g| g.name() == NamedGroup::secp521r1);
        let (config, warnings) = compile(&curves(&["CurveP521", "X25519"])).unwrap();
        let groups: Vec<NamedGroup> = config
            .crypto_provider()
            .kx_groups
            .iter()
            .map(|g| g.name())
            .collect();
        if has_p521 {
            assert_eq!(groups, [NamedGroup::secp521r1, NamedGroup::X25519]);
        } else {
            assert_eq!(groups, [NamedGroup::X25519]);
            assert!(
                warnings.iter().any(|w| w.contains("CurveP521")),
                "{warnings:?}"
            );
        }
    }

    #[test]
    fn disabled_session_tickets_send_none() {
        let opts = TlsOptions {
            disable_session_tickets: true,
            ..TlsOptions::default()
        };
        let (config, _) = compile(&opts).unwrap();
        assert!(!config.ticketer.enabled());
        assert_eq!(config.send_tls13_tickets, 0);
        let (config, _) = compile(&TlsOptions::default()).unwrap();
        assert!(config.send_tls13_tickets > 0);
    }

    #[test]
    fn versions_and_suites_are_checked() {
        let opts = |min: &str, max: &str| TlsOptions {
            min_version: Some(min.to_owned()),
            max_version: Some(max.to_owned()),
            ..TlsOptions::default()
        };
        assert!(compile(&opts("VersionTLS13", "VersionTLS13")).is_ok());
        assert!(matches!(
            compile(&opts("VersionTLS13", "VersionTLS12")),
            Err(TlsError::VersionRange)
        ));
        // TLS 1.0 and 1.1 are not served: 1.2 is the floor, with a warning.
        let (config, warnings) = compile(&opts("VersionTLS10", "VersionTLS13")).unwrap();
        assert_eq!(config.alpn_protocols.len(), 2);
        assert!(
            warnings.iter().any(|w| w.contains("VersionTLS10")),
            "{warnings:?}"
        );
        assert!(matches!(
            compile(&opts("VersionTLS1", "VersionTLS13")),
            Err(TlsError::Version(_))
        ));
        let suites = TlsOptions {
            cipher_suites: vec![
                "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256".to_owned(),
                "TLS_RSA_WITH_AES_128_CBC_SHA".to_owned(),
            ],
            ..TlsOptions::default()
        };
        let (_, warnings) = compile(&suites).unwrap();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        let none = TlsOptions {
            cipher_suites: vec!["TLS_RSA_WITH_AES_128_CBC_SHA".to_owned()],
            ..TlsOptions::default()
        };
        assert!(matches!(compile(&none), Err(TlsError::NoCipherSuite(_))));
    }

    #[test]
    fn quic_keeps_options_without_client_certificates_that_allow_tls13() {
        assert!(quic_can_keep(&TlsOptions::default()));
        let max12 = TlsOptions {
            max_version: Some("VersionTLS12".to_owned()),
            ..TlsOptions::default()
        };
        assert!(!quic_can_keep(&max12));
        let auth = |kind: Option<&str>, files: Vec<String>| TlsOptions {
            client_auth: Some(crate::config::dynamic::ClientAuth {
                ca_files: files,
                client_auth_type: kind.map(str::to_owned),
            }),
            ..TlsOptions::default()
        };
        assert!(quic_can_keep(&auth(Some("NoClientCert"), vec![])));
        assert!(quic_can_keep(&auth(None, vec![])));
        assert!(!quic_can_keep(&auth(None, vec!["ca.pem".to_owned()])));
        assert!(!quic_can_keep(&auth(
            Some("VerifyClientCertIfGiven"),
            vec![]
        )));
        assert!(!quic_can_keep(&auth(
            Some("RequireAndVerifyClientCert"),
            vec!["ca.pem".to_owned()]
        )));
    }

    #[test]
    fn client_auth_needs_known_type_and_cas() {
        let auth = |kind: &str, files: Vec<String>| TlsOptions {
            client_auth: Some(crate::config::dynamic::ClientAuth {
                ca_files: files,
                client_auth_type: Some(kind.to_owned()),
            }),
            ..TlsOptions::default()
        };
        assert!(compile(&auth("NoClientCert", vec![])).is_ok());
        assert!(matches!(
            compile(&auth("RequireAndVerifyClientCert", vec![])),
            Err(TlsError::ClientAuth(_))
        ));
        // Asked for without a CA: none is needed.
        for kind in ["RequestClientCert", "RequireAnyClientCert"] {
            assert!(compile(&auth(kind, vec![])).is_ok(), "{kind}");
        }
        assert!(matches!(
            compile(&auth("RequireSomething", vec![])),
            Err(TlsError::ClientAuthType(_))
        ));
        let ca = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let pem = params.self_signed(&ca).unwrap().pem();
        assert!(compile(&auth("RequireAndVerifyClientCert", vec![pem])).is_ok());
    }
}
