//! Rules in Traefik v2's syntax: what each matcher accepts, refuses and
//! matches, following Traefik v3's v2 parser.

use http::{HeaderMap, HeaderName, HeaderValue, Method};

use super::*;

/// A request `host/path?query` with `method`, `headers` and client `ip`.
struct Req {
    method: Method,
    host: String,
    path: String,
    query: Option<String>,
    headers: HeaderMap,
    ip: IpAddr,
}

fn req(url: &str) -> Req {
    let (rest, query) = match url.split_once('?') {
        Some((rest, q)) => (rest, Some(q.to_owned())),
        None => (url, None),
    };
    let (host, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, "/"),
    };
    Req {
        method: Method::GET,
        host: host.to_ascii_lowercase(),
        path: path.to_owned(),
        query,
        headers: HeaderMap::new(),
        ip: "192.0.2.1".parse().unwrap(),
    }
}

impl Req {
    fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.append(
            HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_str(value).unwrap(),
        );
        self
    }
    fn method(mut self, method: &str) -> Self {
        self.method = Method::from_bytes(method.as_bytes()).unwrap();
        self
    }
    fn ip(mut self, ip: &str) -> Self {
        self.ip = ip.parse().unwrap();
        self
    }
    fn matched_by(&self, m: &Matcher) -> bool {
        m.matches(&RequestFacts {
            method: &self.method,
            host: &self.host,
            path: &self.path,
            query: self.query.as_deref(),
            headers: &self.headers,
            client_ip: self.ip,
        })
    }
}

fn v2(rule: &str) -> Matcher {
    parse_rule_in(rule, RuleSyntax::V2).unwrap_or_else(|e| panic!("{rule}: {e}"))
}

