//! The middleware model: one struct per Traefik v3 middleware type, with its
//! option names. A `Middleware` sets exactly one type.

use crate::config::Duration;
use crate::config::lenient::{Lenient, LenientError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

macro_rules! middleware_kinds {
    ($( $(#[$doc:meta])* $field:ident : $ty:ty => $name:literal ),* $(,)?) => {
        /// A middleware: exactly one of its fields is set, named by the type
        /// (`stripPrefix`, `basicAuth`, …) as in Traefik.
        ///
        /// Reading one never fails: a middleware with an unknown type, an
        /// unknown option or a value of the wrong kind is kept with the
        /// reason in `invalid`, so that compile disables just it (and the
        /// routers that use it) instead of the whole file.
        #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
        #[serde(from = "serde_json::Value")]
        pub struct Middleware {
            $( $(#[$doc])* #[serde(rename = $name, skip_serializing_if = "Option::is_none")] pub $field: Option<$ty>, )*
            /// Why this middleware could not be read, naming the option; set
            /// only by deserialisation.
            #[serde(skip)]
            pub invalid: Option<String>,
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

            /// Reads the options of type `kind` (spelt as in [`Middleware::KNOWN`])
            /// from `de` into this middleware, for readers that match type
            /// names themselves (Docker labels, whose keys ignore case) and so
            /// cannot go through the lenient reading of a whole middleware.
            /// False when `kind` is not a known type.
            pub fn read_kind<'de, D: serde::Deserializer<'de>>(
                &mut self,
                kind: &str,
                de: D,
            ) -> Result<bool, D::Error> {
                match kind {
                    $( $name => self.$field = Some(<$ty as Deserialize>::deserialize(de)?), )*
                    _ => return Ok(false),
                }
                Ok(true)
            }
        }

        impl From<serde_json::Value> for Middleware {
            fn from(value: serde_json::Value) -> Self {
                let mut m = Middleware::default();
                let serde_json::Value::Object(map) = value else {
                    m.invalid = Some("a middleware is a table with one type, e.g. `stripPrefix`".to_owned());
                    return m;
                };
                for (key, v) in map {
                    // A type name matches in any case, as Traefik's file
                    // and key-value providers read it.
                    let kind = Middleware::KNOWN
                        .iter()
                        .find(|k| **k == key)
                        .or_else(|| Middleware::KNOWN.iter().find(|k| k.eq_ignore_ascii_case(&key)));
                    let problem = match kind.copied() {
                        $( Some($name) => match parse_kind::<$ty>($name, v) {
                            Ok(t) => { m.$field = Some(t); None }
                            Err(e) => Some(e.to_string()),
                        }, )*
                        _ => Some(unknown_kind(&key)),
                    };
                    if let (Some(p), None) = (problem, &m.invalid) {
                        m.invalid = Some(p);
                    }
                }
                m
            }
        }
    };
}

/// One middleware type's options that do not deserialize.
#[derive(Debug, thiserror::Error)]
enum KindError {
    /// The options as a whole are wrong (not a table, a missing field).
    #[error("{kind}: {error}")]
    Options {
        /// The middleware type, e.g. `stripPrefix`.
        kind: &'static str,
        /// What serde said.
        error: LenientError,
    },
    /// One option is wrong.
    #[error("{kind}.{path}: {error}")]
    Option {
        /// The middleware type, e.g. `stripPrefix`.
        kind: &'static str,
        /// The option's path inside the type, e.g. `prefixes[0]`.
        path: String,
        /// What serde said.
        error: LenientError,
    },
}

/// Reads one middleware type's options, naming the option on error.
fn parse_kind<T: serde::de::DeserializeOwned>(
    kind: &'static str,
    value: serde_json::Value,
) -> Result<T, KindError> {
    // Traefik's labels write an option-less middleware as `compress=true`.
    let value = match value {
        serde_json::Value::Bool(true) | serde_json::Value::Null => {
            serde_json::Value::Object(serde_json::Map::new())
        }
        v => v,
    };
    serde_path_to_error::deserialize(Lenient(value)).map_err(|e| {
        let path = e.path().to_string();
        let error = e.into_inner();
        if path.is_empty() || path == "." {
            KindError::Options { kind, error }
        } else {
            KindError::Option { kind, path, error }
        }
    })
}

/// Traefik middleware types gangway does not implement.
const NOT_SUPPORTED: &[&str] = &[
    "requestHeaderModifier",
    "responseHeaderModifier",
    "requestRedirect",
    "URLRewrite",
];

fn unknown_kind(name: &str) -> String {
    if NOT_SUPPORTED.iter().any(|n| n.eq_ignore_ascii_case(name)) {
        return format!("middleware type `{name}` is not supported by gangway");
    }
    match Middleware::KNOWN
        .iter()
        .find(|k| k.eq_ignore_ascii_case(name))
    {
        Some(k) => format!("unknown middleware type `{name}` (did you mean `{k}`?)"),
        None => format!("unknown middleware type `{name}`"),
    }
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
    /// Sets a missing `Content-Type` from the response's first bytes.
    content_type: ContentType => "contentType",
    /// HTTP digest authentication (RFC 7616, MD5).
    digest_auth: DigestAuth => "digestAuth",
    /// Refuses percent-escapes of reserved characters in the path.
    encoded_characters: EncodedCharacters => "encodedCharacters",
    /// Custom error pages.
    errors: Errors => "errors",
    /// Delegates authentication to another server.
    forward_auth: ForwardAuth => "forwardAuth",
    /// Translates gRPC-Web requests to gRPC and the answers back.
    grpc_web: GrpcWeb => "grpcWeb",
    /// Request/response headers, CORS and security headers.
    headers: Headers => "headers",
    /// Allows only some client addresses.
    ip_allow_list: IpAllowList => "ipAllowList",
    /// Traefik v2's name of ipAllowList.
    ip_white_list: IpAllowList => "ipWhiteList",
    /// Limits concurrent requests.
    in_flight_req: InFlightReq => "inFlightReq",
    /// Passes the client's TLS certificate to the server in headers.
    pass_tls_client_cert: PassTlsClientCert => "passTLSClientCert",
    /// A Traefik plugin, run by gangway's native implementation of it.
    /// The API shows its secrets as set, never their values.
    #[serde(serialize_with = "plugin_without_secrets")]
    plugin: Plugin => "plugin",
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

/// `plugin`: the key of the plugin as declared under the static
/// `experimental.plugins.<key>` (or `localPlugins`), mapped to the plugin's
/// own settings. Exactly one key is expected; the settings are kept as
/// written and read by the plugin's native implementation, which knows
/// their names and defaults.
pub type Plugin = BTreeMap<String, serde_json::Value>;

/// A plugin setting whose name says it holds a secret (an API key, a
/// token, a password), in any case.
fn is_secret(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    ["key", "token", "password", "secret"]
        .iter()
        .any(|word| name.contains(word))
}

/// A plugin's settings with each secret's value replaced, at any depth.
fn without_secrets(value: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(name, v)| {
                    let shown = match v {
                        Value::String(_) | Value::Number(_) if is_secret(name) => {
                            Value::String("<redacted>".to_owned())
                        }
                        v => without_secrets(v),
                    };
                    (name.clone(), shown)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_secrets).collect()),
        other => other.clone(),
    }
}

/// Serialises a plugin's settings as the API shows them: a secret (the
/// CrowdSec bouncer's LAPI key, say) as set but not its value, as
/// basicAuth's hashes are left out.
fn plugin_without_secrets<S: serde::Serializer>(
    plugin: &Option<Plugin>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match plugin {
        Some(settings) => s.collect_map(
            settings
                .iter()
                .map(|(key, value)| (key, without_secrets(value))),
        ),
        None => s.serialize_none(),
    }
}

/// `addPrefix`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct AddPrefix {
    /// The prefix, starting with `/`.
    pub prefix: String,
}

/// `encodedCharacters`, and an entry point's `http.encodedCharacters`:
/// which percent-escapes of reserved characters a request path may hold.
/// Each is refused with 400 unless allowed; the hexadecimal digits may be
/// in either case.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct EncodedCharacters {
    /// Allow `%2F` (`/`).
    pub allow_encoded_slash: bool,
    /// Allow `%5C` (`\`).
    pub allow_encoded_back_slash: bool,
    /// Allow `%00` (NUL).
    pub allow_encoded_null_character: bool,
    /// Allow `%3B` (`;`).
    pub allow_encoded_semicolon: bool,
    /// Allow `%25` (`%`).
    pub allow_encoded_percent: bool,
    /// Allow `%3F` (`?`).
    pub allow_encoded_question_mark: bool,
    /// Allow `%23` (`#`).
    pub allow_encoded_hash: bool,
}

/// Serialises `user:hash` entries as the user names alone.
fn user_names<S: serde::Serializer>(users: &[String], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(
        users
            .iter()
            .map(|u| u.split_once(':').map_or(u.as_str(), |(name, _)| name)),
    )
}

/// `basicAuth`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct BasicAuth {
    /// `user:hash` entries (htpasswd: bcrypt, apr1/MD5, SHA1). The API
    /// shows the user names only, never a hash.
    #[serde(skip_serializing_if = "Vec::is_empty", serialize_with = "user_names")]
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
    /// Stream the request body instead of buffering it.
    pub disable_request_buffer: bool,
    /// Stream the response body instead of buffering it.
    pub disable_response_buffer: bool,
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
    /// Encodings offered, in preference order for equal client weights
    /// (default `gzip`, `br`, `zstd`, as Traefik).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub encodings: Vec<String>,
    /// Encoding used when the client accepts any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_encoding: Option<String>,
}

/// `contentType`: with it, a response the server sent without a
/// `Content-Type` gets one detected from its first bytes (without it,
/// gangway leaves the header alone, as Traefik v3 does).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct ContentType {
    /// Deprecated in Traefik: `false` turns the detection off again (the
    /// same as not using the middleware), `true` changes nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auto_detect: Option<bool>,
}

