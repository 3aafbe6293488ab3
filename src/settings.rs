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

/// The Prometheus settings compile hands to routers and services, when
/// `metrics.prometheus` is on.
pub fn metrics(
    config: &StaticConfig,
) -> Result<Option<MetricsSettings>, crate::metrics::MetricsError> {
    let Some(p) = &config.metrics.prometheus else {
        return Ok(None);
    };
    let bounds: Vec<f64> = p.buckets.iter().map(|b| b.0).collect();
    Ok(Some(MetricsSettings {
        exporter: Arc::new(crate::metrics::Exporter::with_header_labels(
            &p.prefix,
            &bounds,
            &p.header_labels,
        )?),
        routers: p.add_routers_labels,
        services: p.add_services_labels,
    }))
}

/// Whether entry points keep their own request counters
/// (`metrics.prometheus.addEntryPointsLabels`).
pub fn entry_point_metrics(config: &StaticConfig) -> bool {
    config
        .metrics
        .prometheus
        .as_ref()
        .is_some_and(|p| p.add_entry_points_labels)
}

/// A zero duration means "no limit" in Traefik's options.
fn nonzero(d: std::time::Duration) -> Option<std::time::Duration> {
    (!d.is_zero()).then_some(d)
}

#[cfg(test)]
mod tests;
