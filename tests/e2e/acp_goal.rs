//! `/goal` in `rein acp` (the real binary on stdio, a real mock model): advertised in
//! `available_commands_update`; `/goal OBJECTIVE` sets the goal and the kernel works on it
//! in turns of its own, its progress a card the editor draws; `/goal` reports the status;
//! `/goal clear` clears it; `session/load` replays the card.
#![allow(clippy::unwrap_used)]

use rein_test_support::acp as support;

use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use support::{home_for, update_kind, updates, Acp, MockModel};

/// The text of the agent message chunks among `messages`, joined.
fn said(messages: &[Value]) -> String {
    updates(messages)
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|u| u["content"]["text"].as_str())
        .collect()
}

/// The updates of the goal's card (`goal-…`) among `messages`.
fn card(messages: &[Value]) -> Vec<Value> {
    updates(messages)
        .into_iter()
        .filter(|u| {
            u["toolCallId"]
                .as_str()
                .is_some_and(|id| id.starts_with("goal-"))
        })
        .collect()
}

fn command(acp: &mut Acp, session: &str, text: &str) -> Vec<Value> {
    let id = acp.prompt(session, text);
    let (seen, answer) = acp.answer_to(&id);
    assert_eq!(
        answer["result"],
        json!({ "stopReason": "end_turn" }),
        "{text}"
    );
    seen
}

/// `seen`, and what follows it up to the first card update that `done` accepts (the card
/// follows the goal's events, which may reach the client after the command's answer).
fn until_card(acp: &mut Acp, mut seen: Vec<Value>, done: impl Fn(&Value) -> bool) -> Vec<Value> {
    if !card(&seen).iter().any(&done) {
        seen.extend(acp.until(|m| {
            let update = &m["params"]["update"];
            update["toolCallId"]
                .as_str()
                .is_some_and(|id| id.starts_with("goal-"))
                && done(update)
        }));
    }
    seen
}

fn text_content(text: &str) -> Value {
    json!([{ "type": "content", "content": { "type": "text", "text": text } }])
}

#[test]
fn goal_sets_reports_and_clears_the_goal_and_its_card_follows_it() {
    let model = MockModel::start(json!({ "replies": [
        { "tool_calls": [{ "call_id": "call_done", "name": "update_goal",
                           "arguments": { "status": "complete" } }] },
        { "text": "The report is written." }
    ], "when_exhausted": "error" }));
    let home = home_for(&model);
    let cwd = tempfile::tempdir().unwrap();
    let cwd_path = cwd.path().canonicalize().unwrap();
    let mut acp = Acp::start(home.path());
    acp.initialize();
    let (_, answer) = acp.call("session/new", json!({ "cwd": cwd_path, "mcpServers": [] }));
    let session = answer["result"]["sessionId"].as_str().unwrap().to_owned();
    let commands = acp.recv();
    assert_eq!(update_kind(&commands), "available_commands_update");
    let goal_command = commands["params"]["update"]["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "goal")
        .cloned();
    assert_eq!(
        goal_command,
        Some(json!({
            "name": "goal",
            "description": "Set a goal worked on until it is done (--auto-resume: it continues \
                            after a restart); /goal shows it, /goal clear removes it",
            "input": { "hint": "objective, --auto-resume objective, or clear" }
        }))
    );

    let none = command(&mut acp, &session, "/goal");
    assert_eq!(said(&none), "No goal. Set one with /goal OBJECTIVE.");

    let set = command(&mut acp, &session, "/goal write the report");
    assert_eq!(
        said(&set),
        "Goal set (active): write the report\nThe agent works on it in turns of its own; \
         /goal shows where it stands, /goal clear removes it."
    );
    let set = until_card(&mut acp, set, |u| u["sessionUpdate"] == "tool_call");
    let opened = card(&set);
    assert_eq!(opened.len(), 1, "{opened:#?}");
    let card_id = opened[0]["toolCallId"].as_str().unwrap().to_owned();
    assert_eq!(
        opened[0],
        json!({
            "sessionUpdate": "tool_call", "toolCallId": card_id, "kind": "think",
            "status": "in_progress", "title": "Goal (active): write the report",
            "content": text_content("Goal (active): write the report\nUsed: 0 tokens, 0 s, 0 goal turns")
        })
    );

    // The kernel's goal turn: the model reports the goal complete; the card says so.
    let done = until_card(&mut acp, set, |u| u["status"] == "completed");
    let last = card(&done).pop().unwrap();
    assert_eq!(
        (&last["sessionUpdate"], &last["title"]),
        (
            &json!("tool_call_update"),
            &json!("Goal (complete): write the report")
        )
    );
    assert!(
        updates(&done)
            .iter()
            .any(|u| u["sessionUpdate"] == "tool_call" && u["toolCallId"] == "call_done"),
        "the goal turn's update_goal call is shown: {done:#?}"
    );

    // Its last turn's answer: the checkpoint's note reaches the card.
    let noted = until_card(&mut acp, done, |u| {
        u["content"][0]["content"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("Last turn:"))
    });
    let status_text = card(&noted).pop().unwrap()["content"][0]["content"]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        status_text.starts_with("Goal (complete): write the report\nUsed: ")
            && status_text.ends_with("\nLast turn: The report is written."),
        "{status_text}"
    );
    let status = command(&mut acp, &session, "/goal");
    assert_eq!(said(&status), status_text);

    let cleared = command(&mut acp, &session, "/goal clear");
    assert_eq!(said(&cleared), "Goal cleared: write the report");
    let cleared = until_card(&mut acp, cleared, |u| {
        u["title"] == "Goal cleared: write the report"
    });
    assert_eq!(
        card(&cleared),
        vec![json!({
            "sessionUpdate": "tool_call_update", "toolCallId": card_id,
            "status": "completed", "title": "Goal cleared: write the report"
        })]
    );
    let gone = command(&mut acp, &session, "/goal");
    assert_eq!(said(&gone), "No goal. Set one with /goal OBJECTIVE.");
    acp.finish();

    // A new process loads the session: the card replays, opened, completed and cleared.
    let mut acp = Acp::start(home.path());
    acp.initialize();
    let (replayed, answer) = acp.call(
        "session/load",
        json!({ "sessionId": session, "cwd": cwd_path, "mcpServers": [] }),
    );
    assert!(answer.get("error").is_none(), "{answer}");
    let replayed = card(&replayed);
    assert_eq!(replayed.first(), Some(&opened[0]));
    assert_eq!(replayed.last(), card(&cleared).last());
    acp.finish();
    assert_eq!(model.requests().len(), 2);
}

