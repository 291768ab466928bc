//! Fan-out of a thread's events to its subscribers. Each subscriber has its own unbounded
//! queue: a slow client must never stall the kernel or make another client miss events.
//! Transports put their own bounds on what they buffer for a peer.

use std::sync::{Arc, Mutex, MutexGuard};

use rein_protocol::Event;
use tokio::sync::mpsc;

#[derive(Default)]
pub(crate) struct EventBus {
    inner: Mutex<BusInner>,
}

#[derive(Default)]
struct BusInner {
    subscribers: Vec<mpsc::UnboundedSender<Arc<Event>>>,
    closed: bool,
}

impl EventBus {
    fn lock(&self) -> MutexGuard<'_, BusInner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn subscribe(&self) -> EventStream {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut inner = self.lock();
        if !inner.closed {
            inner.subscribers.push(tx);
        }
        EventStream { rx }
    }

    pub(crate) fn publish(&self, event: &Arc<Event>) {
        self.lock()
            .subscribers
            .retain(|s| s.send(Arc::clone(event)).is_ok());
    }

    /// No more events will come: end every stream.
    pub(crate) fn close(&self) {
        let mut inner = self.lock();
        inner.closed = true;
        inner.subscribers.clear();
    }
}

/// A subscriber's view of a thread's events, in `seq` order. Ends after the thread shuts
/// down.
pub struct EventStream {
    rx: mpsc::UnboundedReceiver<Arc<Event>>,
}

impl EventStream {
    /// The next event, or `None` once the thread has shut down and all events were read.
    pub async fn recv(&mut self) -> Option<Arc<Event>> {
        self.rx.recv().await
    }

    /// An event that has already arrived, without waiting.
    pub fn try_recv(&mut self) -> Option<Arc<Event>> {
        self.rx.try_recv().ok()
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
