//! The hook files' parts (`rein_bootstrap::hooks`, the rein-hooks crate): matchers,
//! the event table's parser, and what a hook's exit code and output mean.

use std::path::Path;
use std::time::Duration;

use pretty_assertions::assert_eq;
use rein_bootstrap::hooks::config::parse_events;
use rein_bootstrap::hooks::matcher::Matcher;
use rein_bootstrap::hooks::output::verdict;
use rein_core::hooks::{HookOutput, HookVerdict};
use serde_json::json;

#[test]
fn matchers_read_as_claude_code_reads_them() {
    let m = |p: &str, s: &[&str]| Matcher::new(p).map(|m| m.accepts(s)).unwrap_or(false);
    assert!(m("", &["Bash"]));
    assert!(m("*", &["anything"]));
    assert!(m("Bash", &["Bash", "shell"]));
    assert!(!m("Bash", &["BashOutput"]));
    assert!(m("Edit|Write", &["apply_patch", "Edit", "Write"]));
    assert!(m("mcp__.*", &["mcp__memory__create"]));
    assert!(m("^shell$", &["Bash", "shell"]));
    assert!(!m("Read", &["Bash", "shell"]));
}

#[test]
fn a_bad_key_is_an_error_naming_the_file_and_the_key() {
    let path = Path::new("/p/.rein/hooks.json");
    let bad =
        json!({"PreToolUse": [{"hooks": [{"type": "command", "command": "x", "timeout": -1}]}]});
    let err = parse_events(path, &bad).unwrap_err().to_string();
    assert_eq!(
        err,
        "/p/.rein/hooks.json: `hooks.PreToolUse[0].hooks[0].timeout`: must be a positive number of seconds"
    );
    let bad = json!({"PostToolUse": [{"matcher": "(", "hooks": []}]});
    let err = parse_events(path, &bad).unwrap_err().to_string();
    assert!(
        err.starts_with(
            "/p/.rein/hooks.json: `hooks.PostToolUse[0].matcher`: not a regular expression"
        ),
        "{err}"
    );
}

#[test]
fn unsupported_events_and_types_are_warnings_not_silence() {
    let path = Path::new("/p/.claude/settings.json");
    let events = json!({
        "TeammateIdle": [{"hooks": [{"type": "command", "command": "x"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "prompt", "prompt": "is it safe?"},
            {"type": "command", "command": "guard.sh", "timeout_sec": 5}
        ]}]
    });
    let parsed = parse_events(path, &events).unwrap();
    assert_eq!(parsed.hooks.len(), 1);
    assert_eq!(parsed.hooks[0].command, "guard.sh");
    assert_eq!(parsed.hooks[0].timeout, Duration::from_secs(5));
    assert_eq!((parsed.hooks[0].group, parsed.hooks[0].handler), (0, 1));
    assert_eq!(parsed.warnings.len(), 2, "{:?}", parsed.warnings);
}

#[test]
fn exit_codes_and_output_mean_what_claude_code_says() {
    assert_eq!(
        verdict(Some(0), "", ""),
        HookVerdict::Proceed(HookOutput::default())
    );
    assert_eq!(
        verdict(Some(0), "formatted 3 files\n", ""),
        HookVerdict::Proceed(HookOutput {
            text: Some("formatted 3 files".into()),
            ..HookOutput::default()
        })
    );
    assert_eq!(
        verdict(Some(2), "", "no rm -rf\n"),
        HookVerdict::Block {
            reason: "no rm -rf".into()
        }
    );
    assert_eq!(
        verdict(Some(127), "", "sh: jq: not found"),
        HookVerdict::Failed {
            message: "it exited with code 127: sh: jq: not found".into()
        }
    );
    let deny = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
        "permissionDecision": "deny", "permissionDecisionReason": "not here"}});
    assert_eq!(
        verdict(Some(0), &deny.to_string(), ""),
        HookVerdict::Block {
            reason: "not here".into()
        }
    );
    let rewrite = json!({"hookSpecificOutput": {"permissionDecision": "allow",
        "updatedInput": {"command": "ls"}, "additionalContext": "ctx"}, "systemMessage": "hi"});
    assert_eq!(
        verdict(Some(0), &rewrite.to_string(), ""),
        HookVerdict::Proceed(HookOutput {
            decision: Some("allow".into()),
            reason: None,
            updated_input: Some(json!({"command": "ls"})),
            additional_context: Some("ctx".into()),
            system_message: Some("hi".into()),
            text: None,
        })
    );
    assert_eq!(
        verdict(
            Some(0),
            "{\"decision\": \"block\", \"reason\": \"tests fail\"}",
            ""
        ),
        HookVerdict::Block {
            reason: "tests fail".into()
        }
    );
    let HookVerdict::Failed { message } = verdict(Some(0), "{not json", "") else {
        panic!("malformed JSON must fail");
    };
    assert!(
        message.starts_with("its output is not valid JSON"),
        "{message}"
    );
    assert_eq!(
        verdict(
            Some(0),
            "{\"hookSpecificOutput\": {\"permissionDecision\": \"maybe\"}}",
            ""
        ),
        HookVerdict::Failed {
            message: "its decision `maybe` is none of allow, deny, ask".into()
        }
    );
}
