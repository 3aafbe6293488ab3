//! An HTTP/3 load generator for `scripts/bench`'s `h3-tls` cell, where
//! Debian's h2load has no QUIC: `connections` QUIC connections, each with
//! `streams` requests in flight (a new GET as soon as one is answered),
//! for `duration` seconds after a warm-up. Prints one JSON line: requests
//! answered, errors, the rate, and the 50th and 99th percentile latency.
//!
//! Like h2load, it does not verify the server's certificate (the bench's
//! is self-signed): a benchmark measures the proxy, not the client's PKI.
//!
//! Bounded: at most `MAX_SAMPLES` latencies are kept (enough for any
//! percentile of a bench run); past them requests are still counted.
//!
//! Usage: `h3load --url https://127.0.0.1:19101/json --authority bench.localhost
//! [-c 10] [-m 100] [-t 1] [-D 4] [--warm-up-ms 500]`

use bytes::Buf;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const MAX_SAMPLES: usize = 4_000_000;

struct Options {
    addr: SocketAddr,
    authority: String,
    path: String,
    connections: usize,
    streams: usize,
    threads: usize,
    duration: Duration,
    warm_up: Duration,
}

fn options() -> Result<Options, String> {
    let mut url = None;
    let mut o = Options {
        addr: SocketAddr::from(([127, 0, 0, 1], 443)),
        authority: String::new(),
        path: "/".to_owned(),
        connections: 10,
        streams: 100,
        threads: 1,
        duration: Duration::from_secs(4),
        warm_up: Duration::from_millis(500),
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(format!("{flag}: missing value"))?;
        let number = || {
            value
                .parse::<u64>()
                .map_err(|e| format!("{flag}={value}: {e}"))
        };
        match flag.as_str() {
            "--url" => url = Some(value.clone()),
            "--authority" => o.authority = value.clone(),
            "-c" => o.connections = number()? as usize,
            "-m" => o.streams = number()? as usize,
            "-t" => o.threads = number()?.max(1) as usize,
            "-D" => o.duration = Duration::from_secs(number()?),
            "--warm-up-ms" => o.warm_up = Duration::from_millis(number()?),
            other => return Err(format!("unknown option {other}")),
        }
    }
    let url = url.ok_or("--url is required")?;
    let rest = url
        .strip_prefix("https://")
        .ok_or("the URL must be https://")?;
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    o.addr = host
        .parse()
        .map_err(|e| format!("{host}: not an IP:port ({e})"))?;
    o.path = format!("/{path}");
    if o.authority.is_empty() {
        o.authority = host.to_owned();
    }
    Ok(o)
}

/// What all streams record: answered requests, errors, and latencies
/// (microseconds) of the requests answered after the warm-up.
struct Tally {
    requests: AtomicU64,
    errors: AtomicU64,
    samples: Mutex<Vec<u32>>,
}

/// Takes any certificate, checking only that the handshake is signed
/// with its key.
#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &[rustls::pki_types::CertificateDer<'_>],
        _: &rustls::pki_types::ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

fn client_config() -> Result<quinn::ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let crypto =
        quinn::crypto::rustls::QuicClientConfig::try_from(tls).map_err(|e| e.to_string())?;
    Ok(quinn::ClientConfig::new(Arc::new(crypto)))
}

