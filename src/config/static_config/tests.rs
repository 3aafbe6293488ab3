use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Value, json};

use super::options::{NAME, Style, lookup};
use super::*;
use crate::config::duration::Duration;

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

fn vars(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// A working directory holding `files` (name, contents).
fn dir_with(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

fn empty_dir() -> tempfile::TempDir {
    dir_with(&[])
}

fn run_in(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> (StaticConfig, Option<PathBuf>) {
    match load(&strings(args), &vars(env), cwd) {
        Ok(Loaded::Run(config, file)) => (config, file.file),
        Ok(other) => panic!("expected a configuration, got {other:?}"),
        Err(e) => panic!("expected a configuration, got error: {e}"),
    }
}

fn run(args: &[&str], env: &[(&str, &str)]) -> StaticConfig {
    run_in(empty_dir().path(), args, env).0
}

fn fail_in(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> StaticConfigError {
    match load(&strings(args), &vars(env), cwd) {
        Ok(loaded) => panic!("expected an error, got {loaded:?}"),
        Err(e) => e,
    }
}

fn fail(args: &[&str], env: &[(&str, &str)]) -> StaticConfigError {
    fail_in(empty_dir().path(), args, env)
}

fn addr(text: &str) -> ListenAddress {
    text.parse().unwrap()
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

// ---------------------------------------------------------------- addresses

#[test]
fn address_forms() {
    let cases: &[(&str, Option<IpAddr>, u16, &str)] = &[
        (":80", None, 80, ":80"),
        (":80/tcp", None, 80, ":80"),
        (":443/TCP", None, 443, ":443"),
        (
            "127.0.0.1:8000",
            Some(IpAddr::V4(Ipv4Addr::LOCALHOST)),
            8000,
            "127.0.0.1:8000",
        ),
        (
            "0.0.0.0:80",
            Some(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
            80,
            "0.0.0.0:80",
        ),
        (
            "[::1]:8443",
            Some(IpAddr::V6(Ipv6Addr::LOCALHOST)),
            8443,
            "[::1]:8443",
        ),
        (
            "[::]:80/tcp",
            Some(IpAddr::V6(Ipv6Addr::UNSPECIFIED)),
            80,
            "[::]:80",
        ),
        (":0", None, 0, ":0"),
        (":65535", None, 65535, ":65535"),
    ];
    for (text, host, port, shown) in cases {
        let parsed = addr(text);
        assert_eq!(parsed.host, *host, "{text}");
        assert_eq!(parsed.port, *port, "{text}");
        assert_eq!(parsed.to_string(), *shown, "{text}");
        assert_eq!(addr(shown), parsed, "round trip of {text}");
    }
    assert_eq!(ListenAddress::default().to_string(), ":80");
    assert_eq!(
        addr(":8080").socket_addr(),
        "0.0.0.0:8080".parse::<std::net::SocketAddr>().unwrap()
    );
    assert_eq!(
        ListenAddress::from("[::1]:9".parse::<std::net::SocketAddr>().unwrap()),
        addr("[::1]:9")
    );
}

#[test]
fn address_errors() {
    let err = |text: &str| match text.parse::<ListenAddress>() {
        Ok(a) => panic!("`{text}` should not parse, got {a}"),
        Err(e) => e,
    };
    assert!(matches!(err("80"), AddressError::Invalid { .. }));
    assert!(matches!(err(""), AddressError::Invalid { .. }));
    assert!(matches!(err(":"), AddressError::BadPort { .. }));
    assert!(matches!(err(":http"), AddressError::BadPort { .. }));
    assert!(matches!(err(":65536"), AddressError::BadPort { .. }));
    assert!(matches!(err(":-1"), AddressError::BadPort { .. }));
    assert!(matches!(err(":+80"), AddressError::BadPort { .. }));
    assert!(matches!(err("localhost:80"), AddressError::BadHost { .. }));
    assert!(matches!(err("::1:80"), AddressError::BadHost { .. }));
    assert!(matches!(err("[::1:80"), AddressError::BadHost { .. }));
    assert!(matches!(
        err("[127.0.0.1]:80"),
        AddressError::BadHost { .. }
    ));
    assert!(matches!(err("256.0.0.1:80"), AddressError::BadHost { .. }));
    let udp = addr(":53/udp");
    assert!(udp.udp && udp.port == 53 && udp.host.is_none());
    assert_eq!(udp.to_string(), ":53/udp");
    assert!(!addr("127.0.0.1:80/TCP").udp);
    assert!(matches!(
        err(":80/sctp"),
        AddressError::UnsupportedProtocol { .. }
    ));
    assert_eq!(
        err("80").to_string(),
        "`80` is not a listen address (try `:80` or `127.0.0.1:8080`)"
    );
}

#[test]
fn address_serde_is_a_string() {
    #[derive(Deserialize)]
    struct Holder {
        a: ListenAddress,
    }
    let h: Holder = toml::from_str("a = \"[::1]:8443/tcp\"").unwrap();
    assert_eq!(h.a, addr("[::1]:8443"));
    assert_eq!(serde_json::to_value(h.a).unwrap(), json!("[::1]:8443"));
    assert!(toml::from_str::<Holder>("a = 80").is_err());
}

// ------------------------------------------------------------- log levels

#[test]
fn log_levels() {
    for (text, level) in [
        ("TRACE", LogLevel::Trace),
        ("debug", LogLevel::Debug),
        ("Info", LogLevel::Info),
        ("WARN", LogLevel::Warn),
        ("error", LogLevel::Error),
        ("FATAL", LogLevel::Error),
        ("panic", LogLevel::Error),
    ] {
        assert_eq!(text.parse::<LogLevel>().unwrap(), level, "{text}");
    }
    assert_eq!(LogLevel::default(), LogLevel::Info);
    assert_eq!(
        "LOUD".parse::<LogLevel>().unwrap_err().to_string(),
        "`LOUD` is not a log level (TRACE, DEBUG, INFO, WARN, ERROR)"
    );
    assert_eq!(serde_json::to_value(LogLevel::Warn).unwrap(), json!("WARN"));
}

// ------------------------------------------------------------------ files

const TRAEFIK_TOML: &str = r#"
# A Traefik v3 static configuration.
[entryPoints]
  [entryPoints.web]
    address = ":80"

  [entryPoints.websecure]
    address = ":443"
    [entryPoints.websecure.forwardedHeaders]
      trustedIPs = ["127.0.0.1/32", "192.168.1.7", "10.0.0.0/8"]
    [entryPoints.websecure.transport.lifeCycle]
      requestAcceptGraceTimeout = 42
      graceTimeOut = "42s"
    [entryPoints.websecure.transport.respondingTimeouts]
      readTimeout = "30s"
      writeTimeout = "5s"
      idleTimeout = 360

[providers]
  providersThrottleDuration = "2s"
  [providers.file]
    filename = "dynamic.toml"
    watch = false

[log]
  level = "DEBUG"

[serversTransport]
  maxIdleConnsPerHost = 7
  [serversTransport.forwardingTimeouts]
    dialTimeout = "1s"
    responseHeaderTimeout = "1m30s"
    idleConnTimeout = 1
"#;

const TRAEFIK_YAML: &str = r#"
# A Traefik v3 static configuration.
entryPoints:
  web:
    address: ":80"
  websecure:
    address: ":443"
    forwardedHeaders:
      trustedIPs:
        - "127.0.0.1/32"
        - "192.168.1.7"
        - "10.0.0.0/8"
    transport:
      lifeCycle:
        requestAcceptGraceTimeout: 42
        graceTimeOut: 42s
      respondingTimeouts:
        readTimeout: 30s
        writeTimeout: 5s
        idleTimeout: 360

providers:
  providersThrottleDuration: 2s
  file:
    filename: dynamic.toml
    watch: false

log:
  level: DEBUG

serversTransport:
  maxIdleConnsPerHost: 7
  forwardingTimeouts:
    dialTimeout: 1s
    responseHeaderTimeout: 1m30s
    idleConnTimeout: 1
"#;

fn check_traefik_file(config: &StaticConfig) {
    assert_eq!(
        config.entry_points.keys().collect::<Vec<_>>(),
        ["web", "websecure"]
    );
    let web = &config.entry_points["web"];
    assert_eq!(web.address, addr(":80"));
    assert_eq!(web.forwarded_headers, ForwardedHeaders::default());
    assert_eq!(web.transport, EntryPointTransport::default());

    let secure = &config.entry_points["websecure"];
    assert_eq!(secure.address, addr(":443"));
    let trusted: Vec<String> = secure
        .forwarded_headers
        .trusted_ips
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(trusted, ["127.0.0.1/32", "192.168.1.7/32", "10.0.0.0/8"]);
    assert!(!secure.forwarded_headers.insecure);
    let life = &secure.transport.life_cycle;
    assert_eq!(life.request_accept_grace_timeout, secs(42));
    assert_eq!(life.grace_time_out, secs(42));
    let responding = &secure.transport.responding_timeouts;
    assert_eq!(responding.read_timeout, secs(30));
    assert_eq!(responding.write_timeout, secs(5));
    assert_eq!(responding.idle_timeout, secs(360));

    assert_eq!(config.providers.providers_throttle_duration, secs(2));
    assert_eq!(
        config.providers.file,
        Some(FileProvider {
            filename: Some(PathBuf::from("dynamic.toml")),
            directory: None,
            watch: false,
        })
    );
    assert_eq!(config.log.level, LogLevel::Debug);
    assert_eq!(config.servers_transport.max_idle_conns_per_host, 7);
    let forwarding = &config.servers_transport.forwarding_timeouts;
    assert_eq!(forwarding.dial_timeout, secs(1));
    assert_eq!(forwarding.response_header_timeout, secs(90));
    assert_eq!(forwarding.idle_conn_timeout, secs(1));
}

#[test]
fn traefik_toml_file_loads() {
    let dir = dir_with(&[("gangway.toml", TRAEFIK_TOML)]);
    let (config, file) = run_in(dir.path(), &[], &[]);
    check_traefik_file(&config);
    assert_eq!(file, Some(dir.path().join("gangway.toml")));
}

#[test]
fn traefik_yaml_file_loads() {
    for name in ["gangway.yml", "gangway.yaml"] {
        let dir = dir_with(&[(name, TRAEFIK_YAML)]);
        let (config, file) = run_in(dir.path(), &[], &[]);
        check_traefik_file(&config);
        assert_eq!(file, Some(dir.path().join(name)));
    }
}

#[test]
fn explicit_config_file_in_any_case_and_form() {
    let dir = dir_with(&[("traefik.yml", TRAEFIK_YAML), ("conf.TOML", TRAEFIK_TOML)]);
    for args in [
        &["--configFile=traefik.yml"][..],
        &["--configfile", "traefik.yml"],
        &["--CONFIGFILE=conf.TOML"],
    ] {
        let (config, file) = run_in(dir.path(), args, &[]);
        check_traefik_file(&config);
        assert!(file.is_some());
    }
    let absolute = dir.path().join("traefik.yml");
    let arg = format!("--configFile={}", absolute.display());
    let (_, file) = run_in(empty_dir().path(), &[&arg], &[]);
    assert_eq!(file, Some(absolute));
    // From the environment too; the flag wins over it.
    let (config, file) = run_in(dir.path(), &[], &[("GANGWAY_CONFIGFILE", "traefik.yml")]);
    check_traefik_file(&config);
    assert_eq!(file, Some(dir.path().join("traefik.yml")));
    let (_, file) = run_in(
        dir.path(),
        &["--configFile=conf.TOML"],
        &[("GANGWAY_CONFIGFILE", "traefik.yml")],
    );
    assert_eq!(file, Some(dir.path().join("conf.TOML")));
}

#[test]
fn default_file_order_and_absence() {
    let dir = dir_with(&[
        ("gangway.yaml", "log:\n  level: ERROR\n"),
        ("gangway.toml", "[log]\nlevel = \"WARN\"\n"),
    ]);
    let (config, file) = run_in(dir.path(), &[], &[]);
    assert_eq!(config.log.level, LogLevel::Warn);
    assert_eq!(file, Some(dir.path().join("gangway.toml")));

    let (_, file) = run_in(empty_dir().path(), &[], &[]);
    assert_eq!(file, None);
}

#[test]
fn empty_files_mean_defaults() {
    for (name, text) in [
        ("gangway.toml", ""),
        ("gangway.yml", ""),
        ("gangway.yaml", "~\n"),
    ] {
        let dir = dir_with(&[(name, text)]);
        let (config, _) = run_in(dir.path(), &[], &[]);
        assert_eq!(config, run(&[], &[]), "{name}");
    }
}

#[test]
fn yaml_empty_section_enables_it() {
    let dir = dir_with(&[(
        "gangway.yml",
        "providers:\n  file:\n    directory: /etc/gangway\n",
    )]);
    let (config, _) = run_in(dir.path(), &[], &[]);
    let file = config.providers.file.unwrap();
    assert_eq!(file.directory, Some(PathBuf::from("/etc/gangway")));
    assert!(file.watch);
}

// ------------------------------------------------------------- defaults

#[test]
fn nothing_configured_gives_web_on_80() {
    let config = run(&[], &[]);
    assert_eq!(config.entry_points.len(), 1);
    let web = &config.entry_points["web"];
    assert_eq!(web.address, addr(":80"));
    assert_eq!(
        web.transport.life_cycle.request_accept_grace_timeout,
        secs(0)
    );
    assert_eq!(web.transport.life_cycle.grace_time_out, secs(10));
    assert_eq!(web.transport.responding_timeouts.read_timeout, secs(60));
    assert_eq!(web.transport.responding_timeouts.write_timeout, secs(0));
    assert_eq!(web.transport.responding_timeouts.idle_timeout, secs(180));
    assert_eq!(web.transport.max_connections, 16384);
    assert_eq!(config.servers_transport.max_concurrent_requests, 1024);
    assert_eq!(
        config.servers_transport.queue_timeout,
        Duration::from_millis(100)
    );
    assert_eq!(
        config.providers.providers_throttle_duration,
        Duration::from_millis(50)
    );
    assert_eq!(config.providers.file, None);
    assert_eq!(config.log.level, LogLevel::Info);
    assert_eq!(config.servers_transport.max_idle_conns_per_host, 200);
    let forwarding = &config.servers_transport.forwarding_timeouts;
    assert_eq!(forwarding.dial_timeout, secs(30));
    assert_eq!(forwarding.response_header_timeout, secs(0));
    assert_eq!(forwarding.idle_conn_timeout, secs(90));
}

#[test]
fn configured_entry_points_replace_the_default() {
    let config = run(&["--entryPoints.admin.address=127.0.0.1:9000"], &[]);
    assert_eq!(config.entry_points.keys().collect::<Vec<_>>(), ["admin"]);
}

// ------------------------------------------------------------ precedence

#[test]
fn file_then_env_then_flags_per_key() {
    let dir = dir_with(&[(
        "gangway.toml",
        "[entryPoints.web]\naddress = \":80\"\n\
         [entryPoints.web.transport.respondingTimeouts]\nreadTimeout = \"5s\"\nidleTimeout = \"7s\"\n\
         [entryPoints.other]\naddress = \":81\"\n\
         [log]\nlevel = \"WARN\"\n\
         [providers.file]\nfilename = \"from-file.toml\"\nwatch = false\n",
    )]);
    let (config, _) = run_in(
        dir.path(),
        &[
            "--entryPoints.web.address=:8000",
            "--entryPoints.web.transport.respondingTimeouts.idleTimeout=9s",
        ],
        &[
            ("GANGWAY_ENTRYPOINTS_WEB_ADDRESS", ":7000"),
            (
                "GANGWAY_ENTRYPOINTS_WEB_TRANSPORT_RESPONDINGTIMEOUTS_IDLETIMEOUT",
                "8s",
            ),
            ("GANGWAY_LOG_LEVEL", "debug"),
            ("GANGWAY_PROVIDERS_FILE_FILENAME", "from-env.toml"),
            ("PATH", "/usr/bin"),
            ("HOME", "/root"),
        ],
    );
    let web = &config.entry_points["web"];
    // Flags beat the environment, which beats the file...
    assert_eq!(web.address, addr(":8000"));
    assert_eq!(web.transport.responding_timeouts.idle_timeout, secs(9));
    assert_eq!(config.log.level, LogLevel::Debug);
    let file = config.providers.file.as_ref().unwrap();
    assert_eq!(file.filename, Some(PathBuf::from("from-env.toml")));
    // ...key by key: what only the file sets survives.
    assert_eq!(web.transport.responding_timeouts.read_timeout, secs(5));
    assert!(!file.watch);
    assert_eq!(config.entry_points["other"].address, addr(":81"));
}

#[test]
fn last_flag_wins() {
    let config = run(&["--log.level=DEBUG", "--log.level=ERROR"], &[]);
    assert_eq!(config.log.level, LogLevel::Error);
}

#[test]
fn names_match_existing_ones_ignoring_case() {
    let dir = dir_with(&[(
        "gangway.toml",
        "[entryPoints.WebSecure]\naddress = \":443\"\n",
    )]);
    let (config, _) = run_in(
        dir.path(),
        &["--entrypoints.websecure.transport.lifecycle.gracetimeout=3s"],
        &[(
            "GANGWAY_ENTRYPOINTS_WEBSECURE_FORWARDEDHEADERS_INSECURE",
            "true",
        )],
    );
    assert_eq!(
        config.entry_points.keys().collect::<Vec<_>>(),
        ["WebSecure"]
    );
    let ep = &config.entry_points["WebSecure"];
    assert_eq!(ep.transport.life_cycle.grace_time_out, secs(3));
    assert!(ep.forwarded_headers.insecure);
}

// ----------------------------------------------------------------- flags

#[test]
fn flags_ignore_case_and_keep_name_case() {
    let config = run(
        &[
            "--ENTRYPOINTS.Web.ADDRESS=:8000",
            "--entrypoints.Api.address",
            "127.0.0.1:9000",
            "--LOG.LEVEL=debug",
            "--serverstransport.forwardingtimeouts.responseheadertimeout=5s",
        ],
        &[],
    );
    assert_eq!(
        config.entry_points.keys().collect::<Vec<_>>(),
        ["Api", "Web"]
    );
    assert_eq!(config.entry_points["Web"].address, addr(":8000"));
    assert_eq!(config.entry_points["Api"].address, addr("127.0.0.1:9000"));
    assert_eq!(config.log.level, LogLevel::Debug);
    assert_eq!(
        config
            .servers_transport
            .forwarding_timeouts
            .response_header_timeout,
        secs(5)
    );
}

#[test]
fn key_space_value_form() {
    let config = run(
        &[
            "--entrypoints.web.address",
            ":8000",
            "--providers.file.filename",
            "dynamic.toml",
            "--providers.providersThrottleDuration",
            "100ms",
            "--serversTransport.maxIdleConnsPerHost",
            "3",
        ],
        &[],
    );
    assert_eq!(config.entry_points["web"].address, addr(":8000"));
    assert_eq!(
        config.providers.file.unwrap().filename,
        Some(PathBuf::from("dynamic.toml"))
    );
    assert_eq!(
        config.providers.providers_throttle_duration,
        Duration::from_millis(100)
    );
    assert_eq!(config.servers_transport.max_idle_conns_per_host, 3);
}

#[test]
fn overload_limits_from_flags_and_environment() {
    let config = run(
        &[
            "--entryPoints.web.address=:80",
            "--entryPoints.web.transport.maxConnections=100",
            "--serversTransport.queueTimeout=0s",
        ],
        &[("GANGWAY_SERVERSTRANSPORT_MAXCONCURRENTREQUESTS", "0")],
    );
    assert_eq!(config.entry_points["web"].transport.max_connections, 100);
    assert_eq!(config.servers_transport.max_concurrent_requests, 0);
    assert_eq!(config.servers_transport.queue_timeout, secs(0));
}

#[test]
fn bool_flags() {
    let insecure = |args: &[&str]| {
        let mut all = vec!["--entryPoints.web.address=:80"];
        all.extend_from_slice(args);
        run(&all, &[]).entry_points["web"]
            .forwarded_headers
            .insecure
    };
    assert!(insecure(&["--entryPoints.web.forwardedHeaders.insecure"]));
    assert!(insecure(&[
        "--entryPoints.web.forwardedHeaders.insecure=true"
    ]));
    assert!(insecure(&[
        "--entryPoints.web.forwardedHeaders.insecure=TRUE"
    ]));
    assert!(insecure(&[
        "--entryPoints.web.forwardedHeaders.insecure",
        "true"
    ]));
    assert!(!insecure(&[
        "--entryPoints.web.forwardedHeaders.insecure=false"
    ]));
    assert!(!insecure(&[
        "--entryPoints.web.forwardedHeaders.insecure",
        "false"
    ]));
    assert!(!insecure(&[
        "--entryPoints.web.forwardedHeaders.insecure=0"
    ]));
    assert!(!insecure(&[]));

    let watch = |args: &[&str]| {
        let mut all = vec!["--providers.file.filename=d.toml"];
        all.extend_from_slice(args);
        run(&all, &[]).providers.file.unwrap().watch
    };
    assert!(watch(&[]));
    assert!(watch(&["--providers.file.watch"]));
    assert!(!watch(&["--providers.file.watch=false"]));
    // A bare bool flag followed by another option.
    assert!(watch(&[
        "--providers.file.watch=false",
        "--providers.file.watch",
        "--log.level=INFO"
    ]));
}

#[test]
fn section_flags() {
    // Enabling the section alone gives its defaults, which then fail
    // validation because neither a file nor a directory is named.
    assert!(matches!(
        fail(&["--providers.file"], &[]),
        StaticConfigError::FileProviderWithoutSource
    ));
    assert!(matches!(
        fail(&["--providers.file=true"], &[]),
        StaticConfigError::FileProviderWithoutSource
    ));
    let config = run(
        &[
            "--providers.file",
            "--providers.file.directory=/etc/gangway/dynamic",
        ],
        &[],
    );
    assert_eq!(
        config.providers.file,
        Some(FileProvider {
            filename: None,
            directory: Some(PathBuf::from("/etc/gangway/dynamic")),
            watch: true,
        })
    );
    // Enabling a section doesn't reset what is already in it.
    let config = run(
        &[
            "--providers.file.filename=a.toml",
            "--providers.file.watch=false",
            "--providers.file",
        ],
        &[],
    );
    let file = config.providers.file.unwrap();
    assert_eq!(file.filename, Some(PathBuf::from("a.toml")));
    assert!(!file.watch);
    // `false` removes a section set by the file.
    let dir = dir_with(&[("gangway.toml", "[providers.file]\nfilename = \"d.toml\"\n")]);
    let (config, _) = run_in(dir.path(), &["--providers.file=false"], &[]);
    assert_eq!(config.providers.file, None);
    let (config, _) = run_in(dir.path(), &[], &[("GANGWAY_PROVIDERS_FILE", "false")]);
    assert_eq!(config.providers.file, None);
    let config = run(
        &["--providers.file.filename=d.toml"],
        &[("GANGWAY_PROVIDERS_FILE", "")],
    );
    assert!(config.providers.file.is_some());
}

/// Traefik's `--entryPoints.websecure.http3` turns HTTP/3 on; the port
/// `Alt-Svc` names can be set apart from the one gangway listens on.
#[test]
fn http3_is_a_section_of_a_tcp_entry_point() {
    let config = run(
        &[
            "--entryPoints.websecure.address=:443",
            "--entryPoints.websecure.http3",
        ],
        &[],
    );
    assert_eq!(
        config.entry_points["websecure"].http3,
        Some(EntryPointHttp3 { advertised_port: 0 })
    );
    let dir = dir_with(&[(
        "gangway.toml",
        "[entryPoints.websecure]\naddress = \":8443\"\n[entryPoints.websecure.http3]\nadvertisedPort = 443\n",
    )]);
    let (config, _) = run_in(dir.path(), &[], &[]);
    assert_eq!(
        config.entry_points["websecure"].http3,
        Some(EntryPointHttp3 {
            advertised_port: 443
        })
    );
    let (config, _) = run_in(dir.path(), &["--entryPoints.websecure.http3=false"], &[]);
    assert_eq!(config.entry_points["websecure"].http3, None);
    let err = fail(
        &[
            "--entryPoints.dns.address=:53/udp",
            "--entryPoints.dns.http3",
        ],
        &[],
    );
    assert!(
        matches!(&err, StaticConfigError::Http3OnUdp { name } if name == "dns"),
        "{err}"
    );
    assert!(
        message(&err).starts_with("entryPoints.dns.http3: "),
        "{err}"
    );
}

#[test]
fn list_flags() {
    let config = run(
        &[
            "--entryPoints.web.address=:80",
            "--entryPoints.web.forwardedHeaders.trustedIPs=10.0.0.0/8, 127.0.0.1,,::1",
        ],
        &[],
    );
    let trusted: Vec<String> = config.entry_points["web"]
        .forwarded_headers
        .trusted_ips
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(trusted, ["10.0.0.0/8", "127.0.0.1/32", "::1/128"]);

    // A later source replaces the whole list; an empty value empties it.
    let dir = dir_with(&[(
        "gangway.yml",
        "entryPoints:\n  web:\n    address: ':80'\n    forwardedHeaders:\n      trustedIPs: ['1.2.3.4']\n",
    )]);
    let (config, _) = run_in(
        dir.path(),
        &["--entryPoints.web.forwardedHeaders.trustedIPs="],
        &[],
    );
    assert!(
        config.entry_points["web"]
            .forwarded_headers
            .trusted_ips
            .is_empty()
    );
    let (config, _) = run_in(
        dir.path(),
        &[],
        &[(
            "GANGWAY_ENTRYPOINTS_WEB_FORWARDEDHEADERS_TRUSTEDIPS",
            "10.1.0.0/16,10.2.0.0/16",
        )],
    );
    assert_eq!(
        config.entry_points["web"]
            .forwarded_headers
            .trusted_ips
            .len(),
        2
    );
}

#[test]
fn help_and_version() {
    for args in [
        &["--help"][..],
        &["-h"],
        &["--log.level=LOUD", "--HELP"],
        &["stray", "-h"],
    ] {
        match load(&strings(args), &[], empty_dir().path()) {
            Ok(Loaded::Help(text)) => assert_eq!(text, help_text()),
            other => panic!("{args:?}: {other:?}"),
        }
    }
    assert!(matches!(
        load(&strings(&["--version"]), &[], empty_dir().path()),
        Ok(Loaded::Version)
    ));
}

// ----------------------------------------------------------- environment

#[test]
fn environment_forms() {
    let config = run(
        &[],
        &[
            ("GANGWAY_ENTRYPOINTS_WEB_ADDRESS", ":8000"),
            ("GANGWAY_PROVIDERS_FILE_FILENAME", "dyn.toml"),
            ("GANGWAY_PROVIDERS_FILE_WATCH", "false"),
            ("GANGWAY_LOG_LEVEL", "debug"),
            ("GANGWAY_PROVIDERS_PROVIDERSTHROTTLEDURATION", "1"),
            ("GANGWAY_SERVERSTRANSPORT_MAXIDLECONNSPERHOST", "12"),
            ("GANGWAY_ENTRYPOINTS_WEB_FORWARDEDHEADERS_INSECURE", ""),
            ("OTHER_PREFIX_LOG_LEVEL", "nonsense"),
            ("gangway_log_level", "nonsense"),
        ],
    );
    let web = &config.entry_points["web"];
    assert_eq!(web.address, addr(":8000"));
    assert!(web.forwarded_headers.insecure);
    let file = config.providers.file.unwrap();
    assert_eq!(file.filename, Some(PathBuf::from("dyn.toml")));
    assert!(!file.watch);
    assert_eq!(config.log.level, LogLevel::Debug);
    assert_eq!(config.providers.providers_throttle_duration, secs(1));
    assert_eq!(config.servers_transport.max_idle_conns_per_host, 12);
}

#[test]
fn environment_names_with_underscores_are_lowercased() {
    let config = run(
        &[],
        &[
            ("GANGWAY_ENTRYPOINTS_MY_WEB_ADDRESS", ":8000"),
            (
                "GANGWAY_ENTRYPOINTS_MY_WEB_TRANSPORT_LIFECYCLE_GRACETIMEOUT",
                "1s",
            ),
            ("GANGWAY_ENTRYPOINTS_ADMIN_API_ADDRESS", ":9000"),
            // A name that ends like an option segment.
            ("GANGWAY_ENTRYPOINTS_PUBLIC_ADDRESS_ADDRESS", ":9001"),
        ],
    );
    assert_eq!(
        config.entry_points.keys().collect::<Vec<_>>(),
        ["admin_api", "my_web", "public_address"]
    );
    assert_eq!(config.entry_points["my_web"].address, addr(":8000"));
    assert_eq!(
        config.entry_points["my_web"]
            .transport
            .life_cycle
            .grace_time_out,
        secs(1)
    );
    assert_eq!(config.entry_points["admin_api"].address, addr(":9000"));
    assert_eq!(config.entry_points["public_address"].address, addr(":9001"));
}

#[test]
fn allowlisted_and_meta_variables_are_not_options() {
    // Every entry must carry the prefix.
    for var in ENV_ALLOWLIST {
        assert!(var.starts_with(ENV_PREFIX), "{var}");
        run(&[], &[(var, "anything")]);
    }
    assert_eq!(ENV_PREFIX, "GANGWAY_");
}

// ---------------------------------------------------------------- errors

fn message(err: &StaticConfigError) -> String {
    err.to_string()
}

#[test]
fn unknown_key_in_toml_names_the_line() {
    let dir = dir_with(&[(
        "gangway.toml",
        "[entryPoints.web]\n# the address\nadress = \":80\"\n",
    )]);
    let err = fail_in(dir.path(), &[], &[]);
    // The entry point is left without an address too: both are reported.
    let problems = err.problems();
    assert_eq!(problems.len(), 2, "{err}");
    assert!(matches!(
        problems[0],
        StaticConfigError::UnknownKey { line: Some(3), .. }
    ));
    assert!(matches!(
        problems[1],
        StaticConfigError::EntryPointWithoutAddress { .. }
    ));
    assert_eq!(
        message(problems[0]),
        "gangway.toml, line 3: `entryPoints.web.adress`: unknown option; did you mean `entryPoints.web.address`?"
    );
}

#[test]
fn unknown_key_in_yaml_names_the_line() {
    let dir = dir_with(&[(
        "gangway.yml",
        "entryPoints:\n  web:\n    address: ':80'\nlog:\n  levle: DEBUG\n",
    )]);
    let err = fail_in(dir.path(), &[], &[]);
    let shown = message(&err);
    assert!(shown.starts_with("gangway.yml, line 5: "), "{shown}");
    assert!(
        shown.contains("`log.levle`: unknown option; did you mean `log.level`?"),
        "{shown}"
    );
}

#[test]
fn bad_values_in_files_name_the_line() {
    let cases = [
        (
            "gangway.toml",
            "[log]\nlevel = \"LOUD\"\n",
            2,
            "`LOUD` is not a log level",
        ),
        (
            "gangway.toml",
            "[entryPoints.web]\naddress = \":80\"\n[entryPoints.web.transport.lifeCycle]\ngraceTimeOut = \"10x\"\n",
            4,
            "unknown unit `x`",
        ),
        (
            "gangway.yml",
            "entryPoints:\n  web:\n    address: 'localhost:80'\n",
            3,
            "`localhost` is not an IP address",
        ),
        (
            "gangway.yml",
            "entryPoints:\n  web:\n    address: ':80'\n    forwardedHeaders:\n      trustedIPs: [10.0.0.0/33]\n",
            5,
            "`10.0.0.0/33` is not an IP address or CIDR range",
        ),
        (
            "gangway.toml",
            "[serversTransport]\nmaxIdleConnsPerHost = -1\n",
            2,
            "`-1` is not a whole number",
        ),
        (
            "gangway.yml",
            "providers:\n  file:\n    watch: maybe\n",
            3,
            "`maybe` is not a boolean",
        ),
    ];
    for (name, text, line, part) in cases {
        let dir = dir_with(&[(name, text)]);
        let err = fail_in(dir.path(), &[], &[]);
        let shown = message(&err);
        assert!(
            shown.starts_with(&format!("{name}, line {line}: ")),
            "{text}\n=> {shown}"
        );
        assert!(shown.contains(part), "{text}\n=> {shown}");
    }
}

#[test]
fn entry_point_without_address_is_named() {
    let dir = dir_with(&[(
        "gangway.toml",
        "[entryPoints.web]\naddress = \":80\"\n[entryPoints.admin.forwardedHeaders]\ninsecure = true\n",
    )]);
    let err = fail_in(dir.path(), &[], &[]);
    assert!(
        matches!(&err, StaticConfigError::EntryPointWithoutAddress { name } if name == "admin"),
        "{err}"
    );
    assert_eq!(
        message(&err),
        "entry point `admin` has no address (set `entryPoints.admin.address`, e.g. to `:80`)"
    );
    // A later source can supply it.
    let (config, _) = run_in(dir.path(), &["--entryPoints.admin.address=:9000"], &[]);
    assert!(config.entry_points["admin"].forwarded_headers.insecure);
    // Flags alone can leave it out too.
    assert!(matches!(
        fail(&["--entryPoints.x.forwardedHeaders.insecure"], &[]),
        StaticConfigError::EntryPointWithoutAddress { name } if name == "x"
    ));
}

#[test]
fn file_provider_needs_exactly_one_source() {
    // Both given: the directory is read, as Traefik reads it, and the file
    // name is reported as ignored.
    let config = run(
        &[
            "--providers.file.filename=a.toml",
            "--providers.file.directory=d",
        ],
        &[],
    );
    let file = config.providers.file.as_ref().expect("file provider");
    assert_eq!(file.directory.as_deref(), Some(std::path::Path::new("d")));
    assert_eq!(file.filename, None);
    let ignored = config
        .accepted
        .iter()
        .find(|a| a.option == "providers.file.filename")
        .expect("the file name is reported");
    assert_eq!(ignored.state, OptionState::Unsupported);
    let dir = dir_with(&[("gangway.yml", "providers:\n  file:\n    watch: true\n")]);
    assert!(matches!(
        fail_in(dir.path(), &[], &[]),
        StaticConfigError::FileProviderWithoutSource
    ));
    assert!(FileProvider::default().validate().is_err());
}

#[test]
fn unknown_flag_suggests_the_closest() {
    let err = fail(&["--entryPoints.web.adress=:80"], &[]);
    assert_eq!(
        message(&err),
        "--entryPoints.web.adress: unknown option; did you mean `--entryPoints.web.address`?"
    );
    let err = fail(&["--log.levl", "DEBUG"], &[]);
    assert_eq!(
        message(&err),
        "--log.levl: unknown option; did you mean `--log.level`?"
    );
    // A missing segment is found by the last one.
    let err = fail(&["--entryPoints.web.transport.readTimeout=5s"], &[]);
    assert_eq!(
        message(&err),
        "--entryPoints.web.transport.readTimeout: unknown option; did you mean `--entryPoints.web.transport.respondingTimeouts.readTimeout`?"
    );
    let err = fail(&["--nosuch.thing=true"], &[]);
    assert!(
        matches!(
            &err,
            StaticConfigError::UnknownFlag {
                suggestion: None,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        message(&err),
        "--nosuch.thing: unknown option (see --help for the list)"
    );
    for weird in [
        "--",
        "--=x",
        "--.",
        "--entryPoints..address=:80",
        "--log.level.x=1",
    ] {
        assert!(
            matches!(fail(&[weird], &[]), StaticConfigError::UnknownFlag { .. }),
            "{weird}"
        );
    }
}

#[test]
fn unknown_env_is_named() {
    let err = fail(&[], &[("GANGWAY_LOG_LEVLE", "DEBUG")]);
    assert_eq!(
        message(&err),
        "GANGWAY_LOG_LEVLE: unknown environment variable; did you mean `GANGWAY_LOG_LEVEL`?"
    );
    let err = fail(&[], &[("GANGWAY_ENTRYPOINTS_MY_WEB_ADRESS", ":80")]);
    assert_eq!(
        message(&err),
        "GANGWAY_ENTRYPOINTS_MY_WEB_ADRESS: unknown environment variable; did you mean `GANGWAY_ENTRYPOINTS_MY_WEB_ADDRESS`?"
    );
    let err = fail(&[], &[("GANGWAY_TOKEN", "x")]);
    assert!(
        matches!(&err, StaticConfigError::UnknownEnv { var, suggestion: None } if var == "GANGWAY_TOKEN"),
        "{err}"
    );
    let err = fail(&[], &[("GANGWAY_", "x")]);
    assert!(matches!(err, StaticConfigError::UnknownEnv { .. }));
    let long = format!("GANGWAY_{}", "A_".repeat(500));
    assert!(matches!(
        fail(&[], &[(&long, "x")]),
        StaticConfigError::UnknownEnv { .. }
    ));
}

#[test]
fn traefik_variables_outside_its_sections_are_not_configuration() {
    // Traefik reads TRAEFIK_ variables that begin with a section's name
    // only; compose files pass others for their labels.
    let config = run(
        &[],
        &[
            ("TRAEFIK_DASHBOARD_CREDENTIALS", "admin:x"),
            ("TRAEFIK_DOMAIN", "example.com"),
            ("TRAEFIK_LOG_LEVEL", "DEBUG"),
        ],
    );
    assert_eq!(config.log.level, LogLevel::Debug);
    let noted: Vec<&str> = config
        .accepted
        .iter()
        .filter(|a| a.state == OptionState::Inert)
        .map(|a| a.option.as_str())
        .collect();
    assert_eq!(noted, ["TRAEFIK_DASHBOARD_CREDENTIALS", "TRAEFIK_DOMAIN"]);
    // Under a section, a wrong name stays an error, as in Traefik.
    let err = fail(&[], &[("TRAEFIK_LOG_LEVLE", "DEBUG")]);
    assert!(
        matches!(&err, StaticConfigError::UnknownEnv { var, .. } if var == "TRAEFIK_LOG_LEVLE"),
        "{err}"
    );
    // gangway's own prefix keeps every unknown name an error.
    assert!(matches!(
        fail(&[], &[("GANGWAY_DOMAIN", "example.com")]),
        StaticConfigError::UnknownEnv { .. }
    ));
}

#[test]
fn a_bad_value_in_the_file_is_not_blamed_on_later_flags() {
    let dir = dir_with(&[(
        "gangway.yml",
        "entryPoints:\n  web:\n    address: ':80'\n    forwardedHeaders:\n      trustedIPs: ['<subnet>']\n",
    )]);
    let err = fail_in(
        dir.path(),
        &[
            "--providers.docker.labelPrefix=traefik",
            "--log.level=DEBUG",
        ],
        &[],
    );
    let text = message(&err);
    assert!(text.contains("trustedIPs"), "{text}");
    assert!(!text.contains("--providers.docker.labelPrefix"), "{text}");
    assert!(!text.contains("--log.level"), "{text}");
    // A flag's own bad value is still named beside the file's.
    let err = fail_in(dir.path(), &["--log.maxSize=lots"], &[]);
    let text = message(&err);
    assert!(text.contains("trustedIPs"), "{text}");
    assert!(text.contains("--log.maxSize"), "{text}");
}

#[test]
fn the_api_base_path_is_kept_as_a_prefix() {
    for (given, prefix) in [
        ("/", ""),
        ("/traefik", "/traefik"),
        ("/traefik/", "/traefik"),
        ("traefik", "/traefik"),
        ("/a/b-c_d.e~/", "/a/b-c_d.e~"),
    ] {
        let config = run(&["--api", &format!("--api.basePath={given}")], &[]);
        let api = config.api.expect("api on");
        assert_eq!(api.base_path.prefix(), prefix, "{given}");
    }
    // It becomes part of a router rule: nothing that could end the quote.
    for bad in ["/a`) || Path(`/x", "/a b", "/a?b"] {
        let err = fail(&["--api", &format!("--api.basePath={bad}")], &[]);
        assert!(message(&err).contains("is not a base path"), "{bad}: {err}");
    }
}

#[test]
fn config_file_typos_are_suggested() {
    let err = fail(&["--configfle=x.toml"], &[]);
    assert_eq!(
        message(&err),
        "--configfle: unknown option; did you mean `--configFile`?"
    );
    let err = fail(&[], &[("GANGWAY_CONFIG_FILE", "x.toml")]);
    assert_eq!(
        message(&err),
        "GANGWAY_CONFIG_FILE: unknown environment variable; did you mean `GANGWAY_CONFIGFILE`?"
    );
}

#[test]
fn odd_input_is_an_error_not_a_panic() {
    let flags = [
        "--é.ü=ß",
        "--entryPoints.µ.address=[",
        "--entryPoints.w.address=]:80",
        "--entryPoints.w.address=:80/",
        "--entryPoints.w.address=/tcp",
        "--entryPoints.w.address=[]:80",
        "--log.level=\u{0}",
        "--providers.providersThrottleDuration=1µ",
        "--providers.providersThrottleDuration=µs",
        "--providers.providersThrottleDuration=1.5.5s",
        "--serversTransport.maxIdleConnsPerHost=1e3",
        "--entryPoints.w.forwardedHeaders.trustedIPs=,,,",
        "-",
        "---",
        "--=",
    ];
    for flag in flags {
        let _ = load(&strings(&[flag]), &[], empty_dir().path());
    }
    let long = format!("--{}", "a.".repeat(10_000));
    assert!(load(&strings(&[&long]), &[], empty_dir().path()).is_err());
    let long = format!("--entryPoints.{}.address=:80", "x".repeat(10_000));
    assert!(load(&strings(&[&long]), &[], empty_dir().path()).is_ok());
    for var in [
        "GANGWAY__",
        "GANGWAY_ÉNTRYPOINTS_W_ADDRESS",
        "GANGWAY_ENTRYPOINTS__ADDRESS",
    ] {
        assert!(
            load(&[], &vars(&[(var, ":80")]), empty_dir().path()).is_err(),
            "{var}"
        );
    }
}

#[test]
fn bad_flag_values_name_the_flag() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["--log.level=LOUD"],
            "--log.level=LOUD: `LOUD` is not a log level (TRACE, DEBUG, INFO, WARN, ERROR)",
        ),
        (
            &["--entryPoints.web.address=80"],
            "--entryPoints.web.address=80: `80` is not a listen address (try `:80` or `127.0.0.1:8080`)",
        ),
        (
            &["--entryPoints.web.address", ":53/sctp"],
            "--entryPoints.web.address=:53/sctp: `:53/sctp`: an entry point is TCP (no suffix, or `/tcp`) or UDP (`/udp`), not `/sctp`",
        ),
        (
            &["--providers.providersThrottleDuration=abc"],
            "--providers.providersThrottleDuration=abc: `abc` is not a duration (try `10s` or `250ms`)",
        ),
        (
            &["--serversTransport.forwardingTimeouts.dialTimeout=-5s"],
            "--serversTransport.forwardingTimeouts.dialTimeout=-5s: `-5s` is negative; a duration must be zero or more",
        ),
        (
            &[
                "--entryPoints.web.address=:80",
                "--entryPoints.web.forwardedHeaders.trustedIPs=10.0.0.0/8,nope",
            ],
            "--entryPoints.web.forwardedHeaders.trustedIPs=10.0.0.0/8,nope: `nope` is not an IP address or CIDR range (try `10.0.0.0/8` or `192.168.1.7`)",
        ),
        (
            &["--entryPoints.web.forwardedHeaders.insecure=yes please"],
            "--entryPoints.web.forwardedHeaders.insecure=yes please: `yes please` is not a boolean (true or false)",
        ),
        (
            &["--providers.file=maybe"],
            "--providers.file=maybe: `maybe` is not a boolean (true or false)",
        ),
        (
            &["--serversTransport.maxIdleConnsPerHost=-1"],
            "--serversTransport.maxIdleConnsPerHost=-1: `-1` is not a whole number (0 or more)",
        ),
    ];
    for (args, expected) in cases {
        assert_eq!(message(&fail(args, &[])), *expected, "{args:?}");
    }
}

#[test]
fn bad_env_values_name_the_variable() {
    let err = fail(&[], &[("GANGWAY_LOG_LEVEL", "loud")]);
    assert_eq!(
        message(&err),
        "GANGWAY_LOG_LEVEL=loud: `loud` is not a log level (TRACE, DEBUG, INFO, WARN, ERROR)"
    );
    let err = fail(&[], &[("GANGWAY_ENTRYPOINTS_WEB_ADDRESS", "web:80")]);
    assert!(
        matches!(&err, StaticConfigError::BadEnvValue { var, .. } if var == "GANGWAY_ENTRYPOINTS_WEB_ADDRESS"),
        "{err}"
    );
    let err = fail(&[], &[("GANGWAY_PROVIDERS_FILE_WATCH", "sometimes")]);
    assert!(
        matches!(err, StaticConfigError::BadEnvValue { .. }),
        "{err}"
    );
}

#[test]
fn missing_values_and_stray_arguments() {
    let err = fail(&["--entryPoints.web.address"], &[]);
    assert_eq!(
        message(&err),
        "--entryPoints.web.address: missing value (expected an address such as `:80` or `127.0.0.1:8080`)"
    );
    let err = fail(&["--log.level", "--entryPoints.web.address=:80"], &[]);
    assert!(
        matches!(err, StaticConfigError::MissingFlagValue { .. }),
        "{err}"
    );
    let err = fail(&["--log.level="], &[]);
    assert!(
        matches!(err, StaticConfigError::MissingFlagValue { .. }),
        "{err}"
    );
    let err = fail(&["--configFile"], &[]);
    assert!(
        matches!(err, StaticConfigError::MissingFlagValue { .. }),
        "{err}"
    );
    let err = fail(&["web"], &[]);
    assert_eq!(
        message(&err),
        "unexpected argument `web`: options are written `--name=value` (see --help)"
    );
    let err = fail(&["--providers.file.watch", "maybe"], &[]);
    assert!(
        matches!(&err, StaticConfigError::UnexpectedArgument { arg } if arg == "maybe"),
        "{err}"
    );
    assert!(matches!(
        fail(&["-v"], &[]),
        StaticConfigError::UnexpectedArgument { .. }
    ));
}

#[test]
fn missing_or_odd_config_file() {
    let err = fail(&["--configFile=nope.toml"], &[]);
    assert!(
        matches!(&err, StaticConfigError::ConfigFileMissing { path } if path.ends_with("nope.toml"))
    );
    assert!(message(&err).contains("nope.toml` does not exist"), "{err}");
    let err = fail(&[], &[("GANGWAY_CONFIGFILE", "nope.yml")]);
    assert!(matches!(err, StaticConfigError::ConfigFileMissing { .. }));
    let dir = dir_with(&[("gangway.json", "{}"), ("gangway.yml", "[1, 2]\n")]);
    let err = fail_in(dir.path(), &["--configFile=gangway.json"], &[]);
    assert!(
        matches!(err, StaticConfigError::ConfigFileFormat { .. }),
        "{err}"
    );
    // A directory is not a file.
    let err = fail_in(dir.path(), &["--configFile=."], &[]);
    assert!(
        !matches!(err, StaticConfigError::ConfigFileMissing { .. }),
        "{err}"
    );
    // A top level that isn't a table.
    let err = fail_in(dir.path(), &[], &[]);
    assert!(message(&err).starts_with("gangway.yml"), "{err}");
}

// ------------------------------------------------------ table and structs

/// A configuration where every optional part is present, so serializing
/// it shows every field.
fn full_config() -> StaticConfig {
    let mut config = StaticConfig::default();
    config.log.file_path = Some("gangway.log".into());
    let plugin = PluginDecl {
        module_name: "sample".into(),
    };
    config
        .experimental
        .plugins
        .insert("web".into(), plugin.clone());
    config
        .experimental
        .local_plugins
        .insert("web".into(), plugin);
    let mut entry_point = EntryPoint::default();
    entry_point.forwarded_headers.trusted_ips = vec!["10.0.0.0/8".parse().unwrap()];
    entry_point.proxy_protocol = Some(ProxyProtocol {
        trusted_ips: vec!["10.0.0.0/8".parse().unwrap()],
        insecure: false,
    });
    entry_point.http.max_header_bytes = Some(1 << 20);
    entry_point.http3 = Some(EntryPointHttp3 {
        advertised_port: 443,
    });
    entry_point.http.tls = Some(EntryPointTls {
        cert_resolver: Some(String::from("le")),
        options: Some(String::from("modern")),
        domains: vec![TlsDomain {
            main: String::from("example.com"),
            sans: vec![String::from("www.example.com")],
        }],
    });
    let mut redirections = Redirections::default();
    redirections.entry_point.to = Some(String::from("websecure"));
    redirections.entry_point.priority = Some(10);
    entry_point.http.redirections = Some(redirections);
    entry_point.http.middlewares = vec![String::from("auth@file")];
    config.entry_points.insert(String::from("web"), entry_point);
    let names = |value: &str| BTreeMap::from([(String::from("web"), String::from(value))]);
    let collector_tls = || {
        Some(otlp::OtlpTls {
            ca: Some(String::from("ca.pem")),
            cert: Some(String::from("cert.pem")),
            key: Some(String::from("key.pem")),
            insecure_skip_verify: true,
        })
    };
    config.tracing = Some(Tracing {
        resource_attributes: names("team"),
        captured_request_headers: vec![String::from("X-Request")],
        captured_response_headers: vec![String::from("X-Response")],
        safe_query_params: vec![String::from("page")],
        otlp: Some(Otlp {
            grpc: Some(otlp::OtlpGrpc {
                headers: names("key"),
                tls: collector_tls(),
                ..otlp::OtlpGrpc::default()
            }),
            http: Some(otlp::OtlpHttp {
                headers: names("key"),
                tls: collector_tls(),
                ..otlp::OtlpHttp::default()
            }),
        }),
        ..Tracing::default()
    });
    let grpc = || {
        Some(otlp::OtlpGrpc {
            headers: names("key"),
            tls: collector_tls(),
            ..otlp::OtlpGrpc::default()
        })
    };
    let http = || {
        Some(otlp::OtlpHttp {
            headers: names("key"),
            tls: collector_tls(),
            ..otlp::OtlpHttp::default()
        })
    };
    let logs = || {
        Some(otlp::OtlpLogs {
            resource_attributes: names("team"),
            grpc: grpc(),
            http: http(),
            ..otlp::OtlpLogs::default()
        })
    };
    config.metrics.otlp = Some(MetricsOtlp {
        resource_attributes: names("team"),
        grpc: grpc(),
        http: http(),
        ..MetricsOtlp::default()
    });
    config.metrics.statsd = Some(MetricsStatsd::default());
    config.metrics.datadog = Some(MetricsStatsd::default());
    config.metrics.influxdb2 = Some(MetricsInfluxDb2 {
        token: String::from("t"),
        org: String::from("o"),
        bucket: String::from("b"),
        additional_labels: names("edge"),
        ..MetricsInfluxDb2::default()
    });
    config.log.otlp = logs();
    config.providers.file = Some(FileProvider {
        filename: Some(PathBuf::from("f.toml")),
        directory: Some(PathBuf::from("d")),
        watch: true,
    });
    config.providers.docker = Some(DockerProvider {
        tls: Some(ProviderTls {
            ca: Some(String::from("ca.pem")),
            cert: Some(String::from("cert.pem")),
            key: Some(String::from("key.pem")),
            insecure_skip_verify: true,
        }),
        network: Some(String::from("n")),
        constraints: Some(String::from("Label(`a`,`b`)")),
        domain: Some(String::from("example.com")),
        exposed_by_default: Some(false),
        ..DockerProvider::default()
    });
    config.providers.swarm = Some(SwarmProvider {
        tls: Some(ProviderTls {
            ca: Some(String::from("ca.pem")),
            cert: Some(String::from("cert.pem")),
            key: Some(String::from("key.pem")),
            insecure_skip_verify: true,
        }),
        network: Some(String::from("n")),
        constraints: Some(String::from("Label(`a`,`b`)")),
        exposed_by_default: Some(false),
        ..SwarmProvider::default()
    });
    config.providers.redis = Some(RedisProvider {
        endpoints: vec![
            String::from("127.0.0.1:6379"),
            String::from("10.0.0.2:6379"),
        ],
        root_key: String::from("traefik"),
        username: Some(String::from("u")),
        password: Some(String::from("p")),
        db: 2,
        tls: Some(ProviderTls {
            ca: Some(String::from("ca.pem")),
            cert: Some(String::from("cert.pem")),
            key: Some(String::from("key.pem")),
            insecure_skip_verify: true,
        }),
        sentinel: RedisSentinel {
            master_name: Some(String::from("m")),
            username: Some(String::from("su")),
            password: Some(String::from("sp")),
            latency_strategy: true,
            random_strategy: true,
            replica_strategy: true,
            use_disconnected_replicas: true,
        },
        poll_interval: Duration::from_secs(3),
    });
    config.providers.etcd = Some(EtcdProvider {
        endpoints: vec![
            String::from("127.0.0.1:2379"),
            String::from("https://10.0.0.2:2379"),
        ],
        root_key: String::from("traefik"),
        username: Some(String::from("u")),
        password: Some(String::from("p")),
        tls: Some(ProviderTls {
            ca: Some(String::from("ca.pem")),
            cert: Some(String::from("cert.pem")),
            key: Some(String::from("key.pem")),
            insecure_skip_verify: true,
        }),
    });
    config.providers.http = Some(HttpProvider {
        endpoint: String::from("https://config.example/dynamic"),
        poll_interval: Duration::from_secs(7),
        poll_timeout: Duration::from_secs(3),
        headers: [(String::from("Authorization"), String::from("Bearer t"))].into(),
        tls: Some(ProviderTls {
            ca: Some(String::from("ca.pem")),
            cert: Some(String::from("cert.pem")),
            key: Some(String::from("key.pem")),
            insecure_skip_verify: true,
        }),
        max_response_body_size: String::from("1048576"),
    });
    config.api = Some(Api::default());
    config.ping = Some(Ping::default());
    config.metrics.prometheus = Some(Prometheus {
        header_labels: [("web".to_owned(), "User-Agent".to_owned())].into(),
        ..Prometheus::default()
    });
    let mut access_log = AccessLog {
        file_path: Some(PathBuf::from("access.log")),
        otlp: logs(),
        ..AccessLog::default()
    };
    access_log.filters.status_codes = vec![String::from("500-599")];
    access_log
        .fields
        .names
        .insert(String::from("web"), observability::FieldMode::Drop);
    access_log
        .fields
        .headers
        .names
        .insert(String::from("web"), observability::FieldMode::Keep);
    config.access_log = Some(access_log);
    config.certificates_resolvers.insert(
        String::from("le"),
        CertificatesResolver {
            acme: Acme {
                ca_certificates: vec![PathBuf::from("ca.pem")],
                tls_challenge: Some(TlsChallenge {
                    delay: Duration(std::time::Duration::from_secs(1)),
                }),
                http_challenge: Some(HttpChallenge {
                    entry_point: String::from("web"),
                    delay: Duration(std::time::Duration::from_secs(1)),
                }),
                dns_challenge: Some(DnsChallenge {
                    provider: String::from("rfc2136"),
                    resolvers: vec![String::from("192.0.2.53:53")],
                    propagation: Propagation {
                        delay_before_checks: Duration(std::time::Duration::from_secs(5)),
                        disable_checks: true,
                        require_all_rns: true,
                        disable_ans_checks: true,
                    },
                    delay_before_check: Duration(std::time::Duration::from_secs(5)),
                    disable_propagation_check: true,
                }),
                storage_encryption_key_file: Some(PathBuf::from("seal.key")),
                ca_system_cert_pool: true,
                disable_common_name: true,
                ca_server_name: String::from("ca.test"),
                preferred_chain: String::from("ISRG Root X1"),
                profile: String::from("shortlived"),
                email_addresses: vec![String::from("a@b.test")],
                fallback: vec![String::from("zerossl")],
                eab: Some(Eab {
                    kid: String::from("kid"),
                    hmac_encoded: String::from("aG1hYw"),
                }),
                client_timeout: Duration(std::time::Duration::from_secs(5)),
                client_response_header_timeout: Duration(std::time::Duration::from_secs(5)),
                ..Acme::default()
            },
        },
    );
    config
}

/// Every leaf key path of a JSON tree; arrays count as leaves.
fn leaf_paths(value: &Value, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (key, child) in map {
                prefix.push(key.clone());
                leaf_paths(child, prefix, out);
                prefix.pop();
            }
        }
        Value::Array(items) if items.iter().all(Value::is_object) && !items.is_empty() => {
            for (n, child) in items.iter().enumerate() {
                prefix.push(n.to_string());
                leaf_paths(child, prefix, out);
                prefix.pop();
            }
        }
        _ => out.push(prefix.clone()),
    }
}

/// A value for a row that differs from its default, or the default itself
/// for free-text rows that have one (only the row knows what else is valid).
fn sample(spec: &OptionSpec) -> &'static str {
    // Rows whose values are numbers or a fixed set of words.
    if spec.path.ends_with(".buckets") || spec.path.ends_with(".explicitBoundaries") {
        return "0.5,2";
    }
    if spec.path == "tracing.sampleRate" {
        return "0.5";
    }
    if spec.path.starts_with("accessLog.fields") && spec.default.is_empty() {
        return "redact";
    }
    match spec.kind {
        ValueKind::String if !spec.default.is_empty() => spec.default,
        ValueKind::String => "sample",
        ValueKind::Bool | ValueKind::Section if spec.default == "true" => "false",
        ValueKind::Bool | ValueKind::Section => "true",
        ValueKind::Int => "3",
        ValueKind::Duration => "7s",
        ValueKind::SignedDuration => "-7s",
        ValueKind::List => "10.0.0.0/8,::1",
        ValueKind::Address => ":8080",
    }
}

/// The serialized value at a row's path, with `web` for names.
fn value_at<'a>(tree: &'a Value, spec: &OptionSpec) -> Option<&'a Value> {
    spec.segments()
        .try_fold(tree, |node, segment| match segment {
            NAME => node.get("web"),
            "[n]" => node.get(0),
            _ => node.get(segment),
        })
}

