//! The access log: one line per request, in Traefik's `common`,
//! `genericCLF` or `json` format, written by a background task. Requests hand their entry to a
//! bounded queue and never wait: when the writer falls behind, entries are
//! dropped and counted.

use crate::clock::Utc;
use crate::config::static_config::observability::{AccessLog, AccessLogFormat, FieldMode};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;

/// What is known of one finished request. Cheap to fill on the hot path:
/// what is text only in the line (the client's address, times) is made
/// by the writer, and headers are copied only when the configuration
/// keeps some.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The client's address.
    pub peer: std::net::SocketAddr,
    /// Authenticated user, if a middleware set one.
    pub client_username: Option<String>,
    /// Request method.
    pub method: http::Method,
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
    pub start: SystemTime,
    /// Requests received since gangway started, this one included.
    pub request_count: u64,
    /// Router that took the request.
    pub router: Option<String>,
    /// Service that answered.
    pub service: Option<String>,
    /// What the server that answered said, when a server answered.
    pub origin: Option<Origin>,
    /// Entry point name.
    pub entry_point: String,
    /// TLS version and cipher, when the connection was TLS.
    pub tls: Option<TlsFields>,
    /// How many times the request was retried.
    pub retry_attempts: u32,
    /// How long the request waited for its sleeping service to wake
    /// (`gangway.sleep.*`); None when it did not wait.
    pub sleep_wait: Option<Duration>,
    /// Request headers the configuration keeps (values already `REDACTED`
    /// where asked), canonical names.
    pub headers: Vec<(String, String)>,
    /// Response headers sent to the client, as `headers`.
    pub downstream_headers: Vec<(String, String)>,
    /// The trace and the `EntryPoint` span, when the request was traced.
    pub trace: Option<(crate::otel::trace::TraceId, crate::otel::trace::SpanId)>,
}

/// The server's side of a proxied request.
#[derive(Clone, Debug)]
pub struct Origin {
    /// The server's URL.
    pub url: String,
    /// The status the server answered with.
    pub status: u16,
    /// Time from sending the request to the server's response head.
    pub duration: Duration,
    /// The server's `Content-Length`, when it sent one.
    pub content_length: Option<u64>,
    /// The server's response headers the configuration keeps, as
    /// `Entry::headers`.
    pub headers: Vec<(String, String)>,
}

/// The connection's TLS parameters, named as Traefik writes them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFields {
    /// The version and cipher suite, named as Traefik and Go name them
    /// (`1.3`, `TLS_AES_128_GCM_SHA256`).
    pub negotiated: crate::tls::negotiated::Negotiated,
    /// The client certificate's subject as Go prints it
    /// (`CN=ann,O=example`), when the client sent one.
    pub client_subject: Option<Arc<str>>,
}

/// The subject of the certificate the client sent in a finished
/// handshake, as Go prints it; None when it sent none.
pub fn client_subject(conn: &rustls::ServerConnection) -> Option<Arc<str>> {
    conn.peer_certificates()
        .and_then(|chain| chain.first())
        .and_then(|leaf| subject_text(leaf))
        .map(Arc::from)
}

