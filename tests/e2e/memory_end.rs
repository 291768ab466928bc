//! `[memory] extract` at a thread's end, through the real binary and scripted models: when a
//! thread whose turns have not been extracted from ends (`rein exec` after its turn, an
//! archive in `rein app-server`), the kernel runs one extraction turn, offered only
//! `remember`, before the thread is reported done; its proposals take `remember`'s consent
//! path and are rollout events. Never twice for the same turns, and on its own model when
//! `[memory] extract_profile` names one.
#![allow(clippy::unwrap_used)]

use pretty_assertions::assert_eq;
use rein_test_support::app_server::{method, AppServer, MockModel};
use rein_test_support::exec::{json_lines, rein_in};
use rein_test_support::memory::{
    last_developer_text, memory_events, memory_home_with, remember, repo, stored, tool_output,
};
use rein_test_support::mock_model::tool_names;
use serde_json::{json, Value};

const SAID: &str = "In this project we always run the tests with cargo nextest.";
const KEPT: &str = "Run the tests of this project with cargo nextest";

/// The user's turn, then the extraction's two requests (the `remember` call, then the
/// answer read back).
fn turn_then_extraction_replies() -> Value {
    json!({ "replies": [
        { "text": "Noted." },
        remember(KEPT, "repo"),
        { "text": "Proposed one memory." },
    ], "when_exhausted": "error" })
}

/// `rein exec --json` in `cwd`: its events; the run must succeed.
fn exec_json(home: &std::path::Path, cwd: &std::path::Path) -> Vec<Value> {
    let out = rein_in(home, &["exec", "--json", "-C", cwd.to_str().unwrap(), SAID])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    json_lines(&out.stdout)
}

fn thread_of(events: &[Value]) -> String {
    events[0]["thread_id"].as_str().unwrap().to_owned()
}

/// Which requests were extractions.
fn extractions(requests: &[Value]) -> Vec<bool> {
    requests
        .iter()
        .map(|r| last_developer_text(r).starts_with("<memory_extraction>"))
        .collect()
}

fn event_types(events: &[Value]) -> Vec<&str> {
    events.iter().filter_map(|e| e["type"].as_str()).collect()
}

#[test]
fn exec_extracts_at_its_threads_end_before_it_reports_done() {
    let model = MockModel::start(turn_then_extraction_replies());
    let home = memory_home_with(&model, "auto", "extract = true\n");
    let cwd = repo("git@example.com:a.git");
    let events = exec_json(home.path(), cwd.path());

    // The extraction is a turn of its own after the user's, printed like any other (its
    // `remember` call has no item in Codex's exec stream; its answer is the message).
    assert_eq!(
        event_types(&events),
        vec![
            "thread.started",
            "turn.started",
            "item.completed",
            "turn.completed",
            "turn.started",
            "item.completed",
            "turn.completed",
        ],
        "{events:#?}"
    );
    let requests = model.requests();
    assert_eq!(extractions(&requests), vec![false, true, true]);
    assert!(tool_names(&requests[0]).len() > 1);
    assert_eq!(tool_names(&requests[1]), vec!["remember".to_owned()]);
    // The process exited only after the memory and its events were durable.
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
        memory_events(home.path(), &thread_of(&events)),
        vec![
            ("memory_proposed".to_owned(), Value::Null),
            ("memory_accepted".to_owned(), json!("config")),
        ]
    );
}

#[test]
fn exec_refuses_an_asked_proposal_at_the_end_and_the_model_is_told() {
    let model = MockModel::start(turn_then_extraction_replies());
    let home = memory_home_with(&model, "ask", "extract = true\n");
    let cwd = repo("git@example.com:a.git");
    let events = exec_json(home.path(), cwd.path());
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    let told = tool_output(&requests[2], "call_mem");
    assert!(told.starts_with("Not remembered (repo scope): "), "{told}");
    let kept = stored(home.path());
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0]["state"], "rejected");
    assert_eq!(
        memory_events(home.path(), &thread_of(&events)),
        vec![
            ("memory_proposed".to_owned(), Value::Null),
            ("memory_rejected".to_owned(), json!("user")),
        ]
    );
}

