//! Renders a reply as Chat Completions stream chunks: a first chunk with the assistant
//! role, content deltas, `tool_calls` deltas (a call's name first, its arguments in two
//! pieces, so clients must assemble by `index`), a chunk with `finish_reason`, a usage
//! chunk (as `stream_options.include_usage` asks) and `data: [DONE]`.

use serde_json::{json, Value};

use crate::play::Said;
use crate::wire::{sse_frame, Wire};

pub struct ChatWire {
    id: String,
    model: String,
    created: u64,
    next_call: u64,
    saw_calls: bool,
}

impl ChatWire {
    pub fn new(request_index: usize, model: &str, created: u64) -> Self {
        Self {
            id: format!("chatcmpl-mock-{request_index}"),
            model: model.to_owned(),
            created,
            next_call: 0,
            saw_calls: false,
        }
    }

    fn chunk(&self, out: &mut Vec<u8>, choices: Value, usage: Option<Value>) {
        let mut body = json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": choices,
        });
        if let Some(usage) = usage {
            body["usage"] = usage;
        }
        sse_frame(out, None, &body);
    }

    fn delta(&self, out: &mut Vec<u8>, delta: Value) {
        self.chunk(
            out,
            json!([{"index": 0, "delta": delta, "finish_reason": null}]),
            None,
        );
    }
}

/// `text` cut in two on a character boundary.
fn halves(text: &str) -> (&str, &str) {
    let mut mid = text.len() / 2;
    while !text.is_char_boundary(mid) {
        mid += 1;
    }
    text.split_at(mid)
}

impl Wire for ChatWire {
    fn prelude(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        self.delta(&mut out, json!({"role": "assistant", "content": ""}));
        out
    }

    fn render(&mut self, said: &Said) -> Vec<u8> {
        let mut out = Vec::new();
        match said {
            Said::Reasoning(text) => self.delta(&mut out, json!({ "reasoning_content": text })),
            Said::Text { delta, .. } => self.delta(&mut out, json!({ "content": delta })),
            Said::ToolCall {
                call_id,
                name,
                arguments,
            } => {
                let index = self.next_call;
                self.next_call += 1;
                self.saw_calls = true;
                self.delta(
                    &mut out,
                    json!({"tool_calls": [{"index": index, "id": call_id, "type": "function",
                                           "function": {"name": name, "arguments": ""}}]}),
                );
                let (a, b) = halves(arguments);
                for piece in [a, b] {
                    self.delta(
                        &mut out,
                        json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                    );
                }
            }
            Said::Completed(usage) => {
                let finish = if self.saw_calls { "tool_calls" } else { "stop" };
                self.chunk(
                    &mut out,
                    json!([{"index": 0, "delta": {}, "finish_reason": finish}]),
                    None,
                );
                self.chunk(
                    &mut out,
                    json!([]),
                    Some(json!({
                        "prompt_tokens": usage.input_tokens,
                        "completion_tokens": usage.output_tokens,
                        "total_tokens": usage.total_tokens,
                        "prompt_tokens_details": {"cached_tokens": usage.cached_input_tokens},
                        "completion_tokens_details": {"reasoning_tokens": usage.reasoning_output_tokens},
                    })),
                );
                out.extend_from_slice(b"data: [DONE]\n\n");
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halves_respect_char_boundaries() {
        assert_eq!(halves("aé"), ("a", "é"));
        assert_eq!(halves(""), ("", ""));
    }
}
