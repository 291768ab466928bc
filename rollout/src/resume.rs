//! Pure functions over event lists for resume and fork. They decide which events a
//! resumed or forked thread starts from; the state itself always comes from folding those
//! events through [`ThreadState::apply`](rein_core::thread::state::ThreadState::apply).

use rein_core::store::ForkError;

use std::collections::{HashMap, HashSet};

use rein_protocol::{
    ApprovalOutcome, Event, EventMsg, InterruptCause, Item, ItemId, SessionId, ThreadId,
    ToolAction, ToolFacts, ToolOutcome, TurnAbortReason, TurnId, INTERRUPTION_MARKER,
};

/// The output given to a tool call that never started: rein stopped before it ran.
pub const ABORTED_TOOL_OUTPUT: &str = "aborted: rein stopped before this call started";

/// How far a call got before rein stopped, as the rollout shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallProgress {
    /// No `ToolCallBegin`: it never started (nothing ran).
    NotStarted,
    /// Began (it may have had effects) and never ended.
    Running,
    /// Ended, but its output never reached the rollout.
    Ended { success: bool },
}

/// What the model and the user are told about a call that has no output because rein
/// stopped (a crash, a kill): the one place that says what may have happened.
pub fn interrupted_call_output(progress: CallProgress) -> (String, bool) {
    match progress {
        CallProgress::NotStarted => (ABORTED_TOOL_OUTPUT.to_owned(), false),
        CallProgress::Running => (
            "outcome unknown: rein stopped while this call was running, so its process was \
             interrupted; it may have had some or all of its effects"
                .to_owned(),
            false,
        ),
        CallProgress::Ended { success } => (
            format!(
                "this call finished ({}) but rein stopped before its output was recorded; \
                 the output is lost",
                if success {
                    "successfully"
                } else {
                    "with a failure"
                }
            ),
            false,
        ),
    }
}

