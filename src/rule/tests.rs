use std::net::IpAddr;

use http::{HeaderMap, HeaderName, HeaderValue, Method};
use proptest::prelude::*;

use super::*;

/// An owned request from which `RequestFacts` are borrowed.
#[derive(Debug, Clone)]
struct Req {
    method: Method,
    host: String,
    path: String,
    query: Option<String>,
    headers: HeaderMap,
    ip: IpAddr,
}

/// A GET for `http://example.com/` from 192.0.2.1.
fn req() -> Req {
    Req {
        method: Method::GET,
        host: "example.com".into(),
        path: "/".into(),
        query: None,
        headers: HeaderMap::new(),
        ip: "192.0.2.1".parse().unwrap(),
    }
}

impl Req {
    /// Sets host, path and query from `host/path?query`.
    fn at(mut self, url: &str) -> Self {
        let (rest, query) = match url.split_once('?') {
            Some((rest, q)) => (rest, Some(q.to_owned())),
            None => (url, None),
        };
        let (host, path) = match rest.find('/') {
            Some(i) => rest.split_at(i),
            None => (rest, "/"),
        };
        self.host = host.to_owned();
        self.path = path.to_owned();
        self.query = query;
        self
    }
    fn host(mut self, host: &str) -> Self {
        self.host = host.to_owned();
        self
    }
    fn path(mut self, path: &str) -> Self {
        self.path = path.to_owned();
        self
    }
    fn query(mut self, query: &str) -> Self {
        self.query = Some(query.to_owned());
        self
    }
    fn method(mut self, method: &str) -> Self {
        self.method = Method::from_bytes(method.as_bytes()).unwrap();
        self
    }
    fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.append(
            HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_str(value).unwrap(),
        );
        self
    }
    fn ip(mut self, ip: &str) -> Self {
        self.ip = ip.parse().unwrap();
        self
    }
    fn facts(&self) -> RequestFacts<'_> {
        RequestFacts {
            method: &self.method,
            host: &self.host,
            path: &self.path,
            query: self.query.as_deref(),
            headers: &self.headers,
            client_ip: self.ip,
        }
    }
}

fn parse(rule: &str) -> Matcher {
    parse_rule(rule).unwrap_or_else(|e| panic!("`{rule}` should parse: {e}"))
}

/// Checks every `(rule, request, expected)` case, and that
/// `explain_mismatch` agrees with `matches`.
fn check(cases: &[(&str, Req, bool)]) {
    for (rule, req, want) in cases {
        let m = parse(rule);
        let facts = req.facts();
        assert_eq!(m.matches(&facts), *want, "rule {rule} on {req:?}");
        let why = m.explain_mismatch(&facts);
        assert_eq!(
            why.is_none(),
            *want,
            "explanation {why:?} for {rule} on {req:?}"
        );
    }
}

#[test]
fn host() {
    check(&[
        ("Host(`example.com`)", req().host("example.com"), true),
        ("Host(`example.com`)", req().host("www.example.com"), false),
        ("Host(`example.com`)", req().host("example.org"), false),
        ("Host(`example.com`)", req().host(""), false),
        ("Host(`Example.COM`)", req().host("example.com"), true),
        ("Host(`example.com`)", req().host("EXAMPLE.com"), true),
        ("Host(`example.com.`)", req().host("example.com"), true),
        ("Host(`example.com`)", req().host("example.com."), true),
        ("Host(`example.com.`)", req().host("example.com."), true),
        ("Host(`example.com`)", req().host("example.com.."), false),
        ("Host(`127.0.0.1`)", req().host("127.0.0.1"), true),
        ("Host(`[::1]`)", req().host("[::1]"), true),
        ("Host(`[::1]`)", req().host("::1"), true),
        ("Host(`::1`)", req().host("[::1]"), true),
        ("Host(`2001:DB8::1`)", req().host("2001:db8::1"), true),
        (
            "Host(`under_score.test`)",
            req().host("under_score.test"),
            true,
        ),
    ]);
}

#[test]
fn host_regexp() {
    check(&[
        (
            r"HostRegexp(`^.+\.example\.com$`)",
            req().host("a.example.com"),
            true,
        ),
        (
            r"HostRegexp(`^.+\.example\.com$`)",
            req().host("a.b.example.com"),
            true,
        ),
        (
            r"HostRegexp(`^.+\.example\.com$`)",
            req().host("example.com"),
            false,
        ),
        (
            r"HostRegexp(`^.+\.example\.com$`)",
            req().host("a.example.com.evil"),
            false,
        ),
        // Not anchored, as in Traefik v3.
        ("HostRegexp(`example`)", req().host("www.example.org"), true),
        (r"HostRegexp(`\.com$`)", req().host("a.com."), true),
        ("HostRegexp(`^$`)", req().host(""), true),
        ("HostRegexp(`^[a-z]+$`)", req().host("abc"), true),
        ("HostRegexp(`^[a-z]+$`)", req().host("ab1"), false),
    ]);
}

#[test]
fn path_matchers() {
    check(&[
        ("Path(`/a`)", req().path("/a"), true),
        ("Path(`/a`)", req().path("/a/"), false),
        ("Path(`/a`)", req().path("/ab"), false),
        ("Path(`/a`)", req().path("/A"), false),
        ("Path(`/`)", req().path("/"), true),
        ("PathPrefix(`/api`)", req().path("/api"), true),
        ("PathPrefix(`/api`)", req().path("/api/x"), true),
        ("PathPrefix(`/api`)", req().path("/apix"), true),
        ("PathPrefix(`/api`)", req().path("/ap"), false),
        ("PathPrefix(`/api`)", req().path("/web/api"), false),
        ("PathPrefix(`/api/`)", req().path("/api"), false),
        ("PathPrefix(`/`)", req().path("/anything"), true),
        ("PathRegexp(`^/v[0-9]+/`)", req().path("/v1/users"), true),
        ("PathRegexp(`^/v[0-9]+/`)", req().path("/v12/"), true),
        ("PathRegexp(`^/v[0-9]+/`)", req().path("/v/users"), false),
        ("PathRegexp(`^/v[0-9]+/`)", req().path("/api/v1/"), false),
        // Not anchored.
        ("PathRegexp(`[0-9]+$`)", req().path("/items/42"), true),
        ("PathRegexp(`\\.php`)", req().path("/index.php"), true),
        ("PathRegexp(`\\.php`)", req().path("/indexphp"), false),
    ]);
}

#[test]
fn method() {
    check(&[
        ("Method(`GET`)", req().method("GET"), true),
        ("Method(`GET`)", req().method("POST"), false),
        ("Method(`get`)", req().method("GET"), true),
        ("Method(`Post`)", req().method("POST"), true),
        ("Method(`PURGE`)", req().method("PURGE"), true),
        ("Method(`PURGE`)", req().method("purge"), true),
        ("Method(`GET`)", req().method("HEAD"), false),
    ]);
}

#[test]
fn header() {
    check(&[
        (
            "Header(`X-Key`, `value`)",
            req().header("x-key", "value"),
            true,
        ),
        (
            "Header(`x-key`, `value`)",
            req().header("X-Key", "value"),
            true,
        ),
        (
            "Header(`X-KEY`, `value`)",
            req().header("x-key", "value"),
            true,
        ),
        (
            "Header(`X-Key`, `value`)",
            req().header("x-key", "Value"),
            false,
        ),
        (
            "Header(`X-Key`, `value`)",
            req().header("x-key", "value2"),
            false,
        ),
        ("Header(`X-Key`, `value`)", req(), false),
        (
            "Header(`X-Key`, `value`)",
            req().header("x-other", "value"),
            false,
        ),
        (
            "Header(`X-Key`, `value`)",
            req().header("x-key", "a").header("x-key", "value"),
            true,
        ),
        ("Header(`X-Key`, ``)", req().header("x-key", ""), true),
        ("Header(`X-Key`, ``)", req(), false),
        (
            "HeaderRegexp(`X-Key`, `^ab`)",
            req().header("x-key", "abc"),
            true,
        ),
        (
            "HeaderRegexp(`X-Key`, `^ab`)",
            req().header("x-key", "cab"),
            false,
        ),
        (
            "HeaderRegexp(`X-Key`, `ab`)",
            req().header("x-key", "cab"),
            true,
        ),
        (
            "HeaderRegexp(`X-Key`, `^ab`)",
            req().header("x-key", "zz").header("x-key", "abz"),
            true,
        ),
        ("HeaderRegexp(`X-Key`, ``)", req(), false),
        (
            "HeaderRegexp(`X-Key`, ``)",
            req().header("x-key", "anything"),
            true,
        ),
    ]);
}

