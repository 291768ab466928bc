//! Threads across a restart of `rein app-server`: list, read (with turns), resume and
//! continue, fork, list turns, archive and unarchive — each answer checked against
//! Codex's schema by the harness.
#![allow(clippy::unwrap_used)]

use rein_test_support::app_server as support;

use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use support::{home_for, method, AppServer, MockModel};

fn listed(server: &mut AppServer, params: Value) -> Vec<String> {
    let r = server.call("thread/list", params);
    r["result"]["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn threads_survive_a_restart_and_can_be_resumed_forked_and_archived() {
    let model = MockModel::start(json!({ "replies": [], "when_exhausted": "echo" }));
    let home = home_for(&model);
    let cwd = tempfile::tempdir().unwrap();

    let mut first = AppServer::start(home.path(), &[]);
    first.initialize();
    let thread = first.start_thread(json!({ "cwd": cwd.path() }));
    let done = first.turn(&thread, "first question");
    assert_eq!(done["params"]["turn"]["status"], "completed");
    first.request(
        "thread/name/set",
        json!({ "threadId": thread, "name": "Parser work" }),
    );
    first.until(|m| method(m) == "thread/name/updated");
    let ephemeral = first.start_thread(json!({ "cwd": cwd.path(), "ephemeral": true }));
    first.turn(&ephemeral, "not kept");
    assert!(first.finish().success());

    let mut second = AppServer::start(home.path(), &[]);
    second.initialize();
    let list = second.call("thread/list", json!({ "limit": 10 }));
    let data = list["result"]["data"].as_array().unwrap();
    assert_eq!(
        data.len(),
        1,
        "the ephemeral thread left nothing behind: {list:#}"
    );
    assert_eq!(data[0]["id"], json!(thread));
    assert_eq!(data[0]["preview"], "first question");
    assert_eq!(
        data[0]["name"], "Parser work",
        "the name outlives the process"
    );
    let found = listed(&mut second, json!({ "searchTerm": "parser" }));
    assert_eq!(found, vec![thread.clone()], "thread/list searches names");
    assert_eq!(data[0]["status"], json!({ "type": "notLoaded" }));

    let read = second.call(
        "thread/read",
        json!({ "threadId": thread, "includeTurns": true }),
    );
    assert_eq!(read["result"]["thread"]["name"], "Parser work");
    let turns = read["result"]["thread"]["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 1);
    // Times come from the recorded events, so they survive the restart too.
    let started = turns[0]["startedAt"].as_i64().expect("startedAt");
    let completed = turns[0]["completedAt"].as_i64().expect("completedAt");
    assert!(
        started > 1_700_000_000 && completed >= started,
        "{:#}",
        turns[0]
    );
    assert!(turns[0]["durationMs"].as_i64().unwrap() >= 0);
    let texts: Vec<&str> = turns[0]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            i["text"]
                .as_str()
                .or(i["content"][0]["text"].as_str())
                .unwrap()
        })
        .collect();
    assert_eq!(texts, vec!["first question", "echo: first question"]);

    let resumed = second.call("thread/resume", json!({ "threadId": thread }));
    assert_eq!(resumed["result"]["thread"]["id"], json!(thread));
    assert_eq!(
        resumed["result"]["thread"]["turns"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let next = second.turn(&thread, "second question");
    assert_eq!(
        next["params"]["turn"]["items"][0]["text"],
        "echo: second question"
    );
    // The resumed thread sent the model its whole history.
    let last_request = model.requests().pop().unwrap().to_string();
    assert!(last_request.contains("first question") && last_request.contains("second question"));

    let forked = second.call("thread/fork", json!({ "threadId": thread }));
    let fork = forked["result"]["thread"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(fork, thread);
    assert_eq!(forked["result"]["thread"]["forkedFromId"], json!(thread));
    assert_eq!(
        forked["result"]["thread"]["turns"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(method(&second.recv()), "thread/started");
    let in_fork = second.turn(&fork, "in the fork");
    assert_eq!(in_fork["params"]["turn"]["status"], "completed");

    let turns = second.call(
        "thread/turns/list",
        json!({ "threadId": thread, "limit": 1 }),
    );
    assert_eq!(turns["result"]["data"].as_array().unwrap().len(), 1);
    assert_eq!(
        turns["result"]["data"][0]["items"][0]["content"][0]["text"], "second question",
        "newest first"
    );
    assert_eq!(turns["result"]["nextCursor"], "1");

    let loaded = second.call("thread/loaded/list", json!({}));
    assert_eq!(loaded["result"]["data"], json!([thread, fork]));

    let archived = second.call("thread/archive", json!({ "threadId": fork }));
    assert_eq!(archived["result"], json!({}), "{archived:#}");
    // The unloaded thread's `thread/closed` may come before or after the notification.
    let note = second
        .until(|m| method(m) == "thread/archived")
        .pop()
        .unwrap();
    assert_eq!(note["params"]["threadId"], json!(fork));
    assert!(!listed(&mut second, json!({})).contains(&fork));
    assert_eq!(
        listed(&mut second, json!({ "archived": true })),
        vec![fork.clone()]
    );
    let again = second.call("thread/archive", json!({ "threadId": fork }));
    assert_eq!(again["error"]["code"], -32600);

    let back = second.call("thread/unarchive", json!({ "threadId": fork }));
    assert_eq!(back["result"]["thread"]["id"], json!(fork));
    let note = second
        .until(|m| method(m) == "thread/unarchived")
        .pop()
        .unwrap();
    assert_eq!(note["params"]["threadId"], json!(fork));
    assert!(listed(&mut second, json!({})).contains(&fork));

    let missing = second.call(
        "thread/resume",
        json!({ "threadId": "01a22a74-0000-7000-8000-000000000000" }),
    );
    assert_eq!(missing["error"]["code"], -32600);
    assert!(second.finish().success());
}

#[test]
fn unsubscribing_lets_a_running_turn_finish_before_the_thread_unloads() {
    let model = MockModel::start(json!({
        "replies": [{ "text": "a slow but complete answer", "deltas": 10, "delay_ms": 20 }]
    }));
    let home = home_for(&model);
    let cwd = tempfile::tempdir().unwrap();
    let mut first = AppServer::start(home.path(), &["--idle-unload-ms", "0"]);
    first.initialize();
    let thread = first.start_thread(json!({ "cwd": cwd.path() }));
    first.request(
        "turn/start",
        json!({ "threadId": thread, "input": [{ "type": "text", "text": "take your time" }] }),
    );
    first.until(|m| method(m) == "item/agentMessage/delta");
    let unsub = first.call("thread/unsubscribe", json!({ "threadId": thread }));
    assert_eq!(unsub["result"], json!({ "status": "unsubscribed" }));
    // The process exits only once the unloaded thread has finished and shut down.
    assert!(first.finish().success());

    let mut second = AppServer::start(home.path(), &[]);
    second.initialize();
    let read = second.call(
        "thread/read",
        json!({ "threadId": thread, "includeTurns": true }),
    );
    let turn = &read["result"]["thread"]["turns"][0];
    assert_eq!(turn["status"], "completed", "{read:#}");
    assert_eq!(turn["items"][1]["text"], "a slow but complete answer");
}
