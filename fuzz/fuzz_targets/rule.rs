//! The rule language: any text into `parse_rule`; a rule that parses is
//! matched against a request made from the rest of the input, and what the
//! router relies on must agree with the matcher.
//!
//! Input: `rule \0 host \0 path \0 query` (the last three optional).

#![no_main]

use gangway::rule::{RequestFacts, default_priority, normalize_host, parse_rule};
use libfuzzer_sys::fuzz_target;
use std::net::{IpAddr, Ipv4Addr};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut parts = text.split('\0');
    let rule = parts.next().unwrap_or("");
    let host = parts.next().unwrap_or("example.com").to_ascii_lowercase();
    let path = parts.next().unwrap_or("/");
    let query = parts.next();
    let _ = default_priority(rule);
    let Ok(matcher) = parse_rule(rule) else {
        return;
    };
    let mut headers = http::HeaderMap::new();
    headers.insert("x-test", http::HeaderValue::from_static("1"));
    let facts = RequestFacts {
        method: &http::Method::GET,
        host: normalize_host(&host),
        path,
        query,
        headers: &headers,
        client_ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
    };
    let matched = matcher.matches(&facts);
    // The API's explanation must agree with the router's decision.
    assert_eq!(
        matched,
        matcher.explain_mismatch(&facts).is_none(),
        "explain_mismatch disagrees with matches for {rule:?}"
    );
    // The host index only offers a route for the hosts it lists: a rule
    // that matches a host it does not list would be unreachable there.
    if matched && let Some(hosts) = matcher.exact_hosts() {
        assert!(
            hosts.iter().any(|h| h == facts.host),
            "{rule:?} matches host {:?} but lists only {hosts:?}",
            facts.host
        );
    }
    let _ = matcher.domains();
});
