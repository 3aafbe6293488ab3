//! `gangway healthcheck [--ping]`: Traefik's `traefik healthcheck`. It
//! reads the same static configuration as gangway's start (file,
//! environment, flags; `--ping` turns ping on as it does there), asks
//! `/ping` to the ping entry point and exits 0 on `200`, 1 otherwise,
//! printing what Traefik prints. A container's `HEALTHCHECK` runs it.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::path::Path;
use std::time::Duration;

use crate::config::static_config::{self, ListenAddress, Loaded, StaticConfig, StaticConfigError};

/// How long the whole call may take, as in Traefik.
const TIMEOUT: Duration = Duration::from_secs(5);

/// The flag that makes a configuration without ping healthy (the image's
/// `HEALTHCHECK` passes it).
pub const IF_ENABLED: &str = "--if-enabled";

/// Most bytes read of the answer: its status line is all that counts.
const MAX_HEAD: usize = 1024;

/// Why the health check could not ask.
#[derive(Debug, thiserror::Error)]
pub enum HealthcheckError {
    /// The static configuration does not load.
    #[error(transparent)]
    Config(#[from] StaticConfigError),
    /// `ping` is not enabled.
    #[error("please enable `ping` to use health check")]
    PingDisabled,
    /// `ping.entryPoint` names no entry point.
    #[error("ping: missing {name} entry point")]
    MissingEntryPoint {
        /// The entry point's name.
        name: String,
    },
    /// The call failed.
    #[error("GET {url}: {source}")]
    Call {
        /// The URL called.
        url: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// `--url` is not an `http://host[:port]/path` URL.
    #[error("--url {url}: not an http:// URL (https is not asked by the health check)")]
    BadUrl {
        /// The URL given.
        url: String,
    },
    /// `--url` names a host that does not resolve.
    #[error("--url {url}: no address for its host")]
    NoAddress {
        /// The URL given.
        url: String,
    },
    /// The answer is not HTTP.
    #[error("GET {url}: the answer is not HTTP")]
    NotHttp {
        /// The URL called.
        url: String,
    },
}

/// Runs the command; returns the exit status.
pub fn main(args: &[String], env: &[(String, String)], cwd: &Path) -> u8 {
    if args
        .iter()
        .any(|a| a == "-h" || a.eq_ignore_ascii_case("--help"))
    {
        println!(
            "Usage: gangway healthcheck [--ping] [--url URL] [--OPTION=VALUE]...\n\n\
             Calls /ping on the ping entry point of the static configuration\n\
             (read as gangway reads it at start) and exits 0 when it answers 200,\n\
             1 otherwise. `--ping` turns ping on, as for gangway itself;\n\
             `--url` calls that http:// URL instead, reading no configuration;\n\
             `--if-enabled` exits 0 when ping is not enabled at all."
        );
        return 0;
    }
    // Traefik 3.5's `--url` asks that URL instead of the ping entry
    // point's, so no configuration is read.
    if let Some(url) = url_flag(args) {
        return report(probe_url(&url));
    }
    // gangway's own flag, for the image's HEALTHCHECK: without ping in
    // the configuration the container can see there is nothing to ask,
    // and that is not ill health (Traefik's image declares no check).
    let if_enabled = args.iter().any(|a| a == IF_ENABLED);
    let args: Vec<String> = args.iter().filter(|a| *a != IF_ENABLED).cloned().collect();
    let config = match static_config::load(&args, env, cwd) {
        Ok(Loaded::Run(config, _)) => config,
        Ok(Loaded::Help(_) | Loaded::Version) => return 0,
        Err(e) => {
            println!("Error calling healthcheck: {}", HealthcheckError::from(e));
            return 1;
        }
    };
    if if_enabled && config.ping.is_none() {
        println!("OK: ping is not enabled, nothing to check");
        return 0;
    }
    report(probe(&config))
}

/// The value of `--url URL` or `--url=URL`, in any case.
fn url_flag(args: &[String]) -> Option<String> {
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let Some(rest) = arg.strip_prefix("--") else {
            continue;
        };
        let (name, value) = rest.split_once('=').unwrap_or((rest, ""));
        if name.eq_ignore_ascii_case("url") {
            return Some(if rest.contains('=') {
                value.to_owned()
            } else {
                args.next().cloned().unwrap_or_default()
            });
        }
    }
    None
}

/// Prints the outcome as Traefik does; the exit status.
fn report(outcome: Result<(String, u16, String), HealthcheckError>) -> u8 {
    match outcome {
        Ok((url, 200, _)) => {
            println!("OK: {url}");
            0
        }
        Ok((_, _, status)) => {
            println!("Bad healthcheck status: {status}");
            1
        }
        Err(e) => {
            println!("Error calling healthcheck: {e}");
            1
        }
    }
}

/// Calls the ping endpoint: the URL, the status code and the status as
/// the server wrote it (`503 Service Unavailable`).
pub fn probe(config: &StaticConfig) -> Result<(String, u16, String), HealthcheckError> {
    let ping = config.ping.as_ref().ok_or(HealthcheckError::PingDisabled)?;
    let name = &ping.entry_point;
    let entry_point = config
        .entry_points
        .get(name)
        .ok_or_else(|| HealthcheckError::MissingEntryPoint { name: name.clone() })?;
    let address = &entry_point.address;
    let shown = ListenAddress {
        udp: false,
        ..*address
    };
    let url = format!("http://{shown}/ping");
    let target = SocketAddr::new(reachable_host(address.host), address.port);
    ask(url, target, &target.to_string(), "/ping")
}

/// Calls `--url`: an `http://` URL, its host resolved here.
pub fn probe_url(url: &str) -> Result<(String, u16, String), HealthcheckError> {
    let bad = || HealthcheckError::BadUrl {
        url: url.to_owned(),
    };
    let uri: http::Uri = url.parse().map_err(|_| bad())?;
    if uri.scheme_str() != Some("http") {
        return Err(bad());
    }
    let authority = uri.authority().ok_or_else(bad)?;
    let port = authority.port_u16().unwrap_or(80);
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']');
    let target = std::net::ToSocketAddrs::to_socket_addrs(&(host, port))
        .ok()
        .and_then(|mut addrs| addrs.next())
        .ok_or_else(|| HealthcheckError::NoAddress {
            url: url.to_owned(),
        })?;
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    ask(url.to_owned(), target, authority.as_str(), path)
}

