//! rustls client configurations for gangway's own TLS connections: to
//! servers (serversTransports, forwardAuth) and to the KV stores it reads.
//! One place decides what `insecureSkipVerify`, root CAs and a client
//! certificate mean, so every client means the same.

use super::ClientError;
use rustls::client::ResolvesClientCert;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::sign::CertifiedKey;
use rustls::version::{TLS12, TLS13};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme, SupportedProtocolVersion};
use std::sync::Arc;

/// What a client accepts of servers and offers them.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClientTls<'a> {
    /// Accept any certificate (no chain or name verification).
    pub insecure_skip_verify: bool,
    /// CAs to trust instead of the built-in roots: PEM file paths or PEM text.
    pub root_cas: &'a [String],
    /// A URI the server certificate's subject alternative names must hold;
    /// checked instead of the server's name (the chain still is).
    pub peer_cert_uri: Option<&'a str>,
    /// Client certificates offered to servers that ask for one (mTLS):
    /// chain and key, each a PEM file path or PEM text. With several, the
    /// one whose chain names a CA the server hints at, else the first.
    pub certificates: &'a [(String, String)],
    /// TLS 1.2 cipher suites offered, by IANA name; empty: all.
    pub cipher_suites: &'a [String],
    /// Lowest version (`VersionTLS12`); None: TLS 1.2.
    pub min_version: Option<&'a str>,
    /// Highest version (`VersionTLS13`); None: TLS 1.3.
    pub max_version: Option<&'a str>,
}

/// The rustls client configuration of a provider's `tls` options (Docker,
/// Swarm, etcd): the CA to trust, the client certificate and its key.
pub fn provider_config(
    tls: &crate::config::static_config::ProviderTls,
) -> Result<rustls::ClientConfig, ClientError> {
    #[deny(unused_variables)] // an option read nowhere fails the build
    let crate::config::static_config::ProviderTls {
        ca,
        cert,
        key,
        insecure_skip_verify,
    } = tls;
    let given = |o: &Option<String>| o.clone().filter(|p| !p.is_empty());
    let root_cas: Vec<String> = given(ca).into_iter().collect();
    let certificates = match (given(cert), given(key)) {
        (Some(cert), Some(key)) => vec![(cert, key)],
        (None, None) => Vec::new(),
        _ => return Err(ClientError::HalfCertificate),
    };
    client_config(&ClientTls {
        insecure_skip_verify: *insecure_skip_verify,
        root_cas: &root_cas,
        peer_cert_uri: None,
        certificates: &certificates,
        ..ClientTls::default()
    })
}

/// The rustls client configuration `settings` describe: which server
/// certificates are accepted, the versions and suites offered, and the
/// client certificates.
pub fn client_config(settings: &ClientTls<'_>) -> Result<rustls::ClientConfig, ClientError> {
    let versions = versions(settings.min_version, settings.max_version)?;
    let mut provider = crate::crypto::provider();
    if !settings.cipher_suites.is_empty() {
        for name in settings.cipher_suites {
            // A TLS 1.3 suite's name is taken, as Traefik takes it, and
            // changes nothing: those are always on.
            let known = provider
                .cipher_suites
                .iter()
                .any(|s| crate::tls::is_suite_named(s, name));
            if !known {
                return Err(ClientError::CipherSuite { name: name.clone() });
            }
        }
        // As in Go: the list picks TLS 1.2 suites; TLS 1.3's are always on.
        provider.cipher_suites.retain(|s| {
            s.version() == &TLS13
                || settings
                    .cipher_suites
                    .iter()
                    .any(|n| n.as_str() == suite_name(s))
        });
    }
    let provider = Arc::new(provider);
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)
        .map_err(|e| ClientError::Setup(Box::new(e)))?;
    let builder = if settings.insecure_skip_verify {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate(provider.clone())))
    } else if let Some(uri) = settings.peer_cert_uri.filter(|u| !u.is_empty()) {
        let roots = Arc::new(root_store(settings.root_cas)?);
        let chain =
            rustls::client::WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
                .build()
                .map_err(|e| ClientError::Setup(Box::new(e)))?;
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(PeerUri {
                chain,
                uri: uri.to_owned(),
            }))
    } else {
        builder.with_root_certificates(root_store(settings.root_cas)?)
    };
    if settings.certificates.is_empty() {
        return Ok(builder.with_no_client_auth());
    }
    let keys = settings
        .certificates
        .iter()
        .map(|(chain, key)| client_key(chain, key, &provider))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(builder.with_client_cert_resolver(Arc::new(ByIssuer { keys })))
}

