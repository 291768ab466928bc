//! Launching a command without copying rein's address space.
//!
//! A `pre_exec` hook forces `fork()` of the whole multi-threaded server for every command:
//! the kernel copies its page tables (tens of milliseconds once it serves a thousand
//! turns) only for the child's `execve` to throw them away. Instead rein spawns a
//! *trampoline* with no hook, which the standard library does with `posix_spawn`
//! (`clone(CLONE_VM | CLONE_VFORK)`, nothing copied): rein's own binary re-executed in a
//! hidden mode ([`TRAMPOLINE_ARG`]). The trampoline is a fresh, single-threaded, small
//! process; it makes the same confinement as before (`Confinement`, see `confine.rs`, or the
//! supervisor of an unconfined command) to itself and execs the command.
//!
//! ```text
//! rein ─posix_spawn→ trampoline = monitor (rein's pid ns) ── init (pid 1) ── command …
//! ```
//!
//! What the trampoline must do is handed over in its environment ([`REQUEST_VAR`], the
//! only variable it gets, so nothing like `LD_PRELOAD` meant for the command reaches
//! it); the command's environment is part of that request, readable only as its own
//! `/proc/<pid>/environ` will be after exec. The trampoline makes itself non-dumpable
//! before it reads the request.
//!
//! Lifetimes are unchanged: the trampoline is the process rein spawns, leads the
//! command's process group, and ends the way the command ends. rein's end is seen through
//! a pidfd of rein in place of the inherited life pipe (a pidfd polls readable when rein
//! is gone, even by SIGKILL); the trampoline checks that its parent is still that rein
//! after opening it, so a rein that died before cannot be missed.
//!
//! A setup failure in the trampoline cannot be returned by `spawn`: it is written to the
//! command's stderr (prefixed [`CONFINE_FAILED`] when confinement failed) and the
//! trampoline exits 126 (127 when the program is missing), as a shell would.

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use rein_protocol::SandboxPolicy;
use serde::{Deserialize, Serialize};
use tokio::process::Command;

use super::{Confinement, SandboxError, SandboxSpec};
use crate::policy::WritableRoots;

/// The hidden first argument that makes the rein binary a trampoline.
pub const TRAMPOLINE_ARG: &str = "__rein-sandbox-exec";
/// The trampoline's only environment variable: the command and how to confine it, as JSON.
pub const REQUEST_VAR: &str = "REIN_SANDBOX_EXEC";
/// How the trampoline's stderr line starts when the command could not be confined.
pub const CONFINE_FAILED: &str = "rein: the sandbox could not confine the command";

/// The kernel's limit on one environment string (`MAX_ARG_STRLEN`, 32 pages).
const MAX_ENV_STRING: usize = 32 * 4096;

/// The program re-executed as the trampoline, once registered ([`launch_through`]).
static TRAMPOLINE: OnceLock<PathBuf> = OnceLock::new();

/// Launch sandboxed and supervised commands through `program` (a binary that calls
/// [`run_if_trampoline`] first thing in `main`; rein passes `/proc/self/exe`). Without
/// it commands are spawned with a `pre_exec` hook, as a library user gets. Refused when
/// the kernel has no `pidfd_open` (Linux < 5.3), which the trampoline needs.
pub fn launch_through(program: PathBuf) -> Result<(), String> {
    // A relative path would be looked up from each command's cwd.
    if !program.is_absolute() {
        return Err(format!(
            "the trampoline {} is not an absolute path",
            program.display()
        ));
    }
    // SAFETY: getpid cannot fail.
    let me = unsafe { libc::getpid() };
    let fd = rein_supervise::sys::pidfd_open(me)
        .map_err(|e| format!("no pidfd_open here ({e}): commands are spawned by fork"))?;
    rein_supervise::sys::close(fd);
    TRAMPOLINE
        .set(program)
        .map_err(|_| "the trampoline is already registered".to_owned())
}

/// The registered trampoline, if any.
pub(crate) fn trampoline() -> Option<&'static Path> {
    TRAMPOLINE.get().map(PathBuf::as_path)
}

/// What the trampoline does to itself before exec.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub(crate) enum Mode {
    /// Landlock + seccomp, in namespaces when `namespaces` ([`Confinement`]).
    Confine {
        abi: i32,
        namespaces: bool,
        fresh_proc: bool,
        policy: SandboxPolicy,
        roots: Vec<PathBuf>,
        read_only: Vec<PathBuf>,
        unrestricted: bool,
        network: bool,
    },
    /// No sandbox, only the supervisor that ties the command to rein's lifetime.
    Supervise {
        /// rein's process group, which the supervisor joins.
        rein_group: i32,
    },
}

impl Mode {
    pub(crate) fn confine(
        abi: i32,
        namespaces: bool,
        fresh_proc: bool,
        spec: &SandboxSpec,
    ) -> Self {
        Self::Confine {
            abi,
            namespaces,
            fresh_proc,
            policy: spec.policy,
            roots: spec.writable.roots.clone(),
            read_only: spec.writable.read_only.clone(),
            unrestricted: spec.writable.unrestricted,
            network: spec.network,
        }
    }

    pub(crate) fn supervise() -> Self {
        // SAFETY: getpgrp cannot fail.
        let rein_group = unsafe { libc::getpgrp() };
        Self::Supervise { rein_group }
    }
}

