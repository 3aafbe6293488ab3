//! The decisions a bouncer knows, and the state shared by every router
//! whose bouncer has the same LAPI settings: the cache, and in stream mode
//! the task that pulls `/v1/decisions/stream` and whether its pulls work.
//! It lives in the registries, so a configuration swap keeps it, and it is
//! dropped (stopping the task) when no router uses it any more.

use super::lapi::{Decision, Lapi, Stream, parse_go_duration};
use ipnet::IpNet;
use std::collections::HashSet;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// What is known about an address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Remedy {
    /// Answer with the ban.
    Ban,
    /// A captcha was decided; answered as a ban (captcha is not built in).
    Captcha,
    /// Asked and found clean (live mode's cache).
    Pass,
}

impl Remedy {
    pub(super) fn of(kind: &str) -> Remedy {
        match kind {
            "captcha" => Remedy::Captcha,
            // The plugin blocks remediations it does not know as bans.
            _ => Remedy::Ban,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    remedy: Remedy,
    until: Instant,
}

/// How often (in inserts) expired entries are dropped, so a cache filled by
/// many passing addresses stays bounded by their lifetime.
const PRUNE_EVERY: usize = 1024;

/// Decisions by address and by range, each with its end.
#[derive(Default)]
pub struct Decisions {
    ips: papaya::HashMap<IpAddr, Entry>,
    ranges: papaya::HashMap<IpNet, Entry>,
    inserts: AtomicUsize,
}

impl Decisions {
    /// What is known about `ip` now; None when nothing (or it expired).
    pub fn lookup(&self, ip: IpAddr, now: Instant) -> Option<Remedy> {
        let ip = ip.to_canonical();
        if let Some(e) = self.ips.pin().get(&ip)
            && e.until > now
        {
            return Some(e.remedy);
        }
        let ranges = self.ranges.pin();
        if ranges.is_empty() {
            return None;
        }
        ranges
            .iter()
            .filter(|(net, e)| e.until > now && net.contains(&ip))
            .map(|(_, e)| e.remedy)
            .find(|r| *r != Remedy::Pass)
    }

    /// Remembers `remedy` for `ip` during `ttl`.
    pub fn insert(&self, ip: IpAddr, remedy: Remedy, ttl: Duration, now: Instant) {
        let until = now + ttl;
        self.ips
            .pin()
            .insert(ip.to_canonical(), Entry { remedy, until });
        if self.inserts.fetch_add(1, Ordering::Relaxed) % PRUNE_EVERY == PRUNE_EVERY - 1 {
            self.ips.pin().retain(|_, e| e.until > now);
            self.ranges.pin().retain(|_, e| e.until > now);
        }
    }

    /// Applies one pull of the stream. A `startup` pull holds every active
    /// decision, so it replaces what was known.
    pub fn apply(&self, stream: &Stream, startup: bool, now: Instant) {
        if startup {
            // Added first and pruned after, so that an address banned
            // before and after is never seen unbanned in between.
            self.add(&stream.added, now);
            let (mut ips, mut ranges) = (HashSet::new(), HashSet::new());
            for d in &stream.added {
                match target(d) {
                    Some(Target::Ip(ip)) => ips.insert(ip),
                    Some(Target::Range(net)) => ranges.insert(net),
                    None => false,
                };
            }
            self.ips.pin().retain(|ip, _| ips.contains(ip));
            self.ranges.pin().retain(|net, _| ranges.contains(net));
            return;
        }
        for d in &stream.deleted {
            match target(d) {
                Some(Target::Ip(ip)) => {
                    self.ips.pin().remove(&ip);
                }
                Some(Target::Range(net)) => {
                    self.ranges.pin().remove(&net);
                }
                None => {}
            }
        }
        self.add(&stream.added, now);
    }

    fn add(&self, added: &[Decision], now: Instant) {
        for d in added {
            let Some(ttl) = parse_go_duration(&d.duration) else {
                continue;
            };
            let entry = Entry {
                remedy: Remedy::of(&d.kind),
                until: now + ttl,
            };
            match target(d) {
                Some(Target::Ip(ip)) => {
                    self.ips.pin().insert(ip, entry);
                }
                Some(Target::Range(net)) => {
                    self.ranges.pin().insert(net, entry);
                }
                None => {}
            }
        }
    }
}

enum Target {
    Ip(IpAddr),
    Range(IpNet),
}

/// The address or range a decision is about; None for other scopes
/// (countries, AS numbers), which no address lookup can match.
fn target(d: &Decision) -> Option<Target> {
    let value = d.value.trim();
    if d.scope.eq_ignore_ascii_case("range") {
        let net: IpNet = value.parse().ok()?;
        return Some(match net {
            IpNet::V4(_) => Target::Range(net.trunc()),
            IpNet::V6(v6) => match v6.addr().to_ipv4_mapped() {
                Some(v4) => {
                    Target::Range(IpNet::new(v4.into(), v6.prefix_len().saturating_sub(96)).ok()?)
                }
                None => Target::Range(net.trunc()),
            },
        });
    }
    if d.scope.eq_ignore_ascii_case("ip") {
        return value
            .parse::<IpAddr>()
            .ok()
            .map(|ip| Target::Ip(ip.to_canonical()));
    }
    None
}

/// Where the stream's pulls stand.
#[derive(Default)]
pub struct Health {
    /// The first pull has been tried.
    tried: AtomicBool,
    /// Pulls fail beyond `updateMaxFailure`.
    failing: AtomicBool,
}

impl Health {
    /// Whether an address the pulls know nothing about may pass.
    pub fn passes(&self, startup_block: bool) -> bool {
        if !self.tried.load(Ordering::Acquire) {
            return !startup_block;
        }
        !self.failing.load(Ordering::Acquire)
    }
}

/// The state of one LAPI setting, shared by the routers using it.
pub struct Shared {
    /// What is known.
    pub decisions: Arc<Decisions>,
    /// Stream mode: where the pulls stand.
    pub health: Arc<Health>,
    poller: Option<Poller>,
}

struct Poller {
    lapi: Arc<Lapi>,
    every: Duration,
    max_failure: i64,
    task: OnceLock<tokio::task::AbortHandle>,
}

impl Shared {
    /// State for live and none modes: a cache, no task.
    pub fn live() -> Self {
        Shared {
            decisions: Arc::default(),
            health: Arc::default(),
            poller: None,
        }
    }

    /// State for stream mode, pulling from `lapi` every `every`; its task
    /// starts with [`Shared::start`].
    pub fn stream(lapi: Arc<Lapi>, every: Duration, max_failure: i64) -> Self {
        Shared {
            poller: Some(Poller {
                lapi,
                every,
                max_failure,
                task: OnceLock::new(),
            }),
            decisions: Arc::default(),
            health: Arc::default(),
        }
    }

    /// Starts the stream's task, once, when there is a tokio runtime to run
    /// it (compiling for `check` has none, and contacts no LAPI).
    pub fn start(&self) {
        let Some(poller) = &self.poller else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        poller.task.get_or_init(|| {
            let pull = Pull {
                lapi: poller.lapi.clone(),
                decisions: self.decisions.clone(),
                health: self.health.clone(),
                every: poller.every,
                max_failure: poller.max_failure,
            };
            runtime.spawn(pull.run()).abort_handle()
        });
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        if let Some(task) = self.poller.as_ref().and_then(|p| p.task.get()) {
            task.abort();
        }
    }
}

/// The stream task's own state.
struct Pull {
    lapi: Arc<Lapi>,
    decisions: Arc<Decisions>,
    health: Arc<Health>,
    every: Duration,
    max_failure: i64,
}

impl Pull {
    async fn run(self) {
        let mut ticks = tokio::time::interval(self.every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut failures: i64 = 0;
        let mut startup = true;
        loop {
            ticks.tick().await;
            match self.lapi.stream(startup).await {
                Ok(stream) => {
                    self.decisions.apply(&stream, startup, Instant::now());
                    self.health.failing.store(false, Ordering::Release);
                    failures = 0;
                    startup = false;
                }
                Err(e) => {
                    // As the plugin: after `updateMaxFailure` failed pulls
                    // (-1: never) unknown addresses are refused, and the
                    // next pull asks for everything again.
                    tracing::warn!(error = %e, failures, "crowdsec: pulling decisions failed");
                    if self.max_failure != -1 && failures >= self.max_failure {
                        self.health.failing.store(true, Ordering::Release);
                        startup = true;
                    }
                    failures = failures.saturating_add(1);
                }
            }
            self.health.tried.store(true, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decision(scope: &str, value: &str, duration: &str) -> Decision {
        serde_json::from_value(serde_json::json!({
            "type": "ban", "scope": scope, "value": value, "duration": duration,
        }))
        .unwrap()
    }

    #[test]
    fn stream_pulls_add_and_delete_addresses_and_ranges() {
        let d = Decisions::default();
        let now = Instant::now();
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let first = Stream {
            added: vec![
                decision("Ip", "127.0.0.2", "1h"),
                decision("Range", "10.9.0.0/16", "1h"),
                decision("Country", "FR", "1h"),
                decision("Ip", "127.0.0.9", "1s"),
            ],
            deleted: vec![],
        };
        d.apply(&first, true, now);
        assert_eq!(d.lookup(ip("127.0.0.2"), now), Some(Remedy::Ban));
        assert_eq!(d.lookup(ip("::ffff:127.0.0.2"), now), Some(Remedy::Ban));
        assert_eq!(d.lookup(ip("10.9.3.4"), now), Some(Remedy::Ban));
        assert_eq!(d.lookup(ip("127.0.0.3"), now), None);
        assert_eq!(
            d.lookup(ip("127.0.0.9"), now + Duration::from_secs(2)),
            None
        );
        let delta = Stream {
            added: vec![],
            deleted: vec![
                decision("Ip", "127.0.0.2", "0s"),
                decision("Range", "10.9.0.0/16", "0s"),
            ],
        };
        d.apply(&delta, false, now);
        assert_eq!(d.lookup(ip("127.0.0.2"), now), None);
        assert_eq!(d.lookup(ip("10.9.3.4"), now), None);
    }

    #[test]
    fn health_follows_startup_block_until_the_first_pull() {
        let h = Health::default();
        assert!(!h.passes(true));
        assert!(h.passes(false));
        h.tried.store(true, Ordering::Release);
        assert!(h.passes(true));
        h.failing.store(true, Ordering::Release);
        assert!(!h.passes(false));
    }
}
