//! The individual matchers: argument checking, matching, explanation and
//! printing.

use std::fmt::{self, Write as _};
use std::net::{IpAddr, Ipv6Addr};

use http::HeaderName;
use ipnet::{IpNet, Ipv4Net};
use regex::Regex;

use super::{ConnFacts, Ctx, Dialect, Facts, RuleError, normalize_host, suggest};

/// Which matcher a name refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Host,
    HostRegexp,
    Path,
    PathPrefix,
    PathRegexp,
    Method,
    Header,
    HeaderRegexp,
    Query,
    QueryRegexp,
    ClientIp,
    HostSni,
    HostSniRegexp,
    Alpn,
}

/// The matchers of TCP routers' rules.
const TCP_KINDS: [(&str, Kind); 4] = [
    ("HostSNI", Kind::HostSni),
    ("HostSNIRegexp", Kind::HostSniRegexp),
    ("ClientIP", Kind::ClientIp),
    ("ALPN", Kind::Alpn),
];

/// The matchers of HTTP routers' rules.
const KINDS: [(&str, Kind); 11] = [
    ("Host", Kind::Host),
    ("HostRegexp", Kind::HostRegexp),
    ("Path", Kind::Path),
    ("PathPrefix", Kind::PathPrefix),
    ("PathRegexp", Kind::PathRegexp),
    ("Method", Kind::Method),
    ("Header", Kind::Header),
    ("HeaderRegexp", Kind::HeaderRegexp),
    ("Query", Kind::Query),
    ("QueryRegexp", Kind::QueryRegexp),
    ("ClientIP", Kind::ClientIp),
];

/// The matchers of a dialect.
fn kinds(dialect: Dialect) -> &'static [(&'static str, Kind)] {
    match dialect {
        Dialect::Http | Dialect::HttpV2 => &KINDS,
        Dialect::Tcp => &TCP_KINDS,
    }
}

/// Finds the matcher of this name, spelt as Traefik accepts it: as
/// written in its documentation, in lower case, in upper case, or in lower
/// case with a capital first letter.
pub(super) fn lookup(name: &str, dialect: Dialect) -> Option<Kind> {
    kinds(dialect)
        .iter()
        .find(|(n, _)| spellings(n).any(|s| s == name))
        .map(|(_, k)| *k)
}

/// `PathPrefix`, `pathprefix`, `PATHPREFIX` and `Pathprefix`.
pub(super) fn spellings(canonical: &str) -> impl Iterator<Item = String> {
    let lower = canonical.to_ascii_lowercase();
    let mut capitalised = lower.clone();
    if let Some(first) = capitalised.get_mut(..1) {
        first.make_ascii_uppercase();
    }
    [
        canonical.to_owned(),
        canonical.to_ascii_uppercase(),
        lower,
        capitalised,
    ]
    .into_iter()
}

/// The error message for a name that is not a matcher.
pub(super) fn unknown_matcher_message(name: &str, dialect: Dialect) -> String {
    let names: Vec<&str> = kinds(dialect).iter().map(|(n, _)| *n).collect();
    let advice = match dialect {
        Dialect::Http | Dialect::HttpV2 => suggest::known_mistake(name).map(str::to_owned),
        Dialect::Tcp if lookup(name, Dialect::Http).is_some() => Some(format!(
            "`{name}` is an HTTP router matcher; TCP rules use {}",
            names.join(", ")
        )),
        Dialect::Tcp => None,
    };
    if let Some(advice) = advice {
        return format!("unknown matcher `{name}`; {advice}");
    }
    match suggest::suggest(name, &names) {
        Some(hint) => format!("unknown matcher `{name}`; {hint}"),
        None => format!(
            "unknown matcher `{name}`; the matchers are {}",
            names.join(", ")
        ),
    }
}

