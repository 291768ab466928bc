//! `[goals]`: how the kernel drives a thread's goal (docs/goals.md).
//!
//! ```toml
//! [goals]
//! auto_resume = true            # a goal active when its process died continues after
//!                               # resume (default false: it comes back paused)
//! backoff_ms = 2000             # the pause after a goal turn without progress; doubles
//! usage_limit_retries = 3       # retries after the provider's usage limit (default 3)
//! usage_limit_retry_ms = 60000  # the first retry's wait; doubles after each (default 60 s)
//! evaluator_profile = "judge"   # the profile whose model answers evaluator verifiers
//!                               # (default the thread's model)
//! evaluator_timeout_ms = 60000  # past this an evaluator check fails (default 60 s)
//! ```
//!
//! Only what the file says is kept; the kernel's defaults fill in the rest.

use serde::Deserialize;

/// `[goals]` as written. An unknown key fails the load.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GoalsToml {
    pub auto_resume: Option<bool>,
    pub backoff_ms: Option<u64>,
    pub usage_limit_retries: Option<u32>,
    pub usage_limit_retry_ms: Option<u64>,
    pub evaluator_profile: Option<String>,
    pub evaluator_timeout_ms: Option<u64>,
}
