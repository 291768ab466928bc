//! OpenAI's Responses API (`POST {base_url}/responses`, streamed): how a [`ModelRequest`]
//! becomes a request body, and how the stream's events become [`ModelEvent`]s.

use std::borrow::Cow;
use std::collections::VecDeque;

use rein_protocol::{InputPart, Item, ReasoningEffort, TokenUsage};
use serde::{Deserialize, Serialize};

use super::client::{HttpModelClient, WireFormat};
use super::errors::{error_for_stream_failure, malformed, ApiErrorBody};
use super::sse::SseEvent;
use super::stream::WireDecoder;
use rein_core::model::{ModelError, ModelEvent, ModelRequest};

/// The Responses API wire format.
#[derive(Clone, Copy, Debug)]
pub struct Responses;

impl WireFormat for Responses {
    const PATH: &'static str = "responses";
    type Decoder = ResponsesDecoder;

    fn request_body(request: &ModelRequest, _: &super::Endpoint) -> Result<Vec<u8>, ModelError> {
        request_body(request)
    }

    fn decoder() -> ResponsesDecoder {
        ResponsesDecoder
    }
}

/// A client for one Responses API server.
pub type ResponsesClient = HttpModelClient<Responses>;

/// The name structured-output schemas are sent under.
pub const OUTPUT_SCHEMA_NAME: &str = "final_answer";

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    instructions: &'a str,
    input: Vec<InputItem<'a>>,
    // Compatible servers differ on tool options without tools; leaving them out is
    // accepted everywhere.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<FunctionTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parallel_tool_calls: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<Reasoning<'a>>,
    store: bool,
    stream: bool,
    include: Vec<&'static str>,
    prompt_cache_key: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<TextOptions<'a>>,
}

/// `text.format`: the final answer must be JSON following the schema.
#[derive(Serialize)]
struct TextOptions<'a> {
    format: JsonSchemaFormat<'a>,
}

#[derive(Serialize)]
struct JsonSchemaFormat<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'static str,
    schema: &'a serde_json::Value,
    strict: bool,
}

#[derive(Serialize)]
struct Reasoning<'a> {
    effort: &'a ReasoningEffort,
    /// No summary is asked for when thinking is off: there is nothing to summarise.
    #[serde(skip_serializing_if = "Option::is_none")]
    summary: Option<&'static str>,
}

