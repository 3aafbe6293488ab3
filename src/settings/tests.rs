use super::*;
use crate::config::static_config::{Global, Loaded, RedirectEntryPoint, load};
use std::collections::BTreeMap;

/// The static configuration these flags give, read in an empty directory.
fn configured(flags: &[&str]) -> StaticConfig {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let args: Vec<String> = flags.iter().map(|f| (*f).to_owned()).collect();
    match load(&args, &[], dir.path()) {
        Ok(Loaded::Run(config, _)) => config,
        other => panic!("{flags:?}: {other:?}"),
    }
}

fn to(target: &str) -> RedirectEntryPoint {
    RedirectEntryPoint {
        to: Some(target.to_owned()),
        ..RedirectEntryPoint::default()
    }
}

#[test]
fn a_redirect_goes_to_another_entry_points_bound_port_or_to_a_port() {
    let names = ["web".to_owned(), "websecure".to_owned()];
    let ports = [8080, 8443];
    let port = |target: &str| {
        redirect("web", &to(target), &names, &ports)
            .expect("a target")
            .and_then(|r| r.port)
    };
    assert_eq!(port("websecure"), Some(8443));
    assert_eq!(port(":443"), Some(443));
    assert_eq!(port("443"), Some(443));
    let r = redirect("web", &to("websecure"), &names, &ports)
        .unwrap()
        .unwrap();
    assert_eq!((r.scheme.as_str(), r.permanent), ("https", true));
    let r = redirect(
        "web",
        &RedirectEntryPoint {
            to: Some(":443".to_owned()),
            scheme: "HTTPS".to_owned(),
            permanent: false,
            priority: None,
        },
        &names,
        &ports,
    )
    .unwrap()
    .unwrap();
    assert_eq!((r.scheme.as_str(), r.permanent), ("https", false));
}

#[test]
fn no_target_is_no_redirect_and_a_bad_one_is_named() {
    let names = ["web".to_owned()];
    for nothing in [RedirectEntryPoint::default(), to("")] {
        assert_eq!(redirect("web", &nothing, &names, &[80]).unwrap(), None);
    }
    let err = redirect("web", &to("secure"), &names, &[80]).unwrap_err();
    assert_eq!(
        err,
        RedirectError {
            entry_point: "web".to_owned(),
            to: "secure".to_owned()
        }
    );
    assert_eq!(
        err.to_string(),
        "entryPoints.web.http.redirections.entryPoint.to: `secure` is neither an entry point nor a port such as `:443`"
    );
}

#[test]
fn an_entry_point_with_defaults_has_traefiks_timeouts_and_no_extras() {
    let config = configured(&["--entryPoints.web.address=:80"]);
    let ep = &config.entry_points["web"];
    let EntryPointSettings {
        info,
        accept_grace,
        udp_timeout,
    } = entry_point(
        0,
        "web",
        ep,
        &["web".to_owned()],
        &[8080],
        None,
        Global::default(),
    )
    .unwrap();
    assert_eq!((info.name.as_str(), info.id), ("web", 0));
    assert_eq!(info.grace, std::time::Duration::from_secs(10));
    assert!(accept_grace.0.is_zero());
    assert_eq!(udp_timeout, ep.udp.timeout.0);
    // Traefik's respondingTimeouts: reads bounded, writes not.
    assert_eq!(
        info.read_timeout,
        nonzero(ep.transport.responding_timeouts.read_timeout.0)
    );
    assert!(info.read_timeout.is_some());
    assert_eq!(info.write_timeout, None);
    assert_eq!(info.max_concurrent_streams, 250);
    assert!(info.redirect.is_none());
    assert!(info.alt_svc.is_none());
    assert!(info.proxy_protocol.is_none());
    assert!(info.stats.is_none());
    assert!(info.sanitize_path);
    assert!(info.append_x_forwarded_for);
    assert_eq!(info.keep_alive_max_requests, 0);
    assert_eq!(info.keep_alive_max_time, None);
    assert!(!info.encode_query_semicolons && !info.allow_acme_by_pass);
    assert_eq!(info.max_decoder_header_table_size, 4096);
    assert_eq!(info.limits.max_header_bytes, 64 * 1024);
}

#[test]
fn traefik_names_reach_what_the_proxy_reads() {
    let config = configured(&[
        "--entryPoints.web.address=:80",
        "--entryPoints.web.http.maxHeaderBytes=16384",
        "--entryPoints.web.limits.maxHeaderBytes=999999",
        "--entryPoints.web.transport.keepAliveMaxRequests=3",
        "--entryPoints.web.transport.keepAliveMaxTime=2s",
        "--entryPoints.web.http.encodeQuerySemicolons=true",
        "--entryPoints.web.allowACMEByPass=true",
        "--entryPoints.web.http2.maxDecoderHeaderTableSize=1024",
        "--entryPoints.web.http.redirections.entryPoint.to=:443",
        "--entryPoints.web.http.redirections.entryPoint.priority=10",
        "--entryPoints.other.address=:81",
        "--entryPoints.other.forwardedHeaders.notAppendXForwardedFor=true",
    ]);
    let names: Vec<String> = config.entry_points.keys().cloned().collect();
    let info = |name: &str, global: Global| {
        let id = names.iter().position(|n| n == name).unwrap();
        entry_point(
            id,
            name,
            &config.entry_points[name],
            &names,
            &[80, 81],
            None,
            global,
        )
        .unwrap()
        .info
    };
    let web = info("web", Global::default());
    // Traefik's name for the head limit wins over gangway's.
    assert_eq!(web.limits.max_header_bytes, 16384);
    assert_eq!(web.keep_alive_max_requests, 3);
    assert_eq!(
        web.keep_alive_max_time,
        Some(std::time::Duration::from_secs(2))
    );
    assert!(web.encode_query_semicolons && web.allow_acme_by_pass);
    assert_eq!(web.max_decoder_header_table_size, 1024);
    assert_eq!(web.redirect.and_then(|r| r.priority), Some(10));
    assert!(web.append_x_forwarded_for);
    assert!(!info("other", Global::default()).append_x_forwarded_for);
    let global = Global {
        not_append_x_forwarded_for: true,
    };
    assert!(!info("web", global).append_x_forwarded_for);
}

