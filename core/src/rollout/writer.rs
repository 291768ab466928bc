//! [`RolloutWriter`]: the [`EventRecorder`] that appends a thread's events to its rollout.
//!
//! Lines are batched in memory and written whole: the buffer goes to the file when it
//! fills, at `sync()`, and on drop. If a write fails part way (disk full), the file is cut
//! back to the last complete line and the batch is kept for the next attempt, so a later
//! append never glues onto half a line and nothing recorded is dropped. One writer per
//! thread file, enforced by [`ThreadLock`].

use std::borrow::Cow;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use rein_protocol::{Event, EventMsg, Item, ThreadId};

use super::blobs::{BlobStore, BlobWriteError};
use super::format::{write_line, SessionMeta, TYPE_EVENT, TYPE_SESSION_META};
use super::index::RolloutIndex;
use super::lock::ThreadLock;
use super::time::now_ms;
use crate::recorder::{EventRecorder, RecorderError};

/// When recorded events are forced to stable storage.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Durability {
    /// fsync at `sync()`: every turn end, before `TurnAborted` and `ShutdownComplete`.
    #[default]
    Turn,
    /// fsync after every event.
    Always,
    /// Leave it to the OS (tests, throwaway threads).
    Never,
}

/// Batches of this many bytes are written without waiting for `sync()`.
pub const DEFAULT_BATCH_BYTES: usize = 256 * 1024;

/// How a writer behaves, and the stores it feeds besides the file.
#[derive(Debug)]
pub struct WriterOptions {
    pub durability: Durability,
    pub batch_bytes: usize,
    pub blobs: BlobStore,
    /// Kept current at write time; failures here are logged, never fatal (the file is
    /// the truth and `reindex` repairs the index).
    pub index: Option<RolloutIndex>,
}

impl WriterOptions {
    pub fn new(blobs: BlobStore) -> Self {
        WriterOptions {
            durability: Durability::default(),
            batch_bytes: DEFAULT_BATCH_BYTES,
            blobs,
            index: None,
        }
    }
}

#[derive(Debug)]
pub struct RolloutWriter {
    thread: ThreadId,
    path: PathBuf,
    file: File,
    /// Length of the file up to its last complete line.
    committed_len: u64,
    /// Whole lines not yet written.
    pending: Vec<u8>,
    /// A failed write could not be cut back; refuse to append until it can.
    needs_repair: bool,
    unsynced_blobs: Vec<PathBuf>,
    titled: bool,
    options: WriterOptions,
    _lock: ThreadLock,
}

