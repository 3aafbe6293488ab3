//! A Rust TLS client for tests (tokio-rustls + hyper's client connections),
//! over HTTP/2 or HTTP/1.1, that reports the certificate it was shown.

use bytes::Bytes;
use http::{Request, StatusCode, Version};
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use std::sync::Arc;

/// What one HTTPS request saw.
#[derive(Debug)]
pub struct TlsGot {
    pub status: StatusCode,
    pub version: Version,
    pub alpn: Option<Vec<u8>>,
    pub headers: http::HeaderMap,
    pub body: Bytes,
    /// The leaf certificate the server presented.
    pub leaf: CertificateDer<'static>,
}

impl TlsGot {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The leaf's DNS names.
    pub fn names(&self) -> Vec<String> {
        names_of(&self.leaf)
    }

    /// The leaf's common name.
    pub fn common_name(&self) -> String {
        let (_, cert) = x509_parser::parse_x509_certificate(&self.leaf).expect("x509");
        cert.subject()
            .iter_common_name()
            .next()
            .and_then(|cn| cn.as_str().ok())
            .unwrap_or_default()
            .to_owned()
    }

    /// The leaf's not-after, seconds since the epoch.
    pub fn not_after(&self) -> i64 {
        let (_, cert) = x509_parser::parse_x509_certificate(&self.leaf).expect("x509");
        cert.validity().not_after.timestamp()
    }

    /// The leaf's serial number, hex.
    pub fn serial(&self) -> String {
        let (_, cert) = x509_parser::parse_x509_certificate(&self.leaf).expect("x509");
        cert.raw_serial_as_string()
    }
}

pub fn names_of(leaf: &CertificateDer<'_>) -> Vec<String> {
    let (_, cert) = x509_parser::parse_x509_certificate(leaf).expect("x509");
    let mut out = Vec::new();
    if let Ok(Some(san)) = cert.subject_alternative_name() {
        for n in &san.value.general_names {
            if let x509_parser::extensions::GeneralName::DNSName(d) = n {
                out.push((*d).to_owned());
            }
        }
    }
    out
}

/// How the client checks the server.
#[derive(Clone)]
pub enum Trust {
    /// Verify the chain against these PEM roots and the name against the SNI.
    Roots(Vec<u8>),
    /// Accept any certificate (to look at the default one).
    Anything,
}

/// The TLS settings of one request.
#[derive(Clone)]
pub struct TlsClient {
    pub trust: Trust,
    /// Offer only TLS 1.2.
    pub tls12_only: bool,
    /// Offer the protocol in ALPN (`h2` or `http/1.1`); without it the
    /// server must tell from the first bytes.
    pub offer_alpn: bool,
}

impl TlsClient {
    pub fn trusting(root_pem: &[u8]) -> Self {
        TlsClient {
            trust: Trust::Roots(root_pem.to_vec()),
            tls12_only: false,
            offer_alpn: true,
        }
    }

    pub fn insecure() -> Self {
        TlsClient {
            trust: Trust::Anything,
            tls12_only: false,
            offer_alpn: true,
        }
    }

