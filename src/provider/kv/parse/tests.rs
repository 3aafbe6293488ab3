use super::*;
use crate::config::format::{Format, parse_document};

fn pairs(list: &[(&str, &str)]) -> BTreeMap<String, String> {
    list.iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// Keys as Traefik's KV reference writes them.
const TRAEFIK_KEYS: &[(&str, &str)] = &[
    ("traefik/http/routers/myrouter/rule", "Host(`example.com`)"),
    ("traefik/http/routers/myrouter/entryPoints/0", "web"),
    ("traefik/http/routers/myrouter/entryPoints/1", "websecure"),
    ("traefik/http/routers/myrouter/middlewares/0", "strip"),
    ("traefik/http/routers/myrouter/service", "myservice"),
    ("traefik/http/routers/myrouter/priority", "42"),
    ("traefik/http/routers/myrouter/tls/certResolver", "le"),
    (
        "traefik/http/routers/myrouter/tls/domains/0/main",
        "example.com",
    ),
    (
        "traefik/http/routers/myrouter/tls/domains/0/sans/0",
        "www.example.com",
    ),
    (
        "traefik/http/services/myservice/loadBalancer/servers/0/url",
        "http://10.0.0.1:80",
    ),
    (
        "traefik/http/services/myservice/loadBalancer/servers/1/url",
        "http://10.0.0.2:80",
    ),
    (
        "traefik/http/services/myservice/loadBalancer/servers/1/weight",
        "3",
    ),
    (
        "traefik/http/services/myservice/loadBalancer/passHostHeader",
        "false",
    ),
    (
        "traefik/http/services/myservice/loadBalancer/healthCheck/path",
        "/health",
    ),
    (
        "traefik/http/services/myservice/loadBalancer/healthCheck/interval",
        "10s",
    ),
    (
        "traefik/http/services/myservice/loadBalancer/serversTransport",
        "st",
    ),
    (
        "traefik/http/services/both/weighted/services/0/name",
        "myservice",
    ),
    ("traefik/http/services/both/weighted/services/0/weight", "2"),
    (
        "traefik/http/middlewares/strip/stripPrefix/prefixes/0",
        "/api",
    ),
    (
        "traefik/http/middlewares/strip/stripPrefix/prefixes/1",
        "/v1",
    ),
    (
        "traefik/http/middlewares/hdr/headers/customRequestHeaders/X-Script-Name",
        "test",
    ),
    ("traefik/http/serversTransports/st/serverName", "backend"),
    (
        "traefik/http/serversTransports/st/insecureSkipVerify",
        "true",
    ),
    ("traefik/tcp/routers/db/rule", "HostSNI(`*`)"),
    ("traefik/tcp/routers/db/entryPoints/0", "pg"),
    ("traefik/tcp/routers/db/service", "db"),
    (
        "traefik/tcp/services/db/loadBalancer/servers/0/address",
        "127.0.0.1:5432",
    ),
    (
        "traefik/tcp/services/db/loadBalancer/healthCheck/send",
        "PING",
    ),
    (
        "traefik/tcp/services/db/loadBalancer/healthCheck/expect",
        "PONG",
    ),
    (
        "traefik/tcp/services/db/loadBalancer/healthCheck/port",
        "6000",
    ),
    (
        "traefik/tcp/services/db/loadBalancer/healthCheck/unhealthyInterval",
        "2s",
    ),
    ("traefik/udp/routers/dns/entryPoints/0", "dns"),
    ("traefik/udp/routers/dns/service", "dns"),
    (
        "traefik/udp/services/dns/loadBalancer/servers/0/address",
        "127.0.0.1:53",
    ),
    ("traefik/tls/options/modern/minVersion", "VersionTLS13"),
    (
        "traefik/tls/stores/default/defaultCertificate/certFile",
        "/d.pem",
    ),
    (
        "traefik/tls/stores/default/defaultCertificate/keyFile",
        "/d.key",
    ),
    ("traefik/tls/certificates/0/certFile", "/a.pem"),
    ("traefik/tls/certificates/0/keyFile", "/a.key"),
    ("traefik/tls/certificates/1/certFile", "/b.pem"),
    ("traefik/tls/certificates/1/keyFile", "/b.key"),
    // Another root: not ours.
    ("traefikx/http/routers/other/rule", "Host(`other`)"),
    ("gangway/http/routers/other/rule", "Host(`other`)"),
];

/// The same configuration as Traefik's file provider writes it.
const SAME_AS_FILE: &str = r#"
[http.routers.myrouter]
rule = "Host(`example.com`)"
entryPoints = ["web", "websecure"]
middlewares = ["strip"]
service = "myservice"
priority = 42
[http.routers.myrouter.tls]
certResolver = "le"
[[http.routers.myrouter.tls.domains]]
main = "example.com"
sans = ["www.example.com"]

[http.services.myservice.loadBalancer]
passHostHeader = false
serversTransport = "st"
servers = [{ url = "http://10.0.0.1:80" }, { url = "http://10.0.0.2:80", weight = 3 }]
[http.services.myservice.loadBalancer.healthCheck]
path = "/health"
interval = "10s"
[http.services.both.weighted]
services = [{ name = "myservice", weight = 2 }]

[http.middlewares.strip.stripPrefix]
prefixes = ["/api", "/v1"]
[http.middlewares.hdr.headers.customRequestHeaders]
X-Script-Name = "test"

[http.serversTransports.st]
serverName = "backend"
insecureSkipVerify = true

[tcp.routers.db]
rule = "HostSNI(`*`)"
entryPoints = ["pg"]
service = "db"
[tcp.services.db.loadBalancer]
servers = [{ address = "127.0.0.1:5432" }]
[tcp.services.db.loadBalancer.healthCheck]
send = "PING"
expect = "PONG"
port = 6000
unhealthyInterval = "2s"

[udp.routers.dns]
entryPoints = ["dns"]
service = "dns"
[udp.services.dns.loadBalancer]
servers = [{ address = "127.0.0.1:53" }]

[tls.options.modern]
minVersion = "VersionTLS13"
[tls.stores.default.defaultCertificate]
certFile = "/d.pem"
keyFile = "/d.key"
[[tls.certificates]]
certFile = "/a.pem"
keyFile = "/a.key"
[[tls.certificates]]
certFile = "/b.pem"
keyFile = "/b.key"
"#;

#[test]
fn traefik_keys_read_as_the_same_configuration_in_a_file() {
    let parsed = parse_pairs("redis", "traefik", &pairs(TRAEFIK_KEYS));
    assert_eq!(parsed.warnings, Vec::new());
    let expected: Dynamic = parse_document("expected.toml", SAME_AS_FILE, Format::Toml).unwrap();
    assert_eq!(parsed.dynamic, expected);
    // Each object names the keys it is written in.
    let router = &parsed.detail.routers["myrouter"];
    assert!(router.errors.is_empty());
    let keys = router.keys.as_ref().unwrap();
    assert_eq!(keys.provider, "redis");
    assert_eq!(keys.keys.len(), 9);
    assert!(
        keys.keys
            .contains(&"traefik/http/routers/myrouter/tls/certResolver".to_owned())
    );
    assert!(parsed.detail.tcp_services.contains_key("db"));
    assert!(parsed.detail.udp_routers.contains_key("dns"));
}

#[test]
fn option_names_match_whatever_their_case_as_traefik_reads_them() {
    let parsed = parse_pairs(
        "redis",
        "gangway",
        &pairs(&[
            ("gangway/HTTP/Routers/app/RULE", "Host(`a`)"),
            ("gangway/http/routers/app/entrypoints/0", "web"),
            ("gangway/http/routers/app/service", "app"),
        ]),
    );
    let router = &parsed.dynamic.http.routers["app"];
    assert_eq!(router.rule, "Host(`a`)");
    assert_eq!(router.entry_points, ["web"]);
}

#[test]
fn a_bad_key_disables_its_object_only_and_is_named() {
    let parsed = parse_pairs(
        "redis",
        "traefik",
        &pairs(&[
            ("traefik/http/routers/good/rule", "Host(`good`)"),
            ("traefik/http/routers/good/service", "svc"),
            ("traefik/http/routers/typo/rul", "Host(`typo`)"),
            ("traefik/http/routers/typo/service", "svc"),
            ("traefik/http/routers/badprio/rule", "Host(`p`)"),
            ("traefik/http/routers/badprio/priority", "high"),
            (
                "traefik/http/services/svc/loadBalancer/servers/0/url",
                "http://127.0.0.1:1",
            ),
        ]),
    );
    assert_eq!(
        parsed.dynamic.http.routers.keys().collect::<Vec<_>>(),
        ["good"]
    );
    assert!(parsed.dynamic.http.services.contains_key("svc"));
    let typo = &parsed.detail.routers["typo"].errors;
    assert_eq!(
        typo[0].to_string(),
        "redis key `traefik/http/routers/typo/rul`: unknown option `rul` (did you mean `rule`?)"
    );
    assert_eq!(typo[0].object.name.to_string(), "typo@redis");
    let prio = &parsed.detail.routers["badprio"].errors;
    assert_eq!(
        prio[0].origin,
        Some(Origin::Key {
            provider: "redis".into(),
            key: "traefik/http/routers/badprio/priority".into()
        })
    );
    assert!(
        prio[0].to_string().contains("`high` is not a whole number"),
        "{}",
        prio[0]
    );
    assert!(parsed.detail.routers["good"].errors.is_empty());
    // What was read of an object left out is kept, as written, so that it
    // is shown as what it is rather than with defaults.
    assert_eq!(
        parsed.detail.routers["typo"].read,
        Some(serde_json::json!({"rul": "Host(`typo`)", "service": "svc"}))
    );
    assert_eq!(parsed.detail.routers["good"].read, None);
}

#[test]
fn keys_outside_an_object_are_reported_and_skipped() {
    let parsed = parse_pairs(
        "redis",
        "traefik",
        &pairs(&[
            ("traefik/htp/routers/a/rule", "Host(`a`)"),
            ("traefik/http/routers//rule", "Host(`a`)"),
            (
                "traefik/http/serversTransports/st/maxIdleConnsPerHost",
                "many",
            ),
            ("traefik/tls/options/x/minVersion", "VersionTLS12"),
            ("traefik/", ""),
        ]),
    );
    let messages: Vec<String> = parsed.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(messages.len(), 3, "{messages:?}");
    assert!(messages.contains(
        &"redis key `traefik/htp/routers/a/rule`: unknown option `htp` (did you mean `http`?); the key is ignored"
            .to_owned()
    ));
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("redis key `traefik/http/routers//rule`: empty segment")),
        "{messages:?}"
    );
    assert!(
        messages.iter().any(|m| m.starts_with(
            "redis key `traefik/http/serversTransports/st/maxIdleConnsPerHost`: servers transport `st` is left out"
        )),
        "{messages:?}"
    );
    assert!(parsed.dynamic.tls.options.contains_key("x"));
}

