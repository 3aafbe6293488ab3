//! Log records over OTLP: gangway's own log (`log.otlp`) and the access
//! log (`accessLog.otlp`), Traefik 3.3's options.
//!
//! Records are handed to a [`LogSink`]: a bounded queue that never waits,
//! counting what it drops when full. One background task per sink batches
//! them and sends each batch with an [`Exporter`], so a slow or missing
//! collector costs dropped records, never a held-up request or log call.

use super::OtelError;
use super::export::{Exporter, Signal};
use crate::config::static_config::otlp::OtlpLogs;
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::logs::v1 as proto;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::sync::mpsc;

/// Records waiting for the exporter at most; past it new ones are dropped.
const QUEUE: usize = 4096;

pub use proto::LogRecord;

/// Where records are queued for export.
#[derive(Debug)]
pub struct LogSink {
    queue: mpsc::Sender<LogRecord>,
    dropped: AtomicU64,
}

/// The other end of a [`LogSink`], for its export task.
#[derive(Debug)]
pub struct LogQueue(mpsc::Receiver<LogRecord>);

impl LogSink {
    /// A sink and its queue; records wait there until
    /// [`spawn_export`] starts sending them.
    pub fn new() -> (Arc<LogSink>, LogQueue) {
        let (queue, rx) = mpsc::channel(QUEUE);
        let sink = Arc::new(LogSink {
            queue,
            dropped: AtomicU64::new(0),
        });
        (sink, LogQueue(rx))
    }

