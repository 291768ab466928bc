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
    /// How many leading input items are the previous request's of the same turn (not
    /// repeated here): a long turn records each item's hash once.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub input_reused: usize,
    /// One hash per input item after the reused ones, in order.
    pub input: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<ReasoningEffort>,
}

impl RequestFingerprint {
    /// Every input hash, given the previous request's of the same turn (empty for the
    /// first); `None` when this one reuses more than there were.
    pub fn full_input(&self, previous: &[String]) -> Option<Vec<String>> {
        let mut all = previous.get(..self.input_reused)?.to_vec();
        all.extend(self.input.iter().cloned());
        Some(all)
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ToolFingerprint {
    pub name: String,
    pub hash: String,
}
