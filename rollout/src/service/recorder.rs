//! A loaded thread's [`EventRecorder`] in the rollout service: every call is one message
//! to the writer thread, so recording never waits and never touches a file here.

use std::sync::mpsc;
use std::sync::Arc;

use rein_protocol::{Event, ThreadId};

use super::writer::{OnDrop, WriterCmd};
use rein_core::recorder::{EventRecorder, Need, RecordProgress, RecorderError};

pub(crate) struct StoreRecorder {
    thread: ThreadId,
    tx: mpsc::Sender<WriterCmd>,
    progress: Option<Arc<dyn RecordProgress>>,
    closed: bool,
}

impl StoreRecorder {
    pub(crate) fn new(thread: ThreadId, tx: mpsc::Sender<WriterCmd>) -> Self {
        Self {
            thread,
            tx,
            progress: None,
            closed: false,
        }
    }
}

impl EventRecorder for StoreRecorder {
    fn bind(&mut self, progress: Arc<dyn RecordProgress>) {
        self.progress = Some(Arc::clone(&progress));
        let bind = WriterCmd::Bind {
            thread: self.thread,
            progress: Arc::clone(&progress),
        };
        if self.tx.send(bind).is_err() {
            progress.failed(u64::MAX, RecorderError::StoreGone);
        }
    }

    fn record(&mut self, event: &Arc<Event>, need: Need) {
        let cmd = WriterCmd::Record {
            thread: self.thread,
            event: Arc::clone(event),
            need,
        };
        if self.tx.send(cmd).is_err() {
            if let Some(progress) = &self.progress {
                progress.failed(event.seq, RecorderError::StoreGone);
            }
        }
    }

    fn retry(&mut self) {
        let _ = self.tx.send(WriterCmd::Retry {
            thread: self.thread,
        });
    }

    fn close(&mut self, released: Box<dyn FnOnce() + Send>) {
        self.closed = true;
        // If the writer thread is gone the command comes back and is dropped, which
        // fires `released`: nobody waits forever.
        let _ = self.tx.send(WriterCmd::Close {
            thread: self.thread,
            released: OnDrop::new(released),
        });
    }
}

impl Drop for StoreRecorder {
    fn drop(&mut self) {
        if !self.closed {
            let _ = self.tx.send(WriterCmd::Close {
                thread: self.thread,
                released: OnDrop::new(Box::new(|| {})),
            });
        }
    }
}
