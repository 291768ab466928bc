//! MCP servers the ACP client names in `session/new` (and load/resume): the reference
//! server from npm (`@modelcontextprotocol/server-everything`, installed by
//! scripts/test-setup.sh) joins the session's tools, the model calls one of its tools, the
//! call is a tool call like any other, and the server stops with the session; the same
//! server in its streamable-HTTP mode joins a session through rein-mcp's HTTP transport.
//! An SSE server, which rein acp does not advertise, is refused before any session exists.
#![allow(clippy::unwrap_used)]

use rein_test_support::acp as support;
use rein_test_support::processes;
use rein_test_support::test_setup;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use pretty_assertions::assert_eq;
use processes::processes_in;
use rein_test_support::mock_model::tool_names;
use serde_json::{json, Value};
use support::{home_for, update_kind, updates, Acp, MockModel};
use test_setup::installed;

/// The entry point of `@modelcontextprotocol/server-everything`.
fn everything() -> PathBuf {
    installed("target/mcp-node/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
}

/// `node`'s absolute path (ACP wants an absolute server command).
fn node() -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|dir| dir.join("node"))
        .find(|path| path.is_file())
        .expect("node is on PATH")
}

/// A prompt whose turn calls the server's `echo`: the call is a tool call like any other,
/// and the model was offered the server's tools.
fn echo_turn(acp: &mut Acp, session: &str, model: &MockModel) {
    let id = acp.prompt(session, "Echo hi.");
    let (before, answer) = acp.answer_to(&id);
    assert_eq!(answer["result"], json!({ "stopReason": "end_turn" }));
    let calls: Vec<Value> = updates(&before)
        .into_iter()
        .filter(|u| u["sessionUpdate"] == "tool_call" || u["sessionUpdate"] == "tool_call_update")
        .collect();
    assert_eq!(
        calls,
        vec![
            json!({
                "sessionUpdate": "tool_call", "toolCallId": "call_echo",
                "title": "everything/echo", "status": "in_progress",
                "rawInput": { "message": "hi" }
            }),
            json!({
                "sessionUpdate": "tool_call_update", "toolCallId": "call_echo",
                "status": "completed",
                "content": [{ "type": "content", "content": { "type": "text", "text": "Echo: hi" } }],
                "rawOutput": { "type": "returned", "text": "Echo: hi" }
            }),
        ]
    );
    let requests = model.requests();
    assert!(
        tool_names(&requests[0]).contains(&"mcp__everything__echo".to_owned()),
        "{:?}",
        tool_names(&requests[0])
    );
}

fn echo_model() -> MockModel {
    MockModel::start(json!({
        "replies": [
            { "tool_calls": [{ "call_id": "call_echo", "name": "mcp__everything__echo",
                               "arguments": { "message": "hi" } }] },
            { "text": "Echoed." }
        ],
        "when_exhausted": "echo"
    }))
}

#[test]
#[cfg_attr(
    not(rein_has_node),
    ignore = "needs node and npm (scripts/test-setup.sh installs server-everything with them)"
)]
fn a_client_mcp_server_joins_the_session_and_stops_with_it() {
    let entry = everything();
    let node = node();
    let model = echo_model();
    let home = home_for(&model);
    let cwd = tempfile::tempdir().unwrap();
    let cwd_path = cwd.path().canonicalize().unwrap();
    let mut acp = Acp::start(home.path());
    acp.initialize();
    let (before, answer) = acp.call(
        "session/new",
        json!({ "cwd": cwd_path, "mcpServers": [{
            "name": "everything", "command": node, "args": [entry, "stdio"], "env": []
        }] }),
    );
    assert_eq!(before, Vec::<Value>::new());
    let session = answer["result"]["sessionId"].as_str().unwrap().to_owned();
    assert_eq!(update_kind(&acp.recv()), "available_commands_update");
    // The session answers once its servers are up, so the first prompt sees their tools.
    assert!(
        !processes_in(&cwd_path).is_empty(),
        "the server runs in the session's cwd"
    );

    echo_turn(&mut acp, &session, &model);

    let (_, closed) = acp.call("session/close", json!({ "sessionId": session }));
    assert_eq!(closed["result"], json!({}));
    assert_eq!(processes_in(&cwd_path), Vec::<String>::new());

    // A resume takes servers too; the end of the connection stops them.
    let (_, resumed) = acp.call(
        "session/resume",
        json!({ "sessionId": session, "cwd": cwd_path, "mcpServers": [{
            "name": "everything", "command": node, "args": [entry, "stdio"], "env": []
        }] }),
    );
    assert!(resumed.get("result").is_some(), "{resumed}");
    assert!(!processes_in(&cwd_path).is_empty());
    acp.finish();
    assert_eq!(processes_in(&cwd_path), Vec::<String>::new());
}

