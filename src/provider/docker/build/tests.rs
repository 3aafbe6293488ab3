use super::*;
use crate::config::static_config::DockerProvider;
use crate::provider::docker::container::PortView;

const NOW: u64 = 1_800_000_000_000;

fn settings(f: impl FnOnce(&mut DockerProvider)) -> Settings {
    let mut c = DockerProvider {
        label_prefix: "traefik".into(),
        ..DockerProvider::default()
    };
    f(&mut c);
    Settings::new(&c).expect("settings")
}

fn defaults() -> Settings {
    settings(|_| {})
}

/// A running host-network container created at `created` (seconds).
fn host(id: &str, name: &str, created: i128, labels: &[(&str, &str)]) -> ContainerView {
    let mut v = ContainerView::running(id, name, labels);
    v.created_ns = created * 1_000_000_000;
    v
}

fn urls(b: &Built, service: &str) -> Vec<String> {
    b.dynamic.http.services[service]
        .load_balancer
        .as_ref()
        .expect("load balancer")
        .servers
        .iter()
        .map(|s| s.url.clone())
        .collect()
}

fn record<'a>(b: &'a Built, name: &str) -> &'a ContainerRecord {
    b.detail
        .containers
        .iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no record for {name}: {:?}", b.detail.containers))
}

#[test]
fn a_plain_container_gets_a_router_and_a_service_named_after_it() {
    let mut v = ContainerView::running("c1", "my_app.1", &[("traefik.enable", "true")]);
    v.network_mode = "bridge".into();
    v.networks.insert("bridge".into(), "172.17.0.2".into());
    v.ports.push(PortView {
        port: 80,
        proto: "tcp".into(),
        bindings: vec![],
    });
    let b = build(&[v], &defaults(), NOW);
    let r = &b.dynamic.http.routers["my-app-1"];
    assert_eq!(r.rule, "Host(`my-app-1`)");
    assert_eq!(r.service, "my-app-1");
    assert_eq!(urls(&b, "my-app-1"), ["http://172.17.0.2:80"]);
    let rec = record(&b, "my_app.1");
    assert!(rec.routed && rec.reason.is_none(), "{rec:?}");
    assert_eq!(rec.routers, ["my-app-1"]);
    // Implicit objects have a source and no labels.
    let src = &b.detail.routers["my-app-1"].sources[0];
    assert_eq!(src.container_name, "my_app.1");
    assert!(src.labels.is_empty());
}

#[test]
fn containers_of_one_compose_service_share_its_router_and_service() {
    let compose = |id: &str, n: u8, port: &str| {
        host(
            id,
            &format!("shop_web_{n}"),
            i128::from(n),
            &[
                ("traefik.enable", "true"),
                ("com.docker.compose.project", "shop"),
                ("com.docker.compose.service", "web"),
                (
                    "traefik.http.services.web-shop.loadbalancer.server.port",
                    port,
                ),
            ],
        )
    };
    let b = build(
        &[compose("b", 2, "8002"), compose("a", 1, "8001")],
        &defaults(),
        NOW,
    );
    assert_eq!(b.dynamic.http.routers.len(), 1);
    assert_eq!(b.dynamic.http.routers["web-shop"].rule, "Host(`web-shop`)");
    assert_eq!(
        urls(&b, "web-shop"),
        ["http://127.0.0.1:8001", "http://127.0.0.1:8002"]
    );
    let sources = &b.detail.services["web-shop"].sources;
    assert_eq!(sources.len(), 2);
    assert_eq!(sources[0].compose_project.as_deref(), Some("shop"));
    assert_eq!(
        sources[0].labels,
        ["traefik.http.services.web-shop.loadbalancer.server.port"]
    );
    // Each server is traced to the container that adds it.
    let traced: Vec<(&str, &[String])> = sources
        .iter()
        .map(|s| (s.container_id.as_str(), s.servers.as_slice()))
        .collect();
    assert_eq!(
        traced,
        [
            ("a", &["http://127.0.0.1:8001".to_owned()][..]),
            ("b", &["http://127.0.0.1:8002".to_owned()][..])
        ]
    );
    assert!(b.detail.routers["web-shop"].sources[0].servers.is_empty());
    assert!(b.detail.routers["web-shop"].warnings.is_empty());
}