impl Kind {
    fn name(self) -> &'static str {
        KINDS
            .iter()
            .chain(TCP_KINDS.iter())
            .find(|(_, k)| *k == self)
            .map_or("?", |(n, _)| *n)
    }

    /// Minimum and maximum argument counts (`None`: no maximum, the Traefik v2
    /// "any of these" form) and what the arguments are.
    fn arity(self) -> (usize, Option<usize>, &'static str) {
        match self {
            Kind::Host => (1, None, "host names"),
            Kind::HostRegexp | Kind::PathRegexp => (1, Some(1), "a regular expression"),
            Kind::Path => (1, None, "paths"),
            Kind::PathPrefix => (1, None, "path prefixes"),
            Kind::Method => (1, None, "HTTP methods"),
            Kind::Header => (2, Some(2), "a header name and a value"),
            Kind::HeaderRegexp => (2, Some(2), "a header name and a regular expression"),
            Kind::Query => (1, Some(2), "a parameter name and optionally a value"),
            Kind::QueryRegexp => (2, Some(2), "a parameter name and a regular expression"),
            Kind::ClientIp => (1, None, "IP addresses or CIDR ranges"),
            Kind::HostSni => (1, None, "server names"),
            Kind::HostSniRegexp => (1, Some(1), "a regular expression"),
            Kind::Alpn => (1, None, "ALPN protocol names"),
        }
    }
}

/// A string argument and the column of its opening quote.
#[derive(Debug)]
pub(super) struct Arg {
    pub value: String,
    pub col: usize,
}

/// A compiled regular expression; two are equal when written identically.
#[derive(Debug, Clone)]
pub(super) struct Pattern(pub(super) Regex);

impl PartialEq for Pattern {
    fn eq(&self, other: &Self) -> bool {
        self.0.as_str() == other.0.as_str()
    }
}

impl Eq for Pattern {}

/// A host as written and in the form compared with requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct HostArg {
    written: String,
    /// Lowercased, without trailing dot or IPv6 brackets; a wildcard keeps
    /// its `*.` or `**.`.
    norm: String,
    pub(super) wildcard: Wildcard,
}

/// Traefik v3's wildcard forms of `Host`: a whole first label only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wildcard {
    /// A plain name.
    None,
    /// `*.example.com`: exactly one label before `example.com`.
    OneLabel,
    /// `**.example.com`: one label or more before `example.com`.
    AnyDepth,
    /// `*` alone: every request, with a host or without (as Traefik's
    /// `HostSNI(`*`)`).
    Every,
}

impl Wildcard {
    /// The wildcard a written host starts with, and the rest of it.
    fn split(host: &str) -> (Self, &str) {
        if let Some(rest) = host.strip_prefix("**.") {
            (Wildcard::AnyDepth, rest)
        } else if let Some(rest) = host.strip_prefix("*.") {
            (Wildcard::OneLabel, rest)
        } else {
            (Wildcard::None, host)
        }
    }
}

impl HostArg {
    /// Whether `host` (without port, trailing dot or brackets) is this one.
    fn matches(&self, host: &str) -> bool {
        match self.wildcard {
            Wildcard::None => self.norm.eq_ignore_ascii_case(host),
            Wildcard::Every => true,
            Wildcard::OneLabel => self.labels_before(host).is_some_and(|l| !l.contains('.')),
            Wildcard::AnyDepth => self.labels_before(host).is_some(),
        }
    }

    /// Whether `host` lies deeper under this `*.` name than its one label
    /// (for explanations).
    fn one_label_too_few(&self, host: &str) -> bool {
        self.wildcard == Wildcard::OneLabel
            && self.labels_before(host).is_some_and(|l| l.contains('.'))
    }

    /// For a wildcard `*.suffix` or `**.suffix`: the labels of `host`
    /// before `.suffix`, when there is at least one and none is empty.
    fn labels_before<'h>(&self, host: &'h str) -> Option<&'h str> {
        labels_before(Wildcard::split(&self.norm).1, host)
    }
}

/// The labels of `host` before `.suffix`, when there is at least one and
/// none is empty.
fn labels_before<'h>(suffix: &str, host: &'h str) -> Option<&'h str> {
    let cut = host.len().checked_sub(suffix.len() + 1)?;
    let (labels, rest) = (host.get(..cut)?, host.get(cut..)?);
    let under = rest
        .strip_prefix('.')
        .is_some_and(|r| r.eq_ignore_ascii_case(suffix));
    (under && !labels.split('.').any(str::is_empty)).then_some(labels)
}

