//! Loading: defaults, then the file, then the environment, then flags,
//! merged option by option.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

use super::options::{
    self, AcceptedOption, Matched, OptionState, Seg, Style, ValueKind, parse_bool,
};
use super::tree::{self, FileWalk, MAX_INDEX};
use super::{ListenAddress, SettingError, StaticConfig, StaticConfigError};
use crate::config::duration::Duration;
use crate::config::format::{self, Format};

/// The prefix of the environment variables gangway reads.
pub const ENV_PREFIX: &str = "GANGWAY_";

/// Traefik's prefix, read the same way so that a Traefik setup's
/// environment works unchanged.
pub const TRAEFIK_ENV_PREFIX: &str = "TRAEFIK_";

/// `GANGWAY_` variables that are not static configuration options but are
/// read by other parts of gangway or its test suite; [`load`] ignores them
/// instead of rejecting them as unknown. `GANGWAY_TEST_STRICT` is set by
/// `scripts/test` for the whole process tree, gangways under test included;
/// `GANGWAY_BLESS=1` asks the tests to rewrite their golden files, and is
/// inherited by the gangways those tests start.
pub const ENV_ALLOWLIST: &[&str] = &["GANGWAY_TEST_STRICT", "GANGWAY_BLESS"];

/// gangway's own file names, looked for in the working directory first.
const GANGWAY_FILES: &[&str] = &["gangway.toml", "gangway.yml", "gangway.yaml"];

/// The extensions of Traefik's file, `traefik.<ext>`, tried in each of
/// Traefik's places in turn.
const TRAEFIK_EXTENSIONS: &[&str] = &[".toml", ".yaml", ".yml"];

/// The flag (and, upper-cased after the prefix, the variable) naming the
/// configuration file.
const CONFIG_FILE_FLAG: &str = "configFile";

/// Where the configuration file is looked for when none is named: first
/// gangway's own names in the working directory, then Traefik's names in
/// the places Traefik's finder tries, in its order: `/etc/traefik/`,
/// `$XDG_CONFIG_HOME/`, `$HOME/.config/` and the working directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchRoots {
    /// The working directory.
    pub cwd: PathBuf,
    /// The system directory, `/etc/traefik` outside tests.
    pub system: PathBuf,
    /// `$XDG_CONFIG_HOME` as written; empty when unset or empty.
    pub xdg_config_home: PathBuf,
    /// `$HOME` as written; empty when unset or empty.
    pub home: PathBuf,
}

impl SearchRoots {
    /// The places for a process with this environment and working
    /// directory.
    pub fn new(env: &[(String, String)], cwd: &Path) -> SearchRoots {
        let var = |name: &str| {
            env.iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| PathBuf::from(v))
                .unwrap_or_default()
        };
        SearchRoots {
            cwd: cwd.to_owned(),
            system: PathBuf::from("/etc/traefik"),
            xdg_config_home: var("XDG_CONFIG_HOME"),
            home: var("HOME"),
        }
    }

    /// Every file looked for, in order.
    pub fn candidates(&self) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = GANGWAY_FILES.iter().map(|f| self.cwd.join(f)).collect();
        // Traefik expands `$XDG_CONFIG_HOME/traefik` and
        // `$HOME/.config/traefik` as text, so an unset variable leaves a
        // path at the root: its image finds a `/traefik.yml` that way.
        let bases = [
            self.system.join("traefik"),
            appended(&self.xdg_config_home, "/traefik"),
            appended(&self.home, "/.config/traefik"),
            self.cwd.join("traefik"),
        ];
        for base in bases {
            out.extend(TRAEFIK_EXTENSIONS.iter().map(|ext| appended(&base, ext)));
        }
        out
    }
}

/// `path` with `tail` appended as text, as a shell expansion would.
fn appended(path: &Path, tail: &str) -> PathBuf {
    let mut text = path.as_os_str().to_owned();
    text.push(tail);
    PathBuf::from(text)
}

