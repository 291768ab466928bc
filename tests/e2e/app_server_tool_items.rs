//! Tool calls as IDEs see them through `rein app-server`: every kind of call (commands that
//! exit 0, non-zero, on a timeout and on a signal; a patch; the file tools; a declined
//! call; a background terminal and input to it) is completed live from the kernel's facts,
//! and `thread/read` — of the loaded thread, and after a restart, from its rollout — shows
//! each as the very same item. `rein exec --json` reports the same facts. Every message is
//! checked against Codex's schema by the harness.
#![allow(clippy::unwrap_used)]

use rein_test_support::app_server as support;

use std::collections::BTreeMap;

use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use support::{home_for, method, rein, AppServer, MockModel};

const TOOL_ITEMS: &[&str] = &[
    "commandExecution",
    "fileChange",
    "mcpToolCall",
    "dynamicToolCall",
];

fn call(call_id: &str, name: &str, arguments: Value) -> Value {
    json!({ "call_id": call_id, "name": name, "arguments": arguments })
}

fn script() -> Value {
    json!({
        "replies": [
            { "tool_calls": [
                call("call_cat", "shell", json!({ "command": ["cat", "notes.txt"] })),
                call("call_exit", "shell", json!({ "command": "exit 3" })),
                call("call_timeout", "shell", json!({ "command": "sleep 5", "timeout_ms": 200 })),
                call("call_signal", "shell", json!({ "command": "kill -9 $$" })),
            ] },
            { "tool_calls": [call("call_patch", "apply_patch", json!({
                "input": "*** Begin Patch\n*** Add File: added.txt\n+new\n*** End Patch\n"
            }))] },
            { "tool_calls": [
                call("call_read", "read_file", json!({ "path": "notes.txt" })),
                call("call_list", "list_dir", json!({})),
                call("call_grep", "grep", json!({ "pattern": "needle" })),
                call("call_ls", "shell", json!({ "command": ["ls"] })),
                call("call_search", "shell", json!({ "command": ["grep", "-n", "needle", "notes.txt"] })),
            ] },
            { "tool_calls": [call("call_declined", "shell", json!({ "command": ["touch", "nope.txt"] }))] },
            { "tool_calls": [call("call_bg", "shell", json!({
                "command": "echo started; sleep 30", "background": true
            }))] },
            { "tool_calls": [call("call_stdin", "write_stdin", json!({
                "terminal_id": "bg-1", "wait_ms": 50
            }))] },
            { "text": "All done." }
        ],
        "when_exhausted": "echo"
    })
}

fn workspace() -> tempfile::TempDir {
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join("notes.txt"), "alpha\nbeta needle\n").unwrap();
    cwd
}

/// The tool items of `items`, by id.
fn tool_items<'a>(items: impl Iterator<Item = &'a Value>) -> BTreeMap<String, Value> {
    items
        .filter(|i| TOOL_ITEMS.contains(&i["type"].as_str().unwrap_or_default()))
        .map(|i| (i["id"].as_str().unwrap().to_owned(), i.clone()))
        .collect()
}

fn read_back(server: &mut AppServer, thread: &str) -> BTreeMap<String, Value> {
    let read = server.call(
        "thread/read",
        json!({ "threadId": thread, "includeTurns": true }),
    );
    let turns = read["result"]["thread"]["turns"].as_array().unwrap();
    tool_items(
        turns
            .iter()
            .flat_map(|t| t["items"].as_array().unwrap().iter()),
    )
}

