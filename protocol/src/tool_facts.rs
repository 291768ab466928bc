//! What a tool call is about to do and what it did, as the kernel reports it. A tool
//! describes its call before it runs ([`ToolAction`]) and reports how it ended
//! ([`ToolOutcome`]); `ToolCallBegin` / `ToolCallEnd` carry them live and the history item
//! of the call's output keeps them ([`ToolFacts`]), so a resumed thread knows the same facts.
//! Front ends project these; none of them reads a tool's name or parses its output.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::agents::{AgentOp, AgentReport};
use crate::event::{FileDiff, PlanStep};
use crate::ids::ThreadId;
use crate::settings::ReasoningEffort;

/// What a call is about to do, described by its tool before it runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolAction {
    /// Run a command.
    Exec {
        /// What is executed.
        argv: Vec<String>,
        /// The command as the model wrote it (a script as is, an argv shell-quoted).
        command: String,
        cwd: PathBuf,
        /// It keeps running in a background terminal after the call.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        background: bool,
        /// What the command does, read from it once (pipes and `cd` prefixes handled).
        commands: Vec<CommandAction>,
    },
    /// Write to a background terminal's stdin (empty `chars`: only read) and take what it
    /// printed since the last read.
    Stdin {
        terminal_id: String,
        chars: String,
        /// The terminal's command and directory, when the terminal is known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        command: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cwd: Option<PathBuf>,
    },
    /// Change files. The changes are the ones planned (the patch's own hunks); what was
    /// really written is in the outcome.
    Edit { changes: Vec<FileDiff> },
    /// Read a file.
    Read { path: PathBuf },
    /// List a directory.
    List { path: PathBuf },
    /// Search files under `path` for `query`.
    Search { query: String, path: PathBuf },
    /// Replace the agent's plan.
    Plan { plan: Vec<PlanStep> },
    /// Call a tool of an MCP server.
    Mcp {
        server: String,
        tool: String,
        arguments: serde_json::Value,
    },
    /// Talk to sub-agents: spawn one, mail it, wait on, close, reopen or list them.
    Agent {
        op: AgentOp,
        /// The agents addressed (a spawn's new agent is in the outcome).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        targets: Vec<ThreadId>,
        /// The task or message sent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prompt: Option<String>,
        /// The model and effort a spawn asked for.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reasoning_effort: Option<ReasoningEffort>,
    },
    /// Anything else: a tool the kernel knows nothing more about.
    Other {
        tool: String,
        arguments: serde_json::Value,
    },
}

impl ToolAction {
    /// The command line a client shows for the call of `tool`: the command of a command,
    /// the terminal's command for terminal input, and the call itself (`tool` and its
    /// operands) for the file tools. `None` for what is not shown as a command.
    pub fn command_line(&self, tool: &str) -> Option<String> {
        let line =
            |words: &[&str]| shell_join(&words.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>());
        match self {
            ToolAction::Exec { command, .. } => Some(command.clone()),
            ToolAction::Stdin {
                terminal_id,
                command,
                ..
            } => Some(
                command
                    .clone()
                    .unwrap_or_else(|| line(&[tool, terminal_id.as_str()])),
            ),
            ToolAction::Read { path } | ToolAction::List { path } => {
                Some(line(&[tool, &path.to_string_lossy()]))
            }
            ToolAction::Search { query, path } => {
                Some(line(&[tool, query.as_str(), &path.to_string_lossy()]))
            }
            ToolAction::Edit { .. }
            | ToolAction::Plan { .. }
            | ToolAction::Mcp { .. }
            | ToolAction::Agent { .. }
            | ToolAction::Other { .. } => None,
        }
    }

    /// An action for a call of `tool` that nothing more is known about; the arguments are
    /// kept as JSON when they are JSON.
    pub fn other(tool: &str, arguments: &str) -> Self {
        ToolAction::Other {
            tool: tool.to_owned(),
            arguments: serde_json::from_str(arguments)
                .unwrap_or_else(|_| serde_json::Value::String(arguments.to_owned())),
        }
    }
}