/// What loading read, for the log's first lines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Notes {
    /// The configuration file read, if any.
    pub file: Option<PathBuf>,
    /// The environment variables read, by name.
    pub variables: Vec<String>,
}

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
// Built once per start; boxing the large variant would buy nothing.
#[allow(clippy::large_enum_variant)]
pub enum Loaded {
    /// Run with this configuration; the notes say what was read.
    Run(StaticConfig, Notes),
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

impl Origin {
    fn shown(&self) -> String {
        match self {
            Origin::Flag(f) | Origin::Env(f) => f.clone(),
        }
    }
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

    fn accepted(&self) -> AcceptedOption {
        AcceptedOption {
            option: self.option.path.join("."),
            source: self.origin.shown(),
            state: self.option.state(),
            description: self.option.spec.description,
        }
    }
}

/// What a setting does to the configuration tree.
enum Change {
    Set(Value),
    EnableSection,
    RemoveSection,
}

/// Loads the static configuration, looking for the configuration file in
/// the places [`SearchRoots::new`] gives.
///
/// `args` are the command-line arguments without the program name, `env`
/// the environment as name/value pairs, and `cwd` the directory relative
/// paths are resolved in. Each source overrides the ones before it option
/// by option: built-in defaults, the configuration file, `GANGWAY_*` and
/// `TRAEFIK_*` variables, then flags. With no entry point from any source,
/// the result has one named `web` at `:80`. Every problem found is
/// reported; several come as [`StaticConfigError::Several`].
pub fn load(
    args: &[String],
    env: &[(String, String)],
    cwd: &Path,
) -> Result<Loaded, StaticConfigError> {
    load_from(args, env, &SearchRoots::new(env, cwd))
}

/// Whether two paths name one file (through links and `..`).
fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// [`load`] with the places to look for the configuration file given.
pub fn load_from(
    args: &[String],
    env: &[(String, String)],
    roots: &SearchRoots,
) -> Result<Loaded, StaticConfigError> {
    let cwd = roots.cwd.as_path();
    for arg in args {
        if arg == "-h" || arg.eq_ignore_ascii_case("--help") {
            return Ok(Loaded::Help(options::help_text()));
        }
        if arg.eq_ignore_ascii_case("--version") {
            return Ok(Loaded::Version);
        }
    }
    let mut problems = Vec::new();
    let mut accepted = Vec::new();
    let (flags, flag_config_file) = parse_flags(args, &mut problems);
    let (vars, env_config_file, variables) = parse_env(env, &mut problems, &mut accepted);

    let found = match flag_config_file.or(env_config_file) {
        Some(given) => Some((given.clone(), cwd.join(&given))),
        None => roots
            .candidates()
            .into_iter()
            .find(|p| p.is_file())
            .map(|path| {
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                (name, path)
            }),
    };
    let mut tree = Value::Object(Map::new());
    let mut file_used = None;
    if let Some((name, path)) = found {
        match read_file(&name, &path) {
            Ok((file_tree, walk_accepted, walk_problems)) => {
                tree = file_tree;
                accepted.extend(walk_accepted);
                problems.extend(walk_problems);
            }
            Err(e) => problems.push(e),
        }
        file_used = Some(path);
    }

    apply_settings(
        &mut tree,
        vars.iter().chain(&flags),
        &mut problems,
        &mut accepted,
    );

    if let Some(Value::Object(entry_points)) = tree.get("entryPoints") {
        for (name, entry_point) in entry_points {
            if entry_point.get("address").is_none_or(Value::is_null) {
                problems.push(StaticConfigError::EntryPointWithoutAddress { name: name.clone() });
            }
        }
    }
    let config = StaticConfig::deserialize(&tree).map_err(|e| StaticConfigError::Merged {
        message: e.to_string(),
    });
    let mut config = match config {
        Ok(config) if problems.is_empty() => config,
        Ok(_) => return Err(StaticConfigError::from_problems(problems)),
        Err(e) => {
            // The file's values were checked one by one; a problem left
            // for the whole tree is only worth showing alone.
            if problems.is_empty() {
                problems.push(e);
            }
            return Err(StaticConfigError::from_problems(problems));
        }
    };
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
    if let Some(file) = &mut config.providers.file
        && file.directory.is_some()
        && file.filename.take().is_some()
    {
        // Traefik's file provider reads the directory and never looks at
        // the file name when both are given; a setup carrying both starts
        // under Traefik, so it starts here, with the file name reported.
        accepted.push(AcceptedOption {
            option: String::from("providers.file.filename"),
            source: String::from("static configuration"),
            state: OptionState::Unsupported,
            description: BOTH_FILE_SOURCES,
        });
    }
    let provider_file = config
        .providers
        .file
        .as_ref()
        .and_then(|f| f.filename.as_ref());
    if let (Some(static_file), Some(provider_file)) = (&file_used, provider_file)
        && same_file(static_file, &cwd.join(provider_file))
    {
        // One file that is both: the file provider reads its dynamic
        // sections, so nothing of them goes unread.
        accepted.retain(|a| a.description != tree::DYNAMIC_IN_STATIC);
    }
    config.validate()?;
    config.accepted = accepted;
    Ok(Loaded::Run(
        config,
        Notes {
            file: file_used,
            variables,
        },
    ))
}

/// Applies the settings of variables and flags, in order, to the tree the
/// file gave, pinning each problem on the setting that brought it.
fn apply_settings<'a>(
    tree: &mut Value,
    settings: impl Iterator<Item = &'a Setting>,
    problems: &mut Vec<StaticConfigError>,
    accepted: &mut Vec<AcceptedOption>,
) {
    // A bad value the file brought is reported with its key already; it
    // must not be pinned again on every flag applied after it.
    let mut tree_readable = StaticConfig::deserialize(&*tree).is_ok();
    // paerser disables a section given a value other than `true` whatever
    // options are given under it, in any order: removed at the end.
    let mut switched_off: Vec<&[String]> = Vec::new();
    for setting in settings {
        if setting.option.state() != OptionState::Implemented {
            accepted.push(setting.accepted());
            continue;
        }
        if setting.option.kind == ValueKind::Section {
            let path = setting.option.path.as_slice();
            match setting.value.as_deref().map(parse_bool) {
                Some(Some(false)) => {
                    switched_off.push(path);
                    continue;
                }
                Some(None) => {}
                _ => switched_off.retain(|off| !same_path(off, path)),
            }
        }
        let before = tree.clone();
        if let Err(e) = apply(tree, setting) {
            problems.push(e);
            *tree = before;
            continue;
        }
        // Checking after each setting pins a bad value on the flag or
        // variable that brought it.
        match StaticConfig::deserialize(&*tree) {
            Ok(_) => tree_readable = true,
            Err(e) if tree_readable => {
                problems.push(setting.bad_value(SettingError::Unreadable(e)));
                *tree = before;
            }
            Err(_) => {
                // Unreadable before this setting: check it alone.
                let mut alone = Value::Object(Map::new());
                if apply(&mut alone, setting).is_ok()
                    && let Err(e) = StaticConfig::deserialize(&alone)
                {
                    problems.push(setting.bad_value(SettingError::Unreadable(e)));
                    *tree = before;
                }
            }
        }
    }
    for path in switched_off {
        remove_at(tree, path);
    }
}

