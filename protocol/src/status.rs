//! The observable status of a thread, derived from its events (never set by hand).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AgentStatus {
    /// No turn has run yet.
    #[default]
    PendingInit,
    /// A turn is active.
    Running,
    /// The last turn completed.
    Completed,
    /// The last turn was aborted (user interrupt or budget). Not terminal: recover or new
    /// input resumes.
    Interrupted,
    /// The last turn failed with an error.
    Errored,
    /// The thread has shut down; nothing more will happen.
    Shutdown,
}

impl AgentStatus {
    pub fn is_final(self) -> bool {
        self == AgentStatus::Shutdown
    }
}

/// Token counts of one response or summed over a thread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TokenUsage {
    pub input_tokens: u64,
    pub cached_input_tokens: u64,
    pub output_tokens: u64,
    pub reasoning_output_tokens: u64,
    pub total_tokens: u64,
}

impl TokenUsage {
    pub fn add(&mut self, other: &TokenUsage) {
        self.input_tokens += other.input_tokens;
        self.cached_input_tokens += other.cached_input_tokens;
        self.output_tokens += other.output_tokens;
        self.reasoning_output_tokens += other.reasoning_output_tokens;
        self.total_tokens += other.total_tokens;
    }
}
