//! Renewal information (ARI, RFC 9773) and ACME profiles. Debian's pebble
//! 2.4 has neither, and no ACME server with them can be installed here, so
//! these tests put a small test double in front of a real pebble
//! (tests/it/support/ari.rs, written from RFC 9773 and the profiles draft): it
//! adds `renewalInfo` and `meta.profiles` to pebble's directory, answers
//! renewal windows the test chooses and logs what it sees; every account,
//! order, validation and certificate is still pebble's.

use crate::support;

use std::time::Duration;
use support::ari::{AriDouble, Suggest};
use support::pebble::{self, Pebble};
use support::tls::{TlsClient, TlsGot};
use support::{Backend, Gangway, eventually, free_port};

const ISSUE: Duration = Duration::from_secs(90);
const DAY: i64 = 86400;

/// A window a month ahead, asked again after `retry_after` seconds.
fn later(retry_after: u64) -> Suggest {
    Suggest {
        start: 30 * DAY,
        end: 31 * DAY,
        retry_after,
    }
}

struct Setup {
    web: u16,
    tls: u16,
    storage: tempfile::TempDir,
    pebble: Pebble,
    double: AriDouble,
}

impl Setup {
    async fn new(usual: Suggest) -> Setup {
        let (web, tls) = (free_port(), free_port());
        let pebble = Pebble::start(web, tls, None).await;
        let api_ca = std::fs::read(&pebble.api_ca).unwrap();
        let double = AriDouble::start(&pebble.directory, &api_ca, usual).await;
        Setup {
            web,
            tls,
            storage: tempfile::tempdir().unwrap(),
            pebble,
            double,
        }
    }

    /// Flags for resolver `name` on the double, with `options` below
    /// `certificatesResolvers.<name>.acme.`.
    fn resolver(&self, name: &str, options: &[&str]) -> Vec<String> {
        let mut flags = vec![
            format!(
                "--certificatesResolvers.{name}.acme.caServer={}",
                self.double.directory
            ),
            format!(
                "--certificatesResolvers.{name}.acme.caCertificates={},{}",
                self.double.ca_file.display(),
                self.pebble.api_ca.display()
            ),
            format!(
                "--certificatesResolvers.{name}.acme.storage={}",
                self.storage.path().join(name).display()
            ),
        ];
        flags.extend(
            options
                .iter()
                .map(|o| format!("--certificatesResolvers.{name}.acme.{o}")),
        );
        flags
    }

    /// Flags for resolver `le` on the double keeping its account and
    /// certificates in `store` (a store URL), answering HTTP-01.
    fn shared(&self, store: &str) -> Vec<String> {
        let mut flags = self.resolver(
            "le",
            &[&format!("storage={store}"), "httpChallenge.entryPoint=web"],
        );
        // The folder storage `resolver` names is replaced by the store.
        flags.remove(2);
        flags
    }

    /// gangway routing `hosts` (name, resolver) to a backend it returns too.
    async fn gangway(&self, hosts: &[(&str, &str)], flags: Vec<String>) -> (Gangway, Backend) {
        self.gangway_on(self.web, self.tls, hosts, flags).await
    }

    /// As `gangway`, with its plain and TLS entry points on `web`, `tls`.
    async fn gangway_on(
        &self,
        web: u16,
        tls: u16,
        hosts: &[(&str, &str)],
        mut flags: Vec<String>,
    ) -> (Gangway, Backend) {
        let app = Backend::echo("app").await;
        let mut dynamic = format!(
            "[http.services.app.loadBalancer]\n[[http.services.app.loadBalancer.servers]]\nurl = \"{}\"\n\
             [http.routers.gw]\nrule = \"Host(`gw.test`)\"\nservice = \"api@internal\"\n",
            app.url()
        );
        for (i, (host, resolver)) in hosts.iter().enumerate() {
            dynamic.push_str(&format!(
                "[http.routers.r{i}]\nrule = \"Host(`{host}`)\"\nservice = \"app\"\n[http.routers.r{i}.tls]\ncertResolver = \"{resolver}\"\n"
            ));
        }
        flags.push(format!("--entryPoints.websecure.address=127.0.0.1:{tls}"));
        flags.push("--api=true".to_owned());
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        (Gangway::with_file_on(web, &dynamic, &flags).await, app)
    }