#[test]
fn live_and_read_back_tool_items_are_the_same_objects_for_every_kind_of_call() {
    let model = MockModel::start(script());
    let home = home_for(&model);
    let cwd = workspace();
    let dir = cwd.path().display().to_string();

    let mut server = AppServer::start(home.path(), &[]);
    server.initialize();
    let thread = server.start_thread(json!({
        "cwd": cwd.path(), "approvalPolicy": "untrusted", "sandbox": "danger-full-access"
    }));
    server.request(
        "turn/start",
        json!({ "threadId": thread, "input": [{ "type": "text", "text": "use every tool" }] }),
    );
    // Approve everything but one call, which the user declines.
    let mut seen = Vec::new();
    loop {
        let m = server.recv();
        if method(&m).ends_with("/requestApproval") {
            let decision = if m["params"]["itemId"] == "call_declined" {
                "decline"
            } else {
                "accept"
            };
            server.send(&json!({ "id": m["id"], "result": { "decision": decision } }));
        }
        let done = method(&m) == "turn/completed";
        seen.push(m);
        if done {
            break;
        }
    }
    assert_eq!(
        seen.last().unwrap()["params"]["turn"]["status"],
        "completed"
    );
    let live = tool_items(
        seen.iter()
            .filter(|m| method(m) == "item/completed")
            .map(|m| &m["params"]["item"]),
    );
    let started = tool_items(
        seen.iter()
            .filter(|m| method(m) == "item/started")
            .map(|m| &m["params"]["item"]),
    );
    let ids: Vec<&str> = live.keys().map(String::as_str).collect();
    assert_eq!(
        ids,
        [
            "call_bg",
            "call_cat",
            "call_declined",
            "call_exit",
            "call_grep",
            "call_list",
            "call_ls",
            "call_patch",
            "call_read",
            "call_search",
            "call_signal",
            "call_stdin",
            "call_timeout"
        ],
        "every call but the plan-less ones has an item"
    );
    assert_eq!(
        started.keys().collect::<Vec<_>>(),
        live.keys().collect::<Vec<_>>(),
        "each was started before it completed"
    );

    // What IDEs are told, per kind of call.
    let exit_codes: Vec<(&str, Value)> = ["call_cat", "call_exit", "call_timeout", "call_signal"]
        .iter()
        .map(|id| (*id, live[*id]["exitCode"].clone()))
        .collect();
    assert_eq!(
        exit_codes,
        vec![
            ("call_cat", json!(0)),
            ("call_exit", json!(3)),
            ("call_timeout", json!(124)),
            ("call_signal", json!(137)),
        ]
    );
    assert_eq!(
        live["call_cat"],
        json!({
            "type": "commandExecution", "id": "call_cat", "command": "cat notes.txt", "cwd": dir,
            "processId": null, "status": "completed",
            "commandActions": [{ "type": "read", "command": "cat notes.txt", "name": "notes.txt",
                                 "path": format!("{dir}/notes.txt") }],
            "aggregatedOutput": "alpha\nbeta needle\n", "exitCode": 0,
            "durationMs": live["call_cat"]["durationMs"],
        })
    );
    assert!(live["call_cat"]["durationMs"].as_i64().unwrap() >= 0);
    assert_eq!(live["call_exit"]["status"], "failed");
    assert_eq!(
        live["call_exit"]["commandActions"],
        json!([{ "type": "unknown", "command": "exit 3" }])
    );
    assert_eq!(
        live["call_ls"]["commandActions"],
        json!([{ "type": "listFiles", "command": "ls", "path": null }])
    );
    assert_eq!(
        live["call_search"]["commandActions"],
        json!([{ "type": "search", "command": "grep -n needle notes.txt",
                 "query": "needle", "path": "notes.txt" }])
    );
    assert_eq!(
        live["call_read"]["commandActions"][0]["type"], "read",
        "{:#}",
        live["call_read"]
    );
    assert_eq!(
        live["call_read"]["aggregatedOutput"],
        "     1\talpha\n     2\tbeta needle\n"
    );
    assert_eq!(live["call_list"]["commandActions"][0]["type"], "listFiles");
    assert_eq!(live["call_grep"]["commandActions"][0]["type"], "search");
    assert_eq!(live["call_grep"]["commandActions"][0]["query"], "needle");
    assert_eq!(live["call_declined"]["status"], "declined");
    assert!(!cwd.path().join("nope.txt").exists());
    assert_eq!(live["call_patch"]["status"], "completed");
    assert_eq!(
        live["call_patch"]["changes"][0]["path"],
        format!("{dir}/added.txt")
    );
    assert!(live["call_patch"]["changes"][0]["diff"]
        .as_str()
        .unwrap()
        .contains("+new"));
    assert_eq!(live["call_bg"]["processId"], "bg-1");
    assert_eq!(live["call_bg"]["exitCode"], Value::Null);
    assert_eq!(live["call_bg"]["status"], "completed");
    assert_eq!(live["call_stdin"]["processId"], "bg-1");
    assert_eq!(live["call_stdin"]["command"], "echo started; sleep 30");

    // The loaded thread reads back the same items.
    assert_eq!(read_back(&mut server, &thread), live);
    assert!(server.finish().success());

    // So does the thread read from its rollout by a new process.
    let mut again = AppServer::start(home.path(), &[]);
    again.initialize();
    assert_eq!(read_back(&mut again, &thread), live);
    assert!(again.finish().success());

    // `rein exec --json` reports the same facts of the same calls (headless, nothing is
    // asked, so the declined call runs there).
    let exec_model = MockModel::start(script());
    let exec_home = home_for(&exec_model);
    let exec_cwd = workspace();
    let out = rein()
        .args([
            "exec",
            "--json",
            "--dangerously-bypass-approvals-and-sandbox",
            "use every tool",
        ])
        .current_dir(exec_cwd.path())
        .env("REIN_HOME", exec_home.path())
        .env("MOCK_API_KEY", "test-key")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let exec_items: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "item.completed" && e["item"]["type"] == "command_execution")
        .map(|e| e["item"].clone())
        .collect();
    let facts = |command: &Value, exit: &Value, status: &Value| json!({ "command": command, "exit_code": exit, "status": status });
    let exec_facts: Vec<Value> = exec_items
        .iter()
        .map(|i| facts(&i["command"], &i["exit_code"], &i["status"]))
        .filter(|f| f["command"] != "touch nope.txt")
        .collect();
    let ide_facts: Vec<Value> = [
        "call_cat",
        "call_exit",
        "call_timeout",
        "call_signal",
        "call_read",
        "call_list",
        "call_grep",
        "call_ls",
        "call_search",
        "call_bg",
        "call_stdin",
    ]
    .iter()
    .map(|id| {
        let i = &live[*id];
        let status = i["status"].as_str().unwrap();
        let mut command = i["command"].clone();
        // The file tools' command names the path the call resolved, in its own cwd.
        if let Some(c) = command.as_str() {
            command = json!(c.replace(&dir, &exec_cwd.path().display().to_string()));
        }
        facts(&command, &i["exitCode"], &json!(status))
    })
    .collect();
    assert_eq!(exec_facts, ide_facts);
}
