//! Where a resolver keeps its ACME account key and its certificates:
//! `<storage>/<CA host>[_port]/account.pem` and
//! `<storage>/<CA host>/certs/<main name>_<hash>.pem` (key, then chain).
//! Directories are 0700, files 0600, written whole and renamed into place.
//! One folder per CA, so switching between staging and production never
//! serves or reuses the other's certificates or account.
//!
//! A file instead of a folder (Traefik's `acme.json`) is kept in Traefik's
//! format ([`traefik`]).

pub mod traefik;

use super::AcmeError;
use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// One resolver's storage folder for one CA.
///
/// Nothing here needs the folder to be writable: the account key is kept in
/// memory once read or made, so a read-only or full disk costs only the
/// files (the caller retries [`Storage::store_account_key`] and
/// [`Storage::save_certificate`] until they succeed).
#[derive(Debug)]
pub struct Storage {
    root: PathBuf,
    dir: PathBuf,
    account: Mutex<Option<AccountKey>>,
}

/// The account key in memory, and whether `account.pem` holds it.
#[derive(Debug)]
struct AccountKey {
    der: Vec<u8>,
    stored: bool,
}

impl Storage {
    /// The folder for `directory_url` under `root`; nothing is touched yet.
    pub fn new(root: &Path, directory_url: &str) -> Self {
        Storage {
            root: root.to_path_buf(),
            dir: root.join(ca_folder(directory_url)),
            account: Mutex::new(None),
        }
    }

    /// The folder of this CA.
    pub fn folder(&self) -> &Path {
        &self.dir
    }

    /// Creates the folders (mode 0700) where missing and tightens the modes
    /// of existing ones; a folder already private is left alone, so a
    /// read-only storage that is complete passes.
    pub fn prepare(&self) -> Result<(), AcmeError> {
        for d in [self.root.clone(), self.dir.clone(), self.dir.join("certs")] {
            let private = |d: &Path| -> std::io::Result<()> {
                match fs::metadata(d) {
                    Ok(m) if m.is_dir() && m.permissions().mode() & 0o777 == 0o700 => Ok(()),
                    Ok(m) if m.is_dir() => {
                        fs::set_permissions(d, fs::Permissions::from_mode(0o700))
                    }
                    _ => fs::DirBuilder::new()
                        .recursive(true)
                        .mode(0o700)
                        .create(d)
                        .and_then(|()| fs::set_permissions(d, fs::Permissions::from_mode(0o700))),
                }
            };
            private(&d).map_err(|source| AcmeError::Storage {
                path: d.clone(),
                source,
            })?;
        }
        Ok(())
    }

    /// The account key (PKCS#8 DER): from memory, else from `account.pem`,
    /// else a new one, kept in memory until [`Storage::store_account_key`]
    /// manages to write it.
    pub fn account_key(&self) -> Result<Vec<u8>, AcmeError> {
        use rustls::pki_types::PrivatePkcs8KeyDer;
        use rustls::pki_types::pem::PemObject;
        let mut slot = self.account.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(key) = slot.as_ref() {
            return Ok(key.der.clone());
        }
        let path = self.account_path();
        let key = match fs::read(&path) {
            Ok(pem) => AccountKey {
                der: PrivatePkcs8KeyDer::from_pem_slice(&pem)
                    .map(|k| k.secret_pkcs8_der().to_vec())
                    .map_err(|e| AcmeError::Storage {
                        path,
                        source: std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()),
                    })?,
                stored: true,
            },
            // No file, or no folder to hold one (a storage that could not
            // be created): a new key. Any other error keeps a key that may
            // exist from being replaced.
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) =>
            {
                AccountKey {
                    der: super::key::account_key(),
                    stored: false,
                }
            }
            Err(source) => return Err(AcmeError::Storage { path, source }),
        };
        let der = key.der.clone();
        *slot = Some(key);
        Ok(der)
    }

    /// Writes the account key if it exists only in memory; `Ok` when there
    /// is nothing left to write.
    pub fn store_account_key(&self) -> Result<(), AcmeError> {
        let mut slot = self.account.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(key) = slot.as_mut().filter(|k| !k.stored) else {
            return Ok(());
        };
        self.prepare()?;
        let pem = pem_block("PRIVATE KEY", &key.der);
        self.write(&self.account_path(), pem.as_bytes())?;
        key.stored = true;
        Ok(())
    }

    fn account_path(&self) -> PathBuf {
        self.dir.join("account.pem")
    }

    /// Saves a certificate (key PEM then chain PEM) for `domains`.
    pub fn save_certificate(&self, domains: &[String], pem: &[u8]) -> Result<PathBuf, AcmeError> {
        self.prepare()?;
        let path = self.dir.join("certs").join(cert_file_name(domains));
        self.write(&path, pem)?;
        Ok(path)
    }

    /// Every stored certificate file's bytes, with its path.
    pub fn certificates(&self) -> Vec<(PathBuf, Result<Vec<u8>, std::io::Error>)> {
        let Ok(entries) = fs::read_dir(self.dir.join("certs")) else {
            return Vec::new();
        };
        let mut out: Vec<_> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "pem"))
            .map(|p| {
                let bytes = fs::read(&p);
                (p, bytes)
            })
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    fn write(&self, path: &Path, bytes: &[u8]) -> Result<(), AcmeError> {
        let tmp = path.with_extension("tmp");
        let result = (|| {
            let mut file = fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&tmp)?;
            // A file left over from an older run keeps its mode on open.
            file.set_permissions(fs::Permissions::from_mode(0o600))?;
            file.write_all(bytes)?;
            file.sync_all()?;
            fs::rename(&tmp, path)
        })();
        if result.is_err() {
            // A half-written file would only hold the space a retry needs.
            let _ = fs::remove_file(&tmp);
        }
        result.map_err(|source| AcmeError::Storage {
            path: path.to_owned(),
            source,
        })
    }
}