#[test]
fn routers_bind_to_the_only_service_and_refuse_to_guess_among_several() {
    let one = host(
        "a",
        "one",
        1,
        &[
            ("traefik.enable", "true"),
            ("traefik.http.routers.r.rule", "Host(`r`)"),
            ("traefik.http.services.s.loadbalancer.server.port", "80"),
        ],
    );
    let several = host(
        "b",
        "several",
        2,
        &[
            ("traefik.enable", "true"),
            ("traefik.http.routers.x.rule", "Host(`x`)"),
            ("traefik.http.services.s1.loadbalancer.server.port", "81"),
            ("traefik.http.services.s2.loadbalancer.server.port", "82"),
        ],
    );
    let no_router = host(
        "c",
        "norouter",
        3,
        &[
            ("traefik.enable", "true"),
            ("traefik.http.services.t1.loadbalancer.server.port", "83"),
            ("traefik.http.services.t2.loadbalancer.server.port", "84"),
        ],
    );
    let b = build(&[one, several, no_router], &defaults(), NOW);
    assert_eq!(b.dynamic.http.routers["r"].service, "s");
    assert!(!b.dynamic.http.routers.contains_key("x"));
    let err = &b.detail.routers["x"].errors[0].to_string();
    assert!(
        err.contains("container `several`") && err.contains("several services (s1, s2)"),
        "{err}"
    );
    // No router is made up when there are several services.
    assert!(!b.dynamic.http.routers.contains_key("norouter"));
    assert!(b.dynamic.http.services.contains_key("t1"));
    assert!(
        record(&b, "norouter")
            .messages
            .iter()
            .any(|m| m.contains("no router"))
    );
}

#[test]
fn no_port_is_an_error_and_several_ports_take_the_lowest() {
    let none = host("a", "none", 1, &[("traefik.enable", "true")]);
    let mut several = host("b", "several", 2, &[("traefik.enable", "true")]);
    for port in [443, 80] {
        several.ports.push(PortView {
            port,
            proto: "tcp".into(),
            bindings: vec![],
        });
    }
    let mut one_tcp = host("c", "onetcp", 3, &[("traefik.enable", "true")]);
    for (port, proto) in [(53, "udp"), (8080, "tcp")] {
        one_tcp.ports.push(PortView {
            port,
            proto: proto.into(),
            bindings: vec![],
        });
    }
    let b = build(&[none, several, one_tcp], &defaults(), NOW);
    let r = record(&b, "none");
    assert_eq!(r.reason, Some(NotRouted::NoPort));
    assert!(!r.routed);
    // Several: the lowest, as Traefik does, and a warning that says so.
    let r = record(&b, "several");
    assert!(r.routed);
    assert_eq!(urls(&b, "several"), ["http://127.0.0.1:80"]);
    assert!(r.messages[0].contains("(80, 443)"), "{:?}", r.messages);
    let detail = &b.detail.services["several"];
    assert!(detail.errors.is_empty(), "{detail:?}");
    assert_eq!(
        detail.warnings[0].problem,
        Problem::PortChosen {
            port: 80,
            exposed: vec![80, 443],
            label: "traefik.http.services.several.loadbalancer.server.port".to_owned(),
        }
    );
    assert_eq!(urls(&b, "onetcp"), ["http://127.0.0.1:8080"]);
    assert!(record(&b, "onetcp").routed);
}

fn networked(networks: &[(&str, &str)], labels: &[(&str, &str)]) -> ContainerView {
    let mut all = vec![
        ("traefik.enable", "true"),
        ("traefik.http.services.s.loadbalancer.server.port", "80"),
    ];
    all.extend_from_slice(labels);
    let mut v = host("n", "net", 1, &all);
    v.network_mode = "default".into();
    v.networks = networks
        .iter()
        .map(|(n, ip)| ((*n).to_owned(), (*ip).to_owned()))
        .collect();
    v
}

