//! Active health checks: the compiled check of a load balancer, the UP/DOWN
//! state of its servers (read lock-free by the balancer, and by the API as a
//! serialisable report), and the task that probes the servers.
//!
//! Compile builds a [`CheckPlan`] and gets the shared [`ServiceHealth`] from
//! `Registries`; `Registries::sweep` starts one task per checked service
//! with [`spawn_checker`] and stops it when no runtime uses the state.

pub mod tcp;

use crate::body::RequestBody;
use crate::client::passive::describe;
use crate::client::{ClientError, ServerKind, UpstreamClient};
use crate::config::dynamic::HealthCheck;
use bytes::{Bytes, BytesMut};
use http::header::{CONTENT_TYPE, HOST, HeaderName, HeaderValue, LOCATION, TE};
use http::uri::{Authority, PathAndQuery};
use http::{HeaderMap, Method, Request, StatusCode, Uri, Version};
use http_body_util::BodyExt;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Traefik's defaults.
const DEFAULT_INTERVAL: Duration = Duration::from_secs(30);
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
/// Redirects followed before a check fails (Go's client stops at 10 too).
const MAX_REDIRECTS: usize = 10;
/// Bytes of a check response read to keep the connection reusable; the
/// rest is dropped with the connection.
const DRAIN_LIMIT: usize = 64 * 1024;

/// The health of one load balancer's servers, shared by every runtime that
/// uses the same service configuration.
pub struct ServiceHealth {
    service: String,
    servers: Box<[ServerHealth]>,
    /// Servers with a weight above zero that are up.
    eligible_up: AtomicUsize,
    /// The process-wide health epoch, bumped after every change of state.
    epoch: Arc<AtomicU64>,
}

struct ServerHealth {
    url: String,
    eligible: bool,
    up: AtomicBool,
    detail: Mutex<CheckDetail>,
}

#[derive(Clone, Default)]
struct CheckDetail {
    last_error: Option<String>,
    last_check: Option<SystemTime>,
}

impl ServiceHealth {
    /// State for `servers` (URL and whether its weight is above zero), all
    /// up until a check says otherwise, as in Traefik.
    pub fn new(service: &str, servers: &[(String, bool)], epoch: Arc<AtomicU64>) -> Self {
        let servers: Box<[ServerHealth]> = servers
            .iter()
            .map(|(url, eligible)| ServerHealth {
                url: url.clone(),
                eligible: *eligible,
                up: AtomicBool::new(true),
                detail: Mutex::new(CheckDetail::default()),
            })
            .collect();
        let eligible_up = servers.iter().filter(|s| s.eligible).count();
        Self {
            service: service.to_owned(),
            servers,
            eligible_up: AtomicUsize::new(eligible_up),
            epoch,
        }
    }

    /// Takes over the state of servers with the same URL from `previous`
    /// (the same service before a configuration change).
    pub fn inherit(&self, previous: &ServiceHealth) {
        for s in self.servers.iter().enumerate() {
            if let Some(old) = previous.servers.iter().find(|o| o.url == s.1.url) {
                let detail = old
                    .detail
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone();
                *s.1.detail.lock().unwrap_or_else(PoisonError::into_inner) = detail;
                self.set_up(s.0, old.up.load(Ordering::Acquire));
            }
        }
    }

    /// Whether server `i` may take traffic.
    pub fn is_up(&self, i: usize) -> bool {
        self.servers
            .get(i)
            .is_some_and(|s| s.up.load(Ordering::Acquire))
    }

    /// Whether any server with a weight above zero is up.
    pub fn any_up(&self) -> bool {
        self.eligible_up.load(Ordering::Acquire) > 0
    }

