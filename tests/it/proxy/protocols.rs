//! Protocols that have to pass through gangway intact: gRPC over h2c with its
//! trailers, WebSocket upgrades, server-sent events delivered as they are
//! produced rather than when the response ends, and HTTP/1.0 servers behind
//! HTTP/1.1 clients.

use crate::support;

use bytes::{Bytes, BytesMut};
use futures_util::{SinkExt, StreamExt};
use http::header::{CACHE_CONTROL, CONTENT_TYPE, HOST};
use http::uri::PathAndQuery;
use http::{HeaderValue, Request, Response, StatusCode, Version};
use http_body::Frame;
use http_body_util::{BodyExt, Empty, StreamBody};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::convert::Infallible;
use std::future::{Ready, ready};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::{Backend, Gangway, eventually, one_route};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};
use tokio_stream::wrappers::ReceiverStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tonic::Status;
use tonic::codegen::{BoxFuture, Context, Poll, Service};
use tonic::server::{ServerStreamingService, UnaryService};
use tonic_prost::ProstCodec;

/// Upper bound on any single wait, so a proxy that swallows data makes the
/// test fail with a message instead of hanging. Never used to measure speed.
const PATIENCE: Duration = Duration::from_secs(20);

async fn within<F: std::future::Future>(what: &str, fut: F) -> F::Output {
    match tokio::time::timeout(PATIENCE, fut).await {
        Ok(out) => out,
        Err(_) => panic!("gave up after {PATIENCE:?} waiting for: {what}"),
    }
}

// ---------------------------------------------------------------------------
// gRPC
// ---------------------------------------------------------------------------

/// `test.EchoRequest`, written by hand (no protoc here).
#[derive(Clone, PartialEq, prost::Message)]
struct EchoRequest {
    #[prost(string, tag = "1")]
    text: String,
    #[prost(uint32, tag = "2")]
    count: u32,
}

/// `test.EchoReply`.
#[derive(Clone, PartialEq, prost::Message)]
struct EchoReply {
    #[prost(string, tag = "1")]
    text: String,
    #[prost(uint32, tag = "2")]
    seq: u32,
}

const SAY: &str = "/test.Echo/Say";
const LOOKUP: &str = "/test.Echo/Lookup";
const COUNT: &str = "/test.Echo/Count";
const COUNT_THEN_FAIL: &str = "/test.Echo/CountThenFail";

/// Unary: answers `echo: <text>`.
struct Say;

impl UnaryService<EchoRequest> for Say {
    type Response = EchoReply;
    type Future = Ready<Result<tonic::Response<EchoReply>, Status>>;

    fn call(&mut self, request: tonic::Request<EchoRequest>) -> Self::Future {
        let text = request.into_inner().text;
        ready(Ok(tonic::Response::new(EchoReply {
            text: format!("echo: {text}"),
            seq: 0,
        })))
    }
}

/// Unary that always fails before sending anything (a trailers-only reply).
struct Lookup;

impl UnaryService<EchoRequest> for Lookup {
    type Response = EchoReply;
    type Future = Ready<Result<tonic::Response<EchoReply>, Status>>;

    fn call(&mut self, request: tonic::Request<EchoRequest>) -> Self::Future {
        let text = request.into_inner().text;
        ready(Err(Status::not_found(format!("no record called {text:?}"))))
    }
}

/// Server streaming: `count` replies numbered from 1, optionally followed by
/// an error, which can then only travel in the HTTP/2 trailers.
struct Count {
    fail_at_end: bool,
}

type ReplyStream = tokio_stream::Iter<std::vec::IntoIter<Result<EchoReply, Status>>>;

impl ServerStreamingService<EchoRequest> for Count {
    type Response = EchoReply;
    type ResponseStream = ReplyStream;
    type Future = Ready<Result<tonic::Response<ReplyStream>, Status>>;

    fn call(&mut self, request: tonic::Request<EchoRequest>) -> Self::Future {
        let EchoRequest { text, count } = request.into_inner();
        let mut items: Vec<Result<EchoReply, Status>> = (1..=count)
            .map(|seq| {
                Ok(EchoReply {
                    text: format!("{text} #{seq}"),
                    seq,
                })
            })
            .collect();
        if self.fail_at_end {
            items.push(Err(Status::not_found(format!("ran out of {text}"))));
        }
        ready(Ok(tonic::Response::new(tokio_stream::iter(items))))
    }
}

