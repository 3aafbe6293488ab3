//! ACME Renewal Information (RFC 9773): the CA's suggested renewal
//! window for each certificate, asked again when its `Retry-After` has
//! passed, and a renewal at a random point inside it (§4.2) with the
//! renewed certificate named in the new order's `replaces` (§5). Where the
//! CA's directory has no `renewalInfo`, the lifetime rule of [`schedule`]
//! stays.

use super::{AcmeError, Resolver, schedule};
use base64::Engine as _;
use serde::Serialize;

/// Longest wait before the window is asked again, whatever the CA says,
/// so that a CA's change of mind (an incident) is seen within a day.
const REFETCH_MOST: i64 = 24 * 3600;

/// Wait before asking again after the CA did not answer.
const REFETCH_AFTER_ERROR: i64 = 3600;

/// What is known of one certificate's renewal window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Window {
    /// The certificate's identifier: base64url of its authority key
    /// identifier, a dot, base64url of its serial number (§4.1).
    pub cert_id: String,
    /// Start of the suggested window, seconds since the epoch.
    pub start: i64,
    /// End of the suggested window, seconds since the epoch.
    pub end: i64,
    /// The point chosen at random inside it, when renewal happens.
    pub renew_at: i64,
    /// When the window is asked for again (the CA's `Retry-After`).
    pub next_fetch: i64,
    /// The CA's page explaining the window, when it gives one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explanation_url: Option<String>,
}

/// Why a certificate is renewed when it is, for the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum RenewalReason {
    /// At a random point of the CA's suggested window (ARI).
    Ari,
    /// The CA has no renewal information (or did not answer): when a third
    /// of the lifetime, or the `certificatesDuration` window, is left.
    Lifetime,
}

/// The plan for a served certificate: when to order, when to wake up
/// (the order, or the next ARI fetch), and what the order replaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Plan {
    pub order_at: i64,
    pub wake_at: i64,
    pub replaces: Option<String>,
    pub reason: RenewalReason,
}

/// The ARI identifier of a DER certificate (§4.1), if it has an authority
/// key identifier.
pub fn cert_id(der: &[u8]) -> Option<String> {
    use x509_parser::extensions::ParsedExtension;
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let aki = cert
        .iter_extensions()
        .find_map(|e| match e.parsed_extension() {
            ParsedExtension::AuthorityKeyIdentifier(aki) => {
                aki.key_identifier.as_ref().map(|k| k.0)
            }
            _ => None,
        })?;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    Some(format!(
        "{}.{}",
        b64.encode(aki),
        b64.encode(cert.tbs_certificate.raw_serial())
    ))
}

/// A uniformly random point of `[start, end]` (§4.2); `end` when the
/// window is empty or reversed.
pub fn random_point(start: i64, end: i64, random: u64) -> i64 {
    let width = end.saturating_sub(start);
    if width <= 0 {
        return end;
    }
    let offset = random % (u64::try_from(width).unwrap_or(0) + 1);
    start + i64::try_from(offset).unwrap_or(0)
}

/// When to ask for the window again: when the CA's `Retry-After` (`due`,
/// seconds since the epoch) has passed, at least a second from `now` and
/// never more than a day.
pub fn next_fetch(now: i64, due: i64) -> i64 {
    due.clamp(now + 1, now + REFETCH_MOST)
}

/// `delay` from now, in whole seconds since the epoch, rounded up so that
/// the time is never before it.
fn after(delay: std::time::Duration) -> i64 {
    let at = std::time::SystemTime::now() + delay;
    at.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| {
        i64::try_from(d.as_secs()).unwrap_or(i64::MAX) + i64::from(d.subsec_nanos() > 0)
    })
}

impl Resolver {
    /// The renewal plan of a served certificate: its ARI window (asked
    /// for when `known` is stale or about another certificate) or, where
    /// the CA has none, the lifetime rule.
    pub(super) async fn plan(
        &self,
        cert: &crate::tls::store::LoadedCert,
        known: &mut Option<Window>,
        now: i64,
    ) -> Plan {
        let lifetime = Plan {
            order_at: schedule::renew_at(cert.not_before, cert.not_after, self.renew_window),
            wake_at: schedule::renew_at(cert.not_before, cert.not_after, self.renew_window),
            replaces: None,
            reason: RenewalReason::Lifetime,
        };
        let Some(id) = cert.key.cert.first().and_then(|der| cert_id(der)) else {
            return lifetime;
        };
        if known.as_ref().is_some_and(|w| w.cert_id != id) {
            *known = None;
        }
        if known.as_ref().is_none_or(|w| w.next_fetch <= now) {
            match self.fetch_window(&id, now).await {
                Ok(Some(window)) => {
                    tracing::info!(resolver = %self.name, cert_id = %id, start = window.start, end = window.end, renew_at = window.renew_at, "renewal window from the CA");
                    *known = Some(window);
                }
                Ok(None) => return lifetime,
                Err(e) => {
                    tracing::warn!(resolver = %self.name, cert_id = %id, error = %e, "renewal information not available; the lifetime rule applies until it is");
                    let retry = now + REFETCH_AFTER_ERROR;
                    return match known.as_mut() {
                        // The last window stands until the CA answers.
                        Some(w) => {
                            w.next_fetch = retry;
                            plan_of(w)
                        }
                        None => Plan {
                            wake_at: lifetime.order_at.min(retry),
                            ..lifetime
                        },
                    };
                }
            }
        }
        known.as_ref().map_or(lifetime, plan_of)
    }

