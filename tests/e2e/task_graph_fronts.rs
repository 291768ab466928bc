//! The task graph as each front end shows it, from the same recorded changes: `rein exec
//! --json` prints `task_graph.updated` lines, `rein app-server` sends
//! `rein/taskGraph/updated` (after each change and to a client that resumes the thread),
//! `rein acp` shows the nodes as the session's plan. A planner root plans `a`, then `b`
//! after it; both workers answer; the graph completes.
#![allow(clippy::unwrap_used)]

use rein_test_support::acp::{update_kind, Acp};
use rein_test_support::app_server::{method, AppServer};
use rein_test_support::exec::{json_lines, MockModel};

use pretty_assertions::assert_eq;
use serde_json::{json, Value};

use crate::task_graph::{call, graph_home, node, workers};

/// A planner, two workers and no reviewer, in a home whose strategy is `planner`.
fn two_step_plan() -> (MockModel, MockModel, MockModel) {
    let planner = MockModel::start(json!({ "replies": [
        call("call_plan", "plan_tasks", json!({ "nodes": [node("a", &[]), node("b", &["a"])] })),
        { "text": "Both done." }
    ] }));
    let workers = workers(&[
        ("a", json!({ "text": "A done." })),
        ("b", json!({ "text": "B done." })),
    ]);
    let reviewers = MockModel::start(json!({ "replies": [] }));
    (planner, workers, reviewers)
}

/// `(id, state)` of each node of a graph shown as rein's protocol records it.
fn states(graph: &Value) -> Vec<(String, String)> {
    graph["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["id"].as_str().unwrap().to_owned(),
                n["state"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect()
}

#[test]
fn exec_json_prints_the_graph_after_each_change() {
    let (planner, workers, reviewers) = two_step_plan();
    let home = graph_home(&planner, &workers, &reviewers, "");
    let out = home.exec_ok(&["--json", "Build A then B."]);
    let graphs: Vec<Value> = json_lines(&out.stdout)
        .into_iter()
        .filter(|l| l["type"] == "task_graph.updated")
        .map(|l| l["graph"].clone())
        .collect();
    // Planned; a started; a finished; b started; b finished.
    assert_eq!(graphs.len(), 5, "{graphs:#?}");
    assert_eq!(
        states(&graphs[0]),
        pairs(&[("a", "ready"), ("b", "pending")])
    );
    assert_eq!(
        states(&graphs[4]),
        pairs(&[("a", "completed"), ("b", "completed")])
    );
    assert_eq!(
        graphs[4]["nodes"][1]["attempts"][0]["outcome"],
        json!({ "type": "completed", "answer": "B done." })
    );
}

#[test]
fn the_app_server_sends_the_graph_after_each_change_and_to_a_client_that_resumes() {
    let (planner, workers, reviewers) = two_step_plan();
    let home = graph_home(&planner, &workers, &reviewers, "");
    let cwd = tempfile::tempdir().unwrap();
    let mut server = AppServer::start(home.path(), &[]);
    server.initialize();
    let thread = server.start_thread(json!({ "cwd": cwd.path() }));
    server.request(
        "turn/start",
        json!({ "threadId": thread, "input": [{ "type": "text", "text": "Build A then B." }] }),
    );
    let done = |m: &Value| {
        method(m) == "rein/taskGraph/updated" && m["params"]["graph"]["status"] == "completed"
    };
    let seen = server.until(done);
    let graphs: Vec<&Value> = seen
        .iter()
        .filter(|m| method(m) == "rein/taskGraph/updated")
        .inspect(|m| assert_eq!(m["params"]["threadId"], json!(thread)))
        .map(|m| &m["params"]["graph"])
        .collect();
    // Each update is the graph as the kernel has folded it when the pump sends it, so the
    // first may already show `a` started.
    let first = states(graphs[0]);
    assert!(
        first == pairs(&[("a", "ready"), ("b", "pending")])
            || first == pairs(&[("a", "running"), ("b", "pending")]),
        "{first:?}"
    );
    let last = graphs.last().unwrap();
    let b_thread = last["nodes"][1]["threadId"].clone();
    assert!(b_thread.is_string(), "{last}");
    assert_eq!(
        last["nodes"][1],
        json!({
            "id": "b", "title": "B", "role": "worker", "dependsOn": ["a"], "reviews": null,
            "state": "completed", "attempts": 1, "threadId": b_thread, "reviewRounds": 0,
            "outcome": { "type": "completed", "answer": "B done." }
        })
    );
    server.until(|m| method(m) == "turn/completed" && m["params"]["threadId"] == json!(thread));
    assert!(server.finish().success());

    // A client resuming the thread is sent the graph as it ended.
    let mut server = AppServer::start(home.path(), &[]);
    server.initialize();
    server.call("thread/resume", json!({ "threadId": thread }));
    let snapshot = server
        .until(|m| method(m) == "rein/taskGraph/updated")
        .pop()
        .unwrap();
    assert_eq!(&snapshot["params"]["graph"], *last);
    assert!(server.finish().success());
}

#[test]
fn rein_acp_shows_the_nodes_as_the_sessions_plan() {
    let (planner, workers, reviewers) = two_step_plan();
    let home = graph_home(&planner, &workers, &reviewers, "");
    let cwd = tempfile::tempdir().unwrap();
    let mut acp = Acp::start(home.path());
    acp.initialize();
    let session = acp.new_session(cwd.path());
    let id = acp.prompt(&session, "Build A then B.");
    let (seen, _) = acp.answer_to(&id);
    let plans: Vec<Vec<(String, String)>> = seen
        .iter()
        .filter(|m| update_kind(m) == "plan")
        .map(|m| {
            m["params"]["update"]["entries"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| {
                    (
                        e["content"].as_str().unwrap().to_owned(),
                        e["status"].as_str().unwrap().to_owned(),
                    )
                })
                .collect()
        })
        .collect();
    assert_eq!(
        plans.first(),
        Some(&pairs(&[
            ("A [worker]", "pending"),
            ("B [worker]", "pending")
        ]))
    );
    assert_eq!(
        plans.last(),
        Some(&pairs(&[
            ("A [worker]", "completed"),
            ("B [worker]", "completed")
        ]))
    );
    assert!(
        plans.contains(&pairs(&[
            ("A [worker]", "in_progress"),
            ("B [worker]", "pending")
        ])),
        "{plans:#?}"
    );
    acp.finish();
}
