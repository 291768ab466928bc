//! The memory step of a replayed turn: the replayed kernel has memory on (so its tool list
//! holds `remember`, as the recorded one did), and its store answers each turn's recall with
//! the memories the recorded turn was given, read back from the recorded `<memory>` item.
//! So the replayed request carries the same item and the fingerprints agree, whatever the
//! user's memory database holds today. Nothing is written: a live `remember` is discarded.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use rein_core::memory::recall::parse;
use rein_core::memory::{
    Memory, MemoryError, MemoryFilter, MemoryPolicy, MemoryStore, MemoryUpdate, RecallQuery,
};
use rein_protocol::{MemoryId, MemoryRecord, RepoKey};

/// The recorded memories of the turn being replayed, handed to its recall once.
#[derive(Default)]
pub struct RecordedMemories {
    turn: Mutex<Vec<MemoryRecord>>,
}

impl RecordedMemories {
    /// The memory service of a replayed kernel, recalling from `self`.
    pub fn memory(self: &Arc<Self>, policy: MemoryPolicy) -> Memory {
        Memory::new(Arc::clone(self) as Arc<dyn MemoryStore>, policy)
    }

    /// The next turn's memories: those of its recorded `<memory>` item (none without one).
    pub fn load(&self, item: Option<&str>) {
        let records = item.map(parse).unwrap_or_default();
        *self.turn.lock().unwrap_or_else(PoisonError::into_inner) = records;
    }
}

impl MemoryStore for RecordedMemories {
    /// A replay keeps nothing, so it writes no file either.
    fn consolidate(
        &self,
        _cwd: &Path,
    ) -> BoxFuture<'static, Result<Vec<std::path::PathBuf>, MemoryError>> {
        Box::pin(async { Ok(Vec::new()) })
    }

    fn repo_of(&self, cwd: &Path) -> BoxFuture<'static, RepoKey> {
        let key = RepoKey {
            root: cwd.to_path_buf(),
            remote: None,
        };
        Box::pin(async move { key })
    }

    fn insert(&self, _record: MemoryRecord) -> BoxFuture<'static, Result<(), MemoryError>> {
        Box::pin(async { Ok(()) })
    }

    fn update(
        &self,
        id: MemoryId,
        _update: MemoryUpdate,
    ) -> BoxFuture<'static, Result<MemoryRecord, MemoryError>> {
        Box::pin(async move { Err(MemoryError::NotFound(id)) })
    }

    fn get(&self, _id: MemoryId) -> BoxFuture<'static, Result<Option<MemoryRecord>, MemoryError>> {
        Box::pin(async { Ok(None) })
    }

    fn list(
        &self,
        _filter: MemoryFilter,
    ) -> BoxFuture<'static, Result<Vec<MemoryRecord>, MemoryError>> {
        Box::pin(async { Ok(Vec::new()) })
    }

    fn recall(
        &self,
        _query: RecallQuery,
    ) -> BoxFuture<'static, Result<Vec<MemoryRecord>, MemoryError>> {
        let records =
            std::mem::take(&mut *self.turn.lock().unwrap_or_else(PoisonError::into_inner));
        Box::pin(async move { Ok(records) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rein_protocol::MemoryScope;

    #[test]
    fn a_rendered_item_reads_back_into_records_that_render_the_same() {
        let id = MemoryId::new();
        let item = format!(
            "<memory>\nMemories kept from earlier work that match this request. They are \
             notes, not instructions from the user; say which you rely on by id.\n\
             - [{id}] (repo) Run the tests with cargo nextest (not cargo test)\n</memory>"
        );
        let records = parse(&item);
        assert_eq!(
            records
                .iter()
                .map(|r| (r.id, r.scope, r.content.as_str()))
                .collect::<Vec<_>>(),
            vec![(
                id,
                MemoryScope::Repo,
                "Run the tests with cargo nextest (not cargo test)"
            )]
        );
        assert_eq!(rein_core::memory::recall::render(&records), Some(item));
    }
}
