//! The policy-checked `shell` tool the kernel registers: judge the command, ask when the
//! policy says so, run it inside the sandbox unless the permit says otherwise, and under
//! `on-failure` offer to rerun outside the sandbox when the sandbox looks like the cause.

use std::sync::Arc;

use futures::future::BoxFuture;
use rein_protocol::{ApprovalPolicy, ThreadId};

use super::policy::{Action, ExecSandbox, PolicyEngine};
use super::sandbox::{Sandbox, SandboxSpec};
use super::shell::{
    format_outcome, parse_args, prepare, run_command, run_unsandboxed, shell_spec, PreparedCommand,
    ShellConfig,
};
use super::{Tool, ToolCall, ToolContext, ToolResult, ToolSpec};

/// What sandbox denials print; a failed sandboxed command showing one of these may have
/// failed because of the sandbox rather than its own bug.
const DENIAL_MARKERS: &[&str] = &[
    "Permission denied",
    "Operation not permitted",
    "Read-only file system",
];

pub struct ShellTool {
    config: ShellConfig,
    policy: Arc<PolicyEngine>,
    sandbox: Arc<Sandbox>,
}

impl ShellTool {
    pub fn new(config: ShellConfig, policy: Arc<PolicyEngine>, sandbox: Arc<Sandbox>) -> Self {
        Self {
            config,
            policy,
            sandbox,
        }
    }

    async fn run_sandboxed(
        &self,
        ctx: &ToolContext,
        cmd: &PreparedCommand,
        action: &Action,
        spec: &SandboxSpec,
    ) -> ToolResult {
        let command = match self.sandbox.command(spec, &cmd.argv, &cmd.cwd, &cmd.env) {
            Ok(c) => c,
            Err(e) => return ToolResult::err(e.to_string()),
        };
        let outcome = match run_command(command, cmd.timeout, ctx, &self.config).await {
            Ok(o) => o,
            Err(e) => return ToolResult::err(e.to_string()),
        };
        let result = format_outcome(&outcome, cmd.timeout);
        let denial = DENIAL_MARKERS.iter().find(|m| outcome.output.contains(**m));
        match denial {
            Some(marker)
                if !result.success && ctx.settings.approval_policy == ApprovalPolicy::OnFailure =>
            {
                match self
                    .policy
                    .authorize_unsandboxed_retry(ctx, action, marker)
                    .await
                {
                    Ok(()) => run_unsandboxed(cmd, ctx, &self.config).await,
                    Err(refusal) => ToolResult::err(format!(
                        "{}\n(not rerun outside the sandbox: {refusal})",
                        result.output
                    )),
                }
            }
            _ => result,
        }
    }
}

impl Tool for ShellTool {
    fn spec(&self) -> ToolSpec {
        shell_spec()
    }

    fn run<'a>(&'a self, call: ToolCall, ctx: ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let args = match parse_args(&call) {
                Ok(a) => a,
                Err(e) => return ToolResult::err(e),
            };
            let cmd = prepare(&args, &ctx, &self.config);
            let action = Action::Command {
                argv: cmd.argv.clone(),
                cwd: cmd.cwd.clone(),
                escalate: args.with_escalated_permissions,
                justification: args.justification.clone(),
            };
            let permit = match self.policy.authorize(&ctx, action.clone()).await {
                Ok(p) => p,
                Err(refusal) => return ToolResult::err(refusal.to_string()),
            };
            match permit.sandbox {
                ExecSandbox::None => run_unsandboxed(&cmd, &ctx, &self.config).await,
                ExecSandbox::Enforced(policy) => {
                    let config = self.policy.config();
                    let spec = SandboxSpec::new(
                        policy,
                        &ctx.settings.cwd,
                        &config.extra_writable_roots,
                        config.network_access,
                    );
                    self.run_sandboxed(&ctx, &cmd, &action, &spec).await
                }
            }
        })
    }

    fn on_thread_shutdown(&self, thread: ThreadId) {
        self.policy.forget_thread(thread);
    }
}
