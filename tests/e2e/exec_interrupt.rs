//! Ctrl-C during `rein exec`: SIGINT interrupts the turn through the kernel, the run
//! reports it and exits 130. The signal is sent once the child has shown the turn is under
//! way (its first streamed delta, or `turn.started`), read from its own output.
#![allow(clippy::unwrap_used)]

use rein_test_support::exec as support;

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Stdio};

use serde_json::json;
use support::{Home, MockModel};

/// A reply that streams two deltas and then never completes.
fn hanging_script() -> serde_json::Value {
    json!({"replies": [{"text": "partial answer", "deltas": 2, "fault": {"type": "hang"}}]})
}

fn sigint(child: &Child) {
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn sigint_after_the_first_delta_interrupts_the_turn_and_exits_130() {
    let mock = MockModel::start(hanging_script());
    let home = Home::new(&mock, "responses");
    let mut child = home
        .exec(&["Stream something."])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 256];
    while !String::from_utf8_lossy(&seen).contains("partial") {
        let n = stderr.read(&mut buf).unwrap();
        assert!(
            n > 0,
            "stderr closed early: {}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&buf[..n]);
    }
    sigint(&child);
    stderr.read_to_end(&mut seen).unwrap();
    let mut answer = String::new();
    stdout.read_to_string(&mut answer).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(answer, "", "a partial answer is not printed as the answer");
    let stderr = String::from_utf8_lossy(&seen);
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("turn aborted: interrupted"), "{stderr}");
}

#[test]
fn sigint_in_json_mode_ends_the_stream_with_a_failed_turn() {
    let mock = MockModel::start(hanging_script());
    let home = Home::new(&mock, "responses");
    let mut child = home
        .exec(&["--json", "Stream something."])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        let started = line.contains("\"turn.started\"");
        seen.push(line);
        if started {
            break;
        }
    }
    sigint(&child);
    seen.extend(lines.map(Result::unwrap));
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{seen:?}");
    let last: serde_json::Value = serde_json::from_str(seen.last().unwrap()).unwrap();
    assert_eq!(last["type"], "turn.failed", "{seen:?}");
    assert!(last["error"]["message"]
        .as_str()
        .unwrap()
        .contains("interrupted"));
}
