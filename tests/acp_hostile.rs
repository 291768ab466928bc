//! `rein acp` against hostile input, through the real binary: a model that dresses
//! commands up as read-only ones to run them unasked in the editor's terminal (outside
//! rein's sandbox), a sandboxed command that swaps a symlink in while the editor writes a
//! patched file, an editor line that is not UTF-8, a terminal output of 100 MiB.
#![allow(clippy::unwrap_used)]

#[path = "support/acp.rs"]
mod support;

use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use support::{home_with_terminals, output_for, requests, serve, Acp, MockModel};

/// A model that makes each of `calls` (shell arguments) in turn, one per reply.
fn shell_calls_model(calls: &[Value]) -> MockModel {
    let replies: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, arguments)| {
            json!({ "tool_calls": [{ "call_id": format!("call_{i}"), "name": "shell",
                                     "arguments": arguments }] })
        })
        .chain([json!({ "text": "Done." })])
        .collect();
    MockModel::start(json!({ "replies": replies, "when_exhausted": "echo" }))
}

#[test]
fn commands_dressed_as_read_only_ones_are_asked_before_the_editors_terminal_runs_them() {
    let calls = [
        json!({ "command": ["sort", "-o/outside/x", "in"] }),
        json!({ "command": ["sort", "--out=/outside/x", "in"] }),
        json!({ "command": ["sort", "--compress-program=sh", "in"] }),
        json!({ "command": ["bash", "-c", "ls"], "env": { "BASH_ENV": "evil.sh" } }),
        json!({ "command": ["git", "status"],
                "env": { "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.fsmonitor",
                         "GIT_CONFIG_VALUE_0": "touch /outside/x" } }),
        json!({ "command": ["cat", "f"], "env": { "LD_PRELOAD": "/tmp/evil.so" } }),
        json!({ "command": ["git", "branch", "-D", "victim"] }),
        json!({ "command": ["./ls"] }),
    ];
    let model = shell_calls_model(&calls);
    let home = home_with_terminals(&model);
    let cwd = tempfile::tempdir().unwrap();
    let mut acp = Acp::start(home.path());
    acp.initialize_with(json!({ "terminal": true }));
    let session = acp.new_session(&cwd.path().canonicalize().unwrap());
    let id = acp.prompt(&session, "Look around.");
    let (seen, answer) = serve(&mut acp, &id, |name, _| match name {
        "session/request_permission" => {
            Ok(json!({ "outcome": { "outcome": "selected", "optionId": "reject_once" } }))
        }
        other => panic!("the editor was asked {other} for a command nobody allowed"),
    });
    assert_eq!(answer["result"], json!({ "stopReason": "end_turn" }));
    let asked: Vec<Value> = requests(&seen)
        .iter()
        .map(|r| r["params"]["toolCall"]["toolCallId"].clone())
        .collect();
    let every_call: Vec<Value> = (0..calls.len()).map(|i| json!(format!("call_{i}"))).collect();
    assert_eq!(asked, every_call, "one permission request per call, nothing else");
    for i in 0..calls.len() {
        let output = output_for(&model, &format!("call_{i}"));
        assert_eq!(output, json!("the user denied this action"), "call_{i}");
    }
    acp.finish();
}
