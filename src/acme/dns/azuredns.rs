//! The `azuredns` provider, through Azure Resource Manager's DNS API, and
//! the variables Traefik's DNS library documents for it: a service
//! principal (`AZURE_CLIENT_ID`, `AZURE_CLIENT_SECRET`, `AZURE_TENANT_ID`),
//! where the zones are (`AZURE_SUBSCRIPTION_ID`, `AZURE_RESOURCE_GROUP`,
//! `AZURE_ZONE_NAME` to name the zone rather than look for it,
//! `AZURE_PRIVATE_ZONE` for Azure Private DNS), `AZURE_ENVIRONMENT`
//! (`public`, `usgovernment`, `china`), `AZURE_TTL` (default 60) and
//! `AZURE_HTTP_TIMEOUT`. `AZURE_AUTHORITY_HOST` (as Azure's own SDKs read
//! it) and gangway's own `AZURE_API_URL` point the token and DNS calls
//! elsewhere.
//!
//! Each present or cleanup first gets an access token by OAuth 2.0's
//! client credentials grant at the tenant's token endpoint, for Resource
//! Manager's `.default` scope. Azure holds one TXT record set per name:
//! a second value (a wildcard and its apex) is added to the set with a
//! `PUT` of the whole set, and cleanup writes it back without the value,
//! or deletes it with the last one.

use super::api::{self, Api};
use super::{DnsError, Env};
use http::{HeaderName, HeaderValue, Method, StatusCode};

/// Azure's clouds: name, token authority, Resource Manager.
const ENVIRONMENTS: &[(&str, &str, &str)] = &[
    (
        "public",
        "https://login.microsoftonline.com",
        "https://management.azure.com",
    ),
    (
        "usgovernment",
        "https://login.microsoftonline.us",
        "https://management.usgovcloudapi.net",
    ),
    (
        "china",
        "https://login.chinacloudapi.cn",
        "https://management.chinacloudapi.cn",
    ),
];
/// The API versions of public and private DNS zones.
const PUBLIC_API: &str = "2018-05-01";
const PRIVATE_API: &str = "2018-09-01";

/// The `azuredns` provider.
pub(super) struct AzureDns {
    api: Api,
    token_url: String,
    scope: String,
    client_id: String,
    /// A secret.
    client_secret: String,
    /// `…/resourceGroups/<group>/providers/Microsoft.Network/dnsZones`
    /// (or `privateDnsZones`).
    zones: String,
    api_version: &'static str,
    /// Private DNS spells the set's fields in lower camel case.
    private: bool,
    zone_name: Option<String>,
    ttl: u64,
}

/// `message (code)` of an error answer (`{"error": {"code", "message"}}`,
/// or OAuth's `error_description`).
fn message(body: &[u8]) -> Option<String> {
    let json: serde_json::Value = serde_json::from_slice(body).ok()?;
    if let Some(description) = json["error_description"].as_str() {
        return Some(description.lines().next().unwrap_or_default().to_owned());
    }
    let error = &json["error"];
    let message = error["message"].as_str()?;
    Some(match error["code"].as_str() {
        Some(code) => format!("{message} ({code})"),
        None => message.to_owned(),
    })
}

impl AzureDns {
    /// Reads the credentials and settings; fails naming what is missing.
    pub(super) fn from_env(mut env: Env<'_>) -> Result<Self, DnsError> {
        if let Some(method) = env.optional("AZURE_AUTH_METHOD")?
            && !method.eq_ignore_ascii_case("env")
        {
            return Err(DnsError::BadEnv {
                variable: "AZURE_AUTH_METHOD".to_owned(),
                problem: format!(
                    "`{method}` is not supported; gangway signs in with a service principal's \
                     client secret (`env`)"
                ),
            });
        }
        let client_id = env.required("AZURE_CLIENT_ID")?;
        let client_secret = env.required("AZURE_CLIENT_SECRET")?;
        let tenant = env.required("AZURE_TENANT_ID")?;
        let subscription = env.required("AZURE_SUBSCRIPTION_ID")?;
        let group = env.required("AZURE_RESOURCE_GROUP")?;
        let cloud = env
            .optional("AZURE_ENVIRONMENT")?
            .unwrap_or_else(|| "public".to_owned());
        let Some((_, authority, manager)) = ENVIRONMENTS
            .iter()
            .find(|(name, ..)| name.eq_ignore_ascii_case(cloud.trim()))
        else {
            return Err(DnsError::BadEnv {
                variable: "AZURE_ENVIRONMENT".to_owned(),
                problem: format!("`{cloud}` is not public, usgovernment or china"),
            });
        };
        let authority = api::base_url(&env, "AZURE_AUTHORITY_HOST", authority)?;
        let manager = api::base_url(&env, "AZURE_API_URL", manager)?;
        let private = env.flag("AZURE_PRIVATE_ZONE")?;
        let zone_name = env
            .optional("AZURE_ZONE_NAME")?
            .map(|z| z.trim_end_matches('.').to_owned());
        let ttl = api::ttl(&env, "AZURE_TTL", 60, 1)?;
        let api = Api::new(&env, "azuredns", "AZURE", message)?;
        env.finish()?;
        let kind = if private {
            "privateDnsZones"
        } else {
            "dnsZones"
        };
        Ok(AzureDns {
            api,
            token_url: format!("{authority}/{tenant}/oauth2/v2.0/token"),
            scope: format!("{manager}/.default"),
            client_id,
            client_secret,
            zones: format!(
                "{manager}/subscriptions/{subscription}/resourceGroups/{group}/providers/Microsoft.Network/{kind}"
            ),
            api_version: if private { PRIVATE_API } else { PUBLIC_API },
            private,
            zone_name,
            ttl,
        })
    }