/// One thing a command does, as far as can be told from the command line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum CommandAction {
    /// Shows a file. `path` is as written, joined to any `cd` before it (relative to the
    /// command's cwd unless absolute); `name` is its last component.
    Read {
        command: String,
        name: String,
        path: PathBuf,
    },
    ListFiles {
        command: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
    },
    Search {
        command: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        query: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
    },
    /// Anything not recognised; a command with any unknown part is one `Unknown`.
    Unknown { command: String },
}

/// How a call ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolOutcome {
    /// A command ran and ended; `output` is what it printed (stdout and stderr
    /// interleaved, truncated in the middle when long).
    Exited { exit: ExitStatus, output: String },
    /// A command runs on in a background terminal; `output` is what it printed so far.
    Running {
        terminal_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pid: Option<u32>,
        output: String,
    },
    /// Files changed, each with its unified diff.
    Patched { changes: Vec<FileDiff> },
    /// The tool returned content.
    Returned {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        structured: Option<serde_json::Value>,
        /// The content blocks as the tool returned them (an MCP server's `content`: text,
        /// image, audio, resource, resource_link), when they are more than `text` says:
        /// front ends show them as they are; empty for plain text.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        content: Vec<serde_json::Value>,
    },
    /// A sub-agent tool answered; `agents` are the agents it concerned, with the status
    /// it left them in (a spawn: the new agent).
    Agents {
        text: String,
        agents: Vec<AgentReport>,
    },
    /// It did not run: the user or the policy said no.
    Declined { by: Decliner, reason: String },
    /// The tool could not do it (bad arguments, an I/O error, an unknown tool).
    Failed { message: String },
    /// The call never reported how it ended; whether it had an effect is unknown.
    Interrupted { cause: InterruptCause },
}

impl ToolOutcome {
    /// What a call recorded before tools reported outcomes is known to have done: only
    /// whether it succeeded (its output is in its `ToolOutput` item).
    pub fn unreported(success: bool) -> Self {
        if success {
            ToolOutcome::Returned {
                text: String::new(),
                structured: None,
                content: Vec::new(),
            }
        } else {
            ToolOutcome::failed("the call failed")
        }
    }

    pub fn failed(message: impl Into<String>) -> Self {
        ToolOutcome::Failed {
            message: message.into(),
        }
    }

    /// Whether the call did what it was asked (a command that exited 0, a terminal that
    /// runs, files patched, content returned).
    pub fn succeeded(&self) -> bool {
        match self {
            ToolOutcome::Exited { exit, .. } => exit.success(),
            ToolOutcome::Running { .. }
            | ToolOutcome::Patched { .. }
            | ToolOutcome::Returned { .. }
            | ToolOutcome::Agents { .. } => true,
            ToolOutcome::Declined { .. }
            | ToolOutcome::Failed { .. }
            | ToolOutcome::Interrupted { .. } => false,
        }
    }

    /// What the call printed or said, as clients show it: a command's output, the returned
    /// text, why it was declined or failed.
    pub fn shown_text(&self) -> Option<&str> {
        match self {
            ToolOutcome::Exited { output, .. } | ToolOutcome::Running { output, .. } => {
                Some(output)
            }
            ToolOutcome::Returned { text, .. } | ToolOutcome::Agents { text, .. } => Some(text),
            ToolOutcome::Declined { reason, .. } => Some(reason),
            ToolOutcome::Failed { message } => Some(message),
            ToolOutcome::Patched { .. } | ToolOutcome::Interrupted { .. } => None,
        }
    }

    /// The exit code of a command that ended (see [`ExitStatus::code`]).
    pub fn exit_code(&self) -> Option<i32> {
        match self {
            ToolOutcome::Exited { exit, .. } => Some(exit.code()),
            _ => None,
        }
    }

