//! The `[agents]` table and `features.multi_agent`:
//!
//! ```toml
//! [features]
//! multi_agent = true            # offer the sub-agent tools (the default)
//!
//! [agents]
//! max_depth = 1                 # the root is 0: children, no grandchildren
//! max_threads = 6               # open sub-agents per tree
//! max_concurrent_turns = 4      # sub-agent turns running at once; more wait for capacity
//! max_tree_tokens = 2000000     # tokens the whole tree may spend (off by default)
//! strategy = "planner"          # "single" (the default) or "planner": the root plans a task graph
//! max_review_rounds = 2         # how often a reviewer may send a node back
//! max_retries = 2               # attempts after a transient failure of a task node
//! retry_backoff_ms = 2000       # wait before the first retry; doubled for each next one
//!
//! [agents.roles.reviewer]       # a role: built-in ones (planner, worker, reviewer) are overridden
//! description = "Checks a worker's result"
//! model = "gpt-5"               # the role's model (default: the parent's)
//! reasoning_effort = "high"
//! instructions = "Review strictly."
//! tools = ["shell", "submit_review"]  # allow-list (default: every tool)
//! sandbox_mode = "read-only"
//! may_spawn = false
//! ```
//!
//! Only what the file says is kept; the kernel's defaults fill in the rest.

use std::collections::BTreeMap;

use rein_protocol::{ReasoningEffort, SandboxPolicy};
use serde::Deserialize;

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentsToml {
    pub max_depth: Option<u32>,
    pub max_threads: Option<usize>,
    pub max_concurrent_turns: Option<usize>,
    pub max_tree_tokens: Option<u64>,
    pub strategy: Option<Strategy>,
    pub max_review_rounds: Option<u32>,
    pub max_retries: Option<u32>,
    pub retry_backoff_ms: Option<u64>,
    #[serde(default)]
    pub roles: BTreeMap<String, RoleToml>,
}

/// How a root thread works: alone (`single`), or by planning a task graph the kernel runs
/// on sub-agents (`planner`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    #[default]
    Single,
    Planner,
}

/// `[agents.roles.NAME]`: what a sub-agent of this role runs with. Unset fields keep the
/// built-in role's value (or the parent's).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleToml {
    pub description: Option<String>,
    pub model: Option<String>,
    pub reasoning_effort: Option<ReasoningEffort>,
    pub instructions: Option<String>,
    /// The tools it is offered (by name); absent: all.
    pub tools: Option<Vec<String>>,
    pub sandbox_mode: Option<SandboxPolicy>,
    pub may_spawn: Option<bool>,
}

/// `[features]`; keys rein does not know are ignored (other tools share the file).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct FeaturesToml {
    pub multi_agent: Option<bool>,
}

/// What the file asks of sub-agents (`None`: the kernel's default).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AgentsSettings {
    pub enabled: Option<bool>,
    pub max_depth: Option<u32>,
    pub max_threads: Option<usize>,
    pub max_concurrent_turns: Option<usize>,
    pub max_tree_tokens: Option<u64>,
    pub strategy: Option<Strategy>,
    pub max_review_rounds: Option<u32>,
    pub max_retries: Option<u32>,
    pub retry_backoff_ms: Option<u64>,
    pub roles: BTreeMap<String, RoleToml>,
}

pub fn agents_settings(agents: &AgentsToml, features: &FeaturesToml) -> AgentsSettings {
    AgentsSettings {
        enabled: features.multi_agent,
        max_depth: agents.max_depth,
        max_threads: agents.max_threads,
        // At least one turn at a time, or nothing would ever run.
        max_concurrent_turns: agents.max_concurrent_turns.map(|n| n.max(1)),
        max_tree_tokens: agents.max_tree_tokens,
        strategy: agents.strategy,
        max_review_rounds: agents.max_review_rounds,
        max_retries: agents.max_retries,
        retry_backoff_ms: agents.retry_backoff_ms,
        roles: agents.roles.clone(),
    }
}