    /// A new access token, as the bearer header.
    async fn token(&self, action: &str) -> Result<Vec<(HeaderName, HeaderValue)>, DnsError> {
        let grant = [
            ("grant_type", "client_credentials"),
            ("client_id", self.client_id.as_str()),
            ("client_secret", self.client_secret.as_str()),
            ("scope", self.scope.as_str()),
        ];
        self.api
            .bearer_token(action, &self.token_url, &grant, "AZURE_CLIENT_SECRET")
            .await
    }

    /// The zone holding `fqdn`: `AZURE_ZONE_NAME`, else the longest of
    /// the name's suffixes the resource group holds.
    async fn zone(
        &self,
        fqdn: &str,
        auth: &[(HeaderName, HeaderValue)],
    ) -> Result<String, DnsError> {
        if let Some(zone) = &self.zone_name {
            return Ok(zone.clone());
        }
        self.api
            .zone_by_get(fqdn, auth, |zone| {
                format!("{}/{zone}?api-version={}", self.zones, self.api_version)
            })
            .await
    }

    /// The record set's URL and its values (none when there is no set).
    async fn current(
        &self,
        action: &str,
        fqdn: &str,
        auth: &[(HeaderName, HeaderValue)],
    ) -> Result<(String, Vec<String>), DnsError> {
        let zone = self.zone(fqdn, auth).await?;
        let name = api::relative(fqdn, &zone);
        let name = if name.is_empty() { "@" } else { &name };
        let url = format!(
            "{}/{zone}/TXT/{name}?api-version={}",
            self.zones, self.api_version
        );
        let reply = self.api.json(action, Method::GET, &url, auth, None).await?;
        if reply.status == StatusCode::NOT_FOUND {
            return Ok((url, Vec::new()));
        }
        let set: serde_json::Value = self
            .api
            .success(action, reply)?
            .json()
            .map_err(|p| self.api.error(action, p))?;
        let properties = &set["properties"];
        let records = properties
            .get("TXTRecords")
            .or_else(|| properties.get("txtRecords"))
            .and_then(serde_json::Value::as_array);
        let values = records
            .into_iter()
            .flatten()
            .flat_map(|r| r["value"].as_array().cloned().unwrap_or_default())
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect();
        Ok((url, values))
    }

    /// Writes the whole set at `url` with `values`.
    async fn put(
        &self,
        action: &str,
        url: &str,
        values: &[String],
        auth: &[(HeaderName, HeaderValue)],
    ) -> Result<(), DnsError> {
        let records: Vec<_> = values
            .iter()
            .map(|v| serde_json::json!({ "value": [v] }))
            .collect();
        let properties = if self.private {
            serde_json::json!({ "ttl": self.ttl, "txtRecords": records })
        } else {
            serde_json::json!({ "TTL": self.ttl, "TXTRecords": records })
        };
        let body = serde_json::json!({ "properties": properties });
        let reply = self
            .api
            .json(action, Method::PUT, url, auth, Some(&body))
            .await?;
        self.api.success(action, reply).map(drop)
    }

    async fn present(&self, fqdn: &str, value: &str) -> Result<(), DnsError> {
        let action = format!("adding the TXT record `{fqdn}`");
        let auth = self.token(&action).await?;
        let (url, values) = self.current(&action, fqdn, &auth).await?;
        match api::with_value(&values, value) {
            Some(all) => self.put(&action, &url, &all, &auth).await,
            None => Ok(()),
        }
    }

    async fn cleanup(&self, fqdn: &str, value: &str) -> Result<(), DnsError> {
        let action = format!("removing the TXT record `{fqdn}`");
        let auth = self.token(&action).await?;
        let (url, values) = self.current(&action, fqdn, &auth).await?;
        match api::without_value(&values, value) {
            None => Ok(()),
            Some(rest) if !rest.is_empty() => self.put(&action, &url, &rest, &auth).await,
            Some(_) => self.api.delete_each(&action, vec![url], &auth).await,
        }
    }
}

api::dns_provider!(AzureDns, "azuredns");
