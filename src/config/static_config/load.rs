//! Loading: defaults, then the file, then the environment, then flags,
//! merged option by option.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

use super::options::{self, Matched, NAME, Style, ValueKind};
use super::{ListenAddress, SettingError, StaticConfig, StaticConfigError};
use crate::config::duration::Duration;
use crate::config::format::{self, Format};

/// The prefix of the environment variables gangway reads.
pub const ENV_PREFIX: &str = "GANGWAY_";

/// `GANGWAY_` variables that are not static configuration options but are
/// read by other parts of gangway or its test suite; [`load`] ignores them
/// instead of rejecting them as unknown. `GANGWAY_TEST_STRICT` is set by
/// `scripts/test` for the whole process tree, gangways under test included;
/// `GANGWAY_BLESS=1` asks the tests to rewrite their golden files, and is
/// inherited by the gangways those tests start.
pub const ENV_ALLOWLIST: &[&str] = &["GANGWAY_TEST_STRICT", "GANGWAY_BLESS"];

/// The files looked for in the working directory, in order, when no
/// configuration file is named.
const DEFAULT_FILES: &[&str] = &["gangway.toml", "gangway.yml", "gangway.yaml"];

/// The flag (and, upper-cased after the prefix, the variable) naming the
/// configuration file.
const CONFIG_FILE_FLAG: &str = "configFile";

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
// Built once per start; boxing the large variant would buy nothing.
#[allow(clippy::large_enum_variant)]
pub enum Loaded {
    /// Run with this configuration; the path is the configuration file
    /// that was read, if any.
    Run(StaticConfig, Option<PathBuf>),
    /// `-h`/`--help`: print this text and exit.
    Help(String),
    /// `--version`: print the version and exit.
    Version,
}

/// Where a setting came from, for error messages.
#[derive(Debug, Clone)]
enum Origin {
    /// A flag, as written without its value (`--log.level`).
    Flag(String),
    /// An environment variable's name.
    Env(String),
}

/// One option set by a flag or an environment variable.
#[derive(Debug, Clone)]
struct Setting {
    origin: Origin,
    option: Matched,
    /// The text given; `None` for a bool or section given without a value.
    value: Option<String>,
}

impl Setting {
    fn bad_value(&self, message: impl Into<SettingError>) -> StaticConfigError {
        let message = message.into();
        let value = self.value.clone().unwrap_or_default();
        match &self.origin {
            Origin::Flag(flag) => StaticConfigError::BadFlagValue {
                flag: flag.clone(),
                value,
                message,
            },
            Origin::Env(var) => StaticConfigError::BadEnvValue {
                var: var.clone(),
                value,
                message,
            },
        }
    }
}

/// What a setting does to the configuration tree.
enum Change {
    Set(Value),
    EnableSection,
    RemoveSection,
}

