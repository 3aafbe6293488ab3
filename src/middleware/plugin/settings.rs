//! How a plugin's settings are read: the one reader every built-in plugin
//! uses, as Traefik hands settings to a plugin (keys in any case, values
//! given as text converted, lists in any of their written forms).

use crate::config::lenient::Lenient;
use crate::config::problem::PluginProblem;
use crate::middleware::MiddlewareError;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// Which plugin a middleware is: what its settings are read and named as.
pub struct Named<'a> {
    /// The plugin's key (`plugin.<key>`).
    pub key: &'a str,
    /// The plugin's declared `moduleName`, as written.
    pub module: &'a str,
}

impl Named<'_> {
    /// Reads the plugin's settings into `T` as Traefik hands them to a
    /// plugin: keys in any case, numbers and flags that arrive as text
    /// (labels) converted, lists given as `a,b` or as `[0]`, `[1]` entries;
    /// what is not given keeps `T`'s default, which is the plugin's.
    pub fn read<T: DeserializeOwned + Default>(
        &self,
        settings: &Value,
    ) -> Result<T, MiddlewareError> {
        let value = match settings {
            Value::Null | Value::Bool(true) => return Ok(T::default()),
            Value::String(s) if s.is_empty() || s.eq_ignore_ascii_case("true") => {
                return Ok(T::default());
            }
            v => as_lists(v.clone()),
        };
        serde_path_to_error::deserialize(Lenient(value)).map_err(|e| {
            let setting = e.path().to_string();
            self.invalid(
                if setting == "." {
                    "(settings)"
                } else {
                    &setting
                },
                e.into_inner().to_string(),
            )
        })
    }

    /// The error for one of the plugin's settings.
    pub fn invalid(&self, setting: &str, reason: impl Into<String>) -> MiddlewareError {
        MiddlewareError::Plugin(PluginProblem::Setting {
            key: self.key.to_owned(),
            module: self.module.to_owned(),
            setting: setting.to_owned(),
            reason: reason.into(),
        })
    }
}

/// A flag as a plugin's weakly typed settings give it: a boolean, a number
/// (not 0 is true), or text in Go's `strconv.ParseBool` words (`1`, `t`,
/// `TRUE`, `0`, `f`, `False`…), empty text being false.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flag(pub bool);

impl<'de> serde::Deserialize<'de> for Flag {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Words;
        impl serde::de::Visitor<'_> for Words {
            type Value = Flag;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("true or false")
            }
            fn visit_bool<E>(self, v: bool) -> Result<Flag, E> {
                Ok(Flag(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Flag, E> {
                Ok(Flag(v != 0))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Flag, E> {
                Ok(Flag(v != 0))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Flag, E> {
                Ok(Flag(v != 0.0))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Flag, E> {
                match v.trim() {
                    "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(Flag(true)),
                    "" | "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(Flag(false)),
                    other => Err(E::custom(format!("`{other}` is not true or false"))),
                }
            }
        }
        d.deserialize_any(Words)
    }
}

/// Turns objects whose keys are all list indexes (`[0]`, `[1]` from labels
/// and key-value stores, or bare numbers) into lists, in index order.
fn as_lists(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let indexes: Option<Vec<usize>> = map.keys().map(|k| list_index(k)).collect();
            match indexes {
                Some(mut order) if !map.is_empty() => {
                    let mut items: Vec<(usize, Value)> = map
                        .into_iter()
                        .zip(order.drain(..))
                        .map(|((_, v), i)| (i, as_lists(v)))
                        .collect();
                    items.sort_by_key(|(i, _)| *i);
                    Value::Array(items.into_iter().map(|(_, v)| v).collect())
                }
                _ => Value::Object(
                    map.into_iter()
                        .map(|(k, v)| (k, as_lists(v)))
                        .collect::<Map<_, _>>(),
                ),
            }
        }
        Value::Array(items) => Value::Array(items.into_iter().map(as_lists).collect()),
        v => v,
    }
}

fn list_index(key: &str) -> Option<usize> {
    let digits = key
        .strip_prefix('[')
        .and_then(|k| k.strip_suffix(']'))
        .unwrap_or(key);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}
