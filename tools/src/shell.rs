//! The `shell` tool: runs a command (an argv list, or a script string run by the user's
//! shell) in the turn's cwd with a timeout, an environment policy and a bounded output
//! capture, streaming output as it arrives. The whole process group dies on timeout,
//! cancellation or when the call is dropped.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use futures::future::BoxFuture;
use rein_protocol::{shell_join, ToolAction, ToolOutcome};
use serde::Deserialize;
use serde_json::json;

use super::command_actions;
use super::process::exec::{self, ExecLimits, ExecOutcome, ExitKind};
use super::process::{EnvInheritance, EnvPolicy};
use super::{Tool, ToolCall, ToolContext, ToolResult, ToolSpec};

pub const SHELL_TOOL: &str = "shell";

/// Limits of the shell tool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShellConfig {
    pub default_timeout: Duration,
    pub max_timeout: Duration,
    /// Bytes of output kept for the model (head + tail).
    pub output_cap: usize,
}

impl Default for ShellConfig {
    fn default() -> Self {
        Self {
            default_timeout: Duration::from_secs(60),
            max_timeout: Duration::from_secs(30 * 60),
            output_cap: 32 * 1024,
        }
    }
}

/// A command as the model gives it.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum CommandForm {
    Argv(Vec<String>),
    /// Run by the user's shell with `-c`.
    Script(String),
}

impl CommandForm {
    /// The command as the model wrote it: a script as is, an argv shell-quoted.
    pub fn display(&self) -> String {
        match self {
            CommandForm::Argv(argv) => shell_join(argv),
            CommandForm::Script(script) => script.clone(),
        }
    }

    /// The argv that is executed.
    pub fn argv(&self, user_shell: &str) -> Vec<String> {
        match self {
            CommandForm::Argv(argv) => argv.clone(),
            CommandForm::Script(script) => {
                vec![user_shell.to_owned(), "-c".to_owned(), script.clone()]
            }
        }
    }
}

#[derive(Clone, Debug, Deserialize)]
pub struct ShellArgs {
    pub command: CommandForm,
    /// Relative paths are resolved against the turn's cwd.
    #[serde(default)]
    pub workdir: Option<PathBuf>,
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    #[serde(default)]
    pub env_policy: EnvInheritance,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The model asks to run outside the sandbox (honoured only with approval).
    #[serde(default)]
    pub with_escalated_permissions: bool,
    #[serde(default)]
    pub justification: Option<String>,
    /// Start as a background terminal that outlives the call (read it with write_stdin).
    #[serde(default)]
    pub background: bool,
}

/// The user's shell for the string form: `$SHELL`, else `/bin/sh`.
pub fn user_shell() -> String {
    std::env::var("SHELL")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "/bin/sh".to_owned())
}

pub fn shell_spec() -> ToolSpec {
    ToolSpec {
        name: SHELL_TOOL.to_owned(),
        description: "Run a command. `command` is either an argv array (run directly) or a \
                      string (run by the user's shell with -c). Output is stdout and stderr \
                      interleaved, truncated in the middle when long."
            .to_owned(),
        parameters: json!({
            "type": "object",
            "properties": {
                "command": {
                    "description": "argv array, or a shell script string",
                    "anyOf": [
                        {"type": "array", "items": {"type": "string"}, "minItems": 1},
                        {"type": "string"}
                    ]
                },
                "workdir": {"type": "string", "description": "working directory (default: the turn's cwd)"},
                "timeout_ms": {"type": "integer", "minimum": 1, "description": "kill the command after this many milliseconds"},
                "env_policy": {"type": "string", "enum": ["inherit", "core", "explicit"],
                    "description": "inherit (minus secrets), core variables only, or only `env`"},
                "env": {"type": "object", "additionalProperties": {"type": "string"}},
                "with_escalated_permissions": {"type": "boolean", "description": "ask the user to run outside the sandbox"},
                "justification": {"type": "string", "description": "why escalation is needed"},
                "background": {"type": "boolean", "description": "keep running in a background terminal (e.g. a dev server); returns a terminal_id for write_stdin"}
            },
            "required": ["command"],
            "additionalProperties": false
        }),
    }
}

