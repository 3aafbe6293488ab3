//! One request, after `observe` has set its time limits: check it, match
//! a route in the runtime, run it through the route's middlewares, and
//! hand it to the route's service; a server's service forwards it on
//! (`upstream`, `Proxy::forward`).

use super::error::{Kind, failed};
use super::forwarded::{remove_spoofable, strip_h2c_upgrade};
use super::validate::{self, Malformed};
use super::{ConnInfo, Proxy};
use crate::body::{ClientBody, ClientStream, ProxyBody, RequestBody, UpstreamFailure};
use crate::rule::RequestFacts;
use crate::rule::normalize_authority;
use crate::runtime::{EntryPointRoutes, Exchange, Route, ServiceRef, Terminal, Upstream};
use futures_util::future::BoxFuture;
use http::header::{self, HeaderValue};
use http::{Request, Response};
use std::borrow::Cow;
use std::sync::Arc;

/// An answer from a sleeping service's route: it keeps the service awake
/// until its body ends, and tells the access log how long the request
/// waited for the wake-up, if it did.
fn kept_awake(
    mut resp: Response<ProxyBody>,
    visit: crate::sleep::Visit,
    waited: Option<std::time::Duration>,
) -> Response<ProxyBody> {
    if let Some(waited) = waited {
        resp.extensions_mut().insert(crate::sleep::Waited(waited));
    }
    resp.map(|body| ProxyBody::boxed(crate::sleep::Open::new(body, visit)))
}

/// The answer given instead of waking (the waiting page, or why the service
/// could not wake), with how long the request waited, for the access log.
fn wake_refused(
    mut answer: Response<ProxyBody>,
    visit: &crate::sleep::Visit,
) -> Response<ProxyBody> {
    answer
        .extensions_mut()
        .insert(crate::sleep::Waited(visit.arrived().elapsed()));
    answer
}

