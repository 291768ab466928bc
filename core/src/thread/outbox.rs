//! The durable watermark between the emitter and the subscribers. Events leave in seq
//! order, each only once the store has got as far with it as it needs: a recorded event
//! once it is written, a turn-ending one once it is durable; deltas and answers to Ops wait
//! behind whatever was emitted before them. The store reports progress through
//! [`RecordProgress`] from its own threads; whoever advances the watermark (the store's
//! threads, or the emitter when nothing waits) publishes what it released, under one lock,
//! so order is kept whoever does it.
//!
//! When the store reports a failure (a full disk) the thread goes read-only: what waits
//! and what follows leaves at once, since waiting would stall the thread for good, but a
//! `TurnCompleted` that is not durable leaves as `TurnFailed { code: RolloutWrite }`:
//! nothing is reported done that a restart could lose. A report that the store got past
//! the failed event ends the read-only state.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use rein_protocol::{ErrorCode, Event, EventMsg};
use tokio::sync::Notify;

use super::bus::EventBus;
use crate::recorder::{RecordProgress, RecorderError};

/// What an entry waits for before it may leave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Gate {
    /// Nothing but what is ahead of it (deltas, events of ephemeral threads).
    Open,
    /// The event with this seq is written.
    Written(u64),
    /// The event with this seq is durable.
    Durable(u64),
}

enum Entry {
    Event(Arc<Event>, Gate),
    /// Run once everything ahead has left (an Op's answer, a tool's write-ahead ack).
    Then(Box<dyn FnOnce() + Send>),
}

/// The store failed to record an event and has not yet got past it.
struct Failing {
    /// The failed event: a report through it (or later) ends the failure.
    seq: u64,
    message: String,
}

#[derive(Default)]
struct Inner {
    queue: VecDeque<Entry>,
    written: Option<u64>,
    durable: Option<u64>,
    failures: Vec<RecorderError>,
    /// Set by the first failure, cleared by a report past it: further failures are not
    /// warned about again meanwhile (a full disk fails every event).
    failing: Option<Failing>,
}

impl Inner {
    fn reached(&self, gate: Gate) -> bool {
        match gate {
            Gate::Open => true,
            Gate::Written(seq) => self.written.is_some_and(|w| w >= seq),
            Gate::Durable(seq) => self.durable.is_some_and(|d| d >= seq),
        }
    }

    fn passes(&self, gate: Gate) -> bool {
        self.failing.is_some() || self.reached(gate)
    }

    /// What subscribers get for `event`: itself, unless it claims a turn completed that
    /// the store has not made durable.
    fn outgoing(&self, event: Arc<Event>, gate: Gate) -> Arc<Event> {
        match (&self.failing, &event.msg) {
            (Some(failing), EventMsg::TurnCompleted { .. }) if !self.reached(gate) => {
                Arc::new(Event {
                    msg: EventMsg::TurnFailed {
                        code: ErrorCode::RolloutWrite,
                        message: format!(
                            "the turn is not saved: the rollout could not be written ({})",
                            failing.message
                        ),
                    },
                    ..Event::clone(&event)
                })
            }
            _ => event,
        }
    }

    fn recover(&mut self, through_seq: u64) -> bool {
        if self.failing.as_ref().is_some_and(|f| through_seq >= f.seq) {
            self.failing = None;
            return true;
        }
        false
    }
}

pub(crate) struct Outbox {
    inner: Mutex<Inner>,
    bus: Arc<EventBus>,
    /// Signalled when the thread goes read-only and when it may write again.
    changed: Notify,
}

impl Outbox {
    pub(crate) fn new(bus: Arc<EventBus>) -> Self {
        Self {
            inner: Mutex::new(Inner::default()),
            bus,
            changed: Notify::new(),
        }
    }

    pub(crate) fn bus(&self) -> &Arc<EventBus> {
        &self.bus
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Publish `event` once `gate` and everything ahead of it allow.
    pub(crate) fn push(&self, event: Arc<Event>, gate: Gate) {
        let mut inner = self.lock();
        if inner.queue.is_empty() && inner.passes(gate) {
            self.bus.publish(&inner.outgoing(event, gate));
        } else {
            inner.queue.push_back(Entry::Event(event, gate));
        }
    }

    /// Run `then` once everything pushed before it has left. It runs under the outbox's
    /// lock, on whichever thread releases it: it must be quick and must not push.
    pub(crate) fn then(&self, then: Box<dyn FnOnce() + Send>) {
        let mut inner = self.lock();
        if inner.queue.is_empty() {
            drop(inner);
            then();
        } else {
            inner.queue.push_back(Entry::Then(then));
        }
    }

    /// Events and answers still waiting for the store.
    pub(crate) fn waiting(&self) -> usize {
        self.lock().queue.len()
    }

    /// Failures the store reported since the last call.
    pub(crate) fn take_failures(&self) -> Vec<RecorderError> {
        std::mem::take(&mut self.lock().failures)
    }

    /// Whether the store failed and has not got past the failure since.
    pub(crate) fn read_only(&self) -> bool {
        self.lock().failing.is_some()
    }

    /// Resolves when the thread goes read-only or may write again ([`Self::read_only`]).
    pub(crate) async fn changed(&self) {
        self.changed.notified().await;
    }

    fn advance(&self, update: impl FnOnce(&mut Inner)) {
        let mut inner = self.lock();
        update(&mut inner);
        while let Some(front) = inner.queue.front() {
            let ready = match front {
                Entry::Event(_, gate) => inner.passes(*gate),
                Entry::Then(_) => true,
            };
            if !ready {
                break;
            }
            match inner.queue.pop_front() {
                Some(Entry::Event(event, gate)) => self.bus.publish(&inner.outgoing(event, gate)),
                Some(Entry::Then(then)) => then(),
                None => break,
            }
        }
    }
}

impl RecordProgress for Outbox {
    fn written(&self, through_seq: u64) {
        let mut recovered = false;
        self.advance(|i| {
            recovered = i.recover(through_seq);
            i.written = i.written.max(Some(through_seq));
        });
        if recovered {
            self.changed.notify_one();
        }
    }

