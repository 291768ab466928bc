//! Memory of idle threads: create 10,000 threads, each with its loop parked on its queue,
//! and report the growth of the resident set per thread.
//!
//! Run: `cargo bench -p rein-core --bench idle_threads`

#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::path::PathBuf;
use std::sync::Arc;

use rein_core::model::scripted::ScriptedModel;
use rein_core::model::{ModelInfo, StaticCatalog};
use rein_core::{ThreadManager, ThreadOptions};
use rein_protocol::{ApprovalPolicy, SandboxPolicy, ThreadSettings, TurnBudget};

const THREADS: usize = 10_000;

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let catalog = StaticCatalog::new().with(
            ModelInfo {
                id: "m".into(),
                provider: "scripted".into(),
                context_window: None,
                traits: Default::default(),
            },
            ScriptedModel::echo(),
        );
        let manager = ThreadManager::builder(Arc::new(catalog)).build();
        let settings = ThreadSettings {
            model: "m".into(),
            cwd: PathBuf::from("/tmp"),
            approval_policy: ApprovalPolicy::Never,
            sandbox_policy: SandboxPolicy::ReadOnly,
            sandbox_options: None,
            reasoning_effort: None,
            budget: TurnBudget::default(),
            instructions: String::new(),
        };
        // Warm up allocator arenas and the runtime so they are not counted per thread.
        let warm: Vec<_> = (0..100)
            .map(|_| {
                manager
                    .create_thread(ThreadOptions::new(settings.clone()))
                    .unwrap()
            })
            .collect();
        drop(warm);
        tokio::task::yield_now().await;
        let before = rss_kib();
        let threads: Vec<_> = (0..THREADS)
            .map(|_| {
                manager
                    .create_thread(ThreadOptions::new(settings.clone()))
                    .unwrap()
            })
            .collect();
        // Make sure every loop has run up to its idle wait.
        for t in &threads {
            t.handle.state().await.unwrap();
        }
        let after = rss_kib();
        let per_thread = (after.saturating_sub(before) as f64) * 1024.0 / THREADS as f64;
        println!(
            "idle threads: {THREADS}, RSS growth {} KiB, {:.1} KB per idle thread",
            after.saturating_sub(before),
            per_thread / 1000.0
        );
        drop(threads);
    });
}