#[derive(Serialize)]
struct FunctionTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'a str,
    description: &'a str,
    strict: bool,
    parameters: &'a serde_json::Value,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum InputItem<'a> {
    Message {
        role: &'static str,
        content: Vec<Content<'a>>,
    },
    Reasoning {
        summary: Vec<Summary<'a>>,
        encrypted_content: &'a str,
    },
    FunctionCall {
        call_id: &'a str,
        name: &'a str,
        arguments: &'a str,
    },
    FunctionCallOutput {
        call_id: &'a str,
        output: &'a str,
    },
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Content<'a> {
    InputText { text: &'a str },
    InputImage { image_url: &'a str },
    OutputText { text: &'a str },
}

#[derive(Serialize)]
struct Summary<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

fn input_item(item: &Item) -> Option<InputItem<'_>> {
    Some(match item {
        Item::UserMessage { content, .. } => InputItem::Message {
            role: "user",
            content: content
                .iter()
                .map(|part| match part {
                    InputPart::Text { text } | InputPart::Skill { text, .. } => {
                        Content::InputText { text }
                    }
                    InputPart::Image { url } => Content::InputImage { image_url: url },
                })
                .collect(),
        },
        Item::AgentMessage { text, .. } => InputItem::Message {
            role: "assistant",
            content: vec![Content::OutputText { text }],
        },
        // With `store: false` the server keeps no reasoning; only its encrypted form can be
        // sent back, and a summary alone would be rejected.
        Item::Reasoning {
            text,
            encrypted_content,
            ..
        } => InputItem::Reasoning {
            // A reasoning item may come with no summary at all.
            summary: if text.is_empty() {
                Vec::new()
            } else {
                vec![Summary {
                    kind: "summary_text",
                    text,
                }]
            },
            encrypted_content: encrypted_content.as_deref()?,
        },
        Item::ToolCall {
            call_id,
            name,
            arguments,
            ..
        } => InputItem::FunctionCall {
            call_id,
            name,
            arguments,
        },
        Item::ToolOutput {
            call_id, output, ..
        } => InputItem::FunctionCallOutput { call_id, output },
        Item::DeveloperMessage { text, .. } => InputItem::Message {
            role: "developer",
            content: vec![Content::InputText { text }],
        },
        // The model reads the marker as something the user did.
        Item::Interruption { text, .. } => InputItem::Message {
            role: "user",
            content: vec![Content::InputText { text }],
        },
    })
}

/// The request body for `request`. Deterministic: the same request gives the same bytes,
/// which keeps the provider's prompt cache warm and makes requests comparable in tests.
pub fn request_body(request: &ModelRequest) -> Result<Vec<u8>, ModelError> {
    let has_tools = !request.tools.is_empty();
    let body = Body {
        model: &request.model,
        instructions: &request.instructions,
        input: request.input.iter().filter_map(|i| input_item(i)).collect(),
        tools: request
            .tools
            .iter()
            .map(|t| FunctionTool {
                kind: "function",
                name: &t.name,
                description: &t.description,
                strict: false,
                parameters: &t.parameters,
            })
            .collect(),
        tool_choice: has_tools.then_some("auto"),
        parallel_tool_calls: has_tools.then_some(request.parallel_tool_calls),
        // Effort `none` is sent as the Responses API defines it: `reasoning.effort: "none"`.
        reasoning: request.reasoning_effort.as_ref().map(|effort| Reasoning {
            effort,
            summary: (!effort.is_off()).then_some("auto"),
        }),
        store: false,
        stream: true,
        include: if request
            .reasoning_effort
            .as_ref()
            .is_some_and(|e| !e.is_off())
        {
            vec!["reasoning.encrypted_content"]
        } else {
            Vec::new()
        },
        prompt_cache_key: &request.prompt_cache_key,
        text: request.output_schema.as_deref().map(|schema| TextOptions {
            format: JsonSchemaFormat {
                kind: "json_schema",
                name: OUTPUT_SCHEMA_NAME,
                schema,
                strict: true,
            },
        }),
    };
    // Only strings, numbers and JSON values go in, which always serialize; the status is
    // 0 because the request never left.
    serde_json::to_vec(&body).map_err(|e| ModelError::BadRequest {
        status: 0,
        message: format!("could not encode the request: {e}"),
    })
}

#[derive(Deserialize)]
struct Frame<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default)]
    delta: Option<String>,
    #[serde(default)]
    item: Option<OutputItem>,
    #[serde(default)]
    response: Option<ResponseObject>,
    /// Set on a top-level `error` event.
    #[serde(default)]
    code: Option<serde_json::Value>,
    #[serde(default)]
    message: Option<String>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum OutputItem {
    FunctionCall {
        call_id: String,
        name: String,
        arguments: String,
    },
    Reasoning {
        #[serde(default)]
        encrypted_content: Option<String>,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct ResponseObject {
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<ApiErrorBody>,
    #[serde(default)]
    incomplete_details: Option<IncompleteDetails>,
}

#[derive(Deserialize)]
struct IncompleteDetails {
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct Usage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    input_tokens_details: Option<InputDetails>,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    output_tokens_details: Option<OutputDetails>,
    #[serde(default)]
    total_tokens: u64,
}

#[derive(Deserialize)]
struct InputDetails {
    #[serde(default)]
    cached_tokens: u64,
}

#[derive(Deserialize)]
struct OutputDetails {
    #[serde(default)]
    reasoning_tokens: u64,
}

impl From<Usage> for TokenUsage {
    fn from(u: Usage) -> Self {
        TokenUsage {
            input_tokens: u.input_tokens,
            cached_input_tokens: u.input_tokens_details.map_or(0, |d| d.cached_tokens),
            output_tokens: u.output_tokens,
            reasoning_output_tokens: u.output_tokens_details.map_or(0, |d| d.reasoning_tokens),
            total_tokens: u.total_tokens,
        }
    }
}

/// Decodes a Responses event stream.
#[derive(Debug, Default)]
pub struct ResponsesDecoder;

/// Event names that carry something the kernel uses; others are skipped unparsed.
fn is_relevant(name: &str) -> bool {
    matches!(
        name,
        "response.output_text.delta"
            | "response.reasoning_summary_text.delta"
            | "response.reasoning_text.delta"
            | "response.output_item.done"
            | "response.completed"
            | "response.failed"
            | "response.incomplete"
            | "error"
    )
}

impl WireDecoder for ResponsesDecoder {
    fn on_event(
        &mut self,
        event: &SseEvent,
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<(), ModelError> {
        if !event.event.is_empty() && !is_relevant(&event.event) {
            return Ok(());
        }
        let frame: Frame<'_> = match serde_json::from_str(&event.data) {
            Ok(frame) => frame,
            Err(_) if event.data.trim() == "[DONE]" => return Ok(()),
            Err(e) => return Err(malformed(format_args!("{e} in `{}`", event.event))),
        };
        match frame.kind.as_ref() {
            "response.output_text.delta" => {
                if let Some(delta) = frame.delta.filter(|d| !d.is_empty()) {
                    out.push_back(ModelEvent::TextDelta(delta));
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                if let Some(delta) = frame.delta.filter(|d| !d.is_empty()) {
                    out.push_back(ModelEvent::ReasoningDelta(delta));
                }
            }
            "response.output_item.done" => match frame.item {
                Some(OutputItem::FunctionCall {
                    call_id,
                    name,
                    arguments,
                }) => out.push_back(ModelEvent::ToolCall {
                    call_id,
                    name,
                    arguments,
                }),
                Some(OutputItem::Reasoning {
                    encrypted_content: Some(blob),
                }) => out.push_back(ModelEvent::ReasoningEncrypted(blob)),
                _ => {}
            },
            "response.completed" => {
                let usage = frame.response.and_then(|r| r.usage).unwrap_or_default();
                out.push_back(ModelEvent::Completed {
                    usage: usage.into(),
                });
            }
            "response.failed" => {
                let error = frame.response.and_then(|r| r.error).unwrap_or_default();
                return Err(error_for_stream_failure(&error));
            }
            "response.incomplete" => {
                let reason = frame
                    .response
                    .and_then(|r| r.incomplete_details)
                    .and_then(|d| d.reason)
                    .unwrap_or_else(|| "unknown".into());
                // Sending the same request again ends the same way (e.g. max_output_tokens).
                return Err(ModelError::BadRequest {
                    status: 200,
                    message: format!("the response is incomplete: {reason}"),
                });
            }
            "error" => {
                return Err(error_for_stream_failure(&ApiErrorBody {
                    code: frame.code,
                    message: frame.message,
                    kind: None,
                }));
            }
            _ => {}
        }
        Ok(())
    }

    fn on_end(&mut self, _out: &mut VecDeque<ModelEvent>) -> Result<(), ModelError> {
        // `response.completed` ends the stream before the body does, so reaching the end
        // of the body means it never came.
        Err(ModelError::StreamCut)
    }
}

#[cfg(test)]
#[path = "responses_tests.rs"]
mod tests;
