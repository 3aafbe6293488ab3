//! One certificate order, RFC 8555 through instant-acme: new order (with
//! the resolver's profile, and `replaces` when ARI names the certificate
//! renewed), one challenge per authorization (answered through the shared
//! `Challenges`, so several orders can run at once), finalize with a fresh
//! key, and download the chain — the one whose top issuer `preferredChain`
//! names when the CA offers alternates.

use super::client::{Session, links};
use super::{AcmeError, ChallengeKind, PendingChallenge, Resolver, SharedStorage, dns};
use crate::tls::Challenges;
use instant_acme::{
    AuthorizationHandle, AuthorizationState, AuthorizationStatus, ChallengeType, Identifier,
    NewOrder, OrderStatus,
};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

/// Polls of an authorization or a processing order before giving up.
const POLLS: u32 = 12;

/// Reports the DNS-01 challenge in progress (None once it is over).
pub(super) type Progress<'a> = dyn Fn(Option<PendingChallenge>) + Send + Sync + 'a;

/// What an order asks for besides its names.
#[derive(Debug, Default, Clone)]
pub(super) struct Ask {
    /// The ARI identifier of the certificate this order replaces.
    pub replaces: Option<String>,
}

/// The ACME identifier of a name: an IP address (RFC 8738) or a DNS name.
pub(super) fn identifier(name: &str) -> Identifier {
    let bare = name.trim_start_matches('[').trim_end_matches(']');
    match bare.parse::<IpAddr>() {
        Ok(ip) => Identifier::Ip(ip),
        Err(_) => Identifier::Dns(name.to_owned()),
    }
}

/// The certificate request for `domains` signed with `key`: the names as
/// DNS or IP subject alternative names, `emailAddresses` as e-mail names.
fn request(
    resolver: &Resolver,
    domains: &[String],
    key: &rcgen::KeyPair,
) -> Result<rcgen::CertificateSigningRequest, AcmeError> {
    let failed = |e: rcgen::Error| AcmeError::Order(format!("cannot make a request: {e}"));
    let mut params = rcgen::CertificateParams::new(domains.to_vec()).map_err(failed)?;
    for email in &resolver.email_addresses {
        let name = email.clone().try_into().map_err(failed)?;
        params
            .subject_alt_names
            .push(rcgen::SanType::Rfc822Name(name));
    }
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
    params.serialize_request(key).map_err(failed)
}

