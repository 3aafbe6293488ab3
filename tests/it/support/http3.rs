//! A small HTTP/3 client for the tests: quinn and h3, as a browser's QUIC
//! stack would talk to gangway's UDP port.

use super::tls::TlsClient;
use bytes::{Buf, Bytes};
use http::{HeaderMap, Request, StatusCode};
use std::net::SocketAddr;
use std::sync::Arc;

/// One QUIC connection speaking HTTP/3.
pub struct H3Conn {
    pub conn: quinn::Connection,
    send: h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>,
    driver: tokio::task::JoinHandle<h3::error::ConnectionError>,
    _endpoint: quinn::Endpoint,
}

/// An HTTP/3 answer, read whole.
#[derive(Debug)]
pub struct H3Got {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl H3Got {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn seen(&self) -> super::Seen {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not a backend echo ({e}): {}", self.text()))
    }
}

/// Connects to 127.0.0.1:`port` over QUIC asking for `sni`, trusting what
/// `client` trusts, and sets up HTTP/3.
pub async fn connect(client: &TlsClient, port: u16, sni: &str) -> Result<H3Conn, String> {
    let mut tls = client.config(b"h3");
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls)
        .map_err(|e| format!("QUIC TLS: {e}"))?;
    let mut endpoint = quinn::Endpoint::client(SocketAddr::from(([127, 0, 0, 1], 0)))
        .map_err(|e| format!("client socket: {e}"))?;
    endpoint.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
    let conn = endpoint
        .connect(SocketAddr::from(([127, 0, 0, 1], port)), sni)
        .map_err(|e| format!("connect: {e}"))?
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    let (mut driver, send) = h3::client::new(h3_quinn::Connection::new(conn.clone()))
        .await
        .map_err(|e| format!("HTTP/3 setup: {e}"))?;
    let driver =
        tokio::spawn(async move { std::future::poll_fn(|cx| driver.poll_close(cx)).await });
    Ok(H3Conn {
        conn,
        send,
        driver,
        _endpoint: endpoint,
    })
}

impl H3Conn {
    /// Sends `req` (its body, if any, in one DATA frame) and reads the
    /// whole answer.
    pub async fn send(&mut self, req: Request<Bytes>) -> Result<H3Got, String> {
        let (parts, body) = req.into_parts();
        let mut stream = self
            .send
            .send_request(Request::from_parts(parts, ()))
            .await
            .map_err(|e| format!("request: {e}"))?;
        if !body.is_empty() {
            stream
                .send_data(body)
                .await
                .map_err(|e| format!("request body: {e}"))?;
        }
        stream.finish().await.map_err(|e| format!("finish: {e}"))?;
        let resp = stream
            .recv_response()
            .await
            .map_err(|e| format!("answer: {e}"))?;
        let mut body = Vec::new();
        while let Some(mut chunk) = stream
            .recv_data()
            .await
            .map_err(|e| format!("answer body: {e}"))?
        {
            while chunk.has_remaining() {
                let part = chunk.chunk();
                body.extend_from_slice(part);
                let n = part.len();
                chunk.advance(n);
            }
        }
        Ok(H3Got {
            status: resp.status(),
            headers: resp.headers().clone(),
            body: Bytes::from(body),
        })
    }

    /// GET `https://<host><path>`.
    pub async fn get(&mut self, host: &str, path: &str) -> Result<H3Got, String> {
        let req = Request::get(format!("https://{host}{path}"))
            .body(Bytes::new())
            .expect("request");
        self.send(req).await
    }

    /// A second handle on the same connection, for requests in parallel.
    pub fn sender(&self) -> h3::client::SendRequest<h3_quinn::OpenStreams, Bytes> {
        self.send.clone()
    }

    /// Resolves when the connection has ended, whoever closed it.
    pub async fn closed(&self) -> quinn::ConnectionError {
        self.conn.closed().await
    }

    /// The server's certificate chain, leaf first.
    pub fn peer_certificates(&self) -> Vec<rustls::pki_types::CertificateDer<'static>> {
        self.conn
            .peer_identity()
            .and_then(|id| {
                id.downcast::<Vec<rustls::pki_types::CertificateDer<'static>>>()
                    .ok()
            })
            .map(|certs| *certs)
            .unwrap_or_default()
    }
}

impl Drop for H3Conn {
    fn drop(&mut self) {
        self.driver.abort();
    }
}
