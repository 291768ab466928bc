//! The regular task: the agentic loop of one turn. Drain pending input into history at
//! each step boundary, sample, run the reply's tools, and repeat until the model answers
//! without tool calls and no stop hook vetoes the end.

use std::sync::Arc;

use rein_protocol::{CompactionTrigger, EventMsg, Item, ItemId};
use tokio_util::sync::CancellationToken;

use super::compact::{self, Compaction};
use super::pending::PendingInput;
use super::sink::TurnSink;
use super::step::{self, SampleError, StepContext};
use super::stop_hook::{StopContext, StopDecision, StopHook};
use super::tokens::{estimate, estimate_item};
use super::tool_hooks::PromptDecision;
use super::tool_runner;
use super::{TaskOutcome, TurnContext};
use crate::model::fingerprint::InputHashes;
use crate::model::ModelError;
use crate::tools::ToolCall;

/// When and how a regular turn compacts on its own.
pub(crate) struct AutoCompaction {
    /// Compact before a step once the context passes this many tokens.
    pub limit: Option<u64>,
    pub kept_user_tokens: u64,
    /// The context size when the turn started (the last usage report or compaction).
    pub context_tokens: u64,
    /// Where this turn's new input begins in history: a compaction before the turn's first
    /// request keeps it after the summary, where the model reads it last.
    pub turn_input_start: usize,
    /// Compact and retry once when the model says the context window is exceeded.
    pub recover_overflow: bool,
}

impl AutoCompaction {
    /// Never compact: for a task whose history is not the thread's (a review starts from
    /// a clean context, and a compaction's positions would point into the wrong history).
    pub fn off() -> Self {
        Self {
            limit: None,
            kept_user_tokens: 0,
            context_tokens: 0,
            turn_input_start: 0,
            recover_overflow: false,
        }
    }
}

pub(crate) struct RegularTask {
    pub turn: TurnContext,
    pub compaction: AutoCompaction,
    /// A private copy of history, kept in step with the items this task emits.
    pub history: Vec<Arc<Item>>,
    pub pending: PendingInput,
    pub sink: TurnSink,
    pub cancel: CancellationToken,
    pub stop_hooks: Arc<[Arc<dyn StopHook>]>,
    pub max_stop_hook_vetoes: u32,
}

impl RegularTask {
    pub(super) fn record(&mut self, item: Item) {
        self.compaction.context_tokens += estimate_item(&item);
        self.sink
            .emit(EventMsg::ItemCompleted { item: item.clone() });
        self.history.push(Arc::new(item));
    }

    /// Steers become ordinary user messages, between two requests, never inside one.
    fn drain_pending(&mut self) {
        let entries = self.pending.take_all();
        let mail = super::pending::mail_ids(&entries);
        if !mail.is_empty() {
            self.sink.emit(EventMsg::MailTaken {
                submission_ids: mail,
            });
        }
        for entry in entries {
            self.record(Item::UserMessage {
                id: ItemId::new(),
                content: entry.items,
            });
        }
    }

    async fn compact(
        &mut self,
        step: &StepContext,
        trigger: CompactionTrigger,
    ) -> Result<(), SampleError> {
        let plan = Compaction {
            trigger,
            tokens_before: self.compaction.context_tokens,
            kept_user_tokens: self.compaction.kept_user_tokens,
            tail_from: self.compaction.turn_input_start,
        };
        let Some(history) =
            compact::compact(step, &self.history, plan, &self.sink, &self.cancel).await?
        else {
            return Ok(());
        };
        self.history = history;
        self.compaction.context_tokens = estimate(&self.history);
        // Everything now before the turn's input is summary; later compactions summarise it all.
        self.compaction.turn_input_start = self.history.len();
        Ok(())
    }

    fn over_compaction_limit(&self) -> bool {
        matches!(self.compaction.limit, Some(limit) if self.compaction.context_tokens > limit)
    }

    /// One sampling request, compacting first when the context is over the limit. The
    /// request's fingerprint is recorded before it is sent (once, whatever the retries).
    async fn sample(
        &mut self,
        step: &mut StepContext,
        hashes: &mut InputHashes,
    ) -> Result<step::Reply, SampleError> {
        if self.over_compaction_limit() {
            self.compact(step, CompactionTrigger::Auto).await?;
        }
        self.sink.emit(EventMsg::StepRequested {
            fingerprint: hashes.fingerprint(&step.request(&self.history)),
        });
        step::sample(step, &self.history, &self.sink, &self.cancel).await
    }

