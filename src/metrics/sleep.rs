//! The families of services that sleep when idle (`gangway.sleep.*`
//! labels), per sleeping unit: one container, or the containers of a
//! group, as the API's `sleep.unit` names it. A unit, not a service: one
//! wake-up starts every container of a group, whatever services they
//! serve.
//!
//! Wake-ups (by result) and the requests that waited are counters; how
//! long successful wake-ups took is a histogram of gangway's own, with
//! bounds for container starts rather than for requests. Each unit's
//! state and the requests it holds now are read from the sleeper when the
//! families are rendered or pushed, as servers' states are.

use super::shard::Totals;
use super::{Exporter, HistogramPoint, METADATA, render_buckets};
use metrics::{Counter, Key, KeyName, Label, Recorder};
use metrics_exporter_prometheus::LabelSet;
use metrics_exporter_prometheus::formatting::{
    write_help_line, write_metric_line, write_type_line,
};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

/// Label key of a sleeping unit (a container's name, or `group NAME`).
pub const UNIT: &str = "unit";
/// Label key of a wake-up's result (`ok`, `error`).
pub const RESULT: &str = "result";
/// Label key of a unit's state.
pub const STATE: &str = "state";
/// The values of [`STATE`], one series each per unit.
pub const STATES: [&str; 5] = ["awake", "stopping", "asleep", "waking", "stopped"];
/// Upper bounds (seconds) of the wake-up duration histogram: from a small
/// container's start to a slow health check's.
pub const WAKE_BOUNDS: [f64; 9] = [0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];

/// One unit as the sleeper sees it now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SleepReading {
    /// The unit.
    pub unit: String,
    /// Its state, one of [`STATES`].
    pub state: &'static str,
    /// Requests waiting for its wake-up now.
    pub held: usize,
}

type Readings = Box<dyn Fn() -> Vec<SleepReading> + Send + Sync>;

/// The sleep families' names and what gangway keeps of them itself.
pub(super) struct SleepFamilies {
    wakeups: KeyName,
    duration: KeyName,
    held: KeyName,
    waited: KeyName,
    state: KeyName,
    /// Each unit's wake-up durations, by unit.
    durations: Mutex<BTreeMap<String, Arc<Durations>>>,
    /// Reads the units now; set once, by the sleeper.
    readings: OnceLock<Readings>,
}

/// One unit's wake-up durations: a count per bucket (the last above every
/// bound) and their sum. Wake-ups are rare: a lock is cheap enough.
#[derive(Default)]
struct Durations(Mutex<(Vec<u64>, f64)>);

impl Durations {
    fn record(&self, took: Duration) {
        let secs = took.as_secs_f64();
        let mut d = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if d.0.is_empty() {
            d.0 = vec![0; WAKE_BOUNDS.len() + 1];
        }
        let bucket = WAKE_BOUNDS
            .iter()
            .position(|b| secs <= *b)
            .unwrap_or(WAKE_BOUNDS.len());
        d.0[bucket] += 1;
        d.1 += secs;
    }

    fn totals(&self) -> Totals {
        let d = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let mut counts = d.0.clone();
        counts.resize(WAKE_BOUNDS.len() + 1, 0);
        Totals {
            sum: d.1,
            counts,
            ..Totals::default()
        }
    }
}

/// The handles of one sleeping unit, held by the sleeper.
#[derive(Clone)]
pub struct SleepSeries {
    woke: Counter,
    failed: Counter,
    waited: Counter,
    durations: Arc<Durations>,
}

impl SleepSeries {
    /// A wake-up ended: it took `took` from the request that asked for it,
    /// and succeeded or not. Only successful ones are in the histogram.
    pub fn woken(&self, took: Duration, ok: bool) {
        if ok {
            self.woke.increment(1);
            self.durations.record(took);
        } else {
            self.failed.increment(1);
        }
    }

    /// A request began waiting for the unit's wake-up.
    pub fn waited(&self) {
        self.waited.increment(1);
    }
}

