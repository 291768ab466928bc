//! `sandbox_mode` and `approval_policy` from `config.toml` (top level, a profile, `-c`)
//! reach the threads of every front end through the real binary: `rein app-server` (and
//! `config/read` reports them; `thread/start` params still win), `rein exec` (a flag still
//! wins) and `rein acp`; a value rein cannot honour fails loudly.
#![allow(clippy::unwrap_used)]
// Both harnesses (app-server, ACP) load the shared mock-model and line-peer helpers.
#![allow(clippy::duplicate_mod)]

use rein_test_support::acp as acp_support;
use rein_test_support::app_server as support;

use std::path::Path;

use serde_json::{json, Value};
use support::{home_for, method, rein_in, AppServer, MockModel};

/// A model that runs `touch NAME` once per entry of `names`, each followed by "done".
fn touching(names: &[&str]) -> MockModel {
    let mut replies = Vec::new();
    for (i, name) in names.iter().enumerate() {
        replies.push(
            json!({ "tool_calls": [{ "call_id": format!("touch_{i}"), "name": "shell",
                             "arguments": { "command": ["touch", name] } }] }),
        );
        replies.push(json!({ "text": "done" }));
    }
    MockModel::start(json!({ "replies": replies, "when_exhausted": "echo" }))
}

/// A home for `model` whose `config.toml` starts with `top` (top-level keys) and ends
/// with `tables`.
fn home_with(model: &MockModel, top: &str, tables: &str) -> tempfile::TempDir {
    let home = home_for(model);
    let path = home.path().join("config.toml");
    let base = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{top}\n{base}\n{tables}\n")).unwrap();
    home
}

fn configured(server: &mut AppServer) -> (Value, Value) {
    let read = server.call("config/read", json!({ "includeLayers": false }));
    let config = &read["result"]["config"];
    (
        config["sandbox_mode"].clone(),
        config["approval_policy"].clone(),
    )
}

/// Start a thread with `params` and run one turn; every message of the turn.
fn turn(server: &mut AppServer, params: Value) -> (Value, Vec<Value>) {
    let id = server.request("thread/start", params);
    let started = server.response(&id);
    let thread = started["result"]["thread"]["id"].clone();
    server.request(
        "turn/start",
        json!({ "threadId": thread, "input": [{ "type": "text", "text": "touch it" }] }),
    );
    let seen = server.until(|m| {
        method(m) == "turn/completed" || method(m) == "item/commandExecution/requestApproval"
    });
    (started["result"].clone(), seen)
}

#[test]
fn app_server_threads_get_the_configured_sandbox_and_params_still_win() {
    let model = touching(&["refused.txt", "written.txt"]);
    let home = home_with(
        &model,
        "sandbox_mode = \"read-only\"\napproval_policy = \"never\"",
        "",
    );
    let mut server = AppServer::start(home.path(), &[]);
    server.initialize();
    assert_eq!(
        configured(&mut server),
        (json!("read-only"), json!("never"))
    );

    let cwd = tempfile::tempdir().unwrap();
    let (started, seen) = turn(&mut server, json!({ "cwd": cwd.path() }));
    assert_eq!(started["approvalPolicy"], "never");
    assert_eq!(started["sandbox"]["type"], "readOnly", "{started}");
    assert_eq!(method(seen.last().unwrap()), "turn/completed");
    assert!(
        !cwd.path().join("refused.txt").exists(),
        "read-only let a write through"
    );

    let (started, _) = turn(
        &mut server,
        json!({ "cwd": cwd.path(), "sandbox": "workspace-write" }),
    );
    assert_eq!(started["sandbox"]["type"], "workspaceWrite", "{started}");
    assert!(cwd.path().join("written.txt").exists());
}

