//! The TCP dial: connecting to a TCP server for a TCP router, with the
//! transport's time limit and keep-alive, and TLS towards servers that
//! want it.

use rustls::pki_types::ServerName;
use std::io;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::time::timeout;
use tokio_rustls::client::TlsStream;

/// Connects to the server at `address` within `dial_timeout` (`None`: no
/// limit), with TCP keep-alive probes every `keep_alive` when set.
pub async fn dial(
    address: &str,
    dial_timeout: Option<Duration>,
    keep_alive: Option<Duration>,
) -> io::Result<TcpStream> {
    let connect = TcpStream::connect(address);
    let stream = match dial_timeout {
        Some(limit) => timeout(limit, connect).await.map_err(|_| {
            io::Error::new(
                io::ErrorKind::TimedOut,
                "did not accept the connection in time",
            )
        })??,
        None => connect.await?,
    };
    let _ = stream.set_nodelay(true);
    if let Some(interval) = keep_alive {
        let probes = socket2::TcpKeepalive::new()
            .with_time(interval)
            .with_interval(interval);
        // Keep-alive is a nicety: a socket that refuses it still works.
        let _ = socket2::SockRef::from(&stream).set_tcp_keepalive(&probes);
    }
    Ok(stream)
}

/// Starts TLS on `server` as `config` says, sending and verifying `name`,
/// within `handshake_timeout` (the transport's dial timeout; `None`: no
/// limit).
pub async fn start_tls(
    config: &Arc<rustls::ClientConfig>,
    name: &ServerName<'static>,
    server: TcpStream,
    handshake_timeout: Option<Duration>,
) -> io::Result<TlsStream<TcpStream>> {
    let connector = tokio_rustls::TlsConnector::from(config.clone());
    let handshake = connector.connect(name.clone(), server);
    match handshake_timeout {
        Some(limit) => timeout(limit, handshake)
            .await
            .unwrap_or_else(|_| Err(io::ErrorKind::TimedOut.into())),
        None => handshake.await,
    }
}
