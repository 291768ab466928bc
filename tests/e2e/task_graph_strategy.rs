//! A strategy per thread: `thread/start`'s `config` (`agents.strategy`, as Codex's clients
//! send configuration keys there) chooses how one root works, whatever the server's
//! configuration says, and the choice is recorded so the thread keeps it for its life.
#![allow(clippy::unwrap_used)]

use rein_test_support::app_server::{method, AppServer};
use rein_test_support::exec::{Home, MockModel};

use pretty_assertions::assert_eq;
use serde_json::{json, Value};

use crate::task_graph::{call, graph_home, node, workers};

/// Whether a request offered the model `plan_tasks`.
fn plans(request: &Value) -> bool {
    request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["name"] == "plan_tasks")
}

/// A home whose configured strategy is `single` (the graph home's, with that one key).
fn single_home(planner: &MockModel, workers: &MockModel, reviewers: &MockModel) -> Home {
    let home = graph_home(planner, workers, reviewers, "");
    let path = home.path().join("config.toml");
    let config = std::fs::read_to_string(&path).unwrap();
    let single = config.replace("strategy = \"planner\"", "strategy = \"single\"");
    assert_ne!(config, single);
    std::fs::write(&path, single).unwrap();
    home
}

#[test]
fn a_thread_started_as_planner_plans_and_keeps_its_strategy_where_the_default_is_single() {
    let planner = MockModel::start(json!({ "replies": [
        call("call_plan", "plan_tasks", json!({ "nodes": [node("a", &[])] })),
        { "text": "Planned and done." },
        { "text": "Single." },
        { "text": "Again." }
    ] }));
    let workers = workers(&[("a", json!({ "text": "A done." }))]);
    let reviewers = MockModel::start(json!({ "replies": [] }));
    let home = single_home(&planner, &workers, &reviewers);
    let cwd = tempfile::tempdir().unwrap();

    let mut server = AppServer::start(home.path(), &[]);
    server.initialize();
    let planned = server.start_thread(json!({
        "cwd": cwd.path(), "config": { "agents.strategy": "planner" }
    }));
    server.request(
        "turn/start",
        json!({ "threadId": planned, "input": [{ "type": "text", "text": "Plan it." }] }),
    );
    server.until(|m| {
        method(m) == "rein/taskGraph/updated" && m["params"]["graph"]["status"] == "completed"
    });
    server.until(|m| method(m) == "turn/completed" && m["params"]["threadId"] == json!(planned));
    let single = server.start_thread(json!({ "cwd": cwd.path() }));
    server.turn(&single, "Single.");
    assert!(server.finish().success());

    // A new server (the same configuration) resumes the planner thread: still a planner.
    let mut server = AppServer::start(home.path(), &[]);
    server.initialize();
    server.call("thread/resume", json!({ "threadId": planned }));
    server.turn(&planned, "Again.");
    assert!(server.finish().success());

    let offered: Vec<(bool, bool, bool)> = planner
        .requests()
        .iter()
        .map(|r| {
            let input = r["input"].to_string();
            (
                input.contains("Plan it."),
                input.contains("Single."),
                plans(r),
            )
        })
        .collect();
    // The planner thread's two requests, then the single thread's, then the resumed one.
    assert_eq!(
        offered,
        vec![
            (true, false, true),
            (true, false, true),
            (false, true, false),
            (true, false, true)
        ]
    );
    assert_eq!(workers.requests().len(), 1);
}

#[test]
fn a_strategy_that_cannot_be_honoured_is_refused_naming_the_key() {
    let planner = MockModel::start(json!({ "replies": [] }));
    let workers = MockModel::start(json!({ "replies": [] }));
    let reviewers = MockModel::start(json!({ "replies": [] }));
    let home = single_home(&planner, &workers, &reviewers);
    let cwd = tempfile::tempdir().unwrap();
    let mut server = AppServer::start(home.path(), &["-c", "features.multi_agent=false"]);
    server.initialize();
    let unknown = server.call(
        "thread/start",
        json!({ "cwd": cwd.path(), "config": { "agents": { "strategy": "swarm" } } }),
    );
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    assert_eq!(
        unknown["error"]["data"],
        json!({ "field": "config.agents.strategy" })
    );
    let off = server.call(
        "thread/start",
        json!({ "cwd": cwd.path(), "config": { "agents.strategy": "planner" } }),
    );
    let message = off["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("planner strategy needs sub-agents"),
        "{off}"
    );
    // Nothing was started: no rollout, and the list is empty.
    let list = server.call("thread/list", json!({}));
    assert_eq!(list["result"]["data"], json!([]), "{list}");
    assert!(server.finish().success());
}