#[test]
fn header_regexp_skips_values_that_are_not_utf8() {
    let mut r = req();
    r.headers
        .append("x-key", HeaderValue::from_bytes(b"ab\xff").unwrap());
    assert!(!parse("HeaderRegexp(`X-Key`, `^ab`)").matches(&r.facts()));
    r.headers.append("x-key", HeaderValue::from_static("abc"));
    assert!(parse("HeaderRegexp(`X-Key`, `^ab`)").matches(&r.facts()));
    // Exact comparison works on bytes.
    let mut r = req();
    r.headers
        .append("x-key", HeaderValue::from_bytes(b"\xff").unwrap());
    assert!(!parse("Header(`X-Key`, `x`)").matches(&r.facts()));
}

#[test]
fn query() {
    check(&[
        ("Query(`mobile`, `true`)", req().query("mobile=true"), true),
        (
            "Query(`mobile`, `true`)",
            req().query("mobile=false"),
            false,
        ),
        (
            "Query(`mobile`, `true`)",
            req().query("x=1&mobile=true"),
            true,
        ),
        (
            "Query(`mobile`, `true`)",
            req().query("mobile=false&mobile=true"),
            true,
        ),
        ("Query(`mobile`, `true`)", req().query("Mobile=true"), false),
        ("Query(`mobile`, `true`)", req(), false),
        ("Query(`mobile`, `true`)", req().query(""), false),
        ("Query(`mobile`)", req().query("mobile"), true),
        ("Query(`mobile`)", req().query("mobile="), true),
        ("Query(`mobile`)", req().query("a=1&&mobile=0"), true),
        ("Query(`mobile`)", req().query("mobiles=1"), false),
        ("Query(`mobile`)", req().query("x=mobile"), false),
        ("Query(`mobile`)", req(), false),
        ("Query(`q`, `a b`)", req().query("q=a+b"), true),
        ("Query(`q`, `a b`)", req().query("q=a%20b"), true),
        ("Query(`q`, `a+b`)", req().query("q=a%2Bb"), true),
        ("Query(`q`, `a+b`)", req().query("q=a+b"), false),
        ("Query(`a b`, `1`)", req().query("a%20b=1"), true),
        ("Query(`q`, `é`)", req().query("q=%C3%A9"), true),
        ("Query(`q`, `é`)", req().query("q=%c3%a9"), true),
        ("Query(`q`, `x=y`)", req().query("q=x=y"), true),
        ("Query(`q`, ``)", req().query("q"), true),
        ("Query(`q`, ``)", req().query("q="), true),
        ("Query(`q`, ``)", req().query("q=1"), false),
        // A pair with a malformed escape is dropped, the others still count.
        ("Query(`q`, `x`)", req().query("q=%zz&q=x"), true),
        ("Query(`q`)", req().query("q=%zz"), false),
        ("Query(`q`)", req().query("q=%4"), false),
        (
            "QueryRegexp(`mobile`, `^(true|yes)$`)",
            req().query("mobile=yes"),
            true,
        ),
        (
            "QueryRegexp(`mobile`, `^(true|yes)$`)",
            req().query("mobile=true"),
            true,
        ),
        (
            "QueryRegexp(`mobile`, `^(true|yes)$`)",
            req().query("mobile=no"),
            false,
        ),
        (
            "QueryRegexp(`mobile`, `^(true|yes)$`)",
            req().query("other=yes"),
            false,
        ),
        ("QueryRegexp(`mobile`, ``)", req().query("mobile"), true),
        ("QueryRegexp(`mobile`, ``)", req(), false),
    ]);
}

#[test]
fn query_string_is_parsed_only_when_a_query_matcher_runs() {
    let r = req().host("b").query("a=1");
    let facts = r.facts();
    for (rule, parsed) in [
        ("Host(`b`) && Path(`/`)", false),
        ("Host(`a`) && Query(`a`)", false),
        ("Host(`b`) || Query(`a`)", false),
        ("Host(`b`) && Query(`a`)", true),
    ] {
        let m = parse(rule);
        let ctx = Ctx::new(&facts);
        m.root.eval(&ctx);
        assert_eq!(ctx.query.get().is_some(), parsed, "{rule}");
    }
}

#[test]
fn query_decoding_borrows_when_it_can() {
    let pairs = query::parse("a=1&b&=x&&c=%41+");
    let got: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (&**k, &**v)).collect();
    assert_eq!(got, [("a", "1"), ("b", ""), ("", "x"), ("c", "A ")]);
    assert!(matches!(pairs[0].0, Cow::Borrowed("a")));
    let malformed = query::parse("a=%&b=%g0&c=3");
    assert_eq!(malformed.len(), 1, "pairs with a broken escape are dropped");
}

#[test]
fn client_ip() {
    check(&[
        ("ClientIP(`10.0.0.0/8`)", req().ip("10.1.2.3"), true),
        ("ClientIP(`10.0.0.0/8`)", req().ip("11.0.0.1"), false),
        ("ClientIP(`10.0.0.0/8`)", req().ip("::ffff:10.1.2.3"), true),
        ("ClientIP(`10.0.0.0/8`)", req().ip("::ffff:11.1.2.3"), false),
        ("ClientIP(`10.0.0.0/8`)", req().ip("::a01:203"), false),
        ("ClientIP(`192.168.1.1`)", req().ip("192.168.1.1"), true),
        ("ClientIP(`192.168.1.1`)", req().ip("192.168.1.2"), false),
        ("ClientIP(`192.168.1.1/32`)", req().ip("192.168.1.1"), true),
        ("ClientIP(`10.1.2.3/8`)", req().ip("10.200.0.1"), true),
        ("ClientIP(`0.0.0.0/0`)", req().ip("203.0.113.9"), true),
        ("ClientIP(`2001:db8::/32`)", req().ip("2001:db8::1"), true),
        ("ClientIP(`2001:db8::/32`)", req().ip("2001:db9::1"), false),
        ("ClientIP(`2001:db8::/32`)", req().ip("10.0.0.1"), false),
        ("ClientIP(`::1`)", req().ip("::1"), true),
        ("ClientIP(`::1`)", req().ip("127.0.0.1"), false),
        (
            "ClientIP(`::ffff:10.0.0.0/104`)",
            req().ip("10.2.3.4"),
            true,
        ),
        (
            "ClientIP(`::ffff:10.0.0.0/104`)",
            req().ip("::ffff:10.2.3.4"),
            true,
        ),
        (
            "ClientIP(`::ffff:10.0.0.0/104`)",
            req().ip("11.2.3.4"),
            false,
        ),
        ("ClientIP(`::ffff:1.2.3.4`)", req().ip("1.2.3.4"), true),
        ("ClientIP(`10.0.0.0/8`, `::1`)", req().ip("::1"), true),
        ("ClientIP(`10.0.0.0/8`, `::1`)", req().ip("10.9.9.9"), true),
        ("ClientIP(`10.0.0.0/8`, `::1`)", req().ip("::2"), false),
    ]);
}

#[test]
fn traefik_v2_multi_argument_forms_mean_any_of_them() {
    check(&[
        ("Host(`a.test`, `b.test`)", req().host("a.test"), true),
        ("Host(`a.test`, `b.test`)", req().host("b.test"), true),
        ("Host(`a.test`, `b.test`)", req().host("c.test"), false),
        ("Path(`/a`, `/b`)", req().path("/b"), true),
        ("Path(`/a`, `/b`)", req().path("/c"), false),
        ("PathPrefix(`/a`, `/b`)", req().path("/b/x"), true),
        ("PathPrefix(`/a`, `/b`)", req().path("/c/x"), false),
        ("Method(`GET`, `POST`)", req().method("POST"), true),
        ("Method(`GET`, `POST`)", req().method("PUT"), false),
    ]);
}