/// One command for the trampoline.
#[derive(Debug, Serialize, Deserialize)]
struct Request {
    mode: Mode,
    argv: Vec<String>,
    cwd: PathBuf,
    env: BTreeMap<String, String>,
    /// rein's pid: the trampoline's parent, whose end ends the command.
    rein: i32,
}

/// A `Command` that runs the trampoline `program` for `argv`, or `None` when the request
/// does not fit in one environment string (the caller then spawns the old way).
pub(crate) fn command(
    program: &Path,
    mode: Mode,
    argv: &[String],
    cwd: &Path,
    env: &BTreeMap<String, String>,
) -> Result<Option<Command>, SandboxError> {
    if argv.is_empty() {
        return Err(SandboxError::EmptyCommand);
    }
    let request = Request {
        mode,
        argv: argv.to_vec(),
        cwd: cwd.to_owned(),
        env: env.clone(),
        // SAFETY: getpid cannot fail.
        rein: unsafe { libc::getpid() },
    };
    let json = serde_json::to_string(&request)
        .map_err(|e| SandboxError::Setup(format!("trampoline request: {e}")))?;
    if json.len() + REQUEST_VAR.len() + 2 > MAX_ENV_STRING {
        return Ok(None);
    }
    let mut cmd = Command::new(program);
    // The cwd is the command's: a missing one fails the spawn, as it did before.
    cmd.arg(TRAMPOLINE_ARG)
        .current_dir(cwd)
        .env_clear()
        .env(REQUEST_VAR, json);
    Ok(Some(cmd))
}

/// In `main`, before anything else: when this process is a trampoline, confine it and
/// exec the command (never returns); otherwise return at once.
pub fn run_if_trampoline() {
    if std::env::args_os().nth(1).as_deref() != Some(std::ffi::OsStr::new(TRAMPOLINE_ARG)) {
        return;
    }
    super::protect_this_process();
    let code = match run_trampoline() {
        Ok(never) => match never {},
        Err(failure) => {
            eprintln!("{}", failure.message);
            failure.code
        }
    };
    std::process::exit(code);
}

struct Failure {
    message: String,
    code: i32,
}

impl Failure {
    fn setup(what: impl std::fmt::Display) -> Self {
        Self {
            message: format!("{CONFINE_FAILED}: {what}"),
            code: 126,
        }
    }
}

/// Set once the confinement is complete, in the process that goes on to exec.
static CONFINED: AtomicBool = AtomicBool::new(false);

fn run_trampoline() -> Result<std::convert::Infallible, Failure> {
    let raw = std::env::var(REQUEST_VAR).map_err(|e| Failure::setup(format!("request: {e}")))?;
    let request: Request =
        serde_json::from_str(&raw).map_err(|e| Failure::setup(format!("request: {e}")))?;
    let rein_alive = watch_rein(request.rein)?;
    let (program, args) = request
        .argv
        .split_first()
        .ok_or_else(|| Failure::setup("empty command"))?;
    let mut cmd = std::process::Command::new(program);
    cmd.args(args)
        .current_dir(&request.cwd)
        .env_clear()
        .envs(&request.env);
    match request.mode {
        Mode::Confine {
            abi,
            namespaces,
            fresh_proc,
            policy,
            roots,
            read_only,
            unrestricted,
            network,
        } => {
            let spec = SandboxSpec {
                policy,
                writable: WritableRoots {
                    roots,
                    read_only,
                    unrestricted,
                },
                network,
            };
            let confinement = Confinement::with_life(
                abi,
                namespaces,
                fresh_proc,
                &spec,
                &request.cwd,
                rein_alive,
            )
            .map_err(Failure::setup)?;
            // SAFETY: this process is single-threaded; the hook makes the same syscalls
            // it makes after a fork of rein.
            unsafe {
                cmd.pre_exec(move || {
                    confinement.apply()?;
                    CONFINED.store(true, Ordering::SeqCst);
                    Ok(())
                });
            }
        }
        Mode::Supervise { rein_group } => {
            let supervisor = rein_supervise::Supervisor::with_group(rein_alive, rein_group);
            // SAFETY: as above.
            unsafe {
                cmd.pre_exec(move || {
                    supervisor.apply()?;
                    CONFINED.store(true, Ordering::SeqCst);
                    Ok(())
                });
            }
        }
    }
    // `exec` runs the hook in this process and returns only on failure.
    let err = cmd.exec();
    if !CONFINED.load(Ordering::SeqCst) {
        return Err(Failure::setup(err));
    }
    let code = if err.kind() == std::io::ErrorKind::NotFound {
        127
    } else {
        126
    };
    Err(Failure {
        message: format!("rein: cannot run `{program}`: {err}"),
        code,
    })
}

/// A close-on-exec pidfd of rein (`pid`), checked to be this process's parent.
fn watch_rein(pid: i32) -> Result<std::os::fd::RawFd, Failure> {
    let gone = || Failure {
        message: "rein: rein ended before the command started".to_owned(),
        code: 137,
    };
    let fd = match rein_supervise::sys::pidfd_open(pid) {
        Ok(fd) => fd,
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => return Err(gone()),
        Err(e) => return Err(Failure::setup(format!("pidfd_open: {e}"))),
    };
    // SAFETY: flags on a descriptor we own.
    if unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) } != 0 {
        return Err(Failure::setup(std::io::Error::last_os_error()));
    }
    // SAFETY: getppid cannot fail.
    if unsafe { libc::getppid() } != pid {
        return Err(gone());
    }
    Ok(fd)
}
