//! Load balancing: the weighted rotation shared by server and service
//! balancers, the other strategies (`p2c`, `leasttime`, `hrw`), passive
//! health, sticky cookies and mirroring shares. (The request body that
//! lets a request be copied to mirrors while it streams is
//! [`crate::body::RequestBody::tee`].)
//!
//! Everything here runs on the hot path and takes no lock: the rotation is a
//! precomputed schedule walked with one atomic counter, and a change of
//! health swaps in a recomputed schedule once, not per request.

pub mod passive;
pub mod record;
pub mod sticky;
pub mod strategy;

pub use passive::{PassivePolicy, ServerState};
pub use record::{Outcome, Record, Tally, Verdict};
pub use sticky::{StickyCookie, StickyCookieError};
pub use strategy::{Strategy, StrategyError};

use arc_swap::ArcSwapOption;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Smooth weighted round robin over members (servers or services) whose
/// health may change.
///
/// The schedule for "everyone up" is computed once. When the health epoch
/// moves (some member anywhere changed state), the next pick computes the
/// schedule of the members that are up, caches it with the epoch, and every
/// later pick reuses it until the epoch moves again.
pub struct Rotation {
    weights: Box<[u32]>,
    full: Box<[u32]>,
    position: Arc<AtomicUsize>,
    epoch: Arc<AtomicU64>,
    partial: ArcSwapOption<Partial>,
}

struct Partial {
    epoch: u64,
    schedule: Box<[u32]>,
}

impl Rotation {
    /// A rotation over members with these weights (0 excludes a member from
    /// new traffic). `position` is carried over from the previous runtime by
    /// `Registries`; `epoch` is the process-wide health epoch.
    pub fn new(weights: Vec<u32>, position: Arc<AtomicUsize>, epoch: Arc<AtomicU64>) -> Self {
        let full = smooth_schedule(&weights).into_boxed_slice();
        Self {
            weights: weights.into_boxed_slice(),
            full,
            position,
            epoch,
            partial: ArcSwapOption::empty(),
        }
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.weights.len()
    }

    /// True when no member has a weight above zero.
    pub fn is_empty(&self) -> bool {
        self.full.is_empty()
    }

    /// Slots in one full cycle of the rotation (0 when no member has a
    /// weight).
    pub fn cycle_len(&self) -> usize {
        self.full.len()
    }

    /// The member's configured weight.
    pub fn weight(&self, member: usize) -> u32 {
        self.weights.get(member).copied().unwrap_or(0)
    }

    /// The next member in the rotation among those `up` accepts. `up` must
    /// answer the same for every call within one health epoch.
    pub fn next(&self, up: impl Fn(usize) -> bool) -> Option<usize> {
        let epoch = self.epoch.load(Ordering::Acquire);
        // Epoch 0: no member anywhere has ever been down.
        if epoch == 0 {
            return self.step(&self.full);
        }
        if let Some(p) = self.partial.load().as_ref()
            && p.epoch == epoch
        {
            return self.step(&p.schedule);
        }
        let p = self.refresh(epoch, up);
        self.step(&p.schedule)
    }

    /// Whether any member with a weight above zero is up.
    pub fn any_up(&self, up: impl Fn(usize) -> bool) -> bool {
        let epoch = self.epoch.load(Ordering::Acquire);
        if epoch == 0 {
            return !self.full.is_empty();
        }
        if let Some(p) = self.partial.load().as_ref()
            && p.epoch == epoch
        {
            return !p.schedule.is_empty();
        }
        !self.refresh(epoch, up).schedule.is_empty()
    }

    /// The next member that is up and not in `excluded` (members that
    /// already failed this request). Walks at most one cycle of the
    /// schedule, then falls back to a scan so that concurrent requests
    /// moving the position cannot starve it.
    pub fn next_excluding(&self, up: impl Fn(usize) -> bool, excluded: &[usize]) -> Option<usize> {
        for _ in 0..self.full.len() {
            let i = self.next(&up)?;
            if !excluded.contains(&i) {
                return Some(i);
            }
        }
        (0..self.weights.len()).find(|&i| self.weights[i] > 0 && up(i) && !excluded.contains(&i))
    }

    fn refresh(&self, epoch: u64, up: impl Fn(usize) -> bool) -> Arc<Partial> {
        let weights: Vec<u32> = self
            .weights
            .iter()
            .enumerate()
            .map(|(i, &w)| if up(i) { w } else { 0 })
            .collect();
        let p = Arc::new(Partial {
            epoch,
            schedule: smooth_schedule(&weights).into_boxed_slice(),
        });
        // Two requests may refresh at once; both compute the same schedule.
        self.partial.store(Some(p.clone()));
        p
    }

    fn step(&self, schedule: &[u32]) -> Option<usize> {
        if schedule.is_empty() {
            return None;
        }
        // With one member there is nothing to rotate, and the position is
        // one line every worker would write at every request.
        if self.weights.len() == 1 {
            return schedule.first().map(|&i| i as usize);
        }
        let n = self.position.fetch_add(1, Ordering::Relaxed);
        schedule.get(n % schedule.len()).map(|&i| i as usize)
    }
}