    fn durable(&self, through_seq: u64) {
        let mut recovered = false;
        self.advance(|i| {
            recovered = i.recover(through_seq);
            i.written = i.written.max(Some(through_seq));
            i.durable = i.durable.max(Some(through_seq));
        });
        if recovered {
            self.changed.notify_one();
        }
    }

    fn failed(&self, seq: u64, error: RecorderError) {
        let mut first = false;
        self.advance(|i| {
            if let Some(failing) = &mut i.failing {
                // Still failing: the store must now get past this event too.
                failing.seq = failing.seq.max(seq);
                return;
            }
            first = true;
            i.failing = Some(Failing {
                seq,
                message: error.to_string(),
            });
            i.failures.push(error);
        });
        if first {
            self.changed.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rein_protocol::{ThreadId, TurnId};

    fn event(seq: u64, turn: TurnId, msg: EventMsg) -> Arc<Event> {
        Arc::new(Event {
            thread_id: ThreadId::new(),
            turn_id: Some(turn),
            seq,
            timestamp_ms: seq,
            msg,
        })
    }

    fn disk_full() -> RecorderError {
        RecorderError::io(
            "/home/rollout.jsonl",
            std::io::Error::from(std::io::ErrorKind::StorageFull),
        )
    }

    /// A failed write makes the thread read-only: what waited leaves, a turn end that was
    /// not made durable leaves as failed, and a report past the failed event ends it.
    #[tokio::test]
    async fn a_failed_write_fails_the_turn_end_and_a_later_write_ends_read_only() {
        let bus = Arc::new(EventBus::default());
        let mut stream = bus.subscribe();
        let outbox = Outbox::new(Arc::clone(&bus));
        let turn = TurnId::new();
        let item = event(
            1,
            turn,
            EventMsg::Warning {
                message: "i".into(),
            },
        );
        let done = event(
            2,
            turn,
            EventMsg::TurnCompleted {
                last_agent_message: Some("hi".into()),
            },
        );
        outbox.push(Arc::clone(&item), Gate::Written(1));
        outbox.push(Arc::clone(&done), Gate::Durable(2));
        outbox.written(1);
        assert_eq!(stream.try_recv(), Some(Arc::clone(&item)));
        assert_eq!(stream.try_recv(), None, "the turn end waits for its fsync");
        assert!(!outbox.read_only());

        outbox.failed(2, disk_full());
        assert!(outbox.read_only());
        outbox.changed().await; // the loop is told
        let message = format!(
            "the turn is not saved: the rollout could not be written ({})",
            disk_full()
        );
        let failed = Event {
            msg: EventMsg::TurnFailed {
                code: ErrorCode::RolloutWrite,
                message,
            },
            ..Event::clone(&done)
        };
        assert_eq!(stream.try_recv().as_deref(), Some(&failed));
        assert_eq!(outbox.take_failures().len(), 1);

        // Still failing: no second warning, and what follows does not wait.
        let next = event(
            3,
            turn,
            EventMsg::Warning {
                message: "n".into(),
            },
        );
        outbox.failed(3, disk_full());
        outbox.push(Arc::clone(&next), Gate::Written(3));
        assert_eq!(stream.try_recv(), Some(next));
        assert!(outbox.take_failures().is_empty());

        // An fsync of something before the failure does not end it; a retry past it does.
        outbox.durable(1);
        assert!(outbox.read_only());
        outbox.durable(3);
        assert!(!outbox.read_only());
        outbox.changed().await;

        // Writable again: a turn end waits for its fsync and leaves as what it is.
        let turn = TurnId::new();
        let done = event(
            4,
            turn,
            EventMsg::TurnCompleted {
                last_agent_message: None,
            },
        );
        outbox.push(Arc::clone(&done), Gate::Durable(4));
        assert_eq!(stream.try_recv(), None);
        outbox.durable(4);
        assert_eq!(stream.try_recv(), Some(done));
    }
}