/// Whether `name` is `domain`, a host as `Matcher::domains` lists it
/// (lowercased, wildcards kept), or lies under its wildcard.
pub(super) fn domain_covers(domain: &str, name: &str) -> bool {
    match Wildcard::split(domain) {
        (Wildcard::OneLabel, suffix) => {
            labels_before(suffix, name).is_some_and(|l| !l.contains('.'))
        }
        (Wildcard::AnyDepth, suffix) => labels_before(suffix, name).is_some(),
        (_, plain) => plain.eq_ignore_ascii_case(name),
    }
}

/// A header name as written and parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct HeaderArg {
    written: String,
    name: HeaderName,
}

/// An IP address or range as written and parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct IpArg {
    written: String,
    net: IpNet,
}

/// One matcher with validated, preprocessed arguments. Variants holding a
/// `Vec` match when any element matches (the Traefik v2 multi-argument form).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Leaf {
    Host(Vec<HostArg>),
    HostRegexp(Pattern),
    Path(Vec<String>),
    PathPrefix(Vec<String>),
    PathRegexp(Pattern),
    Method(Vec<String>),
    Header { name: HeaderArg, value: String },
    HeaderRegexp { name: HeaderArg, pattern: Pattern },
    Query { key: String, value: Option<String> },
    QueryRegexp { key: String, pattern: Pattern },
    ClientIp(Vec<IpArg>),
    HostSni(Vec<HostArg>),
    HostSniRegexp(Pattern),
    Alpn(Vec<String>),
}

/// Checks the arguments of a matcher and builds it.
pub(super) fn build(kind: Kind, name_col: usize, args: Vec<Arg>) -> Result<Leaf, RuleError> {
    check_arity(kind, name_col, args.len())?;
    let mut args = args.into_iter();
    // `check_arity` guarantees the count, so a missing argument cannot
    // happen; reporting it as an error keeps this path free of panics.
    let mut take = || {
        args.next().ok_or_else(|| {
            RuleError::new(name_col, format!("missing argument for `{}`", kind.name()))
        })
    };
    let leaf = match kind {
        Kind::Host => Leaf::Host(collect(take, host)?),
        Kind::HostRegexp => Leaf::HostRegexp(pattern(kind, &take()?)?),
        Kind::Path => Leaf::Path(collect(take, |a| path(kind, a))?),
        Kind::PathPrefix => Leaf::PathPrefix(collect(take, |a| path(kind, a))?),
        Kind::PathRegexp => Leaf::PathRegexp(pattern(kind, &take()?)?),
        Kind::Method => Leaf::Method(collect(take, method)?),
        Kind::Header => Leaf::Header {
            name: header_name(kind, take()?)?,
            value: take()?.value,
        },
        Kind::HeaderRegexp => Leaf::HeaderRegexp {
            name: header_name(kind, take()?)?,
            pattern: pattern(kind, &take()?)?,
        },
        Kind::Query => {
            let key = take()?;
            let value = take().ok().map(|a| a.value);
            Leaf::Query {
                key: query_key(kind, key, value.is_none())?,
                value,
            }
        }
        Kind::QueryRegexp => Leaf::QueryRegexp {
            key: query_key(kind, take()?, false)?,
            pattern: pattern(kind, &take()?)?,
        },
        Kind::ClientIp => Leaf::ClientIp(collect(take, client_ip)?),
        Kind::HostSni => Leaf::HostSni(collect(take, server_name)?),
        Kind::HostSniRegexp => Leaf::HostSniRegexp(pattern(kind, &take()?)?),
        Kind::Alpn => Leaf::Alpn(collect(take, alpn)?),
    };
    Ok(leaf)
}

/// Converts every remaining argument with `convert`.
fn collect<T>(
    mut take: impl FnMut() -> Result<Arg, RuleError>,
    mut convert: impl FnMut(Arg) -> Result<T, RuleError>,
) -> Result<Vec<T>, RuleError> {
    let mut out = Vec::new();
    while let Ok(arg) = take() {
        out.push(convert(arg)?);
    }
    Ok(out)
}