/// A 400 for a request that could be read two ways; on HTTP/1 the
/// connection is closed after it, since what follows on it cannot be
/// trusted to start a new request.
fn refuse<B>(conn: &ConnInfo, req: &Request<B>, why: Malformed) -> Response<ProxyBody> {
    tracing::debug!(entry_point = %conn.entry_point.name, peer = %conn.peer, reason = %why, "request refused");
    let mut resp = Kind::BadRequest.into_response();
    if req.version() < http::Version::HTTP_2 {
        resp.headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    resp
}

/// The request target as routers and servers see it: its path cleaned
/// (`sanitizePath`), its query's semicolons encoded
/// (`encodeQuerySemicolons`).
#[inline]
fn clean_target<B>(
    req: &mut Request<B>,
    sanitize_path: bool,
    encode_semicolons: bool,
) -> Result<(), Malformed> {
    if sanitize_path {
        match validate::normalize_path(req.uri().path(), true)? {
            Cow::Borrowed(_) => {}
            Cow::Owned(clean) => {
                *req.uri_mut() = validate::with_path(req.uri(), &clean).ok_or(Malformed::Path)?;
            }
        }
    }
    if encode_semicolons && let Some(query) = req.uri().query().filter(|q| q.contains(';')) {
        *req.uri_mut() =
            with_query(req.uri(), &query.replace(';', "%3B")).ok_or(Malformed::Path)?;
    }
    Ok(())
}

impl Proxy {
    /// Checks one request from a client, routes it and runs it to its
    /// answer; also returns the route that took it, for metrics and the
    /// access log. Its body must arrive by `read_deadline` (`readTimeout`).
    pub(crate) async fn route(
        &self,
        conn: &ConnInfo,
        mut req: Request<ClientStream>,
        read_deadline: Option<tokio::time::Instant>,
    ) -> (Response<ProxyBody>, Option<Arc<Route>>) {
        let ep = &conn.entry_point;
        let checked = validate::check(&req)
            .and_then(|()| validate::check_path_characters(req.uri().path(), ep.denied_escapes))
            .and_then(|()| validate::check_hidden_dot_segments(req.uri().path()))
            .and_then(|()| validate::underscore_headers(req.headers_mut(), ep.underscore_headers));
        if let Err(why) = checked {
            return (refuse(conn, &req, why), None);
        }
        // On every entry point and before any middleware: no tunnel past
        // the routers (`strip_h2c_upgrade`).
        strip_h2c_upgrade(req.headers_mut());
        // A declared length over the limit is refused before routing; a
        // body without one is counted as it streams (`ClientBody`).
        let mut body_limit = conn.entry_point.max_request_body_bytes;
        if let Some(limit) = body_limit
            && let Some(declared) = http_body::Body::size_hint(req.body()).exact()
        {
            if declared > limit {
                tracing::debug!(entry_point = %conn.entry_point.name, peer = %conn.peer, declared, limit, "request body too large");
                return (Kind::TooLarge.into_response(), None);
            }
            // hyper holds the client to its declared length.
            body_limit = None;
        }
        if let Err(why) = clean_target(&mut req, ep.sanitize_path, ep.encode_query_semicolons) {
            return (refuse(conn, &req, why), None);
        }
        // A redirection with a priority, or routers allowed to take ACME
        // challenges, need the router first; otherwise what plain entry
        // points answer themselves comes before routing.
        let routed_first = !conn.tls
            && (ep.allow_acme_by_pass
                || ep.redirect.as_ref().is_some_and(|r| r.priority.is_some()));
        if !conn.tls
            && !routed_first
            && Proxy::may_answer_plain(conn, &req)
            && let Some(answer) = self.plain_answer(conn, &req, None).await
        {
            return (answer, None);
        }
        // Absolute-form targets (and HTTP/2's :authority) carry the host in
        // the URI; it wins over a Host header, as RFC 9112 §3.2.2 says.
        let host_value: Option<HeaderValue> = match req.uri().authority() {
            Some(a) => HeaderValue::from_str(a.as_str()).ok(),
            None => req.headers().get(header::HOST).cloned(),
        };
        let host_text = host_value
            .as_ref()
            .and_then(|h| h.to_str().ok())
            .unwrap_or("");
        let host = normalize_authority(host_text);
        let route = self.find_route(conn, &req, &host);
        if routed_first
            && Proxy::may_answer_plain(conn, &req)
            && let Some(answer) = self.plain_answer(conn, &req, route.as_deref()).await
        {
            return (answer, None);
        }
        let Some(route) = route else {
            return (Kind::NoRoute.into_response(), None);
        };
        // A service that sleeps: the request may wait for its wake-up, and
        // keeps it awake until its answer ends.
        let (route, visit, waited) = match self.sleeper.enter(&route.service_name) {
            None => (route, None, None),
            Some(visit) => match self
                .await_wake(wants_page(&req), route, &visit, || {
                    self.find_route(conn, &req, &host)
                })
                .await
            {
                Ok((route, waited)) => {
                    let waited = waited.then(|| visit.arrived().elapsed());
                    (route, Some(visit), waited)
                }
                Err((answer, route)) => return (wake_refused(answer, &visit), Some(route)),
            },
        };
        // Gangway's own routers (unless `tracing.addInternals`) and routers
        // with `observability.tracing=false` make no spans; `observe`
        // drops the entry point's.
        if let Some(tracer) = &self.tracer
            && (!route.traced || (route.internal && !tracer.add_internals))
        {
            req.extensions_mut().remove::<crate::otel::trace::Traced>();
        }
        if route.tls && super::connection::misdirected(conn, &host) {
            return (Kind::Misdirected.into_response(), Some(route));
        }
        // A chunked body's framing is only read as the body streams, after
        // the head went out. What has already arrived is read now, so that
        // a broken chunk in it is refused before any server sees the head.
        // Not with `Expect: 100-continue`: reading would tell the client
        // to send its body before the middlewares (authentication) have
        // accepted the request.
        if req.version() == http::Version::HTTP_11
            && req.headers().contains_key(header::TRANSFER_ENCODING)
            && !req.headers().contains_key(header::EXPECT)
        {
            let (parts, body) = req.into_parts();
            match body.read_ready().await {
                Ok(body) => req = Request::from_parts(parts, body),
                Err(e) => {
                    tracing::debug!(entry_point = %conn.entry_point.name, peer = %conn.peer, error = %e, "request body refused before forwarding");
                    let req = Request::from_parts(parts, ());
                    return (refuse(conn, &req, Malformed::Chunk), Some(route));
                }
            }
        }
        // Boxed from here to the connection that sends it: each async layer
        // on the way keeps its own copy of its arguments for as long as the
        // request is in flight, and the request is large (a bound on its
        // size is tested in tests/it/proxy/sizes.rs).
        let req =
            Box::new(req.map(|body| {
                RequestBody::Incoming(ClientBody::new(body, body_limit, read_deadline))
            }));
        let mut req = req;
        if let Some(visit) = &visit {
            // The upstream keeps it for an upgraded connection's lifetime.
            req.extensions_mut().insert(visit.clone());
        }
        let mut resp = self.run_route(conn, &route, host_value, req).await;
        if let Some(visit) = visit {
            resp = kept_awake(resp, visit, waited);
        }
        // Multi-layer routing: the child that answered is the router the
        // metrics and the access log name.
        let route = match resp.extensions_mut().remove::<TakenBy>() {
            Some(TakenBy(child)) => child,
            None => route,
        };
        (resp, Some(route))
    }

    /// The route for a request, from the current runtime. Inlined into
    /// each caller: out of line, it costs a call and a copy of the
    /// request's facts on every request.
    #[inline(always)]
    fn find_route<B>(&self, conn: &ConnInfo, req: &Request<B>, host: &str) -> Option<Arc<Route>> {
        let facts = RequestFacts {
            method: req.method(),
            host,
            path: req.uri().path(),
            query: req.uri().query(),
            headers: req.headers(),
            client_ip: conn.peer.ip(),
        };
        // One load per request; the Arc is copied out so no guard is held across an await.
        self.runtime
            .load()
            .route(conn.entry_point.id, conn.tls, &facts)
            .cloned()
    }

    /// Waits for a sleeping service to wake (bounded by its `hold`), then
    /// for its servers to be in the routing table: the route, and whether
    /// it waited; or the answer to give instead: the waiting page, or why
    /// it could not wake.
    /// `page`: the client would take the waiting page; `find` finds the
    /// route again in the newest runtime.
    async fn await_wake(
        &self,
        page: bool,
        route: Arc<Route>,
        visit: &crate::sleep::Visit,
        find: impl Fn() -> Option<Arc<Route>>,
    ) -> Result<(Arc<Route>, bool), (Response<ProxyBody>, Arc<Route>)> {
        use crate::sleep::{Ready, WakeError};
        // Held until the woken servers are routed, not only while they start.
        let _held = match visit.ready(page).await {
            Ok((Ready::Alone, _)) => return Ok((route, false)),
            Ok((Ready::Now, _)) if route.upstream.is_up() => return Ok((route, false)),
            Ok((Ready::Now | Ready::Woken, held)) => held,
            Ok((Ready::Page, _)) => return Err((waiting_page(), route)),
            Err(e) => return Err((wake_failed(&e), route)),
        };
        // The containers run; their servers are routed once the provider's
        // next build is compiled and published.
        let deadline = visit.arrived() + visit.hold();
        let mut published = self.runtime.subscribe();
        loop {
            if let Some(found) = find()
                && found.upstream.is_up()
            {
                return Ok((found, true));
            }
            match tokio::time::timeout_at(deadline.into(), published.changed()).await {
                Ok(Ok(())) => {}
                _ => {
                    let e = WakeError::HoldExpired {
                        unit: route.service_name.clone(),
                        hold: visit.hold(),
                    };
                    return Err((wake_failed(&e), route));
                }
            }
        }
    }

    /// Runs a routed request to its answer: through the route's middlewares
    /// (if any) to the upstream.
    async fn run_route(
        &self,
        conn: &ConnInfo,
        route: &Route,
        host_value: Option<HeaderValue>,
        mut req: Box<Request<RequestBody>>,
    ) -> Response<ProxyBody> {
        // As at Traefik's entry points: an untrusted client's X-Forwarded-*
        // go before anything reads them, so middlewares (ipStrategy,
        // redirectScheme) see only trustworthy ones and may add their own.
        if !conn.entry_point.trust.trusts(conn.peer.ip()) {
            remove_spoofable(req.headers_mut());
        }
        // No middlewares and no spans to open: straight to the service,
        // without a `run_chain` future between (the usual route).
        if route.chain.is_empty() && self.tracer.is_none() {
            return self
                .to_service(conn, route, &route.upstream, host_value, req)
                .await;
        }
        self.run_chain(conn, route, host_value, req).await
    }

    /// Runs a request a router took through its middlewares to its
    /// service, or, for a parent router, to the child that matches.
    async fn run_chain(
        &self,
        conn: &ConnInfo,
        route: &Route,
        host_value: Option<HeaderValue>,
        mut req: Box<Request<RequestBody>>,
    ) -> Response<ProxyBody> {
        let _span = match &self.tracer {
            Some(_) => router_span(&mut req, route),
            None => None,
        };
        if route.chain.is_empty() {
            return self
                .to_service(conn, route, &route.upstream, host_value, req)
                .await;
        }
        let cx = exchange(conn, host_value.clone());
        let end = ToService {
            proxy: self,
            conn,
            route,
            service: &route.upstream,
            host_value,
        };
        route.chain.run(*req, &cx, &end).await
    }
}

/// The `Router` span of a traced request, with Traefik's attributes.
fn router_span(req: &mut Request<RequestBody>, route: &Route) -> Option<crate::otel::trace::Span> {
    let mut span = crate::otel::trace::enter(req, "Router", crate::otel::trace::Kind::Internal)?;
    span.set_str("traefik.service.name", &route.service_name);
    span.set_str("traefik.router.name", &route.name);
    span.set_str("http.route", &route.rule);
    Some(span)
}

/// The `Service` span of a traced request; a service other than the
/// route's (error pages) is not named.
fn service_span(
    req: &mut Request<RequestBody>,
    route: &Route,
    upstream: &Upstream,
) -> Option<crate::otel::trace::Span> {
    let mut span = crate::otel::trace::enter(req, "Service", crate::otel::trace::Kind::Internal)?;
    if std::ptr::eq(upstream, &*route.upstream) {
        span.set_str("traefik.service.name", &route.service_name);
    }
    Some(span)
}

/// What the middlewares of a request on `conn` know of it; `host` is its
/// Host as it arrived.
pub(super) fn exchange(conn: &ConnInfo, host: Option<HeaderValue>) -> Exchange {
    Exchange {
        peer: conn.peer.ip(),
        tls: conn.tls,
        host,
        client_certs: conn.client_certs.clone(),
    }
}

/// The end of a chain: the route's service, or the service whose own
/// middlewares the chain is (or another one, for error pages).
pub(super) struct ToService<'a> {
    pub(super) proxy: &'a Proxy,
    pub(super) conn: &'a ConnInfo,
    pub(super) route: &'a Route,
    /// Where the chain sends the request on.
    pub(super) service: &'a Upstream,
    pub(super) host_value: Option<HeaderValue>,
}