    /// Queues a record; never waits. A full queue drops it.
    pub fn send(&self, record: LogRecord) {
        if self.queue.try_send(record).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Records dropped because the exporter fell behind.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// Starts sending what `queue` receives to the collector `config` names;
/// `section` names the options in errors (`log.otlp`, `accessLog.otlp`).
pub fn spawn_export(
    queue: LogQueue,
    config: &OtlpLogs,
    section: &'static str,
) -> Result<super::Pusher, OtelError> {
    let collector = config.collector();
    let exporter = Exporter::new(Some(&collector), Signal::Logs, section)?;
    let resource = super::resource(&config.service_name, &config.resource_attributes);
    Ok(super::Pusher::spawn(|stop| {
        export(queue.0, exporter, resource, section, stop)
    }))
}

/// Batches records and exports them until the sink is gone, or until
/// `stop`: then what is queued goes in a last export.
async fn export(
    rx: mpsc::Receiver<LogRecord>,
    exporter: Exporter,
    resource: opentelemetry_proto::tonic::resource::v1::Resource,
    section: &'static str,
    stop: Arc<tokio::sync::Notify>,
) {
    let mut failing = false;
    let mut batches = super::export::Batches::new(rx, stop);
    while let Some(batch) = batches.next().await {
        send(&exporter, &resource, section, batch, &mut failing).await;
    }
}

async fn send(
    exporter: &Exporter,
    resource: &opentelemetry_proto::tonic::resource::v1::Resource,
    section: &'static str,
    batch: Vec<LogRecord>,
    failing: &mut bool,
) {
    let message = encode(resource, batch);
    match exporter.send(message).await {
        Ok(()) => *failing = false,
        // Said once per outage, and at debug level: the log's own
        // records would otherwise feed the outage they report.
        Err(e) => {
            if !*failing {
                tracing::debug!(collector = %exporter.uri(), error = %e, "{section}: records not exported; dropping them until the collector answers");
            }
            *failing = true;
        }
    }
}

/// One export request holding `batch`.
pub fn encode(
    resource: &opentelemetry_proto::tonic::resource::v1::Resource,
    batch: Vec<LogRecord>,
) -> Vec<u8> {
    use prost::Message;
    ExportLogsServiceRequest {
        resource_logs: vec![proto::ResourceLogs {
            resource: Some(resource.clone()),
            scope_logs: vec![proto::ScopeLogs {
                scope: Some(super::scope()),
                log_records: batch,
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
    .encode_to_vec()
}

/// A record made now, with this severity, body and attributes.
pub fn record(severity: tracing::Level, body: String, attributes: Vec<KeyValue>) -> LogRecord {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    let (number, text) = severity_of(severity);
    LogRecord {
        time_unix_nano: now,
        observed_time_unix_nano: now,
        severity_number: number as i32,
        severity_text: text.to_owned(),
        body: Some(AnyValue {
            value: Some(any_value::Value::StringValue(body)),
        }),
        attributes,
        ..Default::default()
    }
}

/// OTLP's severity number and text for a level.
fn severity_of(level: tracing::Level) -> (proto::SeverityNumber, &'static str) {
    use proto::SeverityNumber as N;
    match level {
        tracing::Level::TRACE => (N::Trace, "TRACE"),
        tracing::Level::DEBUG => (N::Debug, "DEBUG"),
        tracing::Level::INFO => (N::Info, "INFO"),
        tracing::Level::WARN => (N::Warn, "WARN"),
        tracing::Level::ERROR => (N::Error, "ERROR"),
    }
}

/// An attribute of any value.
pub fn attribute(key: &str, value: any_value::Value) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue { value: Some(value) }),
        ..Default::default()
    }
}

/// Sends gangway's own log events to a [`LogSink`] as records: the
/// message as body, the level as severity, the other fields as
/// attributes. Runs under the log's level filter, as the lines do.
pub struct LogLayer {
    sink: Arc<LogSink>,
}

impl LogLayer {
    /// A layer feeding `sink`.
    pub fn new(sink: Arc<LogSink>) -> Self {
        LogLayer { sink }
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for LogLayer {
    fn on_event(
        &self,
        event: &tracing::Event<'_>,
        _ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let meta = event.metadata();
        fields
            .attributes
            .push(super::string_attribute("code.namespace", meta.target()));
        self.sink
            .send(record(*meta.level(), fields.body, fields.attributes));
    }
}

#[derive(Default)]
struct Fields {
    body: String,
    attributes: Vec<KeyValue>,
}

impl tracing::field::Visit for Fields {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        if field.name() == "message" {
            value.clone_into(&mut self.body);
        } else {
            self.attributes
                .push(super::string_attribute(field.name(), value));
        }
    }

    fn record_i64(&mut self, field: &tracing::field::Field, value: i64) {
        self.attributes
            .push(attribute(field.name(), any_value::Value::IntValue(value)));
    }

    fn record_u64(&mut self, field: &tracing::field::Field, value: u64) {
        let value = i64::try_from(value).unwrap_or(i64::MAX);
        self.attributes
            .push(attribute(field.name(), any_value::Value::IntValue(value)));
    }

    fn record_bool(&mut self, field: &tracing::field::Field, value: bool) {
        self.attributes
            .push(attribute(field.name(), any_value::Value::BoolValue(value)));
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        let text = format!("{value:?}");
        if field.name() == "message" {
            self.body = text;
        } else {
            self.attributes
                .push(super::string_attribute(field.name(), &text));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing_subscriber::layer::SubscriberExt;

    #[test]
    fn events_become_records_with_severity_body_and_attributes() {
        let (sink, mut queue) = LogSink::new();
        let subscriber = tracing_subscriber::registry().with(LogLayer::new(sink));
        tracing::subscriber::with_default(subscriber, || {
            tracing::warn!(router = "app@file", tries = 3u64, "server down");
        });
        let r = queue.0.try_recv().expect("one record");
        assert_eq!(r.severity_text, "WARN");
        assert_eq!(r.severity_number, proto::SeverityNumber::Warn as i32);
        assert_eq!(
            r.body.and_then(|b| b.value),
            Some(any_value::Value::StringValue("server down".to_owned()))
        );
        let router = r.attributes.iter().find(|a| a.key == "router").unwrap();
        assert_eq!(
            router.value.clone().and_then(|v| v.value),
            Some(any_value::Value::StringValue("app@file".to_owned()))
        );
        let tries = r.attributes.iter().find(|a| a.key == "tries").unwrap();
        assert_eq!(
            tries.value.clone().and_then(|v| v.value),
            Some(any_value::Value::IntValue(3))
        );
    }

    #[test]
    fn a_full_queue_drops_and_counts() {
        let (sink, _queue) = LogSink::new();
        for _ in 0..QUEUE + 5 {
            sink.send(record(tracing::Level::INFO, String::new(), Vec::new()));
        }
        assert_eq!(sink.dropped(), 5);
    }
}
