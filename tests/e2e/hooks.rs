//! User hooks through the real `rein exec` against `rein mock-model`: hook files in the
//! shapes Claude Code and Codex document, `PreToolUse` blocking (exit 2, a deny decision, a
//! crash), rewriting (`updatedInput`, judged again by the policy), `PostToolUse` seeing the
//! output, timeouts killing the hook's process group, project hooks running only once
//! trusted, and every run recorded in the rollout.
#![allow(clippy::unwrap_used)]

use rein_test_support::exec as support;
use rein_test_support::{processes, PATIENCE};

use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use support::{json_lines, rein_in, Home, MockModel};

/// A home for the mock model, a project directory, and a `HOME` of its own (so the
/// machine's `~/.codex` or `~/.claude` never take part).
pub(crate) struct Setup {
    pub(crate) mock: MockModel,
    pub(crate) home: Home,
    work: tempfile::TempDir,
    pub(crate) user: tempfile::TempDir,
}

impl Setup {
    pub(crate) fn new(script: Value) -> Self {
        let mock = MockModel::start(script);
        let home = Home::new(&mock, "responses");
        Self {
            mock,
            home,
            work: tempfile::tempdir().unwrap(),
            user: tempfile::tempdir().unwrap(),
        }
    }

    pub(crate) fn work(&self) -> &Path {
        self.work.path()
    }

    /// A hook script `name` in the project directory (an executable `sh` file).
    pub(crate) fn script(&self, name: &str, body: &str) -> PathBuf {
        let path = self.work().join(name);
        rein_test_support::executables::write_executable(&path, &format!("#!/bin/sh\n{body}\n"));
        path
    }

    /// `$REIN_HOME/hooks.json` (the user's own: trusted).
    pub(crate) fn user_hooks(&self, hooks: Value) {
        std::fs::write(
            self.home.path().join("hooks.json"),
            json!({ "hooks": hooks }).to_string(),
        )
        .unwrap();
    }

    /// A config whose model `child` (what `spawn_agent` asks for) is served by `child`.
    pub(crate) fn with_child_model(&self, child: &MockModel) {
        let config = format!(
            "model = \"mock\"\nmodel_provider = \"mock\"\nprofile = \"tree\"\n\n[profiles.tree]\n\
             fallback_model = \"child\"\nfallback_provider = \"mockchild\"\n\n\
             [model_providers.mock]\nbase_url = \"{}\"\nwire_api = \"responses\"\nenv_key = \"MOCK_API_KEY\"\n\n\
             [model_providers.mockchild]\nbase_url = \"{}\"\nwire_api = \"responses\"\nenv_key = \"MOCK_API_KEY\"\n",
            self.mock.base_url, child.base_url
        );
        std::fs::write(self.home.path().join("config.toml"), config).unwrap();
    }

    pub(crate) fn command(&self, args: &[&str]) -> std::process::Command {
        let mut cmd = rein_in(self.home.path(), args);
        cmd.env("HOME", self.user.path());
        cmd
    }

    /// `rein exec --json` in the project; it must succeed. Returns its JSON lines and stderr.
    pub(crate) fn exec(&self, extra: &[&str]) -> (Vec<Value>, String) {
        let dir = self.work().to_str().unwrap().to_owned();
        let mut args = vec!["exec", "--json", "-s", "workspace-write", "-C", &dir];
        args.extend_from_slice(extra);
        args.push("Go.");
        let out = self.command(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{stderr}");
        (json_lines(&out.stdout), stderr)
    }

    /// What the model was sent in its second request (after the tool call).
    fn second_request(&self) -> String {
        let requests = self.mock.requests();
        assert_eq!(requests.len(), 2, "{requests:?}");
        requests[1].to_string()
    }

    /// Every `hook_completed` event of every rollout of the home.
    pub(crate) fn hook_runs(&self) -> Vec<Value> {
        let mut runs = Vec::new();
        let mut dirs = vec![self.home.path().join("sessions")];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "jsonl") {
                    let text = std::fs::read_to_string(&path).unwrap();
                    runs.extend(json_lines(text.as_bytes()).into_iter().filter_map(|line| {
                        let msg = find_msg(&line)?;
                        (msg["type"] == "hook_started" || msg["type"] == "hook_completed")
                            .then_some(msg)
                    }));
                }
            }
        }
        runs
    }
}

