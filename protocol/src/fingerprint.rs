//! What one model request sent, as hashes: recorded once per step so a replay can tell
//! whether a change to rein, its prompts or its configuration would change what the model
//! is asked. Hashes, not copies: the rollout already holds every item and the settings.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::settings::ReasoningEffort;

/// The request of one step. Each hash is the first 64 bits of a SHA-256, in hex, of the
/// part's canonical JSON (object keys sorted; an item's `id` and `facts` left out, since
/// the model sees neither).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RequestFingerprint {
    pub model: String,
    /// The hash of the instructions text.
    pub instructions: String,
    /// The tools offered, in the order offered: name and hash of the whole spec.
    pub tools: Vec<ToolFingerprint>,
    /// One hash per input item, in order.
    pub input: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<ReasoningEffort>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ToolFingerprint {
    pub name: String,
    pub hash: String,
}
