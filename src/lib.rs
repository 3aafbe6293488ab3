//! gangway: an edge router for Docker hosts. Providers turn container labels
//! and files into routes; the proxy serves them over HTTP/1.1, HTTP/2 and
//! HTTP/3.
//!
//! `run` is what the binary calls and what the integration tests start.

pub mod access_log;
pub mod acme;
pub mod aggregate;
pub mod api;
pub mod balance;
pub mod body;
pub mod cause;
pub mod check;
pub mod client;
pub mod compile;
pub mod config;
pub mod health;
pub mod metrics;
pub mod middleware;
pub mod overload;
pub mod percent;
pub mod provider;
pub mod proxy;
pub mod rule;
pub mod runtime;
pub mod store;
pub mod tls;

use config::static_config::StaticConfig;
use http::HeaderValue;
use std::future::Future;
use std::sync::Arc;
use tokio::sync::{mpsc, watch};

/// Why gangway could not start.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The access log could not be opened.
    #[error(transparent)]
    AccessLog(#[from] access_log::AccessLogError),
    /// An entry point's address could not be bound.
    #[error("entry point `{name}`: cannot listen on {address}: {source}")]
    Bind {
        /// The entry point.
        name: String,
        /// Its address as configured.
        address: String,
        /// What the OS said.
        source: std::io::Error,
    },
    /// A certificate resolver cannot be used.
    #[error(transparent)]
    Acme(#[from] acme::AcmeError),
    /// The Prometheus options cannot be used.
    #[error(transparent)]
    Metrics(#[from] metrics::NoBuckets),
    /// HTTP/3 could not be set up on an entry point.
    #[error("entry point `{name}`: HTTP/3: {source}")]
    Http3 {
        /// The entry point.
        name: String,
        /// What failed.
        source: proxy::http3::Http3Error,
    },
    /// A redirection names neither an entry point nor a port.
    #[error(
        "entryPoints.{entry_point}.http.redirections.entryPoint.to: `{to}` is neither an entry point nor a port such as `:443`"
    )]
    Redirect {
        /// The entry point that redirects.
        entry_point: String,
        /// The target as given.
        to: String,
    },
    /// The Docker provider's options are wrong.
    #[error(transparent)]
    Docker(#[from] provider::docker::DockerError),
    /// The Swarm provider's options are wrong.
    #[error(transparent)]
    Swarm(#[from] provider::swarm::SwarmError),
    /// The Redis provider's options are wrong.
    #[error(transparent)]
    Redis(#[from] provider::kv::redis::RedisError),
    /// The etcd provider's options are wrong.
    #[error(transparent)]
    Etcd(#[from] provider::kv::etcd::EtcdProviderError),
}

/// Starts every entry point and provider, serves until `shutdown` resolves,
/// then stops accepting and drains in-flight requests.
pub async fn run(config: StaticConfig, shutdown: impl Future<Output = ()>) -> Result<(), RunError> {
    let config = Arc::new(config);
    let names: Vec<String> = config.entry_points.keys().cloned().collect();
    let metrics = match &config.metrics.prometheus {
        Some(p) => {
            let bounds: Vec<f64> = p.buckets.iter().map(|b| b.0).collect();
            Some(compile::MetricsSettings {
                exporter: Arc::new(metrics::Exporter::new(&p.prefix, &bounds)?),
                routers: p.add_routers_labels,
                services: p.add_services_labels,
            })
        }
        None => None,
    };
    let exporter = metrics.as_ref().map(|m| m.exporter.clone());
    let ep_metrics = config
        .metrics
        .prometheus
        .as_ref()
        .is_some_and(|p| p.add_entry_points_labels);
    let access_log = match &config.access_log {
        Some(a) => {
            let dropped = exporter
                .as_ref()
                .map_or_else(::metrics::Counter::noop, |e| e.access_log_dropped());
            Some(access_log::AccessLogger::spawn(a, dropped).await?)
        }
        None => None,
    };
    let registries = Arc::new(runtime::Registries::default());
    // Starts empty; the first compiled runtime (with TLS defaults) is stored
    // below, before anything is served.
    let handle = Arc::new(runtime::RuntimeHandle::new(runtime::Runtime::empty(
        names.len(),
    )));
    let mut resolvers = Vec::new();
    for (name, resolver) in &config.certificates_resolvers {
        resolvers.push(Arc::new(acme::Resolver::new(name, &resolver.acme, &names)?));
    }

    // Bind everything before anything is served, so a port in use fails the start.
    let mut bound = Vec::new();
    for (name, ep) in &config.entry_points {
        let bind_error = |source| RunError::Bind {
            name: name.clone(),
            address: ep.address.to_string(),
            source,
        };
        let listener = if ep.address.udp {
            proxy::Listener::Udp(
                std::net::UdpSocket::bind(ep.address.socket_addr())
                    .and_then(|s| {
                        s.set_nonblocking(true)?;
                        tokio::net::UdpSocket::from_std(s)
                    })
                    .map_err(bind_error)?,
            )
        } else {
            proxy::Listener::Tcp(proxy::bind(ep.address.host, ep.address.port).map_err(bind_error)?)
        };
        let local = listener.local_addr().ok();
        let port = local.map_or(ep.address.port, |a| a.port());
        tracing::info!(entry_point = %name, address = %local.map(|a| a.to_string()).unwrap_or_default(), udp = ep.address.udp, "listening");
        // HTTP/3 on the same port, UDP (validate() keeps it off UDP entry
        // points); with port 0, the one the TCP side got.
        let quic = match &ep.http3 {
            Some(_) => {
                let socket = proxy::bind_udp(ep.address.host, port).map_err(bind_error)?;
                tracing::info!(entry_point = %name, port, "listening for HTTP/3 (QUIC, UDP)");
                Some(socket)
            }
            None => None,
        };
        bound.push((listener, port, quic));
    }
    let ports: Vec<u16> = bound.iter().map(|(_, port, _)| *port).collect();
    let mut listeners = Vec::new();
    for (id, ((name, ep), (listener, port, quic))) in
        config.entry_points.iter().zip(bound).enumerate()
    {
        // Every option of an entry point is taken apart here, with no `..`:
        // an option added to the model but read nowhere is an unused binding,
        // which fails the build (`-D warnings`). `_` marks an option read
        // elsewhere, and says where.
        use config::static_config::{
            EntryPoint, EntryPointHttp, EntryPointHttp2, EntryPointLimits, EntryPointTransport,
            EntryPointUdp, ForwardedHeaders, LifeCycle, Redirections, RespondingTimeouts,
        };
        #[deny(unused_variables)] // an option read nowhere fails the build
        let EntryPoint {
            address: _, // bound above
            forwarded_headers:
                ForwardedHeaders {
                    trusted_ips,
                    insecure,
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
                },
            http:
                EntryPointHttp {
                    tls: _, // compile_context: the routers' default TLS
                    redirections,
                    sanitize_path,
                    encoded_characters,
                    underscore_headers_strategy,
                },
            http2: EntryPointHttp2 {
                max_concurrent_streams,
            },
            http3,
            udp: EntryPointUdp {
                timeout: udp_timeout,
            },
            proxy_protocol,
            limits,
        } = ep;
        #[deny(unused_variables)] // an option read nowhere fails the build
        let EntryPointLimits {
            // The proxy reads these from `limits`, handed over whole below.
            max_header_bytes: _,
            max_headers: _,
            max_pending_reset_streams: _,
            max_control_frames: _,
            header_read_timeout,
            max_request_body_bytes,
            web_socket_idle_timeout,
        } = limits;
        let info = proxy::EntryPointInfo {
            name: name.clone(),
            id,
            trust: proxy::forwarded::TrustPolicy {
                trusted: trusted_ips.clone(),
                insecure: *insecure,
            },
            proxy_protocol: proxy_protocol
                .as_ref()
                .map(|p| proxy::forwarded::TrustPolicy {
                    trusted: p.trusted_ips.clone(),
                    insecure: p.insecure,
                }),
            redirect: match redirections {
                Some(Redirections { entry_point }) => redirect(name, entry_point, &names, &ports)?,
                None => None,
            },
            grace: grace_time_out.0,
            header_read_timeout: nonzero(header_read_timeout.0),
            read_timeout: nonzero(read_timeout.0),
            write_timeout: nonzero(write_timeout.0),
            idle_timeout: nonzero(idle_timeout.0),
            web_socket_idle_timeout: nonzero(web_socket_idle_timeout.0),
            max_request_body_bytes: (*max_request_body_bytes > 0)
                .then_some(*max_request_body_bytes),
            sanitize_path: *sanitize_path,
            denied_escapes: percent::DeniedEscapes::new(encoded_characters),
            underscore_headers: *underscore_headers_strategy,
            max_concurrent_streams: *max_concurrent_streams,
            alt_svc: http3.as_ref().map(|h| {
                let advertised = match h.advertised_port {
                    0 => port,
                    p => p,
                };
                proxy::alt_svc(advertised)
            }),
            limits: limits.clone(),
            connections: overload::ConnectionLimit::new(*max_connections),
            stats: metrics.as_ref().filter(|_| ep_metrics).map(|m| {
                let transport = if ep.address.udp {
                    metrics::Transport::Udp
                } else {
                    metrics::Transport::Tcp
                };
                registries.entry_point_stats(name, transport, &m.exporter)
            }),
        };
        let info = Arc::new(info);
        let quic = match quic {
            Some(socket) => Some(
                proxy::http3::endpoint(socket, handle.clone(), &info).map_err(|e| {
                    RunError::Http3 {
                        name: name.clone(),
                        source: e,
                    }
                })?,
            ),
            None => None,
        };
        let accept_grace = *request_accept_grace_timeout;
        listeners.push((listener, quic, info, accept_grace, udp_timeout.0));
    }

    // Stored certificates are served from the first handshake on, so a
    // restart never shows the default certificate for a known name.
    acme::check_shared_keys(&resolvers)?;
    for resolver in &resolvers {
        let loaded = resolver.load_stored(&registries).await;
        tracing::info!(resolver = %resolver.name, certificates = loaded, ca = %resolver.directory_url, "certificate resolver ready");
    }

    let terminating = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let certificates = Arc::new(acme::Status::new(exporter.clone()));
    let api_state = Arc::new(api::ApiState {
        runtime: handle.clone(),
        certificates: certificates.clone(),
        registries: registries.clone(),
        static_config: config.clone(),
        started: std::time::SystemTime::now(),
        terminating: terminating.clone(),
        metrics: exporter,
    });
    let route_metrics = metrics.as_ref().is_some_and(|m| m.routers || m.services);
    let ctx = compile_context(&config, api::internal_services(&api_state), metrics);
    handle.store(compile::compile(
        Arc::new(config::Dynamic::default()),
        &ctx,
        &registries,
    ));
    let acme = acme::spawn_acme(resolvers, handle.clone(), registries.clone(), certificates);
    let (tx, rx) = mpsc::channel(64);
    let aggregate = aggregate::spawn_aggregate(
        rx,
        handle.clone(),
        ctx,
        registries,
        config.providers.providers_throttle_duration.0,
    );
    let internal = api::internal_routers(&config);
    if !internal.http.routers.is_empty() {
        let snapshot = provider::Snapshot {
            provider: "internal",
            dynamic: Some(internal),
            error: None,
            warnings: Vec::new(),
            detail: None,
        };
        let _ = tx.send(snapshot).await;
    }
    let mut providers = Vec::new();
    #[deny(unused_variables)] // an option read nowhere fails the build
    let config::static_config::Providers {
        providers_throttle_duration: _, // spawn_aggregate, above
        file,
        docker,
        swarm,
        redis,
        etcd,
    } = &config.providers;
    if let Some(config::static_config::FileProvider {
        filename,
        directory,
        watch,
    }) = file
    {
        // validate() guarantees exactly one of filename and directory.
        let source = match (filename, directory) {
            (Some(f), _) => Some(provider::file::Source::File(f.clone())),
            (None, Some(d)) => Some(provider::file::Source::Directory(d.clone())),
            (None, None) => None,
        };
        if let Some(source) = source {
            providers.push(provider::file::spawn_file(source, *watch, tx.clone()));
        }
    }
    if let Some(docker) = docker {
        providers.push(provider::docker::spawn_docker(docker, tx.clone())?);
    }
    if let Some(swarm) = swarm {
        providers.push(provider::swarm::spawn_swarm(swarm, tx.clone())?);
    }
    if let Some(redis) = redis {
        providers.push(provider::kv::redis::spawn_redis(redis, tx.clone())?);
    }
    if let Some(etcd) = etcd {
        providers.push(provider::kv::etcd::spawn_etcd(etcd, tx.clone())?);
    }
    drop(tx);

    let proxy = Arc::new(proxy::Proxy {
        runtime: handle,
        server_name: server_name(),
        log_internals: config.access_log.as_ref().is_some_and(|a| a.add_internals),
        access_log,
        route_metrics,
        metrics_internals: config.metrics.add_internals,
    });
    let mut servers = Vec::new();
    for (listener, quic, info, accept_grace, udp_timeout) in listeners {
        // One stop signal per entry point: each stops accepting after its
        // own requestAcceptGraceTimeout.
        let (stop_tx, stop_rx) = watch::channel(false);
        let name = info.name.clone();
        let quic = quic.map(|endpoint| {
            tokio::spawn(proxy::http3::serve_http3(
                proxy.clone(),
                endpoint,
                info.clone(),
                stop_rx.clone(),
            ))
        });
        let server = match listener {
            proxy::Listener::Tcp(listener) => {
                let tcp = proxy::accept(proxy.clone(), listener, info, stop_rx);
                // Both sides of the port stop and drain together.
                tokio::spawn(async move {
                    tcp.await;
                    if let Some(quic) = quic {
                        let _ = quic.await;
                    }
                })
            }
            proxy::Listener::Udp(socket) => tokio::spawn(proxy::serve_udp(
                proxy.runtime.clone(),
                socket,
                info,
                udp_timeout,
                stop_rx,
            )),
        };
        servers.push((name, accept_grace, stop_tx, server));
    }
    shutdown.await;
    tracing::info!("shutting down");
    // From here `/ping` answers with its terminating status, so that a load
    // balancer in front stops sending while the entry points still accept.
    terminating.store(true, std::sync::atomic::Ordering::Relaxed);
    let stopped = servers
        .into_iter()
        .map(|(name, accept_grace, stop_tx, server)| async move {
            // Traefik's requestAcceptGraceTimeout: keep accepting and serving
            // for that long, then stop accepting and drain (graceTimeOut).
            if !accept_grace.0.is_zero() {
                tracing::info!(entry_point = %name, "still accepting requests for {accept_grace} (requestAcceptGraceTimeout)");
                tokio::time::sleep(accept_grace.0).await;
            }
            let _ = stop_tx.send(true);
            let _ = server.await;
        });
    futures_util::future::join_all(stopped).await;
    for p in providers {
        p.abort();
    }
    aggregate.abort();
    acme.abort();
    Ok(())
}

/// An entry point's default TLS, as a router's `tls` section.
/// What compile needs from the static configuration: entry points, the
/// internal services, metrics, the default servers transport and the
/// entry points' default TLS. `gangway check` compiles with the same.
pub(crate) fn compile_context(
    config: &config::static_config::StaticConfig,
    internal: std::collections::BTreeMap<String, Arc<dyn runtime::InternalService>>,
    metrics: Option<compile::MetricsSettings>,
) -> compile::CompileContext {
    // Taken apart with no `..`, so that an option read nowhere fails the build.
    #[deny(unused_variables)] // an option read nowhere fails the build
    let config::static_config::ServersTransport {
        max_idle_conns_per_host,
        forwarding_timeouts:
            config::static_config::ForwardingTimeouts {
                dial_timeout,
                response_header_timeout,
                idle_conn_timeout,
            },
        insecure_skip_verify,
        root_cas,
        max_concurrent_requests,
        queue_timeout,
    } = &config.servers_transport;
    #[deny(unused_variables)] // an option read nowhere fails the build
    let config::static_config::TcpServersTransport {
        dial_timeout: tcp_dial_timeout,
        dial_keep_alive,
        termination_delay,
        tls:
            config::static_config::TcpServersTransportTls {
                insecure_skip_verify: tcp_insecure_skip_verify,
                root_cas: tcp_root_cas,
            },
    } = &config.tcp_servers_transport;
    compile::CompileContext {
        entry_points: config.entry_points.keys().cloned().collect(),
        // HTTP and TCP routers without entry points join every TCP one.
        not_default: std::iter::once(
            config::static_config::observability::INTERNAL_ENTRY_POINT.to_owned(),
        )
        .chain(
            config
                .entry_points
                .iter()
                .filter(|(_, ep)| ep.address.udp)
                .map(|(name, _)| name.clone()),
        )
        .collect(),
        udp_entry_points: config
            .entry_points
            .values()
            .map(|ep| ep.address.udp)
            .collect(),
        internal,
        metrics,
        default_transport: client::ClientSettings {
            dial_timeout: nonzero(dial_timeout.0),
            response_header_timeout: nonzero(response_header_timeout.0),
            idle_conn_timeout: nonzero(idle_conn_timeout.0),
            max_idle_per_host: *max_idle_conns_per_host,
            tls: client::TlsSettings {
                insecure_skip_verify: *insecure_skip_verify,
                root_cas: root_cas.clone(),
                server_name: None,
                disable_http2: false,
                certificates: Vec::new(),
                peer_cert_uri: None,
            },
        },
        default_tcp_transport: runtime::tcp::TcpTransport {
            dial_timeout: nonzero(tcp_dial_timeout.0),
            keep_alive: runtime::tcp::keep_alive(*dial_keep_alive),
            termination_delay: termination_delay.non_negative(),
            proxy_protocol: None,
        },
        default_tcp_tls: client::TlsSettings {
            insecure_skip_verify: *tcp_insecure_skip_verify,
            root_cas: tcp_root_cas.clone(),
            ..client::TlsSettings::default()
        },
        service_limits: overload::Limits {
            max_concurrent: *max_concurrent_requests,
            queue_timeout: queue_timeout.0,
        },
        entry_point_tls: config
            .entry_points
            .values()
            .map(|ep| ep.http.tls.as_ref().map(router_tls))
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

pub(crate) fn router_tls(tls: &config::static_config::EntryPointTls) -> config::dynamic::RouterTls {
    #[deny(unused_variables)] // an option read nowhere fails the build
    let config::static_config::EntryPointTls {
        cert_resolver,
        options,
        domains,
    } = tls;
    config::dynamic::RouterTls {
        options: options.clone(),
        cert_resolver: cert_resolver.clone(),
        domains: domains
            .iter()
            .map(
                |config::static_config::TlsDomain { main, sans }| config::dynamic::Domain {
                    main: main.clone(),
                    sans: sans.clone(),
                },
            )
            .collect(),
    }
}

/// Where `entry_point` redirects plain HTTP: another entry point's port, or
/// a port given as `:443` or `443`.
fn redirect(
    entry_point: &str,
    redirect: &config::static_config::RedirectEntryPoint,
    names: &[String],
    ports: &[u16],
) -> Result<Option<proxy::Redirect>, RunError> {
    #[deny(unused_variables)] // an option read nowhere fails the build
    let config::static_config::RedirectEntryPoint {
        to,
        scheme,
        permanent,
    } = redirect;
    let Some(target) = to.as_deref().filter(|t| !t.is_empty()) else {
        return Ok(None);
    };
    let port = match names.iter().position(|n| n == target) {
        Some(i) => ports.get(i).copied(),
        None => target.trim_start_matches(':').parse::<u16>().ok(),
    };
    let Some(port) = port else {
        return Err(RunError::Redirect {
            entry_point: entry_point.to_owned(),
            to: target.to_owned(),
        });
    };
    Ok(Some(proxy::Redirect {
        scheme: scheme.to_ascii_lowercase(),
        port: Some(port),
        permanent: *permanent,
    }))
}

fn nonzero(d: std::time::Duration) -> Option<std::time::Duration> {
    (!d.is_zero()).then_some(d)
}

fn server_name() -> HeaderValue {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "gangway".to_owned());
    HeaderValue::from_str(&name).unwrap_or_else(|_| HeaderValue::from_static("gangway"))
}
