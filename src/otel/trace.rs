//! Spans for requests, as Traefik makes them: `EntryPoint` (server),
//! `Router`, one per middleware (named by its type), `Service`, and
//! `ReverseProxy` (client) for the call to the server, each the child of
//! the one before, under the client's span when it sent its trace context
//! (W3C `traceparent` by default; B3 and Jaeger on request, see
//! [`super::propagate`]). The server gets the `ReverseProxy` span as its
//! parent.
//!
//! A request's trace rides in its extensions as a [`Traced`], which only
//! sampled requests carry: an unsampled or untraced request pays one
//! branch. Each span, when it ends, is handed whole to the exporter's task
//! through a bounded channel; when the channel is full the span is dropped
//! and counted, never waited for.

use super::export::Exporter;
use super::propagate::Propagation;
pub use super::propagate::{SpanId, TraceId, hex, hex_into};
use crate::config::static_config::Tracing;
use http::header::{HeaderMap, HeaderName, HeaderValue};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, ArrayValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1 as proto;
use std::borrow::Cow;
use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::sync::mpsc;

/// Spans waiting for the exporter at most; past it new spans are dropped.
const QUEUE: usize = 4096;

/// What a span is, in OTLP's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A step inside gangway.
    Internal,
    /// The request as gangway received it.
    Server,
    /// The request as gangway sent it on.
    Client,
}

/// A span attribute's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Text.
    Str(String),
    /// A whole number.
    Int(i64),
    /// Several texts (a header's values).
    Strs(Vec<String>),
}

/// A finished span, as the exporter gets it.
#[derive(Debug)]
pub struct SpanRecord {
    trace_id: TraceId,
    span_id: SpanId,
    parent: Option<SpanId>,
    trace_state: Option<HeaderValue>,
    name: Cow<'static, str>,
    kind: Kind,
    start: SystemTime,
    end: SystemTime,
    attributes: Vec<(Cow<'static, str>, Value)>,
    error: bool,
}

/// Records spans and hands them to the exporter; one per gangway.
pub struct Tracer {
    queue: mpsc::Sender<SpanRecord>,
    /// New traces whose id's low 63 bits fall under this are sampled
    /// (OpenTelemetry's `TraceIdRatioBased`).
    threshold: u64,
    request_headers: Box<[(HeaderName, String)]>,
    response_headers: Box<[(HeaderName, String)]>,
    safe_query: Box<[String]>,
    /// Requests to gangway's own routers are traced too.
    pub add_internals: bool,
    /// The header formats read and written (`OTEL_PROPAGATORS`).
    propagation: Propagation,
    dropped: AtomicU64,
}

/// A sampled request's trace, in its extensions: where the next span
/// hangs.
#[derive(Clone)]
pub struct Traced {
    tracer: Arc<Tracer>,
    trace_id: TraceId,
    parent: SpanId,
    trace_state: Option<HeaderValue>,
}

/// A span being recorded; sent when ended or dropped.
pub struct Span {
    record: Option<Box<SpanRecord>>,
    tracer: Arc<Tracer>,
}

impl Tracer {
    /// Starts tracing as `config` says: the tracer, and the task that
    /// exports its spans (told to finish at a graceful stop).
    pub fn spawn(config: &Tracing) -> Result<(Arc<Tracer>, super::Pusher), super::OtelError> {
        let exporter = Exporter::new(
            config.otlp.as_ref(),
            super::export::Signal::Traces,
            "tracing.otlp",
        )?;
        let (queue, rx) = mpsc::channel(QUEUE);
        let headers = |names: &[String], prefix: &str| -> Box<[(HeaderName, String)]> {
            names
                .iter()
                .filter_map(|n| {
                    let name = HeaderName::from_bytes(n.trim().as_bytes()).ok()?;
                    let key = format!("{prefix}{}", name.as_str());
                    Some((name, key))
                })
                .collect()
        };
        let tracer = Arc::new(Tracer {
            queue,
            threshold: threshold(config.sample_rate.0),
            request_headers: headers(&config.captured_request_headers, "http.request.header."),
            response_headers: headers(&config.captured_response_headers, "http.response.header."),
            safe_query: config.safe_query_params.clone().into_boxed_slice(),
            add_internals: config.add_internals,
            propagation: propagation_from_env(),
            dropped: AtomicU64::new(0),
        });
        let resource = super::resource(&config.service_name, &config.resource_attributes);
        let pusher = super::Pusher::spawn(|stop| export_spans(rx, exporter, resource, stop));
        Ok((tracer, pusher))
    }

