//! Endpoints as Traefik's `providers.etcd.endpoints` takes them:
//! `host:port`, or a URL with `http://` or `https://`.

use super::EtcdError;

/// etcd's client port, when an endpoint names none.
const DEFAULT_PORT: u16 = 2379;

/// One etcd member's client URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Endpoint {
    /// As configured, for messages.
    pub(super) name: String,
    /// `http://host:port` or `https://host:port`, without a trailing slash;
    /// gateway paths are appended to it.
    pub(super) base: String,
}

/// Parses one endpoint. A bare `host:port` speaks TLS when the client has a
/// TLS configuration (as Traefik's etcd provider does with `tls.*` set), and
/// plain HTTP otherwise; an explicit scheme wins.
pub(super) fn parse_endpoint(text: &str, tls: bool) -> Result<Endpoint, EtcdError> {
    let bad = |problem: String| EtcdError::BadEndpoint {
        endpoint: text.to_owned(),
        problem,
    };
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(bad("is empty".to_owned()));
    }
    let with_scheme = if trimmed.contains("://") {
        trimmed.to_owned()
    } else if tls {
        format!("https://{trimmed}")
    } else {
        format!("http://{trimmed}")
    };
    let uri: http::Uri = with_scheme
        .parse()
        .map_err(|e| bad(format!("is not host:port or a URL: {e}")))?;
    let scheme = match uri.scheme_str() {
        Some(s @ ("http" | "https")) => s,
        Some(other) => {
            return Err(bad(format!(
                "`{other}://` is not supported (use http:// or https://)"
            )));
        }
        None => return Err(bad("has no scheme".to_owned())),
    };
    let Some(host) = uri.host().filter(|h| !h.is_empty()) else {
        return Err(bad("names no host".to_owned()));
    };
    if uri.path_and_query().is_some_and(|p| p.as_str() != "/") {
        return Err(bad(
            "has a path; give only the scheme, host and port".to_owned()
        ));
    }
    let port = uri.port_u16().unwrap_or(DEFAULT_PORT);
    Ok(Endpoint {
        name: trimmed.to_owned(),
        base: format!("{scheme}://{host}:{port}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base(text: &str, tls: bool) -> String {
        parse_endpoint(text, tls).unwrap().base
    }

    #[test]
    fn bare_endpoints_follow_the_tls_setting_and_schemes_win() {
        assert_eq!(base("127.0.0.1:2379", false), "http://127.0.0.1:2379");
        assert_eq!(base("127.0.0.1:2379", true), "https://127.0.0.1:2379");
        assert_eq!(base("http://etcd:4001", true), "http://etcd:4001");
        assert_eq!(base("https://etcd:4001/", false), "https://etcd:4001");
        assert_eq!(base("etcd", false), "http://etcd:2379");
        assert_eq!(base(" [::1]:2379 ", false), "http://[::1]:2379");
    }

    #[test]
    fn endpoints_that_cannot_work_are_refused_naming_them() {
        for text in [
            "",
            "unix:///run/etcd.sock",
            "http://etcd:2379/v3",
            "http://:2379",
        ] {
            let err = parse_endpoint(text, false).unwrap_err();
            assert!(
                matches!(&err, EtcdError::BadEndpoint { endpoint, .. } if endpoint == text),
                "{text}: {err}"
            );
        }
    }
}
