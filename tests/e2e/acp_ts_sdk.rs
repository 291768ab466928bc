//! `rein acp` driven by the official ACP TypeScript SDK (`@agentclientprotocol/sdk`, which
//! validates every message it receives against the protocol's schema; installed by
//! `scripts/test-setup.sh`): a plain turn, a permission round trip, `session/list`, and
//! `session/load` in a second process with the history replayed before the answer.
//! Ignored, with the reason, where node or npm is missing (never in CI: see
//! scripts/test_prereqs.rs).
#![allow(clippy::unwrap_used)]

use rein_test_support::acp as support;
use rein_test_support::test_setup;

use std::path::PathBuf;
use std::process::Command;

use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use support::{home_for, MockModel};
use test_setup::{installed, repo_root};

/// The node_modules holding the SDK.
fn node_modules() -> PathBuf {
    installed("target/e2e-node/node_modules/@agentclientprotocol/sdk/dist/v1/stable/acp.js");
    repo_root().join("target/e2e-node/node_modules")
}

fn without_message_ids(mut v: Value) -> Value {
    if let Some(map) = v.as_object_mut() {
        map.remove("messageId");
    }
    v
}

#[test]
#[cfg_attr(
    not(rein_has_node),
    ignore = "needs node and npm (scripts/test-setup.sh installs the SDK with them)"
)]
fn the_official_typescript_client_drives_a_turn_a_permission_and_a_load() {
    let modules = node_modules();
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
    let out = Command::new("node")
        .arg(repo_root().join("tests/sdk/acp_client.mjs"))
        .arg(&modules)
        .arg(support::rein().get_program())
        .arg(&cwd_path)
        .env("REIN_HOME", home.path())
        .env("MOCK_API_KEY", "test-key")
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the ACP client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out: Value = serde_json::from_slice(&out.stdout).unwrap();
    let session = out["sessionId"].as_str().unwrap();

    assert_eq!(out["initialize"]["agentInfo"]["name"], "rein");
    let stops: Vec<&Value> = out["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| &t["stopReason"])
        .collect();
    assert_eq!(stops, vec!["end_turn", "end_turn"]);
    let chunks: Vec<Value> = out["turns"][0]["updates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .cloned()
        .map(without_message_ids)
        .collect();
    assert_eq!(
        chunks,
        vec![
            json!({ "sessionUpdate": "agent_message_chunk", "content": { "type": "text", "text": "Hello " } }),
            json!({ "sessionUpdate": "agent_message_chunk", "content": { "type": "text", "text": "there." } }),
        ]
    );
    assert_eq!(
        out["permissions"],
        json!([{
            "sessionId": session,
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
    let listed: Vec<&str> = out["listed"]["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["sessionId"].as_str().unwrap())
        .collect();
    assert_eq!(listed, vec![session]);

    // The load replays both turns before its answer; after it come only the commands and
    // the title (if they arrive before the client hangs up).
    let (replayed, after): (Vec<Value>, Vec<Value>) = out["replayed"]
        .as_array()
        .unwrap()
        .iter()
        .cloned()
        .partition(|r| r["beforeAnswer"] == true);
    let after: Vec<&str> = after
        .iter()
        .map(|r| r["update"]["sessionUpdate"].as_str().unwrap())
        .collect();
    assert!(
        after
            .iter()
            .all(|k| ["available_commands_update", "session_info_update"].contains(k)),
        "{after:?}"
    );
    let kinds: Vec<&str> = replayed
        .iter()
        .map(|r| r["update"]["sessionUpdate"].as_str().unwrap())
        .filter(|k| *k != "usage_update")
        .collect();
    assert_eq!(
        kinds,
        vec![
            "user_message_chunk",
            "agent_message_chunk",
            "user_message_chunk",
            "tool_call",
            "tool_call_update",
            "agent_message_chunk",
        ]
    );
    let live_call = out["turns"][1]["updates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call")
        .unwrap();
    let replayed_call = replayed
        .iter()
        .find(|r| r["update"]["sessionUpdate"] == "tool_call")
        .unwrap();
    assert_eq!(&replayed_call["update"], live_call);
}
