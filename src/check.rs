//! `gangway check`: lints labels and configuration before anything runs.
//!
//! It reads containers from compose files (`--compose`) or from the
//! running daemon (`--docker`), the static configuration (flags, the
//! environment, `--configFile`) and the file provider's files, then runs
//! them through the very code the router uses — the label parser, the
//! Docker provider's build, `aggregate::merge` and `compile` — and turns
//! what that code reports into findings, each naming where it comes from
//! (compose file and service, or container, and the label).
//!
//! A compose file is a stack file too: when the router runs the Swarm
//! provider, each service's `deploy.labels` are checked as that provider
//! reads them (its settings, `@swarm` names, the port given by label),
//! and labels in the place the enabled providers do not read are named.
//!
//! Like `aggregate`, this room meets providers and compile; it serves
//! nothing.

pub mod compose;
pub mod healthcheck;
mod problem;

pub use problem::CheckProblem;

use crate::aggregate::merge;
use crate::compile::{CompileContext, compile};
use crate::config::Dynamic;
use crate::config::problem::{
    Notice, ObjectKind, ObjectRef, Origin, Problem, ProviderError, Reference, Warning,
};
use crate::config::provenance::{NotRouted, ObjectDetail, ProviderDetail};
use crate::config::static_config::{self, Loaded, StaticConfig};
use crate::provider::docker::build::build;
use crate::provider::docker::container::ContainerView;
use crate::provider::docker::labels::suggest;
use crate::provider::docker::{Endpoint, ExposedByLabels, Settings, parse_labels};
use crate::runtime::report::origin_of;
use crate::runtime::{Registries, Report, Runtime, RuntimeHandle, Status};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How bad a finding is: errors make `gangway check` exit with 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Something that will not work: a router, service or middleware left
    /// out, or traffic that goes somewhere else than meant.
    Error,
    /// Something that works, but probably not as meant.
    Warning,
    /// Something worth knowing that changes nothing: what gangway will do
    /// (certificates it reuses), or a Traefik option with no meaning for
    /// gangway.
    Note,
}

/// One problem, with where it comes from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    /// Error or warning.
    pub severity: Severity,
    /// Where, in words: ``docker-compose.yml, service `web` ``,
    /// ``container `web-1` ``, `dynamic.toml:4`, `static configuration`,
    /// `file provider` (a problem of the provider's files as a whole).
    pub source: String,
    /// The router, service or middleware concerned (`web@docker`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<String>,
    /// The label the problem is in, as written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// What is wrong, and what to do about it.
    pub message: String,
    /// Where it is written, typed: file and line, or container and label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
}

impl Finding {
    /// A finding not tied to an object, a label or a line.
    fn general(
        severity: Severity,
        source: impl Into<String>,
        problem: impl Into<CheckProblem>,
    ) -> Self {
        Finding {
            severity,
            source: source.into(),
            object: None,
            label: None,
            message: problem.into().to_string(),
            origin: None,
        }
    }
}

/// The command line of `gangway check` is wrong.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// A flag of `check` itself is misused.
    #[error("{0}\n\n{USAGE}")]
    Usage(String),
}

/// `gangway check --help`.
pub const USAGE: &str = "\
usage: gangway check [--compose FILE...] [--docker] [--format text|json] [static options...]

Checks labels and configuration without starting anything:
  --compose FILE...  containers of these compose files (one project); the
                     static configuration of the service running gangway
                     (or Traefik) in them is used as well; with the Swarm
                     provider on, a stack file's deploy.labels too
  --docker           the running containers of the Docker daemon
  --configFile FILE  the static configuration file (and the file
                     provider's files it names)
  --format json      one JSON document instead of lines of text
Any other option is a static configuration option, as for gangway itself
(e.g. --providers.docker.labelPrefix=traefik).
Exit status: 0 without errors (warnings allowed), 1 with errors, 2 when the
check itself cannot run.";

/// What `gangway check` was asked to do.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Compose files, read as one project.
    pub compose: Vec<PathBuf>,
    /// Read the running containers.
    pub docker: bool,
    /// JSON output.
    pub json: bool,
    /// Print the usage.
    pub help: bool,
    /// Everything else: static configuration flags.
    pub static_args: Vec<String>,
}

/// Reads `check`'s own flags; the rest are static configuration flags.
pub fn parse_args(args: &[String]) -> Result<Options, CheckError> {
    let mut o = Options::default();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        let (key, inline) = match arg.split_once('=') {
            Some((k, v)) => (k, Some(v.to_owned())),
            None => (arg.as_str(), None),
        };
        match key.to_ascii_lowercase().as_str() {
            "-h" | "--help" => o.help = true,
            "--docker" => o.docker = true,
            "--compose" => {
                o.compose.extend(inline.map(PathBuf::from));
                while let Some(next) = args.get(i + 1).filter(|a| !a.starts_with('-')) {
                    o.compose.push(PathBuf::from(next));
                    i += 1;
                }
                if o.compose.is_empty() {
                    return Err(CheckError::Usage("--compose needs a file".to_owned()));
                }
            }
            "--format" => {
                let value = match inline {
                    Some(v) => v,
                    None => {
                        i += 1;
                        args.get(i).cloned().unwrap_or_default()
                    }
                };
                o.json = match value.as_str() {
                    "json" => true,
                    "text" => false,
                    other => {
                        return Err(CheckError::Usage(format!(
                            "--format `{other}`: use `text` or `json`"
                        )));
                    }
                };
            }
            _ => o.static_args.push(arg.clone()),
        }
        i += 1;
    }
    Ok(o)
}

/// `gangway check ARGS`: prints the findings and returns the exit status.
pub fn main(args: &[String], env: &[(String, String)], cwd: &Path) -> u8 {
    let options = match parse_args(args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("gangway check: {e}");
            return 2;
        }
    };
    use std::io::Write as _;
    // Writes are not checked: a closed pipe (`| head`) is not an error here.
    if options.help {
        let _ = writeln!(std::io::stdout(), "{USAGE}");
        return 0;
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("gangway check: cannot start the async runtime: {e}");
            return 2;
        }
    };
    let findings = runtime.block_on(check(&options, env, cwd));
    let text = if options.json {
        format!("{}\n", render_json(&findings))
    } else {
        render_text(&findings)
    };
    let _ = std::io::stdout().write_all(text.as_bytes());
    exit_status(&findings)
}

