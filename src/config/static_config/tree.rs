//! A configuration file's tree, read the way Traefik's loaders read it:
//! keys in any case, scalars of another type converted, sections given as
//! `true`, and the options gangway accepts without implementing them taken
//! out and noted. Every unknown key and bad value is reported, not the
//! first only.

use serde_json::{Map, Value};

use super::options::{self, INDEX, NAME, OptionSpec, OptionState, Seg, Style, ValueKind};
use super::options::{AcceptedOption, parse_bool};
use super::{ListenAddress, SettingError, StaticConfigError};
use crate::config::duration::{Duration, SignedDuration};

/// The dynamic configuration's top-level sections, which Traefik users
/// sometimes write into the static file.
const DYNAMIC_SECTIONS: &[&str] = &["http", "tcp", "udp", "tls"];

/// What a dynamic section written in the static file gets; dropped when the
/// file is also the file provider's, which reads those sections.
pub(super) const DYNAMIC_IN_STATIC: &str = "Dynamic configuration in the static file: not read \
     (Traefik ignores it too); move it to a file the file provider reads.";

/// Most list items one key may hold; past it the file is refused rather
/// than read into memory item by item.
pub(super) const MAX_INDEX: usize = 1024;

/// One file being read.
pub(super) struct FileWalk<'a> {
    /// The file's name, for messages.
    pub name: &'a str,
    /// The file's text, to find the line of a key.
    pub text: &'a str,
    /// Options accepted but not implemented, as found.
    pub accepted: Vec<AcceptedOption>,
    /// Every problem found.
    pub problems: Vec<StaticConfigError>,
    /// The implemented leaves, by concrete path, to check one by one.
    pub leaves: Vec<(Vec<String>, Vec<Seg>)>,
}

impl<'a> FileWalk<'a> {
    /// A walk over the file `name` whose text is `text`.
    pub fn new(name: &'a str, text: &'a str) -> Self {
        FileWalk {
            name,
            text,
            accepted: Vec::new(),
            problems: Vec::new(),
            leaves: Vec::new(),
        }
    }

    /// Walks the whole tree, rewriting it in place.
    pub fn walk(&mut self, tree: &mut Value) {
        let rows: Vec<(&'static OptionSpec, Vec<&'static str>)> = options::all_options()
            .map(|spec| (spec, spec.segments().collect()))
            .collect();
        let candidates: Vec<usize> = (0..rows.len()).collect();
        let Value::Object(map) = tree else {
            return;
        };
        let mut path = Vec::new();
        let mut segs = Vec::new();
        self.walk_object(map, &rows, &candidates, &mut path, &mut segs);
    }

    fn line(&self, path: &[String]) -> Option<usize> {
        line_of_path(self.text, path)
    }

    fn unknown(&mut self, path: &[String]) {
        let tokens: Vec<&str> = path.iter().map(String::as_str).collect();
        let suggestion = match options::lookup(&tokens, Style::Flag) {
            Err(Some(suggested)) => Some(suggested.join(".")),
            _ => None,
        };
        self.problems.push(StaticConfigError::UnknownKey {
            file: self.name.to_owned(),
            line: self.line(path),
            key: path.join("."),
            suggestion,
        });
    }

    fn bad_value(&mut self, path: &[String], message: SettingError) {
        self.problems.push(StaticConfigError::BadKeyValue {
            file: self.name.to_owned(),
            line: self.line(path),
            key: path.join("."),
            message,
        });
    }

