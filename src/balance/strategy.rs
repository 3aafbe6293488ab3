//! The ways a load balancer picks a server besides its weighted rotation:
//! power of two choices on requests in flight (`p2c`), lowest time to first
//! byte (`leasttime`) and highest random weight on the client's IP (`hrw`,
//! also the `highestRandomWeight` service over services). Pure functions
//! over the members' figures, so they are tested without sockets.

use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};

/// How a load balancer picks a server (`loadBalancer.strategy`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Strategy {
    /// Smooth weighted round robin (`wrr`, the default).
    #[default]
    Wrr,
    /// Two members at random, the one with fewer requests in flight (`p2c`).
    P2c,
    /// The member that scores highest for the client's IP (`hrw`).
    Hrw,
    /// The lowest time to first byte times requests in flight, over the
    /// weight; ties go to the rotation (`leasttime`).
    LeastTime,
}

impl Strategy {
    /// Whether it weighs each server's requests in flight and time to
    /// first byte, which are then counted for every request.
    pub const fn weighs_load(self) -> bool {
        matches!(self, Strategy::P2c | Strategy::LeastTime)
    }
}

/// A `strategy` value gangway does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown load-balancing strategy `{value}` (known: wrr, p2c, hrw, leasttime)")]
pub struct StrategyError {
    /// The value as configured.
    pub value: String,
}

impl Strategy {
    /// Parses a `strategy` value; empty is the default. Case does not
    /// matter, as for Traefik's labels.
    pub fn parse(value: &str) -> Result<Self, StrategyError> {
        match value.to_ascii_lowercase().as_str() {
            "" | "wrr" => Ok(Strategy::Wrr),
            "p2c" => Ok(Strategy::P2c),
            "hrw" => Ok(Strategy::Hrw),
            "leasttime" => Ok(Strategy::LeastTime),
            _ => Err(StrategyError {
                value: value.to_owned(),
            }),
        }
    }
}

/// The next pseudo-random number of a process-wide sequence (splitmix64 over
/// an atomic counter): enough to spread `p2c`'s choices, and lock-free.
pub fn random() -> u64 {
    static STATE: AtomicU64 = AtomicU64::new(0x2545_f491_4f6c_dd1d);
    mix(STATE.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed))
}

/// splitmix64's finaliser: spreads every input bit over the output.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A stable 64-bit hash of a member's identity (its URL or service name),
/// computed once at compile time.
pub fn member_hash(id: &str) -> u64 {
    // FNV-1a, then mixed: the same value in every process and release.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    mix(h)
}

fn client_hash(ip: IpAddr) -> u64 {
    let bits: u128 = match ip {
        IpAddr::V4(v4) => u128::from(u32::from(v4)),
        IpAddr::V6(v6) => u128::from(v6),
    };
    mix(mix(bits as u64) ^ (bits >> 64) as u64)
}

/// `p2c`: among the `candidates` (members up, weight above zero), two at
/// random, and of those the one with fewer requests in flight.
pub fn power_of_two(candidates: &[usize], in_flight: impl Fn(usize) -> u32) -> Option<usize> {
    match candidates {
        [] => None,
        [only] => Some(*only),
        _ => {
            let n = candidates.len() as u64;
            let r = random();
            let a = (r % n) as usize;
            // A second, different member: an offset in 1..n from the first.
            let b = (a + 1 + ((r >> 32) % (n - 1)) as usize) % candidates.len();
            let (a, b) = (candidates[a], candidates[b]);
            Some(if in_flight(b) < in_flight(a) { b } else { a })
        }
    }
}

/// `leasttime`: the candidates with the lowest `ttfb × (1 + in flight) /
/// weight`; several when they tie (the caller breaks ties with its
/// rotation). A member not measured yet scores zero, so each is tried.
pub fn least_time(candidates: &[usize], figures: impl Fn(usize) -> (u64, u32, u32)) -> Vec<usize> {
    let mut best: Vec<usize> = Vec::new();
    let mut best_score = f64::INFINITY;
    for &i in candidates {
        let (ttfb, in_flight, weight) = figures(i);
        let score = ttfb as f64 * (1.0 + f64::from(in_flight)) / f64::from(weight.max(1));
        if score < best_score {
            best_score = score;
            best.clear();
            best.push(i);
        } else if score == best_score {
            best.push(i);
        }
    }
    best
}

