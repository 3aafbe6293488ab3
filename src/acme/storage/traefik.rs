//! Traefik's `acme.json` as a resolver's storage, in Traefik's own format,
//! so that certificates survive the move from Traefik (and back):
//!
//! ```json
//! { "<resolver>": {
//!     "Account": { "Email": "…", "Registration": { "body": {…}, "uri": "…" },
//!                  "PrivateKey": "<base64 PKCS#1 DER>", "KeyType": "4096" },
//!     "Certificates": [ { "domain": { "main": "a.test", "sans": ["b.test"] },
//!                         "certificate": "<base64 PEM chain>", "key": "<base64 PEM key>",
//!                         "Store": "default" } ] } }
//! ```
//!
//! Traefik v2 and v3.0 write `KeyType` in the account; v3.7 does not. Both
//! read here. Traefik's account key is RSA, which the ACME client here
//! cannot sign with (ES256 only), so gangway registers its own P-256 key,
//! kept beside it as `GangwayAccount` (Traefik ignores that field), and
//! leaves Traefik's `Account` as it found it, for a move back.
//!
//! Every write reads the file again and replaces only this resolver's
//! `Certificates` and `GangwayAccount`: other resolvers' sections and any
//! other field stay as they were.

use super::super::AcmeError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// Serialises every read-modify-write of an `acme.json` in this process:
/// resolvers sharing one file each rewrite it whole.
static WRITING: Mutex<()> = Mutex::new(());

/// The field holding gangway's own account in a resolver's section.
const GANGWAY_ACCOUNT: &str = "GangwayAccount";

/// A resolver's section of an `acme.json`.
#[derive(Debug, Default, Deserialize)]
struct Section {
    #[serde(rename = "Account", default)]
    account: Option<TraefikAccount>,
    #[serde(rename = "Certificates", default)]
    certificates: Option<Vec<Entry>>,
    #[serde(rename = "GangwayAccount", default)]
    gangway: Option<GangwayAccount>,
}

/// Traefik's account: read to check it and to report it, never changed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct TraefikAccount {
    /// The contact address it was registered with.
    #[serde(rename = "Email", default)]
    pub email: String,
    /// The CA's answer to the registration.
    #[serde(rename = "Registration", default)]
    pub registration: Option<Registration>,
    /// The account key, PKCS#1 DER (base64 in the file).
    #[serde(rename = "PrivateKey", default, with = "base64_bytes")]
    pub private_key: Vec<u8>,
    /// Traefik v2 and v3.0 only: the resolver's key type then.
    #[serde(rename = "KeyType", default, skip_serializing_if = "Option::is_none")]
    pub key_type: Option<String>,
}

/// A registered account: the CA's account object and its URL.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Registration {
    /// The account object as the CA returned it.
    #[serde(default)]
    pub body: serde_json::Value,
    /// The account URL (the JWS `kid`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uri: String,
}

/// gangway's own account key for this resolver.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct GangwayAccount {
    /// The contact address.
    #[serde(rename = "Email", default)]
    pub email: String,
    /// The ACME directory it is registered with.
    #[serde(rename = "CaServer", default)]
    pub ca_server: String,
    /// The account key, PKCS#8 DER (base64 in the file).
    #[serde(rename = "PrivateKey", default, with = "base64_bytes")]
    pub private_key: Vec<u8>,
    /// Always `P256`.
    #[serde(rename = "KeyType", default)]
    pub key_type: String,
}

/// One certificate as Traefik stores it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Entry {
    /// Its names.
    #[serde(default)]
    pub domain: Domain,
    /// The chain, PEM (base64 in the file).
    #[serde(default, with = "base64_bytes", skip_serializing_if = "Vec::is_empty")]
    pub certificate: Vec<u8>,
    /// The private key, PEM (base64 in the file).
    #[serde(default, with = "base64_bytes", skip_serializing_if = "Vec::is_empty")]
    pub key: Vec<u8>,
    /// The TLS store that serves it (`default`).
    #[serde(rename = "Store", default)]
    pub store: String,
}

