//! The evaluator verifier: a criterion checked by a second model, not believed from the
//! first. Its request is built like the advisor's (own instructions, no tools, one user
//! message, a strict structured-output schema) and its client comes from the same profile
//! machinery (`[goals] evaluator_profile`, resolved by the configuration into the model
//! catalog). The answer must be exactly `{"pass": bool, "reason": "..."}`; anything else
//! (no JSON, a missing or extra field, a failed request, no answer in time) is a failed
//! check with the reason, never a pass: unlike the advisor, an evaluator fails closed.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use rein_protocol::{InputPart, Item, ItemId, VerifierOutcome};
use serde::Deserialize;

use crate::model::{ModelClient, ModelRequest};
use crate::turn::advisor::collect_text;

/// How much of the thread's transcript the evaluator reads (its tail), in characters.
const EVIDENCE_CHARS: usize = 8_000;

/// What the evaluator's system prompt tells it.
const INSTRUCTIONS: &str = "You check one acceptance criterion of a coding agent's goal. \
The agent says the goal is complete; you judge from the evidence given (the objective, \
the criterion, the question, the agent's own report and the end of its transcript) whether \
the criterion is met. Do not take the agent's word for it: pass only what the evidence \
shows. Answer with one JSON object only: {\"pass\": true | false, \"reason\": \"...\"}; \
the reason of a failure is shown to the agent, so say what is missing.";

/// The goal's evaluator, resolved by the loop when the model reports a goal complete.
pub struct Evaluator {
    pub model_name: String,
    /// The evaluator's client, or why there is none (each evaluator check then fails).
    pub client: Result<Arc<dyn ModelClient>, String>,
    pub timeout: Duration,
}

impl fmt::Debug for Evaluator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Evaluator")
            .field("model_name", &self.model_name)
            .field("client", &self.client.as_ref().map(|_| "…"))
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// What an evaluator is shown besides its question.
#[derive(Clone, Debug, Default)]
pub struct Evidence {
    pub objective: String,
    /// The model's note on `update_goal {status: complete}`.
    pub report: Option<String>,
    /// The end of the thread's transcript ([`transcript_tail`]).
    pub transcript: String,
}

/// The verdict as asked for: nothing more, nothing less.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Verdict {
    pass: bool,
    reason: String,
}

fn verdict_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "pass": { "type": "boolean" },
            "reason": { "type": "string" }
        },
        "required": ["pass", "reason"],
        "additionalProperties": false
    })
}

impl Evaluator {
    /// Ask the evaluator whether `criterion` is met; the outcome says why either way.
    pub async fn check(
        &self,
        criterion: &str,
        prompt: &str,
        evidence: &Evidence,
    ) -> VerifierOutcome {
        let outcome = |passed, output: String| VerifierOutcome {
            criterion: criterion.to_owned(),
            passed,
            exit_code: None,
            output,
        };
        let client = match &self.client {
            Ok(client) => Arc::clone(client),
            Err(why) => return outcome(false, format!("the evaluator has no model: {why}")),
        };
        let request = self.request(criterion, prompt, evidence);
        let text = match tokio::time::timeout(self.timeout, collect_text(client, request)).await {
            Err(_) => {
                let ms = self.timeout.as_millis();
                return outcome(
                    false,
                    format!("the evaluator gave no answer within {ms} ms"),
                );
            }
            Ok(Err(message)) => {
                return outcome(false, format!("the evaluator's request failed: {message}"))
            }
            Ok(Ok(text)) => text,
        };
        match parse_verdict(&text) {
            Ok(Verdict { pass, reason }) => outcome(
                pass,
                format!("the evaluator ({}) says: {reason}", self.model_name),
            ),
            Err(why) => outcome(false, why),
        }
    }

    fn request(&self, criterion: &str, prompt: &str, evidence: &Evidence) -> ModelRequest {
        let report = evidence.report.as_deref().unwrap_or("(no note)");
        let text = format!(
            "The goal's objective:\n{}\n\nThe criterion: {criterion}\n\nThe question to \
             answer: {prompt}\n\nThe agent's report when it said the goal is complete:\n\
             {report}\n\nThe end of the agent's transcript:\n{}",
            evidence.objective, evidence.transcript
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
            reasoning_effort: None,
            prompt_cache_key: "rein-goal-evaluator".into(),
            output_schema: Some(Arc::new(verdict_schema())),
        }
    }
}

/// The verdict in `text`, or why it is none (a clear reason, for the model to read).
fn parse_verdict(text: &str) -> Result<Verdict, String> {
    serde_json::from_str::<Verdict>(text.trim()).map_err(|e| {
        let mut preview: String = text.chars().take(200).collect();
        if preview.len() < text.len() {
            preview.push('…');
        }
        format!(
            "the evaluator's answer is not the verdict asked for ({{\"pass\": bool, \
             \"reason\": string}}): {e}; it said: {preview}"
        )
    })
}

/// The end of a transcript, as plain lines (`user:`, `assistant:`, `tool call`, `tool
/// output`), at most `EVIDENCE_CHARS` characters: the evaluator's evidence.
pub fn transcript_tail(history: &[Arc<Item>]) -> String {
    let mut lines: Vec<String> = Vec::new();
    let mut size = 0;
    for item in history.iter().rev() {
        let line = match item.as_ref() {
            Item::UserMessage { .. } => {
                format!("user: {}", item.message_text().unwrap_or_default())
            }
            Item::AgentMessage { text, .. } => format!("assistant: {text}"),
            Item::ToolCall {
                name, arguments, ..
            } => format!("tool call {name} {arguments}"),
            Item::ToolOutput {
                output, success, ..
            } => format!("tool output (success: {success}): {output}"),
            Item::Reasoning { .. } | Item::DeveloperMessage { .. } | Item::Interruption { .. } => {
                continue
            }
        };
        size += line.chars().count() + 1;
        lines.push(line);
        if size >= EVIDENCE_CHARS {
            break;
        }
    }
    lines.reverse();
    let text = lines.join("\n");
    let count = text.chars().count();
    if count <= EVIDENCE_CHARS {
        return text;
    }
    text.chars().skip(count - EVIDENCE_CHARS).collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_verdict_is_one() {
        let ok = parse_verdict(" {\"pass\": true, \"reason\": \"tests pass\"}\n").unwrap();
        assert!(ok.pass);
        assert_eq!(ok.reason, "tests pass");
        for bad in [
            "yes, it passes",
            "{\"pass\": true}",
            "{\"reason\": \"fine\"}",
            "{\"pass\": \"true\", \"reason\": \"fine\"}",
            "{\"pass\": true, \"reason\": \"fine\", \"score\": 1}",
        ] {
            let why = parse_verdict(bad).err().unwrap();
            assert!(
                why.starts_with("the evaluator's answer is not the verdict"),
                "{why}"
            );
        }
        assert!(parse_verdict("{\"pass\": true}")
            .err()
            .unwrap()
            .contains("missing field `reason`"));
    }

    #[test]
    fn the_transcript_tail_keeps_the_last_items() {
        let history: Vec<Arc<Item>> = (0..2000)
            .map(|n| {
                Arc::new(Item::AgentMessage {
                    id: ItemId::new(),
                    text: format!("message {n}"),
                    partial: false,
                })
            })
            .collect();
        let tail = transcript_tail(&history);
        assert!(tail.chars().count() <= EVIDENCE_CHARS);
        assert!(tail.ends_with("assistant: message 1999"), "{tail}");
        assert!(!tail.contains("message 10\n"));
    }
}
