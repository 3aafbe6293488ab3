//! The last hop: prepare the request for the server (hop-by-hop headers,
//! forwarded headers, Host, URI), send it through the pooled client, and
//! stream the answer back, joining both sides of an upgrade.

use super::error::Kind;
use super::forwarded::{Arrival, set_forwarded, strip_hop_by_hop};
use super::{ConnInfo, Proxy};
use crate::body::{ProxyBody, RequestBody, UpstreamFailure};
use crate::runtime::{Route, Server};
use http::header::{self, HeaderValue};
use http::uri::{PathAndQuery, Scheme};
use http::{Request, Response, StatusCode, Uri, Version};
use hyper_util::rt::TokioIo;

impl Proxy {
    /// Sends a routed request to `server` and returns its response (or the
    /// error response for what went wrong).
    pub(crate) async fn forward(
        &self,
        conn: &ConnInfo,
        route: &Route,
        server: &Server,
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
                peer: &conn.peer_header,
                tls: conn.tls,
                websocket,
                host: host_value.as_ref(),
                port: &conn.entry_point.port,
                server: &self.server_name,
            };
            set_forwarded(headers, &arrival);
            match (server.pass_host_header, host_value) {
                (true, Some(h)) => {
                    headers.insert(header::HOST, h);
                }
                _ => {
                    headers.insert(header::HOST, server.host_header.clone());
                }
            }
        }
        let (mut parts, body) = req.into_parts();
        parts.uri = match upstream_uri(server, &parts.uri) {
            Ok(uri) => uri,
            Err(()) => return Kind::BadRequest.into_response(),
        };
        parts.version = if server.h2c {
            Version::HTTP_2
        } else {
            Version::HTTP_11
        };
        let req = Request::from_parts(parts, body);

        let client = if server.h2c {
            &server.client.h2c
        } else {
            &server.client.http1
        };
        let sent = client.request(req);
        let result = match server.client.response_header_timeout {
            Some(limit) => match tokio::time::timeout(limit, sent).await {
                Ok(r) => r,
                Err(_) => {
                    tracing::debug!(router = %route.name, server = %server.url, "server did not answer in time");
                    return failed(Kind::Timeout, UpstreamFailure::Timeout);
                }
            },
            None => sent.await,
        };
        let mut resp = match result {
            Ok(resp) => resp,
            Err(e) => {
                tracing::debug!(router = %route.name, server = %server.url, error = %e, "server unreachable");
                let how = if e.is_connect() {
                    UpstreamFailure::NotSent
                } else {
                    UpstreamFailure::Broken
                };
                return failed(Kind::BadGateway, how);
            }
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
        if self.access_log.is_some() {
            resp.extensions_mut()
                .insert(super::observe::ServedBy(server.url.clone()));
        }
        resp.map(ProxyBody::Upstream)
    }
}

/// The error response for a failed upstream call, marked so that middlewares
/// (retry, circuitBreaker) can tell it from a server's own answer.
pub(crate) fn failed(kind: Kind, how: UpstreamFailure) -> Response<ProxyBody> {
    let mut resp = kind.into_response();
    resp.extensions_mut().insert(how);
    resp
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

fn upstream_uri(server: &Server, incoming: &Uri) -> Result<Uri, ()> {
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
    Uri::builder()
        .scheme(Scheme::HTTP)
        .authority(server.authority.clone())
        .path_and_query(path_and_query)
        .build()
        .map_err(|_| ())
}