#[test]
fn the_network_is_chosen_never_guessed() {
    let two = [("shop_front", "10.0.1.2"), ("shop_back", "10.0.2.2")];
    let compose = [("com.docker.compose.project", "shop")];
    let url = |b: &Built| b.dynamic.http.services.get("s").map(|_| urls(b, "s"));

    let b = build(&[networked(&two, &compose)], &defaults(), NOW);
    assert_eq!(url(&b), None);
    assert_eq!(record(&b, "net").reason, Some(NotRouted::AmbiguousNetwork));

    // By label, with or without the compose project prefix.
    for name in ["shop_back", "back"] {
        let mut labels = compose.to_vec();
        labels.push(("traefik.docker.network", name));
        let b = build(&[networked(&two, &labels)], &defaults(), NOW);
        assert_eq!(
            url(&b),
            Some(vec!["http://10.0.2.2:80".to_owned()]),
            "{name}"
        );
    }
    // By the provider's option; the label wins over it.
    let s = settings(|c| c.network = Some("front".into()));
    assert_eq!(
        url(&build(&[networked(&two, &compose)], &s, NOW)),
        Some(vec!["http://10.0.1.2:80".to_owned()])
    );
    let mut labels = compose.to_vec();
    labels.push(("traefik.docker.network", "back"));
    assert_eq!(
        url(&build(&[networked(&two, &labels)], &s, NOW)),
        Some(vec!["http://10.0.2.2:80".to_owned()])
    );
    // Not there: reported with the networks it has.
    let mut labels = compose.to_vec();
    labels.push(("traefik.docker.network", "db"));
    let b = build(&[networked(&two, &labels)], &defaults(), NOW);
    let r = record(&b, "net");
    assert_eq!(r.reason, Some(NotRouted::NetworkNotFound));
    assert!(r.messages[0].contains("shop_back, shop_front"), "{r:?}");
    // Shared with gangway's own container.
    let mut s = defaults();
    s.own_networks = vec!["shop_front".into(), "other".into()];
    assert_eq!(
        url(&build(&[networked(&two, &compose)], &s, NOW)),
        Some(vec!["http://10.0.1.2:80".to_owned()])
    );
    // One network: no choice to make. IPv6 in brackets.
    let b = build(&[networked(&[("v6", "fd00::2")], &[])], &defaults(), NOW);
    assert_eq!(url(&b), Some(vec!["http://[fd00::2]:80".to_owned()]));
    // Host networking: the host address.
    let s = settings(|c| c.host_address = "127.0.0.2".parse().unwrap());
    let v = host(
        "h",
        "h",
        1,
        &[
            ("traefik.enable", "true"),
            ("traefik.http.services.s.loadbalancer.server.port", "81"),
        ],
    );
    assert_eq!(urls(&build(&[v], &s, NOW), "s"), ["http://127.0.0.2:81"]);
}

#[test]
fn use_bind_port_ip_takes_the_published_address() {
    let mut v = networked(&[("bridge", "172.17.0.3")], &[]);
    v.ports.push(PortView {
        port: 80,
        proto: "tcp".into(),
        bindings: vec![("0.0.0.0".into(), 32768)],
    });
    let s = settings(|c| c.use_bind_port_ip = true);
    assert_eq!(
        urls(&build(&[v.clone()], &s, NOW), "s"),
        ["http://127.0.0.1:32768"]
    );
    v.ports[0].bindings[0].0 = "127.0.0.5".into();
    assert_eq!(
        urls(&build(&[v.clone()], &s, NOW), "s"),
        ["http://127.0.0.5:32768"]
    );
    // Without it, the container's own address.
    assert_eq!(
        urls(&build(&[v], &defaults(), NOW), "s"),
        ["http://172.17.0.3:80"]
    );
}

#[test]
fn which_containers_are_considered() {
    let plain = host(
        "a",
        "plain",
        1,
        &[("traefik.http.services.s.loadbalancer.server.port", "80")],
    );
    let off = host("b", "off", 2, &[("traefik.enable", "false")]);
    let only_enabled = settings(|c| c.exposed_by_default = Some(false));
    let b = build(&[plain.clone(), off.clone()], &only_enabled, NOW);
    assert!(b.dynamic.http.routers.is_empty());
    assert_eq!(record(&b, "plain").reason, Some(NotRouted::NotEnabled));
    assert!(record(&b, "plain").messages[0].contains("exposedByDefault is false"));
    assert!(record(&b, "off").messages[0].contains("`traefik.enable=false`"));

    // Not given: labelled containers are routed, bare ones are not.
    let bare = host("d", "bare", 4, &[("com.example.role", "db")]);
    let b = build(&[plain.clone(), off.clone(), bare], &defaults(), NOW);
    assert_eq!(b.dynamic.http.routers.keys().collect::<Vec<_>>(), ["plain"]);
    assert_eq!(record(&b, "bare").reason, Some(NotRouted::NotEnabled));
    assert!(
        record(&b, "bare").messages[0].contains("exposedByDefault is not given"),
        "{:?}",
        record(&b, "bare").messages
    );

    let exposed = settings(|c| c.exposed_by_default = Some(true));
    let b = build(&[plain.clone(), off], &exposed, NOW);
    assert!(b.dynamic.http.routers.contains_key("plain"));
    assert!(!b.dynamic.http.routers.contains_key("off"));

    let only_blue = settings(|c| {
        c.exposed_by_default = Some(true);
        c.constraints = Some("Label(`team`, `blue`)".into());
    });
    let blue = host(
        "c",
        "blue",
        3,
        &[
            ("team", "blue"),
            ("traefik.http.services.t.loadbalancer.server.port", "81"),
        ],
    );
    let b = build(&[plain, blue], &only_blue, NOW);
    assert_eq!(
        record(&b, "plain").reason,
        Some(NotRouted::ConstraintNotMet)
    );
    assert!(record(&b, "blue").routed);

    let oneoff = host(
        "d",
        "shop_web_run_1",
        4,
        &[
            ("traefik.enable", "true"),
            ("com.docker.compose.oneoff", "True"),
            ("traefik.http.services.s.loadbalancer.server.port", "80"),
        ],
    );
    let b = build(std::slice::from_ref(&oneoff), &defaults(), NOW);
    assert!(b.dynamic.http.services.is_empty());
    assert_eq!(record(&b, "shop_web_run_1").reason, Some(NotRouted::OneOff));
    let b = build(&[oneoff], &settings(|c| c.include_one_off = true), NOW);
    assert!(b.dynamic.http.services.contains_key("s"));

    let udp = host(
        "e",
        "udp",
        5,
        &[
            ("traefik.enable", "true"),
            ("traefik.udp.routers.u.service", "u"),
        ],
    );
    let b = build(&[udp], &defaults(), NOW);
    // A UDP router, and no HTTP one.
    assert!(b.dynamic.http.routers.is_empty());
    assert_eq!(b.dynamic.udp.routers["u"].service, "u");
}

