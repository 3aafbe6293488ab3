//! Errors on the hot path: each kind knows its status, its body and its
//! metric label.

use crate::body::ProxyBody;
use http::{Response, StatusCode, header};

/// What went wrong with one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// No router matched.
    NoRoute,
    /// The service has no server to send to.
    NoServer,
    /// The server could not be reached or broke the exchange.
    BadGateway,
    /// The server did not answer in time.
    Timeout,
    /// The request itself is malformed, or its body broke off.
    BadRequest,
    /// The client did not send its request in time (`readTimeout`).
    RequestTimeout,
    /// The request body is larger than `maxRequestBodyBytes`.
    TooLarge,
    /// The request's host is not the TLS connection's server name.
    Misdirected,
    /// The service has as many requests in progress as it may, and the
    /// short wait for a slot ran out.
    Overloaded,
}

impl Kind {
    /// The status sent to the client.
    pub const fn status(self) -> StatusCode {
        match self {
            Kind::NoRoute => StatusCode::NOT_FOUND,
            Kind::NoServer => StatusCode::SERVICE_UNAVAILABLE,
            Kind::BadGateway => StatusCode::BAD_GATEWAY,
            Kind::Timeout => StatusCode::GATEWAY_TIMEOUT,
            Kind::BadRequest => StatusCode::BAD_REQUEST,
            Kind::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            Kind::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Kind::Misdirected => StatusCode::MISDIRECTED_REQUEST,
            Kind::Overloaded => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// The short plain-text body (Traefik's wording where it has one).
    pub const fn body(self) -> &'static str {
        match self {
            Kind::NoRoute => "404 page not found\n",
            Kind::NoServer => "no available server\n",
            Kind::BadGateway => "Bad Gateway\n",
            Kind::Timeout => "Gateway Timeout\n",
            Kind::BadRequest => "Bad Request\n",
            Kind::RequestTimeout => "Request Timeout\n",
            Kind::TooLarge => "Request Entity Too Large\n",
            Kind::Misdirected => {
                "Misdirected Request: the host does not match the TLS server name\n"
            }
            Kind::Overloaded => "Service Unavailable: too many requests in progress\n",
        }
    }

    /// The label used in logs and metrics.
    pub const fn as_label(self) -> &'static str {
        match self {
            Kind::NoRoute => "no_route",
            Kind::NoServer => "no_server",
            Kind::BadGateway => "bad_gateway",
            Kind::Timeout => "timeout",
            Kind::BadRequest => "bad_request",
            Kind::RequestTimeout => "request_timeout",
            Kind::TooLarge => "too_large",
            Kind::Misdirected => "misdirected",
            Kind::Overloaded => "overloaded",
        }
    }

    /// Seconds a client should wait before trying again, for errors that
    /// pass by themselves. A service without servers is usually one whose
    /// containers are restarting or turning healthy (the Docker provider
    /// keeps their routers for a grace period), so a short wait is right.
    pub const fn retry_after(self) -> Option<&'static str> {
        match self {
            Kind::NoServer => Some("5"),
            // A slot frees as soon as any request in progress is answered.
            Kind::Overloaded => Some("1"),
            _ => None,
        }
    }

    /// Whether the client, not a server, is at fault: the connection is
    /// closed after the answer, since what the client sends next cannot be
    /// trusted to start a new request.
    pub const fn is_client_fault(self) -> bool {
        matches!(
            self,
            Kind::BadRequest | Kind::RequestTimeout | Kind::TooLarge
        )
    }

    /// The response for this error.
    pub fn into_response(self) -> Response<ProxyBody> {
        let mut resp = Response::new(ProxyBody::text(self.body()));
        *resp.status_mut() = self.status();
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        if self.is_client_fault() {
            // HTTP/2 drops this field; there the stream alone ends.
            resp.headers_mut().insert(
                header::CONNECTION,
                header::HeaderValue::from_static("close"),
            );
        }
        if let Some(secs) = self.retry_after() {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from_static(secs));
        }
        resp
    }
}

/// The error response for a failed upstream call, marked so that middlewares
/// (retry, circuitBreaker) can tell it from a server's own answer.
pub(crate) fn failed(kind: Kind, how: crate::body::UpstreamFailure) -> Response<ProxyBody> {
    let mut resp = kind.into_response();
    resp.extensions_mut().insert(how);
    resp
}