#[test]
fn wildcard_hosts() {
    check(&[
        // `*.`: exactly one label, never the name itself.
        ("Host(`*.example.com`)", req().host("a.example.com"), true),
        ("Host(`*.example.com`)", req().host("A.Example.COM"), true),
        ("Host(`*.example.com`)", req().host("a.example.com."), true),
        ("Host(`*.Example.com.`)", req().host("a.example.com"), true),
        (
            "Host(`*.example.com`)",
            req().host("a.b.example.com"),
            false,
        ),
        ("Host(`*.example.com`)", req().host("example.com"), false),
        ("Host(`*.example.com`)", req().host(".example.com"), false),
        ("Host(`*.example.com`)", req().host("aexample.com"), false),
        ("Host(`*.example.com`)", req().host("a.example.org"), false),
        (
            "Host(`*.example.com`)",
            req().host("a.example.com.evil"),
            false,
        ),
        ("Host(`*.example.com`)", req().host(""), false),
        // `**.`: any number of labels, at least one, never the name itself.
        ("Host(`**.example.com`)", req().host("a.example.com"), true),
        (
            "Host(`**.example.com`)",
            req().host("a.b.c.example.com"),
            true,
        ),
        ("Host(`**.example.com`)", req().host("example.com"), false),
        (
            "Host(`**.example.com`)",
            req().host("a..example.com"),
            false,
        ),
        (
            "Host(`**.example.com`)",
            req().host("notexample.com"),
            false,
        ),
        // `*` alone: every request, even one without a host (Traefik's
        // catch-all, as `HostSNI(`*`)`).
        ("Host(`*`)", req().host("anything.test"), true),
        ("Host(`*`)", req().host(""), true),
        ("Host(`*`) && Path(`/x`)", req().at("a/y"), false),
        // With other hosts and operators.
        (
            "Host(`example.com`, `*.example.com`)",
            req().host("example.com"),
            true,
        ),
        (
            "Host(`*.a.test`) && !Host(`admin.a.test`)",
            req().host("admin.a.test"),
            false,
        ),
        (
            "Host(`*.a.test`) && !Host(`admin.a.test`)",
            req().host("www.a.test"),
            true,
        ),
    ]);
    // A wildcard host is not an exact one: such rules are not indexed by
    // host, while they still name their hosts for certificates and the API.
    assert_eq!(parse("Host(`*.a.test`)").exact_hosts(), None);
    assert_eq!(parse("Host(`b.test`, `**.a.test`)").exact_hosts(), None);
    assert_eq!(
        parse("Host(`*.A.test`) || Host(`**.b.test.`)").domains(),
        ["*.a.test", "**.b.test"]
    );
    assert_eq!(parse("Host(`*.a.test`)").targets().hosts, ["*.a.test"]);
    // `*` names no host to order a certificate for.
    assert_eq!(parse("Host(`*`)").exact_hosts(), None);
    assert!(parse("Host(`*`)").domains().is_empty());
    assert_eq!(parse("Host(`*`, `a.test`)").domains(), ["a.test"]);
    // Written back as written.
    assert_eq!(
        parse("Host(`*.a.test`)  &&  Host(`**.b.test`)").to_string(),
        "Host(`*.a.test`) && Host(`**.b.test`)"
    );
    // The explanation says what `*.` stands for when a name is too deep.
    assert_eq!(
        parse("Host(`*.a.test`)")
            .explain_mismatch(&req().host("x.y.a.test").facts())
            .as_deref(),
        Some(
            "Host(`*.a.test`) does not match host `x.y.a.test` (`*.` stands for exactly one label; `**.` for any number)"
        )
    );
    assert_eq!(
        parse("Host(`*.a.test`)")
            .explain_mismatch(&req().host("b.test").facts())
            .as_deref(),
        Some("Host(`*.a.test`) does not match host `b.test`")
    );
    // Priority is the rule's length, as in Traefik, where the stars of a
    // `**.` do not count: it ranks below `*.` and the names it covers.
    assert_eq!(default_priority("Host(`*.a.test`)"), 16);
    assert_eq!(default_priority("Host(`x.a.test`)"), 16);
    assert_eq!(default_priority("Host(`**.a.test`)"), 15);
    assert_eq!(
        default_priority("Host(`**.a.test`) || Host(`**.b.test`, `c.test`)"),
        48 - 4
    );
    // A `**.` that is not a host is counted whole.
    assert_eq!(default_priority("Path(`/**.x`)"), 13);
    assert_eq!(default_priority("Host(`**.a.test`"), 16, "does not parse");
}

#[test]
fn operators_and_precedence() {
    check(&[
        ("Host(`a`) && Path(`/x`)", req().at("a/x"), true),
        ("Host(`a`) && Path(`/x`)", req().at("a/y"), false),
        ("Host(`a`) && Path(`/x`)", req().at("b/x"), false),
        ("Host(`a`) || Path(`/x`)", req().at("b/x"), true),
        ("Host(`a`) || Path(`/x`)", req().at("a/y"), true),
        ("Host(`a`) || Path(`/x`)", req().at("b/y"), false),
        ("!Host(`a`)", req().at("a/"), false),
        ("!Host(`a`)", req().at("b/"), true),
        ("!!Host(`a`)", req().at("a/"), true),
        // `&&` binds tighter than `||`: (a && /x) || POST.
        (
            "Host(`a`) && Path(`/x`) || Method(`POST`)",
            req().at("b/y").method("POST"),
            true,
        ),
        (
            "Host(`a`) && Path(`/x`) || Method(`POST`)",
            req().at("a/y"),
            false,
        ),
        (
            "Method(`POST`) || Host(`a`) && Path(`/x`)",
            req().at("b/y").method("POST"),
            true,
        ),
        (
            "Method(`POST`) || Host(`a`) && Path(`/x`)",
            req().at("a/y"),
            false,
        ),
        (
            "Method(`POST`) || Host(`a`) && Path(`/x`)",
            req().at("a/x"),
            true,
        ),
        // Parentheses override it.
        (
            "Host(`a`) && (Path(`/x`) || Method(`POST`))",
            req().at("b/y").method("POST"),
            false,
        ),
        (
            "Host(`a`) && (Path(`/x`) || Method(`POST`))",
            req().at("a/y").method("POST"),
            true,
        ),
        (
            "(Host(`a`) || Host(`b`)) && Path(`/x`)",
            req().at("b/x"),
            true,
        ),
        (
            "(Host(`a`) || Host(`b`)) && Path(`/x`)",
            req().at("c/x"),
            false,
        ),
        // `!` binds tightest: (!a) && /x.
        ("!Host(`a`) && Path(`/x`)", req().at("b/y"), false),
        ("!Host(`a`) && Path(`/x`)", req().at("b/x"), true),
        ("!(Host(`a`) && Path(`/x`))", req().at("b/y"), true),
        ("!(Host(`a`) && Path(`/x`))", req().at("a/x"), false),
        ("!Host(`a`) || Path(`/x`)", req().at("a/y"), false),
        ("! ( Host(`a`) ) || Path(`/x`)", req().at("a/x"), true),
        (
            "Host(`a`) && Path(`/x`) && Method(`GET`) && Query(`q`)",
            req().at("a/x?q"),
            true,
        ),
        (
            "Host(`a`) && Path(`/x`) && Method(`GET`) && Query(`q`)",
            req().at("a/x?r"),
            false,
        ),
        ("Host(`a`) || Host(`b`) || Host(`c`)", req().host("c"), true),
        ("((((Host(`a`)))))", req().host("a"), true),
        ("Host(`a`)\n\t&&\r\n  Path(`/x`)", req().at("a/x"), true),
        ("Host(`a`)&&Path(`/x`)||Path(`/y`)", req().at("b/y"), true),
        ("Host (`a`)", req().host("a"), true),
        ("Host( `a` , `b` )", req().host("b"), true),
    ]);
}