/// Checks that loading with `spec` set to `sample(spec)` put that value in
/// the right field.
fn check_row_landed(spec: &OptionSpec, loaded: Result<Loaded, StaticConfigError>, via: &str) {
    let config = match loaded {
        Ok(Loaded::Run(config, _)) => config,
        other => panic!("{via}: {other:?}"),
    };
    let tree = serde_json::to_value(&config).unwrap();
    let got = value_at(&tree, spec);
    let text = sample(spec);
    let landed = match (spec.kind, got) {
        (ValueKind::Section, got) => got.is_some_and(Value::is_object),
        (ValueKind::Bool, Some(Value::Bool(b))) => b.to_string() == text,
        (ValueKind::Int, Some(Value::Number(n))) => n.to_string() == text,
        (ValueKind::Duration, Some(Value::String(d))) => {
            d.parse::<Duration>().ok() == text.parse::<Duration>().ok()
        }
        (ValueKind::SignedDuration, Some(Value::String(d))) => {
            let parse = |t: &str| t.parse::<crate::config::SignedDuration>().ok();
            parse(d) == parse(text)
        }
        (ValueKind::List, Some(Value::Array(items))) => items.len() == 2,
        (ValueKind::Address | ValueKind::String, Some(Value::String(s))) => s == text,
        // A ratio, written as text in flags.
        (ValueKind::String, Some(Value::Number(n))) => n.as_f64() == text.parse().ok(),
        _ => false,
    };
    assert!(landed, "{via}: {} is {got:?}", spec.path);
}