fn check_arity(kind: Kind, name_col: usize, got: usize) -> Result<(), RuleError> {
    let (min, max, what) = kind.arity();
    if got >= min && max.is_none_or(|max| got <= max) {
        return Ok(());
    }
    let expected = match max {
        None => format!("at least {min} argument{} ({what})", plural(min)),
        Some(max) if max == min => format!("{min} argument{} ({what})", plural(min)),
        Some(max) => format!("{min} to {max} arguments ({what})"),
    };
    let given = match got {
        0 => "none were given".to_owned(),
        1 => "1 was given".to_owned(),
        n => format!("{n} were given"),
    };
    let hint = if max == Some(1) && got > 1 {
        "; to accept several, combine matchers with `||`"
    } else {
        ""
    };
    Err(RuleError::new(
        name_col,
        format!("`{}` takes {expected}, but {given}{hint}", kind.name()),
    ))
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// A `HostSNI` argument: a server name, `*.example.com` for one label
/// before a name (Traefik 3.7), or `*` for every connection. Other
/// patterns go to `HostSNIRegexp`, as in Traefik.
fn server_name(arg: Arg) -> Result<HostArg, RuleError> {
    let v = arg.value.as_str();
    let after_wildcard = v.strip_prefix("*.").unwrap_or(v);
    if v != "*" && (after_wildcard.contains('*') || after_wildcard.is_empty()) {
        return Err(RuleError::new(
            arg.col,
            format!(
                "`*` in server name `{v}`: `HostSNI` takes a name, `*.` and a name \
                 (one label), or `*` alone; for other patterns use HostSNIRegexp"
            ),
        ));
    }
    if v.contains(':') && v.parse::<Ipv6Addr>().is_err() {
        return Err(RuleError::new(
            arg.col,
            format!("server name `{v}` includes a port; `HostSNI` matches the name alone"),
        ));
    }
    host(arg)
}

/// An `ALPN` argument: a protocol name a client may offer.
fn alpn(arg: Arg) -> Result<String, RuleError> {
    if arg.value.is_empty() {
        return Err(RuleError::new(arg.col, "empty protocol name in `ALPN`"));
    }
    if arg.value == "acme-tls/1" {
        return Err(RuleError::new(
            arg.col,
            "`acme-tls/1` is reserved for ACME's TLS-ALPN-01 challenge",
        ));
    }
    Ok(arg.value)
}

pub(super) fn host(arg: Arg) -> Result<HostArg, RuleError> {
    let err = |msg: String| Err(RuleError::new(arg.col, msg));
    let v = arg.value.as_str();
    let trimmed = v.strip_suffix('.').unwrap_or(v);
    if trimmed.is_empty() {
        return err("empty host name in `Host`".to_owned());
    }
    if !v.is_ascii() {
        return err(format!(
            "host `{v}` contains non-ASCII characters; write internationalized names in \
             their punycode (`xn--`) form"
        ));
    }
    if v.contains('{') {
        return err(format!(
            "host `{v}` uses a Traefik v2 `{{...}}` template; use HostRegexp to match a pattern, \
             or set the router's `ruleSyntax` to `v2`"
        ));
    }
    if v == "*" {
        return Ok(HostArg {
            norm: arg.value.clone(),
            written: arg.value,
            wildcard: Wildcard::Every,
        });
    }
    let (wildcard, rest) = Wildcard::split(trimmed);
    if rest.contains('*') || rest.is_empty() {
        return err(format!(
            "`*` in host `{v}`: a wildcard is a whole first label, `*.example.com` (one \
             label) or `**.example.com` (any number); for other patterns use HostRegexp"
        ));
    }
    if wildcard != Wildcard::None {
        if rest.parse::<std::net::IpAddr>().is_ok() || rest.starts_with('[') {
            return err(format!(
                "wildcard host `{v}`: an IP address has no subdomains"
            ));
        }
        if let Some(bad) = rest
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_')))
        {
            return err(format!("invalid character `{bad}` in host `{v}`"));
        }
        return Ok(HostArg {
            norm: trimmed.to_ascii_lowercase(),
            written: arg.value,
            wildcard,
        });
    }
    let unbracketed = trimmed
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(trimmed);
    if unbracketed.contains(':') && unbracketed.parse::<Ipv6Addr>().is_err() {
        let has_port = trimmed
            .rsplit_once(':')
            .is_some_and(|(_, p)| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
        return err(if has_port {
            format!("host `{v}` includes a port; `Host` matches the host name without its port")
        } else {
            format!("invalid host `{v}`")
        });
    }
    if let Some(bad) = unbracketed
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | ':')))
    {
        return err(format!("invalid character `{bad}` in host `{v}`"));
    }
    Ok(HostArg {
        norm: unbracketed.to_ascii_lowercase(),
        written: arg.value,
        wildcard: Wildcard::None,
    })
}

