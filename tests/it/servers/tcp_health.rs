//! Active health checks of TCP services against the real binary and real
//! TCP servers: a server stopped leaves the rotation and comes back when
//! restarted; a server answering the wrong bytes to `send` is taken out
//! and comes back once it answers right; the API's `serverStatus` follows.

use crate::support;

use http::StatusCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::{Gangway, eventually, free_port};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A server that greets with `hello from <name>` and answers every read
/// containing `PING` with its current `answer`.
struct Server {
    port: u16,
    answer: Arc<Mutex<&'static str>>,
    task: Option<tokio::task::JoinHandle<()>>,
    name: &'static str,
}

impl Server {
    async fn start(name: &'static str, answer: &'static str) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut server = Server {
            port,
            answer: Arc::new(Mutex::new(answer)),
            task: None,
            name,
        };
        server.serve(listener);
        server
    }

    fn serve(&mut self, listener: TcpListener) {
        let (name, answer) = (self.name, self.answer.clone());
        self.task = Some(tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let answer = answer.clone();
                tokio::spawn(async move {
                    if stream
                        .write_all(format!("hello from {name}\n").as_bytes())
                        .await
                        .is_err()
                    {
                        return;
                    }
                    let mut buf = [0u8; 1024];
                    while let Ok(n) = stream.read(&mut buf).await {
                        if n == 0 {
                            return;
                        }
                        if buf[..n].windows(4).any(|w| w == b"PING") {
                            let reply = format!("{}\n", answer.lock().unwrap());
                            if stream.write_all(reply.as_bytes()).await.is_err() {
                                return;
                            }
                        }
                    }
                });
            }
        }));
    }

    /// Closes the listener: new connections are refused.
    async fn stop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
            let _ = task.await;
        }
    }

    /// Listens again on the same port.
    async fn restart(&mut self) {
        let listener = TcpListener::bind(("127.0.0.1", self.port)).await.unwrap();
        self.serve(listener);
    }

    fn answer(&self, text: &'static str) {
        *self.answer.lock().unwrap() = text;
    }
}

