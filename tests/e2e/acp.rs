//! `rein acp` end to end: the real binary on stdio, a real mock model, whole messages
//! compared. Handshake, a streamed answer, a tool call with its diff, load (replay before
//! the answer, the same updates as live), resume, list, close, sessions shared with
//! `rein exec`, and bad input. What happens while a turn runs is in acp_turns.rs.
#![allow(clippy::unwrap_used)]

use rein_test_support::acp as support;

use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use support::{home_for, is_answer, method, open_session, update_kind, updates, Acp, MockModel};

fn plain_model() -> MockModel {
    MockModel::start(json!({
        "replies": [{ "text": "Hello there.", "deltas": 2 }],
        "when_exhausted": "echo"
    }))
}

/// `messageId`s are the provider's item ids: the same in a live turn and its replay, but
/// not known to the test in advance.
fn without_message_ids(mut updates: Vec<Value>) -> Vec<Value> {
    for u in &mut updates {
        if let Some(map) = u.as_object_mut() {
            map.remove("messageId");
        }
    }
    updates
}

#[test]
fn initialize_says_what_rein_does() {
    let model = plain_model();
    let home = home_for(&model);
    let mut acp = Acp::start(home.path());
    assert_eq!(
        acp.initialize(),
        json!({
            "protocolVersion": 1,
            "agentCapabilities": {
                "loadSession": true,
                "promptCapabilities": { "image": true, "audio": false, "embeddedContext": true },
                "mcpCapabilities": { "http": true, "sse": false },
                "sessionCapabilities": { "list": {}, "fork": {}, "resume": {}, "close": {} },
                "auth": {}
            },
            "authMethods": [],
            "agentInfo": { "name": "rein", "title": "rein", "version": env!("CARGO_PKG_VERSION") },
            "_meta": { "steering": { "supported": true, "method": "_session/steering" } }
        })
    );
    acp.finish();
}

#[test]
fn a_prompt_streams_its_answer_then_ends_the_turn() {
    let model = plain_model();
    let home = home_for(&model);
    let cwd = tempfile::tempdir().unwrap();
    let mut acp = Acp::start(home.path());
    acp.initialize();
    let session = acp.new_session(cwd.path());
    let id = acp.prompt(&session, "Say hello.");
    let (before, answer) = acp.answer_to(&id);
    assert_eq!(answer["result"], json!({ "stopReason": "end_turn" }));
    let chunks: Vec<Value> = updates(&before)
        .into_iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .collect();
    assert_eq!(
        without_message_ids(chunks),
        vec![
            json!({ "sessionUpdate": "agent_message_chunk", "content": { "type": "text", "text": "Hello " } }),
            json!({ "sessionUpdate": "agent_message_chunk", "content": { "type": "text", "text": "there." } }),
        ]
    );
    // Every update names the session.
    assert!(before
        .iter()
        .all(|m| method(m) == "session/update" && m["params"]["sessionId"] == json!(session)));
    acp.finish();
}

fn edit_model() -> MockModel {
    MockModel::start(json!({
        "replies": [
            { "tool_calls": [{ "call_id": "call_patch", "name": "apply_patch", "arguments": {
                "input": "*** Begin Patch\n*** Add File: notes.txt\n+one\n+two\n*** End Patch\n"
            } }] },
            { "text": "Wrote it." }
        ],
        "when_exhausted": "echo"
    }))
}