#[test]
fn every_struct_field_has_a_row() {
    let tree = serde_json::to_value(full_config()).unwrap();
    let mut leaves = Vec::new();
    leaf_paths(&tree, &mut Vec::new(), &mut leaves);
    let non_sections = OPTIONS
        .iter()
        .filter(|o| o.kind != ValueKind::Section)
        .count();
    assert!(leaves.len() >= non_sections, "{leaves:?}");
    for leaf in &leaves {
        let tokens: Vec<&str> = leaf.iter().map(String::as_str).collect();
        match lookup(&tokens, Style::Flag) {
            Ok(found) => assert_eq!(&found.path, leaf),
            Err(_) => panic!("no row in OPTIONS for `{}`", leaf.join(".")),
        }
    }
    // Sections have a row of their own.
    assert!(lookup(&["providers", "file"], Style::Flag).is_ok());
}

#[test]
fn every_row_sets_its_field() {
    for spec in OPTIONS {
        let flag = format!(
            "--{}={}",
            spec.path.replace(NAME, "web").replace("[n]", "[0]"),
            sample(spec)
        );
        let mut rest = Vec::new();
        if !spec.path.ends_with(".address") {
            rest.push("--entryPoints.web.address=:80");
        }
        // The file provider is only valid with a file to read.
        let file_row = spec.path.starts_with("providers.file");
        if file_row && !spec.path.ends_with(".filename") && !spec.path.ends_with(".directory") {
            rest.push("--providers.file.filename=f.toml");
        }
        let mut args = vec![flag.as_str()];
        args.extend_from_slice(&rest);
        check_row_landed(spec, load(&strings(&args), &[], empty_dir().path()), &flag);
        // The same through the environment.
        let var = format!(
            "{ENV_PREFIX}{}",
            spec.path
                .replace(NAME, "web")
                .replace("[n]", ".0")
                .replace('.', "_")
                .to_uppercase()
        );
        let env = vars(&[(var.as_str(), sample(spec))]);
        check_row_landed(spec, load(&strings(&rest), &env, empty_dir().path()), &var);
    }
}