#[test]
fn turns_an_extraction_covered_get_no_second_one_at_the_end() {
    // After every turn: the user's turn is extracted from at once, and the thread's end,
    // which waits for that extraction, starts no other (a fourth request would fail).
    let model = MockModel::start(turn_then_extraction_replies());
    let home = memory_home_with(&model, "auto", "extract = true\nextract_after_turns = 1\n");
    let cwd = repo("git@example.com:a.git");
    exec_json(home.path(), cwd.path());
    assert_eq!(extractions(&model.requests()), vec![false, true, true]);
    assert_eq!(stored(home.path()).len(), 1);

    // A thread that only reads (no turn since it was loaded) extracts nothing at its end.
    let idle = MockModel::start(json!({ "replies": [], "when_exhausted": "error" }));
    let home = memory_home_with(&idle, "auto", "extract = true\n");
    let mut server = AppServer::start(home.path(), &[]);
    server.initialize();
    let thread = server.start_thread(json!({ "cwd": cwd.path() }));
    let archived = server.call("thread/archive", json!({ "threadId": thread }));
    assert_eq!(archived["result"], json!({}), "{archived}");
    assert!(server.finish().success());
    assert_eq!(idle.requests().len(), 0);
}

#[test]
fn an_archived_thread_extracts_before_the_archive_is_answered() {
    let model = MockModel::start(turn_then_extraction_replies());
    let home = memory_home_with(&model, "auto", "extract = true\n");
    let cwd = repo("git@example.com:a.git");
    let mut server = AppServer::start(home.path(), &[]);
    server.initialize();
    let thread = server.start_thread(json!({ "cwd": cwd.path(), "approvalPolicy": "never" }));
    server.turn(&thread, SAID);
    let id = server.request("thread/archive", json!({ "threadId": thread }));
    let before = server.until(|m| m["id"] == id);
    assert!(
        before.iter().any(|m| method(m) == "turn/started"),
        "the extraction ran before the answer: {before:#?}"
    );
    assert_eq!(before.last().unwrap()["result"], json!({}));
    // Answered: the memory is kept already, while the server still runs.
    let kept = stored(home.path());
    assert_eq!(
        kept.iter()
            .map(|m| (&m["content"], &m["state"]))
            .collect::<Vec<_>>(),
        vec![(&json!(KEPT), &json!("accepted"))]
    );
    assert!(server.finish().success());
    assert_eq!(extractions(&model.requests()), vec![false, true, true]);
}

#[test]
fn the_extraction_asks_the_model_of_extract_profile_and_the_thread_keeps_its_own() {
    let main = MockModel::start(json!({ "replies": [{ "text": "Noted." }],
                                        "when_exhausted": "error" }));
    let cheap = MockModel::start(json!({ "replies": [
        remember(KEPT, "repo"),
        { "text": "Proposed one memory." },
    ], "when_exhausted": "error" }));
    let second = format!(
        "extract = true\nextract_profile = \"cheap\"\n\n[profiles.cheap]\nmodel = \"small\"\n\
         model_provider = \"cheap\"\n\n[model_providers.cheap]\nbase_url = \"{}\"\n\
         wire_api = \"responses\"\nenv_key = \"MOCK_API_KEY\"\n",
        cheap.base_url
    );
    let home = memory_home_with(&main, "auto", &second);
    let cwd = repo("git@example.com:a.git");
    let events = exec_json(home.path(), cwd.path());

    let thread_requests = main.requests();
    assert_eq!(extractions(&thread_requests), vec![false]);
    assert_eq!(thread_requests[0]["model"], "mock");
    let extraction = cheap.requests();
    assert_eq!(extractions(&extraction), vec![true, true]);
    assert_eq!(
        extraction
            .iter()
            .map(|r| r["model"].clone())
            .collect::<Vec<_>>(),
        vec![json!("small"), json!("small")]
    );
    assert_eq!(tool_names(&extraction[0]), vec!["remember".to_owned()]);
    assert!(
        extraction[0].to_string().contains(SAID),
        "the conversation is in the extraction's request"
    );
    assert_eq!(stored(home.path())[0]["state"], "accepted");
    // The rollout says which model each turn asked.
    let shown = json_lines(
        &rein_test_support::exec::rein_ok(
            home.path(),
            &["sessions", "show", &thread_of(&events), "--json"],
        )
        .stdout,
    );
    let models: Vec<&Value> = shown
        .iter()
        .filter(|e| e["msg"]["type"] == "turn_started")
        .map(|e| &e["msg"]["settings"]["model"])
        .collect();
    assert_eq!(models, vec![&json!("mock"), &json!("small")]);
}