/// A certificate's subject as Go's `pkix.Name` prints it: common name
/// first, country last, `,` between, `+` within a multi-valued one.
fn subject_text(der: &[u8]) -> Option<String> {
    use x509_parser::oid_registry as oids;
    // Go prints the attributes it knows in this order, then no others.
    const ORDER: [(&str, x509_parser::der_parser::oid::Oid<'static>); 9] = [
        ("CN", oids::OID_X509_COMMON_NAME),
        ("SERIALNUMBER", oids::OID_X509_SERIALNUMBER),
        ("OU", oids::OID_X509_ORGANIZATIONAL_UNIT),
        ("O", oids::OID_X509_ORGANIZATION_NAME),
        ("POSTALCODE", oids::OID_X509_POSTAL_CODE),
        ("STREET", oids::OID_X509_STREET_ADDRESS),
        ("L", oids::OID_X509_LOCALITY_NAME),
        ("ST", oids::OID_X509_STATE_OR_PROVINCE_NAME),
        ("C", oids::OID_X509_COUNTRY_NAME),
    ];
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let subject = cert.subject();
    let mut parts: Vec<String> = Vec::new();
    for (key, oid) in &ORDER {
        let values: Vec<&str> = subject
            .iter_attributes()
            .filter(|a| a.attr_type() == oid)
            .filter_map(|a| a.as_str().ok())
            .collect();
        if !values.is_empty() {
            let joined: Vec<String> = values.iter().map(|v| format!("{key}={v}")).collect();
            parts.push(joined.join("+"));
        }
    }
    Some(parts.join(","))
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
    /// Request and response headers to capture (those not dropped).
    pub wanted_headers: HeaderSelection,
    /// Requests seen since the start, for `RequestCount`.
    requests: std::sync::atomic::AtomicU64,
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

    /// The headers of `map` this selection keeps, with canonical names
    /// (`User-Agent`) and `REDACTED` for redacted values; several values
    /// of one name are joined with `,`, as Traefik does. Nothing is
    /// allocated when every header is dropped.
    pub fn capture(&self, map: &http::HeaderMap) -> Vec<(String, String)> {
        if !self.any() {
            return Vec::new();
        }
        let mut out: Vec<(String, String)> = Vec::new();
        for name in map.keys() {
            let value = match self.mode(name.as_str()) {
                FieldMode::Drop => continue,
                FieldMode::Redact => "REDACTED".to_owned(),
                FieldMode::Keep => map
                    .get_all(name)
                    .iter()
                    .map(|v| String::from_utf8_lossy(v.as_bytes()))
                    .collect::<Vec<_>>()
                    .join(","),
            };
            out.push((canonical(name.as_str()), value));
        }
        out
    }
}

/// `user-agent` → `User-Agent`, as Go names headers.
pub fn canonical(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = true;
    for c in name.chars() {
        out.push(if upper { c.to_ascii_uppercase() } else { c });
        upper = c == '-';
    }
    out
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
    /// `accessLog.otlp` makes no exporter.
    #[error(transparent)]
    Otlp(#[from] crate::otel::OtelError),
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
            otlp,
            dual_output,
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
        let otlp = match otlp {
            Some(o) => Some(Records {
                exporter: crate::otel::export::Exporter::new(
                    Some(&o.collector()),
                    crate::otel::export::Signal::Logs,
                    "accessLog.otlp",
                )?,
                resource: crate::otel::resource(&o.service_name, &o.resource_attributes),
                lines: *dual_output,
                failing: false,
            }),
            None => None,
        };
        tokio::spawn(write_lines(
            rx,
            Output {
                out,
                path: file_path.clone(),
                reopen: reopen.clone(),
                otlp,
            },
            *format,
            fields,
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
            requests: std::sync::atomic::AtomicU64::new(0),
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

    /// Counts one more request received; its number, for `RequestCount`.
    pub fn next_request_count(&self) -> u64 {
        self.requests
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            .wrapping_add(1)
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
    /// A field's mode; names are matched in any case, as Traefik does.
    fn mode(&self, field: &str) -> FieldMode {
        self.names
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(field))
            .map_or(self.default, |(_, m)| *m)
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
    otlp: Option<Records>,
}

/// `accessLog.otlp`: entries sent as OTLP log records, by the writer task
/// (the request path only queues the entry, as for lines).
struct Records {
    exporter: crate::otel::export::Exporter,
    resource: opentelemetry_proto::tonic::resource::v1::Resource,
    /// `dualOutput`: write the lines too.
    lines: bool,
    failing: bool,
}

/// Records in one export at most.
const RECORDS_BATCH: usize = 512;

impl Records {
    /// One entry as a record: Traefik's field names and values as
    /// attributes (as the JSON line has them), the line as body.
    fn record(
        e: &Entry,
        fields: &FieldRules,
        format: AccessLogFormat,
    ) -> crate::otel::logs::LogRecord {
        use opentelemetry_proto::tonic::common::v1::any_value::Value as A;
        use serde_json::Value as V;
        let mut body = String::with_capacity(256);
        match format {
            AccessLogFormat::GenericClf => clf_line(e, fields, false, &mut body),
            _ => clf_line(e, fields, true, &mut body),
        }
        let map = json_map(e, fields, SystemTime::now());
        let attributes = map
            .into_iter()
            .filter(|(k, _)| !matches!(k.as_str(), "level" | "msg" | "time"))
            .map(|(k, v)| {
                let value = match v {
                    V::String(s) => A::StringValue(s),
                    V::Bool(b) => A::BoolValue(b),
                    V::Number(n) => match n.as_i64() {
                        Some(i) => A::IntValue(i),
                        None => A::DoubleValue(n.as_f64().unwrap_or_default()),
                    },
                    other => A::StringValue(other.to_string()),
                };
                crate::otel::logs::attribute(&k, value)
            })
            .collect();
        crate::otel::logs::record(tracing::Level::INFO, body, attributes)
    }

    async fn send(&mut self, batch: Vec<crate::otel::logs::LogRecord>) {
        let message = crate::otel::logs::encode(&self.resource, batch);
        match self.exporter.send(message).await {
            Ok(()) => self.failing = false,
            Err(e) => {
                // Said once per outage, not once per batch.
                if !self.failing {
                    tracing::warn!(collector = %self.exporter.uri(), error = %e, "access log records not exported; dropping them until the collector answers");
                }
                self.failing = true;
            }
        }
    }
}

async fn write_lines(
    mut rx: mpsc::Receiver<Entry>,
    output: Output,
    format: AccessLogFormat,
    fields: FieldRules,
) {
    let Output {
        out,
        path,
        reopen,
        mut otlp,
    } = output;
    let lines = otlp.as_ref().is_none_or(|o| o.lines);
    let mut records = Vec::new();
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
            if let Some(o) = otlp.as_mut() {
                records.push(Records::record(&entry, &fields, format));
                if records.len() >= RECORDS_BATCH {
                    o.send(std::mem::take(&mut records)).await;
                }
            }
            if lines {
                line.clear();
                match format {
                    AccessLogFormat::Common => clf_line(&entry, &fields, true, &mut line),
                    AccessLogFormat::GenericClf => clf_line(&entry, &fields, false, &mut line),
                    AccessLogFormat::Json => {
                        json_line(&entry, &fields, SystemTime::now(), &mut line);
                    }
                }
                line.push('\n');
                if out.write_all(line.as_bytes()).await.is_err() {
                    return;
                }
            }
            next = rx.try_recv().ok();
        }
        if let Some(o) = otlp.as_mut()
            && !records.is_empty()
        {
            o.send(std::mem::take(&mut records)).await;
        }
        if lines && out.flush().await.is_err() {
            return;
        }
    }
}

/// A header's captured value.
fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// Traefik's `common` line (CLF plus request count, router, server URL and
/// duration in milliseconds), or with `extended` false the generic CLF
/// that stops after the user agent. A field dropped by `fields.names` is
/// `-`; referer and user agent are the request headers the configuration
/// keeps, as in Traefik (dropped by default).
fn clf_line(e: &Entry, fields: &FieldRules, extended: bool, out: &mut String) {
    use std::fmt::Write as _;
    let kept = |name: &str| fields.mode(name) != FieldMode::Drop;
    let text = |name: &str, value: &str, out: &mut String| match fields.mode(name) {
        FieldMode::Drop => out.push('-'),
        FieldMode::Redact => out.push_str("REDACTED"),
        FieldMode::Keep if value.is_empty() => out.push('-'),
        FieldMode::Keep => out.push_str(value),
    };
    let quoted = |value: Option<&str>, out: &mut String| match value.filter(|v| !v.is_empty()) {
        Some(v) => {
            out.push('"');
            out.push_str(v);
            out.push('"');
        }
        None => out.push_str("\"-\""),
    };
    text("ClientHost", &e.peer.ip().to_string(), out);
    out.push_str(" - ");
    text(
        "ClientUsername",
        e.client_username.as_deref().unwrap_or(""),
        out,
    );
    out.push_str(" [");
    // Traefik writes StartLocal's time when StartUTC is dropped; gangway's
    // local time is UTC.
    if kept("StartUTC") || kept("StartLocal") {
        out.push_str(&Utc::of(e.start).clf());
    } else {
        out.push('-');
    }
    out.push_str("] \"");
    text("RequestMethod", e.method.as_str(), out);
    out.push(' ');
    text("RequestPath", &e.path, out);
    out.push(' ');
    text("RequestProtocol", e.protocol, out);
    out.push_str("\" ");
    if kept("DownstreamStatus") {
        let _ = write!(out, "{}", e.status);
    } else {
        out.push('-');
    }
    out.push(' ');
    if kept("DownstreamContentSize") {
        let _ = write!(out, "{}", e.downstream_size);
    } else {
        out.push('-');
    }
    out.push(' ');
    quoted(header(&e.headers, "Referer"), out);
    out.push(' ');
    quoted(header(&e.headers, "User-Agent"), out);
    if !extended {
        return;
    }
    out.push(' ');
    if kept("RequestCount") {
        let _ = write!(out, "{}", e.request_count);
    } else {
        out.push('-');
    }
    out.push(' ');
    quoted(e.router.as_deref().filter(|_| kept("RouterName")), out);
    out.push(' ');
    quoted(
        e.origin
            .as_ref()
            .map(|o| o.url.as_str())
            .filter(|_| kept("ServiceURL")),
        out,
    );
    let millis = if kept("Duration") {
        e.duration.as_millis()
    } else {
        0
    };
    let _ = write!(out, " {millis}ms");
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// One JSON object with Traefik's field names and types (durations in
/// nanoseconds, ports as text), its `level`, `msg` and `time` as Traefik's
/// JSON writer adds them, keys sorted as Traefik's are.
fn json_line(e: &Entry, fields: &FieldRules, now: SystemTime, out: &mut String) {
    out.push_str(&serde_json::Value::Object(json_map(e, fields, now)).to_string());
}

/// The fields of the JSON line, by name.
fn json_map(
    e: &Entry,
    fields: &FieldRules,
    now: SystemTime,
) -> serde_json::Map<String, serde_json::Value> {
    use serde_json::Value as V;
    let mut map = serde_json::Map::new();
    let mut put = |name: &str, value: V| match fields.mode(name) {
        FieldMode::Keep => {
            map.insert(name.to_owned(), value);
        }
        FieldMode::Drop => {}
        FieldMode::Redact => {
            map.insert(name.to_owned(), V::from("REDACTED"));
        }
    };
    let (host, port) = split_host_port(&e.host);
    put("ClientAddr", V::from(e.peer.to_string()));
    put("ClientHost", V::from(e.peer.ip().to_string()));
    put("ClientPort", V::from(e.peer.port().to_string()));
    put(
        "ClientUsername",
        V::from(e.client_username.as_deref().unwrap_or("-")),
    );
    put("DownstreamStatus", V::from(e.status));
    put("DownstreamContentSize", V::from(e.downstream_size));
    put("RequestContentSize", V::from(e.request_size));
    put("Duration", V::from(nanos(e.duration)));
    put("RequestMethod", V::from(e.method.as_str()));
    put("RequestPath", V::from(e.path.as_str()));
    put("RequestProtocol", V::from(e.protocol));
    put("RequestScheme", V::from(e.scheme));
    if !e.host.is_empty() {
        put("RequestAddr", V::from(e.host.as_str()));
        put("RequestHost", V::from(host));
        put("RequestPort", V::from(port));
    }
    put("RequestCount", V::from(e.request_count));
    put("entryPointName", V::from(e.entry_point.as_str()));
    put("RetryAttempts", V::from(e.retry_attempts));
    // gangway's own field: the request waited for a sleeping service.
    if let Some(waited) = e.sleep_wait {
        put("SleepWaitDuration", V::from(nanos(waited)));
    }
    if let Some(r) = &e.router {
        put("RouterName", V::from(r.as_str()));
    }
    if let Some(s) = &e.service {
        put("ServiceName", V::from(s.as_str()));
    }
    let origin_duration = e.origin.as_ref().map(|o| o.duration);
    if let Some(o) = &e.origin {
        put("ServiceURL", V::from(o.url.as_str()));
        let addr = o
            .url
            .split_once("://")
            .map_or(o.url.as_str(), |(_, rest)| rest);
        put(
            "ServiceAddr",
            V::from(addr.split('/').next().unwrap_or(addr)),
        );
        put("OriginStatus", V::from(o.status));
        put("OriginDuration", V::from(nanos(o.duration)));
        let size = o.content_length.unwrap_or(e.downstream_size);
        put("OriginContentSize", V::from(size));
        if size != e.downstream_size && e.downstream_size != 0 {
            // Only finite: both sizes are above zero.
            #[allow(clippy::cast_precision_loss)]
            let ratio = size as f64 / e.downstream_size as f64;
            put("GzipRatio", V::from(ratio));
        }
    }
    put(
        "Overhead",
        V::from(nanos(
            e.duration
                .saturating_sub(origin_duration.unwrap_or_default()),
        )),
    );
    if let Some(t) = &e.tls {
        put("TLSVersion", V::from(t.negotiated.version()));
        // Over QUIC the suite is not known: the field is left out.
        if let Some(cipher) = t.negotiated.known_cipher() {
            put("TLSCipher", V::from(cipher));
        }
        if let Some(subject) = &t.client_subject {
            put("TLSClientSubject", V::from(&**subject));
        }
    }
    if let Some((trace_id, span_id)) = &e.trace {
        put("TraceId", V::from(crate::otel::trace::hex(trace_id)));
        put("SpanId", V::from(crate::otel::trace::hex(span_id)));
    }
    let start = Utc::of(e.start).nanos();
    put("StartUTC", V::from(start.as_str()));
    put("StartLocal", V::from(start));
    // Headers were chosen when captured (fields.headers).
    let mut headers = |prefix: &str, list: &[(String, String)]| {
        for (name, value) in list {
            map.insert(format!("{prefix}{name}"), V::from(value.as_str()));
        }
    };
    headers("request_", &e.headers);
    if let Some(o) = &e.origin {
        headers("origin_", &o.headers);
    }
    headers("downstream_", &e.downstream_headers);
    map.insert("level".into(), V::from("info"));
    map.insert("msg".into(), V::from(""));
    map.insert("time".into(), V::from(Utc::of(now).seconds()));
    map
}

/// `host:port` → (`host`, `port`); without a port, (`host`, `-`) as
/// Traefik writes it. IPv6 literals keep their brackets off.
fn split_host_port(addr: &str) -> (&str, &str) {
    if let Some(rest) = addr.strip_prefix('[')
        && let Some((host, after)) = rest.split_once(']')
    {
        return (host, after.strip_prefix(':').unwrap_or("-"));
    }
    match addr.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => (host, port),
        _ => (addr, "-"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    /// A proxied request: `GET /api/users?page=2` on `app.example.com:8000`
    /// from 10.0.0.1:52311, answered 200 with 1234 bytes by
    /// http://10.1.0.5:8080 in 40 ms, 45.3 ms in all, the 7th request.
    fn proxied() -> Entry {
        Entry {
            peer: "10.0.0.1:52311".parse().unwrap(),
            client_username: None,
            method: http::Method::GET,
            path: "/api/users?page=2".into(),
            protocol: "HTTP/1.1",
            scheme: "http",
            host: "app.example.com:8000".into(),
            status: 200,
            downstream_size: 1234,
            request_size: 0,
            duration: Duration::from_micros(45_300),
            start: UNIX_EPOCH + Duration::from_millis(1_769_335_200_500),
            request_count: 7,
            router: Some("app@docker".into()),
            service: Some("app@docker".into()),
            origin: Some(Origin {
                url: "http://10.1.0.5:8080".into(),
                status: 200,
                duration: Duration::from_millis(40),
                content_length: Some(1234),
                headers: vec![("Content-Type".into(), "application/json".into())],
            }),
            entry_point: "web".into(),
            tls: None,
            retry_attempts: 0,
            sleep_wait: None,
            headers: vec![("User-Agent".into(), "Mozilla/5.0".into())],
            downstream_headers: vec![("Content-Type".into(), "application/json".into())],
            trace: None,
        }
    }

    fn keep_all() -> FieldRules {
        FieldRules {
            default: FieldMode::Keep,
            names: BTreeMap::new(),
        }
    }

    fn line(e: &Entry, rules: &FieldRules, format: AccessLogFormat) -> String {
        let mut out = String::new();
        match format {
            AccessLogFormat::Common => clf_line(e, rules, true, &mut out),
            AccessLogFormat::GenericClf => clf_line(e, rules, false, &mut out),
            AccessLogFormat::Json => json_line(
                e,
                rules,
                UNIX_EPOCH + Duration::from_secs(1_769_335_201),
                &mut out,
            ),
        }
        out
    }

    #[test]
    fn common_and_generic_clf_lines_are_traefiks() {
        // Written from Traefik's documented CLF fields for this request.
        let traefik_common = r#"10.0.0.1 - - [25/Jan/2026:10:00:00 +0000] "GET /api/users?page=2 HTTP/1.1" 200 1234 "-" "Mozilla/5.0" 7 "app@docker" "http://10.1.0.5:8080" 45ms"#;
        let traefik_generic = r#"10.0.0.1 - - [25/Jan/2026:10:00:00 +0000] "GET /api/users?page=2 HTTP/1.1" 200 1234 "-" "Mozilla/5.0""#;
        let e = proxied();
        assert_eq!(
            line(&e, &keep_all(), AccessLogFormat::Common),
            traefik_common
        );
        assert_eq!(
            line(&e, &keep_all(), AccessLogFormat::GenericClf),
            traefik_generic
        );
    }

    #[test]
    fn clf_lines_of_an_unrouted_request_and_of_dropped_fields_show_dashes() {
        let e = Entry {
            client_username: Some("ann".into()),
            router: None,
            service: None,
            origin: None,
            headers: Vec::new(),
            status: 404,
            downstream_size: 19,
            ..proxied()
        };
        assert_eq!(
            line(&e, &keep_all(), AccessLogFormat::Common),
            r#"10.0.0.1 - ann [25/Jan/2026:10:00:00 +0000] "GET /api/users?page=2 HTTP/1.1" 404 19 "-" "-" 7 "-" "-" 45ms"#
        );
        let rules = FieldRules {
            default: FieldMode::Keep,
            names: [
                ("clienthost".to_owned(), FieldMode::Drop),
                ("StartUTC".to_owned(), FieldMode::Drop),
                ("RequestPath".to_owned(), FieldMode::Redact),
            ]
            .into(),
        };
        assert_eq!(
            line(&e, &rules, AccessLogFormat::GenericClf),
            r#"- - ann [25/Jan/2026:10:00:00 +0000] "GET REDACTED HTTP/1.1" 404 19 "-" "-""#
        );
    }

    #[test]
    fn json_lines_have_every_field_traefik_writes_with_its_types() {
        let e = Entry {
            tls: Some(TlsFields {
                negotiated: crate::tls::negotiated::Negotiated::from_wire(
                    Some(0x0304),
                    Some(0x1301),
                ),
                client_subject: Some("CN=ann,O=example".into()),
            }),
            scheme: "https",
            retry_attempts: 1,
            ..proxied()
        };
        let got: serde_json::Value =
            serde_json::from_str(&line(&e, &keep_all(), AccessLogFormat::Json)).unwrap();
        // Written from Traefik's documented JSON fields for this request.
        let traefik = serde_json::json!({
            "ClientAddr": "10.0.0.1:52311",
            "ClientHost": "10.0.0.1",
            "ClientPort": "52311",
            "ClientUsername": "-",
            "DownstreamContentSize": 1234,
            "DownstreamStatus": 200,
            "Duration": 45_300_000,
            "OriginContentSize": 1234,
            "OriginDuration": 40_000_000,
            "OriginStatus": 200,
            "Overhead": 5_300_000,
            "RequestAddr": "app.example.com:8000",
            "RequestContentSize": 0,
            "RequestCount": 7,
            "RequestHost": "app.example.com",
            "RequestMethod": "GET",
            "RequestPath": "/api/users?page=2",
            "RequestPort": "8000",
            "RequestProtocol": "HTTP/1.1",
            "RequestScheme": "https",
            "RetryAttempts": 1,
            "RouterName": "app@docker",
            "ServiceAddr": "10.1.0.5:8080",
            "ServiceName": "app@docker",
            "ServiceURL": "http://10.1.0.5:8080",
            "StartLocal": "2026-01-25T10:00:00.5Z",
            "StartUTC": "2026-01-25T10:00:00.5Z",
            "TLSCipher": "TLS_AES_128_GCM_SHA256",
            "TLSClientSubject": "CN=ann,O=example",
            "TLSVersion": "1.3",
            "entryPointName": "web",
            "request_User-Agent": "Mozilla/5.0",
            "origin_Content-Type": "application/json",
            "downstream_Content-Type": "application/json",
            "level": "info",
            "msg": "",
            "time": "2026-01-25T10:00:01Z",
        });
        let (got, want) = (got.as_object().unwrap(), traefik.as_object().unwrap());
        for (name, value) in want {
            assert_eq!(got.get(name), Some(value), "field {name}");
        }
        for name in got.keys() {
            assert!(want.contains_key(name), "field {name} is not Traefik's");
        }
    }

    #[test]
    fn json_fields_follow_their_modes_and_compression_shows_a_ratio() {
        let mut e = proxied();
        e.downstream_size = 617;
        if let Some(o) = &mut e.origin {
            o.content_length = Some(1234);
        }
        e.host = "app.example.com".into();
        let rules = FieldRules {
            default: FieldMode::Drop,
            names: [
                ("GzipRatio".to_owned(), FieldMode::Keep),
                ("RequestPort".to_owned(), FieldMode::Keep),
                ("clientaddr".to_owned(), FieldMode::Redact),
            ]
            .into(),
        };
        let got: serde_json::Value =
            serde_json::from_str(&line(&e, &rules, AccessLogFormat::Json)).unwrap();
        assert_eq!(got["GzipRatio"], 2.0);
        assert_eq!(got["RequestPort"], "-");
        assert_eq!(got["ClientAddr"], "REDACTED");
        assert!(got.get("RequestPath").is_none(), "{got}");
        assert!(got.get("Duration").is_none(), "{got}");
        assert_eq!(got["level"], "info");
    }

    #[test]
    fn headers_are_captured_by_their_mode_with_go_names() {
        let mut map = http::HeaderMap::new();
        map.insert("user-agent", "curl/8".parse().unwrap());
        map.insert("authorization", "Bearer x".parse().unwrap());
        map.append("x-multi", "a".parse().unwrap());
        map.append("x-multi", "b".parse().unwrap());
        map.insert("cookie", "c=1".parse().unwrap());
        let dropped = HeaderSelection {
            default: FieldMode::Drop,
            names: BTreeMap::new(),
        };
        let got = dropped.capture(&map);
        assert!(got.is_empty() && got.capacity() == 0);
        let selection = HeaderSelection {
            default: FieldMode::Keep,
            names: [
                ("Authorization".to_owned(), FieldMode::Redact),
                ("cookie".to_owned(), FieldMode::Drop),
            ]
            .into(),
        };
        let mut got = selection.capture(&map);
        got.sort();
        assert_eq!(
            got,
            [
                ("Authorization".to_owned(), "REDACTED".to_owned()),
                ("User-Agent".to_owned(), "curl/8".to_owned()),
                ("X-Multi".to_owned(), "a,b".to_owned()),
            ]
        );
    }

    #[test]
    fn a_client_certificates_subject_reads_as_go_prints_it() {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        let dn = &mut params.distinguished_name;
        dn.push(rcgen::DnType::CountryName, "FR");
        dn.push(rcgen::DnType::OrganizationName, "example");
        dn.push(rcgen::DnType::OrganizationalUnitName, "ops");
        dn.push(rcgen::DnType::CommonName, "ann");
        let cert = params.self_signed(&key).unwrap();
        assert_eq!(
            subject_text(cert.der()).as_deref(),
            Some("CN=ann,OU=ops,O=example,C=FR")
        );
        assert_eq!(subject_text(b"not a certificate"), None);
    }

    #[test]
    fn hosts_split_as_traefik_splits_them() {
        assert_eq!(split_host_port("a.test:8000"), ("a.test", "8000"));
        assert_eq!(split_host_port("a.test"), ("a.test", "-"));
        assert_eq!(split_host_port("[::1]:80"), ("::1", "80"));
        assert_eq!(split_host_port("[::1]"), ("::1", "-"));
    }
}