#[test]
fn udp_labels_give_udp_objects_with_the_containers_udp_port() {
    let mut dns = host(
        "u1",
        "dns",
        5,
        &[
            ("traefik.enable", "true"),
            ("traefik.udp.routers.dns.entrypoints", "dns"),
        ],
    );
    // A TCP port beside the UDP one: the UDP service takes the UDP port.
    dns.ports = vec![
        PortView {
            port: 53,
            proto: "udp".into(),
            bindings: Vec::new(),
        },
        PortView {
            port: 8080,
            proto: "tcp".into(),
            bindings: Vec::new(),
        },
    ];
    let b = build(&[dns], &defaults(), NOW);
    assert!(b.dynamic.http.routers.is_empty());
    assert_eq!(b.dynamic.udp.routers["dns"].service, "dns");
    assert_eq!(b.dynamic.udp.routers["dns"].entry_points, ["dns"]);
    let servers: Vec<&str> = b.dynamic.udp.services["dns"]
        .load_balancer
        .as_ref()
        .map(|lb| lb.servers.iter().map(|s| s.address.as_str()).collect())
        .unwrap_or_default();
    assert_eq!(servers, ["127.0.0.1:53"]);
    assert!(record(&b, "dns").routed);
}

#[test]
fn tcp_labels_give_tcp_objects_only_with_the_containers_server() {
    let mut db = host(
        "d1",
        "db",
        5,
        &[
            ("traefik.enable", "true"),
            ("traefik.tcp.routers.db.rule", "HostSNI(`*`)"),
            ("traefik.tcp.routers.db.entrypoints", "pg"),
        ],
    );
    db.ports = vec![PortView {
        port: 5432,
        proto: "tcp".into(),
        bindings: Vec::new(),
    }];
    let mut replica = db.clone();
    replica.id = "d2".into();
    replica.name = "db-2".into();
    replica.labels.insert(
        "traefik.tcp.services.db.loadbalancer.server.port".into(),
        "5433".into(),
    );
    let b = build(&[db.clone()], &defaults(), NOW);
    // No HTTP router or service: the container asked for TCP only.
    assert!(b.dynamic.http.routers.is_empty() && b.dynamic.http.services.is_empty());
    let router = &b.dynamic.tcp.routers["db"];
    assert_eq!(router.service, "db");
    let servers = |b: &Built, service: &str| -> Vec<String> {
        b.dynamic.tcp.services[service]
            .load_balancer
            .as_ref()
            .map(|lb| lb.servers.iter().map(|s| s.address.clone()).collect())
            .unwrap_or_default()
    };
    assert_eq!(servers(&b, "db"), ["127.0.0.1:5432"]);
    assert!(record(&b, "db").routed);

    // A router without a rule is left out, saying why.
    let mut no_rule = db.clone();
    no_rule
        .labels
        .insert("traefik.tcp.routers.db.rule".into(), String::new());
    let b = build(&[no_rule], &defaults(), NOW);
    assert!(b.dynamic.tcp.routers.is_empty());
    let e = &b.detail.tcp_routers["db"].errors[0];
    assert_eq!(e.object, ObjectRef::new(ObjectKind::TcpRouter, "db@docker"));
    assert!(e.to_string().contains("no default rule"), "{e}");

    // Two containers defining the same named service join their servers.
    let mut first = db;
    first.labels.insert(
        "traefik.tcp.services.db.loadbalancer.server.port".into(),
        "5432".into(),
    );
    let b = build(&[first, replica], &defaults(), NOW);
    assert_eq!(servers(&b, "db"), ["127.0.0.1:5432", "127.0.0.1:5433"]);
}