impl SleepFamilies {
    /// The families named `{prefix}_sleep_…`, described to `recorder`.
    pub(super) fn new(prefix: &str, recorder: &impl Recorder) -> Self {
        let name = |family: &str| KeyName::from(format!("{prefix}_sleep_{family}"));
        let families = SleepFamilies {
            wakeups: name("wakeups_total"),
            duration: name("wakeup_duration_seconds"),
            held: name("held_requests"),
            waited: name("waited_requests_total"),
            state: name("state"),
            durations: Mutex::default(),
            readings: OnceLock::new(),
        };
        recorder.describe_counter(
            families.wakeups.clone(),
            None,
            "Wake-ups of sleeping services, per unit and result (ok, error).".into(),
        );
        recorder.describe_counter(
            families.waited.clone(),
            None,
            "Requests that waited for a sleeping service to wake, per unit.".into(),
        );
        families
    }

    /// The handles of `unit`; asking again gives the same series.
    pub(super) fn series(&self, recorder: &impl Recorder, unit: &str) -> SleepSeries {
        let counter = |name: &KeyName, result: Option<&'static str>| {
            let mut labels = vec![Label::new(UNIT, unit.to_owned())];
            if let Some(result) = result {
                labels.push(Label::from_static_parts(RESULT, result));
            }
            recorder.register_counter(&Key::from_parts(name.clone(), labels), &METADATA)
        };
        let series = SleepSeries {
            woke: counter(&self.wakeups, Some("ok")),
            failed: counter(&self.wakeups, Some("error")),
            waited: counter(&self.waited, None),
            durations: self
                .durations
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entry(unit.to_owned())
                .or_default()
                .clone(),
        };
        // Registered at zero, so a unit that never woke shows 0 rather than nothing.
        for c in [&series.woke, &series.failed, &series.waited] {
            c.increment(0);
        }
        series
    }

    /// The units now, sorted; none until the sleeper is watched.
    fn readings(&self) -> Vec<SleepReading> {
        let mut readings = self.readings.get().map(|read| read()).unwrap_or_default();
        readings.sort_by(|a, b| a.unit.cmp(&b.unit));
        readings.dedup_by(|a, b| a.unit == b.unit);
        readings
    }

    fn labels(name: &KeyName, labels: Vec<Label>) -> LabelSet {
        LabelSet::from_key_and_global(&Key::from_parts(name.clone(), labels), &Default::default())
    }

    /// Appends the state and held gauges of the units now, and the
    /// wake-up durations of every unit measured.
    pub(super) fn render(&self, text: &mut String) {
        let readings = self.readings();
        if !readings.is_empty() {
            let name = self.state.as_str();
            write_help_line(
                text,
                name,
                None,
                None,
                "State of a sleeping unit: 1 for the state it is in, 0 for the others.",
            );
            write_type_line(text, name, None, None, "gauge");
            for r in &readings {
                for state in STATES {
                    let labels = Self::labels(
                        &self.state,
                        vec![
                            Label::new(UNIT, r.unit.clone()),
                            Label::from_static_parts(STATE, state),
                        ],
                    );
                    let value = u8::from(r.state == state);
                    write_metric_line::<&str, u8>(text, name, None, &labels, None, value, None);
                }
            }
            text.push('\n');
            let name = self.held.as_str();
            write_help_line(
                text,
                name,
                None,
                None,
                "Requests waiting now for a sleeping unit to wake.",
            );
            write_type_line(text, name, None, None, "gauge");
            for r in &readings {
                let labels = Self::labels(&self.held, vec![Label::new(UNIT, r.unit.clone())]);
                write_metric_line::<&str, usize>(text, name, None, &labels, None, r.held, None);
            }
            text.push('\n');
        }
        let durations = self
            .durations
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if durations.is_empty() {
            return;
        }
        let name = self.duration.as_str();
        write_help_line(
            text,
            name,
            None,
            None,
            "How long successful wake-ups took, from the request to the unit running and healthy, per unit.",
        );
        write_type_line(text, name, None, None, "histogram");
        for (unit, d) in durations.iter() {
            let labels = Self::labels(&self.duration, vec![Label::new(UNIT, unit.clone())]);
            render_buckets(text, name, &labels, &WAKE_BOUNDS, &d.totals());
        }
        text.push('\n');
    }

    /// The gauges and histograms `render` writes, for an OTLP push.
    pub(super) fn snapshot(
        &self,
        gauges: &mut Vec<(Key, f64)>,
        histograms: &mut Vec<HistogramPoint>,
    ) {
        for r in self.readings() {
            for state in STATES {
                let key = Key::from_parts(
                    self.state.clone(),
                    vec![
                        Label::new(UNIT, r.unit.clone()),
                        Label::from_static_parts(STATE, state),
                    ],
                );
                gauges.push((key, if r.state == state { 1.0 } else { 0.0 }));
            }
            let key = Key::from_parts(self.held.clone(), vec![Label::new(UNIT, r.unit.clone())]);
            gauges.push((key, r.held as f64));
        }
        let bounds: Arc<[f64]> = WAKE_BOUNDS.into();
        let durations = self
            .durations
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for (unit, d) in durations.iter() {
            let totals = d.totals();
            histograms.push(HistogramPoint {
                key: Key::from_parts(self.duration.clone(), vec![Label::new(UNIT, unit.clone())]),
                bounds: bounds.clone(),
                counts: totals.counts,
                sum: totals.sum,
            });
        }
    }
}