#[test]
fn row_defaults_match_struct_defaults() {
    let mut entry_point = EntryPoint::default();
    entry_point.http.redirections = Some(Redirections::default());
    entry_point.proxy_protocol = Some(ProxyProtocol::default());
    entry_point.http3 = Some(EntryPointHttp3::default());
    let defaults = serde_json::to_value(StaticConfig {
        entry_points: [(String::from("web"), entry_point)].into(),
        certificates_resolvers: [(
            String::from("web"),
            CertificatesResolver {
                acme: Acme {
                    dns_challenge: Some(DnsChallenge::default()),
                    http_challenge: Some(HttpChallenge::default()),
                    tls_challenge: Some(TlsChallenge::default()),
                    ..Acme::default()
                },
            },
        )]
        .into(),
        providers: Providers {
            file: Some(FileProvider::default()),
            docker: Some(DockerProvider {
                tls: Some(ProviderTls::default()),
                ..DockerProvider::default()
            }),
            swarm: Some(SwarmProvider {
                tls: Some(ProviderTls::default()),
                ..SwarmProvider::default()
            }),
            redis: Some(RedisProvider {
                tls: Some(ProviderTls::default()),
                ..RedisProvider::default()
            }),
            etcd: Some(EtcdProvider {
                tls: Some(ProviderTls::default()),
                ..EtcdProvider::default()
            }),
            http: Some(HttpProvider {
                tls: Some(ProviderTls::default()),
                ..HttpProvider::default()
            }),
            ..Providers::default()
        },
        api: Some(Api::default()),
        ping: Some(Ping::default()),
        metrics: Metrics {
            prometheus: Some(Prometheus::default()),
            otlp: Some(MetricsOtlp {
                grpc: Some(otlp::OtlpGrpc {
                    tls: Some(otlp::OtlpTls::default()),
                    ..otlp::OtlpGrpc::default()
                }),
                http: Some(otlp::OtlpHttp {
                    tls: Some(otlp::OtlpTls::default()),
                    ..otlp::OtlpHttp::default()
                }),
                ..MetricsOtlp::default()
            }),
            statsd: Some(MetricsStatsd::default()),
            datadog: Some(MetricsStatsd::default()),
            influxdb2: Some(MetricsInfluxDb2::default()),
            add_internals: false,
        },
        log: Log {
            otlp: Some(otlp::OtlpLogs {
                grpc: Some(otlp::OtlpGrpc {
                    tls: Some(otlp::OtlpTls::default()),
                    ..otlp::OtlpGrpc::default()
                }),
                http: Some(otlp::OtlpHttp {
                    tls: Some(otlp::OtlpTls::default()),
                    ..otlp::OtlpHttp::default()
                }),
                ..otlp::OtlpLogs::default()
            }),
            ..Log::default()
        },
        access_log: Some(AccessLog {
            otlp: Some(otlp::OtlpLogs {
                grpc: Some(otlp::OtlpGrpc {
                    tls: Some(otlp::OtlpTls::default()),
                    ..otlp::OtlpGrpc::default()
                }),
                http: Some(otlp::OtlpHttp {
                    tls: Some(otlp::OtlpTls::default()),
                    ..otlp::OtlpHttp::default()
                }),
                ..otlp::OtlpLogs::default()
            }),
            ..AccessLog::default()
        }),
        tracing: Some(Tracing {
            otlp: Some(Otlp {
                grpc: Some(otlp::OtlpGrpc {
                    tls: Some(otlp::OtlpTls::default()),
                    ..otlp::OtlpGrpc::default()
                }),
                http: Some(otlp::OtlpHttp {
                    tls: Some(otlp::OtlpTls::default()),
                    ..otlp::OtlpHttp::default()
                }),
            }),
            ..Tracing::default()
        }),
        ..StaticConfig::default()
    })
    .unwrap();
    for spec in OPTIONS {
        let mut node = Some(&defaults);
        for segment in spec.segments() {
            let key = if segment == NAME { "web" } else { segment };
            node = node.and_then(|n| n.get(key));
        }
        let shown = match (spec.kind, node) {
            (ValueKind::Section, _) => {
                // Sections are absent by default.
                let plain = serde_json::to_value(StaticConfig::default()).unwrap();
                let mut at = Some(&plain);
                for segment in spec.segments() {
                    at = at.and_then(|n| n.get(segment));
                }
                assert!(at.is_none(), "{} should be off by default", spec.path);
                String::from("false")
            }
            (_, None | Some(Value::Null)) => String::new(),
            (_, Some(Value::String(s))) => s.clone(),
            (_, Some(Value::Array(items))) => items
                .iter()
                .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                .collect::<Vec<_>>()
                .join(","),
            (_, Some(other)) => other.to_string(),
        };
        if spec.path == "entryPoints.<name>.address" {
            // Required; the struct's fallback is not an advertised default.
            assert_eq!(spec.default, "", "{}", spec.path);
            continue;
        }
        if spec.kind == ValueKind::SignedDuration {
            let parse = |text: &str| text.parse::<crate::config::SignedDuration>().unwrap();
            assert_eq!(
                parse(&shown),
                parse(spec.default),
                "default of {}",
                spec.path
            );
        } else if spec.kind == ValueKind::Duration {
            let parse = |text: &str| text.parse::<Duration>().unwrap();
            assert_eq!(
                parse(&shown),
                parse(spec.default),
                "default of {}",
                spec.path
            );
        } else {
            assert_eq!(shown, spec.default, "default of {}", spec.path);
        }
    }
}

