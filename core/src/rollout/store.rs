//! [`RolloutStore`]: everything rollout-related for one `$REIN_HOME` — creating and
//! reopening writers, loading, finding a thread's file, listing, archiving, forking and
//! rebuilding the index. The thread manager holds one.

use std::path::{Path, PathBuf};

use rein_protocol::{Event, ThreadId};

use super::blobs::BlobStore;
use super::format::SessionMeta;
use super::index::{ListQuery, RolloutIndex, SortKey, ThreadEntry, ThreadPage};
use super::layout;
use super::lock::ThreadLock;
use super::reader::{
    first_user_text, read_last_name, read_meta, read_rollout, read_rollout_until, LoadedRollout,
    ReadUntil,
};
use super::resume::{fork_events, repair_for_resume};
use super::time::now_ms;
use super::writer::{Durability, RolloutWriter, WriterOptions};
use super::RolloutError;
use crate::recorder::EventRecorder;

#[derive(Clone, Debug)]
pub struct RolloutStore {
    home: PathBuf,
    blobs: BlobStore,
}

/// A new thread forked from another: its writer (already holding the fork's events) and
/// those events, to fold into the new thread's state.
#[derive(Debug)]
pub struct ForkedThread {
    pub writer: RolloutWriter,
    pub events: Vec<Event>,
}

/// A thread reopened from its rollout: the writer continuing the same file and the
/// events to fold (including any repair of a turn a crash left open, already recorded).
#[derive(Debug)]
pub struct ResumedThread {
    pub writer: RolloutWriter,
    pub meta: SessionMeta,
    pub events: Vec<Event>,
    /// What the reader skipped, with line numbers, for the client to see.
    pub diagnostics: Vec<super::reader::Diagnostic>,
}

impl RolloutStore {
    pub fn new(home: impl Into<PathBuf>) -> Self {
        let home = home.into();
        let blobs = BlobStore::new(home.join(layout::BLOBS_DIR));
        RolloutStore { home, blobs }
    }

    /// With a different threshold for moving payloads to the blob store.
    pub fn with_blob_threshold(home: impl Into<PathBuf>, threshold: usize) -> Self {
        let home = home.into();
        let blobs = BlobStore::with_threshold(home.join(layout::BLOBS_DIR), threshold);
        RolloutStore { home, blobs }
    }

    pub fn home(&self) -> &Path {
        &self.home
    }

    pub fn blobs(&self) -> &BlobStore {
        &self.blobs
    }

    /// Opens the index, rebuilding it from the files when it did not exist yet.
    pub fn index(&self) -> Result<RolloutIndex, RolloutError> {
        let path = self.home.join(layout::INDEX_FILE);
        let fresh = !path.exists();
        let mut index = RolloutIndex::open(&path)?;
        if fresh {
            let started = now_ms();
            let entries = self.scan_entries()?;
            index.replace_all(&entries)?;
            index.set_last_refresh_ms(started)?;
        }
        Ok(index)
    }

    /// Adds rollouts the index missed (written while it was unavailable, copied in by
    /// hand) by looking only in directories changed since the last refresh. Cheap: one
    /// `stat` per day directory unless something changed.
    pub fn refresh_index(&self, index: &RolloutIndex) -> Result<usize, RolloutError> {
        let started = now_ms();
        // Directory times can lag or be coarse; look a little further back.
        let since = index.last_refresh_ms()?.saturating_sub(2_000);
        let dirs = layout::dirs_changed_since(&self.home, since)
            .map_err(RolloutError::io("scanning", &self.home))?;
        let mut added = 0;
        for dir in dirs {
            let files =
                layout::rollout_files_in(&dir).map_err(RolloutError::io("scanning", &dir))?;
            for path in files {
                let Some(thread) = layout::thread_id_of(&path) else {
                    continue;
                };
                if index.get(thread)?.is_some_and(|e| e.path == path) {
                    continue;
                }
                match self.entry_for(&path) {
                    Ok(entry) => {
                        index.upsert(&entry)?;
                        added += 1;
                    }
                    Err(e) => {
                        tracing::warn!(path = %path.display(), error = %e, "index refresh: skipped")
                    }
                }
            }
        }
        index.set_last_refresh_ms(started)?;
        Ok(added)
    }

    fn writer_options(&self, durability: Durability) -> WriterOptions {
        let index = self
            .index()
            .map_err(
                |e| tracing::warn!(error = %e, "rollout index unavailable; writing without it"),
            )
            .ok();
        WriterOptions {
            durability,
            index,
            ..WriterOptions::new(self.blobs.clone())
        }
    }