/// The nginx-style smooth weighted order over one full cycle of the weights
/// (scaled down so that a cycle never exceeds a few thousand slots).
pub fn smooth_schedule(weights: &[u32]) -> Vec<u32> {
    const MAX_CYCLE: u64 = 4096;
    let total: u64 = weights.iter().map(|&w| u64::from(w)).sum();
    if total == 0 {
        return Vec::new();
    }
    let scale = total.div_ceil(MAX_CYCLE).max(1);
    let weights: Vec<i64> = weights
        .iter()
        .map(|&w| {
            if w == 0 {
                0
            } else {
                (u64::from(w) / scale).max(1) as i64
            }
        })
        .collect();
    let total: i64 = weights.iter().sum();
    let mut current = vec![0i64; weights.len()];
    let mut out = Vec::with_capacity(total as usize);
    for _ in 0..total {
        let mut best = 0;
        for (i, w) in weights.iter().enumerate() {
            current[i] += w;
            if current[i] > current[best] {
                best = i;
            }
        }
        current[best] -= total;
        out.push(best as u32);
    }
    out
}

/// One mirror's share of the traffic: exactly `percent` of every hundred
/// requests, spread evenly, decided with one atomic counter.
pub struct MirrorShare {
    percent: u32,
    counter: Arc<AtomicUsize>,
}

impl MirrorShare {
    /// A share of `percent` (0–100); `counter` survives swaps like a
    /// balancer position.
    pub fn new(percent: u32, counter: Arc<AtomicUsize>) -> Self {
        Self {
            percent: percent.min(100),
            counter,
        }
    }

    /// Whether this request is copied.
    pub fn fire(&self) -> bool {
        if self.percent == 0 {
            return false;
        }
        let n = (self.counter.fetch_add(1, Ordering::Relaxed) % 100) as u32;
        // Bresenham over a hundred requests: fires when the running share
        // crosses a whole request.
        (n + 1) * self.percent / 100 != n * self.percent / 100
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rotation(weights: &[u32]) -> (Rotation, Arc<AtomicU64>) {
        let epoch = Arc::new(AtomicU64::new(0));
        (
            Rotation::new(weights.to_vec(), Arc::default(), epoch.clone()),
            epoch,
        )
    }

    #[test]
    fn smooth_schedule_follows_weights_and_interleaves() {
        let s = smooth_schedule(&[5, 1, 1]);
        assert_eq!(s.len(), 7);
        assert_eq!(s.iter().filter(|&&i| i == 0).count(), 5);
        // Smooth: the heavy server is never picked more than 3 times in a row here.
        assert_eq!(s, vec![0, 0, 1, 0, 2, 0, 0]);
        assert!(smooth_schedule(&[0, 0]).is_empty());
        assert_eq!(smooth_schedule(&[0, 2]), vec![1, 1]);
        let big = smooth_schedule(&[1_000_000, 3_000_000]);
        assert!(big.len() <= 4096 && !big.is_empty());
        let ones = big.iter().filter(|&&i| i == 1).count() as f64 / big.len() as f64;
        assert!((ones - 0.75).abs() < 0.01, "{ones}");
    }

    #[test]
    fn down_members_leave_the_others_in_their_own_proportion() {
        let (r, epoch) = rotation(&[5, 1, 1]);
        let down = std::sync::atomic::AtomicBool::new(false);
        let up = |i: usize| i != 0 || !down.load(Ordering::Relaxed);
        let mut counts = [0; 3];
        for _ in 0..70 {
            counts[r.next(up).unwrap()] += 1;
        }
        assert_eq!(counts, [50, 10, 10]);
        down.store(true, Ordering::Relaxed);
        epoch.fetch_add(1, Ordering::Release);
        let mut counts = [0; 3];
        for _ in 0..70 {
            counts[r.next(up).unwrap()] += 1;
        }
        assert_eq!(counts, [0, 35, 35]);
        assert!(r.any_up(up));
        let none = |_: usize| false;
        epoch.fetch_add(1, Ordering::Release);
        assert_eq!(r.next(none), None);
        assert!(!r.any_up(none));
    }

    #[test]
    fn next_excluding_skips_failed_members_and_ends() {
        let (r, _) = rotation(&[1, 1, 1]);
        let all = |_: usize| true;
        let first = r.next(all).unwrap();
        let second = r.next_excluding(all, &[first]).unwrap();
        assert_ne!(first, second);
        let third = r.next_excluding(all, &[first, second]).unwrap();
        assert!(third != first && third != second);
        assert_eq!(r.next_excluding(all, &[0, 1, 2]), None);
        let (zero, _) = rotation(&[0, 0]);
        assert_eq!(zero.next(all), None);
        assert_eq!(zero.next_excluding(all, &[]), None);
    }

    #[test]
    fn mirror_share_is_exact_per_hundred() {
        for percent in [0, 1, 10, 33, 50, 99, 100] {
            let share = MirrorShare::new(percent, Arc::default());
            let fired = (0..1000).filter(|_| share.fire()).count();
            assert_eq!(fired, percent as usize * 10, "{percent}%");
        }
    }
}