/// Whether two option paths name the same option: user-chosen names match
/// in any case, as [`name_key`] matches them.
fn same_path(a: &[String], b: &[String]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.eq_ignore_ascii_case(y))
}

/// Removes the node at `path`, if there is one; makes nothing on the way.
fn remove_at(tree: &mut Value, path: &[String]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut node = tree;
    for segment in parents {
        let next = match node {
            Value::Object(map) => {
                let key = name_key(map, segment);
                map.get_mut(&key)
            }
            Value::Array(items) => segment.parse::<usize>().ok().and_then(|i| items.get_mut(i)),
            _ => None,
        };
        let Some(next) = next else {
            return;
        };
        node = next;
    }
    if let Some(map) = node.as_object_mut() {
        let key = name_key(map, last);
        map.remove(&key);
    }
}

/// Reads and parses the configuration file at `path`, calling it `name` in
/// messages: its tree with keys in Traefik's spelling, the options it gives
/// that are accepted without being implemented, and every problem found.
fn read_file(
    name: &str,
    path: &Path,
) -> Result<(Value, Vec<AcceptedOption>, Vec<StaticConfigError>), StaticConfigError> {
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
    let mut tree = format::parse_value(name, &text, format)?;
    if !tree.is_object() {
        return Err(StaticConfigError::ConfigFile(
            format::FormatError::Document {
                name: name.to_owned(),
                message: String::from("expected a table of options at the top level"),
            },
        ));
    }
    let mut walk = FileWalk::new(name, &text);
    walk.walk(&mut tree);
    // Each value alone, so that every bad one is named with its key.
    let leaves = std::mem::take(&mut walk.leaves);
    for (path, segs) in leaves {
        let Some(value) = value_at(&tree, &path) else {
            continue;
        };
        let mut alone = Value::Object(Map::new());
        if set_path(&mut alone, &path, &segs, value.clone()).is_none() {
            continue;
        }
        if let Err(e) = StaticConfig::deserialize(&alone) {
            walk.problems.push(StaticConfigError::BadKeyValue {
                file: name.to_owned(),
                line: tree::line_of_path(&text, &path),
                key: path.join("."),
                message: SettingError::Unreadable(e),
            });
        }
    }
    Ok((tree, walk.accepted, walk.problems))
}

