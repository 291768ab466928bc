//! The one SQLite connection of a home, on its own thread. Writers queue updates (a new
//! thread, its title, its name, its last activity) and go on; updates that arrive together
//! are committed in one transaction. Queries run in the same queue, so a query sees every
//! update queued before it (a `thread/list` right after `thread/start` lists the new
//! thread). Nothing here runs on an async executor: updates never wait, and queries are
//! made from blocking threads (or awaited through [`IndexClient::query_async`]).
//!
//! An update that fails leaves the index stale, not wrong: the failure is logged and the
//! marker file `<home>/index.stale` is created, and the next listing first reconciles the
//! index with the files.

use std::path::{Path, PathBuf};
use std::sync::mpsc;

use rein_protocol::{GoalStatus, ThreadId};

use super::index::RolloutIndex;
use super::RolloutError;
use rein_core::store::ThreadEntry;

type Update = Box<dyn FnOnce(&mut RolloutIndex) -> Result<(), RolloutError> + Send>;
type Query = Box<dyn FnOnce(Result<&mut RolloutIndex, &RolloutError>) + Send>;

enum Cmd {
    Update(Update),
    Query(Query),
}

/// Queues work for a home's index thread. Cheap to clone.
#[derive(Clone)]
pub struct IndexClient {
    tx: mpsc::Sender<Cmd>,
    path: PathBuf,
}

/// The marker that says the index missed an update and must be reconciled with the files.
pub fn stale_marker(index_path: &Path) -> PathBuf {
    index_path.with_file_name("index.stale")
}

impl IndexClient {
    /// Starts the thread that owns the index at `path` (opened on the thread).
    pub fn start(path: PathBuf) -> Self {
        let (tx, rx) = mpsc::channel::<Cmd>();
        let thread_path = path.clone();
        let spawned = std::thread::Builder::new()
            .name("rein-index".into())
            .spawn(move || run(&thread_path, &rx));
        if let Err(e) = spawned {
            tracing::error!("cannot start the index thread: {e}");
        }
        IndexClient { tx, path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn update(&self, update: Update) {
        if self.tx.send(Cmd::Update(update)).is_err() {
            self.mark_stale("the index thread has stopped");
        }
    }

    fn mark_stale(&self, why: &str) {
        tracing::warn!("rollout index: {why}; it will be reconciled with the files");
        let _ = std::fs::File::create(stale_marker(&self.path));
    }

    pub fn upsert(&self, entry: ThreadEntry) {
        self.update(Box::new(move |i| i.upsert(&entry)));
    }

    pub fn set_title_if_empty(&self, thread: ThreadId, title: String) {
        self.update(Box::new(move |i| i.set_title_if_empty(thread, &title)));
    }

    pub fn set_name(&self, thread: ThreadId, name: String) {
        self.update(Box::new(move |i| i.set_name(thread, &name)));
    }

    pub fn set_goal(&self, thread: ThreadId, goal: Option<GoalStatus>) {
        self.update(Box::new(move |i| i.set_goal(thread, goal)));
    }

    pub fn touch(&self, thread: ThreadId, updated_ms: u64) {
        self.update(Box::new(move |i| i.touch(thread, updated_ms)));
    }

    pub fn set_location(&self, thread: ThreadId, path: PathBuf, archived: bool) {
        self.update(Box::new(move |i| i.set_location(thread, &path, archived)));
    }

    /// Runs `f` on the index after every update queued so far, and waits for its answer.
    /// Blocks: call it from a blocking thread.
    pub fn query<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut RolloutIndex) -> Result<R, RolloutError> + Send + 'static,
    ) -> Result<R, RolloutError> {
        super::io_guard::assert_off_executor("waiting for the index");
        let (tx, rx) = mpsc::channel();
        self.send_query(f, move |r| {
            let _ = tx.send(r);
        });
        rx.recv().unwrap_or_else(|_| Err(self.gone()))
    }

    /// [`Self::query`] for async callers: nothing blocks.
    pub async fn query_async<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut RolloutIndex) -> Result<R, RolloutError> + Send + 'static,
    ) -> Result<R, RolloutError> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.send_query(f, move |r| {
            let _ = tx.send(r);
        });
        rx.await.unwrap_or_else(|_| Err(self.gone()))
    }

    fn send_query<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut RolloutIndex) -> Result<R, RolloutError> + Send + 'static,
        answer: impl FnOnce(Result<R, RolloutError>) + Send + 'static,
    ) {
        let query: Query = Box::new(move |index| {
            answer(match index {
                Ok(index) => f(index),
                Err(e) => Err(RolloutError::IndexUnavailable(e.to_string())),
            })
        });
        // A failed send drops `query`, and with it the answer channel: the caller sees
        // `gone()`.
        let _ = self.tx.send(Cmd::Query(query));
    }

    fn gone(&self) -> RolloutError {
        RolloutError::IndexUnavailable("the index thread has stopped".into())
    }
}

fn run(path: &Path, rx: &mpsc::Receiver<Cmd>) {
    super::io_guard::mark_store_thread();
    let mut index = RolloutIndex::open(path);
    if let Err(e) = &index {
        tracing::warn!("rollout index unavailable: {e}");
    }
    let mut next = rx.recv().ok();
    while let Some(cmd) = next.take() {
        // An open that failed for a passing reason (out of file descriptors, a full disk)
        // is tried again at the next command, so one bad moment does not leave the listing
        // broken for the rest of the process. (Only a broken index pays for the retry.)
        if index.is_err() {
            if let Ok(reopened) = RolloutIndex::open(path) {
                tracing::info!("rollout index available again: {}", path.display());
                index = Ok(reopened);
            }
        }
        match cmd {
            Cmd::Query(query) => {
                query(index.as_mut().map_err(|e| &*e));
                next = rx.recv().ok();
            }
            Cmd::Update(first) => {
                // Everything queued meanwhile joins the same transaction, up to a query.
                let mut batch = vec![first];
                loop {
                    match rx.try_recv() {
                        Ok(Cmd::Update(u)) => batch.push(u),
                        Ok(query @ Cmd::Query(_)) => {
                            next = Some(query);
                            break;
                        }
                        Err(_) => break,
                    }
                }
                apply(path, &mut index, batch);
                if next.is_none() {
                    next = rx.recv().ok();
                }
            }
        }
    }
}

fn apply(path: &Path, index: &mut Result<RolloutIndex, RolloutError>, batch: Vec<Update>) {
    let Ok(index) = index else {
        let _ = std::fs::File::create(stale_marker(path));
        return;
    };
    let grouped = batch.len() > 1 && index.begin().is_ok();
    let mut failed = None;
    for update in batch {
        if let Err(e) = update(index) {
            failed = Some(e);
        }
    }
    if grouped {
        if let Err(e) = index.commit() {
            index.rollback();
            failed = Some(e);
        }
    }
    if let Some(e) = failed {
        tracing::warn!("rollout index update failed: {e}; it will be reconciled with the files");
        let _ = std::fs::File::create(stale_marker(path));
    }
}
