//! The side of ACME that several instances sharing a store need: who
//! orders (one lease per certificate), how the others take the result
//! (the generation mark followed), answers to validations another
//! instance started, a failed order holding every instance back, and the
//! store's health for the API and metrics.

use super::{
    AcmeError, CertStatus, Registries, Resolver, STORE_TIMEOUT, SharedStorage, Status, StoreHealth,
    schedule, shared, storage,
};
use std::sync::{Arc, PoisonError};
use std::time::Duration;

/// How long an order lease lasts unless renewed; it is renewed every
/// third of that while the order runs, so a holder that dies frees it
/// this long after its last renewal.
pub const LEASE_TTL: Duration = Duration::from_secs(15);

/// How often an instance waiting on another's order looks at the store.
const LEASE_WAIT: i64 = 2;

/// How often the store is asked whether certificates changed, when it
/// does not announce changes.
const PICKUP_EVERY: Duration = Duration::from_secs(1);

/// How often it is asked all the same when it announces them: a lost
/// notification is made up for within this time.
const PICKUP_WATCHED: Duration = Duration::from_secs(10);

/// Wait before an order held back by an unreachable store is tried again.
const STORE_RETRY: i64 = 5;

/// Refuses resolvers that would write the same keys of one store.
pub fn check_shared_keys(resolvers: &[Arc<Resolver>]) -> Result<(), AcmeError> {
    let mut seen: Vec<((shared::StoreSpot, String), &str)> = Vec::new();
    for resolver in resolvers {
        let Some(spot) = resolver.shared_spot() else {
            continue;
        };
        if let Some((_, first)) = seen.iter().find(|(s, _)| *s == spot) {
            return Err(AcmeError::SameKeys {
                first: (*first).to_owned(),
                second: resolver.name.clone(),
                location: resolver.shared().map(|s| s.location()).unwrap_or_default(),
            });
        }
        seen.push((spot, &resolver.name));
    }
    Ok(())
}

/// Challenge answers other instances published in the shared stores.
pub(super) struct StoreChallenges(pub(super) Vec<Arc<SharedStorage>>);

impl crate::tls::challenge::SharedChallenges for StoreChallenges {
    fn http<'a>(&'a self, token: &'a str) -> futures_util::future::BoxFuture<'a, Option<String>> {
        Box::pin(async move {
            for store in &self.0 {
                if let Ok(Ok(Some(answer))) =
                    tokio::time::timeout(STORE_TIMEOUT, store.http(token)).await
                {
                    return Some(answer);
                }
            }
            None
        })
    }

    fn tls_alpn<'a>(
        &'a self,
        domain: &'a str,
    ) -> futures_util::future::BoxFuture<'a, Option<Arc<rustls::sign::CertifiedKey>>> {
        Box::pin(async move {
            for store in &self.0 {
                if let Ok(Ok(Some(pem))) =
                    tokio::time::timeout(STORE_TIMEOUT, store.tls_alpn(domain)).await
                    && let Ok(cert) = crate::tls::store::parse_pem(domain, &pem, &pem)
                {
                    return Some(cert.key);
                }
            }
            None
        })
    }
}

/// What an instance sharing a store does about a certificate that is due.
pub(super) enum Coordinated {
    /// It holds the lease: it orders.
    Order(crate::store::Lease),
    /// Another instance orders, or the store does not answer: look again
    /// at this time.
    Wait(i64),
    /// A certificate another instance stored is served now.
    Loaded,
}

