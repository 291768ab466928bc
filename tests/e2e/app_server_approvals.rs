//! Approvals through `rein app-server`: a shell call the policy does not trust becomes an
//! `item/commandExecution/requestApproval` request to the client; the client's Codex
//! decision (accept, decline, cancel) decides whether the command runs and how the turn
//! goes on, and `serverRequest/resolved` closes the request.
#![allow(clippy::unwrap_used)]

use rein_test_support::app_server as support;

use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use support::{home_for, method, AppServer, MockModel};

struct RoundTrip {
    seen: Vec<Value>,
    file_created: bool,
    model_requests: usize,
}

struct Session {
    server: AppServer,
    thread: String,
    cwd: tempfile::TempDir,
    _home: tempfile::TempDir,
}

/// A server on `model`, a thread in a fresh directory under the given policies, and a turn
/// started on it with `text`.
fn turn_on_a_new_thread(model: &MockModel, approval: &str, sandbox: &str, text: &str) -> Session {
    let home = home_for(model);
    let mut server = AppServer::start(home.path(), &[]);
    server.initialize();
    let cwd = tempfile::tempdir().unwrap();
    let thread = server.start_thread(json!({
        "cwd": cwd.path(), "approvalPolicy": approval, "sandbox": sandbox
    }));
    server.request(
        "turn/start",
        json!({ "threadId": thread, "input": [{ "type": "text", "text": text }] }),
    );
    Session {
        server,
        thread,
        cwd,
        _home: home,
    }
}

fn approval_round_trip(decision: Value) -> RoundTrip {
    let model = MockModel::start(json!({
        "replies": [
            { "tool_calls": [{ "call_id": "call_touch", "name": "shell",
                               "arguments": { "command": ["touch", "approved-file.txt"] } }] },
            { "text": "Done with the file." }
        ],
        "when_exhausted": "echo"
    }));
    let Session {
        mut server,
        thread,
        cwd,
        _home,
    } = turn_on_a_new_thread(
        &model,
        "untrusted",
        "danger-full-access",
        "Create a file please.",
    );
    let mut seen = server.until(|m| method(m) == "item/commandExecution/requestApproval");
    let ask = seen.last().unwrap().clone();
    assert_eq!(ask["params"]["threadId"], json!(thread));
    assert_eq!(ask["params"]["itemId"], "call_touch");
    assert_eq!(ask["params"]["command"], "touch approved-file.txt");
    server.send(&json!({ "id": ask["id"], "result": { "decision": decision } }));
    seen.extend(server.until(|m| method(m) == "turn/completed"));
    let resolved: Vec<&Value> = seen
        .iter()
        .filter(|m| method(m) == "serverRequest/resolved")
        .collect();
    assert_eq!(resolved.len(), 1, "exactly one resolution");
    assert_eq!(resolved[0]["params"]["requestId"], ask["id"]);
    let trip = RoundTrip {
        seen,
        file_created: cwd.path().join("approved-file.txt").exists(),
        model_requests: model.requests().len(),
    };
    assert!(server.finish().success());
    trip
}

fn command_item_completed(seen: &[Value]) -> Option<&Value> {
    seen.iter()
        .find(|m| {
            method(m) == "item/completed" && m["params"]["item"]["type"] == "commandExecution"
        })
        .map(|m| &m["params"]["item"])
}

fn statuses(seen: &[Value]) -> Vec<Value> {
    seen.iter()
        .filter(|m| method(m) == "thread/status/changed")
        .map(|m| m["params"]["status"].clone())
        .collect()
}

