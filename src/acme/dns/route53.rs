//! The `route53` provider, through Amazon Route 53's REST API (version
//! 2013-04-01) signed with AWS Signature Version 4, and the variables
//! Traefik's DNS library and the AWS tools document:
//!
//! - credentials: `AWS_ACCESS_KEY_ID` + `AWS_SECRET_ACCESS_KEY` (and
//!   `AWS_SESSION_TOKEN` for temporary ones), else the profile
//!   `AWS_PROFILE` (default `default`) of the shared credentials file
//!   `AWS_SHARED_CREDENTIALS_FILE` (default `~/.aws/credentials`);
//! - `AWS_ASSUME_ROLE_ARN` (with `AWS_EXTERNAL_ID` if the role asks for
//!   one): those credentials only ask STS for the role's temporary
//!   credentials (`AssumeRole`, at `AWS_ENDPOINT_URL_STS`, else
//!   `AWS_ENDPOINT_URL`, else the region's STS), which sign the Route 53
//!   calls and are asked for again before they expire;
//! - every variable also as `<NAME>_FILE`, as Traefik's DNS library reads
//!   them;
//! - `AWS_HOSTED_ZONE_ID` to skip the zone lookup; `AWS_REGION` (Route 53
//!   is global: it only names the signing region, `us-east-1` by default);
//! - `AWS_TTL` (default 10), `AWS_HTTP_TIMEOUT`, and the AWS tools'
//!   `AWS_ENDPOINT_URL_ROUTE_53` / `AWS_ENDPOINT_URL` for another endpoint.
//!
//! Route 53 holds one record set per name and type, so a second value at a
//! name (a wildcard and its apex) is added to the set, and cleanup writes
//! the set back without its value (or deletes it when it was the last).
//! After each change gangway polls it until Route 53 reports it `INSYNC`.

use super::api::{self, Api, ApiProblem, Call};
use super::{DnsError, Env};
use crate::crypto::hex;
use http::{HeaderName, HeaderValue, Method, StatusCode};
use sha2::Digest as _;
use std::time::{Duration, SystemTime};

/// Route 53's endpoint, unless an `AWS_ENDPOINT_URL*` variable says otherwise.
const ENDPOINT: &str = "https://route53.amazonaws.com";
/// The API version in every path.
const VERSION: &str = "2013-04-01";
/// The signing region of a global service.
const REGION: &str = "us-east-1";
/// Longest wait for a change to be `INSYNC`.
const CHANGE_TIMEOUT: Duration = Duration::from_secs(120);
/// Time between two looks at a change.
const CHANGE_POLL: Duration = Duration::from_secs(1);
/// The STS API version.
const STS_VERSION: &str = "2011-06-15";
/// How long a role's credentials are asked for (STS's shortest).
const ROLE_SECONDS: u64 = 900;
/// How long gangway uses them: well before they expire.
const ROLE_REUSE: Duration = Duration::from_secs(600);

/// The role to assume, and where STS is.
struct Role {
    arn: String,
    external_id: Option<String>,
    endpoint: String,
    /// `host[:port]` of the endpoint, as signed.
    host: String,
    /// The role's credentials while they are fresh.
    current: std::sync::Mutex<Option<(Credentials, tokio::time::Instant)>>,
}

/// Static credentials; secrets (no `Debug`).
#[derive(Clone)]
pub(super) struct Credentials {
    /// The access key id.
    pub access_key: String,
    /// The secret access key.
    pub secret_key: String,
    /// A session token of temporary credentials.
    pub session_token: Option<String>,
}

/// The `route53` provider.
pub(super) struct Route53 {
    api: Api,
    endpoint: String,
    /// `host[:port]` of the endpoint, as signed.
    host: String,
    credentials: Credentials,
    role: Option<Role>,
    region: String,
    zone_id: Option<String>,
    ttl: u64,
}

/// Route 53's `<Error><Code>…</Code><Message>…</Message>` as one sentence.
fn message(body: &[u8]) -> Option<String> {
    let xml = std::str::from_utf8(body).ok()?;
    let code = tag(xml, "Code").into_iter().next();
    let text = tag(xml, "Message").into_iter().next();
    match (code, text) {
        (Some(c), Some(m)) => Some(format!("{} ({})", unescape(m), unescape(c))),
        (Some(c), None) => Some(unescape(c)),
        (None, Some(m)) => Some(unescape(m)),
        (None, None) => None,
    }
}

