//! Unit tests of the Responses wire format: request bodies and stream decoding.
#![allow(clippy::unwrap_used)]

use super::*;
use pretty_assertions::assert_eq;
use rein_core::tools::ToolSpec;
use rein_protocol::ItemId;
use std::sync::Arc;

fn sample_request() -> ModelRequest {
    ModelRequest {
        model: "gpt-test".into(),
        instructions: "be brief".into(),
        input: vec![
            Arc::new(Item::user_text("list files")),
            Arc::new(Item::ToolCall {
                id: ItemId::from("i2"),
                call_id: "c1".into(),
                name: "shell".into(),
                arguments: r#"{"command":["ls"]}"#.into(),
            }),
            Arc::new(Item::ToolOutput {
                id: ItemId::from("i3"),
                call_id: "c1".into(),
                output: "a.txt".into(),
                success: true,
                facts: None,
            }),
            Arc::new(Item::Reasoning {
                id: ItemId::from("i4"),
                text: "no secret".into(),
                encrypted_content: None,
            }),
        ],
        tools: Arc::from(vec![ToolSpec {
            name: "shell".into(),
            description: "run".into(),
            parameters: serde_json::json!({"type": "object"}),
        }]),
        parallel_tool_calls: true,
        reasoning_effort: Some(ReasoningEffort::LOW),
        prompt_cache_key: "thread-1".into(),
        output_schema: None,
    }
}

#[test]
fn an_output_schema_becomes_a_strict_json_schema_text_format() {
    let schema = serde_json::json!({"type": "object", "properties": {"ok": {"type": "boolean"}}});
    let mut request = sample_request();
    let plain: serde_json::Value =
        serde_json::from_slice(&request_body(&request).unwrap()).unwrap();
    assert!(plain.get("text").is_none());
    request.output_schema = Some(Arc::new(schema.clone()));
    let body: serde_json::Value = serde_json::from_slice(&request_body(&request).unwrap()).unwrap();
    assert_eq!(
        body["text"],
        serde_json::json!({"format": {"type": "json_schema", "name": "final_answer", "schema": schema, "strict": true}})
    );
}

#[test]
fn body_maps_history_tools_and_options() {
    let body: serde_json::Value =
        serde_json::from_slice(&request_body(&sample_request()).unwrap()).unwrap();
    assert_eq!(
        body,
        serde_json::json!({
            "model": "gpt-test",
            "instructions": "be brief",
            "input": [
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list files"}]},
                {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{\"command\":[\"ls\"]}"},
                {"type": "function_call_output", "call_id": "c1", "output": "a.txt"}
            ],
            "tools": [{"type": "function", "name": "shell", "description": "run", "strict": false, "parameters": {"type": "object"}}],
            "tool_choice": "auto",
            "parallel_tool_calls": true,
            "reasoning": {"effort": "low", "summary": "auto"},
            "store": false,
            "stream": true,
            "include": ["reasoning.encrypted_content"],
            "prompt_cache_key": "thread-1"
        })
    );
}

#[test]
fn same_request_gives_identical_bytes() {
    let r = sample_request();
    assert_eq!(request_body(&r).unwrap(), request_body(&r.clone()).unwrap());
}

fn decode(events: &[(&str, serde_json::Value)]) -> (Vec<ModelEvent>, Option<ModelError>) {
    let mut d = ResponsesDecoder;
    let mut out = VecDeque::new();
    for (name, data) in events {
        let ev = SseEvent {
            event: (*name).into(),
            data: data.to_string(),
        };
        if let Err(e) = d.on_event(&ev, &mut out) {
            return (out.into(), Some(e));
        }
    }
    (out.into(), None)
}

#[test]
fn failed_with_context_length_maps_to_context_window_exceeded() {
    let (_, err) = decode(&[(
        "response.failed",
        serde_json::json!({"type": "response.failed", "response": {"error": {"code": "context_length_exceeded", "message": "too long"}}}),
    )]);
    assert_eq!(
        err,
        Some(ModelError::ContextWindowExceeded("too long".into()))
    );
}

#[test]
fn completed_carries_cached_and_reasoning_tokens() {
    let (events, err) = decode(&[(
        "response.completed",
        serde_json::json!({"type": "response.completed", "response": {"usage": {
            "input_tokens": 10, "input_tokens_details": {"cached_tokens": 4},
            "output_tokens": 6, "output_tokens_details": {"reasoning_tokens": 2},
            "total_tokens": 16}}}),
    )]);
    assert_eq!(err, None);
    assert_eq!(
        events,
        vec![ModelEvent::Completed {
            usage: TokenUsage {
                input_tokens: 10,
                cached_input_tokens: 4,
                output_tokens: 6,
                reasoning_output_tokens: 2,
                total_tokens: 16
            }
        }]
    );
}

#[test]
fn a_reasoning_item_yields_its_encrypted_content() {
    let item = |extra: serde_json::Value| {
        let mut item = serde_json::json!({"id": "rs_1", "type": "reasoning", "summary": []});
        item.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        (
            "response.output_item.done",
            serde_json::json!({"type": "response.output_item.done", "item": item}),
        )
    };
    let (events, err) = decode(&[
        item(serde_json::json!({"encrypted_content": "gAAA"})),
        // Without the blob (no `include`), there is nothing to carry.
        item(serde_json::json!({})),
    ]);
    assert_eq!(err, None);
    assert_eq!(events, vec![ModelEvent::ReasoningEncrypted("gAAA".into())]);
}

#[test]
fn reasoning_without_a_summary_goes_back_with_an_empty_summary() {
    let item = Item::Reasoning {
        id: ItemId::new(),
        text: String::new(),
        encrypted_content: Some("gAAA".into()),
    };
    assert_eq!(
        serde_json::to_value(input_item(&item).unwrap()).unwrap(),
        serde_json::json!({"type": "reasoning", "summary": [], "encrypted_content": "gAAA"})
    );
}
