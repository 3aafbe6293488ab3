//! A test collector built on OpenTelemetry's own protocol definitions (the
//! `opentelemetry-proto` crate): one OTLP/gRPC receiver (tonic) and one
//! OTLP/HTTP protobuf receiver, each on 127.0.0.1 port 0, recording every
//! export that arrives. Plus collectors that never answer.

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use opentelemetry_proto::tonic::collector::logs::v1::logs_service_server::{
    LogsService, LogsServiceServer,
};
use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsServiceRequest, ExportLogsServiceResponse,
};
use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_server::{
    MetricsService, MetricsServiceServer,
};
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::net::TcpListener;

/// Everything a collector received.
#[derive(Default)]
pub struct Received {
    pub traces: Vec<ExportTraceServiceRequest>,
    pub metrics: Vec<ExportMetricsServiceRequest>,
    pub logs: Vec<ExportLogsServiceRequest>,
}

/// A running collector.
pub struct Collector {
    pub addr: SocketAddr,
    received: Arc<Mutex<Received>>,
    task: tokio::task::JoinHandle<()>,
}

#[derive(Clone)]
struct Store(Arc<Mutex<Received>>);

#[tonic::async_trait]
impl TraceService for Store {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        self.0.lock().unwrap().traces.push(request.into_inner());
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

#[tonic::async_trait]
impl MetricsService for Store {
    async fn export(
        &self,
        request: tonic::Request<ExportMetricsServiceRequest>,
    ) -> Result<tonic::Response<ExportMetricsServiceResponse>, tonic::Status> {
        self.0.lock().unwrap().metrics.push(request.into_inner());
        Ok(tonic::Response::new(ExportMetricsServiceResponse::default()))
    }
}

#[tonic::async_trait]
impl LogsService for Store {
    async fn export(
        &self,
        request: tonic::Request<ExportLogsServiceRequest>,
    ) -> Result<tonic::Response<ExportLogsServiceResponse>, tonic::Status> {
        self.0.lock().unwrap().logs.push(request.into_inner());
        Ok(tonic::Response::new(ExportLogsServiceResponse::default()))
    }
}

impl Collector {
    /// An OTLP/gRPC collector (plain HTTP/2).
    pub async fn grpc() -> Collector {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let received = Arc::new(Mutex::new(Received::default()));
        let store = Store(received.clone());
        let task = tokio::spawn(async move {
            let _ = tonic::transport::Server::builder()
                .add_service(TraceServiceServer::new(store.clone()))
                .add_service(MetricsServiceServer::new(store.clone()))
                .add_service(LogsServiceServer::new(store))
                .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener))
                .await;
        });
        Collector {
            addr,
            received,
            task,
        }
    }

    /// An OTLP/HTTP collector: protobuf bodies POSTed to `/v1/traces`,
    /// `/v1/metrics` and `/v1/logs`.
    pub async fn http() -> Collector {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let received = Arc::new(Mutex::new(Received::default()));
        let store = received.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let store = store.clone();
                tokio::spawn(async move {
                    let svc = service_fn(move |req: Request<Incoming>| {
                        let store = store.clone();
                        async move { Ok::<_, Infallible>(take_http(req, &store).await) }
                    });
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                });
            }
        });
        Collector {
            addr,
            received,
            task,
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        self.addr.to_string()
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<Span> {
        self.received
            .lock()
            .unwrap()
            .traces
            .iter()
            .flat_map(|t| &t.resource_spans)
            .flat_map(|r| &r.scope_spans)
            .flat_map(|s| s.spans.clone())
            .collect()
    }

    /// What was received so far, to read under the lock.
    pub fn with<T>(&self, f: impl FnOnce(&Received) -> T) -> T {
        f(&self.received.lock().unwrap())
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn take_http(req: Request<Incoming>, store: &Mutex<Received>) -> Response<Full<Bytes>> {
    let path = req.uri().path().to_owned();
    let ok_type = req
        .headers()
        .get("content-type")
        .is_some_and(|v| v.as_bytes() == b"application/x-protobuf");
    let Ok(body) = req.into_body().collect().await.map(|b| b.to_bytes()) else {
        return status(StatusCode::BAD_REQUEST);
    };
    if !ok_type {
        return status(StatusCode::UNSUPPORTED_MEDIA_TYPE);
    }
    let mut store = store.lock().unwrap();
    let decoded = match path.as_str() {
        "/v1/traces" => ExportTraceServiceRequest::decode(body).map(|m| store.traces.push(m)),
        "/v1/metrics" => ExportMetricsServiceRequest::decode(body).map(|m| store.metrics.push(m)),
        "/v1/logs" => ExportLogsServiceRequest::decode(body).map(|m| store.logs.push(m)),
        _ => return status(StatusCode::NOT_FOUND),
    };
    match decoded {
        Ok(()) => {
            let mut resp = Response::new(Full::new(Bytes::new()));
            resp.headers_mut()
                .insert("content-type", "application/x-protobuf".parse().unwrap());
            resp
        }
        Err(_) => status(StatusCode::BAD_REQUEST),
    }
}

fn status(code: StatusCode) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::new()));
    *r.status_mut() = code;
    r
}

/// A collector that accepts connections and never answers.
pub struct Hanging {
    pub addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Hanging {
    pub async fn start() -> Hanging {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let task = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((stream, _)) = listener.accept().await {
                held.push(stream);
            }
        });
        Hanging { addr, task }
    }
}

impl Drop for Hanging {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A span attribute's value as text (string, number, or the first of a
/// list).
pub fn attribute(attributes: &[KeyValue], key: &str) -> Option<String> {
    let value = attributes.iter().find(|kv| kv.key == key)?.value.as_ref()?;
    text(value)
}

fn text(value: &AnyValue) -> Option<String> {
    match value.value.as_ref()? {
        any_value::Value::StringValue(s) => Some(s.clone()),
        any_value::Value::IntValue(i) => Some(i.to_string()),
        any_value::Value::DoubleValue(d) => Some(d.to_string()),
        any_value::Value::BoolValue(b) => Some(b.to_string()),
        any_value::Value::ArrayValue(a) => a.values.first().and_then(text),
        _ => None,
    }
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
