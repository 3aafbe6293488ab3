//! A small tmpfs mounted over a test's folder, to give gangway a real full
//! disk (ENOSPC) or a real read-only file system (EROFS). File modes would
//! not do: the tests run as root, who writes through them.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A mounted tmpfs; unmounted when dropped, also when the test panics.
pub struct Tmpfs {
    pub path: PathBuf,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` (such as `64k`) on `path`. Where mounting is
    /// not possible (not root, no `mount`), the test skips, except under
    /// `GANGWAY_TEST_STRICT=1`, where it fails.
    pub fn mount(test: &str, path: &Path, size: &str) -> Option<Tmpfs> {
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size},mode=0755")])
            .arg("tmpfs")
            .arg(path)
            .stdin(Stdio::null())
            .output();
        match out {
            Ok(o) if o.status.success() => Some(Tmpfs {
                path: path.to_path_buf(),
            }),
            other => {
                let why = match other {
                    Ok(o) => String::from_utf8_lossy(&o.stderr).trim().to_owned(),
                    Err(e) => e.to_string(),
                };
                if std::env::var("GANGWAY_TEST_STRICT").as_deref() == Ok("1") {
                    panic!("{test}: cannot mount a tmpfs (needs root): {why}");
                }
                eprintln!("{test}: SKIPPED: cannot mount a tmpfs (needs root): {why}");
                None
            }
        }
    }

    /// Fills the file system until a write fails with ENOSPC.
    pub fn fill(&self) {
        let mut file = std::fs::File::create(self.filler()).expect("filler file");
        let chunk = [0u8; 4096];
        loop {
            match file.write_all(&chunk).and_then(|()| file.sync_all()) {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(28) => return,
                Err(e) => panic!("filling {}: {e}", self.path.display()),
            }
        }
    }

    /// Frees the space `fill` took.
    pub fn free(&self) {
        std::fs::remove_file(self.filler()).expect("remove the filler");
    }

    /// Remounts read-only (`true`) or read-write.
    pub fn set_read_only(&self, read_only: bool) {
        let option = if read_only {
            "remount,ro"
        } else {
            "remount,rw"
        };
        let status = Command::new("mount")
            .args(["-o", option])
            .arg(&self.path)
            .status()
            .expect("run mount");
        assert!(
            status.success(),
            "mount -o {option} {}",
            self.path.display()
        );
    }

    fn filler(&self) -> PathBuf {
        self.path.join("filler")
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // Lazy: gangway may still hold a file open if the test failed.
        let _ = Command::new("umount")
            .arg("-l")
            .arg(&self.path)
            .stderr(Stdio::null())
            .status();
    }
}
