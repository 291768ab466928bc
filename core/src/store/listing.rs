//! What a store's listing says about its threads, and how it is asked.

use std::path::PathBuf;

use rein_protocol::ThreadId;

/// One thread as the index knows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadEntry {
    pub thread_id: ThreadId,
    pub path: PathBuf,
    pub created_ms: u64,
    pub updated_ms: u64,
    pub cwd: PathBuf,
    pub model: String,
    pub title: Option<String>,
    /// The user-given name (`thread_named`), if any.
    pub name: Option<String>,
    /// The status of the thread's goal as last recorded, if it has one.
    pub goal: Option<rein_protocol::GoalStatus>,
    pub archived: bool,
    pub forked_from: Option<ThreadId>,
    /// The thread that spawned it, for a sub-agent.
    pub parent_thread_id: Option<ThreadId>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SortKey {
    Created,
    #[default]
    Updated,
}

/// What to list. Newest first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListQuery {
    pub limit: usize,
    /// From a previous page's `next_cursor`.
    pub cursor: Option<String>,
    pub sort: SortKey,
    pub cwd: Option<PathBuf>,
    pub archived: bool,
    /// Substring of the title (first user message) or the name, case-insensitive for ASCII.
    pub search: Option<String>,
    /// Which of root threads and sub-agents to list.
    pub kinds: ThreadKinds,
}

/// Root threads (started by a client), sub-agents (spawned by a model), or both.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ThreadKinds {
    #[default]
    Roots,
    SubAgents,
    All,
}

impl Default for ListQuery {
    fn default() -> Self {
        ListQuery {
            limit: 50,
            cursor: None,
            sort: SortKey::default(),
            cwd: None,
            archived: false,
            search: None,
            kinds: ThreadKinds::default(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadPage {
    pub threads: Vec<ThreadEntry>,
    pub next_cursor: Option<String>,
}
