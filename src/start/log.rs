//! gangway's own log, set up from Traefik's `log.*` options: the level,
//! the form of a line (`common` or `json`, see `format`), and where lines
//! go: standard error, or a file that rotates by size and is reopened on
//! `SIGUSR1` (see `rotate`).

mod format;
mod rotate;

pub use format::LineFormat;
pub use rotate::{LogFile, Rotation};

use crate::config::static_config::{Log, LogFormat};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Why the log could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// The log file's directory does not exist and cannot be made.
    #[error("log.filePath: cannot create the directory {dir}: {source}")]
    Directory {
        /// The directory.
        dir: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The log file cannot be opened for appending.
    #[error("log.filePath: cannot open {path}: {source}")]
    Open {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
}

/// Where lines go.
#[derive(Clone)]
enum Output {
    Stderr,
    File(Arc<LogFile>),
}

/// One line's writer: the formatter writes each line with one `write_all`.
pub struct LineWriter<'a>(&'a Output);

impl std::io::Write for LineWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match self.0 {
            Output::Stderr => std::io::stderr().write_all(buf),
            Output::File(f) => f.write_line(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Output {
    type Writer = LineWriter<'a>;

    fn make_writer(&'a self) -> Self::Writer {
        LineWriter(self)
    }
}

/// Installs the global log as `log` says; `RUST_LOG`, when set and not
/// empty, wins over `log.level` so a developer can turn on one module.
/// The log file, when there is one, is kept for [`file`]: `run` reopens
/// it on `SIGUSR1`.
pub fn init(log: &Log) -> Result<(), LogError> {
    // Taken apart so that an option added to `log` but read nowhere fails
    // the build, as everywhere the static configuration is consumed.
    #[deny(unused_variables)] // an option read nowhere fails the build
    let Log {
        level,
        format,
        file_path,
        no_color,
        max_size,
        max_backups,
        max_age,
        compress,
        otlp,
    } = log;
    let file = match file_path {
        Some(path) => Some(Arc::new(LogFile::open(
            path,
            Rotation::new(*max_size, *max_backups, *max_age, *compress),
        )?)),
        None => None,
    };
    let line = match format {
        LogFormat::Json => LineFormat::Json,
        LogFormat::Common => {
            use std::io::IsTerminal;
            // Traefik never colours a file; a pipe would get escape codes.
            let color = !no_color
                && file.is_none()
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                && std::io::stderr().is_terminal();
            LineFormat::Common { color }
        }
    };
    let filter = std::env::var("RUST_LOG")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .and_then(|v| tracing_subscriber::EnvFilter::try_new(v).ok())
        .unwrap_or_else(|| tracing_subscriber::EnvFilter::new(level.as_str().to_ascii_lowercase()));
    let output = file.clone().map_or(Output::Stderr, Output::File);
    // A second global subscriber (tests that start twice in one process)
    // is refused by tracing; the first stays.
    let lines = tracing_subscriber::fmt::layer()
        .event_format(line)
        .with_writer(output);
    let records = otlp.as_ref().map(|_| {
        let (sink, queue) = crate::otel::logs::LogSink::new();
        *OTLP_QUEUE.lock().unwrap_or_else(PoisonError::into_inner) = Some(queue);
        crate::otel::logs::LogLayer::new(sink)
    });
    let installed = tracing_subscriber::registry()
        .with(filter)
        .with(lines)
        .with(records)
        .try_init();
    // Only the file lines go to is worth reopening: a refused second log
    // writes nowhere.
    if let (Ok(()), Some(file)) = (installed, file) {
        let _ = LOG_FILE.set(file);
    }
    Ok(())
}

/// The file `init` sends the log's lines to, from `init` (before the async
/// runtime exists) to `run`'s `SIGUSR1` listener.
static LOG_FILE: OnceLock<Arc<LogFile>> = OnceLock::new();

/// The log file, when `init` installed a log that writes to one.
pub(crate) fn file() -> Option<Arc<LogFile>> {
    LOG_FILE.get().cloned()
}

/// Reopens the log file, for logrotate's rename-then-signal, and says so
/// in the log; when it cannot, lines keep going to the file that was open.
pub(crate) fn reopen(file: &LogFile) {
    match file.reopen() {
        Ok(()) => tracing::info!(file = %file.path().display(), "log file reopened"),
        Err(e) => tracing::error!("{e}"),
    }
}

/// The records of `log.otlp` waiting for their export task, from `init`
/// (before the async runtime exists) to `run`.
static OTLP_QUEUE: Mutex<Option<crate::otel::logs::LogQueue>> = Mutex::new(None);

/// Starts sending the log's records over OTLP when `log.otlp` is set and
/// `init` installed the log.
pub fn spawn_otlp(log: &Log) -> Result<Option<crate::otel::Pusher>, crate::otel::OtelError> {
    let Some(config) = &log.otlp else {
        return Ok(None);
    };
    let Some(queue) = OTLP_QUEUE
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take()
    else {
        return Ok(None);
    };
    crate::otel::logs::spawn_export(queue, config, "log.otlp").map(Some)
}
