//! The file provider: one file or a directory of TOML and YAML files, watched.
//! A broken file keeps the last good configuration; the error is reported.

mod locate;
mod objects;

use super::Snapshot;
use crate::config::Dynamic;
use crate::config::format::Format;
use crate::config::problem::{Notice, Origin, ProviderError, Section, Warning};
use crate::config::provenance::{LastGood as LastGoodMark, ProviderDetail};
use notify::{RecursiveMode, Watcher};
use std::collections::BTreeMap;
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
    pub warnings: Vec<Warning>,
    /// The file and line of each object; objects left out because they do
    /// not read carry their error.
    pub detail: ProviderDetail,
    /// Files of a directory that do not parse: each keeps its last good
    /// version (none at the first read), the other files are read.
    pub errors: Vec<ProviderError>,
}

/// The last good read of each file, so that a file that stops parsing
/// keeps its objects (marked as such) while the others change.
type LastGood = BTreeMap<PathBuf, Kept>;

/// One file's last good read.
#[derive(Clone, Debug)]
struct Kept {
    read: objects::Read,
    /// When this version was first read.
    read_at: u64,
    /// Since when the file is rejected, while it is.
    rejected_since: Option<u64>,
}

/// The read of one file to use and its error: a good read is kept for
/// later; a failed one falls back to the last good read, each of whose
/// objects then says it comes from that version, since when and why
/// (nothing to use when the file never read).
fn keep(
    path: &Path,
    read: Result<objects::Read, ProviderError>,
    last_good: &mut LastGood,
) -> (Option<objects::Read>, Option<ProviderError>) {
    let now = crate::clock::unix_secs();
    match read {
        Ok(read) => {
            let read_at = match last_good.get(path) {
                Some(kept) if kept.read == read => kept.read_at,
                _ => now,
            };
            last_good.insert(
                path.to_owned(),
                Kept {
                    read: read.clone(),
                    read_at,
                    rejected_since: None,
                },
            );
            (Some(read), None)
        }
        Err(error) => {
            let Some(kept) = last_good.get_mut(path) else {
                return (None, Some(error));
            };
            let mark = LastGoodMark {
                read_at: kept.read_at,
                rejected_since: *kept.rejected_since.get_or_insert(now),
                message: error.to_string(),
                error: error.clone(),
            };
            let mut read = kept.read.clone();
            let detail = &mut read.detail;
            for objects in [
                &mut detail.routers,
                &mut detail.services,
                &mut detail.middlewares,
                &mut detail.tcp_routers,
                &mut detail.tcp_services,
                &mut detail.tcp_middlewares,
                &mut detail.udp_routers,
                &mut detail.udp_services,
            ] {
                for file in objects.values_mut().filter_map(|o| o.file.as_mut()) {
                    file.last_good = Some(mark.clone());
                }
            }
            (Some(read), Some(error))
        }
    }
}

/// Reads the source once into one configuration, with warnings and the
/// place of each object.
pub fn load(source: &Source) -> Result<Loaded, ProviderError> {
    load_with(source, false, &mut LastGood::new())
}

