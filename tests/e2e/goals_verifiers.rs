//! A goal's MCP and evaluator verifiers through the real `rein exec --goal`: an MCP tool
//! of a real server (the Python SDK's scripted server) that fails until the model creates
//! a file, an MCP verifier that needs approval and is declined (it never routes around the
//! approval policy), and an evaluator answered by a second model profile of the same mock
//! server, whose bad verdicts (no JSON, a missing field) fail the check (docs/goals.md).
#![allow(clippy::unwrap_used)]

use pretty_assertions::assert_eq;
use rein_test_support::exec::{json_lines, Home, MockModel};
use rein_test_support::test_setup;
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

fn add_config(home: &Home, text: &str) {
    let path = home.path().join("config.toml");
    let mut config = std::fs::read_to_string(&path).unwrap();
    config.push_str(text);
    std::fs::write(path, config).unwrap();
}

/// `rein exec --json --goal ARGS` in `work`; (exit code, JSON lines).
fn run_goal(home: &Home, work: &std::path::Path, args: &[&str]) -> (i32, Vec<Value>) {
    let mut cmd = home.exec(&["--json", "-s", "workspace-write", "-C"]);
    cmd.arg(work).args(args);
    let out = cmd.output().unwrap();
    let code = out.status.code().unwrap();
    (code, json_lines(&out.stdout))
}

/// `rein exec --goal OBJECTIVE --verify-mcp scripted/exists={"path": FILE}` in a fresh
/// working directory, `FILE` there (made first when `exists`): its file, exit code and
/// JSONL events.
fn run_exists_goal(
    home: &Home,
    objective: &str,
    file: &str,
    exists: bool,
) -> (std::path::PathBuf, i32, Vec<Value>) {
    let work = tempfile::tempdir().unwrap();
    let path = work.path().canonicalize().unwrap().join(file);
    if exists {
        std::fs::write(&path, "x").unwrap();
    }
    let check = format!("scripted/exists={}", json!({"path": path}));
    let (code, events) = run_goal(
        home,
        work.path(),
        &["--goal", objective, "--verify-mcp", &check],
    );
    (path, code, events)
}

fn of_type<'a>(events: &'a [Value], t: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == t).collect()
}

/// Each checkpoint's verifier outcomes, as (passed, output).
fn outcomes(events: &[Value]) -> Vec<Vec<(bool, String)>> {
    of_type(events, "goal.checkpoint")
        .iter()
        .map(|c| {
            c["checkpoint"]["verifier_outcomes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| {
                    (
                        o["passed"].as_bool().unwrap(),
                        o["output"].as_str().unwrap().to_owned(),
                    )
                })
                .collect()
        })
        .collect()
}

fn last_goal(events: &[Value]) -> Value {
    of_type(events, "goal.updated").last().unwrap()["goal"].clone()
}

/// A home whose config names the scripted MCP server (required, so the first turn has
/// its tools), with `extra` appended to the server's table.
fn home_with_scripted(mock: &MockModel, extra: &str) -> Home {
    let home = Home::new(mock, "responses");
    let python = test_setup::installed("target/mcp-venv/bin/python");
    let script = test_setup::repo_root().join("tests/fixtures/mcp/scripted_server.py");
    add_config(
        &home,
        &format!(
            "\n[mcp_servers.scripted]\ncommand = {}\nargs = [{}]\nrequired = true\n{extra}",
            json!(python.to_string_lossy()),
            json!(script.to_string_lossy()),
        ),
    );
    home
}

#[test]
#[cfg_attr(
    not(rein_has_python),
    ignore = "needs python3 (scripts/test-setup.sh installs the MCP SDK with it)"
)]
fn an_mcp_verifier_fails_until_the_model_makes_it_pass() {
    let mock = MockModel::start(json!({"replies": [
        update("complete"), text("first try"),
        patch("done.txt"), update("complete"), text("done"),
    ], "when_exhausted": "error"}));
    let home = home_with_scripted(&mock, "");
    let (done, code, events) = run_exists_goal(&home, "create done.txt", "done.txt", false);
    assert_eq!(code, 0, "{events:#?}");
    let missing = format!("{} does not exist yet", done.display());
    let ran = outcomes(&events);
    assert_eq!(ran.len(), 2, "{ran:?}");
    assert_eq!(ran[0].len(), 1);
    assert!(!ran[0][0].0);
    assert!(ran[0][0].1.contains(&missing), "{ran:?}");
    assert_eq!(ran[1], [(true, format!("{} exists", done.display()))]);
    let goal = last_goal(&events);
    assert_eq!(goal["status"], "complete");
    assert_eq!(
        goal["criteria"],
        json!([{"description": "MCP scripted/exists", "verify": {
            "type": "mcp", "server": "scripted", "tool": "exists", "arguments": {"path": done}
        }}])
    );
    // The model read the failing call's answer in update_goal's output at once.
    let requests = mock.requests();
    assert_eq!(requests.len(), 5);
    assert!(requests[1].to_string().contains(&missing));
}

#[test]
#[cfg_attr(
    not(rein_has_python),
    ignore = "needs python3 (scripts/test-setup.sh installs the MCP SDK with it)"
)]
fn an_mcp_verifier_that_needs_approval_is_declined_and_fails() {
    let mock = MockModel::start(json!({"replies": [
        update("complete"), update("blocked"), text("cannot verify"),
    ], "when_exhausted": "error"}));
    // Every tool of the server asks first.
    let home = home_with_scripted(&mock, "default_tools_approval_mode = \"prompt\"\n");
    let (_, code, events) = run_exists_goal(&home, "check there.txt", "there.txt", true);
    assert_eq!(code, 3, "blocked: {events:#?}");
    let ran = outcomes(&events);
    // exec's approval policy is `never`: the call is declined by the policy, the tool
    // never runs (it would have said the file exists), and the check fails.
    assert_eq!(
        ran,
        [vec![(
            false,
            "MCP tool 'exists' of server 'scripted' needs approval, and the approval policy \
             is never"
                .to_owned()
        )]]
    );
    assert_ne!(last_goal(&events)["status"], "complete");
}

