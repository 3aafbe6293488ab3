//! The PROXY protocol header (HAProxy's specification, versions 1 and 2)
//! that tells a TCP server who the client is: sent first on the
//! connection to the server.

use std::net::{IpAddr, SocketAddr};

/// The twelve bytes every version 2 header starts with.
const V2_SIGNATURE: [u8; 12] = *b"\r\n\r\n\0\r\nQUIT\n";

/// The header for a connection from `client` accepted at `local`, in
/// `version` 1 (text) or 2 (binary). When one address is IPv4 and the
/// other IPv6, both are written as IPv6 (the IPv4 one mapped).
pub(super) fn header(version: u8, client: SocketAddr, local: SocketAddr) -> Vec<u8> {
    let (src, dst) = match (client.ip().to_canonical(), local.ip().to_canonical()) {
        (IpAddr::V4(s), IpAddr::V4(d)) => (IpAddr::V4(s), IpAddr::V4(d)),
        (s, d) => (IpAddr::V6(v6(s)), IpAddr::V6(v6(d))),
    };
    if version == 1 {
        let family = if src.is_ipv4() { "TCP4" } else { "TCP6" };
        return format!(
            "PROXY {family} {src} {dst} {} {}\r\n",
            client.port(),
            local.port()
        )
        .into_bytes();
    }
    let mut out = Vec::with_capacity(16 + 36);
    out.extend_from_slice(&V2_SIGNATURE);
    // Version 2, command PROXY.
    out.push(0x21);
    let mut addresses = Vec::with_capacity(36);
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            // TCP over IPv4.
            out.push(0x11);
            addresses.extend_from_slice(&s.octets());
            addresses.extend_from_slice(&d.octets());
        }
        (s, d) => {
            // TCP over IPv6.
            out.push(0x21);
            addresses.extend_from_slice(&v6(s).octets());
            addresses.extend_from_slice(&v6(d).octets());
        }
    }
    addresses.extend_from_slice(&client.port().to_be_bytes());
    addresses.extend_from_slice(&local.port().to_be_bytes());
    // At most 36 bytes: the length always fits.
    out.extend_from_slice(&u16::try_from(addresses.len()).unwrap_or(0).to_be_bytes());
    out.extend_from_slice(&addresses);
    out
}

/// What the start of a connection says about a PROXY protocol header.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Parsed {
    /// No header: the connection starts with something else.
    Absent,
    /// More bytes are needed to tell.
    Incomplete,
    /// A header of `len` bytes naming the client (`None`: a LOCAL or
    /// UNKNOWN header, sent by a health check, that names no client).
    Header {
        /// Its length in bytes, to be read off the stream.
        len: usize,
        /// The client it names.
        client: Option<SocketAddr>,
    },
    /// A header that does not parse.
    Invalid,
}

/// The longest version 1 header, line end included (the specification's).
const V1_MAX: usize = 107;

/// Reads a PROXY protocol header (v1 or v2) at the start of `bytes`.
pub(super) fn parse(bytes: &[u8]) -> Parsed {
    const V1: &[u8] = b"PROXY ";
    let prefix = |sig: &[u8]| bytes.len() < sig.len() && sig.starts_with(bytes);
    if prefix(V1) || prefix(&V2_SIGNATURE) {
        return Parsed::Incomplete;
    }
    if bytes.starts_with(V1) {
        let Some(end) = bytes.windows(2).take(V1_MAX - 1).position(|w| w == b"\r\n") else {
            return if bytes.len() < V1_MAX {
                Parsed::Incomplete
            } else {
                Parsed::Invalid
            };
        };
        return match v1(&bytes[..end]) {
            Some(client) => Parsed::Header {
                len: end + 2,
                client,
            },
            None => Parsed::Invalid,
        };
    }
    if bytes.starts_with(&V2_SIGNATURE) {
        let Some(head) = bytes.get(12..16) else {
            return Parsed::Incomplete;
        };
        let len = 16 + usize::from(u16::from_be_bytes([head[2], head[3]]));
        let Some(body) = bytes.get(16..len) else {
            return Parsed::Incomplete;
        };
        if head[0] >> 4 != 2 {
            return Parsed::Invalid;
        }
        let client = match (head[0] & 0x0f, head[1]) {
            // LOCAL: the proxy speaking for itself.
            (0, _) => None,
            // PROXY over TCP/IPv4 or UDP/IPv4.
            (1, 0x11 | 0x12) if body.len() >= 12 => {
                let ip = std::net::Ipv4Addr::new(body[0], body[1], body[2], body[3]);
                Some(SocketAddr::new(
                    ip.into(),
                    u16::from_be_bytes([body[8], body[9]]),
                ))
            }
            // PROXY over TCP/IPv6 or UDP/IPv6.
            (1, 0x21 | 0x22) if body.len() >= 36 => {
                let mut octets = [0u8; 16];
                octets.copy_from_slice(&body[..16]);
                let ip = std::net::Ipv6Addr::from(octets);
                Some(SocketAddr::new(
                    ip.into(),
                    u16::from_be_bytes([body[32], body[33]]),
                ))
            }
            // Another family (UNIX sockets, unspecified): no client address.
            (1, _) => None,
            _ => return Parsed::Invalid,
        };
        return Parsed::Header { len, client };
    }
    Parsed::Absent
}

