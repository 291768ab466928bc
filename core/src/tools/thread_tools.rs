//! What the tools keep for one thread: its background terminals, the grants its user made
//! "for this session", and the sources its steps take tools from. It lives with the thread
//! (its loop owns it and every call of the thread shares it) and dies with it, so no tool
//! keeps a process-wide table keyed by thread id.

use std::sync::{Arc, PoisonError, RwLock};

use super::policy::SessionApprovals;
use super::sources::ToolSources;
use super::terminals::BackgroundTerminals;

#[derive(Default)]
pub struct ThreadTools {
    pub terminals: BackgroundTerminals,
    /// A copy of the thread state's grants (folded from its approval events), updated by
    /// the loop before it wakes the call that asked.
    grants: RwLock<Arc<SessionApprovals>>,
    pub sources: ToolSources,
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
}
