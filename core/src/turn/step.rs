//! One Step: freeze a [`StepContext`], build the request from history, stream the reply
//! (retrying recoverable failures), and turn it into history items.
//!
//! Items of a reply are emitted as completed only once the whole reply has arrived, so a
//! retried request never leaves a duplicate or half item in history; clients still see
//! the text live through deltas.

use std::sync::Arc;

use futures::StreamExt;
use rein_protocol::{
    EventMsg, Item, ItemId, ItemKind, ReasoningEffort, TaskKind, ThreadSettings, TokenUsage,
};
use tokio_util::sync::CancellationToken;

use super::advisor::Advisor;
use super::sink::TurnSink;
use super::{Fallback, TurnContext};
use crate::model::{ModelClient, ModelError, ModelEvent, ModelRequest};
use crate::tools::{ThreadTools, ToolCall, ToolSet};

/// What one sampling request is allowed to see and use. The tools offered to the model
/// are exactly the tools that run its calls: taken from the thread's sources when the
/// step freezes, so a tool that appears later is offered from the next step on.
pub(crate) struct StepContext {
    /// The model name sent in requests (the fallback's after a reroute).
    pub model_name: String,
    pub model: Arc<dyn ModelClient>,
    pub fallback: Option<Fallback>,
    pub tools: Arc<ToolSet>,
    /// The thread's tool state, shared by the calls this step runs.
    pub thread_tools: Arc<ThreadTools>,
    pub settings: Arc<ThreadSettings>,
    /// Sent before the history: the thread's fixed prefix.
    pub prefix: Arc<[Arc<Item>]>,
    /// The thread's skills: a call reading one's `SKILL.md` is recorded as its activation.
    pub skills: Arc<[rein_protocol::SkillFile]>,
    pub parallel_tool_calls: bool,
    pub prompt_cache_key: String,
    /// Stream nothing to clients (a compaction's summary is not an agent message).
    pub silent: bool,
    pub output_schema: Option<Arc<serde_json::Value>>,
    /// A review's step: its tools ignore the session's earlier approvals.
    pub review: bool,
    pub advisor: Option<Arc<Advisor>>,
    pub hooks: Option<super::tool_hooks::HookScope>,
}

impl StepContext {
    pub(crate) fn freeze(turn: &TurnContext) -> Self {
        let tools = match turn.withheld {
            [] => turn.tools.sources.freeze(),
            super::ALL_TOOLS => Arc::new(ToolSet::empty()),
            withheld => Arc::new(turn.tools.sources.freeze().without(withheld)),
        };
        Self {
            model_name: turn.settings.model.clone(),
            model: Arc::clone(&turn.model),
            fallback: turn.fallback.clone(),
            // Only some tools (a memory extraction, a skill that allows only some): only
            // those, at every step of the turn.
            tools: match &turn.allowed_tools {
                Some(allowed) => Arc::new(tools.only(allowed)),
                None => tools,
            },
            thread_tools: Arc::clone(&turn.tools),
            settings: Arc::clone(&turn.settings),
            prefix: Arc::clone(&turn.prefix),
            skills: Arc::clone(&turn.skills),
            parallel_tool_calls: turn.parallel_tool_calls,
            prompt_cache_key: turn.thread_id.to_string(),
            silent: false,
            output_schema: turn.output_schema.clone(),
            review: turn.kind == TaskKind::Review,
            advisor: turn.advisor.clone(),
            hooks: turn.hooks.clone(),
        }
    }

    /// The same model, with no tools and nothing streamed: for summarising history.
    pub(crate) fn for_compaction(&self) -> Self {
        Self {
            model_name: self.model_name.clone(),
            model: Arc::clone(&self.model),
            fallback: self.fallback.clone(),
            tools: Arc::new(ToolSet::empty()),
            thread_tools: Arc::clone(&self.thread_tools),
            settings: Arc::clone(&self.settings),
            prefix: Arc::clone(&self.prefix),
            skills: Arc::default(),
            parallel_tool_calls: false,
            prompt_cache_key: self.prompt_cache_key.clone(),
            silent: true,
            // A summary is free text, whatever the turn's answer must look like.
            output_schema: None,
            review: self.review,
            advisor: None,
            hooks: None,
        }
    }

    pub(crate) fn request(&self, history: &[Arc<Item>]) -> ModelRequest {
        ModelRequest {
            model: self.model_name.clone(),
            instructions: self.settings.instructions.clone(),
            input: self.prefix.iter().chain(history).cloned().collect(),
            tools: self.tools.specs(),
            parallel_tool_calls: self.parallel_tool_calls,
            reasoning_effort: self.settings.reasoning_effort.clone(),
            prompt_cache_key: self.prompt_cache_key.clone(),
            output_schema: self.output_schema.clone(),
        }
    }
}

/// A complete reply: its items in order and the tool calls among them.
#[derive(Default)]
pub(crate) struct Reply {
    pub items: Vec<Item>,
    pub usage: TokenUsage,
    pub calls: Vec<ToolCall>,
    pub text: Option<String>,
}

pub(crate) enum SampleError {
    Cancelled,
    Model(ModelError),
}

/// Stream one request, retrying recoverable failures with backoff; once the retries are
/// spent, try the fallback model once. Each attempt is rebuilt from the same history,
/// which a failed attempt never touches.
pub(crate) async fn sample(
    step: &mut StepContext,
    history: &[Arc<Item>],
    sink: &TurnSink,
    cancel: &CancellationToken,
) -> Result<Reply, SampleError> {
    match sample_with_retries(step, history, sink, cancel).await {
        Err(SampleError::Model(e)) if e.is_retryable() => {
            let Some(fallback) = step.fallback.take() else {
                return Err(SampleError::Model(e));
            };
            sink.emit(EventMsg::ModelRerouted {
                from: step.model_name.clone(),
                to: fallback.model.clone(),
                reason: e.to_string(),
            });
            step.model_name = fallback.model;
            step.model = fallback.client;
            sample_once(step, history, sink, cancel).await
        }
        other => other,
    }
}

