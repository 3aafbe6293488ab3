//! Docker labels: `key=value` lines into the label parser, then through the
//! provider's build (default rule, constraints, servers) and `compile`, as
//! one running container on the host network.
//!
//! Lines `@defaultRule=…` and `@constraints=…` set those provider options
//! (when they do not parse, the defaults stay); every other line is a
//! label under the `traefik` prefix or any other.

#![no_main]

use gangway::compile::{CompileContext, compile};
use gangway::config::static_config::DockerProvider;
use gangway::provider::docker::Settings;
use gangway::provider::docker::build::build;
use gangway::provider::docker::container::{ContainerView, PortView, RunState};
use gangway::provider::docker::labels::parse_labels;
use gangway::runtime::Registries;
use libfuzzer_sys::fuzz_target;
use std::collections::BTreeMap;
use std::sync::Arc;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut labels = BTreeMap::new();
    let mut options = DockerProvider {
        label_prefix: "traefik".to_owned(),
        exposed_by_default: Some(true),
        ..DockerProvider::default()
    };
    for line in text.lines() {
        let (key, value) = line.split_once('=').unwrap_or((line, ""));
        match key {
            "@defaultRule" => options.default_rule = value.to_owned(),
            "@constraints" => options.constraints = Some(value.to_owned()),
            _ => {
                labels.insert(key.to_owned(), value.to_owned());
            }
        }
    }
    let _ = parse_labels("traefik", &labels);

    let settings = Settings::new(&options).or_else(|_| {
        Settings::new(&DockerProvider {
            label_prefix: "traefik".to_owned(),
            exposed_by_default: Some(true),
            ..DockerProvider::default()
        })
    });
    let settings = settings.expect("the default Docker options are valid");
    let view = ContainerView {
        id: "0123456789ab".to_owned(),
        name: "app".to_owned(),
        created_ns: 0,
        labels,
        state: RunState::Running,
        health: None,
        network_mode: "host".to_owned(),
        networks: BTreeMap::new(),
        ports: vec![PortView {
            port: 8080,
            proto: "tcp".to_owned(),
            bindings: Vec::new(),
        }],
        finished_ms: None,
        draining: false,
        down_since_ms: None,
        swarm: None,
    };
    let built = build(&[view], &settings, 0);
    let (merged, _) = gangway::aggregate::merge([("docker", &built.dynamic)]);
    let ctx = CompileContext {
        entry_points: vec!["web".to_owned(), "websecure".to_owned()],
        internal: BTreeMap::new(),
        metrics: None,
        entry_point_tls: Vec::new(),
        cert_resolvers: vec!["le".to_owned()],
        ..Default::default()
    };
    let _ = compile(Arc::new(merged), &ctx, &Registries::default());
});
