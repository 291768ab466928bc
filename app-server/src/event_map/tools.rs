//! Tool calls as Codex shows them while they run: the item when a call begins, its
//! output as it streams, the approvals it waits on and the advisor's reviews of it. Its
//! completed item is built in `items.rs`, from the facts of its end.

use std::path::Path;

use rein_app_server_protocol::{
    DeltaNotification, McpToolCallProgressNotification, ServerNotification, ThreadItem,
};
use rein_protocol::{AdvisorRisk, AdvisorVerdict, ClientRequest, Event, ReviewedCall, ToolAction};

use super::shapes::active;
use super::{approval, event_ms, EventMapper, Outgoing, ToolTrack};
use crate::tool_items::tool_item;

impl EventMapper {
    pub(super) fn tool_begun(
        &mut self,
        out: &mut Vec<Outgoing>,
        event: &Event,
        call_id: &str,
        name: &str,
        action: &ToolAction,
    ) {
        let (Some(turn_id), Some(item)) = (
            event.turn_id,
            tool_item(&self.thread_id, call_id, name, action, None),
        ) else {
            return;
        };
        self.tools.insert(
            call_id.to_owned(),
            ToolTrack {
                turn_id,
                tool: name.to_owned(),
                action: action.clone(),
                file_change: matches!(item, ThreadItem::FileChange { .. }),
            },
        );
        out.extend(self.item_started(Some(turn_id), item, event_ms(event)));
    }

    /// Output of a running call: an MCP tool's progress, else a command's (or a patch's)
    /// output delta.
    pub(super) fn tool_output(&self, out: &mut Vec<Outgoing>, call_id: &str, delta: &str) {
        let Some(track) = self.tools.get(call_id) else {
            return;
        };
        if matches!(track.action, ToolAction::Mcp { .. }) {
            out.push(Outgoing::Notify(ServerNotification::McpToolCallProgress(
                McpToolCallProgressNotification {
                    thread_id: self.thread_id.clone(),
                    turn_id: track.turn_id.to_string(),
                    item_id: call_id.to_owned(),
                    message: delta.trim_end().to_owned(),
                },
            )));
            return;
        }
        let params = DeltaNotification {
            thread_id: self.thread_id.clone(),
            turn_id: track.turn_id.to_string(),
            item_id: call_id.to_owned(),
            delta: delta.to_owned(),
        };
        out.push(Outgoing::Notify(if track.file_change {
            ServerNotification::FileChangeOutputDelta(params)
        } else {
            ServerNotification::CommandExecutionOutputDelta(params)
        }));
    }

    pub(super) fn approval_asked(
        &mut self,
        out: &mut Vec<Outgoing>,
        event: &Event,
        approval_id: &str,
        call_id: &str,
        request: &ClientRequest,
    ) {
        let Some(turn_id) = event.turn_id else {
            return;
        };
        self.approvals
            .insert(approval_id.to_owned(), call_id.to_owned());
        self.set_status(out, active(true));
        out.extend(approval::ask(
            &self.thread_id,
            approval_id,
            call_id,
            turn_id,
            request,
            event_ms(event),
        ));
    }

    /// The kernel settled an approval: withdrawn from the client if it was still asked.
    pub(super) fn approval_resolved(&mut self, out: &mut Vec<Outgoing>, approval_id: &str) {
        if self.approvals.remove(approval_id).is_none() {
            return;
        }
        out.push(Outgoing::Withdrawn {
            approval_id: approval_id.to_owned(),
        });
        if self.turn.is_some() {
            let waiting = !self.approvals.is_empty();
            self.set_status(out, active(waiting));
        }
    }

    pub(super) fn review_started(
        &mut self,
        out: &mut Vec<Outgoing>,
        event: &Event,
        review_id: &str,
        cwd: &Path,
        risk: AdvisorRisk,
        calls: &[ReviewedCall],
    ) {
        let Some(turn_id) = event.turn_id else {
            return;
        };
        let cwd = cwd.to_string_lossy();
        let started = self.reviews.started(
            &self.thread_id,
            (turn_id, event_ms(event)),
            review_id,
            &cwd,
            risk,
            calls,
        );
        out.extend(started.into_iter().map(Outgoing::Notify));
    }

    pub(super) fn review_completed(
        &mut self,
        out: &mut Vec<Outgoing>,
        event: &Event,
        review_id: &str,
        verdict: &AdvisorVerdict,
    ) {
        let done = self
            .reviews
            .completed(&self.thread_id, review_id, verdict, event_ms(event));
        out.extend(done.into_iter().map(Outgoing::Notify));
    }
}
