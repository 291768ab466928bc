//! MCP servers through the real `rein app-server`, every message checked against Codex
//! 0.169's schema: servers' startup status is notified, `mcpServerStatus/list` shows each
//! configured server with its state and tools, a call of a server's tool is an
//! `mcpToolCall` item (progress as `item/mcpToolCall/progress`), `config/mcpServer/reload`
//! answers `{}`, and no server process outlives the app-server. The server is the
//! reference one from npm, installed by scripts/test-setup.sh under target/.
#![allow(clippy::unwrap_used)]

#[path = "support/processes.rs"]
mod processes;
#[path = "support/app_server.rs"]
mod support;
#[path = "support/test_setup.rs"]
mod test_setup;

use std::path::PathBuf;

use pretty_assertions::assert_eq;
use processes::processes_in;
use serde_json::{json, Value};
use support::{home_for, method, AppServer, MockModel};
use test_setup::installed;

/// The entry point of `@modelcontextprotocol/server-everything`.
fn everything() -> PathBuf {
    installed("target/mcp-node/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
}

#[test]
#[cfg_attr(
    not(rein_has_node),
    ignore = "needs node and npm (scripts/test-setup.sh installs server-everything with them)"
)]
fn app_server_lists_servers_calls_their_tools_as_mcp_tool_call_items_and_stops_them() {
    let entry = everything();
    let model = MockModel::start(json!({"replies": [
        {"tool_calls": [{"call_id": "call_progress", "name": "mcp__everything__trigger_long_running_operation",
                         "arguments": {"duration": 0.2, "steps": 2}}]},
        {"tool_calls": [{"call_id": "call_echo", "name": "mcp__everything__echo", "arguments": {"message": "hi"}}]},
        {"text": "Done."}
    ]}));
    let home = home_for(&model);
    let config_path = home.path().join("config.toml");
    let mut config = std::fs::read_to_string(&config_path).unwrap();
    config.push_str(&format!(
        "\n[mcp_servers.everything]\ncommand = \"node\"\nargs = [{}, \"stdio\"]\nrequired = true\n\
         [mcp_servers.off]\ncommand = \"node\"\nenabled = false\n",
        serde_json::to_string(&entry.to_string_lossy()).unwrap()
    ));
    std::fs::write(&config_path, config).unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let dir = cwd.path().canonicalize().unwrap();

    let mut server = AppServer::start(home.path(), &[]);
    server.initialize();
    // `required`: thread/start waits for the server, so its first turn has its tools.
    let id = server.request(
        "thread/start",
        json!({ "cwd": dir, "sandbox": "read-only" }),
    );
    let mut seen = server.until(|m| method(m) == "thread/started");
    let answer = seen.iter().find(|m| m.get("id") == Some(&id)).unwrap();
    let thread = answer["result"]["thread"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let statuses: Vec<Value> = seen
        .drain(..)
        .filter(|m| method(m) == "mcpServer/startupStatus/updated")
        .map(|m| m["params"].clone())
        .collect();
    assert_eq!(
        statuses,
        vec![
            json!({"name": "everything", "status": "starting", "error": null, "threadId": null}),
            json!({"name": "everything", "status": "ready", "error": null, "threadId": null}),
        ]
    );

    let list = server.call("mcpServerStatus/list", json!({}));
    let data = list["result"]["data"].as_array().unwrap();
    assert_eq!(data.len(), 2);
    assert_eq!(data[0]["name"], "everything");
    assert_eq!(data[0]["runtimeStatus"], "connected");
    assert_eq!(data[0]["authStatus"], "unsupported");
    assert_eq!(data[0]["tools"]["echo"]["name"], "echo");
    assert_eq!(data[0]["tools"]["echo"]["inputSchema"]["type"], "object");
    assert!(data[0]["serverInfo"]["name"].is_string(), "{:#}", data[0]);
    assert_eq!(
        data[1],
        json!({"name": "off", "authStatus": "unsupported", "tools": {}, "resources": [],
               "resourceTemplates": [], "runtimeStatus": "disabled", "serverInfo": null,
               "toolsError": null})
    );

    server.request(
        "turn/start",
        json!({ "threadId": thread, "input": [{ "type": "text", "text": "echo hi" }] }),
    );
    let turn = server.until(|m| method(m) == "turn/completed");
    assert_eq!(
        turn.last().unwrap()["params"]["turn"]["status"],
        "completed"
    );
    let progress: Vec<&Value> = turn
        .iter()
        .filter(|m| method(m) == "item/mcpToolCall/progress")
        .map(|m| &m["params"]["message"])
        .collect();
    assert_eq!(progress, vec!["progress 1/2", "progress 2/2"]);
    let completed: Vec<Value> = turn
        .iter()
        .filter(|m| method(m) == "item/completed" && m["params"]["item"]["type"] == "mcpToolCall")
        .map(|m| {
            let mut item = m["params"]["item"].clone();
            assert!(item["durationMs"].as_i64().unwrap() >= 0);
            item["durationMs"] = json!("<ms>");
            item
        })
        .collect();
    assert_eq!(
        completed[1],
        json!({
            "type": "mcpToolCall", "id": "call_echo", "server": "everything", "tool": "echo",
            "arguments": {"message": "hi"}, "status": "completed",
            "result": {"content": [{"type": "text", "text": "Echo: hi"}], "structuredContent": null},
            "error": null, "durationMs": "<ms>"
        })
    );
    assert_eq!(completed[0]["tool"], "trigger-long-running-operation");
    assert_eq!(completed[0]["status"], "completed");
    let started: Vec<&Value> = turn
        .iter()
        .filter(|m| method(m) == "item/started" && m["params"]["item"]["type"] == "mcpToolCall")
        .map(|m| &m["params"]["item"]["status"])
        .collect();
    assert_eq!(started, vec!["inProgress", "inProgress"]);

    let reload = server.call("config/mcpServer/reload", Value::Null);
    assert_eq!(reload["result"], json!({}));

    assert!(server.finish().success());
    assert_eq!(processes_in(&dir), Vec::<String>::new());
}
