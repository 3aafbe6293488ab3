//! Certificates from ACME servers (Let's Encrypt, or a private CA such as
//! pebble): ordered as soon as a router with `tls.certResolver` appears,
//! stored on disk, loaded before any listener accepts, renewed, retried
//! with backoff after failures, and reported certificate by certificate.
//!
//! One task per certificate (a resolver and a set of names). Each follows
//! [`schedule`]: renew when a third of the lifetime is left (at most 30
//! days), back off 5 s, 10 s … 1 h after failures and never before the
//! server's "retry after", and place at most [`schedule::ORDERS_PER_HOUR`]
//! new orders per resolver and hour. Issued certificates go into the TLS
//! registry, which makes the aggregator compile a runtime that serves them.
//!
//! With a store URL as storage ([`shared`]), several instances share the
//! account, certificates and challenge answers, and one orders each
//! certificate (`acme/cluster.rs`).

mod ari;
mod client;
mod cluster;
pub mod dns;
mod error;
pub mod key;
mod order;
mod resolver;
pub mod schedule;
pub mod shared;
mod status;
pub mod storage;

use crate::config::static_config::Acme as AcmeConfig;
use crate::runtime::{Registries, RuntimeHandle};
use crate::tls::{CertificateRequest, IssuedCert};
use cluster::{
    Coordinated, StoreChallenges, coordinate, follow_store, keep_lease, release, shared_name,
};
pub use cluster::{LEASE_TTL, check_shared_keys};
pub use error::{AcmeError, ProbeError};
use resolver::ResolverStorage;
pub use resolver::{
    Resolver, StoreHealth, Unsupported, fallback_errors, option_errors, unsupported,
};
use serde::Serialize;
use shared::SharedStorage;
pub use status::{CertStatus, CertificateState, ResolverStorageView, Status, StorageView};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, PoisonError};
use std::time::Duration;
use storage::Storage;

/// Longest time one order may take, all polls included.
const ORDER_TIMEOUT: Duration = Duration::from_secs(300);

/// How long a request to a shared store may take.
const STORE_TIMEOUT: Duration = Duration::from_secs(5);

/// Which challenge a resolver answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum ChallengeKind {
    /// TLS-ALPN-01, on the TLS connections of every entry point.
    #[serde(rename = "tls-alpn-01")]
    TlsAlpn01,
    /// HTTP-01, on the plain connections of the named entry point.
    #[serde(rename = "http-01")]
    Http01,
    /// DNS-01, through the resolver's DNS provider; the only one that can
    /// get wildcard certificates.
    #[serde(rename = "dns-01")]
    Dns01,
}

impl ChallengeKind {
    /// The challenge a resolver configured so answers: DNS-01 when
    /// `dnsChallenge` is set, else HTTP-01 when `httpChallenge` is set
    /// without `tlsChallenge`, else TLS-ALPN-01.
    pub fn of(config: &AcmeConfig) -> Self {
        if config.dns_challenge.is_some() {
            ChallengeKind::Dns01
        } else if config.http_challenge.is_some() && config.tls_challenge.is_none() {
            ChallengeKind::Http01
        } else {
            ChallengeKind::TlsAlpn01
        }
    }
}

/// A DNS-01 challenge in progress, for the API.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PendingChallenge {
    /// The challenge type, `dns-01`.
    #[serde(rename = "type")]
    pub kind: ChallengeKind,
    /// The name being validated (a wildcard's base name).
    pub domain: String,
    /// The TXT record's name.
    pub fqdn: String,
    /// Where it stands.
    pub step: dns::Step,
    /// When this step began, seconds since the epoch.
    pub since: i64,
}

/// The running ACME side: the state of every certificate.
pub struct AcmeTask {
    /// Per-certificate state.
    pub status: Arc<Status>,
    task: tokio::task::JoinHandle<()>,
}

impl AcmeTask {
    /// Stops every order and renewal.
    pub fn abort(&self) {
        self.task.abort();
    }
}

