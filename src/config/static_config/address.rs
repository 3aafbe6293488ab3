//! The `address` of an entry point: `[host]:port`, optionally `/tcp` or
//! `/udp`.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Where an entry point listens: an optional IP address and a port.
///
/// Written as in Traefik: `:80` (every interface), `0.0.0.0:80`,
/// `127.0.0.1:8000`, `[::1]:8443`, optionally followed by `/tcp`, or by
/// `/udp` for a UDP entry point. Port 0 asks the system for any free port.
/// Serialized as the same text, without the `/tcp` suffix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ListenAddress {
    /// The IP address to bind; `None` for every interface (`:80`).
    pub host: Option<IpAddr>,
    /// The port.
    pub port: u16,
    /// A UDP entry point (`/udp`) rather than a TCP one.
    pub udp: bool,
}

/// Why a piece of text is not a [`ListenAddress`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddressError {
    /// The text is not `[host]:port`.
    #[error("`{input}` is not a listen address (try `:80` or `127.0.0.1:8080`)")]
    Invalid {
        /// The text as given.
        input: String,
    },
    /// The part before the port is not an IP address.
    #[error(
        "`{input}` is not a listen address: `{host}` is not an IP address (write `:PORT` for every interface, `127.0.0.1:PORT` or `[::1]:PORT`)"
    )]
    BadHost {
        /// The text as given.
        input: String,
        /// The host part that was not understood.
        host: String,
    },
    /// The port is missing, not a number, or above 65535.
    #[error("`{input}` is not a listen address: `{port}` is not a port number (0 to 65535)")]
    BadPort {
        /// The text as given.
        input: String,
        /// The port part that was not understood.
        port: String,
    },
    /// The address asks for a transport other than TCP and UDP.
    #[error(
        "`{input}`: an entry point is TCP (no suffix, or `/tcp`) or UDP (`/udp`), not `/{protocol}`"
    )]
    UnsupportedProtocol {
        /// The text as given.
        input: String,
        /// The protocol after the `/`.
        protocol: String,
    },
}

impl Default for ListenAddress {
    /// `:80`, every interface.
    fn default() -> Self {
        ListenAddress {
            host: None,
            port: 80,
            udp: false,
        }
    }
}

impl ListenAddress {
    /// The socket address to bind; with no host, the IPv4 wildcard
    /// `0.0.0.0`.
    pub fn socket_addr(&self) -> SocketAddr {
        SocketAddr::new(
            self.host.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
            self.port,
        )
    }
}

impl From<SocketAddr> for ListenAddress {
    fn from(addr: SocketAddr) -> Self {
        ListenAddress {
            host: Some(addr.ip()),
            port: addr.port(),
            udp: false,
        }
    }
}

impl FromStr for ListenAddress {
    type Err = AddressError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let mut text = input;
        let mut udp = false;
        if let Some((before, protocol)) = input.rsplit_once('/') {
            udp = protocol.eq_ignore_ascii_case("udp");
            if !udp && !protocol.eq_ignore_ascii_case("tcp") {
                return Err(AddressError::UnsupportedProtocol {
                    input: input.to_owned(),
                    protocol: protocol.to_owned(),
                });
            }
            text = before;
        }
        let Some((host, port)) = text.rsplit_once(':') else {
            return Err(AddressError::Invalid {
                input: input.to_owned(),
            });
        };
        let host = if host.is_empty() {
            None
        } else if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            let ip = inner
                .parse::<std::net::Ipv6Addr>()
                .map_err(|_| AddressError::BadHost {
                    input: input.to_owned(),
                    host: host.to_owned(),
                })?;
            Some(IpAddr::V6(ip))
        } else {
            // A bare IPv6 address would have been split at its last colon;
            // it needs brackets, like in a URL.
            let ip = host
                .parse::<Ipv4Addr>()
                .map_err(|_| AddressError::BadHost {
                    input: input.to_owned(),
                    host: host.to_owned(),
                })?;
            Some(IpAddr::V4(ip))
        };
        // u16's parser accepts a leading `+`; a port is digits only.
        let port = Some(port)
            .filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|p| p.parse::<u16>().ok())
            .ok_or_else(|| AddressError::BadPort {
                input: input.to_owned(),
                port: port.to_owned(),
            })?;
        Ok(ListenAddress { host, port, udp })
    }
}

impl fmt::Display for ListenAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.host {
            None => write!(f, ":{}", self.port)?,
            Some(IpAddr::V4(ip)) => write!(f, "{ip}:{}", self.port)?,
            Some(IpAddr::V6(ip)) => write!(f, "[{ip}]:{}", self.port)?,
        }
        if self.udp {
            f.write_str("/udp")?;
        }
        Ok(())
    }
}

impl Serialize for ListenAddress {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ListenAddress {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}
