//! How a tool call shows up as a Codex item, from the kernel's facts alone: what the call's
//! tool said it would do ([`ToolAction`]) and how it ended ([`ToolOutcome`]). The live
//! mapping and the history rebuild (`thread/read`) both build items here, from the same
//! facts, so an item read back equals the one sent live. Nothing here looks at a tool's
//! name or reads its output.
//!
//! Commands, terminal input and the file tools (read, list, search) are `commandExecution`
//! items (the file tools with the read / listFiles / search action Codex clients draw), an
//! edit is a `fileChange`, an MCP call an `mcpToolCall`, anything else a `dynamicToolCall`;
//! a plan has no item (it is `turn/plan/updated`).

use std::path::Path;

use rein_app_server_protocol::{
    CommandActionWire, CommandExecutionSource, ContentItem, ExecutionStatus, McpToolCallError,
    McpToolCallResult, ThreadItem, ToolCallStatus,
};
use rein_protocol::{CommandAction, ToolAction, ToolOutcome, USER_SHELL_CALL_PREFIX};

use crate::collab_items::{collab_item, AgentCall};
use crate::convert::file_change_to_wire;

/// How a finished call ended.
#[derive(Clone, Copy, Debug)]
pub struct Ended<'a> {
    pub outcome: &'a ToolOutcome,
    pub duration_ms: u64,
}

/// The item of call `call_id` made by thread `sender` (of the tool `tool`, shown where a
/// command line is made up for a call that is not a command), in progress while `ended` is
/// `None`.
///
/// One arm per kind of [`ToolAction`], with no wildcard, so a new kind does not compile
/// until it decides its item (which is why the function is long; the longer builders are
/// functions below).
pub fn tool_item(
    sender: &str,
    call_id: &str,
    tool: &str,
    action: &ToolAction,
    ended: Option<Ended<'_>>,
) -> Option<ThreadItem> {
    let id = call_id.to_owned();
    let outcome = ended.map(|e| e.outcome);
    let duration_ms = ended.map(|e| i64::try_from(e.duration_ms).unwrap_or(i64::MAX));
    let item = match action {
        ToolAction::Exec {
            command,
            cwd,
            commands,
            ..
        } => ThreadItem::CommandExecution {
            id,
            command: command.clone(),
            cwd: cwd.display().to_string(),
            process_id: terminal_of(outcome),
            status: command_status(outcome),
            command_actions: commands.iter().map(|c| action_to_wire(c, cwd)).collect(),
            aggregated_output: outcome.and_then(shown_text),
            exit_code: exit_code(outcome),
            duration_ms,
            source: call_id
                .starts_with(USER_SHELL_CALL_PREFIX)
                .then_some(CommandExecutionSource::UserShell),
        },
        ToolAction::Stdin {
            terminal_id, cwd, ..
        } => {
            let command = action.command_line(tool).unwrap_or_default();
            let cwd = cwd.as_deref().map(|c| c.display().to_string());
            stdin_item(id, command, cwd, terminal_id, outcome, duration_ms)
        }
        ToolAction::Read { path } => {
            let command = action.command_line(tool).unwrap_or_default();
            read_item(id, command, path, outcome, duration_ms)
        }
        ToolAction::List { path } => explored(
            id,
            path,
            CommandActionWire::ListFiles {
                command: action.command_line(tool).unwrap_or_default(),
                path: Some(path.display().to_string()),
            },
            outcome,
            duration_ms,
        ),
        ToolAction::Search { query, path } => explored(
            id,
            path,
            CommandActionWire::Search {
                command: action.command_line(tool).unwrap_or_default(),
                query: Some(query.clone()),
                path: Some(path.display().to_string()),
            },
            outcome,
            duration_ms,
        ),
        ToolAction::Edit { changes } => {
            let changes = match outcome {
                Some(ToolOutcome::Patched { changes }) => changes,
                _ => changes,
            };
            ThreadItem::FileChange {
                id,
                changes: changes.iter().map(file_change_to_wire).collect(),
                status: command_status(outcome),
            }
        }
        ToolAction::Plan { .. } => return None,
        ToolAction::Mcp {
            server,
            tool,
            arguments,
        } => ThreadItem::McpToolCall {
            id,
            server: server.clone(),
            tool: tool.clone(),
            arguments: arguments.clone(),
            status: call_status(outcome),
            result: mcp_result(outcome),
            error: outcome
                .filter(|o| !o.succeeded())
                .and_then(shown_text)
                .map(|message| McpToolCallError { message }),
            duration_ms,
        },
        ToolAction::Agent {
            op,
            targets,
            prompt,
            model,
            reasoning_effort,
        } => collab_item(
            id,
            sender,
            AgentCall {
                op: *op,
                targets,
                prompt: prompt.as_deref(),
                model: model.as_deref(),
                reasoning_effort: reasoning_effort.clone(),
            },
            outcome,
        ),
        ToolAction::Other { tool, arguments } => ThreadItem::DynamicToolCall {
            id,
            tool: tool.clone(),
            arguments: arguments.clone(),
            status: call_status(outcome),
            content_items: outcome
                .and_then(shown_text)
                .map(|text| vec![ContentItem::InputText { text }]),
            success: outcome.map(ToolOutcome::succeeded),
            duration_ms,
        },
    };
    Some(item)
}

