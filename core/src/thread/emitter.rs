//! The one way an event comes into being: assign the next `seq`, fold it into the state,
//! persist it (deltas excepted), make it durable before a turn-ending event is seen, and
//! publish it. Owned by the submission loop, so the order is the loop's order.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use rein_protocol::{ErrorCode, Event, EventMsg, ThreadId, TurnId};

use super::bus::EventBus;
use super::state::ThreadState;
use crate::recorder::EventRecorder;

pub(crate) struct Emitter {
    thread_id: ThreadId,
    bus: Arc<EventBus>,
    recorder: Box<dyn EventRecorder>,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Events after which a client may act on the rollout (resume it, show it as done).
fn needs_sync(msg: &EventMsg) -> bool {
    matches!(
        msg,
        EventMsg::TurnCompleted { .. }
            | EventMsg::TurnAborted { .. }
            | EventMsg::TurnFailed { .. }
            | EventMsg::ShutdownComplete
    )
}

impl Emitter {
    pub(crate) fn new(
        thread_id: ThreadId,
        bus: Arc<EventBus>,
        recorder: Box<dyn EventRecorder>,
    ) -> Self {
        Self {
            thread_id,
            bus,
            recorder,
        }
    }

    pub(crate) fn bus(&self) -> &Arc<EventBus> {
        &self.bus
    }

    pub(crate) fn emit(&mut self, state: &mut ThreadState, turn_id: Option<TurnId>, msg: EventMsg) {
        let event = self.stamp(state, turn_id, msg);
        if !event.msg.is_delta() {
            let persisted = self.recorder.record(&event).and_then(|()| {
                if needs_sync(&event.msg) {
                    self.recorder.sync()
                } else {
                    Ok(())
                }
            });
            if let Err(e) = persisted {
                // Publish first so clients see the event, then say the rollout missed it.
                self.bus.publish(&event);
                let warning = self.stamp(
                    state,
                    turn_id,
                    EventMsg::Error {
                        code: ErrorCode::RolloutWrite,
                        message: format!("the rollout could not be written: {e}"),
                    },
                );
                self.bus.publish(&warning);
                return;
            }
        }
        self.bus.publish(&event);
    }

    /// Record events of an earlier life (a fork's copied history) without publishing them.
    pub(crate) fn record_replayed(
        &mut self,
        events: &[Event],
    ) -> Result<(), crate::recorder::RecorderError> {
        for event in events {
            self.recorder.record(event)?;
        }
        self.recorder.sync()
    }

    /// Release the recorder (and with it the rollout's writer lock): nothing more will be
    /// recorded after `ShutdownComplete`, and whoever asked for the shutdown may reopen the
    /// rollout as soon as it is answered.
    pub(crate) fn close(&mut self) {
        self.sync();
        self.recorder = Box::new(crate::recorder::NullRecorder);
    }

    pub(crate) fn sync(&mut self) {
        if let Err(e) = self.recorder.sync() {
            tracing::warn!(thread = %self.thread_id, "rollout sync failed: {e}");
        }
    }

    fn stamp(&self, state: &mut ThreadState, turn_id: Option<TurnId>, msg: EventMsg) -> Arc<Event> {
        let event = Event {
            thread_id: self.thread_id,
            turn_id,
            seq: state.next_seq(),
            timestamp_ms: now_ms(),
            msg,
        };
        state.apply(&event);
        Arc::new(event)
    }
}
