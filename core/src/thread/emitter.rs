//! The one way an event comes into being: assign the next `seq`, fold it into the state,
//! hand it to the store (deltas excepted), and publish it once the store has written it —
//! or, for a turn-ending event and `ShutdownComplete`, once it is durable. Owned by the
//! submission loop, so the order is the loop's order; nothing here waits for the store:
//! the [`Outbox`] holds what the store has not reached yet and releases it in order.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use rein_protocol::{ErrorCode, Event, EventMsg, ThreadId, TurnId};
use tokio::sync::oneshot;

use super::bus::EventBus;
use super::outbox::{Gate, Outbox};
use super::state::ThreadState;
use crate::recorder::{EventRecorder, Need, NullRecorder};

pub(crate) struct Emitter {
    thread_id: ThreadId,
    outbox: Arc<Outbox>,
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
        mut recorder: Box<dyn EventRecorder>,
    ) -> Self {
        let outbox = Arc::new(Outbox::new(bus));
        recorder.bind(Arc::clone(&outbox) as _);
        Self {
            thread_id,
            outbox,
            recorder,
        }
    }

    /// Whether the thread's events are recorded (false for an ephemeral thread).
    pub(crate) fn persists(&self) -> bool {
        self.recorder.persists()
    }

    pub(crate) fn bus(&self) -> &Arc<EventBus> {
        self.outbox.bus()
    }

    pub(crate) fn emit(&mut self, state: &mut ThreadState, turn_id: Option<TurnId>, msg: EventMsg) {
        let event = self.stamp(state, turn_id, msg);
        let gate = if event.msg.is_delta() || !self.recorder.persists() {
            Gate::Open
        } else if needs_sync(&event.msg) {
            self.recorder.record(&event, Need::Durable);
            Gate::Durable(event.seq)
        } else {
            self.recorder.record(&event, Need::Written);
            Gate::Written(event.seq)
        };
        self.outbox.push(event, gate);
    }

    /// Run `then` once everything emitted so far has been published: an Op's answer never
    /// overtakes the events it caused (a `turn/start` is answered only once its prompt is
    /// written), and a tool learns its `ToolCallBegin` is on disk before it starts.
    pub(crate) fn after_published(&self, then: impl FnOnce() + Send + 'static) {
        self.outbox.then(Box::new(then));
    }

    /// Answer an Op once what it caused is published.
    pub(crate) fn answer<T: Send + 'static>(&self, reply: oneshot::Sender<T>, result: T) {
        self.after_published(move || {
            let _ = reply.send(result);
        });
    }

    /// Resolves when the thread goes read-only (the store reported a failure) or may write
    /// again; [`Self::read_only`] says which.
    pub(crate) fn changed(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let outbox = Arc::clone(&self.outbox);
        async move { outbox.changed().await }
    }

    /// The store failed to write this thread's events and has not got past that since.
    pub(crate) fn read_only(&self) -> bool {
        self.outbox.read_only()
    }

    /// Ask the store to try again what it could not write.
    pub(crate) fn retry(&mut self) {
        self.recorder.retry();
    }

    /// Tell the clients what the store could not write (the events themselves are
    /// published anyway, a turn end as failed; the store keeps them and retries). The
    /// error itself is not recorded.
    /// Returns what the first of them says.
    pub(crate) fn report_failures(&mut self, state: &mut ThreadState) -> Option<String> {
        let mut first = None;
        for failure in self.outbox.take_failures() {
            first.get_or_insert_with(|| failure.to_string());
            let warning = self.stamp(
                state,
                state.active_turn.as_ref().map(|t| t.id),
                EventMsg::Error {
                    code: ErrorCode::RolloutWrite,
                    message: format!("the rollout could not be written: {failure}"),
                },
            );
            self.outbox.push(warning, Gate::Open);
        }
        first
    }

    /// Wait until everything emitted is published (`ShutdownComplete` durable), then
    /// release the recorder (and with it the thread's claim on its rollout): nothing more
    /// will be recorded, and whoever asked for the shutdown may reopen the rollout as soon
    /// as it is answered.
    pub(crate) async fn close(&mut self) {
        let (published, all_published) = oneshot::channel();
        self.answer(published, ());
        let (released, all_released) = oneshot::channel::<()>();
        self.recorder.close(Box::new(move || {
            let _ = released.send(());
        }));
        let _ = all_published.await;
        let _ = all_released.await;
        if self.outbox.waiting() > 0 {
            tracing::warn!(thread = %self.thread_id, "closing with events the store never reported on");
        }
        self.recorder = Box::new(NullRecorder);
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
