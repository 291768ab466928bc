//! Shared by the `rein replay` end-to-end tests: sessions recorded by `rein exec` against
//! a real `rein mock-model`, the rollout files they left, and `rein` run to its end.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::mock_model;
pub use crate::mock_model::{home_for, MockModel};

/// `rein ARGS` in `home`, run to its end: exit code, stdout, stderr.
pub fn run(home: &Path, args: &[&str]) -> (i32, String, String) {
    let out = mock_model::rein_in(home, args)
        .env_remove("RUST_BACKTRACE")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// Record one `rein exec` session in `cwd`; returns its id.
pub fn record(home: &Path, cwd: &Path, extra: &[&str], prompt: &str) -> String {
    record_ending(home, cwd, extra, prompt, 0)
}

/// As [`record`], for a run that exits with `expected`.
pub fn record_ending(
    home: &Path,
    cwd: &Path,
    extra: &[&str],
    prompt: &str,
    expected: i32,
) -> String {
    let mut args = vec![
        "exec",
        "--json",
        "--dangerously-bypass-approvals-and-sandbox",
        "-C",
        cwd.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    args.push(prompt);
    let (code, stdout, stderr) = run(home, &args);
    assert_eq!(code, expected, "rein exec: {stderr}");
    let first: Value = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
    first["thread_id"].as_str().unwrap().to_owned()
}

/// A tool call of a scripted reply.
pub fn call(id: &str, name: &str, arguments: Value) -> Value {
    json!({ "call_id": id, "name": name, "arguments": arguments })
}

pub fn rollout_files(home: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![home.join("sessions")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "jsonl") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

pub fn rollout_of(home: &Path, id: &str) -> PathBuf {
    rollout_files(home)
        .into_iter()
        .find(|p| p.to_string_lossy().contains(id))
        .unwrap()
}