    pub(crate) async fn run(mut self) -> TaskOutcome {
        let mut vetoes = 0;
        let mut last_agent_message = None;
        let mut tokens_used = 0;
        let mut compacted_after_overflow = !self.compaction.recover_overflow;
        let mut hashes = InputHashes::default();
        self.start_session().await;
        if let Some(outcome) = self.submit_prompt().await {
            return outcome;
        }
        self.recall_memories().await;
        self.fork_skills().await;
        loop {
            self.drain_pending();
            if self.cancel.is_cancelled() {
                return TaskOutcome::Cancelled;
            }
            let mut step = StepContext::freeze(&self.turn);
            if let Err(refused) = self.turn.vision.route(&mut step, &self.history) {
                return refused;
            }
            let reply = match self.sample(&mut step, &mut hashes).await {
                Ok(reply) => {
                    // From the first reply on, the turn's input is part of the work to summarise.
                    self.compaction.turn_input_start = self.history.len();
                    reply
                }
                Err(SampleError::Cancelled) => return TaskOutcome::Cancelled,
                // Once per turn: compact, then take the step again.
                Err(SampleError::Model(ModelError::ContextWindowExceeded(_)))
                    if !compacted_after_overflow =>
                {
                    compacted_after_overflow = true;
                    match self
                        .compact(&step, CompactionTrigger::ContextExceeded)
                        .await
                    {
                        Ok(()) => continue,
                        Err(SampleError::Cancelled) => return TaskOutcome::Cancelled,
                        Err(SampleError::Model(e)) => return failed(&e),
                    }
                }
                Err(SampleError::Model(e)) => return failed(&e),
            };
            tokens_used += reply.usage.total_tokens;
            let reported_context = reply.usage.input_tokens + reply.usage.output_tokens;
            if reply.text.is_some() {
                last_agent_message.clone_from(&reply.text);
            }
            for item in reply.items {
                self.record(item);
            }
            // The provider's count of what it saw beats our estimate of it.
            if reported_context > 0 {
                self.compaction.context_tokens = reported_context;
            }
            if !reply.calls.is_empty() {
                self.run_calls(&step, reply.calls).await;
                if self.cancel.is_cancelled() {
                    return TaskOutcome::Cancelled;
                }
                if self.over_budget(tokens_used) {
                    return TaskOutcome::BudgetExhausted;
                }
                continue;
            }
            // A steer that arrived while the final answer streamed still deserves an answer;
            // mail does not revive a turn that answered (it starts the next one).
            if self.pending.has_steers() {
                continue;
            }
            if !self
                .stop_vetoed(last_agent_message.as_deref(), vetoes)
                .await
            {
                return TaskOutcome::Completed { last_agent_message };
            }
            vetoes += 1;
        }
    }

    /// Run the step's calls and record their outputs, in the order the model made them.
    async fn run_calls(&mut self, step: &StepContext, calls: Vec<ToolCall>) {
        let mut outputs = Vec::with_capacity(calls.len());
        tool_runner::run_calls(
            step,
            self.turn.thread_id,
            calls,
            &self.history,
            &self.sink,
            &self.cancel,
            |done| outputs.push(done),
        )
        .await;
        let mut needed = Vec::new();
        for done in outputs {
            if done.result.success {
                needed.extend(super::skill_servers::needed(step, &done.facts.action));
            }
            self.record(Item::ToolOutput {
                id: ItemId::new(),
                call_id: done.call.call_id,
                output: done.result.output,
                success: done.result.success,
                facts: Some(Box::new(done.facts)),
            });
        }
        // Skills the model opened in this step may need their MCP servers for the next.
        self.start_skill_servers(needed).await;
    }

    /// Whether a stop hook (the kernel's, then the user's) sends the turn on instead of
    /// letting it end; its instruction is then recorded for the next step.
    async fn stop_vetoed(&mut self, last_agent_message: Option<&str>, vetoes: u32) -> bool {
        let mut instruction = self.consult_stop_hooks(last_agent_message, vetoes);
        if instruction.is_none() {
            instruction = self
                .consult_user_stop_hooks(last_agent_message, vetoes)
                .await;
        }
        let Some(instruction) = instruction else {
            return false;
        };
        self.record(Item::DeveloperMessage {
            id: ItemId::new(),
            text: instruction,
        });
        true
    }

    fn over_budget(&self, tokens_used: u64) -> bool {
        matches!(self.turn.settings.budget.max_tokens, Some(max) if tokens_used >= max)
    }

