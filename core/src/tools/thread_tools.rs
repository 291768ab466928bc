//! What the tools keep for one thread: the grants its user made "for this session", the
//! sources its steps take tools from, and whatever state a tool keeps per thread (the
//! built-in shell's background terminals). It lives with the thread (its loop owns it and
//! every call of the thread shares it) and dies with it, so no tool keeps a process-wide
//! table keyed by thread id.
//!
//! The kernel does not know what a tool keeps: a tool asks for its state by type
//! ([`ThreadTools::state`]), and the loop only calls the [`ThreadToolState`] hooks (on
//! `Op::CleanBackgroundTerminals` and at shutdown).

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use super::client::ClientCapabilities;
use super::grants::SessionApprovals;
use super::sources::ToolSources;

/// State a tool keeps for one thread, created on the thread's first call that asks for it.
/// The hooks run on the thread's loop and must not block.
pub trait ThreadToolState: Send + Sync + 'static {
    /// The client asked to clean the thread's background work (`Op::CleanBackgroundTerminals`):
    /// stop what outlives a call (background processes). The state stays usable.
    fn clean_background(&self) {}

    /// The thread is shutting down: release everything. Calls that still hold the state may
    /// use it afterwards and find it empty.
    fn shutdown(&self) {
        self.clean_background();
    }
}

/// One entry of the per-thread state: the same value, once for downcasting and once for
/// the hooks.
struct Entry {
    any: Arc<dyn Any + Send + Sync>,
    hooks: Arc<dyn ThreadToolState>,
}

#[derive(Default)]
pub struct ThreadTools {
    /// A copy of the thread state's grants (folded from its approval events), updated by
    /// the loop before it wakes the call that asked.
    grants: RwLock<Arc<SessionApprovals>>,
    pub sources: ToolSources,
    states: Mutex<HashMap<TypeId, Entry>>,
    /// What the thread's front end can do for its tools (nothing unless it said so).
    client: RwLock<ClientCapabilities>,
}

impl ThreadTools {
    pub fn new(sources: ToolSources) -> Self {
        Self {
            sources,
            ..Self::default()
        }
    }

    pub fn grants(&self) -> Arc<SessionApprovals> {
        Arc::clone(&self.grants.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Replace the grants (the loop does, from the thread state).
    pub fn set_grants(&self, grants: SessionApprovals) {
        *self.grants.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(grants);
    }

    /// What the thread's front end can do for its tools.
    pub fn client(&self) -> ClientCapabilities {
        *self.client.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Set what the thread's front end can do for its tools (calls that start later see it).
    pub fn set_client(&self, capabilities: ClientCapabilities) {
        *self.client.write().unwrap_or_else(PoisonError::into_inner) = capabilities;
    }

    /// This thread's `T`, made with `T::default()` the first time it is asked for.
    pub fn state<T: ThreadToolState + Default>(&self) -> Arc<T> {
        let mut states = self.states.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = states.entry(TypeId::of::<T>()).or_insert_with(|| {
            let value = Arc::new(T::default());
            Entry {
                any: Arc::clone(&value) as Arc<dyn Any + Send + Sync>,
                hooks: value,
            }
        });
        match Arc::clone(&entry.any).downcast::<T>() {
            Ok(value) => value,
            // Unreachable: entries are keyed by their own type id.
            Err(_) => Arc::new(T::default()),
        }
    }

    /// Run [`ThreadToolState::clean_background`] of every state the thread's tools keep.
    pub fn clean_background(&self) {
        for hooks in self.hooks() {
            hooks.clean_background();
        }
    }

    /// Run [`ThreadToolState::shutdown`] of every state the thread's tools keep.
    pub fn shutdown(&self) {
        for hooks in self.hooks() {
            hooks.shutdown();
        }
    }

    /// The hooks, copied out so none runs under the table's lock (a hook may kill
    /// processes, or a tool may ask for its state meanwhile).
    fn hooks(&self) -> Vec<Arc<dyn ThreadToolState>> {
        self.states
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .map(|entry| Arc::clone(&entry.hooks))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[derive(Default)]
    struct Counter {
        cleaned: AtomicUsize,
        shut: AtomicUsize,
    }

    impl ThreadToolState for Counter {
        fn clean_background(&self) {
            self.cleaned.fetch_add(1, Ordering::SeqCst);
        }
        fn shutdown(&self) {
            self.shut.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[derive(Default)]
    struct Quiet;
    impl ThreadToolState for Quiet {}

    #[test]
    fn a_state_is_made_once_per_thread_and_hears_the_hooks() {
        let tools = ThreadTools::default();
        let first = tools.state::<Counter>();
        assert!(Arc::ptr_eq(&first, &tools.state::<Counter>()));
        let _ = tools.state::<Quiet>();
        tools.clean_background();
        tools.shutdown();
        assert_eq!(
            (
                first.cleaned.load(Ordering::SeqCst),
                first.shut.load(Ordering::SeqCst)
            ),
            (1, 1)
        );
        let other = ThreadTools::default();
        assert!(!Arc::ptr_eq(&first, &other.state::<Counter>()));
    }
}
