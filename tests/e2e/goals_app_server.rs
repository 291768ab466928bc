//! `thread/goal/get|set|clear` and the `thread/goal/updated|cleared` notifications over
//! `rein app-server`'s stdio; the harness checks every message against Codex's schema
//! (tests/fixtures/codex-schema/v2/ThreadGoal*.json, ServerNotification.json).
#![allow(clippy::unwrap_used)]

use rein_test_support::app_server as support;

use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use support::{home_for, method, AppServer, MockModel};

fn result(answer: Value) -> Value {
    assert!(answer.get("error").is_none(), "{answer}");
    answer["result"].clone()
}

fn goal_update(m: &Value) -> Option<&Value> {
    (method(m) == "thread/goal/updated").then(|| &m["params"]["goal"])
}

#[test]
fn a_goal_is_set_continued_by_the_kernel_completed_paused_and_cleared() {
    let model = MockModel::start(json!({ "replies": [
        { "tool_calls": [{ "name": "update_goal", "arguments": { "status": "complete" } }] },
        { "text": "All done." }
    ], "when_exhausted": "error" }));
    let home = home_for(&model);
    let cwd = tempfile::tempdir().unwrap();
    let mut server = AppServer::start(home.path(), &[]);
    server.initialize();
    let thread = server.start_thread(json!({ "cwd": cwd.path() }));

    let set = result(server.call(
        "thread/goal/set",
        json!({ "threadId": thread, "objective": "say hello", "tokenBudget": 100000 }),
    ));
    let goal = &set["goal"];
    assert_eq!(
        (
            &goal["threadId"],
            &goal["objective"],
            &goal["status"],
            &goal["tokenBudget"]
        ),
        (
            &json!(thread),
            &json!("say hello"),
            &json!("active"),
            &json!(100000)
        )
    );
    // The kernel starts the goal's turn itself; the model reports it complete (no
    // criteria to check) and the turn ends.
    let seen = server.until(|m| method(m) == "turn/completed");
    let statuses: Vec<&Value> = seen
        .iter()
        .filter_map(goal_update)
        .map(|g| &g["status"])
        .collect();
    assert_eq!(statuses.last(), Some(&&json!("complete")), "{seen:#?}");
    assert!(seen.iter().any(|m| method(m) == "turn/started"));

    let got = result(server.call("thread/goal/get", json!({ "threadId": thread })));
    assert_eq!(got["goal"]["status"], "complete");
    assert!(got["goal"]["tokensUsed"].as_i64().unwrap() > 0, "{got}");

    // A status change keeps the objective and usage.
    let paused = result(server.call(
        "thread/goal/set",
        json!({ "threadId": thread, "status": "paused" }),
    ));
    assert_eq!(paused["goal"]["status"], "paused");
    assert_eq!(paused["goal"]["tokensUsed"], got["goal"]["tokensUsed"]);
    assert_eq!(paused["goal"]["objective"], "say hello");

    // The notification and the answer both come (the notification first: an answer
    // follows the events its op caused).
    let id = server.request("thread/goal/clear", json!({ "threadId": thread }));
    let seen = server.until(|m| m.get("id") == Some(&id) && m.get("method").is_none());
    assert!(
        seen.iter().any(|m| method(m) == "thread/goal/cleared"),
        "{seen:#?}"
    );
    assert_eq!(
        result(seen.last().unwrap().clone()),
        json!({ "cleared": true })
    );
    assert_eq!(
        result(server.call("thread/goal/get", json!({ "threadId": thread }))),
        json!({ "goal": null })
    );
    assert_eq!(
        result(server.call("thread/goal/clear", json!({ "threadId": thread }))),
        json!({ "cleared": false })
    );
    assert_eq!(model.requests().len(), 2, "no turn after the goal ended");
}

#[test]
fn an_interrupt_pauses_the_goal_and_set_active_resumes_it() {
    let model = MockModel::start(json!({ "replies": [
        { "text": "slow", "deltas": 50, "delay_ms": 100 },
        { "tool_calls": [{ "name": "update_goal", "arguments": { "status": "complete" } }] },
        { "text": "done" }
    ], "when_exhausted": "error" }));
    let home = home_for(&model);
    let cwd = tempfile::tempdir().unwrap();
    let mut server = AppServer::start(home.path(), &[]);
    server.initialize();
    let thread = server.start_thread(json!({ "cwd": cwd.path() }));
    result(server.call(
        "thread/goal/set",
        json!({ "threadId": thread, "objective": "take a while" }),
    ));
    let started = server.until(|m| method(m) == "turn/started").pop().unwrap();
    let turn_id = started["params"]["turn"]["id"].as_str().unwrap().to_owned();
    result(server.call(
        "turn/interrupt",
        json!({ "threadId": thread, "turnId": turn_id }),
    ));
    let seen = server.until(|m| goal_update(m).is_some_and(|g| g["status"] == "paused"));
    assert!(
        seen.iter().any(|m| method(m) == "turn/completed"),
        "{seen:#?}"
    );
    let got = result(server.call("thread/goal/get", json!({ "threadId": thread })));
    assert_eq!(got["goal"]["status"], "paused");

    result(server.call(
        "thread/goal/set",
        json!({ "threadId": thread, "status": "active" }),
    ));
    server.until(|m| goal_update(m).is_some_and(|g| g["status"] == "complete"));
    server.until(|m| method(m) == "turn/completed");
    assert_eq!(model.requests().len(), 3);
}

