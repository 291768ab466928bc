//! Kernel-wide knobs that are not per-thread settings.

use std::time::Duration;

use rein_protocol::advisor::AdvisorConfig;

#[derive(Clone, Debug, PartialEq)]
pub struct KernelConfig {
    /// Capacity of each thread's Op queue. A full queue makes `submit` wait, never drop.
    pub op_queue_capacity: usize,
    /// How long an interrupted turn's work may take to wind down before it is aborted.
    pub interrupt_grace: Duration,
    /// How many times stop hooks may veto the end of one turn before the kernel stops
    /// consulting them (a guard against hooks that never let a turn end).
    pub max_stop_hook_vetoes: u32,
    /// Whether tool calls of one reply run concurrently.
    pub parallel_tool_calls: bool,
    /// Compact when the context passes this many tokens (`model_auto_compact_token_limit`);
    /// `None` uses `auto_compact_ratio` of the model's context window.
    pub auto_compact_token_limit: Option<u64>,
    /// The share of the context window at which auto-compaction starts.
    pub auto_compact_ratio: f64,
    /// How many tokens of the most recent user messages a compaction keeps verbatim (capped
    /// further at a quarter of the model's window).
    pub compact_user_message_tokens: u64,
    /// Which tool batches a second model reviews before the policy engine (`[advisor]`).
    pub advisor: AdvisorConfig,
    /// The pause after the first goal turn without progress; it doubles after each
    /// further one (see `docs/goals.md`).
    pub goal_backoff: Duration,
    /// The model that answers a goal's evaluator verifiers (`[goals] evaluator_profile`);
    /// `None`: the thread's own.
    pub goal_evaluator_model: Option<String>,
    /// How long an evaluator may take before its check fails.
    pub goal_evaluator_timeout: Duration,
    /// Whether a goal that was active when its process died continues after the thread
    /// is loaded again (`[goals] auto_resume`); by default it comes back paused.
    pub goal_auto_resume: bool,
    /// How often a goal stopped by the provider's usage limit is retried before it stays
    /// `usage_limited`.
    pub goal_usage_retries: u32,
    /// The wait before the first such retry; it doubles after each.
    pub goal_usage_retry: Duration,
}

impl Default for KernelConfig {
    fn default() -> Self {
        Self {
            op_queue_capacity: 64,
            interrupt_grace: Duration::from_millis(100),
            max_stop_hook_vetoes: 3,
            parallel_tool_calls: true,
            auto_compact_token_limit: None,
            auto_compact_ratio: 0.9,
            compact_user_message_tokens: 20_000,
            advisor: AdvisorConfig::default(),
            goal_backoff: Duration::from_secs(2),
            goal_evaluator_model: None,
            goal_evaluator_timeout: Duration::from_secs(60),
            goal_auto_resume: false,
            goal_usage_retries: 3,
            goal_usage_retry: Duration::from_secs(60),
        }
    }
}

impl KernelConfig {
    /// The context size at which a model with `window` tokens gets compacted.
    pub fn compaction_limit(&self, window: Option<u64>) -> Option<u64> {
        self.auto_compact_token_limit.or_else(|| {
            // Truncation is fine: the limit is a threshold, not an exact budget.
            window.map(|w| (w as f64 * self.auto_compact_ratio) as u64)
        })
    }

    /// Tokens of recent user messages a compaction keeps for a model with `window` tokens.
    pub fn kept_user_tokens(&self, window: Option<u64>) -> u64 {
        window.map_or(self.compact_user_message_tokens, |w| {
            self.compact_user_message_tokens.min(w / 4)
        })
    }
}
