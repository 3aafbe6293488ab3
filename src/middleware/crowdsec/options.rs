//! The bouncer plugin's own options, read from the plugin's configuration
//! as Traefik hands it over: keys matched without regard to case, values
//! taken weakly (labels give every value as text, so `"true"` is a boolean
//! and `"60"` a number), and the plugin's defaults for what is not given.

use super::super::MiddlewareError;
use serde_json::{Map, Value};

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
    /// `crowdsecLapiTlsInsecureVerify`.
    pub tls_insecure: bool,
    /// `crowdsecLapiTlsCertificateAuthority` (PEM) or its `…File` (path).
    pub tls_ca: Option<String>,
    /// `crowdsecLapiTlsCertificateBouncer` and `…Key` (PEM or paths).
    pub tls_cert: Option<(String, String)>,
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
}

/// The plugin's keys, lower-cased, for lookups that ignore case as Traefik's
/// decoding of plugin options does.
struct Keys(Map<String, Value>);

impl Keys {
    fn get(&self, key: &'static str) -> Option<&Value> {
        self.0
            .get(&key.to_ascii_lowercase())
            .filter(|v| !v.is_null())
    }

    fn text(&self, key: &'static str, default: &str) -> Result<String, MiddlewareError> {
        match self.get(key) {
            None => Ok(default.to_owned()),
            Some(Value::String(s)) => Ok(s.trim().to_owned()),
            Some(v @ (Value::Number(_) | Value::Bool(_))) => Ok(v.to_string()),
            Some(_) => Err(MiddlewareError::invalid(key, "must be a text value")),
        }
    }

    /// A text option or the content of its `…File` twin, as the plugin
    /// reads secrets; empty is None.
    fn secret(
        &self,
        key: &'static str,
        file_key: &'static str,
    ) -> Result<Option<String>, MiddlewareError> {
        let path = self.text(file_key, "")?;
        let value = if path.is_empty() {
            self.text(key, "")?
        } else {
            std::fs::read_to_string(&path)
                .map_err(|e| MiddlewareError::invalid(file_key, format!("`{path}`: {e}")))?
                .trim()
                .to_owned()
        };
        Ok(Some(value).filter(|v| !v.is_empty()))
    }

    /// Like [`Keys::secret`], for PEM material the TLS client reads itself:
    /// the text, or else the path of the file.
    fn pem(
        &self,
        key: &'static str,
        file_key: &'static str,
    ) -> Result<Option<String>, MiddlewareError> {
        let path = self.text(file_key, "")?;
        if !path.is_empty() {
            std::fs::metadata(&path)
                .map_err(|e| MiddlewareError::invalid(file_key, format!("`{path}`: {e}")))?;
            return Ok(Some(path));
        }
        Ok(Some(self.text(key, "")?).filter(|v| !v.is_empty()))
    }

