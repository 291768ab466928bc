//! `rein acp` while a turn runs, end to end (the real binary on stdio, a real mock model):
//! the permission round trip, cancel (withdrawing an open permission request and the
//! prompts waiting in line), a prompt queued behind a turn, `_session/steering`, and the
//! cards of sub-agents and advisor reviews.
#![allow(clippy::unwrap_used)]

use rein_test_support::acp as support;

use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use support::{home_for, is_answer, method, open_session, update_kind, updates, Acp, MockModel};

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
    let (_home, _cwd, cwd_path, mut acp, session) = open_session(&model);
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
                { "optionId": "reject_once", "name": "Reject", "kind": "reject_once" },
                { "optionId": "reject_always", "name": "Reject for this session", "kind": "reject_always" }
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
    let (_home, _cwd, cwd_path, mut acp, session) = open_session(&model);
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

/// A call of `touch FILE` outside the sandbox, which asks for permission.
fn touch(call_id: &str, file: &str) -> Value {
    json!({ "tool_calls": [{ "call_id": call_id, "name": "shell", "arguments": {
        "command": ["touch", file], "with_escalated_permissions": true,
        "justification": "outside"
    } }] })
}

/// Prompt and answer each permission request with `option` (`None`: expect none); returns
/// the permission requests seen and the closing update of the turn's one call.
fn touch_turn(acp: &mut Acp, session: &str, option: Option<&str>) -> (usize, Value) {
    let id = acp.prompt(session, "Touch the file.");
    let mut asked = 0;
    let mut seen = acp.until(|m| {
        if method(m) == "session/request_permission" {
            asked += 1;
        }
        is_answer(m, &id) || method(m) == "session/request_permission"
    });
    if let Some(ask) = seen
        .last()
        .filter(|m| method(m) == "session/request_permission")
    {
        let option = option.expect("no permission request was expected");
        acp.send(&json!({ "jsonrpc": "2.0", "id": ask["id"],
                          "result": { "outcome": { "outcome": "selected", "optionId": option } } }));
        let (rest, answer) = acp.answer_to(&id);
        seen.extend(rest);
        seen.push(answer);
    }
    assert_eq!(
        seen.last().unwrap()["result"],
        json!({ "stopReason": "end_turn" })
    );
    let closed = updates(&seen)
        .into_iter()
        .find(|u| u["sessionUpdate"] == "tool_call_update")
        .unwrap();
    (asked, closed)
}

#[test]
fn reject_always_refuses_the_same_request_without_asking_even_after_a_resume() {
    let model = MockModel::start(json!({
        "replies": [
            touch("call_1", "denied.txt"), { "text": "Refused." },
            touch("call_2", "denied.txt"), { "text": "Refused again." },
            touch("call_3", "denied.txt"), { "text": "Still refused." },
            touch("call_4", "other.txt"), { "text": "Asked." }
        ],
        "when_exhausted": "echo"
    }));
    let (home, _cwd, cwd_path, mut acp, session) = open_session(&model);
    let (asked, first) = touch_turn(&mut acp, &session, Some("reject_always"));
    assert_eq!((asked, first["status"].clone()), (1, json!("failed")));
    assert_eq!(
        first["rawOutput"],
        json!({ "type": "declined", "by": "user", "reason": "the user denied this action" })
    );
    // The same request again: refused at once, nobody is asked.
    let (asked, again) = touch_turn(&mut acp, &session, None);
    assert_eq!(asked, 0);
    assert_eq!(again["rawOutput"], first["rawOutput"]);
    acp.finish();

    // The refusal is in the session's record: a new process that resumes it refuses too,
    // and a different command is still asked about.
    let mut acp = Acp::start(home.path());
    acp.initialize();
    let (_, resumed) = acp.call(
        "session/resume",
        json!({ "sessionId": session, "cwd": cwd_path, "mcpServers": [] }),
    );
    assert!(resumed["result"].is_object(), "{resumed}");
    let (asked, resumed_call) = touch_turn(&mut acp, &session, None);
    assert_eq!(asked, 0);
    assert_eq!(resumed_call["status"], "failed");
    let (asked, _) = touch_turn(&mut acp, &session, Some("reject_once"));
    assert_eq!(asked, 1);
    assert!(!cwd_path.join("denied.txt").exists());
    assert!(!cwd_path.join("other.txt").exists());
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
    let (_home, _cwd, _, mut acp, session) = open_session(&model);
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
    let (_home, _cwd, _, mut acp, session) = open_session(&model);
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
fn a_session_sends_the_projects_agents_md_before_each_prompt() {
    let model = MockModel::start(json!({"replies": [{"text": "one"}, {"text": "two"}]}));
    let home = home_for(&model);
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path().canonicalize().unwrap();
    std::fs::create_dir(root.join(".git")).unwrap();
    std::fs::write(root.join("AGENTS.md"), "root rules").unwrap();
    std::fs::create_dir(root.join("sub")).unwrap();
    std::fs::write(root.join("sub/AGENTS.override.md"), "sub rules").unwrap();
    let mut acp = Acp::start(home.path());
    acp.initialize();
    let session = acp.new_session(&root.join("sub"));
    for text in ["first", "second"] {
        let id = acp.prompt(&session, text);
        let (_, answer) = acp.answer_to(&id);
        assert_eq!(answer["result"]["stopReason"], "end_turn");
    }
    let block = json!({"type": "message", "role": "user", "content": [{"type": "input_text",
        "text": format!("# AGENTS.md instructions for {}\n\n<INSTRUCTIONS>\nroot rules\n\nsub rules\n</INSTRUCTIONS>",
            root.join("sub").display())}]});
    let requests = model.requests();
    assert_eq!(requests[0]["input"][0], block);
    assert_eq!(requests[1]["input"][0], block);
    assert_eq!(requests[1]["input"][3]["content"][0]["text"], "second");
    acp.finish();
}
