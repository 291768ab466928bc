//! The policy engine: every tool call that acts is judged before it runs. [`judge`]
//! decides `Allowed | DeniedBySandbox | NeedsApproval` from the approval policy, the
//! sandbox policy and what the call wants; [`PolicyEngine::authorize`] turns a
//! `NeedsApproval` into an approval request on the turn, remembers "approve for this
//! session" per thread, and tells the caller whether to run inside the sandbox.

pub mod judge;
pub mod paths;
pub mod protected;
pub mod safe_commands;
pub mod session;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use rein_protocol::{
    ApprovalDecision, ApprovalRequest, SandboxOptions, SandboxPolicy, ThreadId, ThreadSettings,
};

pub use judge::{judge, Action, JudgeInput, Verdict};
pub use paths::WritableRoots;
pub use session::SessionApprovals;

use super::ToolContext;

/// Policy settings that live above a thread.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PolicyConfig {
    /// Writable under workspace-write besides the cwd and the temp dir.
    pub extra_writable_roots: Vec<PathBuf>,
    /// Sandboxed commands may use the network.
    pub network_access: bool,
}

impl PolicyConfig {
    /// The sandbox refinements a thread runs with: its own when its client gave them
    /// (with a `sandboxPolicy` object), else these defaults.
    pub fn options_for(&self, settings: &ThreadSettings) -> SandboxOptions {
        settings
            .sandbox_options
            .clone()
            .unwrap_or_else(|| SandboxOptions {
                writable_roots: self.extra_writable_roots.clone(),
                network_access: self.network_access,
                ..SandboxOptions::default()
            })
    }
}

/// How an authorized command runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExecSandbox {
    /// No sandbox: danger-full-access, or the user approved running outside it.
    None,
    Enforced(SandboxPolicy),
}

/// Permission to go ahead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Permit {
    pub sandbox: ExecSandbox,
    pub approved_by_user: bool,
}

/// Why a call may not go ahead. The message is what the model reads.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("denied by the sandbox policy: {reason}")]
    DeniedBySandbox { reason: String },
    #[error("the user denied this action")]
    DeniedByUser,
    #[error("the user aborted the turn instead of approving")]
    Aborted,
    #[error("the approval request was cancelled (the turn ended)")]
    Cancelled,
}

pub struct PolicyEngine {
    config: PolicyConfig,
    sandbox_unavailable: Option<String>,
    sessions: Mutex<HashMap<ThreadId, SessionApprovals>>,
}

impl PolicyEngine {
    /// `sandbox_unavailable` says why sandboxed commands cannot run on this machine, if so.
    pub fn new(config: PolicyConfig, sandbox_unavailable: Option<String>) -> Self {
        Self {
            config,
            sandbox_unavailable,
            sessions: Mutex::new(HashMap::new()),
        }
    }

    pub fn config(&self) -> &PolicyConfig {
        &self.config
    }

    fn sessions(&self) -> std::sync::MutexGuard<'_, HashMap<ThreadId, SessionApprovals>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The verdict for `action` in the context of a running call.
    pub fn judge(&self, ctx: &ToolContext, action: &Action) -> Verdict {
        let options = self.config.options_for(&ctx.settings);
        let sessions = self.sessions();
        let empty = SessionApprovals::default();
        let input = JudgeInput {
            approval: ctx.settings.approval_policy,
            sandbox: ctx.settings.sandbox_policy,
            cwd: &ctx.settings.cwd,
            options: &options,
            sandbox_unavailable: self.sandbox_unavailable.as_deref(),
            session: if ctx.session_grants {
                sessions.get(&ctx.thread_id).unwrap_or(&empty)
            } else {
                &empty
            },
        };
        judge(&input, action)
    }

    /// Judge `action` and, if needed, ask the user. Returns how to run it.
    pub async fn authorize(&self, ctx: &ToolContext, action: Action) -> Result<Permit, Refusal> {
        let approved_by_user = match self.judge(ctx, &action) {
            Verdict::Allowed => false,
            Verdict::DeniedBySandbox { reason } => return Err(Refusal::DeniedBySandbox { reason }),
            Verdict::NeedsApproval { reason } => {
                self.ask(ctx, &action, approval_request(ctx, &action, reason))
                    .await?;
                true
            }
        };
        Ok(Permit {
            sandbox: self.exec_sandbox(ctx, &action),
            approved_by_user,
        })
    }

    /// After a sandboxed run failed in a way that looks like the sandbox's doing: under
    /// `on-failure`, ask to run it again without the sandbox.
    pub async fn authorize_unsandboxed_retry(
        &self,
        ctx: &ToolContext,
        action: &Action,
        failure: &str,
    ) -> Result<(), Refusal> {
        let reason = format!(
            "the command failed inside the sandbox ({failure}); run it again without the sandbox?"
        );
        self.ask(ctx, action, approval_request(ctx, action, reason))
            .await
    }

    async fn ask(
        &self,
        ctx: &ToolContext,
        action: &Action,
        request: ApprovalRequest,
    ) -> Result<(), Refusal> {
        match ctx.request_approval(request).await {
            Ok(ApprovalDecision::Approve) => Ok(()),
            Ok(ApprovalDecision::ApproveForSession) => {
                self.remember(ctx, action);
                Ok(())
            }
            Ok(ApprovalDecision::Deny) => Err(Refusal::DeniedByUser),
            Ok(ApprovalDecision::Abort) => Err(Refusal::Aborted),
            Err(_) => Err(Refusal::Cancelled),
        }
    }

    fn exec_sandbox(&self, ctx: &ToolContext, action: &Action) -> ExecSandbox {
        let policy = ctx.settings.sandbox_policy;
        match action {
            _ if policy == SandboxPolicy::DangerFullAccess => ExecSandbox::None,
            Action::Command { escalate: true, .. } => ExecSandbox::None,
            _ => ExecSandbox::Enforced(policy),
        }
    }

    fn remember(&self, ctx: &ToolContext, action: &Action) {
        let mut sessions = self.sessions();
        let session = sessions.entry(ctx.thread_id).or_default();
        match action {
            Action::Command { argv, .. } => session.approve_command(argv),
            Action::Patch { paths } => {
                for path in paths {
                    if let Some(resolved) = paths::resolve(&ctx.settings.cwd, path) {
                        session.approve_path(&resolved);
                    }
                }
            }
        }
    }

    /// Drop what was approved for a thread's session (it shut down).
    pub fn forget_thread(&self, thread: ThreadId) {
        self.sessions().remove(&thread);
    }
}

fn approval_request(ctx: &ToolContext, action: &Action, reason: String) -> ApprovalRequest {
    match action {
        Action::Command { argv, cwd, .. } => ApprovalRequest::Command {
            command: argv.clone(),
            cwd: cwd.clone(),
            reason,
        },
        Action::Patch { paths } => ApprovalRequest::Patch {
            files: paths
                .iter()
                .map(|p| p.strip_prefix(&ctx.settings.cwd).unwrap_or(p).to_path_buf())
                .collect(),
            reason,
        },
    }
}
