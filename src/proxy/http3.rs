//! HTTP/3: QUIC on the UDP side of an entry point's port
//! (`entryPoints.<n>.http3`), another front end of the same request
//! pipeline. Each request of each QUIC connection goes to
//! `Proxy::serve_request`, as HTTP/1 and HTTP/2 requests do, with a
//! `ConnInfo` that says TLS and carries the SNI; only the reading of heads
//! and bodies and the writing of answers are HTTP/3's own.
//!
//! TLS: one rustls configuration for the endpoint (QUIC cannot pick one
//! per ClientHello as the TCP side does), whose certificate resolver asks
//! the runtime of the moment, so certificates follow swaps and ACME just
//! as on TCP (`Termination::quic_certificate`).
//!
//! Address validation: a client whose address QUIC has not validated is
//! sent a Retry first, always. Its next Initial carries the token, so a
//! spoofed source costs gangway one small packet and no handshake state,
//! and gangway never amplifies towards someone else's address.
//!
//! Reset floods: a client that opens streams and cancels them before their
//! answers (HTTP/2's "rapid reset" over QUIC) costs gangway a task and a
//! request head each time, and QUIC gives it a new stream for each one it
//! ends. Past `limits.maxPendingResetStreams` such streams on a connection,
//! when they are more than half of its streams, the connection is closed
//! with `H3_EXCESSIVE_LOAD`, as HTTP/2's are with `ENHANCE_YOUR_CALM`.
//! Stream credit comes back only as streams end here, so a resetting
//! client gets at most its concurrent streams and that budget before the
//! close. The half keeps a browser that cancels a page's pending loads on
//! its connection.

use super::error::Kind;
use super::forwarded::strip_connection_specific;
use super::{ConnInfo, EntryPointInfo, Proxy};
use crate::body::ClientStream;
use crate::body::h3_stream::{H3Body, H3BodyError};
use crate::overload::ConnectionSlot;
use crate::runtime::RuntimeHandle;
use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use http::header;
use http::{Method, Request, Response};
use http_body::Body;
use http_body_util::BodyExt;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use std::future::{Future, poll_fn};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::{Instant, timeout};

/// The ALPN protocol of HTTP/3 (RFC 9114 §3.1).
const ALPN_H3: &[u8] = b"h3";

/// How long a QUIC connection may go without a packet from the client
/// before it counts as gone. gangway pings connections more often than
/// that (`KEEP_ALIVE`), so a live client never reaches it; the entry
/// point's `idleTimeout` (no request for that long) is kept separately.
const DEAD_PEER: Duration = Duration::from_secs(30);
const KEEP_ALIVE: Duration = Duration::from_secs(10);

/// `H3_EXCESSIVE_LOAD` (RFC 9114 §8.1): the peer's behaviour is
/// generating excessive load.
const H3_EXCESSIVE_LOAD: u32 = 0x107;

/// How a request stream ended, for the connection's count of streams the
/// client abandoned.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Outcome {
    /// Answered, refused by gangway, or cut for its time limits.
    Served,
    /// The client reset it, or ended it unfinished, before its answer's
    /// head went out.
    Cancelled,
}

/// Counts a connection's streams and those its client cancelled; says
/// when the cancelled ones are a flood.
#[derive(Debug, Default)]
struct ResetBudget {
    opened: u64,
    cancelled: u64,
}

impl ResetBudget {
    fn opened(&mut self) {
        self.opened += 1;
    }

    /// Records how a stream ended; true once the client has cancelled more
    /// than `budget` streams and more than half of all it opened (`budget`
    /// 0: no limit).
    fn ended(&mut self, outcome: Outcome, budget: u32) -> bool {
        if outcome == Outcome::Cancelled {
            self.cancelled += 1;
        }
        budget > 0 && self.cancelled > u64::from(budget) && self.cancelled * 2 > self.opened
    }
}

/// Unidirectional streams a client may open: HTTP/3 needs three (control,
/// QPACK encoder and decoder); a few more allow for reserved (grease) ones.
const MAX_UNI_STREAMS: u32 = 8;

/// How long a closing connection waits, after its last answer, for the
/// client to acknowledge it (or to close first): QUIC's close drops what
/// is still unacknowledged. A few round trips, at least `CLOSE_LINGER_MIN`
/// (a lost packet's retransmission), at most `CLOSE_LINGER`.
const CLOSE_LINGER: Duration = Duration::from_secs(1);
const CLOSE_LINGER_MIN: Duration = Duration::from_millis(100);