/// Route 53 says to slow down with 400 `Throttling` (or
/// `PriorRequestNotComplete`), not with 429.
fn throttled(status: StatusCode, body: &[u8]) -> bool {
    status == StatusCode::BAD_REQUEST
        && std::str::from_utf8(body).is_ok_and(|xml| {
            tag(xml, "Code")
                .iter()
                .any(|c| matches!(*c, "Throttling" | "PriorRequestNotComplete"))
        })
}

impl Route53 {
    /// Reads the credentials and settings; fails naming what is missing.
    pub(super) fn from_env(env: Env<'_>) -> Result<Self, DnsError> {
        let key = env.optional("AWS_ACCESS_KEY_ID")?;
        let secret = env.optional("AWS_SECRET_ACCESS_KEY")?;
        let credentials = match (key, secret) {
            (Some(access_key), Some(secret_key)) => Credentials {
                access_key,
                secret_key,
                session_token: env.optional("AWS_SESSION_TOKEN")?,
            },
            _ => shared_credentials(&env)?.ok_or_else(|| {
                env.no_credentials(
                    "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile with both keys in the shared credentials file (AWS_SHARED_CREDENTIALS_FILE, default ~/.aws/credentials; AWS_PROFILE, default `default`)",
                )
            })?,
        };
        let (endpoint, host) = endpoint_of(&env, "AWS_ENDPOINT_URL_ROUTE_53", ENDPOINT)?;
        let ttl = env
            .seconds("AWS_TTL", Duration::from_secs(10))?
            .as_secs()
            .max(1);
        let region = env
            .first_of(&["AWS_REGION", "AWS_DEFAULT_REGION"])?
            .unwrap_or_else(|| REGION.to_owned());
        let zone_id = env
            .optional("AWS_HOSTED_ZONE_ID")?
            .map(|z| z.trim_start_matches("/hostedzone/").to_owned());
        let role = match env.optional("AWS_ASSUME_ROLE_ARN")? {
            Some(arn) => {
                let sts = format!("https://sts.{region}.amazonaws.com");
                let (endpoint, host) = endpoint_of(&env, "AWS_ENDPOINT_URL_STS", &sts)?;
                Some(Role {
                    arn,
                    external_id: env.optional("AWS_EXTERNAL_ID")?,
                    endpoint,
                    host,
                    current: std::sync::Mutex::new(None),
                })
            }
            None => None,
        };
        let api = Api::new(&env, "route53", "AWS", message)?.with_throttle(throttled);
        env.finish()?;
        Ok(Route53 {
            api,
            endpoint,
            host,
            credentials,
            role,
            region,
            zone_id,
            ttl,
        })
    }

    /// Sends a signed request; the body of its 2xx (or 404) answer.
    async fn send(
        &self,
        action: &str,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        body: &str,
    ) -> Result<api::Reply, DnsError> {
        let credentials = self.credentials(action).await?;
        let sent = self.signed(
            action,
            &credentials,
            (&self.host, "route53"),
            (method.as_str(), path, query),
            body,
        )?;
        let query = canonical_query(query);
        let url = if query.is_empty() {
            format!("{}{path}", self.endpoint)
        } else {
            format!("{}{path}?{query}", self.endpoint)
        };
        self.api
            .send(&Call {
                action,
                method,
                url: &url,
                headers: &sent,
                body: None,
                text: (!body.is_empty()).then_some(("text/xml", body)),
            })
            .await
    }

