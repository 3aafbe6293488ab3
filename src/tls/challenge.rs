//! Answers to ACME challenges in progress: TLS-ALPN-01 certificates by
//! domain and HTTP-01 key authorizations by token. Written by the ACME
//! orders, read by handshakes and by the plain-HTTP entry points. When
//! several instances share an ACME store, an answer this instance does not
//! hold is looked up there ([`SharedChallenges`]): the CA's validation may
//! reach any instance.

use arc_swap::ArcSwap;
use futures_util::future::BoxFuture;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use serde::Serialize;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// Validations kept in [`Challenges::unanswered`], newest last.
const UNANSWERED_KEPT: usize = 20;

/// Where answers published by other instances are found.
pub trait SharedChallenges: Send + Sync {
    /// The key authorization for an HTTP-01 token, if an instance
    /// published one.
    fn http<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Option<String>>;
    /// The TLS-ALPN-01 certificate for `domain`, if an instance published
    /// one.
    fn tls_alpn<'a>(&'a self, domain: &'a str) -> BoxFuture<'a, Option<Arc<CertifiedKey>>>;
}

/// A validation request that found no answer: not this instance's, nor
/// in a shared store. Another ACME client orders for the name: often
/// another gangway with a storage of its own.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Unanswered {
    /// `http-01` or `tls-alpn-01`.
    pub challenge: &'static str,
    /// The HTTP-01 token, or the name a TLS-ALPN-01 validation asked for.
    pub name: String,
    /// When it came, seconds since the epoch.
    pub at: i64,
}

/// Challenge answers. Reads are lock-free; writes (a few per order) copy.
#[derive(Default)]
pub struct Challenges {
    alpn: ArcSwap<HashMap<String, Arc<CertifiedKey>>>,
    http: ArcSwap<HashMap<String, Arc<str>>>,
    /// TLS-ALPN-01 certificates fetched from the shared store for the
    /// handshakes in progress, with how many there are: a CA validates
    /// from several places at once, and the first handshake to end must
    /// not take the certificate from the others.
    fetched: ArcSwap<HashMap<String, (Arc<CertifiedKey>, usize)>>,
    shared: OnceLock<Arc<dyn SharedChallenges>>,
    unanswered: Mutex<Vec<Unanswered>>,
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

    /// Looks answers this instance lacks up in `shared` from now on (set
    /// once, at start).
    pub fn share(&self, shared: Arc<dyn SharedChallenges>) {
        let _ = self.shared.set(shared);
    }

    /// The key authorization for an HTTP-01 token, from this instance or
    /// from the shared store; a token neither knows is recorded.
    pub async fn http_answer_anywhere(&self, token: &str) -> Option<Arc<str>> {
        if let Some(answer) = self.http_answer(token) {
            return Some(answer);
        }
        if let Some(shared) = self.shared.get()
            && let Some(answer) = shared.http(token).await
        {
            return Some(Arc::from(answer));
        }
        self.record("http-01", token);
        None
    }

    /// Makes sure a TLS-ALPN-01 handshake for `domain` finds the answer
    /// another instance published, if this one holds none. True when it
    /// fetched one: then call [`Challenges::handshake_done`] after the
    /// handshake.
    pub async fn fetch_tls_alpn(&self, domain: &str) -> bool {
        let domain = domain.to_ascii_lowercase();
        if self.alpn.load().contains_key(&domain) {
            return false;
        }
        let Some(shared) = self.shared.get() else {
            return false;
        };
        let Some(cert) = shared.tls_alpn(&domain).await else {
            return false;
        };
        self.fetched.rcu(|map| {
            let mut map = HashMap::clone(map);
            let held = map.get(&domain).map_or(0, |(_, n)| *n);
            map.insert(domain.clone(), (cert.clone(), held + 1));
            map
        });
        true
    }

    /// A handshake [`Challenges::fetch_tls_alpn`] fetched for has ended:
    /// the certificate is forgotten once no other handshake needs it.
    pub fn handshake_done(&self, domain: &str) {
        let domain = domain.to_ascii_lowercase();
        self.fetched.rcu(|map| {
            let mut map = HashMap::clone(map);
            match map.get_mut(&domain) {
                Some((_, n)) if *n > 1 => *n -= 1,
                _ => {
                    map.remove(&domain);
                }
            }
            map
        });
    }

    /// The latest validations that found no answer, oldest first.
    pub fn unanswered(&self) -> Vec<Unanswered> {
        self.unanswered
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn record(&self, challenge: &'static str, name: &str) {
        let at = crate::clock::unix_time();
        tracing::warn!(
            challenge,
            name,
            "an ACME validation found no answer on this instance or in a shared store: another ACME client orders certificates for this name"
        );
        let mut list = self
            .unanswered
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        list.retain(|u| !(u.challenge == challenge && u.name == name));
        list.push(Unanswered {
            challenge,
            name: name.to_owned(),
            at,
        });
        if list.len() > UNANSWERED_KEPT {
            let extra = list.len() - UNANSWERED_KEPT;
            list.drain(..extra);
        }
    }
}

impl ResolvesServerCert for Challenges {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        // Only validation handshakes (ALPN acme-tls/1 alone) get these certificates.
        let name = hello.server_name()?;
        let found = super::store::with_lowercase(name, |n| {
            self.alpn
                .load()
                .get(n)
                .cloned()
                .or_else(|| self.fetched.load().get(n).map(|(c, _)| c.clone()))
        });
        if found.is_none() {
            self.record("tls-alpn-01", &name.to_ascii_lowercase());
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shared store that always holds a certificate for every name.
    struct Published(Arc<CertifiedKey>);

    impl SharedChallenges for Published {
        fn http<'a>(&'a self, _token: &'a str) -> BoxFuture<'a, Option<String>> {
            Box::pin(async { None })
        }
        fn tls_alpn<'a>(&'a self, _domain: &'a str) -> BoxFuture<'a, Option<Arc<CertifiedKey>>> {
            Box::pin(async { Some(self.0.clone()) })
        }
    }

    fn challenges() -> Challenges {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let params = rcgen::CertificateParams::new(vec!["app.test".to_owned()]).unwrap();
        let cert = params.self_signed(&key).unwrap();
        let loaded = crate::tls::store::parse_pem(
            "t",
            cert.pem().as_bytes(),
            key.serialize_pem().as_bytes(),
        )
        .unwrap();
        let c = Challenges::default();
        c.share(Arc::new(Published(loaded.key)));
        c
    }

    fn held(c: &Challenges) -> bool {
        c.fetched.load().contains_key("app.test")
    }

    #[tokio::test]
    async fn overlapping_validations_keep_the_fetched_answer_until_the_last_ends() {
        let c = challenges();
        // A CA validates from several places at once.
        assert!(c.fetch_tls_alpn("App.Test").await);
        assert!(c.fetch_tls_alpn("app.test").await);
        c.handshake_done("app.test");
        assert!(held(&c), "the second handshake still needs it");
        c.handshake_done("app.test");
        assert!(!held(&c));
    }

    #[tokio::test]
    async fn an_answer_of_this_instance_is_not_fetched() {
        let c = challenges();
        let own = c.shared.get().unwrap().tls_alpn("app.test").await.unwrap();
        c.set_tls_alpn("app.test", &own);
        assert!(!c.fetch_tls_alpn("app.test").await);
        assert!(!held(&c));
    }
}
