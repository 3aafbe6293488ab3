//! The access log: one line per request, in Traefik's `common` or `json`
//! format, written by a background task. Requests hand their entry to a
//! bounded queue and never wait: when the writer falls behind, entries are
//! dropped and counted.

use crate::config::static_config::observability::{AccessLog, AccessLogFormat, FieldMode};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;

/// What is known of one finished request.
#[derive(Clone, Debug, Default)]
pub struct Entry {
    /// Client address `ip:port`.
    pub client_addr: String,
    /// Client IP.
    pub client_host: String,
    /// Client port.
    pub client_port: u16,
    /// Authenticated user, if a middleware set one.
    pub client_username: Option<String>,
    /// Request method.
    pub method: String,
    /// Request path with query.
    pub path: String,
    /// `HTTP/1.1`, `HTTP/2.0`.
    pub protocol: &'static str,
    /// `http` or `https`.
    pub scheme: &'static str,
    /// Host the client asked for (with port, as sent).
    pub host: String,
    /// Status sent to the client.
    pub status: u16,
    /// Response body bytes sent to the client.
    pub downstream_size: u64,
    /// Request body size from Content-Length.
    pub request_size: u64,
    /// Time from request to end of response.
    pub duration: Duration,
    /// When the request started.
    pub start: Option<SystemTime>,
    /// Router that took the request.
    pub router: Option<String>,
    /// Service that answered.
    pub service: Option<String>,
    /// Server URL the request went to.
    pub service_url: Option<String>,
    /// Entry point name.
    pub entry_point: String,
    /// TLS version, when the connection was TLS.
    pub tls_version: Option<String>,
    /// How many times the request was retried.
    pub retry_attempts: u32,
    /// `Referer` header.
    pub referer: Option<String>,
    /// `User-Agent` header.
    pub user_agent: Option<String>,
    /// Request headers (only those the configuration keeps).
    pub headers: Vec<(String, String)>,
}

/// The logger: filters, queue, and the dropped-line counter.
pub struct AccessLogger {
    tx: mpsc::Sender<Entry>,
    /// Wakes the writer to close its file and open the path again.
    reopen: Arc<tokio::sync::Notify>,
    /// The file written, when not standard output.
    file_path: Option<std::path::PathBuf>,
    dropped: ::metrics::Counter,
    status_ranges: Vec<(u16, u16)>,
    min_duration: Duration,
    retry_attempts: bool,
    /// Request headers to capture (those not dropped), lowercase.
    pub wanted_headers: HeaderSelection,
}

/// Which request headers the log keeps.
#[derive(Clone, Debug)]
pub struct HeaderSelection {
    default: FieldMode,
    names: BTreeMap<String, FieldMode>,
}

impl HeaderSelection {
    /// The mode for one header name.
    pub fn mode(&self, name: &str) -> FieldMode {
        self.names
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map_or(self.default, |(_, m)| *m)
    }

    /// Whether any header could be kept (so capturing is worth doing).
    pub fn any(&self) -> bool {
        self.default != FieldMode::Drop || self.names.values().any(|m| *m != FieldMode::Drop)
    }
}

/// Why the access log could not start.
#[derive(Debug, thiserror::Error)]
pub enum AccessLogError {
    /// The file could not be opened.
    #[error("access log {path}: {source}")]
    Open {
        /// The path.
        path: String,
        /// What the OS said.
        source: std::io::Error,
    },
    /// A status filter does not parse.
    #[error("accessLog.filters.statusCodes: `{0}` is not a status code or range like `500-599`")]
    BadStatusFilter(String),
}