pub(super) fn path(kind: Kind, arg: Arg) -> Result<String, RuleError> {
    let err = |msg: String| Err(RuleError::new(arg.col, msg));
    let v = arg.value.as_str();
    if !v.starts_with('/') {
        return err(if v.is_empty() {
            format!("empty path in `{}`; paths must start with `/`", kind.name())
        } else {
            format!("path `{v}` in `{}` must start with `/`", kind.name())
        });
    }
    if v.contains('?') {
        return err(format!(
            "path `{v}` contains `?`; `{}` sees the path only, match the query string with `Query`",
            kind.name()
        ));
    }
    if v.contains('{') && v.contains('}') {
        return err(format!(
            "path `{v}` uses a Traefik v2 `{{...}}` template; use PathRegexp to match a pattern, \
             or set the router's `ruleSyntax` to `v2`"
        ));
    }
    Ok(arg.value)
}

pub(super) fn pattern(kind: Kind, arg: &Arg) -> Result<Pattern, RuleError> {
    Regex::new(&arg.value).map(Pattern).map_err(|e| {
        RuleError::new(
            arg.col,
            format!(
                "invalid regular expression in `{}`: {}",
                kind.name(),
                regex_error_summary(&e)
            ),
        )
    })
}

/// The regex crate's syntax errors span several lines with a drawing of the
/// pattern; keep only the line that says what is wrong.
pub(super) fn regex_error_summary(e: &regex::Error) -> String {
    match e {
        regex::Error::Syntax(text) => text
            .lines()
            .find_map(|l| l.strip_prefix("error: "))
            .unwrap_or(text.as_str())
            .to_owned(),
        regex::Error::CompiledTooBig(limit) => {
            format!("the compiled expression is larger than {limit} bytes")
        }
        other => other.to_string(),
    }
}

pub(super) fn method(arg: Arg) -> Result<String, RuleError> {
    if arg.value.is_empty() {
        return Err(RuleError::new(arg.col, "empty method in `Method`"));
    }
    if http::Method::from_bytes(arg.value.as_bytes()).is_err() {
        return Err(RuleError::new(
            arg.col,
            format!("invalid HTTP method `{}` in `Method`", arg.value),
        ));
    }
    Ok(arg.value)
}

pub(super) fn header_name(kind: Kind, arg: Arg) -> Result<HeaderArg, RuleError> {
    if arg.value.is_empty() {
        return Err(RuleError::new(
            arg.col,
            format!("empty header name in `{}`", kind.name()),
        ));
    }
    match HeaderName::from_bytes(arg.value.as_bytes()) {
        Ok(name) => Ok(HeaderArg {
            written: arg.value,
            name,
        }),
        Err(_) => Err(RuleError::new(
            arg.col,
            format!("invalid header name `{}` in `{}`", arg.value, kind.name()),
        )),
    }
}

fn query_key(kind: Kind, arg: Arg, alone: bool) -> Result<String, RuleError> {
    let err = |msg: String| Err(RuleError::new(arg.col, msg));
    let v = arg.value.as_str();
    if v.is_empty() {
        return err(format!("empty query parameter name in `{}`", kind.name()));
    }
    if let Some((key, value)) = v.split_once('=') {
        return err(if alone {
            format!(
                "Query(`{v}`) is the Traefik v2 form; write Query(`{key}`, `{value}`), \
                 or Query(`{key}`) to require only that the parameter is present"
            )
        } else {
            format!("query parameter name `{v}` must not contain `=`")
        });
    }
    Ok(arg.value)
}

