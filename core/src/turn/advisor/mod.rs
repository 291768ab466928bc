//! The advisor: between the model proposing a batch of tool calls and the policy engine
//! judging them, a second request (no tools, strict JSON answer) reviews the batch. A
//! rejection declines every call of the batch with the advisor's reason, which the model
//! reads; an approval lets the batch go on to the policy engine exactly as without an
//! advisor, so the advisor can stop a call but never let one through that the policy
//! would stop.
//!
//! Fail-open: an advisor that errors, times out or answers something other than the JSON
//! asked for is recorded (a warning) and the batch goes on; a broken advisor never stalls
//! a thread.

mod risk;

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use rein_protocol::{
    AdvisorFailure, AdvisorRisk, AdvisorVerdict, EventMsg, InputPart, Item, ItemId, ReviewedCall,
    ThreadSettings, ToolAction,
};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::sink::TurnSink;
use crate::model::{ModelClient, ModelEvent, ModelRequest};
use crate::tools::ToolCall;
use rein_protocol::advisor::AdvisorMode;

/// The advisor of one turn, resolved when the turn starts.
pub(crate) struct Advisor {
    pub mode: AdvisorMode,
    pub model_name: String,
    /// The advisor's client, or why there is none (a fail-open at each review).
    pub client: Result<Arc<dyn ModelClient>, String>,
    pub timeout: Duration,
}

/// What the batch does after the review.
pub(crate) enum Review {
    /// On to the policy engine (approved, approved with warnings, failed open, or not
    /// reviewed at all).
    Proceed,
    /// Decline every call with this reason.
    Reject(String),
    /// The turn was cancelled while the advisor thought.
    Cancelled,
}

/// What the advisor's system prompt tells it.
const INSTRUCTIONS: &str = "You review the tool calls a coding agent is about to make, \
before they run. Judge whether the batch is safe and serves the user's request. Answer \
with one JSON object only: {\"decision\": \"approve\" | \"approve_with_warnings\" | \
\"reject\", \"reason\": \"...\"}. Reject what is destructive, irreversible, exfiltrates \
data or plainly goes beyond the request; approve with warnings what is acceptable but \
deserves the user's attention; the reason of a rejection is shown to the agent, so say \
what it should do instead.";

/// The answer as asked for (structured output): nothing more, nothing less.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer {
    decision: Decision,
    reason: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum Decision {
    Approve,
    ApproveWithWarnings,
    Reject,
}

fn answer_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "decision": {
                "type": "string",
                "enum": ["approve", "approve_with_warnings", "reject"]
            },
            "reason": { "type": "string" }
        },
        "required": ["decision", "reason"],
        "additionalProperties": false
    })
}

impl Advisor {
    /// Review `batch` (each call with the action its tool described) if the mode asks for
    /// it. Emits `AdvisorReviewStarted` / `AdvisorReviewCompleted` around the request.
    pub(crate) async fn review(
        &self,
        batch: &[(&ToolCall, &ToolAction)],
        settings: &ThreadSettings,
        history: &[Arc<Item>],
        sink: &TurnSink,
        cancel: &CancellationToken,
    ) -> Review {
        let calls: Vec<ReviewedCall> = batch
            .iter()
            .map(|(call, action)| ReviewedCall {
                call_id: call.call_id.clone(),
                tool: call.name.clone(),
                action: (*action).clone(),
                risk: risk::high_risk(action, settings),
            })
            .collect();
        let risk = if calls.iter().any(|c| c.risk.is_some()) {
            AdvisorRisk::High
        } else {
            AdvisorRisk::Low
        };
        match self.mode {
            AdvisorMode::Off => return Review::Proceed,
            AdvisorMode::Lightweight if risk == AdvisorRisk::Low => return Review::Proceed,
            AdvisorMode::Lightweight | AdvisorMode::Full => {}
        }
        let review_id = format!("review-{}", ItemId::new());
        let request = self.request(&calls, settings, history);
        sink.emit(EventMsg::AdvisorReviewStarted {
            review_id: review_id.clone(),
            cwd: settings.cwd.clone(),
            risk,
            calls,
        });
        let started = Instant::now();
        let verdict = tokio::select! {
            () = cancel.cancelled() => return Review::Cancelled,
            verdict = self.ask(request) => verdict,
        };
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        if let AdvisorVerdict::FailedOpen { message, .. } = &verdict {
            sink.emit(EventMsg::Warning {
                message: format!("the advisor failed ({message}); the tool calls go on"),
            });
        }
        let review = match &verdict {
            AdvisorVerdict::Reject { reason } => Review::Reject(format!(
                "the advisor rejected this batch of tool calls, so none of them ran: {reason}"
            )),
            _ => Review::Proceed,
        };
        sink.emit(EventMsg::AdvisorReviewCompleted {
            review_id,
            verdict,
            duration_ms,
        });
        review
    }

