//! kill -9 of `rein app-server` at random points across a turn's phases — the model
//! streaming, a command running, an approval pending, between two steps, just after a
//! turn — and across the maintenance that rewrites what a thread is — a compaction (with a
//! prompt queued behind it), a fork, a rollback —, then a new server on the same home.
//! After every kill: the thread resumes, every prompt whose `turn/start` was answered is in
//! its history (but the turns a rollback that was answered dropped), every command that
//! started a process (it leaves a marker file) is in its history, a fork that was answered
//! resumes with its parent's prompts, every listed thread resumes, and the next turn
//! completes.
//!
//! `REIN_CRASH_ROUNDS` sets the number of kills (default 64 in CI, 8 per phase; 100 or
//! more for a full run); `REIN_CRASH_SEED` the seed (printed, so a failure can be replayed).
#![allow(clippy::unwrap_used)]

use rein_test_support::app_server as support;

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};
use support::{home_for, method, AppServer, MockModel};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Streaming,
    ToolRunning,
    ApprovalPending,
    BetweenSteps,
    AfterTurn,
    Compaction,
    Fork,
    Rollback,
}

const PHASES: [Phase; 8] = [
    Phase::Streaming,
    Phase::ToolRunning,
    Phase::ApprovalPending,
    Phase::BetweenSteps,
    Phase::AfterTurn,
    Phase::Compaction,
    Phase::Fork,
    Phase::Rollback,
];

struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

fn shell(call_id: &str, script: &str) -> Value {
    json!({ "call_id": call_id, "name": "shell",
            "arguments": { "command": ["sh", "-c", script] } })
}

/// The model's script for a round of `phase`; `marker` is the file a started command
/// creates before anything else.
fn script(phase: Phase, marker: &Path) -> Value {
    let m = marker.display();
    let replies = match phase {
        Phase::Streaming => json!([
            { "text": "a long answer that never ends", "deltas": 6, "fault": { "type": "hang" } }
        ]),
        Phase::ToolRunning => json!([
            { "tool_calls": [shell("call_run", &format!("echo started > {m}; sleep 5"))] }
        ]),
        Phase::ApprovalPending => json!([
            { "tool_calls": [shell("call_ask", &format!("echo started > {m}"))] }
        ]),
        Phase::BetweenSteps => json!([
            { "tool_calls": [shell("call_fast", &format!("echo started > {m}"))] },
            { "text": "second step", "delay_ms": 30 }
        ]),
        Phase::AfterTurn => json!([{ "text": "done" }]),
        // The first turn's answer, then the summary, streamed slowly enough that a kill
        // can land before, inside or after it.
        Phase::Compaction => json!([
            { "text": "first answer" },
            { "text": "a summary of everything so far", "deltas": 8, "delay_ms": 3 }
        ]),
        // Fork and rollback need only finished turns (echoed).
        Phase::Fork | Phase::Rollback => json!([]),
    };
    json!({ "replies": replies, "when_exhausted": "echo" })
}

/// Waits until the round's turn is in `phase` (by the notification that shows it).
fn reach(server: &mut AppServer, phase: Phase) {
    let wanted = |m: &Value| match phase {
        Phase::Streaming => method(m) == "item/agentMessage/delta",
        Phase::ToolRunning => {
            method(m) == "item/started" && m["params"]["item"]["type"] == "commandExecution"
        }
        Phase::ApprovalPending => method(m) == "item/commandExecution/requestApproval",
        Phase::BetweenSteps => {
            method(m) == "item/completed" && m["params"]["item"]["type"] == "commandExecution"
        }
        Phase::AfterTurn => method(m) == "turn/completed",
        Phase::Compaction => {
            method(m) == "item/started" && m["params"]["item"]["type"] == "contextCompaction"
        }
        Phase::Fork | Phase::Rollback => unreachable!("reached by maintenance_round"),
    };
    server.until(wanted);
}