impl AccessLogger {
    /// Opens the output and starts the writer task; lines dropped because
    /// it falls behind are counted in `dropped`.
    pub async fn spawn(
        config: &AccessLog,
        dropped: ::metrics::Counter,
    ) -> Result<Arc<Self>, AccessLogError> {
        use crate::config::static_config::observability::{
            AccessLogFields, AccessLogFilters, AccessLogHeaders,
        };
        // Taken apart with no `..`: an option read nowhere is an unused
        // binding and fails the build.
        #[deny(unused_variables)] // an option read nowhere fails the build
        let AccessLog {
            file_path,
            format,
            buffering_size,
            add_internals: _, // run(), as Proxy::log_internals
            filters:
                AccessLogFilters {
                    status_codes,
                    retry_attempts,
                    min_duration,
                },
            fields:
                AccessLogFields {
                    default_mode,
                    names,
                    headers:
                        AccessLogHeaders {
                            default_mode: headers_default_mode,
                            names: header_names,
                        },
                },
        } = config;
        let mut ranges = Vec::new();
        for f in status_codes {
            let (a, b) = f.split_once('-').unwrap_or((f, f));
            let (Ok(a), Ok(b)) = (a.trim().parse::<u16>(), b.trim().parse::<u16>()) else {
                return Err(AccessLogError::BadStatusFilter(f.clone()));
            };
            ranges.push((a.min(b), a.max(b)));
        }
        let capacity = if *buffering_size == 0 {
            1024
        } else {
            *buffering_size
        };
        let (tx, rx) = mpsc::channel(capacity);
        let out: Box<dyn tokio::io::AsyncWrite + Send + Unpin> = match file_path {
            Some(path) => Box::new(open_file(path).await?),
            None => Box::new(tokio::io::stdout()),
        };
        let reopen = Arc::new(tokio::sync::Notify::new());
        let fields = FieldRules {
            default: *default_mode,
            names: names.clone(),
        };
        tokio::spawn(write_lines(
            rx,
            Output {
                out,
                path: file_path.clone(),
                reopen: reopen.clone(),
            },
            *format,
            fields,
            HeaderSelection {
                default: *headers_default_mode,
                names: header_names.clone(),
            },
        ));
        Ok(Arc::new(Self {
            tx,
            reopen,
            file_path: file_path.clone(),
            dropped,
            status_ranges: ranges,
            min_duration: min_duration.0,
            retry_attempts: *retry_attempts,
            wanted_headers: HeaderSelection {
                default: *headers_default_mode,
                names: header_names.clone(),
            },
        }))
    }

    /// The file lines go to, when not standard output.
    pub fn file_path(&self) -> Option<&std::path::Path> {
        self.file_path.as_deref()
    }

    /// Has the writer close its file and open the path again, after the
    /// lines queued so far: logrotate renames the file, then signals.
    pub fn reopen(&self) {
        self.reopen.notify_one();
    }

    /// Queues an entry if the filters keep it; never waits.
    pub fn log(&self, entry: Entry) {
        let filtered =
            !self.status_ranges.is_empty() || self.retry_attempts || !self.min_duration.is_zero();
        if filtered {
            let keep = self
                .status_ranges
                .iter()
                .any(|(a, b)| (*a..=*b).contains(&entry.status))
                || (self.retry_attempts && entry.retry_attempts > 0)
                || (!self.min_duration.is_zero() && entry.duration > self.min_duration);
            if !keep {
                return;
            }
        }
        if self.tx.try_send(entry).is_err() {
            self.dropped.increment(1);
        }
    }
}

impl From<crate::config::static_config::observability::AccessLogHeaders> for HeaderSelection {
    fn from(h: crate::config::static_config::observability::AccessLogHeaders) -> Self {
        Self {
            default: h.default_mode,
            names: h.names,
        }
    }
}

struct FieldRules {
    default: FieldMode,
    names: BTreeMap<String, FieldMode>,
}

impl FieldRules {
    fn mode(&self, field: &str) -> FieldMode {
        self.names.get(field).copied().unwrap_or(self.default)
    }
}

/// Opens the access log file for appending, making its directory as
/// Traefik does.
async fn open_file(path: &std::path::Path) -> Result<tokio::fs::File, AccessLogError> {
    let failed = |source| AccessLogError::Open {
        path: path.display().to_string(),
        source,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        tokio::fs::create_dir_all(dir).await.map_err(failed)?;
    }
    tokio::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .await
        .map_err(failed)
}

