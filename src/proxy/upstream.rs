//! The last hop: prepare the request for the server (hop-by-hop headers,
//! forwarded headers, Host, URI), choose the server (sticky cookie, health,
//! failover, mirrors), send it through the pooled client with a passive
//! retry on refused connections, and stream the answer back, joining both
//! sides of an upgrade.

use super::error::{Kind, failed};
use super::forwarded::{Arrival, set_forwarded, strip_hop_by_hop};
use super::{ConnInfo, Proxy};
use crate::body::{ClientBodyError, ProxyBody, RequestBody, UpstreamBody, UpstreamFailure};
use crate::client::ServerKind;
use crate::runtime::{
    Descent, Exchange, LoadBalancer, MirrorCopy, Outcome, Route, Server, ServiceRef, Terminal,
    Upstream,
};
use bytes::Bytes;
use futures_util::future::BoxFuture;
use http::header::{self, HeaderValue};
use http::uri::{Authority, PathAndQuery};
use http::{HeaderMap, Method, Request, Response, StatusCode, Uri, Version};
use http_body::Body as _;
use http_body_util::BodyExt as _;
use hyper_util::rt::TokioIo;
use std::sync::Arc;
use tokio::sync::oneshot;

impl Proxy {
    /// Sends a routed request to `upstream`: walks down to a load balancer
    /// (sticky cookies, health, failover), copies it to mirrors, picks a
    /// server, and on a refused connection moves a request that is safe to
    /// replay to the next server. Returns the server's response, or the
    /// error response for what went wrong (marked with how it failed).
    pub(crate) async fn forward(
        &self,
        conn: &ConnInfo,
        route: &Route,
        upstream: &Upstream,
        host_value: Option<HeaderValue>,
        mut req: Box<Request<RequestBody>>,
    ) -> Response<ProxyBody> {
        let upgrade = is_upgrade(&req);
        // Both stay empty (no allocation) unless a sticky cookie must be set
        // or a mirror takes a copy.
        let mut cookies: Vec<HeaderValue> = Vec::new();
        let mut mirrors: Vec<MirrorCopy> = Vec::new();
        let client = Some(conn.peer.ip());
        // An upgrade is not held for a failover on status: it goes on.
        let descent = upstream.descend(
            req.headers(),
            &mut cookies,
            (!upgrade).then_some(&mut mirrors),
            (client, !upgrade),
        );
        let lb = match descent {
            None => return failed(Kind::NoServer, UpstreamFailure::NotSent),
            Some(Descent::Servers(lb)) => lb,
            Some(Descent::Service(service)) => {
                if !mirrors.is_empty() {
                    // The copies leave now, prepared as they would be below.
                    let mut headers = req.headers().clone();
                    self.arrive(conn, &mut headers, host_value.as_ref(), false, false);
                    let cx = super::pipeline::exchange(conn, host_value.clone());
                    req = Box::new(launch_mirrors(*req, mirrors, Some(headers), cx));
                }
                let mut resp = Box::pin(self.take_in(conn, route, service, host_value, req)).await;
                for c in cookies {
                    resp.headers_mut().append(header::SET_COOKIE, c);
                }
                return resp;
            }
        };
        let to_h2_client = req.version() == Version::HTTP_2;
        let websocket = upgrade
            && req
                .headers()
                .get(header::UPGRADE)
                .is_some_and(|u| u.as_bytes().eq_ignore_ascii_case(b"websocket"));
        let client_upgrade = upgrade.then(|| hyper::upgrade::on(&mut *req));
        self.arrive(
            conn,
            req.headers_mut(),
            host_value.as_ref(),
            upgrade,
            websocket,
        );
        if !mirrors.is_empty() {
            let cx = super::pipeline::exchange(conn, host_value.clone());
            req = Box::new(launch_mirrors(*req, mirrors, None, cx));
        }
        // Traced requests: the `ReverseProxy` span, which the server gets
        // as its parent.
        let mut span = match &self.tracer {
            Some(_) => client_span(&mut req),
            None => None,
        };
        let traced_target = span.as_ref().map(|_| {
            (
                req.method().clone(),
                req.version(),
                req.uri()
                    .path_and_query()
                    .map_or_else(|| "/".to_owned(), |p| p.as_str().to_owned()),
            )
        });
        // A sleeping service stays awake while its upgraded connection is open.
        let visit = upgrade
            .then(|| req.extensions().get::<crate::sleep::Visit>().cloned())
            .flatten();
        // The origin's duration is the access log's alone.
        let sent_at = self.access_log.as_ref().map(|_| std::time::Instant::now());
        // Kept when there is another server or service to try: a request
        // no server could be connected to is sent to the next one.
        let composite = !matches!(upstream, Upstream::Servers(_));
        let replay = (lb.servers.len() > 1 || composite)
            .then(|| Replay::of(&req).map(Box::new))
            .flatten();
        let to = Target {
            host: host_value.as_ref(),
            upgrade,
            router: &route.name,
            client,
        };
        let sent = send_on(upstream, lb, req, replay.as_deref(), &to, &mut cookies).await;
        let (mut resp, server) = match sent {
            Ok(sent) => sent,
            Err(failure) => {
                let resp = failure.into_response();
                if let Some(span) = &mut span {
                    span.response(resp.status().as_u16(), &http::HeaderMap::new());
                }
                return resp;
            }
        };
        if let (Some(span), Some((method, version, target))) = (&mut span, traced_target) {
            span.client_target(&method, version, &server.url, &target);
            span.response(resp.status().as_u16(), resp.headers());
        }
        drop(span);

        if resp.status() == StatusCode::SWITCHING_PROTOCOLS {
            if let Some(client_upgrade) = client_upgrade {
                let idle = conn.entry_point.web_socket_idle_timeout;
                join_upgrade(client_upgrade, &mut resp, idle, visit);
            }
            strip_hop_by_hop(resp.headers_mut(), true);
        } else {
            strip_hop_by_hop(resp.headers_mut(), false);
        }
        if to_h2_client {
            crate::body::h2_stream::detach_values(resp.headers_mut());
        }
        for c in cookies {
            resp.headers_mut().append(header::SET_COOKIE, c);
        }
        if let Some(log) = &self.access_log {
            let origin = origin(log, &resp, server, sent_at);
            resp.extensions_mut()
                .insert(super::observe::ServedBy(Box::new(origin)));
        }
        resp.map(ProxyBody::Upstream)
    }
}

