//! The recorder gangway's handles are registered with: the Prometheus
//! recorder, and, when metrics are also pushed over OTLP, a copy of each
//! counter's and gauge's value that a push can read (the Prometheus
//! recorder renders text only, and a handle cannot be read back).
//!
//! Without a push, registering returns the Prometheus handle itself, so
//! recording costs what it did. With one, a handle adds to the Prometheus
//! series and to its own atomic: one more atomic operation per update, no
//! lock. The lock is taken when a series is registered and when a push
//! reads them all.

use metrics::{
    Counter, CounterFn, Gauge, GaugeFn, Histogram, Key, KeyName, Metadata, Recorder, SharedString,
    Unit,
};
use metrics_exporter_prometheus::PrometheusRecorder;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// The Prometheus recorder, with copies of the values for a push when one
/// is configured.
pub(super) struct Tee {
    prometheus: PrometheusRecorder,
    copies: Option<Copies>,
}

#[derive(Default)]
struct Copies {
    counters: Mutex<HashMap<Key, Arc<CounterCopy>>>,
    gauges: Mutex<HashMap<Key, Arc<GaugeCopy>>>,
}

/// A counter that adds to its Prometheus series and keeps its own total.
struct CounterCopy {
    prometheus: Counter,
    value: AtomicU64,
}

impl CounterFn for CounterCopy {
    fn increment(&self, value: u64) {
        self.prometheus.increment(value);
        self.value.fetch_add(value, Ordering::Relaxed);
    }

    fn absolute(&self, value: u64) {
        self.prometheus.absolute(value);
        self.value.fetch_max(value, Ordering::Relaxed);
    }
}

/// A gauge that sets its Prometheus series and keeps its own value (the
/// bits of an `f64`).
struct GaugeCopy {
    prometheus: Gauge,
    bits: AtomicU64,
}

impl GaugeCopy {
    fn update(&self, f: impl Fn(f64) -> f64) {
        // There is no atomic float add: a compare-and-swap loop.
        let _ = self
            .bits
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bits| {
                Some(f(f64::from_bits(bits)).to_bits())
            });
    }
}

impl GaugeFn for GaugeCopy {
    fn increment(&self, value: f64) {
        self.prometheus.increment(value);
        self.update(|v| v + value);
    }

    fn decrement(&self, value: f64) {
        self.prometheus.decrement(value);
        self.update(|v| v - value);
    }

    fn set(&self, value: f64) {
        self.prometheus.set(value);
        self.bits.store(value.to_bits(), Ordering::Relaxed);
    }
}

impl Tee {
    /// `prometheus`, with copies kept when `push` is set.
    pub(super) fn new(prometheus: PrometheusRecorder, push: bool) -> Self {
        Tee {
            prometheus,
            copies: push.then(Copies::default),
        }
    }

    /// Whether copies are kept.
    pub(super) fn pushes(&self) -> bool {
        self.copies.is_some()
    }

    /// Every counter's key and total, when copies are kept.
    pub(super) fn counters(&self) -> Vec<(Key, u64)> {
        let Some(copies) = &self.copies else {
            return Vec::new();
        };
        let map = copies
            .counters
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        map.iter()
            .map(|(k, c)| (k.clone(), c.value.load(Ordering::Relaxed)))
            .collect()
    }

    /// Every gauge's key and value, when copies are kept.
    pub(super) fn gauges(&self) -> Vec<(Key, f64)> {
        let Some(copies) = &self.copies else {
            return Vec::new();
        };
        let map = copies.gauges.lock().unwrap_or_else(PoisonError::into_inner);
        map.iter()
            .map(|(k, g)| (k.clone(), f64::from_bits(g.bits.load(Ordering::Relaxed))))
            .collect()
    }
}

impl Recorder for Tee {
    fn describe_counter(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        self.prometheus.describe_counter(key, unit, description);
    }

    fn describe_gauge(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        self.prometheus.describe_gauge(key, unit, description);
    }

    fn describe_histogram(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        self.prometheus.describe_histogram(key, unit, description);
    }

    fn register_counter(&self, key: &Key, metadata: &Metadata<'_>) -> Counter {
        let prometheus = self.prometheus.register_counter(key, metadata);
        let Some(copies) = &self.copies else {
            return prometheus;
        };
        let mut map = copies
            .counters
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let copy = map.entry(key.clone()).or_insert_with(|| {
            Arc::new(CounterCopy {
                prometheus,
                value: AtomicU64::new(0),
            })
        });
        Counter::from_arc(copy.clone())
    }

    fn register_gauge(&self, key: &Key, metadata: &Metadata<'_>) -> Gauge {
        let prometheus = self.prometheus.register_gauge(key, metadata);
        let Some(copies) = &self.copies else {
            return prometheus;
        };
        let mut map = copies.gauges.lock().unwrap_or_else(PoisonError::into_inner);
        let copy = map.entry(key.clone()).or_insert_with(|| {
            Arc::new(GaugeCopy {
                prometheus,
                bits: AtomicU64::new(0f64.to_bits()),
            })
        });
        Gauge::from_arc(copy.clone())
    }

    fn register_histogram(&self, key: &Key, metadata: &Metadata<'_>) -> Histogram {
        // gangway's duration histograms are its own `Buckets`, read
        // directly by a push; no other histogram is registered here.
        self.prometheus.register_histogram(key, metadata)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use metrics::{Level, Metadata};

    const MD: Metadata<'static> = Metadata::new("t", Level::INFO, None);

    #[test]
    fn copies_follow_the_prometheus_series_and_register_once() {
        let tee = Tee::new(
            metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder(),
            true,
        );
        let key = Key::from_name("c_total");
        tee.register_counter(&key, &MD).increment(2);
        tee.register_counter(&key, &MD).increment(3);
        assert_eq!(tee.counters(), vec![(key, 5)]);
        let g = tee.register_gauge(&Key::from_name("g"), &MD);
        g.increment(2.0);
        g.decrement(0.5);
        assert_eq!(tee.gauges()[0].1, 1.5);
    }

    #[test]
    fn without_a_push_nothing_is_copied() {
        let tee = Tee::new(
            metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder(),
            false,
        );
        tee.register_counter(&Key::from_name("c_total"), &MD)
            .increment(1);
        assert!(tee.counters().is_empty());
    }
}
