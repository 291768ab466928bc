//! The advisor: a second model that reviews a batch of tool calls after the model proposed
//! it and before the policy engine judges its calls. These are the facts it leaves in the
//! rollout: which calls it reviewed and why ([`ReviewedCall`], [`AdvisorRisk`]), and what
//! it decided ([`AdvisorVerdict`]). The advisor can stop a batch; it can never let through
//! what the policy engine would stop.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tool_facts::ToolAction;

/// How risky the batch looked before the advisor saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AdvisorRisk {
    /// Nothing in the batch matched a high-risk pattern (reviewed in `full` mode only).
    Low,
    /// A destructive command, a write outside the writable roots, network use or an MCP
    /// tool call.
    High,
}

/// One call of the reviewed batch, as its tool described it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReviewedCall {
    pub call_id: String,
    pub tool: String,
    pub action: ToolAction,
    /// Why this call counts as high-risk, when it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub risk: Option<String>,
}

/// Why an advisor's answer could not be used. The batch went on as if it had approved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AdvisorFailure {
    /// The request failed (unknown model, connection, server error).
    Error,
    /// No answer within `timeout_ms`.
    Timeout,
    /// An answer that is not the JSON object asked for.
    Garbage,
}

/// What the advisor decided about a batch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum AdvisorVerdict {
    Approve {
        reason: String,
    },
    /// The batch goes on; the warnings are shown.
    ApproveWithWarnings {
        reason: String,
    },
    /// No call of the batch runs; each is declined with `reason`, which the model reads.
    Reject {
        reason: String,
    },
    /// The advisor failed; recorded as a warning, and the batch went on to the policy.
    FailedOpen {
        failure: AdvisorFailure,
        message: String,
    },
}

impl AdvisorVerdict {
    /// The batch may go on to the policy engine.
    pub fn lets_through(&self) -> bool {
        !matches!(self, AdvisorVerdict::Reject { .. })
    }

    /// The advisor's reason, or what went wrong with it.
    pub fn text(&self) -> &str {
        match self {
            AdvisorVerdict::Approve { reason }
            | AdvisorVerdict::ApproveWithWarnings { reason }
            | AdvisorVerdict::Reject { reason } => reason,
            AdvisorVerdict::FailedOpen { message, .. } => message,
        }
    }
}

/// How long the advisor may take before the batch goes on without it.
pub const DEFAULT_ADVISOR_TIMEOUT: Duration = Duration::from_secs(30);

/// Which batches the advisor reviews.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AdvisorMode {
    #[default]
    Off,
    /// Only batches with a high-risk call.
    Lightweight,
    /// Every batch.
    Full,
}

/// The resolved advisor configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdvisorConfig {
    pub mode: AdvisorMode,
    /// The advisor's model and its provider, from its profile; `None`: the thread's model.
    pub model: Option<(String, String)>,
    pub timeout: Duration,
}

impl Default for AdvisorConfig {
    fn default() -> Self {
        Self {
            mode: AdvisorMode::Off,
            model: None,
            timeout: DEFAULT_ADVISOR_TIMEOUT,
        }
    }
}
