//! Running a command inside the sandbox policy. [`Sandbox::detect`] finds, once, which
//! mechanism this machine supports; [`Sandbox::command`] builds a `Command` that runs
//! the argv confined to the policy, or refuses with the reason when no mechanism works.
//!
//! Architecture invariant: a command whose permit says `Enforced` either runs confined
//! or does not run. There is no silent unsandboxed fallback.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use std::os::fd::OwnedFd;

use rein_protocol::SandboxPolicy;
use seccompiler::BpfProgram;
use tokio::process::Command;

use super::policy::WritableRoots;
use super::process::exec;
use namespace::ReadOnlyMounts;

pub mod bwrap;
pub mod landlock;
pub mod namespace;
mod probe;
pub mod seccomp;

/// How a sandboxed command is confined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SandboxMechanism {
    /// Landlock (file system) and seccomp (network), applied in the child before exec.
    Landlock,
    /// The `bwrap` program (mount namespace), where Landlock is unavailable.
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
    pub fn new(policy: SandboxPolicy, cwd: &Path, extra_roots: &[PathBuf], network: bool) -> Self {
        Self {
            policy,
            writable: WritableRoots::for_policy(policy, cwd, extra_roots),
            network,
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

/// What this machine supports, as detected.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Support {
    Landlock {
        abi: i32,
        /// Whether read-only places can be bind-mounted in a private mount namespace.
        mount_namespaces: bool,
    },
    Bubblewrap {
        program: PathBuf,
    },
    Unavailable(String),
}

/// The sandbox support of this machine, detected once.
#[derive(Clone, Debug)]
pub struct Sandbox {
    support: Support,
}

impl Sandbox {
    /// Probe this machine's support: Landlock + seccomp first (each probe really confines
    /// a short-lived process), then bubblewrap.
    pub fn detect() -> Self {
        let landlock_failure = match landlock::kernel_abi() {
            Ok(abi) => match probe::landlock(abi, false) {
                Ok(()) => {
                    return Self {
                        support: Support::Landlock {
                            abi,
                            mount_namespaces: probe::landlock(abi, true).is_ok(),
                        },
                    }
                }
                Err(e) => format!("Landlock is supported but confining a process failed: {e}"),
            },
            Err(why) => why,
        };
        match Self::bubblewrap() {
            Ok(sandbox) => sandbox,
            Err(bwrap_failure) => Self::unavailable(format!("{landlock_failure}; {bwrap_failure}")),
        }
    }

    /// Landlock + seccomp only, or why it cannot be used here.
    pub fn landlock() -> Result<Self, String> {
        let abi = landlock::kernel_abi()?;
        probe::landlock(abi, false).map_err(|e| e.to_string())?;
        Ok(Self {
            support: Support::Landlock {
                abi,
                mount_namespaces: probe::landlock(abi, true).is_ok(),
            },
        })
    }

    /// Landlock + seccomp without mount namespaces, as on machines that forbid them:
    /// a root holding `.git` is then granted child by child around it, so new entries
    /// cannot be created directly in that root.
    pub fn landlock_without_namespaces() -> Result<Self, String> {
        let abi = landlock::kernel_abi()?;
        probe::landlock(abi, false).map_err(|e| e.to_string())?;
        Ok(Self {
            support: Support::Landlock {
                abi,
                mount_namespaces: false,
            },
        })
    }

    /// Bubblewrap only, or why it cannot be used here.
    pub fn bubblewrap() -> Result<Self, String> {
        let program = bwrap::find().ok_or("bubblewrap (`bwrap`) is not installed")?;
        probe::bubblewrap(&program).map_err(|e| format!("bubblewrap does not work here: {e}"))?;
        Ok(Self {
            support: Support::Bubblewrap { program },
        })
    }

    /// A sandbox that refuses every command.
    pub fn unavailable(reason: impl Into<String>) -> Self {
        Self {
            support: Support::Unavailable(reason.into()),
        }
    }

    pub fn mechanism(&self) -> Option<SandboxMechanism> {
        match self.support {
            Support::Landlock { .. } => Some(SandboxMechanism::Landlock),
            Support::Bubblewrap { .. } => Some(SandboxMechanism::Bubblewrap),
            Support::Unavailable(_) => None,
        }
    }

    /// Why sandboxed commands cannot run, if they cannot.
    pub fn unavailable_reason(&self) -> Option<&str> {
        match &self.support {
            Support::Unavailable(reason) => Some(reason),
            _ => None,
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
        match &self.support {
            Support::Unavailable(reason) => Err(SandboxError::Unavailable {
                reason: reason.clone(),
            }),
            Support::Bubblewrap { program } => {
                let wrapped = bwrap::wrap(program, spec, cwd, argv);
                exec::command(&wrapped, cwd, env).map_err(|_| SandboxError::EmptyCommand)
            }
            Support::Landlock {
                abi,
                mount_namespaces,
            } => {
                let confinement = Confinement::new(*abi, *mount_namespaces, spec)?;
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

/// Everything the child applies before exec, prepared in the parent.
pub(crate) struct Confinement {
    mounts: ReadOnlyMounts,
    ruleset: OwnedFd,
    network_block: Option<BpfProgram>,
}

impl Confinement {
    pub(crate) fn new(
        abi: i32,
        mount_namespaces: bool,
        spec: &SandboxSpec,
    ) -> Result<Self, SandboxError> {
        let read_only = if mount_namespaces {
            spec.writable.read_only.clone()
        } else {
            Vec::new()
        };
        let targets = landlock::write_targets(&spec.writable, !mount_namespaces);
        Ok(Self {
            mounts: ReadOnlyMounts::new(&read_only)?,
            ruleset: landlock::ruleset(abi, &targets)?,
            network_block: if spec.network {
                None
            } else {
                Some(seccomp::network_block()?)
            },
        })
    }

    /// In the child: mounts first (Landlock forbids changing them afterwards), then the
    /// file-system ruleset, then the network filter.
    pub(crate) fn apply(&self) -> std::io::Result<()> {
        self.mounts.apply()?;
        landlock::restrict_self(&self.ruleset)?;
        if let Some(program) = &self.network_block {
            seccomp::install(program)?;
        }
        Ok(())
    }
}
