//! The Redis provider through Redis Sentinel: two redis-servers (a master
//! and its replica) and a sentinel, all started here. gangway finds the
//! master through the sentinel, routes its keys, and after a failover to
//! the replica follows the new master's changes.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;
use support::kv::{API, answer, route_keys};
use support::{Backend, Gangway, free_port};

const INSTALLER: &str = "scripts/ci/servers-up";
/// A failover takes the sentinel a few seconds; routing follows soon after.
const FAILOVER: Duration = Duration::from_secs(30);

/// One redis-server (or sentinel) process with its log, killed when dropped.
struct Server {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn cli(cli: &Path, port: u16, args: &[&str]) -> String {
    let out = Command::new(cli)
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .output()
        .expect("redis-cli");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Starts `server` with `args` on a free port (tried three times) and
/// waits for it to answer PING; panics with its log otherwise.
async fn start(
    server: &Path,
    cli_path: &Path,
    dir: &Path,
    what: &str,
    args: &dyn Fn(u16) -> Vec<String>,
) -> Server {
    let mut logs = String::new();
    for _ in 0..3 {
        let port = free_port();
        let log = dir.join(format!("{what}-{port}.log"));
        let child = Command::new(server)
            .args(args(port))
            .args(["--logfile", &log.display().to_string()])
            .spawn()
            .expect("start redis-server");
        let mut s = Server { child, port, log };
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while std::time::Instant::now() < deadline {
            if cli(cli_path, port, &["ping"]).starts_with("PONG") {
                return s;
            }
            if s.child.try_wait().ok().flatten().is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        logs.push_str(&std::fs::read_to_string(&s.log).unwrap_or_default());
        drop(s);
    }
    panic!("{what} did not start:\n{logs}");
}

fn print_logs(servers: &[&Server]) {
    for s in servers {
        eprintln!(
            "--- {} ---\n{}",
            s.log.display(),
            std::fs::read_to_string(&s.log).unwrap_or_default()
        );
    }
}

#[tokio::test]
async fn the_master_is_found_through_sentinel_and_followed_across_a_failover() {
    let test = "the_master_is_found_through_sentinel_and_followed_across_a_failover";
    let Some(server) = support::program(test, &["redis-server"], INSTALLER) else {
        return;
    };
    let Some(cli_path) = support::program(test, &["redis-cli"], INSTALLER) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let common = |port: u16| {
        vec![
            "--port".to_owned(),
            port.to_string(),
            "--bind".to_owned(),
            "127.0.0.1".to_owned(),
            "--save".to_owned(),
            String::new(),
            "--appendonly".to_owned(),
            "no".to_owned(),
            "--notify-keyspace-events".to_owned(),
            "KA".to_owned(),
            "--dir".to_owned(),
            dir.path().display().to_string(),
        ]
    };
    let master = start(&server, &cli_path, dir.path(), "master", &common).await;
    let master_port = master.port;
    let replica = start(&server, &cli_path, dir.path(), "replica", &|port| {
        let mut args = common(port);
        args.extend([
            "--replicaof".to_owned(),
            "127.0.0.1".to_owned(),
            master_port.to_string(),
        ]);
        args
    })
    .await;
    // Debian's redis-sentinel is redis-server in sentinel mode.
    let sentinel = start(&server, &cli_path, dir.path(), "sentinel", &|port| {
        let conf = dir.path().join(format!("sentinel-{port}.conf"));
        std::fs::write(
            &conf,
            format!(
                "port {port}\nbind 127.0.0.1\nsentinel monitor mymaster 127.0.0.1 {master_port} 1\n\
                 sentinel down-after-milliseconds mymaster 1000\nsentinel failover-timeout mymaster 5000\n"
            ),
        )
        .unwrap();
        vec![conf.display().to_string(), "--sentinel".to_owned()]
    })
    .await;

    let a = Backend::echo("a").await;
    let b = Backend::echo("b").await;
    for (key, value) in route_keys("traefik", "app", "app.test", &a.url()) {
        cli(&cli_path, master_port, &["SET", &key, &value]);
    }
    let gw = Gangway::with_file_env(
        API,
        &[
            &format!("--providers.redis.endpoints=127.0.0.1:{}", sentinel.port),
            "--providers.redis.sentinel.masterName=mymaster",
            "--providers.redis.rootKey=traefik",
            "--api=true",
        ],
        &[("RUST_LOG", "info")],
    )
    .await;
    let found = support::within(FAILOVER, || async {
        answer(&gw, "app.test")
            .await
            .is_some_and(|(who, _)| who == "a")
    })
    .await;
    if !found {
        print_logs(&[&master, &replica, &sentinel]);
        panic!("the route from the master never answered:\n{}", gw.log());
    }
    assert!(
        gw.log_line("connected through Redis Sentinel")
            .is_some_and(|l| l.contains(&format!("127.0.0.1:{master_port}"))),
        "{}",
        gw.log()
    );

    // The replica holds the keys before the master goes away.
    let synced = support::within(FAILOVER, || async {
        cli(
            &cli_path,
            replica.port,
            &["GET", "traefik/http/routers/app/rule"],
        )
        .contains("app.test")
    })
    .await;
    if !synced {
        print_logs(&[&master, &replica]);
        panic!("the replica never caught up with the master");
    }
    // The master goes away; the sentinel promotes the replica.
    drop(master);
    cli(
        &cli_path,
        sentinel.port,
        &["SENTINEL", "FAILOVER", "mymaster"],
    );
    let promoted = support::within(FAILOVER, || async {
        cli(&cli_path, replica.port, &["ROLE"]).starts_with("master")
    })
    .await;
    if !promoted {
        print_logs(&[&replica, &sentinel]);
        panic!("the sentinel did not promote the replica");
    }
    // Routes stay while gangway reconnects; the new master's change is
    // followed.
    assert!(answer(&gw, "app.test").await.is_some(), "routes kept");
    cli(
        &cli_path,
        replica.port,
        &[
            "SET",
            "traefik/http/services/app/loadBalancer/servers/0/url",
            &b.url(),
        ],
    );
    let followed = support::within(FAILOVER, || async {
        answer(&gw, "app.test")
            .await
            .is_some_and(|(who, _)| who == "b")
    })
    .await;
    if !followed {
        print_logs(&[&replica, &sentinel]);
        panic!(
            "the change on the new master was not followed:\n{}",
            gw.log()
        );
    }
    assert!(
        gw.log_line(&format!("127.0.0.1:{}", replica.port))
            .is_some(),
        "{}",
        gw.log()
    );
}
