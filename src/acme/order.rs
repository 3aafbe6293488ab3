//! One certificate order, RFC 8555 through rustls-acme's protocol client:
//! new order, one challenge per authorization (answered through the shared
//! `Challenges`, so several orders can run at once), finalize with a fresh
//! key, download the chain.

use super::{AcmeError, ChallengeKind, PendingChallenge, Resolver, SharedStorage, dns};
use crate::tls::Challenges;
use rustls_acme::acme::{Account, AuthStatus, ChallengeType, Identifier, OrderStatus};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// Polls of an authorization or a processing order before giving up.
const POLLS: u32 = 12;

/// Times one request is sent again after a `badNonce` refusal.
const NONCE_RETRIES: u32 = 5;

/// Runs one signed ACME request, again with a fresh nonce when the server
/// refused the nonce (RFC 8555 §6.5 asks clients to; rustls-acme does not).
/// Safe to repeat: a request refused for its nonce had no effect.
pub(super) async fn signed<T, F, Fut>(url: &str, mut request: F) -> Result<T, AcmeError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, rustls_acme::acme::AcmeError>>,
{
    let mut retries = 0;
    loop {
        match request().await.map_err(|e| AcmeError::from_acme(url, &e)) {
            Err(e) if e.is_bad_nonce() && retries < NONCE_RETRIES => retries += 1,
            other => return other,
        }
    }
}

/// Reports the DNS-01 challenge in progress (None once it is over).
pub(super) type Progress<'a> = dyn Fn(Option<PendingChallenge>) + Send + Sync + 'a;

/// Runs one order for `domains`; returns the new key and chain as PEM.
pub(super) async fn obtain(
    resolver: &Resolver,
    challenges: &Challenges,
    domains: &[String],
    progress: &Progress<'_>,
) -> Result<Vec<u8>, AcmeError> {
    let account = resolver.account().await?;
    let client = &resolver.client;
    let key = resolver.key_type.generate().await?;
    let mut params = rcgen::CertificateParams::new(domains.to_vec())
        .map_err(|e| AcmeError::Order(format!("cannot make a request: {e}")))?;
    params.distinguished_name = rcgen::DistinguishedName::new();
    // As lego: the first name as common name, unless it is too long for
    // one (64 characters) or disableCommonName is set.
    if let Some(first) = domains
        .first()
        .filter(|d| resolver.common_name && d.len() <= 64)
    {
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, first.clone());
    }
    let csr = params
        .serialize_request(&key)
        .map_err(|e| AcmeError::Order(format!("cannot make a request: {e}")))?;

    let (url, mut order) = signed(&resolver.directory_url, || {
        account.new_order(client, domains.to_vec())
    })
    .await?;
    let mut polls = 0;
    let mut finalized = None;
    loop {
        match order.status.clone() {
            OrderStatus::Pending => {
                for authorization in &order.authorizations {
                    authorize(resolver, &account, challenges, authorization, progress).await?;
                }
                order = signed(&resolver.directory_url, || account.order(client, &url)).await?;
            }
            OrderStatus::Ready => {
                let finalize = order.finalize.clone();
                finalized = Some(std::time::Instant::now());
                order = signed(&resolver.directory_url, || {
                    account.finalize(client, &finalize, csr.der())
                })
                .await?;
            }
            OrderStatus::Processing => {
                polls += 1;
                if finalized.is_some_and(|at: std::time::Instant| {
                    at.elapsed() > resolver.certificate_timeout
                }) {
                    return Err(AcmeError::Order(format!(
                        "the CA did not issue within certificateTimeout ({})",
                        crate::config::Duration(resolver.certificate_timeout)
                    )));
                }
                if polls > POLLS {
                    return Err(AcmeError::Order(
                        "the order stayed in processing".to_owned(),
                    ));
                }
                tokio::time::sleep(poll_delay(polls)).await;
                order = signed(&resolver.directory_url, || account.order(client, &url)).await?;
            }
            OrderStatus::Valid { certificate } => {
                let chain = signed(&resolver.directory_url, || {
                    account.certificate(client, &certificate)
                })
                .await?;
                let mut pem = key.serialize_pem();
                pem.push_str(&chain);
                return Ok(pem.into_bytes());
            }
            OrderStatus::Invalid => {
                let detail = order
                    .error
                    .as_ref()
                    .and_then(|p| p.detail.clone())
                    .unwrap_or_else(|| "the CA marked the order invalid".to_owned());
                return Err(AcmeError::Order(detail));
            }
        }
    }
}

/// Waits between polls: 1, 1, 2, 2, 4, 4, 8 … seconds.
fn poll_delay(poll: u32) -> Duration {
    Duration::from_secs(1 << (poll.saturating_sub(1) / 2).min(3))
}

