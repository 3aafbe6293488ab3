//! The last hop: prepare the request for the server (hop-by-hop headers,
//! forwarded headers, Host, URI), choose the server (sticky cookie, health,
//! failover, mirrors), send it through the pooled client with a passive
//! retry on refused connections, and stream the answer back, joining both
//! sides of an upgrade.

use super::body::ProxyBody;
use super::error::Kind;
use super::forwarded::{Arrival, set_forwarded, strip_hop_by_hop};
use super::{ConnInfo, Proxy};
use crate::balance::RequestBody;
use crate::balance::body::Tee;
use crate::runtime::{LoadBalancer, MirrorCopy, Route, Server, ServerKind, Upstream};
use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::uri::{Authority, PathAndQuery};
use http::{HeaderMap, Method, Request, Response, StatusCode, Uri, Version};
use http_body::Body as _;
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use std::sync::Arc;

impl Proxy {
    /// Sends a routed request to its service: walks down to a load
    /// balancer (sticky cookies, health, failover), copies it to mirrors,
    /// picks a server, and on a refused connection moves a request that is
    /// safe to replay to the next server. Returns the server's response, or
    /// the error response for what went wrong.
    pub(crate) async fn forward(
        &self,
        conn: &ConnInfo,
        route: &Route,
        host_value: Option<HeaderValue>,
        mut req: Request<RequestBody>,
    ) -> Response<ProxyBody> {
        let upgrade = is_upgrade(&req);
        let websocket = upgrade
            && req
                .headers()
                .get(header::UPGRADE)
                .is_some_and(|u| u.as_bytes().eq_ignore_ascii_case(b"websocket"));
        let client_upgrade = upgrade.then(|| hyper::upgrade::on(&mut req));

        {
            let headers = req.headers_mut();
            strip_hop_by_hop(headers, upgrade);
            let arrival = Arrival {
                peer: conn.peer.ip(),
                trusted: conn.entry_point.trust.trusts(conn.peer.ip()),
                tls: conn.entry_point.tls,
                websocket,
                host: host_value.as_ref(),
                port: &conn.entry_point.port,
                server: &self.server_name,
            };
            set_forwarded(headers, &arrival);
        }

        // Both stay empty (no allocation) unless a sticky cookie must be set
        // or a mirror takes a copy.
        let mut cookies: Vec<HeaderValue> = Vec::new();
        let mut mirrors: Vec<MirrorCopy> = Vec::new();
        let Some(lb) = route.upstream.descend(
            req.headers(),
            &mut cookies,
            (!upgrade).then_some(&mut mirrors),
        ) else {
            return Kind::NoServer.into_response();
        };
        if !mirrors.is_empty() {
            req = launch_mirrors(req, mirrors, host_value.clone());
        }
        let mut resp = match send(
            lb,
            req,
            host_value.as_ref(),
            upgrade,
            &mut cookies,
            &route.name,
        )
        .await
        {
            Ok(resp) => resp,
            Err(kind) => return kind.into_response(),
        };

        if resp.status() == StatusCode::SWITCHING_PROTOCOLS {
            if let Some(client_upgrade) = client_upgrade {
                let server_upgrade = hyper::upgrade::on(&mut resp);
                tokio::spawn(async move {
                    match tokio::try_join!(client_upgrade, server_upgrade) {
                        Ok((c, s)) => {
                            let (mut c, mut s) = (TokioIo::new(c), TokioIo::new(s));
                            let _ = tokio::io::copy_bidirectional(&mut c, &mut s).await;
                        }
                        Err(e) => tracing::debug!(error = %e, "upgrade failed"),
                    }
                });
            }
            strip_hop_by_hop(resp.headers_mut(), true);
        } else {
            strip_hop_by_hop(resp.headers_mut(), false);
        }
        for c in cookies {
            resp.headers_mut().append(header::SET_COOKIE, c);
        }
        resp.map(ProxyBody::Upstream)
    }
}

