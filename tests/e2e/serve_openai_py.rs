//! `rein serve` driven by the official `openai` Python SDK (installed into a venv by
//! `scripts/test-setup.sh`), pointed at the server with its token as the API key: a plain
//! response, a streamed one, a resumed stream, a background one polled to completion, a
//! cancel mid-run, `previous_response_id`, input items and the SDK's error classes, each
//! checked through the SDK's own types (`tests/sdk/openai_responses.py`). Ignored, with the
//! reason, where python3 is missing (never in CI: see scripts/test_prereqs.rs).

use std::process::Command;

use pretty_assertions::assert_eq;
use rein_test_support::serve::{home_for, MockModel, Server};
use rein_test_support::test_setup::{installed, repo_root};
use serde_json::{json, Value};

#[test]
#[cfg_attr(
    not(rein_has_python),
    ignore = "needs python3 (scripts/test-setup.sh installs the openai SDK into a venv with it)"
)]
fn the_openai_python_sdk_runs_plain_streamed_background_resumed_and_cancelled_responses() {
    installed("target/openai-venv/installed-openai==3.57.0");
    let model = MockModel::start(json!({
        "replies": [
            { "text": "Hello there.", "deltas": 2 },
            { "text": "Streamed here.", "deltas": 3 },
            { "text": "Background." },
            { "text": "thinking", "deltas": 1, "fault": { "type": "hang" } }
        ],
        "when_exhausted": "echo"
    }));
    let home = home_for(&model);
    let server = Server::start(home.path(), &[]);
    let out = Command::new(repo_root().join("target/openai-venv/bin/python"))
        .arg(repo_root().join("tests/sdk/openai_responses.py"))
        .arg(&server.url)
        .env("OPENAI_API_KEY", &server.token)
        .env_remove("OPENAI_BASE_URL")
        .env_remove("PYTHONPATH")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the SDK script failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out: Value = serde_json::from_slice(&out.stdout).unwrap();
    let streamed_types = json!([
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed"
    ]);
    assert_eq!(
        out,
        json!({
            "misfits": [],
            "plain": { "status": "completed", "text": "Hello there.", "model": "mock" },
            "streamed": {
                "types": streamed_types,
                "text": "Streamed here.",
                "final": "Streamed here.",
                "numbers_increase": true
            },
            "resumed": {
                "types": [
                    "response.output_text.done",
                    "response.content_part.done",
                    "response.output_item.done",
                    "response.completed"
                ],
                "all_after": true
            },
            "background": {
                "status": "completed",
                "text": "Background.",
                "previous_is_plain": true,
                "polled_until_final": true
            },
            "cancelled": { "status": "cancelled", "again": "cancelled" },
            "continued": { "status": "completed", "text": "echo: and now?" },
            "input_items": [{ "role": "user", "text": "and now?" }],
            "errors": {
                "not_found": 404,
                "bad_request": [400, "temperature"],
                "unauthorized": 401
            }
        })
    );
}
