//! Which address is the client's (`ipStrategy`: the TCP peer, a position in
//! `X-Forwarded-For`, or the first address not in `excludedIPs`), and lists
//! of addresses and CIDR ranges.

use super::MiddlewareError;
use crate::config::dynamic::middleware as model;
use http::HeaderMap;
use ipnet::IpNet;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};

const X_FORWARDED_FOR: &str = "x-forwarded-for";

/// A compiled `ipStrategy`.
#[derive(Clone, Debug, Default)]
pub struct IpStrategy {
    pick: Pick,
    ipv6_subnet: Option<u8>,
}

#[derive(Clone, Debug, Default)]
enum Pick {
    /// The TCP peer.
    #[default]
    Peer,
    /// The address `n` entries from the right of `X-Forwarded-For`.
    Depth(usize),
    /// The rightmost address of `X-Forwarded-For` not in these ranges.
    Excluded(AddressList),
}

impl IpStrategy {
    /// Compiles an `ipStrategy` (None: the TCP peer). `option` prefixes the
    /// option names in errors (`ipStrategy`, `sourceCriterion.ipStrategy`).
    pub fn compile(
        cfg: Option<&model::IpStrategy>,
        option: &'static str,
    ) -> Result<Self, MiddlewareError> {
        let Some(cfg) = cfg else {
            return Ok(Self::default());
        };
        let ipv6_subnet = match cfg.ipv6_subnet {
            None => None,
            Some(n @ 1..=128) => Some(n as u8),
            Some(n) => {
                return Err(MiddlewareError::invalid(
                    option,
                    format!("ipv6Subnet must be between 1 and 128, not {n}"),
                ));
            }
        };
        // As Traefik: a positive depth wins and excludedIPs is then ignored.
        let pick = match cfg.depth {
            Some(d) if d > 0 => Pick::Depth(usize::try_from(d).unwrap_or(usize::MAX)),
            _ if !cfg.excluded_ips.is_empty() => {
                Pick::Excluded(AddressList::parse(&cfg.excluded_ips, option)?)
            }
            _ => Pick::Peer,
        };
        Ok(Self { pick, ipv6_subnet })
    }

    /// The client's address for this request; None when the strategy finds
    /// none (too few `X-Forwarded-For` entries, or not an address).
    pub fn client_ip(&self, headers: &HeaderMap, peer: IpAddr) -> Option<IpAddr> {
        let ip = match &self.pick {
            Pick::Peer => Some(peer),
            Pick::Depth(depth) => {
                let n = forwarded_entries(headers).count();
                if *depth > n {
                    None
                } else {
                    forwarded_entries(headers).nth(n - depth).and_then(parse_ip)
                }
            }
            // Traefik returns the first address not excluded without
            // subnet grouping; so does this.
            Pick::Excluded(list) => {
                let entries: Vec<&str> = forwarded_entries(headers).collect();
                return entries
                    .iter()
                    .rev()
                    .map(|e| parse_ip(e))
                    .find(|ip| !ip.is_some_and(|ip| list.contains(ip)))
                    .flatten();
            }
        }?;
        Some(match (self.ipv6_subnet, ip) {
            (Some(bits), IpAddr::V6(v6)) => IpAddr::V6(mask_v6(v6, bits)),
            _ => ip,
        })
    }
}

/// The entries of every `X-Forwarded-For` header, in order, trimmed.
fn forwarded_entries(headers: &HeaderMap) -> impl Iterator<Item = &str> {
    headers
        .get_all(X_FORWARDED_FOR)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
}

fn parse_ip(s: &str) -> Option<IpAddr> {
    s.parse::<IpAddr>()
        .ok()
        .or_else(|| s.parse::<SocketAddr>().ok().map(|a| a.ip()))
        .map(|ip| ip.to_canonical())
}

fn mask_v6(ip: Ipv6Addr, bits: u8) -> Ipv6Addr {
    let mask = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
    Ipv6Addr::from(u128::from(ip) & mask)
}

/// Addresses and CIDR ranges (`10.0.0.0/8`, `192.168.1.7`, `::1`).
#[derive(Clone, Debug, Default)]
pub struct AddressList {
    nets: Vec<IpNet>,
}

impl AddressList {
    /// Parses each entry; an entry that is neither an address nor a range is
    /// an error naming `option`.
    pub fn parse(entries: &[String], option: &'static str) -> Result<Self, MiddlewareError> {
        let mut nets = Vec::with_capacity(entries.len());
        for e in entries {
            let e = e.trim();
            let net = e
                .parse::<IpNet>()
                .ok()
                .or_else(|| e.parse::<IpAddr>().ok().map(IpNet::from))
                .ok_or_else(|| {
                    MiddlewareError::invalid(
                        option,
                        format!("`{e}` is not an IP address or CIDR range"),
                    )
                })?;
            nets.push(unmap(net));
        }
        Ok(Self { nets })
    }

    /// Whether `ip` is in one of the ranges.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.nets.iter().any(|n| n.contains(&ip))
    }

    /// No entries at all.
    pub fn is_empty(&self) -> bool {
        self.nets.is_empty()
    }
}