    /// The headers signing a request to `host` of `service` with
    /// `credentials`: its date, the signature and any session token.
    fn signed(
        &self,
        action: &str,
        credentials: &Credentials,
        (host, service): (&str, &str),
        (method, path, query): (&str, &str, &[(&str, &str)]),
        body: &str,
    ) -> Result<Vec<(HeaderName, HeaderValue)>, DnsError> {
        let amz_date = amz_date(SystemTime::now());
        let mut headers = vec![
            ("host".to_owned(), host.to_owned()),
            ("x-amz-date".to_owned(), amz_date.clone()),
        ];
        if let Some(token) = &credentials.session_token {
            headers.push(("x-amz-security-token".to_owned(), token.clone()));
        }
        let authorization = authorization(
            credentials,
            &Scope {
                date: &amz_date,
                region: &self.region,
                service,
            },
            method,
            path,
            query,
            &headers,
            body.as_bytes(),
        );
        let mut sent: Vec<(HeaderName, HeaderValue)> = vec![
            (
                HeaderName::from_static("x-amz-date"),
                HeaderValue::try_from(amz_date.as_str()).map_err(|_| {
                    self.api.error(
                        action,
                        ApiProblem::Transport("the date is not a header".to_owned()),
                    )
                })?,
            ),
            (
                http::header::AUTHORIZATION,
                api::secret_header(&authorization, "AWS_ACCESS_KEY_ID")?,
            ),
        ];
        if let Some(token) = &credentials.session_token {
            sent.push((
                HeaderName::from_static("x-amz-security-token"),
                api::secret_header(token, "AWS_SESSION_TOKEN")?,
            ));
        }
        Ok(sent)
    }

    /// The credentials that sign Route 53 calls: the role's while fresh,
    /// else the role's asked anew from STS, else the configured ones.
    async fn credentials(&self, action: &str) -> Result<Credentials, DnsError> {
        let Some(role) = &self.role else {
            return Ok(self.credentials.clone());
        };
        if let Some((credentials, until)) = role.current.lock().ok().and_then(|c| c.clone())
            && tokio::time::Instant::now() < until
        {
            return Ok(credentials);
        }
        let action = format!("{action}: assuming the role `{}`", role.arn);
        let mut form = vec![
            ("Action", "AssumeRole".to_owned()),
            ("Version", STS_VERSION.to_owned()),
            ("RoleArn", role.arn.clone()),
            ("RoleSessionName", "gangway-dns-01".to_owned()),
            ("DurationSeconds", ROLE_SECONDS.to_string()),
        ];
        if let Some(id) = &role.external_id {
            form.push(("ExternalId", id.clone()));
        }
        let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let body = canonical_query(&pairs);
        let sent = self.signed(
            &action,
            &self.credentials,
            (&role.host, "sts"),
            ("POST", "/", &[]),
            &body,
        )?;
        let url = format!("{}/", role.endpoint);
        let reply = self
            .api
            .send(&Call {
                action: &action,
                method: Method::POST,
                url: &url,
                headers: &sent,
                body: None,
                text: Some(("application/x-www-form-urlencoded; charset=utf-8", &body)),
            })
            .await?;
        let xml = self.text(&action, &reply)?;
        let field = |name: &str| tag(xml, name).first().map(|v| unescape(v));
        let (Some(access_key), Some(secret_key), Some(token)) = (
            field("AccessKeyId"),
            field("SecretAccessKey"),
            field("SessionToken"),
        ) else {
            return Err(self.api.error(
                &action,
                ApiProblem::Unreadable {
                    status: reply.status,
                    reason: "no Credentials in the AssumeRole answer".to_owned(),
                },
            ));
        };
        let credentials = Credentials {
            access_key,
            secret_key,
            session_token: Some(token),
        };
        if let Ok(mut current) = role.current.lock() {
            *current = Some((
                credentials.clone(),
                tokio::time::Instant::now() + ROLE_REUSE,
            ));
        }
        Ok(credentials)
    }

    /// The id and name of the hosted zone holding `fqdn`.
    async fn zone(&self, fqdn: &str) -> Result<(String, String), DnsError> {
        let action = format!("finding the hosted zone of `{fqdn}`");
        if let Some(id) = &self.zone_id {
            return Ok((id.clone(), format!("id {id}")));
        }
        let tried = api::zone_candidates(fqdn);
        for name in &tried {
            let path = format!("/{VERSION}/hostedzonesbyname");
            let reply = self
                .send(
                    &action,
                    Method::GET,
                    &path,
                    &[("dnsname", name), ("maxitems", "1")],
                    "",
                )
                .await?;
            let xml = self.text(&action, &reply)?;
            // The answer lists zones from `dnsname` on: the first one is
            // it only when the names match.
            let zone = tag(xml, "HostedZone").into_iter().next().and_then(|z| {
                let zone_name = unescape(tag(z, "Name").first()?);
                let id = tag(z, "Id").first()?.trim_start_matches("/hostedzone/");
                let private = tag(z, "PrivateZone").first() == Some(&"true");
                (zone_name.trim_end_matches('.').eq_ignore_ascii_case(name) && !private)
                    .then(|| (id.to_owned(), name.clone()))
            });
            if let Some(zone) = zone {
                return Ok(zone);
            }
        }
        Err(self.api.error(&action, ApiProblem::NoZone { tried }))
    }

