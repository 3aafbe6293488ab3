//! Start-up and shutdown: SIGTERM drains in-flight requests (also under
//! load, keep-alive and new connections alike), then exits 0; configuration
//! errors stop the start with a clear message.

use crate::support;

use http::StatusCode;
use std::collections::HashSet;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::{Backend, Gangway, eventually};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[tokio::test]
async fn sigterm_finishes_requests_in_flight_then_exits_cleanly() {
    // The backend says when the request has reached it, then takes its time.
    let (reached_tx, mut reached) = tokio::sync::mpsc::unbounded_channel::<()>();
    let slow = Backend::serve(move |_req| {
        let reached_tx = reached_tx.clone();
        async move {
            let _ = reached_tx.send(());
            tokio::time::sleep(Duration::from_millis(800)).await;
            http::Response::new(http_body_util::Full::new(bytes::Bytes::from_static(
                b"late",
            )))
        }
    })
    .await;
    let mut gw = Gangway::with_file(
        &support::one_route("slow", "Host(`slow.test`)", &[&slow.url()]),
        &[],
    )
    .await;
    eventually(Duration::from_secs(5), "routed", || async {
        gw.get("slow.test", "/").await.status == StatusCode::OK
    })
    .await;
    while reached.try_recv().is_ok() {}

    let url = gw.url("/");
    let in_flight = tokio::spawn(async move {
        let client =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .build_http::<http_body_util::Full<bytes::Bytes>>();
        let req = http::Request::get(url)
            .header("host", "slow.test")
            .body(Default::default())
            .unwrap();
        let resp = client
            .request(req)
            .await
            .expect("in-flight request answered");
        let status = resp.status();
        let body = http_body_util::BodyExt::collect(resp.into_body())
            .await
            .expect("body")
            .to_bytes();
        (status, body)
    });
    reached
        .recv()
        .await
        .expect("the request reached the backend");
    let status = tokio::task::spawn_blocking(move || {
        let status = gw.terminate();
        (status, gw)
    });
    let (code, body) = in_flight.await.expect("client task");
    assert_eq!(code, StatusCode::OK, "the request in flight was finished");
    assert_eq!(&body[..], b"late");
    let (exit, gw) = status.await.expect("terminate");
    assert!(exit.success(), "gangway exits 0 after draining: {exit:?}");
    assert!(
        tokio::net::TcpStream::connect(("127.0.0.1", gw.port))
            .await
            .is_err(),
        "no longer accepting"
    );
}

/// The status of `GET path` sent on a new connection (`Connection: close`),
/// or `None` when the connection is refused or closed unanswered.
async fn on_new_connection(port: u16, host: &str, path: &str) -> Option<u16> {
    on_new_connection_as(port, "GET", host, path).await
}

async fn on_new_connection_as(port: u16, method: &str, host: &str, path: &str) -> Option<u16> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).await.ok()?;
    let request = format!("{method} {path} HTTP/1.1\r\nhost: {host}\r\nconnection: close\r\n\r\n");
    s.write_all(request.as_bytes()).await.ok()?;
    let mut answer = Vec::new();
    s.read_to_end(&mut answer).await.ok()?;
    let answer = String::from_utf8_lossy(&answer);
    answer.strip_prefix("HTTP/1.1 ")?.get(..3)?.parse().ok()
}

