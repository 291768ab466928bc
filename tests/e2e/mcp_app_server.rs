//! MCP servers through the real `rein app-server`, every message checked against Codex
//! 0.169's schema: servers' startup status is notified, `mcpServerStatus/list` shows each
//! configured server with its state and tools, a call of a server's tool is an
//! `mcpToolCall` item (progress as `item/mcpToolCall/progress`), `config/mcpServer/reload`
//! answers `{}`, and no server process outlives the app-server. The server is the
//! reference one from npm, installed by scripts/test-setup.sh under target/.
#![allow(clippy::unwrap_used)]

use rein_test_support::app_server as support;
use rein_test_support::processes;
use rein_test_support::test_setup;

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
    // The answer and the status notification travel separately: wait for both.
    let (mut started, mut ready) = (false, false);
    let mut seen = server.until(|m| {
        started |= method(m) == "thread/started";
        ready |= method(m) == "mcpServer/startupStatus/updated" && m["params"]["status"] == "ready";
        started && ready
    });
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
    // rmcp hands each notification to its own task, so the last progress may lose the
    // race with the result (and is then not shown); the first one never does.
    let expected = ["progress 1/2", "progress 2/2"];
    assert!(
        !progress.is_empty() && progress.iter().zip(expected).all(|(p, e)| *p == e),
        "{progress:?}"
    );
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

#[test]
#[cfg_attr(
    not(rein_has_node),
    ignore = "needs node and npm (scripts/test-setup.sh installs server-everything with them)"
)]
fn app_server_asks_the_client_for_an_elicitation_and_for_a_prompted_tool() {
    let entry = everything();
    let model = MockModel::start(json!({"replies": [
        {"tool_calls": [{"call_id": "call_form", "name": "mcp__everything__trigger_elicitation_request",
                         "arguments": {}}]},
        {"tool_calls": [{"call_id": "call_echo", "name": "mcp__everything__echo", "arguments": {"message": "ok"}}]},
        {"text": "Done."}
    ]}));
    let home = home_for(&model);
    let config_path = home.path().join("config.toml");
    let mut config = std::fs::read_to_string(&config_path).unwrap();
    config.push_str(&format!(
        "\n[mcp_servers.everything]\ncommand = \"node\"\nargs = [{}, \"stdio\"]\nrequired = true\n\
         [mcp_servers.everything.tools.echo]\napproval_mode = \"prompt\"\n",
        serde_json::to_string(&entry.to_string_lossy()).unwrap()
    ));
    std::fs::write(&config_path, config).unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let dir = cwd.path().canonicalize().unwrap();

    let mut server = AppServer::start(home.path(), &[]);
    server.initialize();
    let thread = server.start_thread(json!({ "cwd": dir, "sandbox": "read-only" }));
    server.request(
        "turn/start",
        json!({ "threadId": thread, "input": [{ "type": "text", "text": "ask me" }] }),
    );
    let seen = server.until(|m| method(m) == "mcpServer/elicitation/request");
    let turn_id = seen
        .iter()
        .find(|m| method(m) == "turn/started")
        .map(|m| m["params"]["turn"]["id"].clone())
        .unwrap();
    let ask = seen.last().unwrap().clone();
    let mut params = ask["params"].clone();
    let schema = params["requestedSchema"].take();
    assert_eq!(
        params,
        json!({"threadId": thread, "turnId": turn_id, "serverName": "everything", "mode": "form",
               "message": "Please provide inputs for the following fields:", "requestedSchema": null})
    );
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["properties"]["name"]["type"], "string");
    server.send(&json!({"id": ask["id"], "result": {
        "action": "accept", "content": {"name": "Ada Lovelace", "check": true}
    }}));

    // The echo tool is set to ask first: a question whose "Allow" lets it run.
    let seen = server.until(|m| method(m) == "item/tool/requestUserInput");
    let question = seen.last().unwrap().clone();
    let q = &question["params"]["questions"][0];
    assert_eq!(q["id"], "mcp_tool_call_approval_call_echo");
    assert_eq!(
        q["question"],
        "The MCP server 'everything' wants to run the tool \"Echo Tool\". Allow it?"
    );
    server.send(&json!({"id": question["id"], "result": {
        "answers": {"mcp_tool_call_approval_call_echo": {"answers": ["Allow"]}}
    }}));
    let turn = server.until(|m| method(m) == "turn/completed");
    let completed: Vec<&Value> = seen
        .iter()
        .chain(turn.iter())
        .filter(|m| method(m) == "item/completed" && m["params"]["item"]["type"] == "mcpToolCall")
        .map(|m| &m["params"]["item"])
        .collect();
    assert_eq!(completed.len(), 2, "{completed:#?}");
    let form = completed[0]["result"]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(
        form.starts_with("✅ User provided the requested information!"),
        "{form}"
    );
    assert!(form.contains("- Name: Ada Lovelace"), "{form}");
    assert!(form.contains("- Agreed to terms: true"), "{form}");
    assert_eq!(completed[1]["status"], "completed");
    assert_eq!(
        completed[1]["result"]["content"],
        json!([{"type": "text", "text": "Echo: ok"}])
    );
    assert!(server.finish().success());
    assert_eq!(processes_in(&dir), Vec::<String>::new());
}

