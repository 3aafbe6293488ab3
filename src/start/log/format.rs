//! The two forms of a log line Traefik writes: `common`, a text line
//! (`2026-01-02T15:04:05Z INF message key=value`, coloured on a terminal
//! unless told not to), and `json`, one object per line with `level`,
//! `time` and `message` beside the event's own fields.

use crate::clock::Utc;
use std::fmt::{self, Write as _};
use std::time::SystemTime;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// Which form, and whether `common` is coloured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineFormat {
    /// Traefik's text line.
    Common {
        /// ANSI colours on the time, level and field names.
        color: bool,
    },
    /// One JSON object per line.
    Json,
}

/// A field's value, as the event gave it.
enum Value {
    Text(String),
    Int(i64),
    Uint(u64),
    Float(f64),
    Bool(bool),
}

/// The message and the other fields of one event, in the order given.
#[derive(Default)]
struct Fields {
    message: String,
    others: Vec<(&'static str, Value)>,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message = value.to_owned();
        } else {
            self.others
                .push((field.name(), Value::Text(value.to_owned())));
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.others.push((field.name(), Value::Int(value)));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.others.push((field.name(), Value::Uint(value)));
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.others.push((field.name(), Value::Float(value)));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.others.push((field.name(), Value::Bool(value)));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let text = format!("{value:?}");
        if field.name() == "message" {
            self.message = text;
        } else {
            self.others.push((field.name(), Value::Text(text)));
        }
    }
}

/// Traefik's (zerolog's) level names: JSON's and the text line's.
fn level_names(level: Level) -> (&'static str, &'static str) {
    match level {
        Level::TRACE => ("trace", "TRC"),
        Level::DEBUG => ("debug", "DBG"),
        Level::INFO => ("info", "INF"),
        Level::WARN => ("warn", "WRN"),
        Level::ERROR => ("error", "ERR"),
    }
}

/// The level's colour in the text line.
fn level_color(level: Level) -> &'static str {
    match level {
        Level::TRACE => "\x1b[35m",
        Level::DEBUG => "\x1b[33m",
        Level::INFO => "\x1b[32m",
        Level::WARN => "\x1b[31m",
        Level::ERROR => "\x1b[1m\x1b[31m",
    }
}

const RESET: &str = "\x1b[0m";
const GREY: &str = "\x1b[90m";
const CYAN: &str = "\x1b[36m";

impl<S, N> FormatEvent<S, N> for LineFormat
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let level = *event.metadata().level();
        let time = Utc::of(SystemTime::now()).seconds();
        let mut line = String::with_capacity(128);
        match *self {
            LineFormat::Json => json_line(level, &time, &fields, &mut line),
            LineFormat::Common { color } => text_line(level, &time, &fields, color, &mut line),
        }
        writeln!(writer, "{line}")
    }
}

fn json_line(level: Level, time: &str, fields: &Fields, out: &mut String) {
    let mut map = serde_json::Map::with_capacity(fields.others.len() + 3);
    map.insert("level".into(), level_names(level).0.into());
    map.insert("time".into(), time.into());
    for (name, value) in &fields.others {
        let v = match value {
            Value::Text(t) => serde_json::Value::from(t.as_str()),
            Value::Int(i) => (*i).into(),
            Value::Uint(u) => (*u).into(),
            Value::Float(f) => (*f).into(),
            Value::Bool(b) => (*b).into(),
        };
        // The three names Traefik gives its own keys stay theirs.
        let key = match *name {
            "level" | "time" | "message" => format!("field_{name}"),
            other => other.to_owned(),
        };
        map.insert(key, v);
    }
    map.insert("message".into(), fields.message.as_str().into());
    out.push_str(&serde_json::Value::Object(map).to_string());
}

/// A value that would be misread unquoted is written as a quoted string.
fn needs_quotes(s: &str) -> bool {
    s.is_empty()
        || s.chars()
            .any(|c| c <= ' ' || c == '"' || c == '\\' || c == '=')
}

fn text_line(level: Level, time: &str, fields: &Fields, color: bool, out: &mut String) {
    let short = level_names(level).1;
    if color {
        let _ = write!(
            out,
            "{GREY}{time}{RESET} {}{short}{RESET}",
            level_color(level)
        );
    } else {
        let _ = write!(out, "{time} {short}");
    }
    if !fields.message.is_empty() {
        out.push(' ');
        out.push_str(&fields.message);
    }
    // Sorted by name, as zerolog's console writer prints them.
    let mut others: Vec<&(&'static str, Value)> = fields.others.iter().collect();
    others.sort_by_key(|(name, _)| *name);
    for (name, value) in others {
        out.push(' ');
        if color {
            let _ = write!(out, "{CYAN}{name}={RESET}");
        } else {
            let _ = write!(out, "{name}=");
        }
        let _ = match value {
            Value::Text(t) if needs_quotes(t) => {
                write!(out, "{}", serde_json::Value::from(t.as_str()))
            }
            Value::Text(t) => write!(out, "{t}"),
            Value::Int(i) => write!(out, "{i}"),
            Value::Uint(u) => write!(out, "{u}"),
            Value::Float(f) => write!(out, "{f}"),
            Value::Bool(b) => write!(out, "{b}"),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields() -> Fields {
        Fields {
            message: "configuration loaded".into(),
            others: vec![
                ("routers", Value::Uint(3)),
                ("file", Value::Text("/etc/gangway/dynamic.toml".into())),
                ("note", Value::Text("two words".into())),
            ],
        }
    }

    #[test]
    fn json_lines_carry_traefiks_keys() {
        let mut line = String::new();
        json_line(Level::WARN, "2026-01-02T15:04:05Z", &fields(), &mut line);
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["level"], "warn");
        assert_eq!(v["time"], "2026-01-02T15:04:05Z");
        assert_eq!(v["message"], "configuration loaded");
        assert_eq!(v["routers"], 3);
        assert_eq!(v["file"], "/etc/gangway/dynamic.toml");
    }

    #[test]
    fn text_lines_look_like_traefiks() {
        let mut line = String::new();
        text_line(
            Level::INFO,
            "2026-01-02T15:04:05Z",
            &fields(),
            false,
            &mut line,
        );
        assert_eq!(
            line,
            "2026-01-02T15:04:05Z INF configuration loaded file=/etc/gangway/dynamic.toml note=\"two words\" routers=3"
        );
        let mut coloured = String::new();
        text_line(
            Level::ERROR,
            "2026-01-02T15:04:05Z",
            &fields(),
            true,
            &mut coloured,
        );
        assert!(
            coloured.starts_with(
                "\x1b[90m2026-01-02T15:04:05Z\x1b[0m \x1b[1m\x1b[31mERR\x1b[0m configuration loaded"
            ),
            "{coloured:?}"
        );
    }
}
