//! MCP servers through the real `rein exec`: a configured server's tool is offered to the
//! model (the mock provider) and its call is reported as Codex reports it (`mcp_tool_call`
//! items); a `required` server that cannot start fails the run before its turn; no server
//! process outlives the run. The server is the reference one from npm, installed by
//! scripts/test-setup.sh under target/.
#![allow(clippy::unwrap_used)]

use rein_test_support::exec as support;
use rein_test_support::processes;
use rein_test_support::test_setup;

use std::path::PathBuf;

use pretty_assertions::assert_eq;
use processes::processes_in;
use serde_json::json;
use support::{json_lines, Home, MockModel};
use test_setup::installed;

/// The entry point of `@modelcontextprotocol/server-everything`.
fn everything() -> PathBuf {
    installed("target/mcp-node/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
}

fn add_config(home: &Home, text: &str) {
    let path = home.path().join("config.toml");
    let mut config = std::fs::read_to_string(&path).unwrap();
    config.push_str(text);
    std::fs::write(path, config).unwrap();
}

/// A home whose config names server-everything as a `required` server: the run waits for
/// it before its turn, so the first request offers its tools (an optional server joins
/// whenever it is ready).
fn home_with_everything(mock: &MockModel) -> Home {
    let home = Home::new(mock, "responses");
    add_config(
        &home,
        &format!(
            "\n[mcp_servers.everything]\ncommand = \"node\"\nargs = [{}, \"stdio\"]\nrequired = true\n",
            serde_json::to_string(&everything().to_string_lossy()).unwrap()
        ),
    );
    home
}

#[test]
#[cfg_attr(
    not(rein_has_node),
    ignore = "needs node and npm (scripts/test-setup.sh installs server-everything with them)"
)]
fn exec_calls_a_server_everything_tool_and_reports_an_mcp_tool_call_item() {
    let mock = MockModel::start(json!({"replies": [
        {"tool_calls": [{"call_id": "call_1", "name": "mcp__everything__echo", "arguments": {"message": "hi"}}]},
        {"tool_calls": [{"call_id": "call_2", "name": "mcp__everything__get_sum", "arguments": {"a": "x"}}]},
        {"text": "Done."}
    ]}));
    let home = home_with_everything(&mock);
    let work = tempfile::tempdir().unwrap();
    let work_dir = work.path().canonicalize().unwrap();
    let out = home.exec_ok(&["--json", "-C", work_dir.to_str().unwrap(), "Echo hi."]);
    let events = json_lines(&out.stdout);
    let items: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["item"]["type"] == "mcp_tool_call")
        .collect();
    assert_eq!(
        items
            .iter()
            .map(|e| (e["type"].clone(), e["item"].clone()))
            .collect::<Vec<_>>(),
        vec![
            (
                json!("item.started"),
                json!({
                    "id": "item_0", "type": "mcp_tool_call", "server": "everything", "tool": "echo",
                    "arguments": {"message": "hi"}, "result": null, "error": null, "status": "in_progress"
                })
            ),
            (
                json!("item.completed"),
                json!({
                    "id": "item_0", "type": "mcp_tool_call", "server": "everything", "tool": "echo",
                    "arguments": {"message": "hi"},
                    "result": {"content": [{"type": "text", "text": "Echo: hi"}], "structured_content": null},
                    "error": null, "status": "completed"
                })
            ),
            (
                json!("item.started"),
                json!({
                    "id": "item_1", "type": "mcp_tool_call", "server": "everything", "tool": "get-sum",
                    "arguments": {"a": "x"}, "result": null, "error": null, "status": "in_progress"
                })
            ),
            (
                json!("item.completed"),
                json!({
                    "id": "item_1", "type": "mcp_tool_call", "server": "everything", "tool": "get-sum",
                    "arguments": {"a": "x"}, "result": null,
                    "error": {"message": items[3]["item"]["error"]["message"].clone()},
                    "status": "failed"
                })
            ),
        ]
    );
    let message = items[3]["item"]["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("the arguments do not match the tool's input schema"),
        "{message}"
    );
    // The model was offered the tool and read its result.
    let requests = mock.requests();
    let tools: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(tools.contains(&"mcp__everything__echo"), "{tools:?}");
    assert!(requests[1].to_string().contains("Echo: hi"));
    // The server stopped with the run.
    assert_eq!(processes_in(&work_dir), Vec::<String>::new());
}

#[test]
fn a_required_server_that_cannot_start_fails_the_run_before_its_turn() {
    let mock = MockModel::start(json!({"replies": [{"text": "never"}]}));
    let home = Home::new(&mock, "responses");
    add_config(
        &home,
        "\n[mcp_servers.broken]\ncommand = \"/nonexistent/mcp-server\"\nrequired = true\n\
         [mcp_servers.stuck]\ncommand = \"sleep\"\nargs = [\"600\"]\n",
    );
    let work = tempfile::tempdir().unwrap();
    let work_dir = work.path().canonicalize().unwrap();
    let out = home
        .exec(&["-C", work_dir.to_str().unwrap(), "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("required MCP servers failed to initialize: broken: cannot start `/nonexistent/mcp-server`"),
        "{stderr}"
    );
    assert!(mock.requests().is_empty());
    // The optional server that never answered was stopped too.
    assert_eq!(processes_in(&work_dir), Vec::<String>::new());
}

#[test]
fn bad_mcp_configuration_is_an_error_naming_the_server_and_the_key() {
    let mock = MockModel::start(json!({"replies": [{"text": "never"}]}));
    let home = Home::new(&mock, "responses");
    add_config(
        &home,
        "\n[mcp_servers.docs]\nurl = \"http://127.0.0.1:1/mcp\"\nargs = [\"x\"]\n",
    );
    let out = home.exec(&["hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("[mcp_servers.docs] args: is not supported for streamable_http"),
        "{stderr}"
    );
}

#[test]
#[cfg_attr(
    not(rein_has_node),
    ignore = "needs node and npm (scripts/test-setup.sh installs server-everything with them)"
)]
fn exec_declines_an_elicitation_nobody_can_answer() {
    let mock = MockModel::start(json!({"replies": [
        {"tool_calls": [{"call_id": "call_1", "name": "mcp__everything__trigger_elicitation_request", "arguments": {}}]},
        {"text": "Done."}
    ]}));
    let home = home_with_everything(&mock);
    let work = tempfile::tempdir().unwrap();
    let work_dir = work.path().canonicalize().unwrap();
    let out = home.exec_ok(&["--json", "-C", work_dir.to_str().unwrap(), "Ask me."]);
    let events = json_lines(&out.stdout);
    let completed = events
        .iter()
        .find(|e| e["type"] == "item.completed" && e["item"]["type"] == "mcp_tool_call")
        .unwrap();
    assert_eq!(completed["item"]["status"], "completed");
    let text = completed["item"]["result"]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(
        text.starts_with("❌ User declined to provide the requested information."),
        "{text}"
    );
    assert_eq!(processes_in(&work_dir), Vec::<String>::new());
}