    /// Creates the rollout of a new thread and registers it in the index.
    pub fn create(
        &self,
        meta: &SessionMeta,
        durability: Durability,
    ) -> Result<RolloutWriter, RolloutError> {
        let created_ms = meta.created_ms();
        let path = layout::session_path(&self.home, meta.thread_id, created_ms);
        let writer = RolloutWriter::create(&path, meta, self.writer_options(durability))?;
        // Registered once the file exists, before any event (the title update needs the row).
        if let Some(index) = writer.index() {
            let entry = ThreadEntry {
                thread_id: meta.thread_id,
                path: path.clone(),
                created_ms,
                updated_ms: created_ms,
                cwd: meta.cwd.clone(),
                model: meta.model.clone(),
                title: None,
                name: None,
                archived: false,
                forked_from: meta.forked_from,
            };
            if let Err(e) = index.upsert(&entry) {
                tracing::warn!(thread = %meta.thread_id, error = %e, "rollout index: thread not registered");
            }
        }
        Ok(writer)
    }

    /// Reopens a thread's rollout to continue writing it (resume).
    pub fn open_append(
        &self,
        thread: ThreadId,
        durability: Durability,
    ) -> Result<RolloutWriter, RolloutError> {
        let path = self.find(thread)?;
        Ok(RolloutWriter::open_append(
            &path,
            thread,
            self.writer_options(durability),
        )?)
    }

    /// Resumes a thread by id: takes its writer lock, reads it, closes a turn a crash
    /// left open (recording the repair) and hands back the writer and the events.
    pub fn resume(
        &self,
        thread: ThreadId,
        durability: Durability,
    ) -> Result<ResumedThread, RolloutError> {
        self.resume_path(&self.find(thread)?, durability)
    }

    /// Resumes the thread whose rollout is at `path`.
    pub fn resume_path(
        &self,
        path: &Path,
        durability: Durability,
    ) -> Result<ResumedThread, RolloutError> {
        let meta = read_meta(path)?;
        // Lock before reading, so no other writer appends between the read and ours.
        let mut writer =
            RolloutWriter::open_append(path, meta.thread_id, self.writer_options(durability))?;
        let loaded = read_rollout(path, &self.blobs)?;
        let known = loaded.events.len();
        let events = repair_for_resume(loaded.events);
        for event in &events[known..] {
            writer.record(event)?;
        }
        writer.sync()?;
        Ok(ResumedThread {
            writer,
            meta: loaded.meta,
            events,
            diagnostics: loaded.diagnostics,
        })
    }

    /// Loads a thread's rollout by id (listed or archived).
    pub fn load(&self, thread: ThreadId) -> Result<LoadedRollout, RolloutError> {
        read_rollout(&self.find(thread)?, &self.blobs)
    }

    /// Loads a rollout by path.
    pub fn load_path(&self, path: &Path) -> Result<LoadedRollout, RolloutError> {
        read_rollout(path, &self.blobs)
    }

    /// The file of a thread: the index's answer if it still holds, else a scan.
    pub fn find(&self, thread: ThreadId) -> Result<PathBuf, RolloutError> {
        let index = self.index().ok();
        if let Some(entry) = index.as_ref().and_then(|i| i.get(thread).ok().flatten()) {
            if entry.path.is_file() {
                return Ok(entry.path);
            }
        }
        let found = layout::scan_for_thread(&self.home, thread)
            .map_err(RolloutError::io("scanning", &self.home))?
            .ok_or(RolloutError::ThreadNotFound(thread))?;
        if let Some(index) = &index {
            if let Ok(entry) = self.entry_for(&found) {
                let _ = index.upsert(&entry);
            }
        }
        Ok(found)
    }

    /// One page of threads. Rollouts the index missed are added first, so a stale
    /// index never hides a thread.
    pub fn list(&self, query: &ListQuery) -> Result<ThreadPage, RolloutError> {
        let index = self.index()?;
        self.refresh_index(&index)?;
        index.list(query)
    }

    /// The most recently updated listed thread whose cwd is `cwd`.
    pub fn most_recent_in_cwd(&self, cwd: &Path) -> Result<Option<ThreadId>, RolloutError> {
        let page = self.list(&ListQuery {
            limit: 1,
            sort: SortKey::Updated,
            cwd: Some(cwd.to_path_buf()),
            ..ListQuery::default()
        })?;
        Ok(page.threads.first().map(|t| t.thread_id))
    }

    /// Rebuilds the index from the files; returns how many threads it holds.
    pub fn reindex(&self) -> Result<usize, RolloutError> {
        let started = now_ms();
        let entries = self.scan_entries()?;
        let mut index = RolloutIndex::open(&self.home.join(layout::INDEX_FILE))?;
        index.replace_all(&entries)?;
        index.set_last_refresh_ms(started)?;
        Ok(entries.len())
    }

