//! Router rules in Traefik v3 syntax.
//!
//! A rule is a boolean expression over request matchers, for example
//! ``Host(`example.com`) && (PathPrefix(`/api`) || Header(`X-Debug`, `1`))``.
//! [`parse_rule`] turns the text into a [`Matcher`], which decides for each
//! request (described by [`RequestFacts`]) whether the router applies.
//!
//! # Syntax
//!
//! * Matchers: `Host`, `HostRegexp`, `Path`, `PathPrefix`, `PathRegexp`,
//!   `Method`, `Header`, `HeaderRegexp`, `Query`, `QueryRegexp`, `ClientIP`.
//!   Names are case-sensitive.
//! * Operators: `!` (binds tightest), then `&&`, then `||`; parentheses group.
//! * Strings are written in backticks (no escapes) or double quotes (where
//!   `\"` and `\\` are the only escapes).
//! * Whitespace may appear between any two tokens.
//!
//! `Host` takes Traefik v3's wildcards as a whole first label:
//! ``Host(`*.example.com`)`` matches one label before `example.com`
//! (`a.example.com`, not `a.b.example.com`), ``Host(`**.example.com`)``
//! one label or more; neither matches `example.com` itself. ``Host(`*`)``
//! alone matches every request, with or without a host.
//!
//! Traefik v2 let `Host`, `Path`, `PathPrefix`, `Method` and `ClientIP` take
//! several arguments; those forms are accepted and mean "any of them", e.g.
//! ``Host(`a`, `b`)`` is ``Host(`a`) || Host(`b`)``.
//!
//! A router whose `ruleSyntax` is `v2` has its rule read in Traefik v2's
//! syntax instead ([`parse_rule_in`] with [`RuleSyntax::V2`]): its
//! matchers (`Headers`, `HostHeader`, `HostRegexp` with `{name:pattern}`
//! templates, `Query(`key=value`)` …) become the v3 matchers that match
//! the same requests, so a v2 rule prints as its v3 rewrite.
//!
//! Error positions are 1-based character columns counted from the start of the
//! rule text (a rule spanning several lines is counted as one line).

pub(crate) mod host;
mod leaf;
mod lexer;
mod parser;
mod query;
mod suggest;
#[cfg(test)]
mod tests;
mod v2;
#[cfg(test)]
mod v2_tests;

use std::borrow::Cow;
use std::cell::OnceCell;
use std::fmt;
use std::net::IpAddr;

pub use host::{normalize_authority, normalize_host, without_port};
use leaf::Leaf;

/// The longest rule text accepted by [`parse_rule`], in bytes.
pub const MAX_RULE_BYTES: usize = 64 * 1024;

/// The deepest nesting of parentheses and `!` accepted by [`parse_rule`].
pub const MAX_NESTING: usize = 64;

/// Parses a rule written in Traefik v3 syntax.
///
/// Regular expressions are compiled and IP ranges parsed here, so a rule that
/// parses can be matched without further failure.
///
/// # Errors
///
/// A [`RuleError`] pointing at the first problem: a syntax error, an unknown
/// matcher, a wrong number of arguments, an invalid argument (regular
/// expression, IP range, path, host, method, header or parameter name), a rule
/// longer than [`MAX_RULE_BYTES`] or nested deeper than [`MAX_NESTING`].
pub fn parse_rule(text: &str) -> Result<Matcher, RuleError> {
    parse_rule_in(text, RuleSyntax::V3)
}

/// Parses an HTTP router's rule written in `syntax`.
///
/// # Errors
///
/// As [`parse_rule`]; in v2 a v3-only matcher (`Header`, `PathRegexp` …)
/// is an unknown matcher, with the v2 way to write it.
pub fn parse_rule_in(text: &str, syntax: RuleSyntax) -> Result<Matcher, RuleError> {
    let dialect = match syntax {
        RuleSyntax::V3 => Dialect::Http,
        RuleSyntax::V2 => Dialect::HttpV2,
    };
    parser::parse(text, dialect).map(|root| Matcher { root })
}

/// Parses a router's rule for a report that does not know the static
/// default syntax (labels read alone, the API's targets): in the syntax
/// the router names, or, when it names none, as v3 and else as v2.
///
/// # Errors
///
/// The error of the syntax the router names, or v3's when it names none
/// and neither syntax reads the rule.
pub fn parse_rule_as_written(text: &str, rule_syntax: Option<&str>) -> Result<Matcher, RuleError> {
    match RuleSyntax::from_option(rule_syntax) {
        Some(syntax) => parse_rule_in(text, syntax),
        None if rule_syntax.is_some_and(|s| !s.is_empty()) => parse_rule(text),
        None => parse_rule(text).or_else(|e| parse_rule_in(text, RuleSyntax::V2).map_err(|_| e)),
    }
}