    /// Records the outcome of a check of server `i` (a [`CheckFailure`]
    /// when it failed).
    pub fn record(&self, i: usize, outcome: Result<(), impl std::fmt::Display>) {
        let Some(s) = self.servers.get(i) else {
            return;
        };
        let up = outcome.is_ok();
        {
            let mut d = s.detail.lock().unwrap_or_else(PoisonError::into_inner);
            d.last_check = Some(SystemTime::now());
            d.last_error = outcome.as_ref().err().map(ToString::to_string);
        }
        if self.set_up(i, up) {
            match outcome {
                Ok(()) => {
                    tracing::info!(service = %self.service, server = %s.url, "server is healthy again")
                }
                Err(e) => {
                    tracing::warn!(service = %self.service, server = %s.url, error = %e, "server is unhealthy; no traffic until it recovers")
                }
            }
        }
    }

    /// Sets server `i` up or down; true when that changed its state.
    fn set_up(&self, i: usize, up: bool) -> bool {
        let Some(s) = self.servers.get(i) else {
            return false;
        };
        if s.up.swap(up, Ordering::AcqRel) == up {
            return false;
        }
        if s.eligible {
            if up {
                self.eligible_up.fetch_add(1, Ordering::AcqRel);
            } else {
                self.eligible_up.fetch_sub(1, Ordering::AcqRel);
            }
        }
        // After the flag: a balancer that sees the new epoch sees the new state.
        self.epoch.fetch_add(1, Ordering::Release);
        true
    }

    /// The state of every server, for the API.
    pub fn report(&self) -> ServiceHealthReport {
        let servers = self
            .servers
            .iter()
            .map(|s| {
                let d = s
                    .detail
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone();
                let report = ServerHealthReport {
                    status: if s.up.load(Ordering::Acquire) {
                        ServerStatus::Up
                    } else {
                        ServerStatus::Down
                    },
                    last_error: d.last_error,
                    last_check: d
                        .last_check
                        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                        .map(|d| d.as_secs()),
                    failed_connections: None,
                };
                (s.url.clone(), report)
            })
            .collect();
        ServiceHealthReport { servers }
    }
}

/// A server's state as Traefik's API spells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ServerStatus {
    /// Takes traffic.
    #[serde(rename = "UP")]
    Up,
    /// Failed its last check; takes no traffic.
    #[serde(rename = "DOWN")]
    Down,
}

/// One server's health, for the API.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerHealthReport {
    /// UP or DOWN.
    pub status: ServerStatus,
    /// Why the last check failed, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Seconds since the Unix epoch of the last check, if one ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_check: Option<u64>,
    /// Connection attempts of the proxy's own requests that failed in a
    /// row since the last one that got through, when any did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed_connections: Option<u32>,
}

/// The health of one checked service, for the API.
#[derive(Clone, Debug, Serialize)]
pub struct ServiceHealthReport {
    /// Per server URL.
    pub servers: BTreeMap<String, ServerHealthReport>,
}

/// How a server is probed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// An HTTP request; healthy by status code.
    Http,
    /// The gRPC health-checking protocol (`grpc.health.v1.Health/Check`,
    /// empty service name); healthy when the answer is SERVING.
    Grpc,
}

/// The gRPC health method, as a request path.
const GRPC_CHECK_PATH: &str = "/grpc.health.v1.Health/Check";

/// What to probe, how often, and what counts as healthy.
pub struct CheckPlan {
    mode: Mode,
    targets: Vec<CheckTarget>,
    method: Method,
    headers: HeaderMap,
    status: Option<StatusCode>,
    interval: Duration,
    unhealthy_interval: Duration,
    timeout: Duration,
    follow_redirects: bool,
}

struct CheckTarget {
    /// Absolute; its authority is the Host the check presents.
    uri: Uri,
    kind: ServerKind,
    host: HeaderValue,
    /// Pinned to the address checked (the server's, or its host with `port`).
    client: Arc<UpstreamClient>,
}

/// A server as the check sees it: its parsed URL and how to talk to it.
pub struct CheckServer<'a> {
    /// The server's URL.
    pub uri: &'a Uri,
    /// Its protocol.
    pub kind: ServerKind,
    /// `host:port` the server is reached at.
    pub authority: &'a Authority,
}

