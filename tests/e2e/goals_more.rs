//! Thread goals at their limits, through the real binary against `rein mock-model`: the
//! provider's usage limit (retried, then exit 5), the wrap-up turn after a budget, the
//! `[goals] auto_resume` setting after a kill -9, and the `origin` of each change
//! (docs/goals.md).
#![allow(clippy::unwrap_used)]

use pretty_assertions::assert_eq;
use rein_test_support::app_server::{method, AppServer};
use rein_test_support::exec::{json_lines, rein_ok, Home, MockModel};
use serde_json::{json, Value};

/// A home whose provider never retries a request itself, so a 429 reaches the goal.
fn home_without_retries(mock: &MockModel, goals: &str) -> Home {
    let home = Home::new(mock, "responses");
    let config = home.path().join("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("request_max_retries = 0\nstream_max_retries = 0\n\n[goals]\n");
    text.push_str(goals);
    std::fs::write(&config, text).unwrap();
    home
}

fn rate_limited() -> Value {
    json!({"fault": {"type": "rate_limited", "retry_after_ms": 10}})
}

fn run_goal(home: &Home, args: &[&str]) -> (i32, Vec<Value>) {
    let work = tempfile::tempdir().unwrap();
    let out = home
        .exec(&["--json", "-s", "workspace-write", "-C"])
        .arg(work.path())
        .args(args)
        .output()
        .unwrap();
    (out.status.code().unwrap(), json_lines(&out.stdout))
}

/// The GOAL column of the thread's row in `rein sessions list`.
fn listed_goal(home: &Home, thread: &str) -> String {
    let out = rein_ok(home.path(), &["sessions", "list"]);
    let table = String::from_utf8(out.stdout).unwrap();
    let row = table
        .lines()
        .find(|l| l.starts_with(thread))
        .unwrap_or_else(|| panic!("{table}"));
    row.split_whitespace().nth(4).unwrap().to_owned()
}

fn goals(events: &[Value]) -> Vec<&Value> {
    events
        .iter()
        .filter(|e| e["type"] == "goal.updated")
        .map(|e| &e["goal"])
        .collect()
}

/// (status, origin, whether a retry is scheduled) of each goal change.
fn changes(events: &[Value]) -> Vec<(String, String, bool)> {
    goals(events)
        .iter()
        .map(|g| {
            (
                g["status"].as_str().unwrap().to_owned(),
                g["origin"].as_str().unwrap().to_owned(),
                g.get("retry_at_ms").is_some(),
            )
        })
        .collect()
}

fn change(status: &str, origin: &str, retry: bool) -> (String, String, bool) {
    (status.to_owned(), origin.to_owned(), retry)
}

#[test]
fn a_usage_limit_is_retried_later_and_the_goal_then_completes() {
    let mock = MockModel::start(json!({"replies": [
        rate_limited(),
        {"tool_calls": [{"name": "update_goal", "arguments": {"status": "complete"}}]},
        {"text": "done"},
    ], "when_exhausted": "error"}));
    let home = home_without_retries(&mock, "usage_limit_retry_ms = 200\n");
    let (code, events) = run_goal(&home, &["--goal", "finish"]);
    assert_eq!(code, 0, "{events:#?}");
    assert_eq!(
        changes(&events),
        [
            change("active", "user", false),
            change("usage_limited", "automatic", true),
            change("active", "automatic", false),
            change("complete", "automatic", false),
        ]
    );
    let limited = goals(&events)[1];
    let reason = limited["reason"].as_str().unwrap();
    assert!(reason.contains("retry 1 of 3 in 200 ms"), "{reason}");
    // The retry waited: the next goal turn started no sooner than it said.
    let retry_at = limited["retry_at_ms"].as_u64().unwrap();
    let resumed = goals(&events)[2]["updated_ms"].as_u64().unwrap();
    assert!(resumed >= retry_at, "{resumed} < {retry_at}");
    assert_eq!(mock.requests().len(), 3);
    // The refused turn is no turn without progress: only the turn that got through has
    // a checkpoint.
    let checkpoints = events
        .iter()
        .filter(|e| e["type"] == "goal.checkpoint")
        .count();
    assert_eq!(checkpoints, 1);
}

#[test]
fn a_usage_limit_past_its_retries_exits_5() {
    let mock = MockModel::start(json!({"replies": [rate_limited()]}));
    let home = home_without_retries(
        &mock,
        "usage_limit_retries = 1\nusage_limit_retry_ms = 50\n",
    );
    let (code, events) = run_goal(&home, &["--goal", "finish"]);
    assert_eq!(code, 5, "{events:#?}");
    assert_eq!(
        changes(&events),
        [
            change("active", "user", false),
            change("usage_limited", "automatic", true),
            change("active", "automatic", false),
            change("usage_limited", "automatic", false),
        ]
    );
    let last = goals(&events)[3]["reason"].as_str().unwrap().to_owned();
    assert!(
        last.ends_with("1 retries used, set the goal active to try again"),
        "{last}"
    );
    assert_eq!(mock.requests().len(), 2);
    // The listing index carries the goal's status, also when rebuilt from the rollouts.
    let thread = events[0]["thread_id"].as_str().unwrap();
    assert_eq!(listed_goal(&home, thread), "usage_limited");
    std::fs::remove_file(home.path().join("index.sqlite")).unwrap();
    rein_ok(home.path(), &["sessions", "reindex"]);
    assert_eq!(listed_goal(&home, thread), "usage_limited");
}

#[test]
fn a_spent_budget_ends_with_a_wrap_up_answer_offered_no_tools() {
    let usage = json!({"input_tokens": 500, "cached_input_tokens": 0, "output_tokens": 100,
                       "reasoning_output_tokens": 0, "total_tokens": 600});
    let step = json!({"tool_calls": [{"name": "shell", "arguments": {"command": "true"}}],
                      "usage": usage});
    let mock = MockModel::start(json!({"replies": [
        step, step, {"text": "Ran two commands; the rest is left."},
    ], "when_exhausted": "error"}));
    let home = Home::new(&mock, "responses");
    let (code, events) = run_goal(&home, &["--goal", "spend", "--goal-tokens", "1000"]);
    assert_eq!(code, 4, "{events:#?}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 3, "two steps, then the wrap-up");
    let wrap_up = &requests[2];
    assert!(
        wrap_up["tools"].as_array().is_none_or(Vec::is_empty),
        "the wrap-up is offered no tools: {}",
        wrap_up["tools"]
    );
    let told = wrap_up["input"].to_string();
    assert!(
        told.contains(
            "The goal of this thread has stopped (token budget spent: 1200 of 1000 tokens)"
        ),
        "{told}"
    );
    // The user sees the answer, after the goal's end, and the goal's usage is the two
    // steps' (the wrap-up is no goal work).
    let last = goals(&events).last().copied().unwrap().clone();
    assert_eq!(
        (&last["status"], &last["usage"]["tokens"]),
        (&json!("budget_limited"), &json!(1200))
    );
    let answer = events
        .iter()
        .rev()
        .find(|e| e["type"] == "item.completed" && e["item"]["type"] == "agent_message");
    assert_eq!(
        answer.unwrap()["item"]["text"],
        "Ran two commands; the rest is left."
    );
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
}

/// A goal whose first turn never ends, on an app-server that is then killed once the
/// turn's request reached `mock` (so the restarted goal turn gets the next reply).
fn goal_killed_mid_turn(mock: &MockModel, home: &std::path::Path, cwd: &std::path::Path) -> String {
    let mut server = AppServer::start(home, &[]);
    server.initialize();
    let thread = server.start_thread(json!({ "cwd": cwd }));
    let set = server.call(
        "thread/goal/set",
        json!({ "threadId": thread, "objective": "keep going" }),
    );
    assert!(set.get("error").is_none(), "{set}");
    server.until(|m| method(m) == "turn/started");
    while mock.logged_requests() < 1 {
        std::thread::yield_now();
    }
    server.kill(); // SIGKILL
    thread
}

#[test]
fn auto_resume_continues_a_goal_after_a_kill_9() {
    let mock = MockModel::start(json!({"replies": [
        {"text": "never finished", "delay_ms": 60_000},
        {"tool_calls": [{"name": "update_goal", "arguments": {"status": "complete"}}]},
        {"text": "done after the restart"},
    ], "when_exhausted": "error"}));
    let home = rein_test_support::app_server::home_for(&mock);
    let config = home.path().join("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("\n[goals]\nauto_resume = true\n");
    std::fs::write(&config, text).unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let thread = goal_killed_mid_turn(&mock, home.path(), cwd.path());

    let mut server = AppServer::start(home.path(), &[]);
    server.initialize();
    let resumed = server.call("thread/resume", json!({ "threadId": thread }));
    assert!(resumed.get("error").is_none(), "{resumed}");
    // Nobody asked: the kernel continues the goal, and it completes.
    let seen = server.until(|m| {
        method(m) == "thread/goal/updated" && m["params"]["goal"]["status"] == "complete"
    });
    assert!(
        seen.iter().any(|m| method(m) == "turn/started"),
        "{seen:#?}"
    );
    // The goal turn answers after its `update_goal` call, then ends.
    server.until(|m| method(m) == "turn/completed");
    let got = server.call("thread/goal/get", json!({ "threadId": thread }));
    assert_eq!(got["result"]["goal"]["status"], "complete");
    assert_eq!(mock.requests().len(), 3);
}

#[test]
fn a_goal_the_model_pauses_exits_6() {
    let mock = MockModel::start(json!({"replies": [
        {"tool_calls": [{"name": "update_goal",
                         "arguments": {"status": "paused", "note": "the user asked me to stop"}}]},
        {"text": "paused"},
    ], "when_exhausted": "error"}));
    let home = Home::new(&mock, "responses");
    let (code, events) = run_goal(&home, &["--goal", "wait for me"]);
    assert_eq!(code, 6, "{events:#?}");
    let last = goals(&events).last().copied().unwrap().clone();
    assert_eq!(
        (&last["status"], &last["origin"], &last["reason"]),
        (
            &json!("paused"),
            &json!("automatic"),
            &json!("the user asked me to stop")
        )
    );
    assert_eq!(mock.requests().len(), 2);
}

#[test]
fn sigterm_pauses_the_goal_and_exits_143() {
    use std::io::{BufRead, BufReader};
    let mock = MockModel::start(json!({"replies": [
        {"text": "slow answer", "deltas": 100, "delay_ms": 100},
    ]}));
    let home = Home::new(&mock, "responses");
    let work = tempfile::tempdir().unwrap();
    let mut child = home
        .exec(&["--json", "-C"])
        .arg(work.path())
        .args(["--goal", "take long"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    while !seen
        .last()
        .is_some_and(|l: &Value| l["type"] == "goal.turn.started")
    {
        seen.push(serde_json::from_str::<Value>(&lines.next().unwrap().unwrap()).unwrap());
    }
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    seen.extend(lines.map(|l| serde_json::from_str::<Value>(&l.unwrap()).unwrap()));
    assert_eq!(child.wait().unwrap().code(), Some(143));
    let last = goals(&seen).last().copied().unwrap().clone();
    assert_eq!(last["status"], "paused", "{seen:#?}");
}

/// The rollout's events, read back through `rein sessions show --json`.
fn rollout(home: &Home, thread: &str) -> Vec<Value> {
    json_lines(&rein_ok(home.path(), &["sessions", "show", thread, "--json"]).stdout)
}

#[test]
fn a_turn_that_waits_is_no_idle_turn_and_the_next_starts_at_once() {
    let mock = MockModel::start(json!({"replies": [
        {"tool_calls": [{"name": "wait", "arguments": {"seconds": 0.3}}]},
        {"text": "CI is still running"},
        {"tool_calls": [{"name": "update_goal", "arguments": {"status": "complete"}}]},
        {"text": "CI passed"},
    ], "when_exhausted": "error"}));
    let home = Home::new(&mock, "responses");
    let (code, events) = run_goal(&home, &["--goal", "wait for CI"]);
    assert_eq!(code, 0, "{events:#?}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 4);
    assert!(requests[1].to_string().contains("waited 300 ms"));
    let checkpoint = &events
        .iter()
        .find(|e| e["type"] == "goal.checkpoint")
        .unwrap()["checkpoint"];
    assert_eq!(
        (&checkpoint["progress"], &checkpoint["waited"]),
        (&json!(false), &json!(true))
    );
    assert_eq!(goals(&events).last().unwrap()["idle_turns"], 0);
    let log = rollout(&home, events[0]["thread_id"].as_str().unwrap());
    let at = |kind: &str| -> Vec<u64> {
        log.iter()
            .filter(|e| e["msg"]["type"] == kind)
            .map(|e| e["timestamp_ms"].as_u64().unwrap())
            .collect()
    };
    let (starts, ends) = (at("turn_started"), at("turn_completed"));
    assert!(ends[0] - starts[0] >= 300, "the wait waited");
    // An idle turn would be followed by the 2 s back-off.
    assert!(starts[1] - ends[0] < 1000, "{starts:?} {ends:?}");
}