/// Which of Traefik's rule languages a router's rule is written in
/// (Traefik's `ruleSyntax`, and the static `core.defaultRuleSyntax`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RuleSyntax {
    /// Traefik v2's matchers, deprecated in Traefik v3 and read for
    /// routers moved over unchanged.
    V2,
    /// Traefik v3's matchers, the default.
    #[default]
    V3,
}

impl RuleSyntax {
    /// The syntax named `v2` or `v3`; `None` for anything else (absent,
    /// empty or unknown).
    pub fn from_option(value: Option<&str>) -> Option<RuleSyntax> {
        match value {
            Some("v2") => Some(RuleSyntax::V2),
            Some("v3") => Some(RuleSyntax::V3),
            _ => None,
        }
    }

    /// `v2` or `v3`, as Traefik writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            RuleSyntax::V2 => "v2",
            RuleSyntax::V3 => "v3",
        }
    }
}

/// Parses a TCP router's rule: `HostSNI`, `HostSNIRegexp`, `ClientIP` and
/// `ALPN`, with the same operators and strings as HTTP rules.
///
/// # Errors
///
/// A [`RuleError`] as for [`parse_rule`]; an HTTP matcher such as `Host`
/// is refused with a sentence saying it belongs to HTTP routers.
pub fn parse_tcp_rule(text: &str) -> Result<TcpMatcher, RuleError> {
    parser::parse(text, Dialect::Tcp).map(|root| TcpMatcher { root })
}

/// Which router's rule language a text is read in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    Http,
    /// An HTTP router's rule in Traefik v2's syntax.
    HttpV2,
    Tcp,
}

/// What a TCP router's rule may look at: the ClientHello of a TLS
/// connection (nothing of it for a plain one) and the client's address.
#[derive(Debug, Clone, Copy)]
pub struct ConnFacts<'a> {
    /// The server name the client asked for, if it sent one.
    pub sni: Option<&'a str>,
    /// The protocols the client offered by ALPN.
    pub alpn: &'a [&'a [u8]],
    /// The address of the client.
    pub client_ip: IpAddr,
}

/// A parsed TCP router rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcpMatcher {
    root: Node,
}

impl TcpMatcher {
    /// Whether the rule takes the connection.
    pub fn matches(&self, conn: &ConnFacts<'_>) -> bool {
        self.root.eval(&Ctx::conn(conn))
    }

    /// Whether the rule is ``HostSNI(`*`)`` alone: every connection, with
    /// nothing to read first.
    pub fn is_catch_all(&self) -> bool {
        matches!(&self.root, Node::Leaf(leaf) if leaf.is_catch_all())
    }

    /// Whether the rule needs the TLS ClientHello: it names a server
    /// name, a pattern or a protocol (not under a negation only).
    pub fn needs_client_hello(&self) -> bool {
        self.root.needs_client_hello()
    }

    /// The server names of its `HostSNI` matchers (not `*`), lowercased:
    /// the names a certificate is needed for.
    pub fn domains(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.root.collect_domains(&mut out);
        out
    }
}

impl fmt::Display for TcpMatcher {
    /// The canonical form, as for [`Matcher`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.root.write(f, false)
    }
}

/// Whether the server name `name` is `domain`, one of the hosts
/// [`Matcher::domains`] lists, or lies under it when it is a wildcard
/// (`*.example.com`: one label more; `**.example.com`: one or more).
pub fn domain_covers(domain: &str, name: &str) -> bool {
    leaf::domain_covers(domain, name)
}

/// The priority of a TCP router that gives none: as Traefik, -1 for
/// ``HostSNI(`*`)`` alone, which then comes after every other TCP router on
/// its entry point, and the rule's length for any other rule.
pub fn tcp_default_priority(rule: &str) -> i64 {
    if parse_tcp_rule(rule).is_ok_and(|m| m.is_catch_all()) {
        -1
    } else {
        default_priority(rule)
    }
}

/// The priority a router gets when none is configured: the length of its rule
/// in characters, so that longer (usually more specific) rules are tried first.
///
/// As in Traefik, the two stars of each `**.` host do not count: a
/// ``Host(`**.example.com`)`` rule then ranks below ``Host(`*.example.com`)``
/// and below the exact hosts it covers, whatever their lengths.
pub fn default_priority(rule: &str) -> i64 {
    let length = i64::try_from(rule.chars().count()).unwrap_or(i64::MAX);
    // Most rules have no `**.`: they are not parsed again here.
    let double_wildcards = if rule.contains("**.") {
        parse_rule(rule).map_or(0, |m| m.root.double_wildcards())
    } else {
        0
    };
    length.saturating_sub(2 * double_wildcards)
}