/// One connection's streams, each sending GETs one after another until
/// `end`.
async fn run_connection(
    o: Arc<Options>,
    config: quinn::ClientConfig,
    tally: Arc<Tally>,
    measure_from: Instant,
    end: Instant,
) -> Result<(), String> {
    let mut endpoint = quinn::Endpoint::client(SocketAddr::from(([127, 0, 0, 1], 0)))
        .map_err(|e| e.to_string())?;
    endpoint.set_default_client_config(config);
    let conn = endpoint
        .connect(o.addr, &o.authority)
        .map_err(|e| e.to_string())?
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    let (mut driver, send) = h3::client::new(h3_quinn::Connection::new(conn.clone()))
        .await
        .map_err(|e| e.to_string())?;
    let driver =
        tokio::spawn(async move { std::future::poll_fn(|cx| driver.poll_close(cx)).await });
    let uri: http::Uri = format!("https://{}{}", o.authority, o.path)
        .parse()
        .map_err(|e| format!("{e}"))?;
    let mut streams = Vec::new();
    for _ in 0..o.streams {
        let mut send = send.clone();
        let tally = tally.clone();
        let uri = uri.clone();
        let conn = conn.clone();
        streams.push(tokio::spawn(async move {
            let mut local = Vec::new();
            while Instant::now() < end {
                let started = Instant::now();
                let req = http::Request::get(uri.clone()).body(()).expect("request");
                let ok = async {
                    let mut stream = send.send_request(req).await.ok()?;
                    stream.finish().await.ok()?;
                    let resp = stream.recv_response().await.ok()?;
                    while let Some(mut chunk) = stream.recv_data().await.ok()? {
                        chunk.advance(chunk.remaining());
                    }
                    resp.status().is_success().then_some(())
                }
                .await;
                let done = Instant::now();
                if done > end {
                    break;
                }
                if started >= measure_from {
                    match ok {
                        Some(()) => {
                            tally.requests.fetch_add(1, Ordering::Relaxed);
                            local.push(done.duration_since(started).as_micros() as u32);
                        }
                        None => {
                            tally.errors.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
                if ok.is_none() && conn.close_reason().is_some() {
                    // The connection is gone: this stream stops.
                    break;
                }
            }
            let mut samples = tally.samples.lock().expect("not poisoned");
            let room = MAX_SAMPLES.saturating_sub(samples.len());
            samples.extend(local.into_iter().take(room));
        }));
    }
    for s in streams {
        let _ = s.await;
    }
    driver.abort();
    Ok(())
}

fn main() {
    let o = match options() {
        Ok(o) => Arc::new(o),
        Err(e) => {
            eprintln!("h3load: {e}");
            std::process::exit(2);
        }
    };
    let config = match client_config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("h3load: {e}");
            std::process::exit(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(o.threads)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let tally = Arc::new(Tally {
        requests: AtomicU64::new(0),
        errors: AtomicU64::new(0),
        samples: Mutex::new(Vec::new()),
    });
    let start = Instant::now();
    let measure_from = start + o.warm_up;
    let end = measure_from + o.duration;
    let failures = runtime.block_on(async {
        let mut conns = Vec::new();
        for _ in 0..o.connections {
            conns.push(tokio::spawn(run_connection(
                o.clone(),
                config.clone(),
                tally.clone(),
                measure_from,
                end,
            )));
        }
        let mut failures = Vec::new();
        for c in conns {
            if let Ok(Err(e)) = c.await {
                failures.push(e);
            }
        }
        failures
    });
    for f in &failures {
        eprintln!("h3load: connection failed: {f}");
    }
    let mut samples = std::mem::take(&mut *tally.samples.lock().expect("not poisoned"));
    samples.sort_unstable();
    let pct = |q: usize| -> f64 {
        if samples.is_empty() {
            return f64::NAN;
        }
        f64::from(samples[(samples.len() * q / 100).min(samples.len() - 1)]) / 1000.0
    };
    let requests = tally.requests.load(Ordering::Relaxed);
    let errors = tally.errors.load(Ordering::Relaxed) + failures.len() as u64;
    let secs = o.duration.as_secs_f64();
    println!(
        "{{\"requests\": {requests}, \"errors\": {errors}, \"rps\": {:.1}, \"p50_ms\": {}, \"p99_ms\": {}}}",
        requests as f64 / secs,
        json_number(pct(50)),
        json_number(pct(99)),
    );
}

fn json_number(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.3}")
    } else {
        "null".to_owned()
    }
}