/// The event message of a rollout line, wherever the line keeps it.
fn find_msg(line: &Value) -> Option<Value> {
    if line
        .get("type")
        .and_then(Value::as_str)
        .is_some_and(|t| t.starts_with("hook_"))
    {
        return Some(line.clone());
    }
    match line {
        Value::Object(map) => map.values().find_map(find_msg),
        _ => None,
    }
}

pub(crate) fn shell_call(command: &str) -> Value {
    json!({"replies": [
        {"tool_calls": [{"call_id": "call_1", "name": "shell", "arguments": {"command": command}}]},
        {"text": "done"}
    ]})
}

pub(crate) fn pre_tool_use(matcher: &str, command: &Path) -> Value {
    json!({"PreToolUse": [{"matcher": matcher, "hooks": [
        {"type": "command", "command": command.to_str().unwrap()}
    ]}]})
}

/// The command item of the call.
fn command_item(events: &[Value]) -> Value {
    events
        .iter()
        .rev()
        .find(|e| e["item"]["type"] == "command_execution")
        .map(|e| e["item"].clone())
        .unwrap_or(Value::Null)
}

pub(crate) fn error_items(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["item"]["type"] == "error")
        .map(|e| e["item"]["message"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn exit_2_blocks_rm_rf_and_the_model_reads_the_reason() {
    let setup = Setup::new(shell_call("rm -rf victim"));
    std::fs::create_dir(setup.work().join("victim")).unwrap();
    // As Claude Code's documentation writes a guard: read stdin, exit 2 to block.
    let guard = setup.script(
        "guard.sh",
        "input=$(cat)\ncase \"$input\" in *'rm -rf'*) echo 'rm -rf is not allowed here' >&2; exit 2;; esac\nexit 0",
    );
    setup.user_hooks(pre_tool_use("Bash", &guard));
    let (events, _) = setup.exec(&[]);
    assert!(
        setup.work().join("victim").exists(),
        "the call must not run"
    );
    assert_eq!(command_item(&events)["status"], "declined", "{events:?}");
    assert_eq!(
        error_items(&events),
        ["hook blocked: rm -rf is not allowed here"]
    );
    assert!(
        setup
            .second_request()
            .contains("blocked by a PreToolUse hook: rm -rf is not allowed here"),
        "the model reads why"
    );
    let runs = setup.hook_runs();
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(runs[0]["event_name"], "PreToolUse");
    assert_eq!(runs[0]["source"], "user");
    assert_eq!(runs[0]["call_id"], "call_1");
    assert_eq!(runs[1]["status"], "blocked");
    assert_eq!(runs[1]["exit_code"], 2);
    assert_eq!(runs[1]["message"], "rm -rf is not allowed here");
}

#[test]
fn a_deny_decision_blocks_the_call_and_a_non_matching_hook_does_not_run() {
    let setup = Setup::new(shell_call("touch made.txt"));
    let deny = setup.script(
        "deny.sh",
        r#"cat >/dev/null
printf '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "no new files today"}}'"#,
    );
    let other = setup.script("other.sh", "touch other-ran.txt");
    let mut hooks = pre_tool_use("Bash", &deny);
    hooks["PreToolUse"]
        .as_array_mut()
        .unwrap()
        .push(json!({"matcher": "Read|Edit|Write", "hooks": [
            {"type": "command", "command": other.to_str().unwrap()}]}));
    setup.user_hooks(hooks);
    let (events, _) = setup.exec(&[]);
    assert!(!setup.work().join("made.txt").exists());
    assert!(!setup.work().join("other-ran.txt").exists());
    assert_eq!(command_item(&events)["status"], "declined");
    assert!(setup
        .second_request()
        .contains("blocked by a PreToolUse hook: no new files today"));
}

#[test]
fn a_crashing_hook_blocks_by_default_and_on_error_allow_lets_the_call_run() {
    for (on_error, runs) in [(None, false), (Some("allow"), true)] {
        let setup = Setup::new(shell_call("touch made.txt"));
        let mut handler =
            json!({"type": "command", "command": "jq-that-is-not-installed .tool_name"});
        if let Some(on_error) = on_error {
            handler["on_error"] = json!(on_error);
        }
        setup.user_hooks(json!({"PreToolUse": [{"matcher": "*", "hooks": [handler]}]}));
        let (events, _) = setup.exec(&[]);
        assert_eq!(setup.work().join("made.txt").exists(), runs, "{on_error:?}");
        let errors = error_items(&events);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0].starts_with("hook failed: it exited with code 127"),
            "{errors:?}"
        );
    }
}

