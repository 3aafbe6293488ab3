//! A log file that rotates itself by size, as Traefik's does: past
//! `maxSize` the file is renamed to `name-<UTC stamp>.ext` and a new one is
//! started; old files beyond `maxBackups` or older than `maxAge` days are
//! removed, and with `compress` gzipped, on a thread of their own so the
//! line being written never waits for it. `reopen` serves logrotate's
//! rename-then-SIGUSR1.

use super::LogError;
use crate::clock::Utc;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime};

/// Traefik's size when `maxSize` is 0, in megabytes.
const DEFAULT_MAX_MB: u64 = 100;

/// When rotated files are let go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rotation {
    /// Size in bytes past which the file is rotated.
    pub max_bytes: u64,
    /// Rotated files kept; 0 keeps all.
    pub max_backups: u32,
    /// Age past which a rotated file is removed; `None` keeps all.
    pub max_age: Option<Duration>,
    /// Gzip rotated files.
    pub compress: bool,
}

impl Rotation {
    /// From Traefik's options: megabytes (0 means 100), a count and days.
    pub fn new(max_size_mb: u64, max_backups: u32, max_age_days: u32, compress: bool) -> Rotation {
        let mb = if max_size_mb == 0 {
            DEFAULT_MAX_MB
        } else {
            max_size_mb
        };
        Rotation {
            max_bytes: mb.saturating_mul(1024 * 1024),
            max_backups,
            max_age: (max_age_days > 0)
                .then(|| Duration::from_secs(u64::from(max_age_days) * 86_400)),
            compress,
        }
    }
}

/// The open file and how much it holds.
struct Open {
    file: File,
    size: u64,
}

/// A log file written line by line from any thread.
pub struct LogFile {
    path: PathBuf,
    rotation: Rotation,
    open: Mutex<Open>,
}

fn open_append(path: &Path) -> Result<Open, LogError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|source| LogError::Directory {
            dir: dir.to_path_buf(),
            source,
        })?;
    }
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|source| LogError::Open {
            path: path.to_path_buf(),
            source,
        })?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    Ok(Open { file, size })
}

impl LogFile {
    /// Opens `path` for appending, creating its directory.
    pub fn open(path: &Path, rotation: Rotation) -> Result<LogFile, LogError> {
        Ok(LogFile {
            path: path.to_path_buf(),
            rotation,
            open: Mutex::new(open_append(path)?),
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Closes the file and opens `path` again: after logrotate renamed it,
    /// lines go to a new file at the old name.
    pub fn reopen(&self) -> Result<(), LogError> {
        let fresh = open_append(&self.path)?;
        *self.open.lock().unwrap_or_else(PoisonError::into_inner) = fresh;
        Ok(())
    }

    /// Appends one line (or any bytes), rotating first when it would take
    /// the file past its size.
    pub fn write_line(&self, line: &[u8]) -> std::io::Result<()> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let len = line.len() as u64;
        if open.size > 0 && open.size.saturating_add(len) > self.rotation.max_bytes {
            // A file that cannot be rotated keeps growing rather than
            // losing lines.
            if let Some(backup) = self.rotate(&mut open) {
                let (path, rotation) = (self.path.clone(), self.rotation);
                let _ = std::thread::Builder::new()
                    .name("log-rotate".into())
                    .spawn(move || tidy(&path, &backup, rotation));
            }
        }
        open.file.write_all(line)?;
        open.size += len;
        Ok(())
    }

    /// Renames the file aside and opens a new one; the backup's path.
    fn rotate(&self, open: &mut Open) -> Option<PathBuf> {
        let backup = backup_name(&self.path, Utc::of(SystemTime::now()));
        std::fs::rename(&self.path, &backup).ok()?;
        match open_append(&self.path) {
            Ok(fresh) => *open = fresh,
            // Lines keep going to the renamed file, which is still open.
            Err(_) => return None,
        }
        Some(backup)
    }
}

/// `dir/name-2006-01-02T15-04-05.000.ext` for `dir/name.ext`.
fn backup_name(path: &Path, at: Utc) -> PathBuf {
    let (stem, ext) = stem_and_ext(path);
    path.with_file_name(format!("{stem}-{}{ext}", at.file_stamp()))
}

/// `("name", ".ext")` of a path's file name (`ext` empty when none).
fn stem_and_ext(path: &Path) -> (String, String) {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match name.rfind('.').filter(|&i| i > 0) {
        Some(i) => (name[..i].to_owned(), name[i..].to_owned()),
        None => (name, String::new()),
    }
}

/// Gzips the new backup when asked, then removes the backups beyond the
/// count or the age.
fn tidy(path: &Path, backup: &Path, rotation: Rotation) {
    if rotation.compress {
        let _ = gzip(backup);
    }
    let Some(dir) = path.parent() else { return };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let (stem, ext) = stem_and_ext(path);
    let prefix = format!("{stem}-");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut backups: Vec<(String, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let stamp = name.strip_prefix(&prefix)?;
            let stamp = stamp
                .strip_suffix(&format!("{ext}.gz"))
                .or_else(|| stamp.strip_suffix(ext.as_str()))?;
            is_stamp(stamp).then(|| (stamp.to_owned(), e.path()))
        })
        .collect();
    // The stamp sorts as time: newest first.
    backups.sort_by(|a, b| b.0.cmp(&a.0));
    let now = SystemTime::now();
    for (i, (_, file)) in backups.iter().enumerate() {
        let too_many = rotation.max_backups > 0 && i >= rotation.max_backups as usize;
        let too_old = rotation.max_age.is_some_and(|age| {
            std::fs::metadata(file)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| now.duration_since(t).ok())
                .is_some_and(|d| d > age)
        });
        if too_many || too_old {
            let _ = std::fs::remove_file(file);
        }
    }
}

