//! Certificate keys: the `keyType` values Traefik knows, and making a key
//! of each. ECDSA keys come from ring; ring cannot make RSA keys (it only
//! signs with them), so those primes are found by the `rsa` crate, on a
//! blocking thread, and the key is then handed to rcgen (and ring) as
//! PKCS#8.

use super::AcmeError;

/// The key type of a resolver's certificates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyType {
    /// ECDSA P-256 (`EC256`).
    Ec256,
    /// ECDSA P-384 (`EC384`).
    Ec384,
    /// RSA with a modulus of this many bits (`RSA2048` … `RSA8192`).
    Rsa(usize),
}

impl KeyType {
    /// Reads a `keyType` value: Traefik's names (`EC256`, `EC384`,
    /// `RSA2048`, `RSA3072`, `RSA4096`, `RSA8192`), in any case, and
    /// `P256`/`P384`.
    pub fn parse(resolver: &str, value: &str) -> Result<Self, AcmeError> {
        Ok(match value.trim().to_ascii_uppercase().as_str() {
            "EC256" | "P256" => KeyType::Ec256,
            "EC384" | "P384" => KeyType::Ec384,
            "RSA2048" => KeyType::Rsa(2048),
            "RSA3072" => KeyType::Rsa(3072),
            "RSA4096" => KeyType::Rsa(4096),
            "RSA8192" => KeyType::Rsa(8192),
            _ => {
                return Err(AcmeError::KeyType {
                    resolver: resolver.to_owned(),
                    value: value.to_owned(),
                });
            }
        })
    }

    /// Makes a new key of this type. RSA keys take from a fraction of a
    /// second (2048 bits) to a minute (8192 bits), off the async threads.
    pub async fn generate(self) -> Result<rcgen::KeyPair, AcmeError> {
        let failed = |e: String| AcmeError::Order(format!("cannot make a key: {e}"));
        match self {
            KeyType::Ec256 => rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)
                .map_err(|e| failed(e.to_string())),
            KeyType::Ec384 => rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P384_SHA384)
                .map_err(|e| failed(e.to_string())),
            KeyType::Rsa(bits) => {
                let der = tokio::task::spawn_blocking(move || rsa_pkcs8(bits))
                    .await
                    .map_err(|e| failed(e.to_string()))??;
                rcgen::KeyPair::from_pkcs8_der_and_sign_algo(
                    &rustls::pki_types::PrivatePkcs8KeyDer::from(der),
                    &rcgen::PKCS_RSA_SHA256,
                )
                .map_err(|e| failed(e.to_string()))
            }
        }
    }
}

/// A new ACME account key: ECDSA P-256, PKCS#8 DER.
pub fn account_key() -> Vec<u8> {
    use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
    let rng = ring::rand::SystemRandom::new();
    EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
        .map(|d| d.as_ref().to_vec())
        .unwrap_or_default()
}

/// A new RSA key of `bits` bits, PKCS#8 DER.
fn rsa_pkcs8(bits: usize) -> Result<Vec<u8>, AcmeError> {
    use rsa::pkcs8::EncodePrivateKey as _;
    let failed = |e: String| AcmeError::Order(format!("cannot make an RSA-{bits} key: {e}"));
    let key = rsa::PrivateKey::new(&mut SystemRandom, bits).map_err(|e| failed(e.to_string()))?;
    let der = key.to_pkcs8_der().map_err(|e| failed(e.to_string()))?;
    Ok(der.as_bytes().to_vec())
}

/// The operating system's random source (through ring), as the `rsa`
/// crate asks for it.
struct SystemRandom;

/// The operating system gave no random bytes.
#[derive(Debug, thiserror::Error)]
#[error("the system's random source failed")]
struct NoRandom;

impl rsa::rand_core::TryRng for SystemRandom {
    type Error = NoRandom;

    fn try_next_u32(&mut self) -> Result<u32, NoRandom> {
        let mut b = [0u8; 4];
        self.try_fill_bytes(&mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    fn try_next_u64(&mut self) -> Result<u64, NoRandom> {
        let mut b = [0u8; 8];
        self.try_fill_bytes(&mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), NoRandom> {
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), dst).map_err(|_| NoRandom)
    }
}

impl rsa::rand_core::TryCryptoRng for SystemRandom {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_traefik_key_type_reads() {
        for (value, want) in [
            ("EC256", KeyType::Ec256),
            ("ec384", KeyType::Ec384),
            ("P256", KeyType::Ec256),
            ("RSA2048", KeyType::Rsa(2048)),
            ("RSA3072", KeyType::Rsa(3072)),
            ("RSA4096", KeyType::Rsa(4096)),
            ("RSA8192", KeyType::Rsa(8192)),
        ] {
            assert_eq!(KeyType::parse("le", value).unwrap(), want, "{value}");
        }
        let err = KeyType::parse("le", "RSA1024").unwrap_err().to_string();
        assert!(err.contains("RSA1024") && err.contains("RSA4096"), "{err}");
    }

    #[tokio::test]
    async fn an_rsa_key_signs_a_request() {
        use x509_parser::prelude::FromDer as _;
        let key = KeyType::Rsa(2048).generate().await.unwrap();
        assert!(key.is_compatible(&rcgen::PKCS_RSA_SHA256));
        let params = rcgen::CertificateParams::new(vec!["a.test".to_owned()]).unwrap();
        let csr = params.serialize_request(&key).unwrap();
        let (_, parsed) =
            x509_parser::certification_request::X509CertificationRequest::from_der(csr.der())
                .unwrap();
        let spki = &parsed.certification_request_info.subject_pki;
        match spki.parsed().unwrap() {
            x509_parser::public_key::PublicKey::RSA(rsa) => assert_eq!(rsa.key_size(), 2048),
            other => panic!("not RSA: {other:?}"),
        }
    }
}