/// 1 when any finding is an error, else 0.
pub fn exit_status(findings: &[Finding]) -> u8 {
    u8::from(findings.iter().any(|f| f.severity == Severity::Error))
}

/// One line per finding, then a summary line.
pub fn render_text(findings: &[Finding]) -> String {
    let mut out = String::new();
    for f in findings {
        let severity = match f.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
        };
        out.push_str(&format!("{severity}: {}", f.source));
        if let Some(object) = &f.object {
            out.push_str(&format!(": {object}"));
        }
        if let Some(label) = &f.label {
            out.push_str(&format!(": label `{label}`"));
        }
        out.push_str(&format!(": {}\n", f.message));
    }
    let (errors, warnings) = counts(findings);
    let notes = findings.len() - errors - warnings;
    let notes_text = match notes {
        0 => String::new(),
        1 => String::from(", 1 note"),
        n => format!(", {n} notes"),
    };
    if errors + warnings == 0 {
        out.push_str(&format!("gangway check: no problems found{notes_text}\n"));
    } else {
        out.push_str(&format!(
            "gangway check: {errors} error{}, {warnings} warning{}{notes_text}\n",
            if errors == 1 { "" } else { "s" },
            if warnings == 1 { "" } else { "s" }
        ));
    }
    out
}

/// `{"errors": n, "warnings": n, "findings": [...]}`.
pub fn render_json(findings: &[Finding]) -> String {
    let (errors, warnings) = counts(findings);
    serde_json::json!({
        "errors": errors,
        "warnings": warnings,
        "findings": findings,
    })
    .to_string()
}

fn counts(findings: &[Finding]) -> (usize, usize) {
    let errors = findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .count();
    let warnings = findings
        .iter()
        .filter(|f| f.severity == Severity::Warning)
        .count();
    (errors, warnings)
}

/// Containers (or Swarm services) to check, with how to name each in a
/// finding.
#[derive(Default)]
struct Containers {
    views: Vec<ContainerView>,
    /// Container name → source description.
    sources: BTreeMap<String, String>,
    /// Containers whose image's exposed ports could not be read.
    ports_unknown: BTreeSet<String>,
}

/// Runs every check `options` asks for.
pub async fn check(options: &Options, env: &[(String, String)], cwd: &Path) -> Vec<Finding> {
    let mut findings = Vec::new();
    let mut containers = Containers::default();
    // The Swarm services of a stack file, when the Swarm provider is on.
    let mut services = Containers::default();
    // The compose service that runs the router: the file provider's paths
    // are paths in its container.
    let mut router_service = None;

    // The static configuration, and the containers.
    let config = if options.compose.is_empty() {
        match load_static(&options.static_args, env, cwd) {
            Ok(c) => c,
            Err(e) => {
                findings.extend(static_errors(e));
                return finish(findings);
            }
        }
    } else {
        let project = match compose::read_project(&options.compose, env) {
            Ok(p) => p,
            Err(e) => {
                findings.push(Finding::general(Severity::Error, "compose", e));
                return finish(findings);
            }
        };
        let config = compose_static(&project, options, env, cwd, &mut findings);
        let Some(config) = config else {
            return finish(findings);
        };
        router_service = project.router().map(|(s, _)| s.clone());
        let found = compose_containers(project.services, &config, &mut findings).await;
        (containers, services) = found;
        config
    };
    findings.extend(accepted_findings(&config));
    // A DNS provider reads its settings from the environment gangway runs
    // in: checked here against `check`'s own. (A compose project's router
    // gets its environment, and its secrets' files, only in its container.)
    if options.compose.is_empty() {
        findings.extend(dns_providers(&config, env));
        // Likewise the providers' TLS files.
        findings.extend(provider_options(&config));
    } else if let Some(router) = &router_service {
        findings.extend(compose_dns_providers(&config, router));
    }
    findings.extend(acme_storage(&config, options.compose.is_empty()));
    findings.extend(
        acme_options(&config)
            .into_iter()
            .chain(api_exposure(&config)),
    );
    if options.docker {
        match running_containers(&config).await {
            Ok(views) => {
                for view in views {
                    containers
                        .sources
                        .insert(view.name.clone(), format!("container `{}`", view.name));
                    containers.views.push(view);
                }
            }
            Err(problem) => {
                findings.push(Finding::general(Severity::Error, "Docker", problem));
                return finish(findings);
            }
        }
    }

    let with_containers = options.docker || !options.compose.is_empty();
    let docker_config = config.providers.docker.clone().unwrap_or_default();
    let settings = match Settings::new(&docker_config) {
        Ok(s) => s,
        Err(e) => {
            findings.push(static_error(e));
            return finish(findings);
        }
    };
    // Only a stack file's services: `--docker` reads containers alone.
    let swarm_settings = match &config.providers.swarm {
        Some(c) => match crate::provider::swarm::settings(c) {
            Ok(s) => Some(s).filter(|_| !options.compose.is_empty()),
            Err(e) => {
                findings.push(static_error(e));
                return finish(findings);
            }
        },
        None => None,
    };
    if !options.compose.is_empty()
        && config.providers.docker.is_none()
        && config.providers.swarm.is_none()
    {
        findings.push(Finding::general(
            Severity::Warning,
            "static configuration",
            CheckProblem::DockerOff,
        ));
    }

    let docker = Some(&settings).filter(|_| with_containers && config.providers.docker.is_some());
    findings.extend(exposure_finding(&containers, docker));
    findings.extend(exposure_finding(&services, swarm_settings.as_ref()));

    // Labels, container by container (and Swarm service by service).
    findings.extend(label_findings(&containers, &settings));
    if let Some(swarm) = &swarm_settings {
        findings.extend(label_findings(&services, swarm));
    }

    // What the Docker (and Swarm) provider makes of them.
    let now = crate::clock::unix_ms();
    let built = build(&containers.views, &settings, now);
    let built_swarm = swarm_settings
        .as_ref()
        .map(|s| build(&services.views, s, now))
        .unwrap_or_default();

    // The file provider.
    let (file_dynamic, file_detail) =
        file_provider(&config, router_service.as_ref(), cwd, &mut findings);

    // Everything together, through compile.
    let docker_dynamic = Some(&built.dynamic).filter(|_| with_containers);
    let swarm_dynamic = Some(&built_swarm.dynamic).filter(|_| swarm_settings.is_some());
    let providers = [docker_dynamic, swarm_dynamic, file_dynamic.as_ref()];
    let merged = merged(&config, providers, cwd, &mut findings);
    let config = Arc::new(config);
    let ctx = compile_context(&config);
    let merged = Arc::new(merged);
    let runtime = compile(merged, &ctx, &Registries::default());
    let places = Places {
        containers: &containers,
        docker: &built.detail,
        services: &services,
        swarm: &built_swarm.detail,
        file: &file_detail,
        cwd,
    };
    findings.extend(detail_findings(&places));
    findings.extend(report_findings(
        &runtime.report,
        [&built.dynamic, &built_swarm.dynamic],
        &places,
    ));
    finish(findings)
}

