//! The policy-checked `shell` tool the kernel registers: judge the command, ask when the
//! policy says so, run it inside the sandbox unless the permit says otherwise, and under
//! `on-failure` offer to rerun outside the sandbox when the sandbox looks like the cause.
//! A front end that runs commands in its own terminals gets them (`shell_client`).

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use rein_protocol::{ApprovalPolicy, ToolAction, ToolOutcome};

use super::apply_patch::invocation;
use super::apply_patch::tool::{apply_checked, edit_action};
use super::policy::{Action, ExecSandbox, PolicyEngine};
use super::process::exec::ExitKind;
use super::sandbox::launch::CONFINE_FAILED;
use super::sandbox::{unconfined_command, Sandbox, SandboxSpec};
use super::shell::{
    exec_action, format_outcome, parse_args, prepare, run_command, run_unsandboxed, shell_spec,
    PreparedCommand, ShellConfig,
};
use super::shell_client;
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

/// Background terminals it starts belong to the calling thread (`ctx.thread`).
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

    /// Start the command as a background terminal and return its first output.
    async fn start_background(
        &self,
        ctx: &ToolContext,
        command: tokio::process::Command,
        shown_as: String,
    ) -> ToolResult {
        let terminals = ctx.thread.state::<BackgroundTerminals>();
        let started = match terminals.start(command, shown_as) {
            Ok(started) => started,
            Err(e) => return ToolResult::err(e.to_string()),
        };
        match terminals
            .read(&started.id, BACKGROUND_FIRST_READ, &ctx.cancel)
            .await
        {
            Ok(snapshot) => {
                let outcome = match snapshot.outcome() {
                    ToolOutcome::Running {
                        terminal_id,
                        output,
                        ..
                    } => ToolOutcome::Running {
                        terminal_id,
                        pid: started.pid,
                        output,
                    },
                    ended => ended,
                };
                ToolResult::new(snapshot.to_json().to_string(), true, outcome)
            }
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
                unconfined_command(&cmd.argv, &cmd.cwd, &cmd.env).map_err(|e| e.to_string())
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
        if sandbox != ExecSandbox::None
            && outcome.exit == ExitKind::Code(126)
            && outcome.output.contains(CONFINE_FAILED)
        {
            Sandbox::confinement_failed();
        }
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
                    // The command ran and failed; what it did stays its outcome.
                    Err(refusal) => ToolResult::new(
                        format!(
                            "{}\n(not rerun outside the sandbox: {refusal})",
                            result.output
                        ),
                        false,
                        result.outcome,
                    ),
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

    fn describe(&self, call: &ToolCall, ctx: &ToolContext) -> ToolAction {
        let Ok(args) = parse_args(call) else {
            return ToolAction::other(&call.name, &call.arguments);
        };
        let argv = args.command.argv(&super::shell::user_shell());
        if let Some(shell_patch) = invocation::find_in_command(&argv) {
            let dir = match &shell_patch.cd {
                Some(cd) => ctx.settings.cwd.join(cd),
                None => ctx.settings.cwd.clone(),
            };
            if let Some(edit) = edit_action(&shell_patch.patch, &dir) {
                return edit;
            }
        }
        exec_action(&args, ctx)
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
            if ctx.client().terminal && !args.background {
                return shell_client::run_in_client(&self.policy, &ctx, &args, &cmd, &self.config)
                    .await;
            }
            let action = Action::Command {
                argv: cmd.argv.clone(),
                env: args.env.clone(),
                cwd: cmd.cwd.clone(),
                escalate: args.with_escalated_permissions,
                justification: args.justification.clone(),
            };
            let permit = match self.policy.authorize(&ctx, action.clone()).await {
                Ok(p) => p,
                Err(refusal) => return refusal.into_result(),
            };
            let command = match self.build(&ctx, &cmd, permit.sandbox) {
                Ok(c) => c,
                Err(e) => return ToolResult::err(e),
            };
            if args.background {
                return self
                    .start_background(&ctx, command, args.command.display())
                    .await;
            }
            self.run_foreground(&ctx, &cmd, &action, command, permit.sandbox)
                .await
        })
    }
}
