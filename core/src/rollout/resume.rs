//! Pure functions over event lists for resume and fork. They decide which events a
//! resumed or forked thread starts from; the state itself always comes from folding those
//! events through [`ThreadState::apply`].

use std::collections::HashSet;

use rein_protocol::{
    ApprovalOutcome, Event, EventMsg, Item, ItemId, SessionId, ThreadId, TurnAbortReason, TurnId,
    INTERRUPTION_MARKER,
};

use crate::thread::state::ThreadState;

/// The output given to a tool call that never got one because its process died.
pub const ABORTED_TOOL_OUTPUT: &str = "aborted";

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ForkError {
    #[error("turn {requested} does not exist; the thread has {available} turns")]
    NoSuchTurn { requested: usize, available: usize },
    #[error("the thread has no completed turn to fork at")]
    NoCompletedTurn,
    #[error("the events do not start with ThreadConfigured")]
    NotConfigured,
}

/// Closes a turn that a crash left open, so the next model request is valid: every tool
/// call of that turn without an output gets an "aborted" output, open approvals are
/// cancelled, the interruption marker is appended and the turn ends as `Interrupted`.
/// Events of a thread with no open turn come back unchanged.
pub fn repair_for_resume(mut events: Vec<Event>) -> Vec<Event> {
    let state = ThreadState::from_events(&events);
    let (Some(active), Some(last)) = (state.active_turn.as_ref(), events.last()) else {
        return events;
    };
    let turn = active.id;
    let (thread_id, timestamp_ms) = (last.thread_id, last.timestamp_ms);
    let mut next_seq = state.next_seq();
    let mut synthetic = |msg| {
        let event = Event {
            thread_id,
            turn_id: Some(turn),
            seq: next_seq,
            timestamp_ms,
            msg,
        };
        next_seq += 1;
        event
    };
    let mut repairs = Vec::new();
    for approval_id in open_approvals(&events, turn) {
        repairs.push(synthetic(EventMsg::ApprovalResolved {
            approval_id,
            outcome: ApprovalOutcome::Cancelled,
        }));
    }
    let turn_start = state
        .turns
        .iter()
        .rev()
        .find(|t| t.id == turn)
        .map_or(0, |t| t.history_start);
    for call_id in calls_without_output(&state.history[turn_start.min(state.history.len())..]) {
        repairs.push(synthetic(EventMsg::ItemCompleted {
            item: Item::ToolOutput {
                id: ItemId::new(),
                call_id,
                output: ABORTED_TOOL_OUTPUT.to_owned(),
                success: false,
            },
        }));
    }
    repairs.push(synthetic(EventMsg::ItemCompleted {
        item: Item::Interruption {
            id: ItemId::new(),
            text: INTERRUPTION_MARKER.to_owned(),
        },
    }));
    repairs.push(synthetic(EventMsg::TurnAborted {
        reason: TurnAbortReason::Interrupted,
    }));
    events.extend(repairs);
    events
}

fn calls_without_output(items: &[std::sync::Arc<Item>]) -> Vec<String> {
    let answered: HashSet<&str> = items
        .iter()
        .filter_map(|i| match i.as_ref() {
            Item::ToolOutput { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    items
        .iter()
        .filter_map(|i| match i.as_ref() {
            Item::ToolCall { call_id, .. } if !answered.contains(call_id.as_str()) => {
                Some(call_id.clone())
            }
            _ => None,
        })
        .collect()
}

fn open_approvals(events: &[Event], turn: TurnId) -> Vec<String> {
    let mut open: Vec<String> = Vec::new();
    for event in events.iter().filter(|e| e.turn_id == Some(turn)) {
        match &event.msg {
            EventMsg::ApprovalRequested { approval_id, .. } => open.push(approval_id.clone()),
            EventMsg::ApprovalResolved { approval_id, .. } => open.retain(|a| a != approval_id),
            _ => {}
        }
    }
    open
}

/// The events a fork of this thread starts from: everything up to the end of turn
/// `at_turn` (0-based, in order of first start; default the last turn), rewritten to
/// `new_thread` with contiguous seqs and `ThreadConfigured.forked_from` naming the parent.
/// A turn still running is forked as if it had been interrupted. `ShutdownComplete`
/// events are dropped: the fork is a live thread.
pub fn fork_events(
    events: &[Event],
    at_turn: Option<usize>,
    new_thread: ThreadId,
) -> Result<Vec<Event>, ForkError> {
    let parent = match events.first() {
        Some(Event {
            thread_id,
            msg: EventMsg::ThreadConfigured { .. },
            ..
        }) => *thread_id,
        _ => return Err(ForkError::NotConfigured),
    };
    let repaired = repair_for_resume(events.to_vec());
    let turns = turn_order(&repaired);
    let chosen = match at_turn {
        Some(i) => *turns.get(i).ok_or(ForkError::NoSuchTurn {
            requested: i,
            available: turns.len(),
        })?,
        None => *turns.last().ok_or(ForkError::NoCompletedTurn)?,
    };
    let end = repaired
        .iter()
        .rposition(|e| e.turn_id == Some(chosen) && is_turn_end(&e.msg))
        .ok_or(ForkError::NoCompletedTurn)?;
    let mut forked = Vec::with_capacity(end + 1);
    for event in repaired.into_iter().take(end + 1) {
        if matches!(event.msg, EventMsg::ShutdownComplete) {
            continue;
        }
        let msg = match event.msg {
            EventMsg::ThreadConfigured { settings, .. } => EventMsg::ThreadConfigured {
                // A fork is the root of its own tree.
                session_id: SessionId::from(new_thread),
                settings,
                forked_from: Some(parent),
            },
            other => other,
        };
        forked.push(Event {
            thread_id: new_thread,
            seq: forked.len() as u64,
            msg,
            ..event
        });
    }
    Ok(forked)
}

/// Turn ids in the order they first started.
pub fn turn_order(events: &[Event]) -> Vec<TurnId> {
    let mut seen = HashSet::new();
    events
        .iter()
        .filter(|e| matches!(e.msg, EventMsg::TurnStarted { .. }))
        .filter_map(|e| e.turn_id)
        .filter(|id| seen.insert(*id))
        .collect()
}

fn is_turn_end(msg: &EventMsg) -> bool {
    matches!(
        msg,
        EventMsg::TurnCompleted { .. } | EventMsg::TurnAborted { .. } | EventMsg::TurnFailed { .. }
    )
}