/// The value at a concrete path, through objects and lists.
fn value_at<'a>(tree: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut node = tree;
    for segment in path {
        node = match node {
            Value::Object(map) => map.get(segment)?,
            Value::Array(items) => items.get(segment.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(node)
}

/// Whether an unknown option name looks like a misspelt `configFile`.
fn near_config_file(key: &str) -> bool {
    let squeezed: String = key
        .chars()
        .filter(|c| !matches!(c, '.' | '_' | '-'))
        .collect();
    options::distance(&squeezed, CONFIG_FILE_FLAG) <= 2
}

/// Reads the flags: the options they set, in order, and the configuration
/// file if one is named. Problems are added to `problems` and the flag
/// skipped, so that every one is reported.
fn parse_flags(
    args: &[String],
    problems: &mut Vec<StaticConfigError>,
) -> (Vec<Setting>, Option<String>) {
    let mut settings = Vec::new();
    let mut config_file = None;
    let mut rest = args.iter().peekable();
    while let Some(arg) = rest.next() {
        let Some(body) = arg.strip_prefix("--") else {
            problems.push(StaticConfigError::UnexpectedArgument { arg: arg.clone() });
            continue;
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
                _ => problems.push(StaticConfigError::MissingFlagValue {
                    flag,
                    expected: "a file path",
                }),
            }
            continue;
        }
        let tokens = options::flag_tokens(key);
        let option = match options::lookup(&tokens, Style::Flag) {
            Ok(option) => option,
            Err(suggestion) => {
                problems.push(StaticConfigError::UnknownFlag {
                    flag: flag.clone(),
                    suggestion: if near_config_file(key) {
                        Some(format!("--{CONFIG_FILE_FLAG}"))
                    } else {
                        suggestion.map(|path| format!("--{}", path.join(".")))
                    },
                });
                // A value given apart belongs to the unknown flag.
                if inline.is_none() {
                    rest.next_if(|next| !next.starts_with("--"));
                }
                continue;
            }
        };
        let kind = option.kind;
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
                // An option that is not implemented is taken as given.
                _ if option.state() != OptionState::Implemented => None,
                _ => {
                    problems.push(StaticConfigError::MissingFlagValue {
                        flag,
                        expected: kind.expected(),
                    });
                    continue;
                }
            }
        };
        settings.push(Setting {
            origin: Origin::Flag(flag),
            option,
            value,
        });
    }
    (settings, config_file)
}