    /// The text of a 2xx answer, or the error of a 404.
    fn text<'r>(&self, action: &str, reply: &'r api::Reply) -> Result<&'r str, DnsError> {
        if !reply.status.is_success() {
            return Err(self.api.refused(action, reply));
        }
        std::str::from_utf8(&reply.body).map_err(|e| {
            self.api.error(
                action,
                ApiProblem::Unreadable {
                    status: reply.status,
                    reason: e.to_string(),
                },
            )
        })
    }

    /// The values of the TXT set at `fqdn` (each as Route 53 writes it,
    /// quoted) and its TTL.
    async fn current(
        &self,
        action: &str,
        zone: &str,
        fqdn: &str,
    ) -> Result<(Vec<String>, Option<u64>), DnsError> {
        let path = format!("/{VERSION}/hostedzone/{zone}/rrset");
        let reply = self
            .send(
                action,
                Method::GET,
                &path,
                &[("name", fqdn), ("type", "TXT"), ("maxitems", "1")],
                "",
            )
            .await?;
        let xml = self.text(action, &reply)?;
        for set in tag(xml, "ResourceRecordSet") {
            let name = tag(set, "Name").first().map(|n| unescape(n));
            let rtype = tag(set, "Type").first().copied();
            if name.is_some_and(|n| n.eq_ignore_ascii_case(fqdn)) && rtype == Some("TXT") {
                let ttl = tag(set, "TTL").first().and_then(|t| t.trim().parse().ok());
                let values = tag(set, "Value").iter().map(|v| unescape(v)).collect();
                return Ok((values, ttl));
            }
        }
        Ok((Vec::new(), None))
    }

    /// Sends one change of the TXT set at `fqdn` and waits until it is
    /// `INSYNC`.
    async fn change(
        &self,
        action: &str,
        zone: &str,
        verb: &str,
        fqdn: &str,
        ttl: u64,
        values: &[String],
    ) -> Result<(), DnsError> {
        let records: String = values
            .iter()
            .map(|v| {
                format!(
                    "<ResourceRecord><Value>{}</Value></ResourceRecord>",
                    escape(v)
                )
            })
            .collect();
        let body = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ChangeResourceRecordSetsRequest xmlns=\"https://route53.amazonaws.com/doc/{VERSION}/\"><ChangeBatch><Comment>ACME DNS-01 challenge</Comment><Changes><Change><Action>{verb}</Action><ResourceRecordSet><Name>{}</Name><Type>TXT</Type><TTL>{ttl}</TTL><ResourceRecords>{records}</ResourceRecords></ResourceRecordSet></Change></Changes></ChangeBatch></ChangeResourceRecordSetsRequest>",
            escape(fqdn)
        );
        let path = format!("/{VERSION}/hostedzone/{zone}/rrset");
        let reply = self.send(action, Method::POST, &path, &[], &body).await?;
        let xml = self.text(action, &reply)?;
        let Some(change) = tag(xml, "Id")
            .first()
            .map(|id| id.trim_start_matches("/change/").to_owned())
        else {
            return Err(self.api.error(
                action,
                ApiProblem::Unreadable {
                    status: reply.status,
                    reason: "no ChangeInfo Id".to_owned(),
                },
            ));
        };
        let started = tokio::time::Instant::now();
        let mut status = tag(xml, "Status").first().map(|s| (*s).to_owned());
        while status.as_deref() != Some("INSYNC") {
            if started.elapsed() >= CHANGE_TIMEOUT {
                return Err(self.api.error(
                    action,
                    ApiProblem::Status {
                        status: reply.status,
                        message: format!(
                            "change {change} still {} after {}s",
                            status.as_deref().unwrap_or("unknown"),
                            CHANGE_TIMEOUT.as_secs()
                        ),
                    },
                ));
            }
            tokio::time::sleep(CHANGE_POLL).await;
            let path = format!("/{VERSION}/change/{change}");
            let reply = self.send(action, Method::GET, &path, &[], "").await?;
            let xml = self.text(action, &reply)?;
            status = tag(xml, "Status").first().map(|s| (*s).to_owned());
        }
        Ok(())
    }

    async fn present(&self, fqdn: &str, value: &str) -> Result<(), DnsError> {
        let (zone, zone_name) = self.zone(fqdn).await?;
        let action = format!("adding the TXT record `{fqdn}` to hosted zone `{zone_name}`");
        let (mut values, ttl) = self.current(&action, &zone, fqdn).await?;
        let quoted = format!("\"{value}\"");
        if values.contains(&quoted) {
            return Ok(());
        }
        values.push(quoted);
        let ttl = ttl.map_or(self.ttl, |t| t.min(self.ttl));
        self.change(&action, &zone, "UPSERT", fqdn, ttl, &values)
            .await
    }

    async fn cleanup(&self, fqdn: &str, value: &str) -> Result<(), DnsError> {
        let (zone, zone_name) = self.zone(fqdn).await?;
        let action = format!("removing the TXT record `{fqdn}` from hosted zone `{zone_name}`");
        let (values, ttl) = self.current(&action, &zone, fqdn).await?;
        let quoted = format!("\"{value}\"");
        if !values.contains(&quoted) {
            return Ok(());
        }
        let ttl = ttl.unwrap_or(self.ttl);
        let rest: Vec<String> = values.iter().filter(|v| **v != quoted).cloned().collect();
        if rest.is_empty() {
            // A DELETE names the set exactly as it is.
            self.change(&action, &zone, "DELETE", fqdn, ttl, &values)
                .await
        } else {
            self.change(&action, &zone, "UPSERT", fqdn, ttl, &rest)
                .await
        }
    }
}

