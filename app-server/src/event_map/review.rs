//! Review turns as Codex shows them: the request that opens one is an `enteredReviewMode`
//! item naming what is reviewed (not a user message), and the turn closes with an
//! `exitedReviewMode` item carrying the reviewer's report.

use rein_app_server_protocol::ThreadItem;
use rein_protocol::{InputPart, Item, ItemId};

/// The `enteredReviewMode` item for the review request `item`; `None` for other items.
pub(crate) fn entered(item: &Item) -> Option<ThreadItem> {
    let Item::UserMessage { id, content } = item else {
        return None;
    };
    // The kernel puts what is reviewed last, after the reviewer's brief.
    let subject = content.iter().rev().find_map(|part| match part {
        InputPart::Text { text } => Some(text.clone()),
        InputPart::Image { .. } | InputPart::Skill { .. } => None,
    });
    Some(ThreadItem::EnteredReviewMode {
        id: id.to_string(),
        review: subject.unwrap_or_default(),
    })
}

/// The `exitedReviewMode` item that ends a review turn whose last answer was `report`.
pub(crate) fn exited(report: Option<&ThreadItem>) -> ThreadItem {
    let review = match report {
        Some(ThreadItem::AgentMessage { text, .. }) => text.clone(),
        _ => String::new(),
    };
    ThreadItem::ExitedReviewMode {
        id: ItemId::new().to_string(),
        review,
    }
}