/// Starts following the published runtimes: every certificate request of
/// a known resolver gets a task that obtains and renews it.
pub fn spawn_acme(
    resolvers: Vec<Arc<Resolver>>,
    handle: Arc<RuntimeHandle>,
    registries: Arc<Registries>,
    status: Arc<Status>,
) -> AcmeTask {
    let _ = status.resolvers.set(resolvers.clone());
    let mut stores: Vec<Arc<SharedStorage>> = Vec::new();
    let mut followers = Vec::new();
    for resolver in &resolvers {
        if let Some(m) = &status.metrics {
            resolver.export_store_health(m);
        }
        if let Some(shared) = resolver.shared() {
            if !stores.iter().any(|s| s.spot() == shared.spot()) {
                stores.push(shared.clone());
            }
            followers.push(Running(tokio::spawn(follow_store(
                resolver.clone(),
                shared.clone(),
                registries.clone(),
                status.clone(),
            ))));
        }
    }
    if !stores.is_empty() {
        registries
            .tls
            .challenges
            .share(Arc::new(StoreChallenges(stores)));
    }
    let status_for_task = status.clone();
    let task = tokio::spawn(async move {
        let _followers = followers;
        follow(resolvers, handle, registries, status_for_task).await;
    });
    AcmeTask { status, task }
}

/// Aborts a certificate's task when dropped.
struct Running(tokio::task::JoinHandle<()>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn follow(
    resolvers: Vec<Arc<Resolver>>,
    handle: Arc<RuntimeHandle>,
    registries: Arc<Registries>,
    status: Arc<Status>,
) {
    let by_name: HashMap<String, Arc<Resolver>> =
        resolvers.into_iter().map(|r| (r.name.clone(), r)).collect();
    let mut published = handle.subscribe();
    let mut running: HashMap<String, Running> = HashMap::new();
    loop {
        let requests: Vec<CertificateRequest> = handle.load().tls.requests.clone();
        let mut wanted: HashMap<String, CertificateRequest> = HashMap::new();
        for r in requests {
            if by_name.contains_key(&r.resolver) {
                wanted.insert(r.key(), r);
            }
        }
        running.retain(|key, _| wanted.contains_key(key));
        status
            .certs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|key, _| wanted.contains_key(key));
        status.export();
        for (key, request) in wanted {
            if running.contains_key(&key) {
                status.update(&key, |s| s.routers.clone_from(&request.routers));
                continue;
            }
            let Some(resolver) = by_name.get(&request.resolver).cloned() else {
                continue;
            };
            status
                .certs
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(
                    key.clone(),
                    CertificateState {
                        resolver: request.resolver.clone(),
                        challenge: resolver.challenge,
                        domains: request.domains.clone(),
                        routers: request.routers.clone(),
                        status: CertStatus::Pending,
                        pending_challenge: None,
                        issuer: None,
                        not_after: None,
                        labels: None,
                        next_attempt: None,
                        last_error: None,
                        failures: 0,
                        storage_error: None,
                        lease_holder: None,
                        profile: resolver.profile.clone(),
                        renewal_reason: None,
                        renewal_window: None,
                        fallback: resolver.fallback.clone(),
                        issued_through: None,
                    },
                );
            let issuers = std::iter::once(resolver.clone())
                .chain(
                    resolver
                        .fallback
                        .iter()
                        .filter_map(|n| by_name.get(n).cloned()),
                )
                .collect();
            let task = tokio::spawn(keep_certificate(
                issuers,
                registries.clone(),
                status.clone(),
                key.clone(),
                request.domains,
            ));
            running.insert(key, Running(task));
        }
        if published.changed().await.is_err() {
            return;
        }
    }
}

/// Sleeps until the Unix time `at`, waking at least hourly so that a clock
/// change (suspend, NTP) is noticed.
async fn sleep_until(at: i64) {
    loop {
        let left = at - crate::clock::unix_time();
        if left <= 0 {
            return;
        }
        let secs = u64::try_from(left.min(3600)).unwrap_or(3600);
        tokio::time::sleep(Duration::from_secs(secs)).await;
    }
}

/// Obtains one certificate and keeps it renewed, for as long as it is
/// wanted: ordered through the first of `issuers` (its resolver), and
/// after a failure through the next (its `fallback`), kept in the first's
/// storage.
async fn keep_certificate(
    issuers: Vec<Arc<Resolver>>,
    registries: Arc<Registries>,
    status: Arc<Status>,
    key: String,
    domains: Vec<String>,
) {
    let mut keeper = Keeper {
        names: domains.join(", "),
        issuers,
        registries,
        status,
        key,
        domains,
        issuer: 0,
        failures: 0,
        retry_at: None,
        unstored: None,
        window: None,
        replaces: None,
        refused: None,
    };
    loop {
        keeper.round().await;
    }
}