    fn flag(&self, key: &'static str, default: bool) -> Result<bool, MiddlewareError> {
        match self.get(key) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(Value::Number(n)) => Ok(n.as_f64() != Some(0.0)),
            // Go's strconv.ParseBool words, and empty as false, as a weakly
            // typed decode reads them.
            Some(Value::String(s)) => match s.trim() {
                "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
                "" | "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
                other => Err(MiddlewareError::invalid(
                    key,
                    format!("`{other}` is not true or false"),
                )),
            },
            Some(_) => Err(MiddlewareError::invalid(key, "must be true or false")),
        }
    }

    fn number(&self, key: &'static str, default: i64) -> Result<i64, MiddlewareError> {
        let bad = || MiddlewareError::invalid(key, "must be a whole number");
        match self.get(key) {
            None => Ok(default),
            Some(Value::Number(n)) => n.as_i64().ok_or_else(bad),
            Some(Value::String(s)) if s.trim().is_empty() => Ok(0),
            Some(Value::String(s)) => s.trim().parse().map_err(|_| bad()),
            Some(_) => Err(bad()),
        }
    }

    /// A list: an array, an object of indexed entries (`key[0]`, `key[1]`
    /// from labels), or comma-separated text.
    fn list(&self, key: &'static str) -> Result<Vec<String>, MiddlewareError> {
        let item = |v: &Value| match v {
            Value::String(s) => Ok(s.trim().to_owned()),
            Value::Number(_) => Ok(v.to_string()),
            _ => Err(MiddlewareError::invalid(
                key,
                "must be a list of text values",
            )),
        };
        let items: Vec<String> = match self.get(key) {
            None => Vec::new(),
            Some(Value::Array(a)) => a.iter().map(item).collect::<Result<_, _>>()?,
            Some(Value::Object(o)) => {
                let mut entries: Vec<(u64, &Value)> = o
                    .iter()
                    .map(|(k, v)| k.parse().map(|i| (i, v)))
                    .collect::<Result<_, _>>()
                    .map_err(|_| MiddlewareError::invalid(key, "must be a list"))?;
                entries.sort_by_key(|(i, _)| *i);
                entries
                    .into_iter()
                    .map(|(_, v)| item(v))
                    .collect::<Result<_, _>>()?
            }
            Some(v) => item(v)?.split(',').map(|s| s.trim().to_owned()).collect(),
        };
        Ok(items.into_iter().filter(|s| !s.is_empty()).collect())
    }
}

/// Options the plugin has that are not built in, with why; given a value
/// that turns them on, the middleware is refused rather than run weaker
/// than configured.
fn refuse_left_out(keys: &Keys, mode: &str) -> Result<(), MiddlewareError> {
    if mode == "appsec" || keys.flag("crowdsecAppsecEnabled", false)? {
        return Err(MiddlewareError::invalid(
            if mode == "appsec" {
                "crowdsecMode"
            } else {
                "crowdsecAppsecEnabled"
            },
            "AppSec forwarding is not built in; remove it to run the bouncer without it",
        ));
    }
    if mode == "alone" {
        return Err(MiddlewareError::invalid(
            "crowdsecMode",
            "`alone` (pulling from CrowdSec's central API) is not built in; run a LAPI and use `stream`",
        ));
    }
    Ok(())
}