    /// Spans dropped because the exporter fell behind.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Decides whether a request is traced: as the client's trace
    /// context says when it sent one (in a chosen format), else by the
    /// sample rate. A traced request gets its `EntryPoint` span, already
    /// under way.
    pub fn start(self: &Arc<Self>, headers: &HeaderMap) -> Option<(Span, Traced)> {
        let (trace_id, parent_span, trace_state) = match self.propagation.extract(headers) {
            Some(p) if !p.sampled => return None,
            Some(p) => (p.trace_id, Some(p.span_id), p.trace_state),
            None => {
                let trace_id = new_trace_id();
                if !self.samples(&trace_id) {
                    return None;
                }
                (trace_id, None, None)
            }
        };
        let traced = Traced {
            tracer: self.clone(),
            trace_id,
            parent: parent_span.unwrap_or([0; 8]),
            trace_state,
        };
        let span = traced.span_under(parent_span, "EntryPoint", Kind::Server);
        let traced = traced.under(&span);
        Some((span, traced))
    }

    fn samples(&self, trace_id: &TraceId) -> bool {
        let mut low = [0u8; 8];
        low.copy_from_slice(&trace_id[8..]);
        (u64::from_be_bytes(low) >> 1) < self.threshold
    }

    fn send(&self, record: SpanRecord) {
        if self.queue.try_send(record).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// `url.query` as spans show it: values of parameters not in
    /// `safeQueryParams` read `REDACTED`.
    fn redacted_query(&self, query: &str) -> String {
        let mut out = String::with_capacity(query.len());
        for (i, pair) in query.split('&').enumerate() {
            if i > 0 {
                out.push('&');
            }
            match pair.split_once('=') {
                Some((k, _)) if !self.safe_query.iter().any(|s| s == k) => {
                    out.push_str(k);
                    out.push_str("=REDACTED");
                }
                _ => out.push_str(pair),
            }
        }
        out
    }
}

/// The formats `OTEL_PROPAGATORS` chooses, as Traefik reads it; names
/// gangway cannot use are warned about once, here.
fn propagation_from_env() -> Propagation {
    let value = std::env::var_os(super::propagate::ENV).map(|v| v.to_string_lossy().into_owned());
    let (propagation, ignored) = Propagation::parse(value.as_deref());
    if !ignored.unknown.is_empty() {
        tracing::warn!(unknown = ?ignored.unknown, formats = ?propagation.formats(), "{}: unknown propagators ignored", super::propagate::ENV);
    }
    if !ignored.unsupported.is_empty() {
        tracing::warn!(unsupported = ?ignored.unsupported, formats = ?propagation.formats(), "{}: propagators gangway does not implement are ignored", super::propagate::ENV);
    }
    propagation
}

/// The threshold for a sampling ratio, on the 63 low bits of a trace id.
fn threshold(ratio: f64) -> u64 {
    if ratio >= 1.0 {
        return u64::MAX;
    }
    // In 0..1 (checked when read): the product fits in 63 bits.
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let t = (ratio * (1u64 << 63) as f64) as u64;
    t
}

impl Traced {
    /// A new span under this request's current one.
    pub fn span(&self, name: impl Into<Cow<'static, str>>, kind: Kind) -> Span {
        self.span_under(Some(self.parent), name, kind)
    }