#[test]
fn updated_input_rewrites_the_call_and_post_tool_use_sees_the_output() {
    let setup = Setup::new(shell_call("echo original"));
    let rewrite = setup.script(
        "rewrite.sh",
        r#"cat >/dev/null
printf '{"hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": {"command": "echo rewritten"}}}'"#,
    );
    let post = setup.script(
        "post.sh",
        r#"cat > post-input.json
printf '{"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "the formatter ran"}}'"#,
    );
    let mut hooks = pre_tool_use("Bash", &rewrite);
    hooks["PostToolUse"] =
        json!([{"hooks": [{"type": "command", "command": post.to_str().unwrap()}]}]);
    setup.user_hooks(hooks);
    let (events, _) = setup.exec(&[]);
    let item = command_item(&events);
    assert_eq!(item["command"], "echo rewritten", "{item}");
    assert_eq!(item["aggregated_output"], "rewritten\n");
    let seen: Value = serde_json::from_str(
        &std::fs::read_to_string(setup.work().join("post-input.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(seen["hook_event_name"], "PostToolUse");
    assert_eq!(seen["tool_name"], "Bash");
    assert_eq!(seen["tool_use_id"], "call_1");
    assert_eq!(seen["tool_input"], json!({"command": "echo rewritten"}));
    assert_eq!(seen["tool_response"]["output"], "rewritten\n");
    assert_eq!(seen["cwd"], setup.work().to_str().unwrap());
    assert!(seen["transcript_path"]
        .as_str()
        .unwrap()
        .ends_with(".jsonl"));
    let request = setup.second_request();
    assert!(
        request.contains("[PostToolUse hook] the formatter ran"),
        "{request}"
    );
}

#[test]
fn updated_input_that_writes_outside_the_writable_roots_is_refused_by_the_policy() {
    // Not under the temp dir, which workspace-write lets commands write to.
    let outside = rein_test_support::dir_outside_the_temp_dir(env!("CARGO_TARGET_TMPDIR").as_ref());
    let target = outside.path().join("escaped.txt");
    let patch = "*** Begin Patch\n*** Add File: inside.txt\n+fine\n*** End Patch\n";
    let setup = Setup::new(json!({"replies": [
        {"tool_calls": [{"call_id": "call_1", "name": "apply_patch", "arguments": {"input": patch}}]},
        {"text": "done"}
    ]}));
    let evil = format!(
        "*** Begin Patch\n*** Add File: {}\n+escaped\n*** End Patch\n",
        target.display()
    );
    let output = json!({"hookSpecificOutput": {"permissionDecision": "allow",
        "updatedInput": {"input": evil}}});
    let widen = setup.script(
        "widen.sh",
        &format!("cat >/dev/null\ncat <<'EOF'\n{output}\nEOF"),
    );
    // Claude's matcher for edits catches rein's apply_patch.
    setup.user_hooks(pre_tool_use("Edit|Write", &widen));
    let (events, _) = setup.exec(&[]);
    assert!(
        !target.exists(),
        "a hook must not widen what the policy allows"
    );
    assert!(
        !setup.work().join("inside.txt").exists(),
        "the rewritten call ran, not the original"
    );
    let change = events
        .iter()
        .rev()
        .find(|e| e["item"]["type"] == "file_change")
        .unwrap();
    assert_eq!(change["item"]["status"], "failed", "{change}");
}

#[test]
fn a_hook_that_hangs_is_killed_with_its_process_group_at_its_timeout() {
    let marker = format!("3000.{}", std::process::id());
    let setup = Setup::new(shell_call("echo hi"));
    // A child in the background and the hook waiting on it: both must go.
    let hang = setup.script("hang.sh", &format!("sleep {marker} &\nwait"));
    setup.user_hooks(json!({"PreToolUse": [{"hooks": [
        {"type": "command", "command": hang.to_str().unwrap(), "timeout": 1}]}]}));
    let (events, _) = setup.exec(&[]);
    let errors = error_items(&events);
    assert_eq!(
        errors,
        ["hook failed: it timed out after 1 s and its process group was killed"]
    );
    assert_eq!(command_item(&events)["status"], "declined");
    assert!(
        processes::all_gone_within(&marker, PATIENCE),
        "the hook's sleep is left"
    );
}

#[test]
fn a_hook_flooding_its_output_is_bounded_and_its_verdict_still_counts() {
    let setup = Setup::new(shell_call("touch made.txt"));
    // 64 MiB on stdout, then a block on stderr.
    let flood = setup.script(
        "flood.sh",
        "cat >/dev/null\nhead -c 67108864 /dev/zero | tr '\\0' 'x'\necho flooded >&2\nexit 2",
    );
    setup.user_hooks(pre_tool_use("", &flood));
    let (events, _) = setup.exec(&[]);
    assert!(!setup.work().join("made.txt").exists());
    assert_eq!(error_items(&events), ["hook blocked: flooded"]);
}

#[test]
fn malformed_hook_output_is_a_clear_failure_and_the_turn_goes_on() {
    let setup = Setup::new(shell_call("echo hi"));
    let bad = setup.script("bad.sh", "cat >/dev/null\necho '{\"hookSpecificOutput\": '");
    setup.user_hooks(pre_tool_use("Bash", &bad));
    let (events, _) = setup.exec(&[]);
    let errors = error_items(&events);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].starts_with("hook failed: its output is not valid JSON"),
        "{errors:?}"
    );
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    assert!(setup
        .second_request()
        .contains("its output is not valid JSON"));
}

#[test]
fn an_untrusted_project_hook_is_skipped_and_reported_until_trusted_and_again_once_changed() {
    let setup = Setup::new(json!({"replies": [
        {"tool_calls": [{"call_id": "call_1", "name": "shell", "arguments": {"command": "echo one"}}]},
        {"text": "first"},
        {"tool_calls": [{"call_id": "call_2", "name": "shell", "arguments": {"command": "echo two"}}]},
        {"text": "second"},
        {"tool_calls": [{"call_id": "call_3", "name": "shell", "arguments": {"command": "echo three"}}]},
        {"text": "third"}
    ]}));
    let hooks_file = setup.work().join(".rein").join("hooks.json");
    std::fs::create_dir_all(hooks_file.parent().unwrap()).unwrap();
    let write_hooks = |marker: &str| {
        let hooks = json!({"hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": format!("touch \"$CLAUDE_PROJECT_DIR/{marker}\"")}]}]}});
        std::fs::write(&hooks_file, hooks.to_string()).unwrap();
    };
    write_hooks("ran-1");
    let (events, _) = setup.exec(&[]);
    assert!(
        !setup.work().join("ran-1").exists(),
        "an untrusted hook must not run"
    );
    let warnings = error_items(&events);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("is not trusted and does not run"),
        "{warnings:?}"
    );
    assert!(warnings[0].contains("rein hooks trust"), "{warnings:?}");

    let dir = setup.work().to_str().unwrap().to_owned();
    let trusted = setup
        .command(&["hooks", "trust", "-C", &dir])
        .output()
        .unwrap();
    assert!(
        trusted.status.success(),
        "{}",
        String::from_utf8_lossy(&trusted.stderr)
    );
    let (events, _) = setup.exec(&[]);
    assert!(setup.work().join("ran-1").exists(), "a trusted hook runs");
    assert_eq!(error_items(&events), Vec::<String>::new());

    write_hooks("ran-2");
    let (events, _) = setup.exec(&[]);
    assert!(
        !setup.work().join("ran-2").exists(),
        "a changed hook is untrusted again"
    );
    let warnings = error_items(&events);
    assert!(
        warnings[0].contains("changed since it was trusted"),
        "{warnings:?}"
    );
}

