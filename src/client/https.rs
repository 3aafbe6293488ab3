//! hyper-util's pooled client with rustls, for `https://` servers and for
//! upgrades (WebSocket) to `http://` ones: the requests the lean HTTP/1.1
//! pool and the h2c connection do not carry.

use super::{ClientError, ClientSettings, TlsSettings};
use crate::body::RequestBody;
use http::Uri;
use http::uri::Authority;
use hyper_rustls::{FixedServerNameResolver, HttpsConnector};
use hyper_util::client::legacy::{Client, connect::HttpConnector};
use hyper_util::rt::{TokioExecutor, TokioTimer};
use rustls::pki_types::ServerName;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// The connector of hyper-util's clients: TLS (or not) over [`Pinned`].
pub type Tls = HttpsConnector<Pinned>;

/// hyper-util's pooled client towards one server.
pub type HttpsClient = Client<Tls, RequestBody>;

/// Connects to one server's address whatever authority the request URI
/// names. The URI can then carry the Host the server should see, which
/// HTTP/2 sends as `:authority` (there is no other way to set it), while the
/// pool and the connection stay this server's.
#[derive(Clone)]
pub struct Pinned {
    target: Uri,
    inner: HttpConnector,
}

impl tower_service::Service<Uri> for Pinned {
    type Response = <HttpConnector as tower_service::Service<Uri>>::Response;
    type Error = <HttpConnector as tower_service::Service<Uri>>::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, _dst: Uri) -> Self::Future {
        // Boxed: HttpConnector's future type is not nameable; this runs once
        // per new connection, not per request.
        Box::pin(self.inner.call(self.target.clone()))
    }
}

/// What makes the two hyper-util clients of one server with these
/// settings: the main one (HTTP/2 in ALPN unless `disableHTTP2`) and the
/// HTTP/1.1-only one for upgrades to HTTPS servers. The connectors are made
/// (and the TLS settings checked) once; each worker makes its own clients
/// from them, so that each has its own pools.
pub(super) struct Connectors {
    builder: hyper_util::client::legacy::Builder,
    https_h1: Tls,
    /// None with `disableHTTP2`: the main client is then the HTTP/1.1 one.
    main: Option<Tls>,
}

impl Connectors {
    /// The connectors towards `server` with `settings`.
    pub(super) fn new(settings: &ClientSettings, server: &Authority) -> Result<Self, ClientError> {
        let mut inner = HttpConnector::new();
        inner.set_nodelay(true);
        inner.set_connect_timeout(settings.dial_timeout);
        inner.enforce_http(false);
        let target = Uri::builder()
            .scheme("http")
            .authority(server.clone())
            .path_and_query("/")
            .build()
            .map_err(|source| ClientError::BadAddress {
                server: server.clone(),
                source,
            })?;
        let http = Pinned { target, inner };
        let mut builder = Client::builder(TokioExecutor::new());
        builder
            .timer(TokioTimer::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(settings.idle_conn_timeout)
            .pool_max_idle_per_host(settings.max_idle_per_host)
            .set_host(false);
        if let Some(every) = settings.read_idle_timeout {
            // Traefik's readIdleTimeout and pingTimeout: HTTP/2 connections
            // that stay silent are checked with a PING, idle ones too, and
            // closed when the answer does not come in time.
            builder
                .http2_keep_alive_interval(every)
                .http2_keep_alive_timeout(settings.ping_timeout.unwrap_or(super::PING_TIMEOUT))
                .http2_keep_alive_while_idle(true);
        }
        let https_h1 = connector(&settings.tls, server, false, http.clone())?;
        let main = if settings.tls.disable_http2 {
            None
        } else {
            Some(connector(&settings.tls, server, true, http)?)
        };
        Ok(Connectors {
            builder,
            https_h1,
            main,
        })
    }

    /// A new pair of clients, with pools of their own: the main one and
    /// the HTTP/1.1-only one.
    pub(super) fn clients(&self) -> (HttpsClient, HttpsClient) {
        let https_h1 = self.builder.build(self.https_h1.clone());
        let main = match &self.main {
            Some(connector) => self.builder.build(connector.clone()),
            None => https_h1.clone(),
        };
        (main, https_h1)
    }
}

/// The connector for `http://` and `https://` servers. ALPN offers `h2` and
/// `http/1.1` with `http2`, nothing otherwise (servers then speak HTTP/1.1).
/// TLS sends and verifies `serverName`, or the server URL's host (never the
/// client's Host, which the request URI carries).
fn connector(
    settings: &TlsSettings,
    server: &Authority,
    http2: bool,
    http: Pinned,
) -> Result<Tls, ClientError> {
    let name = match settings.server_name.as_deref().filter(|n| !n.is_empty()) {
        Some(name) => {
            ServerName::try_from(name.to_owned()).map_err(|_| ClientError::BadServerName {
                name: name.to_owned(),
            })?
        }
        None => {
            let host = server.host().trim_start_matches('[').trim_end_matches(']');
            ServerName::try_from(host.to_owned()).map_err(|_| ClientError::BadTlsHost {
                host: host.to_owned(),
            })?
        }
    };
    let builder = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls_config(settings)?)
        .https_or_http()
        .with_server_name_resolver(FixedServerNameResolver::new(name));
    let builder = builder.enable_http1();
    Ok(if http2 {
        builder.enable_http2().wrap_connector(http)
    } else {
        builder.wrap_connector(http)
    })
}

/// The rustls client configuration `settings` describe: which server
/// certificates are accepted, and the client certificate offered.
pub fn tls_config(settings: &TlsSettings) -> Result<rustls::ClientConfig, ClientError> {
    super::tls::client_config(&super::tls::ClientTls {
        insecure_skip_verify: settings.insecure_skip_verify,
        root_cas: &settings.root_cas,
        peer_cert_uri: settings.peer_cert_uri.as_deref(),
        certificates: &settings.certificates,
        cipher_suites: &settings.cipher_suites,
        min_version: settings.min_version.as_deref(),
        max_version: settings.max_version.as_deref(),
    })
}
