//! The policy engine: every tool call that acts is judged before it runs. [`judge`](fn@judge)
//! decides `Allowed | DeniedBySandbox | NeedsApproval` from the approval policy, the
//! sandbox policy and what the call wants; [`PolicyEngine::authorize`] turns a
//! `NeedsApproval` into an approval request on the turn (saying what "approve for this
//! session" would grant; the thread folds the grant from the answer's event), and tells
//! the caller whether to run inside the sandbox.

pub mod judge;
pub mod paths;
pub mod protected;
pub mod safe_commands;
// The grants are kernel state (the thread folds them from its approval events).
pub(crate) use rein_core::tools::grants as session;

use std::path::PathBuf;

use rein_protocol::{
    ApprovalDecision, ClientRequest, Decliner, SandboxOptions, SandboxPolicy, SessionGrant,
    ThreadSettings,
};

pub use judge::{judge, Action, JudgeInput, Verdict};
pub use paths::WritableRoots;
pub use session::SessionApprovals;

use super::{ToolContext, ToolResult};

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

impl Refusal {
    /// The call's result: declined by the policy or the user, or cut short with the turn.
    pub fn into_result(self) -> ToolResult {
        let message = self.to_string();
        match self {
            Refusal::DeniedBySandbox { .. } => ToolResult::declined(Decliner::Policy, message),
            Refusal::DeniedByUser | Refusal::Aborted => {
                ToolResult::declined(Decliner::User, message)
            }
            Refusal::Cancelled => ToolResult::new(
                message,
                false,
                rein_protocol::ToolOutcome::Interrupted {
                    cause: rein_protocol::InterruptCause::TurnAborted,
                },
            ),
        }
    }
}

pub struct PolicyEngine {
    config: PolicyConfig,
    sandbox_unavailable: Option<String>,
}

impl PolicyEngine {
    /// `sandbox_unavailable` says why sandboxed commands cannot run on this machine, if so.
    pub fn new(config: PolicyConfig, sandbox_unavailable: Option<String>) -> Self {
        Self {
            config,
            sandbox_unavailable,
        }
    }

    pub fn config(&self) -> &PolicyConfig {
        &self.config
    }

    /// The verdict for `action` in the context of a running call.
    pub fn judge(&self, ctx: &ToolContext, action: &Action) -> Verdict {
        let options = self.config.options_for(&ctx.settings);
        let grants = ctx.grants();
        let input = JudgeInput {
            approval: ctx.settings.approval_policy,
            sandbox: ctx.settings.sandbox_policy,
            cwd: &ctx.settings.cwd,
            options: &options,
            sandbox_unavailable: self.sandbox_unavailable.as_deref(),
            session: &grants,
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
        request: ClientRequest,
    ) -> Result<(), Refusal> {
        match ctx.request_approval(request, grant_for(ctx, action)).await {
            Ok(ApprovalDecision::Approve | ApprovalDecision::ApproveForSession) => Ok(()),
            Ok(ApprovalDecision::Deny | ApprovalDecision::DenyForSession) => {
                Err(Refusal::DeniedByUser)
            }
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
}

/// What approving `action` for the session lets through: its argv as a prefix, or its
/// paths, resolved now (so a link made later cannot alias the approval).
fn grant_for(ctx: &ToolContext, action: &Action) -> Option<SessionGrant> {
    Some(match action {
        Action::Command { argv, .. } => SessionGrant::CommandPrefix { argv: argv.clone() },
        Action::Patch { paths } => SessionGrant::Paths {
            paths: paths
                .iter()
                .filter_map(|p| paths::resolve(&ctx.settings.cwd, p))
                .collect(),
        },
    })
}

fn approval_request(ctx: &ToolContext, action: &Action, reason: String) -> ClientRequest {
    match action {
        Action::Command { argv, cwd, .. } => ClientRequest::Command {
            command: argv.clone(),
            cwd: cwd.clone(),
            reason,
        },
        Action::Patch { paths } => ClientRequest::Patch {
            files: paths
                .iter()
                .map(|p| p.strip_prefix(&ctx.settings.cwd).unwrap_or(p).to_path_buf())
                .collect(),
            reason,
        },
    }
}
