//! `plugin`: Traefik plugins, run by gangway's own implementations.
//!
//! Traefik loads a plugin's Go code (through Yaegi or WebAssembly); gangway
//! loads no code. The static `experimental.plugins.<key>.moduleName` says
//! which plugin a middleware's `plugin.<key>` is, and [`compile`] picks the
//! native implementation of that module, which reads the plugin's own
//! settings with the plugin's own names and defaults ([`PluginEnv::read`]).
//! A module gangway has not built in keeps its routers disabled, with an
//! error naming it and what gangway has instead.

pub mod cloudflarewarp;
pub mod geoblock;
pub mod rewrite_body;
pub mod rewrite_headers;
pub mod sablier;
pub mod settings;

pub use settings::{Flag, Named};

use super::{Middleware, MiddlewareError};
use crate::client::{ClientError, ClientSettings, UpstreamClient};
use crate::config::dynamic::middleware::Plugin as Model;
use crate::config::problem::PluginProblem;
use http::uri::Authority;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::any::Any;
use std::collections::BTreeMap;
use std::sync::Arc;

/// State a plugin keeps across configuration swaps, type-erased.
pub type KeptState = Arc<dyn Any + Send + Sync>;

/// Gets (or, the first time, makes with the function given) the state
/// kept under a key for one middleware.
pub type KeepState<'a> = &'a dyn Fn(&str, &mut dyn FnMut() -> KeptState) -> KeptState;

/// Gives the pooled client for a server with these settings.
pub type ClientFor<'a> =
    &'a dyn Fn(&ClientSettings, &Authority) -> Result<Arc<UpstreamClient>, ClientError>;

/// What compile lends every plugin middleware.
pub struct PluginHost<'a> {
    /// The middleware's qualified name (`crowdsec@docker`).
    pub name: &'a str,
    /// The default servers transport's client settings, for plugins that
    /// call a server of their own.
    pub transport: &'a ClientSettings,
    /// The client pool.
    pub client: ClientFor<'a>,
    /// State kept across configuration swaps for this middleware.
    pub keep: KeepState<'a>,
}

/// What a plugin's native implementation may use besides its settings.
pub struct PluginEnv<'a> {
    /// Which plugin it is.
    pub named: Named<'a>,
    /// What compile lends.
    pub host: &'a PluginHost<'a>,
}

impl PluginEnv<'_> {
    /// Reads the plugin's settings (see [`Named::read`]).
    pub fn read<T: DeserializeOwned + Default>(
        &self,
        settings: &Value,
    ) -> Result<T, MiddlewareError> {
        self.named.read(settings)
    }

    /// The error for one of the plugin's settings.
    pub fn invalid(&self, setting: &str, reason: impl Into<String>) -> MiddlewareError {
        self.named.invalid(setting, reason)
    }

    /// The state kept under `part` for this middleware, made with `make`
    /// the first time (and again after a swap that no longer uses it).
    pub fn state<T: Any + Send + Sync>(&self, part: &str, make: impl FnOnce() -> T) -> Arc<T> {
        // The key names the type, so what is kept under it is always a `T`.
        let key = format!("{part} {}", std::any::type_name::<T>());
        let mut make = Some(make);
        let kept = (self.host.keep)(&key, &mut || -> KeptState {
            match make.take() {
                Some(make) => Arc::new(make()),
                None => Arc::new(()),
            }
        });
        kept.downcast::<T>()
            .expect("the state's key names its type, so it downcasts")
    }
}

/// A module path without its version (`@v1.2.3`, or a Go major-version
/// suffix `/v2`), lower-cased: Go module paths are matched here whatever
/// their case, as users write them in several.
pub fn module_path(module_name: &str) -> String {
    let path = module_name.trim();
    let path = path.split_once('@').map_or(path, |(p, _)| p);
    let path = path.trim_end_matches('/');
    let path = match path.rsplit_once('/') {
        Some((head, tail))
            if tail.len() > 1
                && tail.starts_with(['v', 'V'])
                && tail[1..].bytes().all(|b| b.is_ascii_digit()) =>
        {
            head
        }
        _ => path,
    };
    path.to_ascii_lowercase()
}

/// Compiles a `plugin` middleware: the plugin named by its one key, as
/// declared (`key → moduleName`) in the static configuration.
pub fn compile(
    model: &Model,
    declared: &BTreeMap<String, String>,
    host: &PluginHost<'_>,
) -> Result<Arc<dyn Middleware>, MiddlewareError> {
    let (named, settings) = resolve(model, declared)?;
    let env = PluginEnv { named, host };
    dispatch(&module_path(env.named.module), settings, &env)
}

/// What a Sablier plugin middleware asks for; None for another plugin or
/// settings that do not read (compiling the middleware reports those).
pub fn sablier_sessions(
    model: &Model,
    declared: &BTreeMap<String, String>,
) -> Option<sablier::Sessions> {
    let (named, settings) = resolve(model, declared).ok()?;
    if !sablier::MODULES.contains(&module_path(named.module).as_str()) {
        return None;
    }
    sablier::read(settings, &named).ok()
}