/// One certificate being kept: what it is, who orders it, and what is
/// remembered from one order to the next.
struct Keeper {
    /// Its resolver first, then the resolvers of its `fallback`.
    issuers: Vec<Arc<Resolver>>,
    registries: Arc<Registries>,
    status: Arc<Status>,
    key: String,
    domains: Vec<String>,
    /// The domains as one text, for the log.
    names: String,
    /// Which of `issuers` the next order goes through.
    issuer: usize,
    failures: u32,
    retry_at: Option<i64>,
    unstored: Option<Unstored>,
    window: Option<ari::Window>,
    /// The certificate the next order replaces (ARI), if the CA has ARI.
    replaces: Option<String>,
    /// One whose `replaces` failed an order (the CA may refuse it: the
    /// retries go without).
    refused: Option<String>,
}

impl Keeper {
    fn resolver(&self) -> &Arc<Resolver> {
        &self.issuers[0]
    }

    /// One turn: wait until the certificate is due, take the lease and an
    /// order slot, order, and note what came of it.
    async fn round(&mut self) {
        let current = self.registries.tls.issued(&self.key);
        let now = crate::clock::unix_time();
        let (due, wake) = self.due(current.as_deref(), now).await;
        if due > now {
            self.wait(wake).await;
            return;
        }
        // Due now: a retry time that brought it here is used up.
        self.retry_at = None;
        // With a shared store, one instance orders: the one that takes the
        // lease. The others wait for its certificate.
        let lease = match self.resolver().shared() {
            Some(shared) => {
                let shared = shared.clone();
                let (resolver, registries) = (self.resolver().clone(), &self.registries);
                match coordinate(
                    &resolver,
                    &shared,
                    registries,
                    &self.status,
                    &self.key,
                    &self.domains,
                )
                .await
                {
                    Coordinated::Order(lease) => Some(lease),
                    Coordinated::Wait(at) => {
                        self.retry_at = Some(at);
                        return;
                    }
                    Coordinated::Loaded => {
                        self.retry_at = None;
                        self.failures = 0;
                        return;
                    }
                }
            }
            None => None,
        };
        if !self.take_slot(now, lease.as_ref()).await {
            return;
        }
        let renewal = current.is_some();
        let result = self.order(renewal, lease.as_ref()).await;
        let through = &self.issuers[self.issuer].name;
        self.status
            .count_order(&self.resolver().name, through, result.is_ok());
        match result {
            Ok((pem, cert)) => self.obtained(pem, cert, lease.as_ref()).await,
            Err(e) => self.failed(e, lease.as_ref()).await,
        }
        release(self.resolver(), lease.as_ref()).await;
    }

    /// When the next order is due and when to wake to look again, with the
    /// certificate's state brought up to date.
    async fn due(&mut self, current: Option<&IssuedCert>, now: i64) -> (i64, i64) {
        let (due, wake) = match (current, self.retry_at) {
            (_, Some(at)) => (at, at),
            (Some(c), None) => {
                let resolver = self.resolver().clone();
                let plan = resolver.plan(&c.cert, &mut self.window, now).await;
                self.replaces = plan.replaces.filter(|r| self.refused.as_ref() != Some(r));
                let window = self.window.clone();
                self.status.update(&self.key, |s| {
                    s.renewal_reason = Some(plan.reason);
                    s.renewal_window = window;
                });
                (plan.order_at, plan.wake_at)
            }
            (None, None) => (now, now),
        };
        let failures = self.failures;
        self.status.update(&self.key, |s| {
            if let Some(c) = current {
                s.issuer = Some(c.cert.issuer.clone());
                s.not_after = Some(c.cert.not_after);
                s.labels = Some(c.cert.labels.clone());
                if failures == 0 && s.lease_holder.is_none() {
                    s.status = CertStatus::Valid;
                }
            }
            s.next_attempt = (due > now).then_some(due);
        });
        (due, wake)
    }

    /// Sleeps until `wake`, writing a certificate the storage did not take
    /// first when that is due before.
    async fn wait(&mut self, wake: i64) {
        if let Some(pending) = self.unstored.as_mut().filter(|p| p.at < wake) {
            sleep_until(pending.at).await;
            let resolver = self.issuers[0].clone();
            if pending
                .attempt(&resolver, &self.status, &self.key, &self.domains)
                .await
            {
                self.unstored = None;
            }
            return;
        }
        sleep_until(wake).await;
        self.retry_at = None;
    }

