//! A small ACME test double for the two things Debian's pebble 2.4 lacks:
//! renewal information (ARI, RFC 9773) and the profiles extension's
//! `meta.profiles`. It fronts a real pebble and is not a CA: its directory
//! is pebble's with `renewalInfo` and `meta.profiles` added, `GET
//! <renewalInfo>/<certID>` answers the window the test sets (with a
//! `Retry-After`), and every other request is forwarded to pebble as it
//! came. pebble builds its URLs, and checks each request's JWS `url`, from
//! the Host it is sent, which stays the double's: accounts, orders,
//! validation and issuance are pebble's, for real. Each request the
//! double sees is logged for the test to assert on.

use super::tls::TestCa;
use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// What the double saw.
#[derive(Debug, Clone)]
pub enum Seen {
    /// A renewal information request for this certificate ID.
    Renewal { cert_id: String, at: Instant },
    /// A new order, with its `replaces` and `profile` fields.
    NewOrder {
        replaces: Option<String>,
        profile: Option<String>,
    },
}

/// The window the double suggests.
#[derive(Debug, Clone, Copy)]
pub struct Suggest {
    /// Start and end, seconds from now (negative: in the past).
    pub start: i64,
    pub end: i64,
    /// `Retry-After`, seconds.
    pub retry_after: u64,
}

struct State {
    /// The window for every certificate, and the one for `urgent` (if set).
    usual: Suggest,
    urgent: Option<(String, Suggest)>,
    seen: Vec<Seen>,
}