/// Reads the `GANGWAY_*` and `TRAEFIK_*` variables: the options they set,
/// the configuration file if one is named, and the names of the variables
/// read. One option set under both prefixes is a problem naming both.
fn parse_env(
    env: &[(String, String)],
    problems: &mut Vec<StaticConfigError>,
    not_read: &mut Vec<AcceptedOption>,
) -> (Vec<Setting>, Option<String>, Vec<String>) {
    let roots = traefik_env_roots();
    let mut settings: Vec<Setting> = Vec::new();
    let mut config_file: Option<(String, String)> = None;
    let mut read = Vec::new();
    for (var, value) in env {
        let Some((prefix, rest)) = [ENV_PREFIX, TRAEFIK_ENV_PREFIX]
            .into_iter()
            .find_map(|p| var.strip_prefix(p).map(|rest| (p, rest)))
        else {
            continue;
        };
        if ENV_ALLOWLIST.contains(&var.as_str()) {
            continue;
        }
        if rest.eq_ignore_ascii_case(CONFIG_FILE_FLAG) {
            if !value.is_empty() {
                if let Some((other, _)) = &config_file {
                    problems.push(StaticConfigError::BothPrefixes {
                        first: other.clone(),
                        second: var.clone(),
                        option: String::from(CONFIG_FILE_FLAG),
                    });
                }
                config_file = Some((var.clone(), value.clone()));
                read.push(var.clone());
            }
            continue;
        }
        // Traefik reads only the TRAEFIK_ variables that begin with one of
        // its sections' names (TRAEFIK_LOG…, TRAEFIK_ENTRYPOINTS…); compose
        // files often pass others (TRAEFIK_DOMAIN, TRAEFIK_DASHBOARD_CREDENTIALS)
        // for labels or scripts. They are not configuration: noted, not
        // refused, so such a setup starts as it does under Traefik.
        if prefix == TRAEFIK_ENV_PREFIX && !roots.iter().any(|root| rest.starts_with(root)) {
            not_read.push(AcceptedOption {
                option: var.clone(),
                source: String::from("environment"),
                state: OptionState::Inert,
                description: NOT_CONFIGURATION,
            });
            continue;
        }
        let tokens: Vec<&str> = rest.split('_').collect();
        let option = match options::lookup(&tokens, Style::Env) {
            Ok(option) => option,
            Err(suggestion) => {
                problems.push(StaticConfigError::UnknownEnv {
                    var: var.clone(),
                    suggestion: if near_config_file(rest) {
                        Some(format!("{prefix}{}", CONFIG_FILE_FLAG.to_ascii_uppercase()))
                    } else {
                        suggestion
                            .map(|path| format!("{prefix}{}", path.join("_").to_ascii_uppercase()))
                    },
                });
                continue;
            }
        };
        if let Some(other) = settings.iter().find(|s| {
            s.option.path.len() == option.path.len()
                && s.option
                    .path
                    .iter()
                    .zip(&option.path)
                    .all(|(a, b)| a.eq_ignore_ascii_case(b))
                && !matches!(&s.origin, Origin::Env(v) if v.starts_with(prefix))
        }) {
            problems.push(StaticConfigError::BothPrefixes {
                first: other.origin.shown(),
                second: var.clone(),
                option: option.path.join("."),
            });
            continue;
        }
        let value = if value.is_empty() && option.kind.value_optional() {
            None
        } else {
            Some(value.clone())
        };
        read.push(var.clone());
        settings.push(Setting {
            origin: Origin::Env(var.clone()),
            option,
            value,
        });
    }
    (settings, config_file.map(|(_, file)| file), read)
}

