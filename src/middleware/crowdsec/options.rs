//! The bouncer plugin's own options, read from the plugin's configuration
//! by the reader every plugin shares (`Named::read`: keys in any case,
//! values given as text read as numbers, flags and lists), with the
//! plugin's defaults for what is not given, then checked as the plugin
//! checks them.

use super::super::MiddlewareError;
use super::super::plugin::settings::{Flag, Named};
use serde::Deserialize;
use serde_json::Value;

/// How the bouncer learns about decisions (`crowdsecMode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Ask the LAPI about each client address, keeping answers in a cache
    /// for `defaultDecisionSeconds` (the plugin's default mode).
    Live,
    /// Ask the LAPI about each request, with no cache.
    None,
    /// Pull `/v1/decisions/stream` every `updateIntervalSeconds` and answer
    /// every request from what was pulled.
    Stream,
    /// Never ask the LAPI: only the AppSec component judges requests (when
    /// `crowdsecAppsecEnabled` is on; without it every request passes, as
    /// in the plugin).
    Appsec,
}

/// TLS towards a CrowdSec component reached over `https`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Tls {
    /// `…TlsInsecureVerify`.
    pub insecure: bool,
    /// `…TlsCertificateAuthority` (PEM) or its `…File` (path).
    pub ca: Option<String>,
    /// `…TlsCertificateBouncer` and `…Key` (PEM or paths).
    pub cert: Option<(String, String)>,
}

/// Where and how requests are forwarded to CrowdSec's AppSec component.
#[derive(Clone, Debug)]
pub struct Appsec {
    /// `crowdsecAppsecScheme`, else the LAPI's scheme.
    pub https: bool,
    /// `crowdsecAppsecHost`: `host:port`.
    pub host: String,
    /// `crowdsecAppsecPath`.
    pub path: String,
    /// `crowdsecAppsecKey` (or its `…File`), else the LAPI's key.
    pub key: String,
    /// The `crowdsecAppsecTls…` options when `crowdsecAppsecScheme` is
    /// given, else the LAPI's, as the plugin picks them.
    pub tls: Tls,
    /// `crowdsecAppsecFailureBlock`: an answer of 500 refuses the request.
    pub failure_block: bool,
    /// `crowdsecAppsecUnreachableBlock`: no answer refuses the request.
    pub unreachable_block: bool,
    /// `crowdsecAppsecUnreadableBodyBlock`: a body that cannot be read
    /// first (HTTP/2 or 3 without a length) refuses a request whose method
    /// carries one.
    pub unreadable_body_block: bool,
    /// `crowdsecAppsecBodyLimit`: the most bytes of a body forwarded (0:
    /// none).
    pub body_limit: u64,
}

/// The plugin's options, checked, with the plugin's defaults.
#[derive(Clone, Debug)]
pub struct Options {
    /// `enabled`: off by default, as in the plugin (requests then pass).
    pub enabled: bool,
    /// `crowdsecMode`.
    pub mode: Mode,
    /// `crowdsecLapiScheme`: `http` or `https`.
    pub https: bool,
    /// `crowdsecLapiHost`: `host:port`.
    pub host: String,
    /// `crowdsecLapiPath`: the prefix of the LAPI's routes.
    pub path: String,
    /// `crowdsecLapiKey` (or the content of `crowdsecLapiKeyFile`).
    pub key: String,
    /// `crowdsecLapiTls…`.
    pub tls: Tls,
    /// `updateIntervalSeconds`.
    pub update_interval: u64,
    /// `updateMaxFailure`: failed pulls tolerated before requests are
    /// refused (-1: never).
    pub update_max_failure: i64,
    /// `streamStartupBlock`: no request passes before the first pull.
    pub stream_startup_block: bool,
    /// `defaultDecisionSeconds`: how long a live answer is cached.
    pub default_decision: u64,
    /// `remediationStatusCode`.
    pub status: u16,
    /// `httpTimeoutSeconds`.
    pub http_timeout: u64,
    /// `traceHeadersCustomName`.
    pub trace_header: String,
    /// `remediationHeadersCustomName`.
    pub remediation_header: String,
    /// `forwardedHeadersCustomName`.
    pub forwarded_header: String,
    /// `forwardedHeadersTrustedIps`.
    pub forwarded_trusted: Vec<String>,
    /// `clientTrustedIps`.
    pub client_trusted: Vec<String>,
    /// `banFilePath` (or the older `banHtmlFilePath`).
    pub ban_file: Option<String>,
    /// AppSec forwarding, when `crowdsecAppsecEnabled` is on.
    pub appsec: Option<Appsec>,
}

