//! The `gangway` binary: read the static configuration, set up logging, run
//! until SIGTERM or SIGINT. Exit codes: 0 after a clean stop, 2 for a
//! configuration error, 1 when the router cannot start. `gangway check …`
//! lints configuration and labels instead (see `gangway::check`), and
//! `gangway healthcheck [--ping]` calls `/ping` as `traefik healthcheck`
//! does (see `gangway::check::healthcheck`).

use gangway::config::static_config::{self, Loaded};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let env: Vec<(String, String)> = std::env::vars().collect();
    let cwd = std::env::current_dir().unwrap_or_else(|_| ".".into());
    if args.first().is_some_and(|a| a == "check") {
        return ExitCode::from(gangway::check::main(&args[1..], &env, &cwd));
    }
    if args.first().is_some_and(|a| a == "healthcheck") {
        return ExitCode::from(gangway::check::healthcheck::main(&args[1..], &env, &cwd));
    }
    let (config, notes) = match static_config::load(&args, &env, &cwd) {
        Ok(Loaded::Run(config, notes)) => (config, notes),
        Ok(Loaded::Help(text)) => {
            print!("{text}");
            return ExitCode::SUCCESS;
        }
        Ok(Loaded::Version) => {
            println!("gangway {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("gangway: {e}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = gangway::start::log::init(&config.log) {
        eprintln!("gangway: {e}");
        return ExitCode::FAILURE;
    }
    log_sources(&config, &notes);
    let runtime = match runtime_builder().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("gangway: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let served = runtime.block_on(gangway::run(config, stop_signal()));
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            eprintln!("gangway: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The log's first lines: which file and which variables were read, and
/// every option accepted without being implemented.
fn log_sources(config: &static_config::StaticConfig, notes: &static_config::Notes) {
    match &notes.file {
        Some(file) => tracing::info!(file = %file.display(), "static configuration loaded"),
        None => tracing::info!(
            "no static configuration file found; defaults, environment and flags only"
        ),
    }
    if !notes.variables.is_empty() {
        tracing::info!(variables = %notes.variables.join(","), "environment variables read");
    }
    for accepted in &config.accepted {
        match accepted.state {
            static_config::OptionState::Unsupported => tracing::warn!(
                option = %accepted.option,
                source = %accepted.source,
                "option not supported, ignored: {}",
                accepted.description
            ),
            _ => tracing::info!(
                option = %accepted.option,
                source = %accepted.source,
                "option has no meaning for gangway, ignored: {}",
                accepted.description
            ),
        }
    }
}

/// The main runtime. With one worker (one CPU the process may run on, or
/// `TOKIO_WORKER_THREADS=1`), tokio's single-thread scheduler, which serves
/// everything: it serves ready connections in the order they became ready,
/// where the work-stealing one's run queue holds 256 and overflows the rest
/// to a queue it serves one task in 31 (the tail latency under many
/// connections came from there), and it schedules for less. With several,
/// the TCP entry points are served by the worker threads (`worker`), each
/// with a single-thread runtime of its own, and the main runtime keeps the
/// rest (providers, HTTP/3, UDP, ACME, health checks).
fn runtime_builder() -> tokio::runtime::Builder {
    if gangway::worker::count() == 1 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    }
}

async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        // Without signal handlers, run until killed.
        std::future::pending::<()>().await;
        return;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}
