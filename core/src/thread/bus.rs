//! Fan-out of a thread's events to its subscribers. Each subscriber has its own queue, and
//! publishing never waits: a slow client must never stall the kernel or make another
//! client miss events.
//!
//! A queue is bounded in bytes by coalescing, not by dropping: once a subscriber has more
//! than [`QUEUE_BUDGET_BYTES`] waiting, a streaming delta that continues the delta at the
//! tail of its queue (same kind, same item or call, same turn) is appended to it instead of
//! queued after it. Nothing is dropped or reordered: the subscriber reads the same text in
//! the same order, in fewer, larger deltas (the merged one carries the `seq` of the last
//! delta in it). Events other than deltas are never merged; each of them is also in the
//! rollout, so what a stalled subscriber holds is bounded by the budget plus what the
//! thread records.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use rein_protocol::{Event, EventMsg};
use tokio::sync::Notify;

/// Bytes a subscriber may have waiting before adjacent deltas are merged.
pub const QUEUE_BUDGET_BYTES: usize = 256 * 1024;

/// What an event costs a queue, roughly: its delta text, plus a fixed share for the rest.
const EVENT_OVERHEAD_BYTES: usize = 160;

#[derive(Default)]
pub(crate) struct EventBus {
    inner: Mutex<BusInner>,
}

#[derive(Default)]
struct BusInner {
    subscribers: Vec<Arc<Queue>>,
    closed: bool,
}

/// One subscriber's queue.
#[derive(Default)]
struct Queue {
    state: Mutex<QueueState>,
    ready: Notify,
}

#[derive(Default)]
struct QueueState {
    events: VecDeque<Arc<Event>>,
    bytes: usize,
    /// No more events will come.
    closed: bool,
    /// The stream was dropped: stop queueing for it.
    gone: bool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl EventBus {
    pub(crate) fn subscribe(&self) -> EventStream {
        let queue = Arc::new(Queue::default());
        let mut inner = lock(&self.inner);
        if inner.closed {
            lock(&queue.state).closed = true;
        } else {
            inner.subscribers.push(Arc::clone(&queue));
        }
        EventStream { queue }
    }

    pub(crate) fn publish(&self, event: &Arc<Event>) {
        lock(&self.inner).subscribers.retain(|queue| {
            let mut state = lock(&queue.state);
            if state.gone {
                return false;
            }
            state.push(event);
            drop(state);
            queue.ready.notify_one();
            true
        });
    }

    /// No more events will come: end every stream (after what it has queued).
    pub(crate) fn close(&self) {
        let mut inner = lock(&self.inner);
        inner.closed = true;
        for queue in inner.subscribers.drain(..) {
            lock(&queue.state).closed = true;
            queue.ready.notify_one();
        }
    }
}

/// The delta text of `msg` and what it continues: its kind and item (or call).
fn delta_parts(msg: &EventMsg) -> Option<(u8, &str, &str)> {
    match msg {
        EventMsg::AgentMessageDelta { item_id, delta } => Some((0, item_id.0.as_str(), delta)),
        EventMsg::ReasoningDelta { item_id, delta } => Some((1, item_id.0.as_str(), delta)),
        EventMsg::ToolOutputDelta { call_id, delta } => Some((2, call_id.as_str(), delta)),
        _ => None,
    }
}

fn cost(event: &Event) -> usize {
    EVENT_OVERHEAD_BYTES + delta_parts(&event.msg).map_or(0, |(_, _, d)| d.len())
}

impl QueueState {
    fn push(&mut self, event: &Arc<Event>) {
        if self.bytes > QUEUE_BUDGET_BYTES && self.merge_into_tail(event) {
            return;
        }
        self.bytes += cost(event);
        self.events.push_back(Arc::clone(event));
    }

    /// Append `event`'s delta to the tail if the tail is the delta it continues.
    fn merge_into_tail(&mut self, event: &Event) -> bool {
        let Some((kind, stream, text)) = delta_parts(&event.msg) else {
            return false;
        };
        let Some(tail) = self.events.back_mut() else {
            return false;
        };
        let continues = tail.turn_id == event.turn_id
            && delta_parts(&tail.msg).is_some_and(|(k, s, _)| k == kind && s == stream);
        if !continues {
            return false;
        }
        // Copied once if other subscribers share it; merged in place from then on.
        let tail = Arc::make_mut(tail);
        match &mut tail.msg {
            EventMsg::AgentMessageDelta { delta, .. }
            | EventMsg::ReasoningDelta { delta, .. }
            | EventMsg::ToolOutputDelta { delta, .. } => delta.push_str(text),
            _ => return false,
        }
        tail.seq = event.seq;
        tail.timestamp_ms = event.timestamp_ms;
        self.bytes += text.len();
        true
    }

