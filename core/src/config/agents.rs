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

use serde::Deserialize;

use crate::agents::AgentsConfig;

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

/// The limits the file asks for, over the defaults.
pub fn agents_config(agents: &AgentsToml, features: &FeaturesToml) -> AgentsConfig {
    let defaults = AgentsConfig::default();
    AgentsConfig {
        enabled: features.multi_agent.unwrap_or(defaults.enabled),
        max_depth: agents.max_depth.unwrap_or(defaults.max_depth),
        max_threads: agents.max_threads.unwrap_or(defaults.max_threads),
        max_concurrent_turns: agents
            .max_concurrent_turns
            .map(|n| n.max(1))
            .or(defaults.max_concurrent_turns),
        max_tree_tokens: agents.max_tree_tokens.or(defaults.max_tree_tokens),
        ..defaults
    }
}
