//! The file provider: one file or a directory of TOML and YAML files, watched.
//! A broken file keeps the last good configuration; the error is reported.

mod locate;

use super::Snapshot;
use crate::config::Dynamic;
use crate::config::format::{Format, parse_document};
use crate::config::provenance::ProviderDetail;
use notify::{RecursiveMode, Watcher};
use std::path::{Path, PathBuf};
use tokio::sync::mpsc;

/// Where the file provider reads from.
#[derive(Clone, Debug)]
pub enum Source {
    /// One file.
    File(PathBuf),
    /// Every `.toml`, `.yml` and `.yaml` file under a directory.
    Directory(PathBuf),
}

/// What one read of the source gives.
#[derive(Clone, Debug, Default)]
pub struct Loaded {
    /// The configuration.
    pub dynamic: Dynamic,
    /// Problems that did not stop it loading.
    pub warnings: Vec<String>,
    /// The file and line of each object.
    pub detail: ProviderDetail,
}

/// Reads the source once into one configuration, with warnings and the
/// place of each object.
pub fn load(source: &Source) -> Result<Loaded, String> {
    load_with(source, false)
}

/// Like [`load`]; with `refuse_empty`, a single file that holds nothing but
/// white space is an error instead of an empty configuration.
fn load_with(source: &Source, refuse_empty: bool) -> Result<Loaded, String> {
    match source {
        Source::File(path) => {
            let format = Format::from_path(path).ok_or_else(|| {
                format!(
                    "{}: the file name must end in .toml, .yml or .yaml",
                    path.display()
                )
            })?;
            let text =
                std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
            if refuse_empty && text.trim().is_empty() {
                return Err(format!(
                    "{}: the file is empty (still being written?); the last configuration stays in use",
                    path.display()
                ));
            }
            let name = path.display().to_string();
            let dynamic = parse_document(&name, &text, format).map_err(|e| e.to_string())?;
            Ok(Loaded {
                dynamic,
                warnings: Vec::new(),
                detail: locate::locate(&name, &text, format),
            })
        }
        Source::Directory(dir) => {
            let mut files = Vec::new();
            collect_files(dir, &mut files, 0)?;
            files.sort();
            let mut merged = Loaded::default();
            for (path, format) in files {
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                let name = path.display().to_string();
                let one: Dynamic =
                    parse_document(&name, &text, format).map_err(|e| e.to_string())?;
                merge_into(&mut merged.dynamic, one, &path, &mut merged.warnings);
                // The first definition of a name is the one kept, and so
                // is its place.
                let places = locate::locate(&name, &text, format);
                for (into, from) in [
                    (&mut merged.detail.routers, places.routers),
                    (&mut merged.detail.services, places.services),
                    (&mut merged.detail.middlewares, places.middlewares),
                ] {
                    for (object, detail) in from {
                        into.entry(object).or_insert(detail);
                    }
                }
            }
            Ok(merged)
        }
    }
}

fn collect_files(dir: &Path, out: &mut Vec<(PathBuf, Format)>, depth: usize) -> Result<(), String> {
    // Bounded so that a symlink loop cannot recurse forever.
    if depth > 16 {
        return Ok(());
    }
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries.flatten() {
        let path = entry.path();
        let hidden = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with('.'));
        if hidden {
            continue;
        }
        if path.is_dir() {
            collect_files(&path, out, depth + 1)?;
        } else if let Some(format) = Format::from_path(&path) {
            out.push((path, format));
        }
    }
    Ok(())
}

/// Adds one file's objects; a name defined twice keeps its first definition
/// (files are read in name order) and says so.
fn merge_into(into: &mut Dynamic, from: Dynamic, path: &Path, warnings: &mut Vec<String>) {
    fn add<T>(
        map: &mut std::collections::BTreeMap<String, T>,
        from: std::collections::BTreeMap<String, T>,
        kind: &str,
        path: &Path,
        warnings: &mut Vec<String>,
    ) {
        for (name, value) in from {
            match map.entry(name) {
                std::collections::btree_map::Entry::Occupied(e) => warnings.push(format!(
                    "{}: {kind} `{}` is already defined in another file; the first definition is kept",
                    path.display(),
                    e.key()
                )),
                std::collections::btree_map::Entry::Vacant(e) => {
                    e.insert(value);
                }
            }
        }
    }
    let Dynamic {
        http,
        tls,
        tcp,
        udp,
    } = from;
    add(
        &mut into.http.routers,
        http.routers,
        "router",
        path,
        warnings,
    );
    add(
        &mut into.http.services,
        http.services,
        "service",
        path,
        warnings,
    );
    add(
        &mut into.http.middlewares,
        http.middlewares,
        "middleware",
        path,
        warnings,
    );
    add(
        &mut into.http.servers_transports,
        http.servers_transports,
        "servers transport",
        path,
        warnings,
    );
    into.tls.certificates.extend(tls.certificates);
    add(
        &mut into.tls.options,
        tls.options,
        "TLS options",
        path,
        warnings,
    );
    add(
        &mut into.tls.stores,
        tls.stores,
        "TLS store",
        path,
        warnings,
    );
    into.tcp = into.tcp.take().or(tcp);
    into.udp = into.udp.take().or(udp);
}

