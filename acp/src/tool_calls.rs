//! How a tool call shows up as an ACP tool call, from the kernel's facts alone: what the
//! call's tool said it would do ([`ToolAction`]) and how it ended ([`ToolOutcome`]). The
//! live stream and the replay of `session/load` both build tool calls here, from the same
//! facts, so a replayed card equals the one drawn live. Nothing here looks at a tool's name
//! (beyond showing it) or parses its output.
//!
//! A card opens with `tool_call` (kind, one-line title, absolute locations, the planned
//! diffs of an edit, the raw arguments) and closes with one `tool_call_update` carrying the
//! status, the content (a command's output, the written diffs, the returned text) and the
//! raw outcome. A plan has no card: it is the session's `plan`.

use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{
    Content, ContentBlock, Diff, Meta, Terminal, ToolCall, ToolCallContent, ToolCallLocation,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use rein_protocol::{CommandAction, FileChangeKind, FileDiff, ToolAction, ToolOutcome};
use serde_json::{json, Value};

/// Longest title sent; Zed draws titles on one line and a long one overflows its panel.
const TITLE_CHARS: usize = 160;

/// How a command's output reaches the client.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TerminalDisplay {
    /// As fenced text in the card's content.
    #[default]
    Text,
    /// Through Zed's display-only terminal (`_meta.terminal_info` / `terminal_output` /
    /// `terminal_exit`), which the client asked for with `_meta.terminal_output`.
    Meta,
}

/// The `tool_call` that opens the card of `call_id`, or `None` for a call that has no card
/// (a plan update).
pub fn opened(
    call_id: &str,
    tool: &str,
    arguments: &str,
    action: &ToolAction,
    display: TerminalDisplay,
) -> Option<ToolCall> {
    if matches!(action, ToolAction::Plan { .. }) {
        return None;
    }
    let mut call = ToolCall::new(call_id.to_owned(), title(tool, action))
        .kind(kind(action))
        .status(ToolCallStatus::InProgress)
        .locations(locations(action))
        .raw_input(raw_input(arguments));
    if let ToolAction::Edit { changes } = action {
        call = call.content(changes.iter().map(diff_content).collect());
    }
    if display == TerminalDisplay::Meta {
        if let Some(cwd) = terminal_cwd(action) {
            call = call
                .content(vec![ToolCallContent::Terminal(Terminal::new(
                    call_id.to_owned(),
                ))])
                .meta(meta(json!({
                    "terminal_info": { "terminal_id": call_id, "cwd": cwd }
                })));
        }
    }
    Some(call)
}

/// The `tool_call_update` carrying output a running command printed, or `None` when
/// nothing of it is shown while it runs.
pub fn output_delta(
    call_id: &str,
    action: Option<&ToolAction>,
    delta: &str,
    display: TerminalDisplay,
) -> Option<ToolCallUpdate> {
    match action {
        Some(ToolAction::Plan { .. }) => None,
        Some(a) if display == TerminalDisplay::Meta && terminal_cwd(a).is_some() => Some(
            ToolCallUpdate::new(call_id.to_owned(), ToolCallUpdateFields::new()).meta(meta(
                json!({ "terminal_output": { "terminal_id": call_id, "data": delta } }),
            )),
        ),
        _ => None,
    }
}

/// The `tool_call_update` that closes the card of `call_id`, or `None` for a call that has
/// no card. `action` is `None` for a call whose start this projection did not see.
pub fn closed(
    call_id: &str,
    action: Option<&ToolAction>,
    outcome: &ToolOutcome,
    display: TerminalDisplay,
) -> Option<ToolCallUpdate> {
    if matches!(action, Some(ToolAction::Plan { .. })) {
        return None;
    }
    let status = if outcome.succeeded() {
        ToolCallStatus::Completed
    } else {
        ToolCallStatus::Failed
    };
    let terminal = display == TerminalDisplay::Meta && action.and_then(terminal_cwd).is_some();
    let content = if terminal {
        vec![ToolCallContent::Terminal(Terminal::new(call_id.to_owned()))]
    } else {
        outcome_content(action, outcome)
    };
    let fields = ToolCallUpdateFields::new()
        .status(status)
        .content(content)
        .raw_output(serde_json::to_value(outcome).ok());
    let update = ToolCallUpdate::new(call_id.to_owned(), fields);
    if terminal {
        let (exit_code, signal) = exit_of(outcome);
        return Some(update.meta(meta(json!({
            "terminal_exit": { "terminal_id": call_id, "exit_code": exit_code, "signal": signal }
        }))));
    }
    Some(update)
}

