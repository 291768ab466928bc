//! `rein exec` driven by the official `@openai/codex-sdk` npm package (installed by
//! `scripts/test-setup.sh` without its optional dependencies, so no Codex binary exists):
//! `startThread().run()`, `runStreamed()`, `outputSchema` and `resumeThread()` against a
//! real mock model server. Ignored, with the reason, where node or npm is missing (never
//! in CI: see scripts/test_prereqs.rs).
#![allow(clippy::unwrap_used)]

use rein_test_support::exec as support;
use rein_test_support::test_setup;

use std::path::PathBuf;
use std::process::Command;

use serde_json::{json, Value};
use support::MockModel;
use test_setup::{installed, repo_root};

/// The SDK package directory.
fn sdk_dir() -> PathBuf {
    let entry = installed("target/e2e-node/node_modules/@openai/codex-sdk/dist/index.js");
    entry.parent().unwrap().parent().unwrap().to_owned()
}

#[test]
#[cfg_attr(
    not(rein_has_node),
    ignore = "needs node and npm (scripts/test-setup.sh installs the SDK with them)"
)]
fn the_codex_sdk_runs_streams_and_resumes_through_rein_exec() {
    let sdk = sdk_dir();
    let mock = MockModel::start(json!({"replies": [
        {"tool_calls": [{"name": "shell", "arguments": {"command": ["echo", "hello-from-sdk"]}}]},
        {"text": "Hello from the mock model.", "deltas": 3},
        {"text": "Streamed hello.", "reasoning": "Greet again."},
        {"text": "{\"status\":\"ok\"}"},
        {"text": "Goodbye (resumed)."}
    ]}));
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let out = Command::new("node")
        .arg(repo_root().join("tests/sdk/codex_sdk.mjs"))
        .arg(&sdk)
        .arg(env!("CARGO_BIN_EXE_rein"))
        .arg(&mock.base_url)
        .arg(work.path())
        .env("REIN_HOME", home.path())
        .env_remove("OPENAI_API_KEY")
        .env_remove("CODEX_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "node failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();

    let run = &report["run"];
    assert_eq!(run["finalResponse"], "Hello from the mock model.", "{run}");
    let items = run["items"].as_array().unwrap();
    assert_eq!(items.len(), 2, "{run}");
    assert_eq!(items[0]["type"], "command_execution");
    assert_eq!(items[0]["command"], "echo hello-from-sdk");
    assert_eq!(items[0]["aggregated_output"], "hello-from-sdk\n");
    assert_eq!(items[0]["exit_code"], 0);
    assert_eq!(items[0]["status"], "completed");
    assert_eq!(
        items[1],
        json!({"id": "item_1", "type": "agent_message", "text": "Hello from the mock model."})
    );
    assert!(run["usage"]["input_tokens"].is_number(), "{run}");
    assert_eq!(run["threadId"].as_str().unwrap().len(), 36);

    let streamed = &report["runStreamed"];
    let types: Vec<&str> = streamed["events"]
        .as_array()
        .unwrap_or_else(|| panic!("{streamed}"))
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        [
            "thread.started",
            "turn.started",
            "item.completed",
            "item.completed",
            "turn.completed"
        ]
    );
    assert_eq!(streamed["events"][2]["item"]["type"], "reasoning");
    assert_eq!(streamed["events"][3]["item"]["text"], "Streamed hello.");
    assert_ne!(streamed["threadId"], run["threadId"]);

    assert_eq!(
        report["outputSchema"]["finalResponse"],
        "{\"status\":\"ok\"}"
    );

    let resume = &report["resume"];
    assert_eq!(resume["finalResponse"], "Goodbye (resumed).", "{resume}");
    assert_eq!(resume["threadId"], run["threadId"]);
    // The resumed request carried the first turn's history.
    let last = mock.requests().pop().unwrap().to_string();
    assert!(
        last.contains("Say hello.") && last.contains("And now say goodbye."),
        "{last}"
    );
}
