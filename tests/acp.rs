//! `rein acp` end to end: the real binary on stdio, a real mock model, whole messages
//! compared. Handshake, a streamed answer, a tool call with its diff, the permission round
//! trip, cancel, load (replay before the answer, the same updates as live), resume, list,
//! close, sessions shared with `rein exec`, and bad input.
#![allow(clippy::unwrap_used)]

#[path = "support/acp.rs"]
mod support;

use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use support::{home_for, is_answer, method, update_kind, updates, Acp, MockModel};

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
                "mcpCapabilities": { "http": false, "sse": false },
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
                "content": [diff.clone()], "locations": [{ "path": file }],
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

fn escalating_model() -> MockModel {
    MockModel::start(json!({
        "replies": [
            { "tool_calls": [{ "call_id": "call_touch", "name": "shell", "arguments": {
                "command": ["touch", "approved.txt"], "with_escalated_permissions": true,
                "justification": "needs to write outside the sandbox"
            } }] },
            { "text": "Done." }
        ],
        "when_exhausted": "echo"
    }))
}

#[test]
fn a_permission_is_asked_on_the_calls_card_and_allow_once_runs_it() {
    let model = escalating_model();
    let home = home_for(&model);
    let cwd = tempfile::tempdir().unwrap();
    let cwd_path = cwd.path().canonicalize().unwrap();
    let mut acp = Acp::start(home.path());
    acp.initialize();
    let session = acp.new_session(&cwd_path);
    let id = acp.prompt(&session, "Touch the file.");
    let seen = acp.until(|m| method(m) == "session/request_permission");
    let ask = seen.last().unwrap().clone();
    assert_eq!(
        ask["params"],
        json!({
            "sessionId": session,
            "toolCall": {
                "toolCallId": "call_touch", "status": "pending", "kind": "execute",
                "title": "touch approved.txt",
                "content": [{ "type": "content", "content": { "type": "text",
                    "text": "the command asks to run outside the sandbox: needs to write outside the sandbox" } }]
            },
            "options": [
                { "optionId": "allow_once", "name": "Allow once", "kind": "allow_once" },
                { "optionId": "allow_always", "name": "Allow for this session", "kind": "allow_always" },
                { "optionId": "reject_once", "name": "Reject", "kind": "reject_once" }
            ]
        })
    );
    // The card the request belongs to was opened before it.
    assert!(updates(&seen)
        .iter()
        .any(|u| u["sessionUpdate"] == "tool_call" && u["toolCallId"] == "call_touch"));
    acp.send(&json!({ "jsonrpc": "2.0", "id": ask["id"],
                      "result": { "outcome": { "outcome": "selected", "optionId": "allow_once" } } }));
    let (rest, answer) = acp.answer_to(&id);
    assert_eq!(answer["result"], json!({ "stopReason": "end_turn" }));
    let closed: Vec<Value> = updates(&rest)
        .into_iter()
        .filter(|u| u["sessionUpdate"] == "tool_call_update")
        .collect();
    assert_eq!(closed.len(), 1);
    assert_eq!(closed[0]["status"], "completed");
    assert!(cwd_path.join("approved.txt").exists());
    acp.finish();
}

#[test]
fn cancel_during_a_permission_request_withdraws_it_and_the_prompt_is_cancelled() {
    let model = escalating_model();
    let home = home_for(&model);
    let cwd = tempfile::tempdir().unwrap();
    let cwd_path = cwd.path().canonicalize().unwrap();
    let mut acp = Acp::start(home.path());
    acp.initialize();
    let session = acp.new_session(&cwd_path);
    let id = acp.prompt(&session, "Touch the file.");
    let ask = acp
        .until(|m| method(m) == "session/request_permission")
        .pop()
        .unwrap();
    acp.notify("session/cancel", json!({ "sessionId": session }));
    let (rest, answer) = acp.answer_to(&id);
    assert_eq!(answer["result"], json!({ "stopReason": "cancelled" }));
    assert!(
        rest.iter()
            .any(|m| method(m) == "$/cancel_request" && m["params"]["requestId"] == ask["id"]),
        "the permission request is withdrawn: {rest:#?}"
    );
    // The client answers it cancelled, as the protocol asks; that changes nothing.
    acp.send(&json!({ "jsonrpc": "2.0", "id": ask["id"],
                      "result": { "outcome": { "outcome": "cancelled" } } }));
    assert!(!cwd_path.join("approved.txt").exists());
    // The session goes on.
    let id = acp.prompt(&session, "again");
    let (_, answer) = acp.answer_to(&id);
    assert_eq!(answer["result"], json!({ "stopReason": "end_turn" }));
    acp.finish();
}