/// Input written to a background terminal: a command execution of that terminal.
fn stdin_item(
    id: String,
    command: String,
    cwd: Option<String>,
    terminal_id: &str,
    outcome: Option<&ToolOutcome>,
    duration_ms: Option<i64>,
) -> ThreadItem {
    ThreadItem::CommandExecution {
        id,
        command_actions: vec![CommandActionWire::Unknown {
            command: command.clone(),
        }],
        command,
        cwd: cwd.unwrap_or_default(),
        process_id: Some(terminal_id.to_owned()),
        status: command_status(outcome),
        aggregated_output: outcome.and_then(shown_text),
        exit_code: exit_code(outcome),
        duration_ms,
        source: None,
    }
}

/// A file read, shown as exploring the file's directory.
fn read_item(
    id: String,
    command: String,
    path: &Path,
    outcome: Option<&ToolOutcome>,
    duration_ms: Option<i64>,
) -> ThreadItem {
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into(),
    );
    explored(
        id,
        path.parent().unwrap_or(path),
        CommandActionWire::Read {
            command,
            name,
            path: path.display().to_string(),
        },
        outcome,
        duration_ms,
    )
}

/// An MCP call's result as Codex shows it: the server's content blocks (its text as one
/// text block when it sent plain text) and its structured content.
fn mcp_result(outcome: Option<&ToolOutcome>) -> Option<McpToolCallResult> {
    match outcome {
        Some(ToolOutcome::Returned {
            text,
            structured,
            content,
        }) => Some(McpToolCallResult {
            content: if content.is_empty() {
                vec![serde_json::json!({ "type": "text", "text": text })]
            } else {
                content.clone()
            },
            structured_content: structured.clone(),
        }),
        _ => None,
    }
}

/// A file tool's call, shown as the exploring command Codex clients group and draw.
fn explored(
    id: String,
    cwd: &Path,
    action: CommandActionWire,
    outcome: Option<&ToolOutcome>,
    duration_ms: Option<i64>,
) -> ThreadItem {
    let command = match &action {
        CommandActionWire::Read { command, .. }
        | CommandActionWire::ListFiles { command, .. }
        | CommandActionWire::Search { command, .. }
        | CommandActionWire::Unknown { command } => command.clone(),
    };
    ThreadItem::CommandExecution {
        id,
        command,
        cwd: cwd.display().to_string(),
        process_id: None,
        status: command_status(outcome),
        command_actions: vec![action],
        aggregated_output: outcome.and_then(shown_text),
        exit_code: None,
        duration_ms,
        source: None,
    }
}

