//! The dashboard in a real browser: Debian's Chromium driven by
//! playwright-core, with the driver scripts in `tests/dashboard`
//! (`scripts/ci/browser-up` installs both).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

/// How long a driver script may take.
const DRIVE: Duration = Duration::from_secs(180);

/// Chromium and the folder of the driver scripts, or what is missing.
fn parts() -> Result<(PathBuf, PathBuf), String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/dashboard");
    let chromium = std::env::var_os("CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    let mut missing = Vec::new();
    if !chromium.exists() {
        missing.push(format!("{} (Debian's chromium)", chromium.display()));
    }
    let node = std::process::Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !node.is_ok_and(|s| s.success()) {
        missing.push("node".to_owned());
    }
    if !dir.join("node_modules/playwright-core").is_dir() {
        missing.push(format!("{}/node_modules/playwright-core", dir.display()));
    }
    if missing.is_empty() {
        Ok((chromium, dir))
    } else {
        Err(format!(
            "missing {} (scripts/ci/browser-up installs them)",
            missing.join(", ")
        ))
    }
}

/// The browser parts; without them, a failure under
/// `GANGWAY_TEST_STRICT=1` and otherwise None, with `test` saying it skips
/// its browser check.
pub fn parts_or_skip(test: &str) -> Option<(PathBuf, PathBuf)> {
    match parts() {
        Ok(parts) => Some(parts),
        Err(why) if std::env::var("GANGWAY_TEST_STRICT").as_deref() == Ok("1") => {
            panic!("{test}: the browser check cannot run: {why}")
        }
        Err(why) => {
            eprintln!("{test}: SKIPPED the browser check: {why}");
            None
        }
    }
}

/// Runs the driver `script` against the dashboard of the gangway whose
/// internal entry point is `base`, with `env` for what it should find;
/// panics with its transcript when one of its checks fails; skipped as
/// `parts_or_skip` says.
pub async fn drive(test: &str, script: &str, base: &str, env: &[(&str, &str)]) {
    let Some((chromium, dir)) = parts_or_skip(test) else {
        return;
    };
    let mut command = tokio::process::Command::new("node");
    command
        .arg(script)
        .current_dir(&dir)
        .env("GANGWAY_URL", base)
        .env("CHROMIUM", &chromium)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let out = tokio::time::timeout(DRIVE, command.output())
        .await
        .unwrap_or_else(|_| panic!("{test}: {script} took longer than {DRIVE:?}"))
        .unwrap_or_else(|e| panic!("{test}: starting node {script}: {e}"));
    assert!(
        out.status.success(),
        "{test}: {script} failed ({})\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