#[test]
fn a_goal_too_long_is_refused_with_the_reason() {
    let model = MockModel::start(json!({ "replies": [], "when_exhausted": "error" }));
    let (_home, _cwd, _cwd_path, mut acp, session) = support::open_session(&model);
    let long = format!("/goal {}", "x".repeat(4001));
    let refused = command(&mut acp, &session, &long);
    assert!(
        said(&refused).starts_with("Cannot set the goal: "),
        "{}",
        said(&refused)
    );
    assert_eq!(card(&refused), Vec::<Value>::new());
    let none = command(&mut acp, &session, "/goal");
    assert_eq!(said(&none), "No goal. Set one with /goal OBJECTIVE.");
    acp.finish();
    assert_eq!(model.requests().len(), 0);
}

/// `/goal --auto-resume OBJECTIVE` sets the goal's own auto-resume, recorded on its
/// `goal_updated` event (what a restart reads), and says so.
#[test]
fn goal_auto_resume_is_recorded_on_the_goal() {
    let model = MockModel::start(json!({ "replies": [
        { "tool_calls": [{ "name": "update_goal", "arguments": { "status": "complete" } }] },
        { "text": "Done." }
    ], "when_exhausted": "error" }));
    let (home, _cwd, _cwd_path, mut acp, session) = support::open_session(&model);
    let set = command(&mut acp, &session, "/goal --auto-resume keep going");
    assert_eq!(
        said(&set),
        "Goal set (active, continues after a restart): keep going\nThe agent works on it in \
         turns of its own; /goal shows where it stands, /goal clear removes it."
    );
    until_card(&mut acp, set, |u| u["status"] == "completed");
    acp.finish();
    let log = rein_test_support::exec::json_lines(
        &rein_test_support::exec::rein_ok(home.path(), &["sessions", "show", &session, "--json"])
            .stdout,
    );
    let recorded: Vec<(Value, Value)> = log
        .iter()
        .filter(|e| e["msg"]["type"] == "goal_updated")
        .map(|e| {
            let goal = &e["msg"]["goal"];
            (goal["status"].clone(), goal["auto_resume"].clone())
        })
        .collect();
    assert_eq!(
        recorded,
        [
            (json!("active"), json!(true)),
            (json!("complete"), json!(true))
        ]
    );
}