/// The versions between `min` and `max`, as Traefik names them.
fn versions(
    min: Option<&str>,
    max: Option<&str>,
) -> Result<Vec<&'static SupportedProtocolVersion>, ClientError> {
    let parse = |option: &'static str, value: Option<&str>, default: u8| match value
        .map(str::trim)
        .filter(|v| !v.is_empty())
    {
        None => Ok(default),
        Some("VersionTLS12") => Ok(12),
        Some("VersionTLS13") => Ok(13),
        Some(v @ ("VersionTLS10" | "VersionTLS11")) => Err(ClientError::Version {
            option,
            value: v.to_owned(),
            reason: "is older than TLS 1.2; gangway (rustls) speaks TLS 1.2 and 1.3 only",
        }),
        Some(v) => Err(ClientError::Version {
            option,
            value: v.to_owned(),
            reason: "is not a TLS version (try `VersionTLS12` or `VersionTLS13`)",
        }),
    };
    let lo = parse("minVersion", min, 12)?;
    let hi = parse("maxVersion", max, 13)?;
    if lo > hi {
        return Err(ClientError::VersionRange {
            min: min.unwrap_or_default().to_owned(),
            max: max.unwrap_or_default().to_owned(),
        });
    }
    Ok([(12, &TLS12), (13, &TLS13)]
        .into_iter()
        .filter(|(v, _)| (lo..=hi).contains(v))
        .map(|(_, v)| v)
        .collect())
}

/// A suite's IANA name, as Traefik's `cipherSuites` spell it.
fn suite_name(suite: &rustls::SupportedCipherSuite) -> &'static str {
    suite.suite().as_str().unwrap_or_default()
}

/// One client certificate, its chain's issuers and its signing key.
fn client_key(chain: &str, key: &str, provider: &CryptoProvider) -> Result<ClientKey, ClientError> {
    let chain_pem = pem_text("certificates.certFile", chain)?;
    let key_pem = pem_text("certificates.keyFile", key)?;
    let certs = CertificateDer::pem_slice_iter(&chain_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(ClientError::CertFile)?;
    if certs.is_empty() {
        return Err(ClientError::NoCertificate);
    }
    let issuers = certs
        .iter()
        .filter_map(|c| x509_parser::parse_x509_certificate(c).ok())
        .map(|(_, c)| c.tbs_certificate.issuer.as_raw().to_vec())
        .collect();
    let key =
        rustls::pki_types::PrivateKeyDer::from_pem_slice(&key_pem).map_err(ClientError::KeyFile)?;
    let certified =
        CertifiedKey::from_der(certs, key, provider).map_err(ClientError::ClientCertificate)?;
    Ok(ClientKey {
        issuers,
        key: Arc::new(certified),
    })
}

/// A client certificate with the issuers of its chain, to match a server's
/// hints.
#[derive(Debug)]
struct ClientKey {
    /// DER-encoded issuer names of each certificate of the chain.
    issuers: Vec<Vec<u8>>,
    key: Arc<CertifiedKey>,
}

/// Chooses the client certificate as Go's `tls` does: the first whose chain
/// has a certificate issued by a CA the server names in its request, and
/// that can sign with a scheme the server takes; the first that can sign
/// when the server names no CA or none matches.
#[derive(Debug)]
struct ByIssuer {
    keys: Vec<ClientKey>,
}

impl ResolvesClientCert for ByIssuer {
    fn resolve(
        &self,
        root_hint_subjects: &[&[u8]],
        sigschemes: &[SignatureScheme],
    ) -> Option<Arc<CertifiedKey>> {
        let usable = |k: &&ClientKey| k.key.key.choose_scheme(sigschemes).is_some();
        self.keys
            .iter()
            .filter(usable)
            .find(|k| {
                k.issuers
                    .iter()
                    .any(|i| root_hint_subjects.contains(&i.as_slice()))
            })
            .or_else(|| self.keys.iter().find(usable))
            .map(|k| k.key.clone())
    }

    fn has_certs(&self) -> bool {
        !self.keys.is_empty()
    }
}

/// A PEM file's text, or the PEM text itself when `entry` is one.
fn pem_text(what: &'static str, entry: &str) -> Result<Vec<u8>, ClientError> {
    if entry.contains("-----BEGIN") {
        return Ok(entry.as_bytes().to_vec());
    }
    std::fs::read(entry).map_err(|source| ClientError::Unreadable {
        what,
        entry: entry.to_owned(),
        source,
    })
}

/// The Web PKI's roots (Mozilla's, built in): what an HTTPS client of
/// gangway trusts when its options name no CA.
pub fn web_pki_roots() -> RootCertStore {
    RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    }
}