/// Reads and checks the plugin's options, as the plugin's own validation
/// does (same limits, same required values).
pub fn parse(config: &Value) -> Result<Options, MiddlewareError> {
    let map = match config {
        Value::Null => Map::new(),
        Value::Object(o) => o
            .iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), v.clone()))
            .collect(),
        _ => return Err(MiddlewareError::invalid("plugin", "options must be a map")),
    };
    let keys = Keys(map);
    let mode_text = keys.text("crowdsecMode", "live")?;
    refuse_left_out(&keys, &mode_text)?;
    let mode = match mode_text.as_str() {
        "live" => Mode::Live,
        "none" => Mode::None,
        "stream" => Mode::Stream,
        other => {
            return Err(MiddlewareError::invalid(
                "crowdsecMode",
                format!("`{other}` must be one of none, live, stream, alone or appsec"),
            ));
        }
    };
    let https = match keys.text("crowdsecLapiScheme", "http")?.as_str() {
        "http" => false,
        "https" => true,
        other => {
            return Err(MiddlewareError::invalid(
                "crowdsecLapiScheme",
                format!("`{other}` must be http or https"),
            ));
        }
    };
    let host = keys.text("crowdsecLapiHost", "crowdsec:8080")?;
    if host.is_empty() {
        return Err(MiddlewareError::invalid(
            "crowdsecLapiHost",
            "cannot be empty",
        ));
    }
    let at_least = |key: &'static str, default: i64, min: i64| -> Result<u64, MiddlewareError> {
        let n = keys.number(key, default)?;
        u64::try_from(n)
            .ok()
            .filter(|_| n >= min)
            .ok_or_else(|| MiddlewareError::invalid(key, format!("cannot be less than {min}")))
    };
    let update_max_failure = keys.number("updateMaxFailure", 0)?;
    if update_max_failure < -1 {
        return Err(MiddlewareError::invalid(
            "updateMaxFailure",
            "cannot be less than -1",
        ));
    }
    let status = keys.number("remediationStatusCode", 403)?;
    let status = u16::try_from(status)
        .ok()
        .filter(|s| (100..600).contains(s))
        .ok_or_else(|| {
            MiddlewareError::invalid("remediationStatusCode", "must be between 100 and 599")
        })?;
    let key = keys.secret("crowdsecLapiKey", "crowdsecLapiKeyFile")?;
    let cert = keys.pem(
        "crowdsecLapiTlsCertificateBouncer",
        "crowdsecLapiTlsCertificateBouncerFile",
    )?;
    let cert_key = keys.pem(
        "crowdsecLapiTlsCertificateBouncerKey",
        "crowdsecLapiTlsCertificateBouncerKeyFile",
    )?;
    let tls_cert = cert.zip(cert_key);
    if key.is_none() && tls_cert.is_none() {
        return Err(MiddlewareError::invalid(
            "crowdsecLapiKey",
            "a bouncer key (crowdsecLapiKey or crowdsecLapiKeyFile) or a client certificate and key is required",
        ));
    }
    let key = key.unwrap_or_default();
    if let Some(bad) = key.chars().find(|c| !is_key_char(*c)) {
        return Err(MiddlewareError::invalid(
            "crowdsecLapiKey",
            format!("`{bad}` cannot be sent in a header"),
        ));
    }
    let ban_file = Some(keys.text("banFilePath", "")?)
        .filter(|f| !f.is_empty())
        .or_else(|| Some(keys.text("banHtmlFilePath", "").ok()?).filter(|f| !f.is_empty()));
    Ok(Options {
        enabled: keys.flag("enabled", false)?,
        mode,
        https,
        host,
        path: keys.text("crowdsecLapiPath", "/")?,
        key,
        tls_insecure: keys.flag("crowdsecLapiTlsInsecureVerify", false)?,
        tls_ca: keys.pem(
            "crowdsecLapiTlsCertificateAuthority",
            "crowdsecLapiTlsCertificateAuthorityFile",
        )?,
        tls_cert,
        update_interval: at_least("updateIntervalSeconds", 60, 1)?,
        update_max_failure,
        stream_startup_block: keys.flag("streamStartupBlock", true)?,
        default_decision: at_least("defaultDecisionSeconds", 60, 1)?,
        status,
        http_timeout: at_least("httpTimeoutSeconds", 10, 1)?,
        trace_header: keys.text("traceHeadersCustomName", "")?,
        remediation_header: keys.text("remediationHeadersCustomName", "")?,
        forwarded_header: keys.text("forwardedHeadersCustomName", "X-Forwarded-For")?,
        forwarded_trusted: keys.list("forwardedHeadersTrustedIps")?,
        client_trusted: keys.list("clientTrustedIps")?,
        ban_file,
    })
}

/// The characters the plugin lets through in a key: a header value's.
fn is_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || " !#$%&'*+-.^_`|~=/".contains(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
    fn keys_ignore_case_and_values_come_as_text() {
        let o = parse(&json!({
            "Enabled": "true",
            "crowdsecmode": "stream",
            "CrowdsecLapiKey": "abc",
            "updateIntervalSeconds": "5",
            "forwardedHeadersTrustedIPs": "10.0.0.0/8, 192.168.0.1",
            "clientTrustedIps": {"1": "10.0.0.2", "0": "10.0.0.1"},
        }))
        .unwrap();
        assert!(o.enabled);
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
                json!({"crowdsecLapiKey": "a", "crowdsecAppsecEnabled": "true"}),
                "crowdsecAppsecEnabled",
            ),
            (
                json!({"crowdsecLapiKey": "a", "updateIntervalSeconds": "0"}),
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
            match parse(&config) {
                Err(MiddlewareError::Invalid { option: got, .. }) => {
                    assert_eq!(got, option, "{config}")
                }
                other => panic!("{config}: {other:?}"),
            }
        }
    }
}