/// Closes a turn that a crash left open, so the next model request is valid: every tool
/// call of that turn without an output gets an "aborted" output, open approvals are
/// cancelled, the interruption marker is appended and the turn ends as `Interrupted`.
/// Events of a thread with no open turn come back unchanged.
pub fn repair_for_resume(mut events: Vec<Event>) -> Vec<Event> {
    let (Some((turn, turn_start)), Some(last)) = (open_turn(&events), events.last()) else {
        return events;
    };
    let (thread_id, timestamp_ms) = (last.thread_id, last.timestamp_ms);
    let mut next_seq = last.seq + 1;
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
    for approval_id in open_approvals(&events[turn_start..], turn) {
        repairs.push(synthetic(EventMsg::ClientRequestResolved {
            request_id: approval_id,
            outcome: ApprovalOutcome::Cancelled,
            grant: None,
        }));
    }
    for (call_id, progress) in calls_without_output(&events[turn_start..]) {
        let (output, success) = interrupted_call_output(progress);
        // A call that had begun may have had an effect: its facts say the crash hid how
        // it ended (or how it ended, when its end was recorded but not its output).
        let facts = match progress {
            CallProgress::NotStarted => None,
            CallProgress::Running | CallProgress::Ended { .. } => {
                began(&events[turn_start..], &call_id).map(|action| {
                    Box::new(ToolFacts {
                        action,
                        outcome: ended(&events[turn_start..], &call_id).unwrap_or(
                            ToolOutcome::Interrupted {
                                cause: InterruptCause::ProcessStopped,
                            },
                        ),
                        duration_ms: 0,
                    })
                })
            }
        };
        repairs.push(synthetic(EventMsg::ItemCompleted {
            item: Item::ToolOutput {
                id: ItemId::new(),
                call_id,
                output,
                success,
                facts,
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

/// The turn the reducer would consider active after `events`, with the index of the
/// event that first started it (a recovered turn continues its record). Found by a scan
/// rather than a fold so that resuming a large rollout does not copy its history twice;
/// `repair_matches_the_reducer` checks it agrees with `ThreadState::active_turn`.
fn open_turn(events: &[Event]) -> Option<(TurnId, usize)> {
    let mut active: Option<TurnId> = None;
    let mut record: Option<(TurnId, usize)> = None;
    for (i, event) in events.iter().enumerate() {
        match &event.msg {
            EventMsg::TurnStarted { .. } => {
                if let Some(id) = event.turn_id {
                    active = Some(id);
                    if record.map(|(r, _)| r) != Some(id) {
                        record = Some((id, i));
                    }
                }
            }
            EventMsg::TurnCompleted { .. }
            | EventMsg::TurnAborted { .. }
            | EventMsg::TurnFailed { .. }
                if active == event.turn_id =>
            {
                active = None;
            }
            EventMsg::ShutdownComplete => active = None,
            _ => {}
        }
    }
    let active = active?;
    Some(record.filter(|(r, _)| *r == active).unwrap_or((active, 0)))
}

fn completed_items(events: &[Event]) -> impl Iterator<Item = &Item> {
    events.iter().filter_map(|e| match &e.msg {
        EventMsg::ItemCompleted { item } => Some(item),
        _ => None,
    })
}

fn calls_without_output(events: &[Event]) -> Vec<(String, CallProgress)> {
    let answered: HashSet<&str> = completed_items(events)
        .filter_map(|i| match i {
            Item::ToolOutput { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    let mut progress: HashMap<&str, CallProgress> = HashMap::new();
    for event in events {
        match &event.msg {
            EventMsg::ToolCallBegin { call_id, .. } => {
                progress.insert(call_id, CallProgress::Running);
            }
            EventMsg::ToolCallEnd {
                call_id, success, ..
            } => {
                progress.insert(call_id, CallProgress::Ended { success: *success });
            }
            _ => {}
        }
    }
    completed_items(events)
        .filter_map(|i| match i {
            Item::ToolCall { call_id, .. } if !answered.contains(call_id.as_str()) => Some((
                call_id.clone(),
                progress
                    .get(call_id.as_str())
                    .copied()
                    .unwrap_or(CallProgress::NotStarted),
            )),
            _ => None,
        })
        .collect()
}

/// How the call said it ended, if its end was recorded.
fn ended(events: &[Event], call: &str) -> Option<ToolOutcome> {
    events.iter().find_map(|e| match &e.msg {
        EventMsg::ToolCallEnd {
            call_id, outcome, ..
        } if call_id == call => Some(outcome.clone()),
        _ => None,
    })
}

/// What the call said it would do when it began, if it began.
fn began(events: &[Event], call: &str) -> Option<ToolAction> {
    events.iter().find_map(|e| match &e.msg {
        EventMsg::ToolCallBegin {
            call_id, action, ..
        } if call_id == call => Some(action.clone()),
        _ => None,
    })
}

fn open_approvals(events: &[Event], turn: TurnId) -> Vec<String> {
    let mut open: Vec<String> = Vec::new();
    for event in events.iter().filter(|e| e.turn_id == Some(turn)) {
        match &event.msg {
            EventMsg::ClientRequested { request_id, .. } => open.push(request_id.clone()),
            EventMsg::ClientRequestResolved { request_id, .. } => open.retain(|a| a != request_id),
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
            EventMsg::ThreadConfigured {
                settings, strategy, ..
            } => EventMsg::ThreadConfigured {
                // A fork is the root of its own tree, working as its parent did.
                session_id: SessionId::from(new_thread),
                settings,
                forked_from: Some(parent),
                strategy,
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use rein_core::thread::state::{fold_owned, ThreadState};
    use rein_protocol::{TaskKind, ThreadSettings};

    fn ev(thread: ThreadId, turn: Option<TurnId>, seq: u64, msg: EventMsg) -> Event {
        Event {
            thread_id: thread,
            turn_id: turn,
            seq,
            timestamp_ms: 0,
            msg,
        }
    }

    fn started(thread: ThreadId, turn: TurnId, seq: u64) -> Event {
        let settings = ThreadSettings {
            model: "m".into(),
            cwd: "/".into(),
            approval_policy: Default::default(),
            sandbox_policy: Default::default(),
            sandbox_options: None,
            reasoning_effort: None,
            budget: Default::default(),
            instructions: String::new(),
        };
        ev(
            thread,
            Some(turn),
            seq,
            EventMsg::TurnStarted {
                kind: TaskKind::Regular,
                settings,
                recovered: false,
                output_schema: None,
            },
        )
    }

    #[test]
    fn repair_matches_the_reducer() {
        let thread = ThreadId::new();
        let (a, b) = (TurnId::new(), TurnId::new());
        let end = |turn, seq, msg| ev(thread, Some(turn), seq, msg);
        let aborted = EventMsg::TurnAborted {
            reason: TurnAbortReason::Interrupted,
        };
        let sequences: Vec<Vec<Event>> = vec![
            vec![],
            vec![started(thread, a, 0)],
            vec![started(thread, a, 0), end(a, 1, aborted.clone())],
            // A recovered turn reuses the id and continues its record.
            vec![
                started(thread, a, 0),
                end(a, 1, aborted.clone()),
                started(thread, a, 2),
            ],
            // An end for another turn does not close the active one.
            vec![started(thread, a, 0), end(b, 1, aborted)],
            vec![started(thread, a, 0), started(thread, b, 1)],
            vec![
                started(thread, a, 0),
                ev(thread, None, 1, EventMsg::ShutdownComplete),
            ],
        ];
        for events in sequences {
            let state = ThreadState::from_events(&events);
            let scanned = open_turn(&events).map(|(t, _)| t);
            assert_eq!(
                scanned,
                state.active_turn.as_ref().map(|t| t.id),
                "{events:?}"
            );
            let repaired = ThreadState::from_events(&repair_for_resume(events.clone()));
            assert!(repaired.is_idle());
            assert_eq!(fold_owned(events.clone()), state);
        }
    }
}
