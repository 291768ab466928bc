//! Rollout benchmarks: resume of a 20,000-item ~100 MB rollout, the first listing page
//! over 50,000 indexed threads, and append throughput with `turn` durability.
//!
//! `cargo bench -p rein-core --bench rollout`. Runs are kept short (a few seconds each).
//! Peak memory of a resume is measured in a child process that only loads the file
//! (`VmHWM` from /proc), so the generator's memory does not count.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{BatchSize, Criterion};
use rein_core::store::SessionMeta;
use rein_core::store::{ListQuery, SortKey, ThreadEntry};
use rein_core::thread::state::fold_owned;
use rein_core::thread::state::ThreadState;
use rein_protocol::{
    ApprovalPolicy, Event, EventMsg, InputPart, Item, ItemId, SandboxPolicy, TaskKind, ThreadId,
    ThreadSettings, TurnId,
};
use rein_rollout::blobs::BlobStore;
use rein_rollout::index::RolloutIndex;
use rein_rollout::reader::read_rollout;
use rein_rollout::repair_for_resume;
use rein_rollout::writer::{Durability, RolloutWriter, WriterOptions};

const LOAD_ONLY_ENV: &str = "REIN_BENCH_LOAD_ONLY";

fn settings() -> ThreadSettings {
    ThreadSettings {
        model: "gpt-bench".into(),
        cwd: PathBuf::from("/work"),
        approval_policy: ApprovalPolicy::Never,
        sandbox_policy: SandboxPolicy::WorkspaceWrite,
        sandbox_options: None,
        reasoning_effort: None,
        budget: Default::default(),
        instructions: String::new(),
    }
}

struct Gen {
    thread: ThreadId,
    turn: Option<TurnId>,
    seq: u64,
}

impl Gen {
    fn event(&mut self, msg: EventMsg) -> Event {
        self.seq += 1;
        Event {
            thread_id: self.thread,
            turn_id: self.turn,
            seq: self.seq - 1,
            timestamp_ms: 1_796_000_000_000 + self.seq,
            msg,
        }
    }
}

/// Writes a rollout with `items` history items, about `bytes_per_item` each.
fn generate(path: &Path, blobs: &BlobStore, items: usize, bytes_per_item: usize) {
    let thread = ThreadId::new();
    let meta = SessionMeta::new(thread, thread.into(), "/work".into(), "gpt-bench", "bench");
    let options = WriterOptions {
        durability: Durability::Never,
        ..WriterOptions::new(blobs.clone())
    };
    let mut writer = RolloutWriter::create(path, &meta, options).unwrap();
    let mut g = Gen {
        thread,
        turn: None,
        seq: 0,
    };
    let ev = g.event(EventMsg::ThreadConfigured {
        session_id: thread.into(),
        settings: settings(),
        forked_from: None,
        strategy: None,
    });
    writer.record(&ev).unwrap();
    // Output text with some JSON escaping, like real command output.
    let chunk = "src/lib.rs:12:5: warning: unused \"variable\"\tx\n";
    let output: String = chunk.repeat(bytes_per_item / chunk.len() + 1);
    let mut made = 0;
    while made < items {
        g.turn = Some(TurnId::new());
        let start = g.event(EventMsg::TurnStarted {
            kind: TaskKind::Regular,
            settings: settings(),
            recovered: false,
            output_schema: None,
        });
        writer.record(&start).unwrap();
        let user = g.event(EventMsg::ItemCompleted {
            item: Item::UserMessage {
                id: ItemId::new(),
                content: vec![InputPart::text(format!("run step {made}"))],
            },
        });
        writer.record(&user).unwrap();
        made += 1;
        for call in 0..8 {
            let call_id = format!("call-{made}-{call}");
            let call_item = g.event(EventMsg::ItemCompleted {
                item: Item::ToolCall {
                    id: ItemId::new(),
                    call_id: call_id.clone(),
                    name: "shell".into(),
                    arguments: "{\"cmd\":[\"cargo\",\"check\"]}".into(),
                },
            });
            let out_item = g.event(EventMsg::ItemCompleted {
                item: Item::ToolOutput {
                    id: ItemId::new(),
                    call_id,
                    output: output.clone(),
                    success: true,
                    facts: None,
                },
            });
            writer.record(&call_item).unwrap();
            writer.record(&out_item).unwrap();
            made += 2;
        }
        let done = g.event(EventMsg::TurnCompleted {
            last_agent_message: Some("done".into()),
        });
        writer.record(&done).unwrap();
        g.turn = None;
    }
    writer.sync().unwrap();
}

/// What resuming a thread costs: read, close an open turn, fold.
fn resume(path: &Path, blobs: &BlobStore) -> ThreadState {
    let loaded = read_rollout(path, blobs).unwrap();
    fold_owned(repair_for_resume(loaded.events))
}

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn bench_resume(c: &mut Criterion, dir: &Path) {
    let path = dir.join("rollout-big.jsonl");
    let blobs = BlobStore::new(dir.join("blobs"));
    generate(&path, &blobs, 20_000, 10_000);
    let size = std::fs::metadata(&path).unwrap().len();
    let state = resume(&path, &blobs);
    println!(
        "resume fixture: {} history items, {:.1} MB",
        state.history.len(),
        size as f64 / 1e6
    );
    // Peak memory, measured in a child that does nothing but resume.
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .env(LOAD_ONLY_ENV, &path)
        .output()
        .unwrap();
    let rss: f64 = String::from_utf8_lossy(&child.stdout)
        .trim()
        .parse()
        .unwrap_or(f64::NAN);
    println!(
        "resume in a fresh process: {}",
        String::from_utf8_lossy(&child.stderr).trim()
    );
    println!(
        "resume peak RSS: {:.1} MB = {:.2}x the file",
        rss / 1024.0,
        rss * 1024.0 / size as f64
    );
    let mut group = c.benchmark_group("resume");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(4));
    group.bench_function("20k_items_100MB", |b| b.iter(|| resume(&path, &blobs)));
    group.finish();
}