/// Why a `healthCheck` section cannot be used; each variant names the
/// option to fix.
#[derive(Debug, thiserror::Error)]
pub enum HealthError {
    /// `mode` is neither `http` nor `grpc`.
    #[error("healthCheck mode `{0}` is not http or grpc")]
    Mode(String),
    /// `path` does not start with `/`.
    #[error("healthCheck path `{0}` must be a path starting with `/`")]
    RelativePath(String),
    /// `path` is not a valid path (alone, or after the server's own).
    #[error("healthCheck path `{0}` is not a valid path")]
    BadPath(String),
    /// `method` is not an HTTP method.
    #[error("healthCheck method `{0}` is not a valid method")]
    Method(String),
    /// `status` is not an HTTP status.
    #[error("healthCheck status `{0}` is not an HTTP status")]
    Status(u16),
    /// `interval`, `unhealthyInterval` or `timeout` is zero.
    #[error("healthCheck {0} must be more than 0s")]
    Zero(&'static str),
    /// A `headers` name that is not a header name.
    #[error("healthCheck header name `{0}` is not valid")]
    HeaderName(String),
    /// A `headers` value that is not a header value.
    #[error("healthCheck header `{0}` has an invalid value")]
    HeaderValue(String),
    /// `hostname` is not a host.
    #[error("healthCheck hostname `{0}` is not a valid host")]
    Hostname(String),
    /// `scheme` is none of `http`, `https`, `h2c`.
    #[error("healthCheck scheme `{0}` is not http, https or h2c")]
    Scheme(String),
    /// `port` makes no address with the server's host.
    #[error("healthCheck port {0} gives no valid address")]
    Port(u16),
    /// The server's address is not a Host header value.
    #[error("healthCheck: `{0}` is not a valid host")]
    Host(Authority),
    /// The check's URL does not build.
    #[error("healthCheck url for `{server}`: {source}")]
    Url {
        /// The server's URL.
        server: Uri,
        /// Why the check's URL does not build.
        source: http::Error,
    },
    /// No client can be made for a checked address.
    #[error(transparent)]
    Client(#[from] ClientError),
}

/// Compiles a `healthCheck` section for these servers; `client_for` gives
/// the client that connects to an address.
pub fn compile_plan(
    hc: &HealthCheck,
    servers: &[CheckServer<'_>],
    client_for: &mut dyn FnMut(&Authority) -> Result<Arc<UpstreamClient>, ClientError>,
) -> Result<CheckPlan, HealthError> {
    let HealthCheck {
        scheme,
        mode,
        path,
        method,
        status,
        port,
        interval,
        unhealthy_interval,
        timeout,
        hostname,
        follow_redirects,
        headers,
    } = hc;
    let mode = match mode.as_deref().map(str::to_ascii_lowercase).as_deref() {
        None | Some("") | Some("http") => Mode::Http,
        Some("grpc") => Mode::Grpc,
        Some(other) => return Err(HealthError::Mode(other.to_owned())),
    };
    let path = match (mode, path.as_deref()) {
        // gRPC has one health method; a path given for it is not used.
        (Mode::Grpc, _) => GRPC_CHECK_PATH,
        (Mode::Http, p) => p.unwrap_or_default(),
    };
    if !path.starts_with('/') {
        return Err(HealthError::RelativePath(path.to_owned()));
    }
    let bad_path = || HealthError::BadPath(path.to_owned());
    let check_pq: PathAndQuery = path.parse().map_err(|_| bad_path())?;
    let method = match method.as_deref() {
        None | Some("") => Method::GET,
        Some(m) => Method::from_bytes(m.to_ascii_uppercase().as_bytes())
            .map_err(|_| HealthError::Method(m.to_owned()))?,
    };
    let status = match status {
        None | Some(0) => None,
        Some(s) => Some(StatusCode::from_u16(*s).map_err(|_| HealthError::Status(*s))?),
    };
    let interval = match interval {
        None => DEFAULT_INTERVAL,
        Some(d) if d.0.is_zero() => {
            return Err(HealthError::Zero("interval"));
        }
        Some(d) => d.0,
    };
    let unhealthy_interval = match unhealthy_interval {
        None => interval,
        Some(d) if d.0.is_zero() => {
            return Err(HealthError::Zero("unhealthyInterval"));
        }
        Some(d) => d.0,
    };
    let timeout = match timeout {
        None => DEFAULT_TIMEOUT,
        Some(d) if d.0.is_zero() => {
            return Err(HealthError::Zero("timeout"));
        }
        Some(d) => d.0,
    };
    let mut header_map = HeaderMap::new();
    for (k, v) in headers {
        let name =
            HeaderName::from_bytes(k.as_bytes()).map_err(|_| HealthError::HeaderName(k.clone()))?;
        let value = HeaderValue::from_str(v).map_err(|_| HealthError::HeaderValue(k.clone()))?;
        header_map.append(name, value);
    }
    let host_override = match hostname.as_deref() {
        None | Some("") => None,
        Some(h) => {
            let bad = || HealthError::Hostname(h.to_owned());
            let value = HeaderValue::from_str(h).map_err(|_| bad())?;
            let authority: Authority = h.parse().map_err(|_| bad())?;
            Some((value, authority))
        }
    };
    let scheme_override = match scheme.as_deref().map(str::to_ascii_lowercase).as_deref() {
        None | Some("") => None,
        Some("http") => Some(ServerKind::Http),
        Some("https") => Some(ServerKind::Https),
        Some("h2c") => Some(ServerKind::H2c),
        Some(other) => {
            return Err(HealthError::Scheme(other.to_owned()));
        }
    };
    let mut targets = Vec::with_capacity(servers.len());
    for s in servers {
        let kind = match (mode, scheme_override.unwrap_or(s.kind)) {
            // gRPC needs HTTP/2: cleartext servers are probed with h2c.
            (Mode::Grpc, ServerKind::Http) => ServerKind::H2c,
            (_, kind) => kind,
        };
        let authority: Authority = match port {
            None | Some(0) => s.authority.clone(),
            Some(p) => format!("{}:{p}", s.authority.host())
                .parse()
                .map_err(|_| HealthError::Port(*p))?,
        };
        let base = match mode {
            Mode::Http => s.uri.path().trim_end_matches('/'),
            Mode::Grpc => "",
        };
        let pq = if base.is_empty() {
            check_pq.clone()
        } else {
            format!("{base}{}", check_pq.as_str())
                .parse()
                .map_err(|_| bad_path())?
        };
        let (host, presented) = match &host_override {
            Some((value, a)) => (value.clone(), a.clone()),
            None => (
                HeaderValue::from_str(s.authority.as_str())
                    .map_err(|_| HealthError::Host(s.authority.clone()))?,
                s.authority.clone(),
            ),
        };
        let uri = Uri::builder()
            .scheme(kind.scheme())
            .authority(presented)
            .path_and_query(pq)
            .build()
            .map_err(|source| HealthError::Url {
                server: s.uri.clone(),
                source,
            })?;
        let client = client_for(&authority)?;
        targets.push(CheckTarget {
            uri,
            kind,
            host,
            client,
        });
    }
    Ok(CheckPlan {
        mode,
        targets,
        method,
        headers: header_map,
        status,
        interval,
        unhealthy_interval,
        timeout,
        follow_redirects: follow_redirects.unwrap_or(true),
    })
}

/// Why a probe found a server unhealthy, as the API's `lastError` says it.
#[derive(Debug, thiserror::Error)]
pub enum CheckFailure {
    /// The request got no answer (refused, unreachable, broken).
    #[error("{}", describe(.0))]
    Unreachable(crate::client::SendError),
    /// No answer within the check's timeout.
    #[error("no answer within {}", crate::config::Duration(*.0))]
    Timeout(Duration),
    /// An answer with a status that does not count as healthy.
    #[error("status {} (expected {})", .status.as_u16(), expected_status(*.expected))]
    Status {
        /// The status answered.
        status: StatusCode,
        /// The status asked for; `None`: any 2xx or 3xx.
        expected: Option<StatusCode>,
    },
    /// Redirects that did not end.
    #[error("more than {MAX_REDIRECTS} redirects")]
    Redirects,
    /// The gRPC answer broke off.
    #[error("reading the answer: {0}")]
    Read(crate::body::BoxError),
    /// A gRPC answer larger than a health answer can be.
    #[error("health answer too large")]
    TooLarge,
    /// A gRPC call that failed.
    #[error("grpc-status {code}{}", .message.as_deref().map(|m| format!(": {m}")).unwrap_or_default())]
    GrpcStatus {
        /// `grpc-status`.
        code: String,
        /// `grpc-message`, if any.
        message: Option<String>,
    },
    /// A gRPC answer without `grpc-status`.
    #[error("no grpc-status in the answer")]
    NoGrpcStatus,
    /// A gRPC health status other than SERVING.
    #[error("gRPC health status {0} (expected 1, SERVING)")]
    NotServing(u64),
    /// A gRPC health answer that does not parse.
    #[error("malformed gRPC health answer")]
    Malformed,
}

/// The statuses a check expects, in words.
fn expected_status(expected: Option<StatusCode>) -> String {
    match expected {
        Some(want) => want.as_u16().to_string(),
        None => "2xx or 3xx".to_owned(),
    }
}

/// Starts the task that checks every server of `plan` on its own timer and
/// records the outcome in `health`. The task ends by itself once no runtime
/// holds `health` any more; `Registries` also aborts it then.
pub fn spawn_checker(
    plan: Arc<CheckPlan>,
    health: Weak<ServiceHealth>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let loops = (0..plan.targets.len()).map(|i| check_loop(&plan, &health, i));
        futures_util::future::join_all(loops).await;
    })
}

async fn check_loop(plan: &CheckPlan, health: &Weak<ServiceHealth>, i: usize) {
    let Some(target) = plan.targets.get(i) else {
        return;
    };
    loop {
        let probe = async {
            match plan.mode {
                Mode::Http => check(plan, target).await,
                Mode::Grpc => check_grpc(plan, target).await,
            }
        };
        let outcome = match tokio::time::timeout(plan.timeout, probe).await {
            Ok(r) => r,
            Err(_) => Err(CheckFailure::Timeout(plan.timeout)),
        };
        let up = outcome.is_ok();
        match health.upgrade() {
            Some(h) => h.record(i, outcome),
            None => return,
        }
        let wait = if up {
            plan.interval
        } else {
            plan.unhealthy_interval
        };
        tokio::time::sleep(wait).await;
    }
}

/// One probe of one server, following redirects when asked to.
async fn check(plan: &CheckPlan, target: &CheckTarget) -> Result<(), CheckFailure> {
    let mut uri = target.uri.clone();
    for _ in 0..=MAX_REDIRECTS {
        let mut req = Request::new(RequestBody::empty());
        *req.method_mut() = plan.method.clone();
        *req.uri_mut() = uri.clone();
        *req.version_mut() = if target.kind == ServerKind::H2c {
            Version::HTTP_2
        } else {
            Version::HTTP_11
        };
        *req.headers_mut() = plan.headers.clone();
        req.headers_mut().insert(HOST, target.host.clone());
        let resp = target
            .client
            .send(target.kind, false, Box::new(req))
            .await
            .map_err(CheckFailure::Unreachable)?;
        let status = resp.status();
        let location = resp.headers().get(LOCATION).cloned();
        drain(resp.into_body()).await;
        // Redirects are followed on the checked server only: one to another
        // origin ends the check with the redirect's own status.
        if plan.follow_redirects
            && status.is_redirection()
            && let Some(next) = location.and_then(|l| redirect_target(&uri, &l))
            && next.scheme() == uri.scheme()
            && next.authority() == uri.authority()
        {
            uri = next;
            continue;
        }
        let healthy = match plan.status {
            Some(want) => status == want,
            None => status.is_success() || status.is_redirection(),
        };
        return if healthy {
            Ok(())
        } else {
            Err(CheckFailure::Status {
                status,
                expected: plan.status,
            })
        };
    }
    Err(CheckFailure::Redirects)
}

/// One gRPC health probe: `Check` with an empty service name, healthy when
/// the call succeeds and answers SERVING.
async fn check_grpc(plan: &CheckPlan, target: &CheckTarget) -> Result<(), CheckFailure> {
    // A framed, empty HealthCheckRequest: no compression, length 0.
    const EMPTY_REQUEST: &[u8] = &[0, 0, 0, 0, 0];
    let mut req = Request::new(RequestBody::full(Bytes::from_static(EMPTY_REQUEST)));
    *req.method_mut() = Method::POST;
    *req.uri_mut() = target.uri.clone();
    *req.version_mut() = Version::HTTP_2;
    *req.headers_mut() = plan.headers.clone();
    let headers = req.headers_mut();
    headers.insert(HOST, target.host.clone());
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    headers.insert(TE, HeaderValue::from_static("trailers"));
    let resp = target
        .client
        .send(target.kind, false, Box::new(req))
        .await
        .map_err(CheckFailure::Unreachable)?;
    if resp.status() != StatusCode::OK {
        return Err(CheckFailure::Status {
            status: resp.status(),
            expected: Some(StatusCode::OK),
        });
    }
    // A trailers-only answer carries grpc-status in the headers.
    let mut grpc_status = grpc_field(resp.headers(), "grpc-status");
    let mut grpc_message = grpc_field(resp.headers(), "grpc-message");
    let mut body = resp.into_body();
    let mut data = BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(CheckFailure::Read)?;
        if let Some(d) = frame.data_ref() {
            if data.len() + d.len() > DRAIN_LIMIT {
                return Err(CheckFailure::TooLarge);
            }
            data.extend_from_slice(d);
        } else if let Some(t) = frame.trailers_ref() {
            grpc_status = grpc_field(t, "grpc-status").or(grpc_status);
            grpc_message = grpc_field(t, "grpc-message").or(grpc_message);
        }
    }
    match grpc_status.as_deref() {
        Some("0") => {}
        Some(code) => {
            return Err(CheckFailure::GrpcStatus {
                code: code.to_owned(),
                message: grpc_message,
            });
        }
        None => return Err(CheckFailure::NoGrpcStatus),
    }
    match serving_status(&data) {
        Some(1) => Ok(()),
        Some(n) => Err(CheckFailure::NotServing(n)),
        None => Err(CheckFailure::Malformed),
    }
}