#[test]
fn an_edit_is_a_tool_call_carrying_its_diff_and_load_replays_it_as_live() {
    let model = edit_model();
    let home = home_for(&model);
    let cwd = tempfile::tempdir().unwrap();
    let cwd_path = cwd.path().canonicalize().unwrap();
    let file = cwd_path.join("notes.txt");
    let mut acp = Acp::start(home.path());
    acp.initialize();
    let session = acp.new_session(&cwd_path);
    let id = acp.prompt(&session, "Write the notes.");
    let (before, answer) = acp.answer_to(&id);
    assert_eq!(answer["result"], json!({ "stopReason": "end_turn" }));
    let live = updates(&before);
    let calls: Vec<Value> = live
        .iter()
        .filter(|u| u["sessionUpdate"] == "tool_call" || u["sessionUpdate"] == "tool_call_update")
        .cloned()
        .collect();
    // A new file has no old text (the SDK leaves `oldText` out rather than null).
    let diff = json!({ "type": "diff", "path": file, "newText": "one\ntwo\n" });
    assert_eq!(
        calls,
        vec![
            json!({
                "sessionUpdate": "tool_call", "toolCallId": "call_patch",
                "title": format!("Edit {}", file.display()), "kind": "edit", "status": "in_progress",
                "content": [diff], "locations": [{ "path": file }],
                "rawInput": { "input": "*** Begin Patch\n*** Add File: notes.txt\n+one\n+two\n*** End Patch\n" }
            }),
            json!({
                "sessionUpdate": "tool_call_update", "toolCallId": "call_patch", "status": "completed",
                "content": [diff],
                "rawOutput": { "type": "patched", "changes": [{
                    "path": file, "kind": "add",
                    "unified_diff": "--- /dev/null\n+++ b/notes.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n"
                }] }
            }),
        ]
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "one\ntwo\n");
    acp.finish();

    // A new process loads it: the whole history replays before the answer, mapped as live.
    let rollout_before = rollout_bytes(home.path());
    let mut acp = Acp::start(home.path());
    acp.initialize();
    let (replayed, answer) = acp.call(
        "session/load",
        json!({ "sessionId": session, "cwd": cwd_path, "mcpServers": [] }),
    );
    assert!(answer["result"]["configOptions"].is_array(), "{answer}");
    let replayed = updates(&replayed);
    let user: Vec<&Value> = replayed
        .iter()
        .filter(|u| u["sessionUpdate"] == "user_message_chunk")
        .collect();
    assert_eq!(user.len(), 1);
    assert_eq!(
        user[0]["content"],
        json!({ "type": "text", "text": "Write the notes." })
    );
    let not_user = |u: &&Value| u["sessionUpdate"] != "user_message_chunk";
    let merged_live = merge_chunks(live.iter().filter(not_user).cloned().collect());
    let merged_replay = merge_chunks(replayed.iter().filter(not_user).cloned().collect());
    assert_eq!(merged_replay, merged_live);
    // Loading wrote nothing.
    assert_eq!(rollout_bytes(home.path()), rollout_before);
    acp.finish();
}

/// Consecutive message chunks of one message as one (live streams deltas, a replay sends
/// the whole text), and usage (counted live only) left out.
fn merge_chunks(updates: Vec<Value>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for u in updates {
        if u["sessionUpdate"] == "usage_update" {
            continue;
        }
        if let Some(last) = out.last_mut() {
            let chunk = |v: &Value| {
                v["sessionUpdate"] == "agent_message_chunk"
                    || v["sessionUpdate"] == "agent_thought_chunk"
            };
            if chunk(last)
                && last["sessionUpdate"] == u["sessionUpdate"]
                && last["messageId"] == u["messageId"]
            {
                let text = format!(
                    "{}{}",
                    last["content"]["text"].as_str().unwrap(),
                    u["content"]["text"].as_str().unwrap()
                );
                last["content"]["text"] = json!(text);
                continue;
            }
        }
        out.push(u);
    }
    out
}

/// Every rollout file with its content (claims and locks left out).
fn rollout_bytes(home: &std::path::Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut dirs = vec![home.join("sessions")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                dirs.push(entry.path());
            } else if entry.path().extension().is_some_and(|e| e == "jsonl") {
                files.push((entry.path(), std::fs::read(entry.path()).unwrap()));
            }
        }
    }
    files.sort();
    files
}