/// Loads the static configuration.
///
/// `args` are the command-line arguments without the program name, `env`
/// the environment as name/value pairs, and `cwd` the directory relative
/// paths and the default configuration files are looked up in. Each source
/// overrides the ones before it option by option: built-in defaults, the
/// configuration file, `GANGWAY_*` variables, then flags. With no entry
/// point from any source, the result has one named `web` at `:80`.
pub fn load(
    args: &[String],
    env: &[(String, String)],
    cwd: &Path,
) -> Result<Loaded, StaticConfigError> {
    for arg in args {
        if arg == "-h" || arg.eq_ignore_ascii_case("--help") {
            return Ok(Loaded::Help(options::help_text()));
        }
        if arg.eq_ignore_ascii_case("--version") {
            return Ok(Loaded::Version);
        }
    }
    let (flags, flag_config_file) = parse_flags(args)?;
    let (vars, env_config_file) = parse_env(env)?;

    let (mut tree, file_used) = match flag_config_file.or(env_config_file) {
        Some(given) => {
            let path = cwd.join(&given);
            (read_file(&given, &path)?, Some(path))
        }
        None => match DEFAULT_FILES
            .iter()
            .map(|name| cwd.join(name))
            .find(|p| p.is_file())
        {
            Some(path) => {
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                (read_file(&name, &path)?, Some(path))
            }
            None => (Value::Object(Map::new()), None),
        },
    };

    for setting in vars.iter().chain(&flags) {
        apply(&mut tree, setting)?;
        // Checking after each setting pins a bad value on the flag or
        // variable that brought it.
        if let Err(e) = StaticConfig::deserialize(&tree) {
            return Err(setting.bad_value(SettingError::Unreadable(e)));
        }
    }

    if let Some(Value::Object(entry_points)) = tree.get("entryPoints") {
        for (name, entry_point) in entry_points {
            if entry_point.get("address").is_none_or(Value::is_null) {
                return Err(StaticConfigError::EntryPointWithoutAddress { name: name.clone() });
            }
        }
    }
    let mut config = StaticConfig::deserialize(&tree).map_err(|e| StaticConfigError::Merged {
        message: e.to_string(),
    })?;
    if config.entry_points.is_empty() {
        config.entry_points.insert(
            String::from("web"),
            super::EntryPoint {
                address: ListenAddress::default(),
                ..super::EntryPoint::default()
            },
        );
    }
    super::observability::add_internal_entry_point(&mut config);
    config.validate()?;
    Ok(Loaded::Run(config, file_used))
}

/// Reads and parses the configuration file at `path`, calling it `name` in
/// messages. The file is parsed into the typed configuration once so that
/// unknown keys and bad values are reported with their line.
fn read_file(name: &str, path: &Path) -> Result<Value, StaticConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| {
        if source.kind() == std::io::ErrorKind::NotFound {
            StaticConfigError::ConfigFileMissing {
                path: path.to_owned(),
            }
        } else {
            StaticConfigError::ConfigFileUnreadable {
                path: path.to_owned(),
                source,
            }
        }
    })?;
    let format = Format::from_path(path).ok_or_else(|| StaticConfigError::ConfigFileFormat {
        path: PathBuf::from(name),
    })?;
    format::parse_document::<StaticConfig>(name, &text, format)?;
    let tree = format::parse_value(name, &text, format)?;
    if tree.is_object() {
        Ok(tree)
    } else {
        Err(StaticConfigError::ConfigFile(
            format::FormatError::Document {
                name: name.to_owned(),
                message: String::from("expected a table of options at the top level"),
            },
        ))
    }
}

/// Whether an unknown option name looks like a misspelt `configFile`.
fn near_config_file(key: &str) -> bool {
    let squeezed: String = key
        .chars()
        .filter(|c| !matches!(c, '.' | '_' | '-'))
        .collect();
    options::distance(&squeezed, CONFIG_FILE_FLAG) <= 2
}

fn parse_bool(text: &str) -> Option<bool> {
    const TRUE: &[&str] = &["true", "t", "1"];
    const FALSE: &[&str] = &["false", "f", "0"];
    let text = text.trim();
    if TRUE.iter().any(|t| t.eq_ignore_ascii_case(text)) {
        Some(true)
    } else if FALSE.iter().any(|f| f.eq_ignore_ascii_case(text)) {
        Some(false)
    } else {
        None
    }
}