/// (rule, request, whether it matches)
#[test]
fn v2_matchers_match_as_in_traefik() {
    let cases: Vec<(&str, Req, bool)> = vec![
        // Host and HostHeader: exact, without case, trailing dot ignored.
        (
            "Host(`example.com`, `example.org`)",
            req("example.org/x"),
            true,
        ),
        ("Host(`example.com`)", req("EXAMPLE.COM/path"), true),
        ("Host(`example.com.`)", req("example.com/"), true),
        ("Host(`example.com`)", req("example.com./"), true),
        ("Host(`example.com`)", req("a.example.com/"), false),
        ("HostHeader(`localhost`)", req("localhost/foo"), true),
        ("HostHeader(`localhost`)", req("bar/foo"), false),
        // HostRegexp: templates over the whole host, without case.
        (
            "HostRegexp(`example.com`, `example.org`)",
            req("example.org/"),
            true,
        ),
        ("HostRegexp(`example.com`)", req("exampleXcom/"), false),
        (
            "HostRegexp(`{sub:[a-z]+}.example.com`)",
            req("app.example.com/"),
            true,
        ),
        (
            "HostRegexp(`{sub:[a-z]+}.example.com`)",
            req("a.b.example.com/"),
            false,
        ),
        (
            "HostRegexp(`{sub}.example.com`)",
            req("app.example.com/"),
            true,
        ),
        (
            "HostRegexp(`{sub}.example.com`)",
            req("a.b.example.com/"),
            false,
        ),
        (
            "HostRegexp(`{subdomain:(foo\\.)?bar\\.com}`)",
            req("foo.bar.com/"),
            true,
        ),
        (
            "HostRegexp(`{subdomain:(foo\\.)?bar\\.com}`)",
            req("bar.com/"),
            true,
        ),
        (
            "HostRegexp(`{subdomain:(foo\\.)?bar\\.com}`)",
            req("fooubar.com/"),
            false,
        ),
        (
            "HostRegexp(`{dummy:[a-z-]+\\.bar\\.com}`)",
            req("FOO.bar.com/"),
            true,
        ),
        ("HostRegexp(`foo.bar.com`)", req("FOO.bar.com/"), true),
        // A regular expression outside braces is text to match.
        ("HostRegexp(`^[a-z]+\\.com$`)", req("example.com/"), false),
        ("HostRegexp(`(example.com`)", req("example.com/"), false),
        // Path: whole path; PathPrefix: its start; templates in both.
        ("Path(`/css`, `/js`)", req("x/js"), true),
        ("Path(`/css`)", req("x/css/"), false),
        (
            "Path(`/css{path:(/.*)?}`)",
            req("x/css/components/a.css"),
            true,
        ),
        ("Path(`/css{path:(/.*)?}`)", req("x/css.css"), false),
        ("Path(`/user/{id}`)", req("x/user/42"), true),
        ("Path(`/user/{id}`)", req("x/user/42/edit"), false),
        ("Path(`/user/{id:[0-9]+}`)", req("x/user/abc"), false),
        ("PathPrefix(`/css`, `/js`)", req("x/js/main.js"), true),
        ("PathPrefix(`/css`)", req("x/html"), false),
        (
            "PathPrefix(`/css-{name:[0-9]?}`)",
            req("x/css-333333/a.css"),
            true,
        ),
        ("PathPrefix(`/css-{name:[0-9]?}`)", req("x/css.css"), false),
        ("PathPrefix(`/api/{version}/`)", req("x/api/v1/users"), true),
        ("PathPrefix(`/api/{version}/`)", req("x/api/users"), false),
        // Method: several, written in any case, matched in capitals.
        ("Method(`GET`, `POST`)", req("x/").method("POST"), true),
        ("Method(`get`)", req("x/"), true),
        ("Method(`GET`)", req("x/").method("PUT"), false),
        // Headers: name/value pairs, every one must match one value.
        (
            "Headers(`X-Forwarded-Proto`, `https`)",
            req("x/").header("x-forwarded-proto", "https"),
            true,
        ),
        (
            "Headers(`X-Forwarded-Proto`, `https`)",
            req("x/")
                .header("X-Forwarded-Proto", "http")
                .header("X-Forwarded-Proto", "https"),
            true,
        ),
        (
            "Headers(`X-Forwarded-Proto`, `https`)",
            req("x/").header("X-Forwarded-Host", "example.com"),
            false,
        ),
        (
            "Headers(`A`, `1`, `B`, `2`)",
            req("x/").header("A", "1").header("B", "2"),
            true,
        ),
        (
            "Headers(`A`, `1`, `B`, `2`)",
            req("x/").header("A", "1"),
            false,
        ),
        // HeadersRegexp: the pattern found anywhere in a value.
        (
            "HeadersRegexp(`X-Forwarded-Proto`, `^https?$`)",
            req("x/").header("X-Forwarded-Proto", "http"),
            true,
        ),
        (
            "HeadersRegexp(`X-Forwarded-Proto`, `^https?$`)",
            req("x/").header("X-Forwarded-Proto", "HTTPS"),
            false,
        ),
        (
            "HeadersRegexp(`Content-Type`, `application/(text|json)`)",
            req("x/").header("Content-Type", "application/json; charset=utf-8"),
            true,
        ),
        // Query: key=value pairs, all required.
        (
            "Query(`foo=bar`, `bar=baz`)",
            req("x/foo?foo=bar&bar=baz"),
            true,
        ),
        ("Query(`foo=bar`, `bar=baz`)", req("x/foo?bar=baz"), false),
        ("Query(`foo=b=ar`)", req("x/?foo=b=ar"), true),
        ("Query(`foo=b=ar`)", req("x/?foo=bar"), false),
        ("Query(`foo`, `bar`)", req("x/?foo=bar"), true),
        ("Query(`mobile=`)", req("x/?mobile=yes"), true),
        ("Query(`mobile=`)", req("x/?other=yes"), false),
        ("Query(`id={id:[0-9]+}`)", req("x/?id=42"), true),
        ("Query(`id={id:[0-9]+}`)", req("x/?id=4x2"), false),
        // ClientIP: several addresses and ranges.
        (
            "ClientIP(`127.0.0.1`, `192.168.1.0/24`)",
            req("x/").ip("192.168.1.7"),
            true,
        ),
        ("ClientIP(`127.0.0.1`)", req("x/").ip("192.168.1.1"), false),
        // Operators, and the spellings Traefik accepts for names.
        (
            "Host(`tchouk`) || Host(`pouet`) && Path(`/powpow`)",
            req("pouet/toto"),
            false,
        ),
        (
            "!(Host(`tchouk`, `pouet`) && Path(`/powpow`, `/titi`))",
            req("plopi/a"),
            true,
        ),
        (
            "(HOST(`tchouk`) && PATHPREFIX(`/titi`))",
            req("tchouk/titi"),
            true,
        ),
        (
            "(host(`tchouk`) && pathprefix(`/titi`))",
            req("tchouk/titi"),
            true,
        ),
        (
            "(Host(`tchouk`) && Pathprefix(`/titi`))",
            req("tchouk/titi"),
            true,
        ),
    ];
    for (rule, request, want) in cases {
        let matcher = v2(rule);
        assert_eq!(
            request.matched_by(&matcher),
            want,
            "{rule} on {}{}?{:?} (read as `{matcher}`)",
            request.host,
            request.path,
            request.query
        );
    }
}

