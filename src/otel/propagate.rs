//! Trace context in request headers, in the formats OpenTelemetry SDKs
//! name in `OTEL_PROPAGATORS`: W3C trace context, B3 (one header or
//! several), Jaeger's `uber-trace-id`. Traefik reads that variable the
//! same way, with the same default (`tracecontext,baggage`).
//!
//! Reading (extraction) tries every chosen format in the order given and
//! keeps the last one that finds a valid context, as OpenTelemetry's
//! composite propagator does; writing (injection) writes every chosen
//! format. Only a traced request is read or written: with tracing off
//! nothing here runs.

use http::header::{HeaderMap, HeaderName, HeaderValue};

/// The environment variable that chooses the formats.
pub const ENV: &str = "OTEL_PROPAGATORS";

/// The W3C trace context header.
pub const TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");
/// The vendor part of W3C trace context.
pub const TRACESTATE: HeaderName = HeaderName::from_static("tracestate");
/// B3 in one header.
pub const B3: HeaderName = HeaderName::from_static("b3");
/// B3's trace id, in the several-header form.
pub const B3_TRACE_ID: HeaderName = HeaderName::from_static("x-b3-traceid");
/// B3's span id.
pub const B3_SPAN_ID: HeaderName = HeaderName::from_static("x-b3-spanid");
/// B3's parent span id (read to check it, never used).
pub const B3_PARENT_SPAN_ID: HeaderName = HeaderName::from_static("x-b3-parentspanid");
/// B3's sampling decision.
pub const B3_SAMPLED: HeaderName = HeaderName::from_static("x-b3-sampled");
/// B3's debug flag (`1`: sampled).
pub const B3_FLAGS: HeaderName = HeaderName::from_static("x-b3-flags");
/// Jaeger's header.
pub const UBER_TRACE_ID: HeaderName = HeaderName::from_static("uber-trace-id");

/// One header format of `OTEL_PROPAGATORS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `tracecontext`: `traceparent` and `tracestate`.
    TraceContext,
    /// `baggage`: W3C baggage. gangway forwards the client's `baggage`
    /// header unchanged, which is what re-writing it would send.
    Baggage,
    /// `b3`: read from either B3 form, written as the `b3` header.
    B3,
    /// `b3multi`: read from either B3 form, written as the `X-B3-*`
    /// headers.
    B3Multi,
    /// `jaeger`: `uber-trace-id`.
    Jaeger,
}

/// The formats a tracer reads and writes, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Propagation {
    formats: Vec<Format>,
}

/// What `OTEL_PROPAGATORS` held that gangway does not use, for a warning.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ignored {
    /// Names no OpenTelemetry SDK knows.
    pub unknown: Vec<String>,
    /// Names Traefik knows that gangway does not implement (`xray`,
    /// `ottrace`).
    pub unsupported: Vec<String>,
}

impl Ignored {
    /// Nothing was ignored.
    pub fn is_empty(&self) -> bool {
        self.unknown.is_empty() && self.unsupported.is_empty()
    }
}

/// A client's trace context, read from the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parent {
    /// The trace.
    pub trace_id: TraceId,
    /// The client's span.
    pub span_id: SpanId,
    /// The client recorded it.
    pub sampled: bool,
    /// The client's `tracestate` (W3C trace context only).
    pub trace_state: Option<HeaderValue>,
}

impl Default for Propagation {
    /// OpenTelemetry's default: W3C trace context and baggage.
    fn default() -> Self {
        Propagation {
            formats: vec![Format::TraceContext, Format::Baggage],
        }
    }
}

impl Propagation {
    /// The formats `value` (the variable's text, `None` when unset)
    /// names, as OpenTelemetry's Go SDK (and so Traefik) reads them:
    /// comma-separated names taken as written; `none` anywhere turns
    /// propagation off; names it does not know are ignored, and when none
    /// is left the default holds.
    pub fn parse(value: Option<&str>) -> (Propagation, Ignored) {
        let mut ignored = Ignored::default();
        let Some(value) = value else {
            return (Propagation::default(), ignored);
        };
        let mut formats = Vec::new();
        for name in value.split(',') {
            let format = match name {
                "none" => {
                    return (
                        Propagation {
                            formats: Vec::new(),
                        },
                        Ignored::default(),
                    );
                }
                "tracecontext" => Format::TraceContext,
                "baggage" => Format::Baggage,
                "b3" => Format::B3,
                "b3multi" => Format::B3Multi,
                "jaeger" => Format::Jaeger,
                "xray" | "ottrace" => {
                    ignored.unsupported.push(name.to_owned());
                    continue;
                }
                _ => {
                    ignored.unknown.push(name.to_owned());
                    continue;
                }
            };
            formats.push(format);
        }
        if formats.is_empty() {
            return (Propagation::default(), ignored);
        }
        (Propagation { formats }, ignored)
    }

