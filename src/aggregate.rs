//! Debounce provider snapshots, merge namespaces with qualified names, compile
//! and publish. The only place where providers meet the runtime.

use crate::compile::{CompileContext, compile};
use crate::config::Dynamic;
use crate::config::problem::{Notice, Section, Warning};
use crate::config::provenance::ProviderDetail;
use crate::provider::Snapshot;
use crate::runtime::report::ProviderReport;
use crate::runtime::{Registries, RuntimeHandle};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

#[derive(Default)]
struct ProviderState {
    dynamic: Dynamic,
    report: ProviderReport,
    warnings: Vec<Warning>,
    detail: Option<ProviderDetail>,
}

/// Merges the providers' configurations into one, qualifying every name with
/// its provider (`app` from `file` becomes `app@file`).
pub fn merge<'a>(
    providers: impl IntoIterator<Item = (&'a str, &'a Dynamic)>,
) -> (Dynamic, Vec<Warning>) {
    fn qualify<T: Clone>(
        into: &mut BTreeMap<String, T>,
        from: &BTreeMap<String, T>,
        provider: &str,
        what: Section,
        warnings: &mut Vec<Warning>,
    ) {
        for (name, value) in from {
            if name.contains('@') {
                let notice = Notice::NameWithAt {
                    what,
                    name: name.clone(),
                    provider: provider.to_owned(),
                };
                warnings.push(Warning::new(notice, None));
                continue;
            }
            into.insert(format!("{name}@{provider}"), value.clone());
        }
    }
    let mut merged = Dynamic::default();
    let mut warnings = Vec::new();
    for (provider, d) in providers {
        qualify(
            &mut merged.http.routers,
            &d.http.routers,
            provider,
            Section::Router,
            &mut warnings,
        );
        qualify(
            &mut merged.http.services,
            &d.http.services,
            provider,
            Section::Service,
            &mut warnings,
        );
        qualify(
            &mut merged.http.middlewares,
            &d.http.middlewares,
            provider,
            Section::Middleware,
            &mut warnings,
        );
        qualify(
            &mut merged.http.servers_transports,
            &d.http.servers_transports,
            provider,
            Section::ServersTransport,
            &mut warnings,
        );
        merged
            .tls
            .certificates
            .extend(d.tls.certificates.iter().cloned());
        qualify(
            &mut merged.tls.options,
            &d.tls.options,
            provider,
            Section::TlsOptions,
            &mut warnings,
        );
        // Stores are global in Traefik (there is one `default` store), so they keep their names.
        for (name, store) in &d.tls.stores {
            merged
                .tls
                .stores
                .entry(name.clone())
                .or_insert_with(|| store.clone());
        }
        qualify(
            &mut merged.tcp.routers,
            &d.tcp.routers,
            provider,
            Section::TcpRouter,
            &mut warnings,
        );
        qualify(
            &mut merged.tcp.services,
            &d.tcp.services,
            provider,
            Section::TcpService,
            &mut warnings,
        );
        qualify(
            &mut merged.tcp.middlewares,
            &d.tcp.middlewares,
            provider,
            Section::TcpMiddleware,
            &mut warnings,
        );
        qualify(
            &mut merged.tcp.servers_transports,
            &d.tcp.servers_transports,
            provider,
            Section::TcpServersTransport,
            &mut warnings,
        );
        qualify(
            &mut merged.udp.routers,
            &d.udp.routers,
            provider,
            Section::UdpRouter,
            &mut warnings,
        );
        qualify(
            &mut merged.udp.services,
            &d.udp.services,
            provider,
            Section::UdpService,
            &mut warnings,
        );
    }
    (merged, warnings)
}