/// Why HTTP/3 could not be set up on an entry point.
#[derive(Debug, thiserror::Error)]
pub enum Http3Error {
    /// The TLS configuration is not one QUIC can use.
    #[error("TLS for QUIC: {0}")]
    Tls(#[from] rustls::Error),
    /// The TLS configuration lacks what QUIC needs (TLS 1.3's
    /// AES-128-GCM suite for Initial packets).
    #[error("TLS for QUIC: {0}")]
    NoInitialSuite(#[from] quinn::crypto::rustls::NoInitialCipherSuite),
    /// The UDP socket could not be used.
    #[error("UDP socket: {0}")]
    Socket(#[from] std::io::Error),
}

/// Certificates for QUIC handshakes: those of the runtime current at the
/// handshake, chosen by SNI as on TCP.
struct QuicCertificates {
    runtime: Arc<RuntimeHandle>,
}

impl std::fmt::Debug for QuicCertificates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("QuicCertificates")
    }
}

impl ResolvesServerCert for QuicCertificates {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.runtime.load().tls.quic_certificate(hello)
    }
}

/// A QUIC endpoint serving HTTP/3 on `socket` for `entry_point`, with its
/// limits: concurrent streams as for HTTP/2, address validation always.
pub fn endpoint(
    socket: std::net::UdpSocket,
    runtime: Arc<RuntimeHandle>,
    entry_point: &EntryPointInfo,
) -> Result<quinn::Endpoint, Http3Error> {
    let mut tls = rustls::ServerConfig::builder_with_provider(Arc::new(crate::tls::provider()))
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(QuicCertificates { runtime }));
    tls.alpn_protocols = vec![ALPN_H3.to_vec()];
    // No 0-RTT: requests replayed from early data would reach servers twice.
    tls.max_early_data_size = 0;
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls)?;
    let mut transport = quinn::TransportConfig::default();
    transport
        .max_concurrent_bidi_streams(entry_point.max_concurrent_streams.into())
        .max_concurrent_uni_streams(MAX_UNI_STREAMS.into())
        .max_idle_timeout(quinn::IdleTimeout::try_from(DEAD_PEER).ok())
        .keep_alive_interval(Some(KEEP_ALIVE));
    let mut config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    config.transport_config(Arc::new(transport));
    let endpoint = quinn::Endpoint::new(
        quinn::EndpointConfig::default(),
        Some(config),
        socket,
        Arc::new(quinn::TokioRuntime),
    )?;
    Ok(endpoint)
}

/// Accepts QUIC connections until `shutdown` turns true, each served in a
/// task of its own, then refuses new ones, tells the open ones to finish
/// (GOAWAY) and waits up to the grace period for their requests.
pub async fn serve_http3(
    proxy: Arc<Proxy>,
    endpoint: quinn::Endpoint,
    entry_point: Arc<EntryPointInfo>,
    mut shutdown: watch::Receiver<bool>,
) {
    let builder = Arc::new(h3_builder(&entry_point));
    let (drain, drain_rx) = watch::channel(false);
    loop {
        let incoming = tokio::select! {
            incoming = endpoint.accept() => incoming,
            _ = shutdown.changed() => break,
        };
        let Some(incoming) = incoming else { break };
        if !incoming.remote_address_validated() {
            if incoming.may_retry() {
                let _ = incoming.retry();
            } else {
                // A Retry was sent already, and its token did not come
                // back valid: no second one, and no handshake.
                incoming.refuse();
            }
            continue;
        }
        let slot = match &entry_point.connections {
            Some(limit) => match limit.try_acquire() {
                Some(slot) => Some(slot),
                // QUIC has no listen backlog to wait in: the client is
                // refused, and tries again (or stays on TCP).
                None => {
                    incoming.refuse();
                    continue;
                }
            },
            None => None,
        };
        tokio::spawn(serve_connection(
            proxy.clone(),
            incoming,
            entry_point.clone(),
            builder.clone(),
            drain_rx.clone(),
            slot,
        ));
    }
    endpoint.set_server_config(None);
    drop(drain_rx);
    tracing::info!(entry_point = %entry_point.name, "HTTP/3: stopped accepting; draining");
    let _ = drain.send(true);
    if timeout(entry_point.grace, drain.closed()).await.is_err() {
        tracing::warn!(entry_point = %entry_point.name, "HTTP/3: grace period over; closing remaining connections");
    }
    endpoint.close(0u32.into(), b"");
    let _ = timeout(CLOSE_LINGER, endpoint.wait_idle()).await;
}