/// The `test.Echo` service, dispatching on the request path as generated
/// code would.
#[derive(Clone)]
struct EchoService;

impl Service<http::Request<tonic::body::Body>> for EchoService {
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Infallible>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<tonic::body::Body>) -> Self::Future {
        Box::pin(async move {
            let mut grpc =
                tonic::server::Grpc::new(ProstCodec::<EchoReply, EchoRequest>::default());
            let resp = match req.uri().path() {
                SAY => grpc.unary(Say, req).await,
                LOOKUP => grpc.unary(Lookup, req).await,
                COUNT => {
                    grpc.server_streaming(Count { fail_at_end: false }, req)
                        .await
                }
                COUNT_THEN_FAIL => {
                    grpc.server_streaming(Count { fail_at_end: true }, req)
                        .await
                }
                other => Status::unimplemented(format!("no method {other}")).into_http(),
            };
            Ok(resp)
        })
    }
}

/// Starts the tonic server (HTTP/2 cleartext) on a loopback port.
async fn grpc_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind grpc server");
    let addr = listener.local_addr().expect("addr");
    let incoming = tonic::transport::server::TcpIncoming::from(listener);
    tokio::spawn(async move {
        if let Err(e) = tonic::transport::Server::builder()
            .serve_with_incoming(EchoService, incoming)
            .await
        {
            eprintln!("grpc server stopped: {e}");
        }
    });
    addr
}

type GrpcClient = tonic::client::Grpc<tonic::transport::Channel>;

fn codec() -> ProstCodec<EchoRequest, EchoReply> {
    ProstCodec::default()
}

fn ask(text: &str, count: u32) -> tonic::Request<EchoRequest> {
    tonic::Request::new(EchoRequest {
        text: text.to_owned(),
        count,
    })
}

async fn unary(
    client: &mut GrpcClient,
    path: &'static str,
    text: &str,
) -> Result<EchoReply, Status> {
    client.ready().await.expect("channel ready");
    client
        .unary(ask(text, 0), PathAndQuery::from_static(path), codec())
        .await
        .map(tonic::Response::into_inner)
}

/// Runs a server-streaming call; returns the messages received and the
/// status that ended the stream (`None` for a clean end).
async fn stream(
    client: &mut GrpcClient,
    path: &'static str,
    text: &str,
    count: u32,
) -> (Vec<EchoReply>, Option<Status>) {
    client.ready().await.expect("channel ready");
    let mut replies = client
        .server_streaming(ask(text, count), PathAndQuery::from_static(path), codec())
        .await
        .expect("stream opened")
        .into_inner();
    let mut got = Vec::new();
    loop {
        match within("next streamed message", replies.message()).await {
            Ok(Some(reply)) => got.push(reply),
            Ok(None) => return (got, None),
            Err(status) => return (got, Some(status)),
        }
    }
}