/// What the matcher may look at; built once per request by the proxy.
#[derive(Debug, Clone, Copy)]
pub struct RequestFacts<'a> {
    /// The request method.
    pub method: &'a http::Method,
    /// The request host, lowercased, with any port removed; may be empty.
    pub host: &'a str,
    /// The request path, without the query string.
    pub path: &'a str,
    /// The raw query string without the leading `?`, if the request has one.
    pub query: Option<&'a str>,
    /// The request headers.
    pub headers: &'a http::HeaderMap,
    /// The address of the client.
    pub client_ip: IpAddr,
}

/// A rule that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("rule error at column {position}: {message}")]
pub struct RuleError {
    /// The 1-based character column where the problem was found.
    pub position: usize,
    /// What was wrong, and usually what was expected instead.
    pub message: String,
}

impl RuleError {
    fn new(position: usize, message: impl Into<String>) -> Self {
        RuleError {
            position,
            message: message.into(),
        }
    }
}

/// A parsed rule, ready to be matched against requests.
///
/// Two matchers are equal when they were written the same way, up to
/// whitespace, redundant parentheses and quoting style.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matcher {
    root: Node,
}

/// A node of the rule tree. `And` and `Or` always have at least two children;
/// a parenthesized group of the same operator stays a separate child so that
/// the printed form mirrors the written one.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    Leaf(Leaf),
    Not(Box<Node>),
    And(Vec<Node>),
    Or(Vec<Node>),
}

/// Per-request evaluation state: the facts plus the query string, parsed only
/// if a query matcher actually runs.
struct Ctx<'r, 'a> {
    facts: Facts<'r, 'a>,
    query: OnceCell<query::Pairs<'a>>,
}

/// What is matched: a request, or a connection before any request.
#[derive(Clone, Copy)]
enum Facts<'r, 'a> {
    Http(&'r RequestFacts<'a>),
    Conn(&'r ConnFacts<'a>),
}

impl<'r, 'a> Ctx<'r, 'a> {
    fn new(req: &'r RequestFacts<'a>) -> Self {
        Ctx {
            facts: Facts::Http(req),
            query: OnceCell::new(),
        }
    }

    fn conn(conn: &'r ConnFacts<'a>) -> Self {
        Ctx {
            facts: Facts::Conn(conn),
            query: OnceCell::new(),
        }
    }

    fn query_pairs(&self) -> &[(Cow<'a, str>, Cow<'a, str>)] {
        let query = match self.facts {
            Facts::Http(req) => req.query.unwrap_or(""),
            Facts::Conn(_) => "",
        };
        self.query.get_or_init(|| query::parse(query))
    }
}

impl Matcher {
    /// Whether the rule matches the request.
    pub fn matches(&self, req: &RequestFacts<'_>) -> bool {
        self.root.eval(&Ctx::new(req))
    }

    /// A set of lowercased hosts such that the rule can only match when the
    /// request's host is one of them, or `None` when no such set is known.
    ///
    /// ``Host(`a`)`` gives `{a}`; `A && B` the smaller known set of either
    /// side; `A || B` the union when both sides are known. Negations,
    /// wildcard hosts, `HostRegexp` and all other matchers give `None`. Used to build a host
    /// index in front of per-router matching; look the request's host up in it
    /// through [`normalize_host`].
    pub fn exact_hosts(&self) -> Option<Vec<String>> {
        self.root.exact_hosts()
    }

    /// Every host named in a `Host` matcher anywhere in the rule (except under
    /// a negation), lowercased, without a trailing dot, deduplicated, in order
    /// of appearance: the names a certificate resolver may order certificates
    /// for. Wildcards keep their `*.` or `**.` (`*.example.com`).
    pub fn domains(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.root.collect_domains(&mut out);
        out
    }

    /// The hosts and paths the rule routes, read from its `Host`,
    /// `HostRegexp`, `Path` and `PathPrefix` matchers, so that nothing
    /// outside this module has to read rule text to find them.
    ///
    /// Matchers under a negation are left out: ``!Host(`a`)`` does not
    /// route `a`. Hosts are normalized as in [`Matcher::domains`]; patterns
    /// and paths are listed as written. Each list keeps the order of
    /// appearance, without duplicates.
    pub fn targets(&self) -> RuleTargets {
        let mut out = RuleTargets::default();
        self.root.collect_targets(&mut out);
        out
    }

    /// Why this rule does not match the request: `None` if it matches,
    /// otherwise a short sentence naming the first failing matcher, such as
    /// ``PathPrefix(`/api`) does not match path `/web` ``.
    ///
    /// For `||` every failing alternative is reported, joined with " and ";
    /// for `!X` the sentence says that `X` matched but the rule negates it.
    pub fn explain_mismatch(&self, req: &RequestFacts<'_>) -> Option<String> {
        self.root.explain(&Ctx::new(req))
    }
}

