//! Where a thread's events go besides its subscribers: the rollout. The submission loop
//! owns one [`EventRecorder`] per thread and hands it every persisted event in order.

use std::path::PathBuf;

use rein_protocol::{Event, ThreadId};

#[derive(Debug, thiserror::Error)]
pub enum RecorderError {
    #[error("writing the rollout {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the rollout of thread {thread} is locked by {holder}")]
    Locked { thread: ThreadId, holder: String },
    #[error("encoding an event: {0}")]
    Encode(#[from] serde_json::Error),
}

/// Persists a thread's events. Called only from the thread's submission loop, so an
/// implementation needs no locking of its own.
pub trait EventRecorder: Send + 'static {
    /// Append one event. Streaming deltas are never passed here.
    fn record(&mut self, event: &Event) -> Result<(), RecorderError>;

    /// Make everything recorded so far durable as the configured durability requires.
    /// Called before a turn-ending event or `ShutdownComplete` reaches any client.
    fn sync(&mut self) -> Result<(), RecorderError>;

    /// Where the events go, if it is a file.
    fn path(&self) -> Option<PathBuf> {
        None
    }
}

/// Records nothing (ephemeral threads).
#[derive(Debug, Default)]
pub struct NullRecorder;

impl EventRecorder for NullRecorder {
    fn record(&mut self, _event: &Event) -> Result<(), RecorderError> {
        Ok(())
    }

    fn sync(&mut self) -> Result<(), RecorderError> {
        Ok(())
    }
}