/// A version 1 line without its `\r\n`: `PROXY TCP4 src dst sport dport`,
/// or `PROXY UNKNOWN …`.
fn v1(line: &[u8]) -> Option<Option<SocketAddr>> {
    let line = std::str::from_utf8(line).ok()?;
    let mut parts = line.split(' ');
    parts.next().filter(|p| *p == "PROXY")?;
    match parts.next()? {
        "UNKNOWN" => Some(None),
        family @ ("TCP4" | "TCP6") => {
            let src: IpAddr = parts.next()?.parse().ok()?;
            let _dst: IpAddr = parts.next()?.parse().ok()?;
            let sport: u16 = parts.next()?.parse().ok()?;
            let _dport: u16 = parts.next()?.parse().ok()?;
            if parts.next().is_some() || (family == "TCP4") != src.is_ipv4() {
                return None;
            }
            Some(Some(SocketAddr::new(src, sport)))
        }
        _ => None,
    }
}

fn v6(ip: IpAddr) -> std::net::Ipv6Addr {
    match ip {
        IpAddr::V4(v4) => v4.to_ipv6_mapped(),
        IpAddr::V6(v6) => v6,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn version_1_is_one_line_of_text() {
        let h = header(1, addr("192.0.2.7:51000"), addr("127.0.0.1:5432"));
        assert_eq!(h, b"PROXY TCP4 192.0.2.7 127.0.0.1 51000 5432\r\n");
        let h = header(1, addr("[2001:db8::1]:40000"), addr("[::1]:443"));
        assert_eq!(h, b"PROXY TCP6 2001:db8::1 ::1 40000 443\r\n");
        // A v4 client on a v6 socket is v4 again.
        let h = header(1, addr("[::ffff:10.0.0.1]:1"), addr("127.0.0.1:2"));
        assert_eq!(h, b"PROXY TCP4 10.0.0.1 127.0.0.1 1 2\r\n");
    }

    #[test]
    fn headers_written_are_read_back_and_the_rest_is_told_apart() {
        let client = addr("192.0.2.7:51000");
        let local = addr("127.0.0.1:443");
        for version in [1, 2] {
            let mut bytes = header(version, client, local);
            let len = bytes.len();
            bytes.extend_from_slice(b"GET / HTTP/1.1\r\n");
            assert_eq!(
                parse(&bytes),
                Parsed::Header {
                    len,
                    client: Some(client)
                }
            );
            // Cut anywhere inside, it asks for more.
            for cut in 1..len {
                assert_eq!(
                    parse(&bytes[..cut]),
                    Parsed::Incomplete,
                    "v{version} at {cut}"
                );
            }
        }
        let v6 = header(2, addr("[2001:db8::1]:1"), addr("[::1]:2"));
        assert_eq!(
            parse(&v6),
            Parsed::Header {
                len: v6.len(),
                client: Some(addr("[2001:db8::1]:1"))
            }
        );
        assert_eq!(parse(b"GET / HTTP/1.1\r\n"), Parsed::Absent);
        assert_eq!(parse(&[0x16, 3, 1]), Parsed::Absent);
        assert_eq!(
            parse(b"PROXY UNKNOWN\r\nGET"),
            Parsed::Header {
                len: 15,
                client: None
            }
        );
        for bad in [
            &b"PROXY TCP4 1.2.3.4 5.6.7.8 99999 1\r\n"[..],
            b"PROXY TCP4 ::1 ::1 1 2\r\n",
            b"PROXY TCP5 1.2.3.4 5.6.7.8 1 2\r\n",
            b"PROXY TCP4 1.2.3.4 5.6.7.8 1 2 3\r\n",
        ] {
            assert_eq!(
                parse(bad),
                Parsed::Invalid,
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        assert_eq!(parse(&[b'P'; 1][..]), Parsed::Incomplete);
        let long = [b"PROXY ".as_slice(), &[b'x'; 200]].concat();
        assert_eq!(parse(&long), Parsed::Invalid);
    }

    #[test]
    fn version_2_is_the_binary_form() {
        let h = header(2, addr("192.0.2.7:51000"), addr("127.0.0.1:5432"));
        let mut want = V2_SIGNATURE.to_vec();
        want.extend_from_slice(&[0x21, 0x11, 0, 12]);
        want.extend_from_slice(&[192, 0, 2, 7, 127, 0, 0, 1]);
        want.extend_from_slice(&51000u16.to_be_bytes());
        want.extend_from_slice(&5432u16.to_be_bytes());
        assert_eq!(h, want);
        let h = header(2, addr("[2001:db8::1]:1"), addr("127.0.0.1:2"));
        assert_eq!(&h[12..16], &[0x21, 0x21, 0, 36]);
        assert_eq!(h.len(), 16 + 36);
        assert_eq!(
            &h[32..48],
            &"::ffff:127.0.0.1"
                .parse::<std::net::Ipv6Addr>()
                .unwrap()
                .octets()
        );
    }
}
