//! `[memory] extract` through a real `rein app-server` and a scripted model: after every
//! `extract_after_turns` completed turns the kernel starts a turn of its own, offered only
//! `remember`, asking which memories the conversation is worth keeping; what it proposes
//! takes the consent path of `remember` (kept with `consent = "auto"`, refused and the
//! model told with `"never"`), each answer a rollout event. Off by default.
#![allow(clippy::unwrap_used)]

use pretty_assertions::assert_eq;
use rein_test_support::app_server::{method, AppServer, MockModel};
use rein_test_support::memory::{
    last_developer_text, memory_events, memory_home, memory_home_with, remember, repo, stored,
    tool_output,
};
use rein_test_support::mock_model::tool_names;
use serde_json::{json, Value};

const SAID: &str = "In this project we always run the tests with cargo nextest.";
const KEPT: &str = "Run the tests of this project with cargo nextest";

/// One user turn, then the extraction turn the kernel starts after it (two
/// `turn/completed`); the thread's id.
fn turn_then_extraction(home: &std::path::Path, cwd: &std::path::Path) -> String {
    let mut server = AppServer::start(home, &[]);
    server.initialize();
    let thread = server.start_thread(json!({ "cwd": cwd, "approvalPolicy": "never" }));
    server.turn(&thread, SAID);
    let extraction = server.until(|m| method(m) == "turn/completed");
    assert!(
        extraction.iter().any(|m| method(m) == "turn/started"),
        "the kernel started a turn of its own: {extraction:#?}"
    );
    assert!(server.finish().success());
    thread
}

#[test]
fn an_extraction_after_the_turns_proposes_memories_through_the_consent_path() {
    let model = MockModel::start(json!({ "replies": [
        { "text": "Noted." },
        remember(KEPT, "repo"),
        { "text": "Proposed one memory." },
    ], "when_exhausted": "error" }));
    let home = memory_home_with(&model, "auto", "extract = true\nextract_after_turns = 1\n");
    let cwd = repo("git@example.com:a.git");
    let thread = turn_then_extraction(home.path(), cwd.path());

    let requests = model.requests();
    assert_eq!(
        requests.len(),
        3,
        "one extraction, which does not count itself"
    );
    assert!(
        tool_names(&requests[0]).len() > 1,
        "{:?}",
        tool_names(&requests[0])
    );
    assert_eq!(tool_names(&requests[1]), vec!["remember".to_owned()]);
    let asked = last_developer_text(&requests[1]);
    assert!(
        asked.starts_with("<memory_extraction>\nLook back over this conversation.")
            && asked.ends_with("</memory_extraction>"),
        "{asked}"
    );
    assert!(
        requests[1].to_string().contains(SAID),
        "the conversation is in the request"
    );
    let kept = stored(home.path());
    assert_eq!(kept.len(), 1);
    assert_eq!(
        (&kept[0]["content"], &kept[0]["state"], &kept[0]["scope"]),
        (&json!(KEPT), &json!("accepted"), &json!("repo"))
    );
    let id = kept[0]["id"].as_str().unwrap();
    assert_eq!(
        tool_output(&requests[2], "call_mem"),
        format!("Remembered as memory {id} (repo scope).")
    );
    assert_eq!(
        memory_events(home.path(), &thread),
        vec![
            ("memory_proposed".to_owned(), Value::Null),
            ("memory_accepted".to_owned(), json!("config")),
        ]
    );
}

#[test]
fn an_extracted_proposal_refused_by_consent_is_reported_to_the_model() {
    let model = MockModel::start(json!({ "replies": [
        { "text": "Noted." },
        remember(KEPT, "user"),
        { "text": "Nothing kept." },
    ], "when_exhausted": "error" }));
    let home = memory_home_with(&model, "never", "extract = true\nextract_after_turns = 1\n");
    let cwd = tempfile::tempdir().unwrap();
    let thread = turn_then_extraction(home.path(), cwd.path());
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    let told = tool_output(&requests[2], "call_mem");
    assert!(told.starts_with("Not remembered (user scope): "), "{told}");
    let kept = stored(home.path());
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0]["state"], "rejected");
    assert_eq!(
        memory_events(home.path(), &thread),
        vec![
            ("memory_proposed".to_owned(), Value::Null),
            ("memory_rejected".to_owned(), json!("config")),
        ]
    );
}

#[test]
fn without_extract_no_turn_of_the_kernels_follows() {
    let model = MockModel::start(json!({ "replies": [{ "text": "Noted." }],
                                         "when_exhausted": "error" }));
    let home = memory_home(&model, "auto");
    let cwd = tempfile::tempdir().unwrap();
    let mut server = AppServer::start(home.path(), &[]);
    server.initialize();
    let thread = server.start_thread(json!({ "cwd": cwd.path() }));
    server.turn(&thread, SAID);
    // A second turn of the user's: had an extraction started, it would be refused or
    // come first, and the model (scripted for one request) would fail it.
    let second = server.turn(&thread, "Thanks.");
    assert_eq!(second["params"]["turn"]["status"], "failed", "{second}");
    assert!(server.finish().success());
    assert_eq!(model.requests().len(), 2);
    assert_eq!(stored(home.path()), Vec::<Value>::new());
}

#[test]
fn no_extraction_runs_while_a_goal_is_driven_one_follows_once_it_stops() {
    let model = MockModel::start(json!({ "replies": [
        { "text": "Looked around; nothing done yet." },
        { "tool_calls": [{ "name": "update_goal", "arguments": { "status": "complete" } }] },
        { "text": "Done." },
        { "text": "Nothing worth keeping." },
    ], "when_exhausted": "error" }));
    let home = memory_home_with(&model, "auto", "extract = true\nextract_after_turns = 1\n");
    let config = home.path().join("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("\n[goals]\nbackoff_ms = 10\n");
    std::fs::write(&config, text).unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let mut server = AppServer::start(home.path(), &[]);
    server.initialize();
    let thread = server.start_thread(json!({ "cwd": cwd.path() }));
    let set = server.call(
        "thread/goal/set",
        json!({ "threadId": thread, "objective": "tidy the notes" }),
    );
    assert!(set.get("error").is_none(), "{set}");
    server.until(|m| {
        method(m) == "thread/goal/updated" && m["params"]["goal"]["status"] == "complete"
    });
    // The goal's last turn ends, then the extraction runs and ends.
    server.until(|m| method(m) == "turn/completed");
    server.until(|m| method(m) == "turn/completed");
    assert!(server.finish().success());
    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    let extraction: Vec<bool> = requests
        .iter()
        .map(|r| last_developer_text(r).starts_with("<memory_extraction>"))
        .collect();
    assert_eq!(extraction, vec![false, false, false, true]);
}