#[test]
fn double_quoted_strings() {
    check(&[
        (r#"Host("a.test")"#, req().host("a.test"), true),
        (r#"Host("a.test", `b.test`)"#, req().host("b.test"), true),
        (
            r#"Header("X-Say", "say \"hi\"")"#,
            req().header("x-say", "say \"hi\""),
            true,
        ),
        (
            r#"Header("X-Say", "back\\slash")"#,
            req().header("x-say", "back\\slash"),
            true,
        ),
        (
            r#"Header("X-Say", "tick`")"#,
            req().header("x-say", "tick`"),
            true,
        ),
        (r#"PathRegexp("^/a\\.b$")"#, req().path("/a.b"), true),
        (r#"PathRegexp("^/a\\.b$")"#, req().path("/axb"), false),
        // Inside backticks a backslash is an ordinary character.
        (r"PathRegexp(`^/a\.b$`)", req().path("/axb"), false),
        (
            r#"Header(`X-Say`, `"\"`)"#,
            req().header("x-say", r#""\""#),
            true,
        ),
    ]);
}

/// `(rule, column, part of the message)`.
const MALFORMED: &[(&str, usize, &str)] = &[
    ("", 1, "empty rule: expected a matcher"),
    ("  \n\t ", 1, "empty rule"),
    (
        "Hots(`a`)",
        1,
        "unknown matcher `Hots`; did you mean `Host`?",
    ),
    (
        "hOST(`a`)",
        1,
        "unknown matcher `hOST`; did you mean `Host`?",
    ),
    ("PathPrefx(`/a`)", 1, "did you mean `PathPrefix`?"),
    ("clientIp(`::1`)", 1, "did you mean `ClientIP`?"),
    (
        "Headers(`a`, `b`)",
        1,
        "did you mean `Header`? (`Headers` is the Traefik v2 name; `ruleSyntax=v2` reads v2 rules)",
    ),
    ("HostSNI(`a`)", 1, "`HostSNI` is a TCP router matcher"),
    (
        "Frobnicate(`a`)",
        1,
        "unknown matcher `Frobnicate`; the matchers are Host, HostRegexp",
    ),
    ("Host(`a`) && Bogus(`b`)", 14, "unknown matcher `Bogus`"),
    ("Host`a`)", 5, "expected `(` after `Host`, found a string"),
    ("Host", 5, "expected `(` after `Host`, found end of rule"),
    (
        "Host(`a`",
        9,
        "expected `)` or `,` after argument of `Host`, found end of rule",
    ),
    (
        "Host(`a` `b`)",
        10,
        "expected `)` or `,` after argument of `Host`, found a string",
    ),
    ("Host(`a`,)", 10, "expected a string argument for `Host`"),
    (
        "Host(example.com)",
        6,
        "found `example`; arguments must be quoted",
    ),
    (
        "Host('a')",
        6,
        "`'` (strings are written in backticks or double quotes)",
    ),
    (
        "Host(`a)",
        6,
        "unterminated string: missing the closing backtick",
    ),
    (
        "Host(\"a)",
        6,
        "unterminated string: missing the closing double quote",
    ),
    ("Host(\"a\\", 6, "unterminated string"),
    (r#"Host("a\d")"#, 8, r"unsupported escape `\d`"),
    (
        "Host()",
        1,
        "`Host` takes at least 1 argument (host names), but none were given",
    ),
    (
        "Header(`X`)",
        1,
        "`Header` takes 2 arguments (a header name and a value), but 1 was given",
    ),
    (
        "HeaderRegexp(`X`, `a`, `b`)",
        1,
        "`HeaderRegexp` takes 2 arguments",
    ),
    (
        "HostRegexp(`a`, `b`)",
        1,
        "`HostRegexp` takes 1 argument (a regular expression), but 2 were given; to accept several, combine matchers with `||`",
    ),
    (
        "Query(`a`, `b`, `c`)",
        1,
        "`Query` takes 1 to 2 arguments (a parameter name and optionally a value), but 3 were given",
    ),
    ("QueryRegexp(`a`)", 1, "`QueryRegexp` takes 2 arguments"),
    ("Path()", 1, "`Path` takes at least 1 argument"),
    (
        "Host(`a`) &&",
        13,
        "expected a matcher or `(` after `&&`, found end of rule",
    ),
    (
        "Host(`a`) ||  ",
        15,
        "expected a matcher or `(` after `||`, found end of rule",
    ),
    (
        "Host(`a`) && || Path(`/`)",
        14,
        "expected a matcher or `(` after `&&`, found `||`",
    ),
    ("&& Host(`a`)", 1, "expected a matcher or `(`, found `&&`"),
    (
        "!",
        2,
        "expected a matcher or `(` after `!`, found end of rule",
    ),
    ("()", 2, "expected a matcher or `(` after `(`, found `)`"),
    (
        "Host(`a`) && `b`",
        14,
        "expected a matcher after `&&`, found a string",
    ),
    (
        "Host(`a`) Path(`/b`)",
        11,
        "expected `&&`, `||` or end of rule, found `Path`",
    ),
    (
        "Host(`a`) && Path(`/b`) $",
        25,
        "expected `&&`, `||` or end of rule, found `$`",
    ),
    ("Host(`a`))", 10, "unexpected `)` without a matching `(`"),
    (
        "(Host(`a`)",
        11,
        "expected `&&`, `||` or `)` to close the `(` at column 1, found end of rule",
    ),
    (
        "(Host(`a`) Path(`/`))",
        12,
        "to close the `(` at column 1, found `Path`",
    ),
    (
        "Host(`a`) & Path(`/`)",
        11,
        "found `&` (AND is written `&&`)",
    ),
    (
        "Host(`a`) | Path(`/`)",
        11,
        "found `|` (OR is written `||`)",
    ),
    ("Host(`a`) and Path(`/`)", 11, "found `and`"),
    ("Host(`a`)\u{7}", 10, "found control character U+0007"),
    (
        "PathRegexp(`(`)",
        12,
        "invalid regular expression in `PathRegexp`: unclosed group",
    ),
    (
        "HostRegexp(`[z-a]`)",
        12,
        "invalid regular expression in `HostRegexp`",
    ),
    (
        "HeaderRegexp(`X`, `a{2,1}`)",
        19,
        "invalid regular expression in `HeaderRegexp`",
    ),
    (
        "QueryRegexp(`q`, `*`)",
        18,
        "invalid regular expression in `QueryRegexp`",
    ),
    (
        "ClientIP(`10.0.0.0/33`)",
        10,
        "invalid IP address or CIDR range `10.0.0.0/33` in `ClientIP`",
    ),
    (
        "ClientIP(`nope`)",
        10,
        "invalid IP address or CIDR range `nope`",
    ),
    (
        "ClientIP(`10.0.0.1`, `1.2.3`)",
        22,
        "invalid IP address or CIDR range `1.2.3`",
    ),
    ("ClientIP(``)", 10, "invalid IP address or CIDR range ``"),
    ("Path(`api`)", 6, "path `api` in `Path` must start with `/`"),
    (
        "PathPrefix(``)",
        12,
        "empty path in `PathPrefix`; paths must start with `/`",
    ),
    (
        "Path(`/a`, `b`)",
        12,
        "path `b` in `Path` must start with `/`",
    ),
    ("Path(`/a?b=1`)", 6, "contains `?`"),
    (
        "Path(`/users/{id}`)",
        6,
        "Traefik v2 `{...}` template; use PathRegexp",
    ),
    ("Host(``)", 6, "empty host name in `Host`"),
    ("Host(`.`)", 6, "empty host name in `Host`"),
    ("Host(`a`, ``)", 11, "empty host name in `Host`"),
    (
        "Host(`a.*.example.com`)",
        6,
        "`*` in host `a.*.example.com`: a wildcard is a whole first label",
    ),
    (
        "Host(`*example.com`)",
        6,
        "a wildcard is a whole first label",
    ),
    ("Host(`*.`)", 6, "a wildcard is a whole first label"),
    ("Host(`***.a`)", 6, "a wildcard is a whole first label"),
    ("Host(`*.127.0.0.1`)", 6, "an IP address has no subdomains"),
    (
        "Host(`*.a:80`)",
        6,
        "invalid character `:` in host `*.a:80`",
    ),
    (
        "Host(`{sub:[a-z]+}.example.com`)",
        6,
        "Traefik v2 `{...}` template; use HostRegexp",
    ),
    ("Host(`example.com:8080`)", 6, "includes a port"),
    ("Host(`[::1]:8080`)", 6, "includes a port"),
    ("Host(`a:b`)", 6, "invalid host `a:b`"),
    ("Host(`exa mple.com`)", 6, "invalid character ` ` in host"),
    (
        "Host(`bücher.de`)",
        6,
        "non-ASCII characters; write internationalized names in their punycode",
    ),
    ("Method(``)", 8, "empty method in `Method`"),
    ("Method(`G T`)", 8, "invalid HTTP method `G T`"),
    ("Header(``, `v`)", 8, "empty header name in `Header`"),
    ("Header(`X Key`, `v`)", 8, "invalid header name `X Key`"),
    ("Query(``)", 7, "empty query parameter name"),
    (
        "Query(`mobile=true`)",
        7,
        "Query(`mobile=true`) is the Traefik v2 form; write Query(`mobile`, `true`)",
    ),
    ("Query(`a=b`, `c`)", 7, "must not contain `=`"),
    // Columns count characters, not bytes.
    (
        "Header(`X`, `é`) && Bogus(`x`)",
        21,
        "unknown matcher `Bogus`",
    ),
    (
        "Host(`a`) && Path(`é`)",
        19,
        "path `é` in `Path` must start with `/`",
    ),
];

#[test]
fn malformed_rules_report_column_and_expectation() {
    assert!(MALFORMED.len() >= 25);
    for (rule, col, message) in MALFORMED {
        let err = match parse_rule(rule) {
            Ok(m) => panic!("`{rule}` parsed as {m}"),
            Err(e) => e,
        };
        assert!(
            err.message.contains(message),
            "`{rule}`: message {:?} lacks {message:?}",
            err.message
        );
        assert_eq!(err.position, *col, "`{rule}`: {}", err.message);
        assert!(err.position <= rule.chars().count() + 1);
    }
}

#[test]
fn error_display() {
    let err = parse_rule("Host(`a.test` `b.test`)").unwrap_err();
    assert_eq!(
        err.to_string(),
        "rule error at column 15: expected `)` or `,` after argument of `Host`, found a string"
    );
    let err = parse_rule("Hots(`a`)").unwrap_err();
    assert_eq!(
        err.to_string(),
        "rule error at column 1: unknown matcher `Hots`; did you mean `Host`?"
    );
}

#[test]
fn nesting_is_capped() {
    let ok = format!(
        "{}Host(`a`){}",
        "(".repeat(MAX_NESTING),
        ")".repeat(MAX_NESTING)
    );
    assert!(parse("(Host(`a`))").matches(&req().host("a").facts()));
    assert!(parse(&ok).matches(&req().host("a").facts()));
    let deep = format!("{}Host(`a`){}", "(".repeat(65), ")".repeat(65));
    let err = parse_rule(&deep).unwrap_err();
    assert_eq!(err.position, 65);
    assert!(err.message.contains("nested too deeply"), "{}", err.message);

    let nots = format!("{}Host(`a`)", "!".repeat(MAX_NESTING));
    assert!(parse(&nots).matches(&req().host("a").facts()));
    let err = parse_rule(&format!("{}Host(`a`)", "!".repeat(65))).unwrap_err();
    assert_eq!(err.position, 65);

    let mixed = format!("{}Host(`a`){}", "!(".repeat(40), ")".repeat(40));
    assert_eq!(parse_rule(&mixed).unwrap_err().position, 65);

    // Depth is about nesting, not about how many groups a rule has.
    let wide = vec!["((Host(`a`)))"; 500].join(" || ");
    assert!(parse(&wide).matches(&req().host("a").facts()));

    // Hostile input far past the limits neither overflows nor takes long.
    for hostile in ["(".repeat(100_000), "!".repeat(60_000), "(!".repeat(30_000)] {
        let err = parse_rule(&hostile).unwrap_err();
        assert!(err.position <= 65, "{}", err.message);
    }
}

#[test]
fn length_is_capped() {
    let long = format!("Host(`{}`)", "a".repeat(MAX_RULE_BYTES));
    let err = parse_rule(&long).unwrap_err();
    assert_eq!(err.position, 1);
    assert!(err.message.contains("too long"), "{}", err.message);
    let fits = format!("Path(`/{}`)", "a".repeat(MAX_RULE_BYTES - 9));
    assert_eq!(fits.len(), MAX_RULE_BYTES);
    assert!(parse_rule(&fits).is_ok());
}

#[test]
fn exact_hosts() {
    let cases: &[(&str, Option<&[&str]>)] = &[
        ("Host(`A.Test`)", Some(&["a.test"])),
        ("Host(`a.test.`)", Some(&["a.test"])),
        ("Host(`[::1]`)", Some(&["::1"])),
        ("Host(`a`, `b`)", Some(&["a", "b"])),
        ("Host(`a`, `A.`)", Some(&["a"])),
        ("Host(`a`) && Path(`/x`)", Some(&["a"])),
        ("Path(`/x`) && Host(`a`)", Some(&["a"])),
        ("Host(`a`, `b`) && Host(`c`)", Some(&["c"])),
        ("Host(`c`) && Host(`a`, `b`)", Some(&["c"])),
        ("Host(`a`) && Host(`b`)", Some(&["a"])),
        ("Host(`a`) || Host(`b`)", Some(&["a", "b"])),
        (
            "Host(`a`) || Host(`b`, `a`) || Host(`c`)",
            Some(&["a", "b", "c"]),
        ),
        ("Host(`a`) || Path(`/`)", None),
        ("Path(`/`) || Host(`a`)", None),
        (
            "(Host(`a`) || Host(`b`)) && Method(`GET`)",
            Some(&["a", "b"]),
        ),
        (
            "(Host(`a`) || Path(`/`)) && Host(`b`, `c`)",
            Some(&["b", "c"]),
        ),
        (
            "(Host(`a`) && Path(`/x`)) || (Host(`b`) && Path(`/y`))",
            Some(&["a", "b"]),
        ),
        ("!Host(`a`)", None),
        ("!Host(`a`) && Host(`b`)", Some(&["b"])),
        ("!!Host(`a`)", None),
        ("HostRegexp(`^a$`)", None),
        ("Path(`/`)", None),
        ("Method(`GET`) && Query(`a`)", None),
        ("ClientIP(`::1`)", None),
    ];
    for (rule, want) in cases {
        let got = parse(rule).exact_hosts();
        let want = want.map(|w| w.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>());
        assert_eq!(got, want, "{rule}");
    }
}

#[test]
fn exact_hosts_never_excludes_a_matching_request() {
    let rules = [
        "Host(`a`) && Path(`/x`)",
        "(Host(`a`) || Host(`b`)) && !Path(`/y`)",
        "Host(`A.`) || Host(`b`) && Method(`GET`)",
        "Host(`[::1]`) || Host(`a`)",
        "Host(`::1`) && !Path(`/y`)",
    ];
    for rule in rules {
        let m = parse(rule);
        let hosts = m.exact_hosts().unwrap();
        for host in ["a", "a.", "b", "c", "[::1]", "::1"] {
            for path in ["/x", "/y"] {
                let r = req().host(host).path(path);
                if m.matches(&r.facts()) {
                    assert!(
                        hosts.iter().any(|h| h == normalize_host(host)),
                        "{rule} {host}"
                    );
                }
            }
        }
    }
}

#[test]
fn domains() {
    let cases: &[(&str, &[&str])] = &[
        ("Host(`A.test.`)", &["a.test"]),
        ("Host(`a.test`) && Path(`/x`)", &["a.test"]),
        ("Host(`a`, `b`) || Host(`c`) && Host(`A`)", &["a", "b", "c"]),
        (
            "Host(`a.test`) && !Host(`b.test`) || Host(`c`, `a.test`)",
            &["a.test", "c"],
        ),
        ("!(Host(`a`) || Host(`b`))", &[]),
        ("HostRegexp(`^a$`) || PathPrefix(`/`)", &[]),
        ("(Method(`GET`) || (Host(`x`) && Host(`y`)))", &["x", "y"]),
    ];
    for (rule, want) in cases {
        assert_eq!(parse(rule).domains(), *want, "{rule}");
    }
}

#[test]
fn targets() {
    type Want<'a> = (&'a [&'a str], &'a [&'a str], &'a [&'a str], &'a [&'a str]);
    let cases: &[(&str, Want<'_>)] = &[
        ("Host(`A.test.`)", (&["a.test"], &[], &[], &[])),
        (
            "Host(`a.test`) && (Path(`/x`) || PathPrefix(`/api`, `/v2`))",
            (&["a.test"], &[], &["/x"], &["/api", "/v2"]),
        ),
        (
            "HostRegexp(`^.+\\.test$`) && !PathPrefix(`/admin`)",
            (&[], &["^.+\\.test$"], &[], &[]),
        ),
        (
            "Host(`a`) || Host(`a`, `b`) && Path(`/p`) || Path(`/p`)",
            (&["a", "b"], &[], &["/p"], &[]),
        ),
        ("!(Host(`a`) || Path(`/b`))", (&[], &[], &[], &[])),
        ("Method(`GET`) && Header(`X`, `y`)", (&[], &[], &[], &[])),
    ];
    for (rule, (hosts, host_regexps, paths, path_prefixes)) in cases {
        let want = RuleTargets {
            hosts: hosts.iter().map(|s| (*s).to_owned()).collect(),
            host_regexps: host_regexps.iter().map(|s| (*s).to_owned()).collect(),
            paths: paths.iter().map(|s| (*s).to_owned()).collect(),
            path_prefixes: path_prefixes.iter().map(|s| (*s).to_owned()).collect(),
        };
        assert_eq!(parse(rule).targets(), want, "{rule}");
    }
}

#[test]
fn explain_mismatch() {
    let cases: &[(&str, Req, Option<&str>)] = &[
        ("Host(`a.test`)", req().host("a.test"), None),
        (
            "Host(`a.test`)",
            req().host("b.test"),
            Some("Host(`a.test`) does not match host `b.test`"),
        ),
        (
            "Host(`a.test`)",
            req().host(""),
            Some("Host(`a.test`) does not match: the request has no host"),
        ),
        (
            "Host(`A.test`, `b.test`)",
            req().host("c.test"),
            Some("Host(`A.test`, `b.test`) does not match host `c.test`"),
        ),
        (
            r"HostRegexp(`^x\.`)",
            req().host("y.test"),
            Some(r"HostRegexp(`^x\.`) does not match host `y.test`"),
        ),
        (
            "PathPrefix(`/api`)",
            req().path("/web"),
            Some("PathPrefix(`/api`) does not match path `/web`"),
        ),
        (
            "Path(`/a`)",
            req().path("/b"),
            Some("Path(`/a`) does not match path `/b`"),
        ),
        (
            "PathRegexp(`^/v1`)",
            req().path("/v2"),
            Some("PathRegexp(`^/v1`) does not match path `/v2`"),
        ),
        (
            "Method(`POST`)",
            req(),
            Some("Method(`POST`) does not match method `GET`"),
        ),
        (
            "Header(`X-Key`, `v`)",
            req(),
            Some("Header(`X-Key`, `v`) does not match: the request has no `X-Key` header"),
        ),
        (
            "Header(`X-Key`, `v`)",
            req().header("x-key", "w"),
            Some("Header(`X-Key`, `v`) does not match any value of header `X-Key`"),
        ),
        (
            "HeaderRegexp(`X-Key`, `^v`)",
            req().header("x-key", "w"),
            Some("HeaderRegexp(`X-Key`, `^v`) does not match any value of header `X-Key`"),
        ),
        (
            "Query(`mobile`, `true`)",
            req(),
            Some(
                "Query(`mobile`, `true`) does not match: the request has no `mobile` query parameter",
            ),
        ),
        (
            "Query(`mobile`, `true`)",
            req().query("mobile=no"),
            Some("Query(`mobile`, `true`) does not match any value of query parameter `mobile`"),
        ),
        (
            "QueryRegexp(`m`, `^y`)",
            req().query("m=n"),
            Some("QueryRegexp(`m`, `^y`) does not match any value of query parameter `m`"),
        ),
        (
            "ClientIP(`10.0.0.0/8`)",
            req().ip("192.0.2.7"),
            Some("ClientIP(`10.0.0.0/8`) does not match client IP `192.0.2.7`"),
        ),
        (
            "Host(`a`) && PathPrefix(`/api`) && Method(`POST`)",
            req().at("a/web"),
            Some("PathPrefix(`/api`) does not match path `/web`"),
        ),
        (
            "Host(`a`) || Host(`b`)",
            req().host("c"),
            Some("Host(`a`) does not match host `c` and Host(`b`) does not match host `c`"),
        ),
        ("Host(`a`) || Host(`b`)", req().host("b"), None),
        (
            "(Host(`a`) && Path(`/x`)) || Method(`PUT`)",
            req().at("a/y"),
            Some(
                "Path(`/x`) does not match path `/y` and Method(`PUT`) does not match method `GET`",
            ),
        ),
        (
            "!Host(`a`)",
            req().host("a"),
            Some("`Host(`a`)` matched but the rule negates it"),
        ),
        ("!Host(`a`)", req().host("b"), None),
        (
            "!(Host(`a`) && Path(`/`))",
            req().host("a"),
            Some("`Host(`a`) && Path(`/`)` matched but the rule negates it"),
        ),
        (
            "Path(`/`) && !!Host(`b`)",
            req().host("a"),
            Some("`!Host(`b`)` matched but the rule negates it"),
        ),
        (
            r#"Header("X", "a`b")"#,
            req().header("x", "c"),
            Some(r#"Header(`X`, "a`b") does not match any value of header `X`"#),
        ),
    ];
    for (rule, r, want) in cases {
        assert_eq!(
            parse(rule).explain_mismatch(&r.facts()).as_deref(),
            *want,
            "{rule}"
        );
    }
}

#[test]
fn default_priority_counts_characters() {
    assert_eq!(default_priority(""), 0);
    assert_eq!(default_priority("Host(`a`)"), 9);
    assert_eq!(default_priority("Host(`é`)"), 9);
    assert_eq!(default_priority("Host(`a.test`) && PathPrefix(`/api`)"), 36);
    assert!(
        default_priority("Host(`a.test`) && PathPrefix(`/api`)")
            > default_priority("Host(`a.test`)")
    );
}

#[test]
fn display_is_canonical() {
    let cases = [
        ("Host(`a`)", "Host(`a`)"),
        ("  Host ( \"a\" )  ", "Host(`a`)"),
        ("Host(`a`)&&Path(`/b`)", "Host(`a`) && Path(`/b`)"),
        ("Host(`a`,`B`)", "Host(`a`, `B`)"),
        ("((Host(`a`)))", "Host(`a`)"),
        ("!(!Host(`a`))", "!!Host(`a`)"),
        ("!(Host(`a`))", "!Host(`a`)"),
        (
            "Host(`a`) && Path(`/b`) || Method(`GET`)",
            "(Host(`a`) && Path(`/b`)) || Method(`GET`)",
        ),
        (
            "Method(`GET`) || Host(`a`) && Path(`/b`) && Query(`q`)",
            "Method(`GET`) || (Host(`a`) && Path(`/b`) && Query(`q`))",
        ),
        (
            "Host(`a`) && (Path(`/b`) && Method(`GET`))",
            "Host(`a`) && (Path(`/b`) && Method(`GET`))",
        ),
        ("!(Host(`a`) || Host(`b`))", "!(Host(`a`) || Host(`b`))"),
        (r#"Header("X", "a`b")"#, r#"Header(`X`, "a`b")"#),
        (r#"Header("X", "a`\"\\")"#, r#"Header(`X`, "a`\"\\")"#),
        (r#"Header("X", "\"\\")"#, r#"Header(`X`, `"\`)"#),
        ("Query(`a`)", "Query(`a`)"),
        ("Query(`a`, ``)", "Query(`a`, ``)"),
        (
            "ClientIP(`::ffff:10.0.0.0/104`)",
            "ClientIP(`::ffff:10.0.0.0/104`)",
        ),
    ];
    for (input, canonical) in cases {
        let m = parse(input);
        assert_eq!(m.to_string(), canonical, "{input}");
        assert_eq!(parse(canonical), m, "{input}");
    }
}

#[test]
fn equality_follows_the_written_form() {
    assert_eq!(
        parse("Host(`a`) && Path(`/`)"),
        parse("(Host(\"a\")&&Path(`/`))")
    );
    assert_ne!(parse("Host(`a`)"), parse("Host(`A`)"));
    assert_ne!(
        parse("Host(`a`) && Path(`/`)"),
        parse("Path(`/`) && Host(`a`)")
    );
    assert_ne!(parse("PathRegexp(`^/a`)"), parse("PathRegexp(`^/b`)"));
    assert_ne!(parse("Query(`a`)"), parse("Query(`a`, ``)"));
}

#[test]
fn suggestion_distance() {
    assert_eq!(suggest::distance("", ""), 0);
    assert_eq!(suggest::distance("host", ""), 4);
    assert_eq!(suggest::distance("", "host"), 4);
    assert_eq!(suggest::distance("hots", "host"), 1);
    assert_eq!(suggest::distance("hst", "host"), 1);
    assert_eq!(suggest::distance("hoost", "host"), 1);
    assert_eq!(suggest::distance("kitten", "sitting"), 3);
    assert_eq!(suggest::suggest("Xyzzy", &["Host", "Path"]), None);
}

// ---- property tests ----

/// Pieces of the rule language, valid and not, for token soups.
const TOKENS: &[&str] = &[
    "Host",
    "HostRegexp",
    "Path",
    "PathPrefix",
    "PathRegexp",
    "Method",
    "Header",
    "HeaderRegexp",
    "Query",
    "QueryRegexp",
    "ClientIP",
    "Hots",
    "(",
    ")",
    ",",
    "&&",
    "||",
    "!",
    "&",
    "|",
    " ",
    "\n",
    "`a`",
    "`/x`",
    "`^[a-z]+$`",
    "`[`",
    "`10.0.0.0/8`",
    "`::1`",
    "`GET`",
    "\"q\\\"\"",
    "\"\\\\\"",
    "\"",
    "`",
    "\\",
    "é",
    "💥",
    "``",
    "`*.a`",
];

fn token_soup() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(TOKENS), 0..24).prop_map(|t| t.concat())
}

/// Exercises every public entry point on a parsed rule.
fn exercise(m: &Matcher) {
    let reqs = [
        req(),
        req()
            .at("a/x?q=1&a=%20")
            .method("POST")
            .header("x-key", "v"),
        req().host("").ip("::ffff:10.0.0.1"),
    ];
    for r in &reqs {
        let facts = r.facts();
        assert_eq!(m.matches(&facts), m.explain_mismatch(&facts).is_none());
    }
    let _ = m.exact_hosts();
    let _ = m.domains();
    let printed = m.to_string();
    assert_eq!(&parse(&printed), m, "{printed}");
}

fn check_any_input(s: &str) -> Result<(), TestCaseError> {
    match parse_rule(s) {
        Ok(m) => exercise(&m),
        Err(e) => {
            prop_assert!(e.position >= 1, "{s:?}: {e}");
            prop_assert!(e.position <= s.chars().count() + 1, "{s:?}: {e}");
        }
    }
    Ok(())
}

/// A rule tree generated for round-trip tests; leaves are canonical text.
#[derive(Debug, Clone)]
enum Tree {
    Leaf(String),
    Not(Box<Tree>),
    And(Vec<Tree>),
    Or(Vec<Tree>),
}

/// A string literal as `Display` writes it.
fn lit(s: &str) -> String {
    if s.contains('`') {
        format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
    } else {
        format!("`{s}`")
    }
}

fn leaf_text(name: &str, args: &[String]) -> String {
    let args: Vec<String> = args.iter().map(|a| lit(a)).collect();
    format!("{name}({})", args.join(", "))
}

fn leaf() -> impl Strategy<Value = String> {
    let host = prop_oneof![
        6 => "[a-zA-Z0-9]([a-zA-Z0-9-]{0,5}[a-zA-Z0-9])?(\\.[a-z]{1,4}){0,2}\\.?",
        1 => prop::sample::select(vec!["[::1]", "::1", "a.test", "A.Test."]).prop_map(str::to_owned),
    ];
    let path = "/[a-zA-Z0-9/._~-]{0,10}";
    let regex = prop::sample::select(vec![
        "^/api",
        r"^.+\.example\.com$",
        "[0-9]+",
        "a|b",
        "^(true|yes)$",
        "x`y",
        r#""\\"#,
        "",
    ]);
    let name = "[A-Za-z][A-Za-z0-9-]{0,8}";
    let value = "[ -~]{0,8}";
    let ip = prop::sample::select(vec![
        "10.0.0.0/8",
        "192.168.1.1",
        "::1",
        "2001:db8::/32",
        "::ffff:10.0.0.0/104",
        "10.1.2.3/8",
    ]);
    let method = prop::sample::select(vec!["GET", "post", "PURGE", "Delete"]);
    let key = "[a-z_][a-z0-9_.]{0,6}";
    let one = |s: String| vec![s];
    prop_oneof![
        prop::collection::vec(host, 1..4).prop_map(|h| leaf_text("Host", &h)),
        regex
            .clone()
            .prop_map(move |r| leaf_text("HostRegexp", &one(r.to_owned()))),
        prop::collection::vec(path, 1..3).prop_map(|p| leaf_text("Path", &p)),
        prop::collection::vec(path, 1..3).prop_map(|p| leaf_text("PathPrefix", &p)),
        regex
            .clone()
            .prop_map(move |r| leaf_text("PathRegexp", &one(r.to_owned()))),
        prop::collection::vec(method, 1..3).prop_map(|m| leaf_text(
            "Method",
            &m.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>()
        )),
        (name, value).prop_map(|(n, v)| leaf_text("Header", &[n, v])),
        (name, regex.clone()).prop_map(|(n, r)| leaf_text("HeaderRegexp", &[n, r.to_owned()])),
        (key, prop::option::of(value)).prop_map(|(k, v)| match v {
            Some(v) => leaf_text("Query", &[k, v]),
            None => leaf_text("Query", &[k]),
        }),
        (key, regex).prop_map(|(k, r)| leaf_text("QueryRegexp", &[k, r.to_owned()])),
        prop::collection::vec(ip, 1..3).prop_map(|i| leaf_text(
            "ClientIP",
            &i.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>()
        )),
    ]
}

fn tree() -> impl Strategy<Value = Tree> {
    leaf()
        .prop_map(Tree::Leaf)
        .prop_recursive(5, 48, 4, |inner| {
            prop_oneof![
                inner.clone().prop_map(|t| Tree::Not(Box::new(t))),
                prop::collection::vec(inner.clone(), 2..4).prop_map(Tree::And),
                prop::collection::vec(inner, 2..4).prop_map(Tree::Or),
            ]
        })
}

/// Renders a tree the way `Display` should.
fn canonical(t: &Tree, nested: bool) -> String {
    let (items, op) = match t {
        Tree::Leaf(s) => return s.clone(),
        Tree::Not(inner) => return format!("!{}", canonical(inner, true)),
        Tree::And(items) => (items, " && "),
        Tree::Or(items) => (items, " || "),
    };
    let body: Vec<String> = items.iter().map(|i| canonical(i, true)).collect();
    let body = body.join(op);
    if nested { format!("({body})") } else { body }
}

/// Renders a tree with varying whitespace and redundant parentheses, driven
/// by `noise`; the result must parse to the same matcher as the canonical form.
fn noisy(t: &Tree, nested: bool, noise: &mut impl Iterator<Item = u8>) -> String {
    let space = |n: u8| match n % 4 {
        0 => "",
        1 => " ",
        2 => "\n\t",
        _ => "  ",
    };
    let text = match t {
        Tree::Leaf(s) => s.clone(),
        Tree::Not(inner) => format!(
            "!{}{}",
            space(noise.next().unwrap_or(0)),
            noisy(inner, true, noise)
        ),
        Tree::And(items) | Tree::Or(items) => {
            let op = if matches!(t, Tree::And(_)) {
                "&&"
            } else {
                "||"
            };
            let mut out = String::new();
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    let (a, b) = (noise.next().unwrap_or(1), noise.next().unwrap_or(1));
                    out.push_str(&format!("{}{op}{}", space(a), space(b)));
                }
                out.push_str(&noisy(item, true, noise));
            }
            if nested { format!("({out})") } else { out }
        }
    };
    if noise.next().unwrap_or(0).is_multiple_of(5) {
        format!("( {text} )")
    } else {
        text
    }
}

fn small_request() -> impl Strategy<Value = Req> {
    (
        prop::sample::select(vec![
            "a.test",
            "b.test",
            "example.com",
            "",
            "A.test.",
            "[::1]",
        ]),
        prop::sample::select(vec!["/", "/api", "/api/x", "/v1/x"]),
        prop::sample::select(vec!["GET", "POST", "PURGE"]),
        prop::option::of(prop::sample::select(vec!["a=1", "mobile=true&x=%20", "q"])),
        prop::sample::select(vec!["10.1.2.3", "::1", "::ffff:10.0.0.1", "192.0.2.1"]),
    )
        .prop_map(|(host, path, method, query, ip)| {
            let mut r = req()
                .host(host)
                .path(path)
                .method(method)
                .ip(ip)
                .header("x", "y");
            r.query = query.map(str::to_owned);
            r
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_strings_never_panic(s in any::<String>()) {
        check_any_input(&s)?;
    }

    #[test]
    fn ascii_noise_never_panics(s in "[ -~\t\n]{0,64}") {
        check_any_input(&s)?;
    }

    #[test]
    fn token_soups_never_panic(s in token_soup()) {
        check_any_input(&s)?;
    }

    #[test]
    fn mangled_valid_rules_never_panic(t in tree(), cut in any::<prop::sample::Index>(), junk in any::<char>()) {
        let text = canonical(&t, false);
        let chars: Vec<char> = text.chars().collect();
        let at = cut.index(chars.len() + 1);
        let truncated: String = chars[..at].iter().collect();
        check_any_input(&truncated)?;
        let mut inserted = chars.clone();
        inserted.insert(at, junk);
        check_any_input(&inserted.into_iter().collect::<String>())?;
        if at < chars.len() {
            let mut removed = chars;
            removed.remove(at);
            check_any_input(&removed.into_iter().collect::<String>())?;
        }
    }

    #[test]
    fn generated_trees_round_trip_through_display(t in tree()) {
        let text = canonical(&t, false);
        let m = parse_rule(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        let printed = m.to_string();
        prop_assert_eq!(&printed, &text);
        let again = parse_rule(&printed).map_err(|e| TestCaseError::fail(format!("{printed}: {e}")))?;
        prop_assert_eq!(again.to_string(), printed);
        prop_assert_eq!(again, m);
    }

    #[test]
    fn whitespace_and_redundant_parentheses_do_not_change_the_tree(
        t in tree(),
        noise in prop::collection::vec(any::<u8>(), 0..64),
    ) {
        let canon = parse_rule(&canonical(&t, false)).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let text = noisy(&t, false, &mut noise.into_iter());
        let m = parse_rule(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        prop_assert_eq!(m, canon);
    }

    #[test]
    fn negation_and_explanation_agree_with_matching(t in tree(), r in small_request()) {
        let text = canonical(&t, false);
        let m = parse(&text);
        let negated = parse(&format!("!({text})"));
        let facts = r.facts();
        let matched = m.matches(&facts);
        prop_assert_eq!(negated.matches(&facts), !matched);
        prop_assert_eq!(m.explain_mismatch(&facts).is_none(), matched);
        prop_assert_eq!(negated.explain_mismatch(&facts).is_none(), !matched);
        if let Some(hosts) = m.exact_hosts()
            && matched
        {
            let host = normalize_host(&r.host).to_ascii_lowercase();
            prop_assert!(hosts.contains(&host), "{} {:?}", text, hosts);
        }
    }
}

#[test]
fn matcher_can_be_shared_between_threads() {
    fn assert_shareable<T: Send + Sync + Clone + std::fmt::Debug>() {}
    assert_shareable::<Matcher>();
    assert_shareable::<RuleError>();
    let m = parse("Host(`a`) && HeaderRegexp(`X`, `^y`) || Query(`q`)");
    let copy = m.clone();
    assert_eq!(copy, m);
    assert!(format!("{m:?}").contains("HeaderRegexp"));
}

fn conn<'a>(sni: Option<&'a str>, alpn: &'a [&'a [u8]], ip: &str) -> ConnFacts<'a> {
    ConnFacts {
        sni,
        alpn,
        client_ip: ip.parse().unwrap(),
    }
}

/// A rule, the SNI, the ALPN offer, the client's address, and whether the
/// rule takes the connection.
type ConnCase<'a> = (&'a str, Option<&'a str>, &'a [&'a [u8]], &'a str, bool);

#[test]
fn tcp_rules_match_the_client_hello_and_the_client_address() {
    let local = "127.0.0.1";
    let cases: &[ConnCase<'_>] = &[
        ("HostSNI(`*`)", None, &[], local, true),
        ("HostSNI(`*`)", Some("db.test"), &[], local, true),
        ("HostSNI(`db.test`)", Some("DB.test"), &[], local, true),
        ("HostSNI(`db.test`)", Some("db.test."), &[], local, true),
        ("HostSNI(`db.test`)", Some("web.test"), &[], local, false),
        ("HostSNI(`db.test`)", None, &[], local, false),
        // Traefik 3.7's wildcard: one whole label before the name.
        ("HostSNI(`*.db.test`)", Some("EU.db.test"), &[], local, true),
        (
            "HostSNI(`*.db.test`)",
            Some("a.eu.db.test"),
            &[],
            local,
            false,
        ),
        ("HostSNI(`*.db.test`)", Some("db.test"), &[], local, false),
        ("HostSNI(`*.db.test`)", None, &[], local, false),
        (
            "HostSNI(`a.test`, `b.test`)",
            Some("b.test"),
            &[],
            local,
            true,
        ),
        (
            "HostSNIRegexp(`^[a-z]+\\.db\\.test$`)",
            Some("eu.db.test"),
            &[],
            local,
            true,
        ),
        (
            "HostSNIRegexp(`^[a-z]+\\.db\\.test$`)",
            None,
            &[],
            local,
            false,
        ),
        (
            "ALPN(`postgresql`)",
            Some("x"),
            &[b"h2", b"postgresql"],
            local,
            true,
        ),
        ("ALPN(`postgresql`)", Some("x"), &[b"h2"], local, false),
        ("ClientIP(`127.0.0.0/8`)", None, &[], local, true),
        ("ClientIP(`10.0.0.0/8`)", None, &[], local, false),
        (
            "HostSNI(`*`) && !ClientIP(`10.0.0.0/8`)",
            None,
            &[],
            local,
            true,
        ),
        (
            "HostSNI(`db.test`) || ALPN(`x`)",
            Some("other"),
            &[b"x"],
            local,
            true,
        ),
    ];
    for (rule, sni, alpn, ip, want) in cases {
        let m = parse_tcp_rule(rule).unwrap_or_else(|e| panic!("{rule}: {e}"));
        assert_eq!(
            m.matches(&conn(*sni, alpn, ip)),
            *want,
            "{rule} with {sni:?} {alpn:?}"
        );
    }
}

#[test]
fn tcp_rules_say_what_they_need_to_decide() {
    let catch_all = parse_tcp_rule("HostSNI(`*`)").unwrap();
    assert!(catch_all.is_catch_all() && !catch_all.needs_client_hello());
    assert!(catch_all.domains().is_empty());
    let by_ip = parse_tcp_rule("ClientIP(`10.0.0.0/8`)").unwrap();
    assert!(!by_ip.is_catch_all() && !by_ip.needs_client_hello());
    let named = parse_tcp_rule("HostSNI(`DB.test`, `db2.test`) && !ALPN(`h2`)").unwrap();
    assert!(named.needs_client_hello());
    assert_eq!(named.domains(), ["db.test", "db2.test"]);
    assert_eq!(
        named.to_string(),
        "HostSNI(`DB.test`, `db2.test`) && !ALPN(`h2`)"
    );
}

#[test]
fn tcp_and_http_matchers_stay_in_their_own_rules() {
    let e = parse_tcp_rule("Host(`db.test`)").unwrap_err();
    assert_eq!(e.position, 1);
    assert!(
        e.message.contains("`Host` is an HTTP router matcher") && e.message.contains("HostSNI"),
        "{e}"
    );
    let e = parse_rule("HostSNI(`db.test`)").unwrap_err();
    assert!(e.message.contains("is a TCP router matcher"), "{e}");
    let e = parse_tcp_rule("HostSNY(`db.test`)").unwrap_err();
    assert!(e.message.contains("did you mean `HostSNI`"), "{e}");
    // ClientIP is both: no confusion to report.
    assert!(parse_rule("ClientIP(`10.0.0.1`)").is_ok());
    assert!(parse_tcp_rule("ClientIP(`10.0.0.1`)").is_ok());
}

#[test]
fn tcp_rule_arguments_are_checked() {
    for (rule, col, needle) in [
        ("HostSNI(`**.db.test`)", 9, "HostSNIRegexp"),
        ("HostSNI(`a.*.db.test`)", 9, "HostSNIRegexp"),
        ("HostSNI(`*.`)", 9, "HostSNIRegexp"),
        ("HostSNI(`db.test:5432`)", 9, "port"),
        ("HostSNI()", 1, "argument"),
        ("ALPN(``)", 6, "empty protocol"),
        ("ALPN(`acme-tls/1`)", 6, "reserved"),
        ("HostSNIRegexp(`(`)", 15, "regular expression"),
        ("", 1, "HostSNI(`example.com`)"),
    ] {
        let e = parse_tcp_rule(rule).unwrap_err();
        assert_eq!(e.position, col, "{rule}: {e}");
        assert!(e.message.contains(needle), "{rule}: {e}");
    }
}

#[test]
fn matcher_names_take_the_four_spellings_traefik_takes() {
    let canonical = parse_rule("Host(`a.test`) && PathPrefix(`/api`)")
        .unwrap()
        .to_string();
    for rule in [
        "host(`a.test`) && pathprefix(`/api`)",
        "HOST(`a.test`) && PATHPREFIX(`/api`)",
        "Host(`a.test`) && Pathprefix(`/api`)",
    ] {
        let parsed = parse_rule(rule).unwrap_or_else(|e| panic!("{rule}: {e}"));
        assert_eq!(parsed.to_string(), canonical, "{rule}");
    }
    for rule in ["hOst(`a.test`)", "PathPrefix(`/a`) && pathPrefix(`/b`)"] {
        assert!(
            parse_rule(rule).is_err(),
            "{rule} is not a spelling Traefik takes"
        );
    }
}

#[test]
fn domains_cover_their_names_and_wildcards_their_labels() {
    use crate::rule::domain_covers;
    assert!(domain_covers("a.test", "a.test"));
    assert!(domain_covers("a.test", "A.test"));
    assert!(!domain_covers("a.test", "b.a.test"));
    assert!(domain_covers("*.a.test", "b.a.test"));
    assert!(!domain_covers("*.a.test", "c.b.a.test"));
    assert!(!domain_covers("*.a.test", "a.test"));
    assert!(domain_covers("**.a.test", "c.b.a.test"));
    assert!(!domain_covers("**.a.test", "a.test"));
    assert!(!domain_covers("**.a.test", ".a.test"));
}
