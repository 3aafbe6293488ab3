//! Each request a connection reads starts here: its time limits are set,
//! it is routed and answered (`pipeline`), and it is watched to its end
//! for metrics and the access log. The response body is wrapped so that
//! bytes are counted as they stream and the request is recorded once, when
//! the body ends or is dropped.

use super::timeouts::InFlight;
use super::{ConnInfo, Proxy};
use crate::access_log::Entry;
use crate::body::{BoxError, ClientStream, ProxyBody};
use crate::metrics::{Sample, method_index, protocol_of};
use crate::runtime::Route;
use bytes::Bytes;
use http::{Request, Response, Version, header};
use http_body::{Body, Frame, SizeHint};
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Instant, SystemTime};
use tokio::time::Sleep;

/// A response body that reports when it is done.
pub struct ObservedBody {
    inner: ProxyBody,
    watch: Option<Box<Watch>>,
    /// Tells the connection the request is over when dropped.
    _in_flight: Option<InFlight>,
    /// `writeTimeout` of an HTTP/2 stream (HTTP/1 answers are timed by
    /// their connection).
    write_timer: Option<Pin<Box<Sleep>>>,
}

/// An answer that was not complete within `writeTimeout`: hyper closes the
/// HTTP/1 connection, or resets the HTTP/2 stream.
#[derive(Debug, thiserror::Error)]
#[error("the answer was not complete within writeTimeout")]
pub struct WriteTimedOut;

struct Watch {
    started: Instant,
    sample: Sample,
    /// The values of the `headerLabels` headers, in label order (empty
    /// when none are configured).
    header_values: Box<[String]>,
    conn_stats: Option<Arc<crate::metrics::Stats>>,
    route: Option<Arc<Route>>,
    entry: Option<Entry>,
    log: Option<Arc<crate::access_log::AccessLogger>>,
    /// The `EntryPoint` span of a traced request, ended with the answer.
    span: Option<crate::otel::trace::Span>,
}

impl Watch {
    fn finish(mut self: Box<Self>) {
        self.sample.duration = self.started.elapsed();
        if let Some(span) = self.span.take() {
            span.end();
        }
        let headers = &self.header_values;
        if let Some(s) = &self.conn_stats {
            s.record_with_headers(&self.sample, headers);
        }
        if let Some(route) = &self.route {
            if let Some(s) = &route.stats {
                s.record_with_headers(&self.sample, headers);
            }
            if let Some(s) = &route.service_stats {
                s.record_with_headers(&self.sample, headers);
            }
        }
        if let (Some(log), Some(mut entry)) = (self.log.take(), self.entry.take()) {
            entry.duration = self.sample.duration;
            entry.downstream_size = self.sample.response_bytes;
            entry.request_size = self.sample.request_bytes;
            log.log(entry);
        }
    }
}

impl Body for ObservedBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        if let Some(timer) = &mut this.write_timer
            && timer.as_mut().poll(cx).is_ready()
        {
            this.write_timer = None;
            return Poll::Ready(Some(Err(Box::new(WriteTimedOut))));
        }
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let (Some(w), Some(data)) = (this.watch.as_mut(), frame.data_ref()) {
                    w.sample.response_bytes += data.len() as u64;
                }
            }
            Poll::Ready(None) | Poll::Ready(Some(Err(_))) => {
                if let Some(w) = this.watch.take() {
                    w.finish();
                }
            }
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for ObservedBody {
    fn drop(&mut self) {
        // Bodies that end without a final poll (empty bodies, HEAD, client
        // gone) are recorded here.
        if let Some(w) = self.watch.take() {
            w.finish();
        }
    }
}