pub struct AriDouble {
    /// The directory URL gangway is given.
    pub directory: String,
    /// The CA of the double's HTTPS certificate (a PEM file).
    pub ca_file: std::path::PathBuf,
    _dir: tempfile::TempDir,
    state: Arc<Mutex<State>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for AriDouble {
    fn drop(&mut self) {
        self.task.abort();
    }
}

type Client = hyper_util::client::legacy::Client<
    hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
    Full<Bytes>,
>;

impl AriDouble {
    /// Starts the double in front of pebble's directory `pebble_dir`
    /// (whose API is trusted through `pebble_ca`), suggesting `usual`.
    pub async fn start(pebble_dir: &str, pebble_ca: &[u8], usual: Suggest) -> AriDouble {
        let dir = tempfile::tempdir().unwrap();
        let ca = TestCa::new("ARI test double CA");
        let (cert, key) = ca.issue(&["127.0.0.1"]);
        let ca_file = dir.path().join("double-ca.pem");
        std::fs::write(&ca_file, ca.pem()).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(Mutex::new(State {
            usual,
            urgent: None,
            seen: Vec::new(),
        }));
        let pebble: http::Uri = pebble_dir.parse().unwrap();
        let upstream = format!("https://{}", pebble.authority().unwrap());
        let tls = server_config(&cert, &key);
        let client = client(pebble_ca);
        let shared = state.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                let tls = tls.clone();
                let (client, state, upstream) = (client.clone(), shared.clone(), upstream.clone());
                tokio::spawn(async move {
                    let Ok(stream) = tls.accept(tcp).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(move |req| {
                        let (client, state, upstream) =
                            (client.clone(), state.clone(), upstream.clone());
                        async move {
                            Ok::<_, std::convert::Infallible>(
                                answer(req, &client, &state, &upstream, port).await,
                            )
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        AriDouble {
            directory: format!("https://127.0.0.1:{port}/dir"),
            ca_file,
            _dir: dir,
            state,
            task,
        }
    }

    /// From now on, certificate `cert_id` gets `suggest` (others keep the
    /// usual window).
    pub fn urge(&self, cert_id: &str, suggest: Suggest) {
        self.state.lock().unwrap().urgent = Some((cert_id.to_owned(), suggest));
    }

    /// Everything seen so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.state.lock().unwrap().seen.clone()
    }

    /// The times certificate `cert_id`'s window was asked for.
    pub fn fetches(&self, cert_id: &str) -> Vec<Instant> {
        self.seen()
            .into_iter()
            .filter_map(|s| match s {
                Seen::Renewal { cert_id: id, at } if id == cert_id => Some(at),
                _ => None,
            })
            .collect()
    }

    /// The `replaces` of every new order, in order.
    pub fn orders(&self) -> Vec<(Option<String>, Option<String>)> {
        self.seen()
            .into_iter()
            .filter_map(|s| match s {
                Seen::NewOrder { replaces, profile } => Some((replaces, profile)),
                Seen::Renewal { .. } => None,
            })
            .collect()
    }
}

fn server_config(cert: &str, key: &str) -> tokio_rustls::TlsAcceptor {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert.as_bytes())
        .map(Result::unwrap)
        .collect();
    let key = PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    tokio_rustls::TlsAcceptor::from(Arc::new(config))
}

fn client(ca_pem: &[u8]) -> Client {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem) {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(config)
        .https_only()
        .enable_http1()
        .build();
    hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build(connector)
}

async fn answer(
    req: http::Request<hyper::body::Incoming>,
    client: &Client,
    state: &Mutex<State>,
    upstream: &str,
    port: u16,
) -> http::Response<Full<Bytes>> {
    let path = req.uri().path().to_owned();
    if let Some(cert_id) = path.strip_prefix("/renewal-info/") {
        return renewal(state, cert_id);
    }
    let (parts, body) = req.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    // A new order's `replaces` and `profile`, which the order object
    // repeats (RFC 9773 §5, the profiles draft) and pebble 2.4 does not.
    let mut echo: Option<serde_json::Value> = None;
    if path == "/order-plz" {
        let payload: serde_json::Value = serde_json::from_slice(&body)
            .ok()
            .and_then(|jws: serde_json::Value| {
                let text = jws["payload"].as_str()?.to_owned();
                let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .decode(text)
                    .ok()?;
                serde_json::from_slice(&bytes).ok()
            })
            .unwrap_or_default();
        state.lock().unwrap().seen.push(Seen::NewOrder {
            replaces: payload["replaces"].as_str().map(str::to_owned),
            profile: payload["profile"].as_str().map(str::to_owned),
        });
        echo = Some(payload);
    }
    let mut forward = http::Request::builder()
        .method(parts.method.clone())
        .uri(format!(
            "{upstream}{}",
            parts.uri.path_and_query().map_or("/", |p| p.as_str())
        ));
    for (name, value) in &parts.headers {
        if name != http::header::HOST {
            forward = forward.header(name, value);
        }
    }
    // pebble's URLs, and its check of each JWS url, follow this Host.
    forward = forward.header(http::header::HOST, format!("127.0.0.1:{port}"));
    let Ok(answer) = client.request(forward.body(Full::new(body)).unwrap()).await else {
        return http::Response::builder()
            .status(502)
            .body(Full::new(Bytes::new()))
            .unwrap();
    };
    let (mut head, body) = answer.into_parts();
    let mut body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    if let Some(asked) = echo.filter(|_| head.status.is_success()) {
        let mut order: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        for field in ["replaces", "profile"] {
            if !asked[field].is_null() {
                order[field] = asked[field].clone();
            }
        }
        body = Bytes::from(order.to_string());
        head.headers.remove(http::header::CONTENT_LENGTH);
    }
    if path == "/dir" {
        let mut directory: serde_json::Value = serde_json::from_slice(&body).unwrap_or_else(|e| {
            panic!(
                "pebble's directory: {e}: {}",
                String::from_utf8_lossy(&body)
            )
        });
        directory["renewalInfo"] = format!("https://127.0.0.1:{port}/renewal-info").into();
        directory["meta"]["profiles"] = serde_json::json!({
            "classic": "the CA's usual certificates",
            "shortlived": "six-day certificates",
        });
        body = Bytes::from(directory.to_string());
        head.headers.remove(http::header::CONTENT_LENGTH);
    }
    http::Response::from_parts(head, Full::new(body))
}

fn renewal(state: &Mutex<State>, cert_id: &str) -> http::Response<Full<Bytes>> {
    let mut state = state.lock().unwrap();
    state.seen.push(Seen::Renewal {
        cert_id: cert_id.to_owned(),
        at: Instant::now(),
    });
    let suggest = match &state.urgent {
        Some((id, s)) if id == cert_id => *s,
        _ => state.usual,
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let window = serde_json::json!({
        "suggestedWindow": {
            "start": rfc3339(now + suggest.start),
            "end": rfc3339(now + suggest.end),
        }
    });
    http::Response::builder()
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::RETRY_AFTER, suggest.retry_after.to_string())
        .body(Full::new(Bytes::from(window.to_string())))
        .unwrap()
}

/// `secs` since the epoch as an RFC 3339 UTC time.
fn rfc3339(secs: i64) -> String {
    let days = secs.div_euclid(86400);
    let rest = secs.rem_euclid(86400);
    // Days to a civil date (proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// The ARI certificate ID of a DER certificate (RFC 9773 §4.1): base64url
/// of its authority key identifier, a dot, base64url of its serial.
pub fn cert_id(der: &[u8]) -> String {
    use x509_parser::extensions::ParsedExtension;
    let (_, cert) = x509_parser::parse_x509_certificate(der).unwrap();
    let aki = cert
        .iter_extensions()
        .find_map(|e| match e.parsed_extension() {
            ParsedExtension::AuthorityKeyIdentifier(a) => a.key_identifier.as_ref().map(|k| k.0),
            _ => None,
        })
        .expect("an authority key identifier");
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    format!(
        "{}.{}",
        b64.encode(aki),
        b64.encode(cert.tbs_certificate.raw_serial())
    )
}
