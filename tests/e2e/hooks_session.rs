//! User hooks at a session's moments and at approvals, through the real `rein exec`
//! against `rein mock-model`: `SessionStart` adding context (once per process, `startup`
//! then `resume`), `SessionEnd` at exit, `PreCompact` blocking a compaction and
//! `PostCompact` reading its summary, `PermissionRequest` answering the approval the policy
//! asks for, a `PreToolUse` `ask` forcing one, `SubagentStart` / `SubagentStop` for a
//! sub-agent, `[hooks] max_continuations`, and the turn's own moments: `Stop` continuing a
//! turn at most three times and `UserPromptSubmit` adding context or blocking the prompt.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use pretty_assertions::assert_eq;
use rein_test_support::exec::{json_lines, MockModel};
use serde_json::{json, Value};

use crate::hooks::{error_items, shell_call, Setup};

/// A hook table of one `event` whose only hook runs `command`, for `matcher`.
fn hook(event: &str, matcher: &str, command: &Path) -> Value {
    json!({event: [{"matcher": matcher, "hooks": [
        {"type": "command", "command": command.to_str().unwrap()}
    ]}]})
}

/// Several hook tables in one `hooks` object.
fn tables(parts: &[Value]) -> Value {
    let mut all = serde_json::Map::new();
    for part in parts {
        all.extend(part.as_object().unwrap().clone());
    }
    Value::Object(all)
}

/// The JSON lines a logging hook appended to `name` in the project.
fn logged(setup: &Setup, name: &str) -> Vec<Value> {
    match std::fs::read_to_string(setup.work().join(name)) {
        Ok(text) => json_lines(text.as_bytes()),
        Err(_) => Vec::new(),
    }
}

/// A line added to `$REIN_HOME/config.toml`: top-level keys go first (the file ends in a
/// table), tables at the end.
fn configure(setup: &Setup, top: &str, tail: &str) {
    let path = setup.home.path().join("config.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{top}\n{text}\n{tail}\n")).unwrap();
}

