use super::*;
use crate::otel::trace::hex;

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const SPAN: &str = "00f067aa0ba902b7";

fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (k, v) in pairs {
        map.append(*k, HeaderValue::from_static(v));
    }
    map
}

fn chosen(value: &str) -> Propagation {
    let (p, ignored) = Propagation::parse(Some(value));
    assert!(ignored.is_empty(), "{value}: {ignored:?}");
    p
}

#[test]
fn the_variable_is_read_as_opentelemetry_reads_it() {
    use Format::*;
    assert_eq!(
        Propagation::parse(None).0.formats(),
        [TraceContext, Baggage]
    );
    assert_eq!(chosen("b3").formats(), [B3]);
    assert_eq!(
        chosen("tracecontext,b3multi,jaeger").formats(),
        [TraceContext, B3Multi, Jaeger]
    );
    assert!(chosen("b3,none").formats().is_empty());
    // Unknown names are ignored; with nothing left, the default holds.
    let (p, ignored) = Propagation::parse(Some("b3, jaeger,xray,zipkin"));
    assert_eq!(p.formats(), [B3]);
    assert_eq!(ignored.unknown, [" jaeger", "zipkin"]);
    assert_eq!(ignored.unsupported, ["xray"]);
    let (p, ignored) = Propagation::parse(Some(""));
    assert_eq!(p, Propagation::default());
    assert_eq!(ignored.unknown, [""]);
}

