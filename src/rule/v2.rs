//! Traefik v2's matchers, read when a router sets `ruleSyntax=v2` (or the
//! static `core.defaultRuleSyntax` does).
//!
//! Each v2 matcher becomes the v3 matcher (or `&&` of matchers) that
//! matches the same requests, so matching, host indexing and explanations
//! have one implementation:
//!
//! * `Host` and `HostHeader` match the host exactly (no wildcards in v2);
//! * `HostRegexp`, `Path` and `PathPrefix` take templates: text matched as
//!   written, with `{name}` or `{name:pattern}` for a variable part (by
//!   default one host label, `[^.]+`, or one path segment, `[^/]+`); a host
//!   template matches the whole host whatever its case, a path template the
//!   whole path (`Path`) or its start (`PathPrefix`);
//! * `Headers` and `HeadersRegexp` take name/value pairs, every pair must
//!   match (the value exactly, or the pattern anywhere in the value);
//! * `Query` takes `key=value` (every argument is split at its first `=`
//!   and the pieces read as pairs, as Traefik does); an empty value requires
//!   the parameter only, a value may hold `{name:pattern}` variables;
//! * `Method` and `ClientIP` take several values, any of which matches.
//!
//! Matcher names are read as Traefik reads them: as written in its
//! documentation, all lowercase, all uppercase, or capitalised
//! (`PathPrefix`, `pathprefix`, `PATHPREFIX`, `Pathprefix`).

use regex::Regex;

use super::leaf::{self, Arg, Leaf, Pattern, Wildcard};
use super::{Node, RuleError, suggest};

/// A matcher of the v2 syntax.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Host,
    HostRegexp,
    Path,
    PathPrefix,
    Method,
    Headers,
    HeadersRegexp,
    Query,
    ClientIp,
}

/// The v2 matchers, by the name Traefik's v2 documentation gives them.
const KINDS: [(&str, Kind); 10] = [
    ("Host", Kind::Host),
    ("HostHeader", Kind::Host),
    ("HostRegexp", Kind::HostRegexp),
    ("Path", Kind::Path),
    ("PathPrefix", Kind::PathPrefix),
    ("Method", Kind::Method),
    ("Headers", Kind::Headers),
    ("HeadersRegexp", Kind::HeadersRegexp),
    ("Query", Kind::Query),
    ("ClientIP", Kind::ClientIp),
];

/// v3 names that v2 rules spell differently.
const V3_ONLY: [(&str, &str); 4] = [
    ("Header", "Headers"),
    ("HeaderRegexp", "HeadersRegexp"),
    ("PathRegexp", "Path(`{name:pattern}`)"),
    ("QueryRegexp", "Query(`key={name:pattern}`)"),
];

/// Finds the v2 matcher `name` stands for, in any of the spellings
/// Traefik's parser accepts.
pub(super) fn lookup(name: &str) -> Option<(&'static str, Kind)> {
    KINDS
        .iter()
        .find(|(canonical, _)| leaf::spellings(canonical).any(|s| s == name))
        .copied()
}

/// The error message for a name that is not a v2 matcher.
pub(super) fn unknown_matcher_message(name: &str) -> String {
    if let Some((_, v2)) = V3_ONLY.iter().find(|(v3, _)| *v3 == name) {
        return format!(
            "unknown matcher `{name}` in a v2 rule (the router's ruleSyntax is v2): \
             `{name}` is the v3 name, v2 writes {v2}; or drop ruleSyntax=v2 to read the \
             rule as v3"
        );
    }
    let names: Vec<&str> = KINDS.iter().map(|(n, _)| *n).collect();
    match suggest::suggest(name, &names) {
        Some(hint) => format!("unknown matcher `{name}` in a v2 rule; {hint}"),
        None => format!(
            "unknown matcher `{name}` in a v2 rule; the v2 matchers are {}",
            names.join(", ")
        ),
    }
}

/// Checks the arguments of v2 matcher `kind` (written `name`) and builds
/// the v3 equivalent.
pub(super) fn build(
    kind: Kind,
    name: &str,
    name_col: usize,
    args: Vec<Arg>,
) -> Result<Node, RuleError> {
    // Traefik refuses a v2 matcher without arguments or with an empty one
    // before looking at what it is.
    if args.is_empty() {
        return Err(RuleError::new(
            name_col,
            format!("`{name}` needs at least one argument"),
        ));
    }
    if let Some(empty) = args.iter().find(|a| a.value.is_empty()) {
        return Err(RuleError::new(
            empty.col,
            format!("empty argument in `{name}`"),
        ));
    }
    match kind {
        Kind::Host => hosts(name, args).map(|h| Node::Leaf(Leaf::Host(h))),
        Kind::HostRegexp => host_templates(name, &args).map(|p| Node::Leaf(Leaf::HostRegexp(p))),
        Kind::Path | Kind::PathPrefix => paths(kind, name, args),
        Kind::Method => args
            .into_iter()
            .map(|mut a| {
                a.value.make_ascii_uppercase();
                leaf::method(a)
            })
            .collect::<Result<_, _>>()
            .map(|m| Node::Leaf(Leaf::Method(m))),
        Kind::Headers | Kind::HeadersRegexp => headers(kind, name, name_col, args),
        Kind::Query => queries(name, name_col, &args),
        Kind::ClientIp => args
            .into_iter()
            .map(leaf::client_ip)
            .collect::<Result<_, _>>()
            .map(|n| Node::Leaf(Leaf::ClientIp(n))),
    }
}

