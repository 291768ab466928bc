//! `rein app-server` end to end: a real app-server process against a real mock model
//! server, driven as a Codex client drives Codex. Every message received is validated
//! against Codex's JSON Schema by the harness.
#![allow(clippy::unwrap_used)]

use rein_test_support::app_server as support;

use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use support::{home_for, method, AppServer, MockModel};

fn text_input(text: &str) -> Value {
    json!([{ "type": "text", "text": text }])
}

fn started(model: &MockModel) -> (AppServer, tempfile::TempDir) {
    let home = home_for(model);
    let mut server = AppServer::start(home.path(), &[]);
    let init = server.initialize();
    assert_eq!(
        init["result"]["codexHome"],
        json!(home.path().display().to_string())
    );
    server.send(&json!({"method": "initialized"}));
    (server, home)
}

#[test]
fn plain_turn_notifications_come_in_codex_order() {
    let model = MockModel::start(json!({
        "replies": [{ "text": "Hello from the mock model.", "deltas": 3 }]
    }));
    let (mut server, _home) = started(&model);
    let cwd = tempfile::tempdir().unwrap();
    let thread = server.start_thread(json!({ "cwd": cwd.path() }));
    let id = server.request(
        "turn/start",
        json!({ "threadId": thread, "input": text_input("Say hello.") }),
    );
    let seen = server.until(|m| method(m) == "turn/completed");
    let kinds: Vec<String> = seen
        .iter()
        .map(|m| match m.get("method") {
            Some(_) => {
                let item_type = m["params"]["item"]["type"].as_str().unwrap_or("");
                format!("{} {item_type}", method(m)).trim().to_owned()
            }
            None => format!("response {}", m["id"]),
        })
        .collect();
    assert_eq!(
        kinds,
        vec![
            format!("response {id}"),
            "thread/status/changed".into(),
            "turn/started".into(),
            "item/started userMessage".into(),
            "item/completed userMessage".into(),
            "item/started agentMessage".into(),
            "item/agentMessage/delta".into(),
            "item/agentMessage/delta".into(),
            "item/agentMessage/delta".into(),
            "item/completed agentMessage".into(),
            "thread/tokenUsage/updated".into(),
            "thread/status/changed".into(),
            "turn/completed".into(),
        ]
    );
    let turn_id = seen[0]["result"]["turn"]["id"].clone();
    let completed = &seen.last().unwrap()["params"]["turn"];
    assert_eq!(completed["id"], turn_id);
    assert_eq!(completed["status"], "completed");
    assert_eq!(completed["items"][0]["text"], "Hello from the mock model.");
    let deltas: String = seen
        .iter()
        .filter(|m| method(m) == "item/agentMessage/delta")
        .map(|m| m["params"]["delta"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, "Hello from the mock model.");
    assert_eq!(
        seen[1]["params"]["status"],
        json!({"type": "active", "activeFlags": []})
    );
    assert_eq!(seen[11]["params"]["status"], json!({"type": "idle"}));
    // The model saw the user's text.
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    assert!(requests[0].to_string().contains("Say hello."));
    assert!(server.finish().success());
}

#[test]
fn startup_calls_of_editor_clients_are_answered_with_codex_shapes() {
    let model = MockModel::start(json!({ "replies": [], "when_exhausted": "echo" }));
    let home = home_for(&model);
    let mut server = AppServer::start(home.path(), &[]);
    // Like the ACP bridge: initialize, never `initialized`, then the startup reads.
    server.initialize();
    let config = server.call("config/read", json!({ "includeLayers": false }));
    assert_eq!(config["result"]["config"]["model"], "mock");
    let account = server.call("account/read", json!({ "refreshToken": false }));
    assert_eq!(
        account["result"],
        json!({ "account": null, "requiresOpenaiAuth": false })
    );
    let profiles = server.call("permissionProfile/list", json!({}));
    assert_eq!(profiles["result"]["data"], json!([]));
    let models = server.call("model/list", json!({}));
    let data = models["result"]["data"].as_array().unwrap();
    assert_eq!(data[0]["id"], "mock");
    assert_eq!(data[0]["isDefault"], true);
    let cwd = tempfile::tempdir().unwrap();
    let cwd_text = cwd.path().display().to_string();
    let skills = server.call("skills/list", json!({ "cwds": [cwd_text] }));
    assert_eq!(
        skills["result"]["data"],
        json!([{ "cwd": cwd_text, "skills": [], "errors": [] }])
    );
    let thread = server.start_thread(json!({
        "cwd": cwd.path(), "ephemeral": true, "approvalPolicy": "never",
        "sandbox": "read-only", "config": { "model_reasoning_summary": "auto" }
    }));
    let id = server.request(
        "turn/start",
        json!({
            "threadId": thread, "input": text_input("ping"),
            "approvalPolicy": "on-request", "approvalsReviewer": "user",
            "sandboxPolicy": { "type": "workspaceWrite", "writableRoots": [], "networkAccess": false },
            "effort": "low", "summary": "auto", "model": "mock", "serviceTier": null,
            "outputSchema": { "type": "object" }
        }),
    );
    let seen = server.until(|m| method(m) == "turn/completed");
    assert!(seen[0]["result"]["turn"]["id"].is_string(), "{:#}", seen[0]);
    assert_eq!(seen[0]["id"], id);
    assert_eq!(
        seen.last().unwrap()["params"]["turn"]["items"][0]["text"],
        "echo: ping"
    );
    // outputSchema reached the model as strict structured output.
    let body = model.requests().pop().unwrap();
    assert_eq!(
        body["text"]["format"]["schema"],
        json!({ "type": "object" }),
        "{body}"
    );
    let name = server.request(
        "thread/name/set",
        json!({ "threadId": thread, "name": "Demo" }),
    );
    assert_eq!(server.recv(), json!({ "id": name, "result": {} }));
    let updated = server.recv();
    assert_eq!(method(&updated), "thread/name/updated");
    assert_eq!(
        updated["params"],
        json!({ "threadId": thread, "threadName": "Demo" })
    );
    let loaded = server.call("thread/loaded/list", json!({}));
    assert_eq!(
        loaded["result"],
        json!({ "data": [thread], "nextCursor": null })
    );
    let unsub = server.call("thread/unsubscribe", json!({ "threadId": thread }));
    assert_eq!(unsub["result"], json!({ "status": "unsubscribed" }));
    let again = server.call("thread/unsubscribe", json!({ "threadId": thread }));
    assert_eq!(again["result"], json!({ "status": "notSubscribed" }));
    // Unloaded only after the idle-unload time (30 s by default): still loaded now.
    let loaded = server.call("thread/loaded/list", json!({}));
    assert_eq!(loaded["result"]["data"], json!([thread]));
    assert!(server.finish().success());
}

#[test]
fn steer_joins_the_running_turn_and_a_stale_expected_turn_is_refused() {
    let model = MockModel::start(json!({
        "replies": [
            { "text": "I am answering slowly, one word at a time.", "deltas": 10, "delay_ms": 30 },
            { "text": "Noted the steer." }
        ]
    }));
    let (mut server, _home) = started(&model);
    let cwd = tempfile::tempdir().unwrap();
    let thread = server.start_thread(json!({ "cwd": cwd.path() }));
    let start = server.call(
        "turn/start",
        json!({ "threadId": thread, "input": text_input("Talk slowly.") }),
    );
    let turn_id = start["result"]["turn"]["id"].as_str().unwrap().to_owned();
    server.until(|m| method(m) == "item/agentMessage/delta");

    let wrong = server.request(
        "turn/steer",
        json!({ "threadId": thread, "input": text_input("x"),
                "expectedTurnId": "01a22a74-0000-7000-8000-000000000000" }),
    );
    let refused = server.response(&wrong);
    assert_eq!(refused["error"]["code"], -32600, "{refused:#}");

    let steer = server.request(
        "turn/steer",
        json!({ "threadId": thread, "input": text_input("Also mention steering."),
                "expectedTurnId": turn_id }),
    );
    let steered = server.response(&steer);
    assert_eq!(steered["result"], json!({ "turnId": turn_id }));
    let rest = server.until(|m| method(m) == "turn/completed");
    let completed = &rest.last().unwrap()["params"]["turn"];
    assert_eq!(completed["id"], json!(turn_id));
    assert_eq!(completed["status"], "completed");
    assert_eq!(completed["items"][0]["text"], "Noted the steer.");
    assert!(rest.iter().any(|m| method(m) == "item/completed"
        && m["params"]["item"]["type"] == "userMessage"
        && m["params"]["item"]["content"][0]["text"] == "Also mention steering."));
    // The steer reached the model in the second request, not the one in flight.
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert!(!requests[0].to_string().contains("Also mention steering."));
    assert!(requests[1].to_string().contains("Also mention steering."));
}

#[test]
fn interrupt_answers_then_completes_the_turn_as_interrupted() {
    let model = MockModel::start(json!({
        "replies": [{ "text": "This will never finish", "deltas": 4, "fault": { "type": "hang" } }],
        "when_exhausted": "echo"
    }));
    let (mut server, _home) = started(&model);
    let cwd = tempfile::tempdir().unwrap();
    let thread = server.start_thread(json!({ "cwd": cwd.path() }));
    let start = server.call(
        "turn/start",
        json!({ "threadId": thread, "input": text_input("Talk forever.") }),
    );
    let turn_id = start["result"]["turn"]["id"].as_str().unwrap().to_owned();
    server.until(|m| method(m) == "item/agentMessage/delta");

    // An unknown turn is answered at once and changes nothing.
    let other = server.call(
        "turn/interrupt",
        json!({ "threadId": thread, "turnId": "01a22a74-0000-7000-8000-000000000000" }),
    );
    assert_eq!(other["result"], json!({}));

    let id = server.request(
        "turn/interrupt",
        json!({ "threadId": thread, "turnId": turn_id }),
    );
    let rest = server.until(|m| method(m) == "turn/completed");
    let answer = rest.iter().position(|m| m.get("id") == Some(&id)).unwrap();
    let idle = rest
        .iter()
        .position(|m| {
            method(m) == "thread/status/changed" && m["params"]["status"]["type"] == "idle"
        })
        .unwrap();
    assert!(
        answer < idle,
        "the interrupt is answered before the turn ends"
    );
    let completed = &rest.last().unwrap()["params"]["turn"];
    assert_eq!(completed["status"], "interrupted");
    assert_eq!(completed["id"], json!(turn_id));

    // The thread takes a new turn afterwards.
    server.request(
        "turn/start",
        json!({ "threadId": thread, "input": text_input("again") }),
    );
    let next = server.until(|m| method(m) == "turn/completed");
    assert_eq!(
        next.last().unwrap()["params"]["turn"]["status"],
        "completed"
    );
}

#[test]
fn concurrent_threads_on_one_connection_keep_their_own_turns() {
    let model = MockModel::start(json!({ "replies": [], "when_exhausted": "echo" }));
    let (mut server, _home) = started(&model);
    let cwd = tempfile::tempdir().unwrap();
    let threads: Vec<String> = (0..3)
        .map(|_| server.start_thread(json!({ "cwd": cwd.path() })))
        .collect();
    for (i, t) in threads.iter().enumerate() {
        server.request(
            "turn/start",
            json!({ "threadId": t, "input": text_input(&format!("thread number {i}")) }),
        );
    }
    let mut done = std::collections::HashMap::new();
    while done.len() < threads.len() {
        let m = server.recv();
        if method(&m) == "turn/completed" {
            let t = m["params"]["threadId"].as_str().unwrap().to_owned();
            let text = m["params"]["turn"]["items"][0]["text"]
                .as_str()
                .unwrap()
                .to_owned();
            done.insert(t, text);
        }
    }
    for (i, t) in threads.iter().enumerate() {
        assert_eq!(done[t], format!("echo: thread number {i}"));
    }
    let loaded = server.call("thread/loaded/list", json!({ "limit": 2 }));
    assert_eq!(loaded["result"]["data"], json!(threads[..2]));
    assert_eq!(loaded["result"]["nextCursor"], "2");
    let rest = server.call("thread/loaded/list", json!({ "limit": 2, "cursor": "2" }));
    assert_eq!(
        rest["result"],
        json!({ "data": [threads[2]], "nextCursor": null })
    );
}

#[test]
fn a_failed_model_request_fails_the_turn_with_an_error() {
    let model = MockModel::start(json!({
        "replies": [{ "fault": { "type": "http_error", "status": 400, "message": "bad input" } }]
    }));
    let (mut server, _home) = started(&model);
    let cwd = tempfile::tempdir().unwrap();
    let thread = server.start_thread(json!({ "cwd": cwd.path() }));
    server.request(
        "turn/start",
        json!({ "threadId": thread, "input": text_input("hi") }),
    );
    let seen = server.until(|m| method(m) == "turn/completed");
    let error = seen.iter().find(|m| method(m) == "error").unwrap();
    assert_eq!(error["params"]["willRetry"], false);
    let turn = &seen.last().unwrap()["params"]["turn"];
    assert_eq!(turn["status"], "failed");
    assert!(
        turn["error"]["message"].as_str().unwrap().contains("400"),
        "{turn:#}"
    );
    // The history keeps the failure: a client that reads the thread later sees it too.
    let read = server.call(
        "thread/read",
        json!({ "threadId": thread, "includeTurns": true }),
    );
    let stored = &read["result"]["thread"]["turns"][0];
    assert_eq!(stored["status"], "failed");
    assert_eq!(stored["error"], turn["error"], "{read:#}");
}

#[test]
fn compact_start_runs_a_compaction_turn_with_a_context_compaction_item() {
    let model = MockModel::start(json!({
        "replies": [{ "text": "First answer." }, { "text": "Summary of the talk so far." }],
        "when_exhausted": "echo"
    }));
    let (mut server, _home) = started(&model);
    let cwd = tempfile::tempdir().unwrap();
    let thread = server.start_thread(json!({ "cwd": cwd.path() }));
    server.request(
        "turn/start",
        json!({ "threadId": thread, "input": text_input("hello") }),
    );
    server.until(|m| method(m) == "turn/completed");

    let compact = server.call("thread/compact/start", json!({ "threadId": thread }));
    assert_eq!(compact["result"], json!({}));
    let seen = server.until(|m| method(m) == "turn/completed");
    let items: Vec<(&str, &str)> = seen
        .iter()
        .filter(|m| method(m).starts_with("item/"))
        .map(|m| {
            (
                method(m),
                m["params"]["item"]["type"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert!(
        items.contains(&("item/started", "contextCompaction")),
        "{items:?}"
    );
    assert!(
        items.contains(&("item/completed", "contextCompaction")),
        "{items:?}"
    );
    assert_eq!(
        seen.last().unwrap()["params"]["turn"]["status"],
        "completed"
    );
    assert_eq!(
        model.requests().len(),
        2,
        "the compaction asked the model once"
    );

    let unknown = server.call(
        "thread/compact/start",
        json!({ "threadId": "01a22a74-0000-7000-8000-000000000000" }),
    );
    assert_eq!(unknown["error"]["code"], -32600);
}

#[test]
fn rollback_drops_the_last_turn_from_what_the_model_sees_next() {
    let model = MockModel::start(json!({ "replies": [], "when_exhausted": "echo" }));
    let (mut server, _home) = started(&model);
    let cwd = tempfile::tempdir().unwrap();
    let thread = server.start_thread(json!({ "cwd": cwd.path() }));
    for text in ["keep this", "drop this"] {
        server.request(
            "turn/start",
            json!({ "threadId": thread, "input": text_input(text) }),
        );
        server.until(|m| method(m) == "turn/completed");
    }
    let rolled = server.call(
        "thread/rollback",
        json!({ "threadId": thread, "numTurns": 1 }),
    );
    let turns = rolled["result"]["thread"]["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 1, "{rolled:#}");
    assert_eq!(turns[0]["items"][0]["content"][0]["text"], "keep this");
    let too_many = server.call(
        "thread/rollback",
        json!({ "threadId": thread, "numTurns": 5 }),
    );
    assert_eq!(too_many["error"]["code"], -32600);

    server.request(
        "turn/start",
        json!({ "threadId": thread, "input": text_input("after") }),
    );
    server.until(|m| method(m) == "turn/completed");
    let last = model.requests().pop().unwrap().to_string();
    assert!(
        last.contains("keep this") && !last.contains("drop this"),
        "{last}"
    );
}

#[test]
fn a_review_runs_as_a_review_turn_with_review_mode_items() {
    let model = MockModel::start(json!({
        "replies": [
            { "text": "first answer" },
            { "text": "src/lib.rs:3: the error is swallowed" }
        ]
    }));
    let (mut server, _home) = started(&model);
    let cwd = tempfile::tempdir().unwrap();
    let thread = server.start_thread(json!({ "cwd": cwd.path() }));
    server.request(
        "turn/start",
        json!({ "threadId": thread, "input": text_input("earlier talk") }),
    );
    server.until(|m| method(m) == "turn/completed");

    let bad = server.call(
        "review/start",
        json!({ "threadId": thread, "target": { "type": "custom", "instructions": " " } }),
    );
    assert_eq!(bad["error"]["code"], -32602);
    assert_eq!(bad["error"]["data"]["field"], "target.instructions");

    let id = server.request(
        "review/start",
        json!({ "threadId": thread, "target": { "type": "baseBranch", "branch": "main" },
                "delivery": "inline" }),
    );
    let seen = server.until(|m| method(m) == "turn/completed");
    assert_eq!(seen[0]["id"], id, "the answer comes first");
    assert_eq!(seen[0]["result"]["reviewThreadId"], json!(thread));
    let turn_id = seen[0]["result"]["turn"]["id"].clone();
    let items: Vec<(String, Value)> = seen
        .iter()
        .filter(|m| method(m) == "item/completed")
        .map(|m| {
            let item = &m["params"]["item"];
            (item["type"].as_str().unwrap().to_owned(), item.clone())
        })
        .collect();
    let kinds: Vec<&str> = items.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        kinds,
        vec!["enteredReviewMode", "agentMessage", "exitedReviewMode"]
    );
    assert!(
        items[0].1["review"]
            .as_str()
            .unwrap()
            .contains("forked from `main`"),
        "{:#}",
        items[0].1
    );
    assert_eq!(items[2].1["review"], "src/lib.rs:3: the error is swallowed");
    let done = &seen.last().unwrap()["params"]["turn"];
    assert_eq!(done["id"], turn_id);
    assert_eq!(done["status"], "completed");
    // The reviewer started from a clean context: only the review request.
    let request = model.requests().pop().unwrap();
    assert_eq!(request["input"].as_array().unwrap().len(), 1, "{request:#}");
    // Read back from history, the turn shows the same review-mode items.
    let read = server.call(
        "thread/read",
        json!({ "threadId": thread, "includeTurns": true }),
    );
    let stored: Vec<&str> = read["result"]["thread"]["turns"][1]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        stored,
        vec!["enteredReviewMode", "agentMessage", "exitedReviewMode"]
    );
    assert!(server.finish().success());
}

#[test]
fn turn_start_effort_none_sends_it_and_streamed_reasoning_never_becomes_an_item() {
    let model = MockModel::start(json!({"replies": [
        { "reasoning": "SECRET-THOUGHTS", "text": "Quiet answer." },
        { "reasoning": "VISIBLE-THOUGHTS", "text": "Loud answer." }
    ]}));
    let (mut server, home) = started(&model);
    let cwd = tempfile::tempdir().unwrap();
    let thread = server.start_thread(json!({ "cwd": cwd.path() }));
    server.request(
        "turn/start",
        json!({ "threadId": thread, "input": text_input("one"), "effort": "none" }),
    );
    let quiet = server.until(|m| method(m) == "turn/completed");
    let text = serde_json::to_string(&quiet).unwrap();
    assert!(!text.contains("SECRET-THOUGHTS"), "{text}");
    assert!(!text.contains("\"reasoning\""), "{text}");
    assert!(text.contains("Quiet answer."), "{text}");
    // The same server's reasoning is an item once thinking is on again.
    server.request(
        "turn/start",
        json!({ "threadId": thread, "input": text_input("two"), "effort": "xhigh" }),
    );
    let loud = server.until(|m| method(m) == "turn/completed");
    let reasoning = loud
        .iter()
        .find(|m| method(m) == "item/completed" && m["params"]["item"]["type"] == "reasoning")
        .unwrap();
    assert!(reasoning.to_string().contains("VISIBLE-THOUGHTS"));
    let bodies = model.requests();
    assert_eq!(bodies[0]["reasoning"], json!({"effort": "none"}));
    assert_eq!(bodies[1]["reasoning"]["effort"], "xhigh");
    assert!(server.finish().success());
    let rollouts = walk_text(home.path());
    assert!(
        rollouts.contains("VISIBLE-THOUGHTS"),
        "the rollout was read"
    );
    assert!(!rollouts.contains("SECRET-THOUGHTS"));
}

/// Every `.jsonl` file under `dir`, concatenated.
fn walk_text(dir: &std::path::Path) -> String {
    let mut out = String::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.push_str(&walk_text(&path));
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            out.push_str(&std::fs::read_to_string(&path).unwrap());
        }
    }
    out
}