#[test]
fn accepted_command_runs_and_the_turn_completes() {
    let trip = approval_round_trip(json!("accept"));
    assert!(trip.file_created);
    let item = command_item_completed(&trip.seen).unwrap();
    assert_eq!(item["status"], "completed");
    assert_eq!(item["id"], "call_touch");
    let started = trip
        .seen
        .iter()
        .position(|m| {
            method(m) == "item/started" && m["params"]["item"]["type"] == "commandExecution"
        })
        .unwrap();
    let asked = trip
        .seen
        .iter()
        .position(|m| method(m) == "item/commandExecution/requestApproval")
        .unwrap();
    assert!(
        started < asked,
        "the item is started before the approval is asked"
    );
    assert!(statuses(&trip.seen)
        .contains(&json!({ "type": "active", "activeFlags": ["waitingOnApproval"] })));
    let turn = &trip.seen.last().unwrap()["params"]["turn"];
    assert_eq!(turn["status"], "completed");
    assert_eq!(turn["items"][0]["text"], "Done with the file.");
    assert_eq!(trip.model_requests, 2);
}

#[test]
fn accept_with_execpolicy_amendment_counts_as_accept() {
    let trip = approval_round_trip(json!({
        "acceptWithExecpolicyAmendment": { "execpolicy_amendment": ["touch", "approved-file.txt"] }
    }));
    assert!(trip.file_created);
}

#[test]
fn declined_command_does_not_run_and_the_model_is_told() {
    let trip = approval_round_trip(json!("decline"));
    assert!(!trip.file_created);
    let item = command_item_completed(&trip.seen).unwrap();
    assert_eq!(item["status"], "declined");
    let turn = &trip.seen.last().unwrap()["params"]["turn"];
    assert_eq!(turn["status"], "completed");
    assert_eq!(trip.model_requests, 2, "the refusal went back to the model");
}

#[test]
fn cancelled_command_does_not_run_and_interrupts_the_turn() {
    let trip = approval_round_trip(json!("cancel"));
    assert!(!trip.file_created);
    let turn = &trip.seen.last().unwrap()["params"]["turn"];
    assert_eq!(turn["status"], "interrupted");
    assert_eq!(trip.model_requests, 1);
}

#[test]
fn a_patch_turn_shows_a_file_change_item_and_the_turn_diff() {
    let model = MockModel::start(json!({
        "replies": [
            { "tool_calls": [{ "call_id": "call_patch", "name": "apply_patch", "arguments": {
                "input": "*** Begin Patch\n*** Add File: hello.txt\n+hello from the patch\n*** End Patch\n"
            } }] },
            { "text": "Wrote hello.txt." }
        ]
    }));
    let Session {
        mut server,
        cwd,
        _home,
        ..
    } = turn_on_a_new_thread(&model, "never", "workspace-write", "write hello");
    let seen = server.until(|m| method(m) == "turn/completed");
    assert_eq!(
        std::fs::read_to_string(cwd.path().join("hello.txt")).unwrap(),
        "hello from the patch\n"
    );
    let item = seen
        .iter()
        .find(|m| method(m) == "item/completed" && m["params"]["item"]["type"] == "fileChange")
        .map(|m| &m["params"]["item"])
        .unwrap();
    assert_eq!(item["status"], "completed");
    assert_eq!(
        item["changes"][0]["path"]
            .as_str()
            .unwrap()
            .ends_with("hello.txt"),
        true
    );
    assert_eq!(item["changes"][0]["kind"]["type"], "add");
    assert!(item["changes"][0]["diff"]
        .as_str()
        .unwrap()
        .contains("+hello from the patch"));
    let diff = seen
        .iter()
        .find(|m| method(m) == "turn/diff/updated")
        .unwrap();
    assert!(diff["params"]["diff"]
        .as_str()
        .unwrap()
        .contains("hello.txt"));
    assert_eq!(
        seen.last().unwrap()["params"]["turn"]["status"],
        "completed"
    );
}

