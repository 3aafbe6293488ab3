//! What a client's TLS handshake settled on, named as Traefik names it in
//! its metrics (`tls_version`, `tls_cipher`): the version as `1.2`/`1.3`
//! and the cipher suite by its IANA name (Go's `tls.CipherSuiteName`).
//! One byte per connection, so a request carries it for free.

/// The version labels, by index.
const VERSIONS: [&str; 5] = ["1.0", "1.1", "1.2", "1.3", "unknown"];
const UNKNOWN_VERSION: u8 = 4;

/// The cipher suite labels, by index: every suite gangway's TLS stack
/// can negotiate, then `unknown`.
const CIPHERS: [(u16, &str); 10] = [
    (0x1301, "TLS_AES_128_GCM_SHA256"),
    (0x1302, "TLS_AES_256_GCM_SHA384"),
    (0x1303, "TLS_CHACHA20_POLY1305_SHA256"),
    (0xc02b, "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"),
    (0xc02c, "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"),
    (0xcca9, "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"),
    (0xc02f, "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"),
    (0xc030, "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"),
    (0xcca8, "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"),
    (0, "unknown"),
];
const UNKNOWN_CIPHER: u8 = 9;

/// A connection's TLS version and cipher suite.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Negotiated {
    version: u8,
    cipher: u8,
}

impl Negotiated {
    /// How many distinct values there are ([`Negotiated::index`] is below it).
    pub const COUNT: usize = VERSIONS.len() * CIPHERS.len();

    /// From the protocol version and cipher suite numbers on the wire
    /// (`0x0303` is TLS 1.2; `0x1301` is TLS_AES_128_GCM_SHA256).
    pub fn from_wire(version: Option<u16>, cipher: Option<u16>) -> Self {
        let version = match version {
            Some(0x0301) => 0,
            Some(0x0302) => 1,
            Some(0x0303) => 2,
            Some(0x0304) => 3,
            _ => UNKNOWN_VERSION,
        };
        let cipher = cipher
            .and_then(|c| {
                CIPHERS[..CIPHERS.len() - 1]
                    .iter()
                    .position(|(n, _)| *n == c)
            })
            .and_then(|i| u8::try_from(i).ok())
            .unwrap_or(UNKNOWN_CIPHER);
        Negotiated { version, cipher }
    }

    /// What a finished rustls handshake agreed on.
    pub fn of(conn: &rustls::ServerConnection) -> Self {
        Self::from_wire(
            conn.protocol_version().map(u16::from),
            conn.negotiated_cipher_suite().map(|s| u16::from(s.suite())),
        )
    }

    /// QUIC always runs TLS 1.3; the suite is not told by the QUIC stack.
    pub const QUIC: Negotiated = Negotiated {
        version: 3,
        cipher: UNKNOWN_CIPHER,
    };

    /// The `tls_version` label value (`1.2`, `1.3`, `unknown`).
    pub fn version(self) -> &'static str {
        VERSIONS[usize::from(self.version)]
    }

    /// The `tls_cipher` label value (`TLS_AES_128_GCM_SHA256`, `unknown`).
    pub fn cipher(self) -> &'static str {
        CIPHERS[usize::from(self.cipher)].1
    }

    /// The cipher suite's name when it is known (not over QUIC).
    pub fn known_cipher(self) -> Option<&'static str> {
        (self.cipher != UNKNOWN_CIPHER).then(|| self.cipher())
    }

    /// A dense index, below [`Negotiated::COUNT`].
    pub fn index(self) -> usize {
        usize::from(self.version) * CIPHERS.len() + usize::from(self.cipher)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_go_and_traefik_ones() {
        let n = Negotiated::from_wire(Some(0x0304), Some(0x1302));
        assert_eq!((n.version(), n.cipher()), ("1.3", "TLS_AES_256_GCM_SHA384"));
        let n = Negotiated::from_wire(Some(0x0303), Some(0xcca8));
        assert_eq!(
            (n.version(), n.cipher()),
            ("1.2", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256")
        );
        let n = Negotiated::from_wire(None, Some(0x0005));
        assert_eq!((n.version(), n.cipher()), ("unknown", "unknown"));
    }

    #[test]
    fn indexes_are_dense_and_distinct() {
        let mut seen = std::collections::HashSet::new();
        for v in [0x0301, 0x0302, 0x0303, 0x0304, 0] {
            for (c, _) in CIPHERS {
                let i = Negotiated::from_wire(Some(v), Some(c)).index();
                assert!(i < Negotiated::COUNT);
                assert!(seen.insert(i), "{v:x} {c:x}");
            }
        }
    }
}
