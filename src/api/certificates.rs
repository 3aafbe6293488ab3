//! `/api/certificates` in Traefik's shape: one object per certificate
//! served, read from the certificate itself (names, validity, issuer, key,
//! fingerprints), found by its SHA-256 fingerprint. gangway's own view, with
//! how each certificate is obtained and renewed, is `/api/tls/certificates`.

use crate::crypto::hex;
use crate::runtime::Status;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::net::IpAddr;
use x509_parser::prelude::{FromDer, GeneralName, ParsedExtension, X509Certificate};
use x509_parser::public_key::PublicKey;
use x509_parser::x509::{AttributeTypeAndValue, X509Name};

/// Days of validity under which a certificate is a warning, as in Traefik.
const WARN_DAYS: i64 = 30;

/// One served certificate as Traefik's API describes it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TraefikCertificate {
    /// The SHA-256 fingerprint of the certificate: its id, which Traefik
    /// calls `name`.
    #[serde(rename = "name")]
    pub id: String,
    /// DNS names and addresses, sorted.
    pub sans: Vec<String>,
    /// End of validity, RFC 3339.
    pub not_after: String,
    /// Start of validity, RFC 3339.
    pub not_before: String,
    /// The serial number, in decimal.
    pub serial_number: String,
    /// The subject's common name.
    pub common_name: String,
    /// The issuer's organization, when it has one.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub issuer_org: String,
    /// The issuer's common name, when it has one.
    #[serde(rename = "issuerCN", skip_serializing_if = "String::is_empty")]
    pub issuer_cn: String,
    /// The issuer's country, when it has one.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub issuer_country: String,
    /// The subject's organization, when it has one.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub organization: String,
    /// The subject's country, when it has one.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub country: String,
    /// The X.509 version, `v3`.
    pub version: String,
    /// `RSA`, `ECDSA`, `Ed25519` or `Unknown`.
    pub key_type: String,
    /// The key's size in bits (RSA modulus, ECDSA curve).
    #[serde(skip_serializing_if = "is_zero")]
    pub key_size: u32,
    /// The signature algorithm, named as Go names it (`ECDSA-SHA256`).
    pub signature_algorithm: String,
    /// The SHA-256 fingerprint of the certificate.
    pub cert_fingerprint: String,
    /// The SHA-256 fingerprint of its public key (SubjectPublicKeyInfo).
    pub public_key_fingerprint: String,
    /// `enabled`, `warning` (under 30 days left) or `disabled` (expired).
    pub status: Status,
    /// The names searched with `search`, as one text.
    #[serde(skip)]
    pub searched: String,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl TraefikCertificate {
    /// The certificate `der` at Unix time `now`; None when it does not
    /// parse (a served certificate always does).
    pub fn of(der: &[u8], now: i64) -> Option<Self> {
        let (_, cert) = X509Certificate::from_der(der).ok()?;
        let fingerprint = hex(&Sha256::digest(der));
        let not_after = cert.validity().not_after.timestamp();
        let (key_type, key_size) = key_of(&cert);
        let (issuer_org, issuer_cn, issuer_country) = parts(cert.issuer());
        let (organization, common_name, country) = parts(cert.subject());
        let sans = sans(&cert);
        let status = if not_after <= now {
            Status::Disabled
        } else if not_after - now < WARN_DAYS * 86_400 {
            Status::Warning
        } else {
            Status::Enabled
        };
        Some(TraefikCertificate {
            id: fingerprint.clone(),
            searched: [&common_name, &issuer_org, &issuer_cn]
                .into_iter()
                .chain(&sans)
                .map(String::as_str)
                .collect::<Vec<_>>()
                .join(" "),
            sans,
            not_after: rfc3339(not_after),
            not_before: rfc3339(cert.validity().not_before.timestamp()),
            serial_number: cert.tbs_certificate.serial.to_string(),
            common_name,
            issuer_org,
            issuer_cn,
            issuer_country,
            organization,
            country,
            version: format!("v{}", cert.version().0 + 1),
            key_type: key_type.to_owned(),
            key_size,
            signature_algorithm: signature_name(&cert.signature_algorithm.algorithm.to_id_string()),
            cert_fingerprint: fingerprint,
            public_key_fingerprint: hex(&Sha256::digest(cert.public_key().raw)),
            status,
        })
    }

    /// The issuer as Traefik sorts on it: its organization, else its
    /// common name.
    pub fn issuer(&self) -> &str {
        if self.issuer_org.is_empty() {
            &self.issuer_cn
        } else {
            &self.issuer_org
        }
    }
}

/// Organization, common name and country of a distinguished name (the
/// first of each; empty when absent).
fn parts(name: &X509Name<'_>) -> (String, String, String) {
    (
        first(name.iter_organization()),
        first(name.iter_common_name()),
        first(name.iter_country()),
    )
}

/// The first of a name's attributes of one kind, as text (empty if none).
fn first<'a>(mut attributes: impl Iterator<Item = &'a AttributeTypeAndValue<'a>>) -> String {
    attributes
        .next()
        .and_then(|a| a.as_str().ok())
        .unwrap_or_default()
        .to_owned()
}