/// Where the writer writes, and how it learns to reopen.
struct Output {
    out: Box<dyn tokio::io::AsyncWrite + Send + Unpin>,
    path: Option<std::path::PathBuf>,
    reopen: Arc<tokio::sync::Notify>,
}

async fn write_lines(
    mut rx: mpsc::Receiver<Entry>,
    output: Output,
    format: AccessLogFormat,
    fields: FieldRules,
    headers: HeaderSelection,
) {
    let Output { out, path, reopen } = output;
    let mut out = tokio::io::BufWriter::new(out);
    let mut line = String::with_capacity(512);
    loop {
        let entry = tokio::select! {
            entry = rx.recv() => match entry {
                Some(entry) => entry,
                None => return,
            },
            () = reopen.notified() => {
                if let Some(path) = &path {
                    // Lines already queued went to the old file; a file
                    // that cannot be opened leaves them going there.
                    let _ = out.flush().await;
                    match open_file(path).await {
                        Ok(file) => out = tokio::io::BufWriter::new(Box::new(file)),
                        Err(e) => tracing::error!("{e}"),
                    }
                }
                continue;
            }
        };
        let mut next = Some(entry);
        // Write everything queued, then flush once.
        while let Some(entry) = next.take() {
            line.clear();
            match format {
                AccessLogFormat::Common => common_line(&entry, &fields, &mut line),
                AccessLogFormat::Json => json_line(&entry, &fields, &headers, &mut line),
            }
            line.push('\n');
            if out.write_all(line.as_bytes()).await.is_err() {
                return;
            }
            next = rx.try_recv().ok();
        }
        if out.flush().await.is_err() {
            return;
        }
    }
}

fn field<'a>(fields: &FieldRules, name: &str, value: &'a str) -> &'a str {
    match fields.mode(name) {
        FieldMode::Keep => value,
        FieldMode::Drop => "-",
        FieldMode::Redact => "REDACTED",
    }
}

/// Traefik's common format: CLF plus request count, router, server URL and
/// duration in milliseconds.
fn common_line(e: &Entry, fields: &FieldRules, out: &mut String) {
    use std::fmt::Write as _;
    let time = e.start.map(clf_time).unwrap_or_else(|| "-".to_owned());
    let _ = write!(
        out,
        "{} - {} [{}] \"{} {} {}\" {} {} \"{}\" \"{}\" {} \"{}\" \"{}\" {}ms",
        field(fields, "ClientHost", &e.client_host),
        field(
            fields,
            "ClientUsername",
            e.client_username.as_deref().unwrap_or("-")
        ),
        field(fields, "StartUTC", &time),
        field(fields, "RequestMethod", &e.method),
        field(fields, "RequestPath", &e.path),
        field(fields, "RequestProtocol", e.protocol),
        e.status,
        e.downstream_size,
        e.referer.as_deref().unwrap_or("-"),
        e.user_agent.as_deref().unwrap_or("-"),
        1,
        field(fields, "RouterName", e.router.as_deref().unwrap_or("-")),
        field(
            fields,
            "ServiceURL",
            e.service_url.as_deref().unwrap_or("-")
        ),
        e.duration.as_millis(),
    );
}

