//! Metrics pushed over OTLP (`metrics.otlp`): at each `pushInterval`, a
//! background task reads the values of the very handles the Prometheus
//! exposition renders ([`crate::metrics::Exporter::snapshot`]) and sends
//! them as one export: counters as cumulative monotonic sums, gauges as
//! gauges, request durations as cumulative histograms in seconds. Names
//! are Traefik's for OTLP (`traefik_entrypoint_requests_total`), whatever
//! prefix Prometheus uses; labels are the Prometheus series' labels.
//!
//! Nothing happens on the request path for the push: requests update the
//! handles as they do for Prometheus.

use super::OtelError;
use super::export::{Exporter, Signal};
use crate::config::static_config::MetricsOtlp;
use crate::metrics::Snapshot;
use metrics::Key;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::metrics::v1 as proto;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The prefix of Traefik's metric names over OTLP.
pub const PREFIX: &str = "traefik";

/// A push interval of zero would spin; this is the shortest one kept.
const MIN_INTERVAL: Duration = Duration::from_millis(100);

/// Starts pushing `exporter`'s series as `config` says.
pub fn spawn_push(
    exporter: Arc<crate::metrics::Exporter>,
    config: &MetricsOtlp,
) -> Result<super::Pusher, OtelError> {
    let collector = config.collector();
    let sender = Exporter::new(Some(&collector), Signal::Metrics, "metrics.otlp")?;
    let resource = super::resource(&config.service_name, &config.resource_attributes);
    let interval = config.push_interval.0.max(MIN_INTERVAL);
    Ok(super::Pusher::spawn(|stop| {
        push(exporter, sender, resource, interval, stop)
    }))
}

/// Pushes every `interval`, and once more at `stop`.
async fn push(
    exporter: Arc<crate::metrics::Exporter>,
    sender: Exporter,
    resource: opentelemetry_proto::tonic::resource::v1::Resource,
    interval: Duration,
    stop: Arc<tokio::sync::Notify>,
) {
    let start = nanos(SystemTime::now());
    let mut times = super::PushTimes::new(interval, stop).await;
    let mut failing = false;
    while times.next().await {
        let snapshot = exporter.snapshot();
        let message = encode(&resource, exporter.prefix(), &snapshot, start);
        match sender.send(message).await {
            Ok(()) => {
                if failing {
                    tracing::info!(collector = %sender.uri(), "metrics are pushed again");
                }
                failing = false;
            }
            Err(e) => {
                // Said once per outage, not once per push.
                if failing {
                    tracing::debug!(collector = %sender.uri(), error = %e, "metrics not pushed");
                } else {
                    tracing::warn!(collector = %sender.uri(), error = %e, "metrics not pushed; trying again at the next interval");
                }
                failing = true;
            }
        }
    }
}

/// The OTLP name of a family named `{prefix}_{family}`.
fn otlp_name(prefix: &str, name: &str) -> String {
    let family = name
        .strip_prefix(prefix)
        .and_then(|rest| rest.strip_prefix('_'))
        .unwrap_or(name);
    format!("{PREFIX}_{family}")
}

fn attributes(key: &Key) -> Vec<opentelemetry_proto::tonic::common::v1::KeyValue> {
    key.labels()
        .map(|l| super::string_attribute(l.key(), l.value()))
        .collect()
}

/// One export request holding every series of `snapshot`, one metric per
/// family.
pub fn encode(
    resource: &opentelemetry_proto::tonic::resource::v1::Resource,
    prefix: &str,
    snapshot: &Snapshot,
    start: u64,
) -> Vec<u8> {
    use prost::Message;
    let now = nanos(SystemTime::now());
    let point = |key: &Key, value: proto::number_data_point::Value| proto::NumberDataPoint {
        attributes: attributes(key),
        start_time_unix_nano: start,
        time_unix_nano: now,
        value: Some(value),
        ..Default::default()
    };
    let mut sums: BTreeMap<String, Vec<proto::NumberDataPoint>> = BTreeMap::new();
    for (key, value) in &snapshot.counters {
        let value = i64::try_from(*value).unwrap_or(i64::MAX);
        sums.entry(otlp_name(prefix, key.name()))
            .or_default()
            .push(point(key, proto::number_data_point::Value::AsInt(value)));
    }
    let mut gauges: BTreeMap<String, Vec<proto::NumberDataPoint>> = BTreeMap::new();
    for (key, value) in &snapshot.gauges {
        gauges
            .entry(otlp_name(prefix, key.name()))
            .or_default()
            .push(point(
                key,
                proto::number_data_point::Value::AsDouble(*value),
            ));
    }
    let mut histograms: BTreeMap<String, Vec<proto::HistogramDataPoint>> = BTreeMap::new();
    for h in &snapshot.histograms {
        histograms
            .entry(otlp_name(prefix, h.key.name()))
            .or_default()
            .push(proto::HistogramDataPoint {
                attributes: attributes(&h.key),
                start_time_unix_nano: start,
                time_unix_nano: now,
                count: h.counts.iter().sum(),
                sum: Some(h.sum),
                bucket_counts: h.counts.clone(),
                explicit_bounds: h.bounds.to_vec(),
                ..Default::default()
            });
    }
    let cumulative = proto::AggregationTemporality::Cumulative as i32;
    let metric = |name: String, data: proto::metric::Data| {
        let unit = if name.ends_with("_seconds") {
            "s"
        } else if name.ends_with("_bytes_total") {
            "By"
        } else {
            ""
        };
        proto::Metric {
            name,
            unit: unit.to_owned(),
            data: Some(data),
            ..Default::default()
        }
    };
    let mut metrics = Vec::with_capacity(sums.len() + gauges.len() + histograms.len());
    for (name, data_points) in sums {
        metrics.push(metric(
            name,
            proto::metric::Data::Sum(proto::Sum {
                data_points,
                aggregation_temporality: cumulative,
                is_monotonic: true,
            }),
        ));
    }
    for (name, data_points) in gauges {
        metrics.push(metric(
            name,
            proto::metric::Data::Gauge(proto::Gauge { data_points }),
        ));
    }
    for (name, data_points) in histograms {
        metrics.push(metric(
            name,
            proto::metric::Data::Histogram(proto::Histogram {
                data_points,
                aggregation_temporality: cumulative,
            }),
        ));
    }
    ExportMetricsServiceRequest {
        resource_metrics: vec![proto::ResourceMetrics {
            resource: Some(resource.clone()),
            scope_metrics: vec![proto::ScopeMetrics {
                scope: Some(super::scope()),
                metrics,
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
    .encode_to_vec()
}

fn nanos(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_take_traefiks_otlp_names_whatever_the_prefix() {
        assert_eq!(
            otlp_name("gangway", "gangway_entrypoint_requests_total"),
            "traefik_entrypoint_requests_total"
        );
        assert_eq!(
            otlp_name("traefik", "traefik_open_connections"),
            "traefik_open_connections"
        );
    }
}