    /// Run the user's `SessionStart` (a sub-agent's `SubagentStart`) hooks if this is the
    /// thread's first turn in this process; what they say is context for the model.
    async fn start_session(&mut self) {
        let Some(scope) = self.turn.hooks.clone() else {
            return;
        };
        for text in scope.session_start(&self.sink, &self.cancel).await {
            self.record(Item::DeveloperMessage {
                id: ItemId::new(),
                text,
            });
        }
    }

    /// Run the user's `UserPromptSubmit` hooks on this turn's input (none for a recovered
    /// turn): `Some` ends the turn before any request. The input stays in history (it is
    /// append-only); a note after it tells the model not to act on it.
    async fn submit_prompt(&mut self) -> Option<TaskOutcome> {
        let scope = self.turn.hooks.clone()?;
        if self.turn.kind != rein_protocol::TaskKind::Regular {
            return None;
        }
        let prompt = self.turn_input_text()?;
        match scope
            .user_prompt_submit(&prompt, &self.sink, &self.cancel)
            .await
        {
            PromptDecision::Proceed { context } => {
                for text in context {
                    self.record(Item::DeveloperMessage {
                        id: ItemId::new(),
                        text,
                    });
                }
                None
            }
            PromptDecision::Block(reason) => {
                self.sink.emit(EventMsg::Warning {
                    message: format!("the prompt was blocked by a UserPromptSubmit hook: {reason}"),
                });
                self.record(Item::DeveloperMessage {
                    id: ItemId::new(),
                    text: format!(
                        "The user's last message was blocked by a hook ({reason}); do not act on it."
                    ),
                });
                Some(TaskOutcome::Completed {
                    last_agent_message: None,
                })
            }
        }
    }

    /// The text of this turn's user input; `None` when it has none.
    pub(super) fn turn_input_text(&self) -> Option<String> {
        let start = self.compaction.turn_input_start.min(self.history.len());
        let prompt: Vec<&str> = self.history[start..]
            .iter()
            .filter_map(|item| match item.as_ref() {
                Item::UserMessage { content, .. } => Some(content),
                _ => None,
            })
            .flatten()
            .filter_map(|part| match part {
                rein_protocol::InputPart::Text { text } => Some(text.as_str()),
                rein_protocol::InputPart::Image { .. } | rein_protocol::InputPart::Skill { .. } => {
                    None
                }
            })
            .collect();
        (!prompt.is_empty()).then(|| prompt.join("\n"))
    }

    /// The memory step: the memories in scope that match this turn's input, as one
    /// delimited developer message before the first request. A store that fails is a
    /// warning, never a failed turn.
    async fn recall_memories(&mut self) {
        let Some(memory) = self.turn.memory.clone() else {
            return;
        };
        if self.turn.kind != rein_protocol::TaskKind::Regular {
            return;
        }
        let Some(text) = self.turn_input_text() else {
            return;
        };
        let cwd = self.turn.settings.cwd.clone();
        match crate::memory::recall::recall(&memory, self.turn.thread_id, &cwd, &text).await {
            Ok(found) => {
                if let Some(text) = crate::memory::recall::render(&found) {
                    self.record(Item::DeveloperMessage {
                        id: ItemId::new(),
                        text,
                    });
                }
            }
            Err(e) => self.sink.emit(EventMsg::Warning {
                message: format!("memories were not recalled: {e}"),
            }),
        }
    }

    /// The reasons of the user's `Stop` hooks that block the end of the turn, unless the
    /// same guard as the kernel's stop hooks says this turn has had enough.
    async fn consult_user_stop_hooks(&self, last: Option<&str>, vetoes: u32) -> Option<String> {
        let scope = self.turn.hooks.as_ref()?;
        // A review's end is not the user's turn ending.
        if self.turn.kind != rein_protocol::TaskKind::Regular {
            return None;
        }
        let reason = scope.stop(last, vetoes, &self.sink, &self.cancel).await?;
        if vetoes >= self.max_stop_hook_vetoes {
            self.sink.emit(EventMsg::Warning {
                message: format!("a Stop hook continued this turn {vetoes} times; stopping anyway"),
            });
            return None;
        }
        Some(format!("A Stop hook asks you to continue: {reason}"))
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

fn failed(e: &ModelError) -> TaskOutcome {
    TaskOutcome::Failed {
        code: e.code(),
        message: e.to_string(),
    }
}