/// Renders a finished command for the model.
pub fn format_outcome(outcome: &ExecOutcome, timeout: Duration) -> ToolResult {
    let mut output = String::new();
    match outcome.exit {
        ExitKind::TimedOut => output.push_str(&format!(
            "command timed out after {} ms and was killed\n",
            timeout.as_millis()
        )),
        ExitKind::Cancelled => output.push_str("command was cancelled and killed\n"),
        ExitKind::Signal(sig) => output.push_str(&format!("command killed by signal {sig}\n")),
        ExitKind::Code(_) => {}
    }
    output.push_str(&outcome.output);
    let facts = ToolOutcome::Exited {
        exit: outcome.exit.status(timeout),
        output: outcome.output.clone(),
    };
    let body = json!({
        "output": output,
        "metadata": {
            "exit_code": outcome.exit.code(),
            "duration_seconds": (outcome.duration.as_secs_f64() * 10.0).round() / 10.0,
        }
    });
    ToolResult::new(body.to_string(), outcome.exit.success(), facts)
}

/// What a shell call with `args` runs, for its description.
pub fn exec_action(args: &ShellArgs, ctx: &ToolContext) -> ToolAction {
    let argv = args.command.argv(&user_shell());
    let command = args.command.display();
    ToolAction::Exec {
        commands: command_actions::parse(&argv, &command),
        argv,
        command,
        cwd: resolve_workdir(args, ctx),
        background: args.background,
    }
}

fn resolve_workdir(args: &ShellArgs, ctx: &ToolContext) -> PathBuf {
    match &args.workdir {
        Some(dir) => ctx.settings.cwd.join(dir),
        None => ctx.settings.cwd.clone(),
    }
}

/// Parse and validate a call's arguments.
pub fn parse_args(call: &ToolCall) -> Result<ShellArgs, String> {
    let args: ShellArgs = serde_json::from_str(&call.arguments)
        .map_err(|e| format!("invalid shell arguments: {e}"))?;
    match &args.command {
        CommandForm::Argv(argv) if argv.is_empty() => Err("`command` is empty".to_owned()),
        CommandForm::Script(s) if s.trim().is_empty() => Err("`command` is empty".to_owned()),
        _ => Ok(args),
    }
}

/// A fully resolved command, ready to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreparedCommand {
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    pub env: BTreeMap<String, String>,
    pub timeout: Duration,
}

pub fn prepare(args: &ShellArgs, ctx: &ToolContext, config: &ShellConfig) -> PreparedCommand {
    let cwd = resolve_workdir(args, ctx);
    let timeout = args
        .timeout_ms
        .map_or(config.default_timeout, Duration::from_millis)
        .min(config.max_timeout);
    let env = EnvPolicy {
        inherit: args.env_policy,
        set: args.env.clone(),
    }
    .build(std::env::vars());
    PreparedCommand {
        argv: args.command.argv(&user_shell()),
        cwd,
        env,
        timeout,
    }
}

/// Run a prepared command without a sandbox, streaming to `ctx`.
pub async fn run_unsandboxed(
    cmd: &PreparedCommand,
    ctx: &ToolContext,
    config: &ShellConfig,
) -> ToolResult {
    let command = match super::sandbox::unconfined_command(&cmd.argv, &cmd.cwd, &cmd.env) {
        Ok(command) => command,
        Err(e) => return ToolResult::err(e.to_string()),
    };
    match run_command(command, cmd.timeout, ctx, config).await {
        Ok(outcome) => format_outcome(&outcome, cmd.timeout),
        Err(e) => ToolResult::err(e.to_string()),
    }
}

/// Run an already built `Command` (possibly sandboxed), streaming to `ctx`.
pub async fn run_command(
    command: tokio::process::Command,
    timeout: Duration,
    ctx: &ToolContext,
    config: &ShellConfig,
) -> Result<ExecOutcome, exec::ExecError> {
    let limits = ExecLimits {
        timeout,
        output_cap: config.output_cap,
    };
    let sink = ctx.clone();
    let mut on_delta = move |delta: String| sink.output_delta(delta);
    exec::run(command, limits, &ctx.cancel, &mut on_delta).await
}

/// The `shell` tool with no policy: every call runs unsandboxed. The kernel registers the
/// policy-checked tool from [`super::builtin_tools`]; this one serves tests and embedders
/// that enforce policy elsewhere.
#[derive(Clone, Debug, Default)]
pub struct UncheckedShellTool {
    pub config: ShellConfig,
}

impl Tool for UncheckedShellTool {
    fn spec(&self) -> ToolSpec {
        shell_spec()
    }

    fn describe(&self, call: &ToolCall, ctx: &ToolContext) -> ToolAction {
        match parse_args(call) {
            Ok(args) => exec_action(&args, ctx),
            Err(_) => ToolAction::other(&call.name, &call.arguments),
        }
    }

    fn run<'a>(&'a self, call: ToolCall, ctx: ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let args = match parse_args(&call) {
                Ok(a) => a,
                Err(e) => return ToolResult::err(e),
            };
            let cmd = prepare(&args, &ctx, &self.config);
            run_unsandboxed(&cmd, &ctx, &self.config).await
        })
    }
}
