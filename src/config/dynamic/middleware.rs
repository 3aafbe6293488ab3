//! The middleware model: one struct per Traefik v3 middleware type, with its
//! option names. A `Middleware` sets exactly one type.

use crate::config::Duration;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

macro_rules! middleware_kinds {
    ($( $(#[$doc:meta])* $field:ident : $ty:ty => $name:literal ),* $(,)?) => {
        /// A middleware: exactly one of its fields is set, named by the type
        /// (`stripPrefix`, `basicAuth`, …) as in Traefik.
        #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
        #[serde(default, deny_unknown_fields)]
        pub struct Middleware {
            $( $(#[$doc])* #[serde(rename = $name, skip_serializing_if = "Option::is_none")] pub $field: Option<$ty>, )*
        }

        impl Middleware {
            /// The Traefik names of the types that are set (exactly one when valid).
            pub fn kinds(&self) -> Vec<&'static str> {
                let mut out = Vec::new();
                $( if self.$field.is_some() { out.push($name); } )*
                out
            }

            /// Every middleware type name gangway knows, in Traefik's spelling.
            pub const KNOWN: &'static [&'static str] = &[$($name),*];
        }
    };
}

middleware_kinds! {
    /// Adds a prefix to the path.
    add_prefix: AddPrefix => "addPrefix",
    /// HTTP basic authentication.
    basic_auth: BasicAuth => "basicAuth",
    /// Reads whole bodies, bounded, before forwarding.
    buffering: Buffering => "buffering",
    /// Several middlewares as one.
    chain: Chain => "chain",
    /// Stops sending to a failing service for a while.
    circuit_breaker: CircuitBreaker => "circuitBreaker",
    /// Compresses responses.
    compress: Compress => "compress",
    /// Custom error pages.
    errors: Errors => "errors",
    /// Delegates authentication to another server.
    forward_auth: ForwardAuth => "forwardAuth",
    /// Request/response headers, CORS and security headers.
    headers: Headers => "headers",
    /// Allows only some client addresses.
    ip_allow_list: IpAllowList => "ipAllowList",
    /// Traefik v2's name of ipAllowList.
    ip_white_list: IpAllowList => "ipWhiteList",
    /// Limits concurrent requests.
    in_flight_req: InFlightReq => "inFlightReq",
    /// Limits the request rate.
    rate_limit: RateLimit => "rateLimit",
    /// Redirects by regex.
    redirect_regex: RedirectRegex => "redirectRegex",
    /// Redirects to another scheme.
    redirect_scheme: RedirectScheme => "redirectScheme",
    /// Replaces the path.
    replace_path: ReplacePath => "replacePath",
    /// Replaces the path by regex.
    replace_path_regex: ReplacePathRegex => "replacePathRegex",
    /// Retries failed requests that are safe to replay.
    retry: Retry => "retry",
    /// Removes path prefixes.
    strip_prefix: StripPrefix => "stripPrefix",
    /// Removes path prefixes matching regexes.
    strip_prefix_regex: StripPrefixRegex => "stripPrefixRegex",
}

/// `addPrefix`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct AddPrefix {
    /// The prefix, starting with `/`.
    pub prefix: String,
}

/// `basicAuth`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct BasicAuth {
    /// `user:hash` entries (htpasswd: bcrypt, apr1/MD5, SHA1). Never published by the API.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub users: Vec<String>,
    /// An htpasswd file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub users_file: Option<String>,
    /// Realm in the challenge (default `gangway`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub realm: Option<String>,
    /// Remove the `Authorization` header before forwarding.
    pub remove_header: bool,
    /// Header that receives the authenticated user name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub header_field: Option<String>,
}

/// `buffering`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct Buffering {
    /// Largest request body accepted (0: no limit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_request_body_bytes: Option<i64>,
    /// Request body kept in memory before spilling.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mem_request_body_bytes: Option<i64>,
    /// Largest response body accepted (0: no limit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_response_body_bytes: Option<i64>,
    /// Response body kept in memory before spilling.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mem_response_body_bytes: Option<i64>,
    /// When to retry, e.g. `IsNetworkError() && Attempts() < 2`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_expression: Option<String>,
}

/// `chain`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct Chain {
    /// The middlewares, in order.
    pub middlewares: Vec<String>,
}