/// The HTTP/3 settings of the entry point's connections: its head size
/// limit (QPACK-decoded, as for HTTP/2's header list).
fn h3_builder(entry_point: &EntryPointInfo) -> h3::server::Builder {
    let mut builder = h3::server::builder();
    builder.max_field_section_size(super::head_bytes(&entry_point.limits) as u64);
    builder
}

/// One QUIC connection from its handshake to its end.
async fn serve_connection(
    proxy: Arc<Proxy>,
    incoming: quinn::Incoming,
    entry_point: Arc<EntryPointInfo>,
    builder: Arc<h3::server::Builder>,
    mut drain: watch::Receiver<bool>,
    slot: Option<ConnectionSlot>,
) {
    let _slot = slot;
    let limit = super::timeouts::first_bytes_limit(&entry_point);
    let peer = incoming.remote_address();
    let connecting = match incoming.accept() {
        Ok(c) => c,
        Err(e) => {
            tracing::debug!(%peer, error = %e, "QUIC connection not accepted");
            return;
        }
    };
    let conn = match timeout(limit, connecting).await {
        Ok(Ok(conn)) => conn,
        Ok(Err(e)) => {
            tracing::debug!(%peer, error = %e, "QUIC handshake failed");
            return;
        }
        Err(_) => return,
    };
    let sni = conn
        .handshake_data()
        .and_then(|d| d.downcast::<quinn::crypto::rustls::HandshakeData>().ok())
        .and_then(|d| d.server_name)
        .map(|n| Box::<str>::from(n.to_ascii_lowercase()));
    let mut h3 = match timeout(
        limit,
        builder.build(h3_quinn::Connection::new(conn.clone())),
    )
    .await
    {
        Ok(Ok(h3)) => h3,
        Ok(Err(e)) => {
            tracing::debug!(%peer, error = %e, "HTTP/3 connection not set up");
            return;
        }
        Err(_) => return,
    };
    let peer = SocketAddr::new(peer.ip().to_canonical(), peer.port());
    let stats = entry_point.stats.clone();
    if let Some(s) = &stats {
        s.connection_opened();
    }
    let idle = entry_point.idle_timeout;
    let mut info = ConnInfo::new(entry_point, peer, true, sni);
    info.negotiated = Some(crate::tls::negotiated::Negotiated::QUIC);
    let info = Arc::new(info);
    let mut streams: FuturesUnordered<Pin<Box<dyn Future<Output = Outcome> + Send>>> =
        FuturesUnordered::new();
    let budget = info.entry_point.limits.max_pending_reset_streams;
    let mut resets = ResetBudget::default();
    let mut draining = false;
    let mut last_answer = Instant::now();
    let far = Instant::now() + Duration::from_secs(86_400);
    loop {
        let idle_at = idle
            .filter(|_| streams.is_empty() && !draining)
            .map(|idle| last_answer + idle);
        tokio::select! {
            accepted = h3.accept() => match accepted {
                Ok(Some(resolver)) => {
                    resets.opened();
                    streams.push(Box::pin(answer_stream(proxy.clone(), info.clone(), resolver, limit)));
                }
                // The client said GOAWAY and its requests are done.
                Ok(None) => break,
                Err(e) => {
                    tracing::trace!(%peer, error = %e, "HTTP/3 connection ended");
                    break;
                }
            },
            Some(outcome) = streams.next(), if !streams.is_empty() => {
                if resets.ended(outcome, budget) {
                    tracing::debug!(%peer, cancelled = resets.cancelled, opened = resets.opened, "HTTP/3 streams cancelled past the budget; connection closed");
                    conn.close(H3_EXCESSIVE_LOAD.into(), b"too many streams cancelled");
                    drop(streams);
                    drop(h3);
                    if let Some(s) = &stats {
                        s.connection_closed();
                    }
                    return;
                }
                if streams.is_empty() {
                    last_answer = Instant::now();
                    if draining {
                        break;
                    }
                }
            }
            _ = drain.changed(), if !draining => {
                draining = true;
                let _ = h3.shutdown(0).await;
                if streams.is_empty() {
                    break;
                }
            }
            () = tokio::time::sleep_until(idle_at.unwrap_or(far)), if idle_at.is_some() => {
                tracing::debug!(%peer, "HTTP/3 connection idle; closing");
                let _ = h3.shutdown(0).await;
                break;
            }
        }
    }
    // The last answers may still be unacknowledged; the client usually
    // closes once it has them and has seen the GOAWAY.
    let linger = (conn.rtt() * 4).clamp(CLOSE_LINGER_MIN, CLOSE_LINGER);
    let _ = timeout(linger, conn.closed()).await;
    drop(h3);
    conn.close(0u32.into(), b"");
    if let Some(s) = &stats {
        s.connection_closed();
    }
}

