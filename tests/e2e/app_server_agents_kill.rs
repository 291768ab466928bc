//! kill -9 of `rein app-server` in the middle of a tree, then a new server on the same
//! home. The root's model spawns a child that finishes (`Ada`), waits for it, spawns a
//! second child whose model stream hangs (`Babbage`, mid-turn), steers it with more input
//! (mail that is still in its mailbox), and waits for it. The kill lands while the root is
//! blocked in that wait and the second child is streaming. After `thread/resume` of the
//! root: both children are back (loaded, readable, listed), the finished child is still
//! completed with its answer and the killed one is interrupted, the mail is not lost (it
//! reaches the child's model after the resume), and the root's next turn completes with
//! the tree's statuses as `list_agents` reads them. Every message is checked against
//! Codex's schema by the harness. A second tree kills the server while `send_input` mail
//! waits for the tree's capacity (`max_concurrent_turns = 1`): it is delivered once after
//! the resume.
#![allow(clippy::unwrap_used)]

use rein_test_support::app_server as support;

use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use support::{home_for_tree, method, AppServer, MockModel};

fn call(call_id: &str, name: &str, arguments: Value) -> Value {
    json!({ "call_id": call_id, "name": name, "arguments": arguments })
}

fn thread_of(m: &Value) -> Option<&str> {
    m["params"]["threadId"].as_str()
}

/// The text of every `function_call_output` of `call_id` in `request`.
fn tool_output(request: &Value, call_id: &str) -> Option<Value> {
    request["input"]
        .as_array()?
        .iter()
        .find(|i| i["type"] == "function_call_output" && i["call_id"] == call_id)
        .map(|i| {
            let text = i["output"].as_str().unwrap_or_default();
            serde_json::from_str(text).unwrap_or_else(|_| json!(text))
        })
}

fn user_texts(request: &Value) -> Vec<String> {
    request["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["role"] == "user")
        .flat_map(|i| i["content"].as_array().cloned().unwrap_or_default())
        .filter_map(|c| c["text"].as_str().map(str::to_owned))
        .collect()
}

/// The turns of thread `id` as `thread/read` gives them: status and agent messages.
fn turns_of(server: &mut AppServer, id: &str) -> Vec<(String, Vec<String>)> {
    let read = server.call(
        "thread/read",
        json!({ "threadId": id, "includeTurns": true }),
    );
    read["result"]["thread"]["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let texts = t["items"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|i| i["type"] == "agentMessage")
                .map(|i| i["text"].as_str().unwrap().to_owned())
                .collect();
            (t["status"].as_str().unwrap().to_owned(), texts)
        })
        .collect()
}

/// Run until `Babbage` streams (its model hangs) and a `send_input` call completed: where
/// the server is killed. Ada's and Babbage's thread ids.
fn until_babbage_streams_after_send(a: &mut AppServer) -> (String, String) {
    let mut babbage = None;
    let mut sent = false;
    let mut streaming = false;
    let seen = a.until(|m| {
        if method(m) == "thread/started" && m["params"]["thread"]["agentNickname"] == "Babbage" {
            babbage = m["params"]["thread"]["id"].as_str().map(str::to_owned);
        }
        if method(m) == "item/agentMessage/delta"
            && babbage.is_some()
            && thread_of(m) == babbage.as_deref()
        {
            streaming = true;
        }
        if method(m) == "item/completed"
            && m["params"]["item"]["type"] == "collabAgentToolCall"
            && m["params"]["item"]["tool"] == "sendInput"
        {
            sent = true;
        }
        streaming && sent
    });
    let ada = seen
        .iter()
        .find(|m| method(m) == "thread/started" && m["params"]["thread"]["agentNickname"] == "Ada")
        .and_then(|m| m["params"]["thread"]["id"].as_str())
        .unwrap()
        .to_owned();
    (ada, babbage.unwrap())
}

