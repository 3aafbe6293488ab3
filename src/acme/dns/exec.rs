//! The `exec` provider: runs the user's program `EXEC_PATH` as
//! `EXEC_PATH present <fqdn> <value>` and `EXEC_PATH cleanup <fqdn> <value>`
//! (the record's name with its final dot), Traefik's convention, so that
//! any DNS API can be scripted. Exit status 0 is success; anything the
//! program writes on stderr is shown when it fails.

use super::{DnsError, DnsProvider, Env};
use futures_util::future::BoxFuture;
use std::path::PathBuf;
use std::time::Duration;

/// Longest run of the program.
const RUN_TIMEOUT: Duration = Duration::from_secs(120);
/// Most of its stderr shown in an error.
const STDERR_SHOWN: usize = 500;

/// The `exec` provider.
pub(super) struct Exec {
    program: PathBuf,
}

impl Exec {
    /// Reads `EXEC_PATH`.
    pub(super) fn from_env(mut env: Env<'_>) -> Result<Self, DnsError> {
        let program = env.required("EXEC_PATH")?;
        // Traefik's RAW mode hands the program the token and key
        // authorization instead; gangway only has the default mode.
        if let Some(mode) = env.optional("EXEC_MODE")?.filter(|m| !m.trim().is_empty()) {
            return Err(DnsError::BadEnv {
                variable: "EXEC_MODE".to_owned(),
                problem: format!(
                    "`{mode}` is not supported: gangway always passes the record's name and value"
                ),
            });
        }
        env.finish()?;
        Ok(Exec {
            program: PathBuf::from(program),
        })
    }

    async fn run(&self, action: &'static str, fqdn: &str, value: &str) -> Result<(), DnsError> {
        let error = |reason: String| DnsError::Exec {
            program: self.program.clone(),
            action,
            fqdn: fqdn.to_owned(),
            reason,
        };
        let child = tokio::process::Command::new(&self.program)
            .args([action, fqdn, value])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| error(format!("cannot start it: {e}")))?;
        let output = tokio::time::timeout(RUN_TIMEOUT, child.wait_with_output())
            .await
            .map_err(|_| error(format!("it ran longer than {}s", RUN_TIMEOUT.as_secs())))?
            .map_err(|e| error(format!("cannot wait for it: {e}")))?;
        if output.status.success() {
            return Ok(());
        }
        let stderr = String::from_utf8_lossy(&output.stderr);
        let stderr = stderr.trim();
        let shown: String = stderr.chars().take(STDERR_SHOWN).collect();
        Err(error(if shown.is_empty() {
            format!("it exited with {}", output.status)
        } else {
            format!("it exited with {}: {shown}", output.status)
        }))
    }
}

impl DnsProvider for Exec {
    fn name(&self) -> &'static str {
        "exec"
    }

    fn present<'a>(&'a self, fqdn: &'a str, value: &'a str) -> BoxFuture<'a, Result<(), DnsError>> {
        Box::pin(self.run("present", fqdn, value))
    }

    fn cleanup<'a>(&'a self, fqdn: &'a str, value: &'a str) -> BoxFuture<'a, Result<(), DnsError>> {
        Box::pin(self.run("cleanup", fqdn, value))
    }
}