/// A compaction or review asked for while a turn waits on the client's approval is queued
/// behind that turn and answered at once: the connection stays free to answer the
/// approval, and both run after the turn.
#[test]
fn maintenance_during_a_pending_approval_neither_blocks_nor_is_lost() {
    let model = MockModel::start(json!({
        "replies": [
            { "tool_calls": [{ "call_id": "call_touch", "name": "shell",
                               "arguments": { "command": ["touch", "approved-file.txt"] } }] },
            { "text": "Done with the file." },
            { "text": "summary of the talk" },
            { "text": "looks fine" }
        ]
    }));
    let Session {
        mut server,
        thread,
        cwd,
        _home,
    } = turn_on_a_new_thread(&model, "untrusted", "danger-full-access", "Create a file.");
    let seen = server.until(|m| method(m) == "item/commandExecution/requestApproval");
    let ask = seen.last().unwrap().clone();
    let compact = server.call("thread/compact/start", json!({ "threadId": thread }));
    assert_eq!(compact["result"], json!({}));
    let review = server.call(
        "review/start",
        json!({ "threadId": thread, "target": { "type": "uncommittedChanges" } }),
    );
    let review_turn = review["result"]["turn"]["id"].clone();
    assert!(review_turn.is_string(), "{review:#}");
    server.send(&json!({ "id": ask["id"], "result": { "decision": "accept" } }));
    let mut ended = Vec::new();
    while ended.len() < 3 {
        let seen = server.until(|m| method(m) == "turn/completed");
        ended.push(seen.last().unwrap()["params"]["turn"].clone());
    }
    assert!(cwd.path().join("approved-file.txt").exists());
    assert!(
        ended.iter().all(|t| t["status"] == "completed"),
        "{ended:#?}"
    );
    assert_eq!(
        ended[2]["id"], review_turn,
        "the review ran last, under its id"
    );
    assert!(server.finish().success());
}

#[test]
fn sort_options_that_write_or_run_a_program_are_asked_under_untrusted_in_every_getopt_form() {
    // Each of these wrote a file or ran a program unasked: the judge matched `-o` and
    // `--output` as exact words only, and never read the call's `env`.
    let forms = [
        json!({ "command": ["sort", "-oescaped-1.txt", "in.txt"] }),
        json!({ "command": ["sort", "--out=escaped-2.txt", "in.txt"] }),
        json!({ "command": ["sort", "--compress-program=sh", "-S", "1", "in.txt"] }),
        json!({ "command": ["cat", "in.txt"], "env": { "LD_PRELOAD": "/tmp/evil.so" } }),
        json!({ "command": ["bash", "-c", "ls"], "env": { "BASH_ENV": "evil.sh" } }),
        json!({ "command": ["git", "status"],
                "env": { "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.fsmonitor",
                         "GIT_CONFIG_VALUE_0": "touch escaped-3.txt" } }),
    ];
    let replies: Vec<Value> = forms
        .iter()
        .enumerate()
        .map(|(i, arguments)| {
            json!({ "tool_calls": [{ "call_id": format!("call_sort_{i}"), "name": "shell",
                                     "arguments": arguments }] })
        })
        .chain([json!({ "text": "Sorted." })])
        .collect();
    let model = MockModel::start(json!({ "replies": replies, "when_exhausted": "echo" }));
    let Session {
        mut server,
        cwd,
        _home,
        ..
    } = turn_on_a_new_thread(&model, "untrusted", "danger-full-access", "Sort it.");
    std::fs::write(cwd.path().join("in.txt"), "b\na\n").unwrap();
    let mut asked = Vec::new();
    loop {
        let m = server.recv();
        match method(&m) {
            "item/commandExecution/requestApproval" => {
                asked.push(m["params"]["itemId"].clone());
                server.send(&json!({ "id": m["id"], "result": { "decision": "decline" } }));
            }
            "turn/completed" => break,
            _ => {}
        }
    }
    let every_call: Vec<Value> = (0..forms.len())
        .map(|i| json!(format!("call_sort_{i}")))
        .collect();
    assert_eq!(asked, every_call);
    for escaped in ["escaped-1.txt", "escaped-2.txt", "escaped-3.txt"] {
        assert!(!cwd.path().join(escaped).exists(), "{escaped}");
    }
    assert!(server.finish().success());
}
