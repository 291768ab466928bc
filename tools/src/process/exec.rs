//! Runs one command to completion: spawns it in its own process group, streams its
//! merged stdout/stderr as text deltas, keeps a bounded head+tail capture, and enforces
//! the timeout and cancellation by killing the whole group. When the command exits, any
//! process it left behind in its group is killed too.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

use super::capture::{HeadTailBuffer, Utf8Decoder};
use super::group::ProcessGroupGuard;

/// After the command exits, how long to wait for pipes held open by processes that
/// escaped the group (e.g. via `setsid`) before giving up on their output.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExecLimits {
    pub timeout: Duration,
    /// Bytes of output kept (head + tail).
    pub output_cap: usize,
}

/// How a command ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitKind {
    Code(i32),
    Signal(i32),
    TimedOut,
    Cancelled,
}

impl ExitKind {
    pub fn success(self) -> bool {
        self == ExitKind::Code(0)
    }

    /// How the command ended, as clients are told; `timeout` is the limit it ran under.
    pub fn status(self, timeout: Duration) -> rein_protocol::ExitStatus {
        use rein_protocol::ExitStatus;
        match self {
            ExitKind::Code(code) => ExitStatus::Code { code },
            ExitKind::Signal(signal) => ExitStatus::Signal { signal },
            ExitKind::TimedOut => ExitStatus::TimedOut {
                after_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
            },
            ExitKind::Cancelled => ExitStatus::Cancelled,
        }
    }

    /// The conventional shell exit code.
    pub fn code(self) -> i32 {
        match self {
            ExitKind::Code(c) => c,
            ExitKind::Signal(s) => 128 + s,
            ExitKind::TimedOut => 124,
            ExitKind::Cancelled => 130,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecOutcome {
    pub exit: ExitKind,
    /// stdout and stderr interleaved as they arrived, truncated to the cap.
    pub output: String,
    pub omitted_bytes: u64,
    pub duration: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("cannot run `{program}` in {cwd}: {source}")]
    Spawn {
        program: String,
        cwd: String,
        #[source]
        source: std::io::Error,
    },
    #[error("waiting for the command failed: {0}")]
    Wait(#[source] std::io::Error),
    #[error("empty command")]
    EmptyCommand,
}

/// A `Command` for `argv` with exactly `env`, ready for [`run`].
pub fn command(
    argv: &[String],
    cwd: &Path,
    env: &std::collections::BTreeMap<String, String>,
) -> Result<Command, ExecError> {
    let (program, args) = argv.split_first().ok_or(ExecError::EmptyCommand)?;
    let mut cmd = Command::new(program);
    cmd.args(args).current_dir(cwd).env_clear().envs(env);
    Ok(cmd)
}

/// Run `cmd` to completion. `on_delta` receives output text as it arrives.
pub async fn run(
    mut cmd: Command,
    limits: ExecLimits,
    cancel: &CancellationToken,
    on_delta: &mut (dyn FnMut(String) + Send),
) -> Result<ExecOutcome, ExecError> {
    let started = Instant::now();
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let std_cmd = cmd.as_std();
    let program = std_cmd.get_program().to_string_lossy().into_owned();
    let cwd = std_cmd
        .get_current_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_default();
    let mut child = cmd.spawn().map_err(|source| ExecError::Spawn {
        program,
        cwd,
        source,
    })?;
    let group = ProcessGroupGuard::new(child.id().unwrap_or(0));
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();

    let mut capture = HeadTailBuffer::new(limits.output_cap);
    let (mut out_dec, mut err_dec) = (Utf8Decoder::default(), Utf8Decoder::default());
    let (mut out_buf, mut err_buf) = ([0u8; 8192], [0u8; 8192]);
    let deadline = tokio::time::Instant::now() + limits.timeout;
    let mut drain_deadline = deadline;
    let mut killed: Option<ExitKind> = None;
    let mut exit: Option<ExitKind> = None;

    loop {
        if exit.is_some() && stdout.is_none() && stderr.is_none() {
            break;
        }
        tokio::select! {
            read = read_some(&mut stdout, &mut out_buf) => {
                forward(read, &out_buf, &mut stdout, &mut capture, &mut out_dec, on_delta);
            }
            read = read_some(&mut stderr, &mut err_buf) => {
                forward(read, &err_buf, &mut stderr, &mut capture, &mut err_dec, on_delta);
            }
            status = child.wait(), if exit.is_none() => {
                let status = status.map_err(ExecError::Wait)?;
                // Whatever the command left running in its group dies with it.
                group.kill();
                exit = Some(killed.unwrap_or_else(|| exit_kind(status)));
                drain_deadline = tokio::time::Instant::now() + DRAIN_GRACE;
            }
            () = tokio::time::sleep_until(deadline), if exit.is_none() && killed.is_none() => {
                killed = Some(ExitKind::TimedOut);
                group.kill();
            }
            () = cancel.cancelled(), if exit.is_none() && killed.is_none() => {
                killed = Some(ExitKind::Cancelled);
                group.kill();
            }
            () = tokio::time::sleep_until(drain_deadline), if exit.is_some() => break,
        }
    }
    for rest in [out_dec.finish(), err_dec.finish()] {
        if !rest.is_empty() {
            on_delta(rest);
        }
    }
    Ok(ExecOutcome {
        exit: exit.unwrap_or(ExitKind::Cancelled),
        output: capture.render(),
        omitted_bytes: capture.omitted(),
        duration: started.elapsed(),
    })
}

async fn read_some<R: tokio::io::AsyncRead + Unpin>(
    pipe: &mut Option<R>,
    buf: &mut [u8],
) -> std::io::Result<usize> {
    match pipe {
        Some(p) => p.read(buf).await,
        None => std::future::pending().await,
    }
}

fn forward<R>(
    read: std::io::Result<usize>,
    buf: &[u8],
    pipe: &mut Option<R>,
    capture: &mut HeadTailBuffer,
    decoder: &mut Utf8Decoder,
    on_delta: &mut (dyn FnMut(String) + Send),
) {
    match read {
        Ok(0) | Err(_) => *pipe = None,
        Ok(n) => {
            capture.push(&buf[..n]);
            let text = decoder.decode(&buf[..n]);
            if !text.is_empty() {
                on_delta(text);
            }
        }
    }
}

fn exit_kind(status: std::process::ExitStatus) -> ExitKind {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => ExitKind::Code(code),
        (None, Some(sig)) => ExitKind::Signal(sig),
        (None, None) => ExitKind::Code(-1),
    }
}
