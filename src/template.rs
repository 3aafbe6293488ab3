//! Go's text/template language, as far as Traefik's users write it in
//! file-provider files: text with `{{ … }}` actions; pipelines
//! (`env "DOMAIN" | lower`); `if`/`else if`/`else`, `range` (lists, maps,
//! numbers, with `$i, $v :=`), `with`, `end`; variables (`$x := …`,
//! `$x = …`); parentheses; `{{-`/`-}}` trimming; comments; Go's own
//! functions (`and`, `or`, `not`, `eq` … `ge`, `len`, `index`, `print`,
//! `printf`) and the sprig string and list functions Traefik adds, plus
//! `env`, `normalize` and `split`.
//!
//! Parsing and running are apart (`parse` then `render`), errors carry the
//! template's line, and nothing here reads the environment except through
//! the lookup `render` is given, so tests need not change the process'.
//! Not a room's own: the file provider runs it today, and the Docker
//! provider's `defaultRule` can run on it too.

mod exec;
mod funcs;
mod parse;

use std::collections::BTreeMap;
use std::fmt;

pub use funcs::normalize;
pub use parse::Template;

/// A template that does not parse, or fails while it runs.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {problem}")]
pub struct TemplateError {
    /// The 1-based line of the action at fault.
    pub line: usize,
    /// What is wrong.
    pub problem: String,
}

/// A value while a template runs: what Go's templates see of Go values.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// No value (Go's nil), printed `<no value>`.
    Nil,
    /// `true` or `false`.
    Bool(bool),
    /// A whole number.
    Int(i64),
    /// A number with a fraction.
    Float(f64),
    /// Text.
    Str(String),
    /// A list (`list "a" "b"`, `split`).
    List(Vec<Value>),
    /// A map with text keys, ranged over in key order (`dict`).
    Map(BTreeMap<String, Value>),
}

impl Value {
    /// Go's truth: false, 0, nil and empty text, lists and maps are false.
    pub fn truthy(&self) -> bool {
        match self {
            Value::Nil => false,
            Value::Bool(b) => *b,
            Value::Int(n) => *n != 0,
            Value::Float(f) => *f != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::List(l) => !l.is_empty(),
            Value::Map(m) => !m.is_empty(),
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Value::Nil => "nil",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Float(_) => "float",
            Value::Str(_) => "string",
            Value::List(_) => "list",
            Value::Map(_) => "map",
        }
    }
}

impl fmt::Display for Value {
    /// As Go's `fmt.Print` writes the value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Nil => f.write_str("<no value>"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(n) => write!(f, "{n}"),
            Value::Float(x) => write!(f, "{x}"),
            Value::Str(s) => f.write_str(s),
            Value::List(items) => {
                f.write_str("[")?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" ")?;
                    }
                    write!(f, "{item}")?;
                }
                f.write_str("]")
            }
            Value::Map(map) => {
                f.write_str("map[")?;
                for (i, (k, v)) in map.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" ")?;
                    }
                    write!(f, "{k}:{v}")?;
                }
                f.write_str("]")
            }
        }
    }
}

/// What a running template may ask of its surroundings: an environment
/// variable for `env`.
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The process' environment, for `env`.
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Parses and runs `text` with no data (`.` is nil), as Traefik runs its
/// file-provider files.
pub fn render(text: &str, env: Env<'_>) -> Result<String, TemplateError> {
    Template::parse(text)?.render(&Value::Nil, env)
}

#[cfg(test)]
mod tests;