    fn span_under(
        &self,
        parent: Option<SpanId>,
        name: impl Into<Cow<'static, str>>,
        kind: Kind,
    ) -> Span {
        Span {
            record: Some(Box::new(SpanRecord {
                trace_id: self.trace_id,
                span_id: new_span_id(),
                parent,
                trace_state: self.trace_state.clone(),
                name: name.into(),
                kind,
                start: SystemTime::now(),
                end: UNIX_EPOCH,
                attributes: Vec::new(),
                error: false,
            })),
            tracer: self.tracer.clone(),
        }
    }

    /// This trace, with `span` as the current one.
    pub fn under(&self, span: &Span) -> Traced {
        Traced {
            tracer: self.tracer.clone(),
            trace_id: self.trace_id,
            parent: span.span_id().unwrap_or(self.parent),
            trace_state: self.trace_state.clone(),
        }
    }

    /// The trace's id.
    pub fn trace_id(&self) -> TraceId {
        self.trace_id
    }

    /// The tracer.
    pub fn tracer(&self) -> &Tracer {
        &self.tracer
    }

    /// Writes the chosen trace context headers (`traceparent` and the
    /// client's `tracestate` by default) naming the current span, for the
    /// server's side of the trace.
    pub fn inject(&self, headers: &mut HeaderMap) {
        self.tracer.propagation.inject(
            &self.trace_id,
            &self.parent,
            self.trace_state.as_ref(),
            headers,
        );
    }
}

/// Opens a span named `name` under the current one of `req`'s trace and
/// makes it the current one; `None` when the request is not traced.
pub fn enter<B>(
    req: &mut http::Request<B>,
    name: impl Into<Cow<'static, str>>,
    kind: Kind,
) -> Option<Span> {
    let traced = req.extensions().get::<Traced>()?;
    let span = traced.span(name, kind);
    let next = traced.under(&span);
    req.extensions_mut().insert(next);
    Some(span)
}

impl Span {
    /// Sets an attribute.
    pub fn set(&mut self, key: impl Into<Cow<'static, str>>, value: Value) {
        if let Some(r) = &mut self.record {
            r.attributes.push((key.into(), value));
        }
    }

    /// Sets a text attribute.
    pub fn set_str(&mut self, key: &'static str, value: &str) {
        self.set(key, Value::Str(value.to_owned()));
    }

    /// The span's id.
    pub fn span_id(&self) -> Option<SpanId> {
        self.record.as_ref().map(|r| r.span_id)
    }

    /// The trace's id.
    pub fn trace_id(&self) -> Option<TraceId> {
        self.record.as_ref().map(|r| r.trace_id)
    }

