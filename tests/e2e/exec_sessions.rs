//! Sessions across processes: `rein exec` persists each run under `$REIN_HOME/sessions`,
//! `exec resume` continues one (by id or `--last`), `exec fork` branches one, Ctrl-C leaves
//! a session that resumes cleanly, `--ephemeral` leaves nothing, and `rein sessions`
//! lists and shows them. Every run talks to a real `rein mock-model` server.
#![allow(clippy::unwrap_used)]

use rein_test_support::exec as support;

use std::io::Read;
use std::path::Path;
use std::process::{Output, Stdio};

use serde_json::json;
use support::{json_lines, Home, MockModel};

fn replies(texts: &[&str]) -> serde_json::Value {
    json!({"replies": texts.iter().map(|t| json!({"text": t})).collect::<Vec<_>>()})
}

fn ok(out: Output) -> Vec<serde_json::Value> {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    json_lines(&out.stdout)
}

fn thread_id(events: &[serde_json::Value]) -> String {
    assert_eq!(events[0]["type"], "thread.started");
    events[0]["thread_id"].as_str().unwrap().to_owned()
}

fn answer(events: &[serde_json::Value]) -> String {
    events
        .iter()
        .rev()
        .find(|e| e["item"]["type"] == "agent_message")
        .map(|e| e["item"]["text"].as_str().unwrap().to_owned())
        .unwrap_or_default()
}

fn run_in(home: &Home, cwd: &Path, args: &[&str]) -> Vec<serde_json::Value> {
    ok(home.exec(args).current_dir(cwd).output().unwrap())
}

#[test]
fn resume_by_id_continues_the_conversation_the_model_saw() {
    let mock = MockModel::start(replies(&["First answer.", "Second answer."]));
    let home = Home::new(&mock, "responses");
    let work = tempfile::tempdir().unwrap();
    let first = run_in(&home, work.path(), &["--json", "First prompt."]);
    let id = thread_id(&first);
    let second = run_in(
        &home,
        work.path(),
        &["--json", "resume", &id, "Second prompt."],
    );
    assert_eq!(thread_id(&second), id, "the same session continues");
    assert_eq!(answer(&second), "Second answer.");
    let request = mock.requests()[1].to_string();
    for text in ["First prompt.", "First answer.", "Second prompt."] {
        assert!(request.contains(text), "{text} missing from {request}");
    }
}

#[test]
fn resume_last_picks_the_latest_session_of_this_directory_or_of_all() {
    let mock = MockModel::start(replies(&["a", "b", "c", "d"]));
    let home = Home::new(&mock, "responses");
    let (dir_a, dir_b, dir_c) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let in_a = thread_id(&run_in(&home, dir_a.path(), &["--json", "in a"]));
    let in_b = thread_id(&run_in(&home, dir_b.path(), &["--json", "in b"]));
    let resumed = run_in(
        &home,
        dir_a.path(),
        &["--json", "resume", "--last", "again"],
    );
    assert_eq!(thread_id(&resumed), in_a);
    // In Codex's order too: options after the subcommand.
    let any = run_in(
        &home,
        dir_c.path(),
        &["resume", "--last", "--all", "--json", "more"],
    );
    assert_eq!(thread_id(&any), in_a, "a was updated last");
    assert_ne!(in_a, in_b);

    let none = home
        .exec(&["resume", "--last", "hello"])
        .current_dir(dir_c.path())
        .output()
        .unwrap();
    assert_eq!(none.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&none.stderr).contains("no session in"));
}

#[test]
fn fork_at_a_turn_branches_without_touching_the_parent() {
    let mock = MockModel::start(replies(&["one", "two", "forked", "parent again"]));
    let home = Home::new(&mock, "responses");
    let work = tempfile::tempdir().unwrap();
    let parent = thread_id(&run_in(&home, work.path(), &["--json", "turn one"]));
    run_in(
        &home,
        work.path(),
        &["--json", "resume", &parent, "turn two"],
    );
    let fork = run_in(
        &home,
        work.path(),
        &["--json", "fork", &parent, "--at", "1", "in the fork"],
    );
    let fork_id = thread_id(&fork);
    assert_ne!(fork_id, parent);
    assert_eq!(answer(&fork), "forked");
    let request = mock.requests()[2].to_string();
    assert!(
        request.contains("turn one") && request.contains("in the fork"),
        "{request}"
    );
    assert!(
        !request.contains("turn two"),
        "the fork keeps turn 1 only: {request}"
    );
    // The parent still has both of its turns.
    run_in(&home, work.path(), &["--json", "resume", &parent, "back"]);
    let request = mock.requests()[3].to_string();
    assert!(
        request.contains("turn two") && !request.contains("in the fork"),
        "{request}"
    );
}

#[test]
fn ephemeral_runs_leave_no_session() {
    let mock = MockModel::start(replies(&["x"]));
    let home = Home::new(&mock, "responses");
    let work = tempfile::tempdir().unwrap();
    run_in(&home, work.path(), &["--json", "--ephemeral", "hello"]);
    let sessions = home.path().join("sessions");
    let files = walk(&sessions);
    assert!(files.is_empty(), "{files:?}");
    // The same run without the flag leaves exactly one rollout.
    run_in(&home, work.path(), &["--json", "hello"]);
    assert_eq!(walk(&sessions).len(), 1);
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flat_map(|e| {
            let path = e.unwrap().path();
            if path.is_dir() {
                walk(&path)
            } else if path.extension().is_some_and(|x| x == "jsonl") {
                vec![path]
            } else {
                Vec::new()
            }
        })
        .collect()
}