    /// The leaf served for `host`, once one chaining to pebble is.
    async fn served(&self, host: &str, not_serial: Option<&str>) -> TlsGot {
        self.served_on(self.tls, host, not_serial).await
    }

    /// The leaf served for `host` on port `tls`, once one chaining to
    /// pebble is (and, with `not_serial`, another than that one).
    async fn served_on(&self, tls: u16, host: &str, not_serial: Option<&str>) -> TlsGot {
        let client = TlsClient::trusting(&self.pebble.issuing_root().await);
        eventually(ISSUE, &format!("a pebble certificate for {host}"), || {
            let client = client.clone();
            async move {
                client
                    .get(tls, host, None, "/", true)
                    .await
                    .is_ok_and(|g| g.status == 200 && Some(g.serial().as_str()) != not_serial)
            }
        })
        .await;
        client.get(tls, host, None, "/", true).await.unwrap()
    }
}

/// The certificate whose main name is `host` in `/api/tls/certificates`.
async fn certificate(gw: &Gangway, host: &str) -> serde_json::Value {
    let all: serde_json::Value =
        serde_json::from_slice(&gw.get("gw.test", "/api/tls/certificates").await.body).unwrap();
    all.as_array()
        .and_then(|a| a.iter().find(|c| c["domains"][0] == host).cloned())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_window_in_the_past_renews_with_replaces_and_retry_after_is_honoured() {
    if !pebble::available("a_window_in_the_past_renews_with_replaces") {
        return;
    }
    let setup = Setup::new(later(3)).await;
    let (gw, _app) = setup
        .gangway(&[("ari.test", "le")], setup.resolver("le", &[]))
        .await;
    let first = setup.served("ari.test", None).await;
    let id = support::ari::cert_id(&first.leaf);
    // The window is asked for, and asked again only once Retry-After
    // (3 s) has passed.
    eventually(
        Duration::from_secs(30),
        "two renewal-information requests",
        || async { setup.double.fetches(&id).len() >= 2 },
    )
    .await;
    let fetches = setup.double.fetches(&id);
    for pair in fetches.windows(2) {
        assert!(
            pair[1].duration_since(pair[0]) >= Duration::from_secs(3),
            "asked again before Retry-After: {fetches:?}"
        );
    }
    let seen = certificate(&gw, "ari.test").await;
    assert_eq!(seen["renewalReason"], "ari", "{seen}");
    assert_eq!(seen["renewalWindow"]["certId"], id.as_str(), "{seen}");
    let renew_at = seen["renewalWindow"]["renewAt"].as_i64().unwrap();
    let (start, end) = (
        seen["renewalWindow"]["start"].as_i64().unwrap(),
        seen["renewalWindow"]["end"].as_i64().unwrap(),
    );
    assert!((start..=end).contains(&renew_at), "{seen}");
    assert_eq!(seen["nextAttempt"].as_i64(), Some(renew_at), "{seen}");
    assert_eq!(
        setup.double.orders(),
        [(None, None)],
        "the first order replaces nothing"
    );

    // The CA asks for this certificate to be renewed now (an incident).
    setup.double.urge(
        &id,
        Suggest {
            start: -2 * DAY,
            end: -DAY,
            retry_after: 3,
        },
    );
    let second = setup.served("ari.test", Some(&first.serial())).await;
    assert_ne!(second.serial(), first.serial());
    let orders = setup.double.orders();
    assert_eq!(orders.len(), 2, "{orders:?}");
    assert_eq!(orders[1].0.as_deref(), Some(id.as_str()), "{orders:?}");
}

#[tokio::test]
async fn the_profile_is_asked_for_and_one_the_ca_does_not_offer_is_refused() {
    if !pebble::available("the_profile_is_asked_for") {
        return;
    }
    let setup = Setup::new(later(3600)).await;
    let mut flags = setup.resolver("short", &["profile=shortlived"]);
    flags.extend(setup.resolver("long", &["profile=tenyear"]));
    // The internal entry point on a port of its own, for the dashboard.
    let internal = support::free_port();
    flags.push(format!(
        "--entryPoints.gangway.address=127.0.0.1:{internal}"
    ));
    flags.push("--api.insecure=true".to_owned());
    let (gw, _app) = setup
        .gangway(&[("short.test", "short"), ("long.test", "long")], flags)
        .await;
    setup.served("short.test", None).await;
    assert!(
        setup
            .double
            .orders()
            .contains(&(None, Some("shortlived".to_owned()))),
        "{:?}",
        setup.double.orders()
    );
    assert_eq!(
        certificate(&gw, "short.test").await["profile"],
        "shortlived"
    );
    eventually(Duration::from_secs(30), "the refused profile", || async {
        certificate(&gw, "long.test").await["lastError"]
            .as_str()
            .is_some_and(|e| {
                e.contains(
                    "the CA does not offer profile `tenyear` (it offers: classic, shortlived)",
                )
            })
    })
    .await;
    assert!(
        !setup
            .double
            .orders()
            .iter()
            .any(|(_, p)| p.as_deref() == Some("tenyear"))
    );
    // The dashboard says the same: the profile, and the next renewal at a
    // point of the CA's window.
    support::browser::drive(
        "the_profile_is_asked_for_and_one_the_ca_does_not_offer_is_refused",
        "certificates.mjs",
        &format!("http://127.0.0.1:{internal}"),
        &[
            ("DOMAIN", "short.test"),
            ("PROFILE", "shortlived"),
            ("REFUSED", "long.test"),
        ],
    )
    .await;
}

#[tokio::test]
async fn two_instances_sharing_redis_make_one_ari_driven_renewal() {
    const T: &str = "two_instances_sharing_redis_make_one_ari_driven_renewal";
    if !pebble::available(T) {
        return;
    }
    let Some(redis) = support::kv::Redis::start(T, true).await else {
        return;
    };
    let setup = Setup::new(later(2)).await;
    let store = format!("redis://127.0.0.1:{}/0", redis.port);
    // pebble validates HTTP-01 on one port, instance B's; A orders or
    // not, the store carries the answer.
    let (a_tls, b_tls) = (free_port(), free_port());
    let hosts = [("ari.test", "le")];
    let (_a, _app_a) = setup
        .gangway_on(free_port(), a_tls, &hosts, setup.shared(&store))
        .await;
    let (_b, _app_b) = setup
        .gangway_on(setup.web, b_tls, &hosts, setup.shared(&store))
        .await;
    let first = setup.served_on(a_tls, "ari.test", None).await;
    assert_eq!(
        setup.served_on(b_tls, "ari.test", None).await.serial(),
        first.serial()
    );
    let id = support::ari::cert_id(&first.leaf);
    setup.double.urge(
        &id,
        Suggest {
            start: -2 * DAY,
            end: -DAY,
            retry_after: 2,
        },
    );
    let renewed = setup
        .served_on(a_tls, "ari.test", Some(&first.serial()))
        .await;
    assert_eq!(
        setup
            .served_on(b_tls, "ari.test", Some(&first.serial()))
            .await
            .serial(),
        renewed.serial()
    );
    // Both instances saw the urgent window; one ordered.
    let orders = setup.double.orders();
    assert_eq!(orders.len(), 2, "{orders:?}");
    assert_eq!(orders[1].0.as_deref(), Some(id.as_str()), "{orders:?}");
}
