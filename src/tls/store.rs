//! The certificate store: certificates by exact name and by wildcard, a
//! default one, and the rustls resolver that picks from it by SNI.

use super::TlsError;
use crate::config::dynamic::CertificateFile;
use rustls::crypto::ring::sign::any_supported_type;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use std::collections::HashMap;
use std::sync::Arc;

/// A certificate chain with its key, and what gangway needs to know of it.
#[derive(Debug, Clone)]
pub struct LoadedCert {
    /// Chain and signing key, ready for rustls.
    pub key: Arc<CertifiedKey>,
    /// The DNS names it is valid for (SANs, else the common name), lowercased.
    pub names: Vec<String>,
    /// Start of validity, seconds since the Unix epoch.
    pub not_before: i64,
    /// End of validity, seconds since the Unix epoch.
    pub not_after: i64,
    /// The issuer's distinguished name.
    pub issuer: String,
    /// What the metrics label it with: subject common name, serial number
    /// and DNS names, as Traefik does.
    pub labels: CertLabels,
}

/// A certificate's labels on `tls_certs_not_after`, as Traefik sets them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CertLabels {
    /// The subject's common name, empty when it has none.
    pub cn: String,
    /// The serial number, in decimal.
    pub serial: String,
    /// The subject alternative names' DNS names, as written, sorted.
    pub sans: Vec<String>,
}

/// Parses a PEM certificate chain (leaf first) and a PEM private key.
/// `what` names the certificate in errors.
pub fn parse_pem(what: &str, chain_pem: &[u8], key_pem: &[u8]) -> Result<LoadedCert, TlsError> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(chain_pem)
        .filter_map(Result::ok)
        .collect();
    let Some(leaf) = chain.first() else {
        return Err(TlsError::NoCertificate {
            what: what.to_owned(),
        });
    };
    let key_der = PrivateKeyDer::from_pem_slice(key_pem).map_err(|_| TlsError::NoKey {
        what: what.to_owned(),
    })?;
    let signing = any_supported_type(&key_der).map_err(|_| TlsError::NoKey {
        what: what.to_owned(),
    })?;
    let (_, parsed) =
        x509_parser::parse_x509_certificate(leaf).map_err(|e| TlsError::BadCertificate {
            what: what.to_owned(),
            message: e.to_string(),
        })?;
    let mut names: Vec<String> = Vec::new();
    let mut sans: Vec<String> = Vec::new();
    if let Ok(Some(san)) = parsed.subject_alternative_name() {
        for name in &san.value.general_names {
            use x509_parser::extensions::GeneralName;
            let name = match name {
                GeneralName::DNSName(dns) => {
                    sans.push((*dns).to_owned());
                    dns.trim_end_matches('.').to_ascii_lowercase()
                }
                // An address certificate (RFC 8738): served to clients
                // that connect to that address without naming a server.
                GeneralName::IPAddress(bytes) => match ip_of(bytes) {
                    Some(ip) => {
                        sans.push(ip.clone());
                        ip
                    }
                    None => continue,
                },
                _ => continue,
            };
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    if names.is_empty() {
        for cn in parsed.subject().iter_common_name() {
            if let Ok(cn) = cn.as_str() {
                names.push(cn.trim_end_matches('.').to_ascii_lowercase());
            }
        }
    }
    let validity = parsed.validity();
    let not_before = validity.not_before.timestamp();
    let not_after = validity.not_after.timestamp();
    let issuer = parsed.issuer().to_string();
    sans.sort();
    let labels = CertLabels {
        cn: parsed
            .subject()
            .iter_common_name()
            .next()
            .and_then(|cn| cn.as_str().ok())
            .unwrap_or_default()
            .to_owned(),
        serial: parsed.tbs_certificate.serial.to_str_radix(10),
        sans,
    };
    let key = CertifiedKey::new(chain, signing);
    // ring cannot tell for every key type; only a definite mismatch is an error.
    if let Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch)) =
        key.keys_match()
    {
        return Err(TlsError::KeyMismatch {
            what: what.to_owned(),
        });
    }
    Ok(LoadedCert {
        key: Arc::new(key),
        names,
        not_before,
        not_after,
        issuer,
        labels,
    })
}

/// The text of an IP address SAN's 4 or 16 bytes.
fn ip_of(bytes: &[u8]) -> Option<String> {
    let ip = match bytes.len() {
        4 => std::net::IpAddr::from(<[u8; 4]>::try_from(bytes).ok()?),
        16 => std::net::IpAddr::from(<[u8; 16]>::try_from(bytes).ok()?),
        _ => return None,
    };
    Some(ip.to_string())
}

/// Reads a configured certificate: `certFile`/`keyFile` are paths, or the
/// PEM text itself, as Traefik accepts.
pub fn load_file(file: &CertificateFile) -> Result<LoadedCert, TlsError> {
    let read = |value: &str| -> Result<Vec<u8>, TlsError> {
        if value.contains("-----BEGIN") {
            return Ok(value.as_bytes().to_vec());
        }
        std::fs::read(value).map_err(|source| TlsError::Read {
            path: value.to_owned(),
            source,
        })
    };
    let chain = read(&file.cert_file)?;
    let key = read(&file.key_file)?;
    let what = if file.cert_file.contains("-----BEGIN") {
        "inline certificate".to_owned()
    } else {
        format!("`{}`", file.cert_file)
    };
    parse_pem(&what, &chain, &key)
}

