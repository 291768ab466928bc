//! The writer thread of a home: it owns every loaded thread's [`RolloutWriter`] and writes
//! each event as it arrives. Commands that queued while it worked are taken together and
//! each thread's new lines go out in one `write`; then each thread hears how far it got
//! (its events may be published), and what must be durable goes to the sync thread. At
//! most `max_open` rollout files are open at once, and a file is closed once its thread has
//! ended a turn or written nothing for [`IDLE_CLOSE`]: an idle thread holds no file
//! descriptor; the file is reopened when there is something to write.

use std::collections::{BTreeMap, HashMap};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rein_protocol::{Event, ThreadId};

use super::syncer::{SyncCmd, SyncReq};
use crate::writer::{Durability, RolloutWriter};
use rein_core::recorder::{Need, RecordProgress, RecorderError};

/// Runs a callback when dropped, if it was not run before: whoever waits on it hears back
/// even if the command never reaches the writer.
pub(crate) struct OnDrop(Option<Box<dyn FnOnce() + Send>>);

impl OnDrop {
    pub(crate) fn new(f: Box<dyn FnOnce() + Send>) -> Self {
        Self(Some(f))
    }

    fn fire(mut self) {
        if let Some(f) = self.0.take() {
            f();
        }
    }
}

impl Drop for OnDrop {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            f();
        }
    }
}

pub(crate) enum WriterCmd {
    /// Take over a thread's writer (created or reopened on a blocking thread).
    Adopt(Box<RolloutWriter>),
    Bind {
        thread: ThreadId,
        progress: Arc<dyn RecordProgress>,
    },
    Record {
        thread: ThreadId,
        event: Arc<Event>,
        need: Need,
    },
    /// Try again to write and make durable everything the thread recorded (after a
    /// failure; the thread hears the outcome as progress).
    Retry { thread: ThreadId },
    /// Write what is pending, release the file and the claim, then fire.
    Close { thread: ThreadId, released: OnDrop },
    /// Fire once everything queued before is written and durable.
    Flush(OnDrop),
}

struct Loaded {
    writer: RolloutWriter,
    progress: Option<Arc<dyn RecordProgress>>,
    /// When it last wrote (for closing the least recently used file).
    tick: u64,
    /// Recorded since the last write: the last seq, and the last that must be durable.
    last: Option<u64>,
    durable: Option<u64>,
    /// The last seq ever recorded, what a retry covers.
    recorded: Option<u64>,
    clean: bool,
}

impl Drop for Loaded {
    fn drop(&mut self) {
        // The writer thread is going away with this thread still loaded (it panicked):
        // release whoever waits, with an error.
        if !self.clean {
            if let Some(progress) = &self.progress {
                progress.failed(u64::MAX, RecorderError::StoreGone);
            }
        }
    }
}

pub(crate) struct WriterThread {
    threads: HashMap<ThreadId, Loaded>,
    /// Open files by last use.
    open: BTreeMap<u64, ThreadId>,
    max_open: usize,
    tick: u64,
    durability: Durability,
    syncer: mpsc::Sender<SyncCmd>,
}

/// A file not written for this long is closed.
pub(crate) const IDLE_CLOSE: Duration = Duration::from_secs(2);

/// How many commands are taken before the batch is written, so a flood of events from
/// one thread cannot starve the rest of their answers.
const MAX_BATCH: usize = 4096;

impl WriterThread {
    pub(crate) fn new(
        durability: Durability,
        max_open: usize,
        syncer: mpsc::Sender<SyncCmd>,
    ) -> Self {
        Self {
            threads: HashMap::new(),
            open: BTreeMap::new(),
            max_open: max_open.max(1),
            tick: 0,
            durability,
            syncer,
        }
    }

    pub(crate) fn run(mut self, rx: &mpsc::Receiver<WriterCmd>) {
        let mut last_write: HashMap<ThreadId, Instant> = HashMap::new();
        loop {
            let first = match rx.recv_timeout(IDLE_CLOSE) {
                Ok(cmd) => cmd,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    self.close_files_idle_since(&mut last_write, Instant::now() - IDLE_CLOSE);
                    continue;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            };
            let mut touched = Vec::new();
            self.handle(first, &mut touched);
            for _ in 0..MAX_BATCH {
                match rx.try_recv() {
                    Ok(cmd) => self.handle(cmd, &mut touched),
                    Err(_) => break,
                }
            }
            let now = Instant::now();
            for thread in touched {
                self.write(thread);
                if self
                    .threads
                    .get(&thread)
                    .is_some_and(|l| l.writer.is_open())
                {
                    last_write.insert(thread, now);
                }
            }
            self.close_idle_files();
            self.close_files_idle_since(&mut last_write, now - IDLE_CLOSE);
        }
        // Every sender is gone: the process is ending. Write what is left.
        let threads: Vec<ThreadId> = self.threads.keys().copied().collect();
        for thread in threads {
            self.write(thread);
            if let Some(mut loaded) = self.threads.remove(&thread) {
                loaded.clean = true;
                report_lost(&loaded.writer);
            }
        }
    }