    fn walk_object(
        &mut self,
        map: &mut Map<String, Value>,
        rows: &[(&'static OptionSpec, Vec<&'static str>)],
        candidates: &[usize],
        path: &mut Vec<String>,
        segs: &mut Vec<Seg>,
    ) {
        let depth = path.len();
        let entries = std::mem::take(map);
        for (key, mut value) in entries {
            // A literal segment in any case, else a user-chosen name.
            let literal: Vec<usize> = candidates
                .iter()
                .copied()
                .filter(|&i| {
                    rows[i]
                        .1
                        .get(depth)
                        .is_some_and(|s| *s != NAME && *s != INDEX && s.eq_ignore_ascii_case(&key))
                })
                .collect();
            let (next, canonical, seg) = if let Some(&first) = literal.first() {
                (literal, rows[first].1[depth].to_owned(), Seg::Literal)
            } else {
                let named: Vec<usize> = candidates
                    .iter()
                    .copied()
                    .filter(|&i| rows[i].1.get(depth) == Some(&NAME))
                    .collect();
                (named, key.clone(), Seg::Name)
            };
            path.push(canonical.clone());
            segs.push(seg);
            if next.is_empty() {
                path.pop();
                segs.pop();
                // Dynamic sections written in the static file: Traefik
                // starts and reads nothing of them, and so does gangway.
                if depth == 0
                    && let Some(section) = DYNAMIC_SECTIONS
                        .iter()
                        .find(|s| s.eq_ignore_ascii_case(&key))
                {
                    self.accepted.push(AcceptedOption {
                        option: (*section).to_owned(),
                        source: self.name.to_owned(),
                        state: OptionState::Unsupported,
                        description: DYNAMIC_IN_STATIC,
                    });
                    continue;
                }
                let mut shown = path.clone();
                shown.push(key);
                self.unknown(&shown);
                continue;
            }
            let keep = self.walk_value(&mut value, rows, &next, path, segs);
            if keep {
                if map.contains_key(&canonical) {
                    let mut shown = path.clone();
                    shown.pop();
                    shown.push(key);
                    self.problems.push(StaticConfigError::DuplicateKey {
                        file: self.name.to_owned(),
                        line: self.line(&shown),
                        key: path.join("."),
                    });
                } else {
                    map.insert(canonical, value);
                }
            }
            path.pop();
            segs.pop();
        }
    }

    /// Reads one value at `path`; false when it is to be taken out.
    fn walk_value(
        &mut self,
        value: &mut Value,
        rows: &[(&'static OptionSpec, Vec<&'static str>)],
        candidates: &[usize],
        path: &mut Vec<String>,
        segs: &mut Vec<Seg>,
    ) -> bool {
        let depth = path.len();
        let exact = candidates
            .iter()
            .copied()
            .filter(|&i| rows[i].1.len() == depth)
            .min_by_key(|&i| rows[i].0.state != OptionState::Implemented);
        if let Some(i) = exact {
            let spec = rows[i].0;
            if spec.state != OptionState::Implemented {
                let mut given = Vec::new();
                leaf_paths(value, &path.join("."), &mut given);
                for option in given {
                    self.accepted.push(AcceptedOption {
                        option,
                        source: self.name.to_owned(),
                        state: spec.state,
                        description: spec.description,
                    });
                }
                return false;
            }
            if spec.kind != ValueKind::Section {
                // `email:` with nothing after it: Traefik reads an empty
                // value as not given, so the default applies.
                if value.is_null() {
                    return false;
                }
                match convert(value, spec.kind) {
                    Ok(()) => self.leaves.push((path.clone(), segs.clone())),
                    Err(message) => self.bad_value(path, message),
                }
                return true;
            }
        }
        let deeper: Vec<usize> = candidates
            .iter()
            .copied()
            .filter(|&i| rows[i].1.len() > depth)
            .collect();
        // A section holding only options that are not implemented (Traefik's
        // `global`) is taken out once they are.
        let implemented_below = exact.is_some()
            || deeper
                .iter()
                .any(|&i| rows[i].0.state == OptionState::Implemented);
        let keep = self.walk_section(value, rows, &deeper, path, segs);
        keep && implemented_below
    }

