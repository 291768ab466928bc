//! Rollout writing across real processes: a writer SIGKILLed at random points, two
//! processes racing for one thread, and a full disk (a tiny tmpfs).
//!
//! Child processes are this test binary re-executed with `REIN_ROLLOUT_CHILD` naming
//! the role; `child_process_entry` is the only test that does anything in a child.
#![allow(clippy::unwrap_used)]

use rein_test_support::rollout as support;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use pretty_assertions::assert_eq;
use rein_core::recorder::RecorderError;
use rein_core::store::{DiagnosticKind, SessionMeta};
use rein_core::thread::state::ThreadState;
use rein_protocol::{EventMsg, ThreadId};
use rein_rollout::blobs::BlobStore;
use rein_rollout::reader::read_rollout;
use rein_rollout::repair_for_resume;
use rein_rollout::writer::{Durability, RolloutWriter, WriterOptions};
use support::ThreadScript;

const CHILD_ENV: &str = "REIN_ROLLOUT_CHILD";
const PATH_ENV: &str = "REIN_ROLLOUT_CHILD_PATH";
const THREAD_ENV: &str = "REIN_ROLLOUT_CHILD_THREAD";
const SEED_ENV: &str = "REIN_ROLLOUT_CHILD_SEED";

fn blobs_for(rollout: &Path) -> BlobStore {
    BlobStore::with_threshold(rollout.parent().unwrap().join("blobs"), 8 * 1024)
}

fn options(rollout: &Path, durability: Durability) -> WriterOptions {
    WriterOptions {
        durability,
        batch_bytes: 4096,
        ..WriterOptions::new(blobs_for(rollout))
    }
}

fn meta(thread: ThreadId) -> SessionMeta {
    SessionMeta::new(thread, thread.into(), "/w".into(), "m", "p")
}

struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

#[test]
fn child_process_entry() {
    let Ok(role) = std::env::var(CHILD_ENV) else {
        return;
    };
    let path = PathBuf::from(std::env::var(PATH_ENV).unwrap());
    let thread: ThreadId = std::env::var(THREAD_ENV).unwrap().parse().unwrap();
    let mut out = std::io::stdout();
    match role.as_str() {
        "writer" => {
            // Writes turns until killed, reporting the last seq of every synced turn.
            let seed: u64 = std::env::var(SEED_ENV).unwrap().parse().unwrap();
            let mut rng = Rng(seed | 1);
            let mut writer =
                RolloutWriter::create(&path, &meta(thread), options(&path, Durability::Turn))
                    .unwrap();
            let mut script = ThreadScript::new(thread);
            let mut recorded = 0;
            for n in 0.. {
                script.start_turn(&format!("turn {n}"));
                for call in 0..rng.below(6) {
                    let size = [10, 500, 3000, 20_000][rng.below(4) as usize];
                    let output = format!("{n}-{call}:").repeat(size / 4 + 1);
                    script.tool_call(&format!("c{n}-{call}"), Some(output));
                }
                script.complete_turn(&format!("done {n}"));
                for event in &script.events[recorded..] {
                    writer.record(event).unwrap();
                    writeln!(out, "recorded {}", event.seq).unwrap();
                    out.flush().unwrap();
                }
                recorded = script.events.len();
                writer.sync().unwrap();
                writeln!(out, "synced {} {}", recorded - 1, writer.committed_len()).unwrap();
                out.flush().unwrap();
            }
        }
        "holder" => {
            let _writer =
                RolloutWriter::open_append(&path, thread, options(&path, Durability::Turn))
                    .unwrap();
            writeln!(out, "locked").unwrap();
            out.flush().unwrap();
            // Hold the lock until the parent closes stdin (or kills us).
            let _ = std::io::stdin().read_to_end(&mut Vec::new());
        }
        other => panic!("unknown child role {other}"),
    }
}

