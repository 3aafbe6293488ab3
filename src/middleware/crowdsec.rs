//! The CrowdSec bouncer plugin
//! (`github.com/maxlerebourg/crowdsec-bouncer-traefik-plugin`) built in:
//! it reads the plugin's own options and asks CrowdSec's Local API (LAPI)
//! whether the client's address is banned.
//!
//! - `live` (the default) asks the LAPI about each address it has not seen
//!   within `defaultDecisionSeconds`, and keeps the answer that long;
//!   `none` asks about every request.
//! - `stream` pulls `/v1/decisions/stream` every `updateIntervalSeconds`
//!   (everything at first, then what changed) in a task of its own; a
//!   request is then answered from memory and never waits on the LAPI.
//! - `appsec` never asks the LAPI.
//!
//! With `crowdsecAppsecEnabled`, a request the decisions let through (in
//! any mode; trusted clients excepted) is then forwarded to CrowdSec's
//! AppSec component, which may still refuse it.
//!
//! Routers whose bouncers have the same LAPI settings share one cache and
//! one stream task, kept in the registries across configuration swaps.

mod appsec;
mod ban;
mod decisions;
mod lapi;
mod options;

pub use appsec::AppsecError;
pub use decisions::Shared;
pub use lapi::LapiError;
pub use options::Mode;

use super::ip::AddressList;
use super::{Exchange, Flow, Middleware, MiddlewareError, Next, Req, Resp, status_response};
use crate::client::{ClientError, ClientSettings, TlsSettings, UpstreamClient};
use appsec::Appsec;
use ban::{Ban, Reason};
use decisions::Remedy;
use futures_util::future::BoxFuture;
use http::HeaderMap;
use http::header::HeaderName;
use http::uri::Authority;
use lapi::Lapi;
use options::{Options, Tls};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The plugin's `moduleName`.
pub const MODULE: &str = "github.com/maxlerebourg/crowdsec-bouncer-traefik-plugin";

/// A compiled bouncer.
pub struct CrowdSec {
    enabled: bool,
    mode: Mode,
    lapi: Arc<Lapi>,
    shared: Arc<Shared>,
    /// `crowdsecAppsecEnabled`: where passing requests are checked next.
    appsec: Option<Appsec>,
    ban: Ban,
    forwarded_header: HeaderName,
    forwarded_trusted: AddressList,
    client_trusted: AddressList,
    default_decision: Duration,
    startup_block: bool,
}

/// What a request's address alone decides.
enum Verdict {
    /// In `clientTrustedIps`: nothing is checked, AppSec included.
    Trusted,
    /// No decision against the address: AppSec (if on) is asked next.
    Pass(IpAddr),
    Refuse(Option<IpAddr>, Reason),
    /// Live and none modes: the LAPI must be asked about this address.
    Ask(IpAddr),
}