/// Runs one order for `domains`; returns the new key and chain as PEM.
pub(super) async fn obtain(
    resolver: &Resolver,
    challenges: &Challenges,
    domains: &[String],
    ask: &Ask,
    progress: &Progress<'_>,
) -> Result<Vec<u8>, AcmeError> {
    let session = resolver.account().await?;
    let url = resolver.directory_url.as_str();
    let client = |e| AcmeError::from_client(url, e);
    let key = resolver.key_type.generate().await?;
    let csr = request(resolver, domains, &key)?;
    let identifiers: Vec<Identifier> = domains.iter().map(|d| identifier(d)).collect();
    let mut new = NewOrder::new(&identifiers);
    if let Some(profile) = &resolver.profile {
        new = new.profile(profile);
    }
    // RFC 9773 §4.1: base64url of the AKI key identifier, a dot, the serial.
    if let Some((aki, serial)) = ask.replaces.as_deref().and_then(|id| id.split_once('.')) {
        new = new.replaces(instant_acme::CertificateIdentifier {
            authority_key_identifier: aki.into(),
            serial: serial.into(),
        });
    }
    let mut order = session.account.new_order(&new).await.map_err(client)?;
    let mut authorizations = order.authorizations();
    while let Some(authorization) = authorizations.next().await {
        let authorization = authorization.map_err(client)?;
        authorize(resolver, &session, challenges, authorization, progress).await?;
    }
    let mut polls = 0;
    let mut finalized: Option<std::time::Instant> = None;
    loop {
        let state = order.refresh().await.map_err(client)?;
        match state.status {
            OrderStatus::Ready if finalized.is_none() => {
                finalized = Some(std::time::Instant::now());
                order.finalize_csr(csr.der()).await.map_err(client)?;
                continue;
            }
            OrderStatus::Valid => {
                let certificate = state.certificate.clone().ok_or_else(|| {
                    AcmeError::Protocol("the valid order names no certificate".to_owned())
                })?;
                let chain = download(resolver, &session, &certificate).await?;
                let mut pem = key.serialize_pem();
                pem.push_str(&chain);
                return Ok(pem.into_bytes());
            }
            OrderStatus::Invalid => {
                return Err(match &state.error {
                    Some(problem) => {
                        AcmeError::Order(AcmeError::from_problem(None, problem).to_string())
                    }
                    None => AcmeError::Order("the CA marked the order invalid".to_owned()),
                });
            }
            OrderStatus::Pending | OrderStatus::Ready | OrderStatus::Processing => {}
        }
        polls += 1;
        if finalized.is_some_and(|at| at.elapsed() > resolver.certificate_timeout) {
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
    }
}

/// Downloads the certificate chain at `url`: the CA's default, or the
/// alternate (RFC 8555 §7.4.2) whose top certificate's issuer has the
/// common name `preferredChain` gives; the default when none has it.
async fn download(resolver: &Resolver, session: &Session, url: &str) -> Result<String, AcmeError> {
    let (parts, body) = session.fetch(url).await?;
    let default = String::from_utf8_lossy(&body).into_owned();
    let Some(preferred) = &resolver.preferred_chain else {
        return Ok(default);
    };
    if top_issuer(&default).as_deref() == Some(preferred.as_str()) {
        return Ok(default);
    }
    for alternate in links(&parts, "alternate") {
        let (_, body) = session.fetch(&alternate).await?;
        let chain = String::from_utf8_lossy(&body).into_owned();
        if top_issuer(&chain).as_deref() == Some(preferred.as_str()) {
            tracing::info!(resolver = %resolver.name, chain = %alternate, "the chain preferredChain names is served");
            return Ok(chain);
        }
    }
    tracing::warn!(resolver = %resolver.name, preferred_chain = %preferred, "no chain offered by the CA has this issuer; its default chain is served");
    Ok(default)
}

/// The issuer's common name of the last certificate of a PEM chain.
pub(super) fn top_issuer(chain: &str) -> Option<String> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let last = CertificateDer::pem_slice_iter(chain.as_bytes())
        .filter_map(Result::ok)
        .last()?;
    let (_, cert) = x509_parser::parse_x509_certificate(&last).ok()?;
    let cn = cert.issuer().iter_common_name().next()?;
    cn.as_str().ok().map(str::to_owned)
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

/// Answers the authorization's challenge of the resolver's kind and waits
/// until the CA has decided; the answer is removed however that ends.
async fn authorize(
    resolver: &Resolver,
    session: &Session,
    challenges: &Challenges,
    mut auth: AuthorizationHandle<'_>,
    progress: &Progress<'_>,
) -> Result<(), AcmeError> {
    let url = auth.url().to_owned();
    // A wildcard's authorization names its base domain (RFC 8555 §7.1.3).
    let name = match auth.identifier().identifier {
        Identifier::Ip(ip) => ip.to_string(),
        other => identifier_text(other),
    };
    match auth.status {
        AuthorizationStatus::Valid => return Ok(()),
        AuthorizationStatus::Pending => {}
        _ => return Err(validation_error(&name, &auth)),
    }
    let wanted = match (resolver.challenge, &resolver.dns) {
        (_, Some(_)) => ChallengeType::Dns01,
        (ChallengeKind::TlsAlpn01, None) => ChallengeType::TlsAlpn01,
        (ChallengeKind::Http01, None) => ChallengeType::Http01,
        (ChallengeKind::Dns01, None) => {
            return Err(AcmeError::Order(
                "the resolver answers DNS-01 but has no DNS provider".to_owned(),
            ));
        }
    };
    let Some(mut challenge) = auth.challenge(wanted.clone()) else {
        return Err(AcmeError::Validation {
            domain: name,
            detail: format!("the CA offers no {wanted:?} challenge for it"),
        });
    };
    let key_auth = challenge.key_authorization().as_str().to_owned();
    let check = Check {
        resolver,
        session,
        url: &url,
        name: &name,
    };
    match wanted {
        ChallengeType::Dns01 => {
            let solver = resolver
                .dns
                .as_ref()
                .ok_or_else(|| AcmeError::Order("the resolver has no DNS provider".to_owned()))?;
            authorize_dns(&check, &mut challenge, solver, &key_auth, progress).await
        }
        ChallengeType::TlsAlpn01 => {
            // The validation's SNI: the name, or an address's reverse
            // name (RFC 8738 §6).
            let sni = match identifier(&name) {
                Identifier::Ip(ip) => reverse_name(ip),
                _ => name.clone(),
            };
            let (cert_pem, key_pem) = validation_certificate(&name, &key_auth)?;
            let cert =
                crate::tls::store::parse_pem(&name, cert_pem.as_bytes(), key_pem.as_bytes())?;
            challenges.set_tls_alpn(&sni, &cert.key);
            let _answer = Answer::TlsAlpn(challenges, sni.clone());
            let shared = resolver.shared();
            if let Some(shared) = shared {
                shared.put_tls_alpn(&sni, &cert_pem, &key_pem).await?;
            }
            let outcome = check.ready(&mut challenge).await;
            if let Some(shared) = shared {
                let _ = shared.remove_tls_alpn(&sni).await;
            }
            outcome
        }
        _ => {
            let token = challenge.token.clone();
            challenges.set_http(&token, &key_auth);
            let _answer = Answer::Http(challenges, token.clone());
            let shared: Option<&Arc<SharedStorage>> = resolver.shared();
            if let Some(shared) = shared {
                shared.put_http(&token, &key_auth).await?;
            }
            let outcome = check.ready(&mut challenge).await;
            if let Some(shared) = shared {
                let _ = shared.remove_http(&token).await;
            }
            outcome
        }
    }
}

/// The text of a DNS (or other) identifier.
fn identifier_text(identifier: &Identifier) -> String {
    match identifier {
        Identifier::Dns(name) => name.clone(),
        Identifier::Ip(ip) => ip.to_string(),
        other => format!("{other:?}"),
    }
}

/// The reverse-mapping name of an address (`in-addr.arpa`, `ip6.arpa`).
pub(super) fn reverse_name(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, c, d] = v4.octets();
            format!("{d}.{c}.{b}.{a}.in-addr.arpa")
        }
        IpAddr::V6(v6) => {
            let mut out = String::new();
            for byte in v6.octets().iter().rev() {
                out.push_str(&format!("{:x}.{:x}.", byte & 0xf, byte >> 4));
            }
            out.push_str("ip6.arpa");
            out
        }
    }
}