#[test]
fn rows_are_well_formed() {
    let mut seen = std::collections::HashSet::new();
    for spec in OPTIONS {
        assert!(
            seen.insert(spec.path.to_ascii_lowercase()),
            "duplicate {}",
            spec.path
        );
        assert!(!spec.description.is_empty(), "{}", spec.path);
        for segment in spec.segments() {
            assert!(
                !segment.is_empty() && !segment.contains('_'),
                "{}",
                spec.path
            );
        }
    }
    // Groups are contiguous, so --help shows each once.
    let firsts: Vec<&str> = OPTIONS.iter().filter_map(|s| s.segments().next()).collect();
    let mut groups = firsts.clone();
    groups.dedup();
    let mut unique = groups.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(groups.len(), unique.len(), "{firsts:?}");
}

#[test]
fn help_lists_every_option_with_its_default() {
    let help = help_text();
    for spec in OPTIONS {
        let line = help
            .lines()
            .position(|l| {
                let l = l.trim_start();
                l.starts_with(&format!("--{}=", spec.path))
                    || l.starts_with(&format!("--{}[=", spec.path))
            })
            .unwrap_or_else(|| panic!("--help lacks {}", spec.path));
        let description = help.lines().nth(line + 1).unwrap_or_default();
        let default = if spec.default.is_empty() {
            "none"
        } else {
            spec.default
        };
        assert!(
            description.contains(spec.description)
                && description.ends_with(&format!("[default: {default}]")),
            "{}: {description}",
            spec.path
        );
    }
    for needle in [
        "--configFile",
        "--help",
        "--version",
        "GANGWAY_LOG_LEVEL",
        "configuration file < environment < command line",
        "gangway.toml, gangway.yml or gangway.yaml",
    ] {
        assert!(help.contains(needle), "--help lacks {needle}");
    }
}

