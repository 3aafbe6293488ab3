//! What compile needs from the static configuration.

use super::nonzero;
use crate::client::{ClientSettings, TlsSettings};
use crate::compile::{CompileContext, MetricsSettings};
use crate::config::dynamic::{Domain, RouterTls};
use crate::config::static_config::observability::internal_entry_point;
use crate::config::static_config::{
    DefaultRuleSyntax, EntryPointTls, ForwardingTimeouts, ServersTransport, StaticConfig,
    TcpServersTransport, TcpServersTransportTls, TlsDomain,
};
use crate::rule::RuleSyntax;
use crate::runtime::{InternalService, tcp::TcpTransport};
use std::collections::BTreeMap;
use std::sync::Arc;

/// What compile needs from the static configuration: entry points, the
/// internal services, metrics, the default servers transport and the
/// entry points' default TLS. `gangway check` compiles with the same.
pub fn compile_context(
    config: &StaticConfig,
    internal: BTreeMap<String, Arc<dyn InternalService>>,
    metrics: Option<MetricsSettings>,
) -> CompileContext {
    #[deny(unused_variables)] // an option read nowhere fails the build
    let ServersTransport {
        max_idle_conns_per_host,
        forwarding_timeouts:
            ForwardingTimeouts {
                dial_timeout,
                response_header_timeout,
                idle_conn_timeout,
            },
        insecure_skip_verify,
        root_cas,
        max_concurrent_requests,
        queue_timeout,
        max_concurrent_requests_per_client,
    } = &config.servers_transport;
    #[deny(unused_variables)] // an option read nowhere fails the build
    let TcpServersTransport {
        dial_timeout: tcp_dial_timeout,
        dial_keep_alive,
        termination_delay,
        tls:
            TcpServersTransportTls {
                insecure_skip_verify: tcp_insecure_skip_verify,
                root_cas: tcp_root_cas,
            },
    } = &config.tcp_servers_transport;
    CompileContext {
        entry_points: config.entry_points.keys().cloned().collect(),
        // HTTP and TCP routers without entry points join every TCP one,
        // or only those marked `asDefault` when any is.
        not_default: {
            let marked = config
                .entry_points
                .values()
                .any(|ep| ep.as_default && !ep.address.udp);
            let internal = internal_entry_point(config);
            std::iter::once(internal.to_owned())
                .chain(
                    config
                        .entry_points
                        .iter()
                        .filter(|(name, ep)| {
                            name.as_str() != internal
                                && (ep.address.udp || (marked && !ep.as_default))
                        })
                        .map(|(name, _)| name.clone()),
                )
                .collect()
        },
        plugins: config.experimental.module_names(),
        default_rule_syntax: match config.core.default_rule_syntax {
            DefaultRuleSyntax::V2 => RuleSyntax::V2,
            DefaultRuleSyntax::V3 => RuleSyntax::V3,
        },
        udp_entry_points: config
            .entry_points
            .values()
            .map(|ep| ep.address.udp)
            .collect(),
        internal,
        metrics,
        default_transport: ClientSettings {
            dial_timeout: nonzero(dial_timeout.0),
            response_header_timeout: nonzero(response_header_timeout.0),
            idle_conn_timeout: nonzero(idle_conn_timeout.0),
            max_idle_per_host: *max_idle_conns_per_host,
            tls: TlsSettings {
                insecure_skip_verify: *insecure_skip_verify,
                root_cas: root_cas.clone(),
                server_name: None,
                disable_http2: false,
                ..TlsSettings::default()
            },
            ..ClientSettings::default()
        },
        default_tcp_transport: TcpTransport {
            dial_timeout: nonzero(tcp_dial_timeout.0),
            keep_alive: crate::runtime::tcp::keep_alive(*dial_keep_alive),
            termination_delay: termination_delay.non_negative(),
            proxy_protocol: None,
        },
        default_tcp_tls: TlsSettings {
            insecure_skip_verify: *tcp_insecure_skip_verify,
            root_cas: tcp_root_cas.clone(),
            ..TlsSettings::default()
        },
        service_limits: crate::overload::Limits {
            max_concurrent: *max_concurrent_requests,
            queue_timeout: queue_timeout.0,
            max_per_client: *max_concurrent_requests_per_client,
        },
        entry_point_tls: config
            .entry_points
            .values()
            .map(|ep| ep.http.tls.as_ref().map(router_tls))
            .collect(),
        entry_point_middlewares: config
            .entry_points
            .values()
            .map(|ep| ep.http.middlewares.clone())
            .collect(),
        cert_resolvers: config.certificates_resolvers.keys().cloned().collect(),
        dns_resolvers: config
            .certificates_resolvers
            .iter()
            .filter(|(_, r)| r.acme.dns_challenge.is_some())
            .map(|(name, _)| name.clone())
            .collect(),
    }
}

/// An entry point's default TLS, as a router's `tls` section.
pub fn router_tls(tls: &EntryPointTls) -> RouterTls {
    #[deny(unused_variables)] // an option read nowhere fails the build
    let EntryPointTls {
        cert_resolver,
        options,
        domains,
    } = tls;
    RouterTls {
        options: options.clone(),
        cert_resolver: cert_resolver.clone(),
        domains: domains
            .iter()
            .map(|TlsDomain { main, sans }| Domain {
                main: main.clone(),
                sans: sans.clone(),
            })
            .collect(),
    }
}
