//! A sub-agent spawned with a goal of its own (`spawn_agent {goal}`), through the real
//! `rein exec --goal`: its budget is carved out of the parent goal's remaining budget
//! (what it asked, at most what is left; half of what is left where it asked nothing), the
//! carve is recorded on the parent's goal as spent, and the child's goal is a record of
//! its own rollout (docs/goals.md). The parent and the child each have their own mock.
#![allow(clippy::unwrap_used)]

use pretty_assertions::assert_eq;
use rein_test_support::exec::{json_lines, rein_ok, Home, MockModel};
use serde_json::{json, Value};

fn call(name: &str, arguments: Value) -> Value {
    json!({ "tool_calls": [{ "name": name, "arguments": arguments }] })
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

#[test]
fn a_sub_agent_goal_gets_its_budget_carved_out_of_the_parents() {
    let parent = MockModel::start(json!({ "replies": [
        call("spawn_agent", json!({ "message": "Count to three.", "model": "child",
            "goal": { "objective": "count to three", "turn_budget": 10 } })),
        call("wait_agent", json!({ "targets": ["Ada"], "timeout_ms": 60000 })),
        call("update_goal", json!({ "status": "complete" })),
        { "text": "Parent done." }
    ], "when_exhausted": "error" }));
    let child = MockModel::start(json!({ "replies": [
        call("update_goal", json!({ "status": "complete" })),
        { "text": "One, two, three." }
    ] }));
    let home = tree_home(&parent, &child);
    let work = tempfile::tempdir().unwrap();
    let out = home
        .exec(&["--json", "-C"])
        .arg(work.path())
        .args([
            "--goal",
            "delegate the counting",
            "--goal-turns",
            "5",
            "--goal-tokens",
            "100000",
        ])
        .output()
        .unwrap();
    let events = json_lines(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{events:#?}");
    let goals: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "goal.updated")
        .map(|e| &e["goal"])
        .collect();
    // Set, carved (still active), complete.
    assert_eq!(goals.len(), 3, "{goals:#?}");
    let carved = goals[1];
    assert_eq!(carved["status"], "active");
    // One goal turn of five used when the agent was spawned: it asked ten, it got four.
    assert_eq!(carved["carved"]["turns"], 4);
    // It asked no tokens: it got half of what was left.
    let tokens_left = (100_000 - carved["usage"]["tokens"].as_u64().unwrap()).div_ceil(2);
    assert_eq!(carved["carved"]["tokens"], tokens_left, "{carved}");
    assert_eq!(goals[2]["status"], "complete");
    assert_eq!(
        goals[2]["carved"], carved["carved"],
        "the carve stays spent"
    );

    let spawned = events
        .iter()
        .find(|e| e["item"]["type"] == "collab_tool_call" && e["type"] == "item.completed")
        .unwrap();
    let child_id = spawned["item"]["receiver_thread_ids"][0].as_str().unwrap();
    let log = json_lines(&rein_ok(home.path(), &["sessions", "show", child_id, "--json"]).stdout);
    let child_goals: Vec<&Value> = log
        .iter()
        .filter(|e| e["msg"]["type"] == "goal_updated")
        .map(|e| &e["msg"]["goal"])
        .collect();
    assert_eq!(
        (
            &child_goals[0]["objective"],
            &child_goals[0]["status"],
            &child_goals[0]["budget"],
            &child_goals[0]["origin"]
        ),
        (
            &json!("count to three"),
            &json!("active"),
            &json!({ "tokens": tokens_left, "turns": 4 }),
            &json!("automatic")
        )
    );
    assert_eq!(child_goals.last().unwrap()["status"], "complete");
    // The child was offered the goal tools for its own goal.
    let first = &child.requests()[0];
    let tools: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(tools.contains(&"update_goal"), "{tools:?}");
}

/// A parent goal with nothing left to give: `spawn_agent {goal}` is refused with the
/// reason, no child is created (its model is never asked), and nothing is carved.
#[test]
fn a_spawn_the_parents_goal_cannot_pay_for_creates_no_child() {
    let parent = MockModel::start(json!({ "replies": [
        call("spawn_agent", json!({ "message": "Count.", "model": "child",
            "goal": { "objective": "count" } })),
        { "text": "I will count myself." },
        { "text": "Wrapped up." }
    ], "when_exhausted": "error" }));
    let child = MockModel::start(json!({ "replies": [{ "text": "never asked" }] }));
    let home = tree_home(&parent, &child);
    let work = tempfile::tempdir().unwrap();
    let out = home
        .exec(&["--json", "-C"])
        .arg(work.path())
        .args(["--goal", "count", "--goal-turns", "1"])
        .output()
        .unwrap();
    let events = json_lines(&out.stdout);
    assert_eq!(out.status.code(), Some(4), "budget limited: {events:#?}");
    assert_eq!(child.requests().len(), 0, "no child was started");
    // The model read why.
    assert!(parent.requests()[1].to_string().contains(
        "the agent's goal was refused: the goal's budget has nothing left to give a \
         sub-agent's goal"
    ));
    assert!(events
        .iter()
        .filter(|e| e["type"] == "goal.updated")
        .all(|e| e["goal"].get("carved").is_none()));
}