#[test]
fn load_balancing_strategies_and_passive_health_read_from_keys() {
    let parsed = parse_pairs(
        "redis",
        "traefik",
        &pairs(&[
            (
                "traefik/http/services/app/loadBalancer/servers/0/url",
                "http://10.0.0.1:80",
            ),
            ("traefik/http/services/app/loadBalancer/strategy", "p2c"),
            (
                "traefik/http/services/app/loadBalancer/passiveHealthCheck/failureWindow",
                "30s",
            ),
            (
                "traefik/http/services/app/loadBalancer/passiveHealthCheck/maxFailedAttempts",
                "3",
            ),
            (
                "traefik/http/services/pick/highestRandomWeight/services/0/name",
                "app",
            ),
            (
                "traefik/http/services/pick/highestRandomWeight/services/0/weight",
                "2",
            ),
        ]),
    );
    assert_eq!(parsed.warnings, Vec::new());
    for name in ["app", "pick"] {
        assert!(
            parsed.detail.services[name].errors.is_empty(),
            "{:?}",
            parsed.detail.services[name]
        );
    }
    let lb = parsed.dynamic.http.services["app"]
        .load_balancer
        .as_ref()
        .expect("loadBalancer");
    assert_eq!(lb.strategy.as_deref(), Some("p2c"));
    let passive = lb.passive_health_check.as_ref().expect("passive");
    assert_eq!(
        passive.failure_window.map(|d| d.0),
        Some(std::time::Duration::from_secs(30))
    );
    assert_eq!(passive.max_failed_attempts, Some(3));
    let hrw = parsed.dynamic.http.services["pick"]
        .highest_random_weight
        .as_ref()
        .expect("highestRandomWeight");
    assert_eq!(
        (hrw.services[0].name.as_str(), hrw.services[0].weight),
        ("app", Some(2))
    );
}
