//! The advisor through the real binary, its requests answered by a real `rein mock-model`:
//! `rein exec` shows a rejection and a warning (both output modes) and the rollout keeps
//! the review; `rein app-server` sends Codex's `item/autoApprovalReview/started` and
//! `/completed` for each reviewed call, valid against Codex's schema.
#![allow(clippy::unwrap_used)]

use rein_test_support::app_server as app_support;

use app_support::{home_for, json_lines, rein_ok, MockModel};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};

/// `rein exec ARGS` with `home`, to the end; it must succeed.
fn exec_ok(home: &std::path::Path, args: &[&str]) -> std::process::Output {
    rein_ok(home, &[&["exec"], args].concat())
}

fn call(call_id: &str, script: &str) -> Value {
    json!({ "call_id": call_id, "name": "shell", "arguments": { "command": ["sh", "-c", script] } })
}

fn verdict(decision: &str, reason: &str) -> Value {
    json!({ "text": json!({ "decision": decision, "reason": reason }).to_string() })
}

fn script() -> Value {
    json!({ "replies": [
        { "tool_calls": [call("call_rm", "rm -f keep.txt"), call("call_ls", "ls")] },
        verdict("reject", "deleting keep.txt was not asked for"),
        { "tool_calls": [call("call_touch", "touch made.txt")] },
        verdict("approve_with_warnings", "creates a file"),
        { "text": "Done." }
    ] })
}

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("keep.txt"), "keep").unwrap();
    dir
}

fn with_advisor(home: &std::path::Path) {
    let path = home.join("config.toml");
    let mut config = std::fs::read_to_string(&path).unwrap();
    config.push_str("\n[advisor]\nmode = \"full\"\ntimeout_ms = 20000\n");
    std::fs::write(path, config).unwrap();
}

#[test]
fn exec_shows_the_advisor_and_the_rollout_keeps_its_reviews() {
    let mock = MockModel::start(script());
    let home = home_for(&mock);
    with_advisor(home.path());
    let dir = workspace();
    let cwd = dir.path().to_str().unwrap();
    let out = exec_ok(
        home.path(),
        &[
            "--json",
            "--dangerously-bypass-approvals-and-sandbox",
            "-C",
            cwd,
            "Tidy up.",
        ],
    );
    assert!(
        dir.path().join("keep.txt").exists(),
        "the rejected batch ran"
    );
    assert!(
        dir.path().join("made.txt").exists(),
        "the approved batch did not run"
    );
    let events = json_lines(&out.stdout);
    let messages: Vec<&str> = events
        .iter()
        .filter(|e| e["item"]["type"] == "error")
        .map(|e| e["item"]["message"].as_str().unwrap())
        .collect();
    assert_eq!(
        messages,
        [
            "advisor rejected the tool calls: deleting keep.txt was not asked for",
            "advisor warning: creates a file"
        ]
    );
    let declined: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "item.completed" && e["item"]["type"] == "command_execution")
        .map(|e| &e["item"]["status"])
        .collect();
    assert_eq!(
        declined,
        [&json!("declined"), &json!("declined"), &json!("completed")]
    );

    // The advisor's own requests: no tools, a strict JSON schema answer format.
    let requests = mock.requests();
    assert_eq!(requests.len(), 5);
    for review in [&requests[1], &requests[3]] {
        let tools = review.get("tools").and_then(Value::as_array);
        assert!(tools.is_none_or(Vec::is_empty), "{review:#}");
        assert_eq!(
            review["text"]["format"]["type"], "json_schema",
            "{review:#}"
        );
    }
    // The model read the rejection as the output of both calls.
    let body = requests[2].to_string();
    assert!(
        body.contains("deleting keep.txt was not asked for"),
        "{body}"
    );

    // The rollout keeps both reviews.
    let mut rollout = String::new();
    for entry in walk(&home.path().join("sessions")) {
        rollout.push_str(&std::fs::read_to_string(entry).unwrap());
    }
    assert_eq!(rollout.matches("\"advisor_review_started\"").count(), 2);
    assert_eq!(rollout.matches("\"advisor_review_completed\"").count(), 2);

    // The human output says the same.
    let mock = MockModel::start(script());
    let home = home_for(&mock);
    with_advisor(home.path());
    let dir = workspace();
    let out = exec_ok(
        home.path(),
        &[
            "--dangerously-bypass-approvals-and-sandbox",
            "-C",
            dir.path().to_str().unwrap(),
            "Tidy up.",
        ],
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("advisor reviewing 2 tool calls, high risk (destructive command: rm)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("advisor rejected the tool calls: deleting keep.txt was not asked for"),
        "{stderr}"
    );
    assert!(
        stderr.contains("advisor warning: creates a file"),
        "{stderr}"
    );
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            files.push(path);
        }
    }
    files
}

#[test]
fn app_server_sends_codex_auto_review_notifications_for_each_reviewed_call() {
    let model = MockModel::start(script());
    let home = home_for(&model);
    with_advisor(home.path());
    let dir = workspace();
    let mut server = app_support::AppServer::start(home.path(), &[]);
    server.initialize();
    let thread = server.start_thread(json!({
        "cwd": dir.path(), "approvalPolicy": "never", "sandbox": "danger-full-access"
    }));
    server.request(
        "turn/start",
        json!({ "threadId": thread, "input": [{ "type": "text", "text": "Tidy up." }] }),
    );
    let seen = server.until(|m| app_support::method(m) == "turn/completed");
    let reviews: Vec<(String, String, String, String)> = seen
        .iter()
        .filter(|m| app_support::method(m).starts_with("item/autoApprovalReview/"))
        .map(|m| {
            let p = &m["params"];
            (
                app_support::method(m)
                    .rsplit('/')
                    .next()
                    .unwrap()
                    .to_owned(),
                p["targetItemId"].as_str().unwrap().to_owned(),
                p["review"]["status"].as_str().unwrap().to_owned(),
                p["review"]["riskLevel"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let row = |kind: &str, call: &str, status: &str, risk: &str| {
        (
            kind.to_owned(),
            call.to_owned(),
            status.to_owned(),
            risk.to_owned(),
        )
    };
    assert_eq!(
        reviews,
        vec![
            row("started", "call_rm", "inProgress", "high"),
            row("started", "call_ls", "inProgress", "high"),
            row("completed", "call_rm", "denied", "high"),
            row("completed", "call_ls", "denied", "high"),
            row("started", "call_touch", "inProgress", "low"),
            row("completed", "call_touch", "approved", "low"),
        ]
    );
    let completed = seen
        .iter()
        .find(|m| {
            app_support::method(m) == "item/autoApprovalReview/completed"
                && m["params"]["targetItemId"] == "call_rm"
        })
        .unwrap();
    assert_eq!(
        completed["params"]["review"]["rationale"],
        "deleting keep.txt was not asked for"
    );
    assert_eq!(completed["params"]["action"]["type"], "command");
    assert_eq!(completed["params"]["decisionSource"], "agent");
    // The rejected calls are declined command items.
    let declined: Vec<&Value> = seen
        .iter()
        .filter(|m| app_support::method(m) == "item/completed")
        .filter(|m| m["params"]["item"]["type"] == "commandExecution")
        .map(|m| &m["params"]["item"]["status"])
        .collect();
    assert_eq!(
        declined,
        [&json!("declined"), &json!("declined"), &json!("completed")]
    );
}
