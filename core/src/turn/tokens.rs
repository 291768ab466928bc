//! Token estimates for content the model has not counted yet. A provider's usage report is
//! the truth for what it has seen; between reports (tool outputs, steers, a compacted
//! history) the kernel estimates at four bytes of JSON per token, which errs on the high
//! side for prose and so compacts a little early rather than overflowing.

use std::sync::Arc;

use rein_protocol::Item;

pub(crate) fn estimate_item(item: &Item) -> u64 {
    let bytes = serde_json::to_string(item).map_or(0, |s| s.len());
    (bytes as u64).div_ceil(4)
}

pub(crate) fn estimate(history: &[Arc<Item>]) -> u64 {
    history.iter().map(|i| estimate_item(i)).sum()
}
