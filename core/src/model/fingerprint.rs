//! The fingerprint of a [`ModelRequest`]: the model, and a hash of the instructions, of each
//! tool spec and of each input item, recorded once per step (`StepRequested`). A replay
//! computes the same fingerprint for the request its kernel builds and compares the two.
//!
//! Hashes are the first 64 bits of a SHA-256 in hex: enough to tell a change, short enough
//! that a long session's fingerprints stay small next to the items they hash.

use std::sync::Arc;

use rein_protocol::{Item, RequestFingerprint, ToolFingerprint};
use sha2::{Digest, Sha256};

use super::ModelRequest;
use crate::tools::ToolSpec;

/// The fingerprint of `request` with every input hash written out.
pub fn fingerprint(request: &ModelRequest) -> RequestFingerprint {
    InputHashes::default().fingerprint(request)
}

/// The input of a turn's last request and its hashes: each item is hashed once per turn,
/// and a fingerprint names only the items after those it shares with the last request.
#[derive(Default)]
pub struct InputHashes {
    items: Vec<Arc<Item>>,
    hashes: Vec<String>,
}

impl InputHashes {
    pub fn fingerprint(&mut self, request: &ModelRequest) -> RequestFingerprint {
        // History only grows within a turn, except when a compaction replaces it: the
        // shared prefix is found by identity, so nothing is compared by content.
        let reused = self
            .items
            .iter()
            .zip(&request.input)
            .take_while(|(a, b)| Arc::ptr_eq(a, b))
            .count();
        self.items.truncate(reused);
        self.hashes.truncate(reused);
        for item in &request.input[reused..] {
            self.items.push(Arc::clone(item));
            self.hashes.push(item_hash(item));
        }
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
            input_reused: reused,
            input: self.hashes[reused..].to_vec(),
            reasoning_effort: request.reasoning_effort.clone(),
        }
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

    #[test]
    fn a_later_request_of_the_turn_names_only_its_new_items() {
        let request = |input: &[Arc<Item>]| ModelRequest {
            model: "m".into(),
            instructions: String::new(),
            input: input.to_vec(),
            tools: Arc::from(Vec::new()),
            parallel_tool_calls: false,
            reasoning_effort: None,
            prompt_cache_key: String::new(),
            output_schema: None,
        };
        let first = Arc::new(Item::user_text("one"));
        let second = Arc::new(Item::user_text("two"));
        let mut hashes = InputHashes::default();
        let a = hashes.fingerprint(&request(&[Arc::clone(&first)]));
        let b = hashes.fingerprint(&request(&[Arc::clone(&first), Arc::clone(&second)]));
        assert_eq!((a.input_reused, a.input.len()), (0, 1));
        assert_eq!(b.input_reused, 1);
        assert_eq!(b.input, vec![item_hash(&second)]);
        assert_eq!(
            b.full_input(&a.input),
            Some(vec![item_hash(&first), item_hash(&second)])
        );
        // A history replaced (a compaction) is hashed afresh.
        let c = hashes.fingerprint(&request(&[Arc::new(Item::user_text("one"))]));
        assert_eq!((c.input_reused, c.input), (0, vec![item_hash(&first)]));
    }
}
