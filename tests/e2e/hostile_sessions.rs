//! Hostile and damaged files in `sessions/`, through `rein app-server`: a FIFO, a symlink
//! to `/dev/zero`, a symlink to another thread's rollout, another thread's `session_meta`
//! under this thread's name, a rollout another server holds. Each is refused at once with
//! -32600 naming the thread (never a hang, a crash or another thread's history), and the
//! server goes on serving. A last event that only lacks its newline survives a resume,
//! and a corrupt line is reported to the client as a `warning`.
#![allow(clippy::unwrap_used)]

use rein_test_support::app_server as support;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use support::{home_for, method, AppServer, MockModel};

/// A home with one thread that ran one turn ("hello"), shut down cleanly.
fn home_with_a_thread(model: &MockModel) -> (tempfile::TempDir, String, PathBuf) {
    let home = home_for(model);
    let mut s = AppServer::start(home.path(), &[]);
    s.initialize();
    let thread = s.start_thread(json!({ "cwd": home.path() }));
    s.request(
        "turn/start",
        json!({ "threadId": thread, "input": [{ "type": "text", "text": "hello" }] }),
    );
    s.until(|m| method(m) == "turn/completed");
    let listed = s.call("thread/list", json!({}));
    let path = PathBuf::from(listed["result"]["data"][0]["path"].as_str().unwrap());
    assert!(s.finish().success());
    (home, thread, path)
}

/// A file name for a thread id that exists nowhere else, next to `beside`.
fn name_for(beside: &Path, thread: &str) -> PathBuf {
    beside.with_file_name(format!("rollout-2026-12-01T00-00-00-{thread}.jsonl"))
}

fn resume_error(s: &mut AppServer, thread: &str) -> Value {
    let r = s.call("thread/resume", json!({ "threadId": thread }));
    r.get("error")
        .cloned()
        .unwrap_or_else(|| panic!("resumed: {r}"))
}

fn still_serving(s: &mut AppServer) {
    let listed = s.call("thread/list", json!({}));
    assert!(listed.get("result").is_some(), "{listed}");
}

#[test]
fn hostile_files_are_refused_at_once_naming_the_thread() {
    let model = MockModel::start(json!({ "replies": [], "when_exhausted": "echo" }));
    let (home, _real, real_path) = home_with_a_thread(&model);
    let fifo_id = "01a23131-0000-7000-8000-000000000001";
    let zero_id = "01a23131-0000-7000-8000-000000000002";
    let link_id = "01a23131-0000-7000-8000-000000000003";
    let pasted_id = "01a23131-0000-7000-8000-000000000004";
    let fifo = name_for(&real_path, fifo_id);
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    std::os::unix::fs::symlink("/dev/zero", name_for(&real_path, zero_id)).unwrap();
    std::os::unix::fs::symlink(&real_path, name_for(&real_path, link_id)).unwrap();
    std::fs::copy(&real_path, name_for(&real_path, pasted_id)).unwrap();

    let mut s = AppServer::start(home.path(), &[]);
    s.initialize();
    still_serving(&mut s);
    for id in [fifo_id, zero_id, link_id, pasted_id] {
        let error = resume_error(&mut s, id);
        assert_eq!(error["code"], -32600, "{id}: {error}");
        let message = error["message"].as_str().unwrap();
        assert!(message.contains(id), "{id}: {message}");
        assert!(
            !message.contains(home.path().to_str().unwrap()),
            "no absolute path: {message}"
        );
        still_serving(&mut s);
    }
    assert!(s.finish().success(), "end of input still ends the server");
}

#[test]
fn a_thread_another_server_holds_is_refused_with_the_holder_named() {
    let model = MockModel::start(json!({ "replies": [], "when_exhausted": "echo" }));
    let (home, thread, _) = home_with_a_thread(&model);
    let mut first = AppServer::start(home.path(), &[]);
    first.initialize();
    assert!(first
        .call("thread/resume", json!({ "threadId": thread }))
        .get("result")
        .is_some());
    let mut second = AppServer::start(home.path(), &[]);
    second.initialize();
    let error = resume_error(&mut second, &thread);
    assert_eq!(error["code"], -32600, "{error}");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains(&thread) && message.contains("locked by pid"),
        "{message}"
    );
    // Both see the thread in the listing (one index, shared by the processes).
    let listed = second.call("thread/list", json!({}));
    assert_eq!(listed["result"]["data"][0]["id"], thread);
}

#[test]
fn resume_keeps_a_last_event_without_its_newline_and_warns_of_corrupt_lines() {
    let model = MockModel::start(json!({ "replies": [], "when_exhausted": "echo" }));
    let (home, thread, path) = home_with_a_thread(&model);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    // A corrupt line in the middle, and the file cut just before its final newline.
    lines.insert(2, "{this is not json");
    std::fs::write(&path, lines.join("\n")).unwrap();
    let last_event = lines.last().unwrap().to_string();

    let mut s = AppServer::start(home.path(), &[]);
    s.initialize();
    let id = s.request("thread/resume", json!({ "threadId": thread }));
    let seen = s.until(|m| method(m) == "warning");
    let answer = seen.iter().find(|m| m.get("id") == Some(&id)).unwrap();
    assert!(answer.get("result").is_some(), "{answer}");
    let warning = seen.last().unwrap();
    assert_eq!(warning["params"]["threadId"], thread);
    let message = warning["params"]["message"].as_str().unwrap();
    assert!(message.contains("line 3: corrupt"), "{message}");
    assert!(!message.contains("line 1:"), "{message}");
    // The unterminated last event was kept (terminated), not cut.
    let after = std::fs::read_to_string(&path).unwrap();
    assert!(after.contains(&format!("{last_event}\n")), "{after}");
    assert!(after.ends_with('\n'));
}