/// Highest random weight: the candidate that scores highest for `client`.
/// Each member's score is `-weight / ln(u)` with `u` in (0, 1) drawn from
/// the client's and the member's hashes, so a member's share follows its
/// weight and adding or removing a member moves only the clients that
/// member wins or held.
pub fn highest_random_weight(
    client: IpAddr,
    candidates: &[usize],
    member: impl Fn(usize) -> (u64, u32),
) -> Option<usize> {
    let c = client_hash(client);
    let mut best = None;
    let mut best_score = f64::NEG_INFINITY;
    for &i in candidates {
        let (hash, weight) = member(i);
        let h = mix(c ^ hash);
        // 53 bits into (0, 1): never 0 or 1, so the logarithm is negative.
        let u = ((h >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        let score = -f64::from(weight) / u.ln();
        if score > best_score {
            best_score = score;
            best = Some(i);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::net::Ipv4Addr;

    #[test]
    fn strategies_parse_as_traefik_names_them() {
        assert_eq!(Strategy::parse(""), Ok(Strategy::Wrr));
        assert_eq!(Strategy::parse("WRR"), Ok(Strategy::Wrr));
        assert_eq!(Strategy::parse("p2c"), Ok(Strategy::P2c));
        assert_eq!(Strategy::parse("hrw"), Ok(Strategy::Hrw));
        assert_eq!(Strategy::parse("LeastTime"), Ok(Strategy::LeastTime));
        let e = Strategy::parse("random").unwrap_err();
        assert!(e.to_string().contains("`random`"), "{e}");
    }

    #[test]
    fn p2c_prefers_the_member_with_fewer_in_flight() {
        let busy = |i: usize| if i == 0 { 10 } else { 0 };
        let mut counts = [0; 2];
        for _ in 0..100 {
            counts[power_of_two(&[0, 1], busy).unwrap()] += 1;
        }
        // With two members both are always drawn: the idle one wins.
        assert_eq!(counts, [0, 100]);
        assert_eq!(power_of_two(&[], busy), None);
        assert_eq!(power_of_two(&[0], busy), Some(0));
        // Three idle members: each is picked.
        let mut seen = [false; 3];
        for _ in 0..200 {
            seen[power_of_two(&[0, 1, 2], |_| 0).unwrap()] = true;
        }
        assert_eq!(seen, [true; 3]);
    }

    #[test]
    fn least_time_weighs_time_by_load_and_weight() {
        // (ttfb, in flight, weight)
        let f = |i: usize| [(1000, 0, 1), (100, 0, 1), (100, 3, 1), (300, 0, 4)][i];
        assert_eq!(least_time(&[0, 1, 2, 3], f), vec![3]);
        assert_eq!(least_time(&[0, 1, 2], f), vec![1]);
        // Not measured: zero, all tie.
        assert_eq!(least_time(&[0, 1], |_| (0, 0, 1)), vec![0, 1]);
        assert!(least_time(&[], f).is_empty());
    }

    #[test]
    fn hrw_is_stable_weighted_and_moves_few_clients_when_a_member_joins() {
        let ids: Vec<u64> = ["http://a", "http://b", "http://c", "http://d"]
            .iter()
            .map(|s| member_hash(s))
            .collect();
        let pick = |ip: IpAddr, members: &[usize], weights: &[u32]| {
            highest_random_weight(ip, members, |i| (ids[i], weights[i])).unwrap()
        };
        let clients: Vec<IpAddr> = (0..4000u32)
            .map(|n| IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + n)))
            .collect();
        let before: Vec<usize> = clients
            .iter()
            .map(|&c| pick(c, &[0, 1, 2], &[1, 1, 1, 1]))
            .collect();
        let again: Vec<usize> = clients
            .iter()
            .map(|&c| pick(c, &[0, 1, 2], &[1, 1, 1, 1]))
            .collect();
        assert_eq!(before, again);
        let after: Vec<usize> = clients
            .iter()
            .map(|&c| pick(c, &[0, 1, 2, 3], &[1, 1, 1, 1]))
            .collect();
        let moved: Vec<usize> = before
            .iter()
            .zip(&after)
            .filter(|(b, a)| b != a)
            .map(|(_, &a)| a)
            .collect();
        // Only to the new member, and about a quarter of the clients.
        assert!(moved.iter().all(|&m| m == 3));
        assert!((800..1200).contains(&moved.len()), "{}", moved.len());
        // Weights 3:1 give about three quarters to the first.
        let mut counts: BTreeMap<usize, usize> = BTreeMap::new();
        for &c in &clients {
            *counts.entry(pick(c, &[0, 1], &[3, 1, 1, 1])).or_default() += 1;
        }
        let share = counts[&0] as f64 / clients.len() as f64;
        assert!((share - 0.75).abs() < 0.04, "{counts:?}");
    }
}