/// `digestAuth`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct DigestAuth {
    /// `user:realm:ha1` entries, as `htdigest` writes them. The API shows
    /// the user names only, never a hash.
    #[serde(skip_serializing_if = "Vec::is_empty", serialize_with = "user_names")]
    pub users: Vec<String>,
    /// An `htdigest` file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub users_file: Option<String>,
    /// Realm in the challenge, and the realm a user's line must name
    /// (default `traefik`, as in Traefik, since an htdigest hash depends
    /// on it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub realm: Option<String>,
    /// Remove the `Authorization` header before forwarding.
    pub remove_header: bool,
    /// Header that receives the authenticated user name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub header_field: Option<String>,
}

/// `grpcWeb`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct GrpcWeb {
    /// Origins allowed for cross-origin gRPC-Web calls (`*` for any).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allow_origins: Vec<String>,
}

/// `passTLSClientCert`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct PassTlsClientCert {
    /// Send the certificates in `X-Forwarded-Tls-Client-Cert` (base64
    /// DER, escaped, comma-separated).
    pub pem: bool,
    /// Send the chosen fields in `X-Forwarded-Tls-Client-Cert-Info`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub info: Option<TlsClientCertInfo>,
}

/// `passTLSClientCert.info`: which certificate fields go into
/// `X-Forwarded-Tls-Client-Cert-Info`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct TlsClientCertInfo {
    /// `NA=` the end of validity, in Unix seconds.
    pub not_after: bool,
    /// `NB=` the start of validity, in Unix seconds.
    pub not_before: bool,
    /// `SAN=` the subject alternative names.
    pub sans: bool,
    /// `SerialNumber=` the certificate's serial number.
    pub serial_number: bool,
    /// `Subject=` with these parts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<TlsClientCertSubject>,
    /// `Issuer=` with these parts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub issuer: Option<TlsClientCertIssuer>,
}