fn steer(acp: &mut Acp, session: &str, text: &str) -> Value {
    acp.request(
        "_session/steering",
        json!({ "sessionId": session, "prompt": [{ "type": "text", "text": text }] }),
    )
}

#[test]
fn a_prompt_during_a_turn_waits_for_it_and_steering_joins_it() {
    let model = MockModel::start(json!({
        "replies": [
            { "tool_calls": [{ "call_id": "call_touch", "name": "shell", "arguments": {
                "command": ["touch", "approved.txt"], "with_escalated_permissions": true,
                "justification": "outside"
            } }] },
            { "text": "First done." },
            { "text": "Second done." },
            { "text": "Steered anew." }
        ],
        "when_exhausted": "echo"
    }));
    let home = home_for(&model);
    let cwd = tempfile::tempdir().unwrap();
    let cwd_path = cwd.path().canonicalize().unwrap();
    let mut acp = Acp::start(home.path());
    acp.initialize();
    let session = acp.new_session(&cwd_path);
    let first = acp.prompt(&session, "Touch the file.");
    // The turn waits on the permission: a prompt now waits in line, a steer joins the turn.
    let ask = acp
        .until(|m| method(m) == "session/request_permission")
        .pop()
        .unwrap();
    let second = acp.prompt(&session, "Second prompt.");
    let steering = steer(&mut acp, &session, "Also mind the steer.");
    let (before, steered) = acp.answer_to(&steering);
    assert_eq!(steered["result"], json!({ "outcome": "injected" }));
    acp.send(&json!({ "jsonrpc": "2.0", "id": ask["id"],
                      "result": { "outcome": { "outcome": "selected", "optionId": "allow_once" } } }));
    let (rest, answer) = acp.answer_to(&first);
    assert_eq!(answer["result"], json!({ "stopReason": "end_turn" }));
    assert!(
        !before.iter().chain(&rest).any(|m| is_answer(m, &second)),
        "the second prompt waited for the first turn"
    );
    let (_, answer) = acp.answer_to(&second);
    assert_eq!(answer["result"], json!({ "stopReason": "end_turn" }));
    let requests: Vec<String> = model.requests().iter().map(Value::to_string).collect();
    assert_eq!(requests.len(), 3, "{requests:#?}");
    assert!(requests[1].contains("Also mind the steer."));
    assert!(!requests[1].contains("Second prompt."));
    assert!(requests[2].contains("Second prompt."));

    // Idle, a steer starts a turn of its own.
    let steering = steer(&mut acp, &session, "Go on.");
    let (_, steered) = acp.answer_to(&steering);
    assert_eq!(steered["result"], json!({ "outcome": "startedNewTurn" }));
    let chunks = acp.until(|m| update_kind(m) == "agent_message_chunk");
    assert_eq!(
        chunks.last().unwrap()["params"]["update"]["content"]["text"],
        "Steered anew."
    );
    acp.finish();
}

#[test]
fn cancel_also_cancels_the_prompts_waiting_in_line_but_not_later_ones() {
    let model = escalating_model();
    let home = home_for(&model);
    let cwd = tempfile::tempdir().unwrap();
    let cwd_path = cwd.path().canonicalize().unwrap();
    let mut acp = Acp::start(home.path());
    acp.initialize();
    let session = acp.new_session(&cwd_path);
    let first = acp.prompt(&session, "Touch the file.");
    acp.until(|m| method(m) == "session/request_permission");
    let second = acp.prompt(&session, "Then this.");
    acp.notify("session/cancel", json!({ "sessionId": session }));
    // Sent right after the cancel (as Zed does after Stop): it waits for the cancelled turn
    // and runs.
    let third = acp.prompt(&session, "again");
    let (_, answer) = acp.answer_to(&first);
    assert_eq!(answer["result"], json!({ "stopReason": "cancelled" }));
    let (_, answer) = acp.answer_to(&second);
    assert_eq!(answer["result"], json!({ "stopReason": "cancelled" }));
    let (_, answer) = acp.answer_to(&third);
    assert_eq!(answer["result"], json!({ "stopReason": "end_turn" }));
    let requests: Vec<String> = model.requests().iter().map(Value::to_string).collect();
    assert_eq!(
        requests.len(),
        2,
        "the second prompt never reached the model"
    );
    assert!(!requests[1].contains("Then this."));
    acp.finish();
}

