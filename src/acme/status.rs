//! What the API and the metrics show of ACME: each resolver's storage and
//! every certificate's state.

use super::*;
use std::sync::{Mutex, OnceLock};

/// A resolver's storage, for `/api/certificateresolvers`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResolverStorageView {
    /// Where it keeps its account and certificates.
    pub storage: StorageView,
    /// What should be fixed.
    pub warnings: Vec<String>,
}

/// A resolver's storage, for the API.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StorageView {
    /// `file` (a folder), `acme.json` (Traefik's file), `redis` or `etcd`.
    pub kind: &'static str,
    /// The folder, or the store (no password).
    pub location: String,
    /// Whether private keys are encrypted (shared stores only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub encrypted: Option<bool>,
    /// This instance's name in leases and stored certificates (shared
    /// stores only): host, process id, and a random part.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance: Option<String>,
    /// Whether the store answers (shared stores only).
    #[serde(skip_serializing_if = "Option::is_none", flatten)]
    pub health: Option<StoreHealth>,
}

/// The state of one certificate, as the API will list it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct CertificateState {
    /// The certificate resolver.
    pub resolver: String,
    /// The challenge its resolver answers.
    pub challenge: ChallengeKind,
    /// Its names, main name first.
    pub domains: Vec<String>,
    /// The routers that want it.
    pub routers: Vec<String>,
    /// Where it stands.
    pub status: CertStatus,
    /// The DNS-01 challenge being answered now, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending_challenge: Option<PendingChallenge>,
    /// The issuer of the certificate served, if there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    /// End of validity of the certificate served, seconds since the epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_after: Option<i64>,
    /// The labels of the certificate served on `tls_certs_not_after`.
    #[serde(skip)]
    pub labels: Option<crate::tls::store::CertLabels>,
    /// When the next order is placed (renewal or retry), seconds since the epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_attempt: Option<i64>,
    /// Why the last order failed, until one succeeds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Failed orders in a row.
    pub failures: u32,
    /// Why the certificate or the account key could not be written to the
    /// storage, until a retry succeeds (the certificate is served from
    /// memory meanwhile, and ordered again after a restart); with a shared
    /// store, also why the store could not be asked (orders wait for it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_error: Option<String>,
    /// The instance ordering it, when another instance sharing the store
    /// holds its lease.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease_holder: Option<String>,
    /// The ACME profile its orders ask for (the resolver's `profile`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// Why `nextAttempt` is when it is, once a certificate is served: the
    /// CA's renewal window (`ari`) or the lifetime rule (`lifetime`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub renewal_reason: Option<super::ari::RenewalReason>,
    /// The CA's suggested renewal window (ARI), when it gives one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub renewal_window: Option<super::ari::Window>,
    /// The resolvers tried after its own fails (`fallback`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fallback: Vec<String>,
    /// The fallback resolver the served certificate came through, when
    /// not its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub issued_through: Option<String>,
}

/// Where a certificate stands.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum CertStatus {
    /// Being ordered for the first time.
    Pending,
    /// Valid and served; renewal is scheduled.
    Valid,
    /// Served, and being renewed.
    Renewing,
    /// The last order failed; a retry is scheduled (an older certificate,
    /// if any, is still served).
    Error,
}

/// Every certificate's state, shared with whoever reports it.
#[derive(Default)]
pub struct Status {
    pub(super) certs: Mutex<BTreeMap<String, CertificateState>>,
    /// The resolvers, once started.
    pub(super) resolvers: OnceLock<Vec<Arc<Resolver>>>,
    /// Where each certificate's end of validity is exported; None when
    /// metrics are off.
    pub(super) metrics: Option<Arc<crate::metrics::Exporter>>,
}

impl Status {
    /// No certificates yet; their expiry goes to `metrics` as they change.
    pub fn new(metrics: Option<Arc<crate::metrics::Exporter>>) -> Self {
        Status {
            certs: Mutex::default(),
            resolvers: OnceLock::new(),
            metrics,
        }
    }

    /// Every resolver's storage, by resolver name, as the API shows it.
    pub fn storage_views(&self) -> BTreeMap<String, ResolverStorageView> {
        self.resolvers
            .get()
            .map(|all| {
                all.iter()
                    .map(|r| {
                        if let Some(m) = &self.metrics {
                            r.export_store_health(m);
                        }
                        (r.name.clone(), r.storage_view())
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Every certificate's state, ordered by resolver and names.
    pub fn snapshot(&self) -> Vec<CertificateState> {
        self.certs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .cloned()
            .collect()
    }

    /// The latest not-after per domain, for a metric.
    pub fn not_after_by_domain(&self) -> BTreeMap<String, i64> {
        let mut out: BTreeMap<String, i64> = BTreeMap::new();
        for cert in self.snapshot() {
            if let Some(t) = cert.not_after {
                for d in cert.domains {
                    let e = out.entry(d).or_insert(t);
                    *e = (*e).max(t);
                }
            }
        }
        out
    }

    /// One certificate's state.
    pub(super) fn snapshot_of(&self, key: &str) -> Option<CertificateState> {
        self.certs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .cloned()
    }

    pub(super) fn update(&self, key: &str, f: impl FnOnce(&mut CertificateState)) {
        let mut certs = self.certs.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(state) = certs.get_mut(key) {
            f(state);
        }
        drop(certs);
        self.export();
    }

    /// Counts one order of `resolver`'s certificate through `issuer`.
    pub(super) fn count_order(&self, resolver: &str, issuer: &str, obtained: bool) {
        if let Some(metrics) = &self.metrics {
            let result = if obtained { "obtained" } else { "failed" };
            metrics.acme_orders(resolver, issuer, result).increment(1);
        }
    }

    /// Hands the served certificates' expiry to the metrics.
    pub(super) fn export(&self) {
        let Some(metrics) = &self.metrics else {
            return;
        };
        let served = self
            .snapshot()
            .into_iter()
            .filter_map(|c| {
                let labels = c.labels?;
                Some(crate::metrics::CertificateExpiry {
                    not_after: c.not_after?,
                    cn: labels.cn,
                    serial: labels.serial,
                    sans: labels.sans,
                })
            })
            .collect();
        metrics.set_certificates("acme", served);
    }
}
