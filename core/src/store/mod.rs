//! The session store: where threads outlive the process. The [`ThreadManager`] owns one
//! behind this trait, so the kernel does not care whether threads live in rollout files
//! under `$REIN_HOME` (`rein_rollout::RolloutService`, the only backend today), in object
//! storage or in a database. The types a store speaks in (its meta line, listing,
//! diagnostics, errors) are here with the trait, so backends are leaf crates.
//!
//! Every method is async and does its I/O elsewhere (the store's own threads, or blocking
//! threads): nothing here may block an executor thread. A thread's events reach the store
//! through the [`EventRecorder`] that `create`, `resume` and `fork` hand back.
//!
//! [`ThreadManager`]: crate::manager::ThreadManager

use std::path::PathBuf;

use futures::future::BoxFuture;
use rein_protocol::{AgentOrigin, Event, EventMsg, ThreadId};

use crate::recorder::EventRecorder;

mod error;
mod listing;
mod loaded;
mod meta;
pub mod time;

pub use error::{ForkError, RolloutError};
pub use listing::{ListQuery, SortKey, ThreadEntry, ThreadKinds, ThreadPage};
pub use loaded::{first_user_text, Diagnostic, DiagnosticKind, LoadedRollout};
pub use meta::SessionMeta;

/// A thread reopened from the store: the events to fold (a turn a crash left open already
/// repaired, and the repair recorded), and the recorder that continues it.
pub struct ResumedThread {
    pub meta: SessionMeta,
    pub events: Vec<Event>,
    pub recorder: Box<dyn EventRecorder>,
    /// What the reader skipped, with line numbers, for the client to see.
    pub diagnostics: Vec<Diagnostic>,
    /// What the listing knows of it (creation time, file).
    pub entry: Option<ThreadEntry>,
}

/// A new thread forked from another: its history (already recorded) and its recorder.
pub struct ForkedThread {
    pub meta: SessionMeta,
    pub events: Vec<Event>,
    pub recorder: Box<dyn EventRecorder>,
    pub path: Option<PathBuf>,
}

/// Where a fork starts from.
pub enum ForkSource {
    /// A thread's stored history.
    Stored(ThreadId),
    /// A live thread's events (which may be ahead of what it has written), with its meta.
    Live {
        meta: Box<SessionMeta>,
        events: Vec<Event>,
    },
}

/// A new thread's record in the store.
pub struct CreatedThread {
    pub recorder: Box<dyn EventRecorder>,
    /// Where it is kept, if the store has files.
    pub path: Option<PathBuf>,
}

/// What a rebuild of the listing found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReindexReport {
    pub threads: usize,
    /// Threads found in more than one file: the file kept, then the others (ignored).
    pub duplicates: Vec<(ThreadId, PathBuf, Vec<PathBuf>)>,
    /// Files that look like rollouts but could not be read, and why.
    pub skipped: Vec<(PathBuf, String)>,
}

pub trait SessionStore: Send + Sync + 'static {
    /// Records a new thread (its `session_meta`); its events go to the returned recorder.
    fn create(&self, meta: SessionMeta) -> BoxFuture<'_, Result<CreatedThread, RolloutError>>;

    /// Claims a thread for this process and reads it back. Fails with `Locked` while
    /// another writer holds it.
    fn resume(&self, thread: ThreadId) -> BoxFuture<'_, Result<ResumedThread, RolloutError>>;

    /// Branches a thread after its turn `at_turn` (0-based; default the last) into a new
    /// one; the parent is untouched.
    fn fork(
        &self,
        source: ForkSource,
        at_turn: Option<usize>,
    ) -> BoxFuture<'_, Result<ForkedThread, RolloutError>>;

    /// A thread's stored history, without claiming it.
    fn read(&self, thread: ThreadId) -> BoxFuture<'_, Result<LoadedRollout, RolloutError>>;

    /// Where a stored sub-agent comes from (the `AgentOrigin` its rollout records), or
    /// `None` for a root thread. By default read from the whole stored history.
    fn agent_origin(
        &self,
        thread: ThreadId,
    ) -> BoxFuture<'_, Result<Option<AgentOrigin>, RolloutError>> {
        let read = self.read(thread);
        Box::pin(async move {
            Ok(read.await?.events.into_iter().find_map(|e| match e.msg {
                EventMsg::AgentOrigin { origin } => Some(origin),
                _ => None,
            }))
        })
    }

    /// What the listing knows of one thread.
    fn entry(&self, thread: ThreadId) -> BoxFuture<'_, Result<Option<ThreadEntry>, RolloutError>>;

    /// One page of threads, newest first. Costs O(page), whatever the number of threads.
    fn list(&self, query: ListQuery) -> BoxFuture<'_, Result<ThreadPage, RolloutError>>;

    /// Moves a thread out of the listed set. Refused while a writer holds it.
    fn archive(&self, thread: ThreadId) -> BoxFuture<'_, Result<(), RolloutError>>;

    /// Brings an archived thread back.
    fn unarchive(&self, thread: ThreadId) -> BoxFuture<'_, Result<ThreadEntry, RolloutError>>;

    /// Rebuilds the listing from what is stored.
    fn reindex(&self) -> BoxFuture<'_, Result<ReindexReport, RolloutError>>;

    /// Resolves once everything recorded so far is durable.
    fn flush(&self) -> BoxFuture<'_, ()>;
}