#[test]
fn traceparent_is_read_as_the_w3c_format_says() {
    let v = HeaderValue::from_static("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    let p = parse_traceparent(&v).expect("valid");
    assert_eq!(hex(&p.trace_id), TRACE);
    assert_eq!(hex(&p.span_id), SPAN);
    assert!(p.sampled);
    let unsampled =
        HeaderValue::from_static("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
    assert!(!parse_traceparent(&unsampled).expect("valid").sampled);
    for bad in [
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        "garbage",
    ] {
        assert_eq!(
            parse_traceparent(&HeaderValue::from_static(bad)),
            None,
            "{bad}"
        );
    }
}

#[test]
fn b3_single_header_is_read_with_its_sampling_state() {
    let p = parse_b3_single(&format!("{TRACE}-{SPAN}-1")).expect("valid");
    assert_eq!(
        (hex(&p.trace_id).as_str(), hex(&p.span_id).as_str()),
        (TRACE, SPAN)
    );
    assert!(p.sampled);
    assert!(
        parse_b3_single(&format!("{TRACE}-{SPAN}-d"))
            .expect("debug")
            .sampled
    );
    assert!(
        !parse_b3_single(&format!("{TRACE}-{SPAN}-0"))
            .expect("denied")
            .sampled
    );
    // No decision: deferred, which a parent-based sampler does not sample.
    assert!(
        !parse_b3_single(&format!("{TRACE}-{SPAN}"))
            .expect("deferred")
            .sampled
    );
    let with_parent = parse_b3_single(&format!("{TRACE}-{SPAN}-1-05e3ac9a4f6e3b90"));
    assert!(with_parent.expect("with parent").sampled);
    // A 64-bit trace id is the low half of the 128-bit one.
    let short = parse_b3_single(&format!("a3ce929d0e0e4736-{SPAN}-1")).expect("64-bit");
    assert_eq!(hex(&short.trace_id), "0000000000000000a3ce929d0e0e4736");
    for bad in [
        "1".to_owned(),
        "0".to_owned(),
        TRACE.to_owned(),
        format!("{TRACE}-{SPAN}-"),
        format!("{TRACE}-{SPAN}-x"),
        format!("{TRACE}-{SPAN}-1-zz"),
        format!("{TRACE}-{SPAN}-1-05e3ac9a4f6e3b90-more"),
        format!("{TRACE}-0000000000000000-1"),
        format!("{}-{SPAN}-1", &TRACE[1..]),
    ] {
        assert_eq!(parse_b3_single(&bad), None, "{bad}");
    }
}

#[test]
fn b3_multi_headers_are_read_with_debug_meaning_sampled() {
    let p = parse_b3_multi(TRACE, SPAN, "", "1", "").expect("valid");
    assert!(p.sampled);
    assert!(
        parse_b3_multi(TRACE, SPAN, "", "true", "")
            .expect("true")
            .sampled
    );
    assert!(
        !parse_b3_multi(TRACE, SPAN, "", "0", "")
            .expect("denied")
            .sampled
    );
    assert!(
        !parse_b3_multi(TRACE, SPAN, "", "", "")
            .expect("deferred")
            .sampled
    );
    assert!(
        parse_b3_multi(TRACE, SPAN, "", "", "1")
            .expect("debug")
            .sampled
    );
    assert!(parse_b3_multi(TRACE, SPAN, "05e3ac9a4f6e3b90", "1", "").is_some());
    assert_eq!(
        parse_b3_multi(TRACE, "", "", "1", ""),
        None,
        "span id missing"
    );
    assert_eq!(parse_b3_multi(TRACE, SPAN, "", "yes", ""), None);
    assert_eq!(parse_b3_multi(TRACE, SPAN, "nothex", "1", ""), None);
}

#[test]
fn jaeger_header_is_read_with_its_flags() {
    let p = parse_uber_trace_id(&format!("{TRACE}:{SPAN}:0:1")).expect("valid");
    assert_eq!(
        (hex(&p.trace_id).as_str(), hex(&p.span_id).as_str()),
        (TRACE, SPAN)
    );
    assert!(p.sampled);
    assert!(
        parse_uber_trace_id(&format!("{TRACE}:{SPAN}:0:3"))
            .expect("debug")
            .sampled
    );
    assert!(
        !parse_uber_trace_id(&format!("{TRACE}:{SPAN}:0:0"))
            .expect("off")
            .sampled
    );
    let short = parse_uber_trace_id(&format!("a3ce929d0e0e4736:{SPAN}:0:1")).expect("64-bit");
    assert_eq!(hex(&short.trace_id), "0000000000000000a3ce929d0e0e4736");
    for bad in [
        format!("{TRACE}:{SPAN}:0"),
        format!("{TRACE}:{SPAN}:0:1:9"),
        format!("{TRACE}:{SPAN}:0:zz"),
        format!("{TRACE}:abc:0:1"),
        format!("{}:{SPAN}:0:1", &TRACE[..20]),
    ] {
        assert_eq!(parse_uber_trace_id(&bad), None, "{bad}");
    }
}

#[test]
fn the_last_format_that_finds_a_context_wins() {
    let other = "a3ce929d0e0e47364bf92f3577b34da6";
    let both = headers(&[
        (
            "traceparent",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ),
        ("tracestate", "vendor=abc"),
        (
            "uber-trace-id",
            "a3ce929d0e0e47364bf92f3577b34da6:00f067aa0ba902b7:0:1",
        ),
    ]);
    let w3c_last = chosen("jaeger,tracecontext").extract(&both).expect("found");
    assert_eq!(hex(&w3c_last.trace_id), TRACE);
    assert_eq!(
        w3c_last.trace_state,
        Some(HeaderValue::from_static("vendor=abc"))
    );
    let jaeger_last = chosen("tracecontext,jaeger").extract(&both).expect("found");
    assert_eq!(hex(&jaeger_last.trace_id), other);
    assert_eq!(jaeger_last.trace_state, None);
    // A format not chosen is not read; an invalid one is passed over.
    assert_eq!(chosen("b3").extract(&both), None);
    assert_eq!(chosen("none").extract(&both), None);
    let broken_b3 = headers(&[
        ("b3", "garbage"),
        ("x-b3-traceid", "4bf92f3577b34da6a3ce929d0e0e4736"),
        ("x-b3-spanid", "00f067aa0ba902b7"),
        ("x-b3-sampled", "1"),
    ]);
    let multi = chosen("b3").extract(&broken_b3).expect("from X-B3-*");
    assert!(multi.sampled);
}

#[test]
fn every_chosen_format_is_written() {
    let mut trace = [0u8; 16];
    let mut span = [0u8; 8];
    unhex(TRACE, &mut trace).expect("hex");
    unhex(SPAN, &mut span).expect("hex");
    let mut out = headers(&[("tracestate", "stale")]);
    chosen("tracecontext,baggage,b3,b3multi,jaeger").inject(&trace, &span, None, &mut out);
    let get = |k: &str| out.get(k).and_then(|v| v.to_str().ok()).map(str::to_owned);
    assert_eq!(get("traceparent"), Some(format!("00-{TRACE}-{SPAN}-01")));
    assert_eq!(get("tracestate"), None, "a new trace has no client state");
    assert_eq!(get("b3"), Some(format!("{TRACE}-{SPAN}-1")));
    assert_eq!(get("x-b3-traceid").as_deref(), Some(TRACE));
    assert_eq!(get("x-b3-spanid").as_deref(), Some(SPAN));
    assert_eq!(get("x-b3-sampled").as_deref(), Some("1"));
    assert_eq!(get("uber-trace-id"), Some(format!("{TRACE}:{SPAN}:0:1")));
    // What was written reads back as the same context in every format.
    for format in ["tracecontext", "b3", "b3multi", "jaeger"] {
        let back = chosen(format).extract(&out).expect(format);
        assert_eq!(
            (back.trace_id, back.span_id, back.sampled),
            (trace, span, true)
        );
    }
    let mut only_b3 = HeaderMap::new();
    chosen("b3").inject(&trace, &span, None, &mut only_b3);
    assert_eq!(only_b3.len(), 1);
    let mut nothing = HeaderMap::new();
    chosen("none").inject(&trace, &span, None, &mut nothing);
    assert!(nothing.is_empty());
}