/// (rule, a piece of the error message)
#[test]
fn v2_rules_traefik_refuses_are_refused_with_a_reason() {
    let cases = [
        ("Host()", "needs at least one argument"),
        ("Host(``)", "empty argument in `Host`"),
        ("Host(`🦭.com`)", "punycode"),
        ("Host(`*.example.com`)", "HostRegexp(`{sub:"),
        ("HostRegexp(`🦭.com`)", "punycode"),
        ("HostRegexp(`{test`)", "unbalanced braces"),
        ("HostRegexp(`{:[a-z]+}.com`)", "needs a name"),
        (
            "HostRegexp(`{sub:(}.com`)",
            "invalid pattern in `HostRegexp`",
        ),
        ("Path(`css`)", "must start with `/`"),
        ("PathPrefix(`titi`)", "must start with `/`"),
        ("Path(``, `/titi`)", "empty argument"),
        ("Path(`/a}`)", "unbalanced braces"),
        ("Method(``)", "empty argument"),
        (
            "Headers(`X-Forwarded-Host`)",
            "takes a header name and a value",
        ),
        ("Headers(`X-Forwarded-Host`, ``)", "empty argument"),
        (
            "Headers(`X-Forwarded-Host`, `a`, `b`)",
            "3 arguments were given",
        ),
        (
            "HeadersRegexp(`X-Forwarded-Host`, `(example.com`)",
            "invalid regular expression",
        ),
        ("Query(`titi`)", "takes `key=value` arguments"),
        ("Query(`titi={test`)", "unbalanced braces"),
        ("ClientIP(`invalid`)", "invalid IP address"),
        ("Header(`A`, `b`)", "v2 writes Headers"),
        ("PathRegexp(`^/a`)", "v2 writes Path(`{name:pattern}`)"),
        ("Hots(`a`)", "did you mean `Host`?"),
        ("Host(tchouk)", "must be quoted"),
    ];
    for (rule, want) in cases {
        let err = parse_rule_in(rule, RuleSyntax::V2).expect_err(rule);
        assert!(
            err.message.contains(want),
            "{rule}: expected {want:?} in {:?}",
            err.message
        );
    }
}

#[test]
fn v2_rules_print_as_their_v3_rewrite() {
    let cases = [
        ("HostHeader(`a.test`)", "Host(`a.test`)"),
        (
            "Headers(`A`, `1`, `B`, `2`)",
            "Header(`A`, `1`) && Header(`B`, `2`)",
        ),
        ("Query(`mobile=true`)", "Query(`mobile`, `true`)"),
        ("Query(`mobile=`)", "Query(`mobile`)"),
        (
            "HostRegexp(`{sub:[a-z]+}.example.com`)",
            "HostRegexp(`(?i)^([a-z]+)\\.example\\.com$`)",
        ),
        ("PathPrefix(`/api/{v}`)", "PathRegexp(`^/api/([^/]+)`)"),
        ("Method(`get`)", "Method(`GET`)"),
    ];
    for (rule, want) in cases {
        let matcher = v2(rule);
        assert_eq!(matcher.to_string(), want, "{rule}");
        // The rewrite is a v3 rule that reads back to the same matcher.
        assert_eq!(parse_rule(want).as_ref(), Ok(&matcher), "{want}");
    }
}

#[test]
fn a_v2_rule_keeps_its_hosts_for_the_index_and_certificates() {
    let m = v2("Host(`a.test`, `b.test`) && PathPrefix(`/api`)");
    assert_eq!(
        m.exact_hosts(),
        Some(vec!["a.test".into(), "b.test".into()])
    );
    assert_eq!(m.domains(), vec!["a.test", "b.test"]);
}

#[test]
fn a_router_without_syntax_is_read_in_whichever_syntax_reads_it() {
    assert!(parse_rule_as_written("Headers(`A`, `1`)", None).is_ok());
    assert!(parse_rule_as_written("Header(`A`, `1`)", None).is_ok());
    let err = parse_rule_as_written("Headers(`A`, `1`)", Some("v3")).unwrap_err();
    assert!(err.message.contains("did you mean `Header`?"), "{err}");
    assert!(parse_rule_as_written("Header(`A`, `1`)", Some("v2")).is_err());
    // An unknown syntax is read as v3, as Traefik does.
    assert!(parse_rule_as_written("Headers(`A`, `1`)", Some("v4")).is_err());
}
