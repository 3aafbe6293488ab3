//! One request: load the runtime, match a route, run it through the route's
//! middlewares (none yet) and hand it to the upstream.

use super::body::ProxyBody;
use super::error::Kind;
use super::forwarded::normalize_host;
use super::{ConnInfo, Proxy};
use crate::balance::RequestBody;
use crate::rule::RequestFacts;
use crate::runtime::Route;
use http::header::{self, HeaderValue};
use http::{Request, Response};
use hyper::body::Incoming;

impl Proxy {
    /// Handles one request from a client.
    pub(crate) async fn handle(
        &self,
        conn: &ConnInfo,
        req: Request<Incoming>,
    ) -> Response<ProxyBody> {
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
        let host = normalize_host(host_text);
        let route = {
            let facts = RequestFacts {
                method: req.method(),
                host: &host,
                path: req.uri().path(),
                query: req.uri().query(),
                headers: req.headers(),
                client_ip: conn.peer.ip(),
            };
            // One load per request; the Arc is copied out so no guard is held across an await.
            self.runtime
                .load()
                .route(conn.entry_point.id, conn.entry_point.tls, &facts)
                .cloned()
        };
        let Some(route) = route else {
            return Kind::NoRoute.into_response();
        };
        self.dispatch(conn, &route, host_value, req).await
    }

    /// Runs a routed request to its answer: the place where the route's
    /// middlewares will wrap the upstream call.
    async fn dispatch(
        &self,
        conn: &ConnInfo,
        route: &Route,
        host_value: Option<HeaderValue>,
        req: Request<Incoming>,
    ) -> Response<ProxyBody> {
        self.forward(conn, route, host_value, req.map(RequestBody::from))
            .await
    }
}
