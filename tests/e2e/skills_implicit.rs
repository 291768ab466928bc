//! A skill the model opens itself is a fact of the session: when a tool call reads a
//! skill's `SKILL.md` (a `cat` through `shell`, a `read_file`), the rollout records
//! `SkillActivated` (name, path, SHA-256, implicit), folded by the thread's reducer, so
//! `thread/read` (after a restart too) and `rein sessions show` say which skills the model
//! used. Reading any other file records nothing. Through a real `rein app-server` and a
//! `rein mock-model`.
#![allow(clippy::unwrap_used)]

use rein_test_support::app_server as support;

use pretty_assertions::assert_eq;
use serde_json::json;
use support::{home_for, method, rein_in, AppServer, MockModel};

use crate::project_context::skills_repo;
use crate::skills_activation::sha256sum;

#[test]
fn the_model_opening_a_skill_md_is_recorded_as_an_implicit_activation() {
    let repo = skills_repo();
    let sub = repo.sub();
    let root = std::fs::canonicalize(repo.dir.path()).unwrap();
    let pdf = root.join(".agents/skills/pdf/SKILL.md");
    let model = MockModel::start(json!({"replies": [
        // A relative path through `..`, and a file that is no skill's.
        {"tool_calls": [
            {"call_id": "cat_pdf", "name": "shell",
             "arguments": {"command": ["cat", "../.agents/skills/pdf/SKILL.md"]}},
            {"call_id": "read_doc", "name": "read_file",
             "arguments": {"path": root.join("AGENTS.md")}}
        ]},
        // The same skill again: one activation in the fold.
        {"tool_calls": [
            {"call_id": "read_pdf", "name": "read_file", "arguments": {"path": pdf}}
        ]},
        {"text": "filled"}
    ]}));
    let home = home_for(&model);
    let user_home = tempfile::tempdir().unwrap();
    let user = user_home.path().to_str().unwrap();

    let mut server = AppServer::start_with_env(home.path(), &[], &[("HOME", user)]);
    server.initialize();
    server.send(&json!({"method": "initialized"}));
    let thread = server.start_thread(json!({"cwd": sub, "approvalPolicy": "never"}));
    server.request(
        "turn/start",
        json!({"threadId": thread, "input": [{"type": "text", "text": "fill the form"}]}),
    );
    let events = server.until(|m| method(m) == "turn/completed");
    assert_eq!(
        events.last().unwrap()["params"]["turn"]["status"],
        "completed"
    );
    // The command really ran and printed the skill.
    let requests = model.requests();
    let outputs: Vec<&str> = requests[1]["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == "function_call_output" && i["call_id"] == "cat_pdf")
        .map(|i| i["output"].as_str().unwrap())
        .collect();
    assert!(
        outputs.len() == 1 && outputs[0].contains("Use pdftk."),
        "{outputs:?}"
    );

    let used = json!([{
        "name": "pdf",
        "path": pdf,
        "sha256": sha256sum(&pdf),
        "implicit": true
    }]);
    let read = json!({"threadId": thread, "includeTurns": true});
    assert_eq!(
        server.call("thread/read", read.clone())["result"]["reinSkillsUsed"],
        used
    );
    assert!(server.finish().success());

    // Folded again from the rollout by a new process.
    let mut server = AppServer::start_with_env(home.path(), &[], &[("HOME", user)]);
    server.initialize();
    assert_eq!(
        server.call("thread/read", read)["result"]["reinSkillsUsed"],
        used
    );
    assert!(server.finish().success());

    let out = rein_in(home.path(), &["sessions", "show", &thread])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    let line = format!(
        "  skill pdf ({}, sha256 {}, implicit)\n",
        pdf.display(),
        &sha256sum(&pdf)[..12]
    );
    // Twice: each read is a fact of the rollout; the fold keeps the skill once.
    assert_eq!(shown.matches(&line).count(), 2, "{shown}");
}

/// A shell script that reads several files at once, one of them with `awk`: each skill it
/// shows is an activation, in the order read; the other file is none.
#[test]
fn a_script_reading_several_skill_files_records_each() {
    let repo = skills_repo();
    let sub = repo.sub();
    let root = std::fs::canonicalize(repo.dir.path()).unwrap();
    let pdf = root.join(".agents/skills/pdf/SKILL.md");
    let review = root.join("sub/.claude/skills/review/SKILL.md");
    let script = "cat ../.agents/skills/pdf/SKILL.md ../AGENTS.md && awk 'NR<=20' .claude/skills/review/SKILL.md";
    let model = MockModel::start(json!({"replies": [
        {"tool_calls": [{"call_id": "both", "name": "shell",
                         "arguments": {"command": ["bash", "-lc", script]}}]},
        {"text": "read"}
    ]}));
    let home = home_for(&model);
    let user_home = tempfile::tempdir().unwrap();
    let user = user_home.path().to_str().unwrap();
    let mut server = AppServer::start_with_env(home.path(), &[], &[("HOME", user)]);
    server.initialize();
    server.send(&json!({"method": "initialized"}));
    let thread = server.start_thread(json!({"cwd": sub, "approvalPolicy": "never"}));
    let completed = server.turn(&thread, "read the skills");
    assert_eq!(completed["params"]["turn"]["status"], "completed");
    // The script really ran: its output holds both skills' bodies.
    let requests = model.requests();
    let output = requests[1]["input"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "function_call_output" && i["call_id"] == "both")
        .unwrap()["output"]
        .to_string();
    assert!(
        output.contains("Use pdftk.") && output.contains("Review a diff."),
        "{output}"
    );
    let used = |name: &str, path: &std::path::Path| json!({"name": name, "path": path, "sha256": sha256sum(path), "implicit": true});
    let read = server.call(
        "thread/read",
        json!({"threadId": thread, "includeTurns": true}),
    );
    assert_eq!(
        read["result"]["reinSkillsUsed"],
        json!([used("pdf", &pdf), used("review", &review)])
    );
    assert!(server.finish().success());
}