pub(super) fn client_ip(arg: Arg) -> Result<IpArg, RuleError> {
    let v = arg.value.as_str();
    let parsed = if v.contains('/') {
        v.parse::<IpNet>().ok()
    } else {
        v.parse::<IpAddr>().ok().map(IpNet::from)
    };
    let Some(net) = parsed else {
        return Err(RuleError::new(
            arg.col,
            format!("invalid IP address or CIDR range `{v}` in `ClientIP`"),
        ));
    };
    Ok(IpArg {
        net: unmap_net(net),
        written: arg.value,
    })
}

/// A range written as IPv4-mapped IPv6 (`::ffff:10.0.0.0/104`) becomes the
/// IPv4 range it denotes, because client addresses are unmapped the same way.
fn unmap_net(net: IpNet) -> IpNet {
    if let IpNet::V6(v6) = net
        && v6.prefix_len() >= 96
        && let Some(v4) = v6.addr().to_ipv4_mapped()
        && let Ok(v4net) = Ipv4Net::new(v4, v6.prefix_len() - 96)
    {
        return IpNet::V4(v4net);
    }
    net
}

/// The client address with an IPv4-mapped IPv6 address turned into IPv4.
/// Whether the client's address lies in one of the ranges.
fn client_ip_in(nets: &[IpArg], ip: IpAddr) -> bool {
    let ip = unmap_ip(ip);
    nets.iter().any(|n| n.net.contains(&ip))
}

fn unmap_ip(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        IpAddr::V4(_) => ip,
    }
}

impl Leaf {
    pub(super) fn eval(&self, ctx: &Ctx<'_, '_>) -> bool {
        let req = match ctx.facts {
            Facts::Http(req) => req,
            Facts::Conn(conn) => return self.eval_conn(conn),
        };
        match self {
            Leaf::Host(hosts) => {
                let host = normalize_host(req.host);
                hosts.iter().any(|h| h.matches(host))
            }
            Leaf::HostRegexp(p) => p.0.is_match(normalize_host(req.host)),
            Leaf::Path(paths) => paths.iter().any(|p| p == req.path),
            Leaf::PathPrefix(prefixes) => prefixes.iter().any(|p| req.path.starts_with(p.as_str())),
            Leaf::PathRegexp(p) => p.0.is_match(req.path),
            Leaf::Method(methods) => methods
                .iter()
                .any(|m| m.eq_ignore_ascii_case(req.method.as_str())),
            Leaf::Header { name, value } => req
                .headers
                .get_all(&name.name)
                .iter()
                .any(|v| v.as_bytes() == value.as_bytes()),
            Leaf::HeaderRegexp { name, pattern } => req
                .headers
                .get_all(&name.name)
                .iter()
                .any(|v| std::str::from_utf8(v.as_bytes()).is_ok_and(|s| pattern.0.is_match(s))),
            Leaf::Query { key, value } => ctx
                .query_pairs()
                .iter()
                .any(|(k, v)| k == key && value.as_ref().is_none_or(|want| v == want)),
            Leaf::QueryRegexp { key, pattern } => ctx
                .query_pairs()
                .iter()
                .any(|(k, v)| k == key && pattern.0.is_match(v)),
            Leaf::ClientIp(nets) => client_ip_in(nets, req.client_ip),
            // Never in an HTTP rule: the parser refuses them there.
            Leaf::HostSni(_) | Leaf::HostSniRegexp(_) | Leaf::Alpn(_) => false,
        }
    }

    /// Matches a TCP router's matcher against what a connection showed.
    fn eval_conn(&self, conn: &ConnFacts<'_>) -> bool {
        match self {
            Leaf::ClientIp(nets) => client_ip_in(nets, conn.client_ip),
            Leaf::HostSni(names) => match conn.sni {
                Some(sni) => {
                    let sni = normalize_host(sni);
                    names.iter().any(|h| h.matches(sni))
                }
                None => names.iter().any(|h| h.wildcard == Wildcard::Every),
            },
            Leaf::HostSniRegexp(p) => conn.sni.is_some_and(|sni| p.0.is_match(sni)),
            Leaf::Alpn(protocols) => protocols.iter().any(|p| conn.alpn.contains(&p.as_bytes())),
            // Never in a TCP rule: the parser refuses them there.
            _ => false,
        }
    }

