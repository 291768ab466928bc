//! [`RolloutWriter`]: appends one thread's events to its rollout file. The session store
//! keeps one per loaded persisted thread on its writer thread; tests and tools may use one
//! directly.
//!
//! `record` encodes a line into the pending batch; `flush` writes the batch with one
//! `write`; `sync` flushes and fsyncs (blobs first, then the file, then the directory of a
//! new file). If a write fails part way (disk full), the file is cut back to the last
//! complete line and the batch is kept for the next attempt, so a later append never glues
//! onto half a line and nothing recorded is dropped. The file is opened only while there
//! is something to write: [`RolloutWriter::close_file`] lets the store keep a bounded
//! number open, and an idle thread holds no file descriptor at all. One writer per thread
//! file, enforced by the claim of [`ThreadLock`].

use std::borrow::Cow;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rein_protocol::{Event, EventMsg, Item, ThreadId};

use super::blobs::{BlobStore, BlobWriteError};
use super::format::{write_line, LineBody, ParsedLine, TYPE_EVENT, TYPE_SESSION_META};
use super::indexer::IndexClient;
use super::lock::{LockDir, ThreadLock};
use super::time::now_ms;
use rein_core::recorder::RecorderError;
use rein_core::store::{SessionMeta, ThreadEntry};

/// When recorded events are forced to stable storage.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Durability {
    /// fsync before a turn-ending event or `ShutdownComplete` is published.
    #[default]
    Turn,
    /// fsync every event before it is published.
    Always,
    /// Leave it to the OS (tests, throwaway threads).
    Never,
}

/// The longest line a rollout may hold. The reader skips longer lines (reported) without
/// holding them in memory, and the writer refuses to write one, so what is written can
/// always be read back. Large payloads go to the blob store long before this.
pub const MAX_LINE_BYTES: usize = 128 << 20;

/// Batches of this many bytes are written without waiting for `flush()`.
pub const DEFAULT_BATCH_BYTES: usize = 256 * 1024;

/// How a writer behaves, and the stores it feeds besides the file.
#[derive(Clone)]
pub struct WriterOptions {
    pub durability: Durability,
    pub batch_bytes: usize,
    pub blobs: BlobStore,
    /// Kept current at write time; failures here are logged, never fatal (the file is
    /// the truth and `reindex` repairs the index).
    pub index: Option<IndexClient>,
    /// Where the process locks behind the thread's claim live.
    pub locks: LockDir,
}

impl WriterOptions {
    pub fn new(blobs: BlobStore) -> Self {
        WriterOptions {
            durability: Durability::default(),
            batch_bytes: DEFAULT_BATCH_BYTES,
            locks: LockDir::beside_blobs(blobs.dir()),
            blobs,
            index: None,
        }
    }
}

/// What an fsync of a writer's lines needs: the file, the blobs its lines refer to (synced
/// first), and the directory of a file not yet synced since it was created.
pub struct SyncJob {
    pub file: Arc<File>,
    pub path: PathBuf,
    pub blobs: Vec<PathBuf>,
    pub new_dir: Option<PathBuf>,
}

impl SyncJob {
    /// Runs the fsyncs, blobs first: a durable line must never refer to a blob that is not.
    pub fn run(&self) -> Result<(), RecorderError> {
        super::io_guard::assert_off_executor("fsyncing a rollout");
        for path in &self.blobs {
            File::open(path)
                .and_then(|f| f.sync_all())
                .and_then(|()| path.parent().map_or(Ok(()), sync_dir))
                .map_err(|e| RecorderError::io(path.clone(), e))?;
        }
        self.file
            .sync_data()
            .map_err(|e| RecorderError::io(self.path.clone(), e))?;
        if let Some(dir) = &self.new_dir {
            sync_dir(dir).map_err(|e| RecorderError::io(dir.clone(), e))?;
        }
        Ok(())
    }
}