#[test]
fn a_sub_agent_is_a_card_that_follows_the_child() {
    // The parent's second request and the child's first get the same reply, whichever
    // comes first; later ones (the parent woken by the child's mail) are echoes.
    let model = MockModel::start(json!({
        "replies": [
            { "tool_calls": [{ "call_id": "call_spawn", "name": "spawn_agent",
                               "arguments": { "message": "Say the words." } }] },
            { "text": "Same words." },
            { "text": "Same words." }
        ],
        "when_exhausted": "echo"
    }));
    let home = home_for(&model);
    let cwd = tempfile::tempdir().unwrap();
    let mut acp = Acp::start(home.path());
    acp.initialize();
    let session = acp.new_session(&cwd.path().canonicalize().unwrap());
    let id = acp.prompt(&session, "Delegate.");
    let mut card: Option<Value> = None;
    let mut card_updates = Vec::new();
    let mut answered = false;
    while !(answered
        && card_updates
            .last()
            .is_some_and(|u: &Value| u["status"] == "completed"))
    {
        let m = acp.recv();
        if is_answer(&m, &id) {
            assert_eq!(m["result"], json!({ "stopReason": "end_turn" }));
            answered = true;
            continue;
        }
        let u = &m["params"]["update"];
        let is_card = u["toolCallId"]
            .as_str()
            .is_some_and(|c| c.starts_with("agent-"));
        match update_kind(&m) {
            "tool_call" if is_card => card = Some(u.clone()),
            "tool_call_update" if is_card => card_updates.push(u.clone()),
            _ => {}
        }
    }
    let card = card.expect("the sub-agent has a card");
    let child = card["rawInput"]["threadId"].as_str().unwrap();
    assert_eq!(card["toolCallId"], format!("agent-{child}"));
    assert_eq!(card["status"], "in_progress");
    assert_eq!(card["rawInput"]["task"], "Say the words.");
    assert_eq!(
        card["_meta"],
        json!({ "rein": { "subagent": { "threadId": child } } })
    );
    let title = card["title"].as_str().unwrap();
    assert!(
        title.starts_with("Sub-agent ") && title.ends_with(": Say the words."),
        "{title}"
    );
    let contents: Vec<&Value> = card_updates
        .iter()
        .filter_map(|u| u.get("content"))
        .collect();
    assert_eq!(
        contents,
        vec![&json!([{ "type": "content", "content": { "type": "text", "text": "Same words." } }])]
    );
    acp.finish();
}

#[test]
fn an_advisor_review_is_a_card_closed_with_its_verdict() {
    let model = MockModel::start(json!({
        "replies": [
            { "tool_calls": [{ "call_id": "call_rm", "name": "shell",
                               "arguments": { "command": ["rm", "-f", "keep.txt"] } }] },
            { "text": json!({ "decision": "reject", "reason": "not asked for" }).to_string() },
            { "text": "Left it." }
        ],
        "when_exhausted": "echo"
    }));
    let home = home_for(&model);
    let config = home.path().join("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("\n[advisor]\nmode = \"full\"\ntimeout_ms = 20000\n");
    std::fs::write(&config, text).unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let cwd_path = cwd.path().canonicalize().unwrap();
    std::fs::write(cwd_path.join("keep.txt"), "keep").unwrap();
    let mut acp = Acp::start(home.path());
    acp.initialize();
    let session = acp.new_session(&cwd_path);
    let id = acp.prompt(&session, "Tidy up.");
    let (before, answer) = acp.answer_to(&id);
    assert_eq!(answer["result"], json!({ "stopReason": "end_turn" }));
    assert!(
        cwd_path.join("keep.txt").exists(),
        "the rejected call did not run"
    );
    let review: Vec<Value> = updates(&before)
        .into_iter()
        .filter(|u| {
            u["toolCallId"]
                .as_str()
                .is_some_and(|c| c.starts_with("advisor-"))
        })
        .map(|mut u| {
            u.as_object_mut().unwrap().remove("toolCallId");
            u
        })
        .collect();
    assert_eq!(
        review,
        vec![
            json!({
                "sessionUpdate": "tool_call", "title": "Advisor review of 1 call(s) (high risk)",
                "kind": "think", "status": "in_progress",
                "content": [{ "type": "content", "content": { "type": "text", "text": "- rm -f keep.txt: destructive command: rm" } }],
                "rawInput": { "calls": ["call_rm"] }
            }),
            json!({
                "sessionUpdate": "tool_call_update", "status": "failed",
                "content": [{ "type": "content", "content": { "type": "text", "text": "Rejected: not asked for" } }],
                "rawOutput": { "decision": "reject", "reason": "not asked for" }
            }),
        ]
    );
    acp.finish();
}

#[test]
fn sessions_are_shared_with_exec_both_ways() {
    let model = plain_model();
    let home = home_for(&model);
    let cwd = tempfile::tempdir().unwrap();
    let cwd_path = cwd.path().canonicalize().unwrap();
    let mut acp = Acp::start(home.path());
    acp.initialize();
    let session = acp.new_session(&cwd_path);
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
