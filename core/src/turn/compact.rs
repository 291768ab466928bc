//! Compaction: summarise the history with the model, then make the model-visible history
//! the most recent user messages (up to a token cap) followed by the summary. Runs as its
//! own turn (manual, or before a model switch) or inline in a regular turn (auto, or after
//! "context window exceeded"). The `Compacted` event references kept items by index, so
//! the rollout grows by the summary only.

use std::sync::Arc;

use rein_protocol::{CompactionTrigger, EventMsg, InputPart, Item, ItemId};
use tokio_util::sync::CancellationToken;

use super::sink::TurnSink;
use super::step::{self, SampleError, StepContext};
use super::tokens::{estimate, estimate_item};
use super::{TaskOutcome, TurnContext};
use crate::model::ModelError;

pub(crate) const SUMMARY_PROMPT: &str = "Summarise the conversation so far for your own \
continuation: the user's goals, decisions made, work done (files, commands, results), open \
questions and the next steps. Be complete but concise; this summary replaces the history.";

/// Starts the user message that carries a summary, so later compactions can tell
/// summaries from what the user wrote.
pub(crate) const SUMMARY_PREFIX: &str = "<summary of the earlier conversation>\n";

const ACCURACY_WARNING: &str = "The conversation was compacted. Long conversations and \
repeated compactions can make the model less accurate; start a new thread when you can.";

pub(crate) struct Compaction {
    pub trigger: CompactionTrigger,
    pub tokens_before: u64,
    /// Tokens of recent user messages kept verbatim.
    pub kept_user_tokens: u64,
    /// Items from here on are the current turn's new input: kept after the summary, not
    /// summarised (`history.len()` when there are none).
    pub tail_from: usize,
}

/// Indices of the most recent user messages (not earlier summaries) that fit `cap`, oldest
/// first.
fn recent_user_messages(history: &[Arc<Item>], cap: u64) -> Vec<u32> {
    let mut kept = Vec::new();
    let mut used = 0;
    for (i, item) in history.iter().enumerate().rev() {
        let Item::UserMessage { .. } = item.as_ref() else {
            continue;
        };
        if item
            .message_text()
            .is_some_and(|t| t.starts_with(SUMMARY_PREFIX))
        {
            continue;
        }
        let cost = estimate_item(item);
        if used + cost > cap {
            break;
        }
        used += cost;
        kept.push(u32::try_from(i).unwrap_or(u32::MAX));
    }
    kept.reverse();
    kept
}

/// Where to start after dropping about a quarter of what is left, at a user message so no
/// tool output is separated from its call.
fn drop_oldest(history: &[Arc<Item>], start: usize) -> usize {
    let step = ((history.len() - start) / 4).max(1);
    let mut next = (start + step).min(history.len());
    while next < history.len() && !matches!(history[next].as_ref(), Item::UserMessage { .. }) {
        next += 1;
    }
    next
}