impl Proxy {
    /// Serves one request within the entry point's time limits; past
    /// `writeTimeout` before the answer starts, the error makes hyper close
    /// the connection (HTTP/2: reset the stream). The answer speaks the
    /// client's HTTP version, whatever the server's was.
    pub(crate) async fn serve_request(
        &self,
        conn: Arc<ConnInfo>,
        req: Request<ClientStream>,
    ) -> Result<Response<ObservedBody>, WriteTimedOut> {
        let ep = &conn.entry_point;
        let version = req.version();
        // HTTP/2 and HTTP/3 both multiplex: time limits are per request.
        let h2 = version >= Version::HTTP_2;
        let (head_started, in_flight) = match &conn.activity {
            Some(a) => {
                let (at, guard) = a.request_started(h2);
                (Some(at), Some(guard))
            }
            None => (None, None),
        };
        let read_deadline = ep
            .read_timeout
            .map(|limit| head_started.unwrap_or_else(tokio::time::Instant::now) + limit);
        let mut write_timer = None;
        if let Some(limit) = ep.write_timeout {
            let now = tokio::time::Instant::now();
            match &conn.activity {
                Some(a) if !h2 => a.write_due(now, limit),
                _ => write_timer = Some(Box::pin(tokio::time::sleep_until(now + limit))),
            }
        }
        // Pinned where it is made and polled through the pin, so it is not
        // moved again after it is built (nor is the one `route` future it
        // holds).
        let mut answer = pin!(self.observe(&conn, req, read_deadline));
        let mut resp = match &mut write_timer {
            None => answer.await,
            Some(timer) => tokio::select! {
                resp = answer.as_mut() => resp,
                () = timer.as_mut() => return Err(WriteTimedOut),
            },
        };
        // A server's answer carries its own version: an HTTP/1.0 server's
        // would make hyper answer an HTTP/1.1 client in HTTP/1.0 and close
        // the connection. With the client's version, hyper keeps an
        // HTTP/1.1 connection alive (chunking a body of unknown length),
        // and still gives an HTTP/1.0 client HTTP/1.0.
        *resp.version_mut() = version;
        // An HTTP/1 connection that has served its share (Traefik's
        // keep-alive bounds) says so on this answer, and hyper closes it
        // after, as Go's server does. Decided here, on the answer in hand:
        // a future wrapping this one would move the answer once more.
        if version < Version::HTTP_2
            && resp.status() != http::StatusCode::SWITCHING_PROTOCOLS
            && conn.keep_alive_spent()
        {
            resp.headers_mut()
                .insert(header::CONNECTION, http::HeaderValue::from_static("close"));
        }
        // Over TLS on TCP, the client learns that HTTP/3 is served too,
        // unless its name's TLS options keep it off QUIC.
        if conn.tls
            && version < Version::HTTP_3
            && let Some(alt_svc) = &ep.alt_svc
            && !resp.headers().contains_key(header::ALT_SVC)
            && self.runtime.load().tls.quic_serves(conn.sni.as_deref())
        {
            resp.headers_mut().insert(header::ALT_SVC, alt_svc.clone());
        }
        Ok(resp.map(|mut body| {
            body._in_flight = in_flight;
            body.write_timer = write_timer;
            body
        }))
    }

