//! The Chat Completions API (`POST {base_url}/chat/completions`, streamed), which Ollama,
//! vLLM, llama.cpp's server, LM Studio and OpenRouter speak: the client, and how streamed
//! chunks — including `tool_calls` split over many deltas — become [`ModelEvent`]s. The
//! request body is built in `chat_request.rs`.

use std::collections::{BTreeMap, VecDeque};

use rein_protocol::TokenUsage;
use serde::Deserialize;

pub use super::chat_request::request_body;
use super::client::{HttpModelClient, WireFormat};
use super::errors::{error_for_stream_failure, malformed, ApiErrorBody};
use super::sse::SseEvent;
use super::stream::WireDecoder;
use super::Endpoint;
use rein_core::model::{ModelError, ModelEvent, ModelRequest};

/// The Chat Completions wire format.
#[derive(Clone, Copy, Debug)]
pub struct Chat;

impl WireFormat for Chat {
    const PATH: &'static str = "chat/completions";
    type Decoder = ChatDecoder;

    fn request_body(request: &ModelRequest, endpoint: &Endpoint) -> Result<Vec<u8>, ModelError> {
        request_body(request, endpoint.thinking_off)
    }

    fn decoder() -> ChatDecoder {
        ChatDecoder::default()
    }
}

/// A client for one Chat Completions server.
pub type ChatClient = HttpModelClient<Chat>;

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<ApiErrorBody>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    /// vLLM, DeepSeek and llama.cpp name it `reasoning_content`; Ollama and OpenRouter
    /// `reasoning`.
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    tool_calls: Vec<CallDelta>,
}

#[derive(Deserialize)]
struct CallDelta {
    #[serde(default)]
    index: Option<u32>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    total_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
    #[serde(default)]
    completion_tokens_details: Option<CompletionDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: u64,
}

#[derive(Deserialize)]
struct CompletionDetails {
    #[serde(default)]
    reasoning_tokens: u64,
}

impl From<Usage> for TokenUsage {
    fn from(u: Usage) -> Self {
        TokenUsage {
            input_tokens: u.prompt_tokens,
            cached_input_tokens: u.prompt_tokens_details.map_or(0, |d| d.cached_tokens),
            output_tokens: u.completion_tokens,
            reasoning_output_tokens: u
                .completion_tokens_details
                .map_or(0, |d| d.reasoning_tokens),
            total_tokens: u.total_tokens,
        }
    }
}

#[derive(Debug, Default)]
struct PartialCall {
    id: Option<String>,
    name: String,
    arguments: String,
}

/// Decodes a Chat Completions chunk stream, assembling tool calls by their `index`.
#[derive(Debug, Default)]
pub struct ChatDecoder {
    calls: BTreeMap<u32, PartialCall>,
    usage: TokenUsage,
    finished: bool,
}

impl ChatDecoder {
    fn add_call_delta(&mut self, position: usize, delta: CallDelta) {
        let index = match delta.index {
            Some(i) => i,
            // Servers that omit `index` send each call whole; a new id starts a new call.
            None => {
                let last = self.calls.keys().next_back().copied();
                let same_call = match (&delta.id, last.and_then(|k| self.calls.get(&k))) {
                    (Some(id), Some(call)) => call.id.as_deref() == Some(id),
                    (None, Some(_)) => true,
                    (_, None) => false,
                };
                match last {
                    Some(k) if same_call => k,
                    Some(k) => k + 1,
                    None => u32::try_from(position).unwrap_or(u32::MAX),
                }
            }
        };
        let call = self.calls.entry(index).or_default();
        if let Some(id) = delta.id.filter(|id| !id.is_empty()) {
            call.id = Some(id);
        }
        if let Some(f) = delta.function {
            if let Some(name) = f.name {
                call.name.push_str(&name);
            }
            if let Some(args) = f.arguments {
                call.arguments.push_str(&args);
            }
        }
    }