#[test]
fn codex_and_claude_hook_files_load_unchanged() {
    let setup = Setup::new(shell_call("echo hi"));
    // Codex's config.toml `[hooks]` table, in TOML.
    let config = setup.home.path().join("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(
        "\n[hooks]\nread_claude_settings = true\n\n[[hooks.PostToolUse]]\nmatcher = \"^Bash$\"\n\n\
         [[hooks.PostToolUse.hooks]]\ntype = \"command\"\ncommand = \"touch from-toml\"\ntimeout_sec = 30\n",
    );
    std::fs::write(&config, text).unwrap();
    // Claude Code's `~/.claude/settings.json`, with keys rein does not use.
    let claude = setup.user.path().join(".claude");
    std::fs::create_dir_all(&claude).unwrap();
    std::fs::write(
        claude.join("settings.json"),
        json!({
            "permissions": {"allow": ["Bash(npm run lint)"]},
            "hooks": {
                "PostToolUse": [{"matcher": "Write|Edit|Bash", "hooks": [
                    {"type": "command", "command": "touch \"$CLAUDE_PROJECT_DIR/from-claude\"", "timeout": 30}]}],
                "Notification": [{"hooks": [{"type": "command", "command": "true"}]}]
            }
        })
        .to_string(),
    )
    .unwrap();
    let (events, _) = setup.exec(&[]);
    assert!(setup.work().join("from-toml").exists());
    assert!(setup.work().join("from-claude").exists());
    let warnings = error_items(&events);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("hooks of `Notification` do not run"),
        "never silently dropped: {warnings:?}"
    );
}