#[test]
fn serializes_for_the_api() {
    let config = run(&["--entryPoints.web.address=:80"], &[]);
    let value = serde_json::to_value(&config).unwrap();
    assert_eq!(
        value,
        json!({
            "core": {"defaultRuleSyntax": "v3"},
            "global": {"notAppendXForwardedFor": false},
            "entryPoints": {
                "web": {
                    "address": ":80",
                    "asDefault": false,
                    "reusePort": false,
                    "allowACMEByPass": false,
                    "forwardedHeaders": {"trustedIPs": [], "insecure": false, "notAppendXForwardedFor": false},
                    "http": {
                        "sanitizePath": true,
                        "encodedCharacters": {
                            "allowEncodedSlash": true, "allowEncodedBackSlash": true,
                            "allowEncodedNullCharacter": true, "allowEncodedSemicolon": true,
                            "allowEncodedPercent": true, "allowEncodedQuestionMark": true,
                            "allowEncodedHash": true
                        },
                        "underscoreHeadersStrategy": "keep",
                        "encodeQuerySemicolons": false
                    },
                    "http2": {"maxConcurrentStreams": 250, "maxDecoderHeaderTableSize": 4096},
                    "udp": {"timeout": "3s"},
                    "observability": {"tracing": true, "accessLogs": true, "metrics": true},
                    "limits": {"maxHeaderBytes": 65536, "maxHeaders": 100, "maxPendingResetStreams": 20, "maxControlFrames": 200, "headerReadTimeout": "10s", "maxRequestBodyBytes": 0, "webSocketIdleTimeout": "1h"},
                    "transport": {
                        "lifeCycle": {"requestAcceptGraceTimeout": "0s", "graceTimeOut": "10s"},
                        "respondingTimeouts": {"readTimeout": "1m", "writeTimeout": "0s", "idleTimeout": "3m"},
                        "maxConnections": 16384,
                        "keepAliveMaxRequests": 0,
                        "keepAliveMaxTime": "0s"
                    }
                }
            },
            "providers": {"providersThrottleDuration": "50ms"},
            "log": {
                "level": "INFO",
                "format": "common",
                "noColor": false,
                "maxSize": 0,
                "maxBackups": 0,
                "maxAge": 0,
                "compress": false
            },
            "serversTransport": {
                "maxIdleConnsPerHost": 200,
                "forwardingTimeouts": {"dialTimeout": "30s", "responseHeaderTimeout": "0s", "idleConnTimeout": "1m30s"},
                "insecureSkipVerify": false,
                "rootCAs": [],
                "maxConcurrentRequests": 1024,
                "queueTimeout": "100ms",
                "maxConcurrentRequestsPerClient": 256
            },
            "tcpServersTransport": {
                "dialTimeout": "30s",
                "dialKeepAlive": "15s",
                "terminationDelay": "100ms",
                "tls": {"insecureSkipVerify": false, "rootCAs": []}
            }
        })
    );
    // And reads back to the same thing.
    let back: StaticConfig = serde_json::from_value(value).unwrap();
    assert_eq!(back, config);
}

