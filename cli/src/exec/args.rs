//! The `rein exec` command line, shaped like `codex exec` so scripts and the Codex SDKs
//! can drive rein unchanged. Options that apply to the whole run are global, so they may
//! stand before or after `resume` / `fork` (the SDK puts `--image` after `resume ID`).

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

#[derive(Args, Debug)]
pub struct ExecArgs {
    #[command(subcommand)]
    pub command: Option<ExecCommand>,

    #[command(flatten)]
    pub common: CommonArgs,

    #[command(flatten)]
    pub goal: GoalArgs,

    /// The prompt; `-` or none reads it from stdin. Piped stdin given with a prompt is
    /// appended to it as a `<stdin>` block.
    pub prompt: Option<String>,
}

#[derive(Subcommand, Debug)]
pub enum ExecCommand {
    /// Continue an earlier session with a new prompt.
    Resume(ResumeArgs),
    /// Start a new session from a copy of an earlier one's history.
    Fork(ForkArgs),
}

#[derive(Args, Debug)]
pub struct ResumeArgs {
    /// The session to resume (a thread id).
    pub session_id: Option<String>,
    /// Resume the most recent session of this directory.
    #[arg(long)]
    pub last: bool,
    /// With `--last`: the most recent session of any directory.
    #[arg(long)]
    pub all: bool,
    /// The prompt; `-` or none reads it from stdin.
    pub prompt: Option<String>,
}

#[derive(Args, Debug)]
pub struct ForkArgs {
    /// The session to fork (a thread id).
    pub session_id: String,
    /// Keep the history up to and including this completed turn (1-based); default: all.
    #[arg(long)]
    pub at: Option<u32>,
    /// The prompt; `-` or none reads it from stdin.
    pub prompt: Option<String>,
}

#[derive(Args, Debug, Clone)]
pub struct CommonArgs {
    /// Use the built-in scripted model (no API key needed).
    #[arg(long, global = true)]
    pub demo: bool,
    /// Print the run as JSON lines (the `codex exec --json` events) on stdout.
    #[arg(long, global = true)]
    pub json: bool,
    /// `--json` as the Codex SDK spells it. The SDK may keep stdin open as a control
    /// channel, so with this flag a prompt argument is never joined by stdin.
    #[arg(long, hide = true, global = true)]
    pub experimental_json: bool,
    /// The model to use.
    #[arg(short = 'm', long, global = true)]
    pub model: Option<String>,
    /// Override a configuration value (`key=value`, TOML value, dotted key).
    #[arg(short = 'c', long = "config", value_name = "key=value", global = true)]
    pub overrides: Vec<String>,
    /// The configuration profile to use.
    #[arg(short = 'p', long, global = true)]
    pub profile: Option<String>,
    /// How the root works: `single`, or `planner` (it plans a task graph the kernel runs
    /// on sub-agents); the same as `-c agents.strategy=...`.
    #[arg(long, value_enum, global = true)]
    pub strategy: Option<StrategyArg>,
    /// What the agent's commands may touch.
    #[arg(short = 's', long, value_enum, global = true)]
    pub sandbox: Option<SandboxMode>,
    /// Workspace-write sandbox (approvals are never asked headless anyway).
    #[arg(long, global = true)]
    pub full_auto: bool,
    /// No sandbox and no approvals. Only for already isolated environments.
    #[arg(
        long = "dangerously-bypass-approvals-and-sandbox",
        alias = "yolo",
        global = true
    )]
    pub bypass: bool,
    /// Work in this directory instead of the current one.
    #[arg(short = 'C', long = "cd", value_name = "DIR", global = true)]
    pub cd: Option<PathBuf>,
    /// Another directory the agent may write to.
    #[arg(long = "add-dir", value_name = "DIR", global = true)]
    pub add_dirs: Vec<PathBuf>,
    /// Accepted for compatibility: rein runs outside git repositories too.
    #[arg(long, global = true)]
    pub skip_git_repo_check: bool,
    /// A JSON Schema the final answer must satisfy (it is checked; a mismatch fails).
    #[arg(long, value_name = "FILE", global = true)]
    pub output_schema: Option<PathBuf>,
    /// Also write the final message to this file.
    #[arg(
        short = 'o',
        long = "output-last-message",
        value_name = "FILE",
        global = true
    )]
    pub output_last_message: Option<PathBuf>,
    /// Attach an image to the prompt (repeatable).
    #[arg(
        short = 'i',
        long = "image",
        value_name = "FILE",
        value_delimiter = ',',
        global = true
    )]
    pub images: Vec<PathBuf>,
    /// Do not persist the session.
    #[arg(long, global = true)]
    pub ephemeral: bool,
    /// Send the model no AGENTS.md (neither the global file nor the project's).
    #[arg(long, global = true)]
    pub no_project_doc: bool,
    /// When to color human output.
    #[arg(long, value_enum, default_value_t = ColorMode::Auto, global = true)]
    pub color: ColorMode,
    /// Accepted for SDK compatibility; rein has no equivalent and says so on stderr.
    #[arg(long, hide = true, global = true)]
    pub thread_source: Option<String>,
    /// Accepted for SDK compatibility; rein has no equivalent and says so on stderr.
    #[arg(long, hide = true, global = true)]
    pub cyber_access_program: Option<String>,
    /// Accepted for SDK compatibility; rein has no equivalent and says so on stderr.
    #[arg(long, hide = true, global = true)]
    pub collaboration_mode: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SandboxMode {
    ReadOnly,
    WorkspaceWrite,
    DangerFullAccess,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ColorMode {
    Always,
    Never,
    Auto,
}

/// `--strategy`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum StrategyArg {
    Single,
    Planner,
}

