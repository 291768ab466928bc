//! How tool calls show up as Codex items: shell-like tools as `commandExecution`,
//! `apply_patch` as `fileChange`. Other tools have no Codex item and are not shown.

use rein_protocol::app_server::{ExecutionStatus, FileUpdateChange, ThreadItem};
use serde_json::Value;

/// How a tool call shows up as an item, for the tools Codex clients know how to draw.
pub fn tool_item(call_id: &str, name: &str, arguments: &str, cwd: &str) -> Option<ThreadItem> {
    let args: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
    match name {
        "shell" | "exec_command" | "local_shell" | "shell_command" => {
            let command = match args.get("command").or_else(|| args.get("cmd")) {
                Some(Value::Array(parts)) => join_command(
                    &parts
                        .iter()
                        .map(|p| p.as_str().map_or_else(|| p.to_string(), str::to_owned))
                        .collect::<Vec<_>>(),
                ),
                Some(Value::String(s)) => s.clone(),
                _ => arguments.to_owned(),
            };
            let cwd = args
                .get("workdir")
                .or_else(|| args.get("cwd"))
                .and_then(Value::as_str)
                .unwrap_or(cwd)
                .to_owned();
            Some(ThreadItem::CommandExecution {
                id: call_id.to_owned(),
                command_actions: vec![serde_json::json!({"type": "unknown", "command": command})],
                command,
                cwd,
                process_id: None,
                status: ExecutionStatus::InProgress,
                aggregated_output: None,
                exit_code: None,
                duration_ms: None,
            })
        }
        "apply_patch" => {
            let patch = args
                .get("input")
                .or_else(|| args.get("patch"))
                .and_then(Value::as_str)
                .unwrap_or(arguments);
            Some(ThreadItem::FileChange {
                id: call_id.to_owned(),
                changes: patch_changes(patch),
                status: ExecutionStatus::InProgress,
            })
        }
        _ => None,
    }
}

/// The files an `apply_patch` envelope touches, each with its own hunk text.
fn patch_changes(patch: &str) -> Vec<FileUpdateChange> {
    let mut changes: Vec<FileUpdateChange> = Vec::new();
    for line in patch.lines() {
        let header = [
            ("*** Add File: ", "add"),
            ("*** Delete File: ", "delete"),
            ("*** Update File: ", "update"),
        ]
        .iter()
        .find_map(|(prefix, kind)| line.strip_prefix(prefix).map(|p| (p.trim(), *kind)));
        match header {
            Some((path, kind)) => changes.push(FileUpdateChange {
                path: path.to_owned(),
                kind: serde_json::json!({ "type": kind }),
                diff: String::new(),
            }),
            None if line.starts_with("*** ") => {}
            None => {
                if let Some(change) = changes.last_mut() {
                    change.diff.push_str(line);
                    change.diff.push('\n');
                }
            }
        }
    }
    changes
}

pub fn join_command(parts: &[String]) -> String {
    parts
        .iter()
        .map(|p| {
            if !p.is_empty()
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
            {
                p.clone()
            } else {
                format!("'{}'", p.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argv_is_joined_with_quotes_only_where_needed() {
        let parts = [
            "echo".to_owned(),
            "hello world".to_owned(),
            "it's".to_owned(),
        ];
        assert_eq!(join_command(&parts), r"echo 'hello world' 'it'\''s'");
    }

    #[test]
    fn apply_patch_lists_each_file_with_its_hunks() {
        let patch = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** Update File: b.rs\n@@\n-x\n+y\n*** Delete File: c\n*** End Patch\n";
        let changes = patch_changes(patch);
        let summary: Vec<(&str, &Value, &str)> = changes
            .iter()
            .map(|c| (c.path.as_str(), &c.kind["type"], c.diff.as_str()))
            .collect();
        assert_eq!(
            summary,
            vec![
                ("a.txt", &Value::from("add"), "+hi\n"),
                ("b.rs", &Value::from("update"), "@@\n-x\n+y\n"),
                ("c", &Value::from("delete"), ""),
            ]
        );
    }

    #[test]
    fn shell_call_becomes_a_command_item_in_its_workdir() {
        let item = tool_item(
            "c1",
            "shell",
            r#"{"command":["ls","-la"],"workdir":"/w"}"#,
            "/cwd",
        );
        let Some(ThreadItem::CommandExecution {
            command,
            cwd,
            status,
            ..
        }) = item
        else {
            panic!("not a command item: {item:?}");
        };
        assert_eq!((command.as_str(), cwd.as_str()), ("ls -la", "/w"));
        assert_eq!(status, ExecutionStatus::InProgress);
        assert_eq!(tool_item("c2", "update_plan", "{}", "/cwd"), None);
    }
}