api::dns_provider!(Route53, "route53");

/// The endpoint in `variable`, else in `AWS_ENDPOINT_URL`, else
/// `default`; and its `host[:port]`, as signed.
fn endpoint_of(env: &Env<'_>, variable: &str, default: &str) -> Result<(String, String), DnsError> {
    let url = if env.optional(variable)?.is_some() {
        api::base_url(env, variable, default)?
    } else {
        api::base_url(env, "AWS_ENDPOINT_URL", default)?
    };
    let host = url
        .parse::<http::Uri>()
        .ok()
        .and_then(|u| u.authority().map(|a| a.as_str().to_owned()))
        .unwrap_or_default();
    Ok((url, host))
}

// === credentials file ===

/// The keys of the profile in the shared credentials file, if it has
/// both; an unreadable file named by the variable is an error, a missing
/// default file is not.
fn shared_credentials(env: &Env<'_>) -> Result<Option<Credentials>, DnsError> {
    let profile = env
        .optional("AWS_PROFILE")?
        .unwrap_or_else(|| "default".to_owned());
    let (path, named) = match env.optional("AWS_SHARED_CREDENTIALS_FILE")? {
        Some(p) => (std::path::PathBuf::from(p), true),
        None => match (env.lookup)("HOME").filter(|h| !h.is_empty()) {
            Some(home) => (
                std::path::Path::new(&home).join(".aws").join("credentials"),
                false,
            ),
            None => return Ok(None),
        },
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(_) if !named => return Ok(None),
        Err(source) => {
            return Err(DnsError::EnvFile {
                variable: "AWS_SHARED_CREDENTIALS_FILE".to_owned(),
                path,
                source,
            });
        }
    };
    let section = profile_section(&text, &profile);
    let get = |k: &str| {
        section
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
    };
    Ok(
        match (get("aws_access_key_id"), get("aws_secret_access_key")) {
            (Some(access_key), Some(secret_key)) => Some(Credentials {
                access_key,
                secret_key,
                session_token: get("aws_session_token"),
            }),
            _ => None,
        },
    )
}

/// The `key = value` lines of `[profile]` in an INI text.
pub(super) fn profile_section(text: &str, profile: &str) -> Vec<(String, String)> {
    let mut inside = false;
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            inside = name.trim() == profile;
            continue;
        }
        if inside && let Some((k, v)) = line.split_once('=') {
            out.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    out
}