/// GETs `path` from `target` with `Host: host`: the URL shown, the status
/// code and the status as the server wrote it.
fn ask(
    url: String,
    target: SocketAddr,
    host: &str,
    path: &str,
) -> Result<(String, u16, String), HealthcheckError> {
    let call = |source| HealthcheckError::Call {
        url: url.clone(),
        source,
    };
    let mut stream = TcpStream::connect_timeout(&target, TIMEOUT).map_err(call)?;
    stream.set_read_timeout(Some(TIMEOUT)).map_err(call)?;
    stream.set_write_timeout(Some(TIMEOUT)).map_err(call)?;
    // GET where Traefik sends HEAD: gangway's /ping answers HEAD with 200
    // even while shutting down, and only the status line is read anyway.
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: gangway-healthcheck\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).map_err(call)?;
    let mut head = Vec::new();
    let mut buf = [0u8; 256];
    while !head.windows(2).any(|w| w == b"\r\n") && head.len() < MAX_HEAD {
        let n = stream.read(&mut buf).map_err(call)?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(buf.get(..n).unwrap_or_default());
    }
    let text = String::from_utf8_lossy(&head);
    let line = text.lines().next().unwrap_or_default();
    let status = line
        .strip_prefix("HTTP/1.1 ")
        .or_else(|| line.strip_prefix("HTTP/1.0 "))
        .ok_or_else(|| HealthcheckError::NotHttp { url: url.clone() })?;
    let code = status
        .get(..3)
        .and_then(|c| c.parse::<u16>().ok())
        .ok_or_else(|| HealthcheckError::NotHttp { url: url.clone() })?;
    Ok((url, code, status.trim().to_owned()))
}

/// The address to call for an entry point listening on `host`: the
/// loopback address for one listening on every interface.
fn reachable_host(host: Option<IpAddr>) -> IpAddr {
    match host {
        None => IpAddr::V4(Ipv4Addr::LOCALHOST),
        Some(ip) if ip.is_unspecified() => match ip {
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
        },
        Some(ip) => ip,
    }
}
