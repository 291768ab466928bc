//! The mapping from kernel events to `codex exec --json` lines, one behaviour per test.
#![allow(clippy::unwrap_used)]

use pretty_assertions::assert_eq;
use rein_protocol::{
    Decliner, ErrorCode, Event, EventMsg, ExitStatus, FileDiff, PlanStep, ThreadId, TokenUsage,
    ToolAction, ToolOutcome,
};
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

fn begin(call_id: &str, name: &str, action: ToolAction) -> EventMsg {
    EventMsg::ToolCallBegin {
        call_id: call_id.into(),
        name: name.into(),
        arguments: "{}".into(),
        action,
    }
}

fn end(call_id: &str, outcome: ToolOutcome) -> EventMsg {
    EventMsg::ToolCallEnd {
        call_id: call_id.into(),
        success: outcome.succeeded(),
        duration_ms: 5,
        outcome,
    }
}

fn exec(command: &str) -> ToolAction {
    ToolAction::Exec {
        argv: vec!["sh".into(), "-c".into(), command.into()],
        command: command.into(),
        cwd: "/w".into(),
        background: false,
        commands: vec![],
    }
}

#[test]
fn a_shell_call_is_a_command_execution_with_exit_code_and_output() {
    let lines = run(vec![
        begin("c1", "shell", exec("echo 'hi there'")),
        EventMsg::ToolOutputDelta {
            call_id: "c1".into(),
            delta: "hi there\n".into(),
        },
        end(
            "c1",
            ToolOutcome::Exited {
                exit: ExitStatus::Code { code: 0 },
                output: "hi there\n".into(),
            },
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
fn timeouts_signals_and_declines_keep_their_facts() {
    let lines = run(vec![
        begin("t", "shell", exec("sleep 9")),
        end(
            "t",
            ToolOutcome::Exited {
                exit: ExitStatus::TimedOut { after_ms: 10 },
                output: String::new(),
            },
        ),
        begin("d", "shell", exec("rm -rf /")),
        end(
            "d",
            ToolOutcome::Declined {
                by: Decliner::User,
                reason: "the user denied this action".into(),
            },
        ),
    ]);
    assert_eq!(lines[1]["item"]["exit_code"], 124);
    assert_eq!(lines[1]["item"]["status"], "failed");
    assert_eq!(lines[3]["item"]["status"], "declined");
    assert_eq!(
        lines[3]["item"]["aggregated_output"],
        "the user denied this action"
    );
}

#[test]
fn a_patch_is_one_completed_file_change_listing_the_files_it_changed() {
    let planned: Vec<FileDiff> = serde_json::from_value(json!([
        {"path": "/w/a.txt", "kind": "add", "unified_diff": "+x\n"},
    ]))
    .unwrap();
    let applied: Vec<FileDiff> = serde_json::from_value(json!([
        {"path": "/w/a.txt", "kind": "add", "unified_diff": "+x\n"},
        {"path": "/w/b.rs", "kind": "update", "move_to": "/w/c.rs", "unified_diff": ""},
    ]))
    .unwrap();
    let lines = run(vec![
        begin("p", "apply_patch", ToolAction::Edit { changes: planned }),
        end("p", ToolOutcome::Patched { changes: applied }),
    ]);
    assert_eq!(
        lines,
        vec![
            json!({"type": "item.completed", "item": {"id": "item_0", "type": "file_change", "status": "completed",
            "changes": [{"path": "/w/a.txt", "kind": "add"}, {"path": "/w/c.rs", "kind": "update"}]}})
        ]
    );
}

#[test]
fn a_file_tool_call_is_a_command_execution_of_the_call() {
    let lines = run(vec![
        begin(
            "r",
            "read_file",
            ToolAction::Read {
                path: "/w/notes.txt".into(),
            },
        ),
        end(
            "r",
            ToolOutcome::Returned {
                text: "     1\talpha\n".into(),
                structured: None,
                content: Vec::new(),
            },
        ),
    ]);
    assert_eq!(
        lines[1]["item"],
        json!({"id": "item_0", "type": "command_execution", "command": "read_file /w/notes.txt",
            "aggregated_output": "     1\talpha\n", "exit_code": null, "status": "completed"})
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
        begin("x", "read_file", ToolAction::Read { path: "a".into() }),
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
    assert_eq!(lines[2]["item"]["type"], "command_execution");
    assert_eq!(lines[2]["item"]["status"], "failed");
    assert_eq!(lines[3]["error"]["message"], "down");
}
