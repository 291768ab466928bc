//! Mapping rein's events onto the `codex exec --json` wire. One match over every
//! [`EventMsg`] variant, so a new kernel event fails to compile until it is mapped.
//!
//! Tool calls become typed items by tool name: `shell` a `command_execution`, `apply_patch`
//! a `file_change`, `update_plan` the `todo_list`; any other tool an `mcp_tool_call` of
//! server `rein`.

use std::collections::HashMap;

use rein_protocol::exec_events::{
    CommandStatus, ExecError, ExecEvent, ExecItem, ExecItemDetails, ExecUsage, FileUpdateChange,
    McpToolResult, McpToolStatus, PatchChangeKind, PatchStatus, TodoItem,
};
use rein_protocol::{
    Event, EventMsg, FileChangeKind, FileDiff, Item, PlanStep, PlanStepStatus, TokenUsage,
};

/// A tool call whose item is open, by call id.
struct OpenCall {
    item_id: String,
    details: ExecItemDetails,
}

#[derive(Default)]
pub struct JsonlMapper {
    next_item: u64,
    calls: HashMap<String, OpenCall>,
    /// Call order, so open calls are closed deterministically.
    call_order: Vec<String>,
    todo: Option<(String, Vec<TodoItem>)>,
    usage: TokenUsage,
}

impl JsonlMapper {
    pub fn new() -> Self {
        Self::default()
    }

    fn item_id(&mut self) -> String {
        let id = format!("item_{}", self.next_item);
        self.next_item += 1;
        id
    }

    fn completed(&mut self, details: ExecItemDetails) -> ExecEvent {
        let id = self.item_id();
        ExecEvent::ItemCompleted {
            item: ExecItem { id, details },
        }
    }

    /// The lines one kernel event becomes (often none).
    pub fn map(&mut self, event: &Event) -> Vec<ExecEvent> {
        match &event.msg {
            EventMsg::ThreadConfigured { .. } => vec![ExecEvent::ThreadStarted {
                thread_id: event.thread_id.to_string(),
            }],
            EventMsg::TurnStarted { .. } => {
                self.usage = TokenUsage::default();
                vec![ExecEvent::TurnStarted {}]
            }
            EventMsg::TurnCompleted { .. } => {
                let mut out = self.close_open_items();
                out.push(ExecEvent::TurnCompleted {
                    usage: exec_usage(&self.usage),
                });
                out
            }
            EventMsg::TurnFailed { message, .. } => {
                let mut out = self.close_open_items();
                out.push(ExecEvent::TurnFailed {
                    error: ExecError {
                        message: message.clone(),
                    },
                });
                out
            }
            EventMsg::TurnAborted { reason } => {
                let mut out = self.close_open_items();
                out.push(ExecEvent::TurnFailed {
                    error: ExecError {
                        message: format!("turn aborted: {}", abort_text(*reason)),
                    },
                });
                out
            }
            EventMsg::ItemCompleted { item } => self.item_completed(item),
            EventMsg::ToolCallBegin {
                call_id,
                name,
                arguments,
            } => self.call_began(call_id, name, arguments),
            EventMsg::ToolOutputDelta { call_id, delta } => {
                if let Some(OpenCall {
                    details:
                        ExecItemDetails::CommandExecution {
                            aggregated_output, ..
                        },
                    ..
                }) = self.calls.get_mut(call_id)
                {
                    aggregated_output.push_str(delta);
                }
                Vec::new()
            }
            EventMsg::PlanUpdated { plan } => {
                let items = todo_items(plan);
                match &mut self.todo {
                    Some((id, current)) => {
                        current.clone_from(&items);
                        vec![ExecEvent::ItemUpdated {
                            item: ExecItem {
                                id: id.clone(),
                                details: ExecItemDetails::TodoList { items },
                            },
                        }]
                    }
                    None => {
                        let id = self.item_id();
                        self.todo = Some((id.clone(), items.clone()));
                        vec![ExecEvent::ItemStarted {
                            item: ExecItem {
                                id,
                                details: ExecItemDetails::TodoList { items },
                            },
                        }]
                    }
                }
            }
            EventMsg::PatchApplied { call_id, changes } => self.patch_applied(call_id, changes),
            EventMsg::TokenCount { last, .. } => {
                self.usage.add(last);
                Vec::new()
            }
            EventMsg::Warning { message } => vec![self.completed(ExecItemDetails::Error {
                message: message.clone(),
            })],
            EventMsg::StreamRetry {
                attempt,
                max_attempts,
                message,
            } => vec![self.completed(ExecItemDetails::Error {
                message: format!("reconnecting {attempt}/{max_attempts}: {message}"),
            })],
            EventMsg::ModelRerouted { from, to, reason } => {
                vec![self.completed(ExecItemDetails::Error {
                    message: format!("model {from} failed ({reason}); continuing with {to}"),
                })]
            }
            EventMsg::Error { message, .. } => vec![ExecEvent::Error(ExecError {
                message: message.clone(),
            })],
            // Text arrives whole in the completed item; approvals are answered by the run
            // loop; the rest has no counterpart on this wire.
            EventMsg::SettingsChanged { .. }
            | EventMsg::ThreadNamed { .. }
            | EventMsg::ItemStarted { .. }
            | EventMsg::AgentMessageDelta { .. }
            | EventMsg::ReasoningDelta { .. }
            | EventMsg::ToolCallEnd { .. }
            | EventMsg::ApprovalRequested { .. }
            | EventMsg::ApprovalResolved { .. }
            | EventMsg::RolledBack { .. }
            | EventMsg::CompactionStarted { .. }
            | EventMsg::Compacted { .. }
            | EventMsg::ModelSwitched { .. }
            | EventMsg::TurnDiff { .. }
            | EventMsg::ShutdownComplete => Vec::new(),
        }
    }

