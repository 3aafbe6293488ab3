//! OpenTelemetry over OTLP: spans for requests (`trace`) and the exporter
//! that sends them to a collector (`export`). Nothing here runs, and
//! nothing is allocated, for a request when tracing is off; when it is on,
//! each span is one allocation handed to a background task, which batches
//! and sends without ever holding a request up.

pub mod export;
pub mod logs;
pub mod metrics;
pub mod propagate;
pub mod trace;

use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// How long the last push at a graceful stop may take, every signal
/// together (the bound Traefik gives its tracer's shutdown): a collector
/// that hangs delays the exit by no more than this.
pub const LAST_PUSH: Duration = Duration::from_secs(5);

/// A background export task (spans, metric pushes, log records) that,
/// told to stop, sends what it still holds and ends.
#[derive(Debug)]
pub struct Pusher {
    stop: Arc<Notify>,
    task: tokio::task::JoinHandle<()>,
}

impl Pusher {
    /// Spawns `task`, which is given the notification that asks it to
    /// make its last push and return.
    pub fn spawn<F>(task: impl FnOnce(Arc<Notify>) -> F) -> Pusher
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        let stop = Arc::new(Notify::new());
        let task = tokio::spawn(task(stop.clone()));
        Pusher { stop, task }
    }

    /// Asks for the last push and waits for it until `deadline`; past
    /// it the task is abandoned.
    pub async fn finish(mut self, deadline: tokio::time::Instant) {
        // A stored permit: the task sees it even if it is busy sending.
        self.stop.notify_one();
        if tokio::time::timeout_at(deadline, &mut self.task)
            .await
            .is_err()
        {
            self.task.abort();
            tracing::warn!(
                "the last metrics, spans or logs push did not end within {LAST_PUSH:?}; what it held is lost"
            );
        }
    }
}

/// The moments of a periodic push: every `interval` from the start, and
/// once more when the pusher is asked to stop.
pub struct PushTimes {
    ticks: tokio::time::Interval,
    stop: Arc<Notify>,
    stopped: bool,
}

impl PushTimes {
    /// Push times every `interval` (not at once: nothing has been counted
    /// yet), ending with the push `stop` asks for.
    pub async fn new(interval: Duration, stop: Arc<Notify>) -> PushTimes {
        let mut ticks = tokio::time::interval(interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // The first tick is immediate.
        ticks.tick().await;
        PushTimes {
            ticks,
            stop,
            stopped: false,
        }
    }

    /// Waits for the next push; `false` once the last one has been made.
    pub async fn next(&mut self) -> bool {
        if self.stopped {
            return false;
        }
        tokio::select! {
            biased;
            () = self.stop.notified() => self.stopped = true,
            _ = self.ticks.tick() => {}
        }
        true
    }
}

/// Makes every pusher's last push at once, within [`LAST_PUSH`].
pub async fn finish_all(pushers: Vec<Pusher>) {
    let deadline = tokio::time::Instant::now() + LAST_PUSH;
    futures_util::future::join_all(pushers.into_iter().map(|p| p.finish(deadline))).await;
}

/// What went wrong setting up an OTLP exporter, named by the option at
/// fault.
#[derive(Debug, thiserror::Error)]
pub enum OtelError {
    /// The endpoint makes no URL gangway can send to.
    #[error("{option}: `{endpoint}` is not a usable collector address ({why})")]
    BadEndpoint {
        /// The option, such as `tracing.otlp.grpc.endpoint`.
        option: &'static str,
        /// The value given.
        endpoint: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A header of `headers` is not a valid HTTP header.
    #[error("{option}: `{name}` is not a valid header")]
    BadHeader {
        /// The option, such as `tracing.otlp.http.headers`.
        option: &'static str,
        /// The header's name.
        name: String,
    },
    /// The TLS options make no client configuration.
    #[error("{option}: {source}")]
    Tls {
        /// The option, such as `tracing.otlp.http.tls`.
        option: &'static str,
        /// Why.
        source: crate::client::ClientError,
    },
}

/// The resource every export of one signal names: `service.name`, then
/// the configured attributes (a `service.name` among them wins).
pub(crate) fn resource(
    service_name: &str,
    attributes: &BTreeMap<String, String>,
) -> opentelemetry_proto::tonic::resource::v1::Resource {
    let mut list = Vec::with_capacity(attributes.len() + 2);
    if !attributes.contains_key("service.name") {
        list.push(string_attribute("service.name", service_name));
    }
    list.push(string_attribute(
        "service.version",
        env!("CARGO_PKG_VERSION"),
    ));
    for (k, v) in attributes {
        list.push(string_attribute(k, v));
    }
    opentelemetry_proto::tonic::resource::v1::Resource {
        attributes: list,
        ..Default::default()
    }
}

/// One string attribute.
pub(crate) fn string_attribute(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(value.to_owned())),
        }),
        ..Default::default()
    }
}

/// The instrumentation scope gangway reports its signals under.
pub(crate) fn scope() -> opentelemetry_proto::tonic::common::v1::InstrumentationScope {
    opentelemetry_proto::tonic::common::v1::InstrumentationScope {
        name: "gangway".to_owned(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        ..Default::default()
    }
}