    /// The advisor's request: its own instructions, no tools, one message describing the
    /// user's request and the batch.
    fn request(
        &self,
        calls: &[ReviewedCall],
        settings: &ThreadSettings,
        history: &[Arc<Item>],
    ) -> ModelRequest {
        let task = history
            .iter()
            .rev()
            .find_map(|item| match item.as_ref() {
                Item::UserMessage { .. } => item.message_text(),
                _ => None,
            })
            .unwrap_or_default();
        let batch = serde_json::to_string_pretty(calls).unwrap_or_default();
        let text = format!(
            "The user's latest request:\n{task}\n\nWorking directory: {}\nSandbox: {:?}, \
             approvals: {:?}\n\nThe tool calls to review (in order):\n{batch}",
            settings.cwd.display(),
            settings.sandbox_policy,
            settings.approval_policy,
        );
        ModelRequest {
            model: self.model_name.clone(),
            instructions: INSTRUCTIONS.into(),
            input: vec![Arc::new(Item::UserMessage {
                id: ItemId::new(),
                content: vec![InputPart::Text { text }],
            })],
            tools: Arc::from(Vec::new()),
            parallel_tool_calls: false,
            reasoning_effort: settings.reasoning_effort.clone(),
            prompt_cache_key: "rein-advisor".into(),
            output_schema: Some(Arc::new(answer_schema())),
        }
    }

    /// Send the request and read the verdict, failing open on anything but a good answer.
    async fn ask(&self, request: ModelRequest) -> AdvisorVerdict {
        let failed = |failure, message: String| AdvisorVerdict::FailedOpen { failure, message };
        let client = match &self.client {
            Ok(client) => Arc::clone(client),
            Err(why) => return failed(AdvisorFailure::Error, why.clone()),
        };
        let text = match tokio::time::timeout(self.timeout, collect_text(client, request)).await {
            Err(_) => {
                return failed(
                    AdvisorFailure::Timeout,
                    format!("no answer within {} ms", self.timeout.as_millis()),
                )
            }
            Ok(Err(message)) => return failed(AdvisorFailure::Error, message),
            Ok(Ok(text)) => text,
        };
        match serde_json::from_str::<Answer>(text.trim()) {
            Ok(Answer { decision, reason }) => match decision {
                Decision::Approve => AdvisorVerdict::Approve { reason },
                Decision::ApproveWithWarnings => AdvisorVerdict::ApproveWithWarnings { reason },
                Decision::Reject => AdvisorVerdict::Reject { reason },
            },
            Err(e) => failed(
                AdvisorFailure::Garbage,
                format!(
                    "its answer is not the JSON object asked for ({e}): {}",
                    preview(&text)
                ),
            ),
        }
    }
}

/// The text of one reply; the advisor is offered no tools, so calls are ignored.
pub(crate) async fn collect_text(
    client: Arc<dyn ModelClient>,
    request: ModelRequest,
) -> Result<String, String> {
    let mut stream = client.stream(request);
    let mut text = String::new();
    while let Some(event) = stream.next().await {
        match event {
            Ok(ModelEvent::TextDelta(delta)) => text.push_str(&delta),
            Ok(ModelEvent::Completed { .. }) => return Ok(text),
            Ok(_) => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    Err("the advisor's reply ended before it completed".into())
}

/// At most 200 characters of `text`, for a message.
fn preview(text: &str) -> String {
    let mut cut: String = text.chars().take(200).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    cut
}
