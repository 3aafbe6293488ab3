//! The functions a template may call: Go's built-in ones, the sprig string,
//! list and number functions Traefik's files use, and Traefik's own
//! `normalize` and `split`. Arguments follow sprig's order: the text
//! worked on comes last, so that it can be piped in (`.x | trimPrefix "/"`).

use super::{Env, Value};
use base64::Engine as _;
use std::collections::BTreeMap;

/// Every function's name, for the check at parse time.
pub(super) const NAMES: &[&str] = &[
    // Go's own.
    "and",
    "or",
    "not",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "len",
    "index",
    "print",
    "printf",
    "println",
    // Traefik's.
    "env",
    "normalize",
    "split",
    // sprig: strings.
    "lower",
    "upper",
    "title",
    // gangway's, which its Docker `defaultRule` has always had.
    "lcfirst",
    "ucfirst",
    "trim",
    "trimAll",
    "trimPrefix",
    "trimSuffix",
    "replace",
    "repeat",
    "contains",
    "hasPrefix",
    "hasSuffix",
    "quote",
    "squote",
    "cat",
    "nospace",
    "trunc",
    "substr",
    "indent",
    "nindent",
    "join",
    "splitList",
    "toString",
    "b64enc",
    "b64dec",
    "regexMatch",
    "regexReplaceAll",
    "expandenv",
    // sprig: defaults and logic.
    "default",
    "empty",
    "coalesce",
    "ternary",
    "fail",
    "required",
    // sprig: lists and maps.
    "list",
    "dict",
    "first",
    "last",
    "has",
    "until",
    "keys",
    // sprig: numbers.
    "int",
    "atoi",
    "add",
    "sub",
    "mul",
    "div",
    "mod",
    "add1",
    "max",
    "min",
];

/// Calls `name` with `args`; the error says what is wrong, without the
/// function's name (the caller adds it with the line).
/// Go's own functions.
const GO: &[&str] = &[
    "and", "eq", "ge", "gt", "index", "le", "len", "lt", "ne", "not", "or", "print", "printf",
    "println",
];

/// The functions Traefik adds, and those that read the environment.
const TRAEFIK: &[&str] = &["env", "expandenv", "normalize", "split", "splitList"];

/// sprig's functions on values, lists, maps and numbers.
const VALUES: &[&str] = &[
    "add", "add1", "atoi", "coalesce", "default", "dict", "div", "empty", "fail", "first", "has",
    "int", "keys", "last", "list", "max", "min", "mod", "mul", "required", "sub", "ternary",
    "until",
];

pub(super) fn call(
    name: &str,
    args: Vec<Value>,
    env: Env<'_>,
    missing: &Value,
) -> Result<Value, String> {
    let a = Args(args);
    if GO.contains(&name) {
        go(name, a, missing)
    } else if TRAEFIK.contains(&name) {
        traefik(name, a, env)
    } else if VALUES.contains(&name) {
        values(name, a)
    } else {
        text_function(name, a)
    }
}

/// Go's own functions.
fn go(name: &str, a: Args, missing: &Value) -> Result<Value, String> {
    Ok(match name {
        "and" => {
            a.at_least(1)?;
            let mut last = Value::Nil;
            for v in a.0 {
                if !v.truthy() {
                    return Ok(v);
                }
                last = v;
            }
            last
        }
        "or" => {
            a.at_least(1)?;
            let mut last = Value::Nil;
            for v in a.0 {
                if v.truthy() {
                    return Ok(v);
                }
                last = v;
            }
            last
        }
        "not" => Value::Bool(!a.one()?.truthy()),
        "eq" => {
            a.at_least(2)?;
            let first = &a.0[0];
            Value::Bool(a.0[1..].iter().any(|v| equal(first, v)))
        }
        "ne" => {
            let [x, y] = a.two()?;
            Value::Bool(!equal(&x, &y))
        }
        "lt" | "le" | "gt" | "ge" => {
            let [x, y] = a.two()?;
            let order = compare(&x, &y)?;
            Value::Bool(match name {
                "lt" => order.is_lt(),
                "le" => order.is_le(),
                "gt" => order.is_gt(),
                _ => order.is_ge(),
            })
        }
        "len" => Value::Int(match a.one()? {
            Value::Str(s) => count(s.len()),
            Value::List(l) => count(l.len()),
            Value::Map(m) => count(m.len()),
            other => return Err(format!("len of {}", other.kind())),
        }),
        "index" => {
            a.at_least(1)?;
            let mut it = a.0.into_iter();
            let mut current = it.next().unwrap_or(Value::Nil);
            for key in it {
                current = match (current, key) {
                    (Value::Map(mut m), Value::Str(k)) => {
                        m.remove(&k).unwrap_or_else(|| missing.clone())
                    }
                    (Value::List(l), Value::Int(i)) => usize::try_from(i)
                        .ok()
                        .and_then(|i| l.into_iter().nth(i))
                        .ok_or_else(|| format!("index {i} out of range"))?,
                    (Value::Nil, _) => Value::Nil,
                    (c, k) => return Err(format!("cannot index {} with {}", c.kind(), k.kind())),
                };
            }
            current
        }
        "print" => Value::Str(print(&a.0)),
        "println" => {
            let words: Vec<String> = a.0.iter().map(ToString::to_string).collect();
            Value::Str(format!("{}\n", words.join(" ")))
        }
        "printf" => {
            a.at_least(1)?;
            let mut it = a.0.into_iter();
            let format = text(&it.next().unwrap_or(Value::Nil))?;
            Value::Str(printf(&format, &it.collect::<Vec<_>>()))
        }
        _ => return Err("is not defined".to_owned()),
    })
}

