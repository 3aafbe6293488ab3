//! `passTLSClientCert`: the certificates a TLS client presented, passed to
//! the server in Traefik's headers: `X-Forwarded-Tls-Client-Cert` (each
//! certificate's DER in base64, escaped as a URL query value, joined by
//! `,`) and `X-Forwarded-Tls-Client-Cert-Info` (chosen fields, per
//! certificate `Subject="…";Issuer="…";SerialNumber="…";NB="…";NA="…";SAN="…"`,
//! certificates joined by `,`, the whole escaped as a query value).
//!
//! The entry point removes both headers from clients it does not trust, so
//! a server sees them only as gangway wrote them.

use super::{Exchange, Flow, Middleware, MiddlewareError, Req};
use crate::config::dynamic::middleware as model;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use http::header::{HeaderName, HeaderValue};
use x509_parser::prelude::{GeneralName, X509Certificate, X509Name};

/// `X-Forwarded-Tls-Client-Cert`.
pub const X_FORWARDED_TLS_CLIENT_CERT: HeaderName =
    HeaderName::from_static("x-forwarded-tls-client-cert");
/// `X-Forwarded-Tls-Client-Cert-Info`.
pub const X_FORWARDED_TLS_CLIENT_CERT_INFO: HeaderName =
    HeaderName::from_static("x-forwarded-tls-client-cert-info");

/// Which parts of a distinguished name are sent.
#[derive(Clone, Copy, Debug, Default)]
struct NameParts {
    country: bool,
    province: bool,
    locality: bool,
    organization: bool,
    organizational_unit: bool,
    common_name: bool,
    serial_number: bool,
    domain_component: bool,
}

/// A compiled `passTLSClientCert`.
pub struct PassTlsClientCert {
    pem: bool,
    info: Option<Info>,
}

struct Info {
    not_after: bool,
    not_before: bool,
    sans: bool,
    serial_number: bool,
    subject: Option<NameParts>,
    issuer: Option<NameParts>,
}

/// Compiles a `passTLSClientCert`.
pub fn compile(cfg: &model::PassTlsClientCert) -> Result<PassTlsClientCert, MiddlewareError> {
    let info = cfg.info.as_ref().map(|i| Info {
        not_after: i.not_after,
        not_before: i.not_before,
        sans: i.sans,
        serial_number: i.serial_number,
        subject: i.subject.map(|s| NameParts {
            country: s.country,
            province: s.province,
            locality: s.locality,
            organization: s.organization,
            organizational_unit: s.organizational_unit,
            common_name: s.common_name,
            serial_number: s.serial_number,
            domain_component: s.domain_component,
        }),
        issuer: i.issuer.map(|s| NameParts {
            country: s.country,
            province: s.province,
            locality: s.locality,
            organization: s.organization,
            organizational_unit: false,
            common_name: s.common_name,
            serial_number: s.serial_number,
            domain_component: s.domain_component,
        }),
    });
    Ok(PassTlsClientCert { pem: cfg.pem, info })
}

impl Middleware for PassTlsClientCert {
    fn request(&self, req: &mut Req, cx: &Exchange) -> Flow {
        let Some(certs) = cx.client_certs.as_deref().filter(|c| !c.is_empty()) else {
            // As Traefik: nothing to pass without a client certificate.
            return Flow::Continue;
        };
        if self.pem {
            let value = certs
                .iter()
                .map(|c| query_escape(&STANDARD.encode(c.as_ref())))
                .collect::<Vec<_>>()
                .join(",");
            if let Ok(v) = HeaderValue::from_str(&value) {
                req.headers_mut().insert(X_FORWARDED_TLS_CLIENT_CERT, v);
            }
        }
        if let Some(info) = &self.info {
            let value = certs
                .iter()
                .map(|c| info.describe(c.as_ref()))
                .collect::<Vec<_>>()
                .join(",");
            if let Ok(v) = HeaderValue::from_str(&query_escape(&value)) {
                req.headers_mut()
                    .insert(X_FORWARDED_TLS_CLIENT_CERT_INFO, v);
            }
        }
        Flow::Continue
    }
}

impl Info {
    /// One certificate's chosen fields; empty when it does not parse
    /// (rustls accepted it, so that is not expected).
    fn describe(&self, der: &[u8]) -> String {
        let Ok((_, cert)) = x509_parser::parse_x509_certificate(der) else {
            return String::new();
        };
        let mut fields = Vec::new();
        if let Some(parts) = &self.subject
            && let Some(dn) = name_text(parts, cert.subject())
        {
            fields.push(format!("Subject=\"{dn}\""));
        }
        if let Some(parts) = &self.issuer
            && let Some(dn) = name_text(parts, cert.issuer())
        {
            fields.push(format!("Issuer=\"{dn}\""));
        }
        if self.serial_number {
            fields.push(format!("SerialNumber=\"{}\"", cert.tbs_certificate.serial));
        }
        if self.not_before {
            fields.push(format!("NB=\"{}\"", cert.validity().not_before.timestamp()));
        }
        if self.not_after {
            fields.push(format!("NA=\"{}\"", cert.validity().not_after.timestamp()));
        }
        if self.sans {
            fields.push(format!("SAN=\"{}\"", sans(&cert).join(",")));
        }
        fields.join(";")
    }
}

