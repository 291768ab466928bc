//! Thread goals through the real binary: `rein exec --goal` against `rein mock-model`,
//! verifiers that are run (not believed), no spinning, each budget, a kill -9 mid-goal,
//! and the exit codes (docs/goals.md).
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use pretty_assertions::assert_eq;
use rein_test_support::exec::{json_lines, rein_in, Home, MockModel};
use serde_json::{json, Value};

fn patch(file: &str) -> Value {
    json!({"tool_calls": [{"name": "apply_patch", "arguments": {
        "input": format!("*** Begin Patch\n*** Add File: {file}\n+ok\n*** End Patch\n")}}]})
}

fn update(status: &str) -> Value {
    json!({"tool_calls": [{"name": "update_goal", "arguments": {"status": status}}]})
}

fn text(t: &str) -> Value {
    json!({"text": t})
}

/// `rein exec --json --goal ARGS` in a fresh work directory; (exit code, JSON lines).
fn run_goal(home: &Home, work: &std::path::Path, args: &[&str]) -> (i32, Vec<Value>) {
    let mut cmd = home.exec(&["--json", "-s", "workspace-write", "-C"]);
    cmd.arg(work).args(args);
    let out = cmd.output().unwrap();
    let code = out.status.code().unwrap();
    (code, json_lines(&out.stdout))
}

fn of_type<'a>(events: &'a [Value], t: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == t).collect()
}

fn last_goal(events: &[Value]) -> Value {
    of_type(events, "goal.updated").last().unwrap()["goal"].clone()
}