/// The plugin a middleware's one key names, as the static configuration
/// declares it, and its settings.
fn resolve<'a>(
    model: &'a Model,
    declared: &'a BTreeMap<String, String>,
) -> Result<(Named<'a>, &'a Value), MiddlewareError> {
    let mut keys = model.iter();
    let (Some((key, settings)), None) = (keys.next(), keys.next()) else {
        return Err(MiddlewareError::Plugin(PluginProblem::Keys {
            keys: model.keys().cloned().collect(),
        }));
    };
    // Docker label keys ignore case, so a key may arrive spelt otherwise
    // than the static configuration declares it.
    let module = declared
        .get(key)
        .or_else(|| {
            declared
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(key))
                .map(|(_, m)| m)
        })
        .ok_or_else(|| MiddlewareError::Plugin(PluginProblem::NotDeclared { key: key.clone() }))?;
    Ok((Named { key, module }, settings))
}

/// One arm per built-in plugin, by module path (see [`module_path`]).
fn dispatch(
    path: &str,
    settings: &Value,
    env: &PluginEnv<'_>,
) -> Result<Arc<dyn Middleware>, MiddlewareError> {
    match path {
        "github.com/xcid/traefik-plugin-rewrite-headers" => {
            ok(rewrite_headers::compile(settings, env))
        }
        "github.com/packruler/rewrite-body" | "github.com/traefik/plugin-rewritebody" => {
            ok(rewrite_body::compile(settings, env))
        }
        "github.com/packruler/traefik-themepark" => ok(rewrite_body::compile_theme(settings, env)),
        "github.com/bettercorp/cloudflarewarp" => ok(cloudflarewarp::compile(settings, env)),
        super::crowdsec::MODULE => crowdsec(settings, env),
        p if sablier::MODULES.contains(&p) => ok(sablier::compile(settings, env)),
        p if geoblock::MODULES.contains(&p) => ok(geoblock::compile(settings, env)),
        _ => Err(not_built_in(env)),
    }
}

/// The CrowdSec bouncer, its options' errors named as the plugin's settings.
fn crowdsec(settings: &Value, env: &PluginEnv<'_>) -> Result<Arc<dyn Middleware>, MiddlewareError> {
    let bouncer = super::crowdsec::compile(
        settings,
        &env.named,
        |s, server| (env.host.client)(s, server),
        |key, make| env.state(&key, make),
    )
    .map_err(|e| match e {
        MiddlewareError::Invalid { option, reason } => env.invalid(option, reason),
        other => other,
    })?;
    Ok(Arc::new(bouncer))
}

fn ok<T: Middleware>(
    built: Result<T, MiddlewareError>,
) -> Result<Arc<dyn Middleware>, MiddlewareError> {
    built.map(|m| Arc::new(m) as Arc<dyn Middleware>)
}

/// The error for a module gangway has not built in, with what it has
/// instead where that is known.
fn not_built_in(env: &PluginEnv<'_>) -> MiddlewareError {
    MiddlewareError::Plugin(PluginProblem::NotBuiltIn {
        key: env.named.key.to_owned(),
        module: env.named.module.to_owned(),
        instead: instead(&module_path(env.named.module)).map(str::to_owned),
    })
}

/// What gangway has that does what a plugin it has not built in does.
fn instead(path: &str) -> Option<&'static str> {
    const INSTEAD: &[(&str, &str)] = &[
        (
            "geoblock",
            "the GeoBlock plugin github.com/nscuro/traefik-plugin-geoblock, built in, with an IP2Location database file",
        ),
        ("redirect", "the redirectRegex or redirectScheme middleware"),
        ("real-ip", "the entry point's forwardedHeaders.trustedIPs"),
        ("realip", "the entry point's forwardedHeaders.trustedIPs"),
        ("ratelimit", "the rateLimit middleware"),
        ("rate-limit", "the rateLimit middleware"),
        (
            "jwt",
            "the forwardAuth middleware with a JWT-checking server",
        ),
        ("oauth", "the forwardAuth middleware with an OAuth proxy"),
        (
            "oidc",
            "the forwardAuth middleware with an OpenID Connect proxy",
        ),
        (
            "auth",
            "the basicAuth, digestAuth or forwardAuth middleware",
        ),
        ("header", "the headers middleware"),
        ("htransformation", "the headers middleware"),
        ("allow", "the ipAllowList middleware"),
        (
            "plugindemo",
            "the headers middleware (customRequestHeaders)",
        ),
    ];
    let name = path.rsplit('/').next().unwrap_or(path);
    INSTEAD
        .iter()
        .find(|(word, _)| name.contains(word))
        .map(|(_, instead)| *instead)
}

#[cfg(test)]
mod tests;