/// `home` with server-everything configured (`extra` lines added to its table).
fn home_with_everything(model: &MockModel, extra: &str) -> tempfile::TempDir {
    let home = home_for(model);
    let config_path = home.path().join("config.toml");
    let mut config = std::fs::read_to_string(&config_path).unwrap();
    config.push_str(&format!(
        "\n[mcp_servers.everything]\ncommand = \"node\"\nargs = [{}, \"stdio\"]\n{extra}\n",
        serde_json::to_string(&everything().to_string_lossy()).unwrap()
    ));
    std::fs::write(&config_path, config).unwrap();
    home
}

#[test]
#[cfg_attr(
    not(rein_has_node),
    ignore = "needs node and npm (scripts/test-setup.sh installs server-everything with them)"
)]
fn app_server_calls_a_tool_of_a_thread_server_for_the_client() {
    let model = MockModel::start(json!({"replies": []}));
    let home = home_with_everything(&model, "disabled_tools = [\"get-env\"]");
    let cwd = tempfile::tempdir().unwrap();
    let dir = cwd.path().canonicalize().unwrap();
    let mut server = AppServer::start(home.path(), &[]);
    server.initialize();
    // Not `required`: the call itself waits for the server's startup.
    let thread = server.start_thread(json!({ "cwd": dir, "sandbox": "read-only" }));
    let call = |server: &mut AppServer, tool: &str, arguments: Value| {
        let id = server.request(
            "mcpServer/tool/call",
            json!({"threadId": thread, "server": "everything", "tool": tool, "arguments": arguments}),
        );
        let seen = server.until(|m| m.get("id") == Some(&id) && m.get("method").is_none());
        // A call of the client's own is no part of the conversation: no item, no turn.
        let items: Vec<&Value> = seen
            .iter()
            .filter(|m| method(m).starts_with("item/") || method(m).starts_with("turn/"))
            .collect();
        assert_eq!(items, Vec::<&Value>::new());
        seen.last().unwrap().clone()
    };

    let echo = call(&mut server, "echo", json!({"message": "direct"}));
    assert_eq!(
        echo["result"],
        json!({"content": [{"type": "text", "text": "Echo: direct"}]})
    );
    let structured = call(
        &mut server,
        "get-structured-content",
        json!({"location": "Chicago"}),
    );
    assert_eq!(
        structured["result"]["structuredContent"],
        json!({"temperature": 36, "conditions": "Light rain / drizzle", "humidity": 82})
    );
    // The server's own failure is a result with isError, passed on as it is.
    let invalid = call(&mut server, "echo", json!({}));
    assert_eq!(invalid["result"]["isError"], true, "{invalid:#}");
    assert!(
        invalid["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Invalid arguments for tool echo"),
        "{invalid:#}"
    );
    // Other content blocks as the server sent them.
    let image = call(&mut server, "get-tiny-image", json!({}));
    let blocks = image["result"]["content"].as_array().unwrap();
    assert_eq!(blocks[1]["type"], "image");
    assert_eq!(blocks[1]["mimeType"], "image/png");
    assert!(blocks[1]["data"].as_str().unwrap().starts_with("iVBOR"));

    let errors: Vec<Value> = [
        ("everything", "get-env", json!({})),
        ("everything", "no-such-tool", json!({})),
        ("everything", "echo", json!(["not", "an", "object"])),
        ("nowhere", "echo", json!({})),
    ]
    .into_iter()
    .map(|(name, tool, arguments)| {
        let answer = server.call(
            "mcpServer/tool/call",
            json!({"threadId": thread, "server": name, "tool": tool, "arguments": arguments}),
        );
        answer["error"].clone()
    })
    .collect();
    assert_eq!(
        errors,
        vec![
            json!({"code": -32600, "message": "tool 'get-env' is disabled for MCP server 'everything'"}),
            json!({"code": -32600, "message": "MCP server 'everything' has no tool 'no-such-tool'"}),
            json!({"code": -32600, "message": "the arguments must be a JSON object, not [\"not\",\"an\",\"object\"]"}),
            json!({"code": -32600, "message": "no enabled MCP server 'nowhere' is configured"}),
        ]
    );
    let unknown = server.call(
        "mcpServer/tool/call",
        json!({"threadId": "00000000-0000-7000-8000-000000000000", "server": "everything", "tool": "echo"}),
    );
    assert_eq!(unknown["error"]["code"], -32600, "{unknown:#}");

    assert!(server.finish().success());
    assert_eq!(processes_in(&dir), Vec::<String>::new());
}