fn app(id: &str, created: i128, port: &str) -> ContainerView {
    host(
        id,
        id,
        created,
        &[
            ("traefik.enable", "true"),
            ("traefik.http.routers.app.rule", "Host(`app`)"),
            ("traefik.http.services.app.loadbalancer.server.port", port),
        ],
    )
}

#[test]
fn known_but_down_keeps_routers_without_servers_for_the_grace_period() {
    let mut down = app("old", 1, "8001");
    down.state = RunState::Exited;
    down.down_since_ms = Some(NOW - 5_000);
    let b = build(&[down.clone()], &defaults(), NOW);
    assert_eq!(b.dynamic.http.routers["app"].service, "app");
    assert!(urls(&b, "app").is_empty());
    assert_eq!(b.next_change_ms, Some(NOW - 5_000 + 30_000));
    let r = record(&b, "old");
    assert_eq!((r.routed, r.reason), (false, Some(NotRouted::Stopped)));
    assert!(r.messages[0].contains("answer 503"), "{r:?}");

    // After the grace period: gone.
    let b = build(&[down.clone()], &defaults(), NOW + 26_000);
    assert!(b.dynamic.http.routers.is_empty());
    assert_eq!(b.next_change_ms, None);
    assert_eq!(record(&b, "old").reason, Some(NotRouted::Stopped));

    // A grace period of zero: gone at once.
    let b = build(
        &[down],
        &settings(|c| c.down_grace_period = crate::config::Duration::ZERO),
        NOW,
    );
    assert!(b.dynamic.http.routers.is_empty());

    // Unhealthy, starting, paused, restarting, draining and removed alike.
    for (state, health, draining, reason) in [
        (
            RunState::Running,
            Some(Health::Unhealthy),
            false,
            NotRouted::Unhealthy,
        ),
        (
            RunState::Running,
            Some(Health::Starting),
            false,
            NotRouted::Starting,
        ),
        (RunState::Paused, None, false, NotRouted::Paused),
        (RunState::Restarting, None, false, NotRouted::Restarting),
        (RunState::Running, None, true, NotRouted::Draining),
        (RunState::Removed, None, false, NotRouted::Removed),
    ] {
        let mut v = app("x", 1, "8001");
        v.state = state;
        v.health = health;
        v.draining = draining;
        v.down_since_ms = Some(NOW);
        let b = build(&[v], &defaults(), NOW);
        assert!(urls(&b, "app").is_empty(), "{reason:?}");
        assert_eq!(record(&b, "x").reason, Some(reason));
    }

    // Healthy again: back, with its server.
    let mut v = app("x", 1, "8001");
    v.health = Some(Health::Healthy);
    assert_eq!(
        urls(&build(&[v], &defaults(), NOW), "app"),
        ["http://127.0.0.1:8001"]
    );
}

#[test]
fn allow_empty_services_and_allownonrunning_keep_routers_for_good() {
    let mut sick = app("sick", 1, "8001");
    sick.health = Some(Health::Unhealthy);
    sick.down_since_ms = Some(0);
    let b = build(&[sick.clone()], &defaults(), NOW);
    assert!(b.dynamic.http.routers.is_empty());
    let b = build(&[sick], &settings(|c| c.allow_empty_services = true), NOW);
    assert!(urls(&b, "app").is_empty());
    assert_eq!(b.next_change_ms, None);

    let mut stopped = host(
        "s",
        "s",
        1,
        &[
            ("traefik.enable", "true"),
            ("traefik.docker.allownonrunning", "true"),
            ("traefik.http.routers.app.rule", "Host(`app`)"),
            ("traefik.http.services.app.loadbalancer.server.port", "80"),
        ],
    );
    stopped.state = RunState::Exited;
    stopped.down_since_ms = Some(0);
    let b = build(&[stopped], &defaults(), NOW);
    assert!(b.dynamic.http.routers.contains_key("app"));
}

