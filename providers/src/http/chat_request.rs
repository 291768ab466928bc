//! The Chat Completions request body: `messages` from history (tool calls grouped under
//! the assistant message that issued them, tool results as `tool` messages), function
//! tools, and the streaming options.

use std::borrow::Cow;

use rein_protocol::{InputPart, Item, ReasoningEffort};
use serde::Serialize;

use rein_config::ThinkingOff;
use rein_core::model::{ModelError, ModelRequest};

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    messages: Vec<Message<'a>>,
    stream: bool,
    stream_options: StreamOptions,
    // Several servers reject tool options without tools, so they go together.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parallel_tool_calls: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'a ReasoningEffort>,
    /// Thinking off, as DeepSeek and some vLLM builds read it.
    #[serde(skip_serializing_if = "Option::is_none")]
    enable_thinking: Option<bool>,
    /// Thinking off, as Qwen's chat template (vLLM, SGLang, llama.cpp) reads it.
    #[serde(skip_serializing_if = "Option::is_none")]
    chat_template_kwargs: Option<TemplateKwargs>,
    prompt_cache_key: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<ResponseFormat<'a>>,
}

/// `response_format`: the final answer must be JSON following the schema.
#[derive(Serialize)]
struct ResponseFormat<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    json_schema: NamedSchema<'a>,
}

#[derive(Serialize)]
struct NamedSchema<'a> {
    name: &'static str,
    schema: &'a serde_json::Value,
    strict: bool,
}

#[derive(Serialize)]
struct TemplateKwargs {
    enable_thinking: bool,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct Tool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: FunctionSpec<'a>,
}

#[derive(Serialize)]
struct FunctionSpec<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a serde_json::Value,
}

#[derive(Serialize)]
struct Message<'a> {
    role: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<Content<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<CallOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
}

impl<'a> Message<'a> {
    fn text(role: &'static str, text: &'a str) -> Self {
        Self {
            role,
            content: Some(Content::Text(Cow::Borrowed(text))),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
}

#[derive(Serialize)]
#[serde(untagged)]
enum Content<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<Part<'a>>),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part<'a> {
    Text { text: &'a str },
    ImageUrl { image_url: ImageUrl<'a> },
}

#[derive(Serialize)]
struct ImageUrl<'a> {
    url: &'a str,
}

#[derive(Serialize)]
struct CallOut<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: FunctionOut<'a>,
}

#[derive(Serialize)]
struct FunctionOut<'a> {
    name: &'a str,
    arguments: &'a str,
}

fn user_content(parts: &[InputPart]) -> Content<'_> {
    if parts.iter().all(|p| !matches!(p, InputPart::Image { .. })) {
        let texts: Vec<&str> = parts.iter().filter_map(InputPart::model_text).collect();
        return Content::Text(match texts.as_slice() {
            [one] => Cow::Borrowed(*one),
            many => Cow::Owned(many.join("\n")),
        });
    }
    Content::Parts(
        parts
            .iter()
            .map(|p| match p {
                InputPart::Text { text } | InputPart::Skill { text, .. } => Part::Text { text },
                InputPart::Image { url } => Part::ImageUrl {
                    image_url: ImageUrl { url },
                },
            })
            .collect(),
    )
}

fn messages(request: &ModelRequest) -> Vec<Message<'_>> {
    let mut out = Vec::with_capacity(request.input.len() + 1);
    if !request.instructions.is_empty() {
        out.push(Message::text("system", &request.instructions));
    }
    for item in &request.input {
        match item.as_ref() {
            Item::UserMessage { content, .. } => out.push(Message {
                content: Some(user_content(content)),
                ..Message::text("user", "")
            }),
            Item::AgentMessage { text, .. } => out.push(Message::text("assistant", text)),
            Item::ToolCall {
                call_id,
                name,
                arguments,
                ..
            } => {
                let call = CallOut {
                    id: call_id,
                    kind: "function",
                    function: FunctionOut { name, arguments },
                };
                // Calls of one reply belong to the assistant message that issued them.
                match out.last_mut() {
                    Some(last) if last.role == "assistant" => last.tool_calls.push(call),
                    _ => out.push(Message {
                        role: "assistant",
                        content: None,
                        tool_calls: vec![call],
                        tool_call_id: None,
                    }),
                }
            }
            Item::ToolOutput {
                call_id, output, ..
            } => out.push(Message {
                tool_call_id: Some(call_id),
                ..Message::text("tool", output)
            }),
            // Chat servers have no developer role; `system` is what they all accept.
            Item::DeveloperMessage { text, .. } => out.push(Message::text("system", text)),
            Item::Interruption { text, .. } => out.push(Message::text("user", text)),
            // Chat Completions has no way to send reasoning back.
            Item::Reasoning { .. } => {}
        }
    }
    out
}