/// What the log, `/api/overview` and `check` say of `providers.file.filename`
/// given beside `providers.file.directory`.
const BOTH_FILE_SOURCES: &str = "Ignored: `providers.file.directory` is set too, and Traefik then \
     reads the directory only; so does gangway. Keep one of the two.";

/// What the log, `/api/overview` and `check` say of a `TRAEFIK_` variable
/// that names no section.
const NOT_CONFIGURATION: &str = "Not static configuration: Traefik reads only TRAEFIK_ variables \
     that begin with a section's name (TRAEFIK_LOG_…, TRAEFIK_ENTRYPOINTS_…), and so does gangway.";

/// The sections' names as a `TRAEFIK_` variable spells them after the
/// prefix (`LOG`, `ENTRYPOINTS`, `CERTIFICATESRESOLVERS`), each once.
fn traefik_env_roots() -> Vec<String> {
    let mut roots: Vec<String> = options::all_options()
        .filter_map(|spec| spec.segments().next())
        .map(str::to_ascii_uppercase)
        .collect();
    roots.sort();
    roots.dedup();
    roots
}

/// Turns a setting's text into what it does to the tree, checking it
/// against its kind.
fn change(setting: &Setting) -> Result<Change, StaticConfigError> {
    let kind = setting.option.kind;
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
    let path = &setting.option.path;
    let segs = &setting.option.segs;
    match change {
        Change::Set(value) => {
            set_path(tree, path, segs, value).ok_or_else(|| not_an_object(setting))
        }
        Change::EnableSection => {
            // A list (`…tls.domains=true`) is a list of sections.
            let list = setting.option.spec.segments().nth(path.len()) == Some(options::INDEX);
            let node = node_at(tree, path, segs).ok_or_else(|| not_an_object(setting))?;
            if list {
                if !node.is_array() {
                    *node = Value::Array(Vec::new());
                }
            } else if !node.is_object() {
                *node = Value::Object(Map::new());
            }
            Ok(())
        }
        Change::RemoveSection => {
            let Some((last, parents)) = path.split_last() else {
                return Ok(());
            };
            let parent_segs = segs.get(..parents.len()).unwrap_or_default();
            let node = node_at(tree, parents, parent_segs).ok_or_else(|| not_an_object(setting))?;
            if let Some(map) = node.as_object_mut() {
                let key = name_key(map, last);
                map.remove(&key);
            }
            Ok(())
        }
    }
}

/// Sets the value at a concrete path, making the sections and list items
/// on the way.
pub(super) fn set_path(
    tree: &mut Value,
    path: &[String],
    segs: &[Seg],
    value: Value,
) -> Option<()> {
    *node_at(tree, path, segs)? = value;
    Some(())
}

/// The node at a concrete path, made if missing: a user-chosen name
/// matches an existing one in any case, a list index grows the list.
fn node_at<'a>(tree: &'a mut Value, path: &[String], segs: &[Seg]) -> Option<&'a mut Value> {
    let mut node = tree;
    for (i, segment) in path.iter().enumerate() {
        match segs.get(i).copied().unwrap_or(Seg::Literal) {
            Seg::Index => {
                let index: usize = segment.parse().ok()?;
                if index >= MAX_INDEX {
                    return None;
                }
                if !node.is_array() {
                    *node = Value::Array(Vec::new());
                }
                let items = node.as_array_mut()?;
                if items.len() <= index {
                    items.resize(index + 1, Value::Object(Map::new()));
                }
                node = items.get_mut(index)?;
            }
            seg => {
                let map = as_object(node)?;
                let key = if seg == Seg::Name {
                    name_key(map, segment)
                } else {
                    segment.clone()
                };
                node = map.entry(key).or_insert(Value::Null);
            }
        }
    }
    Some(node)
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