fn bench_list(c: &mut Criterion, dir: &Path) {
    let mut index = RolloutIndex::open(&dir.join("index.sqlite")).unwrap();
    let entries: Vec<ThreadEntry> = (0..50_000u64)
        .map(|n| ThreadEntry {
            thread_id: ThreadId::new(),
            path: dir.join(format!("sessions/rollout-{n}.jsonl")),
            created_ms: 1_700_000_000_000 + n * 1000,
            updated_ms: 1_700_000_000_000 + (n * 7919) % 50_000_000,
            cwd: PathBuf::from(format!("/work/project-{}", n % 50)),
            model: "gpt-bench".into(),
            title: Some(format!("task number {n}: refactor module {}", n % 977)),
            name: None,
            goal: None,
            archived: n % 10 == 0,
            forked_from: None,
            parent_thread_id: None,
        })
        .collect();
    index.replace_all(&entries).unwrap();
    let mut group = c.benchmark_group("list_50k_threads");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(2));
    let first_page = ListQuery {
        limit: 50,
        sort: SortKey::Updated,
        ..ListQuery::default()
    };
    group.bench_function("first_page_by_updated", |b| {
        b.iter(|| index.list(&first_page).unwrap())
    });
    let by_cwd = ListQuery {
        cwd: Some("/work/project-7".into()),
        ..first_page.clone()
    };
    group.bench_function("first_page_in_cwd", |b| {
        b.iter(|| index.list(&by_cwd).unwrap())
    });
    let search = ListQuery {
        search: Some("module 42".into()),
        ..first_page.clone()
    };
    group.bench_function("search_title", |b| b.iter(|| index.list(&search).unwrap()));
    let deep = ListQuery {
        cursor: index
            .list(&ListQuery {
                limit: 40_000,
                ..first_page.clone()
            })
            .unwrap()
            .next_cursor,
        ..first_page.clone()
    };
    group.bench_function("page_after_40k", |b| b.iter(|| index.list(&deep).unwrap()));
    group.finish();
}

fn bench_append(c: &mut Criterion, dir: &Path) {
    let blobs = BlobStore::new(dir.join("blobs"));
    let thread = ThreadId::new();
    let event = Event {
        thread_id: thread,
        turn_id: Some(TurnId::new()),
        seq: 0,
        timestamp_ms: 1_796_000_000_000,
        msg: EventMsg::ItemCompleted {
            item: Item::ToolOutput {
                id: ItemId::new(),
                call_id: "c".into(),
                output: "x".repeat(1000),
                success: true,
                facts: None,
            },
        },
    };
    let mut group = c.benchmark_group("append");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(3));
    group.throughput(criterion::Throughput::Elements(20));
    let mut n = 0;
    // One turn: 20 events of ~1 KB, then the turn-end sync (fsync).
    group.bench_function("turn_of_20_1KB_events_durability_turn", |b| {
        b.iter_batched(
            || {
                n += 1;
                let path = dir.join(format!("append-{n}.jsonl"));
                let meta = SessionMeta::new(thread, thread.into(), "/w".into(), "m", "p");
                RolloutWriter::create(&path, &meta, WriterOptions::new(blobs.clone())).unwrap()
            },
            |mut writer| {
                for _ in 0..20 {
                    writer.record(&event).unwrap();
                }
                writer.sync().unwrap();
                writer
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

/// CPU time of this thread: unlike wall time, barely moved by other load on the machine.
fn thread_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// Child mode: resume once, report wall and CPU times on stderr and peak RSS on stdout.
fn load_only(path: &Path) {
    let blobs = BlobStore::new(path.parent().unwrap().join("blobs"));
    let (wall, cpu) = (std::time::Instant::now(), thread_cpu());
    let loaded = rein_rollout::reader::read_rollout_with_workers(path, &blobs, 1).unwrap();
    let (read_wall, read_cpu) = (wall.elapsed(), thread_cpu() - cpu);
    let state = fold_owned(repair_for_resume(loaded.events));
    let (fold_wall, fold_cpu) = (wall.elapsed() - read_wall, thread_cpu() - cpu - read_cpu);
    assert!(!state.history.is_empty());
    let rss = peak_rss_kib().unwrap_or(0);
    drop(state);
    let wall = std::time::Instant::now();
    let parallel = read_rollout(path, &blobs).unwrap();
    let parallel_wall = wall.elapsed();
    assert!(!parallel.events.is_empty());
    eprintln!(
        "one-thread read {read_wall:.0?} wall / {read_cpu:.0?} cpu, fold {fold_wall:.0?} wall / {fold_cpu:.0?} cpu; parallel read {parallel_wall:.0?} wall"
    );
    println!("{rss}");
}

fn main() {
    if let Ok(path) = std::env::var(LOAD_ONLY_ENV) {
        load_only(Path::new(&path));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut c = Criterion::default().configure_from_args();
    bench_resume(&mut c, dir.path());
    bench_list(&mut c, dir.path());
    bench_append(&mut c, dir.path());
    c.final_summary();
}