/// Gangway's own routers and the providers' configurations (Docker,
/// Swarm, file: those that are on) merged as the aggregator merges them,
/// its warnings as findings.
fn merged(
    config: &StaticConfig,
    [docker, swarm, file]: [Option<&Dynamic>; 3],
    cwd: &Path,
    findings: &mut Vec<Finding>,
) -> Dynamic {
    let internal = crate::api::internal_routers(config);
    let empty = Dynamic::default();
    let mut providers: Vec<(&str, &Dynamic)> = vec![("internal", &internal)];
    providers.extend(docker.map(|d| ("docker", d)));
    providers.extend(swarm.map(|d| ("swarm", d)));
    providers.extend(file.map(|d| ("file", d)));
    if providers.len() == 1 {
        providers.push(("file", &empty));
    }
    let (merged, warnings) = merge(providers);
    for w in &warnings {
        findings.push(placed(Severity::Warning, w, cwd));
    }
    merged
}

/// A compose project's services as the Docker provider (or, with the
/// Swarm provider on, the Swarm provider) would see them: their containers
/// and Swarm services, with warnings for labels a provider would not read.
async fn compose_containers(
    compose_services: Vec<compose::ComposeService>,
    config: &StaticConfig,
    findings: &mut Vec<Finding>,
) -> (Containers, Containers) {
    let mut containers = Containers::default();
    let mut services = Containers::default();
    let prefix = config
        .providers
        .docker
        .as_ref()
        .map_or("gangway", |d| d.label_prefix.as_str())
        .trim()
        .to_ascii_lowercase();
    let swarm_prefix = config
        .providers
        .swarm
        .as_ref()
        .map(|c| c.label_prefix.trim().to_ascii_lowercase());
    // With neither provider on, labels are checked as Docker's (and
    // that is said below).
    let docker_on = config.providers.docker.is_some() || swarm_prefix.is_none();
    for s in compose_services {
        let mut view = s.view;
        let source = format!("{}, service `{}`", s.file, s.name);
        let deploy_source = format!("{source}, deploy.labels");
        match &swarm_prefix {
            Some(_) => {
                services.sources.insert(s.swarm.name.clone(), deploy_source);
                services.views.push(s.swarm);
            }
            None => {
                if let Some(key) = routing_label(&s.swarm.labels, &prefix) {
                    findings.push(label_finding(
                        Severity::Warning,
                        &s.swarm,
                        &deploy_source,
                        key,
                        CheckProblem::DeployLabelsIgnored {
                            prefix: prefix.clone(),
                        },
                    ));
                }
            }
        }
        if !docker_on {
            let swarm_prefix = swarm_prefix.as_deref().unwrap_or(&prefix);
            if let Some(key) = routing_label(&view.labels, swarm_prefix) {
                findings.push(label_finding(
                    Severity::Warning,
                    &view,
                    &source,
                    key,
                    CheckProblem::ContainerLabelsIgnored,
                ));
            }
            continue;
        }
        let routed = routing_label(&view.labels, &prefix).is_some();
        // Only containers with labels need a port; the image says which.
        if routed && view.ports.is_empty() && !s.image.is_empty() {
            match image_ports(config, &s.image).await {
                Some(ports) => view.ports = ports,
                None => {
                    containers.ports_unknown.insert(view.name.clone());
                }
            }
        }
        containers.sources.insert(view.name.clone(), source);
        containers.views.push(view);
    }
    (containers, services)
}

/// What the file provider reads: its dynamic configuration and where
/// each object came from, with its warnings and errors as findings. A path
/// in the router's container (`router_service`) is found through its bind
/// mounts; one in its image or a named volume cannot be read.
fn file_provider(
    config: &StaticConfig,
    router_service: Option<&compose::ComposeService>,
    cwd: &Path,
    findings: &mut Vec<Finding>,
) -> (Option<Dynamic>, ProviderDetail) {
    let mut file_dynamic = None;
    let mut file_detail = ProviderDetail::default();
    let Some(file) = &config.providers.file else {
        return (file_dynamic, file_detail);
    };
    // A path in the router's container is found here through its bind
    // mounts; one in its image or a named volume cannot be read.
    let mut here = |path: &Path| match router_service {
        None => Some(cwd.join(path)),
        Some(service) => {
            let path = path.to_string_lossy();
            let found = service.host_path(&path);
            if found.is_none() {
                findings.push(Finding::general(
                    Severity::Warning,
                    format!("{}, service `{}`", service.file, service.name),
                    CheckProblem::NotMounted {
                        path: path.into_owned(),
                    },
                ));
            }
            found
        }
    };
    let source = match (&file.filename, &file.directory) {
        (Some(f), _) => here(f).map(crate::provider::file::Source::File),
        (None, Some(d)) => here(d).map(crate::provider::file::Source::Directory),
        (None, None) => None,
    };
    if let Some(source) = source {
        match crate::provider::file::load(&source) {
            Ok(loaded) => {
                for w in loaded.warnings {
                    // An object left out is an error, as a disabled
                    // router is, though no router report carries it.
                    let severity = match w.notice {
                        Notice::LeftOut { .. } => Severity::Error,
                        _ => Severity::Warning,
                    };
                    findings.push(placed(severity, &w, cwd));
                }
                for e in &loaded.errors {
                    findings.push(file_error(e, cwd));
                }
                file_dynamic = Some(loaded.dynamic);
                file_detail = loaded.detail;
            }
            Err(e) => findings.push(file_error(&e, cwd)),
        }
    }
    (file_dynamic, file_detail)
}

