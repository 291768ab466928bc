//! What the loop knows of a running turn's unfinished work, learnt only from the events
//! that pass through it: text of items still streaming and tool calls still without an
//! output. When a turn is aborted this is what gets closed ("turn the page"): partial
//! text is kept as partial items and every open call gets an "aborted" output, so the
//! next request is valid.

use rein_protocol::{EventMsg, Item, ItemId, ItemKind};

#[derive(Default)]
pub(crate) struct OpenItems {
    streaming: Vec<(ItemId, ItemKind, String)>,
    calls: Vec<String>,
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
                    Item::ToolCall { call_id, .. } => self.calls.push(call_id.clone()),
                    Item::ToolOutput { call_id, .. } => self.calls.retain(|c| c != call_id),
                    _ => {}
                }
            }
            // A retried request starts its items afresh; the failed attempt's never complete.
            EventMsg::StreamRetry { .. } => self.streaming.clear(),
            _ => {}
        }
    }

    /// The items that close the unfinished work, in order.
    pub(crate) fn closing_items(self) -> Vec<Item> {
        let mut items = Vec::new();
        for (id, kind, text) in self.streaming {
            if text.is_empty() {
                continue;
            }
            items.push(match kind {
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
            });
        }
        for call_id in self.calls {
            items.push(Item::ToolOutput {
                id: ItemId::new(),
                call_id,
                output: ABORTED_TOOL_OUTPUT.into(),
                success: false,
            });
        }
        items
    }
}