    /// The formats, in order.
    pub fn formats(&self) -> &[Format] {
        &self.formats
    }

    /// The client's context: the last chosen format that finds a valid
    /// one wins.
    pub fn extract(&self, headers: &HeaderMap) -> Option<Parent> {
        let mut found = None;
        for format in &self.formats {
            let parent =
                match format {
                    Format::TraceContext => headers
                        .get(TRACEPARENT)
                        .and_then(parse_traceparent)
                        .map(|mut p| {
                            p.trace_state = headers.get(TRACESTATE).cloned();
                            p
                        }),
                    Format::Baggage => None,
                    Format::B3 | Format::B3Multi => extract_b3(headers),
                    Format::Jaeger => headers
                        .get(UBER_TRACE_ID)
                        .and_then(|v| v.to_str().ok())
                        .and_then(parse_uber_trace_id),
                };
            if parent.is_some() {
                found = parent;
            }
        }
        found
    }

    /// Writes every chosen format's headers naming `span` of `trace`
    /// (sampled), with the client's `tracestate` when there is one.
    pub fn inject(
        &self,
        trace: &TraceId,
        span: &SpanId,
        trace_state: Option<&HeaderValue>,
        headers: &mut HeaderMap,
    ) {
        for format in &self.formats {
            match format {
                Format::TraceContext => {
                    let mut text = String::with_capacity(55);
                    text.push_str("00-");
                    hex_into(trace, &mut text);
                    text.push('-');
                    hex_into(span, &mut text);
                    text.push_str("-01");
                    put(headers, TRACEPARENT, &text);
                    match trace_state {
                        Some(state) => {
                            headers.insert(TRACESTATE, state.clone());
                        }
                        None => {
                            headers.remove(TRACESTATE);
                        }
                    }
                }
                Format::Baggage => {}
                Format::B3 => {
                    let mut text = String::with_capacity(51);
                    hex_into(trace, &mut text);
                    text.push('-');
                    hex_into(span, &mut text);
                    text.push_str("-1");
                    put(headers, B3, &text);
                }
                Format::B3Multi => {
                    let mut text = String::with_capacity(32);
                    hex_into(trace, &mut text);
                    put(headers, B3_TRACE_ID, &text);
                    text.clear();
                    hex_into(span, &mut text);
                    put(headers, B3_SPAN_ID, &text);
                    headers.insert(B3_SAMPLED, HeaderValue::from_static("1"));
                }
                Format::Jaeger => {
                    // The parent field is deprecated; `0` is what SDKs write.
                    let mut text = String::with_capacity(53);
                    hex_into(trace, &mut text);
                    text.push(':');
                    hex_into(span, &mut text);
                    text.push_str(":0:1");
                    put(headers, UBER_TRACE_ID, &text);
                }
            }
        }
    }
}

fn put(headers: &mut HeaderMap, name: HeaderName, text: &str) {
    // Hex digits and separators only: always a valid value.
    if let Ok(v) = HeaderValue::from_str(text) {
        headers.insert(name, v);
    }
}

/// Reads a W3C `traceparent` (`00-<trace id>-<span id>-<flags>`); `None`
/// for anything malformed, all-zero ids or version `ff`, which then start
/// a new trace as the W3C recommendation says.
pub fn parse_traceparent(value: &HeaderValue) -> Option<Parent> {
    let text = value.to_str().ok()?.trim();
    let mut parts = text.split('-');
    let version = parts.next()?;
    let trace = parts.next()?;
    let span = parts.next()?;
    let flags = parts.next()?;
    if version.len() != 2 || version.eq_ignore_ascii_case("ff") || flags.len() != 2 {
        return None;
    }
    // Version 00 has exactly four fields; later versions may add some.
    if version == "00" && parts.next().is_some() {
        return None;
    }
    let mut flag = [0u8; 1];
    unhex(flags, &mut flag)?;
    ids(trace, span, flag[0] & 1 == 1)
}