    fn scan_entries(&self) -> Result<Vec<ThreadEntry>, RolloutError> {
        let mut entries = Vec::new();
        for dir in [
            layout::sessions_dir(&self.home),
            layout::archived_dir(&self.home),
        ] {
            let files = layout::rollout_files(&dir).map_err(RolloutError::io("scanning", &dir))?;
            for path in files {
                match self.entry_for(&path) {
                    Ok(entry) => entries.push(entry),
                    Err(e) => {
                        tracing::warn!(path = %path.display(), error = %e, "reindex: skipped")
                    }
                }
            }
        }
        Ok(entries)
    }

    fn entry_for(&self, path: &Path) -> Result<ThreadEntry, RolloutError> {
        let head = read_rollout_until(path, &self.blobs, ReadUntil::FirstUserMessage)?;
        let modified = std::fs::metadata(path)
            .and_then(|m| m.modified())
            .map_err(RolloutError::io("reading metadata of", path))?;
        let updated_ms = modified
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let created_ms = head.meta.created_ms();
        Ok(ThreadEntry {
            thread_id: head.meta.thread_id,
            path: path.to_path_buf(),
            created_ms,
            updated_ms: updated_ms.max(created_ms),
            cwd: head.meta.cwd.clone(),
            model: head.meta.model.clone(),
            title: first_user_text(&head.events),
            name: read_last_name(path)?,
            archived: path.starts_with(layout::archived_dir(&self.home)),
            forked_from: head.meta.forked_from,
        })
    }

    /// Moves a thread's rollout out of the listed set. Refused while a writer holds it.
    pub fn archive(&self, thread: ThreadId) -> Result<PathBuf, RolloutError> {
        let from = self.find(thread)?;
        let archived = layout::archived_dir(&self.home);
        if from.starts_with(&archived) {
            return Err(RolloutError::AlreadyArchived(thread));
        }
        let name = from.file_name().map(PathBuf::from).unwrap_or_default();
        self.relocate(thread, &from, &archived.join(name), true)
    }

    /// Moves an archived thread's rollout back into the listed set.
    pub fn unarchive(&self, thread: ThreadId) -> Result<PathBuf, RolloutError> {
        let from = self.find(thread)?;
        if !from.starts_with(layout::archived_dir(&self.home)) {
            return Err(RolloutError::NotArchived(thread));
        }
        let meta = read_meta(&from)?;
        let to = layout::session_path(&self.home, thread, meta.created_ms());
        self.relocate(thread, &from, &to, false)
    }

    fn relocate(
        &self,
        thread: ThreadId,
        from: &Path,
        to: &Path,
        archived: bool,
    ) -> Result<PathBuf, RolloutError> {
        let _lock = ThreadLock::acquire(from, thread)?;
        if let Some(dir) = to.parent() {
            std::fs::create_dir_all(dir).map_err(RolloutError::io("creating", dir))?;
        }
        std::fs::rename(from, to).map_err(RolloutError::io("moving", from))?;
        self.index()?.set_location(thread, to, archived)?;
        Ok(to.to_path_buf())
    }

    /// Forks `parent` at turn `at_turn` (default: the last) into a new thread with its own
    /// rollout. Large payloads are shared through the blob store, not copied.
    pub fn fork(
        &self,
        parent: ThreadId,
        at_turn: Option<usize>,
        durability: Durability,
    ) -> Result<ForkedThread, RolloutError> {
        let loaded = self.load(parent)?;
        self.fork_from_events(&loaded.meta, &loaded.events, at_turn, durability)
    }

    /// Forks a thread from events already in memory (a live thread's, which may be ahead
    /// of what its writer has flushed). `parent` is the parent's meta.
    pub fn fork_from_events(
        &self,
        parent: &SessionMeta,
        events: &[Event],
        at_turn: Option<usize>,
        durability: Durability,
    ) -> Result<ForkedThread, RolloutError> {
        let new_thread = ThreadId::new();
        let events = fork_events(events, at_turn, new_thread)?;
        let mut meta = SessionMeta::new(
            new_thread,
            new_thread.into(),
            parent.cwd.clone(),
            parent.model.clone(),
            parent.provider.clone(),
        );
        meta.forked_from = Some(parent.thread_id);
        let mut writer = self.create(&meta, durability)?;
        for event in &events {
            writer.record(event)?;
        }
        writer.sync()?;
        Ok(ForkedThread { writer, events })
    }
}