/// Like [`load`]; with `refuse_empty`, a single file that holds nothing but
/// white space is an error instead of an empty configuration.
fn load_with(
    source: &Source,
    refuse_empty: bool,
    last_good: &mut LastGood,
) -> Result<Loaded, ProviderError> {
    match source {
        Source::File(path) => {
            let format = Format::from_path(path).ok_or_else(|| ProviderError::FileKind {
                path: path.display().to_string(),
            })?;
            let name = path.display().to_string();
            let read = std::fs::read_to_string(path)
                .map_err(|e| ProviderError::unreadable(path, &e))
                .and_then(|text| {
                    if refuse_empty && text.trim().is_empty() {
                        Err(ProviderError::Empty { path: name.clone() })
                    } else {
                        expand(&name, &text)
                            .and_then(|text| objects::read("file", &name, &text, format))
                    }
                });
            match keep(path, read, last_good) {
                (Some(read), error) => Ok(Loaded {
                    dynamic: read.dynamic,
                    warnings: read.warnings,
                    detail: read.detail,
                    errors: error.into_iter().collect(),
                }),
                (None, Some(error)) => Err(error),
                (None, None) => Ok(Loaded::default()),
            }
        }
        Source::Directory(dir) => {
            let mut files = Vec::new();
            collect_files(dir, &mut files, 0)?;
            files.sort();
            let mut merged = Loaded::default();
            last_good.retain(|kept, _| files.iter().any(|(path, _)| path == kept));
            for (path, format) in files {
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| ProviderError::unreadable(&path, &e))?;
                let name = path.display().to_string();
                // As for a single file: one emptied in place is more likely
                // caught while being written than meant to drop its objects.
                let emptied = text.trim().is_empty()
                    && last_good
                        .get(&path)
                        .is_some_and(|kept| kept.read.dynamic != Dynamic::default());
                let read = if emptied {
                    Err(ProviderError::Empty { path: name.clone() })
                } else {
                    expand(&name, &text)
                        .and_then(|text| objects::read("file", &name, &text, format))
                };
                let (read, error) = keep(&path, read, last_good);
                merged.errors.extend(error);
                let Some(read) = read else {
                    continue;
                };
                let objects::Read {
                    dynamic: one,
                    detail: places,
                    warnings,
                } = read;
                merged.warnings.extend(warnings);
                // The first definition of a name is the one kept, and so
                // is its place.
                merge_into(
                    &mut merged.dynamic,
                    one,
                    &places,
                    &name,
                    &mut merged.warnings,
                );
                for (into, from) in [
                    (&mut merged.detail.routers, places.routers),
                    (&mut merged.detail.services, places.services),
                    (&mut merged.detail.middlewares, places.middlewares),
                    (&mut merged.detail.tcp_routers, places.tcp_routers),
                    (&mut merged.detail.tcp_services, places.tcp_services),
                    (&mut merged.detail.tcp_middlewares, places.tcp_middlewares),
                    (&mut merged.detail.udp_routers, places.udp_routers),
                    (&mut merged.detail.udp_services, places.udp_services),
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

/// Runs the Go template in a file's text, as Traefik does for every file
/// of the file provider before reading it (with sprig's functions and
/// `env`); a text without `{{` is returned as it is. A template error is
/// the file's error, at the line of the action at fault.
fn expand<'a>(path: &str, text: &'a str) -> Result<std::borrow::Cow<'a, str>, ProviderError> {
    if !text.contains("{{") {
        return Ok(std::borrow::Cow::Borrowed(text));
    }
    crate::template::render(text, &crate::template::process_env)
        .map(std::borrow::Cow::Owned)
        .map_err(|e| ProviderError::Syntax {
            origin: Origin::File {
                path: path.to_owned(),
                line: e.line,
            },
            message: format!("template: {}", e.problem),
        })
}

/// Reads one document as the provider reads each of its files: a mistake
/// in one object leaves out that object only (its error is on it in
/// `detail`); a syntax error, or one outside every named object, is the
/// document's error. `path` names the document in errors.
pub fn read_document(path: &str, text: &str, format: Format) -> Result<Loaded, ProviderError> {
    read_document_for("file", path, text, format)
}

/// Like [`read_document`], for another provider that sends documents in
/// the file provider's format (the HTTP provider): its objects' errors
/// name them in `provider`'s namespace.
pub fn read_document_for(
    provider: &str,
    path: &str,
    text: &str,
    format: Format,
) -> Result<Loaded, ProviderError> {
    let read = objects::read(provider, path, text, format)?;
    Ok(Loaded {
        dynamic: read.dynamic,
        warnings: read.warnings,
        detail: read.detail,
        errors: Vec::new(),
    })
}

fn collect_files(
    dir: &Path,
    out: &mut Vec<(PathBuf, Format)>,
    depth: usize,
) -> Result<(), ProviderError> {
    // Bounded so that a symlink loop cannot recurse forever.
    if depth > 16 {
        return Ok(());
    }
    let entries = std::fs::read_dir(dir).map_err(|e| ProviderError::unreadable(dir, &e))?;
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
/// (files are read in name order) and says so, at the second one's line
/// when it is known.
fn merge_into(
    into: &mut Dynamic,
    from: Dynamic,
    places: &ProviderDetail,
    path: &str,
    warnings: &mut Vec<Warning>,
) {
    let Dynamic {
        http,
        tls,
        tcp,
        udp,
    } = from;
    let twice = [
        (
            Section::Router,
            add_new(&mut into.http.routers, http.routers),
        ),
        (
            Section::Service,
            add_new(&mut into.http.services, http.services),
        ),
        (
            Section::Middleware,
            add_new(&mut into.http.middlewares, http.middlewares),
        ),
        (
            Section::ServersTransport,
            add_new(&mut into.http.servers_transports, http.servers_transports),
        ),
        (
            Section::TlsOptions,
            add_new(&mut into.tls.options, tls.options),
        ),
        (Section::TlsStore, add_new(&mut into.tls.stores, tls.stores)),
        (
            Section::TcpRouter,
            add_new(&mut into.tcp.routers, tcp.routers),
        ),
        (
            Section::TcpService,
            add_new(&mut into.tcp.services, tcp.services),
        ),
        (
            Section::TcpMiddleware,
            add_new(&mut into.tcp.middlewares, tcp.middlewares),
        ),
        (
            Section::TcpServersTransport,
            add_new(&mut into.tcp.servers_transports, tcp.servers_transports),
        ),
        (
            Section::UdpRouter,
            add_new(&mut into.udp.routers, udp.routers),
        ),
        (
            Section::UdpService,
            add_new(&mut into.udp.services, udp.services),
        ),
    ];
    into.tls.certificates.extend(tls.certificates);
    for (what, names) in twice {
        for name in names {
            let located = match what {
                Section::Router => places.routers.get(&name),
                Section::Service => places.services.get(&name),
                Section::Middleware => places.middlewares.get(&name),
                _ => None,
            };
            let origin = match located.and_then(|d| d.file.as_ref()) {
                Some(file) => Origin::File {
                    path: file.path.clone(),
                    line: file.line,
                },
                None => Origin::Document {
                    path: path.to_owned(),
                },
            };
            warnings.push(Warning::new(
                Notice::DefinedTwice { what, name },
                Some(origin),
            ));
        }
    }
}

/// Adds the entries of `from` whose names `map` does not have yet; the
/// names it already had.
fn add_new<T>(map: &mut BTreeMap<String, T>, from: BTreeMap<String, T>) -> Vec<String> {
    let mut there = Vec::new();
    for (name, value) in from {
        match map.entry(name) {
            std::collections::btree_map::Entry::Occupied(e) => there.push(e.key().clone()),
            std::collections::btree_map::Entry::Vacant(e) => {
                e.insert(value);
            }
        }
    }
    there
}

/// The source as a snapshot. `refuse_empty` once a configuration with
/// objects is in use: a file emptied in place (`> file` in a shell, or a
/// writer caught between truncating and writing) would otherwise read as a
/// valid empty configuration and drop every route.
fn snapshot(source: &Source, refuse_empty: bool, last_good: &mut LastGood) -> Snapshot {
    match load_with(source, refuse_empty, last_good) {
        Ok(loaded) => Snapshot {
            provider: "file",
            dynamic: Some(loaded.dynamic),
            // The provider reports one error: the first file's.
            error: loaded.errors.into_iter().next(),
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
        let mut last_good = LastGood::new();
        let first = snapshot(&source, false, &mut last_good);
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
            let snap = snapshot(&source, in_use, &mut last_good);
            // Events also fire for unrelated files in the folder and for
            // writes that change nothing: send only what differs (lines
            // that moved are a difference: errors name them).
            let changed = match (&snap.dynamic, &snap.error) {
                (Some(d), e) => {
                    last.as_ref() != Some(d) || e != &last_error || snap.detail != last_detail
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
        let source = Source::File(path.clone());
        let loaded = load_with(&source, false, &mut LastGood::new())
            .expect("empty at start: nothing to keep");
        assert_eq!(loaded.dynamic, Dynamic::default());
        let error = load_with(&source, true, &mut LastGood::new()).unwrap_err();
        assert_eq!(
            error,
            ProviderError::Empty {
                path: path.display().to_string()
            }
        );
        assert!(load(&source).is_ok(), "`gangway check` reads it as empty");
    }

    #[test]
    fn a_name_in_two_files_is_kept_once_and_the_second_named_by_line() {
        let dir = tempfile::tempdir().unwrap();
        let first = "[http.routers.app]\nrule = \"Host(`a`)\"\nservice = \"s\"\n";
        let second = "# the same router again\n\n[http.routers.app]\nrule = \"Host(`b`)\"\nservice = \"s\"\n\n[tls.options.modern]\nminVersion = \"VersionTLS13\"\n";
        std::fs::write(dir.path().join("a.toml"), first).unwrap();
        std::fs::write(dir.path().join("b.toml"), second).unwrap();
        std::fs::write(
            dir.path().join("c.toml"),
            "[tls.options.modern]\nminVersion = \"VersionTLS12\"\n",
        )
        .unwrap();
        let loaded = load(&Source::Directory(dir.path().to_owned())).unwrap();
        assert_eq!(loaded.dynamic.http.routers["app"].rule, "Host(`a`)");
        let b = dir.path().join("b.toml").display().to_string();
        let c = dir.path().join("c.toml").display().to_string();
        assert_eq!(
            loaded.warnings,
            [
                Warning::new(
                    Notice::DefinedTwice {
                        what: Section::Router,
                        name: "app".into()
                    },
                    Some(Origin::File {
                        path: b.clone(),
                        line: 3
                    })
                ),
                Warning::new(
                    Notice::DefinedTwice {
                        what: Section::TlsOptions,
                        name: "modern".into()
                    },
                    Some(Origin::Document { path: c })
                ),
            ]
        );
        assert_eq!(
            loaded.warnings[0].to_string(),
            format!(
                "{b}:3: router `app` is already defined in another file; the first definition is kept"
            )
        );
    }

    #[test]
    fn a_file_of_a_directory_that_stops_parsing_keeps_its_last_good_objects() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.toml");
        let b = dir.path().join("b.yml");
        let router = |name: &str| {
            format!("[http.routers.{name}]\nrule = \"Host(`{name}`)\"\nservice = \"s\"\n")
        };
        std::fs::write(&a, router("one")).unwrap();
        std::fs::write(&b, "http:\n  routers:\n    two:\n      rule: Host(`two`)\n").unwrap();
        let source = Source::Directory(dir.path().to_owned());
        let mut last_good = LastGood::new();
        let first = load_with(&source, false, &mut last_good).unwrap();
        assert!(first.errors.is_empty());
        std::fs::write(&a, router("three")).unwrap();
        std::fs::write(&b, "http:\n  routers:\n    two: [\n").unwrap();
        let next = load_with(&source, false, &mut last_good).unwrap();
        let names: Vec<_> = next.dynamic.http.routers.keys().collect();
        assert_eq!(
            names,
            ["three", "two"],
            "a's change applies, b's last good stays"
        );
        assert_eq!(next.errors.len(), 1);
        assert!(
            matches!(
                next.errors[0].origin(),
                Some(Origin::File { path, line: 4 }) if path == b.display().to_string()
            ),
            "{:?}",
            next.errors[0]
        );
        // Emptied in place (caught between truncating and writing): refused
        // like a single file, its last good objects stay.
        std::fs::write(&b, "").unwrap();
        let emptied = load_with(&source, false, &mut last_good).unwrap();
        let names: Vec<_> = emptied.dynamic.http.routers.keys().collect();
        assert_eq!(names, ["three", "two"]);
        assert_eq!(
            emptied.errors,
            [ProviderError::Empty {
                path: b.display().to_string()
            }]
        );
        std::fs::write(&b, "http:\n  routers:\n    two: [\n").unwrap();
        // Without a last good version (as `gangway check` reads), the file
        // gives nothing and the rest is read.
        let fresh = load(&source).unwrap();
        let names: Vec<_> = fresh.dynamic.http.routers.keys().collect();
        assert_eq!(names, ["three"]);
        assert_eq!(fresh.errors.len(), 1);
    }

    #[test]
    fn a_rejected_file_keeps_its_last_good_objects_marked_as_such() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dynamic.toml");
        let good = "[http.routers.app]\nrule = \"Host(`a`)\"\nservice = \"s\"\n\n[http.routers.typo]\nrule = \"Host(`t`)\"\nservce = \"s\"\n\n[tcp.routers.db]\nrule = \"HostSNI(`*`)\"\nservice = \"db\"\n";
        std::fs::write(&path, good).unwrap();
        let source = Source::File(path.clone());
        let mut last_good = LastGood::new();
        let first = load_with(&source, true, &mut last_good).unwrap();
        assert!(first.errors.is_empty());
        assert!(
            first.detail.routers["app"]
                .file
                .as_ref()
                .unwrap()
                .last_good
                .is_none()
        );
        let read_at = last_good[&path].read_at;

        // A broken section name: the whole file is rejected.
        std::fs::write(&path, "[http.routers.app\nrule = 1\n").unwrap();
        let kept = load_with(&source, true, &mut last_good).unwrap();
        assert_eq!(
            kept.dynamic, first.dynamic,
            "the last good version stays in use"
        );
        assert_eq!(kept.errors.len(), 1);
        let current = kept.errors[0].clone();
        for (name, detail) in [
            ("app", &kept.detail.routers),
            ("typo", &kept.detail.routers),
            ("db", &kept.detail.tcp_routers),
        ] {
            let mark = detail[name].file.as_ref().unwrap().last_good.clone();
            let mark = mark.unwrap_or_else(|| panic!("{name} is not marked"));
            assert_eq!(
                mark.error, current,
                "{name}: the current error, not an old one"
            );
            assert_eq!(mark.read_at, read_at);
            assert!(mark.rejected_since >= read_at);
        }
        // The old version's own error is still that version's, and says so
        // through the mark on its object.
        assert_eq!(kept.detail.routers["typo"].errors.len(), 1);

        // Read again while still broken: the same rejection, since the same time.
        let since = last_good[&path].rejected_since;
        let again = load_with(&source, true, &mut last_good).unwrap();
        assert_eq!(again.detail, kept.detail);
        assert_eq!(last_good[&path].rejected_since, since);

        // Fixed: current again, nothing marked.
        std::fs::write(&path, good).unwrap();
        let fixed = load_with(&source, true, &mut last_good).unwrap();
        assert!(fixed.errors.is_empty());
        assert!(
            fixed.detail.routers["app"]
                .file
                .as_ref()
                .unwrap()
                .last_good
                .is_none()
        );
        assert_eq!(
            last_good[&path].read_at, read_at,
            "the same version as before"
        );
        assert!(last_good[&path].rejected_since.is_none());
    }

    #[test]
    fn a_directory_marks_only_the_rejected_files_objects_and_locates_tcp_ones() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.toml");
        let b = dir.path().join("b.toml");
        std::fs::write(
            &a,
            "[http.routers.one]\nrule = \"Host(`one`)\"\nservice = \"s\"\n",
        )
        .unwrap();
        std::fs::write(
            &b,
            "\n[tcp.routers.db]\nrule = \"HostSNI(`*`)\"\nservice = \"db\"\n",
        )
        .unwrap();
        let source = Source::Directory(dir.path().to_owned());
        let mut last_good = LastGood::new();
        let first = load_with(&source, false, &mut last_good).unwrap();
        assert_eq!(
            first.detail.tcp_routers["db"].file.as_ref().unwrap().line,
            2
        );
        std::fs::write(&b, "[tcp.routers.db\n").unwrap();
        let next = load_with(&source, false, &mut last_good).unwrap();
        assert!(
            next.detail.routers["one"]
                .file
                .as_ref()
                .unwrap()
                .last_good
                .is_none()
        );
        let mark = next.detail.tcp_routers["db"]
            .file
            .as_ref()
            .unwrap()
            .last_good
            .clone();
        assert_eq!(mark.map(|m| m.error), Some(next.errors[0].clone()));
    }

    #[test]
    fn a_template_mistake_names_the_file_and_line_and_a_good_one_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dynamic.yml");
        let good = "http:\n  routers:\n{{ range $i, $h := split \"a,b\" \",\" }}    r{{ $i }}:\n      rule: Host(`{{ $h }}.{{ env \"GANGWAY_TEST_SURELY_UNSET\" | default \"test\" }}`)\n      service: s\n{{ end }}";
        std::fs::write(&path, good).unwrap();
        let loaded = load(&Source::File(path.clone())).unwrap();
        let rules: Vec<_> = loaded
            .dynamic
            .http
            .routers
            .values()
            .map(|r| r.rule.as_str())
            .collect();
        assert_eq!(rules, ["Host(`a.test`)", "Host(`b.test`)"]);
        std::fs::write(
            &path,
            "http:\n  routers:\n    r:\n      rule: '{{ lowr \"A\" }}'\n",
        )
        .unwrap();
        let error = load(&Source::File(path.clone())).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "{}:4: template: function `lowr` is not defined",
                path.display()
            )
        );
    }

    #[test]
    fn a_file_that_does_not_parse_names_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dynamic.toml");
        std::fs::write(&path, "[http.routers.app]\nrule = \n").unwrap();
        let error = load(&Source::File(path.clone())).unwrap_err();
        assert!(
            matches!(
                error.origin(),
                Some(Origin::File { path: p, line: 2 }) if p == path.display().to_string()
            ),
            "{error:?}"
        );
    }
}