fn round(phase: Phase, rng: &mut Rng, n: usize) {
    let cwd = tempfile::tempdir().unwrap();
    let marker = cwd.path().join("marker");
    let model = MockModel::start(script(phase, &marker));
    let home = home_for(&model);
    let prompt = format!("prompt {n} ({phase:?})");

    let mut a = AppServer::start(home.path(), &[]);
    a.initialize();
    let approval = match phase {
        Phase::ApprovalPending => "untrusted",
        _ => "never",
    };
    let thread = a.start_thread(json!({
        "cwd": cwd.path(), "approvalPolicy": approval, "sandbox": "danger-full-access"
    }));
    let id = a.request(
        "turn/start",
        json!({ "threadId": thread, "input": [{ "type": "text", "text": prompt }] }),
    );
    let answered = a.response(&id);
    assert!(answered.get("result").is_some(), "{answered}");
    reach(&mut a, phase);
    // A random point inside the phase (this wait only varies where the kill lands).
    std::thread::sleep(Duration::from_millis(rng.below(25)));
    a.kill();
    let started_a_process = marker.exists();

    let mut b = AppServer::start(home.path(), &[]);
    b.initialize();
    let resumed = b.call("thread/resume", json!({ "threadId": thread }));
    let turns = resumed["result"]["thread"]["turns"].to_string();
    assert!(
        turns.contains(&prompt),
        "round {n} ({phase:?}): the answered prompt is lost: {resumed:#}"
    );
    if started_a_process {
        assert!(
            turns.contains(&marker.display().to_string()),
            "round {n} ({phase:?}): a command that ran is missing: {resumed:#}"
        );
    }
    b.request(
        "turn/start",
        json!({ "threadId": thread, "input": [{ "type": "text", "text": "after the crash" }] }),
    );
    let end = b.until(|m| method(m) == "turn/completed").pop().unwrap();
    assert_eq!(
        end["params"]["turn"]["status"], "completed",
        "round {n} ({phase:?}): {end:#}"
    );
    b.finish();
}

/// A prompt of round `n`, unique in the home (so one is never a substring of another).
fn prompt(n: usize, k: usize, phase: Phase) -> String {
    format!("<round {n} prompt {k} ({phase:?})>")
}

fn finished_turn(server: &mut AppServer, thread: &str, text: &str) {
    let id = server.request(
        "turn/start",
        json!({ "threadId": thread, "input": [{ "type": "text", "text": text }] }),
    );
    assert!(server.response(&id).get("result").is_some());
    let end = server
        .until(|m| method(m) == "turn/completed")
        .pop()
        .unwrap();
    assert_eq!(end["params"]["turn"]["status"], "completed", "{end:#}");
}

/// The answer to request `id` among `messages`, if it is a success.
fn answered<'a>(messages: &'a [Value], id: &Value) -> Option<&'a Value> {
    messages
        .iter()
        .find(|m| m.get("id") == Some(id) && m.get("method").is_none())
        .and_then(|m| m.get("result"))
}

/// What the kills of the maintenance phases hit: (phase, answered before the kill, not).
#[derive(Default)]
struct Landed(Vec<(String, usize, usize)>);

impl Landed {
    fn count(&mut self, phase: Phase, was_answered: bool) {
        let name = format!("{phase:?}");
        let i = match self.0.iter().position(|(p, _, _)| *p == name) {
            Some(i) => i,
            None => {
                self.0.push((name, 0, 0));
                self.0.len() - 1
            }
        };
        if was_answered {
            self.0[i].1 += 1;
        } else {
            self.0[i].2 += 1;
        }
    }

    fn merge(&mut self, other: Landed) {
        for (phase, before, after) in other.0 {
            match self.0.iter_mut().find(|(p, _, _)| *p == phase) {
                Some(mine) => {
                    mine.1 += before;
                    mine.2 += after;
                }
                None => self.0.push((phase, before, after)),
            }
        }
    }
}

