//! Sub-agents as IDEs see them through `rein app-server`: a parent's model spawns a child
//! and waits for it. The child's `thread/started` (with its parent, nickname and sub-agent
//! source) comes before any of its notifications, which reach the parent's connection
//! tagged with the child's id; the child's approval request is put to that connection and
//! the answer reaches the child; the sub-agent calls are `collabAgentToolCall` items;
//! `thread/read` works on the child and `thread/list` shows it only when `sourceKinds`
//! asks, after a restart still with its nickname and role. The parent and the child each talk to their own `rein mock-model` (the child's
//! model is routed to its server as the profile's fallback model), so each script is
//! played in order. Every message is checked against Codex's schema by the harness.
#![allow(clippy::unwrap_used)]

#[path = "support/app_server.rs"]
mod support;

use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use support::{home_for_tree, method, AppServer, MockModel};

fn call(call_id: &str, name: &str, arguments: Value) -> Value {
    json!({ "tool_calls": [{ "call_id": call_id, "name": name, "arguments": arguments }] })
}

fn thread_of(m: &Value) -> Option<&str> {
    m["params"]["threadId"].as_str()
}

fn collab_items<'a>(seen: &'a [Value], tool: &str) -> Vec<&'a Value> {
    seen.iter()
        .filter(|m| method(m) == "item/completed")
        .map(|m| &m["params"]["item"])
        .filter(|i| i["type"] == "collabAgentToolCall" && i["tool"] == tool)
        .collect()
}