    /// Reads a section's value at `path`; false when it is to be taken out.
    fn walk_section(
        &mut self,
        value: &mut Value,
        rows: &[(&'static OptionSpec, Vec<&'static str>)],
        deeper: &[usize],
        path: &mut Vec<String>,
        segs: &mut Vec<Seg>,
    ) -> bool {
        let depth = path.len();
        match value {
            // A section given as a value, as Traefik reads `api: true` or
            // an empty `ping:`.
            Value::Null => {
                *value = Value::Object(Map::new());
                true
            }
            Value::Bool(on) => {
                let on = *on;
                *value = Value::Object(Map::new());
                on
            }
            Value::String(text) => match parse_bool(text) {
                Some(on) => {
                    *value = Value::Object(Map::new());
                    on
                }
                None => {
                    self.bad_value(path, SettingError::NotASection { text: text.clone() });
                    true
                }
            },
            Value::Object(map) => {
                if !deeper.is_empty() {
                    self.walk_object(map, rows, deeper, path, segs);
                }
                true
            }
            Value::Array(items) => {
                let indexed: Vec<usize> = deeper
                    .iter()
                    .copied()
                    .filter(|&i| rows[i].1.get(depth) == Some(&INDEX))
                    .collect();
                if indexed.is_empty() || items.len() > MAX_INDEX {
                    self.bad_value(
                        path,
                        SettingError::NotASection {
                            text: String::from("a list"),
                        },
                    );
                    return true;
                }
                for (n, item) in items.iter_mut().enumerate() {
                    path.push(n.to_string());
                    segs.push(Seg::Index);
                    match item {
                        Value::Object(map) => {
                            self.walk_object(map, rows, &indexed, path, segs);
                        }
                        _ => self.bad_value(
                            path,
                            SettingError::NotASection {
                                text: item.to_string(),
                            },
                        ),
                    }
                    path.pop();
                    segs.pop();
                }
                true
            }
            Value::Number(n) => {
                let text = n.to_string();
                self.bad_value(path, SettingError::NotASection { text });
                true
            }
        }
    }
}

/// The dotted paths of the values under `value`, or `prefix` itself for a
/// scalar or an empty section; a list counts as one value.
fn leaf_paths(value: &Value, prefix: &str, out: &mut Vec<String>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (key, inner) in map {
                leaf_paths(inner, &format!("{prefix}.{key}"), out);
            }
        }
        _ => out.push(prefix.to_owned()),
    }
}

/// Converts a scalar to the type `kind` needs, as Traefik's loaders do
/// (`port: "8080"`, `insecure: "true"`, a number where text is expected),
/// and checks it.
pub(super) fn convert(value: &mut Value, kind: ValueKind) -> Result<(), SettingError> {
    let text = match &*value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Null | Value::Array(_) | Value::Object(_) => None,
    };
    match kind {
        ValueKind::String => {
            if let Some(text) = text {
                *value = Value::String(text);
            }
        }
        ValueKind::Bool => {
            if let Some(text) = text {
                match parse_bool(&text) {
                    Some(b) => *value = Value::Bool(b),
                    None => return Err(SettingError::NotABool { text }),
                }
            }
        }
        ValueKind::Int => {
            if let Some(text) = text {
                match text.trim().parse::<u64>() {
                    Ok(n) => *value = Value::from(n),
                    Err(_) => return Err(SettingError::NotAWholeNumber { text }),
                }
            }
        }
        ValueKind::Duration => {
            if let Value::String(text) = &*value {
                text.parse::<Duration>()?;
            }
        }
        ValueKind::SignedDuration => {
            if let Value::String(text) = &*value {
                text.parse::<SignedDuration>()
                    .map_err(SettingError::Duration)?;
            }
        }
        ValueKind::Address => {
            if let Some(text) = text {
                text.parse::<ListenAddress>()?;
                *value = Value::String(text);
            }
        }
        ValueKind::List => {
            if let Value::String(text) = &*value {
                *value = Value::Array(
                    text.split(',')
                        .map(str::trim)
                        .filter(|item| !item.is_empty())
                        .map(|item| Value::String(item.to_owned()))
                        .collect(),
                );
            }
        }
        ValueKind::Section => {}
    }
    Ok(())
}

/// The 1-based line where the key `path` is written, found by looking for
/// each segment in turn from the line of the one before; `None` when the
/// text does not show it (a key written in a flow mapping, say).
pub(super) fn line_of_path(text: &str, path: &[String]) -> Option<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let mut at = 0;
    for segment in path {
        if options::is_index(segment) {
            continue;
        }
        let found = lines
            .iter()
            .enumerate()
            .skip(at)
            .find(|(_, line)| holds_word(line, segment))?;
        at = found.0;
    }
    Some(at + 1)
}

fn holds_word(line: &str, word: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    let word = word.to_ascii_lowercase();
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    lower.match_indices(&word).any(|(i, _)| {
        let before = lower[..i].chars().next_back();
        let after = lower[i + word.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}
