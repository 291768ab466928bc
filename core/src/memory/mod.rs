//! Memory: the [`MemoryStore`] port (the session store's leaf implements it, in SQLite
//! with full-text search), the policy a kernel runs it under ([`MemoryPolicy`]), the
//! `remember` tool ([`tool`]), secret redaction before anything is stored ([`redact`]) and
//! the per-turn recall that gives the model the memories in scope ([`recall`]).
//!
//! Architecture invariant: the kernel decides (consent, scope, budget) and records what it
//! decided as events; the store only keeps records. A memory of another repository is never
//! returned by [`MemoryStore::recall`], whose query names the one repository in scope.

pub mod recall;
pub mod redact;
pub mod tool;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::BoxFuture;
use rein_protocol::ThreadId;
use rein_protocol::{MemoryConsent, MemoryId, MemoryRecord, MemoryScope, MemoryState, RepoKey};

/// Why the memory store could not do something.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// The database cannot be read as one (damaged, or not a database).
    #[error("the memory database {path} is damaged: {detail}")]
    Damaged { path: PathBuf, detail: String },
    /// Reading or writing the database failed.
    #[error("the memory database {path}: {detail}")]
    Storage { path: PathBuf, detail: String },
    #[error("no memory {0}")]
    NotFound(MemoryId),
    #[error("a memory holds at most {max} bytes; this one has {bytes}")]
    TooLong { bytes: usize, max: usize },
    #[error("a memory needs content")]
    Empty,
    /// The blocking worker the store runs on went away (the process is shutting down).
    #[error("the memory store stopped")]
    Stopped,
}

/// What recall looks for: memories in scope for `thread_id` working in `repo` (user scope,
/// that repository's, that thread's) that match `text`, most relevant first, until
/// `max_tokens` is spent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecallQuery {
    pub text: String,
    pub thread_id: ThreadId,
    pub repo: RepoKey,
    pub max_tokens: u32,
    /// Now, in milliseconds since the Unix epoch (recency and the use stamp).
    pub now_ms: u64,
    /// Retire accepted memories not used (or, never used, not created) since then, first.
    pub retire_before_ms: Option<u64>,
}

/// Which records a listing returns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemoryFilter {
    pub scope: Option<MemoryScope>,
    /// Only this repository's (for `repo` scope).
    pub repo: Option<RepoKey>,
    /// Only these states; empty: all.
    pub states: Vec<MemoryState>,
    /// Full-text match on content and keywords.
    pub text: Option<String>,
    pub limit: Option<u32>,
}

/// A change to a kept memory (`rein/memory/update`); absent fields stay.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemoryUpdate {
    pub content: Option<String>,
    pub keywords: Option<Vec<String>>,
    pub state: Option<MemoryState>,
}

/// Where memories are kept. Every method may block on storage, so implementations do that
/// work off the async executor and hand back a future.
pub trait MemoryStore: Send + Sync + 'static {
    /// The repository `cwd` is in (its root and `origin` remote), or `cwd` itself.
    fn repo_of(&self, cwd: &Path) -> BoxFuture<'static, RepoKey>;
    /// Keep a new record as it is (the caller redacted and bounded it).
    fn insert(&self, record: MemoryRecord) -> BoxFuture<'static, Result<(), MemoryError>>;
    /// Change a record; returns it as it now is.
    fn update(
        &self,
        id: MemoryId,
        update: MemoryUpdate,
    ) -> BoxFuture<'static, Result<MemoryRecord, MemoryError>>;
    fn get(&self, id: MemoryId) -> BoxFuture<'static, Result<Option<MemoryRecord>, MemoryError>>;
    fn list(
        &self,
        filter: MemoryFilter,
    ) -> BoxFuture<'static, Result<Vec<MemoryRecord>, MemoryError>>;
    /// The accepted memories in scope matching the query, within its budget; each one
    /// returned has its use counted and stamped.
    fn recall(
        &self,
        query: RecallQuery,
    ) -> BoxFuture<'static, Result<Vec<MemoryRecord>, MemoryError>>;
    /// Write the accepted memories of the user's scope and of the repository `cwd` is in
    /// into their consolidated files (a projection of the store); the files written.
    fn consolidate(&self, cwd: &Path) -> BoxFuture<'static, Result<Vec<PathBuf>, MemoryError>>;
}

/// How a kernel uses memory (`[memory]` in config.toml).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryPolicy {
    pub consent: MemoryConsent,
    /// The budget of the memories given to one turn, in estimated tokens.
    pub max_tokens: u32,
    /// Retire accepted memories nobody used for this many days.
    pub max_unused_days: Option<u32>,
    /// After every this many completed turns, a turn of the kernel's own asks the model
    /// which memories to propose (`[memory] extract`); `None`: never.
    pub extract_every: Option<u32>,
    /// The model extraction turns ask (a name of the kernel's catalog), so a cheaper one
    /// can do it; `None`: the thread's own.
    pub extract_model: Option<String>,
    /// After each completed extraction, write the consolidated `MEMORY.md` files
    /// ([`MemoryStore::consolidate`]).
    pub consolidate: bool,
}

impl Default for MemoryPolicy {
    fn default() -> Self {
        Self {
            consent: MemoryConsent::Ask,
            max_tokens: 400,
            max_unused_days: None,
            extract_every: None,
            extract_model: None,
            consolidate: false,
        }
    }
}

/// The store and the policy, as the kernel's services hold them.
#[derive(Clone)]
pub struct Memory {
    pub store: Arc<dyn MemoryStore>,
    pub policy: MemoryPolicy,
    /// Now, in milliseconds since the Unix epoch (a test may fix it).
    pub clock: fn() -> u64,
}

impl Memory {
    pub fn new(store: Arc<dyn MemoryStore>, policy: MemoryPolicy) -> Self {
        Self {
            store,
            policy,
            clock: crate::store::time::now_ms,
        }
    }

    /// The cut-off for retirement at `now_ms`, when `max_unused_days` is set.
    pub fn retire_before(&self, now_ms: u64) -> Option<u64> {
        retire_cutoff(now_ms, self.policy.max_unused_days)
    }
}

/// The retirement cut-off at `now_ms` for `max_unused_days` (when set): memories not used
/// (never used: not created) since then retire.
pub fn retire_cutoff(now_ms: u64, max_unused_days: Option<u32>) -> Option<u64> {
    max_unused_days.map(|days| now_ms.saturating_sub(u64::from(days) * 86_400_000))
}
