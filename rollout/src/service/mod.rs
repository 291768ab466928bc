//! [`RolloutService`]: the session store of one `$REIN_HOME` in rollout files, behind the
//! [`SessionStore`] trait. A few threads of its own and the blocking pool do all its I/O:
//!
//! - the writer thread (`writer`) owns every loaded thread's file and writes each event
//!   as it arrives (write-through), several threads' events in one pass;
//! - the sync threads (`syncer`) run the fsyncs, one per file for every request that
//!   queued meanwhile (group commit), on a few workers so that one slow fsync does not
//!   hold back other threads' turn ends;
//! - the index thread ([`crate::indexer`]) holds the home's one SQLite connection;
//! - creating, resuming, forking, reading, listing and archiving run on tokio's blocking
//!   threads ([`RolloutStore`] operations), then hand the thread's writer to the writer
//!   thread.
//!
//! Architecture invariant: no file, fsync or SQLite call runs on an async executor
//! thread; every method here only sends messages and awaits answers.

mod recorder;
mod syncer;
mod writer;

pub use self::syncer::BeforeSync;

use std::path::PathBuf;
use std::sync::{mpsc, Arc};

use futures::future::BoxFuture;
use futures::FutureExt;
use rein_protocol::ThreadId;

use self::recorder::StoreRecorder;
use self::writer::{OnDrop, WriterCmd, WriterThread};
use super::io_guard;
use super::store::RolloutStore;
use super::writer::{Durability, RolloutWriter};
use super::RolloutError;
use rein_core::store::{
    CreatedThread, ForkSource, ForkedThread, ReindexReport, ResumedThread, SessionStore,
};
use rein_core::store::{ListQuery, LoadedRollout, SessionMeta, ThreadEntry, ThreadPage};

/// Files kept open at most, whatever the number of loaded threads.
pub const DEFAULT_MAX_OPEN_FILES: usize = 256;

pub struct RolloutService {
    store: Arc<RolloutStore>,
    writer: mpsc::Sender<WriterCmd>,
}

/// How a service is set up.
#[derive(Clone)]
pub struct ServiceOptions {
    pub durability: Durability,
    /// Rollout files kept open at once (least recently written are closed first).
    pub max_open_files: usize,
    /// Payloads longer than this go to the blob store (`None`: the default).
    pub blob_threshold: Option<usize>,
    /// Runs before each rollout fsync, on the sync worker doing it (tests make one
    /// file's fsync slow with it). `None` in production.
    pub before_sync: Option<BeforeSync>,
}

impl std::fmt::Debug for ServiceOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceOptions")
            .field("durability", &self.durability)
            .field("max_open_files", &self.max_open_files)
            .field("blob_threshold", &self.blob_threshold)
            .field("before_sync", &self.before_sync.is_some())
            .finish()
    }
}

impl Default for ServiceOptions {
    fn default() -> Self {
        Self {
            durability: Durability::default(),
            max_open_files: DEFAULT_MAX_OPEN_FILES,
            blob_threshold: None,
            before_sync: None,
        }
    }
}

fn spawn_named(name: &str, f: impl FnOnce() + Send + 'static) {
    if let Err(e) = std::thread::Builder::new().name(name.into()).spawn(f) {
        tracing::error!("cannot start the {name} thread: {e}");
    }
}

impl RolloutService {
    /// Starts the store of `home`: its threads, and (in the background) the
    /// reconciliation of the index with the files.
    pub fn start(home: impl Into<PathBuf>, options: ServiceOptions) -> Arc<Self> {
        let home = home.into();
        let store = match options.blob_threshold {
            Some(t) => RolloutStore::with_blob_threshold(home, t),
            None => RolloutStore::new(home),
        }
        .with_durability(options.durability);
        let store = Arc::new(store);
        let (sync_tx, sync_rx) = mpsc::channel();
        let before_sync = options.before_sync.clone();
        spawn_named("rein-sync-intake", move || {
            io_guard::mark_store_thread();
            syncer::run(&sync_rx, before_sync);
        });
        let (writer_tx, writer_rx) = mpsc::channel();
        let thread = WriterThread::new(options.durability, options.max_open_files, sync_tx);
        spawn_named("rein-writer", move || {
            io_guard::mark_store_thread();
            thread.run(&writer_rx);
        });
        let reconciling = Arc::clone(&store);
        spawn_named("rein-reconcile", move || {
            io_guard::mark_store_thread();
            if let Err(e) = reconciling.reconcile() {
                tracing::warn!("reconciling the rollout index: {e}");
            }
        });
        Arc::new(Self {
            store,
            writer: writer_tx,
        })
    }

    pub fn home(&self) -> &std::path::Path {
        self.store.home()
    }

    /// The blocking operations behind this service.
    pub fn rollouts(&self) -> &Arc<RolloutStore> {
        &self.store
    }