/// Traefik's functions and the environment's.
fn traefik(name: &str, a: Args, env: Env<'_>) -> Result<Value, String> {
    Ok(match name {
        "env" => Value::Str(env(&text(&a.one()?)?).unwrap_or_default()),
        "expandenv" => Value::Str(expand(&text(&a.one()?)?, env)),
        "normalize" => Value::Str(normalize(&text(&a.one()?)?)),
        "split" => {
            // Traefik replaces sprig's `split` with Go's strings.Split(s, sep).
            let [s, sep] = a.two()?;
            Value::List(
                split(&text(&s)?, &text(&sep)?)
                    .into_iter()
                    .map(Value::Str)
                    .collect(),
            )
        }
        "splitList" => {
            let [sep, s] = a.two()?;
            Value::List(
                split(&text(&s)?, &text(&sep)?)
                    .into_iter()
                    .map(Value::Str)
                    .collect(),
            )
        }
        _ => return Err("is not defined".to_owned()),
    })
}

/// sprig's text functions.
fn text_function(name: &str, a: Args) -> Result<Value, String> {
    Ok(match name {
        "lower" => Value::Str(text(&a.one()?)?.to_lowercase()),
        "upper" => Value::Str(text(&a.one()?)?.to_uppercase()),
        "title" => Value::Str(title(&text(&a.one()?)?)),
        "lcfirst" => Value::Str(first_with(&text(&a.one()?)?, char::to_lowercase)),
        "ucfirst" => Value::Str(first_with(&text(&a.one()?)?, char::to_uppercase)),
        "trim" => Value::Str(text(&a.one()?)?.trim().to_owned()),
        "nospace" => Value::Str(
            text(&a.one()?)?
                .chars()
                .filter(|c| !c.is_whitespace())
                .collect(),
        ),
        "toString" => Value::Str(a.one()?.to_string()),
        "trimAll" => {
            let [cut, s] = a.two()?;
            let cut = text(&cut)?;
            Value::Str(text(&s)?.trim_matches(|c| cut.contains(c)).to_owned())
        }
        "trimPrefix" => {
            let [p, s] = a.two()?;
            let (p, s) = (text(&p)?, text(&s)?);
            Value::Str(s.strip_prefix(p.as_str()).unwrap_or(&s).to_owned())
        }
        "trimSuffix" => {
            let [p, s] = a.two()?;
            let (p, s) = (text(&p)?, text(&s)?);
            Value::Str(s.strip_suffix(p.as_str()).unwrap_or(&s).to_owned())
        }
        "replace" => {
            let [old, new, s] = a.three()?;
            Value::Str(text(&s)?.replace(&text(&old)?, &text(&new)?))
        }
        "repeat" => {
            let [n, s] = a.two()?;
            let n = usize::try_from(int(&n)?).map_err(|_| "a negative count".to_owned())?;
            Value::Str(text(&s)?.repeat(n))
        }
        "contains" => {
            let [sub, s] = a.two()?;
            Value::Bool(text(&s)?.contains(&text(&sub)?))
        }
        "hasPrefix" => {
            let [p, s] = a.two()?;
            Value::Bool(text(&s)?.starts_with(&text(&p)?))
        }
        "hasSuffix" => {
            let [p, s] = a.two()?;
            Value::Bool(text(&s)?.ends_with(&text(&p)?))
        }
        "quote" => Value::Str(
            a.0.iter()
                .filter(|v| **v != Value::Nil)
                .map(|v| format!("{:?}", v.to_string()))
                .collect::<Vec<_>>()
                .join(" "),
        ),
        "squote" => Value::Str(
            a.0.iter()
                .filter(|v| **v != Value::Nil)
                .map(|v| format!("'{v}'"))
                .collect::<Vec<_>>()
                .join(" "),
        ),
        "cat" => Value::Str(
            a.0.iter()
                .filter(|v| **v != Value::Nil)
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(" "),
        ),
        "trunc" => {
            let [n, s] = a.two()?;
            let (n, s) = (int(&n)?, text(&s)?);
            let chars: Vec<char> = s.chars().collect();
            let len = count(chars.len());
            let kept: String = if n >= 0 {
                chars
                    .iter()
                    .take(usize::try_from(n.min(len)).unwrap_or(0))
                    .collect()
            } else {
                let from = usize::try_from((len + n).max(0)).unwrap_or(0);
                chars[from..].iter().collect()
            };
            Value::Str(kept)
        }
        "substr" => {
            let [start, end, s] = a.three()?;
            let chars: Vec<char> = text(&s)?.chars().collect();
            let len = chars.len();
            let start = usize::try_from(int(&start)?).unwrap_or(0).min(len);
            let end = usize::try_from(int(&end)?).map_or(len, |e| e.min(len));
            Value::Str(chars[start..end.max(start)].iter().collect())
        }
        "indent" | "nindent" => {
            let [n, s] = a.two()?;
            let pad = " ".repeat(usize::try_from(int(&n)?).unwrap_or(0));
            let body = text(&s)?
                .split('\n')
                .map(|line| format!("{pad}{line}"))
                .collect::<Vec<_>>()
                .join("\n");
            Value::Str(if name == "nindent" {
                format!("\n{body}")
            } else {
                body
            })
        }
        "join" => {
            let [sep, list] = a.two()?;
            let sep = text(&sep)?;
            let items = match list {
                Value::List(l) => l.iter().map(ToString::to_string).collect::<Vec<_>>(),
                other => vec![text(&other)?],
            };
            Value::Str(items.join(&sep))
        }
        "b64enc" => Value::Str(base64::engine::general_purpose::STANDARD.encode(text(&a.one()?)?)),
        "b64dec" => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(text(&a.one()?)?)
                .map_err(|e| e.to_string())?;
            Value::Str(String::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_owned())?)
        }
        "regexMatch" => {
            let [re, s] = a.two()?;
            Value::Bool(regex(&text(&re)?)?.is_match(&text(&s)?))
        }
        "regexReplaceAll" => {
            let [re, s, with] = a.three()?;
            let with = text(&with)?;
            Value::Str(
                regex(&text(&re)?)?
                    .replace_all(&text(&s)?, with.as_str())
                    .into_owned(),
            )
        }
        _ => return Err("is not defined".to_owned()),
    })
}