#[test]
fn a_child_is_announced_first_routed_to_the_root_and_approved_there() {
    let parent_model = MockModel::start(json!({
        "replies": [
            call("call_spawn", "spawn_agent", json!({ "message": "Make the file.", "model": "child", "agent_type": "worker" })),
            call("call_wait", "wait_agent", json!({ "targets": ["Ada"], "timeout_ms": 60000 })),
            { "text": "Parent done." }
        ],
        "when_exhausted": "echo"
    }));
    let child_model = MockModel::start(json!({
        "replies": [
            call("call_touch", "shell", json!({ "command": ["touch", "made.txt"] })),
            { "text": "Child done." }
        ],
        "when_exhausted": "echo"
    }));
    let home = home_for_tree(&parent_model, &child_model);
    let cwd = tempfile::tempdir().unwrap();
    let mut server = AppServer::start(home.path(), &[]);
    server.initialize();
    let parent = server.start_thread(json!({
        "cwd": cwd.path(), "approvalPolicy": "untrusted", "sandbox": "danger-full-access"
    }));
    server.request(
        "turn/start",
        json!({ "threadId": parent, "input": [{ "type": "text", "text": "Delegate it." }] }),
    );

    // The child asks; the question reaches the parent's connection with the child's id.
    let mut seen = server.until(|m| method(m) == "item/commandExecution/requestApproval");
    let ask = seen.last().unwrap().clone();
    let child = thread_of(&ask).unwrap().to_owned();
    assert_ne!(child, parent);
    assert_eq!(ask["params"]["command"], "touch made.txt");
    server.send(&json!({ "id": ask["id"], "result": { "decision": "accept" } }));
    seen.extend(
        server.until(|m| method(m) == "turn/completed" && thread_of(m) == Some(parent.as_str())),
    );
    assert!(
        cwd.path().join("made.txt").exists(),
        "the child ran the approved command"
    );

    // thread/started for the child, before anything else of it.
    let first_of_child = seen
        .iter()
        .position(|m| {
            thread_of(m) == Some(child.as_str()) || m["params"]["thread"]["id"] == json!(child)
        })
        .unwrap();
    let started = &seen[first_of_child];
    assert_eq!(method(started), "thread/started", "{started:#}");
    let thread = &started["params"]["thread"];
    assert_eq!(
        (
            &thread["parentThreadId"],
            &thread["agentNickname"],
            &thread["agentRole"],
            &thread["source"],
        ),
        (
            &json!(parent),
            &json!("Ada"),
            &json!("worker"),
            &json!({"subAgent": {"thread_spawn": {
                "parent_thread_id": parent, "depth": 1, "agent_path": null,
                "agent_nickname": "Ada", "agent_role": "worker",
            }}}),
        )
    );
    // The child's turn and items are told, tagged with its id.
    let child_methods: Vec<&str> = seen
        .iter()
        .filter(|m| thread_of(m) == Some(child.as_str()))
        .map(method)
        .collect();
    for expected in [
        "turn/started",
        "item/commandExecution/requestApproval",
        "turn/completed",
    ] {
        assert!(
            child_methods.contains(&expected),
            "{expected} of the child: {child_methods:?}"
        );
    }

    // The collab items: the spawn names the new agent, the wait carries its answer.
    let spawn = collab_items(&seen, "spawnAgent");
    assert_eq!(spawn.len(), 1);
    assert_eq!(spawn[0]["id"], "call_spawn");
    assert_eq!(spawn[0]["senderThreadId"], json!(parent));
    assert_eq!(spawn[0]["receiverThreadIds"], json!([child]));
    assert_eq!(spawn[0]["prompt"], "Make the file.");
    assert_eq!(spawn[0]["model"], "child");
    assert_eq!(spawn[0]["status"], "completed");
    let wait = collab_items(&seen, "wait");
    assert_eq!(wait.len(), 1);
    assert_eq!(
        (
            &wait[0]["receiverThreadIds"],
            &wait[0]["agentsStates"],
            &wait[0]["status"]
        ),
        (
            &json!([child]),
            &json!({ child.clone(): { "status": "completed", "message": "Child done." } }),
            &json!("completed"),
        )
    );

    // thread/read of the child: its task as a user message, its answer.
    let read = server.call(
        "thread/read",
        json!({ "threadId": child, "includeTurns": true }),
    );
    let read_thread = &read["result"]["thread"];
    assert_eq!(read_thread["parentThreadId"], json!(parent));
    let items: Vec<&Value> = read_thread["turns"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["items"].as_array().unwrap())
        .collect();
    let kinds: Vec<&str> = items.iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["userMessage", "commandExecution", "agentMessage"]);
    assert_eq!(items[0]["content"][0]["text"], "Make the file.");
    assert_eq!(items[2]["text"], "Child done.");

    // thread/list hides the child unless asked for sub-agents.
    let ids = |server: &mut AppServer, params: Value| -> Vec<String> {
        let list = server.call("thread/list", params);
        list["result"]["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(ids(&mut server, json!({})), std::slice::from_ref(&parent));
    assert_eq!(
        ids(
            &mut server,
            json!({ "sourceKinds": ["subAgentThreadSpawn"] })
        ),
        std::slice::from_ref(&child)
    );
    let mut both = ids(
        &mut server,
        json!({ "sourceKinds": ["appServer", "vscode", "subAgent"] }),
    );
    both.sort();
    let mut expected = vec![parent.clone(), child.clone()];
    expected.sort();
    assert_eq!(both, expected);

    // A restarted server lists the stored child with its nickname and role, read from the
    // child's rollout (the index knows only its parent).
    server.kill();
    let mut server = AppServer::start(home.path(), &[]);
    server.initialize();
    let list = server.call(
        "thread/list",
        json!({ "sourceKinds": ["subAgentThreadSpawn"] }),
    );
    let data = list["result"]["data"].as_array().unwrap();
    assert_eq!(data.len(), 1, "{list:#}");
    let stored = &data[0];
    let path = stored["path"].as_str().unwrap();
    assert!(std::path::Path::new(path).is_file(), "{path}");
    let (created, updated) = (&stored["createdAt"], &stored["updatedAt"]);
    assert!(created.as_i64().unwrap() <= updated.as_i64().unwrap());
    assert_eq!(
        stored,
        &json!({
            "id": child,
            "sessionId": child,
            "forkedFromId": null,
            "parentThreadId": parent,
            "preview": "Make the file.",
            "ephemeral": false,
            "projectId": null,
            "historyMode": "legacy",
            "modelProvider": stored["modelProvider"],
            "model": "child",
            "reasoningEffort": stored["reasoningEffort"],
            "createdAt": created,
            "updatedAt": updated,
            "recencyAt": updated,
            "status": { "type": "notLoaded" },
            "path": path,
            "cwd": cwd.path().display().to_string(),
            "cliVersion": stored["cliVersion"],
            "originator": "rein",
            "source": {"subAgent": {"thread_spawn": {
                "parent_thread_id": parent, "depth": 1, "agent_path": null,
                "agent_nickname": "Ada", "agent_role": "worker",
            }}},
            "threadSource": "subagent",
            "agentNickname": "Ada",
            "agentRole": "worker",
            "gitInfo": null,
            "name": null,
            "turns": [],
        })
    );
    server.kill();
}