/// The plugin's settings as written, with the plugin's defaults, read by
/// the one reader every plugin uses ([`Named::read`]).
#[derive(Debug, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Raw {
    enabled: Flag,
    crowdsec_mode: String,
    crowdsec_appsec_enabled: Flag,
    crowdsec_appsec_scheme: String,
    crowdsec_appsec_host: String,
    crowdsec_appsec_path: String,
    crowdsec_appsec_key: String,
    crowdsec_appsec_key_file: String,
    crowdsec_appsec_tls_insecure_verify: Flag,
    crowdsec_appsec_tls_certificate_authority: String,
    crowdsec_appsec_tls_certificate_authority_file: String,
    crowdsec_appsec_tls_certificate_bouncer: String,
    crowdsec_appsec_tls_certificate_bouncer_file: String,
    crowdsec_appsec_tls_certificate_bouncer_key: String,
    crowdsec_appsec_tls_certificate_bouncer_key_file: String,
    crowdsec_appsec_failure_block: Flag,
    crowdsec_appsec_unreachable_block: Flag,
    crowdsec_appsec_unreadable_body_block: Flag,
    crowdsec_appsec_body_limit: i64,
    crowdsec_lapi_scheme: String,
    crowdsec_lapi_host: String,
    crowdsec_lapi_path: String,
    crowdsec_lapi_key: String,
    crowdsec_lapi_key_file: String,
    crowdsec_lapi_tls_insecure_verify: Flag,
    crowdsec_lapi_tls_certificate_authority: String,
    crowdsec_lapi_tls_certificate_authority_file: String,
    crowdsec_lapi_tls_certificate_bouncer: String,
    crowdsec_lapi_tls_certificate_bouncer_file: String,
    crowdsec_lapi_tls_certificate_bouncer_key: String,
    crowdsec_lapi_tls_certificate_bouncer_key_file: String,
    update_interval_seconds: i64,
    update_max_failure: i64,
    stream_startup_block: Flag,
    default_decision_seconds: i64,
    remediation_status_code: i64,
    http_timeout_seconds: i64,
    trace_headers_custom_name: String,
    remediation_headers_custom_name: String,
    forwarded_headers_custom_name: String,
    forwarded_headers_trusted_ips: Vec<String>,
    client_trusted_ips: Vec<String>,
    ban_file_path: String,
    ban_html_file_path: String,
}