/// The source as a snapshot. `refuse_empty` once a configuration with
/// objects is in use: a file emptied in place (`> file` in a shell, or a
/// writer caught between truncating and writing) would otherwise read as a
/// valid empty configuration and drop every route.
fn snapshot(source: &Source, refuse_empty: bool) -> Snapshot {
    match load_with(source, refuse_empty) {
        Ok(loaded) => Snapshot {
            provider: "file",
            dynamic: Some(loaded.dynamic),
            error: None,
            warnings: loaded.warnings,
            detail: Some(loaded.detail),
        },
        Err(error) => Snapshot {
            provider: "file",
            dynamic: None,
            error: Some(error),
            warnings: Vec::new(),
            detail: None,
        },
    }
}

/// Loads the source, sends it, and (with `watch`) sends it again after every
/// change on disk until `tx` closes.
pub fn spawn_file(
    source: Source,
    watch: bool,
    tx: mpsc::Sender<Snapshot>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let first = snapshot(&source, false);
        let mut last = first.dynamic.clone();
        let mut last_detail = first.detail.clone();
        let mut last_error = first.error.clone();
        if tx.send(first).await.is_err() || !watch {
            return;
        }
        // notify calls back on its own thread; a one-slot channel coalesces bursts of events.
        let (wake_tx, mut wake_rx) = mpsc::channel::<()>(1);
        let watched = match &source {
            Source::File(p) => p
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."))
                .to_path_buf(),
            Source::Directory(d) => d.clone(),
        };
        let mut watcher =
            match notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                // notify 8 also reports opens and reads (inotify IN_OPEN):
                // waking on those would make every read of the file wake
                // the provider again, a loop that keeps a core busy.
                if matches!(&event, Ok(e) if matches!(e.kind, notify::EventKind::Access(_))) {
                    return;
                }
                let _ = wake_tx.try_send(());
            }) {
                Ok(w) => w,
                Err(e) => {
                    tracing::error!(error = %e, "file provider: cannot watch for changes");
                    return;
                }
            };
        let mode = match source {
            Source::File(_) => RecursiveMode::NonRecursive,
            Source::Directory(_) => RecursiveMode::Recursive,
        };
        if let Err(e) = watcher.watch(&watched, mode) {
            tracing::error!(error = %e, path = %watched.display(), "file provider: cannot watch for changes");
            return;
        }
        while wake_rx.recv().await.is_some() {
            let in_use = last.as_ref().is_some_and(|d| *d != Dynamic::default());
            let snap = snapshot(&source, in_use);
            // Events also fire for unrelated files in the folder and for
            // writes that change nothing: send only what differs (lines
            // that moved are a difference: errors name them).
            let changed = match (&snap.dynamic, &snap.error) {
                (Some(d), _) => {
                    last.as_ref() != Some(d) || last_error.is_some() || snap.detail != last_detail
                }
                (None, e) => e != &last_error,
            };
            if !changed {
                continue;
            }
            if snap.dynamic.is_some() {
                last.clone_from(&snap.dynamic);
                last_detail.clone_from(&snap.detail);
            }
            last_error.clone_from(&snap.error);
            if tx.send(snap).await.is_err() {
                return;
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_file_is_refused_only_once_a_configuration_is_in_use() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dynamic.toml");
        std::fs::write(&path, " \n").unwrap();
        let source = Source::File(path);
        let loaded = load_with(&source, false).expect("empty at start: nothing to keep");
        assert_eq!(loaded.dynamic, Dynamic::default());
        let error = load_with(&source, true).unwrap_err();
        assert!(error.contains("dynamic.toml: the file is empty"), "{error}");
        assert!(load(&source).is_ok(), "`gangway check` reads it as empty");
    }
}