pub struct RolloutWriter {
    thread: ThreadId,
    path: PathBuf,
    /// Open only while there is something to write (see [`Self::close_file`]).
    file: Option<Arc<File>>,
    /// Which file this writer owns, to notice if the path is swapped under it.
    identity: (u64, u64),
    /// Length of the file up to its last complete line.
    committed_len: u64,
    /// Whole lines not yet written.
    pending: Vec<u8>,
    /// A failed write could not be cut back; refuse to append until it can.
    needs_repair: bool,
    unsynced_blobs: Vec<PathBuf>,
    /// The file was created and its directory entry is not yet durable.
    new_dir: Option<PathBuf>,
    titled: bool,
    /// Whether dropping it fsyncs (not when the store's sync thread does that).
    sync_on_drop: bool,
    options: WriterOptions,
    _lock: ThreadLock,
}

impl std::fmt::Debug for RolloutWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RolloutWriter")
            .field("thread", &self.thread)
            .field("path", &self.path)
            .field("committed_len", &self.committed_len)
            .finish_non_exhaustive()
    }
}

/// Opens an existing rollout to append to it: never through a symlink, and only if it is
/// a regular file.
fn open_for_append(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .append(true)
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)?;
    if !file.metadata()?.file_type().is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok(file)
}

fn identity_of(file: &File) -> io::Result<(u64, u64)> {
    let meta = file.metadata()?;
    Ok((meta.dev(), meta.ino()))
}

