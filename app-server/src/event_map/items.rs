//! Items as Codex shows them: started, then completed; a tool call's item is completed
//! from the facts its end reports (or, for a call cut short, its output carries), and
//! review requests are shown as review-mode items. Messages' and reasoning's text streams
//! as deltas.

use rein_app_server_protocol::{
    DeltaNotification, ItemCompletedNotification, ItemStartedNotification,
    ReasoningSummaryTextDeltaNotification, ServerNotification, ThreadItem,
};
use rein_protocol::{Event, Item, ItemId, ItemKind, TurnId};

use super::{event_ms, review, EventMapper, Outgoing};
use crate::convert::item_to_wire;
use crate::tool_items::{tool_item, Ended};

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

    /// A tool call ended: its item, completed from the facts of its end.
    pub(super) fn tool_completed(
        &mut self,
        out: &mut Vec<Outgoing>,
        event: &Event,
        call_id: &str,
        ended: Ended<'_>,
    ) {
        let Some(track) = self.tools.remove(call_id) else {
            return;
        };
        let Some(item) = tool_item(
            &self.thread_id,
            call_id,
            &track.tool,
            &track.action,
            Some(ended),
        ) else {
            return;
        };
        out.push(Outgoing::Notify(ServerNotification::ItemCompleted(
            ItemCompletedNotification {
                thread_id: self.thread_id.clone(),
                turn_id: track.turn_id.to_string(),
                item,
                completed_at_ms: event_ms(event),
            },
        )));
    }

    pub(super) fn item_completed(&mut self, out: &mut Vec<Outgoing>, event: &Event, item: &Item) {
        let Some(turn_id) = event.turn_id else {
            return;
        };
        let at = event_ms(event);
        let wire = match item {
            // A call whose end was not reported (cut short) completes with its output's facts.
            Item::ToolOutput {
                call_id,
                facts: Some(facts),
                ..
            } => {
                let ended = Ended {
                    outcome: &facts.outcome,
                    duration_ms: facts.duration_ms,
                };
                return self.tool_completed(out, event, call_id, ended);
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

    pub(super) fn item_begun(
        &self,
        out: &mut Vec<Outgoing>,
        event: &Event,
        item_id: &ItemId,
        kind: ItemKind,
    ) {
        let item = match kind {
            ItemKind::AgentMessage => ThreadItem::AgentMessage {
                id: item_id.to_string(),
                text: String::new(),
                phase: None,
            },
            ItemKind::Reasoning => ThreadItem::Reasoning {
                id: item_id.to_string(),
                summary: Vec::new(),
                content: Vec::new(),
            },
        };
        out.extend(self.item_started(event.turn_id, item, event_ms(event)));
    }

    pub(super) fn agent_message_delta(
        &self,
        out: &mut Vec<Outgoing>,
        turn_id: Option<TurnId>,
        item_id: &ItemId,
        delta: &str,
    ) {
        if let Some(turn_id) = turn_id {
            out.push(Outgoing::Notify(ServerNotification::AgentMessageDelta(
                DeltaNotification {
                    thread_id: self.thread_id.clone(),
                    turn_id: turn_id.to_string(),
                    item_id: item_id.to_string(),
                    delta: delta.to_owned(),
                },
            )));
        }
    }

    pub(super) fn reasoning_delta(
        &self,
        out: &mut Vec<Outgoing>,
        turn_id: Option<TurnId>,
        item_id: &ItemId,
        delta: &str,
    ) {
        if let Some(turn_id) = turn_id {
            out.push(Outgoing::Notify(
                ServerNotification::ReasoningSummaryTextDelta(
                    ReasoningSummaryTextDeltaNotification {
                        thread_id: self.thread_id.clone(),
                        turn_id: turn_id.to_string(),
                        item_id: item_id.to_string(),
                        delta: delta.to_owned(),
                        summary_index: 0,
                    },
                ),
            ));
        }
    }
}