// === Signature Version 4 ===

/// What a signature is scoped to.
pub(super) struct Scope<'a> {
    /// `YYYYMMDDTHHMMSSZ`, as in `x-amz-date`.
    pub date: &'a str,
    /// The signing region.
    pub region: &'a str,
    /// The service (`route53`).
    pub service: &'a str,
}

/// The `Authorization` header of a request (AWS Signature Version 4):
/// `headers` are the signed ones as (lowercase name, value), `path` the
/// URI path as sent, `query` the parameters before encoding.
#[allow(clippy::too_many_arguments)]
pub(super) fn authorization(
    credentials: &Credentials,
    scope: &Scope<'_>,
    method: &str,
    path: &str,
    query: &[(&str, &str)],
    headers: &[(String, String)],
    payload: &[u8],
) -> String {
    let mut headers: Vec<(String, String)> = headers
        .iter()
        .map(|(k, v)| {
            (
                k.to_ascii_lowercase(),
                v.split_whitespace().collect::<Vec<_>>().join(" "),
            )
        })
        .collect();
    headers.sort();
    let signed: Vec<&str> = headers.iter().map(|(k, _)| k.as_str()).collect();
    let signed = signed.join(";");
    let canonical_headers: String = headers.iter().map(|(k, v)| format!("{k}:{v}\n")).collect();
    let canonical_path: String = if path.is_empty() {
        "/".to_owned()
    } else {
        path.split('/')
            .map(|segment| uri_encode(segment, true))
            .collect::<Vec<_>>()
            .join("/")
    };
    let canonical_request = format!(
        "{method}\n{canonical_path}\n{}\n{canonical_headers}\n{signed}\n{}",
        canonical_query(query),
        hex(&sha2::Sha256::digest(payload))
    );
    let day = &scope.date[..scope.date.len().min(8)];
    let credential_scope = format!("{day}/{}/{}/aws4_request", scope.region, scope.service);
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{}\n{credential_scope}\n{}",
        scope.date,
        hex(&sha2::Sha256::digest(canonical_request.as_bytes()))
    );
    let mut key = hmac(
        format!("AWS4{}", credentials.secret_key).as_bytes(),
        day.as_bytes(),
    );
    for part in [scope.region, scope.service, "aws4_request"] {
        key = hmac(&key, part.as_bytes());
    }
    let signature = hex(&hmac(&key, string_to_sign.as_bytes()));
    format!(
        "AWS4-HMAC-SHA256 Credential={}/{credential_scope}, SignedHeaders={signed}, Signature={signature}",
        credentials.access_key
    )
}

/// The query as signed and sent: each name and value URI-encoded, sorted.
pub(super) fn canonical_query(query: &[(&str, &str)]) -> String {
    let mut pairs: Vec<(String, String)> = query
        .iter()
        .map(|(k, v)| (uri_encode(k, true), uri_encode(v, true)))
        .collect();
    pairs.sort();
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

/// SigV4's URI encoding: everything but `A-Za-z0-9-._~` as `%XX`.
fn uri_encode(text: &str, slash: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(char::from(b));
            }
            b'/' if !slash => out.push('/'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, key);
    ring::hmac::sign(&key, data).as_ref().to_vec()
}

/// `YYYYMMDDTHHMMSSZ` of `time` in UTC.
pub(super) fn amz_date(time: SystemTime) -> String {
    let secs = time
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    // Days since 1970-01-01 to a civil date (proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}T{:02}{:02}{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

// === XML, just enough ===

/// The inner texts of every `<name>…</name>` in `xml` (not nested in one
/// another: Route 53's answers never nest a tag in itself).
pub(super) fn tag<'x>(xml: &'x str, name: &str) -> Vec<&'x str> {
    let open = format!("<{name}>");
    let close = format!("</{name}>");
    let mut out = Vec::new();
    let mut rest = xml;
    while let Some(start) = rest.find(&open) {
        let after = &rest[start + open.len()..];
        let Some(end) = after.find(&close) else { break };
        out.push(&after[..end]);
        rest = &after[end + close.len()..];
    }
    out
}

/// `text` with XML's special characters as entities.
pub(super) fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `text` with XML's five entities replaced by their characters.
pub(super) fn unescape(text: &str) -> String {
    text.replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}