/// `passTLSClientCert.info.subject`: which parts of the subject are sent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct TlsClientCertSubject {
    /// `C=`.
    pub country: bool,
    /// `ST=`.
    pub province: bool,
    /// `L=`.
    pub locality: bool,
    /// `O=`.
    pub organization: bool,
    /// `OU=`.
    pub organizational_unit: bool,
    /// `CN=`.
    pub common_name: bool,
    /// `SN=` (the subject's serialNumber attribute).
    pub serial_number: bool,
    /// `DC=`.
    pub domain_component: bool,
}

/// `passTLSClientCert.info.issuer`: which parts of the issuer are sent
/// (Traefik has no `organizationalUnit` here).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct TlsClientCertIssuer {
    /// `C=`.
    pub country: bool,
    /// `ST=`.
    pub province: bool,
    /// `L=`.
    pub locality: bool,
    /// `O=`.
    pub organization: bool,
    /// `CN=`.
    pub common_name: bool,
    /// `SN=` (the issuer's serialNumber attribute).
    pub serial_number: bool,
    /// `DC=`.
    pub domain_component: bool,
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
    /// Request headers sent on to the error page service (default: all).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_request_headers: Option<Vec<String>>,
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
    /// Largest auth response body read (default: no limit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_response_body_size: Option<i64>,
    /// Where to redirect when the auth server answers 401.
    #[serde(rename = "authSigninURL", skip_serializing_if = "Option::is_none")]
    pub auth_signin_url: Option<String>,
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
    /// Traefik v2's `Feature-Policy`; Traefik v3 parses it and sends
    /// nothing, and so does gangway, with a warning (use
    /// `permissionsPolicy`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub feature_policy: Option<String>,
    /// Traefik v2's redirect to HTTPS; ignored as in Traefik v3, with a
    /// warning (use the entry point's redirection or `redirectScheme`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ssl_redirect: Option<bool>,
    /// As `sslRedirect`, with a temporary redirect; ignored, with a warning.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ssl_temporary_redirect: Option<bool>,
    /// The host of `sslRedirect`'s target; ignored as in Traefik v3, with a
    /// warning (use `redirectRegex`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ssl_host: Option<String>,
    /// Whether `sslRedirect` keeps the request's host; ignored, with a
    /// warning (use `redirectRegex`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ssl_force_host: Option<bool>,
}