/// The self-signed certificate a TLS-ALPN-01 validation expects (RFC
/// 8737, RFC 8738 for addresses): the name, and the SHA-256 of the key
/// authorization in the critical acmeIdentifier extension. Certificate
/// and key as PEM.
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
    check: &Check<'_>,
    challenge: &mut instant_acme::ChallengeHandle<'_>,
    solver: &Arc<dns::Solver>,
    key_auth: &str,
    progress: &Progress<'_>,
) -> Result<(), AcmeError> {
    let domain = check.name.to_owned();
    let value = dns::txt_value(key_auth);
    let fqdn = dns::challenge_fqdn(&domain);
    let report = |step: dns::Step| {
        progress(Some(PendingChallenge {
            kind: ChallengeKind::Dns01,
            domain: domain.clone(),
            fqdn: fqdn.clone(),
            step,
            since: crate::clock::unix_time(),
        }));
    };
    tracing::info!(resolver = %check.resolver.name, domain = %domain, fqdn = %fqdn, provider = solver.provider_name(), "publishing the DNS-01 TXT record");
    let published = solver
        .publish(&fqdn, &value, &report)
        .await
        .map_err(|source| AcmeError::Dns {
            domain: domain.clone(),
            source: Box::new(source),
        })?;
    report(dns::Step::Validating);
    let outcome = check.validate(challenge).await;
    published.remove().await;
    progress(None);
    outcome
}

