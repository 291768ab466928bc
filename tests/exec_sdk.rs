//! `rein exec` driven by the official `@openai/codex-sdk` npm package (installed by
//! `scripts/test-setup.sh` without its optional dependencies, so no Codex binary exists):
//! `startThread().run()`, `runStreamed()`, `outputSchema` and `resumeThread()` against a
//! real mock model server. Skipped, with the reason printed, only when node or npm is
//! missing.
#![allow(clippy::unwrap_used)]

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};
use support::node::{self, repo_root};
use support::MockModel;

/// The SDK package directory, installing it first if needed; `None` when npm is missing.
fn sdk_dir() -> Option<PathBuf> {
    let entry = node::installed("target/e2e-node/node_modules/@openai/codex-sdk/dist/index.js")?;
    entry.parent()?.parent().map(Path::to_path_buf)
}

#[test]
fn the_codex_sdk_runs_streams_and_resumes_through_rein_exec() {
    let Some(sdk) = sdk_dir() else {
        // scripts/test-setup.sh installs node's SDK in CI: there its absence is a failure.
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must have node and npm for the Codex SDK test (scripts/test-setup.sh)"
        );
        eprintln!("skipped: node and npm are needed to run the Codex SDK");
        return;
    };
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