#[test]
fn app_server_honours_a_profile_and_dash_c() {
    let model = touching(&["asked.txt"]);
    let home = home_with(
        &model,
        "sandbox_mode = \"read-only\"\napproval_policy = \"never\"",
        "[profiles.careful]\napproval_policy = \"untrusted\"",
    );
    // The profile wins over the file's top level (as for `model`); `-c` rewrites it.
    let mut server = AppServer::start(
        home.path(),
        &[
            "--profile",
            "careful",
            "-c",
            "sandbox_mode=\"workspace-write\"",
        ],
    );
    server.initialize();
    assert_eq!(
        configured(&mut server),
        (json!("workspace-write"), json!("untrusted"))
    );
    let cwd = tempfile::tempdir().unwrap();
    let (started, seen) = turn(&mut server, json!({ "cwd": cwd.path() }));
    assert_eq!(started["approvalPolicy"], "untrusted");
    assert_eq!(started["sandbox"]["type"], "workspaceWrite", "{started}");
    let ask = seen.last().unwrap();
    assert_eq!(
        method(ask),
        "item/commandExecution/requestApproval",
        "{ask}"
    );
    assert_eq!(ask["params"]["command"], "touch asked.txt");
    server.send(&json!({ "id": ask["id"], "result": { "decision": "decline" } }));
    server.until(|m| method(m) == "turn/completed");
    assert!(!cwd.path().join("asked.txt").exists());
}

#[test]
fn a_value_rein_cannot_honour_is_refused_loudly() {
    let model = touching(&[]);
    for (top, key) in [
        ("sandbox_mode = \"sandboxed-please\"", "sandbox_mode"),
        ("approval_policy = \"sometimes\"", "approval_policy"),
    ] {
        let home = home_with(&model, top, "");
        let mut server = AppServer::start(home.path(), &[]);
        let id = server.request(
            "initialize",
            json!({ "clientInfo": { "name": "t", "version": "1" } }),
        );
        server.response(&id);
        let cwd = tempfile::tempdir().unwrap();
        let id = server.request("thread/start", json!({ "cwd": cwd.path() }));
        let answer = server.response(&id);
        let text = answer.to_string();
        assert!(answer.get("error").is_some(), "{answer}");
        assert!(text.contains(key), "{text}");

        let out = exec(home.path(), cwd.path(), &[]);
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(key), "{stderr}");
    }
}

fn exec(home: &Path, cwd: &Path, extra: &[&str]) -> std::process::Output {
    let cd = cwd.display().to_string();
    let mut args = vec!["exec", "-C", &cd, "--skip-git-repo-check"];
    args.extend_from_slice(extra);
    args.push("touch it");
    rein_in(home, &args).output().unwrap()
}