/// One authorization being validated.
struct Check<'a> {
    resolver: &'a Resolver,
    session: &'a Session,
    /// The authorization's URL.
    url: &'a str,
    /// The name (or address) validated.
    name: &'a str,
}

impl Check<'_> {
    /// Waits `httpChallenge.delay` / `tlsChallenge.delay`, then validates.
    async fn ready(
        &self,
        challenge: &mut instant_acme::ChallengeHandle<'_>,
    ) -> Result<(), AcmeError> {
        tokio::time::sleep(self.resolver.challenge_delay).await;
        self.validate(challenge).await
    }

    /// Tells the CA to validate the challenge and polls the authorization
    /// until it is decided.
    async fn validate(
        &self,
        challenge: &mut instant_acme::ChallengeHandle<'_>,
    ) -> Result<(), AcmeError> {
        challenge
            .set_ready()
            .await
            .map_err(|e| AcmeError::from_client(&self.resolver.directory_url, e))?;
        for poll in 1..=POLLS {
            tokio::time::sleep(poll_delay(poll)).await;
            let (_, body) = self.session.fetch(self.url).await?;
            let auth: AuthorizationState = serde_json::from_slice(&body).map_err(|e| {
                AcmeError::Protocol(format!(
                    "the authorization at {} does not read: {e}",
                    self.url
                ))
            })?;
            match auth.status {
                AuthorizationStatus::Pending => {}
                AuthorizationStatus::Valid => return Ok(()),
                _ => return Err(validation_error(self.name, &auth)),
            }
        }
        Err(AcmeError::Validation {
            domain: self.name.to_owned(),
            detail: "the CA did not finish validating in time".to_owned(),
        })
    }
}

fn validation_error(domain: &str, auth: &AuthorizationState) -> AcmeError {
    let detail = auth
        .challenges
        .iter()
        .filter_map(|c| c.error.as_ref())
        .filter_map(|p| p.detail.clone())
        .next()
        .unwrap_or_else(|| {
            // RFC 8555 §7.1.6's names for the states.
            let status = match auth.status {
                AuthorizationStatus::Pending => "pending",
                AuthorizationStatus::Valid => "valid",
                AuthorizationStatus::Invalid => "invalid",
                AuthorizationStatus::Revoked => "revoked",
                AuthorizationStatus::Expired => "expired",
                AuthorizationStatus::Deactivated => "deactivated",
            };
            format!("authorization is {status}")
        });
    AcmeError::Validation {
        domain: domain.to_owned(),
        detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_ip_identifiers_with_reverse_names() {
        assert_eq!(
            identifier("127.0.0.1"),
            Identifier::Ip([127, 0, 0, 1].into())
        );
        assert_eq!(
            identifier("[::1]"),
            Identifier::Ip(std::net::Ipv6Addr::LOCALHOST.into())
        );
        assert_eq!(
            identifier("app.test"),
            Identifier::Dns("app.test".to_owned())
        );
        assert_eq!(
            reverse_name([127, 0, 0, 1].into()),
            "1.0.0.127.in-addr.arpa"
        );
        let v6 = reverse_name("2001:db8::567:89ab".parse().unwrap());
        assert_eq!(
            v6,
            "b.a.9.8.7.6.5.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa"
        );
    }
}