    /// Records what a server span learns from the request: Traefik's
    /// semantic-convention attributes and the captured headers.
    pub fn server_request<B>(
        &mut self,
        req: &http::Request<B>,
        entry_point: &str,
        peer: std::net::SocketAddr,
        (tls, forwarded_trusted): (bool, bool),
    ) {
        let Some(r) = &mut self.record else { return };
        let tracer = self.tracer.clone();
        let attrs = &mut r.attributes;
        let mut put = |k: &'static str, v: Value| attrs.push((Cow::Borrowed(k), v));
        put("entry_point", Value::Str(entry_point.to_owned()));
        put(
            "http.request.method",
            Value::Str(req.method().as_str().to_owned()),
        );
        put(
            "network.protocol.version",
            Value::Str(protocol_version(req.version()).to_owned()),
        );
        put("url.path", Value::Str(req.uri().path().to_owned()));
        if let Some(q) = req.uri().query() {
            put("url.query", Value::Str(tracer.redacted_query(q)));
        }
        put(
            "url.scheme",
            Value::Str(if tls { "https" } else { "http" }.to_owned()),
        );
        // The Host as the client sent it, port included, as Traefik
        // records it.
        let host = req
            .uri()
            .authority()
            .map(|a| a.as_str().to_owned())
            .or_else(|| {
                req.headers()
                    .get(http::header::HOST)
                    .and_then(|h| h.to_str().ok())
                    .map(str::to_owned)
            });
        if let Some(host) = host {
            put("server.address", Value::Str(host));
        }
        if let Some(ua) = req
            .headers()
            .get(http::header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
        {
            put("user_agent.original", Value::Str(ua.to_owned()));
        }
        // The real client behind trusted proxies, as Traefik reads it: the
        // first `X-Forwarded-For` address, which only a trusted peer's
        // request still has here (`forwarded_trusted`).
        let forwarded = forwarded_trusted
            .then(|| req.headers().get(X_FORWARDED_FOR))
            .flatten()
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(',').next())
            .map(str::trim)
            .filter(|v| !v.is_empty());
        let peer_ip = peer.ip().to_string();
        put(
            "client.address",
            Value::Str(forwarded.map_or_else(|| peer_ip.clone(), str::to_owned)),
        );
        put("client.port", Value::Int(i64::from(peer.port())));
        put("network.peer.address", Value::Str(peer_ip));
        put("network.peer.port", Value::Int(i64::from(peer.port())));
        put(
            "http.request.body.size",
            Value::Int(body_size(req.headers())),
        );
        captured(&tracer.request_headers, req.headers(), attrs);
    }

