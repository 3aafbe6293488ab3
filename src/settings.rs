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
/// `metrics.prometheus` or `metrics.otlp` is on. One set of handles feeds
/// both: named with Prometheus's prefix and bounds when it is on (an OTLP
/// push renames them `traefik_…`), else with Traefik's OTLP names and
/// `explicitBoundaries`; an object kind is counted when either asks for it.
pub fn metrics(
    config: &StaticConfig,
) -> Result<Option<MetricsSettings>, crate::metrics::MetricsError> {
    let otlp = config.metrics.otlp.as_ref();
    let (prefix, bounds, header_labels, routers, services) =
        match (&config.metrics.prometheus, otlp) {
            (None, None) => return Ok(None),
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
            otlp.is_some(),
        )?),
        routers: routers || otlp.is_some_and(|o| o.add_routers_labels),
        services: services || otlp.is_some_and(|o| o.add_services_labels),
    }))
}

/// Whether entry points keep their own request counters
/// (`metrics.prometheus.addEntryPointsLabels` or
/// `metrics.otlp.addEntryPointsLabels`).
pub fn entry_point_metrics(config: &StaticConfig) -> bool {
    let m = &config.metrics;
    m.prometheus
        .as_ref()
        .is_some_and(|p| p.add_entry_points_labels)
        || m.otlp.as_ref().is_some_and(|o| o.add_entry_points_labels)
}

/// A zero duration means "no limit" in Traefik's options.
fn nonzero(d: std::time::Duration) -> Option<std::time::Duration> {
    (!d.is_zero()).then_some(d)
}

#[cfg(test)]
mod tests;