    /// One arm per writer command, with no wildcard (long because there are that many).
    fn handle(&mut self, cmd: WriterCmd, touched: &mut Vec<ThreadId>) {
        match cmd {
            WriterCmd::Adopt(mut writer) => {
                let thread = writer.thread_id();
                self.tick += 1;
                // Opened again by the first write; an adopted thread may stay idle.
                writer.close_file();
                self.threads.insert(
                    thread,
                    Loaded {
                        writer: *writer,
                        progress: None,
                        tick: self.tick,
                        last: None,
                        durable: None,
                        recorded: None,
                        clean: false,
                    },
                );
            }
            WriterCmd::Bind { thread, progress } => {
                if let Some(loaded) = self.threads.get_mut(&thread) {
                    loaded.progress = Some(progress);
                } else {
                    progress.failed(u64::MAX, RecorderError::StoreGone);
                }
            }
            WriterCmd::Record {
                thread,
                event,
                need,
            } => {
                let Some(loaded) = self.threads.get_mut(&thread) else {
                    return;
                };
                if loaded.last.is_none() {
                    touched.push(thread);
                }
                loaded.last = Some(event.seq);
                loaded.recorded = Some(event.seq);
                if need == Need::Durable || self.durability == Durability::Always {
                    loaded.durable = Some(event.seq);
                }
                if let Err(e) = loaded.writer.record(&event) {
                    if let Some(progress) = &loaded.progress {
                        progress.failed(event.seq, e);
                    }
                }
            }
            WriterCmd::Retry { thread } => {
                let Some(loaded) = self.threads.get_mut(&thread) else {
                    return;
                };
                let Some(recorded) = loaded.recorded else {
                    return;
                };
                if loaded.last.is_none() {
                    touched.push(thread);
                }
                // Everything recorded, made durable: the failure may have been an fsync.
                loaded.last = Some(recorded);
                loaded.durable = Some(recorded);
            }
            WriterCmd::Close { thread, released } => {
                self.write(thread);
                if let Some(tick) = self.threads.get(&thread).map(|l| l.tick) {
                    self.open.remove(&tick);
                }
                if let Some(mut loaded) = self.threads.remove(&thread) {
                    loaded.clean = true;
                    loaded.writer.release();
                    report_lost(&loaded.writer);
                }
                released.fire();
            }
            WriterCmd::Flush(done) => {
                let threads: Vec<ThreadId> = self.threads.keys().copied().collect();
                for thread in threads {
                    self.write(thread);
                    let Some(loaded) = self.threads.get_mut(&thread) else {
                        continue;
                    };
                    if let Ok(Some(job)) = loaded.writer.sync_job() {
                        let _ = self.syncer.send(SyncCmd::Sync(SyncReq {
                            thread,
                            job,
                            seq: None,
                            progress: None,
                            index: loaded.writer.index().cloned(),
                        }));
                    }
                }
                self.close_idle_files();
                if let Err(mpsc::SendError(SyncCmd::Barrier(done))) =
                    self.syncer.send(SyncCmd::Barrier(done))
                {
                    done.fire();
                }
            }
        }
    }

    /// Writes a thread's pending lines and tells it how far it got.
    fn write(&mut self, thread: ThreadId) {
        let Some(loaded) = self.threads.get_mut(&thread) else {
            return;
        };
        let (Some(last), durable) = (loaded.last.take(), loaded.durable.take()) else {
            return;
        };
        let written = loaded.writer.flush();
        self.open.remove(&loaded.tick);
        self.tick += 1;
        loaded.tick = self.tick;
        if loaded.writer.is_open() {
            self.open.insert(self.tick, thread);
        }
        let progress = loaded.progress.clone();
        if let Err(e) = written {
            if let Some(progress) = &progress {
                progress.failed(last, e);
            }
            return;
        }
        match self.durability {
            Durability::Never => {
                if let Some(progress) = &progress {
                    progress.durable(last);
                }
                return;
            }
            // What is written may be published now; a turn end waits for the fsync below
            // (the outbox keeps what follows it behind it).
            Durability::Turn => {
                if let Some(progress) = &progress {
                    progress.written(last);
                }
                if durable.is_none() {
                    return;
                }
            }
            // Nothing is published before its fsync.
            Durability::Always => {}
        }
        let job = loaded.writer.sync_job();
        // A turn ended (or the thread shut down): it goes idle, and its file with it (the
        // sync thread keeps it open until the fsync is done).
        loaded.writer.close_file();
        self.open.remove(&loaded.tick);
        match job {
            Ok(Some(job)) => {
                let sent = self.syncer.send(SyncCmd::Sync(SyncReq {
                    thread,
                    job,
                    seq: Some(last),
                    progress: progress.clone(),
                    index: loaded.writer.index().cloned(),
                }));
                if sent.is_err() {
                    if let Some(progress) = &progress {
                        progress.failed(last, RecorderError::StoreGone);
                    }
                }
            }
            Ok(None) => {
                if let Some(progress) = &progress {
                    progress.durable(last);
                }
            }
            Err(e) => {
                if let Some(progress) = &progress {
                    progress.failed(last, e);
                }
            }
        }
    }

    fn close_files_idle_since(
        &mut self,
        last_write: &mut HashMap<ThreadId, Instant>,
        since: Instant,
    ) {
        last_write.retain(|thread, at| {
            if *at > since {
                return true;
            }
            if let Some(loaded) = self.threads.get_mut(thread) {
                loaded.writer.close_file();
                self.open.remove(&loaded.tick);
            }
            false
        });
    }

    fn close_idle_files(&mut self) {
        while self.open.len() > self.max_open {
            let Some((_, thread)) = self.open.pop_first() else {
                break;
            };
            if let Some(loaded) = self.threads.get_mut(&thread) {
                loaded.writer.close_file();
            }
        }
    }
}

/// Says so when a thread lets go of its rollout with lines never written (the disk stayed
/// full): those events are lost, and whoever ends the process must hear it.
fn report_lost(writer: &RolloutWriter) {
    let bytes = writer.pending_len();
    if bytes > 0 {
        tracing::error!(
            thread = %writer.thread_id(),
            path = %writer.path().display(),
            "rollout: {bytes} bytes of recorded events could not be written and are lost"
        );
    }
}
