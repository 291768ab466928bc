//! Mapping rein's events onto the `codex exec --json` wire. One match over every
//! [`EventMsg`] variant, so a new kernel event fails to compile until it is mapped.
//!
//! Tool calls become items from the kernel's facts (what the call's tool said it does, how
//! it ended), never from the tool's name or output: commands, terminal input and the file
//! tools are `command_execution`s, an edit a `file_change`, an MCP call an
//! `mcp_tool_call`; the plan is the `todo_list` (from `PlanUpdated`). Other tools have no
//! item on this wire.

use std::collections::HashMap;

use super::events::{
    CollabAgentState, CollabTool, CollabToolStatus, CommandStatus, ExecError, ExecEvent, ExecItem,
    ExecItemDetails, ExecUsage, FileUpdateChange, McpToolResult, McpToolStatus, PatchChangeKind,
    PatchStatus, TodoItem,
};
use rein_protocol::{
    AdvisorVerdict, AgentOp, Event, EventMsg, FileChangeKind, FileDiff, HookRunStatus, Item,
    PlanStep, PlanStepStatus, ThreadId, TokenUsage, ToolAction, ToolOutcome,
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
    /// The thread's task graph, folded from its changes (`task_graph.updated`).
    graph: rein_protocol::TaskGraph,
    /// Calls whose approval the run denied without asking anyone, with what to say of it.
    denied_unasked: HashMap<String, &'static str>,
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

    fn graph_updated(&self) -> ExecEvent {
        ExecEvent::TaskGraphUpdated {
            graph: self.graph.clone(),
        }
    }

    /// The lines one kernel event becomes (often none).
    ///
    /// One match over every event kind, with no wildcard arm, on purpose: a new event does
    /// not compile until this projection decides its lines (which is why it is long).
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
                if !self.graph.is_empty() {
                    // Its running nodes are cancelled, as the kernel folds it.
                    self.graph.cancel_running(event.timestamp_ms);
                    out.push(self.graph_updated());
                }
                out.push(ExecEvent::TurnFailed {
                    error: ExecError {
                        message: format!("turn aborted: {}", abort_text(*reason)),
                    },
                });
                out
            }
            EventMsg::TaskGraphChanged { change } => {
                self.graph.apply(change, event.timestamp_ms);
                vec![self.graph_updated()]
            }
            EventMsg::ItemCompleted { item } => self.item_completed(item),
            EventMsg::GoalUpdated { goal } => vec![ExecEvent::GoalUpdated { goal: goal.clone() }],
            EventMsg::GoalTurnStarted { remaining } => vec![ExecEvent::GoalTurnStarted {
                remaining: *remaining,
            }],
            EventMsg::GoalCheckpointed { checkpoint } => vec![ExecEvent::GoalCheckpoint {
                checkpoint: checkpoint.clone(),
            }],
            EventMsg::GoalCleared => vec![ExecEvent::GoalCleared {}],
            EventMsg::ToolCallBegin {
                call_id,
                name,
                action,
                ..
            } => self.call_began(event.thread_id, call_id, name, action),
            // The run denies every approval (nobody can be asked): say so on the call.
            EventMsg::ClientRequested {
                call_id, request, ..
            } => {
                if let Some(denial) = super::headless::denial(request) {
                    self.denied_unasked.insert(call_id.clone(), denial);
                }
                Vec::new()
            }
            EventMsg::ToolCallEnd {
                call_id,
                outcome,
                ..
            } => self.call_finished(call_id, outcome),
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

            EventMsg::TokenCount { last, .. } => {
                self.usage.add(last);
                Vec::new()
            }
            EventMsg::AdvisorReviewCompleted { verdict, .. } => match verdict {
                AdvisorVerdict::ApproveWithWarnings { reason } => {
                    vec![self.completed(ExecItemDetails::Error {
                        message: format!("advisor warning: {reason}"),
                    })]
                }
                AdvisorVerdict::Reject { reason } => vec![self.completed(ExecItemDetails::Error {
                    message: format!("advisor rejected the tool calls: {reason}"),
                })],
                // An approval needs no line; a failure comes with its warning.
                AdvisorVerdict::Approve { .. } | AdvisorVerdict::FailedOpen { .. } => Vec::new(),
            },
            EventMsg::AdvisorReviewStarted { .. } => Vec::new(),
            // Codex's exec stream has no hook items: what a user must see (a block, a
            // failure) is an error item; a hook that ran and said nothing is no line.
            EventMsg::HookStarted { .. } => Vec::new(),
            EventMsg::HookCompleted {
                status, message, ..
            } => match status {
                HookRunStatus::Completed => Vec::new(),
                HookRunStatus::Blocked | HookRunStatus::Failed => {
                    let what = if *status == HookRunStatus::Blocked {
                        "blocked"
                    } else {
                        "failed"
                    };
                    vec![self.completed(ExecItemDetails::Error {
                        message: format!("hook {what}: {}", message.as_deref().unwrap_or_default()),
                    })]
                }
            },
            // A memory that was not kept is said, as a hook's block is: an error item.
            EventMsg::MemoryRejected { id, reason, .. } => {
                vec![self.completed(ExecItemDetails::Error {
                    message: format!("memory {id} not kept: {reason}"),
                })]
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
            | EventMsg::AgentOrigin { .. }
            | EventMsg::ContextLoaded { .. }
            | EventMsg::SkillActivated { .. }
            | EventMsg::AgentSpawned { .. }
            | EventMsg::AgentTasked { .. }
            | EventMsg::AgentClosed { .. }
            | EventMsg::MailQueued { .. }
            | EventMsg::MailTaken { .. }
            | EventMsg::ThreadNamed { .. }
            | EventMsg::ItemStarted { .. }
            | EventMsg::AgentMessageDelta { .. }
            | EventMsg::ReasoningDelta { .. }
            | EventMsg::PatchApplied { .. }
            | EventMsg::ClientRequestResolved { .. }
            | EventMsg::RolledBack { .. }
            | EventMsg::CompactionStarted { .. }
            | EventMsg::Compacted { .. }
            | EventMsg::ModelSwitched { .. }
            | EventMsg::StepRequested { .. }
            | EventMsg::TurnDiff { .. }
            // Codex's exec stream has no memory items; a kept memory needs no line.
            | EventMsg::MemoryProposed { .. }
            | EventMsg::MemoryAccepted { .. }
            | EventMsg::MemoryModeSet { .. }
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
            // A call cut short ends with its output's facts.
            Item::ToolOutput {
                call_id,
                facts: Some(facts),
                ..
            } => self.call_finished(call_id, &facts.outcome),
            _ => Vec::new(),
        }
    }

    fn call_began(
        &mut self,
        sender: ThreadId,
        call_id: &str,
        tool: &str,
        action: &ToolAction,
    ) -> Vec<ExecEvent> {
        let details = match action {
            ToolAction::Edit { changes } => ExecItemDetails::FileChange {
                changes: file_changes(changes),
                status: PatchStatus::InProgress,
            },
            ToolAction::Mcp {
                server,
                tool,
                arguments,
            } => ExecItemDetails::McpToolCall {
                server: server.clone(),
                tool: tool.clone(),
                arguments: arguments.clone(),
                result: None,
                error: None,
                status: McpToolStatus::InProgress,
            },
            ToolAction::Agent {
                op,
                targets,
                prompt,
                ..
            } => ExecItemDetails::CollabToolCall {
                tool: collab_tool(*op),
                sender_thread_id: sender.to_string(),
                receiver_thread_ids: targets.iter().map(ToString::to_string).collect(),
                prompt: prompt.clone(),
                agents_states: Default::default(),
                status: CollabToolStatus::InProgress,
            },
            // The plan reaches clients through `PlanUpdated`.
            ToolAction::Plan { .. } | ToolAction::Other { .. } => return Vec::new(),
            ToolAction::Exec { .. }
            | ToolAction::Stdin { .. }
            | ToolAction::Read { .. }
            | ToolAction::List { .. }
            | ToolAction::Search { .. } => ExecItemDetails::CommandExecution {
                command: action.command_line(tool).unwrap_or_default(),
                aggregated_output: String::new(),
                exit_code: None,
                status: CommandStatus::InProgress,
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

    fn call_finished(&mut self, call_id: &str, outcome: &ToolOutcome) -> Vec<ExecEvent> {
        let Some(mut call) = self.calls.remove(call_id) else {
            return Vec::new();
        };
        self.call_order.retain(|c| c != call_id);
        match (outcome, self.denied_unasked.remove(call_id)) {
            // The kernel's reason reads as the user's denial; nobody was asked.
            (ToolOutcome::Declined { by, .. }, Some(denial)) => {
                let said = ToolOutcome::Declined {
                    by: *by,
                    reason: denial.to_owned(),
                };
                finish(&mut call.details, &said);
            }
            _ => finish(&mut call.details, outcome),
        }
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
                let cut = ToolOutcome::failed("the turn ended before the call finished");
                finish(&mut call.details, &cut);
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

/// The item's details once its call ended. One arm per kind of item, each taking its part
/// of the outcome, with no wildcard but the kinds that are no call: long because there are
/// that many kinds.
fn finish(details: &mut ExecItemDetails, outcome: &ToolOutcome) {
    let succeeded = outcome.succeeded();
    match details {
        ExecItemDetails::CommandExecution {
            aggregated_output,
            exit_code,
            status,
            ..
        } => {
            *aggregated_output = outcome.shown_text().unwrap_or_default().to_owned();
            *exit_code = outcome.exit_code();
            *status = match outcome {
                ToolOutcome::Declined { .. } => CommandStatus::Declined,
                _ if succeeded => CommandStatus::Completed,
                _ => CommandStatus::Failed,
            };
        }
        ExecItemDetails::FileChange { changes, status } => {
            if let ToolOutcome::Patched { changes: applied } = outcome {
                *changes = file_changes(applied);
            }
            *status = if succeeded {
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
            if let ToolOutcome::Returned {
                text,
                structured,
                content,
            } = outcome
            {
                *result = Some(McpToolResult {
                    content: if content.is_empty() {
                        vec![serde_json::json!({"type": "text", "text": text})]
                    } else {
                        content.clone()
                    },
                    structured_content: structured.clone(),
                });
                *status = McpToolStatus::Completed;
            } else {
                *error = Some(ExecError {
                    message: outcome.shown_text().unwrap_or("the call failed").to_owned(),
                });
                *status = McpToolStatus::Failed;
            }
        }
        ExecItemDetails::CollabToolCall {
            receiver_thread_ids,
            agents_states,
            status,
            ..
        } => {
            if let ToolOutcome::Agents { agents, .. } = outcome {
                for report in agents {
                    let id = report.thread_id.to_string();
                    if !receiver_thread_ids.contains(&id) {
                        receiver_thread_ids.push(id.clone());
                    }
                    agents_states.insert(
                        id,
                        CollabAgentState {
                            status: report.status,
                            message: report.message.clone(),
                        },
                    );
                }
            }
            *status = if succeeded {
                CollabToolStatus::Completed
            } else {
                CollabToolStatus::Failed
            };
        }
        ExecItemDetails::AgentMessage { .. }
        | ExecItemDetails::Reasoning { .. }
        | ExecItemDetails::TodoList { .. }
        | ExecItemDetails::Error { .. } => {}
    }
}

fn collab_tool(op: AgentOp) -> CollabTool {
    match op {
        AgentOp::Spawn => CollabTool::SpawnAgent,
        AgentOp::Send => CollabTool::SendInput,
        AgentOp::Wait => CollabTool::Wait,
        AgentOp::Close => CollabTool::CloseAgent,
        AgentOp::Resume => CollabTool::ResumeAgent,
        AgentOp::List => CollabTool::ListAgents,
    }
}

/// The files of a patch, as this wire lists them (where they end up).
fn file_changes(diffs: &[FileDiff]) -> Vec<FileUpdateChange> {
    diffs
        .iter()
        .map(|d| FileUpdateChange {
            path: d.move_to.as_ref().unwrap_or(&d.path).display().to_string(),
            kind: match d.kind {
                FileChangeKind::Add => PatchChangeKind::Add,
                FileChangeKind::Delete => PatchChangeKind::Delete,
                FileChangeKind::Update => PatchChangeKind::Update,
            },
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
