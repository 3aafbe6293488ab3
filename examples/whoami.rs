//! A stand-in for the `traefik/whoami` image, for the compose examples and
//! their tests on machines that cannot pull images: the same flags
//! (`--port`, `--name`, `WHOAMI_PORT_NUMBER`, `WHOAMI_NAME`), the same paths
//! (`/`, `/api`, `/bench`, `/data`, `/health`) and the same gRPC service
//! (`whoami.Whoami/Whoami` and `/Bench`, over h2c on the same port), so
//! that an example's README prints the same lines with either image.
//!
//! Differences: it listens on 127.0.0.1 unless `--bind` (or `WHOAMI_BIND`)
//! says otherwise, because the project's tests run containers on the host
//! network and must stay on loopback; there is no TLS and no `/echo`
//! WebSocket. Two additions for the Swarm tests, where every task of a
//! service on the host network listens on the same address:
//! `--reuse-port` (`WHOAMI_REUSE_PORT=true`) lets several instances share
//! one port (the kernel spreads connections between them), and
//! `--drain SECONDS` (`WHOAMI_DRAIN`) makes SIGTERM a graceful shutdown:
//! it goes on answering for that long, each answer closing its connection
//! so that no client keeps one to an instance about to exit.
//!
//! `scripts/image whoami` builds it into the image `gangway-whoami:local`.

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};

type Body = BoxBody<Bytes, Infallible>;

struct Settings {
    name: String,
    port: u16,
    bind: String,
    reuse_port: bool,
    drain: std::time::Duration,
}

struct State {
    name: String,
    hostname: String,
    ips: Vec<String>,
    /// What `GET /health` answers; `POST /health` sets it.
    health: AtomicU16,
    /// SIGTERM came and the drain runs: every answer closes its connection.
    draining: AtomicBool,
}

fn main() {
    let settings = match parse_args(std::env::args().skip(1)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("whoami: {e}");
            std::process::exit(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("whoami: cannot start the async runtime");
    // As PID 1 in a container a process gets no default signal handling, so
    // without this `docker stop` would wait its whole timeout and then kill.
    let drain = settings.drain;
    let state = Arc::new(State {
        name: settings.name.clone(),
        hostname: std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_owned())
            .unwrap_or_default(),
        ips: addresses(),
        health: AtomicU16::new(200),
        draining: AtomicBool::new(false),
    });
    let served = runtime.block_on(async {
        tokio::select! {
            served = serve(&settings, state.clone()) => served,
            () = async {
                stop_signal().await;
                if !drain.is_zero() {
                    eprintln!("Draining for {}s", drain.as_secs());
                    state.draining.store(true, Ordering::Relaxed);
                    tokio::time::sleep(drain).await;
                }
            } => Ok(()),
        }
    });
    if let Err(e) = served {
        eprintln!("whoami: {e}");
        std::process::exit(1);
    }
}

/// SIGTERM or SIGINT: traefik/whoami exits at once on either.
async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}

/// Go's flag syntax, as traefik/whoami takes it: `-port 80`, `--port=80`.
fn parse_args(args: impl Iterator<Item = String>) -> Result<Settings, String> {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let mut port = env("WHOAMI_PORT_NUMBER").unwrap_or_else(|| "80".to_owned());
    let mut name = env("WHOAMI_NAME").unwrap_or_default();
    let mut bind = env("WHOAMI_BIND").unwrap_or_else(|| "127.0.0.1".to_owned());
    let mut reuse_port = env("WHOAMI_REUSE_PORT").unwrap_or_default();
    let mut drain = env("WHOAMI_DRAIN").unwrap_or_else(|| "0".to_owned());
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        let flag = arg.trim_start_matches('-');
        let (key, inline) = match flag.split_once('=') {
            Some((k, v)) => (k, Some(v.to_owned())),
            None => (flag, None),
        };
        // Go's boolean flags: `-verbose`, or `-verbose=true`.
        if key == "verbose" {
            continue;
        }
        if key == "reuse-port" {
            reuse_port = inline.unwrap_or_else(|| "true".to_owned());
            continue;
        }
        let value = match inline {
            Some(v) => v,
            None => args
                .next()
                .ok_or_else(|| format!("flag `{arg}` needs a value"))?,
        };
        match key {
            "port" => port = value,
            "name" => name = value,
            "bind" => bind = value,
            "drain" => drain = value,
            "cert" | "key" | "cacert" => return Err("TLS is not supported".to_owned()),
            _ => return Err(format!("unknown flag `{arg}`")),
        }
    }
    let port = port
        .parse()
        .map_err(|_| format!("`{port}` is not a port number"))?;
    let reuse_port = match reuse_port.as_str() {
        "" | "false" | "0" => false,
        "true" | "1" => true,
        other => return Err(format!("`{other}` is not true or false (reuse-port)")),
    };
    let drain = drain
        .trim_end_matches('s')
        .parse()
        .map(std::time::Duration::from_secs)
        .map_err(|_| format!("`{drain}` is not a number of seconds (drain)"))?;
    Ok(Settings {
        name,
        port,
        bind,
        reuse_port,
        drain,
    })
}