async fn sample_with_retries(
    step: &StepContext,
    history: &[Arc<Item>],
    sink: &TurnSink,
    cancel: &CancellationToken,
) -> Result<Reply, SampleError> {
    let policy = step.model.retry_policy();
    let mut attempt = 0;
    loop {
        match sample_once(step, history, sink, cancel).await {
            Err(SampleError::Model(e)) if e.is_retryable() && attempt < policy.max_retries => {
                attempt += 1;
                sink.emit(EventMsg::StreamRetry {
                    attempt,
                    max_attempts: policy.max_retries,
                    message: e.to_string(),
                });
                let delay = policy.delay(attempt, e.retry_after());
                tokio::select! {
                    () = cancel.cancelled() => return Err(SampleError::Cancelled),
                    () = tokio::time::sleep(delay) => {}
                }
            }
            other => return other,
        }
    }
}

/// Accumulates one streamed reply.
#[derive(Default)]
struct ReplyBuilder {
    silent: bool,
    reasoning: Option<(ItemId, String)>,
    /// Encrypted reasoning, one per reasoning item of the reply, in order.
    encrypted: Vec<String>,
    message: Option<(ItemId, String)>,
    calls: Vec<ToolCall>,
}

impl ReplyBuilder {
    /// Append a streamed delta to the open item of `kind`, opening it on the first one.
    fn on_delta(&mut self, kind: ItemKind, delta: String, sink: &TurnSink) {
        let silent = self.silent;
        let slot = match kind {
            ItemKind::AgentMessage => &mut self.message,
            ItemKind::Reasoning => &mut self.reasoning,
        };
        let (id, text) = slot.get_or_insert_with(|| {
            let id = ItemId::new();
            if !silent {
                sink.emit(EventMsg::ItemStarted {
                    item_id: id.clone(),
                    kind,
                });
            }
            (id, String::new())
        });
        text.push_str(&delta);
        if silent {
            return;
        }
        let item_id = id.clone();
        let bytes = delta.len();
        let msg = match kind {
            ItemKind::AgentMessage => EventMsg::AgentMessageDelta { item_id, delta },
            ItemKind::Reasoning => EventMsg::ReasoningDelta { item_id, delta },
        };
        sink.emit_delta(msg, bytes);
    }

    fn finish(self, usage: TokenUsage) -> Reply {
        let mut items = Vec::new();
        // The streamed summary belongs to the first reasoning item; any further ones (rare)
        // are kept for their encrypted content alone.
        let mut encrypted = self.encrypted.into_iter();
        if let Some((id, text)) = self.reasoning {
            items.push(Item::Reasoning {
                id,
                text,
                encrypted_content: encrypted.next(),
            });
        }
        items.extend(encrypted.map(|blob| Item::Reasoning {
            id: ItemId::new(),
            text: String::new(),
            encrypted_content: Some(blob),
        }));
        let text = self.message.as_ref().map(|(_, t)| t.clone());
        if let Some((id, text)) = self.message {
            items.push(Item::AgentMessage {
                id,
                text,
                partial: false,
            });
        }
        for call in &self.calls {
            items.push(Item::ToolCall {
                id: ItemId::new(),
                call_id: call.call_id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
            });
        }
        Reply {
            items,
            usage,
            calls: self.calls,
            text,
        }
    }
}

async fn sample_once(
    step: &StepContext,
    history: &[Arc<Item>],
    sink: &TurnSink,
    cancel: &CancellationToken,
) -> Result<Reply, SampleError> {
    let mut stream = step.model.stream(step.request(history));
    let mut reply = ReplyBuilder {
        silent: step.silent,
        ..ReplyBuilder::default()
    };
    // Thinking off means off: reasoning a server streams anyway never becomes an event
    // or a history item (so no client, rollout or later request sees it).
    let thinking_off = step
        .settings
        .reasoning_effort
        .as_ref()
        .is_some_and(ReasoningEffort::is_off);
    let mut dropped = 0usize;
    loop {
        let next = tokio::select! {
            // Dropping the stream on cancel closes the request at once.
            () = cancel.cancelled() => return Err(SampleError::Cancelled),
            // Read on only once the loop has taken in what was streamed so far.
            next = async {
                sink.room().await;
                stream.next().await
            } => next,
        };
        match next {
            Some(Ok(ModelEvent::TextDelta(d))) => reply.on_delta(ItemKind::AgentMessage, d, sink),
            Some(Ok(ModelEvent::ReasoningDelta(_) | ModelEvent::ReasoningEncrypted(_)))
                if thinking_off =>
            {
                dropped += 1;
            }
            Some(Ok(ModelEvent::ReasoningDelta(d))) => reply.on_delta(ItemKind::Reasoning, d, sink),
            Some(Ok(ModelEvent::ReasoningEncrypted(blob))) => reply.encrypted.push(blob),
            Some(Ok(ModelEvent::ToolCall {
                call_id,
                name,
                arguments,
            })) => reply.calls.push(ToolCall {
                call_id,
                name,
                arguments,
            }),
            Some(Ok(ModelEvent::Completed { usage })) => {
                if dropped > 0 {
                    tracing::info!(
                        model = %step.model_name,
                        dropped,
                        "reasoning effort is none: dropped the reasoning the server streamed"
                    );
                }
                sink.usage(usage);
                return Ok(reply.finish(usage));
            }
            Some(Err(e)) => return Err(SampleError::Model(e)),
            None => return Err(SampleError::Model(ModelError::StreamCut)),
        }
    }
}
