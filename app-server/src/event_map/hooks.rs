//! `hook/started` and `hook/completed` from the kernel's `HookStarted` / `HookCompleted`:
//! a run's summary is kept from its start until its end, so the completion repeats what the
//! start said (event, source, file) with the outcome added.

use std::collections::HashMap;

use rein_app_server_protocol::{
    HookOutputEntry, HookRunNotification, HookRunSummary, ServerNotification,
};
use rein_protocol::{Event, EventMsg, HookEventName, HookRunStatus, HookSource};

/// Codex's name of a hook event (`HookEventName` in its schema), if it has one. Codex has no
/// `PostToolUseFailure`: `hooks/list` says so rather than misname it.
pub fn codex_event_name(event: HookEventName) -> Option<&'static str> {
    Some(match event {
        HookEventName::PreToolUse => "preToolUse",
        HookEventName::PostToolUse => "postToolUse",
        HookEventName::UserPromptSubmit => "userPromptSubmit",
        HookEventName::Stop => "stop",
        HookEventName::SessionStart => "sessionStart",
        HookEventName::PermissionRequest => "permissionRequest",
        HookEventName::PreCompact => "preCompact",
        HookEventName::PostCompact => "postCompact",
        HookEventName::SubagentStart => "subagentStart",
        HookEventName::SubagentStop => "subagentStop",
        HookEventName::SessionEnd => "sessionEnd",
        HookEventName::PostToolUseFailure => return None,
    })
}

/// The runs started and not yet ended, by run id.
#[derive(Default)]
pub struct HookRuns {
    running: HashMap<String, HookRunSummary>,
    started: i64,
}

impl HookRuns {
    /// The notification for a hook event, or `None` for any other event (or the end of a
    /// run whose start this mapper never saw).
    pub fn map(&mut self, thread_id: &str, event: &Event) -> Option<ServerNotification> {
        let turn_id = event.turn_id.map(|t| t.to_string());
        let seconds = i64::try_from(event.timestamp_ms / 1000).unwrap_or(i64::MAX);
        match &event.msg {
            EventMsg::HookStarted {
                run_id,
                event_name,
                key,
                source,
                ..
            } => {
                self.started += 1;
                let run = started_run(run_id, *event_name, key, *source, self.started, seconds);
                self.running.insert(run_id.clone(), run.clone());
                Some(ServerNotification::HookStarted(Box::new(
                    HookRunNotification {
                        thread_id: thread_id.to_owned(),
                        turn_id,
                        run,
                    },
                )))
            }
            EventMsg::HookCompleted {
                run_id,
                status,
                message,
                duration_ms,
                ..
            } => {
                let mut run = self.running.remove(run_id)?;
                let (status, kind) = match status {
                    HookRunStatus::Completed => ("completed", "feedback"),
                    HookRunStatus::Blocked => ("blocked", "feedback"),
                    HookRunStatus::Failed => ("failed", "error"),
                };
                run.status = status.to_owned();
                run.status_message.clone_from(message);
                run.completed_at = Some(seconds);
                run.duration_ms = Some(i64::try_from(*duration_ms).unwrap_or(i64::MAX));
                run.entries = message
                    .iter()
                    .map(|text| HookOutputEntry {
                        kind: kind.to_owned(),
                        text: text.clone(),
                    })
                    .collect();
                Some(ServerNotification::HookCompleted(Box::new(
                    HookRunNotification {
                        thread_id: thread_id.to_owned(),
                        turn_id,
                        run,
                    },
                )))
            }
            _ => None,
        }
    }
}

/// A hook run as Codex shows it when it starts.
fn started_run(
    run_id: &str,
    event_name: HookEventName,
    key: &str,
    source: HookSource,
    display_order: i64,
    seconds: i64,
) -> HookRunSummary {
    HookRunSummary {
        id: run_id.to_owned(),
        // A failure hook runs after a tool call like Codex's `postToolUse`; the
        // status tells the two apart.
        event_name: codex_event_name(event_name)
            .unwrap_or("postToolUse")
            .to_owned(),
        handler_type: "command".to_owned(),
        execution_mode: "sync".to_owned(),
        scope: match event_name {
            HookEventName::SessionStart | HookEventName::SessionEnd => "thread",
            _ => "turn",
        }
        .to_owned(),
        source: match source {
            HookSource::User => "user",
            HookSource::Project => "project",
        }
        .to_owned(),
        source_path: source_path(key).to_owned(),
        display_order,
        status: "running".to_owned(),
        status_message: None,
        started_at: seconds,
        completed_at: None,
        duration_ms: None,
        entries: Vec::new(),
    }
}

/// The file of a hook's key (`layer:FILE:event:group:handler`; the file may hold `:`).
fn source_path(key: &str) -> &str {
    let Some((_, rest)) = key.split_once(':') else {
        return key;
    };
    rest.rsplitn(4, ':').nth(3).unwrap_or(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_of_a_key_is_between_its_layer_and_its_position() {
        assert_eq!(
            source_path("project:/w/.codex/hooks.json:Stop:0:1"),
            "/w/.codex/hooks.json"
        );
        assert_eq!(
            source_path("user:/odd:dir/hooks.json:PreToolUse:2:0"),
            "/odd:dir/hooks.json"
        );
    }
}