async fn serve(settings: &Settings, state: Arc<State>) -> std::io::Result<()> {
    let addr: SocketAddr = tokio::net::lookup_host((settings.bind.as_str(), settings.port))
        .await?
        .next()
        .ok_or_else(|| std::io::Error::other(format!("`{}` has no address", settings.bind)))?;
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.set_reuseport(settings.reuse_port)?;
    socket.bind(addr)?;
    let listener = socket.listen(1024)?;
    eprintln!("Starting up on port {}", settings.port);
    loop {
        let (stream, peer) = listener.accept().await?;
        let state = state.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req| {
                let state = state.clone();
                async move {
                    let http1 = req.version() < http::Version::HTTP_2;
                    let mut resp = handle(&state, req, peer).await;
                    if http1 && state.draining.load(Ordering::Relaxed) {
                        resp.headers_mut()
                            .insert(header::CONNECTION, HeaderValue::from_static("close"));
                    }
                    Ok::<_, Infallible>(resp)
                }
            });
            // HTTP/1.1, and HTTP/2 with prior knowledge (gRPC) on the same port.
            let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn handle(state: &State, req: Request<Incoming>, peer: SocketAddr) -> Response<Body> {
    let grpc = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/grpc"));
    if grpc {
        return grpc_call(state, req).await;
    }
    match req.uri().path() {
        "/api" => api(state, &req, peer),
        "/bench" => text(StatusCode::OK, "1".to_owned()),
        "/data" => data(req.uri().query().unwrap_or("")),
        "/health" => health(state, req).await,
        _ => whoami(state, &req, peer),
    }
}

fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed()
}

fn text(status: StatusCode, body: String) -> Response<Body> {
    let mut resp = Response::new(full(body));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}

/// Go's canonical header spelling (`x-forwarded-for` → `X-Forwarded-For`),
/// which traefik/whoami prints.
fn canonical(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = true;
    for c in name.chars() {
        out.push(if upper { c.to_ascii_uppercase() } else { c });
        upper = c == '-';
    }
    out
}

fn query_value<'a>(query: &'a str, key: &str) -> Option<&'a str> {
    query
        .split('&')
        .filter_map(|kv| kv.split_once('=').or(Some((kv, ""))))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v)
}

