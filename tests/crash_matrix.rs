//! kill -9 of `rein app-server` at random points across a turn's phases — the model
//! streaming, a command running, an approval pending, between two steps, just after a
//! turn — then a new server on the same home. After every kill: the thread resumes, the
//! prompt whose `turn/start` was answered is in its history, every command that started
//! a process (it leaves a marker file) is in its history, and the next turn completes.
//!
//! `REIN_CRASH_ROUNDS` sets the number of kills (default 60 in CI, spread over the phases; 100 or more for a full run);
//! `REIN_CRASH_SEED` the seed (printed, so a failure can be replayed).
#![allow(clippy::unwrap_used)]

#[path = "support/app_server.rs"]
mod support;

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};
use support::{home_for, method, AppServer, MockModel};

#[derive(Clone, Copy, Debug)]
enum Phase {
    Streaming,
    ToolRunning,
    ApprovalPending,
    BetweenSteps,
    AfterTurn,
}

const PHASES: [Phase; 5] = [
    Phase::Streaming,
    Phase::ToolRunning,
    Phase::ApprovalPending,
    Phase::BetweenSteps,
    Phase::AfterTurn,
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

#[test]
fn kill_9_anywhere_in_a_turn_loses_no_answered_prompt_and_no_command_that_ran() {
    let rounds: usize = std::env::var("REIN_CRASH_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(60);
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
    let mut rng = Rng(seed | 1);
    for n in 0..rounds {
        round(PHASES[n % PHASES.len()], &mut rng, n);
    }
}
