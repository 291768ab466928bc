//! A full disk (issue 23, item 8): `REIN_HOME` on a small tmpfs that fills in the middle of
//! a turn. The turn whose events cannot be written fails with a clear error instead of
//! completing, the thread refuses new input until its rollout can be written again, the
//! process goes on serving other threads, what was recorded loads after a restart, and an
//! exit that leaves events unwritten says how many bytes were lost.
#![allow(clippy::unwrap_used)]

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use rein_test_support::app_server::{home_for, method, rein_in, AppServer, MockModel};
use serde_json::{json, Value};

/// A tmpfs of `size` mounted on a fresh directory, unmounted when dropped.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let status = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "tmpfs",
            ])
            .arg(dir.path())
            .status()
            .unwrap();
        assert!(status.success(), "mount -t tmpfs: {status}");
        Self { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

/// A home on a 4 MiB tmpfs configured for `model`.
fn small_home(model: &MockModel) -> Tmpfs {
    let fs = Tmpfs::mount("4m");
    let template = home_for(model);
    std::fs::copy(
        template.path().join("config.toml"),
        fs.path().join("config.toml"),
    )
    .unwrap();
    fs
}

/// Fill the filesystem of `dir` until a write fails, then give back `leave` bytes: room
/// for a turn to start, not for its long answer.
fn fill(dir: &Path, leave: u64) -> PathBuf {
    let path = dir.join("filler");
    let mut file = File::create(&path).unwrap();
    let chunk = vec![0x55u8; 64 * 1024];
    loop {
        match file.write_all(&chunk) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::StorageFull => break,
            Err(e) => panic!("filling the tmpfs: {e}"),
        }
    }
    let len = file.metadata().unwrap().len();
    file.set_len(len.saturating_sub(leave)).unwrap();
    path
}

/// An answer longer than what is left on the disk.
const LONG: usize = 600_000;

/// A model whose first answer is short and whose second does not fit in what is left;
/// then the other thread's answer and the one after space is back.
fn script() -> Value {
    json!({
        "replies": [
            { "text": "a short first answer" },
            { "text": "x".repeat(LONG), "deltas": 4 },
            { "text": "still here" },
            { "text": "the fourth answer" }
        ]
    })
}

fn start_turn(server: &mut AppServer, thread: &str, text: &str) -> Value {
    let id = server.request(
        "turn/start",
        json!({ "threadId": thread, "input": [{ "type": "text", "text": text }] }),
    );
    server.response(&id)
}

fn completed_of(server: &mut AppServer, thread: &str) -> Value {
    server
        .until(|m| method(m) == "turn/completed" && m["params"]["threadId"] == thread)
        .pop()
        .unwrap()
}

#[test]
#[cfg_attr(
    not(rein_is_root),
    ignore = "mounting a tmpfs for REIN_HOME needs root (CI runs the tests as root)"
)]
fn a_full_disk_fails_the_turn_and_makes_the_thread_read_only_until_space_is_back() {
    let model = MockModel::start(script());
    let home = small_home(&model);
    let cwd = tempfile::tempdir().unwrap();

    let mut server = AppServer::start(home.path(), &[]);
    server.initialize();
    let thread = server.start_thread(json!({ "cwd": cwd.path() }));
    let first = server.turn(&thread, "first question");
    assert_eq!(first["params"]["turn"]["status"], "completed");

    // The disk fills: the second turn starts, its answer cannot be written.
    let filler = fill(home.path(), 64 * 1024);
    let started = start_turn(&mut server, &thread, "second question");
    assert!(started.get("result").is_some(), "{started:#}");
    let failed = completed_of(&mut server, &thread);
    let turn = &failed["params"]["turn"];
    assert_eq!(turn["status"], "failed", "{failed:#}");
    let error = turn["error"]["message"].as_str().unwrap();
    assert!(
        error.contains("could not be written") && error.contains("No space left on device"),
        "a clear error: {error}"
    );

    // Read-only: new input is refused, and says why.
    let refused = start_turn(&mut server, &thread, "third question");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("read-only") && message.contains("No space left on device"),
        "{refused:#}"
    );

    // Other threads are served meanwhile (an ephemeral one writes nothing).
    let other = server.start_thread(json!({ "cwd": cwd.path(), "ephemeral": true }));
    let done = server.turn(&other, "are you there");
    assert_eq!(done["params"]["turn"]["status"], "completed", "{done:#}");

    // Space comes back: the retry writes what was held, and the thread takes input again.
    std::fs::remove_file(&filler).unwrap();
    server.until(|m| {
        method(m) == "warning"
            && m["params"]["threadId"] == thread
            && m["params"]["message"]
                .as_str()
                .is_some_and(|s| s.contains("written again"))
    });
    let again = start_turn(&mut server, &thread, "fourth question");
    assert!(again.get("result").is_some(), "{again:#}");
    let fourth = completed_of(&mut server, &thread);
    assert_eq!(fourth["params"]["turn"]["status"], "completed");
    assert!(server.finish().success());

    // After a restart, everything recorded loads, and nothing accepted was dropped: the
    // second turn's events, held while the disk was full, were written once space came
    // back, so it loads whole (answer and end).
    let mut second = AppServer::start(home.path(), &[]);
    second.initialize();
    let read = second.call(
        "thread/read",
        json!({ "threadId": thread, "includeTurns": true }),
    );
    let turns = read["result"]["thread"]["turns"].as_array().unwrap();
    let summary: Vec<(String, Vec<usize>)> = turns
        .iter()
        .map(|t| {
            let lengths = t["items"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|i| i["type"] == "agentMessage")
                .map(|i| i["text"].as_str().unwrap().len())
                .collect();
            (t["status"].as_str().unwrap().to_owned(), lengths)
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("completed".to_owned(), vec!["a short first answer".len()]),
            ("completed".to_owned(), vec![LONG]),
            ("completed".to_owned(), vec!["the fourth answer".len()]),
        ]
    );
    assert!(second.finish().success());
}

#[test]
#[cfg_attr(
    not(rein_is_root),
    ignore = "mounting a tmpfs for REIN_HOME needs root (CI runs the tests as root)"
)]
fn an_exit_with_the_disk_still_full_says_what_was_lost() {
    let model = MockModel::start(json!({
        "replies": [{ "text": "a short first answer" }, { "text": "x".repeat(LONG) }]
    }));
    let home = small_home(&model);
    let first = rein_in(home.path(), &["exec", "--json", "hello"])
        .output()
        .unwrap();
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    // Room for the next thread and its prompt, not for the answer.
    fill(home.path(), 64 * 1024);
    let out = rein_in(home.path(), &["exec", "--json", "a long answer, please"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let types: Vec<String> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|e| e["type"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(out.status.code(), Some(1), "{types:?} {stderr}");
    // The turn's failure is the last word about the turn; what follows is only the
    // thread's shutdown failing to write as well (exec follows the thread to its end).
    let failed = types.iter().position(|t| t == "turn.failed");
    assert!(failed.is_some(), "{types:?}");
    let after = &types[failed.map_or(0, |i| i + 1)..];
    assert!(after.iter().all(|t| t == "error"), "{types:?} {stdout}");
    assert!(!types.iter().any(|t| t == "turn.completed"), "{types:?}");
    assert!(
        stderr.contains("No space left on device"),
        "the error is clear: {stderr}"
    );
    assert!(
        stderr.contains("could not be written and are lost"),
        "the lost bytes are reported: {stderr}"
    );
}