/// sprig's functions on values, lists, maps and numbers.
fn values(name: &str, a: Args) -> Result<Value, String> {
    Ok(match name {
        "default" => {
            // `default "x"` with nothing piped gives "x", as sprig's does.
            let mut it = a.0.into_iter();
            let fallback = it
                .next()
                .ok_or_else(|| "needs a default value".to_owned())?;
            match it.next() {
                Some(given) if given.truthy() => given,
                _ => fallback,
            }
        }
        "empty" => Value::Bool(!a.one()?.truthy()),
        "coalesce" => a.0.into_iter().find(Value::truthy).unwrap_or(Value::Nil),
        "ternary" => {
            let [yes, no, cond] = a.three()?;
            if cond.truthy() { yes } else { no }
        }
        "fail" => return Err(text(&a.one()?)?),
        "required" => {
            let [message, v] = a.two()?;
            if v == Value::Nil || v == Value::Str(String::new()) {
                return Err(text(&message)?);
            }
            v
        }
        "list" => Value::List(a.0),
        "dict" => {
            if !a.0.len().is_multiple_of(2) {
                return Err("needs key and value pairs".to_owned());
            }
            let mut map = BTreeMap::new();
            let mut it = a.0.into_iter();
            while let (Some(k), Some(v)) = (it.next(), it.next()) {
                map.insert(k.to_string(), v);
            }
            Value::Map(map)
        }
        "keys" => match a.one()? {
            Value::Map(m) => Value::List(m.into_keys().map(Value::Str).collect()),
            other => return Err(format!("keys of {}", other.kind())),
        },
        "first" | "last" => match a.one()? {
            Value::List(l) => {
                let picked = if name == "first" {
                    l.into_iter().next()
                } else {
                    l.into_iter().last()
                };
                picked.unwrap_or(Value::Nil)
            }
            other => return Err(format!("{name} of {}", other.kind())),
        },
        "has" => {
            let [needle, list] = a.two()?;
            match list {
                Value::List(l) => Value::Bool(l.iter().any(|v| equal(v, &needle))),
                other => return Err(format!("has needs a list, got {}", other.kind())),
            }
        }
        "until" => Value::List((0..int(&a.one()?)?.max(0)).map(Value::Int).collect()),
        "int" | "atoi" => Value::Int(int(&a.one()?)?),
        "add1" => Value::Int(int(&a.one()?)?.saturating_add(1)),
        "add" | "mul" | "max" | "min" => {
            a.at_least(1)?;
            let mut it = a.0.iter();
            let mut total = int(it.next().unwrap_or(&Value::Nil))?;
            for v in it {
                let n = int(v)?;
                total = match name {
                    "add" => total.saturating_add(n),
                    "mul" => total.saturating_mul(n),
                    "max" => total.max(n),
                    _ => total.min(n),
                };
            }
            Value::Int(total)
        }
        "sub" | "div" | "mod" => {
            let [x, y] = a.two()?;
            let (x, y) = (int(&x)?, int(&y)?);
            Value::Int(match name {
                "sub" => x.saturating_sub(y),
                _ if y == 0 => return Err("division by zero".to_owned()),
                "div" => x / y,
                _ => x % y,
            })
        }
        _ => return Err("is not defined".to_owned()),
    })
}