    fn item_completed(&mut self, item: &Item) -> Vec<ExecEvent> {
        match item {
            Item::AgentMessage { text, .. } if !text.is_empty() => {
                vec![self.completed(ExecItemDetails::AgentMessage { text: text.clone() })]
            }
            Item::Reasoning { text, .. } if !text.is_empty() => {
                vec![self.completed(ExecItemDetails::Reasoning { text: text.clone() })]
            }
            Item::ToolOutput {
                call_id,
                output,
                success,
                ..
            } => self.call_finished(call_id, output, *success),
            _ => Vec::new(),
        }
    }

    fn call_began(&mut self, call_id: &str, name: &str, arguments: &str) -> Vec<ExecEvent> {
        let args: serde_json::Value =
            serde_json::from_str(arguments).unwrap_or(serde_json::Value::Null);
        let details = match name {
            "shell" => ExecItemDetails::CommandExecution {
                command: command_text(&args["command"]),
                aggregated_output: String::new(),
                exit_code: None,
                status: CommandStatus::InProgress,
            },
            "apply_patch" => ExecItemDetails::FileChange {
                changes: patch_changes(args["input"].as_str().unwrap_or_default()),
                status: PatchStatus::InProgress,
            },
            // The plan reaches clients through `PlanUpdated`.
            "update_plan" => return Vec::new(),
            _ => ExecItemDetails::McpToolCall {
                server: "rein".into(),
                tool: name.into(),
                arguments: args,
                result: None,
                error: None,
                status: McpToolStatus::InProgress,
            },
        };
        let item_id = self.item_id();
        // A file change is announced only once it is applied (or not), as Codex does.
        let started = match &details {
            ExecItemDetails::FileChange { .. } => Vec::new(),
            _ => vec![ExecEvent::ItemStarted {
                item: ExecItem {
                    id: item_id.clone(),
                    details: details.clone(),
                },
            }],
        };
        self.calls
            .insert(call_id.to_owned(), OpenCall { item_id, details });
        self.call_order.push(call_id.to_owned());
        started
    }

    /// The files a patch really changed. An `apply_patch` call's item takes them; a patch
    /// applied through another tool (the shell) is reported as a file change of its own.
    fn patch_applied(&mut self, call_id: &str, diffs: &[FileDiff]) -> Vec<ExecEvent> {
        let applied: Vec<FileUpdateChange> = diffs
            .iter()
            .map(|d| FileUpdateChange {
                path: d.move_to.as_ref().unwrap_or(&d.path).display().to_string(),
                kind: match d.kind {
                    FileChangeKind::Add => PatchChangeKind::Add,
                    FileChangeKind::Delete => PatchChangeKind::Delete,
                    FileChangeKind::Update => PatchChangeKind::Update,
                },
            })
            .collect();
        if let Some(OpenCall {
            details: ExecItemDetails::FileChange { changes, .. },
            ..
        }) = self.calls.get_mut(call_id)
        {
            *changes = applied;
            return Vec::new();
        }
        vec![self.completed(ExecItemDetails::FileChange {
            changes: applied,
            status: PatchStatus::Completed,
        })]
    }

    fn call_finished(&mut self, call_id: &str, output: &str, success: bool) -> Vec<ExecEvent> {
        let Some(mut call) = self.calls.remove(call_id) else {
            return Vec::new();
        };
        self.call_order.retain(|c| c != call_id);
        finish(&mut call.details, output, success);
        vec![ExecEvent::ItemCompleted {
            item: ExecItem {
                id: call.item_id,
                details: call.details,
            },
        }]
    }

