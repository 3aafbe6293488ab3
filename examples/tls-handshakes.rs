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
//! another group is an error. Prints the handshakes made and the time
//! they took.

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
    let mut roots = rustls::RootCertStore::empty();
    let pem_error = |e| Failure::Ca(ca.to_owned(), e);
    for cert in CertificateDer::pem_file_iter(ca).map_err(pem_error)? {
        roots.add(cert.map_err(pem_error)?)?;
    }
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_root_certificates(roots)
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
