//! Items as Codex shows them: started, then completed, with tool calls paired with their
//! outputs (the command's streamed output, its status and duration) and review requests
//! shown as review-mode items.

use rein_protocol::app_server::{
    ExecutionStatus, ItemCompletedNotification, ItemStartedNotification, ServerNotification,
    ThreadItem,
};
use rein_protocol::{Event, Item, TurnId};

use super::{event_ms, review, EventMapper, Outgoing};
use crate::convert::item_to_wire;

impl EventMapper {
    pub(super) fn item_started(
        &self,
        turn_id: Option<TurnId>,
        item: ThreadItem,
        at: i64,
    ) -> Option<Outgoing> {
        Some(Outgoing::Notify(ServerNotification::ItemStarted(
            ItemStartedNotification {
                thread_id: self.thread_id.clone(),
                turn_id: turn_id?.to_string(),
                item,
                started_at_ms: at,
            },
        )))
    }

    pub(super) fn item_completed(&mut self, out: &mut Vec<Outgoing>, event: &Event, item: &Item) {
        let Some(turn_id) = event.turn_id else {
            return;
        };
        let at = event_ms(event);
        let wire = match item {
            Item::ToolOutput {
                call_id,
                output,
                success,
                ..
            } => {
                let Some(track) = self.tools.remove(call_id) else {
                    return;
                };
                let status = if track.declined {
                    ExecutionStatus::Declined
                } else if *success {
                    ExecutionStatus::Completed
                } else {
                    ExecutionStatus::Failed
                };
                let aggregated = if track.output.is_empty() {
                    output.clone()
                } else {
                    track.output
                };
                let duration = track
                    .duration_ms
                    .unwrap_or_else(|| (at - track.started_at_ms).max(0));
                match track.started_item {
                    ThreadItem::CommandExecution {
                        id,
                        command,
                        cwd,
                        command_actions,
                        ..
                    } => ThreadItem::CommandExecution {
                        id,
                        command,
                        cwd,
                        process_id: None,
                        status,
                        command_actions,
                        aggregated_output: Some(aggregated),
                        exit_code: None,
                        duration_ms: Some(duration),
                    },
                    ThreadItem::FileChange { id, changes, .. } => ThreadItem::FileChange {
                        id,
                        changes,
                        status,
                    },
                    other => other,
                }
            }
            _ => {
                let in_review = self.turn.as_ref().is_some_and(|t| t.review);
                let wire = if in_review {
                    review::entered(item).or_else(|| item_to_wire(item))
                } else {
                    item_to_wire(item)
                };
                let Some(wire) = wire else {
                    return;
                };
                match &wire {
                    // The kernel records user input complete at once; Codex clients expect
                    // it started, then completed.
                    ThreadItem::UserMessage { .. } => {
                        if self.preview.is_none() {
                            self.preview = item.message_text();
                        }
                        if let Some(n) = self.item_started(Some(turn_id), wire.clone(), at) {
                            out.push(n);
                        }
                    }
                    ThreadItem::EnteredReviewMode { .. } => {
                        if let Some(n) = self.item_started(Some(turn_id), wire.clone(), at) {
                            out.push(n);
                        }
                    }
                    ThreadItem::AgentMessage { .. } => {
                        if let Some(turn) = &mut self.turn {
                            turn.last_agent = Some(wire.clone());
                        }
                    }
                    _ => {}
                }
                wire
            }
        };
        out.push(Outgoing::Notify(ServerNotification::ItemCompleted(
            ItemCompletedNotification {
                thread_id: self.thread_id.clone(),
                turn_id: turn_id.to_string(),
                item: wire,
                completed_at_ms: at,
            },
        )));
    }
}