#[test]
fn traefik_https_setup_loads() {
    let dir = dir_with(&[(
        "gangway.toml",
        r#"
[entryPoints.web]
address = ":80"
[entryPoints.web.http.redirections.entryPoint]
to = "websecure"
scheme = "https"
[entryPoints.websecure]
address = ":443"
[entryPoints.websecure.http.tls]
certResolver = "le"
[[entryPoints.websecure.http.tls.domains]]
main = "example.com"
sans = ["www.example.com"]
[certificatesResolvers.le.acme]
email = "me@example.com"
storage = "/var/lib/gangway/acme"
caServer = "staging"
[certificatesResolvers.le.acme.tlsChallenge]
[certificatesResolvers.web.acme.httpChallenge]
entryPoint = "web"
"#,
    )]);
    let (config, _) = run_in(dir.path(), &[], &[]);
    let web = &config.entry_points["web"]
        .http
        .redirections
        .as_ref()
        .expect("redirections")
        .entry_point;
    assert_eq!(web.to.as_deref(), Some("websecure"));
    assert!(web.permanent, "permanent by default");
    let tls = config.entry_points["websecure"].http.tls.as_ref().unwrap();
    assert_eq!(tls.cert_resolver.as_deref(), Some("le"));
    assert_eq!(tls.domains[0].sans, ["www.example.com"]);
    let le = &config.certificates_resolvers["le"].acme;
    assert_eq!(le.directory_url(), LETS_ENCRYPT_STAGING);
    assert_eq!(le.key_type, "EC256");
    assert!(le.tls_challenge.is_some());
    let web = &config.certificates_resolvers["web"].acme;
    assert_eq!(web.directory_url(), LETS_ENCRYPT_PRODUCTION);
    assert_eq!(web.http_challenge.as_ref().unwrap().entry_point, "web");
    // The same through flags.
    let config = run(
        &[
            "--entryPoints.websecure.address=:443",
            "--entryPoints.websecure.http.tls.certResolver=le",
            "--certificatesResolvers.le.acme.caServer=https://127.0.0.1:14000/dir",
            "--certificatesResolvers.le.acme.caCertificates=a.pem,b.pem",
        ],
        &[],
    );
    let le = &config.certificates_resolvers["le"].acme;
    assert_eq!(le.directory_url(), "https://127.0.0.1:14000/dir");
    assert_eq!(le.ca_certificates.len(), 2);
}

/// A value other than the default for the option at `path`, with the other
/// flags it needs to be valid (an entry point to point at, a file
/// provider's file, …).
fn non_default(path: &str, kind: ValueKind, default: &str) -> (String, Vec<&'static str>) {
    let value = match path {
        "entryPoints.<name>.address" => "127.0.0.1:8081",
        "entryPoints.<name>.forwardedHeaders.trustedIPs"
        | "entryPoints.<name>.proxyProtocol.trustedIPs" => "10.0.0.0/8",
        "entryPoints.<name>.http.redirections.entryPoint.to" => ":443",
        "entryPoints.<name>.http.redirections.entryPoint.scheme" => "http",
        "entryPoints.<name>.http.underscoreHeadersStrategy" => "reject",
        "providers.docker.endpoint" => "tcp://127.0.0.1:2375",
        "providers.docker.defaultRule" => "Host(`{{ .Name }}.test`)",
        "providers.docker.constraints" => "Label(`a`, `b`)",
        "providers.docker.conflicts" => "drop",
        "providers.docker.hostAddress" => "127.0.0.2",
        "providers.swarm.endpoint" => "tcp://127.0.0.1:2375",
        "providers.swarm.defaultRule" => "Host(`{{ .Name }}.test`)",
        "providers.swarm.constraints" => "Label(`a`, `b`)",
        "log.level" => "DEBUG",
        "log.format" => "json",
        "metrics.prometheus.buckets" | "metrics.otlp.explicitBoundaries" => "0.5,2",
        "tracing.sampleRate" => "0.5",
        "accessLog.format" => "json",
        "accessLog.filters.statusCodes" => "500-599",
        "accessLog.fields.defaultMode" => "drop",
        "accessLog.fields.names.<name>" | "accessLog.fields.headers.names.<name>" => "redact",
        "accessLog.fields.headers.defaultMode" => "keep",
        "certificatesResolvers.<name>.acme.caServer" => "https://127.0.0.1:14000/dir",
        "certificatesResolvers.<name>.acme.keyType" => "EC384",
        "core.defaultRuleSyntax" => "v2",
        "certificatesResolvers.<name>.acme.httpChallenge.entryPoint" => "web",
        _ => match kind {
            ValueKind::Bool | ValueKind::Section if default == "true" => "false",
            ValueKind::Bool | ValueKind::Section => "true",
            ValueKind::Int => "7",
            ValueKind::Duration => "7s",
            ValueKind::SignedDuration => "-7s",
            ValueKind::String | ValueKind::List | ValueKind::Address => "other",
        },
    };
    let needs: Vec<&'static str> = match path {
        p if p.starts_with("providers.file") && p != "providers.file.directory" => {
            vec!["--providers.file.filename=dynamic.toml"]
        }
        "providers.file.directory" => vec![],
        p if p.starts_with("certificatesResolvers.") => {
            vec!["--certificatesResolvers.le.acme.email=ops@example.test"]
        }
        p if p.starts_with("entryPoints.<name>.http.tls.") => vec![
            "--entryPoints.web.address=:80",
            "--entryPoints.web.http.tls",
        ],
        "entryPoints.<name>.address" => vec![],
        p if p.starts_with("entryPoints.") => vec!["--entryPoints.web.address=:80"],
        _ => vec![],
    };
    (value.to_owned(), needs)
}

/// Every row of the table `--help` prints reaches a field of
/// [`StaticConfig`]: set on its own to a value other than its default, it
/// changes the loaded configuration.
///
/// This is one half of the guarantee that no option is parsed but never
/// read. The other half is at compile time: every place that consumes the
/// static configuration (`settings::entry_point`, `compile_context`,
/// `router_tls` and `redirect` in `settings/`, `provider::ProviderKind`,
/// `provider::docker::Settings::new`,
/// `acme::Resolver::new`, `AccessLogger::spawn`, `api::internal_routers`,
/// `start::log::init`) takes its section apart with an exhaustive pattern, with
/// no `..`. A field bound there but not used is an unused variable, an
/// error under the `#[deny(unused_variables)]` on each pattern (in
/// `internal_routers`, whose patterns are `if let`s, under `cargo clippy --
/// -D warnings`); a field added to the model but left out of the pattern
/// does not compile. A field may be bound to `_` only with
/// a comment naming where it is read instead. So: row → field (this test),
/// field → read (the compiler).
#[test]
fn every_option_in_the_help_table_reaches_the_configuration() {
    let dir = empty_dir();
    let rows = super::options::OPTIONS;
    assert!(rows.len() > 80, "the whole table");
    for spec in rows {
        let (value, needs) = non_default(spec.path, spec.kind, spec.default);
        let path = spec
            .path
            .replacen("entryPoints.<name>", "entryPoints.web", 1)
            .replacen(
                "certificatesResolvers.<name>",
                "certificatesResolvers.le",
                1,
            )
            .replace("names.<name>", "names.ClientHost")
            .replace("[n]", "[0]");
        let flag = format!("--{path}={value}");
        // A section's own companions (`providers.file`'s file) would switch
        // the section on in the baseline too.
        let own = format!("--{path}.");
        let base: Vec<&str> = needs
            .iter()
            .copied()
            .filter(|n| spec.kind != ValueKind::Section || !n.starts_with(&own))
            .collect();
        let mut with: Vec<&str> = needs;
        with.push(&flag);
        let before = serde_json::to_value(run_in(dir.path(), &base, &[]).0).unwrap();
        let after = match load(&strings(&with), &vars(&[]), dir.path()) {
            Ok(Loaded::Run(config, _)) => serde_json::to_value(config).unwrap(),
            other => panic!("{flag} {base:?}: {other:?}"),
        };
        assert_ne!(before, after, "{flag} changes nothing in the configuration");
    }
}

#[test]
fn redirections_are_shown_only_when_configured() {
    let mut http = EntryPointHttp::default();
    let json = serde_json::to_value(&http).unwrap();
    assert!(json.get("redirections").is_none(), "{json}");
    let mut redirections = Redirections::default();
    redirections.entry_point.to = Some("websecure".into());
    http.redirections = Some(redirections);
    let json = serde_json::to_value(&http).unwrap();
    assert_eq!(json["redirections"]["entryPoint"]["to"], "websecure");
    assert_eq!(json["redirections"]["entryPoint"]["scheme"], "https");
}

#[test]
fn dns_challenge_loads_from_a_file_and_from_flags_with_traefiks_names() {
    let dir = dir_with(&[(
        "gangway.toml",
        r#"
[certificatesResolvers.le.acme.dnsChallenge]
provider = "rfc2136"
resolvers = ["192.0.2.53:5353", "192.0.2.54"]
[certificatesResolvers.le.acme.dnsChallenge.propagation]
delayBeforeChecks = "10s"
disableChecks = true
requireAllRNS = true
"#,
    )]);
    let (config, _) = run_in(dir.path(), &[], &[]);
    let dns = config.certificates_resolvers["le"]
        .acme
        .dns_challenge
        .clone()
        .expect("dnsChallenge");
    assert_eq!(dns.provider, "rfc2136");
    assert_eq!(dns.resolvers, ["192.0.2.53:5353", "192.0.2.54"]);
    assert_eq!(
        dns.propagation.delay_before_checks.0,
        std::time::Duration::from_secs(10)
    );
    assert!(dns.propagation.disable_checks);
    assert!(dns.propagation.require_all_rns);
    let flags = run(
        &[
            "--certificatesResolvers.le.acme.dnsChallenge.provider=exec",
            "--certificatesResolvers.le.acme.dnsChallenge.resolvers=192.0.2.53,192.0.2.54",
            "--certificatesResolvers.le.acme.dnsChallenge.propagation.delayBeforeChecks=2s",
            "--certificatesResolvers.le.acme.dnsChallenge.propagation.requireAllRNS=true",
        ],
        &[],
    );
    let dns = flags.certificates_resolvers["le"]
        .acme
        .dns_challenge
        .clone()
        .expect("dnsChallenge");
    assert_eq!(dns.provider, "exec");
    assert_eq!(dns.resolvers.len(), 2);
    assert_eq!(
        dns.propagation.delay_before_checks.0,
        std::time::Duration::from_secs(2)
    );
    assert!(dns.propagation.require_all_rns && !dns.propagation.disable_checks);
}

// ------------------------------------------------- Traefik's forms and places

#[test]
fn keys_in_any_case_and_scalars_of_another_type_are_read_as_traefik_reads_them() {
    let dir = dir_with(&[(
        "gangway.yml",
        "EntryPoints:\n  web:\n    Address: ':8081'\n    forwardedheaders:\n      insecure: 'true'\n    transport:\n      maxConnections: '7'\n      respondingTimeouts:\n        idleTimeout: 42\nPing:\nAPI: true\nproviders:\n  docker:\n    network: 8\n",
    )]);
    let (config, _) = run_in(dir.path(), &[], &[]);
    let web = &config.entry_points["web"];
    assert_eq!(web.address, addr(":8081"));
    assert!(web.forwarded_headers.insecure);
    assert_eq!(web.transport.max_connections, 7);
    assert_eq!(web.transport.responding_timeouts.idle_timeout, secs(42));
    assert!(config.ping.is_some(), "an empty `Ping:` turns it on");
    assert!(config.api.is_some(), "`API: true` turns it on");
    assert_eq!(
        config.providers.docker.as_ref().unwrap().network.as_deref(),
        Some("8")
    );
}

#[test]
fn list_items_are_given_by_index_in_flags_and_variables() {
    let config = run(
        &[
            "--entryPoints.websecure.address=:443",
            "--entrypoints.websecure.http.tls.domains[0].main=example.com",
            "--entrypoints.websecure.http.tls.domains[0].sans=a.example.com,b.example.com",
        ],
        &[(
            "TRAEFIK_ENTRYPOINTS_WEBSECURE_HTTP_TLS_DOMAINS_1_MAIN",
            "example.org",
        )],
    );
    let tls = config.entry_points["websecure"].http.tls.as_ref().unwrap();
    assert_eq!(tls.domains.len(), 2);
    assert_eq!(tls.domains[0].main, "example.com");
    assert_eq!(tls.domains[0].sans, ["a.example.com", "b.example.com"]);
    assert_eq!(tls.domains[1].main, "example.org");
}

#[test]
fn a_section_given_as_true_is_on_with_its_defaults() {
    let config = run(
        &[
            "--api=true",
            "--ping=true",
            "--certificatesresolvers.le.acme.httpchallenge=true",
            "--certificatesresolvers.le.acme.httpchallenge.entrypoint=web",
        ],
        &[],
    );
    assert!(config.api.is_some());
    assert!(config.ping.is_some());
    let le = &config.certificates_resolvers["le"].acme;
    assert!(le.http_challenge.is_some());
}