#[tokio::test]
async fn grpc_unary_streaming_and_status_trailers_pass_through_h2c() {
    let upstream = grpc_server().await;
    // The rule needs both the :authority the client sent and the gRPC path.
    let conf = one_route(
        "grpc",
        "Host(`127.0.0.1`) && PathPrefix(`/test.Echo/`)",
        &[&format!("h2c://{upstream}")],
    );
    let gw = Gangway::with_file(&conf, &[]).await;
    eventually(Duration::from_secs(5), "config applied", || async {
        gw.get("127.0.0.1", SAY).await.status != StatusCode::NOT_FOUND
    })
    .await;

    let channel = tonic::transport::Endpoint::from_shared(format!("http://127.0.0.1:{}", gw.port))
        .expect("endpoint")
        .connect()
        .await
        .expect("connect to gangway");
    let mut client = tonic::client::Grpc::new(channel);

    // Unary.
    let reply = unary(&mut client, SAY, "hello gangway")
        .await
        .expect("unary call");
    assert_eq!(
        reply,
        EchoReply {
            text: "echo: hello gangway".to_owned(),
            seq: 0
        }
    );
    let reply = unary(&mut client, SAY, "")
        .await
        .expect("unary call with an empty message");
    assert_eq!(reply.text, "echo: ");

    // Server streaming: every message, in order, then a clean end (which
    // itself needs `grpc-status: 0` from the trailers).
    let (got, end) = stream(&mut client, COUNT, "tick", 25).await;
    let want: Vec<EchoReply> = (1..=25)
        .map(|seq| EchoReply {
            text: format!("tick #{seq}"),
            seq,
        })
        .collect();
    assert_eq!(got, want);
    assert!(end.is_none(), "stream ended with an error: {end:?}");

    // A failure before any message: the status travels in the headers.
    let status = unary(&mut client, LOOKUP, "widget-42")
        .await
        .expect_err("lookup must fail");
    assert_eq!(status.code(), tonic::Code::NotFound, "{status:?}");
    assert_eq!(status.message(), "no record called \"widget-42\"");

    // A failure after messages: the status can only arrive in the trailers.
    let (got, end) = stream(&mut client, COUNT_THEN_FAIL, "apple", 3).await;
    let want: Vec<EchoReply> = (1..=3)
        .map(|seq| EchoReply {
            text: format!("apple #{seq}"),
            seq,
        })
        .collect();
    assert_eq!(got, want);
    let status = end.expect("the stream must end with the server's error status");
    assert_eq!(status.code(), tonic::Code::NotFound, "{status:?}");
    assert_eq!(status.message(), "ran out of apple");

    // The connection is still usable afterwards.
    let reply = unary(&mut client, SAY, "still there")
        .await
        .expect("unary call after an error");
    assert_eq!(reply.text, "echo: still there");
}

// ---------------------------------------------------------------------------
// WebSocket
// ---------------------------------------------------------------------------

