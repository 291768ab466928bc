//! User hooks at a session's moments rather than a tool call's: `SessionStart` (or
//! `SubagentStart` for a sub-agent) before a thread's first turn in this process,
//! `PreCompact` / `PostCompact` around a compaction, and `SessionEnd` when the thread shuts
//! down. Same machinery as the tool hooks (`tool_hooks.rs`): the hooks of one event run in
//! parallel, each run is a `HookStarted` / `HookCompleted` pair.
//!
//! What the answers mean: start hooks only add context (a block cannot undo a session that
//! exists; it is reported); a `PreCompact` block skips the compaction (the turn goes on
//! with the history it has, and may fail on the window later — the user asked for that);
//! `PostCompact` and `SessionEnd` only report.

use rein_protocol::{CompactionTrigger, EventMsg, HookEventName};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::tool_hooks::{agent_type, block_reasons, run_all, HookEvents, HookScope};
use crate::hooks::HookVerdict;

/// A compaction's trigger as hooks match it (Claude Code's `manual` / `auto`).
fn trigger_name(trigger: CompactionTrigger) -> &'static str {
    match trigger {
        CompactionTrigger::Manual => "manual",
        CompactionTrigger::Auto
        | CompactionTrigger::ContextExceeded
        | CompactionTrigger::ModelSwitch => "auto",
    }
}

impl HookScope {
    /// Run the `SessionStart` hooks (a sub-agent's `SubagentStart`) if this is the
    /// thread's first turn in this process: what they add is context for the model
    /// (`additionalContext`, or plain stdout as Claude Code reads it).
    pub(crate) async fn session_start(
        &self,
        sink: &dyn HookEvents,
        cancel: &CancellationToken,
    ) -> Vec<String> {
        let Some(source) = self.session_start else {
            return Vec::new();
        };
        let (event, subject, fields) = match &self.agent {
            Some(agent) => (
                HookEventName::SubagentStart,
                agent_type(agent),
                json!({ "source": source.as_str() }),
            ),
            None => (
                HookEventName::SessionStart,
                source.as_str(),
                json!({ "source": source.as_str() }),
            ),
        };
        let found = self.hooks.matching(&self.cwd, event, &[subject]).await;
        if found.is_empty() {
            return Vec::new();
        }
        let input = self.input(event, fields);
        let mut context = Vec::new();
        for (hook, response) in run_all(found, input, event, None, sink, cancel).await {
            match response.verdict {
                HookVerdict::Proceed(output) => {
                    if let Some(message) = output.system_message {
                        sink.emit(EventMsg::Warning { message });
                    }
                    context.extend(output.additional_context);
                    context.extend(output.text);
                }
                HookVerdict::Block { reason } => sink.emit(EventMsg::Warning {
                    message: format!(
                        "the {} hook `{}` cannot block a session from starting: {reason}",
                        event.as_str(),
                        hook.command
                    ),
                }),
                HookVerdict::Failed { .. } => {}
            }
        }
        context
    }

    /// Run the `PreCompact` hooks: `Some(reason)` when one blocks the compaction.
    pub(crate) async fn pre_compact(
        &self,
        trigger: CompactionTrigger,
        sink: &dyn HookEvents,
        cancel: &CancellationToken,
    ) -> Option<String> {
        let event = HookEventName::PreCompact;
        let name = trigger_name(trigger);
        let found = self.hooks.matching(&self.cwd, event, &[name]).await;
        if found.is_empty() {
            return None;
        }
        let input = self.input(event, json!({ "trigger": name, "custom_instructions": "" }));
        let runs = run_all(found, input, event, None, sink, cancel).await;
        block_reasons(runs, "; ")
    }

    /// Run the `PostCompact` hooks with the summary the compaction wrote.
    pub(crate) async fn post_compact(
        &self,
        trigger: CompactionTrigger,
        summary: &str,
        sink: &dyn HookEvents,
        cancel: &CancellationToken,
    ) {
        let event = HookEventName::PostCompact;
        let name = trigger_name(trigger);
        let found = self.hooks.matching(&self.cwd, event, &[name]).await;
        if found.is_empty() {
            return;
        }
        let input = self.input(
            event,
            json!({ "trigger": name, "compact_summary": summary }),
        );
        run_all(found, input, event, None, sink, cancel).await;
    }

    /// Run the `SessionEnd` hooks of a thread shutting down (`reason`, e.g. `shutdown`).
    /// They can only report: the thread ends whatever they say.
    pub(crate) async fn session_end(
        &self,
        reason: &str,
        events: &dyn HookEvents,
        cancel: &CancellationToken,
    ) {
        let event = HookEventName::SessionEnd;
        let found = self.hooks.matching(&self.cwd, event, &[reason]).await;
        if found.is_empty() {
            return;
        }
        let input = self.input(event, json!({ "reason": reason }));
        run_all(found, input, event, None, events, cancel).await;
    }
}