/// Whether `storage` names a Traefik `acme.json` rather than a folder: an
/// existing file, or a path ending in `.json` that does not exist yet.
pub fn is_traefik_file(storage: &Path) -> bool {
    match fs::metadata(storage) {
        Ok(m) => !m.is_dir(),
        Err(_) => storage
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("json")),
    }
}

/// `https://acme-v02.api.letsencrypt.org/directory` → `acme-v02.api.letsencrypt.org`,
/// `https://127.0.0.1:14000/dir` → `127.0.0.1_14000`.
pub fn ca_folder(directory_url: &str) -> String {
    let rest = directory_url
        .split_once("://")
        .map_or(directory_url, |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or(rest);
    let safe: String = authority
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if safe.is_empty() || safe.starts_with('.') {
        format!("ca_{safe}")
    } else {
        safe
    }
}

/// `<main>_<hash of the sorted set>.pem`: readable, and distinct per set.
pub fn cert_file_name(domains: &[String]) -> String {
    let mut sorted: Vec<&str> = domains.iter().map(String::as_str).collect();
    sorted.sort_unstable();
    sorted.dedup();
    // FNV-1a: a stable name, not a secret.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for name in &sorted {
        for b in name.bytes().chain(std::iter::once(0)) {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    let main = domains.first().map_or("cert", String::as_str);
    format!("{main}_{hash:016x}.pem")
}

/// A PEM block of `label` around `der`.
pub fn pem_block(label: &str, der: &[u8]) -> String {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(chunk).unwrap_or_default());
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_and_files_are_private() {
        let root = tempfile::tempdir().unwrap();
        let storage = Storage::new(&root.path().join("acme"), "https://127.0.0.1:14000/dir");
        storage.prepare().unwrap();
        let key = storage.account_key().unwrap();
        storage.store_account_key().unwrap();
        assert_eq!(storage.account_key().unwrap(), key, "the key is reused");
        let again = Storage::new(&root.path().join("acme"), "https://127.0.0.1:14000/dir");
        assert_eq!(
            again.account_key().unwrap(),
            key,
            "the stored key is read back"
        );
        let path = storage
            .save_certificate(&["b.test".into(), "a.test".into()], b"pem")
            .unwrap();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        assert!(
            name.starts_with("b.test_") && name.ends_with(".pem"),
            "{name}"
        );
        let again = cert_file_name(&["b.test".into(), "a.test".into(), "a.test".into()]);
        assert_eq!(again, name, "the same set gives the same file");
        assert_ne!(cert_file_name(&["b.test".into()]), name);
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&root.path().join("acme")), 0o700);
        assert_eq!(mode(&root.path().join("acme/127.0.0.1_14000")), 0o700);
        assert_eq!(
            mode(&root.path().join("acme/127.0.0.1_14000/account.pem")),
            0o600
        );
        assert_eq!(mode(&path), 0o600);
        assert_eq!(storage.certificates().len(), 1);
    }

    #[test]
    fn an_unwritable_storage_keeps_the_account_key_in_memory() {
        let root = tempfile::tempdir().unwrap();
        // A folder below a plain file can never be created.
        let blocker = root.path().join("file");
        fs::write(&blocker, b"").unwrap();
        let storage = Storage::new(&blocker.join("acme"), "https://127.0.0.1:14000/dir");
        assert!(storage.prepare().is_err());
        let key = storage.account_key().expect("a key even without storage");
        assert!(storage.store_account_key().is_err());
        assert_eq!(
            storage.account_key().unwrap(),
            key,
            "the same key every time"
        );
        assert!(
            storage
                .save_certificate(&["a.test".into()], b"pem")
                .is_err()
        );
        assert!(storage.certificates().is_empty());
    }

    #[test]
    fn each_ca_has_its_folder() {
        assert_eq!(
            ca_folder("https://acme-v02.api.letsencrypt.org/directory"),
            "acme-v02.api.letsencrypt.org"
        );
        assert_eq!(
            ca_folder("https://acme-staging-v02.api.letsencrypt.org/directory"),
            "acme-staging-v02.api.letsencrypt.org"
        );
        assert_eq!(ca_folder("https://[::1]:14000/dir"), "___1__14000");
        assert_eq!(ca_folder(".."), "ca_..");
    }
}
