//! `rein serve`'s Agent Protocol driven by the official `langgraph-sdk` Python client
//! (installed into a venv by `scripts/test-setup.sh`): a plain run, a streamed run, a
//! background run joined, a stream joined again with `Last-Event-ID` after its connection
//! was dropped, a second run under each `multitask_strategy`, a cancel, listing, state,
//! search, the SDK's error classes, and a streamed run whose connection a proxy cuts after
//! its first event, resumed by the SDK's own reconnect with `Last-Event-ID`
//! (`tests/sdk/langgraph_runs.py`); then kill -9 of the
//! server mid-run and the run's state after a restart. Ignored, with the reason, where
//! python3 is missing (never in CI: see scripts/test_prereqs.rs).

use std::path::PathBuf;
use std::process::Command;

use pretty_assertions::assert_eq;
use rein_test_support::serve::{home_for, MockModel, Server};
use rein_test_support::test_setup::{installed, repo_root};
use serde_json::{json, Value};

const PIN: &str = "langgraph-sdk==0.4.14";

fn sdk(server: &Server, args: &[&str]) -> Value {
    let python: PathBuf = repo_root().join("target/langgraph-venv/bin/python");
    let out = Command::new(python)
        .arg(repo_root().join("tests/sdk/langgraph_runs.py"))
        .arg(&server.url)
        .arg(&server.token)
        .args(args)
        .env_remove("LANGGRAPH_API_KEY")
        .env_remove("LANGSMITH_API_KEY")
        .env_remove("LANGCHAIN_API_KEY")
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
    ignore = "needs python3 (scripts/test-setup.sh installs langgraph-sdk into a venv with it)"
)]
fn the_langgraph_sdk_runs_threads_and_runs_rejoins_streams_and_survives_a_kill_9() {
    installed(&format!("target/langgraph-venv/installed-{PIN}"));
    let hang = json!({ "text": "working", "deltas": 1, "fault": { "type": "hang" } });
    let model = MockModel::start(json!({
        "replies": [
            { "text": "First." },
            { "text": "Second.", "deltas": 2 },
            { "text": "Third." },
            hang, hang, hang,
            { "text": "Seventh." },
            { "text": "Eighth.", "deltas": 2 },
            hang
        ],
        "when_exhausted": "echo"
    }));
    let home = home_for(&model);
    let mut server = Server::start(home.path(), &[]);
    let out = sdk(&server, &["main"]);
    assert_eq!(
        out,
        json!({
            "assistants": ["rein"],
            "plain": [["human", "one"], ["ai", "First."]],
            "streamed": {
                "events": ["metadata", "values", "updates", "values", "updates", "end"],
                "last_values": [["human", "two"], ["ai", "Second."]],
                "ids_increase": true
            },
            "background": { "joined": ["ai", "Third."], "status": "success" },
            "dropped": { "status": "running" },
            "reject": 409,
            "rejoined": { "events": ["values", "end"], "all_after": true, "status": "interrupted" },
            "rolled_back": 404,
            "enqueued": "pending",
            "cancelled": "interrupted",
            "queued_joined": ["ai", "Seventh."],
            "runs": [
                ["success", "enqueue"],
                ["interrupted", "rollback"],
                ["interrupted", "reject"],
                ["success", "reject"],
                ["success", "reject"],
                ["success", "reject"]
            ],
            "humans": ["one", "two", "three", "four", "six", "seven"],
            "next": [],
            "history": [true, true, true],
            "found": true,
            "thread_status": "idle",
            "errors": {
                "not_found": 404,
                "bad_request": [400, "webhook"],
                "unauthorized": 401
            },
            "reconnected": {
                "cut": 1,
                "events": ["metadata", "values", "updates", "values", "updates", "end"],
                "same_as_replay": true,
                "answer": [["ai", "Eighth."]]
            }
        })
    );

    let before = sdk(&server, &["crash-before"]);
    let (thread, run) = (
        before["thread"].as_str().unwrap().to_owned(),
        before["run"].as_str().unwrap().to_owned(),
    );
    server.kill9();
    let server = Server::start(home.path(), &[]);
    let after = sdk(&server, &["crash-after", &thread, &run]);
    assert_eq!(
        after,
        json!({
            "status": "interrupted",
            "values": [["human", "crash"]],
            "replayed": ["metadata", "values", "end"],
            "next": ["ai", "echo: after"]
        })
    );
}
