//! Claude Code's `context: fork`: a skill attached with it runs as a sub-agent before the
//! turn's first request. The kernel makes the calls the model would make, through the same
//! tool runner (so the agent limits, hooks and approval policy apply as to the model's):
//! `spawn_agent` with the skill and the user's request as the task, then `wait_agent` on
//! the child. Both calls and their outputs join the turn's history, so the turn's model
//! reads the child's answer; the child is an ordinary sub-agent with its own rollout.

use rein_protocol::{InputPart, Item, ItemId, TaskKind};

use super::step::StepContext;
use super::task::RegularTask;
use super::tool_runner;
use crate::tools::ToolCall;

/// The call id prefix of the calls a forked skill makes.
const FORK_CALL_PREFIX: &str = "skill_fork_";

/// How long the turn waits for the child at most (`wait_agent` clamps it to the
/// configured longest wait; the model can wait again after a timeout).
const WAIT_MS: u64 = 3_600_000;

impl RegularTask {
    /// Run each `context: fork` skill this turn's input attaches as a sub-agent.
    pub(super) async fn fork_skills(&mut self) {
        if self.turn.kind != TaskKind::Regular {
            return;
        }
        let forks = self.forked_skills();
        if forks.is_empty() {
            return;
        }
        let request = self.turn_input_text().unwrap_or_default();
        let step = StepContext::freeze(&self.turn);
        for skill in forks {
            if self.cancel.is_cancelled() {
                return;
            }
            let message = if request.is_empty() {
                skill
            } else {
                format!("{skill}\n\n{request}")
            };
            let spawn = serde_json::json!({ "message": message });
            let Some(spawned) = self.kernel_call(&step, "spawn_agent", spawn).await else {
                continue;
            };
            let Some(agent) = serde_json::from_str::<serde_json::Value>(&spawned)
                .ok()
                .and_then(|v| v["agent_id"].as_str().map(str::to_owned))
            else {
                continue;
            };
            let wait = serde_json::json!({ "targets": [agent], "timeout_ms": WAIT_MS });
            self.kernel_call(&step, "wait_agent", wait).await;
        }
    }

    /// The texts of this turn's input's `context: fork` skills.
    fn forked_skills(&self) -> Vec<String> {
        let start = self.compaction.turn_input_start.min(self.history.len());
        self.history[start..]
            .iter()
            .filter_map(|item| match item.as_ref() {
                Item::UserMessage { content, .. } => Some(content),
                _ => None,
            })
            .flatten()
            .filter_map(|part| match part {
                InputPart::Skill {
                    fork: true, text, ..
                } => Some(text.clone()),
                _ => None,
            })
            .collect()
    }

    /// One call of `tool` made by the kernel, recorded like the model's; its output when it
    /// succeeded.
    async fn kernel_call(
        &mut self,
        step: &StepContext,
        tool: &str,
        arguments: serde_json::Value,
    ) -> Option<String> {
        let call = ToolCall {
            call_id: format!("{FORK_CALL_PREFIX}{}", ItemId::new()),
            name: tool.to_owned(),
            arguments: arguments.to_string(),
        };
        self.record(Item::ToolCall {
            id: ItemId::new(),
            call_id: call.call_id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
        });
        let mut outputs = Vec::with_capacity(1);
        tool_runner::run_calls(
            step,
            self.turn.thread_id,
            vec![call],
            &self.history,
            &self.sink,
            &self.cancel,
            |done| outputs.push(done),
        )
        .await;
        let mut answer = None;
        for done in outputs {
            if done.result.success {
                answer = Some(done.result.output.clone());
            }
            self.record(Item::ToolOutput {
                id: ItemId::new(),
                call_id: done.call.call_id,
                output: done.result.output,
                success: done.result.success,
                facts: Some(Box::new(done.facts)),
            });
        }
        answer
    }
}
