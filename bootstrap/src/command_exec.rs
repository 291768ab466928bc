//! One command outside any thread (the app-server's `command/exec`), under the same
//! boundary as a thread's commands: the configured approval policy and sandbox policy
//! judge it (rein-tools' judge, as for the `shell` tool), it runs inside the sandbox that
//! policy names, and a client may narrow the sandbox, never widen it. There is no turn to
//! ask an approval on, so a command the policy would ask about is refused, saying so.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use rein_protocol::{SandboxOptions, SandboxPolicy};
use rein_tools::policy::{judge, Action, JudgeInput, SessionApprovals, Verdict};
use rein_tools::process::{exec, EnvInheritance, EnvPolicy, ExecLimits};
use rein_tools::sandbox::{unconfined_command, Sandbox, SandboxSpec};
use tokio_util::sync::CancellationToken;

use crate::Kernel;

/// What to run.
#[derive(Clone, Debug)]
pub struct OneOffCommand {
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    /// Set (`Some`) or unset (`None`) on top of the server's environment minus secrets.
    pub env: BTreeMap<String, Option<String>>,
    pub timeout: Duration,
    pub output_cap: usize,
    /// A narrower sandbox than the configured one, if the client asks for it.
    pub sandbox: Option<SandboxPolicy>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OneOffOutput {
    /// The exit code, or the shell's convention for a signal (128 + n) or timeout (124).
    pub exit_code: i32,
    /// stdout and stderr interleaved as they arrived, cut to the cap (head and tail).
    pub output: String,
}

#[derive(Debug, thiserror::Error)]
pub enum CommandExecError {
    #[error("command: empty")]
    Empty,
    #[error(
        "sandboxPolicy: {requested} is wider than the server's sandbox_mode {configured}; \
         a client may only narrow it"
    )]
    Wider {
        requested: SandboxPolicy,
        configured: SandboxPolicy,
    },
    #[error(
        "the approval policy asks before this command ({0}); command/exec has no turn to \
         ask on: run it in a thread (turn/start) instead"
    )]
    NeedsApproval(String),
    #[error("denied by the sandbox policy: {0}")]
    Denied(String),
    #[error("{0}")]
    Run(String),
}

/// How permissive a policy is, for "narrower or equal".
fn rank(policy: SandboxPolicy) -> u8 {
    match policy {
        SandboxPolicy::ReadOnly => 0,
        SandboxPolicy::WorkspaceWrite => 1,
        SandboxPolicy::DangerFullAccess => 2,
    }
}

impl Kernel {
    /// Judge and run `command` under the server's configured policies.
    pub async fn exec_command(
        &self,
        command: OneOffCommand,
    ) -> Result<OneOffOutput, CommandExecError> {
        if command.argv.is_empty() {
            return Err(CommandExecError::Empty);
        }
        let settings = self.default_settings(command.cwd.clone());
        let configured = settings.sandbox_policy;
        let policy = match command.sandbox {
            Some(requested) if rank(requested) > rank(configured) => {
                return Err(CommandExecError::Wider {
                    requested,
                    configured,
                })
            }
            Some(requested) => requested,
            None => configured,
        };
        let sandbox = Sandbox::detected();
        // The built-in tools' defaults: no extra writable roots, no network.
        let options = SandboxOptions::default();
        let session = SessionApprovals::default();
        let set: BTreeMap<String, String> = command
            .env
            .iter()
            .filter_map(|(k, v)| v.as_ref().map(|v| (k.clone(), v.clone())))
            .collect();
        let action = Action::Command {
            argv: command.argv.clone(),
            env: set.clone(),
            cwd: command.cwd.clone(),
            escalate: false,
            justification: None,
        };
        let input = JudgeInput {
            approval: settings.approval_policy,
            sandbox: policy,
            cwd: &command.cwd,
            options: &options,
            sandbox_unavailable: sandbox.unavailable_reason(),
            session: &session,
        };
        match judge(&input, &action) {
            Verdict::Allowed => {}
            Verdict::NeedsApproval { reason } => {
                return Err(CommandExecError::NeedsApproval(reason))
            }
            Verdict::DeniedBySandbox { reason } => return Err(CommandExecError::Denied(reason)),
        }
        let mut env = EnvPolicy {
            inherit: EnvInheritance::Inherit,
            set,
        }
        .build(std::env::vars());
        for (name, value) in &command.env {
            if value.is_none() {
                env.remove(name);
            }
        }
        let run = |e: &dyn std::fmt::Display| CommandExecError::Run(e.to_string());
        let cmd = if policy == SandboxPolicy::DangerFullAccess {
            unconfined_command(&command.argv, &command.cwd, &env)
        } else {
            let spec = SandboxSpec::new(policy, &command.cwd, &options);
            sandbox.command(&spec, &command.argv, &command.cwd, &env)
        }
        .map_err(|e| run(&e))?;
        let limits = ExecLimits {
            timeout: command.timeout,
            output_cap: command.output_cap,
        };
        let outcome = exec::run(cmd, limits, &CancellationToken::new(), &mut |_| {})
            .await
            .map_err(|e| run(&e))?;
        Ok(OneOffOutput {
            exit_code: outcome.exit.code(),
            output: outcome.output,
        })
    }
}