fn grpc_field(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// The `status` field (number 1) of a framed HealthCheckResponse; 0
/// (UNKNOWN) when the field is absent, None when the bytes do not parse.
fn serving_status(framed: &[u8]) -> Option<u64> {
    let (&compressed, rest) = framed.split_first()?;
    if compressed != 0 || rest.len() < 4 {
        return None;
    }
    let (len, mut msg) = rest.split_at(4);
    let len = u32::from_be_bytes(len.try_into().ok()?) as usize;
    msg = msg.get(..len)?;
    let mut status = 0;
    while !msg.is_empty() {
        let key = varint(&mut msg)?;
        match (key >> 3, key & 7) {
            (1, 0) => status = varint(&mut msg)?,
            (_, 0) => {
                varint(&mut msg)?;
            }
            (_, 1) => msg = msg.get(8..)?,
            (_, 2) => {
                let n = usize::try_from(varint(&mut msg)?).ok()?;
                msg = msg.get(n..)?;
            }
            (_, 5) => msg = msg.get(4..)?,
            _ => return None,
        }
    }
    Some(status)
}

fn varint(bytes: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let (&b, rest) = bytes.split_first()?;
        *bytes = rest;
        value |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

/// The URL a `Location` header points to, relative to `base`.
fn redirect_target(base: &Uri, location: &HeaderValue) -> Option<Uri> {
    let text = location.to_str().ok()?;
    let uri: Uri = text.parse().ok()?;
    if uri.scheme().is_some() {
        return matches!(uri.scheme_str(), Some("http" | "https")).then_some(uri);
    }
    let pq: PathAndQuery = if text.starts_with('/') {
        text.parse().ok()?
    } else {
        // Relative to the current directory.
        let dir = base.path().rsplit_once('/').map_or("", |(d, _)| d);
        format!("{dir}/{text}").parse().ok()?
    };
    let mut parts = base.clone().into_parts();
    parts.path_and_query = Some(pq);
    Uri::from_parts(parts).ok()
}

async fn drain(mut body: crate::body::UpstreamBody) {
    let mut read = 0usize;
    while read < DRAIN_LIMIT {
        match body.frame().await {
            Some(Ok(f)) => read += f.data_ref().map_or(0, |d| d.len()),
            _ => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_moves_counts_and_epoch_once_per_change() {
        let epoch = Arc::new(AtomicU64::new(0));
        let h = ServiceHealth::new(
            "s",
            &[("http://a".into(), true), ("http://b".into(), false)],
            epoch.clone(),
        );
        assert!(h.any_up() && h.is_up(0) && h.is_up(1));
        h.record(0, Err("refused"));
        h.record(0, Err("refused"));
        assert_eq!(epoch.load(Ordering::Relaxed), 1);
        assert!(!h.is_up(0));
        // Only a zero-weight server is up: nothing can take new traffic.
        assert!(!h.any_up());
        let report = h.report();
        let a = &report.servers["http://a"];
        assert_eq!(a.status, ServerStatus::Down);
        assert_eq!(a.last_error.as_deref(), Some("refused"));
        assert!(a.last_check.is_some());
        h.record(0, Ok::<(), &str>(()));
        assert!(h.any_up());
        assert_eq!(epoch.load(Ordering::Relaxed), 2);
        let json = serde_json::to_value(h.report()).unwrap();
        assert_eq!(json["servers"]["http://a"]["status"], "UP");
        assert!(json["servers"]["http://a"].get("lastError").is_none());

        let next = ServiceHealth::new("s", &[("http://a".into(), true)], epoch);
        h.record(0, Err("down again"));
        next.inherit(&h);
        assert!(!next.is_up(0) && !next.any_up());
    }

    #[test]
    fn grpc_health_answers_parse() {
        // SERVING, NOT_SERVING, the field absent, other fields around it.
        assert_eq!(serving_status(&[0, 0, 0, 0, 2, 0x08, 1]), Some(1));
        assert_eq!(serving_status(&[0, 0, 0, 0, 2, 0x08, 2]), Some(2));
        assert_eq!(serving_status(&[0, 0, 0, 0, 0]), Some(0));
        assert_eq!(
            serving_status(&[0, 0, 0, 0, 7, 0x12, 2, b'h', b'i', 0x08, 1, 0x18]),
            None
        );
        assert_eq!(
            serving_status(&[0, 0, 0, 0, 6, 0x12, 2, b'h', b'i', 0x08, 1]),
            Some(1)
        );
        assert_eq!(serving_status(&[1, 0, 0, 0, 0]), None);
        assert_eq!(serving_status(&[0, 0, 0, 0, 9, 0x08]), None);
        assert_eq!(serving_status(&[]), None);
    }

    #[test]
    fn redirects_resolve_against_the_current_url() {
        let base: Uri = "http://127.0.0.1:80/a/b?x=1".parse().unwrap();
        let at = |l: &str| redirect_target(&base, &HeaderValue::from_str(l).unwrap());
        assert_eq!(at("/ok").unwrap().to_string(), "http://127.0.0.1:80/ok");
        assert_eq!(at("c").unwrap().to_string(), "http://127.0.0.1:80/a/c");
        assert_eq!(
            at("https://other:8443/h").unwrap().to_string(),
            "https://other:8443/h"
        );
        assert!(at("ftp://x/y").is_none());
    }
}
