//! Running a command inside the sandbox policy. [`Sandbox::detect`] finds, once, which
//! mechanism this machine supports; [`Sandbox::command`] builds a `Command` that runs
//! the argv confined to the policy, or refuses with the reason when no mechanism works.
//!
//! Mechanisms, best first (each is trusted only after it confined a real process here):
//! 1. Landlock + seccomp + namespaces (`confine`): mount and PID namespaces (inside a
//!    user namespace when not root) with a read-only view of everything but the writable
//!    roots ([`mounts`]), every capability dropped ([`caps`]), no-new-privs, Landlock
//!    (file writes; from ABI 6 the signal and abstract-socket scopes) and the seccomp
//!    filters ([`seccomp`]);
//! 2. bubblewrap ([`bwrap`]) where Landlock is missing;
//! 3. Landlock + seccomp without namespaces where the kernel forbids them: metadata
//!    outside the roots stays changeable, `.git` is protected by granting around it, and
//!    a supervisor ([`rein_supervise`]) bounds a command's lifetime.
//!
//! Commands that run unconfined ([`unconfined_command`]: full access, approved
//! escalations) get the same supervisor, so none outlives rein, even a SIGKILLed rein.
//!
//! [`Sandbox::report`] says which one is active and what fell back, for the front ends
//! to print at startup; [`verdict`] caches the detection under rein's home.
//!
//! A binary that registers a trampoline ([`launch`]; rein does) launches confined and
//! supervised commands without forking itself: the trampoline, spawned with
//! `posix_spawn`, applies the same confinement to itself and execs the command.
//!
//! Architecture invariant: a command whose permit says `Enforced` either runs confined
//! or does not run. There is no silent unsandboxed fallback.

use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use rein_protocol::{SandboxOptions, SandboxPolicy};
use serde::Serialize;
use tokio::process::Command;

use super::policy::WritableRoots;
use super::process::exec;

pub mod bwrap;
pub mod caps;
mod confine;
pub mod landlock;
pub mod launch;
pub mod mounts;
mod probe;
pub mod seccomp;
mod sys;

pub mod verdict;

pub(crate) use confine::Confinement;

/// Where [`Sandbox::detected`] caches its verdict, once a front end named rein's home.
static CACHE_HOME: OnceLock<PathBuf> = OnceLock::new();

/// How a sandboxed command is confined.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMechanism {
    /// Landlock and seccomp, applied in the child before exec (with namespaces where the
    /// kernel allows them).
    Landlock,
    /// The `bwrap` program (namespaces), where Landlock is unavailable.
    Bubblewrap,
}

/// What the sandbox must enforce for one command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SandboxSpec {
    pub policy: SandboxPolicy,
    pub writable: WritableRoots,
    pub network: bool,
}

impl SandboxSpec {
    pub fn new(policy: SandboxPolicy, cwd: &Path, options: &SandboxOptions) -> Self {
        Self {
            policy,
            writable: WritableRoots::for_policy(policy, cwd, options),
            network: options.network_access,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("no sandbox is available on this machine: {reason}")]
    Unavailable { reason: String },
    #[error("cannot prepare the sandbox: {0}")]
    Setup(String),
    #[error("empty command")]
    EmptyCommand,
}

/// What this machine supports, as detected (and cached, see [`verdict`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
enum Support {
    Landlock {
        abi: i32,
        /// Mount and PID namespaces (and a user namespace when not root) work.
        namespaces: bool,
        /// The PID namespace can have its own `/proc`.
        fresh_proc: bool,
    },
    Bubblewrap {
        program: PathBuf,
    },
    Unavailable(String),
}

/// Which mechanism is active and what it enforces, as front ends show it at startup
/// (stderr, and `initialize`'s answer).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxReport {
    /// `landlock`, `bubblewrap`, or `none` (sandboxed commands are refused).
    pub mechanism: String,
    /// The kernel's Landlock ABI, when it has Landlock.
    pub landlock_abi: Option<i32>,
    /// The guarantees in force, e.g. `pid-namespace`, `read-only-mounts`.
    pub features: Vec<String>,
    /// What is missing on this machine and what stands in for it.
    pub fallbacks: Vec<String>,
}