/// The first label of `labels` under `prefix` (any case): one that asks
/// a provider for routing.
fn routing_label<'a>(labels: &'a BTreeMap<String, String>, prefix: &str) -> Option<&'a str> {
    labels
        .keys()
        .find(|k| {
            k.split_once('.')
                .is_some_and(|(first, _)| first.eq_ignore_ascii_case(prefix))
        })
        .map(String::as_str)
}

/// What the label grammar says of each container's labels (the label
/// parser's errors and the labels the provider never reads), for the
/// containers the provider's constraints let in.
/// What the provider routes when `exposedByDefault` is not given, said
/// once, when some container is routed for its labels alone.
fn exposure_finding(containers: &Containers, settings: Option<&Settings>) -> Option<Finding> {
    let settings = settings?;
    let notice = ExposedByLabels::of(settings)?;
    let prefix = &settings.prefix;
    let under_prefix = |key: &str| {
        key.get(..prefix.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
            && key.as_bytes().get(prefix.len()) == Some(&b'.')
    };
    let enable = format!("{prefix}.enable");
    let by_labels_alone = containers.views.iter().any(|v| {
        v.labels.keys().any(|k| under_prefix(k))
            && !v.labels.keys().any(|k| k.eq_ignore_ascii_case(&enable))
    });
    by_labels_alone.then(|| {
        Finding::general(
            Severity::Note,
            "static configuration",
            CheckProblem::ExposedByLabels(notice),
        )
    })
}

fn label_findings(containers: &Containers, settings: &Settings) -> Vec<Finding> {
    let mut findings = Vec::new();
    for view in &containers.views {
        // Containers the provider's constraints leave out are not its concern.
        if settings
            .constraints
            .as_ref()
            .is_some_and(|c| !c.matches(&view.labels))
        {
            continue;
        }
        let source = containers.sources[&view.name].clone();
        let parsed = parse_labels(&settings.prefix, &view.labels);
        // A rule error found in a router left out for other labels is the
        // router's: it is reported with the router, from the provider's
        // detail below.
        let grammar = parsed
            .errors
            .iter()
            .filter(|e| !matches!(e, crate::provider::docker::labels::LabelError::Rule { .. }));
        for e in grammar {
            findings.push(label_finding(
                Severity::Error,
                view,
                &source,
                e.label(),
                e.problem(),
            ));
        }
        for e in &parsed.ignored {
            findings.push(label_finding(
                Severity::Note,
                view,
                &source,
                e.label(),
                e.problem(),
            ));
        }
        findings.extend(prefix_findings(view, settings, &source, &parsed));
    }
    findings
}

fn finish(mut findings: Vec<Finding>) -> Vec<Finding> {
    findings.sort_by(|a, b| {
        (a.severity, &a.source, &a.object, &a.label, &a.message)
            .cmp(&(b.severity, &b.source, &b.object, &b.label, &b.message))
    });
    findings.dedup();
    findings
}

fn static_error(problem: impl Into<CheckProblem>) -> Finding {
    Finding::general(Severity::Error, "static configuration", problem)
}

/// One finding per problem of the static configuration, so that every
/// one is named.
fn static_errors(error: static_config::StaticConfigError) -> Vec<Finding> {
    match error {
        static_config::StaticConfigError::Several { problems } => {
            problems.into_iter().map(static_error).collect()
        }
        other => vec![static_error(other)],
    }
}

/// The Traefik options given that gangway accepts without implementing:
/// a warning for each unsupported one, a note for each inert one.
fn accepted_findings(config: &StaticConfig) -> Vec<Finding> {
    config
        .accepted
        .iter()
        .map(|accepted| {
            let severity = match accepted.state {
                static_config::OptionState::Unsupported => Severity::Warning,
                _ => Severity::Note,
            };
            Finding::general(
                severity,
                "static configuration",
                CheckProblem::Accepted(accepted.clone()),
            )
        })
        .collect()
}

/// A file the file provider cannot read, at its place.
fn file_error(e: &ProviderError, cwd: &Path) -> Finding {
    let origin = e.origin().map(|o| relative(o, cwd));
    Finding {
        source: origin
            .as_ref()
            .map_or_else(|| "file provider".to_owned(), ToString::to_string),
        origin,
        ..Finding::general(
            Severity::Error,
            "file provider",
            CheckProblem::File(e.clone()),
        )
    }
}

/// A finding for a warning no one object has: under its file and line
/// when it has them, else under "configuration".
fn placed(severity: Severity, w: &Warning, cwd: &Path) -> Finding {
    let origin = w.origin.clone().map(|o| relative(o, cwd));
    Finding {
        source: origin
            .as_ref()
            .map_or_else(|| "configuration".to_owned(), ToString::to_string),
        origin,
        ..Finding::general(severity, "", w.notice.clone())
    }
}

/// The same place, with a file named relative to `cwd` when it is below it.
fn relative(origin: Origin, cwd: &Path) -> Origin {
    let shorten = |path: String| {
        Path::new(&path)
            .strip_prefix(cwd)
            .map_or(path.clone(), |p| p.display().to_string())
    };
    match origin {
        Origin::File { path, line } => Origin::File {
            path: shorten(path),
            line,
        },
        Origin::Document { path } => Origin::Document {
            path: shorten(path),
        },
        other => other,
    }
}

/// A finding on one label of one container.
fn label_finding(
    severity: Severity,
    view: &ContainerView,
    source: &str,
    label: &str,
    problem: impl Into<CheckProblem>,
) -> Finding {
    Finding {
        severity,
        source: source.to_owned(),
        object: None,
        label: Some(label.to_owned()),
        message: problem.into().to_string(),
        origin: Some(Origin::Container {
            id: view.id.clone(),
            name: view.name.clone(),
            label: Some(label.to_owned()),
        }),
    }
}

fn load_static(
    args: &[String],
    env: &[(String, String)],
    cwd: &Path,
) -> Result<StaticConfig, static_config::StaticConfigError> {
    match static_config::load(args, env, cwd) {
        Ok(Loaded::Run(config, _)) => Ok(config),
        Ok(Loaded::Help(_) | Loaded::Version) => Ok(StaticConfig::default()),
        Err(e) => Err(e),
    }
}

/// The static configuration a compose project runs the router with: its
/// command's flags and `GANGWAY_*` environment, then the flags given to
/// `check` (which win). A Traefik service reads `traefik.` labels. When the
/// service's own flags do not load, that is reported and `check`'s flags
/// alone are used, so the labels are still checked.
fn compose_static(
    project: &compose::Project,
    options: &Options,
    env: &[(String, String)],
    cwd: &Path,
    findings: &mut Vec<Finding>,
) -> Option<StaticConfig> {
    let Some((router, traefik)) = project.router() else {
        return match load_static(&options.static_args, env, cwd) {
            Ok(c) => Some(c),
            Err(e) => {
                findings.extend(static_errors(e));
                None
            }
        };
    };
    let mut args = Vec::new();
    if traefik {
        args.extend(traefik_prefixes(&router.command, &options.static_args));
    }
    args.extend(
        router
            .command
            .iter()
            .filter(|a| a.starts_with('-'))
            .cloned(),
    );
    args.extend(options.static_args.iter().cloned());
    let router_env: Vec<(String, String)> = router
        .environment
        .iter()
        .filter(|(k, _)| {
            k.starts_with(static_config::ENV_PREFIX)
                || k.starts_with(static_config::TRAEFIK_ENV_PREFIX)
        })
        .cloned()
        .collect();
    match load_static(&args, &router_env, cwd) {
        Ok(c) => Some(c),
        Err(e) => {
            let source = format!("{}, service `{}`", router.file, router.name);
            let problems = match e {
                static_config::StaticConfigError::Several { problems } => problems,
                other => vec![other],
            };
            for problem in problems {
                findings.push(Finding::general(
                    Severity::Error,
                    source.clone(),
                    CheckProblem::RouterCommand(problem),
                ));
            }
            let mut fallback = Vec::new();
            if traefik {
                fallback.extend(traefik_prefixes(&[], &options.static_args));
            }
            fallback.extend(options.static_args.iter().cloned());
            match load_static(&fallback, &[], cwd) {
                Ok(c) => Some(c),
                Err(e) => {
                    findings.extend(static_errors(e));
                    None
                }
            }
        }
    }
}

/// The flags that make a Traefik service's providers read `traefik.`
/// labels: the Swarm provider's when its flags turn it on, the Docker
/// provider's when its flags do, or when none do (a compose file is for
/// Docker, as before Swarm was read). Setting a provider's prefix turns it
/// on, so a provider nothing asks for is left alone.
fn traefik_prefixes(command: &[String], static_args: &[String]) -> Vec<String> {
    let flags = || {
        command
            .iter()
            .chain(static_args)
            .map(|a| a.to_ascii_lowercase())
    };
    let swarm = flags().any(|a| a.starts_with("--providers.swarm"));
    let docker = flags().any(|a| a.starts_with("--providers.docker"));
    let mut out = Vec::new();
    if docker || !swarm {
        out.push("--providers.docker.labelPrefix=traefik".to_owned());
    }
    if swarm {
        out.push("--providers.swarm.labelPrefix=traefik".to_owned());
    }
    out
}

/// The router prefixes `check` knows: labels under the one not read are
/// reported, not ignored.
const KNOWN_PREFIXES: [&str; 2] = ["gangway", "traefik"];

/// Labels that the provider will never read: a misspelt prefix, the other
/// router's prefix (with what it would say about them there), or labels
/// without `enable=true`.
fn prefix_findings(
    view: &ContainerView,
    settings: &Settings,
    source: &str,
    parsed: &crate::provider::docker::labels::ContainerLabels,
) -> Vec<Finding> {
    let prefix = settings.prefix.as_str();
    let provider = settings.provider;
    // A Swarm view stands for a service: its labels are the service's.
    let holder = match provider {
        "swarm" => "service",
        _ => "container",
    };
    let mut out = Vec::new();
    let mut ours = false;
    // Labels under another known prefix, by that prefix (lower case).
    let mut others: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for (key, value) in &view.labels {
        let Some((first, _)) = key.split_once('.') else {
            continue;
        };
        if first.eq_ignore_ascii_case(prefix) {
            ours = true;
        } else if KNOWN_PREFIXES.iter().any(|p| first.eq_ignore_ascii_case(p)) {
            others
                .entry(first.to_ascii_lowercase())
                .or_default()
                .insert(key.clone(), value.clone());
        } else if first.len() >= 4
            && !key.starts_with("com.docker.")
            && suggest(&first.to_ascii_lowercase(), &[prefix]).is_some()
        {
            out.push(label_finding(
                Severity::Error,
                view,
                source,
                key,
                CheckProblem::UnknownPrefix {
                    written: first.to_owned(),
                    prefix: prefix.to_owned(),
                },
            ));
        }
    }
    for (other, labels) in &others {
        // Read as that prefix's router would read them, to name typos too.
        let read = parse_labels(other, labels);
        let problems: BTreeMap<&str, Problem> = read
            .errors
            .iter()
            .map(|e| (e.label(), e.problem()))
            .collect();
        if !ours {
            // The whole set is meant for the other router: one warning
            // for the set, and each typo in it.
            if let Some(first) = labels.keys().next() {
                out.push(label_finding(
                    Severity::Warning,
                    view,
                    source,
                    first,
                    CheckProblem::OtherPrefix {
                        other: other.clone(),
                        prefix: prefix.to_owned(),
                        provider,
                    },
                ));
            }
            for (label, problem) in &problems {
                out.push(label_finding(
                    Severity::Warning,
                    view,
                    source,
                    label,
                    problem.clone(),
                ));
            }
            continue;
        }
        // A stray label beside the ones read: most likely meant for them.
        for key in labels.keys() {
            let problem = problems.get(key.as_str());
            let (other, prefix) = (other.clone(), prefix.to_owned());
            let stray = match problem {
                Some(Problem::UnknownOption {
                    option,
                    suggestion: Some(suggestion),
                }) => CheckProblem::StrayOption {
                    rewritten: rewrite(key, &prefix, Some((option, suggestion))),
                    option: option.clone(),
                    other,
                    prefix,
                },
                Some(problem) => CheckProblem::StrayProblem {
                    problem: problem.clone(),
                    other,
                    prefix,
                },
                None => CheckProblem::StrayLabel {
                    rewritten: rewrite(key, &prefix, None),
                    other,
                    prefix,
                },
            };
            out.push(label_finding(Severity::Warning, view, source, key, stray));
        }
    }
    let has_routing_labels = view.labels.keys().any(|k| {
        k.len() > prefix.len() + 1
            && k[..prefix.len()].eq_ignore_ascii_case(prefix)
            && !k[prefix.len()..].eq_ignore_ascii_case(".enable")
    });
    if parsed.enable.is_none() && settings.exposed_by_default == Some(false) && has_routing_labels {
        out.push(Finding::general(
            Severity::Warning,
            source,
            CheckProblem::NotEnabled {
                holder,
                prefix: prefix.to_owned(),
                provider,
            },
        ));
    }
    out
}

/// `key` under `prefix` instead of its own, with one option name replaced
/// (the last segment that is `from`, in any case) when given.
fn rewrite(key: &str, prefix: &str, replace: Option<(&String, &String)>) -> String {
    let mut segments: Vec<&str> = key.split('.').collect();
    if let Some(first) = segments.first_mut() {
        *first = prefix;
    }
    if let Some((from, to)) = replace
        && let Some(seg) = segments
            .iter_mut()
            .skip(1)
            .rev()
            .find(|s| s.eq_ignore_ascii_case(from))
    {
        *seg = to;
    }
    segments.join(".")
}

/// What the providers know about where objects are written, and how to
/// name a place in a finding.
struct Places<'a> {
    containers: &'a Containers,
    docker: &'a ProviderDetail,
    /// A stack file's Swarm services.
    services: &'a Containers,
    swarm: &'a ProviderDetail,
    file: &'a ProviderDetail,
    cwd: &'a Path,
}