/// Traefik's `requestAcceptGraceTimeout`: after SIGTERM the entry point goes
/// on accepting new connections and answering requests for that long, while
/// `/ping` answers 503 so that a load balancer in front stops sending; then
/// it stops accepting (the port refuses) and gangway exits 0 after draining.
#[tokio::test]
async fn sigterm_keeps_accepting_for_the_accept_grace_with_ping_unavailable() {
    let app = Backend::echo("app").await;
    let mut gw = Gangway::with_file(
        &support::one_route("app", "Host(`app.test`)", &[&app.url()]),
        &[
            "--ping",
            "--ping.entryPoint=web",
            "--entryPoints.web.transport.lifeCycle.requestAcceptGraceTimeout=4s",
        ],
    )
    .await;
    let port = gw.port;
    eventually(Duration::from_secs(5), "app and /ping routed", || async {
        on_new_connection(port, "app.test", "/").await == Some(200)
            && on_new_connection(port, "lb.test", "/ping").await == Some(200)
    })
    .await;

    gw.sigterm();
    // Each check opens a new connection, so an answer proves the listener
    // still accepts after the signal.
    eventually(Duration::from_secs(3), "/ping answers 503", || async {
        on_new_connection(port, "lb.test", "/ping").await == Some(503)
    })
    .await;
    assert_eq!(
        on_new_connection_as(port, "HEAD", "lb.test", "/ping").await,
        Some(503),
        "a HEAD health check sees the shutdown too"
    );
    assert_eq!(
        on_new_connection(port, "app.test", "/").await,
        Some(200),
        "requests are still answered during the accept grace"
    );

    eventually(Duration::from_secs(30), "the port refuses", || async {
        TcpStream::connect(("127.0.0.1", port)).await.is_err()
    })
    .await;
    eventually(Duration::from_secs(15), "gangway exits", || {
        let exited = gw.exited().is_some();
        async move { exited }
    })
    .await;
    let status = gw.exited().expect("exited");
    assert!(status.success(), "gangway exits 0: {status:?}");
}

/// `ping.manualRouting`: no router is made for `/ping`; the user's own
/// router to `ping@internal` decides where it answers.
#[tokio::test]
async fn ping_with_manual_routing_answers_only_where_the_user_routes_it() {
    let file =
        "[http.routers.health]\nrule = \"Host(`health.test`)\"\nservice = \"ping@internal\"\n";
    let gw = Gangway::with_file(
        file,
        &[
            "--ping",
            "--ping.entryPoint=web",
            "--ping.manualRouting=true",
        ],
    )
    .await;
    let port = gw.port;
    eventually(Duration::from_secs(5), "the user's router", || async {
        on_new_connection(port, "health.test", "/ping").await == Some(200)
    })
    .await;
    assert_eq!(
        on_new_connection_as(port, "HEAD", "health.test", "/ping").await,
        Some(200)
    );
    assert_eq!(
        on_new_connection(port, "lb.test", "/ping").await,
        Some(404),
        "no router of gangway's own for /ping"
    );
}

#[test]
fn configuration_errors_stop_the_start_and_name_the_key() {
    let out = Command::new(support::binary())
        .arg("--entryPoints.web.adress=:8000")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--entryPoints.web.adress") && err.contains("address"),
        "{err}"
    );

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("gangway.toml"),
        "[entryPoints.web]\naddress = \":8000\"\n\n[log]\nlevel = \"LOUD\"\n",
    )
    .unwrap();
    let out = Command::new(support::binary())
        .current_dir(dir.path())
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("gangway.toml") && err.contains("line 5"),
        "{err}"
    );
}

#[test]
fn help_lists_every_option_with_its_default() {
    let out = Command::new(support::binary())
        .arg("--help")
        .output()
        .expect("run");
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for option in [
        "entryPoints.<name>.address",
        "entryPoints.<name>.forwardedHeaders.trustedIPs",
        "providers.file.filename",
        "providers.file.watch",
        "providers.providersThrottleDuration",
        "log.level",
    ] {
        assert!(help.contains(option), "--help lists {option}:\n{help}");
    }
    assert!(help.contains("50ms"), "defaults are shown");
}

#[test]
fn help_lists_the_check_command_and_it_runs() {
    let help = Command::new(support::binary())
        .arg("--help")
        .output()
        .expect("run");
    assert!(help.status.success());
    let help = String::from_utf8_lossy(&help.stdout);
    let line = help
        .lines()
        .find(|l| l.trim_start().starts_with("check "))
        .unwrap_or_else(|| panic!("--help has a line for `check`:\n{help}"));
    assert!(line.contains("without starting"), "{line}");
    assert!(help.contains("gangway check [--compose FILE...]"), "{help}");
    // What --help advertises must exist: `gangway check --help` answers.
    let check = Command::new(support::binary())
        .args(["check", "--help"])
        .output()
        .expect("run");
    assert!(check.status.success());
    assert!(String::from_utf8_lossy(&check.stdout).starts_with("usage: gangway check"));
}