/// One request stream: its head (within the head time limit), the request
/// through the proxy, then its answer back.
async fn answer_stream(
    proxy: Arc<Proxy>,
    info: Arc<ConnInfo>,
    resolver: h3::server::RequestResolver<h3_quinn::Connection, Bytes>,
    limit: Duration,
) -> Outcome {
    let (req, stream) = match timeout(limit, resolver.resolve_request()).await {
        Ok(Ok(resolved)) => resolved,
        Ok(Err(e)) => {
            tracing::debug!(peer = %info.peer, error = %e, "HTTP/3 request head refused");
            return cancelled_or_served(&e);
        }
        Err(_) => return Outcome::Served,
    };
    let head_read = std::time::Instant::now();
    let (mut send, recv) = stream.split();
    let (parts, ()) = req.into_parts();
    let mut body = H3Body::new(recv, &parts.headers);
    // Whether a body follows is known only when the stream ends: for a
    // request that declares no length and rarely has a body (GET and the
    // like), its end is waited for (it comes with or right after the
    // head), so the server is not sent an empty body of unknown length.
    let wait_for_end = !parts.headers.contains_key(header::CONTENT_LENGTH)
        && matches!(
            parts.method,
            Method::GET | Method::HEAD | Method::OPTIONS | Method::DELETE | Method::TRACE
        );
    // As on HTTP/2 (and as nginx reads a body before it goes to a server):
    // a body declared and not begun is waited for, so that requests whose
    // bodies never come take no server's slot; past the head's time limit
    // the request gets a 408. Not with `Expect: 100-continue`, whose body
    // waits for gangway's go-ahead, nor when the declared length is past
    // the entry point's limit: that request gets its 413 without the body.
    let too_large = info
        .entry_point
        .max_request_body_bytes
        .zip(body.declared())
        .is_some_and(|(limit, declared)| declared > limit);
    let must_begin = !body.started() && !too_large && !parts.headers.contains_key(header::EXPECT);
    let started = poll_fn(|cx| match body.read_ready(cx) {
        Ok(true) => Poll::Ready(Ok(())),
        Ok(false) if wait_for_end || must_begin => Poll::Pending,
        Ok(false) => Poll::Ready(Ok(())),
        Err(e) => Poll::Ready(Err(e)),
    });
    match timeout(limit, started).await {
        Ok(Ok(())) => {}
        Err(_) if must_begin => {
            tracing::debug!(peer = %info.peer, "announced HTTP/3 request body never began");
            let resp = Kind::RequestTimeout.into_response();
            let req = Request::from_parts(parts, ());
            proxy.record_refusal(&info, &req, resp.status(), head_read);
            return answer(&mut send, resp).await;
        }
        Err(_) => {}
        // A body already past its content-length is a malformed request
        // (RFC 9114 §4.1.2): refused before anything of it is forwarded.
        Ok(Err(e @ H3BodyError::Excess { .. })) => {
            tracing::debug!(peer = %info.peer, error = %e, "HTTP/3 request body past its length before forwarding");
            send.stop_stream(h3::error::Code::H3_MESSAGE_ERROR);
            // Counted and logged as the 400 it stands for.
            let req = Request::from_parts(parts, ());
            proxy.record_refusal(&info, &req, http::StatusCode::BAD_REQUEST, head_read);
            return Outcome::Served;
        }
        // A body that ended short of its length is the client's fault
        // too, and the client is still there to be told so.
        Ok(Err(e @ H3BodyError::Short { .. })) => {
            tracing::debug!(peer = %info.peer, error = %e, "HTTP/3 request body short of its length before forwarding");
            let resp = Kind::BadRequest.into_response();
            let req = Request::from_parts(parts, ());
            proxy.record_refusal(&info, &req, resp.status(), head_read);
            return answer(&mut send, resp).await;
        }
        Ok(Err(e)) => {
            tracing::debug!(peer = %info.peer, error = %e, "HTTP/3 request body broke off before forwarding");
            send.stop_stream(h3::error::Code::H3_REQUEST_INCOMPLETE);
            return Outcome::Cancelled;
        }
    }
    let req = Request::from_parts(parts, ClientStream::H3(Box::new(body)));
    // An error: writeTimeout passed before the answer started.
    let Ok(resp) = proxy.serve_request(info, req).await else {
        send.stop_stream(h3::error::Code::H3_INTERNAL_ERROR);
        return Outcome::Served;
    };
    answer(&mut send, resp).await
}

