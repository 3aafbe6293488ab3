//! An entry point's options → what the proxy serves it with.

use super::nonzero;
use crate::config::duration::Duration;
use crate::config::static_config::{
    EntryPoint, EntryPointHttp, EntryPointHttp2, EntryPointLimits, EntryPointTransport,
    EntryPointUdp, ForwardedHeaders, Global, LifeCycle, RedirectEntryPoint, Redirections,
    RespondingTimeouts, UnderscoreHeadersStrategy,
};
use crate::proxy::forwarded::TrustPolicy;
use crate::proxy::validate::Underscores;
use crate::proxy::{EntryPointInfo, Redirect};
use std::sync::Arc;

/// A redirection names neither an entry point nor a port.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "entryPoints.{entry_point}.http.redirections.entryPoint.to: `{to}` is neither an entry point nor a port such as `:443`"
)]
pub struct RedirectError {
    /// The entry point that redirects.
    pub entry_point: String,
    /// The target as given.
    pub to: String,
}

/// One entry point, ready to serve: what the proxy reads on every
/// connection, and what its shutdown needs.
pub struct EntryPointSettings {
    /// What the proxy reads on every connection and request.
    pub info: EntryPointInfo,
    /// How long it keeps accepting once shutdown starts
    /// (`transport.lifeCycle.requestAcceptGraceTimeout`).
    pub accept_grace: Duration,
    /// How long a UDP session may stay silent (`udp.timeout`).
    pub udp_timeout: std::time::Duration,
}