impl Default for Raw {
    fn default() -> Self {
        Raw {
            enabled: Flag(false),
            crowdsec_mode: "live".to_owned(),
            crowdsec_appsec_enabled: Flag(false),
            // Empty: the LAPI's scheme (and TLS settings).
            crowdsec_appsec_scheme: String::new(),
            crowdsec_appsec_host: "crowdsec:7422".to_owned(),
            crowdsec_appsec_path: "/".to_owned(),
            crowdsec_appsec_key: String::new(),
            crowdsec_appsec_key_file: String::new(),
            crowdsec_appsec_tls_insecure_verify: Flag(false),
            crowdsec_appsec_tls_certificate_authority: String::new(),
            crowdsec_appsec_tls_certificate_authority_file: String::new(),
            crowdsec_appsec_tls_certificate_bouncer: String::new(),
            crowdsec_appsec_tls_certificate_bouncer_file: String::new(),
            crowdsec_appsec_tls_certificate_bouncer_key: String::new(),
            crowdsec_appsec_tls_certificate_bouncer_key_file: String::new(),
            crowdsec_appsec_failure_block: Flag(true),
            crowdsec_appsec_unreachable_block: Flag(true),
            crowdsec_appsec_unreadable_body_block: Flag(true),
            crowdsec_appsec_body_limit: 10_485_760,
            crowdsec_lapi_scheme: "http".to_owned(),
            crowdsec_lapi_host: "crowdsec:8080".to_owned(),
            crowdsec_lapi_path: "/".to_owned(),
            crowdsec_lapi_key: String::new(),
            crowdsec_lapi_key_file: String::new(),
            crowdsec_lapi_tls_insecure_verify: Flag(false),
            crowdsec_lapi_tls_certificate_authority: String::new(),
            crowdsec_lapi_tls_certificate_authority_file: String::new(),
            crowdsec_lapi_tls_certificate_bouncer: String::new(),
            crowdsec_lapi_tls_certificate_bouncer_file: String::new(),
            crowdsec_lapi_tls_certificate_bouncer_key: String::new(),
            crowdsec_lapi_tls_certificate_bouncer_key_file: String::new(),
            update_interval_seconds: 60,
            update_max_failure: 0,
            stream_startup_block: Flag(true),
            default_decision_seconds: 60,
            remediation_status_code: 403,
            http_timeout_seconds: 10,
            trace_headers_custom_name: String::new(),
            remediation_headers_custom_name: String::new(),
            forwarded_headers_custom_name: "X-Forwarded-For".to_owned(),
            forwarded_headers_trusted_ips: Vec::new(),
            client_trusted_ips: Vec::new(),
            ban_file_path: String::new(),
            ban_html_file_path: String::new(),
        }
    }
}

/// A secret given as text or as the path of a file holding it, as the
/// plugin reads them; empty is None.
fn secret(
    text: &str,
    path: &str,
    file_key: &'static str,
) -> Result<Option<String>, MiddlewareError> {
    let value = if path.trim().is_empty() {
        text.trim().to_owned()
    } else {
        let path = path.trim();
        std::fs::read_to_string(path)
            .map_err(|e| MiddlewareError::invalid(file_key, format!("`{path}`: {e}")))?
            .trim()
            .to_owned()
    };
    Ok(Some(value).filter(|v| !v.is_empty()))
}

/// Like [`secret`], for PEM material the TLS client reads itself: the
/// text, or else the path of the file, which must exist.
fn pem(text: &str, path: &str, file_key: &'static str) -> Result<Option<String>, MiddlewareError> {
    let path = path.trim();
    if !path.is_empty() {
        std::fs::metadata(path)
            .map_err(|e| MiddlewareError::invalid(file_key, format!("`{path}`: {e}")))?;
        return Ok(Some(path.to_owned()));
    }
    Ok(Some(text.trim().to_owned()).filter(|v| !v.is_empty()))
}

/// Options the plugin has that are not built in, with why; given a value
/// that turns them on, the middleware is refused rather than run weaker
/// than configured.
fn refuse_left_out(mode: &str) -> Result<(), MiddlewareError> {
    if mode == "alone" {
        return Err(MiddlewareError::invalid(
            "crowdsecMode",
            "`alone` (pulling from CrowdSec's central API) is not built in; run a LAPI and use `stream`",
        ));
    }
    Ok(())
}

/// `http` or `https` for `option`.
fn scheme(option: &'static str, text: &str) -> Result<bool, MiddlewareError> {
    match text {
        "http" => Ok(false),
        "https" => Ok(true),
        other => Err(MiddlewareError::invalid(
            option,
            format!("`{other}` must be http or https"),
        )),
    }
}

/// A key as the plugin checks it: only what a header value may hold.
fn checked_key(option: &'static str, key: String) -> Result<String, MiddlewareError> {
    match key.chars().find(|c| !is_key_char(*c)) {
        Some(bad) => Err(MiddlewareError::invalid(
            option,
            format!("`{bad}` cannot be sent in a header"),
        )),
        None => Ok(key),
    }
}

