//! `rein replay --tools live` against a hostile rollout, through the real binary: a
//! recording edited to claim full access, and a workspace with a link out of it, must not
//! let a replayed command write outside the workspace, as root and as `nobody`.
#![allow(clippy::unwrap_used)]

use rein_test_support::replay as support;

use std::path::{Path, PathBuf};
use std::process::Command;

use pretty_assertions::assert_eq;
use serde_json::json;
use support::{call, home_for, record, rollout_of, run, MockModel};

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// A directory no sandbox policy but full access lets commands write: under `/var/tmp`,
/// not the temp dirs workspace-write leaves writable. Owned by `nobody` when run as root,
/// so that the unprivileged replay could write there if its policy let it.
fn base() -> tempfile::TempDir {
    tempfile::tempdir_in("/var/tmp").unwrap()
}

fn chown_nobody(path: &Path) {
    let status = Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

/// `rein replay ARGS` as root, or (`as_nobody`) as `nobody` through a copy of the binary it
/// can run, with a temp dir of its own; returns the exit code and stderr.
fn replay(home: &Path, base: &Path, args: &[&str], as_nobody: bool) -> (i32, String) {
    if !as_nobody {
        let (code, _, stderr) = run(home, args);
        return (code, stderr);
    }
    let bin = base.join("rein");
    let tmp = base.join("tmp");
    rein_test_support::executables::install_executable(Path::new(env!("CARGO_BIN_EXE_rein")), &bin);
    std::fs::create_dir_all(&tmp).unwrap();
    chown_nobody(base);
    chown_nobody(home);
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(&bin)
        .args(args)
        .env("REIN_HOME", home)
        .env("MOCK_API_KEY", "test-key")
        .env("TMPDIR", &tmp)
        .env("HOME", &tmp)
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The users to replay as: root and `nobody` when run as root, else the user running.
fn users() -> Vec<bool> {
    if is_root() {
        vec![false, true]
    } else {
        vec![false]
    }
}

fn workspace(base: &Path) -> (PathBuf, PathBuf) {
    let cwd = base.join("project");
    let outside = base.join("outside");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    (cwd, outside)
}

#[test]
fn a_rollout_edited_to_claim_full_access_replays_live_under_todays_policy() {
    for as_nobody in users() {
        let base = base();
        let (cwd, outside) = workspace(base.path());
        let escaped = outside.join("escaped");
        let script = format!("touch {}", escaped.display());
        let mock = MockModel::start(json!({ "replies": [
            { "tool_calls": [call("call_out", "shell", json!({ "command": ["sh", "-c", script] }))] },
            { "text": "Done." }
        ] }));
        let home = home_for(&mock);
        // Recorded read-only (exec's default): the write was refused.
        let (code, stdout, stderr) = run(
            home.path(),
            &[
                "exec",
                "--json",
                "-C",
                cwd.to_str().unwrap(),
                "Write outside.",
            ],
        );
        assert_eq!(code, 0, "{stderr}");
        assert!(!escaped.exists(), "the recording itself wrote outside");
        let id: serde_json::Value = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
        let id = id["thread_id"].as_str().unwrap().to_owned();
        // The edit: full access (exec's approval policy is already `never`: not asked).
        let file = rollout_of(home.path(), &id);
        let text = std::fs::read_to_string(&file).unwrap();
        let edited = text.replace(
            "\"sandbox_policy\":\"read-only\"",
            "\"sandbox_policy\":\"danger-full-access\"",
        );
        assert_ne!(edited, text, "the rollout names its sandbox policy");
        std::fs::write(&file, edited).unwrap();

        let (code, stderr) = replay(
            home.path(),
            base.path(),
            &["replay", &id, "--tools", "live"],
            as_nobody,
        );
        assert!(code == 0 || code == 1, "nobody={as_nobody}: {stderr}");
        assert!(
            !escaped.exists(),
            "nobody={as_nobody}: the replayed command wrote outside the workspace"
        );
    }
}

#[test]
fn a_link_out_of_the_workspace_is_refused_by_a_live_replay_in_a_scratch_copy() {
    for as_nobody in users() {
        let base = base();
        let (cwd, outside) = workspace(base.path());
        std::os::unix::fs::symlink(&outside, cwd.join("escape")).unwrap();
        let mock = MockModel::start(json!({ "replies": [
            { "tool_calls": [call("call_link", "shell",
                json!({ "command": ["sh", "-c", "echo hi > escape/x"] }))] },
            { "text": "Done." }
        ] }));
        let home = home_for(&mock);
        let id = record(home.path(), &cwd, &[], "Write through the link.");
        std::fs::remove_file(outside.join("x")).unwrap();
        let (code, stderr) = replay(
            home.path(),
            base.path(),
            &["replay", &id, "--tools", "live"],
            as_nobody,
        );
        assert_eq!(code, 2, "nobody={as_nobody}: {stderr}");
        assert!(
            stderr.contains("escape points outside the workspace"),
            "nobody={as_nobody}: {stderr}"
        );
        assert!(!outside.join("x").exists(), "nobody={as_nobody}");
    }
}