    fn pop(&mut self) -> Option<Arc<Event>> {
        let event = self.events.pop_front()?;
        self.bytes = self.bytes.saturating_sub(cost(&event));
        Some(event)
    }
}

/// A subscriber's view of a thread's events, in `seq` order. Ends after the thread shuts
/// down.
pub struct EventStream {
    queue: Arc<Queue>,
}

impl Drop for EventStream {
    fn drop(&mut self) {
        let mut state = lock(&self.queue.state);
        state.gone = true;
        state.events.clear();
    }
}

impl EventStream {
    /// The next event, or `None` once the thread has shut down and all events were read.
    pub async fn recv(&mut self) -> Option<Arc<Event>> {
        loop {
            {
                let mut state = lock(&self.queue.state);
                if let Some(event) = state.pop() {
                    return Some(event);
                }
                if state.closed {
                    return None;
                }
            }
            // A notification sent since the check is kept as a permit: none is missed.
            self.queue.ready.notified().await;
        }
    }

    /// An event that has already arrived, without waiting.
    pub fn try_recv(&mut self) -> Option<Arc<Event>> {
        lock(&self.queue.state).pop()
    }

    /// Bytes waiting in this subscriber's queue (by the queue's own reckoning).
    pub fn queued_bytes(&self) -> usize {
        lock(&self.queue.state).bytes
    }

    /// Skip events until one matches; `None` if the stream ends first.
    pub async fn wait_for(&mut self, mut pred: impl FnMut(&Event) -> bool) -> Option<Arc<Event>> {
        while let Some(ev) = self.recv().await {
            if pred(&ev) {
                return Some(ev);
            }
        }
        None
    }

    /// Collect events up to and including the first that matches.
    pub async fn collect_until(&mut self, mut pred: impl FnMut(&Event) -> bool) -> Vec<Arc<Event>> {
        let mut out = Vec::new();
        while let Some(ev) = self.recv().await {
            let done = pred(&ev);
            out.push(ev);
            if done {
                break;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rein_protocol::{ItemId, ThreadId, TurnId};

    fn event(seq: u64, turn: TurnId, msg: EventMsg) -> Arc<Event> {
        Arc::new(Event {
            thread_id: ThreadId::new(),
            turn_id: Some(turn),
            seq,
            timestamp_ms: seq,
            msg,
        })
    }

    fn delta(item: &ItemId, text: &str) -> EventMsg {
        EventMsg::AgentMessageDelta {
            item_id: item.clone(),
            delta: text.to_owned(),
        }
    }

    /// A subscriber that never reads holds about the budget, and then reads every delta's
    /// text, in order, with every other event where it was.
    #[tokio::test]
    async fn a_stalled_subscriber_is_bounded_and_loses_nothing() {
        let bus = EventBus::default();
        let mut slow = bus.subscribe();
        let mut fast = bus.subscribe();
        let turn = TurnId::new();
        let (a, b) = (ItemId::new(), ItemId::new());
        let mut seq = 0;
        let mut sent = String::new();
        let mut publish = |msg: EventMsg| {
            seq += 1;
            bus.publish(&event(seq, turn, msg));
        };
        for i in 0..20_000 {
            let text = format!("a{i:05} ");
            sent.push_str(&text);
            publish(delta(&a, &text));
        }
        publish(EventMsg::Warning {
            message: "between".into(),
        });
        for i in 0..20_000 {
            publish(delta(&b, &format!("b{i:05} ")));
        }
        // Without coalescing, 40,001 events of ~170 bytes each: over 6 MB.
        assert!(
            slow.queued_bytes() < 2 * QUEUE_BUDGET_BYTES + 400_000,
            "{}",
            slow.queued_bytes()
        );
        // The fast one, reading as it goes, would see every delta on its own; it shares
        // events with the slow one and is not changed by the merging.
        let first = fast.try_recv().unwrap();
        assert_eq!(first.msg, delta(&a, "a00000 "));
        bus.close();
        let mut read_a = String::new();
        let mut order = Vec::new();
        let mut last_seq = 0;
        while let Some(ev) = slow.recv().await {
            assert!(ev.seq > last_seq, "in order");
            last_seq = ev.seq;
            match &ev.msg {
                EventMsg::AgentMessageDelta { item_id, delta } if *item_id == a => {
                    read_a.push_str(delta);
                    order.push('a');
                }
                EventMsg::AgentMessageDelta { .. } => order.push('b'),
                EventMsg::Warning { .. } => order.push('w'),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(read_a, sent);
        assert_eq!(last_seq, 40_001, "the last delta's seq ends the stream");
        order.dedup();
        assert_eq!(order, ['a', 'w', 'b']);
    }

    #[tokio::test]
    async fn a_dropped_stream_is_forgotten_and_a_late_one_ends_at_once() {
        let bus = EventBus::default();
        let stream = bus.subscribe();
        drop(stream);
        bus.publish(&event(1, TurnId::new(), EventMsg::ShutdownComplete));
        assert!(lock(&bus.inner).subscribers.is_empty());
        bus.close();
        let mut late = bus.subscribe();
        assert!(late.recv().await.is_none());
    }
}
