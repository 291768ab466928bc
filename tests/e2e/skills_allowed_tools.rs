//! Claude Code's `allowed-tools`: while a skill the user attached allows only some tools
//! (its turn), every request of that turn offers only those, under rein's names (`Read` is
//! `read_file`); the next turn, which attaches nothing, is offered every tool again.
//! Through a real `rein app-server` and a `rein mock-model` recording the request bodies.
#![allow(clippy::unwrap_used)]

use rein_test_support::app_server as support;

use pretty_assertions::assert_eq;
use rein_test_support::mock_model::tool_names;
use serde_json::json;
use support::{home_for, method, AppServer, MockModel};

use crate::project_context::skills_repo;

#[test]
fn a_mentioned_skill_with_allowed_tools_narrows_its_turns_tools_and_only_that_turn() {
    // Turn 1: a read, then the answer (two requests, both narrowed); turn 2: an answer.
    let model = MockModel::start(json!({"replies": [
        {"tool_calls": [{"call_id": "r1", "name": "read_file", "arguments": {"path": "AGENTS.md"}}]},
        {"text": "reviewed"},
        {"text": "done"}
    ]}));
    let home = home_for(&model);
    let user_home = tempfile::tempdir().unwrap();
    let user = user_home.path().to_str().unwrap();
    let repo = skills_repo();
    let sub = repo.sub();

    let mut server = AppServer::start_with_env(home.path(), &[], &[("HOME", user)]);
    server.initialize();
    server.send(&json!({"method": "initialized"}));
    let thread = server.start_thread(json!({"cwd": sub, "approvalPolicy": "never"}));
    // `review` (sub/.claude/skills) says `allowed-tools: Read`.
    for text in ["use $review on the diff", "now go on"] {
        server.request(
            "turn/start",
            json!({"threadId": thread, "input": [{"type": "text", "text": text}]}),
        );
        server.until(|m| method(m) == "turn/completed");
    }
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(tool_names(&requests[0]), ["read_file"]);
    assert_eq!(tool_names(&requests[1]), ["read_file"]);
    let all = tool_names(&requests[2]);
    for tool in ["shell", "apply_patch", "read_file"] {
        assert!(all.iter().any(|t| t == tool), "{tool} not offered: {all:?}");
    }
    // The narrowed turn's tool still ran.
    let read = requests[1]["input"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "function_call_output")
        .unwrap();
    assert!(
        read["output"]
            .as_str()
            .unwrap()
            .contains("shadowed by the override"),
        "{read}"
    );
    assert!(server.finish().success());
}