    /// The client's rustls configuration, offering `alpn` when it offers any.
    pub fn config(&self, alpn: &[u8]) -> rustls::ClientConfig {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let versions: &[&rustls::SupportedProtocolVersion] = if self.tls12_only {
            &[&rustls::version::TLS12]
        } else {
            &[&rustls::version::TLS12, &rustls::version::TLS13]
        };
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(versions)
            .expect("versions");
        let mut config = match &self.trust {
            Trust::Roots(pem) => {
                let mut roots = rustls::RootCertStore::empty();
                for cert in CertificateDer::pem_slice_iter(pem) {
                    roots.add(cert.expect("root pem")).expect("root");
                }
                builder.with_root_certificates(roots).with_no_client_auth()
            }
            Trust::Anything => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AcceptAll(provider)))
                .with_no_client_auth(),
        };
        if self.offer_alpn {
            config.alpn_protocols = vec![alpn.to_vec()];
        }
        config
    }

    /// A TLS connection to 127.0.0.1:`port` asking for `sni`, offering
    /// `alpn` (nothing when empty), for protocols other than HTTP.
    pub async fn connect(
        &self,
        port: u16,
        sni: &str,
        alpn: &[u8],
    ) -> Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>, String> {
        let mut config = self.config(alpn);
        if alpn.is_empty() {
            config.alpn_protocols.clear();
        }
        let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
        let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .map_err(|e| format!("connect: {e}"))?;
        let name = ServerName::try_from(sni.to_owned()).map_err(|e| e.to_string())?;
        connector
            .connect(name, tcp)
            .await
            .map_err(|e| format!("handshake: {e}"))
    }

    /// GET `https://<sni>:<port><path>` sent to 127.0.0.1, with `host` as
    /// the request's host (`None`: the SNI). HTTP/2 when `h2`, else HTTP/1.1.
    pub async fn get(
        &self,
        port: u16,
        sni: &str,
        host: Option<&str>,
        path: &str,
        h2: bool,
    ) -> Result<TlsGot, String> {
        let alpn: &[u8] = if h2 { b"h2" } else { b"http/1.1" };
        let connector = tokio_rustls::TlsConnector::from(Arc::new(self.config(alpn)));
        let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .map_err(|e| format!("connect: {e}"))?;
        let name = ServerName::try_from(sni.to_owned()).map_err(|e| e.to_string())?;
        let tls = connector
            .connect(name, tcp)
            .await
            .map_err(|e| format!("handshake: {e}"))?;
        let (_, session) = tls.get_ref();
        let leaf = session
            .peer_certificates()
            .and_then(|c| c.first())
            .cloned()
            .ok_or("no certificate")?
            .into_owned();
        let alpn = session.alpn_protocol().map(<[u8]>::to_vec);
        let host = host.unwrap_or(sni);
        let io = TokioIo::new(tls);
        let resp = if h2 {
            let (mut send, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
                .await
                .map_err(|e| format!("h2: {e}"))?;
            tokio::spawn(conn);
            let req = Request::get(format!("https://{host}{path}"))
                .version(Version::HTTP_2)
                .body(Empty::<Bytes>::new())
                .unwrap();
            send.send_request(req)
                .await
                .map_err(|e| format!("h2 request: {e}"))?
        } else {
            let (mut send, conn) = hyper::client::conn::http1::handshake(io)
                .await
                .map_err(|e| format!("http1: {e}"))?;
            tokio::spawn(conn);
            let req = Request::get(path)
                .header("host", host)
                .body(Empty::<Bytes>::new())
                .unwrap();
            send.send_request(req)
                .await
                .map_err(|e| format!("http1 request: {e}"))?
        };
        let (parts, body) = resp.into_parts();
        let body = body
            .collect()
            .await
            .map_err(|e| format!("body: {e}"))?
            .to_bytes();
        Ok(TlsGot {
            status: parts.status,
            version: parts.version,
            alpn,
            headers: parts.headers,
            body,
            leaf,
        })
    }
}

#[derive(Debug)]
struct AcceptAll(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AcceptAll {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
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
            &self.0.signature_verification_algorithms,
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
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// A CA and certificates it signs, for tests that bring their own files.
pub struct TestCa {
    cert: rcgen::Certificate,
    key: rcgen::KeyPair,
}

impl TestCa {
    pub fn new(name: &str) -> TestCa {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
        ];
        let cert = params.self_signed(&key).unwrap();
        TestCa { cert, key }
    }

    pub fn pem(&self) -> String {
        self.cert.pem()
    }

    /// A server certificate for `names` (DNS names or IPs): (chain PEM, key PEM).
    pub fn issue(&self, names: &[&str]) -> (String, String) {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let mut params = rcgen::CertificateParams::new(
            names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>(),
        )
        .unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, names[0]);
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        let cert = params.signed_by(&key, &self.cert, &self.key).unwrap();
        (cert.pem(), key.serialize_pem())
    }

    /// A client certificate named `name`, for servers that ask for one:
    /// (chain PEM, key PEM).
    pub fn issue_client(&self, name: &str) -> (String, String) {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        let cert = params.signed_by(&key, &self.cert, &self.key).unwrap();
        (cert.pem(), key.serialize_pem())
    }
}