/// A context from a trace id (32 lowercase hex digits) and a span id (16),
/// neither all zero.
fn ids(trace: &str, span: &str, sampled: bool) -> Option<Parent> {
    let mut trace_id = [0u8; 16];
    let mut span_id = [0u8; 8];
    unhex(trace, &mut trace_id)?;
    unhex(span, &mut span_id)?;
    if trace_id == [0; 16] || span_id == [0; 8] {
        return None;
    }
    Some(Parent {
        trace_id,
        span_id,
        sampled,
        trace_state: None,
    })
}

/// A 64-bit trace id (16 hex digits) is the low half of a 128-bit one.
fn widened(trace: &str) -> Option<String> {
    match trace.len() {
        16 => Some(format!("0000000000000000{trace}")),
        32 => Some(trace.to_owned()),
        _ => None,
    }
}

/// B3: the single `b3` header when it holds a valid context, else the
/// `X-B3-*` headers. A context without a sampling decision (deferred) is
/// not sampled, as OpenTelemetry's parent-based sampler reads it.
fn extract_b3(headers: &HeaderMap) -> Option<Parent> {
    if let Some(single) = headers.get(B3).and_then(|v| v.to_str().ok())
        && let Some(parent) = parse_b3_single(single)
    {
        return Some(parent);
    }
    let get = |name: &HeaderName| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    };
    parse_b3_multi(
        get(&B3_TRACE_ID),
        get(&B3_SPAN_ID),
        get(&B3_PARENT_SPAN_ID),
        get(&B3_SAMPLED),
        get(&B3_FLAGS),
    )
}

/// `{trace id}-{span id}[-{sampling}[-{parent span id}]]`, the trace id
/// of 16 or 32 hex digits; sampling `1`, `0` or `d` (debug: sampled). A
/// sampling decision alone carries no context.
pub fn parse_b3_single(text: &str) -> Option<Parent> {
    let mut parts = text.split('-');
    let trace = widened(parts.next()?)?;
    let span = parts.next()?;
    let sampled = match parts.next() {
        None => false,
        Some("1" | "d") => true,
        Some("0") => false,
        Some(_) => return None,
    };
    if let Some(parent) = parts.next() {
        let mut id = [0u8; 8];
        unhex(parent, &mut id)?;
    }
    if parts.next().is_some() {
        return None;
    }
    ids(&trace, span, sampled)
}

/// The `X-B3-*` headers (empty when absent): trace and span ids both or
/// neither; `X-B3-Sampled` `1`/`true` or `0`/`false`; `X-B3-Flags: 1`
/// (debug) means sampled.
pub fn parse_b3_multi(
    trace: &str,
    span: &str,
    parent: &str,
    sampled: &str,
    flags: &str,
) -> Option<Parent> {
    let mut sampled = match sampled.to_ascii_lowercase().as_str() {
        "1" | "true" => true,
        "0" | "false" | "" => false,
        _ => return None,
    };
    if flags == "1" {
        sampled = true;
    }
    if trace.is_empty() || span.is_empty() {
        return None;
    }
    if !parent.is_empty() {
        let mut id = [0u8; 8];
        unhex(parent, &mut id)?;
    }
    ids(&widened(trace)?, span, sampled)
}

/// Jaeger's `{trace id}:{span id}:{parent span id}:{flags}`: the trace id
/// of 16 or 32 hex digits, the parent ignored, flags in hex (bit 0:
/// sampled).
pub fn parse_uber_trace_id(text: &str) -> Option<Parent> {
    let mut parts = text.split(':');
    let (trace, span, _parent, flags) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let sampled = if flags.is_empty() {
        false
    } else {
        u64::from_str_radix(flags, 16).ok()? & 1 == 1
    };
    ids(&widened(trace)?, span, sampled)
}

/// Lowercase hex into `out`, which it must fill exactly.
fn unhex(text: &str, out: &mut [u8]) -> Option<()> {
    let bytes = text.as_bytes();
    if bytes.len() != out.len() * 2 {
        return None;
    }
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    for (i, pair) in bytes.chunks_exact(2).enumerate() {
        out[i] = (digit(pair[0])? << 4) | digit(pair[1])?;
    }
    Some(())
}

/// A trace's id: 16 bytes, never all zero.
pub type TraceId = [u8; 16];
/// A span's id: 8 bytes, never all zero.
pub type SpanId = [u8; 8];

/// Lowercase hex of `bytes`, appended to `out`.
pub fn hex_into(bytes: &[u8], out: &mut String) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 15)] as char);
    }
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    hex_into(bytes, &mut s);
    s
}

#[cfg(test)]
mod tests;