/// A WebSocket server that sends back every text and binary message.
async fn websocket_echo_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind ws server");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                continue;
            };
            tokio::spawn(async move {
                let Ok(mut ws) = tokio_tungstenite::accept_async(tcp).await else {
                    return;
                };
                // Reading on after a Close lets tungstenite send its reply.
                while let Some(Ok(msg)) = ws.next().await {
                    if (msg.is_text() || msg.is_binary()) && ws.send(msg).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    addr
}

#[tokio::test]
async fn websocket_messages_echo_through_and_close_cleanly() {
    let upstream = websocket_echo_server().await;
    let gw = Gangway::with_file(
        &one_route("ws", "Host(`ws.test`)", &[&format!("http://{upstream}")]),
        &[],
    )
    .await;
    eventually(Duration::from_secs(5), "config applied", || async {
        gw.get("ws.test", "/").await.status != StatusCode::NOT_FOUND
    })
    .await;

    let mut req = format!("ws://127.0.0.1:{}/chat", gw.port)
        .into_client_request()
        .expect("client request");
    req.headers_mut()
        .insert(HOST, HeaderValue::from_static("ws.test"));
    let tcp = TcpStream::connect(("127.0.0.1", gw.port))
        .await
        .expect("connect to gangway");
    let (mut ws, resp) = within("handshake", tokio_tungstenite::client_async(req, tcp))
        .await
        .expect("WebSocket handshake through gangway");
    assert_eq!(resp.status(), StatusCode::SWITCHING_PROTOCOLS);

    let big: Vec<u8> = (0..1024 * 1024u32)
        .map(|i| (i % 251) as u8 ^ (i >> 12) as u8)
        .collect();
    let messages = vec![
        Message::text("hello through gangway"),
        Message::binary(vec![0u8, 1, 2, 0xfe, 0xff]),
        Message::text("grüße ✓ ünïcödé"),
        Message::binary(big),
        Message::text(""),
    ];
    // One at a time, each answered before the next...
    for msg in &messages {
        within("send", ws.send(msg.clone())).await.expect("send");
        let echoed = within("echo", ws.next())
            .await
            .expect("connection open")
            .expect("echo");
        assert_eq!(echoed, *msg, "echo differs ({} bytes sent)", msg.len());
    }
    // ...then a burst, answered in order.
    for i in 0..20 {
        ws.feed(Message::text(format!("burst {i}")))
            .await
            .expect("queue");
    }
    within("flush", ws.flush()).await.expect("flush");
    for i in 0..20 {
        let echoed = within("burst echo", ws.next())
            .await
            .expect("connection open")
            .expect("echo");
        assert_eq!(echoed, Message::text(format!("burst {i}")));
    }

    // Closing handshake: our Close comes back, then the connection ends.
    let bye = CloseFrame {
        code: CloseCode::Normal,
        reason: "bye".into(),
    };
    within("close", ws.close(Some(bye)))
        .await
        .expect("send close");
    match within("close reply", ws.next()).await {
        Some(Ok(Message::Close(Some(frame)))) => {
            assert_eq!(frame.code, CloseCode::Normal);
            assert_eq!(frame.reason.as_str(), "bye");
        }
        other => panic!("expected the server's Close reply, got {other:?}"),
    }
    let after = within("end of connection", ws.next()).await;
    assert!(
        after.is_none(),
        "expected the connection to end after the close handshake, got {after:?}"
    );
}

// ---------------------------------------------------------------------------
// Server-sent events
// ---------------------------------------------------------------------------

type Chunks = StreamBody<ReceiverStream<Result<Frame<Bytes>, Infallible>>>;

/// Reads the body until a whole event (ending in a blank line) is buffered,
/// and returns that event without its terminator.
async fn next_event(body: &mut Incoming, buf: &mut BytesMut) -> Option<String> {
    loop {
        if let Some(end) = buf.windows(2).position(|w| w == b"\n\n") {
            let event = buf.split_to(end + 2);
            return Some(String::from_utf8_lossy(&event[..end]).into_owned());
        }
        let frame = within("next part of the event stream", body.frame())
            .await?
            .expect("body frame");
        if let Ok(data) = frame.into_data() {
            buf.extend_from_slice(&data);
        }
    }
}

/// Opens one connection to gangway and sends `GET /events` for `host`:
/// in the Host header over HTTP/1.1, as the `:authority` over HTTP/2.
async fn get_events(port: u16, version: Version, host: &str) -> Response<Incoming> {
    let tcp = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect to gangway");
    let io = TokioIo::new(tcp);
    let req = Request::builder()
        .version(version)
        .header("accept", "text/event-stream");
    if version == Version::HTTP_2 {
        let req = req
            .uri(format!("http://{host}/events"))
            .body(Empty::<Bytes>::new())
            .unwrap();
        let (mut send, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
            .await
            .expect("HTTP/2 handshake with gangway");
        tokio::spawn(conn);
        send.send_request(req)
            .await
            .expect("request through gangway")
    } else {
        let req = req
            .uri("/events")
            .header(HOST, host)
            .body(Empty::<Bytes>::new())
            .unwrap();
        let (mut send, conn) = hyper::client::conn::http1::handshake(io)
            .await
            .expect("HTTP/1.1 handshake with gangway");
        tokio::spawn(conn);
        send.send_request(req)
            .await
            .expect("request through gangway")
    }
}

#[tokio::test]
async fn server_sent_events_arrive_as_they_are_sent() {
    // Before each request the test leaves a gate here; the backend sends
    // the first event, then waits at the gate before sending the second.
    let gates: Arc<Mutex<Option<oneshot::Receiver<()>>>> = Arc::default();
    let second_sent = Arc::new(AtomicBool::new(false));
    let backend = {
        let gates = gates.clone();
        let second_sent = second_sent.clone();
        Backend::serve(move |req: Request<Incoming>| {
            let gate = if req.uri().path() == "/events" {
                gates.lock().unwrap().take()
            } else {
                None
            };
            let second_sent = second_sent.clone();
            async move {
                let (tx, rx) = mpsc::channel::<Result<Frame<Bytes>, Infallible>>(4);
                let mut resp = Response::new(Chunks::new(ReceiverStream::new(rx)));
                let Some(gate) = gate else {
                    let _ = tx.send(Ok(Frame::data(Bytes::from_static(b"ready")))).await;
                    return resp;
                };
                resp.headers_mut()
                    .insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
                resp.headers_mut()
                    .insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
                tokio::spawn(async move {
                    let first = Bytes::from_static(b"event: greeting\ndata: one\n\n");
                    if tx.send(Ok(Frame::data(first))).await.is_err() {
                        return;
                    }
                    if gate.await.is_err() {
                        return;
                    }
                    second_sent.store(true, Ordering::SeqCst);
                    let _ = tx
                        .send(Ok(Frame::data(Bytes::from_static(b"id: 2\ndata: two\n\n"))))
                        .await;
                });
                resp
            }
        })
        .await
    };
    let gw = Gangway::with_file(
        &one_route("sse", "Host(`sse.test`)", &[&backend.url()]),
        &[],
    )
    .await;
    eventually(Duration::from_secs(5), "config applied", || async {
        gw.get("sse.test", "/ready").await.status == StatusCode::OK
    })
    .await;

    for version in [Version::HTTP_11, Version::HTTP_2] {
        let (open_gate, gate) = oneshot::channel();
        *gates.lock().unwrap() = Some(gate);
        second_sent.store(false, Ordering::SeqCst);

        let resp = within("response headers", get_events(gw.port, version, "sse.test")).await;
        assert_eq!(resp.status(), StatusCode::OK, "{version:?}");
        assert_eq!(
            resp.headers().get(CONTENT_TYPE).unwrap(),
            "text/event-stream",
            "{version:?}"
        );
        let mut body = resp.into_body();
        let mut buf = BytesMut::new();

        let first = next_event(&mut body, &mut buf).await.expect("first event");
        assert_eq!(first, "event: greeting\ndata: one", "{version:?}");
        assert!(
            !second_sent.load(Ordering::SeqCst),
            "the backend had already sent the second event; the test proves nothing ({version:?})"
        );

        open_gate.send(()).expect("backend waits at the gate");
        let second = next_event(&mut body, &mut buf).await.expect("second event");
        assert_eq!(second, "id: 2\ndata: two", "{version:?}");
        assert!(
            next_event(&mut body, &mut buf).await.is_none(),
            "stream should end after two events ({version:?})"
        );
        assert!(
            buf.is_empty(),
            "stray bytes after the last event: {buf:?} ({version:?})"
        );
    }
}

// ---------------------------------------------------------------------------
// HTTP/2 from clients
// ---------------------------------------------------------------------------

/// gangway with `dynamic`, once a GET for `host` gets 200 from it.
async fn routed(dynamic: &str, host: &str) -> Gangway {
    let gw = Gangway::with_file(dynamic, &[]).await;
    eventually(Duration::from_secs(10), "config applied", || async {
        gw.get(host, "/").await.status == StatusCode::OK
    })
    .await;
    gw
}

/// An HTTP/2 (prior knowledge) connection to gangway, spoken with `h2`
/// itself so that the test controls each stream (and can reset one).
async fn h2_client(gw: &Gangway) -> h2::client::SendRequest<Bytes> {
    let tcp = TcpStream::connect(("127.0.0.1", gw.port))
        .await
        .expect("connect to gangway");
    let (send, conn) = h2::client::handshake(tcp)
        .await
        .expect("HTTP/2 handshake with gangway");
    tokio::spawn(async move {
        let _ = conn.await;
    });
    send
}

/// A GET for `host` and `path` over HTTP/2, as `h2` wants it.
fn h2_get(host: &str, path: &str) -> Request<()> {
    Request::get(format!("http://{host}{path}"))
        .version(Version::HTTP_2)
        .body(())
        .unwrap()
}

/// Sends `req` without a body and reads the whole answer.
async fn h2_fetch(
    send: &mut h2::client::SendRequest<Bytes>,
    req: Request<()>,
) -> (http::response::Parts, Bytes) {
    let (answer, _) = send.send_request(req, true).expect("stream opened");
    let resp = within("the answer's head", answer)
        .await
        .expect("an answer, not a reset");
    let (parts, mut body) = resp.into_parts();
    let mut got = BytesMut::new();
    while let Some(data) = within("the answer's body", body.data()).await {
        let data = data.expect("body data");
        let _ = body.flow_control().release_capacity(data.len());
        got.extend_from_slice(&data);
    }
    (parts, got.freeze())
}

/// Set when dropped: tells that the backend's handler for a request was
/// stopped, which for an HTTP/1.1 backend means gangway closed the
/// request's connection.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn an_http2_stream_the_client_resets_stops_its_request_at_the_server() {
    let started = Arc::new(AtomicBool::new(false));
    let stopped = Arc::new(AtomicBool::new(false));
    let backend = {
        let (started, stopped) = (started.clone(), stopped.clone());
        Backend::serve(move |req: Request<Incoming>| {
            let (started, stopped) = (started.clone(), stopped.clone());
            async move {
                if req.uri().path() == "/hold" {
                    let _flag = DropFlag(stopped);
                    started.store(true, Ordering::SeqCst);
                    // Never answers: only the request's end stops it.
                    std::future::pending::<()>().await;
                }
                Response::new(http_body_util::Full::new(Bytes::from_static(b"ready")))
            }
        })
        .await
    };
    let gw = routed(
        &one_route("hold", "Host(`hold.test`)", &[&backend.url()]),
        "hold.test",
    )
    .await;

    let mut send = h2_client(&gw).await;
    let (answer, _) = send
        .send_request(h2_get("hold.test", "/hold"), true)
        .expect("stream opened");
    eventually(
        Duration::from_secs(10),
        "the request reached the backend",
        || {
            let started = started.clone();
            async move { started.load(Ordering::SeqCst) }
        },
    )
    .await;
    assert!(!stopped.load(Ordering::SeqCst), "stopped before the reset");
    // Dropping the answer's future resets the stream (RST_STREAM CANCEL).
    drop(answer);
    eventually(
        Duration::from_secs(10),
        "the backend's request stopped",
        || {
            let stopped = stopped.clone();
            async move { stopped.load(Ordering::SeqCst) }
        },
    )
    .await;

    // The connection itself goes on.
    let (head, body) = h2_fetch(&mut send, h2_get("hold.test", "/")).await;
    assert_eq!(head.status, StatusCode::OK);
    assert_eq!(&body[..], b"ready");
}

#[tokio::test]
async fn http2_answers_carry_date_and_length_and_no_connection_headers() {
    let backend = Backend::echo("b").await;
    // The middleware adds connection-specific fields after the backend's
    // answer was cleaned; HTTP/2 forbids them (RFC 9113 §8.2.2), and h2
    // would refuse to send an answer that has them.
    let dynamic = format!(
        r#"{}
[http.middlewares.h.headers]
customResponseHeaders = {{ Keep-Alive = "timeout=9", Upgrade = "websocket", TE = "trailers", X-Kept = "yes" }}
"#,
        one_route("app", "Host(`app.test`)", &[&backend.url()])
    )
    .replace(
        "[http.routers.app]\n",
        "[http.routers.app]\nmiddlewares = [\"h\"]\n",
    );
    let gw = routed(&dynamic, "app.test").await;
    // Over HTTP/1.1 the middleware's fields are there: the test's setup works.
    let plain = gw.get("app.test", "/").await;
    assert_eq!(plain.headers["x-kept"], "yes");
    assert_eq!(plain.headers["keep-alive"], "timeout=9");

    let mut send = h2_client(&gw).await;
    let (head, body) = h2_fetch(&mut send, h2_get("app.test", "/")).await;
    assert_eq!(head.status, StatusCode::OK);
    assert_eq!(head.headers["x-kept"], "yes");
    for name in [
        "keep-alive",
        "upgrade",
        "te",
        "connection",
        "transfer-encoding",
    ] {
        assert!(
            head.headers.get(name).is_none(),
            "{name}: {:?}",
            head.headers
        );
    }
    let date = head.headers["date"].to_str().expect("date is text");
    let when = httpdate::parse_http_date(date).expect("an HTTP date");
    let off = std::time::SystemTime::now()
        .duration_since(when)
        .unwrap_or_default();
    assert!(off < Duration::from_secs(60), "date {date} is {off:?} old");
    assert_eq!(
        head.headers["content-length"].to_str().unwrap(),
        body.len().to_string()
    );

    // gangway's own answers (404: no router for this host) too.
    let (head, body) = h2_fetch(&mut send, h2_get("nowhere.test", "/")).await;
    assert_eq!(head.status, StatusCode::NOT_FOUND);
    assert!(head.headers.contains_key("date"), "{:?}", head.headers);
    assert_eq!(
        head.headers["content-length"].to_str().unwrap(),
        body.len().to_string()
    );
    assert!(!body.is_empty());
}

// ---------------------------------------------------------------------------
// HTTP/1.0 servers
// ---------------------------------------------------------------------------

/// What the HTTP/1.0 server answers.
const OLD_BODY: &str = "from a server that speaks HTTP/1.0";

/// A server that speaks only HTTP/1.0, as simple ones (Python's
/// `http.server`) do: it reads a request head, answers `HTTP/1.0 200 OK`,
/// with a Content-Length when `sized`, else ending the body by closing,
/// and closes the connection either way.
async fn http10_server(sized: bool) -> SocketAddr {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("address");
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let length = if sized {
                    format!("Content-Length: {}\r\n", OLD_BODY.len())
                } else {
                    String::new()
                };
                let answer = format!(
                    "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n{length}\r\n{OLD_BODY}"
                );
                let _ = s.write_all(answer.as_bytes()).await;
                let _ = s.shutdown().await;
            });
        }
    });
    addr
}

