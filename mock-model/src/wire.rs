//! What both wire formats share: the SSE framing, the shape of OpenAI error bodies, and
//! reading the last user message out of a request (for `when_exhausted: echo`).

use serde_json::{json, Value};

use crate::play::Said;

/// One wire format's rendering of a reply.
pub trait Wire: Send {
    /// Sent as soon as the stream opens, before the first scripted event.
    fn prelude(&mut self) -> Vec<u8>;
    /// The bytes of one scripted event (possibly several SSE events).
    fn render(&mut self, said: &Said) -> Vec<u8>;
}

/// Appends one SSE event. JSON never contains a raw newline, so `data` is one line.
pub fn sse_frame(out: &mut Vec<u8>, event: Option<&str>, data: &Value) {
    if let Some(event) = event {
        out.extend_from_slice(b"event: ");
        out.extend_from_slice(event.as_bytes());
        out.push(b'\n');
    }
    out.extend_from_slice(b"data: ");
    // Writing a Value into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, data);
    out.extend_from_slice(b"\n\n");
}

/// OpenAI's error envelope.
pub fn error_body(message: &str, kind: &str, code: Option<&str>) -> Value {
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}

/// The error body OpenAI sends with a plain HTTP failure of `status`.
pub fn status_error_body(status: u16, message: &str) -> Value {
    let kind = match status {
        401 | 403 => "invalid_request_error",
        400..=499 => "invalid_request_error",
        _ => "server_error",
    };
    error_body(message, kind, None)
}

pub fn rate_limit_body(retry_after_ms: u64) -> Value {
    let seconds = retry_after_ms as f64 / 1000.0;
    error_body(
        &format!("Rate limit reached for requests per min. Please try again in {seconds:.3}s."),
        "requests",
        Some("rate_limit_exceeded"),
    )
}

pub fn chat_context_window_body() -> Value {
    error_body(
        "This model's maximum context length is 8192 tokens. However, your messages resulted in more tokens. Please reduce the length of the messages.",
        "invalid_request_error",
        Some("context_length_exceeded"),
    )
}

/// Whether a Responses request asked for reasoning items' `encrypted_content`.
pub fn includes_encrypted_reasoning(body: &Value) -> bool {
    body.get("include")
        .and_then(Value::as_array)
        .is_some_and(|i| i.iter().any(|v| v == "reasoning.encrypted_content"))
}

/// The text of the last user message in a Responses `input` or a Chat `messages` list.
pub fn last_user_text(body: &Value) -> Option<String> {
    let list = body
        .get("input")
        .or_else(|| body.get("messages"))?
        .as_array()?;
    let message = list
        .iter()
        .rev()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))?;
    match message.get("content")? {
        Value::String(text) => Some(text.clone()),
        Value::Array(parts) => Some(
            parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        _ => None,
    }
}

/// Whether the request's last input item is a tool's output (Responses:
/// `function_call_output`; Chat Completions: a `tool` message).
pub fn ends_with_tool_output(body: &Value) -> bool {
    if let Some(last) = body
        .get("input")
        .and_then(Value::as_array)
        .and_then(|l| l.last())
    {
        return last.get("type").and_then(Value::as_str) == Some("function_call_output");
    }
    body.get("messages")
        .and_then(Value::as_array)
        .and_then(|l| l.last())
        .is_some_and(|m| m.get("role").and_then(Value::as_str) == Some("tool"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_user_text_reads_both_formats() {
        let responses = json!({"input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "a"}]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "b"}]}
        ]});
        assert_eq!(last_user_text(&responses).as_deref(), Some("a"));
        let chat = json!({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}]});
        assert_eq!(last_user_text(&chat).as_deref(), Some("hi"));
        assert!(!ends_with_tool_output(&responses));
        assert!(!ends_with_tool_output(&chat));
        let answered = json!({"input": [
            {"type": "message", "role": "user", "content": "a"},
            {"type": "function_call", "call_id": "c", "name": "shell", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c", "output": "hi"}
        ]});
        assert!(ends_with_tool_output(&answered));
        let chat = json!({"messages": [{"role": "user", "content": "hi"},
                                       {"role": "tool", "content": "out"}]});
        assert!(ends_with_tool_output(&chat));
    }
}