/// Which server greets a new connection through gangway's entry point.
async fn greeted_by(port: u16) -> String {
    let Ok(Ok(mut stream)) = tokio::time::timeout(
        Duration::from_secs(5),
        TcpStream::connect(("127.0.0.1", port)),
    )
    .await
    else {
        return String::new();
    };
    let mut out = Vec::new();
    let mut byte = [0u8; 1];
    while let Ok(Ok(1)) = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut byte)).await
    {
        if byte[0] == b'\n' {
            break;
        }
        out.push(byte[0]);
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn dynamic(a: u16, b: u16, check: &str) -> String {
    format!(
        r#"
[tcp.routers.db]
entryPoints = ["db"]
rule = "HostSNI(`*`)"
service = "db"
[[tcp.services.db.loadBalancer.servers]]
address = "127.0.0.1:{a}"
[[tcp.services.db.loadBalancer.servers]]
address = "127.0.0.1:{b}"
[tcp.services.db.loadBalancer.healthCheck]
{check}
[http.routers.api]
entryPoints = ["web"]
rule = "Host(`api.test`)"
service = "api@internal"
"#
    )
}

async fn start(a: u16, b: u16, check: &str) -> (Gangway, u16) {
    let tcp_port = free_port();
    let gw = Gangway::with_file(
        &dynamic(a, b, check),
        &[
            &format!("--entryPoints.db.address=127.0.0.1:{tcp_port}"),
            "--api=true",
        ],
    )
    .await;
    (gw, tcp_port)
}

/// The API's status of the server on `port` (`UP`, `DOWN`, or empty).
async fn status(gw: &Gangway, port: u16) -> String {
    let got = gw.get("api.test", "/api/tcp/services/db@file").await;
    if got.status != StatusCode::OK {
        return String::new();
    }
    let json: serde_json::Value = serde_json::from_slice(&got.body).unwrap_or_default();
    json["serverStatus"][format!("127.0.0.1:{port}")]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The servers greeting `n` new connections, sorted.
async fn greeters(port: u16, n: usize) -> Vec<String> {
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(greeted_by(port).await);
    }
    out.sort();
    out.dedup();
    out
}

#[tokio::test]
async fn a_stopped_server_leaves_the_rotation_and_comes_back_when_restarted() {
    let mut a = Server::start("a", "PONG").await;
    let b = Server::start("b", "PONG").await;
    let (gw, port) = start(
        a.port,
        b.port,
        r#"interval = "100ms"
timeout = "1s""#,
    )
    .await;
    eventually(Duration::from_secs(10), "both servers UP", || async {
        status(&gw, a.port).await == "UP" && status(&gw, b.port).await == "UP"
    })
    .await;
    assert_eq!(greeters(port, 6).await, ["hello from a", "hello from b"]);

    a.stop().await;
    eventually(Duration::from_secs(10), "a shown DOWN", || async {
        status(&gw, a.port).await == "DOWN"
    })
    .await;
    assert_eq!(status(&gw, b.port).await, "UP");
    assert_eq!(greeters(port, 8).await, ["hello from b"]);

    // Only the check connects to `a` now: UP again means the check saw it.
    a.restart().await;
    eventually(Duration::from_secs(10), "a shown UP again", || async {
        status(&gw, a.port).await == "UP"
    })
    .await;
    assert_eq!(greeters(port, 6).await, ["hello from a", "hello from b"]);
}

#[tokio::test]
async fn a_server_answering_the_wrong_bytes_is_out_until_it_answers_right() {
    let good = Server::start("good", "PONG").await;
    let bad = Server::start("bad", "PANG").await;
    let (gw, port) = start(
        good.port,
        bad.port,
        r#"send = "PING\n"
expect = "PONG"
interval = "100ms"
unhealthyInterval = "100ms"
timeout = "500ms""#,
    )
    .await;
    // `bad` accepts every connection: only the check can take it out.
    eventually(Duration::from_secs(10), "bad shown DOWN", || async {
        status(&gw, bad.port).await == "DOWN"
    })
    .await;
    assert_eq!(status(&gw, good.port).await, "UP");
    assert_eq!(greeters(port, 8).await, ["hello from good"]);
    let service = gw.get("api.test", "/api/tcp/services/db@file").await;
    let json: serde_json::Value = serde_json::from_slice(&service.body).unwrap();
    assert_eq!(
        json["loadBalancer"]["healthCheck"]["expect"], "PONG",
        "{json}"
    );

    bad.answer("PONG");
    eventually(Duration::from_secs(10), "bad shown UP again", || async {
        status(&gw, bad.port).await == "UP"
    })
    .await;
    assert_eq!(
        greeters(port, 6).await,
        ["hello from bad", "hello from good"]
    );
}

#[tokio::test]
async fn a_check_on_its_own_port_judges_the_server() {
    // The server's traffic port answers; the check port (a closed one)
    // does not, so the server is out although it would take connections.
    let a = Server::start("a", "PONG").await;
    let b = Server::start("b", "PONG").await;
    let closed = free_port();
    let (gw, port) = start(
        a.port,
        b.port,
        &format!("port = {closed}\ninterval = \"100ms\""),
    )
    .await;
    eventually(Duration::from_secs(10), "both shown DOWN", || async {
        status(&gw, a.port).await == "DOWN" && status(&gw, b.port).await == "DOWN"
    })
    .await;
    // No server passes: the connection is closed without a greeting.
    assert_eq!(greeted_by(port).await, "");
    let service = gw.get("api.test", "/api/tcp/services/db@file").await;
    let json: serde_json::Value = serde_json::from_slice(&service.body).unwrap();
    assert_eq!(json["status"], "disabled", "{json}");
}