/// The chosen parts of a name in Traefik's order (DC, C, ST, L, O, OU, SN,
/// CN); None when none of them is present.
fn name_text(parts: &NameParts, name: &X509Name<'_>) -> Option<String> {
    use x509_parser::oid_registry as oids;
    let values = |oid: &x509_parser::der_parser::oid::Oid<'_>| -> Vec<&str> {
        name.iter_attributes()
            .filter(|a| a.attr_type() == oid)
            .filter_map(|a| a.as_str().ok())
            .filter(|v| !v.is_empty())
            .collect()
    };
    let mut out: Vec<String> = Vec::new();
    let mut all = |on: bool, key: &str, oid: &x509_parser::der_parser::oid::Oid<'_>| {
        if on {
            out.extend(values(oid).iter().map(|v| format!("{key}={v}")));
        }
    };
    all(parts.domain_component, "DC", &oids::OID_DOMAIN_COMPONENT);
    all(parts.country, "C", &oids::OID_X509_COUNTRY_NAME);
    all(parts.province, "ST", &oids::OID_X509_STATE_OR_PROVINCE_NAME);
    all(parts.locality, "L", &oids::OID_X509_LOCALITY_NAME);
    all(parts.organization, "O", &oids::OID_X509_ORGANIZATION_NAME);
    all(
        parts.organizational_unit,
        "OU",
        &oids::OID_X509_ORGANIZATIONAL_UNIT,
    );
    // Go keeps one serial number and one common name: the last given.
    let mut last = |on: bool, key: &str, oid: &x509_parser::der_parser::oid::Oid<'_>| {
        if on && let Some(v) = values(oid).last() {
            out.push(format!("{key}={v}"));
        }
    };
    last(parts.serial_number, "SN", &oids::OID_X509_SERIALNUMBER);
    last(parts.common_name, "CN", &oids::OID_X509_COMMON_NAME);
    (!out.is_empty()).then(|| out.join(","))
}

/// Subject alternative names as Go groups them: DNS names, e-mail
/// addresses, IP addresses, URIs.
fn sans(cert: &X509Certificate<'_>) -> Vec<String> {
    let Ok(Some(ext)) = cert.subject_alternative_name() else {
        return Vec::new();
    };
    let names = &ext.value.general_names;
    let mut out = Vec::new();
    for n in names {
        if let GeneralName::DNSName(d) = n {
            out.push((*d).to_owned());
        }
    }
    for n in names {
        if let GeneralName::RFC822Name(m) = n {
            out.push((*m).to_owned());
        }
    }
    for n in names {
        if let GeneralName::IPAddress(ip) = n {
            match ip.len() {
                4 => out.push(std::net::Ipv4Addr::new(ip[0], ip[1], ip[2], ip[3]).to_string()),
                16 => {
                    let mut b = [0u8; 16];
                    b.copy_from_slice(ip);
                    out.push(std::net::Ipv6Addr::from(b).to_string());
                }
                _ => {}
            }
        }
    }
    for n in names {
        if let GeneralName::URI(u) = n {
            out.push((*u).to_owned());
        }
    }
    out
}

/// Escapes `text` as Go's `url.QueryEscape` does: letters, digits and
/// `-_.~` stay, a space becomes `+`, every other byte `%XX`.
pub fn query_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 4);
    for b in text.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(char::from(b));
            }
            b' ' => out.push('+'),
            _ => {
                out.push('%');
                out.push(char::from(b"0123456789ABCDEF"[usize::from(b >> 4)]));
                out.push(char::from(b"0123456789ABCDEF"[usize::from(b & 15)]));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_escape_matches_go() {
        assert_eq!(
            query_escape("a+b/c=d e,f;\"g\""),
            "a%2Bb%2Fc%3Dd+e%2Cf%3B%22g%22"
        );
        assert_eq!(query_escape("Az09-_.~"), "Az09-_.~");
    }

    #[test]
    fn info_lists_the_chosen_fields_in_traefiks_order() {
        let mut params =
            rcgen::CertificateParams::new(vec!["client.test".to_owned()]).expect("params");
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "ann");
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, "Example");
        params
            .distinguished_name
            .push(rcgen::DnType::CountryName, "FR");
        params
            .subject_alt_names
            .push(rcgen::SanType::IpAddress([127, 0, 0, 1].into()));
        let key = rcgen::KeyPair::generate().expect("key");
        let cert = params.self_signed(&key).expect("cert");
        let cfg = model::PassTlsClientCert {
            pem: false,
            info: Some(model::TlsClientCertInfo {
                sans: true,
                subject: Some(model::TlsClientCertSubject {
                    common_name: true,
                    organization: true,
                    country: true,
                    ..Default::default()
                }),
                ..Default::default()
            }),
        };
        let m = compile(&cfg).expect("compiles");
        let text = m.info.as_ref().expect("info").describe(cert.der());
        assert_eq!(
            text,
            "Subject=\"C=FR,O=Example,CN=ann\";SAN=\"client.test,127.0.0.1\""
        );
    }
}
