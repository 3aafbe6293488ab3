//! `github.com/sablierapp/sablier-traefik-plugin` (and the older module
//! paths of the same plugin): containers started on demand and stopped
//! after a session without requests. Traefik's plugin asks a Sablier
//! server to do it; gangway does it itself with its sleeping services, so
//! the middleware lets requests through and its settings become the sleep
//! of the containers it names (see `crate::sleep::claim`), which compile
//! hands to the sleeper.

use super::{Named, PluginEnv};
use crate::config::Duration;
use crate::middleware::{Middleware, MiddlewareError};
use serde::Deserialize;

/// The module paths the plugin has been published under.
pub const MODULES: &[&str] = &[
    "github.com/sablierapp/sablier-traefik-plugin",
    "github.com/sablierapp/sablier",
    "github.com/acouvreur/sablier",
];

/// A Sablier server's session when the middleware gives none.
const DEFAULT_SESSION: std::time::Duration = std::time::Duration::from_secs(300);
/// A Sablier server's blocking timeout when the middleware gives none.
const DEFAULT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// The plugin's settings, by its own names. `sablierUrl` is read and not
/// used: no Sablier server is needed.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Settings {
    #[allow(
        dead_code,
        reason = "read so that it is known; gangway needs no server"
    )]
    sablier_url: Option<String>,
    names: String,
    group: String,
    session_duration: Option<Duration>,
    dynamic: Option<Dynamic>,
    blocking: Option<Blocking>,
    #[allow(dead_code, reason = "read so that it is known; see docs/traefik.md")]
    ignore_user_agent: Option<String>,
}

/// `dynamic`: the waiting page. Its looks are Sablier's themes; gangway
/// shows its own page, so these are read and not used.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
#[allow(
    dead_code,
    reason = "read so that they are known; gangway has one page"
)]
struct Dynamic {
    display_name: Option<String>,
    show_details: Option<bool>,
    theme: Option<String>,
    refresh_frequency: Option<Duration>,
}

/// `blocking`: the request waits for the containers.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Blocking {
    timeout: Option<Duration>,
}

/// What the plugin's settings ask for, as plain data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sessions {
    /// Containers named in `names`.
    pub names: Vec<String>,
    /// `group`, when no names are given.
    pub group: Option<String>,
    /// `sessionDuration`: stopped after this long without requests.
    pub session: std::time::Duration,
    /// `blocking.timeout` with the blocking strategy; None with the
    /// dynamic one (a browser gets the waiting page).
    pub blocking: Option<std::time::Duration>,
}

/// Reads the plugin's settings, with the checks the plugin makes.
pub fn read(settings: &serde_json::Value, env: &Named<'_>) -> Result<Sessions, MiddlewareError> {
    let read: Settings = env.read(settings)?;
    let names: Vec<String> = read
        .names
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
        .collect();
    let group = Some(read.group.trim().to_owned()).filter(|g| !g.is_empty());
    if names.is_empty() && group.is_none() {
        return Err(env.invalid("names", "give the containers' names or a group"));
    }
    let blocking = match (read.dynamic, read.blocking) {
        (Some(_), Some(_)) => {
            return Err(env.invalid("blocking", "give one strategy: dynamic or blocking"));
        }
        (None, None) => {
            return Err(env.invalid("dynamic", "give a strategy: dynamic or blocking"));
        }
        (Some(_), None) => None,
        (None, Some(b)) => Some(b.timeout.map_or(DEFAULT_TIMEOUT, |t| t.0)),
    };
    let session = read.session_duration.map_or(DEFAULT_SESSION, |d| d.0);
    if session.is_zero() {
        return Err(env.invalid("sessionDuration", "must be longer than 0s"));
    }
    Ok(Sessions {
        names,
        group,
        session,
        blocking,
    })
}

/// The middleware on the request's way: the sleeper wakes the containers
/// when a request reaches their service, so it only lets requests pass.
pub struct Sablier;

/// Compiles the plugin: its settings are checked here, and compile reads
/// them again for the sleeper.
pub fn compile(
    settings: &serde_json::Value,
    env: &PluginEnv<'_>,
) -> Result<Sablier, MiddlewareError> {
    read(settings, &env.named).map(|_| Sablier)
}

impl Middleware for Sablier {}
