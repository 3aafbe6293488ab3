//! The rustls crypto provider every TLS connection of gangway uses, its
//! entry points and its connections to servers alike: ring's, with the
//! post-quantum hybrid key exchange `X25519MLKEM768` put first, as
//! browsers, Go 1.24 and so Traefik ≥ 3.5 offer it. ring has no ML-KEM;
//! the ML-KEM-768 half comes from RustCrypto's `ml-kem`, the X25519 half
//! from ring, combined as the IETF hybrid design for TLS 1.3 says for this
//! group: ML-KEM's share and secret first, X25519's after.

use ml_kem::{Decapsulate, Encapsulate, Kem, KeyExport, MlKem768, TryKeyInit};
use rustls::crypto::{
    ActiveKeyExchange, CompletedKeyExchange, CryptoProvider, SharedSecret, SupportedKxGroup,
};
use rustls::{Error, NamedGroup, PeerMisbehaved, ProtocolVersion};

/// Size of an ML-KEM-768 encapsulation key (the client's share's first part).
const EK_LEN: usize = 1184;
/// Size of an ML-KEM-768 ciphertext (the server's share's first part).
const CT_LEN: usize = 1088;
/// Size of an X25519 public key.
const X25519_LEN: usize = 32;

/// Lowercase hex of `bytes`: digests and fingerprints as text.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// ring's provider with `X25519MLKEM768` first among the key-exchange
/// groups, then ring's own (X25519, P-256, P-384).
pub fn provider() -> CryptoProvider {
    let mut provider = rustls::crypto::ring::default_provider();
    provider.kx_groups.insert(0, X25519MLKEM768);
    provider
}

/// The hybrid group `X25519MLKEM768` (TLS 1.3 only).
pub static X25519MLKEM768: &dyn SupportedKxGroup = &Hybrid;

#[derive(Debug)]
struct Hybrid;

impl SupportedKxGroup for Hybrid {
    fn start(&self) -> Result<Box<dyn ActiveKeyExchange>, Error> {
        let x25519 = rustls::crypto::ring::kx_group::X25519.start()?;
        let (decapsulation, encapsulation) = MlKem768::generate_keypair();
        let mut share = Vec::with_capacity(EK_LEN + X25519_LEN);
        share.extend_from_slice(&encapsulation.to_bytes());
        share.extend_from_slice(x25519.pub_key());
        Ok(Box::new(ClientHalf {
            decapsulation,
            x25519,
            share,
        }))
    }

    fn start_and_complete(&self, client_share: &[u8]) -> Result<CompletedKeyExchange, Error> {
        if client_share.len() != EK_LEN + X25519_LEN {
            return Err(PeerMisbehaved::InvalidKeyShare.into());
        }
        let (ek, theirs) = client_share.split_at(EK_LEN);
        let encapsulation = ml_kem::ml_kem_768::EncapsulationKey::new_from_slice(ek)
            .map_err(|_| Error::from(PeerMisbehaved::InvalidKeyShare))?;
        let (ciphertext, kem_secret) = encapsulation.encapsulate();
        let x25519 = rustls::crypto::ring::kx_group::X25519.start()?;
        let mut share = Vec::with_capacity(CT_LEN + X25519_LEN);
        share.extend_from_slice(&ciphertext);
        share.extend_from_slice(x25519.pub_key());
        let ecdh = x25519.complete(theirs)?;
        Ok(CompletedKeyExchange {
            group: NamedGroup::X25519MLKEM768,
            pub_key: share,
            secret: combined(&kem_secret, &ecdh),
        })
    }

    fn name(&self) -> NamedGroup {
        NamedGroup::X25519MLKEM768
    }

    fn usable_for_version(&self, version: ProtocolVersion) -> bool {
        version == ProtocolVersion::TLSv1_3
    }
}

/// The client's half-done exchange: its ML-KEM decapsulation key and its
/// X25519 key, until the server's share comes.
struct ClientHalf {
    decapsulation: ml_kem::ml_kem_768::DecapsulationKey,
    x25519: Box<dyn ActiveKeyExchange>,
    share: Vec<u8>,
}

impl ActiveKeyExchange for ClientHalf {
    fn complete(self: Box<Self>, server_share: &[u8]) -> Result<SharedSecret, Error> {
        if server_share.len() != CT_LEN + X25519_LEN {
            return Err(PeerMisbehaved::InvalidKeyShare.into());
        }
        let (ciphertext, theirs) = server_share.split_at(CT_LEN);
        let kem_secret = self
            .decapsulation
            .decapsulate_slice(ciphertext)
            .map_err(|_| Error::from(PeerMisbehaved::InvalidKeyShare))?;
        let ecdh = self.x25519.complete(theirs)?;
        Ok(combined(&kem_secret, &ecdh))
    }

    // The X25519 half is offered as a key share of its own too, so a
    // server without ML-KEM answers at once instead of asking again
    // (HelloRetryRequest costs a round trip to every such server).
    fn hybrid_component(&self) -> Option<(NamedGroup, &[u8])> {
        Some((NamedGroup::X25519, self.x25519.pub_key()))
    }

    fn complete_hybrid_component(
        self: Box<Self>,
        server_share: &[u8],
    ) -> Result<SharedSecret, Error> {
        self.x25519.complete(server_share)
    }

    fn pub_key(&self) -> &[u8] {
        &self.share
    }

    fn group(&self) -> NamedGroup {
        NamedGroup::X25519MLKEM768
    }
}

/// The hybrid secret: ML-KEM's 32 bytes, then X25519's.
fn combined(kem: &[u8], ecdh: &SharedSecret) -> SharedSecret {
    let mut secret = Vec::with_capacity(kem.len() + ecdh.secret_bytes().len());
    secret.extend_from_slice(kem);
    secret.extend_from_slice(ecdh.secret_bytes());
    SharedSecret::from(secret)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_sides_reach_the_same_secret_of_both_halves() {
        let client = X25519MLKEM768.start().expect("client start");
        assert_eq!(client.pub_key().len(), EK_LEN + X25519_LEN);
        let server = X25519MLKEM768
            .start_and_complete(client.pub_key())
            .expect("server");
        assert_eq!(server.pub_key.len(), CT_LEN + X25519_LEN);
        let client_secret = client.complete(&server.pub_key).expect("client complete");
        assert_eq!(client_secret.secret_bytes(), server.secret.secret_bytes());
        assert_eq!(client_secret.secret_bytes().len(), 64);
    }

    #[test]
    fn shares_of_the_wrong_size_are_refused() {
        assert!(X25519MLKEM768.start_and_complete(&[0; 32]).is_err());
        let client = X25519MLKEM768.start().expect("client start");
        assert!(client.complete(&[0; 32]).is_err());
    }

    #[test]
    fn the_hybrid_group_comes_first_and_only_for_tls13() {
        let p = provider();
        assert_eq!(p.kx_groups[0].name(), NamedGroup::X25519MLKEM768);
        assert_eq!(p.kx_groups[1].name(), NamedGroup::X25519);
        assert!(!X25519MLKEM768.usable_for_version(ProtocolVersion::TLSv1_2));
    }
}