struct Args(Vec<Value>);

impl Args {
    fn arity(&self, n: usize) -> Result<(), String> {
        if self.0.len() == n {
            Ok(())
        } else {
            Err(format!(
                "takes {n} argument{}, got {}",
                if n == 1 { "" } else { "s" },
                self.0.len()
            ))
        }
    }

    fn at_least(&self, n: usize) -> Result<(), String> {
        if self.0.len() >= n {
            Ok(())
        } else {
            Err(format!(
                "takes at least {n} argument{}",
                if n == 1 { "" } else { "s" }
            ))
        }
    }

    fn one(self) -> Result<Value, String> {
        self.arity(1)?;
        Ok(self.0.into_iter().next().unwrap_or(Value::Nil))
    }

    fn two(self) -> Result<[Value; 2], String> {
        self.arity(2)?;
        let mut it = self.0.into_iter();
        Ok([
            it.next().unwrap_or(Value::Nil),
            it.next().unwrap_or(Value::Nil),
        ])
    }

    fn three(self) -> Result<[Value; 3], String> {
        self.arity(3)?;
        let mut it = self.0.into_iter();
        Ok([
            it.next().unwrap_or(Value::Nil),
            it.next().unwrap_or(Value::Nil),
            it.next().unwrap_or(Value::Nil),
        ])
    }
}

fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A value as text; a list or map is a mistake where text is wanted.
fn text(v: &Value) -> Result<String, String> {
    match v {
        Value::Str(s) => Ok(s.clone()),
        Value::Int(_) | Value::Float(_) | Value::Bool(_) => Ok(v.to_string()),
        Value::Nil => Ok(String::new()),
        Value::List(_) | Value::Map(_) => Err(format!("needs text, got a {}", v.kind())),
    }
}

fn int(v: &Value) -> Result<i64, String> {
    match v {
        Value::Int(n) => Ok(*n),
        // Truncated towards zero, as sprig's toInt does.
        #[allow(clippy::cast_possible_truncation)]
        Value::Float(x) => Ok(*x as i64),
        Value::Bool(b) => Ok(i64::from(*b)),
        Value::Str(s) => s
            .trim()
            .parse()
            .map_err(|_| format!("`{s}` is not a whole number")),
        Value::Nil => Ok(0),
        other => Err(format!("needs a number, got a {}", other.kind())),
    }
}

