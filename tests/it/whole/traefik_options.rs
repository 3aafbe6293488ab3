//! Every option of Traefik v3's static configuration reference
//! (`tests/traefik/static-options.txt`, one plausible value each), fed to
//! the real binary as a Traefik user would: to `gangway check` as flags,
//! as `TRAEFIK_*` variables and as a `traefik.yml`, and to gangway's start.
//! No real Traefik name may be refused.

use crate::support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Map, Value};
use support::{binary, eventually, free_port};

/// Traefik names gangway still refuses (none today). A name put here must
/// be refused, and is flagged as soon as it is accepted.
const PENDING: &[&str] = &[];

/// (option with names filled in, value), from the fixture.
fn options() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/traefik/static-options.txt"),
    )
    .expect("read the fixture");
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|line| {
            let (name, value) = line.split_once(' ').expect("`name value`");
            let name = name
                .replace("certificatesResolvers.<name>", "certificatesResolvers.le")
                .replace("<name>", "web");
            (name, value.to_owned())
        })
        .collect()
}

fn is_pending(option: &str) -> bool {
    PENDING.iter().any(|p| p.eq_ignore_ascii_case(option))
}

/// Whether an option goes in a configuration that must load: not pending,
/// and not `providers.file.directory`, which excludes `filename`.
fn loadable(option: &str) -> bool {
    !is_pending(option) && option != "providers.file.directory"
}