fn json_line(e: &Entry, fields: &FieldRules, headers: &HeaderSelection, out: &mut String) {
    let mut map = serde_json::Map::new();
    let mut put = |name: &str, value: serde_json::Value| match fields.mode(name) {
        FieldMode::Keep => {
            map.insert(name.to_owned(), value);
        }
        FieldMode::Drop => {}
        FieldMode::Redact => {
            map.insert(name.to_owned(), serde_json::Value::from("REDACTED"));
        }
    };
    use serde_json::Value as V;
    put("ClientAddr", V::from(e.client_addr.as_str()));
    put("ClientHost", V::from(e.client_host.as_str()));
    put("ClientPort", V::from(e.client_port.to_string()));
    if let Some(u) = &e.client_username {
        put("ClientUsername", V::from(u.as_str()));
    }
    put("DownstreamStatus", V::from(e.status));
    put("DownstreamContentSize", V::from(e.downstream_size));
    put("RequestContentSize", V::from(e.request_size));
    put(
        "Duration",
        V::from(u64::try_from(e.duration.as_nanos()).unwrap_or(u64::MAX)),
    );
    put("RequestMethod", V::from(e.method.as_str()));
    put("RequestPath", V::from(e.path.as_str()));
    put("RequestProtocol", V::from(e.protocol));
    put("RequestScheme", V::from(e.scheme));
    put(
        "RequestHost",
        V::from(e.host.split(':').next().unwrap_or("")),
    );
    put("RequestAddr", V::from(e.host.as_str()));
    put("RequestCount", V::from(1));
    put("entryPointName", V::from(e.entry_point.as_str()));
    put("RetryAttempts", V::from(e.retry_attempts));
    if let Some(r) = &e.router {
        put("RouterName", V::from(r.as_str()));
    }
    if let Some(s) = &e.service {
        put("ServiceName", V::from(s.as_str()));
    }
    if let Some(u) = &e.service_url {
        put("ServiceURL", V::from(u.as_str()));
        let addr = u.split_once("://").map_or(u.as_str(), |(_, rest)| rest);
        put("ServiceAddr", V::from(addr.trim_end_matches('/')));
    }
    if let Some(t) = &e.tls_version {
        put("TLSVersion", V::from(t.as_str()));
    }
    if let Some(start) = e.start {
        put("StartUTC", V::from(rfc3339(start)));
    }
    for (name, value) in &e.headers {
        let key = format!("request_{name}");
        match headers.mode(name) {
            FieldMode::Keep => {
                map.insert(key, V::from(value.as_str()));
            }
            FieldMode::Redact => {
                map.insert(key, V::from("REDACTED"));
            }
            FieldMode::Drop => {}
        }
    }
    out.push_str(&V::Object(map).to_string());
}

/// Days since 1970-01-01 → (year, month, day), proleptic Gregorian.
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

fn split(t: SystemTime) -> (i64, u32, u32, u64, u64, u64, u32) {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (y, mo, d) = civil((secs / 86_400) as i64);
    let rem = secs % 86_400;
    (
        y,
        mo,
        d,
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        since.subsec_nanos(),
    )
}

fn clf_time(t: SystemTime) -> String {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let (y, mo, d, h, mi, s, _) = split(t);
    let month = MONTHS.get(mo as usize - 1).copied().unwrap_or("Jan");
    format!("{d:02}/{month}/{y}:{h:02}:{mi:02}:{s:02} +0000")
}

fn rfc3339(t: SystemTime) -> String {
    let (y, mo, d, h, mi, s, ns) = split(t);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{ns:09}Z")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_render_in_utc() {
        let t = UNIX_EPOCH + Duration::from_secs(1_795_000_000);
        assert_eq!(rfc3339(t), "2026-11-18T11:06:40.000000000Z");
        assert_eq!(clf_time(t), "18/Nov/2026:11:06:40 +0000");
        assert_eq!(civil(0), (1970, 1, 1));
        assert_eq!(civil(11_016), (2000, 2, 29));
    }

    #[test]
    fn common_line_has_traefiks_fields() {
        let e = Entry {
            client_host: "127.0.0.1".into(),
            method: "GET".into(),
            path: "/a?b=1".into(),
            protocol: "HTTP/1.1",
            status: 200,
            downstream_size: 12,
            router: Some("app@file".into()),
            service_url: Some("http://127.0.0.1:9000".into()),
            duration: Duration::from_millis(3),
            ..Entry::default()
        };
        let rules = FieldRules {
            default: FieldMode::Keep,
            names: BTreeMap::new(),
        };
        let mut line = String::new();
        common_line(&e, &rules, &mut line);
        assert_eq!(
            line,
            "127.0.0.1 - - [-] \"GET /a?b=1 HTTP/1.1\" 200 12 \"-\" \"-\" 1 \"app@file\" \"http://127.0.0.1:9000\" 3ms"
        );
    }
}
