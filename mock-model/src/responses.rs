//! Renders a reply as OpenAI's Responses streaming events: `response.created`, then per
//! output item `response.output_item.added`, its deltas and `response.output_item.done`,
//! and finally `response.completed` with usage (cached and reasoning token details).
//! Each event carries both an `event:` line and a `type` field, as OpenAI sends them.

use rein_protocol::TokenUsage;
use serde_json::{json, Value};

use crate::play::Said;
use crate::wire::{sse_frame, Wire};

pub struct ResponsesWire {
    response_id: String,
    model: String,
    created_at: u64,
    sequence: u64,
    output_index: u64,
    /// Items completed so far, repeated in `response.completed`'s `output`.
    output: Vec<Value>,
    message_id: String,
    /// The request asked for `include: ["reasoning.encrypted_content"]`: reasoning items
    /// carry an opaque blob the client must send back (as OpenAI does with `store: false`).
    encrypted_reasoning: bool,
}

impl ResponsesWire {
    pub fn new(request_index: usize, model: &str, created_at: u64) -> Self {
        Self {
            response_id: format!("resp_mock_{request_index}"),
            model: model.to_owned(),
            created_at,
            sequence: 0,
            output_index: 0,
            output: Vec::new(),
            message_id: format!("msg_mock_{request_index}"),
            encrypted_reasoning: false,
        }
    }

    /// Reasoning items carry `encrypted_content` (see the field).
    pub fn with_encrypted_reasoning(mut self, on: bool) -> Self {
        self.encrypted_reasoning = on;
        self
    }

    fn event(&mut self, out: &mut Vec<u8>, kind: &str, mut body: Value) {
        if let Value::Object(map) = &mut body {
            map.insert("type".into(), Value::from(kind));
            map.insert("sequence_number".into(), Value::from(self.sequence));
        }
        self.sequence += 1;
        sse_frame(out, Some(kind), &body);
    }

    fn response(&self, status: &str) -> Value {
        json!({
            "id": self.response_id,
            "object": "response",
            "created_at": self.created_at,
            "status": status,
            "model": self.model,
            "output": self.output,
            "parallel_tool_calls": true,
            "store": false,
        })
    }

    /// `response.created` followed by `response.failed` with OpenAI's context error.
    pub fn context_window_failure(&mut self) -> Vec<u8> {
        let mut out = self.prelude();
        let mut response = self.response("failed");
        response["error"] = json!({
            "code": "context_length_exceeded",
            "message": "Your input exceeds the context window of this model. Please adjust your input and try again."
        });
        self.event(&mut out, "response.failed", json!({ "response": response }));
        out
    }
}

impl Wire for ResponsesWire {
    fn prelude(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        let response = self.response("in_progress");
        self.event(
            &mut out,
            "response.created",
            json!({ "response": response }),
        );
        self.event(
            &mut out,
            "response.in_progress",
            json!({ "response": response }),
        );
        out
    }

    fn render(&mut self, said: &Said) -> Vec<u8> {
        let mut out = Vec::new();
        match said {
            Said::Reasoning(text) => self.reasoning(&mut out, text),
            Said::Text {
                delta,
                first,
                last,
                full,
            } => self.text(&mut out, delta, *first, (*last).then_some(&**full)),
            Said::ToolCall {
                call_id,
                name,
                arguments,
            } => self.tool_call(&mut out, call_id, name, arguments),
            Said::Completed(usage) => self.completed(&mut out, usage),
        }
        out
    }
}

/// One `Said` each, as its Responses events.
impl ResponsesWire {
    /// An output item is complete: it joins the response's output and is announced.
    fn item_done(&mut self, out: &mut Vec<u8>, index: u64, item: Value) {
        self.output.push(item.clone());
        self.event(
            out,
            "response.output_item.done",
            json!({ "output_index": index, "item": item }),
        );
    }