#[tokio::test]
async fn a_port_in_use_fails_the_start() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let out = tokio::process::Command::new(support::binary())
        .arg(format!("--entryPoints.web.address=127.0.0.1:{port}"))
        .output()
        .await
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("entry point `web`: cannot listen on 127.0.0.1:")
    );
}

/// Bytes of every answer of the load backend: `{id:>16}` repeated, so a
/// cut-off or mixed-up answer shows.
const ANSWER: usize = 32 * 1024;

fn answer_for(id: u64) -> Vec<u8> {
    format!("{id:>16}").repeat(ANSWER / 16).into_bytes()
}

/// A raw HTTP/1.1 server for the load: records every `/r/<id>` it reads,
/// then answers after a pause, in two halves with a pause between, so that
/// answers are in flight at any moment. `/hold` answers only once `release`
/// is notified, after saying on `held` that it arrived.
async fn load_backend(
    seen: Arc<Mutex<HashSet<u64>>>,
    held: tokio::sync::mpsc::UnboundedSender<()>,
    release: Arc<tokio::sync::Notify>,
) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = listener.accept().await else {
                continue;
            };
            let (seen, held, release) = (seen.clone(), held.clone(), release.clone());
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    let end = loop {
                        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            break at + 4;
                        }
                        match s.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    };
                    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
                    buf.drain(..end);
                    let path = head.split(' ').nth(1).unwrap_or("/").to_owned();
                    let id = path.strip_prefix("/r/").and_then(|i| i.parse::<u64>().ok());
                    let id = match (id, path.as_str()) {
                        (Some(id), _) => {
                            seen.lock().unwrap().insert(id);
                            tokio::time::sleep(Duration::from_millis(100)).await;
                            id
                        }
                        (None, "/hold") => {
                            seen.lock().unwrap().insert(HOLD);
                            let _ = held.send(());
                            release.notified().await;
                            HOLD
                        }
                        _ => 0,
                    };
                    let body = answer_for(id);
                    let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n", body.len());
                    let (first, second) = body.split_at(body.len() / 2);
                    if s.write_all(head.as_bytes()).await.is_err()
                        || s.write_all(first).await.is_err()
                    {
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(30)).await;
                    if s.write_all(second).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    format!("http://{addr}")
}

/// The id of the request held at the backend until the test releases it.
const HOLD: u64 = u64::MAX;

/// How one request over a raw HTTP/1.1 connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Status 200 and the whole body; `close` if it said `Connection: close`.
    Complete { close: bool },
    /// The connection ended before a single byte of the answer.
    Unanswered,
    /// Part of the answer came, then the connection ended.
    CutOff,
}

/// Sends `GET <path>` on `s` and reads the answer.
async fn exchange(s: &mut TcpStream, path: &str, id: u64) -> Outcome {
    let request = format!("GET {path} HTTP/1.1\r\nhost: load.test\r\n\r\n");
    if s.write_all(request.as_bytes()).await.is_err() {
        return Outcome::Unanswered;
    }
    let mut got = Vec::new();
    let mut chunk = [0u8; 16384];
    let mut want: Option<(usize, bool)> = None;
    loop {
        if want.is_none()
            && let Some(at) = got.windows(4).position(|w| w == b"\r\n\r\n")
        {
            let head = String::from_utf8_lossy(&got[..at]).to_ascii_lowercase();
            if !head.starts_with("http/1.1 200") {
                return Outcome::CutOff;
            }
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(usize::MAX);
            let close = head.lines().any(|l| l == "connection: close");
            got.drain(..at + 4);
            want = Some((length, close));
        }
        if let Some((length, close)) = want
            && got.len() >= length
        {
            assert_eq!(got, answer_for(id), "the answer to request {id}");
            return Outcome::Complete { close };
        }
        match s.read(&mut chunk).await {
            Ok(0) | Err(_) if got.is_empty() && want.is_none() => return Outcome::Unanswered,
            Ok(0) | Err(_) => return Outcome::CutOff,
            Ok(n) => got.extend_from_slice(&chunk[..n]),
        }
    }
}