    /// Handles a request, recording it for metrics and the access log when
    /// either is on.
    async fn observe(
        &self,
        conn: &ConnInfo,
        mut req: Request<ClientStream>,
        read_deadline: Option<tokio::time::Instant>,
    ) -> Response<ObservedBody> {
        let log = &self.access_log;
        // The one branch an untraced request pays.
        let span = match &self.tracer {
            Some(tracer) if conn.entry_point.traced => start_trace(tracer, conn, &mut req),
            _ => None,
        };
        let recorded = conn.entry_point.stats.is_some()
            || log.is_some()
            || self.route_metrics
            || span.is_some();
        // What is known before the answer, boxed already: this future is
        // held for every request in flight, and the access log entry alone
        // is large (a bound on its size is tested in tests/it/proxy/sizes.rs). `route`
        // is called in one place only, so this future holds one `route`
        // future, not one per branch.
        let watch = recorded.then(|| {
            let request_bytes = req
                .headers()
                .get(header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            let sample = Sample {
                protocol: protocol_of(&req),
                method: method_index(req.method()),
                status: 0,
                duration: std::time::Duration::ZERO,
                request_bytes,
                response_bytes: 0,
                tls: conn.negotiated,
            };
            // Read only when `headerLabels` names headers: nothing is
            // allocated otherwise.
            let header_values = self
                .metrics_headers
                .iter()
                .map(|name| {
                    req.headers()
                        .get(name)
                        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
                        .unwrap_or_default()
                })
                .collect();
            Box::new(Watch {
                started: Instant::now(),
                sample,
                header_values,
                conn_stats: conn.entry_point.stats.clone(),
                route: None,
                entry: log.as_ref().map(|l| entry_for(conn, &req, l)),
                log: log.clone(),
                span,
            })
        });
        let (mut resp, route) = self.route(conn, req, read_deadline).await;
        if let Some(crate::middleware::retry::Retried(n)) = resp.extensions().get()
            && let Some(s) = route.as_ref().and_then(|r| r.service_stats.as_ref())
        {
            s.retried(u64::from(*n));
        }
        let Some(mut watch) = watch else {
            return resp.map(ObservedBody::plain);
        };
        if let Some(mut span) = watch.span.take() {
            // Requests to gangway's own routers, and routers with
            // `observability.tracing=false`, leave no trace.
            let untraced = route.as_ref().is_some_and(|r| {
                !r.traced || (r.internal && !self.tracer.as_ref().is_some_and(|t| t.add_internals))
            });
            if untraced {
                span.discard();
            } else {
                span.response(resp.status().as_u16(), resp.headers());
                if let Some(e) = &mut watch.entry {
                    e.trace = span.trace_id().zip(span.span_id());
                }
                watch.span = Some(span);
            }
        }
        // The dashboard polls the API every few seconds: its requests are
        // not the traffic metrics and the access log are about. Otherwise
        // the router's `observability` switches decide, and without them
        // the entry point's, as Traefik's entry point models do.
        let internal = route.as_ref().is_some_and(|r| r.internal);
        let counted = if internal {
            self.metrics_internals
        } else {
            route
                .as_ref()
                .and_then(|r| r.metrics)
                .unwrap_or(conn.entry_point.metrics)
        };
        let logged = if internal {
            self.log_internals
        } else {
            route
                .as_ref()
                .and_then(|r| r.access_logs)
                .unwrap_or(conn.entry_point.access_logs)
        };
        if !counted {
            watch.conn_stats = None;
        }
        if !logged {
            watch.entry = None;
        }
        if !counted && watch.entry.is_none() && watch.span.is_none() {
            return resp.map(ObservedBody::plain);
        }
        watch.sample.status = resp.status().as_u16();
        if let Some(e) = &mut watch.entry {
            e.status = watch.sample.status;
            e.router = route.as_ref().map(|r| r.name.clone());
            e.service = route.as_ref().map(|r| r.service_name.clone());
            e.origin = resp.extensions_mut().remove::<ServedBy>().map(|s| *s.0);
            e.client_username = resp
                .extensions()
                .get::<crate::middleware::ClientUsername>()
                .map(|u| u.0.clone());
            e.retry_attempts = resp
                .extensions()
                .get::<crate::middleware::retry::Retried>()
                .map_or(0, |r| r.0);
            e.sleep_wait = resp.extensions().get::<crate::sleep::Waited>().map(|w| w.0);
            if let Some(log) = &self.access_log {
                e.downstream_headers = log.wanted_headers.capture(resp.headers());
            }
        }
        watch.route = route.filter(|_| counted);
        resp.map(|inner| {
            let mut body = ObservedBody::plain(inner);
            body.watch = Some(watch);
            body
        })
    }
}

impl Proxy {
    /// Records a request gangway refused before it was routed (its body
    /// never began, or broke its `content-length`) as metrics and the
    /// access log record any answer: in the entry point's requests with
    /// `status`, and as an access log line, so an attack is seen where the
    /// rest of the traffic is. `started` is when its head arrived.
    pub(crate) fn record_refusal<B>(
        &self,
        conn: &ConnInfo,
        req: &Request<B>,
        status: http::StatusCode,
        started: Instant,
    ) {
        let duration = started.elapsed();
        if conn.entry_point.metrics
            && let Some(stats) = &conn.entry_point.stats
        {
            stats.record(&Sample {
                protocol: protocol_of(req),
                method: method_index(req.method()),
                status: status.as_u16(),
                duration,
                request_bytes: 0,
                response_bytes: 0,
                tls: conn.negotiated,
            });
        }
        if conn.entry_point.access_logs
            && let Some(log) = &self.access_log
        {
            let mut entry = entry_for(conn, req, log);
            entry.status = status.as_u16();
            entry.duration = duration;
            entry.start = SystemTime::now()
                .checked_sub(duration)
                .unwrap_or_else(SystemTime::now);
            log.log(entry);
        }
    }
}

/// Starts a request's trace when the tracer samples it: its `EntryPoint`
/// span, and the request's [`Traced`](crate::otel::trace::Traced) for the
/// spans under it.
fn start_trace(
    tracer: &Arc<crate::otel::trace::Tracer>,
    conn: &ConnInfo,
    req: &mut Request<ClientStream>,
) -> Option<crate::otel::trace::Span> {
    let (mut span, traced) = tracer.start(req.headers())?;
    let trusted = conn.entry_point.trust.trusts(conn.peer.ip());
    span.server_request(req, &conn.entry_point.name, conn.peer, (conn.tls, trusted));
    req.extensions_mut().insert(traced);
    Some(span)
}

impl ObservedBody {
    fn plain(inner: ProxyBody) -> Self {
        ObservedBody {
            inner,
            watch: None,
            _in_flight: None,
            write_timer: None,
        }
    }
}

/// Response extension with what the server that answered said, for the
/// access log.
#[derive(Clone, Debug)]
pub struct ServedBy(pub Box<crate::access_log::Origin>);

fn entry_for<B>(conn: &ConnInfo, req: &Request<B>, log: &crate::access_log::AccessLogger) -> Entry {
    let host = req
        .uri()
        .authority()
        .map(|a| a.as_str().to_owned())
        .or_else(|| {
            req.headers()
                .get(header::HOST)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        })
        .unwrap_or_default();
    Entry {
        peer: conn.peer,
        client_username: None,
        method: req.method().clone(),
        path: req
            .uri()
            .path_and_query()
            .map_or_else(|| req.uri().path().to_owned(), |p| p.as_str().to_owned()),
        protocol: match req.version() {
            Version::HTTP_3 => "HTTP/3.0",
            Version::HTTP_2 => "HTTP/2.0",
            Version::HTTP_10 => "HTTP/1.0",
            _ => "HTTP/1.1",
        },
        scheme: if conn.tls { "https" } else { "http" },
        host,
        status: 0,
        downstream_size: 0,
        request_size: 0,
        duration: std::time::Duration::ZERO,
        start: SystemTime::now(),
        request_count: log.next_request_count(),
        router: None,
        service: None,
        origin: None,
        entry_point: conn.entry_point.name.clone(),
        tls: conn
            .negotiated
            .map(|negotiated| crate::access_log::TlsFields {
                negotiated,
                client_subject: conn.client_subject.clone(),
            }),
        retry_attempts: 0,
        sleep_wait: None,
        headers: log.wanted_headers.capture(req.headers()),
        downstream_headers: Vec::new(),
        trace: None,
    }
}