/// Sends through `lb`, and while no server could be connected to, on to
/// the next service of a composite `upstream` (a weighted member, a
/// failover's fallback) when the request can be replayed.
async fn send_on<'a>(
    upstream: &'a Upstream,
    lb: &'a LoadBalancer,
    req: Box<Request<RequestBody>>,
    replay: Option<&Replay>,
    to: &Target<'_>,
    cookies: &mut Vec<HeaderValue>,
) -> Result<(Response<UpstreamBody>, &'a Server), Failure> {
    let mut sent = send(lb, req, replay, to, cookies).await;
    let Some(replay) = replay.filter(|_| !matches!(upstream, Upstream::Servers(_))) else {
        return sent;
    };
    let mut tried = vec![lb];
    while matches!(sent, Err(Failure::Connect)) && tried.len() < MAX_SERVICES_TRIED {
        let Some(next) = upstream.descend_again(&tried) else {
            break;
        };
        tracing::debug!(router = %to.router, from = %tried[tried.len() - 1].name, to = %next.name, "no server could be connected to; sending the request to the next service");
        tried.push(next);
        sent = send(next, Box::new(replay.request()), Some(replay), to, cookies).await;
    }
    sent
}

/// Joins the client's and the server's sides of an upgraded connection
/// (a WebSocket) once both are switched, in a task of its own that keeps
/// a sleeping service awake while it is open.
fn join_upgrade(
    client: hyper::upgrade::OnUpgrade,
    resp: &mut Response<UpstreamBody>,
    idle: Option<std::time::Duration>,
    visit: Option<crate::sleep::Visit>,
) {
    let server = hyper::upgrade::on(resp);
    tokio::spawn(async move {
        let _visit = visit;
        match tokio::try_join!(client, server) {
            Ok((c, s)) => {
                let (mut c, mut s) = (TokioIo::new(c), TokioIo::new(s));
                if let Err(e) = super::timeouts::tunnel(&mut c, &mut s, idle).await
                    && e.kind() == std::io::ErrorKind::TimedOut
                {
                    tracing::debug!("tunnel silent for webSocketIdleTimeout; closed");
                }
            }
            Err(e) => tracing::debug!(error = %e, "upgrade failed"),
        }
    });
}