/// The DNS names and addresses of the subject alternative names, sorted.
fn sans(cert: &X509Certificate<'_>) -> Vec<String> {
    let mut out = Vec::new();
    for ext in cert.extensions() {
        let ParsedExtension::SubjectAlternativeName(san) = ext.parsed_extension() else {
            continue;
        };
        for name in &san.general_names {
            match name {
                GeneralName::DNSName(dns) => out.push((*dns).to_owned()),
                GeneralName::IPAddress(bytes) => {
                    let ip = match bytes.len() {
                        4 => <[u8; 4]>::try_from(*bytes).ok().map(IpAddr::from),
                        16 => <[u8; 16]>::try_from(*bytes).ok().map(IpAddr::from),
                        _ => None,
                    };
                    out.extend(ip.map(|ip| ip.to_string()));
                }
                _ => {}
            }
        }
    }
    out.sort();
    out
}

/// The key's type and size in bits, as Traefik names them.
fn key_of(cert: &X509Certificate<'_>) -> (&'static str, u32) {
    match cert.public_key().parsed() {
        Ok(PublicKey::RSA(rsa)) => ("RSA", u32::try_from(rsa.key_size()).unwrap_or(0)),
        Ok(PublicKey::EC(ec)) => ("ECDSA", u32::try_from(ec.key_size()).unwrap_or(0)),
        _ if cert.public_key().algorithm.algorithm.to_id_string() == "1.3.101.112" => {
            ("Ed25519", 0)
        }
        _ => ("Unknown", 0),
    }
}

/// Go's name of a signature algorithm (`x509.SignatureAlgorithm`), by OID;
/// the OID itself for one Go does not name.
fn signature_name(oid: &str) -> String {
    match oid {
        "1.2.840.113549.1.1.5" => "SHA1-RSA",
        "1.2.840.113549.1.1.11" => "SHA256-RSA",
        "1.2.840.113549.1.1.12" => "SHA384-RSA",
        "1.2.840.113549.1.1.13" => "SHA512-RSA",
        "1.2.840.113549.1.1.10" => "SHA256-RSAPSS",
        "1.2.840.10045.4.1" => "ECDSA-SHA1",
        "1.2.840.10045.4.3.2" => "ECDSA-SHA256",
        "1.2.840.10045.4.3.3" => "ECDSA-SHA384",
        "1.2.840.10045.4.3.4" => "ECDSA-SHA512",
        "1.3.101.112" => "Ed25519",
        other => other,
    }
    .to_owned()
}

/// `2026-01-02T15:04:05Z` of a Unix time, as Go writes a `time.Time`.
fn rfc3339(secs: i64) -> String {
    let at = u64::try_from(secs).map_or(std::time::UNIX_EPOCH, |s| {
        std::time::UNIX_EPOCH + std::time::Duration::from_secs(s)
    });
    crate::clock::Utc::of(at).seconds()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A self-signed certificate for `names`, valid from 2026-01-01 to
    /// 2027-01-01.
    fn made(key: &rcgen::KeyPair, names: &[&str]) -> Vec<u8> {
        let mut params = rcgen::CertificateParams::new(
            names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>(),
        )
        .unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, names[0]);
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, "Example Org");
        params.not_before = rcgen::date_time_ymd(2026, 1, 1);
        params.not_after = rcgen::date_time_ymd(2027, 1, 1);
        params.self_signed(key).unwrap().der().to_vec()
    }

    #[test]
    fn a_certificate_reads_as_traefik_shows_it() {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let der = made(&key, &["b.test", "a.test", "127.0.0.1"]);
        let jan_1 = 1_767_225_600;
        let c = TraefikCertificate::of(&der, jan_1).unwrap();
        assert_eq!(c.sans, ["127.0.0.1", "a.test", "b.test"]);
        assert_eq!(c.common_name, "b.test");
        assert_eq!(c.issuer_cn, "b.test");
        assert_eq!(c.issuer_org, "Example Org");
        assert_eq!(c.issuer(), "Example Org");
        assert_eq!(c.organization, "Example Org");
        assert_eq!(c.not_before, "2026-01-01T00:00:00Z");
        assert_eq!(c.not_after, "2027-01-01T00:00:00Z");
        assert_eq!(c.version, "v3");
        assert_eq!((c.key_type.as_str(), c.key_size), ("ECDSA", 256));
        assert_eq!(c.signature_algorithm, "ECDSA-SHA256");
        assert_eq!(c.id, c.cert_fingerprint);
        assert_eq!(c.cert_fingerprint.len(), 64);
        assert_ne!(c.public_key_fingerprint, c.cert_fingerprint);
        assert_eq!(c.status, Status::Enabled);
        // Under 30 days left: a warning; past its end: disabled.
        let end = jan_1 + 365 * 86_400;
        assert_eq!(
            TraefikCertificate::of(&der, end - 86_400).unwrap().status,
            Status::Warning
        );
        assert_eq!(
            TraefikCertificate::of(&der, end).unwrap().status,
            Status::Disabled
        );
        assert!(TraefikCertificate::of(b"not a certificate", jan_1).is_none());
    }
}
