//! `rein replay --tools live` over a session recorded by `rein exec` against a real
//! `rein mock-model`: the session's commands and patch run again for real, by default in
//! a scratch copy of the recorded workspace that the original never notices (its whole
//! tree is compared before and after), with the absolute paths the calls name turned to
//! the copy's and back; a workspace file changed since the recording makes the outcome of
//! the call that reads it differ, at its step; `--in-place` runs in the workspace itself.
#![allow(clippy::unwrap_used)]

use rein_test_support::replay as support;

use std::collections::BTreeMap;
use std::path::Path;

use pretty_assertions::assert_eq;
use serde_json::{json, Value};

use support::{call, home_for, record, run, MockModel};

/// Every entry under `root` with what it is: a file's bytes, a link's target, a directory.
fn tree(root: &Path) -> BTreeMap<String, String> {
    let mut entries = BTreeMap::new();
    let mut dirs = vec![root.to_owned()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let name = path.strip_prefix(root).unwrap().display().to_string();
            let kind = entry.file_type().unwrap();
            let what = if kind.is_symlink() {
                format!("link to {}", std::fs::read_link(&path).unwrap().display())
            } else if kind.is_dir() {
                dirs.push(path);
                "dir".to_owned()
            } else {
                String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned()
            };
            entries.insert(name, what);
        }
    }
    entries
}

#[test]
fn a_live_replay_runs_in_a_scratch_copy_and_catches_a_changed_workspace_file() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap().join("project");
    std::fs::create_dir_all(cwd.join("src")).unwrap();
    std::fs::write(cwd.join("data.txt"), "one\n").unwrap();
    std::fs::write(cwd.join("src/lib.rs"), "fn main() {}\n").unwrap();
    std::os::unix::fs::symlink("data.txt", cwd.join("link.txt")).unwrap();
    let abs = |name: &str| cwd.join(name).display().to_string();
    let mock = MockModel::start(json!({ "replies": [
        // A file read by a relative path, then by its absolute one.
        { "tool_calls": [call("call_cat", "shell", json!({ "command": ["cat", "data.txt"] }))] },
        { "tool_calls": [call("call_abs", "shell", json!({
            "command": ["cat", abs("link.txt")], "workdir": abs("src")
        }))] },
        // A patch naming its file by its absolute path: live, it must land in the copy.
        { "tool_calls": [call("call_patch", "apply_patch", json!({
            "input": format!("*** Begin Patch\n*** Add File: {}\n+note\n*** End Patch\n", abs("notes.txt"))
        }))] },
        // What prints the directory prints the recorded one, whichever ran it.
        { "tool_calls": [call("call_pwd", "shell", json!({ "command": ["sh", "-c", "pwd; ls"] }))] },
        { "text": "Notes made." }
    ] }));
    let home = home_for(&mock);
    let id = record(home.path(), &cwd, &[], "Make notes.");
    // The workspace as the session found it (as one would check out the commit it began
    // from).
    std::fs::remove_file(cwd.join("notes.txt")).unwrap();
    let before = tree(&cwd);

    for args in [
        vec!["replay", &id, "--tools", "live"],
        vec!["replay", &id, "--tools", "live", "--scratch"],
    ] {
        let (code, stdout, stderr) = run(home.path(), &args);
        assert_eq!(
            (code, stdout.as_str()),
            (0, "identical: 1 turns, 5 steps identical\n"),
            "{args:?}: {stderr}"
        );
        assert_eq!(tree(&cwd), before, "{args:?} touched the workspace");
    }

    // A file changed since: the first call's outcome differs, with what it printed.
    std::fs::write(cwd.join("data.txt"), "two\n").unwrap();
    let before = tree(&cwd);
    let (code, stdout, stderr) = run(home.path(), &["replay", &id, "--tools", "live"]);
    assert_eq!(
        (code, stdout.as_str()),
        (
            1,
            "differs at step 1 (turn 1, step 1 of the turn): tool outcome of call 0\n\
             --- recorded\n+++ replay\n@@ -1,2 +1,2 @@\n exit code 0\n-one\n+two\n"
        ),
        "{stderr}"
    );
    assert_eq!(tree(&cwd), before);

    // A file gone: the command fails, and the diff shows its exit code and error.
    std::fs::remove_file(cwd.join("data.txt")).unwrap();
    let (code, stdout, stderr) = run(home.path(), &["replay", &id, "--tools", "live", "--json"]);
    assert_eq!(code, 1, "{stderr}");
    let mut report: Value = serde_json::from_str(&stdout).unwrap();
    let diff = report["difference"]["diff"].take();
    assert_eq!(
        report,
        json!({
            "turns": 1,
            "steps": 1,
            "fingerprinted": true,
            "difference": {
                "step": 1,
                "turn": 1,
                "step_in_turn": 1,
                "part": { "part": "tool_outcome", "index": 0 },
                "diff": null
            }
        })
    );
    let diff = diff.as_str().unwrap();
    assert!(
        diff.starts_with(
            "--- recorded\n+++ replay\n@@ -1,2 +1,2 @@\n-exit code 0\n-one\n+exit code 1\n+cat: "
        ),
        "{diff}"
    );

    // In place, by explicit choice: the session's patch lands in the workspace itself.
    std::fs::write(cwd.join("data.txt"), "one\n").unwrap();
    let (code, stdout, stderr) = run(
        home.path(),
        &["replay", &id, "--tools", "live", "--in-place"],
    );
    assert_eq!(
        (code, stdout.as_str()),
        (0, "identical: 1 turns, 5 steps identical\n"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(cwd.join("notes.txt")).unwrap(),
        "note\n"
    );
}

#[test]
fn workspace_flags_need_live_tools() {
    let home = tempfile::tempdir().unwrap();
    for flag in ["--scratch", "--in-place"] {
        let (code, stdout, stderr) = run(home.path(), &["replay", "some-session", flag]);
        assert_eq!(
            (code, stdout.as_str(), stderr.as_str()),
            (
                2,
                "",
                "error: --scratch and --in-place go with --tools live\n"
            )
        );
    }
    let (code, _, stderr) = run(
        home.path(),
        &["replay", "s", "--tools", "live", "--scratch", "--in-place"],
    );
    assert_eq!(code, 2);
    assert!(stderr.contains("cannot be used with"), "{stderr}");
}
