//! User hooks as the app-server shows them: `hooks/list` (Codex's `HookMetadata`, with the
//! trust `rein hooks list` shows) and a `hook/started` / `hook/completed` pair per run,
//! every message checked against Codex's schema by the harness.
#![allow(clippy::unwrap_used)]

use pretty_assertions::assert_eq;
use serde_json::{json, Value};

use super::hooks::{pre_tool_use, shell_call, Setup};

#[test]
fn the_app_servers_hooks_list_shows_each_hook_with_its_trust_as_rein_hooks_list_does() {
    let setup = Setup::new(json!({"replies": []}));
    setup.user_hooks(json!({
        "PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "./guard.sh", "timeout": 7}]}],
        "PostToolUseFailure": [{"hooks": [{"type": "command", "command": "./on-fail.sh"}]}]
    }));
    let project = setup.work().join(".codex").join("hooks.json");
    std::fs::create_dir_all(project.parent().unwrap()).unwrap();
    let stop =
        json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "./done.sh"}]}]}});
    std::fs::write(&project, stop.to_string()).unwrap();

    // `rein hooks list`: per hook a line `trust, event, matcher, command`, then its key and
    // hash, each on a line of its own.
    let dir = setup.work().to_str().unwrap().to_owned();
    let listed = setup
        .command(&["hooks", "list", "-C", &dir])
        .output()
        .unwrap();
    assert!(
        listed.status.success(),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    let text = String::from_utf8(listed.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let keyed = |command: &str| -> (String, String) {
        let at = lines
            .iter()
            .position(|l| l.ends_with(command))
            .unwrap_or_else(|| panic!("{command} not in {text}"));
        (
            lines[at + 1].trim().to_owned(),
            lines[at + 2].trim().to_owned(),
        )
    };
    let (guard_key, guard_hash) = keyed("./guard.sh");
    let (done_key, done_hash) = keyed("./done.sh");
    let (fail_key, _) = keyed("./on-fail.sh");
    assert!(guard_hash.starts_with("sha256:"), "{guard_hash}");

    let user = setup.user.path().to_str().unwrap().to_owned();
    let mut server = rein_test_support::app_server::AppServer::start_with_env(
        setup.home.path(),
        &[],
        &[("HOME", &user)],
    );
    server.initialize();
    // The harness checks the answer against Codex's `HooksListResponse` schema.
    let answer = server.call("hooks/list", json!({ "cwds": [dir], "threadId": null }));
    let user_file = setup.home.path().join("hooks.json");
    assert_eq!(
        answer["result"],
        json!({ "data": [{
            "cwd": dir,
            "hooks": [
                {
                    "key": guard_key, "eventName": "preToolUse", "matcher": "Bash",
                    "handlerType": "command", "command": "./guard.sh", "async": false,
                    "source": "user", "sourcePath": user_file.to_str().unwrap(),
                    "currentHash": guard_hash, "trustStatus": "trusted", "enabled": true,
                    "isManaged": false, "displayOrder": 0, "timeoutSec": 7
                },
                {
                    "key": done_key, "eventName": "stop", "matcher": null,
                    "handlerType": "command", "command": "./done.sh", "async": false,
                    "source": "project", "sourcePath": project.to_str().unwrap(),
                    "currentHash": done_hash, "trustStatus": "untrusted", "enabled": false,
                    "isManaged": false, "displayOrder": 2, "timeoutSec": 600
                }
            ],
            "warnings": answer["result"]["data"][0]["warnings"].clone(),
            "errors": []
        }] })
    );
    let warnings: Vec<String> =
        serde_json::from_value(answer["result"]["data"][0]["warnings"].clone()).unwrap();
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with(&fail_key) && w.contains("PostToolUseFailure")),
        "{warnings:?}"
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("is not trusted and does not run")),
        "{warnings:?}"
    );
}

#[test]
fn the_app_server_reports_each_hook_run_as_codex_does() {
    let setup = Setup::new(shell_call("rm -rf victim"));
    std::fs::create_dir(setup.work().join("victim")).unwrap();
    let guard = setup.script("guard.sh", "cat >/dev/null\necho 'not here' >&2\nexit 2");
    setup.user_hooks(pre_tool_use("Bash", &guard));
    let user = setup.user.path().to_str().unwrap().to_owned();
    let mut server = rein_test_support::app_server::AppServer::start_with_env(
        setup.home.path(),
        &[],
        &[("HOME", &user)],
    );
    server.initialize();
    let dir = setup.work().to_str().unwrap().to_owned();
    let thread = server.start_thread(json!({ "cwd": dir, "sandbox": "workspace-write" }));
    server.request(
        "turn/start",
        json!({ "threadId": thread, "input": [{ "type": "text", "text": "Go." }] }),
    );
    // The harness checks every notification against Codex's schema.
    let seen = server.until(|m| m["method"] == "turn/completed");
    let runs: Vec<&Value> = seen
        .iter()
        .filter(|m| m["method"] == "hook/started" || m["method"] == "hook/completed")
        .collect();
    assert_eq!(runs.len(), 2, "{seen:?}");
    assert!(
        setup.work().join("victim").exists(),
        "the call must not run"
    );
    let (started, completed) = (&runs[0]["params"], &runs[1]["params"]);
    assert_eq!(runs[0]["method"], "hook/started");
    let run = &started["run"];
    let user_file = setup.home.path().join("hooks.json");
    let summary = |status: &str, message: Value, entries: Value, ended: bool| {
        json!({
            "id": run["id"], "eventName": "preToolUse", "handlerType": "command",
            "executionMode": "sync", "scope": "turn", "source": "user",
            "sourcePath": user_file.to_str().unwrap(), "displayOrder": 1,
            "status": status, "statusMessage": message, "startedAt": run["startedAt"],
            "completedAt": if ended { completed["run"]["completedAt"].clone() } else { Value::Null },
            "durationMs": if ended { completed["run"]["durationMs"].clone() } else { Value::Null },
            "entries": entries
        })
    };
    assert_eq!(
        started,
        &json!({ "threadId": thread, "turnId": started["turnId"],
                 "run": summary("running", Value::Null, json!([]), false) })
    );
    assert!(started["turnId"].is_string(), "{started}");
    assert_eq!(
        completed,
        &json!({ "threadId": thread, "turnId": started["turnId"],
                 "run": summary("blocked", json!("not here"),
                                json!([{ "kind": "feedback", "text": "not here" }]), true) })
    );
    assert!(completed["run"]["durationMs"].as_i64().unwrap() >= 0);
}