/// Compiles the bouncer from the plugin's options. `client_for` gives the
/// client towards a CrowdSec component (`host:port`: the LAPI, and the
/// AppSec component when on) with these settings; `keep` gives the state
/// kept for a settings key, made with the function it is handed the first
/// time.
pub fn compile(
    config: &serde_json::Value,
    named: &super::plugin::settings::Named<'_>,
    client_for: impl Fn(&ClientSettings, &Authority) -> Result<Arc<UpstreamClient>, ClientError>,
    keep: impl FnOnce(String, Box<dyn FnOnce() -> Shared + '_>) -> Arc<Shared>,
) -> Result<CrowdSec, MiddlewareError> {
    let o = options::parse(config, named)?;
    let timeout = Duration::from_secs(o.http_timeout);
    let settings = client_settings(timeout, &o.tls);
    let bad_host =
        || MiddlewareError::invalid("crowdsecLapiHost", format!("`{}` is not host:port", o.host));
    let server = authority(&o.host, o.https).ok_or_else(bad_host)?;
    let option = if o.https {
        "crowdsecLapiTlsCertificateAuthority"
    } else {
        "crowdsecLapiHost"
    };
    let client = client_for(&settings, &server)
        .map_err(|e| MiddlewareError::invalid(option, e.to_string()))?;
    let lapi = Lapi::new(client, o.https, &o.host, &o.path, &o.key, timeout)
        .map(Arc::new)
        .ok_or_else(bad_host)?;
    let appsec = o
        .appsec
        .as_ref()
        .map(|a| compile_appsec(a, timeout, &client_for))
        .transpose()?;
    let key = format!(
        "{:?} {} {} {} {} {:?} {} {} {}",
        o.mode,
        o.https,
        o.host,
        o.path,
        o.key,
        settings.tls,
        o.update_interval,
        o.update_max_failure,
        o.http_timeout,
    );
    let (mode, every, max_failure) = (
        o.mode,
        Duration::from_secs(o.update_interval),
        o.update_max_failure,
    );
    let stream_lapi = lapi.clone();
    let shared = keep(
        key,
        Box::new(move || match mode {
            Mode::Stream => Shared::stream(stream_lapi, every, max_failure),
            Mode::Live | Mode::None | Mode::Appsec => Shared::live(),
        }),
    );
    shared.start();
    finish(&o, lapi, shared, appsec)
}

/// The client settings towards a CrowdSec component: the plugin's
/// transport (10 idle connections kept 30 s) bounded by
/// `httpTimeoutSeconds`.
fn client_settings(timeout: Duration, tls: &Tls) -> ClientSettings {
    ClientSettings {
        dial_timeout: Some(timeout),
        response_header_timeout: Some(timeout),
        idle_conn_timeout: Some(Duration::from_secs(30)),
        max_idle_per_host: 10,
        tls: TlsSettings {
            insecure_skip_verify: tls.insecure,
            root_cas: tls.ca.iter().cloned().collect(),
            certificates: tls.cert.iter().cloned().collect(),
            ..TlsSettings::default()
        },
        ..ClientSettings::default()
    }
}

/// `host[:port]` as an authority with its port, the scheme's by default.
fn authority(host: &str, https: bool) -> Option<Authority> {
    let server: Authority = host.parse().ok()?;
    if server.port().is_some() {
        return Some(server);
    }
    let port = if https { 443 } else { 80 };
    format!("{}:{port}", server.host()).parse().ok()
}

fn compile_appsec(
    a: &options::Appsec,
    timeout: Duration,
    client_for: &impl Fn(&ClientSettings, &Authority) -> Result<Arc<UpstreamClient>, ClientError>,
) -> Result<Appsec, MiddlewareError> {
    let bad_host = || {
        MiddlewareError::invalid(
            "crowdsecAppsecHost",
            format!("`{}` is not host:port", a.host),
        )
    };
    let server = authority(&a.host, a.https).ok_or_else(bad_host)?;
    let client = client_for(&client_settings(timeout, &a.tls), &server).map_err(|e| {
        let option = if a.https {
            "crowdsecAppsecTlsCertificateAuthority"
        } else {
            "crowdsecAppsecHost"
        };
        MiddlewareError::invalid(option, e.to_string())
    })?;
    let settings = appsec::Settings {
        https: a.https,
        host: &a.host,
        path: &a.path,
        key: &a.key,
        timeout,
        body_limit: a.body_limit,
        failure_block: a.failure_block,
        unreachable_block: a.unreachable_block,
        unreadable_body_block: a.unreadable_body_block,
    };
    Appsec::new(client, &settings).ok_or_else(|| {
        MiddlewareError::invalid(
            "crowdsecAppsecPath",
            format!("`{}{}` is not a URL's host and path", a.host, a.path),
        )
    })
}

/// The compiled bouncer from its checked options and its parts.
fn finish(
    o: &Options,
    lapi: Arc<Lapi>,
    shared: Arc<Shared>,
    appsec: Option<Appsec>,
) -> Result<CrowdSec, MiddlewareError> {
    let forwarded_header = HeaderName::from_bytes(o.forwarded_header.as_bytes()).map_err(|_| {
        MiddlewareError::invalid(
            "forwardedHeadersCustomName",
            format!("`{}` is not a header name", o.forwarded_header),
        )
    })?;
    Ok(CrowdSec {
        enabled: o.enabled,
        mode: o.mode,
        lapi,
        shared,
        appsec,
        ban: Ban::compile(
            o.status,
            &o.remediation_header,
            &o.trace_header,
            o.ban_file.as_deref(),
        )?,
        forwarded_header,
        forwarded_trusted: AddressList::parse(&o.forwarded_trusted, "forwardedHeadersTrustedIps")?,
        client_trusted: AddressList::parse(&o.client_trusted, "clientTrustedIps")?,
        default_decision: Duration::from_secs(o.default_decision),
        startup_block: o.stream_startup_block,
    })
}

impl CrowdSec {
    /// The client's address as the plugin reads it: the rightmost entry of
    /// the forwarded header that is not a trusted proxy, else the peer.
    /// Err when that entry is not an address (the plugin then refuses).
    fn client_ip(&self, headers: &HeaderMap, peer: IpAddr) -> Result<IpAddr, ()> {
        let Some(value) = headers.get(&self.forwarded_header) else {
            return Ok(peer);
        };
        let text = value.to_str().map_err(|_| ())?;
        for entry in text.rsplit(',').map(str::trim).filter(|e| !e.is_empty()) {
            let ip: IpAddr = entry.parse().map_err(|_| ())?;
            if !self.forwarded_trusted.contains(ip) {
                return Ok(ip);
            }
        }
        Ok(peer)
    }

    fn screen(&self, req: &Req, cx: &Exchange) -> Verdict {
        let Ok(ip) = self.client_ip(req.headers(), cx.peer) else {
            return Verdict::Refuse(None, Reason::Technical);
        };
        if self.client_trusted.contains(ip) {
            return Verdict::Trusted;
        }
        let known = match self.mode {
            Mode::None | Mode::Appsec => None,
            Mode::Live | Mode::Stream => self.shared.decisions.lookup(ip, Instant::now()),
        };
        match (known, self.mode) {
            (Some(Remedy::Pass), _) | (None, Mode::Appsec) => Verdict::Pass(ip),
            (Some(Remedy::Ban | Remedy::Captcha), _) => Verdict::Refuse(Some(ip), Reason::Lapi),
            (None, Mode::Stream) if self.shared.health.passes(self.startup_block) => {
                Verdict::Pass(ip)
            }
            (None, Mode::Stream) => Verdict::Refuse(Some(ip), Reason::Technical),
            (None, Mode::Live | Mode::None) => Verdict::Ask(ip),
        }
    }

    /// Live and none modes: asks the LAPI about `ip`. An unreachable LAPI,
    /// or an answer that cannot be read, refuses the request, as the
    /// plugin does, and is not cached.
    async fn ask(&self, ip: IpAddr) -> Remedy {
        let found = match self.lapi.decisions(ip).await {
            Ok(found) => found,
            Err(e) => {
                tracing::debug!(error = %e, %ip, "crowdsec: asking the LAPI failed");
                return Remedy::Ban;
            }
        };
        let (remedy, ttl) = match found.iter().find(|d| d.kind == "ban").or(found.last()) {
            None => (Remedy::Pass, self.default_decision),
            Some(d) => match lapi::parse_go_duration(&d.duration) {
                Some(left) => (
                    decisions::Remedy::of(&d.kind),
                    left.min(self.default_decision),
                ),
                None => return Remedy::Ban,
            },
        };
        if self.mode == Mode::Live {
            self.shared
                .decisions
                .insert(ip, remedy, ttl, Instant::now());
        }
        remedy
    }

    fn refuse(&self, req: &Req, ip: Option<IpAddr>, reason: Reason) -> Resp {
        self.ban.respond(req.method(), req.headers(), ip, reason)
    }

    /// A request the decisions let through: AppSec, when on, is asked
    /// before the rest of the chain runs (the plugin's order).
    async fn inspect_then_run(&self, mut req: Req, ip: IpAddr, next: Next<'_>) -> Resp {
        if let Some(appsec) = &self.appsec
            && let Err(e) = appsec.check(&mut req, ip).await
        {
            tracing::debug!(error = %e, %ip, "crowdsec: AppSec refused the request");
            return match e.client_status() {
                Some(status) => status_response(status),
                None => self.refuse(&req, Some(ip), Reason::Appsec),
            };
        }
        next.run(req).await
    }
}

impl Middleware for CrowdSec {
    /// Stream and appsec modes without AppSec (and a disabled bouncer):
    /// decided from memory.
    fn request(&self, req: &mut Req, cx: &Exchange) -> Flow {
        if !self.enabled {
            return Flow::Continue;
        }
        match self.screen(req, cx) {
            Verdict::Refuse(ip, reason) => Flow::Respond(self.refuse(req, ip, reason)),
            Verdict::Trusted | Verdict::Pass(_) | Verdict::Ask(_) => Flow::Continue,
        }
    }

    fn wraps(&self) -> bool {
        self.enabled && (self.appsec.is_some() || matches!(self.mode, Mode::Live | Mode::None))
    }

    /// Live and none modes, and AppSec: may wait for the LAPI's answer,
    /// then for the AppSec component's.
    fn call<'a>(&'a self, req: Req, cx: &'a Exchange, next: Next<'a>) -> BoxFuture<'a, Resp> {
        Box::pin(async move {
            let ip = match self.screen(&req, cx) {
                Verdict::Trusted => return next.run(req).await,
                Verdict::Pass(ip) => ip,
                Verdict::Refuse(ip, reason) => return self.refuse(&req, ip, reason),
                Verdict::Ask(ip) => match self.ask(ip).await {
                    Remedy::Pass => ip,
                    Remedy::Ban | Remedy::Captcha => {
                        return self.refuse(&req, Some(ip), Reason::Lapi);
                    }
                },
            };
            self.inspect_then_run(req, ip, next).await
        })
    }
}