/// A certificate's names: the first, and the others.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Domain {
    /// The main name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub main: String,
    /// The other names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sans: Vec<String>,
}

impl Domain {
    /// The names as a sorted set, to compare two certificates' names.
    fn set(&self) -> Vec<String> {
        let mut all: Vec<String> = std::iter::once(&self.main)
            .chain(&self.sans)
            .filter(|n| !n.is_empty())
            .map(|n| n.to_ascii_lowercase())
            .collect();
        all.sort_unstable();
        all.dedup();
        all
    }
}

/// Go's `[]byte` in JSON: standard base64, or `null`.
mod base64_bytes {
    use base64::Engine as _;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text: Option<String> = Option::deserialize(d)?;
        match text {
            None => Ok(Vec::new()),
            Some(t) => base64::engine::general_purpose::STANDARD
                .decode(t.as_bytes())
                .map_err(|e| serde::de::Error::custom(format!("not base64: {e}"))),
        }
    }
}

/// What an `acme.json` holds for one resolver.
#[derive(Debug, Default)]
pub struct Contents {
    /// Traefik's account, when the file has one.
    pub traefik_account: Option<TraefikAccount>,
    /// gangway's account, when it has registered one.
    pub gangway_account: Option<GangwayAccount>,
    /// The certificates with both a chain and a key (Traefik drops the
    /// others too).
    pub certificates: Vec<Entry>,
}

/// Reads `path` and returns `resolver`'s part; a missing or empty file is
/// an empty store. Any malformed part of the file is an error naming where
/// it is, so a file gangway cannot read is never written over.
pub fn read(path: &Path, resolver: &str) -> Result<Contents, AcmeError> {
    let Some(mut sections) = read_all(path)? else {
        return Ok(Contents::default());
    };
    let Some(section) = sections.remove(resolver) else {
        return Ok(Contents::default());
    };
    let section: Section =
        serde_path_to_error::deserialize(section).map_err(|e| AcmeError::TraefikFile {
            path: path.to_owned(),
            problem: format!("`{resolver}.{}`: {}", e.path(), e.inner()),
        })?;
    Ok(Contents {
        traefik_account: section.account,
        gangway_account: section.gangway,
        certificates: section
            .certificates
            .unwrap_or_default()
            .into_iter()
            .filter(|c| !c.certificate.is_empty() && !c.key.is_empty())
            .collect(),
    })
}

/// The whole file as resolver → section (untyped, to be written back as
/// it was); `None` when there is no file or it is empty.
fn read_all(path: &Path) -> Result<Option<BTreeMap<String, serde_json::Value>>, AcmeError> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(AcmeError::Storage {
                path: path.to_owned(),
                source,
            });
        }
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let sections: BTreeMap<String, serde_json::Value> =
        serde_json::from_slice(&bytes).map_err(|e| AcmeError::TraefikFile {
            path: path.to_owned(),
            problem: e.to_string(),
        })?;
    // Traefik writes `null` for a resolver it has nothing for yet.
    Ok(Some(sections))
}

/// One resolver's part of an `acme.json`.
#[derive(Debug)]
pub struct AcmeJson {
    path: PathBuf,
    resolver: String,
    email: String,
    directory_url: String,
    account: Mutex<Option<(Vec<u8>, bool)>>,
}

