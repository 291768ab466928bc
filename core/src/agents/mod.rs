//! Sub-agents: threads that spawn threads. A model calls `spawn_agent` and a child thread
//! starts with the task as an ordinary user message; `send_input`, `wait_agent`,
//! `close_agent`, `resume_agent` and `list_agents` (Codex's names and shapes) talk to the
//! tree. One [`AgentControl`] per manager keeps every tree: who is whose child, each
//! agent's status as its events say, and the tree's limits (depth and open children refuse
//! with an error the model reads; running turns over `max_concurrent_turns` wait for
//! capacity, and a thread blocked in `wait_agent` holds none, so a tree cannot deadlock on
//! its own limit).
//!
//! Mail (tasks, results) goes through the receiving thread's mailbox (`Op::AgentMail`),
//! with the phase rule and idle wake-up its loop applies. A finished child's result is mail
//! to its parent unless a `wait_agent` of the parent took it. Interrupting a thread's turn
//! interrupts its descendants' running turns; closing or shutting a thread down ends its
//! subtree, leaves first. The tree is durable: the parent's rollout records each edge
//! before the child exists, the child's records its origin, and resuming the root through
//! [`AgentControl::restore`] brings the open children back with their statuses.

mod control;
mod delivery;
mod error;
pub mod graph;
mod ops;
mod registry;
mod restore;
pub mod roles;
mod spawn;
mod state;
mod tools;

use std::collections::BTreeMap;

pub use control::AgentControl;
pub use rein_protocol::Strategy;
pub use roles::AgentRole;
pub use state::AgentState;

/// The `[agents]` table (and `features.multi_agent`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentsConfig {
    /// `features.multi_agent`: whether threads are offered the sub-agent tools at all.
    pub enabled: bool,
    /// How deep the tree may grow: the root is 0, so 1 allows children but no grandchildren.
    pub max_depth: u32,
    /// Open (not closed) sub-agents per tree.
    pub max_threads: usize,
    /// Sub-agent turns running at once in a tree (the root's own turns are not counted);
    /// more wait for capacity. `None`: no limit.
    pub max_concurrent_turns: Option<usize>,
    /// Tokens the whole tree may spend; once spent, no new spawns and running children
    /// are stopped (`BudgetLimited`). `None`: no budget.
    pub max_tree_tokens: Option<u64>,
    /// What `wait_agent` waits when the model gives no `timeout_ms`.
    pub default_wait_ms: u64,
    /// The longest `wait_agent` may wait.
    pub max_wait_ms: u64,
    /// How long closing one agent may take before it is abandoned (its loop is told to
    /// stop either way).
    pub close_timeout_ms: u64,
    /// The roles a spawn or a task node may name (built-in ones plus `[agents.roles]`).
    pub roles: BTreeMap<String, AgentRole>,
    pub strategy: Strategy,
    /// How often a reviewer may send a task node back before it fails.
    pub max_review_rounds: u32,
    /// Attempts a task node gets after a transient failure (a failed turn, a dead thread,
    /// a failed start) before it fails.
    pub max_retries: u32,
    /// How long the first retry waits after the failed attempt; each next one waits twice
    /// as long.
    pub retry_backoff_ms: u64,
}

impl Default for AgentsConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            max_depth: 1,
            max_threads: 6,
            max_concurrent_turns: Some(4),
            max_tree_tokens: None,
            default_wait_ms: 30_000,
            max_wait_ms: 3_600_000,
            close_timeout_ms: 10_000,
            roles: roles::builtin_roles(),
            strategy: Strategy::Single,
            max_review_rounds: 2,
            max_retries: 2,
            retry_backoff_ms: 2_000,
        }
    }
}
