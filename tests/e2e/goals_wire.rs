//! Thread goals over `rein app-server` (every message checked against Codex's schema):
//! user input steers a running goal turn and the goal stays active, a rollback restores
//! the goal as the dropped turn found it, and the model's `create_goal` tool.
#![allow(clippy::unwrap_used)]

use rein_test_support::app_server as support;

use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use support::{home_for, method, AppServer, MockModel};

fn result(answer: Value) -> Value {
    assert!(answer.get("error").is_none(), "{answer}");
    answer["result"].clone()
}

fn text_input(text: &str) -> Value {
    json!([{ "type": "text", "text": text }])
}

fn goal_of(server: &mut AppServer, thread: &str) -> Value {
    result(server.call("thread/goal/get", json!({ "threadId": thread })))["goal"].clone()
}

fn started(model: &MockModel) -> (AppServer, tempfile::TempDir, tempfile::TempDir, String) {
    let home = home_for(model);
    let cwd = tempfile::tempdir().unwrap();
    let mut server = AppServer::start(home.path(), &[]);
    server.initialize();
    let thread = server.start_thread(json!({ "cwd": cwd.path() }));
    (server, home, cwd, thread)
}

#[test]
fn input_during_a_goal_turn_steers_it_and_the_goal_stays_active() {
    let model = MockModel::start(json!({ "replies": [
        { "text": "working on it, slowly", "deltas": 10, "delay_ms": 30 },
        { "tool_calls": [{ "name": "update_goal", "arguments": { "status": "complete" } }] },
        { "text": "done, steer included" }
    ], "when_exhausted": "error" }));
    let (mut server, _home, _cwd, thread) = started(&model);
    result(server.call(
        "thread/goal/set",
        json!({ "threadId": thread, "objective": "write the report" }),
    ));
    let turn = server.until(|m| method(m) == "turn/started").pop().unwrap();
    let turn_id = turn["params"]["turn"]["id"].as_str().unwrap().to_owned();
    server.until(|m| method(m) == "item/agentMessage/delta");
    let steered = result(server.call(
        "turn/steer",
        json!({ "threadId": thread, "input": text_input("also add a summary"),
                "expectedTurnId": turn_id }),
    ));
    assert_eq!(steered, json!({ "turnId": turn_id }));
    assert_eq!(goal_of(&mut server, &thread)["status"], "active");
    let rest = server.until(|m| method(m) == "turn/completed");
    assert_eq!(rest.last().unwrap()["params"]["turn"]["id"], json!(turn_id));
    assert!(
        !rest.iter().any(|m| method(m) == "turn/started"),
        "the steer joined the goal turn: {rest:#?}"
    );
    assert_eq!(goal_of(&mut server, &thread)["status"], "complete");
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    assert!(!requests[0].to_string().contains("also add a summary"));
    assert!(requests[1].to_string().contains("also add a summary"));
}

#[test]
fn a_rollback_restores_the_goal_as_the_dropped_turn_found_it() {
    let model = MockModel::start(json!({ "replies": [], "when_exhausted": "echo" }));
    let (mut server, _home, _cwd, thread) = started(&model);
    // A paused goal: no turn of its own, so the user's turns are the only ones.
    result(server.call(
        "thread/goal/set",
        json!({ "threadId": thread, "objective": "first objective", "status": "paused" }),
    ));
    server.request(
        "turn/start",
        json!({ "threadId": thread, "input": text_input("one") }),
    );
    server.until(|m| method(m) == "turn/completed");
    let edited = result(server.call(
        "thread/goal/set",
        json!({ "threadId": thread, "objective": "second objective" }),
    ));
    assert_eq!(edited["goal"]["objective"], "second objective");
    server.request(
        "turn/start",
        json!({ "threadId": thread, "input": text_input("two") }),
    );
    server.until(|m| method(m) == "turn/completed");
    let before = goal_of(&mut server, &thread);

    let rolled = result(server.call(
        "thread/rollback",
        json!({ "threadId": thread, "numTurns": 1 }),
    ));
    assert_eq!(rolled["thread"]["turns"].as_array().unwrap().len(), 1);
    let after = goal_of(&mut server, &thread);
    // The dropped turn started with the second objective: that stays.
    assert_eq!(after, before);
    let rolled = result(server.call(
        "thread/rollback",
        json!({ "threadId": thread, "numTurns": 1 }),
    ));
    assert_eq!(rolled["thread"]["turns"].as_array().unwrap().len(), 0);
    let first = goal_of(&mut server, &thread);
    assert_eq!(
        (&first["objective"], &first["status"]),
        (&json!("first objective"), &json!("paused"))
    );
    // What was spent was spent.
    assert_eq!(first["tokensUsed"], before["tokensUsed"]);
}

#[test]
fn the_model_creates_a_goal_with_its_tool_and_the_kernel_drives_it() {
    let model = MockModel::start(json!({ "replies": [
        { "tool_calls": [{ "name": "create_goal",
                           "arguments": { "objective": "write notes.txt", "token_budget": 50000 } }] },
        { "text": "I set the goal." },
        { "tool_calls": [{ "name": "update_goal", "arguments": { "status": "complete" } }] },
        { "text": "notes written" }
    ], "when_exhausted": "error" }));
    let (mut server, _home, _cwd, thread) = started(&model);
    // The goal tools are offered once the thread has had a goal (threads that never had
    // one send the tool list they always did).
    result(server.call(
        "thread/goal/set",
        json!({ "threadId": thread, "objective": "placeholder", "status": "paused" }),
    ));
    result(server.call("thread/goal/clear", json!({ "threadId": thread })));
    server.request(
        "turn/start",
        json!({ "threadId": thread, "input": text_input("please make writing notes your goal") }),
    );
    let seen = server.until(|m| {
        method(m) == "thread/goal/updated" && m["params"]["goal"]["status"] == "complete"
    });
    let created = seen
        .iter()
        .find(|m| method(m) == "thread/goal/updated")
        .unwrap();
    assert_eq!(
        (
            &created["params"]["goal"]["objective"],
            &created["params"]["goal"]["status"],
            &created["params"]["goal"]["tokenBudget"]
        ),
        (&json!("write notes.txt"), &json!("active"), &json!(50000))
    );
    let turns = seen.iter().filter(|m| method(m) == "turn/started").count();
    assert_eq!(turns, 2, "the user's turn, then the goal's: {seen:#?}");
    server.until(|m| method(m) == "turn/completed");
    assert_eq!(model.requests().len(), 4);
}
