//! A thread's turns as Codex shows them (`thread/read`, `thread/resume`,
//! `thread/turns/list`), rebuilt from the kernel's folded state: each turn's slice of the
//! history, its items converted, tool calls paired with their outputs.

use std::collections::HashMap;

use rein_app_server_protocol::{ThreadItem, Turn, TurnItemsView, TurnStatus};
use rein_core::thread::state::{ThreadState, TurnStatus as KernelTurnStatus};
use rein_protocol::{Item, TaskKind, TurnAbortReason};

use crate::convert::item_to_wire;
use crate::event_map::{review, turn_error_of};
use crate::tool_items::{tool_item, Ended};

pub fn turns_from_state(state: &ThreadState) -> Vec<Turn> {
    let sender = state.thread_id.map(|id| id.to_string()).unwrap_or_default();
    let mut turns = Vec::with_capacity(state.turns.len());
    for (i, record) in state.turns.iter().enumerate() {
        let end = state
            .turns
            .get(i + 1)
            .map_or(state.history.len(), |next| next.history_start);
        let slice = state
            .history
            .get(record.history_start..end.max(record.history_start))
            .unwrap_or_default();
        let status = match record.status {
            KernelTurnStatus::Running => TurnStatus::InProgress,
            KernelTurnStatus::Completed => TurnStatus::Completed,
            KernelTurnStatus::Aborted(TurnAbortReason::Interrupted)
            | KernelTurnStatus::Aborted(_) => TurnStatus::Interrupted,
            KernelTurnStatus::Failed => TurnStatus::Failed,
        };
        let mut items = items_of(&sender, slice.iter().map(AsRef::as_ref));
        if record.kind == TaskKind::Review {
            as_review(
                &mut items,
                slice,
                record.status != KernelTurnStatus::Running,
            );
        }
        turns.push(Turn {
            id: record.id.to_string(),
            root_turn_id: Some(record.id.to_string()),
            items,
            items_view: TurnItemsView::Full,
            status,
            error: record
                .failure
                .as_ref()
                .map(|f| turn_error_of(f.code, &f.message)),
            started_at: Some(secs(record.started_ms)),
            completed_at: record.ended_ms.map(secs),
            duration_ms: record
                .ended_ms
                .map(|end| ms(end.saturating_sub(record.started_ms))),
        });
    }
    turns
}

/// A review turn's items as the live notifications showed them: its request as
/// `enteredReviewMode`, and, once it ended, `exitedReviewMode` with the last answer.
fn as_review(items: &mut Vec<ThreadItem>, slice: &[std::sync::Arc<Item>], ended: bool) {
    let request = slice
        .iter()
        .find(|i| matches!(i.as_ref(), Item::UserMessage { .. }));
    if let Some(entered) = request.and_then(|i| review::entered(i)) {
        if let Some(first) = items
            .iter_mut()
            .find(|i| matches!(i, ThreadItem::UserMessage { .. }))
        {
            *first = entered;
        }
    }
    if ended {
        let report = items
            .iter()
            .rev()
            .find(|i| matches!(i, ThreadItem::AgentMessage { .. }))
            .cloned();
        items.push(review::exited(report.as_ref()));
    }
}

fn secs(ms_since_epoch: u64) -> i64 {
    ms(ms_since_epoch / 1000)
}

fn ms(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// A turn's history as items: tool calls become their tool's item (placed where the call
/// was made, built from the facts its output keeps), other items convert one to one.
/// Calls without facts (rollouts written before tools reported them, or a call still
/// running) have no item.
fn items_of<'a>(sender: &str, history: impl Iterator<Item = &'a Item>) -> Vec<ThreadItem> {
    let mut items: Vec<Option<ThreadItem>> = Vec::new();
    // Tool calls wait here for their outputs: their slot and tool.
    let mut calls: HashMap<&str, (usize, &str)> = HashMap::new();
    for item in history {
        match item {
            Item::ToolCall { call_id, name, .. } => {
                calls.insert(call_id, (items.len(), name));
                items.push(None);
            }
            Item::ToolOutput {
                call_id,
                facts: Some(facts),
                ..
            } => {
                let Some(&(slot, tool)) = calls.get(call_id.as_str()) else {
                    continue;
                };
                let ended = Ended {
                    outcome: &facts.outcome,
                    duration_ms: facts.duration_ms,
                };
                items[slot] = tool_item(sender, call_id, tool, &facts.action, Some(ended));
            }
            other => items.push(item_to_wire(other)),
        }
    }
    items.into_iter().flatten().collect()
}
