//! Idle threads cost (almost) nothing: thousands of persisted threads loaded in one
//! `rein app-server` under a 1,024 soft limit on open files (which rein raises to the hard
//! limit), under a hard limit of 4,096, and under a hard limit of 1,024 (more threads than
//! descriptors), with the file descriptors and memory per idle thread measured from
//! `/proc`. `REIN_IDLE_THREADS` sets the count (10,000 for the full run).
#![allow(clippy::unwrap_used)]

use rein_test_support::app_server as support;
use rein_test_support::fs_events;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};
use support::{home_for, MockModel};

/// 1,200 by default, to keep CI short (a debug build takes ~10 ms per `thread/start`):
/// still more threads than the 1,024 hard-limit case has descriptors, which is what makes
/// that case meaningful.
/// `REIN_IDLE_THREADS=10000` runs the full count.
fn threads_wanted() -> usize {
    std::env::var("REIN_IDLE_THREADS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_200)
}

fn status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap()
}

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

/// Starts `rein app-server` with the given `ulimit -n` settings, loads `n` threads in it
/// (pipelined, 100 requests in flight: fewer than the inbound queue holds), and returns (fds, RSS KiB) before and after.
fn load_idle_threads(ulimit: &str, n: usize) -> ((usize, u64), (usize, u64), u64) {
    let mock = MockModel::start(json!({"replies": [], "when_exhausted": "echo"}));
    let home = home_for(&mock);
    let cwd = home.path().to_str().unwrap().to_owned();
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("{ulimit} && exec \"$0\" app-server"))
        .arg(env!("CARGO_BIN_EXE_rein"))
        .env("REIN_HOME", home.path())
        .env("MOCK_API_KEY", "test-key")
        .env("RUST_LOG", "error")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let (tx, rx) = mpsc::channel::<Value>();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(serde_json::from_str(&line).unwrap()).is_err() {
                break;
            }
        }
    });
    let mut send = |m: Value| {
        writeln!(stdin, "{m}").unwrap();
    };
    let answer = |rx: &mpsc::Receiver<Value>, id: usize| loop {
        let m = rx.recv_timeout(Duration::from_secs(60)).unwrap();
        if m.get("id") == Some(&json!(id)) && m.get("method").is_none() {
            return m;
        }
    };
    send(json!({"id": 0, "method": "initialize", "params": {
        "clientInfo": {"name": "idle", "title": null, "version": "0"},
        "capabilities": {"experimentalApi": true}}}));
    answer(&rx, 0);
    // A first thread warms up what every thread shares (the store's threads, SQLite).
    send(json!({"id": 1, "method": "thread/start", "params": {"cwd": cwd}}));
    assert!(answer(&rx, 1).get("result").is_some());
    let before = (open_fds(pid), status_kib(pid, "VmRSS:"));
    let soft_limit = std::fs::read_to_string(format!("/proc/{pid}/limits"))
        .unwrap()
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3).map(str::to_owned))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut next_answer = 2;
    for id in 2..n + 2 {
        send(json!({"id": id, "method": "thread/start", "params": {"cwd": cwd}}));
        if id >= next_answer + 100 {
            let m = answer(&rx, next_answer);
            assert!(m.get("result").is_some(), "thread {next_answer}: {m}");
            next_answer += 1;
        }
    }
    while next_answer < n + 2 {
        let m = answer(&rx, next_answer);
        assert!(m.get("result").is_some(), "thread {next_answer}: {m}");
        next_answer += 1;
    }
    send(json!({"id": n + 2, "method": "thread/loaded/list", "params": {"limit": 1}}));
    let listed = answer(&rx, n + 2);
    assert!(listed["result"]["nextCursor"].is_string());
    // The store closes a file a moment after its last write: wait for that (bounded).
    fs_events::wait_until_files_show(home.path(), Duration::from_secs(20), || {
        open_fds(pid) <= before.0 + 8
    });
    let after = (open_fds(pid), status_kib(pid, "VmRSS:"));
    drop(stdin);
    let _ = child.wait();
    (before, after, soft_limit)
}

fn check(ulimit: &str) {
    let n = threads_wanted();
    let ((fds0, rss0), (fds1, rss1), soft) = load_idle_threads(ulimit, n);
    let fds_per_thread = fds1.saturating_sub(fds0) as f64 / n as f64;
    let kib_per_thread = rss1.saturating_sub(rss0) as f64 / n as f64;
    eprintln!(
        "{ulimit}: soft limit {soft}; {n} idle threads: fds {fds0} -> {fds1} \
         ({fds_per_thread:.3}/thread), RSS {rss0} -> {rss1} KiB ({kib_per_thread:.1} KiB/thread)"
    );
    assert!(
        fds1 <= fds0 + 8,
        "idle threads hold files: {fds0} -> {fds1} for {n} threads"
    );
    assert!(
        kib_per_thread <= 64.0,
        "{kib_per_thread} KiB per idle thread"
    );
}

#[test]
fn idle_threads_under_a_1024_soft_limit() {
    check("ulimit -S -n 1024");
}

#[test]
fn idle_threads_under_a_4096_hard_limit() {
    check("ulimit -S -n 1024 && ulimit -H -n 4096");
}

#[test]
fn more_idle_threads_than_a_1024_hard_limit_allows_files() {
    check("ulimit -n 1024");
}
