//! gangway's own HTTPS clients, the control plane's: ACME orders and its
//! CA probe, the DNS hosts' APIs, the Docker daemon over TLS, the HTTP
//! provider, OTLP exporters and etcd. Not the proxy's way to its servers
//! (`https.rs`): these send a few requests of gangway's own, each
//! with the trust its options give.
//!
//! Every one is made by [`Builder`], so each trusts through the same rustls
//! crypto provider and root store, and the connector's rules (ALPN chosen
//! by the connector, plain `http://` allowed or not) are decided once.

use crate::config::static_config::ProviderTls;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use rustls::RootCertStore;
use rustls::pki_types::ServerName;
use std::sync::Arc;
use std::time::Duration;

/// A control-plane client sending bodies of type `B`.
pub type ControlClient<B> = Client<HttpsConnector<HttpConnector>, B>;

/// The HTTP versions a client speaks, and so offers in ALPN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Versions {
    /// HTTP/1.1 only: no ALPN offered.
    Http1,
    /// HTTP/2 only: `h2` offered, and spoken with prior knowledge over
    /// `http://` (gRPC collectors expect h2c).
    Http2,
    /// `h2` and `http/1.1` offered; HTTP/1.1 over `http://`.
    Both,
}

/// A TLS client configuration trusting `roots` and offering no client
/// certificate, on gangway's crypto provider with TLS 1.2 and 1.3.
pub fn trusting(roots: RootCertStore) -> Result<rustls::ClientConfig, rustls::Error> {
    Ok(
        rustls::ClientConfig::builder_with_provider(Arc::new(crate::crypto::provider()))
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth(),
    )
}

/// How one control-plane client is made: its TLS, the versions it speaks,
/// whether it may speak plain HTTP, and its connection's clocks.
#[derive(Debug)]
#[must_use = "a builder does nothing until built"]
pub struct Builder {
    tls: rustls::ClientConfig,
    versions: Versions,
    https_only: bool,
    server_name: Option<ServerName<'static>>,
    connect_timeout: Option<Duration>,
    keepalive: Option<Duration>,
    nodelay: bool,
    idle_timeout: Option<Duration>,
}

impl Builder {
    /// A client with `tls` (made by [`trusting`], by
    /// [`super::tls::provider_config`], or kept elsewhere too, as ACME's
    /// probe keeps its own), speaking HTTP/1.1 to `https://` and `http://`
    /// URLs, with hyper's defaults for the connection.
    pub fn with_config(tls: rustls::ClientConfig) -> Self {
        Builder {
            tls,
            versions: Versions::Http1,
            https_only: false,
            server_name: None,
            connect_timeout: None,
            keepalive: None,
            nodelay: false,
            idle_timeout: None,
        }
    }

    /// A client trusting the Web PKI's roots.
    pub fn web_pki() -> Result<Self, rustls::Error> {
        trusting(super::tls::web_pki_roots()).map(Self::with_config)
    }

    /// A client with the TLS a `tls` section of the static configuration
    /// asks for (`ca`, `cert` and `key`, `insecureSkipVerify`); without
    /// one, trusting the Web PKI's roots.
    pub fn options(tls: Option<&ProviderTls>) -> Result<Self, super::ClientError> {
        let none = ProviderTls::default();
        super::tls::provider_config(tls.unwrap_or(&none)).map(Self::with_config)
    }

    /// Speaks `versions`.
    pub fn versions(mut self, versions: Versions) -> Self {
        self.versions = versions;
        self
    }

    /// Refuses `http://` URLs.
    pub fn https_only(mut self) -> Self {
        self.https_only = true;
        self
    }

    /// Verifies servers' certificates for `name`, when given, instead of
    /// the URL's host.
    pub fn server_name(mut self, name: Option<ServerName<'static>>) -> Self {
        self.server_name = name;
        self
    }

    /// Gives up connecting after `timeout`.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = Some(timeout);
        self
    }

    /// Sends TCP keep-alive probes after `idle` without traffic.
    pub fn keepalive(mut self, idle: Duration) -> Self {
        self.keepalive = Some(idle);
        self
    }

    /// Sends small writes at once (`TCP_NODELAY`).
    pub fn nodelay(mut self) -> Self {
        self.nodelay = true;
        self
    }

    /// Closes pooled connections idle for `idle`.
    pub fn idle_timeout(mut self, idle: Duration) -> Self {
        self.idle_timeout = Some(idle);
        self
    }

    /// The client.
    pub fn build<B>(self) -> ControlClient<B>
    where
        B: http_body::Body + Send + 'static,
        B::Data: Send,
    {
        let Builder {
            mut tls,
            versions,
            https_only,
            server_name,
            connect_timeout,
            keepalive,
            nodelay,
            idle_timeout,
        } = self;
        // The connector sets ALPN from the versions and refuses a
        // configuration that names protocols already.
        tls.alpn_protocols.clear();
        let mut http = HttpConnector::new();
        // The TLS layer above decides which schemes are allowed.
        http.enforce_http(false);
        http.set_connect_timeout(connect_timeout);
        http.set_keepalive(keepalive);
        http.set_nodelay(nodelay);
        let builder = hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(tls);
        let builder = if https_only {
            builder.https_only()
        } else {
            builder.https_or_http()
        };
        let builder = match server_name {
            Some(name) => {
                builder.with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(name))
            }
            None => builder,
        };
        let connector = match versions {
            Versions::Http1 => builder.enable_http1().wrap_connector(http),
            Versions::Http2 => builder.enable_http2().wrap_connector(http),
            Versions::Both => builder.enable_http1().enable_http2().wrap_connector(http),
        };
        let mut client = Client::builder(hyper_util::rt::TokioExecutor::new());
        if versions == Versions::Http2 {
            client.http2_only(true);
        }
        if let Some(idle) = idle_timeout {
            client
                .timer(hyper_util::rt::TokioTimer::new())
                .pool_idle_timeout(idle);
        }
        client.build(connector)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_connector_chooses_alpn_even_when_the_configuration_named_some() {
        let mut tls = trusting(crate::client::tls::web_pki_roots()).expect("web pki config");
        tls.alpn_protocols = vec![b"h2".to_vec()];
        for versions in [Versions::Http1, Versions::Http2, Versions::Both] {
            let _client: ControlClient<http_body_util::Empty<bytes::Bytes>> =
                Builder::with_config(tls.clone()).versions(versions).build();
        }
    }

    #[test]
    fn options_without_a_section_trust_the_web_pki() {
        assert!(Builder::options(None).is_ok());
        let half = ProviderTls {
            cert: Some("cert.pem".to_owned()),
            ..ProviderTls::default()
        };
        assert!(matches!(
            Builder::options(Some(&half)),
            Err(super::super::ClientError::HalfCertificate)
        ));
    }
}