    /// Takes one of the resolver's orders of this hour; false (the lease
    /// given back, the next try set) when they are all used.
    async fn take_slot(&mut self, now: i64, lease: Option<&crate::store::Lease>) -> bool {
        let resolver = self.resolver().clone();
        let slot = resolver
            .orders
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take(now);
        let Err(free_at) = slot else {
            return true;
        };
        tracing::warn!(resolver = %resolver.name, domains = %self.names, "order cap of {} per hour reached; waiting", schedule::ORDERS_PER_HOUR);
        self.status.update(&self.key, |s| {
            s.last_error = Some(format!(
                "resolver `{}` placed {} orders in the last hour; waiting",
                resolver.name,
                schedule::ORDERS_PER_HOUR
            ));
        });
        release(&resolver, lease).await;
        self.retry_at = Some(free_at);
        false
    }

    /// Orders the certificate through the current issuer, keeping the
    /// lease for as long as the order runs.
    async fn order(
        &self,
        renewal: bool,
        lease: Option<&crate::store::Lease>,
    ) -> Result<(Vec<u8>, crate::tls::store::LoadedCert), AcmeError> {
        let resolver = self.resolver();
        self.status.update(&self.key, |s| {
            s.status = if renewal {
                CertStatus::Renewing
            } else {
                CertStatus::Pending
            };
            s.next_attempt = None;
        });
        tracing::info!(resolver = %resolver.name, domains = %self.names, renewal, "ordering a certificate");
        let progress = |pending: Option<PendingChallenge>| {
            self.status
                .update(&self.key, |s| s.pending_challenge = pending);
        };
        let _renewal = lease
            .cloned()
            .zip(resolver.shared().cloned())
            .map(|(lease, shared)| {
                Running(tokio::spawn(keep_lease(resolver.clone(), shared, lease)))
            });
        let ask = order::Ask {
            // The renewed certificate is the first issuer's.
            replaces: self
                .replaces
                .clone()
                .filter(|_| renewal && self.issuer == 0),
        };
        let through = &self.issuers[self.issuer];
        let challenges = &self.registries.tls.challenges;
        let result = tokio::time::timeout(
            ORDER_TIMEOUT,
            order::obtain(through, challenges, &self.domains, &ask, &progress),
        )
        .await
        .unwrap_or(Err(AcmeError::Timeout(ORDER_TIMEOUT)));
        progress(None);
        let pem = result?;
        let cert = crate::tls::store::parse_pem(&self.names, &pem, &pem)?;
        Ok((pem, cert))
    }

    /// A certificate came: stored, served, and the failures forgotten.
    async fn obtained(
        &mut self,
        pem: Vec<u8>,
        cert: crate::tls::store::LoadedCert,
        lease: Option<&crate::store::Lease>,
    ) {
        let resolver = self.resolver().clone();
        let mut pending = Unstored {
            pem,
            failures: 0,
            at: 0,
            lease: lease.cloned(),
        };
        let stored = pending
            .attempt(&resolver, &self.status, &self.key, &self.domains)
            .await;
        self.unstored = (!stored).then_some(pending);
        let not_after = u64::try_from(cert.not_after).map_or_else(
            |_| cert.not_after.to_string(),
            |secs| {
                httpdate::fmt_http_date(
                    std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs),
                )
            },
        );
        tracing::info!(resolver = %resolver.name, domains = %self.names, %not_after, issuer = %cert.issuer, "certificate obtained");
        self.registries.tls.put_issued(
            self.key.clone(),
            Arc::new(IssuedCert {
                resolver: resolver.name.clone(),
                domains: self.domains.clone(),
                cert,
            }),
        );
        self.failures = 0;
        let through = (self.issuer > 0).then(|| self.issuers[self.issuer].name.clone());
        self.status.update(&self.key, |s| {
            s.status = CertStatus::Valid;
            s.last_error = None;
            s.failures = 0;
            s.issued_through = through;
        });
        self.issuer = 0;
        if let (Some(shared), Some(_)) = (resolver.shared(), lease) {
            let _ = shared.clear_failure(&shared_name(&self.domains)).await;
        }
    }

    /// An order failed: counted (across a cluster too), the next one
    /// through the next issuer at once or, back at the first, after the
    /// backoff.
    async fn failed(&mut self, e: AcmeError, lease: Option<&crate::store::Lease>) {
        let resolver = self.resolver().clone();
        let through = self.issuers[self.issuer].clone();
        let e = match e {
            AcmeError::Wire { .. } => through.unreachable().await,
            e => e,
        };
        // Across a cluster, the count goes on from the last instance's
        // failure.
        let before = self
            .status
            .snapshot_of(&self.key)
            .map_or(self.failures, |s| s.failures.max(self.failures));
        self.failures = before.saturating_add(1);
        let failures = self.failures;
        let mut at = schedule::next_attempt(crate::clock::unix_time(), failures, e.retry_after());
        // Caddy's issuer fallback: the next CA is asked at once; back at
        // the first, the backoff applies.
        self.issuer = (self.issuer + 1) % self.issuers.len();
        if self.issuer > 0 {
            at = crate::clock::unix_time();
            tracing::warn!(resolver = %resolver.name, domains = %self.names, fallback = %self.issuers[self.issuer].name, "the next order goes through the fallback resolver");
        }
        if let (Some(shared), Some(_)) = (resolver.shared(), lease) {
            let failure = shared::Failure {
                failures,
                retry_at: at,
                error: e.to_string(),
                instance: resolver.instance.clone(),
            };
            if let Err(e) = shared
                .put_failure(&shared_name(&self.domains), &failure)
                .await
            {
                resolver.store_answered(Some(&e));
            }
        }
        through.forget_account().await;
        self.refused = self.replaces.take().or(self.refused.take());
        tracing::warn!(resolver = %resolver.name, domains = %self.names, failures, retry_in_s = at - crate::clock::unix_time(), error = %e, "certificate order failed");
        self.status.update(&self.key, |s| {
            s.status = CertStatus::Error;
            s.last_error = Some(e.to_string());
            s.failures = failures;
            s.next_attempt = Some(at);
        });
        self.retry_at = Some(at);
    }
}