/// Reads the flags: the options they set, in order, and the configuration
/// file if one is named.
fn parse_flags(args: &[String]) -> Result<(Vec<Setting>, Option<String>), StaticConfigError> {
    let mut settings = Vec::new();
    let mut config_file = None;
    let mut rest = args.iter().peekable();
    while let Some(arg) = rest.next() {
        let Some(body) = arg.strip_prefix("--") else {
            return Err(StaticConfigError::UnexpectedArgument { arg: arg.clone() });
        };
        let (key, inline) = match body.split_once('=') {
            Some((key, value)) => (key, Some(value)),
            None => (body, None),
        };
        let flag = format!("--{key}");
        if key.eq_ignore_ascii_case(CONFIG_FILE_FLAG) {
            let value = match inline {
                Some(value) => Some(value.to_owned()),
                None => rest.next_if(|next| !next.starts_with("--")).cloned(),
            };
            match value {
                Some(value) if !value.is_empty() => config_file = Some(value),
                _ => {
                    return Err(StaticConfigError::MissingFlagValue {
                        flag,
                        expected: "a file path",
                    });
                }
            }
            continue;
        }
        let tokens: Vec<&str> = key.split('.').collect();
        let option = options::lookup(&tokens, Style::Flag).map_err(|suggestion| {
            StaticConfigError::UnknownFlag {
                flag: flag.clone(),
                suggestion: if near_config_file(key) {
                    Some(format!("--{CONFIG_FILE_FLAG}"))
                } else {
                    suggestion.map(|path| format!("--{}", path.join(".")))
                },
            }
        })?;
        let kind = option.spec.kind;
        let value = if kind.value_optional() {
            match inline {
                Some("") => None,
                Some(value) => Some(value.to_owned()),
                // `--providers.file.watch false` as well as a bare
                // `--providers.file.watch`.
                None => rest.next_if(|next| parse_bool(next).is_some()).cloned(),
            }
        } else {
            let value = match inline {
                Some(value) => Some(value.to_owned()),
                None => rest.next_if(|next| !next.starts_with("--")).cloned(),
            };
            match value {
                Some(value) if !value.is_empty() || kind == ValueKind::List => Some(value),
                _ => {
                    return Err(StaticConfigError::MissingFlagValue {
                        flag,
                        expected: kind.expected(),
                    });
                }
            }
        };
        settings.push(Setting {
            origin: Origin::Flag(flag),
            option,
            value,
        });
    }
    Ok((settings, config_file))
}

/// Reads the `GANGWAY_*` variables: the options they set, and the
/// configuration file if one is named.
fn parse_env(
    env: &[(String, String)],
) -> Result<(Vec<Setting>, Option<String>), StaticConfigError> {
    let mut settings = Vec::new();
    let mut config_file = None;
    for (var, value) in env {
        let Some(rest) = var.strip_prefix(ENV_PREFIX) else {
            continue;
        };
        if ENV_ALLOWLIST.contains(&var.as_str()) {
            continue;
        }
        if rest.eq_ignore_ascii_case(CONFIG_FILE_FLAG) {
            if !value.is_empty() {
                config_file = Some(value.clone());
            }
            continue;
        }
        let tokens: Vec<&str> = rest.split('_').collect();
        let option = options::lookup(&tokens, Style::Env).map_err(|suggestion| {
            StaticConfigError::UnknownEnv {
                var: var.clone(),
                suggestion: if near_config_file(rest) {
                    Some(format!(
                        "{ENV_PREFIX}{}",
                        CONFIG_FILE_FLAG.to_ascii_uppercase()
                    ))
                } else {
                    suggestion
                        .map(|path| format!("{ENV_PREFIX}{}", path.join("_").to_ascii_uppercase()))
                },
            }
        })?;
        let value = if value.is_empty() && option.spec.kind.value_optional() {
            None
        } else {
            Some(value.clone())
        };
        settings.push(Setting {
            origin: Origin::Env(var.clone()),
            option,
            value,
        });
    }
    Ok((settings, config_file))
}