/// Sends `resp` on the stream: its head, then its body and trailers.
async fn answer<B>(
    send: &mut h3::server::RequestStream<h3_quinn::SendStream<Bytes>, Bytes>,
    resp: Response<B>,
) -> Outcome
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: std::fmt::Display,
{
    let (mut head, mut body) = resp.into_parts();
    strip_connection_specific(&mut head.headers);
    if !head.headers.contains_key(header::DATE) {
        head.headers.insert(header::DATE, super::h2_server::date());
    }
    if !body.is_end_stream()
        && let Some(len) = body.size_hint().exact()
        && !head.headers.contains_key(header::CONTENT_LENGTH)
    {
        head.headers.insert(header::CONTENT_LENGTH, len.into());
    }
    if let Err(e) = send.send_response(Response::from_parts(head, ())).await {
        tracing::debug!(error = %e, "HTTP/3 answer head not sent");
        return cancelled_or_served(&e);
    }
    while let Some(frame) = body.frame().await {
        let sent = match frame {
            Ok(frame) => match frame.into_data() {
                Ok(data) if data.is_empty() => Ok(()),
                Ok(data) => send.send_data(data).await,
                Err(frame) => match frame.into_trailers() {
                    Ok(trailers) => send.send_trailers(trailers).await,
                    Err(_) => Ok(()),
                },
            },
            Err(e) => {
                tracing::debug!(error = %e, "answer body broke off; HTTP/3 stream reset");
                send.stop_stream(h3::error::Code::H3_INTERNAL_ERROR);
                return Outcome::Served;
            }
        };
        if let Err(e) = sent {
            tracing::debug!(error = %e, "HTTP/3 answer not sent");
            return Outcome::Served;
        }
    }
    let _ = send.finish().await;
    Outcome::Served
}

/// A stream error the client caused by cancelling: its reset (or
/// STOP_SENDING), or its end before a whole head.
fn cancelled_or_served(e: &h3::error::StreamError) -> Outcome {
    match e {
        h3::error::StreamError::RemoteTerminate { .. } => Outcome::Cancelled,
        h3::error::StreamError::StreamError { code, .. }
            if *code == h3::error::Code::H3_REQUEST_INCOMPLETE =>
        {
            Outcome::Cancelled
        }
        _ => Outcome::Served,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_is_cut_past_the_budget_of_cancelled_streams_only() {
        let mut flood = ResetBudget::default();
        let cut = (1..=100).find(|_| {
            flood.opened();
            flood.ended(Outcome::Cancelled, 20)
        });
        assert_eq!(cut, Some(21), "the 21st cancelled stream ends it");
        // A browser leaving a page: 30 loads cancelled among 80 streams.
        let mut page = ResetBudget::default();
        for i in 0..80 {
            page.opened();
            let outcome = if i >= 50 {
                Outcome::Cancelled
            } else {
                Outcome::Served
            };
            assert!(!page.ended(outcome, 20), "stream {i}");
        }
        // 0: no limit.
        let mut free = ResetBudget::default();
        for _ in 0..1000 {
            free.opened();
            assert!(!free.ended(Outcome::Cancelled, 0));
        }
    }
}