/// What the access log says about the server that answered.
fn origin(
    log: &crate::access_log::AccessLogger,
    resp: &Response<UpstreamBody>,
    server: &Server,
    sent_at: Option<std::time::Instant>,
) -> crate::access_log::Origin {
    let content_length = resp
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok());
    crate::access_log::Origin {
        url: server.url.clone(),
        status: resp.status().as_u16(),
        duration: sent_at.map(|at| at.elapsed()).unwrap_or_default(),
        content_length,
        headers: log.wanted_headers.capture(resp.headers()),
    }
}

impl Proxy {
    /// What a request's headers become as it leaves for a server:
    /// hop-by-hop headers out, forwarded headers in.
    fn arrive(
        &self,
        conn: &ConnInfo,
        headers: &mut HeaderMap,
        host: Option<&HeaderValue>,
        upgrade: bool,
        websocket: bool,
    ) {
        strip_hop_by_hop(headers, upgrade);
        let arrival = Arrival {
            peer: &conn.peer_header,
            tls: conn.tls,
            websocket,
            host,
            server: &self.server_name,
            append_for: conn.entry_point.append_x_forwarded_for,
        };
        set_forwarded(headers, &arrival);
    }

    /// A service that takes the request itself on the way down
    /// ([`Descent::Service`]): its own middlewares run, then it sends on;
    /// or a failover on status holds the request to send it again.
    async fn take_in(
        &self,
        conn: &ConnInfo,
        route: &Route,
        service: &Upstream,
        host_value: Option<HeaderValue>,
        req: Box<Request<RequestBody>>,
    ) -> Response<ProxyBody> {
        match service {
            Upstream::Chained(c) => {
                let cx = super::pipeline::exchange(conn, host_value.clone());
                let end = super::pipeline::ToService {
                    proxy: self,
                    conn,
                    route,
                    service: &c.service,
                    host_value,
                };
                c.chain.run(*req, &cx, &end).await
            }
            Upstream::Failover(f) => match &f.on_status {
                Some(on) => {
                    self.failover_on_status(conn, route, f, on, host_value, req)
                        .await
                }
                None => self.forward(conn, route, service, host_value, req).await,
            },
            _ => self.forward(conn, route, service, host_value, req).await,
        }
    }