fn spawn_child(role: &str, path: &Path, thread: ThreadId, seed: u64) -> Child {
    Command::new(std::env::current_exe().unwrap())
        // The entry's full name in this binary (its module path without the crate).
        .args([
            "--exact",
            &rein_test_support::test_name(module_path!(), "child_process_entry"),
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, role)
        .env(PATH_ENV, path)
        .env(THREAD_ENV, thread.to_string())
        .env(SEED_ENV, seed.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Reads the child's stdout until a line containing `marker`; returns what follows it.
/// (The test harness may print its own text before ours on the same line.)
fn wait_for_line(
    lines: &mut impl Iterator<Item = std::io::Result<String>>,
    marker: &str,
) -> String {
    for line in lines {
        let line = line.unwrap();
        if let Some(at) = line.find(marker) {
            return line[at + marker.len()..].to_owned();
        }
    }
    panic!("child exited before printing {marker:?}");
}

#[test]
fn sigkilled_writer_always_resumes_with_every_synced_event() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0xc0ff_ee00_1234_5679);
    let (mut torn, mut mid_turn) = (0, 0);
    for round in 0..40 {
        let thread = ThreadId::new();
        let path = dir.path().join(format!("rollout-{round}.jsonl"));
        let mut child = spawn_child("writer", &path, thread, rng.below(u64::MAX));
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let wanted_syncs = 1 + rng.below(5);
        let (mut last_synced, mut synced_len) = (0, 0);
        for _ in 0..wanted_syncs {
            let line = wait_for_line(&mut lines, "synced ");
            let (seq, len) = line.split_once(' ').unwrap();
            (last_synced, synced_len) = (seq.parse::<u64>().unwrap(), len.parse::<u64>().unwrap());
        }
        // Let it record a few more events, then kill it wherever it is: mid-batch,
        // mid-line, mid-blob, mid-turn.
        for _ in 0..rng.below(12) {
            wait_for_line(&mut lines, "recorded ");
        }
        child.kill().unwrap();
        child.wait().unwrap();
        // Half the rounds also lose a random part of what was not fsynced, as a power
        // cut could: the file is cut anywhere after the last synced byte.
        let len = std::fs::metadata(&path).unwrap().len();
        if round % 2 == 1 && len > synced_len {
            let cut = synced_len + rng.below(len - synced_len + 1);
            std::fs::OpenOptions::new()
                .write(true)
                .open(&path)
                .unwrap()
                .set_len(cut)
                .unwrap();
        }

        let blobs = blobs_for(&path);
        let loaded = read_rollout(&path, &blobs).unwrap();
        let unexpected: Vec<_> = loaded
            .diagnostics
            .iter()
            .filter(|d| d.kind != DiagnosticKind::TornLastLine)
            .collect();
        assert!(unexpected.is_empty(), "round {round}: {unexpected:?}");
        torn += usize::from(!loaded.diagnostics.is_empty());
        let seqs: Vec<u64> = loaded.events.iter().map(|e| e.seq).collect();
        assert_eq!(
            seqs,
            (0..seqs.len() as u64).collect::<Vec<_>>(),
            "round {round}"
        );
        assert!(
            seqs.len() as u64 > last_synced,
            "round {round}: synced through {last_synced}, read {}",
            seqs.len()
        );

        // Resume: the lock of the dead child is taken over, a torn tail is cut, the open
        // turn is closed, and appending goes on cleanly.
        let mut writer =
            RolloutWriter::open_append(&path, thread, options(&path, Durability::Turn)).unwrap();
        let known = loaded.events.len();
        let repaired = repair_for_resume(loaded.events);
        mid_turn += usize::from(repaired.len() > known);
        let state = ThreadState::from_events(&repaired);
        assert!(state.is_idle(), "round {round}");
        let mut script = ThreadScript::new(thread);
        script.events = repaired;
        script.simple_turn(999, "after resume".into());
        for event in &script.events[known..] {
            writer.record(event).unwrap();
        }
        drop(writer);
        let reloaded = read_rollout(&path, &blobs).unwrap();
        assert_eq!(reloaded.diagnostics, vec![], "round {round}");
        assert_eq!(reloaded.events, script.events, "round {round}");
    }
    eprintln!("40 kills: {torn} left a torn line, {mid_turn} left a turn open");
}

#[test]
fn second_process_is_refused_then_takes_over_a_dead_holder() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rollout-race.jsonl");
    let thread = ThreadId::new();
    drop(RolloutWriter::create(&path, &meta(thread), options(&path, Durability::Turn)).unwrap());

    let mut child = spawn_child("holder", &path, thread, 1);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    wait_for_line(&mut lines, "locked");
    let err =
        RolloutWriter::open_append(&path, thread, options(&path, Durability::Turn)).unwrap_err();
    match err {
        RecorderError::Locked { thread: t, holder } => {
            assert_eq!(t, thread);
            assert!(
                holder.starts_with(&format!("pid {} on ", child.id())),
                "{holder}"
            );
        }
        other => panic!("expected Locked, got {other}"),
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        rein_rollout::lock::lock_path(&path).exists(),
        "a killed holder leaves its lock file behind"
    );
    let writer = RolloutWriter::open_append(&path, thread, options(&path, Durability::Turn));
    assert!(
        writer.is_ok(),
        "stale lock not recovered: {:?}",
        writer.err()
    );
}

/// Unmounts the tmpfs when the test ends, however it ends.
struct Mount(PathBuf);
impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
#[cfg_attr(not(rein_is_root), ignore = "needs root to mount a tmpfs")]
fn full_disk_fails_cleanly_and_loses_nothing_once_space_returns() {
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=256k", "tmpfs"])
        .arg(&mnt)
        .status()
        .unwrap();
    assert!(
        mounted.success(),
        "cannot mount a tmpfs at {}",
        mnt.display()
    );
    let _mount = Mount(mnt.clone());
    let filler = mnt.join("filler");
    std::fs::write(&filler, vec![0u8; 160 * 1024]).unwrap();

    let path = mnt.join("rollout-full.jsonl");
    let thread = ThreadId::new();
    let mut writer =
        RolloutWriter::create(&path, &meta(thread), options(&path, Durability::Turn)).unwrap();
    let mut script = ThreadScript::new(thread);
    let mut failure = None;
    let mut recorded = 0;
    for n in 0..200 {
        script.start_turn(&"a question that takes space ".repeat(60));
        script.complete_turn(&format!("answer {n}"));
        for event in &script.events[recorded..] {
            if let Err(e) = writer.record(event) {
                failure = Some(e);
            }
        }
        recorded = script.events.len();
        if failure.is_some() {
            break;
        }
    }
    let Some(RecorderError::Io { source, .. }) = failure else {
        panic!("the disk never filled: {failure:?}");
    };
    assert_eq!(source.raw_os_error(), Some(28), "ENOSPC: {source}");

    // What is on disk is whole lines only.
    let on_disk = read_rollout(&path, &blobs_for(&path)).unwrap();
    assert_eq!(on_disk.diagnostics, vec![]);
    assert!(on_disk.events.len() < script.events.len());
    assert_eq!(on_disk.events[..], script.events[..on_disk.events.len()]);

    // Space comes back: the kept batch is written and nothing recorded is missing.
    std::fs::remove_file(&filler).unwrap();
    writer.sync().unwrap();
    drop(writer);
    let after = read_rollout(&path, &blobs_for(&path)).unwrap();
    assert_eq!(after.diagnostics, vec![]);
    assert_eq!(after.events, script.events);
    assert!(matches!(
        after.events.last().unwrap().msg,
        EventMsg::TurnCompleted { .. }
    ));
}
