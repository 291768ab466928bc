//! `rein acp` driven by the PyPI ACP SDK (`agent-client-protocol`, installed into a venv by
//! `scripts/test-setup.sh`) through its client side: initialize, `session/new`, a plain
//! prompt whose updates end in `end_turn`, and a tool call with a permission round trip.
//! The script checks every message it receives against the SDK's pydantic model of it,
//! strictly (a field the schema does not know counts too). Ignored, with the reason, where
//! python3 is missing (never in CI: see scripts/test_prereqs.rs).
#![allow(clippy::unwrap_used)]

use rein_test_support::acp as support;
use rein_test_support::test_setup;

use std::process::Command;

use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use support::{home_for, MockModel};
use test_setup::{installed, repo_root};

/// The update without what differs from run to run (the message ids).
fn without_message_id(mut update: Value) -> Value {
    if let Some(map) = update.as_object_mut() {
        map.remove("messageId");
    }
    update
}

#[test]
#[cfg_attr(
    not(rein_has_python),
    ignore = "needs python3 (scripts/test-setup.sh installs the SDK into a venv with it)"
)]
fn the_python_sdk_client_drives_a_turn_and_a_permission_with_every_message_valid() {
    installed("target/acp-venv/installed-agent-client-protocol==0.12.1");
    let model = MockModel::start(json!({
        "replies": [
            { "text": "Hello there.", "deltas": 2 },
            { "tool_calls": [{ "call_id": "call_touch", "name": "shell", "arguments": {
                "command": ["touch", "approved.txt"], "with_escalated_permissions": true,
                "justification": "outside"
            } }] },
            { "text": "Done." }
        ],
        "when_exhausted": "echo"
    }));
    let home = home_for(&model);
    let cwd = tempfile::tempdir().unwrap();
    let cwd_path = cwd.path().canonicalize().unwrap();
    let out = Command::new(repo_root().join("target/acp-venv/bin/python"))
        .arg(repo_root().join("tests/sdk/acp_client.py"))
        .arg(support::rein().get_program())
        .arg(&cwd_path)
        .env("REIN_HOME", home.path())
        .env("MOCK_API_KEY", "test-key")
        .env_remove("RUST_LOG")
        .env_remove("PYTHONPATH")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the ACP client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out: Value = serde_json::from_slice(&out.stdout).unwrap();

    assert_eq!(
        out["misfits"],
        json!([]),
        "messages that do not fit the schema"
    );
    // initialize, session/new, the updates, a permission request, two prompt answers.
    assert!(out["checked"].as_u64().unwrap() >= 10, "{out:#}");
    assert_eq!(out["initialize"]["protocolVersion"], 1);
    assert_eq!(out["initialize"]["agentInfo"]["name"], "rein");

    // The commands update follows the session/new answer; it may reach the client's
    // handler before or after the first prompt goes out, so it is looked for anywhere.
    let mut commands = 0;
    let turns: Vec<(Value, Vec<Value>)> = out["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|turn| {
            let updates = turn["updates"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|u| {
                    let is_commands = u["sessionUpdate"] == "available_commands_update";
                    commands += usize::from(is_commands);
                    !is_commands
                })
                .cloned()
                .map(without_message_id)
                .collect();
            (turn["stopReason"].clone(), updates)
        })
        .collect();
    assert_eq!(commands, 1);
    assert_eq!(
        turns,
        vec![
            (
                json!("end_turn"),
                vec![
                    json!({ "sessionUpdate": "agent_message_chunk",
                            "content": { "type": "text", "text": "Hello " } }),
                    json!({ "sessionUpdate": "agent_message_chunk",
                            "content": { "type": "text", "text": "there." } }),
                ]
            ),
            (
                json!("end_turn"),
                vec![
                    json!({ "sessionUpdate": "tool_call", "toolCallId": "call_touch",
                            "title": "touch approved.txt", "kind": "execute",
                            "status": "in_progress",
                            "rawInput": { "command": ["touch", "approved.txt"],
                                          "with_escalated_permissions": true,
                                          "justification": "outside" } }),
                    json!({ "sessionUpdate": "tool_call_update", "toolCallId": "call_touch",
                            "status": "completed", "content": [],
                            "rawOutput": { "type": "exited", "exit": { "type": "code", "code": 0 },
                                           "output": "" } }),
                    json!({ "sessionUpdate": "agent_message_chunk",
                            "content": { "type": "text", "text": "Done." } }),
                ]
            ),
        ]
    );
    assert_eq!(
        out["permissions"],
        json!([{
            "toolCall": {
                "toolCallId": "call_touch", "status": "pending", "kind": "execute",
                "title": "touch approved.txt",
                "content": [{ "type": "content", "content": { "type": "text",
                    "text": "the command asks to run outside the sandbox: outside" } }]
            },
            "options": [
                { "optionId": "allow_once", "name": "Allow once", "kind": "allow_once" },
                { "optionId": "allow_always", "name": "Allow for this session", "kind": "allow_always" },
                { "optionId": "reject_once", "name": "Reject", "kind": "reject_once" },
                { "optionId": "reject_always", "name": "Reject for this session", "kind": "reject_always" }
            ]
        }])
    );
    assert!(
        cwd_path.join("approved.txt").exists(),
        "the allowed command ran"
    );
}
