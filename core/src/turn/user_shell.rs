//! The user's own command in a thread (`Op::UserShell`: `thread/shellCommand`, the Codex
//! TUI's `!cmd`): a turn of exactly one call of the thread's `shell` tool, run by the same
//! tool runner as the model's calls, so the thread's hooks, approval policy, session grants
//! and sandbox apply to it as to theirs (Codex runs it unsandboxed; rein does not). No
//! model request is made; the call and its output join the history, so the next turn's
//! model sees what the user ran and what it printed.

use std::sync::Arc;

use rein_protocol::{EventMsg, Item, ItemId, USER_SHELL_CALL_PREFIX};
use tokio_util::sync::CancellationToken;

use super::sink::TurnSink;
use super::step::StepContext;
use super::tool_runner;
use super::{TaskOutcome, TurnContext};
use crate::tools::ToolCall;

/// The tool the command runs through.
const SHELL_TOOL: &str = "shell";

pub(crate) struct UserShellTask {
    pub turn: TurnContext,
    pub history: Vec<Arc<Item>>,
    pub sink: TurnSink,
    pub cancel: CancellationToken,
    /// A shell script, run by the user's shell as the `shell` tool runs a string.
    pub command: String,
    pub timeout_ms: Option<u64>,
}

impl UserShellTask {
    pub(crate) async fn run(self) -> TaskOutcome {
        let step = StepContext::freeze(&self.turn);
        let mut arguments = serde_json::json!({ "command": self.command });
        if let Some(ms) = self.timeout_ms {
            arguments["timeout_ms"] = ms.into();
        }
        let call = ToolCall {
            call_id: format!("{USER_SHELL_CALL_PREFIX}{}", ItemId::new()),
            name: SHELL_TOOL.to_owned(),
            arguments: arguments.to_string(),
        };
        self.sink.emit(EventMsg::ItemCompleted {
            item: Item::ToolCall {
                id: ItemId::new(),
                call_id: call.call_id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
            },
        });
        let mut outputs = Vec::with_capacity(1);
        tool_runner::run_calls(
            &step,
            self.turn.thread_id,
            vec![call],
            &self.history,
            &self.sink,
            &self.cancel,
            |done| outputs.push(done),
        )
        .await;
        for done in outputs {
            self.sink.emit(EventMsg::ItemCompleted {
                item: Item::ToolOutput {
                    id: ItemId::new(),
                    call_id: done.call.call_id,
                    output: done.result.output,
                    success: done.result.success,
                    facts: Some(Box::new(done.facts)),
                },
            });
        }
        if self.cancel.is_cancelled() {
            return TaskOutcome::Cancelled;
        }
        TaskOutcome::Completed {
            last_agent_message: None,
        }
    }
}