fn equal(x: &Value, y: &Value) -> bool {
    match (x, y) {
        (Value::Int(a), Value::Float(b)) | (Value::Float(b), Value::Int(a)) => {
            #[allow(clippy::cast_precision_loss)]
            let a = *a as f64;
            a == *b
        }
        _ => x == y,
    }
}

fn compare(x: &Value, y: &Value) -> Result<std::cmp::Ordering, String> {
    match (x, y) {
        (Value::Int(a), Value::Int(b)) => Ok(a.cmp(b)),
        (Value::Str(a), Value::Str(b)) => Ok(a.cmp(b)),
        (Value::Float(_) | Value::Int(_), Value::Float(_) | Value::Int(_)) => {
            #[allow(clippy::cast_precision_loss)]
            let f = |v: &Value| match v {
                Value::Int(n) => *n as f64,
                Value::Float(x) => *x,
                _ => 0.0,
            };
            f(x).partial_cmp(&f(y))
                .ok_or_else(|| "cannot compare NaN".to_owned())
        }
        _ => Err(format!("cannot compare {} with {}", x.kind(), y.kind())),
    }
}

/// Go's `fmt.Sprint`: a space between operands when neither is text.
fn print(args: &[Value]) -> String {
    let mut out = String::new();
    for (i, v) in args.iter().enumerate() {
        let is_text = |v: &Value| matches!(v, Value::Str(_));
        if i > 0 && !is_text(v) && !is_text(&args[i - 1]) {
            out.push(' ');
        }
        out.push_str(&v.to_string());
    }
    out
}

/// Go's `fmt.Sprintf` for the verbs templates use: `%s`, `%v`, `%d`, `%q`,
/// `%%`; another verb writes its operand as `%v` would.
fn printf(format: &str, args: &[Value]) -> String {
    let mut out = String::new();
    let mut args = args.iter();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('%') => out.push('%'),
            Some(verb) => match args.next() {
                Some(v) if verb == 'q' => out.push_str(&format!("{:?}", v.to_string())),
                Some(v) => out.push_str(&v.to_string()),
                None => out.push_str(&format!("%!{verb}(MISSING)")),
            },
            None => out.push_str("%!(NOVERB)"),
        }
    }
    out
}

/// Go's strings.Split: an empty separator splits after each character.
fn split(s: &str, sep: &str) -> Vec<String> {
    if sep.is_empty() {
        return s.chars().map(String::from).collect();
    }
    s.split(sep).map(str::to_owned).collect()
}

fn title(s: &str) -> String {
    // Go's strings.Title: a word starts after any ASCII character that is
    // not a letter, digit or `_`, and after white space.
    let separates = |c: char| {
        if c.is_ascii() {
            !(c.is_ascii_alphanumeric() || c == '_')
        } else {
            !c.is_alphanumeric() && c.is_whitespace()
        }
    };
    let mut out = String::with_capacity(s.len());
    let mut start = true;
    for c in s.chars() {
        if start {
            out.extend(c.to_uppercase());
        } else {
            out.push(c);
        }
        start = separates(c);
    }
    out
}

/// The text with its first character changed by `change` (gangway's
/// `lcfirst` and `ucfirst`).
fn first_with<I: Iterator<Item = char>>(s: &str, change: impl Fn(char) -> I) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => change(c).chain(chars).collect(),
        None => String::new(),
    }
}

/// Traefik's `normalize`: runs of characters other than letters and
/// digits become one `-`, trimmed at both ends.
pub fn normalize(name: &str) -> String {
    name.split(|c: char| !c.is_alphanumeric())
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}

/// `$NAME` and `${NAME}` replaced by the environment's values.
fn expand(s: &str, env: Env<'_>) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (name, len) = if let Some(braced) = after.strip_prefix('{') {
            match braced.find('}') {
                Some(end) => (&braced[..end], end + 2),
                None => ("", 0),
            }
        } else {
            let end = after
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], end)
        };
        if name.is_empty() {
            out.push('$');
            rest = after;
        } else {
            out.push_str(&env(name).unwrap_or_default());
            rest = &after[len..];
        }
    }
    out.push_str(rest);
    out
}

fn regex(pattern: &str) -> Result<regex::Regex, String> {
    regex::Regex::new(pattern).map_err(|e| e.to_string())
}
