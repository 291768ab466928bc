//! Running one command hook: `sh -c COMMAND` in the thread's directory, the input JSON on
//! stdin, in a process group of its own under rein's supervisor (so what it starts, even a
//! `setsid` child, dies with it, and everything dies when rein does). The timeout and a
//! cancelled turn kill the group. Stdout and stderr are read to the end but kept only up
//! to [`OUTPUT_LIMIT`] each, so a hook printing without end costs no memory.
//!
//! ```text
//! rein ── supervisor (subreaper, rein's group) ── sh -c COMMAND (its own group) ── …
//! ```

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use rein_core::hooks::{HookResponse, HookVerdict};
use rustix::process::{kill_process_group, Pid, Signal};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

/// What is kept of each of a hook's stdout and stderr.
pub const OUTPUT_LIMIT: usize = 1 << 20;

/// How long the supervisor may take to end once the group was killed.
const REAP_GRACE: Duration = Duration::from_secs(5);

#[derive(Clone, Debug)]
pub struct RunSpec {
    pub command: String,
    pub cwd: PathBuf,
    /// `CLAUDE_PROJECT_DIR` and `REIN_PROJECT_DIR`.
    pub project_dir: PathBuf,
    pub timeout: Duration,
}

/// A hook's process group: killed when this is dropped (a plain signal, so it holds
/// whatever state the runtime is in, an aborted turn included).
struct Group(Option<Pid>);

impl Group {
    fn kill(&self) {
        if let Some(pgid) = self.0 {
            let _ = kill_process_group(pgid, Signal::KILL);
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

fn failed(message: String) -> HookResponse {
    HookResponse {
        exit_code: None,
        verdict: HookVerdict::Failed { message },
    }
}

/// Run `spec` with `input` on its stdin.
pub async fn run(spec: RunSpec, input: Vec<u8>, cancel: CancellationToken) -> HookResponse {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(&spec.command)
        .current_dir(&spec.cwd)
        .env("CLAUDE_PROJECT_DIR", &spec.project_dir)
        .env("REIN_PROJECT_DIR", &spec.project_dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let supervisor = match rein_supervise::Supervisor::new() {
        Ok(s) => s,
        Err(e) => return failed(format!("could not set up its supervisor: {e}")),
    };
    // SAFETY: the closure forks and, in the supervisor, makes raw syscalls only on data
    // prepared before the fork (see `Supervisor::apply`).
    unsafe {
        command.pre_exec(move || supervisor.apply());
    }
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => return failed(format!("could not start `sh -c {}`: {e}", spec.command)),
    };
    let group = Group(child.id().and_then(|p| Pid::from_raw(p as i32)));
    let (Some(mut stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return failed("its pipes were not set up".to_owned());
    };
    let ended = {
        let write = async move {
            // A hook that does not read its input may close stdin early: not an error.
            let _ = stdin.write_all(&input).await;
            drop(stdin);
        };
        let io = async {
            let ((), out, err, status) =
                tokio::join!(write, bounded(stdout), bounded(stderr), child.wait());
            (out, err, status)
        };
        tokio::select! {
            r = tokio::time::timeout(spec.timeout, io) => Some(r),
            () = cancel.cancelled() => None,
        }
    };
    let response = match ended {
        Some(Ok((out, err, Ok(status)))) => {
            let stdout = String::from_utf8_lossy(&out);
            let stderr = String::from_utf8_lossy(&err);
            HookResponse {
                exit_code: status.code(),
                verdict: crate::output::verdict(status.code(), &stdout, &stderr),
            }
        }
        Some(Ok((_, _, Err(e)))) => failed(format!("could not wait for it: {e}")),
        Some(Err(_)) => failed(format!(
            "it timed out after {} s and its process group was killed",
            spec.timeout.as_secs_f64()
        )),
        None => failed("the turn ended first; its process group was killed".to_owned()),
    };
    group.kill();
    // The supervisor ends once it has killed what the hook left behind.
    if tokio::time::timeout(REAP_GRACE, child.wait())
        .await
        .is_err()
    {
        let _ = child.start_kill();
        let _ = child.wait().await;
    }
    response
}

/// Everything `reader` gives, kept up to [`OUTPUT_LIMIT`].
async fn bounded(mut reader: impl AsyncRead + Unpin) -> Vec<u8> {
    let mut kept = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => return kept,
            Ok(n) => {
                let room = OUTPUT_LIMIT - kept.len();
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
}
