//! `github.com/XciD/traefik-plugin-rewrite-headers`: regex rewrites of
//! response headers. Each rule replaces, in every value of its header, every
//! match of `regex` by `replacement` (`$1`, `${name}` expand to groups), in
//! the order the rules are given.

use super::PluginEnv;
use crate::middleware::{Exchange, Middleware, MiddlewareError, Resp};
use http::{HeaderName, HeaderValue};
use regex::Regex;
use serde::Deserialize;

/// The plugin's settings, by its own names.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Settings {
    rewrites: Vec<Rule>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Rule {
    header: String,
    regex: String,
    replacement: String,
}

/// The compiled plugin.
pub struct RewriteHeaders {
    rules: Vec<(HeaderName, Regex, String)>,
}

/// Compiles the plugin from its settings.
pub fn compile(
    settings: &serde_json::Value,
    env: &PluginEnv<'_>,
) -> Result<RewriteHeaders, MiddlewareError> {
    let read: Settings = env.read(settings)?;
    let mut rules = Vec::with_capacity(read.rewrites.len());
    for (i, rule) in read.rewrites.into_iter().enumerate() {
        let name = HeaderName::try_from(rule.header.trim()).map_err(|_| {
            env.invalid(
                &format!("rewrites[{i}].header"),
                format!("`{}` is not a header name", rule.header),
            )
        })?;
        let regex = Regex::new(&rule.regex).map_err(|e| {
            env.invalid(
                &format!("rewrites[{i}].regex"),
                format!("invalid regex `{}`: {e}", rule.regex),
            )
        })?;
        rules.push((name, regex, rule.replacement));
    }
    Ok(RewriteHeaders { rules })
}

impl Middleware for RewriteHeaders {
    fn response(&self, resp: &mut Resp, _cx: &Exchange) {
        let headers = resp.headers_mut();
        for (name, regex, replacement) in &self.rules {
            if !headers.contains_key(name) {
                continue;
            }
            let values: Vec<HeaderValue> = headers.get_all(name).iter().cloned().collect();
            headers.remove(name);
            for value in values {
                // A value that is not text is kept as it was, as the regex
                // could not read it.
                let rewritten = value.to_str().ok().and_then(|text| {
                    HeaderValue::from_str(&regex.replace_all(text, replacement.as_str())).ok()
                });
                headers.append(name, rewritten.unwrap_or(value));
            }
        }
    }
}