impl Proxy {
    /// Sends a request to a service: answered by gangway itself (internal
    /// services) or forwarded to the server the balancer picks.
    async fn to_service(
        &self,
        conn: &ConnInfo,
        route: &Route,
        upstream: &Upstream,
        host_value: Option<HeaderValue>,
        mut req: Box<Request<RequestBody>>,
    ) -> Response<ProxyBody> {
        if let Some(children) = &route.children
            && std::ptr::eq(upstream, &*route.upstream)
        {
            return self.to_child(conn, children, host_value, req).await;
        }
        let _span = match &self.tracer {
            Some(_) => service_span(&mut req, route, upstream),
            None => None,
        };
        if let Upstream::Internal(service) = upstream {
            let (parts, _body) = (*req).into_parts();
            return service
                .call(Request::from_parts(parts, ()))
                .await
                .map(ProxyBody::Local);
        }
        // The route's own service is bounded; a service a middleware sends
        // to (error pages) is not. The slot is held until the answer's
        // headers; a slot lent past the client's share may be taken back
        // before then, when another client needs it.
        let mut slot = match &route.gate {
            Some(gate) if std::ptr::eq(upstream, &*route.upstream) => {
                let client = conn.entry_point.trust.client(conn.peer.ip(), req.headers());
                match gate.admit(client).await {
                    Ok(slot) => Some(slot),
                    Err(_) => return Kind::Overloaded.into_response(),
                }
            }
            _ => None,
        };
        let forward = std::pin::pin!(self.forward(conn, route, upstream, host_value, req));
        match &mut slot {
            Some(slot) => slot
                .or_reclaimed(forward)
                .await
                .unwrap_or_else(|_| Kind::Overloaded.into_response()),
            None => forward.await,
        }
    }
}