    fn flush_calls(&mut self, out: &mut VecDeque<ModelEvent>) {
        for (index, call) in std::mem::take(&mut self.calls) {
            out.push_back(ModelEvent::ToolCall {
                call_id: call.id.unwrap_or_else(|| format!("call_{index}")),
                name: call.name,
                arguments: call.arguments,
            });
        }
    }

    fn complete(&mut self, out: &mut VecDeque<ModelEvent>) {
        self.flush_calls(out);
        out.push_back(ModelEvent::Completed { usage: self.usage });
    }
}

impl WireDecoder for ChatDecoder {
    fn on_event(
        &mut self,
        event: &SseEvent,
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<(), ModelError> {
        if event.data.trim() == "[DONE]" {
            self.complete(out);
            return Ok(());
        }
        let chunk: Chunk =
            serde_json::from_str(&event.data).map_err(|e| malformed(format_args!("{e}")))?;
        if let Some(error) = chunk.error {
            return Err(error_for_stream_failure(&error));
        }
        if let Some(usage) = chunk.usage {
            self.usage = usage.into();
        }
        for choice in chunk.choices {
            if let Some(delta) = choice.delta {
                if let Some(r) = delta.reasoning_content.or(delta.reasoning) {
                    if !r.is_empty() {
                        out.push_back(ModelEvent::ReasoningDelta(r));
                    }
                }
                if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                    out.push_back(ModelEvent::TextDelta(text));
                }
                for (position, call) in delta.tool_calls.into_iter().enumerate() {
                    self.add_call_delta(position, call);
                }
            }
            if choice.finish_reason.is_some() {
                self.finished = true;
                self.flush_calls(out);
            }
        }
        Ok(())
    }

    fn on_end(&mut self, out: &mut VecDeque<ModelEvent>) -> Result<(), ModelError> {
        // Some servers close after the finishing chunk without `[DONE]`; the reply is
        // whole then, only its usage may be missing.
        if self.finished {
            self.complete(out);
            Ok(())
        } else {
            Err(ModelError::StreamCut)
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn decode(chunks: &[&str]) -> (Vec<ModelEvent>, Result<(), ModelError>) {
        let mut d = ChatDecoder::default();
        let mut out = VecDeque::new();
        for c in chunks {
            let ev = SseEvent {
                event: String::new(),
                data: (*c).into(),
            };
            if let Err(e) = d.on_event(&ev, &mut out) {
                return (out.into(), Err(e));
            }
        }
        (out.into(), Ok(()))
    }

    #[test]
    fn tool_call_deltas_are_assembled_by_index() {
        let (events, res) = decode(&[
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"shell","arguments":""}},{"index":1,"id":"b","type":"function","function":{"name":"read","arguments":"{\"p"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"cmd\":"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"\":1}"}},{"index":0,"function":{"arguments":"\"ls\"}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8,"prompt_tokens_details":{"cached_tokens":2}}}"#,
            "[DONE]",
        ]);
        assert_eq!(res, Ok(()));
        assert_eq!(
            events,
            vec![
                ModelEvent::ToolCall {
                    call_id: "a".into(),
                    name: "shell".into(),
                    arguments: r#"{"cmd":"ls"}"#.into()
                },
                ModelEvent::ToolCall {
                    call_id: "b".into(),
                    name: "read".into(),
                    arguments: r#"{"p":1}"#.into()
                },
                ModelEvent::Completed {
                    usage: TokenUsage {
                        input_tokens: 5,
                        cached_input_tokens: 2,
                        output_tokens: 3,
                        reasoning_output_tokens: 0,
                        total_tokens: 8
                    }
                }
            ]
        );
    }

    #[test]
    fn calls_without_index_are_kept_apart_by_id() {
        let (events, _) = decode(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"x","function":{"name":"a","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"y","function":{"name":"b","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}"#,
        ]);
        let names: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                ModelEvent::ToolCall { name, .. } => Some(name.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(names, vec!["a", "b"]);
    }

    #[test]
    fn end_without_finish_is_a_cut() {
        let mut d = ChatDecoder::default();
        let mut out = VecDeque::new();
        assert_eq!(d.on_end(&mut out), Err(ModelError::StreamCut));
    }
}