    /// `failover.errors`: holds the request body (up to the bound; larger
    /// gets 413), sends the request to the main service, and when its
    /// answer's status is one of the listed ones, sends the same request to
    /// the fallback instead and returns that answer.
    async fn failover_on_status(
        &self,
        conn: &ConnInfo,
        route: &Route,
        f: &crate::runtime::FailoverService,
        on: &crate::runtime::OnStatus,
        host_value: Option<HeaderValue>,
        req: Box<Request<RequestBody>>,
    ) -> Response<ProxyBody> {
        let (parts, mut body) = (*req).into_parts();
        let mut held = bytes::BytesMut::new();
        while let Some(frame) = body.frame().await {
            let Ok(frame) = frame else {
                return Kind::BadRequest.into_response();
            };
            if let Ok(data) = frame.into_data() {
                if held.len() + data.len() > on.max_body {
                    return Kind::TooLarge.into_response();
                }
                held.extend_from_slice(&data);
            }
        }
        let held = held.freeze();
        let copy = |parts: &http::request::Parts| {
            let mut req = Request::new(RequestBody::full(held.clone()));
            *req.method_mut() = parts.method.clone();
            *req.uri_mut() = parts.uri.clone();
            *req.version_mut() = parts.version;
            *req.headers_mut() = parts.headers.clone();
            req.headers_mut().remove(header::TRANSFER_ENCODING);
            if !held.is_empty() || parts.headers.contains_key(header::CONTENT_LENGTH) {
                req.headers_mut()
                    .insert(header::CONTENT_LENGTH, HeaderValue::from(held.len()));
            }
            Box::new(req)
        };
        let first = self
            .forward(conn, route, &f.main, host_value.clone(), copy(&parts))
            .await;
        if !on.matches(first.status().as_u16()) {
            return first;
        }
        tracing::debug!(router = %route.name, status = first.status().as_u16(), "failing over on the main service's answer");
        drop(first);
        self.forward(conn, route, &f.fallback, host_value, copy(&parts))
            .await
    }
}

/// Opens the `ReverseProxy` span of a traced request and tells the server
/// about it (`traceparent`).
fn client_span(req: &mut Request<RequestBody>) -> Option<crate::otel::trace::Span> {
    let mut span =
        crate::otel::trace::enter(req, "ReverseProxy", crate::otel::trace::Kind::Client)?;
    span.user_agent(req.headers());
    let traced = req
        .extensions()
        .get::<crate::otel::trace::Traced>()?
        .clone();
    traced.inject(req.headers_mut());
    Some(span)
}

/// Services a request is sent to, at most, when none of their servers
/// could be connected to.
const MAX_SERVICES_TRIED: usize = 8;

/// Where a request leaves for, whichever load balancer takes it.
struct Target<'a> {
    host: Option<&'a HeaderValue>,
    upgrade: bool,
    router: &'a str,
    client: Option<std::net::IpAddr>,
}

/// Sends `req` to a server of `lb`: the sticky or next one, then, when the
/// connection is refused (or fails before the request left) and the request
/// is safe to replay (`replay` holds its copy: the request head and a body
/// already in memory, which shares its buffer), the next servers in turn,
/// each at most once. Returns the response and the server that gave it.
async fn send<'a>(
    lb: &'a LoadBalancer,
    mut req: Box<Request<RequestBody>>,
    replay: Option<&Replay>,
    to: &Target<'_>,
    cookies: &mut Vec<HeaderValue>,
) -> Result<(Response<UpstreamBody>, &'a Server), Failure> {
    let (host, upgrade, router) = (to.host, to.upgrade, to.router);
    let cookie_slot = cookies.len();
    let mut idx = lb
        .choose(req.headers(), cookies, to.client)
        .ok_or(Failure::NoServer)?;
    let mut cookie_set = cookies.len() > cookie_slot;
    let mut tried: Vec<usize> = Vec::new();
    loop {
        let server = lb.servers.get(idx).ok_or(Failure::NoServer)?;
        prepare(&mut req, server, host, upgrade).map_err(|()| Failure::BadRequest)?;
        let failure = {
            // In flight until the response headers arrive (what p2c and
            // leasttime weigh); the time they took feeds leasttime. Counted
            // only for them: the count is one line every worker writes.
            let in_flight = lb
                .strategy
                .weighs_load()
                .then(|| lb.states.get(idx).map(|s| s.start()))
                .flatten();
            let called = call(server, upgrade, req, router).await;
            match called {
                Ok(resp) => {
                    if let Some(f) = &in_flight {
                        f.first_byte();
                    }
                    lb.record(idx, Outcome::Answered(resp.status().as_u16()));
                    return Ok((resp, server));
                }
                Err(f) => {
                    match f {
                        Failure::Connect => lb.record(idx, Outcome::Refused),
                        Failure::Timeout => lb.record(idx, Outcome::TimedOut),
                        Failure::Broken | Failure::Stale => lb.record(idx, Outcome::Broken),
                        Failure::NoServer | Failure::BadRequest | Failure::Client(_) => {}
                    }
                    f
                }
            }
        };
        // Nothing reached the server: the request goes on to the next
        // one. After a stale kept-alive connection, only an idempotent
        // request does (RFC 9110 §9.2.2).
        let again = match failure {
            Failure::Connect => true,
            Failure::Stale => replay.is_some_and(Replay::idempotent),
            _ => false,
        };
        let (true, Some(replay)) = (again, replay) else {
            return Err(match failure {
                Failure::Stale => Failure::Broken,
                f => f,
            });
        };
        tried.push(idx);
        let Some(next) = lb.next_excluding(&tried) else {
            return Err(Failure::Connect);
        };
        tracing::debug!(router, server = %server.url, next = %lb.servers[next].url, "connection failed; trying the next server");
        if let Some(c) = lb.sticky.as_ref().and_then(|s| s.set_cookie(next)) {
            if cookie_set {
                cookies[cookie_slot] = c.clone();
            } else {
                cookies.push(c.clone());
                cookie_set = true;
            }
        }
        req = Box::new(replay.request());
        idx = next;
    }
}

