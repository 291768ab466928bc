//! Sub-agents in `rein exec`: the parent's sub-agent calls are `collab_tool_call` items in
//! `--json` (Codex's exec shape: tool, sender, receivers, prompt, agents' states, status),
//! and the human output lists the agents a call concerned as an indented tree with their
//! status. The parent and the child each talk to their own `rein mock-model` (the child's
//! model is the profile's fallback model, routed to its server).
#![allow(clippy::unwrap_used)]

use rein_test_support::exec as support;

use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use support::{json_lines, Home, MockModel};

fn call(call_id: &str, name: &str, arguments: Value) -> Value {
    json!({ "tool_calls": [{ "call_id": call_id, "name": name, "arguments": arguments }] })
}

/// A home whose main model is on `parent` and whose model `child` is on `child`.
fn tree_home(parent: &MockModel, child: &MockModel) -> Home {
    let home = Home::new(parent, "responses");
    let provider = |name: &str, url: &str| {
        format!(
            "[model_providers.{name}]\nbase_url = \"{url}\"\nwire_api = \"responses\"\nenv_key = \"MOCK_API_KEY\"\n\n"
        )
    };
    let config = format!(
        "model = \"mock\"\nmodel_provider = \"mock\"\nprofile = \"tree\"\n\n[profiles.tree]\nfallback_model = \"child\"\nfallback_provider = \"mockchild\"\n\n{}{}",
        provider("mock", &parent.base_url),
        provider("mockchild", &child.base_url),
    );
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    home
}

fn models() -> (MockModel, MockModel) {
    let parent = MockModel::start(json!({
        "replies": [
            call("call_spawn", "spawn_agent", json!({ "message": "Count to three.", "model": "child" })),
            call("call_wait", "wait_agent", json!({ "targets": ["Ada"], "timeout_ms": 60000 })),
            { "text": "Parent done." }
        ]
    }));
    let child = MockModel::start(json!({ "replies": [{ "text": "One, two, three." }] }));
    (parent, child)
}

#[test]
fn json_reports_collab_tool_calls_with_the_agents_states() {
    let (parent, child) = models();
    let home = tree_home(&parent, &child);
    let out = home.exec_ok(&["--json", "Delegate the counting."]);
    let events = json_lines(&out.stdout);
    let root = events[0]["thread_id"].as_str().unwrap().to_owned();
    let collab: Vec<&Value> = events
        .iter()
        .filter(|e| e["item"]["type"] == "collab_tool_call")
        .collect();
    let spawned = collab[1]["item"]["receiver_thread_ids"][0]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(spawned, root);
    // What the spawn left the child in depends on how fast it started; the wait is exact.
    let spawn_state = collab[1]["item"]["agents_states"][&spawned]["status"].clone();
    assert!(
        ["pending_init", "running"].contains(&spawn_state.as_str().unwrap()),
        "{spawn_state}"
    );
    let shapes: Vec<Value> = collab
        .iter()
        .map(|e| {
            let mut item = e["item"].clone();
            item.as_object_mut().unwrap().remove("id");
            json!({ "type": e["type"], "item": item })
        })
        .collect();
    assert_eq!(
        shapes,
        [
            json!({ "type": "item.started", "item": {
                "type": "collab_tool_call", "tool": "spawn_agent", "sender_thread_id": root,
                "receiver_thread_ids": [], "prompt": "Count to three.", "agents_states": {},
                "status": "in_progress" } }),
            json!({ "type": "item.completed", "item": {
                "type": "collab_tool_call", "tool": "spawn_agent", "sender_thread_id": root,
                "receiver_thread_ids": [spawned], "prompt": "Count to three.",
                "agents_states": { spawned.clone(): { "status": spawn_state } },
                "status": "completed" } }),
            json!({ "type": "item.started", "item": {
                "type": "collab_tool_call", "tool": "wait", "sender_thread_id": root,
                "receiver_thread_ids": [spawned], "prompt": null, "agents_states": {},
                "status": "in_progress" } }),
            json!({ "type": "item.completed", "item": {
                "type": "collab_tool_call", "tool": "wait", "sender_thread_id": root,
                "receiver_thread_ids": [spawned], "prompt": null,
                "agents_states": { spawned: { "status": "completed", "message": "One, two, three." } },
                "status": "completed" } }),
        ]
    );
    let last = &events[events.len() - 2]["item"];
    assert_eq!(last["text"], "Parent done.");
}

#[test]
fn human_output_shows_the_agents_as_an_indented_tree() {
    let (parent, child) = models();
    let home = tree_home(&parent, &child);
    let out = home.exec_ok(&["Delegate the counting."]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "Parent done.");
    let tree: Vec<&str> = stderr
        .lines()
        .filter(|l| l.trim_start().starts_with('└'))
        .collect();
    assert_eq!(tree.len(), 2, "{stderr}");
    assert!(tree[0].starts_with("  └ Ada ["), "{stderr}");
    assert!(
        tree[1].starts_with("  └ Ada [") && tree[1].ends_with("] completed: One, two, three."),
        "{stderr}"
    );
}
