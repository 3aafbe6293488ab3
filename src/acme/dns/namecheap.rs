//! The `namecheap` provider, through Namecheap's XML API and the variables
//! Traefik's DNS library documents for it: `NAMECHEAP_API_USER`,
//! `NAMECHEAP_API_KEY`, `NAMECHEAP_SANDBOX` (the sandbox system),
//! `NAMECHEAP_TTL` (default 120), `NAMECHEAP_HTTP_TIMEOUT` (default 60).
//! gangway's own `NAMECHEAP_API_URL` points it elsewhere, and its own
//! `NAMECHEAP_CLIENT_IP` names the address Namecheap's allow list holds;
//! without it the address is asked of Namecheap's own service before the
//! first call, as Traefik's DNS library does.
//!
//! Namecheap's API has no call that changes one record: `getHosts` reads
//! every host record of the domain and `setHosts` replaces them all, so
//! the value is added to (cleanup: removed from) the whole list read just
//! before. The domain is the longest name the record's name ends with
//! that the account holds, split into Namecheap's `SLD` and `TLD`.

use super::api::{self, Api, ApiProblem, Call};
use super::route53::unescape;
use super::{DnsError, Env};
use http::Method;
use std::time::Duration;

/// Where the API is, unless `NAMECHEAP_API_URL` says otherwise.
const BASE_URL: &str = "https://api.namecheap.com/xml.response";
/// The sandbox's API, with `NAMECHEAP_SANDBOX`.
const SANDBOX_URL: &str = "https://api.sandbox.namecheap.com/xml.response";
/// Namecheap's service answering the caller's public address.
const CLIENT_IP_URL: &str = "https://dynamicdns.park-your-domain.com/getip";
/// The TTL unless `NAMECHEAP_TTL` says otherwise.
const DEFAULT_TTL: u64 = 120;
/// The time limit of one call unless `NAMECHEAP_HTTP_TIMEOUT` says otherwise.
const HTTP_TIMEOUT: Duration = Duration::from_secs(60);
/// Error numbers saying the account does not hold the domain asked for.
const NOT_THIS_DOMAIN: &[&str] = &["2019166", "2016166"];

/// The `namecheap` provider.
pub(super) struct Namecheap {
    api: Api,
    base: String,
    user: String,
    /// A secret.
    key: String,
    client_ip: tokio::sync::OnceCell<String>,
    ttl: u64,
}

/// One host record, as `getHosts` lists it and `setHosts` takes it.
#[derive(Debug, Clone, PartialEq)]
struct Host {
    name: String,
    kind: String,
    address: String,
    mx_pref: String,
    ttl: String,
}

/// An attribute list of one element.
type Attributes = Vec<(String, String)>;

/// Each `<name …>` element of `xml`: its attributes and its text (empty
/// when it closes itself). Namecheap's answers never nest an element in
/// one of its own name.
fn elements(xml: &str, name: &str) -> Vec<(Attributes, String)> {
    let open = format!("<{name}");
    let close = format!("</{name}>");
    let mut out = Vec::new();
    let mut rest = xml;
    while let Some(start) = rest.find(&open) {
        let after = &rest[start + open.len()..];
        // `<Error` must not match `<Errors`.
        if !after.starts_with(|c: char| c.is_whitespace() || c == '>' || c == '/') {
            rest = after;
            continue;
        }
        let Some(end) = after.find('>') else { break };
        let head = &after[..end];
        rest = &after[end + 1..];
        let text = if head.ends_with('/') {
            String::new()
        } else if let Some(stop) = rest.find(&close) {
            let text = unescape(&rest[..stop]);
            rest = &rest[stop + close.len()..];
            text
        } else {
            String::new()
        };
        out.push((attributes(head.trim_end_matches('/')), text));
    }
    out
}

/// The `key="value"` pairs of an element's head.
fn attributes(head: &str) -> Attributes {
    let mut out = Vec::new();
    let mut rest = head;
    while let Some(eq) = rest.find("=\"") {
        let key = rest[..eq].split_whitespace().last().unwrap_or_default();
        let after = &rest[eq + 2..];
        let Some(end) = after.find('"') else { break };
        out.push((key.to_owned(), unescape(&after[..end])));
        rest = &after[end + 1..];
    }
    out
}

fn attribute<'a>(attributes: &'a Attributes, name: &str) -> &'a str {
    attributes
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map_or("", |(_, v)| v.as_str())
}