#[test]
fn a_tree_killed_mid_turn_comes_back_whole_on_resume() {
    let parent_model = MockModel::start(json!({
        "replies": [
            { "tool_calls": [call("call_a", "spawn_agent", json!({ "message": "Task A.", "model": "child" }))] },
            { "tool_calls": [call("call_wait_a", "wait_agent", json!({ "targets": ["Ada"], "timeout_ms": 60000 }))] },
            { "tool_calls": [call("call_b", "spawn_agent", json!({ "message": "Task B.", "model": "child" }))] },
            { "tool_calls": [
                call("call_steer", "send_input", json!({ "target": "Babbage", "message": "Also do C." })),
                call("call_wait_b", "wait_agent", json!({ "targets": ["Babbage"], "timeout_ms": 3600000 }))
            ] },
            // After the restart: the user's next turn reads the tree, then answers.
            { "tool_calls": [call("call_list", "list_agents", json!({}))] },
            { "text": "Root resumed." }
        ],
        "when_exhausted": "echo"
    }));
    let child_model = MockModel::start(json!({
        "replies": [
            { "text": "A done." },
            { "text": "B is working", "deltas": 4, "fault": { "type": "hang" } },
            { "text": "B done after the restart." }
        ],
        "when_exhausted": "echo"
    }));
    let home = home_for_tree(&parent_model, &child_model);
    let cwd = tempfile::tempdir().unwrap();

    let mut a = AppServer::start(home.path(), &[]);
    a.initialize();
    let root = a.start_thread(json!({
        "cwd": cwd.path(), "approvalPolicy": "never", "sandbox": "danger-full-access"
    }));
    a.request(
        "turn/start",
        json!({ "threadId": root, "input": [{ "type": "text", "text": "Delegate both." }] }),
    );
    // The second child streams and hangs; the steer has been accepted (its send_input item
    // completed) and the root waits: then the process dies.
    let (ada, babbage) = until_babbage_streams_after_send(&mut a);
    a.kill();

    let mut b = AppServer::start(home.path(), &[]);
    b.initialize();
    let resumed = b.call("thread/resume", json!({ "threadId": root }));
    assert!(resumed.get("result").is_some(), "{resumed:#}");

    // Both children are back, each with what its own rollout says.
    let status_of = |server: &mut AppServer, id: &str| -> Vec<(String, Vec<String>)> {
        let read = server.call("thread/read", json!({ "threadId": id }));
        assert_eq!(
            read["result"]["thread"]["parentThreadId"],
            json!(root),
            "{read:#}"
        );
        turns_of(server, id)
    };
    assert_eq!(
        status_of(&mut b, &ada),
        vec![("completed".to_owned(), vec!["A done.".to_owned()])]
    );

    // The steer that was in Babbage's mailbox at the kill is delivered again: it starts a
    // turn on the restored child, whose result then wakes the root (mail to an idle
    // thread), and the root's model reads the tree with list_agents.
    b.until(|m| method(m) == "turn/completed" && thread_of(m) == Some(root.as_str()));
    // Looked for in everything received: the child may have finished while `thread/read`
    // above was waiting for its answer (which reads past notifications).
    let ended = |thread: &str| {
        b.transcript
            .iter()
            .rposition(|m| method(m) == "turn/completed" && thread_of(m) == Some(thread))
    };
    let (child_done, root_woke) = (ended(&babbage), ended(&root));
    assert!(
        child_done.is_some() && child_done < root_woke,
        "the restored child finished its delivered mail before the root woke"
    );
    let child_requests = child_model.requests();
    assert_eq!(
        child_requests.len(),
        3,
        "Ada, Babbage before the kill, Babbage after"
    );
    let after = user_texts(child_requests.last().unwrap());
    assert_eq!(
        after,
        [
            "Task B.",
            "<turn_aborted>The user interrupted the previous turn. Output above may be incomplete.</turn_aborted>",
            "Also do C.",
        ],
        "the steer reached the child after the resume, once, after the kill's interruption"
    );
    assert_eq!(
        status_of(&mut b, &babbage),
        vec![
            // Killed while streaming: deltas are not kept, so its turn has no answer.
            ("interrupted".to_owned(), vec![]),
            (
                "completed".to_owned(),
                vec!["B done after the restart.".to_owned()]
            ),
        ]
    );
    let requests = parent_model.requests();
    let listed = tool_output(requests.last().unwrap(), "call_list").unwrap();
    let mut agents: Vec<(Value, Value, Value)> = listed["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["id"].clone(), a["nickname"].clone(), a["status"].clone()))
        .collect();
    agents.sort_by_key(|e| e.0.to_string());
    let mut expected = vec![
        (json!(ada), json!("Ada"), json!({ "completed": "A done." })),
        (
            json!(babbage),
            json!("Babbage"),
            json!({ "completed": "B done after the restart." }),
        ),
    ];
    expected.sort_by_key(|e| e.0.to_string());
    assert_eq!(agents, expected);

    // And the user's next turn on the root completes.
    let answer = b.call(
        "turn/start",
        json!({ "threadId": root, "input": [{ "type": "text", "text": "Where are we?" }] }),
    );
    assert!(answer.get("result").is_some(), "{answer:#}");
    b.until(|m| method(m) == "turn/completed" && thread_of(m) == Some(root.as_str()));
    b.kill();
}

/// With `[agents] max_concurrent_turns = 1`: `Ada` finishes, `Babbage` runs and hangs
/// (holding the tree's one slot), and `send_input` to the idle `Ada` waits for capacity.
/// The kill lands while that mail waits in the queue; after `thread/resume` of the root
/// it reaches `Ada` exactly once, and its result wakes the root.
#[test]
fn mail_waiting_for_capacity_at_a_kill_is_delivered_once_on_resume() {
    let parent_model = MockModel::start(json!({
        "replies": [
            { "tool_calls": [call("call_a", "spawn_agent", json!({ "message": "Task A.", "model": "child" }))] },
            { "tool_calls": [call("call_wait_a", "wait_agent", json!({ "targets": ["Ada"], "timeout_ms": 60000 }))] },
            { "tool_calls": [call("call_b", "spawn_agent", json!({ "message": "Task B.", "model": "child" }))] },
            { "tool_calls": [
                call("call_more", "send_input", json!({ "target": "Ada", "message": "Also do C." })),
                call("call_wait_b", "wait_agent", json!({ "targets": ["Babbage"], "timeout_ms": 3600000 }))
            ] },
            // After the restart, woken by Ada's result.
            { "text": "Root resumed." }
        ],
        "when_exhausted": "echo"
    }));
    let child_model = MockModel::start(json!({
        "replies": [
            { "text": "A done." },
            { "text": "B is working", "deltas": 4, "fault": { "type": "hang" } },
            { "text": "A did C." }
        ],
        "when_exhausted": "echo"
    }));
    let home = home_for_tree(&parent_model, &child_model);
    let config = home.path().join("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("\n[agents]\nmax_concurrent_turns = 1\n");
    std::fs::write(&config, text).unwrap();
    let cwd = tempfile::tempdir().unwrap();

    let mut a = AppServer::start(home.path(), &[]);
    a.initialize();
    let root = a.start_thread(json!({
        "cwd": cwd.path(), "approvalPolicy": "never", "sandbox": "danger-full-access"
    }));
    a.request(
        "turn/start",
        json!({ "threadId": root, "input": [{ "type": "text", "text": "Delegate both." }] }),
    );
    let (ada, _babbage) = until_babbage_streams_after_send(&mut a);
    // Ada did not start a turn for the mail: it waits for Babbage's slot.
    assert_eq!(child_model.requests().len(), 2, "Ada once, Babbage");
    a.kill();

    let mut b = AppServer::start(home.path(), &[]);
    b.initialize();
    let resumed = b.call("thread/resume", json!({ "threadId": root }));
    assert!(resumed.get("result").is_some(), "{resumed:#}");
    let woken = b.until(|m| method(m) == "turn/completed" && thread_of(m) == Some(root.as_str()));
    assert!(
        woken
            .iter()
            .any(|m| method(m) == "turn/completed" && thread_of(m) == Some(ada.as_str())),
        "Ada finished the mail before the root woke"
    );
    let child_requests = child_model.requests();
    assert_eq!(
        child_requests.len(),
        3,
        "Ada, Babbage, Ada after the resume"
    );
    assert_eq!(
        user_texts(child_requests.last().unwrap()),
        ["Task A.", "Also do C."],
        "the mail reached Ada after the resume, once"
    );
    assert_eq!(
        turns_of(&mut b, &ada),
        vec![
            ("completed".to_owned(), vec!["A done.".to_owned()]),
            ("completed".to_owned(), vec!["A did C.".to_owned()]),
        ]
    );
    b.kill();
}