/// Serves a newer certificate from the store if there is one; otherwise
/// takes the certificate's lease, or says who holds it.
pub(super) async fn coordinate(
    resolver: &Resolver,
    shared: &SharedStorage,
    registries: &Registries,
    status: &Status,
    key: &str,
    domains: &[String],
) -> Coordinated {
    let name = shared_name(domains);
    let store_down = |e: shared::SharedError| {
        resolver.store_answered(Some(&e));
        status.update(key, |s| {
            s.storage_error = Some(e.to_string());
        });
        Coordinated::Wait(crate::clock::unix_time() + STORE_RETRY)
    };
    let picked = match stored_newer(resolver, shared, registries, status, key, &name).await {
        Ok(picked) => picked,
        Err(e) => return store_down(e),
    };
    if picked {
        return Coordinated::Loaded;
    }
    // An order of another instance failed: the cluster waits as one.
    match shared.failure(&name).await {
        Ok(Some(failure)) => {
            status.update(key, |s| {
                s.status = CertStatus::Error;
                s.last_error = Some(failure.error.clone());
                s.failures = failure.failures;
                s.next_attempt = Some(failure.retry_at);
                s.storage_error = None;
            });
            return Coordinated::Wait(failure.retry_at);
        }
        Ok(None) => {}
        Err(e) => return store_down(e),
    }
    let lease = match shared.acquire(&name, &resolver.instance, LEASE_TTL).await {
        Ok(lease) => lease,
        Err(e) => return store_down(e),
    };
    resolver.store_answered(None);
    let Some(lease) = lease else {
        let holder = shared.lease_holder(&name).await.ok().flatten();
        status.update(key, |s| {
            s.storage_error = None;
            s.lease_holder = holder.map(|h| h.split('#').next().unwrap_or_default().to_owned());
        });
        return Coordinated::Wait(crate::clock::unix_time() + LEASE_WAIT);
    };
    status.update(key, |s| {
        s.storage_error = None;
        s.lease_holder = None;
    });
    // Another instance may have stored it between the look and the lease.
    match stored_newer(resolver, shared, registries, status, key, &name).await {
        Ok(false) => Coordinated::Order(lease),
        Ok(true) => {
            let _ = shared.release(&lease).await;
            Coordinated::Loaded
        }
        Err(e) => {
            let _ = shared.release(&lease).await;
            store_down(e)
        }
    }
}

/// Serves the stored certificate `name` if it lasts longer than the one
/// served and is not due for renewal itself; true if it is served now.
async fn stored_newer(
    resolver: &Resolver,
    shared: &SharedStorage,
    registries: &Registries,
    status: &Status,
    key: &str,
    name: &str,
) -> Result<bool, shared::SharedError> {
    let Some((stored, pem)) = shared.certificate(name).await? else {
        return Ok(false);
    };
    let Ok(cert) = crate::tls::store::parse_pem(name, &pem, &pem) else {
        return Ok(false);
    };
    if schedule::renew_at(cert.not_before, cert.not_after, resolver.renew_window)
        <= crate::clock::unix_time()
    {
        return Ok(false);
    }
    if !resolver.serve_stored(registries, &format!("`{name}`"), &pem) {
        return Ok(false);
    }
    tracing::info!(resolver = %resolver.name, domains = %stored.domains.join(", "), ordered_by = %stored.ordered_by, "certificate taken from the shared store");
    status.update(key, |s| {
        s.status = CertStatus::Valid;
        s.lease_holder = None;
        s.last_error = None;
        s.failures = 0;
    });
    Ok(true)
}

/// A certificate's name in the shared store.
pub(super) fn shared_name(domains: &[String]) -> String {
    let file = storage::cert_file_name(domains);
    file.strip_suffix(".pem").unwrap_or(&file).to_owned()
}

/// Renews `lease` every third of its life until aborted.
pub(super) async fn keep_lease(
    resolver: Arc<Resolver>,
    shared: Arc<SharedStorage>,
    lease: crate::store::Lease,
) {
    loop {
        tokio::time::sleep(LEASE_TTL / 3).await;
        match shared.renew(&lease, LEASE_TTL).await {
            Ok(true) => resolver.store_answered(None),
            Ok(false) => {
                tracing::warn!(resolver = %resolver.name, lease = %lease.key, "the order lease was lost (it expired); the certificate will not be stored by this instance");
                return;
            }
            Err(e) => resolver.store_answered(Some(&e)),
        }
    }
}

/// Gives up a lease (it expires anyway if this fails).
pub(super) async fn release(resolver: &Resolver, lease: Option<&crate::store::Lease>) {
    if let (Some(shared), Some(lease)) = (resolver.shared(), lease)
        && let Err(e) = shared.release(lease).await
    {
        tracing::debug!(resolver = %resolver.name, error = %e, "the order lease was not released; it expires");
    }
}