#[test]
fn an_ephemeral_thread_refuses_a_goal() {
    let model = MockModel::start(json!({ "replies": [] }));
    let home = home_for(&model);
    let cwd = tempfile::tempdir().unwrap();
    let mut server = AppServer::start(home.path(), &[]);
    server.initialize();
    let thread = server.start_thread(json!({ "cwd": cwd.path(), "ephemeral": true }));
    let refused = server.call(
        "thread/goal/set",
        json!({ "threadId": thread, "objective": "anything" }),
    );
    assert_eq!(
        refused["error"]["message"],
        "thread goals require a persisted thread"
    );
    let too_long = server.call(
        "thread/goal/set",
        json!({ "threadId": thread, "objective": "x".repeat(4001) }),
    );
    assert!(too_long["error"].is_object(), "{too_long}");
}

/// rein's `criteria` on `thread/goal/set`: a shell verifier the kernel runs when the model
/// reports the goal complete (refused once, then passed), recorded on the goal; criteria
/// the kernel could not check are refused with the reason, and nothing changes.
#[test]
fn criteria_set_over_the_wire_are_checked_and_bad_ones_refused() {
    let model = MockModel::start(json!({ "replies": [
        { "tool_calls": [{ "name": "update_goal", "arguments": { "status": "complete" } }] },
        { "text": "not yet" },
        { "tool_calls": [{ "name": "apply_patch", "arguments": {
            "input": "*** Begin Patch\n*** Add File: done.txt\n+ok\n*** End Patch\n" } }] },
        { "tool_calls": [{ "name": "update_goal", "arguments": { "status": "complete" } }] },
        { "text": "All done." }
    ], "when_exhausted": "error" }));
    let home = home_for(&model);
    let cwd = tempfile::tempdir().unwrap();
    let mut server = AppServer::start(home.path(), &[]);
    server.initialize();
    let thread = server.start_thread(json!({
        "cwd": cwd.path(), "approvalPolicy": "never", "sandbox": "workspace-write"
    }));

    let refused = |server: &mut AppServer, criteria: Value| {
        let answer = server.call(
            "thread/goal/set",
            json!({ "threadId": thread, "objective": "x", "criteria": criteria }),
        );
        answer["error"]["message"].as_str().unwrap().to_owned()
    };
    assert_eq!(
        refused(
            &mut server,
            json!([{ "verify": { "type": "mcp", "server": "s", "tool": "t", "arguments": [1] } }])
        ),
        "invalid acceptance criterion: the arguments of the MCP verifier s/t are not a JSON object"
    );
    assert_eq!(
        refused(&mut server, json!([{}])),
        "Invalid params: criteria[0]: needs a description or a verifier"
    );
    assert!(
        refused(&mut server, json!([{ "verify": { "type": "telepathy" } }]))
            .starts_with("Invalid params")
    );
    let none = result(server.call("thread/goal/get", json!({ "threadId": thread })));
    assert_eq!(none["goal"], Value::Null, "a refused goal left nothing");

    result(server.call(
        "thread/goal/set",
        json!({ "threadId": thread, "objective": "create done.txt", "criteria": [
            { "verify": { "type": "shell", "command": "test -f done.txt" } },
            { "description": "keep it short" }
        ] }),
    ));
    let seen = server.until(|m| goal_update(m).is_some_and(|g| g["status"] == "complete"));
    assert_eq!(
        seen.iter().filter(|m| method(m) == "turn/started").count(),
        2,
        "complete after the second goal turn, not the first: {seen:#?}"
    );
    server.until(|m| method(m) == "turn/completed");
    assert!(server.finish().success());
    // The model read the refusal, and the goal recorded the criteria as the kernel's.
    let requests = model.requests();
    assert_eq!(requests.len(), 5);
    assert!(requests[1].to_string().contains("acceptance check failed"));
    let log = rein_test_support::exec::json_lines(
        &rein_test_support::exec::rein_ok(home.path(), &["sessions", "show", &thread, "--json"])
            .stdout,
    );
    let recorded = log
        .iter()
        .rev()
        .find(|e| e["msg"]["type"] == "goal_updated")
        .unwrap();
    assert_eq!(
        recorded["msg"]["goal"]["criteria"],
        json!([
            { "description": "test -f done.txt",
              "verify": { "type": "shell", "command": "test -f done.txt" } },
            { "description": "keep it short" }
        ])
    );
}