/// Runs `gangway check` in `dir` with `args` and `env`; (status, stdout).
fn check(dir: &Path, args: &[String], env: &[(String, String)]) -> (i32, String) {
    let out = Command::new(binary())
        .arg("check")
        .args(args)
        .current_dir(dir)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .output()
        .expect("run gangway check");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// The lines of `output` that refuse a name, each with the name it refuses.
fn refusals(output: &str) -> Vec<&str> {
    output
        .lines()
        .filter(|l| l.contains("unknown option") || l.contains("unknown environment variable"))
        .collect()
}

/// Asserts that the refusals are exactly the pending names, found by
/// `shown` (how a pending name appears in a refusal).
fn assert_only_pending_refused(output: &str, shown: impl Fn(&str) -> String) {
    let refused = refusals(output);
    let unexpected: Vec<&&str> = refused
        .iter()
        .filter(|line| {
            !PENDING
                .iter()
                .any(|p| line.to_lowercase().contains(&shown(p).to_lowercase()))
        })
        .collect();
    assert!(
        unexpected.is_empty(),
        "real Traefik names refused:\n{unexpected:#?}\n\n{output}"
    );
    let accepted_now: Vec<&&str> = PENDING
        .iter()
        .filter(|p| {
            !refused
                .iter()
                .any(|line| line.to_lowercase().contains(&shown(p).to_lowercase()))
        })
        .collect();
    assert!(
        accepted_now.is_empty(),
        "accepted now, take them off PENDING: {accepted_now:?}"
    );
}

fn flag(option: &str, value: &str) -> String {
    format!("--{option}={value}")
}

/// A variable's name for an option: `TRAEFIK_`, then the path in capitals
/// with `_` for dots and list brackets.
fn variable(option: &str) -> String {
    let body: String = option
        .replace("[", ".")
        .replace(']', "")
        .replace('.', "_")
        .to_uppercase();
    format!("TRAEFIK_{body}")
}

#[test]
fn check_accepts_every_traefik_option_as_a_flag() {
    let dir = tempfile::tempdir().unwrap();
    let args: Vec<String> = options().iter().map(|(o, v)| flag(o, v)).collect();
    assert!(args.len() > 500, "the whole reference: {}", args.len());
    let (_, out) = check(dir.path(), &args, &[]);
    assert_only_pending_refused(&out, |p| format!("--{p}:"));
    // Without the pending names it loads, and each option that is not
    // implemented is named, with its state.
    let args: Vec<String> = options()
        .iter()
        .filter(|(o, _)| loadable(o))
        .map(|(o, v)| flag(o, v))
        .collect();
    let (_, out) = check(dir.path(), &args, &[]);
    assert!(refusals(&out).is_empty(), "{out}");
    assert!(
        out.contains("note: static configuration: global.checkNewVersion (inert"),
        "{out}"
    );
    assert!(
        out.contains("warning: static configuration: hostResolver.cnameFlattening (unsupported"),
        "{out}"
    );
}

#[test]
fn check_accepts_every_traefik_option_as_a_variable() {
    let dir = tempfile::tempdir().unwrap();
    let env: Vec<(String, String)> = options()
        .iter()
        .map(|(o, v)| (variable(o), v.clone()))
        .collect();
    let (_, out) = check(dir.path(), &[], &env);
    assert_only_pending_refused(&out, |p| format!("{}:", variable(p)));
    let env: Vec<(String, String)> = options()
        .iter()
        .filter(|(o, _)| loadable(o))
        .map(|(o, v)| (variable(o), v.clone()))
        .collect();
    let (_, out) = check(dir.path(), &[], &env);
    assert!(refusals(&out).is_empty(), "{out}");
    assert!(
        out.contains("global.sendAnonymousUsage (inert, from TRAEFIK_GLOBAL_SENDANONYMOUSUSAGE)"),
        "{out}"
    );
}

/// Every option in one tree, the way a `traefik.yml` writes them: a section
/// given a value of its own only when nothing is set beneath it.
fn traefik_tree(options: &[(String, String)]) -> Value {
    let mut tree = Value::Object(Map::new());
    for (option, value) in options {
        let lower = option.to_lowercase();
        let has_children = options.iter().any(|(o, _)| {
            let o = o.to_lowercase();
            o.starts_with(&format!("{lower}.")) || o.starts_with(&format!("{lower}["))
        });
        if has_children {
            continue;
        }
        let typed = match value.as_str() {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            v => v
                .parse::<u64>()
                .map(Value::from)
                .unwrap_or_else(|_| Value::String(v.to_owned())),
        };
        let mut node = &mut tree;
        let segments: Vec<&str> = option.split('.').collect();
        for (i, segment) in segments.iter().enumerate() {
            let last = i + 1 == segments.len();
            let (key, index) = match segment.strip_suffix(']').and_then(|s| s.split_once('[')) {
                Some((key, index)) => (key, Some(index.parse::<usize>().unwrap())),
                None => (*segment, None),
            };
            let map = node.as_object_mut().expect("a section");
            let child = map.entry(key.to_owned()).or_insert_with(|| {
                if index.is_some() {
                    Value::Array(Vec::new())
                } else if last {
                    Value::Null
                } else {
                    Value::Object(Map::new())
                }
            });
            node = match index {
                Some(n) => {
                    let items = child.as_array_mut().expect("a list");
                    while items.len() <= n {
                        items.push(Value::Object(Map::new()));
                    }
                    &mut items[n]
                }
                None => child,
            };
            if last {
                *node = typed.clone();
            }
        }
    }
    tree
}

#[test]
fn check_accepts_every_traefik_option_in_a_traefik_yml() {
    let dir = tempfile::tempdir().unwrap();
    let options: Vec<(String, String)> =
        options().into_iter().filter(|(o, _)| loadable(o)).collect();
    let yaml = serde_yaml::to_string(&traefik_tree(&options)).unwrap();
    std::fs::write(dir.path().join("traefik.yml"), &yaml).unwrap();
    let (_, out) = check(dir.path(), &[], &[]);
    let refused = refusals(&out);
    assert!(
        refused.is_empty(),
        "refused:\n{refused:#?}\n\n{yaml}\n{out}"
    );
    assert!(
        out.contains("hostResolver.cnameFlattening (unsupported, from traefik.yml)"),
        "{out}"
    );
}

/// The options `gangway --help` lists as accepted without being
/// implemented, with the fixture's values.
fn not_implemented() -> Vec<(String, String)> {
    let help = Command::new(binary()).arg("--help").output().unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    let listed: Vec<String> = help
        .lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            match (words.next(), words.next(), words.next()) {
                (Some("inert" | "unsupported"), Some(path), None) => Some(
                    path.replace("certificatesResolvers.<name>", "certificatesResolvers.le")
                        .replace("<name>", "web"),
                ),
                _ => None,
            }
        })
        .collect();
    assert!(listed.len() > 200, "{}", listed.len());
    options()
        .into_iter()
        .filter(|(o, _)| listed.iter().any(|l| l.eq_ignore_ascii_case(o)))
        .collect()
}

