//! The backend `scripts/bench` puts behind every proxy. It must never be the
//! bottleneck, so it answers from memory on one thread:
//!
//! - `/json` (and any other path): a 1 KB JSON document;
//! - `/page`: a 26 KB HTML page;
//! - `/slow`: a fixed service time with a fixed number of slots, so its
//!   capacity is `slots / service time`; requests beyond the slots queue
//!   here, as they would in an application's worker pool;
//! - `/grpc`: a gRPC-style answer (`application/grpc`, one framed message,
//!   `grpc-status: 0` in the trailers) after reading the request body.
//!
//! HTTP/1.1 keep-alive and HTTP/2 with prior knowledge (h2c) on one port.
//!
//! With `--tcp ADDR`, also a raw TCP source and sink for the TCP cells: a
//! client sends one byte, `D` (download) or `U` (upload), and a length (8
//! bytes, big-endian); for `D` the server writes that many bytes and closes
//! its side, for `U` it reads that many and answers `K`.
//!
//! Usage: `gangway-bench-backend --listen 127.0.0.1:19000 [--threads 1]
//! [--slots 8] [--service-ms 20] [--tcp 127.0.0.1:19001]`

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode, header};
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::sync::Semaphore;

struct Options {
    listen: SocketAddr,
    tcp: Option<SocketAddr>,
    threads: usize,
    slots: usize,
    service: Duration,
}

fn options() -> Result<Options, String> {
    let mut o = Options {
        listen: "127.0.0.1:19000".parse().expect("a valid literal"),
        tcp: None,
        threads: 1,
        slots: 8,
        service: Duration::from_millis(20),
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let bad = |_| format!("{flag}: bad value `{value}`");
        match flag.as_str() {
            "--listen" => o.listen = value.parse().map_err(|_| format!("{flag}: bad address"))?,
            "--tcp" => o.tcp = Some(value.parse().map_err(|_| format!("{flag}: bad address"))?),
            "--threads" => o.threads = value.parse().map_err(bad)?,
            "--slots" => o.slots = value.parse().map_err(bad)?,
            "--service-ms" => o.service = Duration::from_millis(value.parse().map_err(bad)?),
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    Ok(o)
}

struct State {
    json: Bytes,
    page: Bytes,
    grpc: Bytes,
    slots: Semaphore,
    service: Duration,
}

/// A JSON document of exactly `size` bytes.
fn json_body(size: usize) -> Bytes {
    let mut s = String::from("{\"items\":[");
    let mut i = 0;
    while s.len() < size - 64 {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&format!("{{\"id\":{i},\"name\":\"item-{i}\",\"ok\":true}}"));
        i += 1;
    }
    s.push_str("],\"pad\":\"");
    while s.len() < size - 2 {
        s.push('x');
    }
    s.push_str("\"}");
    Bytes::from(s)
}

fn page_body(size: usize) -> Bytes {
    let mut s = String::from("<!doctype html><html><head><title>bench</title></head><body>\n");
    let mut i = 0;
    while s.len() < size - 32 {
        s.push_str(&format!(
            "<p>Paragraph {i}: the quick brown fox jumps over the lazy dog.</p>\n"
        ));
        i += 1;
    }
    while s.len() < size - 15 {
        s.push(' ');
    }
    s.push_str("</body></html>\n");
    Bytes::from(s)
}

/// A whole body, optionally followed by trailers.
struct Reply {
    data: Option<Bytes>,
    trailers: Option<HeaderMap>,
}

impl Body for Reply {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if let Some(data) = self.data.take() {
            return Poll::Ready(Some(Ok(Frame::data(data))));
        }
        Poll::Ready(self.trailers.take().map(|t| Ok(Frame::trailers(t))))
    }

    fn is_end_stream(&self) -> bool {
        self.data.is_none() && self.trailers.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        match (&self.data, &self.trailers) {
            (Some(d), None) => SizeHint::with_exact(d.len() as u64),
            (None, None) => SizeHint::with_exact(0),
            _ => SizeHint::default(),
        }
    }
}

fn reply(body: Bytes, content_type: &'static str) -> Response<Reply> {
    let mut resp = Response::new(Reply {
        data: Some(body),
        trailers: None,
    });
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp
}

