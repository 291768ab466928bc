//! The regular task: the agentic loop of one turn. Drain pending input into history at
//! each step boundary, sample, run the reply's tools, and repeat until the model answers
//! without tool calls and no stop hook vetoes the end.

use std::sync::Arc;

use rein_protocol::{EventMsg, Item, ItemId};
use tokio_util::sync::CancellationToken;

use super::pending::PendingInput;
use super::sink::TurnSink;
use super::step::{self, SampleError, StepContext};
use super::stop_hook::{StopContext, StopDecision, StopHook};
use super::tool_runner;
use super::{TaskOutcome, TurnContext};

pub(crate) struct RegularTask {
    pub turn: TurnContext,
    /// A private copy of history, kept in step with the items this task emits.
    pub history: Vec<Arc<Item>>,
    pub pending: PendingInput,
    pub sink: TurnSink,
    pub cancel: CancellationToken,
    pub stop_hooks: Arc<[Arc<dyn StopHook>]>,
    pub max_stop_hook_vetoes: u32,
}

impl RegularTask {
    fn record(&mut self, item: Item) {
        self.sink
            .emit(EventMsg::ItemCompleted { item: item.clone() });
        self.history.push(Arc::new(item));
    }

    /// Steers become ordinary user messages, between two requests, never inside one.
    fn drain_pending(&mut self) {
        for entry in self.pending.take_all() {
            self.record(Item::UserMessage {
                id: ItemId::new(),
                content: entry.items,
            });
        }
    }

    pub(crate) async fn run(mut self) -> TaskOutcome {
        let mut vetoes = 0;
        let mut last_agent_message = None;
        let mut tokens_used = 0;
        loop {
            self.drain_pending();
            if self.cancel.is_cancelled() {
                return TaskOutcome::Cancelled;
            }
            let mut step = StepContext::freeze(&self.turn);
            let reply = match step::sample(&mut step, &self.history, &self.sink, &self.cancel).await
            {
                Ok(reply) => reply,
                Err(SampleError::Cancelled) => return TaskOutcome::Cancelled,
                Err(SampleError::Model(e)) => {
                    return TaskOutcome::Failed {
                        code: e.code(),
                        message: e.to_string(),
                    }
                }
            };
            tokens_used += reply.usage.total_tokens;
            if reply.text.is_some() {
                last_agent_message.clone_from(&reply.text);
            }
            for item in reply.items {
                self.record(item);
            }
            if !reply.calls.is_empty() {
                let mut outputs = Vec::with_capacity(reply.calls.len());
                tool_runner::run_calls(
                    &step,
                    self.turn.thread_id,
                    reply.calls,
                    &self.sink,
                    &self.cancel,
                    |done| outputs.push(done),
                )
                .await;
                for done in outputs {
                    self.record(Item::ToolOutput {
                        id: ItemId::new(),
                        call_id: done.call.call_id,
                        output: done.result.output,
                        success: done.result.success,
                    });
                }
                if self.cancel.is_cancelled() {
                    return TaskOutcome::Cancelled;
                }
                if self.over_budget(tokens_used) {
                    return TaskOutcome::BudgetExhausted;
                }
                continue;
            }
            // A steer that arrived while the final answer streamed still deserves an answer.
            if !self.pending.is_empty() {
                continue;
            }
            match self.consult_stop_hooks(last_agent_message.as_deref(), vetoes) {
                Some(instruction) => {
                    vetoes += 1;
                    self.record(Item::DeveloperMessage {
                        id: ItemId::new(),
                        text: instruction,
                    });
                }
                None => return TaskOutcome::Completed { last_agent_message },
            }
        }
    }

    fn over_budget(&self, tokens_used: u64) -> bool {
        matches!(self.turn.settings.budget.max_tokens, Some(max) if tokens_used >= max)
    }

    /// The instruction of the first hook that vetoes stopping, unless the veto guard says
    /// this turn has had enough.
    fn consult_stop_hooks(&self, last: Option<&str>, vetoes: u32) -> Option<String> {
        let ctx = StopContext {
            thread_id: self.turn.thread_id,
            turn_id: self.turn.turn_id,
            last_agent_message: last,
            history: &self.history,
            vetoes_so_far: vetoes,
        };
        let instruction = self.stop_hooks.iter().find_map(|h| match h.on_stop(&ctx) {
            StopDecision::Stop => None,
            StopDecision::Continue { instruction } => Some(instruction),
        })?;
        if vetoes >= self.max_stop_hook_vetoes {
            self.sink.emit(EventMsg::Warning {
                message: format!(
                    "a stop hook vetoed the end of this turn {vetoes} times; stopping anyway"
                ),
            });
            return None;
        }
        Some(instruction)
    }
}
