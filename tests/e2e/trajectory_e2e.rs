//! `rein sessions trajectory` over a session recorded by `rein exec` against a real
//! `rein mock-model`: a shell command, a patch and a failed command, each a step with its
//! input, its previewed observation and its status, and the turn's outcome.
#![allow(clippy::unwrap_used)]

use rein_test_support::app_server as app_support;

use pretty_assertions::assert_eq;
use serde_json::{json, Value};

use app_support::{home_for, rein_ok, MockModel};

fn script() -> Value {
    let call = |id: &str, name: &str, arguments: Value| json!({ "call_id": id, "name": name, "arguments": arguments });
    json!({ "replies": [
        { "tool_calls": [call("call_echo", "shell", json!({ "command": ["echo", "hello"] }))] },
        { "tool_calls": [call("call_patch", "apply_patch", json!({
            "input": "*** Begin Patch\n*** Add File: notes.txt\n+note\n*** End Patch\n"
        }))] },
        { "tool_calls": [call("call_fail", "shell", json!({ "command": ["sh", "-c", "echo oops; exit 3"] }))] },
        { "text": "Done, one command failed." }
    ] })
}

#[test]
fn a_sessions_trajectory_lists_each_step_and_the_outcome() {
    let mock = MockModel::start(script());
    let home = home_for(&mock);
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    let out = rein_ok(
        home.path(),
        &[
            "exec",
            "--json",
            "--dangerously-bypass-approvals-and-sandbox",
            "-C",
            cwd.to_str().unwrap(),
            "Make notes.",
        ],
    );
    let first: Value = serde_json::from_str(
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let id = first["thread_id"].as_str().unwrap();

    let out = rein_ok(home.path(), &["sessions", "trajectory", id, "--json"]);
    let mut turns: Value = serde_json::from_slice(&out.stdout).unwrap();
    // Durations are the machine's; everything else is the recording's.
    let turn = &mut turns[0];
    assert!(turn["duration_ms"].is_u64());
    turn["duration_ms"] = json!(0);
    let turn_id = turn["turn_id"].clone();
    for step in turn["steps"].as_array_mut().unwrap() {
        assert!(step["duration_ms"].is_u64());
        step["duration_ms"] = json!(0);
    }
    let exec = |argv: Value, command: &str, commands: Value| json!({ "type": "exec", "argv": argv, "command": command, "cwd": cwd, "commands": commands });
    assert_eq!(
        turns,
        json!([{
            "turn_id": turn_id,
            "kind": "regular",
            "input": "Make notes.",
            "steps": [
                {
                    "action": "shell",
                    "action_input": exec(json!(["echo", "hello"]), "echo hello",
                        json!([{ "type": "unknown", "command": "echo hello" }])),
                    "observation": "hello\n",
                    "duration_ms": 0,
                    "screenshot_id": null,
                    "status": "succeeded"
                },
                {
                    "action": "apply_patch",
                    "action_input": { "type": "edit", "changes": [{
                        "path": cwd.join("notes.txt"), "kind": "add",
                        "unified_diff": "+note\n"
                    }] },
                    "observation": cwd.join("notes.txt").display().to_string(),
                    "duration_ms": 0,
                    "screenshot_id": null,
                    "status": "succeeded"
                },
                {
                    "action": "shell",
                    "action_input": exec(json!(["sh", "-c", "echo oops; exit 3"]),
                        "sh -c 'echo oops; exit 3'",
                        json!([{ "type": "unknown", "command": "sh -c 'echo oops; exit 3'" }])),
                    "observation": "oops\n",
                    "duration_ms": 0,
                    "screenshot_id": null,
                    "status": "failed"
                }
            ],
            "outcome": { "status": "success" },
            "last_agent_message": "Done, one command failed.",
            "duration_ms": 0
        }])
    );

    // The human form names each step and the outcome.
    let out = rein_ok(home.path(), &["sessions", "trajectory", id]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("· success"), "{text}");
    assert!(
        text.contains("3. shell ") && text.contains("→ failed"),
        "{text}"
    );
    assert!(
        text.contains("2. apply_patch ") && text.contains("→ ok"),
        "{text}"
    );
}

#[test]
fn the_app_server_serves_the_trajectory_to_experimental_clients_only() {
    let mock = MockModel::start(script());
    let home = home_for(&mock);
    let dir = tempfile::tempdir().unwrap();
    let mut server = app_support::AppServer::start(home.path(), &[]);
    server.initialize();
    let thread = server.start_thread(json!({
        "cwd": dir.path(), "approvalPolicy": "never", "sandbox": "danger-full-access"
    }));
    server.request(
        "turn/start",
        json!({ "threadId": thread, "input": [{ "type": "text", "text": "Make notes." }] }),
    );
    server.until(|m| app_support::method(m) == "turn/completed");
    let answer = server.call("rein/thread/trajectory", json!({ "threadId": thread }));
    let result = &answer["result"];
    assert!(answer.get("error").is_none(), "{answer}");
    assert_eq!(result["threadId"], thread.as_str());
    let turn = &result["turns"][0];
    assert_eq!(turn["outcome"], json!({ "status": "success" }));
    let steps: Vec<(&str, &str)> = turn["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["action"].as_str().unwrap(), s["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        steps,
        [
            ("shell", "succeeded"),
            ("apply_patch", "succeeded"),
            ("shell", "failed")
        ]
    );

    // Without the opt-in the method is refused, and the connection keeps serving.
    let mut plain = app_support::AppServer::start(home.path(), &[]);
    plain.call(
        "initialize",
        json!({"clientInfo": {"name": "plain", "title": null, "version": "0.0.1"}}),
    );
    let refused = plain.call("rein/thread/trajectory", json!({ "threadId": thread }));
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert!(refused["error"]["message"]
        .as_str()
        .unwrap()
        .contains("experimentalApi"));
    let listed = plain.call("thread/loaded/list", json!({}));
    assert!(listed.get("result").is_some(), "{listed}");
}
