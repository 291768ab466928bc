//! Retries by failure class: a node whose attempt failed transiently (its turn failed: a
//! model error) runs again on a new sub-agent after a backoff that doubles, up to
//! `[agents] max_retries`; then it fails and its dependents are blocked. What happened is
//! read from the root's recorded `task_graph_changed` events and their timestamps.
#![allow(clippy::unwrap_used)]

use rein_test_support::exec::MockModel;

use pretty_assertions::assert_eq;
use serde_json::json;

use crate::task_graph::{call, graph_changes, graph_home, node, root_of, shape};

const BACKOFF_MS: u64 = 300;

/// The recorded times of `start:ID` changes and of the `finished:ID:…` ones before them.
fn gaps(changes: &[(u64, serde_json::Value)], id: &str) -> Vec<u64> {
    let mut last_end = None;
    let mut gaps = Vec::new();
    for (at, change) in changes {
        let shape = shape(change);
        if shape == format!("started:{id}") {
            if let Some(end) = last_end {
                gaps.push(at - end);
            }
        } else if shape.starts_with(&format!("finished:{id}:")) {
            last_end = Some(*at);
        }
    }
    gaps
}

#[test]
fn a_model_error_is_retried_after_the_backoff_and_the_node_completes() {
    let planner = MockModel::start(json!({ "replies": [
        call("call_plan", "plan_tasks", json!({ "nodes": [node("a", &[])] })),
        { "text": "Done." }
    ] }));
    // The first attempt's model request fails; the second attempt's answers.
    let workers = MockModel::start(json!({ "replies": [
        { "fault": { "type": "http_error", "status": 400, "message": "bad input" } },
        { "text": "A done." }
    ] }));
    let reviewers = MockModel::start(json!({ "replies": [] }));
    let extra = format!("max_retries = 2\nretry_backoff_ms = {BACKOFF_MS}");
    let home = graph_home(&planner, &workers, &reviewers, &extra);
    let out = home.exec_ok(&["--json", "Build A."]);
    let root = root_of(&out.stdout);
    let changes = graph_changes(&home, &root);
    let shapes: Vec<String> = changes.iter().map(|(_, c)| shape(c)).collect();
    assert_eq!(
        shapes,
        [
            "planned",
            "started:a",
            "finished:a:failed:turn_failed",
            "started:a",
            "finished:a:completed"
        ]
    );
    let gaps = gaps(&changes, "a");
    assert!(gaps.len() == 1 && gaps[0] >= BACKOFF_MS, "{gaps:?}");
    // Two attempts, two sub-agent threads.
    let threads: Vec<&serde_json::Value> = changes
        .iter()
        .filter(|(_, c)| c["type"] == "node_started")
        .map(|(_, c)| &c["thread_id"])
        .collect();
    assert_ne!(threads[0], threads[1]);
}

#[test]
fn a_node_failing_every_attempt_fails_after_its_retries_and_blocks_its_dependents() {
    let planner = MockModel::start(json!({ "replies": [
        call("call_plan", "plan_tasks", json!({ "nodes": [node("a", &[]), node("b", &["a"])] })),
        { "text": "Reported." }
    ] }));
    // Every request fails.
    let workers = MockModel::start(json!({ "replies": [], "when_exhausted": "error" }));
    let reviewers = MockModel::start(json!({ "replies": [] }));
    let extra = format!("max_retries = 2\nretry_backoff_ms = {BACKOFF_MS}");
    let home = graph_home(&planner, &workers, &reviewers, &extra);
    let out = home.exec_ok(&["--json", "Build A then B."]);
    let root = root_of(&out.stdout);
    let changes = graph_changes(&home, &root);
    let shapes: Vec<String> = changes.iter().map(|(_, c)| shape(c)).collect();
    assert_eq!(
        shapes,
        [
            "planned",
            "started:a",
            "finished:a:failed:turn_failed",
            "started:a",
            "finished:a:failed:turn_failed",
            "started:a",
            "finished:a:failed:turn_failed"
        ]
    );
    // The backoff doubles: 300 ms, then 600 ms.
    let gaps = gaps(&changes, "a");
    assert!(
        gaps.len() == 2 && gaps[0] >= BACKOFF_MS && gaps[1] >= 2 * BACKOFF_MS,
        "{gaps:?}"
    );
    let answer = planner.requests()[1].to_string();
    assert!(
        answer
            .contains(r#"\"id\":\"b\",\"title\":\"B\",\"role\":\"worker\",\"state\":\"blocked\""#),
        "{answer}"
    );
}
