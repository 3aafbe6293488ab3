//! Private keys sealed at rest: AES-256-GCM (ring) with a key read from
//! `storageEncryptionKeyFile`, a fresh random nonce per value, and the
//! store key as associated data, so a value copied under another key does
//! not open.

use super::SharedError;
use base64::Engine as _;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};

/// What a sealed value starts with, so that a format change can be told.
const VERSION: &str = "v1:";

/// The key that seals and opens private keys.
pub struct Seal {
    key: LessSafeKey,
    random: SystemRandom,
}

impl std::fmt::Debug for Seal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Seal(..)")
    }
}

impl Seal {
    /// Reads the key file: 32 bytes, written as base64 (`openssl rand
    /// -base64 32`), as 64 hexadecimal digits, or raw.
    pub fn from_file(resolver: &str, path: &std::path::Path) -> Result<Seal, SharedError> {
        let error = |problem: String| SharedError::KeyFile {
            resolver: resolver.to_owned(),
            path: path.display().to_string(),
            problem,
        };
        let bytes = std::fs::read(path).map_err(|e| error(e.to_string()))?;
        let key = parse_key(&bytes).ok_or_else(|| {
            error(
                "must hold a 32-byte key: base64 (openssl rand -base64 32), 64 hex digits or 32 raw bytes"
                    .to_owned(),
            )
        })?;
        Seal::new(&key).ok_or_else(|| error("the key is not usable".to_owned()))
    }

    /// A seal of the 32-byte `key`.
    pub fn new(key: &[u8; 32]) -> Option<Seal> {
        let unbound = UnboundKey::new(&AES_256_GCM, key).ok()?;
        Some(Seal {
            key: LessSafeKey::new(unbound),
            random: SystemRandom::new(),
        })
    }

    /// `plain` sealed for the store key `name`: `v1:` and base64 of the
    /// nonce, then the ciphertext with its tag.
    pub fn seal(&self, name: &str, plain: &[u8]) -> String {
        let mut nonce = [0u8; NONCE_LEN];
        // SystemRandom reads the OS generator, which does not fail once
        // the system has booted.
        let _ = self.random.fill(&mut nonce);
        let mut data = plain.to_vec();
        let sealed = self.key.seal_in_place_append_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(name.as_bytes()),
            &mut data,
        );
        if sealed.is_err() {
            return String::new();
        }
        let mut out = nonce.to_vec();
        out.extend_from_slice(&data);
        format!(
            "{VERSION}{}",
            base64::engine::general_purpose::STANDARD.encode(out)
        )
    }

    /// Opens what [`Seal::seal`] made for `name`; None if this key (or
    /// that name) does not open it.
    pub fn open(&self, name: &str, sealed: &str) -> Option<Vec<u8>> {
        let b64 = sealed.strip_prefix(VERSION)?;
        let mut data = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
        if data.len() < NONCE_LEN {
            return None;
        }
        let nonce = Nonce::try_assume_unique_for_key(&data[..NONCE_LEN]).ok()?;
        let mut rest = data.split_off(NONCE_LEN);
        let plain = self
            .key
            .open_in_place(nonce, Aad::from(name.as_bytes()), &mut rest)
            .ok()?;
        Some(plain.to_vec())
    }
}

fn parse_key(bytes: &[u8]) -> Option<[u8; 32]> {
    let text = std::str::from_utf8(bytes).map(str::trim).unwrap_or("");
    if !text.is_empty() {
        if let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(text)
            && let Ok(key) = <[u8; 32]>::try_from(decoded.as_slice())
        {
            return Some(key);
        }
        if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
            let mut key = [0u8; 32];
            for (i, slot) in key.iter_mut().enumerate() {
                *slot = u8::from_str_radix(&text[i * 2..i * 2 + 2], 16).ok()?;
            }
            return Some(key);
        }
    }
    <[u8; 32]>::try_from(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_value_opens_only_with_its_key_and_name() {
        let seal = Seal::new(&[7; 32]).unwrap();
        let sealed = seal.seal("gangway/acme/ca/certs/a", b"secret key");
        assert!(!sealed.contains("secret"));
        assert_eq!(
            seal.open("gangway/acme/ca/certs/a", &sealed).as_deref(),
            Some(&b"secret key"[..])
        );
        assert_eq!(seal.open("gangway/acme/ca/certs/b", &sealed), None);
        let other = Seal::new(&[8; 32]).unwrap();
        assert_eq!(other.open("gangway/acme/ca/certs/a", &sealed), None);
        assert_ne!(
            seal.seal("k", b"same"),
            seal.seal("k", b"same"),
            "a fresh nonce each time"
        );
        assert_eq!(seal.open("k", "v1:AAAA"), None);
        assert_eq!(seal.open("k", "garbage"), None);
    }

    #[test]
    fn key_files_hold_base64_hex_or_raw_bytes() {
        use base64::Engine as _;
        let key = [42u8; 32];
        let b64 = base64::engine::general_purpose::STANDARD.encode(key) + "\n";
        assert_eq!(parse_key(b64.as_bytes()), Some(key));
        let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(parse_key(hex.as_bytes()), Some(key));
        assert_eq!(parse_key(&key), Some(key));
        assert_eq!(parse_key(b"too short"), None);
        assert_eq!(parse_key(b""), None);
    }
}