/// Sends `req` to a server of `lb`: the sticky or next one, then, when the
/// connection is refused (or times out) and the request is safe to replay,
/// the next servers in turn, each at most once.
async fn send(
    lb: &LoadBalancer,
    req: Request<RequestBody>,
    host: Option<&HeaderValue>,
    upgrade: bool,
    cookies: &mut Vec<HeaderValue>,
    router: &str,
) -> Result<Response<Incoming>, Kind> {
    let cookie_slot = cookies.len();
    let mut idx = lb.choose(req.headers(), cookies).ok_or(Kind::NoServer)?;
    let mut cookie_set = cookies.len() > cookie_slot;
    // The one copy this costs: the request head, kept only when there is
    // another server to try.
    let replay = (lb.servers.len() > 1 && is_replayable(&req)).then(|| Replay::of(&req));
    let mut tried: Vec<usize> = Vec::new();
    let mut req = req;
    loop {
        let server = lb.servers.get(idx).ok_or(Kind::NoServer)?;
        prepare(&mut req, server, host)?;
        let failure = match call(server, upgrade, req, router).await {
            Ok(resp) => return Ok(resp),
            Err(f) => f,
        };
        let (Failure::Connect, Some(replay)) = (failure, &replay) else {
            return Err(failure.kind());
        };
        tried.push(idx);
        let Some(next) = lb.next_excluding(&tried) else {
            return Err(Kind::BadGateway);
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
        req = replay.request();
        idx = next;
    }
}

/// Why a call to a server failed.
#[derive(Clone, Copy)]
enum Failure {
    /// No connection: refused, unreachable, dial timeout, TLS handshake.
    /// The request was not sent.
    Connect,
    /// No response headers within `responseHeaderTimeout`.
    Timeout,
    /// Anything after the request went out.
    Broken,
}

impl Failure {
    fn kind(self) -> Kind {
        match self {
            Failure::Connect | Failure::Broken => Kind::BadGateway,
            Failure::Timeout => Kind::Timeout,
        }
    }
}

async fn call(
    server: &Server,
    upgrade: bool,
    req: Request<RequestBody>,
    router: &str,
) -> Result<Response<Incoming>, Failure> {
    let sent = server.client.send(server.kind, upgrade, req);
    let result = match server.client.response_header_timeout {
        Some(limit) => match tokio::time::timeout(limit, sent).await {
            Ok(r) => r,
            Err(_) => {
                tracing::debug!(router, server = %server.url, "server did not answer in time");
                return Err(Failure::Timeout);
            }
        },
        None => sent.await,
    };
    result.map_err(|e| {
        tracing::debug!(router, server = %server.url, error = %e, connect = e.is_connect(), "server unreachable");
        if e.is_connect() {
            Failure::Connect
        } else {
            Failure::Broken
        }
    })
}

/// Points the request at `server`: Host header, absolute URI, version.
fn prepare(
    req: &mut Request<RequestBody>,
    server: &Server,
    host: Option<&HeaderValue>,
) -> Result<(), Kind> {
    let host = match (server.pass_host_header, host) {
        (true, Some(h)) => h.clone(),
        _ => server.host_header.clone(),
    };
    *req.uri_mut() = upstream_uri(server, req.uri(), &host).map_err(|()| Kind::BadRequest)?;
    req.headers_mut().insert(header::HOST, host);
    *req.version_mut() = if server.kind == ServerKind::H2c {
        Version::HTTP_2
    } else {
        Version::HTTP_11
    };
    Ok(())
}

/// A request without a body whose method is idempotent (RFC 9110 §9.2.2)
/// may be sent again when its first server could not be reached.
fn is_replayable(req: &Request<RequestBody>) -> bool {
    matches!(
        *req.method(),
        Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE | Method::PUT | Method::DELETE
    ) && req.body().is_end_stream()
}

/// The head of a request, kept to send it again.
struct Replay {
    method: Method,
    uri: Uri,
    version: Version,
    headers: HeaderMap,
}

impl Replay {
    fn of(req: &Request<RequestBody>) -> Self {
        Self {
            method: req.method().clone(),
            uri: req.uri().clone(),
            version: req.version(),
            headers: req.headers().clone(),
        }
    }

    fn request(&self) -> Request<RequestBody> {
        let mut req = Request::new(RequestBody::empty());
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
fn launch_mirrors(
    req: Request<RequestBody>,
    mirrors: Vec<MirrorCopy>,
    host: Option<HeaderValue>,
) -> Request<RequestBody> {
    let (parts, body) = req.into_parts();
    let head = Replay {
        method: parts.method.clone(),
        uri: parts.uri.clone(),
        version: parts.version,
        headers: parts.headers.clone(),
    };
    let has_body = !body.is_end_stream();
    let want = mirrors.iter().filter_map(|m| m.body_limit).max();
    let (body, copy) = match (has_body, want, body) {
        (true, Some(limit), RequestBody::Incoming(inner)) => {
            let (tee, rx) = Tee::new(inner, limit);
            (RequestBody::Tee(tee), Some(rx))
        }
        (_, _, body) => (body, None),
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
                        *req.body_mut() = RequestBody::bytes(b.clone());
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
            Some(mirror(m.upstream, req, host.clone()))
        });
        futures_util::future::join_all(sends).await;
    });
    Request::from_parts(parts, body)
}

/// Sends one mirror copy and drains its answer.
async fn mirror(upstream: Arc<Upstream>, req: Request<RequestBody>, host: Option<HeaderValue>) {
    // A bound on what is read of a mirror's answer: it is thrown away.
    const DRAIN: usize = 1024 * 1024;
    let mut cookies = Vec::new();
    let Some(lb) = upstream.descend(req.headers(), &mut cookies, None) else {
        return;
    };
    let Ok(resp) = send(lb, req, host.as_ref(), false, &mut cookies, "mirror").await else {
        return;
    };
    let mut body = resp.into_body();
    let mut read = 0;
    while read < DRAIN {
        match body.frame().await {
            Some(Ok(f)) => read += f.data_ref().map_or(0, Bytes::len),
            _ => break,
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

/// The absolute URI for `server`: its scheme, the authority the server
/// should see, its path prefix (preservePath), then the request's path and
/// query. Over HTTP/2 (`h2c://`, and `https://` when ALPN picks it) the
/// authority travels as `:authority`, so it is the Host being sent; the
/// server's own client connects to the server whatever it says. Over plain
/// HTTP/1.1 only the path goes on the wire, so the server's address (no
/// per-request parsing) does.
fn upstream_uri(server: &Server, incoming: &Uri, host: &HeaderValue) -> Result<Uri, ()> {
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