/// `::ffff:10.0.0.0/104` matches like `10.0.0.0/8`, since addresses are
/// compared in their IPv4 form.
fn unmap(net: IpNet) -> IpNet {
    if let IpNet::V6(v6) = net
        && let Some(v4) = v6.addr().to_ipv4_mapped()
        && v6.prefix_len() >= 96
        && let Ok(n) = ipnet::Ipv4Net::new(v4, v6.prefix_len() - 96)
    {
        return IpNet::V4(n);
    }
    net
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn xff(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(X_FORWARDED_FOR, HeaderValue::from_str(v).expect("value"));
        h
    }

    fn strategy(depth: Option<i64>, excluded: &[&str], subnet: Option<i64>) -> IpStrategy {
        let cfg = model::IpStrategy {
            depth,
            excluded_ips: excluded.iter().map(|s| (*s).to_owned()).collect(),
            ipv6_subnet: subnet,
        };
        IpStrategy::compile(Some(&cfg), "ipStrategy").expect("compiles")
    }

    const PEER: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 9));

    #[test]
    fn depth_counts_from_the_right() {
        // The examples of Traefik's documentation.
        let h = xff("10.0.0.1,11.0.0.1,12.0.0.1,13.0.0.1");
        let pick = |d| strategy(Some(d), &[], None).client_ip(&h, PEER);
        assert_eq!(pick(1), Some("13.0.0.1".parse().expect("ip")));
        assert_eq!(pick(3), Some("11.0.0.1".parse().expect("ip")));
        assert_eq!(pick(5), None);
        // Depth 0 means the peer; a positive depth ignores excludedIPs.
        assert_eq!(strategy(Some(0), &[], None).client_ip(&h, PEER), Some(PEER));
        assert_eq!(
            strategy(Some(2), &["12.0.0.1"], None).client_ip(&h, PEER),
            Some("12.0.0.1".parse().expect("ip"))
        );
        assert_eq!(
            strategy(Some(1), &[], None).client_ip(&HeaderMap::new(), PEER),
            None
        );
    }

    #[test]
    fn excluded_addresses_are_skipped_from_the_right() {
        let h = xff("10.0.0.1, 11.0.0.1, 12.0.0.1, 13.0.0.1");
        let pick = |ex: &[&str]| strategy(None, ex, None).client_ip(&h, PEER);
        assert_eq!(
            pick(&["12.0.0.1", "13.0.0.1"]),
            Some("11.0.0.1".parse().expect("ip"))
        );
        assert_eq!(
            pick(&["15.0.0.1", "13.0.0.1"]),
            Some("12.0.0.1".parse().expect("ip"))
        );
        assert_eq!(
            pick(&["10.0.0.1", "13.0.0.1"]),
            Some("12.0.0.1".parse().expect("ip"))
        );
        assert_eq!(
            pick(&["15.0.0.1", "16.0.0.1"]),
            Some("13.0.0.1".parse().expect("ip"))
        );
        assert_eq!(pick(&["12.0.0.0/7"]), Some("11.0.0.1".parse().expect("ip")));
        let two = xff("10.0.0.1,11.0.0.1");
        assert_eq!(
            strategy(None, &["10.0.0.1", "11.0.0.1"], None).client_ip(&two, PEER),
            None
        );
    }

    #[test]
    fn ipv6_subnets_group_clients() {
        let ip: IpAddr = "::abcd:1111:2222:3333".parse().expect("ip");
        let group = |bits| strategy(None, &[], Some(bits)).client_ip(&HeaderMap::new(), ip);
        assert_eq!(group(64), Some("::".parse().expect("ip")));
        assert_eq!(group(80), Some("::abcd:0:0:0".parse().expect("ip")));
        assert_eq!(group(96), Some("::abcd:1111:0:0".parse().expect("ip")));
        assert_eq!(group(128), Some(ip));
        let cfg = model::IpStrategy {
            ipv6_subnet: Some(0),
            ..Default::default()
        };
        assert!(IpStrategy::compile(Some(&cfg), "ipStrategy").is_err());
    }

    #[test]
    fn address_lists_hold_addresses_and_ranges() {
        let list = AddressList::parse(
            &[
                "127.0.0.1/32".into(),
                "192.168.1.7".into(),
                "::ffff:10.0.0.0/104".into(),
                "fd00::/8".into(),
            ],
            "sourceRange",
        )
        .expect("parses");
        for ip in [
            "127.0.0.1",
            "192.168.1.7",
            "10.2.3.4",
            "::ffff:10.9.9.9",
            "fd12::1",
        ] {
            assert!(list.contains(ip.parse().expect("ip")), "{ip}");
        }
        for ip in ["127.0.0.2", "192.168.1.8", "11.0.0.1", "fe80::1"] {
            assert!(!list.contains(ip.parse().expect("ip")), "{ip}");
        }
        let err = AddressList::parse(&["10.0.0.300".into()], "sourceRange").expect_err("bad");
        assert!(err.to_string().contains("sourceRange") && err.to_string().contains("10.0.0.300"));
    }
}