    /// Asks the CA for the window of certificate `id`; None when its
    /// directory has no `renewalInfo`.
    async fn fetch_window(&self, id: &str, now: i64) -> Result<Option<Window>, AcmeError> {
        let session = self.account().await?;
        let Some((aki, serial)) = id.split_once('.') else {
            return Ok(None);
        };
        let identifier = instant_acme::CertificateIdentifier {
            authority_key_identifier: aki.into(),
            serial: serial.into(),
        };
        match session.account.renewal_info(&identifier).await {
            Ok((info, retry_after)) => {
                let start = info.suggested_window.start.unix_timestamp();
                let end = info.suggested_window.end.unix_timestamp();
                Ok(Some(Window {
                    cert_id: id.to_owned(),
                    start,
                    end,
                    renew_at: random_point(start, end, super::shared::rand_u64()),
                    next_fetch: next_fetch(now, after(retry_after)),
                    explanation_url: info.explanation_url,
                }))
            }
            Err(instant_acme::Error::Unsupported(_)) => Ok(None),
            Err(e) => Err(AcmeError::from_client(&self.directory_url, e)),
        }
    }
}

/// The plan a known window gives.
fn plan_of(window: &Window) -> Plan {
    Plan {
        order_at: window.renew_at,
        wake_at: window.renew_at.min(window.next_fetch),
        replaces: Some(window.cert_id.clone()),
        reason: RenewalReason::Ari,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_renewal_point_is_inside_the_window() {
        for random in [0, 1, 59, 60, 61, u64::MAX] {
            let at = random_point(100, 160, random);
            assert!((100..=160).contains(&at), "{random}: {at}");
        }
        assert_eq!(random_point(100, 160, 0), 100);
        assert_eq!(random_point(100, 160, 60), 160);
        assert_eq!(random_point(100, 100, 7), 100);
        assert_eq!(random_point(200, 100, 7), 100);
    }

    #[test]
    fn retry_after_sets_the_next_fetch_within_a_day() {
        assert_eq!(next_fetch(1000, 1030), 1030);
        assert_eq!(next_fetch(1000, 900), 1001);
        assert_eq!(next_fetch(0, 10 * 24 * 3600), 24 * 3600);
    }

    #[test]
    fn the_cert_id_is_the_aki_and_the_serial() {
        // RFC 9773 §4.1's example: keyIdentifier 69:88:5B:6B:87:46:40:41:E1:B3:7B:84:7B:A0:AE:2C:DE:01:C8:D4,
        // serial 00:87:65:43:21.
        let aki = [
            0x69, 0x88, 0x5b, 0x6b, 0x87, 0x46, 0x40, 0x41, 0xe1, 0xb3, 0x7b, 0x84, 0x7b, 0xa0,
            0xae, 0x2c, 0xde, 0x01, 0xc8, 0xd4,
        ];
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let id = format!(
            "{}.{}",
            b64.encode(aki),
            b64.encode([0x00, 0x87, 0x65, 0x43, 0x21])
        );
        assert_eq!(id, "aYhba4dGQEHhs3uEe6CuLN4ByNQ.AIdlQyE");
        // A certificate made here: its id reads back its own serial.
        let ca_key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca.key_identifier_method = rcgen::KeyIdMethod::PreSpecified(aki.to_vec());
        let ca_cert = ca.self_signed(&ca_key).unwrap();
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let mut leaf = rcgen::CertificateParams::new(vec!["a.test".to_owned()]).unwrap();
        leaf.serial_number = Some(rcgen::SerialNumber::from_slice(&[
            0x00, 0x87, 0x65, 0x43, 0x21,
        ]));
        leaf.use_authority_key_identifier_extension = true;
        let leaf = leaf.signed_by(&key, &ca_cert, &ca_key).unwrap();
        assert_eq!(
            cert_id(leaf.der()).as_deref(),
            Some("aYhba4dGQEHhs3uEe6CuLN4ByNQ.AIdlQyE")
        );
        assert_eq!(cert_id(b"not a certificate"), None);
    }
}