/// A parsed command action on the wire; a read's path is made absolute, as Codex sends it.
pub fn action_to_wire(action: &CommandAction, cwd: &Path) -> CommandActionWire {
    match action {
        CommandAction::Read {
            command,
            name,
            path,
        } => CommandActionWire::Read {
            command: command.clone(),
            name: name.clone(),
            path: cwd.join(path).display().to_string(),
        },
        CommandAction::ListFiles { command, path } => CommandActionWire::ListFiles {
            command: command.clone(),
            path: path.clone(),
        },
        CommandAction::Search {
            command,
            query,
            path,
        } => CommandActionWire::Search {
            command: command.clone(),
            query: query.clone(),
            path: path.clone(),
        },
        CommandAction::Unknown { command } => CommandActionWire::Unknown {
            command: command.clone(),
        },
    }
}

fn command_status(outcome: Option<&ToolOutcome>) -> ExecutionStatus {
    match outcome {
        None => ExecutionStatus::InProgress,
        Some(ToolOutcome::Declined { .. }) => ExecutionStatus::Declined,
        Some(o) if o.succeeded() => ExecutionStatus::Completed,
        Some(_) => ExecutionStatus::Failed,
    }
}

fn call_status(outcome: Option<&ToolOutcome>) -> ToolCallStatus {
    match outcome {
        None => ToolCallStatus::InProgress,
        Some(o) if o.succeeded() => ToolCallStatus::Completed,
        Some(_) => ToolCallStatus::Failed,
    }
}

fn shown_text(outcome: &ToolOutcome) -> Option<String> {
    outcome.shown_text().map(str::to_owned)
}

fn exit_code(outcome: Option<&ToolOutcome>) -> Option<i32> {
    outcome.and_then(ToolOutcome::exit_code)
}

fn terminal_of(outcome: Option<&ToolOutcome>) -> Option<String> {
    match outcome {
        Some(ToolOutcome::Running { terminal_id, .. }) => Some(terminal_id.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use rein_protocol::ExitStatus;

    fn exec(command: &str) -> ToolAction {
        ToolAction::Exec {
            argv: vec!["/bin/sh".into(), "-c".into(), command.into()],
            command: command.into(),
            cwd: "/w".into(),
            background: false,
            commands: vec![CommandAction::Read {
                command: "cat a.txt".into(),
                name: "a.txt".into(),
                path: "a.txt".into(),
            }],
        }
    }

    #[test]
    fn a_command_carries_its_exit_code_output_duration_and_actions() {
        let outcome = ToolOutcome::Exited {
            exit: ExitStatus::Signal { signal: 9 },
            output: "partial\n".into(),
        };
        let item = tool_item(
            "t",
            "c1",
            "shell",
            &exec("cat a.txt"),
            Some(Ended {
                outcome: &outcome,
                duration_ms: 42,
            }),
        );
        assert_eq!(
            item,
            Some(ThreadItem::CommandExecution {
                id: "c1".into(),
                command: "cat a.txt".into(),
                cwd: "/w".into(),
                process_id: None,
                status: ExecutionStatus::Failed,
                command_actions: vec![CommandActionWire::Read {
                    command: "cat a.txt".into(),
                    name: "a.txt".into(),
                    path: "/w/a.txt".into(),
                }],
                aggregated_output: Some("partial\n".into()),
                exit_code: Some(137),
                duration_ms: Some(42),
                source: None,
            })
        );
    }

    #[test]
    fn a_declined_command_is_declined_and_a_plan_has_no_item() {
        let declined = ToolOutcome::Declined {
            by: rein_protocol::Decliner::User,
            reason: "no".into(),
        };
        let Some(ThreadItem::CommandExecution { status, .. }) = tool_item(
            "t",
            "c",
            "shell",
            &exec("rm x"),
            Some(Ended {
                outcome: &declined,
                duration_ms: 0,
            }),
        ) else {
            panic!("not a command");
        };
        assert_eq!(status, ExecutionStatus::Declined);
        assert_eq!(
            tool_item(
                "t",
                "p",
                "update_plan",
                &ToolAction::Plan { plan: vec![] },
                None
            ),
            None
        );
    }
}
