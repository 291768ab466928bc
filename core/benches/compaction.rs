//! Compaction costs: rollout bytes a compaction writes relative to the history it
//! replaces (should be O(summary), not O(history)), and the time to rebuild on resume a
//! thread that went through 50 compactions.
//!
//! Run: `cargo bench -p rein-core --bench compaction`

#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, Criterion};
use rein_core::thread::state::fold_owned;
use rein_core::thread::state::ThreadState;
use rein_protocol::{
    ApprovalPolicy, CompactionTrigger, Event, EventMsg, Item, SandboxPolicy, TaskKind, ThreadId,
    ThreadSettings, TurnBudget, TurnId,
};

const COMPACTIONS: usize = 50;
const TURNS_BETWEEN: usize = 40;

struct Builder {
    thread: ThreadId,
    events: Vec<Event>,
    history_len: usize,
}

impl Builder {
    fn push(&mut self, turn: Option<TurnId>, msg: EventMsg) {
        let seq = self.events.len() as u64;
        self.events.push(Event {
            thread_id: self.thread,
            turn_id: turn,
            seq,
            timestamp_ms: seq,
            msg,
        });
    }

    /// A regular turn: the user's message and the answer.
    fn turn(&mut self, settings: &ThreadSettings, message: &str, answer: &str) {
        let turn = TurnId::new();
        self.push(
            Some(turn),
            EventMsg::TurnStarted {
                kind: TaskKind::Regular,
                settings: settings.clone(),
                recovered: false,
                output_schema: None,
            },
        );
        self.push(
            Some(turn),
            EventMsg::ItemCompleted {
                item: Item::user_text(message.to_owned()),
            },
        );
        self.push(
            Some(turn),
            EventMsg::ItemCompleted {
                item: Item::AgentMessage {
                    id: Default::default(),
                    text: answer.to_owned(),
                    partial: false,
                },
            },
        );
        self.push(
            Some(turn),
            EventMsg::TurnCompleted {
                last_agent_message: None,
            },
        );
        self.history_len += 2;
    }

    /// A compaction turn keeping the last three user messages and a summary.
    fn compaction(&mut self, settings: &ThreadSettings) {
        let turn = TurnId::new();
        self.push(
            Some(turn),
            EventMsg::TurnStarted {
                kind: TaskKind::Compact,
                settings: settings.clone(),
                recovered: false,
                output_schema: None,
            },
        );
        self.push(
            Some(turn),
            EventMsg::CompactionStarted {
                trigger: CompactionTrigger::Auto,
                tokens_before: 100_000,
            },
        );
        let kept: Vec<u32> = ((self.history_len.saturating_sub(6))..self.history_len)
            .step_by(2)
            .map(|i| i as u32)
            .collect();
        let summary_at = kept.len() as u32;
        self.history_len = kept.len() + 1;
        self.push(
            Some(turn),
            EventMsg::Compacted {
                summary: Item::user_text(format!(
                    "<summary of the earlier conversation>\n{}",
                    "summary ".repeat(200)
                )),
                kept,
                summary_at,
                tokens_before: 100_000,
                tokens_after: 2_000,
            },
        );
        self.push(
            Some(turn),
            EventMsg::TurnCompleted {
                last_agent_message: None,
            },
        );
    }
}

/// A thread of `COMPACTIONS` × (`TURNS_BETWEEN` turns, then a compaction).
fn thread_with_compactions() -> (Vec<Event>, Vec<(usize, usize)>) {
    let thread = ThreadId::new();
    let mut b = Builder {
        thread,
        events: Vec::new(),
        history_len: 0,
    };
    let settings = ThreadSettings {
        model: "m".into(),
        cwd: PathBuf::from("/w"),
        approval_policy: ApprovalPolicy::Never,
        sandbox_policy: SandboxPolicy::ReadOnly,
        sandbox_options: None,
        reasoning_effort: None,
        budget: TurnBudget::default(),
        instructions: String::new(),
    };
    b.push(
        None,
        EventMsg::ThreadConfigured {
            session_id: thread.into(),
            settings: settings.clone(),
            forked_from: None,
            strategy: None,
        },
    );
    let mut sizes = Vec::new();
    let body = "some realistic line of conversation ".repeat(30);
    for _ in 0..COMPACTIONS {
        for n in 0..TURNS_BETWEEN {
            b.turn(&settings, &format!("{n}: {body}"), &body);
        }
        let history_bytes: usize = ThreadState::from_events(&b.events)
            .history
            .iter()
            .map(|i| serde_json::to_string(i.as_ref()).unwrap().len())
            .sum();
        let before = serde_json::to_string(&b.events).unwrap().len();
        b.compaction(&settings);
        let after = serde_json::to_string(&b.events).unwrap().len();
        sizes.push((history_bytes, after - before));
    }
    (b.events, sizes)
}

fn bench(c: &mut Criterion) {
    let (events, sizes) = thread_with_compactions();
    let (history, written) = sizes.last().copied().unwrap_or_default();
    println!(
        "compaction: history {history} bytes, rollout bytes written by the compaction {written} ({:.2}% of history)",
        written as f64 * 100.0 / history.max(1) as f64
    );
    let state = fold_owned(events.clone());
    assert!(state.history.len() < 10);
    c.bench_function("rebuild_thread_with_50_compactions", |b| {
        b.iter_batched(
            || events.clone(),
            fold_owned,
            criterion::BatchSize::LargeInput,
        )
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
