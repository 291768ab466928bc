//! The pure decision: approval policy × sandbox policy × what the call wants to do →
//! [`Verdict`]. No I/O besides resolving paths, no state besides the session approvals
//! passed in, so every cell of the matrix is a unit test.
//!
//! Architecture invariant: `DeniedBySandbox` is final. It is returned only where the
//! policy leaves no one to ask (approval policy `never`, or no sandbox mechanism to run a
//! sandboxed command in), and no approval path leads around it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rein_protocol::{ApprovalPolicy, SandboxOptions, SandboxPolicy};

use super::paths::{self, WritableRoots};
use super::safe_commands::{is_known_safe, is_safe_env};
use super::session::SessionApprovals;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    /// The call fails; no prompt.
    DeniedBySandbox {
        reason: String,
    },
    /// Ask the user; run only if they approve.
    NeedsApproval {
        reason: String,
    },
}

/// What a call wants to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    Command {
        argv: Vec<String>,
        /// What the call sets on top of the command's environment.
        env: BTreeMap<String, String>,
        cwd: PathBuf,
        /// The model asked to run outside the sandbox.
        escalate: bool,
        justification: Option<String>,
    },
    /// Write or delete these files (absolute or relative to the turn's cwd).
    Patch { paths: Vec<PathBuf> },
}

/// Everything the judge looks at besides the action.
#[derive(Clone, Copy, Debug)]
pub struct JudgeInput<'a> {
    pub approval: ApprovalPolicy,
    pub sandbox: SandboxPolicy,
    pub cwd: &'a Path,
    /// The thread's sandbox refinements (extra roots, network, temp dirs).
    pub options: &'a SandboxOptions,
    /// Why sandboxed commands cannot run here, if they cannot.
    pub sandbox_unavailable: Option<&'a str>,
    pub session: &'a SessionApprovals,
}

pub fn judge(input: &JudgeInput<'_>, action: &Action) -> Verdict {
    match action {
        Action::Command {
            argv,
            env,
            escalate,
            justification,
            ..
        } => judge_command(input, argv, env, *escalate, justification.as_deref()),
        Action::Patch { paths } => judge_patch(input, paths),
    }
}

fn judge_command(
    input: &JudgeInput<'_>,
    argv: &[String],
    env: &BTreeMap<String, String>,
    escalate: bool,
    justification: Option<&str>,
) -> Verdict {
    let sandboxed = input.sandbox != SandboxPolicy::DangerFullAccess;
    // A grant is for an argv prefix: a variable that loads code (`LD_PRELOAD`, `BASH_ENV`)
    // would make the granted command something else.
    let remembered = input.session.covers_command(argv) && is_safe_env(env);
    if escalate && sandboxed {
        if remembered {
            return Verdict::Allowed;
        }
        if input.approval == ApprovalPolicy::Never {
            return Verdict::DeniedBySandbox {
                reason: "running outside the sandbox needs the user's approval, and the \
                         approval policy is `never`"
                    .to_owned(),
            };
        }
        return Verdict::NeedsApproval {
            reason: match justification {
                Some(j) => format!("the command asks to run outside the sandbox: {j}"),
                None => "the command asks to run outside the sandbox".to_owned(),
            },
        };
    }
    if sandboxed {
        if let Some(why) = input.sandbox_unavailable {
            return Verdict::DeniedBySandbox {
                reason: format!(
                    "the sandbox policy requires a sandbox, but none is available: {why}"
                ),
            };
        }
    }
    if input.approval == ApprovalPolicy::Untrusted && !remembered && !is_known_safe(argv, env) {
        return Verdict::NeedsApproval {
            reason: "the command is not a known-safe read-only command".to_owned(),
        };
    }
    Verdict::Allowed
}

fn judge_patch(input: &JudgeInput<'_>, paths: &[PathBuf]) -> Verdict {
    let roots = WritableRoots::for_policy(input.sandbox, input.cwd, input.options);
    let not_approved =
        |p: &&PathBuf| !paths::resolve(input.cwd, p).is_some_and(|r| input.session.covers_path(&r));
    if input.approval == ApprovalPolicy::Untrusted {
        return match paths.iter().find(not_approved) {
            None => Verdict::Allowed,
            Some(_) => Verdict::NeedsApproval {
                reason: "file edits need approval under the `untrusted` policy".to_owned(),
            },
        };
    }
    let outside: Vec<String> = paths
        .iter()
        .filter(|p| !roots.allows_write(input.cwd, p))
        .filter(not_approved)
        .map(|p| p.display().to_string())
        .collect();
    if outside.is_empty() {
        return Verdict::Allowed;
    }
    let what = format!(
        "the patch writes outside the writable roots of the `{}` sandbox: {}",
        input.sandbox.as_str(),
        outside.join(", ")
    );
    if input.approval == ApprovalPolicy::Never {
        Verdict::DeniedBySandbox { reason: what }
    } else {
        Verdict::NeedsApproval { reason: what }
    }
}