/// Starts gangway in `dir` with `args`; waits until it listens on `port`
/// and returns its log, then stops it.
async fn start_and_log(dir: &Path, args: &[String], port: u16) -> String {
    start_and_log_with(dir, args, &[], port).await
}

/// [`start_and_log`] with these environment variables (and no others).
async fn start_and_log_with(
    dir: &Path,
    args: &[String],
    env: &[(&str, &Path)],
    port: u16,
) -> String {
    let log_path = dir.join("gangway.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let mut child = Command::new(binary())
        .args(args)
        .current_dir(dir)
        .env_clear()
        .envs(env.iter().copied())
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    let exited = std::cell::Cell::new(false);
    eventually(Duration::from_secs(10), "gangway listens", || {
        exited.set(child.try_wait().is_ok_and(|s| s.is_some()));
        let exited = exited.get();
        async move {
            exited
                || tokio::net::TcpStream::connect(("127.0.0.1", port))
                    .await
                    .is_ok()
        }
    })
    .await;
    let _ = child.kill();
    let _ = child.wait();
    let text = std::fs::read_to_string(&log_path).unwrap();
    assert!(!exited.get(), "gangway exited at start:\n{text}");
    text
}

#[tokio::test]
async fn gangway_starts_with_every_option_it_does_not_implement_and_names_each() {
    let options = not_implemented();
    // As flags.
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut args = vec![format!("--entryPoints.web.address=127.0.0.1:{port}")];
    args.extend(options.iter().map(|(o, v)| flag(o, v)));
    let log = start_and_log(dir.path(), &args, port).await;
    for (option, _) in &options {
        assert!(
            log.lines().any(|l| l.contains(&format!("option={option} "))
                || l.contains(&format!("option={option}\n"))),
            "{option} is not named in the log:\n{log}"
        );
    }
    // In a traefik.yml found in the working directory.
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut all = options.clone();
    all.push((
        String::from("entryPoints.web.address"),
        format!("127.0.0.1:{port}"),
    ));
    // Options under `providers.file` switch the file provider on, in
    // Traefik as here; it then needs something to read.
    std::fs::write(dir.path().join("dynamic.yml"), "").unwrap();
    all.push((
        String::from("providers.file.filename"),
        String::from("dynamic.yml"),
    ));
    let yaml = serde_yaml::to_string(&traefik_tree(&all)).unwrap();
    std::fs::write(dir.path().join("traefik.yml"), &yaml).unwrap();
    let log = start_and_log(dir.path(), &[], port).await;
    assert!(log.contains("traefik.yml"), "{log}");
    assert!(log.contains("option=global.checkNewVersion"), "{log}");
    assert!(log.contains("option=hostResolver.cnameFlattening"), "{log}");
}

#[tokio::test]
async fn a_traefik_yml_in_xdg_config_home_is_found_as_traefik_finds_it() {
    let dir = tempfile::tempdir().unwrap();
    let (xdg, work) = (dir.path().join("xdg"), dir.path().join("work"));
    for d in [&xdg, &work] {
        std::fs::create_dir_all(d).unwrap();
    }
    let port = free_port();
    std::fs::write(
        xdg.join("traefik.yml"),
        format!("entryPoints:\n  web:\n    address: 127.0.0.1:{port}\n"),
    )
    .unwrap();
    let log = start_and_log_with(&work, &[], &[("XDG_CONFIG_HOME", &xdg)], port).await;
    assert!(
        log.contains(&xdg.join("traefik.yml").display().to_string()),
        "{log}"
    );
}

#[tokio::test]
async fn a_section_flag_set_to_false_beside_its_options_starts_as_in_traefik() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let args: Vec<String> = [
        "--providers.docker=false",
        "--providers.docker.exposedbydefault=false",
        "--certificatesresolvers.le.acme.tlschallenge=false",
        "--certificatesresolvers.le.acme.email=admin@example.com",
        "--certificatesresolvers.le.acme.httpchallenge.entrypoint=web",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .chain([format!("--entrypoints.web.address=127.0.0.1:{port}")])
    .collect();
    let log = start_and_log(dir.path(), &args, port).await;
    assert!(!log.contains("ERR"), "{log}");
}
