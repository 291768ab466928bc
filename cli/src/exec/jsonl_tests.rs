//! The mapping from kernel events to `codex exec --json` lines, one behaviour per test.
#![allow(clippy::unwrap_used)]

use pretty_assertions::assert_eq;
use rein_protocol::{ErrorCode, Event, EventMsg, Item, ItemId, PlanStep, ThreadId, TokenUsage};
use serde_json::{json, Value};

use super::JsonlMapper;

fn run(msgs: Vec<EventMsg>) -> Vec<Value> {
    let thread_id = ThreadId::new();
    let mut mapper = JsonlMapper::new();
    msgs.into_iter()
        .enumerate()
        .flat_map(|(seq, msg)| {
            mapper.map(&Event {
                thread_id,
                turn_id: None,
                seq: seq as u64,
                timestamp_ms: 0,
                msg,
            })
        })
        .map(|e| serde_json::to_value(e).unwrap())
        .collect()
}

fn tool_output(call_id: &str, output: &str, success: bool) -> EventMsg {
    EventMsg::ItemCompleted {
        item: Item::ToolOutput {
            id: ItemId::new(),
            call_id: call_id.into(),
            output: output.into(),
            success,
        },
    }
}

fn begin(call_id: &str, name: &str, args: Value) -> EventMsg {
    EventMsg::ToolCallBegin {
        call_id: call_id.into(),
        name: name.into(),
        arguments: args.to_string(),
    }
}

#[test]
fn a_shell_call_is_a_command_execution_with_exit_code_and_output() {
    let lines = run(vec![
        begin("c1", "shell", json!({"command": ["echo", "hi there"]})),
        EventMsg::ToolOutputDelta {
            call_id: "c1".into(),
            delta: "hi there\n".into(),
        },
        tool_output(
            "c1",
            &json!({"output": "hi there\n", "metadata": {"exit_code": 0}}).to_string(),
            true,
        ),
    ]);
    assert_eq!(
        lines,
        vec![
            json!({"type": "item.started", "item": {"id": "item_0", "type": "command_execution",
                "command": "echo 'hi there'", "aggregated_output": "", "exit_code": null, "status": "in_progress"}}),
            json!({"type": "item.completed", "item": {"id": "item_0", "type": "command_execution",
                "command": "echo 'hi there'", "aggregated_output": "hi there\n", "exit_code": 0, "status": "completed"}}),
        ]
    );
}

#[test]
fn a_patch_is_one_completed_file_change_listing_its_files() {
    let patch = "*** Begin Patch\n*** Add File: a.txt\n+x\n*** Update File: src/b.rs\n@@\n-a\n+b\n*** Delete File: c\n*** End Patch";
    let lines = run(vec![
        begin("p", "apply_patch", json!({"input": patch})),
        tool_output("p", "applied", true),
    ]);
    assert_eq!(
        lines,
        vec![
            json!({"type": "item.completed", "item": {"id": "item_0", "type": "file_change", "status": "completed",
            "changes": [{"path": "a.txt", "kind": "add"}, {"path": "src/b.rs", "kind": "update"}, {"path": "c", "kind": "delete"}]}})
        ]
    );
}

#[test]
fn the_plan_is_a_todo_list_started_updated_and_completed_with_the_turn() {
    let plan = |done: bool| EventMsg::PlanUpdated {
        plan: serde_json::from_value::<Vec<PlanStep>>(json!([
            {"step": "look", "status": if done { "completed" } else { "in_progress" }},
        ]))
        .unwrap(),
    };
    let lines = run(vec![
        plan(false),
        plan(true),
        EventMsg::TurnCompleted {
            last_agent_message: None,
        },
    ]);
    let types: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "item.started",
            "item.updated",
            "item.completed",
            "turn.completed"
        ]
    );
    assert_eq!(
        lines[2]["item"],
        json!({"id": "item_0", "type": "todo_list", "items": [{"text": "look", "completed": true}]})
    );
}

#[test]
fn usage_sums_the_turns_responses() {
    let usage = |i, o| TokenUsage {
        input_tokens: i,
        output_tokens: o,
        total_tokens: i + o,
        ..TokenUsage::default()
    };
    let lines = run(vec![
        EventMsg::TokenCount {
            last: usage(10, 1),
            total: usage(10, 1),
            context_window: None,
        },
        EventMsg::TokenCount {
            last: usage(20, 2),
            total: usage(30, 3),
            context_window: None,
        },
        EventMsg::TurnCompleted {
            last_agent_message: None,
        },
    ]);
    assert_eq!(lines[0]["usage"]["input_tokens"], 30);
    assert_eq!(lines[0]["usage"]["output_tokens"], 3);
}

#[test]
fn an_unfinished_call_fails_when_the_turn_fails_and_errors_are_reported() {
    let lines = run(vec![
        begin("x", "read_file", json!({"path": "a"})),
        EventMsg::Error {
            code: ErrorCode::ModelUnavailable,
            message: "down".into(),
        },
        EventMsg::TurnFailed {
            code: ErrorCode::ModelUnavailable,
            message: "down".into(),
        },
    ]);
    let types: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        ["item.started", "error", "item.completed", "turn.failed"]
    );
    assert_eq!(lines[2]["item"]["type"], "mcp_tool_call");
    assert_eq!(lines[2]["item"]["status"], "failed");
    assert_eq!(lines[3]["error"]["message"], "down");
}

#[test]
fn a_patch_applied_through_the_shell_is_its_own_file_change() {
    let diff: rein_protocol::FileDiff = serde_json::from_value(json!({
        "path": "/w/a.txt", "kind": "update", "unified_diff": "@@ -1 +1 @@\n-a\n+b\n"
    }))
    .unwrap();
    let lines = run(vec![
        begin(
            "s",
            "shell",
            json!({"command": "apply_patch <<EOF ... EOF"}),
        ),
        EventMsg::PatchApplied {
            call_id: "s".into(),
            changes: vec![diff],
        },
        tool_output("s", "Done!", true),
    ]);
    let types: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["item.started", "item.completed", "item.completed"]);
    assert_eq!(
        lines[1]["item"],
        json!({"id": "item_1", "type": "file_change", "status": "completed",
            "changes": [{"path": "/w/a.txt", "kind": "update"}]})
    );
    assert_eq!(lines[2]["item"]["type"], "command_execution");
}