impl Places<'_> {
    /// The provider's detail on `object`, when its provider reports one.
    fn detail(&self, object: &ObjectRef) -> Option<&ObjectDetail> {
        let detail = match object.name.provider.as_str() {
            "docker" => self.docker,
            "swarm" => self.swarm,
            "file" => self.file,
            _ => return None,
        };
        let map = match object.kind {
            ObjectKind::Router => &detail.routers,
            ObjectKind::Service => &detail.services,
            ObjectKind::Middleware => &detail.middlewares,
            ObjectKind::TcpRouter => &detail.tcp_routers,
            ObjectKind::TcpService => &detail.tcp_services,
            ObjectKind::TcpMiddleware => &detail.tcp_middlewares,
            ObjectKind::UdpRouter => &detail.udp_routers,
            ObjectKind::UdpService => &detail.udp_services,
        };
        map.get(&object.name.name)
    }

    /// Where `object` writes `option`.
    fn origin(&self, object: &ObjectRef, option: Option<&str>) -> Option<Origin> {
        self.detail(object)
            .and_then(|detail| origin_of(detail, option))
    }

    /// A finding on `object`, named by its place: `file:line` (relative to
    /// the directory `check` runs in), the compose service or container
    /// and its label, or its provider.
    fn finding(
        &self,
        severity: Severity,
        object: &ObjectRef,
        origin: Option<Origin>,
        problem: impl Into<CheckProblem>,
    ) -> Finding {
        let origin = origin.map(|o| relative(o, self.cwd));
        let (source, label) = match &origin {
            Some(o @ (Origin::File { .. } | Origin::Document { .. } | Origin::Key { .. })) => {
                (o.to_string(), None)
            }
            Some(Origin::Container { name, label, .. }) => {
                // Swarm services and compose containers are named apart
                // (`stack_web`, `stack-web-1`), but a `container_name` may
                // be anything: each provider's own are looked up.
                let containers = match object.name.provider.as_str() {
                    "swarm" => self.services,
                    _ => self.containers,
                };
                (
                    containers
                        .sources
                        .get(name)
                        .cloned()
                        .unwrap_or_else(|| format!("container `{name}`")),
                    label.clone(),
                )
            }
            None => (
                match object.name.provider.as_str() {
                    "docker" => "Docker provider",
                    "swarm" => "Swarm provider",
                    "file" => "file provider",
                    _ => "static configuration",
                }
                .to_owned(),
                None,
            ),
        };
        Finding {
            severity,
            source,
            object: Some(object.to_string()),
            label,
            message: problem.into().to_string(),
            origin,
        }
    }
}