/// The answer's errors as (number, text); empty when its status is OK.
fn errors(xml: &str) -> Vec<(String, String)> {
    let ok = elements(xml, "ApiResponse")
        .first()
        .is_some_and(|(a, _)| attribute(a, "Status").eq_ignore_ascii_case("OK"));
    if ok {
        return Vec::new();
    }
    let listed: Vec<(String, String)> = elements(xml, "Error")
        .into_iter()
        .map(|(a, text)| (attribute(&a, "Number").to_owned(), text.trim().to_owned()))
        .collect();
    if listed.is_empty() {
        vec![(String::new(), "the answer's status is not OK".to_owned())]
    } else {
        listed
    }
}

/// Errors as `text (number)`, joined.
fn joined(errors: Vec<(String, String)>) -> String {
    errors
        .into_iter()
        .map(|(number, text)| format!("{text} ({number})"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The errors of an answer, joined.
fn message(body: &[u8]) -> Option<String> {
    let errors = errors(std::str::from_utf8(body).ok()?);
    (!errors.is_empty()).then(|| joined(errors))
}

impl Namecheap {
    /// Reads the credentials and settings; fails naming what is missing.
    pub(super) fn from_env(mut env: Env<'_>) -> Result<Self, DnsError> {
        let user = env.required("NAMECHEAP_API_USER")?;
        let key = env.required("NAMECHEAP_API_KEY")?;
        let sandbox = env.flag("NAMECHEAP_SANDBOX")?;
        let ttl = api::ttl(&env, "NAMECHEAP_TTL", DEFAULT_TTL, 60)?;
        let default = if sandbox { SANDBOX_URL } else { BASE_URL };
        let base = api::base_url(&env, "NAMECHEAP_API_URL", default)?;
        let client_ip = env.optional("NAMECHEAP_CLIENT_IP")?;
        let api = Api::with_timeout(&env, "namecheap", "NAMECHEAP", message, HTTP_TIMEOUT)?;
        env.finish()?;
        Ok(Namecheap {
            api,
            base,
            user,
            key,
            client_ip: tokio::sync::OnceCell::new_with(client_ip),
            ttl,
        })
    }

    /// The address Namecheap sees calls come from.
    async fn client_ip(&self) -> Result<&str, DnsError> {
        let action = "asking Namecheap for gangway's public address (or set NAMECHEAP_CLIENT_IP)";
        self.client_ip
            .get_or_try_init(|| async {
                let call = Call {
                    action,
                    method: Method::GET,
                    url: CLIENT_IP_URL,
                    headers: &[],
                    body: None,
                    text: None,
                };
                let reply = self.api.send(&call).await?;
                let reply = self.api.success(action, reply)?;
                let ip = String::from_utf8_lossy(&reply.body).trim().to_owned();
                ip.parse::<std::net::IpAddr>()
                    .map(|_| ip.clone())
                    .map_err(|_| {
                        self.api.error(
                            action,
                            ApiProblem::Unreadable {
                                status: reply.status,
                                reason: format!("`{ip}` is not an IP address"),
                            },
                        )
                    })
            })
            .await
            .map(String::as_str)
    }

    /// Runs `command` on the domain `sld`.`tld` with `extra` parameters;
    /// the answer's XML when its status is OK, else its errors.
    async fn command(
        &self,
        action: &str,
        command: &str,
        (sld, tld): (&str, &str),
        extra: &[(String, String)],
    ) -> Result<Result<String, Vec<(String, String)>>, DnsError> {
        let ip = self.client_ip().await?;
        let mut pairs: Vec<(&str, &str)> = vec![
            ("ApiUser", &self.user),
            ("ApiKey", &self.key),
            ("UserName", &self.user),
            ("Command", command),
            ("ClientIp", ip),
            ("SLD", sld),
            ("TLD", tld),
        ];
        pairs.extend(extra.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let form = api::form(&pairs);
        // setHosts can carry every host of the domain: too long for a query.
        let call = Call {
            action,
            method: Method::POST,
            url: &self.base,
            headers: &[],
            body: None,
            text: Some(("application/x-www-form-urlencoded", &form)),
        };
        let reply = self.api.send(&call).await?;
        let reply = self.api.success(action, reply)?;
        let xml = String::from_utf8_lossy(&reply.body).into_owned();
        let errors = errors(&xml);
        Ok(if errors.is_empty() {
            Ok(xml)
        } else {
            Err(errors)
        })
    }

    /// The domain holding `fqdn` and its host records.
    async fn hosts(&self, fqdn: &str) -> Result<(String, Vec<Host>), DnsError> {
        let action = format!("finding the domain of `{fqdn}`");
        let tried = api::zone_candidates(fqdn);
        for domain in &tried {
            let Some(split) = domain.split_once('.') else {
                continue;
            };
            match self
                .command(&action, "namecheap.domains.dns.getHosts", split, &[])
                .await?
            {
                Ok(xml) => {
                    let hosts = elements(&xml, "host")
                        .into_iter()
                        .map(|(a, _)| Host {
                            name: attribute(&a, "Name").to_owned(),
                            kind: attribute(&a, "Type").to_owned(),
                            address: attribute(&a, "Address").to_owned(),
                            mx_pref: attribute(&a, "MXPref").to_owned(),
                            ttl: attribute(&a, "TTL").to_owned(),
                        })
                        .collect();
                    return Ok((domain.clone(), hosts));
                }
                Err(errors)
                    if errors
                        .iter()
                        .all(|(n, _)| NOT_THIS_DOMAIN.contains(&n.as_str())) => {}
                Err(errors) => {
                    let message = joined(errors);
                    return Err(self.api.error(&action, ApiProblem::Refused { message }));
                }
            }
        }
        Err(self.api.error(&action, ApiProblem::NoZone { tried }))
    }

    /// Replaces every host record of `domain` with `hosts`.
    async fn set(&self, action: &str, domain: &str, hosts: &[Host]) -> Result<(), DnsError> {
        let split = domain.split_once('.').unwrap_or((domain, ""));
        let mut extra = Vec::new();
        for (i, h) in hosts.iter().enumerate() {
            let n = i + 1;
            extra.push((format!("HostName{n}"), h.name.clone()));
            extra.push((format!("RecordType{n}"), h.kind.clone()));
            extra.push((format!("Address{n}"), h.address.clone()));
            extra.push((format!("MXPref{n}"), h.mx_pref.clone()));
            extra.push((format!("TTL{n}"), h.ttl.clone()));
        }
        match self
            .command(action, "namecheap.domains.dns.setHosts", split, &extra)
            .await?
        {
            Ok(xml) if xml.contains("IsSuccess=\"true\"") => Ok(()),
            Ok(_) => Err(self.api.error(
                action,
                ApiProblem::Refused {
                    message: "setHosts did not answer IsSuccess=\"true\"".to_owned(),
                },
            )),
            Err(errors) => Err(self.api.error(
                action,
                ApiProblem::Refused {
                    message: joined(errors),
                },
            )),
        }
    }

    /// The host record of `value` at `fqdn` in `domain`.
    fn host(&self, fqdn: &str, domain: &str, value: &str) -> Host {
        let name = api::relative(fqdn, domain);
        Host {
            name: if name.is_empty() {
                "@".to_owned()
            } else {
                name
            },
            kind: "TXT".to_owned(),
            address: value.to_owned(),
            mx_pref: "10".to_owned(),
            ttl: self.ttl.to_string(),
        }
    }

    async fn present(&self, fqdn: &str, value: &str) -> Result<(), DnsError> {
        let (domain, mut hosts) = self.hosts(fqdn).await?;
        let action = format!("adding the TXT record `{fqdn}` to domain `{domain}`");
        let new = self.host(fqdn, &domain, value);
        if hosts.iter().any(|h| same(h, &new)) {
            return Ok(());
        }
        hosts.push(new);
        self.set(&action, &domain, &hosts).await
    }

    async fn cleanup(&self, fqdn: &str, value: &str) -> Result<(), DnsError> {
        let (domain, mut hosts) = self.hosts(fqdn).await?;
        let action = format!("removing the TXT record `{fqdn}` from domain `{domain}`");
        let gone = self.host(fqdn, &domain, value);
        let before = hosts.len();
        hosts.retain(|h| !same(h, &gone));
        if hosts.len() == before {
            return Ok(());
        }
        self.set(&action, &domain, &hosts).await
    }
}

/// Whether two host records are the same TXT value at the same name.
fn same(a: &Host, b: &Host) -> bool {
    a.kind.eq_ignore_ascii_case(&b.kind)
        && a.name.eq_ignore_ascii_case(&b.name)
        && a.address.trim_matches('"') == b.address
}

api::dns_provider!(Namecheap, "namecheap");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_read_attributes_text_and_self_closing_hosts() {
        let xml = r#"<?xml version="1.0"?><ApiResponse Status="ERROR"><Errors><Error Number="1011102">API Key is invalid &amp; off</Error></Errors><host HostId="1" Name="@" Type="A" Address="127.0.0.1" MXPref="10" TTL="1800" /></ApiResponse>"#;
        assert_eq!(
            errors(xml),
            [("1011102".to_owned(), "API Key is invalid & off".to_owned())]
        );
        let hosts = elements(xml, "host");
        assert_eq!(hosts.len(), 1);
        assert_eq!(attribute(&hosts[0].0, "Address"), "127.0.0.1");
        assert!(errors(r#"<ApiResponse Status="OK"><Errors /></ApiResponse>"#).is_empty());
    }
}
