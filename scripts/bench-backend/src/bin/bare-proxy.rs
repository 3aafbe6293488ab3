//! A bare proxy of the crates gangway is made of (tokio's single-threaded
//! runtime; rustls with ring and h2 towards HTTPS clients, hyper's HTTP/1.1
//! server towards plain ones; hyper's HTTP/1.1 client towards the server)
//! with the settings gangway gives them, used the way their documentation
//! shows, and nothing else: no routing, limits, forwarded headers, logs or
//! metrics. `scripts/bench` runs it beside the proxies in the
//! browser-shaped cells and in `--callgrind`, so that what a connection
//! and a request cost in these crates alone is measured on the same
//! machine as what they cost in gangway, nginx and HAProxy.
//!
//! Like gangway it keeps a session cache and rotating tickets, offers `h2`
//! by ALPN and keeps up to 1,024 idle connections to the server. Each
//! stream runs in a task of its own, each connection too (hyper's usual
//! set-up); answers are forwarded frame by frame, and a server connection
//! goes back to the pool once its answer has ended.
//!
//! Usage: `bare-proxy --listen 127.0.0.1:19104 [--listen-h1 127.0.0.1:19105]
//! --upstream 127.0.0.1:19000 --cert cert.pem --key key.pem`

use bytes::Bytes;
use http::{Request, Response};
use http_body::{Body, Frame, SizeHint};
use http_body_util::{BodyExt as _, Empty};
use hyper::body::Incoming;
use hyper::client::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

/// Idle connections kept to the server (gangway's bench configuration,
/// nginx's `keepalive`).
const MAX_IDLE: usize = 1024;

struct Options {
    listen: String,
    listen_h1: Option<String>,
    upstream: String,
    cert: String,
    key: String,
}

fn options() -> Result<Options, String> {
    let mut o = Options {
        listen: "127.0.0.1:19104".to_owned(),
        listen_h1: None,
        upstream: "127.0.0.1:19000".to_owned(),
        cert: String::new(),
        key: String::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(format!("{flag}: missing value"))?;
        match flag.as_str() {
            "--listen" => o.listen = value,
            "--listen-h1" => o.listen_h1 = Some(value),
            "--upstream" => o.upstream = value,
            "--cert" => o.cert = value,
            "--key" => o.key = value,
            other => return Err(format!("unknown option {other}")),
        }
    }
    if o.cert.is_empty() || o.key.is_empty() {
        return Err("--cert and --key are required".to_owned());
    }
    Ok(o)
}

/// gangway's TLS entry point as far as a connection's cost goes: the
/// certificate, a session cache of 4,096, rustls' rotating ticketer, ALPN.
fn tls(o: &Options) -> Result<TlsAcceptor, String> {
    let chain = CertificateDer::pem_file_iter(&o.cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("{}: {e}", o.cert))?;
    let key = PrivateKeyDer::from_pem_file(&o.key).map_err(|e| format!("{}: {e}", o.key))?;
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| e.to_string())?
    .with_no_client_auth()
    .with_single_cert(chain, key)
    .map_err(|e| e.to_string())?;
    config.alpn_protocols = vec![b"h2".to_vec()];
    config.session_storage = rustls::server::ServerSessionMemoryCache::new(4096);
    config.ticketer = rustls::crypto::ring::Ticketer::new().map_err(|e| e.to_string())?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// gangway's HTTP/2 settings (src/proxy/h2_server.rs and the entry point's
/// defaults).
fn h2_builder() -> h2::server::Builder {
    let mut b = h2::server::Builder::new();
    b.initial_window_size(1024 * 1024)
        .initial_connection_window_size(1024 * 1024)
        .max_frame_size(16 * 1024)
        .max_send_buffer_size(400 * 1024)
        .max_concurrent_streams(250);
    b
}

/// Connections to the server, idle ones on a stack; `B` is the body of the
/// requests they carry.
struct Upstream<B> {
    addr: String,
    idle: Mutex<Vec<http1::SendRequest<B>>>,
}

impl<B> Upstream<B>
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    fn new(addr: &str) -> Arc<Self> {
        Arc::new(Upstream {
            addr: addr.to_owned(),
            idle: Mutex::new(Vec::new()),
        })
    }

    async fn take(&self) -> Option<http1::SendRequest<B>> {
        loop {
            let popped = self.idle.lock().ok()?.pop();
            let Some(mut sender) = popped else {
                break;
            };
            // Ready as soon as its task has seen the last answer end;
            // closed ones are dropped.
            if sender.ready().await.is_ok() {
                return Some(sender);
            }
        }
        let stream = TcpStream::connect(&self.addr).await.ok()?;
        let _ = stream.set_nodelay(true);
        let (sender, conn) = http1::handshake(TokioIo::new(stream)).await.ok()?;
        tokio::spawn(conn);
        Some(sender)
    }

    fn put(&self, sender: http1::SendRequest<B>) {
        if let Ok(mut idle) = self.idle.lock()
            && idle.len() < MAX_IDLE
        {
            idle.push(sender);
        }
    }
}