#[test]
fn options_that_are_not_implemented_are_accepted_and_noted_from_every_source() {
    let dir = dir_with(&[(
        "gangway.yml",
        "global:\n  checkNewVersion: true\ntracing:\n  globalAttributes:\n    team: edge\n",
    )]);
    let (config, _) = run_in(
        dir.path(),
        &[
            "--hostResolver.cnameFlattening=true",
            "--experimental.plugins.demo.settings.key=1",
        ],
        &[("TRAEFIK_GLOBAL_SENDANONYMOUSUSAGE", "false")],
    );
    let named: Vec<(&str, &str, OptionState)> = config
        .accepted
        .iter()
        .map(|a| (a.option.as_str(), a.source.as_str(), a.state))
        .collect();
    assert_eq!(
        named,
        [
            ("global.checkNewVersion", "gangway.yml", OptionState::Inert),
            (
                "tracing.globalAttributes.team",
                "gangway.yml",
                OptionState::Unsupported
            ),
            (
                "global.sendAnonymousUsage",
                "TRAEFIK_GLOBAL_SENDANONYMOUSUSAGE",
                OptionState::Inert
            ),
            (
                "hostResolver.cnameFlattening",
                "--hostResolver.cnameFlattening",
                OptionState::Unsupported
            ),
            (
                "experimental.plugins.demo.settings.key",
                "--experimental.plugins.demo.settings.key",
                OptionState::Inert
            ),
        ]
    );
}

#[test]
fn every_problem_is_reported_not_the_first() {
    let dir = dir_with(&[(
        "gangway.toml",
        "[entryPoints.web]\naddress = \":80\"\n[log]\nlevle = \"DEBUG\"\n[providers.file]\nwatch = \"maybe\"\n",
    )]);
    let err = fail_in(
        dir.path(),
        &[
            "--entryPoints.web.adress=:80",
            "--log.level=LOUD",
            "--api.insecur",
        ],
        &[("GANGWAY_PING_ENTRYPONT", "web")],
    );
    let shown: Vec<String> = err.problems().iter().map(ToString::to_string).collect();
    assert_eq!(shown.len(), 6, "{shown:#?}");
    assert!(shown[0].contains("--entryPoints.web.adress"), "{shown:#?}");
    assert!(
        shown.iter().any(|s| s.contains("--api.insecur")),
        "{shown:#?}"
    );
    assert!(
        shown.iter().any(|s| s.contains("GANGWAY_PING_ENTRYPONT")),
        "{shown:#?}"
    );
    assert!(
        shown
            .iter()
            .any(|s| s.contains("gangway.toml, line 4: `log.levle`")),
        "{shown:#?}"
    );
    assert!(
        shown
            .iter()
            .any(|s| s.contains("gangway.toml, line 6: `providers.file.watch`")),
        "{shown:#?}"
    );
    assert!(
        shown.iter().any(|s| s.contains("--log.level=LOUD")),
        "{shown:#?}"
    );
    assert!(message(&err).starts_with("6 problems in the static configuration:\n  - "));
}

#[test]
fn one_option_under_both_prefixes_is_an_error_naming_both() {
    let err = fail(
        &[],
        &[
            ("GANGWAY_LOG_LEVEL", "DEBUG"),
            ("TRAEFIK_LOG_LEVEL", "INFO"),
        ],
    );
    assert_eq!(
        message(&err),
        "GANGWAY_LOG_LEVEL and TRAEFIK_LOG_LEVEL both set `log.level`; keep one"
    );
}

/// Search roots inside `base`: the system directory is `base/etc`.
fn roots_in(base: &Path) -> SearchRoots {
    SearchRoots {
        cwd: base.join("cwd"),
        system: base.join("etc"),
        xdg_config_home: base.join("xdg"),
        home: base.join("home"),
    }
}

fn file_found(base: &Path) -> Option<PathBuf> {
    match load_from(&[], &[], &roots_in(base)) {
        Ok(Loaded::Run(_, notes)) => notes.file,
        other => panic!("{other:?}"),
    }
}

#[test]
fn traefik_files_are_found_where_traefik_looks_after_gangways_own() {
    let base = empty_dir();
    let b = base.path();
    for dir in ["cwd", "etc", "xdg", "home/.config"] {
        std::fs::create_dir_all(b.join(dir)).unwrap();
    }
    assert_eq!(file_found(b), None);
    let write = |path: &str| std::fs::write(b.join(path), "log:\n  level: DEBUG\n").unwrap();
    write("cwd/traefik.yml");
    assert_eq!(file_found(b), Some(b.join("cwd/traefik.yml")));
    write("home/.config/traefik.toml");
    std::fs::write(
        b.join("home/.config/traefik.toml"),
        "[log]\nlevel = \"DEBUG\"\n",
    )
    .unwrap();
    assert_eq!(file_found(b), Some(b.join("home/.config/traefik.toml")));
    write("xdg/traefik.yaml");
    assert_eq!(file_found(b), Some(b.join("xdg/traefik.yaml")));
    write("etc/traefik.yml");
    assert_eq!(file_found(b), Some(b.join("etc/traefik.yml")));
    write("etc/traefik.yaml");
    assert_eq!(
        file_found(b),
        Some(b.join("etc/traefik.yaml")),
        "yaml before yml"
    );
    write("cwd/gangway.yml");
    assert_eq!(
        file_found(b),
        Some(b.join("cwd/gangway.yml")),
        "gangway's own first"
    );
    let roots = SearchRoots::new(
        &vars(&[("HOME", "/h"), ("XDG_CONFIG_HOME", "/x")]),
        Path::new("/w"),
    );
    assert_eq!(roots.system, Path::new("/etc/traefik"));
    assert_eq!(
        roots.candidates()[3],
        Path::new("/etc/traefik/traefik.toml")
    );
}

#[test]
fn unset_variables_leave_traefiks_paths_at_the_root_as_its_finder_does() {
    let roots = SearchRoots::new(&vars(&[("HOME", "")]), Path::new("/w"));
    let shown: Vec<String> = roots
        .candidates()
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    assert_eq!(
        shown,
        [
            "/w/gangway.toml",
            "/w/gangway.yml",
            "/w/gangway.yaml",
            "/etc/traefik/traefik.toml",
            "/etc/traefik/traefik.yaml",
            "/etc/traefik/traefik.yml",
            "/traefik.toml",
            "/traefik.yaml",
            "/traefik.yml",
            "/.config/traefik.toml",
            "/.config/traefik.yaml",
            "/.config/traefik.yml",
            "/w/traefik.toml",
            "/w/traefik.yaml",
            "/w/traefik.yml",
        ]
    );
}

#[test]
fn the_variables_read_are_noted() {
    let dir = empty_dir();
    let loaded = load(
        &[],
        &vars(&[
            ("TRAEFIK_LOG_LEVEL", "DEBUG"),
            ("GANGWAY_PING", "true"),
            ("OTHER", "x"),
        ]),
        dir.path(),
    );
    match loaded {
        Ok(Loaded::Run(_, notes)) => {
            assert_eq!(notes.variables, ["TRAEFIK_LOG_LEVEL", "GANGWAY_PING"]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_insecure_api_listens_on_every_interface_as_traefiks_does() {
    let config = run(&["--api.insecure=true"], &[]);
    assert_eq!(config.entry_points["gangway"].address, addr(":8080"));
    // Without the insecure API, /ping and /metrics stay on loopback.
    let config = run(&["--ping"], &[]);
    assert_eq!(
        config.entry_points["gangway"].address,
        addr("127.0.0.1:8080")
    );
    // An address given wins either way.
    let config = run(
        &[
            "--api.insecure=true",
            "--entryPoints.gangway.address=127.0.0.1:9090",
        ],
        &[],
    );
    assert_eq!(
        config.entry_points["gangway"].address,
        addr("127.0.0.1:9090")
    );
}

#[test]
fn dynamic_sections_in_the_static_file_are_passed_over_with_a_warning() {
    let dir = dir_with(&[(
        "gangway.yml",
        "entryPoints:\n  web:\n    address: ':8000'\ntls:\n  options:\n    default:\n      minVersion: VersionTLS12\nHTTP:\n  routers: {}\n",
    )]);
    let (config, _) = run_in(dir.path(), &[], &[]);
    assert_eq!(config.entry_points["web"].address, addr(":8000"));
    let named: Vec<(&str, OptionState)> = config
        .accepted
        .iter()
        .map(|a| (a.option.as_str(), a.state))
        .collect();
    assert_eq!(
        named,
        [
            ("http", OptionState::Unsupported),
            ("tls", OptionState::Unsupported)
        ]
    );
    // Anything else unknown at the top is still an error.
    let dir = dir_with(&[(
        "gangway.yml",
        "serverTransport:\n  insecureSkipVerify: true\n",
    )]);
    let err = fail_in(dir.path(), &[], &[]);
    assert!(message(&err).contains("serverTransport"), "{err}");
}

#[test]
fn an_empty_value_in_a_file_is_not_given() {
    let dir = dir_with(&[(
        "gangway.yml",
        "entryPoints:\n  web:\n    address: ':8000'\n    transport:\n      respondingTimeouts:\n        idleTimeout:\ncertificatesResolvers:\n  le:\n    acme:\n      email:\n      storage: acme.json\n      tlsChallenge: {}\n",
    )]);
    let (config, _) = run_in(dir.path(), &[], &[]);
    assert_eq!(
        config.entry_points["web"].transport,
        EntryPointTransport::default()
    );
    let acme = &config.certificates_resolvers["le"].acme;
    assert_eq!(acme.email, "");
}

#[test]
fn declared_plugins_are_read_from_every_source() {
    let dir = dir_with(&[(
        "traefik.yml",
        "experimental:\n  plugins:\n    bouncer:\n      moduleName: github.com/maxlerebourg/crowdsec-bouncer-traefik-plugin\n      version: v1.3.5\n  localPlugins:\n    local:\n      moduleName: github.com/me/local\n      settings:\n        useUnsafe: true\n",
    )]);
    let (config, _) = run_in(
        dir.path(),
        &[
            "--experimental.plugins.headers.modulename=github.com/XciD/traefik-plugin-rewrite-headers",
        ],
        &[(
            "TRAEFIK_EXPERIMENTAL_PLUGINS_BODY_MODULENAME",
            "github.com/packruler/rewrite-body",
        )],
    );
    let declared = config.experimental.module_names();
    assert_eq!(
        declared.get("bouncer").map(String::as_str),
        Some("github.com/maxlerebourg/crowdsec-bouncer-traefik-plugin")
    );
    assert_eq!(
        declared.get("local").map(String::as_str),
        Some("github.com/me/local")
    );
    assert_eq!(
        declared.get("headers").map(String::as_str),
        Some("github.com/XciD/traefik-plugin-rewrite-headers")
    );
    assert_eq!(
        declared.get("body").map(String::as_str),
        Some("github.com/packruler/rewrite-body")
    );
    // The version and the Go settings are noted as having no effect.
    let inert: Vec<&str> = config
        .accepted
        .iter()
        .filter(|a| a.state == OptionState::Inert)
        .map(|a| a.option.as_str())
        .collect();
    assert!(
        inert.contains(&"experimental.plugins.bouncer.version"),
        "{inert:?}"
    );
    assert!(
        inert.contains(&"experimental.localPlugins.local.settings.useUnsafe"),
        "{inert:?}"
    );
}

#[test]
fn a_section_set_to_false_stays_off_whatever_is_given_under_it_in_any_order() {
    let off = [
        "--providers.docker=false",
        "--providers.docker.exposedbydefault=false",
    ];
    for args in [off, [off[1], off[0]]] {
        let config = run(&args, &[]);
        assert_eq!(config.providers.docker, None, "{args:?}");
    }
    // Switched on again by a later `true`, as the last value of a flag wins.
    let config = run(&[off[0], off[1], "--providers.docker=true"], &[]);
    assert_eq!(
        config.providers.docker.map(|d| d.exposed_by_default),
        Some(Some(false))
    );
    let config = run(
        &[
            "--certificatesresolvers.x.acme.tlschallenge=false",
            "--certificatesresolvers.x.acme.email=a@example.com",
            "--certificatesresolvers.x.acme.httpchallenge.entrypoint=web",
        ],
        &[],
    );
    let acme = &config.certificates_resolvers["x"].acme;
    assert!(acme.tls_challenge.is_none(), "{acme:?}");
    assert!(acme.http_challenge.is_some(), "{acme:?}");
}