impl AcmeJson {
    /// Opens `path` for `resolver`, checking that the file reads (a file
    /// that does not is refused rather than written over).
    pub fn open(
        path: &Path,
        resolver: &str,
        email: &str,
        directory_url: &str,
    ) -> Result<Self, AcmeError> {
        let contents = read(path, resolver)?;
        let account = contents
            .gangway_account
            .filter(|a| a.ca_server == directory_url && !a.private_key.is_empty())
            .map(|a| (a.private_key, true));
        Ok(AcmeJson {
            path: path.to_owned(),
            resolver: resolver.to_owned(),
            email: email.to_owned(),
            directory_url: directory_url.to_owned(),
            account: Mutex::new(account),
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// gangway's account key (PKCS#8 DER) for this resolver: the stored
    /// one, else a new one kept in memory until
    /// [`AcmeJson::store_account_key`] writes it.
    pub fn account_key(&self) -> Vec<u8> {
        let mut slot = self.account.lock().unwrap_or_else(PoisonError::into_inner);
        slot.get_or_insert_with(|| (super::super::key::account_key(), false))
            .0
            .clone()
    }

    /// Writes the account key if only memory holds it.
    pub fn store_account_key(&self) -> Result<(), AcmeError> {
        let mut slot = self.account.lock().unwrap_or_else(PoisonError::into_inner);
        let Some((der, stored)) = slot.as_mut().filter(|(_, stored)| !*stored) else {
            return Ok(());
        };
        let account = GangwayAccount {
            email: self.email.clone(),
            ca_server: self.directory_url.clone(),
            private_key: der.clone(),
            key_type: "P256".to_owned(),
        };
        self.update(|section| {
            section.insert(GANGWAY_ACCOUNT.to_owned(), to_value(&account));
        })?;
        *stored = true;
        Ok(())
    }

    /// Stores a certificate (its key's PEM, then the chain's) for
    /// `domains`, in place of the one with the same names if any.
    pub fn save_certificate(&self, domains: &[String], pem: &[u8]) -> Result<PathBuf, AcmeError> {
        let (key, chain) = split_pem(pem);
        let entry = Entry {
            domain: Domain {
                main: domains.first().cloned().unwrap_or_default(),
                sans: domains.iter().skip(1).cloned().collect(),
            },
            certificate: chain,
            key,
            store: "default".to_owned(),
        };
        let names = entry.domain.set();
        self.update(|section| {
            let list = section
                .entry("Certificates".to_owned())
                .or_insert(serde_json::Value::Null);
            let mut entries: Vec<serde_json::Value> = match list.take() {
                serde_json::Value::Array(a) => a,
                _ => Vec::new(),
            };
            let same = entries.iter().position(|e| {
                serde_json::from_value::<Entry>(e.clone()).is_ok_and(|e| e.domain.set() == names)
            });
            match same {
                Some(i) => entries[i] = to_value(&entry),
                None => entries.push(to_value(&entry)),
            }
            *list = serde_json::Value::Array(entries);
        })?;
        Ok(self.path.clone())
    }

    /// The stored certificates, each as its key's PEM then its chain's,
    /// named for the log.
    pub fn certificates(&self) -> Result<Vec<(String, Vec<u8>)>, AcmeError> {
        let contents = read(&self.path, &self.resolver)?;
        Ok(contents
            .certificates
            .into_iter()
            .map(|c| {
                let what = format!(
                    "`{}` in `{}` ({})",
                    c.domain.main,
                    self.path.display(),
                    self.resolver
                );
                let mut pem = c.key;
                if !pem.ends_with(b"\n") {
                    pem.push(b'\n');
                }
                pem.extend_from_slice(&c.certificate);
                (what, pem)
            })
            .collect())
    }

    /// Reads the file again, lets `change` edit this resolver's section,
    /// and writes the whole file back.
    fn update(
        &self,
        change: impl FnOnce(&mut serde_json::Map<String, serde_json::Value>),
    ) -> Result<(), AcmeError> {
        let _writing = WRITING.lock().unwrap_or_else(PoisonError::into_inner);
        let mut sections = read_all(&self.path)?.unwrap_or_default();
        let section = sections
            .entry(self.resolver.clone())
            .or_insert(serde_json::Value::Null);
        if !section.is_object() {
            *section = serde_json::Value::Object(serde_json::Map::new());
        }
        if let serde_json::Value::Object(map) = section {
            change(map);
        }
        let bytes = serde_json::to_vec_pretty(&sections).map_err(|e| AcmeError::TraefikFile {
            path: self.path.clone(),
            problem: e.to_string(),
        })?;
        write_file(&self.path, &bytes)
    }
}

fn to_value<T: Serialize>(value: &T) -> serde_json::Value {
    // These types hold only strings, lists and JSON values.
    serde_json::to_value(value).expect("acme.json types always serialise")
}

/// Splits key-then-chain PEM into the key's blocks and the certificates'.
fn split_pem(pem: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let text = String::from_utf8_lossy(pem);
    let (mut key, mut chain) = (String::new(), String::new());
    let mut block = String::new();
    let mut is_cert = false;
    for line in text.lines() {
        if line.starts_with("-----BEGIN ") {
            block.clear();
            is_cert = line.contains("CERTIFICATE");
        }
        block.push_str(line);
        block.push('\n');
        if line.starts_with("-----END ") {
            if is_cert { &mut chain } else { &mut key }.push_str(&block);
            block.clear();
        }
    }
    (key.into_bytes(), chain.into_bytes())
}

/// Writes `bytes` to `path` with mode 0600: whole to a file beside it,
/// then renamed over it. A file mounted on its own (a Docker bind mount
/// of `acme.json`) cannot be renamed over; it is then rewritten in place,
/// as Traefik always does.
fn write_file(path: &Path, bytes: &[u8]) -> Result<(), AcmeError> {
    let error = |source| AcmeError::Storage {
        path: path.to_owned(),
        source,
    };
    let name = path
        .file_name()
        .map_or_else(|| "acme.json".into(), |n| n.to_string_lossy().into_owned());
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    let whole = |target: &Path, create: bool| -> std::io::Result<()> {
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create(create)
            .truncate(true)
            .mode(0o600)
            .open(target)?;
        // A file made by someone else keeps its mode on open.
        file.set_permissions(fs::Permissions::from_mode(0o600))?;
        file.write_all(bytes)?;
        file.sync_all()
    };
    let renamed = whole(&tmp, true).and_then(|()| fs::rename(&tmp, path));
    match renamed {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            let in_place = matches!(
                e.kind(),
                std::io::ErrorKind::ResourceBusy
                    | std::io::ErrorKind::CrossesDevices
                    | std::io::ErrorKind::PermissionDenied
                    | std::io::ErrorKind::ReadOnlyFilesystem
            ) && path.is_file();
            if in_place {
                whole(path, false).map_err(error)
            } else {
                Err(error(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    const CHAIN: &str = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n-----BEGIN CERTIFICATE-----\nBBBB\n-----END CERTIFICATE-----\n";
    const KEY: &str = "-----BEGIN PRIVATE KEY-----\nCCCC\n-----END PRIVATE KEY-----\n";

    fn traefik_file(dir: &Path) -> PathBuf {
        let path = dir.join("acme.json");
        let json = serde_json::json!({
            "le": {
                "Account": {
                    "Email": "ops@example.test",
                    "Registration": {"body": {"status": "valid"}, "uri": "https://ca.test/acct/1"},
                    "PrivateKey": b64("rsa key"),
                    "KeyType": "4096"
                },
                "Certificates": [
                    {"domain": {"main": "a.test", "sans": ["b.test"]}, "certificate": b64(CHAIN), "key": b64(KEY), "Store": "default"},
                    {"domain": {"main": "empty.test"}, "certificate": null, "key": null, "Store": "default"}
                ]
            },
            "other": {"Account": null, "Certificates": null, "Extra": 1}
        });
        fs::write(&path, serde_json::to_vec_pretty(&json).unwrap()).unwrap();
        path
    }

    #[test]
    fn traefik_sections_are_read_and_empty_entries_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = traefik_file(dir.path());
        let contents = read(&path, "le").unwrap();
        let account = contents.traefik_account.unwrap();
        assert_eq!(account.email, "ops@example.test");
        assert_eq!(account.private_key, b"rsa key");
        assert_eq!(account.key_type.as_deref(), Some("4096"));
        assert_eq!(account.registration.unwrap().uri, "https://ca.test/acct/1");
        assert_eq!(contents.certificates.len(), 1);
        assert_eq!(contents.certificates[0].domain.main, "a.test");
        assert_eq!(contents.certificates[0].certificate, CHAIN.as_bytes());
        assert!(read(&path, "other").unwrap().certificates.is_empty());
        assert!(read(&path, "absent").unwrap().certificates.is_empty());
        assert!(read(&dir.path().join("none.json"), "le").is_ok());
        fs::write(dir.path().join("blank.json"), "\n").unwrap();
        assert!(read(&dir.path().join("blank.json"), "le").is_ok());
    }

    #[test]
    fn malformed_files_are_errors_that_say_where() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("acme.json");
        for (json, expect) in [
            ("{\"le\": {", "EOF"),
            ("[1]", "invalid type"),
            (
                "{\"le\": {\"Certificates\": [{\"certificate\": \"%%%\"}]}}",
                "le.Certificates[0].certificate",
            ),
        ] {
            fs::write(&path, json).unwrap();
            let err = AcmeJson::open(&path, "le", "", "https://ca.test/dir").unwrap_err();
            let text = err.to_string();
            assert!(text.contains(expect), "{json}: {text}");
            assert!(text.contains("acme.json"), "{text}");
        }
    }

    #[test]
    fn writes_keep_the_rest_of_the_file_and_replace_the_same_names() {
        let dir = tempfile::tempdir().unwrap();
        let path = traefik_file(dir.path());
        let before: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
        let store = AcmeJson::open(&path, "le", "ops@example.test", "https://ca.test/dir").unwrap();
        let key = store.account_key();
        store.store_account_key().unwrap();
        let pem = format!("{KEY}{CHAIN}");
        store
            .save_certificate(&["b.test".into(), "a.test".into()], pem.as_bytes())
            .unwrap();
        store
            .save_certificate(&["c.test".into()], pem.as_bytes())
            .unwrap();
        let after: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
        assert_eq!(
            after["other"], before["other"],
            "another resolver untouched"
        );
        assert_eq!(after["le"]["Account"], before["le"]["Account"]);
        let certs = after["le"]["Certificates"].as_array().unwrap();
        assert_eq!(certs.len(), 3, "a.test replaced, c.test added: {certs:?}");
        assert_eq!(certs[0]["domain"]["main"], "b.test");
        assert_eq!(certs[0]["domain"]["sans"][0], "a.test");
        assert_eq!(certs[0]["certificate"], b64(CHAIN).as_str());
        assert_eq!(certs[0]["key"], b64(KEY).as_str());
        assert_eq!(certs[0]["Store"], "default");
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let again = AcmeJson::open(&path, "le", "ops@example.test", "https://ca.test/dir").unwrap();
        assert_eq!(again.account_key(), key, "gangway's account is read back");
        let elsewhere =
            AcmeJson::open(&path, "le", "ops@example.test", "https://other.test/dir").unwrap();
        assert_ne!(elsewhere.account_key(), key, "another CA, another account");
        assert_eq!(again.certificates().unwrap().len(), 2);
    }

    #[test]
    fn two_resolvers_share_one_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("acme.json");
        let a = AcmeJson::open(&path, "a", "", "https://ca.test/dir").unwrap();
        let b = AcmeJson::open(&path, "b", "", "https://ca.test/dir").unwrap();
        let pem = format!("{KEY}{CHAIN}");
        a.save_certificate(&["a.test".into()], pem.as_bytes())
            .unwrap();
        b.save_certificate(&["b.test".into()], pem.as_bytes())
            .unwrap();
        assert!(a.certificates().unwrap()[0].0.contains("a.test"));
        assert_eq!(b.certificates().unwrap().len(), 1);
        assert_eq!(read(&path, "a").unwrap().certificates.len(), 1);
    }

    #[test]
    fn key_and_chain_are_split() {
        let (key, chain) = split_pem(format!("{KEY}{CHAIN}").as_bytes());
        assert_eq!(key, KEY.as_bytes());
        assert_eq!(chain, CHAIN.as_bytes());
    }
}
