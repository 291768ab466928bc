//! Starting a stdio server: a minimal environment plus what the configuration names (so
//! rein's provider keys never reach a server that was not given them), its own process
//! group (so `npx`/`uv` grandchildren die with it), under rein's supervisor (so what
//! escapes the group, `setsid` children, dies with it too, and everything dies when rein
//! does, even by SIGKILL), stdout and stdin for the protocol, and stderr drained line by
//! line into the log, never to rein's stdout.
//!
//! ```text
//! rein ── supervisor (subreaper, rein's group) ── server (its own group) ── …
//! ```
//!
//! The process rein holds is the supervisor: it ends once the server has ended and the
//! supervisor has killed what the server left behind. So rein never kills the supervisor
//! first (that would orphan the server's `setsid` children); it kills the server's group
//! and waits for the supervisor.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use rustix::process::{kill_process_group, Pid, Signal};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// Read from the caller's environment (rein's own), passed in so tests choose it.
pub type Env = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// What every server gets from rein's environment, as Codex passes it.
pub const DEFAULT_ENV_VARS: &[&str] = &[
    "HOME", "LOGNAME", "PATH", "SHELL", "USER", "LANG", "LC_ALL", "TERM", "TMPDIR", "TZ",
];

/// How long a server may take to exit once its stdin closed, and then once told to.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// A server's process group: killed when this is dropped, whatever state the runtime is in
/// (a plain signal, no task to schedule).
#[derive(Debug)]
pub struct ProcessGroup(Option<Pid>);

impl ProcessGroup {
    pub fn signal(&self, signal: Signal) {
        if let Some(pgid) = self.0 {
            let _ = kill_process_group(pgid, signal);
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.signal(Signal::KILL);
    }
}

/// A running stdio server.
pub struct StdioProcess {
    pub child: Child,
    pub group: ProcessGroup,
    pub pid: Option<u32>,
}

impl StdioProcess {
    /// Kill the group at once and wait for the supervisor (a server that never got going).
    pub async fn kill(mut self) {
        self.group.signal(Signal::KILL);
        self.reap().await;
    }

    /// Wait for the supervisor, which ends once it has killed what the server left; should
    /// it not, kill it (the life pipe is then the last word, at rein's exit).
    async fn reap(&mut self) {
        if tokio::time::timeout(EXIT_GRACE, self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.start_kill();
            let _ = self.child.wait().await;
        }
    }

    /// Stop it: the caller has closed its stdin already; wait a little, then SIGTERM the
    /// group, wait again, and SIGKILL whatever is left of the group.
    pub async fn stop(mut self) {
        if tokio::time::timeout(EXIT_GRACE, self.child.wait())
            .await
            .is_err()
        {
            self.group.signal(Signal::TERM);
            if tokio::time::timeout(EXIT_GRACE, self.child.wait())
                .await
                .is_err()
            {
                self.group.signal(Signal::KILL);
                self.reap().await;
            }
        }
        // The supervisor killed the server's descendants; the group goes in any case (on
        // drop), for a kernel without the supervisor's child list.
    }
}

/// The directory a server runs in: its configured `cwd` (relative to the thread's), else
/// the thread's.
pub fn server_cwd(configured: Option<&Path>, thread_cwd: &Path) -> PathBuf {
    match configured {
        Some(dir) => thread_cwd.join(dir),
        None => thread_cwd.to_owned(),
    }
}

pub struct StdioSpec<'a> {
    pub server: &'a str,
    pub command: &'a str,
    pub args: &'a [String],
    pub env: &'a BTreeMap<String, String>,
    pub env_vars: &'a [String],
    pub cwd: &'a Path,
}

pub fn spawn(
    spec: &StdioSpec<'_>,
    parent_env: &Env,
) -> std::io::Result<(StdioProcess, ChildStdout, ChildStdin)> {
    let mut command = Command::new(spec.command);
    command
        .args(spec.args)
        .current_dir(spec.cwd)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    for name in DEFAULT_ENV_VARS
        .iter()
        .copied()
        .chain(spec.env_vars.iter().map(String::as_str))
    {
        if let Some(value) = parent_env(name) {
            command.env(name, value);
        }
    }
    command.envs(spec.env);
    let supervisor = rein_supervise::Supervisor::new()?;
    // SAFETY: the hook forks and, in the supervisor, makes raw syscalls only on data
    // prepared before the fork (see `Supervisor::apply`). No `kill_on_drop`: a dropped
    // server is ended through its group (on the group's drop), never by killing the
    // supervisor first.
    unsafe {
        command.pre_exec(move || supervisor.apply());
    }
    let mut child = command.spawn()?;
    let pid = child.id();
    let group = ProcessGroup(pid.and_then(|p| Pid::from_raw(p as i32)));
    let (Some(stdout), Some(stdin), Some(stderr)) =
        (child.stdout.take(), child.stdin.take(), child.stderr.take())
    else {
        return Err(std::io::Error::other("the server's pipes were not set up"));
    };
    let server = spec.server.to_owned();
    tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::info!(server = %server, "MCP server stderr: {line}");
        }
    });
    Ok((StdioProcess { child, group, pid }, stdout, stdin))
}