impl SandboxReport {
    /// One line for stderr.
    pub fn summary(&self) -> String {
        let mut line = format!("sandbox: {}", self.mechanism);
        if let Some(abi) = self.landlock_abi {
            line.push_str(&format!(" (Landlock ABI {abi})"));
        }
        if !self.features.is_empty() {
            line.push_str(&format!("; {}", self.features.join(", ")));
        }
        for fallback in &self.fallbacks {
            line.push_str(&format!("; fallback: {fallback}"));
        }
        line
    }
}

/// The sandbox support of this machine, detected once.
#[derive(Clone, Debug)]
pub struct Sandbox {
    support: Support,
    /// Why better mechanisms were not used.
    fallbacks: Vec<String>,
}

/// Make this process's memory and environment unreadable to other processes of the same
/// user (its `/proc/<pid>/environ`, `mem`, `fd`... then need `CAP_SYS_PTRACE`), so a
/// command cannot read the provider keys rein was started with. Children regain the
/// default when they exec.
pub fn protect_this_process() {
    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) } != 0 {
        tracing::warn!(
            "cannot make rein non-dumpable: {}",
            std::io::Error::last_os_error()
        );
    }
}

impl Sandbox {
    /// This process's sandbox, detected on first use and shared afterwards; from the
    /// verdict cached under rein's home once [`Sandbox::cache_verdict_in`] named it.
    pub fn detected() -> Arc<Sandbox> {
        static DETECTED: OnceLock<Arc<Sandbox>> = OnceLock::new();
        Arc::clone(DETECTED.get_or_init(|| {
            let Some(home) = CACHE_HOME.get() else {
                return Arc::new(verdict::probe());
            };
            let key = verdict::Key::current();
            let (sandbox, source) = verdict::load_or_probe(home, &key);
            if source == verdict::Source::Cached {
                verdict::recheck_later(home, key, sandbox.clone());
            }
            Arc::new(sandbox)
        }))
    }

    /// A command launched by this process failed to confine (see
    /// [`launch::CONFINE_FAILED`]): the cached verdict, if any, is dropped so the next
    /// start probes again.
    pub fn confinement_failed() {
        if let Some(home) = CACHE_HOME.get() {
            verdict::command_failed_to_confine(home);
        }
    }

    /// Cache the probe's verdict under `home` (rein's home), for [`Sandbox::detected`]:
    /// call it before the first detection. Later calls are ignored.
    pub fn cache_verdict_in(home: &Path) {
        let _ = CACHE_HOME.set(home.to_owned());
    }

    /// Probe this machine's support: Landlock + seccomp with namespaces first (each probe
    /// really confines a short-lived process), then bubblewrap, then Landlock + seccomp
    /// alone.
    pub fn detect() -> Self {
        let mut fallbacks = Vec::new();
        let abi = match landlock::kernel_abi() {
            Ok(abi) => Some(abi),
            Err(why) => {
                fallbacks.push(why);
                None
            }
        };
        if let Some(abi) = abi {
            match Self::landlock_with(abi, true, true) {
                Ok(sandbox) => return sandbox.with_fallbacks(fallbacks),
                Err(why) => fallbacks.push(format!("own /proc per command refused: {why}")),
            }
            match Self::landlock_with(abi, true, false) {
                Ok(sandbox) => return sandbox.with_fallbacks(fallbacks),
                Err(why) => fallbacks.push(format!("namespaces unavailable: {why}")),
            }
        }
        match Self::bubblewrap() {
            Ok(sandbox) => return sandbox.with_fallbacks(fallbacks),
            Err(why) => fallbacks.push(why),
        }
        if let Some(abi) = abi {
            if let Ok(sandbox) = Self::landlock_with(abi, false, false) {
                fallbacks.push(
                    "Landlock without namespaces: metadata outside the roots stays \
                     changeable, processes are bounded by their process group only"
                        .to_owned(),
                );
                return sandbox.with_fallbacks(fallbacks);
            }
        }
        let reason = fallbacks.join("; ");
        Self::unavailable(reason)
    }

    fn with_fallbacks(mut self, fallbacks: Vec<String>) -> Self {
        self.fallbacks = fallbacks;
        self
    }

    fn landlock_with(abi: i32, namespaces: bool, fresh_proc: bool) -> Result<Self, String> {
        probe::landlock(abi, namespaces, fresh_proc)?;
        Ok(Self {
            support: Support::Landlock {
                abi,
                namespaces,
                fresh_proc,
            },
            fallbacks: Vec::new(),
        })
    }