#[test]
fn sessions_list_and_show_print_the_persisted_conversations() {
    let mock = MockModel::start(replies(&["Listed answer."]));
    let home = Home::new(&mock, "responses");
    let work = tempfile::tempdir().unwrap();
    let id = thread_id(&run_in(
        &home,
        work.path(),
        &["--json", "Remember this prompt."],
    ));
    let list = support::rein()
        .args(["sessions", "list"])
        .env("REIN_HOME", home.path())
        .output()
        .unwrap();
    assert!(
        list.status.success(),
        "{}",
        String::from_utf8_lossy(&list.stderr)
    );
    let table = String::from_utf8(list.stdout).unwrap();
    let row = table
        .lines()
        .find(|l| l.starts_with(&id))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(row.contains("Remember this prompt."), "{row}");
    let show = support::rein()
        .args(["sessions", "show", &id])
        .env("REIN_HOME", home.path())
        .output()
        .unwrap();
    let text = String::from_utf8(show.stdout).unwrap();
    assert!(text.contains("user: Remember this prompt."), "{text}");
    assert!(text.contains("assistant: Listed answer."), "{text}");
    let bad = support::rein()
        .args(["sessions", "show", "not-an-id"])
        .env("REIN_HOME", home.path())
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(1));
}

#[test]
fn a_run_stopped_by_sigint_or_sigterm_resumes_with_its_partial_output_and_the_marker() {
    for (signal, code) in [("-INT", 130), ("-TERM", 143)] {
        let mock = MockModel::start(json!({"replies": [
            {"text": "partial answer", "deltas": 2, "fault": {"type": "hang"}},
            {"text": "Continuing after the interrupt."}
        ]}));
        let home = Home::new(&mock, "responses");
        let work = tempfile::tempdir().unwrap();
        let mut child = home
            .exec(&["Start something long."])
            .current_dir(work.path())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = child.stderr.take().unwrap();
        let mut seen = Vec::new();
        let mut buf = [0u8; 256];
        while !String::from_utf8_lossy(&seen).contains("partial") {
            let n = stderr.read(&mut buf).unwrap();
            assert!(n > 0, "{}", String::from_utf8_lossy(&seen));
            seen.extend_from_slice(&buf[..n]);
        }
        let sent = std::process::Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        stderr.read_to_end(&mut seen).unwrap();
        assert_eq!(child.wait().unwrap().code(), Some(code), "{signal}");

        let resumed = run_in(
            &home,
            work.path(),
            &["--json", "resume", "--last", "Go on."],
        );
        assert_eq!(answer(&resumed), "Continuing after the interrupt.");
        let request = mock.requests()[1].to_string();
        assert!(request.contains("Start something long."), "{request}");
        assert!(
            request.contains("partial"),
            "the partial output is kept: {request}"
        );
        assert!(
            request.contains("turn_aborted"),
            "the interruption marker: {request}"
        );
    }
}

#[test]
fn output_schema_on_resume_is_told_to_the_model_with_the_prompt() {
    let mock = MockModel::start(replies(&["plain", "{\"schema_marker_ok\":true}"]));
    let home = Home::new(&mock, "responses");
    let work = tempfile::tempdir().unwrap();
    let id = thread_id(&run_in(&home, work.path(), &["--json", "first"]));
    let schema = work.path().join("schema.json");
    std::fs::write(
        &schema,
        r#"{"type":"object","required":["schema_marker_ok"]}"#,
    )
    .unwrap();
    let out = run_in(
        &home,
        work.path(),
        &[
            "--json",
            "--output-schema",
            schema.to_str().unwrap(),
            "resume",
            &id,
            "Report.",
        ],
    );
    assert_eq!(answer(&out), "{\"schema_marker_ok\":true}");
    assert!(!mock.requests()[0].to_string().contains("schema_marker_ok"));
    let request = mock.requests()[1].to_string();
    assert!(request.contains("schema_marker_ok"), "{request}");
}

fn sessions(home: &Home, args: &[&str]) -> String {
    let out = support::rein()
        .arg("sessions")
        .args(args)
        .env("REIN_HOME", home.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_lost_index_is_rebuilt_from_the_files_and_archive_hides_a_session() {
    let mock = MockModel::start(replies(&["Indexed answer."]));
    let home = Home::new(&mock, "responses");
    let work = tempfile::tempdir().unwrap();
    let id = thread_id(&run_in(
        &home,
        work.path(),
        &["--json", "Keep me findable."],
    ));
    std::fs::remove_file(home.path().join("index.sqlite")).unwrap();
    assert!(sessions(&home, &["reindex"]).contains("indexed 1 sessions"));
    assert!(sessions(&home, &["list"])
        .lines()
        .any(|l| l.starts_with(&id)));

    sessions(&home, &["archive", &id]);
    assert!(!sessions(&home, &["list"])
        .lines()
        .any(|l| l.starts_with(&id)));
    assert!(sessions(&home, &["list", "--archived"])
        .lines()
        .any(|l| l.starts_with(&id)));
    // An archived session can still be read.
    assert!(sessions(&home, &["show", &id]).contains("Keep me findable."));
    sessions(&home, &["unarchive", &id]);
    assert!(sessions(&home, &["list"])
        .lines()
        .any(|l| l.starts_with(&id)));
}
