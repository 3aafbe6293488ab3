//! One request series (an object's requests of one protocol, method and
//! status) counted per worker: every worker adds to a shard of its own,
//! on cache lines no other worker writes, and a read sums the shards. A
//! request's counts then never make two cores fight over one line, however
//! many workers serve the object.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Counters per cache line.
const PER_LINE: usize = 16;

/// A run of counters alone on their cache lines (128 bytes: two 64-byte
/// lines, as the adjacent-line prefetcher pulls them in pairs).
#[repr(align(128))]
struct Line([AtomicU64; PER_LINE]);

impl Line {
    fn new() -> Self {
        Line(std::array::from_fn(|_| AtomicU64::new(0)))
    }
}

/// Where each figure sits in a shard: three counters, the durations' sum
/// in nanoseconds, then one count per bucket (the last above every bound).
const REQUESTS: usize = 0;
const REQUEST_BYTES: usize = 1;
const RESPONSE_BYTES: usize = 2;
const SUM_NANOS: usize = 3;
const BUCKETS: usize = 4;

/// The figures of one request series, a shard per worker and one for the
/// main runtime (`crate::worker::slot`).
pub(super) struct RequestSeries {
    bounds: Arc<[f64]>,
    /// Lines each shard takes.
    per_shard: usize,
    lines: Box<[Line]>,
}

/// The figures of a series summed over its shards.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Totals {
    pub(super) requests: u64,
    pub(super) request_bytes: u64,
    pub(super) response_bytes: u64,
    /// Seconds, summed.
    pub(super) sum: f64,
    /// Per bucket, not cumulative.
    pub(super) counts: Vec<u64>,
}

impl RequestSeries {
    /// A series whose durations fall into buckets bounded by `bounds`
    /// (seconds, increasing).
    pub(super) fn new(bounds: Arc<[f64]>) -> Self {
        let per_shard = (BUCKETS + bounds.len() + 1).div_ceil(PER_LINE);
        let shards = crate::worker::count() + 1;
        RequestSeries {
            bounds,
            per_shard,
            lines: (0..per_shard * shards).map(|_| Line::new()).collect(),
        }
    }

    fn shards(&self) -> usize {
        self.lines.len() / self.per_shard
    }

    fn cell(&self, shard: usize, field: usize) -> &AtomicU64 {
        &self.lines[shard * self.per_shard + field / PER_LINE].0[field % PER_LINE]
    }

    /// Records one finished request in the current worker's shard;
    /// `count` false leaves the request count alone (counted elsewhere,
    /// with header labels).
    pub(super) fn record(
        &self,
        count: bool,
        duration: Duration,
        request_bytes: u64,
        response_bytes: u64,
    ) {
        // The main runtime's shard is written by several threads, so each
        // add is still atomic; on a line no other core writes it costs
        // next to nothing.
        let shard = crate::worker::slot().min(self.shards() - 1);
        let add = |field: usize, n: u64| {
            self.cell(shard, field).fetch_add(n, Ordering::Relaxed);
        };
        if count {
            add(REQUESTS, 1);
        }
        add(REQUEST_BYTES, request_bytes);
        add(RESPONSE_BYTES, response_bytes);
        add(
            SUM_NANOS,
            u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX),
        );
        let seconds = duration.as_secs_f64();
        let bucket = self
            .bounds
            .iter()
            .position(|bound| seconds <= *bound)
            .unwrap_or(self.bounds.len());
        add(BUCKETS + bucket, 1);
    }

    /// The upper bounds of the buckets.
    pub(super) fn bounds(&self) -> &Arc<[f64]> {
        &self.bounds
    }

    /// Every figure summed over the shards.
    pub(super) fn totals(&self) -> Totals {
        let sum = |field: usize| -> u64 {
            (0..self.shards())
                .map(|shard| self.cell(shard, field).load(Ordering::Relaxed))
                .fold(0u64, u64::wrapping_add)
        };
        Totals {
            requests: sum(REQUESTS),
            request_bytes: sum(REQUEST_BYTES),
            response_bytes: sum(RESPONSE_BYTES),
            sum: sum(SUM_NANOS) as f64 / 1e9,
            counts: (0..=self.bounds.len()).map(|b| sum(BUCKETS + b)).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_are_summed_and_kept_apart() {
        let series = Arc::new(RequestSeries::new(Arc::from([0.1, 1.0])));
        let record = |series: &RequestSeries, ms| {
            series.record(true, Duration::from_millis(ms), 3, 10);
        };
        record(&series, 50);
        std::thread::scope(|s| {
            s.spawn(|| {
                crate::worker::enter(0);
                record(&series, 500);
                record(&series, 5000);
            });
        });
        series.record(false, Duration::from_millis(100), 1, 1);
        assert_eq!(
            series.totals(),
            Totals {
                requests: 3,
                request_bytes: 10,
                response_bytes: 31,
                sum: 5.65,
                counts: vec![2, 1, 1],
            }
        );
        assert_eq!(
            series.cell(0, REQUESTS).load(Ordering::Relaxed),
            2,
            "worker 0's requests in its own shard"
        );
    }

    #[test]
    fn many_buckets_take_more_lines_per_shard() {
        let bounds: Arc<[f64]> = (1..=40).map(f64::from).collect();
        let series = RequestSeries::new(bounds);
        assert_eq!(series.per_shard, 3);
        series.record(true, Duration::from_secs(100), 0, 0);
        assert_eq!(series.totals().counts[40], 1);
    }
}