#[test]
fn sessions_are_shared_with_exec_both_ways() {
    let model = plain_model();
    let (home, _cwd, cwd_path, mut acp, session) = open_session(&model);
    let id = acp.prompt(&session, "first from the editor");
    acp.answer_to(&id);
    acp.finish();

    // exec resumes the editor's session...
    let out = exec(
        home.path(),
        &cwd_path,
        &["resume", &session, "then from exec"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // ...and starts one the editor lists and resumes.
    let out = exec(home.path(), &cwd_path, &["--json", "from exec only"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let exec_thread = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["type"] == "thread.started")
        .map(|e| e["thread_id"].as_str().unwrap().to_owned())
        .unwrap();

    let mut acp = Acp::start(home.path());
    acp.initialize();
    let (_, listed) = acp.call("session/list", json!({ "cwd": cwd_path }));
    let ids: Vec<&str> = listed["result"]["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["sessionId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![exec_thread.as_str(), session.as_str()]);
    let (_, elsewhere) = acp.call("session/list", json!({ "cwd": "/nonexistent-dir" }));
    assert_eq!(elsewhere["result"]["sessions"], json!([]));

    let (before, resumed) = acp.call(
        "session/resume",
        json!({ "sessionId": session, "cwd": cwd_path, "mcpServers": [] }),
    );
    assert!(resumed["result"].is_object(), "{resumed}");
    assert_eq!(before, Vec::<Value>::new(), "resume replays nothing");
    let id = acp.prompt(&session, "back in the editor");
    let (_, answer) = acp.answer_to(&id);
    assert_eq!(answer["result"], json!({ "stopReason": "end_turn" }));
    // The model saw the whole conversation, exec's turn included.
    let last = model.requests().last().cloned().unwrap();
    let text = last.to_string();
    for said in [
        "first from the editor",
        "then from exec",
        "back in the editor",
    ] {
        assert!(text.contains(said), "{said} missing from {text}");
    }

    let (_, closed) = acp.call("session/close", json!({ "sessionId": session }));
    assert_eq!(closed["result"], json!({}));
    let id = acp.prompt(&session, "after close");
    let (_, refused) = acp.answer_to(&id);
    assert_eq!(refused["error"]["code"], -32002, "{refused}");
    acp.finish();
}

fn exec(home: &std::path::Path, cwd: &std::path::Path, args: &[&str]) -> std::process::Output {
    support::rein()
        .arg("exec")
        .args(args)
        .current_dir(cwd)
        .env("REIN_HOME", home)
        .env("MOCK_API_KEY", "test-key")
        .env_remove("RUST_LOG")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn bad_input_gets_errors_and_the_agent_keeps_serving() {
    let model = plain_model();
    let home = home_for(&model);
    let cwd = tempfile::tempdir().unwrap();
    let mut acp = Acp::start(home.path());
    // Before initialize.
    let (_, early) = acp.call(
        "session/new",
        json!({ "cwd": cwd.path(), "mcpServers": [] }),
    );
    assert_eq!(
        early["error"],
        json!({ "code": -32600, "message": "Invalid request",
                "data": "ACP initialization must complete before `session/new` can be used" })
    );
    acp.initialize();
    acp.send_raw(b"this is not json\n");
    let garbage = acp.recv();
    assert_eq!(garbage["error"]["code"], -32700);
    let (_, unknown) = acp.call("session/teleport", json!({}));
    assert_eq!(unknown["error"]["code"], -32601);
    let (_, again) = acp.call("initialize", json!({ "protocolVersion": 1 }));
    assert_eq!(
        again["error"],
        json!({ "code": -32600, "message": "the connection is initialized already" })
    );
    let (_, relative) = acp.call(
        "session/new",
        json!({ "cwd": "relative/dir", "mcpServers": [] }),
    );
    assert_eq!(
        relative["error"],
        json!({ "code": -32602, "message": "cwd: relative/dir is not an absolute path" })
    );
    let (_, wrong) = acp.call("session/new", json!({ "cwd": 7 }));
    assert_eq!(wrong["error"]["code"], -32602, "{wrong}");
    let ghost = "01a231ca-0000-7000-8000-000000000000";
    let id = acp.prompt(ghost, "hello?");
    let (_, missing) = acp.answer_to(&id);
    assert_eq!(missing["error"]["code"], -32002, "{missing}");
    let (_, bad_id) = acp.call(
        "session/load",
        json!({ "sessionId": "not-an-id", "cwd": cwd.path(), "mcpServers": [] }),
    );
    assert_eq!(bad_id["error"]["code"], -32602, "{bad_id}");
    // Still serving.
    let session = acp.new_session(cwd.path());
    let id = acp.prompt(&session, "hi");
    let (_, answer) = acp.answer_to(&id);
    assert!(is_answer(&answer, &id));
    assert_eq!(answer["result"], json!({ "stopReason": "end_turn" }));
    assert_eq!(update_kind(&json!({})), "");
    acp.finish();
}