/// A round of a maintenance phase: finished turns, then the operation, a kill at a random
/// point of it, and the checks on a new server.
fn maintenance_round(phase: Phase, rng: &mut Rng, n: usize, landed: &mut Landed) {
    let cwd = tempfile::tempdir().unwrap();
    let model = MockModel::start(script(phase, &cwd.path().join("unused")));
    let home = home_for(&model);
    let mut a = AppServer::start(home.path(), &[]);
    a.initialize();
    let thread = a.start_thread(json!({
        "cwd": cwd.path(), "approvalPolicy": "never", "sandbox": "danger-full-access"
    }));
    let turns_before = if phase == Phase::Rollback { 3 } else { 2 };
    let turns_before = if phase == Phase::Compaction {
        1
    } else {
        turns_before
    };
    let mut kept: Vec<String> = Vec::new();
    for k in 0..turns_before {
        let text = prompt(n, k, phase);
        finished_turn(&mut a, &thread, &text);
        kept.push(text);
    }
    // What the kill may or may not have let through, found in what the server printed.
    let mut dropped_if_answered: Option<String> = None;
    let (request, unread) = match phase {
        Phase::Compaction => {
            let id = a.request("thread/compact/start", json!({ "threadId": thread }));
            assert!(a.response(&id).get("result").is_some());
            reach(&mut a, phase);
            // Half the time a prompt is queued behind the compaction: once answered, it
            // must survive the kill like any other.
            let queued = (rng.below(2) == 0).then(|| {
                let text = prompt(n, 9, phase);
                let id = a.request(
                    "turn/start",
                    json!({ "threadId": thread, "input": [{ "type": "text", "text": text }] }),
                );
                let answer = a.response(&id);
                (text, answer.get("result").is_some())
            });
            std::thread::sleep(Duration::from_millis(rng.below(40)));
            if let Some((text, true)) = queued {
                kept.push(text);
            }
            (None, a.kill_and_read())
        }
        Phase::Fork => {
            let id = a.request("thread/fork", json!({ "threadId": thread }));
            std::thread::sleep(Duration::from_micros(rng.below(30_000)));
            (Some(id), a.kill_and_read())
        }
        Phase::Rollback => {
            let id = a.request(
                "thread/rollback",
                json!({ "threadId": thread, "numTurns": 1 }),
            );
            std::thread::sleep(Duration::from_micros(rng.below(15_000)));
            dropped_if_answered = kept.pop();
            (Some(id), a.kill_and_read())
        }
        _ => unreachable!("a turn phase"),
    };
    let result = request.as_ref().and_then(|id| answered(&unread, id));
    if request.is_some() {
        landed.count(phase, result.is_some());
    }

    let mut b = AppServer::start(home.path(), &[]);
    b.initialize();
    let resumed = b.call("thread/resume", json!({ "threadId": thread }));
    let turns = resumed["result"]["thread"]["turns"].to_string();
    for text in &kept {
        assert!(
            turns.contains(text),
            "round {n} ({phase:?}): the answered prompt {text} is lost: {resumed:#}"
        );
    }
    if let (Some(text), Some(_)) = (&dropped_if_answered, result) {
        assert!(
            !turns.contains(text),
            "round {n} ({phase:?}): an answered rollback was undone: {resumed:#}"
        );
    }
    let mut threads = vec![thread.clone()];
    if phase == Phase::Fork {
        if let Some(fork) = result {
            let fork = fork["thread"]["id"].as_str().unwrap().to_owned();
            let resumed = b.call("thread/resume", json!({ "threadId": fork }));
            let turns = resumed["result"]["thread"]["turns"].to_string();
            for text in &kept {
                assert!(
                    turns.contains(text),
                    "round {n}: the answered fork lost {text}: {resumed:#}"
                );
            }
            threads.push(fork);
        }
    }
    // Whatever the kill left (a fork half made, say) is either listed and resumable or
    // not listed at all.
    let listed = b.call("thread/list", json!({}));
    for t in listed["result"]["data"].as_array().unwrap() {
        let id = t["id"].as_str().unwrap().to_owned();
        if !threads.contains(&id) {
            let r = b.call("thread/resume", json!({ "threadId": id }));
            assert!(
                r.get("result").is_some(),
                "round {n}: a listed thread does not resume: {r:#}"
            );
            threads.push(id);
        }
    }
    for t in &threads {
        b.request(
            "turn/start",
            json!({ "threadId": t, "input": [{ "type": "text", "text": "after the crash" }] }),
        );
        let end = b
            .until(|m| method(m) == "turn/completed" && m["params"]["threadId"] == *t)
            .pop()
            .unwrap();
        assert_eq!(
            end["params"]["turn"]["status"], "completed",
            "round {n} ({phase:?}): {end:#}"
        );
    }
    b.finish();
}

#[test]
fn kill_9_anywhere_in_a_turn_loses_no_answered_prompt_and_no_command_that_ran() {
    let rounds: usize = std::env::var("REIN_CRASH_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(64);
    let seed: u64 = std::env::var("REIN_CRASH_SEED")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    eprintln!("crash matrix: {rounds} kills, REIN_CRASH_SEED={seed}");
    // Two rounds at a time (each has its own home and servers) to keep CI short; each
    // worker draws its kill points from its own generator, seeded from the printed seed.
    let workers = 2;
    let landed = std::sync::Mutex::new(Landed::default());
    std::thread::scope(|scope| {
        for w in 0..workers {
            let landed = &landed;
            scope.spawn(move || {
                let mut rng = Rng((seed ^ (w as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)) | 1);
                for n in (w..rounds).step_by(workers) {
                    match PHASES[n % PHASES.len()] {
                        phase @ (Phase::Compaction | Phase::Fork | Phase::Rollback) => {
                            let mut mine = Landed::default();
                            maintenance_round(phase, &mut rng, n, &mut mine);
                            landed.lock().unwrap().merge(mine);
                        }
                        phase => round(phase, &mut rng, n),
                    }
                }
            });
        }
    });
    let landed = landed.into_inner().unwrap();
    for (phase, before, after) in landed.0 {
        eprintln!("crash matrix: {phase}: {before} kills after the answer, {after} before it");
    }
}