    /// Runs `op` on a blocking thread.
    fn blocking<R: Send + 'static>(
        &self,
        op: impl FnOnce(&RolloutStore) -> Result<R, RolloutError> + Send + 'static,
    ) -> BoxFuture<'static, Result<R, RolloutError>> {
        let store = Arc::clone(&self.store);
        async move {
            tokio::task::spawn_blocking(move || {
                io_guard::mark_store_thread();
                op(&store)
            })
            .await
            .unwrap_or_else(|e| {
                Err(RolloutError::IndexUnavailable(format!(
                    "a store operation failed: {e}"
                )))
            })
        }
        .boxed()
    }
}

/// Hands `writer` to the writer thread; its events go through the returned recorder. Done
/// on the blocking thread that made the writer, so a caller that gives up never drops a
/// writer (and its final fsync) on an executor thread.
fn adopt(tx: &mpsc::Sender<WriterCmd>, writer: RolloutWriter) -> StoreRecorder {
    let thread = writer.thread_id();
    // A send fails only if the writer thread is gone; the recorder then reports every
    // event as failed.
    let _ = tx.send(WriterCmd::Adopt(Box::new(writer)));
    StoreRecorder::new(thread, tx.clone())
}

impl SessionStore for RolloutService {
    fn create(&self, meta: SessionMeta) -> BoxFuture<'_, Result<CreatedThread, RolloutError>> {
        let tx = self.writer.clone();
        self.blocking(move |store| {
            let writer = store.create(&meta)?;
            let path = writer.path().to_path_buf();
            Ok(CreatedThread {
                recorder: Box::new(adopt(&tx, writer)),
                path: Some(path),
            })
        })
    }

    fn resume(&self, thread: ThreadId) -> BoxFuture<'_, Result<ResumedThread, RolloutError>> {
        let tx = self.writer.clone();
        self.blocking(move |store| {
            let reopened = store.resume(thread)?;
            let entry = store.entry(thread).ok().flatten();
            let loaded = reopened.loaded;
            Ok(ResumedThread {
                meta: loaded.meta,
                events: loaded.events,
                diagnostics: loaded.diagnostics,
                entry,
                recorder: Box::new(adopt(&tx, reopened.writer)),
            })
        })
    }

    fn fork(
        &self,
        source: ForkSource,
        at_turn: Option<usize>,
    ) -> BoxFuture<'_, Result<ForkedThread, RolloutError>> {
        let tx = self.writer.clone();
        self.blocking(move |store| {
            let forked = match source {
                ForkSource::Stored(parent) => store.fork(parent, at_turn)?,
                ForkSource::Live { meta, events } => {
                    store.fork_from_events(&meta, &events, at_turn)?
                }
            };
            let path = forked.writer.path().to_path_buf();
            Ok(ForkedThread {
                meta: forked.meta,
                events: forked.events,
                path: Some(path),
                recorder: Box::new(adopt(&tx, forked.writer)),
            })
        })
    }

    fn read(&self, thread: ThreadId) -> BoxFuture<'_, Result<LoadedRollout, RolloutError>> {
        self.blocking(move |store| store.load(thread))
    }

    fn agent_origin(
        &self,
        thread: ThreadId,
    ) -> BoxFuture<'_, Result<Option<rein_protocol::AgentOrigin>, RolloutError>> {
        self.blocking(move |store| store.agent_origin(thread))
    }

    fn entry(&self, thread: ThreadId) -> BoxFuture<'_, Result<Option<ThreadEntry>, RolloutError>> {
        let index = self.store.index().clone();
        async move { index.query_async(move |i| i.get(thread)).await }.boxed()
    }

    fn list(&self, query: ListQuery) -> BoxFuture<'_, Result<ThreadPage, RolloutError>> {
        self.blocking(move |store| store.list(&query))
    }

    fn archive(&self, thread: ThreadId) -> BoxFuture<'_, Result<(), RolloutError>> {
        self.blocking(move |store| store.archive(thread).map(drop))
    }

    fn unarchive(&self, thread: ThreadId) -> BoxFuture<'_, Result<ThreadEntry, RolloutError>> {
        self.blocking(move |store| {
            store.unarchive(thread)?;
            store
                .entry(thread)?
                .ok_or(RolloutError::ThreadNotFound(thread))
        })
    }

    fn reindex(&self) -> BoxFuture<'_, Result<ReindexReport, RolloutError>> {
        self.blocking(super::store::RolloutStore::reindex)
    }

    fn flush(&self) -> BoxFuture<'_, ()> {
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let done = OnDrop::new(Box::new(move || {
            let _ = tx.send(());
        }));
        let _ = self.writer.send(WriterCmd::Flush(done));
        let index = self.store.index().clone();
        async move {
            let _ = rx.await;
            // The listing's updates are queued behind the writes; let them land too.
            let _ = index.query_async(|_| Ok(())).await;
        }
        .boxed()
    }
}
