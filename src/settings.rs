//! The static configuration translated into runtime settings: what each
//! entry point, compile and the metrics need, read from `StaticConfig`
//! option by option.
//!
//! Pure: nothing here binds a socket, spawns a task or reads a file, so
//! `gangway check` compiles with the very settings the start-up uses, and
//! the translation is tested without starting anything.
//!
//! Every section is taken apart with an exhaustive pattern and no `..`,
//! under `#[deny(unused_variables)]`: an option added to the model but read
//! nowhere fails the build. `_` marks an option read elsewhere, and says
//! where.

mod context;
mod entry_point;

pub use context::{compile_context, router_tls};
pub use entry_point::{EntryPointSettings, RedirectError, entry_point, redirect};

use crate::compile::MetricsSettings;
use crate::config::static_config::StaticConfig;
use std::sync::Arc;

/// The metrics settings compile hands to routers and services, when
/// `metrics.prometheus`, `metrics.otlp` or a push backend (`statsD`,
/// `datadog`, `influxDB2`) is on. One set of handles feeds them all:
/// named with Prometheus's prefix and bounds when it is on (a push
/// renames them), else with Traefik's OTLP names and `explicitBoundaries`
/// (their defaults without OTLP); an object kind is counted when any of
/// them asks for it.
pub fn metrics(
    config: &StaticConfig,
) -> Result<Option<MetricsSettings>, crate::metrics::MetricsError> {
    let otlp = config.metrics.otlp.as_ref();
    let pushed = pushed_objects(&config.metrics);
    let default_otlp = crate::config::static_config::MetricsOtlp::default();
    let (prefix, bounds, header_labels, routers, services) =
        match (&config.metrics.prometheus, otlp) {
            (None, None) if pushed.is_none() => return Ok(None),
            (None, None) => (
                crate::otel::metrics::PREFIX,
                &default_otlp.explicit_boundaries,
                std::collections::BTreeMap::new(),
                false,
                false,
            ),
            (Some(p), _) => (
                p.prefix.as_str(),
                &p.buckets,
                p.header_labels.clone(),
                p.add_routers_labels,
                p.add_services_labels,
            ),
            (None, Some(o)) => (
                crate::otel::metrics::PREFIX,
                &o.explicit_boundaries,
                std::collections::BTreeMap::new(),
                false,
                false,
            ),
        };
    let bounds: Vec<f64> = bounds.iter().map(|b| b.0).collect();
    Ok(Some(MetricsSettings {
        exporter: Arc::new(crate::metrics::Exporter::build(
            prefix,
            &bounds,
            &header_labels,
            otlp.is_some() || pushed.is_some(),
        )?),
        routers: routers
            || otlp.is_some_and(|o| o.add_routers_labels)
            || pushed.is_some_and(|p| p[1]),
        services: services
            || otlp.is_some_and(|o| o.add_services_labels)
            || pushed.is_some_and(|p| p[2]),
    }))
}

/// Whether a push backend (`statsD`, `datadog`, `influxDB2`) is on and,
/// if so, whether any asks for entry points, routers and services.
fn pushed_objects(m: &crate::config::static_config::Metrics) -> Option<[bool; 3]> {
    let statsd_like = [m.statsd.as_ref(), m.datadog.as_ref()]
        .into_iter()
        .flatten()
        .map(|s| {
            [
                s.add_entry_points_labels,
                s.add_routers_labels,
                s.add_services_labels,
            ]
        });
    let influx = m.influxdb2.as_ref().map(|i| {
        [
            i.add_entry_points_labels,
            i.add_routers_labels,
            i.add_services_labels,
        ]
    });
    statsd_like
        .chain(influx)
        .reduce(|a, b| std::array::from_fn(|i| a[i] || b[i]))
}

/// Whether entry points keep their own request counters
/// (`addEntryPointsLabels` of any metrics backend).
pub fn entry_point_metrics(config: &StaticConfig) -> bool {
    let m = &config.metrics;
    m.prometheus
        .as_ref()
        .is_some_and(|p| p.add_entry_points_labels)
        || m.otlp.as_ref().is_some_and(|o| o.add_entry_points_labels)
        || pushed_objects(m).is_some_and(|p| p[0])
}

/// A zero duration means "no limit" in Traefik's options.
fn nonzero(d: std::time::Duration) -> Option<std::time::Duration> {
    (!d.is_zero()).then_some(d)
}

#[cfg(test)]
mod tests;