/// The developer messages of a request body (the Responses wire).
fn developer_texts(request: &Value) -> String {
    request["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["role"] == "developer")
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_verifier_that_fails_twice_then_passes_completes_after_exactly_that_turn() {
    let mock = MockModel::start(json!({"replies": [
        update("complete"), text("first try"),
        patch("wrong.txt"), update("complete"), text("second try"),
        patch("done.txt"), update("complete"), text("done"),
    ], "when_exhausted": "error"}));
    let home = Home::new(&mock, "responses");
    let work = tempfile::tempdir().unwrap();
    let (code, events) = run_goal(
        &home,
        work.path(),
        &["--goal", "create done.txt", "--verify", "test -f done.txt"],
    );
    assert_eq!(code, 0, "{events:#?}");
    assert_eq!(of_type(&events, "goal.turn.started").len(), 3);
    assert_eq!(
        mock.requests().len(),
        8,
        "no request after the verified turn"
    );
    let checkpoints: Vec<Vec<bool>> = of_type(&events, "goal.checkpoint")
        .iter()
        .map(|c| {
            c["checkpoint"]["verifier_outcomes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| o["passed"].as_bool().unwrap())
                .collect()
        })
        .collect();
    assert_eq!(checkpoints, [vec![false], vec![false], vec![true]]);
    let goal = last_goal(&events);
    assert_eq!(goal["status"], "complete");
    assert_eq!(goal["usage"]["turns"], 3);
    // Complete only once, at the end.
    let statuses: Vec<&Value> = of_type(&events, "goal.updated")
        .iter()
        .map(|g| &g["goal"]["status"])
        .collect();
    assert_eq!(statuses, [&json!("active"), &json!("complete")]);
}

#[test]
fn a_premature_complete_is_refused_with_the_failing_output_in_the_next_input() {
    let mock = MockModel::start(json!({"replies": [
        update("complete"), text("I am done"),
        update("blocked"), text("giving up"),
    ], "when_exhausted": "error"}));
    let home = Home::new(&mock, "responses");
    let work = tempfile::tempdir().unwrap();
    let (code, events) = run_goal(
        &home,
        work.path(),
        &[
            "--goal",
            "pass the check",
            "--verify",
            "echo checks-say-not-ready; exit 3",
        ],
    );
    assert_eq!(code, 3, "blocked: {events:#?}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 4);
    // The model read the refusal at once, in the tool's output...
    assert!(requests[1].to_string().contains("checks-say-not-ready"));
    // ...and the next goal turn starts with the failing check's output.
    let next_input = developer_texts(&requests[2]);
    assert!(
        next_input.contains("acceptance checks failed"),
        "{next_input}"
    );
    assert!(next_input.contains("checks-say-not-ready"), "{next_input}");
    assert!(next_input.contains("exit 3"), "{next_input}");
    assert_eq!(last_goal(&events)["status"], "blocked");
    assert!(!of_type(&events, "goal.updated")
        .iter()
        .any(|g| g["goal"]["status"] == "complete"));
}

/// The rollout's events, read back through `rein sessions show --json`.
fn rollout(home: &Home, thread: &str) -> Vec<Value> {
    let out = rein_in(home.path(), &["sessions", "show", thread, "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    json_lines(&out.stdout)
}

#[test]
fn no_progress_blocks_after_three_turns_with_growing_gaps() {
    let mock = MockModel::start(json!({"replies": [text("Still thinking.")]}));
    let home = Home::new(&mock, "responses");
    let work = tempfile::tempdir().unwrap();
    let (code, events) = run_goal(&home, work.path(), &["--goal", "think hard"]);
    assert_eq!(code, 3, "{events:#?}");
    let goal = last_goal(&events);
    assert_eq!(goal["status"], "blocked");
    assert_eq!(goal["usage"]["turns"], 3);
    let reason = goal["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("3 goal turns in a row made no progress"),
        "{reason}"
    );
    assert_eq!(reason.matches("Still thinking.").count(), 3, "{reason}");
    let thread = events[0]["thread_id"].as_str().unwrap();
    let log = rollout(&home, thread);
    let at = |kind: &str| -> Vec<u64> {
        log.iter()
            .filter(|e| e["msg"]["type"] == kind)
            .map(|e| e["timestamp_ms"].as_u64().unwrap())
            .collect()
    };
    let (starts, ends) = (at("turn_started"), at("turn_completed"));
    assert_eq!((starts.len(), ends.len()), (3, 3));
    let gaps: Vec<u64> = (1..3).map(|n| starts[n] - ends[n - 1]).collect();
    assert!(
        gaps[0] >= 1000,
        "no turn within 1 s of an idle one: {gaps:?}"
    );
    assert!(gaps[1] > gaps[0], "the pause grows: {gaps:?}");
}

#[test]
fn a_token_budget_ends_the_goal_at_a_step_boundary() {
    let usage = json!({"input_tokens": 500, "cached_input_tokens": 0, "output_tokens": 100,
                       "reasoning_output_tokens": 0, "total_tokens": 600});
    let step = json!({"tool_calls": [{"name": "shell", "arguments": {"command": "true"}}],
                      "usage": usage});
    let mock = MockModel::start(json!({"replies": [step, step, text("wrapped up")]}));
    let home = Home::new(&mock, "responses");
    let work = tempfile::tempdir().unwrap();
    let (code, events) = run_goal(
        &home,
        work.path(),
        &["--goal", "spend", "--goal-tokens", "1000"],
    );
    assert_eq!(code, 4, "{events:#?}");
    assert_eq!(
        mock.requests().len(),
        3,
        "stopped at the step that crossed it; then the wrap-up's one request"
    );
    let goal = last_goal(&events);
    assert_eq!(goal["status"], "budget_limited");
    assert_eq!(goal["usage"]["tokens"], 1200);
    assert_eq!(goal["reason"], "token budget spent: 1200 of 1000 tokens");
}

#[test]
fn a_turn_budget_stops_before_the_next_goal_turn() {
    let mock = MockModel::start(json!({"replies": [
        patch("a.txt"), text("one"), patch("b.txt"), text("two"), text("wrapped up"),
        patch("c.txt"),
    ]}));
    let home = Home::new(&mock, "responses");
    let work = tempfile::tempdir().unwrap();
    let (code, events) = run_goal(
        &home,
        work.path(),
        &["--goal", "write files", "--goal-turns", "2"],
    );
    assert_eq!(code, 4, "{events:#?}");
    assert_eq!(
        mock.requests().len(),
        5,
        "two goal turns of two steps, the wrap-up"
    );
    let goal = last_goal(&events);
    assert_eq!(goal["status"], "budget_limited");
    assert_eq!(goal["reason"], "turn budget spent: 2 of 2 goal turns");
    assert!(work.path().join("b.txt").exists() && !work.path().join("c.txt").exists());
}

#[test]
fn a_wall_time_budget_ends_the_running_goal_turn() {
    // Every step takes a while; 0.01 minutes is 600 ms.
    let slow = |file: &str| {
        let mut p = patch(file);
        p["delay_ms"] = json!(250);
        p
    };
    let mock = MockModel::start(json!({"replies": [
        slow("a.txt"), slow("b.txt"), slow("c.txt"), slow("d.txt"), slow("e.txt"), slow("f.txt"),
    ]}));
    let home = Home::new(&mock, "responses");
    let work = tempfile::tempdir().unwrap();
    let (code, events) = run_goal(
        &home,
        work.path(),
        &["--goal", "slowly", "--goal-minutes", "0.01"],
    );
    assert_eq!(code, 4, "{events:#?}");
    let goal = last_goal(&events);
    assert_eq!(goal["status"], "budget_limited");
    assert!(
        goal["reason"]
            .as_str()
            .unwrap()
            .starts_with("wall-time budget spent"),
        "{goal}"
    );
    assert!(goal["usage"]["time_ms"].as_u64().unwrap() >= 600, "{goal}");
    assert!(of_type(&events, "turn.failed")
        .iter()
        .any(|e| e["error"]["message"] == "turn aborted: budget limited"
            || e["error"]["message"].as_str().unwrap().contains("budget")));
}

#[test]
fn kill_9_mid_goal_then_resume_shows_it_paused_with_usage_intact() {
    let usage = json!({"input_tokens": 40, "cached_input_tokens": 0, "output_tokens": 10,
                       "reasoning_output_tokens": 0, "total_tokens": 50});
    let mut first = patch("a.txt");
    first["usage"] = usage.clone();
    let mut slow = text("never finished");
    slow["delay_ms"] = json!(3_000);
    let mock = MockModel::start(json!({"replies": [
        first, {"text": "one", "usage": usage}, slow, {"text": "answer"}
    ]}));
    let home = Home::new(&mock, "responses");
    let work = tempfile::tempdir().unwrap();
    let mut child = home
        .exec(&["--json", "-s", "workspace-write", "-C"])
        .arg(work.path())
        .args(["--goal", "keep going"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut thread = String::new();
    let mut goal_turns = 0;
    while goal_turns < 2 {
        let line: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        if line["type"] == "thread.started" {
            thread = line["thread_id"].as_str().unwrap().to_owned();
        }
        if line["type"] == "goal.turn.started" {
            goal_turns += 1;
        }
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let before = rollout(&home, &thread);
    let tokens_before: u64 = before
        .iter()
        .filter(|e| e["msg"]["type"] == "token_count")
        .map(|e| e["msg"]["last"]["total_tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(tokens_before, 100);
    // A fork of the crashed thread copies its goal, paused.
    let forked = home
        .exec(&["--json", "-s", "workspace-write", "-C"])
        .arg(work.path())
        .args(["fork", &thread, "a question for the fork"])
        .output()
        .unwrap();
    assert!(
        forked.status.success(),
        "{}",
        String::from_utf8_lossy(&forked.stderr)
    );
    let fork_id = json_lines(&forked.stdout)[0]["thread_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(fork_id, thread);
    let shown = rein_in(home.path(), &["sessions", "show", &fork_id])
        .output()
        .unwrap();
    let shown = String::from_utf8(shown.stdout).unwrap();
    assert!(shown.contains("\ngoal: paused\n"), "{shown}");
    // Resumed with a prompt of the user's: the goal comes back paused, the prompt's turn
    // runs, and no goal turn starts by itself.
    let requests_before = mock.requests().len();
    let out = home
        .exec(&["--json", "-s", "workspace-write", "-C"])
        .arg(work.path())
        .args(["resume", &thread, "what is the state?"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(mock.requests().len(), requests_before + 1);
    let shown = rein_in(home.path(), &["sessions", "show", &thread])
        .output()
        .unwrap();
    let shown = String::from_utf8(shown.stdout).unwrap();
    assert!(shown.contains("\ngoal: paused\n"), "{shown}");
    assert!(shown.contains("used: 100 tokens"), "{shown}");
    assert!(shown.contains("checkpoint 1 · turn"), "{shown}");
}

#[test]
fn an_objective_over_4000_characters_is_refused() {
    let mock = MockModel::start(json!({"replies": [text("x")]}));
    let home = Home::new(&mock, "responses");
    let work = tempfile::tempdir().unwrap();
    let long = "x".repeat(4001);
    let out = home
        .exec(&["-C"])
        .arg(work.path())
        .args(["--goal", &long])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("the objective has 4001 characters; at most 4000 are allowed"),
        "{stderr}"
    );
    assert!(mock.requests().is_empty());
    // An ephemeral thread has no goal.
    let out = home
        .exec(&["--ephemeral", "-C"])
        .arg(work.path())
        .args(["--goal", "short"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8(out.stderr)
        .unwrap()
        .contains("thread goals require a persisted thread"));
}

#[test]
fn ctrl_c_pauses_the_goal_and_exits_130() {
    let mut slow = text("slow answer");
    slow["deltas"] = json!(100);
    slow["delay_ms"] = json!(100);
    let mock = MockModel::start(json!({"replies": [slow]}));
    let home = Home::new(&mock, "responses");
    let work = tempfile::tempdir().unwrap();
    let mut child = home
        .exec(&["--json", "-C"])
        .arg(work.path())
        .args(["--goal", "take long"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    loop {
        let line: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        let started = line["type"] == "goal.turn.started";
        seen.push(line);
        if started {
            break;
        }
    }
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    seen.extend(lines.map(|l| serde_json::from_str::<Value>(&l.unwrap()).unwrap()));
    assert_eq!(child.wait().unwrap().code(), Some(130));
    let goal = last_goal(&seen);
    assert_eq!(goal["status"], "paused", "{seen:#?}");
    assert_eq!(goal["usage"]["turns"], 1);
}