/// Why a request got no answer from a server.
#[derive(Clone, Copy)]
enum Failure {
    /// No server to send to (none, or none healthy).
    NoServer,
    /// The request cannot be pointed at the server.
    BadRequest,
    /// No connection: refused, unreachable, dial timeout, TLS handshake.
    /// The request was not sent.
    Connect,
    /// No response headers within `responseHeaderTimeout`.
    Timeout,
    /// Anything after the request went out.
    Broken,
    /// Sent on a kept-alive connection the server had closed, with no
    /// answer: the server did not take it.
    Stale,
    /// The client's body failed: too slow, too large or broken off.
    Client(Kind),
}

impl Failure {
    fn into_response(self) -> Response<ProxyBody> {
        match self {
            Failure::NoServer => failed(Kind::NoServer, UpstreamFailure::NotSent),
            Failure::BadRequest => Kind::BadRequest.into_response(),
            Failure::Connect => failed(Kind::BadGateway, UpstreamFailure::NotSent),
            Failure::Timeout => failed(Kind::Timeout, UpstreamFailure::Timeout),
            Failure::Broken | Failure::Stale => failed(Kind::BadGateway, UpstreamFailure::Broken),
            // The client's fault: not marked, so nothing retries it.
            Failure::Client(kind) => kind.into_response(),
        }
    }
}

async fn call(
    server: &Server,
    upgrade: bool,
    req: Box<Request<RequestBody>>,
    router: &str,
) -> Result<Response<UpstreamBody>, Failure> {
    let result = match server.client.response_header_timeout {
        Some(limit) => {
            // As in Traefik, responseHeaderTimeout counts from the moment the
            // whole request (head and body) has been handed to the server's
            // connection: an upload that takes longer than the limit is not
            // the server's delay, and the client's pace is bounded by
            // readTimeout instead.
            let (req, written) = signal_written(req);
            // Pinned where it is made and polled through the pin.
            let mut sent = std::pin::pin!(server.client.send(server.kind, upgrade, req));
            let clock = async {
                // A body dropped before its end (the server answered early,
                // or the exchange broke) starts the clock too.
                let _ = written.await;
                tokio::time::sleep(limit).await;
            };
            tokio::select! {
                biased;
                r = sent.as_mut() => r,
                () = clock => {
                    tracing::debug!(router, server = %server.url, "server did not answer in time");
                    return Err(Failure::Timeout);
                }
            }
        }
        None => server.client.send(server.kind, upgrade, req).await,
    };
    if result.is_ok() {
        server.client.passive.connected();
    }
    result.map_err(|e| {
        if let Some(fault) = ClientBodyError::find(&e) {
            tracing::debug!(router, server = %server.url, error = %fault, "request aborted: the client's fault");
            return Failure::Client(match fault {
                ClientBodyError::TimedOut => Kind::RequestTimeout,
                ClientBodyError::TooLarge => Kind::TooLarge,
                ClientBodyError::Broken(_) => Kind::BadRequest,
            });
        }
        tracing::debug!(router, server = %server.url, error = %e, connect = e.is_connect(), "server unreachable");
        if e.is_connect() {
            server.client.passive.failed(&e);
            Failure::Connect
        } else if e.is_stale() {
            Failure::Stale
        } else {
            Failure::Broken
        }
    })
}