/// `Host` and `HostHeader`: exact names, compared without case.
fn hosts(name: &str, args: Vec<Arg>) -> Result<Vec<leaf::HostArg>, RuleError> {
    args.into_iter()
        .map(|arg| {
            let (col, written) = (arg.col, arg.value.clone());
            if written.contains('*') {
                return Err(RuleError::new(
                    col,
                    format!(
                        "`*` in host `{written}`: v2's `{name}` takes exact names; match \
                         subdomains with HostRegexp(`{{sub:[a-z0-9-]+}}.example.com`)"
                    ),
                ));
            }
            let host = leaf::host(arg)?;
            debug_assert_eq!(host.wildcard, Wildcard::None);
            Ok(host)
        })
        .collect()
}

/// `HostRegexp`: host templates, any of which matches the whole host.
fn host_templates(name: &str, args: &[Arg]) -> Result<Pattern, RuleError> {
    let mut alternatives = Vec::with_capacity(args.len());
    for arg in args {
        if !arg.value.is_ascii() {
            return Err(RuleError::new(
                arg.col,
                format!(
                    "host template `{}` in `{name}` contains non-ASCII characters; write \
                     internationalized names in their punycode (`xn--`) form",
                    arg.value
                ),
            ));
        }
        alternatives.push(format!("^{}$", template(name, arg, "[^.]+")?));
    }
    compile(name, args, &alternatives.join("|"), true)
}

/// `Path` and `PathPrefix`: plain paths stay plain matchers; templates
/// become one anchored `PathRegexp`.
fn paths(kind: Kind, name: &str, args: Vec<Arg>) -> Result<Node, RuleError> {
    let v3 = if kind == Kind::Path {
        leaf::Kind::Path
    } else {
        leaf::Kind::PathPrefix
    };
    for arg in &args {
        if !arg.value.starts_with('/') {
            return Err(RuleError::new(
                arg.col,
                format!("path `{}` in `{name}` must start with `/`", arg.value),
            ));
        }
    }
    if !args.iter().any(|a| a.value.contains(['{', '}'])) {
        let paths = args
            .into_iter()
            .map(|a| leaf::path(v3, a))
            .collect::<Result<Vec<_>, _>>()?;
        return Ok(Node::Leaf(if kind == Kind::Path {
            Leaf::Path(paths)
        } else {
            Leaf::PathPrefix(paths)
        }));
    }
    let end = if kind == Kind::Path { "$" } else { "" };
    let mut alternatives = Vec::with_capacity(args.len());
    for arg in &args {
        alternatives.push(format!("^{}{end}", template(name, arg, "[^/]+")?));
    }
    compile(name, &args, &alternatives.join("|"), false).map(|p| Node::Leaf(Leaf::PathRegexp(p)))
}

/// `Headers` and `HeadersRegexp`: name/value pairs, all of which must
/// match.
fn headers(kind: Kind, name: &str, name_col: usize, args: Vec<Arg>) -> Result<Node, RuleError> {
    if !args.len().is_multiple_of(2) {
        return Err(RuleError::new(
            name_col,
            format!(
                "`{name}` takes a header name and a {} (or several such pairs), but {} \
                 arguments were given",
                if kind == Kind::Headers {
                    "value"
                } else {
                    "regular expression"
                },
                args.len()
            ),
        ));
    }
    let v3 = if kind == Kind::Headers {
        leaf::Kind::Header
    } else {
        leaf::Kind::HeaderRegexp
    };
    let mut leaves = Vec::with_capacity(args.len() / 2);
    let mut args = args.into_iter();
    while let (Some(header), Some(value)) = (args.next(), args.next()) {
        let header = leaf::header_name(v3, header)?;
        leaves.push(Node::Leaf(if kind == Kind::Headers {
            Leaf::Header {
                name: header,
                value: value.value,
            }
        } else {
            Leaf::HeaderRegexp {
                name: header,
                pattern: leaf::pattern(v3, &value)?,
            }
        }));
    }
    Ok(all_of(leaves))
}

