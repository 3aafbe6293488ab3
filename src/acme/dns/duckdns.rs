//! The `duckdns` provider, through Duck DNS's update API and the
//! variables Traefik's DNS library documents for it: `DUCKDNS_TOKEN` (the
//! account's token), `DUCKDNS_HTTP_TIMEOUT`, and `DUCKDNS_API_URL`
//! (gangway's own, default `https://www.duckdns.org/update`).
//!
//! Duck DNS holds one TXT value per subdomain, answered at every name
//! under it: publishing replaces it and cleanup clears it. gangway
//! answers an order's authorizations one after another, so a wildcard and
//! its apex each get their turn at the single record.

use super::api::{self, Api, ApiProblem, Call};
use super::{DnsError, DnsProvider, Env};
use futures_util::future::BoxFuture;
use http::Method;

/// Where the API is, unless `DUCKDNS_API_URL` says otherwise.
const BASE_URL: &str = "https://www.duckdns.org/update";
/// The domain Duck DNS gives subdomains of.
const SUFFIX: &str = "duckdns.org";

/// The `duckdns` provider.
pub(super) struct DuckDns {
    api: Api,
    base: String,
    /// The account's token; a secret, sent in the query as the API wants.
    token: String,
}

/// The answer's text, which is all Duck DNS says (`OK` or `KO`).
fn message(body: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(body).ok()?.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

/// The Duck DNS subdomain holding `fqdn`: the label just before
/// `duckdns.org` (Duck DNS accepts no deeper names of its own).
fn subdomain(fqdn: &str) -> Option<String> {
    let name = fqdn.trim_end_matches('.').to_ascii_lowercase();
    let rest = name.strip_suffix(SUFFIX)?.strip_suffix('.')?;
    let label = rest.rsplit('.').next()?;
    (!label.is_empty()).then(|| label.to_owned())
}

impl DuckDns {
    /// Reads the token and settings; fails naming what is missing.
    pub(super) fn from_env(mut env: Env<'_>) -> Result<Self, DnsError> {
        let token = env.required("DUCKDNS_TOKEN")?;
        // The token goes into a query string unescaped: only the
        // characters Duck DNS tokens have (a UUID) are accepted.
        if !token.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return Err(DnsError::BadEnv {
                variable: "DUCKDNS_TOKEN".to_owned(),
                problem: "holds characters a Duck DNS token does not have".to_owned(),
            });
        }
        let base = api::base_url(&env, "DUCKDNS_API_URL", BASE_URL)?;
        let api = Api::new(&env, "duckdns", "DUCKDNS", message)?;
        env.finish()?;
        Ok(DuckDns { api, base, token })
    }

    /// Sets (`clear` false) or clears the subdomain's TXT value.
    async fn update(
        &self,
        action: &str,
        fqdn: &str,
        txt: &str,
        clear: bool,
    ) -> Result<(), DnsError> {
        let Some(domain) = subdomain(fqdn) else {
            return Err(self
                .api
                .error(action, ApiProblem::Outside { suffix: SUFFIX }));
        };
        let url = format!(
            "{}?domains={domain}&token={}&txt={txt}&clear={clear}",
            self.base, self.token
        );
        let call = Call {
            action,
            method: Method::GET,
            url: &url,
            headers: &[],
            body: None,
            text: None,
        };
        let reply = self.api.send(&call).await?;
        // Duck DNS answers 200 either way; `KO` is a refused token or a
        // subdomain the account does not hold.
        if reply.status.is_success() && reply.body.trim_ascii() == b"OK" {
            return Ok(());
        }
        let message = self.api.message_of(&reply.body, reply.status);
        Err(self.api.error(
            action,
            ApiProblem::Refused {
                message: format!("{message} (a wrong token, or `{domain}` is not the account's)"),
            },
        ))
    }
}

impl DnsProvider for DuckDns {
    fn name(&self) -> &'static str {
        "duckdns"
    }

    fn present<'a>(&'a self, fqdn: &'a str, value: &'a str) -> BoxFuture<'a, Result<(), DnsError>> {
        Box::pin(async move {
            let action = format!("setting the TXT record of `{fqdn}`");
            self.update(&action, fqdn, value, false).await
        })
    }

    fn cleanup<'a>(
        &'a self,
        fqdn: &'a str,
        _value: &'a str,
    ) -> BoxFuture<'a, Result<(), DnsError>> {
        Box::pin(async move {
            let action = format!("clearing the TXT record of `{fqdn}`");
            self.update(&action, fqdn, "", true).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::subdomain;

    #[test]
    fn the_subdomain_is_the_label_before_duckdns_org() {
        assert_eq!(
            subdomain("_acme-challenge.home.duckdns.org.").as_deref(),
            Some("home")
        );
        assert_eq!(
            subdomain("_acme-challenge.Home.DuckDNS.org").as_deref(),
            Some("home")
        );
        assert_eq!(subdomain("home.duckdns.org.").as_deref(), Some("home"));
        assert_eq!(subdomain("duckdns.org."), None);
        assert_eq!(subdomain("_acme-challenge.example.com."), None);
        assert_eq!(subdomain("_acme-challenge.notduckdns.org."), None);
    }
}