    /// Why this matcher failed; only meaningful when `eval` is false.
    pub(super) fn mismatch(&self, ctx: &Ctx<'_, '_>) -> String {
        let Facts::Http(req) = ctx.facts else {
            return format!("{self} does not match the connection");
        };
        match self {
            Leaf::Host(_) | Leaf::HostRegexp(_) if req.host.is_empty() => {
                format!("{self} does not match: the request has no host")
            }
            Leaf::Host(hosts) => {
                let host = normalize_host(req.host);
                let hint = if hosts.iter().any(|h| h.one_label_too_few(host)) {
                    " (`*.` stands for exactly one label; `**.` for any number)"
                } else {
                    ""
                };
                format!("{self} does not match host `{}`{hint}", req.host)
            }
            Leaf::HostRegexp(_) => {
                format!("{self} does not match host `{}`", req.host)
            }
            Leaf::Path(_) | Leaf::PathPrefix(_) | Leaf::PathRegexp(_) => {
                format!("{self} does not match path `{}`", req.path)
            }
            Leaf::Method(_) => format!("{self} does not match method `{}`", req.method),
            Leaf::Header { name, .. } | Leaf::HeaderRegexp { name, .. } => {
                if req.headers.contains_key(&name.name) {
                    format!(
                        "{self} does not match any value of header `{}`",
                        name.written
                    )
                } else {
                    format!(
                        "{self} does not match: the request has no `{}` header",
                        name.written
                    )
                }
            }
            Leaf::Query { key, .. } | Leaf::QueryRegexp { key, .. } => {
                if ctx.query_pairs().iter().any(|(k, _)| k == key) {
                    format!("{self} does not match any value of query parameter `{key}`")
                } else {
                    format!("{self} does not match: the request has no `{key}` query parameter")
                }
            }
            Leaf::ClientIp(_) => format!("{self} does not match client IP `{}`", req.client_ip),
            Leaf::HostSni(_) | Leaf::HostSniRegexp(_) | Leaf::Alpn(_) => {
                format!("{self} is a TCP matcher")
            }
        }
    }

    /// The exact host set this matcher restricts the request to, if any
    /// (none with a wildcard: those hosts are not a set to index).
    pub(super) fn exact_hosts(&self) -> Option<Vec<String>> {
        match self {
            Leaf::Host(hosts) if hosts.iter().all(|h| h.wildcard == Wildcard::None) => {
                Some(self.hosts().map(str::to_owned).collect())
            }
            _ => None,
        }
    }

    /// Whether this is ``HostSNI(`*`)`` alone.
    pub(super) fn is_catch_all(&self) -> bool {
        matches!(self, Leaf::HostSni(names) if names.iter().any(|h| h.wildcard == Wildcard::Every))
    }

    /// Whether matching needs what a TLS ClientHello says.
    pub(super) fn needs_client_hello(&self) -> bool {
        match self {
            Leaf::HostSni(_) => !self.is_catch_all(),
            Leaf::HostSniRegexp(_) | Leaf::Alpn(_) => true,
            _ => false,
        }
    }

    /// How many `**.` hosts this matcher names.
    pub(super) fn double_wildcards(&self) -> i64 {
        match self {
            Leaf::Host(hosts) => hosts
                .iter()
                .filter(|h| h.wildcard == Wildcard::AnyDepth)
                .count() as i64,
            _ => 0,
        }
    }

    /// The normalized hosts of a `Host` matcher, without duplicates, a
    /// wildcard with its `*.` or `**.`; empty for every other matcher.
    pub(super) fn hosts(&self) -> impl Iterator<Item = &str> {
        let hosts: &[HostArg] = match self {
            Leaf::Host(hosts) | Leaf::HostSni(hosts) => hosts,
            _ => &[],
        };
        // `*` names no host: nothing to order a certificate for or to list.
        hosts
            .iter()
            .enumerate()
            .filter(|(_, h)| h.wildcard != Wildcard::Every)
            .filter(|(i, h)| !hosts.iter().take(*i).any(|earlier| earlier.norm == h.norm))
            .map(|(_, h)| h.norm.as_str())
    }