    /// Landlock + seccomp (with namespaces when the kernel allows them), or why it cannot
    /// be used here.
    pub fn landlock() -> Result<Self, String> {
        let abi = landlock::kernel_abi()?;
        Self::landlock_with(abi, true, true)
            .or_else(|_| Self::landlock_with(abi, true, false))
            .or_else(|_| Self::landlock_with(abi, false, false))
    }

    /// Landlock + seccomp without namespaces, as on machines that forbid them: a root
    /// holding `.git` is then granted entry by entry around it, so new entries cannot be
    /// created directly in that root.
    pub fn landlock_without_namespaces() -> Result<Self, String> {
        let abi = landlock::kernel_abi()?;
        Self::landlock_with(abi, false, false)
    }

    /// Bubblewrap only, or why it cannot be used here.
    pub fn bubblewrap() -> Result<Self, String> {
        let program = bwrap::find().ok_or("bubblewrap (`bwrap`) is not installed")?;
        probe::bubblewrap(&program).map_err(|e| format!("bubblewrap does not work here: {e}"))?;
        Ok(Self {
            support: Support::Bubblewrap { program },
            fallbacks: Vec::new(),
        })
    }

    /// A sandbox that refuses every command.
    pub fn unavailable(reason: impl Into<String>) -> Self {
        Self {
            support: Support::Unavailable(reason.into()),
            fallbacks: Vec::new(),
        }
    }

    pub fn mechanism(&self) -> Option<SandboxMechanism> {
        match self.support {
            Support::Landlock { .. } => Some(SandboxMechanism::Landlock),
            Support::Bubblewrap { .. } => Some(SandboxMechanism::Bubblewrap),
            Support::Unavailable(_) => None,
        }
    }

    /// Whether commands get PID (and mount) namespaces, so nothing they start outlives
    /// them.
    pub fn has_namespaces(&self) -> bool {
        matches!(
            self.support,
            Support::Landlock {
                namespaces: true,
                ..
            } | Support::Bubblewrap { .. }
        )
    }

    /// Why sandboxed commands cannot run, if they cannot.
    pub fn unavailable_reason(&self) -> Option<&str> {
        match &self.support {
            Support::Unavailable(reason) => Some(reason),
            _ => None,
        }
    }

    /// What is active, for front ends to show.
    pub fn report(&self) -> SandboxReport {
        let own = |names: &[&str]| names.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let (mechanism, landlock_abi, features) = match &self.support {
            Support::Landlock {
                abi,
                namespaces,
                fresh_proc,
            } => {
                let mut features =
                    own(&["landlock-fs", "seccomp", "no-capabilities", "no-new-privs"]);
                if *namespaces {
                    features.extend(own(&["pid-namespace", "read-only-mounts", "minimal-dev"]));
                    if *fresh_proc {
                        features.push("own-proc".to_owned());
                    }
                }
                features.extend(
                    landlock::scopes(*abi, false)
                        .into_iter()
                        .map(|s| format!("scope-{s}")),
                );
                ("landlock", Some(*abi), features)
            }
            Support::Bubblewrap { .. } => (
                "bubblewrap",
                landlock::kernel_abi().ok(),
                own(&[
                    "seccomp",
                    "no-capabilities",
                    "no-new-privs",
                    "pid-namespace",
                    "read-only-mounts",
                    "minimal-dev",
                    "own-proc",
                    "network-namespace",
                ]),
            ),
            Support::Unavailable(_) => ("none", landlock::kernel_abi().ok(), Vec::new()),
        };
        let mut fallbacks = self.fallbacks.clone();
        if let Support::Landlock { abi, .. } = &self.support {
            if *abi < 6 {
                fallbacks.push(format!(
                    "Landlock ABI {abi} has no signal or abstract-socket scope: the PID \
                     namespace and the seccomp socket rule stand in"
                ));
            }
        }
        if let Support::Unavailable(reason) = &self.support {
            fallbacks.push(format!("sandboxed commands are refused: {reason}"));
        }
        SandboxReport {
            mechanism: mechanism.to_owned(),
            landlock_abi,
            features,
            fallbacks,
        }
    }