impl Proxy {
    /// Multi-layer routing: hands a request its parent router took (and
    /// whose middlewares ran) to the first child whose rule matches the
    /// request as it is now, or answers 404, as Traefik's child muxer.
    fn to_child<'a>(
        &'a self,
        conn: &'a ConnInfo,
        children: &'a EntryPointRoutes,
        host_value: Option<HeaderValue>,
        req: Box<Request<RequestBody>>,
    ) -> BoxFuture<'a, Response<ProxyBody>> {
        Box::pin(async move {
            // A middleware may have changed the Host header; the URI's
            // authority (absolute form, HTTP/2) still wins over it.
            let host_value = match req.uri().authority() {
                Some(a) => HeaderValue::from_str(a.as_str()).ok(),
                None => req.headers().get(header::HOST).cloned().or(host_value),
            };
            let host_text = host_value
                .as_ref()
                .and_then(|h| h.to_str().ok())
                .unwrap_or("");
            let host = normalize_authority(host_text);
            let child = {
                let facts = RequestFacts {
                    method: req.method(),
                    host: &host,
                    path: req.uri().path(),
                    query: req.uri().query(),
                    headers: req.headers(),
                    client_ip: conn.peer.ip(),
                };
                children.find(false, &facts).cloned()
            };
            let Some(child) = child else {
                return Kind::NoRoute.into_response();
            };
            // A child's service may sleep as a root's may: the request waits
            // for it the same way, and finds the child again once it is up.
            let Some(visit) = self.sleeper.enter(&child.service_name) else {
                return self.run_child(conn, child, host_value, req).await;
            };
            let name = child.name.clone();
            let find = || {
                let rt = self.runtime.load();
                let routes = rt.entry_points.get(conn.entry_point.id)?;
                named_child(routes, &name).cloned()
            };
            match self.await_wake(wants_page(&req), child, &visit, find).await {
                Ok((child, waited)) => {
                    let waited = waited.then(|| visit.arrived().elapsed());
                    let mut req = req;
                    req.extensions_mut().insert(visit.clone());
                    let resp = self.run_child(conn, child, host_value, req).await;
                    kept_awake(resp, visit, waited)
                }
                Err((answer, child)) => {
                    let mut answer = wake_refused(answer, &visit);
                    answer.extensions_mut().insert(TakenBy(child));
                    answer
                }
            }
        })
    }

    /// Runs a request through the child router that took it, which the
    /// answer names unless a deeper child did.
    async fn run_child(
        &self,
        conn: &ConnInfo,
        child: Arc<Route>,
        host_value: Option<HeaderValue>,
        req: Box<Request<RequestBody>>,
    ) -> Response<ProxyBody> {
        let mut resp = self.run_chain(conn, &child, host_value, req).await;
        if resp.extensions().get::<TakenBy>().is_none() {
            resp.extensions_mut().insert(TakenBy(child));
        }
        resp
    }
}

