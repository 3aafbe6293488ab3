//! The compose examples under `examples/compose/`, run the way their
//! READMEs say: every `$ command` of a README's `console` blocks is run with
//! bash in (a copy of) the example's folder, against the real Docker
//! daemon, with the Compose that is installed (the READMEs say `docker
//! compose`; where only v1 is installed, `docker-compose` runs them), the
//! images `scripts/image all` builds under the tests' own tags
//! (`gangway-test:local`, `gangway-test-whoami:local`,
//! `gangway-test-pebble:local`, `gangway-test-redis:local`: `scripts/test`
//! makes them, and a user's `gangway:local` is never touched), and its
//! standard output must be the
//! lines the README shows under it. An example that does not work as its
//! README says fails here.
//!
//! Expected output: lines are compared without trailing whitespace; `[..]`
//! in a line stands for any text, and a line `...` for any lines. A command
//! whose output does not match is run again until it does, for up to a
//! minute, as a reader would retry while containers start (and so that no
//! test waits a fixed time); a command that never matches fails the test
//! with its last output and the containers' logs.
//!
//! Also: `gangway check` finds no problem in any example (no false alarms).

use crate::support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::docker::{Compose, SERIAL, command, skip};

/// The images the examples run with (`scripts/test` builds them with
/// `scripts/image all`, under these tags).
const GANGWAY_IMAGE: &str = "gangway-test:local";
const WHOAMI_IMAGE: &str = "gangway-test-whoami:local";
const PEBBLE_IMAGE: &str = "gangway-test-pebble:local";
const REDIS_IMAGE: &str = "gangway-test-redis:local";

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/compose")
}

/// One `$ command` and the output shown under it.
#[derive(Debug, Clone, PartialEq)]
struct Step {
    command: String,
    expected: Vec<String>,
}

/// The `$ ` lines of the README's `console` blocks, with a trailing `\`
/// joining the next line.
fn steps(readme: &str) -> Vec<Step> {
    let mut out: Vec<Step> = Vec::new();
    let mut in_console = false;
    let mut continued = false;
    for line in readme.lines() {
        if line.trim_start().starts_with("```") {
            in_console = !in_console && line.trim() == "```console";
            continued = false;
            continue;
        }
        if !in_console {
            continue;
        }
        if continued && let Some(last) = out.last_mut() {
            last.command.push('\n');
            last.command.push_str(line);
            continued = line.ends_with('\\');
        } else if let Some(cmd) = line.strip_prefix("$ ") {
            out.push(Step {
                command: cmd.to_owned(),
                expected: Vec::new(),
            });
            continued = cmd.ends_with('\\');
        } else if let Some(last) = out.last_mut() {
            last.expected.push(line.to_owned());
        }
    }
    out
}

/// Whether `actual` is what `expected` shows (see the module doc).
fn output_matches(expected: &[String], actual: &str) -> bool {
    let actual: Vec<&str> = actual.lines().map(str::trim_end).collect();
    let expected: Vec<&str> = expected.iter().map(|l| l.trim_end()).collect();
    fn go(e: &[&str], a: &[&str]) -> bool {
        match e.split_first() {
            None => a.is_empty(),
            Some((&"...", rest)) => (0..=a.len()).any(|skip| go(rest, &a[skip..])),
            Some((line, rest)) => a
                .split_first()
                .is_some_and(|(first, more)| line_matches(line, first) && go(rest, more)),
        }
    }
    go(&expected, &actual)
}