/// Receives snapshots until every sender is gone; after each burst (quiet for
/// `throttle`) compiles and publishes one new runtime, and tells `sleeper`
/// which containers its middlewares put to sleep.
pub fn spawn_aggregate(
    mut rx: mpsc::Receiver<Snapshot>,
    handle: Arc<RuntimeHandle>,
    ctx: CompileContext,
    registries: Arc<Registries>,
    sleeper: Arc<crate::sleep::Sleeper>,
    throttle: Duration,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut states: BTreeMap<&'static str, ProviderState> = BTreeMap::new();
        let mut generation = 0u64;
        let mut logged: BTreeSet<String> = BTreeSet::new();
        loop {
            tokio::select! {
                first = rx.recv() => {
                    let Some(first) = first else { break };
                    apply(&mut states, first);
                    // Wait out the burst: a provider often sends several snapshots in
                    // a row (an editor's save, containers starting together).
                    while let Ok(Some(next)) = tokio::time::timeout(throttle, rx.recv()).await {
                        apply(&mut states, next);
                    }
                }
                // A certificate was issued: the same configuration, compiled
                // again, serves it.
                () = registries.tls.changed() => {}
            }
            let (merged, mut warnings) = merge(states.iter().map(|(p, s)| (*p, &s.dynamic)));
            for s in states.values() {
                warnings.extend(s.warnings.iter().cloned());
            }
            // A bug in compile must not end configuration updates: the last
            // table stays in use and the next change is tried again.
            let compiled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                compile(Arc::new(merged), &ctx, &registries)
            }));
            let Ok(mut runtime) = compiled else {
                tracing::error!(
                    "compiling the configuration failed (a bug in gangway; please report it): \
                     the last configuration stays in use"
                );
                continue;
            };
            generation += 1;
            runtime.generation = generation;
            runtime.report.warnings.extend(warnings);
            runtime.report.providers = states
                .iter()
                .map(|(p, s)| ((*p).to_owned(), s.report.clone()))
                .collect();
            for (p, s) in &states {
                if let Some(detail) = &s.detail {
                    runtime.report.add_provider_detail(p, detail);
                }
            }
            // Log each problem once, not on every reload.
            let lines: BTreeSet<String> = runtime.report.lines().into_iter().collect();
            for line in lines.difference(&logged) {
                tracing::warn!("{line}");
            }
            logged = lines;
            if let Some(metrics) = &ctx.metrics {
                let last_sync = states.values().filter_map(|s| s.report.last_sync).max();
                metrics
                    .exporter
                    .configuration_applied(generation, last_sync);
                let files = runtime
                    .tls
                    .files
                    .iter()
                    .map(|c| crate::metrics::CertificateExpiry {
                        cn: c.labels.cn.clone(),
                        serial: c.labels.serial.clone(),
                        sans: c.labels.sans.clone(),
                        not_after: c.not_after,
                    })
                    .collect();
                metrics.exporter.set_certificates("file", files);
            }
            let routers = runtime.report.routers.len();
            sleeper.claim(crate::compile::sleep_claims(&runtime.dynamic, &ctx));
            handle.store(runtime);
            registries.sweep();
            tracing::info!(generation, routers, "configuration applied");
        }
    })
}

fn apply(states: &mut BTreeMap<&'static str, ProviderState>, snap: Snapshot) {
    let state = states.entry(snap.provider).or_default();
    if snap.detail.is_some() {
        state.detail = snap.detail;
    }
    match snap.dynamic {
        Some(d) => {
            state.dynamic = d;
            // A provider that read part of its source (a directory with a
            // file that does not parse) still says what it could not read.
            if let Some(e) = &snap.error {
                tracing::error!(provider = snap.provider, error = %e, "part of the configuration rejected; its last good version stays in use");
            }
            state.report.last_error = snap.error;
            state.report.last_sync = Some(crate::clock::unix_secs());
            state.warnings = snap.warnings;
        }
        None => {
            if let Some(e) = &snap.error {
                tracing::error!(provider = snap.provider, error = %e, "configuration rejected; the last good one stays in use");
            }
            state.report.last_error = snap.error;
        }
    }
}