/// `circuitBreaker`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct CircuitBreaker {
    /// When to open, over `NetworkErrorRatio()`, `ResponseCodeRatio(a,b,c,d)`, `LatencyAtQuantileMS(q)`.
    pub expression: String,
    /// How often the expression is evaluated (default 100ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub check_period: Option<Duration>,
    /// How long the breaker stays open (default 10s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback_duration: Option<Duration>,
    /// How long it takes to ramp back up (default 10s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovery_duration: Option<Duration>,
    /// Status sent while open (default 503).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_code: Option<u16>,
}

/// `compress`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct Compress {
    /// Content types never compressed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub excluded_content_types: Vec<String>,
    /// Only these content types are compressed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub included_content_types: Vec<String>,
    /// Smallest body compressed (default 1024).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_response_body_bytes: Option<i64>,
    /// Encodings offered, in preference order (default `zstd`, `br`, `gzip`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub encodings: Vec<String>,
    /// Encoding used when the client accepts any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_encoding: Option<String>,
}

/// `errors`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct Errors {
    /// Status codes or ranges (`500-599`) that get the error page.
    pub status: Vec<String>,
    /// The service that serves error pages.
    pub service: String,
    /// Path on that service; `{status}` and `{url}` are replaced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// Status codes rewritten on the way out.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub status_rewrites: BTreeMap<String, u16>,
}

/// `forwardAuth`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct ForwardAuth {
    /// The authentication server's URL.
    pub address: String,
    /// TLS towards the authentication server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<ClientTls>,
    /// Pass the client's `X-Forwarded-*` headers on.
    pub trust_forward_header: bool,
    /// Headers copied from the auth response to the request.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub auth_response_headers: Vec<String>,
    /// Headers matching this regex are copied too.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth_response_headers_regex: Option<String>,
    /// Only these request headers are sent to the auth server.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub auth_request_headers: Vec<String>,
    /// Cookies from the auth response added to the response.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub add_auth_cookies_to_response: Vec<String>,
    /// Header that receives the authenticated user.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub header_field: Option<String>,
    /// Send the request body to the auth server.
    pub forward_body: bool,
    /// Largest body forwarded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_body_size: Option<i64>,
    /// Keep relative `Location` headers of the auth response.
    pub preserve_location_header: bool,
    /// Use the request's method towards the auth server.
    pub preserve_request_method: bool,
}

/// Client-side TLS settings.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct ClientTls {
    /// CA to trust (PEM file).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ca: Option<String>,
    /// Client certificate (PEM file).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cert: Option<String>,
    /// Client key (PEM file). Never published by the API.
    #[serde(skip_serializing)]
    pub key: Option<String>,
    /// Skip verification.
    pub insecure_skip_verify: bool,
    /// Do not require the CA.
    pub ca_optional: bool,
}