/// `2006-01-02T15-04-05.000`.
fn is_stamp(s: &str) -> bool {
    s.len() == 23
        && s.bytes().enumerate().all(|(i, b)| match i {
            4 | 7 | 13 | 16 => b == b'-',
            10 => b == b'T',
            19 => b == b'.',
            _ => b.is_ascii_digit(),
        })
}

/// `file` → `file.gz`, the original removed once the copy is complete.
fn gzip(file: &Path) -> std::io::Result<()> {
    let mut target = file.as_os_str().to_owned();
    target.push(".gz");
    let target = PathBuf::from(target);
    let mut partial = target.as_os_str().to_owned();
    partial.push(".part");
    let partial = PathBuf::from(partial);
    let mut input = File::open(file)?;
    let out = File::create(&partial)?;
    let mut gz = flate2::write::GzEncoder::new(out, flate2::Compression::default());
    std::io::copy(&mut input, &mut gz)?;
    gz.finish()?.sync_all()?;
    std::fs::rename(&partial, &target)?;
    std::fs::remove_file(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn backup_names_follow_traefiks() {
        let at = Utc::of(std::time::UNIX_EPOCH + Duration::from_millis(1_795_000_000_042));
        assert_eq!(
            backup_name(Path::new("/var/log/gw.log"), at),
            Path::new("/var/log/gw-2026-11-18T11-06-40.042.log")
        );
        assert_eq!(
            backup_name(Path::new("gw"), at),
            Path::new("gw-2026-11-18T11-06-40.042")
        );
        assert!(is_stamp("2026-11-18T11-06-40.042"));
        assert!(!is_stamp("2026-11-18T11:06:40.042"));
    }

    #[test]
    fn a_full_file_is_renamed_aside_and_old_ones_beyond_the_count_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("gw.log");
        let rotation = Rotation {
            max_bytes: 10,
            max_backups: 1,
            max_age: None,
            compress: false,
        };
        let log = LogFile::open(&path, rotation).unwrap();
        log.write_line(b"first-8\n").unwrap();
        log.write_line(b"second\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "second\n");
        let sub = dir.path().join("sub");
        let backups: Vec<String> = names(&sub).into_iter().filter(|n| n != "gw.log").collect();
        assert_eq!(backups.len(), 1, "{backups:?}");
        assert_eq!(
            std::fs::read_to_string(sub.join(&backups[0])).unwrap(),
            "first-8\n"
        );
        // Files made by hand with older stamps: only the newest is kept.
        std::fs::write(sub.join("gw-2001-01-01T00-00-00.000.log"), "old").unwrap();
        std::fs::write(sub.join("gw-other.log"), "not a backup").unwrap();
        tidy(&path, &sub.join(&backups[0]), rotation);
        assert_eq!(
            names(&sub),
            vec![backups[0].clone(), "gw-other.log".into(), "gw.log".into()]
        );
    }

    #[test]
    fn compressed_backups_hold_the_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gw.log");
        std::fs::write(&path, "old line\n").unwrap();
        let backup = dir.path().join("gw-2026-01-01T00-00-00.000.log");
        std::fs::rename(&path, &backup).unwrap();
        tidy(&path, &backup, Rotation::new(1, 0, 0, true));
        let gz = dir.path().join("gw-2026-01-01T00-00-00.000.log.gz");
        assert!(!backup.exists());
        let mut text = String::new();
        std::io::Read::read_to_string(
            &mut flate2::read::GzDecoder::new(File::open(gz).unwrap()),
            &mut text,
        )
        .unwrap();
        assert_eq!(text, "old line\n");
    }

    #[test]
    fn reopen_follows_a_rename() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gw.log");
        let log = LogFile::open(&path, Rotation::new(0, 0, 0, false)).unwrap();
        log.write_line(b"before\n").unwrap();
        let moved = dir.path().join("gw.log.1");
        std::fs::rename(&path, &moved).unwrap();
        log.write_line(b"still old\n").unwrap();
        log.reopen().unwrap();
        log.write_line(b"after\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(&moved).unwrap(),
            "before\nstill old\n"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "after\n");
    }

    #[test]
    fn a_directory_that_cannot_be_made_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("file");
        std::fs::write(&blocker, "").unwrap();
        let err = LogFile::open(&blocker.join("gw.log"), Rotation::new(0, 0, 0, false))
            .err()
            .expect("a file is not a directory");
        assert!(matches!(err, LogError::Directory { .. }), "{err}");
    }
}
