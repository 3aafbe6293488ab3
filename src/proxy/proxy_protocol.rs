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