/// The Docker and Swarm providers' own errors and warnings on objects,
/// except the label errors, which are reported with their label already.
fn detail_findings(places: &Places<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    // Objects of a file left out because they do not read.
    let file = places.file;
    for map in [&file.routers, &file.services, &file.middlewares] {
        for e in map.values().flat_map(|d| &d.errors) {
            out.push(places.finding(
                Severity::Error,
                &e.object,
                e.origin.clone(),
                e.problem.clone(),
            ));
        }
    }
    let labelled = [places.docker, places.swarm];
    let maps = labelled
        .iter()
        .flat_map(|detail| [&detail.routers, &detail.services, &detail.middlewares]);
    for map in maps {
        for d in map.values() {
            for (severity, list) in [
                (Severity::Error, &d.errors),
                (Severity::Warning, &d.warnings),
            ] {
                for e in list {
                    if e.problem.is_label_grammar() {
                        continue;
                    }
                    let mut severity = severity;
                    let mut problem = CheckProblem::Object(e.problem.clone());
                    // The image's EXPOSE is part of the ports, and it could
                    // not be read: the port may well be known to Docker.
                    let container = match &e.origin {
                        Some(Origin::Container { name, .. })
                            if e.object.name.provider == "docker" =>
                        {
                            Some(name)
                        }
                        _ => None,
                    };
                    if e.problem.not_routed() == Some(NotRouted::NoPort)
                        && container.is_some_and(|c| places.containers.ports_unknown.contains(c))
                    {
                        severity = Severity::Warning;
                        problem = CheckProblem::PortsUnknown(e.problem.clone());
                    }
                    out.push(places.finding(severity, &e.object, e.origin.clone(), problem));
                }
            }
        }
    }
    out
}

/// Whether `problem` only says that a service or middleware the Docker
/// provider dropped (and reported) does not exist.
fn refers_to_dropped(problem: &Problem, dropped: &BTreeSet<ObjectRef>) -> bool {
    let Problem::InReference {
        what,
        name,
        problem,
    } = problem
    else {
        return false;
    };
    let kind = match what {
        Reference::Service => ObjectKind::Service,
        Reference::Middleware => ObjectKind::Middleware,
        _ => return false,
    };
    **problem == Problem::NotFound && dropped.contains(&ObjectRef::new(kind, name))
}