/// The certificate served when nothing matches: self-signed, ECDSA P-256,
/// named like Traefik's so users recognise it.
pub fn generate_default() -> CertifiedKey {
    let make = || -> Option<CertifiedKey> {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).ok()?;
        let mut params =
            rcgen::CertificateParams::new(vec!["gangway.default.invalid".to_owned()]).ok()?;
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "GANGWAY DEFAULT CERT");
        let cert = params.self_signed(&key).ok()?;
        let der = PrivateKeyDer::Pkcs8(key.serialize_der().into());
        let signing = any_supported_type(&der).ok()?;
        Some(CertifiedKey::new(vec![cert.der().clone()], signing))
    };
    // Generating a P-256 key and signing with it cannot fail with ring.
    make().expect("ring generates and signs a P-256 certificate")
}

/// Runs `f` on `name` lowercased, copying only when it has upper case.
pub(crate) fn with_lowercase<T>(name: &str, f: impl FnOnce(&str) -> T) -> T {
    if name.bytes().any(|b| b.is_ascii_uppercase()) {
        f(&name.to_ascii_lowercase())
    } else {
        f(name)
    }
}

/// Certificates by name. Built once per runtime; read by every handshake.
#[derive(Debug)]
pub struct CertStore {
    exact: HashMap<String, Arc<CertifiedKey>>,
    /// `*.example.com` stored under `example.com`.
    wildcard: HashMap<String, Arc<CertifiedKey>>,
    default: Arc<CertifiedKey>,
}

impl CertStore {
    /// An empty store serving `default` for every name.
    pub fn new(default: Arc<CertifiedKey>) -> Self {
        CertStore {
            exact: HashMap::new(),
            wildcard: HashMap::new(),
            default,
        }
    }

    /// Replaces the default certificate.
    pub fn set_default(&mut self, default: Arc<CertifiedKey>) {
        self.default = default;
    }

    /// Adds `key` under each of `names`; a name already present keeps its
    /// certificate (callers insert in order of preference).
    pub fn insert(&mut self, names: &[String], key: &Arc<CertifiedKey>) {
        for name in names {
            let (map, name) = match name.strip_prefix("*.") {
                Some(parent) => (&mut self.wildcard, parent),
                None => (&mut self.exact, name.as_str()),
            };
            map.entry(name.to_owned()).or_insert_with(|| key.clone());
        }
    }

    /// The certificate for `sni` (lowercase): exact name, then a wildcard
    /// one level up.
    pub fn find(&self, sni: &str) -> Option<&Arc<CertifiedKey>> {
        let sni = sni.strip_suffix('.').unwrap_or(sni);
        if let Some(key) = self.exact.get(sni) {
            return Some(key);
        }
        let (_, parent) = sni.split_once('.')?;
        self.wildcard.get(parent)
    }

    /// The default certificate.
    pub fn default_cert(&self) -> &Arc<CertifiedKey> {
        &self.default
    }
}

/// Serves one certificate whatever the handshake names.
#[derive(Debug)]
pub(crate) struct Fixed(pub(crate) Arc<CertifiedKey>);

impl ResolvesServerCert for Fixed {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.clone())
    }
}

/// Picks the certificate of a handshake from a store by SNI; with
/// `strict`, refuses names it has no certificate for (Traefik's `sniStrict`).
#[derive(Debug)]
pub(crate) struct SniResolver {
    pub(crate) store: Arc<CertStore>,
    pub(crate) strict: bool,
}

impl ResolvesServerCert for SniResolver {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let found = hello
            .server_name()
            .and_then(|name| with_lowercase(name, |n| self.store.find(n).cloned()));
        match found {
            Some(key) => Some(key),
            None if self.strict => None,
            None => Some(self.store.default.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn self_signed(names: &[&str]) -> (String, String) {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let params = rcgen::CertificateParams::new(
            names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>(),
        )
        .unwrap();
        let cert = params.self_signed(&key).unwrap();
        (cert.pem(), key.serialize_pem())
    }

    #[test]
    fn pem_parses_into_names_validity_and_issuer() {
        let (chain, key) = self_signed(&["App.Test", "*.wild.test"]);
        let loaded = parse_pem("t", chain.as_bytes(), key.as_bytes()).unwrap();
        assert_eq!(loaded.names, ["app.test", "*.wild.test"]);
        assert!(loaded.not_after > loaded.not_before);
        assert!(!loaded.issuer.is_empty());
    }

    #[test]
    fn bad_pem_is_an_error_not_a_panic() {
        let (chain, key) = self_signed(&["a.test"]);
        let (_, other_key) = self_signed(&["b.test"]);
        assert!(matches!(
            parse_pem("t", b"garbage", key.as_bytes()),
            Err(TlsError::NoCertificate { .. })
        ));
        assert!(matches!(
            parse_pem("t", chain.as_bytes(), b"nope"),
            Err(TlsError::NoKey { .. })
        ));
        assert!(matches!(
            parse_pem("t", chain.as_bytes(), other_key.as_bytes()),
            Err(TlsError::KeyMismatch { .. })
        ));
    }

    #[test]
    fn store_prefers_exact_then_wildcard_then_default() {
        let default = Arc::new(generate_default());
        let (c1, k1) = self_signed(&["a.test"]);
        let (c2, k2) = self_signed(&["*.test"]);
        let a = parse_pem("a", c1.as_bytes(), k1.as_bytes()).unwrap();
        let w = parse_pem("w", c2.as_bytes(), k2.as_bytes()).unwrap();
        let mut store = CertStore::new(default);
        store.insert(&a.names, &a.key);
        store.insert(&w.names, &w.key);
        assert!(Arc::ptr_eq(store.find("a.test").unwrap(), &a.key));
        assert!(Arc::ptr_eq(store.find("b.test").unwrap(), &w.key));
        assert!(Arc::ptr_eq(store.find("a.test.").unwrap(), &a.key));
        assert!(store.find("x.b.test").is_none());
        assert!(store.find("test").is_none());
    }
}