impl Headers {
    /// The Traefik v2 options set here that Traefik v3 still parses and
    /// ignores, each with what to use instead.
    pub fn ignored_v2_options(&self) -> Vec<(&'static str, &'static str)> {
        [
            (
                self.feature_policy.is_some(),
                "featurePolicy",
                "permissionsPolicy",
            ),
            (
                self.ssl_redirect.is_some(),
                "sslRedirect",
                "the entry point's `http.redirections` or `redirectScheme`",
            ),
            (
                self.ssl_temporary_redirect.is_some(),
                "sslTemporaryRedirect",
                "the entry point's `http.redirections` or `redirectScheme`",
            ),
            (self.ssl_host.is_some(), "sslHost", "`redirectRegex`"),
            (
                self.ssl_force_host.is_some(),
                "sslForceHost",
                "`redirectRegex`",
            ),
        ]
        .into_iter()
        .filter(|(set, _, _)| *set)
        .map(|(_, option, instead)| (option, instead))
        .collect()
    }
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
    /// Take the address this many entries from the right (0 or less: off).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub depth: Option<i64>,
    /// Skip these addresses, from the right.
    #[serde(rename = "excludedIPs", skip_serializing_if = "Vec::is_empty")]
    pub excluded_ips: Vec<String>,
    /// Group IPv6 clients by this prefix length (1–128).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ipv6_subnet: Option<i64>,
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
    /// Keep the buckets in Redis, so that several instances share one
    /// budget (Traefik 3.4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redis: Option<RateLimitRedis>,
}

/// `rateLimit.redis`: where the shared buckets live.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct RateLimitRedis {
    /// The servers, `host:port`, tried in order (default `localhost:6379`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub endpoints: Vec<String>,
    /// TLS towards the servers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<ClientTls>,
    /// The user name, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// The password, if any. Never published by the API.
    #[serde(skip_serializing)]
    pub password: Option<String>,
    /// The database number.
    pub db: u32,
    /// Accepted for Traefik's configurations; gangway multiplexes one
    /// connection per middleware instead of keeping a pool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool_size: Option<i64>,
    /// Accepted, as `poolSize`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_idle_conns: Option<i64>,
    /// Accepted, as `poolSize`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_active_conns: Option<i64>,
    /// The longest a reply may take (default 3s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_timeout: Option<Duration>,
    /// The longest sending a command may take (default 3s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_timeout: Option<Duration>,
    /// The longest connecting may take (default 5s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dial_timeout: Option<Duration>,
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
    /// Total attempts (the first one counts).
    pub attempts: i64,
    /// Wait before the first retry, growing up to twice this (default 0: at once).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initial_interval: Option<Duration>,
    /// Stop retrying once this much time has passed (default 0: no limit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Duration>,
    /// Largest request body buffered so it can be replayed (default 2 MiB).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_request_body_bytes: Option<i64>,
    /// Statuses (`500`, `502-504`) that are retried as well.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub status: Vec<String>,
    /// Do not retry when the server could not be reached.
    pub disable_retry_on_network_error: bool,
    /// Retry `POST`, `PATCH` and `LOCK` on a status too.
    pub retry_non_idempotent_method: bool,
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