/// Compile's verdict on each object, at the place (file and line, or
/// container and label) the provider reports for it.
fn report_findings(
    report: &Report,
    [docker, swarm]: [&Dynamic; 2],
    places: &Places<'_>,
) -> Vec<Finding> {
    // Objects a provider dropped are reported already; a router that
    // refers to one would only repeat that.
    let mut dropped = BTreeSet::new();
    for (provider, detail, built) in [
        ("docker", places.docker, docker),
        ("swarm", places.swarm, swarm),
    ] {
        for (kind, details, kept) in [
            (
                ObjectKind::Service,
                &detail.services,
                built.http.services.keys().collect::<BTreeSet<_>>(),
            ),
            (
                ObjectKind::Middleware,
                &detail.middlewares,
                built.http.middlewares.keys().collect(),
            ),
        ] {
            for (name, d) in details {
                if !d.errors.is_empty() && !kept.contains(name) {
                    dropped.insert(ObjectRef::new(kind, &format!("{name}@{provider}")));
                }
            }
        }
    }
    for (kind, details) in [
        (ObjectKind::Service, &places.file.services),
        (ObjectKind::Middleware, &places.file.middlewares),
    ] {
        for (name, d) in details {
            if !d.errors.is_empty() {
                dropped.insert(ObjectRef::new(kind, &format!("{name}@file")));
            }
        }
    }
    let mut out = Vec::new();
    let maps = [
        &report.routers,
        &report.services,
        &report.middlewares,
        &report.tcp_routers,
        &report.tcp_services,
        &report.tcp_middlewares,
        &report.udp_routers,
        &report.udp_services,
    ];
    for map in maps {
        for r in map.values() {
            for e in &r.errors {
                if refers_to_dropped(&e.problem, &dropped) {
                    continue;
                }
                let mut severity = match r.status {
                    Status::Disabled => Severity::Error,
                    _ => Severity::Warning,
                };
                // Clients reject the default certificate: HTTPS does not
                // work. A shadowed router stays a warning, as on the
                // dashboard: the configuration is valid (Traefik loads it
                // and says nothing) and every request is served by the
                // router tried first; a setup that Traefik runs passes.
                if matches!(e.problem, Problem::UnknownResolver { .. }) {
                    severity = Severity::Error;
                }
                let origin = e
                    .origin
                    .clone()
                    .or_else(|| places.origin(&e.object, e.option));
                out.push(places.finding(severity, &e.object, origin, e.problem.clone()));
            }
        }
    }
    for w in &report.warnings {
        out.push(placed(Severity::Warning, w, places.cwd));
    }
    out
}

/// The options a provider checks only when it starts: an endpoint and
/// its TLS files (Docker, Swarm), a store's options (Redis, etcd). Nothing
/// is connected to.
fn provider_options(config: &StaticConfig) -> Vec<Finding> {
    crate::provider::ProviderKind::ALL
        .into_iter()
        .filter_map(|kind| kind.check_options(&config.providers).err())
        .map(static_error)
        .collect()
}

/// Certificate resolvers whose storage is a store URL: URLs that do not
/// read, two resolvers that would write the same keys, private keys kept
/// in clear, and (with `files`, where the paths are this machine's) a key
/// file that cannot be used.
fn acme_storage(config: &StaticConfig, files: bool) -> Vec<Finding> {
    use crate::acme::shared::{StoreUrl, seal::Seal};
    let mut out = Vec::new();
    let mut spots: Vec<(_, &str)> = Vec::new();
    for (name, r) in &config.certificates_resolvers {
        let storage = r.acme.storage.to_string_lossy();
        if !StoreUrl::is_url(&storage) {
            if files && crate::acme::storage::is_traefik_file(&r.acme.storage) {
                out.push(acme_json(name, &r.acme.storage));
            }
            continue;
        }
        let url = match StoreUrl::parse(name, &storage) {
            Ok(url) => url,
            Err(e) => {
                out.push(static_error(e));
                continue;
            }
        };
        let spot = (
            url.spot(),
            crate::acme::storage::ca_folder(r.acme.directory_url()),
        );
        if let Some((_, first)) = spots.iter().find(|(s, _)| *s == spot) {
            out.push(static_error(crate::acme::AcmeError::SameKeys {
                first: (*first).to_owned(),
                second: name.clone(),
                location: url.location(),
            }));
        }
        spots.push((spot, name));
        match &r.acme.storage_encryption_key_file {
            Some(path) if files => {
                if let Err(e) = Seal::from_file(name, path) {
                    out.push(static_error(e));
                }
            }
            Some(_) => {}
            None => out.push(Finding::general(
                Severity::Warning,
                "static configuration",
                Notice::AcmeKeysInClear {
                    resolver: name.clone(),
                    location: url.location(),
                },
            )),
        }
    }
    out
}

/// Certificate resolver options gangway cannot use (they stop its start)
/// or accepts without honouring them.
fn acme_options(config: &StaticConfig) -> Vec<Finding> {
    let mut out = Vec::new();
    let lists = config
        .certificates_resolvers
        .iter()
        .map(|(n, r)| (n.as_str(), r.acme.fallback.as_slice()))
        .collect::<Vec<_>>();
    for e in crate::acme::fallback_errors(&lists) {
        out.push(static_error(e));
    }
    for (name, r) in &config.certificates_resolvers {
        if let Err(e) = crate::acme::key::KeyType::parse(name, &r.acme.key_type) {
            out.push(static_error(e));
        }
        for e in crate::acme::option_errors(name, &r.acme) {
            out.push(static_error(e));
        }
        for option in crate::acme::unsupported(name, &r.acme) {
            out.push(Finding::general(
                Severity::Warning,
                "static configuration",
                CheckProblem::AcmeUnsupported(option),
            ));
        }
    }
    out
}

