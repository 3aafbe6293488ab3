//! The `rfc2136` provider: dynamic DNS updates (RFC 2136) signed with a
//! TSIG key (RFC 8945), which BIND, Knot, PowerDNS and most self-hosted
//! DNS servers accept. Settings, as Traefik's DNS library names them:
//! `RFC2136_NAMESERVER` (required, `host[:port]`), `RFC2136_TSIG_KEY`,
//! `RFC2136_TSIG_SECRET` (base64), `RFC2136_TSIG_ALGORITHM` (default
//! `hmac-sha256.`) and `RFC2136_TTL` (default 120 s).

use super::{DnsError, DnsProvider, Env, ExchangeError, exchange, find_zone, parse_server};
use futures_util::future::BoxFuture;
use hickory_proto::op::{Message, ResponseCode, update_message};
use hickory_proto::rr::rdata::TXT;
use hickory_proto::rr::rdata::tsig::TsigAlgorithm;
use hickory_proto::rr::{Name, RData, Record, RecordSet, TSigner};
use std::net::SocketAddr;
use std::str::FromStr;

/// Seconds the signing time may differ between gangway and the server.
const FUDGE: u16 = 300;

/// The `rfc2136` provider.
pub(super) struct Rfc2136 {
    server: SocketAddr,
    /// None: updates are sent unsigned (a server that allows them by
    /// address).
    signer: Option<TSigner>,
    ttl: u32,
}

impl Rfc2136 {
    /// Reads the settings; fails naming each missing or unusable one.
    pub(super) fn from_env(mut env: Env<'_>) -> Result<Self, DnsError> {
        let nameserver = env.required("RFC2136_NAMESERVER")?;
        let key = env.optional("RFC2136_TSIG_KEY")?;
        let secret = env.optional("RFC2136_TSIG_SECRET")?;
        let algorithm = env.optional("RFC2136_TSIG_ALGORITHM")?;
        let ttl = env.seconds("RFC2136_TTL", std::time::Duration::from_secs(120))?;
        // A key without its secret (or the reverse) is a mistake, not a
        // wish for unsigned updates.
        match (&key, &secret) {
            (Some(_), None) => env.missing.push("RFC2136_TSIG_SECRET".to_owned()),
            (None, Some(_)) => env.missing.push("RFC2136_TSIG_KEY".to_owned()),
            _ => {}
        }
        env.finish()?;
        let server = parse_server(&nameserver).ok_or_else(|| DnsError::BadEnv {
            variable: "RFC2136_NAMESERVER".to_owned(),
            problem: format!("`{nameserver}` is not an IP address with an optional port"),
        })?;
        let signer = match (key, secret) {
            (Some(key), Some(secret)) => Some(signer(&key, &secret, algorithm.as_deref())?),
            _ => None,
        };
        Ok(Rfc2136 {
            server,
            signer,
            ttl: u32::try_from(ttl.as_secs()).unwrap_or(u32::MAX),
        })
    }

