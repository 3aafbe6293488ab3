//! OpenTelemetry over OTLP: spans for requests (`trace`) and the exporter
//! that sends them to a collector (`export`). Nothing here runs, and
//! nothing is allocated, for a request when tracing is off; when it is on,
//! each span is one allocation handed to a background task, which batches
//! and sends without ever holding a request up.

pub mod export;
pub mod logs;
pub mod metrics;
pub mod trace;

use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use std::collections::BTreeMap;

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
