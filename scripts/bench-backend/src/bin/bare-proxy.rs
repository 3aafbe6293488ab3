//! A bare proxy of the crates gangway's HTTP/2 over TLS is made of (tokio's
//! single-threaded runtime, rustls with ring, h2 towards clients, hyper's
//! HTTP/1.1 client towards the server) with the settings gangway gives
//! them, used the way their documentation shows, and nothing else: no
//! routing, limits, headers, logs or metrics. `scripts/bench` runs it
//! beside the proxies in the browser-shaped cells, so that what a
//! connection and a request cost in these crates alone is measured on the
//! same machine as what they cost in gangway, nginx and HAProxy.
//!
//! Like gangway it keeps a session cache and rotating tickets, offers `h2`
//! by ALPN and keeps up to 1,024 idle connections to the server. Each
//! stream runs in a task of its own, each server connection too (hyper's
//! usual set-up); answers are forwarded frame by frame.
//!
//! Usage: `bare-proxy --listen 127.0.0.1:19104 --upstream 127.0.0.1:19000
//! --cert cert.pem --key key.pem`

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt as _, Empty};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::sync::{Arc, Mutex};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

/// Idle connections kept to the server (gangway's bench configuration,
/// nginx's `keepalive`).
const MAX_IDLE: usize = 1024;

struct Options {
    listen: String,
    upstream: String,
    cert: String,
    key: String,
}

fn options() -> Result<Options, String> {
    let mut o = Options {
        listen: "127.0.0.1:19104".to_owned(),
        upstream: "127.0.0.1:19000".to_owned(),
        cert: String::new(),
        key: String::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(format!("{flag}: missing value"))?;
        match flag.as_str() {
            "--listen" => o.listen = value,
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

type Sender = http1::SendRequest<Empty<Bytes>>;

/// Connections to the server, idle ones on a stack.
struct Upstream {
    addr: String,
    idle: Mutex<Vec<Sender>>,
}

impl Upstream {
    async fn take(&self) -> Option<Sender> {
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

    fn put(&self, sender: Sender) {
        if let Ok(mut idle) = self.idle.lock()
            && idle.len() < MAX_IDLE
        {
            idle.push(sender);
        }
    }
}

/// One stream: its request to the server, the answer back.
async fn exchange(
    upstream: Arc<Upstream>,
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

async fn serve(stream: TcpStream, tls: TlsAcceptor, upstream: Arc<Upstream>) {
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

async fn run(o: Options) -> Result<(), String> {
    let tls = tls(&o)?;
    let listener = TcpListener::bind(&o.listen)
        .await
        .map_err(|e| format!("{}: {e}", o.listen))?;
    let upstream = Arc::new(Upstream {
        addr: o.upstream.clone(),
        idle: Mutex::new(Vec::new()),
    });
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
