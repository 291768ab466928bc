//! What the loop knows of a running turn's unfinished work, learnt only from the events
//! that pass through it: text of items still streaming and tool calls still without an
//! output. When a turn is aborted this is what gets closed ("turn the page"): partial
//! text is kept as partial items and every open call gets an "aborted" output, so the
//! next request is valid. A call that had begun also ends, with an `interrupted` outcome.

use std::time::Instant;

use rein_protocol::{
    EventMsg, InterruptCause, Item, ItemId, ItemKind, ToolAction, ToolFacts, ToolOutcome,
};

#[derive(Default)]
pub(crate) struct OpenItems {
    streaming: Vec<(ItemId, ItemKind, String)>,
    calls: Vec<OpenCall>,
}

struct OpenCall {
    call_id: String,
    /// Set once the call began: what it was doing, and since when.
    began: Option<(ToolAction, Instant)>,
}

pub(crate) const ABORTED_TOOL_OUTPUT: &str =
    "aborted: the turn was interrupted before this call finished";

impl OpenItems {
    pub(crate) fn observe(&mut self, msg: &EventMsg) {
        match msg {
            EventMsg::ItemStarted { item_id, kind } => {
                self.streaming.push((item_id.clone(), *kind, String::new()));
            }
            EventMsg::AgentMessageDelta { item_id, delta }
            | EventMsg::ReasoningDelta { item_id, delta } => {
                if let Some((_, _, text)) =
                    self.streaming.iter_mut().find(|(id, _, _)| id == item_id)
                {
                    text.push_str(delta);
                }
            }
            EventMsg::ItemCompleted { item } => {
                self.streaming.retain(|(id, _, _)| id != item.id());
                match item {
                    Item::ToolCall { call_id, .. } => self.calls.push(OpenCall {
                        call_id: call_id.clone(),
                        began: None,
                    }),
                    Item::ToolOutput { call_id, .. } => {
                        self.calls.retain(|c| &c.call_id != call_id)
                    }
                    _ => {}
                }
            }
            EventMsg::ToolCallBegin {
                call_id, action, ..
            } => {
                if let Some(call) = self.calls.iter_mut().find(|c| &c.call_id == call_id) {
                    call.began = Some((action.clone(), Instant::now()));
                }
            }
            // A retried request starts its items afresh; the failed attempt's never complete.
            EventMsg::StreamRetry { .. } => self.streaming.clear(),
            _ => {}
        }
    }

    /// The events that close the unfinished work, in order: partial items, then for each
    /// open call its end (if it had begun) and its output.
    pub(crate) fn closing_events(self) -> Vec<EventMsg> {
        let mut events = Vec::new();
        for (id, kind, text) in self.streaming {
            if text.is_empty() {
                continue;
            }
            let item = match kind {
                ItemKind::AgentMessage => Item::AgentMessage {
                    id,
                    text,
                    partial: true,
                },
                ItemKind::Reasoning => Item::Reasoning {
                    id,
                    text,
                    encrypted_content: None,
                },
            };
            events.push(EventMsg::ItemCompleted { item });
        }
        let outcome = ToolOutcome::Interrupted {
            cause: InterruptCause::TurnAborted,
        };
        for call in self.calls {
            let facts = call.began.map(|(action, since)| {
                let duration_ms = u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX);
                events.push(EventMsg::ToolCallEnd {
                    call_id: call.call_id.clone(),
                    success: false,
                    duration_ms,
                    outcome: outcome.clone(),
                });
                Box::new(ToolFacts {
                    action,
                    outcome: outcome.clone(),
                    duration_ms,
                })
            });
            events.push(EventMsg::ItemCompleted {
                item: Item::ToolOutput {
                    id: ItemId::new(),
                    call_id: call.call_id,
                    output: ABORTED_TOOL_OUTPUT.into(),
                    success: false,
                    facts,
                },
            });
        }
        events
    }
}