    /// A `Command` running `argv` confined to `spec`.
    pub fn command(
        &self,
        spec: &SandboxSpec,
        argv: &[String],
        cwd: &Path,
        env: &BTreeMap<String, String>,
    ) -> Result<Command, SandboxError> {
        verdict::recheck_if_pending();
        match &self.support {
            Support::Unavailable(reason) => Err(SandboxError::Unavailable {
                reason: reason.clone(),
            }),
            Support::Bubblewrap { program } => {
                let filters = seccomp::filters(spec.network)?;
                let fds = filters
                    .raw_programs()
                    .iter()
                    .map(|bytes| program_fd(bytes))
                    .collect::<Result<Vec<OwnedFd>, _>>()?;
                let raw: Vec<i32> = fds.iter().map(AsRawFd::as_raw_fd).collect();
                let wrapped = bwrap::wrap(program, spec, cwd, argv, &raw);
                // bwrap dies with its parent (`--die-with-parent`): the supervisor, which
                // dies with rein. (Forked, not through the trampoline: the hook below must
                // hand bwrap the filters' descriptors.)
                let mut cmd = forked_unconfined_command(&wrapped, cwd, env)?;
                // SAFETY: the hook only clears close-on-exec on descriptors it owns.
                unsafe {
                    cmd.pre_exec(move || {
                        for fd in &fds {
                            if libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, 0) != 0 {
                                return Err(std::io::Error::last_os_error());
                            }
                        }
                        Ok(())
                    });
                }
                Ok(cmd)
            }
            Support::Landlock {
                abi,
                namespaces,
                fresh_proc,
            } => {
                if let Some(program) = launch::trampoline() {
                    let mode = launch::Mode::confine(*abi, *namespaces, *fresh_proc, spec);
                    if let Some(cmd) = launch::command(program, mode, argv, cwd, env)? {
                        return Ok(cmd);
                    }
                }
                let confinement = Confinement::new(*abi, *namespaces, *fresh_proc, spec, cwd)?;
                let mut cmd =
                    exec::command(argv, cwd, env).map_err(|_| SandboxError::EmptyCommand)?;
                // SAFETY: the hook only makes syscalls on data prepared before the fork
                // (see `Confinement::apply`), which is safe between fork and exec.
                unsafe {
                    cmd.pre_exec(move || confinement.apply());
                }
                Ok(cmd)
            }
        }
    }
}

/// A `Command` running `argv` outside any sandbox, under a supervisor that kills it and
/// everything it started when it ends or when rein does ([`rein_supervise`]).
pub fn unconfined_command(
    argv: &[String],
    cwd: &Path,
    env: &BTreeMap<String, String>,
) -> Result<Command, SandboxError> {
    if let Some(program) = launch::trampoline() {
        if let Some(cmd) = launch::command(program, launch::Mode::supervise(), argv, cwd, env)? {
            return Ok(cmd);
        }
    }
    forked_unconfined_command(argv, cwd, env)
}

/// [`unconfined_command`] with the supervisor set up in a `pre_exec` hook.
fn forked_unconfined_command(
    argv: &[String],
    cwd: &Path,
    env: &BTreeMap<String, String>,
) -> Result<Command, SandboxError> {
    let supervisor = rein_supervise::Supervisor::new()
        .map_err(|e| SandboxError::Setup(format!("supervisor pipe: {e}")))?;
    let mut cmd = exec::command(argv, cwd, env).map_err(|_| SandboxError::EmptyCommand)?;
    // SAFETY: the hook forks and, in the supervisor, makes raw syscalls only on data
    // prepared before the fork (see `Supervisor::apply`).
    unsafe {
        cmd.pre_exec(move || supervisor.apply());
    }
    Ok(cmd)
}

/// A memory file holding `bytes`, positioned at its start, close-on-exec.
fn program_fd(bytes: &[u8]) -> Result<OwnedFd, SandboxError> {
    use std::io::{Seek, Write};
    let setup = |e: std::io::Error| SandboxError::Setup(format!("seccomp program: {e}"));
    // SAFETY: a NUL-terminated name and flags; the descriptor is owned below.
    let fd = unsafe { libc::memfd_create(c"rein-seccomp".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(setup(std::io::Error::last_os_error()));
    }
    // SAFETY: just created, owned by nobody else.
    let mut file = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    file.write_all(bytes).map_err(setup)?;
    file.rewind().map_err(setup)?;
    Ok(OwnedFd::from(file))
}