/// Entry point number `id`, called `name`, with every option of `ep`.
/// `names` and `ports` are all entry points' names and the ports they were
/// bound to, in the configuration's order (a redirection may name another
/// entry point, whose port it then uses); `stats` are its request counters
/// when per-entry-point metrics are on; `global` is the static
/// configuration's `global` section.
pub fn entry_point(
    id: usize,
    name: &str,
    ep: &EntryPoint,
    names: &[String],
    ports: &[u16],
    stats: Option<Arc<crate::metrics::Stats>>,
    global: Global,
) -> Result<EntryPointSettings, RedirectError> {
    // With port 0, the port the TCP side got.
    let port = ports.get(id).copied().unwrap_or(ep.address.port);
    #[deny(unused_variables)] // an option read nowhere fails the build
    let EntryPoint {
        address: _, // bound by the start-up, which hands over `ports`
        forwarded_headers:
            ForwardedHeaders {
                trusted_ips,
                insecure,
                not_append_x_forwarded_for,
            },
        transport:
            EntryPointTransport {
                life_cycle:
                    LifeCycle {
                        request_accept_grace_timeout,
                        grace_time_out,
                    },
                responding_timeouts:
                    RespondingTimeouts {
                        read_timeout,
                        write_timeout,
                        idle_timeout,
                    },
                max_connections,
                keep_alive_max_requests,
                keep_alive_max_time,
            },
        http:
            EntryPointHttp {
                tls: _, // compile_context: the routers' default TLS
                redirections,
                middlewares: _, // compile_context: the routers' first middlewares
                sanitize_path,
                encoded_characters,
                underscore_headers_strategy,
                max_header_bytes,
                encode_query_semicolons,
            },
        http2:
            EntryPointHttp2 {
                max_concurrent_streams,
                max_decoder_header_table_size,
            },
        http3,
        udp: EntryPointUdp {
            timeout: udp_timeout,
        },
        proxy_protocol,
        limits,
        as_default: _, // compile_context, choosing the default entry points
        reuse_port: _, // bound by the start-up (`start::listen::bind`)
        allow_acme_by_pass,
        observability:
            crate::config::static_config::EntryPointObservability {
                tracing: traced,
                access_logs,
                metrics,
            },
    } = ep;
    // Traefik's `http.maxHeaderBytes` is the same bound as gangway's
    // `limits.maxHeaderBytes`; given, it wins.
    let mut limits = limits.clone();
    if let Some(bytes) = max_header_bytes {
        limits.max_header_bytes = *bytes;
    }
    #[deny(unused_variables)] // an option read nowhere fails the build
    let EntryPointLimits {
        max_header_bytes,
        max_headers,
        max_pending_reset_streams,
        max_control_frames,
        header_read_timeout,
        max_request_body_bytes,
        web_socket_idle_timeout,
    } = &limits;
    let info = EntryPointInfo {
        name: name.to_owned(),
        id,
        trust: TrustPolicy {
            trusted: trusted_ips.clone(),
            insecure: *insecure,
        },
        append_x_forwarded_for: !(*not_append_x_forwarded_for || global.not_append_x_forwarded_for),
        keep_alive_max_requests: *keep_alive_max_requests,
        keep_alive_max_time: nonzero(keep_alive_max_time.0),
        encode_query_semicolons: *encode_query_semicolons,
        allow_acme_by_pass: *allow_acme_by_pass,
        max_decoder_header_table_size: *max_decoder_header_table_size,
        proxy_protocol: proxy_protocol.as_ref().map(|p| TrustPolicy {
            trusted: p.trusted_ips.clone(),
            insecure: p.insecure,
        }),
        redirect: match redirections {
            Some(Redirections { entry_point }) => redirect(name, entry_point, names, ports)?,
            None => None,
        },
        grace: grace_time_out.0,
        header_read_timeout: nonzero(header_read_timeout.0),
        read_timeout: nonzero(read_timeout.0),
        write_timeout: nonzero(write_timeout.0),
        idle_timeout: nonzero(idle_timeout.0),
        web_socket_idle_timeout: nonzero(web_socket_idle_timeout.0),
        max_request_body_bytes: (*max_request_body_bytes > 0).then_some(*max_request_body_bytes),
        sanitize_path: *sanitize_path,
        denied_escapes: crate::percent::DeniedEscapes::new(&(*encoded_characters).into()),
        underscore_headers: match underscore_headers_strategy {
            UnderscoreHeadersStrategy::Keep => Underscores::Keep,
            UnderscoreHeadersStrategy::Delete => Underscores::Delete,
            UnderscoreHeadersStrategy::Reject => Underscores::Reject,
        },
        max_concurrent_streams: *max_concurrent_streams,
        alt_svc: http3.as_ref().map(|h| {
            let advertised = match h.advertised_port {
                0 => port,
                p => p,
            };
            crate::proxy::alt_svc(advertised)
        }),
        limits: crate::proxy::HeadLimits {
            max_header_bytes: *max_header_bytes,
            max_headers: *max_headers,
            max_pending_reset_streams: *max_pending_reset_streams,
            max_control_frames: *max_control_frames,
        },
        connections: crate::overload::ConnectionLimit::new(*max_connections),
        stats,
        traced: *traced,
        access_logs: *access_logs,
        metrics: *metrics,
    };
    Ok(EntryPointSettings {
        info,
        accept_grace: *request_accept_grace_timeout,
        udp_timeout: udp_timeout.0,
    })
}

/// Where `entry_point` redirects plain HTTP: another entry point's port, or
/// a port given as `:443` or `443`. `names` and `ports` as for
/// [`entry_point`].
pub fn redirect(
    entry_point: &str,
    redirect: &RedirectEntryPoint,
    names: &[String],
    ports: &[u16],
) -> Result<Option<Redirect>, RedirectError> {
    #[deny(unused_variables)] // an option read nowhere fails the build
    let RedirectEntryPoint {
        to,
        scheme,
        permanent,
        priority,
    } = redirect;
    let Some(target) = to.as_deref().filter(|t| !t.is_empty()) else {
        return Ok(None);
    };
    let port = match names.iter().position(|n| n == target) {
        Some(i) => ports.get(i).copied(),
        None => target.trim_start_matches(':').parse::<u16>().ok(),
    };
    let Some(port) = port else {
        return Err(RedirectError {
            entry_point: entry_point.to_owned(),
            to: target.to_owned(),
        });
    };
    Ok(Some(Redirect {
        scheme: scheme.to_ascii_lowercase(),
        port: Some(port),
        permanent: *permanent,
        priority: *priority,
    }))
}