/// One stream: its request to the server, the answer back.
async fn exchange(
    upstream: Arc<Upstream<Empty<Bytes>>>,
    req: Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<Bytes>,
) {
    let Some(mut sender) = upstream.take().await else {
        respond.send_reset(h2::Reason::REFUSED_STREAM);
        return;
    };
    let (parts, _) = req.into_parts();
    let mut out = Request::new(Empty::new());
    *out.method_mut() = parts.method;
    *out.uri_mut() = parts.uri.path_and_query().map_or_else(
        || "/".parse().expect("a valid URI"),
        |pq| pq.as_str().parse().unwrap_or_default(),
    );
    if let Some(host) = parts.uri.authority()
        && let Ok(value) = host.as_str().parse()
    {
        out.headers_mut().insert(http::header::HOST, value);
    }
    let Ok(answer) = sender.send_request(out).await else {
        respond.send_reset(h2::Reason::INTERNAL_ERROR);
        return;
    };
    let (mut head, mut body) = answer.into_parts();
    // Values read from the server would otherwise pin its read buffer in
    // the client connection's HPACK table (as gangway does, they are copied).
    for value in head.headers.values_mut() {
        if let Ok(own) = http::HeaderValue::from_bytes(value.as_bytes()) {
            *value = own;
        }
    }
    head.headers.remove(http::header::CONNECTION);
    head.headers.remove("keep-alive");
    let Ok(mut send) = respond.send_response(Response::from_parts(head, ()), false) else {
        return;
    };
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => {
                if let Ok(data) = frame.into_data()
                    && send.send_data(data, false).is_err()
                {
                    return;
                }
            }
            Err(_) => {
                send.send_reset(h2::Reason::INTERNAL_ERROR);
                return;
            }
        }
    }
    if send.send_data(Bytes::new(), true).is_ok() {
        upstream.put(sender);
    }
}

async fn serve(stream: TcpStream, tls: TlsAcceptor, upstream: Arc<Upstream<Empty<Bytes>>>) {
    let _ = stream.set_nodelay(true);
    let Ok(stream) = tls.accept(stream).await else {
        return;
    };
    let Ok(mut conn) = h2_builder().handshake::<_, Bytes>(stream).await else {
        return;
    };
    while let Some(Ok((req, respond))) = conn.accept().await {
        tokio::spawn(exchange(upstream.clone(), req, respond));
    }
}

/// An answer's body from the server, passed on as it arrives; once it has
/// ended, the server connection goes back to the pool.
struct Returning {
    body: Incoming,
    sender: Option<(http1::SendRequest<Incoming>, Arc<Upstream<Incoming>>)>,
}

impl Body for Returning {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        if let Poll::Ready(None) = polled
            && let Some((sender, upstream)) = self.sender.take()
        {
            upstream.put(sender);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

type Answer = Response<http_body_util::Either<Returning, Empty<Bytes>>>;

fn status(code: http::StatusCode) -> Answer {
    let mut answer = Response::new(http_body_util::Either::Right(Empty::new()));
    *answer.status_mut() = code;
    answer
}

/// One plain HTTP/1.1 request: on to the server, its answer back.
async fn forward(upstream: Arc<Upstream<Incoming>>, mut req: Request<Incoming>) -> Answer {
    let Some(mut sender) = upstream.take().await else {
        return status(http::StatusCode::BAD_GATEWAY);
    };
    // Hop by hop: the client's wish to close is not the server
    // connection's.
    req.headers_mut().remove(http::header::CONNECTION);
    let Ok(answer) = sender.send_request(req).await else {
        return status(http::StatusCode::BAD_GATEWAY);
    };
    let (mut head, body) = answer.into_parts();
    head.headers.remove(http::header::CONNECTION);
    head.headers.remove("keep-alive");
    let body = Returning {
        body,
        sender: Some((sender, upstream)),
    };
    Response::from_parts(head, http_body_util::Either::Left(body))
}

/// gangway's HTTP/1.1 server settings (src/proxy.rs, `HttpServers`).
fn h1_builder() -> hyper::server::conn::http1::Builder {
    let mut b = hyper::server::conn::http1::Builder::new();
    b.timer(TokioTimer::new()).header_read_timeout(None);
    b
}

async fn serve_h1(stream: TcpStream, upstream: Arc<Upstream<Incoming>>) {
    let _ = stream.set_nodelay(true);
    let service = hyper::service::service_fn(move |req| {
        let upstream = upstream.clone();
        async move { Ok::<_, Infallible>(forward(upstream, req).await) }
    });
    let _ = h1_builder()
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

async fn accept_h1(listener: TcpListener, upstream: Arc<Upstream<Incoming>>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        tokio::spawn(serve_h1(stream, upstream.clone()));
    }
}

async fn run(o: Options) -> Result<(), String> {
    let tls = tls(&o)?;
    let listener = TcpListener::bind(&o.listen)
        .await
        .map_err(|e| format!("{}: {e}", o.listen))?;
    if let Some(addr) = &o.listen_h1 {
        let plain = TcpListener::bind(addr)
            .await
            .map_err(|e| format!("{addr}: {e}"))?;
        tokio::spawn(accept_h1(plain, Upstream::new(&o.upstream)));
    }
    let upstream = Upstream::new(&o.upstream);
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        tokio::spawn(serve(stream, tls.clone(), upstream.clone()));
    }
}

fn main() {
    let o = match options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("bare-proxy: {e}");
            std::process::exit(2);
        }
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string());
    if let Err(e) = rt.and_then(|rt| rt.block_on(run(o))) {
        eprintln!("bare-proxy: {e}");
        std::process::exit(1);
    }
}