fn line_matches(pattern: &str, line: &str) -> bool {
    let mut parts = pattern.split("[..]");
    let Some(first) = parts.next() else {
        return line.is_empty();
    };
    let Some(mut rest) = line.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    for (i, part) in parts.iter().enumerate() {
        if i + 1 == parts.len() {
            return rest.ends_with(part);
        }
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

/// One example, copied to a scratch folder of the same name (the compose
/// project name), taken down when dropped.
struct Example {
    name: &'static str,
    _scratch: tempfile::TempDir,
    dir: PathBuf,
    env: Vec<(String, String)>,
    compose: Compose,
}

impl Example {
    /// Copies the example and readies its environment; None (after
    /// skipping, or failing under GANGWAY_TEST_STRICT) when Docker,
    /// docker-compose or the images are missing.
    async fn prepare(test: &str, name: &'static str) -> Option<Example> {
        let compose = support::docker::compose_ready(test).await?;
        for image in [GANGWAY_IMAGE, WHOAMI_IMAGE, PEBBLE_IMAGE, REDIS_IMAGE] {
            if let Err(e) =
                support::docker::docker(&["image", "inspect", "--format", "{{.Id}}", image]).await
            {
                skip(
                    test,
                    &format!(
                        "image {image} is missing (scripts/test builds it, with \
                         GANGWAY_IMAGE={GANGWAY_IMAGE} WHOAMI_IMAGE={WHOAMI_IMAGE} \
                         PEBBLE_IMAGE={PEBBLE_IMAGE} REDIS_IMAGE={REDIS_IMAGE} \
                         scripts/image all): {e}"
                    ),
                );
                return None;
            }
        }
        let scratch = tempfile::tempdir().expect("tempdir");
        let dir = scratch.path().join(name);
        copy_dir(&examples_dir().join(name), &dir);
        use std::os::unix::fs::MetadataExt as _;
        let gid = std::fs::metadata("/var/run/docker.sock")
            .map(|m| m.gid())
            .expect("the Docker socket");
        let env = vec![
            ("GANGWAY_IMAGE".to_owned(), GANGWAY_IMAGE.to_owned()),
            ("WHOAMI_IMAGE".to_owned(), WHOAMI_IMAGE.to_owned()),
            ("PEBBLE_IMAGE".to_owned(), PEBBLE_IMAGE.to_owned()),
            ("REDIS_IMAGE".to_owned(), REDIS_IMAGE.to_owned()),
            ("DOCKER_GID".to_owned(), gid.to_string()),
        ];
        Some(Example {
            name,
            _scratch: scratch,
            dir,
            env,
            compose,
        })
    }

    /// Runs one command with bash in the example's folder, `docker compose`
    /// spelt for the installed Compose: Ok(stdout) when it exits 0, else
    /// Err(stdout and stderr).
    async fn run(&self, cmd: &str) -> Result<String, String> {
        let out = tokio::process::Command::new("bash")
            .args(["-c", &self.compose.spell(cmd)])
            .current_dir(&self.dir)
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(std::process::Stdio::null())
            .output()
            .await
            .map_err(|e| format!("bash: {e}"))?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        if out.status.success() {
            Ok(stdout)
        } else {
            Err(format!(
                "exit {}\nstdout:\n{stdout}\nstderr:\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    }

    /// The README's steps.
    fn steps(&self) -> Vec<Step> {
        let readme =
            std::fs::read_to_string(self.dir.join("README.md")).expect("the example's README.md");
        let steps = steps(&readme);
        assert!(
            steps.iter().any(|s| s.command.contains("curl")),
            "{}: the README shows no curl command",
            self.name
        );
        steps
    }

    /// Runs the README's steps in order; those containing one of `pending`
    /// are left out (features that land with another branch).
    async fn run_readme(&self, pending: &[&str]) {
        self.run_steps(&self.steps(), pending).await;
    }

    async fn run_steps(&self, steps: &[Step], pending: &[&str]) {
        for step in steps {
            if let Some(p) = pending.iter().find(|p| step.command.contains(*p)) {
                eprintln!(
                    "{}: not run yet (pending `{p}`): {}",
                    self.name, step.command
                );
                continue;
            }
            self.expect(step).await;
        }
    }

    async fn expect(&self, step: &Step) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let got = self.run(&step.command).await;
            if let Ok(out) = &got
                && output_matches(&step.expected, out)
            {
                return;
            }
            if Instant::now() > deadline {
                let logs = self
                    .run("docker compose logs --no-color --tail=40")
                    .await
                    .unwrap_or_else(|e| e);
                panic!(
                    "{}: `{}` did not print what the README shows within 60 s.\nexpected:\n{}\ngot:\n{}\ncontainer logs:\n{logs}",
                    self.name,
                    step.command,
                    step.expected.join("\n"),
                    got.unwrap_or_else(|e| e),
                );
            }
            // Containers are starting, or a certificate is being issued.
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
}

impl Drop for Example {
    fn drop(&mut self) {
        let _ = self
            .compose
            .command(&["down", "-v", "-t", "1"])
            .current_dir(&self.dir)
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .output();
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create the example's copy");
    for entry in std::fs::read_dir(from).expect("read the example") {
        let entry = entry.expect("example entry");
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy an example file");
        }
    }
}

async fn run_example(test: &str, name: &'static str, pending: &[&str]) {
    let _serial = SERIAL.lock().await;
    let Some(example) = Example::prepare(test, name).await else {
        return;
    };
    example.run_readme(pending).await;
}

#[tokio::test]
async fn quickstart_works_as_its_readme_says() {
    run_example("quickstart", "quickstart", &[]).await;
}

/// Idle containers stopped and woken: needs the gangway image built from
/// this checkout (the sleep labels are gangway's own).
#[tokio::test]
async fn sleep_works_as_its_readme_says() {
    run_example("sleep_example", "sleep", &[]).await;
}

#[tokio::test]
async fn paths_and_middlewares_work_as_the_readme_says() {
    run_example("paths_and_middlewares", "paths-and-middlewares", &[]).await;
}

#[tokio::test]
async fn scaled_works_as_its_readme_says() {
    run_example("scaled", "scaled", &[]).await;
}

/// Certificates from Let's Encrypt's test CA, pebble, validated for real
/// on gangway's ports 80 and 443 of 127.0.0.1 (so no other test may hold
/// them): the README's steps, then what a reader cannot see from curl -k.
#[tokio::test]
async fn https_works_as_its_readme_says() {
    let _serial = SERIAL.lock().await;
    if !support::pebble::available("https_works_as_its_readme_says") {
        return;
    }
    let Some(mut example) = Example::prepare("https_works_as_its_readme_says", "https").await
    else {
        return;
    };
    let pebble = support::pebble::Pebble::start(80, 443, None).await;
    // gangway, in its container, trusts pebble's API certificate; an
    // override file adds that and nothing else.
    let ca_dir = example.dir.join("pebble");
    std::fs::create_dir(&ca_dir).unwrap();
    std::fs::copy(&pebble.api_ca, ca_dir.join("api-ca.pem")).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&ca_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(
        ca_dir.join("api-ca.pem"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    std::fs::write(
        example.dir.join("docker-compose.pebble.yml"),
        "services:\n  gangway:\n    environment:\n      - GANGWAY_CERTIFICATESRESOLVERS_LE_ACME_CACERTIFICATES=/pebble/api-ca.pem\n    volumes:\n      - ./pebble:/pebble:ro\n",
    )
    .unwrap();
    for (k, v) in [
        (
            "COMPOSE_FILE",
            "docker-compose.yml:docker-compose.pebble.yml",
        ),
        ("ACME_CA_SERVER", pebble.directory.as_str()),
        ("DOMAIN", "whoami.localhost"),
        ("EMAIL", ""),
        ("BIND_ADDRESS", "127.0.0.1"),
    ] {
        example.env.push((k.to_owned(), v.to_owned()));
    }
    let steps = example.steps();
    let down = steps
        .iter()
        .position(|s| s.command.starts_with("docker compose down"))
        .expect("the README takes the example down");
    example.run_steps(&steps[..down], &[]).await;

    // The certificate chains to pebble's root for the name, and the
    // restart took it from the volume: one order in all.
    std::fs::write(example.dir.join("root.pem"), pebble.issuing_root().await).unwrap();
    let verified = example
        .run("curl -sf --cacert root.pem https://whoami.localhost/ | grep '^Name:'")
        .await;
    assert_eq!(verified.as_deref().map(str::trim_end), Ok("Name: whoami"));
    if pebble.orders() != 1 {
        let logs = example
            .run("docker compose logs --no-color --tail=60 gangway")
            .await
            .unwrap_or_else(|e| e);
        panic!(
            "the restart ordered a new certificate: {} orders\ngangway:\n{logs}\npebble:\n{}",
            pebble.orders(),
            pebble.log()
        );
    }

    example.run_steps(&steps[down..], &[]).await;
}

/// A certificate from a local ACME server in the same compose project,
/// validated for real: the README's steps check it with curl against that
/// server's root.
#[tokio::test]
async fn https_local_works_as_its_readme_says() {
    run_example("https_local", "https-local", &[]).await;
}

/// Two Redis databases behind one entry point, reached by name over TLS
/// with certificates from a local ACME server: redis-cli, as the README
/// runs it, gets each database's own answers.
#[tokio::test]
async fn tcp_works_as_its_readme_says() {
    if support::program(
        "tcp_works_as_its_readme_says",
        &["redis-cli"],
        "scripts/ci/servers-up",
    )
    .is_none()
    {
        return;
    }
    run_example("tcp", "tcp", &[]).await;
}

/// Three instances sharing their certificates through one Redis, with a
/// local ACME server that validates on one instance's port only: as the
/// README runs it, one order, one serial on all three, keys sealed in the
/// store, and serving on while the store is stopped.
#[tokio::test]
async fn cluster_works_as_its_readme_says() {
    const T: &str = "cluster_works_as_its_readme_says";
    if support::program(T, &["redis-cli"], "scripts/ci/servers-up").is_none()
        || support::program(T, &["openssl"], "scripts/ci/servers-up").is_none()
    {
        return;
    }
    run_example("cluster", "cluster", &[]).await;
}

/// The stack is deployed to a swarm of the test's own (a private daemon
/// made a manager), never to the machine's daemon: the README's `docker
/// swarm init` is left to that, and every other step runs against it.
#[tokio::test]
async fn swarm_works_as_its_readme_says() {
    let _serial = SERIAL.lock().await;
    let Some(mut example) = Example::prepare("swarm", "swarm").await else {
        return;
    };
    let swarm =
        support::docker::Swarm::start("swarm example", &[GANGWAY_IMAGE, WHOAMI_IMAGE]).await;
    let host = swarm.manager.host();
    let socket = host.trim_start_matches("unix://").to_owned();
    example.env.push(("DOCKER_HOST".to_owned(), host));
    example.env.push(("DOCKER_SOCKET".to_owned(), socket));
    example.run_readme(&["docker swarm init"]).await;
}

#[tokio::test]
async fn grpc_works_as_its_readme_says() {
    run_example("grpc", "grpc", &[]).await;
}

#[tokio::test]
async fn from_traefik_works_as_its_readme_says() {
    run_example("from_traefik", "from-traefik", &[]).await;
}

#[test]
fn from_traefik_differs_from_the_traefik_file_only_where_it_says() {
    let dir = examples_dir().join("from-traefik");
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).expect(f);
    let ours = read("docker-compose.yml");
    let theirs = read("docker-compose.traefik.yml");
    let body = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| !l.trim_start().starts_with('#'))
            .map(str::to_owned)
            .collect()
    };
    let (ours, theirs) = (body(&ours), body(&theirs));
    let added: Vec<&String> = ours.iter().filter(|l| !theirs.contains(l)).collect();
    let removed: Vec<&String> = theirs.iter().filter(|l| !ours.contains(l)).collect();
    assert_eq!(
        added.len(),
        3,
        "lines only in docker-compose.yml: {added:?}"
    );
    assert!(
        added.iter().all(|l| l.contains("# changed:")),
        "every changed line says so: {added:?}"
    );
    assert_eq!(
        removed.len(),
        1,
        "lines only in the Traefik file: {removed:?}"
    );
    assert!(removed[0].contains("image: traefik:"));
    let readme = read("README.md");
    for line in &added {
        let code = line.split('#').next().unwrap_or_default().trim();
        assert!(
            readme.contains(code.trim_start_matches("- ")),
            "the README's diff shows `{code}`"
        );
    }
}

#[test]
fn readme_steps_and_expected_output_are_read_as_documented() {
    let readme = "text\n```console\n$ echo a\na\n$ long \\\n  continued\n```\n```sh\n$ not run\n```\n```console\n$ last\n...\nend [..] line\n```\n";
    let s = steps(readme);
    assert_eq!(s.len(), 3);
    assert_eq!(s[0].expected, ["a"]);
    assert_eq!(s[1].command, "long \\\n  continued");
    assert_eq!(s[2].command, "last");
    assert!(output_matches(&s[2].expected, "x\ny\nend of the line\n"));
    assert!(output_matches(&s[2].expected, "end  line"));
    assert!(!output_matches(&s[2].expected, "end of the line\nmore"));
    assert!(output_matches(&["a".to_owned()], "a\r\n"));
    assert!(!output_matches(&["a".to_owned()], "b\n"));
    assert!(output_matches(&[], ""));
    assert!(!output_matches(&[], "unexpected\n"));
}

/// `gangway check` on every example: no errors, no warnings.
#[tokio::test]
async fn gangway_check_finds_nothing_wrong_in_the_examples() {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(examples_dir()).expect("examples/compose") {
        let dir = entry.expect("entry").path();
        for file in std::fs::read_dir(&dir).expect("example") {
            let file = file.expect("file").path();
            let name = file.file_name().unwrap().to_string_lossy().into_owned();
            if name.starts_with("docker-compose") && name.ends_with(".yml") {
                files.push(file);
            }
        }
    }
    files.sort();
    assert!(files.len() >= 8, "found only {files:?}");
    for file in files {
        let path = file.display().to_string();
        let out = command(
            env!("CARGO_BIN_EXE_gangway"),
            &["check", "--compose", &path],
        )
        .await
        .unwrap_or_else(|e| panic!("gangway check {path}: {e}"));
        assert_eq!(
            out, "gangway check: no problems found",
            "gangway check --compose {path}"
        );
    }
}

/// `format` of the gangway image's `docker image inspect`; None (after
/// skipping) without Docker or the image.
async fn image_field(test: &str, format: &str) -> Option<String> {
    support::docker::compose_ready(test).await?;
    let inspected =
        support::docker::docker(&["image", "inspect", "--format", format, GANGWAY_IMAGE]).await;
    match inspected {
        Ok(field) => Some(field),
        Err(e) => {
            skip(test, &format!("image {GANGWAY_IMAGE} is missing: {e}"));
            None
        }
    }
}

/// The gangway image answers Traefik's compose `healthcheck:` (`traefik
/// healthcheck --ping`, the binary under Traefik's name on PATH) and
/// declares a HEALTHCHECK of its own that reports a container with ping
/// healthy.
#[tokio::test]
async fn the_image_is_healthy_as_traefiks_healthcheck_says() {
    let test = "the_image_is_healthy_as_traefiks_healthcheck_says";
    let _one = SERIAL.lock().await;
    let Some(declared) = image_field(test, "{{json .Config.Healthcheck.Test}}").await else {
        return;
    };
    let docker = support::docker::docker;
    assert_eq!(
        declared.trim(),
        r#"["CMD","/gangway","healthcheck","--if-enabled"]"#
    );
    let name = format!("gangway-test-health-{}", std::process::id());
    docker(&[
        "run",
        "-d",
        "--name",
        &name,
        "--label",
        &format!("{}=health", support::docker::RUN_LABEL),
        "--health-interval=1s",
        "--health-start-period=1s",
        "-e",
        "TRAEFIK_PING=true",
        "-e",
        "TRAEFIK_PING_ENTRYPOINT=web",
        "-e",
        "TRAEFIK_ENTRYPOINTS_WEB_ADDRESS=:8081",
        GANGWAY_IMAGE,
    ])
    .await
    .expect("start the image");
    let by_name = docker(&["exec", &name, "traefik", "healthcheck", "--ping"]).await;
    let healthy = support::within(Duration::from_secs(30), || async {
        docker(&["inspect", "--format", "{{.State.Health.Status}}", &name])
            .await
            .is_ok_and(|s| s.trim() == "healthy")
    })
    .await;
    let _ = docker(&["rm", "-f", &name]).await;
    assert!(healthy, "the image's HEALTHCHECK never passed");
    assert!(
        by_name.as_deref().is_ok_and(|o| o.starts_with("OK: ")),
        "{by_name:?}"
    );
}

/// The gangway image works in `/`, as Traefik's does: a `/traefik.yml`
/// (found by Traefik through its `$XDG_CONFIG_HOME/traefik` path with the
/// variable unset) is read, and a relative path in the setup (an access
/// log as `access.log`) is created in `/` by the unprivileged user.
#[tokio::test]
async fn the_image_reads_a_root_traefik_yml_and_writes_relative_paths_as_traefik() {
    let test = "the_image_reads_a_root_traefik_yml_and_writes_relative_paths_as_traefik";
    let _one = SERIAL.lock().await;
    if image_field(test, "{{.Id}}").await.is_none() {
        return;
    }
    let docker = support::docker::docker;
    let port = support::free_port();
    let scratch = tempfile::tempdir().unwrap();
    let file = scratch.path().join("traefik.yml");
    std::fs::write(
        &file,
        format!("entryPoints:\n  web:\n    address: 127.0.0.1:{port}\naccessLog:\n  filePath: access.log\n"),
    )
    .unwrap();
    let name = format!("gangway-test-root-file-{}", std::process::id());
    docker(&[
        "run",
        "-d",
        "--name",
        &name,
        "--label",
        &format!("{}=root-file", support::docker::RUN_LABEL),
        "--network",
        "host",
        "-v",
        &format!("{}:/traefik.yml:ro", file.display()),
        GANGWAY_IMAGE,
    ])
    .await
    .expect("start the image");
    // A request answered (404: no router) is what the access log records.
    let answered = support::within(Duration::from_secs(20), || async {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let Ok(mut tcp) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await else {
            return false;
        };
        let ask = b"GET / HTTP/1.1\r\nHost: root.test\r\nConnection: close\r\n\r\n";
        let mut answer = String::new();
        tcp.write_all(ask).await.is_ok()
            && tcp.read_to_string(&mut answer).await.is_ok()
            && answer.starts_with("HTTP/1.1 404")
    })
    .await;
    let logged = support::within(Duration::from_secs(10), || async {
        docker(&["diff", &name])
            .await
            .is_ok_and(|d| d.lines().any(|l| l.trim() == "A /access.log"))
    })
    .await;
    let log = docker(&["logs", &name]).await;
    let _ = docker(&["rm", "-f", &name]).await;
    assert!(
        answered,
        "the entry point of /traefik.yml never listened: {log:?}"
    );
    assert!(logged, "no /access.log was written: {log:?}");
}
