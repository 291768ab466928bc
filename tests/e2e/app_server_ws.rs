//! `rein app-server --listen ws://…`: the same protocol over WebSocket text frames, a
//! session per connection, `/readyz`, bearer-token auth, and threads shared by several
//! connections (subscriptions, approvals to all, a sub-agent's too, unloading once nobody
//! listens).
#![allow(clippy::unwrap_used)]

use rein_test_support::app_server as support;
use rein_test_support::ws_client;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{home_for, home_for_tree, method, CodexSchema, MockModel};
use tungstenite::Message;
use ws_client::{serve, Client};

fn is_closed(m: &Value, thread: &Value) -> bool {
    method(m) == "thread/closed" && m["params"]["threadId"] == *thread
}

#[test]
fn websocket_sessions_readyz_and_token() {
    let model = MockModel::start(json!({ "replies": [], "when_exhausted": "echo" }));
    let home = home_for(&model);
    let token_file = home.path().join("token");
    std::fs::write(&token_file, "s3cret\n").unwrap();
    let token_arg = token_file.display().to_string();
    let (_server, url) = serve(home.path(), &["--ws-token-file", &token_arg]);
    assert!(url.starts_with("ws://127.0.0.1:"), "{url}");

    let mut probe = TcpStream::connect(url.trim_start_matches("ws://")).unwrap();
    probe
        .write_all(b"GET /readyz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    probe.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.ends_with("ok"), "{answer}");

    match Client::connect(&url, Some("wrong")) {
        Err(tungstenite::Error::Http(resp)) => assert_eq!(resp.status(), 401),
        Err(e) => panic!("expected a 401, got {e}"),
        Ok(_) => panic!("a wrong token was accepted"),
    }

    let schema = CodexSchema::load();
    let mut first = Client::connect(&url, Some("s3cret")).unwrap();
    let mut second = Client::connect(&url, Some("s3cret")).unwrap();
    let init = first.call(
        schema,
        "initialize",
        json!({ "clientInfo": { "name": "ws", "version": "1" } }),
    );
    assert!(init.get("result").is_some(), "{init}");
    // Each connection has its own initialize gate.
    let early = second.call(schema, "model/list", json!({}));
    assert_eq!(early["error"]["message"], "Not initialized");

    let cwd = tempfile::tempdir().unwrap();
    let started = first.call(schema, "thread/start", json!({ "cwd": cwd.path() }));
    let thread = started["result"]["thread"]["id"].clone();
    first.request(
        "turn/start",
        json!({ "threadId": thread, "input": [{ "type": "text", "text": "over ws" }] }),
    );
    let completed = loop {
        let m = first.recv(schema);
        if method(&m) == "turn/completed" {
            break m;
        }
    };
    assert_eq!(
        completed["params"]["turn"]["items"][0]["text"],
        "echo: over ws"
    );
}

#[test]
fn two_connections_share_a_thread_its_turns_and_its_approvals() {
    let model = MockModel::start(json!({
        "replies": [
            { "text": "first answer" },
            { "tool_calls": [{ "call_id": "call_touch", "name": "shell",
                               "arguments": { "command": ["touch", "shared-file.txt"] } }] },
            { "text": "Done with the file." }
        ],
        "when_exhausted": "echo"
    }));
    let home = home_for(&model);
    let (_server, url) = serve(home.path(), &[]);
    let schema = CodexSchema::load();
    let mut first = Client::connect(&url, None).unwrap();
    let mut second = Client::connect(&url, None).unwrap();
    first.initialize(schema);
    second.initialize(schema);
    let cwd = tempfile::tempdir().unwrap();
    let started = first.call(
        schema,
        "thread/start",
        json!({ "cwd": cwd.path(), "approvalPolicy": "untrusted", "sandbox": "danger-full-access" }),
    );
    let thread = started["result"]["thread"]["id"].clone();
    let joined = second.call(schema, "thread/resume", json!({ "threadId": thread }));
    assert_eq!(joined["result"]["thread"]["id"], thread, "{joined:#}");

    // A turn started by the first connection reaches both.
    first.request(
        "turn/start",
        json!({ "threadId": thread, "input": [{ "type": "text", "text": "hello" }] }),
    );
    for client in [&mut first, &mut second] {
        let seen = client.until(schema, |m| method(m) == "turn/completed");
        let done = seen.last().unwrap();
        assert_eq!(done["params"]["threadId"], thread);
        assert_eq!(done["params"]["turn"]["items"][0]["text"], "first answer");
    }

    // One started by the second asks every subscriber; the first answer wins, all are told.
    let answer_id = second.request(
        "turn/start",
        json!({ "threadId": thread, "input": [{ "type": "text", "text": "make a file" }] }),
    );
    let asked_first = first
        .until(schema, |m| {
            method(m) == "item/commandExecution/requestApproval"
        })
        .pop()
        .unwrap();
    let seen_second = second.until(schema, |m| {
        method(m) == "item/commandExecution/requestApproval"
    });
    assert!(
        seen_second
            .iter()
            .any(|m| m["id"] == answer_id && m.get("result").is_some()),
        "the turn/start answer goes to the connection that asked: {seen_second:#?}"
    );
    let asked_second = seen_second.last().unwrap().clone();
    assert_eq!(asked_first["params"]["itemId"], "call_touch");
    assert_eq!(asked_second["params"]["itemId"], "call_touch");
    // A connection subscribing while the question is open is asked too, after its answer.
    let mut third = Client::connect(&url, None).unwrap();
    third.initialize(schema);
    let joined = third.call(schema, "thread/resume", json!({ "threadId": thread }));
    assert_eq!(joined["result"]["thread"]["id"], thread, "{joined:#}");
    let asked_third = third
        .until(schema, |m| {
            method(m) == "item/commandExecution/requestApproval"
        })
        .pop()
        .unwrap();
    assert_eq!(asked_third["params"]["itemId"], "call_touch");
    third
        .ws
        .send(Message::text(
            json!({ "id": asked_third["id"], "result": { "decision": "accept" } }).to_string(),
        ))
        .unwrap();
    for (client, asked) in [
        (&mut first, &asked_first),
        (&mut second, &asked_second),
        (&mut third, &asked_third),
    ] {
        let seen = client.until(schema, |m| method(m) == "turn/completed");
        let resolved: Vec<&Value> = seen
            .iter()
            .filter(|m| method(m) == "serverRequest/resolved")
            .collect();
        assert_eq!(resolved.len(), 1, "{seen:#?}");
        assert_eq!(resolved[0]["params"]["requestId"], asked["id"]);
        assert_eq!(
            seen.last().unwrap()["params"]["turn"]["status"],
            "completed"
        );
    }
    assert!(cwd.path().join("shared-file.txt").exists());
    // A late answer changes nothing and is not an error.
    second
        .ws
        .send(Message::text(
            json!({ "id": asked_second["id"], "result": { "decision": "decline" } }).to_string(),
        ))
        .unwrap();
    let loaded = second.call(schema, "thread/loaded/list", json!({}));
    assert_eq!(loaded["result"]["data"], json!([thread]));
}

#[test]
fn the_last_subscriber_leaving_unloads_after_the_idle_time_unless_one_returns() {
    const IDLE: Duration = Duration::from_millis(1500);
    let model = MockModel::start(json!({ "replies": [], "when_exhausted": "echo" }));
    let home = home_for(&model);
    let idle_ms = IDLE.as_millis().to_string();
    let (_server, url) = serve(home.path(), &["--idle-unload-ms", &idle_ms]);
    let schema = CodexSchema::load();
    let mut first = Client::connect(&url, None).unwrap();
    let mut second = Client::connect(&url, None).unwrap();
    first.initialize(schema);
    second.initialize(schema);
    let cwd = tempfile::tempdir().unwrap();
    let start = |client: &mut Client| {
        let started = client.call(schema, "thread/start", json!({ "cwd": cwd.path() }));
        started["result"]["thread"]["id"].clone()
    };
    let kept = start(&mut first);
    let dropped = start(&mut first);
    let joined = second.call(schema, "thread/resume", json!({ "threadId": dropped }));
    assert!(joined.get("result").is_some(), "{joined:#}");

    // `kept` loses its only subscriber, then gets it back within the idle time.
    let unsub = first.call(schema, "thread/unsubscribe", json!({ "threadId": kept }));
    assert_eq!(unsub["result"], json!({ "status": "unsubscribed" }));
    let again = first.call(schema, "thread/unsubscribe", json!({ "threadId": kept }));
    assert_eq!(again["result"], json!({ "status": "notSubscribed" }));
    let back = first.call(schema, "thread/resume", json!({ "threadId": kept }));
    assert_eq!(back["result"]["thread"]["id"], kept, "{back:#}");

    // `dropped` loses its subscribers one by one: the first by unsubscribing, the last by
    // closing its connection. Its countdown starts after `kept`'s.
    let unsub = first.call(schema, "thread/unsubscribe", json!({ "threadId": dropped }));
    assert_eq!(unsub["result"], json!({ "status": "unsubscribed" }));
    let loaded = first.call(schema, "thread/loaded/list", json!({}));
    assert_eq!(loaded["result"]["data"], json!([kept, dropped]));
    let left = Instant::now();
    second.ws.close(None).unwrap();
    // The first connection left `dropped` but is still connected: it hears it close.
    let seen = first.until(schema, |m| is_closed(m, &dropped));
    assert!(
        left.elapsed() >= IDLE,
        "unloaded after {:?}, before the idle time",
        left.elapsed()
    );
    assert!(!seen.iter().any(|m| is_closed(m, &kept)), "{seen:#?}");
    // `kept`'s countdown, begun earlier, has run out: its subscriber kept it loaded.
    let loaded = first.call(schema, "thread/loaded/list", json!({}));
    assert_eq!(loaded["result"]["data"], json!([kept]));
    let turn = first.call(
        schema,
        "turn/start",
        json!({ "threadId": kept, "input": [{ "type": "text", "text": "still here" }] }),
    );
    assert!(turn.get("result").is_some(), "{turn:#}");
    let done = first
        .until(schema, |m| method(m) == "turn/completed")
        .pop()
        .unwrap();
    assert_eq!(
        done["params"]["turn"]["items"][0]["text"],
        "echo: still here"
    );
    // And an unloaded thread can be resumed again, by anyone.
    let resumed = first.call(schema, "thread/resume", json!({ "threadId": dropped }));
    assert_eq!(resumed["result"]["thread"]["id"], dropped, "{resumed:#}");
}

#[test]
fn a_thread_left_mid_turn_unloads_only_after_the_turn_completes() {
    let model = MockModel::start(json!({
        "replies": [{ "text": "a slow but complete answer", "deltas": 10, "delay_ms": 30 }]
    }));
    let home = home_for(&model);
    // Shorter than the turn: the countdown must not start before the turn ends.
    let (_server, url) = serve(home.path(), &["--idle-unload-ms", "50"]);
    let schema = CodexSchema::load();
    let mut client = Client::connect(&url, None).unwrap();
    client.initialize(schema);
    let cwd = tempfile::tempdir().unwrap();
    let started = client.call(schema, "thread/start", json!({ "cwd": cwd.path() }));
    let thread = started["result"]["thread"]["id"].clone();
    client.request(
        "turn/start",
        json!({ "threadId": thread, "input": [{ "type": "text", "text": "take your time" }] }),
    );
    client.until(schema, |m| method(m) == "item/agentMessage/delta");
    let unsub = client.call(schema, "thread/unsubscribe", json!({ "threadId": thread }));
    assert_eq!(unsub["result"], json!({ "status": "unsubscribed" }));
    let seen = client.until(schema, |m| is_closed(m, &thread));
    assert!(
        !seen.iter().any(|m| method(m) == "turn/completed"),
        "an unsubscribed connection hears only thread/closed: {seen:#?}"
    );
    let read = client.call(
        schema,
        "thread/read",
        json!({ "threadId": thread, "includeTurns": true }),
    );
    let turn = &read["result"]["thread"]["turns"][0];
    assert_eq!(turn["status"], "completed", "{read:#}");
    assert_eq!(turn["items"][1]["text"], "a slow but complete answer");
}

#[test]
fn joining_a_thread_mid_turn_shows_each_finished_item_once() {
    let text: String = (0..200).map(|i| format!("<{i:03}>")).collect();
    let model = MockModel::start(json!({
        "replies": [{ "text": text, "deltas": 200, "delay_ms": 2 }]
    }));
    let home = home_for(&model);
    let (_server, url) = serve(home.path(), &[]);
    let schema = CodexSchema::load();
    let mut first = Client::connect(&url, None).unwrap();
    let mut second = Client::connect(&url, None).unwrap();
    first.initialize(schema);
    second.initialize(schema);
    let cwd = tempfile::tempdir().unwrap();
    let started = first.call(schema, "thread/start", json!({ "cwd": cwd.path() }));
    let thread = started["result"]["thread"]["id"].clone();
    first.request(
        "turn/start",
        json!({ "threadId": thread, "input": [{ "type": "text", "text": "stream" }] }),
    );
    for _ in 0..20 {
        first.until(schema, |m| method(m) == "item/agentMessage/delta");
    }

    // The answer comes before anything else of the thread, and shows the running turn with
    // the user's message, which is therefore not announced again.
    let joined = second.call(schema, "thread/resume", json!({ "threadId": thread }));
    assert!(second.stashed().is_empty(), "{:#?}", second.stashed());
    let turns = &joined["result"]["thread"]["turns"];
    assert_eq!(turns[0]["status"], "inProgress", "{joined:#}");
    assert_eq!(turns[0]["items"][0]["type"], "userMessage");
    let later = second.until(schema, |m| method(m) == "turn/completed");
    let completed: Vec<&str> = later
        .iter()
        .filter(|m| method(m) == "item/completed")
        .map(|m| m["params"]["item"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(completed, vec!["agentMessage"], "each item once");
    // What it streams is the rest of the answer, without gaps or repeats.
    let streamed: String = later
        .iter()
        .filter(|m| method(m) == "item/agentMessage/delta")
        .map(|m| m["params"]["delta"].as_str().unwrap())
        .collect();
    assert!(
        !streamed.is_empty() && text.ends_with(&streamed),
        "{streamed}"
    );
}

#[test]
fn a_connection_joining_the_root_is_asked_a_childs_open_question_too() {
    let call = |id: &str, name: &str, arguments: Value| json!({ "tool_calls": [{ "call_id": id, "name": name, "arguments": arguments }] });
    let parent_model = MockModel::start(json!({
        "replies": [
            call("call_spawn", "spawn_agent", json!({ "message": "Make the file.", "model": "child" })),
            call("call_wait", "wait_agent", json!({ "targets": ["Ada"], "timeout_ms": 60000 })),
            { "text": "Parent done." }
        ],
        "when_exhausted": "echo"
    }));
    let child_model = MockModel::start(json!({
        "replies": [
            call("call_touch", "shell", json!({ "command": ["touch", "child-file.txt"] })),
            { "text": "Child done." }
        ],
        "when_exhausted": "echo"
    }));
    let home = home_for_tree(&parent_model, &child_model);
    let (_server, url) = serve(home.path(), &[]);
    let schema = CodexSchema::load();
    let mut first = Client::connect(&url, None).unwrap();
    first.initialize(schema);
    let cwd = tempfile::tempdir().unwrap();
    let started = first.call(
        schema,
        "thread/start",
        json!({ "cwd": cwd.path(), "approvalPolicy": "untrusted", "sandbox": "danger-full-access" }),
    );
    let root = started["result"]["thread"]["id"].clone();
    first.request(
        "turn/start",
        json!({ "threadId": root, "input": [{ "type": "text", "text": "Delegate it." }] }),
    );
    let is_ask = |m: &Value| method(m) == "item/commandExecution/requestApproval";
    let asked_first = first.until(schema, is_ask).pop().unwrap();
    let child = asked_first["params"]["threadId"].clone();
    assert_ne!(child, root);

    // A connection resuming the root while the child's question is open is asked it too,
    // after the answer to its thread/resume.
    let mut second = Client::connect(&url, None).unwrap();
    second.initialize(schema);
    let resume_id = second.request("thread/resume", json!({ "threadId": root }));
    let seen = second.until(schema, is_ask);
    let answered_at = seen
        .iter()
        .position(|m| m["id"] == resume_id && m.get("result").is_some())
        .unwrap_or_else(|| panic!("no thread/resume answer before the question: {seen:#?}"));
    assert_eq!(seen[answered_at]["result"]["thread"]["id"], root);
    let asked_second = seen.last().unwrap().clone();
    assert_eq!(
        (
            &asked_second["params"]["threadId"],
            &asked_second["params"]["itemId"]
        ),
        (&child, &json!("call_touch"))
    );

    // Its answer reaches the child; both connections are told the question is resolved.
    second
        .ws
        .send(Message::text(
            json!({ "id": asked_second["id"], "result": { "decision": "accept" } }).to_string(),
        ))
        .unwrap();
    for (client, asked) in [(&mut first, &asked_first), (&mut second, &asked_second)] {
        let seen = client.until(schema, |m| {
            method(m) == "turn/completed" && m["params"]["threadId"] == root
        });
        let resolved: Vec<&Value> = seen
            .iter()
            .filter(|m| method(m) == "serverRequest/resolved")
            .collect();
        assert_eq!(resolved.len(), 1, "{seen:#?}");
        assert_eq!(
            (
                &resolved[0]["params"]["threadId"],
                &resolved[0]["params"]["requestId"]
            ),
            (&child, &asked["id"])
        );
    }
    assert!(cwd.path().join("child-file.txt").exists());
}
