//! A TLS client for `scripts/bench --handshakes`: makes full TLS 1.3
//! handshakes with a server, one after another, offering a single
//! key-exchange group, so the bench can read what a handshake costs the
//! server with the post-quantum hybrid `X25519MLKEM768` and with plain
//! `X25519`. Each connection is new (no session resumption), sends a
//! close_notify once its handshake is done and is closed.
//!
//! ```sh
//! tls-handshakes ADDRESS SERVER_NAME CA_PEM GROUP COUNT
//! ```
//!
//! `GROUP` is `X25519` or `X25519MLKEM768`; a handshake that settles on
//! another group is an error. The server must present one of the
//! certificates in `CA_PEM` itself (the bench's self-signed one), and its
//! handshake signature is checked as usual. Prints the handshakes made and
//! the time they took.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use std::io::Write;
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Instant;

/// What stops the client.
#[derive(Debug, thiserror::Error)]
enum Failure {
    #[error("COUNT `{0}` is not a number")]
    Count(String),
    #[error("unknown group `{0}`: X25519 or X25519MLKEM768")]
    Group(String),
    #[error("the server settled on {agreed:?}, not {wanted}")]
    Agreed {
        agreed: Option<String>,
        wanted: String,
    },
    #[error("{0}: {1}")]
    Ca(String, rustls::pki_types::pem::Error),
    #[error("server name: {0}")]
    Name(#[from] rustls::pki_types::InvalidDnsNameError),
    #[error("TLS: {0}")]
    Tls(#[from] rustls::Error),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Accepts exactly the certificates it was given (a self-signed one is
/// refused by ordinary path validation as a CA used as an end entity) and
/// checks handshake signatures with the provider's algorithms.
#[derive(Debug)]
struct Pinned {
    certificates: Vec<CertificateDer<'static>>,
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl rustls::client::danger::ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        if self
            .certificates
            .iter()
            .any(|c| c.as_ref() == end_entity.as_ref())
        {
            Ok(rustls::client::danger::ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::UnknownIssuer,
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [address, name, ca, group, count] = args.as_slice() else {
        eprintln!("usage: tls-handshakes ADDRESS SERVER_NAME CA_PEM GROUP COUNT");
        std::process::exit(2);
    };
    if let Err(e) = run(address, name, ca, group, count) {
        eprintln!("tls-handshakes: {e}");
        std::process::exit(1);
    }
}

fn run(address: &str, name: &str, ca: &str, group: &str, count: &str) -> Result<(), Failure> {
    let count: u32 = count
        .parse()
        .map_err(|_| Failure::Count(count.to_owned()))?;
    let mut provider = gangway::crypto::provider();
    provider
        .kx_groups
        .retain(|g| format!("{:?}", g.name()) == group);
    if provider.kx_groups.is_empty() {
        return Err(Failure::Group(group.to_owned()));
    }
    let pem_error = |e| Failure::Ca(ca.to_owned(), e);
    let pinned = CertificateDer::pem_file_iter(ca)
        .map_err(pem_error)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(pem_error)?;
    let provider = Arc::new(provider);
    let verifier = Arc::new(Pinned {
        certificates: pinned,
        provider: provider.clone(),
    });
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    config.resumption = rustls::client::Resumption::disabled();
    let config = Arc::new(config);
    let server = ServerName::try_from(name.to_owned())?;
    let started = Instant::now();
    for _ in 0..count {
        let mut conn = rustls::ClientConnection::new(config.clone(), server.clone())?;
        let mut tcp = TcpStream::connect(address)?;
        tcp.set_nodelay(true)?;
        while conn.is_handshaking() {
            conn.complete_io(&mut tcp)?;
        }
        let agreed = conn
            .negotiated_key_exchange_group()
            .map(|g| format!("{:?}", g.name()));
        if agreed.as_deref() != Some(group) {
            return Err(Failure::Agreed {
                agreed,
                wanted: group.to_owned(),
            });
        }
        conn.send_close_notify();
        conn.complete_io(&mut tcp)?;
        tcp.flush()?;
    }
    println!(
        "{count} handshakes with {group} in {:.3} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
