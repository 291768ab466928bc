//! The fingerprint of a [`ModelRequest`]: the model, and a hash of the instructions, of each
//! tool spec and of each input item, recorded once per step (`StepRequested`). A replay
//! computes the same fingerprint for the request its kernel builds and compares the two.
//!
//! Hashes are the first 64 bits of a SHA-256 in hex: enough to tell a change, short enough
//! that a long session's fingerprints stay small next to the items they hash.

use rein_protocol::{Item, RequestFingerprint, ToolFingerprint};
use sha2::{Digest, Sha256};

use super::ModelRequest;
use crate::tools::ToolSpec;

pub fn fingerprint(request: &ModelRequest) -> RequestFingerprint {
    RequestFingerprint {
        model: request.model.clone(),
        instructions: text_hash(&request.instructions),
        tools: request
            .tools
            .iter()
            .map(|spec| ToolFingerprint {
                name: spec.name.clone(),
                hash: tool_hash(spec),
            })
            .collect(),
        input: request.input.iter().map(|item| item_hash(item)).collect(),
        reasoning_effort: request.reasoning_effort,
    }
}

pub fn text_hash(text: &str) -> String {
    short_hash(text.as_bytes())
}

pub fn tool_hash(spec: &ToolSpec) -> String {
    short_hash(&serde_json::to_vec(spec).unwrap_or_default())
}

/// The hash of what the model sees of an item: its JSON without the kernel's `id` (fresh in
/// every run) and `facts` (never sent).
pub fn item_hash(item: &Item) -> String {
    short_hash(&serde_json::to_vec(&model_view(item)).unwrap_or_default())
}

/// An item as JSON, without the fields the model never sees.
pub fn model_view(item: &Item) -> serde_json::Value {
    let mut value = serde_json::to_value(item).unwrap_or_default();
    if let Some(object) = value.as_object_mut() {
        object.remove("id");
        object.remove("facts");
    }
    value
}

fn short_hash(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rein_protocol::ItemId;

    #[test]
    fn an_item_hash_ignores_its_id_and_facts_but_not_its_content() {
        let a = Item::AgentMessage {
            id: ItemId::new(),
            text: "hi".into(),
            partial: false,
        };
        let b = Item::AgentMessage {
            id: ItemId::new(),
            text: "hi".into(),
            partial: false,
        };
        let c = Item::AgentMessage {
            id: ItemId::new(),
            text: "ho".into(),
            partial: false,
        };
        assert_eq!(item_hash(&a), item_hash(&b));
        assert_ne!(item_hash(&a), item_hash(&c));
        assert_eq!(item_hash(&a).len(), 16);
    }
}
