//! The durable watermark between the emitter and the subscribers. Events leave in seq
//! order, each only once the store has got as far with it as it needs: a recorded event
//! once it is written, a turn-ending one once it is durable; deltas and answers to Ops wait
//! behind whatever was emitted before them. The store reports progress through
//! [`RecordProgress`] from its own threads; whoever advances the watermark (the store's
//! threads, or the emitter when nothing waits) publishes what it released, under one lock,
//! so order is kept whoever does it.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use rein_protocol::Event;
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

#[derive(Default)]
struct Inner {
    queue: VecDeque<Entry>,
    written: Option<u64>,
    durable: Option<u64>,
    failures: Vec<RecorderError>,
    /// The last report was a failure: further ones are not warned about again until a
    /// write succeeds (a full disk fails every event).
    failing: bool,
}

impl Inner {
    fn passes(&self, gate: Gate) -> bool {
        match gate {
            Gate::Open => true,
            Gate::Written(seq) => self.written.is_some_and(|w| w >= seq),
            Gate::Durable(seq) => self.durable.is_some_and(|d| d >= seq),
        }
    }
}

pub(crate) struct Outbox {
    inner: Mutex<Inner>,
    bus: Arc<EventBus>,
    failed: Notify,
}

impl Outbox {
    pub(crate) fn new(bus: Arc<EventBus>) -> Self {
        Self {
            inner: Mutex::new(Inner::default()),
            bus,
            failed: Notify::new(),
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
            self.bus.publish(&event);
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

    /// Resolves when the store reports a failure.
    pub(crate) async fn failure_reported(&self) {
        self.failed.notified().await;
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
                Some(Entry::Event(event, _)) => self.bus.publish(&event),
                Some(Entry::Then(then)) => then(),
                None => break,
            }
        }
    }
}

impl RecordProgress for Outbox {
    fn written(&self, through_seq: u64) {
        self.advance(|i| {
            i.failing = false;
            i.written = i.written.max(Some(through_seq));
        });
    }

    fn durable(&self, through_seq: u64) {
        self.advance(|i| {
            i.failing = false;
            i.written = i.written.max(Some(through_seq));
            i.durable = i.durable.max(Some(through_seq));
        });
    }

    fn failed(&self, seq: u64, error: RecorderError) {
        let mut first = false;
        self.advance(|i| {
            i.written = i.written.max(Some(seq));
            i.durable = i.durable.max(Some(seq));
            first = !i.failing;
            i.failing = true;
            if first {
                i.failures.push(error);
            }
        });
        if first {
            self.failed.notify_one();
        }
    }
}
