//! Idle services sleep and wake (`gangway.sleep.*` labels) against a real
//! Docker daemon: containers on the host network, stopped by the real
//! gangway binary when idle and started again by the first request.
//! Without Docker a test is skipped, or fails under GANGWAY_TEST_STRICT=1.

use crate::support;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use support::docker::{Probe, Run, SERIAL, Spec, ready};
use support::{Gangway, eventually};

const P: &str = "gangway";

/// Now, as `docker events --since/--until` read it.
fn stamp() -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970");
    format!("{}.{:09}", now.as_secs(), now.subsec_nanos())
}

async fn running(run: &Run, name: &str) -> bool {
    run.docker(&["inspect", "--format", "{{.State.Running}}", name])
        .await
        .is_ok_and(|out| out == "true")
}

/// How many `event`s (start, stop, die) the container had since `since`.
async fn events(run: &Run, name: &str, event: &str, since: &str) -> usize {
    let container = format!("container={name}");
    let event = format!("event={event}");
    let until = stamp();
    run.docker(&[
        "events",
        "--since",
        since,
        "--until",
        &until,
        "--filter",
        &container,
        "--filter",
        &event,
        "--format",
        "{{.Action}}",
    ])
    .await
    .expect("docker events")
    .lines()
    .count()
}

/// A container routed as `<name>.test` that sleeps after `idle`.
fn sleeper(name: &str, idle: &str) -> Spec {
    Spec::new(name)
        .routed(P, name, &format!("{name}.test"), name)
        .label("gangway.sleep.idle", idle)
}

/// Gangway for this run's containers, with its API at `api.test`.
async fn gangway(run: &Run) -> Gangway {
    gangway_with(run, "", &[]).await.0
}

/// Like `gangway`, with more file-provider routers and arguments; also
/// the port of its internal entry point, where `/metrics` is served.
async fn gangway_with(run: &Run, routers: &str, extra: &[&str]) -> (Gangway, u16) {
    let api_router = format!(
        "[http.routers.api]\nrule = \"Host(`api.test`)\"\nservice = \"api@internal\"\n{routers}"
    );
    // The internal entry point on a port of its own: :8080 may be taken.
    let port = support::free_port();
    let internal = format!("--entryPoints.gangway.address=127.0.0.1:{port}");
    let constraint = run.constraint();
    let mut args = vec![
        "--providers.docker",
        &constraint,
        "--providers.docker.downGracePeriod=0s",
        "--api=true",
        &internal,
    ];
    args.extend_from_slice(extra);
    (Gangway::with_file(&api_router, &args).await, port)
}

/// GET with an `Accept` header.
async fn get_accepting(gw: &Gangway, host: &str, accept: &str) -> (u16, Option<String>, String) {
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let req = http::Request::get(gw.url("/"))
        .header("host", host)
        .header("accept", accept)
        .body(Full::default())
        .expect("request");
    let resp = tokio::time::timeout(Duration::from_secs(40), client.request(req))
        .await
        .expect("answered")
        .expect("request through gangway");
    let status = resp.status().as_u16();
    let retry = resp
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = resp.into_body().collect().await.expect("body").to_bytes();
    (
        status,
        retry,
        String::from_utf8_lossy(&body).trim().to_owned(),
    )
}

