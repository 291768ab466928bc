//! [`RolloutStore`]: the rollout files of one `$REIN_HOME`, as blocking operations —
//! creating and reopening writers, loading, finding a thread's file, listing, archiving,
//! forking and reconciling the index with the files. The session store
//! ([`super::service::RolloutService`]) runs these on blocking threads; `rein sessions`
//! calls them directly. Index work goes to the home's one index thread ([`IndexClient`]).
//!
//! The index is kept current by the writers, so listing is one query. The files are
//! reconciled with it (only the day directories changed since the last reconciliation)
//! once per process before the first listing, whenever a writer could not update it (the
//! `index.stale` marker, checked with one `stat` per listing: another process that missed
//! the index leaves it too), and on `reindex`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rein_protocol::{AgentOrigin, Event, EventMsg, ThreadId};

use super::blobs::BlobStore;
use super::index::RolloutIndex;
use super::indexer::{stale_marker, IndexClient};
use super::layout;
use super::lock::{LockDir, ThreadLock};
use super::reader::{read_listing_tail, read_meta, read_rollout, read_rollout_until, ReadUntil};
use super::resume::{fork_events, repair_for_resume};
use super::time::now_ms;
use super::writer::{Durability, RolloutWriter, WriterOptions};
use super::RolloutError;
use rein_core::store::ReindexReport;
use rein_core::store::{
    first_user_text, ListQuery, LoadedRollout, SessionMeta, SortKey, ThreadEntry, ThreadPage,
};

pub struct RolloutStore {
    home: PathBuf,
    blobs: BlobStore,
    durability: Durability,
    index: IndexClient,
    locks: LockDir,
    reconciled: OnceLock<()>,
}

/// A thread reopened from its rollout: the writer continuing the same file and the
/// events to fold (including any repair of a turn a crash left open, already recorded).
#[derive(Debug)]
pub struct Reopened {
    pub writer: RolloutWriter,
    pub loaded: LoadedRollout,
}

/// A new thread forked from another: its writer (already holding the fork's events) and
/// those events, to fold into the new thread's state.
#[derive(Debug)]
pub struct Forked {
    pub writer: RolloutWriter,
    pub meta: SessionMeta,
    pub events: Vec<Event>,
}

impl RolloutStore {
    pub fn new(home: impl Into<PathBuf>) -> Self {
        let home = home.into();
        let blobs = BlobStore::new(home.join(layout::BLOBS_DIR));
        Self::with_blobs(home, blobs)
    }

    /// With a different threshold for moving payloads to the blob store.
    pub fn with_blob_threshold(home: impl Into<PathBuf>, threshold: usize) -> Self {
        let home = home.into();
        let blobs = BlobStore::with_threshold(home.join(layout::BLOBS_DIR), threshold);
        Self::with_blobs(home, blobs)
    }

    fn with_blobs(home: PathBuf, blobs: BlobStore) -> Self {
        RolloutStore {
            index: IndexClient::start(home.join(layout::INDEX_FILE)),
            locks: LockDir::new(home.join(layout::LOCKS_DIR)),
            home,
            blobs,
            durability: Durability::default(),
            reconciled: OnceLock::new(),
        }
    }

    pub fn with_durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    pub fn home(&self) -> &Path {
        &self.home
    }

    pub fn blobs(&self) -> &BlobStore {
        &self.blobs
    }

    pub fn durability(&self) -> Durability {
        self.durability
    }

    /// The home's index thread.
    pub fn index(&self) -> &IndexClient {
        &self.index
    }

    pub fn writer_options(&self) -> WriterOptions {
        WriterOptions {
            durability: self.durability,
            index: Some(self.index.clone()),
            locks: self.locks.clone(),
            ..WriterOptions::new(self.blobs.clone())
        }
    }

    /// Brings the index up to date with the files once per process (a fresh index is
    /// built from every file; an existing one looks only at directories changed since it
    /// was last reconciled), and again whenever the stale marker says a writer missed it.
    pub fn reconcile(&self) -> Result<(), RolloutError> {
        let marker = stale_marker(self.index.path());
        let stale = std::fs::symlink_metadata(&marker).is_ok();
        if stale {
            let _ = std::fs::remove_file(&marker);
        }
        let mut result = Ok(());
        let mut ran = false;
        self.reconciled.get_or_init(|| {
            ran = true;
            self.locks.sweep();
            result = self.refresh().map(drop);
        });
        if stale && !ran {
            result = self.refresh().map(drop);
        }
        result
    }