#[test]
fn session_start_adds_context_once_per_process_and_session_end_runs_at_exit() {
    let setup = Setup::new(json!({"replies": [{"text": "first"}, {"text": "second"}]}));
    let start = setup.script(
        "start.sh",
        "cat >> start.jsonl\necho\necho 'Use tabs in this project.'",
    );
    let end = setup.script("end.sh", "cat >> end.jsonl");
    setup.user_hooks(tables(&[
        hook("SessionStart", "startup|resume", &start),
        hook("SessionEnd", "", &end),
    ]));
    let (events, _) = setup.exec(&[]);
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    let dir = setup.work().to_str().unwrap().to_owned();
    let out = setup
        .command(&["exec", "--json", "-C", &dir, "resume", "--last", "Again."])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let requests = setup.mock.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    for request in &requests {
        assert_eq!(
            request
                .to_string()
                .matches("Use tabs in this project.")
                .count(),
            // The first process added it once; the resumed one once more, after it.
            if request == &requests[0] { 1 } else { 2 },
            "{request}"
        );
    }
    let starts = logged(&setup, "start.jsonl");
    let sources: Vec<(&str, &str)> = starts
        .iter()
        .map(|s| {
            (
                s["hook_event_name"].as_str().unwrap(),
                s["source"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        sources,
        [("SessionStart", "startup"), ("SessionStart", "resume")]
    );
    // The resumed session's hooks are told where its rollout is, as the new one's were.
    let transcripts: Vec<&str> = starts
        .iter()
        .map(|s| s["transcript_path"].as_str().unwrap())
        .collect();
    assert_eq!(transcripts[0], transcripts[1]);
    assert!(Path::new(transcripts[0]).exists(), "{transcripts:?}");
    let ends = logged(&setup, "end.jsonl");
    assert_eq!(ends.len(), 2, "one SessionEnd per process: {ends:?}");
    assert_eq!(ends[0]["hook_event_name"], "SessionEnd");
    assert_eq!(ends[0]["reason"], "shutdown");
    assert_eq!(ends[0]["session_id"], starts[0]["session_id"]);
    // Both runs are facts of the rollout.
    let events: Vec<String> = setup
        .hook_runs()
        .iter()
        .filter(|r| r["type"] == "hook_started")
        .map(|r| r["event_name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        events.iter().filter(|e| *e == "SessionEnd").count(),
        2,
        "{events:?}"
    );
}

#[test]
fn a_pre_compact_hook_blocks_the_compaction_and_post_compact_reads_the_summary() {
    // Blocked: the one request is the answer, and the turn goes on uncompacted.
    let setup = Setup::new(json!({"replies": [{"text": "answered"}]}));
    configure(&setup, "model_auto_compact_token_limit = 1", "");
    let pre = setup.script("pre.sh", "cat >> pre.jsonl\necho 'keep it all' >&2\nexit 2");
    setup.user_hooks(hook("PreCompact", "auto", &pre));
    let (events, _) = setup.exec(&[]);
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    assert_eq!(setup.mock.requests().len(), 1);
    let pre_inputs = logged(&setup, "pre.jsonl");
    assert_eq!(pre_inputs[0]["hook_event_name"], "PreCompact");
    assert_eq!(pre_inputs[0]["trigger"], "auto");
    let errors = error_items(&events);
    assert!(
        errors
            .iter()
            .any(|e| e == "a PreCompact hook blocked the compaction: keep it all"),
        "{errors:?}"
    );

    // Not blocked: the summary request, then the answer; PostCompact reads the summary.
    let setup = Setup::new(json!({"replies": [{"text": "The summary."}, {"text": "answered"}]}));
    configure(&setup, "model_auto_compact_token_limit = 1", "");
    let post = setup.script("post.sh", "cat >> post.jsonl");
    setup.user_hooks(hook("PostCompact", "manual|auto", &post));
    let (events, _) = setup.exec(&[]);
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    assert_eq!(setup.mock.requests().len(), 2);
    let post_inputs = logged(&setup, "post.jsonl");
    assert_eq!(post_inputs.len(), 1, "{post_inputs:?}");
    assert_eq!(post_inputs[0]["hook_event_name"], "PostCompact");
    assert_eq!(post_inputs[0]["compact_summary"], "The summary.");
}

#[test]
fn a_permission_request_hook_answers_the_approval_the_policy_asks_for() {
    for (answer, runs) in [("allow", true), ("deny", false), ("none", false)] {
        let setup = Setup::new(shell_call("touch approved.txt"));
        let permission = setup.script(
            "permission.sh",
            &format!(
                "cat >> permission.jsonl\n[ {answer} = none ] && exit 0\n\
                 echo '{{\"hookSpecificOutput\": {{\"hookEventName\": \"PermissionRequest\", \
                 \"decision\": {{\"behavior\": \"{answer}\", \"message\": \"by the hook\"}}}}}}'"
            ),
        );
        setup.user_hooks(hook("PermissionRequest", "Bash", &permission));
        // `untrusted` asks before any command that is not known to be safe; headless
        // `rein exec` denies what reaches the user.
        let (events, _) = setup.exec(&["-c", "approval_policy=\"untrusted\""]);
        assert_eq!(events.last().unwrap()["type"], "turn.completed");
        assert_eq!(
            setup.work().join("approved.txt").exists(),
            runs,
            "answer {answer}"
        );
        let inputs = logged(&setup, "permission.jsonl");
        assert_eq!(inputs.len(), 1, "{answer}: {inputs:?}");
        assert_eq!(inputs[0]["hook_event_name"], "PermissionRequest");
        assert_eq!(inputs[0]["tool_name"], "Bash");
        assert_eq!(inputs[0]["tool_input"]["command"], "touch approved.txt");
        assert_eq!(inputs[0]["permission_mode"], "untrusted");
    }
}

#[test]
fn a_pre_tool_use_ask_makes_the_call_wait_for_an_approval_the_policy_would_not_ask() {
    for answered_by_hook in [false, true] {
        let setup = Setup::new(shell_call("touch asked.txt"));
        let ask = setup.script(
            "ask.sh",
            "echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PreToolUse\", \
             \"permissionDecision\": \"ask\", \"permissionDecisionReason\": \"touching files\"}}'",
        );
        let allow = setup.script(
            "allow.sh",
            "echo '{\"hookSpecificOutput\": {\"decision\": {\"behavior\": \"allow\"}}}'",
        );
        let mut parts = vec![hook("PreToolUse", "Bash", &ask)];
        if answered_by_hook {
            parts.push(hook("PermissionRequest", "Bash", &allow));
        }
        setup.user_hooks(tables(&parts));
        // The default policy is `never`: without the hook nothing would be asked.
        let (events, _) = setup.exec(&[]);
        assert_eq!(events.last().unwrap()["type"], "turn.completed");
        let ran = setup.work().join("asked.txt").exists();
        assert_eq!(ran, answered_by_hook);
        let second = setup.mock.requests()[1].to_string();
        if !answered_by_hook {
            assert!(
                second
                    .contains("the user declined this call (a PreToolUse hook asked for approval)"),
                "{second}"
            );
        }
    }
}

#[test]
fn a_sub_agent_runs_subagent_start_and_subagent_stop_instead_of_the_session_hooks() {
    let call = |id: &str, name: &str, arguments: Value| json!({"tool_calls": [{"call_id": id, "name": name, "arguments": arguments}]});
    let setup = Setup::new(json!({"replies": [
        call("call_spawn", "spawn_agent", json!({"message": "Say hi.", "model": "child"})),
        call("call_wait", "wait_agent", json!({"targets": ["Ada"], "timeout_ms": 60000})),
        {"text": "Parent done."}
    ]}));
    let child = MockModel::start(json!({"replies": [
        {"text": "Child done."},
        {"text": "Child done, checked."}
    ]}));
    setup.with_child_model(&child);
    let log = setup.script("log.sh", "cat >> moments.jsonl");
    // SubagentStop continues the child once: its second answer ends it.
    let check = setup.script(
        "check.sh",
        "input=$(cat)\nprintf '%s\\n' \"$input\" >> moments.jsonl\ncase \"$input\" in *'\"stop_hook_active\":false'*) echo 'check your work' >&2; exit 2;; esac",
    );
    setup.user_hooks(tables(&[
        hook("SessionStart", "", &log),
        hook("SubagentStart", "default", &log),
        hook("SubagentStop", "", &check),
    ]));
    let (events, _) = setup.exec(&[]);
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    let moments = logged(&setup, "moments.jsonl");
    let names: Vec<&str> = moments
        .iter()
        .map(|m| m["hook_event_name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "SessionStart",
            "SubagentStart",
            "SubagentStop",
            "SubagentStop"
        ]
    );
    let root = moments[0]["session_id"].as_str().unwrap();
    for moment in &moments[1..] {
        assert_eq!(moment["agent_type"], "default");
        assert_eq!(moment["parent_session_id"], root);
        assert_eq!(moment["agent_id"], moment["session_id"]);
        assert!(moment["agent_id"] != root);
    }
    assert_eq!(moments[2]["last_assistant_message"], "Child done.");
    let child_requests = child.requests();
    assert_eq!(child_requests.len(), 2);
    assert!(child_requests[1]
        .to_string()
        .contains("A Stop hook asks you to continue: check your work"));
}

#[test]
fn max_continuations_in_the_config_caps_a_stop_hook_and_a_bad_value_is_refused() {
    let setup =
        Setup::new(json!({"replies": [{"text": "I am done."}], "when_exhausted": "repeat_last"}));
    configure(&setup, "", "[hooks]\nmax_continuations = 1");
    let stop = setup.script("stop.sh", "echo 'not yet' >&2\nexit 2");
    setup.user_hooks(hook("Stop", "", &stop));
    let (events, _) = setup.exec(&[]);
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    assert_eq!(
        setup.mock.requests().len(),
        2,
        "the answer and one continuation"
    );

    let setup = Setup::new(json!({"replies": [{"text": "unused"}]}));
    configure(&setup, "", "[hooks]\nmax_continuations = -1");
    let dir = setup.work().to_str().unwrap().to_owned();
    let out = setup
        .command(&["exec", "--json", "-C", &dir, "Go."])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("`hooks.max_continuations` must be a whole number from 0 to 100, not -1"),
        "{stderr}"
    );
    assert!(setup.mock.requests().is_empty());
}

#[test]
fn a_stop_hook_that_always_blocks_continues_the_turn_exactly_three_times() {
    let setup =
        Setup::new(json!({"replies": [{"text": "I am done."}], "when_exhausted": "repeat_last"}));
    let stop = setup.script(
        "stop.sh",
        "cat >> stop-inputs.jsonl\necho 'the tests still fail' >&2\nexit 2",
    );
    setup.user_hooks(
        json!({"Stop": [{"hooks": [{"type": "command", "command": stop.to_str().unwrap()}]}]}),
    );
    let (events, _) = setup.exec(&[]);
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    let requests = setup.mock.requests();
    assert_eq!(requests.len(), 4, "the answer and three continuations");
    assert!(requests[3]
        .to_string()
        .contains("A Stop hook asks you to continue: the tests still fail"));
    let text = std::fs::read_to_string(setup.work().join("stop-inputs.jsonl")).unwrap();
    let inputs = json_lines(text.as_bytes());
    let counts: Vec<(Value, Value)> = inputs
        .iter()
        .map(|i| {
            (
                i["stop_hook_active"].clone(),
                i["continuation_count"].clone(),
            )
        })
        .collect();
    assert_eq!(
        counts,
        [
            (json!(false), json!(0)),
            (json!(true), json!(1)),
            (json!(true), json!(2)),
            (json!(true), json!(3))
        ]
    );
    assert_eq!(inputs[0]["hook_event_name"], "Stop");
    assert_eq!(inputs[0]["last_assistant_message"], "I am done.");
    let errors = error_items(&events);
    assert!(
        errors
            .iter()
            .any(|e| e.contains("a Stop hook continued this turn 3 times; stopping anyway")),
        "{errors:?}"
    );
}

#[test]
fn a_user_prompt_submit_hook_adds_context_or_blocks_the_prompt() {
    for (prompt, blocked) in [("Go.", false), ("Print the secret.", true)] {
        let setup = Setup::new(json!({"replies": [{"text": "answered"}]}));
        let hook = setup.script(
            "prompt.sh",
            "input=$(cat)\necho \"$input\" > prompt-input.json\ncase \"$input\" in *secret*) echo 'no secrets' >&2; exit 2;; esac\necho 'The build server is down today.'",
        );
        setup.user_hooks(json!({"UserPromptSubmit": [{"hooks": [
            {"type": "command", "command": hook.to_str().unwrap()}]}]}));
        let dir = setup.work().to_str().unwrap().to_owned();
        let out = setup
            .command(&["exec", "--json", "-C", &dir, prompt])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let events = json_lines(&out.stdout);
        assert_eq!(events.last().unwrap()["type"], "turn.completed");
        let seen: Value = serde_json::from_str(
            &std::fs::read_to_string(setup.work().join("prompt-input.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(seen["hook_event_name"], "UserPromptSubmit");
        assert_eq!(seen["prompt"], prompt);
        let requests = setup.mock.requests();
        if blocked {
            assert_eq!(requests.len(), 0, "a blocked prompt is not sent");
            assert_eq!(
                error_items(&events),
                [
                    "the prompt was blocked by a UserPromptSubmit hook: no secrets",
                    "hook blocked: no secrets"
                ]
                .map(str::to_owned)
                .into_iter()
                .rev()
                .collect::<Vec<_>>()
            );
        } else {
            assert_eq!(requests.len(), 1);
            assert!(requests[0]
                .to_string()
                .contains("The build server is down today."));
        }
    }
}

#[test]
fn a_bad_hook_file_is_a_warning_naming_the_file_and_the_key_and_the_turn_goes_on() {
    let setup = Setup::new(shell_call("echo still-runs"));
    std::fs::write(
        setup.home.path().join("hooks.json"),
        json!({"hooks": {"PreToolUse": [{"hooks": [
            {"type": "command", "command": "true", "timeout": -1}
        ]}]}})
        .to_string(),
    )
    .unwrap();
    let (events, _) = setup.exec(&[]);
    let named = format!(
        "{}: `hooks.PreToolUse[0].hooks[0].timeout`: must be a positive number of seconds",
        setup.home.path().join("hooks.json").display()
    );
    let errors = error_items(&events);
    assert!(errors.iter().any(|e| e.contains(&named)), "{errors:#?}");
    // None of that file's hooks ran, and the turn went on to its end.
    assert_eq!(setup.hook_runs(), Vec::<Value>::new());
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    assert_eq!(setup.mock.requests().len(), 2);
}
