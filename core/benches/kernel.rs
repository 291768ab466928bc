//! Kernel overhead with an instant scripted model: the latency from submitting an Op to
//! the first Event, and whole turns per second on one thread.
//!
//! Run: `cargo bench -p rein-core --bench kernel`

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rein_core::model::scripted::ScriptedModel;
use rein_core::model::{ModelInfo, StaticCatalog};
use rein_core::{NewThread, ThreadManager, ThreadOptions};
use rein_protocol::script::ScriptedReply;
use rein_protocol::{ApprovalPolicy, EventMsg, Op, SandboxPolicy, ThreadSettings, TurnBudget};

/// Threads are replaced after this many turns so the history (and with it the cost of
/// building each request) stays that of a realistic session, not of a 100k-turn one.
const TURNS_PER_THREAD: u64 = 200;

fn manager() -> ThreadManager {
    let model = ScriptedModel::replies(vec![ScriptedReply::text("ok")]);
    let catalog = StaticCatalog::new().with(
        ModelInfo {
            id: "instant".into(),
            provider: "scripted".into(),
            context_window: None,
            traits: Default::default(),
        },
        model,
    );
    ThreadManager::builder(Arc::new(catalog)).build()
}

fn new_thread(m: &ThreadManager) -> NewThread {
    m.create_thread(ThreadOptions::new(ThreadSettings {
        model: "instant".into(),
        cwd: PathBuf::from("/tmp"),
        approval_policy: ApprovalPolicy::Never,
        sandbox_policy: SandboxPolicy::ReadOnly,
        sandbox_options: None,
        reasoning_effort: None,
        budget: TurnBudget::default(),
        instructions: String::new(),
    }))
    .unwrap()
}

async fn one_turn(t: &mut NewThread, first_event_only: bool) -> Duration {
    let started = Instant::now();
    t.handle.enqueue(Op::user_text("go")).await.unwrap();
    let mut first = None;
    loop {
        let ev = t.events.recv().await.unwrap();
        first.get_or_insert_with(|| started.elapsed());
        if matches!(ev.msg, EventMsg::TurnCompleted { .. }) {
            break;
        }
    }
    if first_event_only {
        first.unwrap_or_default()
    } else {
        started.elapsed()
    }
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let m = manager();
    let mut group = c.benchmark_group("kernel");
    group.throughput(Throughput::Elements(1));
    for (name, first_only) in [("op_to_first_event", true), ("turn_round_trip", false)] {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let mut total = Duration::ZERO;
                    let mut t = new_thread(&m);
                    for i in 0..iters {
                        if i > 0 && i % TURNS_PER_THREAD == 0 {
                            t = new_thread(&m);
                        }
                        total += one_turn(&mut t, first_only).await;
                    }
                    total
                })
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