#[cfg(test)]
mod tests {

    use crate::config::Dynamic;
    use crate::config::format::{Format, parse_document};

    fn load(text: &str) -> Dynamic {
        parse_document("d.toml", text, Format::Toml).expect("the file itself loads")
    }

    #[test]
    fn a_bad_middleware_is_kept_with_its_reason_and_the_rest_loads() {
        let d = load(
            r#"
[http.middlewares.good.stripPrefix]
prefixes = ["/api"]
[http.middlewares.typo.stripPrefix]
prefixs = ["/api"]
[http.middlewares.kind.stripPrefixes]
prefixes = ["/api"]
[http.middlewares.wrong.rateLimit]
average = "lots"
[http.middlewares.deep.ipAllowList]
sourceRange = ["10.0.0.0/8"]
ipStrategy = { depht = 1 }
[http.middlewares.plug.plugin]
demo = {}
[http.middlewares.flag]
compress = true
"#,
        );
        let m = &d.http.middlewares;
        assert_eq!(m["good"].invalid, None);
        assert_eq!(
            m["good"].strip_prefix.as_ref().map(|s| s.prefixes.clone()),
            Some(vec!["/api".to_owned()])
        );
        let typo = m["typo"].invalid.as_deref().expect("typo is invalid");
        assert!(
            typo.starts_with("stripPrefix") && typo.contains("prefixs"),
            "{typo}"
        );
        let kind = m["kind"].invalid.as_deref().expect("unknown type");
        assert!(
            kind.contains("unknown middleware type `stripPrefixes`"),
            "{kind}"
        );
        let wrong = m["wrong"].invalid.as_deref().expect("wrong type");
        assert!(wrong.starts_with("rateLimit.average"), "{wrong}");
        let deep = m["deep"].invalid.as_deref().expect("nested typo");
        assert!(
            deep.contains("ipStrategy") && deep.contains("depht"),
            "{deep}"
        );
        // A plugin is read here; compile decides whether one is built in.
        assert_eq!(m["plug"].invalid, None);
        assert_eq!(m["plug"].kinds(), ["plugin"]);
        assert_eq!(m["flag"].invalid, None);
        assert_eq!(m["flag"].kinds(), ["compress"]);
    }

    #[test]
    fn plugin_secrets_are_shown_as_set_without_their_values() {
        let d = load(
            "[http.middlewares.b.plugin.bouncer]\nenabled = true\ncrowdsecLapiKey = \"s3cr3t\"\ncrowdsecLapiHost = \"lapi:8080\"\n[http.middlewares.b.plugin.bouncer.tls]\nAuthToken = \"t0k3n\"\n",
        );
        let json = serde_json::to_value(&d.http.middlewares["b"]).expect("serialises");
        assert_eq!(
            json,
            serde_json::json!({"plugin": {"bouncer": {
                "enabled": true,
                "crowdsecLapiKey": "<redacted>",
                "crowdsecLapiHost": "lapi:8080",
                "tls": {"AuthToken": "<redacted>"},
            }}})
        );
        // The settings themselves, which the plugin reads, keep the values.
        let settings = &d.http.middlewares["b"].plugin.as_ref().expect("plugin")["bouncer"];
        assert_eq!(settings["crowdsecLapiKey"], "s3cr3t");
    }

    #[test]
    fn basic_auth_serialises_user_names_without_their_hashes() {
        let d = load(
            "[http.middlewares.a.basicAuth]\nusers = [\"ann:$2y$05$abcdefghijklmnopqrstuv\", \"bob\"]\n",
        );
        let json = serde_json::to_value(&d.http.middlewares["a"]).expect("serialises");
        assert_eq!(
            json,
            serde_json::json!({"basicAuth": {"users": ["ann", "bob"], "removeHeader": false}})
        );
    }

    #[test]
    fn a_middleware_serialises_without_its_error() {
        let d = load("[http.middlewares.a.addPrefix]\nprefix = \"/x\"\n");
        let json = serde_json::to_value(&d.http.middlewares["a"]).expect("serialises");
        assert_eq!(json, serde_json::json!({"addPrefix": {"prefix": "/x"}}));
    }
}