/// `headers`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct Headers {
    /// Added to requests; an empty value removes the header.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub custom_request_headers: BTreeMap<String, String>,
    /// Added to responses; an empty value removes the header.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub custom_response_headers: BTreeMap<String, String>,
    /// CORS: `Access-Control-Allow-Credentials`.
    pub access_control_allow_credentials: bool,
    /// CORS: allowed request headers.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub access_control_allow_headers: Vec<String>,
    /// CORS: allowed methods.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub access_control_allow_methods: Vec<String>,
    /// CORS: allowed origins (`*` for any).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub access_control_allow_origin_list: Vec<String>,
    /// CORS: allowed origins by regex.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub access_control_allow_origin_list_regex: Vec<String>,
    /// CORS: headers exposed to scripts.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub access_control_expose_headers: Vec<String>,
    /// CORS: how long a preflight answer may be cached, in seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access_control_max_age: Option<i64>,
    /// Add `Vary: Origin`.
    pub add_vary_header: bool,
    /// Allowed `Host` values.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allowed_hosts: Vec<String>,
    /// Headers that may hold the original host.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hosts_proxy_headers: Vec<String>,
    /// Header/value pairs that mean the original request was HTTPS.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub ssl_proxy_headers: BTreeMap<String, String>,
    /// `Strict-Transport-Security: max-age`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sts_seconds: Option<i64>,
    /// Add `includeSubDomains`.
    pub sts_include_subdomains: bool,
    /// Add `preload`.
    pub sts_preload: bool,
    /// Send STS on plain HTTP too.
    #[serde(rename = "forceSTSHeader")]
    pub force_sts_header: bool,
    /// `X-Frame-Options: DENY`.
    pub frame_deny: bool,
    /// Custom `X-Frame-Options` value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub custom_frame_options_value: Option<String>,
    /// `X-Content-Type-Options: nosniff`.
    pub content_type_nosniff: bool,
    /// `X-XSS-Protection: 1; mode=block`.
    pub browser_xss_filter: bool,
    /// Custom `X-XSS-Protection` value.
    #[serde(
        rename = "customBrowserXSSValue",
        skip_serializing_if = "Option::is_none"
    )]
    pub custom_browser_xss_value: Option<String>,
    /// `Content-Security-Policy`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_security_policy: Option<String>,
    /// `Content-Security-Policy-Report-Only`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_security_policy_report_only: Option<String>,
    /// `Public-Key-Pins`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub public_key: Option<String>,
    /// `Referrer-Policy`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub referrer_policy: Option<String>,
    /// `Permissions-Policy`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permissions_policy: Option<String>,
    /// Relax `allowedHosts` and STS for development.
    pub is_development: bool,
}

/// `ipAllowList`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct IpAllowList {
    /// Allowed IPs and CIDRs.
    pub source_range: Vec<String>,
    /// Which address is the client's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip_strategy: Option<IpStrategy>,
    /// Status for refused clients (default 403).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reject_status_code: Option<u16>,
}

/// How the client address is taken from `X-Forwarded-For`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct IpStrategy {
    /// Take the address this many entries from the right.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub depth: Option<u32>,
    /// Skip these addresses, from the right.
    #[serde(rename = "excludedIPs", skip_serializing_if = "Vec::is_empty")]
    pub excluded_ips: Vec<String>,
    /// Group IPv6 clients by this prefix length.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ipv6_subnet: Option<u8>,
}

/// What counts as one client for limits.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct SourceCriterion {
    /// By client address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip_strategy: Option<IpStrategy>,
    /// By the value of this request header.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_header_name: Option<String>,
    /// By the request's host.
    pub request_host: bool,
}

/// `inFlightReq`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct InFlightReq {
    /// Concurrent requests allowed per source.
    pub amount: i64,
    /// What a source is (default: the client address).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_criterion: Option<SourceCriterion>,
}

/// `rateLimit`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct RateLimit {
    /// Requests allowed per `period` on average.
    pub average: i64,
    /// The period of `average` (default 1s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period: Option<Duration>,
    /// Requests allowed in a burst (default 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub burst: Option<i64>,
    /// What a source is (default: the client address).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_criterion: Option<SourceCriterion>,
}

/// `redirectRegex`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct RedirectRegex {
    /// Regex over the full request URL.
    pub regex: String,
    /// Replacement, with `${1}` groups.
    pub replacement: String,
    /// 301/308 instead of 302/307.
    pub permanent: bool,
}

/// `redirectScheme`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct RedirectScheme {
    /// Target scheme (`https`).
    pub scheme: String,
    /// Target port.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<String>,
    /// 301/308 instead of 302/307.
    pub permanent: bool,
}

/// `replacePath`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct ReplacePath {
    /// The new path.
    pub path: String,
}

/// `replacePathRegex`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct ReplacePathRegex {
    /// Regex over the path.
    pub regex: String,
    /// Replacement, with `${1}` groups.
    pub replacement: String,
}

/// `retry`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct Retry {
    /// Total attempts.
    pub attempts: i64,
    /// Wait before the first retry, doubling after (default 100ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initial_interval: Option<Duration>,
}

/// `stripPrefix`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct StripPrefix {
    /// Prefixes removed from the path; the first that matches wins.
    pub prefixes: Vec<String>,
    /// Traefik v2 option, accepted and ignored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub force_slash: Option<bool>,
}

/// `stripPrefixRegex`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct StripPrefixRegex {
    /// Regexes whose match at the start of the path is removed.
    pub regex: Vec<String>,
}