    /// Adds rollouts the index missed (written while it was unavailable, copied in by
    /// hand) by looking only in directories changed since the last refresh; an index that
    /// was never filled is built from every file. Returns how many were added.
    fn refresh(&self) -> Result<usize, RolloutError> {
        let started = now_ms();
        let last = self.index.query(|i| i.last_refresh_ms())?;
        if last == 0 && self.index.query(|i| i.count())? == 0 {
            return self.reindex().map(|r| r.threads);
        }
        // Directory times can lag or be coarse; look a little further back.
        let since = last.saturating_sub(2_000);
        let mut files = Vec::new();
        for dir in layout::dirs_changed_since(&self.home, since)
            .map_err(RolloutError::io("scanning", &self.home))?
        {
            remove_stale_staging(&dir);
            files.extend(
                layout::rollout_files_in(&dir).map_err(RolloutError::io("scanning", &dir))?,
            );
        }
        let ids: Vec<ThreadId> = files
            .iter()
            .filter_map(|p| layout::thread_id_of(p))
            .collect();
        let known: HashMap<ThreadId, PathBuf> = self.index.query(move |i| {
            let mut known = HashMap::new();
            for thread in ids {
                if let Some(e) = i.get(thread)? {
                    known.insert(thread, e.path);
                }
            }
            Ok(known)
        })?;
        let mut added = 0;
        for path in files {
            let Some(thread) = layout::thread_id_of(&path) else {
                continue;
            };
            match known.get(&thread) {
                Some(p) if *p == path => continue,
                Some(p) if std::fs::symlink_metadata(p).is_ok() => {
                    tracing::warn!(
                        %thread,
                        kept = %p.display(),
                        ignored = %path.display(),
                        "two rollout files for one thread"
                    );
                    continue;
                }
                _ => {}
            }
            match self.entry_for(&path) {
                Ok(entry) => {
                    self.index.upsert(entry);
                    added += 1;
                }
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "index refresh: skipped")
                }
            }
        }
        self.index.query(move |i| i.set_last_refresh_ms(started))?;
        Ok(added)
    }

    /// Creates the rollout of a new thread and registers it in the index.
    pub fn create(&self, meta: &SessionMeta) -> Result<RolloutWriter, RolloutError> {
        let path = layout::session_path(&self.home, meta.thread_id, meta.created_ms());
        Ok(RolloutWriter::create(&path, meta, self.writer_options())?)
    }

    /// Reopens a thread's rollout to continue writing it (claims it).
    pub fn open_append(&self, thread: ThreadId) -> Result<RolloutWriter, RolloutError> {
        let path = self.find(thread)?;
        Ok(RolloutWriter::open_append(
            &path,
            thread,
            self.writer_options(),
        )?)
    }

    /// Resumes a thread by id: claims it, reads it, closes a turn a crash left open
    /// (recording and syncing the repair) and hands back the writer and the events.
    pub fn resume(&self, thread: ThreadId) -> Result<Reopened, RolloutError> {
        let path = self.find(thread)?;
        self.resume_path(&path, Some(thread))
            .map_err(|e| e.for_thread(thread))
    }

    /// Resumes the thread whose rollout is at `path` (which must be `expected`'s, if given).
    pub fn resume_path(
        &self,
        path: &Path,
        expected: Option<ThreadId>,
    ) -> Result<Reopened, RolloutError> {
        let meta = read_meta(path)?;
        check_requested(path, &meta, expected)?;
        // Claim before reading, so no other writer appends between the read and ours.
        let mut writer = RolloutWriter::open_append(path, meta.thread_id, self.writer_options())?;
        let mut loaded = read_rollout(path, &self.blobs)?;
        let known = loaded.events.len();
        loaded.events = repair_for_resume(std::mem::take(&mut loaded.events));
        for event in &loaded.events[known..] {
            writer.record(event)?;
        }
        writer.sync()?;
        Ok(Reopened { writer, loaded })
    }

    /// Loads a thread's rollout by id (listed or archived), without claiming it.
    pub fn load(&self, thread: ThreadId) -> Result<LoadedRollout, RolloutError> {
        let path = self.find(thread)?;
        let loaded = read_rollout(&path, &self.blobs).map_err(|e| e.for_thread(thread))?;
        check_requested(&path, &loaded.meta, Some(thread)).map_err(|e| e.for_thread(thread))?;
        Ok(loaded)
    }

    /// Where a stored sub-agent comes from: the `AgentOrigin` its rollout records right
    /// after its configuration (read from the head only). `None` for a root thread.
    pub fn agent_origin(&self, thread: ThreadId) -> Result<Option<AgentOrigin>, RolloutError> {
        let path = self.find(thread)?;
        let head = read_rollout_until(&path, &self.blobs, ReadUntil::FirstUserMessage)
            .map_err(|e| e.for_thread(thread))?;
        check_requested(&path, &head.meta, Some(thread)).map_err(|e| e.for_thread(thread))?;
        Ok(head.events.into_iter().find_map(|e| match e.msg {
            EventMsg::AgentOrigin { origin } => Some(origin),
            _ => None,
        }))
    }

    /// Loads a rollout by path.
    pub fn load_path(&self, path: &Path) -> Result<LoadedRollout, RolloutError> {
        read_rollout(path, &self.blobs)
    }

    /// What the index knows of `thread`.
    pub fn entry(&self, thread: ThreadId) -> Result<Option<ThreadEntry>, RolloutError> {
        self.index.query(move |i| i.get(thread))
    }

    /// The file of a thread: the index's answer if it still holds, else a scan.
    pub fn find(&self, thread: ThreadId) -> Result<PathBuf, RolloutError> {
        if let Ok(Some(entry)) = self.entry(thread) {
            if std::fs::symlink_metadata(&entry.path).is_ok() {
                return Ok(entry.path);
            }
        }
        let mut found = layout::scan_for_thread(&self.home, thread)
            .map_err(RolloutError::io("scanning", &self.home))?;
        let Some(first) = found.first().cloned() else {
            return Err(RolloutError::ThreadNotFound(thread));
        };
        if found.len() > 1 {
            found.remove(0);
            tracing::warn!(%thread, kept = %first.display(), ignored = ?found, "two rollout files for one thread");
        }
        if let Ok(entry) = self.entry_for(&first) {
            self.index.upsert(entry);
        }
        Ok(first)
    }

    /// One page of threads: one index query, after reconciling if something was missed.
    pub fn list(&self, query: &ListQuery) -> Result<ThreadPage, RolloutError> {
        if let Err(e) = self.reconcile() {
            tracing::warn!("reconciling the rollout index: {e}");
        }
        let query = query.clone();
        self.index.query(move |i| i.list(&query))
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

    /// Rebuilds the index from the files.
    pub fn reindex(&self) -> Result<ReindexReport, RolloutError> {
        let started = now_ms();
        let mut report = ReindexReport::default();
        let mut entries: Vec<ThreadEntry> = Vec::new();
        let mut seen: HashMap<ThreadId, usize> = HashMap::new();
        let mut duplicates: HashMap<ThreadId, Vec<PathBuf>> = HashMap::new();
        for dir in layout::dirs_changed_since(&self.home, 0)
            .map_err(RolloutError::io("scanning", &self.home))?
        {
            remove_stale_staging(&dir);
        }
        for dir in [
            layout::sessions_dir(&self.home),
            layout::archived_dir(&self.home),
        ] {
            let files = layout::rollout_files(&dir).map_err(RolloutError::io("scanning", &dir))?;
            for path in files {
                match self.entry_for(&path) {
                    Ok(entry) => match seen.entry(entry.thread_id) {
                        std::collections::hash_map::Entry::Occupied(_) => {
                            duplicates.entry(entry.thread_id).or_default().push(path);
                        }
                        std::collections::hash_map::Entry::Vacant(slot) => {
                            slot.insert(entries.len());
                            entries.push(entry);
                        }
                    },
                    Err(e) => {
                        tracing::warn!(path = %path.display(), error = %e, "reindex: skipped");
                        report.skipped.push((path, e.to_string()));
                    }
                }
            }
        }
        for (thread, others) in duplicates {
            let kept = entries[seen[&thread]].path.clone();
            tracing::warn!(%thread, kept = %kept.display(), ignored = ?others, "two rollout files for one thread");
            report.duplicates.push((thread, kept, others));
        }
        report.duplicates.sort();
        report.threads = entries.len();
        self.index.query(move |i: &mut RolloutIndex| {
            i.replace_all(&entries)?;
            i.set_last_refresh_ms(started)
        })?;
        Ok(report)
    }

    fn entry_for(&self, path: &Path) -> Result<ThreadEntry, RolloutError> {
        let head = read_rollout_until(path, &self.blobs, ReadUntil::FirstUserMessage)?;
        let modified = std::fs::symlink_metadata(path)
            .and_then(|m| m.modified())
            .map_err(RolloutError::io("reading metadata of", path))?;
        let updated_ms = modified
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let created_ms = head.meta.created_ms();
        let tail = read_listing_tail(path)?;
        Ok(ThreadEntry {
            thread_id: head.meta.thread_id,
            path: path.to_path_buf(),
            created_ms,
            updated_ms: updated_ms.max(created_ms),
            cwd: head.meta.cwd.clone(),
            model: head.meta.model.clone(),
            title: first_user_text(&head.events),
            name: tail.name,
            goal: tail.goal,
            archived: path.starts_with(layout::archived_dir(&self.home)),
            forked_from: head.meta.forked_from,
            parent_thread_id: head.meta.parent_thread_id,
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
        let meta = read_meta(&from).map_err(|e| e.for_thread(thread))?;
        check_requested(&from, &meta, Some(thread)).map_err(|e| e.for_thread(thread))?;
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
        let mut lock = ThreadLock::acquire(&self.locks, from, thread)?;
        if let Some(dir) = to.parent() {
            std::fs::create_dir_all(dir).map_err(RolloutError::io("creating", dir))?;
        }
        std::fs::rename(from, to).map_err(RolloutError::io("moving", from))?;
        let _ = lock.follow(to);
        self.index.set_location(thread, to.to_path_buf(), archived);
        Ok(to.to_path_buf())
    }

    /// Forks `parent` at turn `at_turn` (default: the last) into a new thread with its own
    /// rollout. Large payloads are shared through the blob store, not copied.
    pub fn fork(&self, parent: ThreadId, at_turn: Option<usize>) -> Result<Forked, RolloutError> {
        let loaded = self.load(parent)?;
        self.fork_from_events(&loaded.meta, &loaded.events, at_turn)
    }

    /// Forks a thread from events already in memory (a live thread's, which may be ahead
    /// of what its writer has written). `parent` is the parent's meta.
    pub fn fork_from_events(
        &self,
        parent: &SessionMeta,
        events: &[Event],
        at_turn: Option<usize>,
    ) -> Result<Forked, RolloutError> {
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
        let path = layout::session_path(&self.home, new_thread, meta.created_ms());
        self.write_whole(&path, &meta, &events)?;
        let writer = RolloutWriter::open_append(&path, new_thread, self.writer_options())?;
        self.index.upsert(self.entry_for(&path)?);
        Ok(Forked {
            writer,
            meta,
            events,
        })
    }
}

impl RolloutStore {
    /// Writes a whole rollout (meta and events) at `path` so that it appears complete or
    /// not at all: into a staging file beside it (a name no listing or scan takes for a
    /// rollout), made durable, then renamed into place. A kill -9 mid-fork thus never
    /// leaves a listed thread that cannot be resumed; at worst a staging file.
    fn write_whole(
        &self,
        path: &Path,
        meta: &SessionMeta,
        events: &[Event],
    ) -> Result<(), RolloutError> {
        let mut staging = path.as_os_str().to_owned();
        staging.push(STAGING_SUFFIX);
        let staging = PathBuf::from(staging);
        let options = WriterOptions {
            index: None,
            ..self.writer_options()
        };
        let written = (|| {
            let mut writer = RolloutWriter::create(&staging, meta, options)?;
            for event in events {
                writer.record(event)?;
            }
            writer.sync()
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&staging);
            return Err(e.into());
        }
        std::fs::rename(&staging, path).map_err(RolloutError::io("moving", &staging))?;
        if let Some(dir) = path.parent() {
            super::writer::sync_dir(dir).map_err(RolloutError::io("syncing", dir))?;
        }
        Ok(())
    }
}

/// Appended to a rollout's name while it is being written whole (see
/// `RolloutStore::write_whole`).
pub const STAGING_SUFFIX: &str = ".staging";

/// How old a staging file must be before a scan deletes it: far older than a fork takes
/// to write one, so a fork another process is writing now keeps its file.
pub const STALE_STAGING: std::time::Duration = std::time::Duration::from_secs(60);

/// Deletes the staging files in `dir` that a process killed mid-fork left behind: no
/// listing takes them and no fork comes back for them. Runs where the index is
/// reconciled with the directories (a changed directory, a reindex); a failure only
/// costs the file staying until the next time.
fn remove_stale_staging(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let now = std::time::SystemTime::now();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let staging = name
            .to_str()
            .is_some_and(|n| n.starts_with("rollout-") && n.ends_with(STAGING_SUFFIX));
        // The entry's own time (a link is not followed).
        let stale = || {
            entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| now.duration_since(t).is_ok_and(|age| age >= STALE_STAGING))
        };
        if staging && stale() {
            let path = entry.path();
            match std::fs::remove_file(&path) {
                Ok(()) => {
                    tracing::info!(path = %path.display(), "removed an abandoned fork's staging file")
                }
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "could not remove a staging file")
                }
            }
        }
    }
}

/// The file found for `expected` must be that thread's.
fn check_requested(
    path: &Path,
    meta: &SessionMeta,
    expected: Option<ThreadId>,
) -> Result<(), RolloutError> {
    match expected {
        Some(thread) if thread != meta.thread_id => Err(RolloutError::MetaMismatch {
            path: path.to_path_buf(),
            named: thread,
            meta: meta.thread_id,
        }),
        _ => Ok(()),
    }
}
