//! `rein serve` driven by the official `openai` Python SDK (installed into a venv by
//! `scripts/test-setup.sh`), pointed at the server with its token as the API key: a plain
//! response, a streamed one, a resumed stream, a background one (with `metadata`) polled
//! to completion, a cancel mid-run, `previous_response_id`, input items and the SDK's
//! error classes, each checked through the SDK's own types (`tests/sdk/openai_responses.py`);
//! its Chat Completions (`tests/sdk/openai_chat.py`); and the stream of a two-day-old stored
//! response resumed (`tests/sdk/openai_resume_old.py`).
//! Ignored, with the reason, where python3 is missing (never in CI: see
//! scripts/test_prereqs.rs).

use std::process::Command;

use pretty_assertions::assert_eq;
use rein_test_support::serve::{
    chat_sdk_outcome, chat_sdk_script, home_for, sdk_outcome, sdk_script, MockModel, Server,
};
use rein_test_support::test_setup::{installed, repo_root};
use serde_json::Value;

#[test]
#[cfg_attr(
    not(rein_has_python),
    ignore = "needs python3 (scripts/test-setup.sh installs the openai SDK into a venv with it)"
)]
fn the_openai_python_sdk_runs_plain_streamed_background_resumed_and_cancelled_responses() {
    assert_eq!(run("openai_responses.py", sdk_script()), sdk_outcome());
}

#[test]
#[cfg_attr(
    not(rein_has_python),
    ignore = "needs python3 (scripts/test-setup.sh installs the openai SDK into a venv with it)"
)]
fn the_openai_python_sdk_runs_plain_continued_streamed_and_foreign_chat_completions() {
    assert_eq!(run("openai_chat.py", chat_sdk_script()), chat_sdk_outcome());
}

/// What `tests/sdk/SCRIPT` printed, run against a server whose model follows `script`.
fn run(script: &str, model_script: Value) -> Value {
    installed("target/openai-venv/installed-openai==3.57.0");
    let model = MockModel::start(model_script);
    let home = home_for(&model);
    let server = Server::start(home.path(), &[]);
    sdk(script, &server, &[])
}

/// What `tests/sdk/SCRIPT URL ARGS…` printed, the venv's python running it with the
/// server's token as the API key.
fn sdk(script: &str, server: &Server, args: &[&str]) -> Value {
    let out = Command::new(repo_root().join("target/openai-venv/bin/python"))
        .arg(repo_root().join("tests/sdk").join(script))
        .arg(&server.url)
        .args(args)
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
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
#[cfg_attr(
    not(rein_has_python),
    ignore = "needs python3 (scripts/test-setup.sh installs the openai SDK into a venv with it)"
)]
fn the_openai_python_sdk_resumes_the_stream_of_a_two_day_old_response() {
    installed("target/openai-venv/installed-openai==3.57.0");
    let model = rein_test_support::serve::hello_model();
    let home = home_for(&model);
    let mut server = Server::start(home.path(), &[]);
    let live = server
        .stream(
            "POST",
            "/v1/responses",
            Some(&serde_json::json!({ "input": "hi", "stream": true })),
        )
        .collect_all();
    let done = &live.last().unwrap().data["response"];
    let id = done["id"].as_str().unwrap().to_owned();
    let created_at = done["created_at"].as_u64().unwrap();
    assert!(server.terminate().success());
    let two_days = 2 * 86_400;
    rein_test_support::serve::age_rollouts(home.path(), two_days * 1000);

    let server = Server::start(home.path(), &[]);
    let after = live[3].data["sequence_number"].to_string();
    let out = sdk("openai_resume_old.py", &server, &[&id, &after]);
    assert_eq!(
        out,
        serde_json::json!({
            "retrieved": true, "created_at": created_at - two_days, "first_restates": true,
            "all_after": true, "accumulated": "Hello there.", "status": "completed",
        })
    );
}
