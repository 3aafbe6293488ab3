//! gangway's own log with Traefik's `log.*` options: JSON lines with
//! Traefik's keys, the level, a file in a directory made for it, and the
//! `common` text line.

use crate::support;

use http::StatusCode;
use std::time::Duration;
use support::{Backend, Gangway, eventually};

/// The environment that lets `log.level` decide (the harness sets
/// `RUST_LOG`, which wins when it is not empty).
const LEVEL_FROM_OPTIONS: &[(&str, &str)] = &[("RUST_LOG", "")];

#[tokio::test]
async fn json_lines_parse_one_by_one_with_traefiks_keys() {
    let b = Backend::echo("b").await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("made").join("for").join("gangway.json");
    let flags = [
        "--log.format=json".to_owned(),
        format!("--log.filePath={}", path.display()),
        "--log.level=info".to_owned(),
        // Accepted but not supported: logged as a warning with fields.
        "--entryPoints.web.observability.traceVerbosity=detailed".to_owned(),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let gw = Gangway::with_file_env(
        &support::one_route("app", "Host(`app.test`)", &[&b.url()]),
        &flags,
        LEVEL_FROM_OPTIONS,
    )
    .await;
    eventually(Duration::from_secs(5), "routed", || async {
        gw.get("app.test", "/").await.status == StatusCode::OK
    })
    .await;
    let text = std::fs::read_to_string(&path).expect("the log file and its directories exist");
    assert!(
        !gw.log().contains("static configuration"),
        "lines go to the file only:\n{}",
        gw.log()
    );
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    assert!(lines.len() >= 2, "{text}");
    for line in &lines {
        let level = line["level"].as_str().unwrap_or_else(|| panic!("{line}"));
        assert!(
            ["trace", "debug", "info", "warn", "error"].contains(&level),
            "{line}"
        );
        let time = line["time"].as_str().unwrap_or_else(|| panic!("{line}"));
        // RFC 3339 to the second, in UTC: 2026-01-02T15:04:05Z.
        assert_eq!(time.len(), 20, "{line}");
        assert!(time.ends_with('Z') && time.as_bytes()[10] == b'T', "{line}");
        assert!(line["message"].is_string(), "{line}");
    }
    assert!(
        lines.iter().any(|l| l["level"] == "info"
            && l["message"]
                .as_str()
                .is_some_and(|m| m.contains("static configuration"))),
        "{text}"
    );
    let warning = lines
        .iter()
        .find(|l| {
            l["level"] == "warn" && l["option"] == "entryPoints.web.observability.traceVerbosity"
        })
        .unwrap_or_else(|| panic!("the unsupported option's warning, with its fields:\n{text}"));
    assert!(
        warning["source"]
            .as_str()
            .is_some_and(|s| s.contains("observability.traceVerbosity")),
        "{warning}"
    );
}

#[tokio::test]
async fn level_warn_drops_info_lines() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gangway.json");
    let flags = [
        "--log.format=json".to_owned(),
        format!("--log.filePath={}", path.display()),
        "--log.level=WARN".to_owned(),
        "--entryPoints.web.observability.traceVerbosity=detailed".to_owned(),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let _gw = Gangway::with_file_env("", &flags, LEVEL_FROM_OPTIONS).await;
    eventually(Duration::from_secs(5), "the warning written", || async {
        std::fs::read_to_string(&path)
            .unwrap_or_default()
            .contains("observability.traceVerbosity")
    })
    .await;
    let text = std::fs::read_to_string(&path).unwrap();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(v["level"] == "warn" || v["level"] == "error", "{line}");
    }
}

#[tokio::test]
async fn common_lines_in_a_file_are_traefiks_text_without_colour() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gangway.log");
    let flags = [
        format!("--log.filePath={}", path.display()),
        "--log.level=info".to_owned(),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let _gw = Gangway::with_file_env("", &flags, LEVEL_FROM_OPTIONS).await;
    eventually(Duration::from_secs(5), "a line written", || async {
        std::fs::read_to_string(&path)
            .unwrap_or_default()
            .contains("static configuration")
    })
    .await;
    let text = std::fs::read_to_string(&path).unwrap();
    let line = text
        .lines()
        .find(|l| l.contains("static configuration"))
        .unwrap();
    // 2026-01-02T15:04:05Z INF message
    let (time, rest) = line.split_once(' ').unwrap();
    assert_eq!(time.len(), 20, "{line}");
    assert!(rest.starts_with("INF "), "{line}");
    assert!(!text.contains('\x1b'), "no colour in a file:\n{text}");
}

#[test]
fn a_log_directory_that_cannot_be_made_stops_the_start_with_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("not-a-dir");
    std::fs::write(&blocker, "").unwrap();
    let out = std::process::Command::new(support::binary())
        .arg(format!(
            "--log.filePath={}",
            blocker.join("gangway.log").display()
        ))
        .arg("--entryPoints.web.address=127.0.0.1:0")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("log.filePath") && stderr.contains("not-a-dir"),
        "{stderr}"
    );
}

#[tokio::test]
async fn sigusr1_reopens_both_files_after_logrotate_renamed_them() {
    let b = Backend::echo("b").await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("gangway.log");
    let access = dir.path().join("access.log");
    let flags = [
        format!("--log.filePath={}", log.display()),
        "--log.level=info".to_owned(),
        format!("--accessLog.filePath={}", access.display()),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let gw = Gangway::with_file_env(
        &support::one_route("app", "Host(`app.test`)", &[&b.url()]),
        &flags,
        LEVEL_FROM_OPTIONS,
    )
    .await;
    eventually(Duration::from_secs(5), "routed", || async {
        gw.get("app.test", "/before").await.status == StatusCode::OK
    })
    .await;
    eventually(Duration::from_secs(5), "the first line written", || async {
        std::fs::read_to_string(&access)
            .unwrap_or_default()
            .contains("GET /before ")
    })
    .await;
    // What logrotate does: rename, then signal.
    let (old_log, old_access) = (
        dir.path().join("gangway.log.1"),
        dir.path().join("access.log.1"),
    );
    std::fs::rename(&log, &old_log).unwrap();
    std::fs::rename(&access, &old_access).unwrap();
    let sent = std::process::Command::new("kill")
        .args(["-USR1", &gw.pid().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    eventually(Duration::from_secs(5), "a new access log file", || async {
        gw.get("app.test", "/after").await;
        std::fs::read_to_string(&access)
            .unwrap_or_default()
            .contains("GET /after ")
    })
    .await;
    eventually(Duration::from_secs(5), "a new log file", || async {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("log file reopened")
    })
    .await;
    let new_access = std::fs::read_to_string(&access).unwrap();
    let kept_access = std::fs::read_to_string(&old_access).unwrap();
    assert!(!new_access.contains("/before"), "{new_access}");
    assert!(kept_access.contains("GET /before "), "{kept_access}");
    let new_log = std::fs::read_to_string(&log).unwrap();
    let kept_log = std::fs::read_to_string(&old_log).unwrap();
    assert!(!new_log.contains("static configuration"), "{new_log}");
    assert!(kept_log.contains("static configuration"), "{kept_log}");
    assert!(
        gw.log().is_empty(),
        "nothing on standard error: {}",
        gw.log()
    );
}