/// Removes a challenge answer however the order ends (error, abort).
enum Answer<'a> {
    TlsAlpn(&'a Challenges, String),
    Http(&'a Challenges, String),
}

impl Drop for Answer<'_> {
    fn drop(&mut self) {
        match self {
            Answer::TlsAlpn(c, domain) => c.remove_tls_alpn(domain),
            Answer::Http(c, token) => c.remove_http(token),
        }
    }
}

async fn authorize(
    resolver: &Resolver,
    account: &Account,
    challenges: &Challenges,
    url: &str,
    progress: &Progress<'_>,
) -> Result<(), AcmeError> {
    let client = &resolver.client;
    let auth = signed(&resolver.directory_url, || account.auth(client, url)).await?;
    // A wildcard's authorization names its base domain (RFC 8555 §7.1.3).
    let Identifier::Dns(domain) = auth.identifier.clone();
    match auth.status {
        AuthStatus::Valid => return Ok(()),
        AuthStatus::Pending => {}
        _ => return Err(validation_error(&domain, &auth)),
    }
    if let Some(solver) = &resolver.dns {
        return authorize_dns(resolver, account, solver, &auth, url, domain, progress).await;
    }
    if let Some(shared) = resolver.shared() {
        return authorize_shared(resolver, account, challenges, shared, &auth, url, domain).await;
    }
    let (challenge_url, _answer) = match resolver.challenge {
        ChallengeKind::TlsAlpn01 => {
            let (challenge, cert) = account
                .tls_alpn_01(&auth.challenges, domain.clone())
                .map_err(|e| AcmeError::from_acme(&resolver.directory_url, &e))?;
            challenges.set_tls_alpn(&domain, &Arc::new(cert));
            (
                challenge.url.clone(),
                Answer::TlsAlpn(challenges, domain.clone()),
            )
        }
        ChallengeKind::Http01 => {
            let (challenge, key_auth) = account
                .http_01(&auth.challenges)
                .map_err(|e| AcmeError::from_acme(&resolver.directory_url, &e))?;
            challenges.set_http(&challenge.token, &key_auth);
            (
                challenge.url.clone(),
                Answer::Http(challenges, challenge.token.clone()),
            )
        }
        ChallengeKind::Dns01 => {
            return Err(AcmeError::Order(
                "the resolver answers DNS-01 but has no DNS provider".to_owned(),
            ));
        }
    };
    // httpChallenge.delay / tlsChallenge.delay.
    tokio::time::sleep(resolver.challenge_delay).await;
    validate(resolver, account, url, &challenge_url, domain).await
}

/// Answers an HTTP-01 or TLS-ALPN-01 challenge on this instance and in the
/// shared store, so that whichever instance the CA's validation reaches
/// answers it; the store's copy is removed once the CA has decided.
async fn authorize_shared(
    resolver: &Resolver,
    account: &Account,
    challenges: &Challenges,
    shared: &SharedStorage,
    auth: &rustls_acme::acme::Auth,
    url: &str,
    domain: String,
) -> Result<(), AcmeError> {
    use ring::signature::KeyPair as _;
    let wanted = match resolver.challenge {
        ChallengeKind::TlsAlpn01 => ChallengeType::TlsAlpn01,
        _ => ChallengeType::Http01,
    };
    let Some(challenge) = auth.challenges.iter().find(|c| c.typ == wanted) else {
        return Err(AcmeError::Validation {
            domain,
            detail: format!("the CA offers no {wanted:?} challenge for it"),
        });
    };
    let thumbprint = dns::thumbprint(account.key_pair.public_key().as_ref())
        .ok_or_else(|| AcmeError::Order("the account key is not a P-256 key".to_owned()))?;
    let key_auth = dns::key_authorization(&challenge.token, &thumbprint);
    if wanted == ChallengeType::TlsAlpn01 {
        let (cert_pem, key_pem) = validation_certificate(&domain, &key_auth)?;
        let cert = crate::tls::store::parse_pem(&domain, cert_pem.as_bytes(), key_pem.as_bytes())?;
        challenges.set_tls_alpn(&domain, &cert.key);
        let _answer = Answer::TlsAlpn(challenges, domain.clone());
        shared.put_tls_alpn(&domain, &cert_pem, &key_pem).await?;
        let outcome = validate(resolver, account, url, &challenge.url, domain.clone()).await;
        let _ = shared.remove_tls_alpn(&domain).await;
        outcome
    } else {
        challenges.set_http(&challenge.token, &key_auth);
        let _answer = Answer::Http(challenges, challenge.token.clone());
        shared.put_http(&challenge.token, &key_auth).await?;
        let outcome = validate(resolver, account, url, &challenge.url, domain.clone()).await;
        let _ = shared.remove_http(&challenge.token).await;
        outcome
    }
}