async fn handle(state: Arc<State>, req: Request<Incoming>) -> Result<Response<Reply>, Infallible> {
    match req.uri().path() {
        "/page" => Ok(reply(state.page.clone(), "text/html; charset=utf-8")),
        "/slow" => {
            let _slot = state
                .slots
                .acquire()
                .await
                .expect("the semaphore is never closed");
            tokio::time::sleep(state.service).await;
            Ok(reply(
                Bytes::from_static(b"{\"slow\":true}\n"),
                "application/json",
            ))
        }
        "/grpc" => {
            // Read the whole request, as a unary gRPC handler would.
            if req.into_body().collect().await.is_err() {
                let mut resp = reply(Bytes::new(), "text/plain");
                *resp.status_mut() = StatusCode::BAD_REQUEST;
                return Ok(resp);
            }
            let mut trailers = HeaderMap::new();
            trailers.insert("grpc-status", HeaderValue::from_static("0"));
            let mut resp = Response::new(Reply {
                data: Some(state.grpc.clone()),
                trailers: Some(trailers),
            });
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/grpc"),
            );
            Ok(resp)
        }
        _ => Ok(reply(state.json.clone(), "application/json")),
    }
}

/// What the TCP source and sink read and write at a time: large enough
/// that the proxy in between, not this server, sets the pace.
const TCP_CHUNK: usize = 256 * 1024;

/// The raw TCP source and sink (see the top of this file).
async fn serve_tcp(listener: tokio::net::TcpListener) {
    loop {
        let Ok((mut stream, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        tokio::spawn(async move {
            let mut head = [0u8; 9];
            if stream.read_exact(&mut head).await.is_err() {
                return;
            }
            let length = u64::from_be_bytes(head[1..].try_into().expect("8 bytes"));
            let done = match head[0] {
                b'D' => source(&mut stream, length).await,
                b'U' => sink(&mut stream, length).await,
                _ => Ok(()),
            };
            if let Err(e) = done {
                eprintln!("tcp: {e}");
            }
        });
    }
}

/// Writes `length` bytes, closes this side, and waits for the client to
/// have read them all and closed.
async fn source(stream: &mut tokio::net::TcpStream, mut length: u64) -> std::io::Result<()> {
    let mut buf = vec![0u8; TCP_CHUNK];
    while length > 0 {
        let n = length.min(TCP_CHUNK as u64) as usize;
        stream.write_all(&buf[..n]).await?;
        length -= n as u64;
    }
    stream.shutdown().await?;
    while stream.read(&mut buf).await? > 0 {}
    Ok(())
}

/// Reads `length` bytes, then answers `K`.
async fn sink(stream: &mut tokio::net::TcpStream, mut length: u64) -> std::io::Result<()> {
    let mut buf = vec![0u8; TCP_CHUNK];
    while length > 0 {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        length = length.saturating_sub(n as u64);
    }
    stream.write_all(b"K").await?;
    stream.shutdown().await
}

async fn serve(o: Options) -> std::io::Result<()> {
    if let Some(tcp) = o.tcp {
        let listener = tokio::net::TcpListener::bind(tcp).await?;
        eprintln!(
            "TCP source and sink listening on {}",
            listener.local_addr()?
        );
        tokio::spawn(serve_tcp(listener));
    }
    let mut grpc = vec![0u8; 5];
    let message = json_body(128);
    grpc[1..5].copy_from_slice(&(message.len() as u32).to_be_bytes());
    grpc.extend_from_slice(&message);
    let state = Arc::new(State {
        json: json_body(1024),
        page: page_body(26 * 1024),
        grpc: Bytes::from(grpc),
        slots: Semaphore::new(o.slots),
        service: o.service,
    });
    let listener = tokio::net::TcpListener::bind(o.listen).await?;
    eprintln!("backend listening on {}", listener.local_addr()?);
    let builder = auto::Builder::new(TokioExecutor::new());
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                eprintln!("accept: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let state = state.clone();
        let builder = builder.clone();
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |req| handle(state.clone(), req));
            let _ = builder.serve_connection(TokioIo::new(stream), svc).await;
        });
    }
}

fn main() {
    let o = match options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("gangway-bench-backend: {e}");
            std::process::exit(2);
        }
    };
    let runtime = if o.threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(o.threads)
            .enable_all()
            .build()
    };
    let result = runtime.and_then(|rt| rt.block_on(serve(o)));
    if let Err(e) = result {
        eprintln!("gangway-bench-backend: {e}");
        std::process::exit(1);
    }
}