/// What a card shows once the call ended.
fn outcome_content(action: Option<&ToolAction>, outcome: &ToolOutcome) -> Vec<ToolCallContent> {
    match outcome {
        ToolOutcome::Patched { changes } => changes.iter().map(diff_content).collect(),
        ToolOutcome::Exited { output, .. } | ToolOutcome::Running { output, .. } => {
            if output.is_empty() {
                Vec::new()
            } else {
                vec![text_content(fenced(output))]
            }
        }
        ToolOutcome::Returned { text, .. } => {
            // A file read is shown as the file, not as a message.
            let shown = match action {
                Some(ToolAction::Read { .. } | ToolAction::List { .. }) => fenced(text),
                _ => text.clone(),
            };
            vec![text_content(shown)]
        }
        ToolOutcome::Agents { text, .. } => vec![text_content(text.clone())],
        ToolOutcome::Declined { reason, .. } => vec![text_content(reason.clone())],
        ToolOutcome::Failed { message } => vec![text_content(message.clone())],
        ToolOutcome::Interrupted { .. } => {
            vec![text_content(
                "The call was interrupted before it finished.".into(),
            )]
        }
    }
}

/// One line saying what the call does.
pub fn title(tool: &str, action: &ToolAction) -> String {
    let full = match action {
        ToolAction::Exec { .. } | ToolAction::Stdin { .. } => {
            action.command_line(tool).unwrap_or_else(|| tool.to_owned())
        }
        ToolAction::Edit { changes } => {
            let files: Vec<String> = changes
                .iter()
                .map(|c| c.path.display().to_string())
                .collect();
            format!("Edit {}", files.join(", "))
        }
        ToolAction::Read { path } => format!("Read {}", path.display()),
        ToolAction::List { path } => format!("List {}", path.display()),
        ToolAction::Search { query, path } => format!("Search {query:?} in {}", path.display()),
        ToolAction::Plan { .. } => "Update the plan".to_owned(),
        ToolAction::Mcp { server, tool, .. } => format!("{server}/{tool}"),
        ToolAction::Agent { op, prompt, .. } => match prompt {
            Some(prompt) => format!("{tool}: {prompt}"),
            None => format!("{tool} ({op:?})"),
        },
        ToolAction::Other { tool, .. } => tool.clone(),
    };
    one_line(&full)
}

/// The title's first line, cut at [`TITLE_CHARS`] characters.
fn one_line(text: &str) -> String {
    let first = text.lines().next().unwrap_or_default();
    let more_lines = text.trim_end().lines().nth(1).is_some();
    let mut line: String = first.chars().take(TITLE_CHARS).collect();
    if more_lines || first.chars().count() > TITLE_CHARS {
        line.push('…');
    }
    line
}

pub fn kind(action: &ToolAction) -> ToolKind {
    match action {
        ToolAction::Exec { commands, .. } if !commands.is_empty() => {
            let all = |f: fn(&CommandAction) -> bool| commands.iter().all(f);
            if all(|c| matches!(c, CommandAction::Read { .. })) {
                ToolKind::Read
            } else if all(|c| {
                matches!(
                    c,
                    CommandAction::Search { .. } | CommandAction::ListFiles { .. }
                )
            }) {
                ToolKind::Search
            } else {
                ToolKind::Execute
            }
        }
        ToolAction::Exec { .. } | ToolAction::Stdin { .. } => ToolKind::Execute,
        ToolAction::Edit { changes } => {
            if changes.iter().all(|c| c.kind == FileChangeKind::Delete) {
                ToolKind::Delete
            } else {
                ToolKind::Edit
            }
        }
        ToolAction::Read { .. } | ToolAction::List { .. } => ToolKind::Read,
        ToolAction::Search { .. } => ToolKind::Search,
        ToolAction::Plan { .. } => ToolKind::Think,
        ToolAction::Mcp { .. } | ToolAction::Agent { .. } | ToolAction::Other { .. } => {
            ToolKind::Other
        }
    }
}