/// The request body for `request`; deterministic like the Responses one. Effort `none`
/// becomes the flags `thinking_off` names; the effort itself is then left out, since
/// servers that take the flags (vLLM) refuse efforts they do not list.
pub fn request_body(
    request: &ModelRequest,
    thinking_off: ThinkingOff,
) -> Result<Vec<u8>, ModelError> {
    let has_tools = !request.tools.is_empty();
    let off = request
        .reasoning_effort
        .as_ref()
        .is_some_and(ReasoningEffort::is_off);
    let flagged = off && thinking_off != ThinkingOff::None;
    let body = Body {
        model: &request.model,
        messages: messages(request),
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        tools: request
            .tools
            .iter()
            .map(|t| Tool {
                kind: "function",
                function: FunctionSpec {
                    name: &t.name,
                    description: &t.description,
                    parameters: &t.parameters,
                },
            })
            .collect(),
        tool_choice: has_tools.then_some("auto"),
        parallel_tool_calls: has_tools.then_some(request.parallel_tool_calls),
        reasoning_effort: request.reasoning_effort.as_ref().filter(|_| !flagged),
        enable_thinking: (off && thinking_off.flag()).then_some(false),
        chat_template_kwargs: (off && thinking_off.template()).then_some(TemplateKwargs {
            enable_thinking: false,
        }),
        prompt_cache_key: &request.prompt_cache_key,
        response_format: request
            .output_schema
            .as_deref()
            .map(|schema| ResponseFormat {
                kind: "json_schema",
                json_schema: NamedSchema {
                    name: super::responses::OUTPUT_SCHEMA_NAME,
                    schema,
                    strict: true,
                },
            }),
    };
    serde_json::to_vec(&body).map_err(|e| ModelError::BadRequest {
        status: 0,
        message: format!("could not encode the request: {e}"),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use rein_core::tools::ToolSpec;
    use rein_protocol::ItemId;
    use std::sync::Arc;

    #[test]
    fn an_output_schema_becomes_a_strict_json_schema_response_format() {
        let schema = serde_json::json!({"type": "object"});
        let mut request = ModelRequest {
            model: "m".into(),
            instructions: String::new(),
            input: vec![Arc::new(Item::user_text("hi"))],
            tools: Arc::from(Vec::new()),
            parallel_tool_calls: false,
            reasoning_effort: None,
            prompt_cache_key: "t".into(),
            output_schema: None,
        };
        let plain: serde_json::Value =
            serde_json::from_slice(&request_body(&request, ThinkingOff::Both).unwrap()).unwrap();
        assert!(plain.get("response_format").is_none());
        request.output_schema = Some(Arc::new(schema.clone()));
        let body: serde_json::Value =
            serde_json::from_slice(&request_body(&request, ThinkingOff::Both).unwrap()).unwrap();
        assert_eq!(
            body["response_format"],
            serde_json::json!({"type": "json_schema", "json_schema": {"name": "final_answer", "schema": schema, "strict": true}})
        );
    }

    #[test]
    fn messages_group_calls_under_the_assistant_message() {
        let request = ModelRequest {
            model: "m".into(),
            instructions: "sys".into(),
            input: vec![
                Arc::new(Item::user_text("hi")),
                Arc::new(Item::AgentMessage {
                    id: ItemId::from("a"),
                    text: "looking".into(),
                    partial: false,
                }),
                Arc::new(Item::ToolCall {
                    id: ItemId::from("b"),
                    call_id: "c1".into(),
                    name: "shell".into(),
                    arguments: "{}".into(),
                }),
                Arc::new(Item::ToolOutput {
                    id: ItemId::from("c"),
                    call_id: "c1".into(),
                    output: "ok".into(),
                    success: true,
                    facts: None,
                }),
            ],
            tools: Arc::from(vec![ToolSpec {
                name: "shell".into(),
                description: "d".into(),
                parameters: serde_json::json!({}),
            }]),
            parallel_tool_calls: false,
            reasoning_effort: None,
            prompt_cache_key: "k".into(),
            output_schema: None,
        };
        let body: serde_json::Value =
            serde_json::from_slice(&request_body(&request, ThinkingOff::Both).unwrap()).unwrap();
        assert_eq!(
            body["messages"],
            serde_json::json!([
                {"role": "system", "content": "sys"},
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "looking", "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "shell", "arguments": "{}"}}
                ]},
                {"role": "tool", "content": "ok", "tool_call_id": "c1"}
            ])
        );
        assert_eq!(body["parallel_tool_calls"], serde_json::json!(false));
        assert_eq!(
            body["stream_options"]["include_usage"],
            serde_json::json!(true)
        );
    }
}