/// A server process of the test's own, killed when dropped.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// server-everything in its streamable-HTTP mode on a free port.
struct EverythingHttp {
    _child: KillOnDrop,
    url: String,
}

impl EverythingHttp {
    fn start(entry: &Path) -> Self {
        // It takes its port from PORT only; a port the kernel just handed out is free.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut child = Command::new(node())
            .arg(entry)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        loop {
            let line = lines.next().expect("server-everything exited").unwrap();
            if line.contains("listening on port") {
                break;
            }
        }
        // Keep draining its log so it never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        Self {
            _child: KillOnDrop(child),
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }
}

#[test]
#[cfg_attr(
    not(rein_has_node),
    ignore = "needs node and npm (scripts/test-setup.sh installs server-everything with them)"
)]
fn a_client_http_mcp_server_joins_the_session() {
    let server = EverythingHttp::start(&everything());
    let model = echo_model();
    let home = home_for(&model);
    let cwd = tempfile::tempdir().unwrap();
    let mut acp = Acp::start(home.path());
    acp.initialize();
    let (before, answer) = acp.call(
        "session/new",
        json!({ "cwd": cwd.path(), "mcpServers": [{
            "type": "http", "name": "everything", "url": server.url,
            "headers": [{ "name": "X-Team", "value": "rein" },
                        { "name": "Authorization", "value": "Bearer t0ken" }]
        }] }),
    );
    assert_eq!(before, Vec::<Value>::new());
    let session = answer["result"]["sessionId"].as_str().unwrap().to_owned();
    assert_eq!(update_kind(&acp.recv()), "available_commands_update");
    echo_turn(&mut acp, &session, &model);
    let (_, closed) = acp.call("session/close", json!({ "sessionId": session }));
    assert_eq!(closed["result"], json!({}));
    acp.finish();
}

#[test]
fn an_sse_mcp_server_is_refused_and_no_session_is_made() {
    let model = MockModel::start(json!({ "replies": [], "when_exhausted": "echo" }));
    let home = home_for(&model);
    let cwd = tempfile::tempdir().unwrap();
    let mut acp = Acp::start(home.path());
    acp.initialize();
    let (_, answer) = acp.call(
        "session/new",
        json!({ "cwd": cwd.path(), "mcpServers": [{
            "type": "sse", "name": "web", "url": "http://127.0.0.1:9/sse", "headers": []
        }] }),
    );
    assert_eq!(answer["error"]["code"], json!(-32602), "{answer}");
    let (_, listed) = acp.call("session/list", json!({}));
    assert_eq!(listed["result"]["sessions"], json!([]));
    acp.finish();
}

#[test]
#[cfg_attr(
    not(rein_has_python),
    ignore = "needs python3 (scripts/test-setup.sh installs the MCP SDK into a venv with it)"
)]
fn an_http_servers_headers_and_bearer_token_reach_it() {
    let python = installed("target/mcp-venv/bin/python");
    let mut server = KillOnDrop(
        Command::new(python)
            .arg(test_setup::repo_root().join("tests/fixtures/mcp/scripted_server.py"))
            .args(["--http", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    BufReader::new(server.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line.trim().strip_prefix("listening ").unwrap();
    let model = MockModel::start(json!({
        "replies": [
            { "tool_calls": [{ "call_id": "call_headers", "name": "mcp__remote__headers",
                               "arguments": {} }] },
            { "text": "Seen." }
        ],
        "when_exhausted": "echo"
    }));
    let home = home_for(&model);
    let cwd = tempfile::tempdir().unwrap();
    let mut acp = Acp::start(home.path());
    acp.initialize();
    let (_, answer) = acp.call(
        "session/new",
        json!({ "cwd": cwd.path(), "mcpServers": [{
            "type": "http", "name": "remote", "url": format!("http://127.0.0.1:{port}/mcp"),
            "headers": [{ "name": "X-Team", "value": "rein" },
                        { "name": "Authorization", "value": "Bearer t0ken" }]
        }] }),
    );
    let session = answer["result"]["sessionId"].as_str().unwrap().to_owned();
    let id = acp.prompt(&session, "Show the headers.");
    let (before, answer) = acp.answer_to(&id);
    assert_eq!(answer["result"], json!({ "stopReason": "end_turn" }));
    let seen = "authorization=Bearer t0ken x-team=rein x-env=None";
    let done = updates(&before)
        .into_iter()
        .find(|u| u["sessionUpdate"] == "tool_call_update")
        .unwrap();
    assert_eq!(
        done["rawOutput"],
        json!({ "type": "returned", "text": seen, "structured": { "result": seen } })
    );
    acp.finish();
}
