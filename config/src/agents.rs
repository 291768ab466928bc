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
//! ```
//!
//! Only what the file says is kept; the kernel's defaults fill in the rest.

use serde::Deserialize;

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentsToml {
    pub max_depth: Option<u32>,
    pub max_threads: Option<usize>,
    pub max_concurrent_turns: Option<usize>,
    pub max_tree_tokens: Option<u64>,
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
}

pub fn agents_settings(agents: &AgentsToml, features: &FeaturesToml) -> AgentsSettings {
    AgentsSettings {
        enabled: features.multi_agent,
        max_depth: agents.max_depth,
        max_threads: agents.max_threads,
        // At least one turn at a time, or nothing would ever run.
        max_concurrent_turns: agents.max_concurrent_turns.map(|n| n.max(1)),
        max_tree_tokens: agents.max_tree_tokens,
    }
}