/// Summarise `history` with `step`'s model and emit `Compacted`. Returns the new history,
/// or `None` when a `PreCompact` hook blocked the compaction (the history stays as it is).
pub(crate) async fn compact(
    step: &StepContext,
    history: &[Arc<Item>],
    plan: Compaction,
    sink: &TurnSink,
    cancel: &CancellationToken,
) -> Result<Option<Vec<Arc<Item>>>, SampleError> {
    if let Some(scope) = &step.hooks {
        if let Some(reason) = scope.pre_compact(plan.trigger, sink, cancel).await {
            sink.emit(EventMsg::Warning {
                message: format!("a PreCompact hook blocked the compaction: {reason}"),
            });
            return Ok(None);
        }
    }
    sink.emit(EventMsg::CompactionStarted {
        trigger: plan.trigger,
        tokens_before: plan.tokens_before,
    });
    let tail_from = plan.tail_from.min(history.len());
    let past = &history[..tail_from];
    let mut summariser = step.for_compaction();
    let mut start = 0;
    let reply = loop {
        let mut input: Vec<Arc<Item>> = past[start..].to_vec();
        input.push(Arc::new(Item::user_text(SUMMARY_PROMPT)));
        match step::sample(&mut summariser, &input, sink, cancel).await {
            Ok(reply) => break reply,
            // Compaction itself overflowed: a summary of the recent past beats none.
            Err(SampleError::Model(ModelError::ContextWindowExceeded(_)))
                if start < history.len() =>
            {
                start = drop_oldest(history, start);
            }
            Err(e) => return Err(e),
        }
    };
    let summary_text = reply.text.unwrap_or_default();
    let summary = Item::UserMessage {
        id: ItemId::new(),
        content: vec![InputPart::text(format!("{SUMMARY_PREFIX}{summary_text}"))],
    };
    let mut kept = recent_user_messages(past, plan.kept_user_tokens);
    let summary_at = u32::try_from(kept.len()).unwrap_or(u32::MAX);
    kept.extend((tail_from..history.len()).map(|i| u32::try_from(i).unwrap_or(u32::MAX)));
    let mut compacted: Vec<Arc<Item>> = kept
        .iter()
        .filter_map(|&i| history.get(i as usize).cloned())
        .collect();
    compacted.insert(summary_at as usize, Arc::new(summary.clone()));
    let tokens_after = estimate(&compacted);
    sink.emit(EventMsg::Compacted {
        summary,
        kept,
        summary_at,
        tokens_before: plan.tokens_before,
        tokens_after,
    });
    sink.emit(EventMsg::Warning {
        message: ACCURACY_WARNING.into(),
    });
    if let Some(scope) = &step.hooks {
        scope
            .post_compact(plan.trigger, &summary_text, sink, cancel)
            .await;
    }
    Ok(Some(compacted))
}

/// A turn that only compacts. It takes no steers; input that arrives meanwhile is queued
/// for the next turn.
pub(crate) struct CompactTask {
    pub turn: TurnContext,
    pub history: Vec<Arc<Item>>,
    pub sink: TurnSink,
    pub cancel: CancellationToken,
    pub plan: Compaction,
}

impl CompactTask {
    pub(crate) async fn run(self) -> TaskOutcome {
        let step = StepContext::freeze(&self.turn);
        match compact(&step, &self.history, self.plan, &self.sink, &self.cancel).await {
            Ok(_) => TaskOutcome::Completed {
                last_agent_message: None,
            },
            Err(SampleError::Cancelled) => TaskOutcome::Cancelled,
            Err(SampleError::Model(e)) => TaskOutcome::Failed {
                code: e.code(),
                message: format!("compaction failed: {e}"),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(text: &str) -> Arc<Item> {
        Arc::new(Item::user_text(text))
    }

    fn agent(text: &str) -> Arc<Item> {
        Arc::new(Item::AgentMessage {
            id: ItemId::new(),
            text: text.into(),
            partial: false,
        })
    }

    #[test]
    fn keeps_the_most_recent_user_messages_within_the_cap() {
        let h = vec![
            user("one"),
            agent("a"),
            user("two"),
            agent("b"),
            user("three"),
        ];
        let one = estimate_item(&h[0]);
        assert_eq!(recent_user_messages(&h, one * 2 + 1), vec![2, 4]);
        assert_eq!(recent_user_messages(&h, 1_000_000), vec![0, 2, 4]);
        assert!(recent_user_messages(&h, 0).is_empty());
    }

    #[test]
    fn earlier_summaries_are_not_kept_as_user_messages() {
        let h = vec![user(&format!("{SUMMARY_PREFIX}old")), user("new")];
        assert_eq!(recent_user_messages(&h, 1_000_000), vec![1]);
    }

    #[test]
    fn dropping_the_oldest_lands_on_a_user_message() {
        let h = vec![
            user("1"),
            agent("a"),
            agent("b"),
            user("2"),
            agent("c"),
            agent("d"),
            user("3"),
            agent("e"),
        ];
        assert_eq!(drop_oldest(&h, 0), 3);
        assert_eq!(drop_oldest(&h, 3), 6);
    }
}
