//! rustls client configurations for gangway's own TLS connections: to
//! servers (serversTransports, forwardAuth) and to the KV stores it reads.
//! One place decides what `insecureSkipVerify`, root CAs and a client
//! certificate mean, so every client means the same.

use super::ClientError;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};
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
    /// chain and key, each a PEM file path or PEM text. At most one.
    pub certificates: &'a [(String, String)],
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
    })
}

/// The rustls client configuration `settings` describe: which server
/// certificates are accepted, and the client certificate offered.
pub fn client_config(settings: &ClientTls<'_>) -> Result<rustls::ClientConfig, ClientError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| ClientError::Setup(Box::new(e)))?;
    let builder = if settings.insecure_skip_verify {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate(provider)))
    } else if let Some(uri) = settings.peer_cert_uri.filter(|u| !u.is_empty()) {
        let roots = Arc::new(root_store(settings.root_cas)?);
        let chain = rustls::client::WebPkiServerVerifier::builder_with_provider(roots, provider)
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
    let config = match settings.certificates {
        [] => builder.with_no_client_auth(),
        [(chain, key)] => {
            let chain_pem = pem_text("certificates.certFile", chain)?;
            let key_pem = pem_text("certificates.keyFile", key)?;
            let certs = CertificateDer::pem_slice_iter(&chain_pem)
                .collect::<Result<Vec<_>, _>>()
                .map_err(ClientError::CertFile)?;
            if certs.is_empty() {
                return Err(ClientError::NoCertificate);
            }
            let key = rustls::pki_types::PrivateKeyDer::from_pem_slice(&key_pem)
                .map_err(ClientError::KeyFile)?;
            builder
                .with_client_auth_cert(certs, key)
                .map_err(ClientError::ClientCertificate)?
        }
        _ => {
            return Err(ClientError::SeveralCertificates);
        }
    };
    Ok(config)
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

/// The CAs to trust: the built-in (Mozilla) roots, or, as in Traefik, only
/// the `rootCAs` when some are given.
fn root_store(root_cas: &[String]) -> Result<RootCertStore, ClientError> {
    if root_cas.is_empty() {
        return Ok(RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        });
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