    /// The turn ended: calls that never reported fail, the plan completes.
    fn close_open_items(&mut self) -> Vec<ExecEvent> {
        let mut out = Vec::new();
        for call_id in std::mem::take(&mut self.call_order) {
            if let Some(mut call) = self.calls.remove(&call_id) {
                finish(
                    &mut call.details,
                    "the turn ended before the call finished",
                    false,
                );
                out.push(ExecEvent::ItemCompleted {
                    item: ExecItem {
                        id: call.item_id,
                        details: call.details,
                    },
                });
            }
        }
        if let Some((id, items)) = self.todo.take() {
            out.push(ExecEvent::ItemCompleted {
                item: ExecItem {
                    id,
                    details: ExecItemDetails::TodoList { items },
                },
            });
        }
        out
    }
}

fn finish(details: &mut ExecItemDetails, output: &str, success: bool) {
    match details {
        ExecItemDetails::CommandExecution {
            aggregated_output,
            exit_code,
            status,
            ..
        } => {
            // The shell tool answers `{"output", "metadata": {"exit_code"}}`; anything else
            // (a refusal, bad arguments) is plain text.
            let parsed: Option<serde_json::Value> = serde_json::from_str(output).ok();
            let body = parsed.as_ref().and_then(|v| v["output"].as_str());
            *aggregated_output = body.map_or_else(|| output.to_owned(), str::to_owned);
            *exit_code = parsed
                .as_ref()
                .and_then(|v| v["metadata"]["exit_code"].as_i64())
                .and_then(|c| i32::try_from(c).ok());
            *status = if success {
                CommandStatus::Completed
            } else {
                CommandStatus::Failed
            };
        }
        ExecItemDetails::FileChange { status, .. } => {
            *status = if success {
                PatchStatus::Completed
            } else {
                PatchStatus::Failed
            };
        }
        ExecItemDetails::McpToolCall {
            result,
            error,
            status,
            ..
        } => {
            if success {
                *result = Some(McpToolResult {
                    content: vec![serde_json::json!({"type": "text", "text": output})],
                    structured_content: None,
                });
                *status = McpToolStatus::Completed;
            } else {
                *error = Some(ExecError {
                    message: output.to_owned(),
                });
                *status = McpToolStatus::Failed;
            }
        }
        ExecItemDetails::AgentMessage { .. }
        | ExecItemDetails::Reasoning { .. }
        | ExecItemDetails::TodoList { .. }
        | ExecItemDetails::Error { .. } => {}
    }
}

/// A command as one line: an argv is shell-quoted, a script string is shown as is.
fn command_text(command: &serde_json::Value) -> String {
    match command {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(argv) => argv
            .iter()
            .map(|a| shell_quote(a.as_str().unwrap_or_default()))
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    }
}

fn shell_quote(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
    if plain {
        arg.to_owned()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

/// The files a patch touches, from its `*** Add/Delete/Update File:` headers.
fn patch_changes(patch: &str) -> Vec<FileUpdateChange> {
    let headers = [
        ("*** Add File: ", PatchChangeKind::Add),
        ("*** Delete File: ", PatchChangeKind::Delete),
        ("*** Update File: ", PatchChangeKind::Update),
    ];
    patch
        .lines()
        .filter_map(|line| {
            headers.iter().find_map(|(prefix, kind)| {
                line.strip_prefix(prefix).map(|path| FileUpdateChange {
                    path: path.trim().to_owned(),
                    kind: *kind,
                })
            })
        })
        .collect()
}

fn todo_items(plan: &[PlanStep]) -> Vec<TodoItem> {
    plan.iter()
        .map(|s| TodoItem {
            text: s.step.clone(),
            completed: s.status == PlanStepStatus::Completed,
        })
        .collect()
}

fn exec_usage(u: &TokenUsage) -> ExecUsage {
    ExecUsage {
        input_tokens: u.input_tokens,
        cached_input_tokens: u.cached_input_tokens,
        cache_write_input_tokens: 0,
        output_tokens: u.output_tokens,
        reasoning_output_tokens: u.reasoning_output_tokens,
    }
}

pub fn abort_text(reason: rein_protocol::TurnAbortReason) -> &'static str {
    use rein_protocol::TurnAbortReason as R;
    match reason {
        R::Interrupted => "interrupted",
        R::BudgetLimited => "budget limit reached",
        R::Replaced => "replaced by a new turn",
        R::ReviewEnded => "review ended",
    }
}

#[cfg(test)]
#[path = "jsonl_tests.rs"]
mod tests;