#[test]
fn a_redeploy_serves_from_both_then_the_new_one() {
    let old = app("old", 1, "8001");
    let mut new = app("new", 2, "8002");
    new.health = Some(Health::Starting);
    new.down_since_ms = Some(NOW);
    let b = build(&[old.clone(), new.clone()], &defaults(), NOW);
    assert_eq!(urls(&b, "app"), ["http://127.0.0.1:8001"]);
    new.health = Some(Health::Healthy);
    new.down_since_ms = None;
    let b = build(&[old.clone(), new.clone()], &defaults(), NOW);
    assert_eq!(
        urls(&b, "app"),
        ["http://127.0.0.1:8001", "http://127.0.0.1:8002"]
    );
    let mut old = old;
    old.draining = true;
    old.down_since_ms = Some(NOW);
    let b = build(&[old, new], &defaults(), NOW);
    assert_eq!(urls(&b, "app"), ["http://127.0.0.1:8002"]);
}

fn defines_app(id: &str, created: i128, rule: &str) -> ContainerView {
    host(
        id,
        id,
        created,
        &[
            ("traefik.enable", "true"),
            ("traefik.http.routers.app.rule", rule),
            ("traefik.http.routers.app.service", id),
            ("traefik.http.services.app.loadbalancer.server.port", "80"),
        ],
    )
}

#[test]
fn conflicts_keep_the_oldest_and_say_so() {
    let older = defines_app("first", 1, "Host(`a`)");
    let newer = defines_app("second", 2, "Host(`b`)");
    let b = build(&[newer.clone(), older.clone()], &defaults(), NOW);
    let r = &b.dynamic.http.routers["app"];
    assert_eq!(
        (r.rule.as_str(), r.service.as_str()),
        ("Host(`a`)", "first")
    );
    let d = &b.detail.routers["app"];
    assert_eq!(d.sources.len(), 2);
    assert_eq!(d.sources[0].container_name, "first");
    assert_eq!(d.warnings.len(), 1);
    assert_eq!(
        d.warnings[0].problem,
        Problem::Conflict {
            kept: "first".into(),
            other: "second".into(),
            dropped: false
        }
    );
    assert!(d.warnings[0].to_string().contains("oldest"), "{d:?}");
    // The service `app` is defined the same way by both: one service, two servers.
    assert!(b.detail.services["app"].warnings.is_empty());

    // Traefik's way: both gone.
    let drop = settings(|c| c.conflicts = ConflictPolicy::Drop);
    let b = build(&[newer, older], &drop, NOW);
    assert!(!b.dynamic.http.routers.contains_key("app"));
    assert!(
        b.detail.routers["app"].errors[0]
            .to_string()
            .contains("conflicts=drop")
    );
}

#[test]
fn conflicting_services_keep_the_oldest_servers_only() {
    let a = host(
        "a",
        "a",
        1,
        &[
            ("traefik.enable", "true"),
            ("traefik.http.services.s.loadbalancer.server.port", "81"),
            (
                "traefik.http.services.s.loadbalancer.passhostheader",
                "false",
            ),
        ],
    );
    let b_ = host(
        "b",
        "b",
        2,
        &[
            ("traefik.enable", "true"),
            ("traefik.http.services.s.loadbalancer.server.port", "82"),
        ],
    );
    let b = build(&[a, b_], &defaults(), NOW);
    assert_eq!(urls(&b, "s"), ["http://127.0.0.1:81"]);
    assert!(record(&b, "a").routed);
    let r = record(&b, "b");
    assert_eq!((r.routed, r.reason), (false, Some(NotRouted::Conflict)));
}

#[test]
fn a_stopped_containers_old_definition_does_not_compete() {
    let mut stopped = defines_app("stopped", 1, "Host(`old`)");
    stopped.state = RunState::Exited;
    stopped.down_since_ms = Some(NOW);
    let running = defines_app("running", 2, "Host(`new`)");
    let b = build(&[stopped, running], &defaults(), NOW);
    assert_eq!(b.dynamic.http.routers["app"].rule, "Host(`new`)");
    assert!(b.detail.routers["app"].warnings.is_empty());
}

