//! A goal's own auto-resume (`thread/goal/set {autoResume}`, rein's addition to Codex's
//! params), recorded on the goal's `goal_updated` event, overrides `[goals] auto_resume`
//! after a kill -9 and a restart, both ways (docs/goals.md).
#![allow(clippy::unwrap_used)]

use pretty_assertions::assert_eq;
use rein_test_support::app_server::{home_for, method, AppServer, MockModel};
use rein_test_support::exec::{json_lines, rein_ok};
use serde_json::{json, Value};

/// A goal set with `auto_resume` whose first turn never ends, on an app-server then
/// killed once that turn's request reached `mock`.
fn goal_killed_mid_turn(
    mock: &MockModel,
    home: &std::path::Path,
    cwd: &std::path::Path,
    auto_resume: bool,
) -> String {
    let mut server = AppServer::start(home, &[]);
    server.initialize();
    let thread = server.start_thread(json!({ "cwd": cwd }));
    let set = server.call(
        "thread/goal/set",
        json!({ "threadId": thread, "objective": "keep going", "autoResume": auto_resume }),
    );
    assert!(set.get("error").is_none(), "{set}");
    server.until(|m| method(m) == "turn/started");
    while mock.logged_requests() < 1 {
        std::thread::yield_now();
    }
    server.kill(); // SIGKILL
    thread
}

/// `auto_resume` of every `goal_updated` of the thread's rollout, in order.
fn recorded_auto_resume(home: &std::path::Path, thread: &str) -> Vec<(String, Value)> {
    json_lines(&rein_ok(home, &["sessions", "show", thread, "--json"]).stdout)
        .iter()
        .filter(|e| e["msg"]["type"] == "goal_updated")
        .map(|e| {
            let goal = &e["msg"]["goal"];
            (
                goal["status"].as_str().unwrap().to_owned(),
                goal.get("auto_resume").cloned().unwrap_or(Value::Null),
            )
        })
        .collect()
}

fn home_with_goals(mock: &MockModel, goals: &str) -> tempfile::TempDir {
    let home = home_for(mock);
    let config = home.path().join("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(goals);
    std::fs::write(&config, text).unwrap();
    home
}

#[test]
fn a_goal_set_to_auto_resume_continues_after_a_kill_9_though_the_setting_says_no() {
    let mock = MockModel::start(json!({"replies": [
        {"text": "never finished", "delay_ms": 60_000},
        {"tool_calls": [{"name": "update_goal", "arguments": {"status": "complete"}}]},
        {"text": "done after the restart"},
    ], "when_exhausted": "error"}));
    // The default, said out loud: a goal comes back paused.
    let home = home_with_goals(&mock, "\n[goals]\nauto_resume = false\n");
    let cwd = tempfile::tempdir().unwrap();
    let thread = goal_killed_mid_turn(&mock, home.path(), cwd.path(), true);

    let mut server = AppServer::start(home.path(), &[]);
    server.initialize();
    let resumed = server.call("thread/resume", json!({ "threadId": thread }));
    assert!(resumed.get("error").is_none(), "{resumed}");
    let seen = server.until(|m| {
        method(m) == "thread/goal/updated" && m["params"]["goal"]["status"] == "complete"
    });
    assert!(
        seen.iter().any(|m| method(m) == "turn/started"),
        "{seen:#?}"
    );
    server.until(|m| method(m) == "turn/completed");
    assert!(server.finish().success());
    assert_eq!(mock.requests().len(), 3);
    let t = json!(true);
    assert_eq!(
        recorded_auto_resume(home.path(), &thread),
        vec![
            ("active".to_owned(), t.clone()),
            // Continued by the kernel on load, the goal's setting kept.
            ("active".to_owned(), t.clone()),
            ("complete".to_owned(), t),
        ]
    );
}

#[test]
fn a_goal_set_not_to_auto_resume_comes_back_paused_though_the_setting_says_yes() {
    let mock = MockModel::start(json!({"replies": [
        {"text": "never finished", "delay_ms": 60_000},
    ], "when_exhausted": "error"}));
    let home = home_with_goals(&mock, "\n[goals]\nauto_resume = true\n");
    let cwd = tempfile::tempdir().unwrap();
    let thread = goal_killed_mid_turn(&mock, home.path(), cwd.path(), false);

    let mut server = AppServer::start(home.path(), &[]);
    server.initialize();
    let resumed = server.call("thread/resume", json!({ "threadId": thread }));
    assert!(resumed.get("error").is_none(), "{resumed}");
    let got = server.call("thread/goal/get", json!({ "threadId": thread }));
    assert_eq!(got["result"]["goal"]["status"], "paused", "{got}");
    assert!(server.finish().success());
    assert!(
        !server_started_a_turn(&mock),
        "no goal turn after the restart"
    );
    let f = json!(false);
    assert_eq!(
        recorded_auto_resume(home.path(), &thread),
        vec![("active".to_owned(), f.clone()), ("paused".to_owned(), f),]
    );
}

/// Whether the model was asked more than the killed turn's one request.
fn server_started_a_turn(mock: &MockModel) -> bool {
    mock.requests().len() > 1
}

/// `rein exec --goal … --goal-auto-resume` records the goal's own auto-resume on its
/// first `goal_updated`: killed mid-goal, the thread resumed by an app-server continues
/// the goal at once though `[goals] auto_resume` says no.
#[test]
fn exec_goal_auto_resume_continues_after_a_kill_9() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;

    let mock = MockModel::start(json!({"replies": [
        {"text": "never finished", "delay_ms": 60_000},
        {"tool_calls": [{"name": "update_goal", "arguments": {"status": "complete"}}]},
        {"text": "done after the restart"},
    ], "when_exhausted": "error"}));
    let home = home_with_goals(&mock, "\n[goals]\nauto_resume = false\n");
    let cwd = tempfile::tempdir().unwrap();
    let mut exec = rein_test_support::exec::rein_in(home.path(), &["exec", "--json", "-C"])
        .arg(cwd.path())
        .args(["--goal", "keep going", "--goal-auto-resume"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(exec.stdout.take().unwrap()).lines();
    let thread = loop {
        let line: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        if line["type"] == "thread.started" {
            break line["thread_id"].as_str().unwrap().to_owned();
        }
    };
    while mock.logged_requests() < 1 {
        std::thread::yield_now();
    }
    exec.kill().unwrap(); // SIGKILL
    exec.wait().unwrap();

    let mut server = AppServer::start(home.path(), &[]);
    server.initialize();
    let resumed = server.call("thread/resume", json!({ "threadId": thread }));
    assert!(resumed.get("error").is_none(), "{resumed}");
    server.until(|m| {
        method(m) == "thread/goal/updated" && m["params"]["goal"]["status"] == "complete"
    });
    server.until(|m| method(m) == "turn/completed");
    assert!(server.finish().success());
    assert_eq!(mock.requests().len(), 3);
    let t = json!(true);
    assert_eq!(
        recorded_auto_resume(home.path(), &thread),
        vec![
            ("active".to_owned(), t.clone()),
            ("active".to_owned(), t.clone()),
            ("complete".to_owned(), t),
        ]
    );
}