/// What the clients saw, all together.
#[derive(Debug, Default)]
struct Tally {
    /// Every request sent, with how it ended.
    outcomes: Vec<(u64, Outcome)>,
    /// Connections refused (after the signal).
    refused: usize,
    /// Keep-alive connections whose last answer said `Connection: close`,
    /// and gangway closed them right after.
    closed_after_close: usize,
    /// HTTP/1 keep-alive requests sent after a whole answer without
    /// `Connection: close` (its head left before the signal) and closed
    /// unread: never forwarded, safe to retry (RFC 9112 §9.3.1).
    unread_after_keep_alive: usize,
}

/// One client: connection after connection until gangway refuses one;
/// `per_connection` requests on each (keep-alive), or until the connection ends.
async fn client(
    addr: String,
    per_connection: usize,
    ids: Arc<AtomicU64>,
    tally: Arc<Mutex<Tally>>,
) {
    loop {
        let Ok(mut s) = TcpStream::connect(&addr).await else {
            tally.lock().unwrap().refused += 1;
            return;
        };
        for answered in 0..per_connection {
            let id = ids.fetch_add(1, Ordering::Relaxed);
            let outcome = exchange(&mut s, &format!("/r/{id}"), id).await;
            tally.lock().unwrap().outcomes.push((id, outcome));
            match outcome {
                Outcome::Complete { close: false } => continue,
                Outcome::Complete { close: true } => {
                    // Closed right after: nothing more may come.
                    let mut rest = [0u8; 16];
                    let end = s.read(&mut rest).await;
                    assert!(
                        matches!(end, Ok(0) | Err(_)),
                        "after `Connection: close`, gangway closes: {end:?}"
                    );
                    tally.lock().unwrap().closed_after_close += 1;
                }
                Outcome::Unanswered if answered > 0 => {
                    tally.lock().unwrap().unread_after_keep_alive += 1;
                }
                Outcome::Unanswered | Outcome::CutOff => {}
            }
            break;
        }
    }
}

/// One HTTP/2 client (prior knowledge): one connection, requests one after
/// another on it, a new connection when it ends, until gangway refuses one.
async fn h2_client(addr: String, ids: Arc<AtomicU64>, tally: Arc<Mutex<Tally>>) {
    use http_body_util::BodyExt;
    loop {
        let Ok(stream) = TcpStream::connect(&addr).await else {
            tally.lock().unwrap().refused += 1;
            return;
        };
        let Ok((mut send, conn)) = hyper::client::conn::http2::handshake(
            hyper_util::rt::TokioExecutor::new(),
            hyper_util::rt::TokioIo::new(stream),
        )
        .await
        else {
            continue;
        };
        tokio::spawn(conn);
        loop {
            let id = ids.fetch_add(1, Ordering::Relaxed);
            let req = http::Request::get(format!("http://load.test/r/{id}"))
                .body(http_body_util::Empty::<bytes::Bytes>::new())
                .unwrap();
            let outcome = match send.send_request(req).await {
                Err(_) => Outcome::Unanswered,
                Ok(resp) if resp.status() != StatusCode::OK => Outcome::CutOff,
                Ok(resp) => match resp.into_body().collect().await {
                    Ok(body) => {
                        assert_eq!(body.to_bytes(), answer_for(id), "the answer to {id}");
                        Outcome::Complete { close: false }
                    }
                    Err(_) => Outcome::CutOff,
                },
            };
            tally.lock().unwrap().outcomes.push((id, outcome));
            if outcome != (Outcome::Complete { close: false }) {
                break;
            }
        }
    }
}