#[test]
fn a_label_error_disables_one_object_and_names_container_and_label() {
    let bad = host(
        "bad",
        "bad",
        1,
        &[
            ("traefik.enable", "true"),
            ("traefik.http.routers.broken.rul", "Host(`x`)"),
            ("traefik.http.routers.fine.rule", "Host(`fine`)"),
            ("traefik.http.services.svc.loadbalancer.server.port", "80"),
        ],
    );
    let other = app("other", 2, "81");
    let b = build(&[bad, other], &defaults(), NOW);
    assert!(b.dynamic.http.routers.contains_key("fine"));
    assert!(b.dynamic.http.routers.contains_key("app"));
    assert!(!b.dynamic.http.routers.contains_key("broken"));
    let e = &b.detail.routers["broken"].errors[0];
    assert_eq!(
        e.object,
        ObjectRef::new(ObjectKind::Router, "broken@docker")
    );
    assert!(
        matches!(&e.origin, Some(Origin::Container { name, label: Some(label), .. })
            if name == "bad" && label == "traefik.http.routers.broken.rul"),
        "{e:?}"
    );
    assert_eq!(
        e.problem,
        Problem::UnknownOption {
            option: "rul".into(),
            suggestion: Some("rule".into())
        }
    );
    assert_eq!(
        e.to_string(),
        "container `bad`: label `traefik.http.routers.broken.rul`: unknown option `rul` (did you mean `rule`?)"
    );
    assert_eq!(
        b.detail.routers["broken"].sources[0].labels,
        ["traefik.http.routers.broken.rul"]
    );
    // What its labels say is kept, for the API to show instead of defaults.
    assert_eq!(
        b.detail.routers["broken"].read,
        Some(serde_json::json!({ "rul": "Host(`x`)" }))
    );
    assert!(b.detail.routers["fine"].read.is_none());
    let r = record(&b, "bad");
    assert!(r.routed);
    assert!(
        r.messages
            .iter()
            .any(|m| m.contains("unknown option `rul`"))
    );

    // Another container's good definition of the name stays; the error is a warning on it.
    let broken_app = host(
        "z",
        "z",
        3,
        &[
            ("traefik.enable", "true"),
            ("traefik.http.routers.app.priority", "high"),
        ],
    );
    let b = build(&[app("other", 2, "81"), broken_app], &defaults(), NOW);
    assert!(b.dynamic.http.routers.contains_key("app"));
    let d = &b.detail.routers["app"];
    assert!(
        d.errors.is_empty() && d.warnings[0].to_string().contains("container `z`"),
        "{d:?}"
    );
}

#[test]
fn the_default_rule_template_knows_compose_and_the_domain() {
    let s = settings(|c| {
        c.default_rule = "Host(`{{ .Service }}.{{ .Domain }}`)".into();
        c.domain = Some("example.com".into());
    });
    let v = host(
        "a",
        "shop_api_1",
        1,
        &[
            ("traefik.enable", "true"),
            ("com.docker.compose.project", "shop"),
            ("com.docker.compose.service", "api"),
            (
                "traefik.http.services.api-shop.loadbalancer.server.port",
                "80",
            ),
        ],
    );
    let b = build(&[v], &s, NOW);
    assert_eq!(
        b.dynamic.http.routers["api-shop"].rule,
        "Host(`api.example.com`)"
    );
    // A parenthesised pipeline, as written in real setups.
    let s = settings(|c| {
        c.default_rule = "Host(`{{ lower (trimPrefix `/` .Name )}}.example.com`)".into();
    });
    let v = host(
        "c",
        "Blog",
        1,
        &[
            ("traefik.enable", "true"),
            ("traefik.http.services.blog.loadbalancer.server.port", "80"),
        ],
    );
    let b = build(&[v], &s, NOW);
    let rules: Vec<&str> = b
        .dynamic
        .http
        .routers
        .values()
        .map(|r| r.rule.as_str())
        .collect();
    assert_eq!(rules, ["Host(`blog.example.com`)"], "{:?}", b.detail);
    // An empty result is an error on that router.
    let s = settings(|c| c.default_rule = "{{ .Project }}".into());
    let v = host(
        "b",
        "b",
        1,
        &[
            ("traefik.enable", "true"),
            ("traefik.http.services.s.loadbalancer.server.port", "80"),
        ],
    );
    let b = build(&[v], &s, NOW);
    assert!(
        b.detail.routers["b"].errors[0]
            .to_string()
            .contains("comes out empty")
    );
}

