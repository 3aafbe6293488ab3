//! What gangway tells: access logs, its own log, Prometheus, pushed metrics
//! and OpenTelemetry.

mod access_log;
mod logs;
mod metrics;
mod metrics_push;
mod otlp;
mod prometheus;
