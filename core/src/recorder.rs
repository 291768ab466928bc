//! Where a thread's events go besides its subscribers: the session store. The emitter
//! hands every persisted event to the thread's [`EventRecorder`] and returns at once; the
//! store writes it on its own thread and reports back through [`RecordProgress`] how far it
//! got (written, durable), and the emitter publishes each event only once the store has
//! got that far with it. A recorder never blocks its caller and never does I/O on the
//! caller's thread.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rein_protocol::{Event, ThreadId};

#[derive(Clone, Debug, thiserror::Error)]
pub enum RecorderError {
    #[error("writing the rollout {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: Arc<std::io::Error>,
    },
    #[error("the rollout of thread {thread} is locked by {holder}")]
    Locked { thread: ThreadId, holder: String },
    #[error("encoding an event: {0}")]
    Encode(String),
    #[error("the session store has stopped")]
    StoreGone,
}

impl RecorderError {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        RecorderError::Io {
            path: path.into(),
            source: Arc::new(source),
        }
    }
}

impl From<serde_json::Error> for RecorderError {
    fn from(e: serde_json::Error) -> Self {
        RecorderError::Encode(e.to_string())
    }
}

/// How far an event must get before it may be published.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// Written to the file (a `write`, survives a crash of this process).
    Written,
    /// Made durable as the store's durability setting says (fsync for `turn` and `always`).
    Durable,
}

/// What the store tells a thread about its events. Seqs are the events' own; a report
/// covers every event recorded with that seq or a lower one. Implementations must be
/// quick and must never block: the store's threads call them.
pub trait RecordProgress: Send + Sync + 'static {
    fn written(&self, through_seq: u64);
    fn durable(&self, through_seq: u64);
    /// Recording the event `seq` (and possibly what follows) failed. The thread goes
    /// read-only: what it emitted is published (a turn end that is not durable as a
    /// failure, never as completed), and it takes nothing new until a write succeeds. The
    /// store keeps what it could not write and tries again with the next write or
    /// [`EventRecorder::retry`]; a later `written`/`durable` report ends the read-only
    /// state.
    fn failed(&self, seq: u64, error: RecorderError);
}

/// Persists a thread's events. Owned by the thread's emitter; every call returns at once.
pub trait EventRecorder: Send + 'static {
    /// Where progress reports go. Called once, before the first `record`.
    fn bind(&mut self, progress: Arc<dyn RecordProgress>);

    /// Queue one event for the store. Streaming deltas are never passed here.
    fn record(&mut self, event: &Arc<Event>, need: Need);

    /// Nothing more will be recorded: once everything before is handled, release the
    /// file (and the thread's claim on it), then call `released`.
    fn close(&mut self, released: Box<dyn FnOnce() + Send>);

    /// Try again to write (and make durable) everything recorded so far, after a failure:
    /// the answer comes as a `written`/`durable` report, or as another `failed`.
    fn retry(&mut self) {}

    /// False for a recorder that keeps nothing (ephemeral threads): events are then
    /// published at once.
    fn persists(&self) -> bool {
        true
    }
}

/// Records nothing (ephemeral threads).
#[derive(Debug, Default)]
pub struct NullRecorder;

impl EventRecorder for NullRecorder {
    fn bind(&mut self, _progress: Arc<dyn RecordProgress>) {}

    fn record(&mut self, _event: &Arc<Event>, _need: Need) {}

    fn close(&mut self, released: Box<dyn FnOnce() + Send>) {
        released();
    }

    fn persists(&self) -> bool {
        false
    }
}

/// Keeps every recorded event in memory and reports it durable at once: what a test
/// needs to look at what a thread would have persisted.
#[derive(Clone, Default)]
pub struct MemoryRecorder {
    events: Arc<Mutex<Vec<Event>>>,
    progress: Option<Arc<dyn RecordProgress>>,
}

impl MemoryRecorder {
    /// The events recorded so far, in order.
    pub fn events(&self) -> Vec<Event> {
        self.events
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

impl EventRecorder for MemoryRecorder {
    fn bind(&mut self, progress: Arc<dyn RecordProgress>) {
        self.progress = Some(progress);
    }

    fn record(&mut self, event: &Arc<Event>, _need: Need) {
        self.events
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(Event::clone(event));
        if let Some(progress) = &self.progress {
            progress.written(event.seq);
            progress.durable(event.seq);
        }
    }

    fn close(&mut self, released: Box<dyn FnOnce() + Send>) {
        released();
    }
}
