//! htpasswd lines (`user:hash`) and the hash formats Traefik accepts:
//! bcrypt (`$2y$`, `$2b$`, `$2a$`), Apache MD5 (`$apr1$`, and the older
//! `$1$` MD5-crypt), and SHA-1 (`{SHA}`).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use md5::{Digest as _, Md5};
use sha1::Sha1;
use subtle::ConstantTimeEq as _;

/// Why an htpasswd line or hash does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HtpasswdError {
    /// The line has no `:` between user and hash.
    #[error("expected `user:hash`")]
    NoColon,
    /// Nothing before the `:`.
    #[error("the user name is empty")]
    EmptyUser,
    /// A `$2y$`, `$2b$` or `$2a$` hash of the wrong shape.
    #[error("not a complete bcrypt hash")]
    Bcrypt,
    /// An MD5-crypt hash without the `$` between salt and digest.
    #[error("an {magic} hash needs a salt and a digest")]
    Md5NoDigest {
        /// `$apr1$` or `$1$`.
        magic: &'static str,
    },
    /// An MD5-crypt hash whose salt or digest has the wrong length.
    #[error("not a complete {magic} hash")]
    Md5Incomplete {
        /// `$apr1$` or `$1$`.
        magic: &'static str,
    },
    /// A `{SHA}` hash that is not base64.
    #[error("a {{SHA}} hash is base64")]
    ShaNotBase64,
    /// A `{SHA}` hash that does not decode to 20 bytes.
    #[error("a {{SHA}} hash holds 20 bytes")]
    ShaLength,
    /// No known prefix.
    #[error("unknown hash format (use bcrypt, $apr1$ MD5 or {{SHA}})")]
    UnknownFormat,
}

/// A password hash read from an htpasswd line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Hash {
    /// bcrypt, checked with the `bcrypt` crate (slow by design).
    Bcrypt(String),
    /// MD5-crypt with a magic (`$apr1$` or `$1$`), its salt and its digest.
    Md5Crypt {
        /// `$apr1$` or `$1$`.
        magic: &'static str,
        /// Up to 8 characters.
        salt: String,
        /// The 22-character encoded digest.
        digest: String,
    },
    /// SHA-1 of the password.
    Sha1([u8; 20]),
}

impl Hash {
    /// Reads a hash; the error says which format was expected.
    pub fn parse(text: &str) -> Result<Hash, HtpasswdError> {
        if let Some(full) = ["$2y$", "$2b$", "$2a$"]
            .iter()
            .find_map(|p| text.strip_prefix(p).map(|_| text))
        {
            // Cost (2 digits), `$`, then 53 characters of salt and digest.
            let ok = full.len() == 60 && full.as_bytes()[6] == b'$';
            return if ok {
                Ok(Hash::Bcrypt(full.to_owned()))
            } else {
                Err(HtpasswdError::Bcrypt)
            };
        }
        for magic in ["$apr1$", "$1$"] {
            if let Some(rest) = text.strip_prefix(magic) {
                let (salt, digest) = rest
                    .split_once('$')
                    .ok_or(HtpasswdError::Md5NoDigest { magic })?;
                if salt.len() > 8 || digest.len() != 22 {
                    return Err(HtpasswdError::Md5Incomplete { magic });
                }
                return Ok(Hash::Md5Crypt {
                    magic,
                    salt: salt.to_owned(),
                    digest: digest.to_owned(),
                });
            }
        }
        if let Some(b64) = text.strip_prefix("{SHA}") {
            let bytes = STANDARD
                .decode(b64)
                .map_err(|_| HtpasswdError::ShaNotBase64)?;
            let digest: [u8; 20] = bytes.try_into().map_err(|_| HtpasswdError::ShaLength)?;
            return Ok(Hash::Sha1(digest));
        }
        Err(HtpasswdError::UnknownFormat)
    }

    /// Whether `password` matches. bcrypt takes tens of milliseconds.
    pub fn verify(&self, password: &[u8]) -> bool {
        match self {
            Hash::Bcrypt(h) => bcrypt::verify(password, h).unwrap_or(false),
            Hash::Md5Crypt {
                magic,
                salt,
                digest,
            } => {
                let got = md5_crypt(password, salt.as_bytes(), magic.as_bytes());
                constant_time_eq(got.as_bytes(), digest.as_bytes())
            }
            Hash::Sha1(want) => {
                let got: [u8; 20] = Sha1::digest(password).into();
                constant_time_eq(&got, want)
            }
        }
    }

    /// Whether checking is slow enough to be worth caching.
    pub fn is_slow(&self) -> bool {
        matches!(self, Hash::Bcrypt(_))
    }
}

/// Compares without stopping at the first difference, so the time taken
/// does not tell an attacker how much of a guess was right.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.ct_eq(b).into()
}