/// A certificate (and maybe the account key) not yet written to the
/// storage: written again with backoff until it is, as long as the
/// certificate is the one served.
struct Unstored {
    pem: Vec<u8>,
    failures: u32,
    /// When to try again, seconds since the epoch.
    at: i64,
    /// The order's lease, for a shared store.
    lease: Option<crate::store::Lease>,
}

impl Unstored {
    /// Writes the account key and the certificate; true once both are
    /// stored. Failures are logged and shown as the certificate's
    /// `storageError` until a write succeeds.
    async fn attempt(
        &mut self,
        resolver: &Resolver,
        status: &Status,
        key: &str,
        domains: &[String],
    ) -> bool {
        let names = domains.join(", ");
        let result = match &resolver.storage {
            ResolverStorage::File(storage) => storage
                .store_account_key()
                .and_then(|()| storage.save_certificate(domains, &self.pem))
                .map(|path| path.display().to_string()),
            ResolverStorage::Traefik(file) => file
                .store_account_key()
                .and_then(|()| file.save_certificate(domains, &self.pem))
                .map(|path| path.display().to_string()),
            ResolverStorage::Shared(shared) => self.store_shared(resolver, shared, domains).await,
        };
        match result {
            Ok(place) => {
                if self.failures > 0 {
                    tracing::info!(resolver = %resolver.name, domains = %names, stored = %place, "certificate stored after {} failed attempts", self.failures);
                }
                status.update(key, |s| s.storage_error = None);
                true
            }
            Err(e) => {
                self.failures = self.failures.saturating_add(1);
                let wait = schedule::store_retry(self.failures);
                self.at = crate::clock::unix_time() + wait;
                if self.failures == 1 {
                    tracing::error!(resolver = %resolver.name, domains = %names, retry_in_s = wait, error = %e, "certificate not stored; it is served from memory and would be ordered again after a restart");
                } else {
                    tracing::warn!(resolver = %resolver.name, domains = %names, failures = self.failures, retry_in_s = wait, error = %e, "certificate still not stored");
                }
                status.update(key, |s| s.storage_error = Some(e.to_string()));
                false
            }
        }
    }

