//! The JSONL events `rein exec --json` prints, one per line: the wire of `codex exec --json`
//! (the stream the official Codex SDKs parse). Field names, tags and item types follow that
//! wire exactly; rein's own [`Event`](rein_protocol::Event)s are mapped onto it by the CLI.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One line of `exec --json` output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type")]
pub enum ExecEvent {
    /// First line: the thread this run works on (new, resumed or forked).
    #[serde(rename = "thread.started")]
    ThreadStarted { thread_id: String },
    #[serde(rename = "turn.started")]
    TurnStarted {},
    #[serde(rename = "turn.completed")]
    TurnCompleted { usage: ExecUsage },
    #[serde(rename = "turn.failed")]
    TurnFailed { error: ExecError },
    #[serde(rename = "item.started")]
    ItemStarted { item: ExecItem },
    #[serde(rename = "item.updated")]
    ItemUpdated { item: ExecItem },
    #[serde(rename = "item.completed")]
    ItemCompleted { item: ExecItem },
    /// A fatal error of the stream (the turn fails after it).
    #[serde(rename = "error")]
    Error(ExecError),
    /// rein's own (`--goal`): the thread's goal as it is now.
    #[serde(rename = "goal.updated")]
    GoalUpdated { goal: rein_protocol::ThreadGoal },
    /// rein's own: the turn that just started continues the goal.
    #[serde(rename = "goal.turn.started")]
    GoalTurnStarted {
        remaining: rein_protocol::GoalBudget,
    },
    /// rein's own: where the goal stands after a goal turn.
    #[serde(rename = "goal.checkpoint")]
    GoalCheckpoint {
        checkpoint: rein_protocol::GoalCheckpoint,
    },
    /// rein's own: the goal was removed.
    #[serde(rename = "goal.cleared")]
    GoalCleared {},
    /// rein's own (`--strategy planner`): the task graph after a change, whole.
    #[serde(rename = "task_graph.updated")]
    TaskGraphUpdated { graph: rein_protocol::TaskGraph },
}

/// Token usage of one turn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ExecUsage {
    pub input_tokens: u64,
    pub cached_input_tokens: u64,
    /// Always 0: rein's providers report no cache writes; kept for wire parity.
    pub cache_write_input_tokens: u64,
    pub output_tokens: u64,
    pub reasoning_output_tokens: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ExecError {
    pub message: String,
}

/// An item of the thread: `id` (`item_0`, `item_1`, ... per run) plus its typed payload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExecItem {
    pub id: String,
    #[serde(flatten)]
    pub details: ExecItemDetails,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ExecItemDetails {
    /// The model's answer (a JSON text when an output schema was given).
    AgentMessage { text: String },
    /// The model's reasoning summary.
    Reasoning { text: String },
    CommandExecution {
        command: String,
        aggregated_output: String,
        exit_code: Option<i32>,
        status: CommandStatus,
    },
    /// Emitted once, completed, when a patch was applied or failed.
    FileChange {
        changes: Vec<FileUpdateChange>,
        status: PatchStatus,
    },
    /// A tool call that is neither a command nor a patch. rein's own tools report as
    /// server `rein`.
    McpToolCall {
        server: String,
        tool: String,
        #[serde(default)]
        arguments: serde_json::Value,
        result: Option<McpToolResult>,
        error: Option<ExecError>,
        status: McpToolStatus,
    },
    /// A call of a sub-agent tool, as Codex prints it.
    CollabToolCall {
        tool: CollabTool,
        sender_thread_id: String,
        /// The agents addressed; for a spawn, the new agent.
        receiver_thread_ids: Vec<String>,
        prompt: Option<String>,
        agents_states: std::collections::BTreeMap<String, CollabAgentState>,
        status: CollabToolStatus,
    },
    /// The agent's plan: started on the first plan, updated on each change, completed when
    /// the turn ends.
    TodoList { items: Vec<TodoItem> },
    /// A non-fatal problem (a warning, a retried stream).
    Error { message: String },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CollabTool {
    SpawnAgent,
    SendInput,
    Wait,
    CloseAgent,
    ResumeAgent,
    ListAgents,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CollabToolStatus {
    InProgress,
    Completed,
    Failed,
}

/// An agent's status: `rein_protocol::AgentReportStatus` in snake case.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CollabAgentState {
    pub status: rein_protocol::AgentReportStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CommandStatus {
    InProgress,
    Completed,
    Failed,
    Declined,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FileUpdateChange {
    pub path: String,
    pub kind: PatchChangeKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PatchChangeKind {
    Add,
    Delete,
    Update,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PatchStatus {
    InProgress,
    Completed,
    Failed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum McpToolStatus {
    InProgress,
    Completed,
    Failed,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct McpToolResult {
    pub content: Vec<serde_json::Value>,
    pub structured_content: Option<serde_json::Value>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TodoItem {
    pub text: String,
    pub completed: bool,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn lines_match_the_codex_exec_wire() {
        let cases = [
            (
                ExecEvent::ThreadStarted {
                    thread_id: "t1".into(),
                },
                json!({"type": "thread.started", "thread_id": "t1"}),
            ),
            (ExecEvent::TurnStarted {}, json!({"type": "turn.started"})),
            (
                ExecEvent::ItemCompleted {
                    item: ExecItem {
                        id: "item_0".into(),
                        details: ExecItemDetails::AgentMessage { text: "hi".into() },
                    },
                },
                json!({"type": "item.completed", "item": {"id": "item_0", "type": "agent_message", "text": "hi"}}),
            ),
            (
                ExecEvent::ItemStarted {
                    item: ExecItem {
                        id: "item_1".into(),
                        details: ExecItemDetails::CommandExecution {
                            command: "ls".into(),
                            aggregated_output: String::new(),
                            exit_code: None,
                            status: CommandStatus::InProgress,
                        },
                    },
                },
                json!({"type": "item.started", "item": {"id": "item_1", "type": "command_execution",
                    "command": "ls", "aggregated_output": "", "exit_code": null, "status": "in_progress"}}),
            ),
            (
                ExecEvent::TurnFailed {
                    error: ExecError {
                        message: "boom".into(),
                    },
                },
                json!({"type": "turn.failed", "error": {"message": "boom"}}),
            ),
            (
                ExecEvent::Error(ExecError {
                    message: "boom".into(),
                }),
                json!({"type": "error", "message": "boom"}),
            ),
            (
                ExecEvent::TurnCompleted {
                    usage: ExecUsage {
                        input_tokens: 3,
                        output_tokens: 2,
                        ..ExecUsage::default()
                    },
                },
                json!({"type": "turn.completed", "usage": {"input_tokens": 3, "cached_input_tokens": 0,
                    "cache_write_input_tokens": 0, "output_tokens": 2, "reasoning_output_tokens": 0}}),
            ),
        ];
        for (event, wire) in cases {
            assert_eq!(serde_json::to_value(&event).unwrap(), wire);
            assert_eq!(serde_json::from_value::<ExecEvent>(wire).unwrap(), event);
        }
    }

    #[test]
    fn codex_transcript_lines_parse() {
        let line = r#"{"type":"item.completed","item":{"id":"item_0","type":"command_execution","command":"/bin/bash -lc 'echo hi'","aggregated_output":"hi\n","exit_code":0,"status":"completed"}}"#;
        let event: ExecEvent = serde_json::from_str(line).unwrap();
        assert!(matches!(
            event,
            ExecEvent::ItemCompleted {
                item: ExecItem {
                    details: ExecItemDetails::CommandExecution {
                        exit_code: Some(0),
                        ..
                    },
                    ..
                }
            }
        ));
    }
}