/// A warning when `api.insecure` puts the API on every interface (the
/// internal entry point's default with it, as Traefik's `:8080`).
fn api_exposure(config: &StaticConfig) -> Option<Finding> {
    config.api.as_ref().filter(|a| a.insecure)?;
    let name = static_config::observability::internal_entry_point(config);
    let address = &config.entry_points.get(name)?.address;
    if address.host.is_some_and(|ip| !ip.is_unspecified()) {
        return None;
    }
    Some(Finding::general(
        Severity::Warning,
        "static configuration",
        CheckProblem::ApiOnEveryInterface {
            entry_point: name.to_owned(),
            address: address.to_string(),
            port: address.port,
        },
    ))
}

/// What a resolver will reuse from a Traefik `acme.json`, or why the file
/// cannot be read.
fn acme_json(resolver: &str, path: &Path) -> Finding {
    match crate::acme::storage::traefik::read(path, resolver) {
        Ok(contents) => Finding::general(
            Severity::Note,
            "static configuration",
            CheckProblem::AcmeJsonReused {
                resolver: resolver.to_owned(),
                path: path.to_owned(),
                certificates: contents.certificates.len(),
                names: contents
                    .certificates
                    .iter()
                    .map(|c| c.domain.main.clone())
                    .collect::<Vec<_>>()
                    .join(", "),
                traefik_account: contents.traefik_account.is_some(),
            },
        ),
        Err(e) => static_error(e),
    }
}

/// Each DNS-01 resolver whose provider cannot be set up from `env`
/// (missing variables, unreadable `*_FILE`s, bad values).
fn dns_providers(config: &StaticConfig, env: &[(String, String)]) -> Vec<Finding> {
    let lookup = |name: &str| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    config
        .certificates_resolvers
        .iter()
        .filter_map(|(name, r)| {
            let dns = r.acme.dns_challenge.as_ref()?;
            crate::acme::dns::Solver::new(name, dns, &lookup)
                .err()
                .map(static_error)
        })
        .collect()
}

/// Each DNS-01 resolver of a compose project whose provider is unknown or
/// lacks a variable in the router service's `environment`. A variable
/// listed there counts as set even when empty (its value may come from the
/// deploying shell), and so does one given as `<NAME>_FILE` (the file is
/// in the container, not here); a missing one is a warning, since an
/// `env_file` may still hold it.
fn compose_dns_providers(config: &StaticConfig, router: &compose::ComposeService) -> Vec<Finding> {
    use crate::acme::dns::DnsError;
    let source = format!("{}, service `{}`", router.file, router.name);
    let set = |name: &str| router.environment.iter().any(|(k, _)| k == name);
    let lookup = |name: &str| {
        if name.ends_with("_FILE") {
            return None;
        }
        let value = router
            .environment
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .filter(|v| !v.is_empty());
        // Only presence matters here: the value is not checked.
        value.or_else(|| (set(name) || set(&format!("{name}_FILE"))).then(|| "set".to_owned()))
    };
    config
        .certificates_resolvers
        .iter()
        .filter_map(|(name, r)| {
            let dns = r.acme.dns_challenge.as_ref()?;
            match crate::acme::dns::Solver::new(name, dns, &lookup).err()? {
                e @ DnsError::UnknownProvider { .. } => {
                    Some(Finding::general(Severity::Error, source.clone(), e))
                }
                e @ (DnsError::MissingEnv { .. } | DnsError::MissingCredentials { .. }) => {
                    Some(Finding::general(Severity::Warning, source.clone(), e))
                }
                // Values stood in for above cannot be judged.
                _ => None,
            }
        })
        .collect()
}

/// What compile needs from the static configuration (as `run` builds it).
fn compile_context(config: &Arc<StaticConfig>) -> CompileContext {
    let names = config.entry_points.len();
    let state = Arc::new(crate::api::ApiState {
        runtime: Arc::new(RuntimeHandle::new(Runtime::empty(names))),
        certificates: Arc::default(),
        registries: Arc::new(Registries::default()),
        static_config: config.clone(),
        providers: crate::provider::ProviderKind::names(&config.providers),
        started: std::time::SystemTime::now(),
        terminating: Arc::new(std::sync::atomic::AtomicBool::new(false)),
        metrics: None,
        router_views: Default::default(),
        overview_counts: Default::default(),
        sleeper: Arc::default(),
    });
    crate::settings::compile_context(config, crate::api::internal_services(&state), None)
}

async fn connect(config: &StaticConfig) -> Result<bollard::Docker, CheckProblem> {
    let default = static_config::DockerProvider::default();
    let docker = config.providers.docker.as_ref().unwrap_or(&default);
    let endpoint = Endpoint::with_tls(&docker.endpoint, docker.tls.as_ref())?;
    crate::provider::docker::connect(&endpoint, std::time::Duration::from_secs(10))
        .await
        .map_err(CheckProblem::DockerUnreachable)
}

/// The running containers, as the provider sees them.
async fn running_containers(config: &StaticConfig) -> Result<Vec<ContainerView>, CheckProblem> {
    use bollard::query_parameters::{InspectContainerOptions, ListContainersOptions};
    let docker = connect(config).await?;
    let list = docker
        .list_containers(Some(ListContainersOptions::default()))
        .await
        .map_err(CheckProblem::ListContainers)?;
    let mut views = Vec::new();
    for id in list.into_iter().filter_map(|c| c.id) {
        // A container that went away meanwhile is simply not checked.
        if let Ok(c) = docker
            .inspect_container(&id, None::<InspectContainerOptions>)
            .await
            && let Some(view) = ContainerView::from_inspect(c)
        {
            views.push(view);
        }
    }
    views.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(views)
}

/// The ports an image exposes, when the daemon knows the image.
async fn image_ports(
    config: &StaticConfig,
    image: &str,
) -> Option<Vec<crate::provider::docker::container::PortView>> {
    let docker = connect(config).await.ok()?;
    let inspected = docker.inspect_image(image).await.ok()?;
    let exposed = inspected
        .config
        .and_then(|c| c.exposed_ports)
        .unwrap_or_default();
    let mut ports: Vec<_> = exposed
        .iter()
        .filter_map(|spec| {
            let (port, proto) = spec.split_once('/').unwrap_or((spec, "tcp"));
            Some(crate::provider::docker::container::PortView {
                port: port.parse().ok()?,
                proto: proto.to_owned(),
                bindings: Vec::new(),
            })
        })
        .collect();
    ports.sort_by_key(|p| p.port);
    Some(ports)
}

#[cfg(test)]
mod tests;