    /// Sends one update for the TXT record and checks the answer.
    async fn update(&self, action: &'static str, fqdn: &str, value: &str) -> Result<(), DnsError> {
        let exchange_error = |reason: ExchangeError| DnsError::Exchange {
            provider: "rfc2136",
            action,
            fqdn: fqdn.to_owned(),
            server: self.server.to_string(),
            reason: Box::new(reason),
        };
        let zone = find_zone("rfc2136", self.server, fqdn).await?;
        let name = Name::from_str(fqdn).map_err(|source| {
            exchange_error(ExchangeError::BadName {
                name: fqdn.to_owned(),
                source,
            })
        })?;
        let origin = Name::from_str(&zone).map_err(|source| {
            exchange_error(ExchangeError::BadZone {
                zone: zone.clone(),
                source,
            })
        })?;
        // hickory's message builders assert this; a server answering with
        // an unrelated SOA must be an error, not a panic.
        if !origin.zone_of(&name) {
            return Err(DnsError::NoZone {
                provider: "rfc2136",
                fqdn: fqdn.to_owned(),
                server: self.server.to_string(),
                reason: format!("it named `{zone}`, which does not contain it"),
            });
        }
        let record =
            Record::from_rdata(name, self.ttl, RData::TXT(TXT::new(vec![value.to_owned()])));
        let rrset = RecordSet::from(record);
        let mut message = if action == "adding" {
            update_message::append(rrset, origin, false, false)
        } else {
            update_message::delete_by_rdata(rrset, origin, false)
        };
        let verifier = match &self.signer {
            Some(signer) => {
                let now = crate::clock::unix_secs();
                message
                    .finalize(signer, now)
                    .map_err(|e| exchange_error(ExchangeError::Sign(e)))?
            }
            None => None,
        };
        let bytes = message
            .to_vec()
            .map_err(|e| exchange_error(ExchangeError::EncodeUpdate(e)))?;
        let answer = exchange(self.server, &bytes)
            .await
            .map_err(exchange_error)?;
        let parsed =
            Message::from_vec(&answer).map_err(|e| exchange_error(ExchangeError::Unreadable(e)))?;
        let code = parsed.metadata.response_code;
        if code != ResponseCode::NoError {
            return Err(DnsError::Refused {
                provider: "rfc2136",
                action,
                fqdn: fqdn.to_owned(),
                server: self.server.to_string(),
                // The RFCs' mnemonic: NOTAUTH, REFUSED, NOTZONE…
                rcode: format!("{code:?}").to_ascii_uppercase(),
                hint: hint(code, self.signer.is_some()),
            });
        }
        if let Some(mut verifier) = verifier {
            verifier
                .verify(&answer)
                .map_err(|e| exchange_error(ExchangeError::Tsig(e)))?;
        }
        Ok(())
    }
}

/// What usually makes a server refuse an update with `code`.
fn hint(code: ResponseCode, signed: bool) -> &'static str {
    match code {
        ResponseCode::NotAuth if signed => {
            " (the TSIG key name, secret or algorithm does not match the server's, or the clocks differ by more than 5 minutes)"
        }
        ResponseCode::NotAuth => " (the server is not authoritative for the zone)",
        ResponseCode::Refused if signed => {
            " (the server does not allow this key to update the zone: check its allow-update or update-policy)"
        }
        ResponseCode::Refused => {
            " (the server does not allow unsigned updates: set RFC2136_TSIG_KEY and RFC2136_TSIG_SECRET)"
        }
        ResponseCode::NotZone => " (the record is not in the zone the server named)",
        _ => "",
    }
}

/// The TSIG signer for a key name, its base64 secret and an algorithm
/// name (`hmac-sha256`, with or without the final dot).
fn signer(key: &str, secret: &str, algorithm: Option<&str>) -> Result<TSigner, DnsError> {
    use base64::Engine as _;
    let bad = |variable: &str, problem: String| DnsError::BadEnv {
        variable: variable.to_owned(),
        problem,
    };
    let algorithm = match algorithm
        .unwrap_or("hmac-sha256.")
        .trim()
        .trim_end_matches('.')
        .to_ascii_lowercase()
        .as_str()
    {
        "hmac-sha256" => TsigAlgorithm::HmacSha256,
        "hmac-sha384" => TsigAlgorithm::HmacSha384,
        "hmac-sha512" => TsigAlgorithm::HmacSha512,
        other => {
            return Err(bad(
                "RFC2136_TSIG_ALGORITHM",
                format!("`{other}` is not supported (use hmac-sha256, hmac-sha384 or hmac-sha512)"),
            ));
        }
    };
    // The secret is never repeated in a message.
    let secret = base64::engine::general_purpose::STANDARD
        .decode(secret.trim())
        .map_err(|_| bad("RFC2136_TSIG_SECRET", "is not base64".to_owned()))?;
    let name = Name::from_str(key).map_err(|e| {
        bad(
            "RFC2136_TSIG_KEY",
            format!("`{key}` is not a key name: {e}"),
        )
    })?;
    TSigner::new(secret, algorithm, name, FUDGE)
        .map_err(|e| bad("RFC2136_TSIG_ALGORITHM", e.to_string()))
}

impl DnsProvider for Rfc2136 {
    fn name(&self) -> &'static str {
        "rfc2136"
    }

    fn present<'a>(&'a self, fqdn: &'a str, value: &'a str) -> BoxFuture<'a, Result<(), DnsError>> {
        Box::pin(self.update("adding", fqdn, value))
    }

    fn cleanup<'a>(&'a self, fqdn: &'a str, value: &'a str) -> BoxFuture<'a, Result<(), DnsError>> {
        Box::pin(self.update("removing", fqdn, value))
    }
}