/// `/`: who answered, then the request as it arrived (traefik/whoami's
/// layout: the request line and headers end in CRLF).
fn whoami(state: &State, req: &Request<Incoming>, peer: SocketAddr) -> Response<Body> {
    let mut out = String::new();
    if !state.name.is_empty() {
        out.push_str(&format!("Name: {}\n", state.name));
    }
    out.push_str(&format!("Hostname: {}\n", state.hostname));
    for ip in &state.ips {
        out.push_str(&format!("IP: {ip}\n"));
    }
    out.push_str(&format!("RemoteAddr: {peer}\n"));
    let target = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/");
    out.push_str(&format!("{} {target} HTTP/1.1\r\n", req.method()));
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .or_else(|| req.uri().authority().map(|a| a.as_str()))
        .unwrap_or("");
    out.push_str(&format!("Host: {host}\r\n"));
    let mut lines: Vec<(String, String)> = req
        .headers()
        .iter()
        .filter(|(k, _)| *k != header::HOST)
        .map(|(k, v)| {
            (
                canonical(k.as_str()),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    lines.sort_by(|a, b| a.0.cmp(&b.0));
    for (k, v) in lines {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    text(StatusCode::OK, out)
}

/// `/api`: the same as JSON.
fn api(state: &State, req: &Request<Incoming>, peer: SocketAddr) -> Response<Body> {
    let mut headers = serde_json::Map::new();
    for name in req.headers().keys() {
        let values: Vec<serde_json::Value> = req
            .headers()
            .get_all(name)
            .iter()
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned().into())
            .collect();
        headers.insert(canonical(name.as_str()), values.into());
    }
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let mut body = serde_json::json!({
        "hostname": state.hostname,
        "ip": state.ips,
        "headers": headers,
        "url": req.uri().path_and_query().map(|p| p.as_str()).unwrap_or("/"),
        "host": host,
        "method": req.method().as_str(),
        "remoteAddr": peer.to_string(),
    });
    if !state.name.is_empty() {
        body["name"] = state.name.clone().into();
    }
    let mut resp = Response::new(full(format!("{body}\n")));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// `/data?size=n&unit=KB`: n bytes (at most 64 MiB here).
fn data(query: &str) -> Response<Body> {
    let size: u64 = query_value(query, "size")
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let unit = match query_value(query, "unit").map(str::to_ascii_lowercase) {
        Some(u) if u == "kb" => 1 << 10,
        Some(u) if u == "mb" => 1 << 20,
        _ => 1,
    };
    let size = size.saturating_mul(unit).min(64 << 20);
    let pattern = b"|ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let body: Vec<u8> = pattern
        .iter()
        .copied()
        .cycle()
        .take(size as usize)
        .collect();
    text(StatusCode::OK, String::from_utf8_lossy(&body).into_owned())
}

/// `/health`: POST a status code to set what GET answers.
async fn health(state: &State, req: Request<Incoming>) -> Response<Body> {
    if req.method() == Method::POST {
        let body = match req.into_body().collect().await {
            Ok(b) => b.to_bytes(),
            Err(e) => return text(StatusCode::BAD_REQUEST, format!("{e}\n")),
        };
        let wanted = std::str::from_utf8(&body)
            .ok()
            .and_then(|s| s.trim().parse::<u16>().ok())
            .filter(|c| StatusCode::from_u16(*c).is_ok());
        return match wanted {
            Some(code) => {
                println!("Update health check status code [{code}]");
                state.health.store(code, Ordering::Relaxed);
                text(StatusCode::OK, String::new())
            }
            None => text(
                StatusCode::BAD_REQUEST,
                "expected a status code\n".to_owned(),
            ),
        };
    }
    let code = StatusCode::from_u16(state.health.load(Ordering::Relaxed)).unwrap_or(StatusCode::OK);
    text(code, String::new())
}

/// The gRPC service `whoami.Whoami` of traefik/whoami's `grpc.proto`:
/// `Whoami` answers `{name = 1, hostname = 2, repeated iface = 3}`,
/// `Bench` answers `{data = 1}` (int32 1). Messages are encoded by hand: the
/// replies are a few string fields.
async fn grpc_call(state: &State, req: Request<Incoming>) -> Response<Body> {
    let path = req.uri().path().to_owned();
    // The requests are empty messages; read the body to its end anyway.
    let _ = req.into_body().collect().await;
    let (status, message, reply) = match path.as_str() {
        "/whoami.Whoami/Whoami" => {
            let mut m = Vec::new();
            if !state.name.is_empty() {
                proto_string(&mut m, 1, &state.name);
            }
            proto_string(&mut m, 2, &state.hostname);
            for ip in &state.ips {
                proto_string(&mut m, 3, ip);
            }
            ("0", "", Some(m))
        }
        "/whoami.Whoami/Bench" => ("0", "", Some(vec![0x08, 0x01])),
        _ => ("12", "unknown method", None),
    };
    let mut frames: Vec<Result<Frame<Bytes>, Infallible>> = Vec::new();
    if let Some(m) = reply {
        let mut framed = Vec::with_capacity(m.len() + 5);
        framed.push(0);
        framed.extend_from_slice(&(m.len() as u32).to_be_bytes());
        framed.extend_from_slice(&m);
        frames.push(Ok(Frame::data(Bytes::from(framed))));
    }
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from_static(status));
    if !message.is_empty() {
        trailers.insert("grpc-message", HeaderValue::from_static(message));
    }
    frames.push(Ok(Frame::trailers(trailers)));
    let body = StreamBody::new(futures_util::stream::iter(frames)).boxed();
    let mut resp = Response::new(body);
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/grpc"),
    );
    resp
}

fn proto_string(out: &mut Vec<u8>, field: u8, value: &str) {
    out.push((field << 3) | 2);
    let mut len = value.len();
    loop {
        let byte = (len & 0x7f) as u8;
        len >>= 7;
        if len == 0 {
            out.push(byte);
            break;
        }
        out.push(byte | 0x80);
    }
    out.extend_from_slice(value.as_bytes());
}

/// The host's addresses, from /proc (the container shares the host's network).
fn addresses() -> Vec<String> {
    let mut out = Vec::new();
    // IPv4: the local addresses in the routing trie are the `/32 host LOCAL` leaves.
    if let Ok(trie) = std::fs::read_to_string("/proc/net/fib_trie") {
        let mut last = None;
        for line in trie.lines() {
            let t = line.trim_start_matches([' ', '|', '+', '-']).trim();
            if let Ok(ip) = t.parse::<std::net::Ipv4Addr>() {
                last = Some(ip);
            } else if t.starts_with("/32 host LOCAL")
                && let Some(ip) = last
                && !out.contains(&ip.to_string())
            {
                out.push(ip.to_string());
            }
        }
    }
    if let Ok(v6) = std::fs::read_to_string("/proc/net/if_inet6") {
        for line in v6.lines() {
            let Some(hex) = line.split_whitespace().next() else {
                continue;
            };
            if let Ok(n) = u128::from_str_radix(hex, 16) {
                out.push(std::net::Ipv6Addr::from(n).to_string());
            }
        }
    }
    if out.is_empty() {
        out.push("127.0.0.1".to_owned());
    }
    out
}