/// `Query`: `key=value` pairs, all of which must match.
fn queries(name: &str, name_col: usize, args: &[Arg]) -> Result<Node, RuleError> {
    // Traefik splits every argument at its first `=` and reads the pieces
    // as key, value, key, value…, so `Query(`a`, `b`)` is `Query(`a=b`)`.
    let mut pieces = Vec::with_capacity(args.len() * 2);
    for arg in args {
        match arg.value.split_once('=') {
            Some((key, value)) => {
                pieces.push((key.to_owned(), arg.col));
                pieces.push((value.to_owned(), arg.col));
            }
            None => pieces.push((arg.value.clone(), arg.col)),
        }
    }
    if !pieces.len().is_multiple_of(2) {
        return Err(RuleError::new(
            name_col,
            format!(
                "`{name}` in a v2 rule takes `key=value` arguments (an empty value, \
                 `key=`, requires the parameter only)"
            ),
        ));
    }
    let mut leaves = Vec::with_capacity(pieces.len() / 2);
    let mut pieces = pieces.into_iter();
    while let (Some((key, col)), Some((value, _))) = (pieces.next(), pieces.next()) {
        if key.is_empty() || key.contains(['{', '}']) {
            return Err(RuleError::new(
                col,
                format!("`{name}` needs a plain parameter name before `=`, found `{key}`"),
            ));
        }
        let leaf = if value.is_empty() {
            Leaf::Query { key, value: None }
        } else if !value.contains(['{', '}']) {
            Leaf::Query {
                key,
                value: Some(value),
            }
        } else {
            let arg = Arg { value, col };
            let regex = format!("^{}$", template(name, &arg, "[^?&]*")?);
            Leaf::QueryRegexp {
                key,
                pattern: compile(name, std::slice::from_ref(&arg), &regex, false)?,
            }
        };
        leaves.push(Node::Leaf(leaf));
    }
    Ok(all_of(leaves))
}

/// One node for a non-empty list of conditions that must all hold.
fn all_of(mut nodes: Vec<Node>) -> Node {
    if nodes.len() == 1 {
        nodes.remove(0)
    } else {
        Node::And(nodes)
    }
}

/// A template's regular expression (without anchors): its text matched as
/// written, each `{name}` by `default` and each `{name:pattern}` by its
/// pattern.
fn template(matcher: &str, arg: &Arg, default: &str) -> Result<String, RuleError> {
    let tpl = arg.value.as_str();
    let unbalanced = || {
        RuleError::new(
            arg.col,
            format!("unbalanced braces in `{tpl}` in `{matcher}`"),
        )
    };
    let mut out = String::with_capacity(tpl.len() + 8);
    let mut depth = 0usize;
    let (mut start, mut done) = (0, 0);
    for (i, c) in tpl.char_indices() {
        match c {
            '{' => {
                if depth == 0 {
                    start = i;
                }
                depth += 1;
            }
            '}' => {
                depth = depth.checked_sub(1).ok_or_else(unbalanced)?;
                if depth == 0 {
                    out.push_str(&regex::escape(&tpl[done..start]));
                    let inner = &tpl[start + 1..i];
                    let (var, pattern) = inner.split_once(':').unwrap_or((inner, default));
                    if var.is_empty() || pattern.is_empty() {
                        return Err(RuleError::new(
                            arg.col,
                            format!(
                                "`{{{inner}}}` in `{matcher}` needs a name and, after `:`, \
                                 a pattern, as in `{{id:[0-9]+}}`"
                            ),
                        ));
                    }
                    if pattern.starts_with('(') && pattern.ends_with(')') {
                        out.push_str(pattern);
                    } else {
                        out.push('(');
                        out.push_str(pattern);
                        out.push(')');
                    }
                    done = i + 1;
                }
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(unbalanced());
    }
    out.push_str(&regex::escape(&tpl[done..]));
    Ok(out)
}

/// Compiles the regular expression made from `args`' templates.
fn compile(
    matcher: &str,
    args: &[Arg],
    regex: &str,
    ignore_case: bool,
) -> Result<Pattern, RuleError> {
    // Hosts are compared without case, as Traefik v2 did; the written
    // `(?i)` keeps that visible in the v3 form the rule is shown in.
    let source = if ignore_case {
        format!("(?i){regex}")
    } else {
        regex.to_owned()
    };
    Regex::new(&source).map(Pattern).map_err(|e| {
        let col = args.first().map_or(1, |a| a.col);
        RuleError::new(
            col,
            format!(
                "invalid pattern in `{matcher}`: {}",
                leaf::regex_error_summary(&e)
            ),
        )
    })
}
