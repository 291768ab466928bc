//! Running a command inside the sandbox policy. [`Sandbox::detect`] finds, once, which
//! mechanism this machine supports; [`Sandbox::command`] builds a `Command` that runs
//! the argv confined to the policy, or refuses with the reason when no mechanism works.
//!
//! Architecture invariant: a command whose permit says `Enforced` either runs confined
//! or does not run. There is no silent unsandboxed fallback.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rein_protocol::SandboxPolicy;
use tokio::process::Command;

use super::policy::WritableRoots;

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

/// The sandbox support of this machine, detected once.
#[derive(Clone, Debug)]
pub struct Sandbox {
    mechanism: Result<SandboxMechanism, String>,
}

impl Sandbox {
    /// Probe this machine's support.
    pub fn detect() -> Self {
        Self {
            mechanism: Err("no sandbox mechanism is implemented for this platform yet".to_owned()),
        }
    }

    /// A sandbox that refuses every command (for tests of the refusal path).
    pub fn unavailable(reason: impl Into<String>) -> Self {
        Self {
            mechanism: Err(reason.into()),
        }
    }

    pub fn mechanism(&self) -> Option<SandboxMechanism> {
        self.mechanism.as_ref().ok().copied()
    }

    /// Why sandboxed commands cannot run, if they cannot.
    pub fn unavailable_reason(&self) -> Option<&str> {
        self.mechanism.as_ref().err().map(String::as_str)
    }

    /// A `Command` running `argv` confined to `spec`.
    pub fn command(
        &self,
        spec: &SandboxSpec,
        argv: &[String],
        cwd: &Path,
        env: &BTreeMap<String, String>,
    ) -> Result<Command, SandboxError> {
        let _ = (spec, argv, cwd, env);
        match &self.mechanism {
            Err(reason) => Err(SandboxError::Unavailable {
                reason: reason.clone(),
            }),
            Ok(_) => Err(SandboxError::Setup("not implemented".to_owned())),
        }
    }
}
