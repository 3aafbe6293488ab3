//! Backends for the load-balancing tests: each answers with its name,
//! counts what it answered, can be told to answer late or with another
//! status, and can start on a listener made beforehand (a port that
//! refused connections until then, or a full backlog that swallowed them).

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU16, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;
use tokio::net::{TcpListener, TcpSocket, TcpStream};

/// A backend that answers every request with its name.
pub struct Counted {
    pub name: String,
    pub addr: SocketAddr,
    /// Requests answered.
    hits: Arc<AtomicUsize>,
    /// The status it answers with.
    status: Arc<AtomicU16>,
    /// How long it waits before answering, in milliseconds.
    delay_ms: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Counted {
    /// A backend on a fresh loopback port.
    pub async fn start(name: &str) -> Counted {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        Self::on(listener, name)
    }

    /// A backend that waits `delay` before each answer.
    pub async fn slow(name: &str, delay: Duration) -> Counted {
        let c = Self::start(name).await;
        c.set_delay(delay);
        c
    }

    /// A backend serving on `listener`.
    pub fn on(listener: TcpListener, name: &str) -> Counted {
        let addr = listener.local_addr().expect("addr");
        let hits: Arc<AtomicUsize> = Arc::default();
        let status = Arc::new(AtomicU16::new(200));
        let delay_ms: Arc<AtomicU64> = Arc::default();
        let (n, h, s, d) = (
            name.to_owned(),
            hits.clone(),
            status.clone(),
            delay_ms.clone(),
        );
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let (n, h, s, d) = (n.clone(), h.clone(), s.clone(), d.clone());
                tokio::spawn(async move {
                    let svc = service_fn(move |_req: Request<Incoming>| {
                        let (n, h, s, d) = (n.clone(), h.clone(), s.clone(), d.clone());
                        async move {
                            let delay = d.load(Ordering::SeqCst);
                            if delay > 0 {
                                tokio::time::sleep(Duration::from_millis(delay)).await;
                            }
                            h.fetch_add(1, Ordering::SeqCst);
                            let mut resp = http::Response::new(Full::new(Bytes::from(n.clone())));
                            *resp.status_mut() =
                                StatusCode::from_u16(s.load(Ordering::SeqCst)).expect("status");
                            Ok::<_, Infallible>(resp)
                        }
                    });
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                });
            }
        });
        Counted {
            name: name.to_owned(),
            addr,
            hits,
            status,
            delay_ms,
            task,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Requests answered so far.
    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }

    /// Answer with `status` from now on.
    pub fn set_status(&self, status: u16) {
        self.status.store(status, Ordering::SeqCst);
    }

    /// Wait `delay` before each answer from now on.
    pub fn set_delay(&self, delay: Duration) {
        let ms = u64::try_from(delay.as_millis()).expect("delay");
        self.delay_ms.store(ms, Ordering::SeqCst);
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A loopback address whose connection attempts are never answered: a
/// listener with a backlog of 0 that never accepts, its queue filled by one
/// connection, so Linux drops every later SYN and the dialer waits until
/// its own timeout. No firewall rule or routable address needed.
pub struct Blackhole {
    listener: Option<TcpListener>,
    _filler: TcpStream,
    pub addr: SocketAddr,
}

impl Blackhole {
    pub async fn start() -> Blackhole {
        let socket = TcpSocket::new_v4().expect("socket");
        socket
            .bind("127.0.0.1:0".parse().expect("addr"))
            .expect("bind");
        let listener = socket.listen(0).expect("listen");
        let addr = listener.local_addr().expect("addr");
        let filler = TcpStream::connect(addr).await.expect("filler connection");
        Blackhole {
            listener: Some(listener),
            _filler: filler,
            addr,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Starts answering on the same address: a backend named `name`.
    pub fn come_alive(&mut self, name: &str) -> Counted {
        Counted::on(self.listener.take().expect("alive once"), name)
    }
}

/// A loopback port nothing listens on (connections are refused), which a
/// backend can take later with [`take_port`].
pub fn refusing_port() -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr")
}

/// A backend named `name` on `addr`, which refused connections until now.
pub async fn take_port(addr: SocketAddr, name: &str) -> Counted {
    Counted::on(TcpListener::bind(addr).await.expect("bind again"), name)
}