    fn reasoning(&mut self, out: &mut Vec<u8>, text: &str) {
        let id = format!("rs_{}_{}", self.response_id, self.output_index);
        let index = self.output_index;
        self.output_index += 1;
        self.event(
            out,
            "response.output_item.added",
            json!({
                "output_index": index,
                "item": {"id": id, "type": "reasoning", "summary": []}
            }),
        );
        let part = json!({"type": "summary_text", "text": ""});
        self.event(
            out,
            "response.reasoning_summary_part.added",
            json!({
                "item_id": id, "output_index": index, "summary_index": 0, "part": part
            }),
        );
        self.event(
            out,
            "response.reasoning_summary_text.delta",
            json!({
                "item_id": id, "output_index": index, "summary_index": 0, "delta": text
            }),
        );
        self.event(
            out,
            "response.reasoning_summary_text.done",
            json!({
                "item_id": id, "output_index": index, "summary_index": 0, "text": text
            }),
        );
        let part = json!({"type": "summary_text", "text": text});
        self.event(
            out,
            "response.reasoning_summary_part.done",
            json!({
                "item_id": id, "output_index": index, "summary_index": 0, "part": part
            }),
        );
        let mut item = json!({
            "id": id, "type": "reasoning",
            "summary": [{"type": "summary_text", "text": text}]
        });
        if self.encrypted_reasoning {
            // Opaque to the client; derived from the id so tests can predict it.
            item["encrypted_content"] = json!(format!("enc:{id}"));
        }
        self.item_done(out, index, item);
    }

    /// A delta of the message; `full` is the whole text once this is its last delta.
    fn text(&mut self, out: &mut Vec<u8>, delta: &str, first: bool, full: Option<&str>) {
        let id = self.message_id.clone();
        let index = self.output_index;
        if first {
            self.event(
                out,
                "response.output_item.added",
                json!({
                    "output_index": index,
                    "item": {"id": id, "type": "message", "status": "in_progress",
                             "role": "assistant", "content": []}
                }),
            );
            self.event(
                out,
                "response.content_part.added",
                json!({
                    "item_id": id, "output_index": index, "content_index": 0,
                    "part": {"type": "output_text", "text": "", "annotations": []}
                }),
            );
        }
        self.event(
            out,
            "response.output_text.delta",
            json!({
                "item_id": id, "output_index": index, "content_index": 0, "delta": delta
            }),
        );
        if let Some(full) = full {
            self.output_index += 1;
            self.event(
                out,
                "response.output_text.done",
                json!({
                    "item_id": id, "output_index": index, "content_index": 0, "text": full
                }),
            );
            let part = json!({"type": "output_text", "text": full, "annotations": []});
            self.event(
                out,
                "response.content_part.done",
                json!({
                    "item_id": id, "output_index": index, "content_index": 0, "part": part
                }),
            );
            let item = json!({
                "id": id, "type": "message", "status": "completed",
                "role": "assistant", "content": [part]
            });
            self.item_done(out, index, item);
        }
    }

    fn tool_call(&mut self, out: &mut Vec<u8>, call_id: &str, name: &str, arguments: &str) {
        let id = format!("fc_{call_id}");
        let index = self.output_index;
        self.output_index += 1;
        self.event(
            out,
            "response.output_item.added",
            json!({
                "output_index": index,
                "item": {"id": id, "type": "function_call", "status": "in_progress",
                         "call_id": call_id, "name": name, "arguments": ""}
            }),
        );
        self.event(
            out,
            "response.function_call_arguments.delta",
            json!({
                "item_id": id, "output_index": index, "delta": arguments
            }),
        );
        self.event(
            out,
            "response.function_call_arguments.done",
            json!({
                "item_id": id, "output_index": index, "arguments": arguments
            }),
        );
        let item = json!({
            "id": id, "type": "function_call", "status": "completed",
            "call_id": call_id, "name": name, "arguments": arguments
        });
        self.item_done(out, index, item);
    }

    fn completed(&mut self, out: &mut Vec<u8>, usage: &TokenUsage) {
        let mut response = self.response("completed");
        response["usage"] = json!({
            "input_tokens": usage.input_tokens,
            "input_tokens_details": {"cached_tokens": usage.cached_input_tokens},
            "output_tokens": usage.output_tokens,
            "output_tokens_details": {"reasoning_tokens": usage.reasoning_output_tokens},
            "total_tokens": usage.total_tokens,
        });
        self.event(out, "response.completed", json!({ "response": response }));
    }
}
