//! The memory store: [`SqliteMemoryStore`] implements the kernel's
//! [`MemoryStore`] port over [`db::MemoryDb`], running
//! every call on a blocking thread. The database is opened on first use and reopened after
//! a failure, so a damaged file is an error naming it on each call (a warning in a turn,
//! an error from `rein memory` and the app-server's `rein/memory/*`), never a crash.

pub mod consolidate;
pub mod db;
pub mod repo;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use rein_core::memory::{MemoryError, MemoryFilter, MemoryStore, MemoryUpdate, RecallQuery};
use rein_protocol::{MemoryId, MemoryRecord, RepoKey};

pub use db::{MemoryDb, MEMORY_FILE};

/// The memory store of one `$REIN_HOME`.
#[derive(Clone)]
pub struct SqliteMemoryStore {
    path: PathBuf,
    db: Arc<Mutex<Option<MemoryDb>>>,
}

impl SqliteMemoryStore {
    /// The store of the database at `path` (opened when first used).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            db: Arc::new(Mutex::new(None)),
        }
    }

    /// The store under `home` (`$REIN_HOME/memory.sqlite`).
    pub fn in_home(home: &Path) -> Self {
        Self::new(home.join(MEMORY_FILE))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Run `f` on the open database, blocking (for callers off the async executor: the
    /// `rein memory` command, the store's blocking threads).
    pub fn with_db<T>(
        &self,
        f: impl FnOnce(&mut MemoryDb) -> Result<T, MemoryError>,
    ) -> Result<T, MemoryError> {
        let mut guard = self.db.lock().unwrap_or_else(PoisonError::into_inner);
        if guard.is_none() {
            *guard = Some(MemoryDb::open(&self.path)?);
        }
        let Some(db) = guard.as_mut() else {
            return Err(MemoryError::Stopped);
        };
        let result = f(db);
        // A damaged file is reopened (and so re-checked) next time.
        if matches!(result, Err(MemoryError::Damaged { .. })) {
            *guard = None;
        }
        result
    }

    fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut MemoryDb) -> Result<T, MemoryError> + Send + 'static,
    ) -> BoxFuture<'static, Result<T, MemoryError>> {
        let store = self.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                crate::io_guard::mark_store_thread();
                store.with_db(f)
            })
            .await
            .unwrap_or(Err(MemoryError::Stopped))
        })
    }
}

impl MemoryStore for SqliteMemoryStore {
    fn repo_of(&self, cwd: &Path) -> BoxFuture<'static, RepoKey> {
        let cwd = cwd.to_path_buf();
        Box::pin(async move {
            let fallback = cwd.clone();
            tokio::task::spawn_blocking(move || {
                crate::io_guard::mark_store_thread();
                repo::repo_of(&cwd)
            })
            .await
            .unwrap_or(RepoKey {
                root: fallback,
                remote: None,
            })
        })
    }

    fn insert(&self, record: MemoryRecord) -> BoxFuture<'static, Result<(), MemoryError>> {
        self.run(move |db| db.insert(&record).map(drop))
    }

    fn update(
        &self,
        id: MemoryId,
        update: MemoryUpdate,
    ) -> BoxFuture<'static, Result<MemoryRecord, MemoryError>> {
        self.run(move |db| db.update(id, &update))
    }

    fn get(&self, id: MemoryId) -> BoxFuture<'static, Result<Option<MemoryRecord>, MemoryError>> {
        self.run(move |db| db.get(id))
    }

    fn list(
        &self,
        filter: MemoryFilter,
    ) -> BoxFuture<'static, Result<Vec<MemoryRecord>, MemoryError>> {
        self.run(move |db| db.list(&filter))
    }

    fn recall(
        &self,
        query: RecallQuery,
    ) -> BoxFuture<'static, Result<Vec<MemoryRecord>, MemoryError>> {
        self.run(move |db| db.recall(&query))
    }

    fn consolidate(&self, cwd: &Path) -> BoxFuture<'static, Result<Vec<PathBuf>, MemoryError>> {
        let (store, cwd) = (self.clone(), cwd.to_path_buf());
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                crate::io_guard::mark_store_thread();
                let home = store.path.parent().unwrap_or(Path::new("/")).to_path_buf();
                [
                    consolidate::Consolidation::User,
                    consolidate::Consolidation::Repo(repo::repo_of(&cwd)),
                ]
                .iter()
                .map(|which| consolidate::consolidate(&store, &home, which).map(|c| c.path))
                .collect()
            })
            .await
            .unwrap_or(Err(MemoryError::Stopped))
        })
    }
}

#[cfg(test)]
mod tests;
