use super::*;
use pretty_assertions::assert_eq;
use rein_protocol::{Decliner, ExitStatus};
use serde_json::json;

fn exec(command: &str, commands: Vec<CommandAction>) -> ToolAction {
    ToolAction::Exec {
        argv: vec!["/bin/sh".into(), "-c".into(), command.into()],
        command: command.into(),
        cwd: "/w".into(),
        background: false,
        commands,
    }
}

fn value<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap()
}

#[test]
fn a_read_command_is_a_read_with_its_absolute_location() {
    let action = exec(
        "cat a.txt",
        vec![CommandAction::Read {
            command: "cat a.txt".into(),
            name: "a.txt".into(),
            path: "a.txt".into(),
        }],
    );
    let call = opened(
        "c1",
        "shell",
        r#"{"command":"cat a.txt"}"#,
        &action,
        TerminalDisplay::Text,
    );
    assert_eq!(
        value(&call),
        json!({
            "toolCallId": "c1", "title": "cat a.txt", "kind": "read", "status": "in_progress",
            "locations": [{ "path": "/w/a.txt" }], "rawInput": { "command": "cat a.txt" }
        })
    );
    let outcome = ToolOutcome::Exited {
        exit: ExitStatus::Code { code: 0 },
        output: "hi\n".into(),
    };
    assert_eq!(
        value(&closed(
            "c1",
            Some(&action),
            &outcome,
            TerminalDisplay::Text
        )),
        json!({
            "toolCallId": "c1", "status": "completed",
            "content": [{ "type": "content", "content": { "type": "text", "text": "```\nhi\n```" } }],
            "rawOutput": { "type": "exited", "exit": { "type": "code", "code": 0 }, "output": "hi\n" }
        })
    );
}

#[test]
fn a_command_shown_as_a_terminal_carries_zeds_terminal_meta() {
    let action = exec(
        "make",
        vec![CommandAction::Unknown {
            command: "make".into(),
        }],
    );
    let call = opened("c2", "shell", "{}", &action, TerminalDisplay::Meta);
    assert_eq!(
        value(&call),
        json!({
            "toolCallId": "c2", "title": "make", "kind": "execute", "status": "in_progress",
            "content": [{ "type": "terminal", "terminalId": "c2" }], "rawInput": {},
            "_meta": { "terminal_info": { "terminal_id": "c2", "cwd": "/w" } }
        })
    );
    assert_eq!(
        value(&output_delta(
            "c2",
            Some(&action),
            "building\n",
            TerminalDisplay::Meta
        )),
        json!({ "toolCallId": "c2",
                "_meta": { "terminal_output": { "terminal_id": "c2", "data": "building\n" } } })
    );
    assert_eq!(
        output_delta("c2", Some(&action), "x", TerminalDisplay::Text),
        None
    );
    let killed = ToolOutcome::Exited {
        exit: ExitStatus::Signal { signal: 9 },
        output: String::new(),
    };
    let end = value(&closed("c2", Some(&action), &killed, TerminalDisplay::Meta));
    assert_eq!(end["status"], "failed");
    assert_eq!(
        end["_meta"],
        json!({ "terminal_exit": { "terminal_id": "c2", "exit_code": null, "signal": 9 } })
    );
}

#[test]
fn an_update_diff_carries_both_sides_of_its_hunks() {
    let change = FileDiff {
        path: "/w/a.txt".into(),
        kind: FileChangeKind::Update,
        move_to: None,
        unified_diff: "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n"
            .into(),
    };
    assert_eq!(
        value(&diff_content(&change)),
        json!({ "type": "diff", "path": "/w/a.txt",
                "oldText": "one\ntwo\nthree\n", "newText": "one\nTWO\nthree\n" })
    );
    let deleted = FileDiff {
        kind: FileChangeKind::Delete,
        unified_diff: "--- a/a.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone\n".into(),
        ..change
    };
    assert_eq!(
        value(&diff_content(&deleted)),
        json!({ "type": "diff", "path": "/w/a.txt", "oldText": "gone\n", "newText": "" })
    );
    assert_eq!(
        kind(&ToolAction::Edit {
            changes: vec![deleted]
        }),
        ToolKind::Delete
    );
}

#[test]
fn titles_are_one_line_and_a_plan_has_no_card() {
    let long = exec("echo a\necho b", vec![]);
    assert_eq!(title("shell", &long), "echo a…");
    let search = ToolAction::Search {
        query: "needle".into(),
        path: "/w".into(),
    };
    assert_eq!(title("grep", &search), "Search \"needle\" in /w");
    assert_eq!(kind(&search), ToolKind::Search);
    let plan = ToolAction::Plan { plan: vec![] };
    assert_eq!(
        opened("p", "update_plan", "{}", &plan, TerminalDisplay::Text),
        None
    );
    let declined = ToolOutcome::Declined {
        by: Decliner::User,
        reason: "no".into(),
    };
    assert_eq!(
        closed("p", Some(&plan), &declined, TerminalDisplay::Text),
        None
    );
    let mcp = ToolAction::Mcp {
        server: "docs".into(),
        tool: "lookup".into(),
        arguments: json!({}),
    };
    assert_eq!(title("lookup", &mcp), "docs/lookup");
    assert_eq!(kind(&mcp), ToolKind::Other);
}