    /// The strings of the outcome that may be large (output, returned text, diffs), for
    /// stores that keep bulk aside.
    pub fn bulk(&self) -> Vec<&String> {
        match self {
            ToolOutcome::Exited { output, .. } | ToolOutcome::Running { output, .. } => {
                vec![output]
            }
            ToolOutcome::Returned { text, .. } | ToolOutcome::Agents { text, .. } => vec![text],
            ToolOutcome::Patched { changes } => changes.iter().map(|c| &c.unified_diff).collect(),
            ToolOutcome::Declined { .. }
            | ToolOutcome::Failed { .. }
            | ToolOutcome::Interrupted { .. } => Vec::new(),
        }
    }

    /// [`bulk`](Self::bulk), to replace in place.
    pub fn bulk_mut(&mut self) -> Vec<&mut String> {
        match self {
            ToolOutcome::Exited { output, .. } | ToolOutcome::Running { output, .. } => {
                vec![output]
            }
            ToolOutcome::Returned { text, .. } | ToolOutcome::Agents { text, .. } => vec![text],
            ToolOutcome::Patched { changes } => {
                changes.iter_mut().map(|c| &mut c.unified_diff).collect()
            }
            ToolOutcome::Declined { .. }
            | ToolOutcome::Failed { .. }
            | ToolOutcome::Interrupted { .. } => Vec::new(),
        }
    }
}

/// How a command ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ExitStatus {
    Code {
        code: i32,
    },
    /// Killed by a signal it did not expect.
    Signal {
        signal: i32,
    },
    /// Killed after running out of time.
    TimedOut {
        after_ms: u64,
    },
    /// Killed because the turn was cancelled.
    Cancelled,
}

impl ExitStatus {
    pub fn success(self) -> bool {
        self == ExitStatus::Code { code: 0 }
    }

    /// The exit code a shell would report: 128 + the signal, 124 for a timeout, 130 for
    /// a cancellation.
    pub fn code(self) -> i32 {
        match self {
            ExitStatus::Code { code } => code,
            ExitStatus::Signal { signal } => 128 + signal,
            ExitStatus::TimedOut { .. } => 124,
            ExitStatus::Cancelled => 130,
        }
    }
}

/// Who said no.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Decliner {
    User,
    Policy,
    /// The advisor rejected the call's batch.
    Advisor,
    /// A user hook (`PreToolUse`) blocked the call.
    Hook,
}

/// Why a call never reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum InterruptCause {
    /// The turn was interrupted before the call finished.
    TurnAborted,
    /// The process running the call stopped (a crash) before it finished.
    ProcessStopped,
}

/// Everything known of a finished call, kept with its output in history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ToolFacts {
    pub action: ToolAction,
    pub outcome: ToolOutcome,
    pub duration_ms: u64,
}

/// `argv` as one shell line: each word quoted only where it has to be.
pub fn shell_join(argv: &[String]) -> String {
    argv.iter()
        .map(|word| shell_quote(word))
        .collect::<Vec<_>>()
        .join(" ")
}

/// One word for a shell line.
pub fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn argv_is_joined_with_quotes_only_where_needed() {
        let argv = ["echo".to_owned(), "hello world".into(), "it's".into()];
        assert_eq!(shell_join(&argv), r"echo 'hello world' 'it'\''s'");
    }

    #[test]
    fn outcomes_are_tagged_objects() {
        let exited = ToolOutcome::Exited {
            exit: ExitStatus::Code { code: 2 },
            output: "no\n".into(),
        };
        assert_eq!(
            serde_json::to_value(&exited).unwrap(),
            json!({"type": "exited", "exit": {"type": "code", "code": 2}, "output": "no\n"})
        );
        assert_eq!(ExitStatus::Signal { signal: 9 }.code(), 137);
        assert_eq!(ExitStatus::TimedOut { after_ms: 5 }.code(), 124);
    }
}