#[test]
fn exec_takes_the_configured_policies_unless_a_flag_says_otherwise() {
    // workspace-write from the file: the write lands (exec's own default is read-only).
    let model = touching(&["written.txt", "flagged.txt"]);
    let home = home_with(&model, "sandbox_mode = \"workspace-write\"", "");
    let cwd = tempfile::tempdir().unwrap();
    let out = exec(home.path(), cwd.path(), &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(cwd.path().join("written.txt").exists());
    // A flag wins over the file.
    let out = exec(home.path(), cwd.path(), &["--sandbox", "read-only"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!cwd.path().join("flagged.txt").exists());

    // untrusted from `-c`: the command is asked, and nobody can answer headless.
    let model = touching(&["asked.txt"]);
    let home = home_with(&model, "sandbox_mode = \"workspace-write\"", "");
    let out = exec(
        home.path(),
        cwd.path(),
        &["-c", "approval_policy=\"untrusted\""],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("approval_policy \"untrusted\""), "{stderr}");
    assert!(!cwd.path().join("asked.txt").exists());
}

#[test]
fn acp_sessions_start_in_the_configured_mode() {
    let model = touching(&["refused.txt"]);
    let home = home_with(
        &model,
        "sandbox_mode = \"read-only\"\napproval_policy = \"never\"",
        "",
    );
    let cwd = tempfile::tempdir().unwrap();
    let cwd_path = cwd.path().canonicalize().unwrap();
    let mut acp = acp_support::Acp::start(home.path());
    acp.initialize();
    let (_, answer) = acp.call("session/new", json!({ "cwd": cwd_path, "mcpServers": [] }));
    assert_eq!(
        answer["result"]["modes"]["currentModeId"], "read-only",
        "{answer}"
    );
    let session = answer["result"]["sessionId"].as_str().unwrap().to_owned();
    let id = acp.prompt(&session, "touch it");
    acp.until(|m| acp_support::is_answer(m, &id));
    assert!(
        !cwd_path.join("refused.txt").exists(),
        "read-only let a write through"
    );
}

#[test]
fn thread_start_config_keys_set_the_threads_policies_and_its_own_fields_win() {
    let model = touching(&[]);
    let home = home_with(&model, "", "");
    let mut server = AppServer::start(home.path(), &[]);
    server.initialize();
    let cwd = tempfile::tempdir().unwrap();
    let config = json!({ "approval_policy": "never", "sandbox_mode": "read-only" });
    let started = server.call(
        "thread/start",
        json!({ "cwd": cwd.path(), "config": config }),
    );
    assert_eq!(started["result"]["approvalPolicy"], "never", "{started}");
    assert_eq!(
        started["result"]["sandbox"]["type"], "readOnly",
        "{started}"
    );
    // The request's own fields win over its `config`, as in Codex.
    let started = server.call(
        "thread/start",
        json!({ "cwd": cwd.path(), "config": config, "approvalPolicy": "untrusted",
                "sandbox": "workspace-write" }),
    );
    assert_eq!(
        started["result"]["approvalPolicy"], "untrusted",
        "{started}"
    );
    assert_eq!(
        started["result"]["sandbox"]["type"], "workspaceWrite",
        "{started}"
    );
    // A value the thread cannot be given is refused, naming the key.
    let refused = server.call(
        "thread/start",
        json!({ "cwd": cwd.path(), "config": { "sandbox_mode": "sandboxed-please" } }),
    );
    assert_eq!(
        refused["error"]["data"],
        json!({ "field": "config.sandbox_mode" }),
        "{refused}"
    );
    assert!(server.finish().success());
}

/// What a user reads of a call `rein exec` denied because its approval policy asked and
/// nobody can answer a headless run: the policy denied it, not the user (in Codex's words,
/// "… approval is not supported in exec mode"), on stderr and in `--json`.
#[test]
fn exec_says_the_approval_policy_denied_what_nobody_could_approve() {
    let untrusted = [
        "-c",
        "approval_policy=\"untrusted\"",
        "-s",
        "workspace-write",
    ];
    let denial = "denied by the approval policy: command execution approval is not supported in rein exec (nobody was asked)";
    let cwd = tempfile::tempdir().unwrap();

    let model = touching(&["asked.txt"]);
    let home = home_for(&model);
    let out = exec(home.path(), cwd.path(), &untrusted);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The call's lines; the elapsed time of the last is cut out.
    let lines: Vec<String> = stderr
        .lines()
        .filter(|l| l.contains("asked.txt"))
        .map(|l| match (l.find(" ("), l.find(") — ")) {
            (Some(open), Some(close)) if l.starts_with('✗') => {
                format!("{}{}", &l[..open], &l[close + 1..])
            }
            _ => l.to_owned(),
        })
        .collect();
    assert_eq!(
        lines,
        vec![
            "▶ $ touch asked.txt".to_owned(),
            "approval needed to run `touch asked.txt` (the command is not a known-safe read-only command); command execution approval is not supported in rein exec, so the approval policy denies it".to_owned(),
            format!("✗ $ touch asked.txt — {denial}"),
        ],
        "{stderr}"
    );
    assert!(!stderr.contains("the user denied"), "{stderr}");
    assert!(!cwd.path().join("asked.txt").exists());

    let model = touching(&["asked.txt"]);
    let home = home_for(&model);
    let out = exec(
        home.path(),
        cwd.path(),
        &[&untrusted[..], &["--json"]].concat(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let completed: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "item.completed" && e["item"]["type"] == "command_execution")
        .collect();
    assert_eq!(
        completed,
        vec![json!({ "type": "item.completed", "item": {
            "id": "item_0", "type": "command_execution", "command": "touch asked.txt",
            "aggregated_output": denial, "exit_code": null, "status": "declined" } })]
    );
    assert!(!cwd.path().join("asked.txt").exists());
}