/// `req` with its body wrapped so that the receiver completes once the
/// body has been read to its end (at once for a request without a body).
/// Boxed: only routes with a responseHeaderTimeout pay for it.
fn signal_written(
    req: Box<Request<RequestBody>>,
) -> (Box<Request<RequestBody>>, oneshot::Receiver<()>) {
    let (tx, rx) = oneshot::channel();
    let (parts, body) = (*req).into_parts();
    let mut body = Written {
        inner: body,
        done: Some(tx),
    };
    if body.inner.is_end_stream() {
        body.finish();
    }
    let req = Request::from_parts(parts, RequestBody::boxed(body));
    (Box::new(req), rx)
}

/// A request body that tells when it has been read to its end.
struct Written {
    inner: RequestBody,
    done: Option<oneshot::Sender<()>>,
}

impl Written {
    fn finish(&mut self) {
        if let Some(tx) = self.done.take() {
            let _ = tx.send(());
        }
    }
}

impl http_body::Body for Written {
    type Data = Bytes;
    type Error = crate::body::BoxError;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        use std::task::Poll;
        let this = self.get_mut();
        let polled = std::pin::Pin::new(&mut this.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(None) => this.finish(),
            // Clients stop polling once a body says it has ended, so the
            // final `None` may never come.
            Poll::Ready(Some(Ok(_))) if this.inner.is_end_stream() => this.finish(),
            _ => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// Points the request at `server`: Host header, URI, version.
fn prepare(
    req: &mut Request<RequestBody>,
    server: &Server,
    host: Option<&HeaderValue>,
    upgrade: bool,
) -> Result<(), ()> {
    let host = match (server.pass_host_header, host) {
        (true, Some(h)) => h.clone(),
        _ => server.host_header.clone(),
    };
    // gangway's own HTTP/1.1 pool writes the URI as it is: it gets only the
    // path and query (origin form), which is all that goes on the wire.
    // Other clients (HTTP/2, TLS, upgrades) find the server from the
    // absolute URI.
    let origin_form = server.kind == ServerKind::Http && !upgrade;
    *req.uri_mut() = upstream_uri(server, req.uri(), &host, origin_form)?;
    req.headers_mut().insert(header::HOST, host);
    *req.version_mut() = if server.kind == ServerKind::H2c {
        Version::HTTP_2
    } else {
        Version::HTTP_11
    };
    Ok(())
}

/// A request whose method is idempotent (RFC 9110 §9.2.2) may be sent again
/// when its first server could not be reached, if its body can be sent
/// again too: none, or one already held in memory (by buffering or retry).
fn replay_body(req: &Request<RequestBody>) -> Option<Option<Bytes>> {
    if !matches!(
        *req.method(),
        Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE | Method::PUT | Method::DELETE
    ) {
        return None;
    }
    if req.body().is_end_stream() {
        return Some(None);
    }
    req.body().as_full().map(Some)
}

/// A request kept to send it again: its head and, if it has one, its body
/// held in memory.
struct Replay {
    method: Method,
    uri: Uri,
    version: Version,
    headers: HeaderMap,
    body: Option<Bytes>,
}

impl Replay {
    /// The request's copy, when it is safe to replay.
    fn of(req: &Request<RequestBody>) -> Option<Self> {
        let body = replay_body(req)?;
        Some(Self::head(req, body))
    }

    fn head(req: &Request<RequestBody>, body: Option<Bytes>) -> Self {
        Self {
            method: req.method().clone(),
            uri: req.uri().clone(),
            version: req.version(),
            headers: req.headers().clone(),
            body,
        }
    }

    /// Whether sending it twice means the same as once (RFC 9110 §9.2.2).
    fn idempotent(&self) -> bool {
        matches!(
            self.method,
            Method::GET
                | Method::HEAD
                | Method::OPTIONS
                | Method::TRACE
                | Method::PUT
                | Method::DELETE
        )
    }

    fn request(&self) -> Request<RequestBody> {
        let body = match &self.body {
            Some(b) => RequestBody::full(b.clone()),
            None => RequestBody::empty(),
        };
        let mut req = Request::new(body);
        *req.method_mut() = self.method.clone();
        *req.uri_mut() = self.uri.clone();
        *req.version_mut() = self.version;
        *req.headers_mut() = self.headers.clone();
        req
    }
}

/// Starts sending copies of `req` to `mirrors` and returns the request to
/// send on. A body is copied while it streams to the main service, up to
/// the mirrors' limit; the copies leave once it is complete, and a body past
/// the limit is not mirrored. The mirrors' answers are read and dropped.
/// `headers`: the copies' own, when they differ from the request's.
fn launch_mirrors(
    req: Request<RequestBody>,
    mirrors: Vec<MirrorCopy>,
    headers: Option<HeaderMap>,
    cx: Exchange,
) -> Request<RequestBody> {
    let mut head = Replay::head(&req, None);
    if let Some(headers) = headers {
        head.headers = headers;
    }
    let (parts, body) = req.into_parts();
    let has_body = !body.is_end_stream();
    let want = mirrors.iter().filter_map(|m| m.body_limit).max();
    let (body, copy) = match (has_body, want) {
        (true, Some(limit)) => {
            let (body, rx) = body.tee(limit);
            (body, Some(rx))
        }
        _ => (body, None),
    };
    tokio::spawn(async move {
        let copied: Option<Bytes> = match copy {
            Some(rx) => rx.await.ok(),
            None => None,
        };
        let sends = mirrors.into_iter().filter_map(|m| {
            let mut req = head.request();
            if has_body {
                match (m.body_limit, &copied) {
                    (Some(limit), Some(b)) if b.len() <= limit => {
                        *req.body_mut() = RequestBody::full(b.clone());
                        req.headers_mut().remove(header::TRANSFER_ENCODING);
                        req.headers_mut()
                            .insert(header::CONTENT_LENGTH, HeaderValue::from(b.len()));
                    }
                    // mirrorBody = false: the copy goes without its body.
                    (None, _) => {
                        req.headers_mut().remove(header::CONTENT_LENGTH);
                        req.headers_mut().remove(header::TRANSFER_ENCODING);
                    }
                    // Larger than maxBodySize, or the body never completed.
                    _ => return None,
                }
            }
            Some(mirror(m.upstream, req, &cx))
        });
        futures_util::future::join_all(sends).await;
    });
    Request::from_parts(parts, body)
}

/// Sends one mirror copy and drains its answer.
async fn mirror(upstream: Arc<Upstream>, req: Request<RequestBody>, cx: &Exchange) {
    // A bound on what is read of a mirror's answer: it is thrown away.
    const DRAIN: usize = 1024 * 1024;
    let resp = send_copy(&upstream, Box::new(req), cx).await;
    let mut body = resp.into_body();
    let mut read = 0;
    while read < DRAIN {
        match body.frame().await {
            Some(Ok(f)) => read += f.data_ref().map_or(0, Bytes::len),
            _ => break,
        }
    }
}

/// Sends a mirror copy down `upstream`: through the middlewares of the
/// services on the way that have their own, to a server.
fn send_copy<'a>(
    upstream: &'a Upstream,
    req: Box<Request<RequestBody>>,
    cx: &'a Exchange,
) -> BoxFuture<'a, Response<ProxyBody>> {
    Box::pin(async move {
        let mut cookies = Vec::new();
        match upstream.descend(req.headers(), &mut cookies, None, (None, false)) {
            Some(Descent::Servers(lb)) => {
                let replay = (lb.servers.len() > 1).then(|| Replay::of(&req)).flatten();
                let to = Target {
                    host: cx.host.as_ref(),
                    upgrade: false,
                    router: "mirror",
                    client: None,
                };
                let sent = send(lb, req, replay.as_ref(), &to, &mut cookies).await;
                match sent {
                    Ok((resp, _)) => resp.map(ProxyBody::Upstream),
                    Err(failure) => failure.into_response(),
                }
            }
            Some(Descent::Service(Upstream::Chained(c))) => {
                let end = CopyEnd {
                    service: &c.service,
                    cx,
                };
                c.chain.run(*req, cx, &end).await
            }
            Some(Descent::Service(_)) | None => failed(Kind::NoServer, UpstreamFailure::NotSent),
        }
    })
}