#[test]
fn an_entry_point_redirects_with_the_ports_it_is_given_and_advertises_http3() {
    let config = configured(&[
        "--entryPoints.web.address=:80",
        "--entryPoints.web.http.redirections.entryPoint.to=websecure",
        "--entryPoints.websecure.address=:443",
        "--entryPoints.websecure.http3",
    ]);
    let names: Vec<String> = config.entry_points.keys().cloned().collect();
    let ports: Vec<u16> = names
        .iter()
        .map(|n| if n == "web" { 8080 } else { 8443 })
        .collect();
    let id = |name: &str| names.iter().position(|n| n == name).unwrap();
    let web = entry_point(
        id("web"),
        "web",
        &config.entry_points["web"],
        &names,
        &ports,
        None,
        Global::default(),
    )
    .unwrap()
    .info;
    assert_eq!(web.redirect.and_then(|r| r.port), Some(8443));
    let secure = entry_point(
        id("websecure"),
        "websecure",
        &config.entry_points["websecure"],
        &names,
        &ports,
        None,
        Global::default(),
    )
    .unwrap()
    .info;
    // Port 0 or not, the port advertised is the one bound.
    assert_eq!(
        secure.alt_svc.unwrap().to_str().unwrap(),
        "h3=\":8443\"; ma=86400"
    );
}

#[test]
fn entry_points_marked_as_default_are_the_only_defaults() {
    let config = configured(&[
        "--entryPoints.web.address=:80",
        "--entryPoints.websecure.address=:443",
        "--entryPoints.websecure.asDefault=true",
        "--entryPoints.admin.address=:9000",
        "--entryPoints.dns.address=:53/udp",
        "--entryPoints.dns.asDefault=true",
    ]);
    let ctx = compile_context(&config, BTreeMap::new(), None);
    assert_eq!(
        ctx.not_default,
        [
            crate::config::static_config::observability::INTERNAL_ENTRY_POINT.to_owned(),
            "admin".to_owned(),
            "dns".to_owned(),
            "web".to_owned(),
        ]
    );
}

#[test]
fn the_compile_context_names_entry_points_and_keeps_udp_and_internal_out_of_defaults() {
    let config = configured(&[
        "--entryPoints.web.address=:80",
        "--entryPoints.web.http.tls.certResolver=le",
        "--entryPoints.dns.address=:53/udp",
        "--certificatesResolvers.le.acme.email=a@example.com",
        "--certificatesResolvers.le.acme.storage=acme.json",
        "--serversTransport.maxIdleConnsPerHost=7",
    ]);
    let ctx = compile_context(&config, BTreeMap::new(), None);
    assert_eq!(ctx.entry_points, ["dns", "web"]);
    assert_eq!(ctx.udp_entry_points, [true, false]);
    assert_eq!(
        ctx.not_default,
        [
            crate::config::static_config::observability::INTERNAL_ENTRY_POINT.to_owned(),
            "dns".to_owned()
        ]
    );
    assert_eq!(ctx.cert_resolvers, ["le"]);
    assert!(ctx.dns_resolvers.is_empty());
    assert_eq!(ctx.default_transport.max_idle_per_host, 7);
    assert!(ctx.metrics.is_none());
    let tls = ctx.entry_point_tls[1].as_ref().expect("web's default TLS");
    assert_eq!(tls.cert_resolver.as_deref(), Some("le"));
    assert!(tls.domains.is_empty());
    assert!(ctx.entry_point_tls[0].is_none());
}

#[test]
fn metrics_settings_follow_the_prometheus_options() {
    assert!(metrics(&configured(&[])).unwrap().is_none());
    let config = configured(&[
        "--metrics.prometheus",
        "--metrics.prometheus.addRoutersLabels",
    ]);
    let m = metrics(&config).unwrap().expect("Prometheus is on");
    assert!(m.routers);
    assert!(entry_point_metrics(&config));
}

#[test]
fn otlp_metrics_alone_name_the_families_as_traefik_and_follow_their_own_labels() {
    let config = configured(&[
        "--metrics.otlp.http.endpoint=http://127.0.0.1:4318",
        "--metrics.otlp.addRoutersLabels=true",
        "--metrics.otlp.addServicesLabels=false",
        "--metrics.otlp.addEntryPointsLabels=false",
    ]);
    let m = metrics(&config).unwrap().expect("OTLP metrics are on");
    assert_eq!(m.exporter.prefix(), "traefik");
    assert!(m.routers);
    assert!(!m.services);
    assert!(!entry_point_metrics(&config));
}