/// The API's view of one service's sleep.
async fn sleep_state(gw: &Gangway, service: &str) -> Option<serde_json::Value> {
    let got = gw.get("api.test", "/api/http/services").await;
    let list: serde_json::Value = serde_json::from_slice(&got.body).ok()?;
    list.as_array()?
        .iter()
        .find(|s| s["name"] == service)
        .and_then(|s| s.get("sleep").cloned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_idle_container_sleeps_and_fifty_requests_wake_it_with_one_start() {
    let _serial = SERIAL.lock().await;
    if !ready("sleep_idle").await {
        return;
    }
    let run = Run::new("sleep-idle");
    let (gw, internal) = gangway_with(&run, "", &["--metrics.prometheus"]).await;
    let probe = Probe::new(&gw);
    let name = run.start(&sleeper("idle", "2s")).await;
    eventually(Duration::from_secs(10), "routed", || {
        probe.answers("idle.test", "idle")
    })
    .await;
    eventually(Duration::from_secs(20), "stopped once idle", || async {
        !running(&run, &name).await
    })
    .await;
    // Asleep, its router stays and the API says so.
    eventually(Duration::from_secs(5), "shown asleep", || async {
        sleep_state(&gw, "idle@docker")
            .await
            .is_some_and(|s| s["state"] == "asleep" && s["asleepSince"].is_string())
    })
    .await;
    let state = sleep_state(&gw, "idle@docker").await.expect("sleep state");
    let unit = state["unit"].as_str().expect("its unit").to_owned();
    let asleep = [("unit", unit.as_str()), ("state", "asleep")];
    assert_eq!(
        support::metric(internal, "gangway_sleep_state", &asleep).await,
        Some(1.0)
    );

    let since = stamp();
    let answers =
        futures_util::future::join_all((0..50).map(|_| probe.get("idle.test", "/"))).await;
    let ok = answers
        .iter()
        .filter(|a| {
            a.as_ref()
                .is_ok_and(|a| a.status == 200 && a.body == "idle")
        })
        .count();
    assert_eq!(ok, 50, "{answers:?}");
    assert_eq!(events(&run, &name, "start", &since).await, 1);
    let state = sleep_state(&gw, "idle@docker").await.expect("sleep state");
    assert_eq!(state["state"], "awake", "{state}");
    assert!(state["lastWakeMs"].is_u64(), "{state}");
    // The figure docs/performance.md gives (`-- --nocapture` shows it).
    eprintln!(
        "wake-up of a small container, request to ready: {} ms",
        state["lastWakeMs"]
    );
    // Measured: one wake-up that worked, its duration, the requests that
    // waited for it, none waiting any more.
    let unit = [("unit", unit.as_str())];
    let ok = [("unit", unit[0].1), ("result", "ok")];
    let error = [("unit", unit[0].1), ("result", "error")];
    let awake = [("unit", unit[0].1), ("state", "awake")];
    // First: it sleeps again after its idle time.
    assert_eq!(
        support::metric(internal, "gangway_sleep_state", &awake).await,
        Some(1.0)
    );
    assert_eq!(
        support::metric(internal, "gangway_sleep_wakeups_total", &ok).await,
        Some(1.0)
    );
    assert_eq!(
        support::metric(internal, "gangway_sleep_wakeups_total", &error).await,
        Some(0.0)
    );
    assert_eq!(
        support::metric(
            internal,
            "gangway_sleep_wakeup_duration_seconds_count",
            &unit
        )
        .await,
        Some(1.0)
    );
    assert_eq!(
        support::metric(internal, "gangway_sleep_held_requests", &unit).await,
        Some(0.0)
    );
    let waited = support::metric(internal, "gangway_sleep_waited_requests_total", &unit)
        .await
        .expect("requests that waited");
    assert!((1.0..=50.0).contains(&waited), "{waited}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_child_router_wakes_its_sleeping_service_through_its_parent() {
    let _serial = SERIAL.lock().await;
    if !ready("sleep_child").await {
        return;
    }
    let run = Run::new("sleep-child");
    // Multi-layer routing: the parent takes the host, its child (a file
    // router) sends everything to the sleeping container's service.
    let routers = "[http.routers.portal]\nrule = \"Host(`portal.test`)\"\n\
        [http.routers.inside]\nparentRefs = [\"portal@file\"]\n\
        rule = \"PathPrefix(`/`)\"\nservice = \"nested@docker\"\n";
    let gw = gangway_with(&run, routers, &[]).await.0;
    let probe = Probe::new(&gw);
    let name = run.start(&sleeper("nested", "2s")).await;
    eventually(Duration::from_secs(10), "routed through the parent", || {
        probe.answers("portal.test", "nested")
    })
    .await;
    eventually(Duration::from_secs(20), "stopped once idle", || async {
        !running(&run, &name).await
    })
    .await;
    let since = stamp();
    let answers =
        futures_util::future::join_all((0..10).map(|_| probe.get("portal.test", "/"))).await;
    let ok = answers
        .iter()
        .filter(|a| {
            a.as_ref()
                .is_ok_and(|a| a.status == 200 && a.body == "nested")
        })
        .count();
    assert_eq!(ok, 10, "{answers:?}");
    assert_eq!(events(&run, &name, "start", &since).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_health_checked_container_is_held_until_healthy() {
    let _serial = SERIAL.lock().await;
    if !ready("sleep_health").await {
        return;
    }
    let run = Run::new("sleep-health");
    let gw = gangway(&run).await;
    let probe = Probe::new(&gw);
    // `/state` says `booting` until the health check can pass.
    let spec = sleeper("healthy", "2s").health_checked().shell(
        "rm -f /tmp/healthy; echo booting > /www/state; \
         (sleep 1; echo ready > /www/state; touch /tmp/healthy) & exec /bin/serve",
    );
    let name = run.start(&spec).await;
    eventually(Duration::from_secs(15), "routed once healthy", || {
        probe.answers("healthy.test", "healthy")
    })
    .await;
    eventually(Duration::from_secs(20), "stopped once idle", || async {
        !running(&run, &name).await
    })
    .await;
    let answer = probe.get("healthy.test", "/state").await.expect("answered");
    assert_eq!(
        (answer.status.as_u16(), answer.body.as_str()),
        (200, "ready")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_page_mode_shows_browsers_a_page_and_holds_curl() {
    let _serial = SERIAL.lock().await;
    if !ready("sleep_page").await {
        return;
    }
    let run = Run::new("sleep-page");
    let gw = gangway(&run).await;
    let probe = Probe::new(&gw);
    let name = run
        .start(&sleeper("paged", "2s").label("gangway.sleep.mode", "page"))
        .await;
    eventually(Duration::from_secs(10), "routed", || {
        probe.answers("paged.test", "paged")
    })
    .await;
    eventually(Duration::from_secs(20), "stopped once idle", || async {
        !running(&run, &name).await
    })
    .await;
    let since = stamp();
    let (status, retry, body) = get_accepting(&gw, "paged.test", "text/html,*/*;q=0.8").await;
    assert_eq!(status, 503, "{body}");
    assert!(retry.is_some());
    assert!(body.contains("http-equiv=\"refresh\""), "{body}");
    let (status, _, body) = get_accepting(&gw, "paged.test", "*/*").await;
    assert_eq!((status, body.as_str()), (200, "paged"));
    let (status, _, body) = get_accepting(&gw, "paged.test", "text/html").await;
    assert_eq!((status, body.as_str()), (200, "paged"));
    assert_eq!(events(&run, &name, "start", &since).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_container_that_exits_at_start_gets_errors_and_a_backoff_not_a_loop() {
    let _serial = SERIAL.lock().await;
    if !ready("sleep_exits").await {
        return;
    }
    let run = Run::new("sleep-exits");
    // Under Traefik's prefix, as a Traefik user's dashboards read them.
    let (gw, internal) = gangway_with(
        &run,
        "",
        &[
            "--metrics.prometheus",
            "--metrics.prometheus.prefix=traefik",
        ],
    )
    .await;
    let probe = Probe::new(&gw);
    // Serves the first time; every later start exits at once.
    let spec = sleeper("broken", "2s")
        .shell("if [ -f /tmp/ran ]; then exit 3; fi; touch /tmp/ran; exec /bin/serve");
    let name = run.start(&spec).await;
    eventually(Duration::from_secs(10), "routed", || {
        probe.answers("broken.test", "broken")
    })
    .await;
    eventually(Duration::from_secs(20), "stopped once idle", || async {
        !running(&run, &name).await
    })
    .await;
    let since = stamp();
    let first = probe.get("broken.test", "/").await.expect("answered");
    assert_eq!(first.status, 502, "{first:?}");
    assert!(first.body.contains("exit code 3"), "{first:?}");
    for _ in 0..5 {
        let again = probe.get("broken.test", "/").await.expect("answered");
        assert_eq!(again.status, 502, "{again:?}");
        assert!(again.body.contains("next attempt"), "{again:?}");
        assert!(again.retry_after.is_some(), "{again:?}");
    }
    assert_eq!(events(&run, &name, "start", &since).await, 1);
    let state = sleep_state(&gw, "broken@docker")
        .await
        .expect("sleep state");
    assert!(
        state["error"]
            .as_str()
            .is_some_and(|e| e.contains("exit code 3")),
        "{state}"
    );
    // One failed wake-up counted (the backoff tried no other), no
    // duration, one request that waited.
    let unit = [("unit", state["unit"].as_str().expect("its unit"))];
    let error = [("unit", unit[0].1), ("result", "error")];
    let ok = [("unit", unit[0].1), ("result", "ok")];
    assert_eq!(
        support::metric(internal, "traefik_sleep_wakeups_total", &error).await,
        Some(1.0)
    );
    assert_eq!(
        support::metric(internal, "traefik_sleep_wakeups_total", &ok).await,
        Some(0.0)
    );
    assert_eq!(
        support::metric(
            internal,
            "traefik_sleep_wakeup_duration_seconds_count",
            &unit
        )
        .await,
        Some(0.0)
    );
    assert_eq!(
        support::metric(internal, "traefik_sleep_waited_requests_total", &unit).await,
        Some(1.0)
    );
    assert_eq!(
        support::metric(internal, "gangway_sleep_wakeups_total", &error).await,
        None
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_request_open_across_the_idle_time_keeps_its_container_awake() {
    let _serial = SERIAL.lock().await;
    if !ready("sleep_open").await {
        return;
    }
    let run = Run::new("sleep-open");
    let gw = gangway(&run).await;
    let probe = Probe::new(&gw);
    // `/cgi-bin/slow` answers after twice the idle time.
    let spec = sleeper("busy", "2s").shell(
        "printf '#!/bin/sh\\necho Content-Type: text/plain\\necho\\nsleep 4\\necho done\\n' \
           > /www/cgi-bin/slow && chmod 755 /www/cgi-bin/slow && exec /bin/serve",
    );
    let name = run.start(&spec).await;
    eventually(Duration::from_secs(10), "routed", || {
        probe.answers("busy.test", "busy")
    })
    .await;
    let since = stamp();
    let slow = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let req = http::Request::get(gw.url("/cgi-bin/slow"))
        .header("host", "busy.test")
        .body(Full::default())
        .expect("request");
    let resp = slow.request(req).await.expect("answered");
    assert_eq!(resp.status(), 200);
    let body = resp.into_body().collect().await.expect("body").to_bytes();
    assert_eq!(String::from_utf8_lossy(&body).trim(), "done");
    assert_eq!(events(&run, &name, "stop", &since).await, 0);
    assert!(running(&run, &name).await);
}

/// A WebSocket echo server in the test image's shell, on 127.0.0.1:`port`
/// beside its httpd: busybox `nc` runs one shell per connection, which
/// answers the opening handshake and sends each short frame back
/// unmasked, a Close included (then it ends).
fn websocket_echo(port: u16) -> String {
    format!(
        r#"cat > /tmp/ws <<'WS'
#!/bin/sh
key=
while IFS= read -r line; do
  line=${{line%?}}
  [ -z "$line" ] && break
  case "$line" in [Ss]ec-[Ww]eb[Ss]ocket-[Kk]ey:*) key=${{line#*: }} ;; esac
done
accept=$(printf '%s258EAFA5-E914-47DA-95CA-C5AB0DC85B11' "$key" | sha1sum | cut -d' ' -f1 | xxd -r -p | base64)
printf 'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n' "$accept"
bytes() {{ dd bs=1 count="$1" 2>/dev/null | od -An -tu1; }}
while set -- $(bytes 2) && [ $# -eq 2 ]; do
  op=$(($1 & 15)) len=$(($2 & 127))
  set -- $(bytes 4)
  out=$(printf '\\%03o\\%03o' $((128 | op)) "$len") i=0
  for b in $(bytes "$len"); do
    eval "m=\${{$((i % 4 + 1))}}"
    out="$out$(printf '\\%03o' $((b ^ m)))" i=$((i + 1))
  done
  printf "$out"
  [ "$op" -eq 8 ] && exit 0
done
WS
chmod 755 /tmp/ws && nc -ll -p {port} 127.0.0.1 -e /tmp/ws &
exec /bin/serve"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_websocket_open_across_the_idle_time_keeps_its_container_awake() {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let _serial = SERIAL.lock().await;
    if !ready("sleep_websocket").await {
        return;
    }
    let run = Run::new("sleep-ws");
    let gw = gangway(&run).await;
    let probe = Probe::new(&gw);
    let ws_port = support::free_port();
    // Two services of one container: its httpd, and the WebSocket echo.
    let spec = sleeper("chat", "2s")
        .label(
            &format!("{P}.http.routers.chatws.rule"),
            "Host(`ws.chat.test`)",
        )
        .label(&format!("{P}.http.routers.chatws.service"), "chatws")
        .label(
            &format!("{P}.http.services.chatws.loadbalancer.server.port"),
            &ws_port.to_string(),
        )
        .shell(&websocket_echo(ws_port));
    let name = run.start(&spec).await;
    eventually(Duration::from_secs(10), "routed", || {
        probe.answers("chat.test", "chat")
    })
    .await;
    let connect = || async {
        let mut req = format!("ws://127.0.0.1:{}/socket", gw.port)
            .into_client_request()
            .expect("client request");
        req.headers_mut()
            .insert("host", http::HeaderValue::from_static("ws.chat.test"));
        let tcp = tokio::net::TcpStream::connect(("127.0.0.1", gw.port))
            .await
            .expect("connect to gangway");
        tokio::time::timeout(
            Duration::from_secs(10),
            tokio_tungstenite::client_async(req, tcp),
        )
        .await
        .ok()
        .and_then(Result::ok)
        .map(|(ws, _)| ws)
    };
    // The echo server listens shortly after the httpd answers.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut ws = loop {
        if let Some(ws) = connect().await {
            break ws;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no WebSocket handshake through gangway"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let mut echo = async |text: &str| {
        ws.send(Message::text(text)).await.expect("send");
        let got = tokio::time::timeout(Duration::from_secs(10), ws.next())
            .await
            .expect("an echo in time")
            .expect("connection open")
            .expect("a message");
        assert_eq!(got, Message::text(text));
    };
    echo("hello").await;
    let since = stamp();
    // Open and silent for three idle times: its request ended with the
    // handshake, and without the connection counted the container would
    // be stopped after one.
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert!(
        running(&run, &name).await,
        "stopped under an open WebSocket"
    );
    assert_eq!(events(&run, &name, "stop", &since).await, 0);
    let state = sleep_state(&gw, "chatws@docker")
        .await
        .expect("sleep state");
    assert_eq!(state["state"], "awake", "{state}");
    echo("still there").await;
    ws.close(None).await.expect("close");
    let reply = tokio::time::timeout(Duration::from_secs(10), ws.next())
        .await
        .expect("the close reply in time");
    assert!(
        matches!(reply, Some(Ok(Message::Close(_))) | None),
        "{reply:?}"
    );
    drop(ws);
    // Closed, the container sleeps once idle.
    eventually(
        Duration::from_secs(20),
        "stopped once closed and idle",
        || async { !running(&run, &name).await },
    )
    .await;
    eventually(Duration::from_secs(5), "shown asleep", || async {
        sleep_state(&gw, "chatws@docker")
            .await
            .is_some_and(|s| s["state"] == "asleep")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_container_stopped_by_hand_is_not_woken() {
    let _serial = SERIAL.lock().await;
    if !ready("sleep_by_hand").await {
        return;
    }
    let run = Run::new("sleep-by-hand");
    let gw = gangway(&run).await;
    let probe = Probe::new(&gw);
    let name = run.start(&sleeper("manual", "1h")).await;
    eventually(Duration::from_secs(10), "routed", || {
        probe.answers("manual.test", "manual")
    })
    .await;
    run.docker(&["stop", "-t", "1", &name])
        .await
        .expect("docker stop");
    let since = stamp();
    eventually(Duration::from_secs(10), "its routers gone", || async {
        probe.status("manual.test").await == 404
    })
    .await;
    assert_eq!(probe.status("manual.test").await, 404);
    assert_eq!(events(&run, &name, "start", &since).await, 0);
    assert!(!running(&run, &name).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_group_sleeps_and_wakes_together() {
    let _serial = SERIAL.lock().await;
    if !ready("sleep_group").await {
        return;
    }
    let run = Run::new("sleep-group");
    let gw = gangway(&run).await;
    let probe = Probe::new(&gw);
    let group = format!("shop-{}", run.suffix());
    let app = run
        .start(&sleeper("app", "2s").label("gangway.sleep.group", &group))
        .await;
    // The database: no router of its own, it sleeps and wakes with the app.
    let db = run
        .start(
            &Spec::new("db")
                .label(&format!("{P}.enable"), "true")
                .label(
                    &format!("{P}.http.services.db.loadbalancer.server.port"),
                    "1",
                )
                .label("gangway.sleep.idle", "2s")
                .label("gangway.sleep.group", &group),
        )
        .await;
    eventually(Duration::from_secs(10), "routed", || {
        probe.answers("app.test", "app")
    })
    .await;
    eventually(
        Duration::from_secs(20),
        "both stopped once idle",
        || async { !running(&run, &app).await && !running(&run, &db).await },
    )
    .await;
    let since = stamp();
    assert!(probe.answers("app.test", "app").await);
    assert!(running(&run, &db).await);
    assert_eq!(events(&run, &db, "start", &since).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sleep_labels_are_refused_when_docker_is_read_only() {
    let _serial = SERIAL.lock().await;
    if !ready("sleep_read_only").await {
        return;
    }
    let run = Run::new("sleep-read-only");
    let proxy = support::docker::read_only_proxy("/var/run/docker.sock".to_owned()).await;
    let endpoint = format!("--providers.docker.endpoint=tcp://127.0.0.1:{proxy}");
    let internal = format!(
        "--entryPoints.gangway.address=127.0.0.1:{}",
        support::free_port()
    );
    let api_router =
        "[http.routers.api]\nrule = \"Host(`api.test`)\"\nservice = \"api@internal\"\n";
    let gw = Gangway::with_file(
        api_router,
        &[
            "--providers.docker",
            &run.constraint(),
            &endpoint,
            "--api=true",
            &internal,
        ],
    )
    .await;
    let probe = Probe::new(&gw);
    let name = run.start(&sleeper("ro", "2s")).await;
    // Routed as without the labels, never stopped, and the refusal is shown
    // on the container.
    eventually(Duration::from_secs(10), "routed", || {
        probe.answers("ro.test", "ro")
    })
    .await;
    let containers = probe
        .get("api.test", "/api/containers")
        .await
        .expect("api")
        .body;
    let mine = containers
        .split("},{")
        .find(|c| c.contains(&name))
        .unwrap_or_else(|| panic!("{name} in {containers}"));
    assert!(
        mine.contains("gangway.sleep.idle") && mine.contains("cannot start or stop containers"),
        "{mine}"
    );
    assert_eq!(sleep_state(&gw, "ro@docker").await, None);
    let since = stamp();
    assert!(probe.answers("ro.test", "ro").await);
    assert_eq!(events(&run, &name, "stop", &since).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_dashboard_shows_sleeping_services_their_wake_ups_and_failures() {
    const TEST: &str = "sleep_dashboard";
    let _serial = SERIAL.lock().await;
    if !ready(TEST).await || support::browser::parts_or_skip(TEST).is_none() {
        return;
    }
    let run = Run::new("sleep-dashboard");
    let (gw, internal) = gangway_with(&run, "", &["--api.insecure=true"]).await;
    let probe = Probe::new(&gw);
    // Created, never started, and wakeable: asleep from the start, and
    // once woken awake for the rest of the test.
    run.create(&sleeper("nap", "1h").label("gangway.sleep.wakeable", "true"))
        .await;
    // Serves the first time; every later start exits at once.
    let broken = run
        .start(
            &sleeper("broken", "2s")
                .shell("if [ -f /tmp/ran ]; then exit 3; fi; touch /tmp/ran; exec /bin/serve"),
        )
        .await;
    eventually(Duration::from_secs(10), "routed", || {
        probe.answers("broken.test", "broken")
    })
    .await;
    eventually(Duration::from_secs(20), "both asleep", || async {
        !running(&run, &broken).await
            && sleep_state(&gw, "nap@docker")
                .await
                .is_some_and(|s| s["state"] == "asleep")
            && sleep_state(&gw, "broken@docker")
                .await
                .is_some_and(|s| s["state"] == "asleep")
    })
    .await;
    // One wake-up that works, for its time and duration.
    assert!(probe.answers("nap.test", "nap").await);
    let shots = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("target dir")
        .join("dashboard-screenshots");
    support::browser::drive(
        TEST,
        "sleep.mjs",
        &format!("http://127.0.0.1:{internal}"),
        &[
            ("PROXY_PORT", &gw.port.to_string()),
            ("WOKEN", "nap@docker"),
            ("BROKEN", "broken@docker"),
            ("BROKEN_HOST", "broken.test"),
            ("SCREENSHOT_DIR", &shots.display().to_string()),
        ],
    )
    .await;
}

/// Gangway for this run's containers, with the Sablier plugin declared and
/// `middleware` (TOML under `[http.middlewares.nap.plugin.sablier]`) in its
/// file.
async fn gangway_with_sablier(run: &Run, middleware: &str) -> Gangway {
    let file = format!("[http.middlewares.nap.plugin.sablier]\n{middleware}");
    gangway_with(
        run,
        &file,
        &["--experimental.plugins.sablier.moduleName=github.com/sablierapp/sablier-traefik-plugin"],
    )
    .await
    .0
}

/// A container routed as `<name>.test` through the Sablier middleware.
fn napper(name: &str) -> Spec {
    Spec::new(name)
        .routed(P, name, &format!("{name}.test"), name)
        .label(&format!("{P}.http.routers.{name}.middlewares"), "nap@file")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_sablier_plugin_puts_its_group_to_sleep_and_shows_the_waiting_page() {
    let _serial = SERIAL.lock().await;
    if !ready("sleep_sablier_dynamic").await {
        return;
    }
    let run = Run::new("sleep-sablier-dynamic");
    let group = format!("nap-{}", run.suffix());
    let gw = gangway_with_sablier(
        &run,
        &format!(
            "group = \"{group}\"\nsessionDuration = \"2s\"\nsablierUrl = \"http://sablier:10000\"\n\
             [http.middlewares.nap.plugin.sablier.dynamic]\ntheme = \"ghost\"\nrefreshFrequency = \"5s\"\n"
        ),
    )
    .await;
    let probe = Probe::new(&gw);
    let name = run
        .start(
            &napper("napping")
                .label("sablier.enable", "true")
                .label("sablier.group", &group),
        )
        .await;
    // A container of another group is left alone.
    let other = run
        .start(
            &napper("awake")
                .label("sablier.enable", "true")
                .label("sablier.group", "elsewhere"),
        )
        .await;
    eventually(Duration::from_secs(10), "routed", || {
        probe.answers("napping.test", "napping")
    })
    .await;
    eventually(
        Duration::from_secs(20),
        "stopped after its session",
        || async { !running(&run, &name).await },
    )
    .await;
    let since = stamp();
    let (status, _, body) = get_accepting(&gw, "napping.test", "text/html").await;
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("http-equiv=\"refresh\""), "{body}");
    eventually(
        Duration::from_secs(30),
        "woken by the page's request",
        || probe.answers("napping.test", "napping"),
    )
    .await;
    assert_eq!(events(&run, &name, "start", &since).await, 1);
    assert!(running(&run, &other).await);
    assert!(probe.answers("awake.test", "awake").await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_sablier_plugin_blocking_strategy_holds_requests_until_awake() {
    let _serial = SERIAL.lock().await;
    if !ready("sleep_sablier_blocking").await {
        return;
    }
    let run = Run::new("sleep-sablier-blocking");
    let name = run.start(&napper("blocked")).await;
    let gw = gangway_with_sablier(
        &run,
        &format!(
            "names = \"{name}\"\nsessionDuration = \"2s\"\n\
             [http.middlewares.nap.plugin.sablier.blocking]\ntimeout = \"30s\"\n"
        ),
    )
    .await;
    let probe = Probe::new(&gw);
    eventually(Duration::from_secs(10), "routed", || {
        probe.answers("blocked.test", "blocked")
    })
    .await;
    eventually(
        Duration::from_secs(20),
        "stopped after its session",
        || async { !running(&run, &name).await },
    )
    .await;
    // Blocking: even a browser waits for the container and gets its answer.
    let since = stamp();
    let (status, _, body) = get_accepting(&gw, "blocked.test", "text/html").await;
    assert_eq!((status, body.as_str()), (200, "blocked"));
    assert_eq!(events(&run, &name, "start", &since).await, 1);
}