impl RolloutWriter {
    /// Creates the rollout of a new thread at `path` and writes its `session_meta`. The
    /// line is written, not yet fsynced: the first `sync` makes the file and its directory
    /// entry durable.
    pub fn create(
        path: &Path,
        meta: &SessionMeta,
        options: WriterOptions,
    ) -> Result<Self, RecorderError> {
        super::io_guard::assert_off_executor("creating a rollout");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| RecorderError::io(dir, e))?;
        }
        let lock = ThreadLock::acquire(&options.locks, path, meta.thread_id)?;
        let file = OpenOptions::new()
            .append(true)
            .read(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)
            .map_err(|e| RecorderError::io(path, e))?;
        let identity = identity_of(&file).map_err(|e| RecorderError::io(path, e))?;
        let mut writer = RolloutWriter {
            thread: meta.thread_id,
            path: path.to_path_buf(),
            file: Some(Arc::new(file)),
            identity,
            committed_len: 0,
            pending: Vec::new(),
            needs_repair: false,
            unsynced_blobs: Vec::new(),
            new_dir: path.parent().map(Path::to_path_buf),
            titled: false,
            sync_on_drop: true,
            options,
            _lock: lock,
        };
        let line = super::format::MetaLine::current(meta);
        write_line(&mut writer.pending, now_ms(), TYPE_SESSION_META, &line)?;
        writer.flush()?;
        if let Some(index) = &writer.options.index {
            let created_ms = meta.created_ms();
            // Registered once the file exists, before any event (the title update needs
            // the row).
            index.upsert(ThreadEntry {
                thread_id: meta.thread_id,
                path: path.to_path_buf(),
                created_ms,
                updated_ms: created_ms,
                cwd: meta.cwd.clone(),
                model: meta.model.clone(),
                title: None,
                name: None,
                goal: None,
                archived: false,
                forked_from: meta.forked_from,
                parent_thread_id: meta.parent_thread_id,
            });
        }
        Ok(writer)
    }

    /// Reopens an existing rollout to continue it (resume). A last line without its
    /// newline (a crash mid-append) is kept if it parses — it is a whole event that only
    /// lacks its terminator, which is added — and otherwise moved to a sidecar file
    /// (`<rollout>.torn-<offset>`) and cut off, so an append never glues onto it and no
    /// byte is destroyed.
    pub fn open_append(
        path: &Path,
        thread: ThreadId,
        options: WriterOptions,
    ) -> Result<Self, RecorderError> {
        super::io_guard::assert_off_executor("reopening a rollout");
        let io = |source| RecorderError::io(path, source);
        let lock = ThreadLock::acquire(&options.locks, path, thread)?;
        let mut file = open_for_append(path).map_err(io)?;
        let identity = identity_of(&file).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        let complete = repair_tail(path, &mut file, len).map_err(io)?;
        Ok(RolloutWriter {
            thread,
            path: path.to_path_buf(),
            file: Some(Arc::new(file)),
            identity,
            committed_len: complete,
            pending: Vec::new(),
            needs_repair: false,
            unsynced_blobs: Vec::new(),
            new_dir: None,
            // A resumed thread already has its title in the index.
            titled: true,
            sync_on_drop: true,
            options,
            _lock: lock,
        })
    }

    pub fn thread_id(&self) -> ThreadId {
        self.thread
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn durability(&self) -> Durability {
        self.options.durability
    }

    /// The listing index this writer keeps current, if any.
    pub fn index(&self) -> Option<&IndexClient> {
        self.options.index.as_ref()
    }

    /// Bytes of complete lines on disk (not counting the unwritten batch).
    pub fn committed_len(&self) -> u64 {
        self.committed_len
    }

    /// Whether the file is open now.
    pub fn is_open(&self) -> bool {
        self.file.is_some()
    }

    /// Bytes of whole lines recorded and not yet written (a failed write keeps them).
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// Closes the file; the next write reopens it. Lines not yet written stay pending.
    pub fn close_file(&mut self) {
        self.file = None;
    }

    fn file(&mut self) -> Result<Arc<File>, RecorderError> {
        if let Some(file) = &self.file {
            return Ok(Arc::clone(file));
        }
        let file = open_for_append(&self.path).map_err(|e| self.io_err(e))?;
        if identity_of(&file).map_err(|e| self.io_err(e))? != self.identity {
            return Err(self.io_err(io::Error::other(
                "the rollout was replaced by another file while the thread was loaded",
            )));
        }
        let file = Arc::new(file);
        self.file = Some(Arc::clone(&file));
        Ok(file)
    }

    /// Encodes `event` into the pending batch (large payloads to the blob store first);
    /// writes the batch once it is `batch_bytes` long. Streaming deltas are never passed.
    pub fn record(&mut self, event: &Event) -> Result<(), RecorderError> {
        let line: Cow<'_, Event> = if self.options.blobs.would_externalize(&event.msg) {
            match self
                .options
                .blobs
                .externalize(event, &mut self.unsynced_blobs)
            {
                Ok(line) => Cow::Owned(line),
                // The blob could not be written (a full disk): keep the payload inline
                // rather than drop the event; it is written whole once there is space.
                Err(e) => {
                    tracing::warn!(thread = %self.thread, error = %blob_to_recorder(e), "rollout: blob not written, the payload stays inline");
                    Cow::Borrowed(event)
                }
            }
        } else {
            Cow::Borrowed(event)
        };
        let start = self.pending.len();
        write_line(
            &mut self.pending,
            event.timestamp_ms,
            TYPE_EVENT,
            line.as_ref(),
        )?;
        if self.pending.len() - start > MAX_LINE_BYTES {
            self.pending.truncate(start);
            return Err(RecorderError::Encode(format!(
                "event {} is longer than a rollout line may be ({MAX_LINE_BYTES} bytes)",
                event.seq
            )));
        }
        self.note_listing(event);
        if self.pending.len() >= self.options.batch_bytes {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes the pending batch to the file, without fsync.
    pub fn flush(&mut self) -> Result<(), RecorderError> {
        if self.pending.is_empty() && !self.needs_repair {
            return Ok(());
        }
        super::io_guard::assert_off_executor("writing a rollout");
        let file = self.file()?;
        if self.needs_repair {
            file.set_len(self.committed_len)
                .map_err(|e| self.io_err(e))?;
            self.needs_repair = false;
        }
        if self.pending.is_empty() {
            return Ok(());
        }
        match (&*file).write_all(&self.pending) {
            Ok(()) => {
                self.committed_len += self.pending.len() as u64;
                self.pending.clear();
                Ok(())
            }
            Err(e) => {
                if file.set_len(self.committed_len).is_err() {
                    self.needs_repair = true;
                }
                Err(self.io_err(e))
            }
        }
    }

    /// What an fsync of everything written so far needs, for the store's sync thread;
    /// `None` when the durability setting asks for no fsync. Opens the file if it was
    /// closed.
    pub fn sync_job(&mut self) -> Result<Option<SyncJob>, RecorderError> {
        if self.options.durability == Durability::Never {
            return Ok(None);
        }
        let file = self.file()?;
        Ok(Some(SyncJob {
            file,
            path: self.path.clone(),
            blobs: std::mem::take(&mut self.unsynced_blobs),
            new_dir: self.new_dir.take(),
        }))
    }

    /// Flushes, then fsyncs as the durability setting says, here and now.
    pub fn sync(&mut self) -> Result<(), RecorderError> {
        self.flush()?;
        if let Some(job) = self.sync_job()? {
            if let Err(e) = job.run() {
                // Nothing was made durable: try again next time.
                self.unsynced_blobs.extend(job.blobs);
                self.new_dir = self.new_dir.take().or(job.new_dir);
                return Err(e);
            }
        }
        if let Some(index) = &self.options.index {
            index.touch(self.thread, now_ms());
        }
        Ok(())
    }

    fn io_err(&self, source: io::Error) -> RecorderError {
        RecorderError::io(self.path.clone(), source)
    }

    /// Keep the index's listing fields (title, name, goal) in step with what is written.
    fn note_listing(&mut self, event: &Event) {
        let Some(index) = &self.options.index else {
            return;
        };
        match &event.msg {
            EventMsg::ThreadNamed { name } => index.set_name(self.thread, name.clone()),
            EventMsg::GoalUpdated { goal } => index.set_goal(self.thread, Some(goal.status)),
            EventMsg::GoalCleared => index.set_goal(self.thread, None),
            _ => {}
        }
        if self.titled {
            return;
        }
        if let EventMsg::ItemCompleted {
            item: item @ Item::UserMessage { .. },
        } = &event.msg
        {
            self.titled = true;
            index.set_title_if_empty(self.thread, item.message_text().unwrap_or_default());
        }
    }
}

impl RolloutWriter {
    /// Writes what is pending and lets go of the file and the claim, without an fsync
    /// (the store's sync thread has that in hand).
    pub fn release(&mut self) {
        if let Err(e) = self.flush() {
            tracing::warn!(thread = %self.thread, error = %e, "rollout: final write failed");
        }
        self.sync_on_drop = false;
    }
}

impl Drop for RolloutWriter {
    fn drop(&mut self) {
        if !self.sync_on_drop {
            return;
        }
        if let Err(e) = self.sync() {
            tracing::warn!(thread = %self.thread, error = %e, "rollout: final flush failed");
        }
    }
}

fn blob_to_recorder(e: BlobWriteError) -> RecorderError {
    RecorderError::io(e.path, e.source)
}

/// Makes `file` end with a complete line and returns its length: a parseable last line
/// without its newline gets one; anything else after the last newline is copied to a
/// sidecar file and cut off.
fn repair_tail(path: &Path, file: &mut File, len: u64) -> io::Result<u64> {
    let complete = complete_len(file, len)?;
    if complete == len {
        return Ok(len);
    }
    let tail_len = len - complete;
    if tail_len <= MAX_LINE_BYTES as u64 {
        let mut tail = Vec::with_capacity(usize::try_from(tail_len).unwrap_or(0));
        file.seek(SeekFrom::Start(complete))?;
        (&mut *file).take(tail_len).read_to_end(&mut tail)?;
        let parses = serde_json::from_slice::<ParsedLine>(&tail)
            .is_ok_and(|l| !matches!(l.body, LineBody::Unknown(_)));
        if parses {
            file.write_all(b"\n")?;
            return Ok(len + 1);
        }
    }
    let mut sidecar = path.as_os_str().to_owned();
    sidecar.push(format!(".torn-{complete}"));
    let mut out = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(PathBuf::from(&sidecar))?;
    file.seek(SeekFrom::Start(complete))?;
    io::copy(&mut (&mut *file).take(tail_len), &mut out)?;
    out.sync_all()?;
    file.set_len(complete)?;
    Ok(complete)
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

pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}