/// A home with a second profile, `judge` (model `judge-model`, the same mock provider),
/// as the goals' evaluator.
fn home_with_judge(mock: &MockModel) -> Home {
    let home = Home::new(mock, "responses");
    add_config(
        &home,
        "\n[profiles.judge]\nmodel = \"judge-model\"\n\n[goals]\nevaluator_profile = \"judge\"\n",
    );
    home
}

fn verdict(v: Value) -> Value {
    json!({"text": v.to_string()})
}

#[test]
fn an_evaluator_of_a_second_profile_refuses_then_passes_the_goal() {
    let mock = MockModel::start(json!({"replies": [
        update("complete"),
        verdict(json!({"pass": false, "reason": "README.md has no usage section"})),
        text("will fix"),
        patch("README.md"), update("complete"),
        verdict(json!({"pass": true, "reason": "the README is there"})),
        text("done"),
    ], "when_exhausted": "error"}));
    let home = home_with_judge(&mock);
    let work = tempfile::tempdir().unwrap();
    let (code, events) = run_goal(
        &home,
        work.path(),
        &[
            "--goal",
            "write the README",
            "--verify-eval",
            "Does the README have a usage section?",
        ],
    );
    assert_eq!(code, 0, "{events:#?}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 7);
    let models: Vec<&str> = requests
        .iter()
        .map(|r| r["model"].as_str().unwrap())
        .collect();
    assert_eq!(
        models,
        [
            "mock",
            "judge-model",
            "mock",
            "mock",
            "mock",
            "judge-model",
            "mock"
        ]
    );
    // The evaluator's request: its own instructions, no tools, the question, the
    // objective and the transcript, and the verdict's schema.
    let judge = &requests[1];
    assert!(judge["instructions"]
        .as_str()
        .unwrap()
        .starts_with("You check one acceptance criterion"));
    assert_eq!(judge["tools"].as_array().map_or(0, Vec::len), 0);
    let asked = judge["input"].to_string();
    assert!(
        asked.contains("Does the README have a usage section?"),
        "{asked}"
    );
    assert!(asked.contains("write the README"), "{asked}");
    assert!(asked.contains("tool call update_goal"), "{asked}");
    assert_eq!(
        judge["text"]["format"]["schema"]["required"],
        json!(["pass", "reason"])
    );
    // The refusal's reason reached the model at once.
    assert!(requests[2]
        .to_string()
        .contains("README.md has no usage section"));
    assert_eq!(
        outcomes(&events),
        [
            vec![(
                false,
                "the evaluator (judge-model) says: README.md has no usage section".to_owned()
            )],
            vec![(
                true,
                "the evaluator (judge-model) says: the README is there".to_owned()
            )],
        ]
    );
    assert_eq!(last_goal(&events)["status"], "complete");
}

#[test]
fn a_bad_verdict_is_a_failed_check_never_a_pass() {
    let mock = MockModel::start(json!({"replies": [
        update("complete"), text("Sure, it passes."), text("hm"),
        patch("a.txt"), update("complete"), verdict(json!({"pass": true})),
        update("blocked"), text("the evaluator will not say"),
    ], "when_exhausted": "error"}));
    let home = home_with_judge(&mock);
    let work = tempfile::tempdir().unwrap();
    let (code, events) = run_goal(
        &home,
        work.path(),
        &["--goal", "be judged", "--verify-eval", "Is it good?"],
    );
    assert_eq!(code, 3, "blocked: {events:#?}");
    let ran = outcomes(&events);
    assert_eq!(ran.len(), 2, "{ran:?}");
    let (garbage, missing) = (&ran[0][0], &ran[1][0]);
    assert!(!garbage.0 && !missing.0, "{ran:?}");
    assert!(
        garbage
            .1
            .starts_with("the evaluator's answer is not the verdict asked for"),
        "{garbage:?}"
    );
    assert!(
        garbage.1.ends_with("it said: Sure, it passes."),
        "{garbage:?}"
    );
    assert!(missing.1.contains("missing field `reason`"), "{missing:?}");
    assert!(!of_type(&events, "goal.updated")
        .iter()
        .any(|g| g["goal"]["status"] == "complete"));
}

/// An MCP verifier's tool need not be offered to the model: past `mcp_tool_budget` the
/// server's tools are behind `tool_search`, and the kernel still calls the one it checks.
#[test]
#[cfg_attr(
    not(rein_has_python),
    ignore = "needs python3 (scripts/test-setup.sh installs the MCP SDK with it)"
)]
fn an_mcp_verifier_reaches_a_tool_behind_tool_search() {
    let mock = MockModel::start(json!({"replies": [
        update("complete"), text("done"),
    ], "when_exhausted": "error"}));
    let home = home_with_scripted(&mock, "");
    let path = home.path().join("config.toml");
    let config = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("mcp_tool_budget = 1\n{config}")).unwrap();
    let (there, code, events) = run_exists_goal(&home, "check there.txt", "there.txt", true);
    assert_eq!(code, 0, "{events:#?}");
    let offered = rein_test_support::mock_model::tool_names(&mock.requests()[0]);
    assert!(offered.contains(&"tool_search".to_owned()), "{offered:?}");
    assert!(
        !offered.iter().any(|t| t.starts_with("mcp__scripted__")),
        "{offered:?}"
    );
    assert_eq!(
        outcomes(&events),
        [vec![(true, format!("{} exists", there.display()))]]
    );
}
