//! `rein serve` driven by the official `openai` npm package (installed under target/e2e-node
//! by `scripts/test-setup.sh`), the same cases and the same expected outcome as the Python
//! SDK's test (`tests/sdk/openai_responses.mjs`). Ignored, with the reason, where node or
//! npm is missing (never in CI: see scripts/test_prereqs.rs).

use std::process::Command;

use pretty_assertions::assert_eq;
use rein_test_support::serve::{
    chat_sdk_outcome, chat_sdk_script, home_for, sdk_outcome, sdk_script, MockModel, Server,
};
use rein_test_support::test_setup::{installed, repo_root};
use serde_json::Value;

#[test]
#[cfg_attr(
    not(rein_has_node),
    ignore = "needs node and npm (scripts/test-setup.sh installs the openai package with them)"
)]
fn the_openai_npm_sdk_runs_plain_streamed_background_resumed_and_cancelled_responses() {
    assert_eq!(run("openai_responses.mjs", sdk_script()), sdk_outcome());
}

#[test]
#[cfg_attr(
    not(rein_has_node),
    ignore = "needs node and npm (scripts/test-setup.sh installs the openai package with them)"
)]
fn the_openai_npm_sdk_runs_plain_continued_streamed_and_foreign_chat_completions() {
    assert_eq!(
        run("openai_chat.mjs", chat_sdk_script()),
        chat_sdk_outcome()
    );
}

/// What `tests/sdk/SCRIPT` printed, run against a server whose model follows `script`.
fn run(script: &str, model_script: Value) -> Value {
    installed("target/e2e-node/node_modules/openai/index.mjs");
    let model = MockModel::start(model_script);
    let home = home_for(&model);
    let server = Server::start(home.path(), &[]);
    let out = Command::new("node")
        .arg(repo_root().join("tests/sdk").join(script))
        .arg(repo_root().join("target/e2e-node/node_modules"))
        .arg(&server.url)
        .env("OPENAI_API_KEY", &server.token)
        .env_remove("OPENAI_BASE_URL")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the SDK script failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}