#[tokio::test]
async fn sigterm_under_load_answers_every_accepted_request_whole_then_exits() {
    let seen = Arc::new(Mutex::new(HashSet::new()));
    let (held_tx, mut held) = tokio::sync::mpsc::unbounded_channel();
    let release = Arc::new(tokio::sync::Notify::new());
    let backend = load_backend(seen.clone(), held_tx, release.clone()).await;
    let mut gw = Gangway::with_file(
        &support::one_route("load", "Host(`load.test`)", &[&backend]),
        &["--entryPoints.web.transport.lifeCycle.graceTimeOut=60s"],
    )
    .await;
    eventually(Duration::from_secs(5), "routed", || async {
        gw.get("load.test", "/").await.status == StatusCode::OK
    })
    .await;
    let addr = format!("127.0.0.1:{}", gw.port);

    // 16 keep-alive clients, 8 that open a connection per request, 4 on
    // HTTP/2.
    let ids = Arc::new(AtomicU64::new(1));
    let tally = Arc::new(Mutex::new(Tally::default()));
    let mut clients = Vec::new();
    for _ in 0..4 {
        clients.push(tokio::spawn(h2_client(
            addr.clone(),
            ids.clone(),
            tally.clone(),
        )));
    }
    for i in 0..24 {
        let per_connection = if i < 16 { usize::MAX } else { 1 };
        clients.push(tokio::spawn(client(
            addr.clone(),
            per_connection,
            ids.clone(),
            tally.clone(),
        )));
    }
    eventually(Duration::from_secs(30), "steady load", || async {
        tally.lock().unwrap().outcomes.len() >= 200
    })
    .await;

    // One more request, held at the backend until the test says.
    let mut holding = TcpStream::connect(&addr).await.unwrap();
    let hold = tokio::spawn(async move {
        let outcome = exchange(&mut holding, "/hold", HOLD).await;
        let mut rest = [0u8; 16];
        let end = holding.read(&mut rest).await;
        (outcome, matches!(end, Ok(0) | Err(_)))
    });
    held.recv()
        .await
        .expect("the held request reached the backend");

    let sent_before = tally.lock().unwrap().outcomes.len();
    let exit = tokio::task::spawn_blocking(move || {
        let status = gw.terminate();
        (status, gw)
    });
    // While the held request is still in flight, new connections are refused.
    eventually(
        Duration::from_secs(10),
        "new connections refused",
        || async { TcpStream::connect(&addr).await.is_err() },
    )
    .await;
    // The held request has not been answered yet, so gangway is draining,
    // not gone: the refusal above happened during the drain.
    release.notify_one();
    let (held_outcome, held_closed) = hold.await.unwrap();
    assert_eq!(
        held_outcome,
        Outcome::Complete { close: true },
        "the request in flight at the signal is answered whole, with `Connection: close`"
    );
    assert!(held_closed, "and its connection is then closed");

    for c in clients {
        c.await.expect("a client panicked");
    }
    let (status, gw) = exit.await.unwrap();
    assert!(status.success(), "gangway exits 0: {status:?}");
    let log = gw.log();
    assert!(
        !log.contains("grace period over"),
        "drained within the grace period: {log}"
    );
    assert!(!log.contains("panicked"), "{log}");

    let tally = tally.lock().unwrap();
    let seen = seen.lock().unwrap();
    let count = |f: fn(&Outcome) -> bool| tally.outcomes.iter().filter(|(_, o)| f(o)).count();
    let complete = count(|o| matches!(o, Outcome::Complete { .. }));
    let unanswered = count(|o| *o == Outcome::Unanswered);
    let cut_off = count(|o| *o == Outcome::CutOff);
    eprintln!(
        "{} requests ({} answered before the signal): {complete} answered whole, {unanswered} unanswered \
         (never read by gangway), {cut_off} cut off; {} keep-alive connections ended with \
         `Connection: close`; {} keep-alive requests closed unread after an answer whose head \
         left before the signal; {} connections refused",
        tally.outcomes.len(),
        sent_before,
        tally.closed_after_close,
        tally.unread_after_keep_alive,
        tally.refused
    );
    assert_eq!(cut_off, 0, "no answer is cut off");
    for (id, outcome) in tally.outcomes.iter() {
        if seen.contains(id) {
            assert!(
                matches!(outcome, Outcome::Complete { .. }),
                "request {id} reached the server, so its client must get the whole answer: {outcome:?}"
            );
        }
    }
    assert!(
        tally.closed_after_close > 0,
        "keep-alive connections busy at the signal get `Connection: close`"
    );
    assert_eq!(tally.refused, 28, "every client is refused in the end");
}
