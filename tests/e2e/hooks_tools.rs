//! User hooks reach every kind of tool, through the real `rein exec`: the shell, a patch,
//! a tool of a real MCP server (`@modelcontextprotocol/server-everything`, installed by
//! scripts/test-setup.sh) and a sub-agent tool each run the `PostToolUse` hooks, and a
//! `PreToolUse` guard written as Claude Code's documentation shows blocks an edit of `.env`
//! through `apply_patch` and a call of the MCP tool.
#![allow(clippy::unwrap_used)]

use pretty_assertions::assert_eq;
use rein_test_support::exec::json_lines;
use rein_test_support::test_setup::installed;
use serde_json::{json, Value};

use crate::hooks::Setup;

fn call(id: &str, name: &str, arguments: Value) -> Value {
    json!({"tool_calls": [{"call_id": id, "name": name, "arguments": arguments}]})
}

/// `$REIN_HOME/config.toml` plus server-everything as a required MCP server (the turn
/// waits for it, so its tools are offered from the first request).
fn with_everything(setup: &Setup) {
    let entry = installed(
        "target/mcp-node/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    );
    let path = setup.home.path().join("config.toml");
    let mut config = std::fs::read_to_string(&path).unwrap();
    config.push_str(&format!(
        "\n[mcp_servers.everything]\ncommand = \"node\"\nargs = [{}, \"stdio\"]\nrequired = true\n",
        serde_json::to_string(&entry.to_string_lossy()).unwrap()
    ));
    std::fs::write(path, config).unwrap();
}

#[test]
#[cfg_attr(
    not(rein_has_node),
    ignore = "needs node and npm (scripts/test-setup.sh installs server-everything with them)"
)]
fn post_tool_use_runs_after_every_kind_of_tool_and_pre_tool_use_guards_patches_and_mcp() {
    let env_patch = "*** Begin Patch\n*** Add File: .env\n+API_KEY=stolen\n*** End Patch\n";
    let ok_patch = "*** Begin Patch\n*** Add File: notes.txt\n+fine\n*** End Patch\n";
    let setup = Setup::new(json!({"replies": [
        call("c_shell", "shell", json!({"command": "echo hi"})),
        call("c_patch", "apply_patch", json!({"input": ok_patch})),
        call("c_env", "apply_patch", json!({"input": env_patch})),
        call("c_echo", "mcp__everything__echo", json!({"message": "hello"})),
        call("c_sum", "mcp__everything__get_sum", json!({"a": 1, "b": 2})),
        call("c_agents", "list_agents", json!({})),
        {"text": "done"}
    ]}));
    with_everything(&setup);
    // As Claude Code's documentation writes a guard: read stdin, exit 2 to block.
    let guard = setup.script(
        "guard.sh",
        "input=$(cat)\ncase \"$input\" in *'.env'*) echo 'no edits of .env' >&2; exit 2;; *get_sum*) echo 'no sums' >&2; exit 2;; esac\nexit 0",
    );
    let post = setup.script("post.sh", "cat >> post.jsonl");
    setup.user_hooks(json!({
        "PreToolUse": [
            {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": guard.to_str().unwrap()}]},
            {"matcher": "mcp__.*", "hooks": [{"type": "command", "command": guard.to_str().unwrap()}]}
        ],
        "PostToolUse": [{"hooks": [{"type": "command", "command": post.to_str().unwrap()}]}]
    }));
    let (events, _) = setup.exec(&[]);
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    assert!(setup.work().join("notes.txt").exists());
    assert!(
        !setup.work().join(".env").exists(),
        "the guard holds for patches"
    );

    let text = std::fs::read_to_string(setup.work().join("post.jsonl")).unwrap();
    let seen: Vec<(String, String)> = json_lines(text.as_bytes())
        .iter()
        .map(|s| {
            (
                s["tool_name"].as_str().unwrap().to_owned(),
                s["tool_use_id"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected: Vec<(String, String)> = [
        ("Bash", "c_shell"),
        ("apply_patch", "c_patch"),
        ("mcp__everything__echo", "c_echo"),
        ("list_agents", "c_agents"),
    ]
    .iter()
    .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
    .collect();
    assert_eq!(seen, expected, "blocked calls never ran, so no PostToolUse");

    let requests = setup.mock.requests();
    let last = requests.last().unwrap().to_string();
    assert!(
        last.contains("blocked by a PreToolUse hook: no edits of .env"),
        "{last}"
    );
    assert!(
        last.contains("blocked by a PreToolUse hook: no sums"),
        "{last}"
    );
}

#[test]
fn rein_acp_shows_each_hook_run_as_a_card_with_why_a_call_was_blocked() {
    use rein_test_support::acp::{home_for, updates, Acp, MockModel};
    let model = MockModel::start(json!({"replies": [
        call("call_rm", "shell", json!({"command": "rm -rf victim"})),
        {"text": "Done."}
    ]}));
    let home = home_for(&model);
    let guard = home.path().join("guard.sh");
    rein_test_support::executables::write_executable(
        &guard,
        "#!/bin/sh\ncat >/dev/null\necho 'rm -rf is not allowed here' >&2\nexit 2\n",
    );
    std::fs::write(
        home.path().join("hooks.json"),
        json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": guard.to_str().unwrap()}]}]}})
        .to_string(),
    )
    .unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let cwd_path = cwd.path().canonicalize().unwrap();
    std::fs::create_dir(cwd_path.join("victim")).unwrap();
    let mut acp = Acp::start(home.path());
    acp.initialize();
    let session = acp.new_session(&cwd_path);
    let id = acp.prompt(&session, "Clean up.");
    let (seen, answer) = acp.answer_to(&id);
    assert_eq!(answer["result"], json!({ "stopReason": "end_turn" }));
    assert!(cwd_path.join("victim").exists());
    let hook_cards: Vec<Value> = updates(&seen)
        .into_iter()
        .filter(|u| {
            u["toolCallId"]
                .as_str()
                .is_some_and(|id| id.starts_with("hook-"))
        })
        .map(|mut u| {
            u.as_object_mut().unwrap().remove("toolCallId");
            u
        })
        .collect();
    assert_eq!(
        hook_cards,
        [
            json!({"sessionUpdate": "tool_call", "title": format!("PreToolUse hook: {}", guard.display()),
                   "status": "in_progress"}),
            json!({"sessionUpdate": "tool_call_update", "status": "completed",
                   "content": [{"type": "content", "content": {"type": "text",
                       "text": "Blocked: rm -rf is not allowed here"}}]}),
        ]
    );
    acp.finish();
}

#[test]
fn an_updated_input_the_tool_does_not_take_is_refused_naming_the_key() {
    let setup = Setup::new(crate::hooks::shell_call("echo original"));
    let rewrite = setup.script(
        "rewrite.sh",
        r#"cat >/dev/null
printf '{"hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": {"command": "echo rewritten", "run_as_root": true}}}'"#,
    );
    setup.user_hooks(crate::hooks::pre_tool_use("Bash", &rewrite));
    let (events, _) = setup.exec(&[]);
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    let commands: Vec<&Value> = events
        .iter()
        .filter(|e| e["item"]["type"] == "command_execution" && e["type"] == "item.completed")
        .collect();
    assert_eq!(commands.len(), 1, "{events:?}");
    assert_eq!(commands[0]["item"]["status"], "declined");
    let second = setup.mock.requests()[1].to_string();
    assert!(
        second.contains(
            "a PreToolUse hook rewrote this call's input into one the tool does not take: `input.run_as_root` is not a parameter of the tool"
        ),
        "{second}"
    );
}

/// `$REIN_HOME/hooks.json` of an ACP home, with one executable script `name`.
fn acp_hooks(home: &std::path::Path, name: &str, body: &str, hooks: impl Fn(&str) -> Value) {
    let script = home.join(name);
    rein_test_support::executables::write_executable(&script, &format!("#!/bin/sh\n{body}\n"));
    let table = hooks(script.to_str().unwrap());
    std::fs::write(
        home.join("hooks.json"),
        json!({ "hooks": table }).to_string(),
    )
    .unwrap();
}

#[test]
fn the_editors_files_under_rein_acp_reach_the_hooks() {
    use rein_test_support::acp::{home_for, requests, serve, session_with, MockModel};
    let patch = "*** Begin Patch\n*** Add File: b.txt\n+new\n*** End Patch\n";
    let model = MockModel::start(json!({"replies": [
        call("call_read", "read_file", json!({ "path": "notes.txt" })),
        call("call_patch", "apply_patch", json!({ "input": patch })),
        {"text": "Done."}
    ], "when_exhausted": "echo"}));
    let home = home_for(&model);
    let log = home.path().join("post.jsonl");
    acp_hooks(
        home.path(),
        "guard.sh",
        &format!("input=$(cat)\nprintf '%s\\n' \"$input\" >> {}\ncase \"$input\" in *PreToolUse*) echo 'no edits from here' >&2; exit 2;; esac", log.display()),
        |script| json!({
            "PreToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": script}]}],
            "PostToolUse": [{"hooks": [{"type": "command", "command": script}]}]
        }),
    );
    let cwd = tempfile::tempdir().unwrap();
    let cwd_path = cwd.path().canonicalize().unwrap();
    let files = json!({ "fs": { "readTextFile": true, "writeTextFile": true } });
    let (mut acp, session) = session_with(home.path(), &cwd_path, files);
    let id = acp.prompt(&session, "Read, then patch.");
    let (seen, answer) = serve(&mut acp, &id, |name, _| match name {
        "fs/read_text_file" => Ok(json!({ "content": "unsaved in the editor\n" })),
        "fs/write_text_file" => Ok(Value::Null),
        other => panic!("unexpected request {other}"),
    });
    assert_eq!(answer["result"], json!({ "stopReason": "end_turn" }));
    let asked: Vec<Value> = requests(&seen)
        .iter()
        .map(|r| r["method"].clone())
        .collect();
    assert_eq!(
        asked,
        [json!("fs/read_text_file")],
        "the blocked patch never reached the editor"
    );
    let text = std::fs::read_to_string(&log).unwrap();
    let seen_by_hooks: Vec<(String, String)> = json_lines(text.as_bytes())
        .iter()
        .map(|s| {
            (
                s["hook_event_name"].as_str().unwrap().to_owned(),
                s["tool_name"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        seen_by_hooks,
        [
            ("PostToolUse".to_owned(), "read_file".to_owned()),
            ("PreToolUse".to_owned(), "apply_patch".to_owned()),
        ]
    );
    let post = &json_lines(text.as_bytes())[0];
    let output = post["tool_response"]["output"].as_str().unwrap();
    assert!(
        output.contains("unsaved in the editor"),
        "the editor's text: {output}"
    );
    acp.finish();
}