#[test]
fn output_is_deterministic_whatever_the_input_order() {
    let views = vec![
        app("c", 3, "83"),
        app("a", 1, "81"),
        defines_app("b", 2, "Host(`b`)"),
        host("d", "d", 4, &[("traefik.enable", "true")]),
    ];
    let first = build(&views, &defaults(), NOW);
    let mut reversed = views;
    reversed.reverse();
    assert_eq!(first, build(&reversed, &defaults(), NOW));
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn arbitrary_containers_never_panic(
            containers in proptest::collection::vec(
                (
                    proptest::collection::btree_map(
                        prop_oneof![
                            Just("traefik.enable".to_owned()),
                            Just("traefik.http.routers.r.rule".to_owned()),
                            Just("traefik.http.routers.r.service".to_owned()),
                            Just("traefik.http.services.s.loadbalancer.server.port".to_owned()),
                            Just("traefik.http.services.s.loadbalancer.server.url".to_owned()),
                            Just("traefik.docker.network".to_owned()),
                            Just("com.docker.compose.project".to_owned()),
                            Just("com.docker.compose.service".to_owned()),
                            "traefik\\.[a-z.\\[\\]0-9]{0,30}",
                        ],
                        prop_oneof![Just("true".to_owned()), Just("80".to_owned()), ".{0,10}"],
                        0..8,
                    ),
                    0u8..6,
                    proptest::option::of(0u64..2_000_000_000_000),
                ),
                0..6,
            )
        ) {
            let views: Vec<ContainerView> = containers
                .into_iter()
                .enumerate()
                .map(|(i, (labels, state, down))| {
                    let mut v = ContainerView::running(&format!("id{i}"), &format!("c{i}"), &[]);
                    v.labels = labels;
                    v.state = [RunState::Running, RunState::Exited, RunState::Paused, RunState::Removed, RunState::Created, RunState::Dead][usize::from(state)];
                    v.down_since_ms = down;
                    v.network_mode = if i % 2 == 0 { "host".into() } else { "bridge".into() };
                    v
                })
                .collect();
            let b = build(&views, &settings(|c| c.exposed_by_default = Some(true)), NOW);
            prop_assert_eq!(b.detail.containers.len(), views.len());
        }
    }
}

#[test]
fn tcp_and_udp_routers_refuse_to_guess_among_several_services_and_name_the_label() {
    let labels = [
        ("traefik.enable", "true"),
        ("traefik.tcp.routers.db.rule", "HostSNI(`*`)"),
        ("traefik.tcp.services.a.loadbalancer.server.port", "5432"),
        ("traefik.tcp.services.b.loadbalancer.server.port", "5433"),
        ("traefik.udp.routers.dns.entrypoints", "dns"),
        ("traefik.udp.services.x.loadbalancer.server.port", "53"),
        ("traefik.udp.services.y.loadbalancer.server.port", "54"),
    ];
    let b = build(&[host("m1", "multi", 5, &labels)], &defaults(), NOW);
    assert!(b.dynamic.tcp.routers.is_empty() && b.dynamic.udp.routers.is_empty());
    for (errors, want) in [
        (
            &b.detail.tcp_routers["db"].errors,
            "several TCP services (a, b); set `traefik.tcp.routers.db.service`",
        ),
        (
            &b.detail.udp_routers["dns"].errors,
            "several UDP services (x, y); set `traefik.udp.routers.dns.service`",
        ),
    ] {
        assert!(errors[0].to_string().contains(want), "{errors:?}");
    }
    // The services themselves are there, each with the container's server.
    assert_eq!(b.dynamic.tcp.services.len(), 2);
    assert_eq!(b.dynamic.udp.services.len(), 2);

    // A UDP router on a container with no UDP port: its implicit service
    // is out, saying which label to set.
    let b = build(
        &[host(
            "m2",
            "noport",
            5,
            &[
                ("traefik.enable", "true"),
                ("traefik.udp.routers.u.entrypoints", "dns"),
            ],
        )],
        &defaults(),
        NOW,
    );
    let e = &b.detail.udp_services["noport"].errors[0];
    assert!(
        e.to_string()
            .contains("traefik.udp.services.noport.loadbalancer.server.port"),
        "{e}"
    );
    assert!(!record(&b, "noport").routed);
}

#[test]
fn a_container_without_a_label_of_the_prefix_asks_for_nothing() {
    let quiet = host(
        "q",
        "gangway",
        1,
        &[("com.docker.compose.service", "gangway")],
    );
    let off = host("o", "db", 2, &[("Traefik.enable", "false")]);
    let other = host("x", "other", 3, &[("traefikfoo.enable", "true")]);
    let b = build(
        &[quiet, off, other],
        &settings(|c| c.exposed_by_default = Some(false)),
        NOW,
    );
    let quiet = record(&b, "gangway");
    assert!(!quiet.routed && quiet.unlabelled, "{quiet:?}");
    // A label of the prefix, in any case, asks for something: even
    // `enable=false` is a choice to show.
    assert!(!record(&b, "db").unlabelled);
    // Another prefix that only starts like it is not one of its labels.
    assert!(record(&b, "other").unlabelled);
}
