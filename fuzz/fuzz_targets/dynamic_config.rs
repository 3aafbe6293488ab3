//! The file provider's documents: TOML or YAML text into the dynamic model
//! (as the file provider reads it, object by object), names qualified as
//! the aggregator does, then `compile`, which must disable a bad object and never panic.
//!
//! Input: one byte choosing the syntax (`y` YAML, anything else TOML), then
//! the document.

#![no_main]

use gangway::compile::{CompileContext, MetricsSettings, compile};
use gangway::config::format::Format;
use gangway::runtime::Registries;
use libfuzzer_sys::fuzz_target;
use std::collections::BTreeMap;
use std::sync::Arc;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let format = if selector == b'y' {
        Format::Yaml
    } else {
        Format::Toml
    };
    let Ok(loaded) = gangway::provider::file::read_document("dynamic", text, format) else {
        return;
    };
    let (merged, _) = gangway::aggregate::merge([("file", &loaded.dynamic)]);
    let ctx = CompileContext {
        entry_points: vec!["web".to_owned(), "websecure".to_owned()],
        internal: BTreeMap::new(),
        metrics: Some(MetricsSettings {
            // One per input: series from one input do not pile up in the next.
            exporter: Arc::new(
                gangway::metrics::Exporter::new("gangway", &[0.1, 1.0]).expect("two buckets"),
            ),
            routers: true,
            services: true,
        }),
        entry_point_tls: vec![None, None],
        cert_resolvers: vec!["le".to_owned()],
        ..Default::default()
    };
    let registries = Registries::default();
    let runtime = compile(Arc::new(merged), &ctx, &registries);
    // What the API shows of it must be printable too.
    let _ = runtime.report.lines();
    drop(runtime);
    registries.sweep();
});