/// gangway in front of two HTTP/1.0 servers: `sized.test`'s answers
/// have a Content-Length, `unsized.test`'s end when the server closes.
async fn behind_http10_servers() -> Gangway {
    let sized = http10_server(true).await;
    let open_ended = http10_server(false).await;
    let config = format!(
        "{}{}",
        one_route("sized", "Host(`sized.test`)", &[&format!("http://{sized}")]),
        one_route(
            "unsized",
            "Host(`unsized.test`)",
            &[&format!("http://{open_ended}")]
        ),
    );
    routed(&config, "sized.test").await
}

#[tokio::test]
async fn http11_clients_get_http11_and_keep_alive_from_an_http10_server() {
    let gw = behind_http10_servers().await;
    for host in ["sized.test", "unsized.test"] {
        // One client connection, two requests: the second needs the
        // connection kept alive after the first answer.
        let tcp = TcpStream::connect(("127.0.0.1", gw.port))
            .await
            .expect("connect to gangway");
        let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
            .await
            .expect("HTTP/1.1 handshake");
        let closed = tokio::spawn(conn);
        for round in 1..=2 {
            let req = Request::get("/")
                .header(HOST, host)
                .body(Empty::<Bytes>::new())
                .unwrap();
            let what = format!("{host}, request {round}");
            let resp = within(&what, send.send_request(req))
                .await
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(resp.status(), StatusCode::OK, "{what}");
            assert_eq!(resp.version(), Version::HTTP_11, "{what}");
            // A body the server ended by closing goes on chunked, so that
            // the client's connection need not close to end it.
            let chunked = resp
                .headers()
                .get("transfer-encoding")
                .is_some_and(|v| v == "chunked");
            assert_eq!(chunked, host == "unsized.test", "{what}: {resp:?}");
            assert!(
                !resp.headers().contains_key("connection"),
                "{what}: {resp:?}"
            );
            let body = within(&what, resp.into_body().collect())
                .await
                .expect("body")
                .to_bytes();
            assert_eq!(body, OLD_BODY, "{what}");
        }
        drop(send);
        within("the client's connection ends", closed)
            .await
            .expect("task")
            .expect("the connection stayed sound");
    }
}

#[tokio::test]
async fn http10_clients_get_http10_from_any_server() {
    let gw = behind_http10_servers().await;
    for host in ["sized.test", "unsized.test"] {
        // Without keep-alive asked for, an HTTP/1.0 answer ends the
        // connection, and a body without length ends with it.
        let request = format!("GET / HTTP/1.0\r\nHost: {host}\r\n\r\n");
        let (answer, closed) = support::raw_exchange(&gw, request.as_bytes(), PATIENCE).await;
        assert!(
            answer.starts_with("HTTP/1.0 200 OK\r\n"),
            "{host}: {answer}"
        );
        assert!(
            answer.ends_with(&format!("\r\n\r\n{OLD_BODY}")),
            "{host}: {answer}"
        );
        assert!(
            !answer.to_ascii_lowercase().contains("transfer-encoding"),
            "{host}: {answer}"
        );
        assert!(closed, "{host}: gangway kept the connection open");
    }
}
