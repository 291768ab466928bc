//! The policy-checked `shell` tool the kernel registers: judge the command, ask when the
//! policy says so, run it inside the sandbox unless the permit says otherwise, and under
//! `on-failure` offer to rerun outside the sandbox when the sandbox looks like the cause.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use rein_protocol::{ApprovalPolicy, ThreadId};

use super::apply_patch::invocation;
use super::apply_patch::tool::apply_checked;
use super::policy::{Action, ExecSandbox, PolicyEngine};
use super::process::exec::{self, ExitKind};
use super::sandbox::{Sandbox, SandboxSpec};
use super::shell::{
    format_outcome, parse_args, prepare, run_command, run_unsandboxed, shell_spec, PreparedCommand,
    ShellConfig,
};
use super::terminals::BackgroundTerminals;
use super::{Tool, ToolCall, ToolContext, ToolResult, ToolSpec};

/// What sandbox denials print; a failed sandboxed command showing one of these may have
/// failed because of the sandbox rather than its own bug.
const DENIAL_MARKERS: &[&str] = &[
    "Permission denied",
    "Operation not permitted",
    "Read-only file system",
];

/// How long a background start waits for the command's first output.
const BACKGROUND_FIRST_READ: Duration = Duration::from_millis(300);

pub struct ShellTool {
    config: ShellConfig,
    policy: Arc<PolicyEngine>,
    sandbox: Arc<Sandbox>,
    terminals: Arc<BackgroundTerminals>,
}

impl ShellTool {
    pub fn new(
        config: ShellConfig,
        policy: Arc<PolicyEngine>,
        sandbox: Arc<Sandbox>,
        terminals: Arc<BackgroundTerminals>,
    ) -> Self {
        Self {
            config,
            policy,
            sandbox,
            terminals,
        }
    }

    /// Start the command as a background terminal and return its first output.
    async fn start_background(
        &self,
        ctx: &ToolContext,
        command: tokio::process::Command,
    ) -> ToolResult {
        let id = match self.terminals.start(ctx.thread_id, command) {
            Ok(id) => id,
            Err(e) => return ToolResult::err(e.to_string()),
        };
        match self
            .terminals
            .read(ctx.thread_id, &id, BACKGROUND_FIRST_READ, &ctx.cancel)
            .await
        {
            Ok(snapshot) => ToolResult::ok(snapshot.to_json().to_string()),
            Err(e) => ToolResult::err(e.to_string()),
        }
    }

    fn build(
        &self,
        ctx: &ToolContext,
        cmd: &PreparedCommand,
        sandbox: ExecSandbox,
    ) -> Result<tokio::process::Command, String> {
        match sandbox {
            ExecSandbox::None => {
                exec::command(&cmd.argv, &cmd.cwd, &cmd.env).map_err(|e| e.to_string())
            }
            ExecSandbox::Enforced(policy) => {
                let options = self.policy.config().options_for(&ctx.settings);
                let spec = SandboxSpec::new(policy, &ctx.settings.cwd, &options);
                self.sandbox
                    .command(&spec, &cmd.argv, &cmd.cwd, &cmd.env)
                    .map_err(|e| e.to_string())
            }
        }
    }

    async fn run_foreground(
        &self,
        ctx: &ToolContext,
        cmd: &PreparedCommand,
        action: &Action,
        command: tokio::process::Command,
        sandbox: ExecSandbox,
    ) -> ToolResult {
        let outcome = match run_command(command, cmd.timeout, ctx, &self.config).await {
            Ok(o) => o,
            Err(e) => return ToolResult::err(e.to_string()),
        };
        let result = format_outcome(&outcome, cmd.timeout);
        let denial = DENIAL_MARKERS.iter().find(|m| outcome.output.contains(**m));
        match denial {
            // A command the turn cancelled or that timed out is not the sandbox's doing.
            Some(marker)
                if matches!(outcome.exit, ExitKind::Code(c) if c != 0)
                    && sandbox != ExecSandbox::None
                    && ctx.settings.approval_policy == ApprovalPolicy::OnFailure =>
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
            if let Some(shell_patch) = invocation::find_in_command(&cmd.argv) {
                let dir = match &shell_patch.cd {
                    Some(cd) => cmd.cwd.join(cd),
                    None => cmd.cwd.clone(),
                };
                return apply_checked(&self.policy, &ctx, &shell_patch.patch, &dir).await;
            }
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
            let command = match self.build(&ctx, &cmd, permit.sandbox) {
                Ok(c) => c,
                Err(e) => return ToolResult::err(e),
            };
            if args.background {
                return self.start_background(&ctx, command).await;
            }
            self.run_foreground(&ctx, &cmd, &action, command, permit.sandbox)
                .await
        })
    }

    fn clean_background(&self, thread: ThreadId) {
        self.terminals.kill_all(thread);
    }

    fn on_thread_shutdown(&self, thread: ThreadId) {
        self.policy.forget_thread(thread);
        self.terminals.kill_all(thread);
    }
}