impl fmt::Display for Matcher {
    /// Writes the canonical form of the rule: backtick strings (double quotes
    /// only for values containing a backtick), single spaces around operators
    /// and parentheses around every nested `&&` or `||` group. The result
    /// parses back to an equal matcher.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.root.write(f, false)
    }
}

/// What [`Matcher::targets`] finds in a rule.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuleTargets {
    /// Values of `Host` matchers, lowercased, without a trailing dot
    /// (wildcards with their `*.` or `**.`).
    pub hosts: Vec<String>,
    /// Patterns of `HostRegexp` matchers.
    pub host_regexps: Vec<String>,
    /// Values of `Path` matchers.
    pub paths: Vec<String>,
    /// Values of `PathPrefix` matchers.
    pub path_prefixes: Vec<String>,
}

/// Displays a node as a complete rule, without outer parentheses.
struct Bare<'n>(&'n Node);

impl fmt::Display for Bare<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.write(f, false)
    }
}

impl Node {
    fn eval(&self, ctx: &Ctx<'_, '_>) -> bool {
        match self {
            Node::Leaf(leaf) => leaf.eval(ctx),
            Node::Not(inner) => !inner.eval(ctx),
            Node::And(items) => items.iter().all(|n| n.eval(ctx)),
            Node::Or(items) => items.iter().any(|n| n.eval(ctx)),
        }
    }

    fn explain(&self, ctx: &Ctx<'_, '_>) -> Option<String> {
        match self {
            Node::Leaf(leaf) => {
                if leaf.eval(ctx) {
                    None
                } else {
                    Some(leaf.mismatch(ctx))
                }
            }
            Node::Not(inner) => inner
                .eval(ctx)
                .then(|| format!("`{}` matched but the rule negates it", Bare(inner))),
            Node::And(items) => items.iter().find_map(|n| n.explain(ctx)),
            Node::Or(items) => {
                let mut reasons = Vec::with_capacity(items.len());
                for item in items {
                    reasons.push(item.explain(ctx)?);
                }
                Some(reasons.join(" and "))
            }
        }
    }

    fn exact_hosts(&self) -> Option<Vec<String>> {
        match self {
            Node::Leaf(leaf) => leaf.exact_hosts(),
            Node::Not(_) => None,
            Node::And(items) => items
                .iter()
                .filter_map(Node::exact_hosts)
                .min_by_key(Vec::len),
            Node::Or(items) => {
                let mut union: Vec<String> = Vec::new();
                for item in items {
                    for host in item.exact_hosts()? {
                        if !union.contains(&host) {
                            union.push(host);
                        }
                    }
                }
                Some(union)
            }
        }
    }

    fn collect_domains(&self, out: &mut Vec<String>) {
        match self {
            Node::Leaf(leaf) => {
                for host in leaf.hosts() {
                    if !out.iter().any(|h| h == host) {
                        out.push(host.to_owned());
                    }
                }
            }
            Node::Not(_) => {}
            Node::And(items) | Node::Or(items) => {
                for item in items {
                    item.collect_domains(out);
                }
            }
        }
    }

    fn needs_client_hello(&self) -> bool {
        match self {
            Node::Leaf(leaf) => leaf.needs_client_hello(),
            Node::Not(inner) => inner.needs_client_hello(),
            Node::And(items) | Node::Or(items) => items.iter().any(Node::needs_client_hello),
        }
    }

    /// How many `**.` hosts the rule's `Host` matchers name.
    fn double_wildcards(&self) -> i64 {
        match self {
            Node::Leaf(leaf) => leaf.double_wildcards(),
            Node::Not(inner) => inner.double_wildcards(),
            Node::And(items) | Node::Or(items) => items.iter().map(Node::double_wildcards).sum(),
        }
    }

    fn collect_targets(&self, out: &mut RuleTargets) {
        match self {
            Node::Leaf(leaf) => leaf.collect_targets(out),
            Node::Not(_) => {}
            Node::And(items) | Node::Or(items) => {
                for item in items {
                    item.collect_targets(out);
                }
            }
        }
    }

    /// Writes the node; `nested` asks for parentheses around `&&`/`||` groups.
    fn write(&self, f: &mut fmt::Formatter<'_>, nested: bool) -> fmt::Result {
        let (items, op) = match self {
            Node::Leaf(leaf) => return write!(f, "{leaf}"),
            Node::Not(inner) => {
                f.write_str("!")?;
                return inner.write(f, true);
            }
            Node::And(items) => (items, " && "),
            Node::Or(items) => (items, " || "),
        };
        if nested {
            f.write_str("(")?;
        }
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                f.write_str(op)?;
            }
            item.write(f, true)?;
        }
        if nested {
            f.write_str(")")?;
        }
        Ok(())
    }
}