#[test]
#[cfg_attr(
    not(rein_has_node),
    ignore = "needs node and npm (scripts/test-setup.sh installs server-everything with them)"
)]
fn app_server_shows_image_and_resource_blocks_as_the_server_sent_them_and_tells_the_model() {
    let model = MockModel::start(json!({"replies": [
        {"tool_calls": [{"call_id": "call_image", "name": "mcp__everything__get_tiny_image", "arguments": {}}]},
        {"tool_calls": [{"call_id": "call_links", "name": "mcp__everything__get_resource_links",
                         "arguments": {"count": 2}}]},
        {"tool_calls": [{"call_id": "call_resource", "name": "mcp__everything__get_resource_reference",
                         "arguments": {"resourceType": "Text", "resourceId": 1}}]},
        {"text": "Done."}
    ]}));
    let home = home_with_everything(&model, "required = true");
    let cwd = tempfile::tempdir().unwrap();
    let dir = cwd.path().canonicalize().unwrap();
    let mut server = AppServer::start(home.path(), &[]);
    server.initialize();
    let thread = server.start_thread(json!({ "cwd": dir, "sandbox": "read-only" }));
    server.request(
        "turn/start",
        json!({ "threadId": thread, "input": [{ "type": "text", "text": "show me" }] }),
    );
    let turn = server.until(|m| method(m) == "turn/completed");
    let content: Vec<Value> = turn
        .iter()
        .filter(|m| method(m) == "item/completed" && m["params"]["item"]["type"] == "mcpToolCall")
        .map(|m| m["params"]["item"]["result"]["content"].clone())
        .collect();
    assert_eq!(content.len(), 3, "{turn:#?}");

    let image = &content[0];
    assert_eq!(
        image[0],
        json!({"type": "text", "text": "Here's the image you requested:"})
    );
    assert_eq!(image[1]["type"], "image");
    assert_eq!(image[1]["mimeType"], "image/png");
    let data = image[1]["data"].as_str().unwrap();
    assert!(data.starts_with("iVBOR"), "{data}");
    assert_eq!(
        content[1],
        json!([
            {"type": "text", "text": "Here are 2 resource links to resources available in this server:"},
            {"type": "resource_link", "name": "Blob Resource 1", "uri": "demo://resource/dynamic/blob/1",
             "description": "Resource 1: plaintext resource", "mimeType": "text/plain"},
            {"type": "resource_link", "name": "Text Resource 2", "uri": "demo://resource/dynamic/text/2",
             "description": "Resource 2: plaintext resource", "mimeType": "text/plain"}
        ])
    );
    let resource = &content[2];
    assert_eq!(resource[1]["type"], "resource");
    assert_eq!(
        resource[1]["resource"]["uri"],
        "demo://resource/dynamic/text/1"
    );
    let text = resource[1]["resource"]["text"].as_str().unwrap();
    assert!(
        text.starts_with("Resource 1: This is a plaintext resource"),
        "{text}"
    );

    // What the model read of each call: text as it is, a line for each other block.
    let requests: Vec<Value> = std::fs::read_to_string(&model.log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let outputs: Vec<String> = requests.last().unwrap()["body"]["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == "function_call_output")
        .map(|i| i["output"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(outputs.len(), 3, "{outputs:#?}");
    let bytes = data.trim_end_matches('=').len() * 3 / 4;
    assert_eq!(
        outputs[0],
        format!(
            "Here's the image you requested:\n[image: image/png, {bytes} bytes]\n{}",
            image[2]["text"].as_str().unwrap()
        )
    );
    assert_eq!(
        outputs[1],
        "Here are 2 resource links to resources available in this server:\n\
         [resource link: Blob Resource 1 <demo://resource/dynamic/blob/1> (text/plain): Resource 1: plaintext resource]\n\
         [resource link: Text Resource 2 <demo://resource/dynamic/text/2> (text/plain): Resource 2: plaintext resource]"
    );
    assert_eq!(
        outputs[2],
        format!(
            "Returning resource reference for Resource 1:\n\
             [resource demo://resource/dynamic/text/1 (text/plain)]\n{text}\n\
             You can access this resource using the URI: demo://resource/dynamic/text/1"
        )
    );
    assert!(server.finish().success());
    assert_eq!(processes_in(&dir), Vec::<String>::new());
}