impl Exporter {
    /// The handles of sleeping unit `unit`: its wake-ups, their durations
    /// and the requests that waited. Asking again gives the same series.
    pub fn sleep_series(&self, unit: &str) -> SleepSeries {
        self.sleep.series(&self.recorder, unit)
    }

    /// Reads the sleeping units' states and held requests with `read`
    /// whenever the families are rendered or pushed; the first call wins.
    pub fn watch_sleep(&self, read: impl Fn() -> Vec<SleepReading> + Send + Sync + 'static) {
        let _ = self.sleep.readings.set(Box::new(read));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line<'a>(text: &'a str, start: &str) -> Option<&'a str> {
        text.lines().find(|l| l.starts_with(start))
    }

    #[test]
    fn wake_ups_waits_and_states_are_rendered_per_unit_under_the_prefix() {
        let exporter = Exporter::new("traefik", &[1.0]).expect("exporter");
        let series = exporter.sleep_series("app-1");
        series.waited();
        series.waited();
        series.woken(Duration::from_millis(700), true);
        series.woken(Duration::from_secs(3), false);
        // Asking again gives the same series.
        exporter
            .sleep_series("app-1")
            .woken(Duration::from_millis(200), true);
        exporter.watch_sleep(|| {
            vec![SleepReading {
                unit: "app-1".into(),
                state: "waking",
                held: 3,
            }]
        });
        let text = exporter.render();
        for want in [
            "traefik_sleep_wakeups_total{unit=\"app-1\",result=\"ok\"} 2",
            "traefik_sleep_wakeups_total{unit=\"app-1\",result=\"error\"} 1",
            "traefik_sleep_waited_requests_total{unit=\"app-1\"} 2",
            "traefik_sleep_held_requests{unit=\"app-1\"} 3",
            "traefik_sleep_state{unit=\"app-1\",state=\"waking\"} 1",
            "traefik_sleep_state{unit=\"app-1\",state=\"asleep\"} 0",
            "traefik_sleep_wakeup_duration_seconds_bucket{unit=\"app-1\",le=\"0.25\"} 1",
            "traefik_sleep_wakeup_duration_seconds_bucket{unit=\"app-1\",le=\"1\"} 2",
            "traefik_sleep_wakeup_duration_seconds_bucket{unit=\"app-1\",le=\"+Inf\"} 2",
            "traefik_sleep_wakeup_duration_seconds_count{unit=\"app-1\"} 2",
            "# TYPE traefik_sleep_wakeup_duration_seconds histogram",
        ] {
            assert!(text.lines().any(|l| l == want), "{want} in\n{text}");
        }
        let sum = line(&text, "traefik_sleep_wakeup_duration_seconds_sum")
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse::<f64>().ok())
            .expect("sum");
        assert!((sum - 0.9).abs() < 1e-9, "{sum}");
    }

    /// Starts that succeed at once.
    struct Starts;

    impl crate::sleep::Engine for Starts {
        fn start(
            &self,
            _ids: Vec<String>,
            _limit: Duration,
        ) -> futures_util::future::BoxFuture<'static, Result<(), crate::sleep::WakeError>> {
            Box::pin(async { Ok(()) })
        }

        fn stop(
            &self,
            _ids: Vec<String>,
        ) -> futures_util::future::BoxFuture<'static, Result<(), crate::sleep::WakeError>> {
            Box::pin(async { Ok(()) })
        }
    }

    #[tokio::test]
    async fn the_sleeper_counts_its_wake_ups_and_the_requests_that_waited() {
        use crate::sleep::{Member, Mode, Report, SleepSpec, Sleeper};
        let exporter = Arc::new(Exporter::new("gangway", &[1.0]).expect("exporter"));
        let sleeper = Arc::new(Sleeper::default());
        sleeper.measure(&exporter);
        sleeper.connected("docker", Arc::new(Starts));
        sleeper.update(
            "docker",
            vec![Report {
                spec: SleepSpec {
                    idle: None,
                    mode: Mode::Hold,
                    hold: Duration::from_secs(5),
                    group: None,
                    wakeable: true,
                },
                member: Member {
                    id: "id1".into(),
                    name: "app-1".into(),
                    running: false,
                },
                services: vec!["app@docker".into()],
            }],
        );
        let before = exporter.render();
        for want in [
            "gangway_sleep_state{unit=\"app-1\",state=\"asleep\"} 1",
            "gangway_sleep_wakeups_total{unit=\"app-1\",result=\"ok\"} 0",
        ] {
            assert!(before.lines().any(|l| l == want), "{want} in\n{before}");
        }
        let visits: Vec<_> = (0..3)
            .map(|_| sleeper.enter("app@docker").expect("sleeps"))
            .collect();
        futures_util::future::join_all(visits.iter().map(|v| v.ready(false))).await;
        let after = exporter.render();
        for want in [
            "gangway_sleep_state{unit=\"app-1\",state=\"awake\"} 1",
            "gangway_sleep_wakeups_total{unit=\"app-1\",result=\"ok\"} 1",
            "gangway_sleep_waited_requests_total{unit=\"app-1\"} 3",
            "gangway_sleep_held_requests{unit=\"app-1\"} 0",
            "gangway_sleep_wakeup_duration_seconds_count{unit=\"app-1\"} 1",
        ] {
            assert!(after.lines().any(|l| l == want), "{want} in\n{after}");
        }
        // Requests to a service that does not sleep are not the sleeper's.
        assert!(sleeper.enter("other@docker").is_none());
    }

    #[test]
    fn a_push_reads_the_same_figures() {
        let exporter =
            Exporter::build("gangway", &[1.0], &BTreeMap::new(), true).expect("exporter");
        exporter
            .sleep_series("group shop")
            .woken(Duration::from_secs(2), true);
        exporter.watch_sleep(|| {
            vec![SleepReading {
                unit: "group shop".into(),
                state: "awake",
                held: 0,
            }]
        });
        let snapshot = exporter.snapshot();
        let ok = snapshot
            .counters
            .iter()
            .find(|(k, _)| {
                k.name() == "gangway_sleep_wakeups_total"
                    && k.labels().any(|l| l.key() == RESULT && l.value() == "ok")
            })
            .map(|(_, v)| *v);
        assert_eq!(ok, Some(1));
        let awake = snapshot.gauges.iter().find(|(k, _)| {
            k.name() == "gangway_sleep_state" && k.labels().any(|l| l.value() == "awake")
        });
        assert_eq!(awake.map(|(_, v)| *v), Some(1.0));
        let durations = snapshot
            .histograms
            .iter()
            .find(|h| h.key.name() == "gangway_sleep_wakeup_duration_seconds")
            .expect("the wake-up durations");
        assert_eq!(durations.counts.iter().sum::<u64>(), 1);
        assert_eq!(durations.sum, 2.0);
    }
}