#[test]
fn a_sub_agents_tool_calls_reach_the_parents_hooks() {
    let call = |id: &str, name: &str, arguments: Value| json!({"tool_calls": [{"call_id": id, "name": name, "arguments": arguments}]});
    let setup = Setup::new(json!({"replies": [
        call("call_spawn", "spawn_agent", json!({"message": "Make a file.", "model": "child"})),
        call("call_wait", "wait_agent", json!({"targets": ["Ada"], "timeout_ms": 60000})),
        {"text": "Parent done."}
    ]}));
    let child = MockModel::start(json!({"replies": [
        call("call_child", "shell", json!({"command": "touch child-ran.txt"})),
        {"text": "Child done."}
    ]}));
    setup.with_child_model(&child);
    // Logs every call it sees; blocks the child's command.
    let guard = setup.script(
        "guard.sh",
        "input=$(cat)\necho \"$input\" >> hooks.log\ncase \"$input\" in *child-ran*) echo 'not in a sub-agent either' >&2; exit 2;; esac",
    );
    setup.user_hooks(pre_tool_use("*", &guard));
    let (events, _) = setup.exec(&[]);
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    assert!(
        !setup.work().join("child-ran.txt").exists(),
        "the hook holds in the sub-agent"
    );
    let log = std::fs::read_to_string(setup.work().join("hooks.log")).unwrap();
    let seen: Vec<Value> = json_lines(log.as_bytes());
    let tools: Vec<&str> = seen
        .iter()
        .map(|s| s["tool_name"].as_str().unwrap())
        .collect();
    assert!(tools.contains(&"spawn_agent"), "{tools:?}");
    assert!(tools.contains(&"Bash"), "{tools:?}");
    let requests = child.requests();
    assert!(
        requests[1]
            .to_string()
            .contains("not in a sub-agent either"),
        "the child's model reads why"
    );
}