impl StrategyArg {
    pub fn name(self) -> &'static str {
        match self {
            StrategyArg::Single => "single",
            StrategyArg::Planner => "planner",
        }
    }
}

/// `--goal`: run until a standing objective is met, blocked or out of budget
/// (docs/goals.md). The exit code says which.
#[derive(Args, Debug, Clone, Default)]
pub struct GoalArgs {
    /// The objective (at most 4,000 characters); the kernel continues the thread until
    /// the goal ends. Instead of a prompt.
    #[arg(long, value_name = "OBJECTIVE")]
    pub goal: Option<String>,
    /// An acceptance check: a shell command run in the thread's sandbox when the model
    /// reports the goal complete; exit 0 passes (repeatable, all must pass).
    #[arg(long = "verify", value_name = "CMD", requires = "goal")]
    pub verify: Vec<String>,
    /// An acceptance check by an MCP tool: SERVER/TOOL, optionally =JSON (an object of
    /// arguments), called through the thread's MCP tool; passes when the call succeeds
    /// and its result is not an error (repeatable).
    #[arg(long = "verify-mcp", value_name = "SERVER/TOOL[=JSON]", requires = "goal",
          value_parser = parse_verify_mcp)]
    pub verify_mcp: Vec<McpCheck>,
    /// An acceptance check by a second model: a question the evaluator model
    /// (`[goals] evaluator_profile`, else the thread's) answers with a pass or fail verdict
    /// (repeatable).
    #[arg(long = "verify-eval", value_name = "PROMPT", requires = "goal")]
    pub verify_eval: Vec<String>,
    /// The goal continues by itself when its thread is resumed after this process died
    /// mid-goal (overriding `[goals] auto_resume`); by default it comes back paused.
    #[arg(long, requires = "goal")]
    pub goal_auto_resume: bool,
    /// Token budget of the goal.
    #[arg(long, value_name = "N", requires = "goal")]
    pub goal_tokens: Option<u64>,
    /// Wall-time budget of the goal's turns, in minutes (fractions allowed).
    #[arg(long, value_name = "N", requires = "goal")]
    pub goal_minutes: Option<f64>,
    /// How many goal turns the kernel may start.
    #[arg(long, value_name = "N", requires = "goal")]
    pub goal_turns: Option<u32>,
}

/// `--verify-mcp SERVER/TOOL[=JSON]`, parsed.
#[derive(Clone, Debug, PartialEq)]
pub struct McpCheck {
    pub server: String,
    pub tool: String,
    pub arguments: Option<serde_json::Value>,
}

/// `SERVER/TOOL` or `SERVER/TOOL={...}`: the server is up to the first `/`, the tool up
/// to the first `=` (names have neither), the rest a JSON object.
fn parse_verify_mcp(text: &str) -> Result<McpCheck, String> {
    let (name, arguments) = match text.split_once('=') {
        Some((name, json)) => {
            let value: serde_json::Value = serde_json::from_str(json)
                .map_err(|e| format!("the arguments after `=` are not JSON: {e}"))?;
            if !value.is_object() {
                return Err("the arguments after `=` must be a JSON object".into());
            }
            (name, Some(value))
        }
        None => (text, None),
    };
    match name.split_once('/') {
        Some((server, tool)) if !server.is_empty() && !tool.is_empty() => Ok(McpCheck {
            server: server.to_owned(),
            tool: tool.to_owned(),
            arguments,
        }),
        _ => Err("expected SERVER/TOOL, optionally followed by =JSON".into()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod verify_mcp_tests {
    use super::*;

    #[test]
    fn verify_mcp_takes_server_tool_and_an_object() {
        assert_eq!(
            parse_verify_mcp("everything/get-sum={\"a\": 1, \"b\": \"x=y/z\"}").unwrap(),
            McpCheck {
                server: "everything".into(),
                tool: "get-sum".into(),
                arguments: Some(serde_json::json!({"a": 1, "b": "x=y/z"})),
            }
        );
        assert_eq!(parse_verify_mcp("s/t").unwrap().arguments, None);
        for bad in ["s", "/t", "s/", "s/t=[1]", "s/t={oops"] {
            assert!(parse_verify_mcp(bad).is_err(), "{bad}");
        }
    }
}