impl RolloutWriter {
    /// Creates the rollout of a new thread at `path` and writes its `session_meta`.
    pub fn create(
        path: &Path,
        meta: &SessionMeta,
        options: WriterOptions,
    ) -> Result<Self, RecorderError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| RecorderError::Io { path, source }
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io(dir))?;
        }
        let lock = ThreadLock::acquire(path, meta.thread_id)?;
        let file = OpenOptions::new()
            .append(true)
            .read(true)
            .create_new(true)
            .open(path)
            .map_err(io(path))?;
        let mut writer = RolloutWriter {
            thread: meta.thread_id,
            path: path.to_path_buf(),
            file,
            committed_len: 0,
            pending: Vec::new(),
            needs_repair: false,
            unsynced_blobs: Vec::new(),
            titled: false,
            options,
            _lock: lock,
        };
        write_line(&mut writer.pending, now_ms(), TYPE_SESSION_META, meta)?;
        writer.sync()?;
        if writer.options.durability != Durability::Never {
            if let Some(dir) = path.parent() {
                sync_dir(dir).map_err(io(dir))?;
            }
        }
        Ok(writer)
    }

    /// Reopens an existing rollout to continue it (resume). A torn last line left by a
    /// crash is cut off first: the reader never counted it, and an append must not glue
    /// onto it.
    pub fn open_append(
        path: &Path,
        thread: ThreadId,
        options: WriterOptions,
    ) -> Result<Self, RecorderError> {
        let io = |source| RecorderError::Io {
            path: path.to_path_buf(),
            source,
        };
        let lock = ThreadLock::acquire(path, thread)?;
        let mut file = OpenOptions::new()
            .append(true)
            .read(true)
            .open(path)
            .map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        let complete = complete_len(&mut file, len).map_err(io)?;
        if complete != len {
            file.set_len(complete).map_err(io)?;
        }
        Ok(RolloutWriter {
            thread,
            path: path.to_path_buf(),
            file,
            committed_len: complete,
            pending: Vec::new(),
            needs_repair: false,
            unsynced_blobs: Vec::new(),
            // A resumed thread already has its title in the index.
            titled: true,
            options,
            _lock: lock,
        })
    }

    pub fn thread_id(&self) -> ThreadId {
        self.thread
    }

    /// The listing index this writer keeps current, if any.
    pub fn index(&self) -> Option<&RolloutIndex> {
        self.options.index.as_ref()
    }

    /// Bytes of complete lines on disk (not counting the unwritten batch).
    pub fn committed_len(&self) -> u64 {
        self.committed_len
    }

    /// Writes the pending batch to the file, without fsync.
    pub fn flush(&mut self) -> Result<(), RecorderError> {
        if self.needs_repair {
            self.file
                .set_len(self.committed_len)
                .map_err(|e| self.io_err(e))?;
            self.needs_repair = false;
        }
        if self.pending.is_empty() {
            return Ok(());
        }
        match self.file.write_all(&self.pending) {
            Ok(()) => {
                self.committed_len += self.pending.len() as u64;
                self.pending.clear();
                Ok(())
            }
            Err(e) => {
                if self.file.set_len(self.committed_len).is_err() {
                    self.needs_repair = true;
                }
                Err(self.io_err(e))
            }
        }
    }

    fn io_err(&self, source: io::Error) -> RecorderError {
        RecorderError::Io {
            path: self.path.clone(),
            source,
        }
    }

    fn sync_blobs(&mut self) -> Result<(), RecorderError> {
        for path in std::mem::take(&mut self.unsynced_blobs) {
            let synced = File::open(&path)
                .and_then(|f| f.sync_all())
                .and_then(|()| path.parent().map_or(Ok(()), sync_dir));
            synced.map_err(|source| RecorderError::Io { path, source })?;
        }
        Ok(())
    }

    /// Keep the index's listing fields (title, name) in step with what is written.
    fn note_listing(&mut self, event: &Event) {
        if let (EventMsg::ThreadNamed { name }, Some(index)) = (&event.msg, &self.options.index) {
            if let Err(e) = index.set_name(self.thread, name) {
                tracing::warn!(thread = %self.thread, error = %e, "rollout index: name not stored");
            }
        }
        if self.titled {
            return;
        }
        if let EventMsg::ItemCompleted {
            item: item @ Item::UserMessage { .. },
        } = &event.msg
        {
            self.titled = true;
            let title = item.message_text().unwrap_or_default();
            if let Some(index) = &self.options.index {
                if let Err(e) = index.set_title_if_empty(self.thread, &title) {
                    tracing::warn!(thread = %self.thread, error = %e, "rollout index: title not stored");
                }
            }
        }
    }
}

impl EventRecorder for RolloutWriter {
    fn record(&mut self, event: &Event) -> Result<(), RecorderError> {
        let line: Cow<'_, Event> = if self.options.blobs.would_externalize(&event.msg) {
            Cow::Owned(
                self.options
                    .blobs
                    .externalize(event, &mut self.unsynced_blobs)
                    .map_err(blob_to_recorder)?,
            )
        } else {
            Cow::Borrowed(event)
        };
        write_line(
            &mut self.pending,
            event.timestamp_ms,
            TYPE_EVENT,
            line.as_ref(),
        )?;
        self.note_listing(event);
        match self.options.durability {
            Durability::Always => self.sync(),
            Durability::Turn | Durability::Never
                if self.pending.len() >= self.options.batch_bytes =>
            {
                self.flush()
            }
            Durability::Turn | Durability::Never => Ok(()),
        }
    }

    fn sync(&mut self) -> Result<(), RecorderError> {
        self.flush()?;
        if self.options.durability != Durability::Never {
            // Blobs first: a durable line must never refer to a blob that is not.
            self.sync_blobs()?;
            self.file.sync_data().map_err(|e| self.io_err(e))?;
        }
        if let Some(index) = &self.options.index {
            if let Err(e) = index.touch(self.thread, now_ms()) {
                tracing::warn!(thread = %self.thread, error = %e, "rollout index: updated_at not stored");
            }
        }
        Ok(())
    }

    fn path(&self) -> Option<PathBuf> {
        Some(self.path.clone())
    }
}

impl Drop for RolloutWriter {
    fn drop(&mut self) {
        if let Err(e) = self.sync() {
            tracing::warn!(thread = %self.thread, error = %e, "rollout: final flush failed");
        }
    }
}

fn blob_to_recorder(e: BlobWriteError) -> RecorderError {
    RecorderError::Io {
        path: e.path,
        source: e.source,
    }
}

/// Length of `file` up to and including its last newline.
fn complete_len(file: &mut File, len: u64) -> io::Result<u64> {
    const CHUNK: u64 = 64 * 1024;
    let mut end = len;
    let mut buf = vec![0u8; CHUNK as usize];
    while end > 0 {
        let start = end.saturating_sub(CHUNK);
        let n = (end - start) as usize;
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut buf[..n])?;
        if let Some(pos) = buf[..n].iter().rposition(|&b| b == b'\n') {
            return Ok(start + pos as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}