/// The end of the chain of a service a mirror copy goes through.
struct CopyEnd<'a> {
    service: &'a Upstream,
    cx: &'a Exchange,
}

impl Terminal for CopyEnd<'_> {
    fn send(&self, req: Request<RequestBody>) -> BoxFuture<'_, Response<ProxyBody>> {
        send_copy(self.service, Box::new(req), self.cx)
    }

    fn send_to<'a>(
        &'a self,
        service: &'a ServiceRef,
        req: Request<RequestBody>,
    ) -> BoxFuture<'a, Response<ProxyBody>> {
        match service.get::<Upstream>() {
            Some(upstream) => send_copy(upstream, Box::new(req), self.cx),
            None => Box::pin(async { failed(Kind::NoServer, UpstreamFailure::NotSent) }),
        }
    }
}

fn is_upgrade<B>(req: &Request<B>) -> bool {
    req.version() == Version::HTTP_11
        && req.headers().contains_key(header::UPGRADE)
        && req.headers().get_all(header::CONNECTION).iter().any(|v| {
            v.to_str().is_ok_and(|v| {
                v.split(',')
                    .any(|t| t.trim().eq_ignore_ascii_case("upgrade"))
            })
        })
}
/// The URI for `server`: its scheme, the authority the server should see
/// (neither in origin form), its path prefix (preservePath), then the
/// request's path and query. Over HTTP/2 (`h2c://`, and `https://` when
/// ALPN picks it) the authority travels as `:authority`, so it is the Host
/// being sent; the server's own client connects to the server whatever it
/// says. Over HTTP/1.1 only the path goes on the wire, so the server's
/// address (no per-request parsing) does where the URI is absolute.
fn upstream_uri(
    server: &Server,
    incoming: &Uri,
    host: &HeaderValue,
    origin_form: bool,
) -> Result<Uri, ()> {
    let pq = incoming.path_and_query().map_or("/", PathAndQuery::as_str);
    let path_and_query: PathAndQuery = if server.path_prefix.is_empty() {
        match incoming.path_and_query() {
            Some(pq) => pq.clone(),
            None => PathAndQuery::from_static("/"),
        }
    } else {
        let mut joined = String::with_capacity(server.path_prefix.len() + pq.len());
        joined.push_str(&server.path_prefix);
        joined.push_str(pq);
        joined.parse().map_err(|_| ())?
    };
    if origin_form {
        return Ok(Uri::from(path_and_query));
    }
    let authority = match server.kind {
        ServerKind::H2c | ServerKind::Https if server.pass_host_header => {
            Authority::try_from(host.as_bytes()).unwrap_or_else(|_| server.authority.clone())
        }
        _ => server.authority.clone(),
    };
    Uri::builder()
        .scheme(server.kind.scheme())
        .authority(authority)
        .path_and_query(path_and_query)
        .build()
        .map_err(|_| ())
}