/// Follows a shared store: whenever its certificates change, the newer
/// ones are served. Changes are announced by the store where it can
/// (the generation mark watched), else the mark is read every second.
pub(super) async fn follow_store(
    resolver: Arc<Resolver>,
    shared: Arc<SharedStorage>,
    registries: Arc<Registries>,
    status: Arc<Status>,
) {
    let mut seen: Option<Option<Vec<u8>>> = None;
    let mut changes: Option<shared::Announcements> = None;
    // Whether the store was asked to announce changes since it last
    // failed (a store that cannot is not asked again until then).
    let mut asked = false;
    loop {
        let generation = tokio::time::timeout(STORE_TIMEOUT, shared.generation())
            .await
            .unwrap_or_else(|_| Err(resolver.store_timeout(&shared)));
        resolver.store_answered(generation.as_ref().err());
        match generation {
            Ok(generation) if seen.as_ref() != Some(&generation) => {
                match shared.certificates().await {
                    Ok(certs) => {
                        take_newer(&resolver, &registries, &status, certs);
                        seen = Some(generation);
                    }
                    Err(e) => resolver.store_answered(Some(&e)),
                }
            }
            Ok(_) => {}
            Err(_) => {
                changes = None;
                asked = false;
            }
        }
        if changes.is_none() && !asked && resolver.health().reachable == Some(true) {
            asked = true;
            changes = tokio::time::timeout(STORE_TIMEOUT, shared.watch_generation())
                .await
                .ok()
                .and_then(Result::ok)
                .flatten();
            let follow = match (&changes, shared.kind()) {
                (None, _) => "polling",
                (Some(_), "etcd") => "watch",
                (Some(_), _) => "notifications",
            };
            resolver.set_follow(follow);
        }
        match changes.as_mut() {
            Some(stream) => {
                use futures_util::StreamExt as _;
                if let Ok(None) = tokio::time::timeout(PICKUP_WATCHED, stream.next()).await {
                    // The announcing connection ended: polled until it is
                    // made again.
                    changes = None;
                    asked = false;
                    resolver.set_follow("polling");
                }
            }
            None => tokio::time::sleep(PICKUP_EVERY).await,
        }
    }
}

/// Serves every stored certificate that lasts longer than the one served.
fn take_newer(
    resolver: &Resolver,
    registries: &Registries,
    status: &Status,
    certs: shared::StoredCerts,
) {
    for (name, cert) in certs {
        let Ok((stored, pem)) = cert else { continue };
        if resolver.serve_stored(registries, &format!("`{name}`"), &pem) {
            let key = crate::tls::certificate_key(&resolver.name, &stored.domains);
            tracing::info!(resolver = %resolver.name, domains = %stored.domains.join(", "), ordered_by = %stored.ordered_by, "certificate taken from the shared store");
            status.update(&key, |s| {
                s.status = CertStatus::Valid;
                s.lease_holder = None;
                s.last_error = None;
                s.failures = 0;
            });
        }
    }
}

impl Resolver {
    /// Exports whether the shared store answers to `metrics`.
    pub fn export_store_health(&self, metrics: &crate::metrics::Exporter) {
        if self.shared().is_some() {
            let gauge = self
                .store_up
                .get_or_init(|| metrics.acme_store_up(&self.name));
            let up = self.health().reachable.unwrap_or(false);
            gauge.set(if up { 1.0 } else { 0.0 });
        }
    }

    /// What is known of the shared store's health.
    pub fn health(&self) -> StoreHealth {
        self.health
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Records how a request to the shared store went.
    pub(super) fn store_answered(&self, error: Option<&shared::SharedError>) {
        let mut health = self.health.lock().unwrap_or_else(PoisonError::into_inner);
        let was = health.reachable;
        match error {
            None => {
                health.reachable = Some(true);
                health.last_error = None;
                health.last_sync = Some(crate::clock::unix_time());
                if was == Some(false) {
                    tracing::info!(resolver = %self.name, "the shared store answers again");
                }
            }
            Some(e) => {
                health.reachable = Some(false);
                health.last_error = Some(e.to_string());
                if was != Some(false) {
                    tracing::error!(resolver = %self.name, error = %e, "the shared store does not answer; certificates loaded stay in use and orders wait");
                }
            }
        }
        let up = health.reachable == Some(true);
        drop(health);
        if let Some(gauge) = self.store_up.get() {
            gauge.set(if up { 1.0 } else { 0.0 });
        }
    }

    /// Records how new certificates are noticed.
    fn set_follow(&self, follow: &'static str) {
        self.health
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .follow = Some(follow);
    }

    pub(super) fn store_timeout(&self, shared: &SharedStorage) -> shared::SharedError {
        shared::SharedError::Store(crate::store::StoreError::Request {
            location: shared.location(),
            action: "reaching",
            key: String::new(),
            source: format!(
                "no answer within {}",
                crate::config::Duration(STORE_TIMEOUT)
            )
            .into(),
        })
    }
}