    /// Writes the certificate to the shared store under the order's lease,
    /// or under a new one if that expired; never over a newer one.
    async fn store_shared(
        &mut self,
        resolver: &Resolver,
        shared: &SharedStorage,
        domains: &[String],
    ) -> Result<String, AcmeError> {
        let name = shared_name(domains);
        let lease = match self.lease.take() {
            Some(lease) => lease,
            None => shared
                .acquire(&name, &resolver.instance, LEASE_TTL)
                .await?
                .ok_or_else(|| AcmeError::Order("another instance holds the lease".to_owned()))?,
        };
        if let Some((_, pem)) = shared.certificate(&name).await?
            && let (Ok(stored), Ok(mine)) = (
                crate::tls::store::parse_pem(&name, &pem, &pem),
                crate::tls::store::parse_pem(&name, &self.pem, &self.pem),
            )
            && stored.not_after > mine.not_after
        {
            let _ = shared.release(&lease).await;
            return Ok(format!("`{name}` (a newer one was there)"));
        }
        let written = shared
            .save_certificate(&lease, &name, domains, &self.pem, &resolver.instance)
            .await;
        resolver.store_answered(written.as_ref().err());
        match written? {
            true => Ok(shared.cert_key(&name)),
            false => Err(AcmeError::Order(
                "the order lease expired before the certificate was stored".to_owned(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn certificate_state_serialises_for_the_api() {
        let state = CertificateState {
            resolver: "le".into(),
            challenge: ChallengeKind::Dns01,
            domains: vec!["app.test".into()],
            routers: vec!["app@file".into()],
            status: CertStatus::Error,
            pending_challenge: Some(PendingChallenge {
                kind: ChallengeKind::Dns01,
                domain: "app.test".into(),
                fqdn: "_acme-challenge.app.test.".into(),
                step: dns::Step::Propagating,
                since: 1_700_000_050,
            }),
            issuer: None,
            not_after: Some(1_700_000_000),
            labels: None,
            next_attempt: Some(1_700_000_100),
            last_error: Some("validation of `app.test` failed: nope".into()),
            failures: 2,
            storage_error: None,
            lease_holder: None,
            profile: None,
            renewal_reason: None,
            renewal_window: None,
            fallback: Vec::new(),
            issued_through: None,
        };
        let json = serde_json::to_value(&state).unwrap();
        assert_eq!(json["status"], "error");
        assert_eq!(json["notAfter"], 1_700_000_000);
        assert_eq!(json["nextAttempt"], 1_700_000_100);
        assert_eq!(json["failures"], 2);
        assert_eq!(json["challenge"], "dns-01");
        assert_eq!(json["pendingChallenge"]["type"], "dns-01");
        assert_eq!(
            json["pendingChallenge"]["fqdn"],
            "_acme-challenge.app.test."
        );
        assert_eq!(json["pendingChallenge"]["step"], "propagating");
        assert!(json.get("issuer").is_none());
        assert!(json.get("storageError").is_none());
    }

    #[test]
    fn not_after_is_reported_per_domain() {
        let status = Status::default();
        let mut certs = status.certs.lock().unwrap();
        for (key, domains, t) in [
            ("a", vec!["a.test", "b.test"], 10),
            ("b", vec!["b.test"], 20),
        ] {
            certs.insert(
                key.into(),
                CertificateState {
                    resolver: "le".into(),
                    challenge: ChallengeKind::TlsAlpn01,
                    domains: domains.into_iter().map(String::from).collect(),
                    routers: vec![],
                    status: CertStatus::Valid,
                    pending_challenge: None,
                    issuer: None,
                    not_after: Some(t),
                    labels: None,
                    next_attempt: None,
                    last_error: None,
                    failures: 0,
                    storage_error: None,
                    lease_holder: None,
                    profile: None,
                    renewal_reason: None,
                    renewal_window: None,
                    fallback: Vec::new(),
                    issued_through: None,
                },
            );
        }
        drop(certs);
        let map = status.not_after_by_domain();
        assert_eq!(map["a.test"], 10);
        assert_eq!(map["b.test"], 20);
    }

    #[test]
    fn refusals_carry_the_problem_and_retry_after() {
        let body = br#"{"type":"urn:ietf:params:acme:error:rateLimited","detail":"too many, retry after 2030-01-01 00:00:00 UTC: see docs"}"#;
        let e = client::refused(http::StatusCode::TOO_MANY_REQUESTS, body);
        assert!(e.is_rate_limited());
        assert_eq!(e.retry_after(), Some(1_893_456_000));
        assert!(matches!(e, AcmeError::Refused { status: 429, .. }));
        let bad_nonce = client::refused(
            http::StatusCode::BAD_REQUEST,
            br#"{"type":"urn:ietf:params:acme:error:badNonce","detail":"JWS has an invalid anti-replay nonce"}"#,
        );
        assert!(bad_nonce.is_bad_nonce() && !bad_nonce.is_rate_limited());
        assert!(!AcmeError::Protocol("badNonce".into()).is_bad_nonce());
        let text = client::refused(http::StatusCode::BAD_GATEWAY, b"<html>down</html>");
        assert_eq!(
            text.to_string(),
            "the ACME server answered 502: <html>down</html>"
        );
    }
}