/// Whether the client would rather see the waiting page than wait.
fn wants_page<B>(req: &Request<B>) -> bool {
    crate::sleep::wants_page(req.headers())
}

/// The child router called `name`, at any depth below `routes`.
fn named_child<'a>(routes: &'a EntryPointRoutes, name: &str) -> Option<&'a Arc<Route>> {
    routes.routes.iter().find_map(|r| {
        let children = r.children.as_deref()?;
        children
            .routes
            .iter()
            .find(|c| c.name == name)
            .or_else(|| named_child(children, name))
    })
}

/// The child router (multi-layer routing) that answered a request, carried
/// on its response back to where the request was routed.
#[derive(Clone)]
struct TakenBy(Arc<Route>);

impl ToService<'_> {
    async fn forward_to(
        &self,
        upstream: &Upstream,
        req: Box<Request<RequestBody>>,
    ) -> Response<ProxyBody> {
        self.proxy
            .to_service(
                self.conn,
                self.route,
                upstream,
                self.host_value.clone(),
                req,
            )
            .await
    }
}

impl Terminal for ToService<'_> {
    fn send(&self, req: Request<RequestBody>) -> BoxFuture<'_, Response<ProxyBody>> {
        Box::pin(self.forward_to(self.service, Box::new(req)))
    }

    fn send_to<'a>(
        &'a self,
        service: &'a ServiceRef,
        req: Request<RequestBody>,
    ) -> BoxFuture<'a, Response<ProxyBody>> {
        Box::pin(async move {
            match service.get::<Upstream>() {
                Some(upstream) => self.forward_to(upstream, Box::new(req)).await,
                None => failed(Kind::NoServer, UpstreamFailure::NotSent),
            }
        })
    }
}

/// The page a browser gets while its service wakes.
fn waiting_page() -> Response<ProxyBody> {
    let mut resp = Response::new(ProxyBody::text(crate::sleep::WAITING_PAGE));
    *resp.status_mut() = http::StatusCode::SERVICE_UNAVAILABLE;
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(header::RETRY_AFTER, HeaderValue::from_static("2"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

/// The answer to a request whose service could not wake, with the reason.
fn wake_failed(e: &crate::sleep::WakeError) -> Response<ProxyBody> {
    let mut resp = Response::new(ProxyBody::bytes(bytes::Bytes::from(format!("{e}\n"))));
    *resp.status_mut() = e.status();
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    h.insert(header::RETRY_AFTER, HeaderValue::from(e.retry_after()));
    resp
}

/// `uri` with its query replaced by `query`; None if that does not make a
/// URI.
fn with_query(uri: &http::Uri, query: &str) -> Option<http::Uri> {
    let mut parts = uri.clone().into_parts();
    let path_and_query = format!("{}?{query}", uri.path());
    parts.path_and_query = Some(http::uri::PathAndQuery::try_from(path_and_query).ok()?);
    http::Uri::from_parts(parts).ok()
}