/// Turns a setting's text into what it does to the tree, checking it
/// against its kind.
fn change(setting: &Setting) -> Result<Change, StaticConfigError> {
    let kind = setting.option.spec.kind;
    let Some(text) = setting.value.as_deref() else {
        return Ok(match kind {
            ValueKind::Section => Change::EnableSection,
            _ => Change::Set(Value::Bool(true)),
        });
    };
    let change = match kind {
        ValueKind::String => Change::Set(Value::String(text.to_owned())),
        ValueKind::Bool => match parse_bool(text) {
            Some(b) => Change::Set(Value::Bool(b)),
            None => return Err(setting.bad_value(not_a_bool(text))),
        },
        ValueKind::Section => match parse_bool(text) {
            Some(true) => Change::EnableSection,
            Some(false) => Change::RemoveSection,
            None => return Err(setting.bad_value(not_a_bool(text))),
        },
        ValueKind::Int => match text.trim().parse::<u64>() {
            Ok(n) => Change::Set(Value::from(n)),
            Err(_) => {
                return Err(setting.bad_value(SettingError::NotAWholeNumber {
                    text: text.to_owned(),
                }));
            }
        },
        ValueKind::Duration => match text.parse::<Duration>() {
            Ok(d) => Change::Set(Value::String(d.to_string())),
            Err(e) => return Err(setting.bad_value(e)),
        },
        ValueKind::SignedDuration => {
            match text.parse::<crate::config::duration::SignedDuration>() {
                Ok(d) => Change::Set(Value::String(d.to_string())),
                Err(e) => return Err(setting.bad_value(e)),
            }
        }
        ValueKind::Address => match text.parse::<ListenAddress>() {
            Ok(a) => Change::Set(Value::String(a.to_string())),
            Err(e) => return Err(setting.bad_value(e)),
        },
        ValueKind::List => Change::Set(Value::Array(
            text.split(',')
                .map(str::trim)
                .filter(|item| !item.is_empty())
                .map(|item| Value::String(item.to_owned()))
                .collect(),
        )),
    };
    Ok(change)
}

fn not_a_bool(text: &str) -> SettingError {
    SettingError::NotABool {
        text: text.to_owned(),
    }
}

/// The key to use in `map` for a user-chosen name: an existing key that
/// differs only in case, so `--entryPoints.WEB.address` and a file's `web`
/// are one entry point, or else the name as given.
fn name_key(map: &Map<String, Value>, name: &str) -> String {
    map.keys()
        .find(|key| key.eq_ignore_ascii_case(name))
        .cloned()
        .unwrap_or_else(|| name.to_owned())
}

/// Applies one setting to the tree at its canonical key path.
fn apply(tree: &mut Value, setting: &Setting) -> Result<(), StaticConfigError> {
    let change = change(setting)?;
    let is_name: Vec<bool> = setting.option.spec.segments().map(|s| s == NAME).collect();
    let path = &setting.option.path;
    let Some((last, parents)) = path.split_last() else {
        return Ok(());
    };
    let mut node = tree;
    for (i, segment) in parents.iter().enumerate() {
        let map = as_object(node).ok_or_else(|| not_an_object(setting))?;
        let key = if is_name.get(i).copied().unwrap_or(false) {
            name_key(map, segment)
        } else {
            segment.clone()
        };
        node = map.entry(key).or_insert_with(|| Value::Object(Map::new()));
    }
    let map = as_object(node).ok_or_else(|| not_an_object(setting))?;
    let key = if is_name.get(parents.len()).copied().unwrap_or(false) {
        name_key(map, last)
    } else {
        last.clone()
    };
    match change {
        Change::Set(value) => {
            map.insert(key, value);
        }
        Change::EnableSection => {
            let section = map.entry(key).or_insert(Value::Null);
            if !section.is_object() {
                *section = Value::Object(Map::new());
            }
        }
        Change::RemoveSection => {
            map.remove(&key);
        }
    }
    Ok(())
}

/// The object at `node`, replacing anything else (such as a YAML null for
/// an empty section) with an empty object. Never `None` in practice.
fn as_object(node: &mut Value) -> Option<&mut Map<String, Value>> {
    if !node.is_object() {
        *node = Value::Object(Map::new());
    }
    node.as_object_mut()
}

fn not_an_object(setting: &Setting) -> StaticConfigError {
    StaticConfigError::Merged {
        message: format!("cannot apply `{}`", setting.option.path.join(".")),
    }
}