/// The TLS options of one component, each given as PEM text or a file.
struct TlsRaw<'a> {
    insecure: bool,
    ca: (&'a str, &'a str, &'static str),
    cert: (&'a str, &'a str, &'static str),
    cert_key: (&'a str, &'a str, &'static str),
}

impl TlsRaw<'_> {
    fn read(&self) -> Result<Tls, MiddlewareError> {
        let read = |(text, path, key): (&str, &str, &'static str)| pem(text, path, key);
        Ok(Tls {
            insecure: self.insecure,
            ca: read(self.ca)?,
            cert: read(self.cert)?.zip(read(self.cert_key)?),
        })
    }
}

/// The AppSec options, when `crowdsecAppsecEnabled` is on. As the plugin:
/// the scheme, TLS settings and key are the LAPI's unless given; the body
/// limit and scheme are checked even when AppSec is off.
fn parse_appsec(
    raw: &Raw,
    lapi_https: bool,
    lapi_key: &str,
    lapi_tls: &Tls,
) -> Result<Option<Appsec>, MiddlewareError> {
    let body_limit = u64::try_from(raw.crowdsec_appsec_body_limit).map_err(|_| {
        MiddlewareError::invalid("crowdsecAppsecBodyLimit", "cannot be less than 0")
    })?;
    let own_scheme = match raw.crowdsec_appsec_scheme.trim() {
        "" => None,
        text => Some(scheme("crowdsecAppsecScheme", text)?),
    };
    if !raw.crowdsec_appsec_enabled.0 {
        return Ok(None);
    }
    let host = raw.crowdsec_appsec_host.trim().to_owned();
    if host.is_empty() {
        return Err(MiddlewareError::invalid(
            "crowdsecAppsecHost",
            "cannot be empty",
        ));
    }
    let tls = match own_scheme {
        Some(_) => TlsRaw {
            insecure: raw.crowdsec_appsec_tls_insecure_verify.0,
            ca: (
                &raw.crowdsec_appsec_tls_certificate_authority,
                &raw.crowdsec_appsec_tls_certificate_authority_file,
                "crowdsecAppsecTlsCertificateAuthorityFile",
            ),
            cert: (
                &raw.crowdsec_appsec_tls_certificate_bouncer,
                &raw.crowdsec_appsec_tls_certificate_bouncer_file,
                "crowdsecAppsecTlsCertificateBouncerFile",
            ),
            cert_key: (
                &raw.crowdsec_appsec_tls_certificate_bouncer_key,
                &raw.crowdsec_appsec_tls_certificate_bouncer_key_file,
                "crowdsecAppsecTlsCertificateBouncerKeyFile",
            ),
        }
        .read()?,
        None => lapi_tls.clone(),
    };
    let own_key = secret(
        &raw.crowdsec_appsec_key,
        &raw.crowdsec_appsec_key_file,
        "crowdsecAppsecKeyFile",
    )?;
    let key = match own_key {
        Some(key) => checked_key("crowdsecAppsecKey", key)?,
        None if !lapi_key.is_empty() => lapi_key.to_owned(),
        None => {
            return Err(MiddlewareError::invalid(
                "crowdsecAppsecKey",
                "AppSec needs a bouncer key: crowdsecAppsecKey(File) or crowdsecLapiKey(File)",
            ));
        }
    };
    Ok(Some(Appsec {
        https: own_scheme.unwrap_or(lapi_https),
        host,
        path: raw.crowdsec_appsec_path.trim().to_owned(),
        key,
        tls,
        failure_block: raw.crowdsec_appsec_failure_block.0,
        unreachable_block: raw.crowdsec_appsec_unreachable_block.0,
        unreadable_body_block: raw.crowdsec_appsec_unreadable_body_block.0,
        body_limit,
    }))
}

/// Reads and checks the plugin's options, as the plugin's own validation
/// does (same limits, same required values).
pub fn parse(config: &Value, named: &Named<'_>) -> Result<Options, MiddlewareError> {
    let raw: Raw = named.read(config)?;
    let mode_text = raw.crowdsec_mode.trim();
    refuse_left_out(mode_text)?;
    let mode = match mode_text {
        "live" => Mode::Live,
        "none" => Mode::None,
        "stream" => Mode::Stream,
        "appsec" => Mode::Appsec,
        other => {
            return Err(MiddlewareError::invalid(
                "crowdsecMode",
                format!("`{other}` must be one of none, live, stream, alone or appsec"),
            ));
        }
    };
    let https = scheme("crowdsecLapiScheme", raw.crowdsec_lapi_scheme.trim())?;
    let host = raw.crowdsec_lapi_host.trim().to_owned();
    if host.is_empty() {
        return Err(MiddlewareError::invalid(
            "crowdsecLapiHost",
            "cannot be empty",
        ));
    }
    let at_least = |key: &'static str, n: i64, min: i64| -> Result<u64, MiddlewareError> {
        u64::try_from(n)
            .ok()
            .filter(|_| n >= min)
            .ok_or_else(|| MiddlewareError::invalid(key, format!("cannot be less than {min}")))
    };
    if raw.update_max_failure < -1 {
        return Err(MiddlewareError::invalid(
            "updateMaxFailure",
            "cannot be less than -1",
        ));
    }
    let status = u16::try_from(raw.remediation_status_code)
        .ok()
        .filter(|s| (100..600).contains(s))
        .ok_or_else(|| {
            MiddlewareError::invalid("remediationStatusCode", "must be between 100 and 599")
        })?;
    let key = secret(
        &raw.crowdsec_lapi_key,
        &raw.crowdsec_lapi_key_file,
        "crowdsecLapiKeyFile",
    )?;
    let tls = TlsRaw {
        insecure: raw.crowdsec_lapi_tls_insecure_verify.0,
        ca: (
            &raw.crowdsec_lapi_tls_certificate_authority,
            &raw.crowdsec_lapi_tls_certificate_authority_file,
            "crowdsecLapiTlsCertificateAuthorityFile",
        ),
        cert: (
            &raw.crowdsec_lapi_tls_certificate_bouncer,
            &raw.crowdsec_lapi_tls_certificate_bouncer_file,
            "crowdsecLapiTlsCertificateBouncerFile",
        ),
        cert_key: (
            &raw.crowdsec_lapi_tls_certificate_bouncer_key,
            &raw.crowdsec_lapi_tls_certificate_bouncer_key_file,
            "crowdsecLapiTlsCertificateBouncerKeyFile",
        ),
    }
    .read()?;
    // As the plugin (since 1.5): appsec mode never asks the LAPI, so it
    // needs no LAPI credentials.
    if key.is_none() && tls.cert.is_none() && mode != Mode::Appsec {
        return Err(MiddlewareError::invalid(
            "crowdsecLapiKey",
            "a bouncer key (crowdsecLapiKey or crowdsecLapiKeyFile) or a client certificate and key is required",
        ));
    }
    let key = checked_key("crowdsecLapiKey", key.unwrap_or_default())?;
    let appsec = parse_appsec(&raw, https, &key, &tls)?;
    let ban_file = [&raw.ban_file_path, &raw.ban_html_file_path]
        .into_iter()
        .map(|f| f.trim())
        .find(|f| !f.is_empty())
        .map(str::to_owned);
    let list = |items: &[String]| -> Vec<String> {
        items
            .iter()
            .map(|i| i.trim().to_owned())
            .filter(|i| !i.is_empty())
            .collect()
    };
    Ok(Options {
        enabled: raw.enabled.0,
        mode,
        https,
        host,
        path: raw.crowdsec_lapi_path.trim().to_owned(),
        key,
        tls,
        update_interval: at_least("updateIntervalSeconds", raw.update_interval_seconds, 1)?,
        update_max_failure: raw.update_max_failure,
        stream_startup_block: raw.stream_startup_block.0,
        default_decision: at_least("defaultDecisionSeconds", raw.default_decision_seconds, 1)?,
        status,
        http_timeout: at_least("httpTimeoutSeconds", raw.http_timeout_seconds, 1)?,
        trace_header: raw.trace_headers_custom_name.trim().to_owned(),
        remediation_header: raw.remediation_headers_custom_name.trim().to_owned(),
        forwarded_header: raw.forwarded_headers_custom_name.trim().to_owned(),
        forwarded_trusted: list(&raw.forwarded_headers_trusted_ips),
        client_trusted: list(&raw.client_trusted_ips),
        ban_file,
        appsec,
    })
}

/// The characters the plugin lets through in a key: a header value's.
fn is_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || " !#$%&'*+-.^_`|~=/".contains(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::problem::PluginProblem;
    use serde_json::json;

    fn parse(config: &Value) -> Result<Options, MiddlewareError> {
        super::parse(
            config,
            &Named {
                key: "bouncer",
                module: super::super::MODULE,
            },
        )
    }

    #[test]
    fn defaults_are_the_plugins() {
        let o = parse(&json!({"crowdsecLapiKey": "abc"})).unwrap();
        assert!(!o.enabled);
        assert_eq!(o.mode, Mode::Live);
        assert_eq!(o.host, "crowdsec:8080");
        assert_eq!(
            (o.update_interval, o.default_decision, o.http_timeout),
            (60, 60, 10)
        );
        assert_eq!(o.status, 403);
        assert!(o.stream_startup_block);
        assert_eq!(o.forwarded_header, "X-Forwarded-For");
    }

    #[test]
    fn appsec_is_off_by_default_and_takes_the_plugins_defaults_when_on() {
        let o = parse(&json!({"crowdsecLapiKey": "abc"})).unwrap();
        assert!(o.appsec.is_none());
        let o = parse(&json!({
            "crowdsecLapiKey": "abc",
            "crowdsecLapiScheme": "https",
            "crowdsecLapiTlsInsecureVerify": "true",
            "crowdsecappsecenabled": "true",
        }))
        .unwrap();
        let a = o.appsec.expect("AppSec on");
        assert_eq!((a.host.as_str(), a.path.as_str()), ("crowdsec:7422", "/"));
        assert!(a.failure_block && a.unreachable_block && a.unreadable_body_block);
        assert_eq!(a.body_limit, 10_485_760);
        // Unless given their own, AppSec uses the LAPI's scheme, TLS and key.
        assert!(a.https);
        assert!(a.tls.insecure);
        assert_eq!(a.key, "abc");
    }

    #[test]
    fn appsec_options_of_their_own_replace_the_lapis() {
        let o = parse(&json!({
            "crowdsecLapiKey": "abc",
            "crowdsecLapiScheme": "https",
            "crowdsecLapiTlsInsecureVerify": "true",
            "crowdsecAppsecEnabled": "1",
            "crowdsecAppsecScheme": "http",
            "crowdsecAppsecHost": "waf:4241",
            "crowdsecAppsecPath": "/check/",
            "crowdsecAppsecKey": "def",
            "crowdsecAppsecFailureBlock": "false",
            "crowdsecAppsecUnreachableBlock": "f",
            "crowdsecAppsecUnreadableBodyBlock": "0",
            "crowdsecAppsecBodyLimit": "0",
        }))
        .unwrap();
        let a = o.appsec.expect("AppSec on");
        assert!(!a.https);
        assert_eq!(a.tls, Tls::default());
        assert_eq!(
            (a.host.as_str(), a.path.as_str(), a.key.as_str()),
            ("waf:4241", "/check/", "def")
        );
        assert!(!a.failure_block && !a.unreachable_block && !a.unreadable_body_block);
        assert_eq!(a.body_limit, 0);
        assert_eq!(o.key, "abc");
    }

    #[test]
    fn appsec_mode_needs_no_lapi_key_and_never_asks_the_lapi() {
        let o = parse(&json!({
            "crowdsecMode": "appsec",
            "crowdsecAppsecEnabled": "true",
            "crowdsecAppsecKey": "def",
        }))
        .unwrap();
        assert_eq!(o.mode, Mode::Appsec);
        assert_eq!(o.appsec.expect("AppSec on").key, "def");
        // As in the plugin, appsec mode without AppSec checks nothing.
        let o = parse(&json!({"crowdsecMode": "appsec"})).unwrap();
        assert!(o.appsec.is_none());
    }

    #[test]
    fn keys_ignore_case_and_values_come_as_text() {
        let o = parse(&json!({
            "Enabled": "t",
            "crowdsecmode": "stream",
            "CrowdsecLapiKey": "abc",
            "updateIntervalSeconds": "5",
            "streamStartupBlock": "0",
            "forwardedHeadersTrustedIPs": "10.0.0.0/8, 192.168.0.1",
            "clientTrustedIps": {"1": "10.0.0.2", "0": "10.0.0.1"},
        }))
        .unwrap();
        assert!(o.enabled);
        assert!(!o.stream_startup_block);
        assert_eq!(o.mode, Mode::Stream);
        assert_eq!(o.update_interval, 5);
        assert_eq!(o.forwarded_trusted, ["10.0.0.0/8", "192.168.0.1"]);
        assert_eq!(o.client_trusted, ["10.0.0.1", "10.0.0.2"]);
    }

    #[test]
    fn bad_values_name_their_option() {
        let cases = [
            (json!({}), "crowdsecLapiKey"),
            (
                json!({"crowdsecLapiKey": "a", "crowdsecMode": "fast"}),
                "crowdsecMode",
            ),
            (
                json!({"crowdsecLapiKey": "a", "crowdsecMode": "alone"}),
                "crowdsecMode",
            ),
            (
                json!({"crowdsecLapiKey": "a", "crowdsecAppsecBodyLimit": "-1"}),
                "crowdsecAppsecBodyLimit",
            ),
            (
                json!({"crowdsecLapiKey": "a", "crowdsecAppsecScheme": "ftp"}),
                "crowdsecAppsecScheme",
            ),
            (
                json!({"crowdsecMode": "appsec", "crowdsecAppsecEnabled": "true"}),
                "crowdsecAppsecKey",
            ),
            (
                json!({"crowdsecLapiKey": "a", "crowdsecAppsecEnabled": "true", "crowdsecAppsecHost": " "}),
                "crowdsecAppsecHost",
            ),
            (
                json!({"crowdsecLapiKey": "a", "crowdsecAppsecEnabled": "true", "crowdsecAppsecKey": "x\ty"}),
                "crowdsecAppsecKey",
            ),
            (
                json!({"crowdsecLapiKey": "a", "crowdsecAppsecEnabled": "maybe"}),
                "crowdsecAppsecEnabled",
            ),
            (
                json!({"crowdsecLapiKey": "a", "updateIntervalSeconds": "0"}),
                "updateIntervalSeconds",
            ),
            (
                json!({"crowdsecLapiKey": "a", "updateIntervalSeconds": "soon"}),
                "updateIntervalSeconds",
            ),
            (
                json!({"crowdsecLapiKey": "a", "remediationStatusCode": 600}),
                "remediationStatusCode",
            ),
            (json!({"crowdsecLapiKey": "a", "enabled": "yes"}), "enabled"),
            (json!({"crowdsecLapiKey": "a\nb"}), "crowdsecLapiKey"),
            (
                json!({"crowdsecLapiKeyFile": "/nonexistent/key"}),
                "crowdsecLapiKeyFile",
            ),
        ];
        for (config, option) in cases {
            // A value that does not read is the shared reader's error; one
            // that reads but cannot work is the bouncer's own.
            match parse(&config) {
                Err(MiddlewareError::Invalid { option: got, .. }) => {
                    assert_eq!(got, option, "{config}")
                }
                Err(MiddlewareError::Plugin(PluginProblem::Setting { setting, .. })) => {
                    assert_eq!(setting, option, "{config}")
                }
                other => panic!("{config}: {other:?}"),
            }
        }
    }
}