/// The self-signed certificate a TLS-ALPN-01 validation expects (RFC
/// 8737): the name, and the SHA-256 of the key authorization in the
/// critical acmeIdentifier extension. Certificate and key as PEM.
fn validation_certificate(domain: &str, key_auth: &str) -> Result<(String, String), AcmeError> {
    let failed =
        |e: rcgen::Error| AcmeError::Order(format!("cannot make the validation certificate: {e}"));
    let digest = ring::digest::digest(&ring::digest::SHA256, key_auth.as_bytes());
    let mut params = rcgen::CertificateParams::new(vec![domain.to_owned()]).map_err(failed)?;
    params.custom_extensions = vec![rcgen::CustomExtension::new_acme_identifier(digest.as_ref())];
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).map_err(failed)?;
    let cert = params.self_signed(&key).map_err(failed)?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// Answers a DNS-01 challenge: publishes the TXT record, waits until it is
/// answered, asks the CA to validate, and removes the record whatever the
/// outcome.
async fn authorize_dns(
    resolver: &Resolver,
    account: &Account,
    solver: &Arc<dns::Solver>,
    auth: &rustls_acme::acme::Auth,
    url: &str,
    domain: String,
    progress: &Progress<'_>,
) -> Result<(), AcmeError> {
    use ring::signature::KeyPair as _;
    let Some(challenge) = auth
        .challenges
        .iter()
        .find(|c| c.typ == ChallengeType::Dns01)
    else {
        return Err(AcmeError::Validation {
            domain,
            detail: "the CA offers no dns-01 challenge for it".to_owned(),
        });
    };
    let thumbprint = dns::thumbprint(account.key_pair.public_key().as_ref())
        .ok_or_else(|| AcmeError::Order("the account key is not a P-256 key".to_owned()))?;
    let value = dns::txt_value(&dns::key_authorization(&challenge.token, &thumbprint));
    let fqdn = dns::challenge_fqdn(&domain);
    let report = |step: dns::Step| {
        progress(Some(PendingChallenge {
            kind: ChallengeKind::Dns01,
            domain: domain.clone(),
            fqdn: fqdn.clone(),
            step,
            since: super::unix_now(),
        }));
    };
    tracing::info!(resolver = %resolver.name, domain = %domain, fqdn = %fqdn, provider = solver.provider_name(), "publishing the DNS-01 TXT record");
    let published = solver
        .publish(&fqdn, &value, &report)
        .await
        .map_err(|source| AcmeError::Dns {
            domain: domain.clone(),
            source: Box::new(source),
        })?;
    report(dns::Step::Validating);
    let outcome = validate(resolver, account, url, &challenge.url, domain.clone()).await;
    published.remove().await;
    progress(None);
    outcome
}

/// Tells the CA to validate a challenge and polls the authorization until
/// it is decided.
async fn validate(
    resolver: &Resolver,
    account: &Account,
    url: &str,
    challenge_url: &str,
    domain: String,
) -> Result<(), AcmeError> {
    let client = &resolver.client;
    signed(&resolver.directory_url, || {
        account.challenge(client, challenge_url)
    })
    .await?;
    for poll in 1..=POLLS {
        tokio::time::sleep(poll_delay(poll)).await;
        let auth = signed(&resolver.directory_url, || account.auth(client, url)).await?;
        match auth.status {
            AuthStatus::Pending => {}
            AuthStatus::Valid => return Ok(()),
            _ => return Err(validation_error(&domain, &auth)),
        }
    }
    Err(AcmeError::Validation {
        domain,
        detail: "the CA did not finish validating in time".to_owned(),
    })
}

fn validation_error(domain: &str, auth: &rustls_acme::acme::Auth) -> AcmeError {
    let detail = auth
        .challenges
        .iter()
        .filter_map(|c| c.error.as_ref())
        .filter_map(|p| p.detail.clone())
        .next()
        .unwrap_or_else(|| {
            use rustls_acme::acme::AuthStatus;
            // RFC 8555 §7.1.6's names for the states.
            let status = match auth.status {
                AuthStatus::Pending => "pending",
                AuthStatus::Valid => "valid",
                AuthStatus::Invalid => "invalid",
                AuthStatus::Revoked => "revoked",
                AuthStatus::Expired => "expired",
                AuthStatus::Deactivated => "deactivated",
            };
            format!("authorization is {status}")
        });
    AcmeError::Validation {
        domain: domain.to_owned(),
        detail,
    }
}