/// The CAs to trust: the built-in (Mozilla) roots, or, as in Traefik, only
/// the `rootCAs` when some are given.
fn root_store(root_cas: &[String]) -> Result<RootCertStore, ClientError> {
    if root_cas.is_empty() {
        return Ok(web_pki_roots());
    }
    let mut store = RootCertStore::empty();
    for entry in root_cas {
        let (what, pem) = if entry.contains("-----BEGIN") {
            ("inline PEM".to_owned(), entry.as_bytes().to_vec())
        } else {
            let pem = std::fs::read(entry).map_err(|source| ClientError::Unreadable {
                what: "rootCAs",
                entry: entry.clone(),
                source,
            })?;
            (format!("`{entry}`"), pem)
        };
        let mut found = 0;
        for cert in CertificateDer::pem_slice_iter(&pem) {
            let cert = cert.map_err(|e| ClientError::RootCa {
                what: what.clone(),
                source: Box::new(e),
            })?;
            store.add(cert).map_err(|e| ClientError::RootCa {
                what: what.clone(),
                source: Box::new(e),
            })?;
            found += 1;
        }
        if found == 0 {
            return Err(ClientError::NoRootCa { what });
        }
    }
    Ok(store)
}

/// `insecureSkipVerify`: any certificate is accepted, but the handshake
/// signatures are still checked so the connection is at least consistent.
#[derive(Debug)]
struct AcceptAnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `peerCertURI`: the chain is verified as usual, but the name the server
/// must prove is a URI in its certificate (a SPIFFE ID, say), not the
/// host it was reached at.
#[derive(Debug)]
struct PeerUri {
    chain: Arc<rustls::client::WebPkiServerVerifier>,
    uri: String,
}

impl ServerCertVerifier for PeerUri {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        use rustls::CertificateError;
        match self.chain.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Ok(_)
            | Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => {}
            Err(e) => return Err(e),
        }
        let (_, cert) = x509_parser::parse_x509_certificate(end_entity)
            .map_err(|_| rustls::Error::InvalidCertificate(CertificateError::BadEncoding))?;
        let holds = cert
            .subject_alternative_name()
            .ok()
            .flatten()
            .is_some_and(|san| {
                san.value.general_names.iter().any(|name| {
                    matches!(name, x509_parser::extensions::GeneralName::URI(u) if *u == self.uri)
                })
            });
        if holds {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName,
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.chain.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.chain.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.chain.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(
        suites: &[&str],
        min: Option<&str>,
        max: Option<&str>,
    ) -> Result<rustls::ClientConfig, ClientError> {
        let suites: Vec<String> = suites.iter().map(|s| (*s).to_owned()).collect();
        client_config(&ClientTls {
            cipher_suites: &suites,
            min_version: min,
            max_version: max,
            ..ClientTls::default()
        })
    }

    #[test]
    fn versions_and_suites_by_traefiks_names() {
        assert!(config(&[], Some("VersionTLS13"), None).is_ok());
        assert!(config(&["TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"], None, None).is_ok());
        let refused = [
            (
                config(&[], Some("VersionTLS10"), None),
                "older than TLS 1.2",
            ),
            (config(&[], None, Some("TLS1.3")), "not a TLS version"),
            (
                config(&[], Some("VersionTLS13"), Some("VersionTLS12")),
                "above maxVersion",
            ),
            (
                config(&["TLS_RSA_WITH_AES_128_CBC_SHA"], None, None),
                "TLS_RSA_WITH_AES_128_CBC_SHA",
            ),
        ];
        for (got, says) in refused {
            let e = got.expect_err(says).to_string();
            assert!(e.contains(says), "{e}");
        }
    }

    #[test]
    fn only_tls13_suites_stay_when_the_list_names_tls12_ones() {
        let c = config(&["TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"], None, None).expect("config");
        let tls12: Vec<&str> = c
            .crypto_provider()
            .cipher_suites
            .iter()
            .filter(|s| s.version() == &TLS12)
            .map(suite_name)
            .collect();
        assert_eq!(tls12, ["TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"]);
    }
}