    /// Records the request's `User-Agent`, as client spans show it.
    pub fn user_agent(&mut self, headers: &HeaderMap) {
        if let Some(ua) = headers
            .get(http::header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
        {
            self.set("user_agent.original", Value::Str(ua.to_owned()));
        }
    }

    /// Records what a client span learns from the request sent on: its
    /// method, version, and the server's URL with the request's target.
    pub fn client_target(
        &mut self,
        method: &http::Method,
        version: http::Version,
        server_url: &str,
        target: &str,
    ) {
        let Some(r) = &mut self.record else { return };
        let tracer = self.tracer.clone();
        let attrs = &mut r.attributes;
        let mut put = |k: &'static str, v: Value| attrs.push((Cow::Borrowed(k), v));
        put(
            "http.request.method",
            Value::Str(method.as_str().to_owned()),
        );
        put(
            "network.protocol.version",
            Value::Str(protocol_version(version).to_owned()),
        );
        let base = server_url.trim_end_matches('/');
        let full = match target.split_once('?') {
            Some((p, q)) => format!("{base}{p}?{}", tracer.redacted_query(q)),
            None => format!("{base}{target}"),
        };
        put("url.full", Value::Str(full));
        if let Ok(uri) = server_url.parse::<http::Uri>() {
            let scheme = uri.scheme_str().unwrap_or("http");
            put("url.scheme", Value::Str(scheme.to_owned()));
            // As Traefik: the server's host stands for the peer's address.
            if let Some(host) = uri.host() {
                let host = host.trim_matches(['[', ']']);
                put("network.peer.address", Value::Str(host.to_owned()));
                put("server.address", Value::Str(host.to_owned()));
            }
            let default_port = if scheme == "https" { 443 } else { 80 };
            let port = i64::from(uri.port_u16().unwrap_or(default_port));
            put("network.peer.port", Value::Int(port));
            put("server.port", Value::Int(port));
        }
    }

    /// Records the answer's status and captured headers. Server spans
    /// are errors from 500 on, client spans from 400, as the semantic
    /// conventions say.
    pub fn response(&mut self, status: u16, headers: &HeaderMap) {
        let Some(r) = &mut self.record else { return };
        r.attributes.push((
            Cow::Borrowed("http.response.status_code"),
            Value::Int(i64::from(status)),
        ));
        r.error = match r.kind {
            Kind::Client => status >= 400,
            Kind::Server => status >= 500,
            Kind::Internal => false,
        };
        captured(&self.tracer.response_headers, headers, &mut r.attributes);
    }

    /// Drops the span without sending it.
    pub fn discard(mut self) {
        self.record = None;
    }

    /// Ends the span and hands it to the exporter.
    pub fn end(self) {
        drop(self);
    }
}

impl Drop for Span {
    fn drop(&mut self) {
        if let Some(mut record) = self.record.take() {
            record.end = SystemTime::now();
            self.tracer.send(*record);
        }
    }
}

fn captured(
    wanted: &[(HeaderName, String)],
    headers: &HeaderMap,
    attrs: &mut Vec<(Cow<'static, str>, Value)>,
) {
    for (name, key) in wanted {
        let values: Vec<String> = headers
            .get_all(name)
            .iter()
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .collect();
        if !values.is_empty() {
            attrs.push((Cow::Owned(key.clone()), Value::Strs(values)));
        }
    }
}

const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");

/// `http.request.body.size` as Traefik reports it (Go's content length):
/// the declared length, 0 without a body, -1 when streamed without one.
fn body_size(headers: &HeaderMap) -> i64 {
    match headers.get(http::header::CONTENT_LENGTH) {
        Some(v) => v
            .to_str()
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(-1),
        None if headers.contains_key(http::header::TRANSFER_ENCODING) => -1,
        None => 0,
    }
}

fn protocol_version(v: http::Version) -> &'static str {
    match v {
        http::Version::HTTP_09 => "0.9",
        http::Version::HTTP_10 => "1.0",
        http::Version::HTTP_2 => "2",
        http::Version::HTTP_3 => "3",
        _ => "1.1",
    }
}

thread_local! {
    // Seeded once per thread from std's per-process random keys; ids need
    // to be unique, not secret.
    static RNG: Cell<u64> = Cell::new({
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64));
        h.finish() | 1
    });
}

/// splitmix64: a fast, well-spread sequence from the thread's seed.
fn next_u64() -> u64 {
    RNG.with(|state| {
        let s = state.get().wrapping_add(0x9E37_79B9_7F4A_7C15);
        state.set(s);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    })
}

fn new_span_id() -> SpanId {
    loop {
        let id = next_u64();
        if id != 0 {
            return id.to_be_bytes();
        }
    }
}

fn new_trace_id() -> TraceId {
    let mut id = [0u8; 16];
    id[..8].copy_from_slice(&next_u64().to_be_bytes());
    id[8..].copy_from_slice(&new_span_id());
    id
}

/// Batches spans and exports them until every tracer is gone, or until
/// `stop`: then what is queued goes in a last export.
async fn export_spans(
    rx: mpsc::Receiver<SpanRecord>,
    exporter: Exporter,
    resource: opentelemetry_proto::tonic::resource::v1::Resource,
    stop: Arc<tokio::sync::Notify>,
) {
    let mut failing = false;
    let mut batches = super::export::Batches::new(rx, stop);
    while let Some(batch) = batches.next().await {
        export_batch(&exporter, &resource, batch, &mut failing).await;
    }
}

async fn export_batch(
    exporter: &Exporter,
    resource: &opentelemetry_proto::tonic::resource::v1::Resource,
    batch: Vec<SpanRecord>,
    failing: &mut bool,
) {
    let message = encode(resource, batch);
    match exporter.send(message).await {
        Ok(()) => {
            if *failing {
                tracing::info!(collector = %exporter.uri(), "spans are exported again");
            }
            *failing = false;
        }
        Err(e) => {
            // Said once per outage, not once per batch.
            if *failing {
                tracing::debug!(collector = %exporter.uri(), error = %e, "spans not exported");
            } else {
                tracing::warn!(collector = %exporter.uri(), error = %e, "spans not exported; dropping them until the collector answers");
            }
            *failing = true;
        }
    }
}

fn encode(
    resource: &opentelemetry_proto::tonic::resource::v1::Resource,
    batch: Vec<SpanRecord>,
) -> Vec<u8> {
    use prost::Message;
    let spans = batch.into_iter().map(to_proto).collect();
    let request = ExportTraceServiceRequest {
        resource_spans: vec![proto::ResourceSpans {
            resource: Some(resource.clone()),
            scope_spans: vec![proto::ScopeSpans {
                scope: Some(super::scope()),
                spans,
                ..Default::default()
            }],
            ..Default::default()
        }],
    };
    request.encode_to_vec()
}

fn nanos(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

fn to_proto(r: SpanRecord) -> proto::Span {
    let kind = match r.kind {
        Kind::Internal => proto::span::SpanKind::Internal,
        Kind::Server => proto::span::SpanKind::Server,
        Kind::Client => proto::span::SpanKind::Client,
    };
    let attributes = r
        .attributes
        .into_iter()
        .map(|(k, v)| KeyValue {
            key: k.into_owned(),
            value: Some(AnyValue {
                value: Some(match v {
                    Value::Str(s) => any_value::Value::StringValue(s),
                    Value::Int(i) => any_value::Value::IntValue(i),
                    Value::Strs(list) => any_value::Value::ArrayValue(ArrayValue {
                        values: list
                            .into_iter()
                            .map(|s| AnyValue {
                                value: Some(any_value::Value::StringValue(s)),
                            })
                            .collect(),
                    }),
                }),
            }),
            ..Default::default()
        })
        .collect();
    proto::Span {
        trace_id: r.trace_id.to_vec(),
        span_id: r.span_id.to_vec(),
        trace_state: r
            .trace_state
            .and_then(|s| s.to_str().ok().map(str::to_owned))
            .unwrap_or_default(),
        parent_span_id: r.parent.map(|p| p.to_vec()).unwrap_or_default(),
        // Sampled: only sampled spans are recorded.
        flags: 1,
        name: r.name.into_owned(),
        kind: kind as i32,
        start_time_unix_nano: nanos(r.start),
        end_time_unix_nano: nanos(r.end),
        attributes,
        status: Some(proto::Status {
            code: if r.error {
                proto::status::StatusCode::Error as i32
            } else {
                proto::status::StatusCode::Unset as i32
            },
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_cover_the_ratio_of_ids() {
        assert_eq!(threshold(1.0), u64::MAX);
        assert_eq!(threshold(0.0), 0);
        assert_eq!(threshold(0.5), 1u64 << 62);
    }

    fn tracer(ratio: f64, safe: &[&str]) -> Tracer {
        let (queue, _rx) = mpsc::channel(1);
        Tracer {
            queue,
            threshold: threshold(ratio),
            request_headers: Box::new([]),
            response_headers: Box::new([]),
            safe_query: safe.iter().map(|s| (*s).to_owned()).collect(),
            add_internals: false,
            propagation: Propagation::default(),
            dropped: AtomicU64::new(0),
        }
    }

    #[test]
    fn query_values_are_redacted_unless_safe() {
        let t = tracer(1.0, &["page"]);
        assert_eq!(
            t.redacted_query("page=2&token=abc&flag"),
            "page=2&token=REDACTED&flag"
        );
        assert_eq!(t.redacted_query(""), "");
    }

    #[test]
    fn new_traces_are_sampled_at_the_ratio() {
        let t = tracer(0.25, &[]);
        let kept = (0..40_000).filter(|_| t.samples(&new_trace_id())).count();
        assert!((9_000..11_000).contains(&kept), "{kept}");
        assert!((0..1000).all(|_| tracer(1.0, &[]).samples(&new_trace_id())));
        assert!((0..1000).all(|_| !tracer(0.0, &[]).samples(&new_trace_id())));
    }

    #[test]
    fn span_ids_are_not_repeated() {
        let ids: std::collections::HashSet<SpanId> = (0..10_000).map(|_| new_span_id()).collect();
        assert_eq!(ids.len(), 10_000);
    }
}