#[test]
fn an_archive_answers_the_ends_consent_questions_no_and_the_model_is_told() {
    // The connection waits for `thread/archive` and cannot answer meanwhile: asked, the
    // proposal would hold the archive for the extraction's whole deadline.
    let model = MockModel::start(turn_then_extraction_replies());
    let home = memory_home_with(&model, "ask", "extract = true\n");
    let cwd = repo("git@example.com:a.git");
    let mut server = AppServer::start(home.path(), &[]);
    server.initialize();
    let thread = server.start_thread(json!({ "cwd": cwd.path(), "approvalPolicy": "never" }));
    server.turn(&thread, SAID);
    let started = std::time::Instant::now();
    let id = server.request("thread/archive", json!({ "threadId": thread }));
    let before = server.until(|m| m["id"] == id);
    assert_eq!(before.last().unwrap()["result"], json!({}));
    assert!(
        !before
            .iter()
            .any(|m| method(m) == "rein/memory/requestApproval"),
        "{before:#?}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "the archive did not wait out the deadline"
    );
    let kept = stored(home.path());
    assert_eq!(kept[0]["state"], "rejected");
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    let told = tool_output(&requests[2], "call_mem");
    assert!(told.starts_with("Not remembered (repo scope): "), "{told}");
    assert!(server.finish().success());
}

#[test]
fn ctrl_c_during_execs_end_extraction_stops_it_and_exec_exits() {
    use std::io::BufRead;
    let model = MockModel::start(json!({ "replies": [
        { "text": "Noted." },
        { "text": "Looking back", "deltas": 2, "fault": { "type": "hang" } },
    ]}));
    let home = memory_home_with(&model, "auto", "extract = true\n");
    let cwd = repo("git@example.com:a.git");
    let mut child = rein_in(
        home.path(),
        &["exec", "--json", "-C", cwd.path().to_str().unwrap(), SAID],
    )
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    let mut started = 0;
    for line in lines.by_ref() {
        let event: Value = serde_json::from_str(&line.unwrap()).unwrap();
        started += usize::from(event["type"] == "turn.started");
        seen.push(event);
        if started == 2 {
            break;
        }
    }
    assert_eq!(started, 2, "the extraction started: {seen:#?}");
    let kill = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    seen.extend(lines.map(|l| serde_json::from_str::<Value>(&l.unwrap()).unwrap()));
    let status = child.wait().unwrap();
    // The user's turn completed and its answer stands; the extraction ends interrupted
    // (with its partial message kept, when the signal came after the model's first words).
    assert_eq!(status.code(), Some(0));
    seen.retain(|e| {
        let partial = e["item"]["text"]
            .as_str()
            .is_some_and(|t| !t.is_empty() && "Looking back".starts_with(t));
        !(e["type"] == "item.completed" && partial)
    });
    assert_eq!(
        event_types(&seen),
        vec![
            "thread.started",
            "turn.started",
            "item.completed",
            "turn.completed",
            "turn.started",
            "turn.failed",
        ],
        "{seen:#?}"
    );
    assert_eq!(stored(home.path()), Vec::<Value>::new());
}