/// Parses one `user:hash` line.
pub fn parse_line(line: &str) -> Result<(String, Hash), HtpasswdError> {
    let (user, hash) = line.split_once(':').ok_or(HtpasswdError::NoColon)?;
    if user.is_empty() {
        return Err(HtpasswdError::EmptyUser);
    }
    Ok((user.to_owned(), Hash::parse(hash.trim())?))
}

// MD5-crypt is written here because no maintained crate covers Apache's
// `$apr1$` form: `pwhash` (last release 2021) and `md5crypt` know only `$1$`,
// each with a fixed magic, and would bring second versions of the MD5 and
// SHA crates already in the tree; `htpasswd-verify` depends on the
// unmaintained `rust-crypto`. The two forms differ only in the magic, so one
// function serves both, on the `md-5` crate gangway already uses.
const ITOA64: &[u8; 64] = b"./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// The MD5-crypt digest (the part after the salt), as Poul-Henning Kamp's
/// algorithm defines it; Apache's `$apr1$` differs only in the magic.
fn md5_crypt(password: &[u8], salt: &[u8], magic: &[u8]) -> String {
    let mut alt = Md5::new();
    alt.update(password);
    alt.update(salt);
    alt.update(password);
    let alt = alt.finalize();

    let mut ctx = Md5::new();
    ctx.update(password);
    ctx.update(magic);
    ctx.update(salt);
    let mut left = password.len();
    while left > 0 {
        let n = left.min(16);
        ctx.update(&alt[..n]);
        left -= n;
    }
    let mut bits = password.len();
    while bits > 0 {
        if bits & 1 == 1 {
            ctx.update([0u8]);
        } else {
            ctx.update(&password[..1]);
        }
        bits >>= 1;
    }
    let mut sum = ctx.finalize();

    for round in 0..1000 {
        let mut c = Md5::new();
        if round % 2 == 1 {
            c.update(password);
        } else {
            c.update(sum);
        }
        if round % 3 != 0 {
            c.update(salt);
        }
        if round % 7 != 0 {
            c.update(password);
        }
        if round % 2 == 1 {
            c.update(sum);
        } else {
            c.update(password);
        }
        sum = c.finalize();
    }

    let mut out = String::with_capacity(22);
    let mut put = |mut v: u32, n: usize| {
        for _ in 0..n {
            out.push(char::from(ITOA64[(v & 0x3f) as usize]));
            v >>= 6;
        }
    };
    for (a, b, c) in [(0, 6, 12), (1, 7, 13), (2, 8, 14), (3, 9, 15), (4, 10, 5)] {
        put(
            (u32::from(sum[a]) << 16) | (u32::from(sum[b]) << 8) | u32::from(sum[c]),
            4,
        );
    }
    put(u32::from(sum[11]), 2);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    // Vectors made on this machine with `openssl passwd` and glibc's crypt(3).
    const APR1: &str = "$apr1$Zx9mQ2aB$am5BKSoVjrs8gyWVDEIEm0";
    const MD5: &str = "$1$saltsalt$ZliGyAN3DciDHEkDboonh/";
    const SHA: &str = "{SHA}87u9ZqY9S/F0eUBXjsPQEDUw4h0=";
    const BCRYPT_2B: &str = "$2b$05$abcdefghijklmnopqrstuuoXuKqgZXLiJqzfmMXDDhSFPIvxV7t8.";
    const BCRYPT_2Y: &str = "$2y$04$ABCDEFGHIJKLMNOPQRSTUuek4CbSQQu35c9YYgSnjvfYm3e9bPOL.";

    #[test]
    fn every_format_accepts_its_password_and_nothing_else() {
        for (hash, password) in [
            (APR1, "hunter2"),
            (MD5, "hunter2"),
            (SHA, "hunter2"),
            (BCRYPT_2B, "hunter2"),
            (BCRYPT_2Y, "pässwörd"),
        ] {
            let h = Hash::parse(hash).expect(hash);
            assert!(h.verify(password.as_bytes()), "{hash}");
            assert!(!h.verify(b"hunter3"), "{hash}");
            assert!(!h.verify(b""), "{hash}");
        }
    }

    #[test]
    fn malformed_lines_say_why() {
        assert!(
            parse_line("nocolon")
                .unwrap_err()
                .to_string()
                .contains("user:hash")
        );
        assert!(
            parse_line(":{SHA}x")
                .unwrap_err()
                .to_string()
                .contains("empty")
        );
        assert!(
            parse_line("u:plain")
                .unwrap_err()
                .to_string()
                .contains("unknown hash format")
        );
        assert!(
            parse_line("u:$apr1$abc")
                .unwrap_err()
                .to_string()
                .contains("salt")
        );
        assert!(
            parse_line("u:$2y$05$short")
                .unwrap_err()
                .to_string()
                .contains("bcrypt")
        );
        assert!(
            parse_line("u:{SHA}!!!")
                .unwrap_err()
                .to_string()
                .contains("base64")
        );
        assert_eq!(
            parse_line(&format!("ann:{SHA}")).map(|l| l.0),
            Ok("ann".to_owned())
        );
    }
}
