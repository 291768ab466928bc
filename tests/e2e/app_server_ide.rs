//! The methods an IDE or the Codex TUI uses beside threads, over a real `rein app-server`
//! (every message checked against Codex's schema by the harness): `fuzzyFileSearch` (the
//! `@` picker; `.gitignore` honoured), `config/value/write` and `config/batchWrite` (the
//! server's config.toml edited with its comments kept; a value rein-config refuses is
//! refused and nothing is written), `command/exec` (under the configured approval and
//! sandbox policy: narrowed, never widened; refused where the policy would ask) and
//! `thread/shellCommand` (the user's command, through the thread's tools and policies).

use std::path::Path;

use rein_test_support::app_server::{home_for, AppServer, MockModel};
use serde_json::{json, Value};

fn server_with(config_extra: &str) -> (MockModel, tempfile::TempDir, AppServer) {
    let model = MockModel::start(json!({ "replies": [], "when_exhausted": "echo" }));
    let home = home_for(&model);
    let path = home.path().join("config.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        format!("# the user's own note\n{config_extra}{text}"),
    )
    .unwrap();
    let mut server = AppServer::start(home.path(), &[]);
    assert!(server.initialize().get("result").is_some());
    (model, home, server)
}

fn error(answer: &Value) -> (i64, Value) {
    let e = &answer["error"];
    assert!(e.is_object(), "not an error: {answer}");
    (e["code"].as_i64().unwrap(), e["data"]["field"].clone())
}

fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn fuzzy_file_search_ranks_files_and_skips_what_git_ignores() {
    let (_model, _home, mut server) = server_with("");
    let root = tempfile::tempdir().unwrap();
    write(root.path(), ".gitignore", "target/\n*.log\n");
    write(root.path(), "src/main.rs", "");
    write(root.path(), "src/lib.rs", "");
    write(root.path(), "target/debug/main.rs", "");
    write(root.path(), "main.log", "");
    let root_text = root.path().display().to_string();

    let answer = server.call(
        "fuzzyFileSearch",
        json!({"query": "main", "roots": [root_text]}),
    );
    let files = answer["result"]["files"].as_array().unwrap().clone();
    let paths: Vec<&str> = files.iter().map(|f| f["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["src/main.rs"], "{answer:#}");
    let hit = &files[0];
    assert_eq!(hit["root"], root_text.as_str());
    assert_eq!(hit["file_name"], "main.rs");
    assert_eq!(hit["match_type"], "file");
    assert!(hit["score"].as_u64().unwrap() > 0);
    // The positions highlight the query's characters in the path.
    let chars: Vec<char> = "src/main.rs".chars().collect();
    let picked: String = hit["indices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| chars[i.as_u64().unwrap() as usize])
        .collect();
    assert_eq!(picked, "main");

    let dirs = server.call(
        "fuzzyFileSearch",
        json!({"query": "src", "roots": [root_text]}),
    );
    assert_eq!(
        dirs["result"]["files"][0]["match_type"], "directory",
        "{dirs:#}"
    );
    let blank = server.call(
        "fuzzyFileSearch",
        json!({"query": " ", "roots": [root_text]}),
    );
    assert_eq!(blank["result"]["files"], json!([]));
    let relative = server.call("fuzzyFileSearch", json!({"query": "a", "roots": ["src"]}));
    assert_eq!(error(&relative), (-32602, json!("roots[0]")));
}

#[test]
fn config_writes_keep_comments_and_refuse_what_rein_config_refuses() {
    let (_model, home, mut server) = server_with("");
    let path = home.path().join("config.toml");
    let read = || std::fs::read_to_string(&path).unwrap();

    let ok = server.call(
        "config/value/write",
        json!({"keyPath": "model_context_window", "value": 123456, "mergeStrategy": "replace"}),
    );
    let result = &ok["result"];
    assert_eq!(result["status"], "ok", "{ok:#}");
    let canonical = std::fs::canonicalize(&path).unwrap();
    assert_eq!(
        std::fs::canonicalize(result["filePath"].as_str().unwrap()).unwrap(),
        canonical
    );
    let after = read();
    assert!(after.starts_with("# the user's own note\n"), "{after}");
    assert!(after.contains("model_context_window = 123456"), "{after}");
    let version = result["version"].as_str().unwrap().to_owned();

    // A value rein-config refuses: an error naming the value, and the file as it was.
    let bad = server.call(
        "config/value/write",
        json!({"keyPath": "approval_policy", "value": "sometimes", "mergeStrategy": "replace"}),
    );
    assert_eq!(error(&bad), (-32602, json!("value")), "{bad:#}");
    assert_eq!(read(), after);
    // One bad edit of a batch: none of it is written.
    let batch_bad = server.call(
        "config/batchWrite",
        json!({"edits": [
            {"keyPath": "profiles.fast.model", "value": "gpt-5-mini", "mergeStrategy": "replace"},
            {"keyPath": "sandbox_mode", "value": "everything", "mergeStrategy": "replace"},
        ]}),
    );
    assert_eq!(
        error(&batch_bad),
        (-32602, json!("edits.value")),
        "{batch_bad:#}"
    );
    assert_eq!(read(), after);
    // Another file, or a stale version, is refused too.
    let other = server.call(
        "config/value/write",
        json!({"keyPath": "model", "value": "x", "mergeStrategy": "replace",
               "filePath": "/etc/rein-elsewhere.toml"}),
    );
    assert_eq!(error(&other), (-32602, json!("filePath")));
    let stale = server.call(
        "config/value/write",
        json!({"keyPath": "model", "value": "x", "mergeStrategy": "replace",
               "expectedVersion": "sha256:0"}),
    );
    assert_eq!(error(&stale).0, -32600);
    assert!(stale["error"]["message"]
        .as_str()
        .unwrap()
        .contains("configVersionConflict"));
    assert_eq!(read(), after);

    // A batch at the current version, merging a table key by key.
    let batch = server.call(
        "config/batchWrite",
        json!({"expectedVersion": version, "edits": [
            {"keyPath": "profiles.fast", "value": {"model": "gpt-5-mini"}, "mergeStrategy": "upsert"},
            {"keyPath": "profiles.fast", "value": {"model_provider": "mock"}, "mergeStrategy": "upsert"},
            {"keyPath": "model_context_window", "value": null, "mergeStrategy": "replace"},
        ]}),
    );
    assert_eq!(batch["result"]["status"], "ok", "{batch:#}");
    let last = read();
    assert!(last.starts_with("# the user's own note\n"), "{last}");
    let table: toml::Table = last.parse().unwrap();
    assert_eq!(
        table["profiles"]["fast"]["model"].as_str(),
        Some("gpt-5-mini")
    );
    assert_eq!(
        table["profiles"]["fast"]["model_provider"].as_str(),
        Some("mock")
    );
    assert!(!table.contains_key("model_context_window"), "{last}");
}

#[test]
fn command_exec_runs_under_the_configured_policies_and_never_widens_them() {
    let (_model, _home, mut server) = server_with("");
    let cwd = tempfile::tempdir().unwrap();
    let cwd_text = cwd.path().display().to_string();
    let ran = server.call(
        "command/exec",
        json!({"command": ["sh", "-c", "echo out; echo err >&2; exit 3"], "cwd": cwd_text}),
    );
    let result = &ran["result"];
    assert_eq!(result["exitCode"], 3, "{ran:#}");
    let stdout = result["stdout"].as_str().unwrap();
    assert!(stdout.contains("out") && stdout.contains("err"), "{ran:#}");

    // Narrowed to read-only, the command cannot write its own directory.
    let marker = cwd.path().join("written");
    let narrowed = server.call(
        "command/exec",
        json!({"command": ["sh", "-c", "echo x > written"], "cwd": cwd_text,
               "sandboxPolicy": {"type": "readOnly"}}),
    );
    assert_ne!(narrowed["result"]["exitCode"], 0, "{narrowed:#}");
    assert!(
        !marker.exists(),
        "the read-only sandbox let a write through"
    );
    let widened = server.call(
        "command/exec",
        json!({"command": ["true"], "sandboxPolicy": {"type": "dangerFullAccess"}}),
    );
    assert_eq!(
        error(&widened),
        (-32602, json!("sandboxPolicy")),
        "{widened:#}"
    );
    let streaming = server.call("command/exec", json!({"command": ["true"], "tty": true}));
    assert_eq!(error(&streaming), (-32602, json!("tty")));

    // Where the policy asks before a command, there is no turn to ask on: refused.
    let (_model, _home, mut strict) = server_with("approval_policy = \"untrusted\"\n");
    let asked = strict.call(
        "command/exec",
        json!({"command": ["sh", "-c", "echo x > written"], "cwd": cwd_text}),
    );
    assert_eq!(error(&asked).0, -32600, "{asked:#}");
    assert!(!marker.exists(), "a command the policy asks about ran");
}

/// The `commandExecution` item of the user's command among `seen`, once completed.
fn user_command(seen: &[Value]) -> Value {
    seen.iter()
        .filter(|m| method(m) == "item/completed")
        .map(|m| m["params"]["item"].clone())
        .find(|item| item["type"] == "commandExecution")
        .unwrap_or_else(|| panic!("no command item: {seen:#?}"))
}

fn method(m: &Value) -> &str {
    m.get("method").and_then(Value::as_str).unwrap_or("")
}

#[test]
fn a_shell_command_runs_through_the_threads_tools_and_policies() {
    let (model, _home, mut server) = server_with("");
    let cwd = tempfile::tempdir().unwrap();
    let thread = server.start_thread(json!({ "cwd": cwd.path() }));
    let answer = server.call(
        "thread/shellCommand",
        json!({"threadId": thread, "command": "echo hello-from-user | tr a-z A-Z"}),
    );
    assert_eq!(answer["result"], json!({}), "{answer:#}");
    let seen = server.until(|m| method(m) == "turn/completed");
    let item = user_command(&seen);
    assert_eq!(item["source"], "userShell", "{item:#}");
    assert_eq!(item["exitCode"], 0, "{item:#}");
    assert!(item["aggregatedOutput"]
        .as_str()
        .unwrap()
        .contains("HELLO-FROM-USER"));
    assert_eq!(
        model.requests().len(),
        0,
        "the user's command asks no model"
    );
    // The next turn's model reads what the user ran and what it printed.
    server.turn(&thread, "what did I run?");
    let sent = model.requests().last().unwrap().to_string();
    assert!(sent.contains("HELLO-FROM-USER"), "{sent}");

    // A read-only thread's sandbox holds for the user's command too (Codex would run it
    // unsandboxed).
    let ro = server.start_thread(json!({
        "cwd": cwd.path(), "sandbox": "read-only", "approvalPolicy": "never"
    }));
    server.call(
        "thread/shellCommand",
        json!({"threadId": ro, "command": "echo x > written"}),
    );
    let seen = server.until(|m| method(m) == "turn/completed");
    assert_ne!(user_command(&seen)["exitCode"], 0, "{seen:#?}");
    assert!(
        !cwd.path().join("written").exists(),
        "the read-only sandbox let a write through"
    );

    // Under `untrusted`, the user's command is asked about like the model's; declined, it
    // does not run.
    let strict = server.start_thread(json!({ "cwd": cwd.path(), "approvalPolicy": "untrusted" }));
    server.call(
        "thread/shellCommand",
        json!({"threadId": strict, "command": "echo x > written"}),
    );
    let asked = server.until(|m| method(m) == "item/commandExecution/requestApproval");
    let request = asked.last().unwrap();
    server.send(&json!({ "id": request["id"], "result": { "decision": "decline" } }));
    let seen = server.until(|m| method(m) == "turn/completed");
    assert_eq!(user_command(&seen)["status"], "declined", "{seen:#?}");
    assert!(
        !cwd.path().join("written").exists(),
        "a declined command ran"
    );

    let empty = server.call(
        "thread/shellCommand",
        json!({"threadId": thread, "command": " "}),
    );
    assert_eq!(error(&empty), (-32602, json!("command")));
}