    /// Adds this matcher's hosts, host patterns, paths or path prefixes.
    pub(super) fn collect_targets(&self, out: &mut super::RuleTargets) {
        fn push_new(list: &mut Vec<String>, value: &str) {
            if !list.iter().any(|v| v == value) {
                list.push(value.to_owned());
            }
        }
        match self {
            Leaf::Host(_) => {
                for host in self.hosts() {
                    push_new(&mut out.hosts, host);
                }
            }
            Leaf::HostRegexp(p) => push_new(&mut out.host_regexps, p.0.as_str()),
            Leaf::Path(paths) => paths.iter().for_each(|p| push_new(&mut out.paths, p)),
            Leaf::PathPrefix(paths) => paths
                .iter()
                .for_each(|p| push_new(&mut out.path_prefixes, p)),
            _ => {}
        }
    }

    fn kind(&self) -> Kind {
        match self {
            Leaf::Host(_) => Kind::Host,
            Leaf::HostRegexp(_) => Kind::HostRegexp,
            Leaf::Path(_) => Kind::Path,
            Leaf::PathPrefix(_) => Kind::PathPrefix,
            Leaf::PathRegexp(_) => Kind::PathRegexp,
            Leaf::Method(_) => Kind::Method,
            Leaf::Header { .. } => Kind::Header,
            Leaf::HeaderRegexp { .. } => Kind::HeaderRegexp,
            Leaf::Query { .. } => Kind::Query,
            Leaf::QueryRegexp { .. } => Kind::QueryRegexp,
            Leaf::ClientIp(_) => Kind::ClientIp,
            Leaf::HostSni(_) => Kind::HostSni,
            Leaf::HostSniRegexp(_) => Kind::HostSniRegexp,
            Leaf::Alpn(_) => Kind::Alpn,
        }
    }
}

impl fmt::Display for Leaf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind().name())?;
        f.write_char('(')?;
        let mut first = true;
        let mut arg = |f: &mut fmt::Formatter<'_>, s: &str| -> fmt::Result {
            if !first {
                f.write_str(", ")?;
            }
            first = false;
            write_string(f, s)
        };
        match self {
            Leaf::Host(hosts) | Leaf::HostSni(hosts) => {
                hosts.iter().try_for_each(|h| arg(f, &h.written))?;
            }
            Leaf::Path(items)
            | Leaf::PathPrefix(items)
            | Leaf::Method(items)
            | Leaf::Alpn(items) => {
                items.iter().try_for_each(|s| arg(f, s))?;
            }
            Leaf::HostRegexp(p) | Leaf::PathRegexp(p) | Leaf::HostSniRegexp(p) => {
                arg(f, p.0.as_str())?;
            }
            Leaf::Header { name, value } => {
                arg(f, &name.written)?;
                arg(f, value)?;
            }
            Leaf::HeaderRegexp { name, pattern } => {
                arg(f, &name.written)?;
                arg(f, pattern.0.as_str())?;
            }
            Leaf::Query { key, value } => {
                arg(f, key)?;
                if let Some(value) = value {
                    arg(f, value)?;
                }
            }
            Leaf::QueryRegexp { key, pattern } => {
                arg(f, key)?;
                arg(f, pattern.0.as_str())?;
            }
            Leaf::ClientIp(nets) => nets.iter().try_for_each(|n| arg(f, &n.written))?,
        }
        f.write_char(')')
    }
}

/// Writes a string literal: in backticks unless the value contains one, in
/// which case in double quotes with `"` and `\` escaped.
fn write_string(f: &mut fmt::Formatter<'_>, s: &str) -> fmt::Result {
    if !s.contains('`') {
        return write!(f, "`{s}`");
    }
    f.write_char('"')?;
    for c in s.chars() {
        if matches!(c, '"' | '\\') {
            f.write_char('\\')?;
        }
        f.write_char(c)?;
    }
    f.write_char('"')
}
