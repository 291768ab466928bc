//! `rein acp` driven by the official ACP TypeScript SDK as a client that offers its files
//! and terminals (the SDK validates every request rein makes of it against the protocol's
//! schema; installed by `scripts/test-setup.sh`): `read_file`, `apply_patch` and `shell`
//! go through the client, and the answers it gives reach the model. Ignored, with the
//! reason, where node or npm is missing (never in CI: see scripts/test_prereqs.rs).
#![allow(clippy::unwrap_used)]

use rein_test_support::acp as support;
use rein_test_support::test_setup;

use std::process::Command;

use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use support::{home_for, MockModel};
use test_setup::{installed, repo_root};

#[test]
#[cfg_attr(
    not(rein_has_node),
    ignore = "needs node and npm (scripts/test-setup.sh installs the SDK with them)"
)]
fn the_official_typescript_client_reads_writes_and_runs_for_rein() {
    installed("target/e2e-node/node_modules/@agentclientprotocol/sdk/dist/v1/stable/acp.js");
    let modules = repo_root().join("target/e2e-node/node_modules");
    let model = MockModel::start(json!({
        "replies": [
            { "tool_calls": [{ "call_id": "call_read", "name": "read_file",
                "arguments": { "path": "a.txt" } }] },
            { "tool_calls": [{ "call_id": "call_patch", "name": "apply_patch", "arguments": {
                "input": "*** Begin Patch\n*** Update File: a.txt\n@@\n one\n-TWO\n+three\n*** End Patch\n"
            } }] },
            { "tool_calls": [{ "call_id": "call_ls", "name": "shell",
                "arguments": { "command": ["ls", "-a"] } }] },
            { "text": "Done." }
        ],
        "when_exhausted": "echo"
    }));
    let home = home_for(&model);
    let config = home.path().join("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("\n[acp]\nclient_terminals = true\n");
    std::fs::write(&config, text).unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let cwd_path = cwd.path().canonicalize().unwrap();
    let file = cwd_path.join("a.txt");
    std::fs::write(&file, "one\ntwo\n").unwrap();
    let out = Command::new("node")
        .arg(repo_root().join("tests/sdk/acp_client_fs.mjs"))
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
    assert_eq!(out["stopReason"], "end_turn");
    let session = out["requests"][0]["params"]["sessionId"].clone();
    let terminal = json!({ "sessionId": session, "terminalId": "term-1" });
    assert_eq!(
        out["requests"],
        json!([
            { "method": "fs/read_text_file", "params": {
                "sessionId": session, "path": file, "line": 1, "limit": 2001 } },
            { "method": "fs/read_text_file", "params": { "sessionId": session, "path": file } },
            { "method": "fs/write_text_file", "params": {
                "sessionId": session, "path": file, "content": "one\nthree\n" } },
            { "method": "terminal/create", "params": {
                "sessionId": session, "command": "ls", "args": ["-a"], "cwd": cwd_path,
                "outputByteLimit": 32768 } },
            { "method": "terminal/wait_for_exit", "params": terminal },
            { "method": "terminal/output", "params": terminal },
            { "method": "terminal/release", "params": terminal },
        ])
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "one\ntwo\n");
    let outputs: Vec<Value> = model.requests().last().unwrap()["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == "function_call_output")
        .map(|i| i["output"].clone())
        .collect();
    assert_eq!(outputs[0], json!("     1\tone\n     2\tTWO\n"));
    let ls: Value = serde_json::from_str(outputs[2].as_str().unwrap()).unwrap();
    assert_eq!(ls["output"], "ran in the editor\n");
}