/// The files the call touches, absolute. Lines are not sent: no action knows one.
fn locations(action: &ToolAction) -> Vec<ToolCallLocation> {
    let paths: Vec<PathBuf> = match action {
        ToolAction::Exec { cwd, commands, .. } => commands
            .iter()
            .filter_map(|c| match c {
                CommandAction::Read { path, .. } => Some(cwd.join(path)),
                _ => None,
            })
            .collect(),
        ToolAction::Edit { changes } => changes
            .iter()
            .map(|c| c.move_to.clone().unwrap_or_else(|| c.path.clone()))
            .collect(),
        ToolAction::Read { path } | ToolAction::List { path } | ToolAction::Search { path, .. } => {
            vec![path.clone()]
        }
        ToolAction::Stdin { .. }
        | ToolAction::Plan { .. }
        | ToolAction::Mcp { .. }
        | ToolAction::Agent { .. }
        | ToolAction::Other { .. } => Vec::new(),
    };
    paths
        .into_iter()
        .filter(|p| p.is_absolute())
        .map(ToolCallLocation::new)
        .collect()
}

/// Where a command runs, for the calls shown as a terminal.
fn terminal_cwd(action: &ToolAction) -> Option<&Path> {
    match action {
        ToolAction::Exec { cwd, .. } => Some(cwd),
        ToolAction::Stdin { cwd, .. } => Some(cwd.as_deref().unwrap_or(Path::new("/"))),
        _ => None,
    }
}

/// The arguments as the model sent them: JSON when they are JSON.
fn raw_input(arguments: &str) -> Value {
    serde_json::from_str(arguments).unwrap_or_else(|_| Value::String(arguments.to_owned()))
}

fn exit_of(outcome: &ToolOutcome) -> (Option<i32>, Option<i32>) {
    match outcome {
        ToolOutcome::Exited {
            exit: rein_protocol::ExitStatus::Signal { signal },
            ..
        } => (None, Some(*signal)),
        other => (other.exit_code(), None),
    }
}

/// A file change as an ACP diff: `oldText` null for a new file, `newText` empty for a
/// deleted one. The texts are those of the change's unified diff (its hunks with their
/// context), which is what the facts hold; for a new or deleted file that is the whole file.
pub fn diff_content(change: &FileDiff) -> ToolCallContent {
    let (old, new) = texts_of(&change.unified_diff);
    let path = change
        .move_to
        .clone()
        .unwrap_or_else(|| change.path.clone());
    let diff = match change.kind {
        FileChangeKind::Add => Diff::new(path, new),
        FileChangeKind::Delete => Diff::new(path, String::new()).old_text(old),
        FileChangeKind::Update => Diff::new(path, new).old_text(old),
    };
    ToolCallContent::Diff(diff)
}

/// The old and the new side of a unified diff's hunks.
fn texts_of(unified: &str) -> (String, String) {
    let (mut old, mut new) = (String::new(), String::new());
    for line in unified.lines() {
        if line.starts_with("--- ") || line.starts_with("+++ ") || line.starts_with("@@") {
            continue;
        }
        let (sign, rest) = line.split_at(line.chars().next().map_or(0, char::len_utf8));
        match sign {
            " " => {
                old.push_str(rest);
                old.push('\n');
                new.push_str(rest);
                new.push('\n');
            }
            "-" => {
                old.push_str(rest);
                old.push('\n');
            }
            "+" => {
                new.push_str(rest);
                new.push('\n');
            }
            // "\ No newline at end of file" and anything else say nothing of the texts.
            _ => {}
        }
    }
    (old, new)
}

fn text_content(text: String) -> ToolCallContent {
    ToolCallContent::Content(Content::new(ContentBlock::from(text)))
}

/// Text in a code fence long enough that no line of it closes the fence early.
fn fenced(text: &str) -> String {
    let longest = text
        .lines()
        .map(|l| l.chars().take_while(|c| *c == '`').count())
        .max()
        .unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let body = text.strip_suffix('\n').unwrap_or(text);
    format!("{fence}\n{body}\n{fence}")
}

fn meta(value: Value) -> Meta {
    match value {
        Value::Object(map) => map,
        _ => Meta::new(),
    }
}

#[cfg(test)]
#[path = "tool_calls_tests.rs"]
mod tests;
