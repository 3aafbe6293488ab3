//! Answers to ACME challenges in progress: TLS-ALPN-01 certificates by
//! domain and HTTP-01 key authorizations by token. Written by the ACME
//! orders, read by handshakes and by the plain-HTTP entry points.

use arc_swap::ArcSwap;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use std::collections::HashMap;
use std::sync::Arc;

/// Challenge answers. Reads are lock-free; writes (a few per order) copy.
#[derive(Default)]
pub struct Challenges {
    alpn: ArcSwap<HashMap<String, Arc<CertifiedKey>>>,
    http: ArcSwap<HashMap<String, Arc<str>>>,
}

impl std::fmt::Debug for Challenges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Challenges")
            .field("tls_alpn_01", &self.alpn.load().len())
            .field("http_01", &self.http.load().len())
            .finish()
    }
}

impl Challenges {
    /// Serves `cert` to TLS-ALPN-01 validations of `domain`.
    pub fn set_tls_alpn(&self, domain: &str, cert: &Arc<CertifiedKey>) {
        self.alpn.rcu(|map| {
            let mut map = HashMap::clone(map);
            map.insert(domain.to_owned(), cert.clone());
            map
        });
    }

    /// Stops answering TLS-ALPN-01 validations of `domain`.
    pub fn remove_tls_alpn(&self, domain: &str) {
        self.alpn.rcu(|map| {
            let mut map = HashMap::clone(map);
            map.remove(domain);
            map
        });
    }

    /// Answers `/.well-known/acme-challenge/<token>` with `key_auth`.
    pub fn set_http(&self, token: &str, key_auth: &str) {
        let answer: Arc<str> = Arc::from(key_auth);
        self.http.rcu(|map| {
            let mut map = HashMap::clone(map);
            map.insert(token.to_owned(), answer.clone());
            map
        });
    }

    /// Stops answering the HTTP-01 `token`.
    pub fn remove_http(&self, token: &str) {
        self.http.rcu(|map| {
            let mut map = HashMap::clone(map);
            map.remove(token);
            map
        });
    }

    /// The key authorization for an HTTP-01 token.
    pub fn http_answer(&self, token: &str) -> Option<Arc<str>> {
        self.http.load().get(token).cloned()
    }
}

impl ResolvesServerCert for Challenges {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        // Only validation handshakes (ALPN acme-tls/1 alone) get these certificates.
        let name = hello.server_name()?;
        super::store::with_lowercase(name, |n| self.alpn.load().get(n).cloned())
    }
}
